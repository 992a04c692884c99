// memstub sweep: running the host once per run and measuring it from
// outside (docs/sweep.md, "What is measured"): wall and CPU time and page
// faults from wait4, the peak RssAnon polled from /proc/PID/statm, and the
// host's own `metric NAME VALUE` lines on stderr.
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ms_common.h"
#include "ms_spawn.h"
#include "prim.h"
#include "sweep.h"

extern char **environ;

const char *const ms_sweep_builtin_names[MS_SWEEP_BUILTIN] = {
    "wall_ns", "cpu_ns", "user_ns", "sys_ns", "minor_faults", "major_faults",
    "peak_rss_anon_bytes"};

// The host's anonymous resident memory, sampled at every tick of the wait.
typedef struct watch {
  int fd;  // /proc/PID/statm, or < 0
  int64_t peak, polls;
} watch;

static void poll_anon(void *arg, int64_t elapsed_ns) {
  (void)elapsed_ns;
  watch *w = arg;
  int64_t v = w->fd >= 0 ? ms__prim_statm_anon(w->fd) : -1;
  if (v < 0) return;  // not yet, or gone: a zombie has no memory
  w->polls++;
  if (v > w->peak) w->peak = v;
}

/* "run K of N (point P: heap x0.5, time x1; repeat R)" for messages. */
static void run_label(const ms_sweep *s, const ms_sweep_run *r, char *buf, size_t cap) {
  size_t len = (size_t)snprintf(buf, cap, "run %zu of %zu (point %zu:", r->order + 1, s->nruns,
                                r->point);
  const ms_sweep_point *p = &s->pts[r->point];
  const char *sep = " ";
  for (int k = 0; k < MS_SWEEP_SCALES && len < cap; k++) {
    if (p->scale[k] == 1) continue;
    len += (size_t)snprintf(buf + len, cap - len, "%s%s x%g", sep, ms_sweep_scale_names[k],
                            p->scale[k]);
    sep = ", ";
  }
  if (len < cap)
    snprintf(buf + len, cap - len, "%s; repeat %zu)", *sep == ' ' ? " baseline" : "", r->repeat + 1);
}

// The last n lines of text (at most 600 bytes), for a failure's message.
static const char *tail_lines(const char *text, int n) {
  if (!text) return "";
  const char *e = text + strlen(text);
  while (e > text && e[-1] == '\n') e--;
  const char *p = e;
  while (p > text && n > 0)
    if (*--p == '\n') n--;
  if (*p == '\n') p++;
  static _Thread_local char buf[640];
  if (e - p > 600) p = e - 600;
  snprintf(buf, sizeof buf, "%.*s", (int)(e - p), p);
  return buf;
}

// text appended to the string in buf (cap bytes), as much as fits; returns buf.
static char *append(char *buf, size_t cap, const char *text) {
  size_t at = strlen(buf);
  while (*text && at + 1 < cap) buf[at++] = *text++;
  buf[at] = '\0';
  return buf;
}

/* The `metric NAME VALUE` lines of err (the host's stderr) into r. 0, or
 * -EINVAL with e naming the line. */
static int parse_metrics(const char *text, ms_sweep_run *r, char *label, memstub_error *e) {
  size_t lineno = 0;
  for (const char *l = text; l && *l;) {
    size_t len = strcspn(l, "\n");
    lineno++;
    const char *next = l + len + (l[len] == '\n');
    if (len < 7 || strncmp(l, "metric", 6) != 0 || (l[6] != ' ' && l[6] != '\t')) {
      l = next;
      continue;
    }
    char line[256], name[64], value[64], extra[2];
    snprintf(line, sizeof line, "%.*s", (int)(len < 255 ? len : 255), l);
    double v;
    int nf = sscanf(line, "metric %63s %63s %1s", name, value, extra);
    int ok = nf == 2 && ms__parse_double(value, &v) == 0;
    for (const char *c = name; ok && *c; c++)
      ok = isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '-';
    if (!ok)
      return memstub_error_set(e, -EINVAL,
                               "%s: stderr line %zu: '%.80s': expected 'metric NAME VALUE' (NAME "
                               "of letters, digits, _ . -; VALUE a number)",
                               label, lineno, line);
    for (size_t i = 0; i < r->nm; i++)
      if (strcmp(r->m[i].name, name) == 0)
        return memstub_error_set(e, -EINVAL, "%s: stderr line %zu: metric %s given twice in one run",
                                 label, lineno, name);
    ms_sweep_metric *m = realloc(r->m, (r->nm + 1) * sizeof *m);
    if (!m) return memstub_error_set(e, -ENOMEM, "out of memory");
    r->m = m;
    if (!(m[r->nm].name = ms__strdup(name))) return memstub_error_set(e, -ENOMEM, "out of memory");
    m[r->nm++].value = v;
    l = next;
  }
  return 0;
}

/* The caller's environment with var set to value (any other setting of it
 * dropped): a malloc'd array whose one new string is its last entry. */
