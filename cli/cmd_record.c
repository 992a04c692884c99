// memstub record: run a program under the LD_PRELOAD recorder.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "ms_spawn.h"
#include "memstub/trace.h"
#include "ms_common.h"
#include "prim.h"
#include "../recorder/protocol.h"
#include "record.h"

enum {
  O_THREAD = MS_CLI_LONG,
  O_HEAP,
  O_SAMPLE_HZ,
  O_OCCURRENCE,
  O_SIGNAL,
  O_FOLLOW,
  O_FUNCTION,
  O_SITES,
  O_SITES_EVERY,
  O_REPEAT,
  O_REFERENCE,
  O_CALLS
};

static const ms_cli_option options[] = {
    {"output", 'o', "FILE",
     "the trace (required); the recorded process writes it\n"
     "atomically when it exits (or dies of a signal)"},
    {"thread", O_THREAD, "WHICH",
     "all (default): every thread, each its own stack, heap\n"
     "(the blocks it allocated), CPU and calls, with a thread\n"
     "column (none when PROGRAM made one thread); main: the\n"
     "main thread; N: the Nth thread PROGRAM creates (without\n"
     "--thread, --function records the first thread that\n"
     "calls it; --occurrence, --heap, --follow-children or a\n"
     "PROGRAM using the probe API, the main thread; the\n"
     "summary says what the others did)"},
    {"heap", O_HEAP, "SCOPE",
     "process (default): every thread's blocks; thread:\n"
     "the blocks the recorded thread allocated"},
    {"resolution", 'r', "NS",
     "coalesce into buckets of NS ns, keeping each bucket's\n"
     "peaks and last state, and every region's entry and\n"
     "exit (default 100000; 0: every event)"},
    {"sample-hz", O_SAMPLE_HZ, "HZ",
     "timer samples of the stack per second of the recorded\n"
     "thread's CPU time (default 1000, at most the kernel's\n"
     "tick rate; 0: only at allocator calls)"},
    {"occurrence", O_OCCURRENCE, "N|all",
     "with probe regions: only the Nth occurrence, or all\n"
     "of them on one timeline (default all)"},
    {"signal", O_SIGNAL, "N",
     "the signal the sampling timer uses (default: the first\n"
     "free real-time signal from SIGRTMAX-2 down)"},
    {"function", O_FUNCTION, "SYMBOL",
     "every call of the function SYMBOL (in PROGRAM or a\n"
     "library it loads) is a probe region, with no source\n"
     "edits; up to 16 names of any length, each counted\n"
     "once (x86-64; IFUNCs such as memset are refused)"},
    {"follow-children", O_FOLLOW, NULL,
     "record every process PROGRAM forks, execs or spawns\n"
     "too, each into TRACE's name with its pid and command\n"
     "(trace.csv -> trace.PID.COMMAND.csv), listed at the end"},
    {"sites", O_SITES, NULL,
     "keep backtraces of sampled allocations and write the\n"
     "sites live at the heap's peak to TRACE.sites (read\n"
     "with 'memstub sites TRACE'; the summary lists the top 5)"},
    {"sites-every", O_SITES_EVERY, "BYTES",
     "with --sites: sample one allocation per BYTES bytes\n"
     "allocated, on average (default 65536; 16 to 2^30)"},
    {"calls", O_CALLS, NULL,
     "write every allocator call in scope, in order (function,\n"
     "size, alignment, address, thread, time), to TRACE.calls,\n"
     "a few bytes a call: the allocation sequence"},
    {"repeat", O_REPEAT, "N",
     "record N times and keep the recording of median\n"
     "duration (its trace and side files; the others are\n"
     "deleted), so one disturbed run does not become the stub"},
    {"reference", O_REFERENCE, "N",
     "also run PROGRAM N times without the recorder\n"
     "(alternating with the recordings) and write its wall\n"
     "and CPU time, and the recording's, to the trace's\n"
     "metadata: memstub gen fits the stub's timeline to them;\n"
     "with the recorder loaded, not recording, their clock at\n"
     "the calls too (a region's in those runs, a whole run's\n"
     "in N runs more), by which gen places the trace's rows"},
    {"quiet", 'q', NULL, "no summary"},
    {0}};

