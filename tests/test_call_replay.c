// The call replay (issue 31 item 2): a program recorded with --calls,
// generated into a data file and replayed, makes the recorded calls: the
// replayed heap_bytes equals the trace's at every row, and the calls the
// replay counts as it makes them (the measured calls_* columns) equal the
// trace's, kind by kind and class by class. gen refuses a damaged calls
// file naming it; --no-calls keeps the class replay. tests/record/rec_helper.c.
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calls.h"
#include "memstub/runtime.h"
#include "memstub/trace.h"
#include "testutil.h"

static const char *env(const char *name) {
  const char *v = getenv(name);
  ck_assert_msg(v != NULL, "%s is not set (run the tests with ctest)", name);
  return v;
}

static memstub_trace *read_trace(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  return t;
}

// rec_helper MODE recorded with --calls into DIR/t.csv (and t.csv.calls), DIR new and returned.
static char *recorded(const char *mode) {
  char *dir = tu_mkdtemp();
  tu_run r = tu_memstub(dir, "record", "-q", "--calls", "-o", "t.csv", "--",
                        env("MEMSTUB_REC_HELPER"), mode, NULL);
  ck_assert_msg(r.status == 0, "record: status %d: %s", r.status, r.err);
  tu_run_free(&r);
  return dir;
}

// fnprog MODE recorded with --calls --function fn into dir/t.csv (and t.csv.calls).
static void record_fn(const char *dir, const char *fn, const char *mode) {
  tu_run r = tu_memstub(dir, "record", "-q", "--calls", "--function", fn, "-o", "t.csv", "--",
                        env("MEMSTUB_REC_FNPROG"), mode, NULL);
  ck_assert_msg(r.status == 0, "record: status %d: %s", r.status, r.err);
  tu_run_free(&r);
}

// The sum of column name over t's rows (0 when t has no such column).
static int64_t column_sum(const memstub_trace *t, const char *name) {
  size_t c = 0;
  while (c < t->nextra && strcmp(t->extra_names[c], name) != 0) c++;
  int64_t s = 0;
  for (size_t i = 0; c < t->nextra && i < t->n; i++) s += t->extra[i * t->nextra + c];
  return s;
}

// The calls of one kind over t's rows, every size class.
static int64_t kind_sum(const memstub_trace *t, const char *kind) {
  int64_t s = 0;
  for (size_t c = 0; c < t->nextra; c++)
    if (strncmp(t->extra_names[c], "calls_", 6) == 0 &&
        strncmp(t->extra_names[c] + 6, kind, strlen(kind)) == 0 &&
        t->extra_names[c][6 + strlen(kind)] == '_')
      s += column_sum(t, t->extra_names[c]);
  return s;
}

/* dir/t.csv generated into a data file (with the what-if option opt val
 * when opt is not NULL), replayed call for call with --measure; the
 * recorded trace into *t, the replayed one into *o, row for row. */
static void gen_replay(const char *dir, const char *opt, const char *val, memstub_trace **t,
                       memstub_trace **o) {
  tu_run g = opt ? tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", opt, val, NULL)
                 : tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(g.status == 0, "gen: status %d: %s", g.status, g.err);
  ck_assert_msg(strstr(g.err, "replayed call for call"), "gen said: %s", g.err);
  ck_assert_msg(!tu_warned(g.err) && !strstr(g.err, "left out:"), "gen said: %s", g.err);
  tu_run_free(&g);
  tu_run r = tu_memstub(dir, "replay", "--data", "t.dat", "--measure", "out.csv", NULL);
  ck_assert_msg(r.status == 0, "replay: status %d: %s", r.status, r.err);
  tu_run_free(&r);
  *t = read_trace(dir, "t.csv"), *o = read_trace(dir, "out.csv");
  ck_assert_uint_eq((*o)->n, (*t)->n);
}

/* The replayed trace o against the recorded t (mode names it): call for
 * call, heap_bytes equal at every row and every calls_* column's sum equal. */
static void check_exact(const char *mode, const memstub_trace *t, const memstub_trace *o) {
  const char *how = memstub_trace_get_meta(o, "replay");
  ck_assert_msg(how && strncmp(how, "call for call", 13) == 0, "replay: %s", how ? how : "(none)");
  for (size_t i = 0; i < t->n; i++)
    ck_assert_msg(o->pts[i].heap_bytes == t->pts[i].heap_bytes,
                  "%s: row %zu: replayed heap %lld, recorded %lld", mode, i,
                  (long long)o->pts[i].heap_bytes, (long long)t->pts[i].heap_bytes);
  int64_t calls = 0;
  for (size_t c = 0; c < t->nextra; c++) {
    const char *name = t->extra_names[c];
    if (strncmp(name, "calls_", 6) != 0) continue;
    int64_t want = column_sum(t, name), got = column_sum(o, name);
    ck_assert_msg(got == want, "%s: %s: %lld calls replayed, %lld recorded", mode, name,
                  (long long)got, (long long)want);
    calls += got;
  }
  ck_assert_int_gt(calls, 0);
}

