/* traces/synth.h: deterministic synthetic traces, for the bundled samples,
 * property tests and benchmarks. Not installed. */
#ifndef MEMSTUB_TRACES_SYNTH_H
#define MEMSTUB_TRACES_SYNTH_H

#include <stdint.h>

#include "memstub/trace.h"

typedef enum ms__synth_kind {
  /* A component-like trace: rising and falling stack edges (LIFO-shaped),
   * constant-stack stretches with heap activity, a heap that grows across
   * the 128 KiB mmap threshold and falls back, delays of 0.2-4 ms. */
  MS__SYNTH_PAPER,
  /* Every row moves the stack anywhere in [0, max_stack] and the heap
   * anywhere in [0, max_heap], with some rows unchanged: the worst case for
   * stack normalisation. */
  MS__SYNTH_RANDOM,
} ms__synth_kind;

typedef struct ms__synth_params {
  ms__synth_kind kind;
  uint64_t seed;
  int64_t rows;         // rows including the entry row (>= 2)
  int64_t duration_ns;  // time of the last row
  int64_t max_stack;    // bytes
  int64_t max_heap;     // bytes
} ms__synth_params;

// xorshift64*: the generator every synthetic trace and test draws from.
static inline uint64_t ms__rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}
// Uniform in [lo, hi] (pre: lo <= hi).
static inline int64_t ms__rand_range(uint64_t *s, int64_t lo, int64_t hi) {
  return lo + (int64_t)(ms__rand(s) % (uint64_t)(hi - lo + 1));
}

/* Make a trace. 0, -EINVAL (bad parameters) or -ENOMEM. */
int ms__synth(const ms__synth_params *p, memstub_trace **out);

#endif
