// The original-against-replayed figure: reduce the curves, write them to
// temporary data files and run plots/figure3.gp with gnuplot.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memstub/compare.h"
#include "memstub/plot.h"
#include "ms_common.h"

extern char **environ;

void memstub_plot_options_init(memstub_plot_options *o) {
  memset(o, 0, sizeof *o);
  o->width = 1200;
  o->height = 900;
}

// ---- reduction --------------------------------------------------------------

static size_t column_of(double x, double x0, double span, size_t columns) {
  if (!(span > 0)) return 0;
  double t = (x - x0) / span * (double)columns;
  if (!(t > 0)) return 0;  // also NaN
  if (t >= (double)columns) return columns - 1;
  return (size_t)t;
}

size_t memstub_plot_reduce(const double *x, const double *y, size_t n, double x0, double x1,
                           size_t columns, size_t *keep) {
  if (columns == 0) columns = 1;
  double span = x1 - x0;
  size_t k = 0, i = 0;
  while (i < n) {
    size_t c = column_of(x[i], x0, span, columns);
    size_t lo = i, hi = i, j = i + 1;
    for (; j < n && column_of(x[j], x0, span, columns) == c; j++) {
      if (y[j] < y[lo]) lo = j;
      if (y[j] > y[hi]) hi = j;
    }
    if (j - i <= 4) {
      for (size_t m = i; m < j; m++) keep[k++] = m;
    } else {
      // first, lowest, highest, last: in order, without repeats.
      size_t idx[4] = {i, lo < hi ? lo : hi, lo < hi ? hi : lo, j - 1};
      for (size_t m = 0; m < 4; m++)
        if (k == 0 || keep[k - 1] < idx[m]) keep[k++] = idx[m];
    }
    i = j;
  }
  return k;
}

// ---- data files -------------------------------------------------------------

typedef struct series {
  double *x, *y;
  size_t *keep;
  size_t n;
} series;

static int series_alloc(series *s, size_t n) {
  s->x = malloc((n ? n : 1) * sizeof *s->x);
  s->y = malloc((n ? n : 1) * sizeof *s->y);
  s->keep = malloc((n ? n : 1) * sizeof *s->keep);
  s->n = n;
  return s->x && s->y && s->keep ? 0 : -ENOMEM;
}

static void series_free(series *s) {
  free(s->x);
  free(s->y);
  free(s->keep);
}

// One data block: the reduced points as "x y" lines, then two blank lines.
static void write_block(FILE *f, series *s, double x0, double x1, size_t columns, int y_int) {
  size_t k = memstub_plot_reduce(s->x, s->y, s->n, x0, x1, columns, s->keep);
  for (size_t i = 0; i < k; i++) {
    size_t j = s->keep[i];
    if (y_int)
      fprintf(f, "%.3f %.0f\n", s->x[j], s->y[j]);
    else
      fprintf(f, "%.3f %.3f\n", s->x[j], s->y[j]);
  }
  fputs("\n\n", f);
}

/* A trace's data file: block 0 stack, block 1 heap, and for a replay (match
 * given) block 2 the time error in us against the original's time. */
static int write_data(const char *path, const memstub_trace *t, const memstub_trace *orig,
                      const int64_t *match, double x0, double x1, size_t columns,
                      memstub_error *err) {
  FILE *f = fopen(path, "w");
  if (!f) return memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
  series s;
  if (series_alloc(&s, t->n) < 0) {
    series_free(&s);
    fclose(f);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < t->n; i++) {
    s.x[i] = (double)t->pts[i].time_ns / 1000.0;
    s.y[i] = (double)t->pts[i].stack_bytes;
  }
  write_block(f, &s, x0, x1, columns, 1);
  for (size_t i = 0; i < t->n; i++) s.y[i] = (double)t->pts[i].heap_bytes;
  write_block(f, &s, x0, x1, columns, 1);
  if (match) {
    size_t m = 0;
    for (size_t i = 0; i < orig->n; i++) {
      if (match[i] < 0) continue;
      s.x[m] = (double)orig->pts[i].time_ns / 1000.0;
      s.y[m] = ((double)t->pts[match[i]].time_ns - (double)orig->pts[i].time_ns) / 1000.0;
      m++;
    }
    s.n = m;
    write_block(f, &s, x0, x1, columns, 0);
  }
  series_free(&s);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    return memstub_error_set(err, -EIO, "%s: write failed: %s", path, strerror(errno));
  return 0;
}

