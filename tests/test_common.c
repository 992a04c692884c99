// common/: atomic output files, strict numbers, error messages and the spawn
// helper (running a child, waiting, capturing, timing out).
#include <check.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ms_common.h"
#include "prim.h"
#include "ms_spawn.h"
#include "testutil.h"

static char *path_in(const char *dir, const char *name) {
  char *p;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

/* ---- afile ------------------------------------------------------------ */

// A commit replaces the file whole; an abort leaves the old one and no temporary.
START_TEST(test_afile_commit_abort) {
  char *dir = tu_mkdtemp(), *p = path_in(dir, "out.txt");
  memstub_error err = {0};
  ms__afile af;
  ck_assert_int_eq(ms__afile_open(&af, p, &err), 0);
  fputs("first\n", af.f);
  ck_assert_int_eq(tu_count_entries(dir), 1);  // only the temporary file
  ck_assert(!tu_exists(p));
  ck_assert_int_eq(ms__afile_commit(&af, &err), 0);
  char *text = tu_read_file(p);
  ck_assert_str_eq(text, "first\n");
  free(text);
  ck_assert_int_eq(ms__afile_open(&af, p, &err), 0);
  fputs("second\n", af.f);
  ms__afile_abort(&af);
  text = tu_read_file(p);
  ck_assert_str_eq(text, "first\n");
  free(text);
  ck_assert_int_eq(tu_count_entries(dir), 1);
  // A directory cannot be replaced.
  ck_assert_int_eq(ms__afile_open(&af, dir, &err), -EISDIR);
  ck_assert_ptr_nonnull(strstr(err.msg, dir));
  tu_rmtree(dir);
  free(dir);
  free(p);
}
END_TEST

// ms__read_step for the test: seen[0] counts the steps, seen[1..] their totals.
static void record_step(void *arg, size_t done) {
  size_t *seen = arg;
  if (seen[0] < 7) seen[++seen[0]] = done;
}

START_TEST(test_read_file) {
  char *dir = tu_mkdtemp(), *p = path_in(dir, "in.txt");
  tu_write_file(p, "a,b\n");
  char *buf = NULL;
  size_t len = 0;
  memstub_error err = {0};
  ck_assert_int_eq(ms__read_file(p, &buf, &len, &err), 0);
  ck_assert_uint_eq(len, 4);
  ck_assert_str_eq(buf, "a,b\n");
  free(buf);
  char *missing = path_in(dir, "missing.txt");
  ck_assert_int_eq(ms__read_file(missing, &buf, &len, &err), -ENOENT);
  ck_assert_ptr_nonnull(strstr(err.msg, "missing.txt"));
  // In steps (the progress reader's): at most chunk bytes each, the total so far after each.
  tu_write_file(p, "0123456789");
  size_t seen[8] = {0};
  ck_assert_int_eq(ms__read_file_steps(p, 4, record_step, seen, &buf, &len, &err), 0);
  ck_assert_str_eq(buf, "0123456789");
  ck_assert_uint_eq(seen[0], 3);
  ck_assert_uint_eq(seen[1], 4);
  ck_assert_uint_eq(seen[2], 8);
  ck_assert_uint_eq(seen[3], 10);
  free(buf);
  ck_assert_int_eq(ms__read_file_steps(dir, 4, record_step, seen, &buf, &len, &err), -EISDIR);
  tu_rmtree(dir);
  free(dir);
  free(p);
  free(missing);
}
END_TEST

/* ---- numbers ---------------------------------------------------------- */

START_TEST(test_parse_i64) {
  int64_t v;
  ck_assert_int_eq(ms__parse_i64("42", 2, &v), 0);
  ck_assert_int_eq(v, 42);
  ck_assert_int_eq(ms__parse_i64("-9223372036854775808", 20, &v), 0);
  ck_assert(v == INT64_MIN);
  ck_assert_int_eq(ms__parse_i64("9223372036854775807", 19, &v), 0);
  ck_assert(v == INT64_MAX);
  ck_assert_int_eq(ms__parse_i64("9223372036854775808", 19, &v), -ERANGE);
  ck_assert_int_eq(ms__parse_i64(" 1", 2, &v), -EINVAL);
  ck_assert_int_eq(ms__parse_i64("1x", 2, &v), -EINVAL);
  ck_assert_int_eq(ms__parse_i64("", 0, &v), -EINVAL);
  ck_assert_int_eq(ms__parse_i64("-", 1, &v), -EINVAL);
  ck_assert_int_eq(ms__parse_i64("123", 2, &v), 0);  // only len bytes count
  ck_assert_int_eq(v, 12);
}
END_TEST

START_TEST(test_parse_double_and_ops) {
  double d;
  ck_assert_int_eq(ms__parse_double("0.7", &d), 0);
  ck_assert(d == 0.7);
  ck_assert_int_eq(ms__parse_double("1e3", &d), 0);
  ck_assert(d == 1000.0);
  ck_assert_int_eq(ms__parse_double("inf", &d), -EINVAL);
  ck_assert_int_eq(ms__parse_double("nan", &d), -EINVAL);
  ck_assert_int_eq(ms__parse_double(" 1", &d), -EINVAL);
  ck_assert_int_eq(ms__parse_double("1.5x", &d), -EINVAL);
  int64_t v;
  ck_assert_int_eq(ms__add_i64(INT64_MAX, 1, &v), -ERANGE);
  ck_assert_int_eq(ms__add_i64(INT64_MAX - 1, 1, &v), 0);
  ck_assert(v == INT64_MAX);
  ck_assert_int_eq(ms__round_i64(2.5, &v), 0);
  ck_assert(v == 3 || v == 2);
  ck_assert_int_eq(ms__round_i64(1e19, &v), -ERANGE);
  ck_assert_int_eq(ms__is_ident("a_1", 3), 1);
  ck_assert_int_eq(ms__is_ident("1a", 2), 0);
}
END_TEST

/* ---- errors ----------------------------------------------------------- */

START_TEST(test_error_set_prefix_quote) {
  memstub_error err = {0};
  ck_assert_int_eq(memstub_error_set(&err, -EINVAL, "line %d: bad", 3), -EINVAL);
  ck_assert_int_eq(err.code, -EINVAL);
  memstub_error_prefix(&err, "t.csv");
  ck_assert_str_eq(err.msg, "t.csv: line 3: bad");
  ck_assert_int_eq(memstub_error_set(NULL, -ENOMEM, "x"), -ENOMEM);  // NULL err is allowed
  char q[MS__QUOTE_MAX + 4];
  ck_assert_str_eq(ms__quote("a\tb", 3, 10, q), "a?b");
  ck_assert_str_eq(ms__quote("abcdef", 6, 3, q), "abc...");
  // A prefix too long for the message keeps the message's size bound.
  char longp[600];
  memset(longp, 'p', sizeof longp - 1);
  longp[sizeof longp - 1] = '\0';
  memstub_error_prefix(&err, longp);
  ck_assert_uint_lt(strlen(err.msg), sizeof err.msg);
}
END_TEST

/* ---- spawn ------------------------------------------------------------ */

START_TEST(test_spawn_success_capture) {
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  o.out = o.err = MS__SPAWN_CAPTURE;
  o.in = MS__SPAWN_NULL;
  ms__spawn_result r;
  memstub_error err = {0};
  char *argv[] = {"sh", "-c", "echo out; echo err >&2; cat; printf tail", NULL};
  ck_assert_int_eq(ms__spawn_run(argv, &o, &r, &err), 0);
  ck_assert_int_eq(r.exited, 1);
  ck_assert_int_eq(r.code, 0);
  ck_assert_int_eq(ms__spawn_status(&r), 0);
  ck_assert_str_eq(r.out, "out\ntail");
  ck_assert_uint_eq(r.out_len, 8);
  ck_assert_str_eq(r.err, "err\n");
  ck_assert_int_eq(ms__spawn_check(&r, argv[0], NULL, &err), 0);
  ms__spawn_result_free(&r);
  // A large output through the pipe (more than a pipe buffer holds).
  char *big[] = {"sh", "-c",
                 "i=0; while [ $i -lt 20000 ]; do echo 0123456789; i=$((i+1)); done", NULL};
  ck_assert_int_eq(ms__spawn_run(big, &o, &r, &err), 0);
  ck_assert_uint_eq(r.out_len, 220000);
  ck_assert_ptr_null(r.err);
  ms__spawn_result_free(&r);
}
END_TEST

START_TEST(test_spawn_redirect_fds) {
  char *dir = tu_mkdtemp(), *p = path_in(dir, "log"), *in = path_in(dir, "in");
  tu_write_file(in, "hello\n");
  int ofd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int ifd = open(in, O_RDONLY | O_CLOEXEC);
  ck_assert_int_ge(ofd, 0);
  ck_assert_int_ge(ifd, 0);
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  o.in = ifd;
  o.out = ofd;
  o.err = ofd;
  ms__spawn_result r;
  memstub_error err = {0};
  char *argv[] = {"sh", "-c", "read x; echo \"got $x\"; echo e >&2", NULL};
  ck_assert_int_eq(ms__spawn_run(argv, &o, &r, &err), 0);
  ck_assert_int_eq(ms__spawn_status(&r), 0);
  close(ofd);
  close(ifd);
  char *text = tu_read_file(p);
  ck_assert_str_eq(text, "got hello\ne\n");
  free(text);
  ms__spawn_result_free(&r);
  tu_rmtree(dir);
  free(dir);
  free(p);
  free(in);
}
END_TEST

START_TEST(test_spawn_exit_status) {
  ms__spawn_result r;
  memstub_error err = {0};
  char *argv[] = {"sh", "-c", "exit 3", NULL};
  ck_assert_int_eq(ms__spawn_run(argv, NULL, &r, &err), 0);
  ck_assert_int_eq(r.exited, 1);
  ck_assert_int_eq(r.code, 3);
  ck_assert_int_eq(ms__spawn_status(&r), 3);
  ck_assert_int_eq(ms__spawn_check(&r, argv[0], "the shell", &err), -EIO);
  ck_assert_str_eq(err.msg, "the shell ('sh') failed: exit status 3");
  ms__spawn_result_free(&r);
}
END_TEST

START_TEST(test_spawn_signal) {
  ms__spawn_result r;
  memstub_error err = {0};
  char *argv[] = {"sh", "-c", "kill -TERM $$", NULL};
  ck_assert_int_eq(ms__spawn_run(argv, NULL, &r, &err), 0);
  ck_assert_int_eq(r.exited, 0);
  ck_assert_int_eq(r.sig, SIGTERM);
  ck_assert_int_eq(ms__spawn_status(&r), 128 + SIGTERM);
  ck_assert_int_eq(ms__spawn_check(&r, argv[0], NULL, &err), -EIO);
  char want[128];
  snprintf(want, sizeof want, "'sh' was killed by signal %d (%s)", SIGTERM, strsignal(SIGTERM));
  ck_assert_str_eq(err.msg, want);
  ms__spawn_result_free(&r);
}
END_TEST

START_TEST(test_spawn_not_found) {
  ms__spawn_result r;
  memstub_error err = {0};
  char *argv[] = {"/nonexistent/gnuplot", NULL};
  ck_assert_int_eq(ms__spawn_run(argv, NULL, &r, &err), -ENOENT);
  ck_assert_str_eq(err.msg, "cannot run '/nonexistent/gnuplot': not found");
  ms__spawn_result_free(&r);
  // Through PATH, with a name for the message.
  char *old = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  char *dir = tu_mkdtemp();
  setenv("PATH", dir, 1);
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  o.what = "gnuplot";
  char *argv2[] = {"gnuplot", NULL};
  int rc = ms__spawn_run(argv2, &o, &r, &err);
  setenv("PATH", old, 1);
  ck_assert_int_eq(rc, -ENOENT);
  ck_assert_str_eq(err.msg, "cannot run gnuplot ('gnuplot'): not found");
  // Not executable.
  char *p = path_in(dir, "script");
  tu_write_file(p, "#!/bin/sh\nexit 0\n");
  char *argv3[] = {p, NULL};
  ck_assert_int_eq(ms__spawn_run(argv3, NULL, &r, &err), -EACCES);
  ck_assert_ptr_nonnull(strstr(err.msg, "permission denied"));
  tu_rmtree(dir);
  free(dir);
  free(old);
  free(p);
}
END_TEST

START_TEST(test_spawn_timeout) {
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  o.timeout_ns = 200000000;  // 0.2 s against a 30 s sleep
  ms__spawn_result r;
  memstub_error err = {0};
  char *argv[] = {"sleep", "30", NULL};
  int64_t t0 = ms__prim_now_ns();
  ck_assert_int_eq(ms__spawn_run(argv, &o, &r, &err), -ETIMEDOUT);
  int64_t took = ms__prim_now_ns() - t0;
  ck_assert_int_eq(r.timed_out, 1);
  ck_assert_int_eq(r.exited, 0);
  ck_assert_int_eq(r.sig, SIGKILL);
  ck_assert_str_eq(err.msg, "'sleep' did not finish within 0.2 s: killed (a longer limit: "
                                "MEMSTUB_CHILD_TIMEOUT=SECONDS)");
  ck_assert_msg(took < 20000000000LL, "took %lld ns", (long long)took);  // not the 30 s
  ms__spawn_result_free(&r);
  // With capture: what it wrote before the timeout is kept; a grandchild
  // holding the pipe open does not stop the wait.
  o.out = MS__SPAWN_CAPTURE;
  char *argv2[] = {"sh", "-c", "echo early; sleep 30", NULL};
  t0 = ms__prim_now_ns();
  ck_assert_int_eq(ms__spawn_run(argv2, &o, &r, &err), -ETIMEDOUT);
  took = ms__prim_now_ns() - t0;
  ck_assert_msg(took < 20000000000LL, "took %lld ns", (long long)took);
  ck_assert_str_eq(r.out, "early\n");
  ms__spawn_result_free(&r);
  // A child that ends in time is not touched.
  char *argv3[] = {"true", NULL};
  o.timeout_ns = 30000000000LL;
  ck_assert_int_eq(ms__spawn_run(argv3, &o, &r, &err), 0);
  ck_assert_int_eq(r.timed_out, 0);
  ck_assert_int_eq(ms__spawn_status(&r), 0);
  ms__spawn_result_free(&r);
}
END_TEST

// The tick: called as the wait begins and then every period, with the time
// elapsed, whether the child's output is captured or not.
static void count_tick(void *arg, int64_t elapsed_ns) {
  int64_t *last = arg;
  ck_assert_int_ge(elapsed_ns, last[1]);
  last[0]++;
  last[1] = elapsed_ns;
}

START_TEST(test_spawn_tick) {
  for (int capture = 0; capture < 2; capture++) {
    ms__spawn_opts o;
    ms__spawn_opts_init(&o);
    int64_t seen[2] = {0, 0};
    o.tick = count_tick;
    o.tick_arg = seen;
    if (capture) o.out = MS__SPAWN_CAPTURE;
    ms__spawn_result r;
    memstub_error err = {0};
    char *argv[] = {"sleep", "0.7", NULL};
    ck_assert_int_eq(ms__spawn_run(argv, &o, &r, &err), 0);
    ck_assert_int_eq(ms__spawn_status(&r), 0);
    // 0.7 s at one tick per 0.2 s: the first at once, then at least two more.
    ck_assert_msg(seen[0] >= 3, "capture %d: %lld ticks", capture, (long long)seen[0]);
    ck_assert_int_ge(seen[1], 2 * MS__SPAWN_TICK_NS);
    ms__spawn_result_free(&r);
  }
}
END_TEST

/* A tick of the caller's period (memstub sweep polls the host's memory every
 * millisecond; issue 33), and the child's page faults from its rusage. */
START_TEST(test_spawn_tick_period) {
  for (int capture = 0; capture < 2; capture++) {
    ms__spawn_opts o;
    ms__spawn_opts_init(&o);
    int64_t seen[2] = {0, 0};
    o.tick = count_tick, o.tick_arg = seen, o.tick_ns = 5000000;
    if (capture) o.err = MS__SPAWN_CAPTURE;
    ms__spawn_result r;
    memstub_error err = {0};
    char *argv[] = {"sleep", "0.3", NULL};
    ck_assert_int_eq(ms__spawn_run(argv, &o, &r, &err), 0);
    // 0.3 s at one tick per 5 ms: far more than the 2 of the default period.
    ck_assert_msg(seen[0] >= 5, "capture %d: %lld ticks", capture, (long long)seen[0]);
    ck_assert_int_gt(r.minflt, 0);  // exec alone faults pages in
    ck_assert_int_ge(r.majflt, 0);
    ms__spawn_result_free(&r);
  }
}
END_TEST

/* ms__spawn_limit: a minute and more per MiB by default, or
 * $MEMSTUB_CHILD_TIMEOUT seconds; a bad value is refused, never ignored. */
START_TEST(test_spawn_limit) {
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  memstub_error err = {0};
  unsetenv(MS__SPAWN_TIMEOUT_ENV);
  ck_assert_int_eq(ms__spawn_limit(&o, 60, 2, 3 << 20, &err), 0);
  ck_assert_int_eq(o.timeout_ns, 66 * INT64_C(1000000000));
  setenv(MS__SPAWN_TIMEOUT_ENV, "0.25", 1);
  ck_assert_int_eq(ms__spawn_limit(&o, 60, 2, 3 << 20, &err), 0);
  ck_assert_int_eq(o.timeout_ns, 250000000);
  const char *bad[] = {"0", "-1", "1e7", "soon", "1s"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv(MS__SPAWN_TIMEOUT_ENV, bad[i], 1);
    ck_assert_int_eq(ms__spawn_limit(&o, 60, 0, 0, &err), -EINVAL);
    ck_assert_msg(strstr(err.msg, "MEMSTUB_CHILD_TIMEOUT: expected seconds above 0") == err.msg,
                  "%s", err.msg);
  }
  unsetenv(MS__SPAWN_TIMEOUT_ENV);
}
END_TEST

// Whether process pid is gone within 10 s (a killed orphan is reaped by init).
static int gone(pid_t pid) {
  for (int i = 0; i < 1000; i++) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return 1;
    usleep(10000);
  }
  return 0;
}

