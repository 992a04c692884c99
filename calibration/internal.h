/* calibration/internal.h: the calibration's private pieces.
 *
 * How a calibration flows through the files:
 *   programs.c  the calibration traces, built as stubs (memstub_gen_build)
 *   runs.c      each repetition replays them (memstub_replay_run) and turns
 *               the records into samples, one series per figure
 *   figures.c   the samples fitted into the profile's figures (fit.c: the
 *               least-squares and median fits)
 *   calibrate.c memstub_calibrate: options, the loop over the repetitions,
 *               the host, the model check
 *   profile.c   the profile file: keys, writer, strict reader, host check */
#ifndef MEMSTUB_CALIBRATION_INTERNAL_H
#define MEMSTUB_CALIBRATION_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "memstub/calib.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "malloc_model.h"
#include "memstub/work.h"
#include "ms_common.h"

/* ---- the profile's keys (profile.c) ------------------------------------- */

enum { MS__CAL_TEXT, MS__CAL_I64, MS__CAL_INT, MS__CAL_DOUBLE };

typedef struct ms__cal_key {
  char key[64];
  int type;        // MS__CAL_*
  void *ptr;       // into the profile
  size_t cap;      // MS__CAL_TEXT: the array's size
  int cycles_of;   // for an *_ns key: index of its *_cycles key, else -1
  const char *comment;  // written before the key, NULL for none
  int optional;    // a profile may leave it out (it then reads as 0, or with unknown as -1):
                   //   keys added in format 2
  int unknown;     // a confidence interval: -1 (unknown) when absent, and -1 or >= 0
  int value_of;    // for an interval: index of its figure's key (*_ns), else -1
} ms__cal_key;

/* The keys of p, in file order, into keys (room for cap). Returns how many. */
size_t ms__cal_keys(memstub_profile *p, ms__cal_key *keys, size_t cap);
#define MS__CAL_MAXKEYS 400

/* The runtime build's compiler and flags (host.compiler, host.cflags), baked
 * in by calibration/CMakeLists.txt (calibrate.c). */
void ms__cal_build_info(memstub_profile *p);

/* ---- fitting (fit.c) --------------------------------------------------- */

/* Mean and squared coefficient of variation (variance / mean^2, population
 * variance) of v[0..n). scv is 0 when n < 2 or the mean is 0. */
void ms__cal_mean_scv(const double *v, size_t n, double *mean, double *scv);

/* Least squares y = a + b x over n points, with outliers trimmed once: points
 * whose residual exceeds 10 x the median absolute residual plus floor are
 * dropped and the line refitted. fit_slope = 0 fits a constant (the mean).
 * Returns the points kept; fills a, b, r2 (of the kept points; 1 when y is
 * constant and fitted exactly, 0 for a constant fit), resid (residual
 * standard deviation). keep (room for n, may be NULL) marks kept points.
 * pre: n >= 1. -ENOMEM. */
int64_t ms__cal_fit(const double *x, const double *y, size_t n, int fit_slope, double floor,
                    double *a, double *b, double *r2, double *resid, unsigned char *keep);

/* Fault injection for tests, 0 in normal use: when > 0, every fit
 * memstub_calibrate makes counts it down, and the fit that brings it to 0
 * fails as if out of memory. Not thread-safe: set it only in a test. */
extern int64_t ms__cal_fit_fail_after;

/* Least absolute deviations y = a + b x over n points: the line through the
 * conditional median, which no outlier moves far (iteratively reweighted
 * least squares from the least-squares line). fit_slope = 0 (or x NULL)
 * fits a constant: the median. r2 and resid as ms__cal_fit's, of this line
 * and every point. 0 or -ENOMEM; all zero for n == 0. */
int ms__cal_fit_l1(const double *x, const double *y, size_t n, int fit_slope, double *a,
                   double *b, double *r2, double *resid);

/* A figure as calibration fits it (ms__cal_estimate): robust, with how
 * sure it is. */