// A gnuplot single-quoted string: '' stands for ', control characters become spaces.
static void gp_str(FILE *f, const char *s) {
  fputc('\'', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '\'')
      fputs("''", f);
    else
      fputc(*p < 0x20 || *p == 0x7f ? ' ' : *p, f);
  }
  fputc('\'', f);
}

static int write_vars(const char *path, const char *title, const char *orig_label, size_t nrepl,
                      const char *const *labels, double x0, double x1, memstub_error *err) {
  FILE *f = fopen(path, "w");
  if (!f) return memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
  fputs("# written by memstub plot for plots/figure3.gp\ntitle = ", f);
  gp_str(f, title);
  fputs("\norig_label = ", f);
  gp_str(f, orig_label);
  fprintf(f, "\nnrepl = %zu\nxmin = %.3f\nxmax = %.3f\narray repl_label[%zu]\n", nrepl, x0, x1,
          nrepl ? nrepl : 1);
  for (size_t i = 0; i < nrepl; i++) {
    char def[32];
    snprintf(def, sizeof def, "replay %zu", i + 1);
    fprintf(f, "repl_label[%zu] = ", i + 1);
    gp_str(f, labels && labels[i] ? labels[i] : def);
    fputc('\n', f);
  }
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    return memstub_error_set(err, -EIO, "%s: write failed: %s", path, strerror(errno));
  return 0;
}

// ---- gnuplot ----------------------------------------------------------------

// The last non-blank line of gnuplot's output, for the error message.
static void last_line(const char *log, char *out, size_t cap) {
  out[0] = '\0';
  char *buf;
  size_t len;
  memstub_error e;
  if (ms__read_file(log, &buf, &len, &e) < 0) return;
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' || buf[len - 1] == '\r'))
    buf[--len] = '\0';
  char *p = strrchr(buf, '\n');
  p = p ? p + 1 : buf;
  snprintf(out, cap, "%s", p);
  // gnuplot points at errors with a caret line; take the line above it too.
  if (strspn(p, " ^") == strlen(p) && p > buf) {
    p[-1] = '\0';
    char *q = strrchr(buf, '\n');
    snprintf(out, cap, "%s", q ? q + 1 : buf);
  }
  free(buf);
}

static int run_gnuplot(const char *gp, const char *script, const char *dir, const char *out_tmp,
                       const char *fmt, int w, int h, const char *log, memstub_error *err) {
  char ws[16], hs[16];
  // Text output (gnuplot's dumb terminal) is sized in characters.
  if (strcmp(fmt, "txt") == 0) {
    w /= 10;
    h /= 20;
  }
  snprintf(ws, sizeof ws, "%d", w);
  snprintf(hs, sizeof hs, "%d", h);
  int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (logfd < 0) return memstub_error_set(err, -errno, "%s: %s", log, strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, logfd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, logfd, STDERR_FILENO);
  // gnuplot -c SCRIPT DIR OUTPUT FORMAT WIDTH HEIGHT
  char *argv[] = {(char *)gp, "-c", (char *)script, (char *)dir, (char *)out_tmp, (char *)fmt,
                  ws, hs, NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, gp, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(logfd);
  if (rc != 0)
    return memstub_error_set(err, -rc,
                             "cannot run gnuplot ('%s'): %s; install it (Debian: apt-get install "
                             "gnuplot-nox) or set MEMSTUB_GNUPLOT to its path",
                             gp, strerror(rc));
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return memstub_error_set(err, -errno, "waiting for gnuplot: %s", strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    char msg[300];
    last_line(log, msg, sizeof msg);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !msg[0])
      return memstub_error_set(err, -ENOENT,
                               "cannot run gnuplot ('%s'); install it (Debian: apt-get install "
                               "gnuplot-nox) or set MEMSTUB_GNUPLOT to its path",
                               gp);
    return memstub_error_set(err, -EIO, "gnuplot ('%s') failed on %s (%s %d)%s%s", gp, script,
                             WIFEXITED(status) ? "exit status" : "signal",
                             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                             msg[0] ? ": " : "", msg);
  }
  return 0;
}