/* own_group: the timeout kills what the child started too (a compiler
 * driver's cc1), not the child alone. */
START_TEST(test_spawn_own_group) {
  for (int group = 1; group >= 0; group--) {
    ms__spawn_opts o;
    ms__spawn_opts_init(&o);
    o.own_group = group;
    o.out = MS__SPAWN_CAPTURE;
    o.timeout_ns = 300000000;
    ms__spawn_result r;
    memstub_error err = {0};
    char *argv[] = {"sh", "-c", "sleep 30 & echo $!; wait", NULL};
    ck_assert_int_eq(ms__spawn_run(argv, &o, &r, &err), -ETIMEDOUT);
    ck_assert_ptr_nonnull(r.out);
    pid_t pid = (pid_t)atol(r.out);
    ck_assert_int_gt(pid, 0);
    if (group) {
      ck_assert_msg(gone(pid), "own_group: the grandchild lives on");
    } else {  // the child alone was killed: its grandchild lives on, but not past the test
      usleep(100000);
      ck_assert_int_eq(kill(pid, SIGKILL), 0);
      ck_assert(gone(pid));
    }
    ms__spawn_result_free(&r);
  }
}
END_TEST

// With SIGCHLD ignored the status is lost: -ECHILD and a message that says why.
START_TEST(test_spawn_sigchld_ignored) {
  signal(SIGCHLD, SIG_IGN);
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  o.what = "m4";
  ms__spawn_result r;
  memstub_error err = {0};
  char *argv[] = {"true", NULL};
  int rc = ms__spawn_run(argv, &o, &r, &err);
  signal(SIGCHLD, SIG_DFL);
  ck_assert_int_eq(rc, -ECHILD);
  ck_assert_msg(strstr(err.msg, "cannot wait for m4 ('true'): ") == err.msg, "%s", err.msg);
  ck_assert_ptr_nonnull(strstr(err.msg, "(SIGCHLD is ignored?)"));
  ms__spawn_result_free(&r);
}
END_TEST

