// tests/threads_fixture.c: the 4-thread trace (threads_fixture.h).
#include "threads_fixture.h"

#include <stdlib.h>
#include <string.h>

#define MS 1000000LL

typedef struct frow {
  int64_t t, th, stack, heap, ev, peer, xfrom, xbytes, xalloc, seq;
} frow;

// By time, then thread, then the order made.
static int cmp_row(const void *a, const void *b) {
  const frow *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  if (x->th != y->th) return x->th < y->th ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

memstub_trace *ms_test_threads_fixture(int64_t stagger) {
  frow *r = calloc(1000, sizeof *r);
  if (!r) return NULL;
  int n = 0;
#define ADD(...) (r[n] = (frow){__VA_ARGS__, n}, n++)
  const int64_t E = MEMSTUB_TRACE_EMPTY;
  for (int i = 0; i <= 100; i++) {  // thread 0: every 2 ms, 0 to 200 ms
    int64_t t = i * 2 * MS, ev = 0, peer = E;
    if (i == 0) ev = MEMSTUB_THREAD_EVENT_START, peer = -1;
    if (t == 150 * MS) ev = MEMSTUB_THREAD_EVENT_JOIN, peer = 2;
    if (t == 180 * MS) ev = MEMSTUB_THREAD_EVENT_JOIN, peer = 1;
    if (i == 100) ev = MEMSTUB_THREAD_EVENT_EXIT;
    ADD(t, 0, 1024 + 512 * (i % 4), 2000 + 96 * (i % 10), ev, peer, E, E, E);
  }
  for (int i = 0; i <= 65; i++) {  // thread 1: every 2 ms, 10 to 140 ms
    int64_t t = 10 * MS + i * 2 * MS, ev = 0, peer = E;
    if (i == 0) ev = MEMSTUB_THREAD_EVENT_START, peer = 0;
    if (i == 65) ev = MEMSTUB_THREAD_EVENT_EXIT;
    int64_t h = i < 40 ? 1000 * i : 1000 * (80 - i);
    if (t >= 30 * MS && t < 90 * MS) h += 5000;  // the block thread 2 frees
    ADD(t, 1, 4096 * (1 + i % 8), h, ev, peer, E, E, E);
  }
  for (int i = 0; i <= 36; i++) {  // thread 2: every 3 ms, 12 to 120 ms
    int64_t t = 12 * MS + i * 3 * MS, ev = 0, peer = E, xf = E, xb = E, xa = E;
    if (i == 0) ev = MEMSTUB_THREAD_EVENT_START, peer = 0;
    if (i == 36) ev = MEMSTUB_THREAD_EVENT_EXIT;
    if (t == 90 * MS) xf = 1, xb = 5000, xa = 30 * MS;
    int64_t h = t >= 30 * MS && t < 60 * MS ? 300000 : 8000 + 800 * (i % 5);
    ADD(t, 2, 2048 + 1024 * (i % 3), h, ev, peer, xf, xb, xa);
  }
  for (int i = 0; i <= 80; i++) {  // thread 3: every 1 ms, 20 to 100 ms
    int64_t t = 20 * MS + i * MS, ev = 0, peer = E;
    if (i == 0) ev = MEMSTUB_THREAD_EVENT_START, peer = 1;
    if (i == 80) ev = MEMSTUB_THREAD_EVENT_EXIT;
    ADD(t, 3, 16384 * (i % 10), 64 * (i % 7), ev, peer, E, E, E);
  }
#undef ADD
  for (int i = 0; i < n; i++) {
    r[i].t += r[i].th * stagger;
    if (r[i].xalloc != E) r[i].xalloc += r[i].xfrom * stagger;
  }
  qsort(r, (size_t)n, sizeof *r, cmp_row);
  memstub_trace *t = memstub_trace_create();
  const char *cols[] = {"thread", "thread_event", "thread_peer", "xfree_from", "xfree_bytes",
                        "xfree_alloc_ns"};
  int ok = t != NULL;
  for (int c = 0; ok && c < 6; c++) ok = memstub_trace_add_column(t, cols[c]) == c;
  for (int i = 0; ok && i < n; i++) {
    ok = memstub_trace_append(t, r[i].t, r[i].stack, r[i].heap) == 0;
    if (!ok) break;
    int64_t *x = memstub_trace_extra_row(t, t->n - 1);
    int64_t v[6] = {r[i].th, r[i].ev, r[i].peer, r[i].xfrom, r[i].xbytes, r[i].xalloc};
    memcpy(x, v, sizeof v);
  }
  free(r);
  memstub_error err;
  if (ok && memstub_trace_validate(t, &err) != 0) ok = 0;  // a fixture that is not valid
  if (!ok) {
    memstub_trace_free(t);
    return NULL;
  }
  return t;
}
