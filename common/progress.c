/* Progress on a terminal for long steps (common/ms_common.h, "progress"):
 * one line on stderr, "\r"-redrawn at most every 100 ms, first drawn 250 ms
 * after the step began (so short steps print nothing), and erased at the
 * end. Silent when stderr is not a terminal or MEMSTUB_QUIET is set. */
#include <errno.h>
#include <fcntl.h>
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

int ms__progress_read_file(const char *path, const char *label, char **bufp, size_t *lenp,
                           memstub_error *err) {
  struct stat st;
  // Standard input, pipes, small files: the plain reader.
  if (strcmp(path, "-") == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size < (off_t)(8 << 20) || !ms__progress_enabled())
    return ms__read_file(path, bufp, lenp, err);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return memstub_error_set(err, -e, "%s: cannot open: %s", path, strerror(e));
  }
  size_t cap = (size_t)st.st_size + 1, len = 0;
  char *buf = malloc(cap);
  if (!buf) {
    close(fd);
    return memstub_error_set(err, -ENOMEM, "%s: out of memory (%lld bytes)", path,
                             (long long)st.st_size);
  }
  ms__progress p;
  ms__progress_begin(&p, label, (uint64_t)st.st_size, 1);
  int e = 0;
  for (;;) {
    if (len + 1 >= cap) {  // the file grew while being read
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        e = ENOMEM;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t want = cap - 1 - len < (4u << 20) ? cap - 1 - len : (4u << 20);
    ssize_t r = read(fd, buf + len, want);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) e = errno;
    if (r <= 0) break;
    len += (size_t)r;
    ms__progress_update(&p, len);
  }
  ms__progress_end(&p);
  close(fd);
  if (e) {
    free(buf);
    return memstub_error_set(err, -e, "%s: cannot read: %s", path, strerror(e));
  }
  buf[len] = '\0';
  *bufp = buf;
  *lenp = len;
  return 0;
}
