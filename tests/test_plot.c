// memstub plot: the min/max-per-column reduction, PNG/SVG/PDF output
// (format and size, not pixels), atomic output with no temporary files left,
// and clear errors for a missing gnuplot and bad input.
#include <check.h>
#include <math.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"  // plots/: the axes' units and tics
#include "memstub/calib.h"
#include "memstub/plot.h"
#include "memstub/trace.h"
#include "testutil.h"

// ---- reduction --------------------------------------------------------------

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static size_t col(double x, double x0, double x1, size_t cols) {
  double t = (x - x0) / (x1 - x0) * (double)cols;
  if (t <= 0) return 0;
  if (t >= (double)cols) return cols - 1;
  return (size_t)t;
}

static int kept(const size_t *keep, size_t k, size_t idx) {
  for (size_t i = 0; i < k; i++)
    if (keep[i] == idx) return 1;
  return 0;
}

/* Check the contract on one series: indices increase, at most 4 per column,
 * and in every column the first, the last, the (first) lowest and the
 * (first) highest point are kept; columns of at most 4 points keep all. */
static void check_reduction(const double *x, const double *y, size_t n, double x0, double x1,
                            size_t cols) {
  size_t *keep = malloc((n ? n : 1) * sizeof *keep);
  size_t k = memstub_plot_reduce(x, y, n, x0, x1, cols, keep);
  ck_assert(k <= n);
  ck_assert(k <= 4 * cols);
  for (size_t i = 1; i < k; i++) ck_assert(keep[i - 1] < keep[i]);
  size_t i = 0;
  while (i < n) {
    size_t c = col(x[i], x0, x1, cols), lo = i, hi = i, j = i;
    for (; j < n && col(x[j], x0, x1, cols) == c; j++) {
      if (y[j] < y[lo]) lo = j;
      if (y[j] > y[hi]) hi = j;
    }
    ck_assert_msg(kept(keep, k, i) && kept(keep, k, j - 1), "column %zu: first or last dropped", c);
    ck_assert_msg(kept(keep, k, lo), "column %zu: lowest point %zu dropped", c, lo);
    ck_assert_msg(kept(keep, k, hi), "column %zu: highest point %zu dropped", c, hi);
    size_t in = 0;
    for (size_t m = 0; m < k; m++) in += keep[m] >= i && keep[m] < j;
    ck_assert(in <= 4);
    if (j - i <= 4) ck_assert_uint_eq(in, j - i);
    i = j;
  }
  free(keep);
}

START_TEST(test_reduce_keeps_min_max) {
  enum { N = 100000 };
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  // Random walk with random gaps (several points per column, some columns empty).
  double t = 0, v = 0;
  for (size_t i = 0; i < N; i++) {
    t += (double)(next() % 1000);
    v += (double)((int64_t)(next() % 2001) - 1000);
    x[i] = t;
    y[i] = v;
  }
  check_reduction(x, y, N, x[0], x[N - 1], 1200);
  check_reduction(x, y, N, x[0], x[N - 1], 7);
  check_reduction(x, y, N, x[0], x[N - 1], 1);
  // A single one-point spike among flat points never vanishes.
  for (size_t i = 0; i < N; i++) y[i] = 100;
  y[54321] = 1e9;
  y[12345] = -5;
  size_t *keep = malloc(N * sizeof *keep);
  size_t k = memstub_plot_reduce(x, y, N, x[0], x[N - 1], 300, keep);
  ck_assert(k <= 4 * 300);
  ck_assert(kept(keep, k, 54321));
  ck_assert(kept(keep, k, 12345));
  // Few points per column: everything stays.
  check_reduction(x, y, 1000, x[0], x[999], 1200);
  // Equal times (an empty x range) make one column.
  for (size_t i = 0; i < 10; i++) x[i] = 5;
  k = memstub_plot_reduce(x, y, 10, 5, 5, 100, keep);
  ck_assert_uint_le(k, 4);
  ck_assert(kept(keep, k, 0) && kept(keep, k, 9));
  ck_assert_uint_eq(memstub_plot_reduce(x, y, 0, 0, 1, 10, keep), 0);
  free(keep);
  free(x);
  free(y);
}
END_TEST

START_TEST(test_reduce_exact_small) {
  // Columns of 10 units: [0,10) [10,20) [20,30). Column 0 holds 6 points.
  static const double x[] = {0, 1, 2, 3, 4, 5, 12, 13, 25};
  static const double y[] = {3, 9, 1, 9, 1, 4, 7, 7, 2};
  size_t keep[9];
  size_t k = memstub_plot_reduce(x, y, 9, 0, 30, 3, keep);
  // Column 0: first 0, lowest 2 (first of the equal 1s), highest 1, last 5.
  static const size_t want[] = {0, 1, 2, 5, 6, 7, 8};
  ck_assert_uint_eq(k, sizeof want / sizeof want[0]);
  for (size_t i = 0; i < k; i++) ck_assert_uint_eq(keep[i], want[i]);
}
END_TEST

// ---- axes for people ----------------------------------------------------------

// The tic labels of a over [lo, hi] (axis units), formatted as gnuplot would.
static void check_plain_tics(const ms__plot_axis *a, double lo, double hi) {
  char fmt[48], label[64];
  ms__plot_axis_format(a, 0, fmt, sizeof fmt);
  ck_assert_msg(a->step > 0 && a->decimals >= 0 && a->decimals <= 9, "step %g", a->step);
  if (hi < lo + a->step) hi = lo + a->step;  // an empty range reads one step
  int n = 0;
  for (double v = floor(lo / a->step) * a->step; v <= hi + a->step / 2 && n < 100; v += a->step, n++) {
    snprintf(label, sizeof label, fmt, v);
    // Plain numbers (no "1e+06"), all with the same decimals, each distinct
    // from the next (the decimals show the step).
    ck_assert_msg(!strpbrk(label, "eE"), "'%s' for %g (%s)", label, v, fmt);
    const char *dot = strchr(label, '.');
    ck_assert_int_eq(dot ? (int)strlen(dot + 1) : 0, a->decimals);
    char next[64];
    snprintf(next, sizeof next, fmt, v + a->step);
    ck_assert_msg(strcmp(label, next) != 0, "tics %g and %g both read '%s'", v, v + a->step, label);
  }
  ck_assert_msg(n >= 2 && n <= 30, "%d tics over [%g, %g] at %g", n, lo, hi, a->step);
}

/* Units chosen by the range: bytes in B to GiB below 1024 of the unit, times
 * in µs, ms or s from 2 of the unit; tics at 1, 2 or 5 times a power of ten,
 * labelled plainly with the decimals the step needs (issue 30 item 3: the time
 * error read "-100000" beside "-1e+06 µs"). */
