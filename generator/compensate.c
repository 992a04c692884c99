// Calibration compensation (memstub gen --calibration): the stub's own byte
// and time overheads, measured on the target host (calibration/, the profile
// in memstub/calib.h), are taken out of the data so the replayed curves and
// times match the trace. docs/calibration.md, "Compensation".
//
//   stage 0 (targets): refuse a profile from another architecture or page
//     size; subtract the heap overhead in use from the heap targets; hand the
//     stack offset and per-frame overhead to the overhead-aware normaliser
//     (normalize.c).
//   stage 1 (points): predict each point's cost (the cost model below: in
//     deadline timing the profile's cold figures for the points of a row
//     that sleeps before it, else the hot ones) and take it out of the
//     delays. Deadline timing: each row's points start
//     early by their predicted cost, T'_r = max(T_r - C_r, T'_{r-1}), so the
//     row completes at its deadline; nothing accumulates. usleep timing: each
//     row's delay loses the predicted cost and the sleep's overshoot, and
//     what a delay cannot absorb is carried forward.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "malloc_model.h"
#include "ms_common.h"
#include "memstub/calib.h"
#include "prim.h"
#include "resident_rule.h"

/* ---- the cost model ------------------------------------------------------- */

// Sizes the compensation's 64-bit arithmetic takes: 2^60 bytes (1 EiB), far
// beyond any machine's memory, far enough below 2^63 that sums cannot overflow.
#define MAX_BYTES ((int64_t)1 << 60)
// Likewise for times: 2^60 ns (36 years), the most a prediction may add up to.
#define MAX_NS 0x1p60

/* The replay's state as far as the cost model needs it. Page faults follow
 * eq. 4, generalised to traces that fall and rise again: only pages beyond
 * the deepest point reached so far fault (the stack's pages stay resident
 * within a replay; the arena's too: glibc keeps them as its top pad), and a
 * mapped block faults on pages beyond its current mapping. */
typedef struct sim {
  const memstub_profile *p;
  const memstub_calib_costs *k;  // the figures for the current point: hot or cold
  int64_t page, frame, offset, pad, thr;
  int64_t *open;  // pushed bytes of the open frames
  int64_t depth;
  int64_t stack, stack_hw;  // offset + sum(F + a); the deepest so far
  int64_t heap;             // replayed heap size
  int mapped;
  int64_t arena_hw;         // bytes of the arena block's pages written so far
  /* A stub with resident data (layout 2) writes pages only as far as its
   * rss target (runtime/resident.c): the cost model counts those touched
   * pages, not the requested bytes. */
  int resident;
  int64_t map_len, map_cap;     // the stub's own mapping: bytes replayed, whole pages
  int64_t touched_h, touched_m; // bytes of the heap block and of the mapping written
  int64_t keep_cap, touched_k;  // the keep mapping (resident beyond both): pages, bytes written
  const char *beyond;       // "stack" or "heap" once that total left +-MAX_BYTES, else NULL
  ms__fig_uses *uses;       // the figures' uses, recorded when not NULL (unsure.c)
} sim;

// Pages of glibc's mapping for a block of size + pad bytes (calibration's
// ms__cal_map_pages).
static int64_t map_pages(int64_t size, int64_t pad, int64_t page) {
  return ms__malloc_mmap_bytes(size + pad, page) / page;
}

static int64_t pages_beyond(int64_t v, int64_t hw, int64_t page) {
  // Eq. 4 with y = hw, x = v - hw: floor(((hw % page) + x) / page).
  return v > hw ? v / page - hw / page : 0;
}

// Figure t of the current set (m->k), used with weight w (unsure.c).
static void used(sim *m, const memstub_calib_time *t, double w) {
  if (!m->uses) return;
  size_t at = (size_t)((const char *)t - (const char *)m->k) / sizeof(double);
  m->uses->w[m->k == &m->p->cold][at] += w;
}

// The time figure t of the current set.
static double fig(sim *m, const memstub_calib_time *t) {
  used(m, t, 1);
  return t->ns;
}

static double line(sim *m, const memstub_calib_line *l, int64_t faults) {
  used(m, &l->base, 1);
  used(m, &l->per_fault, (double)faults);
  double v = l->base.ns + l->per_fault.ns * (double)faults;
  return v > 0 ? v : 0;
}

