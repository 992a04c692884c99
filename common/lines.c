// Lines and blank-separated fields of memstub's text side files, for their
// strict readers ("path:LINE: field N: what is wrong").
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_common.h"

void ms__lines_init(ms__lines *l, const char *path, char *buf, size_t len) {
  *l = (ms__lines){.path = path, .p = buf, .end = buf + len, .line = 0};
}

int ms__lines_next(ms__lines *l, char **line, memstub_error *err) {
  if (l->p >= l->end) return 0;
  l->line++;
  char *s = l->p, *nl = memchr(s, '\n', (size_t)(l->end - s));
  char *e = nl ? nl : l->end;
  if (memchr(s, '\0', (size_t)(e - s)))
    return memstub_error_set(err, -EINVAL, "%s:%ld: a NUL byte: not a text file", l->path, l->line);
  if (!nl)
    return memstub_error_set(err, -EINVAL, "%s:%ld: truncated: the last line has no newline (the "
                             "file is cut short)", l->path, l->line);
  if (e > s && e[-1] == '\r') e--;
  *e = '\0';
  l->p = nl + 1;
  *line = s;
  return 1;
}

int ms__text_line(const char *name, const char *buf, size_t len, size_t *pos, long *line,
                  const char **s, size_t *n, memstub_error *err) {
  if (*pos >= len) return 0;
  const char *b = buf + *pos, *nl = memchr(b, '\n', len - *pos);
  ++*line;
  *s = b;
  if (!nl) {
    *n = len - *pos;
    *pos = len;
    return memstub_error_set(err, -EINVAL,
                             "%s:%ld:%zu: truncated last line: no newline at the end of the file",
                             name, *line, *n + 1);
  }
  *n = (size_t)(nl - b);
  if (*n && b[*n - 1] == '\r') --*n;
  *pos = (size_t)(nl - buf) + 1;
  return 1;
}

int ms__lines_split(char *line, char **f, int max) {
  int n = 0;
  char *p = line;
  while (*p && n < max) {
    while (*p == ' ') p++;
    if (!*p) break;
    f[n++] = p;
    if (n == max) break;
    while (*p && *p != ' ') p++;
    if (*p) *p++ = '\0';
  }
  return n;
}

int ms__lines_fail(const ms__lines *l, int n, memstub_error *err, const char *fmt, ...) {
  char where[MEMSTUB_ERRMSG_MAX];
  snprintf(where, sizeof where, "%s:%ld: field %d", l->path, l->line, n);
  va_list ap;
  va_start(ap, fmt);
  int rc = ms__error_vat(err, -EINVAL, where, fmt, ap);
  va_end(ap);
  return rc;
}

int ms__lines_i64(const ms__lines *l, int n, const char *s, int64_t min, int64_t max,
                  const char *what, int64_t *v, memstub_error *err) {
  char q[MS__QUOTE_MAX + 4];
  int rc = ms__parse_i64(s, strlen(s), v);
  if (rc < 0 || *v < min || *v > max)
    return ms__lines_fail(l, n, err, "'%s' is not %s%s", ms__quote(s, strlen(s), 32, q), what,
                          rc == -ERANGE ? " (beyond 64 bits)" : "");
  return 0;
}

int ms__grow(void **v, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return 0;
  size_t nc = *cap ? 2 * *cap : 16;
  void *nv = realloc(*v, nc * elem);
  if (!nv) return -ENOMEM;
  *v = nv, *cap = nc;
  return 0;
}
