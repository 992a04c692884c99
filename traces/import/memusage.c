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

#include "internal.h"
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

// One import's state, filled stage by stage from the header to the metadata.
typedef struct muparse {
  const char *name;
  const unsigned char *buf;
  size_t len;
  const memstub_import_options *o;
  memstub_error *err;
  murec h0, h1;      // the two header records
  size_t n;          // records after the header
  int complete;      // the header records were rewritten at exit
  murec *d;          // the records, in file order
  uint64_t *tmp;     // the allocation records' stack values
  ti *order;         // the records in time order
  memstub_trace *t;
  uint64_t max_heap, max_stack;
  int unit;          // MEMSTUB_TIME_CYCLES or MEMSTUB_TIME_US
  double ticks_per_ns;
  // The stack curve's evidence and the judgement made from it.
  size_t na, zeros, longest_nest, moving_runs, distinct, ntail;
  uint64_t median, tail, peak;
  int degenerate, inverted, detected, unknown;
} muparse;

enum { MU_RECORD = 24 };  // bytes per record

// Check the file's size and its two header records; -EINVAL with the offset on failure.
static int mu_header(muparse *p) {
  const size_t R = MU_RECORD, len = p->len;
  const char *name = p->name;
  memstub_error *err = p->err;
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
  p->h0 = get(p->buf);
  p->h1 = get(p->buf + R);
  if (p->h0.heap != 0)
    return memstub_error_set(err, -EINVAL,
                             "%s: byte offset 0: not a memusage data file: the first record's heap "
                             "is %llu, memusage writes 0",
                             name, (unsigned long long)p->h0.heap);
  // Record 1's peaks are totals like the records' (the stack peak becomes
  // the base of an inverted curve's correction).
  if (p->h1.heap > (uint64_t)INT64_MAX || p->h1.stack > (uint64_t)INT64_MAX)
    return memstub_error_set(err, -EINVAL,
                             "%s: byte offset %zu: record 1: heap peak %llu or stack peak %llu is "
                             "out of range: not a memusage data file?",
                             name, R, (unsigned long long)p->h1.heap,
                             (unsigned long long)p->h1.stack);
  p->n = len / R - 2;
  p->complete = !(p->h1.heap == 0 && p->h1.stack == 0 && p->h1.time == p->h0.time);
  // A trace needs records: memusage writes one per allocator call.
  int any = 0;
  for (size_t i = 2 * R; i < len && !any; i++) any = p->buf[i] != 0;
  if (!any)
    return memstub_error_set(err, -EINVAL,
                             "%s: byte offset %zu: no data records after the two header records%s: "
                             "memusage recorded no allocator call (or this is not its file)",
                             name, 2 * R, p->n ? " (only zero bytes)" : "");
  return 0;
}

// Allocate the record arrays and the trace; -ENOMEM on failure (the caller frees).
static int mu_alloc(muparse *p) {
  size_t n = p->n;
  p->d = n ? malloc(n * sizeof *p->d) : NULL;
  p->tmp = n ? malloc(n * sizeof *p->tmp) : NULL;
  p->t = memstub_trace_create();
  if ((n && (!p->d || !p->tmp)) || !p->t)
    return memstub_error_set(p->err, -ENOMEM, "%s: out of memory", p->name);
  return 0;
}

