// Running gnuplot on memstub's scripts, with atomic output (see gnuplot.h).
#include "gnuplot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ms_common.h"
#include "ms_spawn.h"

static const char install_hint[] =
    "install it (Debian: apt-get install gnuplot-nox) or set MEMSTUB_GNUPLOT to its path";

// The format named by path's extension, or NULL.
static const char *format_of(const char *path, int text_ok) {
  const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
  if (!dot || (slash && dot < slash)) return NULL;
  static const char *const fmts[] = {"png", "svg", "pdf", "txt"};
  for (size_t i = 0; i < MS__ARRAY_SIZE(fmts) - !text_ok; i++)
    if (strcasecmp(dot + 1, fmts[i]) == 0) return fmts[i];
  return NULL;
}

int ms__gnuplot_begin(ms__gnuplot *g, const char *out, const char *script_name,
                      const char *script, const char *program, const char *tmpdir, int text_ok,
                      memstub_error *err) {
  *g = (ms__gnuplot){0};
  g->format = strcmp(out, "-") == 0 ? NULL : format_of(out, text_ok);
  if (!g->format)
    return memstub_error_set(err, -EINVAL, "%s: cannot tell the plot format: name the output %s",
                             out, text_ok ? ".png, .svg, .pdf or .txt" : ".png, .svg or .pdf");
  g->program = program && *program ? program : getenv("MEMSTUB_GNUPLOT");
  if (!g->program || !*g->program) g->program = "gnuplot";
  g->script = script ? ms__strdup(script) : ms__asprintf("%s/plots/%s", ms__datadir(), script_name);
  if (!g->script) return memstub_error_set(err, -ENOMEM, "out of memory");
  if (access(g->script, R_OK) != 0) {
    int e = errno;
    memstub_error_set(err, -ENOENT,
                      "cannot read the plot script %s: %s (set MEMSTUB_DATADIR to the directory "
                      "holding plots/)",
                      g->script, strerror(e));
    ms__gnuplot_end(g);
    return -ENOENT;
  }
  if (!tmpdir || !*tmpdir) tmpdir = getenv("TMPDIR");
  if (!tmpdir || !*tmpdir) tmpdir = "/tmp";
  g->dir = ms__asprintf("%s/memstub-plot-XXXXXX", tmpdir);
  if (!g->dir || !mkdtemp(g->dir)) {
    int e = g->dir ? errno : ENOMEM;
    free(g->dir);
    g->dir = NULL;
    ms__gnuplot_end(g);
    return memstub_error_set(err, -e, "%s: cannot create a temporary directory: %s", tmpdir,
                             strerror(e));
  }
  return 0;
}

char *ms__gnuplot_path(const ms__gnuplot *g, const char *name) {
  return ms__asprintf("%s/%s", g->dir, name);
}

// The last non-blank line gnuplot printed (and the one above a caret line).
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
  if (strspn(p, " ^") == strlen(p) && p > buf) {
    p[-1] = '\0';
    char *q = strrchr(buf, '\n');
    snprintf(out, cap, "%s", q ? q + 1 : buf);
  }
  free(buf);
}

// gnuplot -c SCRIPT DIR OUTPUT FORMAT [extra...], output and errors to log.
static int run(const ms__gnuplot *g, const char *target, const char *const *extra,
               const char *log, memstub_error *err) {
  char *argv[32];
  size_t n = 0;
  argv[n++] = (char *)g->program;
  argv[n++] = "-c";
  argv[n++] = g->script;
  argv[n++] = g->dir;
  argv[n++] = (char *)target;
  argv[n++] = (char *)g->format;
  for (size_t i = 0; extra && extra[i] && n < MS__ARRAY_SIZE(argv) - 1; i++)
    argv[n++] = (char *)extra[i];
  argv[n] = NULL;
  int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (logfd < 0) return memstub_error_set(err, -errno, "%s: %s", log, strerror(errno));
  ms__spawn_opts so;
  ms__spawn_opts_init(&so);
  so.in = MS__SPAWN_NULL;
  so.out = so.err = logfd;
  so.what = "gnuplot";
  // The data is reduced to a few thousand points a column: seconds.
  int rc = ms__spawn_limit(&so, 120, 0, 0, err);
  if (rc < 0) {
    close(logfd);
    return rc;
  }
  ms__child child;
  rc = ms__spawn_start(&child, argv, &so, err);
  close(logfd);
  if (rc < 0)
    return memstub_error_set(err, rc, "cannot run gnuplot ('%s'): %s; %s", g->program,
                             strerror(-rc), install_hint);
  ms__spawn_result r;
  rc = ms__spawn_wait(&child, &r, err);
  ms__spawn_result_free(&r);
  if (rc < 0) return rc;  // "cannot wait for gnuplot ('...'): ..."
  if (ms__spawn_status(&r) == 0) return 0;
  char msg[300], how[96];
  last_line(log, msg, sizeof msg);
  if (r.exited && r.code == 127 && !msg[0])
    return memstub_error_set(err, -ENOENT, "cannot run gnuplot ('%s'); %s", g->program,
                             install_hint);
  return memstub_error_set(err, -EIO, "gnuplot ('%s') failed on %s (%s)%s%s", g->program,
                           g->script, ms__spawn_describe(&r, how, sizeof how), msg[0] ? ": " : "",
                           msg);
}

int ms__gnuplot_render(ms__gnuplot *g, const char *out, const char *const *extra,
                       memstub_error *err) {
  char *log = ms__gnuplot_path(g, "gnuplot.log");
  if (!log) return memstub_error_set(err, -ENOMEM, "out of memory");
  ms__afile af;
  int rc = ms__afile_open(&af, out, err);
  // gnuplot writes the file by name: the temporary one, or a device in place.
  if (rc == 0) rc = run(g, af.tmp ? af.tmp : af.path, extra, log, err);
  struct stat st;
  if (rc == 0 && af.tmp && (stat(af.tmp, &st) != 0 || st.st_size == 0))
    rc = memstub_error_set(err, -EIO, "gnuplot ('%s') wrote nothing to %s", g->program, out);
  if (rc == 0 && af.tmp) {
    // gnuplot wrote the temporary file by name: sync it before the rename.
    int fd = open(af.tmp, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      (void)fdatasync(fd);
      close(fd);
    }
  }
  if (rc == 0) {
    rc = ms__afile_commit(&af, err);
  } else if (af.f) {
    ms__afile_abort(&af);
  }
  free(log);
  return rc;
}

void ms__gnuplot_end(ms__gnuplot *g) {
  if (g->dir) ms__dir_remove(g->dir);
  free(g->dir);
  free(g->script);
  *g = (ms__gnuplot){0};
}
