// memstub replay: run a trace directly on the replay engine, no compile step.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memstub/calib.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "ms_common.h"

enum { O_MARGIN = MS_CLI_LONG, O_REAIM, O_SLICE, O_DATA, O_MEMSHARE, O_NO_CALLS };

static const ms_cli_option options[] = {
    {"measure", 'm', "FILE",
     "measure every point and write the replayed trace to\n"
     "FILE: one row per row of TRACE, absolute totals, and\n"
     "the columns point, target_time_ns, late_ns and, to\n"
     "say why a row was late, wake_late_ns, work_ns and\n"
     "off_cpu_ns (docs/runtime.md); FILE is opened first:\n"
     "one that cannot be written fails before the replay.\n"
     "%p, %n, %c in FILE: pid, stub name, call number; FILE\n"
     "is replaced unless another process wrote it meanwhile:\n"
     "then FILE.2 before the extension (docs/runtime.md)"},
    {"timing", 't', "MODE",
     "online (default): absolute deadlines on\n"
     "CLOCK_MONOTONIC, each row started early by the\n"
     "work the replay learns on this host; deadline:\n"
     "absolute deadlines, no row ends before its own\n"
     "(lateness never adds up); usleep: the paper's\n"
     "relative sleeps. With --data, the default is the\n"
     "mode the file was made for"},
    {"margin", O_MARGIN, "MODE",
     "online, deadline: 'model' (default): sleep to 1 ms\n"
     "before each deadline, then again to the margin the\n"
     "overshoot model gives that short sleep, then spin;\n"
     "'adaptive': the same, learning the overshoot as it\n"
     "goes; NS: the old fixed margin, one sleep to NS ns\n"
     "before the deadline, then spin"},
    {"reaim", O_REAIM, "NS",
     "model and adaptive: where long sleeps end before\n"
     "the deadline (default 1000000; -1: never re-aim)"},
    {"slice", O_SLICE, "NS",
     "ask the scheduler (Linux 6.12+) for a time slice of NS\n"
     "ns (100000 to 100000000) for the replay thread: it\n"
     "then waits less for a busy CPU when it wakes"},
    {"work-mem-share", O_MEMSHARE, "S",
     "a stub with cpu_ns: the share S (0 to 1) of its\n"
     "CPU work that reads and writes its heap block, so\n"
     "that a neighbour's memory traffic slows it (default:\n"
     "the trace's work_mem_share metadata, else 0.25 with\n"
     "--calibration, whose touch costs it needs, else 0;\n"
     "0: none; docs/runtime.md, \"Work as work\")"},
    MS_CLI_WHATIF_OPTIONS,
    {"data", O_DATA, "FILE",
     "replay the data file FILE (memstub gen --data)\n"
     "instead of TRACE: nothing is read as text, normalised\n"
     "or compiled; the what-ifs and calibration were\n"
     "applied when it was made. A regular file, read whole\n"
     "into memory first: changing it later changes nothing"},
    {"no-calls", O_NO_CALLS, NULL,
     "a trace recorded with --calls (TRACE.calls beside it,\n"
     "replayed call for call by default): the class replay\n"
     "instead (one block resized, calls by size class)"},
    {"calibration", 'c', "FILE",
     "compensate for the overheads measured on this host\n"
     "(a profile from 'memstub calibrate'), as\n"
     "'memstub gen --calibration' does, for --timing\n"
     "(online: the sizes; deadline, usleep: the delays too)"},
    {0}};

