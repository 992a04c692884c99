// memstub sweep: a what-if sweep (docs/sweep.md): one data file per point
// of the scales given, the host run once per point and repeat with the
// point's file in MEMSTUB_DATA_<stub>, measured from outside, and the
// results, summary and plots in DIR, all of them or none; or, with
// --job-list, the runs written as a job list for GNU parallel, and
// --collect to merge their results.
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/calib.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "ms_common.h"
#include "sweep.h"

const char *const ms_sweep_scale_names[MS_SWEEP_SCALES] = {"time", "heap",   "stack", "rss",
                                                           "mapped", "cpu", "churn"};

enum { O_STUB = MS_CLI_LONG, O_REPEAT, O_POLL, O_NO_PLOTS, O_JOB_LIST, O_COLLECT };

static const ms_cli_option options[] = {
    {"output", 'o', "DIR",
     "write the results, summary and plots into DIR (new,\n"
     "or empty): all of them, or nothing"},
    {"stub", O_STUB, "NAME",
     "the stub's name in the host (memstub_add_stub(NAME\n"
     "... DATA)): each point's data file goes in the\n"
     "environment variable MEMSTUB_DATA_NAME (required)"},
    MS_CLI_SCALE_OPTION("time", TIME, "LIST", "what-if: the time scales to sweep (1,0.5)"),
    MS_CLI_SCALE_OPTION("heap", HEAP, "LIST",
                        "what-if: the heap scales to sweep (1,0.75,0.5); the\n"
                        "resident and mapped memory follow each"),
    MS_CLI_SCALE_OPTION("stack", STACK, "LIST", "what-if: the stack scales to sweep"),
    MS_CLI_SCALE_OPTION("rss", RSS, "LIST", "what-if: the resident scales to sweep"),
    MS_CLI_SCALE_OPTION("mapped", MAPPED, "LIST", "what-if: the mapped scales to sweep"),
    MS_CLI_SCALE_OPTION("cpu", CPU, "LIST", "what-if: the CPU-time scales to sweep"),
    MS_CLI_SCALE_OPTION("churn", CHURN, "LIST", "what-if: the allocator-call scales to sweep"),
    {"repeat", O_REPEAT, "N", "run the host N times at every point (default 3)"},
    {"jobs", 'j', "N",
     "run N hosts at a time (default 1): for a memory-only\n"
     "study; the times of runs that share the machine are\n"
     "not comparable, and the output says so"},
    {"calibration", 'c', "FILE",
     "make the data files compensated for this host's\n"
     "profile (memstub calibrate); its identity goes in\n"
     "every row"},
    {"timing", 't', "MODE", "the timing the stub replays with (as memstub gen's)"},
    {"poll", O_POLL, "MS",
     "sample the host's RssAnon every MS milliseconds\n"
     "(default 1, at least 1)"},
    {"no-plots", O_NO_PLOTS, NULL, "write no plots (no gnuplot needed)"},
    {"job-list", O_JOB_LIST, "FILE",
     "run nothing: write DIR's data files and plan, and\n"
     "FILE, one line per run for GNU parallel (on several\n"
     "machines: docs/sweep.md); each writes its result\n"
     "into DIR/results/"},
    {"collect", O_COLLECT, NULL,
     "memstub sweep --collect DIR... -o OUT: merge the\n"
     "results of job lists' runs (any machines) into OUT:\n"
     "the table, summary and plots a sweep writes"},
    {0}};

