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

/* One fit of a constant (fit_slope 0) or a line: least squares with one
 * trimming pass (floor as in ms__cal_fit), or with l1 least absolute
 * deviations (the median; nothing trimmed). Returns the points kept, or
 * -ENOMEM (also when ms__cal_fit_fail_after says so). */
static int64_t fit1(const double *x, const double *y, size_t n, int fit_slope, double floor,
                    int l1, double *a, double *b, double *r2, double *resid) {
  if (ms__cal_fit_fail_after > 0 && --ms__cal_fit_fail_after == 0) return -ENOMEM;  // injected
  if (!l1) return ms__cal_fit(x, y, n, fit_slope, floor, a, b, r2, resid, NULL);
  return ms__cal_fit_l1(x, y, n, fit_slope, a, b, r2, resid) < 0 ? -ENOMEM : (int64_t)n;
}

/* A constant figure: the pooled mean of the samples (outliers trimmed), or
 * with l1 their median; and the SCV of the per-repetition figures. y in
 * cycles; floor for trimming. */
static int fig_const(ms__cal_ctx *c, const ms__cal_ser *s, double floor, double cpn, int l1,
                     memstub_calib_time *t) {
  memset(t, 0, sizeof *t);
  if (s->n == 0) return 0;
  double a, b, r2, resid;
  int64_t kept = fit1(NULL, s->y, s->n, 0, floor, l1, &a, &b, &r2, &resid);
  if (kept < 0) return -ENOMEM;
  c->out->trimmed += (int64_t)s->n - kept;
  double *m = malloc((size_t)c->o->repetitions * sizeof *m);
  if (!m) return -ENOMEM;
  size_t nm = 0, pos = 0;
  for (int rep = 0; rep < c->o->repetitions; rep++) {
    size_t from, to;
    rep_range(s, rep, &from, &to, &pos);
    if (to == from) continue;
    if (fit1(NULL, s->y + from, to - from, 0, floor, l1, &m[nm], &b, &r2, &resid) < 0) {
      free(m);
      return -ENOMEM;
    }
    nm++;
  }
  double mean;
  ms__cal_mean_scv(m, nm, &mean, &t->scv);
  free(m);
  t->cycles = a > 0 ? a : 0;
  t->ns = t->cycles / cpn;
  return 0;
}

/* A line: the pooled fit y = base + per_fault x (least squares, or with l1
 * least absolute deviations), and the SCVs of the per-repetition fits'
 * coefficients (repetitions with 3 samples or more). */
static int fig_line(ms__cal_ctx *c, const ms__cal_ser *s, double floor, double cpn, int l1,
                    memstub_calib_line *l) {
  memset(l, 0, sizeof *l);
  if (s->n == 0) return 0;
  double a, b, r2, resid;
  int64_t kept = fit1(s->x, s->y, s->n, 1, floor, l1, &a, &b, &r2, &resid);
  if (kept < 0) return -ENOMEM;
  c->out->trimmed += (int64_t)s->n - kept;
  double *ma = malloc((size_t)c->o->repetitions * 2 * sizeof *ma);
  if (!ma) return -ENOMEM;
  double *mb = ma + c->o->repetitions;
  size_t nm = 0, pos = 0;
  for (int rep = 0; rep < c->o->repetitions; rep++) {
    size_t from, to;
    rep_range(s, rep, &from, &to, &pos);
    if (to - from < 3) continue;
    double r2r, rr;
    if (fit1(s->x + from, s->y + from, to - from, 1, floor, l1, &ma[nm], &mb[nm], &r2r, &rr) < 0) {
      free(ma);
      return -ENOMEM;
    }
    nm++;
  }
  double mean;
  ms__cal_mean_scv(ma, nm, &mean, &l->base.scv);
  ms__cal_mean_scv(mb, nm, &mean, &l->per_fault.scv);
  free(ma);
  if (b < 0) b = 0;  // a fault never saves time
  l->base.cycles = a;
  l->base.ns = a / cpn;
  l->per_fault.cycles = b;
  l->per_fault.ns = b / cpn;
  l->r2 = r2;
  l->resid_ns = resid / cpn;
  return 0;
}

