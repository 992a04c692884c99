/* memstub/runtime.h: the replay engine, which runs a stub.
 *
 * A stub (struct memstub_stub, from a generated header or from
 * memstub_gen_build()) is a list of points: wait `time` ns, then push a
 * frame / pop one / keep the stack, then resize one heap block. The engine
 * runs the paper's recursive allocate()/constantStack() algorithm
 * (Trapp, Meyer & Facchi 2011, Listings 2 and 3) on a thread of its own,
 * with a stack sized from the stub's peak and depth:
 *
 *   - a push alloca()s the frame's bytes in a new recursion level and writes
 *     every new stack page (top down); a pop returns from exactly one level;
 *   - the heap block is resized with realloc() and only its new bytes are
 *     written, one write per page plus the last byte;
 *   - delays run against absolute deadlines on CLOCK_MONOTONIC (sleep to a
 *     margin before the deadline, then spin), so lateness is absorbed at the
 *     next point and never accumulates; MEMSTUB_TIMING_USLEEP sleeps each
 *     delay relative to the moment it starts, as the paper's usleep() did.
 *
 * With measuring on, the engine records per point (see memstub_replay_record)
 * into memory reserved and touched before the replay, and
 * memstub_replay_trace() turns the records into a replayed trace: one row per
 * row of the original trace, measured at that row's last point. docs/runtime.md
 * describes the algorithm, the measurements and their pitfalls. */
#ifndef MEMSTUB_RUNTIME_H
#define MEMSTUB_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "memstub/error.h"
#include "memstub/stub.h"
#include "memstub/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How delays are waited for: enum memstub_timing, MEMSTUB_TIMING_DEADLINE or
 * MEMSTUB_TIMING_USLEEP (memstub/stub.h). */

/* What is recorded per point (memstub_replay_options.measure, a bitmask). */
enum {
  MEMSTUB_MEASURE_TIME = 1u << 0,    // start_ns, end_ns: CLOCK_MONOTONIC (two clock reads)
  MEMSTUB_MEASURE_CYCLES = 1u << 1,  // cyc_*: the cycle counter at each phase boundary
  MEMSTUB_MEASURE_STACK = 1u << 2,   // stack_bytes, stack_moved
  MEMSTUB_MEASURE_HEAP = 1u << 3,    // heap_bytes, heap_usable: mallinfo2() (locks every arena)
  MEMSTUB_MEASURE_FAULTS = 1u << 4,  // faults_*: getrusage(RUSAGE_THREAD), three calls per point
  MEMSTUB_MEASURE_SCHED = 1u << 5,   // run_delay_ns: the thread's run-queue wait, read (one
                                     //   pread) only before a point's first sleep, never in
                                     //   the timed path
  MEMSTUB_MEASURE_RESIDENT = 1u << 6,  // rss_bytes, mapped_bytes, minor/major_faults: as the
                                       //   recorder reads them (one pread of statm, one
                                       //   getrusage), after the work
};
/* What memstub_replay_trace() needs: time, stack and heap; with SCHED the
 * replayed trace also says how long the thread waited for a CPU around each
 * row (off_cpu_ns), so a late row can be told from a busy host. */
#define MEMSTUB_MEASURE_TRACE                                                              \
  (MEMSTUB_MEASURE_TIME | MEMSTUB_MEASURE_STACK | MEMSTUB_MEASURE_HEAP | MEMSTUB_MEASURE_SCHED | \
   MEMSTUB_MEASURE_RESIDENT)
#define MEMSTUB_MEASURE_ALL                                                                \
  (MEMSTUB_MEASURE_TIME | MEMSTUB_MEASURE_CYCLES | MEMSTUB_MEASURE_STACK |                 \
   MEMSTUB_MEASURE_HEAP | MEMSTUB_MEASURE_FAULTS | MEMSTUB_MEASURE_SCHED |                 \
   MEMSTUB_MEASURE_RESIDENT)

