/* runtime/stub_main.c: the main of a standalone stub program.
 *
 * memstub build compiles this file with the generated header forced in
 * first (-include memuse.h) and MEMSTUB_STUB_VAR naming its descriptor
 * (memStub, or NAME_memStub for a header generated with --name NAME), and
 * links it against the runtime's static libraries:
 *
 *   cc -std=c11 -O2 -I INCLUDEDIR -include memuse.h -DMEMSTUB_STUB_VAR=memStub \
 *      stub_main.c -o stub LIBDIR/libmemstub_runtime.a ... -lpthread -lm
 *
 * Exit status: 0 replayed; 2 bad usage, a stub that cannot be replayed here
 * (more memory or stack than the process's limits leave: refused before the
 * replay, docs/runtime.md), or a failure while replaying (the point named) or
 * writing the measurements. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memstub/runtime.h"
#ifdef MEMSTUB_THREADS_VAR
#include "memstub/threads.h"
#endif

/* A time for people, "850 ns", "250 µs", "12.5 ms", "1.20 s", as memstub's
 * own summaries print it (common/units.c, which a stub cannot include:
 * it is compiled against the public headers only). */
static const char *human_ns(long long ns, char *buf, size_t cap) {
  static const char *const unit[] = {"ns", "\xc2\xb5s", "ms", "s"};
  double v = ns < 0 ? -(double)ns : (double)ns;
  int u = 0;
  while (u < 3 && v >= 999.5) v /= 1000, u++;
  int decimals = u == 0 ? 0 : v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
  snprintf(buf, cap, "%s%.*f %s", ns < 0 ? "-" : "", decimals, v, unit[u]);
  return buf;
}

// A count for people, "2,400", as memstub's summaries print it.
static const char *human_count(long long n, char *buf, size_t cap) {
  char d[24], out[32];
  snprintf(d, sizeof d, "%lld", n < 0 ? -n : n);
  size_t len = strlen(d), w = 0;
  if (n < 0) out[w++] = '-';
  for (size_t i = 0; i < len; i++) {
    if (i > 0 && (len - i) % 3 == 0) out[w++] = ',';
    out[w++] = d[i];
  }
  out[w] = '\0';
  snprintf(buf, cap, "%s", out);
  return buf;
}

#ifndef MEMSTUB_STUB_VAR
#define MEMSTUB_STUB_VAR memStub
#endif
/* A threads header (memstub gen of a trace with several threads): memstub
 * build defines MEMSTUB_THREADS_VAR as its NAME_memThreads, and
 * MEMSTUB_STUB_VAR as thread 0's stub (for the help); the program replays
 * every thread with memstub_threads_run (docs/runtime.md, "Threads"). */
/* memstub build --data FILE defines MEMSTUB_STUB_DATA as FILE's absolute
 * path and includes no header: the program reads the data file at start
 * (--data FILE names another one) and replays it. */

static const char *prog = "stub";

static const char usage_text[] =
    "usage: %s [--measure OUT.csv] [--timing online|deadline|usleep] [--margin MODE]\n"
    "       %*s [--reaim NS] [--slice NS] [--work-mem-share S]\n"
#ifdef MEMSTUB_STUB_DATA
    "       %*s [--data FILE] [--check] [-v] [-q]\n"
#else
    "       %*s [--check] [-v] [-q]\n"
