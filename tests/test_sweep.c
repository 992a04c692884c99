// memstub sweep (issue 33 item 2): a two-point sweep end to end with the
// tiny host tests/sweep/host.c (a stub embedded with memstub_add_stub(...
// DATA)): the table's rows, the host's metric lines, the summary's medians;
// and bad input (a scale list with a bad number, an unknown option, a host
// that fails, a bad metric line, a DIR that cannot be written or is not
// empty), each a clear error with nothing written; on many machines
// (item 3), the job list run by GNU parallel on this host and --collect
// (two directories' results equal to one's, and bad input refused).
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char *path_in(const char *dir, const char *name) {
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

static int have_gnuplot(void) {
  char *argv[] = {"gnuplot", "--version", NULL};
  tu_run r = tu_exec(NULL, argv);
  int ok = r.status == 0;
  tu_run_free(&r);
  return ok;
}

/* memstub sweep resident.csv --stub data_stub -o out [extra...] -- HOST
 * [host_arg]: extra ends with NULL (at most 8). */
static tu_run sweep(const char *out, const char *host_arg, const char *const *extra) {
  const char *argv[32];
  size_t n = 0;
  argv[n++] = getenv("MEMSTUB_EXE");
  argv[n++] = "sweep";
  argv[n++] = tu_src("tests/fixtures/whatif/resident.csv");
  argv[n++] = "--stub";
  argv[n++] = "data_stub";
  argv[n++] = "-o";
  argv[n++] = out;
  for (size_t i = 0; extra && extra[i]; i++) argv[n++] = extra[i];
  argv[n++] = "--";
  argv[n++] = getenv("MEMSTUB_SWEEP_HOST");
  if (host_arg) argv[n++] = host_arg;
  argv[n] = NULL;
  ck_assert_ptr_nonnull(argv[n - 1 - (host_arg != NULL)]);
  return tu_exec(NULL, (char *const *)argv);
}

// Field i (from 0) of a CSV line into buf.
static const char *field(const char *line, int i, char *buf, size_t cap) {
  for (; i > 0; i--) line = strchr(line, ',') + 1;
  size_t len = strcspn(line, ",\n");
  snprintf(buf, cap, "%.*s", (int)len, line);
  return buf;
}

START_TEST(test_two_points) {
  char *dir = tu_mkdtemp(), *out = path_in(dir, "sweep");
  int plots = have_gnuplot();
  const char *extra[] = {"--heap-scale", "1,0.5", "--repeat", "3", plots ? NULL : "--no-plots", NULL};
  tu_run r = sweep(out, NULL, extra);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "2 points x 3 repeats = 6 runs"), "%s", r.err);
  char *csv_path = path_in(out, "results.csv"), *csv = tu_read_file(csv_path);
  ck_assert_ptr_nonnull(csv);
  const char *header =
      "point,time_scale,heap_scale,stack_scale,rss_scale,mapped_scale,cpu_scale,churn_scale,"
      "repeat,order,host,profile,jobs,wall_ns,cpu_ns,user_ns,sys_ns,minor_faults,major_faults,"
      "peak_rss_anon_bytes,metric.stub_peak_heap,metric.calls,rss_polls\n";
  ck_assert_int_eq(strncmp(csv, header, strlen(header)), 0);
  // Six rows, the points' order rotated at every repeat: 0 1, 1 0, 0 1.
  static const char *const want_point[] = {"0", "1", "1", "0", "0", "1"};
  struct utsname u;
  ck_assert_int_eq(uname(&u), 0);
  long long peak_anon[2] = {0, 0};
  const char *line = csv + strlen(header);
  char b[64], rep[8];
  for (int i = 0; i < 6; i++) {
    ck_assert_msg(*line, "row %d missing:\n%s", i, csv);
    ck_assert_str_eq(field(line, 0, b, sizeof b), want_point[i]);
    int p = atoi(b);
    ck_assert_str_eq(field(line, 2, b, sizeof b), p ? "0.5" : "1");  // heap_scale
    ck_assert_str_eq(field(line, 4, b, sizeof b), p ? "0.5" : "1");  // rss follows it
    snprintf(rep, sizeof rep, "%d", i / 2 + 1);
    ck_assert_str_eq(field(line, 8, b, sizeof b), rep);
    snprintf(rep, sizeof rep, "%d", i + 1);
    ck_assert_str_eq(field(line, 9, b, sizeof b), rep);
    ck_assert_str_eq(field(line, 10, b, sizeof b), u.nodename);
    ck_assert_str_eq(field(line, 11, b, sizeof b), "");  // no profile
    ck_assert_str_eq(field(line, 12, b, sizeof b), "1");
    ck_assert_int_gt(atoll(field(line, 13, b, sizeof b)), 300000000);  // a 400 ms trace
    // The host's metric lines: the stub it replayed is the point's.
    ck_assert_str_eq(field(line, 20, b, sizeof b), p ? "4194304" : "8388608");
    ck_assert_str_eq(field(line, 21, b, sizeof b), "1");
    long long anon = atoll(field(line, 19, b, sizeof b));
    if (!peak_anon[p] || anon < peak_anon[p]) peak_anon[p] = anon;
    ck_assert_int_gt(atoll(field(line, 22, b, sizeof b)), 0);  // RssAnon polled
    line = strchr(line, '\n') + 1;
  }
  ck_assert_str_eq(line, "");
