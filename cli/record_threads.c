// memstub record --thread all: the trace read back through the trace library
// (which checks the thread columns, docs/formats.md "Threads") and summarised
// per thread.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memstub/trace.h"
#include "ms_common.h"
#include "record.h"

#define SHOWN 16  // threads listed; the rest are counted

typedef struct thr_sum {
  int64_t peer, joined_by;
  int64_t t0, t1, peak_heap, peak_stack;
  int64_t gap;  // its longest time between two rows of its own while it ran (see gap_ran)
  int64_t cpu1; // its last row's cpu_ns (-1: no column)
  uint64_t rows, xfrees;
} thr_sum;

// Per-thread figures of a valid threads trace t with nthr threads into s[nthr].
static void summarise(const memstub_trace *t, const memstub_trace_threadcols *c, thr_sum *s,
                      int64_t nthr, uint64_t *xfrees, uint64_t *joins) {
  int ccpu = memstub_trace_column(t, "cpu_ns");
  for (int64_t i = 0; i < nthr; i++) s[i] = (thr_sum){.peer = -1, .joined_by = -1, .t0 = -1};
  for (size_t r = 0; r < t->n; r++) {
    const int64_t *x = memstub_trace_extra_row(t, r);
    const memstub_point *p = &t->pts[r];
    thr_sum *y = &s[x[c->thread]];
    if (x[c->event] == MEMSTUB_THREAD_EVENT_START) y->t0 = p->time_ns, y->peer = x[c->peer];
    if (x[c->event] == MEMSTUB_THREAD_EVENT_JOIN) {
      (*joins)++;
      s[x[c->peer]].joined_by = x[c->thread];
    }
    if (x[c->xfree_from] != MEMSTUB_TRACE_EMPTY) (*xfrees)++, y->xfrees++;
    int64_t cpu = ccpu >= 0 ? x[ccpu] : -1;
    // A gap counts when the thread ran through half of it at least (a
    // thread that waits makes no rows and needs none); unknown CPU: always.
    int ran = cpu < 0 || y->cpu1 < 0 || 2 * (cpu - y->cpu1) >= p->time_ns - y->t1;
    if (y->rows && ran && p->time_ns - y->t1 > y->gap) y->gap = p->time_ns - y->t1;
    y->rows++;
    y->t1 = p->time_ns;
    y->cpu1 = cpu;
    if (p->heap_bytes > y->peak_heap) y->peak_heap = p->heap_bytes;
    if (p->stack_bytes > y->peak_stack) y->peak_stack = p->stack_bytes;
  }
}

/* The rows keep each thread's own peaks of a bucket: when their sum is more
 * than a tenth above the process's exact peak, a stub of the trace (which
 * replays each thread's rows) would peak that much higher: said, with the
 * remedy. */
static void rows_peak_warning(const char *out, const memstub_trace *t) {
  const char *pk = memstub_trace_get_meta(t, MS__REC_META_PEAK_HEAP);
  const char *rk = memstub_trace_get_meta(t, MS__REC_META_ROWS_PEAK_HEAP);
  int64_t peak, rows;
  if (!pk || !rk || ms__parse_i64(pk, strlen(pk), &peak) < 0 || peak <= 0) return;
  rows = strtoll(rk, NULL, 10);
  if ((double)rows <= 1.1 * (double)peak) return;
  char a[32], b[32];
  ms_cli_warn("%s: the threads' rows peak at %s together, %.0f%% above the process's exact peak "
              "heap of %s (each thread's rows keep its own peak of a coalescing bucket): a stub "
              "replaying them peaks higher; record with a finer --resolution (or -r0) to bring "
              "them together",
              out, ms__fmt_bytes(rows, a, sizeof a), 100.0 * ((double)rows / (double)peak - 1),
              ms__fmt_bytes(peak, b, sizeof b));
}

/* Threads that blocked the recorder's sampling signal (record.sample_blocked_ns,
 * "THR:NS ...") for more than a tenth of their lives, and 10 ms at least,
 * and that ran 10 ms or more, and a twentieth of their lives, between two
 * rows of theirs: the watcher
 * (recorder/watch.c) did not reach them, their rows came only at their
 * allocator calls, so a stub spreads their CPU time evenly over the gaps and
 * shows the memory they wrote late. Said, with what holds (xz blocks every
 * signal in its workers: one row of 1 s each without the watcher). */
