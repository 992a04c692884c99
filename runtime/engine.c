// The replay engine: the paper's recursive allocate() and constantStack()
// (Trapp, Meyer & Facchi 2011, Listings 2 and 3), with absolute deadlines,
// exact stack sizes and per-point measuring.
//
// Every push runs in a new level of allocate(): it alloca()s the frame's
// bytes there, and the pop that closes the frame is a return from that
// level. Keeping this honest at -O2 (docs/runtime.md, "Keeping the recursion
// honest"): allocate() and the helpers it calls are noinline (and noclone on
// gcc), an empty asm with a memory clobber follows the recursive call, and
// the file is compiled with -fno-optimize-sibling-calls and
// -fno-omit-frame-pointer (runtime/CMakeLists.txt). test_replay checks that
// the stack overhead per frame is the same at every depth.
//
// The layers run one way (docs/runtime.md, "Layers"): run.c, threads.c and
// call.c drive the engine; the engine calls the replay's memory operations
// (c->ops: the class replay, class_replay.c), heap.c, resident.c and
// work.c, and knows nothing of threads: whoever drives it may give it a
// per-point hook (c->hook).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "malloc_model.h"
#include "prim.h"

#if defined(__clang__)
#define MS__NOINLINE __attribute__((noinline))
#else
#define MS__NOINLINE __attribute__((noinline, noclone))
#endif
// Nothing may move across this point, nor turn the call before it into a jump.
#define MS__BARRIER() __asm__ volatile("" ::: "memory")

/* ---- timing -------------------------------------------------------------- */

// Upper ends of the sleep-length buckets (the last is open).
static const int64_t bucket_end[MS__RT_SLEEP_BUCKETS - 1] = {100000,  200000,  500000,
                                                             1000000, 2000000, 5000000};

int ms__rt_sleep_bucket(int64_t s) {
  int b = 0;
  while (b < MS__RT_SLEEP_BUCKETS - 1 && s >= bucket_end[b]) b++;
  return b;
}

static int64_t clamp_margin(int64_t m) {
  return m < MS__RT_MARGIN_MIN ? MS__RT_MARGIN_MIN : m > MS__RT_MARGIN_MAX ? MS__RT_MARGIN_MAX : m;
}

// The static model's p99 overshoot after a sleep of s ns.
static int64_t model_overshoot(int64_t s) {
  if (s < 0) s = 0;
  if (s > 1000000000) s = 1000000000;  // no overflow below; the margin is capped anyway
  return MS__RT_OVERSHOOT_BASE + MS__RT_OVERSHOOT_PER_MS * s / 1000000;
}

void ms__rt_waiter_init(ms__rt_waiter *w, int64_t margin_opt, int64_t reaim_opt) {
  memset(w, 0, sizeof *w);
  w->fixed = margin_opt >= 0 ? margin_opt : -1;
  w->adaptive = margin_opt == MEMSTUB_MARGIN_ADAPTIVE;
  w->reaim = w->fixed >= 0 || reaim_opt < 0 ? 0
             : reaim_opt == 0                 ? MEMSTUB_REAIM_DEFAULT
                                              : reaim_opt;
  // Adaptive buckets start from the static model at the bucket's upper end.
  for (int b = 0; b < MS__RT_SLEEP_BUCKETS; b++)
    w->q[b] = model_overshoot(b < MS__RT_SLEEP_BUCKETS - 1 ? bucket_end[b] : 10000000) -
              MS__RT_MARGIN_SLACK;
}

int64_t ms__rt_margin_for(const ms__rt_waiter *w, int64_t s) {
  if (w->fixed >= 0) return w->fixed;
  if (w->adaptive) return clamp_margin(w->q[ms__rt_sleep_bucket(s)] + MS__RT_MARGIN_SLACK);
  return clamp_margin(model_overshoot(s));
}

int64_t ms__rt_plan_sleep(const ms__rt_waiter *w, int64_t rem, int *last) {
  *last = 1;
  if (rem <= 0) return 0;
  if (w->fixed >= 0) return rem > w->fixed ? rem - w->fixed : 0;
  // A long wait: sleep to reaim before the deadline; its overshoot (however
  // long the sleep) has the reaim distance to land in, then re-aim.
  if (w->reaim > 0 && rem - w->reaim >= w->reaim / MS__RT_REAIM_MIN_DIV) {
    *last = 0;
    return rem - w->reaim;
  }
  // The last sleep: its margin is taken for its own length, at most rem.
  int64_t s = rem - ms__rt_margin_for(w, rem);
  return s > 0 ? s : 0;
}

