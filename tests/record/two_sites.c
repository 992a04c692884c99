/* Allocation sites with known bytes live at the heap's peak, for
 * tests/test_everyday.c (memstub record --sites, memstub sites): big_site
 * keeps 4 MiB in 1 KiB blocks, deep 2 MiB from one place reached by 8
 * backtraces (256 KiB at each level of a recursion), small_site 1 MiB; then
 * everything is freed. Peak: 7 MiB. */
#include <stdlib.h>
#include <string.h>

static void *keep[7168];
static int kept;

__attribute__((noinline)) static void big_site(void) {
  for (int i = 0; i < 4096; i++) {
    keep[kept] = malloc(1024);
    memset(keep[kept++], 1, 1024);
  }
}

__attribute__((noinline)) static int deep(int level) {
  for (int i = 0; i < 256; i++) {
    keep[kept] = malloc(1024);
    memset(keep[kept++], 3, 1024);
  }
  return level > 1 ? deep(level - 1) + 1 : 1;  // not a tail call: a frame per level
}

__attribute__((noinline)) static void small_site(void) {
  for (int i = 0; i < 1024; i++) {
    keep[kept] = malloc(1024);
    memset(keep[kept++], 2, 1024);
  }
}

int main(void) {
  big_site();
  int levels = deep(8);
  small_site();
  for (int i = 0; i < kept; i++) free(keep[i]);
  return levels == 8 ? 0 : 1;
}
