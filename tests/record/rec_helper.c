/* tests/record/rec_helper.c: programs with known allocation patterns for the
 * recorder tests (tests/test_record.c). Built without sanitizers: it runs
 * with the LD_PRELOAD recorder. Usage: rec_helper MODE [ARGS]. Nothing is
 * printed before the pattern is done, so stdio's buffers stay out of it. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "memstub/probe.h"

static void *volatile sink;

// Keep p from being optimised away (a per-call sink: threads must not share
// one, or one thread frees the block another just stored there).
static inline void keep(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

// Spin for ms of this thread's CPU time.
static void spin_ms(int ms) {
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

/* Every function of the malloc family, all blocks live at once: peak heap
 * 3000 + 1000 + 4000 + 500 + 640 + 320 + 4096 + 100 = 13656 bytes. */
static int pattern(void) {
  char *a = malloc(1000);
  char *b = calloc(10, 100);
  a = realloc(a, 3000);
  char *c = reallocarray(NULL, 100, 40);
  void *d = NULL;
  if (posix_memalign(&d, 64, 500) != 0) return 1;
  void *e = aligned_alloc(64, 640);
  void *f = memalign(32, 320);
  void *g = valloc(4096);
  void *h = pvalloc(100);
  if (!a || !b || !c || !e || !f || !g || !h) return 1;
  memset(a, 1, 3000);
  free(h);
  free(g);
  free(f);
  free(e);
  free(d);
  free(c);
  free(b);
  free(a);
  free(NULL);
  return 0;
}

/* Calls that fail: calloc and reallocarray of 2^62 x 16 (beyond 64 bits)
 * and malloc(2^60), beside a reallocarray of 10 x 100 that succeeds. */
static int failing(void) {
  volatile size_t big = (size_t)1 << 62, huge = (size_t)1 << 60, sixteen = 16;
  void *a = calloc(big, sixteen);
  char *volatile p = reallocarray(NULL, 10, 100);  // volatile: still p's after the failure
  void *b = reallocarray(p, big, sixteen);
  void *c = malloc(huge);
  int ok = !a && p && !b && !c;
  free(p);
  return ok ? 0 : 1;
}

/* Recursion with 1 KiB frames; allocates at the bottom (alloc=1) or only
 * spins there, so that only the timer sees the depth (alloc=0). */
static __attribute__((noinline)) int deep(int n, int alloc, int spin) {
  volatile char pad[1024];
  memset((char *)pad, n, sizeof pad);
  if (n > 0) return deep(n - 1, alloc, spin) + pad[5];
  if (alloc) {
    void *p = malloc(64);
    keep(p);
    free(p);
  }
  if (spin) spin_ms(spin);
  return pad[7];
}

static void *worker(void *arg) {
  long k = (long)arg;
  char *mine = malloc((size_t)k * 1000);
  for (int i = 0; i < 20000; i++) {
    void *p = malloc(16);
    keep(p);
    free(p);
  }
  spin_ms(20);
  free(mine);
  return NULL;
}

static int threads(void) {
  pthread_t th[4];
  for (long k = 0; k < 4; k++)
    if (pthread_create(&th[k], NULL, worker, (void *)(k + 1)) != 0) return 1;
  for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
  return 0;
}

/* Parent holds 5000 bytes; a forked child and an exec'd child allocate a
 * lot and exit normally; neither may write or change the parent's trace. */
