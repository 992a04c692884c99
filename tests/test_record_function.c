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
  char *argv[64];
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

// The rows that change the region or the heap, in order (a timer sample on
// a loaded machine may add a row that changes neither).
static size_t changes(const memstub_trace *t, size_t *idx, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < t->n && n < cap; i++)
    if (i == 0 || col(t, "region", i) != col(t, "region", i - 1) ||
        t->pts[i].heap_bytes != t->pts[i - 1].heap_bytes)
      idx[n++] = i;
  return n;
}

// The same program with memstub_probe_begin/end in work(): the same rows.
// Regions and heap always; the stacks within a few bytes, in one of three
// pairs of recordings (under ASan and load a timer sample deeper in the
// program's own calls once gave a row 1888 bytes where the other had 48).
START_TEST(test_same_rows_as_probes) {
  const char *fns[] = {"work", NULL}, *args[] = {"exe", "4", NULL};
  char why[160] = "";
  int stacks_ok = 0;
  for (int tries = 0; tries < 3 && !stacks_ok; tries++) {
    char *d1 = tu_mkdtemp(), *d2 = tu_mkdtemp();
    tu_run a = record(d1, fns, env("MEMSTUB_REC_FNPROG"), args);
    tu_run b = record(d2, NULL, env("MEMSTUB_REC_FNPROG_PROBE"), args);
    ck_assert_msg(a.status == 0 && b.status == 0, "%s / %s", a.err, b.err);
    memstub_trace *x = load(d1), *y = load(d2);
    size_t ix[256], iy[256];
    size_t nx = changes(x, ix, 256), ny = changes(y, iy, 256);
    ck_assert_int_eq(nx, ny);
    ck_assert_int_ge(nx, 12);  // four regions: begin, malloc, free at least
    stacks_ok = 1;
    for (size_t k = 0; k < nx; k++) {
      size_t i = ix[k], j = iy[k];
      ck_assert_int_eq(col(x, "region", i), col(y, "region", j));
      ck_assert_int_eq(x->pts[i].heap_bytes, y->pts[j].heap_bytes);
      // The probe calls sit inside work(): a few bytes of frame apart.
      int64_t ds = x->pts[i].stack_bytes - y->pts[j].stack_bytes;
      if (stacks_ok && (ds < -64 || ds > 64)) {
        snprintf(why, sizeof why, "change %zu: stack %lld vs %lld", k,
                 (long long)x->pts[i].stack_bytes, (long long)y->pts[j].stack_bytes);
        stacks_ok = 0;
      }
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
  ck_assert_msg(stacks_ok, "%s", why);
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

/* A recursive function is one region (issue 28 item 1): fib(15) enters
 * itself 1972 times while open; one occurrence with all of its 3946
 * allocator calls, each counted once, and the nested entries said apart. */
START_TEST(test_recursive_function_is_one_region) {
  char *dir = tu_mkdtemp();
  const char *fns[] = {"fib", NULL}, *args[] = {"fib", "15", NULL};
  tu_run r = record(dir, fns, env("MEMSTUB_REC_FNPROG"), args);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  memstub_trace *t = load(dir);
  int64_t peak[8];
  ck_assert_int_eq(regions(t, peak, 8), 1);
  const char *c = memstub_trace_get_meta(t, "churn.region.fib");
  ck_assert_ptr_nonnull(c);
  ck_assert_msg(strstr(c, "occurrences=1 calls=3946 bytes="), "%s", c);
  const char *nested = memstub_trace_get_meta(t, "record.region.fib.nested");
  ck_assert_msg(nested && strncmp(nested, "1972 ", 5) == 0, "%s", nested ? nested : "(none)");
  memstub_trace_free(t);
  tu_run_free(&r);
  r = tu_memstub(dir, "generations", "t.csv", "--json", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.out, "\"occurrence\": 1,") && !strstr(r.out, "\"occurrence\": 2,"), "%s",
                r.out);
  ck_assert_msg(strstr(r.out, "\"allocated_bytes\": 126272,"), "%s", r.out);  // 1973 x 64
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* The recorded thread is the first to call the function; its stack top was
 * taken at that first call's frame, so a later call from a shallower frame
 * (framed() from 20 KiB down, then from main) read as "off the thread's own
 * stack": regions 2 and 3 had a stack column of 0 (sqlite3 with --function
 * sqlite3_step: 1,218,369 of 1,236,923 readings, two of six regions at 0).
 * Each call's malloc is below 16 KiB of framed()'s locals. */
START_TEST(test_later_call_from_a_shallower_frame) {
  char *dir = tu_mkdtemp();
  const char *fns[] = {"framed", NULL}, *args[] = {"shallower", NULL};
  tu_run r = record(dir, fns, env("MEMSTUB_REC_FNPROG"), args);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  memstub_trace *t = load(dir);
  int64_t peak[8], stack[3] = {0, 0, 0};
  ck_assert_int_eq(regions(t, peak, 8), 3);
  for (size_t i = 0; i < t->n; i++) {
    int64_t reg = col(t, "region", i);
    if (reg >= 1 && reg <= 3 && t->pts[i].stack_bytes > stack[reg - 1])
      stack[reg - 1] = t->pts[i].stack_bytes;
  }
  for (int k = 0; k < 3; k++)
    ck_assert_msg(stack[k] >= 16384 && stack[k] < 32768, "region %d: stack %lld", k + 1,
                  (long long)stack[k]);
  const char *off = memstub_trace_get_meta(t, "record.stack_off_thread");
  ck_assert_msg(off == NULL, "%s", off);
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
  // A prologue the patcher cannot move: refused, naming the function, the reason and where.
  const char *sh[] = {"fn_short", NULL};
  r = record(dir, sh, env("MEMSTUB_REC_FNPROG"), a1);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(r.err, "--function fn_short: the function ends (a return or a jump) at "
                              "+2, within its first 5 bytes"),
                "%s", r.err);
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

// Generations (issue 20): produce() leaves three blocks alive: one freed
// 100 ms after it returned, one 150 ms after (at the end of main), one
// never; at every resolution; each from a site of its own (--sites).
START_TEST(test_generations) {
  static const char *const res[] = {"0", "100000", "10000000"};
  for (size_t i = 0; i < 3; i++) {
    char *dir = tu_mkdtemp();
    char *argv[] = {(char *)env("MEMSTUB_EXE"), "record", "-q", "--sites", "-r", (char *)res[i],
                    "-o", "t.csv", "--function", "produce", "--",
                    (char *)env("MEMSTUB_REC_FNPROG"), "generation", NULL};
    tu_run r = tu_exec(dir, argv);
    ck_assert_msg(r.status == 0, "-r %s: status %d: %s", res[i], r.status, r.err);
    tu_run_free(&r);
    r = tu_memstub(dir, "generations", "t.csv", "--json", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    static const char *const want[] = {
        "\"survivor_blocks\": 3,", "\"survivor_bytes\": 600000,",
        "\"allocated_bytes\": 650000,", "\"alive_after_10ms\": 600000,",
        "\"alive_after_1s\": 300000,", "\"alive_at_exit\": 300000}"};
    for (size_t k = 0; k < 6; k++)
      ck_assert_msg(strstr(r.out, want[k]), "-r %s: no %s in %s", res[i], want[k], r.out);
    tu_run_free(&r);
    r = tu_memstub(dir, "generations", "t.csv", NULL);
    ck_assert_msg(r.status == 0 && strstr(r.out, "produce"), "%s", r.out);
    tu_run_free(&r);
    // --sites: blocks of 64 KiB (the sampling interval) or more are always
    // sampled: three sites, the never-freed one first.
    r = tu_memstub(dir, "generations", "t.csv", "--sites", "--json", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    const char *reg = strstr(r.out, "\"regions\": [");
    ck_assert_msg(reg, "%s", r.out);
    long long site[3], blocks[3], bytes[3], at_exit[3];
    const char *q = strstr(reg, "\"sites\": [");
    ck_assert_ptr_nonnull(q);
    for (int k = 0; k < 3; k++) {
      q = strstr(q, "{\"site\": ");
      ck_assert_msg(q && sscanf(q, "{\"site\": %lld, \"survivor_blocks\": %lld, \"survivor_bytes\": "
                                   "%lld, \"alive_at_exit\": %lld}",
                                &site[k], &blocks[k], &bytes[k], &at_exit[k]) == 4,
                    "-r %s: site %d in %s", res[i], k, reg);
      q++;
    }
    ck_assert_msg(bytes[0] == 300000 && at_exit[0] == 300000 && bytes[1] == 200000 &&
                      at_exit[1] == 0 && bytes[2] == 100000 && at_exit[2] == 0,
                  "-r %s: %s", res[i], reg);
    ck_assert(blocks[0] == 1 && blocks[1] == 1 && blocks[2] == 1);
    ck_assert(site[0] != site[1] && site[1] != site[2] && site[0] != site[2]);
    ck_assert_msg(strstr(r.out, "\"unsampled_bytes\": 0, \"sites\""), "%s", r.out);
    ck_assert_msg(strstr(r.out, "\"function\": \"produce\""), "%s", r.out);
    tu_run_free(&r);
    r = tu_memstub(dir, "generations", "t.csv", "--sites", NULL);
    ck_assert_msg(r.status == 0 && strstr(r.out, "1. 293.0 KiB in 1 block, 293.0 KiB of it never freed") &&
                      strstr(r.out, "at   produce  fnprog.c:"),
                  "%s", r.out);
    tu_run_free(&r);
    tu_rmtree(dir);
    free(dir);
  }
}
END_TEST

/* Three calls each leaving 20,000 small blocks alive (fnprog many): the
 * recorder's table of generations is rehashed into larger ones several times
 * with blocks in it, and loses none: every occurrence has its 20,000
 * survivors, half freed at once and half alive at exit. */
START_TEST(test_generations_many_blocks) {
  char *dir = tu_mkdtemp();
  char *argv[] = {(char *)env("MEMSTUB_EXE"), "record", "-q", "-o", "t.csv", "--function",
                  "produce_many", "--", (char *)env("MEMSTUB_REC_FNPROG"), "many", NULL};
  tu_run r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "generations", "t.csv", "--json", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.out, "\"occurrences\": 3, \"dropped_blocks\": 0,"), "%s", r.out);
  const char *q = r.out;
  for (int k = 1; k <= 3; k++) {
    char want[160];
    snprintf(want, sizeof want, "{\"occurrence\": %d, \"region\": \"produce_many\"", k);
    q = strstr(q, want);
    ck_assert_msg(q, "no occurrence %d in %s", k, r.out);
    ck_assert_msg(strstr(q, "\"allocated_blocks\": 30000, \"allocated_bytes\": 1120000, "
                            "\"survivor_blocks\": 20000, \"survivor_bytes\": 960000,"),
                  "occurrence %d: %s", k, q);
    const char *e = strstr(q, "\"alive_at_exit\": ");
    ck_assert_msg(e && strtoll(e + 17, NULL, 10) == 480000, "occurrence %d: %s", k, q);
    q++;
  }
  tu_run_free(&r);
  // Text: the 60,000 survivor blocks with thousands separators (issue 30).
  r = tu_memstub(dir, "generations", "t.csv", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.out, "  produce_many                   3 ") && strstr(r.out, " 60,000 "),
                "%s", r.out);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// gen --release: the stub holds the three survivors after the region and
// releases two of them when the program freed them (100 and 150 ms later).
START_TEST(test_generations_replayed) {
  char *dir = tu_mkdtemp();
  char *argv[] = {(char *)env("MEMSTUB_EXE"), "record", "-q", "-o", "t.csv", "--function",
                  "produce", "--", (char *)env("MEMSTUB_REC_FNPROG"), "generation", NULL};
  tu_run r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", "t.csv", "--release", "-o", "t.h", NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "2 rows added"), "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "build", "t.h", "-o", "stub", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  char *sargv[] = {"./stub", "--measure", "r.csv", NULL};
  r = tu_exec(dir, sargv);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s/r.csv", dir);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  // The stub's own blocks add a little (mallinfo2 counts everything it holds).
  const int64_t slack = 16384;
  int64_t peak = 0, at100 = -1;
  for (size_t i = 0; i < t->n; i++) {
    int64_t h = t->pts[i].heap_bytes;
    if (h > peak) peak = h;
    if (at100 < 0 && h >= 500000 && h < 500000 + slack) at100 = t->pts[i].time_ns;
  }
  ck_assert_int_ge(t->pts[t->n - 1].time_ns, 150000000);
#if !defined(MEMSTUB_SANITIZED)  // the sanitizer's allocator: mallinfo2 says other things
  ck_assert_int_ge(peak, 650000);
  ck_assert_msg(at100 >= 100000000 && at100 < 100000000 + 60000000, "released at %lld ns",
                (long long)at100);
  int64_t last = t->pts[t->n - 1].heap_bytes;
  ck_assert_msg(last >= 300000 && last < 300000 + slack, "holds %lld at the end", (long long)last);
#else
  (void)peak, (void)at100, (void)slack;
#endif
  memstub_trace_free(t);
  // gen --hold (an embedded stub): the stub's points end at the region's
  // end and the header holds the three survivors for after the return:
  // freed 100 and 150 ms after it, and never (tests/test_embed_release.c
  // replays such a header).
  r = tu_memstub(dir, "gen", "t.csv", "--hold", "-o", "held.h", NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "holding 585.9 KiB in 3 blocks"), "%s", r.err);
  tu_run_free(&r);
  snprintf(path, sizeof path, "%s/held.h", dir);
  char *h = tu_read_file(path);
  ck_assert_ptr_nonnull(h);
  const char *a = strstr(h, "memReleaseAfter[3] = {"), *b = strstr(h, "memReleaseBytes[3] = {");
  ck_assert_msg(a && b, "%s", h);
  long long after[3], bytes[3];
  ck_assert_int_eq(sscanf(strchr(a, '{') + 1, " %lld, %lld, %lld", &after[0], &after[1], &after[2]), 3);
  ck_assert_int_eq(sscanf(strchr(b, '{') + 1, " %lld, %lld, %lld", &bytes[0], &bytes[1], &bytes[2]), 3);
  ck_assert_msg(after[0] >= 100000000 && after[0] < 160000000, "%lld", after[0]);
  ck_assert_msg(after[1] >= 150000000 && after[1] < 210000000, "%lld", after[1]);
  ck_assert_int_eq(after[2], -1);
  ck_assert_int_eq(bytes[0], 100000);
  ck_assert_int_eq(bytes[1], 200000);
  ck_assert_int_eq(bytes[2], 300000);
  free(h);
  // The what-ifs scale the schedule: twice the time, half the bytes.
  r = tu_memstub(dir, "gen", "t.csv", "--hold-api", "--time-scale", "2", "--heap-scale", "0.5",
                 "-o", "held2.h", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  snprintf(path, sizeof path, "%s/held2.h", dir);
  h = tu_read_file(path);
  ck_assert_ptr_nonnull(h);
  long long after2[3], bytes2[3];
  a = strstr(h, "memReleaseAfter[3] = {"), b = strstr(h, "memReleaseBytes[3] = {");
  ck_assert_msg(a && b && strstr(h, ".mode = 2,"), "%s", h);
  ck_assert_int_eq(sscanf(strchr(a, '{') + 1, " %lld, %lld, %lld", &after2[0], &after2[1], &after2[2]), 3);
  ck_assert_int_eq(sscanf(strchr(b, '{') + 1, " %lld, %lld, %lld", &bytes2[0], &bytes2[1], &bytes2[2]), 3);
  for (int k = 0; k < 2; k++) ck_assert(after2[k] >= 2 * after[k] - 1 && after2[k] <= 2 * after[k] + 1);
  ck_assert_int_eq(after2[2], -1);
  ck_assert(bytes2[0] == 50000 && bytes2[1] == 100000 && bytes2[2] == 150000);
  free(h);
  // --release (rows, a standalone stub) and --hold (an embedded one) do not mix.
  r = tu_memstub(dir, "gen", "t.csv", "--hold", "--release", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "choose one"), "%s", r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// A trace without regions has no generations; a damaged file is refused
// with its line and field.
START_TEST(test_generations_refusals) {
  char *dir = tu_mkdtemp();
  const char *args[] = {"exe", "1", NULL};
  tu_run r = record(dir, NULL, env("MEMSTUB_REC_FNPROG"), args);
  ck_assert_int_eq(r.status, 0);
  tu_run_free(&r);
  r = tu_memstub(dir, "generations", "t.csv", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "has no generations"), "%s", r.err);
  tu_run_free(&r);
  // Regions recorded without --sites: --sites says how to get them.
  char *gargv[] = {(char *)env("MEMSTUB_EXE"), "record", "-q", "-o", "g.csv", "--function",
                   "produce", "--", (char *)env("MEMSTUB_REC_FNPROG"), "generation", NULL};
  r = tu_exec(dir, gargv);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "generations", "g.csv", "--sites", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "record it with --sites too"), "%s", r.err);
  tu_run_free(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s/bad.generations", dir);
  tu_write_file(path, "# memstub-generations 1\nexit_ns 10\noccurrence 1 0 5 1 x 0 0 f\n");
  r = tu_memstub(dir, "generations", "bad.generations", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "bad.generations:3: field 6"), "%s", r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// fnprog's long names (tests/record/fnprog.c): "_ZN7memstub", 300 x's, "Ev",
// then a or b (314 bytes).
static char *long_name(char last) {
  char *n = malloc(320);
  ck_assert_ptr_nonnull(n);
  memcpy(n, "_ZN7memstub", 11);
  memset(n + 11, 'x', 300);
  snprintf(n + 311, 9, "Ev%c", last);
  return n;
}

// Item 3: names of 256 bytes and more (C++'s mangled ones) are patched like
// others, and two alike but for their end stay two regions.
START_TEST(test_long_names) {
  char *dir = tu_mkdtemp();
  char *a = long_name('a'), *b = long_name('b');
  const char *fns[] = {a, b, NULL}, *args[] = {"long", NULL};
  tu_run r = record(dir, fns, env("MEMSTUB_REC_FNPROG"), args);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  memstub_trace *t = load(dir);
  int64_t peak[8];
  ck_assert_int_eq(regions(t, peak, 8), 3);  // never the whole program
  int names = 0, occ2 = 0, occ1 = 0;
  for (size_t i = 0; i < t->nmeta; i++) {
    const char *k = t->meta[i].key, *v = t->meta[i].value;
    if (!strncmp(k, "record.function._ZN7memstub", 27)) {
      names++;
      ck_assert_msg(strstr(v, "1 definition patched"), "%s: %s", k, v);
    }
    if (!strncmp(k, "churn.region._ZN7memstub", 24) && strchr(k + 13, '.') &&
        !strstr(k + 13, ".malloc") && !strstr(k + 13, ".free")) {
      occ2 += strstr(v, "occurrences=2 ") != NULL;
      occ1 += strstr(v, "occurrences=1 ") != NULL;
    }
  }
  ck_assert_int_eq(names, 2);
  ck_assert_msg(occ2 == 1 && occ1 == 1, "churn regions: %d twice, %d once", occ2, occ1);
  memstub_trace_free(t);
  tu_run_free(&r);
  free(a);
  free(b);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Item 3: a name given twice is one name; an IFUNC is said as such; more
// names or bytes than the recorder holds are refused with the limit.
START_TEST(test_names_once_ifunc_and_limits) {
  char *dir = tu_mkdtemp();
  // work_alias is another name of work's definition: patched once, said so.
  const char *twice[] = {"work", "work", "work_alias", NULL}, *a3[] = {"exe", "3", NULL};
  tu_run r = record(dir, twice, env("MEMSTUB_REC_FNPROG"), a3);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  memstub_trace *t = load(dir);
  int64_t peak[8];
  ck_assert_int_eq(regions(t, peak, 8), 3);
  const char *al = memstub_trace_get_meta(t, "record.function.work_alias");
  ck_assert_msg(al && strstr(al, "the same definition as --function work"), "%s", al ? al : "-");
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
  dir = tu_mkdtemp();
  const char *ifunc[] = {"memset", NULL}, *m[] = {"memset", "2", NULL};
  r = record(dir, ifunc, env("MEMSTUB_REC_FNPROG"), m);
  ck_assert_msg(r.status == 1, "status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "--function memset: an IFUNC symbol in") &&
                    strstr(r.err, "cannot be patched"),
                "%s", r.err);
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_run_free(&r);
  const char *many[20];
  char names[17][8];
  for (int i = 0; i < 17; i++) {
    snprintf(names[i], sizeof names[i], "f%d", i);
    many[i] = names[i];
  }
  many[17] = NULL;
  r = record(dir, many, env("MEMSTUB_REC_FNPROG"), a3);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "at most 16 different names"), "%s", r.err);
  tu_run_free(&r);
  char *huge = malloc(20000);
  ck_assert_ptr_nonnull(huge);
  memset(huge, 'y', 19999);
  huge[19999] = '\0';
  const char *big[] = {huge, NULL};
  r = record(dir, big, env("MEMSTUB_REC_FNPROG"), a3);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "more than the 16383 the recorder accepts"), "%s", r.err);
  tu_run_free(&r);
  free(huge);
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* --reference with --function: the reference runs load the recorder to
 * time the regions the trace covers, not to record (recorder/times.c), and
 * gen sets the trace's totals to theirs. fnprog spans sleeps 40 ms, then
 * holds a block in span() for each duration: the regions' span is the
 * spans', not the run's, and the stub lasts it. With --occurrence 2 the
 * second span alone. */
