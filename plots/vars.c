// vars.gp, what plots/figure3.gp draws: the title, the legend's entries, the
// panels and each trace's curves in them, the axes' units and tics, and the
// peaks to label.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ms_common.h"

void ms__plot_gp_str(FILE *f, const char *s) {
  fputc('\'', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '\'')
      fputs("''", f);
    else
      fputc(*p < 0x20 || *p == 0x7f ? ' ' : *p, f);
  }
  fputc('\'', f);
}

/* v as a gnuplot real: "%.15g", with ".0" added to a whole number (gnuplot
 * divides integers as integers). Returns buf. */
typedef struct real_buf {
  char s[40];
} real_buf;
static const char *real(double v, real_buf *b) {
  snprintf(b->s, sizeof b->s, "%.15g", v);
  if (!strpbrk(b->s, ".eEnN")) strcat(b->s, ".0");
  return b->s;
}

// NAME = 'value'
static void put_str(FILE *f, const char *name, const char *value) {
  fprintf(f, "%s = ", name);
  ms__plot_gp_str(f, value);
  fputc('\n', f);
}

/* The title as gnuplot lines joined by "\n": each of its lines broken at
 * spaces to at most width characters (UTF-8 counted as characters), a word
 * longer than that on a line of its own; title_lines their number. */
static void put_title(FILE *f, const char *title, int width) {
  if (width < 20) width = 20;
  fputs("title = ''", f);
  int lines = 0;
  const char *p = title;
  do {
    const char *end = p, *brk = NULL;
    int chars = 0;
    while (*end && *end != '\n') {
      if (*end == ' ') brk = end;
      if (((unsigned char)*end & 0xc0) != 0x80 && ++chars > width && brk) break;
      end++;
    }
    const char *stop = *end && *end != '\n' ? brk : end;
    fputs(lines ? ".\"\\n\"." : ".", f);
    char *line = ms__asprintf("%.*s", (int)(stop - p), p);
    ms__plot_gp_str(f, line ? line : "");
    free(line);
    lines++;
    p = *stop ? stop + 1 : stop;
  } while (*p);
  fprintf(f, "\ntitle_lines = %d\n", lines);
}

/* NAME_div, _unit, _step, and the tic labels' formats: _fmt plain, _ufmt
 * with the unit (for text, which has no rotated axis labels). */
static void put_axis(FILE *f, const char *name, const ms__plot_axis *a) {
  char fmt[48], key[32];
  real_buf r1, r2;
  fprintf(f, "%s_div = %s\n%s_step = %s\n%s_unit = ", name, real(a->div, &r1), name,
          real(a->step, &r2), name);
  ms__plot_gp_str(f, a->unit);
  fputc('\n', f);
  for (int u = 0; u < 2; u++) {
    snprintf(key, sizeof key, "%s_%sfmt", name, u ? "u" : "");
    put_str(f, key, ms__plot_axis_format(a, u, fmt, sizeof fmt));
  }
}

// A gnuplot array NAME[n] (at least 1 element) of the flags has(t) for each replay.
static void put_flags(FILE *f, const char *name, const ms__plot_vars *v,
                      int (*has)(const memstub_trace *, int), int c) {
  fprintf(f, "array %s[%zu]\n", name, v->nrepl ? v->nrepl : 1);
  for (size_t i = 0; i < v->nrepl; i++) fprintf(f, "%s[%zu] = %d\n", name, i + 1, has(v->repl[i], c));
}

static int has_curve(const memstub_trace *t, int c) { return ms__plot_has_curve(t, c); }
static int has_cpu(const memstub_trace *t, int c) { return (void)c, ms__plot_has_cpu(t); }
static int has_calls(const memstub_trace *t, int c) { return (void)c, ms__plot_has_calls(t); }

// Trace k of the figure: 0 the original, i the replay i.
static const memstub_trace *trace_of(const ms__plot_vars *v, size_t k) {
  return k ? v->repl[k - 1] : v->orig;
}

static const char *label_of(const ms__plot_vars *v, size_t k, char *buf, size_t cap) {
  if (k == 0) return v->orig_label;
  if (v->labels && v->labels[k - 1]) return v->labels[k - 1];
  snprintf(buf, cap, "replay %zu", k);
  return buf;
}

/* A memory panel p (1 stack, 2 heap, 3 res) of curve c (res: rss, else
 * mapped, for the peaks; max over both): whether it is drawn (NAME_panel),
 * its axis with its largest value in its unit (NAME_max), how many peaks it
 * labels (NAME_npk), and one peak per trace that has the curve, from
 * *npk + 1 on in the arrays pk_panel, pk_x (time in x's unit), pk_y (in the
 * panel's unit), pk_text, pk_trace (0 the original, i replay i). Returns
 * NAME_panel. */
