// Waiting for a deadline (the margin model, re-aiming, the adaptive margin)
// on a fake clock, and the classification of late rows by cause.
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"  // runtime/internal.h: ms__rt_waiter
#include "memstub/compare.h"
#include "memstub/runtime.h"

// A wait from `rem` ns before its deadline on a fake clock: every sleep wakes
// over(s) late. Returns the time left when the spin would start (negative:
// the wait ended late), and the sleeps taken in *sleeps.
static int64_t fake_wait(ms__rt_waiter *w, int64_t rem, int64_t (*over)(int64_t s, int k),
                         int *sleeps) {
  int64_t now = 0, deadline = rem, s;
  int last = 0;
  *sleeps = 0;
  while (!last && (s = ms__rt_plan_sleep(w, deadline - now, &last)) > 0) {
    int64_t o = over(s, *sleeps);
    now += s + o;
    ms__rt_waiter_learn(w, s, o);
    (*sleeps)++;
    ck_assert_int_le(*sleeps, 3);  // a wait never sleeps more than a re-aim and a last sleep
  }
  return deadline - now;
}

// Overshoot as the model expects: half its margin for the sleep (which is
// capped: a sleep of any length wakes at most MS__RT_MARGIN_MAX / 2 late).
static int64_t over_model(int64_t s, int k) {
  (void)k;
  ms__rt_waiter m;
  ms__rt_waiter_init(&m, MEMSTUB_MARGIN_MODEL, 0);
  return ms__rt_margin_for(&m, s) / 2;
}
// A long first sleep that overshoots by 600 us (a busy host), then as the model.
static int64_t over_first_late(int64_t s, int k) { return k == 0 ? 600000 : over_model(s, k); }
static int64_t over_none(int64_t s, int k) {
  (void)s, (void)k;
  return 0;
}

START_TEST(test_buckets) {
  ck_assert_int_eq(ms__rt_sleep_bucket(0), 0);
  ck_assert_int_eq(ms__rt_sleep_bucket(99999), 0);
  ck_assert_int_eq(ms__rt_sleep_bucket(100000), 1);
  ck_assert_int_eq(ms__rt_sleep_bucket(999999), 3);
  ck_assert_int_eq(ms__rt_sleep_bucket(1000000), 4);
  ck_assert_int_eq(ms__rt_sleep_bucket(4999999), 5);
  ck_assert_int_eq(ms__rt_sleep_bucket(INT64_MAX), MS__RT_SLEEP_BUCKETS - 1);
}
END_TEST

// The old fixed margin: one sleep to the margin before the deadline, no model.
START_TEST(test_fixed_margin) {
  ms__rt_waiter w;
  ms__rt_waiter_init(&w, 100000, 0);
  ck_assert_int_eq(w.reaim, 0);
  int last = 0;
  ck_assert_int_eq(ms__rt_plan_sleep(&w, 10000000, &last), 9900000);
  ck_assert_int_eq(last, 1);
  ck_assert_int_eq(ms__rt_plan_sleep(&w, 100000, &last), 0);
  ck_assert_int_eq(ms__rt_plan_sleep(&w, -5, &last), 0);
  ck_assert_int_eq(ms__rt_margin_for(&w, 123456789), 100000);
  ms__rt_waiter_init(&w, 0, 0);  // margin 0: sleep to the deadline itself
  ck_assert_int_eq(ms__rt_plan_sleep(&w, 5000, &last), 5000);
}
END_TEST