START_TEST(test_axis_units) {
  static const struct {
    double max;
    const char *unit;
    double step;
    int decimals;
  } bytes[] = {{0, "B", 1, 0},           {3, "B", 1, 0},           {500, "B", 100, 0},
               {1023, "B", 200, 0},      {1024, "KiB", 0.2, 1},    {33280, "KiB", 5, 0},
               {1048576, "MiB", 0.2, 1}, {1300000, "MiB", 0.2, 1}, {12.8 * 1048576, "MiB", 2, 0},
               {3.0 * 1073741824, "GiB", 0.5, 1}};
  for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
    ms__plot_axis a = ms__plot_axis_bytes(bytes[i].max, 5);
    ck_assert_msg(strcmp(a.unit, bytes[i].unit) == 0 && fabs(a.step - bytes[i].step) < 1e-9 &&
                      a.decimals == bytes[i].decimals,
                  "%g B: %s step %g decimals %d", bytes[i].max, a.unit, a.step, a.decimals);
    check_plain_tics(&a, 0, bytes[i].max / a.div);
  }
  static const struct {
    double lo, hi;  // us
    const char *unit;
    double step;
  } times[] = {{0, 4.8e6, "s", 1},          {-1.45e6, 0, "ms", 200},     {-3e6, 2e5, "s", 0.5},
               {0, 1500, "\xc2\xb5s", 200}, {0, 0.3, "\xc2\xb5s", 0.05}, {-20, 60, "\xc2\xb5s", 20},
               {0, 182000, "ms", 50},       {0, 0, "\xc2\xb5s", 0.2}};
  for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
    ms__plot_axis a = ms__plot_axis_time(times[i].lo, times[i].hi, 5);
    ck_assert_msg(strcmp(a.unit, times[i].unit) == 0 && fabs(a.step - times[i].step) < 1e-9,
                  "[%g, %g] us: %s step %g", times[i].lo, times[i].hi, a.unit, a.step);
    check_plain_tics(&a, times[i].lo / a.div, times[i].hi / a.div);
  }
  // Every span from 1 ns to 10^6 s, and from a byte to a TiB: plain labels.
  for (double span = 1e-3; span < 1e12; span *= 3.7) {
    ms__plot_axis a = ms__plot_axis_time(-span / 3, span, 4);
    check_plain_tics(&a, -span / 3 / a.div, span / a.div);
    ms__plot_axis b = ms__plot_axis_bytes(span, 3);
    check_plain_tics(&b, 0, span / b.div);
  }
  // The text figure's formats carry the unit; a '%' is doubled for gnuplot.
  char fmt[48];
  ms__plot_axis a = ms__plot_axis_bytes(1048576, 5);
  ck_assert_str_eq(ms__plot_axis_format(&a, 1, fmt, sizeof fmt), "%.1f MiB");
  ck_assert_str_eq(ms__plot_axis_format(&a, 0, fmt, sizeof fmt), "%.1f");
  a = ms__plot_axis_plain(60, 3);
  a.unit = "%";
  ck_assert_str_eq(ms__plot_axis_format(&a, 1, fmt, sizeof fmt), "%.0f %%");
}
END_TEST

// ---- the command ------------------------------------------------------------

typedef struct fixture {
  char *dir, *tmp;
  char *old_tmpdir;
} fixture;

static char *path_in(const char *dir, const char *name) {
  char *p;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

/* A work directory holding the bundled 4.8 s sample (orig.csv), a fake
 * replay (repl.csv: 20-40 us late, heap rounded to pages above 128 KiB) and
 * a second one (repl2.csv: drifting); TMPDIR points at an empty directory so
 * the test sees any temporary file left behind. */
static fixture fx_make(void) {
  fixture f;
  f.dir = tu_mkdtemp();
  f.tmp = path_in(f.dir, "tmp");
  ck_assert_int_eq(mkdir(f.tmp, 0700), 0);
  const char *old = getenv("TMPDIR");
  f.old_tmpdir = old ? strdup(old) : NULL;
  setenv("TMPDIR", f.tmp, 1);

  memstub_trace *a = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_read(tu_src("traces/samples/synthetic-4.8s.csv"), &a, &err), 0);
  for (int v = 0; v < 2; v++) {
    memstub_trace *b = memstub_trace_create();
    ck_assert_int_eq(memstub_trace_add_column(b, "point"), 0);
    for (size_t i = 0; i < a->n; i++) {
      int64_t e = v == 0 ? 20000 + (int64_t)(next() % 20000) : (int64_t)i * 15;
      int64_t h = a->pts[i].heap_bytes;
      if (v == 0 && h >= 131072) h = (h + 4095) / 4096 * 4096;
      int64_t tm = a->pts[i].time_ns + e;
      if (b->n && tm < b->pts[b->n - 1].time_ns) tm = b->pts[b->n - 1].time_ns;
      ck_assert_int_eq(memstub_trace_append(b, tm, a->pts[i].stack_bytes + (v ? 16 : 0), h), 0);
      memstub_trace_extra_row(b, i)[0] = (int64_t)i;
    }
    char *p = path_in(f.dir, v == 0 ? "repl.csv" : "repl2.csv");
    ck_assert_int_eq(memstub_trace_write(b, p, &err), 0);
    free(p);
    memstub_trace_free(b);
  }
  char *p = path_in(f.dir, "orig.csv");
  ck_assert_int_eq(memstub_trace_write(a, p, &err), 0);
  free(p);
  memstub_trace_free(a);
  return f;
}