/* a + b, when within +-MAX_BYTES; otherwise m->beyond is set to what (the
 * simulation stops there) and a is returned. */
static int64_t add(sim *m, int64_t a, int64_t b, const char *what) {
  int64_t v;
  if (__builtin_add_overflow(a, b, &v) || v > MAX_BYTES || v < -MAX_BYTES) {
    m->beyond = what;
    return a;
  }
  return v;
}

// The stack part of point u.
static double stack_cost(sim *m, int64_t sa) {
  const memstub_calib_costs *k = m->k;
  if (sa < 0) {
    if (m->depth > 0) {
      m->depth--;  // the first frame carries the offset
      m->stack -= m->frame + m->open[m->depth] + (m->depth ? 0 : m->offset);
    }
    return fig(m, &k->stack_pop);
  }
  if (sa == 0) return 0;
  // A frame of at most MAX_BYTES on a stack within it: the pop's sum cannot overflow.
  int64_t frame = add(m, add(m, m->frame, sa, "stack"), m->depth ? 0 : m->offset, "stack");
  m->stack = add(m, m->stack, frame, "stack");
  if (m->beyond) return 0;
  m->open[m->depth++] = sa;
  int64_t pf = pages_beyond(m->stack, m->stack_hw, m->page);
  if (m->stack > m->stack_hw) m->stack_hw = m->stack;
  // The call below the new frame takes the first fault (alloc), the
  // writing of the frame the others (use).
  return fig(m, pf > 0 ? &k->stack_alloc_fault : &k->stack_alloc_nofault) +
         line(m, &k->stack_use, pf > 0 ? pf - 1 : 0);
}

// The heap part of a change by dh.
static double heap_cost(sim *m, int64_t dh) {
  const memstub_calib_costs *k = m->k;
  int64_t old = m->heap;  // 0 <= old <= MAX_BYTES: a fall cannot overflow, only a rise
  int64_t size = dh > 0 ? add(m, old, dh, "heap") : old + dh;
  if (m->beyond) return 0;
  if (size < 0) size = 0;
  if (size == old) return 0;
  m->heap = size;
  int64_t block = size + m->pad;  // what the runtime asks glibc for
  if (size < old && m->resident && m->mapped && m->touched_h > size) {
    // The runtime moves the written pages the shrink unmaps into its keep
    // mapping (mremap: no fault, resident.c).
    int64_t moved = (m->touched_h + m->page - 1) / m->page * m->page -
                    (size + m->page - 1) / m->page * m->page;
    if (moved > 0) {
      int64_t at = (m->touched_k + m->page - 1) / m->page * m->page;
      m->touched_k = at + moved;
      if (m->touched_k > m->keep_cap) m->keep_cap = m->touched_k;
    }
    m->touched_h = size;
  }
  if (size < old) {
    if (m->mapped && block < m->thr) {  // the runtime moves it back to the arena
      m->mapped = 0;                     // (calloc writes every page of the new chunk)
      if (block > m->arena_hw) m->arena_hw = block;
      return fig(m, &k->heap_from_mmap);
    }
    if (!m->mapped) return fig(m, &k->heap_shrink);
    int64_t back = map_pages(old, m->pad, m->page) - map_pages(size, m->pad, m->page);
    return back > 0 ? line(m, &k->heap_mmap_shrink, back) : fig(m, &k->heap_mmap_shrink_inpage);
  }
  // glibc serves a chunk of the threshold or more from mmap (whole pages, a
  // 16-byte header), unless realloc can grow it in place into the arena's
  // top: taken here as within the arena's pages written before, or the room
  // calibration found (the rule of calibration/internal.h). Moving to mmap
  // copies the block (faulting the pages the old size fills in the new
  // mapping), then the new bytes are written.
  int64_t pf = map_pages(size, m->pad, m->page) - map_pages(old, m->pad, m->page);
  if (!m->mapped && ms__malloc_is_mmapped(block, m->thr) && block > m->arena_hw &&
      block > m->p->heap_arena_room) {
    m->mapped = 1;
    // Resident data: the copy faults only the pages written so far, and the
    // new bytes are not written here (res_cost).
    int64_t copied = ms__malloc_pages(
        MS__MALLOC_MMAP_HEADER + (m->resident && m->touched_h < old ? m->touched_h : old) + m->pad,
        m->page);
    return line(m, &k->heap_to_mmap, copied) + (m->resident ? 0 : line(m, &k->heap_mmap_use, pf));
  }
  if (m->mapped && m->resident) return fig(m, &k->heap_mmap_alloc_nofault);
  if (m->mapped)
    return fig(m, pf > 0 ? &k->heap_mmap_alloc_fault : &k->heap_mmap_alloc_nofault) +
           line(m, &k->heap_mmap_use, pf);
  if (m->resident) return fig(m, &k->heap_alloc_nofault);  // the header's page: within the touched
  pf = pages_beyond(block, m->arena_hw, m->page);
  if (block > m->arena_hw) m->arena_hw = block;
  // realloc writes the new top chunk's header (the first fault), the
  // writing of the new bytes takes the others.
  return fig(m, pf > 0 ? &k->heap_alloc_fault : &k->heap_alloc_nofault) +
         line(m, &k->heap_use, pf > 0 ? pf - 1 : 0);
}

