// A stub embedded with memstub_add_stub(... DATA): its data file, named at
// run time by MEMSTUB_DATA_<name> or the one it was built with, read once
// (docs/runtime.md, "One host binary for every point").
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "prim.h"

// One lock for every such stub: taken once a call, held across the first read only.
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/* The variable's name for the stub called name into buf. 0, or -EINVAL
 * with err set when it does not fit. */
static int var_name(const char *name, char *buf, size_t cap, memstub_error *err) {
  int n = snprintf(buf, cap, "%s%s", MEMSTUB_DATA_ENV_PREFIX, name ? name : "");
  if (!name || !*name || n < 0 || (size_t)n >= cap)
    return memstub_error_set(err, -EINVAL, "a data stub without a usable name");
  return 0;
}

/* The first call's work: the file the variable names (or e->built) read,
 * validated and checked as a stub, into e. */
static void load(memstub_stub_data_env *e) {
  char var[128];
  memstub_error *err = &e->err;
  int rc = var_name(e->name, var, sizeof var, err);
  const char *set = rc == 0 ? getenv(var) : NULL, *path = set ? set : e->built;
  if (rc == 0 && set && !*set)
    rc = memstub_error_set(err, -EINVAL,
                           "%s is set but empty: name the stub's data file (memstub gen --data), "
                           "or unset it to replay %s",
                           var, e->built ? e->built : "the built one");
  else if (rc == 0 && !path)
    rc = memstub_error_set(err, -EINVAL, "%s: no data file built in", var);
  else if (rc == 0 && (rc = memstub_stub_data_open(path, &e->data, err)) == 0 &&
           (rc = memstub_replay_check(&e->data->stub, NULL, NULL, err)) < 0)
    memstub_error_prefix(err, path);  // the invariants: the file's own errors name it already
  if (rc < 0 && set && *set) {
    // Never the built file instead: the variable and its file named.
    char pre[MEMSTUB_ERRMSG_MAX / 2];
    snprintf(pre, sizeof pre, "%s=%s", var, set);
    memstub_error_prefix(err, pre);
  }
  if (rc < 0) {
    memstub_stub_data_free(e->data);
    e->data = NULL;
  }
  e->state = rc < 0 ? rc : 1;
}

const struct memstub_stub *memstub_stub_data_env_get(memstub_stub_data_env *e, memstub_error *err) {
  pthread_mutex_lock(&load_lock);
  if (e->state == 0) load(e);
  int state = e->state;
  pthread_mutex_unlock(&load_lock);
  if (state < 0) {
    if (err) *err = e->err;
    return NULL;
  }
  return &e->data->stub;
}

int memstub_stub_data_env_call(memstub_stub_data_env *e, memstub_error *err) {
  // Reading the data at the first call takes the component's time and CPU.
  ms__rt_start at = ms__rt_start_now();
  const struct memstub_stub *s = memstub_stub_data_env_get(e, err);
  return s ? ms__rt_stub_call_from(s, &at, err) : e->state;
}

int memstub_stub_data_env_none(const char *name, memstub_error *err) {
  char var[128];
  if (var_name(name, var, sizeof var, err) < 0 || !getenv(var)) return 0;
  return memstub_error_set(err, -EINVAL,
                           "%s is set, but the stub %s was built from a header "
                           "(memstub_add_stub without DATA): it cannot read a data file; build "
                           "it with DATA to replay the file the variable names",
                           var, name);
}
