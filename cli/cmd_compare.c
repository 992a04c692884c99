// memstub compare: how closely a replay followed its original trace.
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memstub/compare.h"

static const char usage_text[] =
    "usage: memstub compare ORIGINAL REPLAYED [--check SPEC] [--json] [options]\n"
    "\n"
    "Compare a replayed trace (memstub replay --measure) with the original trace it\n"
    "replays, aligned by REPLAYED's 'point' column. Reports the per-point time error\n"
    "(replayed - original: p50, p99 and max of its absolute value, signed min and\n"
    "max, points late by more than 10 us), the same with the constant offset (the\n"
    "median error) removed, the total duration error in ns and %, and for stack and\n"
    "heap the largest and mean absolute error and the share of exact points.\n"
    "Either file may be '-' for standard input.\n"
    "\n"
    "options:\n"
    "  -c, --check SPEC        thresholds KEY=VALUE[,KEY=VALUE...]; exit 1 if any fails.\n"
    "                          Repeatable. Keys (at most, unless noted):\n"
    "                            total-ns|us|ms|s, total-pct   |total duration error|\n"
    "                            p50-UNIT, p99-UNIT, max-UNIT  |time error| (UNIT ns|us|ms|s)\n"
    "                            late                          late points (N, or P%%)\n"
    "                            adj-p50-UNIT ... adj-late     the same, offset removed\n"
    "                            stack-exact, heap-exact       exact share, at least\n"
    "                                                          (P%% or a fraction 0..1)\n"
    "                            stack-max, heap-max           largest |error|, bytes\n"
    "                            stack-mean, heap-mean         mean |error|, bytes\n"
    "                            missing, repeated             points\n"
    "                          e.g. --check total-ms=1,p99-us=100,heap-exact=99.5%%\n"
    "      --json              print the report as JSON (keys: docs/compare-and-plot.md)\n"
    "      --late-us N         a point is late when its error exceeds N us (default 10)\n"
    "      --stack-slack B     stack is exact within B bytes (default 16)\n"
    "      --heap-slack B      heap is exact within B bytes (default 16)\n"
    "      --page-size B       heap slack for blocks from mmap (default: this host's page)\n"
    "      --mmap-threshold B  heap blocks of at least B bytes come from mmap\n"
    "                          (default 131072, glibc's M_MMAP_THRESHOLD)\n"
    "      --allow-partial     compare even when REPLAYED measures fewer than half of\n"
    "                          ORIGINAL's points\n"
    "  -h, --help              show this help\n"
    "\n"
    "Exit status: 0 compared (and every check passed), 1 a check failed, 2 bad usage\n"
    "or input.\n";

static int bytes_opt(const char *opt, const char *arg, int64_t *out) {
  if (ms_cli_i64("compare", opt, arg, out) < 0) return -1;
  if (*out < 0) {
    ms_cli_usage("compare", "%s: must not be negative, found '%s'", opt, arg);
    return -1;
  }
  return 0;
}

int ms_cmd_compare(int argc, char **argv) {
  enum { O_JSON = 256, O_LATE, O_SSLACK, O_HSLACK, O_PAGE, O_MMAP, O_PARTIAL };
  static const struct option opts[] = {{"check", required_argument, NULL, 'c'},
                                       {"json", no_argument, NULL, O_JSON},
                                       {"late-us", required_argument, NULL, O_LATE},
                                       {"stack-slack", required_argument, NULL, O_SSLACK},
                                       {"heap-slack", required_argument, NULL, O_HSLACK},
                                       {"page-size", required_argument, NULL, O_PAGE},
                                       {"mmap-threshold", required_argument, NULL, O_MMAP},
                                       {"allow-partial", no_argument, NULL, O_PARTIAL},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  memstub_compare_options o;
  memstub_compare_options_init(&o);
  memstub_compare_checks *cs = memstub_compare_checks_create();
  if (!cs) return ms_cli_error("out of memory");
  int json = 0, status = MS_EXIT_USAGE;
  memstub_error err = {0};
  double late_us;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":c:h", opts, NULL)) != -1) {
    switch (c) {
      case 'c':
        if (memstub_compare_checks_parse(cs, optarg, &err) < 0) {
          ms_cli_usage("compare", "--check: %s", err.msg);
          goto out;
        }
        break;
      case O_JSON: json = 1; break;
      case O_LATE:
        if (ms_cli_double("compare", "--late-us", optarg, &late_us) < 0) goto out;
        if (late_us < 0 || late_us > 9.2e12) {
          ms_cli_usage("compare", "--late-us: out of range: '%s'", optarg);
          goto out;
        }
        o.late_ns = (int64_t)(late_us * 1000.0 + 0.5);
        break;
      case O_SSLACK:
        if (bytes_opt("--stack-slack", optarg, &o.stack_slack) < 0) goto out;
        break;
      case O_HSLACK:
        if (bytes_opt("--heap-slack", optarg, &o.heap_slack) < 0) goto out;
        break;
      case O_PAGE:
        if (bytes_opt("--page-size", optarg, &o.page_size) < 0) goto out;
        break;
      case O_MMAP:
        if (bytes_opt("--mmap-threshold", optarg, &o.mmap_threshold) < 0) goto out;
        break;
      case O_PARTIAL: o.allow_partial = 1; break;
      case 'h':
        fputs(usage_text, stdout);
        status = MS_EXIT_OK;
        goto out;
      case ':': ms_cli_usage("compare", "%s needs a value", argv[optind - 1]); goto out;
      default: ms_cli_usage("compare", "unknown option '%s'", argv[optind - 1]); goto out;
    }
  }
  if (argc - optind != 2) {
    ms_cli_usage("compare", argc - optind < 2 ? "expected ORIGINAL and REPLAYED"
                                              : "too many arguments: expected ORIGINAL and "
                                                "REPLAYED");
    goto out;
  }
  const char *orig = argv[optind], *repl = argv[optind + 1];
  memstub_compare_report *r = NULL;
  if (memstub_compare_files(orig, repl, &o, &r, &err) < 0) {
    ms_cli_fail(&err);
    goto out;
  }
  if (r->missing)
    ms_cli_warn("%s measures %zu of %s's %zu points: %zu missing (the first is point %lld)", repl,
                r->compared, orig, r->original_rows, r->missing, (long long)r->first_missing);
  if (r->repeated)
    ms_cli_warn("%s: %zu rows repeat a point already measured (the last one counts)", repl,
                r->repeated);
  if (r->out_of_order)
    ms_cli_warn("%s: %zu rows measure a point below the previous row's", repl, r->out_of_order);
  size_t failed = memstub_compare_checks_run(cs, r);
  int wrc =
      json ? memstub_compare_write_json(r, cs, stdout) : memstub_compare_write_text(r, cs, stdout);
  if (wrc < 0) {
    ms_cli_error("standard output: write failed");
  } else {
    for (size_t i = 0; i < cs->n; i++) {
      const memstub_compare_check *k = &cs->c[i];
      if (!k->pass)
        ms_cli_note("check failed: %s: %s is %.6g %s, %s %.6g %s", k->spec, k->what, k->value,
                    k->unit, k->dir == MEMSTUB_COMPARE_AT_MOST ? "more than" : "less than",
                    k->limit, k->unit);
    }
    status = failed ? MS_EXIT_CHECK : MS_EXIT_OK;
  }
  memstub_compare_free(r);
out:
  memstub_compare_checks_free(cs);
  return status;
}