#endif
    "\n"
    "Replay this memory stub: the heap, stack and timing of the component it was\n"
    "generated from (source trace: %s). When done it says in one line what it\n"
    "replayed, how long it took and where the measurement went.\n"
    "\n"
    "options:\n"
    "  --measure FILE    measure every point and write the replayed trace to FILE\n"
    "                    (one row per original row; extra columns point,\n"
    "                    target_time_ns, late_ns, wake_late_ns, work_ns, off_cpu_ns);\n"
    "                    opened first: one that cannot be written fails at once.\n"
    "                    %%p, %%n, %%c in FILE: the pid, the stub's name, the call\n"
    "                    number; FILE is replaced, unless another process wrote it\n"
    "                    meanwhile: then FILE.2 before the extension (docs/runtime.md)\n"
    "  --timing MODE     online: absolute deadlines, each row started early by the\n"
    "                    work the replay learns on this host; deadline: absolute\n"
    "                    deadlines, no row ends before its own (errors never add\n"
    "                    up); usleep: relative sleeps as in the paper. The default\n"
    "                    is the mode the header was made for (memstub gen --timing),\n"
    "                    else online\n"
    "  --margin MODE     online, deadline: 'model' (default) sleeps to 1 ms before\n"
    "                    each deadline, then to the margin the overshoot model gives,\n"
    "                    then spins; 'adaptive' learns the overshoot; NS: one sleep\n"
    "                    to NS ns before each deadline, then spin\n"    "  --reaim NS        model and adaptive: where long sleeps end before the\n"
    "                    deadline (default 1000000; -1: never re-aim)\n"
    "  --slice NS        ask the scheduler (Linux 6.12+) for a time slice of NS ns\n"
    "                    (100000 to 100000000) for the replay thread: it then waits\n"
    "                    less for a busy CPU when it wakes\n"
    "  --work-mem-share S  the share S (0 to 1) of the stub's CPU work that reads\n"
    "                    and writes its heap block (default: " MEMSTUB_WORK_MEM_SHARE_ENV ",\n"
    "                    else none)\n"
#ifdef MEMSTUB_STUB_DATA
    "  --data FILE       replay the data file FILE (made by memstub gen --data)\n"
    "                    instead of " MEMSTUB_STUB_DATA "\n"
#endif
    "  --check           only check that the stub can be replayed here\n"
    "  -v, --verbose     also say the replay's CPU time and sleeps\n"
    "  -q, --quiet       print nothing when the replay succeeds\n"
    "  -h, --help        show this help\n"
    "\n"
    "Exit status: 0 replayed, 2 bad usage, a stub that cannot be replayed here\n"
    "(more heap, stack, resident or mapped memory than this machine has or ulimit\n"
    "-v or -d leaves), or a replay stopped by an error. A replay that cannot\n"
    "measure its heap (an allocator mallinfo2 does not see) says 'heap not\n"
    "measured' and marks its trace so.\n";

/* A whole number of ns from lo to hi, or -1 when minus_one (-1 "never")
 * into *out: 0, or -1 when v is not one. */
static int parse_ns(const char *v, long long lo, long long hi, int minus_one, int64_t *out) {
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (errno || end == v || *end || !((n >= lo && n <= hi) || (minus_one && n == -1))) return -1;
  *out = n;
  return 0;
}

static int fail(const char *fmt, const char *a) {
  fprintf(stderr, "%s: error: ", prog);
  fprintf(stderr, fmt, a);
  fputc('\n', stderr);
  return 2;
}

static int usage_error(const char *fmt, const char *a) {
  fail(fmt, a);
  fprintf(stderr, "see '%s --help'\n", prog);
  return 2;
}

// "--opt VALUE" or "--opt=VALUE": the value, advancing *i; NULL if not this option.
static const char *opt_value(int argc, char **argv, int *i, const char *name, int *missing) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] != '\0') return NULL;
  if (*i + 1 >= argc) {
    *missing = 1;
    return NULL;
  }
  return argv[++*i];
}

#if defined(MEMSTUB_STUB_USE) && defined(MEMSTUB_STUB_POINT)
/* The arrays of a generated header (memstub build passes their names): a
 * descriptor edited by hand must not send the replay beyond them. */
static int beyond_arrays(const struct memstub_stub *s) {
  const int64_t nuse = (int64_t)(sizeof MEMSTUB_STUB_USE / sizeof MEMSTUB_STUB_USE[0]);
  const int64_t npoint = (int64_t)(sizeof MEMSTUB_STUB_POINT / sizeof MEMSTUB_STUB_POINT[0]);
  return (s->use == MEMSTUB_STUB_USE && s->numdata > nuse) ||
         (s->point == MEMSTUB_STUB_POINT && s->numdata > npoint);
}
#endif

#ifdef MEMSTUB_STUB_DATA
/* The data file named by --data (else the one built in), read and checked
 * before any option is acted on; NULL after printing why. */
