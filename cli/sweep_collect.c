// memstub sweep --collect DIR... -o OUT (docs/sweep.md, "On many
// machines"): the results of a job list's runs, from any number of
// directories (machines), merged into the table, summary and plots a local
// sweep writes. The directories must hold the same plan; runs of another
// calibration profile are refused, so no median mixes them.
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ms_common.h"
#include "sweep.h"

/* dir's plan is first's, byte for byte (first_text: first's sweep.plan).
 * 0, or -EINVAL with err naming the first line that differs. */
static int same_plan(const char *first, const char *first_text, const char *dir, memstub_error *err) {
  char *path = ms__asprintf("%s/sweep.plan", dir), *text = NULL;
  size_t len = 0;
  if (!path) return memstub_error_set(err, -ENOMEM, "out of memory");
  int rc = ms__read_file(path, &text, &len, err);
  const char *a = first_text, *b = text;
  long line = 1;
  while (rc == 0 && (*a || *b)) {
    size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
    if (la != lb || memcmp(a, b, la) != 0) {
      if (strncmp(a, "profile", 7) == 0 && strncmp(b, "profile", 7) == 0)
        rc = memstub_error_set(err, -EINVAL, "%s:%ld: the runs of %s are of another calibration profile "
                               "than those of %s: a summary never mixes hosts of different profiles "
                               "in one median (collect each profile's directories apart)",
                               path, line, dir, first);
      else
        rc = memstub_error_set(err, -EINVAL, "%s:%ld: not the plan of %s/sweep.plan (line %ld "
                               "differs): the results of another sweep", path, line, first, line);
      break;
    }
    a += la + (a[la] == '\n'), b += lb + (b[lb] == '\n'), line++;
  }
  free(text);
  free(path);
  return rc;
}

// Whether name is "rN.run" (N: digits, no leading zero).
static int result_name(const char *name, size_t *n) {
  size_t len = strlen(name);
  if (len < 6 || name[0] != 'r' || strcmp(name + len - 4, ".run") != 0) return 0;
  if (name[1] == '0' || strspn(name + 1, "0123456789") != len - 5) return 0;
  *n = (size_t)strtoull(name + 1, NULL, 10);
  return 1;
}

/* The result files of dir/results into s->runs (room for every run), from[]
 * the file each order came from. 0, or -errno with err. */
static int read_results(ms_sweep *s, const char *dir, char **from, memstub_error *err) {
  char *rdir = ms__asprintf("%s/results", dir);
  if (!rdir) return memstub_error_set(err, -ENOMEM, "out of memory");
  // By name, in numeric order (r2 before r10): the same first error every time.
  struct dirent **list = NULL;
  int count = scandir(rdir, &list, NULL, versionsort), rc = 0;
  if (count < 0) rc = memstub_error_set(err, -errno, "%s: cannot read: %s", rdir, strerror(errno));
  for (int i = 0; rc == 0 && i < count; i++) {
    const struct dirent *e = list[i];
    size_t n;
    if (e->d_name[0] == '.') continue;  // ., .., a temporary file being written
    char *path = ms__asprintf("%s/%s", rdir, e->d_name);
    if (!path) {
      rc = memstub_error_set(err, -ENOMEM, "out of memory");
      break;
    }
    if (!result_name(e->d_name, &n)) {
      rc = memstub_error_set(err, -EINVAL, "%s: not a result file of a run (rN.run)", path);
    } else if (n < 1 || n > s->npts * s->repeat) {
      rc = memstub_error_set(err, -EINVAL, "%s: the sweep has runs 1 to %zu", path, s->npts * s->repeat);
    } else if (from[n - 1]) {
      rc = memstub_error_set(err, -EEXIST, "%s: run %zu again (it is %s too): one run, one result",
                             path, n, from[n - 1]);
    } else {
      ms_sweep_run *r = &s->runs[s->nruns];
      memset(r, 0, sizeof *r);
      s->nruns++;  // counted now, so that what the reader allocated is freed
      rc = ms_sweep_result_read(s, path, r, err);
      if (rc == 0 && r->order + 1 != n)
        rc = memstub_error_set(err, -EINVAL, "%s:2: field 2: order %zu in the file of run %zu",
                               path, r->order + 1, n);
      if (rc == 0) from[n - 1] = path, path = NULL;
    }
    free(path);
  }
  for (int i = 0; i < count; i++) free(list[i]);
  free(list);
  free(rdir);
  return rc;
}

static int by_order(const void *a, const void *b) {
  const ms_sweep_run *x = a, *y = b;
  return (x->order > y->order) - (x->order < y->order);
}

/* The machines of the runs, by first appearance in the sweep's order, into
 * s->host ("a, b"; cut where it does not fit). */
