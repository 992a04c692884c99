// memstub record --repeat and --reference (issue 27 item 3): the recording
// of median duration kept with its side files, the others' deleted; runs
// without the recorder alternating with the recordings, their wall and CPU
// time in the metadata, and memstub gen fitting the timeline to them. The
// program (rec_helper runs) sleeps a duration the test chooses per run, so
// which run is the median does not depend on the machine's load.
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memstub/trace.h"
#include "testutil.h"

static char *helper(void) {
  char *h = getenv("MEMSTUB_REC_HELPER");
  ck_assert_msg(h != NULL, "MEMSTUB_REC_HELPER is not set (run the tests with ctest)");
  return h;
}

/* memstub record OPTS... -o t.csv -- rec_helper runs cnt log DURATIONS... in
 * dir, into *r: its exit status must be status and the runs' log (R
 * recorded, T timing regions, N neither) log; the trace it left. */
static memstub_trace *recorded(const char *dir, const char *opts, const char *durations,
                               int status, const char *log, tu_run *r) {
  char *argv[32], buf[512], dbuf[256], path[4096];
  int n = 0;
  argv[n++] = getenv("MEMSTUB_EXE");
  argv[n++] = "record";
  snprintf(buf, sizeof buf, "%s", opts);
  for (char *w = strtok(buf, " "); w; w = strtok(NULL, " ")) argv[n++] = w;
  char *rest[] = {"-o", "t.csv", "--", helper(), "runs", "cnt", "log"};
  for (size_t i = 0; i < sizeof rest / sizeof *rest; i++) argv[n++] = rest[i];
  snprintf(dbuf, sizeof dbuf, "%s", durations);
  for (char *w = strtok(dbuf, " "); w; w = strtok(NULL, " ")) argv[n++] = w;
  argv[n] = NULL;
  *r = tu_exec(dir, argv);
  ck_assert_msg(r->status == status, "%s: exit status %d: %s", opts, r->status, r->err);
  if (!log) return NULL;
  snprintf(path, sizeof path, "%s/log", dir);
  char *got = tu_read_file(path);
  ck_assert_msg(got && strcmp(got, log) == 0, "log %s, not %s", got ? got : "(none)", log);
  free(got);
  snprintf(path, sizeof path, "%s/t.csv", dir);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  return t;
}

static long long meta(const memstub_trace *t, const char *key) {
  const char *v = memstub_trace_get_meta(t, key);
  ck_assert_msg(v != NULL, "no %s", key);
  return strtoll(v, NULL, 10);
}

/* Three recordings of 450, 150 and 300 ms: the third is kept (it alone held
 * 3000 bytes), with its sites file; the others' traces and sites files are
 * gone. (150 ms apart: a loaded machine adds tens of ms to a recording's
 * start and end; 50 apart, it once kept another.) */
