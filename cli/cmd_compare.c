// memstub compare: how closely a replay followed its original trace.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memstub/compare.h"

enum { O_CHECK = MS_CLI_LONG, O_JSON, O_LATE, O_SSLACK, O_HSLACK, O_PAGE, O_MMAP, O_PARTIAL,
       O_RSLACK, O_MSLACK, O_RECORDED };

static const ms_cli_option options[] = {
    {"check", O_CHECK, "SPEC",
     "thresholds KEY=VALUE[,KEY=VALUE...]; exit 1 if any fails.\n"
     "Repeatable. Keys (at most, unless noted):\n"
     "  total-ns|us|ms|s, total-pct   |total duration error|\n"
     "  p50-UNIT, p99-UNIT, max-UNIT  |time error| (UNIT ns|us|ms|s)\n"
     "  late                          late points (N, or P%)\n"
     "  adj-p50-UNIT ... adj-late     the same, offset removed\n"
     "  stack-exact, heap-exact       exact share, at least\n"
     "                                (P% or a fraction 0..1)\n"
     "  stack-max, heap-max           largest |error|, bytes\n"
     "  stack-mean, heap-mean         mean |error|, bytes\n"
     "  rss-, mapped-exact|max|mean   the same for rss_bytes, mapped_bytes\n"
     "  rss-p90, mapped-p90           p90 |error|, % of the original's peak\n"
     "  rss-peak, mapped-peak         |peak error|, % of the original's peak\n"
     "  cpu-, calls-, churn-total-pct |total work error|, % of the original's\n"
     "  calls-alloc-pct               the same for the allocating calls\n"
     "                                (every kind but free)\n"
     "  calls-KIND-pct                the same per kind (malloc, calloc,\n"
     "                                realloc, free, memalign)\n"
     "  cpu-p90-UNIT, calls-p90       p90 |work error| per interval\n"
     "  missing, repeated             points\n"
     "e.g. --check total-ms=1,p99-us=100,heap-exact=99.5%\n"
     "The checks are then the goals of the verdict line."},
    {"json", O_JSON, NULL, "print the report as JSON (keys: docs/compare-and-plot.md)"},
    {"late-us", O_LATE, "N", "a point is late when its error exceeds N us (default 10)"},
    {"stack-slack", O_SSLACK, "B", "stack is exact within B bytes (default 16)"},
    {"heap-slack", O_HSLACK, "B", "heap is exact within B bytes (default 16)"},
    {"rss-slack", O_RSLACK, "B", "rss_bytes is exact within B bytes (default 65536)"},
    {"mapped-slack", O_MSLACK, "B", "mapped_bytes is exact within B bytes (default a page)"},
    {"page-size", O_PAGE, "B", "heap slack for blocks from mmap (default: this host's page)"},
    {"mmap-threshold", O_MMAP, "B",
     "heap blocks of at least B bytes come from mmap\n"
     "(default 131072, glibc's M_MMAP_THRESHOLD)"},
    {"allow-partial", O_PARTIAL, NULL,
     "compare even when REPLAYED measures fewer than half of\n"
     "ORIGINAL's points"},
    {"recorded-times", O_RECORDED, NULL,
     "judge the replay against ORIGINAL's times as recorded;\n"
     "by default a trace of memstub record is judged on its\n"
     "stub's timeline, with the recorder's cost out as memstub\n"
     "gen takes it out (fitted to reference runs when the\n"
     "trace has them: memstub record --reference)"},
    {0}};

// Help text is no format string: a '%' is printed as it stands.
static const ms_cli_spec spec = {
    "compare",
    "usage: memstub compare ORIGINAL REPLAYED [--check SPEC] [--json] [options]\n"
    "\n"
    "Compare a replayed trace (memstub replay --measure) with the original trace it\n"
    "replays, aligned by REPLAYED's 'point' column. Reports the per-point time error\n"
    "(replayed - original: p50, p99 and max of its absolute value, signed min and\n"
    "max, points late by more than 10 us), the same with the constant offset (the\n"
    "median error) removed, the total duration error in ns and %, and for stack and\n"
    "heap the largest and mean absolute error and the share of exact points.\n"
    "ORIGINAL's times are those its stub replays: a trace of memstub record has the\n"
    "recorder's cost taken out, as memstub gen does (the report's 'timeline' line).\n"
    "Either file may be '-' for standard input (ORIGINAL only without threads).\n"
    "\n"
    "A REPLAYED whose metadata names what-if scales (memstub gen or replay\n"
    "--heap-scale ...) is a what-if: the report starts with a table of peak heap,\n"
    "peak resident, peak stack, duration, CPU, allocator calls and churn before\n"
    "(ORIGINAL) and after (REPLAYED), with the change, and judges REPLAYED against\n"
    "ORIGINAL with the same scales. What a stub differs in by design (its one heap\n"
    "block resized by realloc, its own frees, an uncalibrated stack) is listed apart\n"
    "from the errors, with why. The last line is the verdict, with the goals it was\n"
    "held to: heap exact 99 %, duration, resident and mapped peaks, CPU and the\n"
    "allocating calls within 1, 5, 5, 5 and 1 %, and with a calibration profile\n"
    "the stack exact 99 %; or the --check thresholds when given. The verdict alone\n"
    "does not change the exit status; --check does.\n"
    "\n",
    options, 26,
    "\n"
    "Exit status: 0 compared (and every check passed), 1 a check failed, 2 bad usage\n"
    "or input.\n"};