void ms__rt_waiter_learn(ms__rt_waiter *w, int64_t s, int64_t over) {
  if (!w->adaptive) return;
  int b = ms__rt_sleep_bucket(s);
  int64_t q = w->q[b];
  q += over > q ? 99 * MS__RT_MARGIN_STEP : -MS__RT_MARGIN_STEP;
  if (q < 0) q = 0;
  if (q > MS__RT_MARGIN_MAX) q = MS__RT_MARGIN_MAX;
  w->q[b] = q;
}

/* ---- the online cost model ------------------------------------------------ */

void ms__rt_cost_init(ms__rt_cost *m, int on) {
  memset(m, 0, sizeof *m);
  m->on = on;
  m->start = -1;
  m->pre_x = -1;
  for (int k = 0; k < MS__RT_COST_SLOTS; k++) m->est[k] = m->pre[k] = -1;
}

int ms__rt_cost_slot(int k, int64_t delay, int64_t points) {
  int w = delay < 1000000 ? 0 : delay < 10000000 ? 1 : 2;
  int ch = points <= 1 ? 0 : points <= 3 ? 1 : 2;
  return (k * MS__RT_COST_CHAINS + ch) * MS__RT_COST_WAITS + w;
}

// Of one class's points bucket (its waits at a + base): the nearest wait to w learnt; -1 none.
static int64_t nearest_wait(const int64_t *a, int base, int w) {
  for (int d = 0; d < MS__RT_COST_WAITS; d++) {
    if (w - d >= 0 && a[base + w - d] >= 0) return a[base + w - d];
    if (d && w + d < MS__RT_COST_WAITS && a[base + w + d] >= 0) return a[base + w + d];
  }
  return -1;
}

// a[k], or when nothing is learnt there, the same class's nearest slot (the
// same points at the nearest wait, else the nearest points); -1 none.
static int64_t learnt(const int64_t *a, int k) {
  if (k < 0 || k >= MS__RT_COST_SLOTS) return -1;
  int w = k % MS__RT_COST_WAITS, ch = k / MS__RT_COST_WAITS % MS__RT_COST_CHAINS;
  int cls0 = k - k % (MS__RT_COST_WAITS * MS__RT_COST_CHAINS);
  for (int d = 0; d < MS__RT_COST_CHAINS; d++) {
    int64_t e = ch - d >= 0 ? nearest_wait(a, cls0 + (ch - d) * MS__RT_COST_WAITS, w) : -1;
    if (e < 0 && d && ch + d < MS__RT_COST_CHAINS)
      e = nearest_wait(a, cls0 + (ch + d) * MS__RT_COST_WAITS, w);
    if (e >= 0) return e;
  }
  return -1;
}

int ms__rt_cost_resize_ahead(int k) {  // k: a class
  int h = k >= 0 && k < MS__RT_COST_MAPPED ? k / MS__RT_STACK_PARTS : MS__RT_HEAP_NONE;
  return h >= MS__RT_HEAP_INPAGE;
}

int64_t ms__rt_cost_pre(const ms__rt_cost *m, int k) {
  int64_t e = m->on ? learnt(m->pre, k) : -1;
  return e <= 0 ? 0 : e > MS__RT_COST_LEAD_MAX ? MS__RT_COST_LEAD_MAX : e;
}

void ms__rt_cost_learn_pre(ms__rt_cost *m, int k, int64_t a) {
  if (k < 0 || k >= MS__RT_COST_SLOTS || a < 0) return;
  int64_t e = m->pre[k];
  if (e < 0) {
    m->pre[k] = a;
    return;
  }
  // A streaming 99th percentile: up 99 steps for a sample above, down one below.
  int64_t step = MS__RT_COST_STEP + e / MS__RT_COST_STEP_DIV;
  e += a > e ? 99 * step : -step;
  m->pre[k] = e < 0 ? 0 : e;
}

