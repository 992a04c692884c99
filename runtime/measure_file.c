/* The file a replay measures to (a stub program's and memstub replay's
 * --measure, an embedded stub's MEMSTUB_MEASURE), opened before the replay:
 * a path that cannot be written fails then, not after a replay of minutes.
 * One naming rule for all of them (docs/runtime.md, "Measurement files"). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "memstub/threads.h"
#include "prim.h"

struct memstub_measure_file {
  ms__afile af;
  char *tmp;      // a copy of af.tmp, for the stop signals (af frees its own on commit)
  int guarded;    // the temporary file is the one the stop signals remove
  char *base;     // the name the template gives, before any ".N"
  char *name;     // the name this measurement takes (after a commit: the one it took)
  int ruled;      // named by the rule (not memstub_replay_write's exact path, not in place)
  int existed;    // a regular file was at name when opened: this one
  struct stat before;
  int committed;  // 1 committed, -1 failed
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

/* ---- names: the rule ---------------------------------------------------------
 * Every measured replay of the process takes a number (%c, from 1) and the
 * name its template expands to. The first to claim a name writes it; a name
 * this process has claimed already takes ".N" before its extension (the
 * first N from 2 not claimed), and so does one where another process
 * running beside this one wrote a file (found at the commit: newer than this
 * process, or changed since the open). A file left by an earlier run is
 * replaced, as every memstub output replaces its file. */

static pthread_mutex_t claims_lock = PTHREAD_MUTEX_INITIALIZER;
static char **claims;  // the names this process's measurements took
static size_t nclaims, claims_cap;
static int64_t measured;  // measured replays begun in this process, for %c
static int64_t started;   // ms__prim_realtime_ns when the process started (a fork: its parent)

// The process's start, on the clock of file times: files newer are its
// contemporaries', never an earlier run's.
__attribute__((constructor)) static void note_start(void) { started = ms__prim_realtime_ns(); }

// A stub's name as it goes into a file name: [A-Za-z0-9_.-], others as '_'.
static void name_part(const char *name, char *buf, size_t cap) {
  const char *n = name && *name ? name : "stub";
  size_t i = 0;
  for (; n[i] && i + 1 < cap; i++) {
    char ch = n[i];
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '_' || ch == '-' || (ch == '.' && i > 0);
    buf[i] = ok ? ch : '_';
  }
  buf[i] = '\0';
}

int memstub_measure_path(const char *tmpl, const char *name, long pid, int64_t call, char **out,
                         memstub_error *err) {
  *out = NULL;
  char nm[256], num[48];
  name_part(name, nm, sizeof nm);
  size_t len = strlen(tmpl), cap = len + 1;
  // Room: every field at most max(sizeof nm, sizeof num) bytes.
  cap += (len / 2 + 1) * sizeof nm;
  char *buf = malloc(cap), *w = buf;
  if (!buf) return memstub_error_set(err, -ENOMEM, "out of memory");
  for (const char *p = tmpl; *p; p++) {
    if (*p != '%') {
      *w++ = *p;
      continue;
    }
    const char *f = NULL;
    switch (p[1]) {
      case 'p': snprintf(num, sizeof num, "%ld", pid), f = num; break;
      case 'c': snprintf(num, sizeof num, "%lld", (long long)call), f = num; break;
      case 'n': f = nm; break;
      case '%': f = "%"; break;
      default:
        free(buf);
        return memstub_error_set(err, -EINVAL,
                                 "'%s': column %d: unknown field '%%%.1s' "
                                 "(%%p pid, %%n stub name, %%c call number, %%%% a %%)",
                                 tmpl, (int)(p - tmpl) + 1, p[1] ? p + 1 : "");
    }
    size_t n = strlen(f);
    memcpy(w, f, n);
    w += n;
    p++;
  }
  *w = '\0';
  *out = buf;
  return 0;
}

// pre: claims_lock held.
static int claimed(const char *name) {
  for (size_t i = 0; i < nclaims; i++)
    if (strcmp(claims[i], name) == 0) return 1;
  return 0;
}

// pre: claims_lock held. 0, or -ENOMEM.
static int claim(const char *name) {
  if (nclaims == claims_cap) {
    size_t cap = claims_cap ? 2 * claims_cap : 8;
    char **c = realloc(claims, cap * sizeof *c);
    if (!c) return -ENOMEM;
    claims = c, claims_cap = cap;
  }
  if (!(claims[nclaims] = ms__strdup(name))) return -ENOMEM;
  nclaims++;
  return 0;
}

// base with ".k" before the extension of its last component (m.csv -> m.2.csv,
// out/trace -> out/trace.2). Malloc'd; NULL when out of memory.
static char *numbered(const char *base, long k) {
  const char *slash = strrchr(base, '/'), *file = slash ? slash + 1 : base;
  const char *dot = strrchr(file, '.');
  size_t at = dot && dot > file ? (size_t)(dot - base) : strlen(base);
  return ms__asprintf("%.*s.%ld%s", (int)at, base, k, base + at);
}

/* The first name from base on (base, then base.2, base.3, ...) that this
 * process has not claimed and, when fresh is set, that is not base and
 * where no file is: claimed and returned (malloc'd), or NULL when out of
 * memory. */