/* Deadline margins (memstub_replay_options.margin_ns, docs/runtime.md "Timing"):
 *   MEMSTUB_MARGIN_MODEL (the default): a wait sleeps to `reaim_ns` before its
 *     deadline, wakes, and sleeps again to the margin that the overshoot model
 *     gives for that last, short sleep (a high percentile of clock_nanosleep's
 *     lateness for its length), then spins;
 *   MEMSTUB_MARGIN_ADAPTIVE: the same, with the model learnt online per
 *     sleep length (a streaming 99th percentile of the observed overshoot);
 *   a number of ns >= 0: the fixed margin of memstub before the model, one
 *     sleep to that far before the deadline, then spin.
 * MEMSTUB_MARGIN_DEFAULT is that old fixed margin, 100 us (calibration's
 * cold_min_delay_ns refers to it). */
#define MEMSTUB_MARGIN_DEFAULT 100000
#define MEMSTUB_MARGIN_ADAPTIVE (-1)
#define MEMSTUB_MARGIN_MODEL (-2)
/* How far before its deadline a long sleep ends to re-aim (1 ms). */
#define MEMSTUB_REAIM_DEFAULT 1000000

/* The online cost model (memstub_replay_options.cost_model, docs/runtime.md
 * "The online cost model"): online timing learns, per class of work (heap
 * in the arena, an mmapped block changing by so many pages, a stack push
 * with or without new pages, a mapped change, ...), the median time a row's
 * work takes on this host, and starts each row's work that much before its
 * deadline, so that the work ends on time.
 *   MEMSTUB_COST_AUTO (default): on with MEMSTUB_TIMING_ONLINE, unless the
 *     stub's delays carry a prediction already (a stub compensated by a
 *     profile for deadline or usleep timing: memstub gen --calibration P
 *     --timing deadline; the runtime does not know that prediction, so it
 *     cannot add its own); off with MEMSTUB_TIMING_DEADLINE, which keeps
 *     "no row ends before its deadline", and with usleep;
 *   MEMSTUB_COST_ONLINE: on with deadline or online timing (a row may then
 *     end a little early: its work took less than the learnt median);
 *   MEMSTUB_COST_OFF: off (nothing learnt, no clock read added to a point's
 *     work). */
#define MEMSTUB_COST_AUTO 0
#define MEMSTUB_COST_ONLINE 1
#define MEMSTUB_COST_OFF 2

typedef struct memstub_replay_options {
  int timing;          // MEMSTUB_TIMING_ONLINE, _DEADLINE or _USLEEP (memstub_replay_options_init
                       //   sets MEMSTUB_TIMING_DEFAULT, online; MEMSTUB_TIMING_NONE is refused)
  int64_t margin_ns;   // deadline and online timing: wake this long before each deadline, then spin
                       //   (MEMSTUB_MARGIN_DEFAULT); MEMSTUB_MARGIN_ADAPTIVE follows the
                       //   observed wake-up lateness
  unsigned measure;    // MEMSTUB_MEASURE_* bits; 0 records nothing (no per-point cost)
  int64_t stack_extra; // bytes added to the replay thread's computed stack size
  /* Called about twice a second by the calling thread while it waits for the
   * replay (never by the replay thread), with the points begun so far; and
   * once at the end with done == total. NULL for none. */
  void (*progress)(int64_t done, int64_t total, void *arg);
  void *progress_arg;
  /* MEMSTUB_MARGIN_MODEL and _ADAPTIVE: a sleep longer than this ends this
   * far before its deadline and the wait re-aims with a short sleep. 0 for
   * MEMSTUB_REAIM_DEFAULT; -1 never cuts a wait (one sleep to the margin). */
  int64_t reaim_ns;
  /* 0 (default): leave the scheduler alone. From 100000 to 100000000: ask
   * Linux (6.12 and later, EEVDF) for a time slice of this many ns for the
   * replay thread, unprivileged: a short slice (100 us) lets it preempt a busy
   * CPU sooner when it wakes, so it waits less for a CPU on a loaded host
   * (docs/runtime.md, "What margins cannot cure"). */
  int64_t sched_slice_ns;
  int cost_model;  // MEMSTUB_COST_AUTO (0), _ONLINE or _OFF
  /* Deadline timing, a stub with allocator calls (layout 3): 0 (default)
   * ends each point's wait its calls' expected cost before the deadline, so
   * that they end on it: per kind and class call_ns (a profile's
   * call_*_ns, MEMSTUB_WORK_CALLS figures; NULL: built-in proportions)
   * times a ratio the replay learns from its own calls; 1 ends the wait on
   * the deadline and makes the calls after it (no pre-compensation: the
   * point is late by their cost; for comparison). docs/runtime.md, "Work". */
  int no_call_costs;
  const double *call_ns;
  /* The work as an amount of work (layout 3; docs/runtime.md, "Work as
   * work"): a point's cpu_ns is counted in steps of the work's loops at the
   * calibration's rates, not spun to on the CPU clock, so on a slower or
   * shared core it takes longer, as the component's would.
   * work_rate: the ALU loop's steps per ns of CPU (a profile's
   *   spin_steps_per_ns); 0 (default): measured when the replay starts.
   * touch_ns: MEMSTUB_WORK_TOUCH_SIZES figures, ns of CPU per memory touch
   *   of a heap block of each size of MEMSTUB_WORK_TOUCH_BYTES (a profile's
   *   touch_*_ns); NULL or all 0: built-in (the development VM's).
   * mem_share: the share of the work's time, at those rates, that reads and
   *   writes the stub's heap block: 0 (default) MEMSTUB_WORK_MEM_SHARE_DEFAULT
   *   when touch_ns is given, none without it (the built-in costs may be far
   *   from this host's); a share in (0, 1]; or MEMSTUB_WORK_MEM_NONE. */
  double work_rate;
  const double *touch_ns;
  double mem_share;
} memstub_replay_options;