// The heap part of a change from size a to b of a block that is (mm) mmapped.
static int heap_part_class(int64_t a, int64_t b, int mm, long page) {
  if (a == b) return MS__RT_HEAP_NONE;
  int64_t ra = a + MS__RT_HEAP_PAD, rb = b + MS__RT_HEAP_PAD;
  if (mm != ms__malloc_is_mmapped(rb, MS__MALLOC_MMAP_THRESHOLD) && (mm || b > a))
    return MS__RT_HEAP_MOVE;  // the runtime moves a shrunken block back; glibc a grown one out
  if (!mm) return MS__RT_HEAP_ARENA;
  int64_t d = ms__malloc_mmap_bytes(rb, page) / page - ms__malloc_mmap_bytes(ra, page) / page;
  if (d < 0) d = -d;
  return d == 0 ? MS__RT_HEAP_INPAGE : d == 1 ? MS__RT_HEAP_PAGES1 : d < 8 ? MS__RT_HEAP_PAGES2
                                                                          : MS__RT_HEAP_PAGES8;
}

int ms__rt_cost_class(const struct memAlloc *use, int64_t n, int64_t x, const int64_t *mapped,
                      const int64_t *rss, const ms__rt_cost_state *st) {
  int hp = MS__RT_HEAP_NONE, sp = MS__RT_STACK_NONE, map = 0, touch = 0;
  int64_t heap = st->heap, stack = st->stack, hw = st->stack_hw;
  int mm = st->mmapped;
  long page = st->page > 0 ? st->page : 4096;
  for (int64_t j = x; j < n && j < x + MS__RT_COST_SCAN && (j == x || use[j].time == 0); j++) {
    const struct memAlloc *u = &use[j];
    int s = MS__RT_STACK_NONE;
    if (u->stackAlloc < 0) {
      s = MS__RT_STACK_POP;
      stack += u->stackAlloc;
    } else if (u->stackAlloc > 0) {
      stack += u->stackAlloc;
      s = stack / page > hw / page ? MS__RT_STACK_FAULT : MS__RT_STACK_PUSH;
      if (stack > hw) hw = stack;
    }
    int64_t nh = heap + u->heapAlloc;  // no overflow: memstub_replay_check
    if (nh < 0) nh = 0;
    int h = heap_part_class(heap, nh, mm, page);
    if (h == MS__RT_HEAP_MOVE) mm = !mm;
    heap = nh;
    if (s > sp) sp = s;
    if (h > hp) hp = h;
    if (mapped && mapped[j]) map = 1;
    if (rss && rss[j] != (j ? rss[j - 1] : 0)) touch = 1;
  }
  if (map) return MS__RT_COST_MAPPED;
  if (hp == MS__RT_HEAP_NONE && sp == MS__RT_STACK_NONE && touch) return MS__RT_COST_TOUCH;
  return hp * MS__RT_STACK_PARTS + sp;
}

int64_t ms__rt_cost_lead(const ms__rt_cost *m, int k) {
  int64_t e = m->on ? learnt(m->est, k) : -1;
  return e <= 0 ? 0 : e > MS__RT_COST_LEAD_MAX ? MS__RT_COST_LEAD_MAX : e;
}

void ms__rt_cost_learn(ms__rt_cost *m, int k, int64_t w) {
  if (k < 0 || k >= MS__RT_COST_SLOTS || w < 0) return;
  int64_t n = m->n[k]++;
  if (n < MS__RT_COST_FIRST) {  // the start: the median of the samples so far
    // Sorted by insertion, not qsort: glibc's qsort calls the allocator
    // (a free(NULL) a sort), and a stub's calls are the component's.
    int64_t s[MS__RT_COST_FIRST];
    m->first[k][n] = w;
    for (int64_t i = 0; i <= n; i++) {
      int64_t v = m->first[k][i], j = i;
      for (; j > 0 && s[j - 1] > v; j--) s[j] = s[j - 1];
      s[j] = v;
    }
    m->est[k] = s[n / 2];
    return;
  }
  int64_t e = m->est[k];
  int64_t step = MS__RT_COST_STEP + e / MS__RT_COST_STEP_DIV;
  if (w > MS__RT_COST_OUTLIER * e + MS__RT_COST_OUTLIER_NS) e += MS__RT_COST_STEP;  // preempted?
  else if (w > e) e = w - e < step ? w : e + step;
  else if (w < e) e = e - w < step ? w : e - step;
  m->est[k] = e;
}

// The row that ended: learn its work, if one was open.
static void cost_row_end(ms__rt_ctx *c) {
  ms__rt_cost *m = &c->cost;
  if (m->start >= 0 && m->end >= m->start && !c->failed)
    ms__rt_cost_learn(m, m->cls, m->end - m->start);
  m->start = -1;
}

