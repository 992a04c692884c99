// common/malloc_model.h: glibc's chunk rules, as figures from malloc.c and
// against the running allocator (skipped where it is not glibc's: sanitizers).
#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "malloc_model.h"
#include "prim.h"

// Whether this process's malloc is plain glibc with its default settings.
static int live_glibc(const char *test) {
#if defined(MEMSTUB_SANITIZED) || !defined(__GLIBC__)
  fprintf(stderr, "%s: not glibc's malloc (sanitizer or other libc): skipped\n", test);
  return 0;
#else
  const char *t = getenv("GLIBC_TUNABLES");
  if ((t && strstr(t, "glibc.malloc.")) || getenv("MALLOC_MMAP_THRESHOLD_") ||
      getenv("MALLOC_TOP_PAD_")) {
    fprintf(stderr, "%s: malloc tuned through the environment: skipped\n", test);
    return 0;
  }
  return 1;
#endif
}

// request2size, with the figures glibc's malloc.c gives on a 64-bit host.
START_TEST(test_chunk_rounding) {
  static const struct {
    int64_t req, chunk;
  } cases[] = {{0, 32},    {1, 32},     {24, 32},     {25, 48},         {40, 48},
               {41, 64},   {100, 112},  {1000, 1008}, {1032, 1040},     {1033, 1056},
               {131064, 131072}, {131065, 131088}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_int_eq(ms__malloc_chunk(cases[i].req), cases[i].chunk);
    ck_assert_int_eq(ms__malloc_arena_usable(cases[i].req), cases[i].chunk - 8);
    ck_assert_int_eq(ms__malloc_chunk(ms__malloc_chunk_usable(cases[i].chunk)), cases[i].chunk);
  }
  ck_assert_int_eq(MS__MALLOC_MMAP_THRESHOLD, 131072);
  ck_assert_int_eq(MS__MALLOC_TCACHE_MAX_CHUNK, 1040);  // tidx2usize(63) = 1032 usable
  ck_assert_int_eq(MS__MALLOC_BLOCK_OVERHEAD, 8);
  ck_assert_int_eq(MS__MALLOC_MMAP_HEADER, 16);
}
END_TEST

// Page rounding of a mapped block and the largest request a mapping serves.
START_TEST(test_mmap_rounding) {
  static const int64_t pages[] = {4096, 16384, 65536};
  for (size_t k = 0; k < sizeof pages / sizeof pages[0]; k++) {
    int64_t page = pages[k];
    ck_assert_int_eq(ms__malloc_pages(0, page), 0);
    ck_assert_int_eq(ms__malloc_pages(1, page), 1);
    ck_assert_int_eq(ms__malloc_pages(page, page), 1);
    ck_assert_int_eq(ms__malloc_pages(page + 1, page), 2);
    for (int64_t m = 40 * page; m <= 48 * page; m += page) {
      int64_t r = ms__malloc_mmap_request_max(m);
      ck_assert_int_eq(ms__malloc_mmap_bytes(r, page), m);
      ck_assert_int_eq(ms__malloc_mmap_bytes(r + 1, page), m + page);
      ck_assert(ms__malloc_usable_is_mmapped(ms__malloc_mmap_usable(m), page));
    }
    // An arena chunk's usable size is never taken for a mapped one.
    for (int64_t req = 0; req < 4 * page; req += 7)
      ck_assert(!ms__malloc_usable_is_mmapped(ms__malloc_arena_usable(req), page));
  }
  ck_assert_int_eq(ms__malloc_mmap_bytes(200000, 4096), 49 * 4096);  // 200016 + 8 bytes
  ck_assert(!ms__malloc_usable_is_mmapped(0, 4096));
}
END_TEST

START_TEST(test_mmap_threshold_rule) {
  ck_assert(!ms__malloc_is_mmapped(131048, MS__MALLOC_MMAP_THRESHOLD));  // chunk 131056
  ck_assert(ms__malloc_is_mmapped(131049, MS__MALLOC_MMAP_THRESHOLD));   // chunk 131072
  ck_assert(!ms__malloc_is_mmapped(300000, 400000));
  ck_assert(ms__malloc_is_mmapped(400000, 400000));
}
END_TEST

/* The running allocator: requests split off the arena's top get the
 * modelled usable size. (Nothing is freed meanwhile; a chunk reused from a
 * bin the test did not fill may be larger, when the rest would be below the
 * minimum chunk, so nine in ten must be exact and all within that.) */