// The model: the margin grows with the sleep's length, within its bounds.
START_TEST(test_model_margin) {
  ms__rt_waiter w;
  ms__rt_waiter_init(&w, MEMSTUB_MARGIN_MODEL, 0);
  ck_assert_int_eq(w.reaim, MEMSTUB_REAIM_DEFAULT);
  ck_assert(!w.adaptive);
  int64_t prev = 0;
  for (int64_t s = 0; s <= 100000000; s += 250000) {
    int64_t m = ms__rt_margin_for(&w, s);
    ck_assert_int_ge(m, prev);
    ck_assert_int_ge(m, MS__RT_MARGIN_MIN);
    ck_assert_int_le(m, MS__RT_MARGIN_MAX);
    prev = m;
  }
  ck_assert_int_eq(ms__rt_margin_for(&w, 0), MS__RT_OVERSHOOT_BASE);
  ck_assert_int_eq(ms__rt_margin_for(&w, 1000000), MS__RT_OVERSHOOT_BASE + MS__RT_OVERSHOOT_PER_MS);
  ck_assert_int_eq(ms__rt_margin_for(&w, INT64_MAX), MS__RT_MARGIN_MAX);
  ck_assert_int_eq(ms__rt_margin_for(&w, -1), MS__RT_OVERSHOOT_BASE);
}
END_TEST

// Re-aiming: a long wait sleeps to reaim before the deadline, then once more
// to the model's margin for that short sleep; short waits sleep once.
START_TEST(test_reaim_plan) {
  ms__rt_waiter w;
  ms__rt_waiter_init(&w, MEMSTUB_MARGIN_MODEL, 0);
  int last = -1;
  ck_assert_int_eq(ms__rt_plan_sleep(&w, 200000000, &last), 199000000);
  ck_assert_int_eq(last, 0);
  // 1.1 ms: a first sleep of 100 us is not worth a wake-up (reaim / 4).
  int64_t s = ms__rt_plan_sleep(&w, 1100000, &last);
  ck_assert_int_eq(last, 1);
  ck_assert_int_eq(s, 1100000 - ms__rt_margin_for(&w, 1100000));
  // Below the margin: spin only.
  ck_assert_int_eq(ms__rt_plan_sleep(&w, ms__rt_margin_for(&w, 0), &last), 0);
  ck_assert_int_eq(last, 1);
  // Never cut (-1): one sleep to the margin of the whole wait.
  ms__rt_waiter_init(&w, MEMSTUB_MARGIN_MODEL, -1);
  ck_assert_int_eq(w.reaim, 0);
  ck_assert_int_eq(ms__rt_plan_sleep(&w, 200000000, &last), 200000000 - MS__RT_MARGIN_MAX);
  ck_assert_int_eq(last, 1);
  // Another distance.
  ms__rt_waiter_init(&w, MEMSTUB_MARGIN_MODEL, 3000000);
  ck_assert_int_eq(ms__rt_plan_sleep(&w, 10000000, &last), 7000000);
}
END_TEST

// On the fake clock: with overshoots as the model expects, every wait ends
// before its deadline (the spin finishes it) with at most two sleeps, and a
// long sleep that overshoots by 600 us is caught by the re-aim.
START_TEST(test_fake_clock_waits) {
  static const int64_t rems[] = {50000,   150000,  400000,   1000000,  1200000,  1800000,
                                 2500000, 9000000, 16000000, 99000000, 400000000};
  for (size_t i = 0; i < sizeof rems / sizeof rems[0]; i++) {
    ms__rt_waiter w;
    ms__rt_waiter_init(&w, MEMSTUB_MARGIN_MODEL, 0);
    int sleeps;
    int64_t left = fake_wait(&w, rems[i], over_model, &sleeps);
    ck_assert_msg(left >= 0, "wait of %lld ns ended %lld ns late", (long long)rems[i],
                  (long long)-left);
    ck_assert_int_le(sleeps, 2);
    if (rems[i] > ms__rt_margin_for(&w, rems[i])) ck_assert_int_ge(sleeps, 1);
    // A long first sleep that overshoots by 600 us still ends in time.
    if (rems[i] >= 2 * MEMSTUB_REAIM_DEFAULT) {
      left = fake_wait(&w, rems[i], over_first_late, &sleeps);
      ck_assert_int_ge(left, 0);
      ck_assert_int_eq(sleeps, 2);
    }
    // With the old fixed margin the same long sleep would end late.
    ms__rt_waiter f;
    ms__rt_waiter_init(&f, MEMSTUB_MARGIN_DEFAULT, 0);
    if (rems[i] > MEMSTUB_MARGIN_DEFAULT) {
      ck_assert_int_lt(fake_wait(&f, rems[i], over_first_late, &sleeps), 0);
      ck_assert_int_eq(sleeps, 1);
    }
    // A perfect clock: the spin is the margin of the last sleep, no more.
    left = fake_wait(&w, rems[i], over_none, &sleeps);
    ck_assert_int_le(left, MS__RT_MARGIN_MAX);
  }
}
END_TEST

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

