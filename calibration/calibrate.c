// memstub_calibrate: the paper's calibration functions (Trapp, Meyer &
// Facchi 2011, Section 4), run on the real replay engine.
//
// Each calibration trace is built in memory, turned into stub data by
// memstub_gen_build and replayed by memstub_replay_run with the measure bits
// it needs, R times. Times come from the engine's cycle records (invariant
// TSC: lfence;rdtsc / rdtscp;lfence), one counter read's own cost subtracted
// per phase; faults from separate runs with MEMSTUB_MEASURE_FAULTS (three
// getrusage calls per point would distort the times); bytes from
// MEMSTUB_MEASURE_STACK and MEMSTUB_MEASURE_HEAP runs. In every fifth
// repetition the basic, heap and stack traces also run cold, with a sleep
// before every point as in a replay; those cycle records pair with the same
// repetition's hot fault and heap runs, and give the cold figures (medians).
// docs/calibration.md describes the traces and the models.
#include <errno.h>
#include <gnu/libc-version.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "internal.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "prim.h"
#include "synth.h"

#ifndef MS__CAL_COMPILER
#define MS__CAL_COMPILER "unknown"
#endif
#ifndef MS__CAL_CFLAGS
#define MS__CAL_CFLAGS ""
#endif

void ms__cal_build_info(memstub_profile *p) {
  snprintf(p->compiler, sizeof p->compiler, "%s", MS__CAL_COMPILER);
  snprintf(p->cflags, sizeof p->cflags, "%s", MS__CAL_CFLAGS);
}

void memstub_calib_options_init(memstub_calib_options *o) {
  memset(o, 0, sizeof *o);
  o->repetitions = 100;
  o->cold_delay_ns = MEMSTUB_CALIB_COLD_DELAY_DEFAULT;
}

void memstub_calib_free(memstub_calib *c) {
  if (!c) return;
  for (size_t i = 0; i < MS__ARRAY_SIZE(c->samples); i++) free(c->samples[i]);
  free(c->basic_rep_ns);
  free(c);
}

/* ---- samples ----------------------------------------------------------------- */

// The series fitted. Times in cycles (ns in the fallback), bytes in bytes.
enum {
  S_BASIC,      // x 0: period of a basic point
  S_BASIC_IN,   // x 0: a basic point's work from cyc_start to cyc_end (the cold basic's base)
  S_LATE,       // x 0: period of a point whose deadline has passed
  S_MEAS,       // x 0: period (ns) when measuring a trace
  S_SLEEP,      // x delay (ms): usleep's overshoot (ns)
  S_HALLOC0,    // arena realloc, no fault
  S_HALLOC1,    // arena realloc, faults
  S_HUSE,       // x faults in the use phase: arena use
  S_HSHRINK,    // arena realloc smaller
  S_MALLOC0,    // mapped realloc (mremap), no fault
  S_MALLOC1,    // ... faults
  S_MUSE,       // x faults: mapped use
  S_MSHRINK,    // x pages given back: mapped smaller by whole pages
  S_MSHRINK0,   // mapped smaller within its pages
  S_TOMMAP,     // x pages copied: arena -> mmap, realloc's move and copy
  S_FROMMMAP,   // mmap -> arena
  S_SALLOC0,    // alloca, no fault
  S_SALLOC1,    // alloca with the fault below the frame
  S_SUSE,       // x faults in the use phase: first touch
  S_SUSE_RT,    // ... cached thread stack
  S_SPOP,       // return
  S_SBYTES,     // x open frames: stack measured - pushed bytes
  S_SFRAME,     // x depth after a push: what the push moved beyond its alloca
  S_HB_EMPTY,   // heap measured - size, size 0
  S_HB_INUSE,   // ... in the arena
  S_HB_MMAP,    // ... mapped
  S_STACK_EQ4,  // x eq. 4 paper form, y faults counted (rising stack, first touch)
  S_STACK_EQ4F, // x pushed bytes, y faults counted, z bytes below, w open frames
  S_HEAP_EQ4,   // x eq. 4, y faults counted (rising arena heap)
  S_HEAP_HW,    // x the generator's fault count (beyond the pages written before), y counted
  S_HEAP_PLACE, // x block (size + pad), y 1 if mapped, z the block before
  S_COUNT
};

// A series of samples: x, y, and two more values for some series.
typedef struct ser {
  double *x, *y, *z, *w;
  int32_t *rep;
  size_t n, cap;
} ser;

static int grow(void **p, size_t cap, size_t size) {
  void *q = realloc(*p, cap * size);
  if (!q) return -ENOMEM;
  *p = q;
  return 0;
}

static int ser_add4(ser *s, double x, double y, double z, double w, int rep) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    if (grow((void **)&s->x, cap, sizeof *s->x) < 0 || grow((void **)&s->y, cap, sizeof *s->y) < 0 ||
        grow((void **)&s->z, cap, sizeof *s->z) < 0 || grow((void **)&s->w, cap, sizeof *s->w) < 0 ||
        grow((void **)&s->rep, cap, sizeof *s->rep) < 0)
      return -ENOMEM;
    s->cap = cap;
  }
  s->x[s->n] = x;
  s->y[s->n] = y;
  s->z[s->n] = z;
  s->w[s->n] = w;
  s->rep[s->n] = rep;
  s->n++;
  return 0;
}

static int ser_add(ser *s, double x, double y, int rep) { return ser_add4(s, x, y, 0, 0, rep); }

static void ser_free(ser *s) {
  free(s->x);
  free(s->y);
  free(s->z);
  free(s->w);
  free(s->rep);
}

/* ---- the calibration traces ------------------------------------------------ */

/* Each trace is built twice when cold runs are asked for: hot, with zero
 * delays (the paper's method), and cold, the same rows (the heap trace's
 * first cycle, fewer basic rows) with a delay before every row. Both give the
 * same points in the same order, so a cold run's points pair with the hot
 * fault and heap runs' points of the same index. */
typedef struct stubs {
  memstub_gen *basic, *late, *heap, *stack, *bytes, *sleep;
  memstub_gen *cbasic, *cheap, *cstack;  // cold; NULL without cold runs
} stubs;

// Heap increments: sub-page to many pages, odd and even (so the chunk
// rounding averages out), and across the 128 KiB mmap threshold.
static const int64_t small_steps[] = {8, 25, 100, 503, 1500, 4096, 5001, 9000, 17007, 2, 60};
static const int64_t large_steps[] = {3000, 7013, 20000, 8, 50009, 90000, 200, 4096, 1001};

static int make_stub(memstub_trace *t, memstub_gen **out, memstub_error *err) {
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.source = "(calibration)";
  int rc = memstub_gen_build(t, &o, out, err);
  memstub_trace_free(t);
  return rc;
}

// basic: a 1-byte push or pop at every point, no heap; row i at i x step ns.
static int trace_basic(int64_t n, int64_t step, memstub_trace *t) {
  int rc = 0;
  for (int64_t i = 0; i < n && rc == 0; i++) rc = memstub_trace_append(t, i * step, i % 2, 0);
  return rc;
}

