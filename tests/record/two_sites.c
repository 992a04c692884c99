/* Two allocation sites with known bytes live at the heap's peak, for
 * tests/test_everyday.c (memstub record --sites, memstub sites): big_site
 * keeps 4 MiB in 1 KiB blocks, small_site 1 MiB; then everything is freed. */
#include <stdlib.h>
#include <string.h>

static void *keep[5120];

__attribute__((noinline)) static void big_site(void) {
  for (int i = 0; i < 4096; i++) {
    keep[i] = malloc(1024);
    memset(keep[i], 1, 1024);
  }
}

__attribute__((noinline)) static void small_site(void) {
  for (int i = 0; i < 1024; i++) {
    keep[4096 + i] = malloc(1024);
    memset(keep[4096 + i], 2, 1024);
  }
}

int main(void) {
  big_site();
  small_site();
  for (int i = 0; i < 5120; i++) free(keep[i]);
  return 0;
}
