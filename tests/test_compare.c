// memstub compare: hand-made pairs with known errors (exact figures), the
// mmap page rule, --check and its exit codes, --json, and bad input.
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/compare.h"
#include "memstub/trace.h"
#include "testutil.h"

// ---- helpers ----------------------------------------------------------------

static memstub_trace *parse(const char *text) {
  memstub_trace *t = NULL;
  memstub_error err = {0};
  int rc = memstub_trace_parse("test", text, strlen(text), &t, &err);
  ck_assert_msg(rc == 0, "%s", err.msg);
  return t;
}

static memstub_compare_options opts(void) {
  memstub_compare_options o;
  memstub_compare_options_init(&o);
  o.page_size = 4096;  // host independent
  return o;
}

// The comparison of two CSV texts with threads under opt (its report; free with threads_done).
static memstub_compare_threads_report *threads_compare(const char *orig, const char *repl,
                                                       const memstub_compare_options *opt) {
  memstub_trace *o = parse(orig), *p = parse(repl);
  memstub_compare_threads_report *r = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_compare_threads_traces(o, "o", p, "r", opt, &r, &err) == 0, "%s", err.msg);
  memstub_trace_free(o);
  memstub_trace_free(p);
  return r;
}

static memstub_compare_report *compare(const char *orig, const char *repl,
                                       const memstub_compare_options *o) {
  memstub_trace *a = parse(orig), *b = parse(repl);
  memstub_compare_report *r = NULL;
  memstub_error err = {0};
  int rc = memstub_compare_traces(a, "orig", b, "repl", o, &r, &err);
  ck_assert_msg(rc == 0, "%s", err.msg);
  memstub_trace_free(a);
  memstub_trace_free(b);
  return r;
}

static char *path_in(const char *dir, const char *name) {
  char *p;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

// The hand-made pair: five points. Time errors +1, +2, +15, -1, +1 us; stack
// +16 at one point; heap +4096 on a 200000-byte block (from mmap: exact by
// the page rule) and +17 on a 100000-byte block (not exact).
static const char orig5[] =
    "# memstub-trace 1\n"
    "time_ns,stack_bytes,heap_bytes\n"
    "0,0,0\n"
    "100000,300,0\n"
    "200000,400,200000\n"
    "300000,300,100000\n"
    "400000,0,0\n";
static const char repl5[] =
    "time_ns,stack_bytes,heap_bytes,point,target_time_ns,late_ns\n"
    "1000,0,0,0,0,1000\n"
    "102000,316,0,1,100000,2000\n"
    "215000,400,204096,2,200000,15000\n"
    "299000,300,100017,3,300000,-1000\n"
    "401000,0,0,4,400000,1000\n";

// ---- library: exact figures -------------------------------------------------

START_TEST(test_known_errors) {
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig5, repl5, &o);
  ck_assert_uint_eq(r->original_rows, 5);
  ck_assert_uint_eq(r->replayed_rows, 5);
  ck_assert_uint_eq(r->compared, 5);
  ck_assert_uint_eq(r->missing, 0);
  ck_assert_uint_eq(r->repeated, 0);
  ck_assert_int_eq(r->first_missing, -1);
  // |e| sorted: 1000 1000 1000 2000 15000 (ns).
  ck_assert_int_eq(r->time.p50_abs, 1000);
  ck_assert_int_eq(r->time.p99_abs, 15000);
  ck_assert_int_eq(r->time.max_abs, 15000);
  ck_assert_int_eq(r->time.min, -1000);
  ck_assert_int_eq(r->time.max, 15000);
  ck_assert_double_eq_tol(r->time.mean, 3600, 1e-9);
  ck_assert_uint_eq(r->time.late, 1);
  // Offset: the median signed error, +1 us; then e - offset = 0 1 14 -2 0.
  ck_assert_int_eq(r->offset_ns, 1000);
  ck_assert_int_eq(r->adjusted.p50_abs, 1000);
  ck_assert_int_eq(r->adjusted.p99_abs, 14000);
  ck_assert_int_eq(r->adjusted.min, -2000);
  ck_assert_int_eq(r->adjusted.max, 14000);
  ck_assert_uint_eq(r->adjusted.late, 1);
  ck_assert_int_eq(r->duration.first_point, 0);
  ck_assert_int_eq(r->duration.last_point, 4);
  ck_assert_int_eq(r->duration.original_ns, 400000);
  ck_assert_int_eq(r->duration.replayed_ns, 400000);
  ck_assert_int_eq(r->duration.error_ns, 0);
  ck_assert_double_eq(r->duration.error_pct, 0);
  ck_assert_int_eq(r->stack.max_abs, 16);
  ck_assert_double_eq_tol(r->stack.mean_abs, 3.2, 1e-12);
  ck_assert_uint_eq(r->stack.exact, 5);  // 16 is within the 16-byte slack
  ck_assert_double_eq(r->stack.exact_share, 1.0);
  ck_assert_int_eq(r->heap.max_abs, 4096);
  ck_assert_int_eq(r->heap.min, 0);
  ck_assert_double_eq_tol(r->heap.mean_abs, 822.6, 1e-9);
  ck_assert_uint_eq(r->heap.paged, 1);
  ck_assert_uint_eq(r->heap.exact, 4);
  ck_assert_double_eq_tol(r->heap.exact_share, 0.8, 1e-12);
  ck_assert_int_eq(r->options.page_size, 4096);
  ck_assert_int_eq(r->match[2], 2);
  memstub_compare_free(r);
}
END_TEST

START_TEST(test_mmap_page_rule) {
  memstub_compare_options o = opts();
  // Below the threshold the block gets the 16-byte slack only.
  o.mmap_threshold = 200001;
  memstub_compare_report *r = compare(orig5, repl5, &o);
  ck_assert_uint_eq(r->heap.paged, 0);
  ck_assert_uint_eq(r->heap.exact, 3);
  memstub_compare_free(r);
  // "At or above": a block of exactly the threshold is paged.
  o.mmap_threshold = 200000;
  r = compare(orig5, repl5, &o);
  ck_assert_uint_eq(r->heap.paged, 1);
  ck_assert_uint_eq(r->heap.exact, 4);
  memstub_compare_free(r);
  // One byte less than the error is not a page's slack.
  o.page_size = 4095;
  r = compare(orig5, repl5, &o);
  ck_assert_uint_eq(r->heap.exact, 3);
  memstub_compare_free(r);
  // Slacks are options: 17 bytes makes the 100000-byte block exact; stack 15 not.
  o = opts();
  o.heap_slack = 17;
  o.stack_slack = 15;
  r = compare(orig5, repl5, &o);
  ck_assert_uint_eq(r->heap.exact, 5);
  ck_assert_uint_eq(r->stack.exact, 4);
  memstub_compare_free(r);
  // The block is the total above the trace's smallest heap total: with a
  // 50000-byte base, 131071 + 50000 is below the threshold, 131072 + 50000 at it.
  o = opts();
  r = compare("time_ns,stack_bytes,heap_bytes\n0,0,50000\n10,0,181071\n20,0,181072\n",
              "time_ns,stack_bytes,heap_bytes,point\n0,0,50000,0\n10,0,185167,1\n"
              "20,0,185168,2\n",
              &o);
  ck_assert_uint_eq(r->heap.paged, 1);
  ck_assert_uint_eq(r->heap.exact, 2);  // row 1 (+4096, not paged) is not exact
  ck_assert_int_eq(r->heap.max_abs, 4096);
  memstub_compare_free(r);
}
END_TEST

// 200 points 1 ms apart, error i * 100 ns at point i: nearest-rank
// percentiles, the late boundary and the offset-removed view.
START_TEST(test_percentiles) {
  size_t cap = 1 << 16, o1 = 0, o2 = 0;
  char *a = malloc(cap), *b = malloc(cap);
  o1 += (size_t)snprintf(a, cap, "time_ns,stack_bytes,heap_bytes\n");
  o2 += (size_t)snprintf(b, cap, "time_ns,stack_bytes,heap_bytes,point\n");
  for (int i = 0; i < 200; i++) {
    o1 += (size_t)snprintf(a + o1, cap - o1, "%d,%d,%d\n", i * 1000000, i, 1000 + i);
    o2 += (size_t)snprintf(b + o2, cap - o2, "%d,%d,%d,%d\n", i * 1000000 + i * 100, i + (i % 3),
                           1000 + i, i);
  }
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(a, b, &o);
  ck_assert_uint_eq(r->compared, 200);
  ck_assert_int_eq(r->time.p50_abs, 9900);   // rank 100
  ck_assert_int_eq(r->time.p99_abs, 19700);  // rank 198
  ck_assert_int_eq(r->time.max_abs, 19900);
  ck_assert_int_eq(r->time.min, 0);
  ck_assert_uint_eq(r->time.late, 99);  // 10100 .. 19900 ns; 10000 is not late
  ck_assert_int_eq(r->offset_ns, 9900);
  // |i * 100 - 9900|: 0, 100 twice, ... 9900 twice, 10000.
  ck_assert_int_eq(r->adjusted.p50_abs, 5000);
  ck_assert_int_eq(r->adjusted.p99_abs, 9900);
  ck_assert_int_eq(r->adjusted.max_abs, 10000);
  ck_assert_int_eq(r->adjusted.min, -9900);
  ck_assert_uint_eq(r->adjusted.late, 0);
  ck_assert_int_eq(r->duration.original_ns, 199000000);
  ck_assert_int_eq(r->duration.replayed_ns, 199019900);
  ck_assert_int_eq(r->duration.error_ns, 19900);
  ck_assert_double_eq_tol(r->duration.error_pct, 0.01, 1e-12);
  // Stack +0, +1, +2 repeating: all within 16 bytes; max 2.
  ck_assert_int_eq(r->stack.max_abs, 2);
  ck_assert_uint_eq(r->stack.exact, 200);
  ck_assert_uint_eq(r->heap.exact, 200);
  ck_assert_int_eq(r->heap.max_abs, 0);
  // A late threshold of 0 counts every positive error.
  o.late_ns = 0;
  memstub_compare_free(r);
  r = compare(a, b, &o);
  ck_assert_uint_eq(r->time.late, 199);
  memstub_compare_free(r);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_missing_repeated_out_of_order) {
  static const char orig[] =
      "time_ns,stack_bytes,heap_bytes\n0,0,0\n10,0,0\n20,0,0\n30,0,0\n40,0,0\n50,0,0\n";
  // Point 1 measured twice (the last counts: time 12), 3 before 2, 4 missing.
  static const char repl[] =
      "time_ns,stack_bytes,heap_bytes,point\n0,0,0,0\n11,0,0,1\n12,0,0,1\n31,0,0,3\n"
      "32,0,0,2\n55,0,0,5\n";
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig, repl, &o);
  ck_assert_uint_eq(r->replayed_rows, 6);
  ck_assert_uint_eq(r->compared, 5);
  ck_assert_uint_eq(r->missing, 1);
  ck_assert_int_eq(r->first_missing, 4);
  ck_assert_uint_eq(r->repeated, 1);
  ck_assert_uint_eq(r->out_of_order, 1);
  ck_assert_int_eq(r->match[1], 2);
  ck_assert_int_eq(r->match[4], -1);
  // errors: 0, 2, 12, 1, 5 ns
  ck_assert_int_eq(r->time.max, 12);
  ck_assert_int_eq(r->time.p50_abs, 2);
  ck_assert_int_eq(r->duration.error_ns, 5);
  memstub_compare_free(r);
  // Missing ends: the duration spans the first and last points measured.
  r = compare(orig, "time_ns,stack_bytes,heap_bytes,point\n13,0,0,1\n21,0,0,2\n44,0,0,4\n", &o);
  ck_assert_int_eq(r->duration.first_point, 1);
  ck_assert_int_eq(r->duration.last_point, 4);
  ck_assert_int_eq(r->duration.original_ns, 30);
  ck_assert_int_eq(r->duration.replayed_ns, 31);
  memstub_compare_free(r);
}
END_TEST

START_TEST(test_library_refusals) {
  memstub_compare_options o = opts();
  memstub_trace *a = parse(orig5), *b = NULL, *c = NULL;
  memstub_compare_report *r = (memstub_compare_report *)1;
  memstub_error err = {0};
  // No point column.
  ck_assert_int_eq(memstub_compare_traces(a, "o", a, "r", &o, &r, &err), -EINVAL);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(err.msg, "r: header row: no 'point' column") != NULL, "%s", err.msg);
  // Out of range, located by row.
  b = parse("time_ns,stack_bytes,heap_bytes,point\n0,0,0,0\n1,0,0,-1\n");
  ck_assert_int_eq(memstub_compare_traces(a, "o", b, "r", &o, &r, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "r: row 2: point: -1 is out of range") != NULL, "%s", err.msg);
  // Fewer than half of the points: refused unless allow_partial.
  c = parse("time_ns,stack_bytes,heap_bytes,point\n0,0,0,0\n1,0,0,4\n");
  ck_assert_int_eq(memstub_compare_traces(a, "o", c, "r", &o, &r, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "measures only 2 of ORIGINAL's 5 points") != NULL, "%s", err.msg);
  o.allow_partial = 1;
  ck_assert_int_eq(memstub_compare_traces(a, "o", c, "r", &o, &r, &err), 0);
  ck_assert_uint_eq(r->missing, 3);
  memstub_compare_free(r);
  o.stack_slack = -1;
  ck_assert_int_eq(memstub_compare_traces(a, "o", c, "r", &o, &r, &err), -EINVAL);
  memstub_compare_free(NULL);
  memstub_trace_free(a);
  memstub_trace_free(b);
  memstub_trace_free(c);
}
END_TEST