// heap: rising in small steps to about 400 KiB (in the arena, which glibc
// grows in place past the mmap threshold while its top has room, then in
// mmap), falling back, rising in large steps to about 1 MiB, falling back
// (the block moves to mmap and back); a 1-byte push or pop at every point.
// cycles of that; row i at i x step ns.
static int trace_heap(int cycles, int64_t step, memstub_trace *t) {
  int64_t heap = 0, i = 0, j = 0;
  int rc = memstub_trace_append(t, 0, 0, 0);
  for (int cycle = 0; cycle < cycles && rc == 0; cycle++) {
    for (int phase = 0; phase < 4 && rc == 0; phase++) {
      int64_t top = phase < 2 ? 400000 : 1000000;
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
// frame; no heap; row i at i x step ns.
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

// One stub from a trace builder; 0, -ENOMEM or the generator's error.
#define MAKE(fill, out)                                                           \
  do {                                                                            \
    if (rc == 0 && !(t = memstub_trace_create())) rc = -ENOMEM;                   \
    if (rc == 0) {                                                                \
      rc = (fill);                                                                \
      if (rc == 0) rc = make_stub(t, (out), err);                                 \
      else memstub_trace_free(t);                                                 \
    }                                                                             \
  } while (0)

static int build_stubs(stubs *s, int quick, int64_t cold, memstub_error *err) {
  memstub_trace *t;
  int rc = 0;
  // basic: the paper's minimum stack allocation, no delay. late: the same
  // with 1 ns delays, so every deadline has passed when it is checked.
  int64_t nb = quick ? 400 : 2000;
  MAKE(trace_basic(nb, 0, t), &s->basic);
  MAKE(trace_basic(nb, 1, t), &s->late);
  MAKE(trace_heap(quick ? 2 : 3, 0, t), &s->heap);
  MAKE(trace_stack(quick ? 50 : 120, 0, t), &s->stack);
  if (cold > 0) {
    MAKE(trace_basic(quick ? 100 : 200, cold, t), &s->cbasic);
    MAKE(trace_heap(1, cold, t), &s->cheap);
    MAKE(trace_stack(quick ? 50 : 120, cold, t), &s->cstack);
  }
  // bytes: pushes several frames deep (1 to 12), then pops them all; frames
  // of 1 byte to a page.
  if (rc == 0 && !(t = memstub_trace_create())) rc = -ENOMEM;
  if (rc == 0) {
    static const int64_t sizes[] = {1, 7, 16, 33, 100, 250, 1000, 4000, 8, 64};
    int64_t stack = 0, k = 0, time = 0;
    rc = memstub_trace_append(t, 0, 0, 0);
    for (int depth = 1; depth <= (quick ? 6 : 12) && rc == 0; depth++) {
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
    if (rc == 0) rc = make_stub(t, &s->bytes, err);
    else memstub_trace_free(t);
  }
  // sleep: usleep timing's overshoot, at delays of 100 us, 1 ms and 4 ms.
  if (rc == 0 && !(t = memstub_trace_create())) rc = -ENOMEM;
  if (rc == 0) {
    int64_t time = 0, i = 0;
    rc = memstub_trace_append(t, 0, 0, 0);
    for (int k = 0; k < (quick ? 5 : 8) && rc == 0; k++)
      rc = memstub_trace_append(t, time += 100000, ++i % 2, 0);
    for (int k = 0; k < (quick ? 2 : 4) && rc == 0; k++)
      rc = memstub_trace_append(t, time += 1000000, ++i % 2, 0);
    for (int k = 0; k < (quick ? 1 : 2) && rc == 0; k++)
      rc = memstub_trace_append(t, time += 4000000, ++i % 2, 0);
    if (rc == 0) rc = make_stub(t, &s->sleep, err);
    else memstub_trace_free(t);
  }
  if (rc == -ENOMEM) return memstub_error_set(err, rc, "out of memory");
  // A cold stub's points are the first points of its hot stub, delays aside.
  const memstub_gen *pairs[][2] = {
      {s->cbasic, s->basic}, {s->cheap, s->heap}, {s->cstack, s->stack}};
  for (size_t k = 0; rc == 0 && k < MS__ARRAY_SIZE(pairs); k++) {
    const memstub_gen *c = pairs[k][0], *h = pairs[k][1];
    if (!c) continue;
    int same = c->stub.numdata <= h->stub.numdata;
    for (int64_t i = 0; same && i < c->stub.numdata; i++)
      same = c->use[i].stackAlloc == h->use[i].stackAlloc &&
             c->use[i].heapAlloc == h->use[i].heapAlloc;
    if (!same) rc = memstub_error_set(err, -EINVAL, "calibration: a cold trace is not its hot "
                                                    "trace's prefix (internal error)");
  }
  return rc;
}
#undef MAKE

static void free_stubs(stubs *s) {
  memstub_gen_free(s->basic);
  memstub_gen_free(s->late);
  memstub_gen_free(s->heap);
  memstub_gen_free(s->stack);
  memstub_gen_free(s->bytes);
  memstub_gen_free(s->sleep);
  memstub_gen_free(s->cbasic);
  memstub_gen_free(s->cheap);
  memstub_gen_free(s->cstack);
}

/* ---- running ----------------------------------------------------------------- */

typedef struct ctx {
  const memstub_calib_options *o;
  int64_t done, total;
  double timer;      // one counter read, in counter ticks
  int invariant;
  long page;
  int64_t heap_pad;  // the runtime's block pad (memstub_replay_info.heap_pad)
  double *room;      // per repetition: the largest block grown in place in the arena
  ser s[S_COUNT];
  ser cs[S_COUNT];   // the cold runs' samples (time series only)
  int64_t cold_every; // the cold traces run in every cold_every-th repetition (0: never)
  int64_t cold_reps;
  int64_t cold_ns;   // wall time spent in cold runs
  memstub_calib *out;
} ctx;

static int cold_rep(const ctx *c, int rep) { return c->cold_every > 0 && rep % c->cold_every == 0; }

/* A fresh thread stack for every "fresh" run: glibc caches the stacks of
 * exited threads and hands out the smallest cached one that is large enough,
 * so a request larger than any before gets a new mapping (first touch). */
static int64_t fresh_pages;

static int64_t fresh_extra(const ctx *c) {
  return __atomic_add_fetch(&fresh_pages, 1, __ATOMIC_RELAXED) * c->page;
}

static int run(ctx *c, const memstub_gen *g, unsigned measure, int timing, int64_t extra,
               memstub_replay **r, memstub_error *err) {
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.measure = measure;
  o.timing = timing;
  o.stack_extra = extra;
  // Without an invariant counter, time the cycle runs against CLOCK_MONOTONIC.
  if (!c->invariant && (measure & MEMSTUB_MEASURE_CYCLES)) o.measure |= MEMSTUB_MEASURE_TIME;
  // Give the free pages of every arena back, so the replay's heap faults as
  // in a fresh process (the replay thread reuses an earlier thread's arena).
  malloc_trim(0);
  int rc = memstub_replay_run(&g->stub, &o, r, err);
  if (rc < 0) memstub_error_prefix(err, "calibration replay");
  c->done++;
  if (c->o->progress) c->o->progress(c->done, c->total, c->o->progress_arg);
  return rc;
}

/* Counter ticks -> the profile's cycles: 1 with an invariant counter, else
 * ns per tick measured over the run itself (the fallback). */
static double tick_scale(const ctx *c, const memstub_replay *r) {
  if (c->invariant) return 1.0;
  int64_t n = r->stub->numdata;
  if (n < 2) return 1.0;
  double ticks = (double)(r->rec[n - 1].cyc_end - r->rec[0].cyc_start);
  double ns = (double)(r->rec[n - 1].end_ns - r->rec[0].start_ns);
  return ticks > 0 && ns > 0 ? ns / ticks : 1.0;
}

// A phase's time: the counter difference minus one read.
static double phase(const ctx *c, uint64_t a, uint64_t b, double k) {
  return ((double)(b - a) - c->timer) * k;
}

// A basic point's work inside its cycle records: four phases, each holding one read.
static double basic_in(const ctx *c, const memstub_replay_record *r, double k) {
  return ((double)(r->cyc_end - r->cyc_start) - 4 * c->timer) * k;
}

static int rep_basic(ctx *c, const stubs *st, int rep, memstub_error *err) {
  const memstub_gen *gs[2] = {st->basic, st->late};
  for (int late = 0; late < 2; late++) {
    memstub_replay *r;
    int rc = run(c, gs[late], MEMSTUB_MEASURE_CYCLES, MEMSTUB_TIMING_DEADLINE, 0, &r, err);
    if (rc < 0) return rc;
    double k = tick_scale(c, r);
    // A period holds four reads inside the point and the next point's first.
    for (int64_t i = 1; rc == 0 && i + 1 < r->stub->numdata; i++) {
      double v = ((double)(r->rec[i + 1].cyc_start - r->rec[i].cyc_start) - 5 * c->timer) * k;
      rc = ser_add(&c->s[late ? S_LATE : S_BASIC], 0, v, rep);
      if (rc == 0 && !late) rc = ser_add(&c->s[S_BASIC_IN], 0, basic_in(c, &r->rec[i], k), rep);
    }
    memstub_replay_free(r);
    if (rc < 0) return memstub_error_set(err, rc, "out of memory");
  }
  // The same points measured as memstub replay --measure does.
  memstub_replay *r;
  int rc = run(c, st->basic, MEMSTUB_MEASURE_TRACE, MEMSTUB_TIMING_DEADLINE, 0, &r, err);
  if (rc < 0) return rc;
  for (int64_t i = 1; rc == 0 && i + 1 < r->stub->numdata; i++)
    rc = ser_add(&c->s[S_MEAS], 0, (double)(r->rec[i + 1].start_ns - r->rec[i].start_ns), rep);
  memstub_replay_free(r);
  if (rc < 0) return memstub_error_set(err, rc, "out of memory");
  if (!cold_rep(c, rep)) return 0;
  // Cold: each point after a sleep; its work inside the records.
  int64_t t0 = ms__prim_now_ns();
  rc = run(c, st->cbasic, MEMSTUB_MEASURE_CYCLES, MEMSTUB_TIMING_DEADLINE, 0, &r, err);
  if (rc < 0) return rc;
  double k = tick_scale(c, r);
  for (int64_t i = 1; rc == 0 && i < r->stub->numdata; i++)
    rc = ser_add(&c->cs[S_BASIC_IN], 0, basic_in(c, &r->rec[i], k), rep);
  memstub_replay_free(r);
  c->cold_ns += ms__prim_now_ns() - t0;
  return rc < 0 ? memstub_error_set(err, rc, "out of memory") : 0;
}

static int rep_sleep(ctx *c, const stubs *st, int rep, memstub_error *err) {
  memstub_replay *r;
  int rc = run(c, st->sleep, MEMSTUB_MEASURE_TIME, MEMSTUB_TIMING_USLEEP, 0, &r, err);
  if (rc < 0) return rc;
  const struct memstub_stub *s = r->stub;
  for (int64_t i = 1; rc == 0 && i < s->numdata; i++) {
    int64_t d = s->use[i].time;
    if (d <= 0) continue;
    double over = (double)(r->rec[i].start_ns - r->rec[i - 1].end_ns - d);
    rc = ser_add(&c->s[S_SLEEP], (double)d / 1e6, over, rep);
  }
  memstub_replay_free(r);
  return rc < 0 ? memstub_error_set(err, rc, "out of memory") : 0;
}

static int mapped_usable(int64_t u, long page) { return u > 0 && (u + 16) % page == 0; }

/* The heap samples of the cycle run ra, with the faults and the block's
 * placement of the same points from the hot runs rf and rh. cold: ra is a
 * cold run (its points are the first of rf's); only its time samples are
 * taken, into c->cs. */
static int heap_samples(ctx *c, const memstub_replay *ra, const memstub_replay *rf,
                        const memstub_replay *rh, int cold, int rep) {
  const struct memstub_stub *s = ra->stub;
  ser *S = cold ? c->cs : c->s;
  int visible = rh->info.heap_visible;
  int64_t thr = 128 * 1024, pad = rh->info.heap_pad;
  double k = tick_scale(c, ra);
  int64_t size = 0, hw = pad;  // hw: the arena pages written so far (the generator's model)
  int was_mapped = 0, rc = 0;
  if (!cold) rc = ser_add(&S[S_HB_EMPTY], 0, (double)rh->info.entry.heap_bytes, rep);
  for (int64_t i = 0; rc == 0 && i < s->numdata; i++) {
    const memstub_replay_record *a = &ra->rec[i], *f = &rf->rec[i], *h = &rh->rec[i];
    int64_t dh = s->use[i].heapAlloc, old = size;
    size += dh;
    if (size < 0) size = 0;
    int64_t chunk = (size + pad + 8 + 15) / 16 * 16;
    int mapped = visible ? mapped_usable(h->heap_usable, c->page)
                         : (was_mapped ? size + pad >= thr : chunk >= thr);
    if (!cold) {
      // The arena pages written so far, for the generator's fault count.
      int64_t hw_beyond = size + pad > hw ? (size + pad) / c->page - hw / c->page : 0;
      if (!mapped && size + pad > hw) hw = size + pad;
      // Where the block is, for the generator's placement rule (checked later).
      rc = ser_add4(&S[S_HEAP_PLACE], (double)(size + pad), mapped, (double)(old + pad), 0, rep);
      if (rc < 0) break;
      // The largest block glibc grew in place in the arena.
      if (size > old && !was_mapped && !mapped && size + pad > c->room[rep])
        c->room[rep] = size + pad;
      // Bytes: measured minus replayed.
      double dev = (double)(h->heap_bytes - size);
      if (visible) {
        int which = size == 0 ? S_HB_EMPTY : mapped ? S_HB_MMAP : S_HB_INUSE;
        rc = ser_add(&S[which], (double)size, dev, rep);
      }
      if (rc == 0 && size > old && !was_mapped && !mapped) {
        int64_t pf = f->faults_end - f->faults_stack;
        rc = ser_add(&S[S_HEAP_EQ4], (double)ms__cal_eq4(size - old, old, c->page), (double)pf,
                     rep);
        if (rc == 0) rc = ser_add(&S[S_HEAP_HW], (double)hw_beyond, (double)pf, rep);
      }
    }
    if (rc < 0 || size == old) {
      was_mapped = mapped;
      continue;
    }
    double alloc = phase(c, a->cyc_stack_use, a->cyc_heap_alloc, k);
    double use = phase(c, a->cyc_heap_alloc, a->cyc_end, k);
    int64_t pf = f->faults_end - f->faults_stack;
    if (size > old && !was_mapped && !mapped) {
      rc = ser_add(&S[pf > 0 ? S_HALLOC1 : S_HALLOC0], (double)pf, alloc, rep);
      if (rc == 0) rc = ser_add(&S[S_HUSE], (double)(pf > 0 ? pf - 1 : 0), use, rep);
    } else if (size > old && was_mapped && mapped) {
      rc = ser_add(&S[pf > 0 ? S_MALLOC1 : S_MALLOC0], (double)pf, alloc, rep);
      if (rc == 0) rc = ser_add(&S[S_MUSE], (double)pf, use, rep);
    } else if (size > old && !was_mapped && mapped) {
      // The copy faults the old size's pages (the line's x); the use phase
      // writes the rest.
      int64_t copied = (old + pad + 16 + c->page - 1) / c->page;
      rc = ser_add(&S[S_TOMMAP], (double)copied, alloc, rep);
      if (rc == 0) rc = ser_add(&S[S_MUSE], (double)(pf > copied ? pf - copied : 0), use, rep);
    } else if (size < old && !was_mapped && !mapped) {
      rc = ser_add(&S[S_HSHRINK], (double)pf, alloc, rep);
    } else if (size < old && was_mapped && mapped) {
      int64_t back = ms__cal_map_pages(old, pad, c->page) - ms__cal_map_pages(size, pad, c->page);
      rc = ser_add(&S[back > 0 ? S_MSHRINK : S_MSHRINK0], (double)back, alloc, rep);
    } else if (size < old && was_mapped && !mapped) {
      rc = ser_add(&S[S_FROMMMAP], (double)pf, alloc + use, rep);
    }
    was_mapped = mapped;
  }
  return rc;
}

static int rep_heap(ctx *c, const stubs *st, int rep, memstub_error *err) {
  memstub_replay *rc_ = NULL, *rf = NULL, *rh = NULL, *rk = NULL;
  int rc = run(c, st->heap, MEMSTUB_MEASURE_CYCLES, MEMSTUB_TIMING_DEADLINE, 0, &rc_, err);
  if (rc == 0) rc = run(c, st->heap, MEMSTUB_MEASURE_FAULTS, MEMSTUB_TIMING_DEADLINE, 0, &rf, err);
  if (rc == 0) rc = run(c, st->heap, MEMSTUB_MEASURE_HEAP, MEMSTUB_TIMING_DEADLINE, 0, &rh, err);
  if (rc < 0) goto out;
  c->heap_pad = rh->info.heap_pad;
  if ((rc = heap_samples(c, rc_, rf, rh, 0, rep)) < 0) goto oom;
  if (cold_rep(c, rep)) {
    // Cold: the same points after a sleep each; faults and placement are
    // those of the hot runs (a sleep changes neither).
    int64_t t0 = ms__prim_now_ns();
    rc = run(c, st->cheap, MEMSTUB_MEASURE_CYCLES, MEMSTUB_TIMING_DEADLINE, 0, &rk, err);
    c->cold_ns += ms__prim_now_ns() - t0;
    if (rc < 0) goto out;
    if ((rc = heap_samples(c, rk, rf, rh, 1, rep)) < 0) goto oom;
  }
  goto out;
oom:
  rc = memstub_error_set(err, rc, "out of memory");
out:
  memstub_replay_free(rc_);
  memstub_replay_free(rf);
  memstub_replay_free(rh);
  memstub_replay_free(rk);
  return rc;
}

/* The stack samples of the cycle run ra with the faults of rf (the same
 * points on a stack in the same state). kind 0: first touch (hot), 1: a
 * cached stack, 2: first touch, cold (into c->cs). */
static int stack_samples(ctx *c, const memstub_replay *ra, const memstub_replay *rf, int kind,
                         int rep) {
  const struct memstub_stub *s = ra->stub;
  ser *S = kind == 2 ? c->cs : c->s;
  double k = tick_scale(c, ra);
  int64_t sum = 0, depth = 0;
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < s->numdata; i++) {
    const memstub_replay_record *a = &ra->rec[i], *f = &rf->rec[i];
    int64_t sa = s->use[i].stackAlloc;
    double alloc = phase(c, a->cyc_start, a->cyc_stack_alloc, k);
    double use = phase(c, a->cyc_stack_alloc, a->cyc_stack_use, k);
    int64_t pf = f->faults_stack - f->faults_start;
    if (sa < 0) {
      if (kind != 1) rc = ser_add(&S[S_SPOP], 0, alloc, rep);
      sum += sa;
      depth--;
      continue;
    }
    if (sa == 0) continue;
    if (kind != 1) {
      rc = ser_add(&S[pf > 0 ? S_SALLOC1 : S_SALLOC0], (double)pf, alloc, rep);
      if (rc == 0) rc = ser_add(&S[S_SUSE], (double)(pf > 0 ? pf - 1 : 0), use, rep);
    }
    if (kind == 0) {
      if (rc == 0)
        rc = ser_add(&S[S_STACK_EQ4], (double)ms__cal_eq4(sa, sum, c->page), (double)pf, rep);
      // For eq. 4 with the frame overhead, once it is known.
      if (rc == 0)
        rc = ser_add4(&S[S_STACK_EQ4F], (double)sa, (double)pf, (double)sum, (double)depth, rep);
    } else if (kind == 1) {
      rc = ser_add(&S[S_SUSE_RT], (double)(pf > 0 ? pf - 1 : 0), use, rep);
    }
    sum += sa;
    depth++;
  }
  return rc;
}

/* The stack trace twice: on fresh thread stacks (first touch), then each on
 * the stack the other run just left in glibc's cache (re-touch). In a cold
 * repetition, then the cold trace on a fresh stack, with the first-touch
 * faults. */
static int rep_stack(ctx *c, const stubs *st, int rep, memstub_error *err) {
  int64_t e1 = fresh_extra(c), e2 = fresh_extra(c);
  int64_t extra[2][2] = {{e1, e2}, {e2, e1}};
  int rc = 0;
  memstub_replay *first = NULL;  // the first-touch faults
  for (int retouch = 0; retouch < 2 && rc == 0; retouch++) {
    memstub_replay *ra = NULL, *rf = NULL;
    rc = run(c, st->stack, MEMSTUB_MEASURE_CYCLES, MEMSTUB_TIMING_DEADLINE, extra[retouch][0], &ra,
             err);
    if (rc == 0)
      rc = run(c, st->stack, MEMSTUB_MEASURE_FAULTS, MEMSTUB_TIMING_DEADLINE, extra[retouch][1],
               &rf, err);
    if (rc == 0 && (rc = stack_samples(c, ra, rf, retouch, rep)) < 0)
      rc = memstub_error_set(err, rc, "out of memory");
    memstub_replay_free(ra);
    if (retouch == 0) first = rf;
    else memstub_replay_free(rf);
  }
  if (rc == 0 && cold_rep(c, rep)) {
    memstub_replay *rk = NULL;
    int64_t t0 = ms__prim_now_ns();
    rc = run(c, st->cstack, MEMSTUB_MEASURE_CYCLES, MEMSTUB_TIMING_DEADLINE, fresh_extra(c), &rk,
             err);
    c->cold_ns += ms__prim_now_ns() - t0;
    if (rc == 0 && (rc = stack_samples(c, rk, first, 2, rep)) < 0)
      rc = memstub_error_set(err, rc, "out of memory");
    memstub_replay_free(rk);
  }
  memstub_replay_free(first);
  return rc;
}

static int rep_bytes(ctx *c, const stubs *st, int rep, memstub_error *err) {
  memstub_replay *r;
  int rc = run(c, st->bytes, MEMSTUB_MEASURE_STACK, MEMSTUB_TIMING_DEADLINE, 0, &r, err);
  if (rc < 0) return rc;
  const struct memstub_stub *s = r->stub;
  int64_t *open = malloc((size_t)(s->numdata + 1) * sizeof *open), depth = 0, sum = 0;
  if (!open) rc = -ENOMEM;
  for (int64_t i = 0; rc == 0 && i < s->numdata; i++) {
    int64_t sa = s->use[i].stackAlloc;
    if (sa > 0) open[depth++] = sa, sum += sa;
    if (sa < 0) sum -= open[--depth];
    rc = ser_add(&c->s[S_SBYTES], (double)depth, (double)(r->rec[i].stack_bytes - sum), rep);
    // A push's frame: the stack pointer moved by the call (the overhead)
    // and by alloca (stack_moved), from the level the previous point ended in.
    int64_t before = i > 0 ? r->rec[i - 1].stack_bytes : 0;
    if (rc == 0 && sa > 0)
      rc = ser_add(&c->s[S_SFRAME], (double)depth,
                   (double)(r->rec[i].stack_bytes - before - r->rec[i].stack_moved), rep);
  }
  free(open);
  memstub_replay_free(r);
  return rc < 0 ? memstub_error_set(err, rc, "out of memory") : 0;
}

/* ---- fitting ----------------------------------------------------------------- */

// The range of samples of repetition rep in s (samples are added in order).
static void rep_range(const ser *s, int rep, size_t *from, size_t *to, size_t *pos) {
  size_t i = *pos;
  while (i < s->n && s->rep[i] < rep) i++;
  *from = i;
  while (i < s->n && s->rep[i] == rep) i++;
  *to = *pos = i;
}

int64_t ms__cal_fit_fail_after;

/* One fit of a constant (fit_slope 0) or a line: least squares with one
 * trimming pass (floor as in ms__cal_fit), or with l1 least absolute
 * deviations (the median; nothing trimmed). Returns the points kept, or
 * -ENOMEM (also when ms__cal_fit_fail_after says so). */
static int64_t fit1(const double *x, const double *y, size_t n, int fit_slope, double floor,
                    int l1, double *a, double *b, double *r2, double *resid) {
  if (ms__cal_fit_fail_after > 0 && --ms__cal_fit_fail_after == 0) return -ENOMEM;  // injected
  if (!l1) return ms__cal_fit(x, y, n, fit_slope, floor, a, b, r2, resid, NULL);
  return ms__cal_fit_l1(x, y, n, fit_slope, a, b, r2, resid) < 0 ? -ENOMEM : (int64_t)n;
}

/* A constant figure: the pooled mean of the samples (outliers trimmed), or
 * with l1 their median; and the SCV of the per-repetition figures. y in
 * cycles; floor for trimming. */
static int fig_const(ctx *c, const ser *s, double floor, double cpn, int l1,
                     memstub_calib_time *t) {
  memset(t, 0, sizeof *t);
  if (s->n == 0) return 0;
  double a, b, r2, resid;
  int64_t kept = fit1(NULL, s->y, s->n, 0, floor, l1, &a, &b, &r2, &resid);
  if (kept < 0) return -ENOMEM;
  c->out->trimmed += (int64_t)s->n - kept;
  double *m = malloc((size_t)c->o->repetitions * sizeof *m);
  if (!m) return -ENOMEM;
  size_t nm = 0, pos = 0;
  for (int rep = 0; rep < c->o->repetitions; rep++) {
    size_t from, to;
    rep_range(s, rep, &from, &to, &pos);
    if (to == from) continue;
    if (fit1(NULL, s->y + from, to - from, 0, floor, l1, &m[nm], &b, &r2, &resid) < 0) {
      free(m);
      return -ENOMEM;
    }
    nm++;
  }
  double mean;
  ms__cal_mean_scv(m, nm, &mean, &t->scv);
  free(m);
  t->cycles = a > 0 ? a : 0;
  t->ns = t->cycles / cpn;
  return 0;
}

/* A line: the pooled fit y = base + per_fault x (least squares, or with l1
 * least absolute deviations), and the SCVs of the per-repetition fits'
 * coefficients (repetitions with 3 samples or more). */
static int fig_line(ctx *c, const ser *s, double floor, double cpn, int l1,
                    memstub_calib_line *l) {
  memset(l, 0, sizeof *l);
  if (s->n == 0) return 0;
  double a, b, r2, resid;
  int64_t kept = fit1(s->x, s->y, s->n, 1, floor, l1, &a, &b, &r2, &resid);
  if (kept < 0) return -ENOMEM;
  c->out->trimmed += (int64_t)s->n - kept;
  double *ma = malloc((size_t)c->o->repetitions * 2 * sizeof *ma);
  if (!ma) return -ENOMEM;
  double *mb = ma + c->o->repetitions;
  size_t nm = 0, pos = 0;
  for (int rep = 0; rep < c->o->repetitions; rep++) {
    size_t from, to;
    rep_range(s, rep, &from, &to, &pos);
    if (to - from < 3) continue;
    double r2r, rr;
    if (fit1(s->x + from, s->y + from, to - from, 1, floor, l1, &ma[nm], &mb[nm], &r2r, &rr) < 0) {
      free(ma);
      return -ENOMEM;
    }
    nm++;
  }
  double mean;
  ms__cal_mean_scv(ma, nm, &mean, &l->base.scv);
  ms__cal_mean_scv(mb, nm, &mean, &l->per_fault.scv);
  free(ma);
  if (b < 0) b = 0;  // a fault never saves time
  l->base.cycles = a;
  l->base.ns = a / cpn;
  l->per_fault.cycles = b;
  l->per_fault.ns = b / cpn;
  l->r2 = r2;
  l->resid_ns = resid / cpn;
  return 0;
}

// Mean of y over s, rounded to whole bytes.
static int64_t mean_bytes(const ser *s) {
  double m, scv;
  ms__cal_mean_scv(s->y, s->n, &m, &scv);
  return llround(m);
}

/* Samples for the plot: at most max of them, spread over the series by a
 * prime stride (a regular stride would alias with the traces' patterns);
 * predicted(x) from the model. */
static int keep_samples(memstub_calib *out, int which, const ser *a, const ser *b, double cpn,
                        double (*model)(const memstub_profile *, double), int bytes) {
  size_t n = a->n + (b ? b->n : 0), max = 3000, k = n < max ? n : max;
  memstub_calib_sample *v = malloc((k + 1) * sizeof *v);
  if (!v) return -ENOMEM;
  size_t stride = n % 7919 ? 7919 : 7907;
  for (size_t m = 0; m < k; m++) {
    size_t i = n <= max ? m : (m * stride) % n;
    const ser *s = i < a->n ? a : b;
    size_t j = i < a->n ? i : i - a->n;
    v[m].faults = s->x[j];
    v[m].value = bytes ? s->y[j] : s->y[j] / cpn;
    v[m].predicted = model(&out->profile, s->x[j]);
  }
  out->samples[which] = v;
  out->nsamples[which] = k;
  return 0;
}

static double m_heap_use(const memstub_profile *p, double x) {
  return p->heap_use.base.ns + p->heap_use.per_fault.ns * x;
}
static double m_heap_mmap_use(const memstub_profile *p, double x) {
  return p->heap_mmap_use.base.ns + p->heap_mmap_use.per_fault.ns * x;
}
static double m_heap_alloc(const memstub_profile *p, double x) {
  return x > 0 ? p->heap_alloc_fault.ns : p->heap_alloc_nofault.ns;
}
static double m_stack_use(const memstub_profile *p, double x) {
  return p->stack_use.base.ns + p->stack_use.per_fault.ns * x;
}
static double m_cold_heap_mmap_use(const memstub_profile *p, double x) {
  return p->cold.heap_mmap_use.base.ns + p->cold.heap_mmap_use.per_fault.ns * x;
}
static double m_cold_stack_use(const memstub_profile *p, double x) {
  return p->cold.stack_use.base.ns + p->cold.stack_use.per_fault.ns * x;
}
static double m_stack_retouch(const memstub_profile *p, double x) {
  return p->stack_use_retouch.base.ns + p->stack_use_retouch.per_fault.ns * x;
}
static double m_stack_alloc(const memstub_profile *p, double x) {
  return x > 0 ? p->stack_alloc_fault.ns : p->stack_alloc_nofault.ns;
}
static double m_stack_bytes(const memstub_profile *p, double x) {
  return (double)p->stack_offset + (double)p->stack_per_frame * x;
}
static double m_sleep(const memstub_profile *p, double x) {
  return p->sleep_overshoot.base.ns + p->sleep_overshoot.per_fault.ns * x;
}

static double timer_ticks(void) {
  // One counter read, back to back: the least mean of five batches.
  double best = 1e30;
  for (int b = 0; b < 5; b++) {
    uint64_t a = ms__prim_cycles_begin(), z = a;
    for (int i = 0; i < 20000; i++) z = ms__prim_cycles_begin();
    double m = (double)(z - a) / 20000.0;
    if (m < best) best = m;
  }
  return best;
}

static void host_info(memstub_profile *p) {
  snprintf(p->arch, sizeof p->arch, "%s", memstub_host_arch());
  snprintf(p->cpu, sizeof p->cpu, "%s", ms__prim_cpu_model());
  struct utsname u;
  if (uname(&u) == 0)
    snprintf(p->kernel, sizeof p->kernel, "%.60s %.60s", u.sysname, u.release);
  else
    snprintf(p->kernel, sizeof p->kernel, "unknown");
  snprintf(p->libc, sizeof p->libc, "glibc %s", gnu_get_libc_version());
  ms__cal_build_info(p);
  time_t now = time(NULL);
  struct tm tm;
  snprintf(p->date, sizeof p->date, "unknown");
  if (gmtime_r(&now, &tm)) strftime(p->date, sizeof p->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The model check: a component-like trace replayed with zero delays on a
 * fresh stack, unmeasured; the median of three durations against the
 * profile's prediction. */
static int model_check(ctx *c, int quick, memstub_error *err) {
  ms__synth_params sp = {.kind = MS__SYNTH_PAPER, .seed = 2011, .rows = quick ? 600 : 2400,
                         .duration_ns = 4800000000, .max_stack = 65536, .max_heap = 1 << 20};
  memstub_trace *t;
  int rc = ms__synth(&sp, &t);
  if (rc < 0) return memstub_error_set(err, rc, "cannot make the check trace");
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  go.time_scale = 0;
  memstub_gen *g = NULL;
  rc = memstub_gen_build(t, &go, &g, err);
  memstub_trace_free(t);
  if (rc < 0) return rc;
  double d[3], *cost = malloc((size_t)g->stub.numdata * sizeof *cost);
  if (!cost) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  for (int i = 0; i < 3 && rc == 0; i++) {
    memstub_replay *r;
    rc = run(c, g, 0, MEMSTUB_TIMING_DEADLINE, fresh_extra(c), &r, err);
    if (rc == 0) d[i] = (double)r->info.duration_ns;
    memstub_replay_free(r);
  }
  if (rc == 0) rc = memstub_gen_predict(&g->stub, &c->out->profile, 0, cost, err);
  if (rc == 0) {
    double sum = 0;
    for (int64_t i = 0; i < g->stub.numdata; i++) sum += cost[i];
    c->out->check_predicted_ns = sum;
    c->out->check_measured_ns = ms__cal_median(d, 3);
    c->out->check_points = g->stub.numdata;
  }
  free(cost);
  memstub_gen_free(g);
  return rc;
}

/* The work figures of one set of samples (hot or cold), except time_basic:
 * least squares (means), or with l1 least absolute deviations (medians). */
static int fit_costs(ctx *c, const ser *s, double cpn, int l1, memstub_calib_costs *k) {
  double fl = 5000 * cpn;  // 5 us: beyond that above the usual, a preemption
  int rc;
  memset(k, 0, sizeof *k);
  struct {
    int which;
    memstub_calib_time *t;
  } consts[] = {
      {S_HALLOC0, &k->heap_alloc_nofault},      {S_HALLOC1, &k->heap_alloc_fault},
      {S_HSHRINK, &k->heap_shrink},             {S_MALLOC0, &k->heap_mmap_alloc_nofault},
      {S_MALLOC1, &k->heap_mmap_alloc_fault},   {S_MSHRINK0, &k->heap_mmap_shrink_inpage},
      {S_FROMMMAP, &k->heap_from_mmap},         {S_SALLOC0, &k->stack_alloc_nofault},
      {S_SALLOC1, &k->stack_alloc_fault},       {S_SPOP, &k->stack_pop},
  };
  for (size_t i = 0; i < MS__ARRAY_SIZE(consts); i++)
    if ((rc = fig_const(c, &s[consts[i].which], fl, cpn, l1, consts[i].t)) < 0) return rc;
  struct {
    int which;
    memstub_calib_line *l;
  } lines[] = {{S_HUSE, &k->heap_use},           {S_MUSE, &k->heap_mmap_use},
               {S_SUSE, &k->stack_use},          {S_MSHRINK, &k->heap_mmap_shrink},
               {S_TOMMAP, &k->heap_to_mmap}};
  for (size_t i = 0; i < MS__ARRAY_SIZE(lines); i++)
    if ((rc = fig_line(c, &s[lines[i].which], fl, cpn, l1, lines[i].l)) < 0) return rc;
  return 0;
}

/* Per repetition: time_basic in ns into out->basic_rep_ns, and how much
 * later a point whose deadline has passed ends, in cycles, into lat (room
 * for the repetitions; *nl set). fb: the trimming floor. 0 or -ENOMEM. */
static int basic_reps(ctx *c, double fb, double cpn, double *lat, size_t *nl) {
  memstub_calib *out = c->out;
  const ser *s = c->s;
  size_t pos = 0, pos2 = 0;
  *nl = 0;
  for (int rep = 0; rep < c->o->repetitions; rep++) {
    size_t f, t, f2, t2;
    double m, m2, b, r2, rr;
    rep_range(&s[S_BASIC], rep, &f, &t, &pos);
    rep_range(&s[S_LATE], rep, &f2, &t2, &pos2);
    if (t == f) continue;
    if (fit1(NULL, s[S_BASIC].y + f, t - f, 0, fb, 0, &m, &b, &r2, &rr) < 0) return -ENOMEM;
    out->basic_rep_ns[out->nbasic++] = m / cpn;
    if (t2 == f2) continue;
    if (fit1(NULL, s[S_LATE].y + f2, t2 - f2, 0, fb, 0, &m2, &b, &r2, &rr) < 0) return -ENOMEM;
    lat[(*nl)++] = m2 - m;
  }
  return 0;
}

static int fit_all(ctx *c, double cpn) {
  memstub_calib *out = c->out;
  memstub_profile *p = &out->profile;
  double fl = 5000 * cpn;  // 5 us: beyond that above the usual, a preemption
  int rc = 0;
  ser *s = c->s;
  // time_basic, and per repetition for the plot.
  double fb = 200 * cpn;  // a basic point: 200 ns beyond the usual is an interruption
  if ((rc = fig_const(c, &s[S_BASIC], fb, cpn, 0, &p->basic)) < 0) return rc;
  out->basic_rep_ns = malloc((size_t)c->o->repetitions * sizeof *out->basic_rep_ns);
  if (!out->basic_rep_ns) return -ENOMEM;
  size_t nl;
  double *lat = malloc((size_t)c->o->repetitions * sizeof *lat);
  if (!lat) return -ENOMEM;
  memstub_calib_time late;
  if ((rc = basic_reps(c, fb, cpn, lat, &nl)) < 0 ||
      (rc = fig_const(c, &s[S_LATE], fb, cpn, 0, &late)) < 0) {
    free(lat);
    return rc;
  }
  double mean;
  ms__cal_mean_scv(lat, nl, &mean, &p->wait_late.scv);
  free(lat);
  p->wait_late.cycles = late.cycles > p->basic.cycles ? late.cycles - p->basic.cycles : 0;
  p->wait_late.ns = p->wait_late.cycles / cpn;
  // Measuring a trace: TIME periods are ns already.
  memstub_calib_time meas;
  if ((rc = fig_const(c, &s[S_MEAS], 1000, 1.0, 0, &meas)) < 0) return rc;
  p->measure_trace.ns = meas.cycles > p->basic.ns ? meas.cycles - p->basic.ns : 0;
  p->measure_trace.cycles = p->measure_trace.ns * cpn;
  p->measure_trace.scv = meas.scv;
  // usleep's overshoot (ns) against the delay (ms). In usleep timing every
  // overshoot adds up, so the compensation needs its mean; only beyond 1 ms
  // above the line is a sample taken for a preemption and trimmed. The
  // samples are ns: fitted with cpn 1, then given cycles.
  if ((rc = fig_line(c, &s[S_SLEEP], 1000000, 1.0, 0, &p->sleep_overshoot)) < 0) return rc;
  p->sleep_overshoot.base.cycles *= cpn;
  p->sleep_overshoot.per_fault.cycles *= cpn;
  if (s[S_SLEEP].n) {
    double *v = malloc(s[S_SLEEP].n * sizeof *v);
    if (!v) return -ENOMEM;
    memcpy(v, s[S_SLEEP].y, s[S_SLEEP].n * sizeof *v);
    ms__cal_median(v, s[S_SLEEP].n);  // sorts
    p->sleep_overshoot_p90_ns = v[(size_t)((double)(s[S_SLEEP].n - 1) * 0.9)];
    free(v);
  }
  // Heap and stack, hot; then the same figures cold.
  memstub_calib_costs hot;
  if ((rc = fit_costs(c, s, cpn, 0, &hot)) < 0) return rc;
  p->heap_alloc_nofault = hot.heap_alloc_nofault;
  p->heap_alloc_fault = hot.heap_alloc_fault;
  p->heap_use = hot.heap_use;
  p->heap_shrink = hot.heap_shrink;
  p->heap_mmap_alloc_nofault = hot.heap_mmap_alloc_nofault;
  p->heap_mmap_alloc_fault = hot.heap_mmap_alloc_fault;
  p->heap_mmap_use = hot.heap_mmap_use;
  p->heap_mmap_shrink = hot.heap_mmap_shrink;
  p->heap_mmap_shrink_inpage = hot.heap_mmap_shrink_inpage;
  p->heap_to_mmap = hot.heap_to_mmap;
  p->heap_from_mmap = hot.heap_from_mmap;
  p->stack_alloc_nofault = hot.stack_alloc_nofault;
  p->stack_alloc_fault = hot.stack_alloc_fault;
  p->stack_use = hot.stack_use;
  p->stack_pop = hot.stack_pop;
  if ((rc = fig_line(c, &s[S_SUSE_RT], fl, cpn, 0, &p->stack_use_retouch)) < 0) return rc;
  if (c->cold_reps > 0) {
    // Medians: deadline compensation moves each row by its predicted cost,
    // and the cost that minimises a row's |error| is its median (the cold
    // costs' spread is skewed: the mean would make most rows early).
    if ((rc = fit_costs(c, c->cs, cpn, 1, &p->cold)) < 0) return rc;
    // A basic point cold: the hot period, with the work inside its records
    // as measured cold instead of hot (both medians).
    memstub_calib_time hin, cin;
    if ((rc = fig_const(c, &s[S_BASIC_IN], fb, cpn, 1, &hin)) < 0 ||
        (rc = fig_const(c, &c->cs[S_BASIC_IN], fl, cpn, 1, &cin)) < 0)
      return rc;
    double v = p->basic.cycles + cin.cycles - hin.cycles;
    p->cold.basic.cycles = v > 0 ? v : 0;
    p->cold.basic.ns = p->cold.basic.cycles / cpn;
    p->cold.basic.scv = cin.scv;
  }
  // Bytes. The overhead per frame is what a push moves the stack pointer
  // beyond its alloca, measured exactly at every push (the median, frames
  // below the first); the offset is what the first frame adds beyond that.
  // Then stack = offset + per_frame x open frames + pushed bytes, by least
  // squares against every point, for R^2 and the largest residual.
  {
    const ser *q = &s[S_SFRAME];
    double *v = malloc((q->n + 1) * sizeof *v), *w = malloc((q->n + 1) * sizeof *w);
    if (!v || !w) {
      free(v);
      free(w);
      return -ENOMEM;
    }
    size_t nv = 0, nw = 0;
    for (size_t i = 0; i < q->n; i++) {
      if (q->x[i] >= 2) v[nv++] = q->y[i];
      else w[nw++] = q->y[i];
    }
    double frame = nv ? ms__cal_median(v, nv) : ms__cal_median(w, nw);
    p->stack_per_frame = llround(frame) > 0 ? llround(frame) : 0;
    p->stack_offset = nw ? llround(ms__cal_median(w, nw)) - p->stack_per_frame : 0;
    free(v);
    free(w);
  }
  double a = 0, b = 0, r2 = 0, rr = 0;
  if (s[S_SBYTES].n &&
      fit1(s[S_SBYTES].x, s[S_SBYTES].y, s[S_SBYTES].n, 1, 1e18, 0, &a, &b, &r2, &rr) < 0)
    return -ENOMEM;
  p->stack_fit_r2 = r2;
  for (size_t i = 0; i < s[S_SBYTES].n; i++) {
    int64_t e = llabs(llround(s[S_SBYTES].y[i] - (double)p->stack_offset -
                              (double)p->stack_per_frame * s[S_SBYTES].x[i]));
    if (e > p->stack_fit_max_resid) p->stack_fit_max_resid = e;
  }
  p->heap_overhead_empty = mean_bytes(&s[S_HB_EMPTY]);
  p->heap_overhead_inuse = mean_bytes(&s[S_HB_INUSE]);
  p->heap_overhead_mmap = mean_bytes(&s[S_HB_MMAP]);
  // Eq. 4 against the faults counted.
  for (size_t i = 0; i < s[S_HEAP_EQ4].n; i++) {
    double d = fabs(s[S_HEAP_EQ4].x[i] - s[S_HEAP_EQ4].y[i]);
    out->eq4_heap_points++;
    out->eq4_heap_exact += d == 0;
    out->eq4_heap_within1 += d <= 1;
  }
  for (size_t i = 0; i < s[S_STACK_EQ4].n; i++) {
    double d = fabs(s[S_STACK_EQ4].x[i] - s[S_STACK_EQ4].y[i]);
    out->eq4_stack_points++;
    out->eq4_stack_exact += d == 0;
    out->eq4_stack_within1 += d <= 1;
  }
  for (size_t i = 0; i < s[S_STACK_EQ4F].n; i++) {
    // With the frame overhead: the frame is F + a bytes on top of
    // offset + sum a + depth x F.
    const ser *q = &s[S_STACK_EQ4F];
    int64_t x = p->stack_per_frame + (int64_t)q->x[i];
    int64_t y = p->stack_offset + (int64_t)q->z[i] + (int64_t)q->w[i] * p->stack_per_frame;
    double d = fabs((double)ms__cal_eq4(x, y, c->page) - q->y[i]);
    out->eq4_stackf_points++;
    out->eq4_stackf_exact += d == 0;
  }
  // The arena's room: the median over the repetitions of the largest block
  // grown in place there; then the placement rule against every point.
  {
    double *v = malloc((size_t)c->o->repetitions * sizeof *v);
    if (!v) return -ENOMEM;
    memcpy(v, c->room, (size_t)c->o->repetitions * sizeof *v);
    p->heap_arena_room = llround(ms__cal_median(v, (size_t)c->o->repetitions));
    free(v);
    const ser *q = &s[S_HEAP_PLACE];
    int64_t hw = 0, rep = -1;
    int pm = 0;
    for (size_t i = 0; i < q->n; i++) {
      if (q->rep[i] != rep) rep = q->rep[i], hw = p->heap_pad, pm = 0;
      int64_t block = (int64_t)q->x[i], old = (int64_t)q->z[i];
      pm = ms__cal_mapped_next(pm, block, old, hw, p->heap_arena_room, p->mmap_threshold);
      if (!pm && block > hw) hw = block;
      out->rule_points++;
      out->rule_agree += pm == (int)q->y[i];
    }
  }
  for (size_t i = 0; i < s[S_HEAP_HW].n; i++) {
    out->model_heap_points++;
    out->model_heap_exact += s[S_HEAP_HW].x[i] == s[S_HEAP_HW].y[i];
  }
  p->eq4_heap_agreement =
      out->eq4_heap_points ? (double)out->eq4_heap_exact / (double)out->eq4_heap_points : 0;
  p->eq4_stack_agreement =
      out->eq4_stack_points ? (double)out->eq4_stack_exact / (double)out->eq4_stack_points : 0;
  // Samples fitted, and trimmed as outliers.
  for (int i = 0; i < S_COUNT; i++) out->samples_total += (int64_t)(s[i].n + c->cs[i].n);
  // Plot samples.
  static const ser empty;
  if ((rc = keep_samples(out, MEMSTUB_CALIB_S_HEAP_USE, &s[S_HUSE], NULL, cpn, m_heap_use, 0)) ||
      (rc = keep_samples(out, MEMSTUB_CALIB_S_HEAP_MMAP_USE, &s[S_MUSE], NULL, cpn, m_heap_mmap_use,
                         0)) ||
      (rc = keep_samples(out, MEMSTUB_CALIB_S_HEAP_ALLOC, &s[S_HALLOC0], &s[S_HALLOC1], cpn,
                         m_heap_alloc, 0)) ||
      (rc = keep_samples(out, MEMSTUB_CALIB_S_STACK_USE, &s[S_SUSE], NULL, cpn, m_stack_use, 0)) ||
      (rc = keep_samples(out, MEMSTUB_CALIB_S_STACK_RETOUCH, &s[S_SUSE_RT], NULL, cpn,
                         m_stack_retouch, 0)) ||
      (rc = keep_samples(out, MEMSTUB_CALIB_S_STACK_ALLOC, &s[S_SALLOC0], &s[S_SALLOC1], cpn,
                         m_stack_alloc, 0)) ||
      (rc = keep_samples(out, MEMSTUB_CALIB_S_STACK_BYTES, &s[S_SBYTES], NULL, cpn, m_stack_bytes,
                         1)) ||
      (rc = keep_samples(out, MEMSTUB_CALIB_S_SLEEP, &s[S_SLEEP], &empty, cpn, m_sleep, 1)) ||
      (rc = keep_samples(out, MEMSTUB_CALIB_S_COLD_HEAP_MMAP_USE, &c->cs[S_MUSE], NULL, cpn,
                         m_cold_heap_mmap_use, 0)) ||
      (rc = keep_samples(out, MEMSTUB_CALIB_S_COLD_STACK_USE, &c->cs[S_SUSE], NULL, cpn,
                         m_cold_stack_use, 0)))
    return rc;
  return 0;
}

int memstub_calibrate(const memstub_calib_options *o, memstub_calib **out, memstub_error *err) {
  *out = NULL;
  memstub_calib_options def;
  if (!o) {
    memstub_calib_options_init(&def);
    o = &def;
  }
  if (o->repetitions < 1 || o->repetitions > 100000)
    return memstub_error_set(err, -EINVAL, "repetitions: %lld is not between 1 and 100000",
                             (long long)o->repetitions);
  if (o->cold_delay_ns != 0 && (o->cold_delay_ns < MEMSTUB_CALIB_COLD_DELAY_MIN ||
                                o->cold_delay_ns > MEMSTUB_CALIB_COLD_DELAY_MAX))
    return memstub_error_set(err, -EINVAL, "cold delay: %lld ns is not 0 nor between %d and %d",
                             (long long)o->cold_delay_ns, MEMSTUB_CALIB_COLD_DELAY_MIN,
                             MEMSTUB_CALIB_COLD_DELAY_MAX);
  int64_t t_start = ms__prim_now_ns();
  // Every repetition sees glibc's default threshold, as a fresh process does
  // (glibc raises it when a mapped chunk is freed, unless it was set).
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  ctx c = {.o = o, .page = ms__prim_page_size()};
  c.invariant = ms__prim_cycles_invariant();
  double cpn = c.invariant ? ms__prim_cycles_per_ns() : 1.0;
  c.timer = timer_ticks();
  c.out = calloc(1, sizeof *c.out);
  c.room = calloc((size_t)o->repetitions, sizeof *c.room);
  if (!c.out || !c.room) {
    free(c.out);
    free(c.room);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  // The cold traces run in every fifth repetition, at least once.
  if (o->cold_delay_ns > 0) {
    c.cold_every = 5;
    c.cold_reps = (o->repetitions + c.cold_every - 1) / c.cold_every;
  }
  stubs st = {0};
  int rc = build_stubs(&st, o->quick, o->cold_delay_ns, err);
  c.total = o->repetitions * 12 + 3 + c.cold_reps * 3;
  for (int rep = 0; rc == 0 && rep < o->repetitions; rep++) {
    if ((rc = rep_basic(&c, &st, rep, err)) < 0 || (rc = rep_sleep(&c, &st, rep, err)) < 0 ||
        (rc = rep_heap(&c, &st, rep, err)) < 0 || (rc = rep_stack(&c, &st, rep, err)) < 0 ||
        (rc = rep_bytes(&c, &st, rep, err)) < 0)
      break;
  }
  memstub_profile *p = &c.out->profile;
  if (rc == 0) {
    p->format = MEMSTUB_PROFILE_FORMAT;
    host_info(p);
    p->page_size = c.page;
    p->cycles_per_ns = cpn;
    p->cycles_invariant = c.invariant;
    p->timer_cycles = c.timer;
    p->repetitions = o->repetitions;
    p->mmap_threshold = 128 * 1024;
    p->heap_pad = c.heap_pad;
    p->cold_delay = o->cold_delay_ns;
    p->cold_repetitions = c.cold_reps;
    // A wait shorter than the deadline margin spins without sleeping.
    p->cold_min_delay = c.cold_reps > 0 ? MEMSTUB_MARGIN_DEFAULT : 0;
    if ((rc = fit_all(&c, cpn)) < 0)
      rc = memstub_error_set(err, rc, "cannot fit the calibration samples: %s", strerror(-rc));
  }
  if (rc == 0) rc = model_check(&c, o->quick, err);
  free_stubs(&st);
  for (int i = 0; i < S_COUNT; i++) ser_free(&c.s[i]), ser_free(&c.cs[i]);
  free(c.room);
  if (rc < 0) {
    memstub_calib_free(c.out);
    return rc;
  }
  c.out->duration_s = (double)(ms__prim_now_ns() - t_start) / 1e9;
  c.out->cold_duration_s = (double)c.cold_ns / 1e9;
  *out = c.out;
  return 0;
}
