// The generator: deltas, stack normalisation, transforms and the point map.
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "malloc_model.h"
#include "memstub/calib.h"
#include "memstub/gen.h"
#include "synth.h"

static memstub_trace *from_rows(const int64_t (*rows)[3], size_t n) {
  memstub_trace *t = memstub_trace_create();
  for (size_t i = 0; i < n; i++) ck_assert_int_eq(memstub_trace_append(t, rows[i][0], rows[i][1], rows[i][2]), 0);
  return t;
}

static memstub_gen *build(const memstub_trace *t, const memstub_gen_options *o) {
  memstub_gen_options def;
  memstub_gen_options_init(&def);
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_build(t, o ? o : &def, &g, &err) == 0, "%s", err.msg);
  return g;
}

/* Perform the points as the recursion would (a stack of frames, one heap
 * total) and check that after each row's last point the stack and heap equal
 * that row's totals above the bases, and that every pop closes its frame. */
static void replay_check(const memstub_trace *t, const memstub_gen *g) {
  const struct memstub_stub *s = &g->stub;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_check(s, &err) == 0, "%s", err.msg);
  int64_t *frames = malloc((size_t)(s->numdata + 1) * sizeof *frames);
  int64_t depth = 0, stack = 0, heap = 0, time = 0;
  int64_t smin = INT64_MAX, hmin = INT64_MAX;
  for (size_t i = 0; i < t->n; i++) {
    if (t->pts[i].stack_bytes < smin) smin = t->pts[i].stack_bytes;
    if (t->pts[i].heap_bytes < hmin) hmin = t->pts[i].heap_bytes;
  }
  ck_assert_int_eq(s->stack_base, smin);
  ck_assert_int_eq(s->heap_base, hmin);
  ck_assert_int_eq(s->norig, (int64_t)t->n);
  int64_t row_seen = 0;
  for (int64_t i = 0; i < s->numdata; i++) {
    const struct memAlloc *u = &s->use[i];
    time += u->time;
    if (u->stackAlloc > 0) {
      frames[depth++] = u->stackAlloc;
    } else if (u->stackAlloc < 0) {
      ck_assert_int_gt(depth, 0);
      ck_assert_int_eq(-u->stackAlloc, frames[depth - 1]);  // no pop exceeds its frame
      depth--;
    }
    stack += u->stackAlloc;
    heap += u->heapAlloc;
    ck_assert_int_ge(heap, 0);
    int64_t row = s->point[i];
    if (i + 1 == s->numdata || s->point[i + 1] != row) {  // the row's last point
      const memstub_point *p = &t->pts[row];
      ck_assert_int_eq(stack, p->stack_bytes - smin);
      ck_assert_int_eq(heap, p->heap_bytes - hmin);
      ck_assert_int_eq(time, p->time_ns - t->pts[0].time_ns);
      row_seen++;
    }
  }
  // Every row after the first has points; row 0 only when it is above a base.
  int row0 = t->pts[0].stack_bytes > smin || t->pts[0].heap_bytes > hmin;
  ck_assert_int_eq(row_seen, (int64_t)t->n - 1 + row0);
  ck_assert_int_eq(time, s->duration_ns);
  free(frames);
}

START_TEST(test_listing1) {
  static const int64_t rows[][3] = {
      {0, 0, 0}, {129000, 300, 0}, {352000, 400, 200}, {736000, 300, 160}, {848000, 0, 0}};
  memstub_trace *t = from_rows(rows, 5);
  memstub_gen *g = build(t, NULL);
  static const struct memAlloc want[4] = {
      {129000, 300, 0}, {223000, 100, 200}, {384000, -100, -40}, {112000, -300, -160}};
  ck_assert_int_eq(g->stub.numdata, 4);
  ck_assert_mem_eq(g->use, want, sizeof want);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(g->point[i], i + 1);
  ck_assert_int_eq(g->stub.inserted, 0);
  ck_assert_int_eq(g->stub.peak_stack, 400);
  ck_assert_int_eq(g->stub.max_depth, 2);
  ck_assert_int_eq(g->stub.peak_heap, 200);
  ck_assert_int_eq(g->stub.duration_ns, 848000);
  replay_check(t, g);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_non_lifo_example) {
  // +300, +100, then -150 becomes pop 100, pop 300, push 250.
  static const int64_t rows[][3] = {{0, 0, 0}, {10, 300, 0}, {20, 400, 0}, {30, 250, 8}};
  memstub_trace *t = from_rows(rows, 4);
  memstub_gen *g = build(t, NULL);
  static const struct memAlloc want[5] = {
      {10, 300, 0}, {10, 100, 0}, {10, -100, 0}, {0, -300, 0}, {0, 250, 8}};
  ck_assert_int_eq(g->stub.numdata, 5);
  ck_assert_mem_eq(g->use, want, sizeof want);
  static const int64_t map[5] = {1, 2, 3, 3, 3};
  ck_assert_mem_eq(g->point, map, sizeof map);
  ck_assert_int_eq(g->stub.inserted, 2);
  replay_check(t, g);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_constant_stack_kept) {
  static const int64_t rows[][3] = {{0, 0, 0}, {5, 64, 0}, {9, 64, 4096}, {12, 64, 0}, {20, 0, 0}};
  memstub_trace *t = from_rows(rows, 5);
  memstub_gen *g = build(t, NULL);
  ck_assert_int_eq(g->stub.numdata, 4);
  ck_assert_int_eq(g->use[1].stackAlloc, 0);
  ck_assert_int_eq(g->use[1].heapAlloc, 4096);
  ck_assert_int_eq(g->use[2].stackAlloc, 0);
  ck_assert_int_eq(g->constants, 2);
  replay_check(t, g);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_entry_above_bases) {
  // Row 0 is above the minima: the stub builds it on zero-delay points mapped to row 0.
  static const int64_t rows[][3] = {{1000, 1024, 500}, {2000, 1324, 400}, {3000, 24, 0}, {4000, 1024, 900}};
  memstub_trace *t = from_rows(rows, 4);
  memstub_gen *g = build(t, NULL);
  ck_assert_int_eq(g->stub.stack_base, 24);
  ck_assert_int_eq(g->stub.heap_base, 0);
  ck_assert_int_eq(g->stub.time0_ns, 1000);
  ck_assert_int_eq(g->point[0], 0);
  ck_assert_int_eq(g->use[0].time, 0);
  ck_assert_int_eq(g->use[0].stackAlloc, 1000);
  ck_assert_int_eq(g->use[0].heapAlloc, 500);
  replay_check(t, g);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_normalisation_property) {
  // Thousands of random traces with arbitrary stack and heap moves.
  for (uint64_t seed = 1; seed <= 3000; seed++) {
    uint64_t rs = seed;
    ms__synth_params p = {.kind = MS__SYNTH_RANDOM,
                          .seed = seed,
                          .rows = ms__rand_range(&rs, 2, 120),
                          .duration_ns = ms__rand_range(&rs, 0, 1000000),
                          .max_stack = ms__rand_range(&rs, 0, 1) ? 64 : 1 << 20,
                          .max_heap = ms__rand_range(&rs, 0, 1) ? 16 : 1 << 24};
    memstub_trace *t;
    ck_assert_int_eq(ms__synth(&p, &t), 0);
    memstub_gen *g = build(t, NULL);
    replay_check(t, g);
    memstub_gen_free(g);
    memstub_trace_free(t);
  }
}
END_TEST

