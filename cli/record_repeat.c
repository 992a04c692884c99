// memstub record --repeat and --reference (issue 27 item 3; docs/recording.md,
// "Repeated recordings and reference runs"): several recordings, the one of
// median duration kept; runs of the program without the recorder, measured
// from outside like the recordings, for memstub gen to fit the stub's
// timeline to (traces/timeline.h).
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/trace.h"
#include "memstub/work.h"
#include "ms_common.h"
#include "ms_spawn.h"
#include "record.h"
#include "timeline.h"

extern char **environ;

int ms_record_inner;
rec_run ms_record_last;

// The files of one recording: the trace and its side files.
static const char *const side[] = {"", ".sites", ".generations", ".calls"};
enum { ASIDE, BACK, DROP };

/* Recording i's files moved aside (beside the trace, as TRACE.repeatI and
 * TRACE.repeatI.sites ...), back to the trace's names, or deleted from
 * aside. */
static void files(const char *abs, int i, int how) {
  for (size_t k = 0; k < MS__ARRAY_SIZE(side); k++) {
    char *a = ms__asprintf("%s%s", abs, side[k]), *b = ms__asprintf("%s.repeat%d%s", abs, i, side[k]);
    if (a && b) {
      if (how == ASIDE) rename(a, b);
      else if (how == BACK) rename(b, a);
      else unlink(b);
    }
    free(a);
    free(b);
  }
}

/* Standard input for several runs: rewound to *off before each when it is
 * a file; a pipe or socket would feed only the first. 0, or -1 after a usage
 * error. */
