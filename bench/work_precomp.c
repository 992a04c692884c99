// bench_work_precomp: the lateness of a churn-heavy synthetic trace replayed
// with and without the pre-compensation of its allocator calls (issue 14
// item 4; docs/runtime.md, "Work"). Rows every --gap-us (200) us, each with
// --calls (400) allocator calls of several kinds and classes, half of them
// with a heap change; replayed --runs (5) times each way, alternating:
//   compensated    the default: each wait ends the calls' expected cost
//                  (built-in figures, the ratio learnt as it goes) early
//   uncompensated  no_call_costs = 1: the wait ends on the deadline, the
//                  calls after it
// Prints per run and pooled: p50, p90, p99 of late_ns over the rows, and
// without the rows the host delayed (compare's rule); and the calls' cost per
// row by memstub_work_measure's batches (a stub's calls cost less). Timing figures on a loaded host are noise:
// rerun on a quiet one.
//
//   bench_work_precomp [--rows N] [--gap-us US] [--calls N] [--runs N]
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "memstub/trace.h"
#include "memstub/work.h"

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int64_t pct(const int64_t *s, size_t n, int p) {
  size_t k = (p * n + 99) / 100;
  return s[k ? k - 1 : 0];
}

// One replay; appends each row's late_ns (row 0 left out) to late[*n], and
// those of the rows the host did not delay to own[*nown].
static int run(const memstub_gen *g, int comp, int64_t *late, size_t *n, int64_t *own,
               size_t *nown) {
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.measure = MEMSTUB_MEASURE_TRACE;
  o.no_call_costs = !comp;
  memstub_error err = {0};
  memstub_replay *r = NULL;
  memstub_trace *t = NULL;
  if (memstub_replay_run(&g->stub, &o, &r, &err) < 0 ||
      memstub_replay_trace(r, &t, &err) < 0) {
    fprintf(stderr, "bench_work_precomp: %s\n", err.msg);
    memstub_replay_free(r);
    return -1;
  }
  int c = memstub_trace_column(t, "late_ns"), co = memstub_trace_column(t, "off_cpu_ns");
  for (size_t i = 1; i < t->n; i++) {
    int64_t l = memstub_trace_extra_row(t, i)[c], off = co >= 0 ? memstub_trace_extra_row(t, i)[co] : -1;
    late[(*n)++] = l;
    // The rows the host delayed (late > 10 us, half of it or more off the CPU): compare's rule.
    if (!(l > 10000 && off >= 0 && 2 * off >= l)) own[(*nown)++] = l;
  }
  memstub_trace_free(t);
  memstub_replay_free(r);
  return 0;
}

