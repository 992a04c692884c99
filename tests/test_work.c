// Work fidelity (issue 14): the work columns of a trace (cpu_ns, churn_bytes,
// calls_*), the generator's work arrays (layout 3) in both header forms and
// its transforms (--cpu-scale, --churn-scale, the recorder's cost), and the
// replay's spin and allocator calls, which keep heap_bytes exact at every
// original point.
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "memstub/work.h"
#include "testutil.h"

#define MS (INT64_C(1000000))

static const char *trace_csv(const char *dir, const char *text) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  tu_write_file(path, text);
  return path;
}

static memstub_trace *parse(const char *text) {
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_parse("t.csv", text, strlen(text), &t, &err) == 0, "%s", err.msg);
  return t;
}

static memstub_gen *build(const memstub_trace *t, double cpu_scale, double churn_scale) {
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.cpu_scale = cpu_scale;
  o.churn_scale = churn_scale;
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_build(t, &o, &g, &err) == 0, "%s", err.msg);
  return g;
}

// The count of kind k, class c in point i's call vector.
static int64_t calls_of(const memstub_gen *g, int64_t i, int k, int c) {
  return g->calltab[g->calls[i] * MEMSTUB_WORK_CALLS + k * MEMSTUB_WORK_CLASSES + c];
}

/* A trace with work: rows 1-3 compute 2 ms each within 5 ms, with 100 tiny
 * malloc/free pairs (6400 bytes); row 2 also grows the heap by 1000 bytes. */
static const char *const WORK_TRACE =
    "# memstub-trace 1\n"
    "time_ns,stack_bytes,heap_bytes,cpu_ns,churn_bytes,calls_malloc_tiny,calls_free_tiny,"
    "calls_malloc_small\n"
    "0,0,0,0,0,0,0,0\n"
    "5000000,0,0,2000000,6400,100,100,0\n"
    "10000000,0,1000,4000000,7400,100,100,1\n"
    "15000000,0,1000,6000000,6400,100,100,0\n";

START_TEST(test_columns_round_trip) {
  // Written by the trace writer and read back, in any subset and order.
  char *dir = tu_mkdtemp();
  memstub_trace *t = parse(WORK_TRACE);
  char path[4200];
  snprintf(path, sizeof path, "%s/w.csv", dir);
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_write(t, path, &err), 0);
  memstub_trace *u = NULL;
  ck_assert_int_eq(memstub_trace_read(path, &u, &err), 0);
  ck_assert_int_eq(u->nextra, 5);
  int c = memstub_trace_column(u, "calls_malloc_small");
  ck_assert_int_ge(c, 0);
  ck_assert_int_eq(memstub_trace_extra_row(u, 2)[c], 1);
  ck_assert_int_eq(memstub_trace_extra_row(u, 3)[memstub_trace_column(u, "cpu_ns")], 6000000);
  // The names are the documented ones, kind-major, class-minor.
  static const char *const names[] = {MEMSTUB_WORK_CALL_COLUMNS};
  ck_assert_str_eq(names[0], "calls_malloc_tiny");
  ck_assert_str_eq(names[3 * 4 + 3], "calls_free_large");
  ck_assert_str_eq(names[4 * 4 + 2], "calls_memalign_medium");
  ck_assert_int_eq(memstub_work_class(0), 0);
  ck_assert_int_eq(memstub_work_class(64), 0);
  ck_assert_int_eq(memstub_work_class(65), 1);
  ck_assert_int_eq(memstub_work_class(1024), 1);
  ck_assert_int_eq(memstub_work_class(1025), 2);
  ck_assert_int_eq(memstub_work_class(131072), 2);
  ck_assert_int_eq(memstub_work_class(131073), 3);
  ck_assert_int_eq(memstub_work_class(UINT64_C(1) << 40), 3);
  for (uint64_t b = 1; b < 300000; b += b < 2000 ? 1 : 97)  // the table against the definition
    ck_assert_int_eq(memstub_work_class(b), (b > 64) + (b > 1024) + (b > 131072));
  memstub_trace_free(u);
  memstub_trace_free(t);
  // A trace without the columns is a layout-1 stub, as before.
  t = parse("time_ns,stack_bytes,heap_bytes\n0,0,0\n1000,0,10\n");
  memstub_gen *g = build(t, 1, 1);
  ck_assert_int_eq(g->stub.abi, MEMSTUB_STUB_ABI);
  ck_assert_ptr_null(g->cpu);
  memstub_gen_free(g);
  memstub_trace_free(t);
  // Bad values are refused, naming the row and the column.
  t = parse("time_ns,stack_bytes,heap_bytes,cpu_ns\n0,0,0,5\n1000,0,10,3\n");
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "row 2: cpu_ns decreases"));
  memstub_trace_free(t);
  t = parse("time_ns,stack_bytes,heap_bytes,calls_free_tiny\n0,0,0,0\n1000,0,10,-1\n");
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "row 2: calls_free_tiny: negative"));
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_gen_work_points) {
  memstub_trace *t = parse(WORK_TRACE);
  memstub_gen *g = build(t, 1, 1);
  ck_assert_int_eq(g->stub.abi, MEMSTUB_STUB_ABI_WORK);
  ck_assert_int_eq(g->stub.numdata, 3);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(g->use[i].time, 5 * MS);
    ck_assert_int_eq(g->cpu[i], 2 * MS);
    ck_assert_int_eq(calls_of(g, i, MEMSTUB_CALL_MALLOC, 0), 100);
    ck_assert_int_eq(calls_of(g, i, MEMSTUB_CALL_FREE, 0), 100);
  }
  // Row 2's heap growth is the stub's own block realloc: its small malloc is that call.
  ck_assert_int_eq(calls_of(g, 1, MEMSTUB_CALL_MALLOC, 1), 0);
  ck_assert_int_eq(g->churn[1], 6400);  // its 1000 bytes moved by the block
  // Equal vectors share an entry: entry 0 (none) and one other.
  ck_assert_int_eq(g->ncalltab, 2);
  ck_assert_int_eq(g->calls[0], g->calls[2]);
  ck_assert_int_eq(g->work_cpu_ns, 6 * MS);
  memstub_gen_free(g);

  // --cpu-scale 0.5: the computation halves, the waiting stays: 1 + 3 ms.
  g = build(t, 0.5, 1);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(g->cpu[i], 1 * MS);
    ck_assert_int_eq(g->use[i].time, 4 * MS);
  }
  ck_assert_ptr_nonnull(strstr(g->transforms, "cpu x0.5, churn x1"));
  memstub_gen_free(g);
  // --cpu-scale 3: 6 ms of CPU in an 9 ms interval.
  g = build(t, 3, 1);
  ck_assert_int_eq(g->cpu[0], 6 * MS);
  ck_assert_int_eq(g->use[0].time, 9 * MS);
  memstub_gen_free(g);
  // --churn-scale 0: no calls at all; 0.5: half of them, rounding carried on
  // (100 * 0.5 each row), the bytes too.
  g = build(t, 1, 0);
  ck_assert_int_eq(g->ncalltab, 1);
  ck_assert_int_eq(g->work_calls, 0);
  ck_assert_int_eq(g->work_bytes, 0);
  ck_assert_int_eq(g->cpu[1], 2 * MS);
  memstub_gen_free(g);
  g = build(t, 1, 0.5);
  ck_assert_int_eq(calls_of(g, 0, MEMSTUB_CALL_MALLOC, 0), 50);
  ck_assert_int_eq(g->work_bytes, 9100);  // 3200 + (3700 - 1000) + 3200
  memstub_gen_free(g);
  g = build(t, 1, 0.015);  // 1.5 calls a row: 2, 1, 2 (or 1, 2, 1) and 4.5 -> 5 in all
  int64_t sum = 0;
  for (int i = 0; i < 3; i++) sum += calls_of(g, i, MEMSTUB_CALL_MALLOC, 0);
  ck_assert_int_ge(sum, 4);
  ck_assert_int_le(sum, 5);
  memstub_gen_free(g);
  // Refused: a negative or infinite scale.
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.churn_scale = -1;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "--churn-scale"));
  memstub_trace_free(t);
}
END_TEST

