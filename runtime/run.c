// Running a replay: checks before it, the replay thread, and the results.
#include <errno.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

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
  o->timing = MEMSTUB_TIMING_DEADLINE;
  o->margin_ns = MEMSTUB_MARGIN_MODEL;
}

const char *memstub_timing_name(int timing) {
  return timing == MEMSTUB_TIMING_DEADLINE ? "deadline"
         : timing == MEMSTUB_TIMING_USLEEP ? "usleep"
                                           : NULL;
}

int memstub_timing_parse(const char *name, int *timing) {
  if (name && strcmp(name, "deadline") == 0) *timing = MEMSTUB_TIMING_DEADLINE;
  else if (name && strcmp(name, "usleep") == 0) *timing = MEMSTUB_TIMING_USLEEP;
  else return -EINVAL;
  return 0;
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
  if (o->measure & ~(unsigned)MEMSTUB_MEASURE_ALL)
    return memstub_error_set(err, -EINVAL, "measure: unknown bits 0x%x",
                             o->measure & ~(unsigned)MEMSTUB_MEASURE_ALL);
  if (o->stack_extra < 0)
    return memstub_error_set(err, -EINVAL, "stack_extra: %lld bytes is negative",
                             (long long)o->stack_extra);
  return 0;
}

// The figures the replay depends on, recomputed from the points: a
// hand-edited header's descriptor is not trusted to size the stack.
typedef struct figures {
  int64_t peak_stack, max_depth, peak_heap, duration;
} figures;

static int recompute(const struct memstub_stub *s, figures *f, memstub_error *err) {
  int64_t stack = 0, depth = 0, heap = 0, t = 0;
  memset(f, 0, sizeof *f);
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

/* Refuse a replay that the process's limits on memory cannot hold: the heap
 * block at its peak, the replay thread's stack and the records, beyond what
 * the process uses now (RLIMIT_AS, RLIMIT_DATA). RLIMIT_STACK bounds the main
 * thread's stack only: the replay thread's is mapped at the size asked for.
 * 0, or -ENOMEM naming the limit. */
static int check_limits(uint64_t heap, uint64_t stack, uint64_t records, memstub_error *err) {
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
    if (need > room)
      return memstub_error_set(err, -ENOMEM,
                               "the stub needs %llu bytes of memory (heap %llu at its peak, "
                               "replay stack %llu, records %llu, malloc arena %llu); the "
                               "process's %s, %s) is "
                               "%llu bytes and it uses %llu already, leaving %llu",
                               (unsigned long long)need, (unsigned long long)heap,
                               (unsigned long long)stack, (unsigned long long)records,
                               (unsigned long long)arena,
                               lim[i].name, lim[i].shell, (unsigned long long)limit,
                               (unsigned long long)used, (unsigned long long)room);
  }
  return 0;
}

int memstub_replay_check(const struct memstub_stub *s, const memstub_replay_options *o,
                         int64_t *stack_size, memstub_error *err) {
  memstub_replay_options def;
  if (!o) {
    memstub_replay_options_init(&def);
    o = &def;
  }
  int rc = check_options(o, err);
  if (rc < 0) return rc;
  if (!s) return memstub_error_set(err, -EINVAL, "no stub to replay");
  if (s->abi != MEMSTUB_STUB_ABI)
    return memstub_error_set(err, -EINVAL,
                             "the stub has data layout %d, this runtime replays layout %d "
                             "(regenerate the header with this memstub)",
                             (int)s->abi, MEMSTUB_STUB_ABI);
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
  uint64_t records =
      o->measure ? (uint64_t)s->numdata * (uint64_t)sizeof(memstub_replay_record) : 0;
  if ((rc = check_limits((uint64_t)f.peak_heap + MS__RT_HEAP_PAD, (uint64_t)size, records, err)) <
      0)
    return rc;
  if (stack_size) *stack_size = size;
  return 0;
}

typedef struct job {
  ms__rt_ctx c;
  void **scratch;
  int prep;  // heap preparation: 0 or -ENOMEM
} job;

static void *replay_thread(void *arg) {
  job *j = arg;
  j->prep = ms__rt_heap_prepare(&j->c.heap, j->scratch, SCRATCH_POINTERS);
  if (j->prep == 0) ms__rt_engine_run(&j->c);
  ms__rt_heap_release(&j->c.heap);
  return NULL;
}

