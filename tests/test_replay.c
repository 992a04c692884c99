// The replay engine: the paper's algorithm on the samples and on each
// constant-stack situation, non-LIFO traces, the heap across the mmap
// threshold, a stack deeper than 8 MiB, exact stack and heap at every row,
// timing sanity, the raw per-point records, and refusing bad stubs.
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "prim.h"  // common/prim.h: ms__prim_cpu_model
#include "test_replay_common.h"
#include "testutil.h"

// The model's margins stay within these (runtime/internal.h).
#define MS_MARGIN_MIN_TEST 20000
#define MS_MARGIN_MAX_TEST 500000

// A stub from a trace, with default generator options.
static memstub_gen *gen(const memstub_trace *t) {
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_build(t, &o, &g, &err) == 0, "gen: %s", err.msg);
  return g;
}

static memstub_replay *replay(const struct memstub_stub *s, int timing, unsigned measure) {
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.timing = timing;
  o.measure = measure;
  memstub_replay *r = NULL;
  memstub_error err = {0};
  int rc = memstub_replay_run(s, &o, &r, &err);
  ck_assert_msg(rc == 0, "replay: %d %s", rc, err.msg);
  return r;
}

static int heap_checkable(const memstub_replay *r) {
#if defined(MEMSTUB_SANITIZED)
  (void)r;
  return 0;
#else
  // mallinfo2 sees glibc's malloc; the tcache is either off or filled.
  ck_assert_int_eq(r->info.heap_visible, 1);
  ck_assert_msg(r->info.tcache == MEMSTUB_TCACHE_FILLED || r->info.tcache == MEMSTUB_TCACHE_OFF,
                "tcache state %d", r->info.tcache);
  ck_assert_int_eq(r->info.heap_stuck, 0);
  return 1;
#endif
}

/* Replay trace t measured (deadline timing) and check the exactness
 * criterion at every row; returns the fit. */
static rt_fit replay_exact(const memstub_trace *t, int timing) {
  memstub_gen *g = gen(t);
  memstub_replay *r = replay(&g->stub, timing, MEMSTUB_MEASURE_TRACE);
  memstub_trace *rep = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_replay_trace(r, &rep, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(memstub_trace_validate(rep, &err), 0);
  rt_fit fit;
  rt_check_exact(t, &g->stub, rep, heap_checkable(r), &fit);
  ck_assert_int_ge(r->info.duration_ns, r->info.target_ns);
  memstub_trace_free(rep);
  memstub_replay_free(r);
  memstub_gen_free(g);
  return fit;
}

static memstub_trace *read_sample(const char *name) {
  char rel[256];
  snprintf(rel, sizeof rel, "traces/samples/%s", name);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(tu_src(rel), &t, &err) == 0, "%s", err.msg);
  return t;
}

START_TEST(test_listing1) {
  memstub_trace *t = read_sample("listing1.csv");
  rt_fit fit = replay_exact(t, MEMSTUB_TIMING_DEADLINE);
  ck_assert_int_eq(fit.rows, 5);
  ck_assert_int_eq(fit.max_depth, 2);
  // The paper's data: two pushes (300, 100), then two pops.
  memstub_gen *g = gen(t);
  ck_assert_int_eq(g->stub.numdata, 4);
  ck_assert_int_eq(g->stub.use[0].stackAlloc, 300);
  ck_assert_int_eq(g->stub.use[3].stackAlloc, -300);
  memstub_gen_free(g);
  // The paper's relative sleeps replay the same curves.
  replay_exact(t, MEMSTUB_TIMING_USLEEP);
  memstub_trace_free(t);
}
END_TEST

/* The four constant-stack situations of the paper (Section 3): each trace
 * has a row where the stack stays as it is while the heap changes. */
static const struct {
  const char *name, *text;
  int64_t constant_row;  // the row whose stack equals the one before
} situations[] = {
    {"between two rising edges",
     "time_ns,stack_bytes,heap_bytes\n0,0,0\n100000,200,0\n200000,200,300\n300000,520,300\n"
     "400000,0,0\n",
     2},
    {"between a rising and a falling edge",
     "time_ns,stack_bytes,heap_bytes\n0,0,0\n100000,200,0\n200000,200,300\n300000,0,64\n", 2},
    {"between two falling edges",
     "time_ns,stack_bytes,heap_bytes\n0,0,0\n100000,200,0\n200000,700,100\n300000,200,100\n"
     "400000,200,5000\n500000,0,0\n",
     4},
    {"between a falling and a rising edge",
     "time_ns,stack_bytes,heap_bytes\n0,0,0\n100000,200,0\n200000,700,100\n300000,200,100\n"
     "400000,200,5000\n500000,900,40\n600000,0,0\n",
     4},
};

START_TEST(test_constant_situations) {
  memstub_trace *t = rt_trace(situations[_i].text);
  memstub_gen *g = gen(t);
  // The constant row really is one constant-stack point between the edges.
  int64_t row = situations[_i].constant_row, at = -1;
  for (int64_t i = 0; i < g->stub.numdata; i++)
    if (g->stub.point[i] == row) at = i;
  ck_assert_msg(at > 0 && g->stub.use[at].stackAlloc == 0 && g->stub.point[at - 1] == row - 1,
                "%s: row %lld is not a constant point", situations[_i].name, (long long)row);
  memstub_replay *r = replay(&g->stub, MEMSTUB_TIMING_DEADLINE, MEMSTUB_MEASURE_TRACE);
  memstub_trace *rep = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_replay_trace(r, &rep, &err), 0);
  rt_fit fit;
  rt_check_exact(t, &g->stub, rep, heap_checkable(r), &fit);
  // Same level, same stack pointer: the measured stack does not move at all.
  ck_assert_int_eq(rep->pts[row].stack_bytes, rep->pts[row - 1].stack_bytes);
