/* recorder/threads.c: `memstub record --thread all` (docs/recording.md, "All
 * threads"; the format is docs/formats.md, "Threads").
 *
 * Every thread records as the one recorded thread does otherwise: its stack
 * against its own stack top, its CPU clock, its page faults, its calls, its
 * own sampling timer, its own coalescing buckets. The heap of a thread is
 * the bytes of the blocks it allocated that are still alive: the pointer
 * table keeps each block's owner beside it (table.h), and a free by another
 * thread lowers the owner's count. Besides its rows a thread keeps special
 * rows: the return of a pthread_join, and the cross-thread frees of each
 * bucket, one per (owner, owner's bucket) pair. At the end every thread's
 * rows, its special rows and, for each cross-thread free, a row of the owner
 * with its lowered heap are merged by time, then thread number; rows are
 * never coalesced across threads (each thread's buckets did it already). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "table.h"

// Threads told apart (the owner field holds the number + 1 in 16 bits); a
// thread numbered beyond has its blocks counted as its freer's.
#define MAX_THREADS 65535
#define SP_N 1023
// pthread_t -> thread number, for the joins (open addressing; a joined
// entry becomes a tombstone, so that a reused id finds its new thread).
#define PT_BITS 17
#define PT_MASK ((1u << PT_BITS) - 1)

enum { SP_JOIN = 1, SP_XFREE = 2 };
typedef struct tsp {
  int64_t t;     // raw time
  uint64_t seq;  // the thread's rows pushed before it
  int32_t kind, peer;  // peer: the joined thread or the owner of the freed blocks
  int64_t bytes, alloc, heap_after;
} tsp;
typedef struct ms__rec_spblock {
  struct ms__rec_spblock *next;
  size_t n;
  tsp s[SP_N];
} spblock;

static tstate *g_by_thr[MAX_THREADS];
static struct {
  uintptr_t key;  // the pthread_t; 0 empty, 1 joined
  int thr;
} g_pt[PT_MASK + 1];
static uint64_t g_sp_dropped;

static uint32_t pt_slot(uintptr_t k) { return (uint32_t)((k * UINT64_C(0x9E3779B97F4A7C15)) >> 40) & PT_MASK; }

// Thread starts and joins are rare: one spin lock for the map.
static int g_pt_lock;
static void pt_lock(void) {
  while (__atomic_exchange_n(&g_pt_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void pt_unlock(void) { __atomic_store_n(&g_pt_lock, 0, __ATOMIC_RELEASE); }

static void pt_put(pthread_t th, int thr) {
  uintptr_t k = (uintptr_t)th;
  if (k <= 1) return;
  pt_lock();
  uint32_t i = pt_slot(k);
  for (uint32_t n = 0; n <= PT_MASK; n++, i = (i + 1) & PT_MASK)
    if (g_pt[i].key <= 1) {
      g_pt[i].key = k;
      g_pt[i].thr = thr;
      break;
    }
  pt_unlock();
}

// The thread th names (the newest when a detached thread's id was reused),
// its entry taken; -1 when none.
static int pt_take(pthread_t th) {
  uintptr_t k = (uintptr_t)th;
  uint32_t i = pt_slot(k), best = 0;
  int thr = -1;
  pt_lock();
  for (uint32_t n = 0; n <= PT_MASK; n++, i = (i + 1) & PT_MASK) {
    if (g_pt[i].key == 0) break;
    if (g_pt[i].key == k && g_pt[i].thr > thr) {
      thr = g_pt[i].thr;
      best = i;
    }
  }
  if (thr >= 0) g_pt[best].key = 1;
  pt_unlock();
  return thr;
}

int ms__rec_thr_number(void) { return __atomic_fetch_add(&ms__rec.next_thr, 1, __ATOMIC_RELAXED); }

tstate *ms__rec_thr_state(int thr) {
  return thr >= 0 && thr < MAX_THREADS ? __atomic_load_n(&g_by_thr[thr], __ATOMIC_ACQUIRE) : NULL;
}

void ms__rec_thr_begin(tstate *ts, int thr, int peer, uintptr_t top, int64_t stack0) {
  ts->all = 1;
  ts->thr = thr;
  ts->peer = peer;
  // Its CPU clock, which another thread can read at the end (thr_finish).
  ts->cpu_clock_ok = pthread_getcpuclockid(pthread_self(), &ts->cpu_clock) == 0;
  if (thr >= 0 && thr < MAX_THREADS) __atomic_store_n(&g_by_thr[thr], ts, __ATOMIC_RELEASE);
  pt_put(pthread_self(), thr);
  ms__rec_become_recorded(ts, top, stack0);
}

void ms__rec_thr_begin_unknown(tstate *ts) {
  uintptr_t sp = ms__prim_sp();
  uintptr_t top = ms__rec_own_stack_top(ts, sp);
  ms__rec_thr_begin(ts, ms__rec_thr_number(), -1, top, (int64_t)(top - sp));
}

// A special row of ts at raw time t (ts's own thread, or the end).
static void push_special(tstate *ts, int64_t t, int kind, int peer, int64_t bytes, int64_t alloc,
                         int64_t heap_after) {
  spblock *b = ts->sp_tail;
  if (!b || b->n == SP_N) {
    spblock *nb = ms__rec_map(sizeof(spblock));
    if (!nb) {
      __atomic_fetch_add(&g_sp_dropped, 1, __ATOMIC_RELAXED);
      return;
    }
    if (b)
      b->next = nb;
    else
      ts->sp_head = nb;
    ts->sp_tail = b = nb;
  }
  b->s[b->n] = (tsp){t, ts->nrows, kind, peer, bytes, alloc, heap_after};
  __atomic_store_n(&b->n, b->n + 1, __ATOMIC_RELEASE);
}

void ms__rec_thr_end(tstate *ts) {
  ms__rec_sampler_disarm_thread(ts);
  ms__rec_flush_bucket(ts);
  ms__rec_mem_sample(ts);
  int64_t t = raw_now();
  ms__rec_push_row(ts, t, -1, theap(ts), ts->tag | ROW_EXACT,
                   cur_mem(ts), ms__rec_cpu_at(ts, t, 1), 1);
  ts->gone = 1;
  if (ts->thr == 0) ms__rec.rec_gone = 1;
}

void ms__rec_thr_joined(pthread_t th) {
  tstate *ts = ms__rec_ts;
  if (!ts || !ts->all || ts->gone || !__atomic_load_n(&ms__rec_on, __ATOMIC_RELAXED)) return;
  int x = pt_take(th);
  if (x < 0) return;
  ts->in_hook = 1;
  CBARRIER();
  ms__rec_flush_bucket(ts);  // the rows before it are all pushed: it sorts after them
  int64_t t = raw_now();
  ts->now = t;
  push_special(ts, t, SP_JOIN, x, 0, 0, 0);
  __atomic_fetch_add(&ms__rec.joins, 1, __ATOMIC_RELAXED);
  CBARRIER();
  ts->in_hook = 0;
}

void ms__rec_thr_xroom(tstate *ts, int from, int64_t alloc) {
  for (int i = 0; i < ts->nx; i++)
    if (ts->xf[i].from == from && ts->xf[i].alloc == alloc) return;
  if (ts->nx == (int)(sizeof ts->xf / sizeof ts->xf[0])) ms__rec_flush_bucket(ts);
}

void ms__rec_thr_xfree(tstate *ts, int from, int64_t alloc, int64_t bytes, int64_t heap_after) {
  __atomic_fetch_add(&ms__rec.xfrees, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < ts->nx; i++)
    if (ts->xf[i].from == from && ts->xf[i].alloc == alloc) {
      ts->xf[i].bytes += bytes;
      ts->xf[i].heap_after = heap_after;
      return;
    }
  if (ts->nx == (int)(sizeof ts->xf / sizeof ts->xf[0])) return;  // xroom made room
  ts->xf[ts->nx++] = (struct txfree){from, alloc, ts->now, bytes, heap_after};
}

void ms__rec_thr_xemit(tstate *ts) {
  for (int i = 0; i < ts->nx; i++)
    push_special(ts, ts->xf[i].t, SP_XFREE, ts->xf[i].from, ts->xf[i].bytes, ts->xf[i].alloc,
                 ts->xf[i].heap_after);
  ts->nx = 0;
}

void ms__rec_thr_finish(tstate *me, int64_t raw_end) {
  for (tstate *ts = ms__rec.list; ts; ts = ts->next) {
    if (!ts->all || ts->gone) continue;
    if (ts->h.b.active) ms__rec_flush_bucket(ts);
    if (ts->nx) ms__rec_thr_xemit(ts);
    // A thread still running: its CPU time read on its clock (a worker that
    // blocks the sampling signal and makes no allocator call, as xz's do,
    // had its CPU time only in its first rows: 0.005 s of xz's 2.5 s).
    int64_t cpu = ts == me && ts->is_rec ? ms__prim_thread_cpu_ns()
                  : ts->cpu_clock_ok   ? ms__prim_clock_cpu_ns(ts->cpu_clock)
                                       : -1;
    memv m = cur_mem(ts);
    // Another thread's faults from /proc (xz's workers wrote their tables after
    // their last call: their rows said 17 faults); else its last sample's (-1:
    // the merge fills them).
    if (ts != me) {
      int64_t mi, ma;
      if (ms__prim_task_faults(ts->tid, &mi, &ma) == 0)
        m.minflt = mi, m.majflt = ma;
      else
        m.minflt = m.majflt = -1;
    }
    ms__rec_push_row(ts, raw_end, -1, theap(ts),
                     ts->tag | ROW_EXACT, m, cpu, 1);
    ts->gone = 1;
  }
}

/* ---- the merge ---- */

