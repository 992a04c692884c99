// memstub record --thread all (issue 15 item 1, recording side): every
// thread of tests/record/threads.c records, with the thread columns
// (docs/recording.md, "All threads"): start, exit and join rows with their
// peers, each thread's heap curve exact (the blocks it allocated), the
// cross-thread free rows and the owner's lowered rows, each thread's stack
// from its own top. The trace is parsed here field by field (the trace
// library reads the thread columns once the replay side lands). Without
// --thread all the trace is what it was (no thread column, read by the
// library).
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../recorder/protocol.h"
#include "memstub/trace.h"
#include "testutil.h"

#define EMPTY INT64_MIN
#define MAXR 100000

typedef struct trow {
  int64_t t, stack, heap, cpu, thread, peer, xfrom, xbytes, xalloc;
  char ev[8];
} trow;

typedef struct ttrace {
  trow *r;
  size_t n;
} ttrace;

static const char *prog(void) {
  const char *p = getenv("MEMSTUB_REC_THREADS");
  ck_assert_msg(p != NULL, "MEMSTUB_REC_THREADS is not set (run the tests with ctest)");
  return p;
}

static const char *g_mode;  // the program's argument, or NULL

// memstub record -o t.csv [a b c] -- threads [g_mode] (NULLs left out).
static tu_run record(const char *dir, const char *a, const char *b, const char *c) {
  char *argv[12];
  int k = 0;
  argv[k++] = getenv("MEMSTUB_EXE");
  argv[k++] = "record";
  argv[k++] = "-o";
  argv[k++] = "t.csv";
  if (a) argv[k++] = (char *)a;
  if (b) argv[k++] = (char *)b;
  if (c) argv[k++] = (char *)c;
  argv[k++] = "--";
  argv[k++] = (char *)prog();
  if (g_mode) argv[k++] = (char *)g_mode;
  argv[k] = NULL;
  ck_assert_ptr_nonnull(argv[0]);
  return tu_exec(dir, argv);
}

static int col(char **names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return i;
  ck_abort_msg("no column %s", name);
  return -1;
}

static int64_t num(const char *s, int may_be_empty) {
  if (!*s) {
    ck_assert_msg(may_be_empty, "an empty field where a number must be");
    return EMPTY;
  }
  char *end;
  long long v = strtoll(s, &end, 10);
  ck_assert_msg(*end == '\0', "not an integer: '%s'", s);
  return v;
}

// Split line at commas in place into f[]; the number of fields.
static int split(char *line, char **f, int max) {
  int n = 0;
  f[n++] = line;
  for (char *p = line; *p; p++)
    if (*p == ',') {
      *p = '\0';
      ck_assert_int_lt(n, max);
      f[n++] = p + 1;
    }
  return n;
}

static ttrace load(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  ttrace T = {calloc(MAXR, sizeof(trow)), 0};
  ck_assert_ptr_nonnull(T.r);
  static char line[8192], hdr[8192];
  char *names[64], *fl[64];
  int ncol = 0, c[12];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (line[0] == '#') continue;
    if (!ncol) {
      snprintf(hdr, sizeof hdr, "%s", line);
      ncol = split(hdr, names, 64);
      const char *want[] = {"time_ns",    "stack_bytes",  "heap_bytes", "cpu_ns",
                            "thread",     "thread_event", "thread_peer", "xfree_from",
                            "xfree_bytes", "xfree_alloc_ns"};
      for (int i = 0; i < 10; i++) c[i] = col(names, ncol, want[i]);
      continue;
    }
    ck_assert_int_eq(split(line, fl, 64), ncol);
    ck_assert_uint_lt(T.n, MAXR);
    trow *r = &T.r[T.n++];
    r->t = num(fl[c[0]], 0);
    r->stack = num(fl[c[1]], 0);
    r->heap = num(fl[c[2]], 0);
    r->cpu = num(fl[c[3]], 0);
    r->thread = num(fl[c[4]], 0);
    snprintf(r->ev, sizeof r->ev, "%s", fl[c[5]]);
    r->peer = num(fl[c[6]], 1);
    r->xfrom = num(fl[c[7]], 1);
    r->xbytes = num(fl[c[8]], 1);
    r->xalloc = num(fl[c[9]], 1);
  }
  fclose(f);
  ck_assert_int_gt(T.n, 0);
  return T;
}

// Thread th's heap values in its rows, consecutive repeats dropped, into v; how many.
static int heap_curve(const ttrace *T, int th, int64_t *v, int cap) {
  int n = 0;
  for (size_t i = 0; i < T->n; i++) {
    if (T->r[i].thread != th) continue;
    if (n && v[n - 1] == T->r[i].heap) continue;
    ck_assert_int_lt(n, cap);
    v[n++] = T->r[i].heap;
  }
  return n;
}

static void assert_curve(const ttrace *T, int th, const int64_t *want, int nwant) {
  int64_t v[4096];
  int n = heap_curve(T, th, v, 4096);
  char got[2048] = "";
  for (int i = 0; i < n && strlen(got) < 2000; i++)
    snprintf(got + strlen(got), sizeof got - strlen(got), "%lld ", (long long)v[i]);
  ck_assert_msg(n == nwant, "thread %d: heap curve %s(%d values, %d expected)", th, got, n, nwant);
  for (int i = 0; i < n; i++)
    ck_assert_msg(v[i] == want[i], "thread %d: heap curve %s: value %d is not %lld", th, got, i,
                  (long long)want[i]);
}

