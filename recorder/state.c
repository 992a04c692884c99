/* recorder/state.c: the recorder's global state, its initialisation from
 * the environment (recorder/protocol.h), and the registration of threads. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "ms_common.h"
#include "table.h"

ms__rec_global ms__rec;
int ms__rec_on;
int64_t ms__rec_heap;
int64_t ms__rec_proc_peak;
uint32_t ms__rec_tick;
int64_t ms__rec_tag;
int ms__rec_multi;
TLS tstate *ms__rec_ts;
TLS int ms__rec_busy;

void *ms__rec_map(size_t n) {
  void *p =
      mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* ---- the recorder's own resident memory ---- */

int64_t ms__rec_self_bytes;

static size_t bit_words(const ms__rec_pages *pg) {
  size_t pages = (pg->n + ((size_t)1 << pg->shift) - 1) >> pg->shift;
  return (pages + 63) / 64;
}

void *ms__rec_map_counted(size_t n, ms__rec_pages *pg) {
  *pg = (ms__rec_pages){0};
  long ps = ms__prim_page_size();
  pg->shift = ps > 0 ? __builtin_ctzl((unsigned long)ps) : 12;
  pg->n = n;
  void *p = ms__rec_map(n);
  uint64_t *bits = p ? ms__rec_map(bit_words(pg) * sizeof(uint64_t)) : NULL;
  if (!bits) {
    if (p) munmap(p, n);
    *pg = (ms__rec_pages){0};
    return NULL;
  }
#ifdef MADV_NOHUGEPAGE
  (void)madvise(p, n, MADV_NOHUGEPAGE);  // a first write: one page, as counted
#endif
  pg->base = (uintptr_t)p;
  pg->bits = bits;
  return p;
}

void ms__rec_unmap_counted(ms__rec_pages *pg) {
  if (!pg->base) return;
  size_t words = bit_words(pg);
  int64_t pages = 0;
  for (size_t w = 0; w < words; w++) pages += __builtin_popcountll(pg->bits[w]);
  __atomic_fetch_sub(&ms__rec_self_bytes, pages << pg->shift, __ATOMIC_RELAXED);
  munmap((void *)pg->base, pg->n);
  munmap(pg->bits, words * sizeof(uint64_t));
  *pg = (ms__rec_pages){0};
}

void ms__rec_pages_first(ms__rec_pages *pg, size_t i) {
  // A write fault, never a read one (page_unwritten): the page comes in writable.
  __atomic_fetch_or((uint64_t *)(pg->base + (i << pg->shift)), 0, __ATOMIC_RELAXED);
  uint64_t b = UINT64_C(1) << (i & 63);
  if (!(__atomic_fetch_or(&pg->bits[i >> 6], b, __ATOMIC_RELEASE) & b))
    __atomic_fetch_add(&ms__rec_self_bytes, (int64_t)1 << pg->shift, __ATOMIC_RELAXED);
}

/* ---- thread registration ---- */

static void thread_gone(void *arg) {
  tstate *ts = arg;
  if (!ts || !__atomic_load_n(&ms__rec_on, __ATOMIC_RELAXED)) return;
  ts->in_hook = 1;
  CBARRIER();
  if (ts->all) {
    if (!ts->gone) ms__rec_thr_end(ts);  // --thread all: every thread's last row
  } else {
    ms__rec_flush_bucket(ts);
  }
  if (ts->is_rec && !ts->all) {
    // The component ends with its thread: a last row keeps its idle tail.
    ms__rec_sampler_pause();
    ms__rec_mem_sample(ts);
    int64_t t = raw_now();
    ms__rec_push_row(ts, t, -1, __atomic_load_n(&ms__rec_heap, __ATOMIC_RELAXED),
                     ts->tag | ROW_EXACT, cur_mem(ts), ms__rec_cpu_at(ts, t, 1), 1);
    ms__rec.rec_gone = 1;
  }
  CBARRIER();
  ts->in_hook = 0;
}