// ---- checks -----------------------------------------------------------------

START_TEST(test_check_parse_and_run) {
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig5, repl5, &o);
  memstub_compare_checks *cs = memstub_compare_checks_create();
  memstub_error err = {0};
  ck_assert_int_eq(memstub_compare_checks_parse(
                       cs, "total-ms=1, p99-us=15,max-ns=14999,stack-exact=100 %,heap-exact=0.8",
                       &err),
                   0);
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "late=20%,adj-late=0,adj-p99-us=14", &err),
                   0);
  ck_assert_int_eq(memstub_compare_checks_parse(
                       cs, "heap-max=4095,stack-mean=3.2,missing=0,repeated=0,total-pct=0", &err),
                   0);
  ck_assert_uint_eq(cs->n, 13);
  ck_assert_str_eq(cs->c[1].spec, "p99-us=15");
  ck_assert_str_eq(cs->c[3].spec, "stack-exact=100%");  // written back without blanks
  ck_assert_str_eq(cs->c[1].unit, "us");
  ck_assert_double_eq(cs->c[4].limit, 80);  // the fraction as a percentage
  ck_assert_int_eq(cs->c[4].dir, MEMSTUB_COMPARE_AT_LEAST);
  ck_assert_str_eq(cs->c[5].unit, "%");
  ck_assert_uint_eq(memstub_compare_checks_run(cs, r), 3);
  static const int pass[] = {1, 1, 0, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1};
  static const double value[] = {0, 15, 15000, 100, 80, 20, 1, 14, 4096, 3.2, 0, 0, 0};
  for (size_t i = 0; i < cs->n; i++) {
    ck_assert_msg(cs->c[i].pass == pass[i], "%s: pass %d", cs->c[i].spec, cs->c[i].pass);
    ck_assert_msg(fabs(cs->c[i].value - value[i]) < 1e-9, "%s: value %g", cs->c[i].spec,
                  cs->c[i].value);
  }
  memstub_compare_checks_free(cs);
  memstub_compare_free(r);

  static const struct {
    const char *spec, *msg;
  } bad[] = {
      {"p98-us=1", "'p98-us': unknown check"},
      {"p99=1", "'p99': unknown check"},
      {"total-min=1", "'total-min': unknown check"},
      {"p99-us", "'p99-us' needs a limit"},
      {"p99-us=", "p99-us: expected a non-negative number"},
      {"p99-us=-1", "p99-us: expected a non-negative number, found '-1'"},
      {"p99-us=abc", "found 'abc'"},
      {"p99-us=nan", "found 'nan'"},
      {"p99-us=5%", "p99-us: takes no percentage"},
      {"heap-exact=99.5", "heap-exact: a share is a percentage (99.5%) or a fraction"},
      {"heap-exact=101%", "heap-exact: a share above 100%"},
      {"late=150%", "late: a share above 100%"},
      {"p99-us=1,,total-ms=1", "empty item"},
      {"", "empty item"},
      // Found by tests/fuzz/fuzz_check: control characters are quoted as '?'
      // (a tab inside a key, an escape in a limit), long keys are cut.
      {"p9\t9-us=1", "'p9?9-us': unknown check"},
      {"max-ns= \v 14998", "max-ns: expected a non-negative number, found '? 14998'"},
      {"p99-us=\x1b[31m", "p99-us: expected a non-negative number, found '?[31m'"},
      {"stack-max-bytes-and-a-very-long-tail=1", "'stack-max-bytes-and-a-very-long-tail'"},
      {"stack-max-bytes-and-a-very-long-tail-beyond-forty=1", "-bey...': unknown check"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cs = memstub_compare_checks_create();
    ck_assert_int_eq(memstub_compare_checks_parse(cs, bad[i].spec, &err), -EINVAL);
    ck_assert_msg(strstr(err.msg, bad[i].msg) != NULL, "'%s': got '%s'", bad[i].spec, err.msg);
    memstub_compare_checks_free(cs);
  }
}
END_TEST

// ---- a realistic trace ------------------------------------------------------

/* The bundled 4.8 s sample against a fake replay: a constant 25 us late,
 * stack exact, heap rounded up to whole pages where the block comes from
 * mmap. Offset removal takes the whole error away. */
START_TEST(test_realistic_fake_replay) {
  memstub_trace *a = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_read(tu_src("traces/samples/synthetic-4.8s.csv"), &a, &err), 0);
  memstub_trace *b = memstub_trace_create();
  ck_assert_int_eq(memstub_trace_add_column(b, "point"), 0);
  ck_assert_int_eq(memstub_trace_add_column(b, "target_time_ns"), 1);
  ck_assert_int_eq(memstub_trace_add_column(b, "late_ns"), 2);
  size_t paged = 0;
  for (size_t i = 0; i < a->n; i++) {
    int64_t h = a->pts[i].heap_bytes;
    if (h >= 131072) {
      h = (h + 4095) / 4096 * 4096;
      paged++;
    }
    ck_assert_int_eq(memstub_trace_append(b, a->pts[i].time_ns + 25000, a->pts[i].stack_bytes, h),
                     0);
    int64_t *x = memstub_trace_extra_row(b, i);
    x[0] = (int64_t)i;
    x[1] = a->pts[i].time_ns;
    x[2] = 25000;
  }
  ck_assert(paged > 100);  // the sample crosses the threshold
  memstub_compare_options o = opts();
  memstub_compare_report *r = NULL;
  ck_assert_int_eq(memstub_compare_traces(a, "a", b, "b", &o, &r, &err), 0);
  ck_assert_uint_eq(r->compared, a->n);
  ck_assert_int_eq(r->time.p50_abs, 25000);
  ck_assert_int_eq(r->time.p99_abs, 25000);
  ck_assert_uint_eq(r->time.late, a->n);
  ck_assert_int_eq(r->offset_ns, 25000);
  ck_assert_int_eq(r->adjusted.max_abs, 0);
  ck_assert_uint_eq(r->adjusted.late, 0);
  ck_assert_int_eq(r->duration.error_ns, 0);
  ck_assert_int_eq(r->duration.original_ns, 4800000000);
  ck_assert_uint_eq(r->stack.exact, a->n);
  ck_assert_uint_eq(r->heap.paged, paged);
  ck_assert_uint_eq(r->heap.exact, a->n);
  ck_assert(r->heap.max_abs > 16 && r->heap.max_abs < 4096);
  memstub_compare_free(r);
  memstub_trace_free(a);
  memstub_trace_free(b);
}
END_TEST

// ---- a small JSON reader, enough to check the report ------------------------

typedef struct jv {
  char type;  // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
  char *key;
  char *str;
  double num;
  int b;
  struct jv *kids;
  size_t n;
} jv;

static void jskip(const char **p) {
  while (isspace((unsigned char)**p)) (*p)++;
}

static int jparse(const char **p, jv *v);

static int jstring(const char **p, char **out) {
  if (**p != '"') return -1;
  (*p)++;
  size_t cap = 64, n = 0;
  char *s = malloc(cap);
  while (**p != '"') {
    if (!**p || (unsigned char)**p < 0x20) return free(s), -1;
    char c = *(*p)++;
    if (c == '\\') {
      c = *(*p)++;
      if (c == 'u') {
        for (int i = 0; i < 4; i++)
          if (!isxdigit((unsigned char)*(*p)++)) return free(s), -1;
        c = '?';
      } else if (!strchr("\"\\/bfnrt", c)) {
        return free(s), -1;
      }
    }
    if (n + 2 > cap) s = realloc(s, cap *= 2);
    s[n++] = c;
  }
  (*p)++;
  s[n] = '\0';
  *out = s;
  return 0;
}

static int jparse(const char **p, jv *v) {
  memset(v, 0, sizeof *v);
  jskip(p);
  if (**p == '{' || **p == '[') {
    char close = **p == '{' ? '}' : ']';
    v->type = **p == '{' ? 'o' : 'a';
    (*p)++;
    jskip(p);
    if (**p == close) return (*p)++, 0;
    for (;;) {
      v->kids = realloc(v->kids, (v->n + 1) * sizeof *v->kids);
      jv *k = &v->kids[v->n++];
      char *key = NULL;
      if (v->type == 'o') {
        jskip(p);
        if (jstring(p, &key) < 0) return -1;
        jskip(p);
        if (*(*p)++ != ':') return free(key), -1;
      }
      if (jparse(p, k) < 0) return free(key), -1;
      k->key = key;
      jskip(p);
      if (**p == ',') {
        (*p)++;
        continue;
      }
      if (**p == close) return (*p)++, 0;
      return -1;
    }
  }
  if (**p == '"') {
    v->type = 's';
    return jstring(p, &v->str);
  }
  if (strncmp(*p, "true", 4) == 0 || strncmp(*p, "false", 5) == 0) {
    v->type = 'b';
    v->b = **p == 't';
    *p += v->b ? 4 : 5;
    return 0;
  }
  if (strncmp(*p, "null", 4) == 0) {
    v->type = 'z';
    *p += 4;
    return 0;
  }
  // JSON numbers: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  const char *s = *p;
  if (*s == '-') s++;
  if (!isdigit((unsigned char)*s) || (s[0] == '0' && isdigit((unsigned char)s[1]))) return -1;
  char *end;
  v->type = 'n';
  v->num = strtod(*p, &end);
  if (end == *p) return -1;
  *p = end;
  return 0;
}

static void jfree(jv *v) {
  for (size_t i = 0; i < v->n; i++) jfree(&v->kids[i]);
  free(v->kids);
  free(v->key);
  free(v->str);
}

// "a.b.c" or "a.0.b" (array index).
static const jv *jget(const jv *v, const char *path) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, ".")) {
    const jv *next = NULL;
    if (v->type == 'a') {
      size_t i = (size_t)atoi(tok);
      next = i < v->n ? &v->kids[i] : NULL;
    } else if (v->type == 'o') {
      for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->kids[i].key, tok) == 0) next = &v->kids[i];
    }
    v = next;
  }
  ck_assert_msg(v != NULL, "no key %s in the JSON", path);
  return v;
}

static double jnum(const jv *root, const char *path) {
  const jv *v = jget(root, path);
  ck_assert_msg(v->type == 'n', "%s is not a number", path);
  return v->num;
}

// ---- the command ------------------------------------------------------------

typedef struct fixture {
  char *dir, *orig, *repl;
} fixture;

static fixture fx_make(void) {
  fixture f;
  f.dir = tu_mkdtemp();
  f.orig = path_in(f.dir, "orig.csv");
  f.repl = path_in(f.dir, "repl.csv");
  tu_write_file(f.orig, orig5);
  tu_write_file(f.repl, repl5);
  return f;
}

static void fx_free(fixture *f) {
  tu_rmtree(f->dir);
  free(f->dir);
  free(f->orig);
  free(f->repl);
}

/* The duration error's share with a sensible number of digits, as a person
 * reads it (issue 30: "-46.945895 %"), and counts with thousands separators;
 * JSON keeps the exact figure. */
START_TEST(test_cli_text_figures_for_people) {
  fixture f = fx_make();
  char *big = path_in(f.dir, "big.csv"), *bigr = path_in(f.dir, "bigr.csv");
  // 1,200 rows; the replay ends 1.234 ms late on 11.99 ms: +10.29 %.
  FILE *o = fopen(big, "w"), *q = fopen(bigr, "w");
  ck_assert(o && q);
  fputs("time_ns,stack_bytes,heap_bytes\n", o);
  fputs("time_ns,stack_bytes,heap_bytes,point\n", q);
  for (int i = 0; i < 1200; i++) {
    fprintf(o, "%d,0,0\n", i * 10000);
    fprintf(q, "%d,0,0,%d\n", i * 10000 + (i == 1199 ? 1234000 : 0), i);
  }
  fclose(o), fclose(q);
  tu_run r = tu_memstub(f.dir, "compare", "big.csv", "bigr.csv", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.out, "original  big.csv (1,200 rows)"), "%s", r.out);
  ck_assert_msg(strstr(r.out, "points    1,200 compared, 0 missing"), "%s", r.out);
  ck_assert_msg(strstr(r.out, "          error +1.23 ms (+10.3 %)\n"), "%s", r.out);
  tu_run_free(&r);
  r = tu_memstub(f.dir, "compare", "big.csv", "bigr.csv", "--json", NULL);
  ck_assert_msg(strstr(r.out, "\"error_ns\": 1234000, \"off_cpu_ns\": 0, \"error_pct\": "
                            "10.291909924937448"),
                "%s", r.out);
  tu_run_free(&r);
  free(big), free(bigr);
  fx_free(&f);
}
END_TEST

