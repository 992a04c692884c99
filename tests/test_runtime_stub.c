// memstub_add_stub: the library made from traces/samples/listing1.csv at
// build time (tests/CMakeLists.txt), called through its function entry point.
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"  // runtime/internal.h: ms__rt_replay_run
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "memstub/trace.h"
#include "prim.h"
#include "memstub_listing1_stub.h"
#include "memstub_nonlifo_stub.h"
#include "memstub_whatif_stub.h"
#include "test_replay_common.h"
#include "testutil.h"

START_TEST(test_entry_point) {
  ck_assert_int_eq(memstub_listing1_stub(), 0);
  const struct memstub_stub *s = memstub_listing1_stub_stub();
  ck_assert_int_eq(s->numdata, 4);
  ck_assert_str_eq(s->name, "listing1_stub");
  ck_assert_int_eq(s->use[1].heapAlloc, 200);
}
END_TEST

// The glibc malloc arenas of the process (malloc_info's heaps); -1 unknown.
static int arenas(void) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return -1;
  int rc = malloc_info(0, f);
  fclose(f);
  int n = 0;
  for (const char *p = buf; rc == 0 && (p = strstr(p, "<heap nr=")); p++) n++;
  free(buf);
  return rc == 0 ? n : -1;
}

/* A stub called from a host allocates from the caller's arena and tcache,
 * as its component did (issue 31 item 3): no second arena appears, as one
 * did when it replayed on a thread of its own. Here, in a process whose only
 * thread is this one, with malloc_info's list of arenas. The caller's
 * thread is left as it was: its timer slack, which the replay sets to 1 ns. */
START_TEST(test_entry_point_caller_arena) {
  ck_assert_int_eq(arenas(), 1);
  int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  ck_assert_int_eq(memstub_listing1_stub(), 0);
  ck_assert_int_eq(memstub_nonlifo_stub(), 0);
  ck_assert_msg(arenas() == 1, "%d malloc arenas after the calls, the caller's only expected",
                arenas());
  ck_assert_int_eq(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), slack);
}
END_TEST

/* memstub_add_stub(... HEAP_SCALE 0.5 TIME_SCALE 0.5): the what-if in the
 * stub, resident and mapped memory following the heap (issue 30). */
START_TEST(test_entry_point_whatif) {
  const struct memstub_stub *s = memstub_whatif_stub_stub();
  ck_assert_str_eq(s->transforms,
                   "time x0.5, heap x0.5, stack x1, rss x0.5, mapped x0.5, cpu x1, churn x1");
  ck_assert_int_eq(s->peak_heap, 4194304);
  ck_assert_int_eq(s->duration_ns, 200000000);
  ck_assert_int_eq(s->abi, MEMSTUB_STUB_ABI_RESIDENT);
  int64_t rss = 0, mapped = 0, mapped_peak = 0;
  for (int64_t i = 0; i < s->numdata; i++) {
    if (s->rss[i] > rss) rss = s->rss[i];
    mapped += s->mapped[i];
    if (mapped > mapped_peak) mapped_peak = mapped;
  }
  ck_assert_int_eq(rss, 4718592);
  ck_assert_int_eq(mapped_peak, 524288);
}
END_TEST

// Measured through the environment, the entry point's replay matches the trace.
START_TEST(test_entry_point_measured) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/replayed-%%n.csv", dir);
  setenv("MEMSTUB_MEASURE", path, 1);
  memstub_error err = {0};
  ck_assert_msg(memstub_listing1_stub_err(&err) == 0, "%s", err.msg);
  // The template names the file; the process's second call takes NAME.2.csv.
  ck_assert_msg(memstub_listing1_stub_err(&err) == 0, "%s", err.msg);
  unsetenv("MEMSTUB_MEASURE");
  ck_assert_int_eq(tu_count_entries(dir), 2);
  snprintf(path, sizeof path, "%s/replayed-listing1_stub.2.csv", dir);
  ck_assert(tu_exists(path));
  snprintf(path, sizeof path, "%s/replayed-listing1_stub.csv", dir);
  memstub_trace *orig = NULL, *rep = NULL;
  ck_assert_int_eq(memstub_trace_read(tu_src("traces/samples/listing1.csv"), &orig, &err), 0);
  ck_assert_msg(memstub_trace_read(path, &rep, &err) == 0, "%s", err.msg);
  rt_fit fit;
  rt_check_exact(orig, memstub_listing1_stub_stub(), rep, 1, &fit);
  ck_assert_str_eq(memstub_trace_get_meta(rep, "stub"), "listing1_stub");
  memstub_trace_free(orig);
  memstub_trace_free(rep);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The measurement in dir/name, read; its stub's name checked.
