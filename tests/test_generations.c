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

START_TEST(test_read_v1) {
  memstub_error err = {0};
  int rc;
  memstub_generations *g = load("# memstub-generations 1\n   \n# a comment\nexit_ns 900\n"
                                "dropped 1 2 3\noccurrence 1 0 100 4 650 3 600 my region\n"
                                "survivor 1 100 10 300 -1\nsurvivor 1 300 20 -1 7\n",
                                &err, &rc);
  ck_assert_msg(rc == 0, "%s", err.msg);
  ck_assert_int_eq(g->version, 1);
  ck_assert_int_eq(g->exit_ns, 900);
  ck_assert_int_eq(g->dropped_occurrences, 2);
  ck_assert_int_eq(g->nocc, 1);
  ck_assert_str_eq(g->occ[0].name, "my region");
  ck_assert_int_eq(g->nsurv, 2);
  ck_assert_int_eq(g->surv[0].blocks, 1);  // one block per version 1 line
  ck_assert_int_eq(g->surv[1].blocks, 1);
  ck_assert_int_eq(g->surv[1].free_ns, -1);
  ck_assert_int_eq(g->surv[0].site, -1);
  ck_assert_int_eq(g->surv[1].site, 7);
  memstub_generations_free(g);
  // Written before sites were recorded: no SITE, read as -1; fewer
  // survivors than the occurrences left (records dropped) is version 1's
  // right; a free before the trace's start (a --occurrence trace) is a time.
  g = load("# memstub-generations 1\nexit_ns 900\noccurrence 1 -50 -10 2 30 2 30 f\n"
           "survivor 1 10 -40 -20\n", &err, &rc);
  ck_assert_msg(rc == 0, "%s", err.msg);
  ck_assert_int_eq(g->surv[0].site, -1);
  ck_assert_int_eq(g->surv[0].free_ns, -20);
  memstub_generations_free(g);
}
END_TEST

// Version 2: survivors aggregated (BLOCKS), every survivor in a line.
START_TEST(test_read_v2) {
  memstub_error err = {0};
  int rc;
  memstub_generations *g = load("# memstub-generations 2\nexit_ns 900\n"
                                "occurrence 1 0 100 40 6500 30 6000 parse\n"
                                "occurrence 3 120 180 1 0 1 0 x y\n"
                                "survivors 3 1 0 130 -1 -1\n"
                                "survivors 1 10 1000 10 300 4\n"
                                "survivors 1 20 5000 20 -1 -1\n",
                                &err, &rc);
  ck_assert_msg(rc == 0, "%s", err.msg);
  ck_assert_int_eq(g->version, 2);
  ck_assert_int_eq(g->nocc, 2);
  ck_assert_int_eq(g->nsurv, 3);
  ck_assert_int_eq(g->surv[0].occurrence, 3);
  ck_assert_int_eq(g->surv[0].bytes, 0);  // a block of 0 bytes
  ck_assert_int_eq(g->surv[1].blocks, 10);
  ck_assert_int_eq(g->surv[1].bytes, 1000);
  ck_assert_int_eq(g->surv[1].alloc_ns, 10);
  ck_assert_int_eq(g->surv[1].free_ns, 300);
  ck_assert_int_eq(g->surv[1].site, 4);
  ck_assert_int_eq(g->surv[2].blocks, 20);
  ck_assert_str_eq(g->occ[1].name, "x y");
  ck_assert_int_eq(g->dropped_blocks, 0);
  memstub_generations_free(g);
}
END_TEST

