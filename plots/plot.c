// The original-against-replayed figure: reduce the curves, write them to
// temporary data files and run plots/figure3.gp with gnuplot.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gnuplot.h"
#include "internal.h"
#include "memstub/compare.h"
#include "memstub/plot.h"
#include "memstub/work.h"
#include "ms_common.h"

void memstub_plot_options_init(memstub_plot_options *o) {
  memset(o, 0, sizeof *o);
  o->width = 1200;
  o->height = 900;
}

// ---- reduction --------------------------------------------------------------

static size_t column_of(double x, double x0, double span, size_t columns) {
  if (!(span > 0)) return 0;
  double t = (x - x0) / span * (double)columns;
  if (!(t > 0)) return 0;  // also NaN
  if (t >= (double)columns) return columns - 1;
  return (size_t)t;
}

size_t memstub_plot_reduce(const double *x, const double *y, size_t n, double x0, double x1,
                           size_t columns, size_t *keep) {
  if (columns == 0) columns = 1;
  double span = x1 - x0;
  size_t k = 0, i = 0;
  while (i < n) {
    size_t c = column_of(x[i], x0, span, columns);
    size_t lo = i, hi = i, j = i + 1;
    for (; j < n && column_of(x[j], x0, span, columns) == c; j++) {
      if (y[j] < y[lo]) lo = j;
      if (y[j] > y[hi]) hi = j;
    }
    if (j - i <= 4) {
      for (size_t m = i; m < j; m++) keep[k++] = m;
    } else {
      // first, lowest, highest, last: in order, without repeats.
      size_t idx[4] = {i, lo < hi ? lo : hi, lo < hi ? hi : lo, j - 1};
      for (size_t m = 0; m < 4; m++)
        if (k == 0 || keep[k - 1] < idx[m]) keep[k++] = idx[m];
    }
    i = j;
  }
  return k;
}

// ---- data files -------------------------------------------------------------

typedef struct series {
  double *x, *y;
  size_t *keep;
  size_t n;
} series;

static int series_alloc(series *s, size_t n) {
  s->x = malloc((n ? n : 1) * sizeof *s->x);
  s->y = malloc((n ? n : 1) * sizeof *s->y);
  s->keep = malloc((n ? n : 1) * sizeof *s->keep);
  s->n = n;
  return s->x && s->y && s->keep ? 0 : -ENOMEM;
}

static void series_free(series *s) {
  free(s->x);
  free(s->y);
  free(s->keep);
}

/* A data file for gnuplot at path, opened for writing into *f, and a series
 * of n points for its blocks: 0, or -errno with err set (nothing open). */
