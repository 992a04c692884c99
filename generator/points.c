// The stub's points as the generator builds them: appending one, deriving the
// descriptor's figures from them, and the check they must pass (the
// runtime's, memstub_stub_check).
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

int ms__gen_append(memstub_gen *g, int64_t time, int64_t stack, int64_t heap, int64_t point) {
  size_t n = (size_t)g->stub.numdata;
  if (n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 256;
    struct memAlloc *u = realloc(g->use, cap * sizeof *u);
    if (!u) return -ENOMEM;
    g->use = u;
    int64_t *p = realloc(g->point, cap * sizeof *p);
    if (!p) return -ENOMEM;
    g->point = p;
    g->cap = cap;
  }
  g->use[n] = (struct memAlloc){.time = time, .stackAlloc = stack, .heapAlloc = heap};
  g->point[n] = point;
  g->stub.numdata++;
  return 0;
}

void ms__gen_finish(memstub_gen *g, const ms__targets *tg) {
  struct memstub_stub *s = &g->stub;
  int64_t depth = 0, stack = 0, heap = 0, dur = 0;
  g->pushes = g->pops = g->constants = g->heap_up = g->heap_down = 0;
  s->max_depth = s->peak_stack = s->peak_heap = 0;
  for (int64_t i = 0; i < s->numdata; i++) {
    const struct memAlloc *u = &g->use[i];
    dur += u->time;
    if (u->stackAlloc > 0) {
      g->pushes++;
      if (++depth > s->max_depth) s->max_depth = depth;
    } else if (u->stackAlloc < 0) {
      g->pops++;
      depth--;
    } else {
      g->constants++;
    }
    stack += u->stackAlloc;
    heap += u->heapAlloc;
    // Totals moved, for the provenance: they may add up beyond 64 bits, so saturate.
    if (u->heapAlloc > 0 && ms__add_i64(g->heap_up, u->heapAlloc, &g->heap_up) < 0)
      g->heap_up = INT64_MAX;
    if (u->heapAlloc < 0 && ms__add_i64(g->heap_down, -u->heapAlloc, &g->heap_down) < 0)
      g->heap_down = INT64_MAX;
    if (stack > s->peak_stack) s->peak_stack = stack;
    if (heap > s->peak_heap) s->peak_heap = heap;
  }
  g->final_stack = stack;
  g->final_heap = heap;
  s->abi = MEMSTUB_STUB_ABI;
  s->name = g->name;
  s->use = g->use;
  s->point = g->point;
  s->norig = (int64_t)tg->n;
  s->time0_ns = tg->time0;
  s->stack_base = tg->stack_base;
  s->heap_base = tg->heap_base;
  s->duration_ns = dur;
  s->inserted = s->numdata - (int64_t)(tg->n - 1);
  s->source = g->source;
  s->transforms = g->transforms;
  s->calibration = g->calibration;
}

int memstub_gen_check(const struct memstub_stub *s, memstub_error *err) {
  return memstub_stub_check(s, err);
}

/* A recorder reads rss_bytes when the heap grows and at its sampler's tick,
 * not when it falls: a row whose heap fell carries the reading from before
 * the free, and the fall of the resident memory shows only at the next
 * reading. When that next reading (the next row whose rss differs, or whose
 * heap grew by a page or more: the recorder read it then) comes
 * within MS__GEN_RSS_STALE_NS and is lower, the rows from the heap's fall on
 * get the rss the fall explains: the earlier reading minus what the heap
 * fell since, never below the next reading. (A fall the next reading does
 * not confirm keeps its rss: glibc's arena keeps freed pages.) */
void ms__gen_rss_settle(const memstub_trace *t, int64_t *rss) {
  size_t next = 0;  // the next reading found for the run of rows before it
  for (size_t i = 1; i < t->n; i++) {
    if (t->pts[i].heap_bytes >= t->pts[i - 1].heap_bytes || rss[i] != rss[i - 1]) continue;
    // The next reading: a differing one, or a fresh equal one (the heap
    // grew a page or more: the recorder read it then), which confirms. A
    // row before the last one found has the same (linear in all).
    size_t j = i < next ? next : i + 1;
    while (j < t->n && rss[j] == rss[i] && t->pts[j].heap_bytes < t->pts[j - 1].heap_bytes + 4096) j++;
    next = j;
    if (j == t->n || rss[j] >= rss[i] || t->pts[j].time_ns - t->pts[i].time_ns > MS__GEN_RSS_STALE_NS)
      continue;
    int64_t before = t->pts[i - 1].heap_bytes, lo = before, was = rss[i];
    for (size_t k = i; k < j; k++) {
      if (t->pts[k].heap_bytes < lo) lo = t->pts[k].heap_bytes;
      int64_t v = was - (before - lo);
      rss[k] = v > rss[j] ? v : rss[j];
    }
    i = j;
  }
}
