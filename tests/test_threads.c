// Traces with several threads: the thread columns of the trace format, the
// generator's per-thread stubs and the runtime's replay of one thread per
// original thread (docs/formats.md "Threads", docs/runtime.md "Threads").
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "memstub/compare.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "memstub/threads.h"
#include "memstub/trace.h"
#include "test_replay_common.h"
#include "testutil.h"
#include "threads_fixture.h"

#define MS 1000000LL

// The 4-thread fixture (threads_fixture.h), as the benchmark has it.
static memstub_trace *fixture(void) {
  memstub_trace *t = ms_test_threads_fixture(0);
  ck_assert_ptr_nonnull(t);
  return t;
}

static char *to_text(const memstub_trace *t, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  ck_assert_int_eq(memstub_trace_fwrite(t, f), 0);
  fclose(f);
  return buf;
}

START_TEST(test_round_trip) {
  memstub_trace *t = fixture();
  size_t len, len2;
  char *text = to_text(t, &len);
  // Events by name, empty fields empty.
  ck_assert_ptr_nonnull(strstr(text, "\n0,1024,2000,0,start,-1,,,\n"));
  ck_assert_ptr_nonnull(strstr(text, ",0,join,1,,,\n"));
  ck_assert_ptr_nonnull(strstr(text, ",2,,,1,5000,30000000\n"));
  memstub_trace *u = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_parse("fixture", text, len, &u, &err) == 0, "%s", err.msg);
  char *text2 = to_text(u, &len2);
  ck_assert_uint_eq(len, len2);
  ck_assert_int_eq(memcmp(text, text2, len), 0);
  ck_assert_int_eq(memstub_trace_thread_count(u), 4);
  size_t *rows, nr;
  ck_assert_int_eq(memstub_trace_thread_rows(u, 3, &rows, &nr), 0);
  ck_assert_uint_eq(nr, 81);
  ck_assert_int_eq(memstub_trace_row_thread(u, rows[0]), 3);
  ck_assert_int_eq(u->pts[rows[0]].time_ns, 20 * MS);
  free(rows);
  free(text);
  free(text2);
  memstub_trace_free(t);
  memstub_trace_free(u);
}
END_TEST

// An old trace: one thread, and what is written is what was read.
START_TEST(test_single_thread_unchanged) {
  const char *text = "# memstub-trace 1\ntime_ns,stack_bytes,heap_bytes,cpu_ns\n0,0,0,0\n"
                     "10,64,-0,5\n";
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_parse("old", text, strlen(text), &t, &err), 0);
  ck_assert_int_eq(memstub_trace_thread_count(t), 1);
  memstub_trace_threadcols c;
  memstub_trace_threadcols_find(t, &c);
  ck_assert_int_eq(c.thread, -1);
  size_t len;
  char *out = to_text(t, &len);
  ck_assert_str_eq(out, "# memstub-trace 1\ntime_ns,stack_bytes,heap_bytes,cpu_ns\n0,0,0,0\n"
                        "10,64,0,5\n");
  free(out);
  memstub_trace_free(t);
}
END_TEST

static void refused(const char *rows, const char *want) {
  char text[2048];
  snprintf(text, sizeof text,
           "# memstub-trace 1\n"
           "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,xfree_from,"
           "xfree_bytes,xfree_alloc_ns\n%s",
           rows);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_parse("th.csv", text, strlen(text), &t, &err), -EINVAL);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
}

START_TEST(test_refused) {
  // A thread's first row is its start; start only there.
  refused("0,0,0,0,,,,,\n", "th.csv:3:9: thread_event: thread 0's first row must be its 'start'");
  refused("0,0,0,0,start,-1,,,\n5,0,0,0,start,-1,,,\n", "th.csv:4:9: thread_event: 'start' must");
  // Peers exist: a creator with a row before, a joined thread.
  refused("0,0,0,0,start,-1,,,\n5,0,0,1,start,2,,,\n",
          "th.csv:4:15: thread_peer: creator 2 of thread 1 has no row before");
  refused("0,0,0,0,start,-1,,,\n5,0,0,0,join,3,,,\n",
          "th.csv:4:14: thread_peer: joined thread 3 has no row before");
  refused("0,0,0,0,start,,,,\n", "thread_peer: empty: a 'start' row names its creator");
  refused("0,0,0,0,start,-1,,,\n5,0,0,0,,4,,,\n", "th.csv:4:10: thread_peer: 4 on a row");
  // No row after the exit; a thread number without its predecessors.
  refused("0,0,0,0,start,-1,,,\n5,0,0,0,exit,,,,\n6,0,16,0,,,,,\n",
          "th.csv:5:8: thread: a row of thread 0 after its exit row");
  refused("0,0,0,0,start,-1,,,\n5,0,0,2,start,0,,,\n",
          "thread: thread 2 appears but thread 1 has no row");
  refused("0,0,0,-1,start,-1,,,\n", "th.csv:3:7: thread: -1 is not a thread number");
  refused("0,0,0,0,begin,-1,,,\n", "th.csv:3:9: thread_event: unknown event 'begin'");
  // Cross-thread frees: another thread, bytes > 0, the time of one of its rows.
  const char *two = "0,0,0,0,start,-1,,,\n10,0,100,1,start,0,,,\n";
  char rows[512];
  snprintf(rows, sizeof rows, "%s20,0,0,0,,,1,100,11\n", two);
  refused(rows, "th.csv:5:18: xfree_alloc_ns: 11 is not the time of a row of thread 1");
  snprintf(rows, sizeof rows, "%s20,0,0,0,,,0,100,0\n", two);
  refused(rows, "th.csv:5:12: xfree_from: thread 0 is the row's own thread");
  snprintf(rows, sizeof rows, "%s20,0,0,0,,,1,0,10\n", two);
  refused(rows, "th.csv:5:14: xfree_bytes: not positive");
  snprintf(rows, sizeof rows, "%s20,0,0,0,,,,100,\n", two);
  refused(rows, "th.csv:5:13: xfree_bytes: set without xfree_from");
  // Accepted: the same with a proper free.
  char text[1024];
  snprintf(text, sizeof text,
           "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,xfree_from,"
           "xfree_bytes,xfree_alloc_ns\n%s20,0,0,0,,,1,100,10\n20,0,0,1,,,,,\n", two);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_parse("ok", text, strlen(text), &t, &err) == 0, "%s", err.msg);
  memstub_trace_free(t);
}
END_TEST

// Replay g's threads (measuring with `measure`; 0: nothing); fails the test on an error.
static memstub_threads_replay *replay(const memstub_gen_threads *g, unsigned measure) {
  memstub_replay_options ro;
  memstub_replay_options_init(&ro);
  ro.measure = measure;
  memstub_threads_replay *r = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_threads_run(&g->stub, &ro, &r, &err) == 0, "%s", err.msg);
  return r;
}

// The stubs of t's threads with the generator's defaults; fails the test on an error.
static memstub_gen_threads *gen_threads(const memstub_trace *t) {
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  memstub_gen_threads *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_threads_build(t, &o, &g, &err) == 0, "%s", err.msg);
  return g;
}