/* The memory share of the work (memstub_replay_options.mem_share, a trace's
 * work_mem_share metadata, MEMSTUB_WORK_MEM_SHARE): the default, and none. */
#define MEMSTUB_WORK_MEM_SHARE_DEFAULT 0.25
#define MEMSTUB_WORK_MEM_NONE (-1.0)
// The trace metadata key of the memory share (docs/formats.md, "Work as work").
#define MEMSTUB_WORK_MEM_SHARE_KEY "work_mem_share"
// The environment variable of a stub program's or stub function's memory share.
#define MEMSTUB_WORK_MEM_SHARE_ENV "MEMSTUB_WORK_MEM_SHARE"
/* Parse a memory share (MEMSTUB_WORK_MEM_SHARE, memstub replay
 * --work-mem-share, a trace's work_mem_share): a number in [0, 1] (0:
 * MEMSTUB_WORK_MEM_NONE) into *share. 0 or -EINVAL. */
int memstub_work_share_parse(const char *text, double *share);
/* The memory share t's metadata gives (MEMSTUB_WORK_MEM_SHARE_KEY): 1 with
 * *share set (MEMSTUB_WORK_MEM_NONE for 0), 0 when t has none (*share
 * untouched), or -EINVAL with err naming the key and the value. */
int memstub_work_share_meta(const memstub_trace *t, double *share, memstub_error *err);

/* Defaults: MEMSTUB_TIMING_DEFAULT (online), MEMSTUB_MARGIN_MODEL with
 * MEMSTUB_REAIM_DEFAULT, no measuring, no extra stack, no progress. */
void memstub_replay_options_init(memstub_replay_options *o);

/* The defaults for replaying s: as memstub_replay_options_init, but with the
 * timing s was made for (memstub gen --timing usleep makes a stub meant for
 * usleep timing; MEMSTUB_TIMING_NONE: the default) and, for a stub of
 * layout 5 (MEMSTUB_STUB_ABI_MODEL), the work model it was made with:
 * mem_share, work_rate and touch_ns (pointing into s) where it gives them. */
void memstub_replay_options_for(memstub_replay_options *o, const struct memstub_stub *s);

/* One point as it was replayed. Times are ns after the replay's start T0
 * (memstub_replay_info.t0_ns). A field is filled only when its MEASURE bit
 * was set; target_ns is always filled when records exist.
 *
 * Phases of a point: the wait; the stack part (alloca and touching the new
 * pages for a push, the return for a pop, nothing for a constant point); the
 * heap part (realloc, then touching the new bytes); then the measuring, which
 * is not part of the work. For a pop the wait and cyc_start happen inside the
 * frame being popped, everything after it in the frame below. */