static void fx_free(fixture *f) {
  // Nothing was left in TMPDIR.
  ck_assert_int_eq(tu_count_entries(f->tmp), 0);
  if (f->old_tmpdir)
    setenv("TMPDIR", f->old_tmpdir, 1);
  else
    unsetenv("TMPDIR");
  free(f->old_tmpdir);
  tu_rmtree(f->dir);
  free(f->dir);
  free(f->tmp);
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static const struct {
  const char *name, *magic;
  size_t magic_len;
  long min_size;
} formats[] = {
    {"fig.png", "\x89PNG\r\n\x1a\n", 8, 10000},
    {"fig.svg", "<?xml", 5, 10000},
    {"fig.pdf", "%PDF-", 5, 10000},
    {"fig.txt", "", 0, 2000},  // gnuplot's dumb terminal, 120 x 45 characters
};

START_TEST(test_plot_formats) {
  fixture f = fx_make();
  const char *name = formats[_i].name;
  tu_run r = tu_memstub(f.dir, "plot", "orig.csv", "repl.csv", "repl2.csv", "-o", name, "--title",
                        "it's `date` @x & <b>", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_str_eq(r.out, "");
  char *p = path_in(f.dir, name);
  long size = file_size(p);
  ck_assert_msg(size > formats[_i].min_size, "%s: %ld bytes", name, size);
  char *data = tu_read_file(p);
  ck_assert(memcmp(data, formats[_i].magic, formats[_i].magic_len) == 0);
  if (strstr(name, ".svg")) {
    ck_assert_ptr_nonnull(strstr(data, "<svg"));
    ck_assert_ptr_nonnull(strstr(data, "</svg>"));
    // The title reached the figure as text, not as a command or markup.
    ck_assert_ptr_nonnull(strstr(data, "it's `date` @x &amp; &lt;b>"));
    ck_assert_ptr_nonnull(strstr(data, "measured (repl2.csv)"));
  }
  if (strstr(name, ".txt")) {
    // The 4.8 s sample: time in s, the time error in µs.
    ck_assert_ptr_nonnull(strstr(data, "time (s)"));
    ck_assert_ptr_nonnull(strstr(data, " \xc2\xb5s |"));
    ck_assert_ptr_nonnull(strstr(data, "measured (repl2.csv)"));
    ck_assert_ptr_null(strchr(data, '\033'));  // plain text, no terminal escapes
  }
  free(data);
  free(p);
  // Only the inputs, the output and the (empty) TMPDIR: no temporary output file.
  ck_assert_int_eq(tu_count_entries(f.dir), 5);
  tu_run_free(&r);
  fx_free(&f);
}
END_TEST

// The widest line of a text figure, in characters (UTF-8), and the lines.
static size_t widest_line(const char *data, size_t *lines) {
  size_t w = 0, cur = 0;
  *lines = 0;
  for (const unsigned char *p = (const unsigned char *)data; *p; p++) {
    if (*p == '\n') {
      (*lines)++;
      cur = 0;
    } else if ((*p & 0xc0) != 0x80) {
      if (++cur > w) w = cur;
    }
  }
  return w;
}

/* The text figure fits $COLUMNS (80 when unset): no line wider; wider lines
 * with a wider terminal. Its y axes carry units and the peaks their values. */
START_TEST(test_text_figure_fits_the_terminal) {
  fixture f = fx_make();
  const char *old = getenv("COLUMNS");
  char *saved = old ? strdup(old) : NULL;
  static const struct {
    const char *columns;
    size_t min, max;
  } cases[] = {{NULL, 60, 80}, {"80", 60, 80}, {"120", 81, 120}, {"nonsense", 60, 80}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].columns)
      setenv("COLUMNS", cases[i].columns, 1);
    else
      unsetenv("COLUMNS");
    tu_run r = tu_memstub(f.dir, "plot", "orig.csv", "repl.csv", "-o", "fig.txt", NULL);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    char *p = path_in(f.dir, "fig.txt");
    char *data = tu_read_file(p);
    size_t lines, w = widest_line(data, &lines);
    ck_assert_msg(w >= cases[i].min && w <= cases[i].max, "COLUMNS=%s: widest line %zu\n%s",
                  cases[i].columns ? cases[i].columns : "(unset)", w, data);
    ck_assert_ptr_null(strchr(data, '\f'));
    // Units on the y axes (the sample's stack in KiB, heap in MiB) and the peaks.
    ck_assert_msg(strstr(data, " KiB |") && strstr(data, " MiB |"), "%s", data);
    ck_assert_msg(strstr(data, ": original (orig.csv)") && strstr(data, ": measured (repl.csv)"),
                  "%s", data);
    free(data);
    free(p);
    tu_run_free(&r);
  }
  if (saved)
    setenv("COLUMNS", saved, 1);
  else
    unsetenv("COLUMNS");
  free(saved);
  fx_free(&f);
}
END_TEST

/* The resident panel: drawn when a trace has rss_bytes or mapped_bytes, with
 * the curves each trace has; not drawn for traces without them. */
START_TEST(test_resident_panel) {
  fixture f = fx_make();
  char *po = path_in(f.dir, "res.csv"), *pr = path_in(f.dir, "resr.csv");
  tu_write_file(po,
                "time_ns,stack_bytes,heap_bytes,rss_bytes,mapped_bytes\n"
                "0,0,0,0,0\n1000000,64,1048576,262144,2097152\n2000000,128,1048576,3145728,2097152\n"
                "3000000,0,0,65536,0\n");
  // The replay measured rss but not mapped.
  tu_write_file(pr,
                "time_ns,stack_bytes,heap_bytes,point,rss_bytes\n"
                "0,0,0,0,4096\n1000000,64,1048576,1,270336\n2000000,128,1048576,2,3100000\n"
                "3000000,0,0,3,65536\n");
  tu_run r = tu_memstub(f.dir, "plot", "res.csv", "resr.csv", "-o", "res.svg", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  char *p = path_in(f.dir, "res.svg");
  char *data = tu_read_file(p);
  ck_assert_msg(strstr(data, "resident, mapped (MiB)") != NULL, "no resident panel");
  // The legend: each trace's curves, and the original's dotted mapped curve.
  ck_assert_ptr_nonnull(strstr(data, ">original (res.csv)<"));
  ck_assert_ptr_nonnull(strstr(data, "original (res.csv): mapped"));
  ck_assert_ptr_nonnull(strstr(data, ">measured (resr.csv)<"));
  ck_assert_ptr_null(strstr(data, "measured (resr.csv): mapped"));
  ck_assert_ptr_nonnull(strstr(data, "peak 3.0 MiB: original (res.csv)"));
  ck_assert_ptr_nonnull(strstr(data, "peak 3.0 MiB: measured (resr.csv)"));
  free(data);
  // The original alone, as text: the panel and its time axis.
  r = tu_memstub(f.dir, "plot", "res.csv", "-o", "res.txt", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  char *pt = path_in(f.dir, "res.txt");
  data = tu_read_file(pt);
  ck_assert_msg(strstr(data, "original (res.csv): mapped") && strstr(data, "time (ms)"), "%s", data);
  free(data);
  // Traces without the columns: no third panel.
  r = tu_memstub(f.dir, "plot", "orig.csv", "repl.csv", "-o", "res.svg", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  data = tu_read_file(p);
  ck_assert_ptr_null(strstr(data, "resident, mapped"));
  free(data);
  free(p);
  free(pt);
  free(po);
  free(pr);
  fx_free(&f);
}
END_TEST

/* A replay with threads that misses points of a thread is warned about on
 * stderr, per thread, as memstub compare warns (commit 0ad7f09); plot said
 * nothing (to.csv, tr.csv: exit 0, no warning). */
START_TEST(test_threads_missing_warned) {
  fixture f = fx_make();
  char *po = path_in(f.dir, "to.csv"), *pr = path_in(f.dir, "tr.csv");
  tu_write_file(po, "time_ns,stack_bytes,heap_bytes,thread,thread_event,thread_peer\n"
                    "0,0,0,0,start,-1\n1000,0,100,0,,\n2000,0,0,1,start,0\n3000,0,50,1,,\n"
                    "3500,0,60,1,,\n4000,0,0,1,exit,\n5000,0,100,0,exit,\n");
  tu_write_file(pr, "time_ns,stack_bytes,heap_bytes,point,thread,thread_event,thread_peer\n"
                    "0,0,0,0,0,start,-1\n1000,0,100,1,0,,\n2000,0,0,0,1,start,0\n"
                    "3000,0,50,1,1,,\n4000,0,0,3,1,exit,\n5000,0,100,2,0,exit,\n");
  tu_run r = tu_memstub(f.dir, "plot", "to.csv", "tr.csv", "-o", "t.svg", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "warning: tr.csv (thread 1) measures 3 of to.csv (thread 1)'s 4 "
                              "points: 1 missing (the first is point 2)"), "%s", r.err);
  ck_assert_msg(!strstr(r.err, "(thread 0) measures"), "%s", r.err);
  tu_run_free(&r);
  free(po);
  free(pr);
  fx_free(&f);
}
END_TEST

START_TEST(test_plot_original_only_and_size) {
  fixture f = fx_make();
  tu_run r = tu_memstub(f.dir, "plot", "orig.csv", "-o", "only.png", "--size", "640x480", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  char *p = path_in(f.dir, "only.png");
  char *data = tu_read_file(p);
  ck_assert(file_size(p) > 1000);
  ck_assert(memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0);
  // IHDR: width and height, big-endian, at bytes 16-23.
  const unsigned char *u = (const unsigned char *)data;
  ck_assert_uint_eq((u[16] << 24) | (u[17] << 16) | (u[18] << 8) | u[19], 640);
  ck_assert_uint_eq((u[20] << 24) | (u[21] << 16) | (u[22] << 8) | u[23], 480);
  free(data);
  free(p);
  tu_run_free(&r);
  // An existing output is replaced whole.
  r = tu_memstub(f.dir, "plot", "orig.csv", "repl.csv", "-o", "only.png", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  fx_free(&f);
}
END_TEST

START_TEST(test_missing_gnuplot) {
  fixture f = fx_make();
  // Through the override...
  setenv("MEMSTUB_GNUPLOT", "/nonexistent/gnuplot", 1);
  tu_run r = tu_memstub(f.dir, "plot", "orig.csv", "repl.csv", "-o", "fig.png", NULL);
  unsetenv("MEMSTUB_GNUPLOT");
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err,
                               "memstub: error: cannot run gnuplot ('/nonexistent/gnuplot'): "
                               "No such file or directory; install it"));
  ck_assert_ptr_nonnull(strstr(r.err, "MEMSTUB_GNUPLOT"));
  tu_run_free(&r);
  // ...and with no gnuplot on PATH.
  char *old_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  setenv("PATH", f.tmp, 1);
  r = tu_memstub(f.dir, "plot", "orig.csv", "-o", "fig.svg", NULL);
  setenv("PATH", old_path, 1);
  free(old_path);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "memstub: error: cannot run gnuplot ('gnuplot')"));
  tu_run_free(&r);
  // A gnuplot that fails: its status is reported.
  setenv("MEMSTUB_GNUPLOT", "false", 1);
  r = tu_memstub(f.dir, "plot", "orig.csv", "-o", "fig.pdf", NULL);
  unsetenv("MEMSTUB_GNUPLOT");
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "memstub: error: gnuplot ('false') failed"));
  tu_run_free(&r);
  // No output and no temporary file in any case.
  ck_assert_int_eq(tu_count_entries(f.dir), 4);
  fx_free(&f);
}
END_TEST

