// Large stubs (issue 17): build cost per data form, and replay lateness per
// point by size.
//
//   build/bench/bench_large [--max-points N] [--spacing NS] [--small-runs R] [--listing-1m]
//                           [--replay-only] [--out FILE]
//
// Traces: the component-like synthetic trace (traces/synth.h) with 1k, 10k,
// 100k, 1M and 10M rows (up to --max-points, default 10M), one row every
// --spacing ns (default 10 us), so every size replays at the same rate.
//
//  1. build, per form: for 10k, 100k, 1M and 10M rows, `memstub build` of the
//     listing header (up to 100k rows; 1M with --listing-1m: a minute and
//     2 GiB), of the compact header and of the data file (`memstub build
//     --data`), under /usr/bin/time: wall time and the peak resident memory
//     of memstub and its children (the compiler). The stub program's --check
//     is part of the build: it decodes a compact header, reads and validates a
//     data file. Plus gen into a data file (points/s of memstub_gen_emit_data
//     after read and normalise) and the time to read and validate the file.
//  2. replay, for 1k, 1M and 10M rows: the stub read from its data file
//     (memstub_stub_data_open, as memstub replay --data does), replayed with
//     --measure's records (MEMSTUB_MEASURE_TRACE); per point, over every
//     point: lateness (end of the point's work - its deadline), wake lateness
//     (start of its work - deadline), work (end - start), as p50, p99, p99.9
//     and max; the replay thread's run-queue wait says how busy the host was.
//     1k rows are replayed --small-runs times (default 1000, about 10 s of
//     replay as the 1M run; the percentiles pool their points), so the small
//     stub meets as much of a busy host's preemption as the large ones: a 10
//     ms replay run once mostly fits between two preemptions, and would look
//     better for that alone.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "ms_common.h"
#include "prim.h"
#include "synth.h"

static double now_s(void) { return (double)ms__prim_now_ns() / 1e9; }

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

// The q-quantile of sorted v[0..n).
static int64_t quant(const int64_t *v, size_t n, double q) {
  size_t i = (size_t)(q * (double)(n - 1) + 0.5);
  return v[i < n ? i : n - 1];
}

/* memstub build ARGS... under /usr/bin/time: wall seconds and peak resident
 * KiB. 0 or -1. */
static int build(const char *dir, const char *what, const char *file, double *wall, double *kib) {
  char out[4096], tf[4096];
  snprintf(out, sizeof out, "%s/stub", dir);
  snprintf(tf, sizeof tf, "%s/time.txt", dir);
  double t0 = now_s();
  pid_t pid = fork();
  if (pid == 0) {
    if (strcmp(what, "data") == 0)
      execl("/usr/bin/time", "time", "-f", "%M", "-o", tf, MEMSTUB_EXE, "build", "--data", file,
            "-o", out, (char *)NULL);
    else
      execl("/usr/bin/time", "time", "-f", "%M", "-o", tf, MEMSTUB_EXE, "build", file, "-o", out,
            (char *)NULL);
    _exit(127);
  }
  int st;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
  *wall = now_s() - t0;
  FILE *f = fopen(tf, "r");
  if (!f) return -1;
  int ok = fscanf(f, "%lf", kib) == 1;
  fclose(f);
  unlink(tf);
  unlink(out);
  return ok ? 0 : -1;
}

static long file_size(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}

static void load(char *buf, size_t cap) {
  double l[3] = {0};
  if (getloadavg(l, 3) == 3) snprintf(buf, cap, "%.2f %.2f %.2f", l[0], l[1], l[2]);
  else snprintf(buf, cap, "?");
}