// The class of the row that begins at point x (deadline timing, before its wait).
static int cost_class_at(const ms__rt_ctx *c, int64_t x) {
  ms__rt_cost_state st = {c->heap.size, c->cost.stack, c->cost.stack_hw,
                          ms__malloc_usable_is_mmapped((int64_t)c->heap.usable, c->page),
                          c->page};
  return ms__rt_cost_class(c->use, c->n, x, c->res.mapped, c->res.rss, &st);
}

// Every point: the stack's open bytes and high-water mark, as the class reads them.
static void cost_stack(ms__rt_cost *m, int64_t sa) {
  m->stack += sa;
  if (m->stack > m->stack_hw) m->stack_hw = m->stack;
}

// Wait until T0 + c->deadline for point x: sleep as the waiter plans (to
// the margin, or first to reaim before the deadline), then spin. Returns the
// clock when the wait ended. The run-queue readings happen before a sleep,
// where they cost nothing (the sleep's end is absolute), and, for the
// adaptive margin, right after a wake-up, inside the margin: it learns the
// overshoot without the time the thread waited for a CPU, which no margin
// cures (a busy host would otherwise drive it to its cap, and the spin with it).
int64_t ms__rt_wait_deadline(ms__rt_ctx *c, int64_t x, int64_t lead) {
  int64_t deadline = c->t0 + c->deadline - lead;
  int64_t now = ms__prim_now_ns();
  int64_t s, rd = -1;
  int slept = 0, last = 0;
  while (!last && (s = ms__rt_plan_sleep(&c->waiter, deadline - now, &last)) > 0) {
    int64_t wake = now + s;
    if (c->sched_fd >= 0 && (!slept || c->waiter.adaptive) && rd < 0)
      rd = ms__prim_sched_run_delay(c->sched_fd);
    if (!slept && c->sched_rec && c->rec[x].run_delay_ns < 0) c->rec[x].run_delay_ns = rd;
    ms__prim_sleep_until(wake);
    now = ms__prim_now_ns();
    c->sleeps++;
    slept = 1;
    if (c->waiter.adaptive) {
      int64_t over = now - wake, rd1 = ms__prim_sched_run_delay(c->sched_fd);
      if (rd >= 0 && rd1 >= rd) over -= rd1 - rd < over ? rd1 - rd : over;
      ms__rt_waiter_learn(&c->waiter, s, over);
      rd = rd1;  // the next sleep's reading
      now = ms__prim_now_ns();
    }
  }
  if (slept && now > deadline) c->late_wakeups++;
  while (now < deadline) now = ms__prim_now_ns();
  return now;
}

// The paper's usleep(): a relative sleep from the moment it is called.
static int64_t wait_relative(ms__rt_ctx *c, int64_t x, int64_t dt) {
  int64_t wake = ms__prim_now_ns() + dt;
  // Measured after the sleep's end is fixed: it costs the sleep, not the row.
  if (c->sched_rec) c->rec[x].run_delay_ns = ms__prim_sched_run_delay(c->sched_fd);
  ms__prim_sleep_until(wake);
  c->sleeps++;
  return ms__prim_now_ns();
}

/* ---- one point's phases ---------------------------------------------------- */