struct arow;
static uint64_t g_raised;  // rows whose heap keep_held raised (metadata)
static int keep_held(struct arow *s, size_t k);
static int keep_falling(struct arow *s, size_t k, const size_t *lastown, const size_t *first,
                        int nthr);

typedef struct arow {
  xrow x;
  trow r;
  int64_t heap_after;  // an owner's lowered row: its heap (else -1)
  int64_t alloc_raw;   // a cross-thread free: the owner's bucket
  uint64_t pos;        // order within its thread (lowered rows after the thread's own)
  int watch;           // the watcher's reading of a thread that blocks the signal (watch.c)
} arow;

static int before(const arow *a, const arow *b) {
  if (a->x.t != b->x.t) return a->x.t < b->x.t;
  if (a->r.thr != b->r.thr) return a->r.thr < b->r.thr;
  return a->pos < b->pos;
}

// Stable bottom-up merge sort of a[0..n) with tmp; returns the sorted buffer.
static arow *sort_rows(arow *a, arow *tmp, size_t n) {
  for (size_t w = 1; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = before(&a[j], &a[i]) ? a[j++] : a[i++];
      while (i < mid) tmp[k++] = a[i++];
      while (j < hi) tmp[k++] = a[j++];
    }
    arow *sw = a;
    a = tmp;
    tmp = sw;
  }
  return a;
}

