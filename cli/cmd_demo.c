// memstub demo: the whole pipeline on a bundled trace (or the user's), each
// step run as the memstub command a user would type, then a fidelity summary.
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/calib.h"
#include "memstub/compare.h"
#include "memstub/gen.h"
#include "ms_common.h"
#include "prim.h"

extern char **environ;

static const char usage_text[] =
    "usage: memstub demo [TRACE] [-o DIR] [--profile FILE] [--recalibrate]\n"
    "                    [--timing deadline|usleep] [--check SPEC] [--no-figure]\n"
    "\n"
    "Run the whole pipeline on TRACE (default: the bundled 4.8 s synthetic trace,\n"
    "traces/samples/synthetic-4.8s.csv) and show how faithfully the stub replays it:\n"
    "\n"
    "  1. calibrate  memstub calibrate --quick -o DIR/host.profile\n"
    "                (skipped when DIR/host.profile was made on this host, by this\n"
    "                build, in the last 24 hours; or give --profile)\n"
    "  2. gen        memstub gen TRACE --calibration PROFILE -o DIR/memuse.h\n"
    "  3. build      memstub build DIR/memuse.h -o DIR/stub\n"
    "  4. replay     DIR/stub --measure DIR/replayed.csv\n"
    "  5. compare    memstub compare TRACE DIR/replayed.csv (DIR/compare.txt, .json)\n"
    "  6. plot       memstub plot TRACE DIR/replayed.csv -o DIR/figure3.png (.svg, .txt)\n"
    "\n"
    "Then it prints where each file is, a fidelity summary beside the paper's\n"
    "figures, and the figure as text.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR      where the files go (default: ./memstub-demo)\n"
    "      --profile FILE    use this calibration profile instead of calibrating\n"
    "      --recalibrate     calibrate even when DIR/host.profile is fresh\n"
    "      --timing MODE     deadline (default) or usleep, the paper's relative sleeps\n"
    "      --check SPEC      fail (exit 1) unless the replay meets SPEC, as for\n"
    "                        memstub compare --check\n"
    "      --no-figure       do not print the text figure\n"
    "  -h, --help            show this help\n"
    "\n"
    "Exit status: 0 done; 1 a --check failed; 2 bad usage, bad input or a step failed.\n";

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
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (out_path)
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path, O_WRONLY | O_CREAT | O_TRUNC,
                                     0666);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    ms_cli_error("cannot run %s: %s", argv[0], strerror(rc));
    return -1;
  }
  int st;
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) {  // ECHILD when SIGCHLD is ignored: the status is lost
      ms_cli_error("step %d (%s): cannot wait for %s: %s", d->step, what, argv[0],
                   strerror(errno));
      return -1;
    }
  }
  if (WIFSIGNALED(st)) {
    ms_cli_error("step %d (%s) was killed by signal %d", d->step, what, WTERMSIG(st));
    return -1;
  }
  return WEXITSTATUS(st);
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

static void fmt_ns(char *buf, size_t n, double ns) {
  double a = ns < 0 ? -ns : ns;
  if (a < 1e3)
    snprintf(buf, n, "%.0f ns", ns);
  else if (a < 1e6)
    snprintf(buf, n, "%.1f us", ns / 1e3);
  else if (a < 1e9)
    snprintf(buf, n, "%.2f ms", ns / 1e6);
  else
    snprintf(buf, n, "%.3f s", ns / 1e9);
}

