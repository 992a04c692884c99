// docs/gallery/alloc.c: the small program the gallery records
// (docs/gallery/make.sh): a heap that grows in 40 steps of 16 KiB more each
// and is freed in two passes, recursion for the stack, pauses between.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void pause_ms(long ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

// n frames of 512 bytes each, written so that they are really used.
static long depth(int n, const char *seed) {
  char frame[512];
  memset(frame, n, sizeof frame);
  frame[0] = seed[0];
  return n ? depth(n - 1, frame) + frame[n % 512] : frame[1];
}

int main(void) {
  enum { N = 40 };
  char *blocks[N];
  long sum = 0;
  for (int i = 0; i < N; i++) {
    size_t size = (size_t)(i + 1) * 16384;
    if (!(blocks[i] = malloc(size))) return 1;
    memset(blocks[i], i, size);
    if (i % 8 == 0) sum += depth(20 + i, blocks[i]);
    pause_ms(3);
  }
  for (int i = N - 1; i >= 0; i -= 2) {  // every other block, slowly
    free(blocks[i]);
    pause_ms(2);
  }
  for (int i = N - 2; i >= 0; i -= 2) free(blocks[i]);
  printf("%ld\n", sum);
  return 0;
}