static size_t specials_of(const tstate *ts) {
  size_t n = 0;
  for (const spblock *b = ts->sp_head; b; b = b->next) n += __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
  return n;
}

static size_t rows_of(const tstate *ts) {
  size_t n = 0;
  for (const chunk *c = ts->head; c; c = c->next) n += __atomic_load_n(&c->n, __ATOMIC_ACQUIRE);
  return n;
}

/* A thread's cumulative reading (CPU time, run-queue wait) from its first
 * one (*base, set by the first reading there is): -1, not read, takes the
 * thread's last row's (last; 0 for its first row); never falling. */
static int64_t from_start(int64_t v, int64_t *base, int64_t last, int fresh) {
  if (*base < 0 && v >= 0) *base = v;
  if (v < 0) v = fresh ? 0 : last;
  else v -= *base > 0 ? *base : 0;
  if (!fresh && v < last) v = last;
  return v < 0 ? 0 : v;
}

static arow blank(int thr) {
  arow a;
  memset(&a, 0, sizeof a);
  a.r.thr = thr;
  a.r.peer = -1;
  a.r.xfrom = -1;
  a.heap_after = -1;
  a.x.stack = -1;
  a.x.m = (memv){-1, -1, -1, -1, -1};
  a.x.w.cpu = a.x.w.rq = -1;
  return a;
}