// Whole pages of [from, to) bytes: those a write of one byte per page reaches.
static int64_t span_pages(int64_t from, int64_t to, int64_t page) {
  if (to <= from) return 0;
  return (to + page - 1) / page - from / page;
}

/* The resident part of a point of a stub with resident data, after its heap
 * part: the mapping changed by dmap (one mmap/mremap/munmap when its pages
 * change), then pages written or dropped to the rss target as the runtime
 * does (written pages stay; new ones in the heap block first, then the
 * mapping, then the keep mapping, which costs a call when it grows; drops in
 * the reverse order; -1: everything). A written page
 * is a first touch (heap_mmap_use per fault: the same kernel work on
 * anonymous memory); a drop is madvise, costed as heap_mmap_shrink per page
 * given back. */
static double res_cost(sim *m, int64_t dmap, int64_t target) {
  const memstub_calib_costs *k = m->k;
  double c = 0;
  if (dmap != 0) {
    int64_t len = add(m, m->map_len, dmap, "mapped");
    if (m->beyond) return 0;
    if (len < 0) len = 0;
    int64_t cap = (len + m->page - 1) / m->page * m->page;
    if (cap != m->map_cap) c += fig(m, &k->heap_mmap_alloc_nofault);
    m->map_len = len;
    m->map_cap = cap;
    if (m->touched_m > len) m->touched_m = len;
  }
  if (m->touched_h > m->heap) m->touched_h = m->heap;
  int64_t want_h = m->heap, want_m = m->map_len, want_k = 0;
  if (target >= 0) {
    // Written pages stay; the difference is written (block, mapping, keep)
    // or dropped (keep, mapping, block), as the runtime does.
    want_h = m->touched_h;
    want_m = m->touched_m;
    want_k = m->touched_k;
    ms__res_settle(target, m->heap, m->map_len, &want_h, &want_m, &want_k);
  }
  if (want_k > m->keep_cap) {  // the keep mapping grows (it never shrinks)
    c += fig(m, &k->heap_mmap_alloc_nofault);
    m->keep_cap = (want_k + m->page - 1) / m->page * m->page;
  }
  int64_t faults = span_pages(m->touched_h, want_h, m->page) +
                   span_pages(m->touched_m, want_m, m->page) +
                   span_pages(m->touched_k, want_k, m->page);
  int64_t back = span_pages(want_h, m->touched_h, m->page) +
                 span_pages(want_m, m->touched_m, m->page) +
                 span_pages(want_k, m->touched_k, m->page);
  if (faults > 0) c += line(m, &k->heap_mmap_use, faults);
  if (back > 0) c += line(m, &k->heap_mmap_shrink, back);
  m->touched_h = want_h;
  m->touched_m = want_m;
  m->touched_k = want_k;
  return c;
}

static int sim_init(sim *m, const memstub_profile *p, int64_t depth) {
  memset(m, 0, sizeof *m);
  m->p = p;
  m->k = &p->hot;
  m->page = p->page_size > 0 ? p->page_size : 4096;
  m->frame = p->stack_per_frame;
  m->offset = p->stack_offset;
  m->pad = p->heap_pad;
  m->thr = p->mmap_threshold > 0 ? p->mmap_threshold : MS__MALLOC_MMAP_THRESHOLD;
  m->stack = m->stack_hw = 0;
  m->arena_hw = m->pad;
  m->open = malloc((size_t)(depth + 1) * sizeof *m->open);
  return m->open ? 0 : -ENOMEM;
}

