// Calibration: the fitting code, the profile file (round trip, refusals),
// and end to end: a fresh quick calibration compensates the bundled samples
// so that the measured stack and heap match the trace at every row.
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"  // calibration/internal.h: the fitting code
#include "memstub/calib.h"
#include "memstub/work.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "testutil.h"

/* ---- fitting --------------------------------------------------------------- */

START_TEST(test_fit_exact_line) {
  double x[50], y[50], a, b, r2, resid;
  for (int i = 0; i < 50; i++) x[i] = i % 9, y[i] = 61 + 3358 * x[i];
  ck_assert_int_eq(ms__cal_fit(x, y, 50, 1, 0, &a, &b, &r2, &resid, NULL), 50);
  ck_assert_double_eq_tol(a, 61, 1e-9);
  ck_assert_double_eq_tol(b, 3358, 1e-9);
  ck_assert_double_eq_tol(r2, 1, 1e-12);
  ck_assert_double_eq_tol(resid, 0, 1e-6);
}
END_TEST

START_TEST(test_fit_noise_and_outliers) {
  // y = 100 + 20 x with +-1 noise; two preempted samples far above are trimmed.
  double x[202], y[202], a, b, r2, resid;
  unsigned char keep[202];
  for (int i = 0; i < 200; i++) x[i] = i % 10, y[i] = 100 + 20 * x[i] + ((i / 10) % 2 ? 1 : -1);
  x[200] = 3, y[200] = 1e6;
  x[201] = 7, y[201] = 5e5;
  ck_assert_int_eq(ms__cal_fit(x, y, 202, 1, 50, &a, &b, &r2, &resid, keep), 200);
  ck_assert(!keep[200] && !keep[201] && keep[0]);
  ck_assert_double_eq_tol(a, 100, 0.2);
  ck_assert_double_eq_tol(b, 20, 0.05);
  ck_assert(r2 > 0.99);
  ck_assert_double_eq_tol(resid, 1, 0.05);
}
END_TEST

START_TEST(test_fit_constant_and_scv) {
  double y[6] = {10, 12, 8, 10, 11, 9}, a, b, r2, resid;
  ck_assert_int_eq(ms__cal_fit(NULL, y, 6, 0, 100, &a, &b, &r2, &resid, NULL), 6);
  ck_assert_double_eq_tol(a, 10, 1e-12);
  ck_assert_double_eq(b, 0);
  double m, scv;
  ms__cal_mean_scv(y, 6, &m, &scv);
  ck_assert_double_eq_tol(m, 10, 1e-12);
  ck_assert_double_eq_tol(scv, (10.0 / 6) / 100, 1e-12);  // population variance / mean^2
  ms__cal_mean_scv(y, 1, &m, &scv);
  ck_assert_double_eq(scv, 0);
  double v[5] = {5, 1, 4, 2, 3};
  ck_assert_double_eq(ms__cal_median(v, 5), 3);
  ck_assert_double_eq(ms__cal_median(v, 4), 2.5);
  // Eq. 4: the paper's page-fault count.
  ck_assert_int_eq(ms__cal_eq4(1, 4095, 4096), 1);
  ck_assert_int_eq(ms__cal_eq4(4096, 0, 4096), 1);
  ck_assert_int_eq(ms__cal_eq4(4095, 0, 4096), 0);
  ck_assert_int_eq(ms__cal_eq4(10000, 5000, 4096), 2);
  ck_assert_int_eq(ms__cal_eq4(0, 5000, 4096), 0);
}
END_TEST

// The cold figures are medians: least absolute deviations on skewed samples.
START_TEST(test_fit_l1_skewed) {
  // y = 300 + 2000 x plus a skewed spread: per x, ten samples of +0 to +900
  // ns around the median line and one far above (a slow wake-up), the way
  // cold samples spread. The median line is 300 + 2000 x + 400; least
  // squares lands higher (the mean).
  double x[1100], y[1100], a, b, r2, resid;
  static const double spread[11] = {0, 100, 200, 300, 400, 400, 500, 600, 700, 900, 30000};
  size_t n = 0;
  for (int rep = 0; rep < 10; rep++)
    for (int f = 0; f < 10; f++)
      for (int k = 0; k < 11; k++, n++) x[n] = f, y[n] = 300 + 2000.0 * f + spread[k] + rep;
  ck_assert_int_eq(ms__cal_fit_l1(x, y, n, 1, &a, &b, &r2, &resid), 0);
  ck_assert_double_eq_tol(b, 2000, 1);
  ck_assert_double_eq_tol(a, 707, 3);  // 300 + the median of the spread and rep (407)
  double la, lb;
  ck_assert_int_eq(ms__cal_fit(x, y, n, 1, 1e9, &la, &lb, &r2, &resid, NULL), (int64_t)n);
  ck_assert(la > a + 2000);  // the mean carries the slow wake-ups
  // A constant: the median, whatever the outliers.
  double v[7] = {5, 1e9, 4, 6, 5, -1e9, 5};
  ck_assert_int_eq(ms__cal_fit_l1(NULL, v, 7, 0, &a, &b, &r2, &resid), 0);
  ck_assert_double_eq(a, 5);
  ck_assert_double_eq(b, 0);
  ck_assert_double_eq(v[1], 1e9);  // not reordered
  // An exact line, and nothing.
  for (size_t i = 0; i < 50; i++) x[i] = (double)(i % 7), y[i] = -40 + 3391 * x[i];
  ck_assert_int_eq(ms__cal_fit_l1(x, y, 50, 1, &a, &b, &r2, &resid), 0);
  ck_assert_double_eq_tol(a, -40, 1e-3);
  ck_assert_double_eq_tol(b, 3391, 1e-3);
  ck_assert_double_eq_tol(r2, 1, 1e-9);
  ck_assert_int_eq(ms__cal_fit_l1(x, y, 0, 1, &a, &b, &r2, &resid), 0);
  ck_assert_double_eq(a, 0);
}
END_TEST

/* All samples at one x (the cold heap trace moves the block to mmap at the
 * same size every time): there is no slope, and the rounding in the mean of
 * the x must not invent one. Both fits give the constant fit. */
START_TEST(test_fit_all_equal_x) {
  static const double xs[] = {3, 98, 0.1, 7};
  double x[33], y[33], v[33], a, b, r2, resid;
  unsigned seed = 1;
  for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k++) {
    for (size_t n = 5; n <= 33; n += 7) {
      double mean = 0;
      for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = xs[k];
        y[i] = v[i] = 1000 + (seed >> 16) % 5000 + 0.37 * (double)i;
        mean += y[i] / (double)n;
      }
      ck_assert_int_eq(ms__cal_fit_l1(x, y, n, 1, &a, &b, &r2, &resid), 0);
      ck_assert_msg(b == 0, "l1, x = %g, n = %zu: slope %g", xs[k], n, b);
      ck_assert_double_eq(a, ms__cal_median(v, n));
      ck_assert_int_eq(ms__cal_fit(x, y, n, 1, 1e9, &a, &b, &r2, &resid, NULL), (int64_t)n);
      ck_assert_msg(b == 0, "least squares, x = %g, n = %zu: slope %g", xs[k], n, b);
      ck_assert_double_eq_tol(a, mean, 1e-9 * mean);
    }
  }
}
END_TEST

/* ---- reproducible figures (issue 28 item 21) --------------------------------------- */

// A deterministic pseudo-random number in [0, 1).
static double unit(unsigned *seed) {
  *seed = *seed * 1103515245u + 12345u;
  return (double)((*seed >> 8) & 0xffffff) / 16777216.0;
}

/* Samples of a constant figure into s: reps repetitions of per samples,
 * base +- 200 ns (uniform), a share hit of them delayed 3 us by an
 * interruption (below the 5 us the fits took for a preemption). */
static void interrupted(ms__cal_ser *s, int reps, int per, double base, double hit,
                        unsigned seed) {
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < per; i++) {
      double v = base + 400 * (unit(&seed) - 0.5) + (unit(&seed) < hit ? 3000 : 0);
      ck_assert_int_eq(ms__cal_add(s, 1, v, r), 0);
    }
}

/* Two calibrations of one host whose samples differ only in how many short
 * interruptions fell into them (3 % and 15 %: a shared host's load) give
 * the same figure within 5 %. The least-squares mean with one trimming pass
 * gave 1551 against 2015 ns: time_heap_alloc_fault moved by 30 %. */
START_TEST(test_fit_figures_reproducible) {
  double v[2];
  for (int k = 0; k < 2; k++) {
    memstub_calib_options o;
    memstub_calib_options_init(&o);
    o.repetitions = 10;
    ms__cal_ctx c = {.o = &o, .cpn = 1, .invariant = 1, .page = 4096};
    c.out = calloc(1, sizeof *c.out);
    c.room = calloc(10, sizeof *c.room);
    ck_assert(c.out && c.room);
    interrupted(&c.s[MS__S_HALLOC1], 10, 11, 1500, k ? 0.15 : 0.03, 7);
    ck_assert_int_eq(ms__cal_fit_figures(&c), 0);
    v[k] = c.out->profile.hot.heap_alloc_fault.ns;
    for (int i = 0; i < MS__S_COUNT; i++) ms__cal_ser_free(&c.s[i]), ms__cal_ser_free(&c.cs[i]);
    free(c.room);
    memstub_calib_free(c.out);
  }
  ck_assert_msg(fabs(v[1] - v[0]) <= 0.05 * v[0], "%g against %g ns", v[0], v[1]);
}
END_TEST

/* The 95 % interval of ms__cal_estimate: it holds the true median as often
 * as it says on a steady host, widens when the host changes during the
 * calibration (batches of consecutive repetitions), and is unknown from one
 * repetition. */
