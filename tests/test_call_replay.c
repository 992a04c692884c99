// The call replay (issue 31 item 2): a program recorded with --calls,
// generated into a data file and replayed, makes the recorded calls: the
// replayed heap_bytes equals the trace's at every row, and the calls the
// replay counts as it makes them (the measured calls_* columns) equal the
// trace's, kind by kind and class by class. gen refuses a damaged calls
// file naming it; --no-calls keeps the class replay. tests/record/rec_helper.c.
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "memstub/trace.h"
#include "testutil.h"

static const char *env(const char *name) {
  const char *v = getenv(name);
  ck_assert_msg(v != NULL, "%s is not set (run the tests with ctest)", name);
  return v;
}

static memstub_trace *read_trace(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  return t;
}

// rec_helper MODE recorded with --calls into dir/t.csv (and t.csv.calls).
static void record(const char *dir, const char *mode) {
  tu_run r = tu_memstub(dir, "record", "-q", "--calls", "-o", "t.csv", "--",
                        env("MEMSTUB_REC_HELPER"), mode, NULL);
  ck_assert_msg(r.status == 0, "record: status %d: %s", r.status, r.err);
  tu_run_free(&r);
}

// fnprog MODE recorded with --calls --function fn into dir/t.csv (and t.csv.calls).
static void record_fn(const char *dir, const char *fn, const char *mode) {
  tu_run r = tu_memstub(dir, "record", "-q", "--calls", "--function", fn, "-o", "t.csv", "--",
                        env("MEMSTUB_REC_FNPROG"), mode, NULL);
  ck_assert_msg(r.status == 0, "record: status %d: %s", r.status, r.err);
  tu_run_free(&r);
}

// The sum of column name over t's rows (0 when t has no such column).
static int64_t column_sum(const memstub_trace *t, const char *name) {
  size_t c = 0;
  while (c < t->nextra && strcmp(t->extra_names[c], name) != 0) c++;
  int64_t s = 0;
  for (size_t i = 0; c < t->nextra && i < t->n; i++) s += t->extra[i * t->nextra + c];
  return s;
}

// The calls of one kind over t's rows, every size class.
static int64_t kind_sum(const memstub_trace *t, const char *kind) {
  int64_t s = 0;
  for (size_t c = 0; c < t->nextra; c++)
    if (strncmp(t->extra_names[c], "calls_", 6) == 0 &&
        strncmp(t->extra_names[c] + 6, kind, strlen(kind)) == 0 &&
        t->extra_names[c][6 + strlen(kind)] == '_')
      s += column_sum(t, t->extra_names[c]);
  return s;
}

// gen --data, replay --measure, and the replayed trace against the recorded one.
/* dir/t.csv generated into a data file (with --heap-scale heap_scale when
 * not NULL), replayed call for call with --measure; the recorded trace into
 * *t, the replayed one into *o, row for row. */
static void gen_replay(const char *dir, const char *heap_scale, memstub_trace **t,
                       memstub_trace **o) {
  tu_run g = heap_scale ? tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", "--heap-scale",
                                     heap_scale, NULL)
                        : tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(g.status == 0, "gen: status %d: %s", g.status, g.err);
  ck_assert_msg(strstr(g.err, "replayed call for call"), "gen said: %s", g.err);
  ck_assert_msg(!strstr(g.err, "warning") && !strstr(g.err, "left out"), "gen said: %s", g.err);
  tu_run_free(&g);
  tu_run r = tu_memstub(dir, "replay", "--data", "t.dat", "--measure", "out.csv", NULL);
  ck_assert_msg(r.status == 0, "replay: status %d: %s", r.status, r.err);
  tu_run_free(&r);
  *t = read_trace(dir, "t.csv"), *o = read_trace(dir, "out.csv");
  ck_assert_uint_eq((*o)->n, (*t)->n);
}

static void replay_exact(const char *mode) {
  char *dir = tu_mkdtemp();
  record(dir, mode);
  memstub_trace *t, *o;
  gen_replay(dir, NULL, &t, &o);
  const char *how = memstub_trace_get_meta(o, "replay");
  ck_assert_msg(how && strncmp(how, "call for call", 13) == 0, "replay: %s", how ? how : "(none)");
  for (size_t i = 0; i < t->n; i++)
    ck_assert_msg(o->pts[i].heap_bytes == t->pts[i].heap_bytes,
                  "%s: row %zu: replayed heap %lld, recorded %lld", mode, i,
                  (long long)o->pts[i].heap_bytes, (long long)t->pts[i].heap_bytes);
  int64_t calls = 0;
  for (size_t c = 0; c < t->nextra; c++) {
    const char *name = t->extra_names[c];
    if (strncmp(name, "calls_", 6) != 0) continue;
    int64_t want = column_sum(t, name), got = column_sum(o, name);
    ck_assert_msg(got == want, "%s: %s: %lld calls replayed, %lld recorded", mode, name,
                  (long long)got, (long long)want);
    calls += got;
  }
  ck_assert_int_gt(calls, 0);
  memstub_trace_free(t);
  memstub_trace_free(o);
  tu_rmtree(dir);
  free(dir);
}

