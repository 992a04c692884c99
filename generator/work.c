// The trace's work columns (cpu_ns, churn_bytes, calls_*: docs/formats.md,
// "Work columns") into the stub's work arrays (layout 3): the recorder's
// cost taken out of the times (traces/timeline.c), --cpu-scale and --churn-scale
// applied, and the call vectors deduplicated into a table, so that most
// points cost one small index.
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memstub/calib.h"
#include "memstub/work.h"

#define NC MEMSTUB_WORK_CALLS

static const char *const call_cols[NC] = {MEMSTUB_WORK_CALL_COLUMNS};

void ms__gen_work_free(ms__work *w) {
  free(w->times);
  free(w->cpu);
  free(w->calls);
  free(w->bytes);
  memset(w, 0, sizeof *w);
}

/* -EINVAL with err: the column's calls or bytes up to row i (from 0), times
 * --churn-scale, do not fit 64 bits. */
static int churn_overflow(size_t i, const char *col, const memstub_gen_options *o,
                          memstub_error *err) {
  if (o->churn_scale == 1.0)
    return memstub_error_set(err, -EINVAL, "row %zu: %s overflows 64 bits summed over the rows",
                             i + 1, col);
  return memstub_error_set(err, -EINVAL, "row %zu: %s overflows 64 bits with --churn-scale %g",
                           i + 1, col, o->churn_scale);
}

int ms__gen_work_read(const memstub_trace *t, const memstub_gen_options *o, ms__work *w,
                      memstub_error *err) {
  memset(w, 0, sizeof *w);
  int ccol = memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN);
  int bcol = memstub_trace_column(t, MEMSTUB_WORK_BYTES_COLUMN);
  int kcol[NC], any = 0;
  for (int k = 0; k < NC; k++) any |= (kcol[k] = memstub_trace_column(t, call_cols[k])) >= 0;
  if (ccol < 0 && !any) return 0;
  size_t n = t->n;
  w->present = 1;
  w->has_bytes = bcol >= 0;
  w->n = n;
  w->times = malloc(n * sizeof *w->times);
  w->cpu = calloc(n, sizeof *w->cpu);
  w->calls = calloc(n * NC, sizeof *w->calls);
  w->bytes = calloc(n, sizeof *w->bytes);
  int64_t *dt = malloc(n * sizeof *dt);
  if (!w->times || !w->cpu || !w->calls || !w->bytes || !dt) {
    free(dt);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  // The recorder's cost out of the times and the CPU time (traces/timeline.c,
  // which compare uses too): w->cpu holds each row's CPU time on that timeline.
  int rc = ms__timeline_model(t, &w->timeline, err);
  if (rc == 0) rc = ms__timeline_rows(t, &w->timeline, dt, w->cpu, err);
  w->overhead_ns = w->timeline.removed_ns;
  double cum[NC + 1] = {0};
  int64_t done[NC + 1] = {0};
  w->times[0] = t->pts[0].time_ns;
  for (size_t i = 1; rc == 0 && i < n; i++) {
    const int64_t *e = memstub_trace_extra_row(t, i);
    for (int k = 0; k < NC; k++) {
      int64_t v = kcol[k] >= 0 ? e[kcol[k]] : 0;  // >= 0: ms__timeline_rows checked
      // --churn-scale, the rounding carried on so the totals stay right.
      cum[k] += (double)v * o->churn_scale;
      int64_t want;
      if (ms__round_i64(cum[k], &want) < 0) {
        rc = churn_overflow(i, call_cols[k], o, err);
        break;
      }
      w->calls[i * NC + (size_t)k] = want - done[k];
      done[k] = want;
    }
    if (rc < 0) break;
    int64_t b = bcol >= 0 ? e[bcol] : 0;
    if (b < 0) {
      rc = memstub_error_set(err, -EINVAL, "row %zu: churn_bytes: negative %lld", i + 1,
                             (long long)b);
      break;
    }
    cum[NC] += (double)b * o->churn_scale;
    int64_t wantb;
    if (ms__round_i64(cum[NC], &wantb) < 0) {
      rc = churn_overflow(i, MEMSTUB_WORK_BYTES_COLUMN, o, err);
      break;
    }
    w->bytes[i] = wantb - done[NC];
    done[NC] = wantb;
    // --cpu-scale: the computation takes F times its time, the waiting stays.
    int64_t c = w->cpu[i], c2 = c;
    if (o->cpu_scale != 1.0 && ms__round_i64((double)c * o->cpu_scale, &c2) < 0) {
      rc = memstub_error_set(err, -EINVAL, "row %zu: cpu_ns overflows 64 bits with --cpu-scale %g",
                             i + 1, o->cpu_scale);
      break;
    }
    w->cpu[i] = c2;
    int64_t dt2;
    if (ms__add_i64(dt[i] - c, c2, &dt2) < 0 || ms__add_i64(w->times[i - 1], dt2, &w->times[i]) < 0) {
      rc = memstub_error_set(err, -EINVAL, "row %zu: time_ns overflows 64 bits with --cpu-scale %g",
                             i + 1, o->cpu_scale);
      break;
    }
  }
  free(dt);
  return rc;
}

