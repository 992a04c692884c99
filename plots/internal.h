/* plots/internal.h: what the figure's files share (internal): the curves a
 * trace has, the axes' units and tics for people, and the variables file of
 * figure3.gp (vars.c). */
#ifndef MEMSTUB_PLOTS_INTERNAL_H
#define MEMSTUB_PLOTS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memstub/error.h"
#include "memstub/trace.h"
#include "memstub/work.h"

/* ---- curves (curves.c) ------------------------------------------------------ */

// The memory curves: stack_bytes, heap_bytes, rss_bytes, mapped_bytes.
enum { MS__C_STACK, MS__C_HEAP, MS__C_RSS, MS__C_MAPPED };

/* The extra column of curve c (MS__C_RSS, MS__C_MAPPED) in t, or -1 when t
 * lacks it (MS__C_STACK and MS__C_HEAP are never extra: -1). */
int ms__plot_curve_column(const memstub_trace *t, int c);

/* Whether t has curve c: rss and mapped when it has their column, stack and
 * heap unless its metadata says they are unknown (docs/formats.md: `# stack:
 * unknown ...`, the zeros then mean "not measured"). */
int ms__plot_has_curve(const memstub_trace *t, int c);

/* Row i's value of curve c in t, col its column (ms__plot_curve_column);
 * pre: t has the column for rss and mapped. */
int64_t ms__plot_curve_value(const memstub_trace *t, size_t i, int c, int col);

// Where a curve peaks: the time (us) of the first row of its maximum, and it.
typedef struct ms__plot_peak {
  double x;
  int64_t y;
} ms__plot_peak;

/* The peak of curve c in t; {first row's time, 0} when t lacks the curve.
 * pre: t->n > 0. */
ms__plot_peak ms__plot_find_peak(const memstub_trace *t, int c);

// The calls_* columns, by kind and size class.
extern const char *const ms__plot_work_calls[MEMSTUB_WORK_CALLS];

/* Whether t has the work columns: cpu_ns; churn_bytes or a calls_* column. */
int ms__plot_has_cpu(const memstub_trace *t);
int ms__plot_has_calls(const memstub_trace *t);

/* ---- axes for people (axis.c) ---------------------------------------------- */

/* An axis: values are divided by div and read in unit, with a tic every step
 * (in unit) labelled with `decimals` decimals: plain numbers (never "1e+06"),
 * all of one axis alike ("0.0 0.5 1.0", not "0 0.5 1"). */
typedef struct ms__plot_axis {
  double div;
  const char *unit;
  double step;
  int decimals;
} ms__plot_axis;

/* A memory axis from 0 to max bytes with about `ticks` intervals: B, KiB,
 * MiB, GiB or TiB, the largest in which max reads at least 1; whole bytes
 * in B. max 0 (or less) reads 0 to 1 B. */
ms__plot_axis ms__plot_axis_bytes(double max, int ticks);

/* A time axis over [lo, hi] microseconds with about `ticks` intervals: µs,
 * ms or s, the largest of which the larger of |lo| and |hi| is at least 2;
 * an empty span reads as one unit. */
ms__plot_axis ms__plot_axis_time(double lo, double hi, int ticks);

/* An axis of plain numbers (no unit, div 1), e.g. a percentage or a rate,
 * over [0, max] with about `ticks` intervals. */
ms__plot_axis ms__plot_axis_plain(double max, int ticks);

/* The axis' tic label format for gnuplot ("%.1f", with_unit: "%.1f MiB";
 * a '%' in the unit doubled) into buf; returns buf. */
const char *ms__plot_axis_format(const ms__plot_axis *a, int with_unit, char *buf, size_t cap);

/* ---- the variables of figure3.gp (vars.c) ----------------------------------- */

// What the figure draws, for vars.gp.
typedef struct ms__plot_vars {
  const char *title;        // may hold newlines: it is wrapped to `title_width` characters
  const char *orig_label;
  size_t nrepl;
  const char *const *labels;  // nrepl, NULL entries: "replay N"
  const memstub_trace *orig;
  const memstub_trace *const *repl;
  const int *has_error;     // nrepl: 1 when replay i has time errors to draw
  double x0, x1;            // the time axis, us
  int x_ticks;              // about how many tic intervals on it
  double err_lo, err_hi;    // the time errors' extent, us
  double cpu_max, calls_max;  // the work panel's largest CPU share (%) and calls per ms
  int text;                 // the text figure: units on every tic label
  int title_width;          // characters per title line
} ms__plot_vars;

/* Write vars.gp for figure3.gp at path: the title, labels, legend entries,
 * which panels and curves are drawn, each axis' unit and tics, and every
 * trace's peak of each memory panel. 0, or -errno with err set. */
int ms__plot_write_vars(const char *path, const ms__plot_vars *v, memstub_error *err);

/* s as a gnuplot single-quoted string ('' for ', control characters as
 * spaces). */
void ms__plot_gp_str(FILE *f, const char *s);

#endif
