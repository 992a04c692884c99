// Resident memory (issue 13 items 3, 6): a stub generated from a trace with
// rss_bytes and mapped_bytes keeps resident what the original did, not what
// it requested. The replay's RssAnon is read from /proc/self/status by the
// progress callback (called every half second from this thread while the
// replay thread holds each state for over a second).
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "testutil.h"

#define MiB (INT64_C(1) << 20)
#define TOL (4 * MiB)  // the stub's own pages, the allocator's, the kernel's rounding

// RssAnon of this process in bytes, or -1 when /proc does not say.
static int64_t rss_anon(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long long kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "RssAnon: %lld kB", &kb) == 1) break;
  fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

// The last RssAnon seen while each point was begun (done = points begun).
#define MAXP 8
typedef struct sample {
  int64_t rss[MAXP + 1];
  int seen[MAXP + 1];
} sample;

static void on_progress(int64_t done, int64_t total, void *arg) {
  (void)total;
  sample *s = arg;
  if (done < 0 || done > MAXP) return;
  s->rss[done] = rss_anon();
  s->seen[done]++;
}

/* Rows {time ns, heap, rss, mapped} (stack 0) -> a stub -> a replay; s gets
 * RssAnon above the value before the replay, per points begun: point i - 1
 * (row i) waits while done = i, so s->rss[i] is the state after row i - 1. */
static void replay_rows(const int64_t (*rows)[4], size_t n, int with_rss, int with_mapped,
                        sample *s) {
  memstub_trace *t = memstub_trace_create();
  int rc = with_rss ? memstub_trace_add_column(t, "rss_bytes") : -1;
  int mc = with_mapped ? memstub_trace_add_column(t, "mapped_bytes") : -1;
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(memstub_trace_append(t, rows[i][0], 0, rows[i][1]), 0);
    if (rc >= 0) memstub_trace_extra_row(t, i)[rc] = rows[i][2];
    if (mc >= 0) memstub_trace_extra_row(t, i)[mc] = rows[i][3];
  }
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_build(t, &go, &g, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(g->stub.numdata, (int64_t)n - 1);
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  memset(s, 0, sizeof *s);
  o.progress = on_progress;
  o.progress_arg = s;
  int64_t before = rss_anon();
  ck_assert_int_ge(before, 0);
  memstub_replay *r = NULL;
  ck_assert_msg(memstub_replay_run(&g->stub, &o, &r, &err) == 0, "%s", err.msg);
  for (int i = 0; i <= MAXP; i++)
    if (s->seen[i]) s->rss[i] -= before;
  memstub_replay_free(r);
  memstub_gen_free(g);
  memstub_trace_free(t);
}

static void near(const sample *s, int i, int64_t want, const char *what) {
  ck_assert_msg(s->seen[i], "%s: no sample while point %d was begun", what, i - 1);
  if (getenv("MEMSTUB_TEST_VERBOSE"))
    fprintf(stderr, "%s: RssAnon +%.1f MiB (want %.1f)\n", what, (double)s->rss[i] / (double)MiB,
            (double)want / (double)MiB);
  ck_assert_msg(s->rss[i] >= want - TOL && s->rss[i] <= want + TOL,
                "%s: RssAnon grew by %lld bytes (%.1f MiB), want %.1f MiB +- 4", what,
                (long long)s->rss[i], (double)s->rss[i] / (double)MiB, (double)want / (double)MiB);
}

// A 100 MiB heap of which the original kept 10 MiB resident.
START_TEST(test_lazy_heap) {
#if defined(MEMSTUB_SANITIZED)
  return;  // the sanitizers' allocator touches and keeps pages of its own
#endif
  static const int64_t rows[][4] = {{0, 0, 0, 0},
                                    {1000000, 100 * MiB, 10 * MiB, 0},
                                    {1300000000, 100 * MiB, 10 * MiB, 0},
                                    {1400000000, 0, 0, 0}};
  sample s;
  replay_rows(rows, 4, 1, 0, &s);
  near(&s, 2, 10 * MiB, "heap 100 MiB, rss 10 MiB");
}
END_TEST

// The RSS grows with no allocator call: the stub touches then.
START_TEST(test_lazy_touch_later) {
#if defined(MEMSTUB_SANITIZED)
  return;
#endif
  static const int64_t rows[][4] = {{0, 0, 0, 0},
                                    {1000000, 64 * MiB, 8 * MiB, 0},
                                    {1200000000, 64 * MiB, 40 * MiB, 0},
                                    {2400000000, 64 * MiB, 40 * MiB, 0},
                                    {2500000000, 0, 0, 0}};
  sample s;
  replay_rows(rows, 5, 1, 0, &s);
  near(&s, 2, 8 * MiB, "heap 64 MiB, rss 8 MiB");
  near(&s, 3, 40 * MiB, "heap unchanged, rss 40 MiB");
}
END_TEST

