/* runtime/internal.h: the replay engine's private pieces. */
#ifndef MEMSTUB_RUNTIME_INTERNAL_H
#define MEMSTUB_RUNTIME_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "memstub/runtime.h"
#include "ms_common.h"
#include "ms_runtime.h"

/* ---- the heap block (heap.c) ------------------------------------------- */

// Bytes the block holds beyond the replayed size, so glibc's 32-byte minimum
// chunk never binds and its 16-byte rounding is centred (docs/runtime.md).
#define MS__RT_HEAP_PAD 16

typedef struct ms__rt_heap {
  char *block;         // never NULL once prepared: realloc(p, 0) would free it
  int64_t size;        // replayed size; the block holds size + MS__RT_HEAP_PAD bytes
  size_t usable;       // malloc_usable_size(block), kept as the block changes
  int visible;         // mallinfo2 sees this allocator
  int tcache;          // MEMSTUB_TCACHE_*
  int64_t fixups, stuck;  // 16-byte fix-ups, and those that failed
  int64_t unmaps;         // moves of a shrunken mmapped block back to the arena
  int64_t trims;          // mmapped blocks made a page smaller (see heap.c)
} ms__rt_heap;

/* Prepare the calling thread's heap before the baseline: allocate the block,
 * see whether mallinfo2 sees the allocator, and fill every tcache bin so that
 * later frees bypass the tcache. scratch holds nscratch pointers.
 * 0 or -ENOMEM. */
int ms__rt_heap_prepare(ms__rt_heap *h, void **scratch, size_t nscratch);
// Heap in use as mallinfo2 sees it: uordblks + hblkhd.
int64_t ms__rt_heap_inuse(void);
/* Resize the block to size (>= 0) bytes of replayed heap, then correct a
 * chunk glibc left 16 bytes too large. 0 or -ENOMEM (the block stays as it
 * was). Touches nothing: the caller writes the new bytes. */
int ms__rt_heap_resize(ms__rt_heap *h, int64_t size);
// Write every new page of [from, to) and the last byte (bytes of the block).
void ms__rt_heap_touch(ms__rt_heap *h, int64_t from, int64_t to);
// malloc_usable_size of the block.
int64_t ms__rt_heap_usable(const ms__rt_heap *h);
void ms__rt_heap_release(ms__rt_heap *h);

/* ---- the engine (engine.c) --------------------------------------------- */

typedef struct ms__rt_ctx {
  // input
  const struct memAlloc *use;
  int64_t n;
  int timing;
  unsigned measure;
  int adaptive;
  int64_t margin;           // current margin, ns
  memstub_replay_record *rec;  // [n] or NULL
  long page;
  int64_t alloca_bias;
  // state
  ms__rt_heap heap;
  uintptr_t entry_sp;
  int64_t t0, deadline;     // absolute T0; scheduled time of the current point, relative
  int64_t end;              // absolute end of the replay
  int64_t lat_q;            // adaptive margin: estimated 98th percentile of wake-up lateness
  int64_t sleeps, late_wakeups;
  int64_t begun;            // points begun, for progress (written with __atomic_store_n)
  int64_t heap_base, faults_base;
  int failed;               // a negative errno once a heap resize failed
  int64_t failed_at;        // ... at this point
  memstub_replay_record entry;
} ms__rt_ctx;

/* Run the replay in the calling thread (which must have the stack): sets the
 * timer slack, takes the baseline, replays every point. c->failed says
 * whether it stopped early. */
void ms__rt_engine_run(ms__rt_ctx *c);
/* Bytes an alloca(k) moves the stack pointer beyond round16(k), found once
 * with a probe compiled like the engine; 0 when the probe is inconclusive. */
int64_t ms__rt_alloca_bias(void);

/* The adaptive deadline margin, ns (docs/runtime.md has the measurements
 * behind these): it starts at INIT, follows the 98th percentile of the
 * wake-up lateness in steps of STEP (49 STEPs up), plus SLACK, and stays
 * within [MIN, MAX]. MAX is low on purpose: on a loaded machine a longer
 * spin gets the spinning thread preempted, for milliseconds. */
#define MS__RT_MARGIN_INIT MEMSTUB_MARGIN_DEFAULT
#define MS__RT_MARGIN_STEP 500
#define MS__RT_MARGIN_SLACK 10000
#define MS__RT_MARGIN_MIN 20000
#define MS__RT_MARGIN_MAX 200000

#endif
