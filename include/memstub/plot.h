/* memstub/plot.h: original against replayed curves, drawn by gnuplot
 * (docs/compare-and-plot.md).
 *
 * The figure is the paper's Figure 3 (Trapp, Meyer & Facchi 2011): stack and
 * heap in use over time (us), the original trace against each measured
 * replay, plus a panel of the per-point time error (replayed - original).
 * memstub writes the (reduced) data to temporary files and runs the script
 * plots/figure3.gp with `gnuplot -c`; the output appears atomically. */
#ifndef MEMSTUB_PLOT_H
#define MEMSTUB_PLOT_H

#include <stddef.h>

#include "memstub/error.h"
#include "memstub/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct memstub_plot_options {
  const char *title;    /* NULL: the original's label */
  int width, height;    /* pixels (PDF: 100 per inch); 1200 x 900 */
  const char *gnuplot;  /* NULL: $MEMSTUB_GNUPLOT, else "gnuplot" on PATH */
  const char *script;   /* NULL: plots/figure3.gp under memstub's data directory */
  const char *tmpdir;   /* NULL: $TMPDIR, else /tmp */
  /* Draw ORIGINAL with its times as recorded. By default a trace of memstub
   * record is drawn on its stub's timeline, the recorder's cost out, with
   * " on the stub's timeline" after its label (memstub_compare_target). */
  int recorded_times;
} memstub_plot_options;

/* The defaults above. */
void memstub_plot_options_init(memstub_plot_options *o);

/* Reduce a series for drawing on `columns` pixel columns spanning [x0, x1]:
 * in each column keep the first, the last, the lowest and the highest point
 * (the first of equal ones), so peaks never vanish and a step curve keeps its
 * levels. x must not decrease. Writes the kept indices, increasing, to keep
 * (room for n) and returns how many; a column of at most 4 points keeps them
 * all. Points outside [x0, x1] count in the first or last column. */
size_t memstub_plot_reduce(const double *x, const double *y, size_t n, double x0, double x1,
                           size_t columns, size_t *keep);

/* Draw the figure to out, whose extension picks the format: .png, .svg or
 * .pdf. orig is the original trace; repl[0..nrepl) are replayed traces (with
 * a `point` column) drawn against it, nrepl may be 0. Labels name the curves
 * in the key (NULL: "original", "replay N"). 0, or a negative errno with err set: -EINVAL for a bad format,
 * a replayed trace that does not fit the original (as memstub_compare_traces)
 * or bad options; -ENOENT when gnuplot or the script cannot be found; -EIO
 * when gnuplot fails (its message is quoted). Nothing appears at out on
 * failure, and the temporary files are removed either way. */
int memstub_plot_figure(const char *out, const memstub_trace *orig, const char *orig_label,
                        size_t nrepl, const memstub_trace *const *repl,
                        const char *const *repl_labels, const memstub_plot_options *o,
                        memstub_error *err);

/* Traces with threads (docs/formats.md, "Threads"): memstub_plot_figure for
 * each thread's rows, to out with ".threadN" before its extension, and for
 * the process total to out itself: stack and heap the sum of each thread's
 * latest, at every row (a replay's rows keep pointing at the original's).
 * Fails as memstub_plot_figure, or -EINVAL when orig has no thread column;
 * on failure figures already drawn stay. */
int memstub_plot_threads(const char *out, const memstub_trace *orig, const char *orig_label,
                         size_t nrepl, const memstub_trace *const *repl,
                         const char *const *repl_labels, const memstub_plot_options *o,
                         memstub_error *err);

#ifdef __cplusplus
}
#endif
#endif