// Memory mapped outside malloc: 64 MiB mapped, 32 MiB of it resident.
START_TEST(test_mapped) {
#if defined(MEMSTUB_SANITIZED)
  return;
#endif
  static const int64_t rows[][4] = {{0, 0, 0, 0},
                                    {1000000, 0, 32 * MiB, 64 * MiB},
                                    {1300000000, 0, 32 * MiB, 64 * MiB},
                                    {1400000000, 0, 0, 0}};
  sample s;
  replay_rows(rows, 4, 1, 1, &s);
  near(&s, 2, 32 * MiB, "mapped 64 MiB, rss 32 MiB");
  // mapped_bytes alone (no rss_bytes): every mapped page is touched.
  replay_rows(rows, 4, 0, 1, &s);
  near(&s, 2, 64 * MiB, "mapped 64 MiB, no rss column");
}
END_TEST

// The original's RSS falls while its requested bytes do not: the stub releases.
START_TEST(test_release) {
#if defined(MEMSTUB_SANITIZED)
  return;
#endif
  static const int64_t rows[][4] = {{0, 0, 0, 0},
                                    {1000000, 64 * MiB, 48 * MiB, 16 * MiB},
                                    {1200000000, 64 * MiB, 8 * MiB, 16 * MiB},
                                    {2400000000, 64 * MiB, 8 * MiB, 16 * MiB},
                                    {2500000000, 0, 0, 0}};
  sample s;
  replay_rows(rows, 5, 1, 1, &s);
  near(&s, 2, 48 * MiB, "heap 64 MiB + mapped 16, rss 48 MiB");
  near(&s, 3, 8 * MiB, "rss falls to 8 MiB, heap and mapped unchanged");
}
END_TEST

// Without the columns the replay touches every requested byte, as before.
START_TEST(test_no_columns_touch_all) {
#if defined(MEMSTUB_SANITIZED)
  return;
#endif
  static const int64_t rows[][4] = {{0, 0, 0, 0},
                                    {1000000, 32 * MiB, 0, 0},
                                    {1300000000, 32 * MiB, 0, 0},
                                    {1400000000, 0, 0, 0}};
  sample s;
  replay_rows(rows, 4, 0, 0, &s);
  near(&s, 2, 32 * MiB, "heap 32 MiB, no rss column");
}
END_TEST

/* Rows {time ns, heap, rss, mapped} -> a stub replayed with measure bits ->
 * its replayed trace (NULL when measure lacks what a trace needs). */
static memstub_trace *measured_rows(const int64_t (*rows)[4], size_t n, int with_rss,
                                    unsigned measure) {
  memstub_trace *t = memstub_trace_create();
  int rc = with_rss ? memstub_trace_add_column(t, "rss_bytes") : -1;
  int mc = memstub_trace_add_column(t, "mapped_bytes");
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(memstub_trace_append(t, rows[i][0], 0, rows[i][1]), 0);
    if (rc >= 0) memstub_trace_extra_row(t, i)[rc] = rows[i][2];
    memstub_trace_extra_row(t, i)[mc] = rows[i][3];
  }
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_build(t, &go, &g, &err) == 0, "%s", err.msg);
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  o.measure = measure;
  memstub_replay *r = NULL;
  ck_assert_msg(memstub_replay_run(&g->stub, &o, &r, &err) == 0, "%s", err.msg);
  memstub_trace *out = NULL;
  ck_assert_msg(memstub_replay_trace(r, &out, &err) == 0, "%s", err.msg);
  memstub_replay_free(r);
  memstub_gen_free(g);
  memstub_trace_free(t);
  return out;
}

static int64_t col(const memstub_trace *t, size_t row, const char *name) {
  int c = memstub_trace_column(t, name);
  ck_assert_msg(c >= 0, "no %s column", name);
  return memstub_trace_extra_row(t, row)[c];
}

/* replay --measure: rss_bytes, mapped_bytes and the faults of the replay,
 * read as the recorder reads them, above the original's smallest values. */