#if !defined(MEMSTUB_SANITIZED)
  ck_assert_int_ne(rep->pts[row].heap_bytes, rep->pts[row - 1].heap_bytes);
#endif
  memstub_trace_free(rep);
  memstub_replay_free(r);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_nonlifo) {
  memstub_trace *t = read_sample("nonlifo.csv");
  memstub_gen *g = gen(t);
  ck_assert_int_gt(g->stub.inserted, 0);
  memstub_gen_free(g);
  replay_exact(t, MEMSTUB_TIMING_DEADLINE);
  memstub_trace_free(t);
}
END_TEST

// Random non-LIFO stack moves and small heap steps (which provoke glibc's
// 16-byte remainders), with and without an entry state above the bases.
/* The cause columns of a replayed trace: late_ns = wake_late_ns + work_ns
 * (a row's points share its deadline), the wait ends at or after it in
 * deadline timing, the run-queue wait is known or -1, and the metadata
 * carries the replay thread's CPU time. */
START_TEST(test_cause_columns) {
  memstub_trace *t = read_sample("nonlifo.csv");
  memstub_gen *g = gen(t);
  memstub_replay *r = replay(&g->stub, MEMSTUB_TIMING_DEADLINE, MEMSTUB_MEASURE_TRACE);
  memstub_trace *rep = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_replay_trace(r, &rep, &err) == 0, "%s", err.msg);
  int cl = memstub_trace_column(rep, "late_ns"), cw = memstub_trace_column(rep, "wake_late_ns"),
      ck = memstub_trace_column(rep, "work_ns"), co = memstub_trace_column(rep, "off_cpu_ns");
  ck_assert_int_ge(cw, 0);
  ck_assert_int_ge(ck, 0);
  ck_assert_int_ge(co, 0);
  for (size_t i = 0; i < rep->n; i++) {
    const int64_t *x = memstub_trace_extra_row(rep, i);
    ck_assert_int_ge(x[cw], 0);
    ck_assert_int_ge(x[ck], 0);
    ck_assert_int_eq(x[cl], x[cw] + x[ck]);
    ck_assert_int_ge(x[co], -1);
    if (r->info.run_delay_ns >= 0) ck_assert_int_ge(x[co], 0);
  }
  ck_assert_int_ge(r->info.cpu_ns, 0);
  ck_assert_ptr_nonnull(memstub_trace_get_meta(rep, "cpu_ns"));
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(rep, "margin"), "model"));
  memstub_trace_free(rep);
  memstub_replay_free(r);

  // usleep timing reads the run-queue wait before every sleep too.
  r = replay(&g->stub, MEMSTUB_TIMING_USLEEP, MEMSTUB_MEASURE_TRACE);
  for (int64_t i = 0; i < g->stub.numdata && r->info.run_delay_ns >= 0; i++)
    if (g->stub.use[i].time > 0) ck_assert_int_ge(r->rec[i].run_delay_ns, 0);
  memstub_replay_free(r);

  // Without MEASURE_SCHED: no off_cpu_ns column, the rest as before.
  r = replay(&g->stub, MEMSTUB_TIMING_DEADLINE,
             MEMSTUB_MEASURE_TIME | MEMSTUB_MEASURE_STACK | MEMSTUB_MEASURE_HEAP);
  ck_assert_msg(memstub_replay_trace(r, &rep, &err) == 0, "%s", err.msg);
  ck_assert_int_lt(memstub_trace_column(rep, "off_cpu_ns"), 0);
  ck_assert_int_ge(memstub_trace_column(rep, "work_ns"), 0);
  for (int64_t i = 0; i < g->stub.numdata; i++) ck_assert_int_eq(r->rec[i].run_delay_ns, -1);
  memstub_trace_free(rep);
  memstub_replay_free(r);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_random_rows) {
  uint64_t seed = 0x9e3779b97f4a7c15ULL + (uint64_t)_i;
  char *text = malloc(1 << 20);
  size_t off = (size_t)sprintf(text, "time_ns,stack_bytes,heap_bytes\n");
  int64_t stack = _i ? 5000 : 0, heap = _i ? 777 : 0;
  for (int row = 0; row < 400; row++) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    int64_t ds = (int64_t)(seed % 2001) - 1000, dh = (int64_t)((seed >> 20) % 97) - 48;
    if (row % 7 == 0) ds = 0;
    stack = stack + ds < 0 ? 0 : stack + ds;
    heap = heap + dh < 0 ? 0 : heap + dh;
    if (row == 0) stack = _i ? 5000 : 0, heap = _i ? 777 : 0;
    off += (size_t)sprintf(text + off, "%d,%lld,%lld\n", row * 20000, (long long)stack,
                           (long long)heap);
  }
  memstub_trace *t = rt_trace(text);
  rt_fit fit = replay_exact(t, MEMSTUB_TIMING_DEADLINE);
  ck_assert_int_eq(fit.rows, 400);
  memstub_trace_free(t);
  free(text);
}
END_TEST