static const ms_cli_spec spec = {
    "replay",
    "usage: memstub replay TRACE [--measure OUT.csv] [options]\n"
    "       memstub replay --data FILE [--measure OUT.csv] [options]\n"
    "\n"
    "Replay TRACE (a trace CSV, '-' for stdin) as a memory stub: the same engine\n"
    "a compiled stub runs, fed from the trace in memory (memstub gen's data,\n"
    "without the header and the compile step). The replay takes as long as the\n"
    "trace. A trace recorded with --calls (TRACE.calls beside it) is replayed\n"
    "call for call, as memstub gen --data makes it; --no-calls for the class\n"
    "replay.\n"
    "\n",
    options, 26,
    "\n"
    "Exit status: 0 replayed; 2 bad usage, a trace that cannot be read or that\n"
    "needs more memory than this machine has (heap, stack, resident or mapped),\n"
    "or a failure while replaying (naming the point and what it could not have).\n"
    "A replay that cannot measure its heap (an allocator mallinfo2 does not see)\n"
    "says 'heap not measured' and marks its trace so.\n"};

static void progress(int64_t done, int64_t total, void *arg) {
  (void)arg;
  ms_cli_progress("replaying", (uint64_t)done, (uint64_t)total);
}

// What the user asked for.
typedef struct replay_args {
  memstub_gen_options go;
  memstub_replay_options ro;
  const char *measure;  // NULL: do not measure
  const char *in;       // the trace, or the data file
  const char *data;     // --data FILE, else NULL
  int transformed;      // a what-if option was given
  int timing_given;     // --timing was given
  int no_calls;         // --no-calls: the class replay of a trace with calls
} replay_args;

// The current option's argument as an integer in [lo, hi] (-1: also allowed): 0 or -1.
static int arg_ns(ms_cli_parser *p, int64_t *out, int64_t lo, int64_t hi, const char *expected) {
  if (ms_cli_arg_i64(p, out) < 0) return -1;
  if ((*out >= lo && *out <= hi) || (*out == -1 && lo == 1)) return 0;
  ms_cli_usage("replay", "%s: expected %s, found '%s'", p->opt, expected, p->arg);
  return -1;
}

// One option into a: 0, or -1 after printing a usage error.
static int take_option(ms_cli_parser *p, int c, replay_args *a) {
  int w = ms_cli_whatif_take(p, c, &a->go);
  if (w != 0) {
    a->transformed = 1;
    return w < 0 ? -1 : 0;
  }
  switch (c) {
    case 'm': a->measure = p->arg; break;
    case 'c': a->go.profile_path = p->arg; break;
    case O_DATA: a->data = p->arg; break;
    case O_NO_CALLS: a->no_calls = 1; break;
    case 't':
      a->timing_given = 1;
      return ms_cli_arg_timing(p, &a->ro.timing);
    case O_MARGIN:
      if (memstub_margin_parse(p->arg, &a->ro.margin_ns) == 0) break;
      ms_cli_usage("replay", "--margin: expected model, adaptive or a number of ns >= 0, found '%s'",
                   p->arg);
      return -1;
    case O_REAIM: return arg_ns(p, &a->ro.reaim_ns, 1, INT64_MAX, "a number of ns > 0 or -1");
    case O_SLICE:
      return arg_ns(p, &a->ro.sched_slice_ns, 100000, 100000000, "100000 to 100000000 ns");
    case O_MEMSHARE:
      if (memstub_work_share_parse(p->arg, &a->ro.mem_share) == 0) break;
      ms_cli_usage("replay", "--work-mem-share: expected a share from 0 to 1, found '%s'", p->arg);
      return -1;
  }
  return 0;
}

/* Parse argv into a: 0 to replay, else 1 with *status the exit status (after
 * --help or a usage error, both printed). */
