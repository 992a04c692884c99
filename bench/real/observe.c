/* bench/real/observe.c: run a command and watch it from outside (issue 13
 * item 8, issue 14 item 7). Not part of memstub: a stand-alone observer for
 * bench/real/run, compiled by it.
 *
 *   observe [-i STDIN_FILE] [-o CURVE.csv] [-p POLL_US] -- PROGRAM [ARGS...]
 *
 * Polls /proc/PID/statm every POLL_US microseconds (default 1000) for the
 * process's anonymous resident memory (resident - shared, in pages: RssAnon,
 * the kernel's RSS counters without RssFile and RssShmem), and collects its
 * rusage with wait4. PROGRAM's standard output goes to /dev/null. Prints one
 * line of key=value pairs:
 *   status wall_ns user_ns sys_ns minflt majflt peak_anon_bytes maxrss_bytes samples
 * CURVE.csv gets t_ns,anon_bytes for every sample. Exit status 0 when the
 * observation worked (PROGRAM's own status is in the line), 2 otherwise. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Anonymous resident bytes from statm (resident - shared pages); -1 if unreadable.
static int64_t anon_bytes(int fd, long page) {
  char buf[256];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  unsigned long size, res, shared;
  if (sscanf(buf, "%lu %lu %lu", &size, &res, &shared) != 3) return -1;
  return res >= shared ? (int64_t)(res - shared) * page : 0;
}

int main(int argc, char **argv) {
  const char *in = NULL, *curve = NULL;
  long poll_us = 1000;
  int c;
  while ((c = getopt(argc, argv, "+i:o:p:")) != -1) {
    switch (c) {
      case 'i': in = optarg; break;
      case 'o': curve = optarg; break;
      case 'p': poll_us = atol(optarg); break;
      default: return 2;
    }
  }
  if (optind >= argc || poll_us <= 0) {
    fprintf(stderr, "usage: observe [-i FILE] [-o CURVE.csv] [-p POLL_US] -- PROGRAM [ARGS...]\n");
    return 2;
  }
  long page = sysconf(_SC_PAGESIZE);
  size_t cap = 1 << 16, n = 0;
  int64_t *ts = malloc(cap * sizeof *ts), *vs = malloc(cap * sizeof *vs);
  if (!ts || !vs) return 2;
  // SIGCHLD blocked and waited for, so the exit ends the wait at once (the
  // wall time is not rounded up to the polling period).
  sigset_t chld, old;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &old);
  int64_t t0 = now_ns();
  pid_t pid = fork();
  if (pid < 0) return perror("fork"), 2;
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (in) {
      int fd = open(in, O_RDONLY);
      if (fd < 0 || dup2(fd, 0) < 0) _exit(126);
      close(fd);
    }
    int nul = open("/dev/null", O_WRONLY);
    if (nul < 0 || dup2(nul, 1) < 0) _exit(126);
    execvp(argv[optind], argv + optind);
    _exit(127);
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
  int fd = open(path, O_RDONLY);
  int64_t peak = 0;
  struct rusage ru;
  int st = 0;
  int64_t next = now_ns();
  for (;;) {
    pid_t w = wait4(pid, &st, WNOHANG, &ru);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return perror("wait4"), 2;
    int64_t v = fd >= 0 ? anon_bytes(fd, page) : -1;
    if (v > 0) {  // a zombie reads 0
      if (n == cap) {
        cap *= 2;
        ts = realloc(ts, cap * sizeof *ts);
        vs = realloc(vs, cap * sizeof *vs);
        if (!ts || !vs) return 2;
      }
      ts[n] = now_ns() - t0;
      vs[n++] = v;
      if (v > peak) peak = v;
    }
    next += poll_us * 1000;
    int64_t left = next - now_ns();
    if (left > 0) {
      struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
      sigtimedwait(&chld, NULL, &ts);  // the child's exit, or the next poll
    } else {
      next = now_ns();  // behind (a loaded machine): poll again now, no catching up
    }
  }
  int64_t wall = now_ns() - t0;
  if (curve) {
    FILE *f = fopen(curve, "w");
    if (!f) return perror(curve), 2;
    fprintf(f, "t_ns,anon_bytes\n");
    for (size_t i = 0; i < n; i++) fprintf(f, "%lld,%lld\n", (long long)ts[i], (long long)vs[i]);
    if (fclose(f) != 0) return perror(curve), 2;
  }
  int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  printf("status=%d wall_ns=%lld user_ns=%lld sys_ns=%lld minflt=%ld majflt=%ld "
         "peak_anon_bytes=%lld maxrss_bytes=%lld samples=%zu\n",
         status, (long long)wall,
         (long long)ru.ru_utime.tv_sec * 1000000000 + ru.ru_utime.tv_usec * 1000,
         (long long)ru.ru_stime.tv_sec * 1000000000 + ru.ru_stime.tv_usec * 1000, ru.ru_minflt,
         ru.ru_majflt, (long long)peak, (long long)ru.ru_maxrss * 1024, n);
  return 0;
}
