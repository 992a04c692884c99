/* runtime/own.c: the runtime's own memory (the replay's state, its records,
 * scratch arrays) from mmap, never from the malloc family: a stub makes the
 * allocator calls its component made and no others, and an observer such as
 * heaptrack counts every call the process makes (docs/runtime.md, "Work"). */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

// The mapping's start and length, in front of the block (keeps 16-byte alignment).
#define OWN_HEAD 16
#define OWN_HUGE ((size_t)2 << 20)  // a huge page on x86-64 and aarch64 with 4 KiB pages

// p's head: the mapping it lies in.
static void own_head(char *p, char *map, size_t len) {
  memcpy(p - OWN_HEAD, &map, sizeof map);
  memcpy(p - OWN_HEAD + 8, &len, sizeof len);
}

void *ms__rt_own_calloc(size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes) || bytes > SIZE_MAX - OWN_HEAD) return NULL;
  size_t len = bytes + OWN_HEAD;
  char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  own_head(m + OWN_HEAD, m, len);  // the rest is zero, as mmap gives it
  return m + OWN_HEAD;
}

void *ms__rt_own_calloc_huge(size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes) || bytes > SIZE_MAX / 2) return NULL;
  if (bytes < OWN_HUGE / 2) return ms__rt_own_calloc(n, size);  // a megabyte or more
  // Room to start the block on a huge page's boundary, its head in the page before.
  size_t len = bytes + 2 * OWN_HUGE;
  char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  char *p = (char *)(((uintptr_t)m + OWN_HUGE) & ~(uintptr_t)(OWN_HUGE - 1));
  own_head(p, m, len);
#ifdef MADV_HUGEPAGE
  (void)madvise(p, (bytes + OWN_HUGE - 1) & ~(OWN_HUGE - 1), MADV_HUGEPAGE);
#endif
  return p;
}

void ms__rt_own_free(void *p) {
  if (!p) return;
  char *m;
  size_t len;
  memcpy(&m, (char *)p - OWN_HEAD, sizeof m);
  memcpy(&len, (char *)p - OWN_HEAD + 8, sizeof len);
  munmap(m, len);
}