static int parse_args(int argc, char **argv, replay_args *a, int *status) {
  ms_cli_parser p = {.spec = &spec};
  int c, bad = 0;
  while (!bad && (c = ms_cli_next(&p, argc, argv)) > 0) bad = take_option(&p, c, a) < 0;
  *status = bad ? MS_EXIT_USAGE : p.status;
  if (bad || c < 0) return 1;
  if (a->data) {
    const char *why = p.optind != argc           ? "--data FILE replaces TRACE: give one of them"
                      : !*a->data                ? "--data needs a file name"
                      : a->go.profile_path       ? "--calibration applies when the data file is "
                                                   "made (memstub gen --data --calibration)"
                      : a->transformed           ? "the what-ifs apply when the data file is made "
                                                   "(memstub gen --data --time-scale ...)"
                      : a->no_calls              ? "--no-calls applies when the data file is made "
                                                   "(memstub gen --data --no-calls)"
                                                 : NULL;
    if (why) {
      *status = ms_cli_usage("replay", "%s", why);
      return 1;
    }
    a->in = a->data;
  } else if (p.optind != argc - 1) {
    *status = ms_cli_usage("replay", p.optind == argc ? "missing TRACE" : "more than one TRACE given");
    return 1;
  } else {
    a->in = argv[p.optind];
  }
  if (a->measure && !*a->measure) {
    *status = ms_cli_usage("replay", "--measure needs a file name");
    return 1;
  }
  return 0;
}

// What the replay did, as two notes on stderr (mf: where it was measured to, or NULL).
static void report(const replay_args *a, const struct memstub_stub *s, const memstub_replay *r,
                   const memstub_measure_file *mf) {
  const memstub_replay_info *i = &r->info;
  char late[96] = "";
  if (a->measure) {
    int64_t max = 0;
    for (int64_t k = 0; k < i->points; k++)
      if (r->rec[k].end_ns - r->rec[k].target_ns > max) max = r->rec[k].end_ns - r->rec[k].target_ns;
    char m[32];
    snprintf(late, sizeof late, ", points late by at most %s", ms__fmt_ns(max, m, sizeof m));
  }
  char dur[32], tgt[32], why[96] = "";
  // Online timing leaves its cost model to rows whose delays carry no prediction.
  if (a->ro.timing == MEMSTUB_TIMING_ONLINE && i->cost_model != MEMSTUB_COST_ONLINE)
    snprintf(why, sizeof why, " without its cost model: the delays were compensated for %s timing",
             memstub_timing_name(s->timing) ? memstub_timing_name(s->timing) : "another");
  ms_cli_note("%s: replayed %s rows (%s points) in %s, target %s (%s timing%s%s)%s%s",
              a->in, ms_cli_count(s->norig), ms_cli_count(i->points),
              ms__fmt_ns(i->duration_ns, dur, sizeof dur), ms__fmt_ns(i->target_ns, tgt, sizeof tgt),
              memstub_timing_name(a->ro.timing), why, late,
              mf ? "; measured trace in " : "", mf ? memstub_measure_name(mf) : "");
  char cpu[64] = "unknown", off[96] = "", c[32], w[32], pc[32];
  if (i->cpu_ns >= 0 && i->duration_ns > 0)
    snprintf(cpu, sizeof cpu, "%s, %s of the duration", ms__fmt_ns(i->cpu_ns, c, sizeof c),
             ms__fmt_pct(100.0 * (double)i->cpu_ns / (double)i->duration_ns, 0, pc, sizeof pc));
  if (i->run_delay_ns >= 0)
    snprintf(off, sizeof off, "; it waited %s for a CPU", ms__fmt_ns(i->run_delay_ns, w, sizeof w));
  ms_cli_note("%s: replay thread CPU %s; %s sleeps, %s waits woke after their deadline%s",
              a->in, cpu, ms_cli_count(i->sleeps), ms_cli_count(i->late_wakeups), off);
  if (i->work_ns > 0) {  // the work as work: how fast this core ran it
    char wn[32], wc[32], fl[32];
    ms_cli_note("%s: work %s counted (memory share %.2g), run in %s of CPU (x%.2f the "
                "calibrated speed), %s spun up to the recorded CPU time",
                a->in, ms__fmt_ns((int64_t)i->work_ns, wn, sizeof wn), i->work_mem_share,
                ms__fmt_ns(i->work_cpu_ns, wc, sizeof wc), (double)i->work_cpu_ns / i->work_ns,
                ms__fmt_ns(i->work_floor_ns, fl, sizeof fl));
  }
}