static const char *format_of(const char *out) {
  const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
  if (!dot || (slash && dot < slash)) return NULL;
  static const char *const fmts[] = {"png", "svg", "pdf", "txt"};
  for (size_t i = 0; i < MS__ARRAY_SIZE(fmts); i++)
    if (strcasecmp(dot + 1, fmts[i]) == 0) return fmts[i];
  return NULL;
}

// ---- the figure -------------------------------------------------------------

typedef struct tmpfiles {
  char *dir;
  char **paths;
  size_t n, cap;
} tmpfiles;

static char *tmp_path(tmpfiles *tf, const char *name) {
  if (tf->n == tf->cap) {
    size_t cap = tf->cap ? tf->cap * 2 : 8;
    char **p = realloc(tf->paths, cap * sizeof *p);
    if (!p) return NULL;
    tf->paths = p;
    tf->cap = cap;
  }
  char *path = ms__asprintf("%s/%s", tf->dir, name);
  if (path) tf->paths[tf->n++] = path;
  return path;
}

static void tmp_cleanup(tmpfiles *tf) {
  for (size_t i = 0; i < tf->n; i++) {
    unlink(tf->paths[i]);
    free(tf->paths[i]);
  }
  free(tf->paths);
  if (tf->dir) rmdir(tf->dir);
  free(tf->dir);
}

static int figure(const char *out, const char *fmt, const memstub_trace *orig,
                  const char *orig_label, size_t nrepl, const memstub_trace *const *repl,
                  const char *const *labels, memstub_compare_report *const *cmp,
                  const memstub_plot_options *o, const char *gp, const char *script, tmpfiles *tf,
                  memstub_error *err) {
  const char *tmpdir = o->tmpdir ? o->tmpdir : getenv("TMPDIR");
  if (!tmpdir || !*tmpdir) tmpdir = "/tmp";
  tf->dir = ms__asprintf("%s/memstub-plot-XXXXXX", tmpdir);
  if (!tf->dir) return memstub_error_set(err, -ENOMEM, "out of memory");
  if (!mkdtemp(tf->dir)) {
    int e = errno;
    free(tf->dir);
    tf->dir = NULL;
    return memstub_error_set(err, -e, "%s: cannot create a temporary directory: %s", tmpdir,
                             strerror(e));
  }
  // One time axis for every panel.
  double x0 = (double)orig->pts[0].time_ns / 1000.0,
         x1 = (double)orig->pts[orig->n - 1].time_ns / 1000.0;
  for (size_t i = 0; i < nrepl; i++) {
    x0 = fmin(x0, (double)repl[i]->pts[0].time_ns / 1000.0);
    x1 = fmax(x1, (double)repl[i]->pts[repl[i]->n - 1].time_ns / 1000.0);
  }
  if (!(x1 > x0)) x1 = x0 + 1;
  size_t columns = (size_t)o->width;

  char *path = tmp_path(tf, "vars.gp");
  if (!path) return memstub_error_set(err, -ENOMEM, "out of memory");
  int rc =
      write_vars(path, o->title ? o->title : orig_label, orig_label, nrepl, labels, x0, x1, err);
  if (rc < 0) return rc;
  if (!(path = tmp_path(tf, "orig.dat"))) return memstub_error_set(err, -ENOMEM, "out of memory");
  if ((rc = write_data(path, orig, orig, NULL, x0, x1, columns, err)) < 0) return rc;
  for (size_t i = 0; i < nrepl; i++) {
    char name[32];
    snprintf(name, sizeof name, "repl%zu.dat", i + 1);
    if (!(path = tmp_path(tf, name))) return memstub_error_set(err, -ENOMEM, "out of memory");
    if ((rc = write_data(path, repl[i], orig, cmp[i]->match, x0, x1, columns, err)) < 0) return rc;
  }
  char *log = tmp_path(tf, "gnuplot.log");
  if (!log) return memstub_error_set(err, -ENOMEM, "out of memory");

  ms__afile af;
  if ((rc = ms__afile_open(&af, out, err)) < 0) return rc;
  rc = run_gnuplot(gp, script, tf->dir, af.tmp, fmt, o->width, o->height, log, err);
  struct stat st;
  if (rc == 0 && (stat(af.tmp, &st) != 0 || st.st_size == 0))
    rc = memstub_error_set(err, -EIO, "gnuplot ('%s') wrote nothing to %s", gp, out);
  if (rc < 0) {
    ms__afile_abort(&af);
    return rc;
  }
  // gnuplot wrote af.tmp by name; sync it and rename it into place.
  int fd = open(af.tmp, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fdatasync(fd);
    close(fd);
  }
  return ms__afile_commit(&af, err);
}

