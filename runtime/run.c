// Running a replay: checks before it, the replay thread, and the results.
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "prim.h"

/* Replay thread stack: the stub's peak, plus per open frame allocate()'s own
 * frame (about 64 bytes at -O2 on x86-64; estimated generously) and the
 * rounding, plus a margin for the measuring and the C library calls below the
 * deepest frame and for what glibc keeps at the top of a thread's stack. */
#if defined(MEMSTUB_SANITIZED)
#define FRAME_ESTIMATE 1024
#define STACK_MARGIN (8 << 20)
#else
#define FRAME_ESTIMATE 256
#define STACK_MARGIN (1 << 20)
#endif
/* Address space glibc reserves for a new thread's malloc arena (HEAP_MAX_SIZE:
 * twice the largest mmap threshold, 64 MiB on 64-bit), mapped when the replay
 * thread first allocates. */
#define ARENA_RESERVE ((uint64_t)2 * 4 * 1024 * 1024 * sizeof(long))
#define SCRATCH_POINTERS 4096  // tcache filling: at most this many chunks per bin
// The longest replay: T0 + any deadline must fit in 64 bits (CLOCK_MONOTONIC
// counts from boot, far below 2^62 ns), 146 years.
#define MAX_DURATION (INT64_MAX / 2)

void memstub_replay_options_init(memstub_replay_options *o) {
  memset(o, 0, sizeof *o);
  o->timing = MEMSTUB_TIMING_DEFAULT;
  o->margin_ns = MEMSTUB_MARGIN_MODEL;
}

const char *memstub_timing_name(int timing) {
  return timing == MEMSTUB_TIMING_ONLINE     ? "online"
         : timing == MEMSTUB_TIMING_DEADLINE ? "deadline"
         : timing == MEMSTUB_TIMING_USLEEP   ? "usleep"
                                             : NULL;
}

int memstub_timing_parse(const char *name, int *timing) {
  for (int t = MEMSTUB_TIMING_DEADLINE; t <= MEMSTUB_TIMING_ONLINE; t++)
    if (name && strcmp(name, memstub_timing_name(t)) == 0) {
      *timing = t;
      return 0;
    }
  return -EINVAL;
}

int ms__rt_delays_predicted(const struct memstub_stub *s) {
  // Compensated by a profile (gen's provenance names it) for a mode that
  // shortens the delays: online timing compensates the sizes only.
  return (s->timing == MEMSTUB_TIMING_DEADLINE || s->timing == MEMSTUB_TIMING_USLEEP) &&
         s->calibration && *s->calibration && strcmp(s->calibration, "none") != 0;
}

int memstub_margin_parse(const char *text, int64_t *margin_ns) {
  int64_t v;
  if (text && strcmp(text, "adaptive") == 0) v = MEMSTUB_MARGIN_ADAPTIVE;
  else if (text && strcmp(text, "model") == 0) v = MEMSTUB_MARGIN_MODEL;
  else if (!text || ms__parse_i64(text, strlen(text), &v) < 0 || v < 0) return -EINVAL;
  *margin_ns = v;
  return 0;
}

static int check_options(const memstub_replay_options *o, memstub_error *err) {
  if (!memstub_timing_name(o->timing))
    return memstub_error_set(err, -EINVAL, "unknown timing mode %d", o->timing);
  if (o->margin_ns < 0 && o->margin_ns != MEMSTUB_MARGIN_ADAPTIVE &&
      o->margin_ns != MEMSTUB_MARGIN_MODEL)
    return memstub_error_set(err, -EINVAL, "margin: %lld ns is negative",
                             (long long)o->margin_ns);
  if (o->sched_slice_ns != 0 && (o->sched_slice_ns < 100000 || o->sched_slice_ns > 100000000))
    return memstub_error_set(err, -EINVAL,
                             "sched_slice: %lld ns is neither 0 nor within 100 us to 100 ms",
                             (long long)o->sched_slice_ns);
  if (o->reaim_ns < -1 || o->reaim_ns > MAX_DURATION)
    return memstub_error_set(err, -EINVAL, "reaim: %lld ns is neither -1, 0 nor a time in ns",
                             (long long)o->reaim_ns);
  if (o->cost_model < MEMSTUB_COST_AUTO || o->cost_model > MEMSTUB_COST_OFF)
    return memstub_error_set(err, -EINVAL, "cost_model: %d is none of auto (0), online (1), off (2)",
                             o->cost_model);
  if (o->measure & ~(unsigned)MEMSTUB_MEASURE_ALL)
    return memstub_error_set(err, -EINVAL, "measure: unknown bits 0x%x",
                             o->measure & ~(unsigned)MEMSTUB_MEASURE_ALL);
  if (!(o->work_rate >= 0) || !(o->mem_share == MEMSTUB_WORK_MEM_NONE ||
                                (o->mem_share >= 0 && o->mem_share <= 1)))
    return memstub_error_set(err, -EINVAL, "work: rate %g or memory share %g out of range",
                             o->work_rate, o->mem_share);
  if (o->stack_extra < 0)
    return memstub_error_set(err, -EINVAL, "stack_extra: %lld bytes is negative",
                             (long long)o->stack_extra);
  return 0;
}

