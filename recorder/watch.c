/* recorder/watch.c: the watcher, a thread of the recorder's own that samples
 * the threads the sampling timer cannot reach (--thread all; docs/recording.md,
 * "What a row can see").
 *
 * A thread that blocks every signal and makes no allocator call (xz's
 * workers compress for a second that way) has no rows between its calls: its
 * resident memory showed only at other threads' rows, its faults and CPU
 * time only at its end. While such a thread runs, the watcher reads, every
 * sampling period, the process's RssAnon and, for each thread that blocks
 * the signal and used CPU time since its last look, that thread's CPU clock
 * and page faults (/proc/self/task/TID/stat); each reading becomes a row of
 * that thread at the merge (threads.c), its heap and stack as its previous
 * row left them. Like memray's background thread, it interrupts nothing
 * of the program's and calls no allocator: it sleeps, reads clocks and
 * /proc, and writes into memory of its own (mmap). Its stack is the
 * recorder's own, not counted in the program's resident memory. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

// A reading: thread thr at raw time t; rss the process's RssAnon less the
// recorder's (-1 unknown), faults and CPU time as the thread's own clocks read.
typedef struct wsample {
  int64_t t, rss, minflt, majflt, cpu, ver;  // ver: the memory sample's (ms__rec_mem.ver)
  int32_t thr;
} wsample;

#define WS_N 4096  // readings a block
typedef struct wblock {
  struct wblock *next;
  size_t n;  // release-stored
  wsample s[WS_N];
} wblock;

#define WATCH_STACK (64 << 10)
#define WATCH_IDLE_NS 5000000  // the period while no thread blocks the signal

static struct {
  int started;       // a watcher was started in this process
  int stop, busy;    // asked to stop; inside a round (the merge waits for it)
  wblock *head, *tail;
  uint64_t rounds, readings, dropped;
  int64_t cpu_ns;  // its own CPU time after its last round
} W;

// Reading s into the watcher's blocks (the watcher alone writes them).
static void put(const wsample *s) {
  wblock *b = W.tail;
  if (!b || b->n == WS_N) {
    wblock *nb = ms__rec_map(sizeof *nb);
    if (!nb) {
      W.dropped++;
      return;
    }
    if (b)
      b->next = nb;
    else
      __atomic_store_n(&W.head, nb, __ATOMIC_RELEASE);
    W.tail = b = nb;
  }
  b->s[b->n] = *s;
  __atomic_store_n(&b->n, b->n + 1, __ATOMIC_RELEASE);
  W.readings++;
}

// One round: 1 when a thread blocking the signal was found (running or not).
static int round_once(int64_t *last_cpu, int nlast) {
  int any = 0, rss_read = 0;
  int64_t rss = -1, ver = -1;
  for (tstate *ts = __atomic_load_n(&ms__rec.list, __ATOMIC_ACQUIRE); ts; ts = ts->next) {
    if (!ts->all || __atomic_load_n(&ts->gone, __ATOMIC_ACQUIRE) || !ts->cpu_clock_ok ||
        !__atomic_load_n(&ts->blk_since, __ATOMIC_ACQUIRE) || ts->thr < 0)
      continue;
    any = 1;
    int64_t cpu = ms__prim_clock_cpu_ns(ts->cpu_clock);
    if (cpu < 0) continue;
    int64_t *seen = ts->thr < nlast ? &last_cpu[ts->thr] : NULL;
    if (seen && cpu <= *seen) continue;  // it has not run since
    if (seen) *seen = cpu;
    if (!rss_read) {  // one reading of the process a round, shared with the threads' rows
      ms__rec_mem_sample(NULL);
      ver = __atomic_load_n(&ms__rec_mem_ver, __ATOMIC_ACQUIRE);
      rss = __atomic_load_n(&ms__rec_rss, __ATOMIC_RELAXED);
      rss_read = 1;
    }
    wsample s = {raw_now(), rss, -1, -1, cpu, ver, ts->thr};
    if (ms__prim_task_faults(ts->tid, &s.minflt, &s.majflt) < 0) s.minflt = s.majflt = -1;
    put(&s);
  }
  return any;
}

#define WATCH_THREADS 1024  // threads whose CPU time the watcher remembers

static void *watch_main(void *arg) {
  (void)arg;
  ms__rec_busy = 1;  // never a thread of the program's: the hooks pass its calls through
  static int64_t last_cpu[WATCH_THREADS];
  int64_t period = 1000000000LL / ms__rec.sample_hz;  // pre: sample_hz > 0 (ms__rec.watch)
  int64_t next = ms__prim_now_ns();
  while (!__atomic_load_n(&W.stop, __ATOMIC_ACQUIRE)) {
    __atomic_store_n(&W.busy, 1, __ATOMIC_SEQ_CST);
    int any = 0;
    if (!__atomic_load_n(&W.stop, __ATOMIC_SEQ_CST) && __atomic_load_n(&ms__rec_on, __ATOMIC_RELAXED))
      any = round_once(last_cpu, WATCH_THREADS);
    W.rounds++;
    if (any) W.cpu_ns = ms__prim_thread_cpu_ns();
    __atomic_store_n(&W.busy, 0, __ATOMIC_RELEASE);
    next += any ? period : WATCH_IDLE_NS;
    int64_t now = ms__prim_now_ns();
    if (next < now) next = now;
    ms__prim_sleep_until(next);
  }
  return NULL;
}

void ms__rec_watch_start(tstate *me) {
  if (!ms__rec.all || !ms__rec.watch || !me ||
      __atomic_exchange_n(&W.started, 1, __ATOMIC_ACQ_REL))
    return;
  int g = me->guard;
  me->guard = 1;  // what follows (the stack, glibc's own allocations) is not the program's
  // Its own stack, written now, so that the recorder's resident bytes are exact.
  void *st = mmap(NULL, WATCH_STACK, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (st == MAP_FAILED) {
    me->guard = g;
    return;
  }
  pthread_attr_t a;
  int rc = pthread_attr_init(&a);
  if (rc == 0) rc = pthread_attr_setstack(&a, st, WATCH_STACK);
  if (rc == 0) rc = pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  // Every signal blocked in it (inherited from the mask it is created with).
  sigset_t all, old;
  sigfillset(&all);
  pthread_t th;
  if (rc == 0) {
    ms__rec_real_sigmask(SIG_SETMASK, &all, &old);
    rc = ms__rec_real_create(&th, &a, watch_main, NULL);
    ms__rec_real_sigmask(SIG_SETMASK, &old, NULL);
  }
  pthread_attr_destroy(&a);
  me->guard = g;
  if (rc != 0) {
    munmap(st, WATCH_STACK);
    return;
  }
  __atomic_add_fetch(&ms__rec_self_bytes, WATCH_STACK, __ATOMIC_RELAXED);
}

void ms__rec_watch_stop(void) {
  if (!__atomic_load_n(&W.started, __ATOMIC_ACQUIRE)) return;
  __atomic_store_n(&W.stop, 1, __ATOMIC_SEQ_CST);
  // A round under way ends within microseconds; a watcher that stopped mid-round
  // (a fatal signal on it) is not waited for past a few milliseconds.
  for (int i = 0; i < 20000 && __atomic_load_n(&W.busy, __ATOMIC_SEQ_CST); i++) sched_yield();
}

void ms__rec_watch_forget(void) {
  // A forked child: the watcher did not come along; its readings are the parent's.
  memset(&W, 0, sizeof W);
}

size_t ms__rec_watch_count(void) {
  size_t n = 0;
  for (const wblock *b = __atomic_load_n(&W.head, __ATOMIC_ACQUIRE); b; b = b->next)
    n += __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
  return n;
}

void ms__rec_watch_each(void (*f)(int32_t thr, int64_t t, int64_t rss, int64_t ver,
                                  int64_t minflt, int64_t majflt, int64_t cpu, void *arg),
                        void *arg) {
  for (const wblock *b = __atomic_load_n(&W.head, __ATOMIC_ACQUIRE); b; b = b->next) {
    size_t n = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < n; i++) {
      const wsample *s = &b->s[i];
      f(s->thr, s->t, s->rss, s->ver, s->minflt, s->majflt, s->cpu, arg);
    }
  }
}

void ms__rec_watch_meta(void) {
  if (!W.started) return;
  ms__rec_meta("record.watcher",
               "%llu readings of threads that blocked the sampling signal, %llu rounds, "
               "%lld us of its CPU time%s",
               (unsigned long long)W.readings, (unsigned long long)W.rounds,
               (long long)(W.cpu_ns > 0 ? W.cpu_ns / 1000 : 0),
               W.dropped ? " (some readings dropped: out of memory)" : "");
}