// Every function of the malloc family, with alignments; peak 13656 bytes.
START_TEST(test_call_replay_pattern) { replay_exact("pattern"); }
END_TEST

// 200,000 malloc/free pairs of 64 sizes in 200 bursts, coalesced into rows.
START_TEST(test_call_replay_many) { replay_exact("many"); }
END_TEST

/* A what-if on an exact stub (issue 31): --heap-scale 0.5 halves each call's
 * size (rounded): the replay makes the same calls, kind by kind, and its
 * heap is half the trace's at every row, within a byte a block. --churn-scale
 * does not apply to the calls yet: the class replay, said. */
START_TEST(test_call_replay_heap_scale) {
  char *dir = tu_mkdtemp();
  record(dir, "pattern");
  memstub_trace *t, *o;
  gen_replay(dir, "0.5", &t, &o);
  int64_t peak = 0;
  for (size_t i = 0; i < t->n; i++) {
    int64_t want = (t->pts[i].heap_bytes + 1) / 2, got = o->pts[i].heap_bytes;
    ck_assert_msg(llabs(got - want) <= 16, "row %zu: replayed heap %lld, half the trace's %lld", i,
                  (long long)got, (long long)want);
    if (t->pts[i].heap_bytes > peak) peak = t->pts[i].heap_bytes;
  }
  ck_assert_int_gt(peak, 10000);  // pattern's peak is 13656: halving it shows
  static const char *const kinds[] = {"malloc", "calloc", "realloc", "free", "memalign"};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    int64_t want = kind_sum(t, kinds[k]), got = kind_sum(o, kinds[k]);  // its classes move
    ck_assert_msg(got == want, "%s: %lld calls replayed, %lld recorded", kinds[k], (long long)got,
                  (long long)want);
  }
  memstub_trace_free(t);
  memstub_trace_free(o);
  tu_run g = tu_memstub(dir, "gen", "t.csv", "--data", "c.dat", "--churn-scale", "0.5", NULL);
  ck_assert_msg(g.status == 0 && strstr(g.err, "--churn-scale does not apply to the calls yet: "
                                                   "the class replay"),
                "gen: status %d: %s", g.status, g.err);
  tu_run_free(&g);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A --function recording's calls file holds every call of the run: the
 * stub makes only those of the function's span. fnprog's produce() makes 4
 * mallocs and a free; main frees two of its blocks after it returns (and
 * the C library allocates before and after): the replay makes the
 * function's calls, kind by kind, with the trace's heap at every row. */
