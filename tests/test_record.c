// memstub record: the LD_PRELOAD recorder on rec_helper's known patterns.
#include <check.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/trace.h"
#include "testutil.h"

static const char *helper(void) {
  const char *h = getenv("MEMSTUB_REC_HELPER");
  ck_assert_msg(h != NULL, "MEMSTUB_REC_HELPER is not set (run the tests with ctest)");
  return h;
}

// memstub record -o DIR/NAME [opts...] -- rec_helper MODE [arg]; returns the
// parsed trace (NULL when the run did not write one) and the run.
static memstub_trace *record(const char *dir, const char *name, tu_run *run, const char *const *opts,
                             const char *mode, const char *arg) {
  char out[4096];
  snprintf(out, sizeof out, "%s/%s", dir, name);
  char *argv[32];
  int n = 0;
  argv[n++] = getenv("MEMSTUB_EXE");
  argv[n++] = "record";
  argv[n++] = "-o";
  argv[n++] = out;
  for (int i = 0; opts && opts[i]; i++) argv[n++] = (char *)opts[i];
  argv[n++] = "--";
  argv[n++] = (char *)helper();
  argv[n++] = (char *)mode;
  if (arg) argv[n++] = (char *)arg;
  argv[n] = NULL;
  ck_assert_ptr_nonnull(argv[0]);
  *run = tu_exec(dir, argv);
  memstub_trace *t = NULL;
  memstub_error err;
  if (memstub_trace_read(out, &t, &err) < 0) return NULL;
  return t;
}

static int64_t meta_i(const memstub_trace *t, const char *key) {
  const char *v = memstub_trace_get_meta(t, key);
  ck_assert_msg(v != NULL, "metadata %s missing", key);
  return strtoll(v, NULL, 10);
}

// "calls=N ..." of a churn line.
static long long churn_field(const memstub_trace *t, const char *key, const char *field) {
  const char *v = memstub_trace_get_meta(t, key);
  ck_assert_msg(v != NULL, "metadata %s missing", key);
  const char *p = strstr(v, field);
  ck_assert_msg(p != NULL, "%s: no %s in '%s'", key, field, v);
  return strtoll(p + strlen(field), NULL, 10);
}

static int64_t peak(const memstub_trace *t, int heap) {
  int64_t m = 0;
  for (size_t i = 0; i < t->n; i++) {
    int64_t v = heap ? t->pts[i].heap_bytes : t->pts[i].stack_bytes;
    if (v > m) m = v;
  }
  return m;
}

START_TEST(test_every_function) {
  char *dir = tu_mkdtemp();
  tu_run r;
  const char *opts[] = {"-r", "0", NULL};
  memstub_trace *t = record(dir, "t.csv", &r, opts, "pattern", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  // Heap = bytes requested, all ten functions, everything freed at the end.
  ck_assert_int_eq(peak(t, 1), 13656);
  ck_assert_int_eq(meta_i(t, "record.peak_heap_bytes"), 13656);
  ck_assert_int_eq(t->pts[t->n - 1].heap_bytes, 0);
  static const char *const fns[] = {"malloc", "calloc", "realloc", "reallocarray",
                                    "posix_memalign", "aligned_alloc", "memalign",
                                    "valloc", "pvalloc", "free"};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    char key[64];
    snprintf(key, sizeof key, "churn.program.%s", fns[i]);
    ck_assert_msg(churn_field(t, key, "calls=") >= 1, "%s not seen", fns[i]);
  }
  ck_assert_int_eq(churn_field(t, "churn.program.free", "calls="), 9);  // with free(NULL)
  // Every row a real state, stack measured (main's frames are > 0).
  ck_assert(peak(t, 0) > 0);
  ck_assert_ptr_nonnull(strstr(r.err, "allocator churn"));
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "record.cost_ns_per_event"));
  memstub_trace_free(t);
  tu_run_free(&r);
  // Nothing but the trace is left in the directory (no temporary files).
  ck_assert_int_eq(tu_count_entries(dir), 1);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Exact whatever the address layout (issue 27): a million blocks packed in
 * 32-byte chunks, mmapped blocks at page strides, mixed sizes, big blocks,
 * frees in random order and the space reused, recorded three times (each
 * run lays the heap out elsewhere): every trace's peak is the exact sum
 * the program computed, and no free went unmatched. */
