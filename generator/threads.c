// Traces with several threads: one stub per thread, the thread table and the
// cross-thread handoffs (memstub/threads.h, docs/formats.md "Threads").
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memstub/gen.h"

void memstub_gen_threads_free(memstub_gen_threads *g) {
  if (!g) return;
  for (int64_t i = 0; i < g->nthreads; i++) {
    if (g->gen) memstub_gen_free(g->gen[i]);
    if (g->rows) free(g->rows[i]);
  }
  free(g->gen);
  free(g->stubs);
  free(g->threads);
  free(g->handoffs);
  free(g->rows);
  free(g->nrows);
  free(g->nstub);
  free(g);
}

// Columns a thread's own trace leaves out: the thread columns and the
// process-wide resident and mapped memory (their shares are added back,
// shares()).
static int left_out(const char *name) {
  static const char *const cols[] = {"thread",      "thread_event",   "thread_peer",
                                     "xfree_from",  "xfree_bytes",    "xfree_alloc_ns",
                                     "rss_bytes",   "mapped_bytes"};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
    if (strcmp(name, cols[i]) == 0) return 1;
  return 0;
}

/* The process's resident (or mapped) memory, column col, shared among its
 * threads, so that their stubs together hold what the process held: each
 * change goes to the thread whose row saw it (its share grows or falls by it); a fall
 * larger than that thread's share takes the rest from the others' shares
 * (lowest thread first), which their stubs follow at their next rows. Rows
 * are where a thread's replay can act, so a growth a thread without rows
 * made (one that blocks the recorder's timer) is held by the thread that
 * saw it. A thread's start row is the exception: a thread's stub takes its
 * first row's level as its zero, so what that row saw goes to the creator
 * (xz's stub held 3 MiB less than its trace's peak, a worker's first row
 * having seen what the main thread wrote before). A new array of t->n
 * shares (row r: its thread's share after it), or NULL (out of memory, or t
 * has no column col: *none set). */
static int64_t *shares(const memstub_trace *t, const memstub_trace_threadcols *c, int64_t nt,
                       const char *col, int *none) {
  int crss = memstub_trace_column(t, col);
  *none = crss < 0;
  if (crss < 0) return NULL;
  int64_t *share = malloc(t->n * sizeof *share), *cur = calloc((size_t)nt, sizeof *cur);
  if (!share || !cur) {
    free(share);
    free(cur);
    return NULL;
  }
  int64_t prev = 0;
  for (size_t r = 0; r < t->n; r++) {
    const int64_t *x = memstub_trace_extra_row(t, r);
    int64_t th = x[c->thread], rss = x[crss] > 0 ? x[crss] : 0, d = rss - prev;
    prev = rss;
    int64_t who = th;  // whose share the change is
    if (c->event >= 0 && c->peer >= 0 && x[c->event] == MEMSTUB_THREAD_EVENT_START &&
        x[c->peer] >= 0 && x[c->peer] < nt && x[c->peer] != th)
      who = x[c->peer];
    cur[who] += d;
    for (int64_t o = 0; cur[who] < 0 && o < nt; o++) {  // a fall beyond its share
      if (o == who || cur[o] <= 0) continue;
      int64_t take = cur[o] < -cur[who] ? cur[o] : -cur[who];
      cur[o] -= take;
      cur[who] += take;
    }
    if (cur[who] < 0) cur[who] = 0;
    share[r] = cur[th];
  }
  free(cur);
  return share;
}

/* Thread th's rows of t as a trace of its own, heap_bytes less held[k] (the
 * handed-off blocks its row k still counts), with rss_bytes from share[]
 * and mapped_bytes from mshare[] (NULL: none). */
static int sub_trace(const memstub_trace *t, const size_t *rows, size_t n, const int64_t *held,
                     const int64_t *share, const int64_t *mshare, memstub_trace **out) {
  memstub_trace *s = memstub_trace_create();
  if (!s) return -ENOMEM;
  int map[MEMSTUB_TRACE_MAX_EXTRA_COLUMNS];
  size_t nmap = 0;
  int rc = 0;
  for (size_t c = 0; c < t->nextra && rc >= 0; c++)
    if (!left_out(t->extra_names[c])) {
      rc = memstub_trace_add_column(s, t->extra_names[c]);
      map[nmap++] = (int)c;
    }
  int cshare = share && rc >= 0 ? memstub_trace_add_column(s, "rss_bytes") : -1;
  if (cshare < -1) rc = cshare;
  int cmap = mshare && rc >= 0 ? memstub_trace_add_column(s, "mapped_bytes") : -1;
  if (cmap < -1) rc = cmap;
  for (size_t i = 0; i < t->nmeta && rc >= 0; i++)
    rc = memstub_trace_set_meta(s, t->meta[i].key, t->meta[i].value);
  for (size_t k = 0; k < n && rc >= 0; k++) {
    const memstub_point *p = &t->pts[rows[k]];
    rc = memstub_trace_append(s, p->time_ns, p->stack_bytes, p->heap_bytes - held[k]);
    const int64_t *src = memstub_trace_extra_row(t, rows[k]);
    int64_t *dst = memstub_trace_extra_row(s, s->n - 1);
    for (size_t m = 0; rc >= 0 && m < nmap; m++) dst[m] = src[map[m]];
    if (rc >= 0 && cshare >= 0) dst[cshare] = share[rows[k]];
    if (rc >= 0 && cmap >= 0) dst[cmap] = mshare[rows[k]];
  }
  return MS__HAND_OUT(rc, s, out, memstub_trace_free);
}

