// memstub record --function (issue 15): calls of a function named on the
// command line become probe regions with no source edits: in the
// executable, in a linked library, in a library loaded later with dlopen,
// nested, left by longjmp; the same rows as a build with probe calls
// compiled in; clear refusals. tests/record/fnprog.c, tests/record/fnlib.c.
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/trace.h"
#include "testutil.h"

static const char *env(const char *name) {
  const char *v = getenv(name);
  ck_assert_msg(v != NULL, "%s is not set (run the tests with ctest)", name);
  return v;
}

// memstub record -q -o DIR/t.csv [--function F]... -- PROG ARGS..., the list
// ending with NULL; functions and arguments split by a "--" entry.
static tu_run record(const char *dir, const char *const *fns, const char *prog,
                     const char *const *args) {
  char *argv[32];
  int n = 0;
  argv[n++] = (char *)env("MEMSTUB_EXE");
  argv[n++] = "record";
  argv[n++] = "-q";
  argv[n++] = "-o";
  argv[n++] = "t.csv";
  for (; fns && *fns; fns++) {
    argv[n++] = "--function";
    argv[n++] = (char *)*fns;
  }
  argv[n++] = "--";
  argv[n++] = (char *)prog;
  for (; args && *args; args++) argv[n++] = (char *)*args;
  argv[n] = NULL;
  return tu_exec(dir, argv);
}

static memstub_trace *load(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  return t;
}

static int64_t col(const memstub_trace *t, const char *name, size_t row) {
  int c = memstub_trace_column(t, name);
  ck_assert_msg(c >= 0, "no column %s", name);
  return t->extra[row * t->nextra + (size_t)c];
}

// The number of regions (the largest region id) and each one's peak heap
// above the heap at its first row (the heap is the process's: a dlopen
// before the region leaves its own blocks).
static int64_t regions(const memstub_trace *t, int64_t *peak, int cap) {
  int64_t nr = 0, base = 0;
  for (int i = 0; i < cap; i++) peak[i] = 0;
  for (size_t i = 0; i < t->n; i++) {
    int64_t r = col(t, "region", i);
    if (r > nr) {
      nr = r;
      base = t->pts[i].heap_bytes;
    }
    if (r > 0 && r <= cap && t->pts[i].heap_bytes - base > peak[r - 1])
      peak[r - 1] = t->pts[i].heap_bytes - base;
  }
  return nr;
}

