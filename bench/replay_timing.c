/* bench_replay_timing: how well the replay keeps time, row by row.
 *
 * Replays each trace RUNS times in each waiting scheme, interleaved (run r of
 * every scheme and trace, then run r + 1) so that machine noise falls on all
 * alike, measured as `memstub replay --measure` does (MEMSTUB_MEASURE_TRACE).
 * Reports per row of the original trace: the error (replayed minus original
 * time_ns) p50/p99/max of its absolute value and the share of rows late by
 * more than 10 us, overall and by the row's wait (under 1 ms, 1-10 ms,
 * 10-100 ms, over 100 ms); the total duration error; the late rows by cause
 * (memstub_compare_late_why, as memstub compare gives them: woke late, work
 * longer than predicted, thread not running, behind the rows before it); and the replay thread's CPU time as a share of the replay's
 * duration; and the error by kind of row (what the original's row changed:
 * stack, heap, mapped, touch, idle; memstub_compare_row_kind). Writes
 * Markdown to bench/results/replay-timing.md (or -o FILE).
 *
 * Schemes: the old fixed margin and the model margin with re-aiming, both on
 * the stub compensated by the profile's static cost model (memstub gen
 * --calibration P), and the online cost model (memstub gen --calibration P
 * --timing online: the replay learns each class of row's work and starts it
 * that much early), with and without --slice; --all adds the schemes of the
 * earlier rounds (one sleep, adaptive, the static model with --slice).
 *
 *   bench_replay_timing [--runs N] [--trace CSV]... [--profile P] [--no-usleep]
 *                       [--all] [--reaims NS,NS,...] [-o FILE]
 *
 * Traces: the demo's 4.8 s sample, listing1 and nonlifo, and a built-in idle
 * trace (24 rows, waits of 50 to 400 ms, 4.3 s), unless --trace is given.
 * --profile compensates the stubs with a calibration profile, as the demo
 * does. --reaims adds model schemes with those re-aim distances. Run by hand;
 * never part of the test suite. */
#include <errno.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "memstub/calib.h"
#include "memstub/compare.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "ms_common.h"
#include "prim.h"

#define MAX_SCHEMES 12
#define MAX_TRACES 8
#define BUCKETS 4
#define LATE_NS 10000

static const char *bucket_name[BUCKETS] = {"< 1 ms", "1-10 ms", "10-100 ms", "> 100 ms"};

static int bucket_of(int64_t wait) {
  return wait < 1000000 ? 0 : wait < 10000000 ? 1 : wait < 100000000 ? 2 : 3;
}

typedef struct vec {
  int64_t *v;
  size_t n, cap;
} vec;

static void push(vec *a, int64_t x) {
  if (a->n == a->cap) {
    a->cap = a->cap ? 2 * a->cap : 1024;
    a->v = realloc(a->v, a->cap * sizeof *a->v);
    if (!a->v) {
      fprintf(stderr, "bench_replay_timing: out of memory\n");
      exit(2);
    }
  }
  a->v[a->n++] = x;
}

typedef struct cell {  // one scheme on one trace (or all traces: the pooled cell)
  vec abs;             // |error| per row, all runs
  size_t late;         // rows late by > LATE_NS
  vec host_abs;        // |error| of rows the host did not delay
  size_t cause[MEMSTUB_LATE_CAUSES];
  vec total;    // total duration error per run
  vec cpu_ppm;  // replay thread CPU per run, parts per million of the duration
  vec off_cpu;  // run-queue wait per run, ns
  vec bucket_abs[BUCKETS];
  size_t bucket_late[BUCKETS];
  vec kind_abs[MEMSTUB_ROW_KINDS];  // by what the original's row changed
  size_t kind_late[MEMSTUB_ROW_KINDS], kind_cause[MEMSTUB_ROW_KINDS][MEMSTUB_LATE_CAUSES];
  int64_t sleeps, runs;
} cell;

typedef struct scheme {
  char label[96];
  int timing;
  int64_t margin, reaim;
  int64_t slice;  // sched_slice_ns
  int online;     // the online cost model: a stub made with --timing online (or, without a
                  //   profile, the uncompensated stub with MEMSTUB_COST_ONLINE)
} scheme;