START_TEST(test_component_like_sample_property) {
  ms__synth_params p = {.kind = MS__SYNTH_PAPER, .seed = 7, .rows = 20000,
                        .duration_ns = 4800000000, .max_stack = 65536, .max_heap = 1 << 20};
  memstub_trace *t;
  ck_assert_int_eq(ms__synth(&p, &t), 0);
  memstub_gen *g = build(t, NULL);
  replay_check(t, g);
  ck_assert_int_gt(g->constants, 0);
  ck_assert_int_gt(g->stub.peak_heap, MS__MALLOC_MMAP_THRESHOLD);  // crosses the mmap threshold
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_transforms) {
  static const int64_t rows[][3] = {{0, 0, 0}, {1000, 300, 1000}, {3000, 100, 3000}, {4001, 0, 0}};
  memstub_trace *t = from_rows(rows, 4);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.time_scale = 0.5;
  o.heap_scale = 0.5;
  o.stack_scale = 2;
  memstub_gen *g = build(t, &o);
  ck_assert_int_eq(g->use[0].time, 500);
  ck_assert_int_eq(g->use[0].stackAlloc, 600);
  ck_assert_int_eq(g->use[0].heapAlloc, 500);
  ck_assert_int_eq(g->stub.duration_ns, 2001);  // 4001 * 0.5 rounded to nearest (half away from zero)
  ck_assert_int_eq(g->stub.peak_heap, 1500);
  // Resident and mapped memory follow the heap; every scale is named.
  ck_assert_str_eq(g->stub.transforms,
                   "time x0.5, heap x0.5, stack x2, rss x0.5, mapped x0.5, cpu x1, churn x1");
  memstub_gen_free(g);
  o.time_scale = o.heap_scale = o.stack_scale = 1;
  g = build(t, &o);
  ck_assert_str_eq(g->stub.transforms, "none");
  memstub_gen_free(g);
  o.heap_scale = 0;  // "no heap at all"
  g = build(t, &o);
  ck_assert_int_eq(g->stub.peak_heap, 0);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_bad_input_refused) {
  static const int64_t rows[][3] = {{0, 0, 0}, {10, INT64_MAX / 2 + 1, 0}};
  memstub_trace *t = from_rows(rows, 2);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  memstub_gen *g = (memstub_gen *)1;
  memstub_error err = {0};
  o.stack_scale = 2;
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
  ck_assert_ptr_null(g);
  ck_assert_str_eq(err.msg, "row 2: stack_bytes 4611686018427387904 overflows 64 bits with --stack-scale 2");
  o.stack_scale = -1;
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
  ck_assert_str_eq(err.msg, "--stack-scale: must be a finite number >= 0, not -1");
  o.stack_scale = 1;
  o.name = "9lives";
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "--name: '9lives' is not a C identifier") != NULL, "%s", err.msg);
  o.name = NULL;
  t->n = 1;
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "at least two rows") != NULL, "%s", err.msg);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_check_rejects_broken_data) {
  struct memAlloc use[3] = {{1, 100, 0}, {1, -50, 0}, {1, 0, 0}};
  int64_t point[3] = {1, 2, 3};
  struct memstub_stub s = {.numdata = 3, .use = use, .point = point, .norig = 4};
  memstub_error err = {0};
  ck_assert_int_eq(memstub_gen_check(&s, &err), -EINVAL);
  ck_assert_str_eq(err.msg, "point 1: pops 50 bytes from a frame of 100");
  use[1].stackAlloc = -100;
  ck_assert_int_eq(memstub_gen_check(&s, &err), 0);
  use[2].stackAlloc = -1;
  ck_assert_int_eq(memstub_gen_check(&s, &err), -EINVAL);
  ck_assert_str_eq(err.msg, "point 2: pop with no open frame");
  use[2].stackAlloc = 0;
  point[2] = 1;
  ck_assert_int_eq(memstub_gen_check(&s, &err), -EINVAL);
  ck_assert_str_eq(err.msg, "point 2: maps to row 1 out of order");
}
END_TEST