// Adaptive: each bucket learns about the 99th percentile of its own overshoot.
START_TEST(test_adaptive_learns) {
  ms__rt_waiter w;
  ms__rt_waiter_init(&w, MEMSTUB_MARGIN_ADAPTIVE, 0);
  ck_assert(w.adaptive);
  ck_assert_int_eq(w.reaim, MEMSTUB_REAIM_DEFAULT);
  // Starts at the static model.
  int64_t m0 = ms__rt_margin_for(&w, 700000);
  ck_assert_int_ge(m0, MS__RT_MARGIN_MIN);
  ck_assert_int_le(m0, MS__RT_MARGIN_MAX);
  // Sleeps of 700 us: overshoot uniform in [20, 40) us, 0.5 % of them 3 ms.
  // The p99 is below 40 us: the margin settles near it plus the slack.
  for (int i = 0; i < 200000; i++) {
    int64_t o = next_rand() % 1000 < 5 ? 3000000 : 20000 + (int64_t)(next_rand() % 20000);
    ms__rt_waiter_learn(&w, 700000, o);
  }
  int64_t m = ms__rt_margin_for(&w, 700000);
  ck_assert_msg(m >= 35000 + MS__RT_MARGIN_SLACK && m <= 120000 + MS__RT_MARGIN_SLACK,
                "learnt margin %lld ns", (long long)m);
  // Other buckets did not move.
  ms__rt_waiter fresh;
  ms__rt_waiter_init(&fresh, MEMSTUB_MARGIN_ADAPTIVE, 0);
  ck_assert_int_eq(ms__rt_margin_for(&w, 50000), ms__rt_margin_for(&fresh, 50000));
  ck_assert_int_eq(ms__rt_margin_for(&w, 50000000), ms__rt_margin_for(&fresh, 50000000));
  // A host that always wakes 2 ms late: the margin rises to its cap, no further.
  for (int i = 0; i < 1000; i++) ms__rt_waiter_learn(&w, 700000, 2000000);
  ck_assert_int_eq(ms__rt_margin_for(&w, 700000), MS__RT_MARGIN_MAX);
  // A perfect host: down to the floor.
  for (int i = 0; i < 10000; i++) ms__rt_waiter_learn(&w, 700000, 0);
  ck_assert_int_eq(ms__rt_margin_for(&w, 700000), MS__RT_MARGIN_MIN);
  // The static model never learns.
  ms__rt_waiter_init(&w, MEMSTUB_MARGIN_MODEL, 0);
  for (int i = 0; i < 1000; i++) ms__rt_waiter_learn(&w, 700000, 2000000);
  ck_assert_int_eq(ms__rt_margin_for(&w, 700000),
                   MS__RT_OVERSHOOT_BASE + (int64_t)MS__RT_OVERSHOOT_PER_MS * 700000 / 1000000);
}
END_TEST

