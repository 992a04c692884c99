/* recorder/memory.c: mapped and resident memory (docs/recording.md).
 *
 * mapped: the interposed mmap, mmap64, munmap, mremap, sbrk and brk count
 * anonymous memory (MAP_ANONYMOUS, private or shared; never a file mapping)
 * that the program maps itself. A call made while the thread is inside the
 * real malloc family (tstate.in_alloc, set by hooks.c around every real
 * allocator call) or inside the recorder's own bookkeeping is not counted:
 * that memory is heap (requested bytes) or the recorder's. glibc's malloc
 * maps and moves the break through internal calls these hooks never see; an
 * allocator that calls the public mmap is caught by the flag. Counted ranges
 * are kept in a sorted interval table, so that munmap and mremap subtract
 * exactly what was counted (a file mapping or allocator memory unmapped
 * subtracts nothing) and MAP_FIXED over a counted range replaces it.
 *
 * resident: RssAnon of the process from /proc/self/statm (resident minus
 * shared pages), kept open and read with one pread; faults: getrusage
 * (RUSAGE_THREAD) of the recorded thread. Both are sampled at the sampler's
 * tick, at allocator calls that grow the heap by a page or more (at most one
 * per quarter of the resolution, ms__rec_grow_sample), when a bucket opens
 * after a page or more of net heap growth since the last sample or after a
 * free of 128 KiB or more (glibc unmaps it in the real call), at counted
 * mmap/munmap/mremap/brk, at region boundaries and at the thread's start
 * and end. */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bridge.h"
#include "internal.h"

int64_t ms__rec_mapped;
int64_t ms__rec_rss = -1;
uint32_t ms__rec_mem_ver;
const char *const ms__rec_mem_cols[4] = {"rss_bytes", "mapped_bytes", "minor_faults",
                                         "major_faults"};

static int g_statm = -1;
static uint64_t g_samples, g_sample_raw, g_sample_fail;
static uint64_t g_grow_skipped;  // growth samples skipped (ms__rec_grow_sample)
static int64_t g_last_raw;       // when the last sample began
int64_t ms__rec_heap_at_sample;
static uint64_t g_iv_overflow;

/* ---- sampling ---- */

void ms__rec_mem_init(void) {
  int fd = ms__prim_statm_open();
  g_statm = fd;
  ms__rec_mem_sample(NULL);
}

static size_t g_niv;
static char g_lock;

void ms__rec_mem_reset(void) {
  if (g_statm >= 0) close(g_statm);
  g_statm = -1;
  g_samples = g_sample_raw = g_sample_fail = g_iv_overflow = g_grow_skipped = 0;
  g_last_raw = 0;
  g_niv = 0;
  g_lock = 0;
  __atomic_store_n(&ms__rec_mapped, 0, __ATOMIC_RELAXED);
  ms__rec_mem_init();
}

void ms__rec_mem_sample(tstate *ts) {
  int64_t t0 = raw_now();
  __atomic_store_n(&g_last_raw, t0, __ATOMIC_RELAXED);
  __atomic_store_n(&ms__rec_heap_at_sample, __atomic_load_n(&ms__rec_heap, __ATOMIC_RELAXED),
                   __ATOMIC_RELAXED);
  if (ts) ts->grow_pending = 0, ts->shrink_pending = 0;
  int e = errno;
  int64_t v = g_statm >= 0 ? ms__prim_statm_anon(g_statm) : -EBADF;
  if (v == -EBADF && g_statm >= 0) {
    // A program that closes every descriptor: open it again (not in a handler's way:
    // open is async-signal-safe).
    int fd = ms__prim_statm_open();
    if (fd >= 0) {
      g_statm = fd;
      v = ms__prim_statm_anon(fd);
    }
  }
  // The recorder's own tables are not the program's (state.c).
  if (v >= 0) v -= __atomic_load_n(&ms__rec_self_bytes, __ATOMIC_RELAXED);
  if (v >= 0)
    __atomic_store_n(&ms__rec_rss, v, __ATOMIC_RELAXED);
  else
    __atomic_fetch_add(&g_sample_fail, 1, __ATOMIC_RELAXED);
  if (ts && ts->is_rec) {
    int64_t mi, ma;
    if (ms__prim_thread_faults(&mi, &ma) == 0) {
      ts->minflt = mi;
      ts->majflt = ma;
    }
  }
  errno = e;
  // After the values: a bucket that sees the new version takes them (coalesce).
  __atomic_fetch_add(&ms__rec_mem_ver, 1, __ATOMIC_RELEASE);
  __atomic_fetch_add(&g_sample_raw, (uint64_t)(raw_now() - t0), __ATOMIC_RELAXED);
  __atomic_fetch_add(&g_samples, 1, __ATOMIC_RELAXED);
}

