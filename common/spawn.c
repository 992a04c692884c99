// Running a child program and waiting for it (see spawn.h).
#include "ms_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ms_common.h"
#include "prim.h"

extern char **environ;

void ms__spawn_opts_init(ms__spawn_opts *o) {
  *o = (ms__spawn_opts){.in = MS__SPAWN_INHERIT, .out = MS__SPAWN_INHERIT,
                        .err = MS__SPAWN_INHERIT};
}

int ms__spawn_limit(ms__spawn_opts *o, double base_s, double per_mib_s, int64_t bytes,
                    memstub_error *err) {
  const char *env = getenv(MS__SPAWN_TIMEOUT_ENV);
  double s = base_s + per_mib_s * (double)(bytes > 0 ? bytes : 0) / (1024.0 * 1024.0);
  if (env && *env) {
    if (ms__parse_double(env, &s) < 0 || !(s > 0 && s <= 1e6))
      return memstub_error_set(err, -EINVAL, "%s: expected seconds above 0 and at most 1e6, "
                               "found '%.40s'", MS__SPAWN_TIMEOUT_ENV, env);
  }
  if (s > 1e6) s = 1e6;
  o->timeout_ns = (int64_t)(s * 1e9);
  if (o->timeout_ns < 1) o->timeout_ns = 1;
  return 0;
}

// "WHAT ('name')" or "'name'" into buf; returns buf.
static const char *label(const char *name, const char *what, char *buf, size_t cap) {
  if (what && *what)
    snprintf(buf, cap, "%s ('%s')", what, name);
  else
    snprintf(buf, cap, "'%s'", name);
  return buf;
}

static const char *start_reason(int e) {
  if (e == ENOENT) return "not found";
  if (e == EACCES) return "permission denied";
  return strerror(e);
}

/* Route the child's stream fd (0, 1 or 2) as how says; a capture pipe's read
 * end goes to *rd. 0 or -errno. */
static int route(posix_spawn_file_actions_t *fa, int fd, int how, int *rd, int *wr) {
  if (how == MS__SPAWN_INHERIT) return 0;
  if (how == MS__SPAWN_NULL)
    return -posix_spawn_file_actions_addopen(fa, fd, "/dev/null", fd ? O_WRONLY : O_RDONLY, 0);
  if (how == MS__SPAWN_CAPTURE) {
    int p[2];
    if (fd == STDIN_FILENO) return -EINVAL;
    if (pipe2(p, O_CLOEXEC) < 0) return -errno;
    *rd = p[0];
    *wr = p[1];
    return -posix_spawn_file_actions_adddup2(fa, p[1], fd);
  }
  if (how < 0) return -EINVAL;
  return -posix_spawn_file_actions_adddup2(fa, how, fd);
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// like_system: put back the interrupt actions ms__spawn_start replaced.
static void restore_interrupts(ms__child *c) {
  if (!c->ignoring) return;
  sigaction(SIGINT, &c->old_int, NULL);
  sigaction(SIGQUIT, &c->old_quit, NULL);
  c->ignoring = 0;
}

int ms__spawn_start(ms__child *c, char *const argv[], const ms__spawn_opts *o,
                    memstub_error *err) {
  ms__spawn_opts def;
  if (!o) ms__spawn_opts_init(&def), o = &def;
  *c = (ms__child){.pid = -1, .out_fd = -1, .err_fd = -1, .name = argv[0], .what = o->what,
                   .forward = o->forward, .like_system = o->like_system,
                   .group = o->own_group && !o->like_system};
  char lb[300];
  int out_wr = -1, err_wr = -1;
  posix_spawn_file_actions_t fa;
  int rc = -posix_spawn_file_actions_init(&fa);
  if (rc == 0) rc = route(&fa, STDIN_FILENO, o->in, NULL, NULL);
  if (rc == 0) rc = route(&fa, STDOUT_FILENO, o->out, &c->out_fd, &out_wr);
  if (rc == 0) rc = route(&fa, STDERR_FILENO, o->err, &c->err_fd, &err_wr);
  // As system(): the interrupts are ignored here from before the child
  // exists, and set back to their defaults in the child.
  posix_spawnattr_t attr;
  posix_spawnattr_t *ap = NULL;
  if (rc == 0 && c->group && (rc = -posix_spawnattr_init(&attr)) == 0) {
    ap = &attr;
    rc = -posix_spawnattr_setpgroup(ap, 0);
    if (rc == 0) rc = -posix_spawnattr_setflags(ap, POSIX_SPAWN_SETPGROUP);
  }
  if (rc == 0 && c->like_system) {
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &c->old_int);
    sigaction(SIGQUIT, &ign, &c->old_quit);
    c->ignoring = 1;
    sigset_t dflt;
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGINT);
    sigaddset(&dflt, SIGQUIT);
    if ((rc = -posix_spawnattr_init(&attr)) == 0) {
      ap = &attr;
      rc = -posix_spawnattr_setsigdefault(ap, &dflt);
      if (rc == 0) rc = -posix_spawnattr_setflags(ap, POSIX_SPAWN_SETSIGDEF);
    }
  }
  pid_t pid = -1;
  int64_t t0 = ms__prim_now_ns();  // the wall time a caller measures starts here
  if (rc == 0) rc = -posix_spawnp(&pid, argv[0], &fa, ap, argv, o->env ? o->env : environ);
  posix_spawn_file_actions_destroy(&fa);
  if (ap) posix_spawnattr_destroy(ap);
  if (rc < 0) restore_interrupts(c);
  close_fd(&out_wr);
  close_fd(&err_wr);
  if (rc < 0) {
    close_fd(&c->out_fd);
    close_fd(&c->err_fd);
    return memstub_error_set(err, rc, "cannot run %s: %s", label(argv[0], o->what, lb, sizeof lb),
                             start_reason(-rc));
  }
  c->pid = pid;
  c->tick = o->tick;
  c->tick_arg = o->tick_arg;
  c->tick_ns = o->tick_ns > 1000000 ? o->tick_ns : o->tick_ns > 0 ? 1000000 : MS__SPAWN_TICK_NS;
  c->start_ns = t0;
  c->next_tick_ns = c->start_ns;  // the first tick as the wait begins
  if (o->timeout_ns > 0) {
    c->timeout_ns = o->timeout_ns;
    c->deadline_ns = ms__prim_now_ns() + o->timeout_ns;
  }
  return 0;
}

