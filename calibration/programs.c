// The calibration programs: the paper's calibration traces (Trapp, Meyer &
// Facchi 2011, Section 4), built in memory and turned into stub data by
// memstub_gen_build with no profile, so that runs.c replays them on the real
// engine. docs/calibration.md, "The calibration traces", lists them.
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

// Heap increments: sub-page to many pages, odd and even (so the chunk
// rounding averages out), and across the 128 KiB mmap threshold.
static const int64_t small_steps[] = {8, 25, 100, 503, 1500, 4096, 5001, 9000, 17007, 2, 60};
static const int64_t large_steps[] = {3000, 7013, 20000, 8, 50009, 90000, 200, 4096, 1001};

/* ---- the traces ----------------------------------------------------------------- */

// Each builder fills t (quick: the smaller trace), with row i at i x step ns
// where a step is taken; 0 or -ENOMEM.

// basic: a 1-byte push or pop at every point, no heap.
static int trace_basic(int64_t n, int64_t step, memstub_trace *t) {
  int rc = 0;
  for (int64_t i = 0; i < n && rc == 0; i++) rc = memstub_trace_append(t, i * step, i % 2, 0);
  return rc;
}

// heap: rising in small steps to about 400 KiB (in the arena, which glibc
// grows in place past the mmap threshold while its top has room, then in
// mmap), falling back, rising in large steps to about 1 MiB, falling back
// (the block moves to mmap and back); a 1-byte push or pop at every point.
// cycles of that, then (rise > 0) the next cycle's first rise up to rise
// bytes: the cold trace's end, where the arena faults (the first cycle
// re-rises into the arena's pages an earlier run left resident).
static int trace_heap(int cycles, int64_t rise, int64_t step, memstub_trace *t) {
  int64_t heap = 0, i = 0, j = 0;
  int rc = memstub_trace_append(t, 0, 0, 0);
  for (int cycle = 0; cycle < cycles + (rise > 0) && rc == 0; cycle++) {
    for (int phase = 0; phase < (cycle < cycles ? 4 : 1) && rc == 0; phase++) {
      int64_t top = cycle == cycles ? rise : phase < 2 ? 400000 : 1000000;
      do {
        const int64_t *st = phase < 2 ? small_steps : large_steps;
        size_t ns = phase < 2 ? MS__ARRAY_SIZE(small_steps) : MS__ARRAY_SIZE(large_steps);
        int64_t d = st[j++ % ns];
        if (phase % 2 == 0) heap += d;
        else heap = heap > d ? heap - d : 0;
        i++;
        rc = memstub_trace_append(t, i * step, i % 2, heap);
      } while (rc == 0 && (phase % 2 == 0 ? heap < top : heap > 0));
    }
  }
  return rc;
}

// stack: rising in n pushes from 1 byte to many pages, then falling frame by
// frame; no heap.
static int trace_stack(int64_t n, int64_t step, memstub_trace *t) {
  static const int64_t steps[] = {1, 16, 100, 600, 2000, 4096, 5000, 9000, 17000, 40000, 33};
  int64_t stack = 0, row = 0, *tot = malloc((size_t)n * sizeof *tot);
  int rc = tot ? memstub_trace_append(t, 0, 0, 0) : -ENOMEM;
  for (int64_t i = 0; i < n && rc == 0; i++) {
    stack += steps[(i * 7) % MS__ARRAY_SIZE(steps)];
    tot[i] = stack;
    rc = memstub_trace_append(t, ++row * step, stack, 0);
  }
  for (int64_t i = n - 2; i >= -1 && rc == 0; i--)
    rc = memstub_trace_append(t, ++row * step, i >= 0 ? tot[i] : 0, 0);
  free(tot);
  return rc;
}