// Read the records, their maxima, and refuse values out of range or times
// mostly outside the header's span; -EINVAL with the offset on failure.
static int mu_scan(muparse *p) {
  const size_t R = MU_RECORD, n = p->n;
  size_t outside = 0;
  for (size_t i = 0; i < n; i++) {
    murec r = p->d[i] = get(p->buf + (i + 2) * R);
    if (r.heap > p->max_heap) p->max_heap = r.heap;
    if (r.stack > p->max_stack) p->max_stack = r.stack;
    if (p->complete && (r.time < p->h0.time || r.time > p->h1.time)) outside++;
    if (r.heap > (uint64_t)INT64_MAX || r.stack > (uint64_t)INT64_MAX)
      return memstub_error_set(p->err, -EINVAL,
                               "%s: byte offset %zu: record %zu: heap %llu or stack %llu is out of "
                               "range: not a memusage data file?",
                               p->name, (i + 2) * R, i + 2, (unsigned long long)r.heap,
                               (unsigned long long)r.stack);
  }
  if (p->complete && n && outside * 2 > n)
    return memstub_error_set(p->err, -EINVAL,
                             "%s: byte offset 48: %zu of %zu records lie outside the file's start "
                             "and end times: not a memusage data file (or written on another "
                             "machine's byte order)?",
                             p->name, outside, n);
  return 0;
}

// Put the records in time order, stably; -ENOMEM on failure.
static int mu_sort(muparse *p) {
  // Records come in write order; threads and the two-half buffer can
  // reorder them slightly: sort by time, stably.
  size_t n = p->n;
  p->order = n ? malloc(n * sizeof *p->order) : NULL;
  if (n && !p->order) return memstub_error_set(p->err, -ENOMEM, "%s: out of memory", p->name);
  for (size_t i = 0; i < n; i++) p->order[i] = (ti){p->d[i].time, i};
  if (n) qsort(p->order, n, sizeof *p->order, cmp_ti);  // order is NULL without records
  return 0;
}

// Choose the time unit and the ns per tick (never fails).
static void mu_time_unit(muparse *p) {
  const memstub_import_options *o = p->o;
  p->unit = o->time_unit;
  if (p->unit == MEMSTUB_TIME_AUTO) {
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
    p->unit = MEMSTUB_TIME_CYCLES;
#else
    p->unit = MEMSTUB_TIME_US;
#endif
  }
  p->ticks_per_ns = 0.001;
  if (p->unit == MEMSTUB_TIME_CYCLES)
    p->ticks_per_ns = o->cycles_per_ns > 0 ? o->cycles_per_ns : ms__prim_cycles_per_ns();
}

/* The stack curve. Among allocation records (heap changed; timer records
 * do not change it): an inverted curve reads exactly 0 at every call made
 * at the deepest point so far, and high wherever the program is shallower
 * than its deepest point; a normal one reads 0 only at or above memusage's
 * constructor frame (shallower than main), and sits mostly low against
 * its peak, which is a deep excursion. A program ends where it began, at
 * main's level or above: the last allocation records (exit's frees) read
 * high on an inverted curve, far above the deepest point, and low on a
 * normal one, near the top.
 *
 * Degenerate: a curve that holds too little to be read either way. When
 * allocations nest (runs of allocation records whose heap grows each time,
 * no free between), a real curve moves with them, or the allocations are a
 * loop at one level; an inverted recording stores 0 at every new depth, so
 * a descent and a loop look the same. Degenerate is: at least
 * DEGEN_MIN_RECORDS allocation records, at most DEGEN_MAX_VALUES distinct
 * stack values among them, a run of at least DEGEN_MIN_NEST nested
 * allocations, and no run of nested allocations that moves the stack.
 * Both readings (normal and inverted) then fit the data, and neither
 * recovers the depths the inverted one lost (docs/recording.md). */
enum { DEGEN_MIN_RECORDS = 8, DEGEN_MAX_VALUES = 3, DEGEN_MIN_NEST = 4 };

// Collect the allocation records' stack values (into tmp, in time order),
// their zeros and the runs of nested allocations (never fails).
static void mu_curve_scan(muparse *p) {
  size_t run = 0;
  int run_moved = 0;
  uint64_t prev_heap = 0, prev_stack = 0;
  for (size_t i = 0; i < p->n; i++) {
    murec r = p->d[p->order[i].idx];
    if (r.heap != prev_heap) {
      if (r.heap > prev_heap) {  // an allocation: it nests in the run of growth before it
        if (++run == 1) {
          run_moved = 0;
        } else if (r.stack != prev_stack && !run_moved) {
          run_moved = 1;
          p->moving_runs++;
        }
        if (run > p->longest_nest) p->longest_nest = run;
      } else {  // a free or a shrink ends the run
        run = 0;
      }
      p->tmp[p->na++] = r.stack;
      p->zeros += r.stack == 0;
      prev_stack = r.stack;
    }
    prev_heap = r.heap;
  }
}