static void hosts(ms_sweep *s) {
  size_t len = 0;
  s->host[0] = '\0';
  for (size_t i = 0; i < s->nruns; i++) {
    const char *h = s->runs[i].host;
    int seen = 0;
    for (size_t j = 0; j < i && !seen; j++) seen = strcmp(s->runs[j].host, h) == 0;
    if (!seen && len < sizeof s->host)
      len += (size_t)snprintf(s->host + len, sizeof s->host - len, "%s%s", len ? ", " : "", h);
  }
}

/* dir/data/pN.msd of every point copied into stage/data. 0, or -errno. */
static int copy_data(const ms_sweep *s, const char *dir, const char *stage, memstub_error *err) {
  int rc = 0;
  for (size_t p = 0; rc == 0 && p < s->npts; p++) {
    char *from = ms__asprintf("%s/%s", dir, s->pts[p].data_name);
    char *to = ms__asprintf("%s/%s", stage, s->pts[p].data_name), *buf = NULL;
    size_t len = 0;
    ms__afile af;
    rc = from && to ? ms__read_file(from, &buf, &len, err) : memstub_error_set(err, -ENOMEM, "out of memory");
    if (rc == 0 && (rc = ms__afile_open(&af, to, err)) == 0) {
      fwrite(buf, 1, len, af.f);
      rc = ms__afile_commit(&af, err);
    }
    free(buf), free(from), free(to);
  }
  return rc;
}

int ms_sweep_collect_cmd(int argc, char **argv, ms_sweep_collect_parse *parse) {
  const char *out = NULL;
  int plots = 1, first, status;
  if (parse(argc, argv, &out, &plots, &first, &status) < 0) return status;
  ms_sweep s = {0};
  memstub_error err = {0};
  char **from = NULL, *first_text = NULL, *stage = NULL;
  size_t len = 0, planned = 0;
  int made = 0;
  int rc = ms_sweep_plan_read(argv[first], &s, &err);
  if (rc == 0) rc = plots ? ms_sweep_plot_check(&err) : 0;
  if (rc == 0) {
    char *path = ms__asprintf("%s/sweep.plan", argv[first]);
    rc = path ? ms__read_file(path, &first_text, &len, &err) : memstub_error_set(&err, -ENOMEM, "out of memory");
    free(path);
  }
  for (int i = first + 1; rc == 0 && i < argc; i++) rc = same_plan(argv[first], first_text, argv[i], &err);
  if (rc == 0) {
    planned = s.npts * s.repeat;
    s.runs = calloc(planned, sizeof *s.runs);
    from = calloc(planned, sizeof *from);
    if (!s.runs || !from) rc = memstub_error_set(&err, -ENOMEM, "out of memory");
  }
  for (int i = first; rc == 0 && i < argc; i++) rc = read_results(&s, argv[i], from, &err);
  if (rc == 0 && s.nruns == 0)
    rc = memstub_error_set(&err, -ENOENT, "%s/results: no result of any run (has the job list run?)",
                           argv[first]);
  if (rc == 0) {
    qsort(s.runs, s.nruns, sizeof *s.runs, by_order);
    hosts(&s);
    size_t missing = planned - s.nruns, at = 0;
    while (at < planned && from[at]) at++;
    if (missing)
      ms_cli_warn("sweep: %zu of the %zu runs missing, the first run %zu (its job failed, or did "
                  "not run): the summary is of the %zu collected", missing, planned, at + 1, s.nruns);
  }
  struct sigaction old_actions[MS_CLI_STOP_SIGNALS];
  ms_cli_stop_catch(old_actions);
  if (rc == 0) rc = ms_sweep_open_dir(out, &made, &stage, &err);
  if (rc == 0) rc = copy_data(&s, argv[first], stage, &err);
  if (rc == 0) rc = ms_sweep_write_all(&s, stage, plots, &err);
  if (rc == 0 && ms_cli_stop_caught)
    rc = memstub_error_set(&err, -EINTR, "stopped by signal %d", (int)ms_cli_stop_caught);
  if (rc == 0) rc = ms_sweep_commit_dir(stage, out, &err);
  if (stage) ms__dir_remove(stage);
  if (rc < 0 && made) ms__dir_remove(out);
  if (rc == 0) {
    if (s.npts <= 32) ms_sweep_summary(&s, 0, stdout);
    ms_cli_note("sweep: %zu runs of %d director%s collected in %s", s.nruns, argc - first,
                argc - first == 1 ? "y" : "ies", out);
  }
  for (size_t i = 0; from && i < planned; i++) free(from[i]);
  free(from);
  free(first_text);
  free(stage);
  ms_sweep_free(&s);
  if (rc < 0 && !ms_cli_stop_caught) ms_cli_fail(&err);
  return ms_cli_stop_release(old_actions, rc < 0 ? MS_EXIT_USAGE : MS_EXIT_OK);
}