static const ms_cli_spec spec = {
    "sweep",
    "usage: memstub sweep TRACE --stub NAME -o DIR [--heap-scale LIST] [--time-scale LIST]\n"
    "                     [--cpu-scale LIST] [--repeat N] [-j N] [options] -- HOST [ARGS...]\n"
    "       memstub sweep TRACE --stub NAME -o DIR --job-list FILE [options] -- HOST [ARGS...]\n"
    "       memstub sweep --collect DIR... -o OUT [--no-plots]\n"
    "\n"
    "Sweep what-ifs of a component across a host that embeds its stub with\n"
    "memstub_add_stub(NAME ... DATA): one stub data file per point (every\n"
    "combination of the LISTs, comma-separated scales, plus the baseline where\n"
    "every scale is 1), then HOST run once per point and repeat, the points in\n"
    "an order rotated at every repeat, with the point's data file in\n"
    "MEMSTUB_DATA_NAME. Each run is measured from outside: wall and CPU time,\n"
    "page faults (wait4), the peak RssAnon (polled from /proc), and the host's\n"
    "own figures, from its stderr lines 'metric NAME VALUE'. DIR gets\n"
    "results.csv and results.json (every run), summary.txt and summary.md\n"
    "(median and spread per point) and plot-FIGURE-SCALE.png (gnuplot).\n"
    "\n"
    "On many machines: --job-list FILE writes the runs as a job list for GNU\n"
    "parallel (parallel --sshlogin 1/h1,1/h2 --basefile DIR --return\n"
    "DIR/results < FILE), and --collect DIR... -o OUT merges their results\n"
    "(refusing runs of different calibration profiles in one summary).\n"
    "\n",
    options, 24,
    "\n"
    "The host's stdin is /dev/null and its stdout is discarded; a host that fails\n"
    "stops the sweep (exit 2) and nothing is written (a job list's line: exit 2,\n"
    "no result). docs/sweep.md has the rest.\n"};

enum { MAX_POINTS = 10000, MAX_SHOWN = 32 };

// One scale's values: a list of at most 64.
typedef struct values {
  double v[64];
  size_t n;
} values;

/* "1,0.75,0.5" into *out: 0, or -1 after a usage error naming opt. */
static int parse_list(const char *opt, const char *arg, values *out) {
  out->n = 0;
  for (const char *p = arg;; p++) {
    size_t len = strcspn(p, ",");
    char item[64];
    double v;
    snprintf(item, sizeof item, "%.*s", (int)(len < 63 ? len : 63), p);
    if (len == 0 || len > 63 || ms__parse_double(item, &v) < 0 || !isfinite(v) || v < 0)
      return ms_cli_usage("sweep", "%s: '%s' in '%s' is not a scale (a finite number >= 0; "
                          "a list is comma-separated: 1,0.5)", opt, item, arg), -1;
    for (size_t i = 0; i < out->n; i++)
      if (out->v[i] == v) return ms_cli_usage("sweep", "%s: %s given twice in '%s'", opt, item, arg), -1;
    if (out->n == 64) return ms_cli_usage("sweep", "%s: more than 64 scales", opt), -1;
    out->v[out->n++] = v;
    p += len;
    if (!*p) return 0;
  }
}

/* Every combination of the lists (a list not given: 1, or for rss and
 * mapped, the heap's), the baseline first. The points' option values into
 * s->pts[i].scale (MEMSTUB_GEN_SCALE_HEAP for a following one). 0 or -ENOMEM. */
static int make_points(ms_sweep *s, values *lists, memstub_error *err) {
  size_t total = 1;
  for (int k = 0; k < MS_SWEEP_SCALES; k++) total *= lists[k].n;
  if (total > MAX_POINTS)
    return memstub_error_set(err, -E2BIG, "the scale lists make %zu points: a sweep has at most %d",
                             total, MAX_POINTS);
  s->pts = calloc(total + 1, sizeof *s->pts);
  if (!s->pts) return memstub_error_set(err, -ENOMEM, "out of memory");
  for (int k = 0; k < MS_SWEEP_SCALES; k++)
    s->pts[0].scale[k] = k == 3 || k == 4 ? MEMSTUB_GEN_SCALE_HEAP : 1;
  s->npts = 1;
  size_t idx[MS_SWEEP_SCALES] = {0};
  for (size_t c = 0; c < total; c++) {
    ms_sweep_point *p = &s->pts[s->npts];
    int base = 1;
    for (int k = 0; k < MS_SWEEP_SCALES; k++) {
      p->scale[k] = lists[k].v[idx[k]];
      base &= p->scale[k] == 1 || p->scale[k] == MEMSTUB_GEN_SCALE_HEAP;
    }
    if (!base) s->npts++;
    // The next combination: the last scale (churn) fastest, the time scale slowest.
    for (int k = MS_SWEEP_SCALES - 1; k >= 0 && ++idx[k] == lists[k].n; k--) idx[k] = 0;
  }
  return 0;
}

