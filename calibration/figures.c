// The fits: the samples of every run (runs.c) become the profile's figures.
//
// Each figure is fitted on all points of all repetitions (pooled); its SCV
// is that of the same figure fitted on each repetition alone. Hot figures
// are least squares with one trimming pass (means, the paper's); cold ones
// least absolute deviations (medians, for deadline compensation). fit.c
// holds the numerical fits; docs/calibration.md, "The models", the models.
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- one figure ----------------------------------------------------------------- */

// The range of samples of repetition rep in s (samples are added in order).
static void rep_range(const ms__cal_ser *s, int rep, size_t *from, size_t *to, size_t *pos) {
  size_t i = *pos;
  while (i < s->n && s->rep[i] < rep) i++;
  *from = i;
  while (i < s->n && s->rep[i] == rep) i++;
  *to = *pos = i;
}

int64_t ms__cal_fit_fail_after;

// One fit less before the injected failure (tests); 1 when this one fails.
static int fail_injected(void) {
  return ms__cal_fit_fail_after > 0 && --ms__cal_fit_fail_after == 0;
}

/* One least-squares fit with one trimming pass (floor as in ms__cal_fit):
 * the byte fits. Returns the points kept, or -ENOMEM (also when injected). */
static int64_t fit_lsq(const double *x, const double *y, size_t n, int fit_slope, double floor,
                       double *a, double *b, double *r2, double *resid) {
  if (fail_injected()) return -ENOMEM;
  return ms__cal_fit(x, y, n, fit_slope, floor, a, b, r2, resid, NULL);
}

/* The fit of series s and its interval (ms__cal_estimate: medians, or with
 * mean least squares): 0 or -ENOMEM (also when injected); its outliers
 * counted. */
static int estimate(ms__cal_ctx *c, const ms__cal_ser *s, int fit_slope, double floor, int mean,
                    ms__cal_est *e) {
  if (fail_injected()) return -ENOMEM;
  int rc = ms__cal_estimate(fit_slope ? s->x : NULL, s->y, s->rep, s->n, fit_slope, floor, mean,
                            e);
  c->out->trimmed += e->outliers;
  return rc;
}

// v (cycles) as a time figure, with its interval (cycles; -1 unknown).
static void set_time(memstub_calib_time *t, double v, double ci, double scv, double cpn) {
  t->cycles = v;
  t->ns = v / cpn;
  t->scv = scv;
  t->ci_ns = ci < 0 ? -1 : ci / cpn;
}

/* A constant figure: the median of the samples (y in cycles), with its
 * interval and the SCV of the per-repetition medians; floor for counting
 * outliers. */
static int fig_const(ms__cal_ctx *c, const ms__cal_ser *s, double floor, double cpn,
                     memstub_calib_time *t) {
  ms__cal_est e;
  int rc = estimate(c, s, 0, floor, 0, &e);
  if (rc < 0) return rc;
  set_time(t, e.a > 0 ? e.a : 0, e.ci_a, e.scv_a, cpn);
  return 0;
}

/* A line: the median line y = base + per_fault x over every sample (with
 * mean: least squares), with the intervals and the SCVs of the
 * per-repetition lines (repetitions with 3 samples or more). */
static int fig_line(ms__cal_ctx *c, const ms__cal_ser *s, double floor, double cpn, int mean,
                    memstub_calib_line *l) {
  memset(l, 0, sizeof *l);
  ms__cal_est e;
  int rc = estimate(c, s, 1, floor, mean, &e);
  if (rc < 0) return rc;
  set_time(&l->base, e.a, e.ci_a, e.scv_a, cpn);
  set_time(&l->per_fault, e.b > 0 ? e.b : 0, e.ci_b, e.scv_b, cpn);  // a fault never saves time
  if (s->n == 0) l->per_fault.ci_ns = -1;
  l->r2 = e.r2;
  l->resid_ns = e.resid / cpn;
  return 0;
}

// How many distinct x the series has (counting stops at 3).
static int distinct_x(const ms__cal_ser *s) {
  double seen[2];
  int k = 0;
  for (size_t i = 0; i < s->n && k < 3; i++) {
    int j = 0;
    while (j < k && seen[j] != s->x[i]) j++;
    if (j == k && k < 2) seen[k] = s->x[i];
    if (j == k) k++;
  }
  return k;
}