static memstub_trace *measured(const char *dir, const char *name, const char *stub) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  if (stub) ck_assert_str_eq(memstub_trace_get_meta(t, "stub"), stub);
  return t;
}

/* Two stubbed components in one program, MEMSTUB_MEASURE naming a plain file
 * (issue 30: it wrote m.csv.NAME.PID.CALL): the first measured call writes
 * exactly m.csv, the later ones m.2.csv, m.3.csv, each its own stub's replay. */
/* A stub called as a function counts its T0 from the call (runtime/call.c):
 * the setup before its first point (a DATA stub's file read and checked at
 * its first call, the checks, the records) takes the component's time, and
 * the online timing catches up on the waits after. Here T0 is put 50 ms
 * before the replay starts, as a slow setup would: the replay reports it
 * as its T0, its first point late by those 50 ms, and it still ends about
 * when its 200 ms of waits say, counted from T0. */
START_TEST(test_call_counts_from_its_start) {
  struct memAlloc use[10];
  int64_t point[10];
  for (int i = 0; i < 10; i++) use[i] = (struct memAlloc){20000000, 0, 0}, point[i] = i;
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI, .timing = MEMSTUB_TIMING_NONE, .name = "",
                           .numdata = 10, .use = use, .point = point, .norig = 10,
                           .duration_ns = 200000000, .source = "", .transforms = "",
                           .calibration = ""};
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.measure = MEMSTUB_MEASURE_TIME;
  memstub_replay *r = NULL;
  memstub_error err = {0};
  int64_t t0 = ms__prim_now_ns() - 50000000;
  ms__rt_start at = {t0, -1};
  ck_assert_msg(ms__rt_replay_run(&s, &o, &r, 1, &at, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(r->info.t0_ns, t0);
  ck_assert_msg(r->rec[0].end_ns >= 45000000, "the first point ended %lld ns after T0",
                (long long)r->rec[0].end_ns);
  ck_assert_msg(r->info.duration_ns < 200000000 + 45000000,
                "%lld ns from T0: the 50 ms before the replay were not caught up",
                (long long)r->info.duration_ns);
  memstub_replay_free(r);
}
END_TEST

/* A call's CPU counts from its start too: what the stub does of its own
 * before its first point (here 30 ms of CPU, as reading a large data file
 * and its checks would take) comes out of its work, so the call's CPU is
 * the component's 150 ms, not 180 (issue 31: the hash stub's 2.7 ms before
 * its first point kept it late to its end). */
START_TEST(test_call_cpu_counts_from_its_start) {
  static const char text[] =
      "# memstub-trace 1\n"
      "time_ns,stack_bytes,heap_bytes,cpu_ns\n"
      "0,0,0,0\n20000000,0,0,15000000\n40000000,0,0,30000000\n60000000,0,0,45000000\n"
      "80000000,0,0,60000000\n100000000,0,0,75000000\n120000000,0,0,90000000\n"
      "140000000,0,0,105000000\n160000000,0,0,120000000\n180000000,0,0,135000000\n"
      "200000000,0,0,150000000\n";
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_parse("t.csv", text, strlen(text), &t, &err) == 0, "%s", err.msg);
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  memstub_gen *g = NULL;
  ck_assert_msg(memstub_gen_build(t, &go, &g, &err) == 0, "%s", err.msg);
  ck_assert_ptr_nonnull(g->stub.cpu);
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  int64_t took[2];
  for (int given = 0; given < 2; given++) {
    ms__rt_start at = ms__rt_start_now();
    int64_t cpu0 = at.cpu_ns;
    ck_assert_int_ge(cpu0, 0);
    while (ms__prim_thread_cpu_ns() - cpu0 < 30000000) {
    }
    if (!given) at.cpu_ns = -1;  // the work counts from its first point: the 30 ms on top
    memstub_replay *r = NULL;
    ck_assert_msg(ms__rt_replay_run(&g->stub, &o, &r, 1, &at, &err) == 0, "%s", err.msg);
    took[given] = ms__prim_thread_cpu_ns() - cpu0;
    memstub_replay_free(r);
  }
  ck_assert_msg(took[0] >= 170000000, "without its start's CPU clock the call took %lld ns of "
                "CPU, not the 30 ms more", (long long)took[0]);
  // The 30 ms out, within half of it: the replay's own CPU (more under ASan
  // and load: 165.4 ms once in .ci/run) is in both calls.
  ck_assert_msg(took[1] >= 140000000 && took[1] <= took[0] - 15000000,
                "the call took %lld ns of CPU from its start (%lld without its start's CPU "
                "clock), the component 150 ms with the 30 ms before its first point",
                (long long)took[1], (long long)took[0]);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_two_stubs_one_program) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/m.csv", dir);
  setenv("MEMSTUB_MEASURE", path, 1);
  memstub_error err = {0};
  ck_assert_msg(memstub_listing1_stub_err(&err) == 0, "%s", err.msg);
  ck_assert_msg(memstub_nonlifo_stub_err(&err) == 0, "%s", err.msg);
  ck_assert_msg(memstub_listing1_stub_err(&err) == 0, "%s", err.msg);
  unsetenv("MEMSTUB_MEASURE");
  ck_assert_int_eq(tu_count_entries(dir), 3);
  static const char *const name[] = {"m.csv", "m.2.csv", "m.3.csv"};
  static const char *const stub[] = {"listing1_stub", "nonlifo_stub", "listing1_stub"};
  for (int i = 0; i < 3; i++) memstub_trace_free(measured(dir, name[i], stub[i]));
  // A template: the fields expanded as documented; no field: the name itself.
  char *out = NULL;
  ck_assert_int_eq(memstub_measure_path("/x/%n-%p-%c-%%.csv", "a/b", 42, 7, &out, &err), 0);
  ck_assert_str_eq(out, "/x/a_b-42-7-%.csv");
  free(out);
  ck_assert_int_eq(memstub_measure_path("/x/m.csv", NULL, 42, 7, &out, &err), 0);
  ck_assert_str_eq(out, "/x/m.csv");
  free(out);
  // A directory that is not there: refused before the replay, naming the file.
  snprintf(path, sizeof path, "%s/none/m.csv", dir);
  setenv("MEMSTUB_MEASURE", path, 1);
  ck_assert_int_eq(memstub_nonlifo_stub_err(&err), -ENOENT);
  unsetenv("MEMSTUB_MEASURE");
  ck_assert_msg(strstr(err.msg, "MEMSTUB_MEASURE: ") == err.msg && strstr(err.msg, "/none/m.csv: "),
                "%s", err.msg);
  ck_assert_int_eq(memstub_measure_path("/x/%q.csv", "s", 1, 1, &out, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "column 4") && strstr(err.msg, "%q"), "%s", err.msg);
  ck_assert_ptr_null(out);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A file an earlier run left at the name is replaced (the simple case writes
 * exactly the file named, as --measure does); one written since this process
 * started (another process beside it) is not: the next free number. */
