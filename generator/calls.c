// memstub_gen_calls: a trace's calls file (memstub record --calls) into the
// stub, for the call replay (runtime/call_replay.c; docs/formats.md, "Calls
// in a stub"). Addresses become block ids: a new block takes the id freed
// last, else the next unused one, as the replay's table does; a realloc
// keeps its block's id. Each call is a head byte (the function, 0x40 no
// block came back, 0x80 of NULL) and LEB128 varints: the old block's id
// (free, realloc of a block), the size (all but free), the alignment
// (posix_memalign, aligned_alloc, memalign).
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "internal.h"
#include "memstub/work.h"
#include "ms_common.h"

/* ---- the encoded calls ------------------------------------------------- */

typedef struct enc {
  uint8_t *b;
  size_t len, cap;
  int64_t *ids;     // freed ids, the last on top
  size_t nids, capids;
  int64_t next_id;  // ids 0..next_id-1 were given
} enc;

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 4096;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * elem);
  if (!q) return -ENOMEM;
  *p = q, *cap = c;
  return 0;
}

static int put_byte(enc *e, uint8_t v) {
  if (grow((void **)&e->b, &e->cap, e->len + 1, 1) < 0) return -ENOMEM;
  e->b[e->len++] = v;
  return 0;
}

static int put_varint(enc *e, uint64_t v) {
  int rc = 0;
  while (rc == 0 && v >= 0x80) rc = put_byte(e, (uint8_t)(v | 0x80)), v >>= 7;
  return rc < 0 ? rc : put_byte(e, (uint8_t)v);
}

// A new block's id: the one freed last, else the next.
static int64_t take_id(enc *e) { return e->nids ? e->ids[--e->nids] : e->next_id++; }

static int give_id(enc *e, int64_t id) {
  if (grow((void **)&e->ids, &e->capids, e->nids + 1, sizeof *e->ids) < 0) return -ENOMEM;
  e->ids[e->nids++] = id;
  return 0;
}

static int aligned_fn(int fn) {
  return fn == MS__CALLS_POSIX_MEMALIGN || fn == MS__CALLS_ALIGNED_ALLOC || fn == MS__CALLS_MEMALIGN;
}

/* A size under --heap-scale f: rounded to the nearest byte, at least 1 when
 * the recorded one was (realloc(p, 0) frees, malloc(0) is a block of its
 * own: a what-if keeps each call's kind). */
static uint64_t scaled(uint64_t size, double f) {
  if (f == 1.0 || size == 0) return size;
  double v = (double)size * f + 0.5;
  if (v >= 0x1p62) return (uint64_t)1 << 62;  // the runtime refuses it, naming the point
  return v < 1 ? 1 : (uint64_t)v;
}

/* Encode call k, changing the live blocks and *heap (requested bytes, as
 * recorded: rows are matched on them) as it does; its size scaled by f in
 * the stub; *unknown counts a free or realloc of a block never allocated.
 * *old: the id of the block it was given (-1 none); *made: the id of the
 * block it leaves (a realloc's own, kept; -1 none). */
static int encode(enc *e, ms__addrmap *l, const ms__call *k, double f, int64_t *heap,
                  int64_t *unknown, int64_t *old, int64_t *made) {
  int fn = k->fn, rc = 0;
  int realloc_fn = fn == MS__CALLS_REALLOC || fn == MS__CALLS_REALLOCARRAY;
  int64_t id = -1, size = 0;
  *old = *made = -1;
  int has_old = k->old && (fn == MS__CALLS_FREE || realloc_fn);
  if (has_old && !ms__addrmap_take(l, k->old, &id, &size)) {
    (*unknown)++;
    if (fn == MS__CALLS_FREE) return 0;  // nothing the replay holds
    has_old = 0;                         // a realloc of it: made from NULL
  }
  uint8_t head = (uint8_t)fn | (k->failed ? 0x40 : 0) |
                 ((fn == MS__CALLS_FREE || realloc_fn) && !has_old ? 0x80 : 0);
  if ((rc = put_byte(e, head)) < 0) return rc;
  if (has_old && (rc = put_varint(e, (uint64_t)id)) < 0) return rc;
  if (fn != MS__CALLS_FREE && (rc = put_varint(e, scaled(k->size, f))) < 0) return rc;
  if (aligned_fn(fn) && (rc = put_varint(e, k->align)) < 0) return rc;
  if (has_old) *old = id;
  // The old block: freed unless a realloc failed with a size (it kept it).
  int kept = has_old && realloc_fn && k->failed && k->size > 0;
  if (has_old && !kept) *heap -= size;
  if (has_old && kept) {
    *made = id;
    return ms__addrmap_put(l, k->old, id, size) < 0 ? -ENOMEM : 0;
  }
  if (k->failed || !k->addr) return has_old ? give_id(e, id) : 0;
  if (!has_old) id = take_id(e);
  *made = id;
  *heap += (int64_t)k->size;
  return ms__addrmap_put(l, k->addr, id, (int64_t)k->size) < 0 ? -ENOMEM : 0;
}