/* A sample costs microseconds (a pread of statm and a getrusage): an
 * allocator that grows the heap a page at a time (SQLite's page cache, 60,000
 * growth samples in bench/system's index build, 100 ms of 1.1 s) would pay it
 * at every call. A quarter of the resolution apart, a bucket still sees up to
 * four samples, and the growth skipped in between is sampled at the bucket's
 * close. */
void ms__rec_grow_sample(tstate *ts, int64_t d) {
  uint64_t grown = ts->grow_pending + (uint64_t)d;
  if (grown < MS__REC_GROW_FORCE &&
      raw_now() - __atomic_load_n(&g_last_raw, __ATOMIC_RELAXED) < ms__rec.grow_gap_raw) {
    ts->grow_pending = grown;
    __atomic_fetch_add(&g_grow_skipped, 1, __ATOMIC_RELAXED);
    return;
  }
  ms__rec_mem_sample(ts);
}

void ms__rec_grow_flush(tstate *ts) { ms__rec_mem_sample(ts); }

void ms__rec_shrink_sample(tstate *ts) {
  if (ts->shrink_pending < 2 &&
      raw_now() - __atomic_load_n(&g_last_raw, __ATOMIC_RELAXED) < ms__rec.grow_gap_raw)
    return;
  ms__rec_mem_sample(ts);
  if (!ts->h.b.active) return;
  memv m = cur_mem(ts);
  ts->h.b.maxm.minflt = m.minflt;  // faults only grow: the maxima row has the last count
  ts->h.b.maxm.majflt = m.majflt;
  ts->h.b.lm = m;
  ts->mem_ver = __atomic_load_n(&ms__rec_mem_ver, __ATOMIC_RELAXED);
}

void ms__rec_mem_meta(void) {
  uint64_t n = __atomic_load_n(&g_samples, __ATOMIC_RELAXED);
  if (n && ms__rec.raw_per_ns > 0) {
    char b[32];
    ms__rec_fmt_x10(b, sizeof b,
                    (double)__atomic_load_n(&g_sample_raw, __ATOMIC_RELAXED) /
                        ms__rec.raw_per_ns / (double)n);
    ms__rec_meta("record.cost_ns_per_memory_sample", "%s", b);
  }
  ms__rec_meta("record.memory_samples", "%llu", (unsigned long long)n);
  ms__rec_meta("record.memory_samples_deferred", "%llu",
               (unsigned long long)__atomic_load_n(&g_grow_skipped, __ATOMIC_RELAXED));
  ms__rec_meta("record.rss_from", "%s",
               g_statm >= 0 ? "/proc/self/statm (resident - shared), less the recorder's tables"
                            : "unavailable");
  ms__rec_meta("record.rss_recorder_tables_bytes", "%lld",
               (long long)__atomic_load_n(&ms__rec_self_bytes, __ATOMIC_RELAXED));
  if (g_sample_fail)
    ms__rec_meta("record.memory_samples_failed", "%llu", (unsigned long long)g_sample_fail);
  if (g_iv_overflow)
    ms__rec_meta("record.mappings_not_counted", "%llu", (unsigned long long)g_iv_overflow);
}

/* ---- counted ranges ---- */

