// libFuzzer harness: memstub gen's what-if options (--time-scale,
// --heap-scale, --stack-scale, --rss-scale, --mapped-scale, --cpu-scale,
// --churn-scale) from fuzzed strings, as the command parses them
// (ms_cli_double: ms__parse_double), then memstub_gen_build on a small trace
// with the columns they scale (rss, mapped, CPU, the calls and their bytes).
//
// The input is up to seven lines, one option's argument each (a missing
// one is 1). Every string is refused by the number parser or is a finite
// number that prints and parses back to itself; every build is refused
// with -EINVAL naming the option (or the row and column it overflowed), or
// gives a stub that memstub_stub_check accepts, whose heap and stack are the
// trace's scaled and rounded, and whose work counts are never negative.
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "memstub/gen.h"
#include "memstub/work.h"
#include "ms_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const opts[7] = {"--time-scale",   "--heap-scale", "--stack-scale",
                                    "--rss-scale",    "--mapped-scale", "--cpu-scale",
                                    "--churn-scale"};

/* A trace with the columns the options scale: resident, mapped, CPU, and
 * the calls' (churn_bytes and four calls_* columns, --churn-scale's). */
static memstub_trace *trace(void) {
  memstub_trace *t = memstub_trace_create();
  FUZZ_ASSERT(t, "trace");
  static const char *const cols[] = {"rss_bytes",           "mapped_bytes",
                                     MEMSTUB_WORK_CPU_COLUMN, MEMSTUB_WORK_BYTES_COLUMN,
                                     "calls_malloc_tiny",   "calls_free_tiny",
                                     "calls_realloc_small", "calls_malloc_large"};
  enum { NCOLS = sizeof cols / sizeof cols[0] };
  for (size_t k = 0; k < NCOLS; k++) FUZZ_ASSERT(memstub_trace_add_column(t, cols[k]) >= 0, "column");
  // time, stack, heap, then the columns above
  static const int64_t rows[][3 + NCOLS] = {
      {0, 1000, 0, 40960, 81920, 0, 0, 0, 0, 0, 0},
      {100000, 5000, 4096, 49152, 90112, 50000, 5000, 40, 38, 1, 0},
      {250000, 2000, 65536, 122880, 155648, 120000, 70000, 10, 12, 2, 0},
      {400000, 1000, 1024, 53248, 90112, 300000, 300, 3, 5, 0, 0},
      {1000000, 3000, 1000000, 1040384, 1122304, 800000, 1200000, 5, 5, 1, 3}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    FUZZ_ASSERT(memstub_trace_append(t, rows[i][0], rows[i][1], rows[i][2]) == 0, "append");
    memcpy(memstub_trace_extra_row(t, i), &rows[i][3], NCOLS * sizeof(int64_t));
  }
  return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  double v[7] = {1, 1, 1, 1, 1, 1, 1};
  const char *p = (const char *)data, *e = p + size;
  for (int k = 0; k < 7 && p < e; k++) {
    const char *nl = memchr(p, '\n', (size_t)(e - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(e - p);
    char arg[256];
    if (n >= sizeof arg) return 0;
    memcpy(arg, p, n);
    arg[n] = '\0';
    p = nl ? nl + 1 : e;
    if (memchr(arg, '\0', n)) return 0;  // an argument vector holds no NUL
    if (ms__parse_double(arg, &v[k]) < 0) return 0;  // "expected a number": refused
    FUZZ_ASSERT(isfinite(v[k]), "'%s' parsed to %g", arg, v[k]);
    char back[64];
    double w;
    snprintf(back, sizeof back, "%.17g", v[k]);
    FUZZ_ASSERT(ms__parse_double(back, &w) == 0 && w == v[k], "'%s' -> %s", arg, back);
  }
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.time_scale = v[0], o.heap_scale = v[1], o.stack_scale = v[2], o.rss_scale = v[3];
  o.mapped_scale = v[4], o.cpu_scale = v[5], o.churn_scale = v[6];
  memstub_trace *t = trace();
  memstub_gen *g = NULL;
  memstub_error err = {0};
  int rc = memstub_gen_build(t, &o, &g, &err);
  if (rc < 0) {
    fuzz_check_refusal(rc, &err);
    FUZZ_ASSERT(g == NULL, "a refusal left a result");
    int named = 0;
    for (int k = 0; k < 7; k++) named |= strstr(err.msg, opts[k]) != NULL;
    FUZZ_ASSERT(rc == -ENOMEM || named, "no option named: %s", err.msg);
    memstub_trace_free(t);
    return 0;
  }
  FUZZ_ASSERT(memstub_stub_check(&g->stub, &err) == 0, "stub: %s", err.msg);
  FUZZ_ASSERT(g->work_cpu_ns >= 0 && g->work_calls >= 0 && g->work_bytes >= 0,
              "work: cpu %lld calls %lld bytes %lld", (long long)g->work_cpu_ns,
              (long long)g->work_calls, (long long)g->work_bytes);
  for (int64_t i = 0; g->churn && i < g->stub.numdata; i++)
    FUZZ_ASSERT(g->churn[i] >= 0 && g->cpu[i] >= 0, "point %lld work", (long long)i);
  for (int64_t i = 0; g->calltab && i < g->ncalltab * MEMSTUB_WORK_CALLS; i++)
    FUZZ_ASSERT(g->calltab[i] >= 0, "call table entry %lld: %lld", (long long)i,
                (long long)g->calltab[i]);
  // The heap at the end: the trace's last heap scaled, above the smallest.
  FUZZ_ASSERT(g->final_heap == llround(1000000 * v[1]), "final heap %lld, scale %g",
              (long long)g->final_heap, v[1]);
  memstub_gen_free(g);
  memstub_trace_free(t);
  return 0;
}