// Frames of 1 to 40 bytes: alloca's 16-byte rounding must not add up with depth.
START_TEST(test_small_frames_no_drift) {
  char *text = malloc(1 << 16);
  size_t off = (size_t)sprintf(text, "time_ns,stack_bytes,heap_bytes\n0,0,0\n");
  int64_t stack = 0, time = 0;
  for (int i = 1; i <= 300; i++) {
    stack += 1 + (i * 7) % 40;
    off += (size_t)sprintf(text + off, "%lld,%lld,0\n", (long long)(time += 1000), (long long)stack);
  }
  off += (size_t)sprintf(text + off, "%lld,0,0\n", (long long)(time += 1000));
  memstub_trace *t = rt_trace(text);
  rt_fit fit = replay_exact(t, MEMSTUB_TIMING_DEADLINE);
  ck_assert_int_eq(fit.max_depth, 300);
#if !defined(MEMSTUB_SANITIZED)
  ck_assert_int_le(fit.worst_stack, 8);  // nearest multiple of 16, carried
#endif
  memstub_trace_free(t);
  free(text);
}
END_TEST

// The heap grows across glibc's 128 KiB mmap threshold and falls back.
START_TEST(test_heap_mmap_threshold) {
  memstub_trace *t = rt_trace(
      "time_ns,stack_bytes,heap_bytes\n0,0,0\n100000,64,1000\n200000,64,100000\n"
      "300000,128,300000\n400000,128,2000000\n500000,64,150000\n600000,64,100000\n"
      "700000,64,5000\n800000,1000,300000\n900000,1000,131072\n1000000,1000,131000\n"
      "1100000,64,0\n1200000,0,4\n");
  memstub_gen *g = gen(t);
  memstub_replay *r = replay(&g->stub, MEMSTUB_TIMING_DEADLINE, MEMSTUB_MEASURE_TRACE);
  memstub_trace *rep = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_replay_trace(r, &rep, &err), 0);
  rt_fit fit;
  rt_check_exact(t, &g->stub, rep, heap_checkable(r), &fit);
#if !defined(MEMSTUB_SANITIZED)
  // The 2 MB block is mmapped: the measured heap follows it within a page.
  ck_assert_int_ge(rep->pts[4].heap_bytes - fit.heap_offset, 2000000);
  ck_assert_int_le(rep->pts[4].heap_bytes - fit.heap_offset, 2000000 + 4096);
  // Back below the threshold, the block left its mapping for the arena.
  ck_assert_int_ge(r->info.heap_unmaps, 1);
#endif
  memstub_trace_free(rep);
  memstub_replay_free(r);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

// A stack climbing to 12 MiB in 3 KiB frames: beyond the default 8 MiB.
START_TEST(test_deep_stack) {
  const int frames = 4096;
  char *text = malloc(1 << 20);
  size_t off = (size_t)sprintf(text, "time_ns,stack_bytes,heap_bytes\n0,0,0\n");
  int64_t time = 0;
  for (int i = 1; i <= frames; i++)
    off += (size_t)sprintf(text + off, "%lld,%lld,%d\n", (long long)(time += 100),
                           (long long)i * 3072, i % 3 ? 0 : 48);
  for (int i = frames - 1; i >= 0; i -= 512)
    off += (size_t)sprintf(text + off, "%lld,%lld,0\n", (long long)(time += 100),
                           (long long)i * 3072);
  memstub_trace *t = rt_trace(text);
  memstub_gen *g = gen(t);
  ck_assert_int_ge(g->stub.peak_stack, 12 << 20);
  memstub_replay *r = replay(&g->stub, MEMSTUB_TIMING_DEADLINE, MEMSTUB_MEASURE_TRACE);
  ck_assert_int_gt(r->info.stack_size, 12 << 20);
  memstub_trace *rep = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_replay_trace(r, &rep, &err), 0);
  rt_fit fit;
  rt_check_exact(t, &g->stub, rep, heap_checkable(r), &fit);
  ck_assert_int_eq(fit.max_depth, frames);
  ck_assert_int_ge(rep->pts[frames].stack_bytes, 12 << 20);
  memstub_trace_free(rep);
  // Called as a function it replays on this thread, deeper than this thread's
  // 8 MiB stack: on a stack of its own, measured as exactly (issue 31 item 3).
  char *dir = tu_mkdtemp(), path[4096];
  snprintf(path, sizeof path, "%s/m.csv", dir);
  setenv("MEMSTUB_MEASURE", path, 1);
  setenv("MEMSTUB_TIMING", "deadline", 1);
  ck_assert_msg(memstub_stub_call(&g->stub, &err) == 0, "%s", err.msg);
  unsetenv("MEMSTUB_TIMING");
  unsetenv("MEMSTUB_MEASURE");
  ck_assert_msg(memstub_trace_read(path, &rep, &err) == 0, "%s", err.msg);
  /* The stack exactly; the heap within 7 chunks of 48 bytes and a little:
   * on the caller's thread, in a RelWithDebInfo build, each fall of the
   * block from 48 bytes to 0 left its 48-byte chunk counted by mallinfo2
   * until 7 had gathered (336 bytes, then steady): a tcache bin of the
   * caller's that the fill left with room (docs/runtime.md, "On the
   * caller's thread"). Not in a Release build, nor on a replay thread. */
  rt_check_exact(t, &g->stub, rep, 0, &fit);
  for (size_t i = 0; heap_checkable(r) && i < rep->n && i < t->n; i++) {
    int64_t dh = rep->pts[i].heap_bytes - rep->pts[0].heap_bytes -
                 (t->pts[i].heap_bytes - t->pts[0].heap_bytes);
    ck_assert_msg(dh >= -16 && dh <= 7 * 48 + 16, "row %zu: heap off by %lld", i, (long long)dh);
  }
  ck_assert_int_eq(fit.max_depth, frames);
  ck_assert_int_ge(rep->pts[frames].stack_bytes, 12 << 20);
  memstub_trace_free(rep);
  tu_rmtree(dir);
  free(dir);
  memstub_replay_free(r);
  memstub_gen_free(g);
  memstub_trace_free(t);
  free(text);
}
END_TEST

