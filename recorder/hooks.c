/* recorder/hooks.c: the interposed functions (docs/recording.md): the malloc
 * family, pthread_create with the trampoline that marks the recorded thread,
 * and _exit/_Exit, which write the trace first. The bookkeeping here is the
 * hot path (recorder/internal.h). */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <sched.h>
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
static int (*real_pthread_join)(pthread_t, void **);
static int (*real_pthread_tryjoin_np)(pthread_t, void **);
static int (*real_pthread_timedjoin_np)(pthread_t, void **, const struct timespec *);
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
  R(pthread_join);
  R(pthread_tryjoin_np);
  R(pthread_timedjoin_np);
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
  return (uintptr_t)p - (uintptr_t)boot_buf < sizeof boot_buf;  // one comparison
}

static size_t boot_size(const void *p) {
  size_t n;
  memcpy(&n, (const char *)p - 16, sizeof n);
  return n;
}

/* ---- bookkeeping ---- */

/* Whether p, a live block of the C library's malloc, is a chunk of its own
 * mapping (glibc's IS_MMAPPED bit in the size word before it): its free
 * unmaps it, and the resident memory falls at once. */
static inline int mmapped_chunk(const void *p) {
  size_t h;
  memcpy(&h, (const char *)p - sizeof h, sizeof h);
  return (h & 2) != 0;
}

static inline int mine(const tstate *ts) { return !ms__rec.scope_thread || ts->is_rec; }

#define MEASURE_BEGIN(ts)                    \
  int64_t m0_ = 0;                           \
  int meas_ = (++(ts)->nevents & 1023) == 0; \
  if (UNLIKELY(meas_)) m0_ = raw_now();      \
  (ts)->in_hook = 1;                         \
  CBARRIER()
#define MEASURE_END(ts)                                     \
  CBARRIER();                                               \
  (ts)->in_hook = 0;                                        \
  if (UNLIKELY(meas_)) {                                    \
    uint64_t c_ = (uint64_t)(raw_now() - m0_);              \
    (ts)->cost_raw += c_;                                   \
    (ts)->cost_n++;                                         \
    if ((ts)->depth) (ts)->rcost_raw += c_, (ts)->rcost_n++; \
  }

// The real realloc, or reallocarray's real (nm, sz) when given, inside the
// in-allocator flag (its mmaps are heap).
static inline void *real_realloc(tstate *ts, void *p, size_t n,
                                 void *(*real)(void *, size_t, size_t), size_t nm, size_t sz) {
  ts->in_alloc = 1;
  void *q = real ? real(p, nm, sz) : ms__rec_real_realloc(p, n);
  ts->in_alloc = 0;
  return q;
}

static inline uint64_t counted(uint64_t entry) { return entry & NOT_MINE ? 0 : entry; }

static void release_all(tstate *ts, uint32_t ep, uint64_t bytes, uintptr_t sp);

/* ts freed a counted block of bytes born with epoch ep: the heap falls;
 * with --thread all, the owner's (release_all). */
HOT void release(tstate *ts, uint32_t ep, uint64_t bytes, uintptr_t sp) {
  if (LIKELY(!ts->all))
    event(ts, heap_add(-(int64_t)bytes), sp);
  else
    release_all(ts, ep, bytes, sp);
}

/* Block p could not be put (rc -ENOMEM: the table is out of memory, and
 * the recording fails at its end), or p was in the table already (rc 1):
 * its old block, entry old with epoch oep, was freed where no hook saw it
 * (the allocator gave its address out again), so it is freed now. */
static __attribute__((noinline)) void put_trouble(tstate *ts, int rc, uintptr_t p, uint64_t old,
                                                  uint32_t oep, uintptr_t sp) {
  if (rc < 0) {  // ms__rec_table_failed is set
    ms__rec_fail_memory();
    return;
  }
  __atomic_fetch_add(&ms__rec.stale_blocks, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&ms__rec.stale_bytes, old & ~NOT_MINE, __ATOMIC_RELAXED);
  if (oep & EP_REGION) ms__rec_gen_freed(p, oep, old & ~NOT_MINE);
  if (counted(old)) release(ts, oep, old, sp);
}