// The figures the replay depends on, recomputed from the points: a
// hand-edited header's descriptor is not trusted to size the stack.
typedef struct figures {
  int64_t peak_stack, max_depth, peak_heap, duration;
  // Resident data (layouts 2, 3): the highest resident target and mapped
  // total (whole pages), the most address space heap, mapping and resident
  // memory beyond both take at one point, and the points of each (-1 none).
  int64_t peak_rss, peak_mapped, peak_space, rss_at, mapped_at, space_at;
} figures;

static int64_t pages_of(int64_t v, long page) { return v / page * page + (v % page ? page : 0); }

/* Point i of a stub with resident data into f's resident figures: heap is
 * its heap (as recompute found it), *map the mapped total before it (then
 * after it). 0 or -EINVAL when the mapped changes add up beyond 64 bits. */
static int resident_figures(const struct memstub_stub *s, int64_t i, int64_t heap, int64_t *map,
                            figures *f, memstub_error *err) {
  long page = ms__prim_page_size();
  if (ms__add_i64(*map, s->mapped[i], map) < 0 || *map > INT64_MAX - page)
    return memstub_error_set(err, -EINVAL, "point %lld: the mapped changes add up beyond 64 bits",
                             (long long)i);
  if (*map < 0) *map = 0;  // the mapping never goes below 0
  int64_t m = pages_of(*map, page), rss = s->rss[i], space;
  if (m > f->peak_mapped) f->peak_mapped = m, f->mapped_at = i;
  if (rss > f->peak_rss) f->peak_rss = rss, f->rss_at = i;
  if (ms__add_i64(heap, m, &space) < 0) space = INT64_MAX;
  if (rss > space) space = rss;  // beyond the block and the mapping: the keep mapping
  if (space > f->peak_space) f->peak_space = space, f->space_at = i;
  return 0;
}

static int recompute(const struct memstub_stub *s, figures *f, memstub_error *err) {
  int64_t stack = 0, depth = 0, heap = 0, t = 0, map = 0;
  memset(f, 0, sizeof *f);
  f->rss_at = f->mapped_at = f->space_at = -1;
  int resident = s->abi >= MEMSTUB_STUB_ABI_RESIDENT && s->rss && s->mapped;  // as ms__rt_ctx_init
  for (int64_t i = 0; i < s->numdata; i++) {
    const struct memAlloc *u = &s->use[i];
    if (ms__add_i64(t, u->time, &t) < 0)
      return memstub_error_set(err, -EINVAL, "point %lld: the delays add up beyond 64 bits",
                               (long long)i);
    if (ms__add_i64(stack, u->stackAlloc, &stack) < 0 ||
        ms__add_i64(heap, u->heapAlloc, &heap) < 0)
      return memstub_error_set(err, -EINVAL, "point %lld: the sizes add up beyond 64 bits",
                               (long long)i);
    if (heap < 0) heap = 0;  // the block never goes below 0
    if (u->stackAlloc > 0) depth++;
    if (u->stackAlloc < 0) depth--;
    if (stack > f->peak_stack) f->peak_stack = stack;
    if (depth > f->max_depth) f->max_depth = depth;
    if (heap > f->peak_heap) f->peak_heap = heap;
    int rc = resident ? resident_figures(s, i, heap, &map, f, err) : 0;
    if (rc < 0) return rc;
  }
  f->duration = t;
  if (t > MAX_DURATION)
    return memstub_error_set(err, -EINVAL,
                             "the delays add up to %lld ns, longer than a replay can wait "
                             "(%lld ns)",
                             (long long)t, (long long)MAX_DURATION);
  // A descriptor that claims more is believed (it only makes the stack larger).
  if (s->peak_stack > f->peak_stack) f->peak_stack = s->peak_stack;
  if (s->max_depth > f->max_depth) f->max_depth = s->max_depth;
  if (s->peak_heap > f->peak_heap) f->peak_heap = s->peak_heap;
  return 0;
}

/* The limits on memory the process runs under, for an error message: "" when
 * none is set, else " (the process's limits: address space, ulimit -v, N
 * bytes; ...)". */
