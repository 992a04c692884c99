/* recorder/probe.c: the probe API (memstub/probe.h). Under the recorder the
 * calls are forwarded to it (recorder/bridge.h); without it the probe does
 * nothing but count the regions, unless asked to measure
 * ($MEMSTUB_PROBE_OUTPUT, memstub_probe_measure): then it takes the paper's
 * measuring points itself (stack pointer, the allocator's bytes from
 * mallinfo2() and a timestamp) into an mmap'd buffer, written as a trace at
 * exit to the path asked for, or by memstub_probe_write. */
#include "memstub/probe.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memstub/trace.h"
#include "ms_common.h"
#include "prim.h"
#include "bridge.h"

/* What heap_bytes holds in the probe's own trace (metadata heap_measure):
 * not memstub record's measure. */
#define MS__PROBE_HEAP_MEASURE                                                                 \
  "allocator bytes (mallinfo2 uordblks + hblkhd: what the allocator holds for the whole "    \
  "process, chunk headers and rounding included, mmapped blocks whole), not the bytes "       \
  "requested that memstub record's heap_bytes counts"

typedef struct ppoint {
  int64_t t, stack, heap, region;
} ppoint;

static struct {
  pthread_mutex_t lock;
  int resolved;  // 0 not yet, 1 recorder, -1 standalone
  ms__recorder_probe_fn rec;
  int measuring;        // standalone: asked to take measuring points
  char out[PATH_MAX];   // standalone: where they go at exit ("" nowhere)
  pthread_t owner;
  int owned;
  int depth;
  int64_t occurrence;
  uintptr_t base;
  int64_t t0;  // the first point, CLOCK_MONOTONIC ns
  int need_t0;
  ppoint *pts;
  size_t n, cap;
  uint64_t dropped;
  int atexit_done;
} P = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Under the recorder, or standalone; standalone, $MEMSTUB_PROBE_OUTPUT asks
 * for the measuring points and names their file. Called locked. */
static void resolve(void) {
  if (P.resolved) return;
  ms__recorder_probe_fn f = (ms__recorder_probe_fn)dlsym(RTLD_DEFAULT, MS__RECORDER_PROBE_SYMBOL);
  if (f && f(MS__PROBE_HELLO, NULL, 0) == 1) {
    P.rec = f;
    P.resolved = 1;
    return;
  }
  P.resolved = -1;
  const char *out = getenv("MEMSTUB_PROBE_OUTPUT");
  if (out && *out && strlen(out) < sizeof P.out) {
    snprintf(P.out, sizeof P.out, "%s", out);
    P.measuring = 1;
  }
}

static int64_t heap_in_use(void) { return ms__prim_heap_in_use(); }

