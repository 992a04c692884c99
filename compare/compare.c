// Aligning a replayed trace with its original, and the error statistics.
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "malloc_model.h"
#include "timeline.h"
#include "ms_common.h"
#include "prim.h"

void memstub_compare_options_init(memstub_compare_options *o) {
  memset(o, 0, sizeof *o);
  o->late_ns = 10000;
  o->stack_slack = 16;
  o->heap_slack = 16;
  o->page_size = 0;
  o->mmap_threshold = MS__MALLOC_MMAP_THRESHOLD;
  o->rss_slack = 65536;
  o->mapped_slack = 0;
}

void memstub_compare_free(memstub_compare_report *r) {
  if (!r) return;
  void *owned[] = {r->original_name, r->replayed_name, r->match, r->stack_unknown,
                   r->heap_unknown, r->rss_unknown, r->mapped_unknown,
                   r->work.cpu_unknown, r->work.calls_unknown, r->work.faults_unknown,
                   r->timeline.summary, r};
  for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) free(owned[i]);
}

/* Where a problem is, so each front end can say it its own way: which trace
 * (0 original, 1 replayed), the 0-based data row (-1: the header row) and the
 * 0-based field. which < 0: no position. */
typedef struct where {
  int which;
  int64_t row;
  size_t field;
  const char *meta;  // a metadata line's key (field: the offset in its value), or NULL: a row
} where;

__attribute__((format(printf, 4, 5))) static int fail_at(where *w, memstub_error *err, where at,
                                                         const char *fmt, ...) {
  *w = at;
  va_list ap;
  va_start(ap, fmt);
  char msg[MEMSTUB_ERRMSG_MAX];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return memstub_error_set(err, -EINVAL, "%s", msg);
}

// Statistics of e[0..n) - offset; scratch holds n values. pre: n > 0.
static void time_stats(const int64_t *e, size_t n, int64_t offset, int64_t late_ns,
                       int64_t *scratch, memstub_compare_time *t) {
  double sum = 0;
  memset(t, 0, sizeof *t);
  t->min = INT64_MAX;
  t->max = INT64_MIN;
  for (size_t i = 0; i < n; i++) {
    int64_t v = ms__sat_sub(e[i], offset);
    if (v < t->min) t->min = v;
    if (v > t->max) t->max = v;
    if (v > late_ns) t->late++;
    sum += (double)v;
    scratch[i] = ms__sat_abs(v);
  }
  t->mean = sum / (double)n;
  qsort(scratch, n, sizeof *scratch, ms__cmp_i64);
  t->p50_abs = ms__rank_i64(scratch, n, 50);
  t->p99_abs = ms__rank_i64(scratch, n, 99);
  t->max_abs = scratch[n - 1];
}

static void mem_finish(memstub_compare_mem *m, double sum_abs, size_t n) {
  m->mean_abs = sum_abs / (double)n;
  m->exact_share = (double)m->exact / (double)n;
}

memstub_late_cause memstub_compare_late_cause(int64_t error_ns, int64_t wake_late_ns,
                                              int64_t work_excess_ns, int64_t off_cpu_ns) {
  return memstub_compare_late_why(error_ns, wake_late_ns, work_excess_ns, off_cpu_ns, 0);
}

memstub_late_cause memstub_compare_late_why(int64_t error_ns, int64_t wake_late_ns,
                                            int64_t work_excess_ns, int64_t off_cpu_ns,
                                            int64_t behind_ns) {
  if (off_cpu_ns >= 0 && off_cpu_ns >= error_ns - error_ns / 2) return MEMSTUB_LATE_OFF_CPU;
  if (behind_ns < 0) behind_ns = 0;
  if (behind_ns > wake_late_ns) behind_ns = wake_late_ns > 0 ? wake_late_ns : 0;
  int64_t over = wake_late_ns - behind_ns;  // what the wait itself overshot
  if (over >= work_excess_ns && over >= behind_ns) return MEMSTUB_LATE_WAKE;
  return work_excess_ns >= behind_ns ? MEMSTUB_LATE_WORK : MEMSTUB_LATE_BEHIND;
}