static void limit_hint(char *buf, size_t cap) {
  static const struct {
    int which;
    const char *what;
  } lim[] = {{MS__PRIM_LIMIT_AS, "address space, ulimit -v"},
             {MS__PRIM_LIMIT_DATA, "data, ulimit -d"}};
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof lim / sizeof lim[0] && n < cap; i++) {
    uint64_t limit = ms__prim_mem_limit(lim[i].which, NULL);
    if (limit == UINT64_MAX) continue;
    int w = snprintf(buf + n, cap - n, "%s%s %llu bytes", n ? "; " : " (the process's limits: ",
                     lim[i].what, (unsigned long long)limit);
    if (w < 0) break;
    n += (size_t)w;
  }
  if (n > 0 && n + 1 < cap) snprintf(buf + n, cap - n, ")");
}

int64_t memstub_replay_measure_bytes(const struct memstub_stub *s, const memstub_replay_options *o) {
  if (!s || !o || !o->measure || s->numdata <= 0) return 0;
  if ((uint64_t)s->numdata > (uint64_t)INT64_MAX / sizeof(memstub_replay_record)) return INT64_MAX;
  return s->numdata * (int64_t)sizeof(memstub_replay_record);
}

/* Measuring: the records need `records` bytes, reserved and written before
 * the replay; refuse up front when the host has less available than that
 * (MemAvailable), rather than swap or be killed halfway. 0 or -ENOMEM. */
static int check_measure_memory(int64_t n, uint64_t records, memstub_error *err) {
  uint64_t avail = ms__prim_mem_available();
  if (records == 0 || avail == 0 || records <= avail) return 0;
  return memstub_error_set(err, -ENOMEM,
                           "measuring %lld points needs %llu bytes for the records (%zu bytes a "
                           "point), reserved before the replay; this host has %llu bytes "
                           "available (MemAvailable): replay without measuring, or on a larger "
                           "host",
                           (long long)n, (unsigned long long)records,
                           sizeof(memstub_replay_record), (unsigned long long)avail);
}

/* Refuse a replay that the process's limits on memory cannot hold: the heap
 * block at its peak (with resident data: heap, mapping and what the resident
 * target holds beyond both, at one point), the replay thread's stack and the
 * records, beyond what
 * the process uses now (RLIMIT_AS, RLIMIT_DATA). RLIMIT_STACK bounds the main
 * thread's stack only: the replay thread's is mapped at the size asked for.
 * 0, or -ENOMEM naming the limit. */
static int check_limits(uint64_t heap, int resident, uint64_t stack, uint64_t records,
                        memstub_error *err) {
  static const struct {
    int which;
    const char *name, *shell;
  } lim[] = {{MS__PRIM_LIMIT_AS, "address-space limit (RLIMIT_AS", "ulimit -v"},
             {MS__PRIM_LIMIT_DATA, "data limit (RLIMIT_DATA", "ulimit -d"}};
  uint64_t base = heap;
  if (__builtin_add_overflow(base, stack, &base) || __builtin_add_overflow(base, records, &base))
    base = UINT64_MAX;
  for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
    uint64_t used, limit = ms__prim_mem_limit(lim[i].which, &used);
    if (limit == UINT64_MAX) continue;
    // Address space: the replay thread's malloc arena is reserved too.
    uint64_t arena = lim[i].which == MS__PRIM_LIMIT_AS ? ARENA_RESERVE : 0, need;
    if (__builtin_add_overflow(base, arena, &need)) need = UINT64_MAX;
    uint64_t room = limit > used ? limit - used : 0;
    if (need > room && records > 0 && need - records <= room)  // fits but for the records
      return memstub_error_set(err, -ENOMEM,
                               "measuring needs %llu bytes for the records (%zu bytes a point), "
                               "reserved before the replay; the process's %s, %s) is %llu bytes "
                               "and the replay itself needs %llu of the %llu it leaves: replay "
                               "without measuring, or raise the limit",
                               (unsigned long long)records, sizeof(memstub_replay_record),
                               lim[i].name, lim[i].shell, (unsigned long long)limit,
                               (unsigned long long)(need - records), (unsigned long long)room);
    if (need > room)
      return memstub_error_set(err, -ENOMEM,
                               "the stub needs %llu bytes of memory (%s %llu at its peak, "
                               "replay stack %llu, records %llu, malloc arena %llu); the "
                               "process's %s, %s) is "
                               "%llu bytes and it uses %llu already, leaving %llu",
                               (unsigned long long)need,
                               resident ? "heap, mapped and resident memory" : "heap",
                               (unsigned long long)heap,
                               (unsigned long long)stack, (unsigned long long)records,
                               (unsigned long long)arena,
                               lim[i].name, lim[i].shell, (unsigned long long)limit,
                               (unsigned long long)used, (unsigned long long)room);
  }
  return 0;
}

