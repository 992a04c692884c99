// memstub sweep on many machines (docs/sweep.md, "On many machines"): the
// job list for GNU parallel (--job-list FILE), one line per run, and what
// each line runs, `memstub sweep --run-one DIR ORDER`: that run measured as
// a local sweep measures it, its result into DIR/results/rORDER.run.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli.h"
#include "ms_common.h"
#include "sweep.h"

// s for a POSIX shell: in single quotes, a quote written '\''.
static void sh_quote(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) *s == '\'' ? fputs("'\\''", f) : fputc(*s, f);
  fputc('\'', f);
}

int ms_sweep_jobs_write(const ms_sweep *s, const char *stage, const char *file, ms__afile *af,
                        memstub_error *err) {
  char *plan = ms__asprintf("%s/sweep.plan", stage), *results = ms__asprintf("%s/results", stage);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  int rc = plan && results ? 0 : memstub_error_set(err, -ENOMEM, "out of memory");
  if (rc == 0 && n <= 0)
    rc = memstub_error_set(err, -errno, "/proc/self/exe: cannot tell memstub's path: %s", strerror(errno));
  if (rc == 0) exe[n] = '\0';
  if (rc == 0) rc = ms_sweep_plan_write(s, plan, err);
  if (rc == 0 && mkdir(results, 0777) != 0)
    rc = memstub_error_set(err, -errno, "%s: cannot create: %s", results, strerror(errno));
  if (rc == 0) rc = ms__afile_open(af, file, err);
  // The runs in the sweep's order: memstub by the path of this one.
  for (size_t i = 0; rc == 0 && i < s->nruns; i++) {
    sh_quote(af->f, exe);
    fputs(" sweep --run-one ", af->f);
    sh_quote(af->f, s->dir);
    fprintf(af->f, " %zu\n", s->runs[i].order + 1);
  }
  free(plan);
  free(results);
  return rc;
}

/* One at a time on a machine (a plan of -j 1): the machine's lock for runs
 * of job lists, held until exit (a run waits for the one before it). The
 * lock's fd, or -1 when it cannot be had (the run goes on, unserialised). */
static int machine_lock(void) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/memstub-sweep-%u.lock", (unsigned)getuid());
  int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return ms_cli_warn("sweep: %s: %s: runs on this machine may overlap", path, strerror(errno)), -1;
  while (flock(fd, LOCK_EX) != 0)
    if (errno != EINTR || ms_cli_stop_caught) return close(fd), -1;
  return fd;
}

int ms_sweep_run_one_cmd(int argc, char **argv) {
  if (argc != 4)
    return ms_cli_usage("sweep", "--run-one DIR ORDER: one run of a job list (a line of "
                        "--job-list's FILE runs it)");
  const char *dir = argv[2];
  int64_t order;
  ms_sweep s = {0};
  memstub_error err = {0};
  int rc = ms_sweep_plan_read(dir, &s, &err);
  if (rc < 0) return ms_sweep_free(&s), ms_cli_fail(&err);
  s.dir = dir;
  s.nruns = s.npts * s.repeat;
  if (ms__parse_i64(argv[3], strlen(argv[3]), &order) < 0 || order < 1 || (size_t)order > s.nruns) {
    ms_sweep_free(&s);
    return ms_cli_usage("sweep", "--run-one: ORDER '%s' is not a run of %s (1 to %zu)", argv[3], dir, s.nruns);
  }
  struct utsname u;
  snprintf(s.host, sizeof s.host, "%s", uname(&u) == 0 ? u.nodename : "unknown");
  // The run: its place in the sweep's order, its point and repeat.
  ms_sweep_run run = {.order = (size_t)order - 1};
  run.repeat = run.order / s.npts;
  run.point = (run.order % s.npts + run.repeat) % s.npts;
  char *results = ms__asprintf("%s/results", dir);
  char *out = ms__asprintf("%s/results/r%zu.run", dir, run.order + 1);
  if (!results || !out) rc = memstub_error_set(&err, -ENOMEM, "out of memory");
  if (rc == 0 && mkdir(results, 0777) != 0 && errno != EEXIST)
    rc = memstub_error_set(&err, -errno, "%s: cannot create: %s", results, strerror(errno));
  struct sigaction old_actions[MS_CLI_STOP_SIGNALS];
  ms_cli_stop_catch(old_actions);
  int lock = rc == 0 && s.jobs == 1 ? machine_lock() : -1;
  if (rc == 0 && ms_cli_stop_caught)
    rc = memstub_error_set(&err, -EINTR, "stopped by signal %d", (int)ms_cli_stop_caught);
  if (rc == 0) rc = ms_sweep_run_one(&s, &run, &err);
  if (lock >= 0) close(lock);
  if (rc == 0 && ms_cli_stop_caught)
    rc = memstub_error_set(&err, -EINTR, "stopped by signal %d", (int)ms_cli_stop_caught);
  if (rc == 0) rc = ms_sweep_result_write(&s, &run, out, &err);
  for (size_t k = 0; k < run.nm; k++) free(run.m[k].name);
  free(run.m);
  free(results);
  free(out);
  ms_sweep_free(&s);
  if (rc < 0 && !ms_cli_stop_caught) ms_cli_fail(&err);
  return ms_cli_stop_release(old_actions, rc < 0 ? MS_EXIT_USAGE : MS_EXIT_OK);
}
