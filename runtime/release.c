/* runtime/release.c: an embedded stub that returns holding what its
 * component left alive (memstub gen --hold; docs/runtime.md, "Survivors
 * after the return").
 *
 * After the replay, memstub_stub_call_held allocates one block per entry of
 * the stub's release schedule (struct memstub_release: the survivors the
 * program freed at one time after the region ended, or never) and writes
 * every page of it, as the component had. The blocks belong to the runtime:
 * a list of generations (one per call) per schedule, under one mutex. They
 * are freed either by the timer thread at the recorded time after the return
 * (MEMSTUB_RELEASE_TIMER), or when the host calls memstub_release_now
 * (memstub_NAME_release()). Entries the program never freed stay held to the
 * end, reachable from here (so LeakSanitizer does not report them), and are
 * not freed at exit: the component's process held them at exit too.
 *
 * The timer thread is one for the process: it sleeps on a condition variable
 * (CLOCK_MONOTONIC) until the earliest deadline of every timed block held,
 * frees what is due, and exits when no timed block is left; a call with new
 * timed blocks starts it again. All signals are blocked in it. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "prim.h"

typedef struct held_block {
  char *p;        // NULL once released
  int64_t bytes;  // what it holds now (release_bytes may shrink it)
  int64_t due;    // absolute CLOCK_MONOTONIC ns, -1 never (the program leaked it)
} held_block;

typedef struct held_gen {
  struct held_gen *next;
  int timer;           // released by the timer thread
  size_t n, done;      // blocks; blocks[0..done) released (in schedule order)
  held_block blk[];
} held_gen;

typedef struct holder {
  struct holder *next;
  const struct memstub_release *rel;
  held_gen *first, *last;
  int64_t held;  // bytes held now
} holder;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static pthread_once_t cv_once = PTHREAD_ONCE_INIT;
static holder *holders;
static int timer_running;

static void cv_init(void) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&cv, &a);
  pthread_condattr_destroy(&a);
}

// A forked child has no timer thread: the next call starts one.
static void after_fork(void) {
  pthread_mutex_init(&mu, NULL);
  timer_running = 0;
}
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void fork_init(void) { pthread_atfork(NULL, NULL, after_fork); }

int memstub_release_check(const struct memstub_release *r, memstub_error *err) {
  if (!r) return memstub_error_set(err, -EINVAL, "no release schedule");
  if (r->abi != MEMSTUB_RELEASE_ABI)
    return memstub_error_set(err, -EINVAL, "release schedule: abi %d, this runtime reads %d",
                             (int)r->abi, MEMSTUB_RELEASE_ABI);
  if (r->mode != MEMSTUB_RELEASE_TIMER && r->mode != MEMSTUB_RELEASE_API)
    return memstub_error_set(err, -EINVAL, "release schedule: mode %d is neither timer (1) nor "
                             "api (2)", (int)r->mode);
  if (r->n < 0 || r->n > (1 << 24) || (r->n && (!r->after_ns || !r->bytes)))
    return memstub_error_set(err, -EINVAL, "release schedule: %lld entries", (long long)r->n);
  int64_t prev = 0, total = 0;
  for (int64_t i = 0; i < r->n; i++) {
    int64_t a = r->after_ns[i], b = r->bytes[i];
    if (b <= 0 || b > ((int64_t)1 << 46) - total)
      return memstub_error_set(err, -EINVAL, "release schedule: entry %lld: %lld bytes",
                               (long long)i, (long long)b);
    total += b;
    // Timed entries first, in order; then the never-freed ones (-1).
    if (a < -1 || (a >= 0 && a < prev) || (a >= 0 && prev < 0))
      return memstub_error_set(err, -EINVAL, "release schedule: entry %lld: after %lld ns (times "
                               "increase, then -1 for never)", (long long)i, (long long)a);
    prev = a;
  }
  return 0;
}

// The holder of r, made when new. pre: locked. NULL when out of memory.
static holder *holder_of(const struct memstub_release *r, int make) {
  for (holder *h = holders; h; h = h->next)
    if (h->rel == r) return h;
  if (!make) return NULL;
  holder *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->rel = r;
  h->next = holders;
  holders = h;
  return h;
}

// Free block b of a generation. pre: locked.
static int64_t free_block(holder *h, held_block *b) {
  int64_t n = b->bytes;
  free(b->p);
  b->p = NULL;
  b->bytes = 0;
  h->held -= n;
  return n;
}

// Generations with nothing left go; the timer forgets those with only
// never-freed blocks left. pre: locked.
static void prune(holder *h) {
  held_gen *prev = NULL;
  for (held_gen *g = h->first, *next; g; g = next) {
    next = g->next;
    while (g->done < g->n && !g->blk[g->done].p) g->done++;
    if (g->done < g->n) {
      if (g->blk[g->done].due < 0) g->timer = 0;  // the rest was never freed (it comes last)
      prev = g;
      continue;
    }
    if (prev)
      prev->next = next;
    else
      h->first = next;
    if (h->last == g) h->last = prev;
    free(g);
  }
}

static void *timer_main(void *arg) {
  (void)arg;
  ms__prim_set_timer_slack(1000);  // wake within 1 us of a deadline, not the default 50
  pthread_mutex_lock(&mu);
  for (;;) {
    int64_t now = ms__prim_now_ns(), next = -1;
    for (holder *h = holders; h; h = h->next) {
      for (held_gen *g = h->first; g; g = g->next) {
        if (!g->timer) continue;
        for (size_t i = g->done; i < g->n; i++) {
          held_block *b = &g->blk[i];
          if (!b->p || b->due < 0) continue;
          if (b->due <= now)
            free_block(h, b);
          else if (next < 0 || b->due < next)
            next = b->due;
          // Blocks are in due order: the first one not due ends the scan.
          if (b->p) break;
        }
      }
      prune(h);
    }
    if (next < 0) break;  // nothing timed is held: the thread ends
    struct timespec ts = {.tv_sec = next / 1000000000, .tv_nsec = next % 1000000000};
    int rc;
    do rc = pthread_cond_timedwait(&cv, &mu, &ts);
    while (rc == EINTR);
  }
  timer_running = 0;
  pthread_mutex_unlock(&mu);
  return NULL;
}

// Start the timer thread, or wake it for new deadlines. pre: locked.
static int timer_kick(void) {
  if (timer_running) {
    pthread_cond_signal(&cv);
    return 0;
  }
  pthread_attr_t a;
  if (pthread_attr_init(&a) != 0) return -ENOMEM;
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 64 * 1024);
  // The host's signals are never delivered to this thread.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t t;
  int rc = pthread_create(&t, &a, timer_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&a);
  if (rc != 0) return -rc;
  timer_running = 1;
  return 0;
}

int memstub_release_mode_parse(const char *name, int *mode) {
  if (strcmp(name, "timer") == 0)
    *mode = MEMSTUB_RELEASE_TIMER;
  else if (strcmp(name, "api") == 0)
    *mode = MEMSTUB_RELEASE_API;
  else
    return -EINVAL;
  return 0;
}

int memstub_stub_call_held(const struct memstub_stub *s, const struct memstub_release *r,
                           memstub_error *err) {
  int rc = memstub_release_check(r, err);
  if (rc < 0) return rc;
  int mode = r->mode;
  const char *v = getenv("MEMSTUB_RELEASE");
  if (v && *v && memstub_release_mode_parse(v, &mode) < 0)
    return memstub_error_set(err, -EINVAL, "MEMSTUB_RELEASE: '%s' is neither timer nor api", v);
  if ((rc = memstub_stub_call(s, err)) < 0) return rc;
  // The replay's block is freed; the survivors are made again, as they were.
  held_gen *g = calloc(1, sizeof *g + (size_t)r->n * sizeof(held_block));
  if (!g) return memstub_error_set(err, -ENOMEM, "holding the survivors: out of memory");
  g->n = (size_t)r->n;
  g->timer = mode == MEMSTUB_RELEASE_TIMER;
  long page = ms__prim_page_size();
  int64_t total = 0;
  for (size_t i = 0; i < g->n; i++) {
    int64_t b = r->bytes[i];
    char *p = malloc((size_t)b);
    if (!p) {
      for (size_t k = 0; k < i; k++) free(g->blk[k].p);
      free(g);
      return memstub_error_set(err, -ENOMEM, "holding the survivors: %lld bytes: out of memory",
                               (long long)b);
    }
    for (int64_t o = 0; o < b; o += page) p[o] = 1;
    p[b - 1] = 1;
    g->blk[i] = (held_block){p, b, -1};
    total += b;
  }
  int64_t ret = ms__prim_now_ns();  // the return: the schedule counts from here
  for (size_t i = 0; i < g->n; i++)
    if (r->after_ns[i] >= 0) g->blk[i].due = ret + r->after_ns[i];
  pthread_once(&cv_once, cv_init);
  pthread_once(&fork_once, fork_init);
  pthread_mutex_lock(&mu);
  holder *h = holder_of(r, 1);
  if (!h) {
    pthread_mutex_unlock(&mu);
    for (size_t k = 0; k < g->n; k++) free(g->blk[k].p);
    free(g);
    return memstub_error_set(err, -ENOMEM, "holding the survivors: out of memory");
  }
  if (h->last)
    h->last->next = g;
  else
    h->first = g;
  h->last = g;
  h->held += total;
  int timed = g->timer && g->n && r->after_ns[0] >= 0;
  rc = timed ? timer_kick() : 0;
  if (rc < 0) {
    // No timer thread: the blocks stay held until the host releases them.
    g->timer = 0;
    memstub_error_set(err, rc, "holding the survivors: no timer thread (%s); they stay held "
                      "until memstub_NAME_release()", strerror(-rc));
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

int64_t memstub_release_now(const struct memstub_release *r, int64_t max_bytes) {
  pthread_once(&cv_once, cv_init);
  pthread_mutex_lock(&mu);
  holder *h = holder_of(r, 0);
  int64_t done = 0;
  // Oldest call first, each in its recorded order; never-freed blocks stay.
  for (held_gen *g = h ? h->first : NULL; g && (max_bytes < 0 || done < max_bytes); g = g->next) {
    for (size_t i = g->done; i < g->n && (max_bytes < 0 || done < max_bytes); i++) {
      held_block *b = &g->blk[i];
      if (!b->p || r->after_ns[i] < 0) continue;
      int64_t left = max_bytes < 0 ? INT64_MAX : max_bytes - done;
      if (b->bytes <= left) {
        done += free_block(h, b);
        continue;
      }
      // Part of a block: it shrinks in place (a realloc that fails keeps it).
      char *q = realloc(b->p, (size_t)(b->bytes - left));
      if (!q) break;
      b->p = q;
      b->bytes -= left;
      h->held -= left;
      done += left;
    }
  }
  if (h) prune(h);
  pthread_mutex_unlock(&mu);
  return done;
}

int64_t memstub_release_held(const struct memstub_release *r) {
  pthread_mutex_lock(&mu);
  holder *h = holder_of(r, 0);
  int64_t n = h ? h->held : 0;
  pthread_mutex_unlock(&mu);
  return n;
}
