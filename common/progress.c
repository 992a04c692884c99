/* Progress on a terminal for long steps (common/ms_common.h, "progress"):
 * one line on stderr, "\r"-redrawn at most every 100 ms, first drawn 250 ms
 * after the step began (so short steps print nothing), and erased at the
 * end. Silent when stderr is not a terminal or MEMSTUB_QUIET is set. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ms_common.h"
#include "prim.h"

enum { FIRST_MS = 250, EVERY_MS = 100 };

int ms__progress_enabled(void) {
  static int enabled = -1;
  if (enabled < 0) enabled = isatty(STDERR_FILENO) && !getenv("MEMSTUB_QUIET");
  return enabled;
}

void ms__progress_begin(ms__progress *p, const char *label, uint64_t total, int bytes) {
  memset(p, 0, sizeof *p);
  p->label = label;
  p->total = total;
  p->bytes = bytes;
  p->on = ms__progress_enabled();
  p->next_ns = p->on ? ms__prim_now_ns() + (int64_t)FIRST_MS * 1000000 : 0;
}

void ms__progress_update(ms__progress *p, uint64_t done) {
  if (!p->on) return;
  int64_t now = ms__prim_now_ns();
  if (now < p->next_ns) return;
  p->next_ns = now + (int64_t)EVERY_MS * 1000000;
  char d[MS__FMT_MAX], t[MS__FMT_MAX];
  if (p->bytes) {
    ms__fmt_bytes((int64_t)done, d, sizeof d);
    ms__fmt_bytes((int64_t)p->total, t, sizeof t);
  } else {
    snprintf(d, sizeof d, "%llu", (unsigned long long)done);
    snprintf(t, sizeof t, "%llu", (unsigned long long)p->total);
  }
  if (p->total)
    fprintf(stderr, "\r\033[K%s  %s / %s (%u%%)", p->label, d, t,
            (unsigned)(done >= p->total ? 100 : done * 100 / p->total));
  else
    fprintf(stderr, "\r\033[K%s  %s", p->label, d);
  fflush(stderr);
  p->drawn = 1;
}

void ms__progress_stage(ms__progress *p, const char *label) {
  p->label = label;
  if (!p->on) return;
  fprintf(stderr, "\r\033[K%s", label);
  fflush(stderr);
  p->drawn = 1;
}

void ms__progress_end(ms__progress *p) {
  if (p->on && p->drawn) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  p->drawn = 0;
}

// ms__read_fd's step: the bytes read so far.
static void step(void *p, size_t done) { ms__progress_update(p, done); }

int ms__progress_read_file(const char *path, const char *label, char **bufp, size_t *lenp,
                           memstub_error *err) {
  struct stat st;
  // Standard input, pipes, small files: the plain reader.
  if (strcmp(path, "-") == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size < (off_t)(8 << 20) || !ms__progress_enabled())
    return ms__read_file(path, bufp, lenp, err);
  ms__progress p;
  ms__progress_begin(&p, label, (uint64_t)st.st_size, 1);
  int rc = ms__read_file_steps(path, 4u << 20, step, &p, bufp, lenp, err);
  ms__progress_end(&p);
  return rc;
}