static memstub_gen *make_stub(int64_t rows, int64_t spacing, const char *csv) {
  ms__synth_params p = {.kind = MS__SYNTH_PAPER, .seed = 42, .rows = rows,
                        .duration_ns = rows * spacing, .max_stack = 65536,
                        .max_heap = 1 << 20};
  memstub_trace *t;
  memstub_error err = {0};
  if (ms__synth(&p, &t) < 0) return NULL;
  if (csv && memstub_trace_write(t, csv, &err) < 0) {
    fprintf(stderr, "bench_large: %s\n", err.msg);
    exit(2);
  }
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.source = "bench_large";
  memstub_gen *g = NULL;
  if (memstub_gen_build(t, &o, &g, &err) < 0) {
    fprintf(stderr, "bench_large: %s\n", err.msg);
    exit(2);
  }
  memstub_trace_free(t);
  return g;
}

#define APPEND(buf, off, ...) ((off) += (size_t)snprintf((buf) + (off), sizeof(buf) - (off), __VA_ARGS__))

int main(int argc, char **argv) {
  int64_t max_points = 10000000, spacing = 10000;
  int listing_1m = 0, replay_only = 0, small_runs = 1000, faults = 0;
  const char *out = MEMSTUB_SOURCE_DIR "/bench/results/large.md";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--max-points") == 0 && i + 1 < argc) max_points = atoll(argv[++i]);
    else if (strcmp(argv[i], "--spacing") == 0 && i + 1 < argc) spacing = atoll(argv[++i]);
    else if (strcmp(argv[i], "--listing-1m") == 0) listing_1m = 1;
    else if (strcmp(argv[i], "--replay-only") == 0) replay_only = 1;
    else if (strcmp(argv[i], "--faults") == 0) faults = 1;
    else if (strcmp(argv[i], "--small-runs") == 0 && i + 1 < argc) small_runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
    else {
      fprintf(stderr, "usage: bench_large [--max-points N] [--spacing NS] [--small-runs R] "
                      "[--listing-1m] [--replay-only] [--out FILE]\n");
      return 2;
    }
  }
  if (spacing < 1000) spacing = 1000;
  if (small_runs < 1) small_runs = 1;
  char dir[] = "/tmp/memstub-bench-large-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char csv[4096], hdr[4096], dat[4096];
  snprintf(csv, sizeof csv, "%s/trace.csv", dir);
  snprintf(hdr, sizeof hdr, "%s/memuse.h", dir);
  snprintf(dat, sizeof dat, "%s/stub.msd", dir);
  char load0[64], load1[64], load2[64];
  load(load0, sizeof load0);
  memstub_error err = {0};

  // ---- 1. build per form ----
  static char bld[16384], gd[8192], rep[8192];
  size_t boff = 0, goff = 0, roff = 0;
  APPEND(bld, boff, "| rows | points | form | file (MB) | memstub build (s) | peak RSS (MiB) |\n"
                    "|---:|---:|---|---:|---:|---:|\n");
  APPEND(gd, goff, "| rows | points | read + normalise (s) | write data file (s) | gen --data "
                   "points/s | data file (MB) | map + validate (s) |\n"
                   "|---:|---:|---:|---:|---:|---:|---:|\n");
  const int64_t bsizes[] = {10000, 100000, 1000000, 10000000};
  for (size_t k = 0; !replay_only && k < MS__ARRAY_SIZE(bsizes) && bsizes[k] <= max_points;
       k++) {
    int64_t rows = bsizes[k];
    memstub_gen *g = make_stub(rows, spacing, csv);
    memstub_gen_free(g);
    double t0 = now_s();
    memstub_trace *t;
    if (memstub_trace_read(csv, &t, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
    memstub_gen_options o;
    memstub_gen_options_init(&o);
    o.source = "bench_large";
    if (memstub_gen_build(t, &o, &g, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
    memstub_trace_free(t);
    double t1 = now_s();
    if (memstub_gen_emit_data(g, dat, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
    double t2 = now_s();
    memstub_stub_data *d;
    if (memstub_stub_data_open(dat, &d, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
    double t3 = now_s();
    memstub_stub_data_free(d);
    APPEND(gd, goff, "| %lld | %lld | %.3f | %.3f | %.0f | %.1f | %.3f |\n", (long long)rows,
           (long long)g->stub.numdata, t1 - t0, t2 - t1, (double)g->stub.numdata / (t2 - t0),
           (double)file_size(dat) / 1e6, t3 - t2);
    const char *forms[] = {"listing", "compact", "data"};
    for (int f = 0; f < 3; f++) {
      if (f == 0 && (rows > 1000000 || (rows == 1000000 && !listing_1m))) continue;
      const char *file = dat;
      if (f < 2) {
        memstub_gen_emit_options eo = {.format = f == 0 ? MEMSTUB_GEN_FORMAT_LISTING
                                                        : MEMSTUB_GEN_FORMAT_COMPACT};
        if (memstub_gen_emit_ex(g, hdr, &eo, NULL, &err) < 0)
          return fprintf(stderr, "%s\n", err.msg), 2;
        file = hdr;
      }
      double w, kib;
      if (build(dir, forms[f], file, &w, &kib) < 0)
        return fprintf(stderr, "bench_large: build %s failed\n", forms[f]), 2;
      fprintf(stderr, "bench_large: %lld rows, %s build: %.2f s, %.0f MiB\n", (long long)rows,
              forms[f], w, kib / 1024);
      APPEND(bld, boff, "| %lld | %lld | %s | %.1f | %.2f | %.0f |\n", (long long)rows,
             (long long)g->stub.numdata, forms[f], (double)file_size(file) / 1e6, w, kib / 1024);
    }
    memstub_gen_free(g);
  }
  unlink(csv);
  unlink(hdr);
  load(load1, sizeof load1);

  // ---- 2. replay lateness per point ----
  APPEND(rep, roff, "| rows | points | runs | records (MiB) | bytes/point | late p50 (us) | "
                    "p99 | p99.9 | max | late > 100 us (%%) | wake late p50 (us) | p99 | work p50 "
                    "(us) | p99 | p99.9 | max | run-queue wait (%% of the replay) |\n"
                    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
                    "---:|---:|\n");
  const int64_t rsizes[] = {1000, 1000000, 10000000};
  for (size_t k = 0; k < MS__ARRAY_SIZE(rsizes) && rsizes[k] <= max_points; k++) {
    int64_t rows = rsizes[k];
    memstub_gen *g = make_stub(rows, spacing, NULL);
    if (memstub_gen_emit_data(g, dat, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
    memstub_gen_free(g);
    memstub_stub_data *d;
    if (memstub_stub_data_open(dat, &d, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
    int runs = rows <= 1000 ? small_runs : 1;
    size_t n = (size_t)d->stub.numdata, all = n * (size_t)runs, at = 0;
    int64_t *late = malloc(all * 8), *wake = malloc(all * 8), *work = malloc(all * 8);
    if (!late || !wake || !work) return fprintf(stderr, "bench_large: out of memory\n"), 2;
    double rq = 0, dur = 0;
    int64_t faulted = 0, nfaults = 0;
    memstub_replay_options o;
    memstub_replay_options_init(&o);
    o.measure = MEMSTUB_MEASURE_TRACE | (faults ? MEMSTUB_MEASURE_FAULTS : 0);
    int64_t bytes = memstub_replay_measure_bytes(&d->stub, &o);
    for (int r = 0; r < runs; r++) {
      memstub_replay *rp;
      if (memstub_replay_run(&d->stub, &o, &rp, &err) < 0)
        return fprintf(stderr, "bench_large: %s\n", err.msg), 2;
      for (size_t i = 0; i < n; i++, at++) {
        const memstub_replay_record *x = &rp->rec[i];
        late[at] = x->end_ns - x->target_ns;
        wake[at] = x->start_ns - x->target_ns;
        work[at] = x->end_ns - x->start_ns;
        faulted += x->faults_end > x->faults_start;
        nfaults += x->faults_end - x->faults_start;
      }
      if (rp->info.run_delay_ns >= 0) rq += (double)rp->info.run_delay_ns;
      dur += (double)rp->info.duration_ns;
      if (runs > 10 && (r + 1) % (runs / 10) != 0) {
        memstub_replay_free(rp);
        continue;
      }
      fprintf(stderr, "bench_large: %lld rows, replay %d/%d: %.2f s\n", (long long)rows, r + 1,
              runs, (double)rp->info.duration_ns / 1e9);
      memstub_replay_free(rp);
    }
    if (faults)
      fprintf(stderr, "bench_large: %lld rows: %lld of %zu points took a minor fault in their work "
                      "(%lld faults)\n",
              (long long)rows, (long long)faulted, all, (long long)nfaults);
    size_t over = 0;
    for (size_t i = 0; i < all; i++) over += late[i] > 100000;
    qsort(late, all, 8, cmp_i64);
    qsort(wake, all, 8, cmp_i64);
    qsort(work, all, 8, cmp_i64);
    APPEND(rep, roff,
           "| %lld | %zu | %d | %.1f | %lld | %.1f | %.1f | %.1f | %.1f | %.2f | %.1f | %.1f | "
           "%.2f | %.2f | %.2f | %.1f | %.1f |\n",
           (long long)rows, n, runs, (double)bytes / 1048576.0, (long long)(bytes / (int64_t)n),
           quant(late, all, 0.5) / 1e3, quant(late, all, 0.99) / 1e3,
           quant(late, all, 0.999) / 1e3, late[all - 1] / 1e3, 100.0 * (double)over / (double)all,
           quant(wake, all, 0.5) / 1e3, quant(wake, all, 0.99) / 1e3, quant(work, all, 0.5) / 1e3,
           quant(work, all, 0.99) / 1e3, quant(work, all, 0.999) / 1e3, work[all - 1] / 1e3,
           dur > 0 ? 100.0 * rq / dur : 0.0);
    free(late);
    free(wake);
    free(work);
    memstub_stub_data_free(d);
  }
  unlink(dat);
  rmdir(dir);
  load(load2, sizeof load2);

  struct utsname u;
  uname(&u);
  time_t now = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  ms__afile af;
  if (ms__afile_open(&af, out, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
  fprintf(af.f,
          "# Large stubs: build per data form, replay lateness per point\n\n"
          "Produced by `build/bench/bench_large --max-points %lld --spacing %lld --small-runs %d%s` "
          "on %s: %s, "
          "%ld cores, Linux %s; load average (1, 5, 15 min) %s at the start, %s after the "
          "builds, %s at the end. Synthetic component-like traces (traces/synth.h), one row "
          "every %lld ns at every size.\n\n"
          "## memstub build, per data form\n\n"
          "Wall time of `memstub build HEADER` (listing, compact) or `memstub build --data FILE` "
          "(data), one run each, including the program's `--check` (which decodes a compact "
          "header, or reads and validates the data file), and the peak resident memory of "
          "memstub and its children (`/usr/bin/time -f %%M`).\n\n%s\n"
          "## gen into a data file\n\n"
          "*read + normalise*: memstub_trace_read of the CSV and memstub_gen_build (no "
          "profile); *write data file*: memstub_gen_emit_data (atomic: fsync and rename); "
          "*points/s* = points / both; *map + validate*: memstub_stub_data_open (read "
          "into memory of its own, every checksum).\n\n%s\n"
          "## Replay lateness per point\n\n"
          "The stub read from its data file, replayed with deadline timing (margin model) "
          "and --measure's records, which are reserved and written before the replay. Over "
          "every point: *late* = end of its work - its deadline; *wake late* = start of its "
          "work - its deadline; *work* = its stack and heap work; *run-queue wait*: how long "
          "the replay thread waited for a CPU in all, as a share of the replay's duration (a "
          "busy host).\n\n%s",
          (long long)max_points, (long long)spacing, small_runs,
          listing_1m ? " --listing-1m" : replay_only ? " --replay-only" : "", date,
          ms__prim_cpu_model(), sysconf(_SC_NPROCESSORS_ONLN), u.release, load0, load1, load2,
          (long long)spacing, bld, gd, rep);
  if (ms__afile_commit(&af, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
  fputs(bld, stdout);
  fputs(gd, stdout);
  fputs(rep, stdout);
  return 0;
}
