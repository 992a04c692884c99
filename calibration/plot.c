// The calibration's fits, drawn by gnuplot with plots/calibration.gp: the
// samples go to temporary data files, the script draws them with the fitted
// models, and the image appears atomically.
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

static const char *format_of(const char *out) {
  const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
  if (!dot || (slash && dot < slash)) return NULL;
  static const char *const fmts[] = {"png", "svg", "pdf"};
  for (size_t i = 0; i < MS__ARRAY_SIZE(fmts); i++)
    if (strcasecmp(dot + 1, fmts[i]) == 0) return fmts[i];
  return NULL;
}

static int write_series(const char *path, const memstub_calib_sample *v, size_t n,
                        memstub_error *err) {
  FILE *f = fopen(path, "w");
  if (!f) return memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
  fputs("# x value model\n", f);
  for (size_t i = 0; i < n; i++) fprintf(f, "%g %g %g\n", v[i].faults, v[i].value, v[i].predicted);
  if (n == 0) fputs("0 NaN NaN\n", f);  // gnuplot refuses an empty file
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) return memstub_error_set(err, -EIO, "%s: write failed", path);
  return 0;
}

static int write_vars(const char *path, const memstub_calib *c, memstub_error *err) {
  const memstub_profile *p = &c->profile;
  FILE *f = fopen(path, "w");
  if (!f) return memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
  fprintf(f, "# written by memstub calibrate for plots/calibration.gp\n");
  char cpu[160];
  snprintf(cpu, sizeof cpu, "%s", p->cpu);
  for (char *q = cpu; *q; q++)
    if (*q == '\'' || (unsigned char)*q < 0x20) *q = ' ';
  fprintf(f, "title = 'memstub calibration: %s, %s, %lld repetitions, %s'\n", cpu, p->kernel,
          (long long)p->repetitions, p->date);
  fprintf(f, "heap_use = '%.0f ns + %.0f ns x faults (R^2 %.2f)'\n", p->heap_use.base.ns,
          p->heap_use.per_fault.ns, p->heap_use.r2);
  fprintf(f, "heap_mmap_use = '%.0f ns + %.0f ns x faults (R^2 %.2f)'\n", p->heap_mmap_use.base.ns,
          p->heap_mmap_use.per_fault.ns, p->heap_mmap_use.r2);
  fprintf(f, "heap_alloc = '%.0f ns without a fault, %.0f ns with'\n", p->heap_alloc_nofault.ns,
          p->heap_alloc_fault.ns);
  fprintf(f, "stack_use = '%.0f ns + %.0f ns x faults (R^2 %.2f)'\n", p->stack_use.base.ns,
          p->stack_use.per_fault.ns, p->stack_use.r2);
  fprintf(f, "stack_retouch = 'cached stack: %.0f ns + %.0f ns x faults'\n",
          p->stack_use_retouch.base.ns, p->stack_use_retouch.per_fault.ns);
  fprintf(f, "stack_alloc = '%.0f ns without a fault, %.0f ns with'\n", p->stack_alloc_nofault.ns,
          p->stack_alloc_fault.ns);
  fprintf(f, "stack_bytes = 'offset %lld B + %lld B per frame (R^2 %.4f)'\n",
          (long long)p->stack_offset, (long long)p->stack_per_frame, p->stack_fit_r2);
  fprintf(f, "basic = 'time_basic %.1f ns = %.0f cycles, SCV %.3g'\n", p->basic.ns, p->basic.cycles,
          p->basic.scv);
  fprintf(f, "basic_ns = %g\n", p->basic.ns);
  // The models' coefficients, ns (bytes for the stack).
  fprintf(f, "hu_a = %g\nhu_b = %g\nmu_a = %g\nmu_b = %g\n", p->heap_use.base.ns,
          p->heap_use.per_fault.ns, p->heap_mmap_use.base.ns, p->heap_mmap_use.per_fault.ns);
  fprintf(f, "su_a = %g\nsu_b = %g\nsr_a = %g\nsr_b = %g\n", p->stack_use.base.ns,
          p->stack_use.per_fault.ns, p->stack_use_retouch.base.ns,
          p->stack_use_retouch.per_fault.ns);
  fprintf(f, "ha0 = %g\nha1 = %g\nsa0 = %g\nsa1 = %g\n", p->heap_alloc_nofault.ns,
          p->heap_alloc_fault.ns, p->stack_alloc_nofault.ns, p->stack_alloc_fault.ns);
  fprintf(f, "so = %lld\nsf = %lld\n", (long long)p->stack_offset, (long long)p->stack_per_frame);
  // The cold fits (docs/calibration.md, "Cold costs"); cold = 0 without them.
  fprintf(f, "cold = %d\n", p->cold_delay > 0);
  fprintf(f, "cold_title = 'cold (%.0f us sleeps), measured'\n", (double)p->cold_delay / 1000);
  fprintf(f, "cold_heap_mmap_use = 'cold median: %.0f ns + %.0f ns x faults'\n",
          p->cold.heap_mmap_use.base.ns, p->cold.heap_mmap_use.per_fault.ns);
  fprintf(f, "cold_stack_use = 'cold median: %.0f ns + %.0f ns x faults'\n",
          p->cold.stack_use.base.ns, p->cold.stack_use.per_fault.ns);
  fprintf(f, "cmu_a = %g\ncmu_b = %g\ncsu_a = %g\ncsu_b = %g\n", p->cold.heap_mmap_use.base.ns,
          p->cold.heap_mmap_use.per_fault.ns, p->cold.stack_use.base.ns,
          p->cold.stack_use.per_fault.ns);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) return memstub_error_set(err, -EIO, "%s: write failed", path);
  return 0;
}

