// The work of a replay against its original's (issue 14 item 5): CPU time,
// allocator calls per kind and churn bytes per interval between two compared
// rows, their totals and the error per interval (docs/compare-and-plot.md,
// "Work").
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memstub/work.h"
#include "ms_common.h"

_Static_assert(MEMSTUB_COMPARE_CALL_KINDS == MEMSTUB_WORK_KINDS, "one kind per work.h kind");

static const char *const kind_name[MEMSTUB_WORK_KINDS] = {"malloc", "calloc", "realloc", "free",
                                                          "memalign"};

const char *memstub_compare_call_kind_name(int k) {
  return k >= 0 && k < MEMSTUB_WORK_KINDS ? kind_name[k] : "?";
}

// s's total_pct from its totals: the replay's error in % of the original's.
static void set_total_pct(memstub_compare_series *s) {
  double d = (double)s->replayed_total - (double)s->original_total;
  s->total_pct = s->original_total ? 100.0 * d / (double)s->original_total
                 : d == 0             ? 0.0
                                      : INFINITY;
}

// The series from the per-interval values a (original) and b (replayed), n of them.
static void series(const int64_t *a, const int64_t *b, size_t n, int64_t *scratch,
                   memstub_compare_series *s) {
  memset(s, 0, sizeof *s);
  s->intervals = n;
  for (size_t i = 0; i < n; i++) {
    s->original_total += a[i];
    s->replayed_total += b[i];
    scratch[i] = ms__sat_abs(ms__sat_sub(b[i], a[i]));
  }
  set_total_pct(s);
  if (!n) return;
  qsort(scratch, n, sizeof *scratch, ms__cmp_i64);
  s->p50_abs = ms__rank_i64(scratch, n, 50);
  s->p90_abs = ms__rank_i64(scratch, n, 90);
}

static char *why(const char *text, int *oom) {
  char *c = ms__strdup(text);
  if (!c) *oom = 1;
  return c;
}

// Sum of the columns cols[0..nc) (-1: absent) over rows (from, to] of t.
static int64_t row_sum(const memstub_trace *t, const int *cols, int nc, int64_t from, int64_t to) {
  int64_t s = 0;
  for (int64_t r = from + 1; r <= to; r++) {
    const int64_t *x = memstub_trace_extra_row(t, (size_t)r);
    for (int k = 0; k < nc; k++)
      if (cols[k] >= 0 && x[cols[k]] > 0) s += x[cols[k]];
  }
  return s;
}

/* A cumulative column's growth over rows (p, i] of orig (column oc) and
 * (rp, q] of repl (rc) into *a and *b: 1, or 0 when either side was not
 * measured there (-1) or fell. */
static size_t delta(const memstub_trace *orig, int oc, int64_t p, int64_t i,
                    const memstub_trace *repl, int rc, int64_t rp, int64_t q, int64_t *a,
                    int64_t *b) {
  int64_t o1 = memstub_trace_extra_row(orig, (size_t)i)[oc],
          o0 = memstub_trace_extra_row(orig, (size_t)p)[oc],
          r1 = memstub_trace_extra_row(repl, (size_t)q)[rc],
          r0 = memstub_trace_extra_row(repl, (size_t)rp)[rc];
  if (o0 < 0 || o1 < o0 || r0 < 0 || r1 < r0) return 0;
  *a = o1 - o0, *b = r1 - r0;
  return 1;
}

