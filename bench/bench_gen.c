// Generator throughput and stub build cost, by size and by header form.
//
//   build/bench/bench_gen [--repeat R] [--max-rows N] [--out bench/results/gen.md]
//
// For 10k, 100k and 1M rows (and 10M with --max-rows 10000000) of the
// component-like synthetic trace (traces/synth.h, written to a temporary CSV):
//
//  1. gen, end to end and per stage: read the CSV; normalise
//     (memstub_gen_build without a profile); compensate (with
//     bench/results/host.profile: the time of memstub_gen_build with the
//     profile less the time without); format the points in C; run m4 on the
//     template with the points included; put the header in place (fsync,
//     rename). points/s is stub points over read + build with the profile +
//     emit, the default form (auto).
//  2. build, per form (listing, compact): `memstub build` of the header under
//     /usr/bin/time, its wall time and the peak resident memory of it and its
//     children (the compiler's cc1 is by far the largest).
//
// Each cell is the median over the repeats with the min-max in brackets;
// fewer repeats at 1M rows and beyond (the table says how many). The listing
// form is built at most once at 1M rows and never at 10M (minutes and GiB).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memstub/calib.h"
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
static void add(stats *s, double v) {
  if (s->n < 16) s->v[s->n++] = v;
}
static double median(stats *s) {
  qsort(s->v, (size_t)s->n, sizeof s->v[0], cmp_d);
  return s->n % 2 ? s->v[s->n / 2] : (s->v[s->n / 2 - 1] + s->v[s->n / 2]) / 2;
}
// "median (min-max)" with the given format for each figure.
static const char *cell(stats *s, const char *fmt, char *buf, size_t cap) {
  if (s->n == 0) return "-";
  char f[64];
  snprintf(f, sizeof f, "%s (%s-%s)", fmt, fmt, fmt);
  double m = median(s);
  snprintf(buf, cap, f, m, s->v[0], s->v[s->n - 1]);
  return buf;
}

static double now_s(void) { return (double)ms__prim_now_ns() / 1e9; }

/* memstub build HEADER -o PROG under /usr/bin/time: wall seconds and peak
 * resident KiB. 0 or -1. */