/* Refuse resident and mapped targets this machine's memory (phys bytes, 0
 * unknown) cannot hold, as the heap's: the highest resident target, the
 * largest mapping, and heap, mapping and resident memory beyond them at one
 * point with the replay stack (stack bytes). 0 or -ENOMEM naming the point,
 * its row of the trace and the original's figure there. */
static int check_resident(const struct memstub_stub *s, const figures *f, uint64_t phys,
                          int64_t stack, memstub_error *err) {
  if (!phys || f->space_at < 0) return 0;
  int64_t orig;
  if ((uint64_t)f->peak_rss > phys)
    return memstub_error_set(err, -ENOMEM,
                             "the stub needs %lld bytes resident at point %lld (row %lld of the "
                             "trace: rss_bytes %lld); this machine has %llu bytes of memory",
                             (long long)f->peak_rss, (long long)f->rss_at,
                             (long long)s->point[f->rss_at],
                             ms__add_i64(s->rss_base, f->peak_rss, &orig) < 0 ? (long long)f->peak_rss
                                                                             : (long long)orig,
                             (unsigned long long)phys);
  if ((uint64_t)f->peak_mapped > phys)
    return memstub_error_set(err, -ENOMEM,
                             "the stub needs %lld bytes of mapped memory at point %lld (row %lld "
                             "of the trace: mapped_bytes %lld); this machine has %llu bytes of "
                             "memory",
                             (long long)f->peak_mapped, (long long)f->mapped_at,
                             (long long)s->point[f->mapped_at],
                             ms__add_i64(s->mapped_base, f->peak_mapped, &orig) < 0
                                 ? (long long)f->peak_mapped
                                 : (long long)orig,
                             (unsigned long long)phys);
  if ((uint64_t)f->peak_space > phys || (uint64_t)f->peak_space + (uint64_t)stack > phys)
    return memstub_error_set(err, -ENOMEM,
                             "the stub needs %lld bytes of heap, mapped and resident memory at "
                             "point %lld (row %lld of the trace) and %lld of stack; this machine "
                             "has %llu bytes of memory",
                             (long long)f->peak_space, (long long)f->space_at,
                             (long long)s->point[f->space_at], (long long)stack,
                             (unsigned long long)phys);
  return 0;
}

int memstub_replay_check(const struct memstub_stub *s, const memstub_replay_options *o,
                         int64_t *stack_size, memstub_error *err) {
  memstub_replay_options def;
  o = MS__OPTIONS_OR(o, def, memstub_replay_options_init);
  int rc = check_options(o, err);
  if (rc < 0) return rc;
  if (!s) return memstub_error_set(err, -EINVAL, "no stub to replay");
  if (s->abi < MEMSTUB_STUB_ABI || s->abi > MEMSTUB_STUB_ABI_MODEL)
    return memstub_error_set(err, -EINVAL,
                             "the stub has data layout %d, this runtime replays layout %d "
                             "(regenerate the header with this memstub)",
                             (int)s->abi, MEMSTUB_STUB_ABI_MODEL);
  if (s->numdata < 0 || (s->numdata > 0 && (!s->use || !s->point)))
    return memstub_error_set(err, -EINVAL, "the stub has no points array (numdata %lld)",
                             (long long)s->numdata);
  if (s->norig < 1)
    return memstub_error_set(err, -EINVAL, "the stub maps to %lld original rows; needs at least 1",
                             (long long)s->norig);
  if (s->stack_base < 0 || s->heap_base < 0 || s->peak_stack < 0 || s->peak_heap < 0 ||
      s->max_depth < 0)
    return memstub_error_set(err, -EINVAL, "the stub's descriptor has negative sizes");
  if ((rc = memstub_stub_check(s, err)) < 0) return rc;
  if ((rc = ms__rt_work_check(s, err)) < 0) return rc;
  if ((rc = ms__rt_work_model_check(s, err)) < 0) return rc;
  if (ms__rt_stub_calls(s) && (rc = ms__rt_calls_check(s, err)) < 0) return rc;
  figures f;
  if ((rc = recompute(s, &f, err)) < 0) return rc;

  uint64_t phys = ms__prim_phys_mem();
  if (phys && (uint64_t)f.peak_heap > phys)
    return memstub_error_set(err, -ENOMEM,
                             "the stub needs %lld bytes of heap at its peak; this machine has "
                             "%llu bytes of memory",
                             (long long)f.peak_heap, (unsigned long long)phys);
  if (phys && (uint64_t)f.peak_stack > phys)
    return memstub_error_set(err, -ENOMEM,
                             "the stub needs %lld bytes of stack at its peak; this machine has "
                             "%llu bytes of memory",
                             (long long)f.peak_stack, (unsigned long long)phys);
  long page = ms__prim_page_size();
  int64_t size = 0;
  int bad = ms__add_i64(f.peak_stack, o->stack_extra, &size) < 0 ||
            f.max_depth > (INT64_MAX - size) / (FRAME_ESTIMATE + 32) ||
            ms__add_i64(size, f.max_depth * (FRAME_ESTIMATE + 32), &size) < 0 ||
            ms__add_i64(size, STACK_MARGIN + page, &size) < 0;
  if (!bad) size = (size + page - 1) / page * page;
  if (bad || (phys && (uint64_t)size > phys) || (uint64_t)size > SIZE_MAX / 2)
    return memstub_error_set(err, -ENOMEM,
                             "the stub needs a replay stack of more than %lld bytes (peak %lld "
                             "bytes in %lld frames); this machine has %llu bytes of memory",
                             bad ? (long long)INT64_MAX : (long long)size,
                             (long long)f.peak_stack, (long long)f.max_depth,
                             (unsigned long long)phys);
  if (phys && (uint64_t)f.peak_heap + (uint64_t)size > phys)
    return memstub_error_set(err, -ENOMEM,
                             "the stub needs %lld bytes of heap and %lld of stack; this machine "
                             "has %llu bytes of memory",
                             (long long)f.peak_heap, (long long)size, (unsigned long long)phys);
  if ((rc = check_resident(s, &f, phys, size, err)) < 0) return rc;
  uint64_t records = (uint64_t)memstub_replay_measure_bytes(s, o);
  if ((rc = check_measure_memory(s->numdata, records, err)) < 0) return rc;
  // Address space: the heap block, and the stub's own mappings beside it.
  int64_t space = f.peak_space > f.peak_heap ? f.peak_space : f.peak_heap;
  if ((rc = check_limits((uint64_t)space + MS__RT_HEAP_PAD, f.space_at >= 0, (uint64_t)size,
                         records, err)) < 0)
    return rc;
  if (stack_size) *stack_size = size;
  return 0;
}

