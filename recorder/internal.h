/* recorder/internal.h: what the recorder's files share (docs/recording.md).
 *
 * The recorder interposes the malloc family and keeps, for one recorded
 * thread, the stack in use (stack pointer against the thread's stack top, or
 * against the frame that opened a probe region) and the heap in use as bytes
 * requested (a pointer -> size table, like massif's mem_heap_B), over time.
 * A timer on the recorded thread's CPU time samples its stack between
 * allocator calls (sampler.c: it never lands in a blocked system call).
 *
 * Hot path, per allocator call: one TLS load, the real call, a lock-free
 * open-addressing table update, one atomic add on the heap total, the churn
 * counters, and an update of the thread's own coalescing bucket. The clock is
 * read only when the sampling tick moved, every 16th event, or on every event
 * while the thread allocates slowly; the trace's last row is the end of the
 * run, so its time axis is wall time, idle stretches included. Each thread appends rows to its own
 * chunks (mmap, never malloc); at exit the chunks are merged by time,
 * re-coalesced and written atomically through memstub_trace_write. On a fatal
 * signal a signal-safe writer does the same with write(2) and rename(2).
 *
 * The recorder never calls malloc while it does its bookkeeping. When it calls
 * libc itself (dlsym, writing the trace) the thread's guard or the global
 * "off" switch routes any allocation straight to the real allocator. During
 * dlsym's own bootstrap, allocations come from a static arena.
 *
 * Files: hooks.c (the malloc family, threads, _exit), table.c/table.h (the
 * live-block table), epochs.c (who allocated a block, when, in which
 * region), state.c (global state, initialisation, thread registration),
 * sampler.c (the stack-sampling timer), churn.c, regions.c (probe regions),
 * sink.c (rows, coalescing, the trace at exit), summary.c (the metadata),
 * watch.c (the watcher: rows of threads that block the sampling signal). */
#ifndef MEMSTUB_RECORDER_INTERNAL_H
#define MEMSTUB_RECORDER_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "memstub/work.h"
#include "prim.h"
#include "protocol.h"

/* Everything declared here is the library's own: hidden, so that the hooks
 * reach these globals directly (PC-relative), not through the GOT. */
#pragma GCC visibility push(hidden)

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TLS __thread __attribute__((tls_model("initial-exec")))
#define CBARRIER() __asm__ volatile("" ::: "memory")
// The hot path, inlined into the hooks as when it was one file.
#define HOT static inline __attribute__((always_inline))

/* ---- allocator functions ---- */

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

/* ---- rows and per-thread state ---- */

// Rows and their chunks are in protocol.h: the journal (sink.c) holds them
// for `memstub record` to salvage after SIGKILL.
typedef ms__rec_row row;
typedef ms__rec_chunk chunk;
typedef ms__rec_mem memv;
// A row with its memory, as the merge at exit handles it.
typedef ms__rec_work workv;
typedef struct xrow {
  int64_t t, stack, heap, tag;
  memv m;
  workv w;
} xrow;
#define ROW_EXACT MS__REC_ROW_EXACT
#define CHUNK_ROWS MS__REC_CHUNK_ROWS

#define MAX_DEPTH 32
#define MAX_STATS 64
#define NAME_MAX_LEN 64

typedef struct churn {
  uint64_t calls[NFN];
  uint64_t bytes[NFN];
  uint64_t wlog[NFN];  // sum of log2(bytes), in units of 2^-MS__REC_LOG2_FRAC (flog2)
} churn;

typedef struct rframe {
  const char *name;
  churn at_begin;
} rframe;

typedef struct rstat {
  char name[NAME_MAX_LEN];
  uint64_t occurrences;  // outermost entries
  uint64_t nested;       // entries while an occurrence of it was open (counted in that one)
  churn c;
} rstat;

typedef struct tstate {
  ms__rec_thead h;  // first: the journal's salvage reads it (protocol.h)
  // hot: the allocator hooks
  volatile int in_hook;  // bookkeeping under way: the sampler keeps off
  int guard;             // the recorder's own libc calls: pass through
  int in_alloc;          // inside the real malloc family: its mmaps are heap
  int is_rec;            // this is the recorded thread
  int all;               // --thread all: this thread records (threads.c; hot: every hook tests it)
  int exact;             // stamp every event (slow allocation rate)
  uintptr_t base;        // stack reference: the thread's top or a region's base
  uintptr_t low;         // the lowest address of the thread's own stack (0: not known)
  int64_t last_s;        // the last stack depth read on that stack
  uint64_t stack_off;    // readings of the stack pointer off it (stack_at)
  uint32_t tick, since, win_events;
  int64_t win_t0;  // when the window of win_events began
  int64_t now;     // last clock reading
  uint64_t nevents;
  int64_t tag;
  int64_t minflt, majflt;  // page faults at the last memory sample (recorded thread)
  int64_t mem_raw;         // when a region boundary last sampled memory
  uint64_t grow_pending;   // heap growth whose sample was skipped (ms__rec_grow_sample)
  int shrink_pending;      // a block of MS__REC_SHRINK_SAMPLE or more freed since the last sample
                           // (2: a chunk the allocator had mapped for it, unmapped at its free)
  // its open epoch (epochs.c): number, bucket and occurrence it is for
  uint32_t ep;
  int64_t ep_t0, ep_tag;
  struct gen_occ *gocc;  // the open region occurrence's record (generations.c)
  // coalescing bucket: h.b
  chunk *head, *tail;
  churn c;
  // work (docs/formats.md, "Work columns"): calls since the thread's last row
  uint32_t wn[MS__REC_WORK_CALLS];
  uint64_t wbytes;
  int64_t cpu_t, cpu_v;  // the recorded thread's last CPU clock read: raw time, ns
  int64_t rq_v;          // its run-queue wait at the last reading (ns, -1 unknown)
  uint32_t mem_ver;      // ms__rec_mem_ver when the bucket's memory was last taken
  // cost measurement
  uint64_t cost_raw, cost_n;
  uint64_t rcost_raw, rcost_n;  // those of them inside a probe region (depth > 0)
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
  // --thread all (threads.c): every thread records; nothing here is used otherwise
  int thr;                 // its number in the trace (0 first, then creation order)
  int peer;                // the thread that created it (-1: none or unknown)
  int gone;                // it has ended (its last row is pushed)
  // Its heap (theap()): bytes it allocated less those it freed (its own
  // counter: stored by it alone, no atomic add), less those others freed.
  int64_t theap_own, theap_x;
  int64_t x_seen;          // theap_x when it last looked (theap_add)
  uint64_t nrows;          // rows pushed so far (specials sort among them)
  struct ms__rec_spblock *sp_head, *sp_tail;  // its special rows (joins, cross-thread frees)
  int nx;                  // cross-thread frees in the open bucket, by (from, alloc)
  struct txfree {
    int from;
    int64_t alloc;  // raw time of the owner's bucket
    int64_t t;      // raw time of the first of these frees: the row's
    int64_t bytes, heap_after;
  } xf[8];
  timer_t timer;  // its own sampling timer
  int timer_ok, tblocked;
  int64_t blk_since, blk_ns;  // since when it blocks the sampling signal (0: not now); before
  clockid_t cpu_clock;  // its CPU clock (pthread_getcpuclockid), for other threads to read
  int cpu_clock_ok;
  struct ms__rec_calls_buf *calls;  // record --calls: its buffer of encoded calls (calls.c)
  uint64_t align;                   // the alignment of the memalign-family call under way
} tstate;

