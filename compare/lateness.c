// Lateness by kind of row: which of the original's stack, heap, mapped and
// resident memory a row changes, and how late the replay measured such rows
// (issue 13 item 5; docs/compare-and-plot.md, "Lateness by kind of row").
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ms_common.h"

const char *memstub_row_kind_name(memstub_row_kind k) {
  static const char *names[MEMSTUB_ROW_KINDS] = {"stack", "heap", "mapped", "touch", "idle"};
  return k >= 0 && k < MEMSTUB_ROW_KINDS ? names[k] : "unknown";
}

memstub_row_kind memstub_compare_row_kind(const memstub_trace *orig, size_t i) {
  if (!orig || i >= orig->n) return MEMSTUB_ROW_IDLE;
  const memstub_point *b = &orig->pts[i];
  static const memstub_point zero = {0};
  const memstub_point *a = i ? &orig->pts[i - 1] : &zero;
  int cm = memstub_trace_column(orig, "mapped_bytes"), cr = memstub_trace_column(orig, "rss_bytes");
  const int64_t *xb = orig->nextra ? memstub_trace_extra_row(orig, i) : NULL;
  const int64_t *xa = orig->nextra && i ? memstub_trace_extra_row(orig, i - 1) : NULL;
  // Unknown values (-1) never count as a change.
  if (cm >= 0 && xb[cm] >= 0 && xb[cm] != (xa ? xa[cm] : 0) && (!xa || xa[cm] >= 0))
    return MEMSTUB_ROW_MAPPED;
  if (b->heap_bytes != a->heap_bytes) return MEMSTUB_ROW_HEAP;
  if (b->stack_bytes != a->stack_bytes) return MEMSTUB_ROW_STACK;
  if (cr >= 0 && xb[cr] >= 0 && xb[cr] != (xa ? xa[cr] : 0) && (!xa || xa[cr] >= 0))
    return MEMSTUB_ROW_TOUCH;
  return MEMSTUB_ROW_IDLE;
}

int ms__compare_kinds(const memstub_trace *orig, const memstub_trace *repl,
                      memstub_compare_report *r) {
  memset(r->by_kind, 0, sizeof r->by_kind);
  size_t m = r->compared ? r->compared : 1;
  int64_t *abs_err = malloc(m * sizeof *abs_err);
  memstub_row_kind *kind = malloc(m * sizeof *kind);
  if (!abs_err || !kind) {
    free(abs_err);
    free(kind);
    return -1;
  }
  int cw = memstub_trace_column(repl, "wake_late_ns"), ck = memstub_trace_column(repl, "work_ns"),
      co = memstub_trace_column(repl, "off_cpu_ns"),
      ct = memstub_trace_column(repl, "target_time_ns");
  int known = cw >= 0 && ck >= 0 && ct >= 0;
  const memstub_compare_options *o = &r->options;
  size_t n = 0;
  for (size_t i = 0; i < orig->n && n < m; i++) {
    if (r->match[i] < 0) continue;
    memstub_row_kind k = memstub_compare_row_kind(orig, i);
    memstub_compare_kind *s = &r->by_kind[k];
    int64_t e = ms__sat_sub(repl->pts[r->match[i]].time_ns, orig->pts[i].time_ns);
    abs_err[n] = ms__sat_abs(e);
    kind[n++] = k;
    s->rows++;
    if (e < s->time.min || s->rows == 1) s->time.min = e;
    if (e > s->time.max || s->rows == 1) s->time.max = e;
    s->time.mean += (double)e;
    if (e <= o->late_ns) continue;
    s->time.late++;
    memstub_late_cause c = MEMSTUB_LATE_UNKNOWN;
    if (known) {
      const int64_t *x = memstub_trace_extra_row(repl, (size_t)r->match[i]);
      int64_t predicted = ms__sat_sub(orig->pts[i].time_ns, x[ct]);
      c = memstub_compare_late_why(e, x[cw], ms__sat_sub(x[ck], predicted), co >= 0 ? x[co] : -1,
                                   ms__late_behind(repl, r->match[i], ct));
    }
    s->late_by_cause[c]++;
  }
  // Percentiles per kind: the kind's errors gathered, sorted.
  int64_t *v = malloc(m * sizeof *v);
  if (!v) {
    free(abs_err);
    free(kind);
    return -1;
  }
  for (int k = 0; k < MEMSTUB_ROW_KINDS; k++) {
    memstub_compare_kind *s = &r->by_kind[k];
    if (!s->rows) continue;
    size_t c = 0;
    for (size_t j = 0; j < n; j++)
      if (kind[j] == (memstub_row_kind)k) v[c++] = abs_err[j];
    qsort(v, c, sizeof *v, ms__cmp_i64);
    s->time.p50_abs = ms__rank_i64(v, c, 50);
    s->time.p99_abs = ms__rank_i64(v, c, 99);
    s->time.max_abs = v[c - 1];
    s->time.mean /= (double)s->rows;
  }
  free(v);
  free(abs_err);
  free(kind);
  return 0;
}

