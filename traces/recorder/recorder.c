/* traces/recorder/recorder.c: the LD_PRELOAD recorder behind `memstub record`
 * (docs/recording.md).
 *
 * It interposes the malloc family and keeps, for one recorded thread, the
 * stack in use (stack pointer against the thread's stack top, or against the
 * frame that opened a probe region) and the heap in use as bytes requested
 * (a pointer -> size table, like massif's mem_heap_B), over time. A timer
 * signal samples the recorded thread's stack between allocator calls.
 *
 * Hot path, per allocator call: one TLS load, the real call, a lock-free
 * open-addressing table update, one atomic add on the heap total, the churn
 * counters, and an update of the thread's own coalescing bucket. The clock is
 * read only when the sampling tick moved, every 16th event, or on every event
 * while the thread allocates slowly. Each thread appends rows to its own
 * chunks (mmap, never malloc); at exit the chunks are merged by time,
 * re-coalesced and written atomically through memstub_trace_write. On a fatal
 * signal a signal-safe writer does the same with write(2) and rename(2).
 *
 * The recorder never calls malloc while it does its bookkeeping. When it calls
 * libc itself (dlsym, writing the trace) the thread's guard or the global
 * "off" switch routes any allocation straight to the real allocator. During
 * dlsym's own bootstrap, allocations come from a static arena. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "bridge.h"
#include "memstub/trace.h"
#include "ms_common.h"
#include "prim.h"

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TLS __thread __attribute__((tls_model("initial-exec")))
#define CBARRIER() __asm__ volatile("" ::: "memory")

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* ---- allocator functions and churn weights -------------------------------- */

enum {
  F_MALLOC,
  F_CALLOC,
  F_REALLOC,
  F_FREE,
  F_POSIX_MEMALIGN,
  F_ALIGNED_ALLOC,
  F_MEMALIGN,
  F_VALLOC,
  F_PVALLOC,
  F_REALLOCARRAY,
  NFN
};
static const char *const fn_name[NFN] = {"malloc", "calloc", "realloc", "free", "posix_memalign",
                                         "aligned_alloc", "memalign", "valloc", "pvalloc",
                                         "reallocarray"};
// Kudrjavets et al. 2022: malloc 1, free 1, calloc 2, realloc 3; the aligned
// allocators weigh as malloc, reallocarray as realloc.
static const int fn_weight[NFN] = {1, 2, 3, 1, 1, 1, 1, 1, 1, 3};

/* ---- real functions --------------------------------------------------------- */

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static void (*real__exit)(int) __attribute__((noreturn));
static void (*real__Exit)(int) __attribute__((noreturn));

/* ---- rows and per-thread state --------------------------------------------- */

typedef struct row {
  int64_t t;      // raw clock units until the merge, then ns
  int64_t stack;  // bytes, -1 when the row comes from another thread
  int64_t heap;   // bytes
  int64_t tag;    // probe region occurrence (0: outside regions)
} row;

#define CHUNK_ROWS 8192
typedef struct chunk {
  struct chunk *next;
  size_t n;  // committed rows (release-stored)
  row rows[CHUNK_ROWS];
} chunk;

#define MAX_DEPTH 32
#define MAX_STATS 64
#define NAME_MAX_LEN 64

typedef struct churn {
  uint64_t calls[NFN];
  uint64_t bytes[NFN];
  double wlog[NFN];  // sum of log2(bytes)
} churn;

typedef struct rframe {
  const char *name;
  churn at_begin;
} rframe;

typedef struct rstat {
  char name[NAME_MAX_LEN];
  uint64_t occurrences;
  churn c;
} rstat;

typedef struct tstate {
  // hot: the allocator hooks
  volatile int in_hook;  // bookkeeping under way: the sampler keeps off
  int guard;             // the recorder's own libc calls: pass through
  int is_rec;            // this is the recorded thread
  int exact;             // stamp every event (slow allocation rate)
  uintptr_t base;        // stack reference: the thread's top or a region's base
  uint32_t tick, since, win_events;
  int64_t now;      // last clock reading
  uint64_t nevents;
  int64_t tag;
  // coalescing bucket
  int c_active;
  int64_t c_end, c_t0, c_maxs, c_maxh, c_tag;
  int64_t c_lt, c_ls, c_lh;
  chunk *head, *tail;
  churn c;
  // cost measurement
  uint64_t cost_raw, cost_n;
  uint64_t samples, sample_raw;
  // probe regions
  int depth;
  int64_t occ;
  int nstats;
  rframe frames[MAX_DEPTH];
  rstat stats[MAX_STATS];
  // identity
  uintptr_t top;
  pid_t tid;
  uint64_t rows_dropped;
  struct tstate *next;
} tstate;

static TLS tstate *tls_ts;
static TLS int tls_busy;  // inside registration or initialisation

/* ---- global state ------------------------------------------------------------ */

enum { ST_UNINIT, ST_INITING, ST_READY, ST_PASSIVE };

static struct {
  int state;
  pid_t pid;
  long rec_ordinal;  // 0: main thread, N: the Nth thread the program creates
  int scope_thread;  // heap of the recorded thread only
  int64_t res_ns, res_raw;
  long sample_hz;
  long occurrence;  // 0: every region occurrence
  int sig;
  int use_tsc;
  int64_t raw0, ns0;
  double raw_per_ns;  // estimate, for buckets and costs
  double now_cost_raw;
  int64_t origin_raw;  // when the recorded thread started
  char out[PATH_MAX];
  timer_t timer;
  int timer_ok;
  tstate *rec;
  tstate *list;
  pthread_key_t key;
  int key_ok;
  int finished;
  int finish_how;  // 0 exit, 1 _exit, 2 signal
  int finish_sig;
  uint64_t table_overflow, unknown_frees, chunk_fail;
  long threads_created, threads_seen;
} G;

static int g_on;          // recording (relaxed loads on the hot path)
static int64_t g_heap;    // heap total in scope
static uint32_t g_tick;   // sampling ticks
static int64_t g_tag;     // the recorded thread's current region occurrence
static long g_ordinal;    // threads created so far
/* Set before a second thread can run (pthread_create sets it before the
 * thread exists; a thread made another way sets it at its first call). Until
 * then the table and the heap total use plain loads and stores. */
static int g_multi;

static inline int multi(void) { return __atomic_load_n(&g_multi, __ATOMIC_RELAXED); }

static inline int64_t heap_add(int64_t d) {
  if (LIKELY(!multi())) {
    int64_t v = __atomic_load_n(&g_heap, __ATOMIC_RELAXED) + d;
    __atomic_store_n(&g_heap, v, __ATOMIC_RELAXED);
    return v;
  }
  return __atomic_add_fetch(&g_heap, d, __ATOMIC_RELAXED);
}

static inline int64_t raw_now(void) {
  return G.use_tsc ? (int64_t)ms__prim_cycles_begin() : ms__prim_now_ns();
}

/* ---- bootstrap arena (dlsym may allocate before the real functions are
 * known) ---------------------------------------------------------------------- */

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