static int forks(const char *self) {
  char *a = malloc(5000);
  pid_t p = fork();
  if (p == 0) {
    char *big = malloc(1 << 20);
    memset(big, 1, 1 << 20);
    free(malloc(200000));
    exit(0);  // runs destructors: the recorder's must stay quiet
  }
  int st;
  waitpid(p, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
  p = fork();
  if (p == 0) {
    execl(self, self, "bigalloc", (char *)NULL);
    _exit(127);
  }
  waitpid(p, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
  free(a);
  return 0;
}

static int bigalloc(void) {
  char *big = malloc(3 << 20);
  memset(big, 2, 3 << 20);
  free(big);
  return 0;
}

/* Regions: 50000 bytes outside; region "work" three times, each with the
 * churn pattern and, nested, region "inner" with a deep recursion. Churn of
 * one "work": malloc 1024 (1*10) + calloc 256 (2*8) + realloc 4096 (3*12) +
 * free 4096 (1*12) + free 256 (1*8) = 82 over 5 calls and 9728 bytes. */
static __attribute__((noinline)) void work(void) {
  char *p1 = malloc(1024);
  char *p2 = calloc(4, 64);
  p1 = realloc(p1, 4096);
  free(p1);
  free(p2);
}

static int probe(void) {
  char *outside = malloc(50000);
  memset(outside, 3, 50000);
  free(malloc(100000));  // a peak outside the regions
  for (int i = 0; i < 3; i++) {
    if (memstub_probe_begin("work") != 1) return 1;
    memstub_probe_point();
    if (memstub_probe_begin("inner") != 2) return 1;
    deep(20, 1, 0);
    if (memstub_probe_end() != 1) return 1;
    work();
    memstub_probe_point();
    if (memstub_probe_end() != 0) return 1;
    spin_ms(2);
  }
  if (memstub_probe_end() != -EINVAL) return 1;
  free(outside);
  return 0;
}

/* Issue 12 item 2: 20 ms asleep, a region that allocates and keeps 9096
 * bytes, 20 ms asleep: the region's entry state (heap as it was) must
 * survive coalescing at every resolution. */
static int region_keep(void) {
  struct timespec ts = {0, 20000000};
  nanosleep(&ts, NULL);
  if (memstub_probe_begin("keep") != 1) return 1;
  char *p = malloc(9096);
  memset(p, 4, 9096);
  sink = p;
  if (memstub_probe_end() != 0) return 1;
  nanosleep(&ts, NULL);
  return 0;
}

/* A probe region of 3000 malloc/free pairs that leaves 100 kB alive (rows,
 * and a survivor for TRACE.generations), then the file system of dir filled
 * with DIR/filler until only free_kib KiB are left: the recorder's files at
 * exit meet a full disk (tests/test_record_output.c). */
static int fill(const char *dir, long free_kib) {
  if (memstub_probe_begin("fill") != 1) return 1;
  for (int i = 0; i < 3000; i++) {
    void *p = malloc((size_t)(32 + i % 512));
    keep(p);
    free(p);
  }
  sink = malloc(100000);
  memset(sink, 6, 100000);
  if (memstub_probe_end() != 0) return 1;
  char path[4096];
  snprintf(path, sizeof path, "%s/filler", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  struct statvfs v;
  if (fd < 0 || fstatvfs(fd, &v) != 0) return 1;
  long long left = (long long)v.f_bavail * (long long)v.f_frsize - free_kib * 1024;
  static char zeros[4096];
  while (left > 0) {
    ssize_t w = write(fd, zeros, left < (long long)sizeof zeros ? (size_t)left : sizeof zeros);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // full already
    left -= w;
  }
  return close(fd) != 0 && errno != ENOSPC;
}

/* The program's first state: it allocates at once, within the first
 * bucket, and frees at the end: first row heap 0, last row heap 0. */
static int early(void) {
  char *p = malloc(9096);
  memset(p, 5, 9096);
  sink = p;
  struct timespec ts = {0, 20000000};
  nanosleep(&ts, NULL);
  free(p);
  sink = NULL;
  return 0;
}

static void *idle_worker(void *arg) {
  keep(arg);
  char *p = malloc(16);
  keep(p);
  free(p);
  return NULL;
}

// Two threads only (--thread 3 asks for one that never exists).
static int two_threads(void) {
  pthread_t th[2];
  for (long k = 0; k < 2; k++)
    if (pthread_create(&th[k], NULL, idle_worker, NULL) != 0) return 1;
  for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
  return 0;
}

// A thread ends the process with exit(3) while main waits in join.
static void *exiting_worker(void *arg) {
  (void)arg;
  sink = malloc(3333);
  exit(3);
}

static int thread_exit(void) {
  pthread_t th;
  if (pthread_create(&th, NULL, exiting_worker, NULL) != 0) return 1;
  pthread_join(th, NULL);
  return 0;  // never reached
}

// A thread replaces the process with "pattern" while main waits in join.
static const char *g_self;
static void *exec_worker(void *arg) {
  (void)arg;
  sink = malloc(5555);
  execl(g_self, g_self, "pattern", (char *)NULL);
  return NULL;
}

static int thread_exec(const char *self) {
  g_self = self;
  pthread_t th;
  if (pthread_create(&th, NULL, exec_worker, NULL) != 0) return 1;
  pthread_join(th, NULL);
  return 127;  // exec failed
}

/* A daemon's start: every descriptor closed (stdio included), the working
 * directory changed to /; then it allocates and exits normally. */
static int closefds(void) {
  sink = malloc(6666);
  for (int fd = 0; fd < 1024; fd++) close(fd);
  if (chdir("/") != 0) return 1;
  char *p = malloc(1000);
  keep(p);
  free(p);
  return 0;
}

#define MIB ((size_t)1 << 20)

// Write one byte per page of p[0..n).
static void touch(char *p, size_t n) {
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
}

/* Memory outside the heap (recorder/memory.c): sbrk of 2 MiB and back, then
 * 64 MiB mapped anonymous, half
 * of it touched, grown to 96 MiB by mremap, unmapped; a file mapping beside
 * it that must not count. CPU spins between the steps so that the sampler
 * sees the resident memory. */
static int mapped(const char *self) {
  // The break moved by the program itself counts too (2 MiB, then back).
  if (sbrk(2 * (intptr_t)MIB) == (void *)-1 || sbrk(-2 * (intptr_t)MIB) == (void *)-1) return 1;
  char *p = mmap(NULL, 64 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  int fd = open(self, O_RDONLY);
  void *f = fd >= 0 ? mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  if (f == MAP_FAILED) return 1;
  spin_ms(10);
  touch(p, 32 * MIB);
  spin_ms(40);
  char *q = mremap(p, 64 * MIB, 96 * MIB, MREMAP_MAYMOVE);
  if (q == MAP_FAILED) return 1;
  spin_ms(10);
  munmap(f, 65536);
  close(fd);
  munmap(q + 64 * MIB, 32 * MIB);  // the tail: back to 64 MiB
  spin_ms(10);
  munmap(q, 64 * MIB);
  spin_ms(10);
  return 0;
}

// 100 MiB requested, 10 MiB of it touched (the malloc family's own mmap).
static int lazy(void) {
  char *p = malloc(100 * MIB);
  if (!p) return 1;
  spin_ms(10);
  touch(p, 10 * MIB);
  spin_ms(40);
  free(p);
  spin_ms(10);
  return 0;
}

/* bigfree: a block of 8 MiB written whole, a second one made (its growth
 * samples the first's pages), the first freed (glibc unmaps it in the call,
 * in less than a timer tick), then 1000 small blocks made and freed at once:
 * rows with no growth and no tick between them. */
static int big_free(void) {
  char *a = malloc(8 * MIB);
  if (!a) return 1;
  touch(a, 8 * MIB);
  char *b = malloc(8 * MIB);
  if (!b) return 1;
  free(a);
  for (int i = 0; i < 1000; i++) {
    void *q = malloc(64);
    if (!q) return 1;
    keep(q);
    free(q);
  }
  free(b);
  return 0;
}

/* farblocks: 40 mmapped blocks (256 KiB, past glibc's 128 KiB threshold:
 * far from the arena's, where the call replay keeps their pointers in a
 * table of their own that grows at 16 and 32) beside small ones, every
 * other one freed, 20 made again in their places, one grown by realloc,
 * then all freed in another order. */
static int farblocks(void) {
  enum { N = 40 };
  char *big[N], *small[N];
  for (int i = 0; i < N; i++) {
    if (!(big[i] = malloc(256 << 10)) || !(small[i] = malloc(32 + i))) return 1;
    big[i][0] = small[i][0] = 1;
  }
  spin_ms(5);
  for (int i = 0; i < N; i += 2) free(big[i]);
  spin_ms(5);
  for (int i = 0; i < N; i += 2)
    if (!(big[i] = malloc((192 + i) << 10))) return 1;
  char *g = realloc(big[1], 1 << 20);
  if (!g) return 1;
  big[1] = g;
  spin_ms(5);
  for (int i = N - 1; i >= 0; i--) free(big[(i * 7) % N]), free(small[i]);
  return 0;
}

/* holds: two blocks of 32 MiB, the first never written, the second written
 * whole; the first freed (the rss stays), then the second (it falls). A
 * stub that put its pages in the first writes them again after its free. */
static int holds(void) {
  char *idle = malloc(32 * MIB), *used = malloc(32 * MIB);
  if (!idle || !used) return 1;
  spin_ms(10);
  touch(used, 32 * MIB);
  spin_ms(30);
  free(idle);
  spin_ms(20);
  free(used);
  spin_ms(10);
  return 0;
}

/* 400,000 blocks of 48 bytes, written (about 24 MiB of chunks): the pointer
 * table's slots for them take about 6 MiB, which rss_bytes must leave out. */
static int small_blocks(void) {
  enum { N = 400000 };
  char **v = malloc(N * sizeof *v);
  if (!v) return 1;
  for (long i = 0; i < N; i++) {
    if (!(v[i] = malloc(48))) return 1;
    memset(v[i], 1, 48);
  }
  spin_ms(5);
  for (long i = 0; i < N; i++) free(v[i]);
  free(v);
  return 0;
}

/* 4000 rounds of a 1500-byte temporary, freed at once, and a 200-byte block
 * kept (800,000 bytes at the peak), then all freed: a regular pattern of
 * large and small allocations, which the sites' sampling must not favour. */
static char *mixed_keep[4000];
static int mixed_blocks(void) {
  for (int i = 0; i < 4000; i++) {
    char *volatile tmp = malloc(1500);
    if (!tmp || !(mixed_keep[i] = malloc(200))) return 1;
    memset(mixed_keep[i], 1, 200);
    free(tmp);
  }
  for (int i = 0; i < 4000; i++) free(mixed_keep[i]);
  return 0;
}

/* 4000 blocks of 8 KiB, each written as it comes (a page cache's growth, 31.25
 * MiB), kept for 5 ms of CPU: every malloc grows the heap by a page or more,
 * so each could sample resident memory. */
static int page_blocks(void) {
  enum { N = 4000, SZ = 8192 };
  static char *v[N];
  for (int i = 0; i < N; i++) {
    if (!(v[i] = malloc(SZ))) return 1;
    memset(v[i], 1, SZ);
  }
  spin_ms(5);
  for (int i = 0; i < N; i++) free(v[i]);
  return 0;
}

/* 8 MiB mapped and touched before a probe region, 16 MiB more inside it:
 * resident memory counts from the region's begin, mapped memory (like the
 * heap) is the total mapped. */
static int region_mapped(void) {
  char *a = mmap(NULL, 8 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (a == MAP_FAILED) return 1;
  touch(a, 8 * MIB);
  spin_ms(5);
  if (memstub_probe_begin("map") != 1) return 1;
  char *b = mmap(NULL, 16 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED) return 1;
  touch(b, 16 * MIB);
  spin_ms(20);
  if (memstub_probe_end() != 0) return 1;
  munmap(b, 16 * MIB);
  munmap(a, 8 * MIB);
  return 0;
}

/* Known work (tests/test_record.c, work columns): 1000 malloc(32)/free
 * pairs, 30 ms asleep, 30 ms of CPU, then 3 calloc(1, 200000)/free pairs. */
static int known_work(void) {
  for (int i = 0; i < 1000; i++) {
    volatile char *p = malloc(32);
    if (!p) return 1;
    p[0] = 1;
    free((void *)p);
  }
  usleep(30000);
  spin_ms(30);
  for (int i = 0; i < 3; i++) {
    volatile char *p = calloc(1, 200000);
    if (!p) return 1;
    p[0] = 1;
    free((void *)p);
  }
  return 0;
}

/* Address layouts that defeat a table indexed by address (issue 27): a
 * million 24-byte blocks packed in 32-byte chunks, mmapped blocks at page
 * strides, mixed sizes, two big blocks, frees in random order and the
 * space reused. Prints the exact peak of the bytes requested ("peak N"),
 * which the recorded trace must equal. */
static int layout(long small) {
  enum { MAPPED = 300, MIXED = 100000 };
  void **s = malloc((size_t)small * sizeof *s);
  void *mp[MAPPED], **mx = malloc(MIXED * sizeof *mx);
  size_t *mxn = malloc(MIXED * sizeof *mxn);
  if (!s || !mx || !mxn) return 1;
  // The helper's own arrays count too: they are requested bytes.
  int64_t live = (int64_t)((size_t)small * sizeof *s + MIXED * sizeof *mx + MIXED * sizeof *mxn),
          peak = live;
  uint64_t x = 88172645463325252ull;
#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
#define TAKE(n) (live += (int64_t)(n), peak = live > peak ? live : peak)
  for (long i = 0; i < small; i++) {
    if (!(s[i] = malloc(24))) return 1;
    TAKE(24);
  }
  for (int i = 0; i < MAPPED; i++) {
    if (!(mp[i] = malloc(200 * 1024))) return 1;
    TAKE(200 * 1024);
  }
  for (int i = 0; i < MIXED; i++) {
    mxn[i] = 1 + NEXT() % 4000;
    if (!(mx[i] = malloc(mxn[i]))) return 1;
    TAKE(mxn[i]);
  }
  void *big1 = calloc(2 << 20, 8), *big2 = malloc(10 << 20);
  if (!big1 || !big2) return 1;
  TAKE((2 << 20) * 8);
  TAKE(10 << 20);
  // Half of the small blocks freed in random order, then allocated again.
  for (long i = small - 1; i > 0; i--) {
    long j = (long)(NEXT() % (uint64_t)(i + 1));
    void *t = s[i];
    s[i] = s[j];
    s[j] = t;
  }
  for (long i = 0; i < small / 2; i++) {
    free(s[i]);
    TAKE(-24);
  }
  for (long i = 0; i < small / 2; i++) {
    if (!(s[i] = malloc(24))) return 1;
    TAKE(24);
  }
  for (int i = 0; i < MIXED; i += 2) {
    size_t n = 1 + NEXT() % 8000;
    void *q = realloc(mx[i], n);
    if (!q) return 1;
    TAKE((int64_t)n - (int64_t)mxn[i]);
    mx[i] = q;
    mxn[i] = n;
  }
  free(big2);
  free(big1);
  for (int i = 0; i < MAPPED; i++) free(mp[i]);
  for (int i = 0; i < MIXED; i++) free(mx[i]);
  for (long i = 0; i < small; i++) free(s[i]);
  free(mxn);
  free(mx);
  free(s);
#undef TAKE
#undef NEXT
  printf("peak %lld\n", (long long)peak);
  return 0;
}

/* runs COUNTER LOG D0 [D1...] (memstub record --repeat, --reference): run k
 * (COUNTER holds k, then k + 1) holds (k + 1) * 1000 bytes for Dk ms (k
 * modulo the list), or exits 3 holding them when Dk is "x"; it appends 'R'
 * to LOG when the recorder is preloaded, 'N' when not. No stdio: its
 * buffers would be heap. */
static int runs(int argc, char **argv) {
  if (argc < 5) return 2;
  char b[32] = {0};
  long k = 0;
  int fd = open(argv[2], O_RDONLY);
  if (fd >= 0) {
    if (read(fd, b, sizeof b - 1) > 0) k = atol(b);
    close(fd);
  }
  int n = snprintf(b, sizeof b, "%ld", k + 1);
  fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, b, (size_t)n) != n) return 2;
  close(fd);
  const char *pre = getenv("LD_PRELOAD");
  // R recorded, T the recorder loaded to time regions (a reference run), N neither.
  char c = !pre || !strstr(pre, "memstub_record") ? 'N' : getenv("MEMSTUB_RECORD_TIMES") ? 'T' : 'R';
  fd = open(argv[3], O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0 || write(fd, &c, 1) != 1) return 2;
  close(fd);
  const char *d = argv[4 + k % (argc - 4)];
  char *p = malloc((size_t)(k + 1) * 1000);
  if (!p) return 1;
  memset(p, 1, (size_t)(k + 1) * 1000);
  sink = p;
  if (d[0] == 'x') return 3;
  long ms = atol(d);
  struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
  nanosleep(&ts, NULL);
  free(p);
  return 0;
}

/* otherstack: 20 frames of 1 KiB on the main stack, allocating at the
 * bottom; then 50 on a stack of the program's own (mmap, swapcontext), as
 * coroutines and a stub's stack switch run, allocating there too. */
static ucontext_t main_ctx, other_ctx;
static void on_other(void) { deep(50, 1, 0); }
static int other_stack(void) {
  deep(20, 1, 0);
  size_t len = (size_t)1 << 20;
  void *st = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (st == MAP_FAILED || getcontext(&other_ctx) != 0) return 1;
  other_ctx.uc_stack.ss_sp = st;
  other_ctx.uc_stack.ss_size = len;
  other_ctx.uc_link = &main_ctx;
  makecontext(&other_ctx, on_other, 0);
  if (swapcontext(&main_ctx, &other_ctx) != 0) return 1;
  munmap(st, len);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "pattern";
  int rc = 0;
  if (strcmp(mode, "layout") == 0) {
    rc = layout(argc > 2 ? atol(argv[2]) : 1000000);
  } else if (strcmp(mode, "pattern") == 0) {
    rc = pattern();
  } else if (strcmp(mode, "work") == 0) {
    rc = known_work();
  } else if (strcmp(mode, "deep") == 0) {
    deep(argc > 2 ? atoi(argv[2]) : 200, 1, 0);
  } else if (strcmp(mode, "spin") == 0) {
    // Deep without allocating: only the timer can see it (100 ms of CPU
    // time: the sampler ticks on the thread's CPU clock, at most at the
    // kernel's tick rate).
    deep(argc > 2 ? atoi(argv[2]) : 200, 0, 100);
  } else if (strcmp(mode, "threads") == 0) {
    rc = threads();
  } else if (strcmp(mode, "fork") == 0) {
    rc = forks(argv[0]);
  } else if (strcmp(mode, "mapped") == 0) {
    rc = mapped(argv[0]);
  } else if (strcmp(mode, "region_mapped") == 0) {
    rc = region_mapped();
  } else if (strcmp(mode, "lazy") == 0) {
    rc = lazy();
  } else if (strcmp(mode, "pages") == 0) {
    rc = page_blocks();
  } else if (strcmp(mode, "small") == 0) {
    rc = small_blocks();
  } else if (strcmp(mode, "failing") == 0) {
    rc = failing();
  } else if (strcmp(mode, "mixed") == 0) {
    rc = mixed_blocks();
  } else if (strcmp(mode, "bigalloc") == 0) {
    rc = bigalloc();
  } else if (strcmp(mode, "exec") == 0) {
    // The recorded process replaces itself: the trace is the new image's.
    sink = malloc(7777);
    execl(argv[0], argv[0], "pattern", (char *)NULL);
    return 127;
  } else if (strcmp(mode, "abort") == 0) {
    sink = malloc(3000);
    abort();
  } else if (strcmp(mode, "_exit") == 0) {
    sink = malloc(4444);
    _exit(0);
  } else if (strcmp(mode, "probe") == 0) {
    rc = probe();
  } else if (strcmp(mode, "many") == 0) {
    // 200000 malloc/free pairs over about 100 ms, for coalescing.
    for (int i = 0; i < 200; i++) {
      for (int j = 0; j < 1000; j++) {
        void *p = malloc((size_t)(16 + (j % 64) * 16));
        keep(p);
        free(p);
      }
      spin_ms(0);
      struct timespec ts = {0, 500000};
      nanosleep(&ts, NULL);
    }
  } else if (strcmp(mode, "fill") == 0 && argc > 3) {
    rc = fill(argv[2], atol(argv[3]));
  } else if (strcmp(mode, "region_keep") == 0) {
    rc = region_keep();
  } else if (strcmp(mode, "early") == 0) {
    rc = early();
  } else if (strcmp(mode, "two_threads") == 0) {
    rc = two_threads();
  } else if (strcmp(mode, "thread_exit") == 0) {
    rc = thread_exit();
  } else if (strcmp(mode, "thread_exec") == 0) {
    rc = thread_exec(argv[0]);
  } else if (strcmp(mode, "closefds") == 0) {
    rc = closefds();
  } else if (strcmp(mode, "segv") == 0) {
    sink = malloc(2222);
    *(volatile int *)sink = 1;
    raise(SIGSEGV);  // the default action, as a null dereference would get
    return 1;
  } else if (strcmp(mode, "sigpipe") == 0) {
    // A write to a pipe nobody reads, 200 ms after the allocation, as
    // 'memstub record -- PROGRAM | head' ends: SIGPIPE, its default action.
    int fd[2];
    sink = malloc(2323);
    if (pipe(fd) != 0) return 1;
    close(fd[0]);
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
    (void)!write(fd[1], "x", 1);
    return 1;
  } else if (strcmp(mode, "sigrt") == 0) {
    sink = malloc(2424);
    raise(SIGRTMIN + 1);  // no handler: its default action ends the process
    return 1;
  } else if (strcmp(mode, "rawexit") == 0) {
    sink = malloc(1212);
    syscall(SYS_exit_group, 0);  // past exit(), _exit() and every hook
    return 1;
  } else if (strcmp(mode, "region_kill") == 0) {
    // Killed inside a probe region: the salvaged trace is the region's.
    sink = malloc(50000);
    if (memstub_probe_begin("k") != 1) return 1;
    sink = malloc(4321);
    raise(SIGKILL);
    return 1;
  } else if (strcmp(mode, "regions_kill") == 0) {
    // Three probe regions, then killed (--occurrence 5 never comes).
    for (int i = 0; i < 3; i++) {
      if (memstub_probe_begin("r") != 1) return 1;
      sink = malloc(1000);
      free(sink);
      if (memstub_probe_end() != 0) return 1;
    }
    raise(SIGKILL);
    return 1;
  } else if (strcmp(mode, "sigkill") == 0) {
    sink = malloc(1111);
    raise(SIGKILL);
    return 1;
  } else if (strcmp(mode, "runs") == 0) {
    rc = runs(argc, argv);
  } else if (strcmp(mode, "bigfree") == 0) {
    rc = big_free();
  } else if (strcmp(mode, "farblocks") == 0) {
    rc = farblocks();
  } else if (strcmp(mode, "holds") == 0) {
    rc = holds();
  } else if (strcmp(mode, "otherstack") == 0) {
    rc = other_stack();
  } else {
    fprintf(stderr, "rec_helper: unknown mode '%s'\n", mode);
    return 2;
  }
  return rc;
}