static int put_panel(FILE *f, const char *name, int p, const ms__plot_vars *v, int c, int ticks,
                     const ms__plot_axis *x, size_t *npk) {
  size_t n = v->nrepl + 1, rows = 0;
  double max = 0;
  int any = 0;
  ms__plot_peak *pk = calloc(n, sizeof *pk);
  size_t *who = calloc(n, sizeof *who);
  for (size_t k = 0; k < n; k++) {
    const memstub_trace *t = trace_of(v, k);
    int cc = c;
    if (c == MS__C_RSS) {
      ms__plot_peak m = ms__plot_find_peak(t, MS__C_MAPPED);
      if (ms__plot_has_curve(t, MS__C_MAPPED)) max = fmax(max, (double)m.y), any = 1;
      if (!ms__plot_has_curve(t, MS__C_RSS)) cc = MS__C_MAPPED;
    }
    if (!ms__plot_has_curve(t, cc)) continue;
    ms__plot_peak pt = ms__plot_find_peak(t, cc);
    max = fmax(max, (double)pt.y);
    any = 1;
    if (pk && who) pk[rows] = pt, who[rows++] = k;
  }
  ms__plot_axis a = ms__plot_axis_bytes(max, ticks);
  char key[48], value[MS__FMT_MAX], lbuf[32];
  real_buf r1, r2;
  fprintf(f, "%s_panel = %d\n%s_max = %s\n%s_npk = %zu\n", name, any, name, real(max / a.div, &r1),
          name, rows);
  put_axis(f, name, &a);
  for (size_t j = 0; j < rows; j++) {
    size_t q = ++*npk;
    fprintf(f, "pk_panel[%zu] = %d\npk_trace[%zu] = %zu\n", q, p, q, who[j]);
    fprintf(f, "pk_x[%zu] = %s\npk_y[%zu] = %s\n", q, real(pk[j].x / x->div, &r1), q,
            real((double)pk[j].y / a.div, &r2));
    char *text = ms__asprintf("peak %s: %s", ms__fmt_bytes(pk[j].y, value, sizeof value),
                              label_of(v, who[j], lbuf, sizeof lbuf));
    snprintf(key, sizeof key, "pk_text[%zu]", q);
    put_str(f, key, text ? text : "");
    free(text);
  }
  free(pk);
  free(who);
  return any;
}

/* The legend: for each trace an entry for its curves (a replay's with its
 * time errors' point), then for each an entry for its dotted curves (mapped
 * memory, calls) where it has them: nleg, leg_text[k], leg_trace[k] (0 the
 * original), leg_sec[k] (1: the dotted curves). */
static void put_legend(FILE *f, const ms__plot_vars *v, int res_panel, int work_panel) {
  size_t n = v->nrepl + 1, nleg = 0;
  fprintf(f, "array leg_text[%zu]\narray leg_trace[%zu]\narray leg_sec[%zu]\n", 2 * n, 2 * n,
          2 * n);
  for (size_t e = 0; e < 2 * n; e++) {
    size_t k = e % n;
    int sec = (int)(e / n);
    const memstub_trace *t = trace_of(v, k);
    char lbuf[32], key[48];
    const char *label = label_of(v, k, lbuf, sizeof lbuf);
    int mapped = res_panel && ms__plot_has_curve(t, MS__C_MAPPED);
    int calls = work_panel && ms__plot_has_calls(t);
    int solid = ms__plot_has_curve(t, MS__C_STACK) || ms__plot_has_curve(t, MS__C_HEAP) ||
               (res_panel && ms__plot_has_curve(t, MS__C_RSS)) ||
               (work_panel && ms__plot_has_cpu(t)) || (k && v->has_error[k - 1]);
    if (!(sec ? mapped || calls : solid)) continue;
    char *text = sec ? ms__asprintf("%s: %s", label,
                                    mapped && calls ? "mapped, calls"
                                    : mapped        ? "mapped"
                                                    : "calls")
                     : ms__strdup(label);
    nleg++;
    snprintf(key, sizeof key, "leg_text[%zu]", nleg);
    put_str(f, key, text ? text : label);
    fprintf(f, "leg_trace[%zu] = %zu\nleg_sec[%zu] = %d\n", nleg, k, nleg, sec);
    free(text);
  }
  fprintf(f, "nleg = %zu\n", nleg);
}