static long long meta_ll(const memstub_trace *t, const char *key) {
  const char *v = memstub_trace_get_meta(t, key);
  ck_assert_msg(v != NULL, "no %s", key);
  return strtoll(v, NULL, 10);
}

static memstub_trace *recorded_spans(const char *dir, const char *occ, const char *const *spans) {
  char *argv[32];
  int n = 0;
  argv[n++] = (char *)env("MEMSTUB_EXE");
  argv[n++] = "record";
  argv[n++] = "--reference";
  argv[n++] = "2";
  argv[n++] = "--function";
  argv[n++] = "span";
  if (occ) argv[n++] = "--occurrence", argv[n++] = (char *)occ;
  argv[n++] = "-o";
  argv[n++] = "t.csv";
  argv[n++] = "--";
  argv[n++] = (char *)env("MEMSTUB_REC_FNPROG");
  argv[n++] = "spans";
  for (; *spans; spans++) argv[n++] = (char *)*spans;
  argv[n] = NULL;
  tu_run r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "the regions the trace covers, timed in those runs"), "%s", r.err);
  tu_run_free(&r);
  return load(dir);
}

START_TEST(test_reference_regions) {
  char *dir = tu_mkdtemp();
  static const char *const one[] = {"60", NULL}, *const three[] = {"20", "60", "20", NULL};
  memstub_trace *t = recorded_spans(dir, NULL, one);
  long long w = meta_ll(t, "reference.region_wall_ns"), c = meta_ll(t, "reference.region_cpu_ns");
  ck_assert_int_eq(meta_ll(t, "reference.region_occurrences"), 1);
  ck_assert_msg(w >= 60000000 && w + 40000000 <= meta_ll(t, "reference.wall_ns"),
                "the span %lld ns, the run %lld", w, meta_ll(t, "reference.wall_ns"));
  ck_assert(c >= 0 && c <= w);
  long long lo, hi;
  ck_assert_int_eq(sscanf(memstub_trace_get_meta(t, "reference.region_wall_ns_range"), "%lld %lld",
                          &lo, &hi), 2);
  ck_assert(lo <= w && w <= hi);
  // The clock at its two calls, the malloc's at once, by the run of median span.
  const char *curve = memstub_trace_get_meta(t, "reference.curve");
  long long calls, span, stride, w0;
  ck_assert_msg(curve && sscanf(curve, "%lld %lld %lld %lld", &calls, &span, &stride, &w0) == 4,
                "%s", curve ? curve : "no curve");
  ck_assert_msg(calls == 2 && span >= lo && span <= hi && stride >= 1 && w0 >= 0 &&
                    w0 < 30000000,
                "%s (the span %lld [%lld-%lld])", curve, w, lo, hi);
  memstub_trace_free(t);
  tu_run r = tu_memstub(dir, "gen", "t.csv", "-o", "t.h", NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "(the regions' span timed in them") &&
                    strstr(r.err, "each row placed at the reference's time of its calls"),
                "%s", r.err);
  tu_run_free(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s/t.h", dir);
  char *h = tu_read_file(path), *d = h ? strstr(h, " * duration:") : NULL;
  ck_assert_ptr_nonnull(d);
  long long dur = strtoll(d + strlen(" * duration:"), NULL, 10);
  ck_assert_msg(llabs(dur - w) <= 1000000 + w / 100, "the stub lasts %lld ns, the span %lld", dur,
                w);
  free(h);
  t = recorded_spans(dir, NULL, three);
  ck_assert_int_eq(meta_ll(t, "reference.region_occurrences"), 3);
  long long all = meta_ll(t, "reference.region_wall_ns");
  ck_assert_msg(all >= 100000000, "%lld", all);
  ck_assert_ptr_null(memstub_trace_get_meta(t, "reference.curve"));  // one occurrence's only
  memstub_trace_free(t);
  t = recorded_spans(dir, "2", three);
  ck_assert_int_eq(meta_ll(t, "reference.region_occurrences"), 1);
  w = meta_ll(t, "reference.region_wall_ns");
  ck_assert_msg(w >= 60000000 && w + 30000000 <= all, "the second %lld, all three %lld", w, all);
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "reference.curve"));
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A whole run's reference: one run more, with the recorder loaded and not
 * recording, reads the clock at the main thread's calls (the reference's
 * totals stay those of the runs without it); its calls are the trace's. */