// The wait of point x, then the start of its work.
static MS__NOINLINE void begin(ms__rt_ctx *c, int64_t x) {
  int64_t dt = c->use[x].time;
  c->deadline += dt;
  __atomic_store_n(&c->begun, x + 1, __ATOMIC_RELAXED);
  /* Layout 3: the work of the interval (runtime/work.c). Deadline timing:
   * the spin before the wait, which ends the calls' expected cost early,
   * then the calls, so they end on the deadline as the component's ended at
   * its row (docs/runtime.md, "Work"); usleep timing: all of it before. */
  int64_t *wm = c->wrec ? c->wrec + x * MS__RT_WORK_REC : NULL;
  int64_t calls = 0;
  // The memory share touches the heap block's written bytes (work_loops.c).
  if (c->work.cpu && c->work.mem_share > 0)
    ms__rt_work_memory(&c->work, c->heap.block + MS__RT_HEAP_PAD,
                       c->res.rss && c->res.heap_touched < c->heap.size ? c->res.heap_touched
                                                                        : c->heap.size);
  if (c->work.cpu && c->timing == MEMSTUB_TIMING_USLEEP) ms__rt_work_point(&c->work, x, wm);
  else if (c->work.cpu) {
    calls = ms__rt_work_predict(&c->work, x);
    if (calls > dt) calls = dt;  // never before the previous point's deadline
    ms__rt_work_spin(&c->work, x, calls);
  }
  int64_t now = 0;
  if (dt > 0 && c->timing == MEMSTUB_TIMING_USLEEP) {
    now = wait_relative(c, x, dt);
  } else if (dt > 0 && !c->cost.on) {
    now = ms__rt_wait_deadline(c, x, calls);
  } else if (dt > 0) {
    // A new row: learn the last one's work, read this one's class, start it
    // that much early, and time its work.
    cost_row_end(c);
    int64_t pts = 1;  // the row's points: x and the zero-delay ones after it
    while (x + pts < c->n && pts < MS__RT_COST_SCAN && !c->use[x + pts].time) pts++;
    int k = cost_class_at(c, x), slot = ms__rt_cost_slot(k, dt, pts);
    int64_t lead = ms__rt_cost_lead(&c->cost, slot);
    if (lead > dt - calls) lead = dt - calls;  // never before the previous point's deadline
    if (c->ops->ahead && ms__rt_cost_resize_ahead(k)) c->ops->ahead(c, x, slot, lead + calls);
    now = ms__rt_wait_deadline(c, x, lead + calls);
    c->cost.cls = slot;
    c->cost.start = now;
    c->cost.lead_sum += lead;
  }
  if (c->work.cpu && c->timing != MEMSTUB_TIMING_USLEEP) {
    ms__rt_work_calls(&c->work, x, calls, wm);
    // The model learns the row's memory work, from the calls' end.
    if (c->cost.on && dt > 0 && calls > 0) c->cost.start = ms__prim_now_ns();
  }
  cost_stack(&c->cost, c->use[x].stackAlloc);
  if (!c->rec) return;
  memstub_replay_record *r = &c->rec[x];
  r->target_ns = c->deadline;
  if (c->measure & MEMSTUB_MEASURE_TIME) r->start_ns = (dt > 0 ? now : ms__prim_now_ns()) - c->t0;
  if (c->measure & MEMSTUB_MEASURE_CYCLES) r->cyc_start = ms__prim_cycles_begin();
  if (c->measure & MEMSTUB_MEASURE_FAULTS)
    r->faults_start = ms__prim_minor_faults() - c->faults_base;
}

// After alloca (moved: bytes the stack pointer moved) or the return of a pop.
static MS__NOINLINE void stack_alloced(ms__rt_ctx *c, int64_t x, int64_t moved) {
  if (!c->rec) return;
  memstub_replay_record *r = &c->rec[x];
  if (c->measure & MEMSTUB_MEASURE_STACK && moved) r->stack_moved = moved;
  if (c->measure & MEMSTUB_MEASURE_CYCLES) r->cyc_stack_alloc = ms__prim_cycles_begin();
}

// After the new stack pages were written.
static MS__NOINLINE void stack_used(ms__rt_ctx *c, int64_t x) {
  if (!c->rec) return;
  memstub_replay_record *r = &c->rec[x];
  if (c->measure & MEMSTUB_MEASURE_CYCLES) r->cyc_stack_use = ms__prim_cycles_begin();
  if (c->measure & MEMSTUB_MEASURE_FAULTS)
    r->faults_stack = ms__prim_minor_faults() - c->faults_base;
}

// The end of point x's work (before its measuring): the row's work so far.
static MS__NOINLINE void work_done(ms__rt_ctx *c) {
  if (c->cost.start >= 0) c->cost.end = ms__prim_now_ns();
}

// heap_bytes and heap_usable: the replay's own measure, else mallinfo2's and the block's.
static void measure_heap(const ms__rt_ctx *c, memstub_replay_record *r) {
  if (c->ops->measure) {
    c->ops->measure(c, r);
    return;
  }
  r->heap_bytes = ms__rt_heap_inuse() - c->heap_base;
  r->heap_usable = ms__rt_heap_usable(&c->heap);
}