static memstub_stub_data *open_data(int argc, char **argv) {
  const char *path = MEMSTUB_STUB_DATA;
  for (int i = 1; i < argc; i++) {
    int missing = 0;
    const char *v = opt_value(argc, argv, &i, "--data", &missing);
    if (v) path = v;
  }
  memstub_stub_data *d = NULL;
  memstub_error err = {0};
  if (memstub_stub_data_open(path, &d, &err) < 0) fail("%s", err.msg);
  return d;
}
#endif

/* Progress of a long replay on a terminal (stderr), redrawn about twice a
 * second by the waiting main thread; silent elsewhere or with MEMSTUB_QUIET. */
static void progress(int64_t done, int64_t total, void *arg) {
  (void)arg;
  fprintf(stderr, "\r\033[K%s: replaying %lld/%lld points (%d%%)", prog, (long long)done,
          (long long)total, total > 0 ? (int)(100 * done / total) : 100);
  if (done >= total) fputs("\r\033[K", stderr);
  fflush(stderr);
}

// Unused in a threads program, which runs run_threads.
__attribute__((unused)) static int run(int argc, char **argv, const struct memstub_stub *stub);
#ifdef MEMSTUB_THREADS_VAR
static int run_threads(int argc, char **argv, const struct memstub_threads_stub *s);
#endif

int main(int argc, char **argv) {
  if (argc > 0 && argv[0][0]) prog = argv[0];
#ifdef MEMSTUB_STUB_DATA
  for (int i = 1; i < argc; i++)  // help needs no data file
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf(usage_text, prog, (int)strlen(prog), "", (int)strlen(prog), "",
             "the data file " MEMSTUB_STUB_DATA);
      return 0;
    }
  memstub_stub_data *d = open_data(argc, argv);
  if (!d) return 2;
  int rc = run(argc, argv, &d->stub);
  memstub_stub_data_free(d);
  return rc;
#elif defined(MEMSTUB_THREADS_VAR)
  return run_threads(argc, argv, &MEMSTUB_THREADS_VAR);
#else
  return run(argc, argv, &MEMSTUB_STUB_VAR);
#endif
}

/* What the command line asks for besides the replay options. */
typedef struct stub_args {
  const char *measure;  // --measure FILE, or NULL
  int check, verbose, quiet;
} stub_args;

/* The command line into o and a: -1 to go on, or the exit status (help
 * printed, or a usage error). */
static int parse(int argc, char **argv, const char *source, memstub_replay_options *o,
                 stub_args *a) {
  const char *e = getenv(MEMSTUB_WORK_MEM_SHARE_ENV);  // the work's memory share
  if (e && *e && memstub_work_share_parse(e, &o->mem_share) < 0)
    return usage_error(MEMSTUB_WORK_MEM_SHARE_ENV ": expected a share from 0 to 1, found '%s'", e);
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *v;
    int missing = 0;
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      printf(usage_text, prog, (int)strlen(prog), "", (int)strlen(prog), "",
             source ? source : "unknown");
      return 0;
#ifdef MEMSTUB_STUB_DATA
    } else if ((v = opt_value(argc, argv, &i, "--data", &missing))) {
      continue;  // opened before
#endif
    } else if (strcmp(arg, "--check") == 0) {
      a->check = 1;
    } else if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0) {
      a->verbose = 1;
    } else if (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0) {
      a->quiet = 1;
    } else if ((v = opt_value(argc, argv, &i, "--measure", &missing))) {
      if (!*v) return usage_error("--measure needs a file name%s", "");
      a->measure = v;
    } else if ((v = opt_value(argc, argv, &i, "--timing", &missing))) {
      if (memstub_timing_parse(v, &o->timing) < 0)
        return usage_error("--timing: expected online, deadline or usleep, found '%s'", v);
    } else if ((v = opt_value(argc, argv, &i, "--margin", &missing))) {
      if (memstub_margin_parse(v, &o->margin_ns) < 0)
        return usage_error("--margin: expected model, adaptive or a number of ns >= 0, found '%s'",
                           v);
    } else if ((v = opt_value(argc, argv, &i, "--reaim", &missing))) {
      if (parse_ns(v, 1, INT64_MAX, 1, &o->reaim_ns) < 0)
        return usage_error("--reaim: expected a number of ns > 0 or -1, found '%s'", v);
    } else if ((v = opt_value(argc, argv, &i, "--slice", &missing))) {
      if (parse_ns(v, 100000, 100000000, 0, &o->sched_slice_ns) < 0)
        return usage_error("--slice: expected 100000 to 100000000 ns, found '%s'", v);
    } else if ((v = opt_value(argc, argv, &i, "--work-mem-share", &missing))) {
      if (memstub_work_share_parse(v, &o->mem_share) < 0)
        return usage_error("--work-mem-share: expected a share from 0 to 1, found '%s'", v);
    } else if (missing) {
      return usage_error("%s needs a value", arg);
    } else {
      return usage_error("unknown argument '%s'", arg);
    }
  }
  return -1;
}