int memstub_plot_figure(const char *out, const memstub_trace *orig, const char *orig_label,
                        size_t nrepl, const memstub_trace *const *repl,
                        const char *const *repl_labels, const memstub_plot_options *o,
                        memstub_error *err) {
  memstub_plot_options def;
  if (!o) {
    memstub_plot_options_init(&def);
    o = &def;
  }
  if (!orig_label) orig_label = "original";
  const char *fmt = format_of(out);
  if (strcmp(out, "-") == 0 || !fmt)
    return memstub_error_set(
        err, -EINVAL, "%s: cannot tell the plot format: name the output .png, .svg, .pdf or .txt", out);
  if (o->width < 100 || o->height < 100 || o->width > 20000 || o->height > 20000)
    return memstub_error_set(err, -EINVAL, "plot size %dx%d: width and height must be 100-20000",
                             o->width, o->height);
  if (orig->n == 0) return memstub_error_set(err, -EINVAL, "%s: empty trace", orig_label);

  const char *gp = o->gnuplot;
  if (!gp || !*gp) gp = getenv("MEMSTUB_GNUPLOT");
  if (!gp || !*gp) gp = "gnuplot";
  char *script =
      o->script ? ms__strdup(o->script) : ms__asprintf("%s/plots/figure3.gp", ms__datadir());
  if (!script) return memstub_error_set(err, -ENOMEM, "out of memory");
  if (access(script, R_OK) != 0) {
    int e = errno;
    memstub_error_set(err, -ENOENT,
                      "cannot read the plot script %s: %s (set MEMSTUB_DATADIR to "
                      "the directory holding plots/)",
                      script, strerror(e));
    free(script);
    return -ENOENT;
  }

  // Align every replay with the original, accepting partial ones.
  memstub_compare_options co;
  memstub_compare_options_init(&co);
  co.allow_partial = 1;
  memstub_compare_report **cmp = calloc(nrepl ? nrepl : 1, sizeof *cmp);
  int rc = cmp ? 0 : memstub_error_set(err, -ENOMEM, "out of memory");
  for (size_t i = 0; i < nrepl && rc == 0; i++)
    rc = memstub_compare_traces(orig, orig_label, repl[i], repl_labels ? repl_labels[i] : NULL, &co,
                                &cmp[i], err);
  tmpfiles tf = {0};
  if (rc == 0)
    rc = figure(out, fmt, orig, orig_label, nrepl, repl, repl_labels, cmp, o, gp, script, &tf, err);
  tmp_cleanup(&tf);
  for (size_t i = 0; cmp && i < nrepl; i++) memstub_compare_free(cmp[i]);
  free(cmp);
  free(script);
  return rc;
}
