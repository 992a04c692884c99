// memstub record --calls (issue 31 item 1): TRACE.calls holds every
// allocator call in the trace's scope, in order, and replaying it call for
// call gives the trace's heap: the same calls per function as the churn
// counts, every free of a live block, the same peak and end; and the reader
// refuses a damaged file naming the byte. tests/record/rec_helper.c and
// tests/record/threads.c.
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "memstub/trace.h"
#include "ms_common.h"
#include "testutil.h"

static const char *env(const char *name) {
  const char *v = getenv(name);
  ck_assert_msg(v != NULL, "%s is not set (run the tests with ctest)", name);
  return v;
}

static const char *const fn_names[MS__CALLS_NFN] = {MS__CALLS_FN_NAMES};

/* ---- the live blocks of a replay: address -> size (ms__addrmap) ---- */

typedef ms__addrmap live;

static void live_put(live *l, uint64_t a, uint64_t n) {
  ck_assert_msg(ms__addrmap_put(l, a, (int64_t)n, 0) == 0, "a block at 0x%llx is already live",
                (unsigned long long)a);
}

// The size of live block a, taken out; -1 when it is not live.
static int64_t live_take(live *l, uint64_t a) {
  int64_t n;
  return ms__addrmap_take(l, a, &n, NULL) ? n : -1;
}

/* Call k made on the live blocks l and the heap *heap: the block it frees
 * (free, a realloc that moved or freed it) out, the block it returns in.
 * 1 when the block it frees was not live, else 0. */
static int apply(live *l, const ms__call *k, int64_t *heap) {
  int unknown = 0;
  if (k->old && (k->fn == MS__CALLS_FREE || !k->failed || k->size == 0)) {
    int64_t n = live_take(l, k->old);
    if (n < 0) unknown = 1;
    else *heap -= n;
  }
  if (k->addr) {
    live_put(l, k->addr, k->size);
    *heap += (int64_t)k->size;
  }
  return unknown;
}

typedef struct replay {
  uint64_t per_fn[MS__CALLS_NFN];
  int64_t heap, peak;
  uint64_t unknown, calls;
  uint64_t align_seen[3];  // posix_memalign, aligned_alloc, memalign: the last alignment
  int64_t last_t;
} replay;

// Every call of the file at path, replayed in the file's order (one thread).
static replay replay_file(const char *path) {
  replay r = {0};
  live l = {0};
  ms__calls *c = NULL;
  memstub_error err = {0};
  ck_assert_msg(ms__calls_open(path, &c, &err) == 0, "%s", err.msg);
  ms__call k;
  int rc;
  while ((rc = ms__calls_next(c, &k, &err)) == 1) {
    r.calls++;
    r.per_fn[k.fn]++;
    r.last_t = k.t_ns;
    r.unknown += apply(&l, &k, &r.heap);
    if (r.heap > r.peak) r.peak = r.heap;
    if (k.fn == MS__CALLS_POSIX_MEMALIGN) r.align_seen[0] = k.align;
    if (k.fn == MS__CALLS_ALIGNED_ALLOC) r.align_seen[1] = k.align;
    if (k.fn == MS__CALLS_MEMALIGN) r.align_seen[2] = k.align;
  }
  ck_assert_msg(rc == 0, "%s", err.msg);
  ms__calls_close(c);
  ms__addrmap_free(&l);
  return r;
}

// A count in the metadata; 0 when absent (the recorder writes some only when not 0).
static int64_t meta_i64(const memstub_trace *t, const char *key) {
  const char *v = memstub_trace_get_meta(t, key);
  return v ? strtoll(v, NULL, 10) : 0;
}

// The churn count of fn in the trace's metadata (churn.program.FN: calls=N ...), 0 when absent.
static uint64_t churn_calls(const memstub_trace *t, const char *fn) {
  char key[64];
  snprintf(key, sizeof key, "churn.program.%s", fn);
  const char *v = memstub_trace_get_meta(t, key);
  const char *p = v ? strstr(v, "calls=") : NULL;
  return p ? strtoull(p + 6, NULL, 10) : 0;
}

// memstub record --calls -o t.csv [OPTIONS -- | --] PROG ARGS... in dir (prog: options
// and their "--" first, or the program); the trace read.
static memstub_trace *record(const char *dir, char *const *prog) {
  char *argv[16] = {(char *)env("MEMSTUB_EXE"), "record", "-q", "--calls", "-o", "t.csv"};
  int k = 6;
  if (strcmp(prog[0], "--") != 0 && strncmp(prog[0], "--", 2) != 0) argv[k++] = "--";
  for (; *prog; prog++) argv[k++] = *prog;
  argv[k] = NULL;
  tu_run r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  tu_run_free(&r);
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  return t;
}

