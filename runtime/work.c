// The work between a stub's memory changes (layout 3, docs/runtime.md,
// "Work"): before each point's deadline the replay runs the point's
// recorded CPU time as an amount of work (work_loops.c, "Work as work") and
// makes its recorded allocator calls, as short-lived blocks that are all
// freed again before the point's memory change, so heap_bytes stays exact
// at every original point.
//
// The work is counted at the calibration's rates, so a slower or shared
// core makes it take longer; the replay thread's CPU clock
// (CLOCK_THREAD_CPUTIME_ID) is its floor: it never spends less CPU time
// than the points' CPU times so far, and a preemption does not shorten it.
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memstub/work.h"
#include "prim.h"

#define NC MEMSTUB_WORK_CALLS
#define CL MEMSTUB_WORK_CLASSES

// Sizes of the classes (memstub/work.h): a representative, and the bounds.
static const int64_t rep[CL] = MEMSTUB_WORK_REP;
static const int64_t lo[CL] = MEMSTUB_WORK_LO;
static const int64_t hi[CL] = MEMSTUB_WORK_HI;

int ms__rt_work_init(ms__rt_work *w, const struct memstub_stub *s) {
  memset(w, 0, sizeof *w);
  if (s->abi < MEMSTUB_STUB_ABI_WORK || !s->cpu || !s->calls || !s->churn || !s->calltab) return 0;
  w->use = s->use;
  w->cpu = s->cpu;
  w->calls = s->calls;
  w->churn = s->churn;
  w->calltab = s->calltab;
  w->ncalltab = s->ncalltab;
  int large = 0;
  for (int64_t i = 0; i < s->ncalltab; i++)
    for (int k = 0; k < MEMSTUB_WORK_KINDS; k++) large |= s->calltab[i * NC + k * CL + CL - 1] > 0;
  /* A large block freed raises glibc's dynamic mmap threshold above it, and
   * the heap block would then stay in the arena where the original's went to
   * mmap: fixing the threshold at its default keeps the heap replay as it is
   * without churn. */
  if (large) mallopt(M_MMAP_THRESHOLD, MEMSTUB_WORK_MEDIUM_MAX);
  return 1;
}

int ms__rt_work_check(const struct memstub_stub *s, memstub_error *err) {
  // Layout 4 (the calls) may come without work data.
  if (s->abi < MEMSTUB_STUB_ABI_WORK || (s->abi > MEMSTUB_STUB_ABI_WORK && !s->cpu)) return 0;
  if (!s->cpu || !s->calls || !s->churn || (s->ncalltab > 0 && !s->calltab) || s->ncalltab < 1)
    return memstub_error_set(err, -EINVAL, "the stub has work data (layout 3) without its arrays");
  for (int64_t i = 0; i < s->ncalltab * NC; i++)
    if (s->calltab[i] < 0 || s->calltab[i] > ((int64_t)1 << 40))
      return memstub_error_set(err, -EINVAL, "call table entry %lld: %lld calls", (long long)(i / NC),
                               (long long)s->calltab[i]);
  for (int64_t i = 0; i < s->numdata; i++) {
    if (s->cpu[i] < 0 || s->churn[i] < 0)
      return memstub_error_set(err, -EINVAL, "point %lld: negative CPU time or churn bytes",
                               (long long)i);
    if (s->calls[i] < 0 || s->calls[i] >= s->ncalltab)
      return memstub_error_set(err, -EINVAL, "point %lld: call vector %lld of %lld", (long long)i,
                               (long long)s->calls[i], (long long)s->ncalltab);
  }
  return 0;
}

/* ---- the calls ---------------------------------------------------------- */

typedef struct pool {
  void *p[MS__RT_WORK_POOL];
  int64_t size[MS__RT_WORK_POOL];
  int n;
} pool;

void ms__rt_work_note(int64_t *m, int k, int64_t bytes) {
  if (!m) return;
  m[2 + k * CL + memstub_work_class((uint64_t)bytes)]++;
  m[1] += bytes;
}