int ms__plot_write_vars(const char *path, const ms__plot_vars *v, memstub_error *err) {
  FILE *f = fopen(path, "w");
  if (!f) return memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
  fputs("# written by memstub plot for plots/figure3.gp\n", f);
  put_title(f, v->title, v->title_width);
  put_str(f, "orig_label", v->orig_label);
  fprintf(f, "nrepl = %zu\narray repl_label[%zu]\n", v->nrepl, v->nrepl ? v->nrepl : 1);
  for (size_t i = 0; i < v->nrepl; i++) {
    char key[48], lbuf[32];
    snprintf(key, sizeof key, "repl_label[%zu]", i + 1);
    put_str(f, key, label_of(v, i + 1, lbuf, sizeof lbuf));
  }
  // The time axis, and the tics the panels want: a few in text, more in pixels.
  ms__plot_axis x = ms__plot_axis_time(v->x0, v->x1, v->x_ticks);
  real_buf r1, r2;
  fprintf(f, "xmin = %s\nxmax = %s\n", real(v->x0 / x.div, &r1), real(v->x1 / x.div, &r2));
  put_axis(f, "x", &x);
  int yt = v->text ? 3 : 5;
  // The curves each trace has, and the panels they make.
  static const char *const curve[] = {"stack", "heap", "rss", "mapped"};
  for (int c = 0; c < 4; c++) {
    char name[16];
    snprintf(name, sizeof name, "orig_%s", curve[c]);
    fprintf(f, "%s = %d\n", name, ms__plot_has_curve(v->orig, c));
    snprintf(name, sizeof name, "repl_%s", curve[c]);
    put_flags(f, name, v, has_curve, c);
  }
  fprintf(f, "orig_cpu = %d\norig_calls = %d\n", ms__plot_has_cpu(v->orig),
          ms__plot_has_calls(v->orig));
  put_flags(f, "repl_cpu", v, has_cpu, 0);
  put_flags(f, "repl_calls", v, has_calls, 0);
  size_t npk = 0, most = 3 * (v->nrepl + 1);
  fprintf(f, "array pk_panel[%zu]\narray pk_trace[%zu]\narray pk_x[%zu]\narray pk_y[%zu]\n"
          "array pk_text[%zu]\n", most, most, most, most, most);
  int mem = put_panel(f, "stack", 1, v, MS__C_STACK, yt, &x, &npk);
  mem |= put_panel(f, "heap", 2, v, MS__C_HEAP, yt, &x, &npk);
  int res_panel = put_panel(f, "res", 3, v, MS__C_RSS, yt, &x, &npk), work_panel = 0;
  fprintf(f, "npk = %zu\n", npk);
  for (size_t k = 0; k <= v->nrepl; k++)
    work_panel |= ms__plot_has_cpu(trace_of(v, k)) || ms__plot_has_calls(trace_of(v, k));
  // Something is drawn: an empty heap panel for traces that know nothing.
  if (!mem && !res_panel && !work_panel) fputs("heap_panel = 1\n", f);
  // The work panel: CPU share (%) on the left, calls per ms on the right.
  fprintf(f, "work_panel = %d\n", work_panel);
  ms__plot_axis cpu = ms__plot_axis_plain(v->cpu_max, yt), calls = ms__plot_axis_plain(v->calls_max, yt);
  cpu.unit = "%";
  put_axis(f, "cpu", &cpu);
  put_axis(f, "calls", &calls);
  // Their tops: the tic above the largest value, so no curve runs on the border.
  real_buf r5, r6;
  fprintf(f, "cpu_top = %s\ncalls_top = %s\n", real((floor(v->cpu_max / cpu.step) + 1) * cpu.step, &r5),
          real((floor(v->calls_max / calls.step) + 1) * calls.step, &r6));
  // The time errors: in the unit of the largest.
  int err_panel = 0;
  fprintf(f, "array repl_err[%zu]\n", v->nrepl ? v->nrepl : 1);
  for (size_t i = 0; i < v->nrepl; i++) {
    fprintf(f, "repl_err[%zu] = %d\n", i + 1, v->has_error[i]);
    err_panel |= v->has_error[i];
  }
  ms__plot_axis e = ms__plot_axis_time(v->err_lo, v->err_hi, yt);
  fprintf(f, "err_panel = %d\n", err_panel);
  put_axis(f, "err", &e);
  /* Its range, in its unit, out to whole tics, and a tic further where the
   * errors come within a quarter of one of the border (they would hide in
   * it, in text). */
  real_buf r3, r4;
  double elo = v->err_lo / e.div, ehi = v->err_hi / e.div;
  double lo = floor(elo / e.step) * e.step, hi = ceil(ehi / e.step) * e.step;
  if (elo - lo < e.step / 4) lo -= e.step;
  if (hi - ehi < e.step / 4) hi += e.step;
  fprintf(f, "err_lo = %s\nerr_hi = %s\n", real(lo, &r3), real(hi, &r4));
  put_legend(f, v, res_panel, work_panel);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    return memstub_error_set(err, -EIO, "%s: write failed: %s", path, strerror(errno));
  return 0;
}