// The watcher's readings into the merge (ms__rec_thr_assemble).
typedef struct watch_add {
  arow *a;
  size_t *k, total;
  int nthr;
  const int64_t *tfirst;
  uint64_t j;
} watch_add;

static void watch_row(int32_t thr, int64_t t, int64_t rss, int64_t ver, int64_t minflt,
                      int64_t majflt, int64_t cpu, void *arg) {
  watch_add *w = arg;
  if (thr < 0 || thr >= w->nthr || *w->k >= w->total || t < w->tfirst[thr]) return;
  arow r = blank(thr);
  r.watch = 1;
  r.x.t = t;
  r.x.heap = -1;
  r.x.m.rss = rss;
  r.x.m.ver = ver;
  r.x.m.minflt = minflt;
  r.x.m.majflt = majflt;
  r.x.w.cpu = cpu;
  r.pos = UINT64_MAX / 4 + w->j++;  // after the thread's own rows at that time
  w->a[(*w->k)++] = r;
}

int ms__rec_thr_assemble(struct assembled *A, int64_t raw_end, double scale) {
  (void)raw_end;
  size_t total = 0;
  int nthr = 0;
  for (tstate *ts = __atomic_load_n(&ms__rec.list, __ATOMIC_ACQUIRE); ts; ts = ts->next) {
    if (!ts->all) continue;
    size_t sp = specials_of(ts);
    total += rows_of(ts) + 2 * sp;  // a cross-thread free also makes a row of its owner
    if (ts->thr + 1 > nthr) nthr = ts->thr + 1;
  }
  if (total == 0) return -ENODATA;
  size_t nwatch = ms__rec_watch_count();
  total += nwatch;
  A->raw_rows = total;
  arow *a = ms__rec_map(total * sizeof(arow)), *tmp = ms__rec_map(total * sizeof(arow));
  xrow *rows = ms__rec_map(total * sizeof(xrow));
  trow *tr = ms__rec_map(total * sizeof(trow));
  // Per thread: its last row, its first CPU and fault readings, its last row's index.
  arow *last = ms__rec_map((size_t)nthr * sizeof(arow));
  int64_t *cpu0 = ms__rec_map((size_t)nthr * 6 * sizeof(int64_t));
  size_t *first = ms__rec_map((size_t)nthr * 2 * sizeof(size_t));
  if (!a || !tmp || !rows || !tr || !last || !cpu0 || !first) return -ENOMEM;
  int64_t *flt0 = cpu0 + nthr, *mjf0 = cpu0 + 2 * nthr, *heapv = cpu0 + 3 * nthr;
  int64_t *tfirst = cpu0 + 4 * nthr;  // each thread's first row's raw time
  int64_t *rq0 = cpu0 + 5 * nthr;     // its first run-queue reading
  for (int th = 0; th < nthr; th++) tfirst[th] = INT64_MAX;
  size_t *lastown = first + nthr;
  size_t k = 0;
  // 1. Each thread's rows with its special rows among them, in its order.
  for (tstate *ts = ms__rec.list; ts; ts = ts->next) {
    if (!ts->all) continue;
    const spblock *b = ts->sp_head;
    size_t si = 0, i = 0;
    uint64_t pos = 0;
    int64_t lastt = INT64_MIN;
    const chunk *c = ts->head;
    size_t ci = 0;
    for (;;) {
      const chunk *cc = c;
      while (cc && ci >= __atomic_load_n(&cc->n, __ATOMIC_ACQUIRE)) {
        cc = cc->next;
        ci = 0;
      }
      c = cc;
      while (b && si >= __atomic_load_n(&b->n, __ATOMIC_ACQUIRE)) {
        b = b->next;
        si = 0;
      }
      // A special row goes before the row pushed after it, and before rows of
      // a later time: a bucket's cross-thread frees are pushed when it closes,
      // after its rows, but belong at their first free's time (clamped to
      // the row before, they took the bucket's last time: the owner's heap
      // was then held up to 2.5x too high by the frees' need, keep_held).
      int take_sp = b && (!c || b->s[si].seq <= i || b->s[si].t < c->rows[ci].t);
      if (!take_sp && !c) break;
      if (k >= total) break;
      arow r = blank(ts->thr);
      if (take_sp) {
        const tsp *s = &b->s[si++];
        r.x.t = s->t;
        if (s->kind == SP_JOIN) {
          r.r.ev = TEV_JOIN;
          r.r.peer = s->peer;
        } else {
          r.r.xfrom = s->peer;
          r.r.xbytes = s->bytes;
          r.alloc_raw = s->alloc;
          r.heap_after = s->heap_after;  // for the owner's row below
        }
        r.x.heap = -1;
      } else {
        const row *rw = &c->rows[ci];
        r.x = (xrow){rw->t, rw->stack, rw->heap, rw->tag, c->mem[ci], c->work[ci]};
        ci++;
        i++;
      }
      if (r.x.t < lastt) r.x.t = lastt;
      lastt = r.x.t;
      if (pos == 0 && ts->thr >= 0 && ts->thr < nthr) tfirst[ts->thr] = r.x.t;
      r.pos = pos++;
      a[k++] = r;
    }
  }
  // 2. The owners' rows: each cross-thread free lowers its owner's heap then.
  size_t own_rows = k;
  for (size_t j = 0; j < own_rows && k < total; j++) {
    if (a[j].r.xfrom < 0) continue;
    arow r = blank(a[j].r.xfrom);
    r.x.t = a[j].x.t;
    r.heap_after = a[j].heap_after;
    r.pos = UINT64_MAX / 2 + j;  // after the owner's own rows at that time
    a[j].heap_after = -1;
    a[k++] = r;
  }
  // 2b. The watcher's readings, each a row of its thread after the thread's first.
  watch_add wa = {a, &k, total, nthr, tfirst, 0};
  ms__rec_watch_each(watch_row, &wa);
  // 3. Times in ns before the merge, so that rows at the same ns are in
  // thread order (the conversion keeps each thread's order).
  int64_t origin = ms__rec.origin_raw;
  for (size_t i = 0; i < k; i++) {
    int64_t t = (int64_t)((double)(a[i].x.t - origin) * scale);
    a[i].x.t = t < 0 ? 0 : t;
    if (a[i].r.xfrom >= 0) {
      int64_t an = (int64_t)((double)(a[i].alloc_raw - origin) * scale);
      a[i].r.xalloc_ns = an < 0 ? 0 : an;
    }
  }
  arow *s = sort_rows(a, tmp, k);
  // 4. Columns filled from each thread's previous row.
  int64_t prev_t = 0, rss0 = -1, last_rss = 0, last_mapped = 0;
  memv newest = {0, 0, 0, 0, -1};  // the newest memory sample a row showed
  int64_t total_heap = 0;
  memset(first, 0xff, (size_t)nthr * 2 * sizeof(size_t));
  A->regions = 0;
  for (size_t i = 0; i < k; i++) {
    arow *r = &s[i];
    int th = r->r.thr;
    if (th < 0 || th >= nthr) th = 0;
    r->x.tag &= ~ROW_EXACT;
    int fresh = first[th] == (size_t)-1;
    arow *L = &last[th];
    int special = r->r.ev == TEV_JOIN || r->r.xfrom >= 0 || r->heap_after >= 0;
    if (r->watch) {  // its heap, stack and region as its previous row left them
      r->x.heap = L->x.heap;
      r->x.stack = L->x.stack;
      r->x.tag = L->x.tag & ~ROW_EXACT;
    }
    if (special) {
      // The thread's state as its previous row left it; no calls of its own.
      int64_t t = r->x.t, heap = r->heap_after >= 0 ? r->heap_after : L->x.heap;
      r->x = L->x;
      r->x.t = t;
      r->x.heap = fresh ? (r->heap_after >= 0 ? r->heap_after : 0) : heap;
      memset(&r->x.w, 0, sizeof r->x.w);
      r->x.w.cpu = fresh ? 0 : L->x.w.cpu;
      r->x.w.rq = fresh ? 0 : L->x.w.rq;
      if (fresh) r->x.stack = 0;
      // Resident and mapped memory are the process's: the latest values.
      r->x.m.rss = rss0 >= 0 && last_rss > rss0 ? last_rss - rss0 : 0;
      r->x.m.mapped = last_mapped;
    } else {
      /* Resident and mapped memory are the process's, one sample at a time:
       * a row whose reading is older than one a row before it showed (its
       * thread's bucket took it earlier) shows the newer one. Else pool's
       * workers and collector, merged, went 736 pages down, up and down
       * within a millisecond, and its stub wrote and dropped them each time. */
      ms__rec_mem_newest(&r->x.m, &newest);
      if (r->x.m.rss < 0) r->x.m.rss = last_rss;
      if (r->x.m.mapped < 0) r->x.m.mapped = last_mapped;
      if (rss0 < 0) rss0 = r->x.m.rss;
      r->x.m.rss -= rss0;
      if (r->x.m.rss < 0) r->x.m.rss = 0;
      // Faults and CPU time from the thread's first row.
      if (fresh) {
        cpu0[th] = r->x.w.cpu;
        rq0[th] = r->x.w.rq;
        flt0[th] = r->x.m.minflt > 0 ? r->x.m.minflt : 0;
        mjf0[th] = r->x.m.majflt > 0 ? r->x.m.majflt : 0;
      }
      if (r->x.stack < 0) r->x.stack = fresh ? 0 : L->x.stack;
      if (r->x.m.minflt < 0)
        r->x.m.minflt = fresh ? 0 : L->x.m.minflt;
      else
        r->x.m.minflt -= flt0[th];
      if (r->x.m.majflt < 0)
        r->x.m.majflt = fresh ? 0 : L->x.m.majflt;
      else
        r->x.m.majflt -= mjf0[th];
      if (r->x.m.minflt < 0) r->x.m.minflt = 0;
      if (r->x.m.majflt < 0) r->x.m.majflt = 0;
      r->x.w.cpu = from_start(r->x.w.cpu, &cpu0[th], L->x.w.cpu, fresh);
      r->x.w.rq = from_start(r->x.w.rq, &rq0[th], L->x.w.rq, fresh);
      if (r->x.heap < 0) r->x.heap = 0;
      if (r->x.m.mapped < 0) r->x.m.mapped = 0;
      last_rss = r->x.m.rss + rss0;
      last_mapped = r->x.m.mapped;
    }
    if (r->x.t < prev_t) r->x.t = prev_t;  // sorted: never, kept as a guard
    prev_t = r->x.t;
    if (fresh) {
      first[th] = i;
      r->r.ev = TEV_START;
      tstate *ts = ms__rec_thr_state(th);
      r->r.peer = ts ? ts->peer : -1;
    }
    if (!special && !r->watch) lastown[th] = i;
    if (r->x.tag > 0) A->regions = 1;
    total_heap += r->x.heap - (fresh ? 0 : heapv[th]);
    heapv[th] = r->x.heap;
    if (total_heap > A->peak_heap) A->peak_heap = total_heap;
    if (r->x.stack > A->peak_stack) A->peak_stack = r->x.stack;
    if (r->x.m.rss > A->peak_rss) A->peak_rss = r->x.m.rss;
    if (r->x.m.mapped > A->peak_mapped) A->peak_mapped = r->x.m.mapped;
    *L = *r;
  }
  int raised = keep_held(s, k);
  raised |= keep_falling(s, k, lastown, first, nthr);
  if (raised) {  // rows raised: the process's peak again
    total_heap = A->peak_heap = 0;
    memset(heapv, 0, (size_t)nthr * sizeof *heapv);
    for (size_t i = 0; i < k; i++) {
      int th = s[i].r.thr >= 0 && s[i].r.thr < nthr ? s[i].r.thr : 0;
      total_heap += s[i].x.heap - heapv[th];
      heapv[th] = s[i].x.heap;
      if (total_heap > A->peak_heap) A->peak_heap = total_heap;
    }
  }
  // The rows' sum keeps each thread's bucket peaks; the process's own is exact.
  A->rows_peak_heap = A->peak_heap;
  A->peak_heap = __atomic_load_n(&ms__rec_proc_peak, __ATOMIC_RELAXED);
  // Each thread's last row of its own is its exit (a row of its start stays that).
  for (int th = 0; th < nthr; th++)
    if (lastown[th] != (size_t)-1 && lastown[th] != first[th] && s[lastown[th]].r.ev == TEV_NONE)
      s[lastown[th]].r.ev = TEV_EXIT;
  for (size_t i = 0; i < k; i++) {
    rows[i] = s[i].x;
    tr[i] = s[i].r;
  }
  A->rows = rows;
  // One thread recorded: a trace without thread columns, as --thread main's.
  A->tr = __atomic_load_n(&ms__rec.next_thr, __ATOMIC_RELAXED) > 1 ? tr : NULL;
  A->n = k;
  A->origin_raw = origin;
  A->scale = scale;
  A->duration = k ? rows[k - 1].t : 0;
  return 0;
}