/* ---- calibration: the overhead-aware normaliser ----------------------------- */

// A profile with only the stack and heap byte figures (no time costs).
static void byte_profile(memstub_profile *p, int64_t frame, int64_t offset, int64_t heap_inuse) {
  memset(p, 0, sizeof *p);
  p->format = MEMSTUB_PROFILE_FORMAT;
  snprintf(p->arch, sizeof p->arch, "%s", memstub_host_arch());
  p->page_size = sysconf(_SC_PAGESIZE);
  p->cycles_per_ns = 1;
  p->stack_per_frame = frame;
  p->stack_offset = offset;
  p->heap_overhead_inuse = heap_inuse;
  p->mmap_threshold = MS__MALLOC_MMAP_THRESHOLD;
  p->heap_pad = 16;
}

/* Replay the stack as the runtime does: each frame costs F plus its alloca,
 * rounded to 16 with the excess carried down (engine.c's allocate()), and
 * measured as the frames plus the offset O once one is open. Check every
 * original row: within 16 bytes of the trace, except the rows that cannot
 * be met (0 < total < O + F), which must be counted exactly and sit at the
 * closer of the two levels. */
static void comp_check(const memstub_trace *t, const memstub_gen *g, int64_t F, int64_t O,
                       int64_t heap_ov) {
  const struct memstub_stub *s = &g->stub;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_check(s, &err) == 0, "%s", err.msg);
  int64_t n = s->numdata, depth = 0, heap = 0;
  int64_t *want = malloc((size_t)(n + 1) * sizeof *want), *excess = malloc((size_t)(n + 2) * sizeof *excess);
  int64_t *moved = malloc((size_t)(n + 1) * sizeof *moved);
  excess[0] = 0;
  int64_t measured = 0, model = 0, unmet = 0;
  int64_t smin = INT64_MAX, hmin = INT64_MAX;
  for (size_t i = 0; i < t->n; i++) {
    if (t->pts[i].stack_bytes < smin) smin = t->pts[i].stack_bytes;
    if (t->pts[i].heap_bytes < hmin) hmin = t->pts[i].heap_bytes;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t sa = s->use[i].stackAlloc;
    if (sa > 0) {
      int64_t d = sa - excess[depth];
      d = d > 8 ? (d + 8) & ~(int64_t)15 : 0;
      moved[depth] = d;
      want[depth] = sa;
      excess[depth + 1] = excess[depth] + d - sa;
      depth++;
      measured += F + d;
      model += F + sa;
    } else if (sa < 0) {
      depth--;
      ck_assert_int_eq(-sa, want[depth]);
      measured -= F + moved[depth];
      model -= F + want[depth];
    }
    heap += s->use[i].heapAlloc;
    int64_t row = s->point[i];
    if (i + 1 < n && s->point[i + 1] == row) continue;  // not the row's last point
    int64_t T = t->pts[row].stack_bytes - smin, m = depth ? O + measured : 0;
    int64_t mo = depth ? O + model : 0;
    if (T > 0 && T < O + F) {
      unmet++;
      // The closer level: empty (0) or one empty frame (O + F + 1).
      int64_t best = T < O + F + 1 - T ? T : O + F + 1 - T;
      ck_assert_msg(llabs(mo - T) <= best, "row %lld: unmet at %lld for %lld, closer is %lld away",
                    (long long)row, (long long)mo, (long long)T, (long long)best);
    } else {
      ck_assert_msg(llabs(mo - T) <= 1, "row %lld: model %lld for %lld (F %lld O %lld)",
                    (long long)row, (long long)mo, (long long)T, (long long)F, (long long)O);
      ck_assert_msg(llabs(m - T) <= 16, "row %lld: measured %lld for %lld", (long long)row,
                    (long long)m, (long long)T);
    }
    // Heap: the target less the overhead in use (never below 0).
    int64_t H = t->pts[row].heap_bytes - hmin, hw = H > 0 ? H - heap_ov : 0;
    if (hw < 0) hw = 0;
    ck_assert_int_eq(heap, hw);
  }
  // Rows without points are never unmet; row 0 only counts when it was built.
  ck_assert_int_eq(g->comp.stack_unmet, unmet);
  free(want);
  free(excess);
  free(moved);
}

static memstub_gen *build_comp(const memstub_trace *t, const memstub_profile *p) {
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.profile = p;
  return build(t, &o);
}

