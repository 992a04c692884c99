/* recorder/sink.c: the rows each thread keeps (chunks from mmap, coalesced
 * into buckets), and the trace made of them at exit: merged by time,
 * coalesced across threads, written through memstub_trace_write, or by a
 * signal-safe writer on a fatal signal. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memstub/trace.h"  // before internal.h: its inline functions name a parameter row
#include "internal.h"
#include "table.h"

/* ---- the journal: chunks as pages of a file, so that a SIGKILL leaves them
 * for `memstub record` to salvage (protocol.h) ---- */

void ms__rec_journal_init(void) {
  if (!ms__rec.journal[0]) return;
  // A new file, not the old one truncated: after an exec, a child the old
  // image forked may still map the old one's pages.
  unlink(ms__rec.journal);
  int fd = open(ms__rec.journal, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  void *p = MAP_FAILED;
  if (fd >= 0) {
    if (fallocate(fd, 0, 0, MS__REC_JOURNAL_HEAD) == 0)
      p = mmap(NULL, MS__REC_JOURNAL_HEAD, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
  }
  if (p == MAP_FAILED) {
    ms__rec.journal_off = 1;
    return;
  }
  ms__rec_journal_head *h = p;
  h->use_tsc = ms__rec.use_tsc;
  h->raw_per_ns = ms__rec.raw_per_ns;
  h->origin_raw = ms__rec.origin_raw;
  h->res_ns = ms__rec.res_ns;
  h->occurrence = ms__rec.occurrence;
  __atomic_store_n(&h->magic, MS__REC_JOURNAL_MAGIC, __ATOMIC_RELEASE);
  ms__rec.jhead = h;
}

// A journal entry of n bytes, page-rounded (internal.h); NULL: anonymous memory then.
void *ms__rec_journal_slot(size_t n) {
  if (!ms__rec.jhead || __atomic_load_n(&ms__rec.journal_off, __ATOMIC_RELAXED)) return NULL;
  uint64_t bytes = (n + 4095) & ~(uint64_t)4095;
  uint64_t at = __atomic_fetch_add(&ms__rec.journal_bytes, bytes, __ATOMIC_RELAXED);
  if (at + bytes > MS__REC_JOURNAL_MAX) {
    __atomic_store_n(&ms__rec.journal_off, 1, __ATOMIC_RELAXED);
    return NULL;
  }
  off_t off = (off_t)(MS__REC_JOURNAL_HEAD + at);
  // Opened by path each time: a daemon may have closed every descriptor.
  int fd = open(ms__rec.journal, O_RDWR | O_CLOEXEC);
  void *p = MAP_FAILED;
  if (fd >= 0) {
    // Blocks reserved (a store to a page the disk has no room for would be
    // SIGBUS); fallocate never shrinks the file under a thread that is ahead.
    if (fallocate(fd, 0, off, (off_t)bytes) == 0)
      p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
    close(fd);
  }
  if (p == MAP_FAILED) {
    __atomic_store_n(&ms__rec.journal_off, 1, __ATOMIC_RELAXED);
    return NULL;
  }
  ((uint64_t *)p)[2] = bytes;  // the entry's size (protocol.h)
  return p;
}

void ms__rec_push_row(tstate *ts, int64_t t, int64_t s, int64_t h, int64_t tag, memv m,
                      int64_t cpu, int calls) {
  chunk *c = ts->tail;
  if (UNLIKELY(!c || c->n == CHUNK_ROWS)) {
    int e = errno;
    chunk *nc = ms__rec_journal_slot(sizeof(chunk));
    if (nc) {
      nc->thread_no = ts->h.thread_no;
      nc->magic = MS__REC_JOURNAL_MAGIC;
    } else {
      nc = ms__rec_map(sizeof(chunk));
    }
    errno = e;
    if (!nc) {
      ts->rows_dropped++;
      __atomic_fetch_add(&ms__rec.chunk_fail, 1, __ATOMIC_RELAXED);
      return;
    }
    if (c)
      c->next = nc;
    else
      ts->head = nc;
    ts->tail = c = nc;
  }
  c->rows[c->n] = (row){t, s, h, tag};
  c->mem[c->n] = m;
  workv *w = &c->work[c->n];
  w->cpu = cpu;
  if (calls) {
    memcpy(w->n, ts->wn, sizeof w->n);
    w->bytes = ts->wbytes;
    memset(ts->wn, 0, sizeof ts->wn);
    ts->wbytes = 0;
  } else {
    memset(w->n, 0, sizeof w->n);
    w->bytes = 0;
  }
  __atomic_store_n(&c->n, c->n + 1, __ATOMIC_RELEASE);
  ts->nrows++;
}

int64_t ms__rec_cpu_at(tstate *ts, int64_t t, int force) {
  if (!ts->is_rec) return -1;
  if (force || t - ts->cpu_t >= ms__rec.cpu_gap_raw || ts->cpu_v < 0) {
    int64_t v = ms__prim_thread_cpu_ns();
    if (v >= 0) {
      ts->cpu_t = t;
      ts->cpu_v = v;
    }
    return v;
  }
  double rpn = ms__rec.raw_per_ns > 0 ? ms__rec.raw_per_ns : 1.0;
  return ts->cpu_v + (int64_t)((double)(t - ts->cpu_t) / rpn);
}

/* ---- coalescing -----------------------------------------------------------------
 * A bucket of `resolution` ns becomes at most two rows: its maxima at its
 * first time, then its last state when that differs. Peaks survive; rows
 * marked ROW_EXACT (first state, region begin and end, the end) are
 * boundaries the buckets never cross, so those states survive too. */

/* Close the bucket; cpu_now is the recorded thread's CPU time now (-1 when
 * not known). The last state's CPU time is estimated: the bucket's first
 * reading plus the time since, as if the thread ran, at most cpu_now. The
 * bucket's calls go to its last row. */
static void flush(tstate *ts, int64_t cpu_now) {
  if (!ts->h.b.active) return;
  ms__rec_bucket *b = &ts->h.b;
  int two = b->ls != b->maxs || b->lh != b->maxh || b->lm.rss != b->maxm.rss ||
            b->lm.mapped != b->maxm.mapped;
  ms__rec_push_row(ts, b->t0, b->maxs, b->maxh, b->tag, b->maxm, b->cpu0, !two);
  if (two) {
    int64_t cpu = -1;
    if (b->cpu0 >= 0) {
      double rpn = ms__rec.raw_per_ns > 0 ? ms__rec.raw_per_ns : 1.0;
      cpu = b->cpu0 + (int64_t)((double)(b->lt - b->t0) / rpn);
      if (cpu_now >= b->cpu0 && cpu > cpu_now) cpu = cpu_now;
    }
    ms__rec_push_row(ts, b->lt, b->ls, b->lh, b->tag, b->lm, cpu, 1);
  }
  ts->h.b.active = 0;
  if (ts->nx) ms__rec_thr_xemit(ts, b->lt);  // --thread all: its cross-thread frees
}

void ms__rec_flush_bucket(tstate *ts) { flush(ts, -1); }

void ms__rec_new_bucket(tstate *ts, int64_t t, int64_t s, int64_t h, int64_t tag, memv m) {
  int64_t cpu = ms__rec_cpu_at(ts, t, 0);
  flush(ts, cpu);
  ts->h.b.active = 1;
  ts->h.b.t0 = ts->h.b.lt = t;
  ts->h.b.end = t + ms__rec.res_raw;
  ts->h.b.maxs = ts->h.b.ls = s;
  ts->h.b.maxh = ts->h.b.lh = h;
  ts->h.b.maxm = ts->h.b.lm = m;
  ts->h.b.tag = tag;
  ts->h.b.cpu0 = cpu;
  // At -r 0 too the bucket stays open until the next one opens (its end is
  // its start), so the call that made it is counted into it (wcount).
}

// Merge two time-ordered runs a[0..na) b[0..nb) into out.
static void merge2(const xrow *a, size_t na, const xrow *b, size_t nb, xrow *out) {
  size_t i = 0, j = 0, k = 0;
  while (i < na && j < nb) out[k++] = b[j].t < a[i].t ? b[j++] : a[i++];
  while (i < na) out[k++] = a[i++];
  while (j < nb) out[k++] = b[j++];
}

// Every thread's rows into buf, one time-ordered run per thread (clamped to
// be so); runs[] gets each run's start and runs[nruns] the end. The number of rows.
static size_t gather_runs(xrow *buf, size_t total, size_t *runs) {
  size_t k = 0, r = 0;
  for (tstate *ts = __atomic_load_n(&ms__rec.list, __ATOMIC_ACQUIRE); ts; ts = ts->next) {
    runs[r++] = k;
    int64_t last = INT64_MIN;
    for (chunk *c = ts->head; c; c = c->next) {
      size_t n = __atomic_load_n(&c->n, __ATOMIC_ACQUIRE);
      for (size_t i = 0; i < n && k < total; i++) {
        const row *rw = &c->rows[i];
        buf[k] = (xrow){rw->t, rw->stack, rw->heap, rw->tag, c->mem[i], c->work[i]};
        if (buf[k].t < last) buf[k].t = last;
        last = buf[k++].t;
      }
    }
  }
  runs[r] = k;
  return k;
}

// Pairwise merging of runs until one is left; returns the buffer holding it.
static xrow *merge_runs(xrow *buf, xrow *tmp, size_t *runs, size_t nruns) {
  while (nruns > 1) {
    size_t out = 0, nr = 0;
    for (size_t i = 0; i < nruns; i += 2) {
      size_t a0 = runs[i], a1 = runs[i + 1];
      if (i + 1 < nruns) {
        size_t b1 = runs[i + 2];
        merge2(buf + a0, a1 - a0, buf + a1, b1 - a1, tmp + a0);
        runs[nr++] = a0;
        out = b1;
      } else {
        memcpy(tmp + a0, buf + a0, (a1 - a0) * sizeof(xrow));
        runs[nr++] = a0;
        out = a1;
      }
    }
    runs[nr] = out;
    nruns = nr;
    xrow *sw = buf;
    buf = tmp;
    tmp = sw;
  }
  return buf;
}

// The last state of a bucket differs from its maxima row.
static int differs(const xrow *a, const xrow *b) {
  return a->stack != b->stack || a->heap != b->heap || a->m.rss != b->m.rss ||
         a->m.mapped != b->m.mapped;
}

// acc's calls added to w's.
static void work_add(workv *w, const workv *acc) {
  for (int k = 0; k < MS__REC_WORK_CALLS; k++) w->n[k] += acc->n[k];
  w->bytes += acc->bytes;
}

static void work_zero(workv *w) {
  memset(w->n, 0, sizeof w->n);
  w->bytes = 0;
}

/* A coalesced bucket into out: its maxima row, then its last state when
 * that differs; the calls of the bucket (acc) go to the last row written. */
static size_t emit_bucket(xrow *out, size_t n, xrow *mx, xrow *cur, workv *acc) {
  int two = differs(cur, mx);
  work_zero(&mx->w);
  work_zero(&cur->w);
  work_add(two ? &cur->w : &mx->w, acc);
  out[n++] = *mx;
  if (two) out[n++] = *cur;
  work_zero(acc);
  return n;
}

/* What the trace covers, from the merged rows buf[0..total) into out: probe
 * regions of the recorded thread when there were any (one occurrence or
 * all), else from the recorded thread's start; times in ns (raw * scale from
 * the origin), coalesced again across threads. Resident memory, faults and
 * CPU time become relative to the first row covered (the component's start:
 * the recorded thread's first state or the first region's begin); rows of
 * other threads carry the recorded thread's last fault counts and CPU time,
 * as its stack. Calls of rows not covered are dropped; a coalesced bucket's
 * calls go to its last row. */
static void cover(assembled *A, const xrow *buf, size_t total, xrow *tmp, double scale,
                  int64_t raw_end) {
  int64_t max_tag = 0;
  for (size_t i = 0; i < total; i++)
    if ((buf[i].tag & ~ROW_EXACT) > max_tag) max_tag = buf[i].tag & ~ROW_EXACT;
  A->regions = max_tag > 0;
  int64_t origin = -1, last_stack = 0, last_heap = 0, last_cpu = 0, cpu_base = -1, prev_cpu = 0;
  memv last_m = {0, 0, 0, 0}, base = {0, 0, 0, 0};
  int have_base = 0;
  if (!A->regions) origin = ms__rec.origin_raw;
  A->origin_raw = origin;
  A->scale = scale;
  size_t out = 0;
  int64_t bucket_end = INT64_MIN, prev_t = 0;
  int have = 0;
  xrow cur = {0}, mx = {0};
  workv acc;
  memset(&acc, 0, sizeof acc);
  for (size_t i = 0; i < total; i++) {
    xrow x = buf[i];
    int exact = (x.tag & ROW_EXACT) != 0;
    x.tag &= ~ROW_EXACT;
    if (x.m.rss < 0) x.m.rss = last_m.rss;
    if (x.m.minflt < 0) x.m.minflt = last_m.minflt;
    if (x.m.majflt < 0) x.m.majflt = last_m.majflt;
    last_m = x.m;
    if (x.w.cpu < 0) x.w.cpu = last_cpu;
    last_cpu = x.w.cpu;
    if (A->regions) {
      if (x.tag == 0 || (ms__rec.occurrence > 0 && x.tag != ms__rec.occurrence)) {
        if (x.stack >= 0 && origin < 0) last_stack = 0;
        last_heap = x.heap;
        continue;
      }
      if (origin < 0) origin = A->origin_raw = x.t;
    } else if (x.t < origin) {
      last_heap = x.heap;
      if (x.stack >= 0) last_stack = x.stack;
      continue;
    }
    if (!have_base) {
      base = x.m;
      have_base = 1;
    }
    x.m.rss -= base.rss;
    if (x.m.rss < 0) x.m.rss = 0;  // below the start: nothing of the component's
    x.m.minflt -= base.minflt;
    x.m.majflt -= base.majflt;
    if (x.m.minflt < 0) x.m.minflt = 0;
    if (x.m.majflt < 0) x.m.majflt = 0;
    if (x.m.mapped < 0) x.m.mapped = 0;
    // CPU time from the component's start, never decreasing (an estimate
    // between clock reads may run ahead of the next reading).
    if (cpu_base < 0) cpu_base = x.w.cpu;
    x.w.cpu -= cpu_base;
    if (x.w.cpu < prev_cpu) x.w.cpu = prev_cpu;
    prev_cpu = x.w.cpu;
    if (x.stack >= 0)
      last_stack = x.stack;
    else
      x.stack = last_stack;
    last_heap = x.heap;
    int64_t t = (int64_t)((double)(x.t - origin) * scale);
    if (t < prev_t) t = prev_t;
    prev_t = t;
    x.t = t;
    if (x.heap < 0) x.heap = 0;
    if (x.stack > A->peak_stack) A->peak_stack = x.stack;
    if (x.heap > A->peak_heap) A->peak_heap = x.heap;
    if (x.m.rss > A->peak_rss) A->peak_rss = x.m.rss;
    if (x.m.mapped > A->peak_mapped) A->peak_mapped = x.m.mapped;
    if (exact) {
      // A boundary: the bucket before it ends, the row stays as it is, and
      // the next row starts a new bucket.
      if (have) out = emit_bucket(tmp, out, &mx, &cur, &acc);
      have = 0;
      tmp[out++] = cur = x;
      continue;
    }
    work_add(&acc, &x.w);
    if (have && t < bucket_end && x.tag == mx.tag) {
      if (x.stack > mx.stack) mx.stack = x.stack;
      if (x.heap > mx.heap) mx.heap = x.heap;
      if (x.m.rss > mx.m.rss) mx.m.rss = x.m.rss;
      if (x.m.mapped > mx.m.mapped) mx.m.mapped = x.m.mapped;
      mx.m.minflt = x.m.minflt;  // counts only grow: the maxima row has the last
      mx.m.majflt = x.m.majflt;
      cur = x;
      continue;
    }
    if (have) {
      workv mine = x.w;  // this row opens the next bucket: its calls are not the last one's
      for (int k = 0; k < MS__REC_WORK_CALLS; k++) acc.n[k] -= mine.n[k];
      acc.bytes -= mine.bytes;
      out = emit_bucket(tmp, out, &mx, &cur, &acc);
      acc = mine;
    }
    have = 1;
    mx = cur = x;
    bucket_end = t + (ms__rec.res_ns > 0 ? ms__rec.res_ns : 1);
    if (ms__rec.res_ns == 0) bucket_end = t;  // every event
  }
  if (have) out = emit_bucket(tmp, out, &mx, &cur, &acc);
  if (out == 0) {
    tmp[out++] = (xrow){0, 0, last_heap < 0 ? 0 : last_heap, 0, {0, 0, 0, 0}, {0, 0, {0}}};
    tmp[0].m.mapped = last_m.mapped < 0 ? 0 : last_m.mapped;
    cur = tmp[0];
  }
  // Calls made after every thread's last row (the thread's counters at the
  // end), and the recorded thread's CPU time at the end when known.
  workv left;
  memset(&left, 0, sizeof left);
  if (!A->regions)
    for (tstate *ts = ms__rec.list; ts; ts = ts->next) {
      for (int k = 0; k < MS__REC_WORK_CALLS; k++) left.n[k] += ts->wn[k];
      left.bytes += ts->wbytes;
    }
  int64_t end_cpu = prev_cpu;
  if (!A->regions && !ms__rec.rec_gone && ms__rec.end_cpu >= 0 && cpu_base >= 0 &&
      ms__rec.end_cpu - cpu_base > end_cpu)
    end_cpu = ms__rec.end_cpu - cpu_base;
  // The component's end, so that a last idle stretch keeps its length: now,
  // unless probe regions delimit it or the recorded thread ended before.
  if (!A->regions && !ms__rec.rec_gone) {
    int64_t t_end = (int64_t)((double)(raw_end - origin) * scale);
    if (t_end > tmp[out - 1].t) {
      tmp[out] = cur;
      tmp[out].t = t_end;
      work_zero(&tmp[out].w);
      tmp[out++].w.cpu = end_cpu;
    }
  }
  work_add(&tmp[out - 1].w, &left);
  A->rows = tmp;
  A->n = out;
  A->duration = tmp[out - 1].t;
}

// Gather every thread's rows, merge them by time, keep what the trace
// covers and coalesce again across threads. Signal-safe (mmap only).
static int assemble(assembled *A) {
  memset(A, 0, sizeof *A);
  int64_t raw_end = raw_now(), ns_end = ms__prim_now_ns();
  double scale = ms__rec.use_tsc && raw_end > ms__rec.raw0
                     ? (double)(ns_end - ms__rec.ns0) / (double)(raw_end - ms__rec.raw0)
                     : 1.0;
  if (ms__rec.use_tsc && raw_end > ms__rec.raw0) ms__rec.raw_per_ns = 1.0 / scale;
  size_t total = 0, nruns = 0;
  for (tstate *ts = __atomic_load_n(&ms__rec.list, __ATOMIC_ACQUIRE); ts; ts = ts->next) {
    for (chunk *c = ts->head; c; c = c->next) total += __atomic_load_n(&c->n, __ATOMIC_ACQUIRE);
    nruns++;
  }
  if (ms__rec.all) return ms__rec_thr_assemble(A, raw_end, scale);
  A->raw_rows = total;
  if (total == 0) return -ENODATA;
  // One row more than gathered: the end row (cover()).
  xrow *buf = ms__rec_map((total + 1) * sizeof(xrow)),
       *tmp = ms__rec_map((total + 1) * sizeof(xrow));
  size_t *runs = ms__rec_map((nruns + 1) * sizeof(size_t));
  if (!buf || !tmp || !runs) return -ENOMEM;
  total = gather_runs(buf, total, runs);
  xrow *merged = merge_runs(buf, tmp, runs, nruns);
  cover(A, merged, total, merged == buf ? tmp : buf, scale, raw_end);
  return 0;
}

static const char *const work_cols[MS__REC_WORK_CALLS] = {MEMSTUB_WORK_CALL_COLUMNS};

/* Which call columns the trace gets: those with a call in some row (used[k]);
 * returns how many. churn_bytes is written when there is one. */
static int work_used(const assembled *A, int *used) {
  int n = 0;
  for (int k = 0; k < MS__REC_WORK_CALLS; k++) {
    used[k] = 0;
    for (size_t i = 0; i < A->n && !used[k]; i++) used[k] = A->rows[i].w.n[k] != 0;
    n += used[k];
  }
  return n;
}

static int write_raw(const assembled *A);

/* The trace through memstub_trace_write (normal exit). With --thread all its
 * thread columns have empty fields and words (thread_event), which the
 * trace library does not hold: the writer below writes it (atomically too:
 * a temporary file, fsync, rename). */
static int write_normal(const assembled *A) {
  if (A->tr) return write_raw(A);
  memstub_trace *t = memstub_trace_create();
  if (!t) return -ENOMEM;
  int rc = 0, col = -1, mcol = -1;
  if (A->regions) col = memstub_trace_add_column(t, "region");
  // The memory columns (docs/formats.md), added in this order.
  for (int i = 0; i < 4 && rc >= 0; i++) {
    rc = memstub_trace_add_column(t, ms__rec_mem_cols[i]);
    if (i == 0) mcol = rc;
  }
  // The work columns (docs/formats.md, "Work columns").
  int used[MS__REC_WORK_CALLS], wcol[MS__REC_WORK_CALLS], ccol = -1, bcol = -1;
  int nused = work_used(A, used);
  if (rc >= 0) rc = ccol = memstub_trace_add_column(t, MEMSTUB_WORK_CPU_COLUMN);
  if (rc >= 0 && nused) rc = bcol = memstub_trace_add_column(t, MEMSTUB_WORK_BYTES_COLUMN);
  for (int k = 0; k < MS__REC_WORK_CALLS; k++) {
    wcol[k] = -1;
    if (rc >= 0 && used[k]) rc = wcol[k] = memstub_trace_add_column(t, work_cols[k]);
  }
  if (rc > 0) rc = 0;
  for (int i = 0; i < ms__rec_nmeta && rc == 0; i++)
    rc = memstub_trace_set_meta(t, ms__rec_meta_kv[i].key, ms__rec_meta_kv[i].val);
  if (rc == 0) rc = memstub_trace_reserve(t, A->n);
  for (size_t i = 0; i < A->n && rc == 0; i++) {
    rc = memstub_trace_append(t, A->rows[i].t, A->rows[i].stack, A->rows[i].heap);
    if (rc != 0) break;
    int64_t *e = memstub_trace_extra_row(t, t->n - 1);
    if (col >= 0) e[col] = A->rows[i].tag;
    const memv *m = &A->rows[i].m;
    e[mcol] = m->rss;
    e[mcol + 1] = m->mapped;
    e[mcol + 2] = m->minflt;
    e[mcol + 3] = m->majflt;
    const workv *w = &A->rows[i].w;
    e[ccol] = w->cpu;
    if (bcol >= 0) e[bcol] = (int64_t)w->bytes;
    for (int k = 0; k < MS__REC_WORK_CALLS; k++)
      if (wcol[k] >= 0) e[wcol[k]] = w->n[k];
  }
  memstub_error err;
  if (rc == 0) rc = memstub_trace_write(t, ms__rec.out, &err);
  memstub_trace_free(t);
  return rc;
}

/* The signal-safe writer: write(2) to a temporary file beside the target,
 * fsync, rename. */
static char g_wbuf[1 << 16];
static size_t g_wlen;
static int g_wfd = -1, g_werr;

static void wflush(void) {
  size_t off = 0;
  while (off < g_wlen && !g_werr) {
    ssize_t w = write(g_wfd, g_wbuf + off, g_wlen - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      g_werr = 1;
    else
      off += (size_t)w;
  }
  g_wlen = 0;
}

static void wput(const char *s, size_t n) {
  while (n) {
    size_t k = sizeof g_wbuf - g_wlen < n ? sizeof g_wbuf - g_wlen : n;
    memcpy(g_wbuf + g_wlen, s, k);
    g_wlen += k;
    s += k;
    n -= k;
    if (g_wlen == sizeof g_wbuf) wflush();
  }
}

static void wstr(const char *s) { wput(s, strlen(s)); }

static void wnum(int64_t v) {
  char b[24], *p = b + sizeof b;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do *--p = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0) *--p = '-';
  wput(p, (size_t)(b + sizeof b - p));
}

// The signal-path writer's temporary name beside ms__rec.out: "DIR/.BASE.tmp.sig".
static int raw_tmp_name(char *tmp, size_t cap) {
  const char *slash = strrchr(ms__rec.out, '/');
  size_t dl = slash ? (size_t)(slash - ms__rec.out + 1) : 0;
  const char *base = slash ? slash + 1 : ms__rec.out;
  if (dl + strlen(base) + 40 > cap) return -ENAMETOOLONG;
  memcpy(tmp, ms__rec.out, dl);
  char *p = tmp + dl;
  *p++ = '.';
  memcpy(p, base, strlen(base));
  p += strlen(base);
  memcpy(p, ".tmp.sig", 9);
  return 0;
}

static int write_raw(const assembled *A) {
  static char tmp[PATH_MAX + 64];
  // A device, FIFO or symbolic link is written in place (through the link),
  // never renamed over: only stat and lstat here, both async-signal-safe.
  struct stat st, lst;
  int in_place = stat(ms__rec.out, &st) == 0 &&
                 (!S_ISREG(st.st_mode) || (lstat(ms__rec.out, &lst) == 0 && S_ISLNK(lst.st_mode)));
  if (in_place)
    memcpy(tmp, ms__rec.out, strlen(ms__rec.out) + 1);
  else if (raw_tmp_name(tmp, sizeof tmp) < 0)
    return -ENAMETOOLONG;
  g_wfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (g_wfd < 0) return -errno;
  g_wlen = 0;
  g_werr = 0;
  wstr("# memstub-trace 1\n");
  for (int i = 0; i < ms__rec_nmeta; i++) {
    wstr("# ");
    wstr(ms__rec_meta_kv[i].key);
    wstr(": ");
    wstr(ms__rec_meta_kv[i].val);
    wstr("\n");
  }
  wstr(A->regions ? "time_ns,stack_bytes,heap_bytes,region" : "time_ns,stack_bytes,heap_bytes");
  if (A->tr) wstr(",thread,thread_event,thread_peer,xfree_from,xfree_bytes,xfree_alloc_ns");
  for (int i = 0; i < 4; i++) {
    wput(",", 1);
    wstr(ms__rec_mem_cols[i]);
  }
  int used[MS__REC_WORK_CALLS];
  int nused = work_used(A, used);
  wstr("," MEMSTUB_WORK_CPU_COLUMN);
  if (nused) wstr("," MEMSTUB_WORK_BYTES_COLUMN);
  for (int k = 0; k < MS__REC_WORK_CALLS; k++)
    if (used[k]) {
      wput(",", 1);
      wstr(work_cols[k]);
    }
  wput("\n", 1);
  for (size_t i = 0; i < A->n; i++) {
    wnum(A->rows[i].t);
    wput(",", 1);
    wnum(A->rows[i].stack);
    wput(",", 1);
    wnum(A->rows[i].heap);
    if (A->regions) {
      wput(",", 1);
      wnum(A->rows[i].tag);
    }
    if (A->tr) {
      static const char *const ev[] = {"", "start", "exit", "join"};
      const trow *r = &A->tr[i];
      wput(",", 1);
      wnum(r->thr);
      wput(",", 1);
      wstr(ev[r->ev & 3]);
      wput(",", 1);
      if (r->ev == TEV_START || r->ev == TEV_JOIN) wnum(r->peer);
      wput(",", 1);
      if (r->xfrom >= 0) {
        wnum(r->xfrom);
        wput(",", 1);
        wnum(r->xbytes);
        wput(",", 1);
        wnum(r->xalloc_ns);
      } else {
        wput(",,", 2);
      }
    }
    const memv *m = &A->rows[i].m;
    int64_t v[4] = {m->rss, m->mapped, m->minflt, m->majflt};
    for (int k = 0; k < 4; k++) {
      wput(",", 1);
      wnum(v[k]);
    }
    const workv *w = &A->rows[i].w;
    wput(",", 1);
    wnum(w->cpu);
    if (nused) {
      wput(",", 1);
      wnum((int64_t)w->bytes);
    }
    for (int k = 0; k < MS__REC_WORK_CALLS; k++)
      if (used[k]) {
        wput(",", 1);
        wnum(w->n[k]);
      }
    wput("\n", 1);
  }
  wflush();
  if (!g_werr && fsync(g_wfd) != 0 && errno != EINVAL) g_werr = 1;
  if (close(g_wfd) != 0) g_werr = 1;
  if (in_place) return g_werr ? -EIO : 0;
  if (g_werr || rename(tmp, ms__rec.out) != 0) {
    unlink(tmp);
    return -EIO;
  }
  return 0;
}

// "key=v\n" at b + *n (b holds 1024 bytes).
static void status_line(char *b, size_t *n, const char *key, int64_t v) {
  size_t k = strlen(key);
  if (*n + k + 24 > 1024) return;
  memcpy(b + *n, key, k);
  *n += k;
  b[(*n)++] = '=';
  char d[24], *p = d + sizeof d;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do *--p = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0) *--p = '-';
  memcpy(b + *n, p, (size_t)(d + sizeof d - p));
  *n += (size_t)(d + sizeof d - p);
  b[(*n)++] = '\n';
}

void ms__rec_status(int how, int sig, int written, int err, int why) {
  if (!ms__rec.status[0]) return;
  char b[1024];
  size_t n = 0;
  status_line(b, &n, MS__REC_ST_STARTED, 1);
  if (how < 0 && why) status_line(b, &n, MS__REC_ST_WHY, why);  // decided before the end
  if (how >= 0) {
    status_line(b, &n, MS__REC_ST_FINISHED, how + 1);
    status_line(b, &n, MS__REC_ST_SIGNAL, sig);
    status_line(b, &n, MS__REC_ST_WRITTEN, written);
    status_line(b, &n, MS__REC_ST_ERRNO, err);
    status_line(b, &n, MS__REC_ST_WHY, why);
    status_line(b, &n, MS__REC_ST_OCCURRENCES, ms__rec.rec ? ms__rec.rec->occ : 0);
    status_line(b, &n, MS__REC_ST_THREADS,
                __atomic_load_n(&ms__rec.threads_created, __ATOMIC_RELAXED));
    const char *fp = ms__rec_fn_problem();
    size_t k = fp ? strlen(fp) : 0, kk = strlen(MS__REC_ST_FUNCTION);
    if (fp && n + kk + k + 2 < sizeof b) {  // "function=TEXT\n" (one line: no newline in it)
      memcpy(b + n, MS__REC_ST_FUNCTION, kk);
      b[n + kk] = '=';
      memcpy(b + n + kk + 1, fp, k);
      n += kk + k + 1;
      b[n++] = '\n';
    }
  }
  int e = errno;
  int fd = open(ms__rec.status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    size_t off = 0;
    while (off < n) {
      ssize_t w = write(fd, b + off, n - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += (size_t)w;
    }
    close(fd);
  }
  errno = e;
}

// how: 0 exit, 1 _exit, 2 fatal signal.
void ms__rec_finish(int how, int sig) {
  if (ms__rec.state != ST_READY || getpid() != ms__rec.pid) return;
  if (__atomic_exchange_n(&ms__rec.finished, 1, __ATOMIC_ACQ_REL)) return;
  tstate *me = ms__rec_ts;
  if (me) me->guard = 1;
  __atomic_store_n(&ms__rec_on, 0, __ATOMIC_SEQ_CST);
  ms__rec_sampler_stop();
  ms__rec.finish_how = how;
  ms__rec.finish_sig = sig;
  // Let other threads leave their bookkeeping, then close every bucket.
  for (tstate *ts = ms__rec.list; ts; ts = ts->next) {
    if (ts == me) continue;
    for (int i = 0; i < 2000 && ts->in_hook; i++) sched_yield();
  }
  for (tstate *ts = ms__rec.list; ts; ts = ts->next) ms__rec_flush_bucket(ts);
  // --thread all: a last row for each thread still running.
  if (ms__rec.all) ms__rec_thr_finish(me, raw_now());
  // The recorded thread's CPU time at the end, when it is the one finishing.
  if (me && me == ms__rec.rec) ms__rec.end_cpu = ms__prim_thread_cpu_ns();
  // Nothing to write when what was asked for never happened: the command
  // says so from the status file, and an older trace at the path stays.
  int64_t occ = ms__rec.rec ? ms__rec.rec->occ : 0;
  if (ms__rec.all)  // regions of any thread
    for (tstate *ts = ms__rec.list; ts; ts = ts->next) occ += ts == ms__rec.rec ? 0 : ts->occ;
  int why = MS__REC_NOTHING_NONE;
  if (ms__rec_lost())
    why = MS__REC_NOTHING_MEMORY;
  else if (ms__rec.rec_ordinal > 0 && !ms__rec.rec)
    why = MS__REC_NOTHING_THREAD;
  else if (ms__rec_fn_problem())
    why = MS__REC_NOTHING_FUNCTION;
  else if (ms__rec_fn_requested() && occ == 0)
    why = MS__REC_NOTHING_UNCALLED;
  else if (ms__rec.occurrence > 0 && occ < ms__rec.occurrence)
    why = MS__REC_NOTHING_OCCURRENCE;
  assembled A;
  int rc = why ? 0 : assemble(&A);
  if (why || rc != 0) {
    ms__rec_status(how, sig, 0, rc == -ENODATA ? 0 : -rc, why ? why : MS__REC_NOTHING_ROWS);
    return;
  }
  ms__rec_build_meta(&A);
  if (how != 2) ms__rec_sites_write();  // not signal-safe: none after a fatal signal
  if (how != 2) ms__rec_gen_write(&A);
  if (how == 2)
    rc = write_raw(&A);
  else if ((rc = write_normal(&A)) != 0)
    rc = write_raw(&A);
  ms__rec_status(how, sig, rc == 0, rc < 0 ? -rc : 0, MS__REC_NOTHING_NONE);
}

int ms__rec_lost(void) {
  return __atomic_load_n(&ms__rec_table_failed, __ATOMIC_RELAXED) ||
         __atomic_load_n(&ms__rec_epoch_failed, __ATOMIC_RELAXED) ||
         __atomic_load_n(&ms__rec_gen_failed, __ATOMIC_RELAXED);
}

void ms__rec_fail_memory(void) {
  if (__atomic_exchange_n(&ms__rec_on, 0, __ATOMIC_SEQ_CST))
    ms__rec_status(-1, 0, 0, ENOMEM, MS__REC_NOTHING_MEMORY);
}

void ms__rec_on_fatal(int sig) {
  int e = errno;
  ms__rec_finish(2, sig);
  errno = e;
  raise(sig);  // the disposition is back to the default (SA_RESETHAND)
}