#if !defined(MEMSTUB_SANITIZED)
  // The peak RssAnon follows the heap: 8 MiB of it at 1, 4 MiB at 0.5.
  ck_assert_msg(peak_anon[0] >= 8388608 && peak_anon[1] < peak_anon[0] - 3 * 1048576,
                "peak RssAnon %lld at 1, %lld at 0.5", peak_anon[0], peak_anon[1]);
#endif
  // The summary: a section per figure, the median per point.
  char *txt_path = path_in(out, "summary.txt"), *txt = tu_read_file(txt_path);
  ck_assert_ptr_nonnull(txt);
  ck_assert_msg(strstr(txt, "2 points x 3 repeats = 6 runs, one at a time (times comparable)"), "%s", txt);
  const char *sec = strstr(txt, "\nmetric.stub_peak_heap\n");
  ck_assert_msg(sec, "%s", txt);
  ck_assert_msg(strstr(sec, "\n    0       1   3    8,388,608    8,388,608    8,388,608     0.0 %    +0.0 %\n"
                            "    1     0.5   3    4,194,304    4,194,304    4,194,304     0.0 %   -50.0 %\n"),
                "%s", sec);
  ck_assert_msg(strstr(r.out, "\nmetric.stub_peak_heap\n"), "stdout: %s", r.out);
  char *md_path = path_in(out, "summary.md"), *md = tu_read_file(md_path);
  ck_assert_msg(md && strstr(md, "## metric.calls\n"), "%s", md);
  ck_assert_msg(strstr(md, "| 1 | 0.5 | 3 | 4,194,304 | 4,194,304 | 4,194,304 | 0.0 % | -50.0 % |"), "%s", md);
  char *json_path = path_in(out, "results.json"), *json = tu_read_file(json_path);
  ck_assert_msg(json && strstr(json, "\"times_comparable\": true") &&
                    strstr(json, "\"variable\": \"MEMSTUB_DATA_data_stub\"") &&
                    strstr(json, "{\"point\": 1, \"figure\": \"metric.stub_peak_heap\", \"n\": 3, "
                                 "\"median\": 4194304,"),
                "%s", json);
  // The points' data files, the plots when gnuplot is there, and nothing else.
  char *data = path_in(out, "data");
  ck_assert_int_eq(tu_count_entries(data), 2);
  int plotted = 0;
  if (plots) {
    char *png = path_in(out, "plot-peak_rss_anon_bytes-heap.png");
    ck_assert(tu_exists(png));
    free(png);
    plotted = 6;  // wall, cpu, minor faults, peak RssAnon, two metrics: against heap
  }
  ck_assert_int_eq(tu_count_entries(out), 5 + plotted);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir), free(out), free(csv_path), free(csv), free(txt_path), free(txt), free(md_path);
  free(md), free(json_path), free(json), free(data);
}
END_TEST