/* Wait until the replay thread th has ended; with a progress callback, report
 * the points begun (c->begun) every half second meanwhile, and all of them at
 * the end. 0, or the error number of pthread_join: then th may still run, and
 * nothing it uses may be freed. */
static int wait_replay(pthread_t th, const ms__rt_ctx *c, const memstub_replay_options *opt) {
  int joined = 0, rc;
  struct timespec ts;
  while (opt->progress && !joined && clock_gettime(CLOCK_REALTIME, &ts) == 0) {
    ts.tv_nsec += 500000000;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
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
  free(r->rec);
  free(r);
}

int memstub_replay_run(const struct memstub_stub *s, const memstub_replay_options *o,
                       memstub_replay **out, memstub_error *err) {
  *out = NULL;
  memstub_replay_options opt;
  if (o) opt = *o;
  else memstub_replay_options_init(&opt);
  int64_t stack_size;
  char hint[256];  // the limits on memory, for an error
  int rc = memstub_replay_check(s, &opt, &stack_size, err);
  if (rc < 0) return rc;

  memstub_replay *r = calloc(1, sizeof *r);
  job *j = calloc(1, sizeof *j);
  if (!r || !j) goto nomem;
  r->stub = s;
  r->opt = opt;
  // Everything the replay thread writes is reserved, and touched, up front.
  if (opt.measure && s->numdata > 0) {
    if ((uint64_t)s->numdata > SIZE_MAX / sizeof *r->rec) goto nomem;
    r->rec = malloc((size_t)s->numdata * sizeof *r->rec);
    if (!r->rec) goto nomem;
    memset(r->rec, 0, (size_t)s->numdata * sizeof *r->rec);
  }
  j->scratch = malloc(SCRATCH_POINTERS * sizeof *j->scratch);
  if (!j->scratch) goto nomem;
  memset(j->scratch, 0, SCRATCH_POINTERS * sizeof *j->scratch);

  ms__rt_ctx *c = &j->c;
  c->use = s->use;
  c->n = s->numdata;
  c->timing = opt.timing;
  c->measure = opt.measure;
  c->rec = r->rec;
  ms__rt_waiter_init(&c->waiter, opt.margin_ns, opt.reaim_ns);
  c->slice = opt.sched_slice_ns;
  c->sched_fd = -1;
  c->page = ms__prim_page_size();
  c->alloca_bias = ms__rt_alloca_bias();

  pthread_attr_t attr;
  pthread_t th;
  if ((rc = pthread_attr_init(&attr)) != 0) goto thread_failed;
  if ((rc = pthread_attr_setstacksize(&attr, (size_t)stack_size)) == 0 &&
      (rc = pthread_attr_setguardsize(&attr, (size_t)c->page)) == 0)
    rc = pthread_create(&th, &attr, replay_thread, j);
  pthread_attr_destroy(&attr);
  if (rc != 0) goto thread_failed;
  if ((rc = wait_replay(th, c, &opt)) != 0)
    // The thread may still write to j and r: both are left to it, never freed.
    return memstub_error_set(err, -rc, "cannot wait for the replay thread: %s", strerror(rc));

  if (j->prep < 0) {
    limit_hint(hint, sizeof hint);
    rc = memstub_error_set(err, j->prep, "out of memory while preparing the replay's heap%s",
                           hint);
    goto fail;
  }
  if (c->failed < 0) {
    // The point, its row of the original trace and its time there.
    int64_t size = 0, t = 0;
    for (int64_t i = 0; i <= c->failed_at; i++) {
      size += s->use[i].heapAlloc;
      if (size < 0) size = 0;
      t += s->use[i].time;
    }
    limit_hint(hint, sizeof hint);
    rc = memstub_error_set(err, c->failed,
                           "point %lld (row %lld of the trace, %lld ns after its start): "
                           "stopped: cannot resize the heap block to %lld bytes: %s%s",
                           (long long)c->failed_at, (long long)s->point[c->failed_at],
                           (long long)t, (long long)size, strerror(-c->failed), hint);
    goto fail;
  }
  memstub_replay_info *in = &r->info;
  in->t0_ns = c->t0;
  in->duration_ns = r->rec && (opt.measure & MEMSTUB_MEASURE_TIME) && s->numdata > 0
                        ? r->rec[s->numdata - 1].end_ns
                        : c->end - c->t0;
  for (int64_t i = 0; i < s->numdata; i++) in->target_ns += s->use[i].time;
  in->points = s->numdata;
  in->stack_size = stack_size;
  in->alloca_bias = c->alloca_bias;
  in->margin_ns = opt.timing != MEMSTUB_TIMING_DEADLINE ? 0
                  : c->waiter.fixed >= 0          ? c->waiter.fixed
                                                  : ms__rt_margin_for(&c->waiter, c->waiter.reaim);
  in->reaim_ns = opt.timing == MEMSTUB_TIMING_DEADLINE ? c->waiter.reaim : 0;
  in->cpu_ns = c->cpu_end >= 0 && c->cpu0 >= 0 ? c->cpu_end - c->cpu0 : -1;
  in->run_delay_ns =
      c->run_delay_end >= 0 && c->run_delay0 >= 0 ? c->run_delay_end - c->run_delay0 : -1;
  in->run_delay_end = c->run_delay_end;
  in->sched_slice_ns = c->slice;
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
  in->entry = c->entry;
  in->entry.run_delay_ns = c->run_delay0;
  free(j->scratch);
  free(j);
  *out = r;
  return 0;

thread_failed:
  limit_hint(hint, sizeof hint);
  rc = memstub_error_set(err, rc == EAGAIN ? -EAGAIN : -ENOMEM,
                         "cannot start the replay thread with a stack of %lld bytes: %s%s",
                         (long long)stack_size, strerror(rc), hint);
  goto fail;
nomem:
  rc = memstub_error_set(err, -ENOMEM, "out of memory reserving the replay's records");
fail:
  if (j) free(j->scratch);
  free(j);
  memstub_replay_free(r);
  return rc;
}

/* ---- the replayed trace ---------------------------------------------------- */

static int set_meta(memstub_trace *t, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int set_meta(memstub_trace *t, const char *key, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return memstub_trace_set_meta(t, key, buf);
}

static int add_meta(memstub_trace *t, const memstub_replay *r, int64_t clamped) {
  const struct memstub_stub *s = r->stub;
  const memstub_replay_info *in = &r->info;
  struct utsname u;
  if (uname(&u) != 0) snprintf(u.release, sizeof u.release, "unknown");
  char date[64] = "unknown";
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm)) strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  char margin[64];
  if (r->opt.timing != MEMSTUB_TIMING_DEADLINE)
    snprintf(margin, sizeof margin, "none");
  else if (r->opt.margin_ns == MEMSTUB_MARGIN_ADAPTIVE)
    snprintf(margin, sizeof margin, "adaptive, %lld ns at the end, re-aim %lld ns",
             (long long)in->margin_ns, (long long)in->reaim_ns);
  else if (r->opt.margin_ns == MEMSTUB_MARGIN_MODEL)
    snprintf(margin, sizeof margin, "model, %lld ns after a re-aim of %lld ns",
             (long long)in->margin_ns, (long long)in->reaim_ns);
  else
    snprintf(margin, sizeof margin, "%lld ns", (long long)in->margin_ns);
  static const char *tc[] = {"unknown (mallinfo2 does not see the allocator)",
                             "active, a bin would not fill", "off", "active, filled"};
  int rc = 0;
  if (!rc) rc = set_meta(t, "source", "memstub replay of %s", s->source ? s->source : "(memory)");
  if (!rc) rc = set_meta(t, "stub", "%s", s->name && *s->name ? s->name : "(unnamed)");
  if (!rc) rc = set_meta(t, "transforms", "%s", s->transforms ? s->transforms : "none");
  if (!rc) rc = set_meta(t, "calibration", "%s", s->calibration ? s->calibration : "none");
  if (!rc) rc = set_meta(t, "timing", "%s", memstub_timing_name(r->opt.timing));
  if (!rc) rc = set_meta(t, "margin", "%s", margin);
  if (!rc) rc = set_meta(t, "duration_ns", "%lld (target %lld)", (long long)in->duration_ns,
                         (long long)in->target_ns);
  if (!rc && in->cpu_ns >= 0)
    rc = set_meta(t, "cpu_ns", "%lld (%.2f %% of the duration)", (long long)in->cpu_ns,
                  in->duration_ns > 0 ? 100.0 * (double)in->cpu_ns / (double)in->duration_ns : 0.0);
  if (!rc && in->run_delay_ns >= 0)
    rc = set_meta(t, "off_cpu_ns", "%lld (the replay thread waited this long for a CPU)",
                  (long long)in->run_delay_ns);
  if (!rc) rc = set_meta(t, "points", "%lld", (long long)in->points);
  if (!rc) rc = set_meta(t, "stack_size", "%lld", (long long)in->stack_size);
  if (!rc) rc = set_meta(t, "tcache", "%s", tc[in->tcache + 2]);
  if (!rc) rc = set_meta(t, "heap_pad", "%lld", (long long)in->heap_pad);
  if (!rc && clamped) rc = set_meta(t, "heap_clamped_rows", "%lld", (long long)clamped);
  if (!rc) rc = set_meta(t, "host.cpu", "%s", ms__prim_cpu_model());
  if (!rc) rc = set_meta(t, "host.kernel", "%s %s", u.sysname, u.release);
  if (!rc) rc = set_meta(t, "host.libc", "glibc %s", gnu_get_libc_version());
  if (!rc) rc = set_meta(t, "host.compiler", "%s", __VERSION__);
  if (!rc) rc = set_meta(t, "replayed", "%s", date);
  return rc;
}