void ms__compare_kinds_text(FILE *f, const memstub_compare_report *r) {
  int any = 0;
  for (int k = 0; k < MEMSTUB_ROW_KINDS; k++) any += r->by_kind[k].rows > 0;
  if (!any) return;
  char a[32], b[32], c[32];
  fputs("time error by kind of row (what the original's row changed):\n", f);
  for (int k = 0; k < MEMSTUB_ROW_KINDS; k++) {
    const memstub_compare_kind *s = &r->by_kind[k];
    if (!s->rows) continue;
    ms__fmt_ns(s->time.p50_abs, a, sizeof a);
    ms__fmt_ns(s->time.p99_abs, b, sizeof b);
    ms__fmt_ns(s->time.max_abs, c, sizeof c);
    fprintf(f, "  %-7s %5zu rows  p50 %s, p99 %s, max %s; late %zu (%.2f%%)", memstub_row_kind_name(k),
            s->rows, a, b, c, s->time.late, 100.0 * (double)s->time.late / (double)s->rows);
    if (s->time.late && r->late_by_cause.causes_known)
      fprintf(f, ": %zu woke late, %zu work, %zu not running, %zu behind",
              s->late_by_cause[MEMSTUB_LATE_WAKE], s->late_by_cause[MEMSTUB_LATE_WORK],
              s->late_by_cause[MEMSTUB_LATE_OFF_CPU], s->late_by_cause[MEMSTUB_LATE_BEHIND]);
    fputc('\n', f);
  }
}

void ms__compare_kinds_json(FILE *f, const memstub_compare_report *r) {
  fputs("  \"time_by_kind\": {", f);
  for (int k = 0; k < MEMSTUB_ROW_KINDS; k++) {
    const memstub_compare_kind *s = &r->by_kind[k];
    fprintf(f,
            "%s\n    \"%s\": {\"rows\": %zu, \"p50_abs_ns\": %" PRId64 ", \"p99_abs_ns\": %" PRId64
            ", \"max_abs_ns\": %" PRId64 ", \"min_ns\": %" PRId64 ", \"max_ns\": %" PRId64
            ", \"mean_ns\": %.1f, \"late\": %zu, \"late_share\": %.6f",
            k ? "," : "", memstub_row_kind_name(k), s->rows, s->time.p50_abs, s->time.p99_abs,
            s->time.max_abs, s->time.min, s->time.max, s->time.mean, s->time.late,
            s->rows ? (double)s->time.late / (double)s->rows : 0.0);
    for (int c = 0; c < MEMSTUB_LATE_CAUSES; c++)
      fprintf(f, ", \"late_%s\": %zu", memstub_late_cause_name((memstub_late_cause)c, 1),
              s->late_by_cause[c]);
    fputc('}', f);
  }
  fputs("\n  },\n", f);
}