/* ---- the call table ---- */

typedef struct dedup {
  int64_t *tab;  // [n * NC]
  int64_t n, cap;
  int64_t *slot;  // [mask + 1] index + 1, 0 empty
  uint64_t mask;
} dedup;

static uint64_t hash(const int64_t *v) {
  uint64_t h = 1469598103934665603ULL;
  for (int k = 0; k < NC; k++) h = (h ^ (uint64_t)v[k]) * 1099511628211ULL;
  return h ^ (h >> 29);
}

// The index of vector v in the table, added if new; -1 when out of memory.
static int64_t intern(dedup *d, const int64_t *v) {
  uint64_t i = hash(v) & d->mask;
  for (; d->slot[i]; i = (i + 1) & d->mask)
    if (memcmp(d->tab + (d->slot[i] - 1) * NC, v, NC * sizeof *v) == 0) return d->slot[i] - 1;
  if (d->n == d->cap) {
    int64_t cap = d->cap ? d->cap * 2 : 64;
    int64_t *t = realloc(d->tab, (size_t)cap * NC * sizeof *t);
    if (!t) return -1;
    d->tab = t;
    d->cap = cap;
  }
  memcpy(d->tab + d->n * NC, v, NC * sizeof *v);
  d->slot[i] = ++d->n;
  return d->n - 1;
}

/* How far bytes lies outside what the calls of v can move within their
 * classes' bounds (memstub/work.h: memstub_work_bytes at the smallest and
 * the largest sizes); 0 when they can move exactly bytes. */
static double bytes_miss(const int64_t *v, int64_t bytes) {
  static const int64_t lo[MEMSTUB_WORK_CLASSES] = MEMSTUB_WORK_LO,
                       hi[MEMSTUB_WORK_CLASSES] = MEMSTUB_WORK_HI;
  double a = memstub_work_bytes(v, lo), b = memstub_work_bytes(v, hi), x = (double)bytes;
  return x < a ? a - x : x > b ? x - b : 0;
}

/* The stub's own heap block is resized with realloc at a row that changes
 * the heap: that call stands for one of the row's recorded calls, which is
 * taken out of v, and the bytes of the change out of *bytes (the replay
 * counts the block's resize as a realloc of those bytes). The call taken is
 * the first of this order whose removal leaves bytes the other calls can
 * move within their classes, else the one that leaves the least outside:
 * realloc (the change's class first, then the others), then for a growth
 * malloc, calloc, memalign, for a shrink free (the change's class first). A
 * realloc of a large block that grew a little moved far more bytes than the
 * change: taking it would leave its bytes to calls too small for them, and
 * the replay's churn short. The kind taken (MEMSTUB_CALL_*), -1 when the
 * row has none that fits. */
static int block_call(int64_t *v, int64_t change, int64_t *bytes) {
  static const int grow[] = {MEMSTUB_CALL_REALLOC, MEMSTUB_CALL_MALLOC, MEMSTUB_CALL_CALLOC,
                             MEMSTUB_CALL_MEMALIGN};
  static const int shrink[] = {MEMSTUB_CALL_REALLOC, MEMSTUB_CALL_FREE};
  const int *kinds = change > 0 ? grow : shrink;
  int nk = change > 0 ? 4 : 2;
  int64_t d = change > 0 ? change : -change;
  int cls = memstub_work_class((uint64_t)d);
  int64_t left = *bytes > d ? *bytes - d : 0;
  int best = -1;
  double best_miss = 0;
  for (int j = 0; j < nk; j++)
    for (int pass = 0; pass < 2; pass++)
      for (int c = 0; c < MEMSTUB_WORK_CLASSES; c++) {
        if ((pass == 0) != (c == cls)) continue;
        int k = kinds[j] * MEMSTUB_WORK_CLASSES + c;
        if (v[k] <= 0) continue;
        v[k]--;
        double miss = bytes_miss(v, left);
        v[k]++;
        if (best < 0 || miss < best_miss) {
          best = k;
          best_miss = miss;
        }
        if (miss == 0) goto take;
      }
take:
  if (best < 0) return -1;
  v[best]--;
  *bytes = left;
  return best / MEMSTUB_WORK_CLASSES;
}