// The current option's argument as a byte count >= 0: 0, or -1 after a usage error.
static int arg_bytes(ms_cli_parser *p, int64_t *out) {
  if (ms_cli_arg_i64(p, out) < 0) return -1;
  if (*out >= 0) return 0;
  ms_cli_usage("compare", "%s: must not be negative, found '%s'", p->opt, p->arg);
  return -1;
}

// One option into o, cs and *json: 0, or -1 after printing a usage error.
static int take_option(ms_cli_parser *p, int c, memstub_compare_options *o,
                       memstub_compare_checks *cs, int *json) {
  memstub_error err = {0};
  double late_us;
  switch (c) {
    case O_CHECK:
      if (memstub_compare_checks_parse(cs, p->arg, &err) == 0) break;
      ms_cli_usage("compare", "--check: %s", err.msg);
      return -1;
    case O_JSON: *json = 1; break;
    case O_LATE:
      if (ms_cli_arg_double(p, &late_us) < 0) return -1;
      if (late_us < 0 || late_us > 9.2e12) {
        ms_cli_usage("compare", "--late-us: out of range: '%s'", p->arg);
        return -1;
      }
      o->late_ns = (int64_t)(late_us * 1000.0 + 0.5);
      break;
    case O_SSLACK: return arg_bytes(p, &o->stack_slack);
    case O_HSLACK: return arg_bytes(p, &o->heap_slack);
    case O_RSLACK: return arg_bytes(p, &o->rss_slack);
    case O_MSLACK: return arg_bytes(p, &o->mapped_slack);
    case O_PAGE: return arg_bytes(p, &o->page_size);
    case O_MMAP: return arg_bytes(p, &o->mmap_threshold);
    case O_PARTIAL: o->allow_partial = 1; break;
    case O_RECORDED: o->recorded_times = 1; break;
  }
  return 0;
}

// The warnings about REPLAYED's rows: points missing, repeated or out of order.
static void warn_rows(const memstub_compare_report *r, const char *orig, const char *repl) {
  if (r->missing)
    ms_cli_warn("%s measures %s of %s's %s points: %s missing (the first is point %lld)", repl,
                ms_cli_count((int64_t)r->compared), orig, ms_cli_count((int64_t)r->original_rows),
                ms_cli_count((int64_t)r->missing), (long long)r->first_missing);
  if (r->repeated)
    ms_cli_warn("%s: %s rows repeat a point already measured (the last one counts)", repl,
                ms_cli_count((int64_t)r->repeated));
  if (r->out_of_order)
    ms_cli_warn("%s: %s rows measure a point below the previous row's", repl,
                ms_cli_count((int64_t)r->out_of_order));
}

/* Traces with threads (docs/compare-and-plot.md, "Threads"): each thread and
 * the process total; the exit status as compare's. */
static int compare_threads(const memstub_trace *a, const char *orig, const char *repl,
                           const memstub_compare_options *o, memstub_compare_checks *cs,
                           int json) {
  memstub_error err = {0};
  memstub_trace *b = NULL;
  memstub_compare_threads_report *r = NULL;
  if (memstub_trace_read(repl, &b, &err) < 0 ||
      memstub_compare_threads_traces(a, orig, b, repl, o, &r, &err) < 0) {
    memstub_trace_free(b);
    return ms_cli_fail(&err);
  }
  for (int64_t k = 0; k < r->nthreads; k++) {  // each thread's, as a single thread's are
    char on[600], rn[600];
    snprintf(on, sizeof on, "%s (thread %lld)", orig, (long long)k);
    snprintf(rn, sizeof rn, "%s (thread %lld)", repl, (long long)k);
    warn_rows(r->thread[k], on, rn);
  }
  size_t failed = memstub_compare_threads_checks_run(cs, r);
  int wrc = json ? memstub_compare_threads_write_json(r, cs, stdout)
                 : memstub_compare_threads_write_text(r, cs, stdout);
  for (size_t i = 0; wrc == 0 && i < cs->n; i++) {
    const memstub_compare_check *k = &cs->c[i];
    if (k->skipped && k->thread >= r->nthreads)
      ms_cli_note("check skipped: %s: %s has no thread %lld (threads 0 to %lld)", k->spec, orig,
                  (long long)k->thread, (long long)r->nthreads - 1);
    else if (k->skipped) {  // thread N's column unknown, or every thread's (thread 0's why)
      memstub_compare_check one = *k;
      one.thread = -1;
      ms_cli_note("check skipped: %s: thread %lld: %s", k->spec,
                  (long long)(k->thread >= 0 ? k->thread : 0),
                  memstub_compare_check_skip_why(&one, r->thread[k->thread >= 0 ? k->thread : 0]));
    }
    if (!k->skipped && !k->pass)
      ms_cli_note("check failed: %s: %s is %.6g %s, %s %.6g %s", k->spec, k->what, k->value,
                  k->unit, k->dir == MEMSTUB_COMPARE_AT_MOST ? "more than" : "less than",
                  k->limit, k->unit);
  }
  memstub_compare_threads_free(r);
  memstub_trace_free(b);
  if (wrc < 0) return ms_cli_error("standard output: write failed");
  return failed ? MS_EXIT_CHECK : MS_EXIT_OK;
}