// The cross-thread free of the fixtures: thread 1 allocated, thread 0 freed.
static void handoff_tids(const memstub_threads_replay *r) {
  ck_assert_int_eq(r->handoff[0].malloc_tid, r->tid[1]);
  ck_assert_int_eq(r->handoff[0].free_tid, r->tid[0]);
}

// The original rows of thread th as a trace of its own.
static memstub_trace *thread_trace(const memstub_trace *t, int64_t th) {
  size_t *rows, n;
  ck_assert_int_eq(memstub_trace_thread_rows(t, th, &rows, &n), 0);
  memstub_trace *s = memstub_trace_create();
  for (size_t k = 0; k < n; k++) {
    const memstub_point *p = &t->pts[rows[k]];
    memstub_trace_append(s, p->time_ns, p->stack_bytes, p->heap_bytes);
  }
  free(rows);
  return s;
}

START_TEST(test_gen_threads) {
  memstub_trace *t = fixture();
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  memstub_gen *g1 = NULL;
  memstub_error err = {0};
  // The single-thread builder (headers, data files) refuses and says why.
  ck_assert_int_eq(memstub_gen_build(t, &o, &g1, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "the trace has 4 threads"));
  memstub_gen_threads *g = NULL;
  ck_assert_msg(memstub_gen_threads_build(t, &o, &g, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(g->nthreads, 4);
  const int64_t creator[4] = {-1, 0, 0, 1}, joiner[4] = {-1, 0, 0, -1};
  const int64_t start[4] = {0, 10 * MS, 12 * MS, 20 * MS};
  for (int k = 0; k < 4; k++) {
    ck_assert_int_eq(g->threads[k].creator, creator[k]);
    ck_assert_int_eq(g->threads[k].joiner, joiner[k]);
    ck_assert_int_eq(g->threads[k].start_ns, start[k]);
  }
  // Thread 2 is joined after thread 0's row at 150 ms, thread 1 after 180 ms.
  ck_assert_int_eq(g->stubs[0]->point[g->threads[2].join_point], 75);
  ck_assert_int_eq(g->stubs[0]->point[g->threads[1].join_point], 90);
  // Thread 3 is created after thread 1's row at 20 ms (its 6th).
  ck_assert_int_eq(g->stubs[1]->point[g->threads[3].create_point], 5);
  ck_assert_int_eq(g->nhandoffs, 1);
  const memstub_handoff *h = &g->handoffs[0];
  ck_assert_int_eq(h->bytes, 5000);
  ck_assert_int_eq(h->from, 1);
  ck_assert_int_eq(h->to, 2);
  ck_assert_int_eq(h->alloc_row, 10);  // 30 ms
  ck_assert_int_eq(h->drop_row, 40);   // 90 ms
  ck_assert_int_eq(g->stubs[1]->point[h->alloc_point], 10);
  ck_assert_int_eq(g->stubs[2]->point[h->free_point], 26);
  // Thread 1's block grows by 1000 at 30 ms, not 6000: the handoff is a block of its own.
  int64_t size = 0;
  for (int64_t x = 0; x <= h->alloc_point; x++) size += g->stubs[1]->use[x].heapAlloc;
  ck_assert_int_eq(size + g->stubs[1]->heap_base, 10000);
  ck_assert_int_eq(memstub_threads_check(&g->stub, NULL, &err), 0);
  // A time scale applies to every thread, starts included.
  memstub_gen_threads *g2 = NULL;
  o.time_scale = 2.0;
  ck_assert_msg(memstub_gen_threads_build(t, &o, &g2, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(g2->threads[3].start_ns, 40 * MS);
  ck_assert_int_eq(g2->stubs[3]->duration_ns, 160 * MS);
  memstub_gen_threads_free(g2);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

/* A created thread starts on its creator's timeline. Thread 0's first rows
 * made allocator calls, whose recorder's cost gen takes out (traces/timeline.c):
 * 1 ms of each of its rows up to 10 ms, so its row at 10 ms, after which it
 * creates thread 1, comes at 5 ms in its stub. Thread 1 started at its
 * recorded 10 ms before: 5 ms late on its creator. */
START_TEST(test_start_on_creator_timeline) {
  memstub_trace *f = fixture(), *t = memstub_trace_create();
  ck_assert_ptr_nonnull(t);
  for (size_t k = 0; k < f->nextra; k++)
    ck_assert_int_eq(memstub_trace_add_column(t, f->extra_names[k]), (int)k);
  int cc = memstub_trace_add_column(t, "calls_malloc_tiny");
  ck_assert_int_eq(cc, (int)f->nextra);
  for (size_t r = 0; r < f->n; r++) {
    const memstub_point *pt = &f->pts[r];
    ck_assert_int_eq(memstub_trace_append(t, pt->time_ns, pt->stack_bytes, pt->heap_bytes), 0);
    int64_t *x = memstub_trace_extra_row(t, r);
    memcpy(x, memstub_trace_extra_row(f, r), f->nextra * sizeof *x);
    x[cc] = x[0] == 0 && pt->time_ns > 0 && pt->time_ns <= 10 * MS ? 2000 : 0;
  }
  memstub_trace_free(f);
  ck_assert_int_eq(memstub_trace_set_meta(t, "record.cost_ns_per_event", "500"), 0);
  ck_assert_int_eq(memstub_trace_set_meta(t, "record.events", "10000"), 0);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  memstub_gen_threads *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_threads_build(t, &o, &g, &err) == 0, "%s", err.msg);
  // Thread 0's stub time up to the creation, and thread 1's start.
  int64_t at = 0;
  for (int64_t x = 0; x <= g->threads[1].create_point; x++) at += g->stubs[0]->use[x].time;
  ck_assert_int_eq(g->stubs[0]->point[g->threads[1].create_point], 5);
  ck_assert_msg(at >= 4 * MS && at <= 6 * MS, "thread 0 reaches its 10 ms row at %lld ns", (long long)at);
  ck_assert_int_eq(g->threads[1].start_ns, at);
  ck_assert_int_eq(g->threads[2].start_ns, at + 2 * MS);  // created 2 ms after that row
  // Thread 3, created by thread 1 (no calls) 10 ms into its life, follows thread 1's start.
  ck_assert_int_eq(g->threads[3].start_ns, at + 10 * MS);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_replay_threads) {
  memstub_trace *t = fixture();
  memstub_gen_threads *g = gen_threads(t);
  memstub_threads_replay *r = replay(g, MEMSTUB_MEASURE_TRACE);
  memstub_error err = {0};
  // Each thread: its stack and heap at every row, as the single-thread criterion.
  for (int64_t k = 0; k < 4; k++) {
    memstub_trace *orig = thread_trace(t, k), *rep = NULL;
    ck_assert_msg(memstub_replay_trace(r->thread[k], &rep, &err) == 0, "%s", err.msg);
    rt_fit fit;
    rt_check_exact(orig, g->stubs[k], rep, 1, &fit);
    memstub_trace_free(orig);
    memstub_trace_free(rep);
  }
  // The handoff: malloc'd by thread 1's replay thread, freed by thread 2's.
  ck_assert_int_ne(r->tid[1], r->tid[2]);
  ck_assert_int_eq(r->handoff[0].malloc_tid, r->tid[1]);
  ck_assert_int_eq(r->handoff[0].free_tid, r->tid[2]);
  ck_assert_int_ge(r->handoff[0].usable, 5000);
  // Starts after their creators', joins in the trace's order, each after the exit.
  int64_t at[4][4];  // [thread][kind]
  memset(at, -1, sizeof at);
  int64_t order[8], no = 0;
  for (int64_t i = 0; i < r->nevents; i++) {
    const memstub_thread_event *e = &r->events[i];
    if (e->kind == MEMSTUB_TEV_JOIN) {
      ck_assert_int_eq(e->thread, 0);
      order[no++] = e->peer;
      at[e->peer][MEMSTUB_TEV_JOIN] = i;
    } else {
      at[e->thread][e->kind] = i;
    }
  }
  ck_assert_int_eq(no, 2);
  ck_assert_int_eq(order[0], 2);
  ck_assert_int_eq(order[1], 1);
  for (int k = 0; k < 4; k++) ck_assert_int_ge(at[k][MEMSTUB_TEV_EXIT], 0);
  ck_assert_int_lt(at[0][MEMSTUB_TEV_START], at[1][MEMSTUB_TEV_START]);
  ck_assert_int_lt(at[1][MEMSTUB_TEV_START], at[3][MEMSTUB_TEV_START]);
  ck_assert_int_lt(at[2][MEMSTUB_TEV_EXIT], at[2][MEMSTUB_TEV_JOIN]);
  ck_assert_int_lt(at[1][MEMSTUB_TEV_EXIT], at[1][MEMSTUB_TEV_JOIN]);
  // The merged replayed trace: every thread's rows, and the process total (the
  // sum of each thread's latest heap) follows the original's at every row.
  memstub_trace *m = NULL;
  ck_assert_msg(memstub_threads_trace(r, &m, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(m->n, t->n);
  ck_assert_int_eq(memstub_trace_validate(m, &err), 0);
  int cth = memstub_trace_column(m, "thread"), cp = memstub_trace_column(m, "point");
  ck_assert_int_ge(cth, 0);
  size_t *rows[4], nr[4];
  int64_t orig_h[4] = {0}, rep_h[4] = {0}, off[4];
  for (int k = 0; k < 4; k++) {
    ck_assert_int_eq(memstub_trace_thread_rows(t, k, &rows[k], &nr[k]), 0);
    off[k] = INT64_MIN;
  }
  for (size_t i = 0; i < m->n; i++) {
    const int64_t *x = memstub_trace_extra_row(m, i);
    int64_t k = x[cth], row = x[cp];
    ck_assert_int_lt(row, (int64_t)nr[k]);
    orig_h[k] = t->pts[rows[k][row]].heap_bytes;
    rep_h[k] = m->pts[i].heap_bytes;
    if (off[k] == INT64_MIN) off[k] = rep_h[k] - orig_h[k];
#if !defined(MEMSTUB_SANITIZED)
    int64_t dev = 0, big = 0;
    for (int j = 0; j < 4; j++)
      if (off[j] != INT64_MIN) {
        dev += rep_h[j] - orig_h[j] - off[j];
        big |= orig_h[j] >= RT_MMAP_MIN;
      }
    ck_assert_msg(llabs(dev) <= (big ? 4096 : 4 * RT_SLACK), "row %zu: total heap off by %lld",
                  i, (long long)dev);
#endif
  }
  for (int k = 0; k < 4; k++) free(rows[k]);
  // compare: per thread and in total, checks per thread.
  memstub_compare_threads_report *cr = NULL;
  ck_assert_msg(memstub_compare_threads_traces(t, "orig", m, "rep", NULL, &cr, &err) == 0, "%s",
                err.msg);
  ck_assert_int_eq(cr->nthreads, 4);
  for (int k = 0; k < 4; k++) {
    ck_assert_uint_eq(cr->thread[k]->compared, nr[k]);
    ck_assert_uint_eq(cr->thread[k]->missing, 0);
  }
  ck_assert_uint_eq(cr->total_rows, m->n);
  memstub_compare_checks *cs = memstub_compare_checks_create();
  ck_assert_int_eq(memstub_compare_checks_parse(cs, "t3.missing=0,missing=0,t9.late=0,"
                                                    "t1.heap-max=100000", &err), 0);
  ck_assert_int_eq(cs->c[0].thread, 3);
  ck_assert_int_eq(cs->c[1].thread, -1);
  ck_assert_int_eq(memstub_compare_threads_checks_run(cs, cr), 0);
  ck_assert_int_eq(cs->c[2].skipped, 1);  // there is no thread 9
  ck_assert_int_eq(cs->c[3].pass, 1);
#if !defined(MEMSTUB_SANITIZED)
  // The handed-off block counts in thread 1's heap: its heap is exact on arena rows.
  ck_assert_int_le(cr->thread[1]->heap.max_abs, RT_SLACK);
  ck_assert_int_eq(cr->thread[1]->heap.exact, nr[1]);
#endif
  memstub_compare_checks_free(cs);
  memstub_compare_threads_free(cr);
  memstub_trace_free(m);
  memstub_threads_replay_free(r);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

/* A block freed after its allocating thread ended (as the recorder writes
 * it): thread 1 allocates 40000 bytes and exits, thread 0 joins it and frees
 * them; thread 1's row after its exit lowers its heap. Its stub ends at the
 * exit; the replayed trace makes that row up from thread 0's free. */
START_TEST(test_free_after_exit) {
  const char *fmt =
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,xfree_from,xfree_bytes,"
      "xfree_alloc_ns\n"
      "0,256,1000,0,start,-1,,,\n"
      "1000000,512,1000,0,,,,,\n"
      "1500000,0,0,1,start,0,,,\n"
      "2000000,4096,40000,1,,,,,\n"
      "3000000,4096,40000,1,exit,,,,\n"
      "5000000,512,1000,0,join,1,,,\n"
      "6000000,512,1000,0,,,1,40000,2000000\n"
      "6000000,4096,%s,1,,,,,\n"
      "7000000,256,1000,0,exit,,,,\n";
  char text[1024];
  // Only rows that lower (or keep) the heap may follow an exit.
  snprintf(text, sizeof text, fmt, "50000");
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_parse("x.csv", text, strlen(text), &t, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "x.csv:9:20: thread: a row of thread 1 after its exit row"), "%s",
                err.msg);
  snprintf(text, sizeof text, fmt, "0");
  t = rt_trace(text);
  memstub_gen_threads *g = gen_threads(t);
  ck_assert_uint_eq(g->nrows[1], 4);
  ck_assert_uint_eq(g->nstub[1], 3);
  ck_assert_int_eq(g->stubs[1]->norig, 3);
  ck_assert_int_eq(g->handoffs[0].drop_row, 3);
  memstub_threads_replay *r = replay(g, MEMSTUB_MEASURE_TRACE);
  handoff_tids(r);
  memstub_trace *m = NULL;
  ck_assert_msg(memstub_threads_trace(r, &m, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(m->n, t->n);
  int cth = memstub_trace_column(m, "thread"), cp = memstub_trace_column(m, "point");
  const int64_t *last = memstub_trace_extra_row(m, m->n - 2);  // the made-up row, before 0's exit
  ck_assert_int_eq(last[cth], 1);
  ck_assert_int_eq(last[cp], 3);
#if !defined(MEMSTUB_SANITIZED)
  ck_assert_int_le(llabs(m->pts[m->n - 2].heap_bytes - 0), RT_SLACK);
  memstub_compare_threads_report *cr = NULL;
  ck_assert_msg(memstub_compare_threads_traces(t, "o", m, "r", NULL, &cr, &err) == 0, "%s",
                err.msg);
  ck_assert_uint_eq(cr->thread[1]->missing, 0);
  ck_assert_int_le(cr->total_heap_max, 2 * RT_SLACK);
  memstub_compare_threads_free(cr);
#endif
  memstub_trace_free(m);
  memstub_threads_replay_free(r);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

/* At the default resolution the freeing thread's row is its bucket's end:
 * here thread 0 frees thread 1's 5000 bytes inside a bucket that ends at 4
 * ms, while thread 1's own row at 3 ms (a realloc after the free) already
 * leaves them out. The generator settles the free at that row: thread 1's
 * stub keeps the block until its row 2 (3 ms), and thread 0 frees it after
 * its last row up to then (its row 1, 0.5 ms; it waits for the block). */
// test_free_before_its_row's trace with u ns for each of its milliseconds.
static memstub_trace *free_before_row_trace(long long u) {
  char text[1024];
  snprintf(text, sizeof text,
           "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,xfree_from,"
           "xfree_bytes,xfree_alloc_ns\n0,256,1000,0,start,-1,,,\n%lld,512,1000,0,,,,,\n"
           "%lld,0,0,1,start,0,,,\n%lld,4096,5000,1,,,,,\n%lld,4096,400,1,,,,,\n"
           "%lld,512,1000,0,,,1,5000,%lld\n%lld,4096,400,1,,,,,\n%lld,4096,0,1,exit,,,,\n"
           "%lld,512,1000,0,join,1,,,\n%lld,256,1000,0,exit,,,,\n",
           u / 2, u, 2 * u, 3 * u, 4 * u, 2 * u, 4 * u, 5 * u, 6 * u, 7 * u);
  return rt_trace(text);
}

START_TEST(test_free_before_its_row) {
  memstub_trace *t = free_before_row_trace(MS);
  memstub_gen_threads *g = gen_threads(t);
  ck_assert_int_eq(g->nhandoffs, 1);
  ck_assert_int_eq(g->handoffs[0].from, 1);
  ck_assert_int_eq(g->handoffs[0].to, 0);
  ck_assert_int_eq(g->handoffs[0].drop_row, 2);  // thread 1's row at 3 ms, not 4 ms
  // Thread 0 frees it after its row at 0.5 ms: the point that completes that row.
  int64_t p1 = -1;
  for (int64_t p = 0; p < g->stubs[0]->numdata; p++)
    if (g->stubs[0]->point[p] == 1) p1 = p;
  ck_assert_int_eq(g->handoffs[0].free_point, p1);
  memstub_threads_replay *r = replay(g, 0);
  handoff_tids(r);
  memstub_threads_replay_free(r);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

/* A thread that frees a block not yet allocated by its replay waits for it
 * blocked, not spinning (issue 29 item 3): test_free_before_its_row's trace at
 * 100 times its times, so that thread 0 waits from 50 ms to thread 1's
 * allocation at 200 ms. The wait used to be a sched_yield loop, as much CPU
 * time as the wait on an idle core; the replay does no work of its own here
 * (no cpu_ns), so its CPU time stays well below the wait. */
START_TEST(test_wait_not_spin) {
  memstub_trace *t = free_before_row_trace(100 * MS);
  memstub_gen_threads *g = gen_threads(t);
  ck_assert_int_eq(g->nhandoffs, 1);
  struct timespec c0, c1;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  memstub_threads_replay *r = replay(g, 0);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  handoff_tids(r);
  int64_t cpu = (c1.tv_sec - c0.tv_sec) * 1000000000LL + (c1.tv_nsec - c0.tv_nsec);
  int64_t wait = r->handoff[0].wait_ns;
  ck_assert_msg(wait >= 100 * MS, "thread 0 waited %lld ns for the block", (long long)wait);
  ck_assert_msg(cpu < wait / 2, "the replay used %lld ns of CPU time over a wait of %lld ns",
                (long long)cpu, (long long)wait);
  memstub_threads_replay_free(r);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

/* The common clock's zero comes a few ms after the replay is asked for, not
 * 20: the lead thread 0 had to prepare its heap was 20 ms, which every
 * threads stub added to its wall time (node's stub: 176-180 ms, 161-163 ms
 * with 2 ms, node itself 160-250 ms). */
START_TEST(test_short_lead) {
  memstub_trace *t = free_before_row_trace(MS);
  memstub_gen_threads *g = gen_threads(t);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t asked = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  memstub_threads_replay *r = replay(g, 0);
  ck_assert_msg(r->t0_ns - asked <= 10 * MS, "T0 %lld ns after the call", (long long)(r->t0_ns - asked));
  ck_assert_int_ge(r->t0_ns - asked, 0);
  memstub_threads_replay_free(r);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

/* A coarse recording can end a thread with its heap already without a block
 * another thread frees after the exit (the free row is that thread's bucket
 * end): the lowered row after the exit keeps the heap. Read, generated (the
 * free settled at the exit row) and replayed by the right threads. */
START_TEST(test_free_after_exit_kept) {
  const char *text =
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,xfree_from,xfree_bytes,"
      "xfree_alloc_ns\n"
      "0,256,1000,0,start,-1,,,\n"
      "1000000,512,1000,0,,,,,\n"
      "1500000,0,0,1,start,0,,,\n"
      "2000000,4096,40000,1,,,,,\n"
      "3000000,4096,0,1,exit,,,,\n"
      "5000000,512,1000,0,join,1,,,\n"
      "6000000,512,1000,0,,,1,40000,2000000\n"
      "6000000,4096,0,1,,,,,\n"
      "7000000,256,1000,0,exit,,,,\n";
  memstub_trace *t = rt_trace(text);
  memstub_gen_threads *g = gen_threads(t);
  ck_assert_int_eq(g->handoffs[0].drop_row, 2);  // thread 1's exit row
  memstub_threads_replay *r = replay(g, MEMSTUB_MEASURE_TRACE);
  handoff_tids(r);
  memstub_trace *m = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_threads_trace(r, &m, &err) == 0, "%s", err.msg);
  // Every row but the kept one after the exit, which changes nothing to replay.
  ck_assert_uint_eq(m->n, t->n - 1);
  memstub_trace_free(m);
  memstub_threads_replay_free(r);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

/* The process's rss_bytes shared among the threads' stubs: each change goes
 * to the thread whose row saw it, a fall beyond that thread's share takes
 * the rest from the others' (thread 0 sees 1 MiB, thread 1 then 2 MiB more,
 * thread 0 a fall of 2 MiB: 1 MiB of its own and 1 MiB of thread 1's). */
START_TEST(test_rss_shared) {
  const char *text =
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,xfree_from,xfree_bytes,"
      "xfree_alloc_ns,rss_bytes\n"
      "0,256,0,0,start,-1,,,,0\n"
      "1000000,512,1048576,0,,,,,,1048576\n"
      "2000000,0,0,1,start,0,,,,1048576\n"
      "3000000,4096,2097152,1,,,,,,3145728\n"
      "4000000,512,0,0,,,,,,1048576\n"
      "5000000,4096,2097152,1,exit,,,,,1048576\n"
      "6000000,512,0,0,join,1,,,,1048576\n"
      "7000000,256,0,0,exit,,,,,1048576\n";
  memstub_trace *t = rt_trace(text);
  memstub_gen_threads *g = gen_threads(t);
  // Each thread's own trace (what its stub was made from) carries its share.
  enum { ROWS = 5 };  // thread 0's rows; thread 1 has 3
  int64_t want[2][ROWS] = {{0, 1048576, 0, 0, 0}, {0, 2097152, 1048576, -1, -1}};
  for (int th = 0; th < 2; th++) {
    const struct memstub_stub *st = g->stubs[th];
    ck_assert_ptr_nonnull(st->rss);
    ck_assert_int_le(st->norig, ROWS);
    for (int64_t k = 0; k < st->norig; k++) {
      int64_t last = -1;  // the row's last point
      for (int64_t p = 0; p < st->numdata; p++)
        if (st->point[p] == k) last = p;
      if (last < 0 || want[th][k] < 0) continue;
      ck_assert_msg(st->rss[last] == want[th][k], "thread %d row %lld: rss %lld, want %lld", th,
                    (long long)k, (long long)st->rss[last], (long long)want[th][k]);
    }
  }
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

/* A change of rss_bytes a thread's start row sees is its creator's (issue
 * 29): the new thread's stub takes its first row's level as its zero, so the
 * 2 MiB thread 0 wrote before thread 1's first row were held by no stub
 * (xz's stub: 3 MiB short of its trace's peak). Thread 0's stub holds them
 * from its next row; thread 1's zero is nothing. */
START_TEST(test_rss_at_start_row) {
  const char *text =
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,xfree_from,xfree_bytes,"
      "xfree_alloc_ns,rss_bytes\n"
      "0,256,0,0,start,-1,,,,0\n"
      "1000000,512,1048576,0,,,,,,1048576\n"
      "2000000,0,0,1,start,0,,,,3145728\n"
      "3000000,4096,1048576,1,,,,,,4194304\n"
      "4000000,512,1048576,0,,,,,,4194304\n"
      "5000000,4096,1048576,1,exit,,,,,4194304\n"
      "6000000,512,1048576,0,join,1,,,,4194304\n"
      "7000000,256,1048576,0,exit,,,,,4194304\n";
  memstub_trace *t = rt_trace(text);
  memstub_gen_threads *g = gen_threads(t);
  const struct memstub_stub *s0 = g->stubs[0], *s1 = g->stubs[1];
  ck_assert_int_eq(s1->rss_base, 0);
  int64_t most0 = 0, most1 = 0;
  for (int64_t p = 0; p < s0->numdata; p++)
    if (s0->rss_base + s0->rss[p] > most0) most0 = s0->rss_base + s0->rss[p];
  for (int64_t p = 0; p < s1->numdata; p++)
    if (s1->rss_base + s1->rss[p] > most1) most1 = s1->rss_base + s1->rss[p];
  ck_assert_int_eq(most0, 3145728);  // its 1 MiB and the 2 MiB before thread 1's start
  ck_assert_int_eq(most1, 1048576);  // what its own row saw
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

/* The process's mapped_bytes shared among the threads as rss_bytes is
 * (issue 29): thread 0 maps 4 MiB, thread 1 8 MiB more; each thread's stub
 * maps its part, and each measures the process's, 12 MiB while both hold
 * theirs. Before, mapped_bytes was not replayed per thread: no mapping. */
START_TEST(test_mapped_shared) {
  const char *text =
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,xfree_from,xfree_bytes,"
      "xfree_alloc_ns,rss_bytes,mapped_bytes\n"
      "0,256,0,0,start,-1,,,,0,0\n"
      "1000000,512,0,0,,,,,,0,4194304\n"
      "2000000,0,0,1,start,0,,,,0,4194304\n"
      "20000000,4096,0,1,,,,,,65536,12582912\n"
      "40000000,512,0,0,,,,,,65536,12582912\n"
      "50000000,4096,0,1,exit,,,,,65536,12582912\n"
      "60000000,512,0,0,join,1,,,,65536,12582912\n"
      "70000000,256,0,0,exit,,,,,65536,12582912\n";
  memstub_trace *t = rt_trace(text);
  memstub_gen_threads *g = gen_threads(t);
  int64_t want[2] = {4194304, 8388608}, most = 0;
  memstub_threads_replay *r = replay(g, MEMSTUB_MEASURE_TIME | MEMSTUB_MEASURE_RESIDENT);
  for (int th = 0; th < 2; th++) {
    const struct memstub_stub *st = g->stubs[th];
    ck_assert_ptr_nonnull(st->mapped);
    int64_t sum = st->mapped_base;
    for (int64_t p = 0; p < st->numdata; p++) sum += st->mapped[p];
    ck_assert_msg(sum == want[th], "thread %d maps %lld bytes, want %lld", th, (long long)sum,
                  (long long)want[th]);
    for (int64_t p = 0; p < st->numdata; p++)
      if (st->mapped_base + r->thread[th]->rec[p].mapped_bytes > most)
        most = st->mapped_base + r->thread[th]->rec[p].mapped_bytes;
  }
  ck_assert_int_eq(most, 12582912);
  memstub_threads_replay_free(r);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

/* After a multi-thread replay glibc's mmap threshold stays at its default
 * (issue 29): a freed mmapped chunk no longer raises it, so a heap block
 * past 128 KiB stays mmapped, where before it grew inside its thread's
 * arena and realloc's copies wrote it whole (node's stub held 14 MiB that
 * way with its resident targets at 0). A 256 KiB block after a 1 MiB one
 * was freed is mmapped: its chunk is whole pages. */
START_TEST(test_mmap_threshold_fixed) {
  memstub_trace *t = fixture();
  memstub_gen_threads *g = gen_threads(t);
  memstub_threads_replay *r = replay(g, 0);
#if !defined(MEMSTUB_SANITIZED)  // (ASan's allocator has no mmap threshold)
  char *volatile big = malloc(1 << 20);
  ck_assert_ptr_nonnull(big);
  big[0] = 1;
  free(big);
  char *p = malloc(256 << 10);
  ck_assert_ptr_nonnull(p);
  size_t chunk = malloc_usable_size(p) + 2 * sizeof(size_t);  // its header
  ck_assert_msg(chunk % (size_t)sysconf(_SC_PAGESIZE) == 0,
                "a 256 KiB block came from an arena (chunk %zu bytes): the threshold moved", chunk);
  free(p);
#endif
  memstub_threads_replay_free(r);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

/* No thread's point ends before its thread's start on the common clock
 * (issue 29): thread 0 is started 20 ms before T0 to prepare its heap, and
 * its first point, at 0 ns, used to run at once, so the replayed trace's
 * first row was at -20 ms (`node`'s stub: "row 1: time_ns is negative"). */
START_TEST(test_no_point_before_start) {
  memstub_trace *t = rt_trace(
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,xfree_from,xfree_bytes,"
      "xfree_alloc_ns\n"
      "0,480,0,0,start,-1,,,\n"
      "1000000,144,72704,0,,,,,\n"
      "2000000,0,0,1,start,0,,,\n"
      "3000000,4096,8192,1,exit,,,,\n"
      "4000000,512,0,0,join,1,,,\n"
      "5000000,256,0,0,exit,,,,\n");
  memstub_gen_threads *g = gen_threads(t);
  memstub_threads_replay *r = replay(g, MEMSTUB_MEASURE_TRACE);
  for (int64_t k = 0; k < r->nthreads; k++)
    for (int64_t x = 0; x < g->stubs[k]->numdata; x++)
      ck_assert_msg(r->thread[k]->rec[x].end_ns >= 0, "thread %lld point %lld ends at %lld ns",
                    (long long)k, (long long)x, (long long)r->thread[k]->rec[x].end_ns);
  memstub_error err = {0};
  memstub_trace *rep = NULL;
  ck_assert_msg(memstub_threads_trace(r, &rep, &err) == 0, "%s", err.msg);
  ck_assert_int_ge(rep->pts[0].time_ns, 0);
  memstub_trace_free(rep);
  memstub_threads_replay_free(r);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
}
END_TEST

// The command line: replay --measure writes every thread's rows, compare
// judges them per thread and in total, gen writes a header (--data refuses).
START_TEST(test_cli) {
  char *dir = tu_mkdtemp();
  memstub_trace *t = fixture();
  char in[512], out[512];
  snprintf(in, sizeof in, "%s/four.csv", dir);
  snprintf(out, sizeof out, "%s/four.replayed.csv", dir);
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_write(t, in, &err), 0);
  tu_run r = tu_memstub(dir, "replay", in, "--measure", out, (char *)NULL);
  ck_assert_msg(r.status == 0, "replay: %s", r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "4 threads, 1 cross-thread frees"));
  tu_run_free(&r);
  memstub_trace *m = NULL;
  ck_assert_int_eq(memstub_trace_read(out, &m, &err), 0);
  ck_assert_uint_eq(m->n, t->n);
  ck_assert_ptr_nonnull(memstub_trace_get_meta(m, "handoff.0"));
  r = tu_memstub(dir, "compare", in, out, "--json", "--check", "missing=0,t2.missing=0",
                 (char *)NULL);
  ck_assert_msg(r.status == 0, "compare: %s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "{\"threads\": ["));
  ck_assert_ptr_nonnull(strstr(r.out, "\"spec\": \"t2.missing=0\", \"thread\": 2"));
  tu_run_free(&r);
  r = tu_memstub(dir, "compare", in, out, "--check", "t0.p50-us=0", (char *)NULL);
  ck_assert_int_eq(r.status, 1);  // a check that cannot pass fails
  tu_run_free(&r);
  // plot: the process total at -o, each thread beside it.
  r = tu_memstub(dir, "plot", in, out, "-o", "fig.svg", (char *)NULL);
  ck_assert_msg(r.status == 0, "plot: %s", r.err);
  tu_run_free(&r);
  const char *figs[] = {"fig.svg", "fig.thread0.svg", "fig.thread1.svg", "fig.thread2.svg",
                        "fig.thread3.svg"};
  for (size_t i = 0; i < sizeof figs / sizeof *figs; i++) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, figs[i]);
    ck_assert_msg(tu_exists(path), "%s missing", figs[i]);
  }
  // Without -o: the total's text figure, then each thread's, on standard output.
  r = tu_memstub(dir, "plot", in, out, (char *)NULL);
  ck_assert_msg(r.status == 0, "plot: %s", r.err);
  const char *total = strstr(r.out, "(replay), process total"),
             *last = strstr(r.out, "(replay), thread 3");
  ck_assert_msg(total && last && total < last && strstr(r.out, "(replay), thread 0"), "%.200s", r.out);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 2 + (int)(sizeof figs / sizeof *figs));
  // gen writes a header of every thread; a data file still carries one thread.
  r = tu_memstub(dir, "gen", in, "-o", "x.h", (char *)NULL);
  ck_assert_msg(r.status == 0, "gen: %s", r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "x.h: 4 threads, "));
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", in, "--data", "x.msd", (char *)NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "the trace has 4 threads: a data file (--data) carries one"));
  tu_run_free(&r);
  memstub_trace_free(m);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Path of name in dir (malloc'd).
static char *in_dir(const char *dir, const char *name) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

/* One thread's stub as a single-thread header of its own would hold it:
 * memstub_gen_emit_ex of the thread's stub under the name NAME_tT, from
 * "#ifndef MEMSTUB_GEN_" (the provenance comment above it is the same too,
 * but checked with the rest). */
static char *thread_alone(const memstub_gen_threads *g, int64_t k, const char *name, int format,
                          const char *dir) {
  memstub_gen *gk = g->gen[k];
  char *keep = gk->name;
  char tname[64];
  snprintf(tname, sizeof tname, "%s_t%lld", name, (long long)k);
  gk->name = tname;
  char *path = in_dir(dir, "alone.h");
  memstub_gen_emit_options eo = {.format = format};
  memstub_error err = {0};
  int rc = memstub_gen_emit_ex(gk, path, &eo, NULL, &err);
  gk->name = keep;
  ck_assert_msg(rc == 0, "%s", err.msg);
  char *text = tu_read_file(path);
  unlink(path);
  free(path);
  return text;
}

/* memstub gen of the 4-thread fixture: one header with every thread's stub
 * (each as a stub of that thread alone would be), the thread table and the
 * handoffs as memstub_gen_threads_build makes them, in both forms; memstub
 * build makes a program that replays every thread, each thread's stack and
 * heap as exact as a single-thread replay's (rt_check_exact). */
/* Each thread's heap block reallocs that stand for its recorded frees count
 * as those frees in its own comparison only: thread 1's free is no free of
 * thread 0 (with the process's count, thread 0's allocating calls were
 * judged 1 for its 2). */
START_TEST(test_block_frees_per_thread) {
  static const char text[] =
      "# memstub-trace 1\n"
      "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer,xfree_from,xfree_bytes,"
      "xfree_alloc_ns,cpu_ns,churn_bytes,calls_malloc_medium,calls_realloc_medium,"
      "calls_free_medium\n"
      "0,1024,0,0,start,-1,,,,0,0,0,0,0\n"
      "1000000,1024,4096,0,,,,,,500000,4096,0,1,0\n"   // thread 0 grows: its realloc
      "2000000,1024,0,1,start,0,,,,0,0,0,0,0\n"
      "3000000,1024,4096,1,,,,,,500000,4096,1,0,0\n"   // thread 1 grows: its malloc
      "5000000,1024,0,1,,,,,,1500000,4096,0,0,1\n"     // and shrinks by a free
      "6000000,1024,0,1,,,,,,2000000,0,0,0,0\n"
      "8000000,1024,2048,0,,,,,,3000000,2048,0,1,0\n"  // thread 0 shrinks: its realloc
      "10000000,1024,2048,0,join,1,,,,4000000,0,0,0,0\n";
  char *dir = tu_mkdtemp();
  char in[512];
  snprintf(in, sizeof in, "%s/t.csv", dir);
  tu_write_file(in, text);
  tu_run r = tu_memstub(dir, "replay", in, "--measure", "m.csv", (char *)NULL);
  ck_assert_msg(r.status == 0, "replay: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "compare", in, "m.csv", (char *)NULL);
  // Thread 0's comparison, then thread 1's.
  static const char line[] = "calls  allocating (malloc, calloc, realloc, memalign) original ";
  const char *t0 = strstr(r.out, line), *t1 = t0 ? strstr(t0 + 1, line) : NULL;
  ck_assert_msg(t0 && t1, "%s", r.out);
  size_t n = sizeof line - 1;
  ck_assert_msg(!strncmp(t0 + n, "2, replayed 2 (+0.00%)", 22) &&
                    !strncmp(t1 + n, "1, replayed 1 (+0.00%)", 22) &&
                    strstr(t1, "the stub made 2: 1 of its heap block's reallocs"),
                "%s", r.out);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_gen_build_header) {
  char *dir = tu_mkdtemp();
  memstub_trace *t = fixture();
  char *in = in_dir(dir, "four.csv");
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_write(t, in, &err), 0);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.name = "four";
  o.source = in;
  memstub_gen_threads *g = NULL;
  ck_assert_msg(memstub_gen_threads_build(t, &o, &g, &err) == 0, "%s", err.msg);
  static const char *const forms[2] = {"listing", "compact"};
  for (int f = 0; f < 2; f++) {
    char hname[32], pname[32], mname[32];
    snprintf(hname, sizeof hname, "four_%s.h", forms[f]);
    snprintf(pname, sizeof pname, "four_%s", forms[f]);
    snprintf(mname, sizeof mname, "four_%s.csv", forms[f]);
    tu_run r = tu_memstub(dir, "gen", in, "--name", "four", "--format", forms[f], "-o", hname,
                          (char *)NULL);
    ck_assert_msg(r.status == 0, "gen: %s", r.err);
    tu_run_free(&r);
    char *h = in_dir(dir, hname);
    char *text = tu_read_file(h);
    // The library writes the same header.
    char *lib = in_dir(dir, "lib.h");
    memstub_gen_emit_options eo = {.format = f + 1};
    ck_assert_msg(memstub_gen_threads_emit(g, lib, &eo, &err) == 0, "%s", err.msg);
    char *libtext = tu_read_file(lib);
    ck_assert_str_eq(libtext, text);
    free(libtext);
    unlink(lib);
    free(lib);
    ck_assert_ptr_nonnull(strstr(text, "#define four_THREADS 4\n"));
    ck_assert_ptr_nonnull(strstr(text, "static const struct memstub_threads_stub four_memThreads = {"));
    for (int64_t k = 0; k < 4; k++) {
      char *alone = thread_alone(g, k, "four", f + 1, dir);
      ck_assert_msg(strstr(text, alone), "thread %lld's stub differs from its header alone",
                    (long long)k);
      free(alone);
      // The thread table, as the builder's.
      const memstub_thread_spec *sp = &g->threads[k];
      char want[256];
      snprintf(want, sizeof want,
               "  [%lld] = {.start_ns = %lld, .creator = %lld, .create_point = %lld, .joiner = "
               "%lld, .join_point = %lld},\n",
               (long long)k, (long long)sp->start_ns, (long long)sp->creator,
               (long long)sp->create_point, (long long)sp->joiner, (long long)sp->join_point);
      ck_assert_msg(strstr(text, want), "no '%s'", want);
      snprintf(want, sizeof want, "  &four_t%lld_memStub,\n", (long long)k);
      ck_assert_ptr_nonnull(strstr(text, want));
    }
    const memstub_handoff *ho = &g->handoffs[0];
    char want[512];
    snprintf(want, sizeof want,
             "  /* 4.9 KiB malloc'd by thread 1 after its point %lld, freed by thread 2 after its "
             "point %lld */\n  {.bytes = 5000, .from = 1, .alloc_point = %lld, .alloc_row = 10, "
             ".to = 2, .free_point = %lld, .drop_row = 40},\n",
             (long long)ho->alloc_point, (long long)ho->free_point, (long long)ho->alloc_point,
             (long long)ho->free_point);
    ck_assert_msg(strstr(text, want), "no '%s'", want);
    snprintf(want, sizeof want,
             "/* thread 3 starts at 20.0 ms, created by 1 after its point %lld, joined at the end */",
             (long long)g->threads[3].create_point);
    ck_assert_msg(strstr(text, want), "no '%s'", want);
    ck_assert_ptr_nonnull(strstr(text, f == 0 ? "four_t2_memUse[four_t2_NUMDATA] = {"
                                             : "four_t2_memData[] ="));
    free(text);
    // Build and run it: every thread replayed.
    r = tu_memstub(dir, "build", h, "-o", pname, (char *)NULL);
    ck_assert_msg(r.status == 0, "build: %s", r.err);
    ck_assert_msg(!tu_warned(r.err), "build: %s", r.err);
    tu_run_free(&r);
    char *prog = in_dir(dir, pname), *mpath = in_dir(dir, mname);
    char *argv[] = {prog, "--measure", mpath, "-v", NULL};
    r = tu_exec(dir, argv);
    ck_assert_msg(r.status == 0, "%s: %s", pname, r.err);
    // One line says what was replayed and where the measurement went (issue 30).
    ck_assert_msg(strstr(r.err, ": replayed 4 threads (") && strstr(r.err, "1 cross-thread frees) in ")
                      && strstr(r.err, "; measured trace in ") && strstr(r.err, mname),
                  "%s", r.err);
    snprintf(want, sizeof want, "thread 3: replayed %lld points from 20.0 ms",
             (long long)g->stubs[3]->numdata);
    ck_assert_msg(strstr(r.err, want), "no '%s' in %s", want, r.err);
    tu_run_free(&r);
    memstub_trace *m = NULL;
    ck_assert_msg(memstub_trace_read(mpath, &m, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(m->n, t->n);
    for (int64_t k = 0; k < 4; k++) {
      memstub_trace *orig = thread_trace(t, k), *rep = NULL;
      ck_assert_int_eq(memstub_trace_thread_split(m, k, &rep), 0);
      rt_fit fit;
      rt_check_exact(orig, g->stubs[k], rep, 1, &fit);
      memstub_trace_free(orig);
      memstub_trace_free(rep);
    }
    memstub_trace_free(m);
    free(prog), free(mpath), free(h);
  }
  // One thread alone: --name four_t1 builds thread 1's stub as a program of its own.
  tu_run r = tu_memstub(dir, "build", "four_listing.h", "--name", "four_t1", "-o", "t1",
                        (char *)NULL);
  ck_assert_msg(r.status == 0, "build --name four_t1: %s", r.err);
  tu_run_free(&r);
  char *prog = in_dir(dir, "t1");
  char *argv[] = {prog, "--check", NULL};
  r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "t1 --check: %s", r.err);
  tu_run_free(&r);
  free(prog);
  memstub_gen_threads_free(g);
  memstub_trace_free(t);
  free(in);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* memstub_add_stub of a trace with several threads: memstub_NAME() replays
 * every thread (memstub_threads_call), MEMSTUB_MEASURE gets every thread's
 * rows, memstub_NAME_threads() is the header's thread table. Thread 0 is
 * replayed by the calling thread (its tid in the measurement's thread.0),
 * the others by threads of their own (issue 31 item 3). */
START_TEST(test_add_stub_threads) {
  char *dir = tu_mkdtemp();
  char *src = in_dir(dir, "src"), *bld = in_dir(dir, "b"), *cml = in_dir(src, "CMakeLists.txt");
  char *app = in_dir(src, "app.c"), *trace = in_dir(src, "four.csv");
  ck_assert_int_eq(mkdir(src, 0777), 0);
  memstub_trace *t = fixture();
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_write(t, trace, &err), 0);
  char *text = NULL, *inc = strdup(tu_src("include"));  // tu_src: one buffer
  char *fn = strdup(tu_src("cmake/MemstubStub.cmake"));
  ck_assert(asprintf(&text,
                     "cmake_minimum_required(VERSION 3.20)\nproject(t C)\n"
                     "set(MEMSTUB_EXECUTABLE \"%s\")\nset(MEMSTUB_LIBDIR \"%s\")\n"
                     "set(MEMSTUB_INCLUDEDIR \"%s\")\ninclude(\"%s\")\n"
                     "memstub_add_stub(NAME four TRACE four.csv)\n"
                     "add_executable(app app.c)\ntarget_link_libraries(app PRIVATE four)\n",
                     getenv("MEMSTUB_EXE"), getenv("MEMSTUB_BINARY_DIR"), inc, fn) > 0);
  tu_write_file(cml, text);
  free(text), free(inc), free(fn);
  tu_write_file(app,
                "#define _GNU_SOURCE\n#include <stdio.h>\n#include <unistd.h>\n"
                "#include \"memstub/threads.h\"\n#include \"memstub_four.h\"\n"
                "int main(void) {\n"
                "  memstub_error err = {0};\n"
                "  int rc = memstub_four_err(&err);\n"
                "  const struct memstub_threads_stub *s = memstub_four_threads();\n"
                "  printf(\"rc=%d threads=%lld handoffs=%lld t0=%s tid=%ld %s\\n\", rc,\n"
                "         (long long)s->nthreads, (long long)s->nhandoffs, memstub_four_stub()->name,\n"
                "         (long)gettid(), err.msg);\n"
                "  return rc != 0;\n}\n");
  char *cc = getenv("MEMSTUB_CC"), ccdef[4200];
  snprintf(ccdef, sizeof ccdef, "-DCMAKE_C_COMPILER=%s", cc ? cc : "cc");
  char *configure[] = {"cmake", "-S", src, "-B", bld, ccdef, NULL};
#if defined(MEMSTUB_SANITIZED)
  // The runtime's archives are sanitized: the library builds; an app would
  // need the sanitizers' flags, so it is built and run in plain builds only.
  char *build[] = {"cmake", "--build", bld, "--target", "four", NULL};
#else
  char *build[] = {"cmake", "--build", bld, NULL};
#endif
  tu_run r = tu_exec(NULL, configure);
  ck_assert_msg(r.status == 0, "configure: %.2000s", r.err);
  tu_run_free(&r);
  r = tu_exec(NULL, build);
  size_t lo = strlen(r.out);
  ck_assert_msg(r.status == 0, "build: %s%.2000s", r.err, r.out + (lo > 2000 ? lo - 2000 : 0));
  tu_run_free(&r);
#if !defined(MEMSTUB_SANITIZED)
  char *exe = in_dir(bld, "app"), *meas = in_dir(dir, "m.csv");
  setenv("MEMSTUB_MEASURE", meas, 1);
  char *argv[] = {exe, NULL};
  r = tu_exec(dir, argv);
  unsetenv("MEMSTUB_MEASURE");
  ck_assert_msg(r.status == 0, "app: %s%s", r.out, r.err);
  ck_assert_msg(strstr(r.out, "rc=0 threads=4 handoffs=1 t0=four_t0 tid="), "%s", r.out);
  long tid = strtol(strstr(r.out, "tid=") + 4, NULL, 10);
  tu_run_free(&r);
  memstub_trace *m = NULL;
  // MEMSTUB_MEASURE without a field: the process's one measured call writes m.csv.
  char *mp = in_dir(dir, "m.csv");
  ck_assert_msg(memstub_trace_read(mp, &m, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(m->n, t->n);
  ck_assert_int_eq(memstub_trace_thread_count(m), 4);
  // Thread 0 on the caller's thread; the others on threads of their own.
  char want[64];
  snprintf(want, sizeof want, ", tid %ld", tid);
  for (int k = 0; k < 4; k++) {
    char key[16];
    snprintf(key, sizeof key, "thread.%d", k);
    const char *v = memstub_trace_get_meta(m, key);
    ck_assert_msg(v && strstr(v, ", tid "), "%s: %s", key, v ? v : "(none)");
    ck_assert_msg(!strcmp(strstr(v, ", tid "), want) == (k == 0), "%s: %s, caller's tid %ld", key,
                  v, tid);
  }
  memstub_trace_free(m);
  free(mp), free(exe), free(meas);
#endif
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir), free(src), free(bld), free(cml), free(app), free(trace);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("threads");
  TCase *tc = tcase_create("format");
  tcase_add_test(tc, test_round_trip);
  tcase_add_test(tc, test_single_thread_unchanged);
  tcase_add_test(tc, test_refused);
  suite_add_tcase(s, tc);
  tc = tcase_create("gen");
  tcase_add_test(tc, test_gen_threads);
  tcase_add_test(tc, test_start_on_creator_timeline);
  suite_add_tcase(s, tc);
  tc = tcase_create("replay");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_replay_threads);
  tcase_add_test(tc, test_cli);
  tcase_add_test(tc, test_block_frees_per_thread);
  tcase_add_test(tc, test_free_after_exit);
  tcase_add_test(tc, test_free_before_its_row);
  tcase_add_test(tc, test_wait_not_spin);
  tcase_add_test(tc, test_short_lead);
  tcase_add_test(tc, test_rss_shared);
  tcase_add_test(tc, test_no_point_before_start);
  tcase_add_test(tc, test_mmap_threshold_fixed);
  tcase_add_test(tc, test_mapped_shared);
  tcase_add_test(tc, test_rss_at_start_row);
  tcase_add_test(tc, test_free_after_exit_kept);
  tcase_add_test(tc, test_gen_build_header);
  tcase_add_test(tc, test_add_stub_threads);
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