static const struct {
  const char *args[6];
  const char *msg;
} bad[] = {
    {{"orig.csv", "repl.csv", "-o", "fig.jpg"},
     "fig.jpg: cannot tell the plot format: name the output .png, .svg, .pdf or .txt"},
    {{"orig.csv", "orig.csv", "-o", "fig.png"},
     "orig.csv:3:1: header row: no 'point' column: REPLAYED must be a replayed trace"},
    {{"orig.csv", "bad.csv", "-o", "fig.png"}, "bad.csv:3:7: point: 999999 is out of range"},
    {{"orig.csv", "missing.csv", "-o", "fig.png"}, "missing.csv: cannot open"},
    {{"-o", "fig.png"}, "missing ORIGINAL"},
    {{"orig.csv", "-", "-o", "fig.png"}, "plot reads its traces from files"},
    {{"orig.csv", "-o", "fig.png", "--size", "10x10"}, "--size: expected WIDTHxHEIGHT"},
    {{"orig.csv", "-o", "fig.png", "--size", "800x600x"}, "--size: expected WIDTHxHEIGHT"},
    {{"orig.csv", "-o", "fig.png", "--bogus"}, "unknown option '--bogus'"},
};

START_TEST(test_plot_bad_input) {
  fixture f = fx_make();
  char *b = path_in(f.dir, "bad.csv");
  tu_write_file(b, "time_ns,stack_bytes,heap_bytes,point\n0,0,0,0\n1,0,0,999999\n");
  free(b);
  const char *const *a = bad[_i].args;
  tu_run r = tu_memstub(f.dir, "plot", a[0], a[1], a[2], a[3], a[4], a[5], NULL);
  ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
  char want[512];
  snprintf(want, sizeof want, "memstub: error: %s", bad[_i].msg);
  ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0, "got: %s\nwant: %s", r.err, want);
  ck_assert_int_eq(tu_count_entries(f.dir), 5);  // inputs, bad.csv, tmp: no figure
  tu_run_free(&r);
  fx_free(&f);
}
END_TEST

// The library call: default labels, explicit script, tmpdir and gnuplot.
START_TEST(test_library_figure) {
  fixture f = fx_make();
  memstub_trace *a = NULL, *b = NULL;
  memstub_error err = {0};
  char *orig = path_in(f.dir, "orig.csv"), *repl = path_in(f.dir, "repl.csv");
  char *out = path_in(f.dir, "lib.svg"), *gif = path_in(f.dir, "lib.gif");
  ck_assert_int_eq(memstub_trace_read(orig, &a, &err), 0);
  ck_assert_int_eq(memstub_trace_read(repl, &b, &err), 0);
  memstub_plot_options o;
  memstub_plot_options_init(&o);
  ck_assert_int_eq(o.width, 1200);
  ck_assert_int_eq(o.height, 900);
  o.script = strdup(tu_src("plots/figure3.gp"));
  o.tmpdir = f.tmp;
  const memstub_trace *reps[1] = {b};
  int rc = memstub_plot_figure(out, a, NULL, 1, reps, NULL, &o, &err);
  ck_assert_msg(rc == 0, "%s", err.msg);
  char *svg = tu_read_file(out);
  ck_assert_ptr_nonnull(strstr(svg, ">original<"));
  ck_assert_ptr_nonnull(strstr(svg, ">replay 1<"));
  free(svg);
  ck_assert_int_eq(memstub_plot_figure(gif, a, "a", 1, reps, NULL, &o, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "lib.gif: cannot tell the plot format"));
  o.gnuplot = "/nonexistent/gnuplot";
  ck_assert_int_eq(memstub_plot_figure(out, a, "a", 0, NULL, NULL, &o, &err), -ENOENT);
  ck_assert_int_eq(tu_count_entries(f.dir), 5);  // lib.svg is the first one's, untouched
  o.gnuplot = NULL;
  o.width = 50;
  ck_assert_int_eq(memstub_plot_figure(out, a, "a", 0, NULL, NULL, &o, &err), -EINVAL);
  free((char *)o.script);
  free(orig);
  free(repl);
  free(out);
  free(gif);
  memstub_trace_free(a);
  memstub_trace_free(b);
  fx_free(&f);
}
END_TEST