int ms__compare_work(const memstub_trace *orig, const memstub_trace *repl,
                     memstub_compare_report *r) {
  memstub_compare_work *w = &r->work;
  static const char *const names[MEMSTUB_WORK_CALLS] = {MEMSTUB_WORK_CALL_COLUMNS};
  int oc[MEMSTUB_WORK_CALLS], rc_[MEMSTUB_WORK_CALLS], any = 0, oom = 0;
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++) {
    oc[k] = memstub_trace_column(orig, names[k]);
    rc_[k] = memstub_trace_column(repl, names[k]);
    any |= oc[k] >= 0;
  }
  int ocpu = memstub_trace_column(orig, MEMSTUB_WORK_CPU_COLUMN),
      rcpu = memstub_trace_column(repl, MEMSTUB_WORK_CPU_COLUMN),
      ob = memstub_trace_column(orig, MEMSTUB_WORK_BYTES_COLUMN),
      rb = memstub_trace_column(repl, MEMSTUB_WORK_BYTES_COLUMN);
  if (ocpu < 0)
    w->cpu_unknown = why("unknown (ORIGINAL has no cpu_ns column)", &oom);
  else if (rcpu < 0)
    w->cpu_unknown = why("unknown (REPLAYED has no cpu_ns column: a stub without work, or not "
                         "replayed with --measure)",
                         &oom);
  // A replay of a stub with work always has churn_bytes, even with no call made.
  if (!any && ob < 0)
    w->calls_unknown = why("unknown (ORIGINAL has no calls_* or churn_bytes columns)", &oom);
  else if (rb < 0)
    w->calls_unknown = why("unknown (REPLAYED has no churn_bytes column: a stub without work, or "
                           "not replayed with --measure)",
                           &oom);
  int ofl = memstub_trace_column(orig, "minor_faults"), rfl = memstub_trace_column(repl, "minor_faults");
  if (ofl < 0)
    w->faults_unknown = why("unknown (ORIGINAL has no minor_faults column)", &oom);
  else if (rfl < 0)
    w->faults_unknown = why("unknown (REPLAYED has no minor_faults column: not replayed with "
                            "--measure, or a replay without resident data)",
                            &oom);
  if (oom) return -1;
  if (w->cpu_unknown && w->calls_unknown && w->faults_unknown) return 0;
  // Per interval between consecutive compared rows: 4 + kinds series, original and replayed.
  enum { S_CPU, S_CALLS, S_CHURN, S_ALLOCS, S_FAULTS, S_KIND, S_N = S_KIND + MEMSTUB_WORK_KINDS };
  size_t m = r->compared ? r->compared : 1;
  int64_t *buf = malloc(m * (2 * S_N + 1) * sizeof *buf);
  if (!buf) return -1;
  int64_t *a[S_N], *b[S_N], *scratch = buf + 2 * S_N * m;
  for (int s = 0; s < S_N; s++) {
    a[s] = buf + (size_t)s * m;
    b[s] = buf + (size_t)(S_N + s) * m;
  }
  size_t ncpu = 0, ncalls = 0, nfaults = 0;
  int64_t p = -1;
  for (size_t i = 0; i < orig->n; i++) {
    if (r->match[i] < 0) continue;
    int64_t q = r->match[i];
    if (p >= 0 && q >= r->match[p]) {
      int64_t rp = r->match[p];
      if (!w->cpu_unknown)
        ncpu += delta(orig, ocpu, p, (int64_t)i, repl, rcpu, rp, q, a[S_CPU] + ncpu,
                      b[S_CPU] + ncpu);
      if (!w->faults_unknown)
        nfaults += delta(orig, ofl, p, (int64_t)i, repl, rfl, rp, q, a[S_FAULTS] + nfaults,
                         b[S_FAULTS] + nfaults);
      if (!w->calls_unknown) {
        int64_t ta = 0, tb = 0;
        for (int k = 0; k < MEMSTUB_WORK_KINDS; k++) {
          const int *ok = oc + k * MEMSTUB_WORK_CLASSES, *rk = rc_ + k * MEMSTUB_WORK_CLASSES;
          a[S_KIND + k][ncalls] = row_sum(orig, ok, MEMSTUB_WORK_CLASSES, p, (int64_t)i);
          b[S_KIND + k][ncalls] = row_sum(repl, rk, MEMSTUB_WORK_CLASSES, rp, q);
          ta += a[S_KIND + k][ncalls];
          tb += b[S_KIND + k][ncalls];
        }
        a[S_CALLS][ncalls] = ta;
        b[S_CALLS][ncalls] = tb;
        a[S_ALLOCS][ncalls] = ta - a[S_KIND + MEMSTUB_CALL_FREE][ncalls];
        b[S_ALLOCS][ncalls] = tb - b[S_KIND + MEMSTUB_CALL_FREE][ncalls];
        a[S_CHURN][ncalls] = row_sum(orig, &ob, 1, p, (int64_t)i);
        b[S_CHURN][ncalls++] = row_sum(repl, &rb, 1, rp, q);
      }
    }
    p = (int64_t)i;
  }
  if (!w->cpu_unknown) series(a[S_CPU], b[S_CPU], ncpu, scratch, &w->cpu);
  if (!w->faults_unknown) series(a[S_FAULTS], b[S_FAULTS], nfaults, scratch, &w->faults);
  if (!w->calls_unknown) {
    series(a[S_CALLS], b[S_CALLS], ncalls, scratch, &w->calls);
    series(a[S_CHURN], b[S_CHURN], ncalls, scratch, &w->churn);
    series(a[S_ALLOCS], b[S_ALLOCS], ncalls, scratch, &w->allocs);
    // The block's reallocs that were frees are the frees they stand for.
    const char *bf = memstub_trace_get_meta(repl, MEMSTUB_WORK_BLOCK_FREES_META);
    long long nbf = bf ? strtoll(bf, NULL, 10) : 0;
    if (nbf > 0 && nbf <= w->allocs.replayed_total) {
      w->block_frees = nbf;
      w->allocs.replayed_total -= nbf;
      set_total_pct(&w->allocs);
    }
    for (int k = 0; k < MEMSTUB_WORK_KINDS; k++)
      series(a[S_KIND + k], b[S_KIND + k], ncalls, scratch, &w->kind[k]);
  }
  free(buf);
  return 0;
}

