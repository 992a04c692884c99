// A standard ALU-loop neighbour (issue 32 item 2; docs/runtime.md, "Work as
// work"): register-only arithmetic that touches no memory, until it is
// killed or SECONDS have passed. Beside it a component slows by what it
// shares of the core (none on separate cores without SMT, the CPU's
// frequency budget, the hypervisor's); its slowdown against stream's tells
// how much of the component's time is bound by memory.
//
//   alu [SECONDS]   (default 3600 s)
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
  double secs = argc > 1 ? strtod(argv[1], NULL) : 3600;
  if (!(secs > 0)) {
    fprintf(stderr, "usage: alu [SECONDS]\n");
    return 2;
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  uint64_t x = (uint64_t)a.tv_nsec, steps = 0;
  for (;;) {
    for (int i = 0; i < 10000000; i++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      __asm__ volatile("" : "+r"(x));
    }
    steps += 10000000;
    clock_gettime(CLOCK_MONOTONIC, &b);
    double t = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    if (t >= secs) {
      printf("alu: %.3g steps/ns\n", (double)steps / t / 1e9);
      return 0;
    }
  }
}
