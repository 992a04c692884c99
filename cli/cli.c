// Messages, option numbers and progress for the memstub subcommands.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ms_common.h"

static void vmsg(const char *kind, const char *fmt, va_list ap) {
  fprintf(stderr, "memstub: %s", kind);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

int ms_cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg("error: ", fmt, ap);
  va_end(ap);
  return MS_EXIT_USAGE;
}

int ms_cli_fail(const memstub_error *err) { return ms_cli_error("%s", err->msg); }

void ms_cli_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg("warning: ", fmt, ap);
  va_end(ap);
}

void ms_cli_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg("", fmt, ap);
  va_end(ap);
}

int ms_cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg("error: ", fmt, ap);
  va_end(ap);
  fprintf(stderr, "see 'memstub %s --help'\n", cmd);
  return MS_EXIT_USAGE;
}

int ms_cli_double(const char *cmd, const char *opt, const char *arg, double *out) {
  if (ms__parse_double(arg, out) < 0) {
    ms_cli_usage(cmd, "%s: expected a number, found '%s'", opt, arg);
    return -EINVAL;
  }
  return 0;
}

int ms_cli_i64(const char *cmd, const char *opt, const char *arg, int64_t *out) {
  int rc = ms__parse_i64(arg, strlen(arg), out);
  if (rc < 0) {
    ms_cli_usage(cmd, "%s: expected an integer, found '%s'", opt, arg);
    return -EINVAL;
  }
  return 0;
}

int ms_cli_progress_enabled(void) {
  static int enabled = -1;
  if (enabled < 0) enabled = isatty(STDERR_FILENO) && !getenv("MEMSTUB_QUIET");
  return enabled;
}

void ms_cli_progress(const char *label, uint64_t done, uint64_t total) {
  if (!ms_cli_progress_enabled()) return;
  unsigned pct = total ? (unsigned)(done * 100 / total) : 100;
  fprintf(stderr, "\r\033[K%s  %llu/%llu (%u%%)", label, (unsigned long long)done,
          (unsigned long long)total, pct);
  if (done >= total) fputc('\n', stderr);
  fflush(stderr);
}