// "+1.25%", or "-" when the original's total is 0 and the replay's not.
static const char *pct_text(char buf[40], double v) {
  if (isfinite(v)) snprintf(buf, 40, "%+.2f%%", v);
  else snprintf(buf, 40, "-");
  return buf;
}

void ms__compare_work_text(FILE *f, const memstub_compare_report *r) {
  const memstub_compare_work *w = &r->work;
  char a[40], b[40], c[40], d[40], e[40];
  if (w->cpu_unknown) {
    fprintf(f, "cpu    %s: not compared\n", w->cpu_unknown);
  } else {
    const memstub_compare_series *s = &w->cpu;
    ms__fmt_ns(s->original_total, a, sizeof a);
    ms__fmt_ns(s->replayed_total, b, sizeof b);
    ms__fmt_ns(s->p50_abs, d, sizeof d);
    ms__fmt_ns(s->p90_abs, e, sizeof e);
    fprintf(f, "cpu    original %s, replayed %s (%s) over %zu intervals; |error| per interval p50 %s, p90 %s\n",
            a, b, pct_text(c, s->total_pct), s->intervals, d, e);
  }
  if (w->faults_unknown) {
    fprintf(f, "faults %s: not compared\n", w->faults_unknown);
  } else {
    const memstub_compare_series *s = &w->faults;
    // A what-if's target faults as its resident memory is scaled (traces/whatif.c).
    double rs = r->whatif.is ? r->whatif.scales.rss : 1.0;
    char sc[64] = "";
    if (rs != 1.0) snprintf(sc, sizeof sc, " (x%g, as the resident memory)", rs);
    fprintf(f, "faults minor: original %" PRId64 "%s, replayed %" PRId64 " (%s) over %zu intervals; "
               "|error| per interval p50 %" PRId64 ", p90 %" PRId64 "\n",
            s->original_total, sc, s->replayed_total, pct_text(c, s->total_pct),
            s->intervals, s->p50_abs, s->p90_abs);
  }
  if (w->calls_unknown) {
    fprintf(f, "calls  %s: not compared\n", w->calls_unknown);
    return;
  }
  // The allocating calls are the stub's to keep; each kind and the frees
  // differ by design (verdict.c says why).
  const memstub_compare_series *s = &w->allocs;
  fprintf(f,
          "calls  allocating (malloc, calloc, realloc, memalign) original %" PRId64
          ", replayed %" PRId64 " (%s); |error| per interval p50 %" PRId64 ", p90 %" PRId64 "\n",
          s->original_total, s->replayed_total, pct_text(c, s->total_pct), s->p50_abs, s->p90_abs);
  if (w->block_frees > 0)
    fprintf(f, "       (the stub made %" PRId64 ": %" PRId64 " of its heap block's reallocs stand "
               "for recorded frees, counted as those)\n",
            s->replayed_total + w->block_frees, w->block_frees);
  fprintf(f, "       every kind original %" PRId64 ", replayed %" PRId64
             " (by kind and frees: by design, below)\n",
          w->calls.original_total, w->calls.replayed_total);
  s = &w->churn;
  ms__fmt_bytes(s->original_total, a, sizeof a);
  ms__fmt_bytes(s->replayed_total, b, sizeof b);
  ms__fmt_bytes(s->p50_abs, d, sizeof d);
  ms__fmt_bytes(s->p90_abs, e, sizeof e);
  fprintf(f, "churn  original %s, replayed %s (%s); |error| per interval p50 %s, p90 %s\n", a, b,
          pct_text(c, s->total_pct), d, e);
}