/* A cold line whose samples cannot place a line (fewer than three distinct
 * x: the cold heap trace moves its block to mmap at two sizes): the hot
 * line's shape h, scaled by the median of the cold samples over it. Its
 * intervals: the scale's and the hot line's, relative, added in quadrature. */
static int fig_line_scaled(ms__cal_ctx *c, const ms__cal_ser *s, const memstub_calib_line *h,
                           double cpn, memstub_calib_line *l) {
  ms__cal_ser q = *s;
  q.y = malloc((s->n + 1) * sizeof *q.y);
  if (!q.y) return -ENOMEM;
  for (size_t i = 0; i < s->n; i++) {
    double hot = h->base.cycles + h->per_fault.cycles * s->x[i];
    q.y[i] = hot > 0 ? s->y[i] / hot : 0;
  }
  ms__cal_est e;
  int rc = estimate(c, &q, 0, 1e18, 0, &e);
  free(q.y);
  if (rc < 0) return rc;
  memset(l, 0, sizeof *l);
  double k = e.a > 0 ? e.a : 0, rk = e.ci_a >= 0 && k > 0 ? e.ci_a / k : -1;
  const memstub_calib_time *ht[2] = {&h->base, &h->per_fault};
  memstub_calib_time *lt[2] = {&l->base, &l->per_fault};
  for (int i = 0; i < 2; i++) {
    double v = ht[i]->cycles * k, rh = ht[i]->ci_ns >= 0 && ht[i]->ns != 0
                                          ? ht[i]->ci_ns / fabs(ht[i]->ns) : -1;
    double ci = rk >= 0 && rh >= 0 ? fabs(v) * sqrt(rk * rk + rh * rh) : -1;
    set_time(lt[i], v, ci, e.scv_a, cpn);
  }
  double sse = 0;
  for (size_t i = 0; i < s->n; i++) {
    double r = s->y[i] - l->base.cycles - l->per_fault.cycles * s->x[i];
    sse += r * r;
  }
  l->resid_ns = s->n > 1 ? sqrt(sse / (double)(s->n - 1)) / cpn : 0;
  return 0;
}

/* ---- time per point and waiting --------------------------------------------------- */

// A basic point: 200 ns beyond the usual is an interruption (in cycles).
static double basic_floor(double cpn) { return 200 * cpn; }
// A heap or stack phase: 5 us beyond the usual is a preemption.
static double work_floor(double cpn) { return 5000 * cpn; }

// The median of v[0..n) without reordering it. -ENOMEM.
static int median_of(const double *v, size_t n, double *m) {
  double b, r2, rr;
  return ms__cal_fit_l1(NULL, v, n, 0, m, &b, &r2, &rr);
}

/* Per repetition: time_basic in ns into out->basic_rep_ns, and how much
 * later a point whose deadline has passed ends, in cycles, into lat (room
 * for the repetitions; *nl set): medians. 0 or -ENOMEM. */
static int basic_reps(ms__cal_ctx *c, double cpn, double *lat, size_t *nl) {
  memstub_calib *out = c->out;
  const ms__cal_ser *s = c->s;
  size_t pos = 0, pos2 = 0;
  *nl = 0;
  for (int rep = 0; rep < c->o->repetitions; rep++) {
    size_t f, t, f2, t2;
    double m, m2;
    rep_range(&s[MS__S_BASIC], rep, &f, &t, &pos);
    rep_range(&s[MS__S_LATE], rep, &f2, &t2, &pos2);
    if (t == f) continue;
    if (median_of(s[MS__S_BASIC].y + f, t - f, &m) < 0) return -ENOMEM;
    out->basic_rep_ns[out->nbasic++] = m / cpn;
    if (t2 == f2) continue;
    if (median_of(s[MS__S_LATE].y + f2, t2 - f2, &m2) < 0) return -ENOMEM;
    lat[(*nl)++] = m2 - m;
  }
  return 0;
}