HOT void put(tstate *ts, uintptr_t p, uint64_t entry, uint32_t ep, uintptr_t sp) {
  uint64_t old;
  uint32_t oep;
  int rc = table_put(p, entry, ep, &old, &oep);
  if (UNLIKELY(rc != 0)) put_trouble(ts, rc, p, old, oep, sp);
}

// Take p out of the table (before the real free or realloc): 1 and its
// entry (size | NOT_MINE) and epoch when it was there, else 0 and zeros.
HOT int forget(uintptr_t p, uint64_t *entry, uint32_t *ep) {
  if (LIKELY(table_take(p, entry, ep) == 0)) return 1;
  __atomic_fetch_add(&ms__rec.unknown_frees, 1, __ATOMIC_RELAXED);
  *entry = 0;
  *ep = 0;
  return 0;
}

/* ---- --thread all (threads.c): each thread's own heap; a block's owner is its epoch's thread ---- */

// The process's total and its exact peak (--sites reads the total too).
static inline void gheap_add(int64_t d) {
  int64_t h = heap_add(d);
  if (d > 0) proc_peak_note(h);
}

// ts (the calling thread) allocated (d > 0) or freed its own bytes: its heap after.
// Another thread freed some of ts's blocks since ts last looked: ts's next
// time stamp reads the clock, so that a row showing the lower heap never
// has a time (a stale cached one) before those frees' rows.
static inline int64_t theap_add(tstate *ts, int64_t d) {
  int64_t own = ts->theap_own + d;
  __atomic_store_n(&ts->theap_own, own, __ATOMIC_RELAXED);
  int64_t x = __atomic_load_n(&ts->theap_x, __ATOMIC_ACQUIRE);
  if (UNLIKELY(x != ts->x_seen)) {
    ts->x_seen = x;
    ts->since = 16;
  }
  return own - x;
}

/* --thread all: ts freed a counted block of bytes born with epoch ep: the
 * owner's heap falls; a block of another thread is a cross-thread free (a
 * row of ts's and a lowered row of the owner's, threads.c). */
static __attribute__((noinline)) void release_all(tstate *ts, uint32_t ep, uint64_t bytes,
                                                  uintptr_t sp) {
  const ms__rec_epoch *e = ms__rec_epoch_get(ep);
  tstate *o = e ? ms__rec_thr_state(e->thr) : NULL;
  gheap_add(-(int64_t)bytes);
  if (!o || o == ts) {
    int64_t h = theap_add(ts, -(int64_t)bytes);
    if (!ts->gone) event(ts, h, sp);
    return;
  }
  if (!ts->gone) ms__rec_thr_xroom(ts, e->thr, e->t);
  // A fresh time, read before the owner's heap falls: the owner allocated
  // the block before this (its bucket's time is earlier), and any row of
  // the owner that shows the lower heap reads the clock after (theap_add).
  if (!ts->gone) read_clock(ts);
  int64_t after = __atomic_load_n(&o->theap_own, __ATOMIC_RELAXED) -
                  __atomic_add_fetch(&o->theap_x, (int64_t)bytes, __ATOMIC_ACQ_REL);
  if (ts->gone) return;
  event(ts, theap(ts), sp);
  ms__rec_thr_xfree(ts, e->thr, e->t, (int64_t)bytes, after);
}

// --thread all: a block of n bytes ts allocated (p not NULL) becomes its own.
static void own_all(tstate *ts, void *p, uint64_t n, uintptr_t sp) {
  grow_sample(ts, (int64_t)n);
  gheap_add((int64_t)n);
  int64_t h = theap_add(ts, (int64_t)n);
  if (!ts->gone) event(ts, h, sp);  // first: the block's epoch is the bucket the event is in
  uint32_t ep = epoch_of(ts);
  put(ts, (uintptr_t)p, n, ep, sp);
  gen_born(ts, ep, n);
}