// Each malformed case, with where and what: issue 28 item 6 (cut files,
// -1 and other values out of range, inconsistent times and sums).
START_TEST(test_refuse) {
#define V1 "# memstub-generations 1\nexit_ns 900\n"
#define V2 "# memstub-generations 2\nexit_ns 900\n"
#define OCC "occurrence 1 0 100 4 650 3 600 f\n"
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"", ":1: empty file"},
      {"# memstub-trace 1\n", ":1: not a memstub generations file"},
      {"# memstub-generations 3\n", ":1: version '3': this memstub reads versions 1 and 2"},
      {"# memstub-generations 2", ":1: truncated: the last line has no newline"},
      // Cut short: a name, an address, a number.
      {V2 "occurrence 1 0 100 4 650 0 0 parse_fi", ":3: truncated: the last line has no newline"},
      {V1 OCC "survivor 1 100 10 30", ":4: truncated: the last line has no newline"},
      {V2 "occ\0urrence 1\n", ":3: a NUL byte"},
      {"# memstub-generations 1\noccurrence 1 0 5 1 1 0 0 f\n", ":2: field 1: an occurrence before the exit_ns line"},
      {"# memstub-generations 1\n", ":1: no exit_ns line"},
      {V1, ":2: no occurrence line"},
      {V1 "exit_ns 9\n", ":3: field 1: a second exit_ns line"},
      {"# memstub-generations 1\nexit_ns -1\n", ":2: field 2: '-1' is not a time in ns (0 or more)"},
      {"# memstub-generations 1\nexit_ns x\n", ":2: field 2: 'x' is not a time in ns"},
      {"# memstub-generations 1\nexit_ns\n", ":2: field 2: expected 'exit_ns EXIT_NS'"},
      {"# memstub-generations 1\nexit_ns 99999999999999999999\n", ":2: field 2: '99999999999999999999' is not a time in ns (0 or more) (beyond 64 bits)"},
      {V1 "dropped 0 -1 0\n", ":3: field 3: '-1' is not a count (0 or more)"},
      {V1 "dropped 0 0\n", ":3: field 4: expected 'dropped"},
      {V2 "dropped 0 0 0\n", ":3: field 1: a version 2 file has no dropped line"},
      {V1 "occurrence -1 0 100 4 650 3 600 f\n", ":3: field 2: '-1' is not an occurrence id (1 or more)"},
      {V1 "occurrence 0 0 100 4 650 3 600 f\n", ":3: field 2: '0' is not an occurrence id (1 or more)"},
      {V1 "occurrence 2 0 5 1 1 0 0 f\noccurrence 2 6 7 1 1 0 0 f\n", ":4: field 2: occurrence 2 is not above the one before"},
      {V1 "occurrence 1 9 5 1 1 0 0 f\n", ":3: field 4: it ends (5) before it begins (9)"},
      {V1 "occurrence 1 9 901 1 1 0 0 f\n", ":3: field 4: it ends (901) after the exit (900)"},
      {V1 "occurrence 1 0 5 -1 1 0 0 f\n", ":3: field 5: '-1' is not a block count (0 or more)"},
      {V1 "occurrence 1 0 5 1 -1 0 0 f\n", ":3: field 6: '-1' is not a byte count (0 or more)"},
      {V1 "occurrence 1 0 5 0 10 0 0 f\n", ":3: field 6: 10 bytes in 0 blocks"},
      {V1 "occurrence 1 0 5 1 10 0 10 f\n", ":3: field 8: 10 bytes in 0 blocks"},
      {V1 "occurrence 1 0 5 1 10 2 10 f\n", ":3: field 7: more survivor blocks than allocated"},
      {V1 "occurrence 1 0 5 1 10 1 11 f\n", ":3: field 8: more survivor bytes than allocated"},
      {V1 "occurrence 1 0 5 1 10 1 10\n", ":3: field 9: expected 'occurrence ID"},
      {V1 "occurrence 1 0 5 1 10 1 10 a\x1b[2Jb\n", ":3: field 9: a control character in the name"},
      {V1 "occurrence 1 0 5 1 9223372036854775807 0 0 f\noccurrence 2 0 5 1 1 0 0 f\n",
       ":4: field 6: the occurrences' figures add up beyond 64 bits"},
      {V1 "survivor 2 10 0 5\n", ":3: field 2: occurrence 2 has no occurrence line before it"},
      {V1 OCC "survivor 1\n", ":4: field 3: expected 'survivor ID BYTES ALLOC_NS FREE_NS [SITE]'"},
      {V1 OCC "survivor 1 10 5 6 0 0\n", ":4: field 7: expected 'survivor ID"},
      {V1 OCC "survivor -1 10 5 6\n", ":4: field 2: '-1' is not an occurrence id"},
      {V1 OCC "survivor 1 -1 5 6\n", ":4: field 3: '-1' is not a byte count (0 or more)"},
      {V1 OCC "survivor 1 1 5 4\n", ":4: field 5: freed (4) before it was allocated (5)"},
      {V1 OCC "survivor 1 1 5 -2\n", ":4: field 5: freed (-2) before it was allocated (5)"},
      {V1 OCC "survivor 1 1 0 5 -2\n", ":4: field 6: '-2' is not a site (-1, or a site line's index)"},
      {V1 OCC "survivor 1 1 0 5 2147483648\n", ":4: field 6: '2147483648' is not a site"},
      {V1 OCC "survivor 1 1 0 5 1\nsurvivor 1 1 0 5\n", ":5: field 6: no site: the survivor lines before have one"},
      {V1 OCC "survivor 1 500 0 5\nsurvivor 1 101 0 5\n", ":5: field 3: occurrence 1 (line 3) left 600 survivor bytes: its survivor lines hold more"},
      {V1 OCC "survivor 1 1 0 5\nsurvivor 1 1 0 5\nsurvivor 1 1 0 5\nsurvivor 1 1 0 5\n", ":7: field 2: occurrence 1 (line 3) left 3 survivor blocks"},
      {V1 OCC "survivors 1 1 1 0 5\n", ":4: field 1: a version 1 file has 'survivor' lines, not 'survivors'"},
      {V2 OCC "survivor 1 1 0 5\n", ":4: field 1: a version 2 file has 'survivors' lines, not 'survivor'"},
      {V2 OCC "survivors 1 0 1 0 5\n", ":4: field 3: '0' is not a block count (1 or more)"},
      {V2 OCC "survivors 1 2 -1 0 5\n", ":4: field 4: '-1' is not a byte count (0 or more)"},
      {V2 OCC "survivors 1 2 100 9 5\n", ":4: field 6: freed (5) before it was allocated (9)"},
      {V2 OCC "survivors 1 2 100 0 5 -2\n", ":4: field 7: '-2' is not a site"},
      {V2 OCC "survivors 1 3 600 0 5\noccurrence 2 0 5 1 1 0 0 f\n", ":5: field 1: an occurrence after the survivors lines (line 4)"},
      {V2 OCC "survivors 1 2 500 0 5\n", ":3: field 7: occurrence 1 left 3 blocks, 600 bytes, but its survivors lines hold 2 blocks, 500 bytes (a version 2 file holds every survivor)"},
      {V2 OCC "survivors 1 3 500 0 5\n", ":3: field 8: occurrence 1 left 3 blocks, 600 bytes, but its survivors lines hold 3 blocks, 500 bytes"},
      {V2 OCC "survivors 1 9223372036854775807 600 0 5\nsurvivors 1 9223372036854775807 0 0 5\n", ":4: field 3: occurrence 1 (line 3) left 3 survivor blocks"},
      {V2 "exits 1\n", ":3: field 1: 'exits' is not exit_ns, occurrence or survivors"},
  };
