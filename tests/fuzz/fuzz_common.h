/* tests/fuzz/fuzz_common.h: what the libFuzzer harnesses share: the rules
 * every refusal must follow (a one-line message with the input's name and
 * position), trace equality, and a trace written to memory.
 *
 * A broken rule aborts, so libFuzzer saves the input as a crash. */
#ifndef MEMSTUB_FUZZ_COMMON_H
#define MEMSTUB_FUZZ_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memstub/trace.h"

#define FUZZ_ASSERT(cond, ...)                                                         \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "fuzz: %s:%d: %s: ", __FILE__, __LINE__, #cond);                 \
      fprintf(stderr, __VA_ARGS__);                                                    \
      fputc('\n', stderr);                                                             \
      abort();                                                                         \
    }                                                                                  \
  } while (0)

/* A refusal: a negative errno, recorded in err, and one printable line
 * (control characters would let a crafted file garble the terminal or hide
 * the position; bytes >= 0x80 may be a UTF-8 file name and are allowed). */
static inline void fuzz_check_refusal(int rc, const memstub_error *err) {
  FUZZ_ASSERT(rc == -EINVAL || rc == -ENOMEM || rc == -ERANGE, "rc %d", rc);
  FUZZ_ASSERT(err->code == rc, "err.code %d, rc %d", err->code, rc);
  FUZZ_ASSERT(err->msg[0] != '\0', "empty message");
  for (const char *c = err->msg; *c; c++)
    FUZZ_ASSERT((unsigned char)*c >= 0x20 && *c != 0x7f,
                "control character 0x%02x at %zu in the message: %s", (unsigned char)*c,
                (size_t)(c - err->msg), err->msg);
}

/* Lines of buf: how many, and the length of line `no` (1-based, without its
 * newline); a line past the end has length 0. */
static inline size_t fuzz_line_len(const char *buf, size_t len, size_t no, size_t *nlines) {
  size_t ln = 1, start = 0, want = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i == len || buf[i] == '\n') {
      if (ln == no) want = i - start;
      if (i < len) {
        ln++;
        start = i + 1;
      }
    }
  }
  *nlines = ln;
  return want;
}

/* msg must start with "name:LINE:" (and "COLUMN:" when with_col), a line of
 * buf (or the one just past its end), a column within that line (or just past
 * its end), then ": " and a reason. */
static inline void fuzz_check_position(const char *msg, const char *name, const char *buf,
                                       size_t len, int with_col) {
  size_t nl = strlen(name);
  FUZZ_ASSERT(strncmp(msg, name, nl) == 0 && msg[nl] == ':', "no '%s:' prefix: %s", name, msg);
  char *e;
  unsigned long line = strtoul(msg + nl + 1, &e, 10);
  FUZZ_ASSERT(e > msg + nl + 1 && *e == ':', "no line number: %s", msg);
  size_t nlines, ll = fuzz_line_len(buf, len, line, &nlines);
  FUZZ_ASSERT(line >= 1 && line <= nlines + 1, "line %lu of %zu: %s", line, nlines, msg);
  if (with_col) {
    const char *c = e + 1;
    unsigned long col = strtoul(c, &e, 10);
    FUZZ_ASSERT(e > c && *e == ':', "no column: %s", msg);
    FUZZ_ASSERT(col >= 1 && col <= ll + 1, "column %lu of a %zu-byte line: %s", col, ll, msg);
  }
  FUZZ_ASSERT(e[1] == ' ' && e[2] != '\0', "no reason after the position: %s", msg);
}

/* text (len bytes) into a new memfd named name, for the readers that take a
 * path: its /proc/self/fd path into path; the descriptor, to close. */
static inline int fuzz_memfd(const char *name, const void *text, size_t len, char *path,
                             size_t cap) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  FUZZ_ASSERT(fd >= 0, "memfd_create");
  FUZZ_ASSERT(write(fd, text, len) == (ssize_t)len, "write");
  snprintf(path, cap, "/proc/self/fd/%d", fd);
  return fd;
}

static inline void fuzz_trace_equal(const memstub_trace *a, const memstub_trace *b) {
  FUZZ_ASSERT(a->n == b->n, "rows %zu != %zu", a->n, b->n);
  for (size_t i = 0; i < a->n; i++)
    FUZZ_ASSERT(a->pts[i].time_ns == b->pts[i].time_ns &&
                    a->pts[i].stack_bytes == b->pts[i].stack_bytes &&
                    a->pts[i].heap_bytes == b->pts[i].heap_bytes,
                "row %zu differs", i);
  FUZZ_ASSERT(a->nextra == b->nextra, "extra columns %zu != %zu", a->nextra, b->nextra);
  for (size_t c = 0; c < a->nextra; c++)
    FUZZ_ASSERT(strcmp(a->extra_names[c], b->extra_names[c]) == 0, "column '%s' != '%s'",
                a->extra_names[c], b->extra_names[c]);
  if (a->nextra)
    FUZZ_ASSERT(memcmp(a->extra, b->extra, a->n * a->nextra * sizeof *a->extra) == 0,
                "extra values differ");
  FUZZ_ASSERT(a->nmeta == b->nmeta, "metadata %zu != %zu", a->nmeta, b->nmeta);
  for (size_t i = 0; i < a->nmeta; i++)
    FUZZ_ASSERT(strcmp(a->meta[i].key, b->meta[i].key) == 0 &&
                    strcmp(a->meta[i].value, b->meta[i].value) == 0,
                "metadata %zu: '%s: %s' != '%s: %s'", i, a->meta[i].key, a->meta[i].value,
                b->meta[i].key, b->meta[i].value);
}

/* An importer's "stack: unknown (...)" or "heap: unknown (...)" (docs/formats.md):
 * the value starts with "unknown", and the column is 0 in every row. */
static inline void fuzz_check_unknown(const memstub_trace *t) {
  const char *s = memstub_trace_get_meta(t, "stack"), *h = memstub_trace_get_meta(t, "heap");
  FUZZ_ASSERT(!s || strncmp(s, "unknown", 7) == 0, "stack: '%s'", s);
  FUZZ_ASSERT(!h || strncmp(h, "unknown", 7) == 0, "heap: '%s'", h);
  for (size_t i = 0; i < t->n; i++) {
    FUZZ_ASSERT(!s || t->pts[i].stack_bytes == 0, "stack unknown, row %zu has %lld", i,
                (long long)t->pts[i].stack_bytes);
    FUZZ_ASSERT(!h || t->pts[i].heap_bytes == 0, "heap unknown, row %zu has %lld", i,
                (long long)t->pts[i].heap_bytes);
  }
}

/* A trace someone accepted (a reader or an importer) is valid, and survives
 * memstub_trace_fwrite and memstub_trace_parse unchanged. */
static inline void fuzz_trace_round_trip(const memstub_trace *t) {
  memstub_error err = {0};
  FUZZ_ASSERT(memstub_trace_validate(t, &err) == 0, "accepted but invalid: %s", err.msg);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  FUZZ_ASSERT(f != NULL, "open_memstream");
  FUZZ_ASSERT(memstub_trace_fwrite(t, f) == 0, "memstub_trace_fwrite");
  FUZZ_ASSERT(fclose(f) == 0, "fclose");
  memstub_trace *u = NULL;
  int rc = memstub_trace_parse("written.csv", text, len, &u, &err);
  FUZZ_ASSERT(rc == 0, "what the writer wrote is refused: %s", err.msg);
  fuzz_trace_equal(t, u);
  memstub_trace_free(u);
  free(text);
}

#endif