static double point_cost(sim *m, const struct memAlloc *u, double extra) {
  return fig(m, &m->k->basic) + extra + stack_cost(m, u->stackAlloc) + heap_cost(m, u->heapAlloc);
}

/* Whether a row that waits delay ns runs cold: it sleeps first (deadline
 * timing sleeps when the wait exceeds the margin; cold_min_delay is that
 * margin), and the profile has cold figures. */
static int row_cold(const memstub_profile *p, int64_t delay) {
  return p->cold_delay > 0 && delay > 0 && delay >= p->cold_min_delay;
}

/* The profile's byte figures the normaliser and the cost model add to their
 * 64-bit totals: within +-MAX_BYTES, or -EINVAL with err naming the profile
 * (name) and the figure. */
static int check_figures(const memstub_profile *p, const char *name, memstub_error *err) {
  const struct {
    const char *key;
    int64_t v;
  } figures[] = {{"page_size_bytes", p->page_size},
                 {"stack_per_frame_bytes", p->stack_per_frame},
                 {"stack_offset_bytes", p->stack_offset},
                 {"heap_overhead_inuse_bytes", p->heap_overhead_inuse},
                 {"heap_overhead_empty_bytes", p->heap_overhead_empty},
                 {"heap_pad_bytes", p->heap_pad}};
  for (size_t i = 0; i < MS__ARRAY_SIZE(figures); i++)
    if (figures[i].v < -MAX_BYTES || figures[i].v > MAX_BYTES)
      return memstub_error_set(err, -EINVAL, "%s: %s: %lld bytes is beyond any host", name,
                               figures[i].key, (long long)figures[i].v);
  return 0;
}

/* The cost of every point; cold: rows that sleep first use the profile's
 * cold figures (deadline timing; usleep timing keeps the hot ones). uses
 * (may be NULL): the work figures' uses are added to it. */
static int predict(const struct memstub_stub *s, const memstub_profile *p, int measured, int cold,
                   double *cost_ns, ms__fig_uses *uses, memstub_error *err) {
  int rc = memstub_stub_check(s, err);
  if (rc < 0 || (rc = check_figures(p, "calibration profile", err)) < 0) return rc;
  int64_t depth = 0, max = 0;
  for (int64_t i = 0; i < s->numdata; i++) {
    depth += s->use[i].stackAlloc > 0 ? 1 : s->use[i].stackAlloc < 0 ? -1 : 0;
    if (depth > max) max = depth;
  }
  sim m;
  if (sim_init(&m, p, max) < 0) return memstub_error_set(err, -ENOMEM, "out of memory");
  m.resident = s->abi >= MEMSTUB_STUB_ABI_RESIDENT && s->rss && s->mapped;
  m.uses = uses;
  double extra = measured ? p->measure_trace.ns : 0;
  for (int64_t i = 0; i < s->numdata; i++) {
    // A row's points run as a chain after the wait on its first point: all
    // of them hot, or all cold.
    if (i == 0 || s->point[i] != s->point[i - 1])
      m.k = cold && row_cold(p, s->use[i].time) ? &p->cold : &p->hot;
    cost_ns[i] = point_cost(&m, &s->use[i], extra);
    if (m.resident && !m.beyond) cost_ns[i] += res_cost(&m, s->mapped[i], s->rss[i]);
    if (m.beyond) {
      free(m.open);
      return memstub_error_set(err, -EINVAL,
                               "point %lld: the %s grows beyond what the cost model can predict "
                               "(2^60 bytes)",
                               (long long)i, m.beyond);
    }
  }
  free(m.open);
  return 0;
}

int memstub_gen_predict(const struct memstub_stub *s, const struct memstub_profile *p,
                        int measured, double *cost_ns, memstub_error *err) {
  return predict(s, p, measured, 1, cost_ns, NULL, err);
}

/* ---- stage 0: the profile, the heap targets, the stack's figures ----------- */