/* A thread's heap at a row is at least the bytes of its blocks allocated by
 * then that another thread frees later (their cross-thread free rows say so,
 * and memstub gen holds the thread to it). A free's thread reads the
 * owner's own count without a lock and can miss its last allocations: an
 * owner's lowered row then shows too little. Such a row is raised to what
 * the later frees prove (counted in record.cross_thread_heap_raised). s:
 * the k merged rows, sorted by time. 1 when a row was raised. */
static int keep_held(arow *s, size_t k) {
  int64_t *need = ms__rec_map(k * sizeof *need + 1);
  uint64_t raised = g_raised;
  if (!need) return 0;
  for (size_t j = 0; j < k; j++) {
    if (s[j].r.xfrom < 0) continue;
    // Rows of the owner from the allocation's row up to the free (excluded).
    int a = s[j].r.xfrom;
    for (size_t i = 0; i < j && s[i].x.t < s[j].x.t; i++)
      if (s[i].r.thr == a && s[i].x.t >= s[j].r.xalloc_ns) need[i] += s[j].r.xbytes;
  }
  for (size_t i = 0; i < k; i++)
    if (s[i].x.heap < need[i]) {
      s[i].x.heap = need[i];
      g_raised++;
    }
  munmap(need, k * sizeof *need + 1);
  return g_raised != raised;
}