// Room for one more point (mmap, so the heap being measured is untouched).
static int reserve_one(void) {
  if (P.n < P.cap) return 0;
  size_t cap = P.cap ? P.cap * 2 : 65536;
  ppoint *np = mmap(NULL, cap * sizeof(ppoint), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (np == MAP_FAILED) return -ENOMEM;
  if (P.pts) {
    memcpy(np, P.pts, P.n * sizeof(ppoint));
    munmap(P.pts, P.cap * sizeof(ppoint));
  }
  P.pts = np;
  P.cap = cap;
  return 0;
}

static void take(uintptr_t sp) {
  // Heap first: mallinfo2() takes the arena locks and is the slow part.
  int64_t heap = heap_in_use();
  int64_t t = ms__prim_now_ns();
  if (P.need_t0) {
    P.t0 = t;
    P.need_t0 = 0;
  }
  if (reserve_one() < 0) {
    P.dropped++;
    return;
  }
  int64_t s = (int64_t)(P.base - sp);
  P.pts[P.n++] = (ppoint){t - P.t0, s < 0 ? 0 : s, heap, P.occurrence};
}

// At exit, the points to the file asked for (none asked: nothing written).
static void write_at_exit(void) {
  if (P.resolved == -1 && P.n > 0 && P.out[0]) (void)memstub_probe_write(P.out, NULL);
}

// Standalone calls come from the owning thread only. Called locked.
static int claim(void) {
  if (!P.owned) {
    P.owner = pthread_self();
    P.owned = 1;
    return 0;
  }
  return pthread_equal(P.owner, pthread_self()) ? 0 : -EPERM;
}

/* A probe call (op: MS__PROBE_BEGIN, _POINT or _END, at the caller's stack
 * pointer sp): the recorder's answer when it runs in the process (it takes
 * the same ops), else the standalone probe's: the depth after BEGIN, the
 * depth at a POINT, the depth left after END (-EINVAL with no region open),
 * -EPERM from a thread other than the first that called. */
static int probe(int op, const char *name, uintptr_t sp) {
  pthread_mutex_lock(&P.lock);
  resolve();
  if (P.resolved == 1) {
    pthread_mutex_unlock(&P.lock);
    return P.rec(op, name, sp);
  }
  int rc = claim();
  if (rc == 0 && op == MS__PROBE_BEGIN) {
    if (P.depth == 0) {
      if (P.n == 0 && P.occurrence == 0) P.need_t0 = 1;
      P.occurrence++;
      P.base = sp;
      if (P.measuring && !P.atexit_done) P.atexit_done = atexit(write_at_exit) == 0;
    }
    rc = ++P.depth;
    if (P.measuring) take(sp);
  } else if (rc == 0 && op == MS__PROBE_POINT) {
    rc = P.depth;
    if (P.depth > 0 && P.measuring) take(sp);
  } else if (rc == 0) {  // MS__PROBE_END
    if (P.depth == 0) {
      rc = -EINVAL;
    } else {
      if (P.measuring) take(sp);
      rc = --P.depth;
    }
  }
  pthread_mutex_unlock(&P.lock);
  return rc;
}

int memstub_probe_begin(const char *name) { return probe(MS__PROBE_BEGIN, name, MS__CALLER_SP()); }

int memstub_probe_point(void) { return probe(MS__PROBE_POINT, NULL, MS__CALLER_SP()); }

int memstub_probe_end(void) { return probe(MS__PROBE_END, NULL, MS__CALLER_SP()); }

int memstub_probe_recording(void) {
  pthread_mutex_lock(&P.lock);
  resolve();
  int r = P.resolved == 1;
  pthread_mutex_unlock(&P.lock);
  return r;
}

int memstub_probe_measure(const char *path) {
  pthread_mutex_lock(&P.lock);
  resolve();
  int rc = P.resolved == 1 ? 1 : 0;
  if (rc == 0 && path && strlen(path) >= sizeof P.out) rc = -ENAMETOOLONG;
  if (rc == 0) {
    if (!P.measuring && P.n == 0) P.need_t0 = 1;  // time from the first point taken
    P.measuring = 1;
    snprintf(P.out, sizeof P.out, "%s", path ? path : "");
    // An open region's points start at its next call; the exit writes them.
    if (P.out[0] && P.depth > 0 && !P.atexit_done) P.atexit_done = atexit(write_at_exit) == 0;
  }
  pthread_mutex_unlock(&P.lock);
  return rc;
}

int memstub_probe_write(const char *path, memstub_error *err) {
  pthread_mutex_lock(&P.lock);
  resolve();
  if (P.resolved == 1 || P.n == 0) {
    int rec = P.resolved == 1, asked = P.measuring;
    pthread_mutex_unlock(&P.lock);
    return memstub_error_set(err, -ENODATA, "probe: no measuring points to write%s",
                             rec     ? " (the recorder writes the trace)"
                             : asked ? ""
                                     : " (the probe measures only when asked: "
                                       "MEMSTUB_PROBE_OUTPUT=FILE or memstub_probe_measure())");
  }
  if (!path) path = P.out;
  if (!*path) {
    pthread_mutex_unlock(&P.lock);
    return memstub_error_set(err, -EINVAL, "probe: no file to write the points to (give one, or "
                             "set MEMSTUB_PROBE_OUTPUT=FILE)");
  }
  memstub_trace *t = memstub_trace_create();
  int rc = t ? 0 : -ENOMEM;
  int col = rc == 0 ? memstub_trace_add_column(t, "region") : -1;
  if (col < 0 && rc == 0) rc = col;
  char buf[64];
  if (rc == 0) rc = memstub_trace_set_meta(t, "source", "memstub-probe");
  // heap_bytes here is not memstub record's (the bytes requested): say what it is.
  if (rc == 0)
    rc = memstub_trace_set_meta(t, "heap_measure", MS__PROBE_HEAP_MEASURE);
  if (rc == 0)
    rc = memstub_trace_set_meta(t, "probe.stack_from",
                                "the frame that called the outermost memstub_probe_begin");
  snprintf(buf, sizeof buf, "%lld", (long long)P.occurrence);
  if (rc == 0) rc = memstub_trace_set_meta(t, "probe.occurrences", buf);
  if (rc == 0 && P.dropped) {
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)P.dropped);
    rc = memstub_trace_set_meta(t, "probe.dropped_points", buf);
  }
  if (rc == 0) rc = memstub_trace_reserve(t, P.n);
  int64_t last = 0;
  for (size_t i = 0; i < P.n && rc == 0; i++) {
    int64_t tt = P.pts[i].t < last ? last : P.pts[i].t;
    last = tt;
    rc = memstub_trace_append(t, tt, P.pts[i].stack, P.pts[i].heap);
    if (rc == 0) memstub_trace_extra_row(t, t->n - 1)[col] = P.pts[i].region;
  }
  if (rc == 0)
    rc = memstub_trace_write(t, path, err);
  else
    memstub_error_set(err, rc, "probe: out of memory");
  memstub_trace_free(t);
  if (rc == 0) P.n = 0;
  pthread_mutex_unlock(&P.lock);
  return rc;
}