// The interval of a difference or sum of figures measured apart: their
// half-widths in quadrature (-1 when one is unknown).
static double ci_sum(double a, double b) { return a < 0 || b < 0 ? -1 : sqrt(a * a + b * b); }

// time_basic (and per repetition, for the plot), and time_wait_late: what a
// point whose deadline has passed adds.
static int fit_basic(ms__cal_ctx *c, double cpn) {
  memstub_profile *p = &c->out->profile;
  int rc = fig_const(c, &c->s[MS__S_BASIC], basic_floor(cpn), cpn, &p->hot.basic);
  if (rc < 0) return rc;
  c->out->basic_rep_ns = malloc((size_t)c->o->repetitions * sizeof *c->out->basic_rep_ns);
  double *lat = malloc((size_t)c->o->repetitions * sizeof *lat);
  size_t nl;
  memstub_calib_time late;
  if (!c->out->basic_rep_ns || !lat || (rc = basic_reps(c, cpn, lat, &nl)) < 0 ||
      (rc = fig_const(c, &c->s[MS__S_LATE], basic_floor(cpn), cpn, &late)) < 0) {
    free(lat);
    return rc < 0 ? rc : -ENOMEM;
  }
  double mean, scv;
  ms__cal_mean_scv(lat, nl, &mean, &scv);
  free(lat);
  double v = late.cycles - p->hot.basic.cycles;
  set_time(&p->wait_late, v > 0 ? v : 0, ci_sum(late.ci_ns, p->hot.basic.ci_ns) * cpn, scv, cpn);
  return 0;
}

// time_measure_trace: what measuring a trace adds per point. The samples
// are ns already.
static int fit_measure(ms__cal_ctx *c, double cpn) {
  memstub_profile *p = &c->out->profile;
  memstub_calib_time meas;
  int rc = fig_const(c, &c->s[MS__S_MEAS], 1000, 1.0, &meas);
  if (rc < 0) return rc;
  double v = meas.cycles - p->hot.basic.ns;  // ns
  set_time(&p->measure_trace, (v > 0 ? v : 0) * cpn, ci_sum(meas.ci_ns, p->hot.basic.ci_ns) * cpn,
           meas.scv, cpn);
  return 0;
}

/* usleep's overshoot (ns) against the delay (ms). In usleep timing every
 * overshoot adds up, so the compensation needs its mean: least squares,
 * only beyond 1 ms above the line is a sample taken for a preemption and
 * trimmed. The samples are ns: fitted with cpn 1, then given cycles. */
static int fit_sleep(ms__cal_ctx *c, double cpn) {
  memstub_profile *p = &c->out->profile;
  const ms__cal_ser *s = &c->s[MS__S_SLEEP];
  int rc = fig_line(c, s, 1000000, 1.0, 1, &p->sleep_overshoot);
  if (rc < 0) return rc;
  p->sleep_overshoot.base.cycles *= cpn;
  p->sleep_overshoot.per_fault.cycles *= cpn;
  if (s->n == 0) return 0;
  double *v = malloc(s->n * sizeof *v);
  if (!v) return -ENOMEM;
  memcpy(v, s->y, s->n * sizeof *v);
  ms__cal_median(v, s->n);  // sorts
  p->sleep_overshoot_p90_ns = v[(size_t)((double)(s->n - 1) * 0.9)];
  free(v);
  return 0;
}

/* ---- the work of a point, hot and cold -------------------------------------------- */

/* The work figures of one set of samples (hot, or cold: then hot holds the
 * hot figures), except basic: medians. */