#undef V1
#undef V2
#undef OCC
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memstub_error err = {0};
    int rc;
    size_t len = strlen(bad[i].text);
    memstub_generations *g;
    if (strstr(bad[i].want, "NUL")) {  // the text holds a NUL: write it whole
      char *dir = tu_mkdtemp(), path[4096];
      snprintf(path, sizeof path, "%s/t.generations", dir);
      FILE *f = fopen(path, "wb");
      ck_assert_ptr_nonnull(f);
      const char *t = bad[i].text;
      fwrite(t, 1, len, f);
      fwrite("\0urrence 1\n", 1, 11, f);
      fclose(f);
      g = (memstub_generations *)1;
      rc = memstub_generations_read(path, &g, &err);
      tu_rmtree(dir);
      free(dir);
    } else {
      g = load(bad[i].text, &err, &rc);
    }
    ck_assert_msg(rc == -EINVAL, "case %zu: rc %d", i, rc);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(err.msg, bad[i].want), "case %zu: %s", i, err.msg);
  }
}
END_TEST

// c's rows are n, with these times and heaps.
static void rows_are(const memstub_trace *c, size_t n, const int64_t *want_t,
                     const int64_t *want_h) {
  ck_assert_int_eq(c->n, n);
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(c->pts[i].time_ns, want_t[i]);
    ck_assert_int_eq(c->pts[i].heap_bytes, want_h[i]);
  }
}

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
                                "occurrence 1 0 20 4 1000 4 1000 a\n"
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
  static const int64_t want_t[] = {0, 10, 20, 50, 60, 100, 110, 120, 300};
  static const int64_t want_h[] = {0, 1000, 1000, 900, 700, 700, 900, 500, 300};
  rows_are(c, 9, want_t, want_h);
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

/* Version 2: a survivors line releases all its blocks' bytes at once; a
 * free within the resolution before its region's end is at the end (inside
 * the region: no row), and a survivor of an occurrence the trace does not
 * hold is left out. */