START_TEST(test_function_in_executable) {
  char *dir = tu_mkdtemp();
  const char *fns[] = {"work", NULL}, *args[] = {"exe", "3", NULL};
  tu_run r = record(dir, fns, env("MEMSTUB_REC_FNPROG"), args);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  memstub_trace *t = load(dir);
  int64_t peak[8];
  ck_assert_int_eq(regions(t, peak, 8), 3);
  for (int k = 1; k <= 3; k++) ck_assert_int_eq(peak[k - 1], k * 100000);
  const char *m = memstub_trace_get_meta(t, "record.function.work");
  ck_assert_ptr_nonnull(m);
  ck_assert_msg(strstr(m, "1 definition patched, 3 calls"), "%s", m);
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The same program with memstub_probe_begin/end in work(): the same rows.
START_TEST(test_same_rows_as_probes) {
  char *d1 = tu_mkdtemp(), *d2 = tu_mkdtemp();
  const char *fns[] = {"work", NULL}, *args[] = {"exe", "4", NULL};
  tu_run a = record(d1, fns, env("MEMSTUB_REC_FNPROG"), args);
  tu_run b = record(d2, NULL, env("MEMSTUB_REC_FNPROG_PROBE"), args);
  ck_assert_msg(a.status == 0 && b.status == 0, "%s / %s", a.err, b.err);
  memstub_trace *x = load(d1), *y = load(d2);
  ck_assert_int_eq(x->n, y->n);
  for (size_t i = 0; i < x->n; i++) {
    ck_assert_int_eq(col(x, "region", i), col(y, "region", i));
    ck_assert_int_eq(x->pts[i].heap_bytes, y->pts[i].heap_bytes);
    // The probe calls sit inside work(): a few bytes of frame apart.
    int64_t ds = x->pts[i].stack_bytes - y->pts[i].stack_bytes;
    ck_assert_msg(ds >= -64 && ds <= 64, "row %zu: stack %lld vs %lld", i,
                  (long long)x->pts[i].stack_bytes, (long long)y->pts[i].stack_bytes);
  }
  memstub_trace_free(x);
  memstub_trace_free(y);
  tu_run_free(&a);
  tu_run_free(&b);
  tu_rmtree(d1);
  tu_rmtree(d2);
  free(d1);
  free(d2);
}
END_TEST

START_TEST(test_function_in_library) {
  char *dir = tu_mkdtemp();
  const char *fns[] = {"lib_work", NULL}, *args[] = {"lib", "3", NULL};
  tu_run r = record(dir, fns, env("MEMSTUB_REC_FNPROG"), args);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  memstub_trace *t = load(dir);
  int64_t peak[8];
  ck_assert_int_eq(regions(t, peak, 8), 3);
  for (int k = 1; k <= 3; k++) ck_assert_int_eq(peak[k - 1], k * 100 * 1024);
  const char *at = memstub_trace_get_meta(t, "record.function_at.1");
  ck_assert_msg(at && strstr(at, "libfnlib"), "%s", at ? at : "(none)");
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_function_after_dlopen) {
  char *dir = tu_mkdtemp();
  const char *fns[] = {"lib_work", NULL},
             *args[] = {"dlopen", env("MEMSTUB_REC_FNLIB_DL"), "2", NULL};
  tu_run r = record(dir, fns, env("MEMSTUB_REC_FNPROG"), args);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  memstub_trace *t = load(dir);
  int64_t peak[8];
  ck_assert_int_eq(regions(t, peak, 8), 2);
  ck_assert_int_eq(peak[1], 200 * 1024);
  const char *m = memstub_trace_get_meta(t, "record.function.lib_work");
  // The linked libfnlib's copy at start, the dlopen'ed one when it came.
  ck_assert_msg(m && strstr(m, "2 definitions patched, 2 calls"), "%s", m ? m : "(none)");
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// outer() calls work() twice: two outermost regions, both names in the churn.
START_TEST(test_nested_functions) {
  char *dir = tu_mkdtemp();
  const char *fns[] = {"outer", "work", NULL}, *args[] = {"nested", NULL};
  tu_run r = record(dir, fns, env("MEMSTUB_REC_FNPROG"), args);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  memstub_trace *t = load(dir);
  int64_t peak[8];
  ck_assert_int_eq(regions(t, peak, 8), 2);
  ck_assert_int_eq(peak[0], 200000);  // work(2) inside outer(1)
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "churn.region.outer"));
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "churn.region.work"));
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// jumper() leaves by longjmp: its region ends when the next call comes,
// and the program goes on unharmed.
START_TEST(test_longjmp_out_of_a_function) {
  char *dir = tu_mkdtemp();
  const char *fns[] = {"jumper", "work", NULL}, *args[] = {"longjmp", NULL};
  tu_run r = record(dir, fns, env("MEMSTUB_REC_FNPROG"), args);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  memstub_trace *t = load(dir);
  int64_t peak[8];
  ck_assert_int_eq(regions(t, peak, 8), 2);
  ck_assert_int_eq(peak[0], 4096);
  ck_assert_int_eq(peak[1], 100000);
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_refusals) {
  char *dir = tu_mkdtemp();
  const char *nf[] = {"no_such_function_here", NULL}, *a1[] = {"exe", "1", NULL};
  tu_run r = record(dir, nf, env("MEMSTUB_REC_FNPROG"), a1);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(r.err, "--function no_such_function_here: not found"), "%s", r.err);
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_run_free(&r);
  const char *nc[] = {"tiny", NULL};
  r = record(dir, nc, env("MEMSTUB_REC_FNPROG"), a1);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(r.err, "never called"), "%s", r.err);
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_run_free(&r);
  const char *bad[] = {"a,b", NULL};
  r = record(dir, bad, env("MEMSTUB_REC_FNPROG"), a1);
  ck_assert_int_eq(r.status, 2);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("record_function");
  TCase *tc = tcase_create("function");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_function_in_executable);
  tcase_add_test(tc, test_same_rows_as_probes);
  tcase_add_test(tc, test_function_in_library);
  tcase_add_test(tc, test_function_after_dlopen);
  tcase_add_test(tc, test_nested_functions);
  tcase_add_test(tc, test_longjmp_out_of_a_function);
  tcase_add_test(tc, test_refusals);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
