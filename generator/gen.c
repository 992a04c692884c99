// memstub_gen_build: trace -> transforms -> bases -> normalised stub points.
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void memstub_gen_options_init(memstub_gen_options *o) {
  memset(o, 0, sizeof *o);
  o->time_scale = o->heap_scale = o->stack_scale = 1.0;
  o->timing = MEMSTUB_COMP_DEADLINE;
}

void memstub_gen_free(memstub_gen *g) {
  if (!g) return;
  free(g->use);
  free(g->point);
  free(g->name);
  free(g->source);
  free(g->transforms);
  free(g->calibration);
  free(g);
}

int ms__gen_append(memstub_gen *g, int64_t time, int64_t stack, int64_t heap, int64_t point) {
  size_t n = (size_t)g->stub.numdata;
  if (n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 256;
    struct memAlloc *u = realloc(g->use, cap * sizeof *u);
    if (!u) return -ENOMEM;
    g->use = u;
    int64_t *p = realloc(g->point, cap * sizeof *p);
    if (!p) return -ENOMEM;
    g->point = p;
    g->cap = cap;
  }
  g->use[n] = (struct memAlloc){.time = time, .stackAlloc = stack, .heapAlloc = heap};
  g->point[n] = point;
  g->stub.numdata++;
  return 0;
}