static char **env_with(const char *var, const char *value) {
  size_t n = 0, vl = strlen(var);
  while (environ[n]) n++;
  char **env = malloc((n + 2) * sizeof *env);
  char *set = malloc(vl + strlen(value) + 2);
  if (!env || !set) return free(env), free(set), NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!(strncmp(environ[i], var, vl) == 0 && environ[i][vl] == '=')) env[k++] = environ[i];
  sprintf(set, "%s=%s", var, value);
  env[k++] = set;
  env[k] = NULL;
  return env;
}

// Free what env_with made: its last entry and the array.
static void free_env(char **env) {
  size_t n = 0;
  while (env[n]) n++;
  free(env[n - 1]);
  free(env);
}

int ms_sweep_run_one(const ms_sweep *s, ms_sweep_run *r, memstub_error *e) {
  char label[300];
  run_label(s, r, label, sizeof label);
  char **env = env_with(s->var, s->pts[r->point].data);
  if (!env) return memstub_error_set(e, -ENOMEM, "out of memory");
  watch w = {.fd = -1};
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  o.in = MS__SPAWN_NULL, o.out = MS__SPAWN_NULL, o.err = MS__SPAWN_CAPTURE;
  o.env = env;
  o.what = "the host";
  o.tick = poll_anon, o.tick_arg = &w, o.tick_ns = s->poll_ns;
  o.forward = &ms_cli_stop_caught;  // an interrupt stops the host, then the sweep
  ms__child c;
  ms__spawn_result res = {0};
  int rc = ms__spawn_start(&c, s->argv, &o, e);
  if (rc == 0) {
    w.fd = ms__prim_statm_open_pid(c.pid);
    rc = ms__spawn_wait(&c, &res, e);
    ms__prim_statm_close(w.fd);
  }
  if (rc == 0 && (rc = ms__spawn_check(&res, s->argv[0], "the host", e)) < 0 && res.err)
    append(append(e->msg, sizeof e->msg, "; its stderr ends:\n"), sizeof e->msg,
           tail_lines(res.err, 4));
  if (rc == 0) rc = parse_metrics(res.err, r, label, e);
  else memstub_error_prefix(e, label);
  if (rc == 0) {
    r->fig[MS_SWEEP_WALL] = res.wall_ns;
    r->fig[MS_SWEEP_USER] = res.user_ns;
    r->fig[MS_SWEEP_SYS] = res.sys_ns;
    r->fig[MS_SWEEP_CPU] = res.user_ns + res.sys_ns;
    r->fig[MS_SWEEP_MINFLT] = res.minflt;
    r->fig[MS_SWEEP_MAJFLT] = res.majflt;
    r->fig[MS_SWEEP_PEAK_ANON] = w.peak;
    r->polls = w.polls;
  }
  ms__spawn_result_free(&res);
  free_env(env);
  return rc;
}

// The runs handed out to the workers, and the first failure.
typedef struct pool {
  ms_sweep *s;
  pthread_mutex_t lock;
  size_t next, done;
  int rc, progress;
  memstub_error err;
} pool;

static void *worker(void *arg) {
  pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->lock);
    if (p->rc == 0 && ms_cli_stop_caught)
      p->rc = memstub_error_set(&p->err, -EINTR, "stopped by signal %d", (int)ms_cli_stop_caught);
    size_t i = p->rc == 0 ? p->next++ : p->s->nruns;
    pthread_mutex_unlock(&p->lock);
    if (i >= p->s->nruns) return NULL;
    memstub_error e = {0};
    int rc = ms_sweep_run_one(p->s, &p->s->runs[i], &e);
    pthread_mutex_lock(&p->lock);
    if (rc < 0 && p->rc == 0) p->rc = rc, p->err = e;
    p->done++;
    if (p->progress) ms_cli_progress("memstub sweep: runs", p->done, p->s->nruns);
    pthread_mutex_unlock(&p->lock);
  }
}

int ms_sweep_run_all(ms_sweep *s, int progress, memstub_error *err) {
  pool p = {.s = s, .progress = progress};
  pthread_mutex_init(&p.lock, NULL);
  size_t n = s->jobs < s->nruns ? s->jobs : s->nruns, started = 0;
  pthread_t *t = n > 1 ? calloc(n, sizeof *t) : NULL;
  if (n > 1 && !t) p.rc = memstub_error_set(&p.err, -ENOMEM, "out of memory");
  // One at a time in this thread; with -j, n workers.
  if (n <= 1) worker(&p);
  for (; t && started < n; started++) {
    int e = pthread_create(&t[started], NULL, worker, &p);
    if (e == 0) continue;
    pthread_mutex_lock(&p.lock);
    if (p.rc == 0) p.rc = memstub_error_set(&p.err, -e, "cannot start a worker: %s", strerror(e));
    pthread_mutex_unlock(&p.lock);
    break;
  }
  for (size_t i = 0; i < started; i++) pthread_join(t[i], NULL);
  free(t);
  pthread_mutex_destroy(&p.lock);
  if (progress && p.rc < 0) fputs("\r\033[K", stderr);
  if (p.rc < 0 && err) *err = p.err;
  return p.rc;
}