/* Stub data made by hand rather than by the generator: the first point is
 * not a push, constant points at depth 0, and the data ending with frames
 * still open. */
START_TEST(test_hand_made_stub) {
  static const struct memAlloc use[] = {
      {0, 0, 100},     // row 0: heap only, at depth 0
      {1000, 0, 50},   // row 1: constant at depth 0
      {1000, 256, 0},  // row 2: push
      {1000, -256, 0}, // row 3: pop back to depth 0
      {1000, 0, -20},  // row 4: constant at depth 0 again
      {1000, 512, 0},  // row 5: push
      {1000, 64, 8},   // row 6: push; the data ends with two frames open
  };
  static const int64_t point[] = {0, 1, 2, 3, 4, 5, 6};
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI, .name = "hand", .numdata = 7, .use = use,
                           .point = point, .norig = 7, .source = "hand-made"};
  memstub_error err = {0};
  ck_assert_int_eq(memstub_gen_check(&s, &err), 0);
  memstub_replay *r = replay(&s, MEMSTUB_TIMING_DEADLINE, MEMSTUB_MEASURE_ALL);
  memstub_trace *rep = NULL;
  ck_assert_int_eq(memstub_replay_trace(r, &rep, &err), 0);
  ck_assert_int_eq(rep->n, 7);  // row 0 from its point, not from the entry
  // Depth 0 is the entry level itself: exactly zero.
  ck_assert_int_eq(rep->pts[0].stack_bytes, 0);
  ck_assert_int_eq(rep->pts[1].stack_bytes, 0);
  ck_assert_int_eq(rep->pts[3].stack_bytes, 0);
  ck_assert_int_eq(rep->pts[4].stack_bytes, 0);
  ck_assert_int_gt(rep->pts[2].stack_bytes, 256 - 16);
  ck_assert_int_gt(rep->pts[6].stack_bytes, rep->pts[5].stack_bytes + 64 - 16);
  ck_assert_int_eq(r->rec[3].stack_moved, -r->rec[2].stack_moved);
#if !defined(MEMSTUB_SANITIZED)
  // Frame overhead identical for both frames: 2 frames at row 6, 1 at row 2.
  int64_t f1 = rep->pts[2].stack_bytes - 256, f2 = rep->pts[6].stack_bytes - 576;
  ck_assert_int_le(abs((int)(f2 - 2 * f1)), 16);
  // glibc chunks: the request (size + pad) plus 8, rounded up to 16.
  int64_t chunk0 = (100 + 16 + 8 + 15) & ~15, chunk1 = (150 + 16 + 8 + 15) & ~15;
  ck_assert_int_eq(rep->pts[1].heap_bytes - rep->pts[0].heap_bytes, chunk1 - chunk0);
  ck_assert_int_eq(r->rec[1].heap_usable, chunk1 - 8);
#endif
  memstub_trace_free(rep);
  memstub_replay_free(r);
}
END_TEST

/* The replay's CPU time is over the span of its duration (T0 to the last
 * point's end_ns), not the measuring of the last point after it: a 2-row
 * replay said "220.47 % of the replay's duration" (two.csv: 182 %). A heap
 * of 200,000 free chunks makes each mallinfo2 (the heap's measuring) long,
 * so the one after the end would be most of the replay's CPU time. */
START_TEST(test_cpu_over_the_duration) {
#if defined(MEMSTUB_SANITIZED)
  return;  // mallinfo2 does not see the sanitizer's allocator
#endif
  enum { N = 400000 };
  void **b = malloc(N * sizeof *b);
  ck_assert_ptr_nonnull(b);
  for (int i = 0; i < N; i++) ck_assert_ptr_nonnull(b[i] = malloc(40));
  for (int i = 0; i < N; i += 2) free(b[i]);  // every other: they cannot coalesce
  static const struct memAlloc use[] = {{0, 0, 100}, {1000, 0, 50}};
  static const int64_t point[] = {0, 1};
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI, .name = "two", .numdata = 2, .use = use,
                           .point = point, .norig = 2, .source = "hand-made"};
  memstub_replay *r = replay(&s, MEMSTUB_TIMING_DEADLINE, MEMSTUB_MEASURE_TRACE);
  ck_assert_int_gt(r->info.duration_ns, 0);
  ck_assert_int_ge(r->info.cpu_ns, 0);
  // One thread: no more CPU than wall time, but for the clocks' reads.
  ck_assert_msg(r->info.cpu_ns <= r->info.duration_ns + r->info.duration_ns / 10 + 20000,
                "cpu %lld ns over a duration of %lld ns", (long long)r->info.cpu_ns,
                (long long)r->info.duration_ns);
  memstub_replay_free(r);
  for (int i = 1; i < N; i += 2) free(b[i]);
  free(b);
}
END_TEST

/* The tcache is filled (512 mallocs and frees the component never made, seen
 * by anyone counting the stub's calls) only for a replay that measures its
 * heap; a replay without --measure leaves it as it is. */