// The measuring after point x's work; sp is the stack pointer of the level
// the point ended in.
static MS__NOINLINE void finish(ms__rt_ctx *c, int64_t x, uintptr_t sp) {
  memstub_replay_record *r = &c->rec[x];
  if (c->measure & MEMSTUB_MEASURE_CYCLES) r->cyc_end = ms__prim_cycles_end();
  // The CPU time over the replay's duration (T0 to the last point's end_ns), as cpu0 before t0.
  if ((c->measure & MEMSTUB_MEASURE_TIME) && x == c->n - 1) c->cpu_last = ms__prim_thread_cpu_ns();
  if (c->measure & MEMSTUB_MEASURE_TIME) r->end_ns = ms__prim_now_ns() - c->t0;
  if (c->measure & MEMSTUB_MEASURE_STACK) r->stack_bytes = (int64_t)(c->entry_sp - sp);
  if (c->measure & MEMSTUB_MEASURE_HEAP) measure_heap(c, r);
  if (c->measure & MEMSTUB_MEASURE_FAULTS)
    r->faults_end = ms__prim_minor_faults() - c->faults_base;
  if (c->measure & MEMSTUB_MEASURE_RESIDENT) ms__rt_res_measure_point(c, x, r);
}

/* Point x after its stack part: the replay's memory part (c->ops), the
 * driver's hook when it asked for this point, then the measuring at the
 * level whose stack pointer is sp. */
static MS__NOINLINE void memory_part(ms__rt_ctx *c, int64_t x, uintptr_t sp) {
  c->ops->heap(c, x);
  if (x == c->hook_next) c->hook_next = c->hook(c->hook_arg, x);
  work_done(c);
  if (c->rec && !c->failed) finish(c, x, sp);
}

// A point that leaves the stack as it is (or whose pop already happened).
static void rest_of_point(ms__rt_ctx *c, int64_t x, int64_t moved, uintptr_t sp) {
  stack_alloced(c, x, moved);
  stack_used(c, x);
  memory_part(c, x, sp);
}

/* ---- the recursion --------------------------------------------------------- */

/* Listing 2: constant-stack points after point x, at the current level.
 * Returns the last point handled. */
static MS__NOINLINE int64_t constant_stack(ms__rt_ctx *c, int64_t x, uintptr_t sp) {
  while (!c->failed && x + 1 < c->n && c->use[x + 1].stackAlloc == 0) {
    x++;
    begin(c, x);
    rest_of_point(c, x, 0, sp);
  }
  return x;
}

/* Listing 3: point x pushes a frame (pre: use[x].stackAlloc > 0). excess is
 * the bytes the open frames hold beyond what the stub asked for (alloca
 * rounds to 16): carried into this frame's request so rounding never
 * accumulates with depth. Returns the point that pops this frame, with its
 * wait done and the rest of it left to the caller, or n at the end. */
static MS__NOINLINE int64_t allocate(ms__rt_ctx *c, int64_t x, int64_t excess) {
  begin(c, x);
  int64_t want = c->use[x].stackAlloc;
  // The nearest multiple of 16 to what is still owed (nothing when <= 8).
  int64_t d = want - excess;
  d = d > 8 ? (d + 8) & ~(int64_t)15 : 0;
  uintptr_t sp0 = ms__prim_sp();
  char *p = NULL;
  int64_t k = d - c->alloca_bias;
  if (d > 0) p = __builtin_alloca((size_t)k);
  uintptr_t sp = ms__prim_sp();
  int64_t moved = (int64_t)(sp0 - sp);
  excess += moved - want;
  stack_alloced(c, x, moved);
  if (p) {
    // Write every new page, top down as a stack grows, and the last byte.
    volatile char *q = p;
    for (int64_t off = k - 1; off >= 0; off -= c->page) q[off] = 'a';
    q[0] = 'a';
  }
  stack_used(c, x);
  memory_part(c, x, sp);
  x = constant_stack(c, x, sp);  // rising edge, then constant
  while (!c->failed && x + 1 < c->n && c->use[x + 1].stackAlloc > 0) {
    x = allocate(c, x + 1, excess);
    MS__BARRIER();
    if (x >= c->n) return x;
    rest_of_point(c, x, 0, sp);    // the child's pop, finished at this level
    x = constant_stack(c, x, sp);  // falling edge, then constant
  }
  if (c->failed || x + 1 >= c->n) return c->n;  // the data ends with frames open
  x++;  // use[x] pops this frame (memstub_gen_check)
  begin(c, x);
  if (c->rec && c->measure & MEMSTUB_MEASURE_STACK) c->rec[x].stack_moved = -moved;
  return x;
}

