// The calibration runs: every repetition replays the calibration programs
// (programs.c) with memstub_replay_run and turns the engine's records into
// samples, one series per figure (figures.c fits them).
//
// Times come from the engine's cycle records (invariant TSC: lfence;rdtsc /
// rdtscp;lfence), one counter read's own cost subtracted per phase; faults
// from separate runs with MEMSTUB_MEASURE_FAULTS (three getrusage calls per
// point would distort the times); bytes from MEMSTUB_MEASURE_STACK and
// MEMSTUB_MEASURE_HEAP runs. In every fifth repetition the basic, heap and
// stack traces also run cold, with a sleep before every point as in a
// replay; those cycle records pair with the same repetition's hot fault and
// heap runs.
#include <errno.h>
#include <stdlib.h>

#include "internal.h"
#include "prim.h"

/* ---- samples ----------------------------------------------------------------- */

static int grow(void **p, size_t cap, size_t size) {
  void *q = realloc(*p, cap * size);
  if (!q) return -ENOMEM;
  *p = q;
  return 0;
}

int ms__cal_add4(ms__cal_ser *s, double x, double y, double z, double w, int rep) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    if (grow((void **)&s->x, cap, sizeof *s->x) < 0 ||
        grow((void **)&s->y, cap, sizeof *s->y) < 0 ||
        grow((void **)&s->z, cap, sizeof *s->z) < 0 ||
        grow((void **)&s->w, cap, sizeof *s->w) < 0 ||
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

void ms__cal_ser_free(ms__cal_ser *s) {
  free(s->x);
  free(s->y);
  free(s->z);
  free(s->w);
  free(s->rep);
}

/* ---- one run ------------------------------------------------------------------- */

static int cold_rep(const ms__cal_ctx *c, int rep) {
  return c->cold_every > 0 && rep % c->cold_every == 0;
}

/* A fresh thread stack for every "fresh" run: glibc caches the stacks of
 * exited threads and hands out the smallest cached one that is large enough,
 * so a request larger than any before gets a new mapping (first touch). */
static int64_t fresh_pages;

int64_t ms__cal_fresh_extra(const ms__cal_ctx *c) {
  return __atomic_add_fetch(&fresh_pages, 1, __ATOMIC_RELAXED) * c->page;
}

int ms__cal_run(ms__cal_ctx *c, const memstub_gen *g, unsigned measure, int timing,
                int64_t extra, memstub_replay **r, memstub_error *err) {
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.measure = measure;
  o.timing = timing;
  o.stack_extra = extra;
  // Without an invariant counter, time the cycle runs against CLOCK_MONOTONIC.
  if (!c->invariant && (measure & MEMSTUB_MEASURE_CYCLES)) o.measure |= MEMSTUB_MEASURE_TIME;
  // Give the free pages of every arena back, so the replay's heap faults as
  // in a fresh process (the replay thread reuses an earlier thread's arena).
  ms__prim_heap_trim();
  int rc = memstub_replay_run(&g->stub, &o, r, err);
  if (rc < 0) memstub_error_prefix(err, "calibration replay");
  c->done++;
  if (c->o->progress) c->o->progress(c->done, c->total, c->o->progress_arg);
  return rc;
}

// A deadline-timed run of g: the measure bits given, the default stack.
static int run(ms__cal_ctx *c, const memstub_gen *g, unsigned measure, memstub_replay **r,
               memstub_error *err) {
  return ms__cal_run(c, g, measure, MEMSTUB_TIMING_DEADLINE, 0, r, err);
}

// A cold run of g with cycle records on a stack extra bytes larger; its wall
// time counts as cold.
static int run_cold(ms__cal_ctx *c, const memstub_gen *g, int64_t extra, memstub_replay **r,
                    memstub_error *err) {
  int64_t t0 = ms__prim_now_ns();
  int rc = ms__cal_run(c, g, MEMSTUB_MEASURE_CYCLES, MEMSTUB_TIMING_DEADLINE, extra, r, err);
  c->cold_ns += ms__prim_now_ns() - t0;
  return rc;
}

static int oom(int rc, memstub_error *err) {
  return rc < 0 ? memstub_error_set(err, rc, "out of memory") : 0;
}

/* Counter ticks -> the profile's cycles: 1 with an invariant counter, else
 * ns per tick measured over the run itself (the fallback). */
static double tick_scale(const ms__cal_ctx *c, const memstub_replay *r) {
  if (c->invariant) return 1.0;
  int64_t n = r->stub->numdata;
  if (n < 2) return 1.0;
  double ticks = (double)(r->rec[n - 1].cyc_end - r->rec[0].cyc_start);
  double ns = (double)(r->rec[n - 1].end_ns - r->rec[0].start_ns);
  return ticks > 0 && ns > 0 ? ns / ticks : 1.0;
}

// A phase's time: the counter difference minus one read.
static double phase(const ms__cal_ctx *c, uint64_t a, uint64_t b, double k) {
  return ((double)(b - a) - c->timer) * k;
}

// A basic point's work inside its cycle records: four phases, each holding one read.
static double basic_in(const ms__cal_ctx *c, const memstub_replay_record *r, double k) {
  return ((double)(r->cyc_end - r->cyc_start) - 4 * c->timer) * k;
}

/* ---- time per point ---------------------------------------------------------- */

// The periods of g's points (late: every deadline already passed).
static int basic_periods(ms__cal_ctx *c, const memstub_gen *g, int late, int rep,
                         memstub_error *err) {
  memstub_replay *r;
  int rc = run(c, g, MEMSTUB_MEASURE_CYCLES, &r, err);
  if (rc < 0) return rc;
  double k = tick_scale(c, r);
  // A period holds four reads inside the point and the next point's first.
  for (int64_t i = 1; rc == 0 && i + 1 < r->stub->numdata; i++) {
    double v = ((double)(r->rec[i + 1].cyc_start - r->rec[i].cyc_start) - 5 * c->timer) * k;
    rc = ms__cal_add(&c->s[late ? MS__S_LATE : MS__S_BASIC], 0, v, rep);
    if (rc == 0 && !late)
      rc = ms__cal_add(&c->s[MS__S_BASIC_IN], 0, basic_in(c, &r->rec[i], k), rep);
  }
  memstub_replay_free(r);
  return oom(rc, err);
}

// The basic points measured as memstub replay --measure does.
static int basic_measured(ms__cal_ctx *c, const memstub_gen *g, int rep, memstub_error *err) {
  memstub_replay *r;
  int rc = run(c, g, MEMSTUB_MEASURE_TRACE, &r, err);
  if (rc < 0) return rc;
  for (int64_t i = 1; rc == 0 && i + 1 < r->stub->numdata; i++)
    rc = ms__cal_add(&c->s[MS__S_MEAS], 0, (double)(r->rec[i + 1].start_ns - r->rec[i].start_ns),
                 rep);
  memstub_replay_free(r);
  return oom(rc, err);
}

// Cold: each basic point after a sleep; its work inside the records.
static int basic_cold(ms__cal_ctx *c, const memstub_gen *g, int rep, memstub_error *err) {
  memstub_replay *r;
  int rc = run_cold(c, g, 0, &r, err);
  if (rc < 0) return rc;
  double k = tick_scale(c, r);
  for (int64_t i = 1; rc == 0 && i < r->stub->numdata; i++)
    rc = ms__cal_add(&c->cs[MS__S_BASIC_IN], 0, basic_in(c, &r->rec[i], k), rep);
  memstub_replay_free(r);
  return oom(rc, err);
}

static int rep_basic(ms__cal_ctx *c, const ms__cal_programs *st, int rep, memstub_error *err) {
  int rc;
  if ((rc = basic_periods(c, st->basic, 0, rep, err)) < 0 ||
      (rc = basic_periods(c, st->late, 1, rep, err)) < 0 ||
      (rc = basic_measured(c, st->basic, rep, err)) < 0)
    return rc;
  return cold_rep(c, rep) ? basic_cold(c, st->cbasic, rep, err) : 0;
}

static int rep_sleep(ms__cal_ctx *c, const ms__cal_programs *st, int rep, memstub_error *err) {
  memstub_replay *r;
  int rc = ms__cal_run(c, st->sleep, MEMSTUB_MEASURE_TIME, MEMSTUB_TIMING_USLEEP, 0, &r, err);
  if (rc < 0) return rc;
  const struct memstub_stub *s = r->stub;
  for (int64_t i = 1; rc == 0 && i < s->numdata; i++) {
    int64_t d = s->use[i].time;
    if (d <= 0) continue;
    double over = (double)(r->rec[i].start_ns - r->rec[i - 1].end_ns - d);
    rc = ms__cal_add(&c->s[MS__S_SLEEP], (double)d / 1e6, over, rep);
  }
  memstub_replay_free(r);
  return oom(rc, err);
}

/* ---- heap -------------------------------------------------------------------- */

// The heap trace's state at a point, as the hot runs saw it.
typedef struct heap_pt {
  int64_t old, size, pad;  // the size before and after; the runtime's block pad
  int was_mapped, mapped;  // where the block was and is in the heap run
  int un_was, un_mapped;   // ... in the runs that do not measure the heap
  int64_t pf;              // faults of the heap phase
} heap_pt;

/* The hot heap run's byte and placement samples of point p (h: its heap
 * record), and the arena pages written so far (*hw). */
static int heap_hot_point(ms__cal_ctx *c, const heap_pt *p, const memstub_replay_record *h,
                          int visible, int64_t *hw, int rep) {
  ms__cal_ser *S = c->s;
  int64_t size = p->size, old = p->old, pad = p->pad;
  int in_arena = !p->was_mapped && !p->mapped;
  // The arena pages written so far, for the generator's fault count.
  int64_t hw_beyond = size + pad > *hw ? (size + pad) / c->page - *hw / c->page : 0;
  if (!p->mapped && size + pad > *hw) *hw = size + pad;
  // Where the block is, for the generator's placement rule (checked later).
  int rc = ms__cal_add4(&S[MS__S_HEAP_PLACE], (double)(size + pad), p->mapped,
                        (double)(old + pad), 0, rep);
  // The largest block glibc grew in place in the arena.
  if (size > old && in_arena && size + pad > c->room[rep]) c->room[rep] = size + pad;
  // Bytes: measured minus replayed.
  if (rc == 0 && visible) {
    int which = size == 0 ? MS__S_HB_EMPTY : p->mapped ? MS__S_HB_MMAP : MS__S_HB_INUSE;
    rc = ms__cal_add(&S[which], (double)size, (double)(h->heap_bytes - size), rep);
  }
  if (rc == 0 && size > old && in_arena) {
    int64_t eq4 = ms__cal_eq4(size - old, old, c->page);
    rc = ms__cal_add(&S[MS__S_HEAP_EQ4], (double)eq4, (double)p->pf, rep);
    if (rc == 0) rc = ms__cal_add(&S[MS__S_HEAP_HW], (double)hw_beyond, (double)p->pf, rep);
  }
  return rc;
}

/* The time samples of a heap change p, its phases alloc and use, into S, by
 * where the block was and went in the runs that do not measure the heap. */
static int heap_time_point(ms__cal_ctx *c, ms__cal_ser *S, const heap_pt *p, double alloc,
                           double use, int rep) {
  int64_t pf = p->pf, size = p->size, old = p->old;
  int was = p->un_was, now = p->un_mapped;
  if (size > old && !was && !now) {
    // A copy within the arena: counted apart, not fitted (the cost model
    // does not predict it; as a fault it made time_heap_alloc_fault depend
    // on how many such moves the trace happened to have).
    if (ms__cal_arena_moved(old, size, p->pad, pf, c->page))
      return ms__cal_add(&S[MS__S_HMOVE], (double)ms__malloc_pages(old + p->pad, c->page),
                         alloc + use, rep);
    int rc = ms__cal_add(&S[pf > 0 ? MS__S_HALLOC1 : MS__S_HALLOC0], (double)pf, alloc, rep);
    return rc ? rc : ms__cal_add(&S[MS__S_HUSE], (double)(pf > 0 ? pf - 1 : 0), use, rep);
  }
  if (size > old && was && now) {
    int rc = ms__cal_add(&S[pf > 0 ? MS__S_MALLOC1 : MS__S_MALLOC0], (double)pf, alloc, rep);
    return rc ? rc : ms__cal_add(&S[MS__S_MUSE], (double)pf, use, rep);
  }
  if (size > old && !was && now) {
    // The copy faults the old size's pages (the line's x); the use phase
    // writes the rest.
    int64_t copied = ms__malloc_pages(MS__MALLOC_MMAP_HEADER + old + p->pad, c->page);
    int rc = ms__cal_add(&S[MS__S_TOMMAP], (double)copied, alloc, rep);
    return rc ? rc : ms__cal_add(&S[MS__S_MUSE], (double)(pf > copied ? pf - copied : 0), use, rep);
  }
  if (size < old && !was && !now) return ms__cal_add(&S[MS__S_HSHRINK], (double)pf, alloc, rep);
  if (size < old && was && now) {
    int64_t back = ms__cal_map_pages(old, p->pad, c->page) -
                   ms__cal_map_pages(size, p->pad, c->page);
    return ms__cal_add(&S[back > 0 ? MS__S_MSHRINK : MS__S_MSHRINK0], (double)back, alloc, rep);
  }
  if (size < old && was && !now)
    return ms__cal_add(&S[MS__S_FROMMMAP], (double)pf, alloc + use, rep);
  return 0;
}

/* The heap samples of the cycle run ra, with the faults and the block's
 * placement of the same points from the hot runs rf and rh. cold: ra is a
 * cold run (its points are the first of rf's); only its time samples are
 * taken, into c->cs. */
static int heap_samples(ms__cal_ctx *c, const memstub_replay *ra, const memstub_replay *rf,
                        const memstub_replay *rh, int cold, int rep) {
  const struct memstub_stub *s = ra->stub;
  int visible = rh->info.heap_visible;
  double k = tick_scale(c, ra);
  heap_pt p = {.pad = rh->info.heap_pad};
  int64_t hw = p.pad;  // the arena pages written so far (the generator's model)
  int rc = cold ? 0 : ms__cal_add(&c->s[MS__S_HB_EMPTY], 0, (double)rh->info.entry.heap_bytes, rep);
  for (int64_t i = 0; rc == 0 && i < s->numdata; i++) {
    const memstub_replay_record *a = &ra->rec[i], *f = &rf->rec[i], *h = &rh->rec[i];
    p.old = p.size;
    p.size += s->use[i].heapAlloc;
    if (p.size < 0) p.size = 0;
    p.mapped = visible ? ms__malloc_usable_is_mmapped(h->heap_usable, c->page)
                       : (p.was_mapped ? p.size + p.pad >= MS__CAL_MMAP_THRESHOLD
                                       : ms__malloc_is_mmapped(p.size + p.pad, MS__CAL_MMAP_THRESHOLD));
    p.pf = f->faults_end - f->faults_stack;
    p.un_mapped = ms__cal_unmeasured_mapped(p.un_was, p.old, p.size, p.pad, p.pf, c->page);
    if (!cold) rc = heap_hot_point(c, &p, h, visible, &hw, rep);
    double alloc = phase(c, a->cyc_stack_use, a->cyc_heap_alloc, k);
    double use = phase(c, a->cyc_heap_alloc, a->cyc_end, k);
    if (rc == 0 && p.size != p.old)
      rc = heap_time_point(c, cold ? c->cs : c->s, &p, alloc, use, rep);
    p.was_mapped = p.mapped;
    p.un_was = p.un_mapped;
  }
  return rc;
}

static int rep_heap(ms__cal_ctx *c, const ms__cal_programs *st, int rep, memstub_error *err) {
  memstub_replay *ra = NULL, *rf = NULL, *rh = NULL, *rk = NULL;
  int rc = run(c, st->heap, MEMSTUB_MEASURE_CYCLES, &ra, err);
  if (rc == 0) rc = run(c, st->heap, MEMSTUB_MEASURE_FAULTS, &rf, err);
  if (rc == 0) rc = run(c, st->heap, MEMSTUB_MEASURE_HEAP, &rh, err);
  if (rc == 0) {
    c->heap_pad = rh->info.heap_pad;
    rc = oom(heap_samples(c, ra, rf, rh, 0, rep), err);
  }
  // Cold: the same points after a sleep each; faults and placement are
  // those of the hot runs (a sleep changes neither).
  if (rc == 0 && cold_rep(c, rep) && (rc = run_cold(c, st->cheap, 0, &rk, err)) == 0)
    rc = oom(heap_samples(c, rk, rf, rh, 1, rep), err);
  memstub_replay_free(ra);
  memstub_replay_free(rf);
  memstub_replay_free(rh);
  memstub_replay_free(rk);
  return rc;
}

/* ---- stack ------------------------------------------------------------------- */

/* The stack samples of the cycle run ra with the faults of rf (the same
 * points on a stack in the same state). kind 0: first touch (hot), 1: a
 * cached stack, 2: first touch, cold (into c->cs). */
static int stack_samples(ms__cal_ctx *c, const memstub_replay *ra, const memstub_replay *rf,
                         int kind, int rep) {
  const struct memstub_stub *s = ra->stub;
  ms__cal_ser *S = kind == 2 ? c->cs : c->s;
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
      if (kind != 1) rc = ms__cal_add(&S[MS__S_SPOP], 0, alloc, rep);
      sum += sa;
      depth--;
      continue;
    }
    if (sa == 0) continue;
    if (kind != 1) {
      rc = ms__cal_add(&S[pf > 0 ? MS__S_SALLOC1 : MS__S_SALLOC0], (double)pf, alloc, rep);
      if (rc == 0) rc = ms__cal_add(&S[MS__S_SUSE], (double)(pf > 0 ? pf - 1 : 0), use, rep);
    }
    if (kind == 0) {
      if (rc == 0)
        rc = ms__cal_add(&S[MS__S_STACK_EQ4], (double)ms__cal_eq4(sa, sum, c->page), (double)pf,
                         rep);
      // For eq. 4 with the frame overhead, once it is known.
      if (rc == 0)
        rc = ms__cal_add4(&S[MS__S_STACK_EQ4F], (double)sa, (double)pf, (double)sum, (double)depth,
                      rep);
    } else if (kind == 1) {
      rc = ms__cal_add(&S[MS__S_SUSE_RT], (double)(pf > 0 ? pf - 1 : 0), use, rep);
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
static int rep_stack(ms__cal_ctx *c, const ms__cal_programs *st, int rep, memstub_error *err) {
  int64_t e1 = ms__cal_fresh_extra(c), e2 = ms__cal_fresh_extra(c);
  int64_t extra[2][2] = {{e1, e2}, {e2, e1}};
  int rc = 0;
  memstub_replay *first = NULL;  // the first-touch faults
  for (int retouch = 0; retouch < 2 && rc == 0; retouch++) {
    memstub_replay *ra = NULL, *rf = NULL;
    rc = ms__cal_run(c, st->stack, MEMSTUB_MEASURE_CYCLES, MEMSTUB_TIMING_DEADLINE,
                     extra[retouch][0], &ra, err);
    if (rc == 0)
      rc = ms__cal_run(c, st->stack, MEMSTUB_MEASURE_FAULTS, MEMSTUB_TIMING_DEADLINE,
                       extra[retouch][1], &rf, err);
    if (rc == 0) rc = oom(stack_samples(c, ra, rf, retouch, rep), err);
    memstub_replay_free(ra);
    if (retouch == 0) first = rf;
    else memstub_replay_free(rf);
  }
  if (rc == 0 && cold_rep(c, rep)) {
    memstub_replay *rk = NULL;
    rc = run_cold(c, st->cstack, ms__cal_fresh_extra(c), &rk, err);
    if (rc == 0) rc = oom(stack_samples(c, rk, first, 2, rep), err);
    memstub_replay_free(rk);
  }
  memstub_replay_free(first);
  return rc;
}

/* ---- bytes ------------------------------------------------------------------- */

static int rep_bytes(ms__cal_ctx *c, const ms__cal_programs *st, int rep, memstub_error *err) {
  memstub_replay *r;
  int rc = run(c, st->bytes, MEMSTUB_MEASURE_STACK, &r, err);
  if (rc < 0) return rc;
  const struct memstub_stub *s = r->stub;
  int64_t *open = malloc((size_t)(s->numdata + 1) * sizeof *open), depth = 0, sum = 0;
  if (!open) rc = -ENOMEM;
  for (int64_t i = 0; rc == 0 && i < s->numdata; i++) {
    int64_t sa = s->use[i].stackAlloc;
    if (sa > 0) open[depth++] = sa, sum += sa;
    if (sa < 0) sum -= open[--depth];
    rc = ms__cal_add(&c->s[MS__S_SBYTES], (double)depth, (double)(r->rec[i].stack_bytes - sum),
                     rep);
    // A push's frame: the stack pointer moved by the call (the overhead)
    // and by alloca (stack_moved), from the level the previous point ended in.
    int64_t before = i > 0 ? r->rec[i - 1].stack_bytes : 0;
    if (rc == 0 && sa > 0)
      rc = ms__cal_add(&c->s[MS__S_SFRAME], (double)depth,
                   (double)(r->rec[i].stack_bytes - before - r->rec[i].stack_moved), rep);
  }
  free(open);
  memstub_replay_free(r);
  return oom(rc, err);
}

/* ---- resident memory ---------------------------------------------------------- */

/* One measured replay of a resident trace g on a fresh thread stack (as a
 * new stub process gets): its rss_bytes minus the target at every point
 * (MS__S_RES_INUSE), and the RssAnon it added before its first point
 * against the points it measured (MS__S_RES_ENTRY: its thread's stack, the
 * arena, the scratch and the records). No /proc: no samples. */
static int res_run(ms__cal_ctx *c, const memstub_gen *g, int rep, memstub_error *err) {
  int fd = ms__prim_statm_open();
  ms__prim_heap_trim();  // ms__cal_run trims too: read after the same trim
  int64_t before = fd >= 0 ? ms__prim_statm_anon(fd) : -1;
  ms__prim_statm_close(fd);
  memstub_replay *r;
  int rc = ms__cal_run(c, g, MEMSTUB_MEASURE_RESIDENT, MEMSTUB_TIMING_DEADLINE,
                       ms__cal_fresh_extra(c), &r, err);
  if (rc < 0) return rc;
  const struct memstub_stub *s = r->stub;
  if (before >= 0 && r->info.rss_entry_bytes >= 0)
    rc = ms__cal_add(&c->s[MS__S_RES_ENTRY], (double)s->numdata,
                     (double)(r->info.rss_entry_bytes - before), rep);
  for (int64_t i = 0; rc == 0 && s->rss && i < s->numdata; i++)
    if (r->rec[i].rss_bytes >= 0 && s->rss[i] >= 0)
      rc = ms__cal_add(&c->s[MS__S_RES_INUSE], (double)s->rss[i],
                       (double)(r->rec[i].rss_bytes - s->rss[i]), rep);
  memstub_replay_free(r);
  return oom(rc, err);
}

static int rep_resident(ms__cal_ctx *c, const ms__cal_programs *st, int rep, memstub_error *err) {
  int rc = res_run(c, st->resident, rep, err);
  return rc < 0 ? rc : res_run(c, st->resident4, rep, err);
}

int ms__cal_repetition(ms__cal_ctx *c, const ms__cal_programs *st, int rep, memstub_error *err) {
  int rc;
  if ((rc = rep_basic(c, st, rep, err)) < 0 || (rc = rep_sleep(c, st, rep, err)) < 0 ||
      (rc = rep_heap(c, st, rep, err)) < 0 || (rc = rep_stack(c, st, rep, err)) < 0 ||
      (rc = rep_resident(c, st, rep, err)) < 0 || (rc = rep_bytes(c, st, rep, err)) < 0)
    return rc;
  return ms__cal_calls_round(c, rep, err);  // calls.c
}