START_TEST(test_estimate_interval) {
  enum { R = 10, PER = 40, N = R * PER };
  static double x[N], y[N];
  static int32_t rep[N];
  ms__cal_est e;
  // Steady: 1000 +- 300 ns, and 5 % of the samples far above (preempted);
  // the median of that mix is 700 + 600 x 0.5 / 0.95.
  double median = 700 + 600 * 0.5 / 0.95;
  int covered = 0;
  for (unsigned seed = 1; seed <= 200; seed++) {
    unsigned sd = seed;
    for (int i = 0; i < N; i++) {
      rep[i] = i / PER;
      y[i] = 1000 + 600 * (unit(&sd) - 0.5);
      if (unit(&sd) < 0.05) y[i] += 50000;
    }
    ck_assert_int_eq(ms__cal_estimate(NULL, y, rep, N, 0, 5000, 0, &e), 0);
    ck_assert_int_eq(e.groups, R);
    ck_assert(e.ci_a > 0 && e.ci_a < 100);
    covered += fabs(e.a - median) <= e.ci_a;
  }
  ck_assert_msg(covered >= 180, "the interval held the median in %d of 200", covered);
  // The host slows by a fifth halfway: the interval spans both halves'
  // figures' difference at least in part, as batches of consecutive
  // repetitions see it (interleaved groups would each hold both halves).
  unsigned sd = 3;
  for (int i = 0; i < N; i++) y[i] = (rep[i] < R / 2 ? 1000 : 1200) + 100 * (unit(&sd) - 0.5);
  ck_assert_int_eq(ms__cal_estimate(NULL, y, rep, N, 0, 5000, 0, &e), 0);
  ck_assert_msg(e.ci_a >= 50, "half-width %g ns over a step of 200 ns", e.ci_a);
  // A line: y = 300 + 2000 x with noise; both coefficients have intervals.
  for (int i = 0; i < N; i++) x[i] = i % 7, y[i] = 300 + 2000 * x[i] + 100 * (unit(&sd) - 0.5);
  ck_assert_int_eq(ms__cal_estimate(x, y, rep, N, 1, 5000, 0, &e), 0);
  ck_assert_double_eq_tol(e.b, 2000, 10);
  ck_assert_double_eq_tol(e.a, 300, 30);
  ck_assert(e.ci_a > 0 && e.ci_a < 50 && e.ci_b > 0 && e.ci_b < 10);
  ck_assert_int_eq(e.outliers, 0);
  // One repetition: no interval. Least squares (mean): the far ones trimmed.
  for (int i = 0; i < PER; i++) rep[i] = 0, y[i] = 500 + (i == 3 ? 1e6 : i % 3);
  ck_assert_int_eq(ms__cal_estimate(NULL, y, rep, PER, 0, 100, 1, &e), 0);
  ck_assert_double_eq(e.ci_a, -1);
  ck_assert_int_eq(e.groups, 1);
  ck_assert_int_eq(e.outliers, 1);
  ck_assert_double_eq_tol(e.a, 501, 0.05);
  ck_assert_int_eq(ms__cal_estimate(NULL, y, rep, 0, 0, 100, 0, &e), 0);
  ck_assert(e.a == 0 && e.ci_a == -1);
}
END_TEST

/* Where the block is in the runs that do not measure the heap, and which
 * growths realloc copied within the arena: the calibration heap trace's
 * points as this host's fault runs counted them. */
START_TEST(test_placement_from_faults) {
  const int64_t pg = 4096, pad = 16;
  // Grown in place in the arena past the threshold (the heap run had moved
  // it to mmap): 120906 -> 137913 bytes, 4 faults.
  ck_assert(!ms__cal_unmeasured_mapped(0, 120906, 137913, pad, 4, pg));
  ck_assert(!ms__cal_arena_moved(120906, 137913, pad, 4, pg));
  // Moved to mmap: 132139 -> 149146 bytes, 37 faults (the copy).
  ck_assert(ms__cal_unmeasured_mapped(0, 132139, 149146, pad, 37, pg));
  // Copied within the arena (below the threshold): 35318 -> 85327, 21 faults.
  ck_assert(ms__cal_arena_moved(35318, 85327, pad, 21, pg));
  ck_assert(!ms__cal_unmeasured_mapped(0, 35318, 85327, pad, 21, pg));
  // Grown in place by 50009 bytes: 12 faults, as many as the new pages.
  ck_assert(!ms__cal_arena_moved(125318, 175327, pad, 12, pg));
  ck_assert(!ms__cal_arena_moved(0, 90000, pad, 5, pg));
  // Mapped: stays mapped while growing or above the threshold, goes back
  // below it (the runtime's rule), whatever the faults.
  ck_assert(ms__cal_unmeasured_mapped(1, 149146, 265327, pad, 29, pg));
  ck_assert(ms__cal_unmeasured_mapped(1, 265327, 140009, pad, 0, pg));
  ck_assert(!ms__cal_unmeasured_mapped(1, 137851, 128851, pad, 0, pg));
}
END_TEST

/* ---- a quick calibration, shared by the tests below ----------------------------- */

static memstub_calib *cal;

static const memstub_profile *profile(void) {
  if (!cal) {
    memstub_calib_options o;
    memstub_calib_options_init(&o);
    o.quick = 1;
    o.repetitions = 3;
    memstub_error err = {0};
    ck_assert_msg(memstub_calibrate(&o, &cal, &err) == 0, "%s", err.msg);
  }
  return &cal->profile;
}

START_TEST(test_calibrate_quick) {
  const memstub_profile *p = profile();
  ck_assert_str_eq(p->arch, memstub_host_arch());
  ck_assert_int_eq(p->page_size, sysconf(_SC_PAGESIZE));
  ck_assert_int_eq(p->repetitions, 3);
  ck_assert(p->cycles_per_ns > 0);
  ck_assert(p->hot.basic.ns >= 0 && p->hot.basic.ns < 100000);
  ck_assert(p->hot.stack_use.per_fault.ns > 0);
#if !defined(MEMSTUB_SANITIZED)
  // glibc's arena grows the block in place; a sanitizer's allocator copies
  // it at every realloc, and copies are not fitted (calibration/runs.c).
  ck_assert(p->hot.heap_use.per_fault.ns > 0);
  ck_assert(p->hot.heap_alloc_fault.ns > p->hot.heap_alloc_nofault.ns);
  ck_assert(p->cold.heap_alloc_fault.ns > p->cold.heap_alloc_nofault.ns);
#endif
  ck_assert(cal->nbasic == 3);
  ck_assert(cal->check_points > 0 && cal->check_measured_ns > 0);
  // Cold runs: every fifth repetition, at least one; then figures of their own.
  ck_assert_int_eq(p->cold_delay, MEMSTUB_CALIB_COLD_DELAY_DEFAULT);
  ck_assert_int_eq(p->cold_repetitions, 1);
  ck_assert_int_gt(p->cold_min_delay, 0);
  ck_assert(cal->cold_duration_s > 0.2 && cal->cold_duration_s < cal->duration_s);
  ck_assert(p->cold.basic.ns > 0);
  ck_assert(p->cold.heap_mmap_use.per_fault.ns > 0);
  ck_assert(p->cold.stack_use.per_fault.ns > 0);
  ck_assert(p->cold.heap_to_mmap.base.ns + 30 * p->cold.heap_to_mmap.per_fault.ns > 0);
  // The copy into an mmapped block, for 30 pages: positive. Its slope alone
  // (per page copied, a few hundred ns) is within the noise of a quick
  // calibration's three repetitions on a loaded 2-core machine (it came out
  // at 0 there), as the cold figure's above.
  ck_assert(p->hot.heap_to_mmap.base.ns + 30 * p->hot.heap_to_mmap.per_fault.ns > 0);
  ck_assert(cal->nsamples[MEMSTUB_CALIB_S_COLD_HEAP_MMAP_USE] > 0);
  // How sure: three repetitions make three batches, so the hot figures have
  // intervals; the one cold repetition gives none (-1), and says so.
  ck_assert(p->hot.heap_alloc_fault.ci_ns >= 0 && p->hot.stack_use.per_fault.ci_ns >= 0);
  ck_assert(p->cold.heap_alloc_fault.ci_ns == -1);
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++) ck_assert(p->call_ci_ns[k] >= 0);
  double share;
  char list[512];
  ck_assert_int_ge(memstub_profile_unsure(p, MEMSTUB_FIGURES_HOT, &share, list, sizeof list), 0);
  ck_assert(share >= 0);
  ck_assert_int_eq(memstub_profile_unsure(p, MEMSTUB_FIGURES_COLD, &share, list, sizeof list), 0);
  ck_assert(share == -1 && list[0] == '\0');
  ck_assert(cal->nsamples[MEMSTUB_CALIB_S_COLD_STACK_USE] > 0);
  // The allocator calls (calls.c): every kind and class measured, a large
  // malloc (mmap, a page written, munmap) dearer than a tiny one; the spin's rate.
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++)
    ck_assert_msg(p->call_ns[k] > 0 && p->call_ns[k] < 1e7, "call %d: %g ns", k, p->call_ns[k]);
  ck_assert(p->call_ns[MEMSTUB_CALL_MALLOC * 4 + 3] > p->call_ns[MEMSTUB_CALL_MALLOC * 4 + 0]);
  ck_assert(p->spin_steps_per_ns > 0.01 && p->spin_steps_per_ns < 100);
  // The work's memory touches (issue 32): every block size measured.
  for (int k = 0; k < MEMSTUB_WORK_TOUCH_SIZES; k++)
    ck_assert_msg(p->touch_ns[k] > 0 && p->touch_ns[k] < 1e4, "touch %d: %g ns", k, p->touch_ns[k]);