/* ---- the calls ---- */

// A block of n bytes allocated by fn (p NULL: the call failed).
static __attribute__((noinline)) void book_alloc_all(tstate *ts, void *p, uint64_t n, int fn,
                                                     uintptr_t sp) {
  MEASURE_BEGIN(ts);
  count(ts, fn, p ? n : 0);  // a failed call moved no bytes (calloc's n may be SIZE_MAX)
  if (p) {
    own_all(ts, p, n, sp);
    site(ts, NULL, p, n);
    wcount(ts, fn, n);
  }
  calls(ts, fn, NULL, p, n, !p);
  MEASURE_END(ts);
}

HOT void book_alloc(tstate *ts, void *p, uint64_t n, int fn, uintptr_t sp) {
  if (UNLIKELY(ts->all)) {
    book_alloc_all(ts, p, n, fn, sp);
    return;
  }
  MEASURE_BEGIN(ts);
  count(ts, fn, p ? n : 0);  // a failed call moved no bytes (calloc's n may be SIZE_MAX)
  if (p) {
    if (LIKELY(mine(ts))) {
      grow_sample(ts, (int64_t)n);
      event(ts, heap_add((int64_t)n), sp);
      uint32_t ep = epoch_of(ts);
      put(ts, (uintptr_t)p, n, ep, sp);
      gen_born(ts, ep, n);
      site(ts, NULL, p, n);
      wcount(ts, fn, n);  // after the event: the bucket it opens gets it
    } else {
      put(ts, (uintptr_t)p, n | NOT_MINE, 0, sp);
    }
  }
  if (mine(ts)) calls(ts, fn, NULL, p, n, !p);
  MEASURE_END(ts);
}

// Block p (not NULL) is freed: before the real free, while p is still its own.
HOT void book_free(tstate *ts, void *p, uintptr_t sp) {
  MEASURE_BEGIN(ts);
  uint64_t entry;
  uint32_t ep;
  forget((uintptr_t)p, &entry, &ep);
  uint64_t bytes = entry & ~NOT_MINE;
  if (UNLIKELY(ep & EP_REGION)) ms__rec_gen_freed((uintptr_t)p, ep, bytes);
  site(ts, p, NULL, 0);  // before the heap falls
  count(ts, F_FREE, bytes);
  if (counted(entry)) release(ts, ep, entry, sp);
  if (ts->all || mine(ts)) wcount(ts, F_FREE, bytes);  // after the event, as in book_alloc
  if (ts->all || mine(ts) || counted(entry)) calls(ts, F_FREE, p, NULL, 0, 0);
  if (UNLIKELY(bytes >= MS__REC_SHRINK_SAMPLE))  // sampled after the real free
    ts->shrink_pending = 1 + mmapped_chunk(p);
  MEASURE_END(ts);
}

/* realloc and reallocarray: p's entry is taken out before the real call
 * (another thread may get p's address once it is freed), then the new
 * block q is put. The block keeps its counting (counted or not) and, on
 * --thread all, one thread's own block stays one change of its heap; a
 * block of another thread is a cross-thread free of it and a new block. */