// The run fails with status 2, its message holding want, and out is as before.
static void assert_refused(const char *out, const char *host_arg, const char *const *extra,
                           const char *want, int out_existed) {
  tu_run r = sweep(out, host_arg, extra);
  ck_assert_msg(r.status == 2, "status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, want), "expected '%s' in: %s", want, r.err);
  ck_assert_str_eq(r.out, "");
  if (out_existed)
    ck_assert_int_eq(tu_count_entries(out), 0);
  else
    ck_assert(!tu_exists(out));
  tu_run_free(&r);
}

START_TEST(test_bad_input) {
  char *dir = tu_mkdtemp(), *out = path_in(dir, "sweep");
  const char *bad_number[] = {"--heap-scale", "1,0.x", NULL};
  assert_refused(out, NULL, bad_number, "--heap-scale: '0.x' in '1,0.x' is not a scale", 0);
  const char *unknown[] = {"--frobnicate", "1", NULL};
  assert_refused(out, NULL, unknown, "unknown option '--frobnicate'", 0);
  const char *quick[] = {"--time-scale", "0.1", "--repeat", "1", "--no-plots", NULL};
  assert_refused(out, "--fail", quick,
                 "run 1 of 2 (point 0: baseline; repeat 1): the host ('", 0);
  assert_refused(out, "--fail", quick, "failed: exit status 3; its stderr ends:\nsweep_host: "
                 "failing as asked", 0);
  // Its line number depends on what else the host printed (a sanitizer's lines: 5, not 4).
  assert_refused(out, "--bad-metric", quick, ": 'metric broken': expected 'metric NAME VALUE'", 0);
  assert_refused(out, "--bad-metric", quick, "(point 0: baseline; repeat 1): stderr line ", 0);
  // An empty DIR given: left empty.
  ck_assert_int_eq(mkdir(out, 0777), 0);
  assert_refused(out, "--fail", quick, "failed: exit status 3", 1);
  // DIR not writable: under a file; not empty: refused before any run.
  char *file = path_in(dir, "file"), *under = path_in(file, "sweep");
  tu_write_file(file, "x\n");
  assert_refused(under, NULL, quick, "/file/sweep: cannot create the directory: Not a directory", 0);
  char *kept = path_in(out, "kept");
  tu_write_file(kept, "x\n");
  tu_run r = sweep(out, NULL, quick);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "sweep: not empty: a sweep writes into a new or empty directory"), "%s", r.err);
  ck_assert_int_eq(tu_count_entries(out), 1);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir), free(out), free(file), free(under), free(kept);
}
END_TEST

// -j N: several at a time, and every output says so.
START_TEST(test_jobs_said) {
  char *dir = tu_mkdtemp(), *out = path_in(dir, "sweep");
  const char *extra[] = {"--heap-scale", "1,0.5", "--time-scale", "0.25", "--repeat", "1", "-j",
                         "2", "--no-plots", NULL};
  tu_run r = sweep(out, NULL, extra);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.out, "3 points x 1 repeat = 3 runs, 2 at a time (-j 2: a memory-only "
                              "study, times not comparable)"), "%s", r.out);
  char *json_path = path_in(out, "results.json"), *json = tu_read_file(json_path);
  ck_assert_msg(json && strstr(json, "\"jobs\": 2,\n  \"times_comparable\": false"), "%s", json);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir), free(out), free(json_path), free(json);
}
END_TEST

/* A metric is written as the host printed it (h3's find): 895.238 in the
 * table and the JSON, not %.17g's 895.23800000000006. */