const char *memstub_late_cause_name(memstub_late_cause c, int json) {
  static const char *text[] = {"woke late", "work", "not running", "unknown", "behind"};
  static const char *keys[] = {"wake", "work", "off_cpu", "unknown", "behind"};
  if ((unsigned)c >= MEMSTUB_LATE_CAUSES) return json ? "unknown" : "unknown";
  return json ? keys[c] : text[c];
}

// The leading integer of metadata value key in t, or -1.
static int64_t meta_i64(const memstub_trace *t, const char *key) {
  const char *v = memstub_trace_get_meta(t, key);
  if (!v) return -1;
  size_t n = strspn(v, "0123456789");
  int64_t x;
  return n && ms__parse_i64(v, n, &x) == 0 ? x : -1;
}

/* Align repl's rows with orig's by repl's `point` column into r (match,
 * compared, missing, repeated, out_of_order): 0, -EINVAL located by *w,
 * or -ENOMEM. */
static int align(const memstub_trace *orig, const memstub_trace *repl,
                 const memstub_compare_options *o, memstub_compare_report *r,
                 memstub_error *err, where *w) {
  int pc = memstub_trace_column(repl, "point");
  if (pc < 0) {
    if (memstub_trace_column(orig, "point") >= 0)
      return fail_at(w, err, (where){1, -1, 0, NULL},
                     "header row: no 'point' column, but ORIGINAL has one: are ORIGINAL and "
                     "REPLAYED given the wrong way round? (memstub compare ORIGINAL REPLAYED)");
    return fail_at(w, err, (where){1, -1, 0, NULL},
                   "header row: no 'point' column: REPLAYED must be a replayed trace, which "
                   "names the original row each row measures (memstub replay --measure "
                   "writes one)");
  }
  size_t n = orig->n;
  r->original_rows = n;
  r->replayed_rows = repl->n;
  r->match = malloc((n ? n : 1) * sizeof *r->match);
  if (!r->match) return memstub_error_set(err, -ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) r->match[i] = -1;

  // The last replayed row for each point wins (a row is reached at its last
  // stub point).
  int64_t prev = -1;
  for (size_t j = 0; j < repl->n; j++) {
    int64_t p = memstub_trace_extra_row(repl, j)[pc];
    if (p < 0 || (uint64_t)p >= n)
      return fail_at(w, err, (where){1, (int64_t)j, 3 + (size_t)pc, NULL},
                     "point: %lld is out of range: ORIGINAL has %zu rows (points 0-%zu); is "
                     "REPLAYED a replay of ORIGINAL?",
                     (long long)p, n, n - 1);
    if (r->match[p] >= 0)
      r->repeated++;
    else
      r->compared++;
    r->match[p] = (int64_t)j;
    if (p < prev) r->out_of_order++;
    prev = p;
  }
  r->missing = n - r->compared;
  r->first_missing = -1;
  for (size_t i = 0; i < n && r->missing; i++)
    if (r->match[i] < 0) {
      r->first_missing = (int64_t)i;
      break;
    }
  if (r->compared * 2 < n && !o->allow_partial)
    return fail_at(w, err, (where){-1, 0, 0, NULL},
                   "REPLAYED measures only %zu of ORIGINAL's %zu points: it does not look like "
                   "a replay of ORIGINAL (--allow-partial compares it anyway)",
                   r->compared, n);
  return 0;
}

static char *unknown_meta(const memstub_trace *t, const char *key, int *oom);

/* The stack and heap errors over the aligned points into r->stack and
 * r->heap; a column ORIGINAL does not know (r->stack_unknown,
 * r->heap_unknown) stays 0. pre: r->compared > 0. */