static void show_summary(const memstub_compare_report *r, const char *trace) {
  char tot[32], p50[32], p99[32], mx[32];
  fmt_ns(tot, sizeof tot, (double)r->duration.error_ns);
  fmt_ns(p50, sizeof p50, (double)r->time.p50_abs);
  fmt_ns(p99, sizeof p99, (double)r->time.p99_abs);
  fmt_ns(mx, sizeof mx, (double)r->time.max_abs);
  printf("\nfidelity: the replay against %s (%zu rows, %.3f s)\n", trace, r->original_rows,
         (double)r->duration.original_ns / 1e9);
  printf("  total duration  %s%s (%+.5f %%)        paper: +44 us on 4.8 s (+0.009 %%)\n",
         r->duration.error_ns >= 0 ? "+" : "", tot, r->duration.error_pct);
  printf("  time per row    p50 %s, p99 %s, max %s; %zu of %zu rows late by > %lld us\n", p50,
         p99, mx, r->time.late, r->compared, (long long)(r->options.late_ns / 1000));
  const size_t *c = r->late_by_cause.rows;
  if (r->time.late && r->late_by_cause.causes_known)
    printf("  late rows       %zu woke late (sleep overshot), %zu worked longer than predicted, "
           "%zu waited for a CPU (the host)\n",
           c[MEMSTUB_LATE_WAKE], c[MEMSTUB_LATE_WORK], c[MEMSTUB_LATE_OFF_CPU]);
  if (r->host_rows && r->compared > r->host_rows) {
    fmt_ns(p50, sizeof p50, (double)r->stub_time.p50_abs);
    fmt_ns(p99, sizeof p99, (double)r->stub_time.p99_abs);
    fmt_ns(mx, sizeof mx, (double)r->stub_time.max_abs);
    printf("  without host    p50 %s, p99 %s, max %s; %zu of %zu rows late by > %lld us\n", p50,
           p99, mx, r->stub_time.late, r->compared - r->host_rows,
           (long long)(r->options.late_ns / 1000));
  }
  if (r->replay_cpu_ns >= 0 && r->duration.original_ns > 0) {
    char cpu[32];
    fmt_ns(cpu, sizeof cpu, (double)r->replay_cpu_ns);
    printf("  stub CPU        %s, %.2f %% of the trace's %.3f s", cpu,
           100.0 * (double)r->replay_cpu_ns / (double)r->duration.original_ns,
           (double)r->duration.original_ns / 1e9);
    if (r->replay_off_cpu_ns >= 0) {
      fmt_ns(cpu, sizeof cpu, (double)r->replay_off_cpu_ns);
      printf("; it waited %s for a CPU", cpu);
    }
    printf("\n");
  }
  printf("  stack           %zu of %zu rows exact (within %lld B), largest error %lld B\n",
         r->stack.exact, r->compared, (long long)r->options.stack_slack,
         (long long)r->stack.max_abs);
  printf("  heap            %zu of %zu rows exact (within %lld B, or a page for mmap'd blocks),"
         " largest error %lld B\n",
         r->heap.exact, r->compared, (long long)r->options.heap_slack, (long long)r->heap.max_abs);
}

static int print_file(const char *path) {
  char *buf;
  size_t len;
  memstub_error err = {0};
  if (ms__read_file(path, &buf, &len, &err) < 0) return ms_cli_fail(&err);
  fwrite(buf, 1, len, stdout);
  free(buf);
  return 0;
}