tstate *ms__rec_ts_register(void) {
  ms__rec_busy = 1;
  int e = errno;
  tstate *ts = ms__rec_journal_slot(sizeof(tstate));
  if (ts) {
    ts->h.magic = MS__REC_JOURNAL_TSTATE;
  } else {
    ts = ms__rec_map(sizeof(tstate));
  }
  if (ts) {
    ts->tid = (pid_t)syscall(SYS_gettid);
    ts->h.thread_no = __atomic_add_fetch(&ms__rec.threads_no, 1, __ATOMIC_RELAXED);
    if (ts->tid != getpid()) __atomic_store_n(&ms__rec_multi, 1, __ATOMIC_SEQ_CST);
    ts->exact = 1;
    ts->cpu_t = INT64_MIN / 2;
    ts->cpu_v = -1;
    ts->rq_v = -1;
    ts->tick = __atomic_load_n(&ms__rec_tick, __ATOMIC_RELAXED);
    tstate *head = __atomic_load_n(&ms__rec.list, __ATOMIC_RELAXED);
    do ts->next = head;
    while (!__atomic_compare_exchange_n(&ms__rec.list, &head, ts, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
    __atomic_fetch_add(&ms__rec.threads_seen, 1, __ATOMIC_RELAXED);
    if (ms__rec.key_ok) pthread_setspecific(ms__rec.key, ts);
    ms__rec_ts = ts;
  }
  errno = e;
  ms__rec_busy = 0;
  return ts;
}

/* The lowest address of the calling thread's own stack, whose top is top
 * (0: not known): the main thread's from its stack limit (none when
 * unlimited), another's from pthread_getattr_np (which allocates: through
 * to the real allocator). pre: ts is the calling thread's, not in a hook. */
static uintptr_t stack_low(tstate *ts, uintptr_t top) {
  if (ts->tid == ms__rec.pid) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= top)
      return 0;
    return top - (uintptr_t)rl.rlim_cur;
  }
  uintptr_t low = 0;
  pthread_attr_t at;
  ts->guard = 1;
  if (pthread_getattr_np(pthread_self(), &at) == 0) {
    void *addr;
    size_t size;
    if (pthread_attr_getstack(&at, &addr, &size) == 0 && (uintptr_t)addr < top) low = (uintptr_t)addr;
    pthread_attr_destroy(&at);
  }
  ts->guard = 0;
  return low;
}

extern void *__libc_stack_end __attribute__((weak));

/* The calling thread's own stack top: the main thread's __libc_stack_end,
 * another's the end of the stack block pthread_getattr_np gives (which
 * allocates: through to the real allocator); sp when not known or below sp.
 * pre: ts is the calling thread's, not in a hook. */
uintptr_t ms__rec_own_stack_top(tstate *ts, uintptr_t sp) {
  uintptr_t top = 0;
  if (ts->tid == ms__rec.pid) {
    if (&__libc_stack_end && __libc_stack_end) top = (uintptr_t)__libc_stack_end;
  } else {
    pthread_attr_t at;
    ts->guard = 1;
    if (pthread_getattr_np(pthread_self(), &at) == 0) {
      void *addr;
      size_t size;
      if (pthread_attr_getstack(&at, &addr, &size) == 0) top = (uintptr_t)addr + size;
      pthread_attr_destroy(&at);
    }
    ts->guard = 0;
  }
  return top > sp ? top : sp;
}

// This thread becomes the recorded one; its stack top is top.
void ms__rec_become_recorded(tstate *ts, uintptr_t top, int64_t stack0) {
  ts->low = stack_low(ts, top);
  ts->last_s = stack0 > 0 ? stack0 : 0;
  ts->in_hook = 1;
  CBARRIER();
  ms__rec_flush_bucket(ts);
  ts->top = ts->base = top;
  ts->is_rec = 1;
  int64_t t = raw_now();
  // --thread all: thread 0 is the component's start, the others start later.
  if (!ts->all || ts->thr == 0) {
    ms__rec.rec = ts;
    ms__rec.rec_clock_ok = pthread_getcpuclockid(pthread_self(), &ms__rec.rec_clock) == 0;
    ms__rec.origin_raw = t;
    ms__rec.origin_ns = ms__prim_now_ns();
    if (ts->tid != ms__rec.pid) ms__rec.start_cpu_ns = -1;  // not the process's start
    if (ms__rec.jhead) {
      ms__rec.jhead->origin_ns = ms__rec.origin_ns;
      __atomic_store_n(&ms__rec.jhead->origin_raw, t, __ATOMIC_RELEASE);
    }
  }
  // The program's (or the thread's) first state: a row of its own.
  ms__rec_mem_sample(ts);  // the base of rss and faults
  ts->cpu_t = t;
  ts->cpu_v = ms__prim_thread_cpu_ns();
  if (ms__rec.rq_gap_raw > 0) ts->rq_v = ms__prim_thread_run_delay();
  int64_t h = row_heap(ts);
  ms__rec_push_row(ts, t, stack0, h, ROW_EXACT, cur_mem(ts), ts->cpu_v, 1);
  CBARRIER();
  ts->in_hook = 0;
  if (ts->all)
    ms__rec_sampler_arm_thread(ts);
  else
    ms__rec_sampler_arm(ts->tid);
}

