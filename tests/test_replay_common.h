/* tests/test_replay_common.h: the replay exactness criterion, shared by the
 * runtime's test suites. */
#ifndef MEMSTUB_TEST_REPLAY_COMMON_H
#define MEMSTUB_TEST_REPLAY_COMMON_H

#include <stdint.h>

#include "memstub/memalloc.h"
#include "memstub/trace.h"

// Slack of the criterion (issue 3): 16 bytes; a page for mmapped heap blocks.
#define RT_SLACK 16
// Heap rows at or above this replayed size may sit in an mmapped block.
#define RT_MMAP_MIN (128 * 1024 - 64)

typedef struct rt_fit {
  int64_t stack_offset;  // replay's constant stack offset, bytes
  int64_t frame;         // stack overhead per open frame, bytes
  int64_t heap_offset;   // replay's constant heap offset, bytes
  int64_t rows;          // rows checked
  int64_t max_depth;     // deepest row
  int64_t worst_stack;   // largest |deviation| found, bytes
  int64_t worst_heap;    // ... on rows held in the arena
} rt_fit;

/* Check a replayed trace against its original and the stub replayed: one row
 * per original row (the `point` column), time never before the target, and
 * (outside sanitizer builds) stack = trace + offset + depth * frame and
 * heap = trace + offset within RT_SLACK at every row, the offsets and the
 * frame overhead derived from the measurements. check_heap = 0 skips the
 * heap (an allocator mallinfo2 does not see). Fails the test otherwise. */
void rt_check_exact(const memstub_trace *orig, const struct memstub_stub *s,
                    const memstub_trace *rep, int check_heap, rt_fit *fit);

// Parse a trace from text (fails the test on error).
memstub_trace *rt_trace(const char *text);

#endif