#if !defined(MEMSTUB_SANITIZED)
  // docs/runtime.md: offset 0 and 80 bytes per frame with gcc 12 and clang 14 at -O2.
  ck_assert_int_ge(p->stack_per_frame, 16);
  ck_assert_int_le(p->stack_per_frame, 512);
  ck_assert_int_le(llabs(p->stack_offset), 64);
  ck_assert_int_le(p->stack_fit_max_resid, 8);
  ck_assert_int_le(llabs(p->heap_overhead_inuse), 8);
  ck_assert_int_eq(p->heap_overhead_empty, 0);
  // Resident: above its targets a replay keeps the partly written pages (at
  // most one page of the block and one of the mapping); before its first
  // point its thread's pages and the records, a record's bytes per point.
  ck_assert_int_ge(p->resident_overhead, 0);
  ck_assert_int_le(p->resident_overhead, 2 * p->page_size);
  ck_assert_int_gt(p->resident_entry, 0);
  ck_assert_int_lt(p->resident_entry, 64 << 20);
  ck_assert_msg(p->resident_per_point >= 0.5 * sizeof(memstub_replay_record) &&
                    p->resident_per_point <= 4.0 * sizeof(memstub_replay_record),
                "resident_per_point_bytes %g, a record %zu", p->resident_per_point,
                sizeof(memstub_replay_record));
#endif
}
END_TEST

/* ---- the profile file ------------------------------------------------------------ */

static char *profile_text(const memstub_profile *p, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/p.profile", dir);
  memstub_error err = {0};
  ck_assert_msg(memstub_profile_write(p, path, &err) == 0, "%s", err.msg);
  char *text = tu_read_file(path);
  ck_assert_ptr_nonnull(text);
  return text;
}

START_TEST(test_profile_round_trip) {
  const memstub_profile *p = profile();
  char *dir = tu_mkdtemp(), path[4096];
  snprintf(path, sizeof path, "%s/host.profile", dir);
  memstub_error err = {0};
  ck_assert_msg(memstub_profile_write(p, path, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(tu_count_entries(dir), 1);  // no temporary file left
  memstub_profile q;
  ck_assert_msg(memstub_profile_read(path, &q, &err) == 0, "%s", err.msg);
  ms__cal_key kp[MS__CAL_MAXKEYS], kq[MS__CAL_MAXKEYS];
  size_t n = ms__cal_keys((memstub_profile *)p, kp, MS__CAL_MAXKEYS);
  ck_assert_int_eq(ms__cal_keys(&q, kq, MS__CAL_MAXKEYS), n);
  ck_assert(n > 60);
  for (size_t i = 0; i < n; i++) {
    switch (kp[i].type) {
      case MS__CAL_TEXT: ck_assert_str_eq(kp[i].ptr, kq[i].ptr); break;
      case MS__CAL_I64: ck_assert_int_eq(*(int64_t *)kp[i].ptr, *(int64_t *)kq[i].ptr); break;
      case MS__CAL_INT: ck_assert_int_eq(*(int *)kp[i].ptr, *(int *)kq[i].ptr); break;
      default: {
        double a = *(double *)kp[i].ptr, b = *(double *)kq[i].ptr;
        ck_assert_msg(fabs(a - b) <= 1e-9 * fabs(a) + 1e-12, "%s: %.17g != %.17g", kp[i].key, a,
                      b);
      }
    }
  }
  ck_assert_int_eq(memstub_profile_check(&q, path, NULL, 0, &err), 0);
  // The calls' figures among them, under their documented keys.
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++)
    ck_assert(fabs(q.call_ns[k] - p->call_ns[k]) <= 1e-9 * p->call_ns[k]);
  ck_assert(fabs(q.spin_steps_per_ns - p->spin_steps_per_ns) <= 1e-9 * p->spin_steps_per_ns);
  char *text = tu_read_file(path);
  ck_assert_ptr_nonnull(strstr(text, "\ncall_malloc_tiny_ns = "));
  ck_assert_ptr_nonnull(strstr(text, "\ncall_memalign_large_ns = "));
  ck_assert_ptr_nonnull(strstr(text, "\nspin_steps_per_ns = "));
  ck_assert_ptr_nonnull(strstr(text, "\ntouch_64m_ns = "));
  for (int k = 0; k < MEMSTUB_WORK_TOUCH_SIZES; k++)
    ck_assert(fabs(q.touch_ns[k] - p->touch_ns[k]) <= 1e-9 * p->touch_ns[k]);
  free(text);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Replace the line starting with `key =` by repl (NULL: delete it); returns the
// new text and the 1-based line number of the change.
static char *edit(const char *text, const char *key, const char *repl, int *line) {
  size_t kl = strlen(key), cap = strlen(text) + (repl ? strlen(repl) : 0) + 2;
  char *out = malloc(cap), *o = out;
  const char *s = text;
  int ln = 0;
  *line = 0;
  while (*s) {
    const char *nl = strchr(s, '\n');
    size_t len = nl ? (size_t)(nl - s) + 1 : strlen(s);
    ln++;
    if (!*line && strncmp(s, key, kl) == 0 && (s[kl] == ' ' || s[kl] == '=')) {
      *line = ln;
      if (repl) o += sprintf(o, "%s\n", repl);
    } else {
      memcpy(o, s, len);
      o += len;
    }
    s += len;
  }
  *o = '\0';
  ck_assert_msg(*line > 0, "no key %s", key);
  return out;
}

static void refused(const char *text, const char *what, int line) {
  memstub_profile p;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_profile_parse("bad.profile", text, strlen(text), &p, &err), -EINVAL);
  char want[64];
  if (line > 0) {
    snprintf(want, sizeof want, "bad.profile:%d: ", line);
    ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "'%s' does not start with '%s'",
                  err.msg, want);
  }
  ck_assert_msg(strstr(err.msg, what) != NULL, "'%s' not in '%s'", what, err.msg);
}