typedef struct memstub_replay_record {
  int64_t target_ns;         // scheduled time: the sum of use[0..i].time
  int64_t start_ns;          // TIME: the wait ended, the work began
  int64_t end_ns;            // TIME: the stack and heap work ended
  uint64_t cyc_start;        // CYCLES: work began (ms__prim_cycles_begin)
  uint64_t cyc_stack_alloc;  // CYCLES: after alloca / the return
  uint64_t cyc_stack_use;    // CYCLES: after writing the new stack pages
  uint64_t cyc_heap_alloc;   // CYCLES: after realloc (and any fix-up, see docs)
  uint64_t cyc_end;          // CYCLES: after writing the new heap bytes (ms__prim_cycles_end)
  int64_t stack_bytes;       // STACK: entry stack pointer - stack pointer after the stack part
  int64_t stack_moved;       // STACK: bytes the stack pointer moved for this point's frame
                             //   (alloca incl. rounding; minus that for the pop; 0 otherwise)
  int64_t heap_bytes;        // HEAP: mallinfo2 in use (uordblks + hblkhd) minus the baseline
  int64_t heap_usable;       // HEAP: malloc_usable_size of the block (replay size + pad)
  int64_t faults_start;      // FAULTS: minor faults of the replay thread since the baseline,
  int64_t faults_stack;      //   at work start, after the stack part,
  int64_t faults_end;        //   and after the heap part
  int64_t run_delay_ns;      // SCHED: the thread's run-queue wait so far (schedstat), read
                             //   just before the point's first sleep; -1 when it did not
                             //   sleep or the kernel does not say
  /* RESIDENT, after the work (relative to the replay's start T0, as the
   * recorder's columns are to the component's start; docs/runtime.md,
   * "Measuring resident memory"): */
  int64_t rss_bytes;         //   RssAnon of the process (statm resident - shared) minus at T0,
                             //   never below 0; -1 when /proc/self/statm cannot be read
  int64_t mapped_bytes;      //   the stub's own anonymous mapping, bytes replayed
  int64_t minor_faults;      //   the replay thread's minor and major page faults since T0
  int64_t major_faults;      //   (getrusage RUSAGE_THREAD); -1 when it fails
} memstub_replay_record;

/* What heap preparation found (memstub_replay_info.tcache). */
enum {
  MEMSTUB_TCACHE_UNKNOWN = -2,   // mallinfo2 does not see the allocator (sanitizer, other malloc)
  MEMSTUB_TCACHE_UNFILLED = -1,  // tcache active but a bin would not fill: heap may drift
  MEMSTUB_TCACHE_OFF = 0,        // no tcache (e.g. GLIBC_TUNABLES=glibc.malloc.tcache_count=0)
  MEMSTUB_TCACHE_FILLED = 1,     // tcache active; every bin filled so later frees bypass it
};

typedef struct memstub_replay_info {
  int64_t t0_ns;           // CLOCK_MONOTONIC at the replay's start (T0)
  int64_t duration_ns;     // T0 to the end of the last point's work (or its measuring)
  int64_t target_ns;       // the stub's scheduled duration: the sum of use[].time
  int64_t points;          // points replayed (the stub's numdata)
  int64_t stack_size;      // bytes of stack given to the replay thread
  int64_t alloca_bias;     // bytes subtracted from alloca requests for the compiler's rounding
  int64_t margin_ns;       // deadline, online: the fixed margin, or the margin the model
                           //   (adaptive: as learnt at the end) gives a re-aiming sleep
  int64_t sleeps;          // sleeps taken (a re-aimed wait sleeps twice or more)
  int64_t late_wakeups;    // deadline, online: waits whose last sleep woke after the deadline
  int tcache;              // MEMSTUB_TCACHE_*
  int heap_visible;        // 1 when mallinfo2 sees the block (glibc malloc, no sanitizer)
  int64_t heap_pad;        // bytes the block holds beyond the replayed heap size
  int64_t heap_fixups;     // reallocs glibc left 16 bytes too large, fixed (docs/runtime.md)
  int64_t heap_stuck;      // ... and those the fix-up could not correct
  int64_t heap_unmaps;     // moves of a shrunken mmapped block back into the arena
  int64_t heap_trims;      // mmapped blocks made a page smaller (docs/runtime.md)
  int64_t heap_baseline;   // mallinfo2 in use at the baseline, bytes
  memstub_replay_record entry;  // measured at the start, before point 0 (the "entry" of row 0)
  int64_t cpu_ns;          // CPU time of the replay thread over duration_ns's span (spinning,
                           //   waking, the work and the measuring before its end; not the
                           //   measuring of the last point after it); -1 if unknown
  int64_t run_delay_ns;    // SCHED: the replay thread's run-queue wait from T0 to the end;
                           //   -1 if unknown or not measured
  int64_t run_delay_end;   // SCHED: its run-queue wait so far at the end (cumulative, as
                           //   run_delay_ns of the records), -1 if unknown
  int64_t reaim_ns;        // deadline, online; model or adaptive: as used; 0 otherwise
  int64_t sched_slice_ns;  // the slice asked for when the kernel accepted it, else 0
  int cost_model;          // MEMSTUB_COST_ONLINE when rows started early by
                           //   their learnt cost, else MEMSTUB_COST_OFF
  int64_t cost_rows;       // rows whose work the model learnt (0 when off)
  int64_t cost_lead_ns;    // the anticipation it applied, summed over the rows, ns
  int64_t rss_entry_bytes; // RESIDENT: the process's RssAnon at T0 (absolute, statm resident
                           //   - shared), what the replay rss_bytes are relative to; -1 if
                           //   unknown or not measured
  int64_t rss_unmet;       // always 0: a resident target the stub cannot hold stops the
                           //   replay with an error naming it (before: points counted here)
  /* The work as work (layout 3; docs/runtime.md, "Work as work"), 0 without: */
  double work_ns;          // work counted, ns at the calibrated rates
  int64_t work_cpu_ns;     // CPU time the counted work took (work_cpu_ns / work_ns: how much
                           //   slower than calibrated this core ran it)
  int64_t work_floor_ns;   // CPU time spun on the CPU clock to the recorded CPU time (the floor)
  double work_mem_share;   // the memory share the work ran with (0: none)
} memstub_replay_info;

