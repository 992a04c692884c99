/* tests/record/behave.c: programs that wait, for the recorder's behaviour
 * tests (tests/test_record_behaviour.c). Each mode sleeps, polls, reads
 * pipes, waits for children or uses its own timers and signals, with some
 * CPU work and allocations in between (so that a CPU-time sampler has
 * ticks), and prints to stdout only what must be the same with and without
 * `memstub record`: results and the counts of EINTR it saw. On stderr it
 * prints "behave: wall_ns N" (main's start to its end), start_abs_ns and
 * end_abs_ns (the same on CLOCK_MONOTONIC) and, in mode issue, "behave:
 * t2_abs_ns N" and "behave: t2_end_abs_ns N" (CLOCK_MONOTONIC when the
 * second allocation starts and when it returned). Built without
 * sanitizers: it runs under the LD_PRELOAD recorder.
 * Usage: behave MODE. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t t_start;

static int64_t now_ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static volatile uint64_t spun;

// Burn ms of this thread's CPU time (so that a CPU-time timer fires), mostly
// in user mode: the thread's CPU clock is read by a system call.
static void burn_cpu(int ms) {
  int64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + (int64_t)ms * 1000000;
  do
    for (int i = 0; i < 20000; i++) spun = spun * 6364136223846793005u + 1;
  while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end);
}

static void *volatile sink;

// A little heap traffic, as a real program has between its waits.
static void churn(size_t n) {
  void *p = malloc(n);
  memset(p, 1, n);
  sink = p;
  free(p);
}

static int sleeps(void) {
  int e_us = 0, e_ns = 0, e_cns = 0, e_abs = 0, e_sel = 0;
  for (int i = 0; i < 30; i++) {
    burn_cpu(2);
    churn(100);
    if (usleep(3000) != 0 && errno == EINTR) e_us++;
  }
  for (int i = 0; i < 10; i++) {
    burn_cpu(2);
    struct timespec req = {0, 10000000}, rem;
    while (nanosleep(&req, &rem) != 0 && errno == EINTR) {
      e_ns++;
      req = rem;
    }
  }
  for (int i = 0; i < 10; i++) {
    burn_cpu(2);
    struct timespec req = {0, 10000000};
    if (clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL) == EINTR) e_cns++;
  }
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  for (int i = 0; i < 10; i++) {
    burn_cpu(2);
    dl.tv_nsec += 10000000;
    if (dl.tv_nsec >= 1000000000) {
      dl.tv_sec++;
      dl.tv_nsec -= 1000000000;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL) == EINTR) e_abs++;
  }
  for (int i = 0; i < 10; i++) {
    burn_cpu(2);
    struct timeval tv = {0, 10000};
    if (select(0, NULL, NULL, NULL, &tv) < 0 && errno == EINTR) e_sel++;
  }
  printf(
      "usleep eintr=%d\nnanosleep eintr=%d\nclock_nanosleep eintr=%d abstime eintr=%d\n"
      "select-sleep eintr=%d\n",
      e_us, e_ns, e_cns, e_abs, e_sel);
  return 0;
}

static int polls(void) {
  int fds[2];
  if (pipe(fds) != 0) return 1;
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[0]};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev) != 0) return 1;
  int e_poll = 0, r_poll = 0, e_sel = 0, r_sel = 0, e_ep = 0, r_ep = 0;
  for (int i = 0; i < 5; i++) {
    burn_cpu(3);
    churn(1000);
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    int r = poll(&p, 1, 40);
    if (r < 0 && errno == EINTR) e_poll++;
    if (r > 0) r_poll++;
  }
  for (int i = 0; i < 5; i++) {
    burn_cpu(3);
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(fds[0], &rd);
    struct timeval tv = {0, 40000};
    int r = select(fds[0] + 1, &rd, NULL, NULL, &tv);
    if (r < 0 && errno == EINTR) e_sel++;
    if (r > 0) r_sel++;
  }
  for (int i = 0; i < 5; i++) {
    burn_cpu(3);
    struct epoll_event out;
    int r = epoll_wait(ep, &out, 1, 40);
    if (r < 0 && errno == EINTR) e_ep++;
    if (r > 0) r_ep++;
  }
  printf("poll eintr=%d ready=%d\nselect eintr=%d ready=%d\nepoll_wait eintr=%d ready=%d\n", e_poll,
         r_poll, e_sel, r_sel, e_ep, r_ep);
  return 0;
}

static int pipes_and_children(void) {
  int fds[2];
  if (pipe(fds) != 0) return 1;
  pid_t c = fork();
  if (c < 0) return 1;
  if (c == 0) {
    close(fds[0]);
    for (int i = 0; i < 8; i++) {
      struct timespec t = {0, 20000000};
      nanosleep(&t, NULL);
      char m[16];
      int n = snprintf(m, sizeof m, "msg%d;", i);
      if (write(fds[1], m, (size_t)n) != n) _exit(9);
    }
    _exit(3);
  }
  close(fds[1]);
  char buf[256];
  size_t got = 0;
  int e_read = 0;
  for (;;) {
    burn_cpu(1);
    ssize_t r = read(fds[0], buf + got, sizeof buf - 1 - got);
    if (r < 0 && errno == EINTR) {
      e_read++;
      continue;
    }
    if (r <= 0) break;
    got += (size_t)r;
  }
  buf[got] = '\0';
  int st, e_wait = 0;
  while (waitpid(c, &st, 0) < 0)
    if (errno == EINTR) e_wait++;
  // A second child waited for while it still runs.
  pid_t d = fork();
  if (d == 0) {
    struct timespec t = {0, 80000000};
    nanosleep(&t, NULL);
    _exit(5);
  }
  burn_cpu(5);
  int st2, e_wait2 = 0;
  while (wait(&st2) < 0)
    if (errno == EINTR) e_wait2++;
  printf("read '%s' eintr=%d\nwaitpid status=%d eintr=%d\nwait status=%d eintr=%d\n", buf, e_read,
         WEXITSTATUS(st), e_wait, WEXITSTATUS(st2), e_wait2);
  return 4;  // a failing exit status, to be passed on
}

static volatile sig_atomic_t n_rt, n_alrm, n_vt;
static void on_rt(int s) {
  (void)s;
  n_rt++;
}
static void on_alrm(int s) {
  (void)s;
  n_alrm++;
}
static void on_vt(int s) {
  (void)s;
  n_vt++;
}

static void handle(int sig, void (*h)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = h;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

static timer_t periodic(int sig, long ms) {
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_SIGNAL;
  sev.sigev_signo = sig;
  timer_t t;
  if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0) exit(7);
  struct itimerspec its = {{0, ms * 1000000}, {0, ms * 1000000}};
  timer_settime(t, 0, &its, NULL);
  return t;
}

static int timers(void) {
  // timer_create: its signal wakes sigsuspend until 10 arrived.
  handle(SIGRTMIN + 1, on_rt);
  sigset_t blk, old;
  sigemptyset(&blk);
  sigaddset(&blk, SIGRTMIN + 1);
  sigaddset(&blk, SIGALRM);
  sigprocmask(SIG_BLOCK, &blk, &old);
  timer_t t = periodic(SIGRTMIN + 1, 10);
  while (n_rt < 10) {
    burn_cpu(1);
    churn(64);
    sigsuspend(&old);
  }
  timer_delete(t);
  // setitimer(ITIMER_REAL): 5 alarms.
  handle(SIGALRM, on_alrm);
  struct itimerval iv = {{0, 15000}, {0, 15000}};
  setitimer(ITIMER_REAL, &iv, NULL);
  while (n_alrm < 5) sigsuspend(&old);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  int alarms_ok = n_alrm >= 5;
  sigprocmask(SIG_SETMASK, &old, NULL);
  // ITIMER_VIRTUAL: the program's own CPU-time timer, 5 ticks.
  handle(SIGVTALRM, on_vt);
  struct itimerval vt = {{0, 5000}, {0, 5000}};
  setitimer(ITIMER_VIRTUAL, &vt, NULL);
  while (n_vt < 5) burn_cpu(1);
  setitimer(ITIMER_VIRTUAL, &off, NULL);
  // sigtimedwait on a blocked real-time signal from a timer: 5 of them.
  int sig = SIGRTMIN + 2, got = 0, e_again = 0, e_intr = 0, other = 0;
  sigset_t w;
  sigemptyset(&w);
  sigaddset(&w, sig);
  sigprocmask(SIG_BLOCK, &w, NULL);
  t = periodic(sig, 20);
  while (got < 5) {
    burn_cpu(2);
    struct timespec to = {1, 0};
    int r = sigtimedwait(&w, NULL, &to);
    if (r == sig)
      got++;
    else if (r < 0 && errno == EAGAIN)
      e_again++;
    else if (r < 0 && errno == EINTR)
      e_intr++;
    else
      other++;
  }
  timer_delete(t);
  // alarm(): one SIGALRM, waited for with pause() (EINTR by design).
  n_alrm = 0;
  alarm(1);
  int pauses = 0;
  while (!n_alrm) {
    burn_cpu(1);
    if (pause() < 0 && errno == EINTR) pauses++;
  }
  printf(
      "timer_create signals>=10: %d\nsetitimer alarms>=5: %d\nitimer_virtual ticks>=5: %d\n"
      "sigtimedwait got=%d eagain=%d eintr=%d other=%d\nalarm pause eintr=%d\n",
      n_rt >= 10, alarms_ok, n_vt >= 5, got, e_again, e_intr, other, pauses);
  return 0;
}

static void *blocked_worker(void *arg) {
  (void)arg;
  // Inherits the blocked mask; sleeps and allocates.
  for (int i = 0; i < 10; i++) {
    churn(256);
    struct timespec t = {0, 5000000};
    nanosleep(&t, NULL);
  }
  return NULL;
}

// Every signal blocked in every thread; a timer's signal taken with
// sigwaitinfo() on the full set: nothing else may arrive.
static int blockall(void) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  pthread_t th;
  if (pthread_create(&th, NULL, blocked_worker, NULL) != 0) return 1;
  int sig = SIGRTMIN + 3, got = 0, foreign = 0, last_foreign = 0;
  timer_t t = periodic(sig, 10);
  while (got < 15) {
    burn_cpu(3);
    churn(128);
    siginfo_t si;
    int r = sigwaitinfo(&all, &si);
    if (r == sig) {
      got++;
    } else if (r > 0) {
      foreign++;
      last_foreign = r;
    }
  }
  timer_delete(t);
  pthread_join(th, NULL);
  // Unblock again and run: the program's own mask is what it set.
  sigset_t none, now;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  burn_cpu(20);
  sigprocmask(SIG_BLOCK, NULL, &now);
  int still = 0;
  for (int s = 1; s < NSIG; s++)
    if (sigismember(&now, s) == 1) still++;
  printf("sigwaitinfo got=%d foreign=%d (last %d)\nblocked after unblocking: %d\n", got, foreign,
         last_foreign, still);
  return 0;
}

static volatile sig_atomic_t n_own;
static void on_own(int s) {
  (void)s;
  n_own++;
}

// The program uses SIGRTMAX-2 (the recorder's first choice) itself.
static int ownsig(void) {
  int sig = SIGRTMAX - 2;
  struct sigaction q;
  sigaction(sig, NULL, &q);
  int was_default = !(q.sa_flags & SA_SIGINFO) && q.sa_handler == SIG_DFL;
  void (*prev)(int) = signal(sig, SIG_IGN);
  sigaction(sig, NULL, &q);
  int now_ignored = q.sa_handler == SIG_IGN;
  burn_cpu(10);
  handle(sig, on_own);
  sigset_t blk, old;
  sigemptyset(&blk);
  sigaddset(&blk, sig);
  sigprocmask(SIG_BLOCK, &blk, &old);
  timer_t t = periodic(sig, 10);
  while (n_own < 8) {
    burn_cpu(2);
    churn(32);
    sigsuspend(&old);
  }
  timer_delete(t);
  sigprocmask(SIG_SETMASK, &old, NULL);
  burn_cpu(20);  // any stray sampling signal would land in on_own now
  printf(
      "default at start: %d, signal() returned SIG_DFL: %d, then ignored: %d\n"
      "own handler reached 8: %d, exactly 8: %d\n",
      was_default, prev == SIG_DFL, now_ignored, n_own >= 8, n_own == 8);
  return 0;
}

// Ignores SIGRTMAX-2 and execs itself: the new image must find it ignored
// (an ignored disposition survives exec), and a handled one back at SIG_DFL.
static int ignexec(const char *self, int stage) {
  int sig = SIGRTMAX - 2;
  if (stage == 1) {
    burn_cpu(5);
    signal(sig, SIG_IGN);
    handle(SIGRTMAX - 3, on_own);
    execl(self, self, "ignexec2", (char *)NULL);
    return 9;
  }
  struct sigaction a, b;
  sigaction(sig, NULL, &a);
  sigaction(SIGRTMAX - 3, NULL, &b);
  burn_cpu(5);
  printf("after exec: SIGRTMAX-2 ignored %d, SIGRTMAX-3 default %d\n", a.sa_handler == SIG_IGN,
         b.sa_handler == SIG_DFL);
  return 0;
}

// The issue's program: 1 MiB, 200 ms asleep, 2 MiB, 100 ms asleep.
static int issue(void) {
  char *a = malloc(1 << 20);
  memset(a, 1, 1 << 20);
  usleep(200000);
  // Said after the allocation: a write to stderr (a pipe the test reads) in
  // between can wake the reader and lose this process the CPU for 100 us.
  long long t2 = (long long)now_ns(CLOCK_MONOTONIC);
  char *b = malloc(2 << 20);
  // The call's end too: the first system call after a sleep can take 0.1-0.8 ms
  // on a VM (the mmap of this block, measured natively), and the row is inside it.
  long long t2e = (long long)now_ns(CLOCK_MONOTONIC);
  fprintf(stderr, "behave: t2_abs_ns %lld\nbehave: t2_end_abs_ns %lld\n", t2, t2e);
  memset(b, 1, 2 << 20);
  usleep(100000);
  sink = a;
  sink = b;
  printf("done\n");
  return 0;
}

// CPU-bound: 300 ms of spinning with allocations.
static int cpu(void) {
  int64_t end = t_start + 300000000;
  long n = 0;
  while (now_ns(CLOCK_MONOTONIC) < end) {
    churn(4096);
    n++;
  }
  printf("done %d\n", n > 0);
  return 0;
}

int main(int argc, char **argv) {
  t_start = now_ns(CLOCK_MONOTONIC);
  const char *mode = argc > 1 ? argv[1] : "";
  int rc;
  if (strcmp(mode, "sleeps") == 0)
    rc = sleeps();
  else if (strcmp(mode, "polls") == 0)
    rc = polls();
  else if (strcmp(mode, "pipes") == 0)
    rc = pipes_and_children();
  else if (strcmp(mode, "timers") == 0)
    rc = timers();
  else if (strcmp(mode, "blockall") == 0)
    rc = blockall();
  else if (strcmp(mode, "ownsig") == 0)
    rc = ownsig();
  else if (strcmp(mode, "issue") == 0)
    rc = issue();
  else if (strcmp(mode, "cpu") == 0)
    rc = cpu();
  else if (strcmp(mode, "ignexec") == 0)
    rc = ignexec(argv[0], 1);
  else if (strcmp(mode, "ignexec2") == 0)
    rc = ignexec(argv[0], 2);
  else {
    fprintf(stderr, "usage: behave sleeps|polls|pipes|timers|blockall|ownsig|ignexec|issue|cpu\n");
    return 2;
  }
  fflush(stdout);
  int64_t t_end = now_ns(CLOCK_MONOTONIC);
  fprintf(stderr, "behave: wall_ns %lld\nbehave: start_abs_ns %lld\nbehave: end_abs_ns %lld\n",
          (long long)(t_end - t_start), (long long)t_start, (long long)t_end);
  return rc;
}