static int data_open(const char *path, size_t n, FILE **f, series *s, memstub_error *err) {
  if (series_alloc(s, n) < 0) {
    series_free(s);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  if (!(*f = fopen(path, "w"))) {
    int e = errno;
    series_free(s);
    return memstub_error_set(err, -e, "%s: %s", path, strerror(e));
  }
  return 0;
}

/* Close the data file f at path and free its series s (when given): 0, or
 * -EIO with err set when a write failed. */
static int data_close(FILE *f, const char *path, series *s, memstub_error *err) {
  if (s) series_free(s);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    return memstub_error_set(err, -EIO, "%s: write failed: %s", path, strerror(errno));
  return 0;
}

// One data block: the reduced points as "x y" lines, then two blank lines.
static void write_block(FILE *f, series *s, double x0, double x1, size_t columns, int y_int) {
  size_t k = memstub_plot_reduce(s->x, s->y, s->n, x0, x1, columns, s->keep);
  for (size_t i = 0; i < k; i++) {
    size_t j = s->keep[i];
    if (y_int)
      fprintf(f, "%.3f %.0f\n", s->x[j], s->y[j]);
    else
      fprintf(f, "%.3f %.3f\n", s->x[j], s->y[j]);
  }
  fputs("\n\n", f);
}

/* A trace's resident data file: block 0 rss_bytes, block 1 mapped_bytes (an
 * absent column's block is not plotted: figure3.gp is told which exist). */
static int write_resident(const char *path, const memstub_trace *t, double x0, double x1,
                          size_t columns, memstub_error *err) {
  FILE *f;
  series s;
  int rc = data_open(path, t->n, &f, &s, err);
  if (rc < 0) return rc;
  for (int c = MS__C_RSS; c <= MS__C_MAPPED; c++) {
    int col = ms__plot_curve_column(t, c);
    for (size_t i = 0; i < t->n; i++) {
      s.x[i] = (double)t->pts[i].time_ns / 1000.0;
      s.y[i] = col >= 0 ? (double)ms__plot_curve_value(t, i, c, col) : 0.0;
    }
    write_block(f, &s, x0, x1, columns, 1);
  }
  return data_close(f, path, &s, err);
}

/* The work (issue 14): a trace's data file, over bins of the time axis (one per two pixel
 * columns): block 0 the CPU time in each bin as a share of the bin (%),
 * block 1 the allocator calls (all kinds) per ms; each interval's CPU time
 * and calls spread over the bins it overlaps in proportion. Rates over bins,
 * not per row: rows are irregular, and a rate reads the same at any zoom.
 * An interval with an unknown CPU clock (-1) adds no CPU time. *cpu_max and
 * *calls_max are raised to the largest share and rate. */
static int write_work(const char *path, const memstub_trace *t, double x0, double x1,
                      size_t columns, double *cpu_max, double *calls_max, memstub_error *err) {
  size_t nb = columns / 2 > 1 ? columns / 2 : 1;
  double *cpu = calloc(nb + 1, sizeof *cpu), *calls = calloc(nb + 1, sizeof *calls);
  FILE *f = cpu && calls ? fopen(path, "w") : NULL;
  if (!f) {
    int e = cpu && calls ? errno : ENOMEM;
    free(cpu);
    free(calls);
    return memstub_error_set(err, -e, "%s: %s", path, strerror(e));
  }
  int cc = memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN), kc[MEMSTUB_WORK_CALLS];
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++) kc[k] = memstub_trace_column(t, ms__plot_work_calls[k]);
  double w = (x1 - x0) / (double)nb;  // us
  for (size_t i = 1; i < t->n; i++) {
    const int64_t *e = memstub_trace_extra_row(t, i);
    double v[2] = {0, 0};
    if (cc >= 0) {
      int64_t c0 = memstub_trace_extra_row(t, i - 1)[cc];
      if (c0 >= 0 && e[cc] >= c0) v[0] = (double)(e[cc] - c0);
    }
    for (int k = 0; k < MEMSTUB_WORK_CALLS; k++)
      if (kc[k] >= 0 && e[kc[k]] > 0) v[1] += (double)e[kc[k]];
    // The interval's work spread over the bins it overlaps, in proportion.
    double a = (double)t->pts[i - 1].time_ns / 1000.0, z = (double)t->pts[i].time_ns / 1000.0;
    if (z > x1) z = x1;
    if (a < x0) a = x0;
    if (z < a) continue;
    size_t ba = (size_t)((a - x0) / w), bz = (size_t)((z - x0) / w);
    if (bz >= nb) bz = nb - 1;
    if (ba > bz) ba = bz;
    for (size_t b = ba; b <= bz; b++) {
      double lo = fmax(a, x0 + (double)b * w), hi = fmin(z, x0 + (double)(b + 1) * w);
      double share = z > a ? (hi - lo) / (z - a) : 1.0;
      if (share <= 0) continue;
      cpu[b] += v[0] * share;
      calls[b] += v[1] * share;
    }
  }
  // Steps: each bin's value from its start, the last repeated at the axis' end.
  for (size_t b = 0; b < nb; b++) {
    cpu[b] = 100.0 * cpu[b] / (w * 1000.0), calls[b] /= w / 1000.0;
    *cpu_max = fmax(*cpu_max, cpu[b]), *calls_max = fmax(*calls_max, calls[b]);
  }
  for (size_t b = 0; b <= nb; b++) fprintf(f, "%.3f %.6g\n", x0 + (double)b * w, cpu[b < nb ? b : nb - 1]);
  fputs("\n\n", f);
  for (size_t b = 0; b <= nb; b++) fprintf(f, "%.3f %.6g\n", x0 + (double)b * w, calls[b < nb ? b : nb - 1]);
  free(cpu);
  free(calls);
  return data_close(f, path, NULL, err);
}

/* A trace's data file: block 0 stack, block 1 heap, and for a replay (match
 * given) block 2 the time error in us against the original's time, whose
 * extent widens [*lo, *hi] (*any set when it has one). */
static int write_data(const char *path, const memstub_trace *t, const memstub_trace *orig,
                      const int64_t *match, double x0, double x1, size_t columns, double *lo,
                      double *hi, int *any, memstub_error *err) {
  FILE *f;
  series s;
  int rc = data_open(path, t->n, &f, &s, err);
  if (rc < 0) return rc;
  for (size_t i = 0; i < t->n; i++) {
    s.x[i] = (double)t->pts[i].time_ns / 1000.0;
    s.y[i] = (double)t->pts[i].stack_bytes;
  }
  write_block(f, &s, x0, x1, columns, 1);
  for (size_t i = 0; i < t->n; i++) s.y[i] = (double)t->pts[i].heap_bytes;
  write_block(f, &s, x0, x1, columns, 1);
  if (match) {
    size_t m = 0;
    for (size_t i = 0; i < orig->n; i++) {
      if (match[i] < 0) continue;
      s.x[m] = (double)orig->pts[i].time_ns / 1000.0;
      s.y[m] = ((double)t->pts[match[i]].time_ns - (double)orig->pts[i].time_ns) / 1000.0;
      *lo = fmin(*lo, s.y[m]), *hi = fmax(*hi, s.y[m]);
      m++;
    }
    s.n = m;
    *any = m > 0;
    write_block(f, &s, x0, x1, columns, 0);
  }
  return data_close(f, path, &s, err);
}

