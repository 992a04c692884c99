/* cli/sweep.h: memstub sweep (docs/sweep.md), between its files: the
 * points and runs (cmd_sweep.c), running and measuring a host
 * (sweep_run.c), the results, summary (sweep_out.c) and plots
 * (sweep_plot.c); on many machines, the plan and result files
 * (sweep_plan.c), the job list and one run of it (sweep_jobs.c) and the
 * merge of results (sweep_collect.c). */
#ifndef MEMSTUB_CLI_SWEEP_H
#define MEMSTUB_CLI_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memstub/error.h"
#include "ms_common.h"

// The what-if scales a sweep varies, in the order of MS_CLI_WHATIF's keys.
enum { MS_SWEEP_SCALES = 7 };
extern const char *const ms_sweep_scale_names[MS_SWEEP_SCALES];  // "time", "heap", ...

// The figures measured from outside every run, before the host's own metrics.
enum { MS_SWEEP_WALL, MS_SWEEP_CPU, MS_SWEEP_USER, MS_SWEEP_SYS, MS_SWEEP_MINFLT,
       MS_SWEEP_MAJFLT, MS_SWEEP_PEAK_ANON, MS_SWEEP_BUILTIN };
extern const char *const ms_sweep_builtin_names[MS_SWEEP_BUILTIN];  // "wall_ns", ...

typedef struct ms_sweep_point {
  double scale[MS_SWEEP_SCALES];  // as the stub was made (rss and mapped: as applied)
  char *data;                     // its data file (in the staging directory)
  char *data_name;                // its name in DIR ("data/p3.msd")
} ms_sweep_point;

// A host's `metric NAME VALUE` line.
typedef struct ms_sweep_metric {
  char *name;
  double value;
} ms_sweep_metric;

typedef struct ms_sweep_run {
  size_t point, repeat, order;  // order: its place in the sweep's sequence, from 0
  int64_t fig[MS_SWEEP_BUILTIN];
  int64_t polls;                // RssAnon samples taken
  ms_sweep_metric *m;           // the host's own figures, in its order
  size_t nm;
  char *host;                   // the machine it ran on (collected runs; NULL: the sweep's)
} ms_sweep_run;

typedef struct ms_sweep {
  const char *trace, *stub, *dir, *profile_path;
  char profile_id[24];  // "" or the profile file's FNV-1a 64 in hex
  char host[256];       // the machine's name (uname's nodename)
  char var[128];        // MEMSTUB_DATA_<stub>
  char *const *argv;    // the host command
  size_t repeat, jobs;
  int64_t poll_ns;
  int swept[MS_SWEEP_SCALES];  // the scales given more than one value
  ms_sweep_point *pts;  // [0]: the baseline, every scale 1
  size_t npts;
  ms_sweep_run *runs;  // in the order they ran (with -j: were started)
  size_t nruns;
  char **metrics;  // every metric name the runs printed, by first appearance
  size_t nmetrics;
  char *plan_text;   // a plan read (ms_sweep_plan_read): the strings above point into it
  char **plan_argv;  // its host command
} ms_sweep;

// What ms_sweep holds (its points' paths, runs, metrics, a plan read).
void ms_sweep_free(ms_sweep *s);

/* DIR made (when absent: *made) or found empty, and a staging directory
 * inside it (with its data/) into *stage (malloc'd). 0, or -errno with err
 * naming DIR. */
int ms_sweep_open_dir(const char *dir, int *made, char **stage, memstub_error *err);
/* Everything staged moved into dir, a rename each (dir held nothing else).
 * 0, or -errno with err. */
int ms_sweep_commit_dir(const char *stage, const char *dir, memstub_error *err);

/* Run r of s once (s->nruns and s->pts set; r's point, repeat and order),
 * measured into r. 0, or -errno with err naming the run and why it failed. */
int ms_sweep_run_one(const ms_sweep *s, ms_sweep_run *r, memstub_error *err);

/* ---- on many machines (docs/sweep.md, "On many machines") ---- */

/* The plan, DIR/sweep.plan: what a run of the job list and the collect
 * need (trace, stub, variable, profile, jobs, repeat, poll, the swept scales,
 * the host command, the points and their data files), written into path
 * (atomically). 0, or -errno with err. */
int ms_sweep_plan_write(const ms_sweep *s, const char *path, memstub_error *err);
/* DIR/sweep.plan read into s (zeroed before; free with ms_sweep_free), its
 * points' data files DIR/data/pN.msd. 0, or -errno with err "FILE:LINE:
 * field N (KEY): ..." for a damaged one. */
