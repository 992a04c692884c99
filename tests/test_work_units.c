// Work as work (issue 32 item 2; docs/runtime.md, "Work as work"): a
// stub's CPU time is an amount of work counted at the calibration's rates,
// a share of which reads and writes its heap block; on a shared or slower
// core it takes longer, and the replay runs late rather than cut it short.
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "testutil.h"

#define MS (INT64_C(1000000))

// The stub of the trace text, with the defaults.
static memstub_gen *stub_of(const char *text) {
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_parse("t.csv", text, strlen(text), &t, &err) == 0, "%s", err.msg);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  memstub_gen *g = NULL;
  ck_assert_msg(memstub_gen_build(t, &o, &g, &err) == 0, "%s", err.msg);
  memstub_trace_free(t);
  return g;
}

/* A trace of n rows, each computing cpu ns within delay ns, heap bytes. */
static memstub_gen *work_stub(int n, int64_t delay, int64_t cpu, int64_t heap) {
  char *text = malloc((size_t)n * 80 + 128);
  int k = sprintf(text, "time_ns,stack_bytes,heap_bytes,cpu_ns\n0,0,0,0\n");
  for (int i = 1; i <= n; i++)
    k += sprintf(text + k, "%lld,0,%lld,%lld\n", (long long)(i * delay), (long long)heap,
                 (long long)(i * cpu));
  memstub_gen *g = stub_of(text);
  free(text);
  return g;
}

// Replay g with o (measured), the replayed trace into *rt.
static memstub_replay *replay(const memstub_gen *g, memstub_replay_options *o,
                              memstub_trace **rt) {
  o->measure = MEMSTUB_MEASURE_TRACE;
  memstub_error err = {0};
  memstub_replay *r = NULL;
  ck_assert_msg(memstub_replay_run(&g->stub, o, &r, &err) == 0, "%s", err.msg);
  ck_assert_msg(memstub_replay_trace(r, rt, &err) == 0, "%s", err.msg);
  return r;
}

static int64_t cpu_at(const memstub_trace *t, size_t row) {
  return memstub_trace_extra_row(t, row)[memstub_trace_column(t, "cpu_ns")];
}

/* The work is counted at the rate it is given, not spun to on the CPU
 * clock: a stub calibrated on a core twice as fast as this one (work_rate
 * twice the loop's rate here) spends about twice its recorded CPU time (the
 * clock-driven spin spent exactly it). */
START_TEST(test_counted_at_the_rate) {
  memstub_gen *g = work_stub(5, 20 * MS, 4 * MS, 100);
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.work_rate = 2 * ms__rt_spin_rate();
  o.mem_share = MEMSTUB_WORK_MEM_NONE;
  memstub_trace *rt = NULL;
  memstub_replay *r = replay(g, &o, &rt);
  int64_t got = cpu_at(rt, rt->n - 1), want = 5 * 4 * MS;
  ck_assert_msg(got > want * 3 / 2, "%lld ns of CPU for %lld ns of work at twice the rate",
                (long long)got, (long long)want);
  // What the replay says of it: the work counted, and its CPU time about twice that.
  ck_assert(r->info.work_ns > 0 && r->info.work_ns <= (double)want);
  ck_assert_msg((double)r->info.work_cpu_ns > 1.5 * r->info.work_ns, "%lld ns for %g ns of work",
                (long long)r->info.work_cpu_ns, r->info.work_ns);
  ck_assert(r->info.work_mem_share == 0);
  memstub_trace_free(rt);
  memstub_replay_free(r);
  // A rate or a share out of range is refused.
  memstub_error err = {0};
  o.work_rate = -1;
  ck_assert_int_eq(memstub_replay_run(&g->stub, &o, &r, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "work"));
  o.work_rate = 0;
  o.mem_share = 1.5;
  ck_assert_int_eq(memstub_replay_run(&g->stub, &o, &r, &err), -EINVAL);
  memstub_gen_free(g);
}
END_TEST

// Lines of b[0, len) that are not 0.
static int64_t lines_written(const char *b, int64_t len) {
  int64_t n = 0;
  for (int64_t i = 0; i < len; i += 64)
    for (int64_t j = i; j < i + 64 && j < len; j++)
      if (b[j]) {
        n++;
        break;
      }
  return n;
}

/* The memory share reads and writes the block it is given, within its
 * length: a share of 1 over 1 MiB writes many of its lines and nothing
 * beyond; no share, or a block under 4 KiB, writes nothing. */