START_TEST(test_comp_small_frames) {
  // 16- and 32-byte frames with F = 80: a rise below F re-pushes the top
  // frame larger; from an empty stack it cannot be met.
  static const int64_t rows[][3] = {{0, 0, 0},    {10, 300, 0}, {20, 316, 0}, {30, 348, 0},
                                    {40, 300, 0}, {50, 0, 0},   {60, 32, 0},  {70, 16, 0},
                                    {80, 50, 0},  {90, 0, 0}};
  memstub_trace *t = from_rows(rows, 10);
  memstub_profile p;
  byte_profile(&p, 80, 0, 0);
  memstub_gen *g = build_comp(t, &p);
  // push 300 - 80; then re-push 220 as 236 (pop, push), then as 268.
  ck_assert_int_eq(g->use[0].stackAlloc, 220);
  ck_assert_int_eq(g->use[1].stackAlloc, -220);
  ck_assert_int_eq(g->use[2].stackAlloc, 236);
  ck_assert_int_eq(g->comp.stack_replaced, 2);  // 316 and 348
  ck_assert_int_eq(g->comp.stack_unmet, 3);     // 32 and 16 stay empty, 50 pushes an empty frame
  ck_assert_int_eq(g->comp.stack_unmet_max, 32);
  comp_check(t, g, 80, 0, 0);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_comp_normaliser_property) {
  static const int64_t frames[] = {80, 64, 17, 200, 1, 0};
  for (uint64_t seed = 1; seed <= 1500; seed++) {
    uint64_t rs = seed * 7919;
    ms__synth_params sp = {.kind = MS__SYNTH_RANDOM,
                           .seed = seed,
                           .rows = ms__rand_range(&rs, 2, 100),
                           .duration_ns = 1000000,
                           .max_stack = ms__rand_range(&rs, 0, 1) ? 256 : 1 << 16,
                           .max_heap = 1 << 12};
    memstub_trace *t;
    ck_assert_int_eq(ms__synth(&sp, &t), 0);
    int64_t F = frames[seed % 6], O = seed % 5 == 0 ? 24 : 0, hov = (int64_t)(seed % 3) - 1;
    memstub_profile p;
    byte_profile(&p, F, O, hov);
    memstub_gen *g = build_comp(t, &p);
    comp_check(t, g, F, O, hov);
    memstub_gen_free(g);
    memstub_trace_free(t);
  }
}
END_TEST

START_TEST(test_comp_zero_overhead_is_plain) {
  // A profile of zeros changes nothing but the provenance.
  ms__synth_params sp = {.kind = MS__SYNTH_PAPER, .seed = 3, .rows = 500, .duration_ns = 100000000,
                         .max_stack = 65536, .max_heap = 1 << 20};
  memstub_trace *t;
  ck_assert_int_eq(ms__synth(&sp, &t), 0);
  memstub_profile p;
  byte_profile(&p, 0, 0, 0);
  memstub_gen *a = build(t, NULL), *b = build_comp(t, &p);
  ck_assert_int_eq(a->stub.numdata, b->stub.numdata);
  ck_assert_mem_eq(a->use, b->use, (size_t)a->stub.numdata * sizeof *a->use);
  // With a profile and no timing asked for: the default timing, online.
  ck_assert_int_eq(b->stub.timing, MEMSTUB_TIMING_ONLINE);
  ck_assert_msg(strstr(b->stub.calibration, "online timing") != NULL, "%s", b->stub.calibration);
  // Without a profile: made for no mode in particular, unless one is asked for.
  ck_assert_int_eq(a->stub.timing, MEMSTUB_TIMING_NONE);
  memstub_gen_free(a);
  memstub_gen_free(b);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_comp_time_deadline) {
  // Every point costs 1000 ns (time_basic); the deadline of a clock read 50 ns.
  static const int64_t rows[][3] = {{0, 0, 0}, {10000, 0, 0}, {10500, 0, 0}, {30000, 0, 0}};
  memstub_trace *t = from_rows(rows, 4);
  memstub_profile p;
  byte_profile(&p, 0, 0, 0);
  p.hot.basic.ns = 1000;
  p.wait_late.ns = 50;
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.profile = &p;
  o.timing = MEMSTUB_TIMING_DEADLINE;
  memstub_gen *g = build(t, &o);
  // Row deadlines 10000, 10500, 30000 start 1050 ns early: 8950, 9450, 28950;
  // row 2 starts when row 1 ends (10000) and is predicted to end 550 ns late.
  ck_assert_int_eq(g->use[0].time, 8950);
  ck_assert_int_eq(g->use[1].time, 500);
  ck_assert_int_eq(g->use[2].time, 19500);
  ck_assert_int_eq(g->comp.time_points, 1);
  ck_assert_int_eq(g->comp.time_unmet_max, 550);
  ck_assert_int_eq(g->comp.time_cost_ns, 3000);
  ck_assert_int_eq(g->stub.duration_ns, 28950);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_comp_time_usleep) {
  // usleep: each delay loses the cost (1000) and the overshoot (3000); a delay
  // too short is carried forward.
  static const int64_t rows[][3] = {{0, 0, 0}, {10000, 0, 0}, {12000, 0, 0}, {30000, 0, 0}};
  memstub_trace *t = from_rows(rows, 4);
  memstub_profile p;
  byte_profile(&p, 0, 0, 0);
  p.hot.basic.ns = 1000;
  p.sleep_overshoot.base.ns = 3000;
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.profile = &p;
  o.timing = MEMSTUB_COMP_USLEEP;
  memstub_gen *g = build(t, &o);
  // Row 1 ends at 10000 (sleep 6000). Row 2: 2000 - 1000 - 3000 < 1: no sleep,
  // ends at 11000 (1000 early). Row 3: 30000 - 11000 - 4000 = 15000.
  ck_assert_int_eq(g->use[0].time, 6000);
  ck_assert_int_eq(g->use[1].time, 0);
  ck_assert_int_eq(g->use[2].time, 15000);
  ck_assert_int_eq(g->comp.time_points, 0);
  ck_assert_int_eq(g->stub.timing, MEMSTUB_COMP_USLEEP);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_comp_refuses_other_host) {
  static const int64_t rows[][3] = {{0, 0, 0}, {10, 300, 0}};
  memstub_trace *t = from_rows(rows, 2);
  memstub_profile p;
  byte_profile(&p, 80, 0, 0);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.profile = &p;
  o.profile_path = "other.profile";
  memstub_gen *g = (memstub_gen *)1;
  memstub_error err = {0};
  p.page_size = 65536;
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "other.profile: measured with 65536-byte pages") != NULL, "%s",
                err.msg);
  byte_profile(&p, 80, 0, 0);
  snprintf(p.arch, sizeof p.arch, "sparc64");
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "other.profile: measured on sparc64") != NULL, "%s", err.msg);
  memstub_trace_free(t);
}
END_TEST