static int fit_costs(ms__cal_ctx *c, const ms__cal_ser *s, double cpn,
                     const memstub_calib_costs *hot, memstub_calib_costs *k) {
  static const struct {
    int series;
    size_t off;  // in memstub_calib_costs
    int line;    // a line in x, else a constant
  } fig[] = {
      {MS__S_HALLOC0, offsetof(memstub_calib_costs, heap_alloc_nofault), 0},
      {MS__S_HALLOC1, offsetof(memstub_calib_costs, heap_alloc_fault), 0},
      {MS__S_HUSE, offsetof(memstub_calib_costs, heap_use), 1},
      {MS__S_HSHRINK, offsetof(memstub_calib_costs, heap_shrink), 0},
      {MS__S_MALLOC0, offsetof(memstub_calib_costs, heap_mmap_alloc_nofault), 0},
      {MS__S_MALLOC1, offsetof(memstub_calib_costs, heap_mmap_alloc_fault), 0},
      {MS__S_MUSE, offsetof(memstub_calib_costs, heap_mmap_use), 1},
      {MS__S_MSHRINK, offsetof(memstub_calib_costs, heap_mmap_shrink), 1},
      {MS__S_MSHRINK0, offsetof(memstub_calib_costs, heap_mmap_shrink_inpage), 0},
      {MS__S_TOMMAP, offsetof(memstub_calib_costs, heap_to_mmap), 1},
      {MS__S_FROMMMAP, offsetof(memstub_calib_costs, heap_from_mmap), 0},
      {MS__S_SALLOC0, offsetof(memstub_calib_costs, stack_alloc_nofault), 0},
      {MS__S_SALLOC1, offsetof(memstub_calib_costs, stack_alloc_fault), 0},
      {MS__S_SUSE, offsetof(memstub_calib_costs, stack_use), 1},
      {MS__S_SPOP, offsetof(memstub_calib_costs, stack_pop), 0},
  };
  double fl = work_floor(cpn);
  for (size_t i = 0; i < MS__ARRAY_SIZE(fig); i++) {
    void *v = (char *)k + fig[i].off;
    const ms__cal_ser *q = &s[fig[i].series];
    int rc;
    if (!fig[i].line) rc = fig_const(c, q, fl, cpn, v);
    else if (hot && distinct_x(q) < 3)
      rc = fig_line_scaled(c, q, (const void *)((const char *)hot + fig[i].off), cpn, v);
    else rc = fig_line(c, q, fl, cpn, 0, v);
    if (rc < 0) return rc;
  }
  return 0;
}

/* The cold figures (medians, as the hot ones). A basic point cold is the
 * hot period with the work inside its records as measured cold instead of
 * hot. */
static int fit_cold(ms__cal_ctx *c, double cpn) {
  memstub_profile *p = &c->out->profile;
  memstub_calib_time hin, cin;
  int rc;
  if ((rc = fit_costs(c, c->cs, cpn, &p->hot, &p->cold)) < 0 ||
      (rc = fig_const(c, &c->s[MS__S_BASIC_IN], basic_floor(cpn), cpn, &hin)) < 0 ||
      (rc = fig_const(c, &c->cs[MS__S_BASIC_IN], work_floor(cpn), cpn, &cin)) < 0)
    return rc;
  double v = p->hot.basic.cycles + cin.cycles - hin.cycles;
  double ci = ci_sum(ci_sum(p->hot.basic.ci_ns, cin.ci_ns), hin.ci_ns);
  set_time(&p->cold.basic, v > 0 ? v : 0, ci * cpn, cin.scv, cpn);
  return 0;
}

// The hot work figures (basic is fitted first, with the waiting), the
// cached stack's use, and the cold figures when cold runs ran.
static int fit_work(ms__cal_ctx *c, double cpn) {
  memstub_profile *p = &c->out->profile;
  int rc;
  if ((rc = fit_costs(c, c->s, cpn, NULL, &p->hot)) < 0 ||
      (rc = fig_line(c, &c->s[MS__S_SUSE_RT], work_floor(cpn), cpn, 0, &p->stack_use_retouch)) < 0)
    return rc;
  return c->cold_reps > 0 ? fit_cold(c, cpn) : 0;
}

/* ---- bytes ------------------------------------------------------------------------ */

/* The overhead per frame is what a push moves the stack pointer beyond its
 * alloca, measured exactly at every push (the median, frames below the
 * first); the offset is what the first frame adds beyond that. */
