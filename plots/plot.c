// The original-against-replayed figure: reduce the curves, write them to
// temporary data files and run plots/figure3.gp with gnuplot.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gnuplot.h"
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

// The memory curves: 0 stack_bytes, 1 heap_bytes, 2 rss_bytes, 3 mapped_bytes.
enum { C_STACK, C_HEAP, C_RSS, C_MAPPED };

/* The extra column of curve c (C_RSS, C_MAPPED) in t, or -1 when t lacks it
 * (C_STACK and C_HEAP are never extra: -1). */
static int curve_column(const memstub_trace *t, int c) {
  return c == C_RSS ? memstub_trace_column(t, "rss_bytes")
         : c == C_MAPPED ? memstub_trace_column(t, "mapped_bytes")
                         : -1;
}

// Whether t has curve c.
static int has_curve(const memstub_trace *t, int c) { return c < C_RSS || curve_column(t, c) >= 0; }

// Row i's value of curve c in t (has_curve(t, c)).
static int64_t curve_value(const memstub_trace *t, size_t i, int c, int col) {
  return c == C_STACK ? t->pts[i].stack_bytes
         : c == C_HEAP ? t->pts[i].heap_bytes
                       : memstub_trace_extra_row(t, i)[col];
}

/* A trace's resident data file: block 0 rss_bytes, block 1 mapped_bytes (an
 * absent column's block is not plotted: figure3.gp is told which exist). */
static int write_resident(const char *path, const memstub_trace *t, double x0, double x1,
                          size_t columns, memstub_error *err) {
  FILE *f = fopen(path, "w");
  if (!f) return memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
  series s;
  if (series_alloc(&s, t->n) < 0) {
    series_free(&s);
    fclose(f);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  for (int c = C_RSS; c <= C_MAPPED; c++) {
    int col = curve_column(t, c);
    for (size_t i = 0; i < t->n; i++) {
      s.x[i] = (double)t->pts[i].time_ns / 1000.0;
      s.y[i] = col >= 0 ? (double)curve_value(t, i, c, col) : 0.0;
    }
    write_block(f, &s, x0, x1, columns, 1);
  }
  series_free(&s);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    return memstub_error_set(err, -EIO, "%s: write failed: %s", path, strerror(errno));
  return 0;
}

/* The work (issue 14): whether t has it (cpu_ns, churn_bytes or a calls_*
 * column), and its data file, over bins of the time axis (one per two pixel
 * columns): block 0 the CPU time in each bin as a share of the bin (%),
 * block 1 the allocator calls (all kinds) per ms; each interval's CPU time
 * and calls spread over the bins it overlaps in proportion. Rates over bins,
 * not per row: rows are irregular, and a rate reads the same at any zoom.
 * An interval with an unknown CPU clock (-1) adds no CPU time. */
static const char *const work_calls[MEMSTUB_WORK_CALLS] = {MEMSTUB_WORK_CALL_COLUMNS};

static int has_cpu(const memstub_trace *t) { return memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN) >= 0; }

static int has_calls(const memstub_trace *t) {
  if (memstub_trace_column(t, MEMSTUB_WORK_BYTES_COLUMN) >= 0) return 1;
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++)
    if (memstub_trace_column(t, work_calls[k]) >= 0) return 1;
  return 0;
}

static int write_work(const char *path, const memstub_trace *t, double x0, double x1,
                      size_t columns, memstub_error *err) {
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
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++) kc[k] = memstub_trace_column(t, work_calls[k]);
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
  for (size_t b = 0; b <= nb; b++)
    fprintf(f, "%.3f %.6g\n", x0 + (double)b * w, 100.0 * cpu[b < nb ? b : nb - 1] / (w * 1000.0));
  fputs("\n\n", f);
  for (size_t b = 0; b <= nb; b++)
    fprintf(f, "%.3f %.6g\n", x0 + (double)b * w, calls[b < nb ? b : nb - 1] / (w / 1000.0));
  free(cpu);
  free(calls);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    return memstub_error_set(err, -EIO, "%s: write failed: %s", path, strerror(errno));
  return 0;
}

/* A trace's data file: block 0 stack, block 1 heap, and for a replay (match
 * given) block 2 the time error in us against the original's time. */
