// memstub_gen_build: trace -> transforms -> bases -> normalised stub points
// (the points themselves: points.c).
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void memstub_gen_options_init(memstub_gen_options *o) {
  memset(o, 0, sizeof *o);
  o->time_scale = o->heap_scale = o->stack_scale = o->cpu_scale = o->churn_scale = 1.0;
  o->rss_scale = o->mapped_scale = MEMSTUB_GEN_SCALE_HEAP;  // follow the heap
  o->timing = MEMSTUB_TIMING_NONE;  // the default: MEMSTUB_TIMING_DEFAULT with a profile
}

void memstub_gen_free(memstub_gen *g) {
  if (!g) return;
  free(g->use);
  free(g->point);
  free(g->name);
  free(g->source);
  free(g->transforms);
  free(g->calibration);
  free(g->mapped);
  free(g->rss);
  free(g->cpu);
  free(g->calls);
  free(g->churn);
  free(g->calltab);
  free(g->timeline);
  free(g->timeline_estimated);
  free(g->callseq);
  free(g->callend);
  free(g);
}

static int check_options(const memstub_gen_options *o, memstub_error *err) {
  int rc;
  if (o->name && *o->name && (rc = memstub_gen_name_check(o->name, NULL, 0, err)) < 0) {
    memstub_error_prefix(err, "--name");
    return rc;
  }
  const struct {
    const char *opt;
    double v;
  } scales[] = {{"--time-scale", o->time_scale},
                {"--heap-scale", o->heap_scale},
                {"--stack-scale", o->stack_scale},
                {"--rss-scale", o->rss_scale},
                {"--mapped-scale", o->mapped_scale},
                {"--cpu-scale", o->cpu_scale},
                {"--churn-scale", o->churn_scale}};
  for (size_t i = 0; i < MS__ARRAY_SIZE(scales); i++)
    if (!isfinite(scales[i].v) || (scales[i].v < 0 && !(i >= 3 && i <= 4 &&
                                                          scales[i].v == MEMSTUB_GEN_SCALE_HEAP)))
      return memstub_error_set(err, -EINVAL, "%s: must be a finite number >= 0, not %g",
                               scales[i].opt, scales[i].v);
  if (o->timing != MEMSTUB_TIMING_NONE && o->timing != MEMSTUB_TIMING_DEADLINE &&
      o->timing != MEMSTUB_TIMING_USLEEP && o->timing != MEMSTUB_TIMING_ONLINE)
    return memstub_error_set(err, -EINVAL, "unknown timing mode %d", o->timing);
  if (!(o->mem_share == MEMSTUB_WORK_MEM_NONE || (o->mem_share >= 0 && o->mem_share <= 1)))
    return memstub_error_set(err, -EINVAL, "memory share: %g is no share from 0 to 1",
                             o->mem_share);
  return 0;
}

// Scale one column of the trace; the row and column name a failure.
static int scale_col(const memstub_trace *t, size_t off, double f, const char *col,
                     const char *opt, int64_t *out, memstub_error *err) {
  for (size_t i = 0; i < t->n; i++) {
    int64_t v = *(const int64_t *)((const char *)&t->pts[i] + off);
    if (f == 1.0) {
      out[i] = v;
    } else if (ms__round_i64((double)v * f, &out[i]) < 0) {
      return memstub_error_set(err, -EINVAL, "row %zu: %s %lld overflows 64 bits with %s %g",
                               i + 1, col, (long long)v, opt, f);
    }
  }
  return 0;
}

static int make_targets(const memstub_trace *t, const memstub_gen_options *o, const ms__work *w,
                        ms__targets *tg, memstub_error *err) {
  tg->n = t->n;
  tg->t = malloc(t->n * sizeof(int64_t));
  tg->s = malloc(t->n * sizeof(int64_t));
  tg->h = malloc(t->n * sizeof(int64_t));
  if (!tg->t || !tg->s || !tg->h) return memstub_error_set(err, -ENOMEM, "out of memory");
  int rc;
  if ((rc = scale_col(t, offsetof(memstub_point, time_ns), o->time_scale, "time_ns",
                      "--time-scale", tg->t, err)) < 0 ||
      (rc = scale_col(t, offsetof(memstub_point, stack_bytes), o->stack_scale, "stack_bytes",
                      "--stack-scale", tg->s, err)) < 0 ||
      (rc = scale_col(t, offsetof(memstub_point, heap_bytes), o->heap_scale, "heap_bytes",
                      "--heap-scale", tg->h, err)) < 0)
    return rc;
  // Work columns: the times with the recorder's cost out and --cpu-scale.
  for (size_t i = 0; w->times && i < t->n; i++) {
    tg->t[i] = w->times[i];
    if (o->time_scale != 1.0 && ms__round_i64((double)w->times[i] * o->time_scale, &tg->t[i]) < 0)
      return memstub_error_set(err, -EINVAL, "row %zu: time_ns %lld overflows 64 bits with %s %g",
                               i + 1, (long long)w->times[i], "--time-scale", o->time_scale);
  }
  // Rebase: the stub replays changes, so it starts from the minima.
  tg->time0 = tg->t[0];
  tg->stack_base = tg->s[0];
  tg->heap_base = tg->h[0];
  for (size_t i = 1; i < t->n; i++) {
    if (tg->s[i] < tg->stack_base) tg->stack_base = tg->s[i];
    if (tg->h[i] < tg->heap_base) tg->heap_base = tg->h[i];
  }
  for (size_t i = 0; i < t->n; i++) {
    tg->t[i] -= tg->time0;
    tg->s[i] -= tg->stack_base;
    tg->h[i] -= tg->heap_base;
  }
  return 0;
}