static const ms_cli_spec spec = {
    "record",
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
    "\n",
    options, 27,
    "\n"
    "Children the program forks or spawns are not recorded unless --follow-children\n"
    "is given; if the recorded process itself calls exec, the new image is recorded\n"
    "from its start. Exit status: 0 when\n"
    "PROGRAM exited 0 and the trace was written; 1 when PROGRAM failed or was killed\n"
    "(the trace is still written when possible), or when what --thread or\n"
    "--occurrence asks for never happened (no trace is written then); 2 on bad\n"
    "usage, a program that cannot be run, or no recorder in it (static or setuid),\n"
    "or another memstub record writing the same TRACE (one runs at a time).\n"};

// The option's integer, at least lo and at most hi: 0, or -1 after a usage error.
static int parse_range(ms_cli_parser *p, long long lo, long long hi, long long *out) {
  int64_t v;
  if (ms_cli_arg_i64(p, &v) < 0) return -1;
  if (v < lo || v > hi) {
    ms_cli_usage("record", v < lo ? "%s must be >= %lld" : "%s must be <= %lld", p->opt,
                 v < lo ? lo : hi);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_pos(ms_cli_parser *p, long long lo, long long *out) {
  return parse_range(p, lo, LLONG_MAX, out);
}

/* The option's number N >= 1 where words ("main, all", said in the message)
 * are accepted too and the caller has checked them: 0, or -1 after a usage
 * error that lists the words and the number. */
static int parse_nth(ms_cli_parser *p, const char *words, long long *out) {
  int64_t v;
  if (ms__parse_i64(p->arg, strlen(p->arg), &v) < 0) {
    ms_cli_usage("record", "%s: expected %s or a number N >= 1, found '%s'", p->opt, words, p->arg);
    return -1;
  }
  return parse_pos(p, 1, out);
}

/* Where the options end: the index of PROGRAM, or of the "--" before it.
 * The options stop at the first operand (the program's own options are
 * its own), as getopt's '+' would; an option's value is skipped. */
static int options_end(int argc, char **argv) {
  int i = 1;
  while (i < argc) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0 || a[0] != '-' || a[1] == '\0') return i;
    int takes = 0;
    if (a[1] == '-') {
      for (const ms_cli_option *o = options; o->name; o++)
        if (strcmp(a + 2, o->name) == 0) takes = o->arg != NULL;
    } else {
      // A cluster of short options: a value is the rest of it, or the next word.
      for (const char *c = a + 1; *c; c++) {
        const ms_cli_option *o = options;
        while (o->name && o->key != *c) o++;
        if (o->name && o->arg) {
          takes = c[1] == '\0';
          break;
        }
      }
    }
    i += takes ? 2 : 1;
  }
  return argc;
}

/* A --function name added to o->functions, once (a name given again adds
 * nothing): 0, or -1 after a usage error. Names of any length are accepted,
 * up to the recorder's limits on their number and their bytes in all. */
static int add_function(rec_opts *o, const char *name) {
  size_t have = strlen(o->functions), an = strlen(name);
  if (an == 0 || strchr(name, ',') || strspn(name, " \t") == an) {
    ms_cli_usage("record", "--function '%s': a symbol name, one per option", name);
    return -1;
  }
  int count = 0;
  for (const char *p = o->functions; *p;) {
    size_t k = strcspn(p, ",");
    if (k == an && memcmp(p, name, an) == 0) return 0;  // given before
    count++;
    p += k + (p[k] == ',');
  }
  if (count == MS__REC_FN_MAX_NAMES) {
    ms_cli_usage("record", "--function: at most %d different names", MS__REC_FN_MAX_NAMES);
    return -1;
  }
  if (have + an + 2 > sizeof o->functions) {
    ms_cli_usage("record", "--function: the names take %zu bytes in all, more than the %zu "
                           "the recorder accepts",
                 have + an + (have > 0), sizeof o->functions - 1);
    return -1;
  }
  snprintf(o->functions + have, sizeof o->functions - have, "%s%s", have ? "," : "", name);
  return 0;
}

