// memstub import: massif and memusage files, real ones (fixtures made by the
// tools, and made live when the tools are installed) and malformed ones.
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memstub/import.h"
#include "testutil.h"

static char fixture[4096];
static const char *fx(const char *name) {
  snprintf(fixture, sizeof fixture, "%s", tu_src("tests/fixtures/import"));
  size_t l = strlen(fixture);
  snprintf(fixture + l, sizeof fixture - l, "/%s", name);
  return fixture;
}

static int64_t peak(const memstub_trace *t, int heap) {
  int64_t m = 0;
  for (size_t i = 0; i < t->n; i++) {
    int64_t v = heap ? t->pts[i].heap_bytes : t->pts[i].stack_bytes;
    if (v > m) m = v;
  }
  return m;
}

START_TEST(test_massif_ms) {
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_massif(fx("mu_prog.massif"), NULL, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(peak(t, 1), 64100);
  ck_assert_int_ge(peak(t, 0), 100 * 512);
  ck_assert_str_eq(memstub_trace_get_meta(t, "source"), "massif");
  ck_assert_str_eq(memstub_trace_get_meta(t, "massif.time_unit"), "ms");
  ck_assert_int_ge(memstub_trace_column(t, "heap_extra_bytes"), 0);
  for (size_t i = 0; i < t->n; i++) ck_assert_int_eq(t->pts[i].time_ns % 1000000, 0);
  memstub_error verr;
  ck_assert_int_eq(memstub_trace_validate(t, &verr), 0);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_massif_instructions) {
  memstub_trace *t;
  memstub_error err;
  ck_assert_int_eq(memstub_import_massif(fx("mu_prog.i.massif"), NULL, &t, &err), -EINVAL);
  ck_assert_ptr_null(t);
  ck_assert_ptr_nonnull(strstr(err.msg, "mu_prog.i.massif:3:12: time_unit 'i'"));
  ck_assert_ptr_nonnull(strstr(err.msg, "--ns-per-unit"));
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.ns_per_unit = 0.5;
  ck_assert_msg(memstub_import_massif(fx("mu_prog.i.massif"), &o, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(peak(t, 1), 64100);
  ck_assert_int_eq(peak(t, 0), 0);  // no --stacks=yes
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "massif.stacks"), "not measured"));
  memstub_trace_free(t);
  // The command: refused with exit 2, accepted with the conversion.
  char *dir = tu_mkdtemp();
  char out[4096];
  snprintf(out, sizeof out, "%s/m.csv", dir);
  char src[4096];
  snprintf(src, sizeof src, "%s", fx("mu_prog.i.massif"));
  tu_run r = tu_memstub(NULL, "import", "massif", src, "-o", out, NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "memstub: error: "));
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_run_free(&r);
  r = tu_memstub(NULL, "import", "massif", src, "-o", out, "--ns-per-unit", "0.5", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 1);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

#define SNAP(n, t, h, s) \
  "#-----------\nsnapshot=" #n "\n#-----------\ntime=" #t "\nmem_heap_B=" #h \
  "\nmem_heap_extra_B=0\nmem_stacks_B=" #s "\nheap_tree=empty\n"
#define HEAD "desc: --stacks=yes\ncmd: ./x\ntime_unit: ms\n"