static void replay_exact(const char *mode) {
  char *dir = recorded(mode);
  memstub_trace *t, *o;
  gen_replay(dir, NULL, NULL, &t, &o);
  check_exact(mode, t, o);
  memstub_trace_free(o);
  // memstub replay TRACE makes the same stub in memory: the same calls.
  tu_run r = tu_memstub(dir, "replay", "t.csv", "--measure", "direct.csv", NULL);
  ck_assert_msg(r.status == 0, "replay t.csv: status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "replayed call for call"), "replay said: %s", r.err);
  tu_run_free(&r);
  o = read_trace(dir, "direct.csv");
  ck_assert_uint_eq(o->n, t->n);
  check_exact(mode, t, o);
  memstub_trace_free(t);
  memstub_trace_free(o);
  tu_rmtree(dir);
  free(dir);
}

// Every function of the malloc family, with alignments; peak 13656 bytes.
START_TEST(test_call_replay_pattern) { replay_exact("pattern"); }
END_TEST

// 200,000 malloc/free pairs of 64 sizes in 200 bursts, coalesced into rows.
START_TEST(test_call_replay_many) { replay_exact("many"); }
END_TEST

/* A recording of one thread with the process's heap (rec_helper two_threads
 * uses the probe API: the main thread, record.heap_scope process) whose
 * workers allocate: the stub makes every thread's calls in time order on
 * its one thread (the calls file's threads merged), the heap exact at every
 * row. gen refused it before ("calls of threads 3 and 2"), as it did a
 * recording of `xz -T2` with --thread main. */
START_TEST(test_call_replay_threads_merged) {
  /* Threads racing within microseconds: a call's time is read in its hook,
   * apart from the heap's atomic update, so the time order may differ from
   * the order the heap saw (the trace had both workers' blocks of 16 bytes
   * live at once, their calls' times put one's free before the other's
   * malloc: in one recording of about seven). gen then says how many rows
   * its calls do not give; every other row is exact, and the calls kind by
   * kind always. */
  for (int round = 0; round < 3; round++) {
    char *dir = recorded("two_threads");
    tu_run g = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
    ck_assert_msg(g.status == 0 && strstr(g.err, "threads merged in time order, made on the "
                                                  "stub's one thread"),
                  "gen: status %d: %s", g.status, g.err);
    const char *w = strstr(g.err, "warning: t.csv.calls: ");
    long off = w ? strtol(w + strlen("warning: t.csv.calls: "), NULL, 10) : 0;
    ck_assert_msg(!w || (off > 0 && strstr(w, "rows whose heap_bytes the calls do not give")),
                  "gen said: %s", g.err);
    tu_run_free(&g);
    tu_run r = tu_memstub(dir, "replay", "--data", "t.dat", "--measure", "out.csv", NULL);
    ck_assert_msg(r.status == 0, "replay: status %d: %s", r.status, r.err);
    tu_run_free(&r);
    memstub_trace *t = read_trace(dir, "t.csv"), *o = read_trace(dir, "out.csv");
    ck_assert_uint_eq(o->n, t->n);
    long differ = 0;
    for (size_t i = 0; i < t->n; i++) differ += o->pts[i].heap_bytes != t->pts[i].heap_bytes;
    ck_assert_msg(differ <= off, "%ld rows differ, gen said %ld", differ, off);
    for (size_t c = 0; c < t->nextra; c++)
      if (strncmp(t->extra_names[c], "calls_", 6) == 0)
        ck_assert_int_eq(column_sum(o, t->extra_names[c]), column_sum(t, t->extra_names[c]));
    memstub_trace_free(t);
    memstub_trace_free(o);
    tu_rmtree(dir);
    free(dir);
  }
}
END_TEST

/* 40 mmapped blocks live at once beside small ones, freed and made again
 * (rec_helper farblocks): the table's words of the blocks far from the
 * arena's name places in a table of pointers of their own, which grows and
 * takes freed places again; the calls and heap as recorded. */
START_TEST(test_call_replay_far_blocks) { replay_exact("farblocks"); }
END_TEST

/* A what-if on an exact stub (issue 31): --heap-scale 0.5 halves each call's
 * size (rounded): the replay makes the same calls, kind by kind, and its
 * heap is half the trace's at every row, within a byte a block. --churn-scale
 * above 1 would add calls: the class replay, said. */
START_TEST(test_call_replay_heap_scale) {
  char *dir = recorded("pattern");
  memstub_trace *t, *o;
  gen_replay(dir, "--heap-scale", "0.5", &t, &o);
  int64_t peak = 0;
  for (size_t i = 0; i < t->n; i++) {
    int64_t want = (t->pts[i].heap_bytes + 1) / 2, got = o->pts[i].heap_bytes;
    ck_assert_msg(llabs(got - want) <= 16, "row %zu: replayed heap %lld, half the trace's %lld", i,
                  (long long)got, (long long)want);
    if (t->pts[i].heap_bytes > peak) peak = t->pts[i].heap_bytes;
  }
  ck_assert_int_gt(peak, 10000);  // pattern's peak is 13656: halving it shows
  static const char *const kinds[] = {"malloc", "calloc", "realloc", "free", "memalign"};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    int64_t want = kind_sum(t, kinds[k]), got = kind_sum(o, kinds[k]);  // its classes move
    ck_assert_msg(got == want, "%s: %lld calls replayed, %lld recorded", kinds[k], (long long)got,
                  (long long)want);
  }
  memstub_trace_free(t);
  memstub_trace_free(o);
  tu_run g = tu_memstub(dir, "gen", "t.csv", "--data", "c.dat", "--churn-scale", "2", NULL);
  ck_assert_msg(g.status == 0 && strstr(g.err, "--churn-scale above 1 asks for calls the "
                                                   "component never made: the class replay"),
                "gen: status %d: %s", g.status, g.err);
  tu_run_free(&g);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Replayed trace o's heap_bytes equal to t's at every row.
static void heap_equal(const memstub_trace *t, const memstub_trace *o, const char *what) {
  ck_assert_uint_eq(o->n, t->n);
  for (size_t i = 0; i < t->n; i++)
    ck_assert_msg(o->pts[i].heap_bytes == t->pts[i].heap_bytes,
                  "%s: row %zu: replayed heap %lld, recorded %lld", what, i,
                  (long long)o->pts[i].heap_bytes, (long long)t->pts[i].heap_bytes);
}

/* --churn-scale on an exact stub (issue 31): the calls of the short-lived
 * blocks (made and freed within a row) are left out but a share F, per kind
 * and size class; the heap at every row stays the trace's. many's 200,000
 * malloc/free pairs, most freed in the burst's row: with F = 0 only the
 * blocks live across a row are left (C0 calls a column), with 0.5 every
 * calls_* column is C0 + 0.5 (C1 - C0) within one call, C1 the trace's.
 * Through gen --data (0) and memstub replay TRACE (0.5). */
START_TEST(test_call_replay_churn_scale) {
  char *dir = recorded("many");
  memstub_trace *t, *o0, *o5;
  gen_replay(dir, "--churn-scale", "0", &t, &o0);
  heap_equal(t, o0, "--churn-scale 0");
  tu_run r = tu_memstub(dir, "replay", "t.csv", "--churn-scale", "0.5", "--measure", "half.csv",
                        NULL);
  ck_assert_msg(r.status == 0, "replay: status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "replayed call for call") && strstr(r.err, "short-lived"),
                "replay said: %s", r.err);
  tu_run_free(&r);
  o5 = read_trace(dir, "half.csv");
  heap_equal(t, o5, "--churn-scale 0.5");
  int64_t all = 0, left = 0;
  for (size_t c = 0; c < t->nextra; c++) {
    const char *name = t->extra_names[c];
    if (strncmp(name, "calls_", 6) != 0) continue;
    int64_t c1 = column_sum(t, name), c0 = column_sum(o0, name), got = column_sum(o5, name);
    double want = (double)c0 + 0.5 * (double)(c1 - c0);
    ck_assert_msg(got >= want - 1 && got <= want + 1, "%s: %lld calls at 0.5, want %.1f (%lld at "
                  "0, %lld recorded)", name, (long long)got, want, (long long)c0, (long long)c1);
    all += c1, left += c0;
  }
  ck_assert_int_gt(all, 100000);
  ck_assert_msg(left * 10 < all, "--churn-scale 0 left %lld of %lld calls", (long long)left,
                (long long)all);
  memstub_trace_free(t);
  memstub_trace_free(o0);
  memstub_trace_free(o5);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A --function recording's calls file holds every call of the run: the
 * stub makes only those of the function's span. fnprog's produce() makes 4
 * mallocs and a free; main frees two of its blocks after it returns (and
 * the C library allocates before and after): the replay makes the
 * function's calls, kind by kind, with the trace's heap at every row. */
START_TEST(test_call_replay_function) {
  char *dir = tu_mkdtemp();
  record_fn(dir, "produce", "generation");
  memstub_trace *t, *o;
  gen_replay(dir, NULL, NULL, &t, &o);
  for (size_t i = 0; i < t->n; i++)
    ck_assert_msg(o->pts[i].heap_bytes == t->pts[i].heap_bytes,
                  "row %zu: replayed heap %lld, recorded %lld", i,
                  (long long)o->pts[i].heap_bytes, (long long)t->pts[i].heap_bytes);
  static const char *const kinds[] = {"malloc", "free"};
  for (size_t k = 0; k < 2; k++)
    ck_assert_msg(kind_sum(o, kinds[k]) == kind_sum(t, kinds[k]),
                  "%s: %lld calls replayed, %lld recorded", kinds[k],
                  (long long)kind_sum(o, kinds[k]), (long long)kind_sum(t, kinds[k]));
  ck_assert_int_eq(kind_sum(t, "malloc"), 4);
  ck_assert_int_eq(kind_sum(t, "free"), 1);
  memstub_trace_free(t);
  memstub_trace_free(o);
  /* --churn-scale reads the calls again: the host's before and after the
   * function are left out as the first reading left them (the second reading
   * stopped at the stub's last call, and gen ended with status 0, no message
   * and no data file). */
  gen_replay(dir, "--churn-scale", "0.5", &t, &o);
  for (size_t i = 0; i < t->n; i++)
    ck_assert_msg(o->pts[i].heap_bytes == t->pts[i].heap_bytes,
                  "--churn-scale 0.5: row %zu: replayed heap %lld, recorded %lld", i,
                  (long long)o->pts[i].heap_bytes, (long long)t->pts[i].heap_bytes);
  memstub_trace_free(t);
  memstub_trace_free(o);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A function that frees a block allocated before it (fnprog's consume()):
 * the free is not the stub's (gen warns), and the stub's count of calls is
 * the calls it makes, so the replay runs (it was refused: "2 calls, the
 * stub says 3") and makes consume()'s own malloc and free. */
START_TEST(test_call_replay_free_from_before) {
  char *dir = tu_mkdtemp();
  record_fn(dir, "consume", "consume");
  tu_run r = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(r.status == 0, "gen: status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "2 calls of 1 blocks") &&
                    strstr(r.err, "1 frees or reallocs of blocks allocated before"),
                "gen said: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", "--data", "t.dat", "--measure", "out.csv", NULL);
  ck_assert_msg(r.status == 0, "replay: status %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_trace *o = read_trace(dir, "out.csv");
  ck_assert_int_eq(kind_sum(o, "malloc"), 1);
  ck_assert_int_eq(kind_sum(o, "free"), 1);
  memstub_trace_free(o);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// A damaged calls file: gen --data refuses it, naming the file; --no-calls
// makes the class replay's data file from the same trace.
START_TEST(test_call_replay_damaged) {
  char *dir = recorded("pattern");
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv.calls", dir);
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fseek(f, 64, SEEK_SET), 0);  // the first block head's magic
  ck_assert_int_eq(fputc(0xff, f), 0xff);
  ck_assert_int_eq(fputc(0xff, f), 0xff);
  fclose(f);
  tu_run g = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(g.status == 2, "gen: status %d: %s", g.status, g.err);
  ck_assert_msg(strstr(g.err, "t.csv.calls"), "gen said: %s", g.err);
  ck_assert_msg(strstr(g.err, "--no-calls"), "gen said: %s", g.err);
  tu_run_free(&g);
  snprintf(path, sizeof path, "%s/t.dat", dir);
  FILE *none = fopen(path, "rb");
  ck_assert_msg(none == NULL, "a data file was written");
  g = tu_memstub(dir, "gen", "t.csv", "--no-calls", "--data", "t.dat", NULL);
  ck_assert_msg(g.status == 0, "gen --no-calls: status %d: %s", g.status, g.err);
  ck_assert_msg(!strstr(g.err, "call for call"), "gen said: %s", g.err);
  tu_run_free(&g);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* memstub replay TRACE of a trace with calls: --no-calls keeps the class
 * replay; from standard input the calls file cannot be found: a note, the
 * class replay; a missing calls file: an error naming it, nothing replayed. */
START_TEST(test_call_replay_trace_choices) {
  char *dir = recorded("pattern");
  tu_run r = tu_memstub(dir, "replay", "t.csv", "--no-calls", "--measure", "class.csv", NULL);
  ck_assert_msg(r.status == 0, "replay --no-calls: status %d: %s", r.status, r.err);
  ck_assert_msg(!strstr(r.err, "call for call"), "replay --no-calls said: %s", r.err);
  tu_run_free(&r);
  memstub_trace *o = read_trace(dir, "class.csv");
  const char *how = memstub_trace_get_meta(o, "replay");
  ck_assert_msg(!how || strncmp(how, "call for call", 13) != 0, "replay: %s", how);
  memstub_trace_free(o);
  char path[4096];
  char *const sh[] = {"/bin/sh", "-c", "exec \"$MEMSTUB_EXE\" replay - < t.csv", NULL};
  r = tu_exec(dir, sh);
  ck_assert_msg(r.status == 0, "replay -: status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "standard input") && strstr(r.err, "the class replay"),
                "replay - said: %s", r.err);
  tu_run_free(&r);
  char moved[4096];
  snprintf(path, sizeof path, "%s/t.csv.calls", dir);
  snprintf(moved, sizeof moved, "%s/saved.calls", dir);
  ck_assert_int_eq(rename(path, moved), 0);
  r = tu_memstub(dir, "replay", "t.csv", "--measure", "none.csv", NULL);
  ck_assert_msg(r.status == 2, "replay without t.csv.calls: status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "t.csv.calls") && strstr(r.err, "replay --no-calls"),
                "replay said: %s", r.err);
  tu_run_free(&r);
  snprintf(path, sizeof path, "%s/none.csv", dir);
  FILE *none = fopen(path, "rb");
  ck_assert_msg(none == NULL, "a measured trace was written");
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Resident memory on the real blocks (issue 31): rec_helper lazy mallocs
 * 100 MiB and writes only 10 MiB of it, so its rss_bytes stays far below
 * its heap. Replayed call for call, the block is the component's and the
 * rss targets say how much of it to write: at every row holding the block
 * the replayed rss_bytes is within 4 MiB of the trace's (it was the whole
 * 100 MiB, every page written at the malloc); and with targets made to
 * fall from 40 to 8 MiB while it lives, its pages are dropped to follow
 * them. RssAnon is read by the
 * replay itself, so load does not move it; skipped under the sanitizers
 * (their allocator and shadow memory are resident too). */
START_TEST(test_call_replay_resident) {
#ifdef MEMSTUB_SANITIZED
  return;
#endif
  char *dir = recorded("lazy");
  tu_run r = tu_memstub(dir, "replay", "t.csv", "--measure", "out.csv", NULL);
  ck_assert_msg(r.status == 0, "replay: status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "replayed call for call"), "replay said: %s", r.err);
  tu_run_free(&r);
  memstub_trace *t = read_trace(dir, "t.csv"), *o = read_trace(dir, "out.csv");
  heap_equal(t, o, "lazy");
  int ct = memstub_trace_column(t, "rss_bytes"), co = memstub_trace_column(o, "rss_bytes");
  ck_assert_int_ge(ct, 0);
  ck_assert_int_ge(co, 0);
  const int64_t mib = 1024 * 1024;
  int held = 0, low = 0;
  for (size_t i = 0; i < t->n; i++) {
    if (t->pts[i].heap_bytes < 100 * mib) continue;
    int64_t want = memstub_trace_extra_row(t, i)[ct], got = memstub_trace_extra_row(o, i)[co];
    ck_assert_msg(llabs(got - want) <= 4 * mib, "row %zu: replayed rss %lld, recorded %lld", i,
                  (long long)got, (long long)want);
    held++;
    low += want < 50 * mib;
  }
  ck_assert_int_gt(held, 3);
  ck_assert_int_eq(low, held);  // every such row asks for less than the block
  memstub_trace_free(o);
  /* The targets made to fall while the block lives (40 MiB for the first
   * half of its rows, 8 MiB after): the pages written for the first are
   * dropped from the block for the second. */
  int64_t seen = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->pts[i].heap_bytes >= 100 * mib)
      memstub_trace_extra_row(t, i)[ct] = seen++ < held / 2 ? 40 * mib : 8 * mib;
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_write(t, path, &err) == 0, "%s", err.msg);
  r = tu_memstub(dir, "replay", "t.csv", "--measure", "fall.csv", NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "replayed call for call"), "replay: status %d: %s",
                r.status, r.err);
  tu_run_free(&r);
  o = read_trace(dir, "fall.csv");
  heap_equal(t, o, "lazy, falling targets");
  co = memstub_trace_column(o, "rss_bytes");
  for (size_t i = 0; i < t->n; i++) {
    if (t->pts[i].heap_bytes < 100 * mib) continue;
    int64_t want = memstub_trace_extra_row(t, i)[ct], got = memstub_trace_extra_row(o, i)[co];
    ck_assert_msg(llabs(got - want) <= 4 * mib, "falling: row %zu: replayed rss %lld, asked %lld",
                  i, (long long)got, (long long)want);
  }
  memstub_trace_free(t);
  memstub_trace_free(o);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The calls of thread th (UINT32_MAX: all) in dir/name.calls, free(NULL) left out and counted in *nulls.
static ms__call *calls_of(const char *dir, const char *name, uint32_t th, size_t *n,
                          int64_t *nulls) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.calls", dir, name);
  ms__calls *c = NULL;
  memstub_error err = {0};
  ck_assert_msg(ms__calls_open(path, &c, &err) == 0, "%s", err.msg);
  size_t cap = (size_t)ms__calls_head_of(c)->calls + 1;
  ms__call *v = calloc(cap, sizeof *v), k;
  *n = 0, *nulls = 0;
  int rc;
  while ((rc = ms__calls_next(c, &k, &err)) == 1) {
    if (th != UINT32_MAX && k.thread != th) continue;
    if (k.fn == MS__CALLS_FREE && !k.old) (*nulls)++;
    else v[(*n)++] = k;
  }
  ck_assert_msg(rc == 0, "%s", err.msg);
  ms__calls_close(c);
  return v;
}

// The stub program of dir/t.csv (gen ARG --data, memstub build) recorded, every thread, into dir/OUT.
static void record_stub(const char *dir, const char *arg, const char *out) {
  tu_run r = tu_memstub(dir, "gen", "t.csv", arg, "--data", "s.dat", NULL);
  ck_assert_msg(r.status == 0, "gen %s: status %d: %s", arg, r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "build", "--data", "s.dat", "-o", "s.stub", NULL);
  ck_assert_msg(r.status == 0, "build: status %d: %s", r.status, r.err);
  tu_run_free(&r);
  char prog[4096];
  snprintf(prog, sizeof prog, "%s/s.stub", dir);
  r = tu_memstub(dir, "record", "-q", "--thread", "all", "--calls", "-o", out, "--", prog, NULL);
  ck_assert_msg(r.status == 0, "record the stub: status %d: %s", r.status, r.err);
  tu_run_free(&r);
}

/* Counted from outside (memstub record --thread all of the stub program):
 * the replay thread (thread 1) makes the component's calls one by one, the
 * same function, size and alignment, and beyond them only the free(NULL)s
 * the class replay's thread makes too (glibc's); the main thread makes
 * glibc's calloc of the thread's start and nothing of the runtime's. */
START_TEST(test_call_replay_counted_outside) {
#ifdef MEMSTUB_SANITIZED
  // A sanitized stub program cannot be recorded: the recorder is preloaded before ASan.
  return;
#endif
  char *dir = recorded("pattern");
  record_stub(dir, "--timing=online", "calls.csv");
  record_stub(dir, "--no-calls", "class.csv");
  size_t n, ns, nk;
  int64_t nulls, nulls_s, nulls_k;
  ms__call *want = calls_of(dir, "t.csv", UINT32_MAX, &n, &nulls);  // one thread
  ms__call *got = calls_of(dir, "calls.csv", 1, &ns, &nulls_s);
  free(calls_of(dir, "class.csv", 1, &nk, &nulls_k));
  ck_assert_uint_eq(ns, n);
  for (size_t i = 0; i < n; i++) {
    ck_assert_msg(got[i].fn == want[i].fn && got[i].size == want[i].size &&
                      got[i].align == want[i].align && !got[i].old == !want[i].old,
                  "call %zu: function %d of %llu bytes (alignment %llu), recorded %d of %llu (%llu)",
                  i, got[i].fn, (unsigned long long)got[i].size, (unsigned long long)got[i].align,
                  want[i].fn, (unsigned long long)want[i].size, (unsigned long long)want[i].align);
  }
  ck_assert_int_eq(nulls, 1);
  ck_assert_int_eq(nulls_s, nulls + nulls_k);
  // The replay thread's own free(NULL)s are glibc's, of a thread's start and
  // end: the online cost model's sorts made 4 more here (glibc's qsort).
  ck_assert_msg(nulls_k <= 2, "the replay thread made %lld free(NULL)s of its own",
                (long long)nulls_k);
  size_t nm;
  int64_t nulls_m;
  ms__call *mainc = calls_of(dir, "calls.csv", 0, &nm, &nulls_m);
  // The main thread's: glibc's calloc of the replay thread's start, no more
  // (reading the data file made a calloc and a free on the caller's heap).
  ck_assert_msg(nm <= 1, "the main thread made %zu calls besides free(NULL)", nm);
  free(mainc);
  free(want);
  free(got);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* The runtime checks a stub's calls once and remembers them (a stub called
 * again and again is not decoded at every call): the same arrays with other
 * bytes in them, as memory freed and filled again, are checked again. */
START_TEST(test_call_replay_checked_again) {
  char *dir = recorded("pattern");
  tu_run g = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(g.status == 0, "gen: status %d: %s", g.status, g.err);
  // gen says what the replay holds of its own beside the component's blocks.
  ck_assert_msg(strstr(g.err, "the replay's own memory: its table of blocks (4 bytes a block, "),
                "gen said: %s", g.err);
  tu_run_free(&g);
  char path[4096];
  snprintf(path, sizeof path, "%s/t.dat", dir);
  memstub_stub_data *d = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_stub_data_open(path, &d, &err) == 0, "%s", err.msg);
  struct memstub_stub s = d->stub;
  ck_assert_int_gt(s.ncallseq, 0);
  uint8_t *seq = malloc((size_t)s.ncallseq);
  ck_assert_ptr_nonnull(seq);
  // Read from the file as the replay reads them (d->stub.callseq is no array).
  ck_assert_msg(memstub_stub_data_calls(d, 0, s.ncallseq, seq, &err) == 0, "%s", err.msg);
  s.callseq = seq;
  ck_assert_msg(memstub_replay_check(&s, NULL, NULL, &err) == 0, "%s", err.msg);
  ck_assert_msg(memstub_replay_check(&s, NULL, NULL, &err) == 0, "%s", err.msg);
  uint8_t good = seq[0];
  seq[0] = 0x0e;  // a function beyond the malloc family, in the same array
  ck_assert_int_eq(memstub_replay_check(&s, NULL, NULL, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "calls: byte 0"), "check said: %s", err.msg);
  seq[0] = good;  // the good bytes again
  ck_assert_msg(memstub_replay_check(&s, NULL, NULL, &err) == 0, "%s", err.msg);
  free(seq);
  memstub_stub_data_free(d);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The offset of data file b's array name in its table (docs/formats.md), or 0 for none.
static size_t data_entry(const char *b, const char *name) {
  uint32_t n;
  uint64_t table;
  memcpy(&n, b + 32, 4);
  memcpy(&table, b + 160, 8);
  for (uint32_t i = 0; i < n; i++)
    if (strcmp(b + table + (size_t)i * 48, name) == 0) return (size_t)table + (size_t)i * 48;
  return 0;
}

static void write_bytes(const char *path, const char *b, size_t len) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

/* A data file carries its big blocks (callbig), so its replay does not
 * walk the calls first; it checks each call as it makes it instead. A file
 * forged to pass every checksum with a free of a block that is not live at
 * its first call opens, passes the check, and its replay stops at that
 * call naming its byte; a callbig entry whose point is beyond the stub is
 * refused at the open, naming the array and the entry. */
START_TEST(test_call_replay_checked_as_made) {
  char *dir = recorded("farblocks");
  tu_run g = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(g.status == 0, "gen: status %d: %s", g.status, g.err);
  tu_run_free(&g);
  char path[4096], bad[4096];
  snprintf(path, sizeof path, "%s/t.dat", dir);
  snprintf(bad, sizeof bad, "%s/bad.dat", dir);
  size_t len = 0;
  char *b = tu_read_file_len(path, &len);
  ck_assert_ptr_nonnull(b);
  size_t seq = data_entry(b, "callseq"), big = data_entry(b, "callbig");
  ck_assert_msg(seq && big, "the file has no callseq or no callbig");
  uint64_t nbig, big_off, seq_off;
  memcpy(&nbig, b + big + 24, 8);
  memcpy(&big_off, b + big + 32, 8);
  memcpy(&seq_off, b + seq + 32, 8);
  ck_assert_uint_ge(nbig, 40);  // the 256 KiB blocks and the ones made again

  memstub_stub_data *d = NULL;
  memstub_error err = {0};
  memstub_replay *r = NULL;
  ck_assert_msg(memstub_stub_data_open(path, &d, &err) == 0, "%s", err.msg);
  ck_assert_msg(memstub_replay_run(&d->stub, NULL, &r, &err) == 0, "%s", err.msg);
  memstub_replay_free(r);
  memstub_stub_data_free(d);

  char *f = malloc(len);
  ck_assert_ptr_nonnull(f);
  memcpy(f, b, len);
  f[seq_off] = 0x03, f[seq_off + 1] = 0x7f;  // free(block 127) before any block is made
  tu_data_reseal(f, len);
  write_bytes(bad, f, len);
  ck_assert_msg(memstub_stub_data_open(bad, &d, &err) == 0, "%s", err.msg);
  ck_assert_msg(memstub_replay_check(&d->stub, NULL, NULL, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(memstub_replay_run(&d->stub, NULL, &r, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "calls: byte 0: block 127 is not live"), "replay said: %s",
                err.msg);
  memstub_stub_data_free(d);

  int64_t numdata;
  memcpy(&numdata, b + 48, 8);
  memcpy(f, b, len);
  memcpy(f + big_off + 8, &numdata, 8);  // entry 0 freed at a point past the last
  tu_data_reseal(f, len);
  write_bytes(bad, f, len);
  ck_assert_int_eq(memstub_stub_data_open(bad, &d, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "array callbig: entry 0: "), "open said: %s", err.msg);
  free(f);
  free(b);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// This process's RssAnon in KiB, from /proc/self/status.
static long rss_anon_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  ck_assert_ptr_nonnull(f);
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "RssAnon: %ld", &kib) == 1) break;
  fclose(f);
  ck_assert_int_ge(kib, 0);
  return kib;
}

/* Flip every byte of path from its 256th on (the head stays): the arrays
 * copied at the open do not see it, the calls read from the file do. */
static void flip_after_head(const char *path) {
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  char b[4096];
  ssize_t n;
  for (off_t at = 256; (n = pread(fd, b, sizeof b, at)) > 0; at += n) {
    for (ssize_t i = 0; i < n; i++) b[i] = (char)~b[i];
    ck_assert_int_eq(pwrite(fd, b, (size_t)n, at), n);
  }
  close(fd);
}

/* An exact stub's calls stay in its data file (issue 31: read whole, they
 * were RssAnon the component never had, 2.3 MB of bench/system's hash
 * host): the open reads them once for their sums, and the replay reads them
 * a window at a time, each window checked. A file written over or truncated
 * after the open stops the replay with an error naming the file: never
 * another replay, never SIGBUS. */
START_TEST(test_call_replay_file_changed) {
  char *dir = recorded("many");
  char path[4096];
  snprintf(path, sizeof path, "%s/t.dat", dir);
  for (int k = 0; k < 2; k++) {
    tu_run g = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
    ck_assert_msg(g.status == 0, "gen: status %d: %s", g.status, g.err);
    tu_run_free(&g);
    memstub_stub_data *d = NULL;
    memstub_error err = {0};
    long before = rss_anon_kib();
    ck_assert_msg(memstub_stub_data_open(path, &d, &err) == 0, "%s", err.msg);
    long grew = rss_anon_kib() - before;
    int64_t calls = d->stub.ncallseq;
    ck_assert_msg(calls >= 256 * 1024, "%lld bytes of calls", (long long)calls);
    ck_assert_msg(grew * 1024 < calls / 4,
                  "the open took %ld KiB of RssAnon for %lld bytes of calls", grew,
                  (long long)calls);
    if (k == 0) {
      flip_after_head(path);
    } else {
      struct stat st;
      ck_assert_int_eq(stat(path, &st), 0);
      ck_assert_int_eq(truncate(path, st.st_size / 2), 0);
    }
    memstub_replay *r = NULL;
    int rc = memstub_replay_run(&d->stub, NULL, &r, &err);
    ck_assert_msg(rc == -EIO, "replay: %d: %s", rc, err.msg);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(err.msg, path), "replay said: %s", err.msg);
    ck_assert_msg(strstr(err.msg, k ? "truncated" : "changed since the file was opened"),
                  "replay said: %s", err.msg);
    uint8_t *b = malloc((size_t)calls);  // the bytes as the replay reads them: the same error
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(memstub_stub_data_calls(d, 0, calls, b, &err), -EIO);
    ck_assert_msg(strstr(err.msg, path), "memstub_stub_data_calls said: %s", err.msg);
    free(b);
    memstub_stub_data_free(d);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* The pages written for the rss targets go into the blocks that held them:
 * rec_helper holds frees a block it never wrote while the one it wrote
 * lives on, and the rss stays. The stub puts its pages in the written one
 * (its hold, from the target's fall at its free), so the first free takes
 * none of them and nothing is written again: the replay's faults about the
 * component's. Writing them where the list starts (the unwritten block,
 * made first) cost 8,192 faults for 4,096. */
START_TEST(test_call_replay_holds) {
#ifdef MEMSTUB_SANITIZED
  return;
#endif
  char *dir = recorded("holds");
  tu_run r = tu_memstub(dir, "replay", "t.csv", "--measure", "out.csv", NULL);
  ck_assert_msg(r.status == 0, "replay: status %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_trace *t = read_trace(dir, "t.csv"), *o = read_trace(dir, "out.csv");
  heap_equal(t, o, "holds");
  int ft = memstub_trace_column(t, "minor_faults"), fo = memstub_trace_column(o, "minor_faults");
  ck_assert_int_ge(ft, 0);
  ck_assert_int_ge(fo, 0);
  int64_t rec = memstub_trace_extra_row(t, t->n - 1)[ft] - memstub_trace_extra_row(t, 0)[ft];
  int64_t rep = memstub_trace_extra_row(o, o->n - 1)[fo];
  ck_assert_msg(rec >= 8192, "recorded %lld faults for 32 MiB written", (long long)rec);
  ck_assert_msg(rep < rec + 4096, "replayed %lld faults, recorded %lld", (long long)rep,
                (long long)rec);
  memstub_trace_free(t);
  memstub_trace_free(o);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Two rows of one time, the second after a free (a coalesced bucket's
 * maxima row and its last state), in a trace whose heap there is not the
 * calls' (100 bytes more, as a block from before its scope makes it): the
 * free is the second row's. The first row took every call of its time, the
 * free too, and met its resident target after it: SQLite's stub wrote 44 MB
 * back into other blocks there (6,500 faults, one recording of three).
 * Trace and calls written by hand (ms__calls_writer, as the importers do). */
START_TEST(test_call_replay_rows_of_one_time) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  tu_write_file(path, "# memstub-trace 1\n"
                      "# calls.file: t.csv.calls\n"
                      "time_ns,stack_bytes,heap_bytes\n"
                      "0,0,100\n"
                      "1000000,0,1100\n"
                      "2000000,64,1700\n"
                      "2000000,0,700\n"
                      "3000000,0,100\n");
  snprintf(path, sizeof path, "%s/t.csv.calls", dir);
  ms__calls_writer *w = NULL;
  memstub_error err = {0};
  ck_assert_msg(ms__calls_writer_open(path, &w, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(ms__calls_writer_add(w, 500000, MS__CALLS_MALLOC, 0, 0x1000, 1000, 0, 0, &err), 0);
  ck_assert_int_eq(ms__calls_writer_add(w, 1500000, MS__CALLS_MALLOC, 0, 0x2000, 500, 0, 0, &err), 0);
  ck_assert_int_eq(ms__calls_writer_add(w, 2000000, MS__CALLS_FREE, 0x1000, 0, 0, 0, 0, &err), 0);
  ck_assert_int_eq(ms__calls_writer_add(w, 2500000, MS__CALLS_FREE, 0x2000, 0, 0, 0, 0, &err), 0);
  ck_assert_msg(ms__calls_writer_commit(w, &err) == 0, "%s", err.msg);
  tu_run g = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(g.status == 0 && strstr(g.err, "replayed call for call"), "gen: %d %s", g.status,
                g.err);
  tu_run_free(&g);
  tu_run r = tu_memstub(dir, "replay", "--data", "t.dat", "--measure", "out.csv", NULL);
  ck_assert_msg(r.status == 0, "replay: status %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_trace *o = read_trace(dir, "out.csv");
  ck_assert_uint_eq(o->n, 5);
  static const int64_t heap[5] = {100, 1100, 1600, 600, 100};  // the trace's 100 bytes below
  for (size_t i = 0; i < 5; i++)
    ck_assert_msg(o->pts[i].heap_bytes == heap[i], "row %zu: replayed heap %lld, not %lld", i,
                  (long long)o->pts[i].heap_bytes, (long long)heap[i]);
  memstub_trace_free(o);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("call_replay");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_call_replay_pattern);
  tcase_add_test(tc, test_call_replay_many);
  tcase_add_test(tc, test_call_replay_heap_scale);
  tcase_add_test(tc, test_call_replay_churn_scale);
  tcase_add_test(tc, test_call_replay_resident);
  tcase_add_test(tc, test_call_replay_damaged);
  tcase_add_test(tc, test_call_replay_trace_choices);
  tcase_add_test(tc, test_call_replay_function);
  tcase_add_test(tc, test_call_replay_free_from_before);
  tcase_add_test(tc, test_call_replay_counted_outside);
  tcase_add_test(tc, test_call_replay_checked_again);
  tcase_add_test(tc, test_call_replay_holds);
  tcase_add_test(tc, test_call_replay_file_changed);
  tcase_add_test(tc, test_call_replay_far_blocks);
  tcase_add_test(tc, test_call_replay_threads_merged);
  tcase_add_test(tc, test_call_replay_rows_of_one_time);
  tcase_add_test(tc, test_call_replay_checked_as_made);
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