START_TEST(test_memory_share_touches_the_block) {
  const int64_t len = 1 << 20;
  char *b = calloc(1, (size_t)len + 8192);
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.mem_share = 1;
  ms__rt_work w;
  memset(&w, 0, sizeof w);
  ms__rt_work_rates(&w, &o);
  ck_assert(w.mem_share == 1);
  ms__rt_work_memory(&w, b, len);
  (void)ms__rt_work_do(&w, 2e6);  // 2 ms of work at ~1 ns a touch: all 16384 lines, and more
  ck_assert_int_gt(lines_written(b, len), 4096);
  ck_assert_int_eq(lines_written(b + len, 8192), 0);
  memset(b, 0, (size_t)len);
  ms__rt_work_memory(&w, b, 4095);
  (void)ms__rt_work_do(&w, 1e5);
  ck_assert_int_eq(lines_written(b, len), 0);
  // The default share: with the host's touch costs only; and none.
  o.mem_share = 0;
  ms__rt_work_rates(&w, &o);
  ck_assert(w.mem_share == 0);
  double costs[MEMSTUB_WORK_TOUCH_SIZES] = {1, 2, 3, 4, 5};
  o.touch_ns = costs;
  ms__rt_work_rates(&w, &o);
  ck_assert(w.mem_share == MEMSTUB_WORK_MEM_SHARE_DEFAULT);
  ck_assert(w.touch_ns[4] == 5);
  o.mem_share = MEMSTUB_WORK_MEM_NONE;
  ms__rt_work_rates(&w, &o);
  ms__rt_work_memory(&w, b, len);
  (void)ms__rt_work_do(&w, 1e6);
  ck_assert_int_eq(lines_written(b, len), 0);
  free(b);
}
END_TEST

START_TEST(test_share_parse) {
  double s = 0;
  ck_assert_int_eq(memstub_work_share_parse("0.3", &s), 0);
  ck_assert(s == 0.3);
  ck_assert_int_eq(memstub_work_share_parse("0", &s), 0);
  ck_assert(s == MEMSTUB_WORK_MEM_NONE);
  ck_assert_int_eq(memstub_work_share_parse("1", &s), 0);
  ck_assert(s == 1);
  const char *bad[] = {"", "-0.1", "1.01", "x", "0.3x", "nan", NULL};
  for (int i = 0; bad[i]; i++) ck_assert_int_eq(memstub_work_share_parse(bad[i], &s), -EINVAL);
}
END_TEST

static volatile int busy_stop;

static void *busy(void *arg) {
  cpu_set_t *set = arg;
  pthread_setaffinity_np(pthread_self(), sizeof *set, set);
  volatile uint64_t x = 0;
  while (!__atomic_load_n(&busy_stop, __ATOMIC_RELAXED)) x = x + 1;
  return NULL;
}

/* The CPU shared (two busy threads pinned to the replay's CPU: it gets a
 * third of it, ideally): the stub's work takes longer and the replay runs
 * late, as the component would, rather than catch up by doing less work.
 * 20 rows of 4 ms of work every 5 ms (100 ms): expected about 240 ms, at
 * least 130 ms; every row's CPU time at least its recorded CPU time. A
 * loaded host only makes it later. Online and deadline timing. */
START_TEST(test_shared_cpu_runs_late) {
  memstub_gen *g = work_stub(20, 5 * MS, 4 * MS, 64 << 10);
  cpu_set_t old, one;
  ck_assert_int_eq(pthread_getaffinity_np(pthread_self(), sizeof old, &old), 0);
  int cpu = sched_getcpu();
  ck_assert_int_ge(cpu, 0);
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  // The replay thread inherits the calling thread's CPU.
  ck_assert_int_eq(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
  int timings[] = {MEMSTUB_TIMING_ONLINE, MEMSTUB_TIMING_DEADLINE};
  for (int k = 0; k < 2; k++) {
    pthread_t th[2];
    busy_stop = 0;
    for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, busy, &one), 0);
    memstub_replay_options o;
    memstub_replay_options_init(&o);
    o.timing = timings[k];
    memstub_trace *rt = NULL;
    memstub_replay *r = replay(g, &o, &rt);
    __atomic_store_n(&busy_stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    if (getenv("MEMSTUB_TEST_VERBOSE"))
      fprintf(stderr, "%s: %lld ns for a target of %lld, CPU %lld\n", memstub_timing_name(o.timing),
              (long long)r->info.duration_ns, (long long)r->info.target_ns,
              (long long)cpu_at(rt, rt->n - 1));
    ck_assert_msg(r->info.duration_ns > r->info.target_ns * 13 / 10,
                  "%s: %lld ns for a target of %lld with the CPU shared",
                  memstub_timing_name(o.timing), (long long)r->info.duration_ns,
                  (long long)r->info.target_ns);
    for (size_t i = 1; i < rt->n; i++)
      ck_assert_msg(cpu_at(rt, i) >= (int64_t)i * 4 * MS, "row %zu: %lld ns of CPU, want %lld", i,
                    (long long)cpu_at(rt, i), (long long)i * 4 * MS);
    memstub_trace_free(rt);
    memstub_replay_free(r);
  }
  pthread_setaffinity_np(pthread_self(), sizeof old, &old);
  memstub_gen_free(g);
}
END_TEST

// The replayed trace's last value of column name.
static int64_t last_of(const memstub_trace *t, const char *name) {
  int c = memstub_trace_column(t, name);
  ck_assert_int_ge(c, 0);
  return memstub_trace_extra_row(t, t->n - 1)[c];
}