START_TEST(test_profile_refused) {
  char *dir = tu_mkdtemp();
  char *good = profile_text(profile(), dir);
  memstub_profile p;
  memstub_error err = {0};
  ck_assert_msg(memstub_profile_parse("good", good, strlen(good), &p, &err) == 0, "%s", err.msg);
  struct {
    const char *key, *repl, *what;
  } cases[] = {
      {"page_size_bytes", "page_size_bytes = 4097", "page_size_bytes: must be a power of two"},
      {"stack_offset_bytes", "stack_offset_bytes 0", "expected 'key = value'"},
      {"stack_offset_bytes", "stack_offset_byte = 0", "unknown key 'stack_offset_byte'"},
      {"time_basic_cycles", "time_basic_cycles = fast", "time_basic_cycles: expected a number"},
      {"repetitions", "repetitions = 1.5", "repetitions: expected an integer"},
      {"format", "format = 1", "profile format 1; this memstub reads format 2"},
      {"cold_delay_ns", "cold_delay_ns = -1", "cold_delay_ns: must be 0 or more"},
      {"cold_repetitions", "cold_repetitions = x", "cold_repetitions: expected an integer"},
      {"time_cold_basic_cycles", "time_cold_basic_cyles = 1",
       "unknown key 'time_cold_basic_cyles'"},
      {"time_cold_basic_ns", "time_cold_basic_ns = 1e6",
       "time_cold_basic_ns = 1e+06 disagrees with"},
      {"time_cold_heap_mmap_use_per_fault_ns", "time_cold_heap_mmap_use_per_fault_ns = -5",
       "time_cold_heap_mmap_use_per_fault_ns: must be 0 or more"},
      {"time_heap_to_mmap_per_page_scv", "time_heap_to_mmap_per_page_scv = -1",
       "must be 0 or more"},
      {"time_basic_ns", "time_basic_ns = 1e6", "time_basic_ns = 1e+06 disagrees with"},
      {"time_basic_scv", "time_basic_scv = -1", "time_basic_scv: must be 0 or more"},
      {"time_basic_ci95_ns", "time_basic_ci95_ns = -5",
       "time_basic_ci95_ns: must be 0 or more, or -1 (unknown)"},
      {"call_free_large_ci95_ns", "call_free_large_ci95_ns = -0.5",
       "call_free_large_ci95_ns: must be 0 or more, or -1 (unknown)"},
      {"faults_eq4_heap_agreement", "faults_eq4_heap_agreement = 2", "between 0 and 1"},
      {"host.cpu", "= nothing", "missing key before '='"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int line;
    char *t = edit(good, cases[i].key, cases[i].repl, &line);
    refused(t, cases[i].what, line);
    free(t);
  }
  // Missing and repeated keys.
  int line;
  char *t = edit(good, "stack_offset_bytes", NULL, &line);
  refused(t, "missing key 'stack_offset_bytes'", -1);
  free(t);
  t = edit(good, "time_cold_stack_pop_scv", NULL, &line);
  refused(t, "missing key 'time_cold_stack_pop_scv'", -1);
  free(t);
  // A format-1 profile (no cold keys, a constant time_heap_to_mmap) is refused
  // by its format line, before any key is missed.
  int fline;
  t = edit(good, "format", "format = 1", &fline);
  char *t2 = edit(t, "time_heap_to_mmap_base_cycles", "time_heap_to_mmap_cycles = 1", &line);
  refused(t2, "profile format 1; this memstub reads format 2 (calibrate again)", fline);
  free(t2);
  free(t);
  // A profile from before the resident keys (issue 13) reads, with 0 for them.
  t = edit(good, "resident_overhead_bytes", NULL, &line);
  t2 = edit(t, "resident_entry_bytes", NULL, &line);
  free(t);
  t = edit(t2, "resident_per_point_bytes", NULL, &line);
  free(t2);
  ck_assert_msg(memstub_profile_parse("old", t, strlen(t), &p, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(p.resident_overhead, 0);
  ck_assert_int_eq(p.resident_entry, 0);
  ck_assert(p.resident_per_point == 0);
  free(t);
  // A profile from before the calls' figures (issue 14) reads, with 0 for them.
  static const char *const calls[] = {MEMSTUB_WORK_CALL_COLUMNS};
  t = strdup(good);
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++) {
    char key[64];
    snprintf(key, sizeof key, "call_%s_ns", calls[k] + 6);
    t2 = edit(t, key, NULL, &line);
    free(t);
    t = t2;
  }
  t2 = edit(t, "spin_steps_per_ns", NULL, &line);
  free(t);
  // And before the work's memory touches (issue 32 item 2).
  static const char *const touch[] = {MEMSTUB_WORK_TOUCH_KEYS};
  for (int k = 0; k < MEMSTUB_WORK_TOUCH_SIZES; k++) {
    t = edit(t2, touch[k], NULL, &line);
    free(t2);
    t2 = t;
  }
  ck_assert_msg(memstub_profile_parse("old", t2, strlen(t2), &p, &err) == 0, "%s", err.msg);
  ck_assert(p.call_ns[0] == 0 && p.call_ns[MEMSTUB_WORK_CALLS - 1] == 0 && p.spin_steps_per_ns == 0);
  ck_assert(p.touch_ns[0] == 0 && p.touch_ns[MEMSTUB_WORK_TOUCH_SIZES - 1] == 0);
  free(t2);
  t = edit(good, "touch_1m_ns", "touch_1m_ns = -1", &line);
  refused(t, "touch_1m_ns: must be 0 or more", line);
  free(t);
  t = edit(good, "call_free_small_ns", "call_free_small_ns = -3", &line);
  refused(t, "call_free_small_ns: must be 0 or more", line);
  free(t);
  t = edit(good, "resident_entry_bytes", "resident_entry_bytes = lots", &line);
  refused(t, "resident_entry_bytes: expected an integer", line);
  free(t);
  // A profile from before the intervals (issue 28) reads, every interval
  // unknown (-1); so does one that says -1.
  ms__cal_key keys[MS__CAL_MAXKEYS];
  size_t nkeys = ms__cal_keys(&p, keys, MS__CAL_MAXKEYS), nci = 0;
  t = strdup(good);
  for (size_t i = 0; i < nkeys; i++) {
    if (!keys[i].unknown) continue;
    t2 = edit(t, keys[i].key, NULL, &line);
    free(t);
    t = t2;
    nci++;
  }
  ck_assert_int_ge(nci, 60);
  ck_assert_msg(memstub_profile_parse("old", t, strlen(t), &p, &err) == 0, "%s", err.msg);
  ck_assert(p.hot.basic.ci_ns == -1 && p.cold.stack_pop.ci_ns == -1 &&
            p.hot.heap_use.per_fault.ci_ns == -1 && p.call_ci_ns[0] == -1);
  double share;
  ck_assert_int_eq(memstub_profile_unsure(&p, MEMSTUB_FIGURES_HOT, &share, NULL, 0), 0);
  ck_assert(share == -1);
  free(t);
  t = edit(good, "time_basic_ci95_ns", "time_basic_ci95_ns = -1", &line);
  ck_assert_msg(memstub_profile_parse("unknown", t, strlen(t), &p, &err) == 0, "%s", err.msg);
  ck_assert(p.hot.basic.ci_ns == -1);
  free(t);
  // Without cold figures (cold_delay_ns = 0) the profile is valid.
  t = edit(good, "cold_delay_ns", "cold_delay_ns = 0", &line);
  ck_assert_msg(memstub_profile_parse("nocold", t, strlen(t), &p, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(p.cold_delay, 0);
  free(t);
  char *twice = malloc(strlen(good) + 64);
  int nlines = 0;
  for (const char *c = good; *c; c++) nlines += *c == '\n';
  sprintf(twice, "%srepetitions = 7\n", good);
  t = edit(good, "repetitions", NULL, &line);  // just to find its line
  free(t);
  char what[64];
  snprintf(what, sizeof what, "repetitions given twice (first on line %d)", line);
  refused(twice, what, nlines + 1);
  free(twice);
  // A file that cannot be read.
  ck_assert_int_eq(memstub_profile_read("/nonexistent/x.profile", &p, &err), -ENOENT);
  free(good);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Regressions found by tests/fuzz/fuzz_profile (and, for the ends of the
 * number range, by reading its round-trip rule): messages quote the file's
 * text printably, a text value is one line as the writer writes it, and
 * whatever the reader accepts, a written copy reads back. */
START_TEST(test_profile_fuzz_regressions) {
  char *dir = tu_mkdtemp();
  char *good = profile_text(profile(), dir);
  memstub_profile p;
  memstub_error err = {0};
  int line;
  // A key with control characters (the fuzzer's input): quoted with '?'.
  char *t = edit(good, "host.cpu", "host\x0e\x0e.cpu = x", &line);
  refused(t, "unknown key 'host??.cpu'", line);
  ck_assert_int_eq(memstub_profile_parse("bad.profile", t, strlen(t), &p, &err), -EINVAL);
  for (const char *c = err.msg; *c; c++) ck_assert_int_ge((unsigned char)*c, 0x20);
  free(t);
  // A text value with a control character: refused (the writer would have
  // written a space, and the copy read back differently).
  t = edit(good, "host.cpu", "host.cpu = Xeon\x01", &line);
  refused(t, "host.cpu: control character 0x01 in the text (at character 5)", line);
  free(t);
  // A tab is kept as the space the writer writes.
  t = edit(good, "host.cflags", "host.cflags = -O2\t-g", &line);
  ck_assert_msg(memstub_profile_parse("tab", t, strlen(t), &p, &err) == 0, "%s", err.msg);
  ck_assert_str_eq(p.cflags, "-O2 -g");
  free(t);
  // A number that its ten written digits make infinite.
  t = edit(good, "time_basic_scv", "time_basic_scv = 1.7976931348623e308", &line);
  refused(t, "time_basic_scv: 1.7976931348623e308 is out of range", line);
  free(t);

  // At the edge of the 1 % slack between time_basic_ns and
  // time_basic_cycles / cycles_per_ns, the writer's rounding to ten digits
  // pushed an accepted figure out (1258376913536 was accepted, written as
  // 1.258376914e+12 and refused). Around the edge, whatever is accepted
  // must read back once written. (Figures that large are beyond what a host
  // measures now: the edge is tried at 0.4 s, where ten digits end at a
  // tenth of a ns, with figures of hundredths.)
  memstub_profile q = *profile();
  ms__cal_key keys[MS__CAL_MAXKEYS];
  size_t nk = ms__cal_keys(&q, keys, MS__CAL_MAXKEYS);
  q.cycles_per_ns = 2.596132796;
  q.hot.basic.cycles = 1000000000.123;
  for (size_t i = 0; i < nk; i++)
    if (keys[i].cycles_of >= 0)
      *(double *)keys[i].ptr = *(double *)keys[keys[i].cycles_of].ptr / q.cycles_per_ns;
  char *edge = profile_text(&q, dir);
  double want = q.hot.basic.cycles / q.cycles_per_ns, top = floor(want + 0.01 * want + 0.5);
  int accepted = 0, refusals = 0;
  for (int k = 0; k < 200; k++) {
    char repl[80];
    snprintf(repl, sizeof repl, "time_basic_ns = %.2f", top + 1 - k * 0.01);
    t = edit(edge, "time_basic_ns", repl, &line);
    if (memstub_profile_parse("edge", t, strlen(t), &p, &err) == 0) {
      accepted++;
      char *back = profile_text(&p, dir);
      ck_assert_msg(memstub_profile_parse("back", back, strlen(back), &q, &err) == 0,
                    "%s accepted, its written copy refused: %s", repl, err.msg);
      free(back);
    } else {
      refusals++;
      ck_assert_msg(strstr(err.msg, "time_basic_ns = ") != NULL, "%s", err.msg);
    }
    free(t);
  }
  ck_assert_int_gt(accepted, 0);
  ck_assert_int_gt(refusals, 0);
  free(edge);

  // cycles_per_ns so small that cycles / cycles_per_ns is infinite: no *_ns
  // figure agrees with that (every one did).
  q = *profile();
  nk = ms__cal_keys(&q, keys, MS__CAL_MAXKEYS);
  q.cycles_per_ns = 1e-307;
  for (size_t i = 0; i < nk; i++)
    if (keys[i].cycles_of >= 0) {
      *(double *)keys[keys[i].cycles_of].ptr = 1e10;
      *(double *)keys[i].ptr = 5;
    }
  t = profile_text(&q, dir);
  refused(t, "disagrees with time_basic_cycles / cycles_per_ns = inf", -1);
  free(t);
  free(good);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Figures no host could have are refused, the figure and its line named
 * (issue 28 item 19: a basic cost of 1e17 ns, within the 2^60 limit, was
 * taken and gave a stub "154075046 s of predicted work"). */
START_TEST(test_profile_implausible) {
  char *dir = tu_mkdtemp();
  memstub_profile q = *profile();
  q.hot.basic.ns = 1e17;
  q.hot.basic.cycles = 1e17 * q.cycles_per_ns;
  char *t = profile_text(&q, dir);
  int line;
  free(edit(t, "time_basic_ns", "time_basic_ns = 1e17", &line));  // the figure's line
  refused(t, "time_basic_ns = 1e+17 is beyond what a host measures (at most 1 s): a "
             "hand-edited or damaged profile? calibrate again", line);
  free(t);
  // One figure of each kind, just beyond its bound; the same just within.
  char *good = profile_text(profile(), dir);
  struct {
    const char *key, *bad, *fine, *what;
  } cases[] = {
      {"call_malloc_tiny_ns", "call_malloc_tiny_ns = 1.5e9", "call_malloc_tiny_ns = 1e9",
       "call_malloc_tiny_ns = 1.5e+09 is beyond what a host measures (at most 1 s a call)"},
      {"heap_overhead_inuse_bytes", "heap_overhead_inuse_bytes = 1073741825",
       "heap_overhead_inuse_bytes = 1073741824", "(at most 1 GiB)"},
      {"stack_offset_bytes", "stack_offset_bytes = -2000000000", "stack_offset_bytes = -4096",
       "stack_offset_bytes = -2e+09 is beyond"},
      {"resident_per_point_bytes", "resident_per_point_bytes = 2e9",
       "resident_per_point_bytes = 100", "resident_per_point_bytes = 2e+09 is beyond"},
      {"page_size_bytes", "page_size_bytes = 1152921504606846976", "page_size_bytes = 65536",
       "page_size_bytes = 1.15292e+18 is beyond"},
      {"cold_delay_ns", "cold_delay_ns = 100000000000", "cold_delay_ns = 1000000",
       "(at most a minute)"},
      {"repetitions", "repetitions = 2000000000", "repetitions = 100", "(at most 1e9)"},
      {"spin_steps_per_ns", "spin_steps_per_ns = 1e5", "spin_steps_per_ns = 2",
       "spin_steps_per_ns = 100000 is beyond"},
  };
  memstub_profile p;
  memstub_error err = {0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    t = edit(good, cases[i].key, cases[i].bad, &line);
    refused(t, cases[i].what, line);
    free(t);
    t = edit(good, cases[i].key, cases[i].fine, &line);
    ck_assert_msg(memstub_profile_parse("fine", t, strlen(t), &p, &err) == 0, "%s: %s",
                  cases[i].fine, err.msg);
    free(t);
  }
  // A counter slower than 1 MHz (every *_cycles figure scaled with it).
  q = *profile();
  ms__cal_key keys[MS__CAL_MAXKEYS];
  size_t nk = ms__cal_keys(&q, keys, MS__CAL_MAXKEYS);
  q.cycles_per_ns = 1e-4;
  q.timer_cycles = 0;
  for (size_t i = 0; i < nk; i++)
    if (keys[i].cycles_of >= 0)
      *(double *)keys[keys[i].cycles_of].ptr = *(double *)keys[i].ptr * q.cycles_per_ns;
  t = profile_text(&q, dir);
  refused(t, "cycles_per_ns = 0.0001 is beyond what a host measures (at least 0.001", -1);
  free(t);
  // memstub gen names the figure too, and writes nothing.
  q = *profile();
  q.hot.basic.ns = 1e17;
  q.hot.basic.cycles = 1e17 * q.cycles_per_ns;
  char path[4096], h[4096];
  snprintf(path, sizeof path, "%s/bad.profile", dir);
  snprintf(h, sizeof h, "%s/x.h", dir);
  ck_assert_msg(memstub_profile_write(&q, path, &err) == 0, "%s", err.msg);
  tu_run r = tu_memstub(dir, "gen", tu_src("traces/samples/listing1.csv"), "-c", path, "-o", h,
                        NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "bad.profile:") && strstr(r.err, ": time_basic_ns = 1e+17 is beyond"),
                "%s", r.err);
  ck_assert_int_eq(tu_count_entries(dir), 2);  // p.profile and bad.profile alone
  tu_run_free(&r);
  free(good);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_profile_other_host) {
  memstub_profile p = *profile();
  memstub_error err = {0};
  char warn[512];
  ck_assert_int_eq(memstub_profile_check(&p, "h.profile", warn, sizeof warn, &err), 0);
  ck_assert_str_eq(warn, "");
  snprintf(p.arch, sizeof p.arch, "sparc64");
  ck_assert_int_eq(memstub_profile_check(&p, "h.profile", warn, sizeof warn, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "h.profile: measured on sparc64, this host is") != NULL, "%s",
                err.msg);
  p = *profile();
  p.page_size = 65536 == p.page_size ? 4096 : 65536;
  ck_assert_int_eq(memstub_profile_check(&p, "h.profile", warn, sizeof warn, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "-byte pages, this host has") != NULL, "%s", err.msg);
  // Another compiler: a warning, since the per-frame overhead depends on it.
  p = *profile();
  snprintf(p.compiler, sizeof p.compiler, "TinyCC 0.9");
  ck_assert_int_eq(memstub_profile_check(&p, "h.profile", warn, sizeof warn, &err), 1);
  ck_assert_msg(strstr(warn, "another compiler ('TinyCC 0.9'") != NULL, "%s", warn);
}
END_TEST

/* ---- compensation with cold figures ------------------------------------------------ */

// A profile with no costs but those a test sets, usable on this host.
static void zero_profile(memstub_profile *p) {
  memset(p, 0, sizeof *p);
  p->format = MEMSTUB_PROFILE_FORMAT;
  snprintf(p->arch, sizeof p->arch, "%s", memstub_host_arch());
  p->page_size = sysconf(_SC_PAGESIZE);
  p->cycles_per_ns = 1;
  p->mmap_threshold = 128 * 1024;
  p->heap_pad = 16;
}

static memstub_trace *rows_trace(const int64_t (*rows)[3], size_t n) {
  memstub_trace *t = memstub_trace_create();
  ck_assert_ptr_nonnull(t);
  for (size_t i = 0; i < n; i++)
    ck_assert_int_eq(memstub_trace_append(t, rows[i][0], rows[i][1], rows[i][2]), 0);
  return t;
}

static memstub_gen *comp_build(const memstub_trace *t, const memstub_profile *p, int timing,
                               int measured) {
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.profile = p;
  o.timing = timing;
  o.measured = measured;
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_build(t, &o, &g, &err) == 0, "%s", err.msg);
  return g;
}

/* memstub gen --calibration: the rss targets lose the profile's resident
 * overhead (never below 0), and the delays' compensation predicts the pages
 * the replay writes to them. */
START_TEST(test_comp_resident_targets) {
  memstub_trace *t = memstub_trace_create();
  int rc = memstub_trace_add_column(t, "rss_bytes");
  static const int64_t rows[][3] = {{0, 0, 0}, {1000000, 1 << 20, 1000}, {2000000, 1 << 20, 409600},
                                    {3000000, 0, 0}};
  for (size_t i = 0; i < 4; i++) {
    ck_assert_int_eq(memstub_trace_append(t, rows[i][0], 0, rows[i][1]), 0);
    memstub_trace_extra_row(t, i)[rc] = rows[i][2];
  }
  memstub_profile p;
  zero_profile(&p);
  p.resident_overhead = 3000;
  p.hot.heap_mmap_use.per_fault.ns = 1000;  // a page written
  memstub_gen *g = comp_build(t, &p, MEMSTUB_COMP_DEADLINE, 0);
  ck_assert_int_eq(g->stub.abi, MEMSTUB_STUB_ABI_RESIDENT);
  ck_assert_ptr_nonnull(g->stub.rss);
  ck_assert_int_eq(g->stub.numdata, 3);
  ck_assert_int_eq(g->stub.rss[0], 0);       // 1000 - 3000, not below 0
  ck_assert_int_eq(g->stub.rss[1], 406600);  // 409600 - 3000
  ck_assert_int_eq(g->stub.rss[2], 0);       // 0 stays
  ck_assert_int_eq(g->comp.rss_points, 2);
  ck_assert_int_eq(g->comp.rss_overhead_bytes, 3000);
  // The second row writes 100 pages (to 406600 bytes): 100 us predicted.
  ck_assert_int_eq(g->comp.time_cost_ns, 100 * 1000);
  char sum[1024];
  memstub_gen_comp_format(g, sum, sizeof sum);
  ck_assert_msg(strstr(sum, "; rss: 2 points -2.9 KiB") != NULL, "%s", sum);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

/* memstub gen -c with the calls' costs (issue 14 item 4): a point whose
 * calls the profile expects to outlast its delay is counted, with the
 * excess; the header's work line and gen's note say so. A profile without
 * them (spin_steps_per_ns 0: before issue 14) flags nothing. */
START_TEST(test_comp_calls_outlast_delay) {
  memstub_trace *t = memstub_trace_create();
  int mc = memstub_trace_add_column(t, "calls_malloc_tiny");
  static const int64_t rows[][2] = {{0, 0}, {100000, 100}, {200000, 10}, {300000, 60}};
  for (size_t i = 0; i < 4; i++) {
    ck_assert_int_eq(memstub_trace_append(t, rows[i][0], 0, 0), 0);
    memstub_trace_extra_row(t, i)[mc] = rows[i][1];
  }
  memstub_profile p;
  zero_profile(&p);
  p.call_ns[MEMSTUB_CALL_MALLOC * 4 + 0] = 2000;  // 2 us a call: 200, 20 and 120 us
  memstub_gen *g = comp_build(t, &p, MEMSTUB_COMP_DEADLINE, 0);
  ck_assert_int_eq(g->work_late, 0);  // no spin rate: not measured, nothing flagged
  memstub_gen_free(g);
  p.spin_steps_per_ns = 1;
  g = comp_build(t, &p, MEMSTUB_COMP_DEADLINE, 0);
  ck_assert_int_eq(g->work_late, 2);
  ck_assert_int_eq(g->work_late_ns, 100000 + 20000);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

/* The cost model counts touched pages, not requested bytes, for a stub with
 * resident data: a 64 MiB block of which 8 MiB are resident faults 2048
 * pages; mapped memory faults as its rss target reaches it; a fall of the
 * target is a release per page given back. */
START_TEST(test_comp_touched_pages) {
  const int64_t MiB = 1 << 20, page = sysconf(_SC_PAGESIZE);
  memstub_trace *t = memstub_trace_create();
  int rc = memstub_trace_add_column(t, "rss_bytes"), mc = memstub_trace_add_column(t, "mapped_bytes");
  // time, heap, rss, mapped
  static const int64_t rows[][4] = {{0, 0, 0, 0},
                                    {1000000, 64, 8, 0},
                                    {2000000, 64, 24, 16},
                                    {3000000, 64, 4, 16}};
  for (size_t i = 0; i < 4; i++) {
    ck_assert_int_eq(memstub_trace_append(t, rows[i][0], 0, rows[i][1] * MiB), 0);
    memstub_trace_extra_row(t, i)[rc] = rows[i][2] * MiB;
    memstub_trace_extra_row(t, i)[mc] = rows[i][3] * MiB;
  }
  memstub_profile p;
  zero_profile(&p);
  p.mmap_threshold = 128 * 1024;
  p.heap_arena_room = 0;
  p.hot.heap_mmap_use.per_fault.ns = 100;       // a first touch
  p.hot.heap_mmap_shrink.per_fault.ns = 10;     // a page given back
  p.hot.heap_mmap_alloc_nofault.ns = 1000;      // an mmap/mremap call, no fault
  p.hot.heap_to_mmap.per_fault.ns = 1;          // the copy into a new mapping
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_build(t, &o, &g, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(g->stub.numdata, 3);
  double cost[3];
  ck_assert_msg(memstub_gen_predict(&g->stub, &p, 0, cost, &err) == 0, "%s", err.msg);
  int64_t pg8 = 8 * MiB / page, pg16 = 16 * MiB / page, pg20 = 20 * MiB / page;
  // Row 1: the block moves to mmap (copying nothing written), then 8 MiB written.
  ck_assert_double_eq_tol(cost[0], 1.0 * 1 + 100.0 * (double)pg8, 1e-6);
  // Row 2: the mapping appears (one call), 16 MiB more written (heap to 24 MiB:
  // the heap block holds 64, so all of it in the heap).
  ck_assert_double_eq_tol(cost[1], 1000 + 100.0 * (double)pg16, 1e-6);
  // Row 3: down to 4 MiB, the mapping unchanged (no call): 20 MiB given back.
  ck_assert_double_eq_tol(cost[2], 10.0 * (double)pg20, 1e-6);
  memstub_gen_free(g);
  memstub_trace_free(t);
  // Resident beyond the heap and the mapping (kept after a free): the keep
  // mapping appears (one call) and its pages are written.
  t = memstub_trace_create();
  rc = memstub_trace_add_column(t, "rss_bytes");
  static const int64_t kept[][3] = {{0, 0, 0}, {1000000, 1, 1}, {2000000, 0, 3}};
  for (size_t i = 0; i < 3; i++) {
    ck_assert_int_eq(memstub_trace_append(t, kept[i][0], 0, kept[i][1] * MiB), 0);
    memstub_trace_extra_row(t, i)[rc] = kept[i][2] * MiB;
  }
  ck_assert_msg(memstub_gen_build(t, &o, &g, &err) == 0, "%s", err.msg);
  ck_assert_msg(memstub_gen_predict(&g->stub, &p, 0, cost, &err) == 0, "%s", err.msg);
  int64_t pg1 = MiB / page, pg3 = 3 * MiB / page;
  // Row 1: to mmap (the header's page copied), 1 MiB written.
  ck_assert_double_eq_tol(cost[0], 1.0 + 100.0 * (double)pg1, 1e-6);
  // Row 2: the block freed (a shrink below the threshold moves it back: 0
  // here), its 1 MiB written moved into the keep mapping without a fault
  // (resident.c), 3 MiB now there: one call, 2 MiB written.
  ck_assert_double_eq_tol(cost[1], 1000 + 100.0 * (double)(pg3 - pg1), 1e-6);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_comp_cold_rows) {
  // A point costs 1000 ns hot and 5000 ns cold. Rows waiting 10 us spin
  // (hot); rows waiting 500 us and 1 ms sleep first (cold, in deadline timing).
  static const int64_t rows[][3] = {{0, 0, 0}, {10000, 0, 0}, {510000, 0, 0}, {1510000, 0, 0}};
  memstub_trace *t = rows_trace(rows, 4);
  memstub_profile p;
  zero_profile(&p);
  p.hot.basic.ns = 1000;
  p.cold.basic.ns = 5000;
  p.cold_delay = 1000000;
  p.cold_min_delay = 100000;
  memstub_gen *g = comp_build(t, &p, MEMSTUB_COMP_DEADLINE, 0);
  ck_assert_int_eq(g->stub.numdata, 3);
  ck_assert_int_eq(g->use[0].time, 9000);
  ck_assert_int_eq(g->use[1].time, 496000);   // 505000 - 9000
  ck_assert_int_eq(g->use[2].time, 1000000);  // 1505000 - 505000
  ck_assert_int_eq(g->comp.time_cost_ns, 11000);
  ck_assert_int_eq(g->comp.time_points, 0);
  double cost[3];
  memstub_error err = {0};
  memstub_gen *plain = NULL;
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  ck_assert_int_eq(memstub_gen_build(t, &o, &plain, &err), 0);
  ck_assert_int_eq(memstub_gen_predict(&plain->stub, &p, 0, cost, &err), 0);
  ck_assert_double_eq(cost[0], 1000);
  ck_assert_double_eq(cost[1], 5000);
  ck_assert_double_eq(cost[2], 5000);
  memstub_gen_free(plain);
  memstub_gen_free(g);
  // usleep timing keeps the hot figures.
  g = comp_build(t, &p, MEMSTUB_COMP_USLEEP, 0);
  ck_assert_int_eq(g->use[0].time, 9000);
  ck_assert_int_eq(g->use[1].time, 499000);
  ck_assert_int_eq(g->use[2].time, 999000);
  ck_assert_int_eq(g->comp.time_cost_ns, 3000);
  memstub_gen_free(g);
  // Without cold figures (cold_delay 0): hot everywhere.
  p.cold_delay = 0;
  g = comp_build(t, &p, MEMSTUB_COMP_DEADLINE, 0);
  ck_assert_int_eq(g->use[1].time, 500000);
  ck_assert_int_eq(g->comp.time_cost_ns, 3000);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

/* How sure the time compensation is: the profile's intervals weighted by
 * the stub's uses of each figure, and a warning naming the unsure figures it
 * used, not those it did not. */
START_TEST(test_comp_unsure) {
  // One hot row (10 us wait) and two cold ones, as in test_comp_cold_rows.
  static const int64_t rows[][3] = {{0, 0, 0}, {10000, 0, 0}, {510000, 0, 0}, {1510000, 0, 0}};
  memstub_trace *t = rows_trace(rows, 4);
  memstub_profile p;
  zero_profile(&p);
  p.hot.basic.ns = 1000, p.hot.basic.ci_ns = 10;
  p.cold.basic.ns = 5000, p.cold.basic.ci_ns = 50;
  p.cold_delay = 1000000;
  p.cold_min_delay = 100000;
  p.cold.heap_to_mmap.per_fault.ns = 2000, p.cold.heap_to_mmap.per_fault.ci_ns = 1e6;  // unused
  memstub_gen *g = comp_build(t, &p, MEMSTUB_COMP_DEADLINE, 0);
  ck_assert_double_eq_tol(g->comp.time_cost_ci_ns, sqrt(10.0 * 10 + 100.0 * 100), 1e-9);
  ck_assert_int_eq(g->comp.unsure_figures, 0);
  char buf[1024];
  ck_assert_int_eq(memstub_gen_comp_unsure(g, "h.profile", buf, sizeof buf), 0);
  memstub_gen_free(g);
  // The cold basic point known to +-40 %: used twice, unsure.
  p.cold.basic.ci_ns = 2000;
  g = comp_build(t, &p, MEMSTUB_COMP_DEADLINE, 0);
  ck_assert_int_eq(g->comp.unsure_figures, 1);
  ck_assert_msg(strcmp(g->comp.unsure, "time_cold_basic_ns 5000 +- 2000 ns (x2)") == 0, "%s",
                g->comp.unsure);
  ck_assert_int_eq(memstub_gen_comp_unsure(g, "h.profile", buf, sizeof buf), 1);
  ck_assert_msg(strstr(buf, "h.profile: the time compensation rests on 1 figure whose") &&
                    strstr(buf, "time_cold_basic_ns 5000 +- 2000 ns") &&
                    strstr(buf, "predicted work 11.0 µs +- 4.00 µs"),
                "%s", buf);
  memstub_gen_free(g);
  // usleep timing uses the hot figures only: nothing unsure.
  g = comp_build(t, &p, MEMSTUB_COMP_USLEEP, 0);
  ck_assert_int_eq(g->comp.unsure_figures, 0);
  memstub_gen_free(g);
  // A used figure without an interval (too few repetitions): unsure, and
  // the work's interval unknown.
  p.cold.basic.ci_ns = 50;
  p.hot.basic.ci_ns = -1;
  g = comp_build(t, &p, MEMSTUB_COMP_DEADLINE, 0);
  ck_assert_int_eq(g->comp.unsure_figures, 1);
  ck_assert_double_eq(g->comp.time_cost_ci_ns, -1);
  ck_assert_msg(strstr(g->comp.unsure, "time_basic_ns 1000 ns, no interval (x1)"), "%s",
                g->comp.unsure);
  memstub_gen_free(g);
  // A profile without intervals (before issue 28): nothing to say.
  p.cold.basic.ci_ns = p.wait_late.ci_ns = -1;
  g = comp_build(t, &p, MEMSTUB_COMP_DEADLINE, 0);
  ck_assert_int_eq(g->comp.unsure_figures, 0);
  ck_assert_double_eq(g->comp.time_cost_ci_ns, -1);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_comp_measured_last_point) {
  // A measured replay reads a row's end before measuring its last point: a
  // row of one point moves by its work alone, a row of two by both points'
  // work and the first point's measuring.
  static const int64_t rows[][3] = {{0, 0, 0}, {200000, 100, 0}, {400000, 50, 0}};
  memstub_trace *t = rows_trace(rows, 3);
  memstub_profile p;
  zero_profile(&p);
  p.cold.basic.ns = 5000;
  p.cold_delay = 1000000;
  p.cold_min_delay = 100000;
  p.measure_trace.ns = 300;
  memstub_gen *g = comp_build(t, &p, MEMSTUB_COMP_DEADLINE, 1);
  // Row 1: push 100; row 2: pop it, push 50 (two points).
  ck_assert_int_eq(g->stub.numdata, 3);
  ck_assert_int_eq(g->use[0].stackAlloc, 100);
  ck_assert_int_eq(g->use[1].stackAlloc, -100);
  ck_assert_int_eq(g->use[2].stackAlloc, 50);
  ck_assert_int_eq(g->use[0].time, 195000);  // 200000 - 5000
  ck_assert_int_eq(g->use[1].time, 194700);  // 400000 - (2 x 5300 - 300) - 195000
  ck_assert_int_eq(g->use[2].time, 0);
  ck_assert_int_eq(g->comp.time_cost_ns, 3 * 5300);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_comp_to_mmap_per_page) {
  // Growing past the threshold and the arena's room moves the block to mmap:
  // the move's base, each page the old size fills in the new mapping, then
  // the new pages as mapped use.
  static const int64_t hot[][3] = {{0, 0, 0}, {0, 0, 100000}, {0, 0, 300000}};
  static const int64_t cold[][3] = {{0, 0, 0}, {1000000, 0, 100000}, {2000000, 0, 300000}};
  memstub_profile p;
  zero_profile(&p);
  p.heap_arena_room = 150000;
  p.hot.heap_to_mmap.base.ns = 1000;
  p.hot.heap_to_mmap.per_fault.ns = 100;
  p.hot.heap_mmap_use.per_fault.ns = 10;
  p.cold_delay = 1000000;
  p.cold_min_delay = 100000;
  p.cold.heap_to_mmap.base.ns = 2000;
  p.cold.heap_to_mmap.per_fault.ns = 200;
  p.cold.heap_mmap_use.per_fault.ns = 20;
  int64_t page = p.page_size;
  int64_t copied = (100000 + 16 + 16 + page - 1) / page;
  int64_t map_new = ((300000 + 16 + 8 + 15) / 16 * 16 + 8 + page - 1) / page;
  int64_t map_old = ((100000 + 16 + 8 + 15) / 16 * 16 + 8 + page - 1) / page;
  for (int k = 0; k < 2; k++) {
    memstub_trace *t = rows_trace(k ? cold : hot, 3);
    memstub_gen *g = NULL;
    memstub_error err = {0};
    memstub_gen_options o;
    memstub_gen_options_init(&o);
    ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), 0);
    double cost[2];
    ck_assert_int_eq(g->stub.numdata, 2);
    ck_assert_int_eq(memstub_gen_predict(&g->stub, &p, 0, cost, &err), 0);
    ck_assert_double_eq(cost[0], 0);  // in the arena: no costs set
    double want = k ? 2000 + 200.0 * (double)copied + 20.0 * (double)(map_new - map_old)
                    : 1000 + 100.0 * (double)copied + 10.0 * (double)(map_new - map_old);
    ck_assert_double_eq_tol(cost[1], want, 1e-9);
    memstub_gen_free(g);
    memstub_trace_free(t);
  }
}
END_TEST

START_TEST(test_calibrate_bad_cold_delay) {
  memstub_calib_options o;
  memstub_calib_options_init(&o);
  ck_assert_int_eq(o.cold_delay_ns, MEMSTUB_CALIB_COLD_DELAY_DEFAULT);
  o.cold_delay_ns = 50000;  // shorter than the deadline margin: no sleep
  memstub_calib *c = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_calibrate(&o, &c, &err), -EINVAL);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(err.msg, "cold delay: 50000 ns") != NULL, "%s", err.msg);
}
END_TEST

/* ---- a fit that fails ------------------------------------------------------------ */

/* After the last calibration run (model_check's three runs come after the
 * fitting), a child process per fit makes that fit fail; each child reports
 * how its calibration ended. The parent calibrates on, with no failure. */
enum { FIT_REPORTED, FIT_SWALLOWED, FIT_NONE_LEFT, FIT_OTHER };
typedef struct fit_sweep {
  int64_t fits;         // fits made to fail
  int64_t swallowed;    // the first fit whose failure gave a profile, 0 for none
  int other;            // a child ended another way (its exit status)
} fit_sweep;
static int fit_child;  // in a child of the sweep

static void fail_each_fit(int64_t done, int64_t total, void *arg) {
  fit_sweep *fs = arg;
  if (fit_child || done != total - 3) return;
  for (int64_t k = 1; k < 10000; k++) {
    pid_t pid = fork();
    if (pid == 0) {
      fit_child = 1;
      ms__cal_fit_fail_after = k;
      return;
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
      fs->other = -1;
      return;
    }
    int how = WEXITSTATUS(st);
    if (how == FIT_NONE_LEFT) return;
    fs->fits++;
    if (how == FIT_SWALLOWED && !fs->swallowed) fs->swallowed = k;
    if (how != FIT_REPORTED && how != FIT_SWALLOWED) fs->other = how;
  }
}

// How a child's calibration ended, as its exit status.
static int fit_outcome(int rc, const memstub_calib *c, const memstub_error *err) {
  if (ms__cal_fit_fail_after > 0) return rc == 0 ? FIT_NONE_LEFT : FIT_OTHER;
  if (rc == 0) return FIT_SWALLOWED;
  return rc == -ENOMEM && !c && strstr(err->msg, "cannot fit the calibration samples")
             ? FIT_REPORTED
             : FIT_OTHER;
}

START_TEST(test_calibrate_fit_fails) {
  memstub_calib_options o;
  memstub_calib_options_init(&o);
  o.quick = 1;
  o.repetitions = 2;
  fit_sweep fs = {0};
  o.progress = fail_each_fit;
  o.progress_arg = &fs;
  memstub_calib *c = NULL;
  memstub_error err = {0};
  int rc = memstub_calibrate(&o, &c, &err);
  if (fit_child) _exit(fit_outcome(rc, c, &err));
  ck_assert_msg(rc == 0, "%s", err.msg);
  memstub_calib_free(c);
  ck_assert_msg(fs.other == 0, "a child of the sweep ended with %d", fs.other);
  ck_assert_msg(fs.fits >= 40, "only %lld fits after the runs", (long long)fs.fits);
  ck_assert_msg(fs.swallowed == 0, "fit %lld of %lld failed, yet the calibration gave a profile",
                (long long)fs.swallowed, (long long)fs.fits);
}
END_TEST

/* ---- end to end ---------------------------------------------------------------- */

static memstub_trace *read_sample(const char *name) {
  char rel[256];
  snprintf(rel, sizeof rel, "traces/samples/%s", name);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(tu_src(rel), &t, &err) == 0, "%s", err.msg);
  return t;
}

// Replay g measured; the replayed trace.
static memstub_trace *replay(const memstub_gen *g) {
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.measure = MEMSTUB_MEASURE_TRACE;
  memstub_replay *r;
  memstub_error err = {0};
  ck_assert_msg(memstub_replay_run(&g->stub, &o, &r, &err) == 0, "%s", err.msg);
  memstub_trace *t;
  ck_assert_msg(memstub_replay_trace(r, &t, &err) == 0, "%s", err.msg);
  memstub_replay_free(r);
  return t;
}

// Open frames and their pushed bytes after each row's last point.
static void frames_at_rows(const memstub_gen *g, size_t nrows, int64_t *depth, int64_t *pushed) {
  const struct memstub_stub *s = &g->stub;
  int64_t *open = malloc((size_t)(s->numdata + 1) * sizeof *open), d = 0, sum = 0;
  for (size_t r = 0; r < nrows; r++) depth[r] = pushed[r] = 0;
  for (int64_t i = 0; i < s->numdata; i++) {
    int64_t sa = s->use[i].stackAlloc;
    if (sa > 0) open[d++] = sa, sum += sa;
    if (sa < 0) sum -= open[--d];
    for (size_t r = (size_t)s->point[i]; r < nrows; r++) depth[r] = d, pushed[r] = sum;
  }
  free(open);
}

/* One sample, compensated and not. With the profile every row's stack and
 * heap match the trace within 16 bytes (a page for heap blocks glibc serves
 * from mmap), except rows that cannot be met, which the generator counts and
 * which sit where the model puts them; without it the stack shows the
 * profile's overhead per open frame. */
static void e2e(const char *name, double time_scale) {
  const memstub_profile *p = profile();
  memstub_trace *t = read_sample(name);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.time_scale = time_scale;
  o.profile = p;
  o.measured = 1;
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_build(t, &o, &g, &err) == 0, "%s", err.msg);
  memstub_trace *rep = replay(g);
  ck_assert_int_eq(rep->n, t->n);
  int64_t *depth = malloc(t->n * sizeof *depth), *pushed = malloc(t->n * sizeof *pushed);
  frames_at_rows(g, t->n, depth, pushed);
  int64_t F = p->stack_per_frame, O = p->stack_offset, sbase = g->stub.stack_base;
  int64_t hbase = g->stub.heap_base, unmet = 0, page = p->page_size;
  for (size_t r = 0; r < t->n; r++) {
    int64_t T = t->pts[r].stack_bytes - sbase;
    int64_t model = depth[r] ? O + depth[r] * F + pushed[r] : 0;
    int64_t ds = rep->pts[r].stack_bytes - t->pts[r].stack_bytes;
    int64_t dh = rep->pts[r].heap_bytes - t->pts[r].heap_bytes;
    int mapped = t->pts[r].heap_bytes - hbase >= 128 * 1024 - 64;
    int cannot = T > 0 && T < O + F;
    unmet += cannot;
#if !defined(MEMSTUB_SANITIZED)
    // The runtime puts the stack where the model says (its rounding: 8 bytes).
    ck_assert_msg(llabs(rep->pts[r].stack_bytes - sbase - model) <= 16,
                  "%s row %zu: stack %lld, model %lld", name, r,
                  (long long)(rep->pts[r].stack_bytes - sbase), (long long)model);
    if (!cannot) {
      ck_assert_msg(llabs(ds) <= 16, "%s row %zu: stack %lld, trace %lld (with the profile)", name,
                    r, (long long)rep->pts[r].stack_bytes, (long long)t->pts[r].stack_bytes);
    }
    ck_assert_msg(llabs(dh) <= (mapped ? page : 16),
                  "%s row %zu: heap %lld, trace %lld (with the profile)", name, r,
                  (long long)rep->pts[r].heap_bytes, (long long)t->pts[r].heap_bytes);
#else
    (void)ds, (void)dh, (void)mapped, (void)model, (void)page;
#endif
  }
  ck_assert_int_eq(g->comp.stack_unmet, unmet);
  memstub_trace_free(rep);
  // Without the profile: the overhead per open frame shows.
  memstub_gen *plain = NULL;
  o.profile = NULL;
  ck_assert_msg(memstub_gen_build(t, &o, &plain, &err) == 0, "%s", err.msg);
  rep = replay(plain);
  frames_at_rows(plain, t->n, depth, pushed);
  int64_t most = 0;
  for (size_t r = 0; r < t->n; r++) {
    int64_t ds = rep->pts[r].stack_bytes - t->pts[r].stack_bytes;
    if (ds > most) most = ds;
#if !defined(MEMSTUB_SANITIZED)
    int64_t off = depth[r] ? O + depth[r] * F : 0;
    ck_assert_msg(llabs(ds - off) <= 16, "%s row %zu: %lld above the trace, %lld frames of %lld",
                  name, r, (long long)ds, (long long)depth[r], (long long)F);
#endif
  }
#if !defined(MEMSTUB_SANITIZED)
  ck_assert_msg(most > 16, "%s: no stack offset without the profile (%lld)", name,
                (long long)most);
#endif
  memstub_trace_free(rep);
  memstub_gen_free(plain);
  memstub_gen_free(g);
  free(depth);
  free(pushed);
  memstub_trace_free(t);
}

START_TEST(test_e2e_listing1) { e2e("listing1.csv", 1.0); }
END_TEST

START_TEST(test_e2e_nonlifo) { e2e("nonlifo.csv", 1.0); }
END_TEST

START_TEST(test_e2e_synthetic) { e2e("synthetic-4.8s.csv", 0.02); }
END_TEST

/* ---- the command --------------------------------------------------------------- */

static int have_gnuplot(void) {
  char *argv[] = {getenv("MEMSTUB_GNUPLOT") ? getenv("MEMSTUB_GNUPLOT") : "gnuplot", "-V", NULL};
  tu_run r = tu_exec(NULL, argv);
  int ok = r.status == 0;
  tu_run_free(&r);
  return ok;
}

START_TEST(test_cli) {
  char *dir = tu_mkdtemp(), prof[4096], fig[4096], hdr[4096], out[4096], bad[4096];
  snprintf(prof, sizeof prof, "%s/host.profile", dir);
  snprintf(fig, sizeof fig, "%s/fits.svg", dir);
  snprintf(hdr, sizeof hdr, "%s/memuse.h", dir);
  snprintf(out, sizeof out, "%s/replayed.csv", dir);
  snprintf(bad, sizeof bad, "%s/bad.profile", dir);
  int plot = have_gnuplot();
  tu_run r = plot ? tu_memstub(NULL, "calibrate", "--quick", "--repeat", "2", "-o", prof, "--plot",
                               fig, NULL)
                  : tu_memstub(NULL, "calibrate", "--quick", "--repeat", "2", "-o", prof, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.out, "time_basic") && strstr(r.out, "126775 cycles, SCV 0.009"), "%s",
                r.out);
  ck_assert_msg(strstr(r.out, "stack overhead per frame") && strstr(r.out, "64 bytes"), "%s",
                r.out);
  ck_assert_msg(strstr(r.out, "cold: a 1.00 ms sleep before every point, 1 repetitions") &&
                    strstr(r.out, "mmapped shrink"),
                "%s", r.out);
  if (plot) ck_assert(tu_exists(fig));
  tu_run_free(&r);
  memstub_profile p;
  memstub_error err = {0};
  ck_assert_msg(memstub_profile_read(prof, &p, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(p.repetitions, 2);
  const char *l1 = strdup(tu_src("traces/samples/listing1.csv"));
  // gen --calibration: the header says what was compensated; so does stderr
  // (deadline timing: its delays are compensated too).
  r = tu_memstub(NULL, "gen", l1, "--calibration", prof, "--timing", "deadline", "-o", hdr, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "compensation for ") && strstr(r.err, "pushes"), "%s", r.err);
  // Two repetitions ran the cold traces once: their figures have no
  // interval, and gen says the compensation rests on them.
  ck_assert_msg(strstr(r.err, "memstub: warning: ") && strstr(r.err, "the time compensation rests on") &&
                    strstr(r.err, "time_cold_") && strstr(r.err, "no interval"),
                "%s", r.err);
  tu_run_free(&r);
  char *h = tu_read_file(hdr);
  ck_assert_msg(strstr(h, " * compensation:  stack: 2 pushes") != NULL, "%s", h);
  ck_assert_msg(strstr(h, "(deadline timing)") != NULL, "%s", h);
  free(h);
  r = tu_memstub(NULL, "gen", l1, "--calibration", prof, "--timing", "usleep", "-o", hdr, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  h = tu_read_file(hdr);
  ck_assert_msg(strstr(h, ".timing = 2,") != NULL, "%s", h);
  free(h);
  // replay --calibration.
  r = tu_memstub(NULL, "replay", l1, "--calibration", prof, "--measure", out, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "compensation for ") != NULL, "%s", r.err);
  tu_run_free(&r);
  // Refusals: another page size; a malformed file; usage.
  char *text = tu_read_file(prof);
  int line;
  char *t = edit(text, "page_size_bytes", p.page_size == 65536 ? "page_size_bytes = 4096"
                                                               : "page_size_bytes = 65536",
                 &line);
  tu_write_file(bad, t);
  free(t);
  r = tu_memstub(NULL, "gen", l1, "--calibration", bad, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "-byte pages, this host has"), "%d %s", r.status,
                r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "replay", l1, "--calibration", bad, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "-byte pages, this host has"), "%d %s", r.status,
                r.err);
  tu_run_free(&r);
  t = edit(text, "stack_offset_bytes", "stack_offset_bytes: 0", &line);
  tu_write_file(bad, t);
  free(t);
  r = tu_memstub(NULL, "gen", l1, "--calibration", bad, NULL);
  char want[64];
  snprintf(want, sizeof want, "bad.profile:%d: expected 'key = value'", line);
  ck_assert_msg(r.status == 2 && strstr(r.err, want), "%d %s", r.status, r.err);
  tu_run_free(&r);
  // Every interval narrow: no warning.
  ms__cal_key keys[MS__CAL_MAXKEYS];
  size_t nkeys = ms__cal_keys(&p, keys, MS__CAL_MAXKEYS);
  t = strdup(text);
  for (size_t i = 0; i < nkeys; i++) {
    if (!keys[i].unknown) continue;
    char repl[96];
    snprintf(repl, sizeof repl, "%.63s = 0", keys[i].key);
    char *t2 = edit(t, keys[i].key, repl, &line);
    free(t);
    t = t2;
  }
  tu_write_file(bad, t);
  free(t);
  r = tu_memstub(NULL, "gen", l1, "--calibration", bad, "-o", hdr, NULL);
  ck_assert_msg(r.status == 0 && !tu_warned(r.err), "%d %s", r.status, r.err);
  tu_run_free(&r);
  // Another compiler: a warning, and the stub is made.
  t = edit(text, "host.compiler", "host.compiler = TinyCC 0.9", &line);
  tu_write_file(bad, t);
  free(t);
  r = tu_memstub(NULL, "gen", l1, "--calibration", bad, "-o", hdr, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "memstub: warning: ") && strstr(r.err, "TinyCC"),
                "%d %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "calibrate", "--quick", NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "missing -o"), "%d %s", r.status, r.err);
  tu_run_free(&r);
  // --timing without --calibration: the mode the stub is made for, nothing compensated.
  r = tu_memstub(NULL, "gen", l1, "--timing", "usleep", NULL);
  ck_assert_msg(r.status == 0 && strstr(r.out, ".timing = 2,") &&
                    strstr(r.out, " * calibration:   none\n"),
                "%d %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "calibrate", "-o", prof, "--repeat", "0", NULL);
  ck_assert_msg(r.status == 2, "%d %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "calibrate", "-o", prof, "--cold-delay", "5000", NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "--cold-delay: 5000 is not 0 nor between"), "%d %s",
                r.status, r.err);
  tu_run_free(&r);
  // No cold runs: the profile says so, and the table has no cold part.
  r = tu_memstub(NULL, "calibrate", "--quick", "--repeat", "1", "--cold-delay", "0", "-o", prof,
                 NULL);
  ck_assert_msg(r.status == 0 && !strstr(r.out, "cold: a"), "%d %s %s", r.status, r.out, r.err);
  tu_run_free(&r);
  ck_assert_msg(memstub_profile_read(prof, &p, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(p.cold_delay, 0);
  ck_assert_int_eq(p.cold_repetitions, 0);
  free(text);
  free((char *)l1);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *calib_suite(void) {
  Suite *s = suite_create("calib");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_fit_exact_line);
  tcase_add_test(tc, test_fit_noise_and_outliers);
  tcase_add_test(tc, test_fit_constant_and_scv);
  tcase_add_test(tc, test_fit_l1_skewed);
  tcase_add_test(tc, test_fit_all_equal_x);
  tcase_add_test(tc, test_fit_figures_reproducible);
  tcase_add_test(tc, test_estimate_interval);
  tcase_add_test(tc, test_placement_from_faults);
  tcase_add_test(tc, test_calibrate_quick);
  tcase_add_test(tc, test_profile_round_trip);
  tcase_add_test(tc, test_profile_refused);
  tcase_add_test(tc, test_profile_other_host);
  tcase_add_test(tc, test_profile_fuzz_regressions);
  tcase_add_test(tc, test_profile_implausible);
  tcase_add_test(tc, test_comp_cold_rows);
  tcase_add_test(tc, test_comp_touched_pages);
  tcase_add_test(tc, test_comp_resident_targets);
  tcase_add_test(tc, test_comp_calls_outlast_delay);
  tcase_add_test(tc, test_comp_measured_last_point);
  tcase_add_test(tc, test_comp_unsure);
  tcase_add_test(tc, test_comp_to_mmap_per_page);
  tcase_add_test(tc, test_calibrate_bad_cold_delay);
  tcase_add_test(tc, test_calibrate_fit_fails);
  tcase_add_test(tc, test_e2e_listing1);
  tcase_add_test(tc, test_e2e_nonlifo);
  tcase_add_test(tc, test_e2e_synthetic);
  tcase_add_test(tc, test_cli);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(calib_suite());
  // One process: the quick calibration is made once and shared.
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  memstub_calib_free(cal);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
