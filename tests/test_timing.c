// Waiting for a deadline (the margin model, re-aiming, the adaptive margin)
// on a fake clock, and the classification of late rows by cause.
#include <check.h>
#include <stdint.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

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

START_TEST(test_cause_rule_behind) {
  // 2 ms late: it began 2 ms late because the row before ended 2 ms after its deadline.
  ck_assert_int_eq(memstub_compare_late_why(2000000, 2000000, 0, 0, 2000000), MEMSTUB_LATE_BEHIND);
  // The same with its own work 3 ms over: the work.
  ck_assert_int_eq(memstub_compare_late_why(5000000, 2000000, 3000000, 0, 2000000),
                   MEMSTUB_LATE_WORK);
  // Began 10 us behind, then overslept 50 us more: woke late.
  ck_assert_int_eq(memstub_compare_late_why(60000, 60000, 0, 0, 10000), MEMSTUB_LATE_WAKE);
  // Behind no more than it woke late (the clocks' rounding): no more than that.
  ck_assert_int_eq(memstub_compare_late_why(60000, 50000, 0, 0, 90000), MEMSTUB_LATE_BEHIND);
  // Not behind: the old rule.
  ck_assert_int_eq(memstub_compare_late_why(100000, 90000, 10000, 0, 0),
                   memstub_compare_late_cause(100000, 90000, 10000, 0));
  // The host first, as before.
  ck_assert_int_eq(memstub_compare_late_why(100000, 100000, 0, 60000, 100000), MEMSTUB_LATE_OFF_CPU);
  ck_assert_str_eq(memstub_late_cause_name(MEMSTUB_LATE_BEHIND, 1), "behind");
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

/* ---- the online cost model --------------------------------------------- */

#define KLS(h, s) ((h) * MS__RT_STACK_PARTS + (s))

// The class of the row starting at use[x], from a heap of heap bytes (mmapped
// or not) and a stack of stack bytes whose deepest so far was hw.
static int cls(const struct memAlloc *use, int64_t n, int64_t x, int64_t heap, int mm,
               int64_t stack, int64_t hw) {
  ms__rt_cost_state st = {heap, stack, hw, mm, 4096};
  return ms__rt_cost_class(use, n, x, NULL, NULL, &st);
}

START_TEST(test_cost_classes) {
  const int64_t big = 200000;  // an mmapped block (above glibc's 128 KiB threshold)
  struct memAlloc u[4] = {{1000, 0, 0}, {0, 0, 0}, {1000, 0, 0}, {0, 0, 0}};
  ck_assert_int_eq(cls(u, 4, 0, 0, 0, 0, 0), KLS(MS__RT_HEAP_NONE, MS__RT_STACK_NONE));
  u[0].heapAlloc = 100;  // arena, up or down
  ck_assert_int_eq(cls(u, 4, 0, 1000, 0, 0, 0), KLS(MS__RT_HEAP_ARENA, MS__RT_STACK_NONE));
  u[0].heapAlloc = -100;
  ck_assert_int_eq(cls(u, 4, 0, 1000, 0, 0, 0), KLS(MS__RT_HEAP_ARENA, MS__RT_STACK_NONE));
  // mmapped: within its pages, by one page, by a few, by many (mremap)
  u[0].heapAlloc = 8;
  ck_assert_int_eq(cls(u, 4, 0, big, 1, 0, 0), KLS(MS__RT_HEAP_INPAGE, MS__RT_STACK_NONE));
  u[0].heapAlloc = 4096;
  ck_assert_int_eq(cls(u, 4, 0, big, 1, 0, 0), KLS(MS__RT_HEAP_PAGES1, MS__RT_STACK_NONE));
  u[0].heapAlloc = -3 * 4096;
  ck_assert_int_eq(cls(u, 4, 0, big, 1, 0, 0), KLS(MS__RT_HEAP_PAGES2, MS__RT_STACK_NONE));
  u[0].heapAlloc = 100 * 4096;
  ck_assert_int_eq(cls(u, 4, 0, big, 1, 0, 0), KLS(MS__RT_HEAP_PAGES8, MS__RT_STACK_NONE));
  // between arena and mmap, both ways; a shrink in the arena is no move
  u[0].heapAlloc = 150000;
  ck_assert_int_eq(cls(u, 4, 0, 1000, 0, 0, 0), KLS(MS__RT_HEAP_MOVE, MS__RT_STACK_NONE));
  u[0].heapAlloc = -150000;
  ck_assert_int_eq(cls(u, 4, 0, big, 1, 0, 0), KLS(MS__RT_HEAP_MOVE, MS__RT_STACK_NONE));
  u[0].heapAlloc = -100;  // an arena block above the threshold (grown in the top) shrinking
  ck_assert_int_eq(cls(u, 4, 0, big, 0, 0, 0), KLS(MS__RT_HEAP_ARENA, MS__RT_STACK_NONE));
  // the stack: a push within pages written before, one beyond them, a pop
  u[0] = (struct memAlloc){1000, 64, 0};
  ck_assert_int_eq(cls(u, 4, 0, 0, 0, 100, 8192), KLS(MS__RT_HEAP_NONE, MS__RT_STACK_PUSH));
  ck_assert_int_eq(cls(u, 4, 0, 0, 0, 4090, 4090), KLS(MS__RT_HEAP_NONE, MS__RT_STACK_FAULT));
  u[0].stackAlloc = -64;
  ck_assert_int_eq(cls(u, 4, 0, 0, 0, 64, 64), KLS(MS__RT_HEAP_NONE, MS__RT_STACK_POP));
  // A row's zero-delay points count (the heap change on the second), the
  // next delayed point does not.
  u[0] = (struct memAlloc){1000, -64, 0};
  u[1] = (struct memAlloc){0, 0, 4096};
  u[2] = (struct memAlloc){1000, 0, 1000000};
  ck_assert_int_eq(cls(u, 4, 0, big, 1, 64, 64), KLS(MS__RT_HEAP_PAGES1, MS__RT_STACK_POP));
  ck_assert_int_eq(cls(u, 4, 2, big, 1, 0, 64), KLS(MS__RT_HEAP_PAGES8, MS__RT_STACK_NONE));
  // mapped and resident data: a mapped change wins; a moving target alone is a touch
  struct memAlloc v[2] = {{1000, 0, 0}, {1000, 0, 0}};
  int64_t mapped[2] = {0, 8192}, rss[2] = {4096, 4096};
  ms__rt_cost_state st = {0, 0, 0, 0, 4096};
  ck_assert_int_eq(ms__rt_cost_class(v, 2, 0, mapped, rss, &st), MS__RT_COST_TOUCH);
  ck_assert_int_eq(ms__rt_cost_class(v, 2, 1, mapped, rss, &st), MS__RT_COST_MAPPED);
  ck_assert_int_eq(ms__rt_cost_class(v, 2, 1, NULL, rss, &st),
                   KLS(MS__RT_HEAP_NONE, MS__RT_STACK_NONE));
  // Which classes resize ahead: an mmapped block's and a move, not the arena's.
  ck_assert(!ms__rt_cost_resize_ahead(KLS(MS__RT_HEAP_ARENA, MS__RT_STACK_PUSH)));
  ck_assert(!ms__rt_cost_resize_ahead(MS__RT_COST_MAPPED));
  ck_assert(!ms__rt_cost_resize_ahead(MS__RT_COST_TOUCH));
  ck_assert(ms__rt_cost_resize_ahead(KLS(MS__RT_HEAP_INPAGE, MS__RT_STACK_NONE)));
  ck_assert(ms__rt_cost_resize_ahead(KLS(MS__RT_HEAP_MOVE, MS__RT_STACK_FAULT)));
}
END_TEST

// Work of a class on a fake host: uniform in [base, base + spread), and one
// row in 100 ten times slower (a fault, a preemption).
static int64_t fake_work(int64_t base, int64_t spread) {
  int64_t w = base + (int64_t)(next_rand() % (uint64_t)spread);
  return next_rand() % 100 == 0 ? 10 * w : w;
}

// The model learns each class's median, leads by it (capped), and keeps the
// classes apart; off, it learns but never leads.
START_TEST(test_cost_learns) {
  ms__rt_cost m;
  ms__rt_cost_init(&m, 1);
  // Rows after 2 ms waits.
  const int a = ms__rt_cost_slot(KLS(MS__RT_HEAP_ARENA, MS__RT_STACK_NONE), 2000000, 1),
            b = ms__rt_cost_slot(KLS(MS__RT_HEAP_PAGES1, 0), 2000000, 1);
  ck_assert_int_eq(ms__rt_cost_lead(&m, a), 0);  // nothing learnt yet
  for (int i = 0; i < 5000; i++) {
    ms__rt_cost_learn(&m, a, fake_work(800, 400));      // median about 1.0 us
    ms__rt_cost_learn(&m, b, fake_work(12000, 8000));   // median about 16 us
  }
  int64_t la = ms__rt_cost_lead(&m, a), lb = ms__rt_cost_lead(&m, b);
  ck_assert_msg(la >= 700 && la <= 1500, "arena lead %lld ns", (long long)la);
  ck_assert_msg(lb >= 13000 && lb <= 19000, "mremap lead %lld ns", (long long)lb);
  ck_assert_int_eq(m.n[a], 5000);
  ck_assert_int_eq(ms__rt_cost_lead(&m, ms__rt_cost_slot(MS__RT_COST_TOUCH, 2000000, 1)), 0);
  ck_assert_int_eq(ms__rt_cost_lead(&m, -1), 0);
  ck_assert_int_eq(ms__rt_cost_lead(&m, MS__RT_COST_SLOTS), 0);
  // A wait not seen yet borrows the class's nearest one; once learnt, its own.
  int a_long = ms__rt_cost_slot(KLS(MS__RT_HEAP_ARENA, MS__RT_STACK_NONE), 200000000, 1);
  int a_short = ms__rt_cost_slot(KLS(MS__RT_HEAP_ARENA, MS__RT_STACK_NONE), 50000, 1);
  ck_assert_int_ne(a_long, a);
  ck_assert_int_ne(a_short, a);
  ck_assert_int_eq(ms__rt_cost_lead(&m, a_long), la);
  ck_assert_int_eq(ms__rt_cost_lead(&m, a_short), la);
  for (int i = 0; i < 200; i++) ms__rt_cost_learn(&m, a_long, 3000);  // colder after long sleeps
  ck_assert_int_eq(ms__rt_cost_lead(&m, a_long), 3000);
  ck_assert_int_eq(ms__rt_cost_lead(&m, a), la);
  // A row of four points: a slot of its own, borrowing the one-point row's until learnt.
  int a4 = ms__rt_cost_slot(KLS(MS__RT_HEAP_ARENA, MS__RT_STACK_NONE), 2000000, 4);
  ck_assert_int_ne(a4, a);
  ck_assert_int_eq(ms__rt_cost_slot(0, 0, 2), ms__rt_cost_slot(0, 0, 3));
  ck_assert_int_ne(ms__rt_cost_slot(0, 0, 3), ms__rt_cost_slot(0, 0, 4));
  ck_assert_int_eq(ms__rt_cost_lead(&m, a4), la);
  for (int i = 0; i < 50; i++) ms__rt_cost_learn(&m, a4, 4000);
  ck_assert_int_eq(ms__rt_cost_lead(&m, a4), 4000);
  ck_assert_int_eq(ms__rt_cost_lead(&m, a), la);
  ck_assert_int_lt(ms__rt_cost_slot(MS__RT_COST_TOUCH, INT64_MAX, INT64_MAX), MS__RT_COST_SLOTS);
  // The start is the median of the first samples: one preempted sample does
  // not set it, nor does a later one move it by more than a step.
  ms__rt_cost st;
  ms__rt_cost_init(&st, 1);
  static const int64_t firsts[] = {60000, 1000, 1200, 900, 1100};
  for (int i = 0; i < 5; i++) ms__rt_cost_learn(&st, a, firsts[i]);
  ck_assert_int_eq(ms__rt_cost_lead(&st, a), 1100);
  ms__rt_cost_learn(&st, a, 500000);
  ck_assert_int_eq(ms__rt_cost_lead(&st, a), 1100 + MS__RT_COST_STEP);
  // A host change: the work doubles; the median follows within a few hundred rows.
  for (int i = 0; i < 400; i++) ms__rt_cost_learn(&m, b, fake_work(28000, 8000));
  lb = ms__rt_cost_lead(&m, b);
  ck_assert_msg(lb >= 26000 && lb <= 36000, "mremap lead after the change %lld ns", (long long)lb);
  // Capped: a class that takes seconds leads by LEAD_MAX.
  int mapped = ms__rt_cost_slot(MS__RT_COST_MAPPED, 2000000, 1);
  ms__rt_cost_learn(&m, mapped, 5000000000LL);
  ck_assert_int_eq(ms__rt_cost_lead(&m, mapped), MS__RT_COST_LEAD_MAX);
  // Off: learnt, never applied.
  ms__rt_cost off;
  ms__rt_cost_init(&off, 0);
  for (int i = 0; i < 100; i++) ms__rt_cost_learn(&off, a, 1000);
  ck_assert_int_eq(off.est[a], 1000);
  ck_assert_int_eq(ms__rt_cost_lead(&off, a), 0);
  // The resize ahead learns a high percentile: above the median, below the outliers.
  for (int i = 0; i < 5000; i++) ms__rt_cost_learn_pre(&m, b, fake_work(8000, 8000));
  int64_t pre = ms__rt_cost_pre(&m, b);
  ck_assert_msg(pre >= 15000 && pre <= 100000, "resize ahead %lld ns", (long long)pre);
  ck_assert_int_eq(ms__rt_cost_pre(&off, b), 0);
}
END_TEST

/* On a fake clock: rows of two classes whose work varies. Leading each row
 * by its class's learnt median ends most rows within 10 us of their
 * deadline; with no lead (the replay before the model) every slow row is
 * late by its whole work. */
START_TEST(test_cost_fake_clock_rows) {
  ms__rt_cost m;
  ms__rt_cost_init(&m, 1);
  const int k[2] = {ms__rt_cost_slot(KLS(MS__RT_HEAP_ARENA, MS__RT_STACK_PUSH), 3000000, 1),
                    ms__rt_cost_slot(KLS(MS__RT_HEAP_PAGES2, 0), 3000000, 1)};
  const int64_t base[2] = {1000, 20000}, spread[2] = {2000, 10000};
  int late_model = 0, late_none = 0, early_model = 0, rows = 0;
  for (int i = 0; i < 20000; i++) {
    int c = (int)(next_rand() % 2);
    int64_t lead = ms__rt_cost_lead(&m, k[c]);
    int64_t work = fake_work(base[c], spread[c]);
    int64_t end = -lead + work;  // relative to the deadline
    if (i >= 1000) {             // after a warm-up
      rows++;
      late_model += end > 10000;
      early_model += end < -10000;
      late_none += work > 10000;
    }
    ms__rt_cost_learn(&m, k[c], work);
  }
  ck_assert_msg(late_model * 100 < rows * 3, "%d of %d rows late with the model", late_model, rows);
  ck_assert_msg(early_model * 100 < rows * 3, "%d of %d rows early", early_model, rows);
  ck_assert_msg(late_none * 100 > rows * 45, "%d of %d rows late without it", late_none, rows);
}
END_TEST

// Kinds of rows, from what the original's row changed.
START_TEST(test_row_kind) {
  memstub_trace *t = memstub_trace_create();
  ck_assert_ptr_nonnull(t);
  int cr = memstub_trace_add_column(t, "rss_bytes"), cm = memstub_trace_add_column(t, "mapped_bytes");
  ck_assert_int_ge(cr, 0);
  ck_assert_int_ge(cm, 0);
  static const int64_t rows[][5] = {
      // time, stack, heap, rss, mapped
      {0, 0, 0, 0, 0},           {10, 64, 0, 0, 0},      {20, 64, 100, 0, 0},
      {30, 128, 200, 0, 0},      {40, 128, 200, 4096, 0}, {50, 128, 200, 4096, 8192},
      {60, 128, 200, 4096, 8192}, {70, 128, 200, -1, 8192}, {80, 128, 200, 4096, 8192}};
  static const memstub_row_kind want[] = {MEMSTUB_ROW_IDLE,  MEMSTUB_ROW_STACK, MEMSTUB_ROW_HEAP,
                                          MEMSTUB_ROW_HEAP,  MEMSTUB_ROW_TOUCH, MEMSTUB_ROW_MAPPED,
                                          MEMSTUB_ROW_IDLE,  MEMSTUB_ROW_IDLE,  MEMSTUB_ROW_IDLE};
  size_t n = sizeof rows / sizeof rows[0];
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(memstub_trace_append(t, rows[i][0], rows[i][1], rows[i][2]), 0);
    memstub_trace_extra_row(t, i)[cr] = rows[i][3];
    memstub_trace_extra_row(t, i)[cm] = rows[i][4];
  }
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(memstub_compare_row_kind(t, i) == want[i], "row %zu: %s, want %s", i,
                  memstub_row_kind_name(memstub_compare_row_kind(t, i)),
                  memstub_row_kind_name(want[i]));
  ck_assert_int_eq(memstub_compare_row_kind(t, n), MEMSTUB_ROW_IDLE);
  ck_assert_str_eq(memstub_row_kind_name(MEMSTUB_ROW_TOUCH), "touch");

  // The report by kind: a replay late on its heap rows only, one of them
  // because the host kept the thread off its CPU.
  memstub_trace *r = memstub_trace_create();
  int cp = memstub_trace_add_column(r, "point"), ct = memstub_trace_add_column(r, "target_time_ns"),
      cw = memstub_trace_add_column(r, "wake_late_ns"), ck = memstub_trace_add_column(r, "work_ns"),
      co = memstub_trace_add_column(r, "off_cpu_ns");
  for (size_t i = 0; i < n; i++) {
    int64_t late = i == 2 ? 50000 : i == 3 ? 30000 : 0;
    ck_assert_int_eq(memstub_trace_append(r, rows[i][0] + late, rows[i][1], rows[i][2]), 0);
    int64_t *x = memstub_trace_extra_row(r, i);
    x[cp] = (int64_t)i;
    x[ct] = rows[i][0];
    x[cw] = 0;
    x[ck] = late;
    x[co] = i == 2 ? 40000 : 0;
  }
  memstub_compare_report *rep = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_compare_traces(t, "orig", r, "repl", NULL, &rep, &err) == 0, "%s", err.msg);
  const memstub_compare_kind *h = &rep->by_kind[MEMSTUB_ROW_HEAP];
  ck_assert_int_eq(h->rows, 2);
  ck_assert_int_eq(h->time.late, 2);
  ck_assert_int_eq(h->time.max_abs, 50000);
  ck_assert_int_eq(h->late_by_cause[MEMSTUB_LATE_OFF_CPU], 1);
  ck_assert_int_eq(h->late_by_cause[MEMSTUB_LATE_WORK], 1);
  ck_assert_int_eq(rep->by_kind[MEMSTUB_ROW_STACK].rows, 1);
  ck_assert_int_eq(rep->by_kind[MEMSTUB_ROW_STACK].time.late, 0);
  ck_assert_int_eq(rep->by_kind[MEMSTUB_ROW_IDLE].rows, 4);
  ck_assert_int_eq(rep->by_kind[MEMSTUB_ROW_MAPPED].rows, 1);
  ck_assert_int_eq(rep->by_kind[MEMSTUB_ROW_TOUCH].rows, 1);
  memstub_compare_free(rep);
  memstub_trace_free(r);
  memstub_trace_free(t);
}
END_TEST