// Judge the curve from mu_curve_scan's evidence: its median, tail, distinct
// values, degeneracy and direction (sorts tmp; never fails).
static void mu_curve_judge(muparse *p) {
  const memstub_import_options *o = p->o;
  size_t na = p->na;
  p->ntail = na / 20 ? na / 20 : 1;
  if (na) {
    // The last 5 % (at least one), in time order until sorted here.
    qsort(p->tmp + (na - p->ntail), p->ntail, sizeof *p->tmp, cmp_u64);
    p->tail = p->tmp[na - p->ntail + p->ntail / 2];
    qsort(p->tmp, na, sizeof *p->tmp, cmp_u64);
    p->median = p->tmp[na / 2];
    p->distinct = 1;
    for (size_t i = 1; i < na; i++) p->distinct += p->tmp[i] != p->tmp[i - 1];
  }
  p->degenerate = na >= DEGEN_MIN_RECORDS && p->distinct <= DEGEN_MAX_VALUES &&
                  p->longest_nest >= DEGEN_MIN_NEST && p->moving_runs == 0;
  p->peak = p->complete && p->h1.stack > p->max_stack ? p->h1.stack : p->max_stack;
  p->inverted = o->stack_curve == MEMSTUB_STACK_INVERTED;
  if (o->stack_curve == MEMSTUB_STACK_AUTO && p->peak > 0 && na >= 2)
    p->inverted = p->detected = p->zeros * 20 >= na || p->median * 2 > p->peak ||
                                p->tail * 2 > p->peak;
  // Auto never imports a curve it cannot read; an explicit direction is
  // obeyed (with memusage.stack_degenerate saying why it is doubtful).
  p->unknown = o->stack_curve == MEMSTUB_STACK_NONE ||
               (o->stack_curve == MEMSTUB_STACK_AUTO && p->degenerate);
  if (p->unknown) p->inverted = 0;
}

// Append the start row and one row per record in time order, times in ns
// never decreasing, the stack corrected as judged; -EINVAL (a time beyond
// 64-bit ns, with its offset) or -ENOMEM (err not set) on failure.
static int mu_rows(muparse *p) {
  int rc = memstub_trace_reserve(p->t, p->n + 1);
  if (rc == 0) rc = memstub_trace_append(p->t, 0, 0, 0);  // the start, before any call
  int64_t last = 0;
  for (size_t i = 0; i < p->n && rc == 0; i++) {
    murec r = p->d[p->order[i].idx];
    uint64_t dt = r.time >= p->h0.time ? r.time - p->h0.time : 0;
    double ns = (double)dt / p->ticks_per_ns;  // a tiny rate: inf, never NaN
    if (!(ns < 9.2e18))
      return memstub_error_set(p->err, -EINVAL,
                               "%s: byte offset %zu: record %zu: time %llu ticks after the start "
                               "is beyond 64-bit ns at %.6g ticks per ns%s",
                               p->name, (p->order[i].idx + 2) * MU_RECORD, p->order[i].idx + 2,
                               (unsigned long long)dt, p->ticks_per_ns,
                               p->unit == MEMSTUB_TIME_CYCLES ? " (--cycles-per-ns)" : "");
    int64_t tt = (int64_t)(ns + 0.5);
    if (tt < last) tt = last;
    last = tt;
    uint64_t s = p->unknown    ? 0
                 : p->inverted ? (r.stack <= p->peak ? p->peak - r.stack : 0)
                               : r.stack;
    rc = memstub_trace_append(p->t, tt, (int64_t)s, (int64_t)r.heap);
  }
  return rc;
}