typedef struct job {
  ms__rt_ctx c;
  void **scratch;
  int prep;  // heap preparation: 0 or -ENOMEM
} job;

// The replay of j, in the thread and on the stack it runs on.
static void replay_job(void *arg) {
  job *j = arg;
  /* The tcache is filled only for a replay that measures its heap
   * (mallinfo2 steady, heap.c): the fill is 512 mallocs and 512 frees the
   * component never made, and an observer counting the stub's calls
   * (heaptrack: 223 allocations for sort, 752 for its stub) saw them. */
  int fill = (j->c.measure & MEMSTUB_MEASURE_HEAP) != 0;
  j->prep = j->c.ops->prepare(&j->c, fill ? j->scratch : NULL, fill ? SCRATCH_POINTERS : 0);
  if (j->prep == 0) ms__rt_engine_run(&j->c);
  j->c.ops->release(&j->c);
}

static void *replay_thread(void *arg) {
  replay_job(arg);
  return NULL;
}

/* The replay of j on the calling thread, on a stack of stack_size bytes of
 * its own; no scheduler slice is asked for (it would stay the caller's). 0,
 * or a positive errno when the stack cannot be had (nothing ran). */
static int run_here(job *j, int64_t stack_size) {
  j->c.slice = 0;
  return -ms__rt_run_on_stack(replay_job, j, stack_size, j->c.page);
}

/* Wait until the replay thread th has ended; with a progress callback, report
 * the points begun (c->begun) every half second meanwhile, and all of them at
 * the end. 0, or the error number of pthread_join: then th may still run, and
 * nothing it uses may be freed. */
static int wait_replay(pthread_t th, const ms__rt_ctx *c, const memstub_replay_options *opt) {
  int joined = 0, rc;
  struct timespec ts;
  while (opt->progress && !joined && ms__prim_realtime_in(500000000, &ts) == 0) {
    rc = pthread_timedjoin_np(th, NULL, &ts);
    if (rc != 0 && rc != ETIMEDOUT) break;  // a time it refuses: th still runs, wait untimed
    if (rc == 0) joined = 1;
    else opt->progress(__atomic_load_n(&c->begun, __ATOMIC_RELAXED), c->n, opt->progress_arg);
  }
  if (!joined && (rc = pthread_join(th, NULL)) != 0) return rc;
  if (opt->progress) opt->progress(c->n, c->n, opt->progress_arg);
  return 0;
}

void memstub_replay_free(memstub_replay *r) {
  if (!r) return;
  ms__rt_own_free(r->rec);
  ms__rt_own_free(r->work);
  ms__rt_own_free(r);
}