static void *realloc_common(tstate *ts, void *p, size_t n, int fn, uintptr_t sp,
                            void *(*real)(void *, size_t, size_t), size_t nm, size_t sz) {
  uint64_t entry = 0;
  uint32_t ep = 0;
  int found = 0;
  int was_mmapped = 0;
  if (p) {
    ts->in_hook = 1;
    CBARRIER();
    found = forget((uintptr_t)p, &entry, &ep);
    if (found && (entry & ~NOT_MINE) >= MS__REC_SHRINK_SAMPLE) was_mmapped = mmapped_chunk(p);
    CBARRIER();
    ts->in_hook = 0;
  }
  void *q = real_realloc(ts, p, n, real, nm, sz);
  MEASURE_BEGIN(ts);
  count(ts, fn, q ? n : 0);  // a failed call moved no bytes
  uint64_t old = counted(entry);
  int freed = p && (q || n == 0);  // p is gone (moved, resized or freed)
  if (freed && UNLIKELY(ep & EP_REGION)) ms__rec_gen_freed((uintptr_t)p, ep, entry & ~NOT_MINE);
  // A block keeps its counting; a new or unknown one is the calling thread's.
  int keep = found ? !(entry & NOT_MINE) : ts->all || mine(ts);
  if (q) {
    const ms__rec_epoch *e = ts->all && old ? ms__rec_epoch_get(ep) : NULL;
    if (ts->all && (!old || !e || e->thr == ts->thr || !ms__rec_thr_state(e->thr))) {
      // Its own block (or a new one): one change of its heap.
      int64_t d = (int64_t)n - (int64_t)old;
      grow_sample(ts, d);
      gheap_add(d);
      int64_t h = theap_add(ts, d);
      if (!ts->gone) event(ts, h, sp);
    } else if (ts->all) {
      release(ts, ep, old, sp);  // another thread's: freed by this one
      grow_sample(ts, (int64_t)n);
      gheap_add((int64_t)n);
      int64_t h = theap_add(ts, (int64_t)n);
      if (!ts->gone) event(ts, h, sp);
    } else {
      int64_t d = (keep ? (int64_t)n : 0) - (int64_t)old;
      grow_sample(ts, d);
      if (keep || old) event(ts, heap_add(d), sp);
    }
    uint32_t nep = keep ? epoch_of(ts) : 0;
    put(ts, (uintptr_t)q, keep ? n : (n | NOT_MINE), nep, sp);
    if (keep) gen_born(ts, nep, n);
  } else if (p && n != 0) {
    if (found) put(ts, (uintptr_t)p, entry, ep, sp);  // failed: p is still there
  } else if (p && old) {
    release(ts, ep, old, sp);  // realloc(p, 0) freed p
  }
  if ((q || n == 0) && (ts->all || mine(ts))) wcount(ts, fn, n);  // after the event
  site(ts, old && freed ? p : NULL, q && keep ? q : NULL, n);
  if (keep || old) calls(ts, fn, p, q, n, !q);
  // A large block moved, shrunk or freed: its pages went in the real call, just made.
  if (UNLIKELY((entry & ~NOT_MINE) >= MS__REC_SHRINK_SAMPLE && freed && (q != p || n < (entry & ~NOT_MINE)))) {
    ts->shrink_pending = 1 + was_mmapped;
    ms__rec_shrink_sample(ts);
  }
  MEASURE_END(ts);
  return q;
}

/* ---- the hooks ------------------------------------------------------------------------- */

EXPORT void *malloc(size_t n) {
  tstate *ts = state();
  if (UNLIKELY(!ts)) {
    TIMES_TICK();
    return ms__rec_real_malloc ? ms__rec_real_malloc(n) : boot_alloc(n);
  }
  ts->in_alloc = 1;
  void *p = ms__rec_real_malloc(n);
  ts->in_alloc = 0;
  table_prefetch((uintptr_t)p);  // while the row's bookkeeping goes on
  book_alloc(ts, p, n, F_MALLOC, MS__CALLER_SP());
  return p;
}