START_TEST(test_metric_digits) {
  char *dir = tu_mkdtemp(), *out = path_in(dir, "sweep");
  const char *extra[] = {"--repeat", "1", "--no-plots", NULL};
  tu_run r = sweep(out, "--frac", extra);
  ck_assert_msg(r.status == 0, "%s", r.err);
  const char *names[] = {"results.csv", "results.json"};
  for (int k = 0; k < 2; k++) {
    char *p = path_in(out, names[k]), *text = tu_read_file(p);
    ck_assert_msg(text && strstr(text, "895.238") && !strstr(text, "895.2380"), "%s: %s", names[k],
                  text ? text : "(none)");
    free(p), free(text);
  }
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir), free(out);
}
END_TEST

/* A trace recorded with --calls: the points replay by size class, and the
 * sweep says the calls were left out rather than passing them over. */
START_TEST(test_calls_said) {
  char *dir = tu_mkdtemp(), *trace = path_in(dir, "c.csv"), *out = path_in(dir, "sweep");
  char *text = tu_read_file(tu_src("tests/fixtures/whatif/resident.csv"));
  ck_assert_ptr_nonnull(text);
  const char *rest = strchr(text, '\n') + 1, *head = "# memstub-trace 1\n# calls.file: c.csv.calls\n";
  char *with = malloc(strlen(head) + strlen(rest) + 1);
  ck_assert_ptr_nonnull(with);
  strcat(strcpy(with, head), rest);
  tu_write_file(trace, with);
  char *argv[] = {getenv("MEMSTUB_EXE"), "sweep", trace, "--stub", "data_stub", "-o", out,
                  "--repeat", "1", "--no-plots", "--", getenv("MEMSTUB_SWEEP_HOST"), NULL};
  tu_run r = tu_exec(NULL, argv);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "c.csv.calls: left out: the points' data files replay by size "
                              "class"), "%s", r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir), free(trace), free(out), free(text), free(with);
}
END_TEST

// --calibration: the data files compensated, and the profile's identity in every row.
START_TEST(test_profile_identity) {
  char *dir = tu_mkdtemp(), *out = path_in(dir, "sweep"), *prof = path_in(dir, "host.profile");
  tu_run r = tu_memstub(NULL, "calibrate", "--quick", "-o", prof, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  const char *extra[] = {"--heap-scale", "0.5", "--time-scale", "0.25", "--repeat", "1",
                         "--calibration", prof, "--no-plots", NULL};
  r = sweep(out, NULL, extra);
  ck_assert_msg(r.status == 0, "%s", r.err);
  char *csv_path = path_in(out, "results.csv"), *csv = tu_read_file(csv_path), b[64], id[64] = "";
  const char *line = strchr(csv, '\n') + 1;
  for (int i = 0; i < 2; i++, line = strchr(line, '\n') + 1) {
    field(line, 11, b, sizeof b);
    ck_assert_uint_eq(strlen(b), 16);
    ck_assert_uint_eq(strspn(b, "0123456789abcdef"), 16);
    if (i) ck_assert_str_eq(b, id);
    snprintf(id, sizeof id, "%s", b);
  }
  char *json_path = path_in(out, "results.json"), *json = tu_read_file(json_path), *want = NULL;
  ck_assert(asprintf(&want, "\"profile\": {\"path\": \"%s\", \"id\": \"%s\"}", prof, id) > 0);
  ck_assert_msg(strstr(json, want), "%s", json);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir), free(out), free(prof), free(csv_path), free(csv), free(json_path), free(json), free(want);
}
END_TEST

// SIGTERM midway: passed on to the host, nothing left, memstub dies of it.
START_TEST(test_stopped) {
  char *dir = tu_mkdtemp(), *out = path_in(dir, "sweep");
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1), dup2(null, 2);
    execl(getenv("MEMSTUB_EXE"), "memstub", "sweep", tu_src("tests/fixtures/whatif/resident.csv"),
          "--stub", "data_stub", "--heap-scale", "1,0.5", "--repeat", "5", "--no-plots", "-o", out,
          "--", getenv("MEMSTUB_SWEEP_HOST"), (char *)NULL);
    _exit(127);
  }
  usleep(500000);  // 10 runs of 400 ms: well before the end
  kill(pid, SIGTERM);
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
  ck_assert(!tu_exists(out));
  tu_rmtree(dir);
  free(dir), free(out);
}
END_TEST


