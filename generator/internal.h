/* generator/internal.h: the generator's private pieces. */
#ifndef MEMSTUB_GENERATOR_INTERNAL_H
#define MEMSTUB_GENERATOR_INTERNAL_H

#include "ms_common.h"
#include "memstub/calib.h"
#include "memstub/gen.h"
#include "timeline.h"
#include "whatif.h"

/* The trace after transforms, relative to its bases: times from row 0, stack
 * and heap above their minima, so every value is >= 0. */
typedef struct ms__targets {
  size_t n;
  int64_t *t, *s, *h;  // [n]
  int64_t time0, stack_base, heap_base;
} ms__targets;

/* The resident targets g->rss[] lowered by the profile's resident overhead
 * (what a replay keeps resident above its target: the partly written pages),
 * never below 0; -1 (no target) stays. compensate.c. */
void ms__gen_compensate_rss(memstub_gen *g, const struct memstub_profile *p);

/* rss_bytes of t's rows (rss[t->n], rebased) where a heap fall's reading is
 * stale: lowered from the fall on when the next reading, at most
 * MS__GEN_RSS_STALE_NS later, confirms it (points.c). */
#define MS__GEN_RSS_STALE_NS (INT64_C(10) * 1000 * 1000)
void ms__gen_rss_settle(const memstub_trace *t, int64_t *rss);
// Append one point to g (points.c). 0 or -ENOMEM.
int ms__gen_append(memstub_gen *g, int64_t time, int64_t stack, int64_t heap, int64_t point);

/* Overhead-aware stack normalisation (calibration): the replay measures
 * sum(frame + a) over the open frames, plus offset once one is open. */
typedef struct ms__stack_comp {
  int64_t frame, offset;  // F and O, bytes (F = O = 0: plain normalisation)
  int64_t reduced;        // pushes made F smaller
  int64_t replaced;       // frames popped and pushed again larger
  int64_t unmet;          // rows that cannot be met
  int64_t unmet_max;      // largest |error| left at such a row, bytes
} ms__stack_comp;

/* Normalise the targets into LIFO points appended to g (normalize.c):
 * row 0 becomes zero-delay "entry" points only if it is above the bases;
 * every later row i becomes one or more points mapped to i: the delay on the
 * first, the heap change on the last, and between them the pops and the push
 * that take the open frames from the previous total to the new one. sc NULL
 * for the plain normalisation; else overhead-aware, with counts in sc.
 * 0 or -ENOMEM. */
int ms__gen_normalize(memstub_gen *g, const ms__targets *tg, ms__stack_comp *sc);

/* Apply the calibration profile o->profile (compensate.c): called with the
 * targets before normalisation (stage 0: checks the profile against this
 * host, changes the heap targets, fills sc for the normaliser) and with the
 * points after it (stage 1: the delays). 0 or -EINVAL with err set. */
int ms__gen_compensate(memstub_gen *g, ms__targets *tg, const memstub_gen_options *o, int stage,
                       ms__stack_comp *sc, memstub_error *err);

/* How much of a stub's predicted work rests on each figure of its profile
 * (compensate.c records it; unsure.c reports the figures that are unsure):
 * each use weighted by its multiplier (a line's per-fault figure: the
 * faults; usleep's overshoot per ms: the ms slept). w: the work figures of
 * the hot [0] and cold [1] sets, by their offset in memstub_calib_costs in
 * doubles. */
#define MS__FIG_SLOTS (sizeof(memstub_calib_costs) / sizeof(double))
typedef struct ms__fig_uses {
  double w[2][MS__FIG_SLOTS];
  double wait_late, measure, sleep_base, sleep_per_ms;
} ms__fig_uses;

/* g->comp's uncertainty from the profile's intervals and the uses u:
 * time_cost_ci_ns, and the unsure figures (unsure_figures, unsure). */
void ms__gen_unsure(memstub_gen *g, const struct memstub_profile *p, const ms__fig_uses *u);

/* One line on what calibration changed (the header's "compensation" line and
 * memstub gen's note): "none" when timing is MEMSTUB_TIMING_NONE. */
void ms__gen_comp_summary(const memstub_gen_comp *c, int timing, char *buf, size_t cap);
/* The timing g was compensated for: its stub's timing when a profile was
 * applied, else MEMSTUB_TIMING_NONE (memstub gen --timing without
 * --calibration only says which mode the stub replays by default). */
int ms__gen_comp_timing(const memstub_gen *g);

/* The trace's work columns (work.c), per row: times after the recorder's
 * cost is taken out and --cpu-scale, the CPU ns of the row's interval (row 0:
 * 0; --cpu-scale applied, --time-scale not yet) and its calls and bytes
 * (--churn-scale applied). present 0 (and no arrays) without the columns. */
typedef struct ms__work {
  int present;
  int has_bytes;  // the trace has churn_bytes
  size_t n;
  int64_t *times, *cpu, *calls, *bytes;  // [n], [n], [n * MEMSTUB_WORK_CALLS], [n]
  int64_t overhead_ns;                   // the recorder's cost taken out in all
  ms__timeline timeline;                 // how (traces/timeline.h)
} ms__work;