START_TEST(test_cli_text_and_checks) {
  fixture f = fx_make();
  tu_run r = tu_memstub(f.dir, "compare", "orig.csv", "repl.csv", "--page-size", "4096", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_str_eq(r.err, "");
  ck_assert_ptr_nonnull(strstr(r.out, "points    5 compared, 0 missing"));
  ck_assert_ptr_nonnull(strstr(r.out, "|error|   p50 1.00 µs, p99 15.0 µs, max 15.0 µs"));
  ck_assert_ptr_nonnull(strstr(r.out, "late      1 of 5 points (20.00%) by more than 10.0 µs"));
  ck_assert_ptr_nonnull(strstr(r.out, "median error, +1.00 µs"));
  ck_assert_ptr_nonnull(strstr(r.out, "stack  exact 100.00% (5 of 5 within 16 B)"));
  ck_assert_ptr_nonnull(strstr(r.out, "heap   exact 80.00% (4 of 5 within 16 B, or 4.0 KiB"));
  ck_assert_msg(strstr(r.out, "          error 0 ns (0 %)\n"), "%s", r.out);
  tu_run_free(&r);

  // Passing checks: exit 0.
  r = tu_memstub(f.dir, "compare", "orig.csv", "repl.csv", "--page-size", "4096", "--check",
                 "total-ms=1,p99-us=15,stack-exact=100%", "--check", "heap-exact=80%", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "ok   heap-exact=80%"));
  tu_run_free(&r);

  // A failing check: exit 1, and stderr says which.
  r = tu_memstub(f.dir, "compare", "orig.csv", "repl.csv", "--page-size", "4096", "--check",
                 "total-ms=1,p99-us=10,heap-exact=99.5%", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(r.out, "FAIL p99-us=10"));
  ck_assert_ptr_nonnull(strstr(r.err, "memstub: check failed: p99-us=10: p99 of |time error| is "
                                      "15 us, more than 10 us\n"));
  ck_assert_ptr_nonnull(strstr(r.err, "memstub: check failed: heap-exact=99.5%: share of exact "
                                      "heap points is 80 %, less than 99.5 %\n"));
  ck_assert_ptr_null(strstr(r.err, "total-ms"));
  tu_run_free(&r);

  // Options change the figures: a bigger late threshold, a smaller threshold page.
  r = tu_memstub(f.dir, "compare", "orig.csv", "repl.csv", "--late-us", "15", "--page-size",
                 "4095", "--check", "late=0,heap-exact=60%", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "heap   exact 60.00%"));
  tu_run_free(&r);

  r = tu_memstub(f.dir, "help", "compare", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "usage: memstub compare ORIGINAL REPLAYED"));
  tu_run_free(&r);
  fx_free(&f);
}
END_TEST

START_TEST(test_cli_json) {
  fixture f = fx_make();
  tu_run r = tu_memstub(f.dir, "compare", "orig.csv", "repl.csv", "--json", "--page-size",
                        "4096", "--check", "p99-us=10,stack-exact=100%", NULL);
  ck_assert_int_eq(r.status, 1);
  const char *p = r.out;
  jv root;
  ck_assert_msg(jparse(&p, &root) == 0, "not JSON: %s", r.out);
  jskip(&p);
  ck_assert_msg(*p == '\0', "trailing text after the JSON: %s", p);
  ck_assert_int_eq(root.type, 'o');
  ck_assert_str_eq(jget(&root, "format")->str, "memstub-compare 1");
  ck_assert_str_eq(jget(&root, "original.path")->str, "orig.csv");
  ck_assert_double_eq(jnum(&root, "original.rows"), 5);
  ck_assert_double_eq(jnum(&root, "replayed.rows"), 5);
  ck_assert_double_eq(jnum(&root, "points.compared"), 5);
  ck_assert_double_eq(jnum(&root, "points.missing"), 0);
  ck_assert_int_eq(jget(&root, "points.first_missing")->type, 'z');
  ck_assert_double_eq(jnum(&root, "points.repeated"), 0);
  ck_assert_double_eq(jnum(&root, "points.out_of_order"), 0);
  ck_assert_double_eq(jnum(&root, "settings.late_ns"), 10000);
  ck_assert_double_eq(jnum(&root, "settings.stack_slack_bytes"), 16);
  ck_assert_double_eq(jnum(&root, "settings.heap_slack_bytes"), 16);
  ck_assert_double_eq(jnum(&root, "settings.page_bytes"), 4096);
  ck_assert_double_eq(jnum(&root, "settings.mmap_threshold_bytes"), 131072);
  ck_assert_double_eq(jnum(&root, "duration.first_point"), 0);
  ck_assert_double_eq(jnum(&root, "duration.last_point"), 4);
  ck_assert_double_eq(jnum(&root, "duration.original_ns"), 400000);
  ck_assert_double_eq(jnum(&root, "duration.replayed_ns"), 400000);
  ck_assert_double_eq(jnum(&root, "duration.error_ns"), 0);
  ck_assert_double_eq(jnum(&root, "duration.error_pct"), 0);
  ck_assert_double_eq(jnum(&root, "time.p50_abs_ns"), 1000);
  ck_assert_double_eq(jnum(&root, "time.p99_abs_ns"), 15000);
  ck_assert_double_eq(jnum(&root, "time.max_abs_ns"), 15000);
  ck_assert_double_eq(jnum(&root, "time.min_ns"), -1000);
  ck_assert_double_eq(jnum(&root, "time.max_ns"), 15000);
  ck_assert_double_eq(jnum(&root, "time.mean_ns"), 3600);
  ck_assert_double_eq(jnum(&root, "time.late"), 1);
  ck_assert_double_eq(jnum(&root, "time.late_share"), 0.2);
  ck_assert_double_eq(jnum(&root, "time_offset_removed.offset_ns"), 1000);
  ck_assert_double_eq(jnum(&root, "time_offset_removed.p99_abs_ns"), 14000);
  ck_assert_double_eq(jnum(&root, "time_offset_removed.min_ns"), -2000);
  ck_assert_double_eq(jnum(&root, "stack.max_abs_bytes"), 16);
  ck_assert_double_eq(jnum(&root, "stack.mean_abs_bytes"), 3.2);
  ck_assert_double_eq(jnum(&root, "stack.exact"), 5);
  ck_assert_double_eq(jnum(&root, "stack.exact_share"), 1);
  ck_assert_double_eq(jnum(&root, "heap.max_abs_bytes"), 4096);
  ck_assert_double_eq(jnum(&root, "heap.mean_abs_bytes"), 822.6);
  ck_assert_double_eq(jnum(&root, "heap.exact"), 4);
  ck_assert_double_eq(jnum(&root, "heap.exact_share"), 0.8);
  ck_assert_double_eq(jnum(&root, "heap.mmap_points"), 1);
  ck_assert_str_eq(jget(&root, "checks.0.spec")->str, "p99-us=10");
  ck_assert_str_eq(jget(&root, "checks.0.key")->str, "p99-us");
  ck_assert_double_eq(jnum(&root, "checks.0.limit"), 10);
  ck_assert_double_eq(jnum(&root, "checks.0.value"), 15);
  ck_assert_str_eq(jget(&root, "checks.0.unit")->str, "us");
  ck_assert_str_eq(jget(&root, "checks.0.bound")->str, "at_most");
  ck_assert_int_eq(jget(&root, "checks.0.pass")->b, 0);
  ck_assert_str_eq(jget(&root, "checks.1.bound")->str, "at_least");
  ck_assert_int_eq(jget(&root, "checks.1.pass")->b, 1);
  ck_assert_int_eq(jget(&root, "pass")->type, 'b');
  ck_assert_int_eq(jget(&root, "pass")->b, 0);
  ck_assert_ptr_nonnull(strstr(r.err, "check failed: p99-us=10"));
  jfree(&root);
  tu_run_free(&r);

  // No checks: pass is true, checks empty; names with quotes and non-UTF-8 bytes
  // stay valid JSON.
  char *odd = path_in(f.dir, "we\"ird\\ \xff name.csv");
  tu_write_file(odd, repl5);
  r = tu_memstub(f.dir, "compare", "orig.csv", "we\"ird\\ \xff name.csv", "--json", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  p = r.out;
  ck_assert_msg(jparse(&p, &root) == 0, "not JSON: %s", r.out);
  ck_assert_uint_eq(jget(&root, "checks")->n, 0);
  ck_assert_int_eq(jget(&root, "pass")->b, 1);
  ck_assert_ptr_nonnull(strstr(r.out, "\"path\": \"we\\\"ird\\\\ \\ufffd name.csv\""));
  jfree(&root);
  tu_run_free(&r);
  free(odd);
  fx_free(&f);
}
END_TEST

// Bad input and usage: exit 2 with "memstub: error: <msg>", nothing on stdout.
static const struct {
  const char *repl; /* NULL: use repl5 */
  const char *args[6];
  const char *msg;
} bad[] = {
    {"time_ns,stack_bytes,heap_bytes,point\n0,0,0,0\n1,x,0,1\n", {NULL},
     "repl.csv:3:3: stack_bytes: not an integer: 'x'"},
    {"time_ns,stack_bytes,heap_bytes,point\n5,0,0,0\n4,0,0,1\n", {NULL},
     "repl.csv:3:1: time_ns: decreases from 5 to 4"},
    {"# memstub-trace 1\n\ntime_ns,stack_bytes,heap_bytes,late_ns\n0,0,0,0\n", {NULL},
     "repl.csv:3:1: header row: no 'point' column: REPLAYED must be a replayed trace"},
    {"time_ns,stack_bytes,heap_bytes,point\n0,0,0,0\n# note\n\n1, 0, 0,  5\n", {NULL},
     "repl.csv:5:11: point: 5 is out of range: ORIGINAL has 5 rows (points 0-4); is REPLAYED a "
     "replay of ORIGINAL?"},
    {"time_ns,stack_bytes,heap_bytes,point\r\n0,0,0,-2\r\n", {NULL},
     "repl.csv:2:7: point: -2 is out of range"},
    {"time_ns,stack_bytes,heap_bytes,point\n0,0,0,0\n1,0,0,1\n", {NULL},
     "orig.csv vs repl.csv: REPLAYED measures only 2 of ORIGINAL's 5 points"},
    {NULL, {"repl.csv", "orig.csv"}, "orig.csv:2:1: header row: no 'point' column, but ORIGINAL "
                                     "has one: are ORIGINAL and REPLAYED given the wrong way round?"},
    {NULL, {"orig.csv", "missing.csv"}, "missing.csv: cannot open: No such file or directory"},
    {NULL, {"-", "-"}, "only one of ORIGINAL and REPLAYED can be standard input"},
    {NULL, {"orig.csv"}, "expected ORIGINAL and REPLAYED"},
    {NULL, {"orig.csv", "repl.csv", "x.csv"}, "too many arguments"},
    {NULL, {"orig.csv", "repl.csv", "--check", "p99-us=fast"},
     "--check: p99-us: expected a non-negative number, found 'fast'"},
    {NULL, {"orig.csv", "repl.csv", "--page-size", "-4"}, "--page-size: must not be negative"},
    {NULL, {"orig.csv", "repl.csv", "--late-us", "soon"}, "--late-us: expected a number"},
    {NULL, {"orig.csv", "repl.csv", "--frobnicate"}, "unknown option '--frobnicate'"},
    {NULL, {"orig.csv", "repl.csv", "--check"}, "--check needs a value"},
};

START_TEST(test_cli_bad_input) {
  fixture f = fx_make();
  if (bad[_i].repl) tu_write_file(f.repl, bad[_i].repl);
  char *argv[16] = {"compare"};
  int n = 1;
  if (!bad[_i].args[0]) {
    argv[n++] = "orig.csv";
    argv[n++] = "repl.csv";
  }
  for (int k = 0; k < 6 && bad[_i].args[k]; k++) argv[n++] = (char *)bad[_i].args[k];
  tu_run r = tu_memstub(f.dir, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], argv[6],
                        NULL);
  ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
  char want[512];
  snprintf(want, sizeof want, "memstub: error: %s", bad[_i].msg);
  ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0, "got: %s\nwant: %s", r.err, want);
  ck_assert_str_eq(r.out, "");
  tu_run_free(&r);
  fx_free(&f);
}
END_TEST

// Late rows by cause: a compensated replay (targets moved early by the
// predicted work) whose late rows woke late, worked longer than predicted,
// or waited for a CPU; the host's rows are left out of stub_time.
static const char orig_c[] =
    "time_ns,stack_bytes,heap_bytes\n"
    "0,0,0\n"
    "1000000,0,0\n"
    "2000000,0,0\n"
    "3000000,0,0\n"
    "4000000,0,0\n"
    "5000000,0,0\n";
// Row 1: 2 us late, on time. Row 2: 50 us late, woke 48 us late (the work
// as predicted, 5 us). Row 3: 30 us late, the work 35 us where 5 were
// predicted. Row 4: 900 us late, 800 us waiting for a CPU. Row 5: 20 us late,
// woke 12 us late, worked 8 us over, 10 us off CPU (half of it: the host).
static const char repl_c[] =
    "# cpu_ns: 120000 (2.40 % of the duration)\n"
    "# off_cpu_ns: 2920000 (the replay thread waited this long for a CPU)\n"
    "# duration_ns: 5000020 (target 4999995)\n"
    "time_ns,stack_bytes,heap_bytes,point,target_time_ns,late_ns,wake_late_ns,work_ns,"
    "off_cpu_ns\n"
    "0,0,0,0,0,0,0,0,0\n"
    "1002000,0,0,1,995000,7000,0,7000,0\n"
    "2050000,0,0,2,1995000,55000,48000,5000,0\n"
    "3030000,0,0,3,2995000,35000,0,35000,0\n"
    "4900000,0,0,4,3995000,905000,890000,10000,800000\n"
    "5020000,0,0,5,4999995,20005,12000,13000,10000\n";