/* ---- pointer -> requested size table -----------------------------------------
 * Open addressing with linear probing over 8-byte slots: (ptr >> 4) in the
 * top 43 bits, a "not counted" flag, and the requested size in 20 bits
 * (blocks of 1 MiB and more, and pointers above 2^47, go to a small side
 * table of full-width slots). The slot index keeps the low address bits
 * (ptr >> 5: neighbouring blocks share cache lines, like the heap itself)
 * and mixes in a hash of each 32 MiB window. Inserts claim an empty or
 * deleted slot with a CAS; deletes store a tombstone. The tables are
 * reserved once (MAP_NORESERVE) and only the pages in use are touched; the
 * main table costs about a quarter of the heap's address range in use. */

#define TOMB ((uint64_t)1)
#define NOT_MINE (UINT64_C(1) << 63)  // in entries handed around (not in slots)
#define MAX_PROBE 4096
#define SZ_BITS 20
#define SZ_BIG ((UINT64_C(1) << SZ_BITS) - 1)
#define FLAG_BIT (UINT64_C(1) << SZ_BITS)
static uint64_t *g_tab;
static uintptr_t g_mask;

typedef struct bslot {
  uintptr_t key;  // 0 empty, 1 tombstone
  uint64_t entry;
} bslot;
static bslot *g_big;
static uintptr_t g_big_mask;

static inline uintptr_t slot_of(uintptr_t p, uintptr_t mask) {
  uintptr_t k = p >> 5;
  return (k ^ (((k >> 20) * UINT64_C(0x9E3779B97F4A7C15)) >> 40)) & mask;
}

static int big_put(uintptr_t p, uint64_t entry) {
  uintptr_t i = slot_of(p, g_big_mask);
  for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & g_big_mask) {
    uintptr_t k = __atomic_load_n(&g_big[i].key, __ATOMIC_RELAXED);
    while (k <= TOMB) {
      if (__atomic_compare_exchange_n(&g_big[i].key, &k, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        g_big[i].entry = entry;
        return 1;
      }
    }
  }
  return 0;
}

static int big_take(uintptr_t p, uint64_t *entry) {
  uintptr_t i = slot_of(p, g_big_mask);
  for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & g_big_mask) {
    uintptr_t k = __atomic_load_n(&g_big[i].key, __ATOMIC_ACQUIRE);
    if (k == p) {
      *entry = g_big[i].entry;
      __atomic_store_n(&g_big[i].key, TOMB, __ATOMIC_RELEASE);
      return 0;
    }
    if (k == 0) return -1;
  }
  return -1;
}

// entry: requested size, plus NOT_MINE when the block is not counted.
static inline int table_put(uintptr_t p, uint64_t entry) {
  uint64_t size = entry & ~NOT_MINE;
  if (UNLIKELY(size >= SZ_BIG || (p >> 47) != 0)) {
    // The main table marks the block big, the side table keeps its size.
    if (!big_put(p, entry)) return 0;
    size = SZ_BIG;
  }
  uint64_t v = ((uint64_t)(p >> 4) << (SZ_BITS + 1)) | (entry & NOT_MINE ? FLAG_BIT : 0) | size;
  if ((p >> 47) != 0) return 1;  // only in the side table
  uintptr_t i = slot_of(p, g_mask);
  int mt = multi();
  for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & g_mask) {
    uint64_t k = __atomic_load_n(&g_tab[i], __ATOMIC_RELAXED);
    if (LIKELY(!mt) && k <= TOMB) {
      __atomic_store_n(&g_tab[i], v, __ATOMIC_RELAXED);
      return 1;
    }
    while (k <= TOMB) {
      if (__atomic_compare_exchange_n(&g_tab[i], &k, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return 1;
    }
  }
  if (size == SZ_BIG) {
    uint64_t e;
    big_take(p, &e);
  }
  return 0;
}

// The entry stored for p (and its slot freed), or -1 when p is not there.
static inline int table_take(uintptr_t p, uint64_t *entry) {
  if (UNLIKELY((p >> 47) != 0)) return big_take(p, entry);
  uint64_t key = (uint64_t)(p >> 4);
  uintptr_t i = slot_of(p, g_mask);
  for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & g_mask) {
    uint64_t k = __atomic_load_n(&g_tab[i], __ATOMIC_ACQUIRE);
    if ((k >> (SZ_BITS + 1)) == key && k > TOMB) {
      __atomic_store_n(&g_tab[i], TOMB, __ATOMIC_RELEASE);
      uint64_t size = k & SZ_BIG;
      if (UNLIKELY(size == SZ_BIG)) return big_take(p, entry);
      *entry = size | (k & FLAG_BIT ? NOT_MINE : 0);
      return 0;
    }
    if (k == 0) return -1;
  }
  return -1;
}

/* ---- log2 for churn ---------------------------------------------------------- */

static float g_log2tab[4096];

static inline double flog2(uint64_t n) {
  if (n < 4096) return g_log2tab[n];
  int e = 63 - __builtin_clzll(n);  // >= 12
  return (double)(e - 11) + g_log2tab[n >> (e - 11)];  // error < 0.0008
}

/* ---- memory for the recorder itself (never malloc) --------------------------- */

