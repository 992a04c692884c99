/* memstub/calib.h: calibration, the stub's own overheads measured on the
 * target host (Trapp, Meyer & Facchi 2011, Sections 4 and 5.2).
 *
 * memstub_calibrate() runs the real replay engine (memstub_gen_build +
 * memstub_replay_run) on the paper's calibration traces, repeated R times,
 * times every phase of every point with the invariant cycle counter, counts
 * the minor page faults of each phase in separate runs, and fits the paper's
 * models (eq. 4-8) plus the extensions this runtime needs (docs/calibration.md):
 *
 *   time per point       time_basic, the wait when already late, usleep's overshoot
 *   heap (arena)         alloc: two levels by page faults (eq. 5); use: a + b x faults (eq. 6)
 *   heap (mmapped)       the same for a block glibc serves from mmap, the moves
 *                        between arena and mmap, and shrinking
 *   stack                alloc: two levels by faults (eq. 7 + the fault of the
 *                        call below the new frame); use: a + b x faults (eq. 8)
 *   bytes                heap overhead empty / in use / mmapped; stack offset and
 *                        overhead per frame
 *
 * The work figures are measured twice: hot, with zero delays between points
 * (the paper's method, least-squares means), and cold, with a sleep before
 * every point as a replay with delays runs it (medians); deadline
 * compensation uses the cold ones for rows that sleep first.
 *
 * The result is a profile (struct memstub_profile), kept as a text file of
 * `key = value` lines (memstub_profile_write / memstub_profile_read), which
 * memstub gen --calibration uses to pre-compensate a stub. */
#ifndef MEMSTUB_CALIB_H
#define MEMSTUB_CALIB_H

#include <stddef.h>
#include <stdint.h>

#include "memstub/error.h"
#include "memstub/work.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The profile file's format version (the `format` key). Format 2 added the
 * cold figures (cold_*, time_cold_*) and made time_heap_to_mmap a line in the
 * pages copied. */
#define MEMSTUB_PROFILE_FORMAT 2

/* The architecture this code was compiled for, as profiles record it
 * (host.arch): "x86_64", "aarch64", "i386", "arm", "riscv64", "ppc64" or
 * "unknown". A profile from another architecture is refused. Never fails. */
const char *memstub_host_arch(void);

/* One time figure: the median over the repetitions' points (usleep's
 * overshoot: the mean), its spread and how sure it is. */
typedef struct memstub_calib_time {
  double cycles;  // cycle-counter ticks (invariant TSC on x86-64)
  double ns;      // the same in ns: cycles / cycles_per_ns
  double scv;     // squared coefficient of variation of the per-repetition figures
  double ci_ns;   // half-width of its 95 % confidence interval, ns (key NAME_ci95_ns):
                  //   from groups of repetitions fitted alone (docs/calibration.md,
                  //   "How sure"); -1 unknown (fewer than 2 groups, or a profile without it)
} memstub_calib_time;

/* Whether a figure is unsure: its 95 % interval unknown (ci_ns < 0), or
 * wider than +-25 % of it and than 100 ns (below that an error moves no
 * replay: a counter read, a wake-up's jitter). memstub gen warns about the
 * unsure figures a stub's compensation uses (memstub_gen_comp_unsure). */
#define MEMSTUB_CALIB_UNSURE_SHARE 0.25
#define MEMSTUB_CALIB_UNSURE_NS 100.0
static inline int memstub_calib_unsure(double ns, double ci_ns) {
  double a = ns < 0 ? -ns : ns;
  return ci_ns < 0 || (ci_ns > MEMSTUB_CALIB_UNSURE_SHARE * a && ci_ns > MEMSTUB_CALIB_UNSURE_NS);
}

/* A linear model time = base + per_fault x faults (for heap_mmap_shrink:
 * x pages given back; for sleep_overshoot: x the delay in ms), fitted on
 * every point of every repetition: least absolute deviations (the median
 * line), usleep's overshoot least squares with outliers trimmed once (see
 * docs). */
