// memstub calibrate: measure the stub's own time and byte overheads on this
// host (calibration/, docs/calibration.md) and write a profile for
// memstub gen --calibration.
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "memstub/calib.h"

static const char usage_text[] =
    "usage: memstub calibrate -o host.profile [--quick] [--repeat R] [--cold-delay NS]\n"
    "                          [--plot FIG]\n"
    "\n"
    "Measure the stub's own overheads on this host: the replay engine runs the\n"
    "paper's calibration traces R times (time per point, heap and stack\n"
    "allocation and use against the page faults they cause, the heap and stack\n"
    "byte overheads), fits the models and writes a profile for\n"
    "'memstub gen --calibration' and 'memstub replay --calibration'.\n"
    "A table of this host's figures beside the paper's goes to standard output.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   write the profile to FILE (atomically); '-' for stdout\n"
    "  -q, --quick         smaller traces and 10 repetitions (a few seconds)\n"
    "  -r, --repeat R      repetitions (default 100, or 10 with --quick)\n"
    "  -d, --cold-delay NS the delay before every point of the cold runs, which\n"
    "                      measure the costs as a replay with delays meets them\n"
    "                      (every fifth repetition; default 1000000, 1 ms;\n"
    "                      200000 to 20000000, or 0 for none)\n"
    "  -p, --plot FIG      draw the fits to FIG (.png, .svg or .pdf) with gnuplot\n"
    "  -h, --help          show this help\n"
    "\n"
    "Exit status: 0 calibrated; 2 bad usage, or a run or file that failed.\n";

// Redrawn at most ten times a second (a run takes a few ms), and at the end.
static void progress(int64_t done, int64_t total, void *arg) {
  (void)arg;
  static struct timespec last;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double dt = (double)(now.tv_sec - last.tv_sec) + (double)(now.tv_nsec - last.tv_nsec) / 1e9;
  if (done < total && dt < 0.1) return;
  last = now;
  ms_cli_progress("calibrating", (uint64_t)done, (uint64_t)total);
}

static void row(const char *what, const char *here, const char *paper) {
  printf("  %-34s %-36s %s\n", what, here, paper);
}

static void row3(const char *what, const char *hot, const char *cold) {
  printf("  %-34s %-30s %s\n", what, hot, cold);
}

// The hot and cold work figures side by side, in ns.
static void print_cold(const memstub_calib *c) {
  const memstub_profile *p = &c->profile;
  const memstub_calib_costs *k = &p->cold;
  char h[96], a[96];
  printf("\n  cold: a %.0f us sleep before every point, %lld repetitions (%.1f s); used for rows\n"
         "  that wait at least %.0f us (docs/calibration.md, \"Cold costs\")\n",
         (double)p->cold_delay / 1000, (long long)p->cold_repetitions, c->cold_duration_s,
         (double)p->cold_min_delay / 1000);
  row3("figure, ns", "hot (zero delays)", "cold");
#define T2(what, x, y)                                                            \
  do {                                                                            \
    snprintf(h, sizeof h, "%.0f / %.0f", p->x.ns, p->y.ns);                       \
    snprintf(a, sizeof a, "%.0f / %.0f", k->x.ns, k->y.ns);                       \
    row3(what, h, a);                                                             \
  } while (0)
#define L(what, x, per)                                                           \
  do {                                                                            \
    snprintf(h, sizeof h, "%.0f + %.0f x " per, p->x.base.ns, p->x.per_fault.ns); \
    snprintf(a, sizeof a, "%.0f + %.0f x " per, k->x.base.ns, k->x.per_fault.ns); \
    row3(what, h, a);                                                             \
  } while (0)
  snprintf(h, sizeof h, "%.1f", p->basic.ns);
  snprintf(a, sizeof a, "%.1f", k->basic.ns);
  row3("time_basic, per point", h, a);
  T2("heap alloc, no fault / fault", heap_alloc_nofault, heap_alloc_fault);
  L("heap use", heap_use, "faults");
  T2("heap shrink / mmapped in page", heap_shrink, heap_mmap_shrink_inpage);
  T2("mmapped alloc, no fault / fault", heap_mmap_alloc_nofault, heap_mmap_alloc_fault);
  L("mmapped use", heap_mmap_use, "faults");
  L("mmapped shrink", heap_mmap_shrink, "pages");
  L("move arena->mmap", heap_to_mmap, "pages");
  snprintf(h, sizeof h, "%.0f", p->heap_from_mmap.ns);
  snprintf(a, sizeof a, "%.0f", k->heap_from_mmap.ns);
  row3("move mmap->arena", h, a);
  T2("stack alloc, no fault / fault", stack_alloc_nofault, stack_alloc_fault);
  L("stack use", stack_use, "faults");
  snprintf(h, sizeof h, "%.0f", p->stack_pop.ns);
  snprintf(a, sizeof a, "%.0f", k->stack_pop.ns);
  row3("stack pop", h, a);
#undef T2
#undef L
}

