// An embedded stub that returns holding what its component left alive
// (memstub gen --hold; runtime/release.c; issue 20 item 3): the stub of
// tests/fixtures/hold/produce.csv, whose region leaves three blocks alive
// (100 kB the program freed 100 ms after the region, 200 kB at its exit
// 250 ms after, 300 kB never), built by memstub_add_stub as hold_stub
// (GEN_ARGS --hold: a timer releases them) and hold_api_stub (--hold-api:
// the host does). The heap is watched from outside the runtime: the
// process's heap in use (mallinfo2); under the sanitizers, whose allocator
// mallinfo2 does not see, the runtime's own count (memstub_NAME_held).
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memstub/runtime.h"
#include "memstub_hold_api_stub.h"
#include "memstub_hold_stub.h"
#include "prim.h"

#define MS 1000000LL
// Bytes the heap in use may differ from what is held: chunk headers and
// the runtime's own records of the blocks.
#define SLACK 16384
// How late a release may be on a loaded 2-core machine (load 5: the timer
// thread waits for a CPU); a release before its time is what the tests catch.
#define LATE (150 * MS)

static int64_t (*held_fn)(void);

// The heap in use as seen from outside the runtime, minus base.
static int64_t heap_now(int64_t base) {
#if defined(MEMSTUB_SANITIZED)
  (void)base;
  return held_fn();
#else
  return ms__prim_heap_in_use() - base;
#endif
}

static int64_t heap_base(void) {
#if defined(MEMSTUB_SANITIZED)
  return 0;
#else
  return ms__prim_heap_in_use();
#endif
}

static long long hold_held(void) { return memstub_hold_stub_held(); }
static long long api_held(void) { return memstub_hold_api_stub_held(); }
static int64_t hold_held64(void) { return hold_held(); }
static int64_t api_held64(void) { return api_held(); }

// The process's threads (/proc/self/status), -1 when unknown.
static int threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  int n = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  fclose(f);
  return n;
}

static void assert_near(int64_t v, int64_t want, const char *what) {
  ck_assert_msg(v >= want && v < want + SLACK, "%s: %lld, expected %lld (+%d)", what, (long long)v,
                (long long)want, SLACK);
}

/* Watch the heap for until ns after t_ret, every 0.5 ms: the times (after
 * t_ret) at which it first fell below each of levels[0..n). */
static void watch(int64_t base, int64_t t_ret, int64_t until, const int64_t *levels, int n,
                  int64_t *at) {
  for (int k = 0; k < n; k++) at[k] = -1;
  for (int64_t t; (t = ms__prim_now_ns() - t_ret) < until; usleep(500)) {
    int64_t h = heap_now(base);
    for (int k = 0; k < n; k++)
      if (at[k] < 0 && h < levels[k]) at[k] = t;
  }
}

// Timer mode: held at the return, 100 kB gone 100 ms later, 200 kB at
// 250 ms, 300 kB held to the end; the timer thread then ends.
START_TEST(test_timer_releases_on_schedule) {
  held_fn = hold_held64;
  int th0 = threads();
  int64_t base = heap_base();
  int64_t t_call = ms__prim_now_ns();
  memstub_error err = {0};
  ck_assert_msg(memstub_hold_stub_err(&err) == 0, "%s", err.msg);
  int64_t t_ret = ms__prim_now_ns();
  ck_assert_int_eq(memstub_hold_stub_held(), 600000);
  assert_near(heap_now(base), 600000, "held at the return");
  static const int64_t levels[] = {600000 - 50000, 500000 - 100000};
  int64_t at[2];
  watch(base, t_ret, 450 * MS, levels, 2, at);
  // Due at the runtime's return (between t_call and t_ret) + the schedule.
  int64_t early = t_ret - t_call;
  ck_assert_msg(at[0] >= 100 * MS - early && at[0] < 100 * MS + LATE,
                "100 kB released %lld ns after the return", (long long)at[0]);
  ck_assert_msg(at[1] >= 250 * MS - early && at[1] < 250 * MS + LATE,
                "200 kB released %lld ns after the return", (long long)at[1]);
  ck_assert_int_eq(memstub_hold_stub_held(), 300000);
  assert_near(heap_now(base), 300000, "held at the end");
  // Nothing timed is left: the timer thread has ended.
  int th = threads();
  for (int i = 0; i < 200 && th > th0; i++) usleep(5000), th = threads();
  ck_assert_int_eq(th, th0);
  // The host's release leaves what the program never freed.
  ck_assert_int_eq(memstub_hold_stub_release(), 0);
  ck_assert_int_eq(memstub_hold_stub_held(), 300000);
}
END_TEST