static int stage0(memstub_gen *g, ms__targets *tg, const memstub_gen_options *o,
                  ms__stack_comp *sc, memstub_error *err) {
  const memstub_profile *p = o->profile;
  const char *name = o->profile_path ? o->profile_path : "calibration profile";
  if (strcmp(p->arch, memstub_host_arch()) != 0)
    return memstub_error_set(err, -EINVAL,
                             "%s: measured on %s, this host is %s: calibrate on the host the "
                             "stub runs on (memstub calibrate -o FILE)",
                             name, p->arch, memstub_host_arch());
  if (p->page_size != ms__prim_page_size())
    return memstub_error_set(err, -EINVAL,
                             "%s: measured with %lld-byte pages, this host has %ld-byte pages: "
                             "calibrate on the host the stub runs on (memstub calibrate -o FILE)",
                             name, (long long)p->page_size, ms__prim_page_size());
  if (p->stack_per_frame < 0 || p->page_size <= 0)
    return memstub_error_set(err, -EINVAL, "%s: negative stack overhead per frame", name);
  int rc = check_figures(p, name, err);
  if (rc < 0) return rc;
  for (size_t i = 0; i < tg->n; i++)
    if (tg->s[i] > MAX_BYTES || tg->h[i] > MAX_BYTES)
      return memstub_error_set(err, -EINVAL,
                               "row %zu: %s %lld bytes above its base is beyond what calibration "
                               "can compensate (2^60 bytes)",
                               i + 1, tg->s[i] > MAX_BYTES ? "stack" : "heap",
                               (long long)(tg->s[i] > MAX_BYTES ? tg->s[i] : tg->h[i]));
  sc->frame = p->stack_per_frame;
  sc->offset = p->stack_offset;
  memstub_gen_comp *c = &g->comp;
  c->stack_frame_bytes = p->stack_per_frame;
  c->stack_offset_bytes = p->stack_offset;
  c->heap_overhead_bytes = p->heap_overhead_inuse;
  // The replay measures the block's size plus heap_overhead_inuse (its chunk
  // rounding beyond the baseline); size 0 measures heap_overhead_empty.
  for (size_t i = 0; i < tg->n; i++) {
    int64_t h = tg->h[i], want = h, left = 0;
    if (h > 0) {
      want = h - p->heap_overhead_inuse;
      if (want < 0) {
        want = 0;
        left = h - p->heap_overhead_empty;
      }
    } else if (p->heap_overhead_empty != 0) {
      left = p->heap_overhead_empty;
    }
    if (want != h) c->heap_points++;
    if (left) {
      c->heap_unmet++;
      if (llabs(left) > c->heap_unmet_max) c->heap_unmet_max = llabs(left);
    }
    tg->h[i] = want;
  }
  return 0;
}

/* ---- stage 1: the delays --------------------------------------------------- */

