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
