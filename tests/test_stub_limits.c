/* A stub, and memstub replay, on a host that cannot give it what the trace
 * asks (issue 12 item 10): refused up front with the limit named, or stopped
 * with the point named, exit status 2; never killed mid-run with nothing said.
 * The limits are set with `sh -c 'ulimit ...; exec ...'` or setrlimit in a
 * forked child. Skipped under the sanitizers: ASan reserves terabytes of
 * address space, so no address-space limit leaves it room to start. */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memstub/runtime.h"
#include "memstub/trace.h"
#include "prim.h"
#include "testutil.h"

#define MB (1000 * 1000LL)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A trace in dir/name.csv: rows "time_ns,stack_bytes,heap_bytes", and its stub
 * program dir/name (memstub gen, memstub build) with no limit set. */
static void make_stub(const char *dir, const char *name, const char *rows) {
  char csv[4096], h[4096], prog[4096], text[4096];
  snprintf(csv, sizeof csv, "%s/%s.csv", dir, name);
  snprintf(h, sizeof h, "%s/%s.h", dir, name);
  snprintf(prog, sizeof prog, "%s/%s", dir, name);
  snprintf(text, sizeof text, "# memstub-trace 1\ntime_ns,stack_bytes,heap_bytes\n%s", rows);
  tu_write_file(csv, text);
  tu_run r = tu_memstub(NULL, "gen", csv, "-o", h, NULL);
  ck_assert_msg(r.status == 0, "gen: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "build", h, "-o", prog, NULL);
  ck_assert_msg(r.status == 0, "build: %s", r.err);
  tu_run_free(&r);
}

// Run `sh -c 'ulimit OPT KB; exec "$@"' sh ARGS...` (args end with NULL); *secs its duration.
static tu_run run_limited(const char *opt, long kb, double *secs, ...) {
  char script[256];
  snprintf(script, sizeof script, "ulimit %s %ld && exec \"$@\"", opt, kb);
  char *argv[16] = {"sh", "-c", script, "sh"};
  int n = 4;
  va_list ap;
  va_start(ap, secs);
  for (char *a; n < 15 && (a = va_arg(ap, char *));) argv[n++] = a;
  va_end(ap);
  argv[n] = NULL;
  double t0 = now_s();
  tu_run r = tu_exec(NULL, argv);
  *secs = now_s() - t0;
  return r;
}

/* 400 MB of heap after 10 s, under a 300 MB address-space or data limit:
 * the stub program and memstub replay refuse at once (not 10 s later), exit
 * 2, naming the limit and what the stub needs. */
START_TEST(test_heap_beyond_limit) {
#if defined(MEMSTUB_SANITIZED)
  fprintf(stderr, "test_heap_beyond_limit: skipped under the sanitizers\n");
  return;
#endif
  char *dir = tu_mkdtemp(), prog[4096], csv[4096];
  make_stub(dir, "big", "0,0,0\n10000000000,0,400000000\n10100000000,0,0\n");
  snprintf(prog, sizeof prog, "%s/big", dir);
  snprintf(csv, sizeof csv, "%s/big.csv", dir);
  static const struct {
    const char *opt, *res;
  } lim[] = {{"-v", "RLIMIT_AS"}, {"-d", "RLIMIT_DATA"}};
  for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
    for (int cli = 0; cli < 2; cli++) {
      double secs;
      tu_run r = cli ? run_limited(lim[i].opt, 300000, &secs, getenv("MEMSTUB_EXE"), "replay",
                                   csv, (char *)NULL)
                     : run_limited(lim[i].opt, 300000, &secs, prog, (char *)NULL);
      const char *who = cli ? "memstub replay" : "stub";
      ck_assert_msg(r.status == 2, "%s under ulimit %s: status %d: %s", who, lim[i].opt,
                    r.status, r.err);
      ck_assert_msg(strstr(r.err, lim[i].res) && strstr(r.err, "heap 400000016 at its peak"),
                    "%s under ulimit %s: %s", who, lim[i].opt, r.err);
      // Up front: long before the 10 s the trace waits before its heap.
      ck_assert_msg(secs < 8.0, "%s under ulimit %s: refused after %.1f s: %s", who,
                    lim[i].opt, secs, r.err);
      tu_run_free(&r);
    }
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* 50 MB of stack: under a 40 MB address-space limit the replay thread's stack
 * cannot be mapped, refused up front naming the limit; under `ulimit -s 1024`
 * (the main thread's stack only) it replays, its stack measured at 50 MB. */
START_TEST(test_stack_limits) {
#if defined(MEMSTUB_SANITIZED)
  fprintf(stderr, "test_stack_limits: skipped under the sanitizers\n");
  return;
#endif
  char *dir = tu_mkdtemp(), prog[4096], out[4096];
  make_stub(dir, "deep", "0,0,0\n1000000,50000000,0\n2000000,0,0\n");
  snprintf(prog, sizeof prog, "%s/deep", dir);
  snprintf(out, sizeof out, "%s/deep-replayed.csv", dir);
  double secs;
  tu_run r = run_limited("-v", 40000, &secs, prog, (char *)NULL);
  ck_assert_msg(r.status == 2, "status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "RLIMIT_AS") && strstr(r.err, "replay stack"), "%s", r.err);
  tu_run_free(&r);
  r = run_limited("-s", 1024, &secs, prog, "--measure", out, (char *)NULL);
  ck_assert_msg(r.status == 0, "under ulimit -s 1024: status %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(out, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(t->n, 3);
  ck_assert_msg(t->pts[1].stack_bytes >= 50 * MB, "stack measured %lld",
                (long long)t->pts[1].stack_bytes);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* ---- a failure the up-front check cannot see -------------------------------- */

static long long room_left;

// The first progress report: take all but 16 MB of the room the limit leaves,
// as another part of the program might while the stub waits.
static void eat_room(int64_t done, int64_t total, void *arg) {
  (void)done, (void)total, (void)arg;
  static int eaten;
  if (eaten++) return;
  uint64_t used, limit = ms__prim_mem_limit(MS__PRIM_LIMIT_AS, &used);
  long long room = (long long)(limit - used) - 16 * MB;
  if (room > 0 &&
      mmap(NULL, (size_t)room, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) !=
          MAP_FAILED)
    room_left = room;
}

/* Replay s in a child under an address-space limit that leaves room for it
 * and 100 MB more, while the first progress report takes all but 16 MB of
 * that room (eat_room): the replay's return code, the room taken and its
 * error message into buf ("RC TAKEN MESSAGE"). */
static void replay_short_of_room(const struct memstub_stub *s, char *buf, size_t cap) {
  int fd[2];
  ck_assert_int_eq(pipe(fd), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(fd[0]);
    uint64_t used;
    ms__prim_mem_limit(MS__PRIM_LIMIT_AS, &used);
    // Room for the stub (heap, stack, arena) and 100 MB more.
    struct rlimit rl = {.rlim_cur = used + 400 * MB, .rlim_max = RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(4);
    memstub_replay_options o;
    memstub_replay_options_init(&o);
    o.progress = eat_room;
    memstub_replay *r = NULL;
    memstub_error err = {0};
    int rc = memstub_replay_run(s, &o, &r, &err);
    char msg[sizeof err.msg + 64];
    int n = snprintf(msg, sizeof msg, "%d %lld %s", rc, room_left, err.msg);
    if (write(fd[1], msg, (size_t)n) != n) _exit(5);
    memstub_replay_free(r);
    _exit(0);
  }
  close(fd[1]);
  size_t len = 0;
  ssize_t k;
  while (len + 1 < cap && (k = read(fd[0], buf + len, cap - 1 - len)) > 0) len += (size_t)k;
  buf[len] = '\0';
  close(fd[0]);
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %d", st);
  int rc = 0;
  long long took = 0;
  ck_assert_int_eq(sscanf(buf, "%d %lld", &rc, &took), 2);
  ck_assert_msg(took > 0, "the test could not take the room: %s", buf);
  ck_assert_msg(rc == -ENOMEM, "%s", buf);
}

/* 200 MB of heap, of mapped memory, or resident beyond both, 2 s in; the
 * check passed under the limit; then the rest of the program takes the
 * address space: the replay stops at that point with -ENOMEM, the error
 * naming the point, its row of the trace, what could not be had (the heap
 * block, the mapping for mapped_bytes, the resident target) and the limit.
 * (A mapping that failed was "cannot resize the heap block to 0 bytes"; a
 * resident target that failed passed with exit 0, counted in metadata.) */
START_TEST(test_memory_fails_mid_run) {
#if defined(MEMSTUB_SANITIZED)
  fprintf(stderr, "test_memory_fails_mid_run: skipped under the sanitizers\n");
  return;
#endif
  static const int64_t point[] = {1, 2};
  static const struct memAlloc heap_use[] = {{2000000000, 0, 200 * MB}, {100000000, 0, -200 * MB}};
  static const struct memAlloc flat_use[] = {{2000000000, 0, 0}, {100000000, 0, 0}};
  static const int64_t none[] = {0, 0}, mapped[] = {200 * MB, -200 * MB}, rss[] = {200 * MB, 0};
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI, .name = "limits", .numdata = 2,
                           .use = heap_use, .point = point, .norig = 3,
                           .peak_heap = 200 * MB, .duration_ns = 2100000000};
  const char *want = "cannot resize the heap block to 200000000 bytes";
  if (_i > 0) {  // the resident layout, no heap
    s.abi = MEMSTUB_STUB_ABI_RESIDENT, s.use = flat_use, s.peak_heap = 0;
    s.mapped = _i == 1 ? mapped : none;
    s.rss = _i == 1 ? none : rss;
    s.rss_base = s.mapped_base = 1000;
    want = _i == 1 ? "cannot map 200000000 bytes of mapped memory (the stub's own mapping, for "
                     "mapped_bytes 200001000)"
                   : "cannot hold the resident target of 200000000 bytes (rss_bytes 200001000)";
  }
  char buf[2048] = "";
  replay_short_of_room(&s, buf, sizeof buf);
  ck_assert_msg(strstr(buf, "point 0 (row 1 of the trace") && strstr(buf, "stopped") &&
                    strstr(buf, want) && strstr(buf, "ulimit -v"),
                "want '%s': %s", want, buf);
}
END_TEST

int main(void) {
  Suite *s = suite_create("stub_limits");
  TCase *tc = tcase_create("limits");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_heap_beyond_limit);
  tcase_add_test(tc, test_stack_limits);
  tcase_add_loop_test(tc, test_memory_fails_mid_run, 0, 3);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