static int fit_stack_frame(ms__cal_ctx *c) {
  memstub_profile *p = &c->out->profile;
  const ms__cal_ser *q = &c->s[MS__S_SFRAME];
  double *v = malloc((q->n + 1) * sizeof *v), *w = malloc((q->n + 1) * sizeof *w);
  if (!v || !w) {
    free(v);
    free(w);
    return -ENOMEM;
  }
  size_t nv = 0, nw = 0;
  for (size_t i = 0; i < q->n; i++) {
    if (q->x[i] >= 2) v[nv++] = q->y[i];
    else w[nw++] = q->y[i];
  }
  double frame = nv ? ms__cal_median(v, nv) : ms__cal_median(w, nw);
  p->stack_per_frame = llround(frame) > 0 ? llround(frame) : 0;
  p->stack_offset = nw ? llround(ms__cal_median(w, nw)) - p->stack_per_frame : 0;
  free(v);
  free(w);
  return 0;
}

/* Mean of y over s in whole bytes, rounded toward zero: the arena's chunk
 * rounding averages about -0.5 B, which rounding to nearest made -1 B in a
 * --quick calibration (-0.56) and 0 in a full one (-0.37). */
static int64_t mean_bytes(const ms__cal_ser *s) {
  double m, scv;
  ms__cal_mean_scv(s->y, s->n, &m, &scv);
  return (int64_t)trunc(m);
}

/* The byte figures: the stack's frame and offset; then stack = offset +
 * per_frame x open frames + pushed bytes, by least squares against every
 * point, for R^2 and the largest residual; the heap's overheads. */
static int fit_bytes(ms__cal_ctx *c) {
  memstub_profile *p = &c->out->profile;
  const ms__cal_ser *s = c->s, *q = &s[MS__S_SBYTES];
  if (fit_stack_frame(c) < 0) return -ENOMEM;
  double a = 0, b = 0, r2 = 0, rr = 0;
  if (q->n && fit_lsq(q->x, q->y, q->n, 1, 1e18, &a, &b, &r2, &rr) < 0) return -ENOMEM;
  p->stack_fit_r2 = r2;
  for (size_t i = 0; i < q->n; i++) {
    int64_t e = llabs(llround(q->y[i] - (double)p->stack_offset -
                              (double)p->stack_per_frame * q->x[i]));
    if (e > p->stack_fit_max_resid) p->stack_fit_max_resid = e;
  }
  p->heap_overhead_empty = mean_bytes(&s[MS__S_HB_EMPTY]);
  p->heap_overhead_inuse = mean_bytes(&s[MS__S_HB_INUSE]);
  p->heap_overhead_mmap = mean_bytes(&s[MS__S_HB_MMAP]);
  // Resident: the overhead above the targets (compensated), and the entry's
  // bytes against the points measured: entry + per point x points.
  p->resident_overhead = mean_bytes(&s[MS__S_RES_INUSE]);
  const ms__cal_ser *e = &s[MS__S_RES_ENTRY];
  p->resident_entry = 0;
  p->resident_per_point = 0;
  if (e->n) {
    if (fit_lsq(e->x, e->y, e->n, 1, 1e18, &a, &b, &r2, &rr) < 0) return -ENOMEM;
    p->resident_entry = llround(a);
    p->resident_per_point = b;
  }
  return 0;
}

/* ---- the allocator calls ------------------------------------------------------------ */

// The calls' figures: the median of the rounds (ns), with its interval.
static int fit_calls(ms__cal_ctx *c) {
  memstub_profile *p = &c->out->profile;
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++) {
    memstub_calib_time t;
    int rc = fig_const(c, &c->calls[k], 1e18, 1.0, &t);
    if (rc < 0) return rc;
    p->call_ns[k] = t.ns;
    p->call_ci_ns[k] = t.ci_ns;
  }
  p->spin_steps_per_ns = c->spin_rate;
  memcpy(p->touch_ns, c->touch_ns, sizeof p->touch_ns);
  return 0;
}

/* ---- the models against the faults and places counted ----------------------------- */

