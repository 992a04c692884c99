// Generator throughput: read a trace, build the stub data, emit the header
// through m4, and compile the header, at 10k, 100k and 1M rows.
//
//   build/bench/bench_gen [--repeat R] [--out bench/results/gen.md]
//
// Each size is repeated R times (default 5; 3 for 1M rows); the table gives
// the median and the min-max spread. Rows come from the component-like
// synthetic generator (traces/synth.h), written to a temporary CSV first.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memstub/gen.h"
#include "ms_common.h"
#include "prim.h"
#include "synth.h"

typedef struct stats {
  double v[16];
  int n;
} stats;

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(stats *s) {
  qsort(s->v, (size_t)s->n, sizeof s->v[0], cmp_d);
  return s->n % 2 ? s->v[s->n / 2] : (s->v[s->n / 2 - 1] + s->v[s->n / 2]) / 2;
}
static double smin(stats *s) { return s->v[0]; }  // after median()
static double smax(stats *s) { return s->v[s->n - 1]; }

static double now_s(void) { return (double)ms__prim_now_ns() / 1e9; }

static int compile(const char *cc, const char *dir, const char *header) {
  char src[4096], obj[4096];
  snprintf(src, sizeof src, "%s/tu.c", dir);
  snprintf(obj, sizeof obj, "%s/tu.o", dir);
  FILE *f = fopen(src, "w");
  if (!f) return -1;
  fprintf(f, "#include \"%s\"\nconst struct memstub_stub *bench_stub(void) { return &memStub; }\n",
          header);
  fclose(f);
  pid_t pid = fork();
  if (pid == 0) {
    execlp(cc, cc, "-std=c11", "-O2", "-c", src, "-o", obj, (char *)NULL);
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  int repeat = 5;
  const char *out = MEMSTUB_SOURCE_DIR "/bench/results/gen.md";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
      repeat = atoi(argv[++i]);
    else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
      out = argv[++i];
    else {
      fprintf(stderr, "usage: bench_gen [--repeat R] [--out FILE]\n");
      return 2;
    }
  }
  if (repeat < 1 || repeat > 16) repeat = 5;
  const char *cc = getenv("CC");
  if (!cc || !*cc) cc = MEMSTUB_CC;
  char dir[] = "/tmp/memstub-bench-gen-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char csv[4096], hdr[4096];
  snprintf(csv, sizeof csv, "%s/trace.csv", dir);
  snprintf(hdr, sizeof hdr, "%s/memuse.h", dir);

  const int64_t sizes[] = {10000, 100000, 1000000};
  char table[8192];
  size_t off = 0;
  off += (size_t)snprintf(table + off, sizeof table - off,
                          "| rows | points | read (s) | build (s) | emit via m4 (s) | total (s) | "
                          "points/s (total) | header (MB) | compile -O2 (s) |\n"
                          "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    ms__synth_params p = {.kind = MS__SYNTH_PAPER, .seed = 42, .rows = sizes[k],
                          .duration_ns = sizes[k] * 2000000, .max_stack = 65536,
                          .max_heap = 1 << 20};
    memstub_trace *t;
    memstub_error err = {0};
    if (ms__synth(&p, &t) < 0 || memstub_trace_write(t, csv, &err) < 0) {
      fprintf(stderr, "bench_gen: cannot make the trace: %s\n", err.msg);
      return 2;
    }
    memstub_trace_free(t);
    int reps = sizes[k] >= 1000000 && repeat > 3 ? 3 : repeat;
    stats rd = {0}, bd = {0}, em = {0}, tot = {0}, cc_s = {0};
    int64_t points = 0;
    long hdr_bytes = 0;
    for (int r = 0; r < reps; r++) {
      double t0 = now_s();
      if (memstub_trace_read(csv, &t, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
      double t1 = now_s();
      memstub_gen_options o;
      memstub_gen_options_init(&o);
      o.source = "bench";
      memstub_gen *g;
      if (memstub_gen_build(t, &o, &g, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
      double t2 = now_s();
      if (memstub_gen_emit(g, hdr, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
      double t3 = now_s();
      points = g->stub.numdata;
      memstub_gen_free(g);
      memstub_trace_free(t);
      rd.v[rd.n++] = t1 - t0;
      bd.v[bd.n++] = t2 - t1;
      em.v[em.n++] = t3 - t2;
      tot.v[tot.n++] = t3 - t0;
      double c0 = now_s();
      if (compile(cc, dir, hdr) < 0) return fprintf(stderr, "bench_gen: %s failed\n", cc), 2;
      cc_s.v[cc_s.n++] = now_s() - c0;
      FILE *hf = fopen(hdr, "r");
      if (hf) {
        fseek(hf, 0, SEEK_END);
        hdr_bytes = ftell(hf);
        fclose(hf);
      }
      fprintf(stderr, "bench_gen: %lld rows, run %d/%d: total %.3f s, compile %.2f s\n",
              (long long)sizes[k], r + 1, reps, t3 - t0, cc_s.v[cc_s.n - 1]);
    }
    double mt = median(&tot);
    double mr = median(&rd), mb = median(&bd), me = median(&em), mc = median(&cc_s);
    off += (size_t)snprintf(
        table + off, sizeof table - off,
        "| %lld | %lld | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) "
        "| %.0f | %.1f | %.2f (%.2f-%.2f) |\n",
        (long long)sizes[k], (long long)points, mr, smin(&rd), smax(&rd), mb, smin(&bd),
        smax(&bd), me, smin(&em), smax(&em), mt, smin(&tot), smax(&tot), (double)points / mt,
        (double)hdr_bytes / 1e6, mc, smin(&cc_s), smax(&cc_s));
  }
  unlink(csv);
  unlink(hdr);
  char obj[4096];
  snprintf(obj, sizeof obj, "%s/tu.o", dir);
  unlink(obj);
  snprintf(obj, sizeof obj, "%s/tu.c", dir);
  unlink(obj);
  rmdir(dir);

  struct utsname u;
  uname(&u);
  time_t now = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  ms__afile af;
  memstub_error err = {0};
  if (ms__afile_open(&af, out, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
  fprintf(af.f,
          "# Generator throughput\n\n"
          "Produced by `build/bench/bench_gen --repeat %d` on %s: %s, %ld cores, Linux %s, "
          "compiler `%s`.\n\n"
          "Each size is run %d times (at most 3 for 1M rows); cells give the median and, in "
          "brackets, the min-max. *read* parses the CSV, *build* computes deltas, transforms and "
          "stack normalisation, *emit* runs GNU m4 on `generator/memuse.h.m4` and writes the "
          "header atomically; *points/s* is stub points over the total. *compile* is "
          "`%s -std=c11 -O2 -c` on a file that includes the header.\n\n%s",
          repeat, date, ms__prim_cpu_model(), sysconf(_SC_NPROCESSORS_ONLN), u.release, cc, repeat,
          cc, table);
  if (ms__afile_commit(&af, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
  fputs(table, stdout);
  return 0;
}