/* ---- initialisation ---- */

static long env_long(const char *name, long dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end;
  long v = strtol(s, &end, 10);
  return *end ? dflt : v;
}

static void child_after_fork(void);

// The options (recorder/protocol.h); 0, or -1 when this process does not record.
static int read_env(void) {
  const char *out = getenv(MS__REC_ENV_OUTPUT);
  long parent = env_long(MS__REC_ENV_PARENT, -1);
  const char *follow = getenv(MS__REC_ENV_FOLLOW);
  ms__rec.pid = getpid();
  // The process `memstub record` started, its child, records (and keeps
  // recording across exec, which keeps the pid and the parent). Its own
  // children have another parent: they run untouched, or with
  // --follow-children record a trace of their own (follow.c).
  int root = parent == (long)getppid();
  ms__rec.spawn_ns = root ? env_long(MS__REC_ENV_SPAWN_NS, -1) : -1;
  const char *times = getenv(MS__REC_ENV_TIMES);
  if (root && times && *times && strlen(times) < sizeof ms__rec.times) {
    // A reference run: the regions of the thread a recording follows, timed.
    memcpy(ms__rec.times, times, strlen(times) + 1);
    ms__rec.times_only = 1;
    const char *tt = getenv(MS__REC_ENV_THREAD);
    ms__rec.rec_ordinal = tt && strcmp(tt, "region") == 0 ? MS__REC_REGION_THREAD
                          : tt && strcmp(tt, "main") != 0 && strcmp(tt, "all") != 0 &&
                                    strcmp(tt, "auto") != 0
                              ? env_long(MS__REC_ENV_THREAD, 0)
                              : 0;
    ms__rec.occurrence = env_long(MS__REC_ENV_OCCURRENCE, 0);
    ms__rec.times_whole = env_long(MS__REC_ENV_TIMES_WHOLE, 0) == 1;
    return 0;
  }
  if (!out || !*out || strlen(out) >= sizeof ms__rec.out) return -1;
  if (!root && !(follow && *follow)) return -1;
  memcpy(ms__rec.out, out, strlen(out) + 1);
  const char *th = getenv(MS__REC_ENV_THREAD);
  // "auto": memstub record's default, every thread (the command chose it)
  ms__rec.thread_default = th && strcmp(th, "auto") == 0;
  ms__rec.all = th && (strcmp(th, "all") == 0 || ms__rec.thread_default);
  ms__rec.rec_ordinal = !th || strcmp(th, "main") == 0 || ms__rec.all ? 0
                        : strcmp(th, "region") == 0 ? MS__REC_REGION_THREAD
                                                    : env_long(MS__REC_ENV_THREAD, 0);
  const char *scope = getenv(MS__REC_ENV_HEAP);
  // --thread all: each thread's heap is the blocks it allocated (threads.c).
  ms__rec.scope_thread = scope && strcmp(scope, "thread") == 0 && !ms__rec.all;
  ms__rec.res_ns = env_long(MS__REC_ENV_RESOLUTION, MS__REC_DEFAULT_RESOLUTION_NS);
  if (ms__rec.res_ns < 0) ms__rec.res_ns = 0;
  ms__rec.sample_hz = env_long(MS__REC_ENV_SAMPLE_HZ, MS__REC_DEFAULT_SAMPLE_HZ);
  ms__rec.watch = ms__rec.sample_hz > 0 && env_long(MS__REC_ENV_WATCH, 1) != 0;
  ms__rec.occurrence = env_long(MS__REC_ENV_OCCURRENCE, 0);
  ms__rec.sig = (int)env_long(MS__REC_ENV_SIGNAL, 0);  // 0: the first free one
  const char *journal = getenv(MS__REC_ENV_JOURNAL);
  if (!root) return ms__rec_follow_names(out, journal, follow);
  if (journal && strlen(journal) < sizeof ms__rec.journal)
    memcpy(ms__rec.journal, journal, strlen(journal) + 1);
  const char *status = getenv(MS__REC_ENV_STATUS);
  if (status && strlen(status) < sizeof ms__rec.status)
    memcpy(ms__rec.status, status, strlen(status) + 1);
  return 0;
}