static void free_all(pool *pl, int64_t *m) {
  for (int i = 0; i < pl->n; i++) {
    ms__rt_work_note(m, MEMSTUB_CALL_FREE, pl->size[i]);
    free(pl->p[i]);
  }
  pl->n = 0;
}

static void keep(pool *pl, void *p, int64_t size, int64_t *m) {
  if (!p) return;
  ((volatile char *)p)[0] = 1;  // a block the program uses
  if (pl->n == MS__RT_WORK_POOL) free_all(pl, m);
  pl->p[pl->n] = p;
  pl->size[pl->n++] = size;
}

// The classes' sizes at scale k: each representative times k, within its class.
static void sizes_at(double k, int64_t *sz) {
  for (int c = 0; c < CL; c++) {
    double s = (double)rep[c] * k;
    sz[c] = s < (double)lo[c] ? lo[c] : s > (double)hi[c] ? hi[c] : (int64_t)s;
  }
}

/* The sizes of the point's calls: the classes' representatives scaled by one
 * factor, found by bisection, so that the bytes the calls move
 * (memstub_work_bytes) come to the churn bytes as closely as the classes'
 * bounds allow. No churn bytes (a trace without the column): the
 * representatives. */
void ms__rt_work_sizes(const int64_t *v, int64_t bytes, int64_t *sz) {
  sizes_at(1.0, sz);
  if (bytes <= 0 || memstub_work_bytes(v, sz) == (double)bytes) return;
  // The factor that takes the largest class to its bound, and the smallest to its own.
  double klo = 1.0 / (double)rep[CL - 1], khi = (double)hi[CL - 1] / (double)rep[0];
  for (int it = 0; it < 80; it++) {
    double k = klo + (khi - klo) / 2;
    sizes_at(k, sz);
    if (memstub_work_bytes(v, sz) < (double)bytes) klo = k;
    else khi = k;
    if (khi / klo < 1.0 + 1e-9) break;
  }
  sizes_at(khi, sz);
  // The nearer of the two ends.
  double above = memstub_work_bytes(v, sz);
  int64_t szl[CL];
  sizes_at(klo, szl);
  if ((double)bytes - memstub_work_bytes(v, szl) < above - (double)bytes) memcpy(sz, szl, sizeof szl);
}

/* The calls of vector v: the allocations class by class (at most 64 blocks
 * alive, a full pool freed), then the reallocs, class by class, all
 * resizing one block of their own (the first from NULL), then every block
 * freed. */
static double calls(const int64_t *v, int64_t bytes, int64_t *m) {
  pool pl;
  pl.n = 0;
  int64_t sz[CL];
  ms__rt_work_sizes(v, bytes, sz);
  for (int c = 0; c < CL; c++) {
    size_t s = (size_t)sz[c];
    for (int64_t i = 0; i < v[MEMSTUB_CALL_MALLOC * CL + c]; i++) {
      ms__rt_work_note(m, MEMSTUB_CALL_MALLOC, sz[c]);
      keep(&pl, malloc(s), sz[c], m);
    }
    for (int64_t i = 0; i < v[MEMSTUB_CALL_CALLOC * CL + c]; i++) {
      ms__rt_work_note(m, MEMSTUB_CALL_CALLOC, sz[c]);
      keep(&pl, calloc(1, s), sz[c], m);
    }
    for (int64_t i = 0; i < v[MEMSTUB_CALL_MEMALIGN * CL + c]; i++) {
      void *p = NULL;
      ms__rt_work_note(m, MEMSTUB_CALL_MEMALIGN, sz[c]);
      if (posix_memalign(&p, 64, s) != 0) p = NULL;
      keep(&pl, p, sz[c], m);
    }
  }
  void *rb = NULL;
  int64_t rsize = 0;
  for (int c = 0; c < CL; c++)
    for (int64_t i = 0; i < v[MEMSTUB_CALL_REALLOC * CL + c]; i++) {
      ms__rt_work_note(m, MEMSTUB_CALL_REALLOC, sz[c]);
      void *q = realloc(rb, (size_t)sz[c]);
      if (q) {
        rb = q;
        rsize = sz[c];
        ((volatile char *)rb)[0] = 1;
      }
    }
  if (rb) {
    ms__rt_work_note(m, MEMSTUB_CALL_FREE, rsize);
    free(rb);
  }
  free_all(&pl, m);
  return memstub_work_bytes(v, sz);
}