/* Compare orig and repl, print the report and the failed checks: the exit
 * status (0, MS_EXIT_CHECK when a check failed, 2 after printing why not). */
static int compare(const char *orig, const char *repl, const memstub_compare_options *o,
                   memstub_compare_checks *cs, int json) {
  memstub_error err = {0};
  memstub_compare_report *r = NULL;
  if (strcmp(orig, "-") != 0) {  // a trace with threads is compared thread by thread
    memstub_trace *a = NULL;
    if (memstub_trace_read(orig, &a, &err) == 0 && memstub_trace_column(a, "thread") >= 0) {
      int st = compare_threads(a, orig, repl, o, cs, json);
      memstub_trace_free(a);
      return st;
    }
    memstub_trace_free(a);
  }
  if (memstub_compare_files(orig, repl, o, &r, &err) < 0) return ms_cli_fail(&err);
  warn_rows(r, orig, repl);
  // A column ORIGINAL did not measure is not compared (docs/formats.md).
  if (r->stack_unknown) ms_cli_warn("%s: stack: %s: the stack is not compared", orig, r->stack_unknown);
  // Unknown in ORIGINAL, or in REPLAYED: a replay that could not measure its heap (ASan).
  const char *heap_in = r->heap_unknown_replayed ? repl : orig;
  if (r->heap_unknown) ms_cli_warn("%s: heap: %s: the heap is not compared", heap_in, r->heap_unknown);
  size_t failed = memstub_compare_checks_run(cs, r);
  int wrc =
      json ? memstub_compare_write_json(r, cs, stdout) : memstub_compare_write_text(r, cs, stdout);
  if (wrc < 0) {
    memstub_compare_free(r);
    return ms_cli_error("standard output: write failed");
  }
  char why[160];
  for (size_t i = 0; i < cs->n; i++) {
    const memstub_compare_check *k = &cs->c[i];
    int heap = strncmp(k->key, "heap", 4) == 0;
    if (k->skipped && k->thread > 0)
      ms_cli_note("check skipped: %s: %s has no thread %lld (a trace without threads is thread "
                  "0)",
                  k->spec, orig, (long long)k->thread);
    else if (k->skipped && strncmp(k->key, "rss", 3) == 0)
      ms_cli_note("check skipped: %s: rss_bytes %s", k->spec, r->rss_unknown);
    else if (k->skipped && strncmp(k->key, "mapped", 6) == 0)
      ms_cli_note("check skipped: %s: mapped_bytes %s", k->spec, r->mapped_unknown);
    else if (k->skipped && (heap || strncmp(k->key, "stack", 5) == 0))
      ms_cli_note("check skipped: %s: the %s is unknown in %s", k->spec, heap ? "heap" : "stack",
                  heap ? heap_in : orig);
    else if (k->skipped)  // the CPU time, the faults or the calls (work.c says which side)
      ms_cli_note("check skipped: %s: %s", k->spec, memstub_compare_check_skip_why(k, r));
    else if (!k->pass && memstub_compare_check_undefined(k, r, why, sizeof why))
      ms_cli_note("check failed: %s: %s is %s", k->spec, k->what, why);
    else if (!k->pass)
      ms_cli_note("check failed: %s: %s is %.6g %s, %s %.6g %s", k->spec, k->what, k->value,
                  k->unit, k->dir == MEMSTUB_COMPARE_AT_MOST ? "more than" : "less than",
                  k->limit, k->unit);
  }
  memstub_compare_free(r);
  return failed ? MS_EXIT_CHECK : MS_EXIT_OK;
}

int ms_cmd_compare(int argc, char **argv) {
  memstub_compare_options o;
  memstub_compare_options_init(&o);
  memstub_compare_checks *cs = memstub_compare_checks_create();
  if (!cs) return ms_cli_error("out of memory");
  ms_cli_parser p = {.spec = &spec};
  int c, json = 0, bad = 0, status;
  while (!bad && (c = ms_cli_next(&p, argc, argv)) > 0) bad = take_option(&p, c, &o, cs, &json) < 0;
  if (bad || c < 0)
    status = bad ? MS_EXIT_USAGE : p.status;
  else if (argc - p.optind != 2)
    status = ms_cli_usage("compare", argc - p.optind < 2
                                         ? "expected ORIGINAL and REPLAYED"
                                         : "too many arguments: expected ORIGINAL and REPLAYED");
  else
    status = compare(argv[p.optind], argv[p.optind + 1], &o, cs, json);
  memstub_compare_checks_free(cs);
  return status;
}