// Eq. 4, and the generator's count of pages beyond those written before,
// against the faults counted.
static void check_faults(ms__cal_ctx *c) {
  memstub_calib *out = c->out;
  const memstub_profile *p = &out->profile;
  const ms__cal_ser *s = c->s;
  for (size_t i = 0; i < s[MS__S_HEAP_EQ4].n; i++) {
    double d = fabs(s[MS__S_HEAP_EQ4].x[i] - s[MS__S_HEAP_EQ4].y[i]);
    out->eq4_heap_points++;
    out->eq4_heap_exact += d == 0;
    out->eq4_heap_within1 += d <= 1;
  }
  for (size_t i = 0; i < s[MS__S_STACK_EQ4].n; i++) {
    double d = fabs(s[MS__S_STACK_EQ4].x[i] - s[MS__S_STACK_EQ4].y[i]);
    out->eq4_stack_points++;
    out->eq4_stack_exact += d == 0;
    out->eq4_stack_within1 += d <= 1;
  }
  const ms__cal_ser *q = &s[MS__S_STACK_EQ4F];
  for (size_t i = 0; i < q->n; i++) {
    // With the frame overhead: the frame is F + a bytes on top of
    // offset + sum a + depth x F.
    int64_t x = p->stack_per_frame + (int64_t)q->x[i];
    int64_t y = p->stack_offset + (int64_t)q->z[i] + (int64_t)q->w[i] * p->stack_per_frame;
    double d = fabs((double)ms__cal_eq4(x, y, c->page) - q->y[i]);
    out->eq4_stackf_points++;
    out->eq4_stackf_exact += d == 0;
  }
  for (size_t i = 0; i < s[MS__S_HEAP_HW].n; i++) {
    out->model_heap_points++;
    out->model_heap_exact += s[MS__S_HEAP_HW].x[i] == s[MS__S_HEAP_HW].y[i];
  }
}

// The arena's room: the median over the repetitions of the largest block
// grown in place there; then the placement rule against every point.
static int fit_placement(ms__cal_ctx *c) {
  memstub_calib *out = c->out;
  memstub_profile *p = &out->profile;
  size_t nrep = (size_t)c->o->repetitions;
  double *v = malloc(nrep * sizeof *v);
  if (!v) return -ENOMEM;
  memcpy(v, c->room, nrep * sizeof *v);
  p->heap_arena_room = llround(ms__cal_median(v, nrep));
  free(v);
  const ms__cal_ser *q = &c->s[MS__S_HEAP_PLACE];
  int64_t hw = 0, rep = -1;
  int pm = 0;
  for (size_t i = 0; i < q->n; i++) {
    if (q->rep[i] != rep) rep = q->rep[i], hw = p->heap_pad, pm = 0;
    int64_t block = (int64_t)q->x[i], old = (int64_t)q->z[i];
    pm = ms__cal_mapped_next(pm, block, old, hw, p->heap_arena_room, p->mmap_threshold);
    if (!pm && block > hw) hw = block;
    out->rule_points++;
    out->rule_agree += pm == (int)q->y[i];
  }
  return 0;
}

/* ---- samples for the plot --------------------------------------------------------- */

// What the plot draws beside a series' samples: a line, two levels (no
// fault / fault), or neither: the stack's bytes per open frame.
typedef struct model {
  const memstub_calib_line *line;
  const memstub_calib_time *nofault, *fault;
} model;

static double predicted(const memstub_profile *p, const model *m, double x) {
  if (m->line) return m->line->base.ns + m->line->per_fault.ns * x;
  if (m->nofault) return x > 0 ? m->fault->ns : m->nofault->ns;
  return (double)p->stack_offset + (double)p->stack_per_frame * x;
}

/* Samples for the plot: at most max of them, spread over the series a and
 * b (may be NULL) by a prime stride (a regular stride would alias with the
 * traces' patterns); bytes: y is not a time. */
static int keep_samples(memstub_calib *out, int which, const ms__cal_ser *a,
                        const ms__cal_ser *b, double cpn, const model *m, int bytes) {
  size_t n = a->n + (b ? b->n : 0), max = 3000, k = n < max ? n : max;
  memstub_calib_sample *v = malloc((k + 1) * sizeof *v);
  if (!v) return -ENOMEM;
  size_t stride = n % 7919 ? 7919 : 7907;
  for (size_t j = 0; j < k; j++) {
    size_t i = n <= max ? j : (j * stride) % n;
    const ms__cal_ser *s = i < a->n ? a : b;
    size_t at = i < a->n ? i : i - a->n;
    v[j].faults = s->x[at];
    v[j].value = bytes ? s->y[at] : s->y[at] / cpn;
    v[j].predicted = predicted(&out->profile, m, s->x[at]);
  }
  out->samples[which] = v;
  out->nsamples[which] = k;
  return 0;
}

