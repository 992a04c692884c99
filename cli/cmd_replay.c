// memstub replay: run a trace directly on the replay engine, no compile step.
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memstub/calib.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"

static const char usage_text[] =
    "usage: memstub replay TRACE [--measure OUT.csv] [options]\n"
    "\n"
    "Replay TRACE (a trace CSV, '-' for stdin) as a memory stub: the same engine\n"
    "a compiled stub runs, fed from the trace in memory (memstub gen's data,\n"
    "without the header and the compile step). The replay takes as long as the\n"
    "trace.\n"
    "\n"
    "options:\n"
    "  -m, --measure FILE      measure every point and write the replayed trace to\n"
    "                          FILE: one row per row of TRACE, absolute totals, and\n"
    "                          the columns point, target_time_ns, late_ns and, to\n"
    "                          say why a row was late, wake_late_ns, work_ns and\n"
    "                          off_cpu_ns (docs/runtime.md)\n"
    "  -t, --timing MODE       deadline (default): absolute deadlines on\n"
    "                          CLOCK_MONOTONIC, lateness never adds up;\n"
    "                          usleep: the paper's relative sleeps\n"
    "      --margin MODE       deadline timing: 'model' (default): sleep to 1 ms\n"
    "                          before each deadline, then again to the margin the\n"
    "                          overshoot model gives that short sleep, then spin;\n"
    "                          'adaptive': the same, learning the overshoot as it\n"
    "                          goes; NS: the old fixed margin, one sleep to NS ns\n"
    "                          before the deadline, then spin\n"
    "      --reaim NS          model and adaptive: where long sleeps end before\n"
    "                          the deadline (default 1000000; -1: never re-aim)\n"
    "      --slice NS          ask the scheduler (Linux 6.12+) for a time slice of NS\n"
    "                          ns (100000 to 100000000) for the replay thread: it\n"
    "                          then waits less for a busy CPU when it wakes\n"
    "      --time-scale F      what-if: multiply every time by F\n"
    "      --heap-scale F      what-if: multiply the heap totals by F\n"
    "      --stack-scale F     what-if: multiply the stack totals by F\n"
    "  -c, --calibration FILE  compensate for the overheads measured on this host\n"
    "                          (a profile from 'memstub calibrate'), as\n"
    "                          'memstub gen --calibration' does, for --timing\n"
    "  -h, --help              show this help\n"
    "\n"
    "Exit status: 0 replayed; 2 bad usage, a trace that cannot be read or that\n"
    "needs more memory than this machine has, or a failure while replaying.\n";

static void progress(int64_t done, int64_t total, void *arg) {
  (void)arg;
  ms_cli_progress("replaying", (uint64_t)done, (uint64_t)total);
}

