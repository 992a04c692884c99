// A what-if against its original (docs/compare-and-plot.md, "A what-if:
// before and after"): REPLAYED's scales read from its metadata, the target
// it is judged against (ORIGINAL scaled as memstub gen scales it), and the
// figures before and after.
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "internal.h"
#include "memstub/work.h"
#include "ms_common.h"
#include "whatif.h"

const char *memstub_compare_figure_name(memstub_compare_figure f, int json) {
  static const char *const text[MEMSTUB_FIGURES] = {
      "peak heap", "peak resident", "peak stack", "duration", "CPU", "allocator calls", "churn"};
  static const char *const keys[MEMSTUB_FIGURES] = {"peak_heap_bytes", "peak_rss_bytes",
                                                    "peak_stack_bytes", "duration_ns", "cpu_ns",
                                                    "calls", "churn_bytes"};
  if ((unsigned)f >= MEMSTUB_FIGURES) return "?";
  return json ? keys[f] : text[f];
}

int ms__compare_whatif_read(const memstub_trace *repl, memstub_compare_report *r, size_t *at,
                            memstub_error *err) {
  const char *cal = memstub_trace_get_meta(repl, "calibration");
  r->calibrated = cal && *cal && strcmp(cal, "none") != 0;
  const char *line = memstub_trace_get_meta(repl, "transforms"), *field = NULL;
  ms__whatif w;
  *at = 0;
  if (!line) ms__whatif_init(&w);
  else if (ms__whatif_parse_at(line, &w, at, &field) < 0) {
    char q[MS__QUOTE_MAX + 4];
    // A scale's value that is no decimal number (0x1p3, +0.5, inf): the field named.
    if (field)
      return memstub_error_set(err, -EINVAL,
                               "metadata 'transforms', field %s: '%s' is not a scale as memstub "
                               "writes one (a decimal number >= 0, such as 0.5 or 1e-05): it "
                               "cannot be told what REPLAYED was asked to do",
                               field, ms__quote(line + *at, strcspn(line + *at, ","), 40, q));
    return memstub_error_set(err, -EINVAL,
                             "REPLAYED's metadata 'transforms: %s' does not name the what-if "
                             "scales as memstub writes them ('none', or 'time xF, heap xF, "
                             "stack xF, ...'): it cannot be told what REPLAYED was asked to do",
                             ms__quote(line, strlen(line), 60, q));
  }
  r->whatif.is = !ms__whatif_none(&w);
  r->whatif.scales = (memstub_compare_scales){w.time, w.heap, w.stack, w.rss, w.mapped, w.cpu,
                                              w.churn};
  return 0;
}

int ms__compare_whatif_target(const memstub_trace *t, const memstub_compare_report *r,
                              memstub_trace **out, memstub_error *err) {
  const memstub_compare_scales *s = &r->whatif.scales;
  ms__whatif w = {s->time, s->heap, s->stack, s->rss, s->mapped, s->cpu, s->churn};
  int rc = ms__whatif_apply(t, &w, out, err);
  if (rc < 0) memstub_error_prefix(err, r->original_name);
  return rc;
}

// The sum of t's columns cols[0..nc) (-1: absent) over rows (from, to], counting values > 0.
static int64_t rows_sum(const memstub_trace *t, const int *cols, int nc, int64_t from, int64_t to) {
  int64_t s = 0;
  for (int64_t i = from + 1; i <= to; i++)
    for (int k = 0; k < nc; k++)
      if (cols[k] >= 0 && memstub_trace_extra_row(t, (size_t)i)[cols[k]] > 0)
        s += memstub_trace_extra_row(t, (size_t)i)[cols[k]];
  return s;
}

/* One trace's figures over the compared rows (which: 0 ORIGINAL's rows i, 1
 * REPLAYED's rows match[i]) into fig[k].before or .after. */