static const struct bad {
  const char *what, *text, *msg;
} bad_massif[] = {
    {"empty", "", "m:1:1: empty file"},
    {"header only", HEAD, "m:4:1: no snapshots"},
    {"not massif", "hello\n", "m:1:1: not a massif output"},
    {"no time unit", "desc: x\n" SNAP(0, 0, 0, 0), "m:2:1: missing 'time_unit:'"},
    {"unknown unit", "time_unit: s\n" SNAP(0, 0, 0, 0), "m:1:12: unknown time_unit 's'"},
    {"truncated line", HEAD SNAP(0, 0, 0, 0) "#-----------\nsnapshot=1\n#-----------\ntime=5",
     "m:15:7: truncated last line"},
    {"truncated snapshot", HEAD SNAP(0, 0, 0, 0) "#-----------\nsnapshot=1\n#-----------\ntime=5\n",
     "m:16:1: truncated: snapshot 1 ends before 'mem_heap_B='"},
    {"out of sequence", HEAD SNAP(0, 0, 0, 0) SNAP(2, 1, 0, 0),
     "m:13:10: snapshot 2 out of sequence (expected 1)"},
    {"bad number", HEAD "#-----------\nsnapshot=0\n#-----------\ntime=0\nmem_heap_B=12x\n",
     "m:8:12: mem_heap_B: expected a non-negative integer, found '12x'"},
    {"negative", HEAD "#-----------\nsnapshot=0\n#-----------\ntime=0\nmem_heap_B=-1\n",
     "m:8:12: mem_heap_B: expected a non-negative integer"},
    {"decreasing time", HEAD SNAP(0, 5, 0, 0) SNAP(1, 4, 0, 0),
     "m:15:6: snapshot 1: time decreases from 5 to 4"},
    {"missing tree", HEAD "#-----------\nsnapshot=0\n#-----------\ntime=0\nmem_heap_B=1\n"
                     "mem_heap_extra_B=0\nmem_stacks_B=0\n",
     "m:11:1: truncated: snapshot 0 has no 'heap_tree=' line"},
    // Found by tests/fuzz/fuzz_massif: messages quote the file's text with
    // control characters as '?', and name a line and a column that exist.
    {"control characters quoted", "\x1b[31mhello\n",
     "m:1:1: not a massif output: expected 'desc:', 'cmd:' or 'time_unit:', found '?[31mhello'"},
    {"control character in a number", HEAD "#-----------\nsnapshot=0\n#-----------\ntime=0\r5\n",
     "m:7:6: time: expected a non-negative integer, found '0?5'"},
    {"time_unit without a space", "time_unit:\n" SNAP(0, 0, 0, 0),
     "m:1:11: unknown time_unit '' (expected i, ms or B)"},
    {"time beyond 64-bit ns", HEAD SNAP(0, 0, 0, 0) SNAP(1, 9300000000000, 0, 0),
     "m:15:6: snapshot 1: time 9300000000000 does not fit in 64-bit ns"},
    // Was accepted as a trace without rows, which no writer takes.
    {"separator, then nothing", HEAD "#-----------\n", "m:5:1: no snapshots"},
};

START_TEST(test_massif_refusals) {
  const struct bad *b = &bad_massif[_i];
  memstub_trace *t = (memstub_trace *)1;
  memstub_error err = {0};
  int rc = memstub_import_massif_parse("m", b->text, strlen(b->text), NULL, &t, &err);
  ck_assert_msg(rc == -EINVAL, "%s: rc %d", b->what, rc);
  ck_assert_ptr_null(t);
  ck_assert_msg(strncmp(err.msg, b->msg, strlen(b->msg)) == 0, "%s: got '%s', want '%s'", b->what,
                err.msg, b->msg);
}
END_TEST