int ms_cmd_demo(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                       {"profile", required_argument, NULL, 'p'},
                                       {"recalibrate", no_argument, NULL, 'r'},
                                       {"timing", required_argument, NULL, 't'},
                                       {"check", required_argument, NULL, 'c'},
                                       {"no-figure", no_argument, NULL, 'F'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  demo d = {.dir = "memstub-demo", .steps = 6};
  const char *profile = NULL, *timing = "deadline", *check = NULL;
  int recalibrate = 0, figure = 1;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (c) {
      case 'o': d.dir = optarg; break;
      case 'p': profile = optarg; break;
      case 'r': recalibrate = 1; break;
      case 't': timing = optarg; break;
      case 'c': check = optarg; break;
      case 'F': figure = 0; break;
      case 'h': fputs(usage_text, stdout); return MS_EXIT_OK;
      case ':': return ms_cli_usage("demo", "%s needs a value", argv[optind - 1]);
      default: return ms_cli_usage("demo", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (strcmp(timing, "deadline") != 0 && strcmp(timing, "usleep") != 0)
    return ms_cli_usage("demo", "--timing: expected deadline or usleep, found '%s'", timing);
  if (optind < argc - 1) return ms_cli_usage("demo", "more than one TRACE given");
  char *trace = optind < argc ? ms__strdup(argv[optind])
                              : ms__asprintf("%s/traces/samples/synthetic-4.8s.csv", ms__datadir());
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (!trace || n <= 0) return ms_cli_error("cannot find the memstub executable");
  self[n] = '\0';
  d.self = self;

  // Check the trace before anything runs, so a bad one fails in a second:
  // that it reads, and that it makes stub data (a one-row trace does not).
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
  if (bad) {
    free(trace);
    return ms_cli_fail(&err);
  }
  if (mkdir(d.dir, 0777) != 0 && errno != EEXIST) {
    int rc = ms_cli_error("%s: cannot create the directory: %s", d.dir, strerror(errno));
    free(trace);
    return rc;
  }

  int64_t t0 = ms__prim_now_ns();
  printf("memstub demo: %s -> %s/\n", trace, d.dir);
  char *own_profile = path_in(&d, "host.profile");
  char *header = path_in(&d, "memuse.h"), *stub = path_in(&d, "stub");
  char *replayed = path_in(&d, "replayed.csv"), *cmp_txt = path_in(&d, "compare.txt");
  char *cmp_json = path_in(&d, "compare.json"), *png = path_in(&d, "figure3.png");
  char *svg = path_in(&d, "figure3.svg"), *txt = path_in(&d, "figure3.txt");
  int rc = 0, profile_made = 0;

  if (!profile && !recalibrate && profile_fresh(own_profile)) {
    d.step++;
    printf("\n[%d/%d] calibrate: reusing %s (made on this host in the last 24 hours; "
           "--recalibrate to redo)\n",
           d.step, d.steps, own_profile);
    profile = own_profile;
  } else if (!profile) {
    char *a[] = {self, "calibrate", "--quick", "-o", own_profile, NULL};
    if ((rc = run(&d, "calibrate", a, NULL, 0)) != 0) goto failed;
    profile = own_profile;
    profile_made = 1;
  } else {
    d.step++;
    printf("\n[%d/%d] calibrate: using %s\n", d.step, d.steps, profile);
  }
  {
    char *a[] = {self, "gen", trace, "--calibration", (char *)profile, "--timing",
                 (char *)timing, "-o", header, NULL};
    if ((rc = run(&d, "gen", a, NULL, 0)) != 0) goto failed;
  }
  {
    char *a[] = {self, "build", header, "-o", stub, NULL};
    if ((rc = run(&d, "build", a, NULL, 0)) != 0) goto failed;
  }
  {
    char *a[] = {stub, "--timing", (char *)timing, "--measure", replayed, NULL};
    if ((rc = run(&d, "replay", a, NULL, 0)) != 0) goto failed;
  }
  {
    char *a[] = {self, "compare", trace, replayed, NULL, NULL, NULL};
    if (check) {
      a[4] = "--check";
      a[5] = (char *)check;
    }
    int crc = run(&d, "compare", a, cmp_txt, 0);
    if (crc != 0 && crc != MS_EXIT_CHECK) {
      rc = crc;
      goto failed;
    }
    char *j[] = {self, "compare", trace, replayed, "--json", NULL};
    if (run(&d, "compare", j, cmp_json, 1) > MS_EXIT_CHECK) {
      rc = MS_EXIT_USAGE;
      goto failed;
    }
    if (crc == MS_EXIT_CHECK) rc = MS_EXIT_CHECK;
  }
  {
    const char *outs[] = {png, svg, txt};
    for (size_t i = 0; i < MS__ARRAY_SIZE(outs); i++) {
      char *a[] = {self, "plot", trace, replayed, "-o", (char *)outs[i], NULL};
      int prc = run(&d, "plot", a, NULL, i > 0);
      if (prc != 0) {
        rc = prc < 0 ? MS_EXIT_USAGE : prc;
        goto failed;
      }
    }
  }

  memstub_compare_report *r = NULL;
  if (memstub_compare_files(trace, replayed, NULL, &r, &err) < 0) {
    rc = ms_cli_fail(&err);
    goto out;
  }
  show_files(&d, profile, profile_made);
  show_summary(r, trace);
  memstub_compare_free(r);
  if (figure) {
    printf("\n");
    print_file(txt);
  }
  printf("\nmemstub demo: done in %.1f s%s\n", (double)(ms__prim_now_ns() - t0) / 1e9,
         rc == MS_EXIT_CHECK ? "; the --check failed (see compare.txt)" : "");
  goto out;

failed:
  if (rc > 0)
    ms_cli_error("step %d failed (exit status %d); the files so far are in %s/", d.step, rc,
                 d.dir);
  if (rc != MS_EXIT_CHECK) rc = MS_EXIT_USAGE;
out:
  fflush(stdout);
  free(trace);
  free(own_profile);
  free(header);
  free(stub);
  free(replayed);
  free(cmp_txt);
  free(cmp_json);
  free(png);
  free(svg);
  free(txt);
  return rc;
}