START_TEST(test_repeat_keeps_median) {
  char *dir = tu_mkdtemp();
  tu_run r;
  memstub_trace *t = recorded(dir, "--repeat 3 --sites --sites-every 16", "450 150 300", 0, "RRR", &r);
  ck_assert_msg(strstr(r.err, "--repeat 3: kept recording 3 (median duration"), "%s", r.err);
  ck_assert_msg(strstr(r.err, "allocated 2.9 KiB over the run"), "%s", r.err);  // its sites
  ck_assert_int_eq(meta(t, "record.peak_heap_bytes"), 3000);
  ck_assert_int_eq(meta(t, "repeat.recordings"), 3);
  ck_assert_int_eq(meta(t, "repeat.kept"), 3);
  long long d[3];
  const char *v = memstub_trace_get_meta(t, "repeat.durations_ns");
  ck_assert_ptr_nonnull(v);
  ck_assert_int_eq(sscanf(v, "%lld %lld %lld", &d[0], &d[1], &d[2]), 3);
  ck_assert(d[1] < d[2] && d[2] < d[0]);
  ck_assert_int_eq(d[2], t->pts[t->n - 1].time_ns - t->pts[0].time_ns);
  ck_assert(meta(t, "outside.wall_ns") >= 100000000);
  ck_assert(meta(t, "outside.cpu_ns") >= 0);
  // The kept recording's rows: their span, the CPU time in them (at most the process's).
  ck_assert_int_eq(meta(t, "recording.rows_wall_ns"), d[2]);
  ck_assert(meta(t, "recording.rows_cpu_ns") >= 0 &&
            meta(t, "recording.rows_cpu_ns") <= meta(t, "outside.cpu_ns"));
  ck_assert_ptr_null(memstub_trace_get_meta(t, "reference.wall_ns"));
  memstub_trace_free(t);
  // t.csv, t.csv.sites, cnt and log: nothing of the other recordings.
  ck_assert_int_eq(tu_count_entries(dir), 4);
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv.sites", dir);
  ck_assert(tu_exists(path));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* With --calls, the calls file beside the kept trace is the kept
 * recording's, not the last one's: recording 2 of 450, 300 and 150 ms is
 * kept (its 2000-byte block), and memstub gen finds its calls give every
 * row's heap (the last recording's 3000-byte block did not: "rows whose
 * heap_bytes the calls do not give"). */
START_TEST(test_repeat_keeps_its_calls) {
  char *dir = tu_mkdtemp();
  tu_run r;
  memstub_trace *t = recorded(dir, "--repeat 3 --calls", "450 300 150", 0, "RRR", &r);
  tu_run_free(&r);
  ck_assert_int_eq(meta(t, "repeat.kept"), 2);
  ck_assert_int_eq(meta(t, "record.peak_heap_bytes"), 2000);
  memstub_trace_free(t);
  // t.csv, t.csv.calls, cnt and log: nothing of the other recordings.
  ck_assert_int_eq(tu_count_entries(dir), 4);
  r = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "replayed call for call") &&
                    !strstr(r.err, "do not give") && !tu_warned(r.err),
                "gen: %d %s", r.status, r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Two recordings and two runs without the recorder, alternating (a run
 * without it first); their figures in the metadata, and memstub gen fits the
 * stub's timeline to them. */
START_TEST(test_reference) {
  char *dir = tu_mkdtemp();
  tu_run r;
  // rec_helper uses the probe API: its reference runs time the regions (none here).
  memstub_trace *t = recorded(dir, "--repeat 2 --reference 2", "30", 0, "TRTR", &r);
  ck_assert_msg(strstr(r.err, "--reference 2: "), "%s", r.err);
  ck_assert_ptr_null(memstub_trace_get_meta(t, "reference.region_wall_ns"));
  ck_assert_int_eq(meta(t, "reference.runs"), 2);
  long long w = meta(t, "reference.wall_ns"), lo, hi;
  ck_assert(w >= 30000000);
  ck_assert_int_eq(sscanf(memstub_trace_get_meta(t, "reference.wall_ns_range"), "%lld %lld", &lo,
                          &hi), 2);
  ck_assert(lo <= w && w <= hi);
  ck_assert(meta(t, "reference.cpu_ns") >= 0);
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "reference.cpu_ns_range"));
  ck_assert(meta(t, "outside.wall_ns") >= 30000000);
  ck_assert_int_eq(meta(t, "repeat.recordings"), 2);
  memstub_trace_free(t);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", "t.csv", "-o", "t.h", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "timeline: recorder's cost out, fitted to 2 reference runs"), "%s",
                r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Failures. A run without the recorder that fails: the trace, but no
 * reference (outside.* still), and exit status 1. A recording that fails
 * ends the repeat: its trace stays (run 2 held 2000 bytes), the earlier
 * ones' go. */
START_TEST(test_failures) {
  static const struct {
    const char *opts, *durations, *log, *said;
    int entries;  // t.csv, cnt, log
  } c[] = {
      {"--reference 1", "x 20", "TR", "reference run 1 of 1: ", 3},
      {"--repeat 3", "10 x 10", "RR", "recording 2 of 3 failed", 3},
  };
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    char *dir = tu_mkdtemp();
    tu_run r;
    memstub_trace *t = recorded(dir, c[i].opts, c[i].durations, 1, c[i].log, &r);
    ck_assert_msg(strstr(r.err, c[i].said), "%s", r.err);
    ck_assert_ptr_null(memstub_trace_get_meta(t, "reference.wall_ns"));
    ck_assert_int_eq(meta(t, "record.peak_heap_bytes"), 2000);
    if (i == 0) ck_assert(meta(t, "outside.wall_ns") >= 20000000);
    memstub_trace_free(t);
    ck_assert_int_eq(tu_count_entries(dir), c[i].entries);
    tu_run_free(&r);
    tu_rmtree(dir);
    free(dir);
  }
}
END_TEST

START_TEST(test_usage) {
  char *dir = tu_mkdtemp();
  static const char *const bad[] = {"--repeat 0", "--reference 0", "--repeat 2 --follow-children",
                                    "--reference 1 --follow-children"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    tu_run r;
    recorded(dir, bad[i], "1", 2, NULL, &r);
    tu_run_free(&r);
  }
  ck_assert_int_eq(tu_count_entries(dir), 0);
  // A trace at a symbolic link: the recordings are moved by name.
  char link[4096];
  snprintf(link, sizeof link, "%s/t.csv", dir);
  ck_assert_int_eq(symlink("elsewhere.csv", link), 0);
  tu_run r;
  recorded(dir, "--repeat 2", "1", 2, NULL, &r);
  ck_assert_msg(strstr(r.err, "is a symbolic link"), "%s", r.err);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 1);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *record_repeat_suite(void) {
  Suite *s = suite_create("record_repeat");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_repeat_keeps_median);
  tcase_add_test(tc, test_repeat_keeps_its_calls);
  tcase_add_test(tc, test_reference);
  tcase_add_test(tc, test_failures);
  tcase_add_test(tc, test_usage);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(record_repeat_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
