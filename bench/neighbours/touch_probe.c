// What one of a stub's memory touches costs here and now (issue 32 item 2):
// memstub_work_touch_measure's figures, ns per touch of a block of each
// size, on one line. fit_share.sh runs it alone and beside stream: their
// ratio is how much the work's memory share slows beside that neighbour.
//
//   touch_probe     prints "256k 1m 4m 16m 64m" figures in ns
#include <stdio.h>

#include "memstub/runtime.h"
#include "memstub/work.h"

int main(void) {
  double ns[MEMSTUB_WORK_TOUCH_SIZES];
  if (memstub_work_touch_measure(ns) < 0) {
    fprintf(stderr, "touch_probe: cannot map its buffer\n");
    return 1;
  }
  for (int k = 0; k < MEMSTUB_WORK_TOUCH_SIZES; k++)
    printf("%s%.4g", k ? " " : "", ns[k]);
  printf("\n");
  return 0;
}
