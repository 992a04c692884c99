/* memstub/work.h: the component's work between its memory changes
 * (docs/formats.md, "Work columns"): the trace columns that carry it and the
 * size classes of allocator calls, shared by the recorder, the generator and
 * the replay's --measure.
 *
 * A trace may have `cpu_ns` (the recorded thread's CPU time since the
 * component started, cumulative, like time_ns), `churn_bytes` (bytes the
 * allocator calls since the previous row moved) and `calls_KIND_CLASS` (the
 * allocator calls of one kind and size class since the previous row). Only
 * the call columns a trace has calls in are written; a missing one reads 0. */
#ifndef MEMSTUB_WORK_H
#define MEMSTUB_WORK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds: malloc; calloc; realloc (and reallocarray); free (of a block, not
 * free(NULL)); the memalign family (posix_memalign, aligned_alloc, memalign,
 * valloc, pvalloc). */
#define MEMSTUB_WORK_KINDS 5
/* Size classes of the bytes a call asks for (free: the freed block's
 * requested size): tiny <= 64 B, small <= 1 KiB, medium <= 128 KiB (glibc's
 * mmap threshold), large beyond. Powers of two, so that the class is a
 * table lookup on the bit length (the recorder does it at every call). */
#define MEMSTUB_WORK_CLASSES 4
#define MEMSTUB_WORK_CALLS (MEMSTUB_WORK_KINDS * MEMSTUB_WORK_CLASSES)
#define MEMSTUB_WORK_TINY_MAX 64
#define MEMSTUB_WORK_SMALL_MAX 1024
#define MEMSTUB_WORK_MEDIUM_MAX (128 * 1024)

enum { MEMSTUB_CALL_MALLOC, MEMSTUB_CALL_CALLOC, MEMSTUB_CALL_REALLOC, MEMSTUB_CALL_FREE,
       MEMSTUB_CALL_MEMALIGN };

/* The call columns in their order, kind-major: index kind * 4 + class. */
#define MEMSTUB_WORK_CALL_COLUMNS                                                          \
  "calls_malloc_tiny", "calls_malloc_small", "calls_malloc_medium", "calls_malloc_large",  \
      "calls_calloc_tiny", "calls_calloc_small", "calls_calloc_medium",                    \
      "calls_calloc_large", "calls_realloc_tiny", "calls_realloc_small",                   \
      "calls_realloc_medium", "calls_realloc_large", "calls_free_tiny", "calls_free_small", \
      "calls_free_medium", "calls_free_large", "calls_memalign_tiny",                      \
      "calls_memalign_small", "calls_memalign_medium", "calls_memalign_large"
#define MEMSTUB_WORK_CPU_COLUMN "cpu_ns"
/* The thread's time runnable but waiting for a CPU since its start (the
 * kernel's schedstat run_delay), ns: the part of its off-CPU time that was
 * not its own waiting (docs/formats.md). */
#define MEMSTUB_WORK_RUN_DELAY_COLUMN "run_delay_ns"
#define MEMSTUB_WORK_BYTES_COLUMN "churn_bytes"
/* A replayed trace's metadata key: how many of the stub's heap block
 * resizes, counted as reallocs in its calls_* columns, stand for a recorded
 * free (struct memstub_stub's block_frees; the class replay, docs/runtime.md
 * "Work"); its value starts with the count. memstub compare counts them as
 * the frees they stand for. */
#define MEMSTUB_WORK_BLOCK_FREES_META "block_frees"

/* The heap block sizes the cost of a memory touch is known at (bytes): a
 * touch of a block between two of them costs the log-interpolation of theirs. */
#define MEMSTUB_WORK_TOUCH_SIZES 5
#define MEMSTUB_WORK_TOUCH_BYTES \
  {(int64_t)256 << 10, (int64_t)1 << 20, (int64_t)4 << 20, (int64_t)16 << 20, (int64_t)64 << 20}
#define MEMSTUB_WORK_TOUCH_KEYS "touch_256k_ns", "touch_1m_ns", "touch_4m_ns", "touch_16m_ns", \
                                "touch_64m_ns"

/* The size class of a call that asks for bytes (0 counts as tiny, and so
 * does anything beyond 2^63, which no allocation can be). */
static inline int memstub_work_class(uint64_t bytes) {
  // By the bit length of bytes - 1: <= 6 tiny, <= 10 small, <= 17 medium.
  static const unsigned char cls[65] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
                                        2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
                                        3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
                                        3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0};
  return cls[64 - __builtin_clzll((bytes - 1) | 1)];
}

/* The sizes a stub's calls of each class ask for (runtime/work.c): at
 * least MEMSTUB_WORK_LO[c] and at most MEMSTUB_WORK_HI[c] bytes (large at
 * most 64 MiB), the representative MEMSTUB_WORK_REP[c] scaled to the row's
 * churn bytes. */
#define MEMSTUB_WORK_REP {32, 256, 8192, 256 * 1024}
#define MEMSTUB_WORK_LO {1, MEMSTUB_WORK_TINY_MAX + 1, MEMSTUB_WORK_SMALL_MAX + 1, \
                         MEMSTUB_WORK_MEDIUM_MAX + 1}
#define MEMSTUB_WORK_HI {MEMSTUB_WORK_TINY_MAX, MEMSTUB_WORK_SMALL_MAX, MEMSTUB_WORK_MEDIUM_MAX, \
                         (int64_t)64 << 20}

/* The bytes a stub's calls of vector v (MEMSTUB_WORK_CALLS counts) move
 * when class c asks for sz[c] bytes (docs/runtime.md, "Work"): every
 * allocation its size twice (made, then freed), every realloc its new size,
 * and the one block the reallocs resize, freed at the last one's size. The
 * generator and the runtime share it, so the churn the generator plans is
 * the churn the replay makes. */
static inline double memstub_work_bytes(const int64_t *v, const int64_t *sz) {
  double b = 0;
  int last = -1;
  for (int c = 0; c < MEMSTUB_WORK_CLASSES; c++) {
    // In double: counts near 2^62 (a --churn-scale the generator then refuses) overflow int64.
    double allocs = (double)v[MEMSTUB_CALL_MALLOC * MEMSTUB_WORK_CLASSES + c] +
                    (double)v[MEMSTUB_CALL_CALLOC * MEMSTUB_WORK_CLASSES + c] +
                    (double)v[MEMSTUB_CALL_MEMALIGN * MEMSTUB_WORK_CLASSES + c];
    int64_t re = v[MEMSTUB_CALL_REALLOC * MEMSTUB_WORK_CLASSES + c];
    b += (2 * allocs + (double)re) * (double)sz[c];
    if (re > 0) last = c;
  }
  return last >= 0 ? b + (double)sz[last] : b;
}

#ifdef __cplusplus
}
#endif
#endif