typedef struct memstub_replay {
  const struct memstub_stub *stub;  // the stub replayed; not owned: keep it alive meanwhile
  memstub_replay_options opt;       // the options used
  memstub_replay_info info;
  memstub_replay_record *rec;       // [stub->numdata] when opt.measure != 0, else NULL
  /* A stub with work data (layout 3) and opt.measure != 0: per point 22
   * values: the replay thread's CPU clock after the point's work (absolute
   * ns, -1 unknown), the bytes its calls moved, and its calls by kind and
   * size class (memstub/work.h); else NULL. */
  int64_t *work;
} memstub_replay;

/* Check that s can be replayed here without running it: the ABI, the LIFO
 * invariants (memstub_stub_check), the peaks recomputed from the points, the
 * heap and stack against the machine's memory, and the replay thread's stack
 * size, stored in *stack_size if not NULL. 0, -EINVAL (malformed stub or
 * options) or -ENOMEM (more memory than the machine has), with err set. */
int memstub_replay_check(const struct memstub_stub *s, const memstub_replay_options *o,
                         int64_t *stack_size, memstub_error *err);

/* The bytes memstub_replay_run reserves (and writes) before the replay for
 * measuring s with o: numdata x sizeof(memstub_replay_record) when o->measure
 * is set, else 0. memstub_replay_check refuses (-ENOMEM) when the host has
 * less available (MemAvailable) or the process's limits leave less. */
int64_t memstub_replay_measure_bytes(const struct memstub_stub *s, const memstub_replay_options *o);

/* Replay s on a new thread and wait for it. o may be NULL for the defaults.
 * On success *out owns the result (free it with memstub_replay_free).
 * Fails before running as memstub_replay_check does, with -ENOMEM / -EAGAIN
 * when the replay thread or its stack cannot be had, or with -ENOMEM when a
 * heap resize fails during the replay (the replay stops there). Should even
 * pthread_join fail, it returns that error and leaves the still running
 * thread its memory (leaked, never freed under it); s must then outlive it. */
int memstub_replay_run(const struct memstub_stub *s, const memstub_replay_options *o,
                       memstub_replay **out, memstub_error *err);
void memstub_replay_free(memstub_replay *r);