/* The work panel (issue 14): drawn when a trace has cpu_ns or calls, with
 * the CPU time as a share of the time and the calls per ms; a script that
 * copies the work data out shows the rates: 50 % and 10 calls per ms
 * everywhere for a trace that spends half of each 1 ms row computing and
 * makes 10 calls in it. */
START_TEST(test_work_panel) {
  fixture f = fx_make();
  char *po = path_in(f.dir, "w.csv"), *pr = path_in(f.dir, "wr.csv");
  char text[2048];
  int n = snprintf(text, sizeof text, "time_ns,stack_bytes,heap_bytes,cpu_ns,calls_malloc_tiny\n");
  for (int i = 0; i <= 40; i++)
    n += snprintf(text + n, sizeof text - (size_t)n, "%d,0,0,%d,%d\n", i * 1000000, i * 500000,
                  i ? 10 : 0);
  tu_write_file(po, text);
  tu_write_file(pr,
                "time_ns,stack_bytes,heap_bytes,point,cpu_ns,churn_bytes\n"
                "0,0,0,0,0,0\n40000000,0,0,40,20000000,0\n");
  tu_run r = tu_memstub(f.dir, "plot", "w.csv", "wr.csv", "-o", "w.svg", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  char *p = path_in(f.dir, "w.svg");
  char *data = tu_read_file(p);
  ck_assert_msg(strstr(data, "CPU (% of the time)") != NULL, "no work panel");
  ck_assert_ptr_nonnull(strstr(data, ">original (w.csv)<"));
  ck_assert_ptr_nonnull(strstr(data, "original (w.csv): calls"));
  ck_assert_ptr_nonnull(strstr(data, "measured (wr.csv): calls"));
  free(data);
  // The data, through a script that copies it out.
  char *gp = path_in(f.dir, "copy.gp");
  tu_write_file(gp, "system('cat '.ARG1.'/origwork.dat '.ARG1.'/repl1work.dat > '.ARG2)\n");
  char *pt = path_in(f.dir, "w.txt");
  {
    memstub_trace *a = NULL, *b = NULL;
    memstub_error err = {0};
    ck_assert_int_eq(memstub_trace_read(po, &a, &err), 0);
    ck_assert_int_eq(memstub_trace_read(pr, &b, &err), 0);
    memstub_plot_options o;
    memstub_plot_options_init(&o);
    o.script = gp;
    o.tmpdir = f.tmp;
    const memstub_trace *reps[1] = {b};
    int rc = memstub_plot_figure(pt, a, NULL, 1, reps, NULL, &o, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    memstub_trace_free(a);
    memstub_trace_free(b);
  }
  data = tu_read_file(pt);
  // Blocks: original CPU, original calls, replay CPU, replay calls.
  int block = 0, lines[4] = {0};
  for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
    double x, y;
    if (sscanf(line, "%lf %lf", &x, &y) != 2) continue;
    if (block < 3 && x == 0 && lines[block]) block++;  // the next block starts at 0 again
    lines[block]++;
    double want = block == 0 || block == 2 ? 50 : block == 1 ? 10 : 0;
    ck_assert_msg(fabs(y - want) < 0.01 * (want ? want : 1), "block %d: %s, want %g", block, line, want);
  }
  ck_assert_int_eq(block, 3);
  ck_assert(lines[0] > 10 && lines[1] == lines[0]);
  free(data);
  // Traces without the columns: no work panel.
  r = tu_memstub(f.dir, "plot", "orig.csv", "repl.csv", "-o", "w.svg", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  data = tu_read_file(p);
  ck_assert_ptr_null(strstr(data, "CPU (% of the time)"));
  free(data);
  free(p);
  free(pt);
  free(gp);
  free(po);
  free(pr);
  fx_free(&f);
}
END_TEST

// ---- what the figure draws (issue 30 item 3) ------------------------------------

/* vars.gp, what figure3.gp is told to draw, for orig against the replays
 * (paths in f's directory), through a script that copies it out. */
static char *vars_of(const fixture *f, const char *orig, const char *const *repl, size_t n) {
  char *gp = path_in(f->dir, "copyvars.gp"), *out = path_in(f->dir, "vars.txt");
  tu_write_file(gp, "system('cp '.ARG1.'/vars.gp '.ARG2)\n");
  memstub_trace *o = NULL, *r[4] = {0};
  memstub_error err = {0};
  char *p = path_in(f->dir, orig);
  ck_assert_msg(memstub_trace_read(p, &o, &err) == 0, "%s", err.msg);
  free(p);
  const char *labels[4];
  for (size_t i = 0; i < n; i++) {
    p = path_in(f->dir, repl[i]);
    ck_assert_msg(memstub_trace_read(p, &r[i], &err) == 0, "%s", err.msg);
    free(p);
    labels[i] = repl[i];
  }
  memstub_plot_options po;
  memstub_plot_options_init(&po);
  po.script = gp;
  po.tmpdir = f->tmp;
  int rc = memstub_plot_figure(out, o, orig, n, (const memstub_trace *const *)r, labels, &po, &err);
  ck_assert_msg(rc == 0, "%s", err.msg);
  char *vars = tu_read_file(out);
  ck_assert_ptr_nonnull(vars);
  unlink(out);
  unlink(gp);
  free(out);
  free(gp);
  memstub_trace_free(o);
  for (size_t i = 0; i < n; i++) memstub_trace_free(r[i]);
  return vars;
}

// How many lines of text start with prefix.
static int count_lines(const char *text, const char *prefix) {
  int n = 0;
  for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (strncmp(p, prefix, strlen(prefix)) == 0) n++;
  return n;
}

/* Run memstub plot ORIG [R1 [R2]] -o OUT in f's directory (NULL replays
 * left out), which must succeed; OUT's contents (malloc'd). */
static char *plot_read(const fixture *f, const char *out, const char *orig, const char *r1,
                       const char *r2) {
  tu_run r = tu_memstub(f->dir, "plot", orig, "-o", out, r1, r2, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  char *p = path_in(f->dir, out), *data = tu_read_file(p);
  ck_assert_ptr_nonnull(data);
  free(p);
  return data;
}

/* A trace without rss_bytes and mapped_bytes gets no resident panel and no
 * peak label there; with a replay that has rss, the panel holds the replay's
 * curve and only its peak ("peak 0 B" was labelled for the original). */
START_TEST(test_panels_for_columns) {
  fixture f = fx_make();
  char *vars = vars_of(&f, "orig.csv", NULL, 0);
  ck_assert_msg(strstr(vars, "\nres_panel = 0\n") && strstr(vars, "\nstack_panel = 1\n") &&
                    strstr(vars, "\nheap_panel = 1\n") && strstr(vars, "\nwork_panel = 0\n") &&
                    strstr(vars, "\nerr_panel = 0\n"),
                "%s", vars);
  ck_assert_int_eq(count_lines(vars, "pk_panel["), 2);  // its stack and heap peaks
  ck_assert_ptr_null(strstr(vars, "pk_panel[3] = 3"));
  free(vars);
  // The original without rss, its replay with: one resident peak, the replay's.
  char *po = path_in(f.dir, "nores.csv"), *pr = path_in(f.dir, "resr.csv");
  tu_write_file(po, "time_ns,stack_bytes,heap_bytes\n0,0,0\n1000000,64,1048576\n2000000,128,1048576\n"
                    "3000000,0,0\n");
  tu_write_file(pr, "time_ns,stack_bytes,heap_bytes,point,rss_bytes\n0,0,0,0,4096\n"
                    "1000000,64,1048576,1,270336\n2000000,128,1048576,2,3100000\n3000000,0,0,3,65536\n");
  const char *repl[] = {"resr.csv"};
  vars = vars_of(&f, "nores.csv", repl, 1);
  ck_assert_msg(strstr(vars, "\nres_panel = 1\n") && strstr(vars, "\nres_npk = 1\n") &&
                    strstr(vars, "\norig_rss = 0\n") && strstr(vars, "\norig_mapped = 0\n"),
                "%s", vars);
  ck_assert_msg(strstr(vars, "pk_panel[5] = 3\npk_trace[5] = 1\n"), "%s", vars);
  ck_assert_msg(strstr(vars, "'peak 3.0 MiB: resr.csv'") && !strstr(vars, "peak 0 B"), "%s", vars);
  free(vars);
  // The same through the command, as text: no "peak 0 B" anywhere.
  char *data = plot_read(&f, "nores.txt", "nores.csv", "resr.csv", NULL);
  ck_assert_msg(strstr(data, "peak 3.0 MiB: measured (resr.csv)") && !strstr(data, "peak 0 B"),
                "%s", data);
  free(data);
  // A trace whose stack is unknown (an import without stacks): no stack panel.
  tu_write_file(po, "# memstub-trace 1\n# stack: unknown (not measured); stack_bytes are 0\n"
                    "time_ns,stack_bytes,heap_bytes\n0,0,0\n1000,0,4096\n2000,0,0\n");
  vars = vars_of(&f, "nores.csv", NULL, 0);
  ck_assert_msg(strstr(vars, "\nstack_panel = 0\n") && strstr(vars, "\nheap_panel = 1\n") &&
                    strstr(vars, "\norig_stack = 0\n"),
                "%s", vars);
  free(vars);
  free(po);
  free(pr);
  fx_free(&f);
}
END_TEST

/* Every replay's peak is labelled (only the first replay's was), each in a
 * row of its own above the curves; the legend names every trace. */
START_TEST(test_peak_per_replay) {
  fixture f = fx_make();
  const char *repl[] = {"repl.csv", "repl2.csv"};
  char *vars = vars_of(&f, "orig.csv", repl, 2);
  ck_assert_msg(strstr(vars, "\nstack_npk = 3\n") && strstr(vars, "\nheap_npk = 3\n"), "%s", vars);
  for (int q = 1; q <= 6; q++) {
    char want[64];
    snprintf(want, sizeof want, "pk_panel[%d] = %d\npk_trace[%d] = %d\n", q, (q - 1) / 3 + 1, q,
             (q - 1) % 3);
    ck_assert_msg(strstr(vars, want) != NULL, "no '%s' in\n%s", want, vars);
  }
  ck_assert_msg(strstr(vars, "'peak 32.5 KiB: repl2.csv'") && strstr(vars, "'peak 1.0 MiB: repl2.csv'"),
                "%s", vars);
  ck_assert_msg(strstr(vars, "\nnleg = 3\n") && strstr(vars, "leg_text[3] = 'repl2.csv'"), "%s", vars);
  free(vars);
  // In the figure: both replays' peaks, by name.
  char *data = plot_read(&f, "two.svg", "orig.csv", "repl.csv", "repl2.csv");
  ck_assert_ptr_nonnull(strstr(data, "KiB: measured (repl.csv)"));
  ck_assert_ptr_nonnull(strstr(data, "KiB: measured (repl2.csv)"));
  ck_assert_ptr_nonnull(strstr(data, "MiB: measured (repl2.csv)"));
  free(data);
  fx_free(&f);
}
END_TEST

/* The default title names what is drawn: the original and each replay by
 * file name, "before" and "after" for a what-if (its transforms line); the
 * curves say "what-if" for it. It was "orig.csv: original against
 * replayed" whatever the replays. */
START_TEST(test_title_names_traces) {
  fixture f = fx_make();
  char *data = plot_read(&f, "t.svg", "orig.csv", "repl.csv", "repl2.csv");
  ck_assert_msg(strstr(data, "orig.csv (original) against repl.csv and repl2.csv (replays)"), "%s",
                data);
  free(data);
  // A what-if: repl.csv with the transforms gen and replay write.
  memstub_trace *t = NULL;
  memstub_error err = {0};
  char *pr = path_in(f.dir, "repl.csv"), *pw = path_in(f.dir, "wi.csv");
  ck_assert_int_eq(memstub_trace_read(pr, &t, &err), 0);
  ck_assert_int_eq(memstub_trace_set_meta(t, "transforms", "time x0.7, heap x0.5, stack x1"), 0);
  ck_assert_int_eq(memstub_trace_write(t, pw, &err), 0);
  ck_assert_int_eq(memstub_trace_set_meta(t, "transforms", "none"), 0);
  ck_assert_int_eq(memstub_trace_write(t, pr, &err), 0);
  memstub_trace_free(t);
  data = plot_read(&f, "t.svg", "orig.csv", "wi.csv", NULL);
  ck_assert_msg(strstr(data, "before: orig.csv (original); after: wi.csv (what-if: time x0.7, heap x0.5)"),
                "%s", data);
  ck_assert_ptr_nonnull(strstr(data, ">what-if (wi.csv)<"));
  free(data);
  // A what-if and a faithful replay ("transforms: none"), as text: the title wraps, whole.
  tu_run r = tu_memstub(f.dir, "plot", "orig.csv", "repl.csv", "wi.csv", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.out, "before: orig.csv (original); after: wi.csv (what-if: time x0.7, heap x0.5);\n") &&
                    strstr(r.out, " replay: repl.csv\n") &&
                    strstr(r.out, "**** original (orig.csv)") &&
                    strstr(r.out, "##B# measured (repl.csv)\n") && strstr(r.out, "$$F$ what-if (wi.csv)\n"),
                "%s", r.out);
  tu_run_free(&r);
  free(pr);
  free(pw);
  fx_free(&f);
}
END_TEST

// The index of the first line of text holding s, or -1; the lines' count.
static int line_of(char *const *lines, int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (strstr(lines[i], s)) return i;
  return -1;
}

// text split into lines (in place); their count.
static int split_lines(char *text, char **lines, int cap) {
  int n = 0;
  for (char *l = strtok(text, "\n"); l && n < cap; l = strtok(NULL, "\n")) lines[n++] = l;
  return n;
}

/* The text figure: the legend below the time axis, each entry a line of
 * its own, whole, never over a curve ("measuGepeak 664 B"), never cut at the
 * bottom; the peaks' labels in rows without curves; nothing wider than the
 * terminal. Long names are cut with "..." to fit. */
START_TEST(test_text_legend_below) {
  fixture f = fx_make();
  char *src = path_in(f.dir, "repl2.csv"),
       *dst = path_in(f.dir, "a-replay-with-a-rather-long-file-name-for-the-legend.csv");
  ck_assert_int_eq(rename(src, dst), 0);
  char *po = path_in(f.dir, "res.csv"), *pr = path_in(f.dir, "resr.csv");
  tu_write_file(po, "time_ns,stack_bytes,heap_bytes,rss_bytes,mapped_bytes\n0,0,0,0,0\n"
                    "1000000,64,1048576,262144,2097152\n2000000,128,1048576,3145728,2097152\n"
                    "3000000,0,0,65536,0\n");
  tu_write_file(pr, "time_ns,stack_bytes,heap_bytes,point,rss_bytes,mapped_bytes\n0,0,0,0,4096,0\n"
                    "1000000,64,1048576,1,270336,0\n2000000,128,1048576,2,3100000,0\n3000000,0,0,3,65536,0\n");
  static const struct {
    const char *orig, *repl[2], *columns;
    const char *legend[5];
  } cases[] = {
      {"orig.csv", {"repl.csv", NULL}, "80", {"**** original (orig.csv)", "##B# measured (repl.csv)"}},
      {"res.csv",
       {"resr.csv", NULL},
       "80",
       {"**** original (res.csv)", "==== original (res.csv): mapped", "##B# measured (resr.csv)",
        "&&&& measured (resr.csv): mapped"}},
      {"orig.csv",
       {"repl.csv", "a-replay-with-a-rather-long-file-name-for-the-legend.csv"},
       "60",
       {"**** original (orig.csv)", "##B# measured (repl.csv)", "$$F$ measured (a-replay-with-a-rather-long-..."}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    setenv("COLUMNS", cases[c].columns, 1);
    tu_run r = tu_memstub(f.dir, "plot", cases[c].orig, cases[c].repl[0], "-o", "leg.txt",
                          cases[c].repl[1], NULL);
    unsetenv("COLUMNS");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    char *pt = path_in(f.dir, "leg.txt"), *data = tu_read_file(pt), *copy = strdup(data);
    char *lines[400];
    int n = split_lines(copy, lines, 400), axis = line_of(lines, n, "time (");
    ck_assert_msg(axis > 0, "%s", data);
    for (int i = 0; i < n; i++)
      ck_assert_msg(strlen(lines[i]) <= (size_t)atoi(cases[c].columns) + 2,  // µ: 2 bytes
                    "line %d wider than %s: %s", i, cases[c].columns, lines[i]);
    for (size_t k = 0; k < 5 && cases[c].legend[k]; k++) {
      int at = line_of(lines, n, cases[c].legend[k]);
      ck_assert_msg(at > axis, "legend '%s' at line %d, the time axis' label at %d:\n%s",
                    cases[c].legend[k], at, axis, data);
      // The entry is the line's end: nothing after it, nothing cut.
      const char *e = strstr(lines[at], cases[c].legend[k]);
      ck_assert_msg(e[strlen(cases[c].legend[k])] == '\0' || lines[at][strlen(lines[at]) - 1] == ' ' ||
                        strstr(e + strlen(cases[c].legend[k]), "  "),
                    "'%s' runs into: %s", cases[c].legend[k], lines[at]);
    }
    // Below the axis only the legend; above it, no legend text.
    for (int i = 0; i < axis; i++)
      ck_assert_msg(!strstr(lines[i], "****") && !strstr(lines[i], "##B#"), "legend in the panels: %s", lines[i]);
    // A peak's row holds its label and the grid, never a curve's character.
    int peaks = 0;
    for (int i = 0; i < axis; i++) {
      if (!strstr(lines[i], "peak ")) continue;
      peaks++;
      ck_assert_msg(!strpbrk(lines[i], "*#$%@&="), "a label over a curve: %s\n%s", lines[i], data);
    }
    ck_assert_int_ge(peaks, 4);
    free(copy);
    free(data);
    free(pt);
  }
  free(src);
  free(dst);
  free(po);
  free(pr);
  fx_free(&f);
}
END_TEST

// Whether a line of a text figure is a panel's inner line with a y tic label.
static int tic_line(const char *line) {
  double v;
  char unit[16], bar;
  return sscanf(line, " %lf %15s %c", &v, unit, &bar) == 3 && bar == '|';
}

/* Labels far apart share a row; tics in text are at least two lines apart
 * (the room above the curves made one a line: "60 KiB", "40 KiB", ...). */
START_TEST(test_text_rows) {
  fixture f = fx_make();
  char *po = path_in(f.dir, "far.csv"), *pr = path_in(f.dir, "farr.csv");
  char text[8192];
  int n = snprintf(text, sizeof text, "time_ns,stack_bytes,heap_bytes\n"), m;
  char repl[8192];
  m = snprintf(repl, sizeof repl, "time_ns,stack_bytes,heap_bytes,point\n");
  // The original's stack peaks at 1 ms, the replay's at 19 ms.
  for (int i = 0; i < 20; i++) {
    n += snprintf(text + n, sizeof text - (size_t)n, "%d,%d,%d\n", i * 1000000, i == 1 ? 8192 : 1024,
                  4096 * i);
    m += snprintf(repl + m, sizeof repl - (size_t)m, "%d,%d,%d,%d\n", i * 1000000,
                  i == 19 ? 8192 : 1024, 4096 * i, i);
  }
  tu_write_file(po, text);
  tu_write_file(pr, repl);
  setenv("COLUMNS", "100", 1);
  for (int k = 0; k < 2; k++) {
    char *data = k ? plot_read(&f, "three.txt", "orig.csv", "repl.csv", "repl2.csv")
                   : plot_read(&f, "far.txt", "far.csv", "farr.csv", NULL);
    char *copy = strdup(data), *lines[200];
    int nl = split_lines(copy, lines, 200), both = 0;
    for (int i = 0; i < nl; i++) {
      both |= strstr(lines[i], "peak 8.0 KiB: original (far.csv)") &&
              strstr(lines[i], "peak 8.0 KiB: measured (farr.csv)");
      if (i > 0)
        ck_assert_msg(!(tic_line(lines[i - 1]) && tic_line(lines[i])), "tics on lines %d, %d:\n%s",
                      i - 1, i, data);
    }
    ck_assert_msg(both || k, "the stack peaks' labels not on one row:\n%s", data);
    free(copy);
    free(data);
  }
  unsetenv("COLUMNS");
  free(po);
  free(pr);
  fx_free(&f);
}
END_TEST

/* Without -o, the text figure goes to standard output (it was refused:
 * "missing -o FILE"), and nothing is left in TMPDIR (fx_free checks). */
START_TEST(test_plot_to_stdout) {
  fixture f = fx_make();
  setenv("COLUMNS", "100", 1);
  tu_run r = tu_memstub(f.dir, "plot", "orig.csv", "repl.csv", NULL);
  unsetenv("COLUMNS");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.out, "orig.csv (original) against repl.csv (replay)\n") &&
                    strstr(r.out, "time (s)\n") && strstr(r.out, "##B# measured (repl.csv)\n") &&
                    strstr(r.out, "peak 32.5 KiB: original (orig.csv)"),
                "%s", r.out);
  ck_assert_ptr_null(strchr(r.out, '\f'));
  ck_assert_msg(r.out[strlen(r.out) - 1] == '\n' && !strstr(r.out, " \n"), "%s", r.out);
  size_t lines, w = widest_line(r.out, &lines);
  ck_assert_msg(w > 80 && w <= 100, "widest line %zu", w);
  ck_assert_msg(strstr(r.err, "error") == NULL, "%s", r.err);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(f.dir), 4);  // orig.csv, repl.csv, repl2.csv, tmp
  fx_free(&f);
}
END_TEST