/* The width of a text figure in characters: WIDTH / 10, but no wider than
 * the terminal ($COLUMNS, 80 when unset or not a number from 40 to 1000). */
static int text_columns(int width) {
  const char *c = getenv("COLUMNS");
  int64_t cols = 80;
  if (!c || ms__parse_i64(c, strlen(c), &cols) < 0 || cols < 40 || cols > 1000) cols = 80;
  return width / 10 < cols ? width / 10 : (int)cols;
}

// ---- the figure -------------------------------------------------------------

/* gnuplot's dumb terminal starts a page with a form feed, which a terminal
 * does not show as a column, pads every line with spaces and ends without a
 * newline: rewrite a regular file out without the form feed, the spaces at
 * the ends of lines and the blank lines at the end, each line ending in a
 * newline (atomically). 0, or -errno with err set (out then stays as gnuplot
 * wrote it). */
static int tidy_text(const char *out, memstub_error *err) {
  struct stat st;
  if (stat(out, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  char *buf;
  size_t len;
  int rc = ms__read_file(out, &buf, &len, err);
  if (rc < 0) return rc;
  ms__afile af;
  if ((rc = ms__afile_open(&af, out, err)) == 0) {
    size_t blank = 0;  // blank lines held back until a line with text
    for (size_t i = 0; i < len;) {
      size_t end = i;
      while (end < len && buf[end] != '\n') end++;
      size_t a = i, z = end;
      while (a < z && buf[a] == '\f') a++;
      while (z > a && (buf[z - 1] == ' ' || buf[z - 1] == '\r')) z--;
      if (z == a) {
        blank++;
      } else {
        for (; blank; blank--) fputc('\n', af.f);
        fwrite(buf + a, 1, z - a, af.f);
        fputc('\n', af.f);
      }
      i = end + 1;
    }
    rc = ms__afile_commit(&af, err);
  }
  free(buf);
  return rc;
}

// The name of a data file: replN + suffix, or orig + suffix for N = 0 (malloc'd).
static char *data_path(const ms__gnuplot *g, size_t n, const char *suffix) {
  char name[48];  // "repl" + 20 digits + "work.dat" + NUL
  if (n)
    snprintf(name, sizeof name, "repl%zu%s.dat", n, suffix);
  else
    snprintf(name, sizeof name, "orig%s.dat", suffix);
  return ms__gnuplot_path(g, name);
}

/* The data files of trace n (0 the original, N replay N; match its rows'
 * matches with the original's), widening the extents v holds. */
static int write_trace(const ms__gnuplot *g, size_t n, const memstub_trace *t,
                       const memstub_trace *orig, const int64_t *match, size_t columns,
                       ms__plot_vars *v, int *has_error, memstub_error *err) {
  char *p[3] = {data_path(g, n, ""), data_path(g, n, "res"), data_path(g, n, "work")};
  int rc = p[0] && p[1] && p[2] ? 0 : memstub_error_set(err, -ENOMEM, "out of memory");
  if (rc == 0)
    rc = write_data(p[0], t, orig, match, v->x0, v->x1, columns, &v->err_lo, &v->err_hi,
                    has_error, err);
  if (rc == 0) rc = write_resident(p[1], t, v->x0, v->x1, columns, err);
  if (rc == 0)
    rc = write_work(p[2], t, v->x0, v->x1, columns, &v->cpu_max, &v->calls_max, err);
  for (int i = 0; i < 3; i++) free(p[i]);
  return rc;
}

// Write the figure's data into the run's directory and draw it.
static int figure(ms__gnuplot *g, const char *out, const memstub_trace *orig,
                  const char *orig_label, size_t nrepl, const memstub_trace *const *repl,
                  const char *const *labels, memstub_compare_report *const *cmp,
                  const memstub_plot_options *o, memstub_error *err) {
  int text = strcmp(g->format, "txt") == 0, cols = text ? text_columns(o->width) : 0;
  ms__plot_vars v = {.title = o->title ? o->title : orig_label, .orig_label = orig_label,
                     .nrepl = nrepl, .labels = labels, .orig = orig, .repl = repl,
                     .text = text};
  // One time axis for every panel.
  v.x0 = (double)orig->pts[0].time_ns / 1000.0, v.x1 = (double)orig->pts[orig->n - 1].time_ns / 1000.0;
  for (size_t i = 0; i < nrepl; i++) {
    v.x0 = fmin(v.x0, (double)repl[i]->pts[0].time_ns / 1000.0);
    v.x1 = fmax(v.x1, (double)repl[i]->pts[repl[i]->n - 1].time_ns / 1000.0);
  }
  if (!(v.x1 > v.x0)) v.x1 = v.x0 + 1;
  // About one time tic per 10 characters or 120 pixels; a title line a little
  // narrower than the figure (its font is larger).
  v.x_ticks = text ? cols / 10 : o->width / 120;
  v.title_width = text ? cols - 2 : o->width / 9;
  v.err_lo = INFINITY, v.err_hi = -INFINITY;
  int *has_error = calloc(nrepl ? nrepl : 1, sizeof *has_error);
  v.has_error = has_error;
  int rc = has_error ? 0 : memstub_error_set(err, -ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && i <= nrepl; i++)
    rc = write_trace(g, i, i ? repl[i - 1] : orig, orig, i ? cmp[i - 1]->match : NULL,
                     (size_t)o->width, &v, i ? &has_error[i - 1] : &(int){0}, err);
  if (!(v.err_hi >= v.err_lo)) v.err_lo = v.err_hi = 0;
  char *path = rc == 0 ? ms__gnuplot_path(g, "vars.gp") : NULL;
  if (rc == 0)
    rc = path ? ms__plot_write_vars(path, &v, err) : memstub_error_set(err, -ENOMEM, "out of memory");
  free(path);
  free(has_error);
  if (rc < 0) return rc;
  // WIDTH and HEIGHT follow the format; text output is sized in characters.
  char ws[16], hs[16];
  snprintf(ws, sizeof ws, "%d", text ? cols : o->width);
  snprintf(hs, sizeof hs, "%d", text ? o->height / 20 : o->height);
  const char *const extra[] = {ws, hs, NULL};
  int rc2 = ms__gnuplot_render(g, out, extra, err);
  return rc2 == 0 && text ? tidy_text(out, err) : rc2;
}

int memstub_plot_figure(const char *out, const memstub_trace *orig, const char *orig_label,
                        size_t nrepl, const memstub_trace *const *repl,
                        const char *const *repl_labels, const memstub_plot_options *o,
                        memstub_error *err) {
  memstub_plot_options def;
  o = MS__OPTIONS_OR(o, def, memstub_plot_options_init);
  if (!orig_label) orig_label = "original";
  if (o->width < 100 || o->height < 100 || o->width > 20000 || o->height > 20000)
    return memstub_error_set(err, -EINVAL, "plot size %dx%d: width and height must be 100-20000",
                             o->width, o->height);
  if (orig->n == 0) return memstub_error_set(err, -EINVAL, "%s: empty trace", orig_label);
  ms__gnuplot g;
  int rc = ms__gnuplot_begin(&g, out, "figure3.gp", o->script, o->gnuplot, o->tmpdir, 1, err);
  if (rc < 0) return rc;

  // The original on its stub's timeline, as compare judges it.
  memstub_trace *target = NULL;
  char *label = NULL;
  if (!o->recorded_times && (rc = memstub_compare_target(orig, &target, NULL, err)) < 0) {
    memstub_error_prefix(err, orig_label);
    ms__gnuplot_end(&g);
    return rc;
  }
  if (target) {
    orig = target;
    if (!(label = ms__asprintf("%s on the stub's timeline", orig_label))) {
      memstub_trace_free(target);
      ms__gnuplot_end(&g);
      return memstub_error_set(err, -ENOMEM, "out of memory");
    }
    orig_label = label;
  }
  // Align every replay with the original, accepting partial ones.
  memstub_compare_options co;
  memstub_compare_options_init(&co);
  co.allow_partial = 1;
  co.recorded_times = 1;  // orig is on its target timeline already
  memstub_compare_report **cmp = calloc(nrepl ? nrepl : 1, sizeof *cmp);
  if (!cmp) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  for (size_t i = 0; i < nrepl && rc == 0; i++)
    rc = memstub_compare_traces(orig, orig_label, repl[i], repl_labels ? repl_labels[i] : NULL, &co,
                                &cmp[i], err);
  if (rc == 0) rc = figure(&g, out, orig, orig_label, nrepl, repl, repl_labels, cmp, o, err);
  ms__gnuplot_end(&g);
  for (size_t i = 0; cmp && i < nrepl; i++) memstub_compare_free(cmp[i]);
  free(cmp);
  memstub_trace_free(target);
  free(label);
  return rc;
}