START_TEST(test_measure_resident) {
#if defined(MEMSTUB_SANITIZED)
  return;
#endif
  // rss and mapped start above 0: the replayed columns add the stub's bases back.
  static const int64_t rows[][4] = {{0, 0, 2 * MiB, 4 * MiB},
                                    {1000000, 64 * MiB, 18 * MiB, 4 * MiB},
                                    {2000000, 64 * MiB, 50 * MiB, 36 * MiB},
                                    {3000000, 64 * MiB, 6 * MiB, 36 * MiB},
                                    {4000000, 0, 2 * MiB, 4 * MiB}};
  memstub_trace *t = measured_rows(rows, 5, 1, MEMSTUB_MEASURE_TRACE);
  ck_assert_uint_eq(t->n, 5);
  int64_t minflt = 0;
  for (size_t i = 0; i < 5; i++) {
    int64_t rss = col(t, i, "rss_bytes"), mapped = col(t, i, "mapped_bytes");
    if (getenv("MEMSTUB_TEST_VERBOSE"))
      fprintf(stderr, "row %zu: rss %.1f MiB, mapped %.1f MiB, faults %lld/%lld\n", i,
              (double)rss / (double)MiB, (double)mapped / (double)MiB,
              (long long)col(t, i, "minor_faults"), (long long)col(t, i, "major_faults"));
    ck_assert_msg(rss >= rows[i][2] - TOL && rss <= rows[i][2] + TOL,
                  "row %zu: rss_bytes %lld, want %lld +- 4 MiB", i, (long long)rss,
                  (long long)rows[i][2]);
    ck_assert_int_eq(mapped, rows[i][3]);  // whole pages: exact
    ck_assert_int_ge(col(t, i, "minor_faults"), minflt);  // never falls
    minflt = col(t, i, "minor_faults");
    ck_assert_int_ge(col(t, i, "major_faults"), 0);
  }
  // 48 MiB written: at least one fault (a transparent huge page is one).
  ck_assert_int_gt(minflt, 0);
  // The process's own resident memory at the start, in the metadata.
  const char *entry = memstub_trace_get_meta(t, "rss_entry_bytes");
  ck_assert_ptr_nonnull(entry);
  ck_assert_msg(atoll(entry) > 0, "rss_entry_bytes: %s", entry);
  memstub_trace_free(t);

  // mapped_bytes without rss_bytes: everything requested and mapped is resident.
  static const int64_t all[][4] = {{0, 0, 0, 0}, {1000000, 16 * MiB, 0, 8 * MiB},
                                   {2000000, 0, 0, 0}};
  t = measured_rows(all, 3, 0, MEMSTUB_MEASURE_TRACE);
  ck_assert_int_ge(col(t, 1, "rss_bytes"), 24 * MiB - TOL);
  ck_assert_int_le(col(t, 1, "rss_bytes"), 24 * MiB + TOL);
  ck_assert_int_eq(col(t, 1, "mapped_bytes"), 8 * MiB);
  memstub_trace_free(t);
}
END_TEST

/* A fall in many steps that are not whole pages releases all of it: each
 * drop takes the page the previous one left partly covered (a drop that kept
 * it would leave a page behind per step: 63 pages here). */
START_TEST(test_release_by_steps) {
#if defined(MEMSTUB_SANITIZED)
  return;
#endif
  enum { STEPS = 64 };
  int64_t rows[STEPS + 3][4];
  int64_t top = STEPS * (128 * 1024 + 100);
  rows[0][0] = 0, rows[0][1] = 0, rows[0][2] = 0, rows[0][3] = 0;
  rows[1][0] = 1000, rows[1][1] = 16 * MiB, rows[1][2] = top, rows[1][3] = 0;
  for (int i = 1; i <= STEPS; i++) {
    rows[1 + i][0] = 1000 + 1000 * i;
    rows[1 + i][1] = 16 * MiB;
    rows[1 + i][2] = top - i * (128 * 1024 + 100);
    rows[1 + i][3] = 0;
  }
  rows[STEPS + 2][0] = 1000 * (STEPS + 2), rows[STEPS + 2][1] = 0, rows[STEPS + 2][2] = 0;
  rows[STEPS + 2][3] = 0;
  memstub_trace *t = measured_rows((const int64_t(*)[4])rows, STEPS + 3, 1, MEMSTUB_MEASURE_TRACE);
  int64_t peak = col(t, 1, "rss_bytes"), end = col(t, STEPS + 1, "rss_bytes");
  ck_assert_msg(peak >= top && peak <= top + 64 * 1024, "peak rss %lld, want %lld", (long long)peak,
                (long long)top);
  ck_assert_msg(end <= 64 * 1024, "after the fall rss %lld bytes, want at most 64 KiB",
                (long long)end);
  memstub_trace_free(t);
}
END_TEST

/* The original keeps more resident than it requests and maps (its
 * allocator kept the pages of a free): the stub holds the rest in its keep
 * mapping, which mapped_bytes does not count, and gives it back as the
 * original does. */
