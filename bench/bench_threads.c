// Issue 15's 4-thread goal: a trace with four threads (different stack
// depths and heap patterns, a cross-thread free, joins) replayed with one
// thread per original thread; per thread the stack's deviation (after the
// calibration profile's compensation, and after fitting an offset and a
// per-frame overhead as the tests do), the heap's deviation per thread and of
// the process total (the sum of each thread's latest), and the lateness per
// row (p50, p99).
//
//   build/bench/bench_threads [--repeat N] [--profile FILE] [--trace CSV]
//                             [--time-scale F] [--out FILE.md] [--fixture FILE.csv]
//                             [--stagger NS]
//
// Without --trace it replays its own fixture (the one tests/test_threads.c
// checks, 200 ms, stretched by --time-scale, default 5) and says so; with
// --trace a recorded one (memstub record --thread all). --fixture writes the
// fixture as a CSV; --stagger NS moves its thread k k x NS later (no two
// threads' rows at the same time). Without --profile the stubs are not compensated (the
// fitted figures still hold).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "memstub/calib.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "memstub/threads.h"
#include "memstub/trace.h"
#include "prim.h"
#include "threads_fixture.h"

#define MS 1000000LL
enum { MAXREP = 50, MAXTH = 64 };

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}
static int64_t pct(int64_t *v, size_t n, double p) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_i64);
  size_t k = (size_t)(p * (double)(n - 1) + 0.5);
  return v[k];
}
static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

static double loadavg(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}

static int die(const memstub_error *err) {
  fprintf(stderr, "bench_threads: error: %s\n", err->msg);
  return 2;
}

// Per thread and run.
typedef struct fig {
  int64_t stack_raw, stack_fit, heap, p50, p99, rows, wait_ns;
} fig;

/* Thread k of a replay against its original rows: the stack's largest
 * deviation as measured (raw) and after fitting offset + depth x frame,
 * the heap's after its offset at row 0, the lateness percentiles. */
static void measure(const memstub_trace *orig, const size_t *rows, size_t n,
                    const struct memstub_stub *s, const memstub_trace *rep, fig *f) {
  int il = memstub_trace_column(rep, "late_ns");
  int64_t *depth = calloc(n, sizeof *depth), d = 0;
  for (int64_t i = 0; i < s->numdata; i++) {
    d += s->use[i].stackAlloc > 0 ? 1 : s->use[i].stackAlloc < 0 ? -1 : 0;
    for (int64_t r = s->point[i]; r < (int64_t)n; r++) depth[r] = d;
  }
  int64_t dmin = INT64_MAX, dmax = -1;
  for (size_t r = 0; r < n; r++) {
    if (depth[r] < dmin) dmin = depth[r];
    if (depth[r] > dmax) dmax = depth[r];
  }
  double lo = 0, hi = 0;
  int nlo = 0, nhi = 0;
  for (size_t r = 0; r < n; r++) {
    double dev = (double)(rep->pts[r].stack_bytes - orig->pts[rows[r]].stack_bytes);
    if (depth[r] == dmin) lo += dev, nlo++;
    if (depth[r] == dmax) hi += dev, nhi++;
  }
  int64_t frame = dmax > dmin ? (int64_t)((hi / nhi - lo / nlo) / (double)(dmax - dmin) + 0.5) : 0;
  size_t first = 0;
  while (depth[first] != dmin) first++;
  int64_t off = rep->pts[first].stack_bytes - orig->pts[rows[first]].stack_bytes - dmin * frame;
  int64_t hoff = rep->pts[0].heap_bytes - orig->pts[rows[0]].heap_bytes;
  int64_t *late = malloc(n * sizeof *late);
  memset(f, 0, sizeof *f);
  for (size_t r = 0; r < n; r++) {
    int64_t raw = rep->pts[r].stack_bytes - orig->pts[rows[r]].stack_bytes;
    int64_t fit = raw - off - depth[r] * frame;
    int64_t dh = rep->pts[r].heap_bytes - orig->pts[rows[r]].heap_bytes - hoff;
    if (abs64(raw) > f->stack_raw) f->stack_raw = abs64(raw);
    if (abs64(fit) > f->stack_fit) f->stack_fit = abs64(fit);
    // Arena rows: mmapped blocks are page-rounded (docs/runtime.md).
    if (orig->pts[rows[r]].heap_bytes - s->heap_base < 128 * 1024 - 64 && abs64(dh) > f->heap)
      f->heap = abs64(dh);
    late[r] = memstub_trace_extra_row(rep, r)[il];
  }
  f->rows = (int64_t)n;
  f->p50 = pct(late, n, 0.5);
  f->p99 = pct(late, n, 0.99);
  free(late);
  free(depth);
}

