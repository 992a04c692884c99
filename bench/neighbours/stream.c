// A standard memory-streaming neighbour (issue 32 item 2; docs/runtime.md,
// "Work as work"): reads and writes a buffer far beyond the caches, line
// after line, until it is killed or SECONDS have passed, so that whatever
// runs on the other core shares the memory bandwidth with it.
//
//   stream [MIB [SECONDS]]   (default 256 MiB, 3600 s)
//
// Prints its bandwidth (MB/s of lines read and written) on exit by time.
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
  double secs = argc > 2 ? strtod(argv[2], NULL) : 3600;
  if (mib < 1 || !(secs > 0)) {
    fprintf(stderr, "usage: stream [MIB [SECONDS]]\n");
    return 2;
  }
  size_t n = mib << 20;
  volatile uint64_t *b = malloc(n);
  if (!b) {
    fprintf(stderr, "stream: cannot allocate %zu MiB\n", mib);
    return 1;
  }
  memset((void *)b, 1, n);
  double t0 = now_s(), t = t0;
  uint64_t passes = 0;
  // Every line: one word read and written, in address order (the prefetchers help: bandwidth).
  while (t - t0 < secs) {
    for (size_t i = 0; i < n / 8; i += 8) b[i] = b[i] + 1;
    passes++;
    t = now_s();
  }
  printf("stream: %zu MiB, %llu passes, %.0f MB/s\n", mib, (unsigned long long)passes,
         (double)passes * (double)n / (t - t0) / 1e6);
  return 0;
}
