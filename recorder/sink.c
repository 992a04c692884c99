/* recorder/sink.c: the rows each thread keeps (chunks from mmap or the
 * journal, coalesced into buckets), and the trace made of them at exit:
 * merged by time, coalesced across threads, and handed to write.c. */
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


// A row with the thread's CPU time and run-queue wait as given (-1 unknown).
static void push(tstate *ts, int64_t t, int64_t s, int64_t h, int64_t tag, memv m, int64_t cpu,
                 int64_t rq, int calls) {
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
  w->rq = rq;
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

void ms__rec_push_row(tstate *ts, int64_t t, int64_t s, int64_t h, int64_t tag, memv m,
                      int64_t cpu, int calls) {
  push(ts, t, s, h, tag, m, cpu, cpu >= 0 ? ts->rq_v : -1, calls);
}

int64_t ms__rec_cpu_at(tstate *ts, int64_t t, int force) {
  if (!ts->is_rec) return -1;
  double rpn = ms__rec.raw_per_ns > 0 ? ms__rec.raw_per_ns : 1.0;
  if (force || t - ts->cpu_t >= ms__rec.cpu_gap_raw || ts->cpu_v < 0) {
    int64_t v = ms__prim_thread_cpu_ns();
    if (v >= 0) {
      // Off the CPU long enough since the last read: how much of it was
      // waiting for one (docs/recording.md, "Waiting for a CPU").
      if (ms__rec.rq_gap_raw > 0 && ts->cpu_v >= 0 &&
          (double)(t - ts->cpu_t) - (double)(v - ts->cpu_v) * rpn >= (double)ms__rec.rq_gap_raw) {
        int64_t q = ms__prim_thread_run_delay();
        if (q > ts->rq_v) ts->rq_v = q;
      }
      ts->cpu_t = t;
      ts->cpu_v = v;
    }
    return v;
  }
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
  // Both rows carry the run-queue wait read when the bucket opened: the
  // one read now, at the next bucket's open, is the next interval's.
  push(ts, b->t0, b->maxs, b->maxh, b->tag, b->maxm, b->cpu0, b->rq0, !two);
  if (two) {
    int64_t cpu = -1;
    if (b->cpu0 >= 0) {
      double rpn = ms__rec.raw_per_ns > 0 ? ms__rec.raw_per_ns : 1.0;
      cpu = b->cpu0 + (int64_t)((double)(b->lt - b->t0) / rpn);
      if (cpu_now >= b->cpu0 && cpu > cpu_now) cpu = cpu_now;
    }
    push(ts, b->lt, b->ls, b->lh, b->tag, b->lm, cpu, b->rq0, 1);
  }
  ts->h.b.active = 0;
  if (ts->nx) ms__rec_thr_xemit(ts);  // --thread all: its cross-thread frees
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
  ts->h.b.rq0 = cpu >= 0 ? ts->rq_v : -1;
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
  int64_t last_rq = 0, rq_base = -1, prev_rq = 0;  // the run-queue wait, as the CPU time
  memv last_m = {0, 0, 0, 0, -1}, base = {0, 0, 0, 0, -1};
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
    if (x.w.rq < 0) x.w.rq = last_rq;
    last_rq = x.w.rq;
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
    if (rq_base < 0) rq_base = x.w.rq;
    x.w.rq -= rq_base;
    if (x.w.rq < prev_rq) x.w.rq = prev_rq;
    prev_rq = x.w.rq;
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
    tmp[out++] = (xrow){0, 0, last_heap < 0 ? 0 : last_heap, 0, {0, 0, 0, 0, -1}, {.cpu = 0}};
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
      tmp[out].w.rq = prev_rq;
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


// how: 0 exit, 1 _exit, 2 fatal signal.
void ms__rec_finish(int how, int sig) {
  if (ms__rec.state != ST_READY || getpid() != ms__rec.pid) return;
  if (__atomic_exchange_n(&ms__rec.finished, 1, __ATOMIC_ACQ_REL)) return;
  if (ms__rec.times_only) {  // a reference run: its region times, no trace
    ms__rec_times_write();
    return;
  }
  tstate *me = ms__rec_ts;
  if (me) me->guard = 1;
  __atomic_store_n(&ms__rec_on, 0, __ATOMIC_SEQ_CST);
  ms__rec_sampler_stop();
  ms__rec_watch_stop();
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
    ms__rec_calls_abort();
    ms__rec_status(how, sig, 0, rc == -ENODATA ? 0 : -rc, why ? why : MS__REC_NOTHING_ROWS);
    return;
  }
  ms__rec_build_meta(&A);
  rc = ms__rec_commit(&A, how);
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