extern TLS tstate *ms__rec_ts;  // this thread's state, once registered
extern TLS int ms__rec_busy;    // inside registration or initialisation

/* ---- global state (state.c) ---- */

// rec_ordinal of --function without --thread: the first thread whose call
// opens a region becomes the recorded one (regions.c), whichever it is.
#define MS__REC_REGION_THREAD (-1)

enum { ST_UNINIT, ST_INITING, ST_READY, ST_PASSIVE };

typedef struct ms__rec_global {
  int state;
  pid_t pid;
  long rec_ordinal;  // 0: main thread, N: the Nth thread the program creates,
                     // MS__REC_REGION_THREAD: the first thread that opens a region
  int region_claimed;  // MS__REC_REGION_THREAD: a thread has become the recorded one
  int scope_thread;  // heap of the recorded thread only
  int64_t res_ns, res_raw;
  int64_t grow_gap_raw;  // growth samples at most this often (res_raw / 4)
  int64_t win_raw;  // 1 ms in clock units: the window of the allocation rate
  long sample_hz;
  int watch;        // the watcher may run (MS__REC_ENV_WATCH not "0", sampling on)
  long occurrence;  // 0: every region occurrence
  int sig;
  int use_tsc;
  int64_t raw0, ns0;
  double raw_per_ns;  // estimate, for buckets and costs
  double now_cost_raw;
  int64_t cpu_gap_raw;  // CPU clock reads at most this often (10 us in clock units)
  // The run-queue wait is read at a CPU clock read that found at least this
  // much off-CPU time since the last (clock units; 0: not readable here).
  int64_t rq_gap_raw;
  int64_t end_cpu;      // the recorded thread's CPU time at the trace's end, -1 unknown
  int64_t origin_raw;  // when the recorded thread started
  int64_t origin_ns;   // the same on CLOCK_MONOTONIC
  /* When `memstub record` started the program (CLOCK_MONOTONIC, -1 not
   * known: not its child); when the recorder began to set itself up (at the
   * process's first allocator call or its constructor) and the process's CPU
   * time then (-1: the trace does not start with the main thread): what ran
   * before the recorder (exec, the loader, the C library's start). */
  int64_t spawn_ns, start_ns, start_cpu_ns;
  char out[PATH_MAX];
  char status[PATH_MAX];   // the status file (protocol.h), "" when none
  char journal[PATH_MAX];  // the row journal (protocol.h), "" when none
  ms__rec_journal_head *jhead;  // its head page, mapped shared
  uint64_t journal_bytes;       // handed out after the head
  int journal_off;              // it failed once: anonymous chunks from then on
  uint64_t threads_no;          // threads registered (chunk thread_no)
  timer_t timer;
  int timer_ok;
  tstate *rec;
  int rec_gone;  // the recorded thread has ended (its last row is its end)
  tstate *list;
  pthread_key_t key;
  int key_ok;
  int finished;
  int finish_how;  // 0 exit, 1 _exit, 2 signal
  int finish_sig;
  uint64_t unknown_frees, chunk_fail;
  uint64_t stale_blocks, stale_bytes;  // blocks whose free no hook saw (table.h)
  uint64_t reentered;  // allocator calls made inside the bookkeeping (a signal handler's)
  long threads_created, threads_seen;
  int is_child;  // a process below the recorded one (--follow-children, follow.c)
  pid_t ppid;    // its parent when it started recording
  int all;       // --thread all (threads.c)
  int thread_default;  // all by memstub record's default, not asked for (--thread all)
  int regions_seen;    // all: a thread opened a probe region or --function (they do not scope)
  int next_thr;  // the next thread number to give out
  uint64_t xfrees, joins;  // cross-thread frees and joins seen (metadata)
  clockid_t rec_clock;     // the recorded thread's CPU clock (rec_clock_ok)
  int rec_clock_ok;
  int times_only;          // a reference run: regions timed into times, nothing recorded (times.c)
  int times_whole;         // ... the whole run timed as one region (MS__REC_ENV_TIMES_WHOLE)
  char times[PATH_MAX];
} ms__rec_global;