/* A replay that fell behind: row 1's work ran 3 ms over its deadline, rows
 * 2 and 3 began late because of it (no wait ended late): one row of work,
 * two behind; "woke late" said three sleeps overshot before. */
static const char orig_b[] =
    "time_ns,stack_bytes,heap_bytes\n"
    "0,0,0\n"
    "1000000,0,0\n"
    "2000000,0,0\n"
    "3000000,0,0\n";
static const char repl_b[] =
    "time_ns,stack_bytes,heap_bytes,point,target_time_ns,late_ns,wake_late_ns,work_ns,"
    "off_cpu_ns\n"
    "0,0,0,0,0,0,0,0,0\n"
    "4000000,0,0,1,1000000,3000000,0,3000000,0\n"
    "4010000,0,0,2,2000000,2010000,2005000,5000,0\n"
    "4020000,0,0,3,3000000,1020000,1015000,5000,0\n";

START_TEST(test_late_behind) {
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig_b, repl_b, &o);
  ck_assert_uint_eq(r->time.late, 3);
  ck_assert_uint_eq(r->late_by_cause.rows[MEMSTUB_LATE_WORK], 1);
  ck_assert_uint_eq(r->late_by_cause.rows[MEMSTUB_LATE_BEHIND], 2);
  ck_assert_uint_eq(r->late_by_cause.rows[MEMSTUB_LATE_WAKE], 0);
  ck_assert_int_eq(r->late_by_cause.max_ns[MEMSTUB_LATE_BEHIND], 2010000);
  memstub_compare_free(r);
  char *dir = tu_mkdtemp(), *po = path_in(dir, "o.csv"), *pr = path_in(dir, "r.csv");
  tu_write_file(po, orig_b);
  tu_write_file(pr, repl_b);
  tu_run t = tu_memstub(dir, "compare", "o.csv", "r.csv", NULL);
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  ck_assert_msg(strstr(t.out, "behind (the rows before it ran over)       2, largest 2.01 ms"), "%s",
                t.out);
  tu_run_free(&t);
  t = tu_memstub(dir, "compare", "o.csv", "r.csv", "--json", NULL);
  const char *p = t.out;
  jv root;
  ck_assert_msg(jparse(&p, &root) == 0, "not JSON: %s", t.out);
  ck_assert(jnum(&root, "late_by_cause.behind.points") == 2);
  jfree(&root);
  tu_run_free(&t);
  tu_rmtree(dir);
  free(dir);
  free(po);
  free(pr);
}
END_TEST

START_TEST(test_late_causes) {
  memstub_compare_options o = opts();
  const char *orig = orig_c, *repl = repl_c;
  memstub_compare_report *r = compare(orig, repl, &o);
  ck_assert_uint_eq(r->time.late, 4);
  ck_assert(r->late_by_cause.causes_known);
  ck_assert(r->late_by_cause.off_cpu_known);
  ck_assert_uint_eq(r->late_by_cause.rows[MEMSTUB_LATE_WAKE], 1);
  ck_assert_int_eq(r->late_by_cause.max_ns[MEMSTUB_LATE_WAKE], 50000);
  ck_assert_uint_eq(r->late_by_cause.rows[MEMSTUB_LATE_WORK], 1);
  ck_assert_int_eq(r->late_by_cause.max_ns[MEMSTUB_LATE_WORK], 30000);
  ck_assert_uint_eq(r->late_by_cause.rows[MEMSTUB_LATE_OFF_CPU], 2);
  ck_assert_int_eq(r->late_by_cause.max_ns[MEMSTUB_LATE_OFF_CPU], 900000);
  ck_assert_uint_eq(r->late_by_cause.rows[MEMSTUB_LATE_UNKNOWN], 0);
  // Without the host's two rows: errors 0, 2, 50, 30 us.
  ck_assert_uint_eq(r->host_rows, 2);
  ck_assert_int_eq(r->stub_time.max_abs, 50000);
  ck_assert_uint_eq(r->stub_time.late, 2);
  ck_assert_int_eq(r->replay_cpu_ns, 120000);
  ck_assert_int_eq(r->replay_off_cpu_ns, 2920000);
  ck_assert_int_eq(r->replay_duration_ns, 5000020);
  memstub_compare_free(r);

  // No cause columns (an older replayed trace): every late row is unknown.
  r = compare(orig5, repl5, &o);
  ck_assert(!r->late_by_cause.causes_known);
  ck_assert_uint_eq(r->late_by_cause.rows[MEMSTUB_LATE_UNKNOWN], 1);
  ck_assert_uint_eq(r->host_rows, 0);
  ck_assert_int_eq(r->replay_cpu_ns, -1);
  memstub_compare_free(r);

  // The command: text and JSON.
  char *dir = tu_mkdtemp(), *po = path_in(dir, "o.csv"), *pr = path_in(dir, "r.csv");
  tu_write_file(po, orig);
  tu_write_file(pr, repl);
  tu_run t = tu_memstub(dir, "compare", "o.csv", "r.csv", NULL);
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  ck_assert_ptr_nonnull(strstr(t.out, "late points by cause:"));
  ck_assert_ptr_nonnull(
      strstr(t.out, "woke late (the sleep overshot)             1, largest 50.0 µs"));
  ck_assert_ptr_nonnull(
      strstr(t.out, "thread not running (waited for a CPU)      2, largest 900 µs"));
  ck_assert_ptr_nonnull(strstr(t.out, "without the 2 points the host delayed:"));
  ck_assert_ptr_nonnull(strstr(t.out, "replay CPU  120 µs, 2.40% of the replay's duration"));
  tu_run_free(&t);
  t = tu_memstub(dir, "compare", "o.csv", "r.csv", "--json", NULL);
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  const char *p = t.out;
  jv root;
  ck_assert_msg(jparse(&p, &root) == 0, "not JSON: %s", t.out);
  ck_assert(jnum(&root, "late_by_cause.wake.points") == 1);
  ck_assert(jnum(&root, "late_by_cause.work.max_ns") == 30000);
  ck_assert(jnum(&root, "late_by_cause.off_cpu.points") == 2);
  ck_assert(jnum(&root, "time_without_host.host_points") == 2);
  ck_assert(jnum(&root, "time_without_host.max_abs_ns") == 50000);
  ck_assert(jnum(&root, "replay.cpu_ns") == 120000);
  jfree(&root);
  tu_run_free(&t);
  tu_rmtree(dir);
  free(dir);
  free(po);
  free(pr);
}
END_TEST

/* ORIGINAL says a column is unknown (`# stack: unknown (...)`, written by
 * memstub import; docs/formats.md): that column is not judged against its
 * zeros. The report says it is unknown in text and JSON, has no figures for
 * it, and its checks are skipped (not passed, not failed); the other
 * column and its checks are as before. heap: the same with the heap. */
static void unknown_column(int heap) {
  const char *col = heap ? "heap" : "stack", *other = heap ? "stack" : "heap";
  // orig5 with the column's values 0 and the metadata line.
  char orig[512];
  snprintf(orig, sizeof orig,
           "# memstub-trace 1\n"
           "# %s: unknown (massif without --stacks=yes); %s_bytes are 0\n"
           "time_ns,stack_bytes,heap_bytes\n"
           "0,0,0\n100000,%s\n200000,%s\n300000,%s\n400000,0,0\n",
           col, col, heap ? "300,0" : "0,0", heap ? "400,0" : "0,200000",
           heap ? "300,0" : "0,100000");
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig, repl5, &o);
  const char *unknown = heap ? r->heap_unknown : r->stack_unknown;
  ck_assert_ptr_nonnull(unknown);
  ck_assert_int_eq(strncmp(unknown, "unknown (massif without --stacks=yes)", 37), 0);
  ck_assert_ptr_null(heap ? r->stack_unknown : r->heap_unknown);
  const memstub_compare_mem *m = heap ? &r->heap : &r->stack, *k = heap ? &r->stack : &r->heap;
  ck_assert(m->max_abs == 0 && m->exact == 0 && m->exact_share == 0);
  // The known column is compared as ever (orig5's figures).
  ck_assert_int_eq(k->max_abs, heap ? 16 : 4096);
  memstub_compare_checks *cs = memstub_compare_checks_create();
  memstub_error err = {0};
  char spec[128];
  snprintf(spec, sizeof spec, "%s-exact=100%%,%s-max=0,%s-mean=0,p99-us=15", col, col, col);
  ck_assert_int_eq(memstub_compare_checks_parse(cs, spec, &err), 0);
  ck_assert_int_eq(memstub_compare_checks_run(cs, r), 0);
  for (int i = 0; i < 3; i++) {
    ck_assert_msg(cs->c[i].skipped && !cs->c[i].pass, "%s", cs->c[i].spec);
    ck_assert(isnan(cs->c[i].value));
  }
  ck_assert(!cs->c[3].skipped && cs->c[3].pass);
  memstub_compare_checks_free(cs);
  memstub_compare_free(r);

  // The command: text, then JSON, with the checks.
  fixture f = fx_make();
  tu_write_file(f.orig, orig);
  char other_check[64];
  snprintf(other_check, sizeof other_check, "%s-max=%d", other, heap ? 16 : 4096);
  snprintf(spec, sizeof spec, "%s-exact=100%%,%s-max=0", col, col);
  tu_run t = tu_memstub(f.dir, "compare", "orig.csv", "repl.csv", "--page-size", "4096",
                        "--check", spec, "--check", other_check, NULL);
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  char want[256];
  snprintf(want, sizeof want, "%-6s unknown: not compared (ORIGINAL says '%s: unknown (massif", col,
           col);
  ck_assert_msg(strstr(t.out, want) != NULL, "no '%s' in:\n%s", want, t.out);
  snprintf(want, sizeof want, "  skip %s-exact=100%%", col);
  ck_assert_msg(strstr(t.out, want) != NULL, "no '%s' in:\n%s", want, t.out);
  snprintf(want, sizeof want, "  ok   %s", other_check);
  ck_assert_msg(strstr(t.out, want) != NULL, "no '%s' in:\n%s", want, t.out);
  snprintf(want, sizeof want, "memstub: check skipped: %s-max=0: the %s is unknown in orig.csv\n",
           col, col);
  ck_assert_msg(strstr(t.err, want) != NULL, "no '%s' in:\n%s", want, t.err);
  ck_assert_ptr_null(strstr(t.err, "check failed"));
  tu_run_free(&t);
  // A failing check on the known column still fails.
  snprintf(other_check, sizeof other_check, "%s-max=%d", other, heap ? 15 : 4095);
  t = tu_memstub(f.dir, "compare", "orig.csv", "repl.csv", "--page-size", "4096", "--check", spec,
                 "--check", other_check, NULL);
  ck_assert_int_eq(t.status, 1);
  tu_run_free(&t);

  t = tu_memstub(f.dir, "compare", "orig.csv", "repl.csv", "--json", "--page-size", "4096",
                 "--check", spec, NULL);
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  const char *p = t.out;
  jv root;
  ck_assert_msg(jparse(&p, &root) == 0, "not JSON: %s", t.out);
  char path[64];
  snprintf(path, sizeof path, "%s.known", col);
  ck_assert_int_eq(jget(&root, path)->type, 'b');
  ck_assert_int_eq(jget(&root, path)->b, 0);
  snprintf(path, sizeof path, "%s.original", col);
  ck_assert_int_eq(strncmp(jget(&root, path)->str, "unknown (massif", 15), 0);
  const jv *obj = jget(&root, col);  // no figures for the unknown column
  for (size_t i = 0; i < obj->n; i++)
    ck_assert_msg(strcmp(obj->kids[i].key, "known") == 0 || strcmp(obj->kids[i].key, "original") == 0,
                  "%s.%s", col, obj->kids[i].key);
  snprintf(path, sizeof path, "%s.known", other);
  ck_assert_int_eq(jget(&root, path)->b, 1);
  ck_assert_int_eq(jget(&root, "checks.0.skipped")->b, 1);
  ck_assert_int_eq(jget(&root, "checks.0.pass")->type, 'z');
  ck_assert_int_eq(jget(&root, "checks.0.value")->type, 'z');
  ck_assert_int_eq(jget(&root, "checks.1.skipped")->b, 1);
  ck_assert_int_eq(jget(&root, "pass")->b, 1);
  jfree(&root);
  tu_run_free(&t);
  fx_free(&f);
}

// rss_bytes and mapped_bytes: errors, percentiles, peaks, checks, JSON, and
// unknown when either side lacks the column.
static const char orig_res[] =
    "time_ns,stack_bytes,heap_bytes,rss_bytes,mapped_bytes\n"
    "0,0,0,0,0\n"
    "100000,0,1000000,100000,65536\n"
    "200000,0,1000000,400000,65536\n"
    "300000,0,1000000,1000000,131072\n"
    "400000,0,0,200000,0\n";
// rss errors +4096, -70000, +8192, +100000, 0; mapped +4096 at one point.
static const char repl_res[] =
    "time_ns,stack_bytes,heap_bytes,point,rss_bytes,mapped_bytes,minor_faults,major_faults\n"
    "0,0,0,0,4096,0,0,0\n"
    "100000,0,1000000,1,30000,65536,10,0\n"
    "200000,0,1000000,2,408192,69632,80,0\n"
    "300000,0,1000000,3,1100000,131072,300,0\n"
    "400000,0,0,4,200000,0,300,0\n";

