// memstub record: run a program under the LD_PRELOAD recorder.
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/trace.h"
#include "ms_common.h"
#include "../recorder/protocol.h"

static const char usage_text[] =
    "usage: memstub record -o TRACE [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Run PROGRAM with the LD_PRELOAD recorder and write its heap and stack use over\n"
    "time as a trace (docs/recording.md). Heap: bytes requested from the malloc\n"
    "family, like massif's mem_heap_B. Stack: the recorded thread's stack pointer\n"
    "against its stack top, at every allocator call and from a timer on its CPU\n"
    "time (so that sleeps, polls and waits are never interrupted); inside\n"
    "memstub_probe_begin()/end() regions, against the frame that called begin,\n"
    "and then only the regions are recorded. A summary with the allocator churn\n"
    "goes to standard error.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE        the trace (required); the recorded process writes it\n"
    "                           atomically when it exits (or dies of a signal)\n"
    "  -t, --thread WHICH       main (default), or N: the Nth thread PROGRAM creates\n"
    "      --heap SCOPE         process (default): every thread's blocks; thread:\n"
    "                           the blocks the recorded thread allocated\n"
    "  -r, --resolution NS      coalesce into buckets of NS ns, keeping each bucket's\n"
    "                           peaks and last state (default 100000; 0: every event)\n"
    "      --sample-hz HZ       timer samples of the stack per second of the recorded\n"
    "                           thread's CPU time (default 1000, at most the kernel's\n"
    "                           tick rate; 0: only at allocator calls)\n"
    "      --occurrence N|all   with probe regions: only the Nth occurrence, or all\n"
    "                           of them on one timeline (default all)\n"
    "      --signal N           the signal the sampling timer uses (default: the first\n"
    "                           free real-time signal from SIGRTMAX-2 down)\n"
    "  -q, --quiet              no summary\n"
    "  -h, --help               show this help\n"
    "\n"
    "Children the program forks or spawns are not recorded; if the recorded process\n"
    "itself calls exec, the new image is recorded from its start. Exit status: 0 when\n"
    "PROGRAM exited 0 and the trace was written, 1 when PROGRAM failed or was killed\n"
    "(the trace is still written when possible), 2 on bad usage or no trace.\n";

static int parse_pos(const char *opt, const char *arg, long long lo, long long *out) {
  int64_t v;
  if (ms_cli_i64("record", opt, arg, &v) < 0) return -1;
  if (v < lo) {
    ms_cli_usage("record", "%s must be >= %lld", opt, lo);
    return -1;
  }
  *out = v;
  return 0;
}

static void print_churn_line(const char *label, const char *v) {
  // v: "[occurrences=K ]calls=C bytes=B churn=W"
  unsigned long long occ = 0, calls = 0, bytes = 0;
  char w[64] = "?";
  const char *p;
  if ((p = strstr(v, "occurrences="))) occ = strtoull(p + 12, NULL, 10);
  if ((p = strstr(v, "calls="))) calls = strtoull(p + 6, NULL, 10);
  if ((p = strstr(v, "bytes="))) bytes = strtoull(p + 6, NULL, 10);
  if ((p = strstr(v, "churn="))) snprintf(w, sizeof w, "%.*s", (int)strcspn(p + 6, " "), p + 6);
  if (occ)
    fprintf(stderr, "  %-28s %6llu %12llu %16llu %14s\n", label, occ, calls, bytes, w);
  else
    fprintf(stderr, "  %-28s %6s %12llu %16llu %14s\n", label, "-", calls, bytes, w);
}

static const char *meta_or(const memstub_trace *t, const char *key) {
  const char *v = memstub_trace_get_meta(t, key);
  return v ? v : "?";
}