static void figures(const memstub_trace *t, int which, memstub_compare_report *r) {
  static const char *const calls[MEMSTUB_WORK_CALLS] = {MEMSTUB_WORK_CALL_COLUMNS};
  int rc_ = memstub_trace_column(t, "rss_bytes"), cc = memstub_trace_column(t, "cpu_ns");
  int bc = memstub_trace_column(t, MEMSTUB_WORK_BYTES_COLUMN), kc[MEMSTUB_WORK_CALLS];
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++)
    kc[k] = k / MEMSTUB_WORK_CLASSES == MEMSTUB_CALL_FREE ? -1 : memstub_trace_column(t, calls[k]);
  int64_t v[MEMSTUB_FIGURES] = {0}, cpu_prev = -1;
  int64_t first = -1, last = -1;
  for (size_t i = 0; i < r->original_rows; i++) {
    if (r->match[i] < 0) continue;
    size_t row = which ? (size_t)r->match[i] : i;
    const memstub_point *p = &t->pts[row];
    if (p->heap_bytes > v[MEMSTUB_FIGURE_HEAP_PEAK]) v[MEMSTUB_FIGURE_HEAP_PEAK] = p->heap_bytes;
    if (p->stack_bytes > v[MEMSTUB_FIGURE_STACK_PEAK]) v[MEMSTUB_FIGURE_STACK_PEAK] = p->stack_bytes;
    // A trace without extra columns has none to point at (read only when a column is).
    const int64_t *x = t->nextra ? memstub_trace_extra_row(t, row) : NULL;
    if (rc_ >= 0 && x[rc_] > v[MEMSTUB_FIGURE_RSS_PEAK]) v[MEMSTUB_FIGURE_RSS_PEAK] = x[rc_];
    // CPU time as compare's work series counts it: increments, -1 not measured.
    if (cc >= 0 && x[cc] >= 0) {
      if (cpu_prev >= 0 && x[cc] > cpu_prev) v[MEMSTUB_FIGURE_CPU] += x[cc] - cpu_prev;
      cpu_prev = x[cc];
    }
    if (first < 0 || (int64_t)row < first) first = (int64_t)row;
    if ((int64_t)row > last) last = (int64_t)row;
  }
  if (first >= 0) {
    v[MEMSTUB_FIGURE_DURATION] = ms__sat_sub(t->pts[last].time_ns, t->pts[first].time_ns);
    v[MEMSTUB_FIGURE_CALLS] = rows_sum(t, kc, MEMSTUB_WORK_CALLS, first, last);
    // The stub's block reallocs that were frees, as compare's calls count them.
    if (which && r->work.block_frees <= v[MEMSTUB_FIGURE_CALLS])
      v[MEMSTUB_FIGURE_CALLS] -= r->work.block_frees;
    v[MEMSTUB_FIGURE_CHURN] = rows_sum(t, &bc, 1, first, last);
  }
  for (int k = 0; k < MEMSTUB_FIGURES; k++) {
    if (which) r->whatif.fig[k].after = v[k];
    else r->whatif.fig[k].before = v[k];
  }
}

void ms__compare_whatif_figures(const memstub_trace *before, const memstub_trace *target,
                                const memstub_trace *repl, memstub_compare_report *r) {
  figures(before, 0, r);
  figures(repl, 1, r);
  memstub_compare_change *f = r->whatif.fig;
  f[MEMSTUB_FIGURE_HEAP_PEAK].known = !r->heap_unknown;
  f[MEMSTUB_FIGURE_RSS_PEAK].known = !r->rss_unknown;
  f[MEMSTUB_FIGURE_STACK_PEAK].known = !r->stack_unknown;
  f[MEMSTUB_FIGURE_DURATION].known = 1;
  f[MEMSTUB_FIGURE_CPU].known = !r->work.cpu_unknown;
  f[MEMSTUB_FIGURE_CALLS].known = f[MEMSTUB_FIGURE_CHURN].known = !r->work.calls_unknown;
  // A change the heap's what-if scales to nothing (x0) is no resize.
  r->heap_rows = 0;
  int64_t prev = -1;
  for (size_t i = 0; i < r->original_rows; i++) {
    if (r->match[i] < 0) continue;
    if (prev >= 0 && target->pts[i].heap_bytes != target->pts[prev].heap_bytes) r->heap_rows++;
    prev = (int64_t)i;
  }
}

const char *ms__compare_fig_text(char buf[40], memstub_compare_figure f, int64_t v, int plus) {
  char n[32];
  if (f == MEMSTUB_FIGURE_DURATION || f == MEMSTUB_FIGURE_CPU) ms__fmt_ns(v, n, sizeof n);
  else if (f == MEMSTUB_FIGURE_CALLS) snprintf(n, sizeof n, "%" PRId64, v);
  else ms__fmt_bytes(v, n, sizeof n);
  snprintf(buf, 40, "%s%s", plus && v > 0 ? "+" : "", n);
  return buf;
}

void ms__compare_scales_text(const memstub_compare_scales *s, char *buf, size_t cap) {
  const struct {
    const char *name;
    double v;
  } sc[] = {{"time", s->time},     {"heap", s->heap}, {"stack", s->stack}, {"rss", s->rss},
            {"mapped", s->mapped}, {"cpu", s->cpu},   {"churn", s->churn}};
  size_t n = 0;
  buf[0] = '\0';
  for (size_t k = 0; k < sizeof sc / sizeof *sc && n < cap; k++) {
    if (sc[k].v == 1.0) continue;
    int m = snprintf(buf + n, cap - n, "%s%s x%g", n ? ", " : "", sc[k].name, sc[k].v);
    if (m > 0) n += (size_t)m;
  }
}