/* A real replay with the online model: rows of an mmapped heap block that
 * grows and shrinks by pages. The model learns and leads, and the heap and
 * stack it leaves at every point are those of the same replay without it. */
START_TEST(test_online_replay_exact) {
  enum { N = 60 };
  static struct memAlloc use[N];
  static int64_t point[N];
  for (int i = 0; i < N; i++) {
    int64_t dh = i == 0 ? 300000 : (i % 2 ? 3 * 4096 + 40 : -(3 * 4096 + 40));
    use[i] = (struct memAlloc){.time = 2000000, .stackAlloc = i % 4 == 1 ? 256 : i % 4 == 3 ? -256 : 0,
                               .heapAlloc = dh};
    point[i] = i + 1;
  }
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI,
                           .timing = MEMSTUB_TIMING_ONLINE,
                           .numdata = N,
                           .use = use,
                           .point = point,
                           .norig = N + 1,
                           .source = "online"};
  // A fixed mmap threshold: glibc's dynamic one rises when the first replay
  // frees its mapped block, and the second would then keep it in the arena.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.measure = MEMSTUB_MEASURE_TRACE;
  memstub_replay *on = NULL, *off = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_replay_run(&s, &o, &on, &err) == 0, "%s", err.msg);
  o.cost_model = MEMSTUB_COST_OFF;
  ck_assert_msg(memstub_replay_run(&s, &o, &off, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(on->info.cost_model, MEMSTUB_COST_ONLINE);
  ck_assert_int_eq(off->info.cost_model, MEMSTUB_COST_OFF);
  ck_assert_int_ge(on->info.cost_rows, N - 2);
  ck_assert_int_gt(on->info.cost_lead_ns, 0);
  ck_assert_int_eq(off->info.cost_lead_ns, 0);
  ck_assert_int_eq(off->info.cost_rows, 0);  // off: nothing learnt, no clock read
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(on->rec[i].stack_bytes, off->rec[i].stack_bytes);
    ck_assert_int_eq(on->rec[i].heap_bytes, off->rec[i].heap_bytes);
    ck_assert_int_eq(on->rec[i].heap_usable, off->rec[i].heap_usable);
    // A row starts at most its learnt lead early (capped), never before the last deadline.
    ck_assert_int_ge(on->rec[i].start_ns, on->rec[i].target_ns - use[i].time);
  }
  // Without the model no row ends before its deadline.
  for (int i = 0; i < N; i++) ck_assert_int_ge(off->rec[i].end_ns, off->rec[i].target_ns);
  memstub_replay *none = NULL;
  o.cost_model = 7;
  ck_assert_int_eq(memstub_replay_run(&s, &o, &none, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "cost_model"));
  memstub_replay_free(on);
  memstub_replay_free(off);
}
END_TEST

