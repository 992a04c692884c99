/* bench/record_hook.c: the recorder's cost per allocator call without cache
 * effects: a tight malloc(24)/free loop, whose block and table slot stay in
 * L1. Run it natively, under `memstub record`, and with the recorder
 * preloaded but passive, and subtract (bench/README.md).
 * Usage: record_hook [PAIRS]: PAIRS malloc/free pairs per round (default
 * 5000000); prints the best of 5 rounds in ns per call. */
#define _POSIX_C_SOURCE 200809L  // clock_gettime under -std=c11
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 5000000;
  if (n <= 0) {
    fprintf(stderr, "usage: record_hook [PAIRS > 0]\n");
    return 2;
  }
  void *volatile keep;  // the compiler must not drop the pair
  double best = 1e9;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (long i = 0; i < n; i++) {
      void *p = malloc(24);
      keep = p;
      free(p);
    }
    double t = (now() - t0) / (2.0 * (double)n) * 1e9;
    if (t < best) best = t;
  }
  (void)keep;
  printf("%.2f ns per call (best of 5 rounds of %ld malloc/free pairs)\n", best, n);
  return 0;
}