typedef struct input {
  char name[256];
  memstub_trace *t;
  memstub_gen *g;
  memstub_gen *gon;  // with a profile: the same trace generated for online timing
} input;

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

// Nearest rank, as memstub compare: the smallest value at least q of them do not exceed.
static int64_t quantile(vec *a, double q) {
  if (!a->n) return 0;
  qsort(a->v, a->n, sizeof *a->v, cmp64);
  size_t k = (size_t)(q * (double)a->n + 0.999999);
  return a->v[k ? k - 1 : 0];
}

static void loadavg(char *buf, size_t len) {
  FILE *f = fopen("/proc/loadavg", "r");
  snprintf(buf, len, "unknown");
  if (!f) return;
  if (fgets(buf, (int)len, f)) buf[strcspn(buf, "\n")] = '\0';
  fclose(f);
}

static const char *us(char *buf, int64_t ns) {
  snprintf(buf, 32, "%.1f", (double)ns / 1000.0);
  return buf;
}

// A mostly idle component: 24 rows 50 to 400 ms apart (4.3 s), small heap and stack steps.
static memstub_trace *idle_trace(void) {
  static const int ms[] = {50,  400, 120, 300, 80, 250, 60,  350, 150, 200, 100, 190,
                           110, 280, 70,  330, 90, 170, 230, 140, 260, 130, 240, 0};
  memstub_trace *t = memstub_trace_create();
  int64_t time = 0;
  for (int i = 0; t && i < 24; i++) {
    // Heap in the arena (the moves to and from mmap are the cost model's
    // business, not the waiting's).
    // Every fourth row changes nothing (an idle row), every other one the stack only.
    int64_t stack = (i % 3) * 4096, heap = 1000 + (i % 5) * 3000;
    if (i % 4 == 3 && t->n) stack = t->pts[t->n - 1].stack_bytes, heap = t->pts[t->n - 1].heap_bytes;
    else if (i % 2 && t->n) heap = t->pts[t->n - 1].heap_bytes;
    if (memstub_trace_append(t, time, stack, heap) < 0) return NULL;
    time += (int64_t)ms[i] * 1000000;
  }
  if (t) memstub_trace_set_meta(t, "source", "idle: 24 rows, waits of 50 to 400 ms");
  return t;
}