/* Totals near 2^63 with a profile: the compensation's sums would overflow;
 * refused with the row, as are byte figures no host has. */
START_TEST(test_comp_refuses_huge_sizes) {
  static const int64_t rows[][3] = {{0, 0, 0}, {10, 300, INT64_MAX}, {20, 0, 0}};
  memstub_trace *t = from_rows(rows, 3);
  memstub_profile p;
  byte_profile(&p, 80, 0, -1);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.profile = &p;
  o.profile_path = "host.profile";
  memstub_gen *g = (memstub_gen *)1;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
  ck_assert_ptr_null(g);
  ck_assert_str_eq(err.msg, "row 2: heap 9223372036854775807 bytes above its base is beyond what "
                            "calibration can compensate (2^60 bytes)");
  t->pts[1].heap_bytes = 5000;
  p.stack_offset = INT64_MAX;
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "host.profile: stack_offset_bytes: 9223372036854775807") != NULL,
                "%s", err.msg);
  p.stack_offset = 0;
  // Time figures of years per point (a profile no host has) are refused, not
  // let overflow the 64-bit ns arithmetic; so is a sleep ending early by half
  // of itself.
  static const struct {
    int what, timing;
    const char *msg;
  } times[] = {{0, MEMSTUB_COMP_DEADLINE, "host.profile: its predicted costs: beyond"},
               {1, MEMSTUB_COMP_DEADLINE, "host.profile: time_wait_late_ns: beyond"},
               {2, MEMSTUB_COMP_USLEEP, "host.profile: time_sleep_overshoot_per_ms_ns: beyond"},
               {3, MEMSTUB_COMP_USLEEP, "host.profile: time_sleep_overshoot_base_ns: beyond"}};
  for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
    memstub_profile q = p;
    if (times[i].what == 0) q.hot.basic.ns = 1e30;
    if (times[i].what == 1) q.wait_late.ns = -1e30;
    if (times[i].what == 2) q.sleep_overshoot.per_fault.ns = -1e6;
    if (times[i].what == 3) q.sleep_overshoot.base.ns = 1e19;
    o.profile = &q;
    o.timing = times[i].timing;
    g = (memstub_gen *)1;
    ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(err.msg, times[i].msg) != NULL, "%zu: %s", i, err.msg);
  }
  g = build_comp(t, &p);  // the same trace at a sane size compensates
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

/* The cost model on hostile stub data: totals that would overflow its 64-bit
 * sums are refused with the point; a fall below 0 is only clamped. */
START_TEST(test_predict_refuses_huge_sizes) {
  static const struct memAlloc stack_use[] = {{0, INT64_MAX - 8, 0}, {0, 64, 0}},
                               stack2_use[] = {{0, (int64_t)1 << 59, 0}, {0, (int64_t)1 << 59, 0},
                                               {0, (int64_t)1 << 59, 0}},
                               heap_use[] = {{0, 0, 1 << 20}, {0, 0, INT64_MAX}},
                               fall_use[] = {{0, 0, 1 << 20}, {0, 0, INT64_MIN}, {0, 0, 4096}};
  static const int64_t point[] = {1, 2, 3};
  const struct {
    const struct memAlloc *use;
    int64_t n;
    const char *msg;  // NULL: predicted
  } cases[] = {
      {stack_use, 2, "point 0: the stack grows beyond what the cost model can predict (2^60 bytes)"},
      {stack2_use, 3, "point 1: the stack grows beyond what the cost model can predict (2^60 bytes)"},
      {heap_use, 2, "point 1: the heap grows beyond what the cost model can predict (2^60 bytes)"},
      {fall_use, 3, NULL},
  };
  memstub_profile p;
  byte_profile(&p, 80, 0, 0);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    struct memstub_stub s = {.numdata = cases[k].n, .use = cases[k].use, .point = point,
                             .norig = 4};
    double cost[3];
    memstub_error err = {0};
    int rc = memstub_gen_predict(&s, &p, 0, cost, &err);
    if (!cases[k].msg) {
      ck_assert_msg(rc == 0, "case %zu: %s", k, err.msg);
      continue;
    }
    ck_assert_int_eq(rc, -EINVAL);
    ck_assert_str_eq(err.msg, cases[k].msg);
  }
  // Profile figures the model adds to its sums.
  struct memstub_stub s = {.numdata = 2, .use = heap_use, .point = point, .norig = 4};
  double cost[2];
  memstub_error err = {0};
  p.heap_pad = INT64_MAX;
  ck_assert_int_eq(memstub_gen_predict(&s, &p, 0, cost, &err), -EINVAL);
  ck_assert_str_eq(err.msg, "calibration profile: heap_pad_bytes: 9223372036854775807 bytes is "
                            "beyond any host");
  byte_profile(&p, 80, 0, 0);
  p.page_size = (int64_t)1 << 62;
  ck_assert_int_eq(memstub_gen_predict(&s, &p, 0, cost, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "page_size_bytes") != NULL, "%s", err.msg);
}
END_TEST