static int64_t peak_stack(const ttrace *T, int th) {
  int64_t m = 0;
  for (size_t i = 0; i < T->n; i++)
    if (T->r[i].thread == th && T->r[i].stack > m) m = T->r[i].stack;
  return m;
}

static void run_all(char **dir, ttrace *T, const char *res) {
  *dir = tu_mkdtemp();
  tu_run r = record(*dir, "--thread", "all", res);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, g_mode ? "2 threads" : "4 threads") != NULL, "summary: %s", r.err);
  tu_run_free(&r);
  *T = load(*dir);
}

static void done(char *dir, ttrace *T) {
  free(T->r);
  tu_rmtree(dir);
  free(dir);
}

// Rows in time order, ties by thread; every thread starts once (creator 0,
// thread 0 none), ends once, and thread 0 joins 1, 2, 3 in that order, each
// after it ended (by pthread_join, pthread_timedjoin_np, pthread_tryjoin_np).
START_TEST(test_events) {
  char *dir;
  ttrace T;
  run_all(&dir, &T, "-r0");
  int starts[4] = {0}, exits[4] = {0};
  int64_t exit_t[4] = {0};
  int joins[8], nj = 0;
  for (size_t i = 0; i < T.n; i++) {
    const trow *r = &T.r[i];
    ck_assert_int_ge(r->thread, 0);
    ck_assert_int_le(r->thread, 3);
    if (i) {
      ck_assert_int_ge(r->t, T.r[i - 1].t);
      if (r->t == T.r[i - 1].t) ck_assert_int_ge(r->thread, T.r[i - 1].thread);
    }
    int th = (int)r->thread;
    if (!starts[th]) {
      ck_assert_msg(strcmp(r->ev, "start") == 0, "thread %d's first row is '%s'", th, r->ev);
      ck_assert_int_eq(r->peer, th == 0 ? -1 : 0);
    }
    if (strcmp(r->ev, "start") == 0) starts[th]++;
    if (strcmp(r->ev, "exit") == 0) {
      exits[th]++;
      exit_t[th] = r->t;
      ck_assert_int_eq(r->peer, EMPTY);
    }
    if (strcmp(r->ev, "join") == 0) {
      ck_assert_int_eq(th, 0);
      ck_assert_int_lt(nj, 8);
      joins[nj++] = (int)r->peer;
      ck_assert_int_eq(exits[r->peer], 1);  // joined after it ended
      ck_assert_int_ge(r->t, exit_t[r->peer]);
    }
    if (r->ev[0] == '\0') ck_assert_int_eq(r->peer, EMPTY);
    if (r->xfrom == EMPTY) {
      ck_assert_int_eq(r->xbytes, EMPTY);
      ck_assert_int_eq(r->xalloc, EMPTY);
    }
  }
  for (int th = 0; th < 4; th++) {
    ck_assert_int_eq(starts[th], 1);
    ck_assert_int_eq(exits[th], 1);
  }
  ck_assert_int_eq(nj, 3);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(joins[i], i + 1);
  // Thread 0's exit is the trace's last row; a thread's rows after its exit
  // are only lowered heaps (thread 1's block freed by thread 0 after the join).
  ck_assert_str_eq(T.r[T.n - 1].ev, "exit");
  ck_assert_int_eq(T.r[T.n - 1].thread, 0);
  for (size_t i = 0; i < T.n; i++)
    if (T.r[i].thread != 0 && T.r[i].t > exit_t[T.r[i].thread]) {
      ck_assert_int_eq(T.r[i].thread, 1);
      ck_assert_int_eq(T.r[i].heap, 0);
    }
  done(dir, &T);
}
END_TEST

// Each worker's heap is exactly what it allocated and what of it is alive,
// whoever freed it; thread 0's holds its 100000 bytes for a while.
START_TEST(test_heap_per_thread) {
  char *dir;
  ttrace T;
  run_all(&dir, &T, "-r0");
  const int64_t one[] = {0, 10000, 30000, 60000, 50000, 30000, 70000, 40000, 0};
  const int64_t two[] = {0, 5000, 0, 100, 200, 400, 0};
  const int64_t three[] = {0, 3000, 0};
  assert_curve(&T, 1, one, 9);
  assert_curve(&T, 2, two, 7);
  assert_curve(&T, 3, three, 3);
  // Thread 0: its own block (glibc's thread bookkeeping adds a few hundred
  // bytes of its own around it).
  int64_t v[4096];
  int n = heap_curve(&T, 0, v, 4096), up = 0, down = 0;
  for (int i = 1; i < n; i++) {
    up += v[i] - v[i - 1] == 100000;
    down += v[i] - v[i - 1] == -100000;
  }
  ck_assert_int_eq(up, 1);
  ck_assert_int_eq(down, 1);
  ck_assert_int_lt(v[n - 1], 16384);
  done(dir, &T);
}
END_TEST