/* The data file of every point into stage/data/pN.msd, from the trace; the
 * scales as applied into the points. 0, or -errno with err. */
static int make_data(ms_sweep *s, const char *stage, const memstub_profile *prof, int timing,
                     memstub_error *err) {
  memstub_trace *t = NULL;
  int rc = memstub_trace_read(s->trace, &t, err);
  int64_t threads = rc == 0 ? memstub_trace_thread_count(t) : 1;
  if (threads > 1)
    rc = memstub_error_set(err, -EINVAL, "%s: the trace has %lld threads: a data file (and so a "
                           "stub embedded with DATA) carries one thread's stub",
                           s->trace, (long long)threads);
  if (rc == 0 && memstub_trace_get_meta(t, "calls.file"))
    ms_cli_note("%s.calls: left out: the points' data files replay by size class (one block "
                "resized), not call for call (memstub gen --data makes one point's exact stub)",
                s->trace);
  for (size_t i = 0; rc == 0 && i < s->npts; i++) {
    ms_sweep_point *p = &s->pts[i];
    memstub_gen_options o;
    memstub_gen_options_init(&o);
    o.name = s->stub, o.source = s->trace, o.timing = timing;
    o.profile = prof, o.profile_path = prof ? s->profile_path : NULL;
    double *opt[MS_SWEEP_SCALES] = {&o.time_scale, &o.heap_scale,   &o.stack_scale, &o.rss_scale,
                                    &o.mapped_scale, &o.cpu_scale, &o.churn_scale};
    for (int k = 0; k < MS_SWEEP_SCALES; k++) *opt[k] = p->scale[k];
    memstub_gen *g = NULL;
    p->data_name = ms__asprintf("data/p%zu.msd", i);
    p->data = p->data_name ? ms__asprintf("%s/%s", stage, p->data_name) : NULL;
    if (!p->data) rc = memstub_error_set(err, -ENOMEM, "out of memory");
    if (rc == 0 && (rc = memstub_gen_build(t, &o, &g, err)) < 0) memstub_error_prefix(err, s->trace);
    if (rc == 0) rc = memstub_gen_emit_data(g, p->data, err);
    if (rc == 0) p->scale[3] = g->whatif.rss_scale, p->scale[4] = g->whatif.mapped_scale;
    memstub_gen_free(g);
    if (ms_cli_progress_enabled()) ms_cli_progress("memstub sweep: data files", i + 1, s->npts);
  }
  memstub_trace_free(t);
  return rc;
}

// The profile file's identity: FNV-1a 64 of its bytes, in hex.
static int profile_id(ms_sweep *s, memstub_error *err) {
  char *buf = NULL;
  size_t len = 0;
  int rc = ms__read_file(s->profile_path, &buf, &len, err);
  if (rc < 0) return rc;
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)buf[i]) * UINT64_C(0x100000001b3);
  snprintf(s->profile_id, sizeof s->profile_id, "%016llx", (unsigned long long)h);
  free(buf);
  return 0;
}