static int write_data(const char *path, const memstub_trace *t, const memstub_trace *orig,
                      const int64_t *match, double x0, double x1, size_t columns,
                      memstub_error *err) {
  FILE *f = fopen(path, "w");
  if (!f) return memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
  series s;
  if (series_alloc(&s, t->n) < 0) {
    series_free(&s);
    fclose(f);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
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
      m++;
    }
    s.n = m;
    write_block(f, &s, x0, x1, columns, 0);
  }
  series_free(&s);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    return memstub_error_set(err, -EIO, "%s: write failed: %s", path, strerror(errno));
  return 0;
}

// A gnuplot single-quoted string: '' stands for ', control characters become spaces.
static void gp_str(FILE *f, const char *s) {
  fputc('\'', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '\'')
      fputs("''", f);
    else
      fputc(*p < 0x20 || *p == 0x7f ? ' ' : *p, f);
  }
  fputc('\'', f);
}

// How an axis is scaled for people: values are divided by div and shown in unit.
typedef struct axis_unit {
  double div;
  const char *unit;
} axis_unit;

// The binary unit (B, KiB, MiB, GiB) in which max bytes reads below 1024.
static axis_unit bytes_unit(double max) {
  static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  axis_unit a = {1, u[0]};
  for (int i = 1; i < 5 && max / a.div >= 1024; i++) a = (axis_unit){a.div * 1024, u[i]};
  return a;
}

// The time unit (µs, ms, s) for a span of us microseconds: at least 2 of it.
static axis_unit time_unit(double us) {
  if (us >= 2e6) return (axis_unit){1e6, "s"};
  if (us >= 2e3) return (axis_unit){1e3, "ms"};
  return (axis_unit){1, "\xc2\xb5s"};
}

// Where a trace's curve peaks: the first point of its maximum (time in us).
typedef struct peak {
  double x;
  int64_t y;
} peak;

// The peak of curve c (C_*) in t; y is 0 at the first point when t lacks it.
static peak find_peak(const memstub_trace *t, int c) {
  peak p = {(double)t->pts[0].time_ns / 1000.0, INT64_MIN};
  int col = curve_column(t, c);
  if (!has_curve(t, c)) return (peak){p.x, 0};
  for (size_t i = 0; i < t->n; i++) {
    int64_t v = curve_value(t, i, c, col);
    if (v > p.y) p = (peak){(double)t->pts[i].time_ns / 1000.0, v};
  }
  return p;
}

// The peak variables of one curve for figure3.gp: NAME_peak_x, _y and _text.
static void write_peak(FILE *f, const char *name, const memstub_trace *orig, size_t nrepl,
                       const memstub_trace *const *repl, int heap) {
  peak p = find_peak(orig, heap);
  char a[32], b[32], text[96];
  ms__fmt_bytes(p.y, a, sizeof a);
  if (nrepl > 0 && has_curve(repl[0], heap))
    snprintf(text, sizeof text, "peak %s (replay %s)", a,
             ms__fmt_bytes(find_peak(repl[0], heap).y, b, sizeof b));
  else
    snprintf(text, sizeof text, "peak %s", a);
  fprintf(f, "%s_peak_x = %.3f\n%s_peak_y = %lld\n%s_peak_text = ", name, p.x, name,
          (long long)p.y, name);
  gp_str(f, text);
  fputc('\n', f);
}

