// memstub calibrate: measure the stub's own time and byte overheads on this
// host (calibration/, docs/calibration.md) and write a profile for
// memstub gen --calibration.
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memstub/calib.h"
#include "ms_common.h"
#include "prim.h"

enum { O_QUICK = MS_CLI_LONG, O_REPEAT };

static const ms_cli_option options[] = {
    {"output", 'o', "FILE", "write the profile to FILE (atomically); '-' for stdout"},
    {"quick", O_QUICK, NULL, "smaller traces and 30 repetitions (a few seconds)"},
    {"repeat", O_REPEAT, "R", "repetitions (default 100, or 30 with --quick)"},
    {"cold-delay", 'd', "NS",
     "the delay before every point of the cold runs, which\n"
     "measure the costs as a replay with delays meets them\n"
     "(every fifth repetition, with --quick every tenth;\n"
     "default 1000000, 1 ms;\n"
     "200000 to 20000000, or 0 for none)"},
    {"plot", 'p', "FIG", "draw the fits to FIG (.png, .svg or .pdf) with gnuplot"},
    {0}};

static const ms_cli_spec spec = {
    "calibrate",
    "usage: memstub calibrate -o host.profile [--quick] [--repeat R] [--cold-delay NS]\n"
    "                          [--plot FIG]\n"
    "\n"
    "Measure the stub's own overheads on this host: the replay engine runs the\n"
    "paper's calibration traces R times (time per point, heap and stack\n"
    "allocation and use against the page faults they cause, the heap and stack\n"
    "byte overheads), fits the models and writes a profile for\n"
    "'memstub gen --calibration' and 'memstub replay --calibration'.\n"
    "A table of this host's figures beside the paper's goes to standard output.\n"
    "\n",
    options, 22, "\nExit status: 0 calibrated; 2 bad usage, or a run or file that failed.\n"};

// Redrawn at most ten times a second (a run takes a few ms), and at the end.
static void progress(int64_t done, int64_t total, void *arg) {
  (void)arg;
  static int64_t last;
  int64_t now = ms__prim_now_ns();
  if (done < total && now - last < 100000000) return;
  last = now;
  ms_cli_progress("calibrating", (uint64_t)done, (uint64_t)total);
}

/* ---- the table ------------------------------------------------------------------ */

// A time figure for people: "34.9 ns" (tenths below 100 ns when asked), "2.72 µs".
static const char *ns_text(double ns, int tenths, char *buf, size_t cap) {
  if (tenths && fabs(ns) < 99.95) snprintf(buf, cap, "%.1f ns", ns);
  else if (!isfinite(ns) || fabs(ns) > 9e18) snprintf(buf, cap, "%g ns", ns);
  else ms__fmt_ns(llround(ns), buf, cap);
  return buf;
}

static void row(const char *what, const char *here, const char *paper) {
  printf("  %-34s %-36s %s\n", what, here, paper);
}

// Two time figures in cycles: "A / B cycles".
static void row_levels(const char *what, const memstub_calib_time *x, const memstub_calib_time *y,
                       const char *paper) {
  char a[160];
  snprintf(a, sizeof a, "%.0f / %.0f cycles", x->cycles, y->cycles);
  row(what, a, paper);
}

// A line in cycles: "BASE + PER x faults cycles".
static void row_line(const char *what, const memstub_calib_line *l, const char *paper) {
  char a[160];
  snprintf(a, sizeof a, "%.0f + %.0f x faults cycles", l->base.cycles, l->per_fault.cycles);
  row(what, a, paper);
}

// The paper's figures (Section 5.2) beside this host's.
static void print_paper(const memstub_profile *p) {
  const memstub_calib_costs *h = &p->hot;
  char a[160];
  row("figure", "this host", "paper (Core 2 Duo P8400, -O0)");
  snprintf(a, sizeof a, "%.0f cycles = %.1f ns, SCV %.3f", h->basic.cycles, h->basic.ns,
           h->basic.scv);
  row("time_basic, per point (eq. 1)", a, "126775 cycles, SCV 0.009");
  row_levels("heap alloc, no fault / fault (eq.5)", &h->heap_alloc_nofault, &h->heap_alloc_fault,
             "94 / 3722 cycles");
  row_line("heap use (eq. 6)", &h->heap_use, "69 (pf+1) + 3252 (pf-1) cycles");
  row_levels("stack alloc, no fault / fault (eq.7)", &h->stack_alloc_nofault,
             &h->stack_alloc_fault, "48 cycles");
  row_line("stack use (eq. 8)", &h->stack_use, "61 + 3358 x faults cycles");
  char b1[32], b2[32], b3[32];
  snprintf(a, sizeof a, "%s / %s", ms__fmt_bytes(p->heap_overhead_empty, b1, sizeof b1),
           ms__fmt_bytes(p->heap_overhead_inuse, b2, sizeof b2));
  row("heap overhead, empty / in use", a, "32 / 40 bytes");
  row("stack offset", ms__fmt_bytes(p->stack_offset, b1, sizeof b1), "216 bytes");
  snprintf(a, sizeof a, "%s (R^2 %.4f, max resid %s)",
           ms__fmt_bytes(p->stack_per_frame, b1, sizeof b1), p->stack_fit_r2,
           ms__fmt_bytes(p->stack_fit_max_resid, b3, sizeof b3));
  row("stack overhead per frame", a, "64 bytes");
}

