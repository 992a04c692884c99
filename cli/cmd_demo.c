// memstub demo: the whole pipeline on a bundled trace (or the user's), each
// step run as the memstub command a user would type, then a fidelity summary.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ms_spawn.h"
#include "memstub/calib.h"
#include "memstub/compare.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "ms_common.h"
#include "prim.h"


enum { O_PROFILE = MS_CLI_LONG, O_RECALIBRATE, O_TIMING, O_CHECK, O_NO_FIGURE };

static const ms_cli_option options[] = {
    {"output", 'o', "DIR", "where the files go (default: ./memstub-demo)"},
    {"profile", O_PROFILE, "FILE", "use this calibration profile instead of calibrating"},
    {"recalibrate", O_RECALIBRATE, NULL, "calibrate even when DIR/host.profile is fresh"},
    {"timing", O_TIMING, "MODE",
     "online (default): deadlines, each row started early by\n"
     "the work the replay learns on this host; deadline:\n"
     "deadlines moved by the profile's predicted work; usleep:\n"
     "the paper's relative sleeps"},
    {"check", O_CHECK, "SPEC",
     "fail (exit 1) unless the replay meets SPEC, as for\n"
     "memstub compare --check"},
    {"no-figure", O_NO_FIGURE, NULL, "do not print the text figure"},
    {0}};

static const ms_cli_spec spec = {
    "demo",
    "usage: memstub demo [TRACE] [-o DIR] [--profile FILE] [--recalibrate]\n"
    "                    [--timing online|deadline|usleep] [--check SPEC] [--no-figure]\n"
    "\n"
    "Run the whole pipeline on TRACE (default: the bundled 4.8 s synthetic trace,\n"
    "traces/samples/synthetic-4.8s.csv) and show how faithfully the stub replays it:\n"
    "\n"
    "  1. calibrate  memstub calibrate --quick -o DIR/host.profile\n"
    "                (skipped when DIR/host.profile was made on this host, by this\n"
    "                build, in the last 24 hours; or give --profile)\n"
    "  2. gen        memstub gen TRACE --calibration PROFILE --timing MODE\n"
    "                -o DIR/memuse.h\n"
    "  3. build      memstub build DIR/memuse.h -o DIR/stub\n"
    "  4. replay     DIR/stub --timing MODE --measure DIR/replayed.csv\n"
    "  5. compare    memstub compare TRACE DIR/replayed.csv (DIR/compare.txt, .json)\n"
    "  6. plot       memstub plot TRACE DIR/replayed.csv -o DIR/figure3.png (.svg, .txt)\n"
    "\n"
    "Then it prints where each file is, a fidelity summary beside the paper's\n"
    "figures, and the figure as text.\n"
    "\n",
    options, 24,
    "\nExit status: 0 done; 1 a --check failed; 2 bad usage, bad input or a step failed.\n"};

typedef struct demo {
  const char *dir;
  const char *self;  // this executable
  int step, steps;
} demo;

static char *path_in(const demo *d, const char *name) {
  char *p = ms__asprintf("%s/%s", d->dir, name);
  if (!p) {
    ms_cli_error("out of memory");
    exit(MS_EXIT_USAGE);
  }
  return p;
}

/* Run argv (stdout to out_path when given), announcing it as step `what`,
 * a new step unless same_step (a second command of the same step).
 * Returns the command's exit status, or -1 when it could not be run. */
