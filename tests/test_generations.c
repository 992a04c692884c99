// traces/generations.c: reading TRACE.generations, and releasing survivors
// in a trace of regions (memstub gen --release).
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/generations.h"
#include "testutil.h"

static memstub_generations *load(const char *text, memstub_error *err, int *rc) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/t.generations", dir);
  tu_write_file(path, text);
  memstub_generations *g = NULL;
  *rc = memstub_generations_read(path, &g, err);
  tu_rmtree(dir);
  free(dir);
  return g;
}

START_TEST(test_read_and_refuse) {
  memstub_error err = {0};
  int rc;
  memstub_generations *g = load("# memstub-generations 1\n   \nexit_ns 900\ndropped 1 2 3\n"
                                "occurrence 1 0 100 4 650 3 600 my region\n"
                                "survivor 1 100 10 300\nsurvivor 1 300 20 -1 7\n",
                                &err, &rc);
  ck_assert_msg(rc == 0, "%s", err.msg);
  ck_assert_int_eq(g->exit_ns, 900);
  ck_assert_int_eq(g->dropped_occurrences, 2);
  ck_assert_int_eq(g->nocc, 1);
  ck_assert_str_eq(g->occ[0].name, "my region");
  ck_assert_int_eq(g->nsurv, 2);
  ck_assert_int_eq(g->surv[1].free_ns, -1);
  ck_assert_int_eq(g->surv[0].site, -1);  // five fields: before sites were recorded
  ck_assert_int_eq(g->surv[1].site, 7);
  memstub_generations_free(g);
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"# memstub-trace 1\n", ":1: not a memstub generations file"},
      {"# memstub-generations 1\noccurrence 1 0 5 1 1 0 0 f\n", "no exit_ns line"},
      {"# memstub-generations 1\nexit_ns 1\nsurvivor 2 10 0 5\n", ":3: field 2: occurrence 2 has no"},
      {"# memstub-generations 1\nexit_ns 1\noccurrence 1 9 5 1 1 0 0 f\n", ":3: field 4: it ends before"},
      {"# memstub-generations 1\nexit_ns x\n", ":2: field 2: expected an integer"},
      {"# memstub-generations 1\nexit_ns 9\noccurrence 2 0 5 1 1 0 0 f\noccurrence 2 6 7 1 1 0 0 f\n",
       ":4: field 2: occurrence 2 is not above the one before"},
      {"# memstub-generations 1\nexit_ns 1\nsurvivor 1\n", ":3: field 1: unknown or incomplete"},
      {"# memstub-generations 1\nexit_ns 1\noccurrence 1 0 5 1 1 0 0 f\nsurvivor 1 1 0 5 -2\n",
       ":4: field 6: a site is -1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    g = load(bad[i].text, &err, &rc);
    ck_assert_int_lt(rc, 0);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(err.msg, bad[i].want), "case %zu: %s", i, err.msg);
  }
}
END_TEST

static void row(memstub_trace *t, int64_t time, int64_t heap, int64_t region) {
  ck_assert_int_eq(memstub_trace_append(t, time, 0, heap), 0);
  memstub_trace_extra_row(t, t->n - 1)[0] = region;
}

// Two regions with a gap: survivors of region 1 freed in the gap get rows
// there; one freed inside region 2 gets none (its rows have it); region 2's
// survivor freed after the trace's end gets a row after it; one alive at
// exit stays.
START_TEST(test_release_rows) {
  memstub_trace *t = memstub_trace_create();
  ck_assert_int_eq(memstub_trace_add_column(t, "region"), 0);
  row(t, 0, 0, 1);
  row(t, 10, 1000, 1);
  row(t, 20, 1000, 1);  // region 1 ends holding 1000
  row(t, 100, 700, 2);  // region 2 begins: 300 freed in the gap
  row(t, 110, 900, 2);
  row(t, 120, 500, 2);  // ends
  memstub_error err = {0};
  int rc;
  memstub_generations *g = load("# memstub-generations 1\nexit_ns 500\n"
                                "occurrence 1 0 20 3 1000 3 1000 a\n"
                                "occurrence 2 100 120 1 200 1 200 a\n"
                                "survivor 1 100 5 50\nsurvivor 1 200 6 60\n"
                                "survivor 1 400 7 105\nsurvivor 2 200 105 300\n"
                                "survivor 1 300 8 -1\n",
                                &err, &rc);
  ck_assert_msg(rc == 0, "%s", err.msg);
  memstub_trace *c = NULL;
  size_t added = 0;
  ck_assert_msg(memstub_generations_release(t, g, &c, &added, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(added, 3);
  ck_assert_int_eq(c->n, 9);
  static const int64_t want_t[] = {0, 10, 20, 50, 60, 100, 110, 120, 300};
  static const int64_t want_h[] = {0, 1000, 1000, 900, 700, 700, 900, 500, 300};
  for (size_t i = 0; i < 9; i++) {
    ck_assert_int_eq(c->pts[i].time_ns, want_t[i]);
    ck_assert_int_eq(c->pts[i].heap_bytes, want_h[i]);
  }
  memstub_trace_free(c);
  // --hold: the same releases inside the trace, none after it; what is
  // alive after its last row (120) is held: region 2's 200 until 300, and
  // region 1's 300 never freed.
  memstub_held held;
  ck_assert_msg(memstub_generations_hold(t, g, &c, &added, &held, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(added, 2);
  ck_assert_int_eq(c->n, 8);
  ck_assert_int_eq(c->pts[7].time_ns, 120);
  ck_assert_int_eq(held.n, 2);
  ck_assert_int_eq(held.after_ns[0], 180);
  ck_assert_int_eq(held.bytes[0], 200);
  ck_assert_int_eq(held.after_ns[1], -1);
  ck_assert_int_eq(held.bytes[1], 300);
  ck_assert_int_eq(held.total, 500);
  memstub_held_free(&held);
  memstub_trace_free(c);
  // A trace without regions: refused.
  memstub_trace *plain = memstub_trace_create();
  ck_assert_int_eq(memstub_trace_append(plain, 0, 0, 0), 0);
  ck_assert_int_eq(memstub_generations_release(plain, g, &c, &added, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "no region column"), "%s", err.msg);
  memstub_trace_free(plain);
  memstub_trace_free(t);
  memstub_generations_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("generations");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_read_and_refuse);
  tcase_add_test(tc, test_release_rows);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