typedef struct ms__cal_est {
  double a, b;          // the pooled fit: the median (b 0), or the median line a + b x
  double r2, resid;     // of the pooled fit, as ms__cal_fit_l1's
  double scv_a, scv_b;  // SCV of the same fit on each repetition alone (a line: those
                        //   with 3 samples or more); 0 with fewer than 2
  double ci_a, ci_b;    // half-width of the 95 % confidence interval of a and b, from
                        //   the spread of the fits of up to MS__CAL_GROUPS batches of
                        //   repetitions (Student's t); -1 with fewer than 2 batches
  int groups;           // batches fitted
  int64_t outliers;     // samples beyond 10 x the median absolute residual plus floor
                        //   (preempted: the median ignores them, they are counted)
} ms__cal_est;
#define MS__CAL_GROUPS 10

/* The fit of one figure over n samples of several repetitions (rep[i]: the
 * repetition of sample i, samples in repetition order) and how sure it is.
 * The fit: of all samples, least absolute deviations (fit_slope 0 or x NULL:
 * the median; samples beyond 10 x the median absolute residual plus floor
 * are counted as outliers), or with mean least squares with one trimming
 * pass (ms__cal_fit, floor). The interval (batch means): the repetitions
 * with samples, in order, are cut into G batches of consecutive ones (G at
 * most MS__CAL_GROUPS), each batch is fitted alone, and the half-width is
 * t(0.975, G-1) x sd / sqrt(G) of those fits, so it holds what the host did
 * during the calibration; not how it differs an hour later. A line whose
 * samples have fewer than two distinct x is a constant. 0 or -ENOMEM; all
 * zero (ci -1) for n == 0. */
int ms__cal_estimate(const double *x, const double *y, const int32_t *rep, size_t n,
                     int fit_slope, double floor, int mean, ms__cal_est *e);

/* Median of v[0..n) (v is reordered). 0 for n == 0. */
double ms__cal_median(double *v, size_t n);

/* Eq. 4: page faults of an allocation of x new bytes on top of y bytes. */
static inline int64_t ms__cal_eq4(int64_t x, int64_t y, int64_t page) {
  if (x <= 0) return 0;
  return ((y % page) + x) / page;
}

/* Whether an arena block that grew from old to size bytes (pad: the
 * runtime's) was moved by realloc within the arena rather than grown in
 * place: its heap phase faulted (pf) more pages than growing in place can
 * (the new bytes' pages, eq. 4, and the new top chunk's header), as a copy
 * into fresh pages does. Such a point costs a copy of the old size (the
 * calibration heap trace's moves: 15 to 60 us), which the cost model does
 * not predict; counted apart, it would otherwise be fitted as a fault. */
static inline int ms__cal_arena_moved(int64_t old, int64_t size, int64_t pad, int64_t pf,
                                      int64_t page) {
  return size > old && pf > ms__cal_eq4(size - old, old + pad, page) + 1;
}

/* Whether the block is mapped after a change from old to size bytes (pad:
 * the runtime's; was: it was mapped before; pf: the faults of the point's
 * heap phase) in the runs that do not measure the heap (the cycle and fault
 * runs), from the faults alone. The heap run's mallinfo2 calls and filled
 * tcache make glibc place the block otherwise: the calibration heap trace's
 * block moved to mmap at 137 913 bytes there and grew in place in the
 * arena in the others, whose samples of the next 160 points were taken for
 * mapped ones. A growth that faults more than growing in place can is a
 * move (ms__cal_arena_moved): to mmap when glibc serves the new chunk from
 * mmap, else within the arena; a mapped block that falls below the
 * threshold goes back to the arena (the runtime's rule). */
static inline int ms__cal_unmeasured_mapped(int was, int64_t old, int64_t size, int64_t pad,
                                            int64_t pf, int64_t page) {
  if (was) return size + pad >= MS__MALLOC_MMAP_THRESHOLD;
  return ms__cal_arena_moved(old, size, pad, pf, page) &&
         ms__malloc_is_mmapped(size + pad, MS__MALLOC_MMAP_THRESHOLD);
}

/* Pages of the mapping glibc makes for a block of size + pad bytes: the
 * chunk (request rounded as malloc does, 16-byte aligned) plus its header,
 * rounded up to pages. The generator's cost model uses the same rule. */