static int set_provenance(memstub_gen *g, const memstub_gen_options *o) {
  g->name = ms__strdup(o->name ? o->name : "");
  g->source = ms__strdup(o->source ? o->source : "(memory)");
  ms__whatif w;
  char line[400];
  ms__gen_scales(o, &w);
  ms__whatif_format(&w, line, sizeof line);
  g->transforms = ms__strdup(line);
  if (!o->profile)
    g->calibration = ms__strdup("none");
  else
    g->calibration = ms__asprintf("%s (%s timing)", o->profile_path ? o->profile_path : "(memory)",
                                  o->timing == MEMSTUB_TIMING_USLEEP   ? "usleep"
                                  : o->timing == MEMSTUB_TIMING_ONLINE ? "online"
                                                                       : "deadline");
  return g->name && g->source && g->transforms && g->calibration ? 0 : -ENOMEM;
}

/* The optional column `name` of t scaled by f and rebased to its minimum,
 * into a new array *out ([t->n], NULL when t has no such column), its
 * minimum into *base. 0, -EINVAL (a value overflows) or -ENOMEM. */
static int extra_targets(const memstub_trace *t, const char *name, double f, const char *opt,
                         int64_t **out, int64_t *base, memstub_error *err) {
  *out = NULL;
  *base = 0;
  int col = memstub_trace_column(t, name);
  if (col < 0) return 0;
  int64_t *v = malloc(t->n * sizeof *v);
  if (!v) return memstub_error_set(err, -ENOMEM, "out of memory");
  for (size_t i = 0; i < t->n; i++) {
    int64_t x = memstub_trace_extra_row(t, i)[col];
    if (f != 1.0 && ms__round_i64((double)x * f, &x) < 0) {
      free(v);
      return memstub_error_set(err, -EINVAL, "row %zu: %s %lld overflows 64 bits with %s %g",
                               i + 1, name, (long long)memstub_trace_extra_row(t, i)[col], opt, f);
    }
    v[i] = x;
    if (i == 0 || x < *base) *base = x;
  }
  for (size_t i = 0; i < t->n; i++) v[i] -= *base;
  *out = v;
  return 0;
}

// The stub's resident layout, when g has resident targets.
static void resident_attach(memstub_gen *g) {
  if (!g->rss) return;
  g->stub.abi = MEMSTUB_STUB_ABI_RESIDENT;
  g->stub.mapped = g->mapped;
  g->stub.rss = g->rss;
}

/* Carry the rss_bytes and mapped_bytes columns to the points (after the
 * points are final): each point gets its row's resident target; the last
 * point of a row changes the mapped bytes to the row's total. A trace with
 * only one of the columns gets the other as "no target": rss follows the
 * heap and mapped totals (-1: touch everything, as without the columns), and
 * mapped stays 0. 0 or a negative errno with err set. */
static int resident_points(memstub_gen *g, const memstub_trace *t, const memstub_gen_options *o,
                           memstub_error *err) {
  int64_t *r = NULL, *m = NULL, rb = 0, mb = 0;
  ms__whatif w;
  ms__gen_scales(o, &w);  // resident and mapped memory follow the heap unless given
  int fr = o->rss_scale == MEMSTUB_GEN_SCALE_HEAP, fm = o->mapped_scale == MEMSTUB_GEN_SCALE_HEAP;
  int rc = extra_targets(t, "rss_bytes", w.rss, fr ? "--heap-scale" : "--rss-scale", &r, &rb, err);
  if (r) ms__gen_rss_settle(t, r);  // a heap fall's stale reading (points.c)
  if (rc == 0)
    rc = extra_targets(t, "mapped_bytes", w.mapped, fm ? "--heap-scale" : "--mapped-scale", &m,
                       &mb, err);
  if (rc < 0 || (!r && !m)) goto out;
  int64_t n = g->stub.numdata;
  size_t cap = n > 0 ? (size_t)n : 1;
  g->mapped = calloc(cap, sizeof *g->mapped);
  g->rss = calloc(cap, sizeof *g->rss);
  if (!g->mapped || !g->rss) {
    rc = memstub_error_set(err, -ENOMEM, "out of memory");
    goto out;
  }
  int64_t cur = 0;
  g->peak_rss = g->peak_mapped = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t row = g->point[i];
    g->rss[i] = r ? r[row] : -1;
    if (r && r[row] > g->peak_rss) g->peak_rss = r[row];
    if (m && (i + 1 == n || g->point[i + 1] != row)) {
      g->mapped[i] = m[row] - cur;
      cur = m[row];
      if (cur > g->peak_mapped) g->peak_mapped = cur;
    }
  }
  g->stub.rss_base = rb;
  g->stub.mapped_base = mb;
  resident_attach(g);
