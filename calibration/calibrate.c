// memstub_calibrate: the paper's calibration functions (Trapp, Meyer &
// Facchi 2011, Section 4), run on the real replay engine.
//
// The calibration programs (programs.c) are replayed R times (runs.c), the
// samples fitted into the profile's figures (figures.c), and a
// component-like trace replayed once more to check the cost model against
// the profile. docs/calibration.md describes the traces and the models.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "prim.h"
#include "synth.h"

#ifndef MS__CAL_COMPILER
#define MS__CAL_COMPILER "unknown"
#endif
#ifndef MS__CAL_CFLAGS
#define MS__CAL_CFLAGS ""
#endif

void ms__cal_build_info(memstub_profile *p) {
  snprintf(p->compiler, sizeof p->compiler, "%s", MS__CAL_COMPILER);
  snprintf(p->cflags, sizeof p->cflags, "%s", MS__CAL_CFLAGS);
}

void memstub_calib_options_init(memstub_calib_options *o) {
  memset(o, 0, sizeof *o);
  o->repetitions = 100;
  o->cold_delay_ns = MEMSTUB_CALIB_COLD_DELAY_DEFAULT;
}

void memstub_calib_free(memstub_calib *c) {
  if (!c) return;
  for (size_t i = 0; i < MS__ARRAY_SIZE(c->samples); i++) free(c->samples[i]);
  free(c->basic_rep_ns);
  free(c);
}

/* ---- the host ------------------------------------------------------------------ */

// One counter read, back to back: the least mean of five batches.
static double timer_ticks(void) {
  double best = 1e30;
  for (int b = 0; b < 5; b++) {
    uint64_t a = ms__prim_cycles_begin(), z = a;
    for (int i = 0; i < 20000; i++) z = ms__prim_cycles_begin();
    double m = (double)(z - a) / 20000.0;
    if (m < best) best = m;
  }
  return best;
}

// The profile's header: the host, the runtime build and the counter.
static void profile_header(memstub_profile *p, const ms__cal_ctx *c) {
  p->format = MEMSTUB_PROFILE_FORMAT;
  snprintf(p->arch, sizeof p->arch, "%s", memstub_host_arch());
  snprintf(p->cpu, sizeof p->cpu, "%s", ms__prim_cpu_model());
  ms__prim_kernel(p->kernel, sizeof p->kernel);
  ms__prim_libc(p->libc, sizeof p->libc);
  ms__cal_build_info(p);
  ms__prim_utc_date(p->date, sizeof p->date);
  p->page_size = c->page;
  p->cycles_per_ns = c->cpn;
  p->cycles_invariant = c->invariant;
  p->timer_cycles = c->timer;
  p->repetitions = c->o->repetitions;
  p->mmap_threshold = MS__CAL_MMAP_THRESHOLD;
  p->heap_pad = c->heap_pad;
  p->cold_delay = c->o->cold_delay_ns;
  p->cold_repetitions = c->cold_reps;
  // A wait shorter than the deadline margin spins without sleeping.
  p->cold_min_delay = c->cold_reps > 0 ? MEMSTUB_MARGIN_DEFAULT : 0;
}

/* ---- the model check ----------------------------------------------------------- */

/* A component-like trace replayed with zero delays on a fresh stack,
 * unmeasured; the median of three durations against the profile's
 * prediction. */
static int model_check(ms__cal_ctx *c, int quick, memstub_error *err) {
  ms__synth_params sp = {.kind = MS__SYNTH_PAPER, .seed = 2011, .rows = quick ? 600 : 2400,
                         .duration_ns = 4800000000, .max_stack = 65536, .max_heap = 1 << 20};
  memstub_trace *t;
  int rc = ms__synth(&sp, &t);
  if (rc < 0) return memstub_error_set(err, rc, "cannot make the check trace");
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  go.time_scale = 0;
  memstub_gen *g = NULL;
  rc = memstub_gen_build(t, &go, &g, err);
  memstub_trace_free(t);
  if (rc < 0) return rc;
  double d[3], *cost = malloc((size_t)g->stub.numdata * sizeof *cost);
  if (!cost) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  for (int i = 0; i < 3 && rc == 0; i++) {
    memstub_replay *r;
    rc = ms__cal_run(c, g, 0, MEMSTUB_TIMING_DEADLINE, ms__cal_fresh_extra(c), &r, err);
    if (rc == 0) d[i] = (double)r->info.duration_ns;
    memstub_replay_free(r);
  }
  if (rc == 0) rc = memstub_gen_predict(&g->stub, &c->out->profile, 0, cost, err);
  if (rc == 0) {
    double sum = 0;
    for (int64_t i = 0; i < g->stub.numdata; i++) sum += cost[i];
    c->out->check_predicted_ns = sum;
    c->out->check_measured_ns = ms__cal_median(d, 3);
    c->out->check_points = g->stub.numdata;
  }
  free(cost);
  memstub_gen_free(g);
  return rc;
}