static char *claim_next(const char *base, int fresh) {
  struct stat st;
  pthread_mutex_lock(&claims_lock);
  char *name = fresh ? NULL : ms__strdup(base);
  for (long k = 2; !name || claimed(name) || (fresh && lstat(name, &st) == 0); k++) {
    free(name);
    if (!(name = numbered(base, k))) break;
  }
  if (name && claim(name) < 0) free(name), name = NULL;
  pthread_mutex_unlock(&claims_lock);
  return name;
}

/* Whether the file at path may be replaced: still the one stat'ed into
 * before (at the open), and older than this process (an earlier run's, not
 * one a process running beside this one wrote). */
static int replaceable(const char *path, const struct stat *before) {
  struct stat now;
  int64_t mtime = (int64_t)before->st_mtim.tv_sec * 1000000000 + before->st_mtim.tv_nsec;
  return stat(path, &now) == 0 && now.st_dev == before->st_dev && now.st_ino == before->st_ino &&
         now.st_size == before->st_size && now.st_mtim.tv_sec == before->st_mtim.tv_sec &&
         now.st_mtim.tv_nsec == before->st_mtim.tv_nsec && (started <= 0 || mtime < started);
}

/* ---- the file --------------------------------------------------------------- */

// Open m at name (m->ruled: by the rule; else exactly name). 0, or a negative errno with err set.
static int open_at(memstub_measure_file *m, const char *name, memstub_error *err) {
  struct stat st;
  int in_place = strcmp(name, "-") == 0 ||
                 (stat(name, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
  if (m->ruled && !in_place) {
    char *c = claim_next(name, 0);
    if (!c) return memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
    m->name = c;
    m->existed = stat(c, &m->before) == 0 && S_ISREG(m->before.st_mode);
  } else {
    m->ruled = 0;
    if (!(m->name = ms__strdup(name))) return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  int rc = ms__afile_open(&m->af, m->name, err);
  if (rc == 0) guard_set(m);
  else m->committed = -1;  // nothing to abort
  return rc;
}

static void measure_free(memstub_measure_file *m) {
  free(m->base);
  free(m->name);
  free(m);
}

int memstub_measure_open(const char *tmpl, const char *stub_name, memstub_measure_file **out,
                         memstub_error *err) {
  *out = NULL;
  memstub_measure_file *m = calloc(1, sizeof *m);
  if (!m) return memstub_error_set(err, -ENOMEM, "%s: out of memory", tmpl);
  int64_t call = __atomic_add_fetch(&measured, 1, __ATOMIC_RELAXED);
  int rc = memstub_measure_path(tmpl, stub_name, (long)getpid(), call, &m->base, err);
  m->ruled = 1;
  if (rc == 0) rc = open_at(m, m->base, err);
  return MS__HAND_OUT(rc, m, out, measure_free);
}

const char *memstub_measure_name(const memstub_measure_file *m) {
  return strcmp(m->name, "-") == 0 ? "standard output" : m->name;
}

/* The closed temporary file of m put at its name, or at the next free one
 * when another process wrote that name meanwhile. 0, or -errno with err set. */
static int place(memstub_measure_file *m, memstub_error *err) {
  for (;;) {
    int rc = -EEXIST;
    // A file that was there at the open is replaced if an earlier run left it.
    if (!m->existed || replaceable(m->af.path, &m->before))
      rc = ms__afile_place(&m->af, m->af.path, m->existed, err);
    if (rc != -EEXIST) return rc;
    char *next = claim_next(m->base, 1), *path = next ? ms__strdup(next) : NULL;
    if (!path) {
      free(next);
      ms__afile_abort(&m->af);
      return memstub_error_set(err, -ENOMEM, "%s: out of memory", m->name);
    }
    free(m->name), m->name = next;
    free(m->af.path), m->af.path = path;
    m->existed = 0;
  }
}

int memstub_measure_commit(memstub_measure_file *m, const memstub_trace *t, memstub_error *err) {
  if (m->committed) return memstub_error_set(err, -EINVAL, "%s: committed already", m->name);
  const char *name = memstub_measure_name(m);
  int rc = memstub_trace_validate(t, err);
  if (rc < 0) memstub_error_prefix(err, name);
  if (rc == 0 && memstub_trace_fwrite(t, m->af.f) < 0) {
    int e = errno ? errno : EIO;
    rc = memstub_error_set(err, -e, "%s: cannot write: %s", name, strerror(e));
  }
  if (rc < 0) ms__afile_abort(&m->af);
  else if (!m->ruled) rc = ms__afile_commit(&m->af, err);
  else if ((rc = ms__afile_close_tmp(&m->af, err)) == 0) rc = place(m, err);
  guard_clear(m);  // after the rename: a signal before it removes the temporary file
  m->committed = rc < 0 ? -1 : 1;
  return rc;
}

void memstub_measure_close(memstub_measure_file *m) {
  if (!m) return;
  if (!m->committed) ms__afile_abort(&m->af);
  guard_clear(m);
  measure_free(m);
}

// The trace t (made with status rc) into m, unless rc failed; t freed.
static int commit_made(memstub_measure_file *m, int rc, memstub_trace *t, memstub_error *err) {
  if (rc == 0) rc = memstub_measure_commit(m, t, err);
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
  memstub_measure_file *m = calloc(1, sizeof *m);
  if (!m) return memstub_error_set(err, -ENOMEM, "%s: out of memory", path);
  int rc = open_at(m, path, err);  // the path as given: no rule
  if (rc == 0) rc = memstub_measure_commit_replay(m, r, err);
  memstub_measure_close(m);
  return rc;
}