// The index of thread th's first row with heap h, which must exist.
static size_t row_with_heap(const ttrace *T, int th, int64_t h) {
  for (size_t i = 0; i < T->n; i++)
    if (T->r[i].thread == th && T->r[i].heap == h) return i;
  ck_abort_msg("thread %d has no row with heap %lld", th, (long long)h);
  return 0;
}

/* The cross-thread frees: thread 3 frees thread 2's 5000 (thread 2 running),
 * thread 0 frees thread 1's 40000 (thread 1 ended). Each is one row of the
 * freeing thread naming the owner, the bytes and the owner's allocation
 * row's time, and a row of the owner at the same time with the lowered heap. */
static void check_xfree(const ttrace *T, int exact) {
  int seen[4] = {0};
  for (size_t i = 0; i < T->n; i++) {
    const trow *r = &T->r[i];
    if (r->xfrom == EMPTY) continue;
    ck_assert_msg((r->thread == 3 && r->xfrom == 2) || (r->thread == 0 && r->xfrom == 1),
                  "a cross-thread free by %lld of %lld's block", (long long)r->thread,
                  (long long)r->xfrom);
    seen[r->thread]++;
    int64_t bytes = r->thread == 3 ? 5000 : 40000;
    ck_assert_int_eq(r->xbytes, bytes);
    ck_assert_str_eq(r->ev, "");
    // The owner's row at the allocation's time: where its heap rose by those bytes.
    int owner = (int)r->xfrom;
    size_t a = exact ? row_with_heap(T, owner, owner == 2 ? 5000 : 70000) : 0;
    int found = 0;
    for (size_t j = 0; j < T->n; j++)
      if (T->r[j].thread == owner && T->r[j].t == r->xalloc) found = 1;
    ck_assert_msg(found, "no row of thread %d at xfree_alloc_ns %lld", owner, (long long)r->xalloc);
    if (exact) ck_assert_int_eq(r->xalloc, T->r[a].t);
    ck_assert_int_lt(r->xalloc, r->t);
    // The owner's lowered row, same time.
    int lowered = 0;
    for (size_t j = 0; j < T->n; j++)
      if (T->r[j].thread == owner && T->r[j].t == r->t && T->r[j].heap == 0) lowered = 1;
    ck_assert_msg(lowered, "thread %d has no row at %lld with its heap lowered to 0", owner,
                  (long long)r->t);
  }
  ck_assert_int_eq(seen[3], 1);
  ck_assert_int_eq(seen[0], 1);
}

START_TEST(test_cross_thread_free) {
  char *dir;
  ttrace T;
  run_all(&dir, &T, "-r0");
  check_xfree(&T, 1);
  done(dir, &T);
}
END_TEST

// At the default resolution (coalesced within each thread) the rows still
// say who freed whose blocks, and each worker ends with nothing alive.
START_TEST(test_cross_thread_free_coalesced) {
  char *dir;
  ttrace T;
  run_all(&dir, &T, NULL);
  check_xfree(&T, 0);
  for (int th = 1; th <= 3; th++) {
    int64_t last = -1;
    for (size_t i = 0; i < T.n; i++)
      if (T.r[i].thread == th) last = T.r[i].heap;
    ck_assert_int_eq(last, 0);
  }
  done(dir, &T);
}
END_TEST

// Each thread's stack from its own top: thread 1 ran 40 frames of 1 KiB,
// thread 2 ten, thread 3 two; CPU time per thread from 0, never falling.
START_TEST(test_stacks_and_cpu) {
  char *dir;
  ttrace T;
  run_all(&dir, &T, "-r0");
  int64_t s1 = peak_stack(&T, 1), s2 = peak_stack(&T, 2), s3 = peak_stack(&T, 3);
  ck_assert_int_ge(s1, 40 * 1024);
  ck_assert_int_lt(s1, 40 * 1024 + 16384);
  ck_assert_int_ge(s2, 10 * 1024);
  ck_assert_int_lt(s2, 10 * 1024 + 16384);
  ck_assert_int_ge(s3, 2 * 1024);
  ck_assert_int_lt(s3, 2 * 1024 + 16384);
  ck_assert_int_gt(s1, s2);
  ck_assert_int_gt(s2, s3);
  int64_t last[4] = {-1, -1, -1, -1};
  for (size_t i = 0; i < T.n; i++) {
    const trow *r = &T.r[i];
    if (last[r->thread] < 0) ck_assert_int_eq(r->cpu, 0);
    ck_assert_int_ge(r->cpu, last[r->thread]);
    last[r->thread] = r->cpu;
  }
  done(dir, &T);
}
END_TEST

/* realloc by another thread: thread 1 reallocs thread 0's 3000 bytes to
 * 5000: a cross-thread free of the 3000 (thread 0's heap falls by it at
 * that time) and thread 1's allocation of 5000. */