static int write_vars(const char *path, const char *title, const char *orig_label, size_t nrepl,
                      const char *const *labels, double x0, double x1,
                      const memstub_trace *orig, const memstub_trace *const *repl,
                      memstub_error *err) {
  FILE *f = fopen(path, "w");
  if (!f) return memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
  fputs("# written by memstub plot for plots/figure3.gp\ntitle = ", f);
  gp_str(f, title);
  fputs("\norig_label = ", f);
  gp_str(f, orig_label);
  fprintf(f, "\nnrepl = %zu\nxmin = %.3f\nxmax = %.3f\narray repl_label[%zu]\n", nrepl, x0, x1,
          nrepl ? nrepl : 1);
  for (size_t i = 0; i < nrepl; i++) {
    char def[32];
    snprintf(def, sizeof def, "replay %zu", i + 1);
    fprintf(f, "repl_label[%zu] = ", i + 1);
    gp_str(f, labels && labels[i] ? labels[i] : def);
    fputc('\n', f);
  }
  // Axis units for people, from the largest value any curve reaches.
  double smax = (double)find_peak(orig, 0).y, hmax = (double)find_peak(orig, 1).y;
  for (size_t i = 0; i < nrepl; i++) {
    smax = fmax(smax, (double)find_peak(repl[i], 0).y);
    hmax = fmax(hmax, (double)find_peak(repl[i], 1).y);
  }
  axis_unit su = bytes_unit(smax), hu = bytes_unit(hmax), tu = time_unit(x1 - x0);
  fprintf(f, "stack_div = %.1f\nstack_unit = '%s'\nheap_div = %.1f\nheap_unit = '%s'\n", su.div,
          su.unit, hu.div, hu.unit);
  fprintf(f, "x_div = %.1f\nx_unit = '%s'\n", tu.div, tu.unit);
  write_peak(f, "stack", orig, nrepl, repl, C_STACK);
  write_peak(f, "heap", orig, nrepl, repl, C_HEAP);
  /* The resident panel: drawn when any trace has rss_bytes or mapped_bytes;
   * which curves each trace has (orig_rss, orig_mapped, repl_rss[i],
   * repl_mapped[i]), the panel's unit and the original's peaks. */
  int any = has_curve(orig, C_RSS) || has_curve(orig, C_MAPPED);
  for (size_t i = 0; i < nrepl; i++) any |= has_curve(repl[i], C_RSS) || has_curve(repl[i], C_MAPPED);
  fprintf(f, "res_panel = %d\norig_rss = %d\norig_mapped = %d\n", any, has_curve(orig, C_RSS),
          has_curve(orig, C_MAPPED));
  fprintf(f, "array repl_rss[%zu]\narray repl_mapped[%zu]\n", nrepl ? nrepl : 1, nrepl ? nrepl : 1);
  double rmax = 0;
  for (size_t i = 0; i <= nrepl; i++) {
    const memstub_trace *t = i ? repl[i - 1] : orig;
    rmax = fmax(rmax, fmax((double)find_peak(t, C_RSS).y, (double)find_peak(t, C_MAPPED).y));
    if (i)
      fprintf(f, "repl_rss[%zu] = %d\nrepl_mapped[%zu] = %d\n", i, has_curve(t, C_RSS), i,
              has_curve(t, C_MAPPED));
  }
  axis_unit ru = bytes_unit(rmax);
  fprintf(f, "res_div = %.1f\nres_unit = '%s'\n", ru.div, ru.unit);
  // The mark goes on the original's rss peak, or its mapped one without rss.
  write_peak(f, "res", orig, nrepl, repl, has_curve(orig, C_RSS) ? C_RSS : C_MAPPED);
  /* The work panel (CPU share and calls per interval): drawn when any trace
   * has the work columns; which traces have which (orig_cpu, orig_calls,
   * repl_cpu[i], repl_calls[i]). */
  int work = has_cpu(orig) || has_calls(orig);
  for (size_t i = 0; i < nrepl; i++) work |= has_cpu(repl[i]) || has_calls(repl[i]);
  fprintf(f, "work_panel = %d\norig_cpu = %d\norig_calls = %d\n", work, has_cpu(orig),
          has_calls(orig));
  fprintf(f, "array repl_cpu[%zu]\narray repl_calls[%zu]\n", nrepl ? nrepl : 1, nrepl ? nrepl : 1);
  for (size_t i = 0; i < nrepl; i++)
    fprintf(f, "repl_cpu[%zu] = %d\nrepl_calls[%zu] = %d\n", i + 1, has_cpu(repl[i]), i + 1,
            has_calls(repl[i]));
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    return memstub_error_set(err, -EIO, "%s: write failed: %s", path, strerror(errno));
  return 0;
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
 * does not show as a column: rewrite a regular file out without it (atomically).
 * 0, or -errno with err set (out then stays as gnuplot wrote it). */
static int drop_form_feeds(const char *out, memstub_error *err) {
  struct stat st;
  if (stat(out, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  char *buf;
  size_t len;
  int rc = ms__read_file(out, &buf, &len, err);
  if (rc < 0) return rc;
  if (!memchr(buf, '\f', len)) {
    free(buf);
    return 0;
  }
  ms__afile af;
  if ((rc = ms__afile_open(&af, out, err)) == 0) {
    for (size_t i = 0; i < len; i++)
      if (buf[i] != '\f') fputc(buf[i], af.f);
    rc = ms__afile_commit(&af, err);
  }
  free(buf);
  return rc;
}

// Write the figure's data into the run's directory and draw it.
static int figure(ms__gnuplot *g, const char *out, const memstub_trace *orig,
                  const char *orig_label, size_t nrepl, const memstub_trace *const *repl,
                  const char *const *labels, memstub_compare_report *const *cmp,
                  const memstub_plot_options *o, memstub_error *err) {
  // One time axis for every panel.
  double x0 = (double)orig->pts[0].time_ns / 1000.0,
         x1 = (double)orig->pts[orig->n - 1].time_ns / 1000.0;
  for (size_t i = 0; i < nrepl; i++) {
    x0 = fmin(x0, (double)repl[i]->pts[0].time_ns / 1000.0);
    x1 = fmax(x1, (double)repl[i]->pts[repl[i]->n - 1].time_ns / 1000.0);
  }
  if (!(x1 > x0)) x1 = x0 + 1;
  size_t columns = (size_t)o->width;

  char *path = ms__gnuplot_path(g, "vars.gp");
  int rc = path ? write_vars(path, o->title ? o->title : orig_label, orig_label, nrepl, labels, x0,
                             x1, orig, repl, err)
                : memstub_error_set(err, -ENOMEM, "out of memory");
  free(path);
  if (rc == 0) {
    path = ms__gnuplot_path(g, "orig.dat");
    rc = path ? write_data(path, orig, orig, NULL, x0, x1, columns, err)
              : memstub_error_set(err, -ENOMEM, "out of memory");
    free(path);
  }
  for (size_t i = 0; rc == 0 && i < nrepl; i++) {
    char name[32];
    snprintf(name, sizeof name, "repl%zu.dat", i + 1);
    path = ms__gnuplot_path(g, name);
    rc = path ? write_data(path, repl[i], orig, cmp[i]->match, x0, x1, columns, err)
              : memstub_error_set(err, -ENOMEM, "out of memory");
    free(path);
  }
  // Resident data: origres.dat, replNres.dat (rss, mapped).
  for (size_t i = 0; rc == 0 && i <= nrepl; i++) {
    char name[32];
    if (i) snprintf(name, sizeof name, "repl%zures.dat", i);
    else snprintf(name, sizeof name, "origres.dat");
    path = ms__gnuplot_path(g, name);
    rc = path ? write_resident(path, i ? repl[i - 1] : orig, x0, x1, columns, err)
              : memstub_error_set(err, -ENOMEM, "out of memory");
    free(path);
  }
  // Work data: origwork.dat, replNwork.dat (CPU share, calls per interval).
  for (size_t i = 0; rc == 0 && i <= nrepl; i++) {
    char name[40];  // "repl" + 20 digits + "work.dat" + NUL
    if (i) snprintf(name, sizeof name, "repl%zuwork.dat", i);
    else snprintf(name, sizeof name, "origwork.dat");
    path = ms__gnuplot_path(g, name);
    rc = path ? write_work(path, i ? repl[i - 1] : orig, x0, x1, columns, err)
              : memstub_error_set(err, -ENOMEM, "out of memory");
    free(path);
  }
  if (rc < 0) return rc;
  // WIDTH and HEIGHT follow the format; text output is sized in characters.
  int text = strcmp(g->format, "txt") == 0;
  char ws[16], hs[16];
  snprintf(ws, sizeof ws, "%d", text ? text_columns(o->width) : o->width);
  snprintf(hs, sizeof hs, "%d", text ? o->height / 20 : o->height);
  const char *const extra[] = {ws, hs, NULL};
  int rc2 = ms__gnuplot_render(g, out, extra, err);
  return rc2 == 0 && text ? drop_form_feeds(out, err) : rc2;
}

int memstub_plot_figure(const char *out, const memstub_trace *orig, const char *orig_label,
                        size_t nrepl, const memstub_trace *const *repl,
                        const char *const *repl_labels, const memstub_plot_options *o,
                        memstub_error *err) {
  memstub_plot_options def;
  if (!o) {
    memstub_plot_options_init(&def);
    o = &def;
  }
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
