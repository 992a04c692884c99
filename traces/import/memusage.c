/* glibc memusage's binary data file (memusage -d FILE) into a trace.
 *
 * Record layout, from glibc malloc/memusage.c (struct entry): uint64 heap,
 * uint64 stack, uint32 time_low, uint32 time_high, in host byte order. The
 * file starts with two records that memusage rewrites at exit: record 0 has
 * heap 0, the peak of heap+stack as its stack and the start time; record 1
 * the heap peak, the stack peak and the end time. Then one record per
 * allocator call (and per SIGPROF tick unless --no-timer), written in blocks.
 * heap is the bytes requested (malloc, calloc, realloc; not the aligned
 * allocators). Times come from HP_TIMING (the cycle counter) on x86-64,
 * aarch64 and others, or gettimeofday microseconds elsewhere.
 *
 * The inverted stack: update_data() chooses its direction with
 * `#ifdef _STACK_GROWS_UP`, but <stackinfo.h> defines _STACK_GROWS_UP to 0
 * on downward-growing stacks, so the upward branch runs: start_sp follows the
 * lowest stack pointer and the value is sp - lowest, large when the stack is
 * shallow and 0 at every new depth record. docs/recording.md lists the
 * versions. The correction is peak - value, exact from the moment the
 * deepest point was first reached. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/import.h"
#include "ms_common.h"
#include "prim.h"

typedef struct murec {
  uint64_t heap, stack, time;
} murec;

static murec get(const unsigned char *p) {
  uint64_t h, s;
  uint32_t lo, hi;
  memcpy(&h, p, 8);
  memcpy(&s, p + 8, 8);
  memcpy(&lo, p + 16, 4);
  memcpy(&hi, p + 20, 4);
  return (murec){h, s, ((uint64_t)hi << 32) | lo};
}

typedef struct ti {
  uint64_t time, idx;
} ti;

// Time, then position in the file: a stable order.
static int cmp_ti(const void *a, const void *b) {
  const ti *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int memstub_import_memusage_parse(const char *name, const unsigned char *buf, size_t len,
                                  const memstub_import_options *o, memstub_trace **out,
                                  memstub_error *err) {
  memstub_import_options dflt;
  if (!o) {
    memstub_import_options_init(&dflt);
    o = &dflt;
  }
  *out = NULL;
  const size_t R = 24;
  if (len == 0) return memstub_error_set(err, -EINVAL, "%s: empty file: not a memusage data file", name);
  if (len % R)
    return memstub_error_set(err, -EINVAL,
                             "%s: byte offset %zu: truncated: %zu bytes is not a whole number of "
                             "24-byte records (the last one has %zu bytes)",
                             name, len - len % R, len, len % R);
  if (len < 2 * R)
    return memstub_error_set(err, -EINVAL,
                             "%s: byte offset %zu: truncated: a memusage data file starts with two "
                             "24-byte header records",
                             name, len);
  murec h0 = get(buf), h1 = get(buf + R);
  if (h0.heap != 0)
    return memstub_error_set(err, -EINVAL,
                             "%s: byte offset 0: not a memusage data file: the first record's heap "
                             "is %llu, memusage writes 0",
                             name, (unsigned long long)h0.heap);
  // Record 1's peaks are totals like the records' (the stack peak becomes
  // the base of an inverted curve's correction).
  if (h1.heap > (uint64_t)INT64_MAX || h1.stack > (uint64_t)INT64_MAX)
    return memstub_error_set(err, -EINVAL,
                             "%s: byte offset %zu: record 1: heap peak %llu or stack peak %llu is "
                             "out of range: not a memusage data file?",
                             name, R, (unsigned long long)h1.heap, (unsigned long long)h1.stack);
  size_t n = len / R - 2;
  int complete = !(h1.heap == 0 && h1.stack == 0 && h1.time == h0.time);
  murec *d = n ? malloc(n * sizeof *d) : NULL;
  uint64_t *tmp = n ? malloc(n * sizeof *tmp) : NULL;
  memstub_trace *t = memstub_trace_create();
  if ((n && (!d || !tmp)) || !t) {
    free(d);
    free(tmp);
    memstub_trace_free(t);
    return memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
  }
  uint64_t max_heap = 0, max_stack = 0;
  size_t outside = 0;
  for (size_t i = 0; i < n; i++) {
    d[i] = get(buf + (i + 2) * R);
    if (d[i].heap > max_heap) max_heap = d[i].heap;
    if (d[i].stack > max_stack) max_stack = d[i].stack;
    if (complete && (d[i].time < h0.time || d[i].time > h1.time)) outside++;
    if (d[i].heap > (uint64_t)INT64_MAX || d[i].stack > (uint64_t)INT64_MAX) {
      murec bad = d[i];
      free(d);
      free(tmp);
      memstub_trace_free(t);
      return memstub_error_set(err, -EINVAL,
                               "%s: byte offset %zu: record %zu: heap %llu or stack %llu is out of "
                               "range: not a memusage data file?",
                               name, (i + 2) * R, i + 2, (unsigned long long)bad.heap,
                               (unsigned long long)bad.stack);
    }
  }
  if (complete && n && outside * 2 > n) {
    free(d);
    free(tmp);
    memstub_trace_free(t);
    return memstub_error_set(err, -EINVAL,
                             "%s: byte offset 48: %zu of %zu records lie outside the file's start "
                             "and end times: not a memusage data file (or written on another "
                             "machine's byte order)?",
                             name, outside, n);
  }
  // Records come in write order; threads and the two-half buffer can
  // reorder them slightly: sort by time, stably.
  ti *order = n ? malloc(n * sizeof *order) : NULL;
  if (n && !order) {
    free(d);
    free(tmp);
    memstub_trace_free(t);
    return memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
  }
  for (size_t i = 0; i < n; i++) order[i] = (ti){d[i].time, i};
  if (n) qsort(order, n, sizeof *order, cmp_ti);  // order is NULL without records

  // Time unit.
  int unit = o->time_unit;
  if (unit == MEMSTUB_TIME_AUTO) {
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
    unit = MEMSTUB_TIME_CYCLES;
#else
    unit = MEMSTUB_TIME_US;
#endif
  }
  double ns_per_tick = 1000.0;
  if (unit == MEMSTUB_TIME_CYCLES) {
    double cpn = o->cycles_per_ns > 0 ? o->cycles_per_ns : ms__prim_cycles_per_ns();
    ns_per_tick = 1.0 / cpn;
  }

  // The stack curve. Among allocation records (heap changed; timer records
  // do not change it): an inverted curve reads exactly 0 at every call made
  // at the deepest point so far, and high wherever the program is shallower
  // than its deepest point; a normal one reads 0 only at or above memusage's
  // constructor frame (shallower than main), and sits mostly low against
  // its peak, which is a deep excursion. A program ends where it began, at
  // main's level or above: the last allocation records (exit's frees) read
  // high on an inverted curve, far above the deepest point, and low on a
  // normal one, near the top.
  //
  // Degenerate: a curve that holds too little to be read either way. When
  // allocations nest (runs of allocation records whose heap grows each time,
  // no free between), a real curve moves with them, or the allocations are a
  // loop at one level; an inverted recording stores 0 at every new depth, so
  // a descent and a loop look the same. Degenerate is: at least
  // DEGEN_MIN_RECORDS allocation records, at most DEGEN_MAX_VALUES distinct
  // stack values among them, a run of at least DEGEN_MIN_NEST nested
  // allocations, and no run of nested allocations that moves the stack.
  // Both readings (normal and inverted) then fit the data, and neither
  // recovers the depths the inverted one lost (docs/recording.md).
  enum { DEGEN_MIN_RECORDS = 8, DEGEN_MAX_VALUES = 3, DEGEN_MIN_NEST = 4 };
  size_t na = 0, zeros = 0;
  size_t run = 0, longest_nest = 0, moving_runs = 0;
  int run_moved = 0;
  uint64_t prev_heap = 0, prev_stack = 0;
  for (size_t i = 0; i < n; i++) {
    murec r = d[order[i].idx];
    if (r.heap != prev_heap) {
      if (r.heap > prev_heap) {  // an allocation: it nests in the run of growth before it
        if (++run == 1) {
          run_moved = 0;
        } else if (r.stack != prev_stack && !run_moved) {
          run_moved = 1;
          moving_runs++;
        }
        if (run > longest_nest) longest_nest = run;
      } else {  // a free or a shrink ends the run
        run = 0;
      }
      tmp[na++] = r.stack;
      zeros += r.stack == 0;
      prev_stack = r.stack;
    }
    prev_heap = r.heap;
  }
  uint64_t median = 0, tail = 0;
  size_t distinct = 0, ntail = na / 20 ? na / 20 : 1;
  if (na) {
    // The last 5 % (at least one), in time order until sorted here.
    qsort(tmp + (na - ntail), ntail, sizeof *tmp, cmp_u64);
    tail = tmp[na - ntail + ntail / 2];
    qsort(tmp, na, sizeof *tmp, cmp_u64);
    median = tmp[na / 2];
    distinct = 1;
    for (size_t i = 1; i < na; i++) distinct += tmp[i] != tmp[i - 1];
  }
  int degenerate = na >= DEGEN_MIN_RECORDS && distinct <= DEGEN_MAX_VALUES &&
                   longest_nest >= DEGEN_MIN_NEST && moving_runs == 0;
  uint64_t peak = complete && h1.stack > max_stack ? h1.stack : max_stack;
  int inverted = o->stack_curve == MEMSTUB_STACK_INVERTED;
  int detected = 0;
  if (o->stack_curve == MEMSTUB_STACK_AUTO && peak > 0 && na >= 2)
    inverted = detected = zeros * 20 >= na || median * 2 > peak || tail * 2 > peak;
  // Auto never imports a curve it cannot read; an explicit direction is
  // obeyed (with memusage.stack_degenerate saying why it is doubtful).
  int unknown = o->stack_curve == MEMSTUB_STACK_NONE ||
                (o->stack_curve == MEMSTUB_STACK_AUTO && degenerate);
  if (unknown) inverted = 0;

  int rc = memstub_trace_reserve(t, n + 1);
  if (rc == 0) rc = memstub_trace_append(t, 0, 0, 0);  // the start, before any call
  int64_t last = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    murec r = d[order[i].idx];
    double ns = r.time >= h0.time ? (double)(r.time - h0.time) * ns_per_tick : 0;
    int64_t tt = ns > 9.2e18 ? INT64_MAX : (int64_t)(ns + 0.5);
    if (tt < last) tt = last;
    last = tt;
    uint64_t s = unknown ? 0 : inverted ? (r.stack <= peak ? peak - r.stack : 0) : r.stack;
    rc = memstub_trace_append(t, tt, (int64_t)s, (int64_t)r.heap);
  }
  char v[768];
  if (rc == 0) rc = memstub_trace_set_meta(t, "source", "memusage");
  if (rc == 0)
    rc = memstub_trace_set_meta(t, "memusage.heap_measure",
                                "bytes requested from malloc, calloc and realloc (memusage does "
                                "not see posix_memalign, aligned_alloc, memalign, valloc)");
  snprintf(v, sizeof v, "%zu", n);
  if (rc == 0) rc = memstub_trace_set_meta(t, "memusage.records", v);
  if (complete) {
    snprintf(v, sizeof v, "%llu", (unsigned long long)h1.heap);
    if (rc == 0) rc = memstub_trace_set_meta(t, "memusage.peak_heap_bytes", v);
    snprintf(v, sizeof v, "%llu (as recorded, before any correction)", (unsigned long long)h1.stack);
    if (rc == 0) rc = memstub_trace_set_meta(t, "memusage.peak_stack_bytes", v);
    // The header's peaks are the maxima of the values memusage recorded: in a
    // whole file from one thread they are the records' maxima exactly.
    // Otherwise records are missing (a copy cut at a record boundary) or the
    // header belongs to another run; threads can race memusage's counters,
    // so this is said, not refused.
    const char *why = NULL;
    uint64_t want = 0, got = 0;
    if (h1.heap != max_heap) {
      why = "heap peak";
      want = h1.heap;
      got = max_heap;
    } else if (h1.stack != max_stack) {
      why = "stack peak";
      want = h1.stack;
      got = max_stack;
    }
    if (why) {
      snprintf(v, sizeof v,
               "the header's %s is %llu but the records' largest value is %llu: %s (threads "
               "racing memusage's counters can also do this)",
               why, (unsigned long long)want, (unsigned long long)got,
               want > got ? "records are missing (a truncated copy?)"
                          : "the header does not belong to these records");
      if (rc == 0) rc = memstub_trace_set_meta(t, "memusage.inconsistent", v);
    }
  } else if (rc == 0) {
    rc = memstub_trace_set_meta(t, "memusage.incomplete",
                                "the header records were never rewritten (the program did not "
                                "exit normally): no peaks, no end time");
  }
  if (unit == MEMSTUB_TIME_CYCLES)
    snprintf(v, sizeof v, "cycle counter ticks, %.6g per ns (%s)", 1.0 / ns_per_tick,
             o->cycles_per_ns > 0 ? "given" : "this host's rate: import on the machine that recorded");
  else
    snprintf(v, sizeof v, "microseconds");
  if (rc == 0) rc = memstub_trace_set_meta(t, "memusage.time_unit", v);
  char evidence[200];
  snprintf(evidence, sizeof evidence,
           "%zu of %zu allocation records read 0, median %llu, last %zu median %llu, of peak %llu",
           zeros, na, (unsigned long long)median, ntail, (unsigned long long)tail,
           (unsigned long long)peak);
  char degen[256];
  snprintf(degen, sizeof degen,
           "degenerate stack curve: %zu allocation records take %zu distinct stack value%s, and %zu "
           "allocations nest without moving it",
           na, distinct, distinct == 1 ? "" : "s", longest_nest);
  if (o->stack_curve == MEMSTUB_STACK_NONE)
    snprintf(v, sizeof v, "none (as told: the stack is not imported)");
  else if (unknown)
    snprintf(v, sizeof v, "unknown (a %s; read as normal or as inverted it would be a wrong curve; %s)",
             degen, evidence);
  else if (inverted)
    snprintf(v, sizeof v, "inverted (corrected as peak - value; %s: %s)",
             detected ? "detected" : "as told", evidence);
  else
    snprintf(v, sizeof v, "normal (%s: %s)",
             o->stack_curve == MEMSTUB_STACK_NORMAL ? "as told" : "detected", evidence);
  if (rc == 0) rc = memstub_trace_set_meta(t, "memusage.stack_curve", v);
  if (o->stack_curve == MEMSTUB_STACK_NONE)
    snprintf(v, sizeof v, "unknown (not imported: --stack-curve none); stack_bytes are 0");
  else
    snprintf(v, sizeof v, "unknown (memusage recorded a %s); stack_bytes are 0", degen);
  if (rc == 0 && unknown) rc = memstub_trace_set_meta(t, "stack", v);
  snprintf(v, sizeof v, "%s: imported %s as told, but %s", degen, inverted ? "inverted" : "normal",
           inverted ? "a run of 0s may be a descent whose depths memusage lost"
                    : "it may be an inverted recording");
  if (rc == 0 && degenerate && !unknown) rc = memstub_trace_set_meta(t, "memusage.stack_degenerate", v);
  if (rc == 0)
    rc = memstub_trace_set_meta(t, "memusage.stack_from",
                                "the highest stack pointer memusage saw in the thread (not the "
                                "thread's stack top)");
  free(d);
  free(tmp);
  free(order);
  if (rc < 0) {
    memstub_trace_free(t);
    return memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
  }
  *out = t;
  return 0;
}

int memstub_import_memusage(const char *path, const memstub_import_options *o,
                            memstub_trace **out, memstub_error *err) {
  char *buf;
  size_t len;
  *out = NULL;
  int rc = ms__read_file(path, &buf, &len, err);
  if (rc < 0) return rc;
  rc = memstub_import_memusage_parse(path, (const unsigned char *)buf, len, o, out, err);
  free(buf);
  return rc;
}