static inline int64_t ms__cal_map_pages(int64_t size, int64_t pad, int64_t page) {
  return ms__malloc_mmap_bytes(size + pad, page) / page;
}

/* The generator's rule for where glibc keeps the block after a change from
 * old to block bytes (size + pad), given it was mapped (1) or in the arena
 * (0): a growing block moves to mmap once its chunk reaches the threshold
 * and it no longer fits where the arena can grow it in place (the pages
 * written before, or the room calibration found); a mapped block moves back
 * below the threshold (the runtime's rule). Returns 1 for mapped. */
static inline int ms__cal_mapped_next(int mapped, int64_t block, int64_t old, int64_t hw,
                                      int64_t room, int64_t thr) {
  if (mapped) return block >= thr;
  return block > old && ms__malloc_is_mmapped(block, thr) && block > hw && block > room;
}

/* The mmap threshold glibc starts with, which calibration fixes for the
 * whole process (memstub_calibrate). */
#define MS__CAL_MMAP_THRESHOLD MS__MALLOC_MMAP_THRESHOLD

/* ---- samples (runs.c adds them, figures.c fits them) ----------------------- */

// The series. Times in cycles (ns in the fallback), bytes in bytes.
enum {
  MS__S_BASIC,      // x 0: period of a basic point
  MS__S_BASIC_IN,   // x 0: a basic point's work from cyc_start to cyc_end (the cold basic's base)
  MS__S_LATE,       // x 0: period of a point whose deadline has passed
  MS__S_MEAS,       // x 0: period (ns) when measuring a trace
  MS__S_SLEEP,      // x delay (ms): usleep's overshoot (ns)
  MS__S_HALLOC0,    // arena realloc, no fault
  MS__S_HALLOC1,    // arena realloc, faults
  MS__S_HUSE,       // x faults in the use phase: arena use
  MS__S_HSHRINK,    // arena realloc smaller
  MS__S_MALLOC0,    // mapped realloc (mremap), no fault
  MS__S_MALLOC1,    // ... faults
  MS__S_MUSE,       // x faults: mapped use
  MS__S_MSHRINK,    // x pages given back: mapped smaller by whole pages
  MS__S_MSHRINK0,   // mapped smaller within its pages
  MS__S_TOMMAP,     // x pages copied: arena -> mmap, realloc's move and copy
  MS__S_FROMMMAP,   // mmap -> arena
  MS__S_HMOVE,      // x old size's pages: arena growth realloc moved (copied) within the arena
  MS__S_SALLOC0,    // alloca, no fault
  MS__S_SALLOC1,    // alloca with the fault below the frame
  MS__S_SUSE,       // x faults in the use phase: first touch
  MS__S_SUSE_RT,    // ... cached thread stack
  MS__S_SPOP,       // return
  MS__S_SBYTES,     // x open frames: stack measured - pushed bytes
  MS__S_SFRAME,     // x depth after a push: what the push moved beyond its alloca
  MS__S_HB_EMPTY,   // heap measured - size, size 0
  MS__S_HB_INUSE,   // ... in the arena
  MS__S_HB_MMAP,    // ... mapped
  MS__S_STACK_EQ4,  // x eq. 4 paper form, y faults counted (rising stack, first touch)
  MS__S_STACK_EQ4F, // x pushed bytes, y faults counted, z bytes below, w open frames
  MS__S_HEAP_EQ4,   // x eq. 4, y faults counted (rising arena heap)
  MS__S_HEAP_HW,    // x the generator's fault count (beyond the pages written before), y counted
  MS__S_HEAP_PLACE, // x block (size + pad), y 1 if mapped, z the block before
  MS__S_RES_INUSE,  // x rss target, y rss_bytes measured - target (resident trace)
  MS__S_RES_ENTRY,  // x points measured, y RssAnon at T0 - before the replay
  MS__S_COUNT
};

// A series of samples: x, y, two more values for some series, and the
// repetition each came from (samples are added in repetition order).
typedef struct ms__cal_ser {
  double *x, *y, *z, *w;
  int32_t *rep;
  size_t n, cap;
} ms__cal_ser;