// A signal caught by the caller is passed on to the child, which is still waited for.
static volatile sig_atomic_t caught;
static void on_usr1(int sig) { caught = sig; }

START_TEST(test_spawn_forward) {
  struct sigaction sa = {0}, old;
  sa.sa_handler = on_usr1;  // no SA_RESTART: the wait sees EINTR
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, &old);
  caught = 0;
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  o.forward = &caught;
  o.out = MS__SPAWN_CAPTURE;
  ms__spawn_result r;
  memstub_error err = {0};
  // The child signals its parent, then runs on until the signal reaches it.
  char *argv[] = {"sh", "-c", "trap 'echo passed; exit 7' USR1; kill -USR1 $PPID; "
                  "i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; echo not", NULL};
  ck_assert_int_eq(ms__spawn_run(argv, &o, &r, &err), 0);
  sigaction(SIGUSR1, &old, NULL);
  ck_assert_int_eq(caught, SIGUSR1);
  ck_assert_str_eq(r.out, "passed\n");
  ck_assert_int_eq(ms__spawn_status(&r), 7);
  ms__spawn_result_free(&r);
}
END_TEST

// A child with an environment of its own.
START_TEST(test_spawn_env) {
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  o.out = MS__SPAWN_CAPTURE;
  char *env[] = {"MS_SPAWN_TEST=given", NULL};
  o.env = env;
  setenv("MS_SPAWN_OTHER", "inherited", 1);
  ms__spawn_result r;
  memstub_error err = {0};
  char *argv[] = {"/bin/sh", "-c", "echo \"$MS_SPAWN_TEST-$MS_SPAWN_OTHER\"", NULL};
  ck_assert_int_eq(ms__spawn_run(argv, &o, &r, &err), 0);
  unsetenv("MS_SPAWN_OTHER");
  ck_assert_str_eq(r.out, "given-\n");
  ms__spawn_result_free(&r);
}
END_TEST