// The figures the paper's model lacks.
static void print_beyond(const memstub_profile *p) {
  const memstub_calib_costs *h = &p->hot;
  char a[160];
  printf("\n  beyond the paper's model\n");
  row("deadline already passed (per point)", ns_text(p->wait_late.ns, 0, a, sizeof a), "");
  row("measuring a trace (per point)", ns_text(p->measure_trace.ns, 0, a, sizeof a), "");
  char t1[32], t2[32], t3[32];
  snprintf(a, sizeof a, "%s + %s per ms slept (p90 %s)",
           ms__fmt_ns(llround(p->sleep_overshoot.base.ns), t1, sizeof t1),
           ms__fmt_ns(llround(p->sleep_overshoot.per_fault.ns), t2, sizeof t2),
           ms__fmt_ns(llround(p->sleep_overshoot_p90_ns), t3, sizeof t3));
  row("usleep overshoot", a, "");
  snprintf(a, sizeof a, "%.0f / %.0f / %.0f + %.0f x pages cycles", h->heap_shrink.cycles,
           h->heap_mmap_shrink_inpage.cycles, h->heap_mmap_shrink.base.cycles,
           h->heap_mmap_shrink.per_fault.cycles);
  row("heap shrink: arena / mmap in page / pages", a, "");
  row_levels("mmapped alloc, no fault / fault", &h->heap_mmap_alloc_nofault,
             &h->heap_mmap_alloc_fault, "");
  row_line("mmapped use", &h->heap_mmap_use, "");
  snprintf(a, sizeof a, "%.0f + %.0f x pages copied / %.0f cycles", h->heap_to_mmap.base.cycles,
           h->heap_to_mmap.per_fault.cycles, h->heap_from_mmap.cycles);
  row("move arena->mmap / mmap->arena", a, "");
  row_line("stack use, cached thread stack", &p->stack_use_retouch, "");
  snprintf(a, sizeof a, "%.0f cycles", h->stack_pop.cycles);
  row("stack pop (return)", a, "");
  char b[32];
  row("heap overhead, mmapped block", ms__fmt_bytes(p->heap_overhead_mmap, b, sizeof b), "");
  // Resident memory (docs/memory-model.md): above the rss targets, and the
  // replay's own pages before its first point plus its records per point.
  row("resident above the rss target", ms__fmt_bytes(p->resident_overhead, b, sizeof b), "");
  snprintf(a, sizeof a, "%s + %.0f B x points measured",
           ms__fmt_bytes(p->resident_entry, b, sizeof b), p->resident_per_point);
  row("resident before the first point", a, "");
}

