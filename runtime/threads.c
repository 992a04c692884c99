// Multi-thread replay (memstub/threads.h, docs/runtime.md "Threads"): one
// replay thread per original thread, each running the engine on its own
// stack and heap block, with deadlines from one common start; threads are
// created and joined by the threads that created and joined the originals,
// and a cross-thread free is a block one thread mallocs and another frees.
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "malloc_model.h"
#include "memstub/threads.h"
#include "prim.h"

/* How long before T0 the replay starts thread 0, so that its heap is
 * prepared (a malloc and a probe: well under a ms). It was 20 ms, which every
 * threads stub added to its wall time (node's: 176-180 -> 161-163 ms); a
 * thread that prepares late catches up on its first deadlines. */
#define LEAD_NS 2000000
// A thread waiting for a handoff block or a thread to be created polls this often.
#define POLL_NS 20000

enum { ACT_CREATE, ACT_ALLOC, ACT_FREE, ACT_JOIN };  // their order at one point

typedef struct action {
  int64_t point;  // after this point's work (-1: before the first point)
  int kind;
  int64_t arg;    // the thread created or joined, or the handoff
} action;

struct run;

typedef struct tstate {
  struct run *run;
  int64_t id;
  ms__rt_ctx c;
  memstub_replay *r;
  int prep;
  int64_t stack_size;
  action *act;
  int64_t nact, next;
  pthread_t th;
  int created;   // 1 created, -1 its creation failed (atomic)
  int finished;  // its thread ended (atomic)
} tstate;

typedef struct hslot {
  void *p;         // published block (atomic), NULL before
  uint32_t state;  // 0, 1 published, 2 a thread waits for it (atomic; the futex word)
} hslot;

typedef struct run {
  const memstub_threads_stub *s;
  memstub_replay_options opt;
  tstate *t;
  hslot *slot;
  memstub_handoff_done *done;
  memstub_thread_event *ev;
  int64_t nev, cap;
  long *tid;
  int64_t t0;
  int64_t mapped_all; // every thread's mapped bytes (atomic): the process's
  int err;            // the first error (atomic): a creation failed
  int64_t err_thread;
} run;

static void log_event(run *rn, int kind, int64_t th, int64_t peer) {
  int64_t i = __atomic_fetch_add(&rn->nev, 1, __ATOMIC_RELAXED);
  if (i < rn->cap)
    rn->ev[i] = (memstub_thread_event){kind, th, peer, ms__prim_now_ns() - rn->t0};
}