START_TEST(test_cause_rule) {
  // 100 us late: woke 90 us late, the work 10 us over the prediction.
  ck_assert_int_eq(memstub_compare_late_cause(100000, 90000, 10000, 0), MEMSTUB_LATE_WAKE);
  ck_assert_int_eq(memstub_compare_late_cause(100000, 10000, 90000, 0), MEMSTUB_LATE_WORK);
  // The thread waited for a CPU for at least half of it: the host.
  ck_assert_int_eq(memstub_compare_late_cause(100000, 90000, 10000, 50000), MEMSTUB_LATE_OFF_CPU);
  ck_assert_int_eq(memstub_compare_late_cause(100001, 90000, 10000, 50000), MEMSTUB_LATE_WAKE);
  ck_assert_int_eq(memstub_compare_late_cause(100000, 0, 100000, 2000000), MEMSTUB_LATE_OFF_CPU);
  // Unknown run-queue wait: wake or work only.
  ck_assert_int_eq(memstub_compare_late_cause(100000, 0, 100000, -1), MEMSTUB_LATE_WORK);
  // A tie is the wake; work shorter than predicted is no excuse.
  ck_assert_int_eq(memstub_compare_late_cause(20000, 10000, 10000, 0), MEMSTUB_LATE_WAKE);
  ck_assert_int_eq(memstub_compare_late_cause(20000, 30000, -10000, 0), MEMSTUB_LATE_WAKE);
  ck_assert_str_eq(memstub_late_cause_name(MEMSTUB_LATE_OFF_CPU, 1), "off_cpu");
  ck_assert_str_eq(memstub_late_cause_name(MEMSTUB_LATE_WAKE, 0), "woke late");
  ck_assert_str_eq(memstub_late_cause_name((memstub_late_cause)42, 1), "unknown");
}
END_TEST

// A mostly idle stub: the replay thread sleeps, and its CPU time says so
// (bounds that hold on a loaded machine: a preempted thread uses no CPU).
START_TEST(test_idle_cpu) {
  static struct memAlloc use[6];
  static int64_t point[6];
  for (int i = 0; i < 6; i++) {
    use[i] = (struct memAlloc){.time = 60000000, .stackAlloc = i % 2 ? -64 : 64, .heapAlloc = 8};
    point[i] = i + 1;
  }
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI,
                           .numdata = 6,
                           .use = use,
                           .point = point,
                           .norig = 7,
                           .source = "idle"};
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.measure = MEMSTUB_MEASURE_TRACE;
  o.sched_slice_ns = 100000;  // kernels before 6.12 may ignore it, or refuse it (then 0)
  memstub_replay *r = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_replay_run(&s, &o, &r, &err) == 0, "%s", err.msg);
  ck_assert_int_ge(r->info.duration_ns, 360000000);
  ck_assert_int_ge(r->info.cpu_ns, 0);
  ck_assert_msg(r->info.cpu_ns < r->info.duration_ns / 4, "CPU %lld ns of %lld",
                (long long)r->info.cpu_ns, (long long)r->info.duration_ns);
  // Each 60 ms wait: a long sleep, then a re-aimed short one (unless the host
  // stalled the thread past the re-aim point).
  ck_assert_int_ge(r->info.sleeps, 6);
  ck_assert_int_le(r->info.sleeps, 18);
  ck_assert_int_eq(r->info.reaim_ns, MEMSTUB_REAIM_DEFAULT);
  ck_assert(r->info.sched_slice_ns == 0 || r->info.sched_slice_ns == 100000);
  // The run-queue reading happened before each wait's first sleep.
  int read = 0;
  for (int i = 0; i < 6; i++) read += r->rec[i].run_delay_ns >= 0;
  if (r->info.run_delay_ns >= 0) ck_assert_int_ge(read, 1);
  memstub_replay_free(r);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("timing");
  TCase *tc = tcase_create("model");
  tcase_add_test(tc, test_buckets);
  tcase_add_test(tc, test_fixed_margin);
  tcase_add_test(tc, test_model_margin);
  tcase_add_test(tc, test_reaim_plan);
  tcase_add_test(tc, test_fake_clock_waits);
  tcase_add_test(tc, test_adaptive_learns);
  tcase_add_test(tc, test_cause_rule);
  suite_add_tcase(s, tc);
  TCase *tr = tcase_create("replay");
  tcase_set_timeout(tr, 60);
  tcase_add_test(tr, test_idle_cpu);
  suite_add_tcase(s, tr);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