/* The replayed trace: one row per original row that has points, measured at
 * its last point, plus row 0 from the entry measurement when no point maps to
 * row 0. Columns: time_ns = time0 + end_ns, stack_bytes = stack_base +
 * stack_bytes, heap_bytes = heap_base + heap_bytes (clamped at 0), then
 * point, target_time_ns, late_ns, wake_late_ns (the row's wait ended this
 * long after its deadline), work_ns (the row's work, from the end of its wait
 * to the end of its last point) and, with MEMSTUB_MEASURE_SCHED, off_cpu_ns
 * (the run-queue wait from the row's sleep to the next sleep; -1 unknown);
 * with MEMSTUB_MEASURE_RESIDENT rss_bytes (rss_base + rss_bytes; left out
 * when statm could not be read), mapped_bytes (mapped_base + mapped_bytes),
 * minor_faults and major_faults, as the recorder writes them; metadata names the source, the timing, the CPU time and the host. Needs
 * time, stack and heap (MEMSTUB_MEASURE_TRACE): -EINVAL otherwise, or when a
 * base plus a measurement exceeds 64 bits (a hand-edited descriptor); -ENOMEM. */
int memstub_replay_trace(const memstub_replay *r, memstub_trace **out, memstub_error *err);

/* Whether r measured its heap: 0 when it was asked to (MEMSTUB_MEASURE_HEAP)
 * and mallinfo2 did not see the allocator in use (AddressSanitizer's, or
 * another malloc in place of glibc's), so its heap_bytes are not the stub's;
 * the replayed trace's metadata then says `heap: unknown (...)`, which
 * memstub compare reads, and a program measuring should say so. 1 otherwise. */
int memstub_replay_heap_measured(const memstub_replay *r);
// Why: the words for the warning and the metadata.
#define MEMSTUB_HEAP_NOT_MEASURED                                                             \
  "heap not measured: mallinfo2 does not see the allocator in use (AddressSanitizer's, or " \
  "another malloc in place of glibc's)"

/* memstub_replay_trace, written atomically to path ("-" for stdout). */
int memstub_replay_write(const memstub_replay *r, const char *path, memstub_error *err);

/* The file a replay measures to, opened before the replay (a stub program's
 * and memstub replay's --measure, an embedded stub's MEMSTUB_MEASURE): a
 * path that cannot be written fails at once, not after the replay. The
 * trace goes to a temporary file beside it, renamed into place by the
 * commit (a device, a FIFO or "-" are written in place). While it is open,
 * SIGINT, SIGTERM and SIGHUP, where their action is the default one, remove
 * the temporary file before they kill the process (one open file at a time
 * has this).
 *
 * The name, one rule for every measured replay (docs/runtime.md,
 * "Measurement files"): tmpl expanded as memstub_measure_path says (%p, %n
 * stub_name, %c the process's measured replays counted from 1, %%); the
 * first measured replay of the process to take that name writes exactly it
 * (replacing a file an earlier run left there); a name an earlier replay of
 * this process took, or one another process wrote while this replay ran,
 * gets ".N" before its extension (m.csv, m.2.csv, m.3.csv: the first N from
 * 2 that is free). memstub_measure_name says which. */
typedef struct memstub_measure_file memstub_measure_file;
/* 0 with *out (close it), or a negative errno with err naming the file. */
int memstub_measure_open(const char *tmpl, const char *stub_name, memstub_measure_file **out,
                         memstub_error *err);
/* The file m writes: after a commit, the one it wrote ("standard output"
 * for "-"). Valid until m is closed. */
const char *memstub_measure_name(const memstub_measure_file *m);
/* Write t (a replayed trace: memstub_replay_trace, memstub_threads_trace)
 * and put the file in place, once. 0, or a negative errno with err naming
 * the file (nothing is left then). m stays open for memstub_measure_name. */
int memstub_measure_commit(memstub_measure_file *m, const memstub_trace *t, memstub_error *err);
/* Free m; its temporary file is removed unless it was committed. NULL: nothing. */
void memstub_measure_close(memstub_measure_file *m);
/* memstub_replay_trace of r committed to m (nothing written when the trace
 * cannot be made): 0, or a negative errno with err set. Close m after. */
int memstub_measure_commit_replay(memstub_measure_file *m, const memstub_replay *r,
                                  memstub_error *err);

/* A stub's data file (docs/formats.md, "Data files"): the descriptor and
 * every array of a stub in one binary file, versioned and checksummed, for
 * traces too large to compile (memstub gen --data, memstub replay --data,
 * memstub build --data). Opened, it is read into memory of its own
 * (read-only once filled; the file may change or go meanwhile) and its arrays
 * are used there, all but the calls of an exact stub (layout 4, 5 with
 * calls): those the replay reads from the file as it goes, checked against
 * the sums taken at the open, and a file changed since stops the replay with
 * an error naming it. Their stub.callseq is no array (a page that faults when
 * read): memstub_stub_data_calls copies them. stub is ready for
 * memstub_replay_run while d is open. */