static void *map(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void push_row(tstate *ts, int64_t t, int64_t s, int64_t h, int64_t tag) {
  chunk *c = ts->tail;
  if (UNLIKELY(!c || c->n == CHUNK_ROWS)) {
    int e = errno;
    chunk *nc = map(sizeof(chunk));
    errno = e;
    if (!nc) {
      ts->rows_dropped++;
      __atomic_fetch_add(&G.chunk_fail, 1, __ATOMIC_RELAXED);
      return;
    }
    if (c)
      c->next = nc;
    else
      ts->head = nc;
    ts->tail = c = nc;
  }
  c->rows[c->n] = (row){t, s, h, tag};
  __atomic_store_n(&c->n, c->n + 1, __ATOMIC_RELEASE);
}

/* ---- coalescing -----------------------------------------------------------------
 * A bucket of `resolution` ns becomes at most two rows: its maxima at its
 * first time, then its last state when that differs. Peaks survive. */

static void flush_bucket(tstate *ts) {
  if (!ts->c_active) return;
  push_row(ts, ts->c_t0, ts->c_maxs, ts->c_maxh, ts->c_tag);
  if (ts->c_ls != ts->c_maxs || ts->c_lh != ts->c_maxh)
    push_row(ts, ts->c_lt, ts->c_ls, ts->c_lh, ts->c_tag);
  ts->c_active = 0;
}

static __attribute__((noinline)) void new_bucket(tstate *ts, int64_t t, int64_t s, int64_t h,
                                                 int64_t tag) {
  flush_bucket(ts);
  ts->c_active = 1;
  ts->c_t0 = ts->c_lt = t;
  ts->c_end = t + G.res_raw;
  ts->c_maxs = ts->c_ls = s;
  ts->c_maxh = ts->c_lh = h;
  ts->c_tag = tag;
  if (G.res_raw == 0) flush_bucket(ts);
}

static inline void coalesce(tstate *ts, int64_t t, int64_t s, int64_t h, int64_t tag) {
  if (LIKELY(ts->c_active && t < ts->c_end && tag == ts->c_tag)) {
    if (s > ts->c_maxs) ts->c_maxs = s;
    if (h > ts->c_maxh) ts->c_maxh = h;
    ts->c_lt = t;
    ts->c_ls = s;
    ts->c_lh = h;
    return;
  }
  new_bucket(ts, t, s, h, tag);
}

/* The event's time. The clock is read when the sampling tick moved, every
 * 16th event, or every event while the thread allocates slowly (fewer than
 * 256 events in the last tick). */
static inline int64_t stamp(tstate *ts) {
  uint32_t tk = __atomic_load_n(&g_tick, __ATOMIC_RELAXED);
  if (UNLIKELY(tk != ts->tick)) {
    ts->exact = G.sample_hz <= 0 || ts->win_events < 256;
    ts->win_events = 0;
    ts->tick = tk;
    ts->since = 0;
    return ts->now = raw_now();
  }
  ts->win_events++;
  if (ts->exact || ++ts->since >= 16) {
    ts->since = 0;
    return ts->now = raw_now();
  }
  return ts->now;
}

static inline void event(tstate *ts, int64_t h, uintptr_t sp) {
  int64_t s = -1, tag;
  if (ts->is_rec) {
    s = (int64_t)(ts->base - sp);
    if (s < 0) s = 0;
    tag = ts->tag;
  } else {
    tag = __atomic_load_n(&g_tag, __ATOMIC_RELAXED);
  }
  coalesce(ts, stamp(ts), s, h, tag);
}

/* ---- thread registration --------------------------------------------------------- */

static void thread_gone(void *arg) {
  tstate *ts = arg;
  if (!ts || !__atomic_load_n(&g_on, __ATOMIC_RELAXED)) return;
  ts->in_hook = 1;
  CBARRIER();
  flush_bucket(ts);
  if (ts->is_rec && G.timer_ok) {
    struct itimerspec off = {{0, 0}, {0, 0}};
    timer_settime(G.timer, 0, &off, NULL);
  }
  CBARRIER();
  ts->in_hook = 0;
}

static tstate *ts_register(void) {
  tls_busy = 1;
  int e = errno;
  tstate *ts = map(sizeof(tstate));
  if (ts) {
    ts->tid = (pid_t)syscall(SYS_gettid);
    if (ts->tid != getpid()) __atomic_store_n(&g_multi, 1, __ATOMIC_SEQ_CST);
    ts->exact = 1;
    ts->tick = __atomic_load_n(&g_tick, __ATOMIC_RELAXED);
    tstate *head = __atomic_load_n(&G.list, __ATOMIC_RELAXED);
    do ts->next = head;
    while (!__atomic_compare_exchange_n(&G.list, &head, ts, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    __atomic_fetch_add(&G.threads_seen, 1, __ATOMIC_RELAXED);
    if (G.key_ok) pthread_setspecific(G.key, ts);
    tls_ts = ts;
  }
  errno = e;
  tls_busy = 0;
  return ts;
}

static void arm_timer(pid_t tid) {
  if (G.sample_hz <= 0) return;
  if (G.timer_ok) {
    timer_delete(G.timer);
    G.timer_ok = 0;
  }
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = G.sig;
  sev.sigev_notify_thread_id = tid;
  if (timer_create(CLOCK_MONOTONIC, &sev, &G.timer) != 0) return;
  long ns = 1000000000L / G.sample_hz;
  if (ns < 1000) ns = 1000;
  struct itimerspec its = {{ns / 1000000000L, ns % 1000000000L}, {ns / 1000000000L, ns % 1000000000L}};
  if (timer_settime(G.timer, 0, &its, NULL) == 0)
    G.timer_ok = 1;
  else
    timer_delete(G.timer);
}

// This thread becomes the recorded one; its stack top is top.
static void become_recorded(tstate *ts, uintptr_t top, int64_t stack0) {
  ts->in_hook = 1;
  CBARRIER();
  flush_bucket(ts);
  ts->top = ts->base = top;
  ts->is_rec = 1;
  G.rec = ts;
  int64_t t = raw_now();
  G.origin_raw = t;
  push_row(ts, t, stack0, __atomic_load_n(&g_heap, __ATOMIC_RELAXED), 0);
  CBARRIER();
  ts->in_hook = 0;
  arm_timer(ts->tid);
}

/* ---- the sampling signal ----------------------------------------------------------- */

static uintptr_t context_sp(void *ucv) {
#if defined(__x86_64__)
  return (uintptr_t)((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  return (uintptr_t)((ucontext_t *)ucv)->uc_mcontext.sp;
#else
  (void)ucv;
  return ms__prim_sp();
#endif
}

static void on_sample(int sig, siginfo_t *si, void *ucv) {
  (void)sig;
  (void)si;
  __atomic_store_n(&g_tick, __atomic_load_n(&g_tick, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
  tstate *ts = tls_ts;
  if (!ts || !ts->is_rec || ts->in_hook || ts->guard || !__atomic_load_n(&g_on, __ATOMIC_RELAXED))
    return;
  int e = errno;
  ts->in_hook = 1;
  CBARRIER();
  int64_t t0 = raw_now();
  int64_t s = (int64_t)(ts->base - context_sp(ucv));
  if (s < 0) s = 0;
  ts->now = t0;
  coalesce(ts, t0, s, __atomic_load_n(&g_heap, __ATOMIC_RELAXED), ts->tag);
  ts->samples++;
  ts->sample_raw += (uint64_t)(raw_now() - t0);
  CBARRIER();
  ts->in_hook = 0;
  errno = e;
}

/* ---- initialisation ------------------------------------------------------------------ */

extern void *__libc_stack_end __attribute__((weak));

static long env_long(const char *name, long dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end;
  long v = strtol(s, &end, 10);
  return *end ? dflt : v;
}

static void on_fatal(int sig);
static void child_after_fork(void);

static void resolve(void) {
#define R(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)
  R(malloc);
  R(calloc);
  R(realloc);
  R(free);
  R(posix_memalign);
  R(aligned_alloc);
  R(memalign);
  R(valloc);
  R(pvalloc);
  R(pthread_create);
  R(_exit);
  R(_Exit);
#undef R
}

static void init_recording(void) {
  const char *out = getenv("MEMSTUB_RECORD_OUTPUT");
  long pid = env_long("MEMSTUB_RECORD_PID", -1);
  G.pid = getpid();
  // Only the process `memstub record` started records (and keeps recording
  // across exec, which keeps the pid). Its children run untouched.
  if (!out || !*out || pid != (long)G.pid || strlen(out) >= sizeof G.out) {
    G.state = ST_PASSIVE;
    return;
  }
  memcpy(G.out, out, strlen(out) + 1);
  const char *th = getenv("MEMSTUB_RECORD_THREAD");
  G.rec_ordinal = th && strcmp(th, "main") != 0 ? env_long("MEMSTUB_RECORD_THREAD", 0) : 0;
  const char *scope = getenv("MEMSTUB_RECORD_HEAP");
  G.scope_thread = scope && strcmp(scope, "thread") == 0;
  G.res_ns = env_long("MEMSTUB_RECORD_RESOLUTION_NS", 100000);
  if (G.res_ns < 0) G.res_ns = 0;
  G.sample_hz = env_long("MEMSTUB_RECORD_SAMPLE_HZ", 1000);
  G.occurrence = env_long("MEMSTUB_RECORD_OCCURRENCE", 0);
  G.sig = (int)env_long("MEMSTUB_RECORD_SIGNAL", SIGRTMAX - 2);
  int bits = (int)env_long("MEMSTUB_RECORD_TABLE_BITS", 26);
  if (bits < 12 || bits > 34) bits = 26;

  for (int i = 2; i < 4096; i++) g_log2tab[i] = (float)__builtin_log2((double)i);

  // The clock: the invariant cycle counter if there is one; the rate is
  // estimated over 200 us now (for buckets) and measured over the whole run
  // at the end (for the trace's times).
  G.use_tsc = ms__prim_cycles_invariant();
  G.ns0 = ms__prim_now_ns();
  G.raw0 = raw_now();
  if (G.use_tsc) {
    int64_t until = G.ns0 + 200000, n1;
    while ((n1 = ms__prim_now_ns()) < until) {
    }
    int64_t r1 = raw_now();
    G.raw_per_ns = (double)(r1 - G.raw0) / (double)(n1 - G.ns0);
    if (!(G.raw_per_ns > 0.01)) {
      G.use_tsc = 0;
      G.raw_per_ns = 1.0;
    }
  } else {
    G.raw_per_ns = 1.0;
  }
  int64_t a = raw_now();
  for (int i = 0; i < 63; i++) (void)raw_now();
  G.now_cost_raw = (double)(raw_now() - a) / 64.0;
  G.res_raw = (int64_t)((double)G.res_ns * G.raw_per_ns);
  G.origin_raw = G.raw0;  // until the recorded thread starts

  g_tab = map(sizeof(uint64_t) << bits);
  while (!g_tab && bits > 16) g_tab = map(sizeof(uint64_t) << --bits);
  g_big = map(sizeof(bslot) << 16);
  if (!g_tab || !g_big) {
    G.state = ST_PASSIVE;
    return;
  }
  g_mask = ((uintptr_t)1 << bits) - 1;
  g_big_mask = ((uintptr_t)1 << 16) - 1;

  G.key_ok = pthread_key_create(&G.key, thread_gone) == 0;
  pthread_atfork(NULL, NULL, child_after_fork);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  if (G.sample_hz > 0) {
    sa.sa_sigaction = on_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    if (sigaction(G.sig, &sa, NULL) != 0) G.sample_hz = 0;
  }
  static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM,
                              SIGINT,  SIGHUP, SIGQUIT, SIGXCPU, SIGXFSZ, SIGSYS};
  for (size_t i = 0; i < MS__ARRAY_SIZE(fatal); i++) {
    struct sigaction old;
    if (sigaction(fatal[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction fa;
    memset(&fa, 0, sizeof fa);
    sigemptyset(&fa.sa_mask);
    fa.sa_handler = on_fatal;
    fa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigaction(fatal[i], &fa, NULL);
  }
  G.state = ST_READY;
  __atomic_store_n(&g_on, 1, __ATOMIC_RELEASE);

  pid_t tid = (pid_t)syscall(SYS_gettid);
  if (G.rec_ordinal == 0 && tid == G.pid) {
    tstate *ts = tls_ts ? tls_ts : ts_register();
    if (ts) {
      uintptr_t top = &__libc_stack_end && __libc_stack_end ? (uintptr_t)__libc_stack_end
                                                            : ms__prim_sp();
      become_recorded(ts, top, (int64_t)(top - ms__prim_sp()));
    }
  }
}

// 1 when the real functions are known.
static int ensure_ready(void) {
  int st = __atomic_load_n(&G.state, __ATOMIC_ACQUIRE);
  if (LIKELY(st >= ST_READY)) return 1;
  if (tls_busy) return real_malloc != NULL;  // dlsym's own allocations
  int expect = ST_UNINIT;
  if (__atomic_compare_exchange_n(&G.state, &expect, ST_INITING, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    tls_busy = 1;
    resolve();
    tls_busy = 0;
    if (!real_malloc || !real_free || !real_calloc || !real_realloc) {
      __atomic_store_n(&G.state, ST_PASSIVE, __ATOMIC_RELEASE);
      return real_malloc != NULL;
    }
    tls_busy = 1;
    init_recording();
    tls_busy = 0;
    if (G.state == ST_INITING) G.state = ST_PASSIVE;
    __atomic_store_n(&G.state, G.state, __ATOMIC_RELEASE);
    return 1;
  }
  while (__atomic_load_n(&G.state, __ATOMIC_ACQUIRE) == ST_INITING) sched_yield();
  return 1;
}

__attribute__((constructor)) static void rec_ctor(void) { ensure_ready(); }
__attribute__((destructor)) static void rec_dtor(void);

// The thread's state when it records, else NULL (allocations pass through).
static __attribute__((noinline)) tstate *slow_state(void) {
  if (!ensure_ready()) return NULL;
  if (!__atomic_load_n(&g_on, __ATOMIC_RELAXED) || tls_busy) return NULL;
  tstate *ts = tls_ts;
  if (!ts) ts = ts_register();
  return ts && !ts->guard ? ts : NULL;
}

static inline tstate *state(void) {
  tstate *ts = tls_ts;
  if (LIKELY(ts && !ts->guard && __atomic_load_n(&g_on, __ATOMIC_RELAXED))) return ts;
  return slow_state();
}

/* ---- bookkeeping ---------------------------------------------------------------------- */

static inline int mine(const tstate *ts) { return !G.scope_thread || ts->is_rec; }

static inline void count(tstate *ts, int fn, uint64_t bytes) {
  ts->c.calls[fn]++;
  ts->c.bytes[fn] += bytes;
  ts->c.wlog[fn] += flog2(bytes);
}

#define MEASURE_BEGIN(ts)                                 \
  int64_t m0_ = 0;                                        \
  int meas_ = (++(ts)->nevents & 1023) == 0;              \
  if (UNLIKELY(meas_)) m0_ = raw_now();                   \
  (ts)->in_hook = 1;                                      \
  CBARRIER()
#define MEASURE_END(ts)                                   \
  CBARRIER();                                             \
  (ts)->in_hook = 0;                                      \
  if (UNLIKELY(meas_)) {                                  \
    (ts)->cost_raw += (uint64_t)(raw_now() - m0_);        \
    (ts)->cost_n++;                                       \
  }

static inline void book_alloc(tstate *ts, void *p, uint64_t n, int fn, uintptr_t sp) {
  MEASURE_BEGIN(ts);
  count(ts, fn, n);
  if (p) {
    int m = mine(ts);
    if (UNLIKELY(!table_put((uintptr_t)p, m ? n : (n | NOT_MINE)))) {
      __atomic_fetch_add(&G.table_overflow, 1, __ATOMIC_RELAXED);
    } else if (m) {
      event(ts, heap_add((int64_t)n), sp);
    }
  }
  MEASURE_END(ts);
}

// Forget p (before the real free or realloc). Returns 1 and its table entry
// (requested size, plus NOT_MINE when not counted) when p was there.
static inline int forget(uintptr_t p, uint64_t *entry) {
  if (table_take(p, entry) < 0) {
    __atomic_fetch_add(&G.unknown_frees, 1, __ATOMIC_RELAXED);
    *entry = 0;
    return 0;
  }
  return 1;
}

static inline uint64_t counted(uint64_t entry) { return entry & NOT_MINE ? 0 : entry; }

/* ---- the hooks ------------------------------------------------------------------------- */

EXPORT void *malloc(size_t n) {
  tstate *ts = state();
  if (UNLIKELY(!ts)) return real_malloc ? real_malloc(n) : boot_alloc(n);
  void *p = real_malloc(n);
  book_alloc(ts, p, n, F_MALLOC, MS__CALLER_SP());
  return p;
}

EXPORT void *calloc(size_t nm, size_t sz) {
  tstate *ts = state();
  if (UNLIKELY(!ts)) {
    if (real_calloc) return real_calloc(nm, sz);
    size_t n;
    if (__builtin_mul_overflow(nm, sz, &n)) return NULL;
    return boot_alloc(n);  // the arena is zeroed and never reused
  }
  size_t n;
  if (__builtin_mul_overflow(nm, sz, &n)) n = SIZE_MAX;
  void *p = real_calloc(nm, sz);
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
  void *q = real ? real(p, nm, sz) : real_realloc(p, n);
  MEASURE_BEGIN(ts);
  count(ts, fn, n);
  uint64_t old = counted(entry);
  // A block keeps its owner (counted or not); a new or unknown one is the
  // calling thread's.
  int keep_counted = found ? !(entry & NOT_MINE) : mine(ts);
  if (q) {
    uint64_t e = keep_counted ? n : (n | NOT_MINE);
    if (!table_put((uintptr_t)q, e)) {
      __atomic_fetch_add(&G.table_overflow, 1, __ATOMIC_RELAXED);
      keep_counted = 0;
    }
    int64_t d = (keep_counted ? (int64_t)n : 0) - (int64_t)old;
    if (keep_counted || old) event(ts, heap_add(d), sp);
  } else if (p && n != 0) {
    if (found) table_put((uintptr_t)p, entry);  // failed: p is still there
  } else if (p && old) {
    event(ts, heap_add(-(int64_t)old), sp);  // freed p
  }
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
  if (UNLIKELY(!ts)) return real_realloc ? real_realloc(p, n) : boot_alloc(n);
  return realloc_common(ts, p, n, F_REALLOC, MS__CALLER_SP(), NULL, 0, 0);
}

static void *reallocarray_fallback(void *p, size_t nm, size_t sz) {
  size_t n;
  if (__builtin_mul_overflow(nm, sz, &n)) {
    errno = ENOMEM;
    return NULL;
  }
  return real_realloc(p, n);
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
  if (UNLIKELY(!ts)) return real_realloc ? reallocarray_fallback(p, nm, sz) : boot_alloc(n);
  return realloc_common(ts, p, n, F_REALLOCARRAY, MS__CALLER_SP(), reallocarray_fallback, nm, sz);
}

EXPORT void free(void *p) {
  if (UNLIKELY(p && is_boot(p))) return;
  tstate *ts = state();
  if (UNLIKELY(!ts)) {
    if (real_free) real_free(p);
    return;
  }
  if (!p) {
    ts->c.calls[F_FREE]++;
    return;
  }
  MEASURE_BEGIN(ts);
  uint64_t entry;
  forget((uintptr_t)p, &entry);
  uint64_t old = counted(entry);
  count(ts, F_FREE, entry & ~NOT_MINE);
  if (old) event(ts, heap_add(-(int64_t)old), MS__CALLER_SP());
  MEASURE_END(ts);
  real_free(p);
}

EXPORT int posix_memalign(void **out, size_t al, size_t n) {
  tstate *ts = state();
  if (UNLIKELY(!ts)) {
    if (real_posix_memalign) return real_posix_memalign(out, al, n);
    if (al > 16) return ENOMEM;
    return (*out = boot_alloc(n)) ? 0 : ENOMEM;
  }
  int rc = real_posix_memalign(out, al, n);
  book_alloc(ts, rc == 0 ? *out : NULL, n, F_POSIX_MEMALIGN, MS__CALLER_SP());
  return rc;
}

#define ALIGNED_HOOK(name, FN, params, args, n)                         \
  EXPORT void *name params {                                            \
    tstate *ts = state();                                               \
    if (UNLIKELY(!ts)) return real_##name ? real_##name args : NULL;    \
    void *p = real_##name args;                                         \
    book_alloc(ts, p, n, FN, MS__CALLER_SP());                          \
    return p;                                                           \
  }
ALIGNED_HOOK(aligned_alloc, F_ALIGNED_ALLOC, (size_t al, size_t n), (al, n), n)
ALIGNED_HOOK(memalign, F_MEMALIGN, (size_t al, size_t n), (al, n), n)
ALIGNED_HOOK(valloc, F_VALLOC, (size_t n), (n), n)
ALIGNED_HOOK(pvalloc, F_PVALLOC, (size_t n), (n), n)
#undef ALIGNED_HOOK

/* ---- threads ----------------------------------------------------------------------------- */

static struct {
  void *(*fn)(void *);
  void *arg;
} g_tramp;

static void *trampoline(void *arg) {
  (void)arg;
  void *(*fn)(void *) = g_tramp.fn;
  void *a = g_tramp.arg;
  tstate *ts = tls_ts ? tls_ts : (ensure_ready() && g_on ? ts_register() : NULL);
  if (ts) become_recorded(ts, MS__CALLER_SP(), 0);
  return fn(a);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg) {
  ensure_ready();
  if (!real_pthread_create) return EAGAIN;
  __atomic_store_n(&g_multi, 1, __ATOMIC_SEQ_CST);  // before the thread can run
  if (G.state != ST_READY || G.rec_ordinal <= 0)
    return real_pthread_create(th, attr, fn, arg);
  long ord = __atomic_add_fetch(&g_ordinal, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&G.threads_created, ord, __ATOMIC_RELAXED);
  if (ord != G.rec_ordinal) return real_pthread_create(th, attr, fn, arg);
  g_tramp.fn = fn;
  g_tramp.arg = arg;
  return real_pthread_create(th, attr, trampoline, NULL);
}

/* ---- probe regions --------------------------------------------------------------------- */

static void stat_add(tstate *ts, const char *name, const churn *c) {
  const char *n = name ? name : "region";
  rstat *st = NULL;
  for (int i = 0; i < ts->nstats; i++)
    if (strncmp(ts->stats[i].name, n, NAME_MAX_LEN - 1) == 0) {
      st = &ts->stats[i];
      break;
    }
  if (!st) {
    if (ts->nstats == MAX_STATS) return;
    st = &ts->stats[ts->nstats++];
    size_t l = strlen(n);
    if (l > NAME_MAX_LEN - 1) l = NAME_MAX_LEN - 1;
    memcpy(st->name, n, l);
    st->name[l] = '\0';
  }
  st->occurrences++;
  for (int f = 0; f < NFN; f++) {
    st->c.calls[f] += c->calls[f];
    st->c.bytes[f] += c->bytes[f];
    st->c.wlog[f] += c->wlog[f];
  }
}

EXPORT int memstub_recorder_probe_v1(int op, const char *name, uintptr_t sp) {
  if (op == MS__PROBE_HELLO)
    return ensure_ready() && G.state == ST_READY && __atomic_load_n(&g_on, __ATOMIC_RELAXED);
  tstate *ts = state();
  if (!ts) return op == MS__PROBE_END ? -EINVAL : 0;
  ts->in_hook = 1;
  CBARRIER();
  int rc;
  int64_t h = __atomic_load_n(&g_heap, __ATOMIC_RELAXED);
  switch (op) {
    case MS__PROBE_BEGIN:
      if (ts->depth < MAX_DEPTH) {
        ts->frames[ts->depth].name = name;
        ts->frames[ts->depth].at_begin = ts->c;
      }
      rc = ++ts->depth;
      if (ts->is_rec && ts->depth == 1) {
        flush_bucket(ts);
        ts->tag = ++ts->occ;
        ts->base = sp;
        __atomic_store_n(&g_tag, ts->tag, __ATOMIC_RELAXED);
        push_row(ts, ts->now = raw_now(), 0, h, ts->tag);
      }
      break;
    case MS__PROBE_POINT:
      rc = ts->depth;
      if (ts->is_rec) {
        flush_bucket(ts);
        int64_t s = (int64_t)(ts->base - sp);
        push_row(ts, ts->now = raw_now(), s < 0 ? 0 : s, h, ts->tag);
      }
      break;
    default:  // MS__PROBE_END
      if (ts->depth == 0) {
        rc = -EINVAL;
        break;
      }
      rc = --ts->depth;
      if (ts->depth < MAX_DEPTH) {
        churn d;
        const churn *b = &ts->frames[ts->depth].at_begin;
        for (int f = 0; f < NFN; f++) {
          d.calls[f] = ts->c.calls[f] - b->calls[f];
          d.bytes[f] = ts->c.bytes[f] - b->bytes[f];
          d.wlog[f] = ts->c.wlog[f] - b->wlog[f];
        }
        stat_add(ts, ts->frames[ts->depth].name, &d);
      }
      if (ts->is_rec && ts->depth == 0) {
        flush_bucket(ts);
        int64_t s = (int64_t)(ts->base - sp);
        push_row(ts, ts->now = raw_now(), s < 0 ? 0 : s, h, ts->tag);
        ts->tag = 0;
        ts->base = ts->top;
        __atomic_store_n(&g_tag, 0, __ATOMIC_RELAXED);
      }
      break;
  }
  CBARRIER();
  ts->in_hook = 0;
  return rc;
}

/* ---- assembling the trace -------------------------------------------------------------- */

typedef struct kv {
  char key[96];
  char val[160];
} kv;

#define MAX_META 512
static kv g_meta[MAX_META];
static int g_nmeta;

static void meta(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void meta(const char *key, const char *fmt, ...) {
  if (g_nmeta == MAX_META) return;
  kv *m = &g_meta[g_nmeta++];
  size_t i = 0;
  for (; key[i] && i < sizeof m->key - 1; i++) {
    char c = key[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '.' || c == '-';
    m->key[i] = ok ? c : '_';
  }
  m->key[i] = '\0';
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->val, sizeof m->val, fmt, ap);
  va_end(ap);
  for (char *c = m->val; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
}

// Tenths, without floating point formatting.
static void fmt_x10(char *buf, size_t n, double v) {
  long long x = (long long)(v * 10.0 + (v >= 0 ? 0.5 : -0.5));
  snprintf(buf, n, "%s%lld.%lld", x < 0 ? "-" : "", (x < 0 ? -x : x) / 10, (x < 0 ? -x : x) % 10);
}

static void churn_meta(const char *prefix, const churn *c, uint64_t occurrences) {
  uint64_t calls = 0, bytes = 0;
  double w = 0;
  for (int f = 0; f < NFN; f++) {
    calls += c->calls[f];
    bytes += c->bytes[f];
    w += fn_weight[f] * c->wlog[f];
  }
  char key[96], wb[40];
  fmt_x10(wb, sizeof wb, w);
  if (occurrences)
    meta(prefix, "occurrences=%llu calls=%llu bytes=%llu churn=%s", (unsigned long long)occurrences,
         (unsigned long long)calls, (unsigned long long)bytes, wb);
  else
    meta(prefix, "calls=%llu bytes=%llu churn=%s", (unsigned long long)calls,
         (unsigned long long)bytes, wb);
  for (int f = 0; f < NFN; f++) {
    if (!c->calls[f]) continue;
    snprintf(key, sizeof key, "%s.%s", prefix, fn_name[f]);
    fmt_x10(wb, sizeof wb, fn_weight[f] * c->wlog[f]);
    meta(key, "calls=%llu bytes=%llu churn=%s", (unsigned long long)c->calls[f],
         (unsigned long long)c->bytes[f], wb);
  }
}

static void read_cmdline(char *buf, size_t n) {
  buf[0] = '\0';
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t r = read(fd, buf, n - 1);
  close(fd);
  if (r <= 0) return;
  for (ssize_t i = 0; i < r; i++)
    if (buf[i] == '\0') buf[i] = ' ';
  while (r > 0 && buf[r - 1] == ' ') r--;
  buf[r] = '\0';
}

// Merge two time-ordered runs a[0..na) b[0..nb) into out.
static void merge2(const row *a, size_t na, const row *b, size_t nb, row *out) {
  size_t i = 0, j = 0, k = 0;
  while (i < na && j < nb) out[k++] = b[j].t < a[i].t ? b[j++] : a[i++];
  while (i < na) out[k++] = a[i++];
  while (j < nb) out[k++] = b[j++];
}

typedef struct assembled {
  row *rows;
  size_t n;
  int64_t peak_stack, peak_heap, duration;
  size_t raw_rows;
  int regions;
} assembled;

// Gather every thread's rows, merge them by time, keep what the trace
// covers and coalesce again across threads. Signal-safe (mmap only).
static int assemble(assembled *A) {
  memset(A, 0, sizeof *A);
  int64_t raw_end = raw_now(), ns_end = ms__prim_now_ns();
  double scale = G.use_tsc && raw_end > G.raw0 ? (double)(ns_end - G.ns0) / (double)(raw_end - G.raw0)
                                               : 1.0;
  if (G.use_tsc && raw_end > G.raw0) G.raw_per_ns = 1.0 / scale;
  size_t total = 0, nruns = 0;
  for (tstate *ts = __atomic_load_n(&G.list, __ATOMIC_ACQUIRE); ts; ts = ts->next) {
    for (chunk *c = ts->head; c; c = c->next) total += __atomic_load_n(&c->n, __ATOMIC_ACQUIRE);
    nruns++;
  }
  A->raw_rows = total;
  if (total == 0) return -ENODATA;
  row *buf = map(total * sizeof(row)), *tmp = map(total * sizeof(row));
  size_t *runs = map((nruns + 1) * sizeof(size_t));
  if (!buf || !tmp || !runs) return -ENOMEM;
  // Runs: one per thread, each already in time order (clamped to be so).
  size_t k = 0, r = 0;
  for (tstate *ts = __atomic_load_n(&G.list, __ATOMIC_ACQUIRE); ts; ts = ts->next) {
    runs[r++] = k;
    int64_t last = INT64_MIN;
    for (chunk *c = ts->head; c; c = c->next) {
      size_t n = __atomic_load_n(&c->n, __ATOMIC_ACQUIRE);
      for (size_t i = 0; i < n && k < total; i++) {
        buf[k] = c->rows[i];
        if (buf[k].t < last) buf[k].t = last;
        last = buf[k++].t;
      }
    }
  }
  runs[r] = k;
  total = k;
  // Pairwise merging of runs until one is left.
  while (nruns > 1) {
    size_t out = 0, nr = 0;
    for (size_t i = 0; i < nruns; i += 2) {
      size_t a0 = runs[i], a1 = runs[i + 1];
      if (i + 1 < nruns) {
        size_t b1 = runs[i + 2];
        merge2(buf + a0, a1 - a0, buf + a1, b1 - a1, tmp + a0);
        runs[nr++] = a0;
        out = b1;
      } else {
        memcpy(tmp + a0, buf + a0, (a1 - a0) * sizeof(row));
        runs[nr++] = a0;
        out = a1;
      }
    }
    runs[nr] = out;
    nruns = nr;
    row *sw = buf;
    buf = tmp;
    tmp = sw;
  }
  // What the trace covers: probe regions of the recorded thread when there
  // were any (one occurrence or all), else from the recorded thread's start.
  int64_t max_tag = 0;
  for (size_t i = 0; i < total; i++)
    if (buf[i].tag > max_tag) max_tag = buf[i].tag;
  A->regions = max_tag > 0;
  int64_t origin = -1, last_stack = 0, last_heap = 0;
  if (!A->regions) origin = G.origin_raw;
  size_t out = 0;
  int64_t bucket_end = INT64_MIN, prev_t = 0;
  int have = 0;
  row cur = {0, 0, 0, 0}, mx = {0, 0, 0, 0};
  for (size_t i = 0; i < total; i++) {
    row x = buf[i];
    if (A->regions) {
      if (x.tag == 0 || (G.occurrence > 0 && x.tag != G.occurrence)) {
        if (x.stack >= 0 && origin < 0) last_stack = 0;
        last_heap = x.heap;
        continue;
      }
      if (origin < 0) origin = x.t;
    } else if (x.t < origin) {
      last_heap = x.heap;
      if (x.stack >= 0) last_stack = x.stack;
      continue;
    }
    if (x.stack >= 0)
      last_stack = x.stack;
    else
      x.stack = last_stack;
    last_heap = x.heap;
    int64_t t = (int64_t)((double)(x.t - origin) * scale);
    if (t < prev_t) t = prev_t;
    prev_t = t;
    x.t = t;
    if (x.heap < 0) x.heap = 0;
    if (x.stack > A->peak_stack) A->peak_stack = x.stack;
    if (x.heap > A->peak_heap) A->peak_heap = x.heap;
    if (have && t < bucket_end && x.tag == mx.tag) {
      if (x.stack > mx.stack) mx.stack = x.stack;
      if (x.heap > mx.heap) mx.heap = x.heap;
      cur = x;
      continue;
    }
    if (have) {
      tmp[out++] = mx;
      if (cur.stack != mx.stack || cur.heap != mx.heap) tmp[out++] = cur;
    }
    have = 1;
    mx = cur = x;
    bucket_end = t + (G.res_ns > 0 ? G.res_ns : 1);
    if (G.res_ns == 0) bucket_end = t;  // every event
  }
  if (have) {
    tmp[out++] = mx;
    if (cur.stack != mx.stack || cur.heap != mx.heap) tmp[out++] = cur;
  }
  (void)last_heap;
  if (out == 0) {
    tmp[out++] = (row){0, 0, last_heap < 0 ? 0 : last_heap, 0};
  }
  A->rows = tmp;
  A->n = out;
  A->duration = tmp[out - 1].t;
  return 0;
}

static void build_meta(const assembled *A) {
  g_nmeta = 0;
  char cmd[1024], b1[40], b2[40];
  read_cmdline(cmd, sizeof cmd);
  meta("source", "memstub-record");
  meta("command", "%s", cmd);
  meta("record.pid", "%ld", (long)G.pid);
  if (G.rec_ordinal == 0)
    meta("record.thread", "main");
  else
    meta("record.thread", "%ld (the %ldth thread the program created)%s", G.rec_ordinal,
         G.rec_ordinal, G.rec ? "" : "; never created: no stack recorded");
  meta("record.heap_scope", "%s", G.scope_thread ? "thread" : "process");
  meta("record.heap_measure", "bytes requested from the malloc family (like massif mem_heap_B)");
  meta("record.stack_from", "%s", A->regions ? "the frame that called memstub_probe_begin"
                                             : "the recorded thread's stack top");
  meta("record.regions", "%s", A->regions ? (G.occurrence ? "one occurrence" : "all occurrences")
                                          : "none (whole run)");
  if (A->regions && G.occurrence) meta("record.occurrence", "%ld", G.occurrence);
  meta("record.resolution_ns", "%lld", (long long)G.res_ns);
  meta("record.sample_hz", "%ld", G.timer_ok || G.sample_hz > 0 ? G.sample_hz : 0L);
  meta("record.clock", "%s", G.use_tsc ? "invariant cycle counter, rate measured over the run"
                                       : "CLOCK_MONOTONIC");
  uint64_t events = 0, cost_raw = 0, cost_n = 0, samples = 0, sample_raw = 0, dropped = 0;
  churn all;
  memset(&all, 0, sizeof all);
  for (tstate *ts = G.list; ts; ts = ts->next) {
    events += ts->nevents;
    cost_raw += ts->cost_raw;
    cost_n += ts->cost_n;
    samples += ts->samples;
    sample_raw += ts->sample_raw;
    dropped += ts->rows_dropped;
    for (int f = 0; f < NFN; f++) {
      all.calls[f] += ts->c.calls[f];
      all.bytes[f] += ts->c.bytes[f];
      all.wlog[f] += ts->c.wlog[f];
    }
  }
  double rpn = G.raw_per_ns > 0 ? G.raw_per_ns : 1.0;
  double cost = cost_n ? ((double)cost_raw / (double)cost_n - G.now_cost_raw) / rpn : 0;
  double scost = samples ? ((double)sample_raw / (double)samples) / rpn : 0;
  if (cost < 0) cost = 0;
  fmt_x10(b1, sizeof b1, cost);
  fmt_x10(b2, sizeof b2, scost);
  meta("record.events", "%llu", (unsigned long long)events);
  meta("record.cost_ns_per_event", "%s", b1);
  meta("record.cost_measured_events", "%llu", (unsigned long long)cost_n);
  meta("record.samples", "%llu", (unsigned long long)samples);
  meta("record.cost_ns_per_sample", "%s", b2);
  meta("record.overhead_ns", "%lld",
       (long long)(cost * (double)events + scost * (double)samples));
  meta("record.threads", "%ld", G.threads_seen);
  meta("record.rows_merged", "%llu", (unsigned long long)A->raw_rows);
  meta("record.peak_heap_bytes", "%lld", (long long)A->peak_heap);
  meta("record.peak_stack_bytes", "%lld", (long long)A->peak_stack);
  if (G.table_overflow) meta("record.table_overflow", "%llu", (unsigned long long)G.table_overflow);
  if (G.unknown_frees)
    meta("record.unknown_frees", "%llu", (unsigned long long)G.unknown_frees);
  if (dropped) meta("record.rows_dropped", "%llu", (unsigned long long)dropped);
  if (G.finish_how == 2)
    meta("record.exit", "killed by signal %d (trace written from the signal handler)", G.finish_sig);
  else
    meta("record.exit", "%s", G.finish_how == 1 ? "_exit" : "exit");
  meta("churn.weights", "malloc=1 calloc=2 realloc=3 free=1 (aligned allocators as malloc, "
                        "reallocarray as realloc); churn = sum of weight*log2(bytes)");
  churn_meta("churn.program", &all, 0);
  // Regions: merged by name across threads.
  for (tstate *ts = G.list; ts; ts = ts->next) {
    for (int i = 0; i < ts->nstats; i++) {
      const rstat *st = &ts->stats[i];
      int seen = 0;
      for (tstate *u = G.list; u != ts && !seen; u = u->next)
        for (int j = 0; j < u->nstats; j++)
          if (strcmp(u->stats[j].name, st->name) == 0) seen = 1;
      if (seen) continue;
      rstat sum = *st;
      for (tstate *u = ts->next; u; u = u->next)
        for (int j = 0; j < u->nstats; j++)
          if (strcmp(u->stats[j].name, st->name) == 0) {
            sum.occurrences += u->stats[j].occurrences;
            for (int f = 0; f < NFN; f++) {
              sum.c.calls[f] += u->stats[j].c.calls[f];
              sum.c.bytes[f] += u->stats[j].c.bytes[f];
              sum.c.wlog[f] += u->stats[j].c.wlog[f];
            }
          }
      char key[96];
      snprintf(key, sizeof key, "churn.region.%s", sum.name);
      churn_meta(key, &sum.c, sum.occurrences);
    }
  }
}

/* The trace through memstub_trace_write (normal exit). */
static int write_normal(const assembled *A) {
  memstub_trace *t = memstub_trace_create();
  if (!t) return -ENOMEM;
  int rc = 0, col = -1;
  if (A->regions) col = memstub_trace_add_column(t, "region");
  for (int i = 0; i < g_nmeta && rc == 0; i++) rc = memstub_trace_set_meta(t, g_meta[i].key, g_meta[i].val);
  if (rc == 0) rc = memstub_trace_reserve(t, A->n);
  for (size_t i = 0; i < A->n && rc == 0; i++) {
    rc = memstub_trace_append(t, A->rows[i].t, A->rows[i].stack, A->rows[i].heap);
    if (rc == 0 && col >= 0) memstub_trace_extra_row(t, t->n - 1)[col] = A->rows[i].tag;
  }
  memstub_error err;
  if (rc == 0) rc = memstub_trace_write(t, G.out, &err);
  memstub_trace_free(t);
  return rc;
}

/* The signal-safe writer: write(2) to a temporary file beside the target,
 * fsync, rename. */
static char g_wbuf[1 << 16];
static size_t g_wlen;
static int g_wfd = -1, g_werr;

static void wflush(void) {
  size_t off = 0;
  while (off < g_wlen && !g_werr) {
    ssize_t w = write(g_wfd, g_wbuf + off, g_wlen - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) g_werr = 1;
    else off += (size_t)w;
  }
  g_wlen = 0;
}

static void wput(const char *s, size_t n) {
  while (n) {
    size_t k = sizeof g_wbuf - g_wlen < n ? sizeof g_wbuf - g_wlen : n;
    memcpy(g_wbuf + g_wlen, s, k);
    g_wlen += k;
    s += k;
    n -= k;
    if (g_wlen == sizeof g_wbuf) wflush();
  }
}

static void wstr(const char *s) { wput(s, strlen(s)); }

static void wnum(int64_t v) {
  char b[24], *p = b + sizeof b;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do *--p = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0) *--p = '-';
  wput(p, (size_t)(b + sizeof b - p));
}

// The signal-path writer's temporary name beside G.out: "DIR/.BASE.tmp.sig".
static int raw_tmp_name(char *tmp, size_t cap) {
  const char *slash = strrchr(G.out, '/');
  size_t dl = slash ? (size_t)(slash - G.out + 1) : 0;
  const char *base = slash ? slash + 1 : G.out;
  if (dl + strlen(base) + 40 > cap) return -ENAMETOOLONG;
  memcpy(tmp, G.out, dl);
  char *p = tmp + dl;
  *p++ = '.';
  memcpy(p, base, strlen(base));
  p += strlen(base);
  memcpy(p, ".tmp.sig", 9);
  return 0;
}

static int write_raw(const assembled *A) {
  static char tmp[PATH_MAX + 64];
  // A device, FIFO or symbolic link is written in place (through the link),
  // never renamed over: only stat and lstat here, both async-signal-safe.
  struct stat st, lst;
  int in_place = stat(G.out, &st) == 0 &&
                 (!S_ISREG(st.st_mode) || (lstat(G.out, &lst) == 0 && S_ISLNK(lst.st_mode)));
  if (in_place)
    memcpy(tmp, G.out, strlen(G.out) + 1);
  else if (raw_tmp_name(tmp, sizeof tmp) < 0)
    return -ENAMETOOLONG;
  g_wfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (g_wfd < 0) return -errno;
  g_wlen = 0;
  g_werr = 0;
  wstr("# memstub-trace 1\n");
  for (int i = 0; i < g_nmeta; i++) {
    wstr("# ");
    wstr(g_meta[i].key);
    wstr(": ");
    wstr(g_meta[i].val);
    wstr("\n");
  }
  wstr(A->regions ? "time_ns,stack_bytes,heap_bytes,region\n" : "time_ns,stack_bytes,heap_bytes\n");
  for (size_t i = 0; i < A->n; i++) {
    wnum(A->rows[i].t);
    wput(",", 1);
    wnum(A->rows[i].stack);
    wput(",", 1);
    wnum(A->rows[i].heap);
    if (A->regions) {
      wput(",", 1);
      wnum(A->rows[i].tag);
    }
    wput("\n", 1);
  }
  wflush();
  if (!g_werr && fsync(g_wfd) != 0 && errno != EINVAL) g_werr = 1;
  if (close(g_wfd) != 0) g_werr = 1;
  if (in_place) return g_werr ? -EIO : 0;
  if (g_werr || rename(tmp, G.out) != 0) {
    unlink(tmp);
    return -EIO;
  }
  return 0;
}

// how: 0 exit, 1 _exit, 2 fatal signal.
static void finish(int how, int sig) {
  if (G.state != ST_READY || getpid() != G.pid) return;
  if (__atomic_exchange_n(&G.finished, 1, __ATOMIC_ACQ_REL)) return;
  tstate *me = tls_ts;
  if (me) me->guard = 1;
  __atomic_store_n(&g_on, 0, __ATOMIC_SEQ_CST);
  if (G.timer_ok) {
    timer_delete(G.timer);
    G.timer_ok = 0;
  }
  G.finish_how = how;
  G.finish_sig = sig;
  // Let other threads leave their bookkeeping, then close every bucket.
  for (tstate *ts = G.list; ts; ts = ts->next) {
    if (ts == me) continue;
    for (int i = 0; i < 2000 && ts->in_hook; i++) sched_yield();
  }
  for (tstate *ts = G.list; ts; ts = ts->next) flush_bucket(ts);
  assembled A;
  if (assemble(&A) != 0) return;
  build_meta(&A);
  if (how == 2)
    write_raw(&A);
  else if (write_normal(&A) != 0)
    write_raw(&A);
}

static void rec_dtor(void) { finish(0, 0); }

static void on_fatal(int sig) {
  int e = errno;
  finish(2, sig);
  errno = e;
  raise(sig);  // the disposition is back to the default (SA_RESETHAND)
}

static void child_after_fork(void) {
  // A forked child does not record and writes no trace (docs/recording.md).
  __atomic_store_n(&g_on, 0, __ATOMIC_RELAXED);
  G.timer_ok = 0;
  G.state = ST_PASSIVE;
}

EXPORT void _exit(int status) {
  finish(1, 0);
  if (real__exit) real__exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

EXPORT void _Exit(int status) {
  finish(1, 0);
  if (real__Exit) real__Exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}