/* like_system: an interrupt meant for the child (here sent by the child to
 * its parent) does not end the waiting parent; the old actions come back. */
START_TEST(test_spawn_like_system) {
  struct sigaction before;
  sigaction(SIGINT, NULL, &before);
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  o.like_system = 1;
  ms__spawn_result r;
  memstub_error err = {0};
  char *argv[] = {"sh", "-c", "kill -INT $PPID; kill -QUIT $PPID; exit 4", NULL};
  ck_assert_int_eq(ms__spawn_run(argv, &o, &r, &err), 0);
  ck_assert_int_eq(ms__spawn_status(&r), 4);
  struct sigaction after;
  sigaction(SIGINT, NULL, &after);
  ck_assert(after.sa_handler == before.sa_handler);
  ms__spawn_result_free(&r);
}
END_TEST

// Figures for humans: binary byte units with one decimal, times with three
// significant digits, each moving up a unit where rounding would print 1024.0
// or 1000.
// arg ms of the calling thread's CPU time, spun.
static void *spin_ms(void *arg) {
  int64_t end = ms__prim_thread_cpu_ns() + (int64_t)(intptr_t)arg * 1000000;
  while (ms__prim_thread_cpu_ns() < end) {
  }
  return NULL;
}

/* The run-queue wait without a descriptor kept (the recorder's reading)
 * agrees with the kept descriptor's, and grows when two threads share one
 * CPU: each spinning 40 ms waits for the other about that long. */
