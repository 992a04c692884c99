// The resident memory of a multi-thread stub is the process's, not the sum
// of its threads' (issue 29 item 2): tests/record/handoff.c, where one
// thread mallocs blocks and another writes and frees them, recorded with
// `--thread all`, generated and built, and run beside its original; each
// process's peak RssAnon is read from outside (/proc/PID/statm polled every
// millisecond, as bench/real/observe.c does) and the stub's must be within
// issue 29's goal of the original's: +-5 % + 2 MiB. The peak is a plateau
// of 300 ms, so a poll that comes late under load still sees it.
#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prim.h"
#include "testutil.h"

#define MiB (1024.0 * 1024.0)

static const char *prog(void) {
  const char *p = getenv("MEMSTUB_REC_HANDOFF");
  ck_assert_msg(p != NULL, "MEMSTUB_REC_HANDOFF is not set (run the tests with ctest)");
  return p;
}

/* Run argv (output to /dev/null) in dir and return its peak RssAnon, polled
 * every millisecond until it exits; the test fails when it does not exit 0. */
static int64_t peak_anon(const char *dir, char *const argv[]) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int nul = open("/dev/null", O_RDWR);
    if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0 || chdir(dir) < 0)
      _exit(126);
    execv(argv[0], argv);
    _exit(127);
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
  int fd = open(path, O_RDONLY);
  int64_t peak = 0;
  int st = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    ck_assert_int_ge(w, 0);
    int64_t v = fd >= 0 ? ms__prim_statm_anon(fd) : -1;  // a zombie's reads 0
    if (v > peak) peak = v;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (fd >= 0) close(fd);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", argv[0], st);
  return peak;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

START_TEST(test_writer_is_not_the_allocator) {
  char *dir = tu_mkdtemp();
  char *rec[] = {getenv("MEMSTUB_EXE"), "record", "-q", "--thread", "all", "-o", "h.csv",
                 "--", (char *)prog(), NULL};
  tu_run r = tu_exec(dir, rec);
  ck_assert_msg(r.status == 0, "record: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", "h.csv", "-o", "h.h", NULL);
  ck_assert_msg(r.status == 0, "gen: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "build", "h.h", "-o", "stub", NULL);
  ck_assert_msg(r.status == 0, "build: %s", r.err);
  tu_run_free(&r);
  char stub[4096];
  snprintf(stub, sizeof stub, "%s/stub", dir);
  char *orig_argv[] = {(char *)prog(), NULL}, *stub_argv[] = {stub, NULL};
  // Alternating, the median of three each.
  int64_t o[3], s[3];
  for (int k = 0; k < 3; k++) {
    o[k] = peak_anon(dir, orig_argv);
    s[k] = peak_anon(dir, stub_argv);
  }
  qsort(o, 3, sizeof *o, cmp64);
  qsort(s, 3, sizeof *s, cmp64);
  fprintf(stderr, "handoff: peak RssAnon original %.1f MiB, stub %.1f MiB\n", o[1] / MiB,
          s[1] / MiB);
  ck_assert_msg(o[1] >= 32 * MiB, "the original's peak %.1f MiB is not its 32 MiB of blocks",
                o[1] / MiB);
#if !defined(MEMSTUB_SANITIZED)  // (the stub's runtime under ASan: its allocator's own pages)
  ck_assert_msg(llabs(s[1] - o[1]) <= 0.05 * o[1] + 2 * MiB,
                "stub peak RssAnon %.1f MiB, original %.1f MiB: beyond +-5 %% + 2 MiB",
                s[1] / MiB, o[1] / MiB);
#endif
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("threads_resident");
  TCase *tc = tcase_create("all");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_writer_is_not_the_allocator);
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