static int stdin_check(off_t *off) {
  struct stat st;
  *off = lseek(0, 0, SEEK_CUR);
  if (*off >= 0 || fstat(0, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
    return 0;
  ms_cli_usage("record", "--repeat and --reference run PROGRAM several times: its standard input "
                         "is a pipe, which only the first run would read; give a file (< FILE)");
  return -1;
}

// A copy of the environment as it is now (the recordings change it).
static char **env_copy(void) {
  size_t n = 0;
  while (environ[n]) n++;
  char **e = calloc(n + 1, sizeof *e);
  for (size_t i = 0; e && i < n; i++)
    if (!(e[i] = ms__strdup(environ[i]))) {
      while (i--) free(e[i]);
      free(e);
      return NULL;
    }
  return e;
}

static void env_free(char **e) {
  for (size_t i = 0; e && e[i]; i++) free(e[i]);
  free(e);
}

/* The environment env with name set to value (replaced, or added): a new
 * array of copies, NULL when out of memory. */
static char **env_with(char **env, const char *name, const char *value) {
  size_t n = 0, len = strlen(name);
  while (env[n]) n++;
  char **e = calloc(n + 2, sizeof *e);
  if (!e) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!(strncmp(env[i], name, len) == 0 && env[i][len] == '=') && !(e[k++] = ms__strdup(env[i])))
      goto fail;
  if ((e[k] = ms__asprintf("%s=%s", name, value))) return e;
fail:
  env_free(e);
  return NULL;
}

/* A reference run's environment when the recording covers regions only
 * (ms_record_regions): env with the recorder loaded to time them
 * (recorder/times.c: the allocator calls pass through, nothing is
 * recorded), into the file times; whole: the whole run is the region (the
 * run that reads the clock at a whole run's calls). NULL when out of
 * memory. */
static char **times_env(const rec_opts *o, char **env, const char *lib, const char *times,
                        int whole) {
  const char *old = NULL;
  for (size_t i = 0; env[i]; i++)
    if (strncmp(env[i], "LD_PRELOAD=", 11) == 0) old = env[i] + 11;
  char occ[32], pid[32], *pre = ms__asprintf("%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
  snprintf(occ, sizeof occ, "%lld", o->occ);
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  const char *const set[][2] = {{"LD_PRELOAD", pre},           {MS__REC_ENV_TIMES, times},
                                {MS__REC_ENV_THREAD, o->thread}, {MS__REC_ENV_OCCURRENCE, occ},
                                {MS__REC_ENV_FUNCTIONS, o->functions}, {MS__REC_ENV_PARENT, pid},
                                {MS__REC_ENV_TIMES_WHOLE, whole ? "1" : "0"}};
  char **e = pre ? env : NULL;
  for (size_t i = 0; e && i < MS__ARRAY_SIZE(set); i++) {
    char **next = env_with(e, set[i][0], set[i][1]);
    if (e != env) env_free(e);
    e = next;
  }
  free(pre);
  return e;
}

/* The region times a reference run wrote into path (recorder/times.c), and
 * the file removed: 0 with out->region_* (and out->curve when the run timed
 * its calls); -1 when there are none. */
static int times_read(const char *path, rec_run *out) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long long occ, wall, cpu, calls;
  int n = fscanf(f, "occurrences %lld span_wall_ns %lld span_cpu_ns %lld", &occ, &wall, &cpu);
  char *line = NULL;
  size_t cap = 0;
  if (n == 3 && occ == 1 && fscanf(f, " calls %lld ", &calls) == 1 &&
      getline(&line, &cap, f) > 6 && strncmp(line, "curve ", 6) == 0) {
    line[strcspn(line, "\n")] = '\0';
    out->curve = ms__asprintf("%lld %lld %s", calls, wall, line + 6);
  }
  free(line);
  fclose(f);
  unlink(path);
  if (n != 3 || occ <= 0 || wall <= 0 || cpu < 0) {
    free(out->curve);
    out->curve = NULL;
    return -1;
  }
  out->region_occ = occ, out->region_wall_ns = wall, out->region_cpu_ns = cpu;
  return 0;
}

/* One run of PROGRAM without the recorder, in environment env, measured into
 * *out. 0; 1 when it failed, 3 when it was interrupted (SIGINT, SIGQUIT:
 * said); or the exit status when it cannot run. With times set (env loads
 * the recorder to time the regions: times_env), their times into
 * out->region_*, else those -1. */
static int reference_run(const rec_opts *o, char **env, int k, const char *times, rec_run *out) {
  ms__spawn_opts so;
  ms__spawn_opts_init(&so);
  so.like_system = 1;
  so.env = env;
  ms__spawn_result r;
  memstub_error err = {0};
  fflush(NULL);
  if (times) unlink(times);
  int rc = ms__spawn_run(o->prog, &so, &r, &err);
  *out = (rec_run){r.wall_ns, r.user_ns + r.sys_ns, -1, -1, -1, NULL, -1, -1};
  if (times) times_read(times, out);
  char how[96];
  ms__spawn_describe(&r, how, sizeof how);
  int failed = !r.exited || r.code != 0, stop = !r.exited && (r.sig == SIGINT || r.sig == SIGQUIT);
  ms__spawn_result_free(&r);
  if (rc < 0) return ms_cli_fail(&err);
  char what[96];  // run k of the reference's, or the one more of a whole run's clock
  if (k <= o->reference) snprintf(what, sizeof what, "reference run %d of %lld", k, o->reference);
  else snprintf(what, sizeof what, "the run that reads the clock at the calls");
  if (stop) {
    ms_cli_warn("%s: %s ended with %s: stopped here", what, o->prog[0], how);
    return 3;
  }
  if (failed && k <= o->reference)
    ms_cli_warn("%s: %s ended with %s: no reference is written (a run without the recorder must "
                "end as the recordings did)",
                what, o->prog[0], how);
  else if (failed)
    ms_cli_warn("%s: %s ended with %s: the reference is written without it (memstub gen takes "
                "the recorder's cost out evenly per call)",
                what, o->prog[0], how);
  return failed;
}

/* The rows of the trace at abs: their span (its duration) into *wall, and the CPU time in
 * them into *cpu, every thread's (its cpu_ns from its first row to its
 * last) summed. 0, or -1 (said) when the trace does not read; *cpu -1 when
 * it has no cpu_ns column. */
static int rows_figures(const char *abs, long long *wall, long long *cpu) {
  memstub_trace *t = NULL;
  memstub_error err = {0};
  if (memstub_trace_read(abs, &t, &err) < 0) {
    ms_cli_fail(&err);
    return -1;
  }
  int c = memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN), th = memstub_trace_column(t, "thread");
  *wall = t->n ? t->pts[t->n - 1].time_ns - t->pts[0].time_ns : 0;
  *cpu = -1;
  int64_t nth = 1;
  for (size_t i = 0; th >= 0 && i < t->n; i++) {
    int64_t k = memstub_trace_extra_row(t, i)[th];
    if (k >= nth) nth = k + 1;
  }
  // A thread's first and last cpu_ns (the trace checked: numbers from 0, each thread's never decreasing).
  int64_t *first = c >= 0 && nth <= (1 << 20) ? malloc((size_t)nth * 2 * sizeof *first) : NULL;
  if (first) {
    int64_t *last = first + nth;
    for (int64_t k = 0; k < nth; k++) first[k] = -1, last[k] = 0;
    for (size_t i = 0; i < t->n; i++) {
      const int64_t *e = memstub_trace_extra_row(t, i);
      int64_t k = th >= 0 ? e[th] : 0;
      if (k < 0) continue;
      if (first[k] < 0) first[k] = e[c];
      last[k] = e[c];
    }
    long long sum = 0;
    for (int64_t k = 0; k < nth; k++)
      if (first[k] >= 0) sum += last[k] - first[k];
    *cpu = sum;
    free(first);
  }
  memstub_trace_free(t);
  return 0;
}

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