START_TEST(test_tcache_filled_only_to_measure) {
#if !defined(MEMSTUB_SANITIZED)
  memstub_trace *t = read_sample("listing1.csv");
  memstub_gen *g = gen(t);
  memstub_replay *r = replay(&g->stub, MEMSTUB_TIMING_DEADLINE, MEMSTUB_MEASURE_HEAP);
  ck_assert_int_eq(r->info.heap_visible, 1);
  int measured = r->info.tcache;
  ck_assert_msg(measured == MEMSTUB_TCACHE_FILLED || measured == MEMSTUB_TCACHE_OFF, "tcache %d",
                measured);
  memstub_replay_free(r);
  r = replay(&g->stub, MEMSTUB_TIMING_DEADLINE, 0);
  // Not filled, so not found filled (nor found off: nothing was tried).
  ck_assert_int_eq(r->info.tcache, MEMSTUB_TCACHE_UNFILLED);
  memstub_replay_free(r);
  memstub_gen_free(g);
  memstub_trace_free(t);
#endif
}
END_TEST

/* Timing on a loaded machine: deadline timing never starts a point before
 * its deadline and never ends short; relative sleeps are never shorter than
 * the delay. Upper bounds are generous. */
START_TEST(test_timing) {
  static struct memAlloc use[40];
  static int64_t point[40];
  for (int i = 0; i < 40; i++) {
    use[i] = (struct memAlloc){.time = 1000000 + 37 * i, .stackAlloc = i % 2 ? -64 : 64,
                               .heapAlloc = i % 4 ? 100 : -100};
    point[i] = i + 1;
  }
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI, .numdata = 40, .use = use, .point = point,
                           .norig = 41, .source = "timing"};
  int64_t target = 0;
  for (int i = 0; i < 40; i++) target += use[i].time;
  // Deadline with the default (model) margin, usleep, deadline with the
  // adaptive margin, deadline with the old fixed margin.
  for (int pass = 0; pass < 4; pass++) {
    int timing = pass == 1 ? MEMSTUB_TIMING_USLEEP : MEMSTUB_TIMING_DEADLINE;
    memstub_replay_options o;
    memstub_replay_options_init(&o);
    o.timing = timing;
    o.measure = MEMSTUB_MEASURE_TIME;
    if (pass == 2) o.margin_ns = MEMSTUB_MARGIN_ADAPTIVE;
    if (pass == 3) o.margin_ns = MEMSTUB_MARGIN_DEFAULT;
    memstub_replay *r = NULL;
    memstub_error err = {0};
    ck_assert_msg(memstub_replay_run(&s, &o, &r, &err) == 0, "%s", err.msg);
    if (pass == 0 || pass == 2) {
      ck_assert_int_ge(r->info.margin_ns, MS_MARGIN_MIN_TEST);
      ck_assert_int_le(r->info.margin_ns, MS_MARGIN_MAX_TEST);
      ck_assert_int_eq(r->info.reaim_ns, MEMSTUB_REAIM_DEFAULT);
      ck_assert_int_ge(r->info.sleeps, 1);  // 1 ms waits sleep (unless the host stalls)
    } else if (pass == 3) {
      ck_assert_int_eq(r->info.margin_ns, MEMSTUB_MARGIN_DEFAULT);
      ck_assert_int_eq(r->info.reaim_ns, 0);
      ck_assert_int_le(r->info.sleeps, 40);
    }
    if (pass != 1) ck_assert_int_le(r->info.late_wakeups, 40);
    ck_assert_int_ge(r->info.cpu_ns, 0);
    ck_assert_int_eq(r->info.target_ns, target);
    ck_assert_int_ge(r->info.duration_ns, target);
    ck_assert_int_lt(r->info.duration_ns, target + 2000000000LL);
    int64_t sched = 0;
    for (int i = 0; i < 40; i++) {
      const memstub_replay_record *p = &r->rec[i];
      sched += use[i].time;
      ck_assert_int_eq(p->target_ns, sched);
      ck_assert_int_le(p->start_ns, p->end_ns);
      if (timing == MEMSTUB_TIMING_DEADLINE) {
        ck_assert_msg(p->start_ns >= p->target_ns, "point %d started %lld ns early", i,
                      (long long)(p->target_ns - p->start_ns));
      } else {
        int64_t prev_end = i ? r->rec[i - 1].end_ns : 0;
        ck_assert_msg(p->start_ns - prev_end >= use[i].time, "point %d slept %lld of %lld ns", i,
                      (long long)(p->start_ns - prev_end), (long long)use[i].time);
      }
    }
    if (timing == MEMSTUB_TIMING_USLEEP) ck_assert_int_eq(r->info.sleeps, 40);
    else ck_assert_int_le(r->info.sleeps, 40);
    memstub_replay_free(r);
  }
}
END_TEST