static void set_err(run *rn, int e, int64_t th) {
  int zero = 0;
  if (__atomic_compare_exchange_n(&rn->err, &zero, e, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    __atomic_store_n(&rn->err_thread, th, __ATOMIC_SEQ_CST);
}

static void pause_poll(void) { ms__prim_sleep_until(ms__prim_now_ns() + POLL_NS); }

static void *thread_main(void *arg);

static void create(run *rn, int64_t k, int64_t creator) {
  tstate *ts = &rn->t[k];
  pthread_attr_t attr;
  int rc = pthread_attr_init(&attr);
  if (rc == 0) {
    if ((rc = pthread_attr_setstacksize(&attr, (size_t)ts->stack_size)) == 0 &&
        (rc = pthread_attr_setguardsize(&attr, (size_t)ts->c.page)) == 0)
      rc = pthread_create(&ts->th, &attr, thread_main, ts);
    pthread_attr_destroy(&attr);
  }
  if (rc != 0) {
    set_err(rn, rc, k);
    __atomic_store_n(&ts->created, -1, __ATOMIC_RELEASE);
    return;
  }
  (void)creator;
  __atomic_store_n(&ts->created, 1, __ATOMIC_RELEASE);
}

// Wait until thread k was created (1) or will not be (-1).
static int await_created(run *rn, int64_t k) {
  int c;
  while ((c = __atomic_load_n(&rn->t[k].created, __ATOMIC_ACQUIRE)) == 0) {
    if (__atomic_load_n(&rn->err, __ATOMIC_ACQUIRE)) return -1;
    pause_poll();
  }
  return c;
}

/* The block of handoff i, once its allocating thread published it (NULL when
 * the replay failed first). A wait, not a spin: the original thread that
 * freed it had it already, so waiting here is the replay's lateness, and a
 * replay thread that spun (sched_yield) burnt CPU time its original did not
 * (node's stub: 6,000 yields, its system time 3x the original's). A few
 * yields first, for the common short wait; then a futex wait, woken by the
 * allocation, with a timeout to see a failed replay. */
static void *await_block(run *rn, int64_t i) {
  hslot *sl = &rn->slot[i];
  void *p = __atomic_load_n(&sl->p, __ATOMIC_ACQUIRE);
  if (p) return p;
  int64_t t = ms__prim_now_ns();
  for (int k = 0; !(p = __atomic_load_n(&sl->p, __ATOMIC_ACQUIRE)); k++) {
    if (__atomic_load_n(&rn->err, __ATOMIC_ACQUIRE)) break;
    uint32_t st = 0;
    if (k < 8)
      sched_yield();
    else if (__atomic_compare_exchange_n(&sl->state, &st, 2, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE) || st == 2)
      ms__prim_wait_word(&sl->state, 2, 10 * 1000 * 1000);  // 10 ms: then err is seen
  }
  rn->done[i].wait_ns = ms__prim_now_ns() - t;
  return p;
}

static void do_action(tstate *ts, const action *a) {
  run *rn = ts->run;
  switch (a->kind) {
    case ACT_CREATE:
      create(rn, a->arg, ts->id);
      break;
    case ACT_JOIN:
      if (await_created(rn, a->arg) == 1) {
        pthread_join(rn->t[a->arg].th, NULL);
        __atomic_store_n(&rn->t[a->arg].created, 2, __ATOMIC_RELEASE);  // joined
        log_event(rn, MEMSTUB_TEV_JOIN, ts->id, a->arg);
      }
      break;
    case ACT_ALLOC: {
      const memstub_handoff *h = &rn->s->handoffs[a->arg];
      // As the heap block: the pad centres glibc's rounding (heap.c).
      char *p = malloc((size_t)h->bytes + MS__RT_HEAP_PAD);
      if (p) {
        /* With resident data the process's rss_bytes, shared among the
         * threads' targets, holds the block's written pages already (written
         * by whichever thread saw them grow): writing it here too counted
         * them twice (docs/memory-model.md, "Threads"). Without, a block is
         * written whole, as the heap block is. */
        if (!ts->c.res.rss) {
          volatile char *q = p;
          for (int64_t off = 0; off < h->bytes; off += ts->c.page) q[off] = 'a';
          q[h->bytes - 1] = 'a';
        }
        rn->done[a->arg].usable = (int64_t)malloc_usable_size(p);
        rn->done[a->arg].malloc_tid = rn->tid[ts->id];
      }
      // A failed malloc publishes a marker, so the freeing thread does not wait forever.
      hslot *sl = &rn->slot[a->arg];
      __atomic_store_n(&sl->p, p ? (void *)p : (void *)sl, __ATOMIC_RELEASE);
      if (__atomic_exchange_n(&sl->state, 1, __ATOMIC_ACQ_REL) == 2) ms__prim_wake_word(&sl->state);
      break;
    }
    case ACT_FREE: {
      void *p = await_block(rn, a->arg);
      if (p && p != (void *)&rn->slot[a->arg]) {
        free(p);
        rn->done[a->arg].free_tid = rn->tid[ts->id];
      }
      break;
    }
  }
}

// The actions after point x (or all left, x = INT64_MAX); the point of the next one, -1 none.
static int64_t actions_upto(tstate *ts, int64_t x) {
  while (ts->next < ts->nact && ts->act[ts->next].point <= x) do_action(ts, &ts->act[ts->next++]);
  return ts->next < ts->nact ? ts->act[ts->next].point : -1;
}

// The engine's per-point hook of a replay thread (ms__rt_ctx.hook).
static int64_t point_hook(void *arg, int64_t x) { return actions_upto(arg, x); }

// A replay thread's life, on the thread (and stack) it runs on.
static void thread_body(void *arg) {
  tstate *ts = arg;
  run *rn = ts->run;
  rn->tid[ts->id] = (long)gettid();
  log_event(rn, MEMSTUB_TEV_START, ts->id, rn->s->threads[ts->id].creator);
  /* The block, without filling the tcache: the fill makes mallinfo2 steady
   * for a single replay, but a thread's heap is measured here from usable
   * sizes, and the fill's many mallinfo2 calls lock every arena: threads
   * preparing at once took up to 5 ms each, and started late. */
  ts->prep = ts->c.ops->prepare(&ts->c, NULL, 0);
  ts->c.hook_next = actions_upto(ts, -1);
  if (ts->prep == 0) ms__rt_engine_run(&ts->c);
  actions_upto(ts, INT64_MAX);  // a replay that stopped early still keeps its promises
  log_event(rn, MEMSTUB_TEV_EXIT, ts->id, -1);
  ts->c.ops->release(&ts->c);
  __atomic_store_n(&ts->finished, 1, __ATOMIC_RELEASE);
}

static void *thread_main(void *arg) {
  thread_body(arg);
  return NULL;
}

/* Thread k (a root: no creator) on the calling thread, on a stack of its
 * own (ms__rt_run_on_stack); then counted as joined. A stack that cannot be
 * had is the error a failed creation is (set_err), and the thread ends
 * without running. */
static void run_here(run *rn, int64_t k) {
  tstate *ts = &rn->t[k];
  ts->c.slice = 0;  // no scheduler slice: it would stay the caller's
  __atomic_store_n(&ts->created, 1, __ATOMIC_RELEASE);
  int rc = ms__rt_run_on_stack(thread_body, ts, ts->stack_size, ts->c.page);
  if (rc < 0) {
    set_err(rn, -rc, k);
    __atomic_store_n(&ts->created, -1, __ATOMIC_RELEASE);
    __atomic_store_n(&ts->finished, 1, __ATOMIC_RELEASE);
    return;
  }
  __atomic_store_n(&ts->created, 2, __ATOMIC_RELEASE);  // joined
}

static int cmp_action(const void *a, const void *b) {
  const action *x = a, *y = b;
  if (x->point != y->point) return x->point < y->point ? -1 : 1;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  return x->arg < y->arg ? -1 : x->arg > y->arg;
}

int memstub_threads_check(const memstub_threads_stub *s, const memstub_replay_options *o,
                          memstub_error *err) {
  if (!s || s->nthreads < 1 || !s->stubs || !s->threads)
    return memstub_error_set(err, -EINVAL, "no threads to replay");
  if (s->nhandoffs < 0 || (s->nhandoffs > 0 && !s->handoffs))
    return memstub_error_set(err, -EINVAL, "the stub's handoff table is missing");
  for (int64_t k = 0; k < s->nthreads; k++) {
    int rc = memstub_replay_check(s->stubs[k], o, NULL, err);
    if (rc < 0) {
      char m[MEMSTUB_ERRMSG_MAX];
      snprintf(m, sizeof m, "%s", err ? err->msg : "");
      return memstub_error_set(err, rc, "thread %lld: %s", (long long)k, m);
    }
    const memstub_thread_spec *t = &s->threads[k];
    if (t->start_ns < 0)
      return memstub_error_set(err, -EINVAL, "thread %lld: negative start %lld ns", (long long)k,
                               (long long)t->start_ns);
    if (k == 0 && t->creator != -1)
      return memstub_error_set(err, -EINVAL, "thread 0 has a creator (%lld)",
                               (long long)t->creator);
    if (t->creator < -1 || t->creator >= s->nthreads || t->creator == k ||
        (t->creator >= 0 && (t->create_point < -1 ||
                             t->create_point >= s->stubs[t->creator]->numdata)))
      return memstub_error_set(err, -EINVAL, "thread %lld: creator %lld at point %lld does not "
                               "exist", (long long)k, (long long)t->creator,
                               (long long)t->create_point);
    if (t->joiner < -1 || t->joiner >= s->nthreads || t->joiner == k ||
        (t->joiner >= 0 && (t->join_point < 0 || t->join_point >= s->stubs[t->joiner]->numdata)))
      return memstub_error_set(err, -EINVAL, "thread %lld: joiner %lld at point %lld does not "
                               "exist", (long long)k, (long long)t->joiner,
                               (long long)t->join_point);
    // No cycle of creators: every chain ends at the replay.
    int64_t c = t->creator, steps = 0;
    while (c >= 0 && steps++ <= s->nthreads) c = s->threads[c].creator;
    if (c >= 0)
      return memstub_error_set(err, -EINVAL, "thread %lld: its creators form a cycle",
                               (long long)k);
  }
  for (int64_t i = 0; i < s->nhandoffs; i++) {
    const memstub_handoff *h = &s->handoffs[i];
    if (h->bytes <= 0 || h->from < 0 || h->from >= s->nthreads || h->to < 0 ||
        h->to >= s->nthreads || h->from == h->to || h->alloc_point < -1 ||
        h->alloc_point >= s->stubs[h->from]->numdata || h->free_point < -1 ||
        h->free_point >= s->stubs[h->to]->numdata)
      return memstub_error_set(err, -EINVAL,
                               "handoff %lld: %lld bytes from thread %lld (point %lld) to thread "
                               "%lld (point %lld) is not a block between two threads' points",
                               (long long)i, (long long)h->bytes, (long long)h->from,
                               (long long)h->alloc_point, (long long)h->to,
                               (long long)h->free_point);
  }
  return 0;
}

void memstub_threads_replay_free(memstub_threads_replay *r) {
  if (!r) return;
  for (int64_t k = 0; r->thread && k < r->nthreads; k++) memstub_replay_free(r->thread[k]);
  free(r->thread);
  free(r->tid);
  free(r->handoff);
  free(r->events);
  free(r);
}

static int add_action(tstate *ts, int64_t point, int kind, int64_t arg) {
  action *a = realloc(ts->act, (size_t)(ts->nact + 1) * sizeof *a);
  if (!a) return -ENOMEM;
  ts->act = a;
  a[ts->nact++] = (action){point, kind, arg};
  return 0;
}

/* Thread k's handed-off blocks at each point: held[x + 1] for point x (-1 the
 * entry), the usable sizes (less the pad) of the handoff blocks it
 * allocated that its trace still counts then. NULL when out of memory. */
static int64_t *held_points(const run *rn, int64_t k) {
  const memstub_threads_stub *s = rn->s;
  const struct memstub_stub *st = s->stubs[k];
  int64_t n = st->numdata;
  int64_t *d = calloc((size_t)n + 2, sizeof *d);
  if (!d) return NULL;
  for (int64_t i = 0; i < s->nhandoffs; i++) {
    const memstub_handoff *h = &s->handoffs[i];
    if (h->from != k || rn->done[i].usable <= 0) continue;
    // Counted from its allocation to the first point of its drop row.
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (st->point[mid] < h->drop_row) lo = mid + 1;
      else hi = mid;
    }
    int64_t v = rn->done[i].usable - MS__RT_HEAP_PAD;
    if (lo > h->alloc_point) {
      d[h->alloc_point + 1] += v;
      d[lo + 1] -= v;
    }
  }
  for (int64_t x = 1; x <= n; x++) d[x] += d[x - 1];
  return d;
}

int memstub_threads_run(const memstub_threads_stub *s, const memstub_replay_options *o,
                        memstub_threads_replay **out, memstub_error *err) {
  return ms__rt_threads_run(s, o, out, 0, err);
}

int ms__rt_threads_run(const memstub_threads_stub *s, const memstub_replay_options *o,
                       memstub_threads_replay **out, int here, memstub_error *err) {
  *out = NULL;
  memstub_replay_options opt;
  if (o) opt = *o;
  else memstub_replay_options_init(&opt);
  opt.progress = NULL;
  int rc = memstub_threads_check(s, &opt, err);
  if (rc < 0) return rc;
  int64_t n = s->nthreads;
  run rn = {.s = s, .opt = opt};
  memstub_threads_replay *res = calloc(1, sizeof *res);
  rn.t = calloc((size_t)n, sizeof *rn.t);
  rn.slot = calloc((size_t)s->nhandoffs + 1, sizeof *rn.slot);
  rn.done = calloc((size_t)s->nhandoffs + 1, sizeof *rn.done);
  rn.cap = 3 * n + 1;
  rn.ev = calloc((size_t)rn.cap, sizeof *rn.ev);
  rn.tid = calloc((size_t)n, sizeof *rn.tid);
  if (!res || !rn.t || !rn.slot || !rn.done || !rn.ev || !rn.tid) goto nomem;
  res->stub = s;
  res->nthreads = n;
  if (!(res->thread = calloc((size_t)n, sizeof *res->thread))) goto nomem;
  for (int64_t k = 0; k < n; k++) {
    tstate *ts = &rn.t[k];
    const struct memstub_stub *st = s->stubs[k];
    ts->run = &rn;
    ts->id = k;
    if ((rc = memstub_replay_check(st, &opt, &ts->stack_size, err)) < 0) goto fail;
    memstub_replay *r = res->thread[k] = ms__rt_own_calloc(1, sizeof *r);
    if (!r) goto nomem;
    r->stub = st;
    r->opt = opt;
    if (opt.measure && st->numdata > 0) {
      size_t bytes = (size_t)memstub_replay_measure_bytes(st, &opt);
      if (!(r->rec = ms__rt_own_calloc((size_t)st->numdata, sizeof *r->rec))) goto nomem;
      ms__prim_prefault(r->rec, bytes, bytes >= ((size_t)2 << 20));
      if (st->abi >= MEMSTUB_STUB_ABI_WORK && st->cpu &&
          !(r->work = ms__rt_own_calloc((size_t)st->numdata * MS__RT_WORK_REC, sizeof *r->work)))
        goto nomem;
    }
    ms__rt_ctx_init(&ts->c, st, &opt, r->rec);
    ts->c.wrec = r->work;
    ts->c.hook = point_hook;
    ts->c.hook_arg = ts;
    ts->c.crowd = 1;
  }
  for (int64_t k = 0; k < n; k++) {
    const memstub_thread_spec *sp = &s->threads[k];
    if (sp->creator >= 0 && add_action(&rn.t[sp->creator], sp->create_point, ACT_CREATE, k) < 0)
      goto nomem;
    if (sp->joiner >= 0 && add_action(&rn.t[sp->joiner], sp->join_point, ACT_JOIN, k) < 0)
      goto nomem;
  }
  for (int64_t i = 0; i < s->nhandoffs; i++) {
    const memstub_handoff *h = &s->handoffs[i];
    if (add_action(&rn.t[h->from], h->alloc_point, ACT_ALLOC, i) < 0 ||
        add_action(&rn.t[h->to], h->free_point, ACT_FREE, i) < 0)
      goto nomem;
  }
  for (int64_t k = 0; k < n; k++) {
    tstate *ts = &rn.t[k];
    if (ts->nact) qsort(ts->act, (size_t)ts->nact, sizeof *ts->act, cmp_action);
    ts->c.hook_next = ts->nact ? ts->act[0].point : -1;
  }
  /* glibc raises its mmap threshold to the size of an mmapped chunk freed
   * (a handed-off block, a heap block that shrinks into an arena), and a
   * heap block below it then grows inside its thread's arena, where realloc
   * copies it: every copy writes the block whole, whatever the resident
   * target, and the chunks left behind stay resident. node's stub held
   * 14 MiB so with its resident targets at 0 (62 MB against node's 50).
   * Fixed at its default, a block past it stays mmapped and grows by mremap. */
  ms__prim_heap_mmap_threshold(MS__MALLOC_MMAP_THRESHOLD);
  // The common clock: every thread's deadlines count from T0.
  rn.t0 = ms__prim_now_ns() + LEAD_NS;
  for (int64_t k = 0; k < n; k++) rn.t[k].c.t0_at = rn.t0 + s->threads[k].start_ns;
  // One resident baseline: every thread's rss_bytes is the process's growth since T0,
  // as the original's rows are (not since each thread's own start).
  int fd = (opt.measure & MEMSTUB_MEASURE_RESIDENT) ? ms__prim_statm_open() : -1;
  int64_t rss0 = fd >= 0 ? ms__prim_statm_anon(fd) : -1;
  if (fd >= 0) close(fd);
  for (int64_t k = 0; k < n; k++) {
    rn.t[k].c.res.rss0_common = rss0;
    rn.t[k].c.res.mapped_all = &rn.mapped_all;  // mapped_bytes is the process's too
  }
  /* Here: thread 0 is the caller's own (when no other thread joins it),
   * started after the other roots, which replay beside it. */
  int64_t inline0 = here && s->threads[0].joiner < 0 ? 0 : -1;
  for (int64_t k = 0; k < n; k++)
    if (s->threads[k].creator < 0 && k != inline0) create(&rn, k, -1);
  if (inline0 == 0) run_here(&rn, 0);
  // Threads no thread joins are joined here, once created.
  for (int left = 1; left;) {
    left = 0;
    for (int64_t k = 0; k < n; k++) {
      if (s->threads[k].joiner >= 0) continue;
      int c = __atomic_load_n(&rn.t[k].created, __ATOMIC_ACQUIRE);
      if (c == 1) {
        pthread_join(rn.t[k].th, NULL);
        __atomic_store_n(&rn.t[k].created, 2, __ATOMIC_RELEASE);
      } else if (c == 0) {
        int64_t cr = s->threads[k].creator;
        // Its creator ended without creating it (an error): nothing to wait for.
        if (cr >= 0 &&
            (__atomic_load_n(&rn.t[cr].finished, __ATOMIC_ACQUIRE) ||
             __atomic_load_n(&rn.t[cr].created, __ATOMIC_ACQUIRE) < 0) &&
            !__atomic_load_n(&rn.t[k].created, __ATOMIC_ACQUIRE))
          __atomic_store_n(&rn.t[k].created, -1, __ATOMIC_RELEASE);
        else
          left = 1;
      }
    }
    if (left) pause_poll();
  }
  if (rn.err) {
    rc = memstub_error_set(err, rn.err == EAGAIN ? -EAGAIN : -ENOMEM,
                           "cannot start replay thread %lld with a stack of %lld bytes: %s",
                           (long long)rn.err_thread, (long long)rn.t[rn.err_thread].stack_size,
                           strerror(rn.err));
    goto fail;
  }
  for (int64_t k = 0; k < n; k++) {
    tstate *ts = &rn.t[k];
    if (ts->prep < 0) {
      rc = memstub_error_set(err, ts->prep, "thread %lld: out of memory while preparing its heap",
                             (long long)k);
      goto fail;
    }
    if (ts->c.failed < 0) {
      char why[MEMSTUB_ERRMSG_MAX];
      ms__rt_stop_reason(&ts->c, s->stubs[k], why, sizeof why);
      rc = memstub_error_set(err, ts->c.failed, "thread %lld: %s", (long long)k, why);
      goto fail;
    }
    ms__rt_fill_info(res->thread[k], &ts->c, ts->stack_size);
    // Each thread's own heap, from usable sizes: mallinfo2 counts every thread's.
    memstub_replay *r = res->thread[k];
    if (r->rec && (opt.measure & MEMSTUB_MEASURE_HEAP)) {
      int64_t *held = held_points(&rn, k);
      if (!held) goto nomem;
      for (int64_t x = 0; x < s->stubs[k]->numdata; x++)
        r->rec[x].heap_bytes = r->rec[x].heap_usable - MS__RT_HEAP_PAD + held[x + 1];
      r->info.entry.heap_bytes = r->info.entry.heap_usable - MS__RT_HEAP_PAD + held[0];
      free(held);
    }
  }
  res->t0_ns = rn.t0;
  res->tid = rn.tid;
  rn.tid = NULL;
  res->handoff = rn.done;
  rn.done = NULL;
  res->events = rn.ev;
  res->nevents = rn.nev < rn.cap ? rn.nev : rn.cap;
  rn.ev = NULL;
  rc = 0;
  goto out;
nomem:
  rc = memstub_error_set(err, -ENOMEM, "out of memory");
fail:
  memstub_threads_replay_free(res);
  res = NULL;
out:
  for (int64_t k = 0; rn.t && k < n; k++) {
    free(rn.t[k].act);
    if (rc < 0 && rn.t[k].created <= 0) ms__rt_res_release(&rn.t[k].c.res);
  }
  free(rn.t);
  free(rn.slot);
  free(rn.done);
  free(rn.ev);
  free(rn.tid);
  *out = res;
  return rc;
}

/* ---- the replayed trace ------------------------------------------------------ */

static int cmp_drop(const void *a, const void *b) {
  const memstub_handoff *x = *(const memstub_handoff *const *)a,
                        *y = *(const memstub_handoff *const *)b;
  return (x->drop_row > y->drop_row) - (x->drop_row < y->drop_row);
}

/* Thread k's rows after its exit (docs/formats.md, "Threads"): when another
 * thread frees blocks k handed off after k ended, k's heap falls then. The
 * replay has no thread k left to measure it: the row is made from the free,
 * at the freeing thread's time, with k's last heap less the blocks' usable
 * sizes; its point is the original's row, so it compares with it. */
static int after_exit(const memstub_threads_replay *r, int64_t k, memstub_trace *t) {
  const memstub_threads_stub *s = r->stub;
  const struct memstub_stub *st = s->stubs[k];
  const memstub_handoff **hs = NULL;
  size_t nh = 0;
  for (int64_t i = 0; i < s->nhandoffs; i++) {
    const memstub_handoff *h = &s->handoffs[i];
    if (h->from != k || h->drop_row < st->norig || h->drop_row == INT64_MAX) continue;
    const memstub_handoff **x = realloc(hs, (nh + 1) * sizeof *x);
    if (!x) {
      free(hs);
      return -ENOMEM;
    }
    hs = x;
    hs[nh++] = h;
  }
  if (!nh || t->n == 0) {
    free(hs);
    return 0;
  }
  qsort(hs, nh, sizeof *hs, cmp_drop);
  int ip = memstub_trace_column(t, "point"), it = memstub_trace_column(t, "target_time_ns");
  int il = memstub_trace_column(t, "late_ns"), iw = memstub_trace_column(t, "wake_late_ns");
  int ik = memstub_trace_column(t, "work_ns");
  int64_t heap = t->pts[t->n - 1].heap_bytes;
  int rc = 0;
  for (size_t i = 0; i < nh && rc == 0;) {
    int64_t row = hs[i]->drop_row, at = t->pts[t->n - 1].time_ns, target = 0;
    for (; i < nh && hs[i]->drop_row == row; i++) {
      const memstub_handoff *h = hs[i];
      const memstub_handoff_done *d = &r->handoff[h - s->handoffs];
      const memstub_replay *b = r->thread[h->to];
      if (d->usable > 0) heap -= d->usable - MS__RT_HEAP_PAD;
      if (b->rec && h->free_point >= 0) {
        int64_t when = s->stubs[h->to]->time0_ns + b->rec[h->free_point].end_ns;
        int64_t tgt = s->stubs[h->to]->time0_ns + b->rec[h->free_point].target_ns;
        if (when > at) at = when;
        if (tgt > target) target = tgt;
      }
    }
    const memstub_point last = t->pts[t->n - 1];
    if ((rc = memstub_trace_append(t, at, last.stack_bytes, heap < 0 ? 0 : heap)) < 0) break;
    int64_t *x = memstub_trace_extra_row(t, t->n - 1);
    memcpy(x, memstub_trace_extra_row(t, t->n - 2), t->nextra * sizeof *x);
    if (ip >= 0) x[ip] = row;
    if (it >= 0) x[it] = target;
    if (il >= 0) x[il] = at - target;
    if (iw >= 0) x[iw] = 0;
    if (ik >= 0) x[ik] = 0;
  }
  free(hs);
  return rc;
}

int memstub_threads_trace(const memstub_threads_replay *r, memstub_trace **out,
                          memstub_error *err) {
  *out = NULL;
  int64_t n = r->nthreads;
  memstub_trace **tt = calloc((size_t)n, sizeof *tt);
  size_t *pos = calloc((size_t)n, sizeof *pos);
  memstub_trace *t = memstub_trace_create();
  int rc = tt && pos && t ? 0 : -ENOMEM;
  if (rc < 0) {
    memstub_error_set(err, rc, "out of memory");
    goto out;
  }
  for (int64_t k = 0; k < n && rc == 0; k++) {
    rc = memstub_replay_trace(r->thread[k], &tt[k], err);
    if (rc < 0) {
      char m[MEMSTUB_ERRMSG_MAX];
      snprintf(m, sizeof m, "%s", err ? err->msg : "");
      memstub_error_set(err, rc, "thread %lld: %s", (long long)k, m);
    }
  }
  if (rc < 0) goto out;
  for (int64_t k = 0; k < n && rc == 0; k++) rc = after_exit(r, k, tt[k]);
  if (rc < 0) {
    memstub_error_set(err, rc, "out of memory");
    goto out;
  }
  // The columns: thread, then every thread's in first-seen order.
  int ith = memstub_trace_add_column(t, "thread");
  if (ith < 0) rc = ith;
  for (int64_t k = 0; k < n && rc >= 0; k++)
    for (size_t c = 0; c < tt[k]->nextra && rc >= 0; c++)
      if (memstub_trace_column(t, tt[k]->extra_names[c]) < 0)
        rc = memstub_trace_add_column(t, tt[k]->extra_names[c]);
  // Metadata: thread 0's, but the figures of one replay thread are each thread's.
  // ("heap": threads measure theirs from usable sizes, not mallinfo2.)
  static const char *const own[] = {"duration_ns", "cpu_ns", "off_cpu_ns", "points",
                                    "stack_size", "heap_clamped_rows", "heap"};
  for (size_t i = 0; rc >= 0 && i < tt[0]->nmeta; i++) {
    int skip = 0;
    for (size_t j = 0; j < sizeof own / sizeof *own; j++) skip |= !strcmp(tt[0]->meta[i].key, own[j]);
    if (!skip) rc = memstub_trace_set_meta(t, tt[0]->meta[i].key, tt[0]->meta[i].value);
  }
  char v[512], key[64];
  snprintf(v, sizeof v, "%lld (one replay thread each; heap_bytes is the row's thread's own heap, "
           "from usable sizes)", (long long)n);
  if (rc >= 0) rc = memstub_trace_set_meta(t, "threads", v);
  /* The block resizes that were frees: every thread's in all (thread 0's
   * were copied above), and each thread's ("block_frees.K", which compare
   * gives each thread's comparison). */
  if (rc >= 0 && memstub_trace_get_meta(t, MEMSTUB_WORK_BLOCK_FREES_META)) {
    long long frees = 0;
    for (int64_t k = 0; k < n && rc >= 0; k++) {
      const struct memstub_stub *st = r->stub->stubs[k];
      long long f = st->abi >= MEMSTUB_STUB_ABI_WORK ? st->block_frees : 0;
      frees += f;
      snprintf(key, sizeof key, "%s.%lld", MEMSTUB_WORK_BLOCK_FREES_META, (long long)k);
      snprintf(v, sizeof v, "%lld", f);
      rc = memstub_trace_set_meta(t, key, v);
    }
    snprintf(v, sizeof v, "%lld%s", frees, MS__RT_BLOCK_FREES_WHY);
    if (rc >= 0) rc = memstub_trace_set_meta(t, MEMSTUB_WORK_BLOCK_FREES_META, v);
  }
  for (int64_t k = 0; k < n && rc >= 0; k++) {
    const memstub_replay_info *in = &r->thread[k]->info;
    snprintf(key, sizeof key, "thread.%lld", (long long)k);
    snprintf(v, sizeof v, "start %lld ns, %lld points, duration_ns %lld (target %lld), cpu_ns "
             "%lld, off_cpu_ns %lld, stack_size %lld, tid %ld",
             (long long)r->stub->threads[k].start_ns, (long long)in->points,
             (long long)in->duration_ns, (long long)in->target_ns, (long long)in->cpu_ns,
             (long long)in->run_delay_ns, (long long)in->stack_size, r->tid ? r->tid[k] : 0L);
    rc = memstub_trace_set_meta(t, key, v);
  }
  for (int64_t h = 0; h < r->stub->nhandoffs && rc >= 0; h++) {
    const memstub_handoff *ho = &r->stub->handoffs[h];
    snprintf(key, sizeof key, "handoff.%lld", (long long)h);
    snprintf(v, sizeof v, "%lld bytes, malloc'd by thread %lld (tid %ld), freed by thread %lld "
             "(tid %ld) after waiting %lld ns", (long long)ho->bytes, (long long)ho->from,
             r->handoff[h].malloc_tid, (long long)ho->to, r->handoff[h].free_tid,
             (long long)r->handoff[h].wait_ns);
    rc = memstub_trace_set_meta(t, key, v);
  }
  // Merge by time, ties by thread (the recorder's order).
  for (;;) {
    if (rc < 0) break;
    int64_t best = -1;
    for (int64_t k = 0; k < n; k++)
      if (pos[k] < tt[k]->n &&
          (best < 0 || tt[k]->pts[pos[k]].time_ns < tt[best]->pts[pos[best]].time_ns))
        best = k;
    if (best < 0) break;
    const memstub_trace *s = tt[best];
    const memstub_point *p = &s->pts[pos[best]];
    if ((rc = memstub_trace_append(t, p->time_ns, p->stack_bytes, p->heap_bytes)) < 0) break;
    int64_t *x = memstub_trace_extra_row(t, t->n - 1);
    x[ith] = best;
    const int64_t *y = memstub_trace_extra_row(s, pos[best]);
    for (size_t c = 0; c < s->nextra; c++) x[memstub_trace_column(t, s->extra_names[c])] = y[c];
    pos[best]++;
  }
  if (rc < 0) memstub_error_set(err, rc, "cannot build the replayed trace: %s", strerror(-rc));
out:
  for (int64_t k = 0; tt && k < n; k++) memstub_trace_free(tt[k]);
  free(tt);
  free(pos);
  return MS__HAND_OUT(rc, t, out, memstub_trace_free);
}