// How well the models fit, and the model check.
static void print_fit(const memstub_calib *c) {
  const memstub_profile *p = &c->profile;
  char a[160], r[32];
  printf("\n  goodness of fit\n");
  snprintf(a, sizeof a, "R^2 %.3f, resid %s", p->hot.heap_use.r2,
           ns_text(p->hot.heap_use.resid_ns, 0, r, sizeof r));
  row("heap use", a, "");
  snprintf(a, sizeof a, "R^2 %.3f, resid %s", p->hot.stack_use.r2,
           ns_text(p->hot.stack_use.resid_ns, 0, r, sizeof r));
  row("stack use", a, "");
  snprintf(a, sizeof a, "heap %s/%s exact (%s within 1)", ms_cli_count(c->eq4_heap_exact),
           ms_cli_count(c->eq4_heap_points), ms_cli_count(c->eq4_heap_within1));
  row("eq. 4 vs faults counted", a, "");
  snprintf(a, sizeof a, "stack %s/%s exact (%s within 1)", ms_cli_count(c->eq4_stack_exact),
           ms_cli_count(c->eq4_stack_points), ms_cli_count(c->eq4_stack_within1));
  row("", a, "");
  snprintf(a, sizeof a, "stack with frames %s/%s exact", ms_cli_count(c->eq4_stackf_exact),
           ms_cli_count(c->eq4_stackf_points));
  row("", a, "");
  snprintf(a, sizeof a, "heap %s/%s exact", ms_cli_count(c->model_heap_exact),
           ms_cli_count(c->model_heap_points));
  row("faults beyond pages written before", a, "");
  snprintf(a, sizeof a, "%s/%s points", ms_cli_count(c->rule_agree), ms_cli_count(c->rule_points));
  row("heap block placement rule", a, "");
  snprintf(a, sizeof a, "%s of %s samples", ms_cli_count(c->trimmed),
           ms_cli_count(c->samples_total));
  row("preempted (beyond 10 x MAD)", a, "");
  snprintf(a, sizeof a, "%s (not fitted)", ms_cli_count(c->heap_moved));
  row("realloc copies within the arena", a, "");
  if (c->check_points <= 0) return;
  char m1[32], m2[32];
  snprintf(a, sizeof a, "%s measured, %s predicted (%+.0f%%)",
           ms__fmt_ns(llround(c->check_measured_ns), m1, sizeof m1),
           ms__fmt_ns(llround(c->check_predicted_ns), m2, sizeof m2),
           100 * (c->check_predicted_ns - c->check_measured_ns) / c->check_measured_ns);
  char what[64];
  snprintf(what, sizeof what, "model check (%s points, no delay)", ms_cli_count(c->check_points));
  row(what, a, "");
}

/* The rows of the hot and cold table: one figure of memstub_calib_costs
 * (b: none; in whole ns, or tenths), two (a / b), or a line (per: its x). */
enum { ONE, ONE_TENTHS, TWO, LINE };
#define AT(field) offsetof(memstub_calib_costs, field)
static const struct {
  const char *what;
  int kind;
  size_t a, b;
  const char *per;
} cost_rows[] = {
    {"time_basic, per point", ONE_TENTHS, AT(basic), 0, NULL},
    {"heap alloc, no fault / fault", TWO, AT(heap_alloc_nofault), AT(heap_alloc_fault), NULL},
    {"heap use", LINE, AT(heap_use), 0, "faults"},
    {"heap shrink / mmapped in page", TWO, AT(heap_shrink), AT(heap_mmap_shrink_inpage), NULL},
    {"mmapped alloc, no fault / fault", TWO, AT(heap_mmap_alloc_nofault),
     AT(heap_mmap_alloc_fault), NULL},
    {"mmapped use", LINE, AT(heap_mmap_use), 0, "faults"},
    {"mmapped shrink", LINE, AT(heap_mmap_shrink), 0, "pages"},
    {"move arena->mmap", LINE, AT(heap_to_mmap), 0, "pages"},
    {"move mmap->arena", ONE, AT(heap_from_mmap), 0, NULL},
    {"stack alloc, no fault / fault", TWO, AT(stack_alloc_nofault), AT(stack_alloc_fault), NULL},
    {"stack use", LINE, AT(stack_use), 0, "faults"},
    {"stack pop", ONE, AT(stack_pop), 0, NULL},
};
#undef AT

// Row i of cost_rows for the figures k, into buf.
static void cost_text(size_t i, const memstub_calib_costs *k, char *buf, size_t cap) {
  const char *base = (const char *)k;
  const memstub_calib_time *a = (const void *)(base + cost_rows[i].a);
  const memstub_calib_time *b = (const void *)(base + cost_rows[i].b);
  const memstub_calib_line *l = (const void *)(base + cost_rows[i].a);
  char x[32], y[32];
  switch (cost_rows[i].kind) {
    case ONE: ns_text(a->ns, 0, buf, cap); break;
    case ONE_TENTHS: ns_text(a->ns, 1, buf, cap); break;
    case TWO:
      snprintf(buf, cap, "%s / %s", ns_text(a->ns, 0, x, sizeof x), ns_text(b->ns, 0, y, sizeof y));
      break;
    default:
      snprintf(buf, cap, "%s + %s x %s", ns_text(l->base.ns, 0, x, sizeof x),
               ns_text(l->per_fault.ns, 0, y, sizeof y), cost_rows[i].per);
      break;
  }
}