/* ---- time per point and waiting --------------------------------------------------- */

// A basic point: 200 ns beyond the usual is an interruption (in cycles).
static double basic_floor(double cpn) { return 200 * cpn; }
// A heap or stack phase: 5 us beyond the usual is a preemption.
static double work_floor(double cpn) { return 5000 * cpn; }

/* Per repetition: time_basic in ns into out->basic_rep_ns, and how much
 * later a point whose deadline has passed ends, in cycles, into lat (room
 * for the repetitions; *nl set). 0 or -ENOMEM. */
static int basic_reps(ms__cal_ctx *c, double cpn, double *lat, size_t *nl) {
  memstub_calib *out = c->out;
  const ms__cal_ser *s = c->s;
  double fb = basic_floor(cpn);
  size_t pos = 0, pos2 = 0;
  *nl = 0;
  for (int rep = 0; rep < c->o->repetitions; rep++) {
    size_t f, t, f2, t2;
    double m, m2, b, r2, rr;
    rep_range(&s[MS__S_BASIC], rep, &f, &t, &pos);
    rep_range(&s[MS__S_LATE], rep, &f2, &t2, &pos2);
    if (t == f) continue;
    if (fit1(NULL, s[MS__S_BASIC].y + f, t - f, 0, fb, 0, &m, &b, &r2, &rr) < 0) return -ENOMEM;
    out->basic_rep_ns[out->nbasic++] = m / cpn;
    if (t2 == f2) continue;
    if (fit1(NULL, s[MS__S_LATE].y + f2, t2 - f2, 0, fb, 0, &m2, &b, &r2, &rr) < 0)
      return -ENOMEM;
    lat[(*nl)++] = m2 - m;
  }
  return 0;
}

// time_basic (and per repetition, for the plot), and time_wait_late: what a
// point whose deadline has passed adds.
static int fit_basic(ms__cal_ctx *c, double cpn) {
  memstub_profile *p = &c->out->profile;
  int rc = fig_const(c, &c->s[MS__S_BASIC], basic_floor(cpn), cpn, 0, &p->hot.basic);
  if (rc < 0) return rc;
  c->out->basic_rep_ns = malloc((size_t)c->o->repetitions * sizeof *c->out->basic_rep_ns);
  double *lat = malloc((size_t)c->o->repetitions * sizeof *lat);
  size_t nl;
  memstub_calib_time late;
  if (!c->out->basic_rep_ns || !lat || (rc = basic_reps(c, cpn, lat, &nl)) < 0 ||
      (rc = fig_const(c, &c->s[MS__S_LATE], basic_floor(cpn), cpn, 0, &late)) < 0) {
    free(lat);
    return rc < 0 ? rc : -ENOMEM;
  }
  double mean;
  ms__cal_mean_scv(lat, nl, &mean, &p->wait_late.scv);
  free(lat);
  p->wait_late.cycles = late.cycles > p->hot.basic.cycles ? late.cycles - p->hot.basic.cycles : 0;
  p->wait_late.ns = p->wait_late.cycles / cpn;
  return 0;
}

// time_measure_trace: what measuring a trace adds per point. The samples
// are ns already.
static int fit_measure(ms__cal_ctx *c, double cpn) {
  memstub_profile *p = &c->out->profile;
  memstub_calib_time meas;
  int rc = fig_const(c, &c->s[MS__S_MEAS], 1000, 1.0, 0, &meas);
  if (rc < 0) return rc;
  p->measure_trace.ns = meas.cycles > p->hot.basic.ns ? meas.cycles - p->hot.basic.ns : 0;
  p->measure_trace.cycles = p->measure_trace.ns * cpn;
  p->measure_trace.scv = meas.scv;
  return 0;
}