// The recorder's measured cost per call and per sample comes out of the
// times and the CPU time.
START_TEST(test_recorder_cost_taken_out) {
  memstub_trace *t = parse(
      "# memstub-trace 1\n"
      "# record.cost_ns_per_event: 10.0\n"
      "# record.samples: 4\n"
      "# record.cost_ns_per_sample: 1500.0\n"
      "time_ns,stack_bytes,heap_bytes,cpu_ns,calls_malloc_tiny,calls_free_tiny\n"
      "0,0,0,0,0,0\n"
      "1000000,0,0,600000,500,500\n"
      "2000000,0,0,600000,0,0\n");
  memstub_gen *g = build(t, 1, 1);
  // Row 1: 1000 calls x 10 ns + 6000 ns of samples (all the CPU time was
  // in row 1) = 16000 ns out of its delay and of its CPU time.
  ck_assert_int_eq(g->use[0].time, 1000000 - 16000);
  ck_assert_int_eq(g->cpu[0], 600000 - 16000);
  ck_assert_int_eq(g->use[1].time, 1000000);
  ck_assert_int_eq(g->cpu[1], 0);
  ck_assert_int_eq(g->work_overhead_ns, 16000);
  memstub_gen_free(g);
  memstub_trace_free(t);
  // Memory samples beyond the timer's (at allocator calls): 10 more at 400 ns.
  t = parse(
      "# memstub-trace 1\n"
      "# record.cost_ns_per_event: 10.0\n"
      "# record.samples: 4\n"
      "# record.cost_ns_per_sample: 1500.0\n"
      "# record.memory_samples: 14\n"
      "# record.cost_ns_per_memory_sample: 400.0\n"
      "time_ns,stack_bytes,heap_bytes,cpu_ns,calls_malloc_tiny,calls_free_tiny\n"
      "0,0,0,0,0,0\n"
      "1000000,0,0,300000,500,500\n"
      "2000000,0,0,600000,0,0\n");
  g = build(t, 1, 1);
  // 6000 + 4000 ns of samples, half in each row's CPU time; row 1 also the calls.
  ck_assert_int_eq(g->use[0].time, 1000000 - 10000 - 5000);
  ck_assert_int_eq(g->use[1].time, 1000000 - 5000);
  ck_assert_int_eq(g->work_overhead_ns, 20000);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

// Both header forms carry the work, compile alone and after memstub/stub.h,
// and hold the same arrays; with resident data too (the compact tag "ms4.").
START_TEST(test_header_forms) {
  char *dir = tu_mkdtemp();
  const char *cc = getenv("MEMSTUB_CC");
  char inc[4200], lib[4200];
  snprintf(inc, sizeof inc, "-I%s", tu_src("include"));
  snprintf(lib, sizeof lib, "%s/libmemstub_runtime.a", getenv("MEMSTUB_BINARY_DIR"));
  for (int res = 0; res < 2; res++) {
    const char *csv = trace_csv(
        dir, res ? "time_ns,stack_bytes,heap_bytes,rss_bytes,cpu_ns,churn_bytes,calls_malloc_tiny\n"
                   "0,0,0,0,0,0,0\n"
                   "1000,300,100,4096,500,64,2\n"
                   "2000,0,0,0,700,0,0\n"
                 : "time_ns,stack_bytes,heap_bytes,cpu_ns,churn_bytes,calls_malloc_tiny\n"
                   "0,0,0,0,0,0\n"
                   "1000,300,100,500,64,2\n"
                   "2000,0,0,700,0,0\n");
    memstub_trace *t;
    memstub_error err = {0};
    ck_assert_msg(memstub_trace_read(csv, &t, &err) == 0, "%s", err.msg);
    memstub_gen_options go;
    memstub_gen_options_init(&go);
    go.name = "wk";
    memstub_gen *g;
    ck_assert_int_eq(memstub_gen_build(t, &go, &g, &err), 0);
    char out[4200], out2[4200], prog[4200], exe[4200];
    snprintf(out, sizeof out, "%s/l.h", dir);
    snprintf(out2, sizeof out2, "%s/c.h", dir);
    snprintf(prog, sizeof prog, "%s/p.c", dir);
    snprintf(exe, sizeof exe, "%s/p", dir);
    ck_assert_msg(memstub_gen_emit(g, out, &err) == 0, "%s", err.msg);
    memstub_gen_emit_options eo = {.format = MEMSTUB_GEN_FORMAT_COMPACT};
    ck_assert_msg(memstub_gen_emit_ex(g, out2, &eo, NULL, &err) == 0, "%s", err.msg);
    char *got = tu_read_file(out);
    ck_assert_ptr_nonnull(strstr(got, "static const int64_t wk_memCpu[wk_NUMDATA] = {\n  500, 200,\n};"));
    ck_assert_ptr_nonnull(strstr(got, ".abi = MEMSTUB_STUB_ABI_WORK,"));
    ck_assert_ptr_nonnull(strstr(got, " * work:          700 ns of CPU to spin"));
    free(got);
    got = tu_read_file(out2);
    ck_assert_ptr_nonnull(strstr(got, res ? "\"ms4." : "\"ms3."));
    ck_assert_ptr_nonnull(strstr(got, "memstub_stub_decode_work("));
    free(got);
    for (int k = 0; k < 4; k++) {
      char text[8192];
      snprintf(text, sizeof text,
               "%s#include \"%s\"\n#include <stdio.h>\n"
               "int main(void) {\n"
               "  const struct memstub_stub *s = &wk_memStub;\n"
               "  printf(\"%%d %%lld|\", s->abi, (long long)s->ncalltab);\n"
               "  for (int i = 0; i < wk_NUMDATA; i++)\n"
               "    printf(\"%%lld %%lld %%lld %%lld %%lld|\", (long long)s->use[i].heapAlloc,\n"
               "           (long long)s->cpu[i], (long long)s->churn[i],\n"
               "           (long long)s->calltab[s->calls[i] * 20], (long long)(s->rss ? s->rss[i] : -9));\n"
               "  return 0;\n}\n",
               k & 1 ? "#include \"memstub/stub.h\"\n" : "", k & 2 ? out2 : out);
      tu_write_file(prog, text);
#if defined(MEMSTUB_TEST_SANITIZE)
      const char *san = "-fsanitize=" MEMSTUB_TEST_SANITIZE;
#else
      const char *san = "-Wall";
#endif
      char *ccargv[] = {(char *)(cc ? cc : "cc"), "-std=c11", "-Wall", "-Wextra", "-Werror", inc,
                        (char *)san, "-o", exe, prog, lib, NULL};
      if (!(k & 2)) ccargv[10] = NULL;
      tu_run c = tu_exec(dir, ccargv);
      ck_assert_msg(c.status == 0, "compile failed: %s", c.err);
      char *runargv[] = {exe, NULL};
      tu_run r = tu_exec(dir, runargv);
      // The growth's tiny malloc is the block realloc: one malloc left.
      // Its bytes are less the block's 100, none left: the malloc left asks
      // for the least, 1 byte, made and freed (2), not the class's 32.
      ck_assert_str_eq(r.out, res ? "3 2|100 500 2 1 4096|-100 200 0 0 0|"
                                  : "3 2|100 500 2 1 -9|-100 200 0 0 -9|");
      tu_run_free(&c);
      tu_run_free(&r);
    }
    memstub_gen_free(g);
    memstub_trace_free(t);
  }
  // Damaged compact data is refused as for the other layouts.
  struct memAlloc use[1];
  int64_t point[1], cpu[1], calls[1], churn[1], tab[20];
  ck_assert_int_eq(memstub_stub_decode_work("ms3.AAAAA", 9, 1, use, point, NULL, NULL, cpu, calls,
                                            churn, 0, tab), -EINVAL);
  ck_assert_int_eq(point[0], -1);
  ck_assert_int_eq(memstub_stub_decode_work("ms3.ACAAAAA", 11, 1, use, point, NULL, NULL, cpu,
                                            calls, churn, 0, tab), 0);
  ck_assert_int_eq(use[0].stackAlloc, 1);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Replay g measured; returns the replayed trace. */
static memstub_trace *replay(const memstub_gen *g, memstub_replay **out) {
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.measure = MEMSTUB_MEASURE_TRACE;
  memstub_error err = {0};
  memstub_replay *r = NULL;
  ck_assert_msg(memstub_replay_run(&g->stub, &o, &r, &err) == 0, "%s", err.msg);
  memstub_trace *t = NULL;
  ck_assert_msg(memstub_replay_trace(r, &t, &err) == 0, "%s", err.msg);
  *out = r;
  return t;
}

static int64_t col(const memstub_trace *t, size_t row, const char *name) {
  int c = memstub_trace_column(t, name);
  return c < 0 ? 0 : memstub_trace_extra_row(t, row)[c];
}

/* The calls' pre-compensation (issue 14 item 4): memstub_work_measure
 * measures what it is asked for; on a churn-heavy trace (rows every 300 us
 * with 300 calls each) the replay that ends each wait the calls' expected
 * cost early is not later than the one that makes them after the deadline:
 * the best of three median |late_ns| within 20 us of the other's, without
 * the rows the host delayed (the replays alternate, either first; the
 * figures are in bench/results/work-calls.md). */
static int64_t median_abs_late(const memstub_gen *g, int no_costs) {
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.measure = MEMSTUB_MEASURE_TRACE;
  o.no_call_costs = no_costs;
  memstub_error err = {0};
  memstub_replay *r = NULL;
  ck_assert_msg(memstub_replay_run(&g->stub, &o, &r, &err) == 0, "%s", err.msg);
  memstub_trace *t = NULL;
  ck_assert_msg(memstub_replay_trace(r, &t, &err) == 0, "%s", err.msg);
  int c = memstub_trace_column(t, "late_ns"), co = memstub_trace_column(t, "off_cpu_ns");
  ck_assert_int_ge(c, 0);
  int64_t *v = malloc(t->n * sizeof *v);
  size_t n = 0;
  // Without the rows the host delayed (late by more than 10 us, at least half
  // of it waiting for a CPU: compare's rule): a loaded host's, not the stub's.
  for (size_t i = 1; i < t->n; i++) {
    int64_t late = memstub_trace_extra_row(t, i)[c];
    int64_t off = co >= 0 ? memstub_trace_extra_row(t, i)[co] : -1;
    if (late > 10000 && off >= 0 && 2 * off >= late) continue;
    v[n++] = llabs(late);
  }
  if (n < 20) {  // a host this busy says nothing of the stub
    free(v);
    memstub_trace_free(t);
    memstub_replay_free(r);
    return -1;
  }
  for (size_t i = 1; i < n; i++)  // insertion sort: a few hundred values
    for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
      int64_t x = v[j];
      v[j] = v[j - 1];
      v[j - 1] = x;
    }
  int64_t m = v[n / 2];
  free(v);
  memstub_trace_free(t);
  memstub_replay_free(r);
  return m;
}

START_TEST(test_calls_precompensated) {
  double ns[MEMSTUB_WORK_CALLS], rate = 0;
  int64_t want[MEMSTUB_WORK_CALLS] = {0};
  want[MEMSTUB_CALL_MALLOC * 4 + 0] = want[MEMSTUB_CALL_REALLOC * 4 + 2] = 1;
  ck_assert_int_eq(memstub_work_measure(want, 3, ns, &rate), 0);
  ck_assert(ns[MEMSTUB_CALL_MALLOC * 4 + 0] > 0 && ns[MEMSTUB_CALL_REALLOC * 4 + 2] > 0);
  ck_assert(ns[MEMSTUB_CALL_FREE * 4 + 0] > 0);  // the mallocs' blocks freed
  ck_assert(ns[MEMSTUB_CALL_CALLOC * 4 + 0] == 0 && ns[MEMSTUB_CALL_MALLOC * 4 + 3] == 0);
  ck_assert(rate > 0);

  char *text = malloc(1 << 16);
  int n = snprintf(text, 1 << 16,
                   "time_ns,stack_bytes,heap_bytes,churn_bytes,calls_malloc_tiny,calls_free_tiny,"
                   "calls_calloc_small,calls_malloc_medium,calls_realloc_medium\n0,0,0,0,0,0,0,0,0\n");
  for (int i = 1; i < 300; i++)
    n += snprintf(text + n, (size_t)(1 << 16) - (size_t)n, "%d,0,%d,%d,100,100,50,50,1\n",
                  i * 300000, i % 2 ? 4000 : 0, 2 * (100 * 32 + 50 * 256 + 50 * 8192) + 4000);
  memstub_trace *t = parse(text);
  free(text);
  memstub_gen *g = build(t, 1, 1);
  int64_t comp = INT64_MAX, plain = INT64_MAX;
  // Three pairs, or up to eight while a host too busy leaves either side unmeasured.
  for (int k = 0; k < 8 && (k < 3 || comp == INT64_MAX || plain == INT64_MAX); k++) {
    int64_t a = median_abs_late(g, k % 2 ? 1 : 0), b = median_abs_late(g, k % 2 ? 0 : 1);
    if (k % 2) {
      int64_t x = a;
      a = b;
      b = x;
    }
    if (a >= 0 && a < comp) comp = a;
    if (b >= 0 && b < plain) plain = b;
  }
  // A host so busy that it delayed nearly every row of every replay (load 13
  // on the 2-core development VM did) says nothing of the stub: not judged;
  // nor do the sanitizers' allocators, with which the calls outlast the rows.
#if !defined(MEMSTUB_TEST_SANITIZE)
  // Nor does a replay held back by more than three rows' interval at its median
  // (9.7 and 8.4 ms under .ci/run's load once): its rows are behind, each late by
  // what the rows before it lost, not by its calls' timing.
  if (comp == INT64_MAX || plain == INT64_MAX)
    fprintf(stderr, "test_calls_precompensated: not judged: the host delayed nearly every row\n");
  else if (comp > 1000000 || plain > 1000000)
    fprintf(stderr,
            "test_calls_precompensated: not judged: the replays ran behind (median |late| %lld "
            "and %lld ns, rows every 300 us)\n",
            (long long)comp, (long long)plain);
  else
    ck_assert_msg(comp <= plain + 20000, "median |late| %lld ns compensated, %lld without",
                  (long long)comp, (long long)plain);
#endif
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

/* Churn interleaved with the net curve: every kind and class of call before
 * rows that grow and shrink the heap; at every original row the replay's
 * heap is what the same stub without the calls gives, and the calls made
 * are the ones asked for. */
START_TEST(test_churn_keeps_heap_exact) {
  char text[4096];
  int n = snprintf(text, sizeof text,
                   "time_ns,stack_bytes,heap_bytes,churn_bytes,calls_malloc_tiny,"
                   "calls_calloc_small,calls_realloc_medium,calls_memalign_small,"
                   "calls_malloc_large,calls_free_tiny\n0,0,0,0,0,0,0,0,0,0\n");
  static const int64_t heap[] = {1000, 40000, 300000, 200, 5000, 0, 64, 200000, 100};
  for (int i = 0; i < 9; i++)
    n += snprintf(text + n, sizeof text - (size_t)n, "%d,%d,%lld,%d,%d,%d,%d,%d,%d,%d\n",
                  (i + 1) * 2000000, (i % 3) * 1024, (long long)heap[i], 500000, 150, 20, 3, 5,
                  i % 2, 100);
  memstub_trace *t = parse(text);
  memstub_gen *g = build(t, 1, 1), *g0 = build(t, 1, 0);
  memstub_replay *r, *r0;
  memstub_trace *rt = replay(g, &r), *rt0 = replay(g0, &r0);
  ck_assert_int_eq(rt->n, t->n);
  ck_assert_int_eq(rt0->n, t->n);
  for (size_t i = 1; i < t->n; i++) {
#if !defined(MEMSTUB_TEST_SANITIZE)
    ck_assert_msg(rt->pts[i].heap_bytes == rt0->pts[i].heap_bytes,
                  "row %zu: heap %lld with the calls, %lld without", i,
                  (long long)rt->pts[i].heap_bytes, (long long)rt0->pts[i].heap_bytes);
#endif
    ck_assert_int_eq(rt->pts[i].stack_bytes, rt0->pts[i].stack_bytes);
    // The calls of the row, as generated (the block realloc stands for one
    // of a growing row's calls), and a free for every block.
    int64_t row = col(rt, i, "point");
    int64_t pt = -1;
    for (int64_t j = 0; j < g->stub.numdata && pt < 0; j++)
      if (g->point[j] == row) pt = j;
    ck_assert_int_ge(pt, 0);
    // The block's resizes count as reallocs of the bytes they move (work.c).
    int64_t resized[4] = {0}, moved = 0;
    for (int64_t j = pt; j < g->stub.numdata && g->point[j] == row; j++)
      if (g->use[j].heapAlloc) {
        int64_t d = g->use[j].heapAlloc < 0 ? -g->use[j].heapAlloc : g->use[j].heapAlloc;
        resized[memstub_work_class((uint64_t)d)]++;
        moved += d;
      }
    int64_t allocs = 0, reallocs = 0;
    static const char *const names[] = {MEMSTUB_WORK_CALL_COLUMNS};
    for (int k = 0; k < MEMSTUB_WORK_CALLS; k++) {
      if (k / 4 == MEMSTUB_CALL_FREE) continue;
      int64_t want = calls_of(g, pt, k / 4, k % 4);
      if (k / 4 == MEMSTUB_CALL_REALLOC) reallocs += want;
      if (k / 4 == MEMSTUB_CALL_REALLOC) want += resized[k % 4];
      ck_assert_msg(col(rt, i, names[k]) == want, "row %zu: %s %lld, want %lld", i, names[k],
                    (long long)col(rt, i, names[k]), (long long)want);
      int64_t want0 = k / 4 == MEMSTUB_CALL_REALLOC ? resized[k % 4] : 0;
      ck_assert_msg(col(rt0, i, names[k]) == want0, "row %zu without calls: %s %lld, want %lld",
                    i, names[k], (long long)col(rt0, i, names[k]), (long long)want0);
      if (k / 4 != MEMSTUB_CALL_REALLOC) allocs += want;
    }
    // A free for every block: the allocations', and the one the reallocs resize.
    int64_t frees = 0;
    for (int c = 0; c < 4; c++) frees += col(rt, i, names[MEMSTUB_CALL_FREE * 4 + c]);
    ck_assert_int_eq(frees, allocs + (reallocs > 0));
    /* The bytes moved are the row's churn_bytes, to the sizes' rounding, when
     * its calls can move them within their classes: not on the rows with a
     * large malloc (two of them move 256 KiB at least) that shrink the heap. */
    int64_t churn = col(rt, i, "churn_bytes");
    int over = i % 2 == 0 && heap[i - 1] < (i > 1 ? heap[i - 2] : 0);
    ck_assert_msg(churn > 495000 && (over || churn < 505000), "row %zu: churn %lld, want 500000",
                  i, (long long)churn);
    ck_assert_int_eq(col(rt0, i, "churn_bytes"), moved);
  }
  memstub_trace_free(rt);
  memstub_trace_free(rt0);
  memstub_replay_free(r);
  memstub_replay_free(r0);
  memstub_gen_free(g);
  memstub_gen_free(g0);
  memstub_trace_free(t);
}
END_TEST

/* The spin: the replay thread's CPU time follows the recorded cpu_ns, row
 * by row, never below it (the spin runs on the thread's CPU clock, so a busy
 * host makes it later, not shorter) and not much above: what the replay
 * spends besides (its deadline spins, the heap work, the measuring) comes out
 * of the next spin, so the excess does not grow with the rows (tolerances
 * for a loaded 2-core machine). */
/* The calls of a what-if on the heap are the stub's as recorded (issue 30
 * item 2): a growth by a large calloc beside tiny mallocs is the block's
 * resize at any --heap-scale (at 0.5 the half-size change once took a tiny
 * malloc instead, and the calloc stayed a call); the other calls keep their
 * bytes, and a call left with none asks for the least. */
START_TEST(test_whatif_keeps_calls) {
  memstub_trace *t = parse("# memstub-trace 1\n"
                           "time_ns,stack_bytes,heap_bytes,churn_bytes,calls_malloc_tiny,"
                           "calls_calloc_large,calls_free_large\n"
                           "0,0,0,0,0,0,0\n"
                           "1000000,0,1048576,1048896,10,1,0\n"
                           "2000000,0,1048576,0,0,0,0\n"
                           "3000000,0,0,1048576,0,0,1\n");
  int64_t per_kind[2][MEMSTUB_WORK_KINDS] = {{0}}, churn[2] = {0};
  for (int w = 0; w < 2; w++) {
    memstub_gen_options o;
    memstub_gen_options_init(&o);
    o.heap_scale = w ? 0.5 : 1;
    memstub_gen *g = NULL;
    memstub_error err = {0};
    ck_assert_msg(memstub_gen_build(t, &o, &g, &err) == 0, "%s", err.msg);
    for (int64_t i = 0; i < g->stub.numdata; i++)
      for (int k = 0; k < MEMSTUB_WORK_KINDS; k++)
        for (int c = 0; c < MEMSTUB_WORK_CLASSES; c++) per_kind[w][k] += calls_of(g, i, k, c);
    churn[w] = g->work_bytes;
    memstub_gen_free(g);
  }
  // The calloc and the free are the block's resizes; the ten mallocs stay,
  // moving the row's 320 bytes beyond the calloc's.
  ck_assert_int_eq(per_kind[0][MEMSTUB_CALL_CALLOC], 0);
  ck_assert_int_eq(per_kind[0][MEMSTUB_CALL_FREE], 0);
  ck_assert_int_eq(per_kind[0][MEMSTUB_CALL_MALLOC], 10);
  ck_assert_int_eq(churn[0], 320);
  for (int k = 0; k < MEMSTUB_WORK_KINDS; k++) ck_assert_int_eq(per_kind[1][k], per_kind[0][k]);
  ck_assert_int_eq(churn[1], churn[0]);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_spin_accuracy) {
  char text[4096];
  int n = snprintf(text, sizeof text, "time_ns,stack_bytes,heap_bytes,cpu_ns\n0,0,0,0\n");
  for (int i = 1; i <= 20; i++)
    n += snprintf(text + n, sizeof text - (size_t)n, "%d,0,%d,%d\n", i * 10000000, i * 100,
                  i * 3000000 + (i % 2) * 20000);
  memstub_trace *t = parse(text);
  memstub_gen *g = build(t, 1, 1);
  /* The CPU-time floor and its accounting: the work counted at a quarter
   * of the loop's rate takes a quarter of the time it stands for (at most:
   * a loaded host slows it, as it would the component), and the floor
   * spins on the CPU clock to the cumulative target (tests/test_work_units.c
   * tests the counted work itself). */
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.measure = MEMSTUB_MEASURE_TRACE;
  int64_t none[MEMSTUB_WORK_CALLS] = {0};
  double ns[MEMSTUB_WORK_CALLS], rate = 0;
  ck_assert_int_eq(memstub_work_measure(none, 1, ns, &rate), 0);  // the loop's rate alone
  o.work_rate = rate / 4;
  memstub_error err = {0};
  memstub_replay *r = NULL;
  ck_assert_msg(memstub_replay_run(&g->stub, &o, &r, &err) == 0, "%s", err.msg);
  memstub_trace *rt = NULL;
  ck_assert_msg(memstub_replay_trace(r, &rt, &err) == 0, "%s", err.msg);
  for (size_t i = 1; i < rt->n; i++) {
    int64_t want = col(t, i, "cpu_ns"), got = col(rt, i, "cpu_ns");
    if (getenv("MEMSTUB_TEST_VERBOSE"))
      fprintf(stderr, "row %zu: cpu %lld ns, want %lld\n", i, (long long)got, (long long)want);
    ck_assert_msg(got >= want, "row %zu: %lld ns of CPU, want %lld", i, (long long)got,
                  (long long)want);
    ck_assert_msg(got <= want + want / 20 + 1500000, "row %zu: %lld ns of CPU, want %lld", i,
                  (long long)got, (long long)want);
  }
  // And the replay keeps its time: the spin is inside the delays (online
  // timing may end the last row its learnt work early, never before the
  // previous row's deadline).
  ck_assert_int_ge(rt->pts[rt->n - 1].time_ns, 190 * MS);
  memstub_trace_free(rt);
  memstub_replay_free(r);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

// memstub gen --cpu-scale and --churn-scale.
START_TEST(test_cli_scales) {
  char *dir = tu_mkdtemp();
  const char *csv = trace_csv(dir,
                              "time_ns,stack_bytes,heap_bytes,cpu_ns,churn_bytes,calls_malloc_small\n"
                              "0,0,0,0,0,0\n"
                              "10000,0,0,6000,3000,10\n");
  tu_run r = tu_memstub(dir, "gen", csv, "--cpu-scale", "0.5", "--churn-scale", "2", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "memCpu[NUMDATA] = {\n  3000,\n};"));
  ck_assert_ptr_nonnull(strstr(r.out, "memChurn[NUMDATA] = {\n  6000,\n};"));
  ck_assert_ptr_nonnull(strstr(r.out, "[0].time = 7000,"));
  ck_assert_ptr_nonnull(strstr(r.out, "cpu x0.5, churn x2"));
  ck_assert_ptr_nonnull(strstr(r.out, "  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,\n"
                                      "  0, 20, 0, 0,"));
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", csv, "--cpu-scale", "-1", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "--cpu-scale"));
  tu_run_free(&r);
  // A scale whose calls or bytes do not fit 64 bits is refused, naming the
  // option and the row (it once rounded to INT64_MIN: "0 allocator calls").
  csv = trace_csv(dir, "time_ns,stack_bytes,heap_bytes,churn_bytes,calls_malloc_tiny,calls_free_tiny\n"
                       "0,0,0,0,0,0\n"
                       "10000,0,0,0,2,2\n");
  r = tu_memstub(dir, "gen", csv, "--churn-scale", "1e300", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "row 2: calls_malloc_tiny overflows 64 bits with --churn-scale 1e+300"),
                "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", csv, "--churn-scale", "4e18", NULL);  // each kind fits, not their sum
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "row 2: the sum of the calls_* columns overflows 64 bits with --churn-scale 4e+18"), "%s", r.err);
  tu_run_free(&r);
  csv = trace_csv(dir, "time_ns,stack_bytes,heap_bytes,churn_bytes,calls_malloc_tiny\n"
                       "0,0,0,0,0\n"
                       "10000,0,0,64,0\n"
                       "20000,0,0,64,0\n");
  r = tu_memstub(dir, "gen", csv, "--churn-scale", "1e17", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "row 3: churn_bytes overflows 64 bits with --churn-scale 1e+17"), "%s",
                r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", "--help", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "--cpu-scale"));
  ck_assert_ptr_nonnull(strstr(r.out, "--churn-scale"));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The sum of a column over the rows (0 without it).
