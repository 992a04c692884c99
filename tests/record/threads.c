// threads: four threads with known stacks and heaps, for memstub record
// --thread all (tests/test_record_threads.c). Run plain, it does the same.
//
//   thread 0 (main): holds 100000 bytes, creates 1, 2, 3 in that order,
//     frees its 100000, joins 1, 2, 3 (pthread_join, pthread_timedjoin_np,
//     pthread_tryjoin_np), then frees thread 1's result (40000
//     bytes: a cross-thread free of an ended thread's block).
//   thread 1: 40 frames of 1 KiB deep, allocates 10000, 20000, 30000 there,
//     frees 10000 and 20000, returns a block of 40000 (kept), frees 30000.
//   thread 2: 10 frames deep, allocates 5000 and hands it to thread 3, which
//     frees it (a cross-thread free of a running thread's block); then
//     grows a block by realloc 100 -> 200 -> 400 and frees it.
//   thread 3: 2 frames deep, frees thread 2's 5000, then calloc(10, 300)
//     and frees it.
// The threads wait on semaphores (no allocation) so that the order of the
// frees is fixed. Exit status 0, or 1 when something failed.
//
// For the costs in docs/recording.md (bench/record_overhead.sh, part threads):
//   threads spawn N   creates and joins N threads one after another, each
//                     making 100 malloc/free pairs of 64 bytes;
//   threads xfree N   thread 0 allocates N blocks of 64 bytes, one thread
//                     frees them all (N cross-thread frees), then N more are
//                     allocated and freed by thread 0 itself.
//   threads xrealloc  thread 0 allocates 3000 bytes, thread 1 reallocs them
//                     to 5000 and frees them (tests/test_record_threads.c).
//   threads mapper N  thread 0 holds 8 MiB of heap while thread 1 maps and
//                     unmaps N anonymous regions of 64 KiB (mmap, no
//                     allocator call): its rows' heap stays 0.
//   threads race N    thread 1 allocates N blocks of 16 to 4096 bytes and
//                     hands each to thread 2 through a ring of 64, which
//                     frees it at once while thread 1 goes on allocating:
//                     cross-thread frees racing the owner's allocations
//                     (both also allocate and free blocks of their own).
//   threads worker N  one worker thread makes N malloc/free pairs of 1 KiB,
//                     writing each block, while the main thread waits for it:
//                     the work is the worker's (the narrowed-scope warning).
//   threads alone N   the main thread makes N malloc/free pairs and no thread
//                     (a one-thread program recorded with every thread).
//   threads fnworker N  as worker, the pairs made by region_work (a function
//                     to record with --function, called on the worker only).
//   threads fnboth N  region_work(N) on the main thread, then on a worker.
//   threads blocked N a worker that blocks every signal spins N ms of its CPU
//                     time without an allocator call, then waits; the main
//                     thread exits while it still runs (as xz's workers).
//   threads crowd N   the process on one CPU, beside a child process that
//                     spins N ms of its CPU time there; the main thread (the
//                     only one) computes N ms of its own with a malloc/free
//                     pair of 1 KiB every 50 us of it: it waits for the CPU
//                     about as long as it computes (the run_delay_ns column,
//                     docs/recording.md).
//   threads crowd2 N  the same with two threads of the process computing N ms
//                     each on its one CPU, no child.
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static sem_t handed, freed;
static void *volatile handoff;
static volatile char sink;

// depth frames of about 1 KiB each, then fn at the bottom.
static void *deep(int depth, void *(*fn)(void)) {
  volatile char pad[1024];
  memset((char *)pad, depth, sizeof pad);
  void *r = depth > 1 ? deep(depth - 1, fn) : fn();
  sink = pad[depth % 1024];
  return r;
}

static void *one_bottom(void) {
  char *a = malloc(10000), *b = malloc(20000), *c = malloc(30000);
  if (!a || !b || !c) return NULL;
  a[0] = b[0] = c[0] = 1;
  free(a);
  free(b);
  char *r = malloc(40000);
  if (r) r[0] = 1;
  free(c);
  return r;
}

static void *two_bottom(void) {
  char *h = malloc(5000);
  if (!h) return NULL;
  h[0] = 1;
  handoff = h;
  sem_post(&handed);
  while (sem_wait(&freed) != 0) {
  }
  char *g = malloc(100), *g2;
  if (!g) return NULL;
  if (!(g2 = realloc(g, 200))) return NULL;
  if (!(g = realloc(g2, 400))) return NULL;
  g[0] = 1;
  free(g);
  return (void *)1;
}