/* usleep's overshoot (ns) against the delay (ms). In usleep timing every
 * overshoot adds up, so the compensation needs its mean; only beyond 1 ms
 * above the line is a sample taken for a preemption and trimmed. The
 * samples are ns: fitted with cpn 1, then given cycles. */
static int fit_sleep(ms__cal_ctx *c, double cpn) {
  memstub_profile *p = &c->out->profile;
  const ms__cal_ser *s = &c->s[MS__S_SLEEP];
  int rc = fig_line(c, s, 1000000, 1.0, 0, &p->sleep_overshoot);
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

/* The work figures of one set of samples (hot or cold), except basic:
 * least squares (means), or with l1 least absolute deviations (medians). */
static int fit_costs(ms__cal_ctx *c, const ms__cal_ser *s, double cpn, int l1,
                     memstub_calib_costs *k) {
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
    int rc = fig[i].line ? fig_line(c, q, fl, cpn, l1, v) : fig_const(c, q, fl, cpn, l1, v);
    if (rc < 0) return rc;
  }
  return 0;
}

/* The cold figures: medians. Deadline compensation moves each row by its
 * predicted cost, and the cost that minimises a row's |error| is its median
 * (the cold costs' spread is skewed: the mean would make most rows early).
 * A basic point cold is the hot period with the work inside its records as
 * measured cold instead of hot (both medians). */
static int fit_cold(ms__cal_ctx *c, double cpn) {
  memstub_profile *p = &c->out->profile;
  memstub_calib_time hin, cin;
  int rc;
  if ((rc = fit_costs(c, c->cs, cpn, 1, &p->cold)) < 0 ||
      (rc = fig_const(c, &c->s[MS__S_BASIC_IN], basic_floor(cpn), cpn, 1, &hin)) < 0 ||
      (rc = fig_const(c, &c->cs[MS__S_BASIC_IN], work_floor(cpn), cpn, 1, &cin)) < 0)
    return rc;
  double v = p->hot.basic.cycles + cin.cycles - hin.cycles;
  p->cold.basic.cycles = v > 0 ? v : 0;
  p->cold.basic.ns = p->cold.basic.cycles / cpn;
  p->cold.basic.scv = cin.scv;
  return 0;
}

// The hot work figures (basic is fitted first, with the waiting), the
// cached stack's use, and the cold figures when cold runs ran.
static int fit_work(ms__cal_ctx *c, double cpn) {
  memstub_profile *p = &c->out->profile;
  int rc;
  if ((rc = fit_costs(c, c->s, cpn, 0, &p->hot)) < 0 ||
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

// Mean of y over s, rounded to whole bytes.
static int64_t mean_bytes(const ms__cal_ser *s) {
  double m, scv;
  ms__cal_mean_scv(s->y, s->n, &m, &scv);
  return llround(m);
}

/* The byte figures: the stack's frame and offset; then stack = offset +
 * per_frame x open frames + pushed bytes, by least squares against every
 * point, for R^2 and the largest residual; the heap's overheads. */
static int fit_bytes(ms__cal_ctx *c) {
  memstub_profile *p = &c->out->profile;
  const ms__cal_ser *s = c->s, *q = &s[MS__S_SBYTES];
  if (fit_stack_frame(c) < 0) return -ENOMEM;
  double a = 0, b = 0, r2 = 0, rr = 0;
  if (q->n && fit1(q->x, q->y, q->n, 1, 1e18, 0, &a, &b, &r2, &rr) < 0) return -ENOMEM;
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
    if (fit1(e->x, e->y, e->n, 1, 1e18, 0, &a, &b, &r2, &rr) < 0) return -ENOMEM;
    p->resident_entry = llround(a);
    p->resident_per_point = b;
  }
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
      (rc = fit_sleep(c, cpn)) < 0 || (rc = fit_work(c, cpn)) < 0 || (rc = fit_bytes(c)) < 0)
    return rc;
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