START_TEST(test_prim_run_delay) {
  int fd = ms__prim_sched_open();
  if (fd < 0) {  // then the kernel keeps no scheduler statistics at all
    ck_assert_int_ne(access("/proc/thread-self/schedstat", R_OK), 0);
    ck_assert_int_eq(ms__prim_thread_run_delay(), -1);
    return;
  }
  errno = 1234;
  int64_t a = ms__prim_sched_run_delay(fd), b = ms__prim_thread_run_delay(),
          c = ms__prim_sched_run_delay(fd);
  ck_assert_int_eq(errno, 1234);
  ck_assert_msg(a >= 0 && a <= b && b <= c, "%lld %lld %lld", (long long)a, (long long)b,
                (long long)c);
  cpu_set_t was, one;
  ck_assert_int_eq(sched_getaffinity(0, sizeof was, &was), 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, spin_ms, (void *)40), 0);
  spin_ms((void *)40);
  pthread_join(t, NULL);
  int64_t d = ms__prim_thread_run_delay() - c;
  ck_assert_int_eq(sched_setaffinity(0, sizeof was, &was), 0);
  ms__prim_sched_close(fd);
  ck_assert_msg(d >= 10000000, "%lld ns waited for the CPU beside a thread spinning on it",
                (long long)d);
}
END_TEST