typedef struct memstub_calib_line {
  memstub_calib_time base, per_fault;  // scv: of the per-repetition fits
  double r2;        // coefficient of determination of the pooled fit
  double resid_ns;  // residual standard deviation of the pooled fit, ns
} memstub_calib_line;

/* The work of one point, the figures the cost model adds up
 * (memstub_gen_predict). A profile holds them twice (memstub_profile.hot and
 * .cold): hot, measured with zero delays between points (the paper's
 * method; keys time_NAME_*), and cold, measured with a sleep before every
 * point, as a replay's points run (docs/calibration.md, "Cold costs"; keys
 * time_cold_NAME_*). */
typedef struct memstub_calib_costs {
  memstub_calib_time basic;  // a 1-byte push or pop, no heap, no wait (eq. 1's time_basic)
  /* Heap in glibc's arena: eq. 5 (alloc, two levels by faults) and eq. 6 (use). */
  memstub_calib_time heap_alloc_nofault, heap_alloc_fault;
  memstub_calib_line heap_use;
  memstub_calib_time heap_shrink;           // realloc smaller
  /* Heap block served from mmap (extension). */
  memstub_calib_time heap_mmap_alloc_nofault, heap_mmap_alloc_fault;  // mremap
  memstub_calib_line heap_mmap_use;
  memstub_calib_line heap_mmap_shrink;      // smaller by whole pages: mremap (and the runtime's
                                            //   trim); per_fault here is per page given back
  memstub_calib_time heap_mmap_shrink_inpage;  // smaller within the same pages
  memstub_calib_line heap_to_mmap;          // arena -> mmap: realloc's move, and per page
                                            //   copied (the old size's pages; key: _per_page)
  memstub_calib_time heap_from_mmap;        // mmap -> arena (the runtime's calloc, copy, free)
  /* Stack: eq. 7 (alloc) with a fault level, eq. 8 (use). */
  memstub_calib_time stack_alloc_nofault, stack_alloc_fault;
  memstub_calib_line stack_use;             // first touch: a fresh thread stack
  memstub_calib_time stack_pop;             // returning from a frame
} memstub_calib_costs;

/* What was measured, and where. Text fields are NUL-terminated; a profile is
 * a plain value (no resources), so it needs no free function. */