static void mem_errors(const memstub_trace *orig, const memstub_trace *repl,
                       const memstub_compare_options *o, memstub_compare_report *r) {
  size_t n = orig->n;
  // The stub's heap block is the total above the trace's smallest heap total.
  int64_t heap_base = INT64_MAX;
  for (size_t i = 0; i < n; i++)
    if (orig->pts[i].heap_bytes < heap_base) heap_base = orig->pts[i].heap_bytes;
  memstub_compare_mem *st = &r->stack, *hp = &r->heap;
  st->min = hp->min = INT64_MAX;
  st->max = hp->max = INT64_MIN;
  double st_sum = 0, hp_sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (r->match[i] < 0) continue;
    const memstub_point *a = &orig->pts[i], *b = &repl->pts[r->match[i]];
    int64_t ds = ms__sat_sub(b->stack_bytes, a->stack_bytes), as = ms__sat_abs(ds);
    if (ds < st->min) st->min = ds;
    if (ds > st->max) st->max = ds;
    if (as > st->max_abs) st->max_abs = as;
    st_sum += (double)as;
    if (as <= o->stack_slack) st->exact++;

    int64_t dh = ms__sat_sub(b->heap_bytes, a->heap_bytes), ah = ms__sat_abs(dh);
    int paged = a->heap_bytes - heap_base >= o->mmap_threshold;
    if (dh < hp->min) hp->min = dh;
    if (dh > hp->max) hp->max = dh;
    if (ah > hp->max_abs) hp->max_abs = ah;
    hp_sum += (double)ah;
    if (paged) hp->paged++;
    if (ah <= o->heap_slack || (paged && ah <= o->page_size)) hp->exact++;
  }
  mem_finish(st, st_sum, r->compared);
  mem_finish(hp, hp_sum, r->compared);
  if (r->stack_unknown) memset(st, 0, sizeof *st);
  if (r->heap_unknown) memset(hp, 0, sizeof *hp);
}

/* The distribution of |b - a| over n aligned values into m: p50, p90 and
 * both peaks; and, with with_exact, the largest, mean, signed range and the
 * share within slack. scratch holds n values. pre: n > 0. */
static void mem_dist(const int64_t *a, const int64_t *b, size_t n, int64_t slack,
                     int with_exact, int64_t *scratch, memstub_compare_mem *m) {
  double sum = 0;
  if (with_exact) {
    m->min = INT64_MAX;
    m->max = INT64_MIN;
    m->max_abs = 0;
    m->exact = 0;
  }
  m->original_peak = m->replayed_peak = INT64_MIN;
  for (size_t i = 0; i < n; i++) {
    int64_t d = ms__sat_sub(b[i], a[i]), ad = ms__sat_abs(d);
    scratch[i] = ad;
    if (a[i] > m->original_peak) m->original_peak = a[i];
    if (b[i] > m->replayed_peak) m->replayed_peak = b[i];
    if (!with_exact) continue;
    if (d < m->min) m->min = d;
    if (d > m->max) m->max = d;
    if (ad > m->max_abs) m->max_abs = ad;
    if (ad <= slack) m->exact++;
    sum += (double)ad;
  }
  if (with_exact) mem_finish(m, sum, n);
  qsort(scratch, n, sizeof *scratch, ms__cmp_i64);
  m->p50_abs = ms__rank_i64(scratch, n, 50);
  m->p90_abs = ms__rank_i64(scratch, n, 90);
}

/* The four memory columns' distributions: stack and heap add percentiles and
 * peaks to mem_errors'; rss and mapped (extra columns) are compared here
 * when both traces have them and they are not unknown. a, b, scratch hold
 * r->compared values each. pre: r->compared > 0. */