static void *three_bottom(void) {
  while (sem_wait(&handed) != 0) {
  }
  free(handoff);
  sem_post(&freed);
  char *z = calloc(10, 300);
  if (!z) return NULL;
  sink = z[0];
  free(z);
  return (void *)1;
}

static void *one(void *a) { return (void)a, deep(40, one_bottom); }
static void *two(void *a) { return (void)a, deep(10, two_bottom); }
static void *three(void *a) { return (void)a, deep(2, three_bottom); }

static void *spawned(void *a) {
  for (int i = 0; i < 100; i++) {
    void *p = malloc(64);
    if (!p) return NULL;
    free(p);
  }
  return a;
}

static void **blocks;
static long nblocks;

static void *free_all(void *a) {
  for (long i = 0; i < nblocks; i++) free(blocks[i]);
  return a;
}

static void *grow(void *a) {
  char *q = realloc(a, 5000);
  if (!q) return NULL;
  q[4999] = 1;
  free(q);
  return (void *)1;
}

static int xrealloc(void) {
  char *p = malloc(3000);
  if (!p) return 1;
  p[0] = 1;
  pthread_t t;
  void *r;
  return pthread_create(&t, NULL, grow, p) != 0 || pthread_join(t, &r) != 0 || !r;
}

/* race: a ring of 64 slots from thread 1 (producer) to thread 2. */
#define RING 64
static void *volatile ring[RING];
static long race_n;

static void *race_producer(void *arg) {
  (void)arg;
  uint64_t x = 88172645463325252ull;
  for (long i = 0; i < race_n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    void *p = malloc(16 + x % 4081);
    void *own = malloc(32 + x % 97);
    if (!p || !own) return (void *)1;
    sink = ((char *)p)[0] = 1;
    free(own);
    while (__atomic_load_n(&ring[i % RING], __ATOMIC_ACQUIRE)) sched_yield();
    __atomic_store_n(&ring[i % RING], p, __ATOMIC_RELEASE);
  }
  return NULL;
}

static void *race_consumer(void *arg) {
  (void)arg;
  for (long i = 0; i < race_n; i++) {
    void *p;
    while (!(p = __atomic_exchange_n(&ring[i % RING], NULL, __ATOMIC_ACQ_REL))) sched_yield();
    free(p);
    void *own = malloc(48);
    free(own);
  }
  return NULL;
}

static int race(long n) {
  race_n = n;
  pthread_t a, b;
  void *ra, *rb;
  if (pthread_create(&a, NULL, race_producer, NULL) != 0 ||
      pthread_create(&b, NULL, race_consumer, NULL) != 0)
    return 1;
  if (pthread_join(a, &ra) != 0 || pthread_join(b, &rb) != 0) return 1;
  return ra || rb;
}

// n malloc/free pairs of 1 KiB, each block written; NULL when one failed.
static void *pairs(void *arg) {
  long n = (long)(intptr_t)arg;
  for (long i = 0; i < n; i++) {
    char *p = malloc(1024);
    if (!p) return NULL;
    memset(p, (int)i, 1024);
    free(p);
  }
  return (void *)1;
}

static sem_t spun;

// Every signal blocked, 4 MiB malloc'd and written (about 1,024 faults after
// the call), arg ms of this thread's CPU time spun, then wait forever.
static void *blocked_spin(void *arg) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  char *volatile buf = malloc(4 << 20);
  if (buf) memset(buf, 1, 4 << 20);
  long ms = (long)(intptr_t)arg;
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
  sem_post(&spun);
  for (;;) pause();
  return NULL;
}

// arg regions of 64 KiB mapped, written and unmapped, one after another.
static void *mapper(void *arg) {
  for (long i = 0; i < (long)(intptr_t)arg; i++) {
    char *p = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    p[0] = 1;
    munmap(p, 64 << 10);
  }
  return (void *)1;
}

// arg ms of this thread's CPU time, a malloc/free pair every 50 us of it.
static void *crowd(void *arg) {
  long ms = (long)(intptr_t)arg;
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  long long used, next = 0;
  do {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    used = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
    if (used >= next) {
      char *volatile p = malloc(1024);
      if (!p) return NULL;
      p[0] = 1;
      free(p);
      next = used + 50000;
    }
  } while (used < ms * 1000000LL);
  return (void *)1;
}

// n pairs as pairs() makes them, with a frame of its own: --function patches it.
__attribute__((noinline)) static void *region_work(void *arg) {
  volatile char frame[256];
  frame[0] = 1;
  void *r = pairs(arg);
  return frame[0] ? r : NULL;
}