START_TEST(test_measure_replaces_earlier_run) {
  char *dir = tu_mkdtemp();
  char path[4096], two[4096];
  snprintf(path, sizeof path, "%s/m.csv", dir);
  snprintf(two, sizeof two, "%s/m.2.csv", dir);
  tu_write_file(path, "an earlier run's\n");
  tu_write_file(two, "another process's, just now\n");
  struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};  // 2001: before this process
  ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
  setenv("MEMSTUB_MEASURE", path, 1);
  memstub_error err = {0};
  ck_assert_msg(memstub_listing1_stub_err(&err) == 0, "%s", err.msg);
  ck_assert_msg(memstub_nonlifo_stub_err(&err) == 0, "%s", err.msg);
  unsetenv("MEMSTUB_MEASURE");
  memstub_trace_free(measured(dir, "m.csv", "listing1_stub"));
  char *kept = tu_read_file(two);
  ck_assert_str_eq(kept, "another process's, just now\n");
  free(kept);
  memstub_trace_free(measured(dir, "m.3.csv", "nonlifo_stub"));
  ck_assert_int_eq(tu_count_entries(dir), 3);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Two processes started with the same environment at once, each calling the
 * same stub: two files, m.csv and m.2.csv, both complete (neither replaces
 * the other's, whichever ends first). */
START_TEST(test_two_processes) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/m.csv", dir);
  setenv("MEMSTUB_MEASURE", path, 1);
  int go[2];
  ck_assert_int_eq(pipe(go), 0);
  pid_t pid[2];
  for (int i = 0; i < 2; i++) {
    pid[i] = fork();
    ck_assert_int_ge(pid[i], 0);
    if (pid[i] == 0) {
      char c;
      close(go[1]);
      if (read(go[0], &c, 1) != 0) _exit(3);  // both start when the pipe closes
      _exit(memstub_listing1_stub() == 0 ? 0 : 1);
    }
  }
  unsetenv("MEMSTUB_MEASURE");
  close(go[0]);
  close(go[1]);
  for (int i = 0; i < 2; i++) {
    int st;
    ck_assert_int_eq(waitpid(pid[i], &st, 0), pid[i]);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status %d", i, st);
  }
  ck_assert_int_eq(tu_count_entries(dir), 2);
  memstub_trace *orig = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_read(tu_src("traces/samples/listing1.csv"), &orig, &err), 0);
  static const char *const name[] = {"m.csv", "m.2.csv"};
  for (int i = 0; i < 2; i++) {
    memstub_trace *rep = measured(dir, name[i], "listing1_stub");
    rt_fit fit;
    rt_check_exact(orig, memstub_listing1_stub_stub(), rep, 1, &fit);
    memstub_trace_free(rep);
  }
  memstub_trace_free(orig);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// A bad environment is an error, not a silent default.