// Append what fd has to read to *buf; at end of file close it. 0 or -ENOMEM.
static int drain(int *fd, char **buf, size_t *len) {
  char chunk[4096];
  ssize_t n = read(*fd, chunk, sizeof chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
  if (n <= 0) {
    close_fd(fd);
    return 0;
  }
  char *nb = realloc(*buf, *len + (size_t)n + 1);
  if (!nb) return -ENOMEM;
  memcpy(nb + *len, chunk, (size_t)n);
  *len += (size_t)n;
  nb[*len] = '\0';
  *buf = nb;
  return 0;
}

// Signal the child, or the group it leads (own_group).
static void signal_child(const ms__child *c, int sig) {
  kill(c->group ? -c->pid : c->pid, sig);
}

// Send the caught signal on to the child, once.
static void pass_on(ms__child *c) {
  if (c->forward && *c->forward && !c->forwarded) {
    c->forwarded = 1;
    signal_child(c, *c->forward);
  }
}

// Kill the child for its timeout and stop reading from it.
static void time_out(ms__child *c, ms__spawn_result *r) {
  if (r->timed_out) return;
  r->timed_out = 1;
  signal_child(c, SIGKILL);
  // A grandchild may hold the pipes open: what was read is what we have.
  close_fd(&c->out_fd);
  close_fd(&c->err_fd);
}

// The caller's tick, when its time has come.
static void tick(ms__child *c) {
  if (!c->tick) return;
  int64_t now = ms__prim_now_ns();
  if (now < c->next_tick_ns) return;
  c->next_tick_ns = now + c->tick_ns;
  c->tick(c->tick_arg, now - c->start_ns);
}

// Milliseconds to the deadline for poll (-1: none), rounded up; at most a
// tick's period when the caller has a tick.
static int poll_ms(const ms__child *c, const ms__spawn_result *r) {
  int cap = c->tick ? (int)((c->tick_ns + 999999) / 1000000) : -1;
  if (!c->deadline_ns || r->timed_out) return cap;
  int64_t left = c->deadline_ns - ms__prim_now_ns();
  if (left <= 0) return 0;
  int64_t ms = (left + 999999) / 1000000;
  if (cap < 0) cap = 1000;
  return ms > cap ? cap : (int)ms;
}

/* Read the capture pipes until both are closed (or the timeout passes).
 * 0 or -ENOMEM / -errno. */
static int read_captures(ms__child *c, ms__spawn_result *r) {
  while (c->out_fd >= 0 || c->err_fd >= 0) {
    pass_on(c);
    tick(c);
    if (c->deadline_ns && ms__prim_now_ns() >= c->deadline_ns) {
      time_out(c, r);
      break;
    }
    struct pollfd p[2] = {{.fd = c->out_fd, .events = POLLIN}, {.fd = c->err_fd, .events = POLLIN}};
    int n = poll(p, 2, poll_ms(c, r));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    int rc = 0;
    if (p[0].revents && c->out_fd >= 0) rc = drain(&c->out_fd, &r->out, &r->out_len);
    if (rc == 0 && p[1].revents && c->err_fd >= 0) rc = drain(&c->err_fd, &r->err, &r->err_len);
    if (rc < 0) return rc;
  }
  return 0;
}

static int wait_child(ms__child *c, ms__spawn_result *r, memstub_error *err);

int ms__spawn_wait(ms__child *c, ms__spawn_result *r, memstub_error *err) {
  int rc = wait_child(c, r, err);
  restore_interrupts(c);
  return rc;
}

static int wait_child(ms__child *c, ms__spawn_result *r, memstub_error *err) {
  *r = (ms__spawn_result){0};
  char lb[300];
  int rc = read_captures(c, r);
  if (rc < 0) {
    // Stop it rather than leave it blocked on a pipe nobody reads.
    signal_child(c, SIGKILL);
    close_fd(&c->out_fd);
    close_fd(&c->err_fd);
  }
  int st = 0;
  struct rusage ru;
  for (;;) {
    pass_on(c);
    int timed = c->deadline_ns && !r->timed_out;
    pid_t got = wait4(c->pid, &st, timed || c->tick ? WNOHANG : 0, &ru);
    if (got == c->pid) break;
    if (got == 0) {
      // Still running under a deadline or a tick: sleep a little, or kill it.
      tick(c);
      int64_t now = ms__prim_now_ns(), until = now + (timed ? 2000000 : 20000000);
      if (c->tick && c->next_tick_ns < until) until = c->next_tick_ns;
      if (timed && now >= c->deadline_ns)
        time_out(c, r);
      else
        ms__prim_sleep_until(timed && c->deadline_ns < until ? c->deadline_ns : until);
      continue;
    }
    if (errno == EINTR) continue;
    int e = errno;
    c->pid = -1;
    // ECHILD when the caller ignores SIGCHLD: the child was reaped unseen,
    // its status is lost, and what it wrote may be cut short.
    return memstub_error_set(err, -e, "cannot wait for %s: %s%s",
                             label(c->name, c->what, lb, sizeof lb), strerror(e),
                             e == ECHILD ? " (SIGCHLD is ignored?)" : "");
  }
  c->pid = -1;
  r->wall_ns = ms__prim_now_ns() - c->start_ns;
  r->user_ns = (int64_t)ru.ru_utime.tv_sec * 1000000000 + (int64_t)ru.ru_utime.tv_usec * 1000;
  r->sys_ns = (int64_t)ru.ru_stime.tv_sec * 1000000000 + (int64_t)ru.ru_stime.tv_usec * 1000;
  r->minflt = ru.ru_minflt;
  r->majflt = ru.ru_majflt;
  r->exited = WIFEXITED(st);
  r->code = r->exited ? WEXITSTATUS(st) : 0;
  r->sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  if (rc < 0)
    return memstub_error_set(err, rc, "reading the output of %s: %s",
                             label(c->name, c->what, lb, sizeof lb), strerror(-rc));
  if (r->timed_out) {
    return memstub_error_set(err, -ETIMEDOUT,
                             "%s did not finish within %.3g s: killed (a longer limit: "
                             "%s=SECONDS)",
                             label(c->name, c->what, lb, sizeof lb), (double)c->timeout_ns / 1e9,
                             MS__SPAWN_TIMEOUT_ENV);
  }
  return 0;
}

int ms__spawn_run(char *const argv[], const ms__spawn_opts *o, ms__spawn_result *r,
                  memstub_error *err) {
  ms__child c;
  *r = (ms__spawn_result){0};
  int rc = ms__spawn_start(&c, argv, o, err);
  return rc < 0 ? rc : ms__spawn_wait(&c, r, err);
}

int ms__spawn_status(const ms__spawn_result *r) {
  return r->exited ? r->code : 128 + r->sig;
}

const char *ms__spawn_describe(const ms__spawn_result *r, char *buf, size_t cap) {
  if (r->exited)
    snprintf(buf, cap, "exit status %d", r->code);
  else
    snprintf(buf, cap, "signal %d (%s)", r->sig, strsignal(r->sig));
  return buf;
}

int ms__spawn_check(const ms__spawn_result *r, const char *argv0, const char *what,
                    memstub_error *err) {
  if (r->exited && r->code == 0) return 0;
  char lb[300], how[96];
  ms__spawn_describe(r, how, sizeof how);
  return memstub_error_set(err, -EIO, r->exited ? "%s failed: %s" : "%s was killed by %s",
                           label(argv0, what, lb, sizeof lb), how);
}

void ms__spawn_result_free(ms__spawn_result *r) {
  free(r->out);
  free(r->err);
  r->out = r->err = NULL;
  r->out_len = r->err_len = 0;
}