typedef struct memstub_stub_data {
  struct memstub_stub stub;  // points into the copy
  void *map;                 // private: the copy (an anonymous mapping) and its length
  size_t map_len;
  void *calls;               // private: the calls in the file (runtime/call_source.c), or NULL
} memstub_stub_data;

/* The n bytes of d's calls from byte at into buf, read from the file and
 * checked as the replay reads them (or copied, when they are in memory).
 * 0, -EINVAL for a range beyond stub.ncallseq, or -EIO with err naming the
 * file when it was changed since d was opened. */
int memstub_stub_data_calls(const memstub_stub_data *d, int64_t at, int64_t n, void *buf,
                            memstub_error *err);

/* Write s (layout 1 to 5, numdata >= 1) to path as a data file, atomically.
 * 0, or a negative errno with err naming path (-EINVAL for a stub that
 * cannot be written, -EIO/-ENOSPC... when writing fails; nothing is left). */
int memstub_stub_data_write(const struct memstub_stub *s, const char *path, memstub_error *err);
/* Read path, a regular file, into memory and check it before anything uses
 * it: magic, version, byte order, size, every array's size, place and
 * checksum, the head's checksum. On success *out owns the copy
 * (memstub_stub_data_free). On failure *out is NULL and the return is
 * -EINVAL with err "PATH: FIELD: what is wrong" (a damaged, truncated or
 * foreign file) or "PATH: not a regular file (a FIFO): ...", -ENOMEM for a
 * file larger than the host's available memory, or another negative errno
 * (cannot open or read it). The stub's invariants are checked by memstub_replay_check,
 * as for any stub. */
int memstub_stub_data_open(const char *path, memstub_stub_data **out, memstub_error *err);
void memstub_stub_data_free(memstub_stub_data *d);

/* A stub embedded with memstub_add_stub(... DATA) (docs/runtime.md, "One
 * host binary for every point"): its data file is read at its first call,
 * from the file named by the environment variable MEMSTUB_DATA_<name> (the
 * stub's name as it is spelt, e.g. MEMSTUB_DATA_parse) when that is set, else
 * from the file it was built with; then kept for the process's life. The
 * generated entry points hold one of these (MEMSTUB_STUB_DATA_ENV_INIT). */
#define MEMSTUB_DATA_ENV_PREFIX "MEMSTUB_DATA_"
typedef struct memstub_stub_data_env {
  const char *name;   // the stub's name: the variable is MEMSTUB_DATA_<name>
  const char *built;  // the data file it was built with (an absolute path)
  // private: the outcome of the first call (0 not yet, 1 loaded, < 0 failed)
  int state;
  memstub_stub_data *data;
  memstub_error err;
} memstub_stub_data_env;
#define MEMSTUB_STUB_DATA_ENV_INIT(name, built) {(name), (built), 0, 0, {0, {0}}}
/* The stub e names, read and validated once (thread-safe): its descriptor,
 * or NULL with err (if not NULL) saying why, the same at every call: for a
 * file named by the variable "MEMSTUB_DATA_<name>=PATH: PATH: what is wrong"
 * (missing, damaged, a stub that cannot replay, the variable set but empty:
 * never the built file instead), else "PATH: what is wrong". */
const struct memstub_stub *memstub_stub_data_env_get(memstub_stub_data_env *e, memstub_error *err);
/* memstub_stub_call of memstub_stub_data_env_get(e): 0, or a negative errno
 * with err set (the data file's failure: -ENOENT, -EINVAL, ...). */
int memstub_stub_data_env_call(memstub_stub_data_env *e, memstub_error *err);
/* For a stub built from a header (memstub_add_stub without DATA): 0 when
 * MEMSTUB_DATA_<name> is unset; else -EINVAL with err saying that this stub
 * cannot read a data file (a sweep's data would be ignored otherwise). */
int memstub_stub_data_env_none(const char *name, memstub_error *err);

/* memstub_stub_call(), a stub's function entry point, is in memstub/stub.h. */

/* Survivors after the return (memstub gen --hold; docs/runtime.md,
 * "Survivors after the return"): what the recorded component left alive
 * when it returned, and when the program freed it. A generated header
 * repeats this definition under the same guard. */