// Heap moved back and forth by more than 2^63 in all: the provenance totals saturate.
START_TEST(test_heap_totals_saturate) {
  const int64_t H = 4000000000000000000LL;
  static int64_t rows[7][3];
  for (int i = 0; i < 7; i++) rows[i][0] = i * 1000, rows[i][2] = i % 2 ? H : 0;
  memstub_trace *t = from_rows((const int64_t(*)[3])rows, 7);
  memstub_gen *g = build(t, NULL);
  ck_assert_int_eq(g->heap_up, INT64_MAX);  // 3 x 4e18
  ck_assert_int_eq(g->heap_down, INT64_MAX);
  ck_assert_int_eq(g->stub.peak_heap, H);
  ck_assert_int_eq(g->final_heap, 0);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

// A hand-edited numdata whose array of open frames would wrap size_t.
START_TEST(test_check_rejects_hostile_numdata) {
  static const struct memAlloc use[4] = {{0, 16, 0}, {0, 16, 0}, {0, 16, 0}, {0, 16, 0}};
  static const int64_t point[4] = {1, 2, 3, 4};
  struct memstub_stub s = {.numdata = ((int64_t)1 << 61) - 1, .use = use, .point = point,
                           .norig = 5};
  memstub_error err = {0};
  ck_assert_int_eq(memstub_gen_check(&s, &err), -EINVAL);
  ck_assert_str_eq(err.msg, "the stub claims 2305843009213693951 points");
  s.numdata = -1;
  ck_assert_int_eq(memstub_gen_check(&s, &err), -EINVAL);
  s.numdata = 4;
  ck_assert_int_eq(memstub_gen_check(&s, &err), 0);
}
END_TEST

/* A trace with rss_bytes and mapped_bytes: rows {time, stack, heap, rss, mapped}. */
static memstub_trace *resident_rows(const int64_t (*rows)[5], size_t n, int rss, int mapped) {
  memstub_trace *t = memstub_trace_create();
  int rc = rss ? memstub_trace_add_column(t, "rss_bytes") : -1;
  int mc = mapped ? memstub_trace_add_column(t, "mapped_bytes") : -1;
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(memstub_trace_append(t, rows[i][0], rows[i][1], rows[i][2]), 0);
    if (rc >= 0) memstub_trace_extra_row(t, i)[rc] = rows[i][3];
    if (mc >= 0) memstub_trace_extra_row(t, i)[mc] = rows[i][4];
  }
  return t;
}

// Per point: the row's resident target above the base; the last point of a
// row moves the mapped bytes to the row's total above its base.
static void resident_check(const int64_t (*rows)[5], size_t n, const memstub_gen *g, int rss,
                           int mapped) {
  const struct memstub_stub *s = &g->stub;
  ck_assert_int_eq(s->abi, MEMSTUB_STUB_ABI_RESIDENT);
  ck_assert_ptr_eq(s->rss, g->rss);
  ck_assert_ptr_eq(s->mapped, g->mapped);
  int64_t rb = rows[0][3], mb = rows[0][4];
  for (size_t i = 1; i < n; i++) {
    if (rows[i][3] < rb) rb = rows[i][3];
    if (rows[i][4] < mb) mb = rows[i][4];
  }
  ck_assert_int_eq(s->rss_base, rss ? rb : 0);
  ck_assert_int_eq(s->mapped_base, mapped ? mb : 0);
  int64_t m = 0;
  for (int64_t i = 0; i < s->numdata; i++) {
    int64_t row = s->point[i];
    ck_assert_int_eq(s->rss[i], rss ? rows[row][3] - rb : -1);
    m += s->mapped[i];
    int last = i + 1 == s->numdata || s->point[i + 1] != row;
    if (!last) ck_assert_int_eq(s->mapped[i], 0);
    else ck_assert_int_eq(m, mapped ? rows[row][4] - mb : 0);
  }
}

START_TEST(test_resident_columns) {
  // Not LIFO-shaped (row 3 pops and pushes), rss falling while heap stays
  // (row 4), mapped in and out, a base above zero.
  static const int64_t rows[][5] = {{0, 0, 0, 4096, 8192},
                                    {1000, 300, 1 << 20, 4096, 8192},
                                    {2000, 500, 1 << 20, 65536, 8192 + (64 << 20)},
                                    {3000, 200, 100 << 20, 10 << 20, 8192 + (64 << 20)},
                                    {4000, 200, 100 << 20, 2 << 20, 8192 + (32 << 20)},
                                    {5000, 0, 0, 4096, 8192}};
  for (int k = 1; k < 4; k++) {
    int rss = k & 1, mapped = (k >> 1) & 1;
    memstub_trace *t = resident_rows(rows, 6, rss, mapped);
    memstub_gen *g = build(t, NULL);
    replay_check(t, g);  // the heap and stack are as without the columns
    resident_check(rows, 6, g, rss, mapped);
    memstub_gen_free(g);
    memstub_trace_free(t);
  }
  // Without the columns: layout 1, no resident arrays, the same points.
  memstub_trace *t = resident_rows(rows, 6, 0, 0);
  memstub_gen *g = build(t, NULL);
  ck_assert_int_eq(g->stub.abi, MEMSTUB_STUB_ABI);
  ck_assert_ptr_null(g->stub.rss);
  ck_assert_ptr_null(g->stub.mapped);
  ck_assert_ptr_null(g->rss);
  memstub_trace *t2 = resident_rows(rows, 6, 1, 1);
  memstub_gen *g2 = build(t2, NULL);
  ck_assert_int_eq(g->stub.numdata, g2->stub.numdata);
  ck_assert_mem_eq(g->use, g2->use, (size_t)g->stub.numdata * sizeof *g->use);
  ck_assert_mem_eq(g->point, g2->point, (size_t)g->stub.numdata * sizeof *g->point);
  memstub_gen_free(g);
  memstub_gen_free(g2);
  memstub_trace_free(t);
  memstub_trace_free(t2);
}
END_TEST