START_TEST(test_call_replay_function) {
  char *dir = tu_mkdtemp();
  record_fn(dir, "produce", "generation");
  memstub_trace *t, *o;
  gen_replay(dir, NULL, &t, &o);
  for (size_t i = 0; i < t->n; i++)
    ck_assert_msg(o->pts[i].heap_bytes == t->pts[i].heap_bytes,
                  "row %zu: replayed heap %lld, recorded %lld", i,
                  (long long)o->pts[i].heap_bytes, (long long)t->pts[i].heap_bytes);
  static const char *const kinds[] = {"malloc", "free"};
  for (size_t k = 0; k < 2; k++)
    ck_assert_msg(kind_sum(o, kinds[k]) == kind_sum(t, kinds[k]),
                  "%s: %lld calls replayed, %lld recorded", kinds[k],
                  (long long)kind_sum(o, kinds[k]), (long long)kind_sum(t, kinds[k]));
  ck_assert_int_eq(kind_sum(t, "malloc"), 4);
  ck_assert_int_eq(kind_sum(t, "free"), 1);
  memstub_trace_free(t);
  memstub_trace_free(o);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A function that frees a block allocated before it (fnprog's consume()):
 * the free is not the stub's (gen warns), and the stub's count of calls is
 * the calls it makes, so the replay runs (it was refused: "2 calls, the
 * stub says 3") and makes consume()'s own malloc and free. */
START_TEST(test_call_replay_free_from_before) {
  char *dir = tu_mkdtemp();
  record_fn(dir, "consume", "consume");
  tu_run r = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(r.status == 0, "gen: status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "2 calls of 1 blocks") &&
                    strstr(r.err, "1 frees or reallocs of blocks allocated before"),
                "gen said: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", "--data", "t.dat", "--measure", "out.csv", NULL);
  ck_assert_msg(r.status == 0, "replay: status %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_trace *o = read_trace(dir, "out.csv");
  ck_assert_int_eq(kind_sum(o, "malloc"), 1);
  ck_assert_int_eq(kind_sum(o, "free"), 1);
  memstub_trace_free(o);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// A damaged calls file: gen --data refuses it, naming the file; --no-calls
// makes the class replay's data file from the same trace.
START_TEST(test_call_replay_damaged) {
  char *dir = tu_mkdtemp();
  record(dir, "pattern");
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv.calls", dir);
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fseek(f, 64, SEEK_SET), 0);  // the first block head's magic
  ck_assert_int_eq(fputc(0xff, f), 0xff);
  ck_assert_int_eq(fputc(0xff, f), 0xff);
  fclose(f);
  tu_run g = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(g.status == 2, "gen: status %d: %s", g.status, g.err);
  ck_assert_msg(strstr(g.err, "t.csv.calls"), "gen said: %s", g.err);
  ck_assert_msg(strstr(g.err, "--no-calls"), "gen said: %s", g.err);
  tu_run_free(&g);
  snprintf(path, sizeof path, "%s/t.dat", dir);
  FILE *none = fopen(path, "rb");
  ck_assert_msg(none == NULL, "a data file was written");
  g = tu_memstub(dir, "gen", "t.csv", "--no-calls", "--data", "t.dat", NULL);
  ck_assert_msg(g.status == 0, "gen --no-calls: status %d: %s", g.status, g.err);
  ck_assert_msg(!strstr(g.err, "call for call"), "gen said: %s", g.err);
  tu_run_free(&g);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The calls of thread th (UINT32_MAX: all) in dir/name.calls, free(NULL) left out and counted in *nulls.
static ms__call *calls_of(const char *dir, const char *name, uint32_t th, size_t *n,
                          int64_t *nulls) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.calls", dir, name);
  ms__calls *c = NULL;
  memstub_error err = {0};
  ck_assert_msg(ms__calls_open(path, &c, &err) == 0, "%s", err.msg);
  size_t cap = (size_t)ms__calls_head_of(c)->calls + 1;
  ms__call *v = calloc(cap, sizeof *v), k;
  *n = 0, *nulls = 0;
  int rc;
  while ((rc = ms__calls_next(c, &k, &err)) == 1) {
    if (th != UINT32_MAX && k.thread != th) continue;
    if (k.fn == MS__CALLS_FREE && !k.old) (*nulls)++;
    else v[(*n)++] = k;
  }
  ck_assert_msg(rc == 0, "%s", err.msg);
  ms__calls_close(c);
  return v;
}

// The stub program of dir/t.csv (gen ARG --data, memstub build) recorded, every thread, into dir/OUT.
static void record_stub(const char *dir, const char *arg, const char *out) {
  tu_run r = tu_memstub(dir, "gen", "t.csv", arg, "--data", "s.dat", NULL);
  ck_assert_msg(r.status == 0, "gen %s: status %d: %s", arg, r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "build", "--data", "s.dat", "-o", "s.stub", NULL);
  ck_assert_msg(r.status == 0, "build: status %d: %s", r.status, r.err);
  tu_run_free(&r);
  char prog[4096];
  snprintf(prog, sizeof prog, "%s/s.stub", dir);
  r = tu_memstub(dir, "record", "-q", "--thread", "all", "--calls", "-o", out, "--", prog, NULL);
  ck_assert_msg(r.status == 0, "record the stub: status %d: %s", r.status, r.err);
  tu_run_free(&r);
}

/* Counted from outside (memstub record --thread all of the stub program):
 * the replay thread (thread 1) makes the component's calls one by one, the
 * same function, size and alignment, and beyond them only the free(NULL)s
 * the class replay's thread makes too (glibc's). */
START_TEST(test_call_replay_counted_outside) {
#ifdef MEMSTUB_SANITIZED
  // A sanitized stub program cannot be recorded: the recorder is preloaded before ASan.
  return;
#endif
  char *dir = tu_mkdtemp();
  record(dir, "pattern");
  record_stub(dir, "--timing=online", "calls.csv");
  record_stub(dir, "--no-calls", "class.csv");
  size_t n, ns, nk;
  int64_t nulls, nulls_s, nulls_k;
  ms__call *want = calls_of(dir, "t.csv", UINT32_MAX, &n, &nulls);  // one thread
  ms__call *got = calls_of(dir, "calls.csv", 1, &ns, &nulls_s);
  free(calls_of(dir, "class.csv", 1, &nk, &nulls_k));
  ck_assert_uint_eq(ns, n);
  for (size_t i = 0; i < n; i++) {
    ck_assert_msg(got[i].fn == want[i].fn && got[i].size == want[i].size &&
                      got[i].align == want[i].align && !got[i].old == !want[i].old,
                  "call %zu: function %d of %llu bytes (alignment %llu), recorded %d of %llu (%llu)",
                  i, got[i].fn, (unsigned long long)got[i].size, (unsigned long long)got[i].align,
                  want[i].fn, (unsigned long long)want[i].size, (unsigned long long)want[i].align);
  }
  ck_assert_int_eq(nulls, 1);
  ck_assert_int_eq(nulls_s, nulls + nulls_k);
  free(want);
  free(got);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("call_replay");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_call_replay_pattern);
  tcase_add_test(tc, test_call_replay_many);
  tcase_add_test(tc, test_call_replay_heap_scale);
  tcase_add_test(tc, test_call_replay_damaged);
  tcase_add_test(tc, test_call_replay_function);
  tcase_add_test(tc, test_call_replay_free_from_before);
  tcase_add_test(tc, test_call_replay_counted_outside);
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
