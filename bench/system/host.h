/* bench/system/host.h: what the two host programs share (issue 18). Not part
 * of memstub: the hosts are the "system" whose component memstub replaces.
 *
 * A host times its own phases with CLOCK_MONOTONIC and prints them on stderr
 * as one line "host: KEY=VALUE ..." (ns), which bench/system/run reads:
 *   before_ns     its own work before the component (main thread)
 *   component_ns  the component's call (the real library call or the stub)
 *   beside_ns     the other thread's work, which runs while the component does
 *   after_ns      its own work after the component (main thread)
 *   total_ns      from main's start to the end of the after phase
 *   comp0_ns, comp1_ns  when the component started and returned, since
 *                 main's start
 *   anon0_kib, anon1_kib  the process's RssAnon (/proc/self/status) when
 *                 the component starts and when it has returned
 *   flt_before, flt_component, flt_after  the process's minor faults
 *                 (getrusage) in each phase (the component's include the
 *                 beside thread's while it runs)
 * The same figures follow as `metric NAME VALUE` lines (docs/sweep.md), which
 * `memstub sweep` reads into its table (host_report; times in ms,
 * RssAnon in MiB).
 * The beside thread does a fixed amount of work (not a fixed time), so its
 * time is the interference the component (or its stub) causes it. */
#ifndef BENCH_SYSTEM_HOST_H
#define BENCH_SYSTEM_HOST_H

#include <pthread.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline int64_t host_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// The process's RssAnon in KiB, -1 if unreadable.
static inline long host_anon_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "RssAnon: %ld", &v) == 1) break;
  fclose(f);
  return v;
}

// The process's minor faults so far.
static inline long host_minflt(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : -1;
}

/* The host's figures on stderr (ns, KiB and faults in; every host prints
 * them so): the "host:" line bench/system/run reads, extra ("check=X", ...)
 * at its end, then the same as `metric NAME VALUE` lines, the form
 * `memstub sweep` reads (docs/sweep.md; times in ms, RssAnon in MiB).
 * t: main's start, the end of the before phase, the component's start and
 * return, the beside thread joined, the end of the after phase; anon: RssAnon
 * at the component's start and return; flt: the minor faults at t[2..5]. */
static inline void host_report(const int64_t t[6], const long anon[2], const long flt[4],
                               int64_t beside_ns, const char *extra) {
  int64_t before = t[1] - t[0], comp = t[3] - t[2], after = t[5] - t[4], total = t[5] - t[0];
  long fc = flt[1] - flt[0], fa = flt[3] - flt[2];
  fprintf(stderr,
          "host: before_ns=%lld component_ns=%lld beside_ns=%lld after_ns=%lld total_ns=%lld "
          "comp0_ns=%lld comp1_ns=%lld anon0_kib=%ld anon1_kib=%ld flt_before=%ld "
          "flt_component=%ld flt_after=%ld %s\n",
          (long long)before, (long long)comp, (long long)beside_ns, (long long)after,
          (long long)total, (long long)(t[2] - t[0]), (long long)(t[3] - t[0]), anon[0], anon[1],
          flt[0], fc, fa, extra);
  fprintf(stderr,
          "metric before_ms %.3f\nmetric component_ms %.3f\nmetric beside_ms %.3f\n"
          "metric after_ms %.3f\nmetric total_ms %.3f\n"
          "metric anon_start_mib %.3f\nmetric anon_return_mib %.3f\n"
          "metric faults_before %ld\nmetric faults_component %ld\nmetric faults_after %ld\n",
          before / 1e6, comp / 1e6, beside_ns / 1e6, after / 1e6, total / 1e6, anon[0] / 1024.0,
          anon[1] / 1024.0, flt[0], fc, fa);
}

// A 64-bit generator (splitmix64): the same data in every run.
static inline uint64_t host_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline void *host_xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) {
    fprintf(stderr, "host: out of memory (%zu bytes)\n", n);
    exit(2);
  }
  return p;
}

/* The beside thread: its own working set (allocated and written before the
 * component starts), then `passes` passes of a hash and a shuffle over it;
 * the working set is freed by host_beside_join, after the component has
 * returned. So the process's resident memory changes while the component
 * runs are the component's own: the recorder's rss_bytes is the process's
 * RssAnon, and a working set freed in the middle of the component would be
 * recorded as the component's fall and replayed on top of the host's own
 * free (docs/case-study.md measures it). For the same reason the thread
 * stays until host_beside_join: a thread's end frees its tcache (glibc), an
 * allocator call of another thread in the middle of the component, which a
 * recording with --calls would hold and the call replay refuses. */
typedef struct {
  size_t bytes;
  int passes;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int ready, done;  // done: host_beside_join lets the thread end
  int64_t work_ns;
  uint64_t sum;
  uint64_t *v;
  pthread_t tid;
} host_beside;

static void *host_beside_main(void *arg) {
  host_beside *b = arg;
  size_t n = b->bytes / sizeof(uint64_t);
  uint64_t *v = host_xmalloc(n * sizeof *v), seed = 7;
  for (size_t i = 0; i < n; i++) v[i] = host_rand(&seed);
  pthread_mutex_lock(&b->mu);
  b->ready = 1;
  pthread_cond_signal(&b->cv);
  pthread_mutex_unlock(&b->mu);
  int64_t t0 = host_now_ns();
  uint64_t h = 1469598103934665603ULL;
  for (int p = 0; p < b->passes; p++) {
    for (size_t i = 0; i < n; i++) {
      h = (h ^ v[i]) * 1099511628211ULL;
      // a scattered swap per element: memory traffic, not only arithmetic
      size_t j = (size_t)(h % n);
      uint64_t t = v[i];
      v[i] = v[j];
      v[j] = t;
    }
  }
  b->work_ns = host_now_ns() - t0;
  b->sum = h;
  b->v = v;  // freed by host_beside_join, after the component has returned
  pthread_mutex_lock(&b->mu);  // and the thread ends then too
  while (!b->done) pthread_cond_wait(&b->cv, &b->mu);
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

// Start the beside thread and wait until its working set is in place (bytes 0: no thread).
static inline void host_beside_start(host_beside *b, size_t bytes, int passes) {
  memset(b, 0, sizeof *b);
  if (bytes == 0) return;
  b->bytes = bytes;
  b->passes = passes;
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cv, NULL);
  if (pthread_create(&b->tid, NULL, host_beside_main, b) != 0) {
    fprintf(stderr, "host: cannot start the beside thread\n");
    exit(2);
  }
  pthread_mutex_lock(&b->mu);
  while (!b->ready) pthread_cond_wait(&b->cv, &b->mu);
  pthread_mutex_unlock(&b->mu);
}

static inline void host_beside_join(host_beside *b) {
  if (b->bytes == 0) return;
  pthread_mutex_lock(&b->mu);
  b->done = 1;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  pthread_join(b->tid, NULL);
  free(b->v);
  pthread_mutex_destroy(&b->mu);
  pthread_cond_destroy(&b->cv);
}

#endif