/* Block resizes waiting for a recorded call to stand for: the recorder puts
 * a bucket's calls on its last row, so a bucket's first row (its maxima)
 * changes the heap without a call, and the calls come a row later. A resize
 * takes its call from the first row within OWED_ROWS that has one of a
 * fitting kind; after that it stays one call more than recorded. */
#define OWED_MAX 64
#define OWED_ROWS 8
typedef struct owed {
  int64_t change[OWED_MAX], row[OWED_MAX];
  int n;
} owed;

/* The resizes of o that row's calls v (and bytes) can stand for, taken out;
 * too old ones dropped. *frees counts those that stand for a free. */
static void pay(owed *o, int64_t *v, int64_t *bytes, int64_t row, int64_t *frees) {
  int k = 0;
  for (int j = 0; j < o->n; j++) {
    int kind = block_call(v, o->change[j], bytes);
    if (kind == MEMSTUB_CALL_FREE) ++*frees;
    if (kind >= 0 || row - o->row[j] >= OWED_ROWS) continue;
    o->change[k] = o->change[j];
    o->row[k++] = o->row[j];
  }
  o->n = k;
}

/* The heap change a point's resize stands for as the trace recorded it
 * (before --heap-scale): the recorded call it takes, and the bytes it takes
 * out of the row's churn, are those of the stub as recorded, so a what-if
 * on the heap makes the same calls (only its resizes are smaller or larger). */
static int64_t recorded_change(int64_t change, const memstub_gen_options *o) {
  if (o->heap_scale == 1.0 || o->heap_scale <= 0) return change;
  double c = (double)change / o->heap_scale;
  return c >= 9e18 ? INT64_MAX : c <= -9e18 ? -INT64_MAX : (int64_t)llround(c);
}