// Append a sample. 0 or -ENOMEM.
int ms__cal_add4(ms__cal_ser *s, double x, double y, double z, double w, int rep);
static inline int ms__cal_add(ms__cal_ser *s, double x, double y, int rep) {
  return ms__cal_add4(s, x, y, 0, 0, rep);
}
void ms__cal_ser_free(ms__cal_ser *s);

/* ---- the calibration programs (programs.c) ---------------------------------- */

/* The calibration traces as stubs. Each is built twice when cold runs are
 * asked for: hot, with zero delays (the paper's method), and cold, the same
 * rows (the heap trace's first cycle, fewer basic rows) with a delay before
 * every row. Both give the same points in the same order, so a cold run's
 * points pair with the hot fault and heap runs' points of the same index. */
typedef union ms__cal_programs {
  struct {
    memstub_gen *basic, *late, *heap, *stack, *bytes, *sleep;
    memstub_gen *cbasic, *cheap, *cstack;  // cold; NULL without cold runs
    memstub_gen *resident, *resident4;     // rss targets; the same four times over
  };
  memstub_gen *all[11];
} ms__cal_programs;

/* Build them: quick for the smaller traces, cold the delay before every
 * point of the cold ones (0: none). 0, -ENOMEM or the generator's error, with
 * err set; on failure what was built stays in s for ms__cal_programs_free. */
int ms__cal_programs_build(ms__cal_programs *s, int quick, int64_t cold, memstub_error *err);
void ms__cal_programs_free(ms__cal_programs *s);

/* ---- the runs (runs.c) ------------------------------------------------------ */

// A calibration in progress: what every run needs, and the samples so far.
typedef struct ms__cal_ctx {
  const memstub_calib_options *o;
  int64_t done, total;  // runs, for the progress callback
  double timer;         // one counter read, in counter ticks
  int invariant;        // the counter is invariant (else CLOCK_MONOTONIC ns)
  double cpn;           // cycles per ns (1 without an invariant counter)
  long page;
  int64_t heap_pad;     // the runtime's block pad (memstub_replay_info.heap_pad)
  double *room;         // per repetition: the largest block grown in place in the arena
  ms__cal_ser s[MS__S_COUNT];
  ms__cal_ser cs[MS__S_COUNT];  // the cold runs' samples (time series only)
  int64_t cold_every;   // the cold traces run in every cold_every-th repetition (0: never)
  int64_t cold_reps;
  int64_t cold_ns;      // wall time spent in cold runs
  ms__cal_ser calls[MEMSTUB_WORK_CALLS];  // y: ns per call, a round per repetition
  double spin_rate;     // the work spin's steps per ns
  double touch_ns[MEMSTUB_WORK_TOUCH_SIZES];  // the work's memory touches, ns each by block size
  memstub_calib *out;
} ms__cal_ctx;

/* One replay of g with the measure bits and timing given, on a thread stack
 * extra bytes larger than the default (0: the default); counts the run for
 * the progress callback. 0 or the replay's error (err prefixed). */
int ms__cal_run(ms__cal_ctx *c, const memstub_gen *g, unsigned measure, int timing,
                int64_t extra, memstub_replay **r, memstub_error *err);

/* A stack_extra a page larger than any asked for before: glibc then maps a
 * fresh thread stack instead of reusing a cached one (first touch). */
int64_t ms__cal_fresh_extra(const ms__cal_ctx *c);

/* Repetition rep of every calibration program, its samples added to c->s
 * (and c->cs in a cold repetition). 0, -ENOMEM or a replay's error, with
 * err set. */
int ms__cal_repetition(ms__cal_ctx *c, const ms__cal_programs *st, int rep, memstub_error *err);

/* calls.c: one round of the allocator calls' figures for repetition rep
 * into c->calls (the first also measures the spin's rate, after a round
 * thrown away). 0 or -ENOMEM with err set. */
int ms__cal_calls_round(ms__cal_ctx *c, int rep, memstub_error *err);

/* ---- the figures (figures.c) ------------------------------------------------ */

/* Fit c's samples into c->out's profile figures (the header fields, set by
 * the caller, stay) and keep samples for the plot. 0 or -ENOMEM (no error
 * message: the caller says what failed). */
int ms__cal_fit_figures(ms__cal_ctx *c);

#endif