START_TEST(test_exact_under_adversarial_layouts) {
  char *dir = tu_mkdtemp();
  for (int k = 0; k < 3; k++) {
    tu_run r;
    memstub_trace *t = record(dir, "t.csv", &r, NULL, "layout", k == 2 ? "2000000" : NULL);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(t);
    long long want = -1;
    ck_assert_msg(r.out && sscanf(r.out, "peak %lld", &want) == 1, "helper said: %s", r.out);
    ck_assert_int_eq(meta_i(t, "record.peak_heap_bytes"), want);
    ck_assert_int_eq(peak(t, 1), want);
    ck_assert_ptr_null(memstub_trace_get_meta(t, "record.unknown_frees"));
    ck_assert_ptr_null(memstub_trace_get_meta(t, "record.stale_blocks"));
    ck_assert_int_le(meta_i(t, "record.live_blocks_at_exit"), 1);  // stdout's buffer
    // The table's arrays: under 24 bytes a block at the peak's live set.
    ck_assert_int_le(meta_i(t, "record.table_bytes_max"), 24 * (k == 2 ? 2300000 : 1300000));
    memstub_trace_free(t);
    tu_run_free(&r);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Exact, or loud (issue 27): when the live-block table cannot grow (here
 * capped at 1 MB, as if memory ran out), the recording fails with a clear
 * error and leaves no trace, rather than write one that misses blocks. */
START_TEST(test_table_out_of_memory_fails_the_recording) {
  char *dir = tu_mkdtemp();
  setenv("MEMSTUB_RECORD_TABLE_MAX_BYTES", "1000000", 1);
  tu_run r;
  memstub_trace *t = record(dir, "t.csv", &r, NULL, "layout", "200000");
  unsetenv("MEMSTUB_RECORD_TABLE_MAX_BYTES");
  ck_assert_ptr_null(t);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "no trace written: the recorder could not get memory for its table"),
                "%s", r.err);
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The sum of an extra column over the rows (0 when the trace lacks it).
static int64_t col_sum(const memstub_trace *t, const char *name) {
  int c = memstub_trace_column(t, name);
  int64_t s = 0;
  for (size_t i = 0; c >= 0 && i < t->n; i++) s += memstub_trace_extra_row(t, i)[c];
  return s;
}

// The work columns: the calls by kind and class, the bytes they moved, and
// the recorded thread's CPU time (docs/formats.md, "Work columns").
START_TEST(test_work_columns) {
  char *dir = tu_mkdtemp();
  tu_run r;
  static const char *const res[] = {"0", "100000", "10000000"};
  for (size_t k = 0; k < sizeof res / sizeof res[0]; k++) {
    const char *opts[] = {"-r", res[k], NULL};
    memstub_trace *t = record(dir, "w.csv", &r, opts, "work", NULL);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(t);
    // Exactly what the program did (the C library's own start-up makes no call here).
    int64_t mt = col_sum(t, "calls_malloc_tiny"), ft = col_sum(t, "calls_free_tiny");
    ck_assert_msg(mt >= 1000 && mt <= 1005, "-r %s: %lld tiny mallocs", res[k], (long long)mt);
    ck_assert_msg(ft >= 1000 && ft <= 1005, "-r %s: %lld tiny frees", res[k], (long long)ft);
    ck_assert_int_eq(col_sum(t, "calls_calloc_large"), 3);
    ck_assert_int_eq(col_sum(t, "calls_free_large"), 3);
    ck_assert_int_eq(memstub_trace_column(t, "calls_memalign_tiny"), -1);  // never called
    int64_t bytes = col_sum(t, "churn_bytes");
    ck_assert_msg(bytes >= 1000 * 64 + 6 * 200000 && bytes <= 1005 * 64 + 6 * 200000 + 8192,
                  "-r %s: churn_bytes %lld", res[k], (long long)bytes);
    // CPU: never decreasing, at most the wall time; the 30 ms spin is in it,
    // the 30 ms sleep is not.
    int c = memstub_trace_column(t, "cpu_ns");
    ck_assert_int_ge(c, 0);
    int64_t prev = 0;
    for (size_t i = 0; i < t->n; i++) {
      int64_t v = memstub_trace_extra_row(t, i)[c];
      ck_assert_int_ge(v, prev);
      ck_assert_int_le(v, t->pts[i].time_ns + 1000000);
      prev = v;
    }
    int64_t end_t = t->pts[t->n - 1].time_ns;
    ck_assert_msg(prev >= 25000000, "-r %s: cpu %lld ns", res[k], (long long)prev);
    ck_assert_msg(end_t - prev >= 20000000, "-r %s: cpu %lld ns of %lld", res[k],
                  (long long)prev, (long long)end_t);
    ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "record.cpu_clock"));
    // What ran before the recorder (exec, the loader): one thread, so its
    // CPU time is at most its wall time; a sane share of a 60 ms run.
    int64_t sw = meta_i(t, "record.start_wall_ns"), sc = meta_i(t, "record.start_cpu_ns");
    ck_assert_msg(sw > 0 && sc > 0 && sc <= sw + 1000000 && sw < 2000000000,
                  "-r %s: start %lld ns wall, %lld ns CPU", res[k], (long long)sw, (long long)sc);
    memstub_trace_free(t);
    tu_run_free(&r);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_stack_at_calls_and_from_timer) {
  char *dir = tu_mkdtemp();
  tu_run r;
  // 200 frames of 1 KiB, allocating at the bottom.
  memstub_trace *t = record(dir, "deep.csv", &r, NULL, "deep", "200");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  int64_t s = peak(t, 0);
  ck_assert_msg(s >= 200 * 1024 && s < 200 * 1024 + 64 * 1024, "peak stack %lld", (long long)s);
  memstub_trace_free(t);
  tu_run_free(&r);
  // The same depth without allocating: only the sampling timer sees it.
  t = record(dir, "spin.csv", &r, NULL, "spin", "200");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  s = peak(t, 0);
  ck_assert_msg(s >= 200 * 1024, "timer-sampled peak stack %lld", (long long)s);
  ck_assert(meta_i(t, "record.samples") >= 10);
  memstub_trace_free(t);
  tu_run_free(&r);
  const char *off[] = {"--sample-hz", "0", NULL};
  t = record(dir, "nosample.csv", &r, off, "spin", "200");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_msg(peak(t, 0) < 100 * 1024, "without the timer the depth is unseen: %lld",
                (long long)peak(t, 0));
  ck_assert_int_eq(meta_i(t, "record.samples"), 0);
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Code that runs on a stack of its own (swapcontext onto an mmapped
 * stack, as coroutines and a stub's stack switch do): its readings measure
 * nothing against the thread's stack top, and read 42.7 GiB before. The
 * peak is the thread's own stack's, and the trace and the summary say why
 * the rest is left out. */
START_TEST(test_stack_off_thread) {
  char *dir = tu_mkdtemp();
  tu_run r;
  memstub_trace *t = record(dir, "other.csv", &r, NULL, "otherstack", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  int64_t s = peak(t, 0);
  ck_assert_msg(s >= 20 * 1024 && s < 20 * 1024 + 64 * 1024, "peak stack %lld", (long long)s);
  const char *off = memstub_trace_get_meta(t, "record.stack_off_thread");
  ck_assert_msg(off && atol(off) >= 1, "record.stack_off_thread: %s", off ? off : "(none)");
  ck_assert_msg(strstr(r.err, "off the recorded thread's own stack"), "record said: %s", r.err);
  // The whole sentence, in the metadata and in the warning (cut at 159 bytes before).
  const char *end = "so the peak stack leaves those stretches out";
  ck_assert_msg(strlen(off) > strlen(end) && strcmp(off + strlen(off) - strlen(end), end) == 0,
                "record.stack_off_thread: %s", off);
  ck_assert_msg(strstr(r.err, end), "record said: %s", r.err);
  memstub_trace_free(t);
  tu_run_free(&r);
  // On its own stack alone: nothing said.
  t = record(dir, "deep.csv", &r, NULL, "deep", "20");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_null(memstub_trace_get_meta(t, "record.stack_off_thread"));
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Failed calls are calls that moved no bytes. A reallocarray whose
 * n x size is beyond 64 bits was not counted at all, and calloc's counted
 * SIZE_MAX bytes, which wrapped the program's sum: a program making these
 * calls (edge.c) had a churn table giving the program 1.0 EiB and calloc
 * alone 8.0 EiB
 * (churn.program.calloc bytes=18446744073709551615). */
START_TEST(test_failed_calls_counted_without_bytes) {
  char *dir = tu_mkdtemp();
  tu_run r;
  memstub_trace *t = record(dir, "f.csv", &r, NULL, "failing", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(churn_field(t, "churn.program.reallocarray", "calls="), 2);
  ck_assert_int_eq(churn_field(t, "churn.program.reallocarray", "bytes="), 1000);
  ck_assert_int_eq(churn_field(t, "churn.program.calloc", "calls="), 1);
  ck_assert_int_eq(churn_field(t, "churn.program.calloc", "bytes="), 0);
  ck_assert_int_lt(churn_field(t, "churn.program.malloc", "bytes="), 1 << 20);
  ck_assert_int_lt(churn_field(t, "churn.program", "bytes="), 1 << 20);
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* The sites' estimate at the peak is unbiased whatever the pattern of
 * sizes: rec_helper mixed keeps 4000 blocks of 200 bytes, each after a
 * temporary of 1500 freed at once. The countdown to the next sample was
 * drawn afresh after each sample, so the temporary that followed a sample
 * almost always took the next one and the small blocks after them were
 * hardly ever sampled: the sites held 29.0 KiB of fn.c's 130 KiB at its
 * peak (the same pattern, 1000 rounds, --sites-every 1024). The sum of the
 * sites' bytes at the peak is within 20 % of the heap there (about 780
 * samples: 4 % of error expected). */
START_TEST(test_sites_unbiased) {
  char *dir = tu_mkdtemp();
  tu_run r;
  const char *opts[] = {"--sites", "--sites-every", "1024", NULL};
  memstub_trace *t = record(dir, "s.csv", &r, opts, "mixed", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  memstub_trace_free(t);
  char path[4096];
  snprintf(path, sizeof path, "%s/s.csv.sites", dir);
  char *text = tu_read_file(path);
  ck_assert_ptr_nonnull(text);
  long long heap = -1, sum = 0, peak, blocks, alloc, alloc_n;
  for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    sscanf(line, "peak_heap_bytes %lld", &heap);
    if (sscanf(line, "site %lld %lld %lld %lld", &peak, &blocks, &alloc, &alloc_n) == 4) sum += peak;
  }
  ck_assert_msg(heap >= 780000, "peak_heap_bytes %lld", heap);  // within 1/64 of 801,500
  ck_assert_msg(sum >= heap * 8 / 10 && sum <= heap * 12 / 10, "sites at the peak %lld for a heap of %lld",
                sum, heap);
  free(text);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A free of a large block samples resident memory right after the real
 * free: glibc unmaps it there, and without a timer tick or heap growth
 * after it the rows went on showing its pages (SQLite's sorter buffer:
 * 44 MB for 2.6 ms and 7 rows). rec_helper bigfree, one row an event, no
 * timer: the row after the free of 8 MiB written has them gone. */
START_TEST(test_rss_after_big_free) {
#ifdef MEMSTUB_SANITIZED
  return;
#endif
  /* Exact rows (-r 0: a row per event, the free's pushed before the real
   * free, the next one has the rss after it), and the default resolution,
   * where the free comes right after a growth sample (b's malloc) and its
   * row had the rss before it until a mapped chunk's free was sampled at
   * once: there the row where the heap fell has its rss fallen too. */
  static const char *const res[] = {"0", "100000"};
  /* At 100 us a row, a preempted recorder can take its sample after the
   * real free in the next row: the free's own row must have it in one of
   * three recordings (without the sample at the free, in none). */
  for (int k = 0, tries = 0; k < 2; k++) {
    char *dir = tu_mkdtemp();
    tu_run r;
    const char *opts[] = {"-r", res[k], "--sample-hz", "0", NULL};
    memstub_trace *t = record(dir, "b.csv", &r, opts, "bigfree", NULL);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(t);
    int c = memstub_trace_column(t, "rss_bytes");
    ck_assert_int_ge(c, 0);
    const int64_t mib = 1024 * 1024;
    size_t at = 0;
    for (size_t i = 1; i < t->n && !at; i++)
      if (t->pts[i - 1].heap_bytes - t->pts[i].heap_bytes == 8 * mib) at = i;
    ck_assert_msg(at > 0 && at + 1 < t->n, "-r %s: no free of 8 MiB in %zu rows", res[k], t->n);
    int64_t before = memstub_trace_extra_row(t, at - 1)[c];
    int64_t there = memstub_trace_extra_row(t, at)[c], after = memstub_trace_extra_row(t, at + 1)[c];
    ck_assert_msg(before >= 8 * mib, "-r %s: rss before the free %lld", res[k], (long long)before);
    int late = k == 1 && there > before - 6 * mib && ++tries < 3;
    ck_assert_msg(late || ((k == 0 || there <= before - 6 * mib) && after <= before - 6 * mib),
                  "-r %s: rss at the free %lld, after it %lld, before %lld", res[k],
                  (long long)there, (long long)after, (long long)before);
    memstub_trace_free(t);
    tu_run_free(&r);
    tu_rmtree(dir);
    free(dir);
    if (late) k--;  // again
  }
}
END_TEST

START_TEST(test_threads) {
  char *dir = tu_mkdtemp();
  tu_run r;
  // Process scope, main thread: all four workers' blocks (1000..4000) count.
  memstub_trace *t = record(dir, "all.csv", &r, NULL, "threads", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_ge(peak(t, 1), 1000);
  ck_assert_int_ge(meta_i(t, "record.threads"), 5);
  ck_assert_int_ge(churn_field(t, "churn.program.malloc", "calls="), 80000);
  /* The summary for people (issue 30): the call count with thousands
   * separators, the recorder's cost with its unit, the churn score in k
   * (the trace's metadata keeps the exact figures). */
  const char *line = strstr(r.err, "\n    malloc ");
  ck_assert_msg(line, "%s", r.err);
  char calls[32], bytes[16], unit[16], score[32], sunit[8];
  ck_assert_msg(sscanf(line, " malloc - %31s %15s %15s %31s %7s", calls, bytes, unit, score,
                       sunit) == 5,
                "%s", r.err);
  ck_assert_msg(strchr(calls, ',') && strcmp(unit, "MiB") == 0 && strcmp(sunit, "k") == 0,
                "%s", r.err);
  ck_assert_msg(strstr(r.err, "churn score") && strstr(r.err, " calls); per timer sample: "),
                "%s", r.err);
  // The cost is a time for people: whole ns below 1 µs ("63 ns", not "63.2 ns").
  const char *cost = strstr(r.err, "recorder cost per allocator call: ");
  char num[32], cu[16];
  ck_assert_msg(cost && sscanf(cost + 34, "%31s %15s", num, cu) == 2, "%s", r.err);
  ck_assert_msg(strcmp(cu, "ns") != 0 || !strchr(num, '.'), "%s", r.err);
  memstub_trace_free(t);
  tu_run_free(&r);
  // The second thread, its own heap: 2000 held plus one 16-byte block.
  const char *opts[] = {"--thread", "2", "--heap", "thread", NULL};
  t = record(dir, "t2.csv", &r, opts, "threads", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 2016);
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.heap_scope"), "thread");
  ck_assert(peak(t, 0) > 0 && peak(t, 0) < 64 * 1024);
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_fork_and_exec) {
  char *dir = tu_mkdtemp();
  tu_run r;
  const char *opts[] = {"-r", "0", NULL};
  memstub_trace *t = record(dir, "fork.csv", &r, opts, "fork", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  // Only the parent: its 5000 bytes, none of the children's megabytes.
  ck_assert_int_eq(peak(t, 1), 5000);
  ck_assert_int_eq(tu_count_entries(dir), 1);
  memstub_trace_free(t);
  tu_run_free(&r);
  // The recorded process execs itself: the trace is the new image's.
  t = record(dir, "exec.csv", &r, opts, "exec", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 13656);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "command"), "pattern"));
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_fatal_signal_and__exit) {
  char *dir = tu_mkdtemp();
  tu_run r;
  memstub_trace *t = record(dir, "abort.csv", &r, NULL, "abort", NULL);
  ck_assert_int_eq(r.status, 1);  // the program failed, the trace is there
  ck_assert_ptr_nonnull(strstr(r.err, "killed by signal 6"));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 3000);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "record.exit"), "signal 6"));
  memstub_trace_free(t);
  tu_run_free(&r);
  t = record(dir, "exit.csv", &r, NULL, "_exit", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 4444);
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.exit"), "_exit");
  memstub_trace_free(t);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 2);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_probe_regions_and_churn) {
  char *dir = tu_mkdtemp();
  tu_run r;
  const char *opts[] = {"-r", "0", NULL};
  memstub_trace *t = record(dir, "probe.csv", &r, opts, "probe", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  int col = memstub_trace_column(t, "region");
  ck_assert_int_ge(col, 0);
  // Only the regions: every row tagged 1..3, time from the first begin.
  ck_assert_int_eq(t->pts[0].time_ns, 0);
  int64_t maxtag = 0;
  for (size_t i = 0; i < t->n; i++) {
    int64_t tag = memstub_trace_extra_row(t, i)[col];
    ck_assert(tag >= 1 && tag <= 3);
    if (tag > maxtag) maxtag = tag;
  }
  ck_assert_int_eq(maxtag, 3);
  // The 100000-byte peak outside the regions is not in the trace; the
  // 50000 bytes held across them are.
  ck_assert_int_lt(peak(t, 1), 100000);
  ck_assert_int_ge(peak(t, 1), 50000 + 4096);
  // The stack from begin's caller: 20 frames of 1 KiB plus a little.
  ck_assert_msg(peak(t, 0) >= 20 * 1024 && peak(t, 0) < 20 * 1024 + 16 * 1024, "%lld",
                (long long)peak(t, 0));
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.stack_from"),
                   "the frame that called memstub_probe_begin");
  // Its time 0 is a region's begin, not the program's start: no start figures.
  ck_assert_ptr_null(memstub_trace_get_meta(t, "record.start_wall_ns"));
  // Churn of "work": 3 occurrences of 82 (plus "inner"'s malloc 64 + free
  // 64, 2 * 6, nested inside it).
  ck_assert_int_eq(churn_field(t, "churn.region.work", "occurrences="), 3);
  ck_assert_int_eq(churn_field(t, "churn.region.work", "calls="), 3 * 7);
  ck_assert_int_eq(churn_field(t, "churn.region.work", "bytes="), 3 * (9728 + 128));
  ck_assert_str_eq(strstr(memstub_trace_get_meta(t, "churn.region.work"), "churn="),
                   "churn=282.0");
  ck_assert_int_eq(churn_field(t, "churn.region.inner", "occurrences="), 3);
  ck_assert_str_eq(strstr(memstub_trace_get_meta(t, "churn.region.inner"), "churn="),
                   "churn=36.0");
  ck_assert_str_eq(strstr(memstub_trace_get_meta(t, "churn.region.work.realloc"), "churn="),
                   "churn=108.0");
  ck_assert_ptr_nonnull(strstr(r.err, "region work"));
  memstub_trace_free(t);
  tu_run_free(&r);
  // One occurrence only.
  const char *one[] = {"-r", "0", "--occurrence", "2", NULL};
  t = record(dir, "probe2.csv", &r, one, "probe", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  col = memstub_trace_column(t, "region");
  for (size_t i = 0; i < t->n; i++) ck_assert_int_eq(memstub_trace_extra_row(t, i)[col], 2);
  ck_assert_int_eq(t->pts[0].time_ns, 0);
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_coalescing_keeps_peaks) {
  char *dir = tu_mkdtemp();
  tu_run r;
  const char *every[] = {"-r", "0", NULL};
  memstub_trace *a = record(dir, "every.csv", &r, every, "many", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  const char *ms[] = {"-r", "1000000", NULL};
  memstub_trace *b = record(dir, "ms.csv", &r, ms, "many", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ck_assert_int_ge(a->n, 200000);
  // At most two rows per millisecond bucket (and a few at the edges).
  int64_t ms_total = b->pts[b->n - 1].time_ns / 1000000 + 2;
  ck_assert_msg((int64_t)b->n <= 2 * ms_total + 4, "%zu rows over %lld ms", b->n,
                (long long)ms_total);
  ck_assert_int_eq(peak(a, 1), peak(b, 1));
  ck_assert_int_eq(peak(b, 1), 16 + 63 * 16);
  memstub_trace_free(a);
  memstub_trace_free(b);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Without --reference the stub's timeline rests on the recorder's own
 * figures: record's summary warns when they come to 2 % of the recording or
 * more, on the same test and in the same words as gen (one warns when the
 * other does); with reference runs neither does. 200,000 pairs cost the
 * recorder about 5 % of the run by its own figures. */
START_TEST(test_timeline_estimated_warned) {
  static const char said[] = "the stub's timeline takes the recorder's cost out by the "
                             "recorder's own figures";
  char *dir = tu_mkdtemp();
  tu_run r;
  memstub_trace *t = record(dir, "t.csv", &r, NULL, "many", NULL);
  ck_assert_msg(r.status == 0 && t, "exit %d: %s", r.status, r.err);
  int warned = strstr(r.err, said) != NULL;
  double share = (double)meta_i(t, "record.overhead_ns") / (double)t->pts[t->n - 1].time_ns;
  ck_assert_msg(warned || share < 0.03, "own figures %.1f %% of the run, not said: %s",
                100 * share, r.err);
  tu_run_free(&r);
  memstub_trace_free(t);
  r = tu_memstub(dir, "gen", "t.csv", "-o", "t.h", NULL);
  ck_assert_msg(r.status == 0, "gen: exit %d: %s", r.status, r.err);
  ck_assert_msg((strstr(r.err, said) != NULL) == warned, "record %s, gen: %s",
                warned ? "warned" : "did not warn", r.err);
  tu_run_free(&r);
  const char *ref[] = {"--reference", "1", NULL};
  t = record(dir, "f.csv", &r, ref, "many", NULL);
  ck_assert_msg(r.status == 0 && t && !strstr(r.err, said), "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_trace_free(t);
  r = tu_memstub(dir, "gen", "f.csv", "-o", "f.h", NULL);
  ck_assert_msg(r.status == 0 && !strstr(r.err, said), "gen: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Children the program started and waited for are not recorded without
 * --follow-children: the summary says how much of the run's CPU time they
 * had (wait4's, less the process's own at its end) when it is a tenth or
 * more, and --follow-children, or a program without children, says
 * nothing. Here sh waits for a child sh that counts to 200,000 (about
 * 0.2 s of CPU time; tar czf's gzip had 91 % of its run's). */
START_TEST(test_children_left_out_warned) {
  static const char said[] = "started and waited for used";
  char *dir = tu_mkdtemp();
  const char *kid = "sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'; true";
  tu_run r = tu_memstub(dir, "record", "-o", "t.csv", "--", "/bin/sh", "-c", kid, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, said) && strstr(r.err, "--follow-children"),
                "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "record", "--follow-children", "-o", "f.csv", "--", "/bin/sh", "-c", kid,
                 NULL);
  ck_assert_msg(r.status == 0 && !strstr(r.err, said), "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_trace *t = record(dir, "m.csv", &r, NULL, "many", NULL);
  ck_assert_msg(r.status == 0 && t && !strstr(r.err, said), "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_trace_free(t);
  // A launcher script (a pyenv shim) whose own processes did the work: named.
  char launcher[4096];
  snprintf(launcher, sizeof launcher, "%s/launch", dir);
  FILE *f = fopen(launcher, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "#!/bin/sh\n%s\nexec /bin/true\n", kid);
  fclose(f);
  chmod(launcher, 0755);
  r = tu_memstub(dir, "record", "-o", "l.csv", "--", launcher, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, said) && strstr(r.err, "is a script"),
                "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

#define MIB ((int64_t)1 << 20)

// Column name's values: its maximum, and its value in the last row.
static int64_t col_peak(const memstub_trace *t, const char *name, int64_t *last) {
  int c = memstub_trace_column(t, name);
  ck_assert_msg(c >= 0, "no column %s", name);
  int64_t m = 0;
  for (size_t i = 0; i < t->n; i++)
    if (memstub_trace_extra_row(t, i)[c] > m) m = memstub_trace_extra_row(t, i)[c];
  if (last) *last = memstub_trace_extra_row(t, t->n - 1)[c];
  return m;
}

// Some row has column a == va and column b >= vb_min.
static int row_with(const memstub_trace *t, const char *a, int64_t va, const char *b,
                    int64_t vb_min) {
  int ca = memstub_trace_column(t, a), cb = memstub_trace_column(t, b);
  for (size_t i = 0; i < t->n; i++) {
    const int64_t *e = memstub_trace_extra_row(t, i);
    if (e[ca] == va && e[cb] >= vb_min) return 1;
  }
  return 0;
}

// Fault counts never fall (they are counters since the component's start).
static void faults_grow(const memstub_trace *t) {
  int cmin = memstub_trace_column(t, "minor_faults"), cmaj = memstub_trace_column(t, "major_faults");
  ck_assert(cmin >= 0 && cmaj >= 0);
  for (size_t i = 1; i < t->n; i++) {
    ck_assert_int_ge(memstub_trace_extra_row(t, i)[cmin], memstub_trace_extra_row(t, i - 1)[cmin]);
    ck_assert_int_ge(memstub_trace_extra_row(t, i)[cmaj], memstub_trace_extra_row(t, i - 1)[cmaj]);
  }
}

/* sbrk 2 MiB and back, mmap 64 MiB, touch 32 MiB, mremap to 96 MiB, munmap the 32 MiB tail, then
 * the rest; a 64 KiB file mapping beside it (rec_helper mapped). Every event
 * (-r 0) and coalesced (-r 10 ms) keep the same mapped states and peaks. */
START_TEST(test_mapped_memory) {
  char *dir = tu_mkdtemp();
  const char *res[2] = {"0", "10000000"};
  for (int k = 0; k < 2; k++) {
    tu_run r;
    const char *opts[] = {"-r", res[k], NULL};
    memstub_trace *t = record(dir, "m.csv", &r, opts, "mapped", NULL);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(t);
    int64_t last_mapped, last_rss;
    // The file mapping never counts; mremap grows and moves the count.
    ck_assert_int_eq(col_peak(t, "mapped_bytes", &last_mapped), 96 * MIB);
    ck_assert_int_eq(last_mapped, 0);
    ck_assert_int_eq(meta_i(t, "record.peak_mapped_bytes"), 96 * MIB);
    // Every event: the 2 MiB of sbrk are a state of their own (coalesced, the
    // bucket's peak is the 64 MiB mapped right after).
    if (k == 0) ck_assert_msg(row_with(t, "mapped_bytes", 2 * MIB, "rss_bytes", 0), "sbrk not counted");
    // 64 MiB mapped while half of it is resident.
    ck_assert_msg(row_with(t, "mapped_bytes", 64 * MIB, "rss_bytes", 30 * MIB),
                  "no row with 64 MiB mapped and 30 MiB resident (-r %s)", res[k]);
    int64_t prss = col_peak(t, "rss_bytes", &last_rss);
    ck_assert_msg(prss >= 30 * MIB && prss <= 40 * MIB, "peak rss %lld", (long long)prss);
    ck_assert_int_eq(meta_i(t, "record.peak_rss_bytes"), prss);
    ck_assert_msg(last_rss <= 4 * MIB, "rss after munmap %lld", (long long)last_rss);
    // No heap at all: the mappings are not heap.
    ck_assert_int_eq(peak(t, 1), 0);
    int64_t minf;
    ck_assert_int_gt(col_peak(t, "minor_faults", &minf), 0);
    faults_grow(t);
    memstub_trace_free(t);
    tu_run_free(&r);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* 400,000 written 48-byte blocks (rec_helper small): glibc's chunks are 64
 * bytes, so the program's own resident growth is about 24.4 MiB (plus the
 * 3.2 MiB pointer array); the recorder's pointer table adds about 6 MiB of
 * its own, which rss_bytes leaves out and the metadata names. None of the
 * blocks is a page: resident memory is sampled when a coalescing bucket opens
 * after a page or more of net heap growth, so the trace sees it with the
 * timer off too (--sample-hz 0, as a loaded machine can leave a short run). */
START_TEST(test_rss_leaves_out_recorder_tables) {
  char *dir = tu_mkdtemp();
  for (int timer = 1; timer >= 0; timer--) {
    tu_run r;
    const char *const off[] = {"--sample-hz", "0", NULL};
    memstub_trace *t = record(dir, "s.csv", &r, timer ? NULL : off, "small", NULL);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(t);
    if (!timer) ck_assert_int_eq(meta_i(t, "record.samples"), 0);
    int64_t tables = meta_i(t, "record.rss_recorder_tables_bytes");
    ck_assert_msg(tables >= 4 * MIB, "recorder tables %lld", (long long)tables);
    int64_t prss = col_peak(t, "rss_bytes", NULL);
    // 24.4 + 3.1 MiB of the program's; with the tables it would be above 33.
    ck_assert_msg(prss >= 24 * MIB && prss <= 30 * MIB, "peak rss %lld (timer %d)", (long long)prss,
                  timer);
    memstub_trace_free(t);
    tu_run_free(&r);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* 4000 written 8 KiB blocks in a tight loop (rec_helper pages): at the
 * default resolution growth samples are rate-limited (most are deferred to
 * the bucket's close) and resident memory still reaches the 31 MiB written;
 * at -r 0 every growth is sampled. */
START_TEST(test_growth_samples_rate_limited) {
  char *dir = tu_mkdtemp();
  for (int exact = 0; exact <= 1; exact++) {
    tu_run r;
    const char *const opts[] = {"-r", "0", NULL};
    memstub_trace *t = record(dir, "g.csv", &r, exact ? opts : NULL, "pages", NULL);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(peak(t, 1), 4000 * 8192);
    int64_t samples = meta_i(t, "record.memory_samples");
    int64_t deferred = meta_i(t, "record.memory_samples_deferred");
    if (exact) {
      ck_assert_int_eq(deferred, 0);
      ck_assert_msg(samples >= 4000, "samples %lld", (long long)samples);
    } else {
      // 4000 growths in a few ms: at most 4 samples per 100 us bucket are
      // taken (under ASan and load the loop can take 40 ms and more, so the
      // bound is the run's buckets, not a count).
      int64_t buckets = t->n ? t->pts[t->n - 1].time_ns / 100000 + 1 : 1;
      ck_assert_msg(deferred > 0 && samples <= 4 * buckets + 64,
                    "samples %lld, deferred %lld over %lld buckets", (long long)samples,
                    (long long)deferred, (long long)buckets);
    }
    int64_t prss = col_peak(t, "rss_bytes", NULL);
    ck_assert_msg(prss >= 30 * MIB && prss <= 40 * MIB, "peak rss %lld (exact %d)", (long long)prss,
                  exact);
    // The row where the heap first reaches its peak already sees most of it resident:
    // what was deferred was sampled when that bucket closed, or before.
    int crss = memstub_trace_column(t, "rss_bytes");
    for (size_t i = 0; i < t->n; i++)
      if (t->pts[i].heap_bytes == 4000 * 8192) {
        int64_t v = memstub_trace_extra_row(t, i)[crss];
        if (i + 1 < t->n && memstub_trace_extra_row(t, i + 1)[crss] > v)
          v = memstub_trace_extra_row(t, i + 1)[crss];
        ck_assert_msg(v >= 28 * MIB, "rss %lld at the heap's peak (exact %d)", (long long)v, exact);
        break;
      }
    memstub_trace_free(t);
    tu_run_free(&r);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* malloc 100 MiB and touch 10 MiB (rec_helper lazy): heap says what was
 * requested, rss what was touched, and the malloc family's own mmap is heap,
 * not mapped. */
START_TEST(test_lazy_heap_resident) {
  char *dir = tu_mkdtemp();
  tu_run r;
  memstub_trace *t = record(dir, "l.csv", &r, NULL, "lazy", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 100 * MIB);
  ck_assert_int_eq(col_peak(t, "mapped_bytes", NULL), 0);
  int64_t prss = col_peak(t, "rss_bytes", NULL);
  ck_assert_msg(prss >= 9 * MIB && prss <= 16 * MIB, "peak rss %lld (samples %s, sampling %s)",
                (long long)prss, memstub_trace_get_meta(t, "record.samples"),
                memstub_trace_get_meta(t, "record.sampling_fallback")
                    ? memstub_trace_get_meta(t, "record.sampling_fallback")
                    : "on");
  // The heap at 100 MiB while about 10 MiB are resident.
  int found = 0, crss = memstub_trace_column(t, "rss_bytes");
  for (size_t i = 0; i < t->n; i++)
    if (t->pts[i].heap_bytes == 100 * MIB && memstub_trace_extra_row(t, i)[crss] >= 9 * MIB)
      found = 1;
  ck_assert_msg(found, "no row with the heap at 100 MiB and 9 MiB resident");
  faults_grow(t);
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "record.cost_ns_per_memory_sample"));
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A probe region measures resident memory and faults from its begin; mapped
 * memory is the total, like the heap (rec_helper region_mapped: 8 MiB mapped
 * and touched before the region, 16 MiB inside). */
START_TEST(test_region_memory) {
  char *dir = tu_mkdtemp();
  tu_run r;
  memstub_trace *t = record(dir, "g.csv", &r, NULL, "region_mapped", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  int crss = memstub_trace_column(t, "rss_bytes"), cmap = memstub_trace_column(t, "mapped_bytes");
  ck_assert(crss >= 0 && cmap >= 0);
  ck_assert_int_eq(memstub_trace_extra_row(t, 0)[crss], 0);
  ck_assert_int_eq(memstub_trace_extra_row(t, 0)[cmap], 8 * MIB);
  ck_assert_int_eq(col_peak(t, "mapped_bytes", NULL), 24 * MIB);
  int64_t prss = col_peak(t, "rss_bytes", NULL);
  ck_assert_msg(prss >= 15 * MIB && prss <= 22 * MIB, "peak rss %lld", (long long)prss);
  faults_grow(t);
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_usage_errors) {
  tu_run r = tu_memstub(NULL, "record", "--", "true", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "missing -o"));
  tu_run_free(&r);
  char *dir = tu_mkdtemp();
  r = tu_memstub(dir, "record", "-o", "x.csv", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "missing the PROGRAM"));
  tu_run_free(&r);
  r = tu_memstub(dir, "record", "-o", "x.csv", "--", "/nonexistent/prog", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "cannot run '/nonexistent/prog'"));
  tu_run_free(&r);
  r = tu_memstub(dir, "record", "-o", "x.csv", "--heap", "bogus", "--", "true", NULL);
  ck_assert_int_eq(r.status, 2);
  tu_run_free(&r);
  // A word no option takes: the message lists the words and the number it does take.
  r = tu_memstub(dir, "record", "-o", "x.csv", "--thread", "zz", "--", "true", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "--thread: expected main, all or a number N >= 1, found 'zz'"), "%s",
                r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "record", "-o", "x.csv", "--occurrence", "zz", "--", "true", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "--occurrence: expected all or a number N >= 1, found 'zz'"), "%s",
                r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "record", "-o", "/nonexistent/dir/x.csv", "--", "true", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "cannot write in directory"));
  tu_run_free(&r);
  // A trace is read back, so it must go to a regular file, not a FIFO or a directory.
  char fifo[4096];
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  r = tu_memstub(dir, "record", "-o", "fifo", "--", "true", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "fifo: the trace needs a regular file"));
  tu_run_free(&r);
  r = tu_memstub(dir, "record", "-o", ".", "--", "true", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "Is a directory"));
  tu_run_free(&r);
  unlink(fifo);
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The options table (cli/cli.h): --help lists every option; the options
// stop at PROGRAM, whose own options are its own, with or without "--".
START_TEST(test_options_stop_at_the_program) {
  tu_run r = tu_memstub(NULL, "record", "--help", NULL);
  ck_assert_int_eq(r.status, 0);
  static const char *const names[] = {"-o, --output FILE", "    --thread WHICH",
                                      "--heap SCOPE",      "-r, --resolution NS",
                                      "--sample-hz HZ",    "--occurrence N|all",
                                      "--signal N",        "-q, --quiet",
                                      "-h, --help"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    ck_assert_msg(strstr(r.out, names[i]) != NULL, "%s missing from:\n%s", names[i], r.out);
  tu_run_free(&r);
  char *dir = tu_mkdtemp();
  char out[4096];
  snprintf(out, sizeof out, "%s/x.csv", dir);
  // "-r" after PROGRAM is the program's (rec_helper deep reads it as 0 frames).
  char *argv[] = {getenv("MEMSTUB_EXE"), "record", "-qo", out, "-r0", (char *)helper(), "deep",
                  "-r", NULL};
  r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_str_eq(r.err, "");  // -q, clustered with -o
  memstub_trace *t = NULL;
  memstub_error err;
  ck_assert_int_eq(memstub_trace_read(out, &t, &err), 0);
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.resolution_ns"), "0");
  memstub_trace_free(t);
  tu_run_free(&r);
  r = tu_memstub(dir, "record", "-o", "y.csv", "--sample-hz", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "--sample-hz needs a value"));
  tu_run_free(&r);
  r = tu_memstub(dir, "record", "-o", "y.csv", "--heap", "bogus", "--", "true", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "--heap: expected process or thread, found 'bogus'"));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* ---- issue 12: reliability ---- */

// The heap of the first and the last row.
static void first_last_heap(const memstub_trace *t, int64_t *first, int64_t *last) {
  *first = t->pts[0].heap_bytes;
  *last = t->pts[t->n - 1].heap_bytes;
}

// Item 2: the bytes a region keeps survive every resolution from 0 to 10 ms:
// its entry state (heap before) and its exit state are rows of the trace.
START_TEST(test_region_entry_survives_coalescing) {
  char *dir = tu_mkdtemp();
  static const char *const res[] = {"0", "1000", "10000", "100000", "1000000", "10000000"};
  for (size_t i = 0; i < sizeof res / sizeof res[0]; i++) {
    tu_run r;
    const char *opts[] = {"-r", res[i], NULL};
    memstub_trace *t = record(dir, "keep.csv", &r, opts, "region_keep", NULL);
    ck_assert_msg(r.status == 0, "-r %s: exit %d: %s", res[i], r.status, r.err);
    ck_assert_ptr_nonnull(t);
    int64_t first, last;
    first_last_heap(t, &first, &last);
    ck_assert_msg(last - first == 9096 && t->n >= 2,
                  "-r %s: %zu rows, heap %lld at the region's entry, %lld at its exit", res[i],
                  t->n, (long long)first, (long long)last);
    ck_assert_int_eq(peak(t, 1), last);
    memstub_trace_free(t);
    tu_run_free(&r);
    // The whole run: the program's first state (before its first malloc,
    // in the same bucket) and its final state (all freed) are rows.
    t = record(dir, "early.csv", &r, opts, "early", NULL);
    ck_assert_msg(r.status == 0, "-r %s: exit %d: %s", res[i], r.status, r.err);
    ck_assert_ptr_nonnull(t);
    first_last_heap(t, &first, &last);
    ck_assert_msg(first == 0 && last == 0 && peak(t, 1) == 9096,
                  "-r %s: %zu rows, heap first %lld, last %lld, peak %lld", res[i], t->n,
                  (long long)first, (long long)last, (long long)peak(t, 1));
    memstub_trace_free(t);
    tu_run_free(&r);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Item 4: an occurrence the program never reached fails, says how many
// there were, and leaves no trace.
START_TEST(test_occurrence_beyond_the_last) {
  char *dir = tu_mkdtemp();
  tu_run r;
  const char *opts[] = {"--occurrence", "5", NULL};
  memstub_trace *t = record(dir, "occ.csv", &r, opts, "region_keep", NULL);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(r.err, "1 occurrence") != NULL, "%s", r.err);
  ck_assert_ptr_null(strstr(r.err, "static or setuid"));
  tu_run_free(&r);
  // Sibling: --occurrence on a program without probe regions.
  const char *one[] = {"--occurrence", "1", NULL};
  t = record(dir, "occ.csv", &r, one, "pattern", NULL);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(r.err, "no probe region") != NULL, "%s", r.err);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Item 5: a thread the program never created is said as such, in both heap
// scopes, with an ordinal in English.
START_TEST(test_thread_never_created) {
  char *dir = tu_mkdtemp();
  static const char *const scopes[] = {"thread", "process"};
  for (int i = 0; i < 2; i++) {
    tu_run r;
    const char *opts[] = {"--thread", "3", "--heap", scopes[i], NULL};
    memstub_trace *t = record(dir, "t3.csv", &r, opts, "two_threads", NULL);
    ck_assert_msg(r.status == 1, "--heap %s: exit %d: %s", scopes[i], r.status, r.err);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(r.err, "created only 2 threads") != NULL, "%s", r.err);
    ck_assert_msg(strstr(r.err, "3rd") != NULL, "%s", r.err);
    ck_assert_ptr_null(strstr(r.err, "static or setuid"));
    ck_assert_ptr_null(strstr(r.err, "3th"));
    tu_run_free(&r);
  }
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Item 9 and 5: killed by SIGKILL (nothing can be written) or SIGSEGV (the
// trace is written from the handler): said, exit 1, never the static hint.
START_TEST(test_killed) {
  char *dir = tu_mkdtemp();
  tu_run r;
  // SIGKILL: the process cannot write; the command salvages the journal.
  memstub_trace *t = record(dir, "kill.csv", &r, NULL, "sigkill", NULL);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "killed by signal 9") != NULL, "%s", r.err);
  ck_assert_msg(strstr(r.err, "SIGKILL), which cannot be caught") != NULL, "%s", r.err);
  ck_assert_ptr_null(strstr(r.err, "static or setuid"));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 1111);
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.salvaged"), "1");
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "record.exit"), "SIGKILL"));
  memstub_trace_free(t);
  tu_run_free(&r);
  // Inside a probe region: the salvage keeps the region only, from its entry.
  t = record(dir, "rkill.csv", &r, NULL, "region_kill", NULL);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_ge(memstub_trace_column(t, "region"), 0);
  ck_assert_int_eq(t->pts[0].time_ns, 0);
  ck_assert_int_eq(t->pts[t->n - 1].heap_bytes - t->pts[0].heap_bytes, 4321);
  memstub_trace_free(t);
  tu_run_free(&r);
  // Sibling: the exit system call itself, past every hook: said, and salvaged.
  t = record(dir, "raw.csv", &r, NULL, "rawexit", NULL);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "without the recorder's exit path") != NULL, "%s", r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 1212);
  memstub_trace_free(t);
  tu_run_free(&r);
  t = record(dir, "segv.csv", &r, NULL, "segv", NULL);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "killed by signal 11") != NULL, "%s", r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 2222);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "record.exit"), "signal 11"));
  ck_assert_ptr_null(memstub_trace_get_meta(t, "record.salvaged"));
  memstub_trace_free(t);
  tu_run_free(&r);
  // SIGPIPE (a program piped into head): written from the handler, at the
  // signal, not salvaged from the journal as if the program had a handler
  // of its own, and ending 200 ms after the allocation, not at it.
  t = record(dir, "pipe.csv", &r, NULL, "sigpipe", NULL);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "killed by signal 13") != NULL, "%s", r.err);
  ck_assert_msg(strstr(r.err, "handler of its own") == NULL, "%s", r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 2323);
  ck_assert_ptr_null(memstub_trace_get_meta(t, "record.salvaged"));
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "record.exit"), "signal 13"));
  ck_assert_int_ge(t->pts[t->n - 1].time_ns, 200000000);
  memstub_trace_free(t);
  tu_run_free(&r);
  // A real-time signal is not caught: salvaged, and said so, not blamed on a handler.
  t = record(dir, "rt.csv", &r, NULL, "sigrt", NULL);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "which the recorder does not catch") != NULL, "%s", r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 2424);
  memstub_trace_free(t);
  tu_run_free(&r);
  // The six traces, and no status file or journal left beside them.
  ck_assert_int_eq(tu_count_entries(dir), 6);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Item 9: exit() and exec called from a thread, and a daemon that closes