int ms__gen_work_points(memstub_gen *g, const ms__work *w, const memstub_gen_options *o,
                        memstub_error *err) {
  if (!w->present) return 0;
  int64_t n = g->stub.numdata;
  size_t cap = n > 0 ? (size_t)n : 1;
  dedup d = {0};
  int rc = 0;
  g->cpu = calloc(cap, sizeof *g->cpu);
  g->calls = calloc(cap, sizeof *g->calls);
  g->churn = calloc(cap, sizeof *g->churn);
  uint64_t slots = 64;
  while (slots < 2 * (uint64_t)w->n + 2) slots *= 2;
  d.slot = calloc(slots, sizeof *d.slot);
  d.mask = slots - 1;
  static const int64_t min_size[MEMSTUB_WORK_CLASSES] = MEMSTUB_WORK_LO;
  int64_t zero[NC] = {0}, v[NC], change;
  owed ow;
  ow.n = 0;
  if (!g->cpu || !g->calls || !g->churn || !d.slot || intern(&d, zero) != 0) {
    rc = memstub_error_set(err, -ENOMEM, "out of memory");
    goto out;
  }
  g->work_cpu_ns = g->work_calls = g->work_bytes = g->work_clamped = g->work_block_frees = 0;
  g->work_late = g->work_late_ns = 0;
  // The calls' costs of the profile, when it has them (calibration/calls.c).
  const double *call_ns = o->profile && o->profile->spin_steps_per_ns > 0 ? o->profile->call_ns : NULL;
  for (int64_t i = 0; i < n; i++) {
    int64_t row = g->point[i];
    if (row < 1 || (i > 0 && g->point[i - 1] == row)) continue;  // the row's first point only
    // Each of the row's points that resizes the block (its points up to the
    // next row's): a recorded call it stands for, from this row or a later one.
    for (int64_t j = i; j < n && g->point[j] == row; j++)
      if (g->use[j].heapAlloc != 0 && (change = recorded_change(g->use[j].heapAlloc, o)) != 0) {
        if (ow.n == OWED_MAX) {  // the oldest stays a call more
          memmove(ow.change, ow.change + 1, (OWED_MAX - 1) * sizeof *ow.change);
          memmove(ow.row, ow.row + 1, (OWED_MAX - 1) * sizeof *ow.row);
          ow.n--;
        }
        ow.change[ow.n] = change;
        ow.row[ow.n++] = row;
      }
    memcpy(v, w->calls + (size_t)row * NC, sizeof v);
    int64_t bytes = w->bytes[row];
    pay(&ow, v, &bytes, row, &g->work_block_frees);
    // The calls left move at least a byte each (a block of 0 bytes is none):
    // a row whose bytes the block's resize took all of asks for the least.
    double least = memstub_work_bytes(v, min_size);
    if (w->has_bytes && (double)bytes < least) bytes = least >= 9e18 ? INT64_MAX : (int64_t)least;
    int64_t idx = intern(&d, v);
    if (idx < 0) {
      rc = memstub_error_set(err, -ENOMEM, "out of memory");
      goto out;
    }
    g->calls[i] = idx;
    double pred = 0;  // the calls' expected cost here
    for (int k = 0; k < NC; k++) {
      if (ms__add_i64(g->work_calls, v[k], &g->work_calls) < 0) {
        rc = churn_overflow((size_t)row, "the sum of the calls_* columns", o, err);
        goto out;
      }
      if (call_ns) pred += (double)v[k] * call_ns[k];
    }
    if (pred > (double)g->use[i].time) {  // they cannot end on the deadline
      g->work_late++;
      int64_t late;
      if (ms__round_i64(pred - (double)g->use[i].time, &late) < 0 ||
          ms__add_i64(g->work_late_ns, late, &g->work_late_ns) < 0)
        g->work_late_ns = INT64_MAX;  // an estimate: saturated
    }
    g->churn[i] = bytes;
    if (ms__add_i64(g->work_bytes, bytes, &g->work_bytes) < 0) g->work_bytes = INT64_MAX;
    int64_t c = w->cpu[row];
    if (o->time_scale != 1.0 && ms__round_i64((double)c * o->time_scale, &c) < 0) c = INT64_MAX;
    if (c > g->use[i].time) {  // a delay compensated or scaled below the CPU time
      c = g->use[i].time;
      g->work_clamped++;
    }
    g->cpu[i] = c;
    g->work_cpu_ns += c;
  }
  g->calltab = d.tab;
  d.tab = NULL;
  g->ncalltab = d.n;
  g->work_overhead_ns = w->overhead_ns;
  g->stub.abi = MEMSTUB_STUB_ABI_WORK;
  g->stub.cpu = g->cpu;
  g->stub.calls = g->calls;
  g->stub.churn = g->churn;
  g->stub.calltab = g->calltab;
  g->stub.ncalltab = g->ncalltab;
  g->stub.block_frees = g->work_block_frees;
out:
  free(d.tab);
  free(d.slot);
  return rc;
}

int ms__gen_work_model(memstub_gen *g, const memstub_trace *t, const memstub_gen_options *o,
                       memstub_error *err) {
  memset(g->work_model, 0, sizeof g->work_model);
  g->has_model = 0;
  if (!g->cpu) return 0;  // no work: nothing for a model to count
  double share = o->mem_share;  // given, else the trace's
  int rc = share != 0 ? 1 : memstub_work_share_meta(t, &share, err);
  if (rc < 0) return rc;
  double *m = g->work_model;
  if (rc > 0) m[MEMSTUB_STUB_MODEL_SHARE] = share, g->has_model = 1;
  const struct memstub_profile *p = o->profile;
  if (p && p->spin_steps_per_ns > 0) m[MEMSTUB_STUB_MODEL_RATE] = p->spin_steps_per_ns, g->has_model = 1;
  for (int k = 0; p && k < MEMSTUB_WORK_TOUCH_SIZES; k++)
    if (p->touch_ns[k] > 0) m[MEMSTUB_STUB_MODEL_TOUCH + k] = p->touch_ns[k], g->has_model = 1;
  return 0;
}

void ms__gen_stub_out(const memstub_gen *g, struct memstub_stub *s) {
  *s = g->stub;
  if (!g->has_model) return;
  s->abi = MEMSTUB_STUB_ABI_MODEL;  // every earlier field as it is, NULL where absent
  s->work_model = g->work_model;
}