int ms_sweep_open_dir(const char *dir, int *made, char **stage, memstub_error *err) {
  *made = 0;
  *stage = NULL;
  if (mkdir(dir, 0777) == 0) {
    *made = 1;
  } else if (errno != EEXIST) {
    int e = errno;
    return memstub_error_set(err, -e, "%s: cannot create the directory: %s", dir, strerror(e));
  } else {
    DIR *d = opendir(dir);
    if (!d) {
      int e = errno;
      return memstub_error_set(err, -e, "%s: %s", dir, e == ENOTDIR ? "not a directory" : strerror(e));
    }
    struct dirent *de;
    int entries = 0;
    while ((de = readdir(d)))
      entries += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    if (entries)
      return memstub_error_set(err, -EEXIST, "%s: not empty: a sweep writes into a new or empty "
                               "directory (its results are never mixed with another's)", dir);
  }
  // The staging directory, and its data/ for the points' files.
  int e = 0;
  char *data = NULL;
  if (!(*stage = ms__asprintf("%s/.sweep-XXXXXX", dir)))
    e = ENOMEM;
  else if (!mkdtemp(*stage))
    e = errno, free(*stage), *stage = NULL;
  else if (!(data = ms__asprintf("%s/data", *stage)))
    e = ENOMEM;
  else if (mkdir(data, 0777) != 0)
    e = errno;
  free(data);
  if (!e) return 0;
  if (*stage) ms__dir_remove(*stage);
  free(*stage);
  *stage = NULL;
  if (*made) rmdir(dir);
  return memstub_error_set(err, -e, "%s: cannot write: %s", dir, strerror(e));
}

int ms_sweep_commit_dir(const char *stage, const char *dir, memstub_error *err) {
  DIR *d = opendir(stage);
  if (!d) return memstub_error_set(err, -errno, "%s: cannot read: %s", stage, strerror(errno));
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char *from = ms__asprintf("%s/%s", stage, e->d_name), *to = ms__asprintf("%s/%s", dir, e->d_name);
    int x = !from || !to ? ENOMEM : rename(from, to) != 0 ? errno : 0;
    if (x) rc = memstub_error_set(err, -x, "%s/%s: cannot put in place: %s", dir, e->d_name, strerror(x));
    free(from);
    free(to);
  }
  closedir(d);
  return rc;
}

void ms_sweep_free(ms_sweep *s) {
  // A plan read: the points' names are in its text.
  for (size_t i = 0; i < s->npts; i++) free(s->pts[i].data), free(s->plan_text ? NULL : s->pts[i].data_name);
  for (size_t i = 0; s->runs && i < s->nruns; i++) {
    for (size_t k = 0; k < s->runs[i].nm; k++) free(s->runs[i].m[k].name);
    free(s->runs[i].m);
    free(s->runs[i].host);
  }
  free(s->pts);
  free(s->runs);
  free(s->metrics);
  free(s->plan_text);
  free(s->plan_argv);
}

/* The options of --collect DIR... -o OUT [--no-plots] (ms_sweep_collect_parse). */
static int parse_collect(int argc, char **argv, const char **out, int *plots, int *first,
                         int *status) {
  ms_cli_parser p = {.spec = &spec};
  int c;
  *status = MS_EXIT_USAGE;
  while ((c = ms_cli_next(&p, argc, argv)) > 0) {
    if (c == 'o') *out = p.arg;
    else if (c == O_NO_PLOTS) *plots = 0;
    else if (c != O_COLLECT)
      return ms_cli_usage("sweep", "--collect takes DIR... -o OUT [--no-plots], not %s (the "
                          "sweep's options went into its job list)", p.opt), -1;
  }
  if (c < 0) return *status = p.status, -1;
  if (p.optind == argc) return ms_cli_usage("sweep", "--collect: no DIR given (the -o DIR of "
                                            "sweep --job-list, on each machine)"), -1;
  if (!*out || !**out) return ms_cli_usage("sweep", "--collect: missing -o OUT"), -1;
  *first = p.optind;
  return 0;
}

/* The options into s, lists and the rest: 0, or the exit status (-1 with
 * *status). */