static void mem_curves(const memstub_trace *orig, const memstub_trace *repl,
                       const memstub_compare_options *o, memstub_compare_report *r, int64_t *a,
                       int64_t *b, int64_t *scratch) {
  static const char *const name[4] = {"stack_bytes", "heap_bytes", "rss_bytes", "mapped_bytes"};
  memstub_compare_mem *m[4] = {&r->stack, &r->heap, &r->rss, &r->mapped};
  const char *unknown[4] = {r->stack_unknown, r->heap_unknown, r->rss_unknown, r->mapped_unknown};
  int64_t slack[4] = {o->stack_slack, o->heap_slack, o->rss_slack,
                      o->mapped_slack ? o->mapped_slack : o->page_size};
  for (int k = 0; k < 4; k++) {
    if (unknown[k]) continue;
    int ca = k >= 2 ? memstub_trace_column(orig, name[k]) : -1;
    int cb = k >= 2 ? memstub_trace_column(repl, name[k]) : -1;
    size_t n = 0;
    for (size_t i = 0; i < orig->n; i++) {
      if (r->match[i] < 0) continue;
      const memstub_point *pa = &orig->pts[i], *pb = &repl->pts[r->match[i]];
      if (k < 2) {
        a[n] = k ? pa->heap_bytes : pa->stack_bytes;
        b[n] = k ? pb->heap_bytes : pb->stack_bytes;
      } else {
        a[n] = memstub_trace_extra_row(orig, i)[ca];
        b[n] = memstub_trace_extra_row(repl, (size_t)r->match[i])[cb];
      }
      n++;
    }
    mem_dist(a, b, n, slack[k], k >= 2, scratch, m[k]);
  }
}

/* Why the rss_bytes or mapped_bytes column (key "rss", "mapped") is not
 * compared: ORIGINAL's metadata says unknown, or a trace lacks it; a copy,
 * NULL when both have it. */
static char *column_unknown(const memstub_trace *orig, const memstub_trace *repl,
                            const char *key, const char *column, int *oom) {
  char *meta = unknown_meta(orig, key, oom);
  if (meta || *oom) return meta;
  int in_orig = memstub_trace_column(orig, column) >= 0,
      in_repl = memstub_trace_column(repl, column) >= 0;
  if (in_orig && in_repl) return NULL;
  char buf[200];
  if (!in_orig && !in_repl)
    snprintf(buf, sizeof buf, "unknown (neither trace has the %s column)", column);
  else if (!in_orig)
    snprintf(buf, sizeof buf, "unknown (ORIGINAL has no %s column)", column);
  else
    snprintf(buf, sizeof buf,
             "unknown (REPLAYED has no %s column: replayed without measuring resident memory, "
             "or by an older memstub)",
             column);
  char *copy = ms__strdup(buf);
  if (!copy) *oom = 1;
  return copy;
}

/* The per-point time errors (e, and own without the points the host
 * delayed, each r->compared long) with the late points by cause. */
static void time_errors(const memstub_trace *orig, const memstub_trace *repl,
                        const memstub_compare_options *o, memstub_compare_report *r, int64_t *e,
                        int64_t *own, size_t *nown) {
  // Cause columns of a replayed trace (memstub replay --measure).
  int cw = memstub_trace_column(repl, "wake_late_ns"), ck = memstub_trace_column(repl, "work_ns"),
      co = memstub_trace_column(repl, "off_cpu_ns"),
      ct = memstub_trace_column(repl, "target_time_ns");
  r->late_by_cause.causes_known = cw >= 0 && ck >= 0 && ct >= 0;
  r->late_by_cause.off_cpu_known = r->late_by_cause.causes_known && co >= 0;
  size_t k = 0;
  *nown = 0;
  r->duration.first_point = r->duration.last_point = -1;
  for (size_t i = 0; i < orig->n; i++) {
    if (r->match[i] < 0) continue;
    const memstub_point *a = &orig->pts[i], *b = &repl->pts[r->match[i]];
    if (r->duration.first_point < 0) r->duration.first_point = (int64_t)i;
    r->duration.last_point = (int64_t)i;
    int64_t err_ns = ms__sat_sub(b->time_ns, a->time_ns);
    e[k++] = err_ns;
    int host = 0;
    if (err_ns > o->late_ns) {
      memstub_late_cause cause = MEMSTUB_LATE_UNKNOWN;
      if (r->late_by_cause.causes_known) {
        const int64_t *x = memstub_trace_extra_row(repl, (size_t)r->match[i]);
        // Predicted work: the schedule moved the row's deadline this much early.
        int64_t predicted = ms__sat_sub(a->time_ns, x[ct]);
        cause = memstub_compare_late_why(err_ns, x[cw], ms__sat_sub(x[ck], predicted),
                                         co >= 0 ? x[co] : -1, ms__late_behind(repl, r->match[i], ct));
      }
      r->late_by_cause.rows[cause]++;
      if (err_ns > r->late_by_cause.max_ns[cause]) r->late_by_cause.max_ns[cause] = err_ns;
      host = cause == MEMSTUB_LATE_OFF_CPU;
    }
    if (host) r->host_rows++;
    else own[(*nown)++] = err_ns;
  }
}