START_TEST(test_fmt_bytes) {
  char b[MS__FMT_MAX];
  ck_assert_str_eq(ms__fmt_bytes(0, b, sizeof b), "0 B");
  ck_assert_str_eq(ms__fmt_bytes(512, b, sizeof b), "512 B");
  ck_assert_str_eq(ms__fmt_bytes(1023, b, sizeof b), "1023 B");
  ck_assert_str_eq(ms__fmt_bytes(1024, b, sizeof b), "1.0 KiB");
  ck_assert_str_eq(ms__fmt_bytes(1536, b, sizeof b), "1.5 KiB");
  ck_assert_str_eq(ms__fmt_bytes(1572864, b, sizeof b), "1.5 MiB");
  ck_assert_str_eq(ms__fmt_bytes(1048575, b, sizeof b), "1.0 MiB");  // not "1024.0 KiB"
  ck_assert_str_eq(ms__fmt_bytes(20 * 1048576 + 1, b, sizeof b), "20.0 MiB");
  ck_assert_str_eq(ms__fmt_bytes(3435973837LL, b, sizeof b), "3.2 GiB");
  ck_assert_str_eq(ms__fmt_bytes(1099511627776LL, b, sizeof b), "1.0 TiB");
  ck_assert_str_eq(ms__fmt_bytes(-1536, b, sizeof b), "-1.5 KiB");
  ck_assert_str_eq(ms__fmt_bytes(-100, b, sizeof b), "-100 B");
  ck_assert_str_eq(ms__fmt_bytes(INT64_MAX, b, sizeof b), "8.0 EiB");
  ck_assert_str_eq(ms__fmt_bytes(INT64_MIN, b, sizeof b), "-8.0 EiB");
  // A short buffer is cut, never overrun.
  char small[5] = "xxxx";
  ck_assert_str_eq(ms__fmt_bytes(1572864, small, 4), "1.5");
}
END_TEST