int main(int argc, char **argv) {
  int repeat = 5;
  double scale = 5;
  int64_t stagger = 0;
  const char *profile_path = NULL, *trace_path = NULL, *out = NULL, *fixture_out = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc) profile_path = argv[++i];
    else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc) trace_path = argv[++i];
    else if (strcmp(argv[i], "--time-scale") == 0 && i + 1 < argc) scale = atof(argv[++i]);
    else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
    else if (strcmp(argv[i], "--fixture") == 0 && i + 1 < argc) fixture_out = argv[++i];
    else if (strcmp(argv[i], "--stagger") == 0 && i + 1 < argc) stagger = atoll(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_threads [--repeat N] [--profile FILE] [--trace CSV] "
                      "[--time-scale F] [--out FILE.md] [--fixture FILE.csv] [--stagger NS]\n");
      return 2;
    }
  }
  if (repeat < 1 || repeat > MAXREP || !(scale > 0)) {
    fprintf(stderr, "bench_threads: --repeat 1..%d, --time-scale > 0\n", MAXREP);
    return 2;
  }
  memstub_error err = {0};
  memstub_trace *orig = NULL;
  if (trace_path) {
    if (memstub_trace_read(trace_path, &orig, &err) < 0) return die(&err);
  } else {
    orig = ms_test_threads_fixture(stagger < 0 ? 0 : stagger);
    if (!orig) {
      fprintf(stderr, "bench_threads: out of memory making the fixture\n");
      return 1;
    }
    if (fixture_out && memstub_trace_write(orig, fixture_out, &err) < 0) return die(&err);
  }
  memstub_profile prof;
  if (profile_path && memstub_profile_read(profile_path, &prof, &err) < 0) return die(&err);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.time_scale = scale;
  if (profile_path) {
    o.profile = &prof;
    o.profile_path = profile_path;
    o.measured = 1;
  }
  memstub_gen_threads *g = NULL;
  if (memstub_gen_threads_build(orig, &o, &g, &err) < 0) return die(&err);
  int64_t nt = g->nthreads;
  if (nt > MAXTH) {
    fprintf(stderr, "bench_threads: %lld threads, at most %d\n", (long long)nt, MAXTH);
    return 2;
  }
  // The original rows per thread, times scaled as the stubs' are.
  memstub_trace *scaled = memstub_trace_create();
  for (size_t i = 0; i < orig->n; i++)
    memstub_trace_append(scaled, (int64_t)((double)orig->pts[i].time_ns * scale + 0.5),
                         orig->pts[i].stack_bytes, orig->pts[i].heap_bytes);
  static fig f[MAXREP][MAXTH];
  int64_t total[MAXREP], xtid_ok[MAXREP];
  double load0 = loadavg();
  int64_t t_start = ms__prim_now_ns();
  memstub_replay_options ro;
  memstub_replay_options_init(&ro);
  ro.measure = MEMSTUB_MEASURE_TRACE;
  for (int run = 0; run < repeat; run++) {
    memstub_threads_replay *r = NULL;
    if (memstub_threads_run(&g->stub, &ro, &r, &err) < 0) return die(&err);
    int64_t latest_o[MAXTH] = {0}, latest_r[MAXTH] = {0}, hoff[MAXTH];
    for (int64_t k = 0; k < nt; k++) {
      memstub_trace *rep = NULL;
      if (memstub_replay_trace(r->thread[k], &rep, &err) < 0) return die(&err);
      measure(orig, g->rows[k], g->nstub[k], g->stubs[k], rep, &f[run][k]);
      hoff[k] = rep->pts[0].heap_bytes - orig->pts[g->rows[k][0]].heap_bytes;
      memstub_trace_free(rep);
    }
    // The process total at every row of the merged replayed trace.
    memstub_trace *m = NULL;
    if (memstub_threads_trace(r, &m, &err) < 0) return die(&err);
    int cth = memstub_trace_column(m, "thread"), cp = memstub_trace_column(m, "point");
    int seen[MAXTH] = {0};
    total[run] = 0;
    for (size_t i = 0; i < m->n; i++) {
      const int64_t *x = memstub_trace_extra_row(m, i);
      int64_t k = x[cth];
      seen[k] = 1;
      latest_o[k] = orig->pts[g->rows[k][x[cp]]].heap_bytes;
      latest_r[k] = m->pts[i].heap_bytes - hoff[k];
      int64_t dev = 0, big = 0;
      for (int64_t j = 0; j < nt; j++)
        if (seen[j]) {
          dev += latest_r[j] - latest_o[j];
          big |= latest_o[j] - g->stubs[j]->heap_base >= 128 * 1024 - 64;
        }
      if (!big && abs64(dev) > total[run]) total[run] = abs64(dev);
    }
    memstub_trace_free(m);
    xtid_ok[run] = 1;
    for (int64_t h = 0; h < g->nhandoffs; h++) {
      const memstub_handoff *ho = &g->handoffs[h];
      if (r->handoff[h].malloc_tid != r->tid[ho->from] || r->handoff[h].free_tid != r->tid[ho->to])
        xtid_ok[run] = 0;
      f[run][ho->to].wait_ns += r->handoff[h].wait_ns;
    }
    memstub_threads_replay_free(r);
    fprintf(stderr, "\rbench_threads: run %d/%d", run + 1, repeat);
  }
  fputc('\n', stderr);
  double secs = (double)(ms__prim_now_ns() - t_start) / 1e9, load1 = loadavg();

  FILE *w = out ? fopen(out, "w") : stdout;
  if (!w) {
    perror(out);
    return 2;
  }
  struct utsname u;
  uname(&u);
  fprintf(w, "# Threads: one replay thread per original thread (issue 15)\n\n");
  fprintf(w, "Written by `build/bench/bench_threads");
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {  // where this page went
      i++;
      continue;
    }
    fprintf(w, " %s", argv[i]);
  }
  fprintf(w, "`.\n\n");
  char fx[160];
  snprintf(fx, sizeof fx, "**the fixture of tests/test_threads.c** (hand-made)%s",
           stagger > 0 ? ", its thread k moved k x --stagger later: no two threads' rows at the "
                         "same time"
                       : ": threads 0, 1 and 3 have rows at the same times");
  fprintf(w, "Trace: %s; %lld threads, %zu rows, %lld cross-thread free%s; time x%g. ",
          trace_path ? trace_path : fx, (long long)nt, orig->n, (long long)g->nhandoffs,
          g->nhandoffs == 1 ? "" : "s", scale);
  fprintf(w, "Calibration: %s. %d runs, %.1f s; %s %s, load average %.2f before and %.2f after "
             "(other helpers' builds: timing figures are noisy).\n\n",
          profile_path ? profile_path : "none (stack raw includes the per-frame overhead)",
          repeat, secs, u.sysname, u.release, load0, load1);
  fprintf(w, "Per thread, over the runs: the largest stack deviation at any row as measured "
             "(*raw*: with a profile, after its compensation) and after fitting an offset and a "
             "per-frame overhead (*fit*), the largest heap deviation on arena rows (the thread's "
             "own heap from usable sizes, after its offset at row 0), and the median over runs "
             "of the rows' lateness p50 and p99. Goal: stack within 16 B, heap exact (glibc's "
             "rounding: within 16 B), p50 <= 2 us.\n\n");
  fprintf(w, "| thread | rows | stack raw max (B) | stack fit max (B) | heap max (B) | late p50 "
             "(us, median of runs) | late p99 (us, median) | handoff wait (us, max) |\n");
  fprintf(w, "|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int64_t k = 0; k < nt; k++) {
    int64_t sr = 0, sf = 0, hp = 0, wt = 0, p50[MAXREP], p99[MAXREP];
    for (int run = 0; run < repeat; run++) {
      const fig *x = &f[run][k];
      if (x->stack_raw > sr) sr = x->stack_raw;
      if (x->stack_fit > sf) sf = x->stack_fit;
      if (x->heap > hp) hp = x->heap;
      if (x->wait_ns > wt) wt = x->wait_ns;
      p50[run] = x->p50;
      p99[run] = x->p99;
    }
    fprintf(w, "| %lld | %lld | %lld | %lld | %lld | %.1f | %.1f | %.1f |\n", (long long)k,
            (long long)f[0][k].rows, (long long)sr, (long long)sf, (long long)hp,
            (double)pct(p50, (size_t)repeat, 0.5) / 1e3, (double)pct(p99, (size_t)repeat, 0.5) / 1e3,
            (double)wt / 1e3);
  }
  int64_t tot = 0, ok = 1;
  for (int run = 0; run < repeat; run++) {
    if (total[run] > tot) tot = total[run];
    ok &= xtid_ok[run] != 0;
  }
  fprintf(w, "\nProcess total (the sum of each thread's latest heap, at every row of the merged "
             "replayed trace, rows where no thread's block is mmapped): largest deviation %lld B "
             "over the runs. Handoff blocks malloc'd by the allocating thread's replay thread and "
             "freed by the freeing thread's (kernel thread ids): %s.\n",
          (long long)tot, ok ? "yes, in every run" : "**no**");
  if (out) fclose(w);
  memstub_trace_free(scaled);
  memstub_gen_threads_free(g);
  memstub_trace_free(orig);
  return 0;
}