START_TEST(test_resident_columns) {
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig_res, repl_res, &o);
  ck_assert_ptr_null(r->rss_unknown);
  ck_assert_ptr_null(r->mapped_unknown);
  // |rss error| sorted: 0 4096 8192 70000 100000.
  ck_assert_int_eq(r->rss.max_abs, 100000);
  ck_assert_int_eq(r->rss.min, -70000);
  ck_assert_int_eq(r->rss.max, 100000);
  ck_assert_double_eq_tol(r->rss.mean_abs, (4096 + 70000 + 8192 + 100000) / 5.0, 1e-9);
  ck_assert_int_eq(r->rss.exact, 3);  // within 64 KiB
  ck_assert_int_eq(r->rss.p50_abs, 8192);
  ck_assert_int_eq(r->rss.p90_abs, 100000);
  ck_assert_int_eq(r->rss.original_peak, 1000000);
  ck_assert_int_eq(r->rss.replayed_peak, 1100000);
  ck_assert_int_eq(r->mapped.max_abs, 4096);
  ck_assert_int_eq(r->mapped.exact, 5);  // within a page
  ck_assert_int_eq(r->mapped.original_peak, 131072);
  // Stack and heap gain percentiles and peaks too.
  ck_assert_int_eq(r->heap.original_peak, 1000000);
  ck_assert_int_eq(r->heap.p90_abs, 0);

  memstub_compare_checks *cs = memstub_compare_checks_create();
  memstub_error err = {0};
  ck_assert_msg(memstub_compare_checks_parse(cs,
                                             "rss-p90=10%,rss-peak=9,rss-exact=60%,rss-max=99999,"
                                             "mapped-exact=100%,mapped-max=4096,mapped-mean=1000,"
                                             "mapped-p90=0,mapped-peak=0",
                                             &err) == 0,
                "%s", err.msg);
  ck_assert_int_eq(memstub_compare_checks_run(cs, r), 3);
  ck_assert(cs->c[0].pass);  // p90 100000 = 10 % of the peak
  ck_assert_double_eq_tol(cs->c[0].value, 10.0, 1e-9);
  ck_assert(!cs->c[1].pass);  // the peak 10 % high
  ck_assert_double_eq_tol(cs->c[1].value, 10.0, 1e-9);
  ck_assert(cs->c[2].pass);
  ck_assert(!cs->c[3].pass);
  ck_assert(cs->c[4].pass && cs->c[5].pass);
  ck_assert(cs->c[6].pass);  // mean 4096 / 5 = 819.2
  ck_assert(!cs->c[7].pass && cs->c[8].pass);  // p90 4096 (nearest rank), peaks equal
  memstub_compare_checks_free(cs);
  memstub_compare_free(r);

  // A replay measured without resident memory: unknown, checks skipped.
  static const char repl_plain[] =
      "time_ns,stack_bytes,heap_bytes,point\n"
      "0,0,0,0\n100000,0,1000000,1\n200000,0,1000000,2\n300000,0,1000000,3\n400000,0,0,4\n";
  r = compare(orig_res, repl_plain, &o);
  ck_assert_ptr_nonnull(r->rss_unknown);
  ck_assert_ptr_nonnull(strstr(r->rss_unknown, "REPLAYED has no rss_bytes column"));
  ck_assert_ptr_nonnull(strstr(r->mapped_unknown, "REPLAYED has no mapped_bytes column"));
  ck_assert_int_eq(r->rss.max_abs, 0);
  cs = memstub_compare_checks_create();
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "rss-p90=0,mapped-max=0,heap-max=0", &err), 0);
  ck_assert_int_eq(memstub_compare_checks_run(cs, r), 0);
  ck_assert(cs->c[0].skipped && cs->c[1].skipped && !cs->c[2].skipped && cs->c[2].pass);
  memstub_compare_checks_free(cs);
  memstub_compare_free(r);
  // An original without the columns (an older trace).
  r = compare(orig5, repl_res, &o);
  ck_assert_ptr_nonnull(strstr(r->rss_unknown, "ORIGINAL has no rss_bytes column"));
  memstub_compare_free(r);
  // Percentages only where they mean something.
  cs = memstub_compare_checks_create();
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "rss-max=5%", &err), -EINVAL);
  memstub_compare_checks_free(cs);

  // The command: text and JSON.
  char *dir = tu_mkdtemp(), *po = path_in(dir, "o.csv"), *pr = path_in(dir, "r.csv");
  tu_write_file(po, orig_res);
  tu_write_file(pr, repl_res);
  tu_run t = tu_memstub(dir, "compare", "o.csv", "r.csv", "--page-size", "4096", "--check",
                        "rss-p90=10%,mapped-exact=100%", NULL);
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  ck_assert_msg(strstr(t.out, "rss    exact 60.00% (3 of 5 within 64.0 KiB") != NULL, "%s", t.out);
  ck_assert_msg(strstr(t.out, "(10.00% of the original's peak)") != NULL, "%s", t.out);
  ck_assert_msg(strstr(t.out, "mapped exact 100.00% (5 of 5 within 4.0 KiB") != NULL, "%s", t.out);
  tu_run_free(&t);
  t = tu_memstub(dir, "compare", "o.csv", "r.csv", "--json", "--page-size", "4096",
                 "--rss-slack", "0", NULL);
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  const char *p = t.out;
  jv root;
  ck_assert_msg(jparse(&p, &root) == 0, "not JSON: %s", t.out);
  ck_assert_int_eq(jget(&root, "rss.known")->b, 1);
  ck_assert_double_eq(jnum(&root, "rss.exact"), 1);
  ck_assert_double_eq(jnum(&root, "rss.p90_abs_bytes"), 100000);
  ck_assert_double_eq(jnum(&root, "rss.original_peak_bytes"), 1000000);
  ck_assert_double_eq(jnum(&root, "rss.replayed_peak_bytes"), 1100000);
  ck_assert_double_eq_tol(jnum(&root, "rss.p90_share_of_peak"), 0.1, 1e-12);
  ck_assert_double_eq(jnum(&root, "mapped.max_abs_bytes"), 4096);
  ck_assert_double_eq(jnum(&root, "settings.rss_slack_bytes"), 0);
  ck_assert_double_eq(jnum(&root, "settings.mapped_slack_bytes"), 4096);
  jfree(&root);
  tu_run_free(&t);
  tu_write_file(pr, repl_plain);
  t = tu_memstub(dir, "compare", "o.csv", "r.csv", "--check", "rss-peak=5", NULL);
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  ck_assert_msg(strstr(t.out, "rss    unknown (REPLAYED has no rss_bytes column") != NULL, "%s",
                t.out);
  ck_assert_msg(strstr(t.err, "check skipped: rss-peak=5: rss_bytes unknown (REPLAYED") != NULL,
                "%s", t.err);
  tu_run_free(&t);
  tu_rmtree(dir);
  free(dir);
  free(po);
  free(pr);
}
END_TEST

START_TEST(test_stack_unknown) { unknown_column(0); }
END_TEST

START_TEST(test_heap_unknown) { unknown_column(1); }
END_TEST

/* The work (issue 14 item 5): an original with CPU time and calls, and a
 * replay that measured its own. Intervals (rows 1-4): CPU 100, 200, 300,
 * 400 us against 110, 200, 290, 450 us (total 1000 vs 1050: +5 %, errors 10,
 * 0, 10, 50 us: p50 10, p90 50); mallocs 10, 0, 5, 5 against 10, 1, 5, 4
 * (20 = 20, errors 0, 1, 0, 1); frees 10, 0, 10, 0 against 10, 0, 5, 5 (20 =
 * 20, errors 0, 0, 5, 5); calls 20, 0, 15, 5 against 20, 1, 10, 9 (40 = 40,
 * errors 0, 1, 5, 4: p50 1, p90 5); churn 1000, 0, 500, 500 against 1000,
 * 100, 500, 300 (2000 vs 1900: -5 %). */
static const char orig_w[] =
    "time_ns,stack_bytes,heap_bytes,cpu_ns,churn_bytes,calls_malloc_tiny,calls_malloc_small,"
    "calls_free_tiny\n"
    "0,0,0,0,0,0,0,0\n"
    "1000000,0,0,100000,1000,5,5,10\n"
    "2000000,0,0,300000,0,0,0,0\n"
    "3000000,0,0,600000,500,5,0,10\n"
    "4000000,0,0,1000000,500,5,0,0\n";
static const char repl_w[] =
    "time_ns,stack_bytes,heap_bytes,point,cpu_ns,churn_bytes,calls_malloc_tiny,calls_free_tiny,"
    "calls_free_small\n"
    "0,0,0,0,5000,0,0,0,0\n"
    "1000000,0,0,1,115000,1000,10,10,0\n"
    "2000000,0,0,2,315000,100,1,0,0\n"
    "3000000,0,0,3,605000,500,5,0,5\n"
    "4000000,0,0,4,1055000,300,4,5,0\n";

START_TEST(test_work_columns) {
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig_w, repl_w, &o);
  const memstub_compare_work *w = &r->work;
  ck_assert_ptr_null(w->cpu_unknown);
  ck_assert_ptr_null(w->calls_unknown);
  ck_assert_uint_eq(w->cpu.intervals, 4);
  ck_assert_int_eq(w->cpu.original_total, 1000000);
  ck_assert_int_eq(w->cpu.replayed_total, 1050000);
  ck_assert_double_eq_tol(w->cpu.total_pct, 5.0, 1e-9);
  ck_assert_int_eq(w->cpu.p50_abs, 10000);
  ck_assert_int_eq(w->cpu.p90_abs, 50000);
  ck_assert_int_eq(w->kind[0].original_total, 20);
  ck_assert_int_eq(w->kind[0].replayed_total, 20);
  ck_assert_int_eq(w->kind[0].p90_abs, 1);
  ck_assert_int_eq(w->kind[3].original_total, 20);  // free, both classes
  ck_assert_int_eq(w->kind[3].replayed_total, 20);
  ck_assert_int_eq(w->kind[3].p50_abs, 0);
  ck_assert_int_eq(w->kind[3].p90_abs, 5);
  ck_assert_int_eq(w->calls.original_total, 40);
  ck_assert_int_eq(w->calls.replayed_total, 40);
  ck_assert_double_eq(w->calls.total_pct, 0);
  ck_assert_int_eq(w->calls.p50_abs, 1);
  ck_assert_int_eq(w->calls.p90_abs, 5);
  ck_assert_int_eq(w->churn.original_total, 2000);
  ck_assert_int_eq(w->churn.replayed_total, 1900);
  ck_assert_double_eq_tol(w->churn.total_pct, -5.0, 1e-9);
  ck_assert_int_eq(w->kind[1].original_total, 0);  // calloc: neither made one
  ck_assert_double_eq(w->kind[1].total_pct, 0);

  memstub_compare_checks *cs = memstub_compare_checks_create();
  memstub_error err = {0};
  ck_assert_int_eq(memstub_compare_checks_parse(cs,
                                                "cpu-total-pct=4,calls-total-pct=0,churn-total-pct=5%,"
                                                "calls-free-pct=1,cpu-p90-us=50,calls-p90=4",
                                                &err),
                   0);
  ck_assert_uint_eq(memstub_compare_checks_run(cs, r), 2);
  static const int pass[] = {0, 1, 1, 1, 1, 0};
  static const double value[] = {5, 0, 5, 0, 50, 5};
  for (size_t i = 0; i < cs->n; i++) {
    ck_assert_msg(cs->c[i].pass == pass[i], "%s: pass %d", cs->c[i].spec, cs->c[i].pass);
    ck_assert_msg(fabs(cs->c[i].value - value[i]) < 1e-9, "%s: value %g", cs->c[i].spec,
                  cs->c[i].value);
  }
  // Unknown keys and kinds are refused by name.
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "calls-valloc-pct=1", &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "calls-valloc-pct"));
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "calls-p90=5%", &err), -EINVAL);
  memstub_compare_checks_free(cs);

  // The text report has the lines.
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_int_eq(memstub_compare_write_text(r, NULL, f), 0);
  fclose(f);
  ck_assert_msg(strstr(buf, "calls  allocating (malloc, calloc, realloc, memalign) original 20, "
                            "replayed 20 (+0.00%)"),
                "%s", buf);
  ck_assert_msg(strstr(buf, "every kind original 40, replayed 40"), "%s", buf);
  ck_assert_int_eq(r->work.allocs.original_total, 20);
  ck_assert_msg(strstr(buf, "cpu    original 1.00 ms, replayed 1.05 ms (+5.00%)"), "%s", buf);
  free(buf);
  memstub_compare_free(r);

  // Without the columns on one side: not compared, the checks skipped.
  r = compare(orig_w, repl5, &o);
  ck_assert_ptr_nonnull(r->work.cpu_unknown);
  ck_assert_ptr_nonnull(strstr(r->work.calls_unknown, "REPLAYED has no churn_bytes"));
  cs = memstub_compare_checks_create();
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "cpu-total-pct=1,calls-malloc-pct=1", &err), 0);
  ck_assert_uint_eq(memstub_compare_checks_run(cs, r), 0);
  ck_assert(cs->c[0].skipped && cs->c[1].skipped);
  memstub_compare_checks_free(cs);
  memstub_compare_free(r);
  r = compare(orig5, repl5, &o);
  ck_assert_ptr_nonnull(strstr(r->work.cpu_unknown, "ORIGINAL has no cpu_ns"));
  memstub_compare_free(r);
}
END_TEST

