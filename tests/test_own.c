// The runtime's own memory (runtime/own.c): zeroed blocks from mmap, and a
// replay whose allocator calls are its heap's alone. The malloc family is
// interposed in this program (forwarding to glibc's) to count the calls, as
// an observer such as heaptrack does from outside.
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"  // runtime/internal.h: ms__rt_own_calloc
#include "memstub/runtime.h"

#if !defined(MEMSTUB_SANITIZED)  // a sanitizer's allocator is the one in charge there
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static int counting;  // calls are counted while set
static long calls;

static void counted(void) {
  if (__atomic_load_n(&counting, __ATOMIC_RELAXED)) __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t n) {
  counted();
  return __libc_malloc(n);
}

void *calloc(size_t n, size_t size) {
  counted();
  return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n) {
  counted();
  return __libc_realloc(p, n);
}

void free(void *p) {
  if (p) counted();
  __libc_free(p);
}
#endif

START_TEST(test_own_calloc) {
  int64_t *a = ms__rt_own_calloc(1000, sizeof *a);
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq((uintptr_t)a % 16, 0);
  for (int i = 0; i < 1000; i++) ck_assert_int_eq(a[i], 0);
  a[999] = 7;  // the whole block is writable
  ms__rt_own_free(a);
  ms__rt_own_free(NULL);
  ck_assert_ptr_null(ms__rt_own_calloc(SIZE_MAX / 2, 4));  // overflow
  ck_assert_ptr_null(ms__rt_own_calloc(1, SIZE_MAX - 8));
}
END_TEST

/* A scratch array of a megabyte or more starts on a 2 MiB boundary (huge
 * pages where the kernel gives them: the call replay's check of 400,001
 * blocks faulted 1 time, not 391), zeroed and writable to its end; a
 * smaller one is ms__rt_own_calloc's. Both go back with ms__rt_own_free. */
START_TEST(test_own_calloc_huge) {
  size_t n = (size_t)3 << 18;  // 3 MiB of 4-byte words
  int32_t *a = ms__rt_own_calloc_huge(n, sizeof *a);
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq((uintptr_t)a % ((uintptr_t)2 << 20), 0);
  for (size_t i = 0; i < n; i += 1024) ck_assert_int_eq(a[i], 0);
  a[n - 1] = 7;
  ms__rt_own_free(a);
  int32_t *b = ms__rt_own_calloc_huge(1000, sizeof *b);
  ck_assert_ptr_nonnull(b);
  ck_assert_int_eq((uintptr_t)b % 16, 0);
  b[999] = 7;
  ms__rt_own_free(b);
  ck_assert_ptr_null(ms__rt_own_calloc_huge(SIZE_MAX / 2, 4));  // overflow
}
END_TEST

/* A replay of a stub without heap changes makes its heap's allocator calls
 * (the block's malloc and free, and the probe's malloc and free that see
 * whether mallinfo2 sees the allocator: 4) and, at most, glibc's for the
 * replay thread (its DTV, unless a cached thread stack brings one): the
 * replay's state, records and scratch pointers, the stub's check and the
 * /proc reads make none. They made 25 when they came from malloc and stdio. */
START_TEST(test_replay_makes_only_its_heaps_calls) {
#if !defined(MEMSTUB_SANITIZED)
  static struct memAlloc use[4] = {{.time = 1000, .stackAlloc = 256},
                                   {.time = 1000, .stackAlloc = 512},
                                   {.time = 1000, .stackAlloc = -512},
                                   {.time = 1000, .stackAlloc = -256}};
  static int64_t point[4] = {1, 2, 3, 4};
  struct memstub_stub s = {.abi = MEMSTUB_STUB_ABI, .numdata = 4, .use = use, .point = point,
                           .norig = 5, .source = "own"};
  for (unsigned measure = 0; measure <= MEMSTUB_MEASURE_STACK; measure += MEMSTUB_MEASURE_STACK) {
    memstub_replay_options o;
    memstub_replay_options_init(&o);
    o.measure = measure;  // the records too, when measuring the stack
    memstub_replay *r = NULL;
    memstub_error err = {0};
    __atomic_store_n(&calls, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&counting, 1, __ATOMIC_RELAXED);
    int rc = memstub_replay_run(&s, &o, &r, &err);
    memstub_replay_free(r);
    __atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
    ck_assert_msg(rc == 0, "replay: %s", err.msg);
    long n = __atomic_load_n(&calls, __ATOMIC_RELAXED);
    ck_assert_msg(n >= 4 && n <= 5, "measure %u: %ld allocator calls", measure, n);
  }
#endif
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("own");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_own_calloc);
  tcase_add_test(tc, test_own_calloc_huge);
  tcase_add_test(tc, test_replay_makes_only_its_heaps_calls);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