/* The measurement file of a.measure for the stub named name, opened before
 * the replay into *mf (NULL without --measure): 0, or the exit status. */
static int open_measure(const stub_args *a, const char *name, memstub_replay_options *o,
                        memstub_measure_file **mf) {
  *mf = NULL;
  if (!a->measure) return 0;
  memstub_error err = {0};
  if (memstub_measure_open(a->measure, name, mf, &err) < 0) return fail("--measure: %s", err.msg);
  o->measure = MEMSTUB_MEASURE_TRACE;
  return 0;
}

/* The timing for the line said when done: "online timing", and why the cost
 * model was off when online timing asked for it (the header's delays were
 * compensated for another mode: memstub gen --calibration --timing). */
__attribute__((unused)) static const char *timing_words(const memstub_replay_options *o,
                                                       const memstub_replay_info *i,
                                                       const struct memstub_stub *s, char *buf,
                                                       size_t cap) {
  snprintf(buf, cap, "%s timing", memstub_timing_name(o->timing));
  if (o->timing == MEMSTUB_TIMING_ONLINE && i->cost_model != MEMSTUB_COST_ONLINE)
    snprintf(buf + strlen(buf), cap - strlen(buf),
             " without its cost model: the delays were compensated for %s timing",
             memstub_timing_name(s->timing) ? memstub_timing_name(s->timing) : "another");
  return buf;
}

// What was written, for the line said when done: "; measured trace in FILE".
static const char *written(const memstub_measure_file *mf, char *buf, size_t cap) {
  if (mf) snprintf(buf, cap, "; measured trace in %s", memstub_measure_name(mf));
  else snprintf(buf, cap, "; not measured (--measure FILE writes what it did)");
  return buf;
}

static int run(int argc, char **argv, const struct memstub_stub *stub) {
  memstub_replay_options o;
  memstub_replay_options_for(&o, stub);
  stub_args a = {0};
  int st = parse(argc, argv, stub->source, &o, &a);
  if (st >= 0) return st;
#if defined(MEMSTUB_STUB_USE) && defined(MEMSTUB_STUB_POINT)
  if (beyond_arrays(stub))
    return fail("the descriptor's numdata is more than its %s arrays hold", "memUse and memPoint");
#endif
  memstub_error err = {0};
  if (a.check) return memstub_replay_check(stub, &o, NULL, &err) < 0 ? fail("%s", err.msg) : 0;
  memstub_measure_file *mf;  // opened first: a path that cannot be written fails now
  if ((st = open_measure(&a, stub->name, &o, &mf)) != 0) return st;
  if (isatty(STDERR_FILENO) && !getenv("MEMSTUB_QUIET") && stub->numdata >= 100000)
    o.progress = progress;
  memstub_replay *r;
  if (memstub_replay_run(stub, &o, &r, &err) < 0) {
    memstub_measure_close(mf);
    return fail("%s", err.msg);
  }
  int rc = mf && memstub_measure_commit_replay(mf, r, &err) < 0 ? fail("%s", err.msg) : 0;
  if (mf && rc == 0 && !memstub_replay_heap_measured(r))
    fprintf(stderr, "%s: warning: %s; heap_bytes in %s are not the stub's heap\n", prog,
            MEMSTUB_HEAP_NOT_MEASURED, memstub_measure_name(mf));
  if (!a.quiet && rc == 0) {
    char n[32], p[32], d[32], t[32], w[4200], tw[128];
    fprintf(stderr, "%s: replayed %s rows (%s points) in %s, target %s (%s)%s\n", prog,
            human_count(stub->norig, n, sizeof n), human_count(r->info.points, p, sizeof p),
            human_ns(r->info.duration_ns, d, sizeof d), human_ns(r->info.target_ns, t, sizeof t),
            timing_words(&o, &r->info, stub, tw, sizeof tw), written(mf, w, sizeof w));
  }
  if (a.verbose && rc == 0) {
    char c[32], z[32];
    fprintf(stderr, "%s: CPU %s (%.3g %% of the duration), %s sleeps\n", prog,
            human_ns(r->info.cpu_ns, c, sizeof c),
            r->info.duration_ns > 0 ? 100.0 * (double)r->info.cpu_ns / (double)r->info.duration_ns
                                    : 0.0,
            human_count(r->info.sleeps, z, sizeof z));
  }
  memstub_measure_close(mf);
  memstub_replay_free(r);
  return rc;
}