/* A trace with several threads (docs/runtime.md, "Threads"): one stub and one
 * replay thread per original thread; --measure writes every thread's rows,
 * with a thread column, to mf (closed by the caller). */
static int replay_threads(const replay_args *a, const memstub_trace *t, memstub_measure_file *mf,
                          memstub_error *err) {
  memstub_gen_threads *g = NULL;
  memstub_threads_replay *r = NULL;
  int rc = memstub_gen_threads_build(t, &a->go, &g, err);
  if (rc < 0) memstub_error_prefix(err, a->in);
  for (int64_t k = 0; rc == 0 && k < g->nthreads; k++) {
    char label[40];
    snprintf(label, sizeof label, "thread %lld: ", (long long)k);
    ms_cli_whatif_note(g->gen[k], label);
  }
  if (rc == 0) ms_cli_timeline_estimated_threads(a->in, g);
  memstub_replay_options ro = a->ro;
  ro.progress = NULL;
  if (rc == 0 && (rc = memstub_threads_run(&g->stub, &ro, &r, err)) < 0)
    memstub_error_prefix(err, a->in);
  if (rc == 0 && mf) rc = memstub_measure_commit_threads(mf, r, err);
  for (int64_t k = 0; rc == 0 && k < g->nthreads; k++) {
    const memstub_replay_info *i = &r->thread[k]->info;
    char dur[32], tgt[32], st[32];
    ms_cli_note("%s: thread %lld: replayed %s rows (%s points) from %s in %s, target %s", a->in,
                (long long)k, ms_cli_count(g->stubs[k]->norig), ms_cli_count(i->points),
                ms__fmt_ns(g->threads[k].start_ns, st, sizeof st),
                ms__fmt_ns(i->duration_ns, dur, sizeof dur),
                ms__fmt_ns(i->target_ns, tgt, sizeof tgt));
  }
  if (rc == 0)
    ms_cli_note("%s: %lld threads, %s cross-thread frees%s%s", a->in, (long long)g->nthreads,
                ms_cli_count(g->nhandoffs), mf ? "; measured trace in " : "",
                mf ? memstub_measure_name(mf) : "");
  memstub_threads_replay_free(r);
  memstub_gen_threads_free(g);
  return rc;
}