START_TEST(test_reference_whole_run_clock) {
  char *dir = tu_mkdtemp();
  char *argv[] = {(char *)env("MEMSTUB_EXE"), "record", "--reference", "2", "-o", "t.csv", "--",
                  (char *)env("MEMSTUB_REC_FNPROG"), "spans", "30", "30", NULL};
  tu_run r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0 && strstr(r.err, "one run more with the recorder loaded"), "%d: %s",
                r.status, r.err);
  tu_run_free(&r);
  memstub_trace *t = load(dir);
  const char *curve = memstub_trace_get_meta(t, "reference.curve");
  long long calls, span, stride, w0, events = meta_ll(t, "record.events");
  ck_assert_msg(curve && sscanf(curve, "%lld %lld %lld %lld", &calls, &span, &stride, &w0) == 4,
                "%s", curve ? curve : "no curve");
  ck_assert_msg(llabs(calls - events) <= 1 + events / 100 && span >= 60000000 && w0 < span,
                "%s: the trace's %lld calls", curve, events);
  ck_assert_ptr_null(memstub_trace_get_meta(t, "reference.region_wall_ns"));
  memstub_trace_free(t);
  r = tu_memstub(dir, "gen", "t.csv", "-o", "t.h", NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "(the whole run: ") &&
                    strstr(r.err, "each row placed at the reference's time of its calls"),
                "%s", r.err);
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
  tcase_add_test(tc, test_recursive_function_is_one_region);
  tcase_add_test(tc, test_longjmp_out_of_a_function);
  tcase_add_test(tc, test_later_call_from_a_shallower_frame);
  tcase_add_test(tc, test_refusals);
  tcase_add_test(tc, test_long_names);
  tcase_add_test(tc, test_names_once_ifunc_and_limits);
  tcase_add_test(tc, test_generations);
  tcase_add_test(tc, test_generations_refusals);
  tcase_add_test(tc, test_generations_replayed);
  tcase_add_test(tc, test_generations_many_blocks);
  tcase_add_test(tc, test_reference_regions);
  tcase_add_test(tc, test_reference_whole_run_clock);
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