START_TEST(test_kept_after_free) {
#if defined(MEMSTUB_SANITIZED)
  return;
#endif
  static const int64_t rows[][4] = {{0, 0, 0, 0},
                                    {1000000, 32 * MiB, 24 * MiB, 0},
                                    {2000000, 0, 16 * MiB, 0},
                                    {3000000, 0, 4 * MiB + 100, 0},
                                    {4000000, 0, 0, 0}};
  memstub_trace *t = measured_rows(rows, 5, 1, MEMSTUB_MEASURE_TRACE);
  for (size_t i = 1; i < 5; i++) {
    int64_t rss = col(t, i, "rss_bytes");
    ck_assert_msg(rss >= rows[i][2] && rss <= rows[i][2] + 64 * 1024,
                  "row %zu: rss_bytes %lld, want %lld (+ 64 KiB)", i, (long long)rss,
                  (long long)rows[i][2]);
    ck_assert_int_eq(col(t, i, "mapped_bytes"), 0);
  }
  ck_assert_ptr_null(memstub_trace_get_meta(t, "rss_unmet_points"));
  memstub_trace_free(t);
}
END_TEST

/* The heap falls while the resident memory stays (glibc's arena keeps the
 * freed pages): the stub keeps its written pages too, moved out of its
 * shrinking block into the keep mapping, not dropped and written again; a
 * heap that grows back with the target flat writes nothing new; the target's
 * fall then gives pages back. Before this, each fall and rise wrote the 16
 * MiB again (4096 faults a step). */
START_TEST(test_heap_fall_keeps_pages) {
#if defined(MEMSTUB_SANITIZED)
  return;
#endif
  // The rss falls 45 ms after the heap: the generator's rule for a stale
  // reading (test_stale_reading_settled) leaves these rows alone.
  static const int64_t rows[][4] = {{0, 0, 0, 0},
                                    {1000000, 32 * MiB, 24 * MiB, 0},
                                    {2000000, 8 * MiB, 24 * MiB, 0},
                                    {3000000, 32 * MiB, 24 * MiB, 0},
                                    {4000000, 8 * MiB, 24 * MiB, 0},
                                    {5000000, 0, 24 * MiB, 0},
                                    {50000000, 0, 4 * MiB, 0},
                                    {150000000, 0, 0, 0}};
  enum { N = sizeof rows / sizeof rows[0] };
  memstub_trace *t = measured_rows(rows, N, 1, MEMSTUB_MEASURE_TRACE);
  for (size_t i = 1; i < N; i++) {
    int64_t rss = col(t, i, "rss_bytes");
    ck_assert_msg(rss >= rows[i][2] && rss <= rows[i][2] + 512 * 1024,
                  "row %zu: rss_bytes %lld, want %lld (+ 512 KiB)", i, (long long)rss,
                  (long long)rows[i][2]);
  }
  // Rows 2 to 5 write no new page: the block's page tables move, a few
  // partly covered pages at the edges are written again.
  int64_t faults = col(t, 5, "minor_faults") - col(t, 1, "minor_faults");
  ck_assert_msg(faults < 256, "%lld faults while the heap fell and rose with rss flat, want < 256",
                (long long)faults);
  ck_assert_ptr_null(memstub_trace_get_meta(t, "rss_unmet_points"));
  memstub_trace_free(t);
}
END_TEST

/* The resident target of a point: the row's rss_bytes after the generator's
 * rules (gen: points map back to rows). */
static int64_t target_of_row(const memstub_gen *g, int64_t row) {
  int64_t v = -2;
  for (int64_t i = 0; i < g->stub.numdata; i++)
    if (g->point[i] == row) v = g->rss[i];
  return v;
}

static memstub_gen *gen_rows(const int64_t (*rows)[4], size_t n) {
  memstub_trace *t = memstub_trace_create();
  int rc = memstub_trace_add_column(t, "rss_bytes");
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(memstub_trace_append(t, rows[i][0], 0, rows[i][1]), 0);
    memstub_trace_extra_row(t, i)[rc] = rows[i][2];
  }
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_build(t, &go, &g, &err) == 0, "%s", err.msg);
  memstub_trace_free(t);
  return g;
}

/* A recorder reads rss when the heap grows, not when it falls: a fall's row
 * repeats the reading from before. When the next reading, within 10 ms, is
 * lower, the fall's row gets the rss the fall explains; a later or equal
 * next reading leaves it (the allocator kept the pages). */
