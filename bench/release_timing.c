/* bench_release_timing: what holding a component's survivors after the
 * return costs an embedded stub (memstub gen --hold; runtime/release.c), and
 * how late the timer releases them.
 *
 * The stub is tests/fixtures/hold/produce.csv (a 3 ms region that leaves
 * 100, 200 and 300 kB alive), built in memory; its schedule here has ENTRIES
 * timed blocks of BYTES each, one every STEP ns after the return, plus the
 * fixture's never-freed 300 kB. Per call (RUNS calls, one at a time):
 *   - the hold's cost: memstub_stub_call_held's time minus memstub_stub_call's
 *     (the same replay without the hold), medians of RUNS each, interleaved;
 *   - each release's lateness: the moment memstub_release_held() first shows
 *     the block gone (polled every 20 us from this thread, which sleeps in
 *     between so the timer thread gets the lock) minus the return + its
 *     time; the return is taken after the call returns, a few us after the
 *     runtime's, so the figure is a little low, and the polling adds up to
 *     20 us plus a wake-up.
 * Writes Markdown to bench/results/release-timing.md (or -o FILE).
 *
 *   bench_release_timing [--runs N] [--entries N] [--step NS] [--bytes B] [-o FILE]
 *
 * Run by hand; never part of the test suite. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "ms_common.h"
#include "prim.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int64_t pct(int64_t *v, size_t n, double p) {
  if (!n) return -1;
  qsort(v, n, sizeof *v, cmp_i64);
  size_t i = (size_t)(p * (double)(n - 1) + 0.5);
  return v[i];
}

static void loadavg(char *buf, size_t cap) {
  FILE *f = fopen("/proc/loadavg", "r");
  buf[0] = '\0';
  if (f) {
    if (!fgets(buf, (int)cap, f)) buf[0] = '\0';
    fclose(f);
  }
  buf[strcspn(buf, " ")] = '\0';
}

int main(int argc, char **argv) {
  int64_t runs = 20, entries = 10, step = 20000000, bytes = 100000;
  const char *out = MEMSTUB_SOURCE_DIR "/bench/results/release-timing.md";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--entries") && i + 1 < argc)
      entries = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--step") && i + 1 < argc)
      step = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
      bytes = atoll(argv[++i]);
    else if (!strcmp(argv[i], "-o") && i + 1 < argc)
      out = argv[++i];
    else {
      fprintf(stderr, "usage: bench_release_timing [--runs N] [--entries N] [--step NS] "
                      "[--bytes B] [-o FILE]\n");
      return 2;
    }
  }
  if (runs < 1 || entries < 1 || entries > 1000 || step < 1 || bytes < 1) {
    fprintf(stderr, "bench_release_timing: bad numbers\n");
    return 2;
  }
  memstub_error err = {0};
  memstub_trace *t = NULL;
  memstub_gen *g = NULL;
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  if (memstub_trace_read(MEMSTUB_SOURCE_DIR "/tests/fixtures/hold/produce.csv", &t, &err) < 0 ||
      memstub_gen_build(t, &go, &g, &err) < 0) {
    fprintf(stderr, "bench_release_timing: %s\n", err.msg);
    return 1;
  }
  int64_t n = entries + 1;
  int64_t *after = calloc((size_t)n, sizeof *after), *size = calloc((size_t)n, sizeof *size);
  int64_t *late = calloc((size_t)(runs * entries), sizeof *late);
  int64_t *plain = calloc((size_t)runs, sizeof *plain), *held = calloc((size_t)runs, sizeof *held);
  if (!after || !size || !late || !plain || !held) return 1;
  for (int64_t k = 0; k < entries; k++) after[k] = (k + 1) * step, size[k] = bytes;
  after[entries] = -1, size[entries] = 300000;
  struct memstub_release rel = {MEMSTUB_RELEASE_ABI, MEMSTUB_RELEASE_TIMER, n, after, size};
  size_t nl = 0;
  for (int64_t r = 0; r < runs; r++) {
    int64_t t0 = ms__prim_now_ns();
    if (memstub_stub_call(&g->stub, &err) < 0) break;
    plain[r] = ms__prim_now_ns() - t0;
    int64_t base = memstub_release_held(&rel);
    t0 = ms__prim_now_ns();
    if (memstub_stub_call_held(&g->stub, &rel, &err) < 0) break;
    int64_t ret = ms__prim_now_ns();
    held[r] = ret - t0;
    // Held: base + entries x bytes + 300 kB; watch it fall block by block.
    int64_t seen = 0;
    while (seen < entries && ms__prim_now_ns() - ret < after[entries - 1] + 1000000000) {
      int64_t h = memstub_release_held(&rel) - base - 300000;
      int64_t gone = entries - h / bytes, now = ms__prim_now_ns();
      for (; seen < gone && seen < entries; seen++) late[nl++] = now - (ret + after[seen]);
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
  if (err.msg[0]) {
    fprintf(stderr, "bench_release_timing: %s\n", err.msg);
    return 1;
  }
  char load[64];
  loadavg(load, sizeof load);
  int64_t p_plain = pct(plain, (size_t)runs, 0.5), p_held = pct(held, (size_t)runs, 0.5);
  ms__afile af;
  if (ms__afile_open(&af, out, &err) < 0) {
    fprintf(stderr, "bench_release_timing: %s\n", err.msg);
    return 1;
  }
  FILE *f = af.f;
  fprintf(f, "# Survivors held after an embedded stub's return: cost and release lateness\n\n");
  fprintf(f, "`build/bench/bench_release_timing --runs %lld --entries %lld --step %lld --bytes %lld`"
             " (bench/release_timing.c): the stub of tests/fixtures/hold/produce.csv, %lld timed "
             "blocks of %lld bytes released every %.1f ms after the return, plus 300 kB never "
             "freed; %lld calls one at a time. Load average (1 min) at the end: %s.\n\n",
          (long long)runs, (long long)entries, (long long)step, (long long)bytes,
          (long long)entries, (long long)bytes, (double)step / 1e6, (long long)runs, load);
  fprintf(f, "| figure | median | p90 | max |\n|---|---|---|---|\n");
  int64_t pl90 = pct(plain, (size_t)runs, 0.9), plmax = pct(plain, (size_t)runs, 1.0);
  int64_t ph90 = pct(held, (size_t)runs, 0.9), phmax = pct(held, (size_t)runs, 1.0);
  fprintf(f, "| call without the hold (memstub_stub_call), us | %.1f | %.1f | %.1f |\n",
          (double)p_plain / 1e3, (double)pl90 / 1e3, (double)plmax / 1e3);
  fprintf(f, "| call with the hold (memstub_stub_call_held), us | %.1f | %.1f | %.1f |\n",
          (double)p_held / 1e3, (double)ph90 / 1e3, (double)phmax / 1e3);
  int64_t l50 = pct(late, nl, 0.5), l90 = pct(late, nl, 0.9), l99 = pct(late, nl, 0.99),
          lmax = pct(late, nl, 1.0);
  fprintf(f, "| release lateness (%zu releases), us | %.1f | %.1f (p99 %.1f) | %.1f |\n", nl,
          (double)l50 / 1e3, (double)l90 / 1e3, (double)l99 / 1e3, (double)lmax / 1e3);
  fprintf(f, "\nThe lateness includes the polling (every 20 us plus this thread's wake-up); "
             "figures from a shared, loaded 2-core VM are noisy: rerun on a quiet machine.\n");
  if (ms__afile_commit(&af, &err) < 0) {
    fprintf(stderr, "bench_release_timing: %s\n", err.msg);
    return 1;
  }
  printf("hold: %.1f us vs %.1f us without; release lateness p50 %.1f us, p99 %.1f us, max %.1f "
         "us (%zu releases); %s\n",
         (double)p_held / 1e3, (double)p_plain / 1e3, (double)l50 / 1e3, (double)l99 / 1e3,
         (double)lmax / 1e3, nl, out);
  memstub_gen_free(g);
  memstub_trace_free(t);
  free(after), free(size), free(late), free(plain), free(held);
  return 0;
}
