// One host binary for every point (issue 33 item 1): a stub embedded with
// memstub_add_stub(... DATA) reads its data file at its first call from
// MEMSTUB_DATA_<name>, else the file it was built with; a missing, damaged
// or empty one is the call's error naming the variable and the file, never
// the built data instead. A stub built from a header refuses the variable.
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memstub/error.h"
#include "memstub/trace.h"
#include "memstub_listing1_stub.h"
#include "testutil.h"

#define VAR "MEMSTUB_DATA_data_stub"

static char *path_in(const char *dir, const char *name) {
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

// The host (tests/sweep/host.c) run with VAR set to value (NULL: unset).
static tu_run host(const char *value) {
  char *argv[] = {getenv("MEMSTUB_SWEEP_HOST"), NULL};
  ck_assert_ptr_nonnull(argv[0]);
  if (value)
    setenv(VAR, value, 1);
  else
    unsetenv(VAR);
  tu_run r = tu_exec(NULL, argv);
  unsetenv(VAR);
  return r;
}

// resident.csv's stub as a data file at heap scale, named data_stub.
static char *make_data(const char *dir, const char *file, const char *heap) {
  char *out = path_in(dir, file);
  tu_run r = tu_memstub(NULL, "gen", tu_src("tests/fixtures/whatif/resident.csv"), "--name",
                        "data_stub", "--heap-scale", heap, "--data", out, NULL);
  ck_assert_msg(r.status == 0, "gen: %s", r.err);
  tu_run_free(&r);
  return out;
}

// The host's call failed with a message holding want, and said nothing else.
static void assert_refused(const char *value, const char *want) {
  tu_run r = host(value);
  ck_assert_msg(r.status == 2, "status %d: %s%s", r.status, r.out, r.err);
  ck_assert_msg(strstr(r.err, want), "expected '%s' in: %s", want, r.err);
  ck_assert_str_eq(r.out, "");
  tu_run_free(&r);
}

START_TEST(test_builtin_and_variable) {
  // Unset: the file it was built with (resident.csv: an 8 MiB heap).
  tu_run r = host(NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "peak_heap=8388608 name=data_stub\n");
  tu_run_free(&r);
  // Set: another point's file, the same binary; the replayed peak follows it.
  char *dir = tu_mkdtemp(), *half = make_data(dir, "half.msd", "0.5");
  char *measure = path_in(dir, "m.csv");
  setenv("MEMSTUB_MEASURE", measure, 1);
  r = host(half);
  unsetenv("MEMSTUB_MEASURE");
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "peak_heap=4194304 name=data_stub\n");
  tu_run_free(&r);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(measure, &t, &err) == 0, "%s", err.msg);
  int64_t peak = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->pts[i].heap_bytes > peak) peak = t->pts[i].heap_bytes;
#if !defined(MEMSTUB_SANITIZED)  // the sanitizer's allocator: heap_bytes not the stub's
  // The heap measured with the allocator's chunk overhead: 4 MiB, not 8.
  ck_assert_msg(peak >= 4194304 && peak < 4194304 + 65536, "peak %lld", (long long)peak);
#endif
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
  free(half);
  free(measure);
}
END_TEST

START_TEST(test_missing_damaged_empty) {
  char *dir = tu_mkdtemp(), *good = make_data(dir, "good.msd", "0.5");
  char *missing = path_in(dir, "none.msd"), *want = NULL;
  ck_assert(asprintf(&want, VAR "=%s: %s: cannot open: No such file or directory", missing,
                     missing) > 0);
  assert_refused(missing, want);
  free(want);
  // A byte of the points changed (the first array, use: its offset is in
  // the table entry at table_off, byte 160 of the head): its checksum.
  char *bad = path_in(dir, "bad.msd");
  size_t len = 0;
  unsigned char *bytes = (unsigned char *)tu_read_file_len(good, &len);
  uint64_t table_off, use_off;
  memcpy(&table_off, bytes + 160, 8);
  memcpy(&use_off, bytes + table_off + 32, 8);
  ck_assert(use_off + 8 < len);
  bytes[use_off + 8] ^= 0x20;
  FILE *out = fopen(bad, "wb");
  ck_assert(out && fwrite(bytes, 1, len, out) == len && fclose(out) == 0);
  free(bytes);
  ck_assert(asprintf(&want, VAR "=%s: %s: array use: damaged (checksum mismatch)", bad, bad) > 0);
  assert_refused(bad, want);
  free(want);
  // Truncated: its size against the head's.
  ck_assert_int_eq(truncate(bad, 300), 0);
  ck_assert(asprintf(&want, VAR "=%s: %s: file_size: the file has 300 bytes", bad, bad) > 0);
  assert_refused(bad, want);
  free(want);
  // Set but empty: an error, not the built file.
  assert_refused("", VAR " is set but empty");
  tu_rmtree(dir);
  free(dir);
  free(good);
  free(missing);
  free(bad);
}
END_TEST

// A stub built from a header cannot read a data file: the variable is refused.
START_TEST(test_header_stub_refuses) {
  memstub_error err = {0};
  setenv("MEMSTUB_DATA_listing1_stub", "/nonexistent.msd", 1);
  int rc = memstub_listing1_stub_err(&err);
  unsetenv("MEMSTUB_DATA_listing1_stub");
  ck_assert_int_eq(rc, -EINVAL);
  ck_assert_msg(strstr(err.msg, "MEMSTUB_DATA_listing1_stub is set, but the stub listing1_stub "
                                "was built from a header"),
                "%s", err.msg);
  ck_assert_int_eq(memstub_listing1_stub_err(&err), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("embed_data");
  TCase *tc = tcase_create("data");
  tcase_add_test(tc, test_builtin_and_variable);
  tcase_add_test(tc, test_missing_damaged_empty);
  tcase_add_test(tc, test_header_stub_refuses);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