// One option into *o: 0, or -1 after a usage error.
static int apply_option(ms_cli_parser *p, int c, rec_opts *o) {
  static const char *const heaps[] = {"process", "thread", NULL};
  int k;
  switch (c) {
    case 'o': o->out = p->arg; return 0;
    case O_THREAD:
      if (strcmp(p->arg, "main") != 0 && strcmp(p->arg, "all") != 0) {
        long long n;
        if (parse_nth(p, "main, all", &n) < 0) return -1;
      }
      o->thread = p->arg;
      return 0;
    case O_HEAP:
      if (ms_cli_arg_choice(p, heaps, &k) < 0) return -1;
      o->heap = heaps[k];
      o->heap_given = 1;
      return 0;
    case 'r': return parse_pos(p, 0, &o->res);
    case O_SAMPLE_HZ: return parse_range(p, 0, MS__REC_MAX_SAMPLE_HZ, &o->hz);
    case O_OCCURRENCE:
      if (strcmp(p->arg, "all") == 0) {
        o->occ = 0;
        return 0;
      }
      return parse_nth(p, "all", &o->occ);
    case O_SIGNAL: return parse_range(p, 1, SIGRTMAX, &o->sig);
    case O_FOLLOW: o->follow = 1; return 0;
    case O_FUNCTION: return add_function(o, p->arg);
    case O_SITES:
      if (!o->sites) o->sites = 65536;
      return 0;
    case O_SITES_EVERY: return parse_range(p, 16, 1LL << 30, &o->sites);
    case O_REPEAT: return parse_range(p, 1, 99, &o->repeat);
    case O_REFERENCE: return parse_range(p, 1, 99, &o->reference);
    case O_CALLS: o->calls = 1; return 0;
    default: o->quiet = 1; return 0;  // 'q'
  }
}

/* 1 when the file at path (PROGRAM, looked up on PATH as exec does) names
 * memstub_probe_begin in its symbol tables: it uses the probe API, whose
 * regions scope one thread's trace. A stripped or interpreted program reads
 * 0; the recorder then says that its regions did not scope the trace. */
static int uses_probe(const char *prog) {
  char path[PATH_MAX];
  if (strchr(prog, '/'))
    snprintf(path, sizeof path, "%s", prog);
  else if (!ms_cli_path_find(prog, path, sizeof path))
    path[0] = '\0';
  static const char sym[] = "\0memstub_probe_begin";  // a string table entry, whole
  size_t k = sizeof sym;  // its closing '\0' too
  int fd = path[0] ? open(path, O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0) return 0;
  char buf[1 << 16];
  size_t have = 0;
  int found = 0;
  ssize_t r;
  while (!found && (r = read(fd, buf + have, sizeof buf - have)) > 0) {
    have += (size_t)r;
    found = memmem(buf, have, sym, k) != NULL;
    if (have > k) {  // keep the tail: a name across two reads
      memmove(buf, buf + have - (k - 1), k - 1);
      have = k - 1;
    }
  }
  close(fd);
  return found;
}

/* --thread not given: every thread ("auto", the recorder's all with a plain
 * trace for one thread), unless an option or the program scopes the
 * recording to one thread, and o->thread_why says which: --function, the
 * first thread that calls it ("region"); the others, the main thread. */
static void default_thread(rec_opts *o) {
  o->thread = "main";
  if (o->follow)
    o->thread_why = "--follow-children";
  else if (o->functions[0])
    o->thread = "region", o->thread_why = "--function";
  else if (o->occ > 0)
    o->thread_why = "--occurrence";
  else if (o->heap_given)
    o->thread_why = "--heap";
  else if (uses_probe(o->prog[0]))
    o->thread_why = "the probe API in PROGRAM";
  else
    o->thread = "auto";
}