/* ---- a what-if: before and after; by design; the verdict (issue 30) ---- */

// An original with resident memory and work: 16 KiB of heap at its peak, in 4 ms.
static const char orig_wi[] =
    "# memstub-trace 1\n"
    "time_ns,stack_bytes,heap_bytes,rss_bytes,cpu_ns,churn_bytes,calls_malloc_tiny,"
    "calls_free_tiny\n"
    "0,0,0,4096,0,0,0,0\n"
    "1000000,256,8192,16384,400000,3200,100,0\n"
    "2000000,512,16384,32768,800000,3200,100,0\n"
    "4000000,0,0,8192,1200000,3200,0,100\n";
/* Its replay at --time-scale 0.5 --heap-scale 0.5 (the resident memory
 * following): on its target (times, heap, rss and CPU time halved) but 10 us
 * late at row 1, one allocating call more (the block's last resize), the
 * stub's own frees. */
static const char whatif_wi[] =
    "# memstub-trace 1\n"
    "# transforms: time x0.5, heap x0.5, stack x1, rss x0.5, mapped x0.5, cpu x1, churn x1\n"
    "# calibration: none\n"
    "time_ns,stack_bytes,heap_bytes,point,rss_bytes,cpu_ns,churn_bytes,calls_malloc_tiny,"
    "calls_realloc_small,calls_free_tiny\n"
    "0,0,0,0,2048,0,0,0,0,0\n"
    "510000,256,4096,1,8192,200000,3200,99,1,99\n"
    "1000000,512,8192,2,16384,400000,3200,99,1,99\n"
    "2000000,0,0,3,4096,600000,3200,0,1,0\n";

// The report as the writers print it: text, or JSON with json set.
static char *report(const memstub_compare_report *r, const memstub_compare_checks *cs, int json) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_int_eq(json ? memstub_compare_write_json(r, cs, f) : memstub_compare_write_text(r, cs, f),
                   0);
  fclose(f);
  return buf;
}

/* The minor faults, cumulative on both sides: over the 4 intervals the
 * original faulted 20, 60, 170, 50 pages (300), the replay 10, 70, 110, 0
 * (190): -36.67 %, in the text, the JSON and a check; without the column on
 * one side, not compared and the check skipped (xz -T2's stub faulted
 * 13.6k pages where xz faulted 21.4k, and compare said nothing). */
static const char orig_f[] =
    "time_ns,stack_bytes,heap_bytes,rss_bytes,minor_faults\n"
    "0,0,0,0,0\n"
    "100000,0,1000000,100000,20\n"
    "200000,0,1000000,400000,80\n"
    "300000,0,1000000,1000000,250\n"
    "400000,0,0,200000,300\n";
static const char repl_f[] =
    "time_ns,stack_bytes,heap_bytes,point,rss_bytes,minor_faults\n"
    "0,0,0,0,4096,0\n"
    "100000,0,1000000,1,30000,10\n"
    "200000,0,1000000,2,408192,80\n"
    "300000,0,1000000,3,1100000,190\n"
    "400000,0,0,4,200000,190\n";

START_TEST(test_faults_column) {
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig_f, repl_f, &o);
  const memstub_compare_series *s = &r->work.faults;
  ck_assert_ptr_null(r->work.faults_unknown);
  ck_assert_uint_eq(s->intervals, 4);
  ck_assert_int_eq(s->original_total, 300);
  ck_assert_int_eq(s->replayed_total, 190);
  ck_assert_double_eq_tol(s->total_pct, -36.666666667, 1e-6);
  ck_assert_int_eq(s->p90_abs, 60);  // |error| per interval: 10 10 60 50
  memstub_compare_checks *cs = memstub_compare_checks_create();
  memstub_error err = {0};
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "faults-total-pct=10,faults-total-pct=40%",
                                                &err), 0);
  ck_assert_uint_eq(memstub_compare_checks_run(cs, r), 1);
  ck_assert(!cs->c[0].pass && cs->c[1].pass);
  memstub_compare_checks_free(cs);
  char *text = report(r, NULL, 0), *json = report(r, NULL, 1);
  ck_assert_msg(strstr(text, "faults minor: original 300, replayed 190 (-36.67%) over 4 "
                             "intervals"), "%s", text);
  ck_assert_msg(strstr(json, "\"faults\": {\"known\": true, \"original_faults\": 300, "
                             "\"replayed_faults\": 190"), "%s", json);
  free(text);
  free(json);
  memstub_compare_free(r);
  r = compare(orig_res, repl_res, &o);
  ck_assert_ptr_nonnull(strstr(r->work.faults_unknown, "ORIGINAL has no minor_faults"));
  cs = memstub_compare_checks_create();
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "faults-total-pct=10", &err), 0);
  ck_assert_uint_eq(memstub_compare_checks_run(cs, r), 0);
  ck_assert(cs->c[0].skipped);
  memstub_compare_checks_free(cs);
  memstub_compare_free(r);
}
END_TEST

/* A what-if at rss x0.5: its target faults half the pages, as its resident
 * memory is halved; the faults were compared with ORIGINAL's unscaled (300
 * against the replay's 150: -50.00 %) under "with REPLAYED's scales". */
START_TEST(test_whatif_faults_scaled) {
  static const char repl[] =
      "# memstub-trace 1\n"
      "# transforms: time x1, heap x1, stack x1, rss x0.5, mapped x1, cpu x1, churn x1\n"
      "time_ns,stack_bytes,heap_bytes,point,rss_bytes,minor_faults\n"
      "0,0,0,0,0,0\n"
      "100000,0,1000000,1,50000,10\n"
      "200000,0,1000000,2,200000,40\n"
      "300000,0,1000000,3,500000,125\n"
      "400000,0,0,4,100000,150\n";
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig_f, repl, &o);
  ck_assert(r->whatif.is && r->whatif.scales.rss == 0.5);
  ck_assert_int_eq(r->rss.original_peak, 500000);
  ck_assert_int_eq(r->work.faults.original_total, 150);
  ck_assert_int_eq(r->work.faults.replayed_total, 150);
  ck_assert_int_eq(r->work.faults.p90_abs, 0);
  char *text = report(r, NULL, 0);
  ck_assert_msg(strstr(text, "faults minor: original 150 (x0.5, as the resident memory), "
                             "replayed 150 (+0.00%) over 4 intervals"),
                "%s", text);
  free(text);
  memstub_compare_free(r);
}
END_TEST

/* With threads: each thread's faults in its own report, and the process's
 * (every thread's summed) in the total, text and JSON: here the replay
 * faults on its main thread what the original's worker faulted (xz -T2's
 * stub: 12,740 faults on thread 0 for xz's 569, 134 on a worker for
 * 10,466). */
START_TEST(test_faults_threads) {
  static const char orig[] =
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,minor_faults\n"
      "0,0,0,0,start,-1,0\n1000,0,100,0,,,10\n2000,0,0,1,start,0,0\n3000,0,100,1,,,500\n"
      "4000,0,0,1,exit,,600\n5000,0,0,0,exit,,20\n";
  static const char repl[] =
      "time_ns,stack_bytes,heap_bytes,point,thread,thread_event,thread_peer,minor_faults\n"
      "0,0,0,0,0,start,-1,0\n1000,0,100,1,0,,,400\n2000,0,0,0,1,start,0,0\n"
      "3000,0,100,1,1,,,5\n4000,0,0,2,1,exit,,10\n5000,0,0,2,0,exit,,420\n";
  memstub_compare_options opt = opts();
  memstub_compare_threads_report *r = threads_compare(orig, repl, &opt);
  ck_assert_int_eq(r->thread[0]->work.faults.original_total, 20);
  ck_assert_int_eq(r->thread[0]->work.faults.replayed_total, 420);
  ck_assert_int_eq(r->thread[1]->work.faults.original_total, 600);
  ck_assert_int_eq(r->thread[1]->work.faults.replayed_total, 10);
  for (int json = 0; json < 2; json++) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(json ? memstub_compare_threads_write_json(r, NULL, f)
                          : memstub_compare_threads_write_text(r, NULL, f), 0);
    fclose(f);
    ck_assert_msg(strstr(buf, json ? "\"original_faults\": 620, \"replayed_faults\": 430}"
                                   : "faults minor (every thread's): original 620, replayed 430 "
                                     "(-30.65%)"), "%s", buf);
    free(buf);
  }
  memstub_compare_threads_free(r);
}
END_TEST

/* The process total with the default options (page_size 0: the host's
 * page, as memstub compare passes them): a thread's block above the mmap
 * threshold is exact within a page in the total as in its thread's own
 * comparison. The total read the unresolved 0 as its page: xz -T2 -3's
 * replay, each thread 100 % exact, had its total "0.96 % exact". */
START_TEST(test_threads_total_default_page) {
  static const char orig[] =
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer\n"
      "0,0,0,0,start,-1\n1000,0,200000,0,,\n2000,0,0,1,start,0\n3000,0,100,1,,\n"
      "4000,0,0,1,exit,\n5000,0,200000,0,exit,\n";
  static const char repl[] =
      "time_ns,stack_bytes,heap_bytes,point,thread,thread_event,thread_peer\n"
      "0,0,0,0,0,start,-1\n1000,0,201000,1,0,,\n2000,0,0,0,1,start,0\n"
      "3000,0,100,1,1,,\n4000,0,0,2,1,exit,\n5000,0,201000,2,0,exit,\n";
  memstub_compare_options opt;
  memstub_compare_options_init(&opt);
  memstub_compare_threads_report *r = threads_compare(orig, repl, &opt);
  ck_assert_uint_eq(r->thread[0]->heap.exact, 3);
  ck_assert_uint_eq(r->thread[1]->heap.exact, 3);
  ck_assert_int_eq(r->total_heap_max, 1000);
  ck_assert_uint_eq(r->total_rows, 6);
  ck_assert_uint_eq(r->total_heap_exact, 6);
  memstub_compare_threads_free(r);
}
END_TEST

/* The process total of a what-if is judged against ORIGINAL with its
 * scales, as each thread is: a replay of --heap-scale 0.5 held to the
 * unscaled original read as half the process's heap wrong (xz -T2 -3's:
 * "largest |error| 28881371 bytes, 0.09 % exact", each thread 100 %). */
START_TEST(test_threads_total_whatif) {
  static const char orig[] =
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer\n"
      "0,0,0,0,start,-1\n1000,0,200000,0,,\n2000,0,0,1,start,0\n3000,0,1001,1,,\n"
      "4000,0,0,1,exit,\n5000,0,200000,0,exit,\n";
  static const char repl[] =
      "# transforms: time x1, heap x0.5, stack x1, rss x0.5, mapped x0.5, cpu x1, churn x1\n"
      "time_ns,stack_bytes,heap_bytes,point,thread,thread_event,thread_peer\n"
      "0,0,0,0,0,start,-1\n1000,0,100000,1,0,,\n2000,0,0,0,1,start,0\n"
      "3000,0,501,1,1,,\n4000,0,0,2,1,exit,\n5000,0,100000,2,0,exit,\n";
  memstub_compare_options opt = opts();
  memstub_compare_threads_report *r = threads_compare(orig, repl, &opt);
  ck_assert_int_eq(r->thread[0]->whatif.is, 1);
  ck_assert_uint_eq(r->thread[0]->heap.exact, 3);
  ck_assert_uint_eq(r->thread[1]->heap.exact, 3);
  ck_assert_int_eq(r->total_heap_max, 0);  // 1001 x 0.5 rounds to 501, as gen rounds it
  ck_assert_uint_eq(r->total_heap_exact, 6);
  memstub_compare_checks *cs = memstub_compare_checks_create();
  memstub_error err = {0};
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "total-heap-max=16", &err), 0);
  ck_assert_uint_eq(memstub_compare_threads_checks_run(cs, r), 0);
  memstub_compare_checks_free(cs);
  memstub_compare_threads_free(r);
}
END_TEST

/* A trace with threads given as standard input was compared as one thread:
 * the rows of every thread matched by point number alone (xz -T2's: "heap
 * exact 98.32 %, |error| max 31.1 MiB", duration error +8.83 %, exit 0),
 * where the same file is compared thread by thread. It is refused, as by
 * memstub_compare_files, and so is a replay with threads of a trace without. */
