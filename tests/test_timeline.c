// The stub's timeline (issue 27 items 3 and 4; traces/timeline.c): the
// recorder's cost taken out of a recorded trace's times and CPU time, by its
// own figures or fitted to reference runs (memstub record --reference), with
// exact expected figures; memstub gen, replay, compare and plot on it.
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/compare.h"
#include "memstub/gen.h"
#include "testutil.h"

/* Four rows of 1 ms with 250 allocator calls each; the whole run made 1000.
 * Recorded it took 5 ms wall and 3 ms CPU, unrecorded 3 ms and 2 ms: the
 * recorder cost (3 - 2) ms / 1000 = 1000 ns of CPU time per call, not the
 * 10 ns it measured itself, and the recording waited 2 ms (wall less CPU)
 * where the program waits 1 ms. Per row 250 us of CPU time come out, and
 * its waiting is halved: CPU 600, 300, 1000, 100 us become 350, 50, 750 and
 * 0; the rows' waiting 400, 700, 0, 900 us becomes 200, 350, 0, 450; the
 * rows last 550, 400, 750 and 450 us (2.15 ms in all, not 4). */
#define META_RECORD                       \
  "# memstub-trace 1\n"                   \
  "# source: memstub-record\n"            \
  "# record.cost_ns_per_event: 10.0\n"    \
  "# record.events: 1000\n"               \
  "# record.samples: 0\n"
#define META_REFERENCE                    \
  "# outside.wall_ns: 5000000\n"          \
  "# outside.cpu_ns: 3000000\n"           \
  "# reference.runs: 3\n"                 \
  "# reference.wall_ns: 3000000\n"        \
  "# reference.wall_ns_range: 2900000 3100000\n" \
  "# reference.cpu_ns: 2000000\n"
#define ROWS                                                        \
  "time_ns,stack_bytes,heap_bytes,cpu_ns,calls_malloc_tiny,calls_free_tiny\n" \
  "0,0,0,0,0,0\n"                                                   \
  "1000000,0,100,600000,250,0\n"                                    \
  "2000000,0,0,900000,0,250\n"                                      \
  "3000000,0,200,1900000,250,0\n"                                   \
  "4000000,0,0,2000000,0,250\n"

static const char *const FITTED = META_RECORD META_REFERENCE ROWS;
static const char *const OWN = META_RECORD ROWS;

// A replay that kept the fitted timeline exactly (and its CPU time).
static const char *const REPLAYED =
    "# memstub-trace 1\n"
    "time_ns,stack_bytes,heap_bytes,point,cpu_ns\n"
    "0,0,0,0,0\n"
    "550000,0,100,1,350000\n"
    "950000,0,0,2,400000\n"
    "1700000,0,200,3,1150000\n"
    "2150000,0,0,4,1150000\n";

static memstub_trace *parse(const char *text) {
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_parse("t.csv", text, strlen(text), &t, &err) == 0, "%s", err.msg);
  return t;
}

// memstub_gen_build of text: 0 and *g, or the error (*g NULL).
static int build(const char *text, memstub_gen **g, memstub_error *err) {
  memstub_trace *t = parse(text);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  int rc = memstub_gen_build(t, &o, g, err);
  memstub_trace_free(t);
  return rc;
}

// The stub of the recorder's figures, the reference metadata meta and ROWS.
static memstub_gen *fitted(const char *meta) {
  char text[4096];
  snprintf(text, sizeof text, "%s%s%s", META_RECORD, meta, ROWS);
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(build(text, &g, &err) == 0, "%s", err.msg);
  return g;
}

/* The stub of one thread of a process of two, fitted on its recording's
 * rows (4 ms, rows_cpu ns of CPU time; 5 ms and 3 ms from outside, a start
 * of 1 ms before them) to reference runs of ref_wall ns and 2 ms of CPU. */
static memstub_gen *fitted_rows(long rows_cpu, long ref_wall) {
  char meta[1024];
  snprintf(meta, sizeof meta,
           "# record.thread: all\n# record.threads: 2\n"
           "# outside.wall_ns: 5000000\n# outside.cpu_ns: 3000000\n"
           "# recording.rows_wall_ns: 4000000\n# recording.rows_cpu_ns: %ld\n"
           "# record.start_wall_ns: 1000000\n# record.start_cpu_ns: 900000\n"
           "# reference.runs: 3\n# reference.wall_ns: %ld\n# reference.cpu_ns: 2000000\n",
           rows_cpu, ref_wall);
  return fitted(meta);
}

static char *write_in(const char *dir, const char *name, const char *text) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  tu_write_file(p, text);
  return p;
}