#define MAX_IV 16384
static struct iv {
  uintptr_t lo, hi;
} g_iv[MAX_IV];

static void lock(void) {
  while (__atomic_test_and_set(&g_lock, __ATOMIC_ACQUIRE)) sched_yield();
}
static void unlock(void) { __atomic_clear(&g_lock, __ATOMIC_RELEASE); }

static uintptr_t page_up(uintptr_t n) {
  uintptr_t ps = (uintptr_t)ms__prim_page_size();
  return (n + ps - 1) & ~(ps - 1);
}

// Take [lo, hi) out of the table (lock held); the bytes that were counted.
static int64_t iv_remove(uintptr_t lo, uintptr_t hi) {
  int64_t removed = 0;
  size_t i = 0;
  while (i < g_niv && g_iv[i].hi <= lo) i++;
  while (i < g_niv && g_iv[i].lo < hi) {
    struct iv *v = &g_iv[i];
    if (v->lo < lo && v->hi > hi) {  // a hole in the middle
      if (g_niv == MAX_IV) {  // no room to split: the tail stays uncounted
        removed += (int64_t)(v->hi - lo);
        g_iv_overflow++;
        v->hi = lo;
        return removed;
      }
      memmove(&g_iv[i + 2], &g_iv[i + 1], (g_niv - i - 1) * sizeof *v);
      g_iv[i + 1] = (struct iv){hi, v->hi};
      g_niv++;
      v->hi = lo;
      return removed + (int64_t)(hi - lo);
    }
    if (v->lo < lo) {
      removed += (int64_t)(v->hi - lo);
      v->hi = lo;
      i++;
    } else if (v->hi > hi) {
      removed += (int64_t)(hi - v->lo);
      v->lo = hi;
      return removed;
    } else {
      removed += (int64_t)(v->hi - v->lo);
      memmove(&g_iv[i], &g_iv[i + 1], (g_niv - i - 1) * sizeof *v);
      g_niv--;
    }
  }
  return removed;
}

// Put [lo, hi) in the table (lock held, the range not in it); 1, or 0 when full.
static int iv_add(uintptr_t lo, uintptr_t hi) {
  if (g_niv == MAX_IV) {
    g_iv_overflow++;
    return 0;
  }
  size_t i = g_niv;
  while (i > 0 && g_iv[i - 1].lo > lo) i--;
  memmove(&g_iv[i + 1], &g_iv[i], (g_niv - i) * sizeof g_iv[0]);
  g_iv[i] = (struct iv){lo, hi};
  g_niv++;
  return 1;
}

// Whether addr lies in a counted range (lock held).
static int iv_has(uintptr_t addr) {
  for (size_t i = 0; i < g_niv && g_iv[i].lo <= addr; i++)
    if (addr < g_iv[i].hi) return 1;
  return 0;
}

/* ---- the hooks ---- */

static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);
static void *(*real_sbrk)(intptr_t);
static int (*real_brk)(void *);

void ms__rec_mem_resolve(void) {
#define R(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)
  R(mmap);
  R(munmap);
  R(mremap);
  R(sbrk);
  R(brk);
#undef R
}

// The thread whose call counts, or NULL: not recording, the recorder's own
// call, inside the malloc family, or another thread under --heap thread.
static tstate *counting(void) {
  tstate *ts = state();
  if (!ts || ts->in_alloc || ts->in_hook || (ms__rec.scope_thread && !ts->is_rec)) return NULL;
  return ts;
}

// mapped changed by d: a row now (with a fresh memory sample).
static void mapped_event(tstate *ts, int64_t d, uintptr_t sp) {
  if (!d) return;
  ts->in_hook = 1;
  CBARRIER();
  if (ms__rec_multi)
    __atomic_add_fetch(&ms__rec_mapped, d, __ATOMIC_RELAXED);
  else
    ms__rec_mapped += d;
  ms__rec_mem_sample(ts);
  // Its thread's heap with --thread all (the process's was a spike in the
  // thread's rows: python3's arenas, mmapped by each thread, gave a worker
  // the three workers' heaps together, 46 % above the exact peak).
  event(ts, row_heap(ts), sp);
  CBARRIER();
  ts->in_hook = 0;
}