START_TEST(test_fmt_ns) {
  char b[MS__FMT_MAX];
  ck_assert_str_eq(ms__fmt_ns(0, b, sizeof b), "0 ns");
  ck_assert_str_eq(ms__fmt_ns(850, b, sizeof b), "850 ns");
  ck_assert_str_eq(ms__fmt_ns(999, b, sizeof b), "999 ns");
  ck_assert_str_eq(ms__fmt_ns(1000, b, sizeof b), "1.00 \u00b5s");
  ck_assert_str_eq(ms__fmt_ns(250000, b, sizeof b), "250 \u00b5s");
  ck_assert_str_eq(ms__fmt_ns(999499, b, sizeof b), "999 \u00b5s");
  ck_assert_str_eq(ms__fmt_ns(999500, b, sizeof b), "1.00 ms");  // not "1000 µs"
  ck_assert_str_eq(ms__fmt_ns(12500000, b, sizeof b), "12.5 ms");
  ck_assert_str_eq(ms__fmt_ns(1200000000, b, sizeof b), "1.20 s");
  ck_assert_str_eq(ms__fmt_ns(4800000000LL, b, sizeof b), "4.80 s");
  ck_assert_str_eq(ms__fmt_ns(9996000000LL, b, sizeof b), "10.0 s");
  ck_assert_str_eq(ms__fmt_ns(3600000000000LL, b, sizeof b), "3600 s");
  ck_assert_str_eq(ms__fmt_ns(-250000, b, sizeof b), "-250 \u00b5s");
  ck_assert_str_eq(ms__fmt_ns(INT64_MIN, b, sizeof b), "-9223372037 s");
}
END_TEST

/* Percentages with a sensible number of digits (issue 30: "-46.945895 %"):
 * three significant digits from 1 % up, two below, never 0 for a share that
 * is not 0 nor 100 for one below 100. */
START_TEST(test_fmt_pct) {
  char b[MS__FMT_MAX];
  ck_assert_str_eq(ms__fmt_pct(0, 0, b, sizeof b), "0 %");
  ck_assert_str_eq(ms__fmt_pct(-46.945895, 0, b, sizeof b), "-46.9 %");
  ck_assert_str_eq(ms__fmt_pct(-1.676767, 1, b, sizeof b), "-1.68 %");
  ck_assert_str_eq(ms__fmt_pct(1.676767, 1, b, sizeof b), "+1.68 %");
  ck_assert_str_eq(ms__fmt_pct(1.676767, 0, b, sizeof b), "1.68 %");
  ck_assert_str_eq(ms__fmt_pct(245.6, 0, b, sizeof b), "246 %");
  ck_assert_str_eq(ms__fmt_pct(100, 0, b, sizeof b), "100 %");
  ck_assert_str_eq(ms__fmt_pct(99.97, 0, b, sizeof b), "99.97 %");  // not "100 %"
  ck_assert_str_eq(ms__fmt_pct(0.66, 0, b, sizeof b), "0.66 %");
  ck_assert_str_eq(ms__fmt_pct(0.009, 1, b, sizeof b), "+0.0090 %");
  ck_assert_str_eq(ms__fmt_pct(-1.65e-6, 1, b, sizeof b), "-0.0000017 %");  // not "-0.00000 %"
  ck_assert_str_eq(ms__fmt_pct(1e-12, 0, b, sizeof b), "< 0.000000001 %");
  ck_assert_str_eq(ms__fmt_pct(NAN, 0, b, sizeof b), "? %");
}
END_TEST