// The replay of dir/t.csv.calls checked against the trace t.
static replay check_against(const char *dir, const memstub_trace *t) {
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv.calls", dir);
  ck_assert_str_eq(memstub_trace_get_meta(t, "calls.file"), path);
  replay r = replay_file(path);
  ck_assert_uint_eq(r.calls, (uint64_t)meta_i64(t, "calls.count"));
  for (int f = 0; f < MS__CALLS_NFN; f++)
    ck_assert_msg(r.per_fn[f] == churn_calls(t, fn_names[f]), "%s: %llu calls, churn says %llu",
                  fn_names[f], (unsigned long long)r.per_fn[f],
                  (unsigned long long)churn_calls(t, fn_names[f]));
  ck_assert_uint_eq(r.unknown, (uint64_t)meta_i64(t, "record.unknown_frees"));
  ck_assert_int_eq(r.peak, meta_i64(t, "record.peak_heap_bytes"));
  ck_assert_int_eq(r.heap, t->pts[t->n - 1].heap_bytes);
  return r;
}

// Every function of the malloc family (rec_helper pattern): each call, its
// alignment, the peak of 13656 bytes, and nothing left.
START_TEST(test_calls_every_function) {
  char *dir = tu_mkdtemp();
  char *prog[] = {(char *)env("MEMSTUB_REC_HELPER"), "pattern", NULL};
  memstub_trace *t = record(dir, prog);
  replay r = check_against(dir, t);
  ck_assert_int_eq(r.peak, 13656);
  ck_assert_int_eq(r.heap, 0);
  ck_assert_uint_eq(r.align_seen[0], 64);
  ck_assert_uint_eq(r.align_seen[1], 64);
  ck_assert_uint_eq(r.align_seen[2], 32);
  ck_assert_uint_ge(r.per_fn[MS__CALLS_FREE], 9);  // free(NULL) included
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Failed calls (rec_helper failing): calloc and reallocarray of 2^62 x 16
 * written with the size SIZE_MAX (the reallocarray was left out of the
 * file and the churn), malloc(2^60); the file agrees with the churn, and a
 * stub's data file takes them and replays them failing (gen refused the
 * trace: "calls: byte 22: a size beyond 2^62 bytes"). */