out:
  free(r);
  free(m);
  return rc;
}

int memstub_gen_build(const memstub_trace *t, const memstub_gen_options *opt, memstub_gen **out,
                      memstub_error *err) {
  *out = NULL;
  int rc = check_options(opt, err);
  if (rc < 0) return rc;
  // With a profile, no timing asked for compensates for the default one.
  memstub_gen_options eff = *opt;
  if (eff.profile && eff.timing == MEMSTUB_TIMING_NONE) eff.timing = MEMSTUB_TIMING_DEFAULT;
  const memstub_gen_options *o = &eff;
  if ((rc = memstub_trace_validate(t, err)) < 0) return rc;
  int64_t nthreads = memstub_trace_thread_count(t);
  if (nthreads > 1)
    return memstub_error_set(err, -EINVAL,
                             "the trace has %lld threads (a 'thread' column): one stub carries "
                             "one thread; build one per thread with memstub_gen_threads_build "
                             "(memstub gen writes them as one header; docs/formats.md, "
                             "\"Threads\")",
                             (long long)nthreads);
  if (t->n < 2)
    return memstub_error_set(err, -EINVAL,
                             "a stub needs at least two rows: the state at entry and a change");
  memstub_gen *g = calloc(1, sizeof *g);
  ms__targets tg = {0};
  ms__work wk = {0};
  if (!g || set_provenance(g, o) < 0) {
    rc = memstub_error_set(err, -ENOMEM, "out of memory");
    goto out;
  }
  if ((rc = ms__gen_work_read(t, o, &wk, err)) < 0) goto out;
  if (wk.present && wk.timeline.kind != MS__TL_RECORDED) {
    char line[1024];
    ms__timeline_describe(&wk.timeline, line, sizeof line);
    g->timeline_uneven = ms__timeline_uneven(&wk.timeline);
    char est[1024];
    if (ms__timeline_estimated(&wk.timeline, est, sizeof est) &&
        !(g->timeline_estimated = ms__strdup(est))) {
      rc = memstub_error_set(err, -ENOMEM, "out of memory");
      goto out;
    }
    if (!(g->timeline = ms__strdup(line))) {
      rc = memstub_error_set(err, -ENOMEM, "out of memory");
      goto out;
    }
  }
  if ((rc = make_targets(t, o, &wk, &tg, err)) < 0) goto out;
  ms__gen_whatif_before(g, t, o, &wk, &tg);
  ms__stack_comp sc = {0};
  if (o->profile && (rc = ms__gen_compensate(g, &tg, o, 0, &sc, err)) < 0) goto out;
  if ((rc = ms__gen_normalize(g, &tg, o->profile ? &sc : NULL)) < 0) {
    rc = memstub_error_set(err, rc, "out of memory");
    goto out;
  }
  ms__gen_finish(g, &tg);
  // Resident targets before the delays' compensation: its cost model counts
  // the pages the replay writes to them (compensate.c).
  if ((rc = resident_points(g, t, o, err)) < 0) goto out;
  if (o->profile) ms__gen_compensate_rss(g, o->profile);
  if (o->profile) {
    g->comp.stack_points = sc.reduced;
    g->comp.stack_replaced = sc.replaced;
    g->comp.stack_unmet = sc.unmet;
    g->comp.stack_unmet_max = sc.unmet_max;
    if ((rc = ms__gen_compensate(g, &tg, o, 1, &sc, err)) < 0) goto out;
    ms__gen_finish(g, &tg);
    resident_attach(g);  // ms__gen_finish set the plain layout again
  }
  g->stub.timing = o->timing;  // made for it; compensated for it with a profile
  rc = ms__gen_work_points(g, &wk, o, err);
  if (rc == 0) rc = ms__gen_work_model(g, t, o, err);
  ms__gen_whatif_after(g);
out:
  ms__gen_work_free(&wk);
  free(tg.t);
  free(tg.s);
  free(tg.h);
  return MS__HAND_OUT(rc, g, out, memstub_gen_free);
}
