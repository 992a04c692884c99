// recorder/table.c: the live-block table on its own. Every block put is
// found again with its size, flag and epoch whatever the address layout
// (packed 32-byte chunks, page strides, power-of-two strides, random, big
// and unaligned blocks), at millions of live blocks, from several threads
// at once; a block put twice is reported stale; the table's bytes per live
// block stay within the recorder's budget; out of memory is reported.
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "table.h"

// What table.c takes from the rest of the recorder.
int ms__rec_multi;
int64_t ms__rec_self_bytes;

// Check's assertions log every pass (a write each): loops check with this.
#define REQUIRE(cond, ...) \
  do {                      \
    if (!(cond)) ck_abort_msg(__VA_ARGS__); \
  } while (0)

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static uint64_t xr(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void fresh(void) {
  ck_assert_int_eq(ms__rec_table_reset(), 0);
  ck_assert_uint_eq(ms__rec_table_blocks(), 0);
}

// A block's entry as the test derives it from its index (sizes < 2^19 inline,
// every 1000th a big one; every 7th not counted).
static uint64_t entry_of(uint64_t i) {
  uint64_t size = i % 1000 == 999 ? (UINT64_C(1) << 20) + i : (i * 37) % 4000;
  return size | (i % 7 == 3 ? NOT_MINE : 0);
}

// Put n blocks at addr(i), check they are all there, take them out in a
// shuffled order, each with its entry and epoch; the table ends empty.
static void round_trip(uintptr_t (*addr)(uint64_t i), uint64_t n, double max_bytes_per_block) {
  fresh();
  uint64_t old;
  uint32_t oep;
  for (uint64_t i = 0; i < n; i++)
    REQUIRE(table_put(addr(i), entry_of(i), (uint32_t)i * 3u + 1u, &old, &oep) == 0,
            "block %llu not put", (unsigned long long)i);
  ck_assert_uint_eq(ms__rec_table_blocks(), n);
  double per = (double)ms__rec_table_bytes() / (double)n;
  ck_assert_msg(per <= max_bytes_per_block, "%.1f bytes a live block", per);
  uint64_t *order = malloc(n * sizeof *order);
  ck_assert_ptr_nonnull(order);
  for (uint64_t i = 0; i < n; i++) order[i] = i;
  for (uint64_t i = n - 1; i > 0; i--) {
    uint64_t j = xr() % (i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (uint64_t k = 0; k < n; k++) {
    uint64_t i = order[k], e;
    uint32_t ep;
    REQUIRE(table_take(addr(i), &e, &ep) == 0, "block %llu lost", (unsigned long long)i);
    REQUIRE(e == entry_of(i) && ep == (uint32_t)i * 3u + 1u, "block %llu: entry %llx epoch %u",
            (unsigned long long)i, (unsigned long long)e, ep);
    REQUIRE(table_take(addr(i), &e, &ep) == -1, "block %llu still there", (unsigned long long)i);
  }
  free(order);
  ck_assert_uint_eq(ms__rec_table_blocks(), 0);
}

#define BASE UINT64_C(0x555555560000)
static uintptr_t packed32(uint64_t i) { return (uintptr_t)(BASE + 32 * i); }
static uintptr_t page_stride(uint64_t i) { return (uintptr_t)(UINT64_C(0x7f0000000010) + 4096 * i); }
static uintptr_t huge_stride(uint64_t i) { return (uintptr_t)(UINT64_C(0x7e0000000010) + (i << 21)); }
static uintptr_t random_addr(uint64_t i) {
  // a bijection of i onto 16-byte aligned addresses below 2^47
  uint64_t x = (i * UINT64_C(0x9E3779B97F4A7C15)) & ((UINT64_C(1) << 43) - 1);
  return (uintptr_t)((x << 4) | 16);
}
static uintptr_t odd_addr(uint64_t i) { return (uintptr_t)(BASE + 24 * i + 8); }  // 8-aligned
static uintptr_t high_addr(uint64_t i) { return (uintptr_t)((UINT64_C(1) << 50) + 64 * i); }

START_TEST(test_packed_chunks_5m) { round_trip(packed32, 5000000, 24.0); }
END_TEST

START_TEST(test_page_strides) { round_trip(page_stride, 1000000, 24.0); }
END_TEST

START_TEST(test_power_of_two_strides) {
  for (int k = 4; k <= 30; k += 2) {
    fresh();
    uint64_t old;
    uint32_t oep;
    for (uint64_t i = 0; i < 20000; i++)
      REQUIRE(table_put((uintptr_t)(BASE + (i << k)), 100, 1, &old, &oep) == 0, "not put");
    for (uint64_t i = 0; i < 20000; i++) {
      uint64_t e;
      uint32_t ep;
      REQUIRE(table_take((uintptr_t)(BASE + (i << k)), &e, &ep) == 0 && e == 100,
              "stride 2^%d: block %llu lost", k, (unsigned long long)i);
    }
  }
  round_trip(huge_stride, 20000, 1e9);
}
END_TEST

START_TEST(test_random_and_odd) {
  round_trip(random_addr, 2000000, 24.0);
  round_trip(odd_addr, 20000, 1e9);   // every one in the side map
  round_trip(high_addr, 20000, 1e9);  // above 2^48: the side map
}
END_TEST

/* Churn: a live set of 100k blocks, replaced at random for 2M steps, held
 * against a plain array of what should be there. */
START_TEST(test_churn_against_reference) {
  fresh();
  enum { LIVE = 100000 };
  uintptr_t *at = calloc(LIVE, sizeof *at);
  uint64_t *sz = calloc(LIVE, sizeof *sz);
  uint64_t next = 0, old;
  uint32_t oep;
  for (int step = 0; step < 2000000; step++) {
    uint64_t k = xr() % LIVE;
    if (at[k]) {
      uint64_t e;
      uint32_t ep;
      REQUIRE(table_take(at[k], &e, &ep) == 0 && e == sz[k] && ep == (uint32_t)k,
              "step %d: block of slot %llu lost or changed", step, (unsigned long long)k);
    }
    // Addresses as an allocator reuses them: near the last ones, some far.
    uintptr_t p = (xr() & 3) ? packed32(next++ % 3000000) : random_addr(next++);
    uint64_t e;
    uint32_t ep;
    if (table_take(p, &e, &ep) == 0) {  // in use by another k: find and drop it
      for (uint64_t j = 0; j < LIVE; j++)
        if (at[j] == p) at[j] = 0;
    }
    at[k] = p;
    sz[k] = xr() % 500000;
    REQUIRE(table_put(p, sz[k], (uint32_t)k, &old, &oep) == 0, "step %d: not put", step);
  }
  uint64_t live = 0;
  for (uint64_t k = 0; k < LIVE; k++) live += at[k] != 0;
  ck_assert_uint_eq(ms__rec_table_blocks(), live);
  free(at);
  free(sz);
}
END_TEST

START_TEST(test_stale_block_replaced) {
  fresh();
  uint64_t old = 0;
  uint32_t oep = 0;
  ck_assert_int_eq(table_put(packed32(5), 40, 7, &old, &oep), 0);
  ck_assert_int_eq(table_put(packed32(5), 64 | NOT_MINE, 9, &old, &oep), 1);
  ck_assert_uint_eq(old, 40);
  ck_assert_uint_eq(oep, 7);
  ck_assert_uint_eq(ms__rec_table_blocks(), 1);
  ck_assert_int_eq(table_put(odd_addr(2), 1 << 22, 2, &old, &oep), 0);  // 8-aligned: side map
  ck_assert_int_eq(table_put(odd_addr(2), 8, 3, &old, &oep), 1);
  ck_assert_uint_eq(old, 1 << 22);
  ck_assert_int_eq(table_put(packed32(9), 1 << 22, 4, &old, &oep), 0);  // big: slot and side map
  ck_assert_int_eq(table_put(packed32(9), 8, 5, &old, &oep), 1);
  ck_assert_uint_eq(old, 1 << 22);
  ck_assert_uint_eq(oep, 4);
  ck_assert_int_eq(table_put(packed32(9), (1 << 23) | NOT_MINE, 6, &old, &oep), 1);
  ck_assert_uint_eq(old, 8);
  ck_assert_int_eq(table_put(packed32(9), 1 << 21, 7, &old, &oep), 1);
  ck_assert_uint_eq(old, (1 << 23) | NOT_MINE);
  ck_assert_uint_eq(oep, 6);
  ck_assert_uint_eq(ms__rec_table_blocks(), 3);
  uint64_t e;
  uint32_t ep;
  ck_assert_int_eq(table_take(packed32(5), &e, &ep), 0);
  ck_assert_uint_eq(e, 64 | NOT_MINE);
  ck_assert_uint_eq(ep, 9);
}
END_TEST

static void count_each(uintptr_t p, uint64_t entry, uint32_t ep, void *arg) {
  (void)p;
  (void)ep;
  uint64_t *sum = arg;
  sum[0]++;
  sum[1] += entry & ~NOT_MINE;
}

START_TEST(test_each_sums_the_live_set) {
  fresh();
  uint64_t want = 0, old;
  uint32_t oep;
  for (uint64_t i = 0; i < 300000; i++) {
    REQUIRE(table_put(packed32(i), entry_of(i), 0, &old, &oep) == 0, "not put");
    want += entry_of(i) & ~NOT_MINE;
  }
  uint64_t sum[2] = {0, 0};
  ms__rec_table_each(count_each, sum);
  ck_assert_uint_eq(sum[0], 300000);
  ck_assert_uint_eq(sum[1], want);
}
END_TEST

/* Four threads, each allocating its own blocks and freeing a neighbour's
 * (cross-thread frees), with the locks on. */
typedef struct worker {
  int id;
  uint64_t lost;
} worker;
#define PER_THREAD 400000
static uintptr_t thr_addr(int id, uint64_t i) { return packed32((uint64_t)id * 4 * PER_THREAD + i); }

static void *work(void *arg) {
  worker *w = arg;
  uint64_t old;
  uint32_t oep;
  for (uint64_t i = 0; i < PER_THREAD; i++)
    if (table_put(thr_addr(w->id, i), i % 5000, (uint32_t)w->id, &old, &oep) != 0) w->lost++;
  return NULL;
}

static void *unwork(void *arg) {
  worker *w = arg;
  int from = (w->id + 1) % 4;
  for (uint64_t i = 0; i < PER_THREAD; i++) {
    uint64_t e;
    uint32_t ep;
    if (table_take(thr_addr(from, i), &e, &ep) != 0 || e != i % 5000 || ep != (uint32_t)from) w->lost++;
  }
  return NULL;
}

START_TEST(test_threads_cross_frees) {
  fresh();
  ms__rec_multi = 1;
  pthread_t th[4];
  worker w[4];
  for (int k = 0; k < 4; k++) {
    w[k] = (worker){k, 0};
    ck_assert_int_eq(pthread_create(&th[k], NULL, work, &w[k]), 0);
  }
  for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
  ck_assert_uint_eq(ms__rec_table_blocks(), 4 * PER_THREAD);
  for (int k = 0; k < 4; k++) ck_assert_int_eq(pthread_create(&th[k], NULL, unwork, &w[k]), 0);
  for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
  for (int k = 0; k < 4; k++) ck_assert_uint_eq(w[k].lost, 0);
  ck_assert_uint_eq(ms__rec_table_blocks(), 0);
  ms__rec_multi = 0;
}
END_TEST

/* Out of memory: the put fails with -ENOMEM and the table says it failed
 * (in a child under a small address-space limit). */
START_TEST(test_out_of_memory_is_reported) {
#ifdef MEMSTUB_TEST_SANITIZE
  printf("test_out_of_memory_is_reported: skipped under %s (RLIMIT_AS)\n", MEMSTUB_TEST_SANITIZE);
  return;
#endif
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (ms__rec_table_reset() != 0) _exit(3);
    struct rlimit rl;
    getrlimit(RLIMIT_AS, &rl);
    // What is mapped now plus 64 MiB: the table cannot follow 20M blocks.
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f || fscanf(f, "%lu", &pages) != 1) _exit(4);
    fclose(f);
    rl.rlim_cur = pages * 4096 + (64 << 20);
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(5);
    uint64_t old;
    uint32_t oep;
    for (uint64_t i = 0; i < 20000000; i++) {
      int rc = table_put(packed32(i), 32, 0, &old, &oep);
      if (rc == -12) _exit(ms__rec_table_failed ? 0 : 6);
      if (rc != 0) _exit(7);
    }
    _exit(8);
  }
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %d", st);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("table");
  TCase *tc = tcase_create("table");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_packed_chunks_5m);
  tcase_add_test(tc, test_page_strides);
  tcase_add_test(tc, test_power_of_two_strides);
  tcase_add_test(tc, test_random_and_odd);
  tcase_add_test(tc, test_churn_against_reference);
  tcase_add_test(tc, test_stale_block_replaced);
  tcase_add_test(tc, test_each_sums_the_live_set);
  tcase_add_test(tc, test_threads_cross_frees);
  tcase_add_test(tc, test_out_of_memory_is_reported);
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