/* A thread's rows after its exit row (its last of its own) only lower or
 * keep its heap: others free its blocks. Blocks it allocated after that row
 * (thread-local destructors) can make a later lowered row, or keep_held's
 * raise of it, higher than the row before; that row, back to the exit row,
 * is raised to it (the blocks were held then). s: the k merged rows, sorted;
 * lastown and first: each thread's last and first row of its own ((size_t)-1:
 * none). 1 when a row was raised. */
static int keep_falling(arow *s, size_t k, const size_t *lastown, const size_t *first, int nthr) {
  uint64_t raised = g_raised;
  for (int th = 0; th < nthr; th++) {
    if (lastown[th] == (size_t)-1 || lastown[th] == first[th]) continue;  // no exit row
    int64_t hi = -1;
    for (size_t i = k; i-- > lastown[th];) {
      if (s[i].r.thr != th) continue;
      if (s[i].x.heap < hi) {
        s[i].x.heap = hi;
        g_raised++;
      }
      hi = s[i].x.heap;
    }
  }
  return g_raised != raised;
}

void ms__rec_thr_meta(void) {
  if (g_raised)
    ms__rec_meta("record.cross_thread_heap_raised",
                 "%llu rows of an owner's heap, below the bytes later frees by other threads prove",
                 (unsigned long long)g_raised);
  ms__rec_watch_meta();
  ms__rec_meta("record.threads_recorded", "%d", __atomic_load_n(&ms__rec.next_thr, __ATOMIC_RELAXED));
  ms__rec_meta("record.cross_thread_frees", "%llu",
               (unsigned long long)__atomic_load_n(&ms__rec.xfrees, __ATOMIC_RELAXED));
  ms__rec_meta("record.joins", "%llu",
               (unsigned long long)__atomic_load_n(&ms__rec.joins, __ATOMIC_RELAXED));
  if (g_sp_dropped)
    ms__rec_meta("record.special_rows_dropped", "%llu (out of memory)",
                 (unsigned long long)g_sp_dropped);
}