void ms__rt_work_block(ms__rt_work *w, int64_t *m, int64_t old, int64_t size) {
  if (old == size) return;
  int64_t d = size > old ? size - old : old - size, more = w->short_bytes;
  w->short_bytes = 0;
  if (!m) return;
  // The row's bytes its calls could not move, up to the block's new size.
  int64_t top = size > old ? size : old, room = top - d > 0 ? top - d : 0;
  if (more > room) more = room;
  m[2 + MEMSTUB_CALL_REALLOC * CL + memstub_work_class((uint64_t)d)]++;
  m[1] += d + more;
  w->row_block_m = m;
  w->row_room = room - more;
}

/* A new row begins: bytes the last row's calls could not move, with no
 * resize of its own to stand for them, go to the previous row's resize (its
 * call came a row late: the generator took it from this row's vector), up
 * to what that block could move. */
static void new_row(ms__rt_work *w) {
  if (w->short_bytes > 0 && !w->row_block_m && w->prev_block_m) {
    int64_t more = w->short_bytes < w->prev_room ? w->short_bytes : w->prev_room;
    w->prev_block_m[1] += more;
    w->prev_room -= more;
  }
  w->short_bytes = 0;
  if (w->row_block_m) {
    w->prev_block_m = w->row_block_m;
    w->prev_room = w->row_room;
  } else {
    w->prev_block_m = NULL;
  }
  w->row_block_m = NULL;
}

/* ---- what the calls cost (memstub_work_measure) ------------------------------ */

#define MEASURE_BATCH 32

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

// The size a realloc of class c alternates with rep[c], within the class.
static int64_t other_size(int c) {
  int64_t s = rep[c] * 3 / 2;
  return s > hi[c] ? hi[c] : s;
}

/* One round for class c: a batch of each allocating kind (as calls() makes
 * them, first byte written) and their frees, and a batch of reallocs of one
 * block between two sizes of the class. ns[k]: per call, ns; -1 when a call
 * failed. */
static void measure_round(int c, const int64_t *want, double *ns) {
  void *p[MEASURE_BATCH];
  size_t s = (size_t)rep[c];
  double fsum = 0;
  int fn = 0;
  for (int k = 0; k < MEMSTUB_WORK_KINDS; k++) {
    ns[k] = -1;
    if (k == MEMSTUB_CALL_FREE || k == MEMSTUB_CALL_REALLOC) continue;
    if (want && !want[k * CL + c] && !want[MEMSTUB_CALL_FREE * CL + c]) continue;
    int ok = 1;
    int64_t t0 = ms__prim_now_ns();
    for (int i = 0; i < MEASURE_BATCH; i++) {
      p[i] = NULL;
      if (k == MEMSTUB_CALL_MALLOC) p[i] = malloc(s);
      else if (k == MEMSTUB_CALL_CALLOC) p[i] = calloc(1, s);
      else if (posix_memalign(&p[i], 64, s) != 0) p[i] = NULL;
      if (p[i]) ((volatile char *)p[i])[0] = 1;
      else ok = 0;
    }
    int64_t t1 = ms__prim_now_ns();
    for (int i = 0; i < MEASURE_BATCH; i++) free(p[i]);
    int64_t t2 = ms__prim_now_ns();
    if (!ok) continue;
    ns[k] = (double)(t1 - t0) / MEASURE_BATCH;
    fsum += (double)(t2 - t1) / MEASURE_BATCH;
    fn++;
  }
  if (fn) ns[MEMSTUB_CALL_FREE] = fsum / fn;
  if (want && !want[MEMSTUB_CALL_REALLOC * CL + c]) return;
  void *b = malloc(s);
  if (!b) return;
  int64_t s2 = other_size(c), t0 = ms__prim_now_ns();
  for (int i = 0; i < MEASURE_BATCH; i++) {
    void *q = realloc(b, i % 2 ? s : (size_t)s2);
    if (!q) break;
    b = q;
    ((volatile char *)b)[0] = 1;
  }
  int64_t t1 = ms__prim_now_ns();
  free(b);
  ns[MEMSTUB_CALL_REALLOC] = (double)(t1 - t0) / MEASURE_BATCH;
}