// The median of v[0..n) (the mean of the middle two for an even n), and its range.
static long long median(const long long *v, long long n, long long *lo, long long *hi) {
  long long *s = malloc((size_t)n * sizeof *s);
  if (!s) return v[0];
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_ll);
  long long m = n % 2 ? s[n / 2] : s[n / 2 - 1] + (s[n / 2] - s[n / 2 - 1]) / 2;
  *lo = s[0];
  *hi = s[n - 1];
  free(s);
  return m;
}

/* lines ("# key: value\n" ...) into the trace at abs, before its header row,
 * atomically. 0, or the exit status after saying why not. */
static int add_meta(const char *abs, const char *out, const char *lines) {
  char *buf = NULL;
  size_t len = 0;
  memstub_error err = {0};
  if (ms__read_file(abs, &buf, &len, &err) < 0) return ms_cli_fail(&err);
  size_t at = 0;  // the header row: the first line neither blank nor a comment
  while (at < len) {
    size_t e = at;
    while (e < len && buf[e] != '\n') e++;
    size_t s = at;
    while (s < e && (buf[s] == ' ' || buf[s] == '\t' || buf[s] == '\r')) s++;
    if (s < e && buf[s] != '#') break;
    at = e < len ? e + 1 : e;
  }
  ms__afile af;
  int rc = ms__afile_open(&af, abs, &err);
  if (rc == 0) {
    fwrite(buf, 1, at, af.f);
    fputs(lines, af.f);
    fwrite(buf + at, 1, len - at, af.f);
    rc = ms__afile_commit(&af, &err);
  }
  free(buf);
  if (rc < 0) {
    memstub_error_prefix(&err, out);
    return ms_cli_fail(&err);
  }
  return 0;
}

// Whether a reference run timed a region (and so the recording has them).
static int regions_timed(long long nref, const rec_run *ref) {
  for (long long i = 0; i < nref; i++)
    if (ref[i].region_occ > 0) return 1;
  return 0;
}

/* The clock at the calls of the nref reference runs (one occurrence each)
 * into the metadata at m + *n: each run's times as shares of its span,
 * averaged over the runs that counted the same calls at the same stride as
 * the run nearest the median span wm, times wm (one run's shape is that
 * run's disturbance too). Nothing when no run read it. */