/* The clock: the invariant cycle counter if there is one; the rate is
 * estimated over 200 us now (for buckets) and measured over the whole run at
 * the end (for the trace's times). */
static void init_clock(void) {
  ms__rec.use_tsc = ms__prim_cycles_invariant();
  ms__rec.ns0 = ms__prim_now_ns();
  ms__rec.raw0 = raw_now();
  if (ms__rec.use_tsc) {
    int64_t until = ms__rec.ns0 + 200000, n1;
    while ((n1 = ms__prim_now_ns()) < until) {
    }
    int64_t r1 = raw_now();
    ms__rec.raw_per_ns = (double)(r1 - ms__rec.raw0) / (double)(n1 - ms__rec.ns0);
    if (!(ms__rec.raw_per_ns > 0.01)) {
      ms__rec.use_tsc = 0;
      ms__rec.raw_per_ns = 1.0;
    }
  } else {
    ms__rec.raw_per_ns = 1.0;
  }
  int64_t a = raw_now();
  for (int i = 0; i < 63; i++) (void)raw_now();
  ms__rec.now_cost_raw = (double)(raw_now() - a) / 64.0;
  ms__rec.res_raw = (int64_t)((double)ms__rec.res_ns * ms__rec.raw_per_ns);
  ms__rec.grow_gap_raw = ms__rec.res_raw / 4;
  ms__rec.win_raw = (int64_t)(1e6 * ms__rec.raw_per_ns);
  ms__rec.cpu_gap_raw = (int64_t)(1e4 * ms__rec.raw_per_ns);
  // 250 us: a read (about 7 us here, under load) costs at most 3 % of the time it explains.
  ms__rec.rq_gap_raw = ms__prim_thread_run_delay() >= 0 ? (int64_t)(2.5e5 * ms__rec.raw_per_ns) : 0;
  ms__rec.end_cpu = -1;
  ms__rec.origin_raw = ms__rec.raw0;  // until the recorded thread starts
}

