// The file a replay measures to (--measure), opened before the replay: a
// path that cannot be written fails then, not after a replay of minutes.
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "memstub/threads.h"

struct memstub_measure_file {
  ms__afile af;
  char *tmp;    // a copy of af.tmp, for the stop signals (af frees its own on commit)
  int guarded;  // the temporary file is the one the stop signals remove
};

/* ---- stop signals: the temporary file goes with the process ---------------
 * A stop signal whose action is the default kills the process mid-replay;
 * the temporary file beside the output would stay. While one measurement
 * file is open, such signals remove it first, then kill as they would have.
 * A signal the program handles or ignores is left alone. */

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
static char *volatile guard_tmp;  // the temporary file to remove; NULL: none
static int guard_taken;           // a measurement file has the guard (atomic)

static void on_stop(int sig) {
  char *t = guard_tmp;
  if (t) unlink(t);
  raise(sig);  // SA_RESETHAND: the default action, once this handler returns
}

static void guard_set(memstub_measure_file *m) {
  if (!m->af.tmp || __atomic_exchange_n(&guard_taken, 1, __ATOMIC_ACQ_REL)) return;
  if (!(m->tmp = ms__strdup(m->af.tmp))) {
    __atomic_store_n(&guard_taken, 0, __ATOMIC_RELEASE);
    return;
  }
  m->guarded = 1;
  guard_tmp = m->tmp;
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
    if (sigaction(stop_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
        !(old.sa_flags & SA_SIGINFO))
      sigaction(stop_signals[i], &sa, NULL);
}

static void guard_clear(memstub_measure_file *m) {
  if (!m->guarded) return;
  struct sigaction dfl, old;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
    if (sigaction(stop_signals[i], NULL, &old) == 0 && old.sa_handler == on_stop)
      sigaction(stop_signals[i], &dfl, NULL);
  guard_tmp = NULL;
  free(m->tmp);
  m->tmp = NULL;
  m->guarded = 0;
  __atomic_store_n(&guard_taken, 0, __ATOMIC_RELEASE);
}

/* ---- the file --------------------------------------------------------------- */

int memstub_measure_open(const char *path, memstub_measure_file **out, memstub_error *err) {
  *out = NULL;
  memstub_measure_file *m = calloc(1, sizeof *m);
  if (!m) return memstub_error_set(err, -ENOMEM, "%s: out of memory", path);
  int rc = ms__afile_open(&m->af, path, err);
  if (rc < 0) {
    free(m);
    return rc;
  }
  guard_set(m);
  *out = m;
  return 0;
}

int memstub_measure_commit(memstub_measure_file *m, const memstub_trace *t, memstub_error *err) {
  const char *name = m->af.path ? m->af.path : "standard output";
  int rc = memstub_trace_validate(t, err);
  if (rc < 0) memstub_error_prefix(err, name);
  if (rc == 0 && memstub_trace_fwrite(t, m->af.f) < 0) {
    int e = errno ? errno : EIO;
    rc = memstub_error_set(err, -e, "%s: cannot write: %s", name, strerror(e));
  }
  if (rc < 0) ms__afile_abort(&m->af);
  else rc = ms__afile_commit(&m->af, err);
  guard_clear(m);  // after the rename: a signal before it removes the temporary file
  free(m);
  return rc;
}

void memstub_measure_abort(memstub_measure_file *m) {
  if (!m) return;
  ms__afile_abort(&m->af);
  guard_clear(m);
  free(m);
}

// The trace t (made with status rc) into m, or m aborted; both freed.
static int commit_made(memstub_measure_file *m, int rc, memstub_trace *t, memstub_error *err) {
  if (rc == 0) rc = memstub_measure_commit(m, t, err);
  else memstub_measure_abort(m);
  memstub_trace_free(t);
  return rc;
}

int memstub_measure_commit_replay(memstub_measure_file *m, const memstub_replay *r,
                                  memstub_error *err) {
  memstub_trace *t = NULL;
  int rc = memstub_replay_trace(r, &t, err);
  return commit_made(m, rc, t, err);
}

int memstub_measure_commit_threads(memstub_measure_file *m, const memstub_threads_replay *r,
                                   memstub_error *err) {
  memstub_trace *t = NULL;
  int rc = memstub_threads_trace(r, &t, err);
  return commit_made(m, rc, t, err);
}

int memstub_replay_write(const memstub_replay *r, const char *path, memstub_error *err) {
  memstub_measure_file *m;
  int rc = memstub_measure_open(path, &m, err);
  return rc < 0 ? rc : memstub_measure_commit_replay(m, r, err);
}