START_TEST(test_massif_minimal) {
  const char *text = HEAD SNAP(0, 0, 0, 0) SNAP(1, 3, 200, 1024);
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_massif_parse("m", text, strlen(text), NULL, &t, &err) == 0, "%s",
                err.msg);
  ck_assert_int_eq(t->n, 2);
  ck_assert_int_eq(t->pts[1].time_ns, 3000000);
  ck_assert_int_eq(t->pts[1].stack_bytes, 1024);
  ck_assert_int_eq(t->pts[1].heap_bytes, 200);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_memusage_inverted_fixture) {
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_memusage(fx("mu_prog.memusage"), NULL, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(t->n, 131);  // the start plus 130 records
  ck_assert_int_eq(peak(t, 1), 64100);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.stack_curve"), "inverted"));
  // Corrected: the call at the bottom of the recursion is the deepest, the
  // calls at main's level are shallow.
  for (size_t i = 1; i < t->n; i++) {
    if (t->pts[i].heap_bytes == 64100)
      ck_assert_int_ge(t->pts[i].stack_bytes, 100 * 512);
    if (t->pts[i].heap_bytes % 1000 == 0 && t->pts[i].heap_bytes > 0 && i < 60)
      ck_assert_int_eq(t->pts[i].stack_bytes, t->pts[1].stack_bytes);
  }
  ck_assert_int_ge(peak(t, 0), 100 * 512);
  int64_t last = -1;
  for (size_t i = 0; i < t->n; i++) {
    ck_assert_int_ge(t->pts[i].time_ns, last);
    last = t->pts[i].time_ns;
  }
  memstub_trace_free(t);
  // Told otherwise, the values stay as recorded.
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.stack_curve = MEMSTUB_STACK_NORMAL;
  o.cycles_per_ns = 2.0;
  ck_assert_int_eq(memstub_import_memusage(fx("mu_prog.memusage"), &o, &t, &err), 0);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.stack_curve"), "normal (as told"));
  for (size_t i = 1; i < t->n; i++)
    if (t->pts[i].heap_bytes == 64100) ck_assert_int_eq(t->pts[i].stack_bytes, 0);
  memstub_trace_free(t);
  // The command says so.
  char *dir = tu_mkdtemp();
  char out[4096], src[4096];
  snprintf(out, sizeof out, "%s/u.csv", dir);
  snprintf(src, sizeof src, "%s", fx("mu_prog.memusage"));
  tu_run r = tu_memstub(NULL, "import", "memusage", src, "-o", out, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "upside down"));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static void put(unsigned char *p, uint64_t heap, uint64_t stack, uint64_t time) {
  uint32_t lo = (uint32_t)time, hi = (uint32_t)(time >> 32);
  memcpy(p, &heap, 8);
  memcpy(p + 8, &stack, 8);
  memcpy(p + 16, &lo, 4);
  memcpy(p + 20, &hi, 4);
}

START_TEST(test_memusage_synthetic) {
  unsigned char buf[24 * 6];
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.time_unit = MEMSTUB_TIME_US;
  // A normal curve: shallow calls, one deep one.
  put(buf, 0, 5100, 1000);
  put(buf + 24, 300, 5000, 1010);
  put(buf + 48, 100, 100, 1001);
  put(buf + 72, 300, 5000, 1003);
  put(buf + 96, 200, 120, 1002);  // out of order: sorted by time
  put(buf + 120, 0, 100, 1004);
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_memusage_parse("u", buf, sizeof buf, &o, &t, &err) == 0, "%s", err.msg);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.stack_curve"), "normal (detected"));
  ck_assert_int_eq(t->n, 5);
  ck_assert_int_eq(t->pts[2].time_ns, 2000);
  ck_assert_int_eq(t->pts[2].heap_bytes, 200);
  ck_assert_int_eq(t->pts[3].stack_bytes, 5000);
  memstub_trace_free(t);
  // Incomplete (header never rewritten): accepted, said so.
  put(buf + 24, 0, 0, 1000);
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, sizeof buf, &o, &t, &err), 0);
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "memusage.incomplete"));
  memstub_trace_free(t);
  // Refusals.
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, 0, &o, &t, &err), -EINVAL);
  ck_assert_str_eq(err.msg, "u: empty file: not a memusage data file");
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, 24 * 3 + 7, &o, &t, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "u: byte offset 72: truncated"));
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, 24, &o, &t, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "two 24-byte header records"));
  put(buf, 7, 0, 1000);
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, sizeof buf, &o, &t, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "u: byte offset 0: not a memusage data file"));
  ck_assert_ptr_null(t);
}
END_TEST

/* Found by tests/fuzz/fuzz_memusage: a file with only the two header records
 * (a program that never allocated) passed NULL to qsort; and a stack peak in
 * record 1 beyond int64, as the base of the inverted curve's correction, gave
 * negative stack totals, a trace no writer takes. */