static int64_t sum_col(const memstub_trace *t, const char *name) {
  int64_t v = 0;
  for (size_t i = 0; i < t->n; i++) v += col(t, i, name);
  return v;
}

/* The whole way: a program with known work (tests/record/rec_helper.c, mode
 * work: 1000 malloc(32)/free pairs, 30 ms asleep, 30 ms of CPU, 3
 * calloc(1, 200000)/free pairs) recorded, generated, built and replayed
 * measuring: the stub makes the same allocations and burns the same CPU. */
START_TEST(test_record_to_replay) {
  const char *helper = getenv("MEMSTUB_REC_HELPER");
  ck_assert_msg(helper != NULL, "MEMSTUB_REC_HELPER is not set (run the tests with ctest)");
  char *dir = tu_mkdtemp();
  tu_run r = tu_memstub(dir, "record", "-q", "-o", "w.csv", "--", helper, "work", NULL);
  ck_assert_msg(r.status == 0, "record: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", "w.csv", "-o", "w.h", NULL);
  ck_assert_msg(r.status == 0, "gen: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "build", "w.h", "-o", "w_stub", NULL);
  ck_assert_msg(r.status == 0, "build: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  char exe[4200], out[4200], orig[4200];
  snprintf(exe, sizeof exe, "%s/w_stub", dir);
  snprintf(out, sizeof out, "%s/w.rep.csv", dir);
  snprintf(orig, sizeof orig, "%s/w.csv", dir);
  char *argv[] = {exe, "--measure", out, NULL};
  r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "stub: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  // The work's memory share from the environment (issue 32): read strictly.
  char *plain[] = {exe, NULL};
  setenv("MEMSTUB_WORK_MEM_SHARE", "lots", 1);
  r = tu_exec(dir, plain);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "MEMSTUB_WORK_MEM_SHARE: expected a share from 0 to 1, found 'lots'"),
                "%s", r.err);
  tu_run_free(&r);
  setenv("MEMSTUB_WORK_MEM_SHARE", "0.5", 1);
  r = tu_exec(dir, plain);
  unsetenv("MEMSTUB_WORK_MEM_SHARE");
  ck_assert_msg(r.status == 0, "stub, share 0.5: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_trace *o = NULL, *p = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(orig, &o, &err) == 0, "%s", err.msg);
  ck_assert_msg(memstub_trace_read(out, &p, &err) == 0, "%s", err.msg);
  int64_t om = sum_col(o, "calls_malloc_tiny"), pm = sum_col(p, "calls_malloc_tiny");
  int64_t pc = sum_col(p, "calls_calloc_large"), pf = 0;
  static const char *const names[] = {MEMSTUB_WORK_CALL_COLUMNS};
  for (int c = 0; c < 4; c++) pf += sum_col(p, names[MEMSTUB_CALL_FREE * 4 + c]);
  // Mallocs: the recorded ones less those the heap block's realloc stands for
  // (one per row that changes the heap, a few here).
  ck_assert_msg(pm <= om && pm >= om - 10, "replayed %lld tiny mallocs of %lld", (long long)pm,
                (long long)om);
  /* Each large calloc is made by the stub, or its heap change is the heap
   * block's resize, counted as a large realloc (when the recorder's bucket
   * split the calloc and its free into two rows). */
  int64_t prl = sum_col(p, "calls_realloc_large");
  ck_assert_msg(pc <= 3 && pc + prl >= 3, "replayed %lld large callocs of 3 and %lld large reallocs",
                (long long)pc, (long long)prl);
  ck_assert_int_eq(pf, pm + pc);  // every block freed in its interval
  // CPU: the recorded thread's (less the recorder's cost) and the replay's
  // (its own waits included), within 10 % and 3 ms; above by what the
  // counted work took beyond its calibrated time (work as work, issue 32: a
  // machine busy with other builds slowed the loops, and the replay used
  // 42.4 ms of CPU for 32.8 recorded), which the replay's metadata says.
  int64_t oc = col(o, o->n - 1, "cpu_ns"), rc = col(p, p->n - 1, "cpu_ns");
  ck_assert_msg(oc >= 25 * MS, "recorded %lld ns of CPU", (long long)oc);
  const char *wk = memstub_trace_get_meta(p, "work");
  double counted = 0;
  long long ran = 0;
  ck_assert_msg(wk && sscanf(wk, "%lf ns counted, memory share %*f, run in %lld ns of CPU",
                             &counted, &ran) == 2,
                "work: %s", wk ? wk : "(none)");
  int64_t slower = ran > (long long)counted ? ran - (int64_t)counted : 0;
  ck_assert_msg(rc >= oc - oc / 10 - 3 * MS && rc <= oc + oc / 10 + 3 * MS + slower,
                "replayed %lld ns of CPU, recorded %lld (the counted work %.0f ns ran in %lld)",
                (long long)rc, (long long)oc, counted, ran);
  memstub_trace_free(o);
  memstub_trace_free(p);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* The calls of a stub as it counts them (issue 30 item 2): the built stub
 * and memstub replay of the same trace make and count the same calls kind
 * by kind, and so does a what-if on the heap (the calloc counts once
 * differed: 12 / 4 and 12 / 12). Twelve callocs: eight grow the heap beside
 * ten tiny mallocs (the block's resize stands for them), four are
 * temporaries freed in their row. */
START_TEST(test_calls_counted_alike) {
  char *dir = tu_mkdtemp();
  char text[8192];
  int n = snprintf(text, sizeof text,
                   "# memstub-trace 1\n"
                   "time_ns,stack_bytes,heap_bytes,churn_bytes,calls_malloc_tiny,"
                   "calls_calloc_small,calls_calloc_large,calls_free_small\n"
                   "0,0,0,0,0,0,0,0\n");
  int64_t heap = 0;
  for (int i = 1; i <= 12; i++) {
    int grow = i <= 8;
    heap += grow ? 1048576 : 0;
    n += snprintf(text + n, sizeof text - (size_t)n, "%d,0,%lld,%d,10,%d,%d,%d\n", i * 4000000,
                  (long long)heap, (grow ? 1048576 : 1024) + 320, grow ? 0 : 1, grow, grow ? 0 : 1);
  }
  const char *csv = trace_csv(dir, text);
  tu_run r = tu_memstub(dir, "gen", csv, "-o", "c.h", NULL);
  ck_assert_msg(r.status == 0, "gen: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "build", "c.h", "-o", "c_stub", NULL);
  ck_assert_msg(r.status == 0, "build: %s", r.err);
  tu_run_free(&r);
  char exe[4200], m[3][4200];
  snprintf(exe, sizeof exe, "%s/c_stub", dir);
  for (int k = 0; k < 3; k++) snprintf(m[k], sizeof m[k], "%s/m%d.csv", dir, k);
  char *argv[] = {exe, "--measure", m[0], NULL};
  r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "stub: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", csv, "--measure", m[1], NULL);
  ck_assert_msg(r.status == 0, "replay: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", csv, "--heap-scale", "0.5", "--measure", m[2], NULL);
  ck_assert_msg(r.status == 0, "replay: %s", r.err);
  tu_run_free(&r);
  static const char *const names[] = {MEMSTUB_WORK_CALL_COLUMNS};
  int64_t per_kind[3][MEMSTUB_WORK_KINDS] = {{0}};
  for (int k = 0; k < 3; k++) {
    memstub_trace *t = NULL;
    memstub_error err = {0};
    ck_assert_msg(memstub_trace_read(m[k], &t, &err) == 0, "%s", err.msg);
    for (int c = 0; c < MEMSTUB_WORK_CALLS; c++) per_kind[k][c / 4] += sum_col(t, names[c]);
    memstub_trace_free(t);
  }
  // The eight growths are reallocs of the block; the four temporaries callocs.
  ck_assert_int_eq(per_kind[0][MEMSTUB_CALL_CALLOC], 4);
  ck_assert_int_eq(per_kind[0][MEMSTUB_CALL_MALLOC], 120);
  ck_assert_int_eq(per_kind[0][MEMSTUB_CALL_REALLOC], 8);
  for (int k = 1; k < 3; k++)
    for (int j = 0; j < MEMSTUB_WORK_KINDS; j++)
      ck_assert_msg(per_kind[k][j] == per_kind[0][j], "%s: kind %d: %lld, the built stub's %lld",
                    k == 1 ? "replay" : "replay --heap-scale 0.5", j, (long long)per_kind[k][j],
                    (long long)per_kind[0][j]);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A shrink of the heap with no realloc to stand for is a realloc of the
 * stub's block that stands for a free: gen counts it, the stub says it
 * (header and data file alike), and compare counts it as the free it stands
 * for, so the allocating calls are the component's (python3's stub was
 * "allocating calls error 5.06 %" for 174 of them). */
START_TEST(test_block_frees_counted) {
  static const char text[] =
      "# memstub-trace 1\n"
      "time_ns,stack_bytes,heap_bytes,cpu_ns,churn_bytes,calls_malloc_medium,"
      "calls_realloc_medium,calls_free_medium,calls_free_tiny\n"
      "0,0,0,0,0,0,0,0,0\n"
      "2000000,0,4096,1000000,4096,1,0,0,0\n"     // grows: the malloc
      "4000000,0,0,2000000,4096,0,0,1,0\n"        // shrinks by a free: a block free
      "6000000,0,4096,3000000,4096,0,1,0,0\n"     // grows: the realloc
      "8000000,0,2048,4000000,2048,0,1,0,2\n"     // shrinks: the realloc, not a free
      "10000000,0,2048,5000000,0,0,0,0,0\n";
  memstub_trace *t = parse(text);
  memstub_gen *g = build(t, 1, 1);
  ck_assert_int_eq(g->work_block_frees, 1);
  ck_assert_int_eq(g->stub.block_frees, 1);
  memstub_gen_free(g);
  memstub_trace_free(t);
  char *dir = tu_mkdtemp();
  const char *csv = trace_csv(dir, text);
  tu_run r = tu_memstub(dir, "gen", csv, "--data", "t.dat", NULL);
  ck_assert_msg(r.status == 0, "gen: %s", r.err);
  tu_run_free(&r);
  for (int k = 0; k < 2; k++) {  // the trace's header, then the data file
    r = k ? tu_memstub(dir, "replay", "--data", "t.dat", "--measure", "m.csv", NULL)
          : tu_memstub(dir, "replay", csv, "--measure", "m.csv", NULL);
    ck_assert_msg(r.status == 0, "replay %d: %s", k, r.err);
    tu_run_free(&r);
    r = tu_memstub(dir, "compare", csv, "m.csv", NULL);
    ck_assert_msg(strstr(r.out, "allocating (malloc, calloc, realloc, memalign) original 3, "
                                "replayed 3 (+0.00%)") &&
                      strstr(r.out, "the stub made 4: 1 of its heap block's reallocs"),
                  "replay %d: %s", k, r.out);
    tu_run_free(&r);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("work");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_columns_round_trip);
  tcase_add_test(tc, test_gen_work_points);
  tcase_add_test(tc, test_block_frees_counted);
  tcase_add_test(tc, test_recorder_cost_taken_out);
  tcase_add_test(tc, test_header_forms);
  tcase_add_test(tc, test_churn_keeps_heap_exact);
  tcase_add_test(tc, test_calls_precompensated);
  tcase_add_test(tc, test_whatif_keeps_calls);
  tcase_add_test(tc, test_spin_accuracy);
  tcase_add_test(tc, test_cli_scales);
  tcase_add_test(tc, test_record_to_replay);
  tcase_add_test(tc, test_calls_counted_alike);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
