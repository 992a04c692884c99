/* recorder/hooks.c: the interposed functions (docs/recording.md): the malloc
 * family, pthread_create with the trampoline that marks the recorded thread,
 * and _exit/_Exit, which write the trace first. The bookkeeping here is the
 * hot path (recorder/internal.h). */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bridge.h"
#include "internal.h"
#include "table.h"

/* ---- real functions ---- */

void *(*ms__rec_real_malloc)(size_t);
void *(*ms__rec_real_calloc)(size_t, size_t);
void *(*ms__rec_real_realloc)(void *, size_t);
void (*ms__rec_real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static void (*real__exit)(int) __attribute__((noreturn));
static void (*real__Exit)(int) __attribute__((noreturn));

void ms__rec_resolve(void) {
#define R(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)
#define RS(name) ms__rec_real_##name = (__typeof__(ms__rec_real_##name))dlsym(RTLD_NEXT, #name)
  RS(malloc);
  RS(calloc);
  RS(realloc);
  RS(free);
#undef RS
  R(posix_memalign);
  R(aligned_alloc);
  R(memalign);
  R(valloc);
  R(pvalloc);
  R(pthread_create);
  R(_exit);
  R(_Exit);
#undef R
  ms__rec_sampler_resolve();
  ms__rec_mem_resolve();
}

/* ---- bootstrap arena (dlsym may allocate before the real functions are
 * known) ---- */

static _Alignas(16) char boot_buf[1 << 16];
static size_t boot_used;

static void *boot_alloc(size_t n) {
  size_t need = ((n + 15) & ~(size_t)15) + 16;
  size_t off = __atomic_fetch_add(&boot_used, need, __ATOMIC_RELAXED);
  if (off + need > sizeof boot_buf || need < n) return NULL;
  memcpy(boot_buf + off, &n, sizeof n);  // the size, for realloc
  return boot_buf + off + 16;
}

static inline int is_boot(const void *p) {
  return (const char *)p >= boot_buf && (const char *)p < boot_buf + sizeof boot_buf;
}

static size_t boot_size(const void *p) {
  size_t n;
  memcpy(&n, (const char *)p - 16, sizeof n);
  return n;
}

/* ---- bookkeeping ---- */

static inline int mine(const tstate *ts) { return !ms__rec.scope_thread || ts->is_rec; }

#define MEASURE_BEGIN(ts)                    \
  int64_t m0_ = 0;                           \
  int meas_ = (++(ts)->nevents & 1023) == 0; \
  if (UNLIKELY(meas_)) m0_ = raw_now();      \
  (ts)->in_hook = 1;                         \
  CBARRIER()
#define MEASURE_END(ts)                            \
  CBARRIER();                                      \
  (ts)->in_hook = 0;                               \
  if (UNLIKELY(meas_)) {                           \
    (ts)->cost_raw += (uint64_t)(raw_now() - m0_); \
    (ts)->cost_n++;                                \
  }

static inline void book_alloc(tstate *ts, void *p, uint64_t n, int fn, uintptr_t sp) {
  MEASURE_BEGIN(ts);
  count(ts, fn, n);
  if (p) {
    int m = mine(ts);
    if (UNLIKELY(!table_put((uintptr_t)p, m ? n : (n | NOT_MINE)))) {
      __atomic_fetch_add(&ms__rec.table_overflow, 1, __ATOMIC_RELAXED);
    } else if (m) {
      if (UNLIKELY(n >= MS__REC_GROW_SAMPLE)) ms__rec_mem_sample(ts);  // grew a page or more
      event(ts, heap_add((int64_t)n), sp);
    }
    if (m) wcount(ts, fn, n);  // after the event: the bucket it opens gets it
  }
  MEASURE_END(ts);
}

// Forget p (before the real free or realloc). Returns 1 and its table entry
// (requested size, plus NOT_MINE when not counted) when p was there.
static inline int forget(uintptr_t p, uint64_t *entry) {
  if (table_take(p, entry) < 0) {
    __atomic_fetch_add(&ms__rec.unknown_frees, 1, __ATOMIC_RELAXED);
    *entry = 0;
    return 0;
  }
  return 1;
}

static inline uint64_t counted(uint64_t entry) { return entry & NOT_MINE ? 0 : entry; }

/* ---- the hooks ------------------------------------------------------------------------- */

EXPORT void *malloc(size_t n) {
  tstate *ts = state();
  if (UNLIKELY(!ts)) return ms__rec_real_malloc ? ms__rec_real_malloc(n) : boot_alloc(n);
  ts->in_alloc = 1;
  void *p = ms__rec_real_malloc(n);
  ts->in_alloc = 0;
  book_alloc(ts, p, n, F_MALLOC, MS__CALLER_SP());
  return p;
}

EXPORT void *calloc(size_t nm, size_t sz) {
  tstate *ts = state();
  if (UNLIKELY(!ts)) {
    if (ms__rec_real_calloc) return ms__rec_real_calloc(nm, sz);
    size_t n;
    if (__builtin_mul_overflow(nm, sz, &n)) return NULL;
    return boot_alloc(n);  // the arena is zeroed and never reused
  }
  size_t n;
  if (__builtin_mul_overflow(nm, sz, &n)) n = SIZE_MAX;
  ts->in_alloc = 1;
  void *p = ms__rec_real_calloc(nm, sz);
  ts->in_alloc = 0;
  book_alloc(ts, p, n, F_CALLOC, MS__CALLER_SP());
  return p;
}

static void *realloc_common(tstate *ts, void *p, size_t n, int fn, uintptr_t sp,
                            void *(*real)(void *, size_t, size_t), size_t nm, size_t sz) {
  uint64_t entry = 0;
  int found = 0;
  if (p) {
    ts->in_hook = 1;
    CBARRIER();
    found = forget((uintptr_t)p, &entry);
    CBARRIER();
    ts->in_hook = 0;
  }
  ts->in_alloc = 1;
  void *q = real ? real(p, nm, sz) : ms__rec_real_realloc(p, n);
  ts->in_alloc = 0;
  MEASURE_BEGIN(ts);
  count(ts, fn, n);
  uint64_t old = counted(entry);
  // A block keeps its owner (counted or not); a new or unknown one is the
  // calling thread's.
  int keep_counted = found ? !(entry & NOT_MINE) : mine(ts);
  if (q) {
    uint64_t e = keep_counted ? n : (n | NOT_MINE);
    if (!table_put((uintptr_t)q, e)) {
      __atomic_fetch_add(&ms__rec.table_overflow, 1, __ATOMIC_RELAXED);
      keep_counted = 0;
    }
    int64_t d = (keep_counted ? (int64_t)n : 0) - (int64_t)old;
    if (UNLIKELY(d >= MS__REC_GROW_SAMPLE)) ms__rec_mem_sample(ts);
    if (keep_counted || old) event(ts, heap_add(d), sp);
  } else if (p && n != 0) {
    if (found) table_put((uintptr_t)p, entry);  // failed: p is still there
  } else if (p && old) {
    event(ts, heap_add(-(int64_t)old), sp);  // freed p
  }
  if ((q || n == 0) && mine(ts)) wcount(ts, fn, n);  // after the event, as in book_alloc
  MEASURE_END(ts);
  return q;
}

EXPORT void *realloc(void *p, size_t n) {
  if (UNLIKELY(p && is_boot(p))) {
    void *q = malloc(n);
    if (q) memcpy(q, p, boot_size(p) < n ? boot_size(p) : n);
    return q;
  }
  tstate *ts = state();
  if (UNLIKELY(!ts)) return ms__rec_real_realloc ? ms__rec_real_realloc(p, n) : boot_alloc(n);
  return realloc_common(ts, p, n, F_REALLOC, MS__CALLER_SP(), NULL, 0, 0);
}

static void *reallocarray_fallback(void *p, size_t nm, size_t sz) {
  size_t n;
  if (__builtin_mul_overflow(nm, sz, &n)) {
    errno = ENOMEM;
    return NULL;
  }
  return ms__rec_real_realloc(p, n);
}

EXPORT void *reallocarray(void *p, size_t nm, size_t sz) {
  size_t n;
  if (__builtin_mul_overflow(nm, sz, &n)) {
    errno = ENOMEM;
    return NULL;
  }
  if (UNLIKELY(p && is_boot(p))) return realloc(p, n);
  tstate *ts = state();
  // Not glibc's reallocarray: it calls realloc through the PLT, which would
  // count the call twice.
  if (UNLIKELY(!ts)) return ms__rec_real_realloc ? reallocarray_fallback(p, nm, sz) : boot_alloc(n);
  return realloc_common(ts, p, n, F_REALLOCARRAY, MS__CALLER_SP(), reallocarray_fallback, nm, sz);
}

EXPORT void free(void *p) {
  if (UNLIKELY(p && is_boot(p))) return;
  tstate *ts = state();
  if (UNLIKELY(!ts)) {
    if (ms__rec_real_free) ms__rec_real_free(p);
    return;
  }
  if (!p) {
    ts->c.calls[F_FREE]++;
    ts->nevents++;  // an allocator call like any other (record.events)
    return;
  }
  MEASURE_BEGIN(ts);
  uint64_t entry;
  forget((uintptr_t)p, &entry);
  uint64_t old = counted(entry);
  count(ts, F_FREE, entry & ~NOT_MINE);
  if (old) event(ts, heap_add(-(int64_t)old), MS__CALLER_SP());
  if (mine(ts)) wcount(ts, F_FREE, entry & ~NOT_MINE);  // after the event, as in book_alloc
  MEASURE_END(ts);
  ts->in_alloc = 1;
  ms__rec_real_free(p);
  ts->in_alloc = 0;
}

EXPORT int posix_memalign(void **out, size_t al, size_t n) {
  tstate *ts = state();
  if (UNLIKELY(!ts)) {
    if (real_posix_memalign) return real_posix_memalign(out, al, n);
    if (al > 16) return ENOMEM;
    return (*out = boot_alloc(n)) ? 0 : ENOMEM;
  }
  ts->in_alloc = 1;
  int rc = real_posix_memalign(out, al, n);
  ts->in_alloc = 0;
  book_alloc(ts, rc == 0 ? *out : NULL, n, F_POSIX_MEMALIGN, MS__CALLER_SP());
  return rc;
}

#define ALIGNED_HOOK(name, FN, params, args, n)                      \
  EXPORT void *name params {                                         \
    tstate *ts = state();                                            \
    if (UNLIKELY(!ts)) return real_##name ? real_##name args : NULL; \
    ts->in_alloc = 1;                                                \
    void *p = real_##name args;                                      \
    ts->in_alloc = 0;                                                \
    book_alloc(ts, p, n, FN, MS__CALLER_SP());                       \
    return p;                                                        \
  }
ALIGNED_HOOK(aligned_alloc, F_ALIGNED_ALLOC, (size_t al, size_t n), (al, n), n)
ALIGNED_HOOK(memalign, F_MEMALIGN, (size_t al, size_t n), (al, n), n)
ALIGNED_HOOK(valloc, F_VALLOC, (size_t n), (n), n)
ALIGNED_HOOK(pvalloc, F_PVALLOC, (size_t n), (n), n)
#undef ALIGNED_HOOK

/* ---- threads ----------------------------------------------------------------------------- */

static long g_ordinal;  // threads created so far
static struct {
  void *(*fn)(void *);
  void *arg;
} g_tramp;

static void *trampoline(void *arg) {
  (void)arg;
  void *(*fn)(void *) = g_tramp.fn;
  void *a = g_tramp.arg;
  tstate *ts = ms__rec_ts ? ms__rec_ts
                          : (ms__rec_ensure_ready() && ms__rec_on ? ms__rec_ts_register() : NULL);
  if (ts) ms__rec_become_recorded(ts, MS__CALLER_SP(), 0);
  return fn(a);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg) {
  ms__rec_ensure_ready();
  if (!real_pthread_create) return EAGAIN;
  __atomic_store_n(&ms__rec_multi, 1, __ATOMIC_SEQ_CST);  // before the thread can run
  if (ms__rec.state != ST_READY || ms__rec.rec_ordinal <= 0)
    return real_pthread_create(th, attr, fn, arg);
  long ord = __atomic_add_fetch(&g_ordinal, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&ms__rec.threads_created, ord, __ATOMIC_RELAXED);
  if (ord != ms__rec.rec_ordinal) return real_pthread_create(th, attr, fn, arg);
  g_tramp.fn = fn;
  g_tramp.arg = arg;
  return real_pthread_create(th, attr, trampoline, NULL);
}

EXPORT void _exit(int status) {
  ms__rec_finish(1, 0);
  if (real__exit) real__exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

EXPORT void _Exit(int status) {
  ms__rec_finish(1, 0);
  if (real__Exit) real__Exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}