int ms_sweep_plan_read(const char *dir, ms_sweep *s, memstub_error *err);
/* Run r's result file (a run of the job list: its order, point, repeat,
 * the machine, the profile's identity, the figures, the metrics) written
 * into path (atomically). 0, or -errno with err. */
int ms_sweep_result_write(const ms_sweep *s, const ms_sweep_run *r, const char *path,
                          memstub_error *err);
/* The result file at path read into r (zeroed before) and checked against
 * s's plan (its order in 1..runs, with that order's point and repeat; the
 * plan's profile). 0, or -errno with err "FILE:LINE: field N (KEY): ...". */
int ms_sweep_result_read(const ms_sweep *s, const char *path, ms_sweep_run *r, memstub_error *err);

/* The plan into stage/sweep.plan, an empty stage/results/, and the job list
 * of s written into af opened for file (not committed: the caller commits
 * or aborts it): one line per run, in the sweep's order, `MEMSTUB sweep
 * --run-one DIR ORDER` (s->dir as given). 0 (af open), or -errno with err
 * (af released). */
int ms_sweep_jobs_write(const ms_sweep *s, const char *stage, const char *file, ms__afile *af,
                        memstub_error *err);
/* memstub sweep --run-one DIR ORDER (argv[0] "sweep"): one run of a job
 * list, its result into DIR/results/rORDER.run. The exit status. */
int ms_sweep_run_one_cmd(int argc, char **argv);
/* memstub sweep --collect DIR... -o OUT [--no-plots]: the results of the
 * DIRs' runs merged into OUT as a local sweep writes them. parse: the
 * options (argv as `memstub sweep` got them) into *out and *plots, and the
 * first DIR's index into *first (the DIRs run to argc): 0, or -1 with the
 * exit status in *status. The exit status. */
typedef int ms_sweep_collect_parse(int argc, char **argv, const char **out, int *plots,
                                   int *first, int *status);
int ms_sweep_collect_cmd(int argc, char **argv, ms_sweep_collect_parse *parse);

/* The outputs of s's runs (measured, or collected) into stage: the metrics
 * gathered (a warning for each missing from some runs), results.csv,
 * results.json, the summaries and (plots) the plots. 0, or -errno with err. */
int ms_sweep_write_all(ms_sweep *s, const char *stage, int plots, memstub_error *err);

/* Run every run of s (s->runs filled with point, repeat, order), s->jobs at
 * a time, each with its point's data file in s->var, measuring it into its
 * run. progress: draw it on stderr. 0, or -errno with err naming the run
 * (its point and repeat) that failed, and why ("'host' failed: exit status
 * 3", its last lines of stderr). */
int ms_sweep_run_all(ms_sweep *s, int progress, memstub_error *err);

/* The metric names of every run gathered into s->metrics. 0 or -ENOMEM. */
int ms_sweep_gather_metrics(ms_sweep *s, memstub_error *err);
/* Figure f of run r (f < MS_SWEEP_BUILTIN: measured; beyond: metric
 * f - MS_SWEEP_BUILTIN): 1 with *v, 0 when the run has no such figure. */
int ms_sweep_figure(const ms_sweep *s, const ms_sweep_run *r, size_t f, double *v);
// The name of figure f ("wall_ns", "metric.NAME" into buf for a metric).
const char *ms_sweep_figure_name(const ms_sweep *s, size_t f, char *buf, size_t cap);

/* results.csv, results.json, summary.md and summary.txt written into dir
 * (atomically each). 0, or -errno with err naming the file. */
int ms_sweep_write_results(const ms_sweep *s, const char *dir, memstub_error *err);
/* The summary as text (markdown 0) or markdown (1) into f. */
void ms_sweep_summary(const ms_sweep *s, int markdown, FILE *f);

/* Whether gnuplot can be run: 0, or -errno with err saying why. */
int ms_sweep_plot_check(memstub_error *err);
/* One PNG per figure and varied scale, plot-FIGURE-SCALE.png, into dir:
 * the medians against the scale, one line per combination of the other
 * scales, bars from the least to the largest run; one gnuplot draws them
 * all. 0, or -errno with err. */
int ms_sweep_write_plots(const ms_sweep *s, const char *dir, memstub_error *err);

/* Whether figure f is drawn (user_ns, sys_ns and major_faults are in the
 * table, cpu_ns and minor_faults drawn). */
int ms_sweep_figure_drawn(size_t f);

/* Median, least and largest of v[0..n) (sorted in place); n > 0. */
void ms_sweep_stats(double *v, size_t n, double *median, double *lo, double *hi);

#endif