START_TEST(test_threads_from_stdin) {
  static const char orig[] =
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer\n"
      "0,0,0,0,start,-1\n1000,0,100,0,,\n2000,0,0,1,start,0\n3000,0,50,1,,\n"
      "4000,0,0,1,exit,\n5000,0,100,0,exit,\n";
  static const char repl[] =
      "time_ns,stack_bytes,heap_bytes,point,thread,thread_event,thread_peer\n"
      "0,0,0,0,0,start,-1\n1000,0,100,1,0,,\n2000,0,0,0,1,start,0\n"
      "3000,0,50,1,1,,\n4000,0,0,2,1,exit,\n5000,0,100,2,0,exit,\n";
  static const char plain[] = "time_ns,stack_bytes,heap_bytes\n0,0,0\n1000,0,100\n2000,0,0\n";
  char *dir = tu_mkdtemp(), *po = path_in(dir, "o.csv"), *pr = path_in(dir, "r.csv"),
       *pp = path_in(dir, "p.csv");
  tu_write_file(po, orig);
  tu_write_file(pr, repl);
  tu_write_file(pp, plain);
  memstub_compare_report *r = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_compare_files(po, pr, NULL, &r, &err), -EINVAL);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(err.msg, "o.csv has threads (a 'thread' column)"), "%s", err.msg);
  ck_assert_int_eq(memstub_compare_files(pp, pr, NULL, &r, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "r.csv has threads (a 'thread' column) and "), "%s", err.msg);
  ck_assert_msg(strstr(err.msg, "p.csv has none: it is not a replay of "), "%s", err.msg);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "exec \"$MEMSTUB_EXE\" compare - r.csv < o.csv");
  char *const argv[] = {"sh", "-c", cmd, NULL};
  tu_run t = tu_exec(dir, argv);
  ck_assert_msg(t.status == 2, "exit %d: %s%s", t.status, t.out, t.err);
  ck_assert_msg(strstr(t.err, "<stdin> has threads (a 'thread' column)"), "%s", t.err);
  ck_assert_str_eq(t.out, "");
  tu_run_free(&t);
  t = tu_memstub(dir, "compare", "o.csv", "r.csv", NULL);  // a file: thread by thread
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  ck_assert_msg(strstr(t.out, "== thread 1 ==") && strstr(t.out, "== process total =="), "%s",
                t.out);
  tu_run_free(&t);
  tu_rmtree(dir);
  free(dir);
  free(po);
  free(pr);
  free(pp);
}
END_TEST

/* Why a check is skipped, on stderr: a CPU, calls or faults check on a
 * trace without those columns was "the stack is unknown in o.csv" (the
 * stack was known), and so was tN. of a trace without threads; a tN. check
 * of a thread the trace has not was skipped with no word on stderr. */
START_TEST(test_check_skipped_why) {
  static const char orig[] = "time_ns,stack_bytes,heap_bytes\n0,0,0\n1000,16,100\n2000,0,0\n";
  static const char repl[] =
      "time_ns,stack_bytes,heap_bytes,point\n0,0,0,0\n1000,16,100,1\n2000,0,0,2\n";
  static const char torig[] =
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer\n"
      "0,0,0,0,start,-1\n1000,0,100,0,,\n2000,0,0,1,start,0\n3000,0,50,1,,\n"
      "4000,0,0,1,exit,\n5000,0,100,0,exit,\n";
  static const char trepl[] =
      "time_ns,stack_bytes,heap_bytes,point,thread,thread_event,thread_peer\n"
      "0,0,0,0,0,start,-1\n1000,0,100,1,0,,\n2000,0,0,0,1,start,0\n"
      "3000,0,50,1,1,,\n4000,0,0,2,1,exit,\n5000,0,100,2,0,exit,\n";
  char *dir = tu_mkdtemp(), *po = path_in(dir, "o.csv"), *pr = path_in(dir, "r.csv"),
       *pto = path_in(dir, "to.csv"), *ptr = path_in(dir, "tr.csv");
  tu_write_file(po, orig);
  tu_write_file(pr, repl);
  tu_write_file(pto, torig);
  tu_write_file(ptr, trepl);
  tu_run t = tu_memstub(dir, "compare", "o.csv", "r.csv", "--check",
                        "cpu-total-pct=5,calls-p90=1,faults-total-pct=5,t2.total-pct=1", NULL);
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  ck_assert_msg(strstr(t.err, "check skipped: cpu-total-pct=5: unknown (ORIGINAL has no cpu_ns "
                              "column)"), "%s", t.err);
  ck_assert_msg(strstr(t.err, "check skipped: calls-p90=1: unknown (ORIGINAL has no calls_* or "
                              "churn_bytes columns)"), "%s", t.err);
  ck_assert_msg(strstr(t.err, "check skipped: faults-total-pct=5: unknown (ORIGINAL has no "
                              "minor_faults column)"), "%s", t.err);
  ck_assert_msg(strstr(t.err, "check skipped: t2.total-pct=1: o.csv has no thread 2"), "%s", t.err);
  ck_assert_msg(!strstr(t.err, "stack is unknown"), "%s", t.err);
  tu_run_free(&t);
  t = tu_memstub(dir, "compare", "to.csv", "tr.csv", "--check", "t5.total-pct=1,cpu-total-pct=5",
                 NULL);
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  ck_assert_msg(strstr(t.err, "check skipped: t5.total-pct=1: to.csv has no thread 5 (threads 0 "
                              "to 1)"), "%s", t.err);
  ck_assert_msg(strstr(t.err, "check skipped: cpu-total-pct=5: thread 0: unknown (ORIGINAL has no "
                              "cpu_ns column)"), "%s", t.err);
  tu_run_free(&t);
  tu_rmtree(dir);
  free(dir);
  free(po);
  free(pr);
  free(pto);
  free(ptr);
}
END_TEST

/* --heap-scale 0: the stub never resizes its block (every change scales to
 * nothing) and makes the recorded calls themselves; the differences by
 * design said "resized with realloc at the 3 rows that change the heap ...
 * so those kinds count fewer and realloc more: malloc 100 -> 100", from the
 * original's changes (te0.csv's replay at heap x0: "at the 41 rows", with 1
 * realloc in it, as recorded). */
START_TEST(test_whatif_heap_zero_no_resizes) {
  static const char repl[] =
      "# memstub-trace 1\n"
      "# transforms: time x1, heap x0, stack x1, rss x0, mapped x0, cpu x1, churn x1\n"
      "# calibration: none\n"
      "time_ns,stack_bytes,heap_bytes,point,rss_bytes,cpu_ns,churn_bytes,calls_malloc_tiny,"
      "calls_free_tiny\n"
      "0,0,0,0,0,0,0,0,0\n"
      "1000000,256,0,1,0,400000,3200,100,100\n"
      "2000000,512,0,2,0,800000,3200,100,100\n"
      "4000000,0,0,3,0,1200000,3200,0,100\n";
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig_wi, repl, &o);
  ck_assert_int_eq(r->whatif.is, 1);
  ck_assert(r->whatif.scales.heap == 0.0);
  ck_assert_uint_eq(r->heap_rows, 0);
  char *text = report(r, NULL, 0);
  ck_assert_msg(!strstr(text, "resized with realloc at the"), "%s", text);
  free(text);
  memstub_compare_free(r);
}
END_TEST

/* --churn-scale 0: the target makes no allocating calls, the stub resizes
 * its block at the 3 rows that change the heap; the verdict said
 * "allocating calls error inf % (> 1 %)", and a check "= inf %". Now the
 * error is undefined, with the replay's count, and the goal still fails. */
START_TEST(test_whatif_churn_zero_no_inf) {
  static const char repl[] =
      "# memstub-trace 1\n"
      "# transforms: time x1, heap x1, stack x1, rss x1, mapped x1, cpu x1, churn x0\n"
      "# calibration: none\n"
      "time_ns,stack_bytes,heap_bytes,point,rss_bytes,cpu_ns,churn_bytes,calls_realloc_small\n"
      "0,0,0,0,4096,0,0,0\n"
      "1000000,256,8192,1,16384,400000,8192,1\n"
      "2000000,512,16384,2,32768,800000,8192,1\n"
      "4000000,0,0,3,8192,1200000,16384,1\n";
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig_wi, repl, &o);
  ck_assert(r->whatif.is && r->whatif.scales.churn == 0.0);
  ck_assert_int_eq(r->work.allocs.original_total, 0);
  ck_assert_int_eq(r->work.allocs.replayed_total, 3);
  memstub_compare_checks *cs = memstub_compare_checks_create();
  memstub_error err = {0};
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "calls-alloc-pct=1", &err), 0);
  ck_assert_uint_eq(memstub_compare_checks_run(cs, r), 1);  // fails: 3 calls against none
  char buf[160];
  ck_assert_ptr_nonnull(memstub_compare_check_undefined(&cs->c[0], r, buf, sizeof buf));
  ck_assert_str_eq(buf, "undefined, the target has none: REPLAYED 3 calls");
  char *text = report(r, NULL, 0);
  ck_assert_msg(strstr(text, "not faithful to the what-if (ORIGINAL with REPLAYED's scales): "
                             "allocating calls error undefined, the target has none: REPLAYED 3 "
                             "calls (> 1 %)"),
                "%s", text);
  ck_assert_msg(!strstr(text, "inf ") && !strstr(text, "nan "), "%s", text);
  free(text);
  text = report(r, cs, 0);
  ck_assert_msg(strstr(text, "FAIL calls-alloc-pct=1        |allocating calls error| / original: "
                             "undefined, the target has none: REPLAYED 3 calls"),
                "%s", text);
  ck_assert_msg(!strstr(text, "inf ") && !strstr(text, "nan "), "%s", text);
  free(text);
  memstub_compare_checks_free(cs);
  memstub_compare_free(r);
}
END_TEST

/* A replay with threads that misses points of a thread is warned about on
 * stderr, as a single thread's is: it was said only in that thread's
 * 'points' line on stdout (xz -T2's replay cut to 1,500 of thread 1's 2,146
 * points: no warning, exit 0, "process total ... 100.00 % exact"). */
START_TEST(test_threads_missing_warned) {
  static const char orig[] =
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer\n"
      "0,0,0,0,start,-1\n1000,0,100,0,,\n2000,0,0,1,start,0\n3000,0,50,1,,\n"
      "3500,0,60,1,,\n4000,0,0,1,exit,\n5000,0,100,0,exit,\n";
  static const char repl[] =
      "time_ns,stack_bytes,heap_bytes,point,thread,thread_event,thread_peer\n"
      "0,0,0,0,0,start,-1\n1000,0,100,1,0,,\n2000,0,0,0,1,start,0\n"
      "3000,0,50,1,1,,\n4000,0,0,3,1,exit,\n5000,0,100,2,0,exit,\n";
  char *dir = tu_mkdtemp(), *po = path_in(dir, "o.csv"), *pr = path_in(dir, "r.csv");
  tu_write_file(po, orig);
  tu_write_file(pr, repl);
  tu_run t = tu_memstub(dir, "compare", "o.csv", "r.csv", NULL);
  ck_assert_msg(t.status == 0, "exit %d: %s", t.status, t.err);
  ck_assert_msg(strstr(t.err, "warning: r.csv (thread 1) measures 3 of o.csv (thread 1)'s 4 "
                              "points: 1 missing (the first is point 2)"), "%s", t.err);
  ck_assert_msg(!strstr(t.err, "(thread 0) measures"), "%s", t.err);
  tu_run_free(&t);
  tu_rmtree(dir);
  free(dir);
  free(po);
  free(pr);
}
END_TEST

START_TEST(test_whatif_before_after) {
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig_wi, whatif_wi, &o);
  ck_assert_int_eq(r->whatif.is, 1);
  ck_assert(r->whatif.scales.time == 0.5 && r->whatif.scales.heap == 0.5 &&
            r->whatif.scales.rss == 0.5 && r->whatif.scales.cpu == 1.0);
  ck_assert_int_eq(r->calibrated, 0);
  ck_assert_uint_eq(r->heap_rows, 3);
  static const int64_t before[MEMSTUB_FIGURES] = {16384, 32768, 512, 4000000, 1200000, 200, 9600};
  static const int64_t after[MEMSTUB_FIGURES] = {8192, 16384, 512, 2000000, 600000, 201, 9600};
  for (int k = 0; k < MEMSTUB_FIGURES; k++) {
    ck_assert_msg(r->whatif.fig[k].known, "%d", k);
    ck_assert_int_eq(r->whatif.fig[k].before, before[k]);
    ck_assert_int_eq(r->whatif.fig[k].after, after[k]);
  }
  // Judged against ORIGINAL with the scales: exact heap, resident and CPU, one row late.
  ck_assert_uint_eq(r->heap.exact, 4);
  ck_assert_int_eq(r->rss.max_abs, 0);
  ck_assert_int_eq(r->duration.original_ns, 2000000);
  ck_assert_int_eq(r->duration.error_ns, 0);
  ck_assert_int_eq(r->time.max_abs, 10000);
  ck_assert_int_eq(r->work.cpu.original_total, 600000);
  ck_assert_int_eq(r->work.cpu.replayed_total, 600000);
  ck_assert_int_eq(r->work.allocs.original_total, 200);
  ck_assert_int_eq(r->work.allocs.replayed_total, 201);
  char *t = report(r, NULL, 0);
  ck_assert_msg(strstr(t, "what-if   time x0.5, heap x0.5, rss x0.5, mapped x0.5: before is "
                          "ORIGINAL (on its stub's timeline), after REPLAYED\n"
                          "                          before        after  change\n"
                          "  peak heap             16.0 KiB      8.0 KiB  -8.0 KiB (-50.0 %)\n"
                          "  peak resident         32.0 KiB     16.0 KiB  -16.0 KiB (-50.0 %)\n"
                          "  peak stack               512 B        512 B  0 B (+0.0 %), "
                          "uncalibrated\n"
                          "  duration               4.00 ms      2.00 ms  -2.00 ms (-50.0 %)\n"
                          "  CPU                    1.20 ms       600 µs  -600 µs (-50.0 %)\n"
                          "  allocator calls            200          201  +1 (+0.5 %)\n"
                          "  churn                  9.4 KiB      9.4 KiB  0 B (+0.0 %)\n"),
                "%s", t);
  ck_assert_msg(strstr(t, "against its target, ORIGINAL with REPLAYED's scales"), "%s", t);
  ck_assert_msg(strstr(t, "\nverdict   faithful to the what-if (ORIGINAL with REPLAYED's scales): "
                          "heap exact 100.00 % (>= 99 %), duration error 0.00 % (<= 1 %), "
                          "resident peak error 0.00 % (<= 5 %), CPU error 0.00 % (<= 5 %), "
                          "allocating calls error 0.50 % (<= 1 %); not judged, unknown: mapped "
                          "peak error; stack: no calibration profile (memstub calibrate, "
                          "docs/calibration.md)\n"),
                "%s", t);
  free(t);
  char *j = report(r, NULL, 1);
  ck_assert_msg(strstr(j, "\"kind\": \"what-if\",\n  \"scales\": {\"time\": 0.5, \"heap\": 0.5, "
                          "\"stack\": 1, \"rss\": 0.5, \"mapped\": 0.5, \"cpu\": 1, \"churn\": 1},"),
                "%s", j);
  ck_assert_msg(strstr(j, "\"peak_heap_bytes\": {\"known\": true, \"before\": 16384, \"after\": "
                          "8192, \"change\": -8192, \"change_pct\": -50}"),
                "%s", j);
  ck_assert_msg(strstr(j, "\"calls\": {\"known\": true, \"before\": 200, \"after\": 201, "
                          "\"change\": 1, \"change_pct\": 0.5}"),
                "%s", j);
  ck_assert_msg(strstr(j, "\"duration_ns\": {\"known\": true, \"before\": 4000000, \"after\": "
                          "2000000, \"change\": -2000000, \"change_pct\": -50}"),
                "%s", j);
  ck_assert_msg(strstr(j, "\"verdict\": {\"faithful\": true, \"held_to\": \"goals\", "
                          "\"calibrated\": false, \"goals\": [{\"spec\": \"heap-exact=99%\", "
                          "\"value\": 100, \"pass\": true, \"skipped\": false}"),
                "%s", j);
  free(j);
  memstub_compare_free(r);
}
END_TEST