static void curve_figures(char *m, size_t cap, size_t *n, long long nref, const rec_run *ref,
                          long long wm) {
  long long best = -1;
  for (long long i = 0; i < nref; i++)
    if (ref[i].curve &&
        (best < 0 || llabs(ref[i].region_wall_ns - wm) < llabs(ref[best].region_wall_ns - wm)))
      best = i;
  if (best < 0) return;
  int64_t h[3], *w, nw;
  if (ms__timeline_curve_parse(ref[best].curve, &h[0], &h[1], &h[2], &w, &nw, NULL) < 0) return;
  double *sum = calloc((size_t)nw, sizeof *sum);
  long long used = 0;
  for (long long i = 0; sum && i < nref; i++) {
    int64_t hi[3], *wi, ni;
    if (!ref[i].curve ||
        ms__timeline_curve_parse(ref[i].curve, &hi[0], &hi[1], &hi[2], &wi, &ni, NULL) < 0)
      continue;
    if (hi[0] == h[0] && hi[2] == h[2] && ni == nw) {
      for (int64_t j = 0; j < nw; j++) sum[j] += (double)wi[j] / (double)hi[1];
      used++;
    }
    free(wi);
  }
  *n += (size_t)snprintf(m + *n, cap - *n, "# %s: %lld %lld %lld", MS__TL_REF_CURVE,
                         (long long)h[0], wm, (long long)h[2]);
  for (int64_t j = 0; j < nw; j++) {
    long long v = sum && used ? llround(sum[j] / (double)used * (double)wm) : (long long)w[j];
    *n += (size_t)snprintf(m + *n, cap - *n, " %lld", v < wm ? v : wm);
  }
  *n += (size_t)snprintf(m + *n, cap - *n, "\n");
  free(sum), free(w);
}

/* A whole run's clock at the calls (the runs clk[0..nref) that read it)
 * into the metadata at m + *n: their curves averaged, times their median
 * span. */
static void whole_clock(char *m, size_t cap, size_t *n, long long nref, const rec_run *clk) {
  long long *s = malloc((size_t)nref * sizeof *s), k = 0, lo, hi;
  for (long long i = 0; s && i < nref; i++)
    if (clk[i].curve && clk[i].region_occ == 1) s[k++] = clk[i].region_wall_ns;
  if (k > 0) curve_figures(m, cap, n, nref, clk, median(s, k, &lo, &hi));
  free(s);
}

/* The regions' span in the nref reference runs, when every run timed the
 * same number of occurrences, into the metadata at m + *n (of cap bytes,
 * room for any run's curve); *rw its median wall time, -1 when there is
 * none. With one occurrence, the clock at the calls of the run whose span
 * is nearest the median. */
static void region_figures(char *m, size_t cap, size_t *n, long long nref, const rec_run *ref,
                           long long *rw) {
  *rw = -1;
  for (long long i = 0; i < nref; i++)
    if (ref[i].region_occ <= 0 || ref[i].region_occ != ref[0].region_occ) return;
  long long *w = malloc((size_t)nref * sizeof *w), *c = malloc((size_t)nref * sizeof *c);
  if (w && c) {
    for (long long i = 0; i < nref; i++) w[i] = ref[i].region_wall_ns, c[i] = ref[i].region_cpu_ns;
    long long wlo, whi, clo, chi, wm = median(w, nref, &wlo, &whi), cm = median(c, nref, &clo, &chi);
    *n += (size_t)snprintf(m + *n, cap - *n,
                           "# %s: %lld\n# %s: %lld\n# %s: %lld %lld\n# %s: %lld\n# %s: %lld %lld\n",
                           MS__TL_REF_REGION_OCC, ref[0].region_occ, MS__TL_REF_REGION_WALL, wm,
                           MS__TL_REF_REGION_WALL_RANGE, wlo, whi, MS__TL_REF_REGION_CPU, cm,
                           MS__TL_REF_REGION_CPU_RANGE, clo, chi);
    *rw = wm;
    if (ref[0].region_occ == 1) curve_figures(m, cap, n, nref, ref, wm);
  }
  free(w), free(c);
}

/* The figures for the kept recording k of nrec (durations dur) and the nref
 * reference runs into its metadata; notes on them unless quiet. 0 or the
 * exit status. */