// The y of the SVG text element holding text (its translate), or -1.
static double svg_y(const char *svg, const char *text) {
  const char *t = strstr(svg, text);
  if (!t) return -1;
  const char *g = NULL;
  for (const char *p = svg; (p = strstr(p, "translate(")) && p < t; p++) g = p;
  double x, y;
  return g && sscanf(g, "translate(%lf,%lf)", &x, &y) == 2 ? y : -1;
}

/* In the image: the legend below the time axis' label; each peak label above
 * the panel's own curves (its y above the peak's). */
START_TEST(test_svg_legend_below) {
  fixture f = fx_make();
  char *data = plot_read(&f, "leg.svg", "orig.csv", "repl.csv", NULL);
  double axis = svg_y(data, ">time (s)<");
  ck_assert(axis > 0);
  ck_assert_msg(svg_y(data, ">original (orig.csv)<") > axis, "legend above the time axis");
  ck_assert_msg(svg_y(data, ">measured (repl.csv)<") > axis, "legend above the time axis");
  ck_assert_msg(svg_y(data, "peak 32.5 KiB: original (orig.csv)") < svg_y(data, "heap in use"),
                "stack peak not in the stack panel");
  free(data);
  fx_free(&f);
}
END_TEST

/* The calibration's fits: log time axes read "1 µs", "10 µs" ("1000000"
 * before), and each panel's key is below its axes, not over the points. */
