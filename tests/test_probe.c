// The probe API without the recorder: measuring points taken in-process.
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memstub/probe.h"
#include "memstub/trace.h"
#include "testutil.h"

// 512 bytes of stack per level. The empty asm makes the array escape: clang
// drops a volatile array that is only written through memset.
static __attribute__((noinline)) int down(int n) {
  char pad[512];
  memset(pad, n, sizeof pad);
  __asm__ volatile("" : : "r"(pad) : "memory");
  if (n == 0) return memstub_probe_point();
  int r = down(n - 1);
  __asm__ volatile("" : : "r"(pad) : "memory");
  return r;
}

static void *other_thread(void *arg) {
  (void)arg;
  return (void *)(intptr_t)memstub_probe_begin("elsewhere");
}

/* Each case runs in a forked child: the probe's state is per process. */
static int child_regions(const char *out) {
  if (memstub_probe_recording() != 0) return 10;
  if (memstub_probe_measure(NULL) != 0) return 9;  // asked in code, no file at exit
  if (memstub_probe_end() != -EINVAL) return 11;
  if (memstub_probe_point() != 0) return 12;  // no region: nothing measured
  for (int occ = 0; occ < 2; occ++) {
    if (memstub_probe_begin("outer") != 1) return 13;
    char *big = malloc(1 << 20);
    memset(big, 1, 1 << 20);
    __asm__ volatile("" : : "r"(big) : "memory");  // clang may elide an unused block
    if (memstub_probe_point() != 1) return 14;
    if (memstub_probe_begin("inner") != 2) return 15;
    if (down(10) != 2) return 16;
    if (memstub_probe_end() != 1) return 17;
    free(big);
    if (memstub_probe_end() != 0) return 18;
  }
  pthread_t th;
  void *res;
  pthread_create(&th, NULL, other_thread, NULL);
  pthread_join(th, &res);
  if ((intptr_t)res != -EPERM) return 19;
  memstub_error err;
  if (memstub_probe_write(out, &err) != 0) return 20;
  if (memstub_probe_write(out, &err) != -ENODATA) return 21;  // buffer emptied
  return 0;
}

START_TEST(test_standalone_points) {
  char *dir = tu_mkdtemp();
  char out[4096];
  snprintf(out, sizeof out, "%s/probe.csv", dir);
  pid_t p = fork();
  if (p == 0) _exit(child_regions(out));
  int st;
  waitpid(p, &st, 0);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed with %d", WEXITSTATUS(st));
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_trace_read(out, &t, &err) == 0, "%s", err.msg);
  // Per occurrence: begin, point, begin, point (deep), end, end.
  ck_assert_int_eq(t->n, 12);
  int col = memstub_trace_column(t, "region");
  ck_assert_int_ge(col, 0);
  ck_assert_int_eq(memstub_trace_extra_row(t, 0)[col], 1);
  ck_assert_int_eq(memstub_trace_extra_row(t, 11)[col], 2);
  ck_assert_int_eq(t->pts[0].time_ns, 0);
  ck_assert_int_eq(t->pts[0].stack_bytes, 0);  // from the begin's caller
  ck_assert_str_eq(memstub_trace_get_meta(t, "source"), "memstub-probe");
  // heap_bytes is the allocator's figure, and the trace says so.
  const char *hm = memstub_trace_get_meta(t, "heap_measure");
  ck_assert_msg(hm && strstr(hm, "mallinfo2") && strstr(hm, "not the bytes requested"), "%s",
                hm ? hm : "(none)");
  for (int occ = 0; occ < 2; occ++) {
    const memstub_point *q = t->pts + occ * 6;
    // The point 11 frames down is at least 11 * 512 bytes deeper.
    ck_assert_msg(q[3].stack_bytes >= q[1].stack_bytes + 11 * 512, "%lld vs %lld",
                  (long long)q[3].stack_bytes, (long long)q[1].stack_bytes);
    ck_assert(q[3].stack_bytes < 64 * 1024);
#ifndef MEMSTUB_SANITIZED
    // mallinfo2 sees the 1 MiB block (ASan's allocator is not glibc's).
    ck_assert_int_ge(q[1].heap_bytes - q[0].heap_bytes, 1 << 20);
    ck_assert_int_le(q[5].heap_bytes, q[1].heap_bytes - (1 << 20) + 4096);
#endif
  }
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* fn(arg) in a forked child without $MEMSTUB_PROBE_OUTPUT (out: with it),
 * in directory cwd (NULL: this one), ended by exit() so the probe's exit
 * handler runs; it must exit 0. */