/* ---- on many machines: the job list, and --collect (issue 33 item 3) ---- */

// `sh -c CMD` in cwd, which must succeed.
static void shell_ok(const char *cwd, const char *cmd) {
  char *argv[] = {"sh", "-c", (char *)cmd, NULL};
  tu_run r = tu_exec(cwd, argv);
  ck_assert_msg(r.status == 0, "%s: status %d: %s", cmd, r.status, r.err);
  tu_run_free(&r);
}

/* In cwd: memstub sweep --job-list jobs -o d, 3 points (time 0.25; heap 1,
 * 0.5, the baseline) x 2 repeats = 6 runs, the host given as it is. */
static void make_job_list(const char *cwd) {
  tu_run r = tu_memstub(cwd, "sweep", tu_src("tests/fixtures/whatif/resident.csv"), "--stub",
                        "data_stub", "--heap-scale", "1,0.5", "--time-scale", "0.25", "--repeat",
                        "2", "--job-list", "jobs", "-o", "d", "--", getenv("MEMSTUB_SWEEP_HOST"),
                        NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "6 runs (3 points x 2 repeats) in jobs, for GNU parallel"), "%s", r.err);
  ck_assert_str_eq(r.out, "");
  tu_run_free(&r);
}

// memstub sweep --collect DIRS... -o OUT --no-plots in cwd (dirs: at most 4, NULL-ended).
static tu_run collect(const char *cwd, const char *const *dirs, const char *out) {
  const char *argv[16];
  size_t n = 0;
  argv[n++] = getenv("MEMSTUB_EXE");
  argv[n++] = "sweep";
  argv[n++] = "--collect";
  for (size_t i = 0; dirs[i]; i++) argv[n++] = dirs[i];
  argv[n++] = "-o";
  argv[n++] = out;
  argv[n++] = "--no-plots";
  argv[n] = NULL;
  return tu_exec(cwd, (char *const *)argv);
}

static int have_parallel(void) {
  char *argv[] = {"parallel", "--version", NULL};
  tu_run r = tu_exec(NULL, argv);
  int ok = r.status == 0 && strstr(r.out, "GNU parallel") != NULL;
  tu_run_free(&r);
  return ok;
}

// The job list, one line per run in the sweep's order, run by GNU parallel on this host.
START_TEST(test_job_list_parallel) {
  if (!have_parallel()) {
    printf("test_sweep: test_job_list_parallel skipped: GNU parallel is not installed "
           "(Debian: apt-get install parallel)\n");
    return;
  }
  char *dir = tu_mkdtemp();
  make_job_list(dir);
  char *jobs_path = path_in(dir, "jobs"), *jobs = tu_read_file(jobs_path);
  ck_assert_ptr_nonnull(jobs);
  const char *line = jobs;
  for (int i = 1; i <= 6; i++) {
    char want[64];
    snprintf(want, sizeof want, "' sweep --run-one 'd' %d\n", i);
    const char *nl = strchr(line, '\n');
    ck_assert_msg(nl && strncmp(nl + 1 - strlen(want), want, strlen(want)) == 0, "line %d: %s", i, jobs);
    line = nl + 1;
  }
  ck_assert_str_eq(line, "");
  // The local host through the same path as remote ones (--sshlogin :), two at a time:
  // runs of a -j 1 list wait for each other on a machine.
  shell_ok(dir, "parallel --sshlogin 2/: --halt now,fail=1 < jobs");
  char *results = path_in(dir, "d/results");
  ck_assert_int_eq(tu_count_entries(results), 6);
  struct utsname u;
  ck_assert_int_eq(uname(&u), 0);
  char *r3_path = path_in(results, "r3.run"), *r3 = tu_read_file(r3_path), host[300];
  snprintf(host, sizeof host, "\nhost\t%s\nprofile\t\n", u.nodename);
  ck_assert_msg(r3 && strncmp(r3, "memstub sweep run 1\norder\t3\npoint\t2\nrepeat\t1\n", 43) == 0 &&
                strstr(r3, host) && strstr(r3, "\nmetric\tstub_peak_heap\t4194304\n"), "%s", r3);
  // Collected: the table a sweep writes, the runs in the sweep's order.
  const char *dirs[] = {"d", NULL};
  tu_run r = collect(dir, dirs, "out");
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.out, "3 points x 2 repeats = 6 runs, one at a time (times comparable)"), "%s", r.out);
  char *csv_path = path_in(dir, "out/results.csv"), *csv = tu_read_file(csv_path), b[300];
  ck_assert_ptr_nonnull(csv);
  static const char *const want_point[] = {"0", "1", "2", "1", "2", "0"};
  line = strchr(csv, '\n') + 1;
  for (int i = 0; i < 6; i++, line = strchr(line, '\n') + 1) {
    ck_assert_msg(*line, "row %d missing:\n%s", i, csv);
    ck_assert_str_eq(field(line, 0, b, sizeof b), want_point[i]);
    ck_assert_str_eq(field(line, 10, b, sizeof b), u.nodename);
    ck_assert_str_eq(field(line, 20, b, sizeof b), strcmp(want_point[i], "2") ? "8388608" : "4194304");
  }
  ck_assert_str_eq(line, "");
  char *txt_path = path_in(dir, "out/summary.txt"), *txt = tu_read_file(txt_path);
  ck_assert_msg(txt && strstr(txt, "\n    2     0.5   2    4,194,304    4,194,304    4,194,304     0.0 %   -50.0 %\n"),
                "%s", txt);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir), free(jobs_path), free(jobs), free(results), free(r3_path), free(r3), free(csv_path);
  free(csv), free(txt_path), free(txt);
}
END_TEST