int memstub_work_measure(const int64_t *want, int rounds, double *ns, double *spin_rate) {
  if (rounds < 1) rounds = 1;
  double *r = malloc((size_t)rounds * NC * sizeof *r), tmp[MEMSTUB_WORK_KINDS];
  if (!r) return -ENOMEM;
  for (int i = 0; i < rounds; i++)
    for (int c = 0; c < CL; c++) {
      measure_round(c, want, tmp);
      for (int k = 0; k < MEMSTUB_WORK_KINDS; k++) r[(size_t)i * NC + k * CL + c] = tmp[k];
    }
  // Per kind and class: the median of the rounds that measured it (0: none did).
  double *col = malloc((size_t)rounds * sizeof *col);
  if (!col) {
    free(r);
    return -ENOMEM;
  }
  for (int k = 0; k < NC; k++) {
    int n = 0;
    for (int i = 0; i < rounds; i++)
      if (r[(size_t)i * NC + k] >= 0) col[n++] = r[(size_t)i * NC + k];
    qsort(col, (size_t)n, sizeof *col, cmp_d);
    ns[k] = n ? col[n / 2] : 0;
  }
  free(col);
  free(r);
  if (spin_rate) *spin_rate = ms__rt_spin_rate_measure();
  return 0;
}

int64_t ms__rt_work_predict(const ms__rt_work *w, int64_t x) {
  int64_t idx = w->exact ? 0 : w->calls[x];
  if (idx <= 0 || !w->costed) return 0;
  const int64_t *v = w->calltab + idx * NC;
  double t = 0;
  for (int k = 0; k < NC; k++) t += (double)v[k] * w->call_ns[k];
  t *= w->corr;
  return t > 1e15 ? (int64_t)1e15 : (int64_t)t;
}

/* The figures a replay predicts with when it is given none: memstub
 * calibrate --quick on the development VM (docs/calibration.md, "Allocator
 * calls"), ns per call by kind and class. Only their proportions matter:
 * the replay learns the scale on this host from its own calls. */
static const double default_call_ns[NC] = {
    96, 39, 134, 3328,   // malloc
    23, 43, 326, 3506,   // calloc
    13, 53, 21, 6260,    // realloc
    11, 13, 14, 3599,    // free
    94, 29, 57, 3375};   // memalign

void ms__rt_work_costs(ms__rt_work *w, const double *call_ns) {
  if (w->ncalltab < 2) return;
  int given = 0;
  for (int k = 0; call_ns && k < NC; k++) given |= call_ns[k] > 0;
  for (int k = 0; k < NC; k++) w->call_ns[k] = given ? call_ns[k] : default_call_ns[k];
  w->corr = 1.0;
  w->costed = 1;
  w->learnt = 0;
}

/* The point's work aims at the recorded work from the start, cumulative,
 * counted in work (ns at the calibrated rates): what the replay spent beyond
 * its counted work (its deadline spins, its memory work, its measuring, its
 * calls) comes out of the next point's, converted at the speed the counted
 * work ran at so far, so that a slower core slows the work and not its
 * deduction; a point never does more than its own. Then the floor: the
 * thread's CPU time since the first point reaches the points' CPU times so
 * far (spun on the CPU clock, as before the counted work), so a host faster
 * than the calibration (or a memory share whose touches hit the cache) does
 * not end the work early. Late work is never cut: the counted work does not
 * look at the clock on the wall. */
void ms__rt_work_start(ms__rt_work *w, int64_t cpu_ns) {
  w->started = 1;
  w->base = cpu_ns;
}

