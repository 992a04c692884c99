// The class replay (docs/runtime.md, "Layers"): a stub's heap as one block
// resized by realloc to the replayed size at every point, with the resident
// target applied to it and the stub's own mapping. The engine reaches it
// through ms__rt_class_replay, its table of operations, chosen once per stub
// by ms__rt_replay_ops_for.
#include <stdint.h>

#include "internal.h"
#include "prim.h"

void ms__rt_replay_stop(ms__rt_ctx *c, int64_t x, int rc, int what, int64_t bytes) {
  c->failed = rc;
  c->failed_at = x;
  c->failed_what = what;
  c->failed_bytes = bytes;
}

/* In the replaying thread, before the baseline: the block (and, for a
 * replay that measures its heap, the tcache filled from scratch). */
static int class_prepare(ms__rt_ctx *c, void **scratch, size_t nscratch) {
  return ms__rt_heap_prepare(&c->heap, scratch, nscratch);
}

/* Point x, the first of a row of slot k that starts lead ns early: wait
 * until the resize's learnt time is left as well, resize the heap block for
 * the row's first point that changes it and
 * fault its new pages in (the heap part then only writes the new bytes
 * again, without faults), learn what that took. A failed resize is left for
 * the heap part, which reports it. */
static void resize_ahead(ms__rt_ctx *c, int64_t x, int k, int64_t lead) {
  int64_t ahead = lead + ms__rt_cost_pre(&c->cost, k);
  if (ahead > c->use[x].time) ahead = c->use[x].time;
  // The row's first point that changes the heap (the others in between,
  // inserted by stack normalisation, keep it): rows are measured at their
  // last point, so the order within a row does not show. Only this row's
  // points: the next row may follow with no delay (rows at one time, or an
  // interval the stub's timeline took to 0), and its change made here was
  // measured as this row's (perl's stub: a row 21,519 bytes over, heap
  // exact 95.4 % online, 100 % with --timing deadline).
  const int64_t *row = c->stub ? c->stub->point : NULL;
  int64_t j = x;
  while (j + 1 < c->n && j < x + MS__RT_COST_SCAN && !c->use[j].heapAlloc && !c->use[j + 1].time &&
         (!row || row[j + 1] == row[x]))
    j++;
  int64_t old = c->heap.size, size = old + c->use[j].heapAlloc;
  if (size < 0) size = 0;
  if (size == old) return;
  int64_t t = ms__rt_wait_deadline(c, x, ahead);
  if (ms__rt_heap_resize(&c->heap, size) < 0) return;
  // Its new pages faulted in too (the heap part writes them again, without
  // faults); with resident data the target decides what is touched, later.
  if (!c->res.rss && size > old) ms__rt_heap_touch(&c->heap, old, size);
  ms__rt_cost_learn_pre(&c->cost, k, ms__prim_now_ns() - t);
  c->cost.pre_x = j;
  c->cost.pre_old = old;
  c->cost.pre_rows++;
}

// The heap part of point x: resize the block, then write its new bytes.
static void heap_part(ms__rt_ctx *c, int64_t x) {
  int64_t old = c->heap.size;
  int64_t size = old + c->use[x].heapAlloc;  // no overflow: memstub_replay_check
  if (size < 0) size = 0;
  if (c->cost.pre_x == x) {  // resized ahead of the deadline (resize_ahead)
    old = c->cost.pre_old;
    size = c->heap.size;
    c->cost.pre_x = -1;
  } else if (size != old) {
    int rc = ms__rt_heap_resize(&c->heap, size);
    if (rc < 0) {
      ms__rt_replay_stop(c, x, rc, MS__RT_FAIL_HEAP, size);
      return;
    }
  }
  if (c->work.cpu) ms__rt_work_block(&c->work, c->wrec ? c->wrec + x * MS__RT_WORK_REC : NULL, old, size);
  if (c->rec && c->measure & MEMSTUB_MEASURE_CYCLES)
    c->rec[x].cyc_heap_alloc = ms__prim_cycles_begin();
  if (!c->res.rss) {
    if (size > old) ms__rt_heap_touch(&c->heap, old, size);
    return;
  }
  // Resident data: the mapped change, then touch or drop pages to the target.
  int rc = ms__rt_res_mapped(&c->res, c->res.mapped[x], c->page);
  if (rc < 0) {
    int64_t len = c->res.map_len + c->res.mapped[x];  // no overflow: memstub_replay_check
    ms__rt_replay_stop(c, x, rc, MS__RT_FAIL_MAPPED, len > 0 ? len : 0);
    return;
  }
  int64_t keep = 0;
  if ((rc = ms__rt_res_target(&c->res, &c->heap, c->res.rss[x], c->page, &keep)) < 0)
    ms__rt_replay_stop(c, x, rc, MS__RT_FAIL_RESIDENT, keep);
}

// After the replay, in the replaying thread: the mapping and the block go.
static void class_release(ms__rt_ctx *c) {
  ms__rt_res_release(&c->res);
  ms__rt_heap_release(&c->heap);
}

const ms__rt_replay_ops ms__rt_class_replay = {"class", class_prepare, resize_ahead, heap_part,
                                               class_release, NULL};

const ms__rt_replay_ops *ms__rt_replay_ops_for(const struct memstub_stub *s) {
  return ms__rt_stub_calls(s) ? &ms__rt_call_replay : &ms__rt_class_replay;
}
