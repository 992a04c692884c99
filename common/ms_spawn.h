/* common/ms_spawn.h: running a child program and waiting for it (internal;
 * not spawn.h, which would hide the system's <spawn.h> on this include path).
 *
 * One way for every part that runs another program (the C compiler, m4,
 * gnuplot, a stub program): start it with its standard streams inherited,
 * sent to /dev/null, to a descriptor or captured; wait for it, retrying
 * EINTR, optionally within a timeout and passing on a caught signal; and
 * say clearly what happened:
 *
 *   cannot run 'gnuplot': not found
 *   cannot wait for 'm4': No child processes (SIGCHLD is ignored?)
 *   'cc' failed: exit status 1          'prog' was killed by signal 9 (Killed)
 *   'prog' did not finish within 2 s: killed (MEMSTUB_CHILD_TIMEOUT=SECONDS ...)
 *
 * Every child memstub runs for its own work has a time limit
 * (ms__spawn_limit): m4, the compiler, gnuplot, a stub's --check, a
 * decompressor. Only the program memstub record runs has none: it is the
 * user's, and runs as long as it runs.
 */
#ifndef MEMSTUB_COMMON_MS_SPAWN_H
#define MEMSTUB_COMMON_MS_SPAWN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memstub/error.h"

// A standard stream of the child: a descriptor (>= 0) or one of these.
enum {
  MS__SPAWN_INHERIT = -1,  // the caller's own
  MS__SPAWN_NULL = -2,     // /dev/null
  MS__SPAWN_CAPTURE = -3,  // collected into the result (stdout and stderr only)
};

typedef struct ms__spawn_opts {
  int in, out, err;  // the child's stdin, stdout, stderr (MS__SPAWN_INHERIT by default)
  int64_t timeout_ns;               // > 0: SIGKILL the child once it has run this long
  int own_group;                    // the child leads a process group of its own, and the
                                    // timeout and a forwarded signal go to that group
                                    // (a compiler driver and the cc1 it runs); not with
                                    // like_system
  volatile sig_atomic_t *forward;   // when *forward becomes nonzero, that signal is sent
                                    // to the child (once); the wait goes on
  const char *what;                 // names the child in messages: "cannot run WHAT
                                    // ('argv0')"; NULL: "cannot run 'argv0'"
  char *const *env;                 // the child's environment (NULL: the caller's)
  int like_system;                  // as system(): SIGINT and SIGQUIT are ignored while
                                    // waiting (the child, in the foreground, gets them)
  void (*tick)(void *arg, int64_t elapsed_ns);  // non-NULL: called about every
  void *tick_arg;                   // MS__SPAWN_TICK_NS while waiting, first as the
                                    // wait begins (progress)
  int64_t tick_ns;                  // > 0: the tick's period instead (at least 1 ms:
                                    // memstub sweep polls the child's memory)
} ms__spawn_opts;

enum { MS__SPAWN_TICK_MS = 200 };
#define MS__SPAWN_TICK_NS ((int64_t)MS__SPAWN_TICK_MS * 1000000)

// A started child; ms__spawn_wait ends it. Fields are the helper's.
typedef struct ms__child {
  pid_t pid;
  int out_fd, err_fd;  // read ends of the capture pipes, or -1
  int64_t timeout_ns, deadline_ns;
  const char *name, *what;
  volatile sig_atomic_t *forward;
  int forwarded;
  int like_system, ignoring;
  int group;  // it leads a process group of its own (own_group)
  void (*tick)(void *arg, int64_t elapsed_ns);
  void *tick_arg;
  int64_t start_ns, next_tick_ns, tick_ns;
  struct sigaction old_int, old_quit;  // while ignoring: the actions to restore
} ms__child;

typedef struct ms__spawn_result {
  int exited;        // 1: it exited (code); 0: a signal ended it (sig)
  int code, sig;
  int timed_out;     // killed because the timeout passed
  char *out, *err;   // captured output, NUL-terminated (malloc'd), or NULL
  size_t out_len, err_len;
  // Once it ended: wall time from just before the start to the reap, and its
  // CPU time (wait4's rusage: the child and the children it waited for).
  int64_t wall_ns, user_ns, sys_ns;
  int64_t minflt, majflt;  // its page faults, from the same rusage
} ms__spawn_result;

// Defaults: every stream inherited, no timeout, nothing forwarded.
void ms__spawn_opts_init(ms__spawn_opts *o);

/* The environment variable that replaces every time limit of
 * ms__spawn_limit: seconds (a slow host, or a test of the limit). */
#define MS__SPAWN_TIMEOUT_ENV "MEMSTUB_CHILD_TIMEOUT"

/* Set o->timeout_ns for a child whose work grows with its input: base_s
 * seconds plus per_mib_s for every MiB of bytes, or $MEMSTUB_CHILD_TIMEOUT
 * seconds when that is set. 0, or -EINVAL with err set when
 * $MEMSTUB_CHILD_TIMEOUT is not a number of seconds in (0, 1e6]. */
int ms__spawn_limit(ms__spawn_opts *o, double base_s, double per_mib_s, int64_t bytes,
                    memstub_error *err);

/* Start argv[0] (searched on PATH unless it holds a '/') with argv, in the
 * caller's environment (or o->env). With o->like_system, SIGINT and SIGQUIT
 * are ignored from here until the wait ends (the child gets their defaults). argv and o->what must stay valid until the wait.
 * 0, or -errno with err saying "cannot run 'argv0': not found" (ENOENT),
 * "...: permission denied" (EACCES) or the reason; nothing is left running. */
int ms__spawn_start(ms__child *c, char *const argv[], const ms__spawn_opts *o,
                    memstub_error *err);

/* Wait for a started child, reading what it writes to captured streams, and
 * fill r (free it with ms__spawn_result_free, whatever this returns).
 * 0 once it has ended, however it ended (r says how); -ETIMEDOUT when it was
 * killed for the timeout (r filled, err says so); -ECHILD when its status is
 * lost (the caller ignores SIGCHLD, so it was reaped unseen); -ENOMEM or
 * another -errno with err set. The child is never left unreaped except in the
 * -ECHILD case, where the kernel reaped it. With like_system, the interrupt
 * actions ms__spawn_start replaced are put back. */
int ms__spawn_wait(ms__child *c, ms__spawn_result *r, memstub_error *err);

// ms__spawn_start then ms__spawn_wait; r is filled whenever the child started.
int ms__spawn_run(char *const argv[], const ms__spawn_opts *o, ms__spawn_result *r,
                  memstub_error *err);

/* 0 when r is a clean exit (status 0); otherwise -EIO with err saying
 * "WHAT ('argv0') failed: exit status N" or "... was killed by signal N (Name)". */
int ms__spawn_check(const ms__spawn_result *r, const char *argv0, const char *what,
                    memstub_error *err);

/* How the child ended, as the shell says it: the exit status, or 128 + the
 * signal that ended it. */
int ms__spawn_status(const ms__spawn_result *r);

/* "exit status N" or "signal N (Name)" into buf; returns buf. */
const char *ms__spawn_describe(const ms__spawn_result *r, char *buf, size_t cap);

// Free the captured output (r may be zeroed or partly filled).
void ms__spawn_result_free(ms__spawn_result *r);

#endif