/* Which replays learn online (MEMSTUB_COST_AUTO): the default timing,
 * online, does for any stub whose delays carry no prediction, and deadline
 * timing never does, whatever the stub was made for. */
START_TEST(test_cost_model_by_timing) {
  static const struct memAlloc use[3] = {{100000, 64, 100}, {100000, 0, 200}, {100000, -64, -300}};
  static const int64_t point[3] = {1, 2, 3};
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI, .numdata = 3, .use = use, .point = point,
                           .norig = 4, .source = "modes", .calibration = "none"};
  static const struct {
    int stub_timing, calibrated, timing, on;
  } cases[] = {
      {MEMSTUB_TIMING_NONE, 0, -1, 1},  // -1: memstub_replay_options_for's default
      {MEMSTUB_TIMING_ONLINE, 1, -1, 1},
      {MEMSTUB_TIMING_DEADLINE, 1, -1, 0},  // its delays carry the profile's prediction
      {MEMSTUB_TIMING_DEADLINE, 0, -1, 0},  // made for deadline timing: its default
      {MEMSTUB_TIMING_DEADLINE, 0, MEMSTUB_TIMING_ONLINE, 1},
      {MEMSTUB_TIMING_DEADLINE, 1, MEMSTUB_TIMING_ONLINE, 0},
      {MEMSTUB_TIMING_USLEEP, 1, MEMSTUB_TIMING_ONLINE, 0},
      {MEMSTUB_TIMING_ONLINE, 1, MEMSTUB_TIMING_DEADLINE, 0},
      {MEMSTUB_TIMING_NONE, 0, MEMSTUB_TIMING_DEADLINE, 0},
      {MEMSTUB_TIMING_NONE, 0, MEMSTUB_TIMING_USLEEP, 0},
  };
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  ck_assert_int_eq(o.timing, MEMSTUB_TIMING_DEFAULT);
  ck_assert_int_eq(MEMSTUB_TIMING_DEFAULT, MEMSTUB_TIMING_ONLINE);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    s.timing = cases[k].stub_timing;
    s.calibration = cases[k].calibrated ? "host.profile (some timing)" : "none";
    memstub_replay_options_for(&o, &s);
    int want = cases[k].stub_timing == MEMSTUB_TIMING_NONE ? MEMSTUB_TIMING_DEFAULT
                                                            : cases[k].stub_timing;
    ck_assert_int_eq(o.timing, want);
    if (cases[k].timing >= 0) o.timing = cases[k].timing;
    memstub_replay *r = NULL;
    memstub_error err = {0};
    ck_assert_msg(memstub_replay_run(&s, &o, &r, &err) == 0, "%zu: %s", k, err.msg);
    ck_assert_msg(r->info.cost_model == (cases[k].on ? MEMSTUB_COST_ONLINE : MEMSTUB_COST_OFF),
                  "case %zu: cost model %d", k, r->info.cost_model);
    memstub_replay_free(r);
  }
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
  // Online timing (the default) ends a row at most its capped lead early.
  ck_assert_int_ge(r->info.duration_ns, 360000000 - MS__RT_COST_LEAD_MAX);
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
  tcase_add_test(tc, test_cause_rule_behind);
  tcase_add_test(tc, test_cost_classes);
  tcase_add_test(tc, test_cost_learns);
  tcase_add_test(tc, test_cost_fake_clock_rows);
  tcase_add_test(tc, test_row_kind);
  suite_add_tcase(s, tc);
  TCase *tr = tcase_create("replay");
  tcase_set_timeout(tr, 60);
  tcase_add_test(tr, test_idle_cpu);
  tcase_add_test(tr, test_online_replay_exact);
  tcase_add_test(tr, test_cost_model_by_timing);
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