// Index among rows[0..n) of the last row at time tm (-1 none).
static int64_t last_at(const memstub_trace *t, const size_t *rows, size_t n, int64_t tm) {
  int64_t k = -1;
  for (size_t i = 0; i < n && t->pts[rows[i]].time_ns <= tm; i++)
    if (t->pts[rows[i]].time_ns == tm) k = (int64_t)i;
  return k;
}

// Index among rows[0..n) of the last row at or before time tm (-1 none).
static int64_t last_upto(const memstub_trace *t, const size_t *rows, size_t n, int64_t tm) {
  int64_t k = -1;
  for (size_t i = 0; i < n && t->pts[rows[i]].time_ns <= tm; i++) k = (int64_t)i;
  return k;
}

// Index among rows[0..n) of trace row r (-1 none).
static int64_t index_of(const size_t *rows, size_t n, size_t r) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (rows[mid] < r) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && rows[lo] == r ? (int64_t)lo : -1;
}

/* The point after which row k of a stub is complete: its last point, or the
 * previous row's (-1: before the first point, the entry). lp[0..norig). */
static int64_t *last_points(const struct memstub_stub *s) {
  int64_t *lp = malloc((size_t)s->norig * sizeof *lp);
  if (!lp) return NULL;
  for (int64_t k = 0; k < s->norig; k++) lp[k] = -1;
  for (int64_t p = 0; p < s->numdata; p++)
    if (s->point[p] >= 0 && s->point[p] < s->norig) lp[s->point[p]] = p;
  for (int64_t k = 1; k < s->norig; k++)
    if (lp[k] < 0) lp[k] = lp[k - 1];
  return lp;
}

/* At a coarse resolution the owner's own rows can show a cross-thread free
 * before the freeing thread's row does: that row is the freeing thread's
 * bucket's end, the free happened inside the bucket, and the owner's rows
 * in between already leave the block out. Such a free is taken to happen at
 * the owner's first row that leaves it out: while a row of thread a has less
 * heap than its blocks others free later (held[k], prefix sums), the handoff
 * alive there with the latest free ends at that row instead, freed by its
 * thread after that thread's last row up to then. What cannot be settled so
 * is left for the caller's check. */
static void settle_early_frees(const memstub_trace *t, memstub_gen_threads *g, int64_t a,
                               int64_t *held) {
  for (size_t k = 0; k < g->nstub[a]; k++) {
    int64_t tk = t->pts[g->rows[a][k]].time_ns;
    while (t->pts[g->rows[a][k]].heap_bytes < held[k]) {
      memstub_handoff *h = NULL;
      for (int64_t i = 0; i < g->nhandoffs; i++) {
        memstub_handoff *x = &g->handoffs[i];
        int64_t drop = x->drop_row == INT64_MAX ? (int64_t)g->nrows[a] : x->drop_row;
        if (x->from == a && x->alloc_row < (int64_t)k && drop > (int64_t)k &&
            (!h || drop > (h->drop_row == INT64_MAX ? (int64_t)g->nrows[a] : h->drop_row)))
          h = x;
      }
      int64_t kb = h ? last_upto(t, g->rows[h->to], g->nstub[h->to], tk) : -1;
      if (kb < 0) return;  // nothing to move, or its thread has no row yet
      int64_t drop = h->drop_row == INT64_MAX ? (int64_t)g->nrows[a] : h->drop_row;
      for (int64_t j = (int64_t)k; j < drop; j++) held[j] -= h->bytes;
      h->drop_row = (int64_t)k;
      h->free_point = kb;
    }
  }
}

/* A created thread's start on its creator's timeline, not on the recorded
 * one: the creator's start, plus its stub's time up to point p (the end of
 * its row kc, the last before the creation at tm), plus what the recording
 * had from that row to the creation. The stubs' times are the recorded ones
 * with the recorder's cost taken out (traces/timeline.c), so a thread started
 * at its recorded offset began late on a creator whose timeline shrank (node:
 * main 246 -> 142 ms, its workers still at 148 ms; the main thread then
 * waited for their blocks). Equal to the recorded offset when nothing was
 * taken out. pre: peer < the created thread (its start is set), p >= 0. */