START_TEST(test_calls_failed) {
  char *dir = tu_mkdtemp();
  char *prog[] = {(char *)env("MEMSTUB_REC_HELPER"), "failing", NULL};
  memstub_trace *t = record(dir, prog);
  replay r = check_against(dir, t);
  ck_assert_uint_eq(r.per_fn[MS__CALLS_REALLOCARRAY], 2);
  ck_assert_uint_eq(r.per_fn[MS__CALLS_CALLOC], 1);
  memstub_trace_free(t);
  tu_run g = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(g.status == 0, "gen: %s", g.err);
  tu_run_free(&g);
#ifdef MEMSTUB_SANITIZED
  // ASan's allocator aborts on a request beyond its limit unless told to fail it.
  const char *was = getenv("ASAN_OPTIONS");
  char opts[1024];
  snprintf(opts, sizeof opts, "%s%sallocator_may_return_null=1", was ? was : "",
           was && *was ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
#endif
  g = tu_memstub(dir, "replay", "--data", "t.dat", NULL);
  ck_assert_msg(g.status == 0, "replay: %s", g.err);
  tu_run_free(&g);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Many blocks at the adversarial layouts of the table's tests (rec_helper
// layout): the peak exact, and a few bytes a call.
START_TEST(test_calls_layouts) {
  char *dir = tu_mkdtemp();
  char *prog[] = {(char *)env("MEMSTUB_REC_HELPER"), "layout", NULL};
  memstub_trace *t = record(dir, prog);
  replay r = check_against(dir, t);
  ck_assert_uint_gt(r.calls, 100000);
  double per = strtod(memstub_trace_get_meta(t, "calls.bytes_per_call"), NULL);
  ck_assert_msg(per > 1 && per < 6, "%.2f bytes a call", per);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Two threads racing cross-thread frees (threads race), every thread
 * recorded: the calls read in time order across threads
 * (ms__calls_open_merged, as gen reads a narrowed recording's) give every
 * free after its block's allocation. A call's time is its thread's last
 * clock reading, up to 15 calls old, so the times alone put another
 * thread's malloc of an address before the free that gave it back now and
 * then (CI, under ASan: "a block is already live"); the merged reader takes
 * such a free first. */
START_TEST(test_calls_threads_in_order) {
  char *dir = tu_mkdtemp();
  char *prog[] = {(char *)env("MEMSTUB_REC_THREADS"), "race", "5000", NULL};
  memstub_trace *t = record(dir, prog);
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv.calls", dir);
  ms__calls *c = NULL;
  memstub_error err = {0};
  ck_assert_msg(ms__calls_open_merged(path, &c, &err) == 0, "%s", err.msg);
  size_t n = ms__calls_head_of(c)->calls, i = 0;
  live l = {0};
  uint64_t unknown = 0;
  uint32_t threads = 0;
  int64_t heap = 0, peak = 0;
  ms__call k;
  int rc;
  while (i < n && (rc = ms__calls_next(c, &k, &err)) == 1) {
    threads |= 1u << (k.thread & 31);
    unknown += apply(&l, &k, &heap);
    if (heap > peak) peak = heap;
    i++;
  }
  ck_assert_msg(i == n, "%zu of %zu calls: %s", i, n, err.msg);
  ck_assert_int_eq(ms__calls_next(c, &k, &err), 0);
  ms__calls_close(c);
  ck_assert_msg(__builtin_popcount(threads) >= 3, "calls of %d threads", __builtin_popcount(threads));
  ck_assert_uint_eq(unknown, (uint64_t)meta_i64(t, "record.unknown_frees"));
  // The recorder's counter and the calls' times order two threads' calls made
  // at the same moment each its own way: the peaks may differ by a block or
  // two (race's blocks are 16 to 4096 bytes), not by a bucket's worth.
  int64_t want = meta_i64(t, "record.peak_heap_bytes");
  ck_assert_msg(llabs(peak - want) <= 2 * 4096, "peak %lld, the recorder's %lld", (long long)peak,
                (long long)want);
  ms__addrmap_free(&l);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A forked child recorded with --follow-children writes into the parent's
 * calls file neither its calls nor its end: the parent's file still
 * replays to the parent's trace. */
START_TEST(test_calls_fork_leaves_parent_alone) {
  char *dir = tu_mkdtemp();
  char *prog[] = {"--follow-children", "--", (char *)env("MEMSTUB_REC_HELPER"), "fork", NULL};
  memstub_trace *t = record(dir, prog);
  check_against(dir, t);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// A damaged file is refused naming the byte: every truncation, and flips
// of the head byte of each call of a short file.
START_TEST(test_calls_reader_refuses_damage) {
  char *dir = tu_mkdtemp();
  char *prog[] = {(char *)env("MEMSTUB_REC_HELPER"), "pattern", NULL};
  memstub_trace_free(record(dir, prog));
  char path[4096], bad[4200];
  snprintf(path, sizeof path, "%s/t.csv.calls", dir);
  snprintf(bad, sizeof bad, "%s/bad.calls", dir);
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  static char buf[1 << 16];
  size_t len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  ck_assert_uint_gt(len, sizeof(ms__calls_head) + sizeof(ms__calls_block));
  for (size_t cut = 0; cut < len; cut++) {
    f = fopen(bad, "wb");
    fwrite(buf, 1, cut, f);
    fclose(f);
    ms__calls *c = NULL;
    memstub_error err = {0};
    int rc = ms__calls_open(bad, &c, &err);
    ck_assert_msg(rc < 0, "a file cut at %zu bytes was read", cut);
    ck_assert_ptr_nonnull(strstr(err.msg, bad));
  }
  // A head byte naming no function, in the first block's first call.
  size_t at = sizeof(ms__calls_head) + sizeof(ms__calls_block);
  char keep = buf[at];
  buf[at] = (char)((buf[at] & ~MS__CALLS_FN_MASK) | 0x0f);
  f = fopen(bad, "wb");
  fwrite(buf, 1, len, f);
  fclose(f);
  buf[at] = keep;
  ms__calls *c = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(ms__calls_open(bad, &c, &err), 0);
  ms__call k;
  ck_assert_int_lt(ms__calls_next(c, &k, &err), 0);
  char want[64];
  snprintf(want, sizeof want, "byte %zu: unknown function", at);
  ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
  ms__calls_close(c);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("record_calls");
  TCase *tc = tcase_create("calls");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_calls_every_function);
  tcase_add_test(tc, test_calls_failed);
  tcase_add_test(tc, test_calls_layouts);
  tcase_add_test(tc, test_calls_threads_in_order);
  tcase_add_test(tc, test_calls_reader_refuses_damage);
  tcase_add_test(tc, test_calls_fork_leaves_parent_alone);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