// A second call before the first's blocks are released: both are held and
// each is released on its own schedule, as the component's would be.
START_TEST(test_timer_calls_accumulate) {
  held_fn = hold_held64;
  int64_t base = heap_base();
  ck_assert_int_eq(memstub_hold_stub(), 0);
  int64_t t1 = ms__prim_now_ns();
  usleep(50000);
  ck_assert_int_eq(memstub_hold_stub(), 0);
  int64_t t2 = ms__prim_now_ns() - t1;  // the second return, after the first
  ck_assert_int_le(memstub_hold_stub_held(), 1200000);
  // Unless the first 100 kB went already: due 100 ms after the first call,
  // which a loaded machine may take to make the second.
  if (ms__prim_now_ns() - t1 < 95 * MS) ck_assert_int_ge(memstub_hold_stub_held(), 1100000);
  // 1.2 MB -> 1.1 (first call's 100 kB) -> 1.0 (second's) -> 0.8 -> 0.6.
  static const int64_t levels[] = {1150000, 1050000, 900000, 700000};
  int64_t at[4];
  watch(base, t1, 500 * MS, levels, 4, at);
  const int64_t due[] = {100 * MS, t2 + 100 * MS, 250 * MS, t2 + 250 * MS};
  for (int k = 0; k < 4; k++)
    ck_assert_msg(at[k] >= due[k] - 5 * MS && at[k] < due[k] + LATE,
                  "release %d at %lld ns, due at %lld", k, (long long)at[k], (long long)due[k]);
  ck_assert_int_eq(memstub_hold_stub_held(), 600000);
  assert_near(heap_now(base), 600000, "two calls' never-freed blocks");
}
END_TEST

// API mode: nothing goes until the host says; then part, then the rest of
// what the program freed; what it never freed stays.
START_TEST(test_api_releases_at_the_hosts_call) {
  held_fn = api_held64;
  int64_t base = heap_base();
  ck_assert_int_eq(memstub_hold_api_stub(), 0);
  assert_near(heap_now(base), 600000, "held at the return");
  usleep(300000);  // past the whole recorded schedule
  ck_assert_int_eq(memstub_hold_api_stub_held(), 600000);
  assert_near(heap_now(base), 600000, "held until the host's call");
  ck_assert_int_eq(memstub_hold_api_stub_release_bytes(50000), 50000);
  ck_assert_int_eq(memstub_hold_api_stub_held(), 550000);
  assert_near(heap_now(base), 550000, "after releasing 50 kB");
  ck_assert_int_eq(memstub_hold_api_stub_release(), 250000);
  ck_assert_int_eq(memstub_hold_api_stub_held(), 300000);
  assert_near(heap_now(base), 300000, "after the release");
  ck_assert_int_eq(memstub_hold_api_stub_release(), 0);
  ck_assert_int_eq(memstub_hold_api_stub_release_bytes(-5), 0);
  // Two more calls: the oldest call's blocks go first, in recorded order.
  ck_assert_int_eq(memstub_hold_api_stub(), 0);
  ck_assert_int_eq(memstub_hold_api_stub(), 0);
  ck_assert_int_eq(memstub_hold_api_stub_held(), 300000 + 2 * 600000);
  ck_assert_int_eq(memstub_hold_api_stub_release_bytes(150000), 150000);  // 100 kB + 50 of 200
  assert_near(heap_now(base), 300000 + 2 * 600000 - 150000, "oldest first");
  ck_assert_int_eq(memstub_hold_api_stub_release(), 150000 + 300000);
  ck_assert_int_eq(memstub_hold_api_stub_held(), 3 * 300000);
  assert_near(heap_now(base), 3 * 300000, "three calls' never-freed blocks");
}
END_TEST

// MEMSTUB_RELEASE overrides the header's mode; a bad value holds nothing.
START_TEST(test_environment_override) {
  held_fn = hold_held64;
  setenv("MEMSTUB_RELEASE", "api", 1);
  ck_assert_int_eq(memstub_hold_stub(), 0);
  usleep(150000);
  ck_assert_int_eq(memstub_hold_stub_held(), 600000);
  ck_assert_int_eq(memstub_hold_stub_release(), 300000);
  setenv("MEMSTUB_RELEASE", "later", 1);
  memstub_error err = {0};
  ck_assert_int_eq(memstub_hold_stub_err(&err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "MEMSTUB_RELEASE: 'later'"), "%s", err.msg);
  ck_assert_int_eq(memstub_hold_stub_held(), 300000);
  unsetenv("MEMSTUB_RELEASE");
}
END_TEST

// Malformed schedules are refused before anything is replayed.
START_TEST(test_schedule_check) {
  static const int64_t after[] = {10, 5, -1}, bytes[] = {1, 2, 3};
  struct memstub_release r = {MEMSTUB_RELEASE_ABI, MEMSTUB_RELEASE_TIMER, 3, after, bytes};
  memstub_error err = {0};
  ck_assert_int_eq(memstub_release_check(&r, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "entry 1"), "%s", err.msg);
  static const int64_t after2[] = {-1, 5};
  r.after_ns = after2, r.n = 2;
  ck_assert_int_eq(memstub_release_check(&r, &err), -EINVAL);
  r.after_ns = after, r.n = 1, r.mode = 7;
  ck_assert_int_eq(memstub_release_check(&r, &err), -EINVAL);
  r.mode = MEMSTUB_RELEASE_API;
  ck_assert_int_eq(memstub_release_check(&r, &err), 0);
  ck_assert_int_eq(memstub_stub_call_held(memstub_hold_stub_stub(), &(struct memstub_release){
                                              MEMSTUB_RELEASE_ABI, 1, 2, after, bytes}, &err),
                   -EINVAL);
  ck_assert_int_eq(memstub_release_held(&r), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("embed_release");
  TCase *tc = tcase_create("hold");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_timer_releases_on_schedule);
  tcase_add_test(tc, test_timer_calls_accumulate);
  tcase_add_test(tc, test_api_releases_at_the_hosts_call);
  tcase_add_test(tc, test_environment_override);
  tcase_add_test(tc, test_schedule_check);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
