/* traces/timeline.h: the timeline a stub of a recorded trace replays
 * (docs/recording.md, "The stub's timeline"; docs/formats.md, "Work"): the
 * rows' times and CPU time with the recorder's cost taken out, by the
 * recorder's own figures or fitted to runs of the program without it
 * (memstub record --reference). One model for the generator, which builds
 * the stub on it (generator/work.c), and for compare and plot, which judge a
 * replay against it: compare does not depend on the generator. */
#ifndef MEMSTUB_TRACES_TIMELINE_H
#define MEMSTUB_TRACES_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "memstub/error.h"
#include "memstub/trace.h"

// The metadata memstub record writes with --repeat and --reference.
#define MS__TL_REF_RUNS "reference.runs"
#define MS__TL_REF_WALL "reference.wall_ns"        // median over the runs
#define MS__TL_REF_WALL_RANGE "reference.wall_ns_range"  // "MIN MAX"
#define MS__TL_REF_CPU "reference.cpu_ns"          // user + sys, median
#define MS__TL_REF_CPU_RANGE "reference.cpu_ns_range"
/* The reference runs of a recording of regions (recorder/times.c): the
 * occurrences timed, and their span, from the first one's begin to the last
 * one's end, wall and the followed thread's CPU time, medians and ranges. */
#define MS__TL_REF_REGION_OCC "reference.region_occurrences"
#define MS__TL_REF_REGION_WALL "reference.region_wall_ns"
#define MS__TL_REF_REGION_WALL_RANGE "reference.region_wall_ns_range"
#define MS__TL_REF_REGION_CPU "reference.region_cpu_ns"
#define MS__TL_REF_REGION_CPU_RANGE "reference.region_cpu_ns_range"
/* One occurrence timed: the reference run of median span's clock at its
 * calls, "CALLS SPAN STRIDE W0 W1 ...": the calls the followed thread made
 * in the occurrence, its span (ns), and the wall time since its begin at
 * call 0, STRIDE, 2 STRIDE, ... (recorder/times.c). */
#define MS__TL_REF_CURVE "reference.curve"
#define MS__TL_OUT_WALL "outside.wall_ns"  // the kept recording, from outside
#define MS__TL_OUT_CPU "outside.cpu_ns"
/* The kept recording's rows: their span, and the CPU time in them, every
 * thread's summed (memstub record --repeat or --reference). Without the
 * recorder's setup, its writing of the trace and the process's start and
 * exit, which the figures from outside hold. */
#define MS__TL_ROWS_WALL "recording.rows_wall_ns"
#define MS__TL_ROWS_CPU "recording.rows_cpu_ns"
#define MS__TL_REP_RECORDINGS "repeat.recordings"
#define MS__TL_REP_KEPT "repeat.kept"              // 1-based, in run order
#define MS__TL_REP_DURATIONS "repeat.durations_ns"  // each recording's, in run order
/* A whole run from the main thread's start, recorded by memstub record:
 * what the process did before the recorder set itself up (exec, the
 * dynamic loader, the C library's start), wall and CPU time. Not in the
 * trace's rows. */
#define MS__TL_START_WALL "record.start_wall_ns"
#define MS__TL_START_CPU "record.start_cpu_ns"

typedef enum ms__tl_kind {
  MS__TL_RECORDED = 0,  // as recorded: not a trace of memstub record with call columns
  MS__TL_OWN = 1,       // the recorder's cost out by its own figures
  MS__TL_FITTED = 2,    // the recorder's cost out as measured from outside (reference runs)
} ms__tl_kind;

#define MS__TL_FEW_CALLS 1024

