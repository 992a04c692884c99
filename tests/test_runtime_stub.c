// memstub_add_stub: the library made from traces/samples/listing1.csv at
// build time (tests/CMakeLists.txt), called through its function entry point.
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/runtime.h"
#include "memstub_listing1_stub.h"
#include "test_replay_common.h"
#include "testutil.h"

START_TEST(test_entry_point) {
  ck_assert_int_eq(memstub_listing1_stub(), 0);
  const struct memstub_stub *s = memstub_listing1_stub_stub();
  ck_assert_int_eq(s->numdata, 4);
  ck_assert_str_eq(s->name, "listing1_stub");
  ck_assert_int_eq(s->use[1].heapAlloc, 200);
}
END_TEST

// Measured through the environment, the entry point's replay matches the trace.
START_TEST(test_entry_point_measured) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/replayed.csv", dir);
  setenv("MEMSTUB_MEASURE", path, 1);
  memstub_error err = {0};
  ck_assert_msg(memstub_listing1_stub_err(&err) == 0, "%s", err.msg);
  unsetenv("MEMSTUB_MEASURE");
  memstub_trace *orig = NULL, *rep = NULL;
  ck_assert_int_eq(memstub_trace_read(tu_src("traces/samples/listing1.csv"), &orig, &err), 0);
  ck_assert_msg(memstub_trace_read(path, &rep, &err) == 0, "%s", err.msg);
  rt_fit fit;
  rt_check_exact(orig, memstub_listing1_stub_stub(), rep, 1, &fit);
  ck_assert_str_eq(memstub_trace_get_meta(rep, "stub"), "listing1_stub");
  memstub_trace_free(orig);
  memstub_trace_free(rep);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// A bad environment is an error, not a silent default.
START_TEST(test_entry_point_bad_env) {
  setenv("MEMSTUB_MARGIN_NS", "soon", 1);
  memstub_error err = {0};
  ck_assert_int_eq(memstub_listing1_stub_err(&err), -22);
  ck_assert_ptr_nonnull(strstr(err.msg, "MEMSTUB_MARGIN_NS"));
  ck_assert_int_eq(memstub_listing1_stub(), -22);
  unsetenv("MEMSTUB_MARGIN_NS");
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_stub");
  TCase *tc = tcase_create("memstub_add_stub");
  tcase_add_test(tc, test_entry_point);
  tcase_add_test(tc, test_entry_point_measured);
  tcase_add_test(tc, test_entry_point_bad_env);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