// every descriptor and changes directory: the trace is written, no hang.
// (These passed before the fix too; the fork, exec and thread cases are
// test_fork_and_exec and test_threads.)
START_TEST(test_thread_exit_and_closed_fds) {
  char *dir = tu_mkdtemp();
  tu_run r;
  memstub_trace *t = record(dir, "texit.csv", &r, NULL, "thread_exit", NULL);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);  // the program's status 3
  ck_assert_msg(strstr(r.err, "exited with status 3") != NULL, "%s", r.err);
  ck_assert_ptr_nonnull(t);
  // 3333 bytes and glibc's own for the thread (its DTV, a few hundred).
  ck_assert_msg(peak(t, 1) >= 3333 && peak(t, 1) < 3333 + 4096, "%lld", (long long)peak(t, 1));
  memstub_trace_free(t);
  tu_run_free(&r);
  // exec from a thread: the new image (same pid) is recorded from its start.
  t = record(dir, "texec.csv", &r, NULL, "thread_exec", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 13656);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "command"), "pattern"));
  memstub_trace_free(t);
  tu_run_free(&r);
  t = record(dir, "daemon.csv", &r, NULL, "closefds", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(peak(t, 1), 7666);
  memstub_trace_free(t);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 3);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Item 7: the summary's call counts agree (record.events is every allocator