extern ms__rec_global ms__rec;
extern int ms__rec_on;         // recording (relaxed loads on the hot path)
extern int64_t ms__rec_heap;   // heap total in scope
extern int64_t ms__rec_heap_at_sample;  // ms__rec_heap at the last memory sample (memory.c)
extern uint32_t ms__rec_tick;  // sampling ticks
extern int64_t ms__rec_tag;    // the recorded thread's current region occurrence
extern int64_t ms__rec_mapped;  // anonymous bytes mapped outside the malloc family (memory.c)
extern int64_t ms__rec_rss;     // RssAnon at the last memory sample, bytes (-1: unknown)
extern uint32_t ms__rec_mem_ver;  // bumped after every memory sample (memory.c)
/* Set before a second thread can run (pthread_create sets it before the
 * thread exists; a thread made another way sets it at its first call). Until
 * then the table and the heap total use plain loads and stores. */
extern int ms__rec_multi;

// The real functions (hooks.c resolves them).
extern void *(*ms__rec_real_malloc)(size_t);
extern void *(*ms__rec_real_calloc)(size_t, size_t);
extern void *(*ms__rec_real_realloc)(void *, size_t);
extern void (*ms__rec_real_free)(void *);

/* The recorder's own resident memory. Its tables (the epochs, generations'
 * records and sites' tables; the live-block table counts its own) are reserved large and
 * written sparsely; each of their pages is counted at its first write, so
 * that rss_bytes leaves them out (docs/recording.md, "Resident and mapped
 * memory"). They are mapped without transparent huge pages, so that a first
 * write makes exactly one page resident. */
typedef struct ms__rec_pages {
  uintptr_t base;  // 0: not mapped
  size_t n;        // bytes mapped
  uint64_t *bits;  // one bit per page written
  int shift;       // log2 of the page size
} ms__rec_pages;
extern int64_t ms__rec_self_bytes;  // bytes of the counted tables' pages written
// Map n bytes as ms__rec_map does, without huge pages, counted in *pg; NULL
// (and *pg cleared) when out of memory.
void *ms__rec_map_counted(size_t n, ms__rec_pages *pg);
// Unmap a counted mapping (nothing when *pg is cleared); its pages leave the count.
void ms__rec_unmap_counted(ms__rec_pages *pg);
// The slow path of wrote(): page i of pg is written for the first time (any thread).
void ms__rec_pages_first(ms__rec_pages *pg, size_t i) __attribute__((noinline));

/* Whether the page of the counted mapping pg holding p was never written: it
 * holds zeros and must not be read. A first read maps the kernel's zero page
 * and the first write then faults again and flushes the TLB of every CPU the
 * process ran on (an IPI each, in a multi-threaded program): a table slot is
 * therefore first written (wrote(), which writes the page), then read. */
HOT int page_unwritten(const ms__rec_pages *pg, const void *p) {
  size_t i = ((uintptr_t)p - pg->base) >> pg->shift;
  return !(__atomic_load_n(&pg->bits[i >> 6], __ATOMIC_RELAXED) & (UINT64_C(1) << (i & 63)));
}

/* [p, p + len) of the counted mapping pg is about to be accessed (pre: len >
 * 0): a page never written is counted and written (with a zero-adding atomic
 * write, which keeps what another thread stored meanwhile) before anything
 * reads it. */
HOT void wrote(ms__rec_pages *pg, const void *p, size_t len) {
  size_t a = ((uintptr_t)p - pg->base) >> pg->shift;
  size_t b = ((uintptr_t)p + len - 1 - pg->base) >> pg->shift;
  for (size_t i = a; i <= b; i++)
    if (UNLIKELY(!(__atomic_load_n(&pg->bits[i >> 6], __ATOMIC_RELAXED) & (UINT64_C(1) << (i & 63)))))
      ms__rec_pages_first(pg, i);
}

HOT int multi(void) { return __atomic_load_n(&ms__rec_multi, __ATOMIC_RELAXED); }

HOT int64_t heap_add(int64_t d) {
  if (LIKELY(!multi())) {
    int64_t v = __atomic_load_n(&ms__rec_heap, __ATOMIC_RELAXED) + d;
    __atomic_store_n(&ms__rec_heap, v, __ATOMIC_RELAXED);
    return v;
  }
  return __atomic_add_fetch(&ms__rec_heap, d, __ATOMIC_RELAXED);
}

/* --thread all: the process's heap at its exact peak, whatever the rows
 * (each thread's rows keep its own bucket peaks, whose sum overstates the
 * process's when threads peak at different moments of a bucket). */