static int run(demo *d, const char *what, char *const argv[], const char *out_path,
               int same_step) {
  if (!same_step) d->step++;
  printf("%s[%d/%d] %s:", same_step ? "" : "\n", d->step, d->steps, what);
  for (int i = 0; argv[i]; i++) printf(" %s", i == 0 && argv[0] == d->self ? "memstub" : argv[i]);
  if (out_path) printf(" > %s", out_path);
  printf("\n");
  fflush(stdout);
  ms__spawn_opts so;
  ms__spawn_opts_init(&so);
  int fd = -1;
  if (out_path && (fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0) {
    ms_cli_error("step %d (%s): %s: %s", d->step, what, out_path, strerror(errno));
    return -1;
  }
  if (fd >= 0) so.out = fd;
  ms__spawn_result r = {0};
  memstub_error err = {0};
  // A step (calibrating this host is the longest) takes a minute or two.
  int rc = ms__spawn_limit(&so, 600, 0, 0, &err);
  if (rc == 0) rc = ms__spawn_run(argv, &so, &r, &err);
  if (fd >= 0) close(fd);
  int code = r.exited ? r.code : -1, sig = r.sig;
  ms__spawn_result_free(&r);
  if (rc < 0) {  // not started, or its status lost (ECHILD when SIGCHLD is ignored)
    ms_cli_error("step %d (%s): %s", d->step, what, err.msg);
    return -1;
  }
  if (code < 0) {
    ms_cli_error("step %d (%s) was killed by signal %d", d->step, what, sig);
    return -1;
  }
  return code;
}

/* Whether path is a profile this host can reuse: readable, made on this
 * host and by this build's runtime, less than a day old. */
static int profile_fresh(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || time(NULL) - st.st_mtime > 24 * 3600) return 0;
  memstub_profile p;
  memstub_error err = {0};
  char warn[256];
  // check() is 0 for the same architecture, page size and runtime build.
  return memstub_profile_read(path, &p, &err) == 0 &&
         memstub_profile_check(&p, path, warn, sizeof warn, &err) == 0 &&
         strcmp(p.cpu, ms__prim_cpu_model()) == 0;
}

static void show_files(const demo *d, const char *profile, int profile_made) {
  const char *rows[][2] = {
      {profile, profile_made ? "calibration profile of this host" : "calibration profile (reused)"},
      {"memuse.h", "the stub's header: memUse[NUMDATA], generated by GNU m4"},
      {"stub", "the compiled stub program (run it with --help)"},
      {"replayed.csv", "what the stub did, measured at every row of the trace"},
      {"compare.txt", "the full comparison (compare.json for tools)"},
      {"figure3.png", "original against replayed, the paper's Figure 3 (.svg, .txt too)"},
  };
  printf("\nfiles:\n");
  for (size_t i = 0; i < MS__ARRAY_SIZE(rows); i++) {
    const char *name = rows[i][0];
    if (i == 0)
      printf("  %-28s %s\n", name, rows[i][1]);
    else
      printf("  %s/%-*s %s\n", d->dir, (int)(27 - strlen(d->dir) > 0 ? 27 - strlen(d->dir) : 1),
             name, rows[i][1]);
  }
}

// ns for people (ns, µs, ms, s): common/units.c.
static void fmt_ns(char *buf, size_t n, double ns) {
  ms__fmt_ns((int64_t)(ns < 0 ? ns - 0.5 : ns + 0.5), buf, n);
}

// Counts for people ("2,400").
static const char *cnt(size_t n) { return ms_cli_count(n > INT64_MAX ? INT64_MAX : (int64_t)n); }