START_TEST(test_cross_thread_realloc) {
  char *dir;
  ttrace T;
  g_mode = "xrealloc";
  run_all(&dir, &T, "-r0");
  g_mode = NULL;
  const int64_t one[] = {0, 5000, 0};
  assert_curve(&T, 1, one, 3);
  int n = 0;
  for (size_t i = 0; i < T.n; i++) {
    const trow *r = &T.r[i];
    if (r->xfrom == EMPTY) continue;
    n++;
    ck_assert_int_eq(r->thread, 1);
    ck_assert_int_eq(r->xfrom, 0);
    ck_assert_int_eq(r->xbytes, 3000);
    // Thread 0's row of the allocation (its heap rose by 3000), and its row
    // at the free's time with the heap 3000 lower than just before.
    int64_t prev = -1, at_alloc = -1, before = -1, lowered = -1;
    for (size_t j = 0; j < T.n; j++) {
      if (T.r[j].thread != 0) continue;
      if (prev >= 0 && T.r[j].heap - prev == 3000 && at_alloc < 0) at_alloc = T.r[j].t;
      if (T.r[j].t < r->t) before = T.r[j].heap;
      if (T.r[j].t == r->t) lowered = T.r[j].heap;
      prev = T.r[j].heap;
    }
    ck_assert_int_eq(r->xalloc, at_alloc);
    ck_assert_int_eq(lowered, before - 3000);
  }
  ck_assert_int_eq(n, 1);
  done(dir, &T);
}
END_TEST

// Without --thread all: no thread column, the library reads the trace, the
// heap is the process's, every thread's blocks as before (at -r 0 each
// call is a row: thread 1's 40000 and thread 2's 5000 come and go in it).
START_TEST(test_single_thread_unchanged) {
  char *dir = tu_mkdtemp();
  tu_run r = record(dir, "-q", "-r0", "--thread=main");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_lt(memstub_trace_column(t, "thread"), 0);
  ck_assert_int_lt(memstub_trace_column(t, "xfree_from"), 0);
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.thread"), "main");
  int steps[3] = {0};
  for (size_t i = 1; i < t->n; i++) {
    int64_t d = t->pts[i].heap_bytes - t->pts[i - 1].heap_bytes;
    steps[0] += d == 40000;
    steps[1] += d == 5000;
    steps[2] += d == -5000;
  }
  for (int i = 0; i < 3; i++) ck_assert_int_ge(steps[i], 1);
  memstub_trace_free(t);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// memstub record -o t.csv ARGS... -- threads MODE N in dir; its run.
static tu_run record_mode(const char *dir, const char *const *args, const char *mode, const char *n) {
  char *argv[16];
  int k = 0;
  argv[k++] = getenv("MEMSTUB_EXE");
  argv[k++] = "record";
  argv[k++] = "-o";
  argv[k++] = "t.csv";
  for (; *args; args++) argv[k++] = (char *)*args;
  argv[k++] = "--";
  argv[k++] = (char *)prog();
  argv[k++] = (char *)mode;
  argv[k++] = (char *)n;
  argv[k] = NULL;
  return tu_exec(dir, argv);
}

// The trace dir/t.csv, read.
static memstub_trace *read_t(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  return t;
}

/* A thread that maps memory itself (python3's arenas) gets a row for the
 * change of the mapped bytes: with its own heap, never the process's. Those
 * rows had the process's heap, so a thread holding none showed the main
 * thread's 8 MiB, and python3's three workers together 46 % above the
 * process's exact peak. */
START_TEST(test_mapping_rows_own_heap) {
  char *dir = tu_mkdtemp();
  const char *none[] = {NULL};
  tu_run r = record_mode(dir, none, "mapper", "200");
  ck_assert_msg(r.status == 0 && !tu_warned(r.err), "status %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_trace *t = read_t(dir);
  int tc = memstub_trace_column(t, "thread");
  ck_assert_int_ge(tc, 0);
  size_t worker = 0;
  for (size_t i = 0; i < t->n; i++) {
    if (memstub_trace_extra_row(t, i)[tc] != 1) continue;
    worker++;
    ck_assert_msg(t->pts[i].heap_bytes < (1 << 20), "row %zu: the worker's heap %lld", i,
                  (long long)t->pts[i].heap_bytes);
  }
  ck_assert_uint_ge(worker, 2);  // at least its start and end
  ck_assert_ptr_null(memstub_trace_get_meta(t, "record.peak_heap_of_rows"));
  ck_assert_int_ge(atoll(memstub_trace_get_meta(t, "record.peak_heap_bytes")), 8 << 20);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Every thread is recorded by default (issue 29): the four threads of the
 * program, with the thread columns, and the metadata says it was the
 * default; a program that made one thread gets a trace without them. */
START_TEST(test_default_every_thread) {
  char *dir = tu_mkdtemp();
  tu_run r = record(dir, NULL, NULL, NULL);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "4 threads"), "%s", r.err);
  tu_run_free(&r);
  memstub_trace *t = read_t(dir);
  ck_assert_int_ge(memstub_trace_column(t, "thread"), 0);
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.thread"), "all");
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "record.thread_default"));
  ck_assert_int_eq(memstub_trace_thread_count(t), 4);
  memstub_trace_free(t);
  // One thread: the plain columns, every pair in the heap.
  const char *none[] = {"-r0", NULL};
  r = record_mode(dir, none, "alone", "300");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_msg(!strstr(r.err, "left out"), "%s", r.err);
  tu_run_free(&r);
  t = read_t(dir);
  ck_assert_int_lt(memstub_trace_column(t, "thread"), 0);
  ck_assert_int_lt(memstub_trace_column(t, "xfree_from"), 0);
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.threads_recorded"), "1");
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.heap_scope"), "process");
  int up = 0;
  for (size_t i = 1; i < t->n; i++) up += t->pts[i].heap_bytes - t->pts[i - 1].heap_bytes == 1024;
  ck_assert_int_ge(up, 300);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* --repeat writes the kept recording's rows' figures for gen's fit of a
 * process (traces/timeline.c): their span, and every thread's CPU time in
 * them summed, each thread's from its first row to its last. */