START_TEST(test_release_v2) {
  memstub_trace *t = memstub_trace_create();
  ck_assert_int_eq(memstub_trace_add_column(t, "region"), 0);
  row(t, 0, 0, 1);
  row(t, 20, 1000, 1);  // region 1 ends holding 1000
  row(t, 100, 400, 2);
  row(t, 120, 400, 2);
  memstub_error err = {0};
  int rc;
  memstub_generations *g = load("# memstub-generations 2\nexit_ns 500\n"
                                "occurrence 1 0 20 10 1000 10 1000 a\n"
                                "occurrence 2 100 120 0 0 0 0 b\n"
                                "occurrence 7 200 220 1 5 1 5 c\n"
                                "survivors 1 3 300 5 50\nsurvivors 1 4 400 6 15\n"
                                "survivors 1 1 100 7 300\nsurvivors 1 2 200 8 -1\n"
                                "survivors 7 1 5 210 -1\n",
                                &err, &rc);
  ck_assert_msg(rc == 0, "%s", err.msg);
  memstub_trace *c = NULL;
  size_t added = 0;
  ck_assert_msg(memstub_generations_release(t, g, &c, &added, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(added, 2);
  static const int64_t want_t[] = {0, 20, 50, 100, 120, 300};
  static const int64_t want_h[] = {0, 1000, 700, 400, 400, 300};
  rows_are(c, 6, want_t, want_h);
  memstub_trace_free(c);
  memstub_held held;
  ck_assert_msg(memstub_generations_hold(t, g, &c, &added, &held, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(held.n, 2);
  ck_assert_int_eq(held.after_ns[0], 180);
  ck_assert_int_eq(held.bytes[0], 100);
  ck_assert_int_eq(held.after_ns[1], -1);
  ck_assert_int_eq(held.bytes[1], 200);  // occurrence 7's 5 bytes are not this trace's
  ck_assert_int_eq(held.total, 300);
  memstub_held_free(&held);
  memstub_trace_free(c);
  memstub_trace_free(t);
  memstub_generations_free(g);
}
END_TEST

/* Issue 28 item 11: `memstub generations` summed the bytes of a region's
 * occurrences in a signed integer that overflowed (UBSan, cmd_generations.c)
 * and took free - end for a time after the end (overflows too): the sums
 * are refused by the reader, the times compared without overflow. */
START_TEST(test_cli_large_fields) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/t.generations", dir);
  tu_write_file(path, "# memstub-generations 1\nexit_ns 900\n"
                      "occurrence 1 0 5 1 9223372036854775807 0 0 f\n"
                      "occurrence 2 6 7 1 9223372036854775807 0 0 f\n");
  tu_run r = tu_memstub(dir, "generations", "t.generations", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "t.generations:4: field 6: the occurrences' figures add up beyond 64 "
                              "bits"), "%s", r.err);
  tu_run_free(&r);
  tu_write_file(path, "# memstub-generations 1\nexit_ns 900\n"
                      "occurrence 1 -9223372036854775807 -9223372036854775800 3 300 3 300 f\n"
                      "survivor 1 100 -9223372036854775801 900\n"
                      "survivor 1 200 -9223372036854775801 -1\n");
  r = tu_memstub(dir, "generations", "t.generations", "--json", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.out, "\"alive_after_1s\": 300, \"alive_at_exit\": 200"), "%s", r.out);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* gen --hold scaled what is held by --heap-scale and --time-scale and left
 * out, silently, a release beyond 1e15 bytes or 9e18 ns: now refused. */
START_TEST(test_cli_hold_scaled_beyond) {
  char *dir = tu_mkdtemp();
  char src[4096];
  snprintf(src, sizeof src, "%s", tu_src("tests/fixtures/hold/produce.csv"));
  tu_run r = tu_memstub(dir, "gen", src, "--hold", "--heap-scale", "1e10", "-o", "h.h", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "--hold: 100000 bytes released 100000000 ns after the return become "
                              "1e+15 bytes after 1e+08 ns with --heap-scale 1e+10"), "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", src, "--hold", "--time-scale", "1e11", "-o", "h.h", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "after 1e+19 ns with --heap-scale 1 and --time-scale 1e+11"), "%s",
                r.err);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("generations");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_read_v1);
  tcase_add_test(tc, test_read_v2);
  tcase_add_test(tc, test_refuse);
  tcase_add_test(tc, test_release_rows);
  tcase_add_test(tc, test_release_v2);
  tcase_add_test(tc, test_cli_large_fields);
  tcase_add_test(tc, test_cli_hold_scaled_beyond);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