START_TEST(test_stale_reading_settled) {
  // sort: frees its big block, the next reading (5 ms later) is lower.
  static const int64_t fell[][4] = {{0, 0, 0, 0},
                                    {1000000, 64 * MiB, 40 * MiB, 0},
                                    {2000000, 48 * MiB, 40 * MiB, 0},
                                    {2000100, 1 * MiB, 40 * MiB, 0},
                                    {7000000, 1 * MiB, 2 * MiB, 0}};
  memstub_gen *g = gen_rows(fell, 5);
  ck_assert_int_eq(target_of_row(g, 1), 40 * MiB);
  ck_assert_int_eq(target_of_row(g, 2), 24 * MiB);  // 40 minus the 16 MiB fall
  ck_assert_int_eq(target_of_row(g, 3), 2 * MiB);   // not below the next reading
  ck_assert_int_eq(target_of_row(g, 4), 2 * MiB);
  memstub_gen_free(g);
  // The next lower reading 20 ms later: the fall's rows keep their readings.
  static const int64_t late[][4] = {{0, 0, 0, 0},
                                    {1000000, 64 * MiB, 40 * MiB, 0},
                                    {2000000, 1 * MiB, 40 * MiB, 0},
                                    {22000000, 1 * MiB, 2 * MiB, 0}};
  g = gen_rows(late, 4);
  ck_assert_int_eq(target_of_row(g, 2), 40 * MiB);
  memstub_gen_free(g);
  // The next reading confirms the flat rss (an arena that kept its pages),
  // or is higher: nothing changes.
  static const int64_t kept[][4] = {{0, 0, 0, 0},
                                    {1000000, 64 * MiB, 40 * MiB, 0},
                                    {2000000, 1 * MiB, 40 * MiB, 0},
                                    {3000000, 1 * MiB, 40 * MiB, 0},
                                    {4000000, 1 * MiB, 44 * MiB, 0}};
  g = gen_rows(kept, 5);
  ck_assert_int_eq(target_of_row(g, 2), 40 * MiB);
  ck_assert_int_eq(target_of_row(g, 3), 40 * MiB);
  memstub_gen_free(g);
  // A row whose heap grew a page or more has a fresh reading: an equal one
  // there confirms the fall's rss, a lower one after it is a later fall.
  static const int64_t fresh[][4] = {{0, 0, 0, 0},
                                     {1000000, 64 * MiB, 40 * MiB, 0},
                                     {2000000, 1 * MiB, 40 * MiB, 0},
                                     {3000000, 2 * MiB, 40 * MiB, 0},
                                     {4000000, 2 * MiB, 8 * MiB, 0}};
  g = gen_rows(fresh, 5);
  ck_assert_int_eq(target_of_row(g, 2), 40 * MiB);
  memstub_gen_free(g);
}
END_TEST

// Without MEMSTUB_MEASURE_RESIDENT the replayed trace has no resident columns.
START_TEST(test_measure_without_resident) {
  static const int64_t rows[][4] = {{0, 0, 0, 0}, {1000000, MiB, 4096, 8192}, {2000000, 0, 0, 0}};
  memstub_trace *t = measured_rows(rows, 3, 1, MEMSTUB_MEASURE_TRACE & ~MEMSTUB_MEASURE_RESIDENT);
  ck_assert_int_lt(memstub_trace_column(t, "rss_bytes"), 0);
  ck_assert_int_lt(memstub_trace_column(t, "mapped_bytes"), 0);
  ck_assert_int_lt(memstub_trace_column(t, "minor_faults"), 0);
  memstub_trace_free(t);
}
END_TEST

static const char *trace_csv(const char *dir, const char *text) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  tu_write_file(path, text);
  return path;
}

