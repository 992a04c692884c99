// How sure a stub's time compensation is (issue 28 item 21;
// docs/calibration.md, "How sure"): compensate.c records how much of the
// predicted work rests on each figure of the profile, and this file weighs
// those uses with the figures' 95 % intervals (NAME_ci95_ns): the interval
// of the predicted work, and the figures that are unsure, for memstub gen
// and memstub replay to warn about.
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "calib_fields.h"
#include "internal.h"

// One figure as the profile names it, and how much the stub used it.
typedef struct figure {
  char key[64];
  const memstub_calib_time *t;
  double w;  // uses, weighted
} figure;

// The work figures of one set (prefix time_ or time_cold_) into f (room for
// MS__FIG_SLOTS); returns how many.
static size_t cost_figures(const memstub_calib_costs *k, const double *w, const char *prefix,
                           figure *f) {
  static const struct {
    const char *name, *suffix;
    size_t off;
  } slots[] = {
#define TIME(name) {#name, "", offsetof(memstub_calib_costs, name)},
#define LINE(name, per)                                                                  \
  {#name, "_base", offsetof(memstub_calib_costs, name) + offsetof(memstub_calib_line, base)}, \
      {#name, per, offsetof(memstub_calib_costs, name) + offsetof(memstub_calib_line, per_fault)},
#define PER_FAULT(name) LINE(name, "_per_fault")
#define PER_PAGE(name) LINE(name, "_per_page")
#define SLOT(name, kind) kind(name)
      MS__CALIB_COSTS(SLOT)
#undef SLOT
#undef PER_PAGE
#undef PER_FAULT
#undef LINE
#undef TIME
  };
  size_t n = 0;
  for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
    snprintf(f[n].key, sizeof f[n].key, "%s%s%s_ns", prefix, slots[i].name, slots[i].suffix);
    f[n].t = (const void *)((const char *)k + slots[i].off);
    f[n].w = w[slots[i].off / sizeof(double)];
    n++;
  }
  return n;
}

static int unsure(const memstub_calib_time *t) { return memstub_calib_unsure(t->ns, t->ci_ns); }

void ms__gen_unsure(memstub_gen *g, const memstub_profile *p, const ms__fig_uses *u) {
  memstub_gen_comp *c = &g->comp;
  figure f[2 * MS__FIG_SLOTS + 4];
  size_t n = cost_figures(&p->hot, u->w[0], "time_", f);
  n += cost_figures(&p->cold, u->w[1], "time_cold_", f + n);
  const struct {
    const char *key;
    const memstub_calib_time *t;
    double w;
  } more[] = {{"time_wait_late_ns", &p->wait_late, u->wait_late},
              {"time_measure_trace_ns", &p->measure_trace, u->measure},
              {"time_sleep_overshoot_base_ns", &p->sleep_overshoot.base, u->sleep_base},
              {"time_sleep_overshoot_per_ms_ns", &p->sleep_overshoot.per_fault, u->sleep_per_ms}};
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++, n++) {
    snprintf(f[n].key, sizeof f[n].key, "%s", more[i].key);
    f[n].t = more[i].t;
    f[n].w = more[i].w;
  }
  // Without any interval (a profile from before them): nothing to say.
  double var = 0;
  int known = 0, unknown = 0;
  for (size_t i = 0; i < n; i++) {
    if (f[i].w <= 0) continue;
    if (f[i].t->ci_ns < 0) unknown = 1;
    else known = 1, var += (f[i].w * f[i].t->ci_ns) * (f[i].w * f[i].t->ci_ns);
  }
  c->time_cost_ci_ns = known && !unknown ? sqrt(var) : -1;
  c->unsure_figures = 0;
  c->unsure[0] = '\0';
  if (!known) return;
  // The unsure ones, the largest share of the interval first.
  for (;;) {
    size_t best = n;
    for (size_t i = 0; i < n; i++)
      if (f[i].w > 0 && unsure(f[i].t) &&
          (best == n || f[i].w * f[i].t->ci_ns > f[best].w * f[best].t->ci_ns))
        best = i;
    if (best == n) break;
    size_t len = strlen(c->unsure);
    if (c->unsure_figures < 3 && len + 1 < sizeof c->unsure) {
      const memstub_calib_time *t = f[best].t;
      if (t->ci_ns < 0)
        snprintf(c->unsure + len, sizeof c->unsure - len, "%s%s %.0f ns, no interval (x%.0f)",
                 len ? ", " : "", f[best].key, t->ns, f[best].w);
      else
        snprintf(c->unsure + len, sizeof c->unsure - len, "%s%s %.0f +- %.0f ns (x%.0f)",
                 len ? ", " : "", f[best].key, t->ns, t->ci_ns, f[best].w);
    }
    c->unsure_figures++;
    f[best].w = 0;
  }
}

int memstub_gen_comp_unsure(const memstub_gen *g, const char *profile, char *buf, size_t cap) {
  const memstub_gen_comp *c = &g->comp;
  if (c->unsure_figures <= 0 || cap == 0) return 0;
  char work[MS__FMT_MAX], ci[MS__FMT_MAX];
  ms__fmt_ns(c->time_cost_ns, work, sizeof work);
  if (c->time_cost_ci_ns >= 0) ms__fmt_ns(llround(c->time_cost_ci_ns), ci, sizeof ci);
  else snprintf(ci, sizeof ci, "?");
  snprintf(buf, cap,
           "%s: the time compensation rests on %lld figure%s whose 95 %% interval is wider than "
           "+-25 %% (or unknown): %s%s; predicted work %s +- %s. A longer calibration narrows "
           "them (memstub calibrate without --quick, or a larger --repeat)",
           profile ? profile : "calibration profile", (long long)c->unsure_figures,
           c->unsure_figures == 1 ? "" : "s", c->unsure, c->unsure_figures > 3 ? ", ..." : "",
           work, ci);
  return 1;
}