/* The replayed totals of a row: the bases plus what p measured, ending at
 * `end` ns (scheduled at `target`). -ERANGE when a total leaves 64 bits: a
 * hand-edited header's bases, or a start time near 2^63. */
static int absolute(const struct memstub_stub *s, const memstub_replay_record *p, int64_t end,
                    int64_t target, int64_t v[4]) {
  return ms__add_i64(s->time0_ns, end, &v[0]) < 0 ||
                 ms__add_i64(s->stack_base, p->stack_bytes, &v[1]) < 0 ||
                 ms__add_i64(s->heap_base, p->heap_bytes, &v[2]) < 0 ||
                 ms__add_i64(s->time0_ns, target, &v[3]) < 0 ||
                 __builtin_sub_overflow(v[0], v[3], &end)
             ? -ERANGE
             : 0;
}

int memstub_replay_trace(const memstub_replay *r, memstub_trace **out, memstub_error *err) {
  *out = NULL;
  const unsigned need = MEMSTUB_MEASURE_TIME | MEMSTUB_MEASURE_STACK | MEMSTUB_MEASURE_HEAP;
  if ((r->opt.measure & need) != need)
    return memstub_error_set(err, -EINVAL,
                             "the replay was not measured: a replayed trace needs time, stack "
                             "and heap measurements");
  const struct memstub_stub *s = r->stub;
  int sched = (r->opt.measure & MEMSTUB_MEASURE_SCHED) != 0;
  memstub_trace *t = memstub_trace_create();
  int64_t *next = NULL;  // SCHED: next[i], the first run-queue reading at a point >= i
  int rc = t ? 0 : -ENOMEM;
  int ip = -1, it = -1, il = -1, iw = -1, ik = -1, io = -1;
  if (!rc && (ip = memstub_trace_add_column(t, "point")) < 0) rc = ip;
  if (!rc && (it = memstub_trace_add_column(t, "target_time_ns")) < 0) rc = it;
  if (!rc && (il = memstub_trace_add_column(t, "late_ns")) < 0) rc = il;
  if (!rc && (iw = memstub_trace_add_column(t, "wake_late_ns")) < 0) rc = iw;
  if (!rc && (ik = memstub_trace_add_column(t, "work_ns")) < 0) rc = ik;
  if (!rc && sched && (io = memstub_trace_add_column(t, "off_cpu_ns")) < 0) rc = io;
  if (!rc && sched) {
    next = malloc((size_t)(s->numdata + 1) * sizeof *next);
    if (!next) rc = -ENOMEM;
    else {
      next[s->numdata] = r->info.run_delay_end;
      for (int64_t i = s->numdata - 1; i >= 0; i--)
        next[i] = r->rec[i].run_delay_ns >= 0 ? r->rec[i].run_delay_ns : next[i + 1];
    }
  }
  // A row per point at most, and the entry: a hand-edited norig is not trusted.
  int64_t rows = s->norig <= s->numdata ? s->norig : s->numdata + 1;
  if (!rc) rc = memstub_trace_reserve(t, (size_t)rows);
  int64_t clamped = 0, row = 0, v[4];  // time, stack, heap, target time
  // Row 0 from the entry measurement unless points build it.
  if (!rc && !(s->numdata > 0 && s->point[0] == 0)) {
    const memstub_replay_record *e = &r->info.entry;
    rc = absolute(s, e, 0, 0, v);
    if (!rc && v[2] < 0) clamped++, v[2] = 0;
    if (!rc) rc = memstub_trace_append(t, v[0], v[1], v[2]);
    if (!rc) {
      int64_t *x = memstub_trace_extra_row(t, t->n - 1);
      x[ip] = 0;
      x[it] = s->time0_ns;
      x[il] = 0;
      x[iw] = 0;
      x[ik] = 0;
      if (sched) x[io] = 0;
    }
  }
  // The run-queue reading before the current row's wait (the latest at or
  // before its first point), cumulative.
  int64_t latest = r->info.entry.run_delay_ns, before = latest, first = 0;
  for (int64_t i = 0; !rc && i < s->numdata; i++) {
    if (i > 0 && s->point[i] != s->point[i - 1]) first = i;  // the row's first point
    if (r->rec[i].run_delay_ns >= 0) latest = r->rec[i].run_delay_ns;
    if (i == first) before = latest;
    if (i + 1 < s->numdata && s->point[i + 1] == s->point[i]) continue;  // not the row's last
    const memstub_replay_record *p = &r->rec[i], *f = &r->rec[first];
    row = s->point[i];
    rc = absolute(s, p, p->end_ns, p->target_ns, v);
    if (!rc && v[2] < 0) clamped++, v[2] = 0;
    if (!rc) rc = memstub_trace_append(t, v[0], v[1], v[2]);
    if (!rc) {
      int64_t *x = memstub_trace_extra_row(t, t->n - 1);
      x[ip] = row;
      x[it] = v[3];
      x[il] = v[0] - v[3];
      x[iw] = f->start_ns - f->target_ns;
      x[ik] = p->end_ns - f->start_ns;
      // From the row's wait to the next sleep after it (or the end).
      if (sched) x[io] = before >= 0 && next[i + 1] >= before ? next[i + 1] - before : -1;
    }
  }
  free(next);
  if (!rc) rc = add_meta(t, r, clamped);
  if (rc < 0) {
    memstub_trace_free(t);
    if (rc == -ERANGE)
      return memstub_error_set(err, -EINVAL,
                               "cannot build the replayed trace: row %lld: the stub's time0_ns, "
                               "stack_base or heap_base plus what was measured exceeds 64 bits",
                               (long long)row);
    return memstub_error_set(err, rc, "cannot build the replayed trace: %s", strerror(-rc));
  }
  *out = t;
  return 0;
}