// Raw records: only what was asked for, in the phase order documented.
START_TEST(test_records) {
  memstub_trace *t = read_sample("nonlifo.csv");
  memstub_gen *g = gen(t);
  memstub_replay *r = replay(&g->stub, MEMSTUB_TIMING_DEADLINE,
                             MEMSTUB_MEASURE_TIME | MEMSTUB_MEASURE_CYCLES);
  memstub_trace *rep = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_replay_trace(r, &rep, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "not measured"));
  for (int64_t i = 0; i < g->stub.numdata; i++) {
    const memstub_replay_record *p = &r->rec[i];
    ck_assert_int_eq(p->stack_bytes, 0);
    ck_assert_int_eq(p->heap_bytes, 0);
    ck_assert_int_eq(p->faults_end, 0);
    ck_assert_uint_le(p->cyc_start, p->cyc_stack_alloc);
    ck_assert_uint_le(p->cyc_stack_alloc, p->cyc_stack_use);
    ck_assert_uint_le(p->cyc_stack_use, p->cyc_heap_alloc);
    ck_assert_uint_le(p->cyc_heap_alloc, p->cyc_end);
    if (i) ck_assert_uint_le(r->rec[i - 1].cyc_end, p->cyc_start);
  }
  memstub_replay_free(r);
  // Faults: a 1 MiB push writes 256 new pages.
  static const struct memAlloc use[] = {{0, 1 << 20, 0}, {0, -(1 << 20), 1 << 20}};
  static const int64_t point[] = {1, 2};
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI, .numdata = 2, .use = use, .point = point,
                           .norig = 3};
  r = replay(&s, MEMSTUB_TIMING_DEADLINE, MEMSTUB_MEASURE_FAULTS | MEMSTUB_MEASURE_STACK);
  ck_assert_int_ge(r->rec[0].faults_stack - r->rec[0].faults_start, 1);
  ck_assert_int_ge(r->rec[1].faults_end - r->rec[1].faults_stack, 1);
  ck_assert_int_ge(r->rec[0].stack_moved, 1 << 20);
  ck_assert_int_eq(r->rec[1].stack_moved, -r->rec[0].stack_moved);
  ck_assert_int_eq(r->rec[0].start_ns, 0);  // TIME not asked for
  memstub_replay_free(r);
  // No measuring: no records.
  r = replay(&g->stub, MEMSTUB_TIMING_DEADLINE, 0);
  ck_assert_ptr_null(r->rec);
  ck_assert_int_ge(r->info.duration_ns, r->info.target_ns);
  memstub_replay_free(r);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

static void count_progress(int64_t done, int64_t total, void *arg) {
  int64_t *calls = arg;
  ck_assert_int_le(done, total);
  if (done == total) calls[1]++;
  else calls[0]++;
}

/* A stub of n points (n <= 12), each 100 ms after the last and growing the
 * heap by 16 bytes: a replay long enough to report progress on the way. */
static struct memstub_stub slow_stub(int n) {
  static struct memAlloc use[12];
  static int64_t point[12];
  for (int i = 0; i < n; i++) {
    use[i] = (struct memAlloc){.time = 100000000, .stackAlloc = 0, .heapAlloc = 16};
    point[i] = i + 1;
  }
  return (struct memstub_stub){.abi = MEMSTUB_STUB_ABI, .numdata = n, .use = use,
                               .point = point, .norig = n + 1};
}

// Progress is reported from the waiting thread, and once at the end.
START_TEST(test_progress) {
  struct memstub_stub s = slow_stub(12);
  int64_t calls[2] = {0, 0};
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.progress = count_progress;
  o.progress_arg = calls;
  memstub_replay *r = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_replay_run(&s, &o, &r, &err), 0);
  ck_assert_int_ge(calls[0], 1);  // 1.2 s of replay: at least one report on the way
  ck_assert_int_ge(calls[1], 1);  // and the final one
  memstub_replay_free(r);
}
END_TEST

/* This program's pthread_timedjoin_np: when join_refuse is set, the next
 * timed join fails at once with EINVAL, as for a time it refuses; otherwise
 * glibc's (or the sanitizer's). */
static int join_refuse;
int pthread_timedjoin_np(pthread_t th, void **ret, const struct timespec *abstime) {
  typedef int join_fn(pthread_t, void **, const struct timespec *);
  if (join_refuse) {
    join_refuse = 0;
    return EINVAL;
  }
  join_fn *real = (join_fn *)dlsym(RTLD_NEXT, "pthread_timedjoin_np");
  return real ? real(th, ret, abstime) : ENOSYS;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// A timed join that fails does not end the wait: the replay returns once its
// thread has, every point replayed (never with the thread still running).
START_TEST(test_progress_join_refused) {
  struct memstub_stub s = slow_stub(3);
  int64_t calls[2] = {0, 0};
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.timing = MEMSTUB_TIMING_DEADLINE;  // no row before its deadline
  o.measure = MEMSTUB_MEASURE_TIME;
  o.progress = count_progress;
  o.progress_arg = calls;
  memstub_replay *r = NULL;
  memstub_error err = {0};
  join_refuse = 1;
  int64_t t0 = now_ns();
  ck_assert_msg(memstub_replay_run(&s, &o, &r, &err) == 0, "%s", err.msg);
  int64_t waited = now_ns() - t0;
  ck_assert_int_eq(join_refuse, 0);  // the refusal was met
  ck_assert_int_ge(waited, 300000000);
  ck_assert_int_eq(calls[1], 1);
  for (int i = 0; i < 3; i++)
    ck_assert_int_ge(r->rec[i].end_ns, (int64_t)(i + 1) * 100000000);
  ck_assert_int_ge(r->info.duration_ns, r->info.target_ns);
  memstub_replay_free(r);
}
END_TEST

/* ---- the CPU model from several threads ------------------------------------------ */

enum { CPU_THREADS = 4 };
typedef struct cpu_seen {
  pthread_barrier_t *start;
  char model[256];
} cpu_seen;

// One thread: the CPU model as it reads the moment the call returns.
static void *read_model(void *arg) {
  cpu_seen *c = arg;
  pthread_barrier_wait(c->start);
  snprintf(c->model, sizeof c->model, "%s", ms__prim_cpu_model());
  return NULL;
}

// In a fresh process: whether threads asking at once all saw the final model.
static int models_agree(void) {
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, CPU_THREADS);
  cpu_seen seen[CPU_THREADS];
  pthread_t th[CPU_THREADS];
  for (int i = 0; i < CPU_THREADS; i++) {
    seen[i].start = &start;
    if (pthread_create(&th[i], NULL, read_model, &seen[i]) != 0) return 0;
  }
  for (int i = 0; i < CPU_THREADS; i++) pthread_join(th[i], NULL);
  int agree = 1;
  for (int i = 0; i < CPU_THREADS; i++) agree &= strcmp(seen[i].model, ms__prim_cpu_model()) == 0;
  return agree;
}

