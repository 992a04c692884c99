// Deterministic synthetic traces (see synth.h).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "synth.h"

// Spread raw delays so the last row lands exactly on duration_ns.
static void set_times(memstub_trace *t, const int64_t *delay, int64_t duration_ns) {
  double sum = 0;
  for (size_t i = 1; i < t->n; i++) sum += (double)delay[i];
  double f = sum > 0 ? (double)duration_ns / sum : 0;
  double acc = 0;
  t->pts[0].time_ns = 0;
  for (size_t i = 1; i < t->n; i++) {
    acc += (double)delay[i];
    t->pts[i].time_ns = (int64_t)(acc * f + 0.5);
  }
  t->pts[t->n - 1].time_ns = duration_ns;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The component-like trace: a sequence of episodes. Each climbs the stack in
 * frame-sized steps (LIFO, with calls returning to earlier totals), holds it
 * while the heap works, and unwinds; the heap follows slow waves whose peaks
 * cross the mmap threshold. */
static void synth_paper(memstub_trace *t, uint64_t *rs, int64_t *delay, int64_t max_stack,
                        int64_t max_heap) {
  int64_t frames[64], depth = 0, stack = 0;
  int64_t n = (int64_t)t->n;
  t->pts[0] = (memstub_point){0, 0, 0};
  delay[0] = 0;
  for (int64_t i = 1; i < n; i++) {
    // Heap: three waves over the trace, 0 -> peak -> low, with jitter.
    double phase = (double)i / (double)n * 3.0;
    double w = phase - (double)(int64_t)phase;  // 0..1 within a wave
    double shape = w < 0.6 ? w / 0.6 : (1.0 - w) / 0.4;
    int64_t peak = max_heap * (int64_t)(1 + (int64_t)phase) / 3;
    int64_t heap = (int64_t)(shape * (double)peak);
    heap = clamp(heap + ms__rand_range(rs, -2048, 2048), 0, max_heap);
    // Stack: push, pop or hold, as a call tree would.
    int64_t r = ms__rand_range(rs, 0, 99);
    if (r < 30 && depth < 64) {
      int64_t f = ms__rand_range(rs, 1, 128) * 32;
      if (stack + f <= max_stack) {
        frames[depth++] = f;
        stack += f;
      }
    } else if (r < 55 && depth > 0) {
      stack -= frames[--depth];
    } else if (r < 60) {
      while (depth > 0) stack -= frames[--depth];  // a deep return: the whole call tree unwinds
    } else if (r < 63 && depth > 0) {
      // Unwind two frames and call something else: the common non-LIFO-looking drop.
      stack -= frames[--depth];
      if (depth > 0) stack -= frames[--depth];
      int64_t f = ms__rand_range(rs, 1, 32) * 16;
      frames[depth++] = f;
      stack += f;
    }
    // Otherwise the stack holds: a constant-stack stretch.
    t->pts[i] = (memstub_point){0, stack, heap};
    // Delays of 0.2-4 ms, a few much longer (the component waiting).
    delay[i] = ms__rand_range(rs, 0, 99) < 3 ? ms__rand_range(rs, 8000, 20000)
                                              : ms__rand_range(rs, 200, 4000);
  }
  t->pts[n - 1].stack_bytes = 0;
  t->pts[n - 1].heap_bytes = 0;
}

static void synth_random(memstub_trace *t, uint64_t *rs, int64_t *delay, int64_t max_stack,
                         int64_t max_heap) {
  t->pts[0] = (memstub_point){0, ms__rand_range(rs, 0, max_stack), ms__rand_range(rs, 0, max_heap)};
  for (size_t i = 1; i < t->n; i++) {
    memstub_point p = t->pts[i - 1];
    if (ms__rand_range(rs, 0, 3) != 0) p.stack_bytes = ms__rand_range(rs, 0, max_stack);
    if (ms__rand_range(rs, 0, 3) != 0) p.heap_bytes = ms__rand_range(rs, 0, max_heap);
    t->pts[i] = p;
    delay[i] = ms__rand_range(rs, 0, 5) == 0 ? 0 : ms__rand_range(rs, 1, 1000);
  }
}

int ms__synth(const ms__synth_params *p, memstub_trace **out) {
  *out = NULL;
  if (p->rows < 2 || p->duration_ns < 0 || p->max_stack < 0 || p->max_heap < 0) return -EINVAL;
  memstub_trace *t = memstub_trace_create();
  int64_t *delay = malloc((size_t)p->rows * sizeof *delay);
  if (!t || !delay || memstub_trace_reserve(t, (size_t)p->rows) < 0) {
    free(delay);
    memstub_trace_free(t);
    return -ENOMEM;
  }
  t->n = (size_t)p->rows;
  uint64_t rs = p->seed * 0x9E3779B97F4A7C15ULL + 1;
  if (p->kind == MS__SYNTH_PAPER)
    synth_paper(t, &rs, delay, p->max_stack, p->max_heap);
  else
    synth_random(t, &rs, delay, p->max_stack, p->max_heap);
  set_times(t, delay, p->duration_ns);
  free(delay);
  char buf[160];
  snprintf(buf, sizeof buf, "synthetic %s, seed %llu, %lld rows",
           p->kind == MS__SYNTH_PAPER ? "component-like" : "random", (unsigned long long)p->seed,
           (long long)p->rows);
  if (memstub_trace_set_meta(t, "source", buf) < 0) {
    memstub_trace_free(t);
    return -ENOMEM;
  }
  *out = t;
  return 0;
}