typedef struct memstub_profile {
  int format;                 // MEMSTUB_PROFILE_FORMAT
  /* The host and the runtime build the figures belong to. */
  char arch[32];              // host.arch: x86_64, aarch64, ...
  char cpu[128];              // host.cpu
  char kernel[128];           // host.kernel
  char libc[64];              // host.libc
  char compiler[128];         // host.compiler: of the runtime build
  char cflags[256];           // host.cflags: flags the runtime was built with
  char date[32];              // host.date: UTC, ISO 8601
  int64_t page_size;          // page_size_bytes
  double cycles_per_ns;       // cycles_per_ns (1 when the counter is CLOCK_MONOTONIC ns)
  int cycles_invariant;       // cycles_invariant: 1 invariant TSC / generic timer, 0 fallback
  double timer_cycles;        // timer_overhead_cycles: one counter read (ticks), subtracted per phase
  int64_t repetitions;        // repetitions
  int64_t mmap_threshold;     // mmap_threshold_bytes: glibc's threshold during calibration
  int64_t heap_pad;           // heap_pad_bytes: what the runtime's block holds beyond the size
  int64_t heap_arena_room;    // heap_arena_room_bytes: the largest block glibc grew in place
                              //   in the arena (past the mmap threshold while its top has room)

  /* The work of a point, measured with zero delays (time_basic, time_heap_*,
   * time_stack_*). */
  memstub_calib_costs hot;
  memstub_calib_line stack_use_retouch;  // time_stack_use_retouch: stack use on a cached
                                         //   thread stack (informational)

  /* Waiting and measuring. */
  memstub_calib_time wait_late;        // time_wait_late: deadline wait already past (a clock read)
  memstub_calib_time measure_trace;    // time_measure_trace: extra per point when measuring a trace
  memstub_calib_line sleep_overshoot;  // time_sleep_overshoot: usleep mode, wake-up lateness
                                       //   = base + per_fault x the delay in ms (key: _per_ms)
  double sleep_overshoot_p90_ns;       // time_sleep_overshoot_p90_ns

  /* Cold costs: the same work measured with a sleep of cold_delay ns before
   * every point (deadline timing), as a replay with delays runs it: caches,
   * TLB and the vCPU have gone cold meanwhile. */
  int64_t cold_delay;            // cold_delay_ns: the delay before each point of the cold runs;
                                 //   0: nothing measured cold (compensation uses the hot figures)
  int64_t cold_min_delay;        // cold_min_delay_ns: rows waiting at least this long use the cold
                                 //   figures (the deadline margin: a shorter wait spins, no sleep)
  int64_t cold_repetitions;      // cold_repetitions: repetitions that ran the cold traces
  memstub_calib_costs cold;      // time_cold_*: the figures of hot, cold (basic: the work of a
                                 //   basic point after a sleep, plus the hot loop)

  /* Eq. 4 against the measured faults: share of rising points where it
   * predicted exactly the faults counted (heap in the arena, stack). */
  double eq4_heap_agreement, eq4_stack_agreement;

  /* Bytes. */
  int64_t heap_overhead_empty;   // heap_overhead_empty_bytes: measured - replayed, size 0
  int64_t heap_overhead_inuse;   // heap_overhead_inuse_bytes: the same in the arena, rounded mean
  int64_t heap_overhead_mmap;    // heap_overhead_mmap_bytes: mean on mmapped blocks (not compensated)
  int64_t stack_offset;          // stack_offset_bytes
  int64_t stack_per_frame;       // stack_overhead_per_frame_bytes
  double stack_fit_r2;           // stack_fit_r2
  int64_t stack_fit_max_resid;   // stack_fit_max_residual_bytes

  /* Resident memory (docs/memory-model.md), optional keys: a profile without
   * them reads with 0. */
  int64_t resident_overhead;     // resident_overhead_bytes: a replay's rss_bytes (relative to
                                 //   T0) minus its rss target, rounded mean over the points of
                                 //   the resident trace: compensated (memstub gen subtracts it)
  int64_t resident_entry;        // resident_entry_bytes: RssAnon the replay adds before its
                                 //   first point (its thread's stack, malloc arena, the heap's
                                 //   scratch), on a fresh thread stack; not compensable (below
                                 //   the curve's zero), reported
  double resident_per_point;     // resident_per_point_bytes: the measurement records' resident
                                 //   bytes per point (a measured replay, reserved up front)

  /* The work's allocator calls (issue 14, docs/calibration.md "Allocator
   * calls"), optional keys: a profile without them reads with 0 (not
   * measured). call_ns[kind * 4 + class] (memstub/work.h's order; keys
   * call_KIND_CLASS_ns): one call as a stub's work makes it, ns, the median
   * of rounds of 32 (memstub_work_measure); spin_steps_per_ns: the work
   * spin's rate (steps of its loop per ns of CPU). */
  double call_ns[MEMSTUB_WORK_CALLS];
  double call_ci_ns[MEMSTUB_WORK_CALLS];  // call_KIND_CLASS_ci95_ns: 95 % half-width, -1 unknown
  double spin_steps_per_ns;
  /* Work as work (issue 32, docs/runtime.md "Work as work"), optional keys
   * touch_256k_ns ... touch_64m_ns (MEMSTUB_WORK_TOUCH_KEYS), 0 when not
   * measured: ns of CPU per memory touch of the work's memory share in a
   * block of each size of MEMSTUB_WORK_TOUCH_BYTES (memstub_work_touch_measure). */
  double touch_ns[MEMSTUB_WORK_TOUCH_SIZES];
} memstub_profile;