int ms_cmd_replay(int argc, char **argv) {
  static const struct option opts[] = {{"measure", required_argument, NULL, 'm'},
                                       {"timing", required_argument, NULL, 't'},
                                       {"margin", required_argument, NULL, 'M'},
                                       {"reaim", required_argument, NULL, 'R'},
                                       {"slice", required_argument, NULL, 'L'},
                                       {"time-scale", required_argument, NULL, 'T'},
                                       {"heap-scale", required_argument, NULL, 'H'},
                                       {"stack-scale", required_argument, NULL, 'S'},
                                       {"calibration", required_argument, NULL, 'c'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  memstub_replay_options ro;
  memstub_replay_options_init(&ro);
  const char *measure = NULL;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":m:t:c:h", opts, NULL)) != -1) {
    switch (c) {
      case 'm': measure = optarg; break;
      case 't':
        if (memstub_timing_parse(optarg, &ro.timing) < 0)
          return ms_cli_usage("replay", "--timing: expected deadline or usleep, found '%s'",
                              optarg);
        break;
      case 'M':
        if (memstub_margin_parse(optarg, &ro.margin_ns) < 0)
          return ms_cli_usage("replay", "--margin: expected model, adaptive or a number of ns "
                              ">= 0, found '%s'", optarg);
        break;
      case 'R':
        if (ms_cli_i64("replay", "--reaim", optarg, &ro.reaim_ns) < 0) return MS_EXIT_USAGE;
        if (ro.reaim_ns < -1 || ro.reaim_ns == 0)
          return ms_cli_usage("replay", "--reaim: expected a number of ns > 0 or -1, found '%s'",
                              optarg);
        break;
      case 'L':
        if (ms_cli_i64("replay", "--slice", optarg, &ro.sched_slice_ns) < 0) return MS_EXIT_USAGE;
        if (ro.sched_slice_ns < 100000 || ro.sched_slice_ns > 100000000)
          return ms_cli_usage("replay", "--slice: expected 100000 to 100000000 ns, found '%s'",
                              optarg);
        break;
      case 'T':
        if (ms_cli_double("replay", "--time-scale", optarg, &go.time_scale) < 0)
          return MS_EXIT_USAGE;
        break;
      case 'H':
        if (ms_cli_double("replay", "--heap-scale", optarg, &go.heap_scale) < 0)
          return MS_EXIT_USAGE;
        break;
      case 'S':
        if (ms_cli_double("replay", "--stack-scale", optarg, &go.stack_scale) < 0)
          return MS_EXIT_USAGE;
        break;
      case 'c': go.profile_path = optarg; break;
      case 'h': fputs(usage_text, stdout); return MS_EXIT_OK;
      case ':': return ms_cli_usage("replay", "%s needs a value", argv[optind - 1]);
      default: return ms_cli_usage("replay", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return ms_cli_usage("replay", optind == argc ? "missing TRACE" : "more than one TRACE given");
  const char *in = argv[optind];
  if (measure && !*measure) return ms_cli_usage("replay", "--measure needs a file name");
  go.source = in;
  if (measure) ro.measure = MEMSTUB_MEASURE_TRACE;
  if (ms_cli_progress_enabled()) ro.progress = progress;

  memstub_error err = {0};
  memstub_trace *t = NULL;
  memstub_gen *g = NULL;
  memstub_replay *r = NULL;
  memstub_profile prof;
  int rc = 0;
  if (go.profile_path) {
    char warn[512];
    if ((rc = memstub_profile_read(go.profile_path, &prof, &err)) < 0 ||
        (rc = memstub_profile_check(&prof, go.profile_path, warn, sizeof warn, &err)) < 0)
      return ms_cli_fail(&err);
    if (rc > 0) ms_cli_warn("%s", warn);
    go.profile = &prof;
    go.timing = ro.timing == MEMSTUB_TIMING_USLEEP ? MEMSTUB_COMP_USLEEP : MEMSTUB_COMP_DEADLINE;
    go.measured = measure != NULL;
  }
  rc = memstub_trace_read(in, &t, &err);
  if (rc == 0 && (rc = memstub_gen_build(t, &go, &g, &err)) < 0) memstub_error_prefix(&err, in);
  if (rc == 0 && go.profile) {
    char comp[512];
    memstub_gen_comp_format(g, comp, sizeof comp);
    ms_cli_note("compensation for %s: %s", go.profile_path, comp);
  }
  if (rc == 0 && (rc = memstub_replay_run(&g->stub, &ro, &r, &err)) < 0)
    memstub_error_prefix(&err, in);
  if (rc == 0 && measure) rc = memstub_replay_write(r, measure, &err);
  if (rc == 0) {
    const memstub_replay_info *i = &r->info;
    char late[96] = "";
    if (measure) {
      int64_t max = 0;
      for (int64_t k = 0; k < i->points; k++)
        if (r->rec[k].end_ns - r->rec[k].target_ns > max) max = r->rec[k].end_ns - r->rec[k].target_ns;
      snprintf(late, sizeof late, ", points late by at most %lld ns", (long long)max);
    }
    ms_cli_note("%s: replayed %lld rows (%lld points) in %lld ns, target %lld ns (%s timing%s)%s%s",
                in, (long long)g->stub.norig, (long long)i->points, (long long)i->duration_ns,
                (long long)i->target_ns, memstub_timing_name(ro.timing), late,
                measure ? "; measured trace in " : "", measure ? measure : "");
    char cpu[64] = "unknown", off[96] = "";
    if (i->cpu_ns >= 0 && i->duration_ns > 0)
      snprintf(cpu, sizeof cpu, "%.3f s, %.2f %% of the duration", (double)i->cpu_ns / 1e9,
               100.0 * (double)i->cpu_ns / (double)i->duration_ns);
    if (i->run_delay_ns >= 0)
      snprintf(off, sizeof off, "; it waited %.3f ms for a CPU", (double)i->run_delay_ns / 1e6);
    ms_cli_note("%s: replay thread CPU %s; %lld sleeps, %lld waits woke after their deadline%s",
                in, cpu, (long long)i->sleeps, (long long)i->late_wakeups, off);
  }
  memstub_replay_free(r);
  memstub_gen_free(g);
  memstub_trace_free(t);
  return rc < 0 ? ms_cli_fail(&err) : MS_EXIT_OK;
}