// call, free(NULL) included, as churn.program counts them), and a cost that
// was not measured says so instead of 0.0 ns.
START_TEST(test_summary_counts_agree) {
  char *dir = tu_mkdtemp();
  tu_run r;
  memstub_trace *t = record(dir, "p.csv", &r, NULL, "pattern", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(meta_i(t, "record.events"), churn_field(t, "churn.program", "calls="));
  // 20 calls: fewer than the 1024 between two measured ones.
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.cost_ns_per_event"), "not measured");
  ck_assert_msg(strstr(r.err, "0.0 ns") == NULL, "%s", r.err);
  ck_assert_msg(strstr(r.err, "not measured") != NULL, "%s", r.err);
  memstub_trace_free(t);
  tu_run_free(&r);
  t = record(dir, "th.csv", &r, NULL, "threads", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(meta_i(t, "record.events"), churn_field(t, "churn.program", "calls="));
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The summary ends with the next step; run as printed, in the trace's
// directory, its commands build a stub, replay it and compare.
START_TEST(test_summary_next_step_runs) {
  char *dir = tu_mkdtemp();
  tu_run r;
  memstub_trace *t = record(dir, "p.csv", &r, NULL, "pattern", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(t);
  memstub_trace_free(t);
  ck_assert_msg(strstr(r.err, "peak heap ") && strstr(r.err, " KiB"), "%s", r.err);
  const char *next = strstr(r.err, "\nnext: ");
  ck_assert_msg(next != NULL, "no next step in: %s", r.err);
  ck_assert_msg(strstr(next, " gen ") && strstr(next, " build ") && strstr(next, " compare "),
                "%s", next);
  const char *line = strchr(next + 1, '\n');
  int cmds = 0;
  while (line && strncmp(line, "\n  ", 3) == 0) {
    const char *end = strchr(line + 1, '\n');
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%.*s", (int)(end ? end - line - 3 : (long)strlen(line + 3)),
             line + 3);
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    tu_run c = tu_exec(dir, argv);
    ck_assert_msg(c.status == 0, "'%s' exited %d: %s", cmd, c.status, c.err);
    tu_run_free(&c);
    cmds++;
    line = end;
  }
  ck_assert_int_eq(cmds, 3);
  char path[4096];
  snprintf(path, sizeof path, "%s/p_stub", dir);
  ck_assert(tu_exists(path));
  snprintf(path, sizeof path, "%s/p.replayed.csv", dir);
  ck_assert(tu_exists(path));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The next step names memstub by its path when the shell would run another
// one first: an empty entry of PATH (here the first) is the current directory.
START_TEST(test_summary_next_step_with_another_memstub_first_on_path) {
  char *dir = tu_mkdtemp();
  char fake[4096];
  snprintf(fake, sizeof fake, "%s/memstub", dir);
  tu_write_file(fake, "#!/bin/sh\necho 'not this memstub' >&2\nexit 3\n");
  ck_assert_int_eq(chmod(fake, 0755), 0);
  char *exe_dir = strdup(getenv("MEMSTUB_EXE")), *path;
  *strrchr(exe_dir, '/') = '\0';
  ck_assert(asprintf(&path, ":%s:%s", exe_dir, getenv("PATH")) > 0);
  setenv("PATH", path, 1);
  tu_run r;
  memstub_trace *t = record(dir, "p.csv", &r, NULL, "pattern", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  memstub_trace_free(t);
  const char *next = strstr(r.err, "\nnext: ");
  ck_assert_msg(next != NULL, "no next step in: %s", r.err);
  const char *line = strstr(next + 1, "\n  ");
  ck_assert_ptr_nonnull(line);
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%.*s", (int)strcspn(line + 3, "\n"), line + 3);
  char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  tu_run c = tu_exec(dir, argv);
  ck_assert_msg(c.status == 0, "'%s' exited %d: %s", cmd, c.status, c.err);
  tu_run_free(&c);
  tu_run_free(&r);
  free(path);
  free(exe_dir);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *record_suite(void) {
  Suite *s = suite_create("record");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_every_function);
  tcase_add_test(tc, test_exact_under_adversarial_layouts);
  tcase_add_test(tc, test_table_out_of_memory_fails_the_recording);
  tcase_add_test(tc, test_work_columns);
  tcase_add_test(tc, test_stack_at_calls_and_from_timer);
  tcase_add_test(tc, test_stack_off_thread);
  tcase_add_test(tc, test_sites_unbiased);
  tcase_add_test(tc, test_failed_calls_counted_without_bytes);
  tcase_add_test(tc, test_rss_after_big_free);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_fork_and_exec);
  tcase_add_test(tc, test_fatal_signal_and__exit);
  tcase_add_test(tc, test_probe_regions_and_churn);
  tcase_add_test(tc, test_coalescing_keeps_peaks);
  tcase_add_test(tc, test_timeline_estimated_warned);
  tcase_add_test(tc, test_children_left_out_warned);
  tcase_add_test(tc, test_mapped_memory);
  tcase_add_test(tc, test_lazy_heap_resident);
  tcase_add_test(tc, test_rss_leaves_out_recorder_tables);
  tcase_add_test(tc, test_growth_samples_rate_limited);
  tcase_add_test(tc, test_region_memory);
  tcase_add_test(tc, test_usage_errors);
  tcase_add_test(tc, test_options_stop_at_the_program);
  suite_add_tcase(s, tc);
  TCase *rel = tcase_create("reliability");
  tcase_set_timeout(rel, 120);
  tcase_add_test(rel, test_region_entry_survives_coalescing);
  tcase_add_test(rel, test_occurrence_beyond_the_last);
  tcase_add_test(rel, test_thread_never_created);
  tcase_add_test(rel, test_killed);
  tcase_add_test(rel, test_thread_exit_and_closed_fds);
  tcase_add_test(rel, test_summary_counts_agree);
  tcase_add_test(rel, test_summary_next_step_runs);
  tcase_add_test(rel, test_summary_next_step_with_another_memstub_first_on_path);
  suite_add_tcase(s, rel);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(record_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