// The header: the golden Listing 1 without the columns; with them memMapped
// and memRss in both forms, headers that compile next to memstub/stub.h.
START_TEST(test_header) {
  char *dir = tu_mkdtemp();
  memstub_trace *t;
  memstub_error err = {0};
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  go.source = "listing1.csv";
  ck_assert_int_eq(memstub_trace_read(tu_src("traces/samples/listing1.csv"), &t, &err), 0);
  memstub_gen *g;
  ck_assert_int_eq(memstub_gen_build(t, &go, &g, &err), 0);
  char out[4200];
  snprintf(out, sizeof out, "%s/l1.h", dir);
  ck_assert_msg(memstub_gen_emit(g, out, &err) == 0, "%s", err.msg);
  char *got = tu_read_file(out), *golden = tu_read_file(tu_src("tests/golden/listing1.h"));
  ck_assert_str_eq(got, golden);
  free(got);
  free(golden);
  memstub_gen_free(g);
  memstub_trace_free(t);

  const char *csv = trace_csv(dir,
                              "time_ns,stack_bytes,heap_bytes,rss_bytes,mapped_bytes\n"
                              "0,0,0,4096,0\n"
                              "1000,300,100,8192,65536\n"
                              "2000,0,0,4096,0\n");
  ck_assert_msg(memstub_trace_read(csv, &t, &err) == 0, "%s", err.msg);
  go.name = "res";
  ck_assert_int_eq(memstub_gen_build(t, &go, &g, &err), 0);
  ck_assert_msg(memstub_gen_emit(g, out, &err) == 0, "%s", err.msg);
  got = tu_read_file(out);
  ck_assert_ptr_nonnull(strstr(got, "static const int64_t res_memMapped[res_NUMDATA] = {\n  65536, -65536,\n};"));
  ck_assert_ptr_nonnull(strstr(got, "static const int64_t res_memRss[res_NUMDATA] = {\n  4096, 0,\n};"));
  ck_assert_ptr_nonnull(strstr(got, ".abi = MEMSTUB_STUB_ABI_RESIDENT,"));
  ck_assert_ptr_nonnull(strstr(got, " * resident:      base 4096 B; peak 4096 B above it"));
  free(got);
  // Both forms compile alone and after memstub/stub.h, -Werror, and hold the
  // same points (the compact one decoded by the runtime before main).
  char prog[4200], exe[4200], out2[4200];
  snprintf(prog, sizeof prog, "%s/p.c", dir);
  snprintf(exe, sizeof exe, "%s/p", dir);
  snprintf(out2, sizeof out2, "%s/c.h", dir);
  memstub_gen_emit_options eo = {.format = MEMSTUB_GEN_FORMAT_COMPACT};
  ck_assert_msg(memstub_gen_emit_ex(g, out2, &eo, NULL, &err) == 0, "%s", err.msg);
  got = tu_read_file(out2);
  ck_assert_ptr_nonnull(strstr(got, "\"ms2."));
  ck_assert_ptr_nonnull(strstr(got, "memstub_stub_decode_resident("));
  free(got);
  const char *cc = getenv("MEMSTUB_CC");
  char inc[4200], lib[4200];
  snprintf(inc, sizeof inc, "-I%s", tu_src("include"));
  snprintf(lib, sizeof lib, "%s/libmemstub_runtime.a", getenv("MEMSTUB_BINARY_DIR"));
  for (int k = 0; k < 4; k++) {
    char text[8192];
    snprintf(text, sizeof text,
             "%s#include \"%s\"\n#include <stdio.h>\n#include <stddef.h>\n"
             "int main(void) {\n"
             "  const struct memstub_stub *s = &res_memStub;\n"
             "  printf(\"%%zu %%d %%lld\\n\", offsetof(struct memstub_stub, mapped_base), s->abi,\n"
             "         (long long)s->rss_base);\n"
             "  for (int i = 0; i < res_NUMDATA; i++)\n"
             "    printf(\"%%lld %%lld %%lld %%lld\\n\", (long long)s->use[i].heapAlloc,\n"
             "           (long long)s->point[i], (long long)s->mapped[i], (long long)s->rss[i]);\n"
             "  return 0;\n}\n",
             k & 1 ? "#include \"memstub/stub.h\"\n" : "", k & 2 ? out2 : out);
    tu_write_file(prog, text);
#if defined(MEMSTUB_TEST_SANITIZE)
    const char *san = "-fsanitize=" MEMSTUB_TEST_SANITIZE;  // the archive is sanitized
#else
    const char *san = "-Wall";
#endif
    char *ccargv[] = {(char *)(cc ? cc : "cc"), "-std=c11", "-Wall", "-Wextra", "-Werror", inc,
                      (char *)san, "-o", exe, prog, lib, NULL};
    if (!(k & 2)) ccargv[10] = NULL;  // a listing needs no runtime
    tu_run c = tu_exec(dir, ccargv);
    ck_assert_msg(c.status == 0, "compile failed: %s", c.err);
    char *runargv[] = {exe, NULL};
    tu_run r = tu_exec(dir, runargv);
    char want[256];
    snprintf(want, sizeof want, "%zu 2 4096\n100 1 65536 4096\n-100 2 -65536 0\n",
             offsetof(struct memstub_stub, mapped_base));
    ck_assert_str_eq(r.out, want);
    tu_run_free(&c);
    tu_run_free(&r);
  }
  memstub_gen_free(g);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// memstub gen --rss-scale and --mapped-scale.
START_TEST(test_cli_scales) {
  char *dir = tu_mkdtemp();
  const char *csv = trace_csv(dir,
                              "time_ns,stack_bytes,heap_bytes,rss_bytes,mapped_bytes\n"
                              "0,0,0,0,0\n"
                              "1000,0,100,10000,8192\n");
  tu_run r = tu_memstub(dir, "gen", csv, "--rss-scale", "0.6", "--mapped-scale", "0.5", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "memMapped[NUMDATA] = {\n  4096,\n};"));
  ck_assert_ptr_nonnull(strstr(r.out, "memRss[NUMDATA] = {\n  6000,\n};"));
  ck_assert_ptr_nonnull(strstr(r.out, "rss x0.6, mapped x0.5"));
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", csv, "--rss-scale", "-2", NULL);
  ck_assert_int_ne(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.err, "--rss-scale"));
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", "--help", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "--rss-scale"));
  ck_assert_ptr_nonnull(strstr(r.out, "--mapped-scale"));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* End to end through the files: memstub replay --measure writes the resident
 * columns, the trace reads back with them, and memstub compare judges them. */