// A series' members (after an opening brace), keys in unit.
static void json_series(FILE *f, const memstub_compare_series *s, const char *unit) {
  fprintf(f,
          "\"original_%s\": %" PRId64 ", \"replayed_%s\": %" PRId64 ", \"error_pct\": ", unit,
          s->original_total, unit, s->replayed_total);
  if (isfinite(s->total_pct)) fprintf(f, "%.6g", s->total_pct);
  else fputs("null", f);
  fprintf(f, ", \"intervals\": %zu, \"p50_abs_%s\": %" PRId64 ", \"p90_abs_%s\": %" PRId64,
          s->intervals, unit, s->p50_abs, unit, s->p90_abs);
}

// A why-unknown text as a JSON string (plain ASCII, written by ms__compare_work).
static void json_unknown(FILE *f, const char *u) {
  fputs("{\"known\": false, \"why\": \"", f);
  for (const char *p = u; *p; p++)
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else fputc(*p, f);
  fputs("\"}", f);
}

void ms__compare_work_json(FILE *f, const memstub_compare_report *r) {
  const memstub_compare_work *w = &r->work;
  fputs("  \"work\": {\"cpu\": ", f);
  if (w->cpu_unknown) json_unknown(f, w->cpu_unknown);
  else {
    fputs("{\"known\": true, ", f);
    json_series(f, &w->cpu, "ns");
    fputc('}', f);
  }
  fputs(",\n    \"faults\": ", f);
  if (w->faults_unknown) json_unknown(f, w->faults_unknown);
  else {
    fputs("{\"known\": true, ", f);
    json_series(f, &w->faults, "faults");
    fputc('}', f);
  }
  fputs(",\n    \"calls\": ", f);
  if (w->calls_unknown) {
    json_unknown(f, w->calls_unknown);
    fputs(",\n    \"churn\": ", f);
    json_unknown(f, w->calls_unknown);
    fputs("},\n", f);
    return;
  }
  fputs("{\"known\": true, ", f);
  json_series(f, &w->calls, "calls");
  fputs(", \"allocating\": {", f);
  json_series(f, &w->allocs, "calls");
  fprintf(f, ", \"block_frees\": %" PRId64 "}", w->block_frees);
  fputs(", \"by_kind\": {", f);
  for (int k = 0; k < MEMSTUB_WORK_KINDS; k++) {
    fprintf(f, "%s\n      \"%s\": {", k ? "," : "", kind_name[k]);
    json_series(f, &w->kind[k], "calls");
    fputc('}', f);
  }
  fputs("}},\n    \"churn\": {\"known\": true, ", f);
  json_series(f, &w->churn, "bytes");
  fputs("}},\n", f);
}