/* Write p as a profile file, atomically (a temporary file renamed into
 * place); "-" writes to standard output. 0 or a negative errno with err set. */
int memstub_profile_write(const memstub_profile *p, const char *path, memstub_error *err);

/* Read a profile file strictly: every line blank, a # comment or
 * `key = value`; every key known, given once, and present (resident_* may
 * be left out: 0); numbers in range; each *_ns figure consistent with its *_cycles figure. Anything
 * else is refused with -EINVAL and `path:line: what is wrong` (missing keys:
 * `path: missing key ...`). -ENOENT etc. when the file cannot be read. */
int memstub_profile_read(const char *path, memstub_profile *p, memstub_error *err);
/* The same on text in memory; name stands for the path in messages. */
int memstub_profile_parse(const char *name, const char *text, size_t len, memstub_profile *p,
                          memstub_error *err);

/* How sure p's figures of one kind are (docs/calibration.md, "How sure"):
 * which MEMSTUB_FIGURES_HOT (time_*: the hot work, waiting, measuring,
 * usleep's overshoot), MEMSTUB_FIGURES_COLD (time_cold_*) or
 * MEMSTUB_FIGURES_CALLS (call_*). *share: the median over those with an
 * interval of the half-width over the figure (figures within 100 ns of 0
 * left out; -1 when none); buf (cap bytes, may be NULL): the unsure ones
 * (memstub_calib_unsure), "KEY V +- CI ns, ...", as many as fit. Returns
 * how many are unsure; 0 for a profile without intervals. */
enum { MEMSTUB_FIGURES_HOT, MEMSTUB_FIGURES_COLD, MEMSTUB_FIGURES_CALLS };
int64_t memstub_profile_unsure(const memstub_profile *p, int which, double *share, char *buf,
                               size_t cap);

/* Whether p may be used to compensate stubs replayed on this host: -EINVAL
 * with err set when it was measured on another architecture or page size.
 * When only the runtime build differs (compiler or flags, on which the
 * per-frame overhead depends), returns 1 and writes a one-line warning to
 * warn (cap bytes); 0 when everything matches. name names the profile. */
int memstub_profile_check(const memstub_profile *p, const char *name, char *warn, size_t cap,
                          memstub_error *err);

/* ---- running the calibration ------------------------------------------- */

/* The delay before every point of the cold runs, by default: 1 ms. Measured
 * costs grow with the sleep (docs/calibration.md, "Cold costs"); 1 ms is the
 * middle of the delays of traces recorded from components (the 4.8 s sample:
 * p10 0.5 ms, median 1.8 ms) that keeps a default calibration well under a
 * minute. */
#define MEMSTUB_CALIB_COLD_DELAY_DEFAULT 1000000
/* Limits of memstub_calib_options.cold_delay_ns (besides 0). The lower one is
 * twice the default deadline margin, so every cold point sleeps. */
#define MEMSTUB_CALIB_COLD_DELAY_MIN 200000
#define MEMSTUB_CALIB_COLD_DELAY_MAX 20000000

typedef struct memstub_calib_options {
  int64_t repetitions;   // R, default 100
  int quick;             // smaller traces (default 0); memstub calibrate --quick
  int64_t cold_delay_ns; // the cold runs' delay (MEMSTUB_CALIB_COLD_DELAY_DEFAULT); 0: no cold
                         //   runs. They run in every fifth repetition (at least one).
  /* Called from the calling thread after each run: runs done of total. */
  void (*progress)(int64_t done, int64_t total, void *arg);
  void *progress_arg;
} memstub_calib_options;

void memstub_calib_options_init(memstub_calib_options *o);

/* One measured sample for the plot and the table: a point's time (ns) with
 * the page faults counted for it. */