int memstub_replay_write(const memstub_replay *r, const char *path, memstub_error *err) {
  memstub_trace *t;
  int rc = memstub_replay_trace(r, &t, err);
  if (rc < 0) return rc;
  rc = memstub_trace_write(t, path, err);
  memstub_trace_free(t);
  return rc;
}

/* ---- function entry points ------------------------------------------------- */

// Write the replayed trace to path, a new file: never replaces one.
static int write_new(const memstub_replay *r, const char *path, memstub_error *err) {
  memstub_trace *t;
  int rc = memstub_replay_trace(r, &t, err);
  if (rc < 0) return rc;
  ms__afile af;
  if ((rc = ms__afile_open(&af, path, err)) < 0) {
    memstub_trace_free(t);
    return rc;
  }
  if (memstub_trace_fwrite(t, af.f) < 0) {
    int e = errno ? errno : EIO;
    ms__afile_abort(&af);
    memstub_trace_free(t);
    return memstub_error_set(err, -e, "%s: cannot write: %s", path, strerror(e));
  }
  memstub_trace_free(t);
  if ((rc = ms__afile_commit_new(&af, err)) == -EEXIST)
    memstub_error_set(err, rc,
                      "MEMSTUB_MEASURE: %s exists already (another stub's measurement, or an "
                      "earlier run's); not replaced",
                      path);
  return rc;
}