START_TEST(test_memusage_fuzz_regressions) {
  unsigned char buf[24 * 3];
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.time_unit = MEMSTUB_TIME_US;
  put(buf, 0, 0, 5);
  put(buf + 24, 0, 0, 9);
  memstub_trace *t;
  memstub_error err = {0}, verr;
  ck_assert_msg(memstub_import_memusage_parse("u", buf, 48, &o, &t, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(t->n, 1);  // the start only
  ck_assert_int_eq(memstub_trace_validate(t, &verr), 0);
  ck_assert_str_eq(memstub_trace_get_meta(t, "memusage.records"), "0");
  memstub_trace_free(t);

  put(buf, 0, 0x8700000000ULL, 0);
  put(buf + 24, 0, 0xff00000000000000ULL, UINT64_MAX);
  put(buf + 48, 0x5000138800ULL, 0, 0);
  o.stack_curve = MEMSTUB_STACK_INVERTED;
  t = (memstub_trace *)1;
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, sizeof buf, &o, &t, &err), -EINVAL);
  ck_assert_ptr_null(t);
  ck_assert_str_eq(err.msg, "u: byte offset 24: record 1: heap peak 0 or stack peak "
                            "18374686479671623680 is out of range: not a memusage data file?");
}
END_TEST

static int have(const char *tool) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) == 0;
}

/* The real tools on rec_helper (a plain, unsanitized program), when
 * installed; skipped with a message otherwise. */
START_TEST(test_live_tools) {
  const char *helper = getenv("MEMSTUB_REC_HELPER");
  ck_assert_ptr_nonnull(helper);
  char *dir = tu_mkdtemp();
  char data[4096], out[4096];
  if (have("memusage")) {
    snprintf(data, sizeof data, "%s/live.memusage", dir);
    snprintf(out, sizeof out, "%s/live-u.csv", dir);
    char *argv[] = {"memusage", "-d", data, (char *)helper, "deep", "50", NULL};
    tu_run r = tu_exec(dir, argv);
    ck_assert_msg(r.status == 0, "memusage failed: %s", r.err);
    tu_run_free(&r);
    r = tu_memstub(NULL, "import", "memusage", data, "-o", out, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
    memstub_trace *t;
    memstub_error err;
    ck_assert_int_eq(memstub_trace_read(out, &t, &err), 0);
    ck_assert_int_ge(peak(t, 1), 64);
    // An inverted recording has lost how deep the first descent went (see
    // docs/recording.md); a normal one shows it.
    if (strncmp(memstub_trace_get_meta(t, "memusage.stack_curve"), "normal", 6) == 0)
      ck_assert_int_ge(peak(t, 0), 50 * 1024);
    memstub_trace_free(t);
  } else {
    fprintf(stderr, "test_live_tools: memusage not installed (libc-devtools): skipped\n");
  }
  if (have("valgrind")) {
    snprintf(data, sizeof data, "%s/live.massif", dir);
    snprintf(out, sizeof out, "%s/live-m.csv", dir);
    char of[4200];
    snprintf(of, sizeof of, "--massif-out-file=%s", data);
    char *argv[] = {"valgrind", "-q", "--tool=massif", "--stacks=yes", "--time-unit=ms", of,
                    (char *)helper, "deep", "50", NULL};
    tu_run r = tu_exec(dir, argv);
    ck_assert_msg(r.status == 0, "valgrind failed: %s", r.err);
    tu_run_free(&r);
    r = tu_memstub(NULL, "import", "massif", data, "-o", out, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
    memstub_trace *t;
    memstub_error err;
    ck_assert_int_eq(memstub_trace_read(out, &t, &err), 0);
    ck_assert_int_ge(peak(t, 0), 50 * 1024);
    memstub_trace_free(t);
  } else {
    fprintf(stderr, "test_live_tools: valgrind not installed: skipped\n");
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *import_suite(void) {
  Suite *s = suite_create("import");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_massif_ms);
  tcase_add_test(tc, test_massif_instructions);
  tcase_add_loop_test(tc, test_massif_refusals, 0, (int)(sizeof bad_massif / sizeof bad_massif[0]));
  tcase_add_test(tc, test_massif_minimal);
  tcase_add_test(tc, test_memusage_inverted_fixture);
  tcase_add_test(tc, test_memusage_synthetic);
  tcase_add_test(tc, test_memusage_fuzz_regressions);
  tcase_add_test(tc, test_live_tools);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(import_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
