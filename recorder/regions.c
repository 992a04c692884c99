/* recorder/regions.c: probe regions (memstub/probe.h), as the probe
 * forwards them through recorder/bridge.h. */
#include <errno.h>
#include <string.h>

#include "bridge.h"
#include "internal.h"

// Raw clock units between memory samples at region boundaries: the
// resolution, at least 100 us.
static int64_t mem_every(void) {
  int64_t r = ms__rec.res_raw, floor = (int64_t)(100000 * ms__rec.raw_per_ns);
  return r > floor ? r : floor;
}

// Two region names are the same region (NULL is "region").
static int same_name(const char *a, const char *b) {
  return a == b || strcmp(a ? a : "region", b ? b : "region") == 0;
}

/* MS__REC_REGION_THREAD: ts, opening its outermost region at sp, becomes
 * the recorded thread when no thread has yet. Its stack top is its own
 * stack's, not sp: a later region entered from a shallower frame than the
 * first is on the thread's stack too (with sp as the top, its readings were
 * taken for another stack's and its stack column stayed 0). pre:
 * ts->in_hook set; it stays set. */
static void claim(tstate *ts, uintptr_t sp) {
  int expect = 0;
  if (!__atomic_compare_exchange_n(&ms__rec.region_claimed, &expect, 1, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;
  uintptr_t top = ms__rec_own_stack_top(ts, sp);
  ms__rec_become_recorded(ts, top, 0);  // its first row: the region's begin
  ts->in_hook = 1;
  CBARRIER();
}

EXPORT int memstub_recorder_probe_v1(int op, const char *name, uintptr_t sp) {
  if (UNLIKELY(ms__rec.times_only) || (op == MS__PROBE_HELLO && ms__rec_ensure_ready() &&
                                       ms__rec.times_only))
    return ms__rec_times_probe(op);  // a reference run
  if (op == MS__PROBE_HELLO)
    return ms__rec_ensure_ready() && ms__rec.state == ST_READY &&
           __atomic_load_n(&ms__rec_on, __ATOMIC_RELAXED);
  tstate *ts = state();
  if (!ts) return op == MS__PROBE_END ? -EINVAL : 0;
  ts->in_hook = 1;
  CBARRIER();
  int rc;
  if (UNLIKELY(ms__rec.rec_ordinal == MS__REC_REGION_THREAD) && op == MS__PROBE_BEGIN &&
      ts->depth == 0 && !__atomic_load_n(&ms__rec.region_claimed, __ATOMIC_ACQUIRE))
    claim(ts, sp);
  int64_t h = row_heap(ts);
  // A region's begin and end measure memory afresh (rss and faults are
  // relative to the first region's begin), at most once per resolution (a
  // sample reads /proc: microseconds; a function called in a tight loop
  // would pay it twice per call).
  if (ts->is_rec && ((op == MS__PROBE_BEGIN && ts->depth == 0) ||
                     (op == MS__PROBE_END && ts->depth == 1))) {
    int64_t now = raw_now();
    if (ts->occ == 0 || now - ts->mem_raw >= mem_every()) {
      ms__rec_mem_sample(ts);
      ts->mem_raw = now;
    }
  }
  switch (op) {
    case MS__PROBE_BEGIN:
      if (ts->depth < MAX_DEPTH) {
        ts->frames[ts->depth].name = name;
        ts->frames[ts->depth].at_begin = ts->c;
      }
      rc = ++ts->depth;
      if (ts->is_rec && ts->depth == 1) {
        if (ts->all && !ms__rec.regions_seen) ms__rec.regions_seen = 1;  // summary.c says so
        ms__rec_flush_bucket(ts);
        ts->tag = ++ts->occ;
        ts->base = sp;
        ts->last_s = 0;
        __atomic_store_n(&ms__rec_tag, ts->tag, __ATOMIC_RELAXED);
        ts->now = raw_now();
        if (ts == ms__rec.rec) ts->gocc = ms__rec_gen_region(ts->tag, name, ts->now, 1);
        ms__rec_push_row(ts, ts->now, 0, h, ts->tag | ROW_EXACT, cur_mem(ts),
                         ms__rec_cpu_at(ts, ts->now, 1), 1);
      }
      break;
    case MS__PROBE_POINT:
      rc = ts->depth;
      if (ts->is_rec) {
        ms__rec_flush_bucket(ts);
        int64_t s = stack_at(ts, sp);
        // A point coalesces like an event (only begin and end are boundaries).
        ts->now = raw_now();
        ms__rec_push_row(ts, ts->now, s, h, ts->tag, cur_mem(ts),
                         ms__rec_cpu_at(ts, ts->now, 0), 1);
      }
      break;
    default:  // MS__PROBE_END
      if (ts->depth == 0) {
        rc = -EINVAL;
        break;
      }
      rc = --ts->depth;
      if (ts->depth < MAX_DEPTH) {
        // A region entered again while open (recursion) is part of the
        // outer one: its calls count once, there, and its entries as nested.
        const char *nm = ts->frames[ts->depth].name;
        int again = 0;
        for (int k = 0; k < ts->depth && !again; k++) again = same_name(ts->frames[k].name, nm);
        if (again) {
          ms__rec_stat_nested(ts, nm);
        } else {
          churn d;
          ms__rec_churn_diff(&d, &ts->c, &ts->frames[ts->depth].at_begin);
          ms__rec_stat_add(ts, nm, &d);
        }
      }
      if (ts->is_rec && ts->depth == 0) {
        ms__rec_flush_bucket(ts);
        int64_t s = stack_at(ts, sp);
        ts->now = raw_now();
        ms__rec_push_row(ts, ts->now, s, h, ts->tag | ROW_EXACT, cur_mem(ts),
                         ms__rec_cpu_at(ts, ts->now, 1), 1);
        if (ts == ms__rec.rec) ms__rec_gen_region(ts->tag, NULL, ts->now, 0);
        ts->gocc = NULL;
        ts->tag = 0;
        ts->base = ts->top;
        ts->last_s = sp - ts->low <= ts->top - ts->low ? (int64_t)(ts->top - sp) : 0;
        __atomic_store_n(&ms__rec_tag, 0, __ATOMIC_RELAXED);
      }
      break;
  }
  CBARRIER();
  ts->in_hook = 0;
  return rc;
}