static void show_summary(const memstub_compare_report *r, const char *trace) {
  char tot[32], p50[32], p99[32], mx[32], dur[32], late[32], b1[32], b2[32];
  fmt_ns(tot, sizeof tot, (double)r->duration.error_ns);
  fmt_ns(p50, sizeof p50, (double)r->time.p50_abs);
  fmt_ns(p99, sizeof p99, (double)r->time.p99_abs);
  fmt_ns(mx, sizeof mx, (double)r->time.max_abs);
  fmt_ns(dur, sizeof dur, (double)r->duration.original_ns);
  fmt_ns(late, sizeof late, (double)r->options.late_ns);
  printf("\nfidelity: the replay against %s (%s rows, %s)\n", trace, cnt(r->original_rows), dur);
  char pct[32];
  printf("  total duration  %s%s (%s)        paper: +44 \xc2\xb5s on 4.8 s (+0.009 %%)\n",
         r->duration.error_ns > 0 ? "+" : "", tot,
         ms__fmt_pct(r->duration.error_pct, 1, pct, sizeof pct));
  printf("  time per row    p50 %s, p99 %s, max %s; %s of %s rows late by > %s\n", p50, p99, mx,
         cnt(r->time.late), cnt(r->compared), late);
  const size_t *c = r->late_by_cause.rows;
  if (r->time.late && r->late_by_cause.causes_known) {
    printf("  late rows       %s woke late (sleep overshot), %s worked longer than predicted, "
           "%s waited for a CPU (the host)",
           cnt(c[MEMSTUB_LATE_WAKE]), cnt(c[MEMSTUB_LATE_WORK]), cnt(c[MEMSTUB_LATE_OFF_CPU]));
    // Rows that began late because the ones before them ran over: the causes sum to the late.
    if (c[MEMSTUB_LATE_BEHIND])
      printf(", %s behind (the rows before them ran over)", cnt(c[MEMSTUB_LATE_BEHIND]));
    printf("\n");
  }
  if (r->host_rows && r->compared > r->host_rows) {
    fmt_ns(p50, sizeof p50, (double)r->stub_time.p50_abs);
    fmt_ns(p99, sizeof p99, (double)r->stub_time.p99_abs);
    fmt_ns(mx, sizeof mx, (double)r->stub_time.max_abs);
    printf("  without host    p50 %s, p99 %s, max %s; %s of %s rows late by > %s\n", p50, p99,
           mx, cnt(r->stub_time.late), cnt(r->compared - r->host_rows), late);
  }
  if (r->replay_cpu_ns >= 0 && r->duration.original_ns > 0) {
    char cpu[32];
    fmt_ns(cpu, sizeof cpu, (double)r->replay_cpu_ns);
    printf("  stub CPU        %s, %s of the trace's %s", cpu,
           ms__fmt_pct(100.0 * (double)r->replay_cpu_ns / (double)r->duration.original_ns, 0, pct,
                       sizeof pct),
           dur);
    if (r->replay_off_cpu_ns >= 0) {
      fmt_ns(cpu, sizeof cpu, (double)r->replay_off_cpu_ns);
      printf("; it waited %s for a CPU", cpu);
    }
    printf("\n");
  }
  // Lateness by what the original's rows changed (compare/lateness.c).
  for (int k = 0; k < MEMSTUB_ROW_KINDS; k++) {
    const memstub_compare_kind *s = &r->by_kind[k];
    if (!s->rows) continue;
    char name[32];
    snprintf(name, sizeof name, "%s rows", memstub_row_kind_name((memstub_row_kind)k));
    fmt_ns(p50, sizeof p50, (double)s->time.p50_abs);
    fmt_ns(p99, sizeof p99, (double)s->time.p99_abs);
    fmt_ns(mx, sizeof mx, (double)s->time.max_abs);
    printf("  %-15s p50 %s, p99 %s, max %s; %s of %s late", name, p50, p99, mx,
           cnt(s->time.late), cnt(s->rows));
    if (s->time.late && r->late_by_cause.causes_known)
      printf(" (%s woke late, %s work, %s host)", cnt(s->late_by_cause[MEMSTUB_LATE_WAKE]),
             cnt(s->late_by_cause[MEMSTUB_LATE_WORK]), cnt(s->late_by_cause[MEMSTUB_LATE_OFF_CPU]));
    printf("\n");
  }
  // A column the trace does not know (docs/formats.md) is not compared.
  if (r->stack_unknown)
    printf("  stack           unknown in the trace: not compared\n");
  else
    printf("  stack           %s of %s rows exact (within %s), largest error %s\n",
           cnt(r->stack.exact), cnt(r->compared), ms__fmt_bytes(r->options.stack_slack, b1, sizeof b1),
           ms__fmt_bytes(r->stack.max_abs, b2, sizeof b2));
  if (r->heap_unknown)
    printf("  heap            unknown in the trace: not compared\n");
  else
    printf("  heap            %s of %s rows exact (within %s, or a page for mmap'd blocks),"
           " largest error %s\n",
           cnt(r->heap.exact), cnt(r->compared), ms__fmt_bytes(r->options.heap_slack, b1, sizeof b1),
           ms__fmt_bytes(r->heap.max_abs, b2, sizeof b2));
}

// What the user asked for.
typedef struct demo_args {
  const char *profile, *timing, *check;
  int recalibrate, figure;
} demo_args;

// The files of a run: the trace, and what the steps write in DIR.
typedef struct demo_files {
  char *trace, *own_profile, *header, *stub, *replayed, *cmp_txt, *cmp_json, *png, *svg, *txt;
} demo_files;

static void files_free(demo_files *f) {
  char **all[] = {&f->trace, &f->own_profile, &f->header, &f->stub, &f->replayed,
                  &f->cmp_txt, &f->cmp_json, &f->png, &f->svg, &f->txt};
  for (size_t i = 0; i < MS__ARRAY_SIZE(all); i++) {
    free(*all[i]);
    *all[i] = NULL;
  }
}