/* ---- --churn-scale: the short-lived blocks ------------------------------ */

/* Each call's block followed from the call that made it (its chain: the
 * allocation, its reallocs, its free), for --churn-scale: a block made and
 * freed within one row is short-lived, and a share of those is left out,
 * every call of its chain. */
typedef struct link {
  int64_t start;  // the call that made the block this call is given or makes, -1 none
  int64_t end;    // for a chain's first call: the call that freed its block, -1 none
  uint8_t kind;   // for a chain's first call: its kind and size class (calls_* index)
  uint8_t drop;   // for a chain's first call: left out
} link;

typedef struct chains {
  link *call;      // [calls]
  size_t cap;
  int64_t *at;     // [calls] each one's place among the file's calls (the first reading's
  size_t capat;    //   filters left the others out: the host's, frees of unknown blocks)
  int64_t *byid;   // [ids] the chain of the live block with that id
  size_t capid;
} chains;

static uint8_t kind_class(const ms__call *k);

// Call i, c (old, made: the ids encode gave), into ch: 0 or -ENOMEM.
static int chain_note(chains *ch, int64_t i, const ms__call *c, int64_t old, int64_t made) {
  if (grow((void **)&ch->call, &ch->cap, (size_t)i + 1, sizeof *ch->call) < 0) return -ENOMEM;
  link *k = &ch->call[i];
  k->start = k->end = -1;
  k->kind = kind_class(c), k->drop = 0;
  if (old >= 0) {  // a realloc keeps its block's chain; a free ends it
    k->start = ch->byid[old];
    if (made < 0) ch->call[k->start].end = i;
    return 0;
  }
  if (made < 0) return 0;
  if (grow((void **)&ch->byid, &ch->capid, (size_t)made + 1, sizeof *ch->byid) < 0) return -ENOMEM;
  k->start = ch->byid[made] = i;
  return 0;
}