static int check_options(const memstub_gen_options *o, memstub_error *err) {
  if (o->name && *o->name && !ms__is_ident(o->name, strlen(o->name)))
    return memstub_error_set(err, -EINVAL,
                             "--name: '%s' is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)",
                             o->name);
  const struct {
    const char *opt;
    double v;
  } scales[] = {{"--time-scale", o->time_scale},
                {"--heap-scale", o->heap_scale},
                {"--stack-scale", o->stack_scale}};
  for (size_t i = 0; i < MS__ARRAY_SIZE(scales); i++)
    if (!isfinite(scales[i].v) || scales[i].v < 0)
      return memstub_error_set(err, -EINVAL, "%s: must be a finite number >= 0, not %g",
                               scales[i].opt, scales[i].v);
  if (o->profile && o->timing != MEMSTUB_COMP_DEADLINE && o->timing != MEMSTUB_COMP_USLEEP)
    return memstub_error_set(err, -EINVAL, "unknown timing mode %d", o->timing);
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

static int make_targets(const memstub_trace *t, const memstub_gen_options *o, ms__targets *tg,
                        memstub_error *err) {
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

void ms__gen_finish(memstub_gen *g, const ms__targets *tg) {
  struct memstub_stub *s = &g->stub;
  int64_t depth = 0, stack = 0, heap = 0, dur = 0;
  g->pushes = g->pops = g->constants = g->heap_up = g->heap_down = 0;
  s->max_depth = s->peak_stack = s->peak_heap = 0;
  for (int64_t i = 0; i < s->numdata; i++) {
    const struct memAlloc *u = &g->use[i];
    dur += u->time;
    if (u->stackAlloc > 0) {
      g->pushes++;
      if (++depth > s->max_depth) s->max_depth = depth;
    } else if (u->stackAlloc < 0) {
      g->pops++;
      depth--;
    } else {
      g->constants++;
    }
    stack += u->stackAlloc;
    heap += u->heapAlloc;
    // Totals moved, for the provenance: they may add up beyond 64 bits, so saturate.
    if (u->heapAlloc > 0 && ms__add_i64(g->heap_up, u->heapAlloc, &g->heap_up) < 0)
      g->heap_up = INT64_MAX;
    if (u->heapAlloc < 0 && ms__add_i64(g->heap_down, -u->heapAlloc, &g->heap_down) < 0)
      g->heap_down = INT64_MAX;
    if (stack > s->peak_stack) s->peak_stack = stack;
    if (heap > s->peak_heap) s->peak_heap = heap;
  }
  g->final_stack = stack;
  g->final_heap = heap;
  s->abi = MEMSTUB_STUB_ABI;
  s->name = g->name;
  s->use = g->use;
  s->point = g->point;
  s->norig = (int64_t)tg->n;
  s->time0_ns = tg->time0;
  s->stack_base = tg->stack_base;
  s->heap_base = tg->heap_base;
  s->duration_ns = dur;
  s->inserted = s->numdata - (int64_t)(tg->n - 1);
  s->source = g->source;
  s->transforms = g->transforms;
  s->calibration = g->calibration;
}

static int set_provenance(memstub_gen *g, const memstub_gen_options *o) {
  g->name = ms__strdup(o->name ? o->name : "");
  g->source = ms__strdup(o->source ? o->source : "(memory)");
  if (o->time_scale == 1.0 && o->heap_scale == 1.0 && o->stack_scale == 1.0)
    g->transforms = ms__strdup("none");
  else
    g->transforms = ms__asprintf("time x%g, heap x%g, stack x%g", o->time_scale, o->heap_scale,
                                 o->stack_scale);
  if (!o->profile)
    g->calibration = ms__strdup("none");
  else
    g->calibration = ms__asprintf("%s (%s timing)", o->profile_path ? o->profile_path : "(memory)",
                                  o->timing == MEMSTUB_COMP_USLEEP ? "usleep" : "deadline");
  return g->name && g->source && g->transforms && g->calibration ? 0 : -ENOMEM;
}

int memstub_gen_build(const memstub_trace *t, const memstub_gen_options *o, memstub_gen **out,
                      memstub_error *err) {
  *out = NULL;
  int rc = check_options(o, err);
  if (rc < 0) return rc;
  if ((rc = memstub_trace_validate(t, err)) < 0) return rc;
  if (t->n < 2)
    return memstub_error_set(err, -EINVAL,
                             "a stub needs at least two rows: the state at entry and a change");
  memstub_gen *g = calloc(1, sizeof *g);
  ms__targets tg = {0};
  if (!g || set_provenance(g, o) < 0) {
    rc = memstub_error_set(err, -ENOMEM, "out of memory");
    goto out;
  }
  if ((rc = make_targets(t, o, &tg, err)) < 0) goto out;
  ms__stack_comp sc = {0};
  if (o->profile && (rc = ms__gen_compensate(g, &tg, o, 0, &sc, err)) < 0) goto out;
  if ((rc = ms__gen_normalize(g, &tg, o->profile ? &sc : NULL)) < 0) {
    rc = memstub_error_set(err, rc, "out of memory");
    goto out;
  }
  ms__gen_finish(g, &tg);
  if (o->profile) {
    g->comp.stack_points = sc.reduced;
    g->comp.stack_replaced = sc.replaced;
    g->comp.stack_unmet = sc.unmet;
    g->comp.stack_unmet_max = sc.unmet_max;
    if ((rc = ms__gen_compensate(g, &tg, o, 1, &sc, err)) < 0) goto out;
    ms__gen_finish(g, &tg);
  }
  if (o->profile) g->stub.timing = o->timing;
out:
  free(tg.t);
  free(tg.s);
  free(tg.h);
  if (rc < 0) {
    memstub_gen_free(g);
    return rc;
  }
  *out = g;
  return 0;
}

int memstub_gen_check(const struct memstub_stub *s, memstub_error *err) {
  // A hand-edited numdata must not wrap the size below.
  if (s->numdata < 0 || (uint64_t)s->numdata >= SIZE_MAX / sizeof(int64_t))
    return memstub_error_set(err, -EINVAL, "the stub claims %lld points", (long long)s->numdata);
  int64_t *open = malloc((size_t)(s->numdata + 1) * sizeof *open);
  if (!open) return memstub_error_set(err, -ENOMEM, "out of memory");
  int64_t depth = 0, prev = 0;
  int rc = 0;
  for (int64_t i = 0; i < s->numdata && rc == 0; i++) {
    const struct memAlloc *u = &s->use[i];
    if (u->time < 0)
      rc = memstub_error_set(err, -EINVAL, "point %lld: negative delay %lld", (long long)i,
                             (long long)u->time);
    else if (u->stackAlloc > 0)
      open[depth++] = u->stackAlloc;
    else if (u->stackAlloc < 0 && depth == 0)
      rc = memstub_error_set(err, -EINVAL, "point %lld: pop with no open frame", (long long)i);
    else if (u->stackAlloc < 0 && -u->stackAlloc != open[depth - 1])
      rc = memstub_error_set(err, -EINVAL, "point %lld: pops %lld bytes from a frame of %lld",
                             (long long)i, (long long)-u->stackAlloc, (long long)open[depth - 1]);
    else if (u->stackAlloc < 0)
      depth--;
    if (rc == 0 && (s->point[i] < prev || s->point[i] >= s->norig))
      rc = memstub_error_set(err, -EINVAL, "point %lld: maps to row %lld out of order",
                             (long long)i, (long long)s->point[i]);
    prev = s->point[i];
  }
  free(open);
  return rc;
}