START_TEST(test_calibration_plot) {
  fixture f = fx_make();
  setenv("MEMSTUB_DATADIR", tu_src(""), 1);
  memstub_calib c;
  memset(&c, 0, sizeof c);
  snprintf(c.profile.cpu, sizeof c.profile.cpu, "test cpu");
  snprintf(c.profile.kernel, sizeof c.profile.kernel, "Linux test");
  snprintf(c.profile.date, sizeof c.profile.date, "2026-01-01T00:00:00Z");
  c.profile.repetitions = 2;
  memstub_calib_sample s[40];
  for (int i = 0; i < 40; i++) s[i] = (memstub_calib_sample){i % 10, 200.0 * pow(3, i % 10), 0};
  for (int k = 0; k < 10; k++) c.samples[k] = s, c.nsamples[k] = 40;
  memstub_calib_sample bytes[5] = {{1, 80, 80}, {2, 160, 160}, {3, 240, 240}, {4, 320, 320}, {5, 400, 400}};
  c.samples[MEMSTUB_CALIB_S_STACK_BYTES] = bytes, c.nsamples[MEMSTUB_CALIB_S_STACK_BYTES] = 5;
  double basic[3] = {40, 45, 42};
  c.basic_rep_ns = basic;
  c.nbasic = 3;
  char *out = path_in(f.dir, "cal.svg");
  memstub_error err = {0};
  int rc = memstub_calib_plot(&c, out, &err);
  unsetenv("MEMSTUB_DATADIR");
  ck_assert_msg(rc == 0, "%s", err.msg);
  char *data = tu_read_file(out);
  ck_assert_msg(strstr(data, ">1 \xc2\xb5s<") && strstr(data, ">100 \xc2\xb5s<") &&
                    strstr(data, ">1 ms<"),
                "no tics in units");
  ck_assert_msg(!strstr(data, ">1000000<") && !strstr(data, ">100000<"), "tics in plain ns");
  ck_assert_msg(svg_y(data, "<text>arena, measured<") > svg_y(data, ">page faults in the use phase<"),
                "the key is not below the axes");
  free(data);
  free(out);
  fx_free(&f);
}
END_TEST