// bytes: pushes several frames deep (1 to max_depth), then pops them all;
// frames of 1 byte to a page; no delays.
static int trace_bytes(int max_depth, memstub_trace *t) {
  static const int64_t sizes[] = {1, 7, 16, 33, 100, 250, 1000, 4000, 8, 64};
  int64_t stack = 0, k = 0, time = 0;
  int rc = memstub_trace_append(t, 0, 0, 0);
  for (int depth = 1; depth <= max_depth && rc == 0; depth++) {
    int64_t *tot = malloc((size_t)depth * sizeof *tot);
    if (!tot) rc = -ENOMEM;
    for (int d = 0; d < depth && rc == 0; d++) {
      stack += sizes[k++ % MS__ARRAY_SIZE(sizes)];
      tot[d] = stack;
      rc = memstub_trace_append(t, time, stack, 0);
    }
    for (int d = depth - 2; d >= -1 && rc == 0; d--) {
      stack = d >= 0 ? tot[d] : 0;
      rc = memstub_trace_append(t, time, stack, 0);
    }
    free(tot);
  }
  return rc;
}

// sleep: usleep timing's overshoot, at delays of 100 us, 1 ms and 4 ms
// (n100 of the first, n1 and n4 of the others).
static int trace_sleep(int n100, int n1, int n4, memstub_trace *t) {
  int64_t time = 0, i = 0;
  int rc = memstub_trace_append(t, 0, 0, 0);
  for (int k = 0; k < n100 && rc == 0; k++)
    rc = memstub_trace_append(t, time += 100000, ++i % 2, 0);
  for (int k = 0; k < n1 && rc == 0; k++)
    rc = memstub_trace_append(t, time += 1000000, ++i % 2, 0);
  for (int k = 0; k < n4 && rc == 0; k++)
    rc = memstub_trace_append(t, time += 4000000, ++i % 2, 0);
  return rc;
}

// resident: a heap block of `block` bytes and a mapping of half that, with
// rss targets rising in steps of an odd number of pages and bytes to all of
// both, then falling back in other steps (the replay writes and drops pages
// to each target); a 1-byte push or pop at every point. cycles of that.
static int trace_resident(int cycles, int64_t block, memstub_trace *t) {
  static const int64_t steps[] = {4096, 12288 + 100, 40960, 4096 * 7 + 1, 65536, 8192};
  int rc = memstub_trace_add_column(t, "rss_bytes");
  int mc = rc >= 0 ? memstub_trace_add_column(t, "mapped_bytes") : rc;
  if (mc < 0) return mc;
  int64_t i = 1, j = 0, rss = 0, all = block + block / 2;
  rc = memstub_trace_append(t, 0, 0, 0);  // the entry: nothing (the columns' zeros)
  for (int cycle = 0; cycle < cycles && rc >= 0; cycle++)
    for (int down = 0; down < 2 && rc >= 0; down++) {
      do {
        int64_t d = steps[j++ % MS__ARRAY_SIZE(steps)];
        rss = down ? (rss > d ? rss - d : 0) : (rss + d < all ? rss + d : all);
        rc = memstub_trace_append(t, 0, i % 2, block);
        if (rc == 0) {
          int64_t *x = memstub_trace_extra_row(t, t->n - 1);
          x[0] = rss;
          x[1] = block / 2;
        }
        i++;
      } while (rc == 0 && (down ? rss > 0 : rss < all));
    }
  return rc < 0 ? rc : 0;
}

/* ---- the stubs ------------------------------------------------------------------ */

// The trace builders above, one call each, by what they build.
enum { T_BASIC, T_HEAP, T_STACK, T_BYTES, T_SLEEP, T_RESIDENT };
typedef struct spec {
  int what;        // T_*
  int64_t n, step; // T_BASIC, T_STACK: rows or pushes; T_HEAP, T_RESIDENT: cycles;
                   // T_BYTES: the depth; T_RESIDENT: step is the heap block
  int n1, n4;      // T_SLEEP: delays of 1 ms and 4 ms (n: of 100 us); T_HEAP: n1 the
                   //   last rise (bytes; 0: none)
} spec;