// Metadata from the header: source, records, peaks and whether the header
// agrees with the records (or was never written); <0 on out of memory.
static int mu_meta_header(muparse *p) {
  memstub_trace *t = p->t;
  char v[768];
  int rc = memstub_trace_set_meta(t, "source", "memusage");
  if (rc == 0)
    rc = memstub_trace_set_meta(t, "memusage.heap_measure",
                                "bytes requested from malloc, calloc and realloc (memusage does "
                                "not see posix_memalign, aligned_alloc, memalign, valloc)");
  snprintf(v, sizeof v, "%zu", p->n);
  if (rc == 0) rc = memstub_trace_set_meta(t, "memusage.records", v);
  if (!p->complete) {
    if (rc == 0)
      rc = memstub_trace_set_meta(t, "memusage.incomplete",
                                  "the header records were never rewritten (the program did not "
                                  "exit normally): no peaks, no end time");
    return rc;
  }
  snprintf(v, sizeof v, "%llu", (unsigned long long)p->h1.heap);
  if (rc == 0) rc = memstub_trace_set_meta(t, "memusage.peak_heap_bytes", v);
  snprintf(v, sizeof v, "%llu (as recorded, before any correction)", (unsigned long long)p->h1.stack);
  if (rc == 0) rc = memstub_trace_set_meta(t, "memusage.peak_stack_bytes", v);
  // The header's peaks are the maxima of the values memusage recorded: in a
  // whole file from one thread they are the records' maxima exactly.
  // Otherwise records are missing (a copy cut at a record boundary) or the
  // header belongs to another run; threads can race memusage's counters,
  // so this is said, not refused.
  const char *why = NULL;
  uint64_t want = 0, got = 0;
  if (p->h1.heap != p->max_heap) {
    why = "heap peak";
    want = p->h1.heap;
    got = p->max_heap;
  } else if (p->h1.stack != p->max_stack) {
    why = "stack peak";
    want = p->h1.stack;
    got = p->max_stack;
  }
  if (!why) return rc;
  snprintf(v, sizeof v,
           "the header's %s is %llu but the records' largest value is %llu: %s (threads "
           "racing memusage's counters can also do this)",
           why, (unsigned long long)want, (unsigned long long)got,
           want > got ? "records are missing (a truncated copy?)"
                      : "the header does not belong to these records");
  if (rc == 0) rc = memstub_trace_set_meta(t, "memusage.inconsistent", v);
  return rc;
}

// The time unit's metadata; <0 on out of memory.
static int mu_meta_time(muparse *p) {
  char v[768];
  if (p->unit == MEMSTUB_TIME_CYCLES)
    snprintf(v, sizeof v, "cycle counter ticks, %.6g per ns (%s)", p->ticks_per_ns,
             p->o->cycles_per_ns > 0 ? "given" : "this host's rate: import on the machine that recorded");
  else
    snprintf(v, sizeof v, "microseconds");
  return memstub_trace_set_meta(p->t, "memusage.time_unit", v);
}

