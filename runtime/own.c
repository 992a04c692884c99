/* runtime/own.c: the runtime's own memory (the replay's state, its records,
 * scratch arrays) from mmap, never from the malloc family: a stub makes the
 * allocator calls its component made and no others, and an observer such as
 * heaptrack counts every call the process makes (docs/runtime.md, "Work"). */
#include <stdint.h>
#include <sys/mman.h>

#include "internal.h"

// The mapping's length, in front of the block (keeps 16-byte alignment).
#define OWN_HEAD 16

void *ms__rt_own_calloc(size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes) || bytes > SIZE_MAX - OWN_HEAD) return NULL;
  size_t len = bytes + OWN_HEAD;
  char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  *(size_t *)p = len;  // the rest is zero, as mmap gives it
  return p + OWN_HEAD;
}

void ms__rt_own_free(void *p) {
  if (!p) return;
  char *m = (char *)p - OWN_HEAD;
  munmap(m, *(size_t *)m);
}