/* The memory share touches only the pages already written: a heap block of
 * 8 MiB of which the resident target keeps 1 MiB written, replayed with
 * the whole work touching memory and with none, faults and stays resident
 * alike (touching the block's unwritten 7 MiB would add about 1800 faults
 * and 7 MiB). */
START_TEST(test_memory_share_adds_no_page) {
  char text[2048];
  int k = sprintf(text, "time_ns,stack_bytes,heap_bytes,rss_bytes,cpu_ns\n0,0,0,0,0\n");
  for (int i = 1; i <= 8; i++)
    k += sprintf(text + k, "%d,0,%d,%d,%d\n", i * 5000000, 8 << 20, (1 << 20) + (i % 2) * 65536,
                 i * 2000000);  // a target that moves: every row's readings are fresh
  memstub_gen *g = stub_of(text);
  int64_t faults[2], rss[2];
  double shares[2] = {1, MEMSTUB_WORK_MEM_NONE};
  for (int i = 0; i < 2; i++) {
    memstub_replay_options o;
    memstub_replay_options_init(&o);
    o.mem_share = shares[i];
    memstub_trace *rt = NULL;
    memstub_replay *r = replay(g, &o, &rt);
    faults[i] = last_of(rt, "minor_faults");
    rss[i] = last_of(rt, "rss_bytes");
    if (i == 0) ck_assert(r->info.work_mem_share == 1);
    memstub_trace_free(rt);
    memstub_replay_free(r);
  }
  if (getenv("MEMSTUB_TEST_VERBOSE"))
    fprintf(stderr, "faults %lld / %lld, rss %lld / %lld\n", (long long)faults[0],
            (long long)faults[1], (long long)rss[0], (long long)rss[1]);
  ck_assert_msg(llabs(faults[0] - faults[1]) < 200, "faults %lld with the share, %lld without",
                (long long)faults[0], (long long)faults[1]);
  ck_assert_msg(llabs(rss[0] - rss[1]) < (1 << 20), "rss %lld with the share, %lld without",
                (long long)rss[0], (long long)rss[1]);
  memstub_gen_free(g);
}
END_TEST

/* A stub called as a function (memstub_add_stub's entry point) takes its
 * share from MEMSTUB_WORK_MEM_SHARE, strictly. */
START_TEST(test_env_share) {
  memstub_gen *g = work_stub(2, 2 * MS, 1 * MS, 64 << 10);
  memstub_error err = {0};
  setenv("MEMSTUB_WORK_MEM_SHARE", "-1", 1);
  ck_assert_int_eq(memstub_stub_call(&g->stub, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "MEMSTUB_WORK_MEM_SHARE: '-1' is not a share from 0 to 1"), "%s",
                err.msg);
  setenv("MEMSTUB_WORK_MEM_SHARE", "1", 1);
  ck_assert_msg(memstub_stub_call(&g->stub, &err) == 0, "%s", err.msg);
  unsetenv("MEMSTUB_WORK_MEM_SHARE");
  memstub_gen_free(g);
}
END_TEST

/* memstub replay: --work-mem-share and the trace's work_mem_share metadata,
 * read strictly (a bad one names itself, exit 2). */
START_TEST(test_cli_share) {
  char *dir = tu_mkdtemp();
  char path[4200];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  const char *body = "time_ns,stack_bytes,heap_bytes,cpu_ns\n0,0,0,0\n1000000,0,8192,200000\n";
  char text[512];
  snprintf(text, sizeof text, "# memstub-trace 1\n# work_mem_share: 0.4\n%s", body);
  tu_write_file(path, text);
  tu_run r = tu_memstub(dir, "replay", path, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  // memstub gen carries it into the header (test_work_model.c), and says how to override it.
  r = tu_memstub(dir, "gen", path, "-o", "t.h", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "work_mem_share 0.4 carried into the header "
                              "(MEMSTUB_WORK_MEM_SHARE overrides it)"), "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", path, "--work-mem-share", "0", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", path, "--work-mem-share", "1.5", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "--work-mem-share: expected a share from 0 to 1, found '1.5'"), "%s",
                r.err);
  tu_run_free(&r);
  snprintf(text, sizeof text, "# memstub-trace 1\n# work_mem_share: lots\n%s", body);
  tu_write_file(path, text);
  r = tu_memstub(dir, "replay", path, NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "metadata work_mem_share: expected a share from 0 to 1, found 'lots'"),
                "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", path, "-o", "t.h", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "t.csv: metadata work_mem_share: expected a share from 0 to 1, found 'lots'"),
                "%s", r.err);
  tu_run_free(&r);
  // The option wins over the metadata.
  r = tu_memstub(dir, "replay", path, "--work-mem-share", "0.1", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("work_units");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_counted_at_the_rate);
  tcase_add_test(tc, test_memory_share_touches_the_block);
  tcase_add_test(tc, test_share_parse);
  tcase_add_test(tc, test_shared_cpu_runs_late);
  tcase_add_test(tc, test_memory_share_adds_no_page);
  tcase_add_test(tc, test_env_share);
  tcase_add_test(tc, test_cli_share);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