static void print_table(const memstub_calib *c) {
  const memstub_profile *p = &c->profile;
  char a[160];
  printf("memstub calibrate: %lld repetitions in %.1f s\n", (long long)p->repetitions,
         c->duration_s);
  printf("  host: %s, %s, %s, %s; runtime %s %s; %lld-byte pages; %.4f cycles/ns%s\n", p->arch,
         p->cpu, p->kernel, p->libc, p->compiler, p->cflags, (long long)p->page_size,
         p->cycles_per_ns, p->cycles_invariant ? " (invariant TSC)" : " (no invariant TSC: ns)");
  printf("\n");
  row("figure", "this host", "paper (Core 2 Duo P8400, -O0)");
  snprintf(a, sizeof a, "%.0f cycles = %.1f ns, SCV %.3f", p->basic.cycles, p->basic.ns,
           p->basic.scv);
  row("time_basic, per point (eq. 1)", a, "126775 cycles, SCV 0.009");
  snprintf(a, sizeof a, "%.0f / %.0f cycles", p->heap_alloc_nofault.cycles,
           p->heap_alloc_fault.cycles);
  row("heap alloc, no fault / fault (eq.5)", a, "94 / 3722 cycles");
  snprintf(a, sizeof a, "%.0f + %.0f x faults cycles", p->heap_use.base.cycles,
           p->heap_use.per_fault.cycles);
  row("heap use (eq. 6)", a, "69 (pf+1) + 3252 (pf-1) cycles");
  snprintf(a, sizeof a, "%.0f / %.0f cycles", p->stack_alloc_nofault.cycles,
           p->stack_alloc_fault.cycles);
  row("stack alloc, no fault / fault (eq.7)", a, "48 cycles");
  snprintf(a, sizeof a, "%.0f + %.0f x faults cycles", p->stack_use.base.cycles,
           p->stack_use.per_fault.cycles);
  row("stack use (eq. 8)", a, "61 + 3358 x faults cycles");
  snprintf(a, sizeof a, "%lld / %lld bytes", (long long)p->heap_overhead_empty,
           (long long)p->heap_overhead_inuse);
  row("heap overhead, empty / in use", a, "32 / 40 bytes");
  snprintf(a, sizeof a, "%lld bytes", (long long)p->stack_offset);
  row("stack offset", a, "216 bytes");
  snprintf(a, sizeof a, "%lld bytes (R^2 %.4f, max resid %lld B)", (long long)p->stack_per_frame,
           p->stack_fit_r2, (long long)p->stack_fit_max_resid);
  row("stack overhead per frame", a, "64 bytes");
  printf("\n  beyond the paper's model\n");
  snprintf(a, sizeof a, "%.0f ns", p->wait_late.ns);
  row("deadline already passed (per point)", a, "");
  snprintf(a, sizeof a, "%.0f ns", p->measure_trace.ns);
  row("measuring a trace (per point)", a, "");
  snprintf(a, sizeof a, "%.1f us + %.1f us per ms slept (p90 %.1f us)",
           p->sleep_overshoot.base.ns / 1000, p->sleep_overshoot.per_fault.ns / 1000,
           p->sleep_overshoot_p90_ns / 1000);
  row("usleep overshoot", a, "");
  snprintf(a, sizeof a, "%.0f / %.0f / %.0f + %.0f x pages cycles", p->heap_shrink.cycles,
           p->heap_mmap_shrink_inpage.cycles, p->heap_mmap_shrink.base.cycles,
           p->heap_mmap_shrink.per_fault.cycles);
  row("heap shrink: arena / mmap in page / pages", a, "");
  snprintf(a, sizeof a, "%.0f / %.0f cycles", p->heap_mmap_alloc_nofault.cycles,
           p->heap_mmap_alloc_fault.cycles);
  row("mmapped alloc, no fault / fault", a, "");
  snprintf(a, sizeof a, "%.0f + %.0f x faults cycles", p->heap_mmap_use.base.cycles,
           p->heap_mmap_use.per_fault.cycles);
  row("mmapped use", a, "");
  snprintf(a, sizeof a, "%.0f + %.0f x pages copied / %.0f cycles", p->heap_to_mmap.base.cycles,
           p->heap_to_mmap.per_fault.cycles, p->heap_from_mmap.cycles);
  row("move arena->mmap / mmap->arena", a, "");
  snprintf(a, sizeof a, "%.0f + %.0f x faults cycles", p->stack_use_retouch.base.cycles,
           p->stack_use_retouch.per_fault.cycles);
  row("stack use, cached thread stack", a, "");
  snprintf(a, sizeof a, "%.0f cycles", p->stack_pop.cycles);
  row("stack pop (return)", a, "");
  snprintf(a, sizeof a, "%lld bytes", (long long)p->heap_overhead_mmap);
  row("heap overhead, mmapped block", a, "");
  printf("\n  goodness of fit\n");
  snprintf(a, sizeof a, "R^2 %.3f, resid %.0f ns", p->heap_use.r2, p->heap_use.resid_ns);
  row("heap use", a, "");
  snprintf(a, sizeof a, "R^2 %.3f, resid %.0f ns", p->stack_use.r2, p->stack_use.resid_ns);
  row("stack use", a, "");
  snprintf(a, sizeof a, "heap %lld/%lld exact (%lld within 1)", (long long)c->eq4_heap_exact,
           (long long)c->eq4_heap_points, (long long)c->eq4_heap_within1);
  row("eq. 4 vs faults counted", a, "");
  snprintf(a, sizeof a, "stack %lld/%lld exact (%lld within 1)", (long long)c->eq4_stack_exact,
           (long long)c->eq4_stack_points, (long long)c->eq4_stack_within1);
  row("", a, "");
  snprintf(a, sizeof a, "stack with frames %lld/%lld exact", (long long)c->eq4_stackf_exact,
           (long long)c->eq4_stackf_points);
  row("", a, "");
  snprintf(a, sizeof a, "heap %lld/%lld exact", (long long)c->model_heap_exact,
           (long long)c->model_heap_points);
  row("faults beyond pages written before", a, "");
  snprintf(a, sizeof a, "%lld/%lld points", (long long)c->rule_agree, (long long)c->rule_points);
  row("heap block placement rule", a, "");
  snprintf(a, sizeof a, "%lld of %lld samples", (long long)c->trimmed,
           (long long)c->samples_total);
  row("trimmed as preempted", a, "");
  if (c->check_points > 0) {
    snprintf(a, sizeof a, "%.0f us measured, %.0f us predicted (%+.0f%%)",
             c->check_measured_ns / 1000, c->check_predicted_ns / 1000,
             100 * (c->check_predicted_ns - c->check_measured_ns) / c->check_measured_ns);
    char what[64];
    snprintf(what, sizeof what, "model check (%lld points, no delay)", (long long)c->check_points);
    row(what, a, "");
  }
  if (p->cold_delay > 0) print_cold(c);
}