// The trace on a fatal signal whose action the program left at the default.
static void install_fatal(void) {
  static const int fatal[] = {MS__REC_FATAL_SIGNALS};
  for (size_t i = 0; i < MS__ARRAY_SIZE(fatal); i++) {
    struct sigaction old;
    if (sigaction(fatal[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction fa;
    memset(&fa, 0, sizeof fa);
    sigemptyset(&fa.sa_mask);
    fa.sa_handler = ms__rec_on_fatal;
    fa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigaction(fatal[i], &fa, NULL);
  }
}

static void init_recording(void) {
  if (read_env() != 0) {
    ms__rec.state = ST_PASSIVE;
    return;
  }
  if (ms__rec.times_only) {  // ready for --function's patches; every allocator call passes through
    ms__rec.state = ST_READY;
    if (ms__rec.times_whole) ms__rec_times_whole_begin();
    return;
  }
  // What the process did before this (exec, the loader): not the recorder's cost.
  ms__rec.start_ns = ms__prim_now_ns();
  ms__rec.start_cpu_ns = ms__prim_process_cpu_ns();
  ms__rec_churn_init();
  init_clock();
  long cap = env_long(MS__REC_ENV_TABLE_MAX, 0);
  if (cap > 0) ms__rec_table_limit = (uint64_t)cap;
  if (ms__rec_table_init() != 0) {
    // Said in the status file: the command reports it (no trace, not "never started").
    ms__rec_status(-1, 0, 0, ENOMEM, MS__REC_NOTHING_MEMORY);
    ms__rec.state = ST_PASSIVE;
    return;
  }
  ms__rec.key_ok = pthread_key_create(&ms__rec.key, thread_gone) == 0;
  pthread_atfork(NULL, NULL, child_after_fork);
  if (ms__rec.sample_hz > 0) ms__rec_sampler_install();  // else: at allocator calls only
  install_fatal();
  ms__rec_mem_init();
  ms__rec_journal_init();
  if (!ms__rec.is_child) ms__rec_calls_init();
  ms__rec.state = ST_READY;
  __atomic_store_n(&ms__rec_on, 1, __ATOMIC_RELEASE);
  ms__rec_status(-1, 0, 0, 0, 0);

  pid_t tid = (pid_t)syscall(SYS_gettid);
  if (ms__rec.rec_ordinal == 0 && tid == ms__rec.pid) {
    tstate *ts = ms__rec_ts ? ms__rec_ts : ms__rec_ts_register();
    if (ts) {
      uintptr_t top =
          &__libc_stack_end && __libc_stack_end ? (uintptr_t)__libc_stack_end : ms__prim_sp();
      if (ms__rec.all)
        ms__rec_thr_begin(ts, ms__rec_thr_number(), -1, top, (int64_t)(top - ms__prim_sp()));
      else
        ms__rec_become_recorded(ts, top, (int64_t)(top - ms__prim_sp()));
    }
  }
}

// 1 when the real functions are known.
int ms__rec_ensure_ready(void) {
  int st = __atomic_load_n(&ms__rec.state, __ATOMIC_ACQUIRE);
  if (LIKELY(st >= ST_READY)) return 1;
  if (ms__rec_busy) return ms__rec_real_malloc != NULL;  // dlsym's own allocations
  int expect = ST_UNINIT;
  if (__atomic_compare_exchange_n(&ms__rec.state, &expect, ST_INITING, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    ms__rec_busy = 1;
    ms__rec_resolve();
    ms__rec_busy = 0;
    if (!ms__rec_real_malloc || !ms__rec_real_free || !ms__rec_real_calloc ||
        !ms__rec_real_realloc) {
      __atomic_store_n(&ms__rec.state, ST_PASSIVE, __ATOMIC_RELEASE);
      return ms__rec_real_malloc != NULL;
    }
    ms__rec_busy = 1;
    init_recording();
    ms__rec_busy = 0;
    if (ms__rec.state == ST_INITING) ms__rec.state = ST_PASSIVE;
    __atomic_store_n(&ms__rec.state, ms__rec.state, __ATOMIC_RELEASE);
    return 1;
  }
  while (__atomic_load_n(&ms__rec.state, __ATOMIC_ACQUIRE) == ST_INITING) sched_yield();
  return 1;
}

__attribute__((constructor)) static void rec_ctor(void) {
  ms__rec_ensure_ready();
  // --function: every object the program started with is mapped by now.
  if (__atomic_load_n(&ms__rec.state, __ATOMIC_ACQUIRE) == ST_READY) {
    ms__rec_busy = 1;
    ms__rec_fn_init();
    ms__rec_busy = 0;
    // A name not found or not patchable: said now, should the process be killed.
    if (ms__rec_fn_problem()) ms__rec_status(-1, 0, 0, 0, 0);
  }
}
// The trace at exit, after the program's own exit handlers.
__attribute__((destructor)) static void rec_dtor(void) { ms__rec_finish(0, 0); }

// The thread's state when it records, else NULL (allocations pass through).
tstate *ms__rec_slow_state(void) {
  if (!ms__rec_ensure_ready()) return NULL;
  if (!__atomic_load_n(&ms__rec_on, __ATOMIC_RELAXED) || ms__rec_busy) return NULL;
  tstate *ts = ms__rec_ts;
  if (ts && ts->in_hook && !ts->guard) {
    // Called inside the bookkeeping (a signal handler's malloc): it passes
    // through, and the summary says how often (record.reentered).
    __atomic_fetch_add(&ms__rec.reentered, 1, __ATOMIC_RELAXED);
    return NULL;
  }
  if (!ts) {
    ts = ms__rec_ts_register();
    // --thread all: a thread made otherwise than through pthread_create
    // starts at its first call (the trampoline registers the others first).
    if (ts && ms__rec.all) ms__rec_thr_begin_unknown(ts);
  }
  return ts && !ts->guard ? ts : NULL;
}

static void child_after_fork(void) {
  ms__rec_calls_forked();  // the parent's calls file is the parent's alone
  const char *follow = getenv(MS__REC_ENV_FOLLOW);
  int was_on = __atomic_load_n(&ms__rec_on, __ATOMIC_RELAXED);
  __atomic_store_n(&ms__rec_on, 0, __ATOMIC_RELAXED);
  if (follow && *follow && was_on && ms__rec.state == ST_READY && !ms__rec.finished) {
    ms__rec_follow_fork(follow);  // --follow-children: a recording of its own
    return;
  }
  // Else a forked child does not record and writes no trace (docs/recording.md).
  // Its state is the parent's (in the journal, shared): never touched again.
  ms__rec_ts = NULL;
  ms__rec_sampler_forget();
  ms__rec_watch_forget();
  ms__rec.state = ST_PASSIVE;
}