// The metadata value of key ("stack", "heap") when it says unknown: a copy, else NULL.
static char *unknown_meta(const memstub_trace *t, const char *key, int *oom) {
  const char *v = memstub_trace_get_meta(t, key);
  if (!v || strncmp(v, "unknown", 7) != 0) return NULL;
  char *copy = ms__strdup(v);
  if (!copy) *oom = 1;
  return copy;
}

/* The comparison, with problems located by *w (filled on -EINVAL). */
static int compare_core(const memstub_trace *orig, const memstub_trace *repl,
                        const memstub_compare_options *o, memstub_compare_report *r,
                        memstub_error *err, where *w) {
  w->which = -1;
  int rc = align(orig, repl, o, r, err, w);
  if (rc < 0) return rc;
  int oom = 0;
  r->stack_unknown = unknown_meta(orig, "stack", &oom);
  r->heap_unknown = unknown_meta(orig, "heap", &oom);
  // A replay that could not measure its heap (ASan's allocator) says so in its own.
  if (!r->heap_unknown && !oom && (r->heap_unknown = unknown_meta(repl, "heap", &oom)))
    r->heap_unknown_replayed = 1;
  if (!oom) r->rss_unknown = column_unknown(orig, repl, "rss", "rss_bytes", &oom);
  if (!oom) r->mapped_unknown = column_unknown(orig, repl, "mapped", "mapped_bytes", &oom);
  size_t m = r->compared, nown;
  int64_t *e = malloc(m * sizeof *e), *scratch = malloc(m * sizeof *scratch),
          *own = malloc(m * sizeof *own);
  if (oom || !e || !scratch || !own) {
    free(e);
    free(scratch);
    free(own);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  mem_curves(orig, repl, o, r, e, own, scratch);  // e and own are scratch until time_errors
  time_errors(orig, repl, o, r, e, own, &nown);
  if (ms__compare_kinds(orig, repl, r) < 0 || ms__compare_work(orig, repl, r) < 0) {
    free(e);
    free(scratch);
    free(own);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  mem_errors(orig, repl, o, r);
  time_stats(e, m, 0, o->late_ns, scratch, &r->time);
  memcpy(scratch, e, m * sizeof *e);
  qsort(scratch, m, sizeof *scratch, ms__cmp_i64);
  r->offset_ns = ms__rank_i64(scratch, m, 50);
  time_stats(e, m, r->offset_ns, o->late_ns, scratch, &r->adjusted);
  if (nown) time_stats(own, nown, 0, o->late_ns, scratch, &r->stub_time);
  free(e);
  free(scratch);
  free(own);
  r->replay_cpu_ns = meta_i64(repl, "cpu_ns");
  r->replay_off_cpu_ns = meta_i64(repl, "off_cpu_ns");
  r->replay_duration_ns = meta_i64(repl, "duration_ns");

  const memstub_point *of = &orig->pts[r->duration.first_point],
                      *ol = &orig->pts[r->duration.last_point],
                      *rf = &repl->pts[r->match[r->duration.first_point]],
                      *rl = &repl->pts[r->match[r->duration.last_point]];
  r->duration.original_ns = ms__sat_sub(ol->time_ns, of->time_ns);
  r->duration.replayed_ns = ms__sat_sub(rl->time_ns, rf->time_ns);
  // The target has no waiting for a CPU (ORIGINAL's taken out): nor the replay.
  r->duration.off_cpu_ns =
      r->timeline.runq_ns > 0 && r->replay_off_cpu_ns > 0 ? r->replay_off_cpu_ns : 0;
  r->duration.error_ns = ms__sat_sub(ms__sat_sub(r->duration.replayed_ns, r->duration.off_cpu_ns),
                                     r->duration.original_ns);
  r->duration.error_pct = r->duration.original_ns ? 100.0 * (double)r->duration.error_ns /
                                                        (double)r->duration.original_ns
                          : r->duration.error_ns == 0 ? 0.0
                          : r->duration.error_ns > 0  ? INFINITY
                                                      : -INFINITY;
  return 0;
}

/* The comparison on ORIGINAL's target timeline (traces/timeline.c: the one
 * memstub gen builds the stub on), unless the options ask for the recorded
 * times; r->timeline says which. */
static int on_target(const memstub_trace *orig, const memstub_trace *repl,
                     memstub_compare_report *r, memstub_error *err, where *w) {
  memstub_trace *target = NULL;
  ms__timeline tl;
  r->timeline.reference_wall_ns = r->timeline.reference_cpu_ns = -1;
  if (!r->options.recorded_times) {
    int rc = ms__timeline_trace(orig, &target, &tl, err);
    if (rc < 0) {
      memstub_error_prefix(err, r->original_name);
      return rc;
    }
  }
  if (target) {
    char line[1024];
    ms__timeline_describe(&tl, line, sizeof line);
    r->timeline.changed = 1;
    r->timeline.fitted = tl.kind == MS__TL_FITTED;
    r->timeline.reference_runs = tl.ref_runs;
    r->timeline.reference_wall_ns = tl.ref_wall_ns;
    r->timeline.reference_cpu_ns = tl.ref_cpu_ns;
    r->timeline.runq_ns = tl.runq_ns;
    if (!(r->timeline.summary = ms__strdup(line))) {
      memstub_trace_free(target);
      return memstub_error_set(err, -ENOMEM, "out of memory");
    }
  }
  // A what-if is judged against ORIGINAL with its scales (whatif.c).
  const memstub_trace *before = target ? target : orig;
  memstub_trace *scaled = NULL;
  size_t at;
  int rc = ms__compare_whatif_read(repl, r, &at, err);
  if (rc == -EINVAL) *w = (where){1, 0, at, "transforms"};  // REPLAYED's line, placed by the callers
  if (rc == 0 && r->whatif.is) rc = ms__compare_whatif_target(before, r, &scaled, err);
  if (rc == 0) rc = compare_core(scaled ? scaled : before, repl, &r->options, r, err, w);
  if (rc == 0) ms__compare_whatif_figures(before, scaled ? scaled : before, repl, r);
  memstub_trace_free(scaled);
  memstub_trace_free(target);
  if (rc == 0)
    r->timeline.recorded_ns = ms__sat_sub(orig->pts[r->duration.last_point].time_ns,
                                          orig->pts[r->duration.first_point].time_ns);
  return rc;
}

int memstub_compare_target(const memstub_trace *orig, memstub_trace **target, char **summary,
                           memstub_error *err) {
  ms__timeline tl;
  if (summary) *summary = NULL;
  int rc = ms__timeline_trace(orig, target, &tl, err);
  if (rc < 0 || !*target || !summary) return rc;
  char line[1024];
  ms__timeline_describe(&tl, line, sizeof line);
  if ((*summary = ms__strdup(line))) return 0;
  memstub_trace_free(*target);
  *target = NULL;
  return memstub_error_set(err, -ENOMEM, "out of memory");
}

static int check_options(const memstub_compare_options *o, memstub_error *err) {
  if (o->late_ns < 0 || o->stack_slack < 0 || o->heap_slack < 0 || o->page_size < 0 ||
      o->mmap_threshold < 0 || o->rss_slack < 0 || o->mapped_slack < 0)
    return memstub_error_set(err, -EINVAL,
                             "compare options: thresholds and slacks must not be negative");
  return 0;
}

/* Run the comparison. On -EINVAL with w->which >= 0, err->msg still lacks
 * its position: the callers add it their own way. */
static int run(const memstub_trace *orig, const char *orig_name, const memstub_trace *repl,
               const char *repl_name, const memstub_compare_options *o,
               memstub_compare_report **out, memstub_error *err, where *w) {
  *out = NULL;
  *w = (where){-1, 0, 0, NULL};
  memstub_compare_options def;
  memstub_compare_options_init(&def);
  int rc = check_options(o ? o : &def, err);
  if (!o) o = &def;
  if (rc < 0) return rc;
  memstub_compare_report *r = calloc(1, sizeof *r);
  if (!r) return memstub_error_set(err, -ENOMEM, "out of memory");
  r->options = *o;
  if (r->options.page_size == 0) r->options.page_size = ms__prim_page_size();
  r->original_name = ms__strdup(orig_name ? orig_name : "ORIGINAL");
  r->replayed_name = ms__strdup(repl_name ? repl_name : "REPLAYED");
  if (!r->original_name || !r->replayed_name)
    rc = memstub_error_set(err, -ENOMEM, "out of memory");
  else if (orig->n == 0 || repl->n == 0)
    rc = memstub_error_set(err, -EINVAL, "%s: empty trace",
                           orig->n == 0 ? r->original_name : r->replayed_name);
  else
    rc = on_target(orig, repl, r, err, w);
  return MS__HAND_OUT(rc, r, out, memstub_compare_free);
}

int memstub_compare_traces(const memstub_trace *orig, const char *orig_name,
                           const memstub_trace *repl, const char *repl_name,
                           const memstub_compare_options *o, memstub_compare_report **out,
                           memstub_error *err) {
  where w;
  int rc = run(orig, orig_name, repl, repl_name, o, out, err, &w);
  if (rc == -EINVAL && w.which >= 0 && err) {
    const char *name =
        w.which ? (repl_name ? repl_name : "REPLAYED") : (orig_name ? orig_name : "ORIGINAL");
    char pre[600];
    if (w.meta)  // the message names the metadata line and its field
      snprintf(pre, sizeof pre, "%s", name);
    else if (w.row < 0)
      snprintf(pre, sizeof pre, "%s: header row", name);
    else
      snprintf(pre, sizeof pre, "%s: row %lld", name, (long long)w.row + 1);
    // "header row: ..." messages already say so.
    if (w.row < 0 && strncmp(err->msg, "header row: ", 12) == 0)
      memmove(err->msg, err->msg + 12, strlen(err->msg + 12) + 1);
    memstub_error_prefix(err, pre);
  }
  return rc;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* The 1-based line and column of data row `row` (-1: the header row), field
 * `field`, in a trace file's text, found as the reader finds them. */
static void locate(const char *buf, size_t len, int64_t row, size_t field, size_t *line,
                   size_t *col) {
  const char *p = buf, *end = buf + len;
  int64_t data = -2;  // -1 once the header row is seen
  size_t ln = 0;
  *line = 1;
  *col = 1;
  while (p < end) {
    ln++;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl : end;
    const char *s = p;
    while (s < e && is_blank(*s)) s++;
    if (s < e && *s != '#' && *s != '\r') {
      data++;
      if (data == row) {
        const char *f = p;
        for (size_t k = 0; k < field; k++) {
          const char *c = memchr(f, ',', (size_t)(e - f));
          if (!c) break;
          f = c + 1;
        }
        while (f < e && is_blank(*f)) f++;
        *line = ln;
        *col = (size_t)(f - p) + 1;
        return;
      }
    }
    p = nl ? nl + 1 : end;
  }
}

/* The 1-based line and column of offset `at` in the value of metadata line
 * `key` (the last one: the reader keeps it), in a trace file's text. */
static void locate_meta(const char *buf, size_t len, const char *key, size_t at, size_t *line,
                        size_t *col) {
  const char *p = buf, *end = buf + len;
  size_t ln = 0, kl = strlen(key);
  *line = 1;
  *col = 1;
  while (p < end) {
    ln++;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl : end, *s = p;
    while (s < e && is_blank(*s)) s++;
    if (s < e && *s == '#') {
      for (s++; s < e && is_blank(*s); s++) {
      }
      if ((size_t)(e - s) > kl && memcmp(s, key, kl) == 0) {
        const char *v = s + kl;
        while (v < e && is_blank(*v)) v++;
        if (v < e && *v == ':') {
          for (v++; v < e && is_blank(*v); v++) {
          }
          *line = ln;
          *col = (size_t)(v - p) + at + 1;
        }
      }
    }
    p = nl ? nl + 1 : end;
  }
}

int memstub_compare_files(const char *orig_path, const char *repl_path,
                          const memstub_compare_options *o, memstub_compare_report **out,
                          memstub_error *err) {
  *out = NULL;
  if (strcmp(orig_path, "-") == 0 && strcmp(repl_path, "-") == 0)
    return memstub_error_set(err, -EINVAL,
                             "only one of ORIGINAL and REPLAYED can be standard input ('-')");
  const char *paths[2] = {orig_path, repl_path}, *names[2] = {"", ""};
  char *buf[2] = {NULL, NULL};
  size_t len[2] = {0, 0};
  memstub_trace *t[2] = {NULL, NULL};
  int rc = 0;
  for (int k = 0; k < 2 && rc == 0; k++) {
    names[k] = strcmp(paths[k], "-") == 0 ? "<stdin>" : paths[k];
    rc = ms__read_file(paths[k], &buf[k], &len[k], err);
    if (rc == 0) rc = memstub_trace_parse(names[k], buf[k], len[k], &t[k], err);
  }
  // Threads are compared thread by thread (threads.c): compared as one
  // thread, the rows of every thread were matched by point number alone.
  if (rc == 0 && memstub_trace_column(t[0], "thread") >= 0)
    rc = memstub_error_set(err, -EINVAL,
                           "%s has threads (a 'thread' column): a trace with threads is compared "
                           "thread by thread (memstub_compare_threads_traces; memstub compare "
                           "does so when ORIGINAL is a file, not standard input)",
                           names[0]);
  else if (rc == 0 && memstub_trace_column(t[1], "thread") >= 0)
    rc = memstub_error_set(err, -EINVAL,
                           "%s has threads (a 'thread' column) and %s has none: it is not a "
                           "replay of %s",
                           names[1], names[0], names[0]);
  where w = {.which = -1};
  if (rc == 0) rc = run(t[0], names[0], t[1], names[1], o, out, err, &w);
  if (rc == -EINVAL && err) {
    if (w.which >= 0) {
      size_t line, col;
      if (w.meta) locate_meta(buf[w.which], len[w.which], w.meta, w.field, &line, &col);
      else locate(buf[w.which], len[w.which], w.row, w.field, &line, &col);
      char pre[600];
      snprintf(pre, sizeof pre, "%s:%zu:%zu", names[w.which], line, col);
      memstub_error_prefix(err, pre);
    } else if (t[0] && t[1] && strncmp(err->msg, "REPLAYED", 8) == 0) {
      char pre[1200];
      snprintf(pre, sizeof pre, "%s vs %s", names[0], names[1]);
      memstub_error_prefix(err, pre);
    }
  }
  for (int k = 0; k < 2; k++) {
    memstub_trace_free(t[k]);
    free(buf[k]);
  }
  return rc;
}