extern int64_t ms__rec_proc_peak;
HOT void proc_peak_note(int64_t h) {
  int64_t p = __atomic_load_n(&ms__rec_proc_peak, __ATOMIC_RELAXED);
  while (UNLIKELY(h > p) && !__atomic_compare_exchange_n(&ms__rec_proc_peak, &p, h, 1,
                                                         __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

// --thread all: ts's heap, the bytes of the blocks it allocated still alive.
HOT int64_t theap(const tstate *ts) {
  return __atomic_load_n(&ts->theap_own, __ATOMIC_RELAXED) -
         __atomic_load_n(&ts->theap_x, __ATOMIC_RELAXED);
}

// The heap a row of ts shows when no call changed it: its own with --thread
// all, else the total in scope.
HOT int64_t row_heap(const tstate *ts) {
  return ts->all ? theap(ts) : __atomic_load_n(&ms__rec_heap, __ATOMIC_RELAXED);
}

HOT int64_t raw_now(void) {
  return ms__rec.use_tsc ? (int64_t)ms__prim_cycles_begin() : ms__prim_now_ns();
}

/* ---- state.c ---- */

// 1 when the real functions are known (initialises on the first call).
int ms__rec_ensure_ready(void);
// The calling thread's new state, registered in the list; NULL when out of memory.
tstate *ms__rec_ts_register(void);
// This thread becomes the recorded one; its stack top is top.
void ms__rec_become_recorded(tstate *ts, uintptr_t top, int64_t stack0);
// The calling thread's own stack top (sp when not known or below it). pre: not in a hook.
uintptr_t ms__rec_own_stack_top(tstate *ts, uintptr_t sp);
// The thread's state when it records, else NULL (allocations pass through).
tstate *ms__rec_slow_state(void) __attribute__((noinline));
// Fresh zeroed memory from mmap (never malloc); NULL when it fails.
void *ms__rec_map(size_t n);
// The real functions, from dlsym(RTLD_NEXT) (hooks.c).
void ms__rec_resolve(void);

HOT tstate *state(void) {
  tstate *ts = ms__rec_ts;
  if (LIKELY(ts && !(ts->guard | ts->in_hook) && __atomic_load_n(&ms__rec_on, __ATOMIC_RELAXED)))
    return ts;
  return ms__rec_slow_state();
}

/* ---- times.c: a reference run's region times ---- */
// pre: ms__rec.times_only. A probe op (bridge.h) timed, answered as the recorder answers it.
int ms__rec_times_probe(int op);
// The times into the file ms__rec.times, at exit.
void ms__rec_times_write(void);
// pre: ms__rec.times_whole. The whole run's occurrence begins (at the recorder's start).
void ms__rec_times_whole_begin(void);
// This thread counts its allocator calls into the curve (a timed occurrence's thread).
extern TLS int ms__rec_times_on;
// pre: ms__rec_times_on. One allocator call into the curve.
void ms__rec_times_tick(void) __attribute__((noinline));
// At an allocator call that passes through: counted when this thread's calls are timed.
#define TIMES_TICK()                              \
  do {                                            \
    if (UNLIKELY(ms__rec_times_on)) ms__rec_times_tick(); \
  } while (0)

/* ---- follow.c: --follow-children ---- */
// This process (pid in ms__rec.pid) is below the recorded one: its trace and
// journal are the root's names with its pid and command, its line goes to
// the registry. 0, or -1 when the name does not fit (then it does not record).
int ms__rec_follow_names(const char *root_out, const char *root_journal, const char *registry);
// A forked child starts recording afresh (the fork handler); on a failure it
// does not record.
void ms__rec_follow_fork(const char *registry);

/* ---- function.c: --function ---- */
// Read the --function names (protocol.h) and patch their definitions in
// what is loaded; later dlopens patch theirs. Nothing when none was asked.
void ms__rec_fn_init(void);
// How many names were asked for; how many definitions were patched.
int ms__rec_fn_requested(void);
int ms__rec_fn_patched(void);
// The metadata lines (each name: patched and its calls, or why not).
void ms__rec_fn_meta(void);
// The first name that could not be patched and why ("--function NAME:
// reason", static storage), or NULL.
const char *ms__rec_fn_problem(void);

/* ---- threads.c: --thread all ---- */

struct assembled;  // summary.c's section

// The next thread number.
int ms__rec_thr_number(void);
// ts starts recording as thread thr, created by peer (-1: unknown), its
// stack top at top (stack0 in use now). Its first row is its start.
void ms__rec_thr_begin(tstate *ts, int thr, int peer, uintptr_t top, int64_t stack0);
// A thread that registered without the pthread_create trampoline: a number
// and its stack top from pthread_getattr_np.
void ms__rec_thr_begin_unknown(tstate *ts);
// The state of thread thr, or NULL.
tstate *ms__rec_thr_state(int thr);
// The calling thread (ts) ends: its last row, its timer deleted.
void ms__rec_thr_end(tstate *ts);
// pthread_join(th) returned 0 on the calling thread: its join row.
void ms__rec_thr_joined(pthread_t th);
// ts frees (or reallocs) a block of thread from's, allocated in the bucket
// of raw time alloc: make room in the open bucket's list before the event
// (closes the bucket when it holds 8 other pairs) ...
void ms__rec_thr_xroom(tstate *ts, int from, int64_t alloc);
// ... and, after it, count it (heap_after: from's heap just after).
void ms__rec_thr_xfree(tstate *ts, int from, int64_t alloc, int64_t bytes, int64_t heap_after);
// The bucket closed: its cross-thread frees become rows, each (owner, its
// bucket) pair at the time of its first free in the bucket.
void ms__rec_thr_xemit(tstate *ts);
// At the end: a last row for every thread still running.
void ms__rec_thr_finish(tstate *me, int64_t raw_end);
// The trace's rows: every thread's rows, its special rows and the owners'
// lowered rows, merged by time then thread; 0 or -ENOMEM. Signal-safe.
int ms__rec_thr_assemble(struct assembled *A, int64_t raw_end, double scale);
// The metadata lines of --thread all.
void ms__rec_thr_meta(void);

/* ---- sampler.c ---- */

// Choose a free real-time signal and install the sampling handler on it; 0,
// or -1 (the reason goes to the metadata; then stacks are sampled at
// allocator calls only).
int ms__rec_sampler_install(void);
// Start sampling thread tid on its CPU clock (the recorded thread, calling
// this itself).
void ms__rec_sampler_arm(pid_t tid);
// Stop the timer (the recorded thread ends); the timer stays allocated.
void ms__rec_sampler_pause(void);
// --thread all: start ts's own timer on its CPU clock (ts calling) / delete it.
void ms__rec_sampler_arm_thread(tstate *ts);
void ms__rec_sampler_disarm_thread(tstate *ts);
// Stop and delete the timer.
void ms__rec_sampler_stop(void);
// A forked child: the timer was not inherited; the signal goes back to the program.
void ms__rec_sampler_forget(void);
// The signal functions the sampler hooks, from dlsym(RTLD_NEXT).
void ms__rec_sampler_resolve(void);
// The sampler's metadata lines (clock, signal, pauses, why it fell back).
void ms__rec_sampler_meta(void);

// pthread_sigmask and pthread_create themselves, past the hooks (the watcher's).
int ms__rec_real_sigmask(int how, const sigset_t *set, sigset_t *old);
int ms__rec_real_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/* ---- watch.c: the watcher, for threads that block the sampling signal ---- */

// The process has a second thread (me created it): start the watcher once
// (--thread all). It samples each thread that blocks the sampling signal
// while it runs, every sampling period.
void ms__rec_watch_start(tstate *me);
// Stop it (the end of the recording); returns once no round is under way.
void ms__rec_watch_stop(void);
// A forked child: no watcher, no readings.
void ms__rec_watch_forget(void);
// Each reading, in order of time per thread: f(thr, raw time, RssAnon less
// the recorder's (-1 unknown), minor and major faults (-1 unknown), the
// thread's CPU time, arg).
void ms__rec_watch_each(void (*f)(int32_t thr, int64_t t, int64_t rss, int64_t ver,
                                  int64_t minflt, int64_t majflt, int64_t cpu, void *arg),
                        void *arg);
// Readings taken.
size_t ms__rec_watch_count(void);
// Its metadata line (record.watcher), when it ran.
void ms__rec_watch_meta(void);

/* ---- memory.c: mapped and resident memory, page faults ---- */

// An allocator call that grows the heap by this much samples resident memory
// (rate-limited: ms__rec_grow_sample).
#define MS__REC_GROW_SAMPLE 4096
// Growth since the last sample that samples at once, however recent that was.
#define MS__REC_GROW_FORCE (UINT64_C(1) << 20)
/* A free (or a realloc that moves or shrinks) of a block this large samples
 * resident memory when the thread's next bucket opens: glibc unmaps such a
 * block, or trims the heap, inside the real call, after the bookkeeping,
 * and the reading waited for the next tick (2.6 ms and 7 rows for SQLite's
 * 64 MiB sorter buffer, whose 44 MB showed as still resident). */
#define MS__REC_SHRINK_SAMPLE (UINT64_C(128) << 10)

// Open /proc/self/statm (kept open) and take the first sample.
void ms__rec_mem_init(void);
// A forked child: forget the parent's mapped ranges and counters, reopen
// /proc/self/statm (the inherited one is the parent's) and sample.
void ms__rec_mem_reset(void);
// Sample RssAnon into ms__rec_rss and, on the recorded thread, its page
// faults into ts (ts may be NULL). Async-signal-safe; on a failure the old
// values stay.
void ms__rec_mem_sample(tstate *ts);
/* An allocator call of ts grew the heap by d >= MS__REC_GROW_SAMPLE bytes: a
 * sample, unless the last one is younger than a quarter of the resolution
 * (ms__rec.grow_gap_raw; 0 at -r 0) and the heap grew by less than
 * MS__REC_GROW_FORCE since. A skipped growth stays pending in ts and is
 * sampled when the thread's bucket closes (coalesce), or by the next sample. */
void ms__rec_grow_sample(tstate *ts, int64_t d) __attribute__((noinline));
// The pending growth's sample, at the close of ts's bucket.
void ms__rec_grow_flush(tstate *ts) __attribute__((noinline));
/* pre: ts->shrink_pending, set by a free (or a realloc that moved or shrank)
 * of MS__REC_SHRINK_SAMPLE bytes or more after the real call, in_hook set.
 * The resident memory that went with the block, read now into the open
 * bucket's last state, so that the row where the heap fell has it: it had
 * the rss before the free (SQLite's 64 MiB sorter buffer: "heap 102 MiB,
 * rss 111 MiB" where 68 were left). Always for a mapped chunk (2: its
 * unmapping cost more than the sample); for another, not sooner than a
 * quarter of the resolution after the last sample (the growth samples'
 * spacing: a program freeing such blocks in the arena by the thousand pays
 * no sample each), and then it stays pending for the next bucket. */
void ms__rec_shrink_sample(tstate *ts) __attribute__((noinline));
// The memory metadata lines (sampling cost, what was not counted).
void ms__rec_mem_meta(void);
// The memory columns' names, in the trace's order: rss_bytes, mapped_bytes,
// minor_faults, major_faults.
extern const char *const ms__rec_mem_cols[4];
// Resolve the real mmap family (dlsym).
void ms__rec_mem_resolve(void);

// The memory a row made now by ts carries.
HOT memv cur_mem(const tstate *ts) {
  memv m;
  // The version first: the values read after it are of that sample or newer.
  m.ver = __atomic_load_n(&ms__rec_mem_ver, __ATOMIC_ACQUIRE);
  m.rss = __atomic_load_n(&ms__rec_rss, __ATOMIC_RELAXED);
  m.mapped = __atomic_load_n(&ms__rec_mapped, __ATOMIC_RELAXED);
  m.minflt = ts->is_rec ? ts->minflt : -1;
  m.majflt = ts->is_rec ? ts->majflt : -1;
  return m;
}

// The hooks' one call after a heap change of d bytes.
HOT void grow_sample(tstate *ts, int64_t d) {
  if (UNLIKELY(d >= MS__REC_GROW_SAMPLE)) ms__rec_grow_sample(ts, d);
}

/* ---- sink.c: rows and coalescing ---- */

/* A row: its state, the recorded thread's CPU time cpu (-1 elsewhere), and,
 * when calls is set, the calls the thread made since its last row (the
 * counters start again from 0). */
void ms__rec_push_row(tstate *ts, int64_t t, int64_t s, int64_t h, int64_t tag, memv m,
                      int64_t cpu, int calls);
// The recorded thread's CPU time at raw time t (now): read when force is set
// or the last read is 10 us old, else extrapolated from it as if the thread
// ran meanwhile. -1 for other threads.
int64_t ms__rec_cpu_at(tstate *ts, int64_t t, int force);
// Close the thread's coalescing bucket into rows.
void ms__rec_flush_bucket(tstate *ts);
void ms__rec_new_bucket(tstate *ts, int64_t t, int64_t s, int64_t h, int64_t tag, memv m)
    __attribute__((noinline));
// The trace A and its side files, all or none (write.c); 0 or -errno.
int ms__rec_commit(const struct assembled *A, int how);
// Write the trace once (how: 0 exit, 1 _exit, 2 fatal signal sig).
void ms__rec_finish(int how, int sig);
// The tables lost a block (out of memory): the recording is not exact.
int ms__rec_lost(void);
// Out of memory for the tables: recording stops, the status file says why
// at once (a salvage after SIGKILL must not make a trace either), and no
// trace is written at the end.
void ms__rec_fail_memory(void) __attribute__((noinline));
// The fatal-signal handler: the trace, then the signal's default action.
void ms__rec_on_fatal(int sig);
// Open the journal (protocol.h) afresh with its head; nothing when it fails.
void ms__rec_journal_init(void);
// A zeroed entry of the journal of n bytes (page-rounded, its size stored
// at its third word), or NULL when there is no journal or it cannot grow.
void *ms__rec_journal_slot(size_t n);
// Rewrite the status file (protocol.h) with "started=1" and, when finished
// (how >= 0), the outcome. Signal-safe; failures are ignored (the command
// then says it cannot tell).
void ms__rec_status(int how, int sig, int written, int err, int why);

/* A bucket of `resolution` ns becomes at most two rows: its maxima at its
 * first time, then its last state when that differs. Peaks survive. */
HOT void coalesce(tstate *ts, int64_t t, int64_t s, int64_t h, int64_t tag) {
  // The memory figures change only at a memory sample (ms__rec_mem_ver):
  // between samples the bucket's memory is already right (issue 14 item 6).
  uint32_t mv = __atomic_load_n(&ms__rec_mem_ver, __ATOMIC_RELAXED);
  if (LIKELY(ts->h.b.active && t < ts->h.b.end && tag == ts->h.b.tag)) {
    if (s > ts->h.b.maxs) ts->h.b.maxs = s;
    if (h > ts->h.b.maxh) ts->h.b.maxh = h;
    ts->h.b.lt = t;
    ts->h.b.ls = s;
    ts->h.b.lh = h;
    if (UNLIKELY(mv != ts->mem_ver)) {
      ts->mem_ver = mv;
      memv m = cur_mem(ts);
      // Resident and mapped memory keep their peaks like the heap; faults
      // only grow, so the maxima row carries the last count.
      if (m.rss > ts->h.b.maxm.rss) ts->h.b.maxm.rss = m.rss, ts->h.b.maxm.ver = m.ver;
      if (m.mapped > ts->h.b.maxm.mapped) ts->h.b.maxm.mapped = m.mapped;
      ts->h.b.maxm.minflt = m.minflt;
      ts->h.b.maxm.majflt = m.majflt;
      ts->h.b.lm = m;
    }
    return;
  }
  // A bucket opens after growth not yet sampled: a skipped growth sample,
  // or a page or more of net growth in smaller blocks (sampled nowhere else
  // but at the timer, which a loaded machine can leave silent for a whole
  // short run).
  if (UNLIKELY(ts->grow_pending || ts->shrink_pending ||
               __atomic_load_n(&ms__rec_heap, __ATOMIC_RELAXED) -
                       __atomic_load_n(&ms__rec_heap_at_sample, __ATOMIC_RELAXED) >=
                   MS__REC_GROW_SAMPLE)) {
    ms__rec_grow_flush(ts);
    mv = __atomic_load_n(&ms__rec_mem_ver, __ATOMIC_RELAXED);
  }
  ts->mem_ver = mv;
  ms__rec_new_bucket(ts, t, s, h, tag, cur_mem(ts));
}

/* The event's time. The clock is read when the sampling tick moved, every
 * 16th event, or every event while the thread allocates slowly: 256 events
 * took 1 ms of wall time or more, measured by the thread itself at its clock
 * reads (the ticks follow CPU time and stop while the recorded thread waits).
 * In exact mode the rate is looked at only every 256th event, so that a slow
 * thread pays one comparison for it. Without sampling every event reads the
 * clock. */
HOT int64_t read_clock(tstate *ts) {
  int64_t t = raw_now();
  if (ts->win_events >= 256 || (!ts->exact && t - ts->win_t0 >= ms__rec.win_raw)) {
    ts->exact = ms__rec.sample_hz <= 0 || t - ts->win_t0 >= ms__rec.win_raw;
    ts->win_events = 0;
    ts->win_t0 = t;
  }
  ts->since = 0;
  return ts->now = t;
}

HOT int64_t stamp(tstate *ts) {
  uint32_t tk = __atomic_load_n(&ms__rec_tick, __ATOMIC_RELAXED);
  ts->win_events++;
  if (UNLIKELY(tk != ts->tick)) {
    ts->tick = tk;
    return read_clock(ts);
  }
  if (ts->exact || ++ts->since >= 16) return read_clock(ts);
  return ts->now;
}

/* The stack in use at sp, above the reference (0 below it). A stack
 * pointer off the thread's own stack, [low, top] (code that switched to a
 * stack of its own: coroutines, sigaltstack, a stub's), measures nothing
 * against the reference: the last depth read on the thread's stack, counted
 * (record.stack_off_thread), where it read 42.7 GiB before. */
HOT int64_t stack_at(tstate *ts, uintptr_t sp) {
  if (UNLIKELY(sp - ts->low > ts->top - ts->low)) {
    ts->stack_off++;
    return ts->last_s;
  }
  int64_t s = (int64_t)(ts->base - sp);
  return ts->last_s = s < 0 ? 0 : s;
}

HOT void event(tstate *ts, int64_t h, uintptr_t sp) {
  int64_t s = -1, tag;
  if (ts->is_rec) {
    s = stack_at(ts, sp);
    tag = ts->tag;
  } else {
    tag = __atomic_load_n(&ms__rec_tag, __ATOMIC_RELAXED);
  }
  coalesce(ts, stamp(ts), s, h, tag);
}

/* ---- churn.c ---- */

extern const char *const ms__rec_fn_name[NFN];
extern const int ms__rec_fn_weight[NFN];
// log2(i) for i < 4096 in units of 2^-MS__REC_LOG2_FRAC (fixed point: the
// hot path adds integers, not doubles).
#define MS__REC_LOG2_FRAC 16
extern uint32_t ms__rec_log2tab[4096];

void ms__rec_churn_init(void);
// Add c to the thread's statistics of the region named name (an occurrence).
void ms__rec_stat_add(tstate *ts, const char *name, const churn *c);
// The region named name was entered again while open (and left).
void ms__rec_stat_nested(tstate *ts, const char *name);
// *d = *now - *before.
void ms__rec_churn_diff(churn *d, const churn *now, const churn *before);
// *sum += *c.
void ms__rec_churn_add(churn *sum, const churn *c);
// Metadata lines for c under prefix (occurrences 0: none given).
void ms__rec_churn_meta(const char *prefix, const churn *c, uint64_t occurrences);

// log2(n) in units of 2^-MS__REC_LOG2_FRAC, within 0.0008 (n = 0 counts as 1).
HOT uint64_t flog2(uint64_t n) {
  if (n < 4096) return ms__rec_log2tab[n];
  int e = 63 - __builtin_clzll(n);  // >= 12
  return ((uint64_t)(e - 11) << MS__REC_LOG2_FRAC) + ms__rec_log2tab[n >> (e - 11)];
}

HOT void count(tstate *ts, int fn, uint64_t bytes) {
  ts->c.calls[fn]++;
  ts->c.bytes[fn] += bytes;
  ts->c.wlog[fn] += flog2(bytes);
}

/* The work columns' count of a call, after its event: a bucket the event
 * closes does not get it, the one it opens does (at -r 0 too: a bucket is
 * closed when the next one opens, ms__rec_new_bucket). fn is a constant in
 * every hook, so the kind folds away. */
HOT void wcount(tstate *ts, int fn, uint64_t bytes) {
  int k = fn <= F_FREE ? fn : fn == F_REALLOCARRAY ? MEMSTUB_CALL_REALLOC : MEMSTUB_CALL_MEMALIGN;
  ts->wn[k * MEMSTUB_WORK_CLASSES + memstub_work_class(bytes)]++;
  ts->wbytes += bytes;
}

/* ---- summary.c: the trace's metadata ---- */

/* A value holds the longest sentence the recorder writes (above 300
 * bytes) and a long path: at 160 bytes they were cut in mid-word, and so
 * were the warnings the command prints from them. */
typedef struct kv {
  char key[96];
  char val[1024];
} kv;
#define MAX_META 512
extern kv ms__rec_meta_kv[MAX_META];
extern int ms__rec_nmeta;

/* --thread all: a row's thread columns (docs/recording.md, "All threads"). */
enum { TEV_NONE, TEV_START, TEV_EXIT, TEV_JOIN };
typedef struct trow {
  int32_t thr, ev, peer;  // peer -1: empty
  int32_t xfrom;          // -1: not a cross-thread free
  int64_t xbytes, xalloc_ns;
} trow;

typedef struct assembled {
  trow *tr;  // --thread all: each row's thread columns; NULL otherwise
  xrow *rows;
  size_t n;
  int64_t peak_stack, peak_heap, duration;
  int64_t rows_peak_heap;  // --thread all: the peak of the rows' sum over threads
  int64_t peak_rss, peak_mapped;
  size_t raw_rows;
  int regions;
  int64_t origin_raw;  // the raw clock at the trace's time 0
  double scale;        // ns per raw clock unit
} assembled;

// One metadata line (key sanitised, newlines in the value made spaces).
void ms__rec_meta(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Tenths, without floating point formatting.
void ms__rec_fmt_x10(char *buf, size_t n, double v);
// Every metadata line of the trace A.
void ms__rec_build_meta(const assembled *A);

/* ---- epochs.c: who allocated a block, when, in which region ---- */

typedef struct ms__rec_epoch {
  int64_t t;  // the raw start of the bucket the blocks were born in
  int32_t thr;  // the thread's number (--thread all), else 0
  int32_t occ;  // the region occurrence (blocks born in one), else 0
} ms__rec_epoch;
// In a block's epoch number: the block was born in a region occurrence of
// the recorded thread (generations).
#define EP_REGION (UINT32_C(1) << 31)
extern int ms__rec_epoch_failed;  // out of epoch numbers or memory: the recording fails
// A new epoch: its number (>= 1), or 0 when out of numbers or memory.
uint32_t ms__rec_epoch_new(int32_t thr, int64_t t, int32_t occ) __attribute__((noinline));
// Epoch ep's record (EP_REGION ignored), or NULL for 0 or an unknown one.
const ms__rec_epoch *ms__rec_epoch_get(uint32_t ep);
uint64_t ms__rec_epoch_count(void);
// A forked child: no epochs.
void ms__rec_epoch_reset(void);

/* ---- generations.c: what each region leaves alive (docs/recording.md) ---- */

typedef struct gen_occ {
  const char *name;
  int64_t begin, end;  // raw clock; end 0 while open
  uint64_t blocks, bytes;  // allocated inside it (the recorded thread's own count)
  uint64_t freed_blocks, freed_bytes;  // of those, freed since (any thread, locked)
  uint64_t surv_blocks, surv_bytes;  // alive at its end
} gen_occ;
extern int ms__rec_gen_failed;  // out of memory for its records: the recording fails
// A region begins or ends on the recorded thread (regions.c): occurrence occ
// of name, at raw time t. Its record (NULL when out of memory).
gen_occ *ms__rec_gen_region(int64_t occ, const char *name, int64_t t, int begin);
// A block born in a region (its epoch ep has EP_REGION), n bytes, is freed
// now at p, by any thread. Not signal-safe; never called from a handler.
void ms__rec_gen_freed(uintptr_t p, uint32_t ep, uint64_t n) __attribute__((noinline));
// At exit, with the metadata being built: TRACE.generations and its
// metadata lines; nothing when no region ran.
void ms__rec_gen_write(const assembled *A);
// A forked child: no occurrences, no survivors.
void ms__rec_gen_reset(void);

// A thread opens an epoch (epochs.c) for its bucket and region; its number.
uint32_t ms__rec_epoch_open(tstate *ts) __attribute__((noinline));

/* The epoch of a block ts allocates now, after its event (the bucket it
 * opened): 0 unless --thread all (owners) or a region of the recorded
 * thread is open (generations); then the thread's epoch of this bucket. */
HOT uint32_t epoch_of(tstate *ts) {
  if (LIKELY(!ts->all && !ts->tag)) return 0;
  if (LIKELY(ts->ep && ts->ep_t0 == ts->h.b.t0 && ts->ep_tag == ts->tag)) return ts->ep;
  return ms__rec_epoch_open(ts);
}

// A block of n bytes born with epoch ep: its occurrence counts it.
HOT void gen_born(tstate *ts, uint32_t ep, uint64_t n) {
  if (UNLIKELY(ep & EP_REGION) && ts->gocc) {
    ts->gocc->blocks++;
    ts->gocc->bytes += n;
  }
}

/* ---- calls.c: the allocation sequence (record --calls) ---- */

#include "../traces/calls_format.h"

// A thread's calls encoded since its last block was written (one block).
typedef struct ms__rec_calls_buf {
  ms__calls_block head;
  uint8_t data[65536 - sizeof(ms__calls_block) - 16];  // right after head: written as one
  int64_t t;       // the last call's time
  uintptr_t addr;  // the last address written
} ms__rec_calls_buf;

extern int ms__rec_calls_on;  // set once at start when MEMSTUB_RECORD_CALLS asks
// At start: the temporary calls file, when asked for.
void ms__rec_calls_init(void);
/* ts's call of fn (F_*): old, the block freed or reallocated (0: none or
 * NULL); p, the block returned (0: none); n bytes asked for; align for the
 * memalign family; failed when no block came back. */
void ms__rec_calls_note(tstate *ts, int fn, uintptr_t old, uintptr_t p, uint64_t n,
                        uint64_t align, int failed) __attribute__((noinline));
// At exit, with the metadata being built: every buffer written, the head
// (its time 0 the trace's, A's origin: a region's begin with regions),
// the file renamed to ms__rec.out + ".calls" and its metadata lines.
void ms__rec_calls_write(const assembled *A);
// The trace is not written: the temporary file removed.
void ms__rec_calls_abort(void);
// In a forked child: --calls off, the parent's file neither written nor removed.
void ms__rec_calls_forked(void);

// The hooks' one call: nothing but a load and a branch when --calls is off.
HOT void calls(tstate *ts, int fn, void *old, void *p, uint64_t n, int failed) {
  if (UNLIKELY(__atomic_load_n(&ms__rec_calls_on, __ATOMIC_RELAXED)))
    ms__rec_calls_note(ts, fn, (uintptr_t)old, (uintptr_t)p, n, ts->align, failed);
}

/* ---- sites.c: allocation sites at the heap's peak (record --sites) ---- */

extern int ms__rec_sites_on;  // set once at start when MEMSTUB_RECORD_SITES asks
// A counted block freed (before the heap falls) and/or one allocated, n bytes.
void ms__rec_site_event(tstate *ts, void *freed, void *allocated, uint64_t n)
    __attribute__((noinline));
// At exit, with the metadata being built: TRACE.sites and its metadata lines.
void ms__rec_sites_write(void);
// The site of the sampled block p, live now, or -1 (for generations.c).
int32_t ms__rec_site_lookup(uintptr_t p);
// After ms__rec_sites_write: the line (from 0) in TRACE.sites of that site, or -1.
int32_t ms__rec_site_rank(int32_t site);

// The hooks' one call: nothing but a load and a branch when sites are off.
HOT void site(tstate *ts, void *freed, void *allocated, uint64_t n) {
  if (UNLIKELY(__atomic_load_n(&ms__rec_sites_on, __ATOMIC_RELAXED)))
    ms__rec_site_event(ts, freed, allocated, n);
}

#pragma GCC visibility pop

#endif