static int build(const char *dir, const char *header, double *wall, double *kib) {
  char out[4096], tf[4096];
  snprintf(out, sizeof out, "%s/stub", dir);
  snprintf(tf, sizeof tf, "%s/time.txt", dir);
  double t0 = now_s();
  pid_t pid = fork();
  if (pid == 0) {
    execl("/usr/bin/time", "time", "-f", "%M", "-o", tf, MEMSTUB_EXE, "build", header, "-o", out,
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

#define APPEND(...) (off += (size_t)snprintf(gen + off, sizeof gen - off, __VA_ARGS__))
#define APPENDB(...) (boff += (size_t)snprintf(bld + boff, sizeof bld - boff, __VA_ARGS__))

int main(int argc, char **argv) {
  int repeat = 5;
  int64_t max_rows = 1000000;
  const char *out = MEMSTUB_SOURCE_DIR "/bench/results/gen.md";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
      repeat = atoi(argv[++i]);
    else if (strcmp(argv[i], "--max-rows") == 0 && i + 1 < argc)
      max_rows = atoll(argv[++i]);
    else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
      out = argv[++i];
    else {
      fprintf(stderr, "usage: bench_gen [--repeat R] [--max-rows N] [--out FILE]\n");
      return 2;
    }
  }
  if (repeat < 1 || repeat > 16) repeat = 5;
  memstub_error err = {0};
  memstub_profile prof;
  const char *prof_path = MEMSTUB_SOURCE_DIR "/bench/results/host.profile";
  char warn[512];
  int have_prof = memstub_profile_read(prof_path, &prof, &err) == 0 &&
                  memstub_profile_check(&prof, prof_path, warn, sizeof warn, &err) >= 0;
  if (!have_prof) fprintf(stderr, "bench_gen: no compensation measured: %s\n", err.msg);

  char dir[] = "/tmp/memstub-bench-gen-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char csv[4096], hdr[4096];
  snprintf(csv, sizeof csv, "%s/trace.csv", dir);
  snprintf(hdr, sizeof hdr, "%s/memuse.h", dir);
  char load0[64], load1[64];
  load(load0, sizeof load0);

  static char gen[16384], bld[16384];
  size_t off = 0, boff = 0;
  APPEND("| rows | points | runs | read (s) | normalise (s) | compensate (s) | format (s) | "
         "m4 (s) | fsync+rename (s) | total (s) | points/s | form | header (MB) |\n"
         "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
  APPENDB("| rows | points | form | runs | header (MB) | memstub build (s) | peak RSS (MiB) |\n"
          "|---:|---:|---|---:|---:|---:|---:|\n");
  const int64_t sizes[] = {10000, 100000, 1000000, 10000000};
  for (size_t k = 0; k < MS__ARRAY_SIZE(sizes) && sizes[k] <= max_rows; k++) {
    int64_t rows = sizes[k];
    ms__synth_params p = {.kind = MS__SYNTH_PAPER, .seed = 42, .rows = rows,
                          .duration_ns = rows * 2000000, .max_stack = 65536,
                          .max_heap = 1 << 20};
    memstub_trace *t;
    if (ms__synth(&p, &t) < 0 || memstub_trace_write(t, csv, &err) < 0) {
      fprintf(stderr, "bench_gen: cannot make the trace: %s\n", err.msg);
      return 2;
    }
    memstub_trace_free(t);
    int reps = rows >= 10000000 ? 1 : rows >= 1000000 && repeat > 3 ? 3 : repeat;
    stats rd = {0}, nm = {0}, cp = {0}, fm = {0}, m4 = {0}, sy = {0}, tot = {0}, pps = {0};
    int64_t points = 0;
    int form = 0;
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
      double comp = 0;
      if (have_prof) {
        memstub_gen_free(g);
        o.profile = &prof;
        o.profile_path = "host.profile";
        double c0 = now_s();
        if (memstub_gen_build(t, &o, &g, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
        double c1 = now_s();
        comp = (c1 - c0) - (t2 - t1);
        t2 = t1 + (c1 - c0);  // the build with the profile: normalise + compensate
      }
      memstub_gen_emit_report rep;
      double e0 = now_s();
      if (memstub_gen_emit_ex(g, hdr, NULL, &rep, &err) < 0)
        return fprintf(stderr, "%s\n", err.msg), 2;
      double t3 = now_s();
      points = g->stub.numdata;
      form = rep.format;
      memstub_gen_free(g);
      memstub_trace_free(t);
      double total = (t1 - t0) + (t2 - t1) + (t3 - e0);
      add(&rd, t1 - t0);
      add(&nm, (t2 - t1) - comp);
      add(&cp, comp);
      add(&fm, (double)rep.format_ns / 1e9);
      add(&m4, (double)rep.m4_ns / 1e9);
      add(&sy, (double)rep.sync_ns / 1e9);
      add(&tot, total);
      add(&pps, (double)points / total);
      fprintf(stderr, "bench_gen: %lld rows, gen run %d/%d: %.3f s\n", (long long)rows, r + 1,
              reps, total);
    }
    char b[9][96];
    APPEND("| %lld | %lld | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f |\n",
           (long long)rows, (long long)points, reps, cell(&rd, "%.3f", b[0], 96),
           cell(&nm, "%.3f", b[1], 96), have_prof ? cell(&cp, "%.3f", b[2], 96) : "-",
           cell(&fm, "%.3f", b[3], 96), cell(&m4, "%.3f", b[4], 96), cell(&sy, "%.3f", b[5], 96),
           cell(&tot, "%.3f", b[6], 96), cell(&pps, "%.0f", b[7], 96),
           form == MEMSTUB_GEN_FORMAT_COMPACT ? "compact" : "listing",
           (double)file_size(hdr) / 1e6);

    // Build cost per form, from one header each (no profile: the data is the same size).
    if (memstub_trace_read(csv, &t, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
    memstub_gen_options o;
    memstub_gen_options_init(&o);
    o.source = "bench";
    memstub_gen *g;
    if (memstub_gen_build(t, &o, &g, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
    memstub_trace_free(t);
    const int forms[] = {MEMSTUB_GEN_FORMAT_LISTING, MEMSTUB_GEN_FORMAT_COMPACT};
    for (size_t f = 0; f < 2; f++) {
      int breps = reps;
      if (forms[f] == MEMSTUB_GEN_FORMAT_LISTING && rows >= 1000000) breps = rows > 1000000 ? 0 : 1;
      if (breps == 0) continue;
      memstub_gen_emit_options eo = {.format = forms[f]};
      if (memstub_gen_emit_ex(g, hdr, &eo, NULL, &err) < 0)
        return fprintf(stderr, "%s\n", err.msg), 2;
      stats wall = {0}, rss = {0};
      for (int r = 0; r < breps; r++) {
        double w, kib;
        if (build(dir, hdr, &w, &kib) < 0) return fprintf(stderr, "bench_gen: build failed\n"), 2;
        add(&wall, w);
        add(&rss, kib / 1024);
        fprintf(stderr, "bench_gen: %lld rows, %s build %d/%d: %.2f s, %.0f MiB\n",
                (long long)rows, f ? "compact" : "listing", r + 1, breps, w, kib / 1024);
      }
      APPENDB("| %lld | %lld | %s | %d | %.1f | %s | %s |\n", (long long)rows,
              (long long)g->stub.numdata, f ? "compact" : "listing", breps,
              (double)file_size(hdr) / 1e6, cell(&wall, "%.2f", b[0], 96),
              cell(&rss, "%.0f", b[1], 96));
    }
    memstub_gen_free(g);
  }
  load(load1, sizeof load1);
  unlink(csv);
  unlink(hdr);
  rmdir(dir);

  struct utsname u;
  uname(&u);
  time_t now = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  ms__afile af;
  if (ms__afile_open(&af, out, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
  fprintf(af.f,
          "# Generator throughput and stub build cost\n\n"
          "Produced by `build/bench/bench_gen --repeat %d --max-rows %lld` on %s: %s, %ld cores, "
          "Linux %s; load average (1, 5, 15 min) %s at the start, %s at the end.\n\n"
          "## gen, per stage\n\n"
          "Cells: median (min-max) over *runs*. *normalise* is memstub_gen_build without a "
          "profile; *compensate* is the extra time of memstub_gen_build with "
          "bench/results/host.profile; *format* writes the points in C into the data files; *m4* "
          "runs GNU m4 on generator/memuse.h.m4 with them included unexpanded; *fsync+rename* "
          "puts the header in place. *total* = read + build with the profile + emit; *points/s* "
          "= stub points / total (default form).\n\n%s\n"
          "## memstub build, per form\n\n"
          "Wall time of `memstub build HEADER` (compile and link with -O2, then `PROGRAM "
          "--check`, which for the compact form decodes the points) and the peak resident memory "
          "of it and its children (`/usr/bin/time -f %%M`; the compiler's cc1 is the largest).\n\n"
          "%s",
          repeat, (long long)max_rows, date, ms__prim_cpu_model(), sysconf(_SC_NPROCESSORS_ONLN),
          u.release, load0, load1, gen, bld);
  if (ms__afile_commit(&af, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 2;
  fputs(gen, stdout);
  fputs(bld, stdout);
  return 0;
}
