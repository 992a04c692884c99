// memstub report: the curves' data for the page's script (cli/report.js),
// and each trace's figures for its header, from the same series.
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "internal.h"  // plots/: the curves a trace has
#include "memstub/plot.h"
#include "memstub/work.h"
#include "report.h"

static const char *const titles[MS_REPORT_PANELS] = {
    "stack in use", "heap in use", "resident memory (rss_bytes)", "mapped memory (mapped_bytes)",
    "CPU time used so far (cpu_ns)",
    "allocator calls made so far (malloc, calloc, realloc, memalign)"};
static const char *const ids[MS_REPORT_PANELS] = {"stack", "heap", "rss", "mapped", "cpu", "calls"};
static const char *const column_names[MS_REPORT_PANELS] = {"stack_bytes", "heap_bytes", "rss_bytes",
                                                      "mapped_bytes", "cpu_ns", "calls_*"};
// How the script reads a panel's values: bytes, ns or a count.
static const char *const units[MS_REPORT_PANELS] = {"B", "B", "B", "B", "ns", ""};

const char *ms_report_panel_title(int p) { return titles[p]; }
const char *ms_report_panel_id(int p) { return ids[p]; }
const char *ms_report_panel_column(int p) { return column_names[p]; }

/* The allocating calls' columns of t (every kind but free) into col, -1
 * where t lacks one; whether t has any. */
static int call_columns(const memstub_trace *t, int col[MEMSTUB_WORK_CALLS]) {
  int any = 0;
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++) {
    col[k] = k / MEMSTUB_WORK_CLASSES == MEMSTUB_CALL_FREE
                 ? -1
                 : memstub_trace_column(t, ms__plot_work_calls[k]);
    any |= col[k] >= 0;
  }
  return any;
}

/* Panel p's series of t into x (ns) and y (room for t->n each): the memory
 * columns as they are (rows with an unknown value, -1, left out), the CPU
 * time since the first row that knows it, the allocating calls summed from
 * the first row. The number of points; 0 when t has no such column. */
static size_t series(const memstub_trace *t, int p, double *x, double *y) {
  size_t n = 0;
  if (p <= MS_REPORT_MAPPED) {
    if (!ms__plot_has_curve(t, p)) return 0;
    int col = ms__plot_curve_column(t, p);
    for (size_t i = 0; i < t->n; i++) {
      int64_t v = ms__plot_curve_value(t, i, p, col);
      if (v < 0) continue;
      x[n] = (double)t->pts[i].time_ns, y[n++] = (double)v;
    }
    return n;
  }
  int cc = memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN), kc[MEMSTUB_WORK_CALLS];
  if (p == MS_REPORT_CPU && cc < 0) return 0;
  if (p == MS_REPORT_CALLS && !call_columns(t, kc)) return 0;
  double sum = 0, base = -1;
  for (size_t i = 0; i < t->n; i++) {
    const int64_t *e = memstub_trace_extra_row(t, i);
    if (p == MS_REPORT_CPU) {
      if (e[cc] < 0) continue;
      if (base < 0) base = (double)e[cc];
      sum = (double)e[cc] - base;
    } else {
      for (int k = 0; i > 0 && k < MEMSTUB_WORK_CALLS; k++)
        if (kc[k] >= 0 && e[kc[k]] > 0) sum += (double)e[kc[k]];
    }
    x[n] = (double)t->pts[i].time_ns, y[n++] = sum;
  }
  return n;
}

int ms_report_figures_of(const memstub_trace *t, ms_report_figures *fig) {
  *fig = (ms_report_figures){0};
  if (t->n) fig->duration_ns = t->pts[t->n - 1].time_ns - t->pts[0].time_ns;
  double *x = malloc((t->n + 1) * sizeof *x), *y = malloc((t->n + 1) * sizeof *y);
  for (int p = 0; x && y && p < MS_REPORT_PANELS; p++) {
    size_t n = series(t, p, x, y);
    fig->known[p] = n > 0;
    for (size_t i = 0; i < n; i++)
      if (y[i] > (double)fig->peak[p]) fig->peak[p] = (int64_t)y[i];
  }
  int rc = x && y ? 0 : -ENOMEM;
  free(x);
  free(y);
  return rc;
}

// "[v0, v1, ...]" of the kept points of v.
static void numbers(FILE *f, const double *v, const size_t *keep, size_t n) {
  fputc('[', f);
  for (size_t i = 0; i < n; i++) fprintf(f, "%s%.0f", i ? "," : "", v[keep[i]]);
  fputc(']', f);
}

int ms_report_write_curves(FILE *f, const ms_report *r, size_t columns) {
  size_t most = 1;
  double x0 = INFINITY, x1 = -INFINITY;
  for (size_t k = 0; k < r->n; k++) {
    const memstub_trace *t = r->tr[k].t;
    if (t->n > most) most = t->n;
    if (!t->n) continue;
    x0 = fmin(x0, (double)t->pts[0].time_ns);
    x1 = fmax(x1, (double)t->pts[t->n - 1].time_ns);
  }
  if (!(x1 > x0)) x0 = isfinite(x0) ? x0 : 0, x1 = x0 + 1;
  double *x = malloc(most * sizeof *x), *y = malloc(most * sizeof *y);
  size_t *keep = malloc(most * sizeof *keep);
  int rc = x && y && keep ? 0 : -ENOMEM;
  fprintf(f, "var MS_DATA = {\"x0\": %.0f, \"x1\": %.0f, \"panels\": [", x0, x1);
  for (int p = 0, np = 0; rc == 0 && p < MS_REPORT_PANELS; p++) {
    int any = 0;
    for (size_t k = 0; k < r->n; k++) any |= r->tr[k].fig.known[p];
    if (!any) continue;
    fprintf(f, "%s\n{\"id\": \"%s\", \"unit\": \"%s\", \"step\": %d, \"series\": [", np++ ? "," : "",
            ids[p], units[p], p <= MS_REPORT_MAPPED);
    for (size_t k = 0, ns = 0; k < r->n; k++) {
      size_t n = series(r->tr[k].t, p, x, y);
      if (!n) continue;
      size_t m = memstub_plot_reduce(x, y, n, x0, x1, columns, keep);
      fprintf(f, "%s\n {\"trace\": %zu, \"x\": ", ns++ ? "," : "", k);
      numbers(f, x, keep, m);
      fputs(", \"y\": ", f);
      numbers(f, y, keep, m);
      fputc('}', f);
    }
    fputs("]}", f);
  }
  fputs("]};\n", f);
  free(x);
  free(y);
  free(keep);
  return rc;
}