static void blocked_warning(const char *out, const memstub_trace *t, const thr_sum *s,
                            int64_t nthr) {
  const char *v = memstub_trace_get_meta(t, MS__REC_META_SAMPLE_BLOCKED);
  int64_t *blk = v ? calloc((size_t)nthr, sizeof *blk) : NULL;
  while (blk && *v) {  // "THR:NS THR:NS ..."
    char *e;
    long long th = strtoll(v, &e, 10), ns;
    if (e == v || *e != ':') break;
    v = e + 1;
    ns = strtoll(v, &e, 10);
    if (e == v) break;
    v = e + strspn(e, " ");
    if (th >= 0 && th < nthr) blk[th] = ns;
  }
  char list[256] = "", gaps[256] = "";
  size_t nl = 0, ng = 0;
  int n = 0;
  for (int64_t th = 0; blk && th < nthr; th++) {
    int64_t ns = blk[th], life = s[th].t1 - s[th].t0;
    if (s[th].t0 < 0 || ns < 10 * 1000 * 1000 || (double)ns <= 0.1 * (double)life ||
        s[th].gap < 10 * 1000 * 1000 || (double)s[th].gap < 0.05 * (double)life)
      continue;
    char g[32];
    if (nl < sizeof list - 40)
      nl += (size_t)snprintf(list + nl, sizeof list - nl, "%s%" PRId64 " (%.0f%%)", n ? ", " : "",
                             th, life > 0 ? fmin(100.0, 100.0 * (double)ns / (double)life) : 100.0);
    if (ng < sizeof gaps - 40)
      ng += (size_t)snprintf(gaps + ng, sizeof gaps - ng, "%s%s", n ? ", " : "",
                             ms__fmt_ns(s[th].gap, g, sizeof g));
    n++;
  }
  free(blk);
  if (!n) return;
  ms_cli_warn("%s: thread%s %s blocked the recorder's sampling signal for that share of %s "
              "(a program may block every signal in its workers): %s rows came only at %s "
              "allocator calls (longest gap%s while running %s), so a stub spreads %s CPU time evenly over "
              "those gaps and shows the resident memory %s wrote at other threads' rows, late; "
              "the totals hold, the curves between those rows are coarse",
              out, n == 1 ? "" : "s", list, n == 1 ? "its life" : "their lives",
              n == 1 ? "its" : "their", n == 1 ? "its" : "their", n == 1 ? "" : "s", gaps,
              n == 1 ? "its" : "their", n == 1 ? "it" : "they");
}

int ms_record_threads_summary(const char *out, const char *abs, int quiet) {
  memstub_trace *t = NULL;
  memstub_error err;
  if (memstub_trace_read(abs, &t, &err) < 0)
    return ms_cli_error("%s: the recorder's trace does not read back: %s", out, err.msg), -1;
  memstub_trace_threadcols c;
  memstub_trace_threadcols_find(t, &c);
  int64_t nthr = memstub_trace_thread_count(t);
  if (c.thread < 0 || c.event < 0 || c.peer < 0 || c.xfree_from < 0 || !t->n) {
    ms_cli_error("%s: the columns of --thread all are missing, or it has no rows", out);
    memstub_trace_free(t);
    return -1;
  }
  thr_sum *s = calloc((size_t)nthr, sizeof *s);
  if (!s) {
    memstub_trace_free(t);
    return ms_cli_error("%s: out of memory", out), -1;
  }
  uint64_t xfrees = 0, joins = 0;
  summarise(t, &c, s, nthr, &xfrees, &joins);
  rows_peak_warning(out, t);
  blocked_warning(out, t, s, nthr);
  if (!quiet) {
    char d[32], r[32];
    const char *pk = memstub_trace_get_meta(t, MS__REC_META_PEAK_HEAP);
    char pb[32] = "?";
    int64_t peak = -1;
    if (pk && ms__parse_i64(pk, strlen(pk), &peak) == 0) ms__fmt_bytes(peak, pb, sizeof pb);
    char res[128];
    ms_cli_note("%s: %s rows over %s, %" PRId64 " threads, %" PRIu64
                " cross-thread free row%s, %" PRIu64 " join%s; the process's peak heap %s%s",
                out, ms__fmt_count((int64_t)t->n, r, sizeof r),
                ms__fmt_ns(t->pts[t->n - 1].time_ns, d, sizeof d), nthr, xfrees,
                xfrees == 1 ? "" : "s", joins, joins == 1 ? "" : "s", pb,
                ms_record_resident_part(t, res, sizeof res));
    fprintf(stderr, "  %-7s %6s %10s %10s %10s %12s %12s %9s %s\n", "thread", "peer", "rows",
            "start", "end", "peak heap", "peak stack", "xfrees", "joined by");
    for (int64_t i = 0; i < nthr; i++) {
      if (i == SHOWN) {
        fprintf(stderr, "  ... and %" PRId64 " more threads\n", nthr - i);
        break;
      }
      const thr_sum *x = &s[i];
      char jb[24] = "-", rows[32], t0[32], t1[32], ph[32], ps[32], xf[32];
      if (x->joined_by >= 0) snprintf(jb, sizeof jb, "%" PRId64, x->joined_by);
      fprintf(stderr, "  %-7" PRId64 " %6" PRId64 " %10s %10s %10s %12s %12s %9s %s\n", i, x->peer,
              ms__fmt_count((int64_t)x->rows, rows, sizeof rows), x->t0 < 0 ? "-" : ms__fmt_ns(x->t0, t0, sizeof t0),
              x->t0 < 0 ? "-" : ms__fmt_ns(x->t1, t1, sizeof t1), ms__fmt_bytes(x->peak_heap, ph, sizeof ph),
              ms__fmt_bytes(x->peak_stack, ps, sizeof ps),
              ms__fmt_count((int64_t)x->xfrees, xf, sizeof xf), jb);
    }
  }
  free(s);
  memstub_trace_free(t);
  return 0;
}