static int write_figures(const rec_opts *o, const char *abs, long long nrec, int k,
                         const long long *dur, const rec_run *rec, long long nref,
                         const rec_run *ref, const rec_run *clk) {
  size_t cap = 2048 + (size_t)nrec * 24;
  // Room for a curve of as many points as the longest, each up to 20 digits.
  for (long long i = 0; i < nref; i++)
    if (ref[i].curve) cap += 21 * strlen(ref[i].curve) / 2 + 64;
  for (long long i = 0; clk && i < nref; i++)
    if (clk[i].curve) cap += 21 * strlen(clk[i].curve) / 2 + 64;
  char *m = malloc(cap), d[32], e[32], f[32], g[32];
  if (!m) return ms_cli_error("out of memory");
  size_t n = 0;
  if (nrec > 1) {
    n += (size_t)snprintf(m + n, cap - n, "# %s: %lld\n# %s: %d\n# %s:", MS__TL_REP_RECORDINGS,
                          nrec, MS__TL_REP_KEPT, k + 1, MS__TL_REP_DURATIONS);
    for (long long i = 0; i < nrec; i++) n += (size_t)snprintf(m + n, cap - n, " %lld", dur[i]);
    n += (size_t)snprintf(m + n, cap - n, "\n");
  }
  n += (size_t)snprintf(m + n, cap - n, "# %s: %lld\n# %s: %lld\n", MS__TL_OUT_WALL,
                        rec[k].wall_ns, MS__TL_OUT_CPU, rec[k].cpu_ns);
  if (rec[k].rows_cpu_ns >= 0)
    n += (size_t)snprintf(m + n, cap - n, "# %s: %lld\n# %s: %lld\n", MS__TL_ROWS_WALL, dur[k],
                          MS__TL_ROWS_CPU, rec[k].rows_cpu_ns);
  long long wlo = 0, whi = 0, clo = 0, chi = 0, wm = 0, cm = 0, rw = -1;
  if (nref > 0) {
    long long *w = malloc((size_t)nref * sizeof *w), *c = malloc((size_t)nref * sizeof *c);
    if (!w || !c) {
      free(w), free(c), free(m);
      return ms_cli_error("out of memory");
    }
    for (long long i = 0; i < nref; i++) w[i] = ref[i].wall_ns, c[i] = ref[i].cpu_ns;
    wm = median(w, nref, &wlo, &whi);
    cm = median(c, nref, &clo, &chi);
    free(w), free(c);
    n += (size_t)snprintf(m + n, cap - n,
                          "# %s: %lld\n# %s: %lld\n# %s: %lld %lld\n# %s: %lld\n# %s: %lld %lld\n",
                          MS__TL_REF_RUNS, nref, MS__TL_REF_WALL, wm, MS__TL_REF_WALL_RANGE, wlo,
                          whi, MS__TL_REF_CPU, cm, MS__TL_REF_CPU_RANGE, clo, chi);
    region_figures(m, cap, &n, nref, ref, &rw);
    if (clk) whole_clock(m, cap, &n, nref, clk);
  }
  int rc = add_meta(abs, o->out, m);
  free(m);
  if (rc != 0 || o->quiet) return rc;
  if (nrec > 1) {
    char *list = ms__asprintf("%s", "");
    for (long long i = 0; list && i < nrec; i++) {
      char *l = ms__asprintf("%s%s%s", list, i ? ", " : "", ms__fmt_ns(dur[i], d, sizeof d));
      free(list);
      list = l;
    }
    ms_cli_note("--repeat %lld: kept recording %d (median duration %s); durations in run order: %s",
                nrec, k + 1, ms__fmt_ns(dur[k], e, sizeof e), list ? list : "?");
    free(list);
  }
  if (nref > 0) {
    char w1[32], w2[32], c1[32], c2[32];
    ms_cli_note("--reference %lld: %s without the recorder: wall %s [%s-%s], CPU %s [%s-%s]; the "
                "recording: wall %s, CPU %s (memstub gen fits the stub's timeline to them)",
                nref, o->prog[0], ms__fmt_ns(wm, d, sizeof d), ms__fmt_ns(wlo, w1, sizeof w1),
                ms__fmt_ns(whi, w2, sizeof w2), ms__fmt_ns(cm, e, sizeof e),
                ms__fmt_ns(clo, c1, sizeof c1), ms__fmt_ns(chi, c2, sizeof c2),
                ms__fmt_ns(rec[k].wall_ns, f, sizeof f), ms__fmt_ns(rec[k].cpu_ns, g, sizeof g));
    int clocked = 0;  // a region's runs read their clock at the calls (curve_figures)
    for (long long i = 0; i < nref; i++) clocked |= ref[i].curve != NULL && ref[0].region_occ == 1;
    if (rw >= 0)
      ms_cli_note("--reference %lld: the regions the trace covers, timed in those runs (the "
                  "recorder loaded, not recording): %s from the first one's begin to the last "
                  "one's end (memstub gen sets the trace's totals to theirs%s)",
                  nref, ms__fmt_ns(rw, d, sizeof d),
                  clocked ? ", and places its rows by the runs' clock at the calls" : "");
    else if (clk)
      ms_cli_note("--reference %lld: and after each, one run more with the recorder loaded, not "
                  "recording, to read its clock at the main thread's allocator calls (memstub gen "
                  "places the rows by their average)",
                  nref);
    else if (regions_timed(nref, ref))
      ms_cli_note("--reference %lld: the regions the trace covers were not timed the same in "
                  "every run (none, or another number of occurrences): memstub gen fits the "
                  "whole runs' difference per allocator call",
                  nref);
  }
  return 0;
}