// Counts: thousands separators, exact; estimates and scores: k, M, G.
START_TEST(test_fmt_count_si) {
  char b[MS__FMT_MAX];
  ck_assert_str_eq(ms__fmt_count(0, b, sizeof b), "0");
  ck_assert_str_eq(ms__fmt_count(754, b, sizeof b), "754");
  ck_assert_str_eq(ms__fmt_count(6652, b, sizeof b), "6,652");
  ck_assert_str_eq(ms__fmt_count(1359872, b, sizeof b), "1,359,872");
  ck_assert_str_eq(ms__fmt_count(-100000, b, sizeof b), "-100,000");
  ck_assert_str_eq(ms__fmt_count(INT64_MIN, b, sizeof b), "-9,223,372,036,854,775,808");
  ck_assert_str_eq(ms__fmt_si(0, b, sizeof b), "0");
  ck_assert_str_eq(ms__fmt_si(850, b, sizeof b), "850");
  ck_assert_str_eq(ms__fmt_si(48.0, b, sizeof b), "48");
  ck_assert_str_eq(ms__fmt_si(94.9, b, sizeof b), "94.9");
  ck_assert_str_eq(ms__fmt_si(1517.7, b, sizeof b), "1.52 k");
  ck_assert_str_eq(ms__fmt_si(68716.9, b, sizeof b), "68.7 k");
  ck_assert_str_eq(ms__fmt_si(1359872, b, sizeof b), "1.36 M");
  ck_assert_str_eq(ms__fmt_si(23004449.0, b, sizeof b), "23.0 M");
  ck_assert_str_eq(ms__fmt_si(999600, b, sizeof b), "1.00 M");  // not "1000 k"
  ck_assert_str_eq(ms__fmt_si(-2500, b, sizeof b), "-2.50 k");
}
END_TEST

int main(void) {
  Suite *s = suite_create("common");
  TCase *tc = tcase_create("afile_num_error");
  tcase_add_test(tc, test_afile_commit_abort);
  tcase_add_test(tc, test_read_file);
  tcase_add_test(tc, test_parse_i64);
  tcase_add_test(tc, test_parse_double_and_ops);
  tcase_add_test(tc, test_error_set_prefix_quote);
  tcase_add_test(tc, test_prim_run_delay);
  suite_add_tcase(s, tc);
  TCase *sp = tcase_create("spawn");
  tcase_set_timeout(sp, 60);
  tcase_add_test(sp, test_spawn_success_capture);
  tcase_add_test(sp, test_spawn_redirect_fds);
  tcase_add_test(sp, test_spawn_exit_status);
  tcase_add_test(sp, test_spawn_signal);
  tcase_add_test(sp, test_spawn_not_found);
  tcase_add_test(sp, test_spawn_timeout);
  tcase_add_test(sp, test_spawn_limit);
  tcase_add_test(sp, test_spawn_own_group);
  tcase_add_test(sp, test_spawn_tick);
  tcase_add_test(sp, test_spawn_tick_period);
  tcase_add_test(sp, test_spawn_sigchld_ignored);
  tcase_add_test(sp, test_spawn_forward);
  tcase_add_test(sp, test_spawn_env);
  tcase_add_test(sp, test_spawn_like_system);
  suite_add_tcase(s, sp);
  TCase *un = tcase_create("units");
  tcase_add_test(un, test_fmt_bytes);
  tcase_add_test(un, test_fmt_ns);
  tcase_add_test(un, test_fmt_pct);
  tcase_add_test(un, test_fmt_count_si);
  suite_add_tcase(s, un);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