// s right-aligned in width columns (a UTF-8 sequence, as in "µs", is one column).
static void right(FILE *f, const char *s, int width) {
  int cols = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) cols += (*p & 0xc0) != 0x80;
  fprintf(f, " %*s%s", width > cols ? width - cols : 0, "", s);
}

const char *ms__compare_change_text(const memstub_compare_report *r, memstub_compare_figure k,
                                   char *buf, size_t cap) {
  const memstub_compare_change *x = &r->whatif.fig[k];
  if (!x->known) {
    snprintf(buf, cap, "not compared (%s)",
             k == MEMSTUB_FIGURE_RSS_PEAK     ? "no rss_bytes in a trace"
             : k == MEMSTUB_FIGURE_STACK_PEAK ? "ORIGINAL's stack is unknown"
             : k == MEMSTUB_FIGURE_HEAP_PEAK  ? "a heap is unknown"
             : k == MEMSTUB_FIGURE_CPU        ? "no cpu_ns in a trace"
                                              : "no calls_* or churn_bytes in a trace");
    return buf;
  }
  char c[40], pct[32] = "";
  int64_t d = ms__sat_sub(x->after, x->before);
  if (x->before > 0) snprintf(pct, sizeof pct, " (%+.1f %%)", 100.0 * (double)d / (double)x->before);
  // The stack of a stub without a profile carries the replay's own bytes (verdict.c).
  snprintf(buf, cap, "%s%s%s", ms__compare_fig_text(c, k, d, 1), pct,
           k == MEMSTUB_FIGURE_STACK_PEAK && !r->calibrated ? ", uncalibrated" : "");
  return buf;
}

void ms__compare_whatif_text(FILE *f, const memstub_compare_report *r) {
  if (!r->whatif.is) return;
  char sc[256], a[40], b[40], c[96];
  ms__compare_scales_text(&r->whatif.scales, sc, sizeof sc);
  fprintf(f, "what-if   %s: before is ORIGINAL (on its stub's timeline), after REPLAYED\n", sc);
  fprintf(f, "  %-17s %12s %12s  %s\n", "", "before", "after", "change");
  for (int k = 0; k < MEMSTUB_FIGURES; k++) {
    const memstub_compare_change *x = &r->whatif.fig[k];
    fprintf(f, "  %-17s", memstub_compare_figure_name((memstub_compare_figure)k, 0));
    right(f, x->known ? ms__compare_fig_text(a, k, x->before, 0) : "-", 12);
    right(f, x->known ? ms__compare_fig_text(b, k, x->after, 0) : "-", 12);
    fprintf(f, "  %s\n", ms__compare_change_text(r, k, c, sizeof c));
  }
  fprintf(f, "  (allocator calls: malloc, calloc, realloc and memalign; the stub's frees are "
             "its own, below)\n\n");
}

void ms__compare_whatif_json(FILE *f, const memstub_compare_report *r) {
  const memstub_compare_scales *s = &r->whatif.scales;
  fprintf(f, "  \"kind\": \"%s\",\n  \"scales\": {\"time\": ", r->whatif.is ? "what-if" : "fidelity");
  const double v[] = {s->time, s->heap, s->stack, s->rss, s->mapped, s->cpu, s->churn};
  static const char *const names[] = {"time", "heap", "stack", "rss", "mapped", "cpu", "churn"};
  for (int k = 0; k < 7; k++) {
    if (k) fprintf(f, ", \"%s\": ", names[k]);
    ms__compare_json_num(f, v[k]);
  }
  fputs("},\n  \"before_after\": {", f);
  for (int k = 0; k < MEMSTUB_FIGURES; k++) {
    const memstub_compare_change *x = &r->whatif.fig[k];
    fprintf(f, "%s\n    \"%s\": ", k ? "," : "", memstub_compare_figure_name(k, 1));
    if (!x->known) {
      fputs("{\"known\": false}", f);
      continue;
    }
    int64_t d = ms__sat_sub(x->after, x->before);
    fprintf(f,
            "{\"known\": true, \"before\": %" PRId64 ", \"after\": %" PRId64
            ", \"change\": %" PRId64 ", \"change_pct\": ",
            x->before, x->after, d);
    if (x->before > 0) ms__compare_json_num(f, 100.0 * (double)d / (double)x->before);
    else fputs("null", f);
    fputc('}', f);
  }
  fputs("\n  },\n", f);
}