/* The replay's records and the heap's scratch pointers: everything the replay
 * thread writes, reserved and written up front (huge pages asked for a large
 * record array, fewer TLB misses), so the replay takes no page fault for
 * them. 0 or -ENOMEM with err set. */
static int reserve(memstub_replay *r, job *j, const struct memstub_stub *s, memstub_error *err) {
  if (r->opt.measure && s->numdata > 0) {
    size_t bytes = (size_t)memstub_replay_measure_bytes(s, &r->opt);
    if ((uint64_t)s->numdata > SIZE_MAX / sizeof *r->rec ||
        !(r->rec = ms__rt_own_calloc((size_t)s->numdata, sizeof *r->rec)) ||
        ms__prim_prefault(r->rec, bytes, bytes >= ((size_t)2 << 20)) < 0) {
      char hint[256];
      limit_hint(hint, sizeof hint);
      return memstub_error_set(err, -ENOMEM,
                               "cannot reserve %llu bytes for the records of %lld points "
                               "(%zu bytes a point) before the replay: out of memory%s",
                               (unsigned long long)s->numdata * sizeof *r->rec,
                               (long long)s->numdata, sizeof *r->rec, hint);
    }
  }
  if (r->opt.measure && s->numdata > 0 && s->abi >= MEMSTUB_STUB_ABI_WORK && s->cpu) {  // work.c
    if ((uint64_t)s->numdata > SIZE_MAX / (MS__RT_WORK_REC * sizeof *r->work) ||
        !(r->work = ms__rt_own_calloc((size_t)s->numdata * MS__RT_WORK_REC, sizeof *r->work)))
      return memstub_error_set(err, -ENOMEM, "cannot reserve the work records of %lld points",
                               (long long)s->numdata);
  }
  j->scratch = ms__rt_own_calloc(SCRATCH_POINTERS, sizeof *j->scratch);
  if (!j->scratch) return memstub_error_set(err, -ENOMEM, "out of memory");
  ms__prim_prefault(j->scratch, SCRATCH_POINTERS * sizeof *j->scratch, 0);
  return 0;
}

// The engine's context for a replay of s with opt, measuring into r->rec.
void ms__rt_ctx_init(ms__rt_ctx *c, const struct memstub_stub *s,
                     const memstub_replay_options *opt, memstub_replay_record *rec) {
  c->use = s->use;
  c->n = s->numdata;
  if (s->abi >= MEMSTUB_STUB_ABI_RESIDENT && s->rss && s->mapped) {  // layouts 2 and 3
    c->res.rss = s->rss;
    c->res.mapped = s->mapped;
    c->res.n = s->numdata;
  }
  c->res.statm_fd = -1;
  c->res.rss0_common = -1;
  if (rec && (opt->measure & MEMSTUB_MEASURE_RESIDENT)) ms__rt_res_meter_open(&c->res);
  c->timing = opt->timing;
  c->measure = opt->measure;
  c->rec = rec;
  ms__rt_waiter_init(&c->waiter, opt->margin_ns, opt->reaim_ns);
  // The online cost model: online timing, unless the delays already carry a prediction.
  int cost = opt->cost_model == MEMSTUB_COST_ONLINE ||
             (opt->cost_model == MEMSTUB_COST_AUTO && opt->timing == MEMSTUB_TIMING_ONLINE &&
              !ms__rt_delays_predicted(s));
  ms__rt_cost_init(&c->cost, cost && opt->timing != MEMSTUB_TIMING_USLEEP);
  c->slice = opt->sched_slice_ns;
  c->sched_fd = -1;
  c->page = ms__prim_page_size();
  c->alloca_bias = ms__rt_alloca_bias();
  c->hook_next = -1;
  c->ops = ms__rt_replay_ops_for(s);
  c->stub = s;
  c->cpu0_at = -1;
  if (ms__rt_work_init(&c->work, s)) {
    ms__rt_work_rates(&c->work, opt);  // the work's calibrated rates and memory share
    // Deadline timing: the calls' cost, so their waits end that much early.
    if (opt->timing != MEMSTUB_TIMING_USLEEP && !opt->no_call_costs)
      ms__rt_work_costs(&c->work, opt->call_ns);
  }
}

/* Start the replay thread on a stack of stack_size bytes and wait for it.
 * 0; a positive pthread error when it cannot start (nothing runs); or a
 * negative one when the wait failed: then the thread may still write to j
 * and r, and both must be left to it, never freed. */