/* Parse argv into d, a and f->trace: 0 to run, else 1 with *status the exit
 * status (after --help or a usage error, both printed). */
static int parse_args(int argc, char **argv, demo *d, demo_args *a, demo_files *f, int *status) {
  ms_cli_parser p = {.spec = &spec};
  int c, mode, bad = 0;
  while (!bad && (c = ms_cli_next(&p, argc, argv)) > 0) {
    switch (c) {
      case 'o': d->dir = p.arg; break;
      case O_PROFILE: a->profile = p.arg; break;
      case O_RECALIBRATE: a->recalibrate = 1; break;
      case O_TIMING:
        if (!(bad = ms_cli_arg_timing(&p, &mode) < 0)) a->timing = memstub_timing_name(mode);
        break;
      case O_CHECK: a->check = p.arg; break;
      case O_NO_FIGURE: a->figure = 0; break;
    }
  }
  *status = bad ? MS_EXIT_USAGE : p.status;
  if (bad || c < 0) return 1;
  if (p.optind < argc - 1) {
    *status = ms_cli_usage("demo", "more than one TRACE given");
    return 1;
  }
  f->trace = p.optind < argc
                 ? ms__strdup(argv[p.optind])
                 : ms__asprintf("%s/traces/samples/synthetic-4.8s.csv", ms__datadir());
  return 0;
}

/* Check the trace before anything runs, so a bad one fails in a second:
 * that it reads, and that it makes stub data (a one-row trace does not).
 * 0, or the exit status after printing why. */
static int check_trace(const char *trace) {
  memstub_trace *t = NULL;
  memstub_gen *g = NULL;
  memstub_error err = {0};
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  int bad = memstub_trace_read(trace, &t, &err) < 0;
  if (!bad && memstub_gen_build(t, &go, &g, &err) < 0) {
    memstub_error_prefix(&err, trace);
    bad = 1;
  }
  memstub_gen_free(g);
  memstub_trace_free(t);
  return bad ? ms_cli_fail(&err) : 0;
}

/* Step 1: reuse DIR/host.profile when fresh, use --profile, or calibrate.
 * *profile is the one to use; 0, or the failed command's status. */
static int step_calibrate(demo *d, const demo_args *a, const demo_files *f,
                          const char **profile, int *made) {
  *profile = a->profile;
  if (!a->profile && !a->recalibrate && profile_fresh(f->own_profile)) {
    d->step++;
    printf("\n[%d/%d] calibrate: reusing %s (made on this host in the last 24 hours; "
           "--recalibrate to redo)\n",
           d->step, d->steps, f->own_profile);
    *profile = f->own_profile;
  } else if (!a->profile) {
    char *argv[] = {(char *)d->self, "calibrate", "--quick", "-o", f->own_profile, NULL};
    int rc = run(d, "calibrate", argv, NULL, 0);
    if (rc != 0) return rc;
    *profile = f->own_profile;
    *made = 1;
  } else {
    d->step++;
    printf("\n[%d/%d] calibrate: using %s\n", d->step, d->steps, a->profile);
  }
  return 0;
}

/* Step 5: compare to DIR/compare.txt (with the --check) and compare.json.
 * 0, or the failed command's status; *check_failed when only the check failed. */
static int step_compare(demo *d, const demo_args *a, const demo_files *f, int *check_failed) {
  char *self = (char *)d->self;
  char *argv[] = {self, "compare", f->trace, f->replayed, NULL, NULL, NULL};
  if (a->check) {
    argv[4] = "--check";
    argv[5] = (char *)a->check;
  }
  int crc = run(d, "compare", argv, f->cmp_txt, 0);
  if (crc != 0 && crc != MS_EXIT_CHECK) return crc;
  char *j[] = {self, "compare", f->trace, f->replayed, "--json", NULL};
  if (run(d, "compare", j, f->cmp_json, 1) > MS_EXIT_CHECK) return MS_EXIT_USAGE;
  *check_failed = crc == MS_EXIT_CHECK;
  return 0;
}

/* Steps 2 to 6, each a memstub command: 0, or the failed command's status
 * (-1 when it could not be run); *check_failed when the --check failed. */