/* ---- calibrating --------------------------------------------------------------- */

static int check_options(const memstub_calib_options *o, memstub_error *err) {
  if (o->repetitions < 1 || o->repetitions > 100000)
    return memstub_error_set(err, -EINVAL, "repetitions: %lld is not between 1 and 100000",
                             (long long)o->repetitions);
  if (o->cold_delay_ns != 0 && (o->cold_delay_ns < MEMSTUB_CALIB_COLD_DELAY_MIN ||
                                o->cold_delay_ns > MEMSTUB_CALIB_COLD_DELAY_MAX))
    return memstub_error_set(err, -EINVAL, "cold delay: %lld ns is not 0 nor between %d and %d",
                             (long long)o->cold_delay_ns, MEMSTUB_CALIB_COLD_DELAY_MIN,
                             MEMSTUB_CALIB_COLD_DELAY_MAX);
  return 0;
}

// A calibration about to start: the counter measured, the result allocated.
static int ctx_init(ms__cal_ctx *c, const memstub_calib_options *o, memstub_error *err) {
  *c = (ms__cal_ctx){.o = o, .page = ms__prim_page_size()};
  c->invariant = ms__prim_cycles_invariant();
  c->cpn = c->invariant ? ms__prim_cycles_per_ns() : 1.0;
  c->timer = timer_ticks();
  c->out = calloc(1, sizeof *c->out);
  c->room = calloc((size_t)o->repetitions, sizeof *c->room);
  if (!c->out || !c->room) {
    free(c->out);
    free(c->room);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  // The cold traces run in every fifth repetition (quick: tenth), at least
  // once: a cold run sleeps a millisecond a point.
  if (o->cold_delay_ns > 0) {
    c->cold_every = o->quick ? 10 : 5;
    c->cold_reps = (o->repetitions + c->cold_every - 1) / c->cold_every;
  }
  // Runs: 12 a repetition, 3 more in a cold one, 3 for the model check.
  c->total = o->repetitions * 14 + 3 + c->cold_reps * 3;  // 2 of 14: the resident runs
  return 0;
}

static void ctx_free(ms__cal_ctx *c) {
  for (int i = 0; i < MS__S_COUNT; i++) ms__cal_ser_free(&c->s[i]), ms__cal_ser_free(&c->cs[i]);
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++) ms__cal_ser_free(&c->calls[k]);
  free(c->room);
}

// Every repetition, the fits and the model check.
static int calibrate(ms__cal_ctx *c, const ms__cal_programs *st, memstub_error *err) {
  const memstub_calib_options *o = c->o;
  int rc = 0;
  for (int rep = 0; rc == 0 && rep < o->repetitions; rep++)
    rc = ms__cal_repetition(c, st, rep, err);
  if (rc < 0) return rc;
  profile_header(&c->out->profile, c);
  if ((rc = ms__cal_fit_figures(c)) < 0)
    return memstub_error_set(err, rc, "cannot fit the calibration samples: %s", strerror(-rc));
  return model_check(c, o->quick, err);
}

int memstub_calibrate(const memstub_calib_options *o, memstub_calib **out, memstub_error *err) {
  *out = NULL;
  memstub_calib_options def;
  o = MS__OPTIONS_OR(o, def, memstub_calib_options_init);
  int rc = check_options(o, err);
  if (rc < 0) return rc;
  int64_t t_start = ms__prim_now_ns();
  // Every repetition sees glibc's default threshold, as a fresh process does
  // (glibc raises it when a mapped chunk is freed, unless it was set).
  ms__prim_heap_mmap_threshold(MS__CAL_MMAP_THRESHOLD);
  ms__cal_ctx c;
  if ((rc = ctx_init(&c, o, err)) < 0) return rc;
  ms__cal_programs st = {0};
  rc = ms__cal_programs_build(&st, o->quick, o->cold_delay_ns, err);
  if (rc == 0) rc = calibrate(&c, &st, err);
  ms__cal_programs_free(&st);
  ctx_free(&c);
  if (rc < 0) {
    memstub_calib_free(c.out);
    return rc;
  }
  c.out->duration_s = (double)(ms__prim_now_ns() - t_start) / 1e9;
  c.out->cold_duration_s = (double)c.cold_ns / 1e9;
  *out = c.out;
  return 0;
}