static int keep_plot_samples(ms__cal_ctx *c, double cpn) {
  const memstub_profile *p = &c->out->profile;
  const memstub_calib_costs *h = &p->hot;
  const ms__cal_ser *s = c->s, *cs = c->cs;
  const struct {
    int which;  // MEMSTUB_CALIB_S_*
    const ms__cal_ser *a, *b;
    model m;
    int bytes;  // y is not a time in cycles
  } plot[] = {
      {MEMSTUB_CALIB_S_HEAP_USE, &s[MS__S_HUSE], NULL, {&h->heap_use, NULL, NULL}, 0},
      {MEMSTUB_CALIB_S_HEAP_MMAP_USE, &s[MS__S_MUSE], NULL, {&h->heap_mmap_use, NULL, NULL}, 0},
      {MEMSTUB_CALIB_S_HEAP_ALLOC, &s[MS__S_HALLOC0], &s[MS__S_HALLOC1],
       {NULL, &h->heap_alloc_nofault, &h->heap_alloc_fault}, 0},
      {MEMSTUB_CALIB_S_STACK_USE, &s[MS__S_SUSE], NULL, {&h->stack_use, NULL, NULL}, 0},
      {MEMSTUB_CALIB_S_STACK_RETOUCH, &s[MS__S_SUSE_RT], NULL,
       {&p->stack_use_retouch, NULL, NULL}, 0},
      {MEMSTUB_CALIB_S_STACK_ALLOC, &s[MS__S_SALLOC0], &s[MS__S_SALLOC1],
       {NULL, &h->stack_alloc_nofault, &h->stack_alloc_fault}, 0},
      {MEMSTUB_CALIB_S_STACK_BYTES, &s[MS__S_SBYTES], NULL, {NULL, NULL, NULL}, 1},
      {MEMSTUB_CALIB_S_SLEEP, &s[MS__S_SLEEP], NULL, {&p->sleep_overshoot, NULL, NULL}, 1},
      {MEMSTUB_CALIB_S_COLD_HEAP_MMAP_USE, &cs[MS__S_MUSE], NULL,
       {&p->cold.heap_mmap_use, NULL, NULL}, 0},
      {MEMSTUB_CALIB_S_COLD_STACK_USE, &cs[MS__S_SUSE], NULL, {&p->cold.stack_use, NULL, NULL},
       0},
  };
  for (size_t i = 0; i < MS__ARRAY_SIZE(plot); i++)
    if (keep_samples(c->out, plot[i].which, plot[i].a, plot[i].b, cpn, &plot[i].m,
                     plot[i].bytes) < 0)
      return -ENOMEM;
  return 0;
}

/* ---- all of them ------------------------------------------------------------------ */

int ms__cal_fit_figures(ms__cal_ctx *c) {
  double cpn = c->cpn;
  memstub_calib *out = c->out;
  memstub_profile *p = &out->profile;
  int rc;
  if ((rc = fit_basic(c, cpn)) < 0 || (rc = fit_measure(c, cpn)) < 0 ||
      (rc = fit_sleep(c, cpn)) < 0 || (rc = fit_work(c, cpn)) < 0 || (rc = fit_bytes(c)) < 0 ||
      (rc = fit_calls(c)) < 0)
    return rc;
  out->heap_moved = (int64_t)c->s[MS__S_HMOVE].n;
  check_faults(c);
  if ((rc = fit_placement(c)) < 0) return rc;
  p->eq4_heap_agreement =
      out->eq4_heap_points ? (double)out->eq4_heap_exact / (double)out->eq4_heap_points : 0;
  p->eq4_stack_agreement =
      out->eq4_stack_points ? (double)out->eq4_stack_exact / (double)out->eq4_stack_points : 0;
  // Samples fitted, and trimmed as outliers.
  for (int i = 0; i < MS__S_COUNT; i++) out->samples_total += (int64_t)(c->s[i].n + c->cs[i].n);
  return keep_plot_samples(c, cpn);
}
