/* memstub/threads.h: stubs of traces with several threads (docs/formats.md
 * "Threads", docs/runtime.md "Threads").
 *
 * A multi-thread stub is one ordinary stub (struct memstub_stub, its own
 * memUse array) per original thread, plus a thread table and the
 * cross-thread handoffs. The runtime replays one thread per original thread
 * on a common clock: thread T starts start_ns after thread 0 (created by its
 * creator after the creator's point create_point, -1: before the creator's
 * first point; threads without a creator are created by the replay itself),
 * and is joined by its joiner after the joiner's point join_point (joiner -1:
 * joined at the stub's end). A handoff is a block of `bytes` that thread
 * `from` mallocs after its point alloc_point (-1: before its first point) and
 * publishes in its slot, and that thread `to` frees after its point
 * free_point, waiting for the slot if it is not published yet. */
#ifndef MEMSTUB_THREADS_H
#define MEMSTUB_THREADS_H

#include <stdint.h>

#include "memstub/error.h"
#include "memstub/runtime.h"
#include "memstub/stub.h"
#include "memstub/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A generated threads header (memstub_gen_threads_emit) defines the same
 * structures under the same guard, so it may come before this file. */
#ifndef MEMSTUB_STRUCT_THREADS
#define MEMSTUB_STRUCT_THREADS
struct memstub_thread_spec {
  int64_t start_ns;      // its start on the common clock, ns after thread 0's start
  int64_t creator;       // thread that creates it, -1 the replay (thread 0 always)
  int64_t create_point;  // after this point of the creator (-1: before its first point)
  int64_t joiner;        // thread that joins it, -1 the replay at the end
  int64_t join_point;    // after this point of the joiner
};

struct memstub_handoff {
  int64_t bytes;        // requested size of the block (> 0)
  int64_t from;         // thread that mallocs it
  int64_t alloc_point;  //   after this point of its own (-1 before its first point)
  int64_t alloc_row;    //   the row of from's stub whose change includes it
  int64_t to;           // thread that frees it
  int64_t free_point;   //   after this point of its own
  int64_t drop_row;     // the first of from's rows that no longer counts it: a row of its
                        //   stub, or (>= its stub's norig) a row after its exit that
                        //   lowers its heap, which the replayed trace makes up from the
                        //   free (memstub_threads_trace); INT64_MAX when none does
};

struct memstub_threads_stub {
  int64_t nthreads;
  const struct memstub_stub *const *stubs;  // [nthreads]
  const struct memstub_thread_spec *threads;  // [nthreads]
  int64_t nhandoffs;
  const struct memstub_handoff *handoffs;    // [nhandoffs], by from, then alloc_point
};
#endif
typedef struct memstub_thread_spec memstub_thread_spec;
typedef struct memstub_handoff memstub_handoff;
typedef struct memstub_threads_stub memstub_threads_stub;

/* Check a multi-thread stub: every thread's stub (memstub_replay_check with
 * o), thread 0 first with no creator, creators and joiners that exist and
 * points within their stubs, creations that happen before the created
 * thread's start and no cycle of creators, handoffs between two different
 * threads with points in range. 0 or -EINVAL/-ENOMEM with err set. */
int memstub_threads_check(const memstub_threads_stub *s, const memstub_replay_options *o,
                          memstub_error *err);

/* What happened in a replay, in the order it happened (times on the common
 * clock, ns after T0). */
enum { MEMSTUB_TEV_START = 1, MEMSTUB_TEV_EXIT = 2, MEMSTUB_TEV_JOIN = 3 };
typedef struct memstub_thread_event {
  int kind;       // MEMSTUB_TEV_*
  int64_t thread; // the thread that started, exited or joined
  int64_t peer;   // START: its creator (-1 the replay); JOIN: the joined thread
  int64_t at_ns;
} memstub_thread_event;

typedef struct memstub_handoff_done {
  long malloc_tid, free_tid;  // kernel thread ids of the threads that malloc'd and freed it
  int64_t usable;             // malloc_usable_size of the block
  int64_t wait_ns;            // how long the freeing thread waited for it (0: published before)
} memstub_handoff_done;

typedef struct memstub_threads_replay {
  const memstub_threads_stub *stub;
  int64_t nthreads;
  memstub_replay **thread;       // [nthreads]: each thread's replay, as memstub_replay_run's;
                                 //   with measuring, rec[].heap_bytes is the thread's own heap
                                 //   (its block's and its live handoffs' usable sizes)
  long *tid;                     // [nthreads] kernel thread ids of the replay threads
  memstub_handoff_done *handoff; // [nhandoffs]
  memstub_thread_event *events;  // [nevents]
  int64_t nevents;
  int64_t t0_ns;                 // the common clock's zero (CLOCK_MONOTONIC)
} memstub_threads_replay;

/* Replay s: one thread per original thread, each running the engine on its
 * own stack and heap block with deadlines from one common start. o as for
 * memstub_replay_run (progress is not called). 0 or a negative errno with
 * err set (a thread that cannot be created or whose heap could not be
 * prepared or resized names the thread). */
int memstub_threads_run(const memstub_threads_stub *s, const memstub_replay_options *o,
                        memstub_threads_replay **out, memstub_error *err);
void memstub_threads_replay_free(memstub_threads_replay *r);

/* The replayed trace of a measured thread replay: every thread's rows
 * (memstub_replay_trace's columns) merged by time, ties by thread, with a
 * `thread` column; heap_bytes is the row's thread's own heap. */
int memstub_threads_trace(const memstub_threads_replay *r, memstub_trace **out,
                          memstub_error *err);
/* memstub_threads_trace of r committed to m (memstub_measure_open in
 * memstub/runtime.h; nothing written when the trace cannot be made): 0, or
 * a negative errno with err set. Close m after. */
int memstub_measure_commit_threads(memstub_measure_file *m, const memstub_threads_replay *r,
                                   memstub_error *err);

/* A threads stub called as a function (memstub_add_stub of a trace with
 * several threads: memstub_NAME()): replays every thread of s as
 * memstub_threads_run does, but thread 0 on the calling thread (as
 * memstub_stub_call; unless another thread joins it), with the options memstub_stub_call takes from
 * the environment (MEMSTUB_TIMING, MEMSTUB_MARGIN_NS) and, with
 * MEMSTUB_MEASURE, every thread's rows (memstub_threads_trace) written to
 * one new file named after thread 0's stub (NAME_t0 for %n). 0, or a
 * negative errno with err set (err may be NULL), as memstub_stub_call. */
int memstub_threads_call(const memstub_threads_stub *s, memstub_error *err);

#ifdef __cplusplus
}
#endif
#endif
