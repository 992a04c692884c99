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

/* A stub program (memstub gen, then memstub build) links the runtime alone:
 * its link line names no generator library, and nm finds no generator,
 * m4-emitter or compensation symbol in it, but the runtime's. Skipped when
 * nm cannot be run. */
START_TEST(test_stub_links_runtime_alone) {
  char *nmv[] = {"nm", "--version", NULL};
  tu_run r = tu_exec(NULL, nmv);
  int have_nm = r.status == 0;
  tu_run_free(&r);
  if (!have_nm) {
    fprintf(stderr, "test_stub_links_runtime_alone: nm cannot be run: skipped\n");
    return;
  }
  char *dir = tu_mkdtemp(), h[4096], prog[4096];
  snprintf(h, sizeof h, "%s/memuse.h", dir);
  snprintf(prog, sizeof prog, "%s/stub", dir);
  r = tu_memstub(NULL, "gen", tu_src("traces/samples/listing1.csv"), "-o", h, NULL);
  ck_assert_msg(r.status == 0, "gen: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "build", h, "-o", prog, "-v", NULL);
  ck_assert_msg(r.status == 0, "build: %s", r.err);
  const char *cmd = strstr(r.err, "libmemstub_runtime.a") ? r.err : r.out;
  ck_assert_msg(strstr(cmd, "libmemstub_runtime.a") != NULL, "no link line in: %s%s", r.out, r.err);
  ck_assert_msg(strstr(cmd, "libmemstub_gen") == NULL, "the generator is linked: %s", cmd);
  tu_run_free(&r);
  char *nmargv[] = {"nm", prog, NULL};
  r = tu_exec(NULL, nmargv);
  ck_assert_msg(r.status == 0, "nm: %s", r.err);
  static const char *const banned[] = {"memstub_gen_", "ms__gen_", "ms__emit", "compensate",
                                       "memuse_template", "ms__cal_"};
  int runtime = 0, check = 0;
  for (char *line = r.out; line && *line;) {
    char *end = strchr(line, '\n');
    if (end) *end = '\0';
    const char *name = strrchr(line, ' ');
    name = name ? name + 1 : line;
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
      ck_assert_msg(strstr(name, banned[i]) == NULL, "the stub holds %s", name);
    if (strcmp(name, "memstub_replay_run") == 0) runtime = 1;
    if (strcmp(name, "memstub_stub_check") == 0) check = 1;
    line = end ? end + 1 : NULL;
  }
  ck_assert_msg(runtime && check, "nm shows no runtime symbols:\n%.2000s", r.out);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_stub");
  TCase *tc = tcase_create("memstub_add_stub");
  tcase_add_test(tc, test_entry_point);
  tcase_add_test(tc, test_entry_point_measured);
  tcase_add_test(tc, test_entry_point_bad_env);
  suite_add_tcase(s, tc);
  TCase *link = tcase_create("link");
  tcase_set_timeout(link, 120);
  tcase_add_test(link, test_stub_links_runtime_alone);
  suite_add_tcase(s, link);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
