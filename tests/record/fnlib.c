/* tests/record/fnlib.c: a shared library with a function to scope with
 * `memstub record --function lib_work` (tests/test_record_function.c). */
#include <stdlib.h>
#include <string.h>

// Hold n KiB, every page written, then free it; the sum of a few bytes.
__attribute__((noinline, visibility("default"))) long lib_work(int n) {
  char *volatile p = malloc((size_t)n << 10);
  if (!p) return -1;
  memset(p, 1, (size_t)n << 10);
  long s = 0;
  for (int i = 0; i < n; i++) s += p[(size_t)i << 10];
  free(p);
  return s;
}