static void summary(const char *path, const memstub_trace *t) {
#define M(k) meta_or(t, k)
  double secs = (double)t->pts[t->n - 1].time_ns / 1e9;
  ms_cli_note("%s: %zu rows over %.3f s; peak heap %s bytes, peak stack %s bytes (%s)", path, t->n,
              secs, M(MS__REC_META_PEAK_HEAP), M(MS__REC_META_PEAK_STACK),
              M(MS__REC_META_STACK_FROM));
  ms_cli_note(
      "recorder cost: %s ns per allocator call (%s calls), %s ns per timer sample (%s "
      "samples); heap scope %s, thread %s",
      M(MS__REC_META_COST_EVENT), M(MS__REC_META_EVENTS), M(MS__REC_META_COST_SAMPLE),
      M(MS__REC_META_SAMPLES), M(MS__REC_META_HEAP_SCOPE), M(MS__REC_META_THREAD));
  fprintf(stderr,
          "allocator churn (Kudrjavets et al. 2022: sum of w(f)*log2(bytes); malloc 1, free 1, "
          "calloc 2, realloc 3):\n"
          "  %-28s %6s %12s %16s %14s\n",
          "region / function", "occur.", "calls", "bytes", "churn");
  for (size_t i = 0; i < t->nmeta; i++) {
    const char *k = t->meta[i].key;
    if (strncmp(k, MS__REC_CHURN_PREFIX, 6) != 0 || strcmp(k, MS__REC_CHURN_WEIGHTS_KEY) == 0)
      continue;
    const char *label = k + 6;
    char buf[128];
    if (strncmp(label, "program.", 8) == 0) {
      snprintf(buf, sizeof buf, "  %s", label + 8);
      label = buf;
    } else if (strncmp(label, "region.", 7) == 0) {
      const char *rest = label + 7;
      // churn.region.NAME[.function]: indent the per-function lines.
      const char *dot = strrchr(rest, '.');
      static const char *const fns[] = {MS__REC_FN_NAMES};
      int is_fn = 0;
      for (size_t f = 0; dot && f < MS__ARRAY_SIZE(fns); f++)
        if (strcmp(dot + 1, fns[f]) == 0) is_fn = 1;
      if (is_fn)
        snprintf(buf, sizeof buf, "  %s", dot + 1);
      else
        snprintf(buf, sizeof buf, "region %s", rest);
      label = buf;
    }
    print_churn_line(label, t->meta[i].value);
  }
#undef M
}

typedef struct rec_opts {
  const char *out, *thread, *heap;
  long long res, hz, occ, sig;
  int quiet;
  char **prog;
} rec_opts;