static void in_child(int (*fn)(const char *), const char *arg, const char *out, const char *cwd) {
  pid_t p = fork();
  ck_assert_int_ge(p, 0);
  if (p == 0) {
    if (out) setenv("MEMSTUB_PROBE_OUTPUT", out, 1);
    else unsetenv("MEMSTUB_PROBE_OUTPUT");
    if (cwd && chdir(cwd) != 0) _exit(2);
    exit(fn(arg));
  }
  int st;
  waitpid(p, &st, 0);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed with %d", WEXITSTATUS(st));
}

static int child_atexit(const char *unused) {
  (void)unused;
  memstub_probe_begin(NULL);
  memstub_probe_point();
  memstub_probe_end();
  return 0;  // exit() writes to $MEMSTUB_PROBE_OUTPUT
}

START_TEST(test_written_at_exit) {
  char *dir = tu_mkdtemp();
  char out[4096];
  snprintf(out, sizeof out, "%s/atexit.csv", dir);
  in_child(child_atexit, NULL, out, NULL);
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_trace_read(out, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(t->n, 3);
  ck_assert_int_eq(tu_count_entries(dir), 1);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Without the recorder and not asked to measure: the calls count the
 * regions, and nothing is written anywhere (issue 30: every run wrote
 * memstub-probe-PID.csv into the current directory). */
static int child_not_asked(const char *unused) {
  (void)unused;
  for (int i = 0; i < 3; i++) {
    if (memstub_probe_begin("quiet") != 1) return 10;
    char *p = malloc(1000);
    __asm__ volatile("" : : "r"(p) : "memory");
    if (memstub_probe_point() != 1) return 11;
    free(p);
    if (memstub_probe_end() != 0) return 12;
  }
  if (memstub_probe_end() != -EINVAL) return 13;
  memstub_error err = {0};
  if (memstub_probe_write(NULL, &err) != -ENODATA) return 14;
  if (!strstr(err.msg, "MEMSTUB_PROBE_OUTPUT")) return 15;  // says how to ask
  return 0;  // exit() writes nothing
}

START_TEST(test_nothing_written_unless_asked) {
  char *dir = tu_mkdtemp();
  in_child(child_not_asked, NULL, NULL, dir);
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Asked in code with a file: written there at exit, time from the first
 * point taken (after regions that ran before the ask). */
static int child_measure_path(const char *out) {
  memstub_probe_begin("before");  // not measured: not asked yet
  memstub_probe_end();
  if (memstub_probe_measure(out) != 0) return 10;
  memstub_probe_begin("after");
  memstub_probe_point();
  memstub_probe_end();
  return 0;
}

START_TEST(test_measure_in_code) {
  char *dir = tu_mkdtemp();
  char out[4096];
  snprintf(out, sizeof out, "%s/m.csv", dir);
  in_child(child_measure_path, out, NULL, NULL);
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_trace_read(out, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(t->n, 3);
  ck_assert_int_eq(t->pts[0].time_ns, 0);
  ck_assert_int_eq(memstub_trace_extra_row(t, 0)[memstub_trace_column(t, "region")], 2);
  ck_assert_int_eq(tu_count_entries(dir), 1);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *probe_suite(void) {
  Suite *s = suite_create("probe");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_standalone_points);
  tcase_add_test(tc, test_written_at_exit);
  tcase_add_test(tc, test_nothing_written_unless_asked);
  tcase_add_test(tc, test_measure_in_code);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(probe_suite());
  srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