/* ms__prim_cpu_model from several threads at once, each time in a new
 * process (the model is read once per process): every thread sees the model
 * as it ends up, never a placeholder or half a line. */
START_TEST(test_cpu_model_threads) {
  for (int k = 0; k < 20; k++) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) _exit(models_agree() ? 0 : 1);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "process %d: the threads saw different CPU models", k);
  }
}
END_TEST

// Stubs that cannot be replayed are refused before anything runs.
START_TEST(test_refused) {
  static const struct memAlloc bad_pop[] = {{0, 300, 0}, {0, -200, 0}};
  static const struct memAlloc huge_heap[] = {{0, 16, INT64_MAX / 4}, {0, -16, 0}};
  static const int64_t point[] = {1, 2};
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI, .numdata = 2, .use = bad_pop, .point = point,
                           .norig = 3};
  memstub_replay *r = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_replay_run(&s, NULL, &r, &err), -EINVAL);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(err.msg, "point 1") != NULL, "%s", err.msg);

  s.use = huge_heap;
  ck_assert_int_eq(memstub_replay_run(&s, NULL, &r, &err), -ENOMEM);
  ck_assert_msg(strstr(err.msg, "heap") && strstr(err.msg, "memory"), "%s", err.msg);

  // A descriptor claiming an impossible stack: the thread cannot have it.
  static const struct memAlloc ok[] = {{0, 16, 0}, {0, -16, 0}};
  s.use = ok;
  s.peak_stack = INT64_MAX / 2;
  ck_assert_int_eq(memstub_replay_run(&s, NULL, &r, &err), -ENOMEM);
  ck_assert_msg(strstr(err.msg, "stack") != NULL, "%s", err.msg);
  s.peak_stack = 0;
  s.max_depth = INT64_MAX / 8;
  ck_assert_int_eq(memstub_replay_check(&s, NULL, NULL, &err), -ENOMEM);
  s.max_depth = 0;
  int64_t size = 0;
  ck_assert_int_eq(memstub_replay_check(&s, NULL, &size, &err), 0);
  ck_assert_int_gt(size, 16);

  s.abi = MEMSTUB_STUB_ABI_RESIDENT + 1;  // layouts 1 and 2 are known
  ck_assert_int_eq(memstub_replay_run(&s, NULL, &r, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "layout"));
  s.abi = MEMSTUB_STUB_ABI;

  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.timing = 7;
  ck_assert_int_eq(memstub_replay_run(&s, &o, &r, &err), -EINVAL);
  memstub_replay_options_init(&o);
  o.margin_ns = -5;
  ck_assert_int_eq(memstub_replay_run(&s, &o, &r, &err), -EINVAL);
  memstub_replay_options_init(&o);
  o.measure = 1u << 20;
  ck_assert_int_eq(memstub_replay_run(&s, &o, &r, &err), -EINVAL);

  int timing = -1;
  ck_assert_int_eq(memstub_timing_parse("usleep", &timing), 0);
  ck_assert_int_eq(timing, MEMSTUB_TIMING_USLEEP);
  ck_assert_int_eq(memstub_timing_parse("sometimes", &timing), -EINVAL);
  ck_assert_str_eq(memstub_timing_name(MEMSTUB_TIMING_DEADLINE), "deadline");
  int64_t m = 0;
  ck_assert_int_eq(memstub_margin_parse("adaptive", &m), 0);
  ck_assert_int_eq(m, MEMSTUB_MARGIN_ADAPTIVE);
  ck_assert_int_eq(memstub_margin_parse("model", &m), 0);
  ck_assert_int_eq(m, MEMSTUB_MARGIN_MODEL);
  memstub_replay_options_init(&o);
  ck_assert_int_eq(o.margin_ns, MEMSTUB_MARGIN_MODEL);
  o.reaim_ns = -2;
  ck_assert_int_eq(memstub_replay_run(&s, &o, &r, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "reaim"));
  memstub_replay_options_init(&o);
  o.sched_slice_ns = 5000;
  ck_assert_int_eq(memstub_replay_run(&s, &o, &r, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "sched_slice"));
  ck_assert_int_eq(memstub_margin_parse("250000", &m), 0);
  ck_assert_int_eq(m, 250000);
  ck_assert_int_eq(memstub_margin_parse("-1", &m), -EINVAL);
  ck_assert_int_eq(memstub_margin_parse("1e5", &m), -EINVAL);
}
END_TEST

/* Delays that add up beyond what T0 + a deadline can hold in 64 bits: refused,
 * never replayed as if they were zero (in either timing). */