// Read t's work columns into w. 0, -EINVAL (a bad value: err names the row)
// or -ENOMEM.
int ms__gen_work_read(const memstub_trace *t, const memstub_gen_options *o, ms__work *w,
                      memstub_error *err);
/* Give g's final points their work (layout 3): each row's first point gets
 * the row's CPU time (at most its delay) and calls. 0 or -ENOMEM. */
int ms__gen_work_points(memstub_gen *g, const ms__work *w, const memstub_gen_options *o,
                        memstub_error *err);
void ms__gen_work_free(ms__work *w);
/* g's work model (g->work_model, g->has_model) for a stub with work: t's
 * work_mem_share metadata, o's profile's loop rate and touch costs. 0, or
 * -EINVAL with err naming the metadata key when the share is no share. */
int ms__gen_work_model(memstub_gen *g, const memstub_trace *t, const memstub_gen_options *o,
                       memstub_error *err);
/* The descriptor written for g (a header's or a data file's): g->stub, of
 * layout 5 with the work model when g has one. */
void ms__gen_stub_out(const memstub_gen *g, struct memstub_stub *s);

/* ---- the what-if scales (whatif.c) --------------------------------------- */

/* The scales o asks for as applied (traces/whatif.h): rss and mapped
 * resolved (MEMSTUB_GEN_SCALE_HEAP: the heap's). */
void ms__gen_scales(const memstub_gen_options *o, ms__whatif *w);
/* g->whatif's figures from the trace t and its targets tg (after the
 * scales, before calibration), all but those of the finished stub. */
void ms__gen_whatif_before(memstub_gen *g, const memstub_trace *t, const memstub_gen_options *o,
                           const ms__work *wk, const ms__targets *tg);
// The rest, from the finished stub: the resident peak and the CPU time.
void ms__gen_whatif_after(memstub_gen *g);

/* Derive the descriptor's figures (peaks, depth, duration, counts) from the
 * points (points.c). */
void ms__gen_finish(memstub_gen *g, const ms__targets *tg);

/* ---- emitting a header (emit.c, emit_data.c, emit_threads.c) ------------ */

// Characters that stand for themselves in C strings, comments and m4 input.
int ms__gen_is_safe(unsigned char c);

/* One header's point data, formatted in C into the files of a private
 * temporary directory (emit_data.c), which the template copies in unexpanded
 * (m4_undivert), and m4's input beside them (emit.c). */
enum { MS__GEN_DATA_INPUT = 8, MS__GEN_DATA_FILES = 9 };
typedef struct ms__gen_data {
  int format;          // MEMSTUB_GEN_FORMAT_LISTING or _COMPACT
  char dir[4096];      // the directory, "" until made
  char file[MS__GEN_DATA_FILES][4200];  // [0] use or data, [1] map, [2] mapped, [3] rss,
                                        // [4..7] work, [8] m4's input; "" until made
  int64_t bytes;       // point data written in all
  const struct memstub_release *release;  // gen --hold: the release schedule, or NULL
} ms__gen_data;

/* Make d's directory ($TMPDIR, else /tmp) and format g's points into its
 * files in d->format. 0 or a negative errno with err set; the files made so
 * far stay for ms__gen_data_remove. */
int ms__gen_data_write(const memstub_gen *g, const memstub_gen_emit_options *o, ms__gen_data *d,
                       memstub_error *err);
// Remove d's files and directory (whatever exists of them).
void ms__gen_data_remove(ms__gen_data *d);

/* Where a header is written: straight into the atomic file of a regular
 * output; for standard output or a device (/dev/full, a FIFO) into a
 * temporary file first, copied out once m4 has succeeded, so that nothing
 * is printed for a failure and a write error names the output. */
typedef struct ms__gen_out {
  const char *path;  // as given ("-": standard output)
  ms__afile af;      // a regular file (tmp set) or a device (path set)
  FILE *tmp;         // the temporary file, or NULL
  FILE *f;           // what to write to: af.f or tmp
} ms__gen_out;

// Open path for a header. 0 or a negative errno with err set.
int ms__gen_out_open(ms__gen_out *o, const char *path, memstub_error *err);
/* Finish o: with rc < 0 drop everything (nothing appears at path), else
 * put the header in place (copied out, or committed), *sync_ns (may be NULL)
 * the time that took. Returns rc, or the failure to put it in place. */
int ms__gen_out_close(ms__gen_out *o, int rc, int64_t *sync_ns, memstub_error *err);

/* Run GNU m4 ($MEMSTUB_M4, else m4) on the template, g's definitions under
 * the stub name name (g's, or a thread's NAME_tT) and d's files (m4's input
 * written beside them), appending the header to out. Within a time limit
 * (ms__spawn_limit). 0 or a negative errno with err naming the output (m4
 * missing, failed with its first message, or killed for its limit). */
int ms__gen_m4(const memstub_gen *g, const char *name, ms__gen_data *d, ms__gen_out *out,
               memstub_error *err);

#endif