static int parse(int argc, char **argv, ms_sweep *s, values *lists, int *timing, int *plots,
                 const char **job_list, int *status) {
  int end = 1;
  while (end < argc && strcmp(argv[end], "--") != 0) end++;
  ms_cli_parser p = {.spec = &spec};
  int c;
  int64_t n;
  *status = MS_EXIT_USAGE;
  while ((c = ms_cli_next(&p, end, argv)) > 0) {
    if (c >= MS_CLI_WHATIF && c < MS_CLI_WHATIF_END) {
      if (parse_list(p.opt, p.arg, &lists[c - MS_CLI_WHATIF]) < 0) return -1;
      continue;
    }
    switch (c) {
      case 'o': s->dir = p.arg; break;
      case O_STUB: s->stub = p.arg; break;
      case 'c': s->profile_path = p.arg; break;
      case 't': if (ms_cli_arg_timing(&p, timing) < 0) return -1; break;
      case O_NO_PLOTS: *plots = 0; break;
      case O_JOB_LIST: *job_list = p.arg; break;
      case O_COLLECT:
        return ms_cli_usage("sweep", "--collect takes DIR... -o OUT [--no-plots], without a "
                            "TRACE or -- HOST"), -1;
      case O_REPEAT:
      case 'j':
      case O_POLL:
        if (ms_cli_arg_i64(&p, &n) < 0) return -1;
        if (n < 1 || n > 100000)
          return ms_cli_usage("sweep", "%s: expected a number from 1 to 100000, found '%s'", p.opt, p.arg), -1;
        if (c == O_REPEAT) s->repeat = (size_t)n;
        if (c == 'j') s->jobs = (size_t)n;
        if (c == O_POLL) s->poll_ns = n * 1000000;
        break;
    }
  }
  if (c < 0) return *status = p.status, -1;
  if (end - p.optind > 1)
    return ms_cli_usage("sweep", "more than one TRACE given (the host's command goes after --)"), -1;
  if (p.optind == end) return ms_cli_usage("sweep", "missing TRACE"), -1;
  s->trace = argv[p.optind];
  if (end + 1 >= argc) return ms_cli_usage("sweep", "missing -- HOST [ARGS...]: the program to run"), -1;
  s->argv = argv + end + 1;
  if (!s->dir || !*s->dir) return ms_cli_usage("sweep", "missing -o DIR"), -1;
  if (!s->stub) return ms_cli_usage("sweep", "missing --stub NAME: the stub's name in the host"), -1;
  memstub_error err = {0};
  if (memstub_gen_name_check(s->stub, NULL, 0, &err) < 0)
    return ms_cli_usage("sweep", "--stub: %s", err.msg), -1;
  return 0;
}