// The replay's entry level: its stack pointer is the zero of the stack measurements.
static MS__NOINLINE void replay_body(ms__rt_ctx *c) {
  // Threads: no point before the thread's start on the common clock (thread
  // 0 begins 20 ms early to prepare its heap; a point at 0 ns waits for none).
  if (c->t0_at && ms__prim_now_ns() < c->t0_at) ms__prim_sleep_until(c->t0_at);
  uintptr_t sp = ms__prim_sp();
  c->entry_sp = sp;
  c->heap_base = ms__rt_heap_inuse();
  if (c->measure & MEMSTUB_MEASURE_FAULTS) c->faults_base = ms__prim_minor_faults();
  if (c->measure & MEMSTUB_MEASURE_RESIDENT) ms__rt_res_baseline(&c->res);
  c->run_delay0 = ms__prim_sched_run_delay(c->sched_fd);
  c->cpu_last = -1;
  c->cpu0 = ms__prim_thread_cpu_ns();
  c->t0 = c->t0_at ? c->t0_at : ms__prim_now_ns();  // threads: one common clock
  if (c->cpu0_at >= 0) ms__rt_work_start(&c->work, c->cpu0_at);  // a call: its CPU since
  c->deadline = 0;
  if (c->rec) {
    memstub_replay_record *e = &c->entry;
    if (c->measure & MEMSTUB_MEASURE_CYCLES) e->cyc_start = e->cyc_end = ms__prim_cycles_begin();
    if (c->measure & MEMSTUB_MEASURE_HEAP) measure_heap(c, e);
    e->stack_bytes = (int64_t)(c->entry_sp - sp);
    if (c->measure & MEMSTUB_MEASURE_RESIDENT) ms__rt_res_measure(&c->res, e);
  }
  int64_t x = 0;
  while (x < c->n && !c->failed) {
    if (c->use[x].stackAlloc > 0) {
      x = allocate(c, x, 0);
      MS__BARRIER();
      if (x >= c->n) break;
    } else {
      begin(c, x);  // constant at depth 0 (a pop here is refused by the check)
    }
    rest_of_point(c, x, 0, sp);
    x++;
  }
  cost_row_end(c);
  c->end = ms__prim_now_ns();
  c->cpu_end = ms__prim_thread_cpu_ns();
  c->run_delay_end = ms__prim_sched_run_delay(c->sched_fd);
}

void ms__rt_engine_run(ms__rt_ctx *c) {
  (void)ms__prim_set_timer_slack(1);
  if (c->slice > 0 && ms__prim_set_sched_slice((uint64_t)c->slice) < 0) c->slice = 0;
  // Opened here, in the replay thread: thread-self is this thread.
  c->sched_rec = c->rec && (c->measure & MEMSTUB_MEASURE_SCHED);
  int adaptive = c->timing != MEMSTUB_TIMING_USLEEP && c->waiter.adaptive;
  c->sched_fd = c->sched_rec || adaptive ? ms__prim_sched_open() : -1;
  if (c->rec)
    for (int64_t i = 0; i < c->n; i++) c->rec[i].run_delay_ns = -1;
  replay_body(c);
  ms__prim_sched_close(c->sched_fd);
  c->sched_fd = -1;
}

/* ---- alloca's rounding --------------------------------------------------- */

static MS__NOINLINE int64_t probe_alloca(int64_t k) {
  uintptr_t a = ms__prim_sp();
  volatile char *p = __builtin_alloca((size_t)k);
  uintptr_t b = ms__prim_sp();
  p[0] = 'a';
  MS__BARRIER();
  return (int64_t)(a - b);
}

int64_t ms__rt_alloca_bias(void) {
  // gcc 12 moves the stack pointer by round16(k + 8), clang 14 by round16(k).
  // bias = 16 - the largest k that moves it by exactly 16; then
  // alloca(d - bias) moves it by d for every multiple d of 16.
  int64_t kmax = 0;
  for (int64_t k = 1; k <= 16; k++)
    if (probe_alloca(k) == 16) kmax = k;
  if (kmax == 0) return 0;
  int64_t bias = 16 - kmax;
  for (int64_t d = 16; d <= 4096; d += 16)
    if (probe_alloca(d - bias) != d) return 0;
  return bias;
}