static int stage1(memstub_gen *g, const memstub_gen_options *o, memstub_error *err) {
  const memstub_profile *p = o->profile;
  const struct memstub_stub *s = &g->stub;
  int64_t n = s->numdata;
  double *cost = malloc((size_t)(n ? n : 1) * sizeof *cost);
  if (!cost) return memstub_error_set(err, -ENOMEM, "out of memory");
  int usleep = o->timing == MEMSTUB_TIMING_USLEEP;
  // Cold figures in deadline timing only: usleep timing adds every row's
  // error up, which the cold medians would not (and measured no better).
  ms__fig_uses uses;
  memset(&uses, 0, sizeof uses);
  int rc = predict(s, p, o->measured, !usleep, cost, &uses, err);
  if (rc < 0) {
    free(cost);
    return rc;
  }
  // Costs of years per point come only from a profile no host has; they
  // would overflow the 64-bit ns arithmetic below.
  double total = 0;
  for (int64_t j = 0; j < n; j++) total += fabs(cost[j]);
  const char *huge = !(total < MAX_NS)                                 ? "its predicted costs"
                     : !(fabs(p->wait_late.ns) < MAX_NS)               ? "time_wait_late_ns"
                     : !(fabs(p->measure_trace.ns) < MAX_NS)           ? "time_measure_trace_ns"
                     : !(fabs(p->sleep_overshoot.base.ns) < MAX_NS)    ? "time_sleep_overshoot_base_ns"
                                                                       : NULL;
  // A sleep that ends early by half of itself or more (per ms) divides by ~0.
  if (!huge && !(p->sleep_overshoot.per_fault.ns > -5e5 && p->sleep_overshoot.per_fault.ns < MAX_NS))
    huge = "time_sleep_overshoot_per_ms_ns";
  if (huge) {
    free(cost);
    return memstub_error_set(err, -EINVAL, "%s: %s: beyond what compensation can take",
                             o->profile_path ? o->profile_path : "profile", huge);
  }
  memstub_gen_comp *c = &g->comp;
  double wait = p->wait_late.ns;
  // A measured replay reads a row's end before measuring its last point, so
  // that measuring delays only the next row.
  double mlast = o->measured ? p->measure_trace.ns : 0;
  // usleep's overshoot: a + b x the sleep in ms.
  double ov_a = p->sleep_overshoot.base.ns, ov_b = p->sleep_overshoot.per_fault.ns / 1e6;
  // Per row: its points j0..j1, the first carrying the delay. Times are ns
  // after T0: T the original deadline, S the compensated one (deadline),
  // A the predicted end of the previous row's work.
  int64_t T = 0, S_prev = 0;
  double A = 0, cost_all = 0;
  for (int64_t j0 = 0; j0 < n;) {
    int64_t j1 = j0;
    while (j1 + 1 < n && g->point[j1 + 1] == g->point[j0]) j1++;
    int64_t d = g->use[j0].time;
    T += d;
    double C = 0;
    for (int64_t j = j0; j <= j1; j++) C += cost[j];
    cost_all += C;
    C -= mlast;
    if (o->measured) uses.measure += (double)(j1 - j0);
    int64_t delay;
    double end;
    if (!usleep) {
      if (d > 0) C += wait, uses.wait_late++;  // the clock read that finds the deadline passed
      int64_t Ci = llround(C), S = T - Ci > S_prev ? T - Ci : S_prev;
      delay = S - S_prev;
      end = (A > (double)S ? A : (double)S) + C;
      c->time_shift_ns += T - S;
      S_prev = S;
    } else {
      // A sleep of w ns ends the row at A + w + overshoot(w) + C; no sleep
      // at A + C.
      double w = ((double)T - A - ov_a - C) / (1 + ov_b);
      if (w >= 1) {
        delay = llround(w);
        end = A + (double)delay * (1 + ov_b) + ov_a + C;
        uses.sleep_base++, uses.sleep_per_ms += (double)delay / 1e6;
      } else {
        double early = (double)T - A - C;  // > 0: no sleep ends this early
        if (early > 0 && ov_a + 1 - early < early) {
          delay = 1;
          end = A + 1 + ov_a + C;
          uses.sleep_base++;
        } else {
          delay = 0;
          end = A + C;
        }
      }
      c->time_shift_ns += d - delay;
    }
    g->use[j0].time = delay;
    for (int64_t j = j0 + 1; j <= j1; j++) g->use[j].time = 0;
    double late = end - (double)T;
    if (late >= 1) {
      c->time_points++;
      if (llround(late) > c->time_unmet_max) c->time_unmet_max = llround(late);
    }
    A = end + mlast;
    j0 = j1 + 1;
  }
  c->time_cost_ns = llround(cost_all);
  free(cost);
  ms__gen_unsure(g, p, &uses);  // unsure.c
  return 0;
}

int ms__gen_compensate(memstub_gen *g, ms__targets *tg, const memstub_gen_options *o, int stage,
                       ms__stack_comp *sc, memstub_error *err) {
  // Online timing: the replay learns the work's time itself; the delays stay.
  if (stage == 1 && o->timing == MEMSTUB_TIMING_ONLINE) return 0;
  return stage == 0 ? stage0(g, tg, o, sc, err) : stage1(g, o, err);
}

void ms__gen_compensate_rss(memstub_gen *g, const memstub_profile *p) {
  int64_t o = p->resident_overhead;
  g->comp.rss_overhead_bytes = o;
  if (!g->rss || o == 0) return;
  for (int64_t i = 0; i < g->stub.numdata; i++) {
    if (g->rss[i] <= 0) continue;  // -1: no target; 0: nothing to lower
    int64_t v = g->rss[i] - o;
    g->rss[i] = v > 0 ? v : 0;
    g->comp.rss_points++;
  }
}