int ms_cmd_sweep(int argc, char **argv) {
  // The other forms: a run of a job list (not in --help), and --collect.
  if (argc > 1 && strcmp(argv[1], "--run-one") == 0) return ms_sweep_run_one_cmd(argc, argv);
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--collect") == 0) return ms_sweep_collect_cmd(argc, argv, parse_collect);
  ms_sweep s = {.repeat = 3, .jobs = 1, .poll_ns = 1000000};
  const char *job_list = NULL;
  values lists[MS_SWEEP_SCALES];
  for (int k = 0; k < MS_SWEEP_SCALES; k++)
    lists[k] = (values){{k == 3 || k == 4 ? MEMSTUB_GEN_SCALE_HEAP : 1}, 1};
  int timing = MEMSTUB_TIMING_NONE, plots = 1, status;
  if (parse(argc, argv, &s, lists, &timing, &plots, &job_list, &status) < 0) return status;
  if (job_list && *job_list == '\0') return ms_cli_usage("sweep", "--job-list: an empty FILE");
  if (ms_cli_refuse_stub_file("sweep", s.trace)) return MS_EXIT_USAGE;
  snprintf(s.var, sizeof s.var, "%s%s", MEMSTUB_DATA_ENV_PREFIX, s.stub);
  struct utsname u;
  snprintf(s.host, sizeof s.host, "%s", uname(&u) == 0 ? u.nodename : "unknown");
  memstub_error err = {0};
  memstub_profile prof;
  if (s.profile_path && ms_cli_load_profile(s.profile_path, &prof) != 0) return MS_EXIT_USAGE;
  int rc = s.profile_path ? profile_id(&s, &err) : 0;
  if (rc == 0 && plots && !job_list) rc = ms_sweep_plot_check(&err);
  if (rc == 0) rc = make_points(&s, lists, &err);
  for (int k = 0; k < MS_SWEEP_SCALES; k++) s.swept[k] = lists[k].n > 1;
  // The runs: every repeat runs every point, in an order rotated by the repeat.
  s.nruns = s.npts * s.repeat;
  if (rc == 0 && !(s.runs = calloc(s.nruns, sizeof *s.runs)))
    rc = memstub_error_set(&err, -ENOMEM, "out of memory");
  for (size_t r = 0; rc == 0 && r < s.repeat; r++)
    for (size_t i = 0; i < s.npts; i++) {
      ms_sweep_run *run = &s.runs[r * s.npts + i];
      run->point = (i + r) % s.npts, run->repeat = r, run->order = r * s.npts + i;
    }
  int made = 0;
  char *stage = NULL;
  // An interrupt from here on removes what the sweep wrote, then ends it.
  struct sigaction old_actions[MS_CLI_STOP_SIGNALS];
  ms_cli_stop_catch(old_actions);
  if (rc == 0) rc = ms_sweep_open_dir(s.dir, &made, &stage, &err);
  if (rc == 0) rc = make_data(&s, stage, s.profile_path ? &prof : NULL, timing, &err);
  if (rc == 0 && job_list) {
    // Nothing run here: the plan and the job list, for GNU parallel.
    ms__afile af;
    int open = (rc = ms_sweep_jobs_write(&s, stage, job_list, &af, &err)) == 0;
    if (rc == 0 && ms_cli_stop_caught)
      rc = memstub_error_set(&err, -EINTR, "stopped by signal %d", (int)ms_cli_stop_caught);
    if (open && rc < 0) ms__afile_abort(&af);
    if (open && rc == 0) rc = ms__afile_commit(&af, &err);
    // The list in place first; should DIR then fail, the list goes again.
    if (rc == 0 && (rc = ms_sweep_commit_dir(stage, s.dir, &err)) < 0) unlink(job_list);
    if (rc == 0)
      ms_cli_note("sweep: %zu run%s (%zu point%s x %zu repeat%s) in %s, for GNU parallel: parallel "
                  "< %s (on several machines: docs/sweep.md); then memstub sweep --collect %s -o OUT",
                  s.nruns, s.nruns == 1 ? "" : "s", s.npts, s.npts == 1 ? "" : "s", s.repeat,
                  s.repeat == 1 ? "" : "s", job_list, job_list, s.dir);
  } else if (rc == 0) {
    ms_cli_note("sweep: %zu point%s x %zu repeat%s = %zu run%s of %s, %s", s.npts,
                s.npts == 1 ? "" : "s", s.repeat, s.repeat == 1 ? "" : "s", s.nruns,
                s.nruns == 1 ? "" : "s", s.argv[0],
                s.jobs == 1 ? "one at a time" : "several at a time (-j): times not comparable");
    rc = ms_sweep_run_all(&s, ms_cli_progress_enabled(), &err);
    if (rc == 0) rc = ms_sweep_write_all(&s, stage, plots, &err);
    if (rc == 0 && ms_cli_stop_caught)
      rc = memstub_error_set(&err, -EINTR, "stopped by signal %d", (int)ms_cli_stop_caught);
    if (rc == 0) rc = ms_sweep_commit_dir(stage, s.dir, &err);
  }
  if (stage) ms__dir_remove(stage);
  if (rc < 0 && made) ms__dir_remove(s.dir);
  if (rc == 0 && !job_list) {
    // The summary on stdout too, unless it runs to thousands of lines.
    if (s.npts <= MAX_SHOWN) ms_sweep_summary(&s, 0, stdout);
    ms_cli_note("sweep: results in %s (results.csv, results.json, summary.txt, summary.md%s, "
                "data/)", s.dir, plots ? ", plot-*.png" : "");
  }
  free(stage);
  ms_sweep_free(&s);
  if (rc < 0 && !ms_cli_stop_caught) ms_cli_fail(&err);
  // Last: a stop signal caught ends memstub here, with nothing left behind.
  return ms_cli_stop_release(old_actions, rc < 0 ? MS_EXIT_USAGE : MS_EXIT_OK);
}