static void *call_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off) {
  if (real_mmap) return real_mmap(a, n, prot, flags, fd, off);
  return (void *)syscall(SYS_mmap, a, n, prot, flags, fd, off);
}

static void *do_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off, uintptr_t sp) {
  tstate *ts = counting();
  void *p = call_mmap(a, n, prot, flags, fd, off);
  if (!ts || p == MAP_FAILED) return p;
  uintptr_t lo = (uintptr_t)p, hi = lo + page_up(n);
  lock();
  int64_t d = -iv_remove(lo, hi);  // MAP_FIXED over a counted range replaces it
  if ((flags & MAP_ANONYMOUS) && iv_add(lo, hi)) d += (int64_t)(hi - lo);
  unlock();
  mapped_event(ts, d, sp);
  return p;
}

EXPORT void *mmap(void *a, size_t n, int prot, int flags, int fd, off_t off) {
  return do_mmap(a, n, prot, flags, fd, off, MS__CALLER_SP());
}

EXPORT void *mmap64(void *a, size_t n, int prot, int flags, int fd, off_t off) {
  return do_mmap(a, n, prot, flags, fd, off, MS__CALLER_SP());
}

EXPORT int munmap(void *a, size_t n) {
  tstate *ts = counting();
  int rc = real_munmap ? real_munmap(a, n) : (int)syscall(SYS_munmap, a, n);
  if (!ts || rc != 0) return rc;
  lock();
  int64_t d = -iv_remove((uintptr_t)a, (uintptr_t)a + page_up(n));
  unlock();
  mapped_event(ts, d, MS__CALLER_SP());
  return rc;
}

EXPORT void *mremap(void *a, size_t old, size_t n, int flags, ...) {
  void *want = NULL;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    want = va_arg(ap, void *);
    va_end(ap);
  }
  tstate *ts = counting();
  void *q = real_mremap ? real_mremap(a, old, n, flags, want)
                        : (void *)syscall(SYS_mremap, a, old, n, flags, want);
  if (!ts || q == MAP_FAILED) return q;
  lock();
  // The range moves (and grows or shrinks) when its start was counted.
  int64_t d = 0;
  if (iv_has((uintptr_t)a)) {
    d -= iv_remove((uintptr_t)a, (uintptr_t)a + page_up(old));
    uintptr_t lo = (uintptr_t)q, hi = lo + page_up(n);
    d -= iv_remove(lo, hi);
    if (iv_add(lo, hi)) d += (int64_t)(hi - lo);
  }
  unlock();
  mapped_event(ts, d, MS__CALLER_SP());
  return q;
}

// sbrk and brk have no system call of their own to fall back on: looked up
// on demand when a call comes before the recorder's start resolved them.
static void need_brk(void) {
  if (!real_sbrk) real_sbrk = (__typeof__(real_sbrk))dlsym(RTLD_NEXT, "sbrk");
  if (!real_brk) real_brk = (__typeof__(real_brk))dlsym(RTLD_NEXT, "brk");
}

EXPORT void *sbrk(intptr_t incr) {
  tstate *ts = counting();
  need_brk();
  void *p = real_sbrk ? real_sbrk(incr) : (void *)-1;
  if (!real_sbrk) errno = ENOMEM;
  if (ts && p != (void *)-1) mapped_event(ts, (int64_t)incr, MS__CALLER_SP());
  return p;
}

EXPORT int brk(void *addr) {
  tstate *ts = counting();
  need_brk();
  if (!real_brk || !real_sbrk) {
    errno = ENOMEM;
    return -1;
  }
  char *before = ts ? real_sbrk(0) : NULL;
  int rc = real_brk(addr);
  if (ts && rc == 0 && before != (void *)-1) mapped_event(ts, (char *)addr - before, MS__CALLER_SP());
  return rc;
}