START_TEST(test_refused_endless_delays) {
  static const struct memAlloc forever[] = {{INT64_MAX - 10, 16, 0}, {0, -16, 0}};
  static const struct memAlloc halves[] = {{INT64_MAX / 2, 16, 0}, {INT64_MAX / 2, -16, 0}};
  static const int64_t point[] = {1, 2};
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI, .numdata = 2, .use = forever, .point = point,
                           .norig = 3};
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  memstub_replay *r = NULL;
  memstub_error err = {0};
  for (int timing = 0; timing < 2; timing++) {
    o.timing = timing ? MEMSTUB_TIMING_USLEEP : MEMSTUB_TIMING_DEADLINE;
    s.use = forever;
    ck_assert_int_eq(memstub_replay_run(&s, &o, &r, &err), -EINVAL);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(err.msg, "longer than a replay can wait") != NULL, "%s", err.msg);
    s.use = halves;  // each fits, their sum does too, T0 + the sum does not
    ck_assert_int_eq(memstub_replay_check(&s, &o, NULL, &err), -EINVAL);
  }
}
END_TEST

/* The replayed trace of a hand-edited descriptor: norig far beyond the points
 * reserves no more rows than the points make; bases or a start time near
 * 2^63 are refused with the row, never wrapped into negative totals. */
START_TEST(test_replayed_trace_hand_edited_descriptor) {
  static const struct memAlloc use[] = {{1000, 64, 100}, {1000, -64, 0}};
  static const int64_t point[] = {1, 2};
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI, .numdata = 2, .use = use, .point = point,
                           .norig = 1000000000000LL, .source = "hand-edited"};
  memstub_replay *r = replay(&s, MEMSTUB_TIMING_DEADLINE, MEMSTUB_MEASURE_TRACE);
  memstub_trace *rep = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_replay_trace(r, &rep, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(rep->n, 3);  // the entry and the two points' rows
  memstub_trace_free(rep);
  memstub_replay_free(r);
  s.norig = 3;
  int64_t *fields[] = {&s.time0_ns, &s.stack_base, &s.heap_base};
#if defined(MEMSTUB_SANITIZED)
  size_t nfields = 2;  // mallinfo2 does not see ASan's heap: nothing measured above heap_base
#else
  size_t nfields = 3;
#endif
  for (size_t k = 0; k < nfields; k++) {
    *fields[k] = INT64_MAX - 4;  // row 1's time, stack and heap are all above 4
    r = replay(&s, MEMSTUB_TIMING_DEADLINE, MEMSTUB_MEASURE_TRACE);
    rep = (memstub_trace *)1;
    ck_assert_int_eq(memstub_replay_trace(r, &rep, &err), -EINVAL);
    ck_assert_ptr_null(rep);
    ck_assert_msg(strstr(err.msg, "row 1: ") && strstr(err.msg, "exceeds 64 bits"), "%zu: %s", k,
                  err.msg);
    memstub_replay_free(r);
    *fields[k] = 0;
  }
}
END_TEST

// The function entry point honours MEMSTUB_MEASURE and MEMSTUB_TIMING.
START_TEST(test_stub_call_env) {
  memstub_trace *t = read_sample("listing1.csv");
  memstub_gen *g = gen(t);
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/m-%%p.csv", dir);  // a template: the pid
  setenv("MEMSTUB_MEASURE", path, 1);
  setenv("MEMSTUB_TIMING", "usleep", 1);
  memstub_error err = {0};
  ck_assert_int_eq(memstub_stub_call(&g->stub, &err), 0);
  snprintf(path, sizeof path, "%s/m-%ld.csv", dir, (long)getpid());
  memstub_trace *rep = NULL;
  ck_assert_msg(memstub_trace_read(path, &rep, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(rep->n, 5);
  ck_assert_str_eq(memstub_trace_get_meta(rep, "timing"), "usleep");
  memstub_trace_free(rep);
  setenv("MEMSTUB_TIMING", "never", 1);
  ck_assert_int_eq(memstub_stub_call(&g->stub, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "MEMSTUB_TIMING"));
  unsetenv("MEMSTUB_TIMING");
  unsetenv("MEMSTUB_MEASURE");
  tu_rmtree(dir);
  free(dir);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("replay");
  TCase *tc = tcase_create("engine");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_listing1);
  tcase_add_loop_test(tc, test_constant_situations, 0, (int)(sizeof situations / sizeof situations[0]));
  tcase_add_test(tc, test_nonlifo);
  tcase_add_test(tc, test_cause_columns);
  tcase_add_loop_test(tc, test_random_rows, 0, 2);
  tcase_add_test(tc, test_small_frames_no_drift);
  tcase_add_test(tc, test_heap_mmap_threshold);
  tcase_add_test(tc, test_deep_stack);
  tcase_add_test(tc, test_hand_made_stub);
  tcase_add_test(tc, test_cpu_over_the_duration);
  tcase_add_test(tc, test_tcache_filled_only_to_measure);
  tcase_add_test(tc, test_timing);
  tcase_add_test(tc, test_records);
  tcase_add_test(tc, test_refused);
  tcase_add_test(tc, test_refused_endless_delays);
  tcase_add_test(tc, test_replayed_trace_hand_edited_descriptor);
  tcase_add_test(tc, test_progress);
  tcase_add_test(tc, test_progress_join_refused);
  tcase_add_test(tc, test_cpu_model_threads);
  tcase_add_test(tc, test_stub_call_env);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
