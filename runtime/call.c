// A stub called as a function: its entry point, and where it measures to.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "memstub/threads.h"
#include "prim.h"

/* ---- function entry points ------------------------------------------------- */

void memstub_replay_options_for(memstub_replay_options *o, const struct memstub_stub *s) {
  memstub_replay_options_init(o);
  if (memstub_timing_name(s->timing)) o->timing = s->timing;  // NONE: the default
  ms__rt_work_model_options(o, s);  // the work model it was made with (layout 5)
}

/* Environment variable name, when set, as a whole number of ns from lo to
 * hi (or -1 when minus_one) into *out: 0, or -EINVAL with err naming it. */
static int env_ns(const char *name, long long lo, long long hi, int minus_one, int64_t *out,
                  memstub_error *err) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (errno || end == v || *end || !((n >= lo && n <= hi) || (minus_one && n == -1)))
    return memstub_error_set(err, -EINVAL, "%s: '%s' is not a number of ns from %lld to %lld%s",
                             name, v, lo, hi, minus_one ? " or -1" : "");
  *out = n;
  return 0;
}

/* The replay options of a call from the environment (MEMSTUB_TIMING,
 * MEMSTUB_MARGIN_NS, MEMSTUB_REAIM_NS, MEMSTUB_WORK_MEM_SHARE,
 * MEMSTUB_MEASURE) into o, and the measurement file
 * opened for the stub named name into *mf (NULL: none; close it), before
 * the replay. 0 or a negative errno with err set. */
static int call_setup(const struct memstub_stub *s, const char *name, memstub_replay_options *o,
                      memstub_measure_file **mf, memstub_error *err) {
  *mf = NULL;
  memstub_replay_options_for(o, s);
  const char *v = getenv("MEMSTUB_TIMING");
  if (v && *v && memstub_timing_parse(v, &o->timing) < 0)
    return memstub_error_set(err, -EINVAL,
                             "MEMSTUB_TIMING: '%s' is none of online, deadline or usleep", v);
  v = getenv("MEMSTUB_MARGIN_NS");
  if (v && *v && memstub_margin_parse(v, &o->margin_ns) < 0)
    return memstub_error_set(err, -EINVAL,
                             "MEMSTUB_MARGIN_NS: '%s' is none of model, adaptive or a number "
                             "of ns >= 0",
                             v);
  // No scheduler slice: the replay runs on the caller's thread, whose slice it would stay.
  int rc = env_ns("MEMSTUB_REAIM_NS", 1, INT64_MAX, 1, &o->reaim_ns, err);
  if (rc < 0) return rc;
  v = getenv(MEMSTUB_WORK_MEM_SHARE_ENV);
  if (v && *v && memstub_work_share_parse(v, &o->mem_share) < 0)
    return memstub_error_set(err, -EINVAL,
                             MEMSTUB_WORK_MEM_SHARE_ENV ": '%s' is not a share from 0 to 1", v);
  const char *measure = getenv("MEMSTUB_MEASURE");
  if (!measure || !*measure) return 0;
  // The file is named, and opened, before the replay (the naming rule: runtime/measure_file.c).
  rc = memstub_measure_open(measure, name, mf, err);
  if (rc < 0) return memstub_error_prefix(err, "MEMSTUB_MEASURE"), rc;
  o->measure = MEMSTUB_MEASURE_TRACE;
  return 0;
}

/* A stub called as a function: s (one thread), or ts (several, measured
 * under thread 0's name, NAME_t0, one file for every thread), replayed with
 * the environment's options and its measurement committed when asked
 * (call_setup). 0 or a negative errno with err set. */
static int call(const struct memstub_stub *s, const memstub_threads_stub *ts,
                const ms__rt_start *at, memstub_error *err) {
  const struct memstub_stub *s0 = ts ? ts->stubs[0] : s;
  memstub_replay_options o;
  memstub_measure_file *mf = NULL;
  int rc = call_setup(s0, s0 ? s0->name : NULL, &o, &mf, err);
  if (rc < 0) return rc;
  memstub_replay *r = NULL;
  memstub_threads_replay *tr = NULL;
  // On the caller's thread: its arena and tcache, as the component's calls had.
  rc = ts ? ms__rt_threads_run(ts, &o, &tr, 1, err) : ms__rt_replay_run(s, &o, &r, 1, at, err);
  if (rc == 0 && mf)
    rc = r ? memstub_measure_commit_replay(mf, r, err) : memstub_measure_commit_threads(mf, tr, err);
  if (rc < 0 && mf) memstub_error_prefix(err, "MEMSTUB_MEASURE");
  /* The one line the runtime prints: the host has no other channel for it
   * (its call returns 0), and measuring was asked for (MEMSTUB_MEASURE). */
  if (rc == 0 && mf && r && !memstub_replay_heap_measured(r))
    fprintf(stderr, "memstub: warning: MEMSTUB_MEASURE: %s: %s; heap_bytes in it are not the "
            "stub's heap\n", memstub_measure_name(mf), MEMSTUB_HEAP_NOT_MEASURED);
  memstub_measure_close(mf);
  memstub_replay_free(r);
  memstub_threads_replay_free(tr);
  return rc;
}

// T0 is the call's start: the stub's own setup (options, measurement file,
// checks) takes the component's time and CPU (ms__rt_start).
int memstub_stub_call(const struct memstub_stub *s, memstub_error *err) {
  ms__rt_start at = ms__rt_start_now();
  return call(s, NULL, &at, err);
}

int ms__rt_stub_call_from(const struct memstub_stub *s, const ms__rt_start *at,
                          memstub_error *err) {
  return call(s, NULL, at, err);
}

int memstub_threads_call(const memstub_threads_stub *s, memstub_error *err) {
  if (!s || s->nthreads < 1 || !s->stubs || !s->stubs[0])
    return memstub_error_set(err, -EINVAL, "a threads stub without threads");
  return call(NULL, s, NULL, err);
}