START_TEST(test_entry_point_bad_env) {
  setenv("MEMSTUB_MARGIN_NS", "soon", 1);
  memstub_error err = {0};
  ck_assert_int_eq(memstub_listing1_stub_err(&err), -22);
  ck_assert_ptr_nonnull(strstr(err.msg, "MEMSTUB_MARGIN_NS"));
  ck_assert_int_eq(memstub_listing1_stub(), -22);
  unsetenv("MEMSTUB_MARGIN_NS");
}
END_TEST

/* A stub program (memstub gen, then memstub build) links the runtime alone:
 * its link line names no generator library, and nm finds no generator,
 * m4-emitter or compensation symbol in it, but the runtime's. Skipped when
 * nm cannot be run. */
START_TEST(test_stub_links_runtime_alone) {
  char *nmv[] = {"nm", "--version", NULL};
  tu_run r = tu_exec(NULL, nmv);
  int have_nm = r.status == 0;
  tu_run_free(&r);
  if (!have_nm) {
    fprintf(stderr, "test_stub_links_runtime_alone: nm cannot be run: skipped\n");
    return;
  }
  char *dir = tu_mkdtemp(), h[4096], prog[4096];
  snprintf(h, sizeof h, "%s/memuse.h", dir);
  snprintf(prog, sizeof prog, "%s/stub", dir);
  r = tu_memstub(NULL, "gen", tu_src("traces/samples/listing1.csv"), "-o", h, NULL);
  ck_assert_msg(r.status == 0, "gen: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "build", h, "-o", prog, "-v", NULL);
  ck_assert_msg(r.status == 0, "build: %s", r.err);
  const char *cmd = strstr(r.err, "libmemstub_runtime.a") ? r.err : r.out;
  ck_assert_msg(strstr(cmd, "libmemstub_runtime.a") != NULL, "no link line in: %s%s", r.out, r.err);
  ck_assert_msg(strstr(cmd, "libmemstub_gen") == NULL, "the generator is linked: %s", cmd);
  tu_run_free(&r);
  char *nmargv[] = {"nm", prog, NULL};
  r = tu_exec(NULL, nmargv);
  ck_assert_msg(r.status == 0, "nm: %s", r.err);
  static const char *const banned[] = {"memstub_gen_", "ms__gen_", "ms__emit", "compensate",
                                       "memuse_template", "ms__cal_"};
  int runtime = 0, check = 0;
  for (char *line = r.out; line && *line;) {
    char *end = strchr(line, '\n');
    if (end) *end = '\0';
    const char *name = strrchr(line, ' ');
    name = name ? name + 1 : line;
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
      ck_assert_msg(strstr(name, banned[i]) == NULL, "the stub holds %s", name);
    if (strcmp(name, "memstub_replay_run") == 0) runtime = 1;
    if (strcmp(name, "memstub_stub_check") == 0) check = 1;
    line = end ? end + 1 : NULL;
  }
  ck_assert_msg(runtime && check, "nm shows no runtime symbols:\n%.2000s", r.out);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_stub");
  TCase *tc = tcase_create("memstub_add_stub");
  tcase_add_test(tc, test_entry_point);
  tcase_add_test(tc, test_entry_point_whatif);
  tcase_add_test(tc, test_entry_point_caller_arena);
  tcase_add_test(tc, test_entry_point_measured);
  tcase_add_test(tc, test_entry_point_bad_env);
  tcase_add_test(tc, test_two_stubs_one_program);
  tcase_add_test(tc, test_call_counts_from_its_start);
  tcase_add_test(tc, test_call_cpu_counts_from_its_start);
  tcase_add_test(tc, test_measure_replaces_earlier_run);
  tcase_add_test(tc, test_two_processes);
  suite_add_tcase(s, tc);
  TCase *link = tcase_create("link");
  tcase_set_timeout(link, 120);
  tcase_add_test(link, test_stub_links_runtime_alone);
  suite_add_tcase(s, link);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