// The stack curve's metadata: the judgement and its evidence, "stack:
// unknown" and the degeneracy warning where they apply; <0 on out of memory.
static int mu_meta_stack(muparse *p) {
  const memstub_import_options *o = p->o;
  memstub_trace *t = p->t;
  char v[768], evidence[200], degen[256];
  snprintf(evidence, sizeof evidence,
           "%zu of %zu allocation records read 0, median %llu, last %zu median %llu, of peak %llu",
           p->zeros, p->na, (unsigned long long)p->median, p->ntail, (unsigned long long)p->tail,
           (unsigned long long)p->peak);
  snprintf(degen, sizeof degen,
           "degenerate stack curve: %zu allocation records take %zu distinct stack value%s, and %zu "
           "allocations nest without moving it",
           p->na, p->distinct, p->distinct == 1 ? "" : "s", p->longest_nest);
  if (o->stack_curve == MEMSTUB_STACK_NONE)
    snprintf(v, sizeof v, "none (as told: the stack is not imported)");
  else if (p->unknown)
    snprintf(v, sizeof v, "unknown (a %s; read as normal or as inverted it would be a wrong curve; %s)",
             degen, evidence);
  else if (p->inverted)
    snprintf(v, sizeof v, "inverted (corrected as peak - value; %s: %s)",
             p->detected ? "detected" : "as told", evidence);
  else
    snprintf(v, sizeof v, "normal (%s: %s)",
             o->stack_curve == MEMSTUB_STACK_NORMAL ? "as told" : "detected", evidence);
  int rc = memstub_trace_set_meta(t, "memusage.stack_curve", v);
  if (o->stack_curve == MEMSTUB_STACK_NONE)
    snprintf(v, sizeof v, "unknown (not imported: --stack-curve none); stack_bytes are 0");
  else
    snprintf(v, sizeof v, "unknown (memusage recorded a %s); stack_bytes are 0", degen);
  if (rc == 0 && p->unknown) rc = memstub_trace_set_meta(t, "stack", v);
  snprintf(v, sizeof v, "%s: imported %s as told, but %s", degen, p->inverted ? "inverted" : "normal",
           p->inverted ? "a run of 0s may be a descent whose depths memusage lost"
                       : "it may be an inverted recording");
  if (rc == 0 && p->degenerate && !p->unknown)
    rc = memstub_trace_set_meta(t, "memusage.stack_degenerate", v);
  if (rc == 0)
    rc = memstub_trace_set_meta(t, "memusage.stack_from",
                                "the highest stack pointer memusage saw in the thread (not the "
                                "thread's stack top)");
  return rc;
}

// Rows and metadata into p->t; -EINVAL (mu_rows) or -ENOMEM ("out of
// memory") on failure.
static int mu_build(muparse *p) {
  int rc = mu_rows(p);
  if (rc == -EINVAL) return rc;
  if (rc == 0) rc = mu_meta_header(p);
  if (rc == 0) rc = mu_meta_time(p);
  if (rc == 0) rc = mu_meta_stack(p);
  if (rc < 0) return memstub_error_set(p->err, -ENOMEM, "%s: out of memory", p->name);
  return 0;
}

// The stages in order; on failure everything is freed and *out is NULL (import.h).
int memstub_import_memusage_parse(const char *name, const unsigned char *buf, size_t len,
                                  const memstub_import_options *o, memstub_trace **out,
                                  memstub_error *err) {
  memstub_import_options dflt;
  o = MS__OPTIONS_OR(o, dflt, memstub_import_options_init);
  *out = NULL;
  muparse p = {.name = name, .buf = buf, .len = len, .o = o, .err = err};
  int rc = mu_header(&p);
  if (rc < 0) return rc;
  rc = mu_alloc(&p);
  if (rc == 0) rc = mu_scan(&p);
  if (rc == 0) rc = mu_sort(&p);
  if (rc == 0) {
    mu_time_unit(&p);
    mu_curve_scan(&p);
    mu_curve_judge(&p);
    rc = mu_build(&p);
  }
  free(p.d);
  free(p.tmp);
  free(p.order);
  return MS__HAND_OUT(rc, p.t, out, memstub_trace_free);
}

// memstub_import_memusage_parse of the bytes ms__read_file gives (ms__import_parse).
static int parse_chars(const char *name, const char *buf, size_t len,
                       const memstub_import_options *o, memstub_trace **out, memstub_error *err) {
  return memstub_import_memusage_parse(name, (const unsigned char *)buf, len, o, out, err);
}

int memstub_import_memusage(const char *path, const memstub_import_options *o,
                            memstub_trace **out, memstub_error *err) {
  return ms__import_file(path, ms__read_file, parse_chars, o, out, err);
}