START_TEST(test_resident_scales) {
  static const int64_t rows[][5] = {{0, 0, 0, 0, 0},
                                    {1000, 0, 4096, 4000, 1000},
                                    {2000, 0, 8192, 10000, 3000}};
  memstub_trace *t = resident_rows(rows, 3, 1, 1);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  ck_assert(o.rss_scale == MEMSTUB_GEN_SCALE_HEAP && o.mapped_scale == MEMSTUB_GEN_SCALE_HEAP);
  o.rss_scale = 0.6;
  o.mapped_scale = 0.5;
  memstub_gen *g = build(t, &o);
  ck_assert_int_eq(g->stub.numdata, 2);
  ck_assert_int_eq(g->rss[0], 2400);
  ck_assert_int_eq(g->rss[1], 6000);
  ck_assert_int_eq(g->mapped[0], 500);
  ck_assert_int_eq(g->mapped[1], 1000);
  ck_assert_int_eq(g->peak_rss, 6000);
  ck_assert_int_eq(g->peak_mapped, 1500);
  ck_assert_int_eq(g->use[1].heapAlloc, 4096);  // the heap is not scaled
  ck_assert_str_eq(g->stub.transforms,
                   "time x1, heap x1, stack x1, rss x0.6, mapped x0.5, cpu x1, churn x1");
  memstub_gen_free(g);
  // Refused like the other scales.
  memstub_gen *bad = NULL;
  memstub_error err = {0};
  o.rss_scale = -2;  // (-1, MEMSTUB_GEN_SCALE_HEAP, is the heap's)
  ck_assert_int_eq(memstub_gen_build(t, &o, &bad, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "--rss-scale"));
  o.rss_scale = 1;
  o.mapped_scale = NAN;
  ck_assert_int_eq(memstub_gen_build(t, &o, &bad, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "--mapped-scale"));
  o.mapped_scale = 1e300;
  ck_assert_int_eq(memstub_gen_build(t, &o, &bad, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "row 2: mapped_bytes 1000 overflows"));
  memstub_trace_free(t);
}
END_TEST

/* Resident and mapped memory follow --heap-scale unless given their own
 * scale (issue 30 item 1); what the scales did, before and after. */
START_TEST(test_resident_follows_heap) {
  static const int64_t rows[][5] = {{0, 0, 0, 1000, 0},
                                    {1000, 64, 4096, 8000, 2000},
                                    {3000, 0, 8192, 20000, 6000}};
  memstub_trace *t = resident_rows(rows, 3, 1, 1);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.heap_scale = 0.5;
  o.time_scale = 0.7;
  memstub_gen *g = build(t, &o);
  // rss 500, 4000, 10000: above the base 500; mapped 0, 1000, 3000.
  ck_assert_int_eq(g->stub.rss_base, 500);
  ck_assert_int_eq(g->rss[0], 3500);
  ck_assert_int_eq(g->rss[1], 9500);
  ck_assert_int_eq(g->mapped[0], 1000);
  ck_assert_int_eq(g->mapped[1], 2000);
  ck_assert_str_eq(g->stub.transforms,
                   "time x0.7, heap x0.5, stack x1, rss x0.5, mapped x0.5, cpu x1, churn x1");
  const memstub_gen_whatif *w = &g->whatif;
  ck_assert(w->rss_follows && w->mapped_follows && w->has_rss && w->has_mapped);
  ck_assert(w->rss_scale == 0.5 && w->mapped_scale == 0.5);
  ck_assert_int_eq(w->heap[0], 8192);
  ck_assert_int_eq(w->heap[1], 4096);
  ck_assert_int_eq(w->rss[0], 20000);
  ck_assert_int_eq(w->rss[1], 10000);
  ck_assert_int_eq(w->stack[0], 64);
  ck_assert_int_eq(w->stack[1], 64);
  ck_assert_int_eq(w->duration[0], 3000);
  ck_assert_int_eq(w->duration[1], 2100);
  ck_assert_int_eq(w->cpu[0], -1);  // no cpu_ns column
  char buf[1024];
  memstub_gen_whatif_format(g, buf, sizeof buf);
  ck_assert_str_eq(buf,
                   "what-if: --time-scale 0.7 --heap-scale 0.5; resident and mapped memory "
                   "follow the heap (x0.5; --rss-scale and --mapped-scale set their own)\n"
                   "  peak heap      8.0 KiB -> 4.0 KiB (-50.0 %)\n"
                   "  peak resident  19.5 KiB -> 9.8 KiB (-50.0 %)\n"
                   "  duration       3.00 µs -> 2.10 µs (-30.0 %)\n");
  memstub_gen_free(g);
  // A scale of their own wins; the heap stays as it is.
  o.heap_scale = 1;
  o.time_scale = 1;
  o.rss_scale = 2;
  g = build(t, &o);
  ck_assert_int_eq(g->rss[1], 38000);  // 40000 above the base 2000
  ck_assert_int_eq(g->mapped[1], 4000);
  ck_assert_str_eq(g->stub.transforms,
                   "time x1, heap x1, stack x1, rss x2, mapped x1, cpu x1, churn x1");
  memstub_gen_whatif_format(g, buf, sizeof buf);
  ck_assert_str_eq(buf,
                   "what-if: --rss-scale 2\n"
                   "  peak heap      8.0 KiB -> 8.0 KiB (+0.0 %)\n"
                   "  peak resident  19.5 KiB -> 39.1 KiB (+100.0 %)\n"
                   "  duration       3.00 µs -> 3.00 µs (+0.0 %)\n");
  memstub_gen_free(g);
  // No what-if: nothing to say, and the provenance says none.
  memstub_gen_options_init(&o);
  g = build(t, &o);
  ck_assert_str_eq(g->stub.transforms, "none");
  memstub_gen_whatif_format(g, buf, sizeof buf);
  ck_assert_str_eq(buf, "");
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

/* The public headers' memstub_ names, listed from them at build time
 * (cmake/ApiNames.cmake): the names no stub may meet. */
extern const char *const ms__gen_api_names[];
extern const unsigned long ms__gen_api_count;

START_TEST(test_api_names_from_headers) {
  static const char *const known[] = {"memstub_stub_call", "memstub_replay_run", "memstub_error",
                                      "memstub_gen_name_check", "memstub_threads_call",
                                      "memstub_release_now", "memstub_probe_begin"};
  for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
    int found = 0;
    for (unsigned long i = 0; i < ms__gen_api_count; i++)
      found |= strcmp(ms__gen_api_names[i], known[k]) == 0;
    ck_assert_msg(found, "%s is not listed", known[k]);
  }
  for (unsigned long i = 1; i < ms__gen_api_count; i++)
    ck_assert_msg(strcmp(ms__gen_api_names[i - 1], ms__gen_api_names[i]) < 0, "%s, %s",
                  ms__gen_api_names[i - 1], ms__gen_api_names[i]);
  // Each refuses its stub names (a stub owns memstub_NAME and memstub_NAME_*).
  memstub_error err = {0};
  ck_assert_int_eq(memstub_gen_name_check("replay_run", NULL, 0, &err), -EINVAL);
  ck_assert_int_eq(memstub_gen_name_check("replay", NULL, 0, &err), -EINVAL);
  ck_assert_int_eq(memstub_gen_name_check("replay_runner", NULL, 0, &err), 0);
  ck_assert_int_eq(memstub_gen_name_check("stub_parser", NULL, 0, &err), 0);
}
END_TEST

