/* recorder/probe.c: the probe API (memstub/probe.h). Under the recorder the
 * calls are forwarded to it (recorder/bridge.h); without it the probe
 * takes the paper's measuring points itself: stack pointer, mallinfo2() and a
 * timestamp, into an mmap'd buffer written as a trace at exit. */
#include "memstub/probe.h"

#include <dlfcn.h>
#include <errno.h>
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

typedef struct ppoint {
  int64_t t, stack, heap, region;
} ppoint;

static struct {
  pthread_mutex_t lock;
  int resolved;  // 0 not yet, 1 recorder, -1 standalone
  ms__recorder_probe_fn rec;
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

static void resolve(void) {
  if (P.resolved) return;
  ms__recorder_probe_fn f = (ms__recorder_probe_fn)dlsym(RTLD_DEFAULT, MS__RECORDER_PROBE_SYMBOL);
  if (f && f(MS__PROBE_HELLO, NULL, 0) == 1) {
    P.rec = f;
    P.resolved = 1;
  } else {
    P.resolved = -1;
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

static void write_at_exit(void) {
  if (P.resolved == -1 && P.n > 0) (void)memstub_probe_write(NULL, NULL);
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

int memstub_probe_begin(const char *name) {
  uintptr_t sp = MS__CALLER_SP();
  pthread_mutex_lock(&P.lock);
  resolve();
  if (P.resolved == 1) {
    pthread_mutex_unlock(&P.lock);
    return P.rec(MS__PROBE_BEGIN, name, sp);
  }
  int rc = claim();
  if (rc == 0) {
    if (P.depth == 0) {
      if (P.n == 0 && P.occurrence == 0) P.need_t0 = 1;
      P.occurrence++;
      P.base = sp;
      if (!P.atexit_done) P.atexit_done = atexit(write_at_exit) == 0;
    }
    rc = ++P.depth;
    take(sp);
  }
  pthread_mutex_unlock(&P.lock);
  return rc;
}

int memstub_probe_point(void) {
  uintptr_t sp = MS__CALLER_SP();
  pthread_mutex_lock(&P.lock);
  resolve();
  if (P.resolved == 1) {
    pthread_mutex_unlock(&P.lock);
    return P.rec(MS__PROBE_POINT, NULL, sp);
  }
  int rc = claim();
  if (rc == 0) {
    rc = P.depth;
    if (P.depth > 0) take(sp);
  }
  pthread_mutex_unlock(&P.lock);
  return rc;
}

int memstub_probe_end(void) {
  uintptr_t sp = MS__CALLER_SP();
  pthread_mutex_lock(&P.lock);
  resolve();
  if (P.resolved == 1) {
    pthread_mutex_unlock(&P.lock);
    return P.rec(MS__PROBE_END, NULL, sp);
  }
  int rc = claim();
  if (rc == 0) {
    if (P.depth == 0) {
      rc = -EINVAL;
    } else {
      take(sp);
      rc = --P.depth;
    }
  }
  pthread_mutex_unlock(&P.lock);
  return rc;
}

int memstub_probe_recording(void) {
  pthread_mutex_lock(&P.lock);
  resolve();
  int r = P.resolved == 1;
  pthread_mutex_unlock(&P.lock);
  return r;
}

int memstub_probe_write(const char *path, memstub_error *err) {
  pthread_mutex_lock(&P.lock);
  resolve();
  if (P.resolved == 1 || P.n == 0) {
    pthread_mutex_unlock(&P.lock);
    return memstub_error_set(err, -ENODATA, "probe: no measuring points to write%s",
                             P.resolved == 1 ? " (the recorder writes the trace)" : "");
  }
  char dflt[64];
  if (!path) path = getenv("MEMSTUB_PROBE_OUTPUT");
  if (!path || !*path) {
    snprintf(dflt, sizeof dflt, "memstub-probe-%ld.csv", (long)getpid());
    path = dflt;
  }
  memstub_trace *t = memstub_trace_create();
  int rc = t ? 0 : -ENOMEM;
  int col = rc == 0 ? memstub_trace_add_column(t, "region") : -1;
  if (col < 0 && rc == 0) rc = col;
  char buf[64];
  if (rc == 0) rc = memstub_trace_set_meta(t, "source", "memstub-probe");
  if (rc == 0)
    rc = memstub_trace_set_meta(t, "probe.heap_measure", "mallinfo2() uordblks + hblkhd");
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