// The files a collect wrote into a and b are the same.
static void assert_same_outputs(const char *cwd, const char *a, const char *b) {
  static const char *const files[] = {"results.csv", "results.json", "summary.txt", "summary.md",
                                      "data/p2.msd"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char *pa = NULL, *pb = NULL;
    ck_assert(asprintf(&pa, "%s/%s/%s", cwd, a, files[i]) > 0 && asprintf(&pb, "%s/%s/%s", cwd, b, files[i]) > 0);
    size_t la = 0, lb = 0;
    char *ta = tu_read_file_len(pa, &la), *tb = tu_read_file_len(pb, &lb);
    ck_assert_msg(ta && tb && la == lb && memcmp(ta, tb, la) == 0, "%s and %s differ", pa, pb);
    free(pa), free(pb), free(ta), free(tb);
  }
}

// A collect refused: status 2, its message holding want, no OUT.
static void assert_collect_refused(const char *cwd, const char *const *dirs, const char *want) {
  tu_run r = collect(cwd, dirs, "bad");
  ck_assert_msg(r.status == 2, "status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, want), "expected '%s' in: %s", want, r.err);
  char *bad = path_in(cwd, "bad");
  ck_assert(!tu_exists(bad));
  free(bad);
  tu_run_free(&r);
}

/* The line of path starting with key replaced by line (key and all), or the
 * file cut after its first keep lines (line NULL). */
static void edit(const char *cwd, const char *rel, const char *key, const char *line, int keep) {
  char *path = path_in(cwd, rel), *text = tu_read_file(path);
  ck_assert_ptr_nonnull(text);
  char *out = calloc(1, strlen(text) + 256), *at = text;
  ck_assert_ptr_nonnull(out);
  for (int n = 0; *at; n++) {
    char *nl = strchr(at, '\n');
    size_t len = (size_t)(nl - at) + 1;
    if (!line && n == keep) break;
    if (line && strncmp(at, key, strlen(key)) == 0 && strchr("\t\n", at[strlen(key)]))
      strcat(strcat(out, line), "\n");
    else
      strncat(out, at, len);
    at += len;
  }
  tu_write_file(path, out);
  free(path), free(text), free(out);
}

// Results of two directories (machines) collected = those of one over both; and bad input.
START_TEST(test_collect) {
  char *dir = tu_mkdtemp();
  make_job_list(dir);
  // The job list is a shell script too: run here one line after another.
  shell_ok(dir, "sh jobs && cp -r d a && cp -r d b && rm a/results/r2.run a/results/r4.run "
                "a/results/r6.run b/results/r1.run b/results/r3.run b/results/r5.run");
  const char *one[] = {"d", NULL}, *two[] = {"a", "b", NULL}, *back[] = {"b", "a", NULL};
  tu_run r = collect(dir, one, "all");
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run r2 = collect(dir, two, "two");
  ck_assert_msg(r2.status == 0, "%s", r2.err);
  ck_assert_str_eq(r2.out, r.out);
  tu_run_free(&r2);
  assert_same_outputs(dir, "all", "two");
  r2 = collect(dir, back, "back");
  ck_assert_msg(r2.status == 0, "%s", r2.err);
  assert_same_outputs(dir, "all", "back");
  tu_run_free(&r2);
  // Half the runs: said on stderr and in the summary.
  const char *half[] = {"a", NULL};
  r2 = collect(dir, half, "half");
  ck_assert_msg(r2.status == 0, "%s", r2.err);
  ck_assert_msg(strstr(r2.err, "3 of the 6 runs missing, the first run 2"), "%s", r2.err);
  ck_assert_msg(strstr(r2.out, "= 6 runs, 3 collected (3 missing), one at a time"), "%s", r2.out);
  tu_run_free(&r2);
  // Bad input: nothing written, the file, line and field named.
  shell_ok(dir, "cp -r a c && cp -r b p && cp -r b s");
  edit(dir, "c/results/r3.run", "wall_ns", "wall_ns\t12x", 0);
  const char *damaged[] = {"c", NULL};
  assert_collect_refused(dir, damaged, "c/results/r3.run:7: field 2: '12x' is not wall_ns, a whole number");
  edit(dir, "c/results/r3.run", NULL, NULL, 5);
  assert_collect_refused(dir, damaged, "c/results/r3.run:6: cut short: expected a line 'profile'");
  shell_ok(dir, "cp a/results/r3.run c/results/r3.run");
  edit(dir, "c/results/r3.run", "point", "point\t1", 0);
  assert_collect_refused(dir, damaged, "c/results/r3.run:3: field 2: '1' is not point");
  const char *twice[] = {"d", "a", NULL};
  assert_collect_refused(dir, twice, "a/results/r1.run: run 1 again (it is d/results/r1.run too)");
  edit(dir, "p/sweep.plan", "profile", "profile\tother.profile\t0123456789abcdef", 0);
  const char *profiles[] = {"a", "p", NULL};
  assert_collect_refused(dir, profiles, "p/sweep.plan:5: the runs of p are of another calibration "
                         "profile than those of a: a summary never mixes hosts of different profiles");
  edit(dir, "s/sweep.plan", "repeat", "repeat\t3", 0);
  const char *other[] = {"a", "s", NULL};
  assert_collect_refused(dir, other, "s/sweep.plan:7: not the plan of a/sweep.plan");
  char *argv[] = {getenv("MEMSTUB_EXE"), "sweep", "--collect", "a", "-o", "bad", "--heap-scale", "1", NULL};
  tu_run u = tu_exec(dir, argv);
  ck_assert_msg(u.status == 2 && strstr(u.err, "--collect takes DIR... -o OUT [--no-plots], not --heap-scale"), "%s", u.err);
  tu_run_free(&u);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sweep");
  TCase *tc = tcase_create("sweep");
  tcase_set_timeout(tc, 300);  // calibrate --quick and 20 runs; slower under ASan
  tcase_add_test(tc, test_two_points);
  tcase_add_test(tc, test_bad_input);
  tcase_add_test(tc, test_jobs_said);
  tcase_add_test(tc, test_metric_digits);
  tcase_add_test(tc, test_calls_said);
  tcase_add_test(tc, test_stopped);
  tcase_add_test(tc, test_profile_identity);
  tcase_add_test(tc, test_job_list_parallel);
  tcase_add_test(tc, test_collect);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