static int run_thread(job *j, int64_t stack_size, const memstub_replay_options *opt) {
  pthread_attr_t attr;
  pthread_t th;
  int rc = pthread_attr_init(&attr);
  if (rc != 0) return rc;
  if ((rc = pthread_attr_setstacksize(&attr, (size_t)stack_size)) == 0 &&
      (rc = pthread_attr_setguardsize(&attr, (size_t)j->c.page)) == 0)
    rc = pthread_create(&th, &attr, replay_thread, j);
  pthread_attr_destroy(&attr);
  if (rc != 0) return rc;
  rc = wait_replay(th, &j->c, opt);
  return rc ? -rc : 0;
}

void ms__rt_stop_reason(const ms__rt_ctx *c, const struct memstub_stub *s, char *buf, size_t cap) {
  int64_t x = c->failed_at, t = 0, n = c->failed_bytes;
  for (int64_t i = 0; i <= x; i++) t += s->use[i].time;
  char what[MEMSTUB_ERRMSG_MAX];
  int64_t orig;  // the original's figure at the row (the base plus the stub's)
  if (c->failed_what == MS__RT_FAIL_MAPPED)
    snprintf(what, sizeof what,
             "cannot map %lld bytes of mapped memory (the stub's own mapping, for mapped_bytes "
             "%lld)",
             (long long)n, ms__add_i64(s->mapped_base, n, &orig) < 0 ? (long long)n : (long long)orig);
  else if (c->failed_what == MS__RT_FAIL_RESIDENT)
    snprintf(what, sizeof what,
             "cannot hold the resident target of %lld bytes (rss_bytes %lld): the mapping that "
             "holds what lies beyond the heap block and the mapped memory cannot grow to %lld "
             "bytes",
             (long long)s->rss[x],
             ms__add_i64(s->rss_base, s->rss[x], &orig) < 0 ? (long long)s->rss[x] : (long long)orig,
             (long long)n);
  else if (c->failed_what == MS__RT_FAIL_DATA || c->failed_why[0])  // said where it stopped
    snprintf(what, sizeof what, "%s", c->failed_why);
  else if (c->failed_what == MS__RT_FAIL_CALL)
    snprintf(what, sizeof what, "a recorded call of %lld bytes that succeeded got no block",
             (long long)n);
  else
    snprintf(what, sizeof what, "cannot resize the heap block to %lld bytes", (long long)n);
  char hint[256];
  limit_hint(hint, sizeof hint);
  snprintf(buf, cap, "point %lld (row %lld of the trace, %lld ns after its start): stopped: %s: %s%s",
           (long long)x, (long long)s->point[x], (long long)t, what, strerror(-c->failed), hint);
}

/* Why a replay that ran stopped: heap preparation failed, or a point's
 * memory could not be had (ms__rt_stop_reason). 0 when it did not stop,
 * else a negative errno with err set. */
static int stopped(const job *j, const struct memstub_stub *s, memstub_error *err) {
  const ms__rt_ctx *c = &j->c;
  char msg[MEMSTUB_ERRMSG_MAX];
  if (j->prep < 0 && j->c.failed_why[0])  // the data file's calls, named there
    return memstub_error_set(err, j->prep, "while preparing the replay: %s", j->c.failed_why);
  if (j->prep < 0) {
    limit_hint(msg, sizeof msg);
    return memstub_error_set(err, j->prep, "out of memory while preparing the replay's heap%s",
                             msg);
  }
  if (c->failed >= 0) return 0;
  ms__rt_stop_reason(c, s, msg, sizeof msg);
  return memstub_error_set(err, c->failed, "%s", msg);
}