EXPORT void *calloc(size_t nm, size_t sz) {
  tstate *ts = state();
  if (UNLIKELY(!ts)) {
    TIMES_TICK();
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
  table_prefetch((uintptr_t)p);
  book_alloc(ts, p, n, F_CALLOC, MS__CALLER_SP());
  return p;
}

EXPORT void *realloc(void *p, size_t n) {
  if (UNLIKELY(p && is_boot(p))) {
    void *q = malloc(n);
    if (q) memcpy(q, p, boot_size(p) < n ? boot_size(p) : n);
    return q;
  }
  tstate *ts = state();
  if (UNLIKELY(!ts)) {
    TIMES_TICK();
    return ms__rec_real_realloc ? ms__rec_real_realloc(p, n) : boot_alloc(n);
  }
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
  // Too big: a failed call, counted as calloc's is (it was left out).
  if (__builtin_mul_overflow(nm, sz, &n)) n = SIZE_MAX;
  if (UNLIKELY(p && is_boot(p))) {
    if (n == SIZE_MAX) {
      errno = ENOMEM;
      return NULL;
    }
    return realloc(p, n);
  }
  tstate *ts = state();
  // Not glibc's reallocarray: it calls realloc through the PLT, which would
  // count the call twice.
  if (UNLIKELY(!ts)) {
    TIMES_TICK();
    return ms__rec_real_realloc ? reallocarray_fallback(p, nm, sz) : boot_alloc(n);
  }
  return realloc_common(ts, p, n, F_REALLOCARRAY, MS__CALLER_SP(), reallocarray_fallback, nm, sz);
}

EXPORT void free(void *p) {
  if (UNLIKELY(p && is_boot(p))) return;
  tstate *ts = state();
  if (UNLIKELY(!ts)) {
    TIMES_TICK();
    if (ms__rec_real_free) ms__rec_real_free(p);
    return;
  }
  if (!p) {
    ts->c.calls[F_FREE]++;
    ts->nevents++;  // an allocator call like any other (record.events)
    if (UNLIKELY(__atomic_load_n(&ms__rec_calls_on, __ATOMIC_RELAXED)) && (ts->all || mine(ts))) {
      ts->in_hook = 1;
      CBARRIER();
      calls(ts, F_FREE, NULL, NULL, 0, 0);
      CBARRIER();
      ts->in_hook = 0;
    }
    return;
  }
  book_free(ts, p, MS__CALLER_SP());
  // Kept across the real free: a timer tick's sample in it, before the unmap,
  // clears the flag and would leave the fall to the next sample.
  int shrink = ts->shrink_pending;
  ts->in_alloc = 1;
  ms__rec_real_free(p);
  ts->in_alloc = 0;
  if (UNLIKELY(shrink)) {  // a large block: its pages went in the real free
    ts->in_hook = 1;
    CBARRIER();
    ts->shrink_pending = shrink;
    ms__rec_shrink_sample(ts);
    CBARRIER();
    ts->in_hook = 0;
  }
}

EXPORT int posix_memalign(void **out, size_t al, size_t n) {
  tstate *ts = state();
  if (UNLIKELY(!ts)) {
    TIMES_TICK();
    if (real_posix_memalign) return real_posix_memalign(out, al, n);
    if (al > 16) return ENOMEM;
    return (*out = boot_alloc(n)) ? 0 : ENOMEM;
  }
  ts->in_alloc = 1;
  int rc = real_posix_memalign(out, al, n);
  ts->in_alloc = 0;
  ts->align = al;
  book_alloc(ts, rc == 0 ? *out : NULL, n, F_POSIX_MEMALIGN, MS__CALLER_SP());
  return rc;
}

#define ALIGNED_HOOK(name, FN, params, args, n, al)                  \
  EXPORT void *name params {                                         \
    tstate *ts = state();                                            \
    if (UNLIKELY(!ts)) {                                             \
      TIMES_TICK();                                                  \
      return real_##name ? real_##name args : NULL;                  \
    }                                                                \
    ts->in_alloc = 1;                                                \
    void *p = real_##name args;                                      \
    ts->in_alloc = 0;                                                \
    ts->align = al;                                                  \
    book_alloc(ts, p, n, FN, MS__CALLER_SP());                       \
    return p;                                                        \
  }
ALIGNED_HOOK(aligned_alloc, F_ALIGNED_ALLOC, (size_t al, size_t n), (al, n), n, al)
ALIGNED_HOOK(memalign, F_MEMALIGN, (size_t al, size_t n), (al, n), n, al)
ALIGNED_HOOK(valloc, F_VALLOC, (size_t n), (n), n, 4096)
ALIGNED_HOOK(pvalloc, F_PVALLOC, (size_t n), (n), n, 4096)
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

/* --thread all: what the new thread needs, from the real allocator (never
 * counted); its number is set once pthread_create returned (creation order). */
typedef struct tstart {
  void *(*fn)(void *);
  void *arg;
  int peer;
  int thr;  // -1 until the creator sets it
} tstart;

static void *trampoline_all(void *arg) {
  tstart *s = arg;
  void *(*fn)(void *) = s->fn;
  void *a = s->arg;
  int peer = s->peer, thr;
  while ((thr = __atomic_load_n(&s->thr, __ATOMIC_ACQUIRE)) < 0) sched_yield();
  ms__rec_real_free(s);
  tstate *ts = ms__rec_ts ? ms__rec_ts
                          : (ms__rec_ensure_ready() && ms__rec_on ? ms__rec_ts_register() : NULL);
  if (ts && !ts->all) ms__rec_thr_begin(ts, thr, peer, MS__CALLER_SP(), 0);
  return fn(a);
}

static int create_all(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  tstart *s = ms__rec_real_malloc(sizeof *s);
  if (!s) return real_pthread_create(th, attr, fn, arg);  // it gets a number when it allocates
  tstate *me = ms__rec_ts;
  *s = (tstart){fn, arg, me && me->all ? me->thr : -1, -1};
  int rc = real_pthread_create(th, attr, trampoline_all, s);
  if (rc != 0) {
    ms__rec_real_free(s);
    return rc;
  }
  __atomic_add_fetch(&ms__rec.threads_created, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&s->thr, ms__rec_thr_number(), __ATOMIC_RELEASE);
  ms__rec_watch_start(me);  // the process has threads now: the watcher too
  return 0;
}

int ms__rec_real_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  return real_pthread_create ? real_pthread_create(th, attr, fn, arg) : EAGAIN;
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg) {
  ms__rec_ensure_ready();
  if (!real_pthread_create) return EAGAIN;
  __atomic_store_n(&ms__rec_multi, 1, __ATOMIC_SEQ_CST);  // before the thread can run
  if (ms__rec.all && ms__rec.state == ST_READY && __atomic_load_n(&ms__rec_on, __ATOMIC_RELAXED))
    return create_all(th, attr, fn, arg);
  if (ms__rec.state != ST_READY || ms__rec.rec_ordinal <= 0 || ms__rec.times_only)
    return real_pthread_create(th, attr, fn, arg);
  long ord = __atomic_add_fetch(&g_ordinal, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&ms__rec.threads_created, ord, __ATOMIC_RELAXED);
  if (ord != ms__rec.rec_ordinal) return real_pthread_create(th, attr, fn, arg);
  g_tramp.fn = fn;
  g_tramp.arg = arg;
  return real_pthread_create(th, attr, trampoline, NULL);
}

/* The joins: on --thread all a row of the joining thread when one returned 0
 * (rc, which it returns). */
static int joined(pthread_t th, int rc) {
  if (rc == 0 && ms__rec.all) ms__rec_thr_joined(th);
  return rc;
}

EXPORT int pthread_join(pthread_t th, void **ret) {
  ms__rec_ensure_ready();
  if (!real_pthread_join) return ENOSYS;
  return joined(th, real_pthread_join(th, ret));
}

EXPORT int pthread_tryjoin_np(pthread_t th, void **ret) {
  ms__rec_ensure_ready();
  if (!real_pthread_tryjoin_np) return ENOSYS;
  return joined(th, real_pthread_tryjoin_np(th, ret));
}

EXPORT int pthread_timedjoin_np(pthread_t th, void **ret, const struct timespec *abstime) {
  ms__rec_ensure_ready();
  if (!real_pthread_timedjoin_np) return ENOSYS;
  return joined(th, real_pthread_timedjoin_np(th, ret, abstime));
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