void ms__gen_comp_summary(const memstub_gen_comp *c, int timing, char *buf, size_t cap) {
  if (timing == MEMSTUB_TIMING_NONE) {
    snprintf(buf, cap, "none");
    return;
  }
  snprintf(buf, cap,
           "stack: %lld pushes %lld B smaller (offset %lld B), %lld frames re-pushed, %lld rows "
           "unmet (max %lld B); heap: %lld rows %+lld B, %lld unmet (max %lld B); time (%s): "
           "%lld ns of predicted work, %lld ns out of the delays, %lld rows late (max %lld ns)",
           (long long)c->stack_points, (long long)c->stack_frame_bytes,
           (long long)c->stack_offset_bytes, (long long)c->stack_replaced,
           (long long)c->stack_unmet, (long long)c->stack_unmet_max, (long long)c->heap_points,
           (long long)-c->heap_overhead_bytes, (long long)c->heap_unmet,
           (long long)c->heap_unmet_max,
           timing == MEMSTUB_TIMING_USLEEP   ? "usleep"
           : timing == MEMSTUB_TIMING_ONLINE ? "online: left to the replay"
                                             : "deadline",
           (long long)c->time_cost_ns, (long long)c->time_shift_ns, (long long)c->time_points,
           (long long)c->time_unmet_max);
  size_t len = strlen(buf);
  if (c->rss_points && len < cap)
    snprintf(buf + len, cap - len, "; rss: %lld points %+lld B", (long long)c->rss_points,
             (long long)-c->rss_overhead_bytes);
}

int ms__gen_comp_timing(const memstub_gen *g) {
  return g->calibration && strcmp(g->calibration, "none") != 0 ? g->stub.timing
                                                                : MEMSTUB_TIMING_NONE;
}

// For people (the commands' notes): as ms__gen_comp_summary, which the
// header keeps, with bytes and times in units (common/units.c).
void memstub_gen_comp_format(const memstub_gen *g, char *buf, size_t cap) {
  const memstub_gen_comp *c = &g->comp;
  int timing = ms__gen_comp_timing(g);
  if (timing == MEMSTUB_TIMING_NONE) {
    snprintf(buf, cap, "none");
    return;
  }
  char b[5][MS__FMT_MAX], t[3][MS__FMT_MAX];
  snprintf(buf, cap,
           "stack: %lld pushes %s smaller (offset %s), %lld frames re-pushed, %lld rows "
           "unmet (max %s); heap: %lld rows %s%s, %lld unmet (max %s); time (%s): "
           "%s of predicted work, %s out of the delays, %lld rows late (max %s)",
           (long long)c->stack_points, ms__fmt_bytes(c->stack_frame_bytes, b[0], sizeof b[0]),
           ms__fmt_bytes(c->stack_offset_bytes, b[1], sizeof b[1]), (long long)c->stack_replaced,
           (long long)c->stack_unmet, ms__fmt_bytes(c->stack_unmet_max, b[2], sizeof b[2]),
           (long long)c->heap_points, -c->heap_overhead_bytes >= 0 ? "+" : "",
           ms__fmt_bytes(-c->heap_overhead_bytes, b[3], sizeof b[3]), (long long)c->heap_unmet,
           ms__fmt_bytes(c->heap_unmet_max, b[4], sizeof b[4]),
           timing == MEMSTUB_TIMING_USLEEP   ? "usleep"
           : timing == MEMSTUB_TIMING_ONLINE ? "online: left to the replay"
                                             : "deadline",
           ms__fmt_ns(c->time_cost_ns, t[0], sizeof t[0]), ms__fmt_ns(c->time_shift_ns, t[1], sizeof t[1]),
           (long long)c->time_points, ms__fmt_ns(c->time_unmet_max, t[2], sizeof t[2]));
  size_t len = strlen(buf);
  if (c->rss_points && len < cap)
    snprintf(buf + len, cap - len, "; rss: %lld points %s%s", (long long)c->rss_points,
             -c->rss_overhead_bytes >= 0 ? "+" : "",
             ms__fmt_bytes(-c->rss_overhead_bytes, b[0], sizeof b[0]));
}