int main(int argc, char **argv) {
  const char *out = MEMSTUB_SOURCE_DIR "/bench/results/replay-timing.md";
  const char *profile_path = NULL;
  const char *trace_paths[MAX_TRACES];
  int ntrace_paths = 0, runs = 5, usleep_too = 1, all_schemes = 0;
  char *reaims = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc && ntrace_paths < MAX_TRACES - 1)
      trace_paths[ntrace_paths++] = argv[++i];
    else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc)
      profile_path = argv[++i];
    else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
      out = argv[++i];
    else if (strcmp(argv[i], "--reaims") == 0 && i + 1 < argc)
      reaims = argv[++i];
    else if (strcmp(argv[i], "--no-usleep") == 0)
      usleep_too = 0;
    else if (strcmp(argv[i], "--all") == 0)
      all_schemes = 1;
    else {
      fprintf(stderr,
              "usage: %s [--runs N] [--trace CSV]... [--profile P] [--no-usleep] [--all] "
              "[--reaims NS,...] [-o FILE]\n",
              argv[0]);
      return 2;
    }
  }
  if (runs < 1 || runs > 1000) {
    fprintf(stderr, "%s: --runs must be 1..1000\n", argv[0]);
    return 2;
  }
  int builtin = ntrace_paths == 0;
  if (builtin) {
    trace_paths[ntrace_paths++] = MEMSTUB_SOURCE_DIR "/traces/samples/synthetic-4.8s.csv";
    trace_paths[ntrace_paths++] = MEMSTUB_SOURCE_DIR "/traces/samples/listing1.csv";
    trace_paths[ntrace_paths++] = MEMSTUB_SOURCE_DIR "/traces/samples/nonlifo.csv";
  }

  memstub_error err = {0};
  memstub_profile prof;
  memstub_gen_options go;
  memstub_gen_options_init(&go);
  if (profile_path) {
    if (memstub_profile_read(profile_path, &prof, &err) < 0) {
      fprintf(stderr, "%s: error: %s\n", argv[0], err.msg);
      return 2;
    }
    go.profile = &prof;
    go.profile_path = profile_path;
    go.timing = MEMSTUB_COMP_DEADLINE;
    go.measured = 1;
  }
  input in[MAX_TRACES];
  int nin = 0;
  for (int k = 0; k < ntrace_paths + builtin; k++) {
    input *x = &in[nin];
    memset(x, 0, sizeof *x);
    if (k < ntrace_paths) {
      snprintf(x->name, sizeof x->name, "%s",
               strrchr(trace_paths[k], '/') ? strrchr(trace_paths[k], '/') + 1 : trace_paths[k]);
      if (memstub_trace_read(trace_paths[k], &x->t, &err) < 0) {
        fprintf(stderr, "%s: error: %s\n", argv[0], err.msg);
        return 2;
      }
    } else {
      snprintf(x->name, sizeof x->name, "idle (built in: 24 rows, waits 50-400 ms)");
      x->t = idle_trace();
    }
    go.source = x->name;
    if (!x->t || memstub_gen_build(x->t, &go, &x->g, &err) < 0) {
      fprintf(stderr, "%s: error: %s: %s\n", argv[0], x->name, err.msg);
      return 2;
    }
    if (profile_path) {
      memstub_gen_options gon = go;
      gon.timing = MEMSTUB_TIMING_ONLINE;
      if (memstub_gen_build(x->t, &gon, &x->gon, &err) < 0) {
        fprintf(stderr, "%s: error: %s: %s\n", argv[0], x->name, err.msg);
        return 2;
      }
    }
    nin++;
  }

  scheme sc[MAX_SCHEMES];
  int nsc = 0;
  sc[nsc++] = (scheme){"old: fixed margin 100 us, one sleep", MEMSTUB_TIMING_DEADLINE,
                       MEMSTUB_MARGIN_DEFAULT, 0, 0, 0};
  if (all_schemes)
    sc[nsc++] = (scheme){"model margin, one sleep (no re-aim)", MEMSTUB_TIMING_DEADLINE,
                         MEMSTUB_MARGIN_MODEL, -1, 0, 0};
  sc[nsc++] = (scheme){"model margin, re-aim 1 ms (static cost)", MEMSTUB_TIMING_DEADLINE,
                       MEMSTUB_MARGIN_MODEL, 0, 0, 0};
  if (all_schemes) {
    sc[nsc++] = (scheme){"adaptive margin, re-aim 1 ms", MEMSTUB_TIMING_DEADLINE,
                         MEMSTUB_MARGIN_ADAPTIVE, 0, 0, 0};
    sc[nsc++] = (scheme){"re-aim 1 ms + --slice 100 us", MEMSTUB_TIMING_DEADLINE,
                         MEMSTUB_MARGIN_MODEL, 0, 100000, 0};
  }
  sc[nsc++] = (scheme){"new: online cost model, re-aim 1 ms", MEMSTUB_TIMING_DEADLINE,
                       MEMSTUB_MARGIN_MODEL, 0, 0, 1};
  sc[nsc++] = (scheme){"new: online cost model + --slice 100 us", MEMSTUB_TIMING_DEADLINE,
                       MEMSTUB_MARGIN_MODEL, 0, 100000, 1};
  char *rcopy = reaims ? ms__strdup(reaims) : NULL;
  for (char *tok = rcopy ? strtok(rcopy, ",") : NULL; tok && nsc < MAX_SCHEMES - 1;
       tok = strtok(NULL, ",")) {
    sc[nsc] = (scheme){"", MEMSTUB_TIMING_DEADLINE, MEMSTUB_MARGIN_MODEL, atoll(tok), 0, 0};
    snprintf(sc[nsc].label, sizeof sc[nsc].label, "model margin, re-aim %lld us",
             (long long)(sc[nsc].reaim / 1000));
    nsc++;
  }
  if (usleep_too)
    sc[nsc++] = (scheme){"usleep (the paper's relative sleeps)", MEMSTUB_TIMING_USLEEP,
                         MEMSTUB_MARGIN_DEFAULT, 0, 0, 0};

  // cells[s][k]: scheme s on trace k; cells[s][nin]: all traces pooled.
  static cell cells[MAX_SCHEMES][MAX_TRACES + 1];
  char load0[128], load1[128];
  loadavg(load0, sizeof load0);
  time_t started = time(NULL);
  for (int r = 0; r < runs; r++) {
    for (int s = 0; s < nsc; s++) {
      for (int k = 0; k < nin; k++) {
        const struct memstub_stub *st =
            sc[s].online && in[k].gon ? &in[k].gon->stub : &in[k].g->stub;
        const memstub_trace *orig = in[k].t;
        memstub_replay_options o;
        memstub_replay_options_init(&o);
        o.timing = sc[s].timing;
        o.margin_ns = sc[s].margin;
        o.reaim_ns = sc[s].reaim;
        o.sched_slice_ns = sc[s].slice;
        o.cost_model = sc[s].online ? MEMSTUB_COST_ONLINE : MEMSTUB_COST_OFF;
        o.measure = MEMSTUB_MEASURE_TRACE;
        memstub_replay *rp;
        memstub_trace *rt;
        if (memstub_replay_run(st, &o, &rp, &err) < 0 || memstub_replay_trace(rp, &rt, &err) < 0) {
          fprintf(stderr, "%s: error: %s\n", argv[0], err.msg);
          return 2;
        }
        int cp = memstub_trace_column(rt, "point"), ct = memstub_trace_column(rt, "target_time_ns"),
            cw = memstub_trace_column(rt, "wake_late_ns"), ck = memstub_trace_column(rt, "work_ns"),
            co = memstub_trace_column(rt, "off_cpu_ns");
        cell *cs[2] = {&cells[s][k], &cells[s][nin]};
        int64_t first = -1, last = -1;
        for (size_t j = 0; j < rt->n; j++) {
          const int64_t *x = memstub_trace_extra_row(rt, j);
          int64_t p = x[cp];
          if (p < 0 || (size_t)p >= orig->n) continue;
          int64_t e = rt->pts[j].time_ns - orig->pts[p].time_ns;
          if (first < 0) first = (int64_t)j;
          last = (int64_t)j;
          if (p == 0) continue;  // row 0 has no wait
          int64_t wait = orig->pts[p].time_ns - orig->pts[p - 1].time_ns;
          int b = bucket_of(wait);
          memstub_row_kind kind = memstub_compare_row_kind(orig, (size_t)p);
          int64_t a = e < 0 ? -e : e;
          int host = 0;
          memstub_late_cause cause = MEMSTUB_LATE_UNKNOWN;
          if (e > LATE_NS) {
            // As memstub compare classifies them: a row that began late because
            // the row before it ended past this one's deadline is behind.
            int64_t behind = j > 0 ? rt->pts[j - 1].time_ns - x[ct] : 0;
            cause = memstub_compare_late_why(e, x[cw], x[ck] - (orig->pts[p].time_ns - x[ct]),
                                             co >= 0 ? x[co] : -1, behind > 0 ? behind : 0);
            host = cause == MEMSTUB_LATE_OFF_CPU;
          }
          for (int z = 0; z < 2; z++) {
            push(&cs[z]->abs, a);
            push(&cs[z]->bucket_abs[b], a);
            push(&cs[z]->kind_abs[kind], a);
            if (!host) push(&cs[z]->host_abs, a);
            if (e > LATE_NS) {
              cs[z]->late++;
              cs[z]->bucket_late[b]++;
              cs[z]->kind_late[kind]++;
              cs[z]->kind_cause[kind][cause]++;
              cs[z]->cause[cause]++;
            }
          }
        }
        int64_t total = 0;
        if (first >= 0) {
          int64_t p0 = memstub_trace_extra_row(rt, (size_t)first)[cp];
          int64_t p1 = memstub_trace_extra_row(rt, (size_t)last)[cp];
          total = (rt->pts[last].time_ns - rt->pts[first].time_ns) -
                  (orig->pts[p1].time_ns - orig->pts[p0].time_ns);
        }
        int64_t ppm = rp->info.cpu_ns >= 0 && rp->info.duration_ns > 0
                          ? (int64_t)(1e6 * (double)rp->info.cpu_ns / (double)rp->info.duration_ns)
                          : -1;
        for (int z = 0; z < 2; z++) {
          push(&cs[z]->total, total);
          push(&cs[z]->cpu_ppm, ppm);
          push(&cs[z]->off_cpu, rp->info.run_delay_ns);
          cs[z]->sleeps += rp->info.sleeps;
          cs[z]->runs++;
        }
        fprintf(stderr, "\r%s: run %d/%d, %-42.42s %-24.24s total %+9.1f us", argv[0], r + 1, runs,
                sc[s].label, in[k].name, (double)total / 1000.0);
        memstub_trace_free(rt);
        memstub_replay_free(rp);
      }
    }
  }
  fputc('\n', stderr);
  loadavg(load1, sizeof load1);

  ms__afile af;
  if (ms__afile_open(&af, out, &err) < 0) {
    fprintf(stderr, "%s: error: %s\n", argv[0], err.msg);
    return 2;
  }
  FILE *f = af.f;
  struct utsname u;
  uname(&u);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&started));
  char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
  fprintf(f, "# Replay timing\n\n");
  fprintf(f,
          "Written by `bench_replay_timing` (bench/replay_timing.c); the numbers below come\n"
          "from the run described here and nowhere else.\n\n");
  fprintf(f, "- Command: `");
  for (int i = 0; i < argc; i++) fprintf(f, "%s%s", i ? " " : "", argv[i]);
  fprintf(f, "`\n- Date: %s\n- Host: %s, %ld CPUs online, %s %s, glibc %s, %s\n", date,
          ms__prim_cpu_model(), sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release,
          gnu_get_libc_version(), "compiler " __VERSION__);
  fprintf(f, "- /proc/loadavg: `%s` before, `%s` after\n", load0, load1);
  fprintf(f, "- Compensation: %s\n", profile_path ? profile_path : "none (no profile)");
  fprintf(f,
          "- Runs: %d per scheme and trace, interleaved; measured as `memstub replay "
          "--measure` (MEMSTUB_MEASURE_TRACE)\n- Traces:",
          runs);
  for (int k = 0; k < nin; k++)
    fprintf(f, " %s (%zu rows, %.3f s)%s", in[k].name, in[k].t->n,
            (double)in[k].g->stub.duration_ns / 1e9, k + 1 < nin ? ";" : "\n\n");
  fprintf(f,
          "Error per row: replayed minus original `time_ns` (what `memstub compare` "
          "measures), over every row\n(but row 0) of every run; p50, p99 and max of its "
          "absolute value, in us. Late: rows late by more\nthan 10 us. Total: replay "
          "duration minus the trace's, median (largest) over the runs, us. CPU: the\n"
          "replay thread's CPU time over the replay's duration, median (largest) over the "
          "runs. Causes of\nthe late rows (`memstub_compare_late_why`, as `memstub compare` "
          "gives them): woke late / work\nlonger than predicted / thread not running (waited "
          "for a CPU at least half of its lateness) /\nbehind (the rows before it ran over "
          "its deadline). \"p99 without host\": the p99 of the rows\nthe host did not "
          "delay.\n\n");
  for (int k = 0; k <= nin; k++) {
    fprintf(f, "## %s\n\n", k < nin ? in[k].name : "All traces pooled, by wait length");
    if (k == nin) {
      fprintf(f, "| scheme |");
      for (int b = 0; b < BUCKETS; b++)
        fprintf(f, " %s: rows | p50 | p99 | max | late |", bucket_name[b]);
      fprintf(f, "\n|---|");
      for (int b = 0; b < BUCKETS; b++) fprintf(f, "---:|---:|---:|---:|---:|");
      fputc('\n', f);
      for (int s = 0; s < nsc; s++) {
        cell *c = &cells[s][k];
        fprintf(f, "| %s |", sc[s].label);
        for (int b = 0; b < BUCKETS; b++) {
          vec *v = &c->bucket_abs[b];
          if (!v->n) {
            fprintf(f, " 0 | | | | |");
            continue;
          }
          fprintf(f, " %zu | %s | %s | %s | %.2f%% |", v->n, us(b1, quantile(v, 0.5)),
                  us(b2, quantile(v, 0.99)), us(b3, quantile(v, 1.0)),
                  100.0 * (double)c->bucket_late[b] / (double)v->n);
        }
        fputc('\n', f);
      }
      fputc('\n', f);
      fprintf(f, "By kind of row (what the original's row changed; late: rows late by > 10 us, "
                 "and their causes woke late / work / not running / behind):\n\n| scheme |");
      for (int q = 0; q < MEMSTUB_ROW_KINDS; q++)
        fprintf(f, " %s: rows | p50 | p99 | max | late |", memstub_row_kind_name(q));
      fprintf(f, "\n|---|");
      for (int q = 0; q < MEMSTUB_ROW_KINDS; q++) fprintf(f, "---:|---:|---:|---:|---|");
      fputc('\n', f);
      for (int s = 0; s < nsc; s++) {
        cell *c = &cells[s][k];
        fprintf(f, "| %s |", sc[s].label);
        for (int q = 0; q < MEMSTUB_ROW_KINDS; q++) {
          vec *v = &c->kind_abs[q];
          if (!v->n) {
            fprintf(f, " 0 | | | | |");
            continue;
          }
          fprintf(f, " %zu | %s | %s | %s | %.2f%% (%zu/%zu/%zu/%zu) |", v->n,
                  us(b1, quantile(v, 0.5)), us(b2, quantile(v, 0.99)), us(b3, quantile(v, 1.0)),
                  100.0 * (double)c->kind_late[q] / (double)v->n,
                  c->kind_cause[q][MEMSTUB_LATE_WAKE], c->kind_cause[q][MEMSTUB_LATE_WORK],
                  c->kind_cause[q][MEMSTUB_LATE_OFF_CPU], c->kind_cause[q][MEMSTUB_LATE_BEHIND]);
        }
        fputc('\n', f);
      }
      fputc('\n', f);
    }
    fprintf(
        f,
        "| scheme | rows | p50 | p99 | max | late > 10 us | total | CPU | sleeps/run | late: woke "
        "late / work / not running / behind | p99 without host | run-queue wait/run (ms) |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n");
    for (int s = 0; s < nsc; s++) {
      cell *c = &cells[s][k];
      int64_t tmax = 0;
      for (size_t i = 0; i < c->total.n; i++)
        if ((c->total.v[i] < 0 ? -c->total.v[i] : c->total.v[i]) > (tmax < 0 ? -tmax : tmax))
          tmax = c->total.v[i];
      fprintf(f,
              "| %s | %zu | %s | %s | %s | %zu (%.2f%%) | %s (%s) | %.2f%% (%.2f%%) | %lld | %zu / "
              "%zu / %zu / %zu | %s | %.1f |\n",
              sc[s].label, c->abs.n, us(b1, quantile(&c->abs, 0.5)),
              us(b2, quantile(&c->abs, 0.99)), us(b3, quantile(&c->abs, 1.0)), c->late,
              c->abs.n ? 100.0 * (double)c->late / (double)c->abs.n : 0.0,
              us(b4, quantile(&c->total, 0.5)), us(b5, tmax),
              (double)quantile(&c->cpu_ppm, 0.5) / 1e4, (double)quantile(&c->cpu_ppm, 1.0) / 1e4,
              c->runs ? (long long)(c->sleeps / c->runs) : 0LL, c->cause[MEMSTUB_LATE_WAKE],
              c->cause[MEMSTUB_LATE_WORK], c->cause[MEMSTUB_LATE_OFF_CPU],
              c->cause[MEMSTUB_LATE_BEHIND], us(b6, quantile(&c->host_abs, 0.99)), (double)quantile(&c->off_cpu, 0.5) / 1e6);
    }
    fputc('\n', f);
  }
  fprintf(f, "docs/runtime.md (\"Timing\") explains the schemes and reads these figures.\n\n");
  fprintf(f,
          "The paper reports 4.8000444 s measured for a 4.8 s simulation data file\n"
          "(Trapp, Meyer & Facchi 2011, Section 5.3): 44.4 us of total error in one run.\n");
  if (ms__afile_commit(&af, &err) < 0) {
    fprintf(stderr, "%s: error: %s\n", argv[0], err.msg);
    return 2;
  }
  fprintf(stderr, "%s: wrote %s\n", argv[0], out);
  free(rcopy);
  for (int k = 0; k < nin; k++) {
    memstub_gen_free(in[k].g);
    memstub_gen_free(in[k].gon);
    memstub_trace_free(in[k].t);
  }
  return 0;
}