static int bench(const char *mode, long n) {
  if (n <= 0) return 1;
  if (strcmp(mode, "race") == 0) return race(n);
  if (strcmp(mode, "alone") == 0) return pairs((void *)(intptr_t)n) ? 0 : 1;
  if (strcmp(mode, "blocked") == 0) {
    pthread_t t;
    if (sem_init(&spun, 0, 0) != 0 || pthread_create(&t, NULL, blocked_spin, (void *)(intptr_t)n))
      return 1;
    while (sem_wait(&spun) != 0) {
    }
    return 0;  // exit with the worker still running
  }
  if (strcmp(mode, "fnboth") == 0) {
    pthread_t t;
    void *r;
    if (!region_work((void *)(intptr_t)n) ||
        pthread_create(&t, NULL, region_work, (void *)(intptr_t)n) != 0 || pthread_join(t, &r) != 0)
      return 1;
    return r ? 0 : 1;
  }
  if (strcmp(mode, "worker") == 0 || strcmp(mode, "fnworker") == 0) {
    pthread_t t;
    void *r;
    if (pthread_create(&t, NULL, mode[0] == 'f' ? region_work : pairs, (void *)(intptr_t)n) != 0 ||
        pthread_join(t, &r) != 0)
      return 1;
    return r ? 0 : 1;
  }
  if (strcmp(mode, "crowd") == 0 || strcmp(mode, "crowd2") == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    int cpu = sched_getcpu();
    CPU_SET(cpu >= 0 ? cpu : 0, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return 1;
    if (mode[5] == '\0') {  // a neighbour process, then this thread's own work
      pid_t kid = fork();
      if (kid < 0) return 1;
      if (kid == 0) {
        struct timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < n);
        _exit(0);
      }
      void *r = crowd((void *)(intptr_t)n);
      int st;
      return waitpid(kid, &st, 0) == kid && r ? 0 : 1;
    }
    pthread_t t[2];
    void *r[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++)
      if (pthread_create(&t[i], NULL, crowd, (void *)(intptr_t)n) != 0) return 1;
    for (int i = 0; i < 2; i++)
      if (pthread_join(t[i], &r[i]) != 0) return 1;
    return r[0] && r[1] ? 0 : 1;
  }
  if (strcmp(mode, "mapper") == 0) {
    pthread_t t;
    void *r;
    char *volatile held = malloc(8 << 20);
    if (!held || pthread_create(&t, NULL, mapper, (void *)(intptr_t)n) != 0 ||
        pthread_join(t, &r) != 0)
      return 1;
    held[0] = 1;
    free(held);
    return r ? 0 : 1;
  }
  if (strcmp(mode, "spawn") == 0) {
    for (long i = 0; i < n; i++) {
      pthread_t t;
      void *r;
      if (pthread_create(&t, NULL, spawned, (void *)1) != 0 || pthread_join(t, &r) != 0 || !r)
        return 1;
    }
    return 0;
  }
  if (strcmp(mode, "xfree") != 0) return 1;
  nblocks = n;
  if (!(blocks = malloc((size_t)n * sizeof *blocks))) return 1;
  for (long i = 0; i < n; i++)
    if (!(blocks[i] = malloc(64))) return 1;
  pthread_t t;
  void *r;
  if (pthread_create(&t, NULL, free_all, (void *)1) != 0 || pthread_join(t, &r) != 0) return 1;
  for (long i = 0; i < n; i++)
    if (!(blocks[i] = malloc(64))) return 1;
  free_all(NULL);
  free(blocks);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3) return bench(argv[1], strtol(argv[2], NULL, 10));
  if (argc == 2) return strcmp(argv[1], "xrealloc") == 0 ? xrealloc() : 1;
  if (sem_init(&handed, 0, 0) != 0 || sem_init(&freed, 0, 0) != 0) return 1;
  char *mine = malloc(100000);
  if (!mine) return 1;
  mine[0] = 1;
  pthread_t t[3];
  void *(*fn[3])(void *) = {one, two, three};
  for (int i = 0; i < 3; i++)
    if (pthread_create(&t[i], NULL, fn[i], NULL) != 0) return 1;
  free(mine);
  // The three ways to join: pthread_join, pthread_timedjoin_np, pthread_tryjoin_np.
  void *res[3];
  struct timespec far;
  clock_gettime(CLOCK_REALTIME, &far);
  far.tv_sec += 3600;
  if (pthread_join(t[0], &res[0]) != 0 || pthread_timedjoin_np(t[1], &res[1], &far) != 0) return 1;
  int rc;
  while ((rc = pthread_tryjoin_np(t[2], &res[2])) == EBUSY) sched_yield();
  if (rc != 0) return 1;
  for (int i = 0; i < 3; i++)
    if (!res[i]) return 1;
  free(res[0]);  // thread 1's 40000
  return 0;
}