int ms_record_repeat(int argc, char **argv, const rec_opts *o) {
  long long nrec = o->repeat > 1 ? o->repeat : 1, nref = o->reference;
  off_t in;
  if (stdin_check(&in) < 0) return MS_EXIT_USAGE;
  char abs[PATH_MAX], cwd[PATH_MAX];
  if (o->out[0] != '/' && !getcwd(cwd, sizeof cwd))
    return ms_cli_error("cannot get the current directory: %s", strerror(errno));
  if ((size_t)snprintf(abs, sizeof abs, "%s%s%s", o->out[0] == '/' ? "" : cwd,
                       o->out[0] == '/' ? "" : "/", o->out) >= sizeof abs)
    return ms_cli_error("%s: path too long", o->out);
  struct stat ls;
  if (nrec > 1 && lstat(abs, &ls) == 0 && S_ISLNK(ls.st_mode))
    return ms_cli_usage("record", "--repeat: %s is a symbolic link; the recordings are moved aside "
                                  "and back by name: give the file it names",
                        o->out);
  char **env = env_copy();
  const char *pre = getenv("LD_PRELOAD");
  char *preload = pre ? ms__strdup(pre) : NULL;
  long long *dur = calloc((size_t)nrec, sizeof *dur);
  rec_run *rec = calloc((size_t)nrec, sizeof *rec), *ref = calloc((size_t)(2 * nref + 1), sizeof *ref);
  if (!env || (pre && !preload) || !dur || !rec || !ref) {
    env_free(env), free(preload), free(dur), free(rec), free(ref);
    return ms_cli_error("out of memory");
  }
  int st = MS_EXIT_OK, done = 0, failed = -1;  // recordings done; the one that failed
  long long refs = 0;
  int ref_failed = 0;  // a run without the recorder failed (no reference) or was interrupted
                       // (the runs so far): the exit status 1
  // A recording of regions: the reference runs time them too (recorder/times.c).
  // A whole run: after each reference run, one run more reads its clock at the calls
  // (into ref[nref + i]); the reference runs stay pure.
  char lib[PATH_MAX], *times = NULL;
  char **tenv = NULL, **wenv = NULL;
  int regions = nref > 0 && ms_record_regions(o);
  if (nref > 0) {
    if ((st = ms_record_lib(lib)) != 0) {
      env_free(env), free(preload), free(dur), free(rec), free(ref);
      return st;
    }
    times = ms__asprintf("%s.times", abs);
    if (regions) tenv = times ? times_env(o, env, lib, times, 0) : NULL;
    else wenv = times ? times_env(o, env, lib, times, 1) : NULL;
    if (!tenv && !wenv) {
      env_free(env), free(preload), free(dur), free(rec), free(ref), free(times);
      return ms_cli_error("out of memory");
    }
  }
  for (long long i = 0; i < (nrec > nref ? nrec : nref) && st == MS_EXIT_OK; i++) {
    // A reference run first: the first run of all pays for cold caches.
    if (i < nref && !ref_failed) {
      if (in >= 0) lseek(0, in, SEEK_SET);
      st = reference_run(o, tenv ? tenv : env, (int)i + 1, tenv ? times : NULL, &ref[i]);
      if (st == 1) ref_failed = 1, refs = 0, st = MS_EXIT_OK;  // said: no reference written
      else if (st == 0) refs++;
      if (st == 0 && wenv && !ref_failed) {
        if (in >= 0) lseek(0, in, SEEK_SET);
        st = reference_run(o, wenv, (int)(nref + i + 1), times, &ref[nref + i]);
        if (st == 1) {  // said: that run's clock is left out
          free(ref[nref + i].curve);
          ref[nref + i].curve = NULL;
          st = MS_EXIT_OK;
        }
      }
      if (st == 3) {  // interrupted: the runs so far
        st = MS_EXIT_OK;
        ref_failed = 1;
        break;
      }
      if (st != MS_EXIT_OK) break;
    }
    if (i >= nrec) continue;
    if (in >= 0) lseek(0, in, SEEK_SET);
    if (preload) setenv("LD_PRELOAD", preload, 1);  // as it was, not the last run's
    else unsetenv("LD_PRELOAD");
    ms_record_inner = 1;
    st = ms_cmd_record(argc, argv);
    ms_record_inner = 0;
    rec[i] = ms_record_last;
    if (st == MS_EXIT_OK && rows_figures(abs, &dur[i], &rec[i].rows_cpu_ns) < 0) st = MS_EXIT_USAGE;
    if (st != MS_EXIT_OK) {
      failed = (int)i;
      break;
    }
    files(abs, (int)i, ASIDE);
    done++;
  }
  int kept = -1;
  if (failed >= 0) {
    ms_cli_warn("%s: recording %d of %lld failed: its trace is left as a single recording leaves "
                "it, the others are deleted",
                o->out, failed + 1, nrec);
  } else if (done > 0) {
    // The recording of median duration (for an even count, the longer of the middle two).
    int *idx = malloc((size_t)done * sizeof *idx);
    for (int i = 0; idx && i < done; i++) {
      int j = i;
      for (; j > 0 && dur[idx[j - 1]] > dur[i]; j--) idx[j] = idx[j - 1];
      idx[j] = i;
    }
    kept = idx ? idx[done / 2] : 0;
    free(idx);
    files(abs, kept, BACK);
  }
  for (int i = 0; i < done; i++)
    if (i != kept) files(abs, i, DROP);
  if (kept >= 0) {
    int rc = write_figures(o, abs, done, kept, dur, rec, refs, ref,
                           wenv && refs == nref ? ref + nref : NULL);
    // Its warnings and checks even with -q, as a single recording's (the
    // recordings themselves were not summarised: cmd_record.c after_run).
    if (rc == 0) rc = ms_record_summarise(o, abs);
    if (rc == 0) ms_record_children_warn(o, &rec[kept]);
    if (rc != 0) st = rc;
  }
  if (st == MS_EXIT_OK && ref_failed) st = MS_EXIT_CHECK;
  if (preload) setenv("LD_PRELOAD", preload, 1);
  for (long long i = 0; i < 2 * nref; i++) free(ref[i].curve);
  env_free(env), env_free(tenv), env_free(wenv), free(times), free(preload), free(dur), free(rec), free(ref);
  return st;
}