// The command line into *o: 0, or non-zero when the command is done (--help)
// or the line is wrong (said on stderr); *status then holds the exit status.
static int parse_opts(int argc, char **argv, rec_opts *o, int *status) {
  *o = (rec_opts){.heap = "process", .res = MS__REC_DEFAULT_RESOLUTION_NS,
                  .hz = MS__REC_DEFAULT_SAMPLE_HZ, .occ = -1};
  *status = MS_EXIT_USAGE;
  int end = options_end(argc, argv);
  if (end < argc && strcmp(argv[end], "--") == 0) end++;
  ms_cli_parser p = {.spec = &spec};
  int c;
  while ((c = ms_cli_next(&p, end, argv)) > 0)
    if (apply_option(&p, c, o) < 0) return -1;
  if (c < 0) {
    *status = p.status;
    return -1;
  }
  if (!o->out) return ms_cli_usage("record", "missing -o TRACE");
  if (end >= argc) return ms_cli_usage("record", "missing the PROGRAM to run (after --)");
  if (strcmp(o->out, "-") == 0)
    return ms_cli_usage("record", "-o -: the recorded program writes the trace; give a file");
  o->prog = argv + end;
  if (o->follow && (o->repeat > 1 || o->reference))
    return ms_cli_usage("record", "--%s with --follow-children: not supported yet (the children's "
                                  "traces of each run)",
                        o->repeat > 1 ? "repeat" : "reference");
  if (!o->thread) default_thread(o);
  if (strcmp(o->thread, "all") == 0) {
    // Each thread's heap is the blocks it allocated; the rest is not built yet.
    if (o->heap_given)
      return ms_cli_usage("record", "--heap with --thread all: each thread's heap is the blocks "
                                    "it allocated (docs/recording.md, \"All threads\")");
    if (o->occ > 0)
      return ms_cli_usage("record", "--occurrence %lld with --thread all: every thread's rows "
                                    "are kept, regions only mark them",
                          o->occ);
    if (o->follow)
      return ms_cli_usage("record", "--follow-children with --thread all: not supported yet");
  }
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

int ms_record_regions(const rec_opts *o) {
  return o->functions[0] || o->occ > 0 || uses_probe(o->prog[0]);
}

// The recorder library into lib[PATH_MAX]. 0, or the exit status.
int ms_record_lib(char *lib) {
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
  if (o->functions[0])
    setenv(MS__REC_ENV_FUNCTIONS, o->functions, 1);
  else
    unsetenv(MS__REC_ENV_FUNCTIONS);
  if (o->sig > 0) {
    snprintf(num, sizeof num, "%lld", o->sig);
    setenv(MS__REC_ENV_SIGNAL, num, 1);
  } else {
    unsetenv(MS__REC_ENV_SIGNAL);
  }
  if (o->sites > 0) {
    snprintf(num, sizeof num, "%lld", o->sites);
    setenv(MS__REC_ENV_SITES, num, 1);
  } else {
    unsetenv(MS__REC_ENV_SITES);
  }
  if (o->calls)
    setenv(MS__REC_ENV_CALLS, "1", 1);
  else
    unsetenv(MS__REC_ENV_CALLS);
}

/* Run prog and wait for it, as system() does (the child gets the terminal's
 * signals; we wait); its wait status into *st. 0, or the exit status after
 * printing why it could not be run or waited for. */
static int run_program(char **prog, int *st) {
  char num[32];
  snprintf(num, sizeof num, "%ld", (long)getpid());
  setenv(MS__REC_ENV_PARENT, num, 1);
  fflush(NULL);
  // The run's start, as the wall time is measured from it: the recorder
  // tells what ran before it started (record.start_wall_ns).
  snprintf(num, sizeof num, "%lld", (long long)ms__prim_now_ns());
  setenv(MS__REC_ENV_SPAWN_NS, num, 1);
  ms__spawn_opts so;
  ms__spawn_opts_init(&so);
  so.like_system = 1;
  ms__spawn_result r;
  memstub_error err = {0};
  int rc = ms__spawn_run(prog, &so, &r, &err);
  ms_record_last = (rec_run){r.wall_ns, r.user_ns + r.sys_ns, -1, -1, -1, NULL, -1, -1};  // for --repeat, --reference
  // As a wait status, for the callers' WIFEXITED/WTERMSIG.
  *st = r.exited ? (r.code & 0xff) << 8 : r.sig & 0x7f;
  ms__spawn_result_free(&r);
  return rc < 0 ? ms_cli_fail(&err) : 0;
}

// 1 when the recorder writes the trace from a handler on sig (its default action kept).
static int fatal_signal(int sig) {
  static const int fatal[] = {MS__REC_FATAL_SIGNALS};
  for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
    if (fatal[i] == sig) return 1;
  return 0;
}

// Why there is no trace, said on stderr; the exit status.
static int no_trace(const rec_opts *o, const rec_status *st, int wst, const char *journal,
                    const char *abs) {
  const char *prog = o->prog[0];
  if (!st->present)
    return ms_cli_error(
        "%s: no trace was written: the recorder never started in %s (is it a static or setuid "
        "program? the recorder needs a dynamically linked one)",
        o->out, prog);
  if (st->nothing == MS__REC_NOTHING_MEMORY) {
    ms_cli_error("%s: no trace written: the recorder could not get memory for its table of live "
                 "blocks, so the trace would miss blocks (docs/recording.md, \"The live-block "
                 "table\"); free memory or raise the process's limits (ulimit -v) and record again",
                 o->out);
    return MS_EXIT_CHECK;
  }
  if (st->nothing == MS__REC_NOTHING_THREAD) {
    long long n = strtoll(o->thread, NULL, 10);
    ms_cli_error("%s: no trace written: the program created only %lld thread%s through "
                 "pthread_create; --thread %lld asks for the %lld%s",
                 o->out, st->threads, st->threads == 1 ? "" : "s", n, n,
                 ms__rec_ordinal((long)n));
    return MS_EXIT_CHECK;
  }
  if (st->nothing == MS__REC_NOTHING_FUNCTION) {
    ms_cli_error("%s: no trace written: %s", o->out,
                 st->function[0] ? st->function : "--function: a name could not be patched");
    return MS_EXIT_CHECK;
  }
  if (st->nothing == MS__REC_NOTHING_UNCALLED) {
    ms_cli_error("%s: no trace written: --function %s: never called%s", o->out, o->functions,
                 strcmp(o->thread, "region") == 0 ? "" : " on the recorded thread");
    return MS_EXIT_CHECK;
  }
  if (st->nothing == MS__REC_NOTHING_OCCURRENCE) {
    if (st->occurrences == 0)
      ms_cli_error("%s: no trace written: --occurrence %lld, but the recorded thread opened no "
                   "probe region",
                   o->out, o->occ);
    else
      ms_cli_error("%s: no trace written: --occurrence %lld, but the probe regions ran only "
                   "%lld occurrence%s",
                   o->out, o->occ, st->occurrences, st->occurrences == 1 ? "" : "s");
    return MS_EXIT_CHECK;
  }
  if (!st->finished) {
    // The recorder never reached its exit path: what it had recorded is in
    // its journal, unless the journal could not be made.
    int sig = WIFSIGNALED(wst) ? WTERMSIG(wst) : 0;
    char why[160];
    if (sig == SIGKILL)
      snprintf(why, sizeof why, "was killed by signal 9 (SIGKILL), which cannot be caught");
    else if (sig && fatal_signal(sig))
      snprintf(why, sizeof why,
               "was killed by signal %d with a handler of its own (or on an overflowed stack)",
               sig);
    else if (sig)
      snprintf(why, sizeof why,
               "was killed by signal %d, which the recorder does not catch (it writes the "
               "trace on the signals that end a process by default, real-time ones aside)",
               sig);
    else
      snprintf(why, sizeof why,
               "ended without the recorder's exit path (a raw exit system call, or an exec "
               "into a static or setuid program)");
    return ms_record_salvage_said(o, st, journal, abs, why);
  }
  if (st->nothing == MS__REC_NOTHING_ROWS) {
    ms_cli_error("%s: no trace: nothing was recorded%s%s", o->out, st->err ? ": " : "",
                 st->err ? strerror((int)st->err) : "");
    return MS_EXIT_CHECK;
  }
  ms_cli_error("%s: the recorder could not write the trace: %s (nothing was replaced: a trace "
               "already there and its .sites and .generations files are as they were)",
               o->out, st->err ? strerror((int)st->err) : "unknown error");
  return MS_EXIT_CHECK;
}

/* Children the root forked or spawned and waited for, not recorded (no
 * --follow-children): wait4's CPU time counts them, the recorder's figure
 * of its own process (at its very end) does not. `tar czf` pipes its files
 * through gzip, which had 0.2 s of the run's 0.24, and a stub of tar's
 * trace waits where gzip compressed. */
void ms_record_children_warn(const rec_opts *o, const rec_run *run) {
  int64_t all = run->cpu_ns, kids = run->kids_cpu_ns;
  if (o->follow || o->quiet || kids < 0 || all <= 0 || kids < 20 * 1000 * 1000 || 10 * kids < all)
    return;
  char k[32], a[32], path[PATH_MAX], how[PATH_MAX + 160] = "";
  // A launcher script on the PATH (a pyenv shim, a wrapper) runs its own
  // processes before it execs the program: say so, and where the program is.
  const char *p = o->prog[0];
  if (strchr(p, '/') || ms_cli_path_find(p, path, sizeof path)) {
    const char *file = strchr(p, '/') ? p : path;
    FILE *f = fopen(file, "r");
    char head[2] = {0};
    if (f && fread(head, 1, 2, f) == 2 && head[0] == '#' && head[1] == '!')
      snprintf(how, sizeof how, " (%s is a script: a launcher's processes count too; record the "
               "program it runs by its path to leave them out)", file);
    if (f) fclose(f);
  }
  ms_cli_warn("%s: the processes %s started and waited for used %s of the %s of CPU time the run "
              "took (%.0f %%)%s; they are not in the trace, and a stub of it will not do their "
              "work: --follow-children records each of them into a trace of its own",
              o->out, p, ms__fmt_ns(kids, k, sizeof k), ms__fmt_ns(all, a, sizeof a),
              100.0 * (double)kids / (double)all, how);
}

/* After the root's run (wait status st): its trace checked, salvaged when it
 * must be, read back and summarised. The exit status. */
static int after_run(const rec_opts *o, int st, const rec_status *rs, const char *abs,
                     const char *journal, int had, const struct stat *before) {
  int failed = 0;
  char **prog = o->prog;
  if (WIFSIGNALED(st)) {
    ms_cli_warn("%s was killed by signal %d (%s)", prog[0], WTERMSIG(st), strsignal(WTERMSIG(st)));
    failed = 1;
  } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
    ms_cli_warn("%s exited with status %d", prog[0], WEXITSTATUS(st));
    failed = 1;
  }
  struct stat after;
  if (stat(abs, &after) != 0 ||
      (had && after.st_ino == before->st_ino && after.st_mtim.tv_sec == before->st_mtim.tv_sec &&
       after.st_mtim.tv_nsec == before->st_mtim.tv_nsec)) {
    int rc = no_trace(o, rs, st, journal, abs);
    if (rc >= 0) return rc;
    failed = 1;  // salvaged: the trace lacks the end of the run
  }
  // A run of --repeat: only the kept recording is summarised (record_repeat.c),
  // so that what it warns of is said once, of the trace that stays.
  ms_record_last.kids_cpu_ns = rs->present && rs->finished ? rs->kids_cpu_ns : -1;
  int rc = ms_record_inner ? 0 : ms_record_summarise(o, abs);
  if (!ms_record_inner) ms_record_children_warn(o, &ms_record_last);
  return rc ? rc : failed ? MS_EXIT_CHECK : MS_EXIT_OK;
}