/* docs/runtime.md ("Stub names") lists the words memstub's names begin
 * with: exactly the first words of the headers' names. */
START_TEST(test_api_words_in_docs) {
  const char *src = getenv("MEMSTUB_SOURCE_DIR");
  ck_assert_ptr_nonnull(src);
  char path[4096];
  snprintf(path, sizeof path, "%s/docs/runtime.md", src);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  static char doc[1 << 20];
  size_t n = fread(doc, 1, sizeof doc - 1, f);
  fclose(f);
  doc[n] = '\0';
  const char *key = "checks this list against the headers):";
  char *at = strstr(doc, key);
  ck_assert_msg(at != NULL, "no '%s' in docs/runtime.md", key);
  at += strlen(key);
  char *end = strchr(at, '.');
  ck_assert_ptr_nonnull(end);
  *end = '\0';
  // The docs' words, each one of the headers' first words.
  char *words[256];
  size_t nw = 0;
  for (char *w = strtok(at, ", \n"); w && nw < 256; w = strtok(NULL, ", \n")) words[nw++] = w;
  for (size_t k = 0; k < nw; k++) {
    int found = 0;
    for (unsigned long i = 0; i < ms__gen_api_count && !found; i++) {
      const char *a = ms__gen_api_names[i] + 8;
      found = strncmp(a, words[k], strlen(words[k])) == 0 &&
              (a[strlen(words[k])] == '_' || a[strlen(words[k])] == '\0');
      found = found && strcspn(a, "_") == strlen(words[k]);
    }
    ck_assert_msg(found, "docs/runtime.md lists '%s', no memstub_ name begins with it", words[k]);
  }
  // Every header name's first word in the docs.
  for (unsigned long i = 0; i < ms__gen_api_count; i++) {
    const char *a = ms__gen_api_names[i] + 8;
    size_t wl = strcspn(a, "_");
    int found = 0;
    for (size_t k = 0; k < nw && !found; k++)
      found = strlen(words[k]) == wl && strncmp(words[k], a, wl) == 0;
    ck_assert_msg(found, "docs/runtime.md \"Stub names\" lacks '%.*s' (%s)", (int)wl, a,
                  ms__gen_api_names[i]);
  }
}
END_TEST

static Suite *gen_suite(void) {
  Suite *s = suite_create("gen");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_listing1);
  tcase_add_test(tc, test_api_names_from_headers);
  tcase_add_test(tc, test_api_words_in_docs);
  tcase_add_test(tc, test_non_lifo_example);
  tcase_add_test(tc, test_constant_stack_kept);
  tcase_add_test(tc, test_entry_above_bases);
  tcase_add_test(tc, test_normalisation_property);
  tcase_add_test(tc, test_component_like_sample_property);
  tcase_add_test(tc, test_transforms);
  tcase_add_test(tc, test_bad_input_refused);
  tcase_add_test(tc, test_check_rejects_broken_data);
  tcase_add_test(tc, test_comp_small_frames);
  tcase_add_test(tc, test_comp_normaliser_property);
  tcase_add_test(tc, test_comp_zero_overhead_is_plain);
  tcase_add_test(tc, test_comp_time_deadline);
  tcase_add_test(tc, test_comp_time_usleep);
  tcase_add_test(tc, test_comp_refuses_other_host);
  tcase_add_test(tc, test_comp_refuses_huge_sizes);
  tcase_add_test(tc, test_heap_totals_saturate);
  tcase_add_test(tc, test_predict_refuses_huge_sizes);
  tcase_add_test(tc, test_check_rejects_hostile_numdata);
  tcase_add_test(tc, test_resident_columns);
  tcase_add_test(tc, test_resident_scales);
  tcase_add_test(tc, test_resident_follows_heap);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(gen_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