// What the replay r did, from the engine's context c, into r->info.
void ms__rt_fill_info(memstub_replay *r, const ms__rt_ctx *c, int64_t stack_size) {
  const struct memstub_stub *s = r->stub;
  const memstub_replay_options *opt = &r->opt;
  memstub_replay_info *in = &r->info;
  in->t0_ns = c->t0;
  int by_last = r->rec && (opt->measure & MEMSTUB_MEASURE_TIME) && s->numdata > 0;
  in->duration_ns = by_last ? r->rec[s->numdata - 1].end_ns : c->end - c->t0;
  for (int64_t i = 0; i < s->numdata; i++) in->target_ns += s->use[i].time;
  in->points = s->numdata;
  in->stack_size = stack_size;
  in->alloca_bias = c->alloca_bias;
  in->margin_ns = opt->timing == MEMSTUB_TIMING_USLEEP ? 0
                  : c->waiter.fixed >= 0          ? c->waiter.fixed
                                                  : ms__rt_margin_for(&c->waiter, c->waiter.reaim);
  in->reaim_ns = opt->timing != MEMSTUB_TIMING_USLEEP ? c->waiter.reaim : 0;
  // Over the span of duration_ns: to the last point's end when that is what it measures.
  int64_t cpu_end = by_last && c->cpu_last >= 0 ? c->cpu_last : c->cpu_end;
  in->cpu_ns = cpu_end >= 0 && c->cpu0 >= 0 ? cpu_end - c->cpu0 : -1;
  ms__rt_work_rebase(r->work, s->numdata, c->cpu0);
  in->run_delay_ns =
      c->run_delay_end >= 0 && c->run_delay0 >= 0 ? c->run_delay_end - c->run_delay0 : -1;
  in->run_delay_end = c->run_delay_end;
  in->sched_slice_ns = c->slice;
  in->cost_model = c->cost.on ? MEMSTUB_COST_ONLINE : MEMSTUB_COST_OFF;
  for (int k = 0; k < MS__RT_COST_SLOTS; k++) in->cost_rows += c->cost.n[k];
  in->cost_lead_ns = c->cost.lead_sum;
  in->work_ns = c->work.wdone;
  in->work_cpu_ns = c->work.wdone_ns;
  in->work_floor_ns = c->work.floor_ns;
  in->work_mem_share = c->work.cpu ? c->work.mem_share : 0;
  in->sleeps = c->sleeps;
  in->late_wakeups = c->late_wakeups;
  in->tcache = c->heap.tcache;
  in->heap_visible = c->heap.visible;
  in->heap_pad = MS__RT_HEAP_PAD;
  in->heap_fixups = c->heap.fixups;
  in->heap_stuck = c->heap.stuck;
  in->heap_unmaps = c->heap.unmaps;
  in->heap_trims = c->heap.trims;
  in->heap_baseline = c->heap_base;
  in->rss_entry_bytes = (opt->measure & MEMSTUB_MEASURE_RESIDENT) && c->res.rss0 >= 0
                            ? c->res.rss0
                            : -1;
  in->entry = c->entry;
  in->entry.run_delay_ns = c->run_delay0;
}

int memstub_replay_run(const struct memstub_stub *s, const memstub_replay_options *o,
                       memstub_replay **out, memstub_error *err) {
  return ms__rt_replay_run(s, o, out, 0, NULL, err);
}

ms__rt_start ms__rt_start_now(void) {
  return (ms__rt_start){ms__prim_now_ns(), ms__prim_thread_cpu_ns()};
}

int ms__rt_replay_run(const struct memstub_stub *s, const memstub_replay_options *o,
                      memstub_replay **out, int here, const ms__rt_start *at, memstub_error *err) {
  *out = NULL;
  memstub_replay_options opt;
  if (o) opt = *o;
  else memstub_replay_options_init(&opt);
  int64_t stack_size;
  int rc = memstub_replay_check(s, &opt, &stack_size, err);
  if (rc < 0) return rc;

  // The runtime's own memory (own.c): the stub's allocator calls are the component's.
  memstub_replay *r = ms__rt_own_calloc(1, sizeof *r);
  job *j = ms__rt_own_calloc(1, sizeof *j);
  if (r) r->stub = s, r->opt = opt;
  if (!r || !j) {
    rc = memstub_error_set(err, -ENOMEM, "out of memory");
    goto fail;
  }
  if ((rc = reserve(r, j, s, err)) < 0) goto fail;
  ms__rt_ctx_init(&j->c, s, &opt, r->rec);
  j->c.wrec = r->work;
  j->c.t0_at = at ? at->wall_ns : 0;
  j->c.cpu0_at = at && here ? at->cpu_ns : -1;  // the thread's clock: only on the caller's thread
  rc = here ? run_here(j, stack_size) : run_thread(j, stack_size, &opt);
  if (rc < 0)  // the thread may still write to j and r: both are left to it
    return memstub_error_set(err, rc, "cannot wait for the replay thread: %s", strerror(-rc));
  if (rc > 0) {
    ms__rt_res_release(&j->c.res);  // the thread never ran: statm is still open
    char hint[256];
    limit_hint(hint, sizeof hint);
    rc = memstub_error_set(err, rc == EAGAIN ? -EAGAIN : -ENOMEM,
                           "cannot start the replay %s with a stack of %lld bytes: %s%s",
                           here ? "on the calling thread" : "thread", (long long)stack_size,
                           strerror(rc), hint);
    goto fail;
  }
  if ((rc = stopped(j, s, err)) < 0) goto fail;
  ms__rt_fill_info(r, &j->c, stack_size);
  ms__rt_own_free(j->scratch);
  ms__rt_own_free(j);
  *out = r;
  return 0;

fail:
  if (j) ms__rt_own_free(j->scratch);
  ms__rt_own_free(j);
  memstub_replay_free(r);
  return rc;
}