int ms_cmd_replay(int argc, char **argv) {
  replay_args a = {0};
  memstub_gen_options_init(&a.go);
  memstub_replay_options_init(&a.ro);
  int rc;
  if (parse_args(argc, argv, &a, &rc)) return rc;
  if (!a.data && ms_cli_refuse_stub_file("replay", a.in)) return MS_EXIT_USAGE;
  memstub_gen_options *go = &a.go;
  go->source = a.in;
  if (a.measure) a.ro.measure = MEMSTUB_MEASURE_TRACE;
  if (ms_cli_progress_enabled()) a.ro.progress = progress;

  memstub_error err = {0};
  memstub_trace *t = NULL;
  memstub_gen *g = NULL;
  memstub_replay *r = NULL;
  memstub_profile prof;
  if (go->profile_path) {
    if (ms_cli_load_profile(go->profile_path, &prof) != 0) return MS_EXIT_USAGE;
    go->profile = &prof;
    go->timing = a.ro.timing;  // compensated for the timing it replays with
    if (prof.spin_steps_per_ns > 0) a.ro.call_ns = prof.call_ns;  // the calls' costs (issue 14)
    a.ro.work_rate = prof.spin_steps_per_ns;  // the work counted at the calibration's rates
    a.ro.touch_ns = prof.touch_ns;
    go->measured = a.measure != NULL;
  }
  // Opened before anything is read or replayed: a path that cannot be written fails now.
  memstub_measure_file *mf = NULL;
  if (a.measure && memstub_measure_open(a.measure, NULL, &mf, &err) < 0) {
    memstub_error_prefix(&err, "--measure");
    return ms_cli_fail(&err);
  }
  memstub_stub_data *d = NULL;
  const struct memstub_stub *s = NULL;
  if (a.data) {
    if (ms_cli_progress_enabled()) fprintf(stderr, "\r\033[Kmemstub replay: reading %s", a.in);
    rc = memstub_stub_data_open(a.data, &d, &err);
    if (rc == 0) s = &d->stub;
    // Without --timing, the timing the file was made for (none: the default).
    if (rc == 0 && !a.timing_given && memstub_timing_name(s->timing)) a.ro.timing = s->timing;
    if (rc == 0) {  // the work model it was made with; --work-mem-share wins
      memstub_replay_options m;
      memstub_replay_options_for(&m, s);
      if (a.ro.mem_share == 0) a.ro.mem_share = m.mem_share;
      a.ro.work_rate = m.work_rate, a.ro.touch_ns = m.touch_ns;
    }
  } else {
    if (ms_cli_progress_enabled()) fprintf(stderr, "\r\033[Kmemstub replay: reading %s", a.in);
    rc = memstub_trace_read(a.in, &t, &err);
    // The work's memory share: --work-mem-share, else the trace's metadata.
    if (rc == 0 && a.ro.mem_share == 0 && (rc = memstub_work_share_meta(t, &a.ro.mem_share, &err)) < 0)
      memstub_error_prefix(&err, a.in);
    if (rc > 0) rc = 0;
    go->mem_share = a.ro.mem_share;  // what its stub would carry (memstub_gen.work_model)
    if (rc == 0 && memstub_trace_thread_count(t) > 1) {
      if (ms_cli_progress_enabled()) fputs("\r\033[K", stderr);
      if (!a.no_calls) ms_cli_gen_calls_threads(a.in, t);
      rc = replay_threads(&a, t, mf, &err);
      memstub_measure_close(mf);
      memstub_trace_free(t);
      return rc < 0 ? ms_cli_fail(&err) : MS_EXIT_OK;
    }
    if (rc == 0 && ms_cli_progress_enabled())
      fprintf(stderr, "\r\033[Kmemstub replay: normalising %zu rows", t->n);
    if (rc == 0 && (rc = memstub_gen_build(t, go, &g, &err)) < 0) memstub_error_prefix(&err, a.in);
    // A trace with its calls (record --calls) is replayed call for call, as gen --data makes it.
    if (rc == 0 && !a.no_calls) rc = ms_cli_gen_calls("replay", a.in, t, go, g, 0, &err);
    if (rc == 0) s = &g->stub;
  }
  if (ms_cli_progress_enabled()) fputs("\r\033[K", stderr);
  if (rc == 0 && g && g->timeline) ms_cli_note("timeline: %s", g->timeline);  // as memstub gen
  if (rc == 0 && g) ms_cli_timeline_warn(a.in, g);
  if (rc == 0 && g) ms_cli_whatif_note(g, "");
  if (rc == 0 && go->profile) {
    char comp[512], unsure[768];
    memstub_gen_comp_format(g, comp, sizeof comp);
    ms_cli_note("compensation for %s: %s", go->profile_path, comp);
    if (memstub_gen_comp_unsure(g, go->profile_path, unsure, sizeof unsure))
      ms_cli_warn("%s", unsure);
  }
  if (rc == 0 && (rc = memstub_replay_run(s, &a.ro, &r, &err)) < 0)
    memstub_error_prefix(&err, a.in);
  if (rc == 0 && mf) rc = memstub_measure_commit_replay(mf, r, &err);
  if (rc == 0 && mf && !memstub_replay_heap_measured(r))
    ms_cli_warn("%s: %s; heap_bytes in %s are not the stub's heap", a.in,
                MEMSTUB_HEAP_NOT_MEASURED, memstub_measure_name(mf));
  if (rc == 0) report(&a, s, r, mf);
  memstub_measure_close(mf);
  memstub_replay_free(r);
  memstub_stub_data_free(d);
  memstub_gen_free(g);
  memstub_trace_free(t);
  return rc < 0 ? ms_cli_fail(&err) : MS_EXIT_OK;
}