START_TEST(test_cli_measure_compare) {
  char *dir = tu_mkdtemp();
  const char *csv = trace_csv(dir,
                              "time_ns,stack_bytes,heap_bytes,rss_bytes,mapped_bytes\n"
                              "0,0,0,0,0\n"
                              "1000000,256,4194304,1048576,2097152\n"
                              "2000000,0,4194304,3145728,2097152\n"
                              "3000000,0,0,0,0\n");
  tu_run r = tu_memstub(dir, "replay", csv, "--measure", "m.csv", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  char path[4200];
  snprintf(path, sizeof path, "%s/m.csv", dir);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(t->n, 4);
  ck_assert_int_eq(col(t, 1, "mapped_bytes"), 2097152);
  ck_assert_int_ge(col(t, 3, "minor_faults"), col(t, 1, "minor_faults"));
  ck_assert_int_ge(col(t, 2, "major_faults"), 0);
#if !defined(MEMSTUB_SANITIZED)
  ck_assert_int_ge(col(t, 2, "rss_bytes"), 3145728);
  ck_assert_int_le(col(t, 2, "rss_bytes"), 3145728 + 65536);
#endif
  memstub_trace_free(t);
  r = tu_memstub(dir, "compare", csv, "m.csv", "--json", "--check", "mapped-exact=100%", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s\n%s", r.status, r.err, r.out);
  ck_assert_ptr_nonnull(strstr(r.out, "\"rss\": {\"known\": true"));
  ck_assert_ptr_nonnull(strstr(r.out, "\"mapped\": {\"known\": true"));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The largest rss_bytes of the replayed trace at path.
static int64_t rss_peak(const char *path) {
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  int64_t peak = 0;
  for (size_t i = 0; i < t->n; i++)
    if (col(t, i, "rss_bytes") > peak) peak = col(t, i, "rss_bytes");
  ck_assert_str_eq(memstub_trace_get_meta(t, "transforms"),
                   "time x0.5, heap x0.5, stack x1, rss x0.5, mapped x0.5, cpu x1, churn x1");
  memstub_trace_free(t);
  return peak;
}

/* The what-if rule (issue 30 item 1): at --heap-scale 0.5 the resident
 * memory follows the heap, in a stub made by gen and build and in memstub
 * replay alike: the original's 9 MiB peak becomes about 4.5 MiB. */
START_TEST(test_whatif_resident_follows_heap) {
  char *dir = tu_mkdtemp();
  const char *csv = tu_src("tests/fixtures/whatif/resident.csv");
  char h[4200], prog[4200], m1[4200], m2[4200];
  snprintf(h, sizeof h, "%s/w.h", dir);
  snprintf(prog, sizeof prog, "%s/w", dir);
  snprintf(m1, sizeof m1, "%s/built.csv", dir);
  snprintf(m2, sizeof m2, "%s/replayed.csv", dir);
  tu_run r = tu_memstub(dir, "gen", csv, "--heap-scale", "0.5", "--time-scale", "0.5", "-o", h,
                        NULL);
  ck_assert_msg(r.status == 0, "gen: %s", r.err);
  // What the scales did, in one block.
  ck_assert_ptr_nonnull(strstr(r.err, "peak resident  9.0 MiB -> 4.5 MiB (-50.0 %)\n"));
  ck_assert_ptr_nonnull(strstr(r.err, "peak heap      8.0 MiB -> 4.0 MiB (-50.0 %)\n"));
  tu_run_free(&r);
  r = tu_memstub(dir, "build", h, "-o", prog, NULL);
  ck_assert_msg(r.status == 0, "build: %s", r.err);
  tu_run_free(&r);
  char *argv[] = {prog, "--measure", m1, NULL};
  r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "stub: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", csv, "--heap-scale", "0.5", "--time-scale", "0.5", "--measure",
                 m2, NULL);
  ck_assert_msg(r.status == 0, "replay: %s", r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "peak resident  9.0 MiB -> 4.5 MiB (-50.0 %)\n"));
  tu_run_free(&r);
  // memstub compare tells the what-if by its metadata: before and after.
  for (int k = 0; k < 2; k++) {
    r = tu_memstub(dir, "compare", csv, k ? m2 : m1, NULL);
    ck_assert_msg(r.status == 0, "compare: %s", r.err);
    ck_assert(strstr(r.out, "what-if   time x0.5, heap x0.5, rss x0.5, mapped x0.5: before is "
                            "ORIGINAL (on its stub's timeline), after REPLAYED\n"));
#if !defined(MEMSTUB_SANITIZED)  // (ASan's allocator: the replay's heap is not measured)
    ck_assert(strstr(r.out, "  peak heap              8.0 MiB      4.0 MiB  -4.0 MiB (-50.0 %)\n"));
#endif
    ck_assert(strstr(r.out, "\nverdict   "));
    tu_run_free(&r);
  }
  r = tu_memstub(dir, "compare", csv, m2, "--json", NULL);
  ck_assert_msg(r.status == 0, "compare: %s", r.err);
  ck_assert_msg(strstr(r.out, "\"kind\": \"what-if\""), "%s", r.out);
#if !defined(MEMSTUB_SANITIZED)
  // (after: as measured, the mmapped block within a page)
  ck_assert(strstr(r.out, "\"peak_heap_bytes\": {\"known\": true, \"before\": 8388608, "
                          "\"after\": 419"));
#endif
  tu_run_free(&r);
  int64_t built = rss_peak(m1), replayed = rss_peak(m2);
#if !defined(MEMSTUB_SANITIZED)
  // 4.5 MiB, and the replay's own pages above it (TOL); nowhere near 9 MiB.
  ck_assert_int_ge(built, 4718592);
  ck_assert_int_le(built, 4718592 + TOL / 4);
  ck_assert_int_ge(replayed, 4718592);
  ck_assert_int_le(replayed, 4718592 + TOL / 4);
#else
  (void)built, (void)replayed;
#endif
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The compact form with resident data: "ms2.", six numbers a point.
START_TEST(test_decode_resident) {
  // time 1 ('C'), stack 0, heap 0, step 1 ('C'), mapped 4096, rss -1 ('B'), twice.
  // 4096 zigzag 8192 = groups 0, 0, 8 (low first): 'g' 'g' 'I'.
  const char *good = "ms2.CAACggIBCAACggIB";
  struct memAlloc use[2];
  int64_t point[2], mapped[2], rss[2];
  ck_assert_int_eq(memstub_stub_decode_resident(good, (int64_t)strlen(good), 2, use, point,
                                                mapped, rss), 0);
  ck_assert_int_eq(point[1], 2);
  ck_assert_int_eq(mapped[0], 4096);
  ck_assert_int_eq(mapped[1], 4096);
  ck_assert_int_eq(rss[1], -1);
  // ms1 data is not ms2 data, nor the reverse; a number short is damage.
  ck_assert_int_eq(memstub_stub_decode_resident("ms1.CAACCAAC", 12, 2, use, point, mapped, rss),
                   -EINVAL);
  ck_assert_int_eq(point[0], -1);
  ck_assert_int_eq(memstub_stub_decode(good, (int64_t)strlen(good), 2, use, point), -EINVAL);
  ck_assert_int_eq(memstub_stub_decode_resident(good, (int64_t)strlen(good) - 1, 2, use, point,
                                                mapped, rss), -EINVAL);
}
END_TEST

static Suite *resident_suite(void) {
  Suite *s = suite_create("resident");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_header);
  tcase_add_test(tc, test_decode_resident);
  tcase_add_test(tc, test_cli_scales);
  tcase_add_test(tc, test_lazy_heap);
  tcase_add_test(tc, test_lazy_touch_later);
  tcase_add_test(tc, test_mapped);
  tcase_add_test(tc, test_release);
  tcase_add_test(tc, test_no_columns_touch_all);
  tcase_add_test(tc, test_measure_resident);
  tcase_add_test(tc, test_measure_without_resident);
  tcase_add_test(tc, test_release_by_steps);
  tcase_add_test(tc, test_kept_after_free);
  tcase_add_test(tc, test_heap_fall_keeps_pages);
  tcase_add_test(tc, test_stale_reading_settled);
  tcase_add_test(tc, test_cli_measure_compare);
  tcase_add_test(tc, test_whatif_resident_follows_heap);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(resident_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