/* The recording itself, with the output locked: the files beside the trace,
 * the program run, its trace read back, the children's. The exit status. */
static int record_locked(const rec_opts *po, const char *abs, const char *lib) {
  rec_opts o = *po;
  int rc;
  char status[PATH_MAX], journal[PATH_MAX], registry[PATH_MAX];
  struct stat before;
  int had = stat(abs, &before) == 0;
  if ((rc = ms_record_status_create(abs, status)) != 0) return rc;
  if ((rc = ms_record_status_create(abs, journal)) != 0) {
    unlink(status);
    return rc;
  }
  registry[0] = '\0';
  if (o.follow && (rc = ms_record_status_create(abs, registry)) != 0) {
    unlink(status), unlink(journal);
    return rc;
  }
  set_env(&o, abs, lib);
  setenv(MS__REC_ENV_STATUS, status, 1);
  setenv(MS__REC_ENV_JOURNAL, journal, 1);
  if (o.follow)
    setenv(MS__REC_ENV_FOLLOW, registry, 1);
  else
    unsetenv(MS__REC_ENV_FOLLOW);
  int st;
  rc = run_program(o.prog, &st);
  rec_status rs = ms_record_status_take(status);
  if (rc == 0) rc = after_run(&o, st, &rs, abs, journal, had, &before);
  unlink(journal);
  // The children's traces, after the root's summary, whatever became of the root's.
  if (o.follow && ms_record_children_report(&o, abs, registry, journal) > 0 && rc == MS_EXIT_OK)
    rc = MS_EXIT_CHECK;
  return rc;
}

int ms_cmd_record(int argc, char **argv) {
  // Static: their --function names take 16 KiB. A run of --repeat or
  // --reference (record_repeat.c) parses into its own: the outer's stay.
  static rec_opts outer, inner;
  rec_opts *o = ms_record_inner ? &inner : &outer;
  int rc;
  if (parse_opts(argc, argv, o, &rc) != 0) return rc;
  char abs[PATH_MAX], lib[PATH_MAX], lock[PATH_MAX];
  if ((rc = output_path(o->out, abs)) != 0) return rc;
  if ((rc = ms_record_lib(lib)) != 0) return rc;
  if (ms_record_inner) {  // the outer command holds the lock
    o->quiet = 1;
    return record_locked(o, abs, lib);
  }
  // One recording per output file at a time (record_lock.c).
  int lock_fd = -1;
  if ((rc = ms_record_lock(o->out, abs, &lock_fd, lock)) != 0) return rc;
  if (o->repeat > 1 || o->reference)
    rc = ms_record_repeat(argc, argv, o);
  else
    rc = record_locked(o, abs, lib);
  ms_record_unlock(lock_fd, lock);
  return rc;
}