START_TEST(test_gen_fitted) {
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(build(FITTED, &g, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(g->stub.numdata, 4);
  static const int64_t cpu[4] = {350000, 50000, 750000, 0}, dt[4] = {550000, 400000, 750000, 450000};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(g->point[i], i + 1);
    ck_assert_int_eq(g->use[i].time, dt[i]);
    ck_assert_int_eq(g->cpu[i], cpu[i]);
  }
  ck_assert_int_eq(g->stub.duration_ns, 2150000);
  ck_assert_int_eq(g->work_overhead_ns, 4000000 - 2150000);
  ck_assert_ptr_nonnull(g->timeline);
  ck_assert_msg(strstr(g->timeline, "fitted to 3 reference runs") &&
                    strstr(g->timeline, "1000.0 ns of CPU time per allocator call out (the "
                                        "recorder's own figure: 10.0 ns), the waiting (wall less "
                                        "CPU) times 0.500"),
                "%s", g->timeline);
  memstub_gen_free(g);
  /* Without CPU figures, the wall time per call: (5 - 3) ms / 1000 = 2000
   * ns, 500 us a row; the CPU time loses the recorder's own 2.5 us, within
   * the interval that is left. */
  g = fitted("# outside.wall_ns: 5000000\n"
             "# reference.wall_ns: 3000000\n");
  for (int i = 0; i < 4; i++) ck_assert_int_eq(g->use[i].time, 500000);
  ck_assert_int_eq(g->cpu[0], 500000);
  ck_assert_int_eq(g->cpu[1], 300000 - 2500);
  ck_assert_msg(strstr(g->timeline, "fitted to 1 reference run: 3.00 ms wall, unknown CPU") &&
                    strstr(g->timeline, "2000.0 ns per allocator call out of the wall time") &&
                    strstr(g->timeline, "; the fit may be mostly the recorder's fixed costs"),
                "%s", g->timeline);  // 200 times the recorder's own 10 ns
  memstub_gen_free(g);
  /* Few calls (100) and no figure of the recorder's own per call: the run's
   * difference is no cost of those calls but its slowing as a whole. Each
   * row's CPU time times 2/3 (the reference's 2 ms over the recording's 3),
   * its waiting times 3/5 (the wall times' ratio): 400, 200, 666.7, 66.7 us
   * of CPU and 240, 420, 0, 540 us of waiting. */
  {
    const char *few = "# memstub-trace 1\n"
                      "# source: memstub-record\n"
                      "# record.cost_ns_per_event: not measured\n"
                      "# record.events: 100\n"
                      "# record.samples: 0\n" META_REFERENCE ROWS;
    ck_assert_msg(build(few, &g, &err) == 0, "%s", err.msg);
    static const int64_t fcpu[4] = {400000, 200000, 666667, 66667},
                         fdt[4] = {640000, 620000, 666667, 606667};
    for (int i = 0; i < 4; i++) {
      ck_assert_int_eq(g->cpu[i], fcpu[i]);
      ck_assert_int_eq(g->use[i].time, fdt[i]);
    }
    ck_assert_msg(strstr(g->timeline, "(100 allocator calls and no figure of the recorder's own "
                                      "per call: the run slowed as a whole)") &&
                      strstr(g->timeline, "each row's CPU time times 0.667 and its waiting (wall "
                                          "less CPU) times 0.600"),
                  "%s", g->timeline);
    memstub_gen_free(g);
  }
  // Without reference runs, the recorder's own 10 ns per call: 2.5 us a row.
  ck_assert_msg(build(OWN, &g, &err) == 0, "%s", err.msg);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(g->use[i].time, 1000000 - 2500);
  ck_assert_int_eq(g->cpu[0], 600000 - 2500);
  ck_assert_ptr_nonnull(strstr(g->timeline, "by its own figures (10.0 ns per allocator call)"));
  memstub_gen_free(g);
  // Not a recording (no recorder's figures): the times as they are, no line.
  ck_assert_msg(build("# memstub-trace 1\n" ROWS, &g, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(g->use[0].time, 1000000);
  ck_assert_ptr_null(g->timeline);
  memstub_gen_free(g);
}
END_TEST

/* The rows of ROWS fitted to 1.5 ms of CPU time and 1.5 ms of waiting:
 * the last row's 100 us of CPU time cannot lose 125 us, it keeps 0, and
 * the others give up the 25 us left, in proportion (1,525 -> 1,500 us). */
static void check_whole_fit(const memstub_gen *g) {
  static const int64_t cpu[4] = {467213, 172131, 860656, 0},
                       dt[4] = {767213, 697131, 860656, 675000};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(g->use[i].time, dt[i]);
    ck_assert_int_eq(g->cpu[i], cpu[i]);
  }
}

/* A whole run of one thread: the trace's own CPU time (2 ms) and waiting
 * (2 ms) set to the reference's, 1.5 ms each: (2 - 1.5) ms / 1000 = 500 ns
 * of CPU time per call, 125 us a row (the last row's 100 us go to 0, and
 * the other rows give up the 25 us it could not, in proportion), and the
 * waiting times 0.75. */
START_TEST(test_gen_whole_run) {
  // Recorded with --thread main, or with every thread (the default) of a
  // program that had one: the default's traces were fitted as a part (a
  // hash table's stub 225 ms for a reference of 188 ms).
  static const char *const how[] = {"main", "all"};
  for (int k = 0; k < 2; k++) {
    char meta[512];
    snprintf(meta, sizeof meta,
             "# record.regions: none (whole run)\n"
             "# record.thread: %s\n"
             "# record.threads: 1\n"
             "# outside.wall_ns: 5000000\n"
             "# outside.cpu_ns: 3000000\n"
             "# reference.runs: 3\n"
             "# reference.wall_ns: 3000000\n"
             "# reference.cpu_ns: 1500000\n",
             how[k]);
    memstub_gen *g = fitted(meta);
    check_whole_fit(g);
    ck_assert_msg(strstr(g->timeline, "(the whole run: the trace's CPU time and waiting set to "
                                      "theirs)") &&
                      strstr(g->timeline, "500.0 ns of CPU time per allocator call out") &&
                      strstr(g->timeline, "times 0.750") && !strstr(g->timeline, "the fit may"),
                  "--thread %s: %s", how[k], g->timeline);
    memstub_gen_free(g);
  }
}
END_TEST

/* A whole run whose rows hold no allocator call (gzip -9 makes one, before
 * its first row: no call columns) still slowed under the recorder: with
 * reference runs its totals are set to theirs, 2 ms of CPU time and 1 ms of
 * waiting to 1.5 and 0.5 (it was left as recorded: gzip's stub 108 ms for
 * its 89 ms). Without reference runs, as recorded. */
#define NOCALLS_ROWS                                                      \
  "time_ns,stack_bytes,heap_bytes,cpu_ns\n0,0,0,0\n1000000,0,100,500000\n" \
  "2000000,0,50,1500000\n3000000,0,0,2000000\n"
START_TEST(test_gen_whole_run_no_calls) {
  static const char text[] = "# memstub-trace 1\n# source: memstub-record\n"
                             "# record.cost_ns_per_event: not measured\n# record.events: 1\n"
                             "# record.samples: 0\n# record.regions: none (whole run)\n"
                             "# record.thread: main\n# record.threads: 1\n"
                             "# outside.wall_ns: 3100000\n# outside.cpu_ns: 2050000\n"
                             "# reference.runs: 3\n# reference.wall_ns: 2000000\n"
                             "# reference.cpu_ns: 1500000\n" NOCALLS_ROWS;
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(build(text, &g, &err) == 0, "%s", err.msg);
  ck_assert_ptr_nonnull(g->timeline);
  ck_assert_msg(strstr(g->timeline, "the whole run: the trace's CPU time and waiting set to "
                                    "theirs") &&
                    strstr(g->timeline, "no allocator call in its rows") &&
                    strstr(g->timeline, "3.00 ms recorded, 2.00 ms after") &&
                    !strstr(g->timeline, "no slower") && !strstr(g->timeline, "not used"),
                "%s", g->timeline);
  ck_assert_int_eq(g->stub.duration_ns, 2000000);
  int64_t cpu = 0;
  for (int64_t i = 0; i < g->stub.numdata; i++) cpu += g->cpu[i];
  ck_assert_int_eq(cpu, 1500000);
  memstub_gen_free(g);
  // No reference runs: as recorded, no line (there are no calls to take a cost from).
  static const char plain[] = "# memstub-trace 1\n# source: memstub-record\n"
                              "# record.cost_ns_per_event: not measured\n# record.events: 1\n"
                              "# record.samples: 0\n" NOCALLS_ROWS;
  g = NULL;
  ck_assert_msg(build(plain, &g, &err) == 0, "%s", err.msg);
  ck_assert_ptr_null(g->timeline);
  ck_assert_int_eq(g->stub.duration_ns, 3000000);
  memstub_gen_free(g);
}
END_TEST

/* A region of a run (--function) whose span the reference runs timed
 * (recorder/times.c): its totals set to theirs, as a whole run's are, with
 * the figures of test_gen_whole_run (the region's 1.5 ms of CPU time and
 * 1.5 ms of waiting), whatever the whole runs' difference (here 2 ms of CPU
 * time over 1000 calls: the per-call fit would take 2000 ns a call). */
START_TEST(test_gen_regions) {
  const char *region = "# record.regions: all occurrences\n"
                       "# record.thread: region\n"
                       "# record.threads: 2\n"
                       "# outside.wall_ns: 9000000\n"
                       "# outside.cpu_ns: 7000000\n"
                       "# reference.runs: 3\n"
                       "# reference.wall_ns: 7000000\n"
                       "# reference.cpu_ns: 5000000\n";
  char meta[1024];
  snprintf(meta, sizeof meta, "%s# reference.region_occurrences: 1\n"
           "# reference.region_wall_ns: 3000000\n# reference.region_cpu_ns: 1500000\n", region);
  memstub_gen *g = fitted(meta);
  check_whole_fit(g);
  ck_assert_int_eq(g->stub.duration_ns, 3000000);
  ck_assert_msg(strstr(g->timeline, "fitted to 3 reference runs (the regions' span timed in them: "
                                    "the trace's CPU time and waiting set to theirs): 3.00 ms "
                                    "wall, 1.50 ms CPU (the recording: 4.00 ms, 2.00 ms)"),
                "%s", g->timeline);
  memstub_gen_free(g);
  // Another number of occurrences than the recording's: not its span, and it says so.
  snprintf(meta, sizeof meta, "%s# record.region_occurrences: 2\n# reference.region_occurrences: 3\n"
           "# reference.region_wall_ns: 3000000\n# reference.region_cpu_ns: 1500000\n", region);
  g = fitted(meta);
  ck_assert_msg(strstr(g->timeline, "2000.0 ns of CPU time per allocator call out") &&
                    strstr(g->timeline, "the reference runs timed another number of region "
                                        "occurrences than the recording had"),
                "%s", g->timeline);
  memstub_gen_free(g);
  // Without the regions' figures: the whole runs' difference per call.
  g = fitted(region);
  ck_assert_msg(strstr(g->timeline, "2000.0 ns of CPU time per allocator call out"), "%s",
                g->timeline);
  memstub_gen_free(g);
  snprintf(meta, sizeof meta, "%s# reference.region_wall_ns: 3 ms\n", region);
  char text[4096];
  snprintf(text, sizeof text, "%s%s%s", META_RECORD, meta, ROWS);
  memstub_error err = {0};
  ck_assert_int_eq(build(text, &g, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "metadata reference.region_wall_ns: '3 ms'"), "%s", err.msg);
}
END_TEST

/* Rows whose CPU time runs ahead of their wall time (the recorder
 * extrapolates a thread's CPU clock between readings): the region's span
 * still comes to the reference runs' 3 ms and 2.5 ms of CPU time. The
 * waiting was scaled by the net waiting (1 ms) where the rows hold 1.3 ms
 * (rows 1 and 3 count 0, not -0.2 and -0.1), and the CPU time cut to the
 * rows' wall time was never given back: the hash host's stub came to 220
 * ms for a span of 210, SQLite's to 802 ms for 861. */
START_TEST(test_gen_regions_cpu_ahead) {
  static const char text[] =
      META_RECORD
      "# record.regions: all occurrences\n"
      "# record.thread: region\n"
      "# outside.wall_ns: 9000000\n"
      "# outside.cpu_ns: 7000000\n"
      "# reference.runs: 3\n"
      "# reference.wall_ns: 7000000\n"
      "# reference.cpu_ns: 5000000\n"
      "# reference.region_occurrences: 1\n"
      "# reference.region_wall_ns: 3000000\n"
      "# reference.region_cpu_ns: 2500000\n"
      "time_ns,stack_bytes,heap_bytes,cpu_ns,calls_malloc_tiny,calls_free_tiny\n"
      "0,0,0,0,0,0\n"
      "1000000,0,100,1200000,250,0\n"
      "2000000,0,0,1500000,0,250\n"
      "3000000,0,200,2600000,250,0\n"
      "4000000,0,0,3000000,0,250\n";
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(build(text, &g, &err) == 0, "%s", err.msg);
  int64_t cpu = 0;
  for (int i = 0; i < 4; i++) cpu += g->cpu[i];
  ck_assert_msg(llabs(g->stub.duration_ns - 3000000) <= 4 && llabs(cpu - 2500000) <= 4,
                "%lld ns wall, %lld ns CPU for the reference's 3 ms and 2.5 ms: %s",
                (long long)g->stub.duration_ns, (long long)cpu, g->timeline);
  memstub_gen_free(g);
}
END_TEST

/* The reference run's clock at the calls places each row: a build of 1000
 * mallocs that took 0.2 ms unrecorded (the curve's first five points), 1
 * ms without calls, 1000 frees over 0.8 ms; recorded 1 ms each. The even
 * cut gives the build 0.5 ms; the curve about 0.25 (the anchors are 200
 * calls apart: the build's last 199 calls share the stretch up to the
 * first free's). A curve whose calls are not the trace's is left out and
 * said; one that is not a curve is refused, naming its field. */
#define CURVE_TRACE(curve)                          \
  META_RECORD                                       \
  "# record.regions: all occurrences\n"             \
  "# record.thread: region\n"                       \
  "# record.region_occurrences: 1\n"                \
  "# outside.wall_ns: 9000000\n"                    \
  "# outside.cpu_ns: 7000000\n"                     \
  "# reference.runs: 3\n"                           \
  "# reference.wall_ns: 7000000\n"                  \
  "# reference.cpu_ns: 5000000\n"                   \
  "# reference.region_occurrences: 1\n"             \
  "# reference.region_wall_ns: 2000000\n"           \
  "# reference.region_cpu_ns: 2000000\n"            \
  "# reference.curve: " curve "\n"           \
  "time_ns,stack_bytes,heap_bytes,cpu_ns,calls_malloc_tiny,calls_free_tiny\n" \
  "0,0,0,0,0,0\n"                                   \
  "1000000,0,100,1000000,1000,0\n"                  \
  "2000000,0,120,2000000,0,0\n"                     \
  "3000000,0,0,3000000,0,1000\n"
START_TEST(test_gen_regions_curve) {
  static const char text[] = CURVE_TRACE(
      "2000 2000000 200 0 40000 80000 120000 160000 1200000 1360000 1520000 1680000 1840000");
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(build(text, &g, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(g->stub.numdata, 3);  // row 0 is the start
  int64_t d1 = g->stub.use[0].time, d2 = g->stub.use[1].time, d3 = g->stub.use[2].time;
  ck_assert_msg(d1 >= 200000 && d1 <= 300000 && d2 >= 900000 && d2 <= 1000000 &&
                    d3 >= 750000 && d3 <= 850000 && llabs(g->stub.duration_ns - 2000000) <= 4,
                "rows of %lld, %lld, %lld ns (%lld in all) for about 0.25, 0.95, 0.8 ms: %s",
                (long long)d1, (long long)d2, (long long)d3, (long long)g->stub.duration_ns,
                g->timeline);
  int64_t cpu = g->cpu[0] + g->cpu[1] + g->cpu[2];
  ck_assert_msg(llabs(cpu - 2000000) <= 4 && g->cpu[0] <= d1, "CPU %lld ns: %s", (long long)cpu,
                g->timeline);
  ck_assert_msg(strstr(g->timeline, "each row placed at the reference's time of its calls (a "
                                    "reference run's clock at 10 points of its 2000 calls)"),
                "%s", g->timeline);
  memstub_gen_free(g);
  // Another count of calls: the even cut, and why.
  static const char other[] = CURVE_TRACE("1900 2000000 100 0 40000");
  ck_assert_msg(build(other, &g, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(g->stub.use[0].time, 500000);
  ck_assert_msg(strstr(g->timeline, "the clock at the calls not used: the reference run counted "
                                    "another number of calls than the trace has"),
                "%s", g->timeline);
  memstub_gen_free(g);
  static const char *const bad[][2] = {
      {CURVE_TRACE("2000 2000000 50 0 40000 30000"), "field 6: 30000 is before the time before it"},
      {CURVE_TRACE("2000 2000000 50 0 2500000"), "field 5: 2500000 is beyond the span"},
      {CURVE_TRACE("2000 2000000 50 0 x"), "field 5: 'x' is not a count"},
      {CURVE_TRACE("100 2000000 50 0 1 2 3"), "field 7: 3 is a point beyond the calls counted"},
      {CURVE_TRACE("500 2000000"), "is not CALLS SPAN STRIDE and at least one time"},
      {CURVE_TRACE("0 2000000 50 0"), "is not CALLS SPAN STRIDE and at least one time"},
      {CURVE_TRACE("9223372036854775807 2000000 4611686018427387904 0 1 2"), "field 6: 2 is a point beyond"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    g = NULL;
    ck_assert_int_eq(build(bad[i][0], &g, &err), -EINVAL);
    ck_assert_msg(strstr(err.msg, "metadata reference.curve: ") &&
                      strstr(err.msg, bad[i][1]),
                  "%zu: %s", i, err.msg);
  }
}
END_TEST

/* Rows with calls that keep less than a tenth of their CPU time after
 * their calls' share, holding half the recording's CPU time: gen says the
 * even cost per call may have put the stub's time in the wrong place (the
 * hash component's mallocs cost the recorder less than its frees). Here
 * 1.9 ms over 1000 calls: the two rows with calls keep 50 us of 1 ms. */
START_TEST(test_gen_uneven_cost_said) {
  static const char text[] =
      META_RECORD
      "# record.regions: none (whole run)\n"
      "# record.thread: main\n"
      "# record.threads: 1\n"
      "# outside.wall_ns: 4000000\n"
      "# outside.cpu_ns: 4000000\n"
      "# reference.runs: 3\n"
      "# reference.wall_ns: 2100000\n"
      "# reference.cpu_ns: 2100000\n"
      "time_ns,stack_bytes,heap_bytes,cpu_ns,calls_malloc_tiny,calls_free_tiny\n"
      "0,0,0,0,0,0\n"
      "1000000,0,100,1000000,500,0\n"
      "2000000,0,0,2000000,0,500\n"
      "3000000,0,0,3000000,0,0\n"
      "4000000,0,0,4000000,0,0\n";
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(build(text, &g, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(g->cpu[1], 50000);
  ck_assert_int_eq(g->cpu[3], 1000000);
  ck_assert_msg(strstr(g->timeline, "; 2 rows with calls (2.00 ms of the recording's CPU time) "
                                    "kept less than a tenth of theirs"),
                "%s", g->timeline);
  ck_assert_int_eq(g->timeline_uneven, 1);  // memstub gen and replay warn
  memstub_gen_free(g);
  // From the command line: the warning, and the stub still written (exit 0).
  char *dir = tu_mkdtemp(), *in = write_in(dir, "u.csv", text);
  tu_run r = tu_memstub(dir, "gen", in, "-o", "u.h", NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "warning: ") &&
                    strstr(r.err, "the stub's timeline has the reference's total but maybe not "
                                  "its shape"),
                "gen: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  free(in);
  tu_rmtree(dir);
  free(dir);
  // ROWS fitted as a whole run: its one row that keeps 0 held 0.1 of 2 ms: not said.
  g = fitted("# record.regions: none (whole run)\n# record.thread: main\n# record.threads: 1\n"
             "# outside.wall_ns: 5000000\n# outside.cpu_ns: 3000000\n# reference.runs: 3\n"
             "# reference.wall_ns: 3000000\n# reference.cpu_ns: 1500000\n");
  ck_assert_msg(!strstr(g->timeline, "rows with calls"), "%s", g->timeline);
  ck_assert_int_eq(g->timeline_uneven, 0);
  memstub_gen_free(g);
}
END_TEST

/* Without reference runs the timeline rests on the recorder's own figures:
 * said (memstub_gen.timeline_estimated, and gen's warning) when they take
 * 2 % of the recording out or more. 1000 calls over 4 ms: 200 ns each is
 * 200 us (5 %), 50 ns is 50 us (1.25 %); with reference runs, never. */
#define EST_TRACE(ns)                                                  \
  "# memstub-trace 1\n# source: memstub-record\n"                      \
  "# record.cost_ns_per_event: " ns "\n# record.events: 1000\n"         \
  "# record.samples: 0\n"                                              \
  "time_ns,stack_bytes,heap_bytes,cpu_ns,calls_malloc_tiny,calls_free_tiny\n" \
  "0,0,0,0,0,0\n1000000,0,100,1000000,500,0\n2000000,0,0,2000000,0,500\n"  \
  "4000000,0,0,4000000,0,0\n"
START_TEST(test_gen_estimated_said) {
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(build(EST_TRACE("200.0"), &g, &err) == 0, "%s", err.msg);
  ck_assert_ptr_nonnull(g->timeline_estimated);
  ck_assert_msg(strstr(g->timeline_estimated, "by the recorder's own figures, 200 µs of the "
                                              "4.00 ms recorded (5 %)") &&
                    strstr(g->timeline_estimated, "memstub record --reference 3"),
                "%s", g->timeline_estimated);
  memstub_gen_free(g);
  g = NULL;
  ck_assert_msg(build(EST_TRACE("50.0"), &g, &err) == 0, "%s", err.msg);
  ck_assert_ptr_null(g->timeline_estimated);
  memstub_gen_free(g);
  g = fitted(META_REFERENCE);  // fitted: not the recorder's own figures
  ck_assert_ptr_null(g->timeline_estimated);
  memstub_gen_free(g);
  // The command line: gen and replay warn, and still succeed.
  char *dir = tu_mkdtemp(), *in = write_in(dir, "e.csv", EST_TRACE("200.0"));
  tu_run r = tu_memstub(dir, "gen", in, "-o", "e.h", NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "warning: ") &&
                    strstr(r.err, "the stub's timeline takes the recorder's cost out by the "
                                  "recorder's own figures") && !tu_warned(r.err),
                "gen: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", in, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "200 µs of the 4.00 ms recorded"), "replay: exit %d: %s",
                r.status, r.err);
  tu_run_free(&r);
  free(in);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A recording that used no more CPU time than its reference: nothing per
 * call, and it says so; its waiting (3 ms against 0.5 ms) still scaled. */
START_TEST(test_gen_unfit) {
  memstub_gen *g = fitted("# outside.wall_ns: 5000000\n"
                          "# outside.cpu_ns: 2000000\n"
                          "# reference.runs: 1\n"
                          "# reference.wall_ns: 3000000\n"
                          "# reference.cpu_ns: 2500000\n");
  ck_assert_int_eq(g->cpu[0], 600000);
  ck_assert_int_eq(g->use[0].time, 600000 + 66667);  // 400 us of waiting / 6
  ck_assert_ptr_nonnull(strstr(g->timeline, "no slower than the reference runs"));
  memstub_gen_free(g);
}
END_TEST

/* One thread of a process of several, every thread recorded (as the
 * generator splits a --thread all trace): the process's figures are the sum
 * of its threads', so the difference is a slowing of the whole process, not
 * a cost per allocator call of whichever thread called. The recorder's own
 * 10 ns per call out (250 a row), then the CPU time times 2 ms / (3 ms less
 * the 10 us the recorder counted itself) and the waiting times 4 ms / 5 ms.
 * Before, the per-call fit put 1 us a call on these rows and scaled their
 * waiting by the process's (xz's stub: 2.02 s recorded, 3.20 s after). */
START_TEST(test_gen_process_threads) {
  memstub_gen *g = fitted("# record.thread: all\n"
                          "# record.threads: 2\n"
                          "# outside.wall_ns: 5000000\n"
                          "# outside.cpu_ns: 3000000\n"
                          "# reference.runs: 3\n"
                          "# reference.wall_ns: 4000000\n"
                          "# reference.cpu_ns: 2000000\n");
  static const int64_t cpu[4] = {399666, 198997, 667224, 65217}, dt[4] = {719666, 758997, 667224, 785217};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(g->use[i].time, dt[i]);
    ck_assert_int_eq(g->cpu[i], cpu[i]);
  }
  ck_assert_msg(strstr(g->timeline, "(a process of 2 threads: each thread slowed as the process "
                                    "was)") &&
                    strstr(g->timeline, "10.0 ns per allocator call, and its samples") &&
                    strstr(g->timeline, "CPU time times 0.669") &&
                    strstr(g->timeline, "times 0.800"),
                "%s", g->timeline);
  memstub_gen_free(g);
  // A recording no slower than its reference: the threads' CPU time kept, the waiting too.
  g = fitted("# record.thread: all\n"
             "# record.threads: 2\n"
             "# outside.wall_ns: 3000000\n"
             "# outside.cpu_ns: 2000000\n"
             "# reference.runs: 1\n"
             "# reference.wall_ns: 3500000\n"
             "# reference.cpu_ns: 2500000\n");
  ck_assert_int_eq(g->cpu[0], 600000 - 2500);
  ck_assert_int_eq(g->use[0].time, 1000000 - 2500);
  ck_assert_ptr_nonnull(strstr(g->timeline, "its threads' CPU time kept"));
  memstub_gen_free(g);
  /* The recording's rows given (recording.rows_*): the process fitted on
   * them, not on its figures from outside, which hold the recorder's setup
   * and its writing of the trace (5 ms and 3 ms above; the rows 4 ms and,
   * with the other thread's, 2.5 ms). CPU time times 2 ms / (2.5 ms less
   * the recorder's own 10 us), waiting times 3.6 ms / 4 ms: row 1's 600 us
   * of CPU time less 2.5 us becomes about 480 us, its 400 us of waiting 360 us.
   * Before, its CPU time became 399,666 and its waiting 240,000 (x 0.600):
   * the stubs of node with its threads ran 0.94 of its reference's wall time. */
  g = fitted_rows(2500000, 3600000);
  double cs = 2000000.0 / (2500000.0 - 10000.0);
  ck_assert_int_eq(g->cpu[0], (int64_t)(597500.0 * cs + 0.5));
  ck_assert_int_eq(g->use[0].time, (int64_t)(597500.0 * cs + 0.5) + 360000);
  ck_assert_msg(strstr(g->timeline, "(the recording's rows: 4.00 ms, 2.50 ms)") &&
                    strstr(g->timeline, "times 0.900"),
                "%s", g->timeline);
  // The process's start is in the reference's totals, so in the rows': not said.
  ck_assert_msg(!strstr(g->timeline, "not replayed"), "%s", g->timeline);
  memstub_gen_free(g);
  /* The rows hold less than the reference (its start and exit are outside
   * them): scaled up to it, within 1.5. CPU 2 ms / (1.8 ms less 10 us),
   * waiting 4.4 ms / 4 ms; the start is in the totals, not said. */
  g = fitted_rows(1800000, 4400000);
  cs = 2000000.0 / (1800000.0 - 10000.0);
  ck_assert_int_eq(g->cpu[0], (int64_t)(597500.0 * cs + 0.5));
  ck_assert_int_eq(g->use[0].time, (int64_t)(597500.0 * cs + 0.5) + 440000);
  ck_assert_msg(strstr(g->timeline, "times 1.117") && strstr(g->timeline, "times 1.100") &&
                    !strstr(g->timeline, "not replayed") && !strstr(g->timeline, "kept"),
                "%s", g->timeline);
  memstub_gen_free(g);
  // Beyond 1.5: not believed, the CPU time kept (and the start said).
  g = fitted_rows(1000000, 4400000);
  ck_assert_msg(strstr(g->timeline, "its threads' CPU time kept") && strstr(g->timeline, "not replayed"),
                "%s", g->timeline);
  memstub_gen_free(g);
}
END_TEST

/* ROWS with run_delay_ns (the time each row's thread was runnable without a
 * CPU): 100 us in row 1, 900 us in row 2 (more than its 700 us of waiting:
 * at most that), 50 us in row 3 (no waiting: nothing), none in row 4. */
#define ROWS_RUNQ                                                                \
  "time_ns,stack_bytes,heap_bytes,cpu_ns,calls_malloc_tiny,calls_free_tiny,run_delay_ns\n" \
  "0,0,0,0,0,0,0\n"                                                             \
  "1000000,0,100,600000,250,0,100000\n"                                         \
  "2000000,0,0,900000,0,250,1000000\n"                                          \
  "3000000,0,200,1900000,250,0,1050000\n"                                       \
  "4000000,0,0,2000000,0,250,1050000\n"

/* The waiting for a CPU is not the stub's to replay: the machine it runs
 * on makes its own (bench/threads_pool's stub took 1.09 of pool's wall
 * time with it in). By the recorder's own figures (2.5 us of each row's
 * wall and CPU time out per 250 calls) row 1 keeps 400 us of waiting less
 * its 100 us, row 2 none of its 700 us; CPU time as without the column.
 * Fitted (waiting x 0.5): each row's share of it halved too. */
START_TEST(test_gen_run_delay_out) {
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(build(META_RECORD ROWS_RUNQ, &g, &err) == 0, "%s", err.msg);
  static const int64_t own_dt[4] = {897500, 297500, 997500, 997500};
  static const int64_t own_cpu[4] = {597500, 297500, 997500, 97500};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(g->use[i].time, own_dt[i]);
    ck_assert_int_eq(g->cpu[i], own_cpu[i]);
  }
  ck_assert_msg(strstr(g->timeline, "; 800 µs of waiting for a CPU out (runnable, not running: "
                                    "the replay's machine makes its own)"),
                "%s", g->timeline);
  memstub_gen_free(g);
  ck_assert_msg(build(META_RECORD META_REFERENCE ROWS_RUNQ, &g, &err) == 0, "%s", err.msg);
  // FITTED's rows (550, 400, 750, 450 us) less 50 and 350 us.
  static const int64_t fit_dt[4] = {500000, 50000, 750000, 450000};
  for (int i = 0; i < 4; i++) ck_assert_int_eq(g->use[i].time, fit_dt[i]);
  ck_assert_msg(strstr(g->timeline, "; 400 µs of waiting for a CPU out"), "%s", g->timeline);
  memstub_gen_free(g);
  /* A thread of a process of several: its turns are its process's threads',
   * kept as recorded (the rows of OWN above), and said. */
  ck_assert_msg(build(META_RECORD "# record.thread: all\n# record.threads: 2\n" ROWS_RUNQ, &g,
                      &err) == 0,
                "%s", err.msg);
  static const int64_t kept_dt[4] = {997500, 997500, 997500, 997500};
  for (int i = 0; i < 4; i++) ck_assert_int_eq(g->use[i].time, kept_dt[i]);
  ck_assert_msg(strstr(g->timeline, "; 800 µs of waiting for a CPU kept (the turns of its "
                                    "process's threads, as recorded)") &&
                    !strstr(g->timeline, "CPU out"),
                "%s", g->timeline);
  memstub_gen_free(g);
  // Without the column: nothing said.
  g = fitted("");
  ck_assert_msg(!strstr(g->timeline, "waiting for a CPU"), "%s", g->timeline);
  memstub_gen_free(g);
  // A count that decreases, or a negative one, is refused naming the row.
  char text[4096];
  snprintf(text, sizeof text, "%s%s", META_RECORD,
           "time_ns,stack_bytes,heap_bytes,cpu_ns,calls_malloc_tiny,run_delay_ns\n"
           "0,0,0,0,0,0\n1000000,0,100,600000,250,200000\n2000000,0,0,900000,0,100000\n");
  ck_assert_int_eq(build(text, &g, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "row 3: run_delay_ns decreases from 200000 to 100000"), "%s",
                err.msg);
  snprintf(text, sizeof text, "%s%s", META_RECORD,
           "time_ns,stack_bytes,heap_bytes,cpu_ns,calls_malloc_tiny,run_delay_ns\n"
           "0,0,0,0,0,-5\n1000000,0,100,600000,250,200000\n");
  ck_assert_int_eq(build(text, &g, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "row 1: run_delay_ns: negative (-5)"), "%s", err.msg);
}
END_TEST

/* compare on a target without ORIGINAL's waiting for a CPU leaves the
 * replay's own out of the duration too (its off_cpu_ns): a replay of
 * ROWS_RUNQ's stub 500 us longer than the target's 3.19 ms, that waited
 * 500 us for a CPU, is on time; one without the column is judged as
 * before. With threads, each thread's own figure (its thread.K line). */
START_TEST(test_compare_run_delay_out) {
  static const char repl[] =
      "# memstub-trace 1\n"
      "# off_cpu_ns: 500000 (the replay thread waited this long for a CPU)\n"
      "time_ns,stack_bytes,heap_bytes,point,cpu_ns\n"
      "0,0,0,0,0\n897500,0,100,1,597500\n1195000,0,0,2,895000\n"
      "2192500,0,200,3,1892500\n3690000,0,0,4,1990000\n";
  memstub_trace *a = parse(META_RECORD ROWS_RUNQ), *b = parse(repl);
  memstub_compare_report *r = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_compare_traces(a, "orig", b, "repl", NULL, &r, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(r->timeline.runq_ns, 800000);
  ck_assert_int_eq(r->duration.original_ns, 3190000);
  ck_assert_int_eq(r->duration.replayed_ns, 3690000);
  ck_assert_int_eq(r->duration.off_cpu_ns, 500000);
  ck_assert_int_eq(r->duration.error_ns, 0);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_int_eq(memstub_compare_write_text(r, NULL, f), 0);
  fclose(f);
  ck_assert_msg(strstr(buf, "error 0 ns (0 %), the replay's 500 µs of waiting for a CPU "
                            "left out as the original's was"),
                "%s", buf);
  free(buf);
  memstub_compare_free(r);
  memstub_trace_free(a);
  a = parse(META_RECORD ROWS);  // no run_delay_ns: the replay's waiting stays in
  ck_assert_msg(memstub_compare_traces(a, "orig", b, "repl", NULL, &r, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(r->duration.off_cpu_ns, 0);
  ck_assert_int_eq(r->duration.error_ns, 3690000 - 3990000);
  memstub_compare_free(r);
  memstub_trace_free(a);
  memstub_trace_free(b);
  /* Two threads: thread 0 waited 500 us for a CPU in its row 1 (of 600 us
   * of waiting), its process's threads' turns: kept in its target (4.99999
   * ms), so its replay's 500 us of waiting for a CPU (its thread.0 line,
   * read as its own figures, as its CPU time) stay in too. */
  static const char orig[] =
      META_RECORD "# record.thread: all\n# record.threads: 2\n"
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,cpu_ns,"
      "calls_malloc_tiny,run_delay_ns\n"
      "0,0,0,0,start,-1,0,0,0\n1000000,0,100,0,,,400000,1,500000\n"
      "2000000,0,0,1,start,0,0,0,0\n3000000,0,100,1,,,1000000,1,0\n"
      "4000000,0,0,1,exit,,1000000,0,0\n5000000,0,100,0,exit,,400000,0,500000\n";
  static const char trepl[] =
      "# memstub-trace 1\n"
      "# thread.0: start 0 ns, 3 points, duration_ns 4999990 (target 4499990), cpu_ns 399990, "
      "off_cpu_ns 500000, stack_size 1056768, tid 1\n"
      "# thread.1: start 2000000 ns, 3 points, duration_ns 1999990 (target 1999990), cpu_ns "
      "999990, off_cpu_ns 0, stack_size 1056768, tid 2\n"
      "time_ns,stack_bytes,heap_bytes,point,thread,thread_event,thread_peer,cpu_ns\n"
      "0,0,0,0,0,start,-1,0\n999990,0,100,1,0,,,399990\n2000000,0,0,0,1,start,0,0\n"
      "2999990,0,100,1,1,,,999990\n3999990,0,0,2,1,exit,,999990\n"
      "4999990,0,100,2,0,exit,,399990\n";
  a = parse(orig);
  b = parse(trepl);
  memstub_compare_threads_report *tr = NULL;
  ck_assert_msg(memstub_compare_threads_traces(a, "o", b, "r", NULL, &tr, &err) == 0, "%s",
                err.msg);
  ck_assert_int_eq(tr->thread[0]->duration.original_ns, 4999990);
  ck_assert_int_eq(tr->thread[0]->timeline.runq_ns, 0);
  ck_assert_int_eq(tr->thread[0]->duration.off_cpu_ns, 0);
  ck_assert_int_eq(tr->thread[0]->duration.error_ns, 0);
  ck_assert_int_eq(tr->thread[0]->replay_cpu_ns, 399990);
  ck_assert_int_eq(tr->thread[0]->replay_off_cpu_ns, 500000);
  ck_assert_int_eq(tr->thread[1]->duration.off_cpu_ns, 0);
  memstub_compare_threads_free(tr);
  memstub_trace_free(a);
  memstub_trace_free(b);
}
END_TEST

/* What ran before the recorder (record.start_wall_ns: exec, the loader) is
 * not in the rows: the timeline line says the stub leaves it out when it is
 * 2 % of the run or more (here 1 ms before a trace of 4 ms: 20 %), and not
 * when the model has it (a whole run of one thread fitted to reference
 * runs: the trace's totals are the reference's) or when it is small; a bad
 * value is refused naming the key. Not a warning: the stub's own start
 * (its exec and loader) makes up much of it for a small program. */
START_TEST(test_gen_prestart_said) {
  static const char *const start = "# record.start_wall_ns: 1000000\n"
                                   "# record.start_cpu_ns: 900000\n";
  static const char *const said = "; the program's start before the trace's (exec, the dynamic "
                                  "loader with its libraries and the recorder's) not replayed: "
                                  "1.00 ms, 900 µs of CPU time (20 % of the run)";
  memstub_gen *g = fitted(start);  // the recorder's own figures
  ck_assert_msg(strstr(g->timeline, said), "%s", g->timeline);
  memstub_gen_free(g);
  char meta[1024];
  snprintf(meta, sizeof meta, "%s%s", start, "# record.thread: all\n# record.threads: 2\n" META_REFERENCE);
  g = fitted(meta);  // a process fitted by its slowing from outside: its rows alone
  ck_assert_msg(strstr(g->timeline, said), "%s", g->timeline);
  memstub_gen_free(g);
  snprintf(meta, sizeof meta, "%s%s", start, "# record.regions: none (whole run)\n"
                                             "# record.thread: all\n# record.threads: 1\n" META_REFERENCE);
  g = fitted(meta);  // one thread's whole run: in the reference's totals
  ck_assert_msg(!strstr(g->timeline, "not replayed"), "%s", g->timeline);
  memstub_gen_free(g);
  g = fitted("# record.start_wall_ns: 50000\n# record.start_cpu_ns: 40000\n");  // 1.2 %
  ck_assert_msg(!strstr(g->timeline, "not replayed"), "%s", g->timeline);
  memstub_gen_free(g);
  char text[4096];
  snprintf(text, sizeof text, "%s%s%s", META_RECORD, "# record.start_wall_ns: soon\n", ROWS);
  memstub_error err = {0};
  ck_assert_int_eq(build(text, &g, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "metadata record.start_wall_ns: 'soon'"), "%s", err.msg);
}
END_TEST

// Reference figures that cannot be used are refused, naming the key.
START_TEST(test_bad_metadata) {
  static const struct {
    const char *meta, *want;
  } bad[] = {
      {"# reference.wall_ns: 3000000\n", "outside.wall_ns"},
      {"# outside.wall_ns: 5 ms\n# reference.wall_ns: 3000000\n",
       "metadata outside.wall_ns: '5 ms' is not a count of ns"},
      {"# outside.wall_ns: 5000000\n# reference.wall_ns: -3\n", "metadata reference.wall_ns"},
      // The rows' figures of a process of threads (memstub record --repeat).
      {"# record.thread: all\n# record.threads: 2\n" META_REFERENCE
       "# recording.rows_wall_ns: 4 ms\n# recording.rows_cpu_ns: 2500000\n",
       "metadata recording.rows_wall_ns: '4 ms' is not a count of ns"},
      {"# record.thread: all\n# record.threads: 2\n" META_REFERENCE
       "# recording.rows_wall_ns: 4000000\n# recording.rows_cpu_ns: -1\n",
       "metadata recording.rows_cpu_ns"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[2048];
    snprintf(text, sizeof text, "%s%s%s", META_RECORD, bad[i].meta, ROWS);
    memstub_gen *g = NULL;
    memstub_error err = {0};
    ck_assert_int_eq(build(text, &g, &err), -EINVAL);
    ck_assert_msg(strstr(err.msg, bad[i].want), "%zu: %s", i, err.msg);
    memstub_trace *a = parse(text), *b = parse(REPLAYED);
    memstub_compare_report *r = NULL;
    ck_assert_int_eq(memstub_compare_traces(a, "orig.csv", b, "r.csv", NULL, &r, &err), -EINVAL);
    ck_assert_msg(strstr(err.msg, "orig.csv") && strstr(err.msg, bad[i].want), "%s", err.msg);
    memstub_trace_free(a);
    memstub_trace_free(b);
  }
}
END_TEST

/* A replay that kept the stub's timeline is judged on it: no duration error
 * (before, compare held it against the recorded 4 ms: -46.25 %). */
START_TEST(test_compare_on_target) {
  memstub_trace *a = parse(FITTED), *b = parse(REPLAYED);
  memstub_compare_report *r = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_compare_traces(a, "orig", b, "repl", NULL, &r, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(r->duration.original_ns, 2150000);
  ck_assert_int_eq(r->duration.error_ns, 0);
  ck_assert_int_eq(r->time.max_abs, 0);
  ck_assert_int_eq(r->timeline.changed, 1);
  ck_assert_int_eq(r->timeline.fitted, 1);
  ck_assert_int_eq(r->timeline.recorded_ns, 4000000);
  ck_assert_int_eq(r->timeline.reference_runs, 3);
  ck_assert_int_eq(r->timeline.reference_wall_ns, 3000000);
  ck_assert_int_eq(r->work.cpu.original_total, 1150000);
  ck_assert_int_eq(r->work.cpu.replayed_total, 1150000);
  memstub_compare_free(r);
  // Asked for: the recorded times.
  memstub_compare_options o;
  memstub_compare_options_init(&o);
  o.recorded_times = 1;
  ck_assert_msg(memstub_compare_traces(a, "orig", b, "repl", &o, &r, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(r->duration.original_ns, 4000000);
  ck_assert(r->duration.error_pct < -46.2 && r->duration.error_pct > -46.3);  // 2.15 against 4 ms
  ck_assert_int_eq(r->timeline.changed, 0);
  ck_assert_ptr_null(r->timeline.summary);
  memstub_compare_free(r);
  // The target itself.
  memstub_trace *t = NULL;
  char *line = NULL;
  ck_assert_int_eq(memstub_compare_target(a, &t, &line, &err), 0);
  ck_assert_int_eq(t->pts[4].time_ns, 2150000);
  ck_assert_ptr_nonnull(strstr(line, "fitted to 3 reference runs"));
  memstub_trace_free(t);
  free(line);
  memstub_trace_free(a);
  memstub_trace_free(b);
}
END_TEST

// The commands: gen and replay say what they did to the times, compare and
// plot say they judge and draw on that timeline.
START_TEST(test_cli) {
  char *dir = tu_mkdtemp();
  char *orig = write_in(dir, "t.csv", FITTED), *repl = write_in(dir, "r.csv", REPLAYED);
  tu_run r = tu_memstub(dir, "gen", "t.csv", "-o", "t.h", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "memstub: timeline: recorder's cost out, fitted to 3 reference runs"),
                "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "compare", "t.csv", "r.csv", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.out, "timeline  the stub's, not the recorded times") &&
                    strstr(r.out, "error 0 ns (0 %)") &&
                    strstr(r.out, "original as recorded 4.00 ms; the program unrecorded 3.00 ms "
                                  "wall (median of 3 runs, whole run)"),
                "%s", r.out);
  tu_run_free(&r);
  r = tu_memstub(dir, "compare", "--json", "t.csv", "r.csv", NULL);
  ck_assert_msg(strstr(r.out, "\"timeline\": {\"changed\": true, \"fitted\": true") &&
                    strstr(r.out, "\"recorded_ns\": 4000000, \"reference_runs\": 3"),
                "%s", r.out);
  tu_run_free(&r);
  r = tu_memstub(dir, "compare", "--recorded-times", "t.csv", "r.csv", NULL);
  ck_assert_msg(strstr(r.out, "(-46.2 %)") && !strstr(r.out, "timeline  "), "%s", r.out);
  tu_run_free(&r);
  r = tu_memstub(dir, "plot", "t.csv", "r.csv", "-o", "p.txt", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "timeline: t.csv drawn on its stub's timeline"), "%s", r.err);
  char path[4200];
  snprintf(path, sizeof path, "%s/p.txt", dir);
  char *fig = tu_read_file(path);
  ck_assert_ptr_nonnull(fig);
  ck_assert_msg(strstr(fig, "on the stub's timeline"), "%s", fig);
  free(fig);
  tu_run_free(&r);
  // replay generates in-process: the same timeline, the same line.
  r = tu_memstub(dir, "replay", "t.csv", "--measure", "m.csv", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "memstub: timeline: recorder's cost out, fitted"), "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "compare", "--json", "t.csv", "m.csv", NULL);
  ck_assert_msg(strstr(r.out, "\"original_ns\": 2150000,"), "%s", r.out);
  tu_run_free(&r);
  free(orig);
  free(repl);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *timeline_suite(void) {
  Suite *s = suite_create("timeline");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_gen_fitted);
  tcase_add_test(tc, test_gen_whole_run);
  tcase_add_test(tc, test_gen_whole_run_no_calls);
  tcase_add_test(tc, test_gen_regions);
  tcase_add_test(tc, test_gen_regions_cpu_ahead);
  tcase_add_test(tc, test_gen_regions_curve);
  tcase_add_test(tc, test_gen_uneven_cost_said);
  tcase_add_test(tc, test_gen_estimated_said);
  tcase_add_test(tc, test_gen_unfit);
  tcase_add_test(tc, test_gen_process_threads);
  tcase_add_test(tc, test_gen_prestart_said);
  tcase_add_test(tc, test_gen_run_delay_out);
  tcase_add_test(tc, test_compare_run_delay_out);
  tcase_add_test(tc, test_bad_metadata);
  tcase_add_test(tc, test_compare_on_target);
  tcase_add_test(tc, test_cli);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(timeline_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