void ms__rt_work_spin(ms__rt_work *w, int64_t x, int64_t reserve) {
  int64_t cpu = w->cpu[x];
  if (!w->started) {  // the first point: the replay's start
    w->started = 1;
    w->base = ms__prim_thread_cpu_ns();
  }
  w->target += cpu;
  w->wtarget += (double)cpu;
  if (cpu <= reserve) return;
  int64_t now = w->base >= 0 ? ms__prim_thread_cpu_ns() : -1;
  if (now < 0) {  // no CPU clock: the work alone
    w->wdone += (double)(cpu - reserve);
    (void)ms__rt_work_do(w, (double)(cpu - reserve));
    return;
  }
  // CPU ns per ns of work so far (1 as calibrated), and what the rest cost in work.
  double slow = w->wdone > 1e5 && w->wdone_ns > 0 ? (double)w->wdone_ns / w->wdone : 1.0;
  double other = (double)(now - w->base - w->wdone_ns - w->floor_ns) / slow;
  double owe = w->wtarget - w->wdone - (other > 0 ? other : 0);
  if (owe > (double)cpu) owe = (double)cpu;
  owe -= (double)reserve / slow;  // the calls come after the wait, at this core's speed
  /* No calibration's rate and no memory share: nothing to count the work
   * against but the rate measured here at the start, in runs of 0.1 ms that
   * miss the host's interruptions. The work counted at it ran 4-6 % longer
   * than counted on the development VM, steal the guest counts as running
   * and the recorded CPU time holds already (docs/runtime.md, "Work as
   * work"): the floor below spins to the CPU time instead. */
  if (w->rate_own && w->mem_share == 0) owe = 0;
  int64_t took = 0;
  if (owe > 0) {
    took = ms__rt_work_do(w, owe);
    w->wdone += owe;
    w->wdone_ns += took;
  }
  // The floor, as the CPU-time spin was: at most this point's time, less the reserve.
  int64_t due = w->base + w->target - now;
  if (due > cpu) due = cpu;
  due -= reserve + took;
  if (due > 0) {
    int64_t f = ms__rt_spin(due, w->rate);
    w->floor_ns += f;
    took += f;
  }
  w->spun += took;
}

void ms__rt_work_calls(ms__rt_work *w, int64_t x, int64_t predicted, int64_t *m) {
  int64_t idx = w->exact ? 0 : w->calls[x];
  if (m) m[0] = -1;
  if (idx > 0 || w->use[x].time > 0) new_row(w);  // a new row's work
  // Bytes without calls to move them: the block's resize stands for the call that did.
  if (idx == 0 && !w->exact && w->churn[x] > 0) w->short_bytes = w->churn[x];
  if (idx > 0) {
    int64_t t0 = predicted > 0 ? ms__prim_now_ns() : 0;
    double got = calls(w->calltab + idx * NC, w->churn[x], m);
    if ((double)w->churn[x] > got) w->short_bytes = w->churn[x] - (int64_t)got;
    if (predicted > 0) {
      // Learn how far the calls' measured cost is from the prediction: a
      // ratio moved an eighth of the way, a sample above 3 x (preempted?) as 3.
      double r = (double)(ms__prim_now_ns() - t0) / ((double)predicted / w->corr);
      if (!w->learnt++) w->corr = r;  // the first sample sets the scale
      if (r > 3 * w->corr) r = 3 * w->corr;
      w->corr += (r - w->corr) / 8;
      if (w->corr < 0.2) w->corr = 0.2;
      if (w->corr > 5) w->corr = 5;
    }
  }
  if (m) m[0] = ms__prim_thread_cpu_ns();
}

/* The spin aims at the cumulative recorded CPU time (see ms__rt_work_spin);
 * with the paper's relative sleeps the calls come first, then the spin. */
void ms__rt_work_point(ms__rt_work *w, int64_t x, int64_t *m) {
  ms__rt_work_calls(w, x, 0, m);
  ms__rt_work_spin(w, x, 0);
  if (m) m[0] = ms__prim_thread_cpu_ns();
}

void ms__rt_work_rebase(int64_t *wrec, int64_t n, int64_t cpu0) {
  for (int64_t i = 0; wrec && i < n; i++) {
    int64_t *m = wrec + i * MS__RT_WORK_REC;
    m[0] = m[0] >= 0 && cpu0 >= 0 && m[0] >= cpu0 ? m[0] - cpu0 : -1;
  }
}