static Suite *plot_suite(void) {
  Suite *s = suite_create("plot");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_reduce_keeps_min_max);
  tcase_add_test(tc, test_axis_units);
  tcase_add_test(tc, test_work_panel);
  tcase_add_test(tc, test_reduce_exact_small);
  tcase_add_loop_test(tc, test_plot_formats, 0, (int)(sizeof formats / sizeof formats[0]));
  tcase_add_test(tc, test_plot_original_only_and_size);
  tcase_add_test(tc, test_resident_panel);
  tcase_add_test(tc, test_text_figure_fits_the_terminal);
  tcase_add_test(tc, test_missing_gnuplot);
  tcase_add_test(tc, test_library_figure);
  tcase_add_loop_test(tc, test_plot_bad_input, 0, (int)(sizeof bad / sizeof bad[0]));
  tcase_add_test(tc, test_panels_for_columns);
  tcase_add_test(tc, test_peak_per_replay);
  tcase_add_test(tc, test_title_names_traces);
  tcase_add_test(tc, test_text_legend_below);
  tcase_add_test(tc, test_plot_to_stdout);
  tcase_add_test(tc, test_text_rows);
  tcase_add_test(tc, test_svg_legend_below);
  tcase_add_test(tc, test_calibration_plot);
  tcase_add_test(tc, test_threads_missing_warned);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(plot_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
