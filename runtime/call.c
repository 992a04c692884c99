// A stub called as a function: its entry point, and where it measures to.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "memstub/threads.h"
#include "prim.h"

/* ---- function entry points ------------------------------------------------- */

static int write_trace_new(const memstub_trace *t, const char *path, memstub_error *err);

// Write the replayed trace to path, a new file: never replaces one.
static int write_new(const memstub_replay *r, const char *path, memstub_error *err) {
  memstub_trace *t;
  int rc = memstub_replay_trace(r, &t, err);
  if (rc < 0) return rc;
  rc = write_trace_new(t, path, err);
  memstub_trace_free(t);
  return rc;
}

void memstub_replay_options_for(memstub_replay_options *o, const struct memstub_stub *s) {
  memstub_replay_options_init(o);
  if (s->timing == MEMSTUB_TIMING_USLEEP) o->timing = MEMSTUB_TIMING_USLEEP;
}

/* The calls of memstub_stub_call in this process, for %c: every call, of
 * any stub in any thread, takes the next number (from 1). */
static int64_t stub_calls;

// A stub's name as it goes into a file name: [A-Za-z0-9_.-], others as '_'.
static void name_part(const struct memstub_stub *s, char *buf, size_t cap) {
  const char *n = s->name && *s->name ? s->name : "stub";
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
  struct memstub_stub tmp = {0};
  tmp.name = name;
  char nm[256], num[48];
  name_part(&tmp, nm, sizeof nm);
  size_t len = strlen(tmpl), cap = len + 1;
  int fields = 0;
  // Room: every field at most max(sizeof nm, sizeof num) bytes, plus the suffix.
  cap += (len / 2 + 3) * sizeof nm + 8;
  char *buf = malloc(cap), *w = buf;
  if (!buf) return memstub_error_set(err, -ENOMEM, "MEMSTUB_MEASURE: out of memory");
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
                                 "MEMSTUB_MEASURE: '%s': column %d: unknown field '%%%.1s' "
                                 "(%%p pid, %%n stub name, %%c call number, %%%% a %%)",
                                 tmpl, (int)(p - tmpl) + 1, p[1] ? p + 1 : "");
    }
    if (p[1] != '%') fields++;
    size_t n = strlen(f);
    memcpy(w, f, n);
    w += n;
    p++;
  }
  *w = '\0';
  // No field: the default suffix, unless the variable names standard output or
  // an existing device or FIFO (written in place, shared by every stub).
  struct stat st;
  int special = strcmp(tmpl, "-") == 0 ||
                (stat(buf, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
  if (!fields && !special)
    snprintf(w, cap - (size_t)(w - buf), ".%s.%ld.%lld", nm, pid, (long long)call);
  *out = buf;
  return 0;
}

/* The replay options of a call from the environment (MEMSTUB_TIMING,
 * MEMSTUB_MARGIN_NS, MEMSTUB_MEASURE) into o, and the file to measure to
 * into *path (NULL: none; free it), fixed and checked before the replay.
 * 0 or a negative errno with err set. */
static int call_setup(const struct memstub_stub *s, memstub_replay_options *o, char **path,
                      memstub_error *err) {
  *path = NULL;
  memstub_replay_options_for(o, s);
  const char *v = getenv("MEMSTUB_TIMING");
  if (v && *v && memstub_timing_parse(v, &o->timing) < 0)
    return memstub_error_set(err, -EINVAL, "MEMSTUB_TIMING: '%s' is neither deadline nor usleep",
                             v);
  v = getenv("MEMSTUB_MARGIN_NS");
  if (v && *v && memstub_margin_parse(v, &o->margin_ns) < 0)
    return memstub_error_set(err, -EINVAL,
                             "MEMSTUB_MARGIN_NS: '%s' is none of model, adaptive or a number "
                             "of ns >= 0",
                             v);
  const char *measure = getenv("MEMSTUB_MEASURE");
  int rc = 0;
  if (measure && *measure) {
    // The file name is fixed, and checked, before the replay.
    int64_t call = __atomic_add_fetch(&stub_calls, 1, __ATOMIC_RELAXED);
    if ((rc = memstub_measure_path(measure, s ? s->name : NULL, (long)getpid(), call, path,
                                   err)) < 0)
      return rc;
    o->measure = MEMSTUB_MEASURE_TRACE;
    // A name already taken, or a directory that is not there, fails before
    // the replay, not after it (the write checks again, atomically).
    struct stat st;
    char *slash = strrchr(*path, '/');
    if (slash) *slash = '\0';
    int nodir = slash && (*path)[0] && stat(*path, &st) != 0, e = errno;
    if (slash) *slash = '/';
    if (nodir)
      rc = memstub_error_set(err, -e, "MEMSTUB_MEASURE: %s: cannot write: %s", *path,
                             strerror(e));
    else if (stat(*path, &st) == 0 && S_ISREG(st.st_mode))
      rc = memstub_error_set(err, -EEXIST,
                             "MEMSTUB_MEASURE: %s exists already (another stub's measurement, "
                             "or an earlier run's); not replaced",
                             *path);
    if (rc < 0) {
      free(*path);
      *path = NULL;
    }
  }
  return rc;
}

// Write t to path, a new file: never replaces one.
static int write_trace_new(const memstub_trace *t, const char *path, memstub_error *err) {
  ms__afile af;
  int rc;
  if ((rc = ms__afile_open(&af, path, err)) < 0) return rc;
  if (memstub_trace_fwrite(t, af.f) < 0) {
    int e = errno ? errno : EIO;
    ms__afile_abort(&af);
    return memstub_error_set(err, -e, "%s: cannot write: %s", path, strerror(e));
  }
  if ((rc = ms__afile_commit_new(&af, err)) == -EEXIST)
    memstub_error_set(err, rc,
                      "MEMSTUB_MEASURE: %s exists already (another stub's measurement, or an "
                      "earlier run's); not replaced",
                      path);
  return rc;
}

int memstub_stub_call(const struct memstub_stub *s, memstub_error *err) {
  memstub_replay_options o;
  char *path = NULL;
  int rc = call_setup(s, &o, &path, err);
  if (rc < 0) return rc;
  memstub_replay *r;
  rc = memstub_replay_run(s, &o, &r, err);
  if (rc < 0) {
    free(path);
    return rc;
  }
  if (path) rc = write_new(r, path, err);
  /* The one line the runtime prints: the host has no other channel for it
   * (its call returns 0), and measuring was asked for (MEMSTUB_MEASURE). */
  if (path && rc == 0 && !memstub_replay_heap_measured(r))
    fprintf(stderr, "memstub: warning: MEMSTUB_MEASURE: %s: %s; heap_bytes in it are not the "
            "stub's heap\n", path, MEMSTUB_HEAP_NOT_MEASURED);
  memstub_replay_free(r);
  free(path);
  return rc;
}

int memstub_threads_call(const memstub_threads_stub *s, memstub_error *err) {
  if (!s || s->nthreads < 1 || !s->stubs || !s->stubs[0])
    return memstub_error_set(err, -EINVAL, "a threads stub without threads");
  memstub_replay_options o;
  char *path = NULL;
  // Measured under thread 0's name (NAME_t0), one file for every thread.
  int rc = call_setup(s->stubs[0], &o, &path, err);
  if (rc < 0) return rc;
  memstub_threads_replay *r = NULL;
  rc = memstub_threads_run(s, &o, &r, err);
  memstub_trace *t = NULL;
  if (rc == 0 && path && (rc = memstub_threads_trace(r, &t, err)) == 0)
    rc = write_trace_new(t, path, err);
  memstub_trace_free(t);
  memstub_threads_replay_free(r);
  free(path);
  return rc;
}