typedef struct memstub_calib_sample {
  double faults;  // faults counted (for bytes: open frames)
  double value;   // ns (for bytes: bytes)
  double predicted;  // eq. 4's fault count (time samples), or the model's value
} memstub_calib_sample;

/* A calibration's result: the profile and what it was fitted from. */
typedef struct memstub_calib {
  memstub_profile profile;
  /* Samples by series (MEMSTUB_CALIB_S_*), for plots; subsampled. */
  memstub_calib_sample *samples[10];
  size_t nsamples[10];
  double *basic_rep_ns;          // time_basic of each repetition, ns [nbasic]
  size_t nbasic;
  double cold_duration_s;        // wall time of the cold runs
  int64_t trimmed;               // samples beyond 10 x the median absolute residual (preempted;
                                 //   the medians ignore them; usleep's overshoot drops them)
  int64_t heap_moved;            // arena growths realloc moved within the arena (copies): not fitted
  int64_t samples_total;         // samples fitted
  double duration_s;             // wall time of the calibration
  /* Model check: a component-like synthetic trace replayed with zero delays
   * and no measuring; its duration against what the profile predicts. */
  double check_measured_ns, check_predicted_ns;
  int64_t check_points;
  /* eq. 4: faults predicted and counted over rising points. */
  int64_t eq4_heap_points, eq4_heap_exact, eq4_heap_within1;
  int64_t eq4_stack_points, eq4_stack_exact, eq4_stack_within1;
  /* ... and for the stack with the frame overhead: x = F + a, y = O + sum(F + a). */
  int64_t eq4_stackf_points, eq4_stackf_exact;
  /* The generator's fault count for the arena heap (pages beyond those
   * written before in the replay) against the faults counted. */
  int64_t model_heap_points, model_heap_exact;
  /* The generator's rule for where glibc puts the block (arena or mmap)
   * against where it was, over every point of the heap runs. */
  int64_t rule_points, rule_agree;
} memstub_calib;

enum {
  MEMSTUB_CALIB_S_HEAP_USE = 0,     // arena heap use: faults -> ns
  MEMSTUB_CALIB_S_HEAP_MMAP_USE,    // mmapped heap use
  MEMSTUB_CALIB_S_HEAP_ALLOC,       // arena realloc: faults -> ns
  MEMSTUB_CALIB_S_STACK_USE,        // stack use, first touch
  MEMSTUB_CALIB_S_STACK_RETOUCH,    // stack use, cached thread stack
  MEMSTUB_CALIB_S_STACK_ALLOC,      // alloca: faults -> ns
  MEMSTUB_CALIB_S_STACK_BYTES,      // open frames -> measured - requested bytes
  MEMSTUB_CALIB_S_SLEEP,            // usleep: delay (ms, in faults) -> overshoot ns
  MEMSTUB_CALIB_S_COLD_HEAP_MMAP_USE,  // mmapped heap use, cold
  MEMSTUB_CALIB_S_COLD_STACK_USE,      // stack use, first touch, cold
};

/* Calibrate this host. On success *out owns the result (memstub_calib_free).
 * Sets glibc's mmap threshold to its default (128 KiB) with mallopt for the
 * whole process, so that every repetition sees what a fresh replay process
 * sees (glibc raises the threshold when a mapped chunk is freed).
 * -EINVAL for bad options, -ENOMEM, or the error of a replay that failed. */
int memstub_calibrate(const memstub_calib_options *o, memstub_calib **out, memstub_error *err);
void memstub_calib_free(memstub_calib *c);

/* Draw the calibration's fits to out (.png, .svg or .pdf, by extension) with
 * gnuplot ($MEMSTUB_GNUPLOT, else gnuplot on PATH) and plots/calibration.gp
 * under memstub's data directory; out appears atomically. 0, -EINVAL (format),
 * -ENOENT (gnuplot or the script missing) or -EIO (gnuplot failed). */
int memstub_calib_plot(const memstub_calib *c, const char *out, memstub_error *err);

#ifdef __cplusplus
}
#endif
#endif