// The command line into *o: 0, or non-zero when the command is done (--help)
// or the line is wrong (said on stderr); *status then holds the exit status.
static int parse_opts(int argc, char **argv, rec_opts *o, int *status) {
  static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                       {"thread", required_argument, NULL, 't'},
                                       {"heap", required_argument, NULL, 'H'},
                                       {"resolution", required_argument, NULL, 'r'},
                                       {"sample-hz", required_argument, NULL, 'S'},
                                       {"occurrence", required_argument, NULL, 'O'},
                                       {"signal", required_argument, NULL, 'G'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *out = NULL, *thread = "main", *heap = "process";
  long long res = MS__REC_DEFAULT_RESOLUTION_NS, hz = MS__REC_DEFAULT_SAMPLE_HZ, occ = 0, sig = -1;
  int quiet = 0;
  *status = MS_EXIT_USAGE;
  optind = 1;
  opterr = 0;
  int c;
  // '+': stop at the first non-option (the program), as after "--".
  while ((c = getopt_long(argc, argv, "+:o:t:r:qh", opts, NULL)) != -1) {
    switch (c) {
      case 'o': out = optarg; break;
      case 't':
        if (strcmp(optarg, "main") != 0) {
          long long n;
          if (parse_pos("--thread", optarg, 1, &n) < 0) return -1;
        }
        thread = optarg;
        break;
      case 'H':
        if (strcmp(optarg, "process") != 0 && strcmp(optarg, "thread") != 0)
          return ms_cli_usage("record", "--heap: expected process or thread, found '%s'", optarg);
        heap = optarg;
        break;
      case 'r':
        if (parse_pos("--resolution", optarg, 0, &res) < 0) return -1;
        break;
      case 'S':
        if (parse_pos("--sample-hz", optarg, 0, &hz) < 0) return -1;
        if (hz > MS__REC_MAX_SAMPLE_HZ)
          return ms_cli_usage("record", "--sample-hz must be <= %d", MS__REC_MAX_SAMPLE_HZ);
        break;
      case 'O':
        if (strcmp(optarg, "all") == 0)
          occ = 0;
        else if (parse_pos("--occurrence", optarg, 1, &occ) < 0)
          return -1;
        break;
      case 'G':
        if (parse_pos("--signal", optarg, 1, &sig) < 0) return -1;
        if (sig > SIGRTMAX) return ms_cli_usage("record", "--signal must be <= %d", SIGRTMAX);
        break;
      case 'q': quiet = 1; break;
      case 'h':
        fputs(usage_text, stdout);
        *status = MS_EXIT_OK;
        return -1;
      case ':': return ms_cli_usage("record", "%s needs a value", argv[optind - 1]);
      default: return ms_cli_usage("record", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (!out) return ms_cli_usage("record", "missing -o TRACE");
  if (optind >= argc) return ms_cli_usage("record", "missing the PROGRAM to run (after --)");
  if (strcmp(out, "-") == 0)
    return ms_cli_usage("record", "-o -: the recorded program writes the trace; give a file");
  *o = (rec_opts){out, thread, heap, res, hz, occ, sig, quiet, argv + optind};
  return 0;
}

// The output path, absolute (the program may change directory), in a
// directory we can write, into abs[PATH_MAX]. 0, or the exit status.
static int output_path(const char *out, char *abs) {
  if (out[0] == '/') {
    snprintf(abs, PATH_MAX, "%s", out);
  } else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
      return ms_cli_error("cannot get the current directory: %s", strerror(errno));
    if ((size_t)snprintf(abs, PATH_MAX, "%s/%s", cwd, out) >= PATH_MAX)
      return ms_cli_error("%s: path too long", out);
  }
  // The trace is read back for the summary, so it must be a (new) regular file.
  int in_place;
  char *target = ms__afile_target(abs, &in_place);
  int usable = target && !in_place;
  const char *why = !target ? strerror(errno) : "this is a device, FIFO or socket";
  free(target);
  if (!usable)
    return ms_cli_error("%s: the trace needs a regular file (it is read back for the summary): %s",
                        out, why);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", abs);
  *strrchr(dir, '/') = '\0';
  if (access(dir[0] ? dir : "/", W_OK) != 0)
    return ms_cli_error("%s: cannot write in directory '%s': %s", out, dir, strerror(errno));
  return 0;
}

// The recorder library into lib[PATH_MAX]. 0, or the exit status.
static int find_lib(char *lib) {
  const char *envlib = getenv(MS__REC_ENV_LIB);
  if (envlib && *envlib)
    snprintf(lib, PATH_MAX, "%s", envlib);
  else
    snprintf(lib, PATH_MAX, "%s/libmemstub_record.so", ms__libdir());
  if (access(lib, R_OK) != 0)
    return ms_cli_error("%s: the recorder library is missing (%s); set " MS__REC_ENV_LIB, lib,
                        strerror(errno));
  return 0;
}

// The environment the recorded process reads (recorder/protocol.h).
static void set_env(const rec_opts *o, const char *abs, const char *lib) {
  char preload[2 * PATH_MAX + 2];
  const char *old = getenv("LD_PRELOAD");
  snprintf(preload, sizeof preload, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
  char num[32];
  setenv("LD_PRELOAD", preload, 1);
  setenv(MS__REC_ENV_OUTPUT, abs, 1);
  setenv(MS__REC_ENV_THREAD, o->thread, 1);
  setenv(MS__REC_ENV_HEAP, o->heap, 1);
  snprintf(num, sizeof num, "%lld", o->res);
  setenv(MS__REC_ENV_RESOLUTION, num, 1);
  snprintf(num, sizeof num, "%lld", o->hz);
  setenv(MS__REC_ENV_SAMPLE_HZ, num, 1);
  snprintf(num, sizeof num, "%lld", o->occ);
  setenv(MS__REC_ENV_OCCURRENCE, num, 1);
  if (o->sig > 0) {
    snprintf(num, sizeof num, "%lld", o->sig);
    setenv(MS__REC_ENV_SIGNAL, num, 1);
  } else {
    unsetenv(MS__REC_ENV_SIGNAL);
  }
}

// Run prog and wait for it (its wait status in *st). 0, or the exit status.
static int run_program(char **prog, int *st) {
  // A pipe tells the parent why exec failed.
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) return ms_cli_error("pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return ms_cli_error("fork: %s", strerror(errno));
  if (pid == 0) {
    char num[32];
    close(pfd[0]);
    snprintf(num, sizeof num, "%ld", (long)getpid());
    setenv(MS__REC_ENV_PID, num, 1);
    execvp(prog[0], prog);
    int e = errno;
    if (write(pfd[1], &e, sizeof e) < 0) _exit(127);
    _exit(127);
  }
  close(pfd[1]);
  int exec_errno = 0;
  ssize_t got = read(pfd[0], &exec_errno, sizeof exec_errno);
  close(pfd[0]);
  // Like system(): the child gets the terminal's signals, we wait.
  struct sigaction ign, oint, oquit;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ign, &oint);
  sigaction(SIGQUIT, &ign, &oquit);
  *st = 0;
  while (waitpid(pid, st, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &oint, NULL);
  sigaction(SIGQUIT, &oquit, NULL);
  if (got == (ssize_t)sizeof exec_errno)
    return ms_cli_error("cannot run '%s': %s", prog[0], strerror(exec_errno));
  return 0;
}

int ms_cmd_record(int argc, char **argv) {
  rec_opts o = {0};
  int rc;
  if (parse_opts(argc, argv, &o, &rc) != 0) return rc;
  char abs[PATH_MAX], lib[PATH_MAX];
  if ((rc = output_path(o.out, abs)) != 0) return rc;
  if ((rc = find_lib(lib)) != 0) return rc;
  struct stat before;
  int had = stat(abs, &before) == 0;
  set_env(&o, abs, lib);
  int st;
  if ((rc = run_program(o.prog, &st)) != 0) return rc;

  int failed = 0;
  char **prog = o.prog;
  if (WIFSIGNALED(st)) {
    ms_cli_warn("%s was killed by signal %d (%s)", prog[0], WTERMSIG(st), strsignal(WTERMSIG(st)));
    failed = 1;
  } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
    ms_cli_warn("%s exited with status %d", prog[0], WEXITSTATUS(st));
    failed = 1;
  }
  struct stat after;
  if (stat(abs, &after) != 0 ||
      (had && after.st_ino == before.st_ino && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
       after.st_mtim.tv_nsec == before.st_mtim.tv_nsec))
    return ms_cli_error(
        "%s: no trace was written (is %s a static or setuid program? the "
        "recorder needs a dynamically linked one)",
        o.out, prog[0]);
  memstub_error err = {0};
  memstub_trace *t = NULL;
  if (memstub_trace_read(abs, &t, &err) < 0) return ms_cli_fail(&err);
  const char *fallback = memstub_trace_get_meta(t, MS__REC_META_SAMPLING_OFF);
  if (fallback) ms_cli_warn("%s: %s", o.out, fallback);
  if (!o.quiet) summary(o.out, t);
  memstub_trace_free(t);
  return failed ? MS_EXIT_CHECK : MS_EXIT_OK;
}