// The row call i went to: rowcall[r] is the calls of rows 0..r.
static size_t row_of(const int64_t *rowcall, size_t n, int64_t i) {
  size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (rowcall[mid] > i) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Which chains --churn-scale f (0 to 1) leaves out: of the short-lived
 * blocks (made and freed in one row: rowcall[r] is the calls of rows
 * 0..r), per kind and size class of the call that made them, in order,
 * each kept when an accumulator of f per block (from 0.5) reaches 1: the
 * kept share is f to within half a block per kind and class. Sets drop on
 * the first call of each chain left out. */
static void churn_drop(chains *ch, int64_t ncalls, const int64_t *rowcall, size_t n, double f) {
  double acc[MEMSTUB_WORK_CALLS];
  for (int c = 0; c < MEMSTUB_WORK_CALLS; c++) acc[c] = 0.5;
  for (int64_t i = 0; i < ncalls; i++) {
    link *k = &ch->call[i];
    if (k->start != i || k->end < 0 || row_of(rowcall, n, i) != row_of(rowcall, n, k->end)) continue;
    double *a = &acc[k->kind];
    *a += f;
    if (*a >= 1.0) *a -= 1.0;
    else k->drop = 1;
  }
}

// The kind and size class of call k (memstub/work.h's calls_* index), for one that makes a block.
static uint8_t kind_class(const ms__call *k) {
  int kind = k->fn == MS__CALLS_MALLOC                                         ? MEMSTUB_CALL_MALLOC
             : k->fn == MS__CALLS_CALLOC                                       ? MEMSTUB_CALL_CALLOC
             : k->fn == MS__CALLS_REALLOC || k->fn == MS__CALLS_REALLOCARRAY ? MEMSTUB_CALL_REALLOC
                                                                               : MEMSTUB_CALL_MEMALIGN;
  return (uint8_t)(kind * MEMSTUB_WORK_CLASSES + memstub_work_class(k->size));
}

/* A call's time and a row's are rounded from the clock each its own way:
 * a call up to this much after the next row's time may still complete a
 * row's heap. */
#define SLACK_NS 1000

/* ---- rows ----------------------------------------------------------------- */

// The calls read but not yet given to a row: per call its time, the heap
// (requested bytes) after it and its end in the encoded calls.
typedef struct window {
  int64_t *t, *heap, *off;
  size_t head, n, cap;  // entries [head, n)
} window;

static int window_add(window *w, int64_t t, int64_t heap, int64_t off) {
  if (w->n == w->cap && w->head > 0) {  // move the rest to the front
    size_t k = w->n - w->head;
    memmove(w->t, w->t + w->head, k * sizeof *w->t);
    memmove(w->heap, w->heap + w->head, k * sizeof *w->heap);
    memmove(w->off, w->off + w->head, k * sizeof *w->off);
    w->n = k, w->head = 0;
  }
  if (w->n == w->cap) {
    size_t c = w->cap ? 2 * w->cap : 4096, c0 = w->cap;
    if (grow((void **)&w->t, &c0, c, sizeof *w->t) < 0) return -ENOMEM;
    c0 = w->cap;
    if (grow((void **)&w->heap, &c0, c, sizeof *w->heap) < 0) return -ENOMEM;
    c0 = w->cap;
    if (grow((void **)&w->off, &c0, c, sizeof *w->off) < 0) return -ENOMEM;
    w->cap = c;
  }
  w->t[w->n] = t, w->heap[w->n] = heap, w->off[w->n] = off;
  w->n++;
  return 0;
}

/* Where row r (time tr, heap hr, the next row at tn) ends among the window's
 * calls: after the last call made by tr that leaves the heap at hr (the
 * calls a coalesced bucket made after its peak, all of one time, belong to
 * its next row), else after the first call before tn that does (the
 * bucket's peak row carries the bucket's first time), else after the last
 * call by tr (the row's heap is not met: the trace's heap and the calls'
 * differ by blocks from before the trace's scope). When the next row has
 * the same time, that last call by tr may be the next row's: then after the
 * call whose change of the heap is nearest the row's, dh (the last of
 * equals). Two rows of one time, the second after a free of 64 MiB, gave
 * the first row the free, and SQLite's stub wrote 44 MB back into other
 * blocks to meet the first row's resident target (6,500 faults, in one
 * recording of three). heap0: the heap before the window's first call.
 * Returns how many of the window's calls it takes. */
static size_t row_end_at(const window *w, int64_t heap0, int64_t tr, int64_t hr, int64_t dh,
                         int64_t tn) {
  size_t by = 0, match = heap0 == hr ? 0 : SIZE_MAX, later = SIZE_MAX, near = 0;
  int64_t want = heap0 + dh;
  uint64_t dnear = heap0 > want ? (uint64_t)(heap0 - want) : (uint64_t)(want - heap0);
  for (size_t j = w->head; j < w->n && w->t[j] <= tn + SLACK_NS; j++) {
    size_t k = j - w->head + 1;
    if (w->t[j] <= tr) {
      int64_t h = w->heap[j];
      uint64_t d = h > want ? (uint64_t)(h - want) : (uint64_t)(want - h);
      if (d <= dnear) near = k, dnear = d;
      by = k;
      if (h == hr) match = k;
    } else if (w->heap[j] == hr && later == SIZE_MAX) {
      later = k;
    }
  }
  return match != SIZE_MAX ? match : later != SIZE_MAX ? later : tn <= tr ? near : by;
}

/* --churn-scale: the calls file at path encoded again into *e (empty), the
 * calls the first reading took (ch->at) and of them the chains ch marks left
 * out skipped, heap_scale f on the sizes; row_end[r]
 * the end in it of row r's calls (rowcall[r]: the calls of rows 0..r, as
 * placed from the first reading, ncalls in all); *kept the calls kept. 0
 * or a negative errno with err set. */
static int reencode(const char *path, int merged, const chains *ch, int64_t ncalls,
                    const int64_t *rowcall, size_t n, double f, enc *e, int64_t *row_end,
                    int64_t *kept, memstub_error *err) {
  ms__calls *c = NULL;
  int rc = merged ? ms__calls_open_merged(path, &c, err) : ms__calls_open(path, &c, err);
  if (rc < 0) return rc;
  ms__addrmap l = {0};
  ms__call k;
  int64_t heap = 0, unknown = 0, old, made, i = 0, j = 0;
  size_t r = 0;
  for (; (rc = ms__calls_next(c, &k, err)) == 1; j++) {
    if (i >= ncalls) break;
    if (j != ch->at[i]) continue;  // not one of the calls the stub makes
    while (r < n && rowcall[r] <= i) row_end[r++] = (int64_t)e->len;
    const link *q = &ch->call[i++];
    if (q->start >= 0 && ch->call[q->start].drop) continue;  // a short-lived block left out
    if ((rc = encode(e, &l, &k, f, &heap, &unknown, &old, &made)) < 0) break;
    (*kept)++;
  }
  if (rc == 1) rc = 0;  // calls after the stub's last (the host's): not read
  if (rc >= 0 && i != ncalls)
    rc = memstub_error_set(err, -EINVAL, "%s: changed while read (%lld calls, then %lld)", path,
                           (long long)ncalls, (long long)i);
  while (r < n) row_end[r++] = (int64_t)e->len;
  ms__addrmap_free(&l);
  ms__calls_close(c);
  return rc;
}

int memstub_gen_calls(memstub_gen *g, const memstub_trace *t, const char *path, double heap_scale,
                      double churn_scale, memstub_error *err) {
  if (g->callseq) return memstub_error_set(err, -EINVAL, "%s: the stub has calls already", path);
  if (!(heap_scale > 0) || !isfinite(heap_scale))
    return memstub_error_set(err, -EINVAL, "%s: --heap-scale %g: the calls take a scale above 0",
                             path, heap_scale);
  if (!(churn_scale >= 0 && churn_scale <= 1))
    return memstub_error_set(err, -EINVAL, "%s: --churn-scale %g: the calls take a scale from 0 "
                             "to 1 (they leave out short-lived blocks, never add any)",
                             path, churn_scale);
  /* A trace of one thread with the process's heap (memstub record's default
   * when it narrows to one thread): every thread's calls, in time order, are
   * the stub's, made on its one thread. */
  const char *scope = memstub_trace_get_meta(t, "record.heap_scope");
  int merged = scope && strcmp(scope, "process") == 0 && memstub_trace_column(t, "thread") < 0;
  ms__calls *c = NULL;
  int rc = merged ? ms__calls_open_merged(path, &c, err) : ms__calls_open(path, &c, err);
  if (rc < 0) return rc;
  size_t n = t->n;
  int churn = churn_scale != 1.0 && n > 0;
  int64_t *row_end = calloc(n, sizeof *row_end);
  int64_t *rowcall = calloc(n, sizeof *rowcall);  // the calls of rows 0..r
  int64_t *callend = calloc((size_t)g->stub.numdata, sizeof *callend);
  enc e = {0};
  ms__addrmap l = {0};  // the live blocks: address -> id, size
  window w = {0};
  chains ch = {0};
  if (!row_end || !rowcall || !callend) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  // Rows are matched on t's heap as recorded: the base too (the stub's is scaled).
  int64_t heap = 0, base = g->stub.heap_base, count = 0;
  if (heap_scale != 1.0)
    for (size_t r = 0; r < n; r++)
      if (r == 0 || t->pts[r].heap_bytes < base) base = t->pts[r].heap_bytes;
  int64_t heap0 = base;
  g->calls_unknown = g->calls_rows_off = g->calls_churn_dropped = g->calls_threads = 0;
  g->calls_rows_off_first = -1;
  ms__call k;
  int ended = 0, first = 1;
  uint32_t thread = 0;
  int64_t nread = 0;  // the file's calls read
  uint32_t seen[64];  // the threads whose calls were taken (the first 64)
  size_t nseen = 0;
  // The trace's span: a --function or probe recording's calls file holds every
  // call of the run (docs/recording.md); the ones before or after are the host's.
  int64_t from = n ? t->pts[0].time_ns : 0, to = n ? t->pts[n - 1].time_ns : 0;
  for (size_t r = 0; rc == 0 && r < n; r++) {
    // Read the calls up to the next row's time (all of them for the last row).
    int64_t tn = r + 1 < n ? t->pts[r + 1].time_ns : INT64_MAX - SLACK_NS;
    while (rc == 0 && !ended && (w.n == w.head || w.t[w.n - 1] <= tn + SLACK_NS)) {
      if ((rc = ms__calls_next(c, &k, err)) <= 0) {
        ended = rc == 0;
        break;
      }
      nread++;
      if (k.t_ns < from || k.t_ns > to) {  // not the trace's: the host's
        rc = 0;
        continue;
      }
      if (!first && k.thread != thread && !merged) {
        rc = memstub_error_set(err, -EINVAL, "%s: calls of threads %u and %u: the call "
                               "replay carries one thread", path, thread, k.thread);
        break;
      }
      if (first || k.thread != thread) {  // the threads whose calls the stub makes, counted once
        size_t i = 0;
        while (i < nseen && seen[i] != k.thread) i++;
        if (i == nseen && nseen < MS__ARRAY_SIZE(seen)) seen[nseen++] = k.thread;
      }
      thread = k.thread, first = 0;
      size_t len0 = e.len;
      int64_t old, made;
      if ((rc = encode(&e, &l, &k, heap_scale, &heap, &g->calls_unknown, &old, &made)) == 0)
        rc = window_add(&w, k.t_ns, heap + base, (int64_t)e.len);
      // A free of a block from before the scope is not made: no call, no index.
      if (rc == 0 && churn && e.len > len0) rc = chain_note(&ch, count, &k, old, made);
      if (rc == 0 && churn && e.len > len0) {  // where it is in the file, for the second reading
        if (ms__grow((void **)&ch.at, &ch.capat, (size_t)count, sizeof *ch.at) < 0)
          rc = memstub_error_set(err, -ENOMEM, "out of memory");
        else
          ch.at[count] = nread - 1;
      }
      count += e.len > len0;
    }
    if (rc < 0) break;
    int64_t dh = t->pts[r].heap_bytes - (r ? t->pts[r - 1].heap_bytes : heap0);
    size_t take = r + 1 < n ? row_end_at(&w, heap0, t->pts[r].time_ns, t->pts[r].heap_bytes, dh, tn)
                            : w.n - w.head;
    if (take) heap0 = w.heap[w.head + take - 1];
    if (heap0 != t->pts[r].heap_bytes && g->calls_rows_off++ == 0) g->calls_rows_off_first = (int64_t)r;
    row_end[r] = take ? w.off[w.head + take - 1] : r ? row_end[r - 1] : 0;
    rowcall[r] = (r ? rowcall[r - 1] : 0) + (int64_t)take;
    w.head += take;
  }
  free(w.t), free(w.heap), free(w.off);
  ms__calls_close(c);
  ms__addrmap_free(&l);
  if (rc == 0 && churn) {  // again, the short-lived blocks left out: the rows stay where they were
    churn_drop(&ch, count, rowcall, n, churn_scale);
    free(e.b), free(e.ids);
    memset(&e, 0, sizeof e);
    int64_t kept = 0;
    rc = reencode(path, merged, &ch, count, rowcall, n, heap_scale, &e, row_end, &kept, err);
    g->calls_churn_dropped = count - kept;
    count = kept;
  }
  free(ch.call), free(ch.byid), free(ch.at);
  g->calls_threads = (int64_t)nseen;
  size_t used = e.len;  // the calls; then zeros to a whole word
  while (rc == 0 && e.len % 8) rc = put_byte(&e, 0);  // the data file sums 8-byte words
  if (rc == 0 && !e.b && !(e.b = calloc(1, 8))) rc = -ENOMEM;  // no calls: an empty array
  if (rc == -ENOMEM) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  if (rc == 0) {
    // A point takes the calls of its row when it is the row's last point,
    // and of the rows without a point before it.
    int64_t np = g->stub.numdata;
    for (int64_t i = 0; i < np; i++) {
      int last = i + 1 == np || g->point[i + 1] != g->point[i];
      callend[i] = last ? row_end[g->point[i]] : i ? callend[i - 1] : 0;
    }
    if (np > 0) callend[np - 1] = (int64_t)used;
    g->callseq = e.b, e.b = NULL;
    g->callend = callend, callend = NULL;
    g->stub.callseq = g->callseq;
    g->stub.callend = g->callend;
    g->stub.ncallseq = (int64_t)e.len;
    g->stub.ncallblocks = e.next_id;
    g->stub.ncallcount = count;
    g->stub.abi = MEMSTUB_STUB_ABI_CALLS;
  }
  free(e.b), free(e.ids);
  free(row_end), free(rowcall), free(callend);
  return rc;
}