#ifdef MEMSTUB_THREADS_VAR
/* Every thread of s on a common clock (memstub_threads_run): --measure writes
 * every thread's rows with a thread column (memstub_threads_trace), as
 * memstub replay --measure does for such a trace; -v prints a line per thread. */
static int run_threads(int argc, char **argv, const struct memstub_threads_stub *s) {
  memstub_replay_options o;
  memstub_replay_options_for(&o, s->stubs[0]);
  stub_args a = {0};
  int st = parse(argc, argv, s->stubs[0]->source, &o, &a);
  if (st >= 0) return st;
  memstub_error err = {0};
  if (a.check) return memstub_threads_check(s, &o, &err) < 0 ? fail("%s", err.msg) : 0;
  memstub_measure_file *mf;  // opened first: a path that cannot be written fails now
  if ((st = open_measure(&a, s->stubs[0]->name, &o, &mf)) != 0) return st;
  memstub_threads_replay *r;
  if (memstub_threads_run(s, &o, &r, &err) < 0) {
    memstub_measure_close(mf);
    return fail("%s", err.msg);
  }
  int rc = mf && memstub_measure_commit_threads(mf, r, &err) < 0 ? fail("%s", err.msg) : 0;
  int64_t end = 0, rows = 0;
  for (int64_t k = 0; k < s->nthreads; k++) {
    const memstub_replay_info *i = &r->thread[k]->info;
    if (s->threads[k].start_ns + i->duration_ns > end) end = s->threads[k].start_ns + i->duration_ns;
    rows += s->stubs[k]->norig;
  }
  for (int64_t k = 0; a.verbose && rc == 0 && k < s->nthreads; k++) {
    const memstub_replay_info *i = &r->thread[k]->info;
    char b[32], d[32], t[32], c[32], p[32], z[32];
    fprintf(stderr,
            "%s: thread %lld: replayed %s points from %s in %s (target %s, %s timing); CPU %s, "
            "%s sleeps\n",
            prog, (long long)k, human_count(i->points, p, sizeof p),
            human_ns(s->threads[k].start_ns, b, sizeof b), human_ns(i->duration_ns, d, sizeof d),
            human_ns(i->target_ns, t, sizeof t), memstub_timing_name(o.timing),
            human_ns(i->cpu_ns, c, sizeof c), human_count(i->sleeps, z, sizeof z));
  }
  if (!a.quiet && rc == 0) {
    char n[32], d[32], h[32], w[4200];
    fprintf(stderr, "%s: replayed %lld threads (%s rows, %s cross-thread frees) in %s%s\n", prog,
            (long long)s->nthreads, human_count(rows, n, sizeof n),
            human_count(s->nhandoffs, h, sizeof h), human_ns(end, d, sizeof d),
            written(mf, w, sizeof w));
  }
  memstub_measure_close(mf);
  memstub_threads_replay_free(r);
  return rc;
}
#endif