static int run_steps(demo *d, const demo_args *a, const demo_files *f, const char *profile,
                     int *check_failed) {
  char *self = (char *)d->self, *timing = (char *)a->timing;
  char *gen[] = {self, "gen", f->trace, "--calibration", (char *)profile, "--timing",
                 timing, "-o", f->header, NULL};
  char *build[] = {self, "build", f->header, "-o", f->stub, NULL};
  // The mode the stub was made for, said again: what a user would type.
  char *replay[] = {f->stub, "--timing", timing, "--measure", f->replayed, NULL};
  int rc;
  if ((rc = run(d, "gen", gen, NULL, 0)) != 0 || (rc = run(d, "build", build, NULL, 0)) != 0 ||
      (rc = run(d, "replay", replay, NULL, 0)) != 0 ||
      (rc = step_compare(d, a, f, check_failed)) != 0)
    return rc;
  const char *outs[] = {f->png, f->svg, f->txt};
  for (size_t i = 0; i < MS__ARRAY_SIZE(outs); i++) {
    char *argv[] = {self, "plot", f->trace, f->replayed, "-o", (char *)outs[i], NULL};
    int prc = run(d, "plot", argv, NULL, i > 0);
    if (prc != 0) return prc < 0 ? MS_EXIT_USAGE : prc;
  }
  return 0;
}

// After the steps: the files, the fidelity summary and the figure. 0 or 2.
static int show_result(const demo *d, const demo_args *a, const demo_files *f,
                       const char *profile, int profile_made) {
  memstub_compare_report *r = NULL;
  memstub_error err = {0};
  if (memstub_compare_files(f->trace, f->replayed, NULL, &r, &err) < 0) return ms_cli_fail(&err);
  show_files(d, profile, profile_made);
  show_summary(r, f->trace);
  memstub_compare_free(r);
  if (a->figure) {
    printf("\n");
    ms_cli_cat(f->txt);
  }
  return 0;
}

int ms_cmd_demo(int argc, char **argv) {
  demo d = {.dir = "memstub-demo", .steps = 6};
  demo_args a = {.timing = memstub_timing_name(MEMSTUB_TIMING_DEFAULT), .figure = 1};
  demo_files f = {0};
  int rc;
  if (parse_args(argc, argv, &d, &a, &f, &rc)) return rc;
  char self[PATH_MAX];
  if (!f.trace || ms__prim_self_exe(self, sizeof self) < 0) {
    free(f.trace);
    return ms_cli_error("cannot find the memstub executable");
  }
  d.self = self;
  if (a.figure) ms_cli_columns_from_terminal();  // the text figure as wide as the terminal
  if ((rc = check_trace(f.trace)) != 0) goto out;
  if (mkdir(d.dir, 0777) != 0 && errno != EEXIST) {
    rc = ms_cli_error("%s: cannot create the directory: %s", d.dir, strerror(errno));
    goto out;
  }

  int64_t t0 = ms__prim_now_ns();
  printf("memstub demo: %s -> %s/\n", f.trace, d.dir);
  f.own_profile = path_in(&d, "host.profile");
  f.header = path_in(&d, "memuse.h"), f.stub = path_in(&d, "stub");
  f.replayed = path_in(&d, "replayed.csv"), f.cmp_txt = path_in(&d, "compare.txt");
  f.cmp_json = path_in(&d, "compare.json"), f.png = path_in(&d, "figure3.png");
  f.svg = path_in(&d, "figure3.svg"), f.txt = path_in(&d, "figure3.txt");
  const char *profile = NULL;
  int profile_made = 0, check_failed = 0;
  rc = step_calibrate(&d, &a, &f, &profile, &profile_made);
  if (rc == 0) rc = run_steps(&d, &a, &f, profile, &check_failed);
  if (rc != 0) {
    if (rc > 0)
      ms_cli_error("step %d failed (exit status %d); the files so far are in %s/", d.step, rc,
                   d.dir);
    if (rc != MS_EXIT_CHECK) rc = MS_EXIT_USAGE;
    goto out;
  }
  if ((rc = show_result(&d, &a, &f, profile, profile_made)) != 0) goto out;
  rc = check_failed ? MS_EXIT_CHECK : MS_EXIT_OK;
  char took[32];
  printf("\nmemstub demo: done in %s%s\n", ms__fmt_ns(ms__prim_now_ns() - t0, took, sizeof took),
         check_failed ? "; the --check failed (see compare.txt)" : "");
out:
  fflush(stdout);
  files_free(&f);
  return rc;
}
