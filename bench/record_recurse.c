/* bench/record_recurse.c: a recursion-heavy program for the recorder's
 * overhead benchmark: a recursive search with sizeable frames that allocates
 * now and then, so the stack moves a lot between allocator calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long calls;

static long search(int depth, int width, unsigned seed) {
  char frame[192];
  memset(frame, (int)seed, sizeof frame);
  calls++;
  long acc = frame[seed % sizeof frame];
  if ((calls & 63) == 0) {
    char *buf = malloc(64 + (seed & 255));
    buf[0] = (char)depth;
    acc += buf[0];
    free(buf);
  }
  if (depth == 0) return acc;
  for (int i = 0; i < width; i++) acc += search(depth - 1, width, seed * 1103515245u + 12345u + (unsigned)i);
  return acc;
}

int main(int argc, char **argv) {
  int depth = argc > 1 ? atoi(argv[1]) : 9;
  long sum = 0;
  for (int r = 0; r < 4; r++) sum += search(depth, 5, (unsigned)r);
  // And one deep, narrow descent.
  sum += search(2000, 1, 7);
  printf("%ld %ld\n", sum, calls);
  return 0;
}