typedef struct ms__timeline {
  ms__tl_kind kind;
  double wall_per_call, cpu_per_call;  // ns taken out per allocator call of a row
  double per_cpu_ns;                   // the samples' cost per ns of a row's CPU time
  /* Fitted with CPU figures: a row's waiting (interval less CPU time) times
   * this (the reference's waiting over the recording's); -1: the wall time
   * per call instead (wall_per_call). */
  double wait_scale;
  int whole;  // fitted as a whole run: the trace's totals set to the reference's
  /* ... and those totals the regions' span in the reference runs (timed by
   * the recorder loaded but not recording: MS__TL_REF_REGION_*), not the
   * runs' own; ref_* are the regions', rec_* the trace's own. */
  int region;
  /* Why the regions' span in the reference runs was not used (NULL: it was,
   * or there was none): they timed another number of occurrences than the
   * recording had. */
  const char *region_unused;
  /* The reference run's clock at the calls (MS__TL_REF_CURVE) places
   * each row: its points, and the calls it counted; curve_unused says why a
   * curve given was not used (NULL: it was, or there was none). */
  int64_t curve_points, curve_calls;
  const char *curve_unused;
  /* A process of several threads (every thread recorded), fitted: a row's
   * CPU time, the recorder's own cost out, times this (the reference's CPU
   * time over the recording's less the recorder's own), and its waiting
   * times wait_scale (the reference's wall time over the recording's);
   * 0: not this model. */
  double cpu_scale;
  int64_t threads;  // record.threads of such a process
  /* ... fitted on the recording's rows (MS__TL_ROWS_*, then in rec_*), not
   * its figures from outside: what ran outside the rows (the process's start
   * and exit, the recorder's setup and its writing of the trace) is in the
   * reference, so the rows take it, as a whole run of one thread's do. */
  int rows_fit;
#define MS__TL_ROWS_SCALE_MAX 1.5  // ... by which scaled up at most
  /* Fitted by cpu_scale too, as the process's slowing: few allocator calls
   * (record.events below MS__TL_FEW_CALLS) and no figure of the recorder's
   * own per call, where a fit per call would be the run's difference over
   * a few calls (liblzma's encoder: 39 calls, 5 ms each). */
  int few;
  int no_calls;  // the rows hold no allocator call: a whole run fitted by its totals alone
  double own_per_call;                 // record.cost_ns_per_event (0: not measured)
  int64_t events;                      // record.events: the whole run's allocator calls
  int64_t ref_runs;                    // reference runs (0: none)
  int64_t ref_wall_ns, ref_cpu_ns;     // their medians (ref_cpu_ns -1: not given)
  int64_t rec_wall_ns, rec_cpu_ns;     // the recording from outside (-1: not given)
  const char *unfit;  // why a cost from outside was not taken out in full; NULL when it was
  const char *caveat;  // why the fit may overstate the cost per call ("may be ..."); NULL when not
  // Filled by ms__timeline_rows: the trace's duration and CPU time before and after.
  int64_t recorded_ns, target_ns, recorded_cpu_ns, target_cpu_ns;
  int64_t removed_ns;  // wall time taken out, over every row
  /* Rows with calls that kept less than a tenth of their CPU time after
   * their calls' share of the cost, and the CPU time they had recorded: a
   * cost that was not even per call, when they are much of the trace. */
  int64_t thin_rows, thin_cpu_ns;
  /* The waiting taken out as time the thread was runnable without a CPU
   * (MEMSTUB_WORK_RUN_DELAY_COLUMN), scaled as its row's waiting was;
   * ms__timeline_rows fills it; not in removed_ns, the recorder's cost. A
   * thread of a process of several keeps it: runq_kept_ns, runq_ns 0. */
  int64_t runq_ns, runq_kept_ns;
  int64_t start_wall_ns, start_cpu_ns;  // MS__TL_START_WALL, MS__TL_START_CPU; -1 not given
} ms__timeline;

/* The model of t's timeline from its metadata and columns into *tl. 0, or
 * -EINVAL with err naming the metadata key whose value is wrong (reference
 * figures without the recording's, not a count of ns). */
int ms__timeline_model(const memstub_trace *t, ms__timeline *tl, memstub_error *err);

/* Each row's interval on the target timeline: dt[i] the wall time since row
 * i - 1, cpu[i] the CPU time in it (dt[0] = cpu[0] = 0; cpu all 0 without a
 * cpu_ns column), each at least 0, cpu[i] at most dt[i]; fills tl's
 * durations. dt and cpu hold t->n values. 0, or -EINVAL with err naming the
 * row (cpu_ns decreases, a negative call count). */
int ms__timeline_rows(const memstub_trace *t, ms__timeline *tl, int64_t *dt, int64_t *cpu,
                      memstub_error *err);

/* What the model does to the times, in one line: "recorder's cost out,
 * fitted to 3 reference runs: ...". After ms__timeline_rows. */
void ms__timeline_describe(const ms__timeline *tl, char *buf, size_t cap);
/* Whether rows with calls that held a tenth of the recording's CPU time
 * kept less than a tenth of theirs: the total may be right and the shape
 * not. After ms__timeline_rows. */
int ms__timeline_uneven(const ms__timeline *tl);

/* The share of a recording the recorder's own figures may take out before
 * the timeline they give is only an estimate worth a warning: 2 %. */
#define MS__TL_ESTIMATED_SHARE 0.02
/* Whether t's timeline rests on the recorder's own figures (no reference
 * runs) and they took MS__TL_ESTIMATED_SHARE of the recording out or more;
 * then buf (when cap > 0) says so, how much, and what to do, in one
 * sentence for a warning (memstub gen, replay, record). After
 * ms__timeline_rows. */
int ms__timeline_estimated(const ms__timeline *tl, char *buf, size_t cap);
/* The same sentence for own_ns of the recorder's cost by its own figures
 * in a recording of recorded_ns (memstub record's summary). */
void ms__timeline_estimated_say(int64_t own_ns, int64_t recorded_ns, char *buf, size_t cap);

/* A copy of t on its target timeline (time_ns and cpu_ns from
 * ms__timeline_rows, everything else as it is), into *out; *out NULL when
 * the timeline is t's own (MS__TL_RECORDED). tl filled. 0, -EINVAL as
 * above, or -ENOMEM. */
int ms__timeline_trace(const memstub_trace *t, memstub_trace **out, ms__timeline *tl,
                       memstub_error *err);

/* A clock at the calls as MS__TL_REF_CURVE holds it (v: "CALLS SPAN
 * STRIDE W0 W1 ...", the recorder's and the trace's form), checked (counts,
 * times in order and within the span, no more points than the calls): into
 * *calls, *span, *stride and, when w is not NULL, a new array *w of *nw
 * times (the caller frees it). 0, -EINVAL naming the field (err may be
 * NULL), or -ENOMEM. */
int ms__timeline_curve_parse(const char *v, int64_t *calls, int64_t *span, int64_t *stride,
                             int64_t **w, int64_t *nw, memstub_error *err);

#endif