static int fill(const spec *sp, memstub_trace *t) {
  switch (sp->what) {
    case T_BASIC: return trace_basic(sp->n, sp->step, t);
    case T_HEAP: return trace_heap((int)sp->n, sp->n1, sp->step, t);
    case T_STACK: return trace_stack(sp->n, sp->step, t);
    case T_BYTES: return trace_bytes((int)sp->n, t);
    case T_RESIDENT: return trace_resident((int)sp->n, sp->step, t);
    default: return trace_sleep((int)sp->n, sp->n1, sp->n4, t);
  }
}

// One stub from its trace, built without a profile. 0, -ENOMEM or the
// generator's error (err set only for the latter).
static int make_stub(const spec *sp, memstub_gen **out, memstub_error *err) {
  memstub_trace *t = memstub_trace_create();
  if (!t) return -ENOMEM;
  int rc = fill(sp, t);
  if (rc == 0) {
    memstub_gen_options o;
    memstub_gen_options_init(&o);
    o.source = "(calibration)";
    rc = memstub_gen_build(t, &o, out, err);
  }
  memstub_trace_free(t);
  return rc;
}

// A cold stub's points are the first points of its hot stub, delays aside.
static int cold_is_prefix(const memstub_gen *c, const memstub_gen *h) {
  if (!c) return 1;
  int same = c->stub.numdata <= h->stub.numdata;
  for (int64_t i = 0; same && i < c->stub.numdata; i++)
    same = c->use[i].stackAlloc == h->use[i].stackAlloc &&
           c->use[i].heapAlloc == h->use[i].heapAlloc;
  return same;
}

int ms__cal_programs_build(ms__cal_programs *s, int quick, int64_t cold, memstub_error *err) {
  // basic: the paper's minimum stack allocation, no delay. late: the same
  // with 1 ns delays, so every deadline has passed when it is checked.
  int64_t nb = quick ? 400 : 2000, ns = quick ? 50 : 120;
  const struct {
    memstub_gen **out;
    int cold;  // built only with cold runs
    spec sp;
  } build[] = {
      {&s->basic, 0, {T_BASIC, nb, 0, 0, 0}},
      {&s->late, 0, {T_BASIC, nb, 1, 0, 0}},
      {&s->heap, 0, {T_HEAP, quick ? 2 : 3, 0, 0, 0}},
      {&s->stack, 0, {T_STACK, ns, 0, 0, 0}},
      {&s->cbasic, 1, {T_BASIC, quick ? 100 : 200, cold, 0, 0}},
      {&s->cheap, 1, {T_HEAP, 1, cold, 180000, 0}},
      {&s->cstack, 1, {T_STACK, ns, cold, 0, 0}},
      {&s->bytes, 0, {T_BYTES, quick ? 6 : 12, 0, 0, 0}},
      {&s->sleep, 0, {T_SLEEP, quick ? 5 : 8, 0, quick ? 2 : 4, quick ? 1 : 2}},
      {&s->resident, 0, {T_RESIDENT, 1, 1 << 20, 0, 0}},
      {&s->resident4, 0, {T_RESIDENT, 4, 1 << 20, 0, 0}},
  };
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < MS__ARRAY_SIZE(build); i++)
    if (!build[i].cold || cold > 0) rc = make_stub(&build[i].sp, build[i].out, err);
  if (rc == -ENOMEM) return memstub_error_set(err, rc, "out of memory");
  if (rc == 0 && !(cold_is_prefix(s->cbasic, s->basic) && cold_is_prefix(s->cheap, s->heap) &&
                   cold_is_prefix(s->cstack, s->stack)))
    rc = memstub_error_set(err, -EINVAL, "calibration: a cold trace is not its hot "
                                         "trace's prefix (internal error)");
  return rc;
}

void ms__cal_programs_free(ms__cal_programs *s) {
  for (size_t i = 0; i < MS__ARRAY_SIZE(s->all); i++) memstub_gen_free(s->all[i]);
}