int ms_cmd_calibrate(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                       {"quick", no_argument, NULL, 'q'},
                                       {"repeat", required_argument, NULL, 'r'},
                                       {"cold-delay", required_argument, NULL, 'd'},
                                       {"plot", required_argument, NULL, 'p'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  memstub_calib_options o;
  memstub_calib_options_init(&o);
  const char *out = NULL, *plot = NULL;
  int64_t repeat = 0;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":o:qr:d:p:h", opts, NULL)) != -1) {
    switch (c) {
      case 'o': out = optarg; break;
      case 'q': o.quick = 1; break;
      case 'r':
        if (ms_cli_i64("calibrate", "--repeat", optarg, &repeat) < 0) return MS_EXIT_USAGE;
        if (repeat < 1 || repeat > 100000)
          return ms_cli_usage("calibrate", "--repeat: %lld is not between 1 and 100000",
                              (long long)repeat);
        break;
      case 'd':
        if (ms_cli_i64("calibrate", "--cold-delay", optarg, &o.cold_delay_ns) < 0)
          return MS_EXIT_USAGE;
        if (o.cold_delay_ns != 0 && (o.cold_delay_ns < MEMSTUB_CALIB_COLD_DELAY_MIN ||
                                     o.cold_delay_ns > MEMSTUB_CALIB_COLD_DELAY_MAX))
          return ms_cli_usage("calibrate", "--cold-delay: %lld is not 0 nor between %d and %d",
                              (long long)o.cold_delay_ns, MEMSTUB_CALIB_COLD_DELAY_MIN,
                              MEMSTUB_CALIB_COLD_DELAY_MAX);
        break;
      case 'p': plot = optarg; break;
      case 'h': fputs(usage_text, stdout); return MS_EXIT_OK;
      case ':': return ms_cli_usage("calibrate", "%s needs a value", argv[optind - 1]);
      default: return ms_cli_usage("calibrate", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc)
    return ms_cli_usage("calibrate", "unexpected argument '%s'", argv[optind]);
  if (!out || !*out) return ms_cli_usage("calibrate", "missing -o FILE for the profile");
  o.repetitions = repeat ? repeat : o.quick ? 10 : 100;
  if (ms_cli_progress_enabled()) o.progress = progress;

  memstub_error err = {0};
  memstub_calib *cal = NULL;
  int rc = memstub_calibrate(&o, &cal, &err);
  if (rc == 0) rc = memstub_profile_write(&cal->profile, out, &err);
  if (rc == 0) {
    // The table goes to stdout, unless the profile does.
    if (strcmp(out, "-") != 0) print_table(cal);
    fflush(stdout);
    if (plot) rc = memstub_calib_plot(cal, plot, &err);
    if (rc == 0 && strcmp(out, "-") != 0)
      ms_cli_note("profile written to %s%s%s", out, plot ? ", plot to " : "", plot ? plot : "");
  }
  memstub_calib_free(cal);
  return rc < 0 ? ms_cli_fail(&err) : MS_EXIT_OK;
}