#ifndef MEMSTUB_STRUCT_RELEASE
#define MEMSTUB_STRUCT_RELEASE
#define MEMSTUB_RELEASE_ABI 1
#define MEMSTUB_RELEASE_TIMER 1  // freed by a timer thread on the recorded schedule
#define MEMSTUB_RELEASE_API 2    // freed when the host calls memstub_release_now
struct memstub_release {
  int32_t abi;              /* MEMSTUB_RELEASE_ABI */
  int32_t mode;             /* MEMSTUB_RELEASE_TIMER or _API: the default of the stub's calls */
  int64_t n;                /* entries: one block each */
  const int64_t *after_ns;  /* [n] when the program freed it, ns after the return;
                               increasing, then -1 (never freed) at the end */
  const int64_t *bytes;     /* [n] > 0 */
};
#endif

/* 0 when r is well formed (abi, mode, entries as the struct says), else
 * -EINVAL with err naming the entry. */
int memstub_release_check(const struct memstub_release *r, memstub_error *err);
/* "timer" / "api" into *mode: 0 or -EINVAL. */
int memstub_release_mode_parse(const char *name, int *mode);
/* The body of a holding stub's entry point (memstub_NAME() of a header made
 * with memstub gen --hold): memstub_stub_call(s), then, as the component
 * returned, one block per entry of r allocated and written, held by the
 * runtime: freed at the return + after_ns by a timer thread (mode TIMER), or
 * by memstub_release_now (mode API); MEMSTUB_RELEASE=timer|api in the
 * environment overrides r->mode. Blocks the program never freed stay held
 * to the end. A call before an earlier one's blocks are released adds its
 * own, as the component's calls would. Returns 0, or a negative errno (err
 * set): the replay's failure (nothing held), -ENOMEM (nothing held), or the
 * timer thread's failure (-EAGAIN: the blocks stay held until
 * memstub_release_now). Thread-safe. */
int memstub_stub_call_held(const struct memstub_stub *s, const struct memstub_release *r,
                           memstub_error *err);
/* Release up to max_bytes (< 0: all) of what the calls of r's stub hold and
 * the program freed, in the recorded order, oldest call first; a block is
 * shrunk when only part of it fits. Blocks the program never freed stay.
 * Works in either mode (with the timer: released early). Returns the bytes
 * released. Thread-safe. */
int64_t memstub_release_now(const struct memstub_release *r, int64_t max_bytes);
// Bytes the calls of r's stub hold now (every block, never-freed ones too).
int64_t memstub_release_held(const struct memstub_release *r);

/* "online" / "deadline" / "usleep" (NULL for an unknown mode), and back: 0
 * or -EINVAL. */
const char *memstub_timing_name(int timing);
int memstub_timing_parse(const char *name, int *timing);
/* A margin: a number of ns >= 0, "model" or "adaptive". 0 or -EINVAL. */
int memstub_margin_parse(const char *text, int64_t *margin_ns);

/* What one allocator call of each kind and size class costs on this host,
 * made as a stub's work makes it (runtime/work.c: each class's
 * representative size, the first byte written; free measured on the
 * allocations' blocks; realloc alternating one block between two sizes of
 * the class): ns[MEMSTUB_WORK_CALLS] (memstub/work.h's order) gets, per
 * kind and class, the median over rounds of batches of 32 calls, 0 for
 * those want[] (NULL: all) does not ask for; *spin_rate (unless NULL) the
 * work spin's steps per ns of CPU. Allocates and frees only its own blocks.
 * 0 or -ENOMEM. */
int memstub_work_measure(const int64_t *want, int rounds, double *ns, double *spin_rate);

/* What one memory touch of the work costs on this host (runtime/work.c, the
 * loop a replay's memory share runs: a read and a write of one cache line,
 * lines visited at a stride of 4099): ns[MEMSTUB_WORK_TOUCH_SIZES], ns of
 * CPU per touch of a buffer of each size of MEMSTUB_WORK_TOUCH_BYTES,
 * written whole first, the median of five passes. Maps and unmaps its own
 * buffer (64 MiB). 0 or -ENOMEM. */
int memstub_work_touch_measure(double *ns);

#ifdef __cplusplus
}
#endif
#endif