static int run_gnuplot(const char *gp, const char *script, const char *dir, const char *out,
                       const char *fmt, const char *log, memstub_error *err) {
  int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (logfd < 0) return memstub_error_set(err, -errno, "%s: %s", log, strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, logfd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, logfd, STDERR_FILENO);
  char *argv[] = {(char *)gp, "-c", (char *)script, (char *)dir, (char *)out, (char *)fmt, NULL};
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
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  // The last line gnuplot said, for the message.
  char msg[256] = "";
  char *buf;
  size_t len;
  memstub_error e;
  if (ms__read_file(log, &buf, &len, &e) == 0) {
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) buf[--len] = '\0';
    char *nl = strrchr(buf, '\n');
    snprintf(msg, sizeof msg, "%s", nl ? nl + 1 : buf);
    free(buf);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !msg[0])
    return memstub_error_set(err, -ENOENT,
                             "cannot run gnuplot ('%s'); install it (Debian: apt-get install "
                             "gnuplot-nox) or set MEMSTUB_GNUPLOT to its path",
                             gp);
  return memstub_error_set(err, -EIO, "gnuplot ('%s') failed on %s%s%s", gp, script,
                           msg[0] ? ": " : "", msg);
}

int memstub_calib_plot(const memstub_calib *c, const char *out, memstub_error *err) {
  const char *fmt = format_of(out);
  if (!fmt || strcmp(out, "-") == 0)
    return memstub_error_set(err, -EINVAL,
                             "%s: cannot tell the plot format: name the output .png, .svg or .pdf",
                             out);
  const char *gp = getenv("MEMSTUB_GNUPLOT");
  if (!gp || !*gp) gp = "gnuplot";
  char *script = ms__asprintf("%s/plots/calibration.gp", ms__datadir());
  if (!script) return memstub_error_set(err, -ENOMEM, "out of memory");
  if (access(script, R_OK) != 0) {
    int e = errno;
    memstub_error_set(err, -ENOENT,
                      "cannot read the plot script %s: %s (set MEMSTUB_DATADIR to the directory "
                      "holding plots/)",
                      script, strerror(e));
    free(script);
    return -ENOENT;
  }
  const char *tmpdir = getenv("TMPDIR");
  if (!tmpdir || !*tmpdir) tmpdir = "/tmp";
  char *dir = ms__asprintf("%s/memstub-calplot-XXXXXX", tmpdir);
  if (!dir || !mkdtemp(dir)) {
    int e = dir ? errno : ENOMEM;
    free(dir);
    free(script);
    return memstub_error_set(err, -e, "%s: cannot create a temporary directory: %s", tmpdir,
                             strerror(e));
  }
  char path[4096];
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < MS__ARRAY_SIZE(c->samples); i++) {
    snprintf(path, sizeof path, "%s/s%zu.dat", dir, i);
    rc = write_series(path, c->samples[i], c->nsamples[i], err);
  }
  if (rc == 0) {
    snprintf(path, sizeof path, "%s/basic.dat", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
      rc = memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
    } else {
      for (size_t i = 0; i < c->nbasic; i++) fprintf(f, "%zu %g\n", i + 1, c->basic_rep_ns[i]);
      if (c->nbasic == 0) fputs("0 NaN\n", f);
      if (fclose(f) != 0) rc = memstub_error_set(err, -EIO, "%s: write failed", path);
    }
  }
  if (rc == 0) {
    snprintf(path, sizeof path, "%s/vars.gp", dir);
    rc = write_vars(path, c, err);
  }
  char log[4096];
  snprintf(log, sizeof log, "%s/gnuplot.log", dir);
  ms__afile af;
  if (rc == 0 && (rc = ms__afile_open(&af, out, err)) == 0) {
    rc = run_gnuplot(gp, script, dir, af.tmp, fmt, log, err);
    struct stat st;
    if (rc == 0 && (stat(af.tmp, &st) != 0 || st.st_size == 0))
      rc = memstub_error_set(err, -EIO, "gnuplot ('%s') wrote nothing to %s", gp, out);
    if (rc == 0) {
      int fd = open(af.tmp, O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        (void)fdatasync(fd);
        close(fd);
      }
      rc = ms__afile_commit(&af, err);
    } else {
      ms__afile_abort(&af);
    }
  }
  // Remove the temporary files.
  for (size_t i = 0; i < MS__ARRAY_SIZE(c->samples); i++) {
    snprintf(path, sizeof path, "%s/s%zu.dat", dir, i);
    unlink(path);
  }
  static const char *const names[] = {"basic.dat", "vars.gp", "gnuplot.log"};
  for (size_t i = 0; i < MS__ARRAY_SIZE(names); i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
  free(dir);
  free(script);
  return rc;
}