static int64_t start_on_creator(const memstub_gen_threads *g, const memstub_trace *t,
                                int64_t peer, int64_t kc, int64_t p, int64_t tm) {
  const struct memstub_stub *s = g->stubs[peer];
  int64_t at = g->threads[peer].start_ns;
  for (int64_t k = 0; k <= p && k < s->numdata; k++) at += s->use[k].time;
  int64_t gap = tm - t->pts[g->rows[peer][kc]].time_ns;
  return at + (gap > 0 ? gap : 0);
}

static void free_tmp(int64_t **held, int64_t **lp, int64_t nt) {
  for (int64_t th = 0; th < nt; th++) {
    if (held) free(held[th]);
    if (lp) free(lp[th]);
  }
  free(held);
  free(lp);
}

int memstub_gen_threads_build(const memstub_trace *t, const memstub_gen_options *o,
                              memstub_gen_threads **out, memstub_error *err) {
  *out = NULL;
  int rc = memstub_trace_validate(t, err);
  if (rc < 0) return rc;
  memstub_trace_threadcols c;
  memstub_trace_threadcols_find(t, &c);
  int64_t nt = memstub_trace_thread_count(t);
  memstub_gen_threads *g = calloc(1, sizeof *g);
  int64_t **held = NULL, **lp = NULL, *share = NULL, *mshare = NULL;
  int no_rss = 1, no_mapped = 1;
  if (!g) return memstub_error_set(err, -ENOMEM, "out of memory");
  g->nthreads = nt;
  g->gen = calloc((size_t)nt, sizeof *g->gen);
  g->stubs = calloc((size_t)nt, sizeof *g->stubs);
  g->threads = calloc((size_t)nt, sizeof *g->threads);
  g->rows = calloc((size_t)nt, sizeof *g->rows);
  g->nrows = calloc((size_t)nt, sizeof *g->nrows);
  g->nstub = calloc((size_t)nt, sizeof *g->nstub);
  held = calloc((size_t)nt, sizeof *held);
  lp = calloc((size_t)nt, sizeof *lp);
  if (!g->gen || !g->stubs || !g->threads || !g->rows || !g->nrows || !g->nstub || !held ||
      !lp)
    goto nomem;
  share = shares(t, &c, nt, "rss_bytes", &no_rss);  // each thread's part of the process's rss
  if (!share && !no_rss) goto nomem;
  /* And of its own mappings, with resident data only: a stub with mapped
   * but no resident data writes all it maps. */
  if (share && !(mshare = shares(t, &c, nt, "mapped_bytes", &no_mapped)) && !no_mapped)
    goto nomem;
  for (int64_t th = 0; th < nt; th++) {
    if (memstub_trace_thread_rows(t, th, &g->rows[th], &g->nrows[th]) < 0) goto nomem;
    if (!(held[th] = calloc(g->nrows[th] + 1, sizeof **held))) goto nomem;
    // Its stub ends at its exit row: later rows only lower its heap (freed by others).
    g->nstub[th] = g->nrows[th];
    for (size_t k = 0; c.event >= 0 && k < g->nrows[th]; k++)
      if (memstub_trace_extra_row(t, g->rows[th][k])[c.event] == MEMSTUB_THREAD_EVENT_EXIT) {
        g->nstub[th] = k + 1;
        break;
      }
  }
  // The handoffs: one per row with xfree_from.
  size_t nh = 0;
  for (size_t r = 0; c.xfree_from >= 0 && r < t->n; r++)
    if (memstub_trace_extra_row(t, r)[c.xfree_from] != MEMSTUB_TRACE_EMPTY) nh++;
  if (nh && !(g->handoffs = calloc(nh, sizeof *g->handoffs))) goto nomem;
  for (size_t r = 0; c.xfree_from >= 0 && r < t->n; r++) {
    const int64_t *ex = memstub_trace_extra_row(t, r);
    if (ex[c.xfree_from] == MEMSTUB_TRACE_EMPTY) continue;
    int64_t a = ex[c.xfree_from], b = ex[c.thread];
    int64_t ka = last_at(t, g->rows[a], g->nstub[a], ex[c.xfree_alloc_ns]);
    if (ka < 0) {
      rc = memstub_error_set(err, -EINVAL,
                             "row %zu: xfree_alloc_ns %lld is not a row of thread %lld before its "
                             "exit", r + 1, (long long)ex[c.xfree_alloc_ns], (long long)a);
      goto fail;
    }
    int64_t kb = index_of(g->rows[b], g->nrows[b], r);
    // The first row of a at or after the free (after the allocation) no longer counts it.
    int64_t kl = ka + 1;
    while ((size_t)kl < g->nrows[a] && t->pts[g->rows[a][kl]].time_ns < t->pts[r].time_ns) kl++;
    memstub_handoff *h = &g->handoffs[g->nhandoffs++];
    *h = (memstub_handoff){.bytes = ex[c.xfree_bytes], .from = a, .alloc_row = ka, .to = b,
                           .free_point = kb, .drop_row = kl};
    held[a][ka] += h->bytes;  // a difference array: counted on rows [ka, kl)
    held[a][kl] -= h->bytes;
    if ((size_t)kl >= g->nrows[a]) h->drop_row = INT64_MAX;
  }
  for (int64_t th = 0; th < nt; th++) {
    for (size_t k = 1; k < g->nrows[th]; k++) held[th][k] += held[th][k - 1];
    settle_early_frees(t, g, th, held[th]);
    if (g->nstub[th] < 2) {
      rc = memstub_error_set(err, -EINVAL,
                             "thread %lld has %zu row%s up to its exit: a thread's stub needs at "
                             "least two (its start and a change)",
                             (long long)th, g->nstub[th], g->nstub[th] == 1 ? "" : "s");
      goto fail;
    }
    for (size_t k = 0; k < g->nstub[th]; k++)
      if (t->pts[g->rows[th][k]].heap_bytes < held[th][k]) {
        rc = memstub_error_set(err, -EINVAL,
                               "row %zu: heap_bytes %lld of thread %lld is below the %lld bytes "
                               "of its blocks that another thread frees later",
                               g->rows[th][k] + 1, (long long)t->pts[g->rows[th][k]].heap_bytes,
                               (long long)th, (long long)held[th][k]);
        goto fail;
      }
    memstub_trace *sub;
    if (sub_trace(t, g->rows[th], g->nstub[th], held[th], share, mshare, &sub) < 0) goto nomem;
    rc = memstub_gen_build(sub, o, &g->gen[th], err);
    memstub_trace_free(sub);
    if (rc < 0) {
      char msg[MEMSTUB_ERRMSG_MAX];
      snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
      rc = memstub_error_set(err, rc, "thread %lld: %s", (long long)th, msg);
      goto fail;
    }
    g->stubs[th] = &g->gen[th]->stub;
    if (!(lp[th] = last_points(g->stubs[th]))) goto nomem;
  }
  // The thread table: start, creator and the creator's point, joiner and its point.
  for (int64_t th = 0; th < nt; th++) {
    memstub_thread_spec *sp = &g->threads[th];
    size_t r0 = g->rows[th][0];
    sp->start_ns = g->stubs[th]->time0_ns - g->stubs[0]->time0_ns;
    sp->creator = -1;
    sp->create_point = -1;
    sp->joiner = -1;
    sp->join_point = -1;
    int64_t peer = c.peer >= 0 ? memstub_trace_extra_row(t, r0)[c.peer] : -1;
    if (th > 0 && peer >= 0 && peer < nt && peer != th) {
      int64_t kc = last_upto(t, g->rows[peer], g->nstub[peer], t->pts[r0].time_ns);
      sp->creator = peer;
      sp->create_point = kc >= 0 ? lp[peer][kc] : -1;
      if (kc >= 0 && peer < th)
        sp->start_ns = start_on_creator(g, t, peer, kc, sp->create_point, t->pts[r0].time_ns);
    }
    if (sp->start_ns < 0) sp->start_ns = 0;
  }
  for (size_t r = 0; c.event >= 0 && r < t->n; r++) {
    const int64_t *ex = memstub_trace_extra_row(t, r);
    if (ex[c.event] != MEMSTUB_THREAD_EVENT_JOIN) continue;
    int64_t j = ex[c.thread], x = ex[c.peer];
    int64_t kj = index_of(g->rows[j], g->nrows[j], r);
    g->threads[x].joiner = j;
    g->threads[x].join_point = lp[j][kj];
  }
  for (int64_t i = 0; i < g->nhandoffs; i++) {
    memstub_handoff *h = &g->handoffs[i];
    h->alloc_point = h->alloc_row >= 0 ? lp[h->from][h->alloc_row] : -1;
    h->free_point = lp[h->to][h->free_point];
  }
  g->stub = (memstub_threads_stub){.nthreads = nt, .stubs = g->stubs, .threads = g->threads,
                                   .nhandoffs = g->nhandoffs, .handoffs = g->handoffs};
  rc = 0;
  goto done;
nomem:
  rc = memstub_error_set(err, -ENOMEM, "out of memory");
fail:
  memstub_gen_threads_free(g);
  g = NULL;
done:
  free_tmp(held, lp, nt);
  free(share);
  free(mshare);
  *out = g;
  return rc;
}