START_TEST(test_repeat_rows_figures) {
  char *dir = tu_mkdtemp();
  tu_run r = record(dir, "-q", "--repeat", "2");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_trace *t = read_t(dir);
  int th = memstub_trace_column(t, "thread"), c = memstub_trace_column(t, "cpu_ns");
  ck_assert(th >= 0 && c >= 0);
  int64_t first[64], last[64], sum = 0, main_cpu = 0;
  for (int k = 0; k < 64; k++) first[k] = -1, last[k] = 0;
  for (size_t i = 0; i < t->n; i++) {
    const int64_t *e = memstub_trace_extra_row(t, i);
    ck_assert(e[th] >= 0 && e[th] < 64);
    if (first[e[th]] < 0) first[e[th]] = e[c];
    last[e[th]] = e[c];
  }
  for (int k = 0; k < 64; k++)
    if (first[k] >= 0) sum += last[k] - first[k];
  main_cpu = last[0] - first[0];
  const char *w = memstub_trace_get_meta(t, "recording.rows_wall_ns"),
             *v = memstub_trace_get_meta(t, "recording.rows_cpu_ns");
  ck_assert_msg(w && v, "no rows' figures");
  ck_assert_int_eq(strtoll(w, NULL, 10), t->pts[t->n - 1].time_ns - t->pts[0].time_ns);
  ck_assert_int_eq(strtoll(v, NULL, 10), sum);
  ck_assert_msg(sum > main_cpu, "the workers' CPU time: %lld of %lld", (long long)(sum - main_cpu),
                (long long)sum);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A narrowed scope says what the threads it left out did, and warns when
 * they did more than a tenth of the work (issue 29: a zstd stub slept where
 * its workers compressed, and the summary said "thread main" and nothing
 * else). The main thread's own work is not warned about. */
START_TEST(test_narrowed_scope_warns) {
  char *dir = tu_mkdtemp();
  const char *main_only[] = {"--thread", "main", NULL};
  tu_run r = record_mode(dir, main_only, "worker", "20000");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "left out of the recording (recorded: thread main): 1 other thread, "
                             "with"),
                "%s", r.err);
  ck_assert_msg(strstr(r.err, "warning: t.csv: the threads left out did more than a tenth"), "%s",
                r.err);
  tu_run_free(&r);
  memstub_trace *t = read_t(dir);
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.other_threads"), "1");
  const char *calls = memstub_trace_get_meta(t, "record.other_threads_calls");
  ck_assert_ptr_nonnull(calls);
  unsigned long long x = 0, y = 0;
  ck_assert_int_eq(sscanf(calls, "%llu of %llu", &x, &y), 2);
  ck_assert_uint_ge(x, 40000);  // the worker's 20000 pairs
  memstub_trace_free(t);
  // The main thread's own work: nothing left out, no warning.
  r = record_mode(dir, main_only, "alone", "2000");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_msg(!strstr(r.err, "left out") && !tu_warned(r.err), "%s", r.err);
  tu_run_free(&r);
  // Without --thread, --function records the first thread that calls it,
  // its calls scoping the trace: the main thread here,
  const char *fn[] = {"--function", "main", NULL};
  r = record_mode(dir, fn, "alone", "2000");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  tu_run_free(&r);
  t = read_t(dir);
  ck_assert_str_eq(memstub_trace_get_meta(t, "record.thread"), "main");
  ck_assert_int_ge(memstub_trace_column(t, "region"), 0);
  memstub_trace_free(t);
  // a worker there (it used to say "never called on the recorded thread");
  // the other threads are left out by design: said, not warned.
  const char *fnw[] = {"-r0", "--function", "region_work", NULL};
  r = record_mode(dir, fnw, "fnworker", "300");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "the default with --function") && !tu_warned(r.err), "%s",
                r.err);
  tu_run_free(&r);
  t = read_t(dir);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "record.thread"), "the first thread"));
  int up = 0;
  for (size_t i = 1; i < t->n; i++) up += t->pts[i].heap_bytes - t->pts[i - 1].heap_bytes == 1024;
  ck_assert_int_eq(up, 300);  // every pair, each a row at -r0
  memstub_trace_free(t);
  // The default, every thread: nothing is left out.
  const char *none[] = {NULL};
  r = record_mode(dir, none, "worker", "2000");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_msg(!strstr(r.err, "left out") && !tu_warned(r.err), "%s", r.err);
  ck_assert_msg(strstr(r.err, "2 threads"), "%s", r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* With every thread recorded, TRACE.generations holds thread 0's regions
 * alone. Before, nothing said so: region_work on a worker only gave
 * "t.csv has no generations: it has no probe regions ..., or the program
 * died of a signal" and record.region_occurrences 0 beside the churn's
 * occurrences=1; called on the main thread and a worker, `memstub
 * generations` showed one occurrence and exited 0 (a C program calling a
 * function 10 times on main and 15,000 on three workers: 10). Now the
 * trace counts the others, record and generations warn, and generations
 * exits 1 (2 when it has none). */
START_TEST(test_regions_of_other_threads_said) {
  char *dir = tu_mkdtemp();
  const char *fn[] = {"--thread", "all", "--function", "region_work", NULL};
  tu_run r = record_mode(dir, fn, "fnworker", "100");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "warning: t.csv: 1 region occurrence on 1 thread other than thread 0"),
                "%s", r.err);
  tu_run_free(&r);
  memstub_trace *t = read_t(dir);
  const char *m = memstub_trace_get_meta(t, "record.regions_other_threads");
  ck_assert_msg(m && strncmp(m, "1 region occurrence on 1 thread ", 32) == 0, "%s", m ? m : "(none)");
  memstub_trace_free(t);
  r = tu_memstub(dir, "generations", "t.csv", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "t.csv has no generations: its regions ran on threads other than "
                              "thread 0 (1 region occurrence on 1 thread"),
                "%s", r.err);
  tu_run_free(&r);
  r = record_mode(dir, fn, "fnboth", "100");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "generations", "t.csv", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(r.out, "region_work") && strstr(r.err, "warning: t.csv: the generations are "
                                                              "thread 0's regions' alone: 1 region occurrence"),
                "%s\n%s", r.out, r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A worker that blocks every signal and makes no allocator call while it
 * computes (xz's do), still running when the process exits, recorded
 * without the watcher (MEMSTUB_RECORD_WATCH=0): its last row has its CPU
 * time, read on its clock at the end (it had only its first rows' before:
 * xz's trace held 0.005 s of its workers' 1.2 s), and the summary says its
 * rows are coarse. */
START_TEST(test_blocked_worker_cpu) {
  char *dir = tu_mkdtemp();
  const char *none[] = {NULL};
  setenv("MEMSTUB_RECORD_WATCH", "0", 1);
  tu_run r = record_mode(dir, none, "blocked", "200");
  unsetenv("MEMSTUB_RECORD_WATCH");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  // Said: the worker's rows came only at its calls (issue 29), the main thread not named.
  ck_assert_msg(strstr(r.err, "warning: ") && strstr(r.err, "thread 1 (") &&
                    strstr(r.err, "blocked the recorder's sampling signal") &&
                    !strstr(r.err, "thread 0 ("),
                "%s", r.err);
  tu_run_free(&r);
  memstub_trace *t = read_t(dir);
  const char *blk = memstub_trace_get_meta(t, "record.sample_blocked_ns");
  const char *w = blk ? (strncmp(blk, "1:", 2) == 0 ? blk : strstr(blk, " 1:")) : NULL;
  ck_assert_msg(w && strtoll(strchr(w, ':') + 1, NULL, 10) >= 150000000,
                "record.sample_blocked_ns: %s", blk ? blk : "(none)");
  int c = memstub_trace_column(t, "thread"), cpu = memstub_trace_column(t, "cpu_ns");
  ck_assert_int_ge(c, 0);
  ck_assert_int_ge(cpu, 0);
  int flt = memstub_trace_column(t, "minor_faults");
  ck_assert_int_ge(flt, 0);
  int64_t last = -1, faults = -1;
  for (size_t i = 0; i < t->n; i++)
    if (memstub_trace_extra_row(t, i)[c] == 1)
      last = memstub_trace_extra_row(t, i)[cpu], faults = memstub_trace_extra_row(t, i)[flt];
  ck_assert_msg(last >= 180000000, "the worker's last cpu_ns %lld for 200 ms spun",
                (long long)last);
  // Its faults too, read at the end (/proc/self/task): it wrote 4 MiB after its last call.
  ck_assert_msg(faults >= 900, "the worker's last minor_faults %lld for 4 MiB written",
                (long long)faults);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* The last row of thread th (-1: the only one) of dir/t.csv: its span,
 * CPU time and run-queue wait; the trace has run_delay_ns (0), or the
 * kernel keeps no scheduler statistics (1: nothing to check). */
static int run_delays(const char *dir, int th, int64_t *span, int64_t *used, int64_t *waited) {
  memstub_trace *t = read_t(dir);
  int c = memstub_trace_column(t, "thread"), cpu = memstub_trace_column(t, "cpu_ns"),
      q = memstub_trace_column(t, "run_delay_ns");
  if (q < 0) {  // only where the kernel keeps none
    ck_assert_int_ne(access("/proc/thread-self/schedstat", R_OK), 0);
    memstub_trace_free(t);
    return 1;
  }
  ck_assert_int_eq(c >= 0, th >= 0);
  int64_t t0 = -1, t1 = 0, prev = 0;
  for (size_t i = 0; i < t->n; i++) {
    const int64_t *e = memstub_trace_extra_row(t, i);
    if (th >= 0 && e[c] != th) continue;
    if (t0 < 0) t0 = t->pts[i].time_ns;
    ck_assert_int_ge(e[q], prev);  // a count since the thread's start
    t1 = t->pts[i].time_ns, *used = e[cpu], *waited = prev = e[q];
  }
  *span = t1 - t0;
  memstub_trace_free(t);
  return 0;
}

/* A thread waiting for its CPU (threads crowd: a child process spins on
 * it): its run-queue wait is in its rows (run_delay_ns, from the kernel's
 * schedstat): about the time it was off the CPU, at least half of it,
 * never more; gen takes it out of the stub's waiting and says so. Two
 * threads of one process on one CPU (crowd2): their turns are the
 * process's, kept, and said. */
START_TEST(test_run_queue_wait) {
  char *dir = tu_mkdtemp();
  const char *none[] = {NULL};
  static const struct {
    const char *mode;
    int threads;
    const char *said;
  } runs[] = {{"crowd", 1, "of waiting for a CPU out (runnable, not running"},
              {"crowd2", 2, "of waiting for a CPU kept (the turns of its process's threads"}};
  for (int k = 0; k < 2; k++) {
    tu_run r = record_mode(dir, none, runs[k].mode, "150");
    ck_assert_msg(r.status == 0, "%s: status %d: %s", runs[k].mode, r.status, r.err);
    tu_run_free(&r);
    // The one thread (-1: no thread column), or each worker.
    int first = runs[k].threads > 1 ? 1 : -1, last = runs[k].threads > 1 ? runs[k].threads : -1;
    for (int th = first; th <= last; th++) {
      int64_t span = 0, used = 0, waited = 0;
      if (run_delays(dir, th, &span, &used, &waited)) goto out;
      int64_t off = span - used;
      ck_assert_msg(used >= 140000000 && off >= 50000000 && 2 * waited >= off &&
                        waited <= off + 5000000,
                    "%s, thread %d: span %lld ns, CPU %lld ns, run-queue wait %lld ns",
                    runs[k].mode, th, (long long)span, (long long)used, (long long)waited);
    }
    char *argv[] = {getenv("MEMSTUB_EXE"), "gen", "t.csv", "-o", "t.h", NULL};
    r = tu_exec(dir, argv);
    ck_assert_msg(r.status == 0 && strstr(r.err, "timeline: ") && strstr(r.err, runs[k].said),
                  "%s: status %d: %s", runs[k].mode, r.status, r.err);
    tu_run_free(&r);
  }
out:
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* The same worker with the watcher (the default): rows of its own while it
 * computes (400 ms), read by the recorder's watcher thread, with the 4 MiB it wrote
 * before it resident and faulted from the first of them (without the
 * watcher they showed at the process's end), and no warning. */
START_TEST(test_blocked_worker_watched) {
  char *dir = tu_mkdtemp();
  const char *none[] = {NULL};
  tu_run r = record_mode(dir, none, "blocked", "400");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_msg(!strstr(r.err, "blocked the recorder's sampling signal"), "%s", r.err);
  tu_run_free(&r);
  memstub_trace *t = read_t(dir);
  const char *w = memstub_trace_get_meta(t, "record.watcher");
  ck_assert_msg(w && strtoll(w, NULL, 10) >= 20, "record.watcher: %s", w ? w : "(none)");
  int c = memstub_trace_column(t, "thread"), cpu = memstub_trace_column(t, "cpu_ns");
  int rss = memstub_trace_column(t, "rss_bytes"), flt = memstub_trace_column(t, "minor_faults");
  ck_assert(c >= 0 && cpu >= 0 && rss >= 0 && flt >= 0);
  int64_t rows = 0, early = 0, last_cpu = 0;
  for (size_t i = 0; i < t->n; i++) {
    const int64_t *x = memstub_trace_extra_row(t, i);
    if (x[c] != 1) continue;
    rows++;
    last_cpu = x[cpu];
    // Within the spin's first half: the block written, its pages counted.
    if (x[cpu] >= 20000000 && x[cpu] <= 100000000 && x[rss] >= (7 << 19) && x[flt] >= 900)
      early++;
  }
  ck_assert_msg(rows >= 20, "the worker has %lld rows for 400 ms of CPU", (long long)rows);
  ck_assert_msg(early > 0, "no row of the worker in its spin's first half with 3.5 MiB resident "
                "and 900 faults (%lld rows)", (long long)rows);
  ck_assert_msg(last_cpu >= 360000000, "the worker's last cpu_ns %lld for 400 ms spun",
                (long long)last_cpu);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* With --repeat, a warning about the trace is said once, of the recording
 * kept (each recording's summary said it before: xz's blocked-signal
 * warning three times for --repeat 3), and with -q too. */
START_TEST(test_repeat_warns_once) {
  char *dir = tu_mkdtemp();
  const char *rep[] = {"-q", "--repeat", "2", NULL};
  setenv("MEMSTUB_RECORD_WATCH", "0", 1);  // the warning of a worker the watcher leaves
  tu_run r = record_mode(dir, rep, "blocked", "60");
  unsetenv("MEMSTUB_RECORD_WATCH");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  const char *w = "blocked the recorder's sampling signal";
  const char *first = strstr(r.err, w);
  ck_assert_msg(first && !strstr(first + 1, w), "said %s", r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A trace of several threads recorded with --calls: its stub replays by
 * size class (the call replay carries one thread), and gen and replay say
 * so rather than pass the calls file over; --no-calls says nothing. */
START_TEST(test_threads_calls_said) {
  char *dir = tu_mkdtemp();
  const char *calls[] = {"-q", "--calls", NULL};
  tu_run r = record_mode(dir, calls, "worker", "2000");
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  tu_run_free(&r);
  const char *said = "t.csv.calls: left out: a trace of several threads replays by size class";
  r = tu_memstub(dir, "gen", "t.csv", "-o", "t.h", NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, said), "gen: %d %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", "t.csv", NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, said), "replay: %d %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", "t.csv", "--no-calls", "-o", "t.h", NULL);
  ck_assert_msg(r.status == 0 && !strstr(r.err, "left out"), "gen --no-calls: %d %s", r.status,
                r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// What --thread all does not combine with is a usage error.
/* Cross-thread frees racing the owner's allocations (issue 29): ten
 * recordings in a row of threads race, each one a trace memstub gen
 * accepts (the recorder's rows and gen's rules on cross-thread frees agree
 * whatever the interleaving). */
START_TEST(test_racing_cross_thread_frees_generate) {
  char *dir = tu_mkdtemp();
  for (int k = 0; k < 10; k++) {
    char *argv[] = {getenv("MEMSTUB_EXE"), "record", "-q", "--thread", "all", "-o", "r.csv",
                    "--", (char *)prog(), "race", "20000", NULL};
    tu_run r = tu_exec(dir, argv);
    ck_assert_msg(r.status == 0, "recording %d: %s", k + 1, r.err);
    tu_run_free(&r);
    r = tu_memstub(dir, "gen", "r.csv", "-o", "r.h", NULL);
    ck_assert_msg(r.status == 0, "recording %d: gen refused it: %s", k + 1, r.err);
    tu_run_free(&r);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_usage) {
  char *dir = tu_mkdtemp();
  const char *bad[] = {"--heap=thread", "--follow-children", "--occurrence=2"};
  for (int i = 0; i < 3; i++) {
    tu_run r = record(dir, "--thread", "all", bad[i]);
    ck_assert_msg(r.status == 2, "%s: status %d: %s", bad[i], r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "--thread all"));
    tu_run_free(&r);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* The merge's rule for resident and mapped memory (ms__rec_mem_newest):
 * rows in time order whose samples went 5 (8 MiB), 7 (2 MiB), then a row
 * of another thread with sample 6 (8 MiB, taken before 7 and kept by its
 * bucket): that row shows 2 MiB, not 8 again; sample 8 is taken as it is,
 * and rows without a reading are left alone. pool's stub wrote and dropped
 * such turns of 736 pages. */
START_TEST(test_merge_newest_sample) {
  ms__rec_mem newest = {0, 0, 0, 0, -1};
  ms__rec_mem rows[] = {{8 << 20, 100, 1, 0, 5}, {2 << 20, 100, 2, 0, 7}, {8 << 20, 300, 3, 0, 6},
                        {-1, -1, -1, -1, -1},     {3 << 20, 200, 4, 0, 8}, {4 << 20, 50, 5, 0, 8}};
  int64_t want_rss[] = {8 << 20, 2 << 20, 2 << 20, -1, 3 << 20, 4 << 20};
  int64_t want_mapped[] = {100, 100, 100, -1, 200, 50};
  int64_t want_flt[] = {1, 2, 3, -1, 4, 5};
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    ms__rec_mem_newest(&rows[i], &newest);
    ck_assert_msg(rows[i].rss == want_rss[i] && rows[i].mapped == want_mapped[i],
                  "row %zu: rss %lld mapped %lld", i, (long long)rows[i].rss,
                  (long long)rows[i].mapped);
    ck_assert_int_eq(rows[i].minflt, want_flt[i]);  // a thread's own, kept
  }
  ck_assert_int_eq(newest.ver, 8);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("record_threads");
  TCase *tc = tcase_create("all");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_events);
  tcase_add_test(tc, test_heap_per_thread);
  tcase_add_test(tc, test_cross_thread_free);
  tcase_add_test(tc, test_cross_thread_free_coalesced);
  tcase_add_test(tc, test_stacks_and_cpu);
  tcase_add_test(tc, test_cross_thread_realloc);
  tcase_add_test(tc, test_single_thread_unchanged);
  tcase_add_test(tc, test_default_every_thread);
  tcase_add_test(tc, test_repeat_rows_figures);
  tcase_add_test(tc, test_mapping_rows_own_heap);
  tcase_add_test(tc, test_narrowed_scope_warns);
  tcase_add_test(tc, test_blocked_worker_cpu);
  tcase_add_test(tc, test_run_queue_wait);
  tcase_add_test(tc, test_blocked_worker_watched);
  tcase_add_test(tc, test_repeat_warns_once);
  tcase_add_test(tc, test_threads_calls_said);
  tcase_add_test(tc, test_racing_cross_thread_frees_generate);
  tcase_add_test(tc, test_usage);
  tcase_add_test(tc, test_merge_newest_sample);
  tcase_add_test(tc, test_regions_of_other_threads_said);
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