void memstub_replay_options_for(memstub_replay_options *o, const struct memstub_stub *s) {
  memstub_replay_options_init(o);
  if (s->timing == MEMSTUB_TIMING_USLEEP) o->timing = MEMSTUB_TIMING_USLEEP;
}

/* The calls of memstub_stub_call in this process, for %c: every call, of
 * any stub in any thread, takes the next number (from 1). */
static int64_t stub_calls;

// A stub's name as it goes into a file name: [A-Za-z0-9_.-], others as '_'.
static void name_part(const struct memstub_stub *s, char *buf, size_t cap) {
  const char *n = s->name && *s->name ? s->name : "stub";
  size_t i = 0;
  for (; n[i] && i + 1 < cap; i++) {
    char ch = n[i];
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '_' || ch == '-' || (ch == '.' && i > 0);
    buf[i] = ok ? ch : '_';
  }
  buf[i] = '\0';
}

int memstub_measure_path(const char *tmpl, const char *name, long pid, int64_t call, char **out,
                         memstub_error *err) {
  *out = NULL;
  struct memstub_stub tmp = {0};
  tmp.name = name;
  char nm[256], num[48];
  name_part(&tmp, nm, sizeof nm);
  size_t len = strlen(tmpl), cap = len + 1;
  int fields = 0;
  // Room: every field at most max(sizeof nm, sizeof num) bytes, plus the suffix.
  cap += (len / 2 + 3) * sizeof nm + 8;
  char *buf = malloc(cap), *w = buf;
  if (!buf) return memstub_error_set(err, -ENOMEM, "MEMSTUB_MEASURE: out of memory");
  for (const char *p = tmpl; *p; p++) {
    if (*p != '%') {
      *w++ = *p;
      continue;
    }
    const char *f = NULL;
    switch (p[1]) {
      case 'p': snprintf(num, sizeof num, "%ld", pid), f = num; break;
      case 'c': snprintf(num, sizeof num, "%lld", (long long)call), f = num; break;
      case 'n': f = nm; break;
      case '%': f = "%"; break;
      default:
        free(buf);
        return memstub_error_set(err, -EINVAL,
                                 "MEMSTUB_MEASURE: '%s': column %d: unknown field '%%%.1s' "
                                 "(%%p pid, %%n stub name, %%c call number, %%%% a %%)",
                                 tmpl, (int)(p - tmpl) + 1, p[1] ? p + 1 : "");
    }
    if (p[1] != '%') fields++;
    size_t n = strlen(f);
    memcpy(w, f, n);
    w += n;
    p++;
  }
  *w = '\0';
  // No field: the default suffix, unless the variable names standard output or
  // an existing device or FIFO (written in place, shared by every stub).
  struct stat st;
  int special = strcmp(tmpl, "-") == 0 ||
                (stat(buf, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
  if (!fields && !special)
    snprintf(w, cap - (size_t)(w - buf), ".%s.%ld.%lld", nm, pid, (long long)call);
  *out = buf;
  return 0;
}

int memstub_stub_call(const struct memstub_stub *s, memstub_error *err) {
  memstub_replay_options o;
  memstub_replay_options_for(&o, s);
  const char *v = getenv("MEMSTUB_TIMING");
  if (v && *v && memstub_timing_parse(v, &o.timing) < 0)
    return memstub_error_set(err, -EINVAL, "MEMSTUB_TIMING: '%s' is neither deadline nor usleep",
                             v);
  v = getenv("MEMSTUB_MARGIN_NS");
  if (v && *v && memstub_margin_parse(v, &o.margin_ns) < 0)
    return memstub_error_set(err, -EINVAL,
                             "MEMSTUB_MARGIN_NS: '%s' is none of model, adaptive or a number "
                             "of ns >= 0",
                             v);
  const char *measure = getenv("MEMSTUB_MEASURE");
  char *path = NULL;
  int rc = 0;
  if (measure && *measure) {
    // The file name is fixed, and checked, before the replay.
    int64_t call = __atomic_add_fetch(&stub_calls, 1, __ATOMIC_RELAXED);
    if ((rc = memstub_measure_path(measure, s ? s->name : NULL, (long)getpid(), call, &path,
                                   err)) < 0)
      return rc;
    o.measure = MEMSTUB_MEASURE_TRACE;
    // A name already taken, or a directory that is not there, fails before
    // the replay, not after it (the write checks again, atomically).
    struct stat st;
    char *slash = strrchr(path, '/');
    if (slash) *slash = '\0';
    int nodir = slash && path[0] && stat(path, &st) != 0, e = errno;
    if (slash) *slash = '/';
    if (nodir)
      rc = memstub_error_set(err, -e, "MEMSTUB_MEASURE: %s: cannot write: %s", path,
                             strerror(e));
    else if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
      rc = memstub_error_set(err, -EEXIST,
                             "MEMSTUB_MEASURE: %s exists already (another stub's measurement, "
                             "or an earlier run's); not replaced",
                             path);
    if (rc < 0) {
      free(path);
      return rc;
    }
  }
  memstub_replay *r;
  rc = memstub_replay_run(s, &o, &r, err);
  if (rc < 0) {
    free(path);
    return rc;
  }
  if (path) rc = write_new(r, path, err);
  memstub_replay_free(r);
  free(path);
  return rc;
}