START_TEST(test_live_arena) {
  if (!live_glibc("test_live_arena")) return;
  enum { N = 2200 };
  void **p = calloc(N, sizeof *p);
  ck_assert_ptr_nonnull(p);
  int n = 0, exact = 0;
  for (int64_t req = 0; req < 70000; req += req < 2100 ? 1 : 997, n++) {
    p[n] = malloc((size_t)req);
    ck_assert_ptr_nonnull(p[n]);
    // A free chunk left in a bin by earlier code may serve the request whole
    // when its rest would be below the minimum chunk: never less, never a
    // minimum chunk more.
    int64_t usable = (int64_t)malloc_usable_size(p[n]), model = ms__malloc_arena_usable(req);
    ck_assert_msg(usable >= model && usable - model < MS__MALLOC_MIN_CHUNK,
                  "malloc(%lld): usable %lld, model %lld", (long long)req, (long long)usable,
                  (long long)model);
    exact += usable == model;
  }
  ck_assert_int_le(n, N);
  ck_assert_msg(exact >= n * 9 / 10, "%d of %d requests exactly as modelled", exact, n);
  while (n > 0) free(p[--n]);
  free(p);
}
END_TEST

/* Take all but a minimum chunk of the main arena's top (mallinfo2's
 * keepcost), so that the next request must come from sbrk or mmap. */
static void *use_up_top(void) {
  struct mallinfo2 m = mallinfo2();
  int64_t top = (int64_t)m.keepcost;
  if (top < 2 * MS__MALLOC_MIN_CHUNK) return NULL;
  void *p = malloc((size_t)ms__malloc_chunk_usable(top - MS__MALLOC_MIN_CHUNK));
  ck_assert_ptr_nonnull(p);
  ck_assert_int_le((int64_t)mallinfo2().keepcost, MS__MALLOC_MIN_CHUNK);
  return p;
}

/* The default threshold, live: the largest request below it stays in the
 * arena, the smallest at it is mapped with the modelled size. Runs before
 * anything in this process freed a mapped chunk (which would raise it). */
START_TEST(test_live_mmap) {
  if (!live_glibc("test_live_mmap")) return;
  int64_t page = ms__prim_page_size();
  int64_t below = MS__MALLOC_MMAP_THRESHOLD - MS__MALLOC_SIZE_SZ - MS__MALLOC_ALIGN - 1;
  int64_t at = MS__MALLOC_MMAP_THRESHOLD - MS__MALLOC_SIZE_SZ;
  ck_assert(!ms__malloc_is_mmapped(below, MS__MALLOC_MMAP_THRESHOLD));
  ck_assert(ms__malloc_is_mmapped(at, MS__MALLOC_MMAP_THRESHOLD));
  // glibc serves a request from the arena's top first, whatever its size:
  // the threshold applies when the top is used up.
  void *fa = use_up_top(), *a = malloc((size_t)below);
  void *fb = use_up_top(), *b = malloc((size_t)at);
  void *fc = use_up_top(), *c = malloc(3 * MS__MALLOC_MMAP_THRESHOLD + 5);
  ck_assert(a && b && c);
  ck_assert_int_eq((int64_t)malloc_usable_size(a), ms__malloc_arena_usable(below));
  ck_assert(!ms__malloc_usable_is_mmapped((int64_t)malloc_usable_size(a), page));
  ck_assert_int_eq((int64_t)malloc_usable_size(b),
                   ms__malloc_mmap_usable(ms__malloc_mmap_bytes(at, page)));
  ck_assert(ms__malloc_usable_is_mmapped((int64_t)malloc_usable_size(b), page));
  ck_assert_int_eq((int64_t)malloc_usable_size(c),
                   ms__malloc_mmap_usable(ms__malloc_mmap_bytes(3 * MS__MALLOC_MMAP_THRESHOLD + 5,
                                                                page)));
  free(c);
  free(b);
  free(a);
  free(fc);
  free(fb);
  free(fa);
}
END_TEST

int main(void) {
  Suite *s = suite_create("malloc_model");
  TCase *tc = tcase_create("rules");
  tcase_add_test(tc, test_chunk_rounding);
  tcase_add_test(tc, test_mmap_rounding);
  tcase_add_test(tc, test_mmap_threshold_rule);
  suite_add_tcase(s, tc);
  TCase *live = tcase_create("live");
  tcase_add_test(live, test_live_mmap);
  tcase_add_test(live, test_live_arena);
  suite_add_tcase(s, live);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