int main(int argc, char **argv) {
  long rows = 2000, gap_us = 200, calls = 400, runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    long v = strtol(argv[i + 1], NULL, 10);
    if (strcmp(argv[i], "--rows") == 0) rows = v;
    else if (strcmp(argv[i], "--gap-us") == 0) gap_us = v;
    else if (strcmp(argv[i], "--calls") == 0) calls = v;
    else if (strcmp(argv[i], "--runs") == 0) runs = v;
    else {
      fprintf(stderr, "usage: %s [--rows N] [--gap-us US] [--calls N] [--runs N]\n", argv[0]);
      return 2;
    }
  }
  if (rows < 2 || gap_us < 1 || calls < 4 || runs < 1) return 2;
  // The trace: per row calls/4 tiny mallocs and as many frees, calls/8 small
  // callocs, calls/8 medium mallocs, calls/4 frees of those, a realloc;
  // heap +4000 on even rows, -4000 on odd ones.
  memstub_trace *t = memstub_trace_create();
  static const char *const cols[] = {"churn_bytes", "calls_malloc_tiny", "calls_calloc_small",
                                     "calls_malloc_medium", "calls_realloc_medium",
                                     "calls_free_tiny", "calls_free_small", "calls_free_medium"};
  for (size_t k = 0; k < sizeof cols / sizeof *cols; k++) memstub_trace_add_column(t, cols[k]);
  memstub_trace_append(t, 0, 0, 0);
  for (long i = 1; i < rows; i++) {
    memstub_trace_append(t, i * gap_us * 1000, 0, i % 2 ? 4000 : 0);
    int64_t *e = memstub_trace_extra_row(t, (size_t)i);
    int64_t v[] = {0, calls / 4, calls / 8, calls / 8, 1, calls / 4, calls / 8, calls / 8};
    v[0] = 2 * (v[1] * 32 + v[2] * 256 + v[3] * 8192) + 2 * 12288 + 4000;
    memcpy(e, v, sizeof v);
  }
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  memstub_gen *g = NULL;
  memstub_error err = {0};
  if (memstub_gen_build(t, &go, &g, &err) < 0) {
    fprintf(stderr, "bench_work_precomp: %s\n", err.msg);
    return 1;
  }
  double ns[MEMSTUB_WORK_CALLS];
  memstub_work_measure(NULL, 5, ns, NULL);
  double expect = 0;  // the row's calls at the measured costs
  static const int idx[] = {MEMSTUB_CALL_MALLOC * 4 + 0, MEMSTUB_CALL_CALLOC * 4 + 1,
                            MEMSTUB_CALL_MALLOC * 4 + 2, MEMSTUB_CALL_REALLOC * 4 + 2,
                            MEMSTUB_CALL_FREE * 4 + 0, MEMSTUB_CALL_FREE * 4 + 1,
                            MEMSTUB_CALL_FREE * 4 + 2};
  for (int k = 0; k < 7; k++) expect += ns[idx[k]] * (double)memstub_trace_extra_row(t, 1)[k + 1];
  printf("trace: %ld rows every %ld us, %ld calls a row (expected cost %.1f us a row)\n", rows,
         gap_us, calls, expect / 1000.0);
  size_t cap = (size_t)(rows * runs);
  int64_t *late[2] = {malloc(cap * sizeof(int64_t)), malloc(cap * sizeof(int64_t))};
  int64_t *own[2] = {malloc(cap * sizeof(int64_t)), malloc(cap * sizeof(int64_t))};
  size_t n[2] = {0, 0}, nown[2] = {0, 0};
  for (long r = 0; r < runs; r++)
    for (int j = 0; j < 2; j++) {
      int comp = (int)((r + j) % 2);  // which goes first alternates too
      size_t n0 = n[comp], o0 = nown[comp];
      if (run(g, comp, late[comp], &n[comp], own[comp], &nown[comp]) < 0) return 1;
      qsort(late[comp] + n0, n[comp] - n0, sizeof(int64_t), cmp64);
      qsort(own[comp] + o0, nown[comp] - o0, sizeof(int64_t), cmp64);
      printf("run %ld %-13s late p50 %8.1f us  p90 %8.1f us  p99 %8.1f us; without the host's "
             "%zu rows: p50 %6.1f us  p90 %8.1f us\n",
             r + 1, comp ? "compensated" : "uncompensated",
             pct(late[comp] + n0, n[comp] - n0, 50) / 1e3,
             pct(late[comp] + n0, n[comp] - n0, 90) / 1e3,
             pct(late[comp] + n0, n[comp] - n0, 99) / 1e3, (n[comp] - n0) - (nown[comp] - o0),
             nown[comp] > o0 ? pct(own[comp] + o0, nown[comp] - o0, 50) / 1e3 : 0.0,
             nown[comp] > o0 ? pct(own[comp] + o0, nown[comp] - o0, 90) / 1e3 : 0.0);
    }
  for (int comp = 1; comp >= 0; comp--) {
    qsort(late[comp], n[comp], sizeof(int64_t), cmp64);
    qsort(own[comp], nown[comp], sizeof(int64_t), cmp64);
    printf("all %-15s late p50 %8.1f us  p90 %8.1f us  p99 %8.1f us  (%zu rows); without the "
           "host's %zu: p50 %6.1f us  p90 %8.1f us  p99 %8.1f us\n",
           comp ? "compensated" : "uncompensated", pct(late[comp], n[comp], 50) / 1e3,
           pct(late[comp], n[comp], 90) / 1e3, pct(late[comp], n[comp], 99) / 1e3, n[comp],
           n[comp] - nown[comp], nown[comp] ? pct(own[comp], nown[comp], 50) / 1e3 : 0.0,
           nown[comp] ? pct(own[comp], nown[comp], 90) / 1e3 : 0.0,
           nown[comp] ? pct(own[comp], nown[comp], 99) / 1e3 : 0.0);
  }
  for (int k = 0; k < 2; k++) {
    free(late[k]);
    free(own[k]);
  }
  memstub_gen_free(g);
  memstub_trace_free(t);
  return 0;
}