// The hot and cold work figures side by side.
static void print_cold(const memstub_calib *c) {
  const memstub_profile *p = &c->profile;
  char d[32], m[32], t[32];
  printf("\n  cold: a %s sleep before every point, %lld repetitions (%s); used for rows\n"
         "  that wait at least %s (docs/calibration.md, \"Cold costs\")\n",
         ms__fmt_ns(p->cold_delay, d, sizeof d), (long long)p->cold_repetitions,
         ns_text(c->cold_duration_s * 1e9, 0, t, sizeof t), ms__fmt_ns(p->cold_min_delay, m, sizeof m));
  printf("  %-34s %-30s %s\n", "figure", "hot (zero delays)", "cold");
  for (size_t i = 0; i < MS__ARRAY_SIZE(cost_rows); i++) {
    char h[96], k[96];
    cost_text(i, &p->hot, h, sizeof h);
    cost_text(i, &p->cold, k, sizeof k);
    printf("  %-34s %-30s %s\n", cost_rows[i].what, h, k);
  }
}

// How sure the figures are: their 95 % intervals, and the unsure ones.
static void print_sure(const memstub_profile *p) {
  static const struct {
    int which;
    const char *what;
  } kinds[] = {{MEMSTUB_FIGURES_HOT, "hot figures"},
               {MEMSTUB_FIGURES_COLD, "cold figures"},
               {MEMSTUB_FIGURES_CALLS, "allocator calls"}};
  printf("\n  how sure: 95 %% intervals (NAME_ci95_ns; docs/calibration.md, \"How sure\")\n");
  for (size_t i = 0; i < MS__ARRAY_SIZE(kinds); i++) {
    char a[160], list[400];
    double share;
    int64_t n = memstub_profile_unsure(p, kinds[i].which, &share, list, sizeof list);
    if (share < 0) snprintf(a, sizeof a, "no intervals (too few repetitions)");
    else snprintf(a, sizeof a, "+-%.1f %% at the median, %lld unsure", 100 * share, (long long)n);
    row(kinds[i].what, a, "");
    if (n > 0) printf("    unsure (wider than +-25 %% and 100 ns): %s\n", list);
  }
}

static void print_table(const memstub_calib *c) {
  const memstub_profile *p = &c->profile;
  char d[32];
  printf("memstub calibrate: %lld repetitions in %s\n", (long long)p->repetitions,
         ns_text(c->duration_s * 1e9, 0, d, sizeof d));
  char pg[32];
  printf("  host: %s, %s, %s, %s; runtime %s %s; %s pages; %.4f cycles/ns%s\n", p->arch,
         p->cpu, p->kernel, p->libc, p->compiler, p->cflags,
         ms__fmt_bytes(p->page_size, pg, sizeof pg),
         p->cycles_per_ns, p->cycles_invariant ? " (invariant TSC)" : " (no invariant TSC: ns)");
  printf("\n");
  print_paper(p);
  print_beyond(p);
  print_fit(c);
  if (p->cold_delay > 0) print_cold(c);
  print_sure(p);
}

// The range of --repeat: 0, or a usage error's exit status.
static int check_repeat(int64_t repeat) {
  if (repeat >= 1 && repeat <= 100000) return 0;
  return ms_cli_usage("calibrate", "--repeat: %lld is not between 1 and 100000",
                      (long long)repeat);
}

// The range of --cold-delay: 0, or a usage error's exit status.
static int check_cold_delay(int64_t ns) {
  if (ns == 0 || (ns >= MEMSTUB_CALIB_COLD_DELAY_MIN && ns <= MEMSTUB_CALIB_COLD_DELAY_MAX))
    return 0;
  return ms_cli_usage("calibrate", "--cold-delay: %lld is not 0 nor between %d and %d",
                      (long long)ns, MEMSTUB_CALIB_COLD_DELAY_MIN, MEMSTUB_CALIB_COLD_DELAY_MAX);
}

int ms_cmd_calibrate(int argc, char **argv) {
  memstub_calib_options o;
  memstub_calib_options_init(&o);
  const char *out = NULL, *plot = NULL;
  int64_t repeat = 0;
  ms_cli_parser p = {.spec = &spec};
  int c, bad = 0;
  while (!bad && (c = ms_cli_next(&p, argc, argv)) > 0) {
    switch (c) {
      case 'o': out = p.arg; break;
      case O_QUICK: o.quick = 1; break;
      case O_REPEAT: bad = ms_cli_arg_i64(&p, &repeat) || check_repeat(repeat); break;
      case 'd': bad = ms_cli_arg_i64(&p, &o.cold_delay_ns) || check_cold_delay(o.cold_delay_ns); break;
      case 'p': plot = p.arg; break;
    }
  }
  if (bad) return MS_EXIT_USAGE;
  if (c < 0) return p.status;
  if (p.optind != argc)
    return ms_cli_usage("calibrate", "unexpected argument '%s'", argv[p.optind]);
  if (!out || !*out) return ms_cli_usage("calibrate", "missing -o FILE for the profile");
  o.repetitions = repeat ? repeat : o.quick ? 30 : 100;
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