/* A stub as recorded: its errors, then the differences by design (its one
 * heap block, its own frees, the uncalibrated stack) apart from them, and
 * the verdict with the goals it was held to. */
START_TEST(test_fidelity_by_design_verdict) {
  // The stub as recorded, 2 % slow, its stack 64 B above (no profile).
  static const char repl[] =
      "# memstub-trace 1\n"
      "# transforms: none\n"
      "# calibration: none\n"
      "time_ns,stack_bytes,heap_bytes,point,rss_bytes,cpu_ns,churn_bytes,calls_malloc_tiny,"
      "calls_realloc_small,calls_free_tiny\n"
      "0,0,0,0,4096,0,0,0,0,0\n"
      "1020000,320,8192,1,16384,400000,3200,99,1,99\n"
      "2040000,576,16384,2,32768,800000,3200,99,1,99\n"
      "4080000,0,0,3,8192,1200000,3200,0,1,0\n";
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig_wi, repl, &o);
  ck_assert_int_eq(r->whatif.is, 0);
  char *t = report(r, NULL, 0);
  ck_assert_msg(!strstr(t, "what-if"), "%s", t);
  ck_assert_msg(strstr(t, "\ndifferences by design (the stub is not the component; not errors):\n"
                          "  heap_block  the stub holds its heap in one block, resized with "
                          "realloc at the 3 rows that change the heap;"),
                "%s", t);
  ck_assert_msg(strstr(t, "so those kinds count fewer and realloc more: malloc 200 -> 198, "
                          "realloc 0 -> 3\n"
                          "  frees       free 100 -> 198: the stub frees every other block"),
                "%s", t);
  ck_assert_msg(strstr(t, "  stack       stack exact 50.00 % (mean |error| 32 B): REPLAYED's "
                          "stub names no calibration profile, so each of its frames carries the "
                          "replay's own bytes, and the verdict's goals leave the stack out;"),
                "%s", t);
  ck_assert_msg(strstr(t, "'memstub calibrate -o host.profile', then 'memstub gen --calibration "
                          "host.profile' takes them out (docs/calibration.md)\n"),
                "%s", t);
  ck_assert_msg(strstr(t, "\nverdict   not faithful: duration error 2.00 % (> 1 %); held to heap "
                          "exact 100.00 % (>= 99 %), resident peak error 0.00 % (<= 5 %), CPU "
                          "error 0.00 % (<= 5 %), allocating calls error 0.50 % (<= 1 %); not "
                          "judged, unknown: mapped peak error; stack: no calibration profile"),
                "%s", t);
  free(t);
  // The checks given are the goals then.
  memstub_compare_checks *cs = memstub_compare_checks_create();
  memstub_error err = {0};
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "total-pct=3,heap-max=0", &err), 0);
  ck_assert_uint_eq(memstub_compare_checks_run(cs, r), 0);
  t = report(r, cs, 0);
  ck_assert_msg(strstr(t, "\nverdict   faithful by the checks: duration error 2.00 % (<= 3 %), "
                          "heap-max 0 bytes (<= 0 bytes)\n"),
                "%s", t);
  free(t);
  char *j = report(r, cs, 1);
  ck_assert_msg(strstr(j, "\"kind\": \"fidelity\""), "%s", j);
  ck_assert_msg(strstr(j, "\"by_design\": [\n    {\"key\": \"heap_block\", \"why\": \"the stub "
                          "holds its heap in one block"),
                "%s", j);
  ck_assert_msg(strstr(j, "\"verdict\": {\"faithful\": true, \"held_to\": \"checks\""), "%s", j);
  free(j);
  memstub_compare_checks_free(cs);
  memstub_compare_free(r);
  // With a profile the stack is held to a goal, and nothing points to calibrate.
  char *cal = strdup(repl);
  memcpy(strstr(cal, "calibration: none"), "calibration: h.pr", 17);
  r = compare(orig_wi, cal, &o);
  ck_assert_int_eq(r->calibrated, 1);
  t = report(r, NULL, 0);
  ck_assert_msg(strstr(t, "stack exact 50.00 % (< 99 %)"), "%s", t);
  ck_assert_msg(!strstr(t, "memstub calibrate"), "%s", t);
  free(t);
  memstub_compare_free(r);
  free(cal);
}
END_TEST

/* REPLAYED's transforms must be a line memstub writes; the older ones (three
 * or five scales) still read. */
START_TEST(test_whatif_transforms_lines) {
  memstub_compare_options o = opts();
  char text[2048];
  snprintf(text, sizeof text, "# memstub-trace 1\n# transforms: time x0.5, heap x0.5, stack x1\n%s",
           strstr(whatif_wi, "time_ns,"));
  memstub_compare_report *r = compare(orig_wi, text, &o);
  ck_assert(r->whatif.is && r->whatif.scales.heap == 0.5 && r->whatif.scales.rss == 1.0);
  memstub_compare_free(r);
  // A trace of the three columns alone (no extra column to copy).
  snprintf(text, sizeof text, "# transforms: time x1, heap x2, stack x1\n%s", repl5);
  r = compare(orig5, text, &o);
  ck_assert(r->whatif.is && r->whatif.fig[MEMSTUB_FIGURE_HEAP_PEAK].before == 200000);
  ck_assert_int_eq(r->heap.original_peak, 400000);  // the target: twice the heap
  memstub_compare_free(r);
  memstub_trace *a = parse(orig_wi), *b = NULL;
  snprintf(text, sizeof text, "# memstub-trace 1\n# transforms: heap x0.5\n%s",
           strstr(whatif_wi, "time_ns,"));
  b = parse(text);
  memstub_error err = {0};
  ck_assert_int_eq(memstub_compare_traces(a, "o", b, "w", &o, &r, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "'transforms: heap x0.5' does not name the what-if scales"), "%s",
                err.msg);
  memstub_trace_free(a);
  memstub_trace_free(b);
}
END_TEST

/* A scale in REPLAYED's transforms is a decimal number as memstub writes it:
 * strtod's other numbers were taken (rss x0x1p-1 read as 0.5, +0.5 too);
 * they are refused, exit 2, naming the file, line, column and scale. */
START_TEST(test_whatif_transforms_hex_refused) {
  static const char *const scale[][2] = {{"0x1p-1", "rss"}, {"+0.5", "rss"}, {"0x8", "rss"},
                                       {"inf", "rss"},    {"5e", "rss"}};
  const char *body = strstr(whatif_wi, "# calibration:");
  char *dir = tu_mkdtemp(), *po = path_in(dir, "o.csv"), *pr = path_in(dir, "r.csv");
  tu_write_file(po, orig_wi);
  for (size_t i = 0; i < sizeof scale / sizeof *scale; i++) {
    char text[2048], want[256];
    snprintf(text, sizeof text,
             "# memstub-trace 1\n# transforms: time x0.5, heap x0.5, stack x1, rss x%s, mapped "
             "x0.5, cpu x1, churn x1\n%s",
             scale[i][0], body);
    tu_write_file(pr, text);
    tu_run t = tu_memstub(dir, "compare", "o.csv", "r.csv", NULL);
    ck_assert_msg(t.status == 2, "%s: exit %d: %s", scale[i][0], t.status, t.err);
    snprintf(want, sizeof want, "memstub: error: r.csv:2:52: metadata 'transforms', field %s: '%s' "
             "is not a scale as memstub writes one", scale[i][1], scale[i][0]);
    ck_assert_msg(strstr(t.err, want), "%s: %s", want, t.err);
    tu_run_free(&t);
  }
  // What memstub writes reads: an exponent (%g's 1e-05) too.
  char text[2048];
  snprintf(text, sizeof text,
           "# memstub-trace 1\n# transforms: time x0.5, heap x0.5, stack x1, rss x1e-05, mapped "
           "x0.5, cpu x1, churn x1\n%s",
           body);
  memstub_compare_options o = opts();
  memstub_compare_report *r = compare(orig_wi, text, &o);
  ck_assert(r->whatif.scales.rss == 1e-05);
  memstub_compare_free(r);
  tu_rmtree(dir);
  free(dir);
  free(po);
  free(pr);
}
END_TEST

START_TEST(test_cli_work_json) {
  char *dir = tu_mkdtemp();
  char *a = path_in(dir, "o.csv"), *b = path_in(dir, "r.csv");
  tu_write_file(a, orig_w);
  tu_write_file(b, repl_w);
  tu_run r = tu_memstub(dir, "compare", "o.csv", "r.csv", "--json", "--check",
                        "calls-total-pct=1", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  const char *p = r.out;
  jv root;
  ck_assert_msg(jparse(&p, &root) == 0, "not JSON: %s", r.out);
  ck_assert(jget(&root, "work.cpu.known")->b);
  ck_assert_double_eq(jnum(&root, "work.cpu.original_ns"), 1000000);
  ck_assert_double_eq(jnum(&root, "work.cpu.p90_abs_ns"), 50000);
  ck_assert_double_eq(jnum(&root, "work.calls.replayed_calls"), 40);
  ck_assert_double_eq(jnum(&root, "work.calls.by_kind.free.p90_abs_calls"), 5);
  ck_assert_double_eq(jnum(&root, "work.churn.error_pct"), -5);
  ck_assert_double_eq(jnum(&root, "work.churn.original_bytes"), 2000);
  jfree(&root);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
  free(a);
  free(b);
}
END_TEST

static Suite *compare_suite(void) {
  Suite *s = suite_create("compare");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_known_errors);
  tcase_add_test(tc, test_resident_columns);
  tcase_add_test(tc, test_mmap_page_rule);
  tcase_add_test(tc, test_percentiles);
  tcase_add_test(tc, test_missing_repeated_out_of_order);
  tcase_add_test(tc, test_library_refusals);
  tcase_add_test(tc, test_check_parse_and_run);
  tcase_add_test(tc, test_realistic_fake_replay);
  tcase_add_test(tc, test_cli_text_and_checks);
  tcase_add_test(tc, test_cli_text_figures_for_people);
  tcase_add_test(tc, test_cli_json);
  tcase_add_test(tc, test_late_causes);
  tcase_add_test(tc, test_late_behind);
  tcase_add_test(tc, test_stack_unknown);
  tcase_add_test(tc, test_heap_unknown);
  tcase_add_test(tc, test_work_columns);
  tcase_add_test(tc, test_faults_column);
  tcase_add_test(tc, test_faults_threads);
  tcase_add_test(tc, test_threads_total_default_page);
  tcase_add_test(tc, test_threads_total_whatif);
  tcase_add_test(tc, test_threads_from_stdin);
  tcase_add_test(tc, test_check_skipped_why);
  tcase_add_test(tc, test_whatif_heap_zero_no_resizes);
  tcase_add_test(tc, test_whatif_churn_zero_no_inf);
  tcase_add_test(tc, test_whatif_faults_scaled);
  tcase_add_test(tc, test_threads_missing_warned);
  tcase_add_test(tc, test_cli_work_json);
  tcase_add_test(tc, test_whatif_before_after);
  tcase_add_test(tc, test_fidelity_by_design_verdict);
  tcase_add_test(tc, test_whatif_transforms_lines);
  tcase_add_test(tc, test_whatif_transforms_hex_refused);
  tcase_add_loop_test(tc, test_cli_bad_input, 0, (int)(sizeof bad / sizeof bad[0]));
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(compare_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
