// The strict reader for trace format v1. The first problem found is reported
// as "name:line:column: reason"; nothing is returned on failure.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_common.h"
#include "memstub/trace.h"
#include "trace_threads.h"

static const char *const fixed_cols[3] = {"time_ns", "stack_bytes", "heap_bytes"};

typedef struct parser {
  const char *name;
  const char *buf, *end;
  size_t line;          // 1-based number of the line being parsed
  const char *linep;    // start of that line
  memstub_error *err;
  // Per column: 0 an integer, 1 an integer or empty (thread_peer, xfree_*), 2 thread_event.
  unsigned char kind[3 + MEMSTUB_TRACE_MAX_EXTRA_COLUMNS];
  int threads;             // the trace has a `thread` column: rows' lines are kept
  size_t *rline, *roff;    // per data row, for the thread rules' messages
  size_t lcap;
} parser;

// Report at byte p of the current line.
__attribute__((format(printf, 3, 4))) static int fail(parser *ps, const char *p,
                                                      const char *fmt, ...) {
  char where[MEMSTUB_ERRMSG_MAX];
  snprintf(where, sizeof where, "%s:%zu:%zu", ps->name, ps->line, (size_t)(p - ps->linep) + 1);
  va_list ap;
  va_start(ap, fmt);
  int rc = ms__error_vat(ps->err, -EINVAL, where, fmt, ap);
  va_end(ap);
  return rc;
}

static int is_space(char c) { return c == ' ' || c == '\t'; }

typedef struct field {
  const char *p;  // first byte after leading blanks
  size_t n;       // length without trailing blanks
} field;

// Split [p, e) at commas into at most max fields; returns the number found
// (which may exceed max: the rest are not stored, but *stray points at the
// first one beyond max).
static size_t split(const char *p, const char *e, field *f, size_t max, const char **stray) {
  size_t k = 0;
  *stray = NULL;
  for (;;) {
    const char *s = p;
    while (s < e && *s != ',') s++;
    const char *a = p, *b = s;
    while (a < b && is_space(*a)) a++;
    while (b > a && is_space(b[-1])) b--;
    if (k < max)
      f[k] = (field){a, (size_t)(b - a)};
    else if (k == max)
      *stray = a;
    k++;
    if (s == e) return k;
    p = s + 1;
  }
}

static int parse_magic(parser *ps, const char *p, const char *e) {
  // p points just past "memstub-trace".
  const char *v = p;
  while (v < e && is_space(*v)) v++;
  const char *ve = e;
  while (ve > v && is_space(ve[-1])) ve--;
  int64_t ver;
  if (ms__parse_i64(v, (size_t)(ve - v), &ver) < 0)
    return fail(ps, v, "bad format line: expected '# %s %d'", MEMSTUB_TRACE_MAGIC,
                MEMSTUB_TRACE_VERSION);
  if (ver != MEMSTUB_TRACE_VERSION)
    return fail(ps, v, "unsupported trace format version %lld (this memstub reads version %d)",
                (long long)ver, MEMSTUB_TRACE_VERSION);
  return 0;
}

// A '#' line: the format marker, "key: value" metadata, or a plain comment.
static int parse_comment(parser *ps, memstub_trace *t, const char *p, const char *e) {
  p++;  // '#'
  while (p < e && is_space(*p)) p++;
  size_t ml = strlen(MEMSTUB_TRACE_MAGIC);
  if ((size_t)(e - p) >= ml && memcmp(p, MEMSTUB_TRACE_MAGIC, ml) == 0 &&
      (p + ml == e || is_space(p[ml])))
    return parse_magic(ps, p + ml, e);
  const char *k = p;
  while (p < e && ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                   (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || *p == '-'))
    p++;
  const char *ke = p;
  while (p < e && is_space(*p)) p++;
  if (ke == k || p == e || *p != ':') return 0;  // plain comment
  p++;
  while (p < e && is_space(*p)) p++;
  const char *ve = e;
  while (ve > p && is_space(ve[-1])) ve--;
  // Key and value whole, however long: what the writer writes reads back.
  size_t kl = (size_t)(ke - k), vl = (size_t)(ve - p);
  char *key = malloc(kl + 1 + vl + 1);
  if (!key) return memstub_error_set(ps->err, -ENOMEM, "%s: out of memory", ps->name);
  char *val = key + kl + 1;
  memcpy(key, k, kl);
  key[kl] = '\0';
  memcpy(val, p, vl);
  val[vl] = '\0';
  int rc = memstub_trace_set_meta(t, key, val);
  free(key);
  if (rc < 0) return memstub_error_set(ps->err, -ENOMEM, "%s: out of memory", ps->name);
  return 0;
}

static int parse_header(parser *ps, memstub_trace *t, const char *p, const char *e) {
  enum { MAXCOLS = 3 + MEMSTUB_TRACE_MAX_EXTRA_COLUMNS };
  field f[MAXCOLS];
  const char *stray;
  size_t n = split(p, e, f, MAXCOLS, &stray);
  if (stray)
    return fail(ps, stray, "header row: too many columns (at most %d beyond the first three)",
                MEMSTUB_TRACE_MAX_EXTRA_COLUMNS);
  int looks_numeric = f[0].n > 0 && f[0].p[0] >= '0' && f[0].p[0] <= '9';
  for (size_t i = 0; i < 3; i++) {
    if (i >= n)
      return fail(ps, e, "header row: missing column '%s' (expected '%s,%s,%s' first)",
                  fixed_cols[i], fixed_cols[0], fixed_cols[1], fixed_cols[2]);
    if (f[i].n != strlen(fixed_cols[i]) || memcmp(f[i].p, fixed_cols[i], f[i].n) != 0) {
      char q[MS__QUOTE_MAX + 4];
      if (i == 0 && looks_numeric)
        return fail(ps, f[0].p, "missing header row: expected '%s,%s,%s' before the data",
                    fixed_cols[0], fixed_cols[1], fixed_cols[2]);
      return fail(ps, f[i].p, "header row: column %zu must be '%s', found '%s'", i + 1,
                  fixed_cols[i], ms__quote(f[i].p, f[i].n, 24, q));
    }
  }
  for (size_t i = 3; i < n; i++) {
    char name[128], q[MS__QUOTE_MAX + 4];
    if (f[i].n == 0 || f[i].n >= sizeof name)
      return fail(ps, f[i].p, "header row: column %zu has %s name", i + 1,
                  f[i].n ? "a too long" : "an empty");
    memcpy(name, f[i].p, f[i].n);
    name[f[i].n] = '\0';
    int rc = memstub_trace_add_column(t, name);
    if (rc == -ENOMEM) return memstub_error_set(ps->err, -ENOMEM, "%s: out of memory", ps->name);
    if (rc < 0)
      return fail(ps, f[i].p, "header row: column %zu: '%s' is %s", i + 1,
                  ms__quote(f[i].p, f[i].n, 24, q),
                  memstub_trace_column(t, name) >= 0 || strcmp(name, fixed_cols[0]) == 0 ||
                          strcmp(name, fixed_cols[1]) == 0 || strcmp(name, fixed_cols[2]) == 0
                      ? "a duplicate column name"
                      : "not a valid column name");
    static const char *const nullable[] = {"thread_peer", "xfree_from", "xfree_bytes",
                                           "xfree_alloc_ns"};
    for (size_t k = 0; k < sizeof nullable / sizeof *nullable; k++)
      if (strcmp(name, nullable[k]) == 0) ps->kind[i] = 1;
    if (strcmp(name, "thread_event") == 0) ps->kind[i] = 2;
    if (ps->kind[i] || strcmp(name, "thread") == 0) ps->threads = 1;
  }
  return 0;
}

// A thread_event field: empty, start, exit or join.
static int parse_event(parser *ps, const field *f, int64_t *v) {
  static const char *const names[] = {"start", "exit", "join"};
  static const int64_t codes[] = {MEMSTUB_THREAD_EVENT_START, MEMSTUB_THREAD_EVENT_EXIT,
                                  MEMSTUB_THREAD_EVENT_JOIN};
  if (f->n == 0) {
    *v = MEMSTUB_THREAD_EVENT_NONE;
    return 0;
  }
  for (size_t k = 0; k < 3; k++)
    if (f->n == strlen(names[k]) && memcmp(f->p, names[k], f->n) == 0) {
      *v = codes[k];
      return 0;
    }
  char q[MS__QUOTE_MAX + 4];
  return fail(ps, f->p, "thread_event: unknown event '%s' (start, exit, join or empty)",
              ms__quote(f->p, f->n, 24, q));
}

// Parse one data row and append it to t.
static int parse_row(parser *ps, memstub_trace *t, const char *p, const char *e) {
  enum { MAXF = 3 + MEMSTUB_TRACE_MAX_EXTRA_COLUMNS };
  field f[MAXF];
  size_t want = 3 + t->nextra;
  const char *stray;
  size_t n = split(p, e, f, want, &stray);
  if (n < want) {
    char cols[256] = "";
    size_t off = 0;
    for (size_t i = 0; i < want && off < sizeof cols - 1; i++)
      off += (size_t)snprintf(cols + off, sizeof cols - off, "%s%s", i ? "," : "",
                              i < 3 ? fixed_cols[i] : t->extra_names[i - 3]);
    return fail(ps, e, "expected %zu fields (%s), found %zu", want, cols, n);
  }
  if (stray)
    return fail(ps, stray, "stray field %zu: the header row names %zu columns", want + 1, want);
  int64_t v[MAXF];
  for (size_t i = 0; i < want; i++) {
    const char *cname = i < 3 ? fixed_cols[i] : t->extra_names[i - 3];
    char q[MS__QUOTE_MAX + 4];
    if (ps->kind[i] == 2) {
      int rc = parse_event(ps, &f[i], &v[i]);
      if (rc < 0) return rc;
      continue;
    }
    if (f[i].n == 0 && ps->kind[i] == 1) {
      v[i] = MEMSTUB_TRACE_EMPTY;
      continue;
    }
    if (f[i].n == 0) return fail(ps, f[i].p, "%s: empty field", cname);
    int rc = ms__parse_i64(f[i].p, f[i].n, &v[i]);
    if (rc == -ERANGE)
      return fail(ps, f[i].p, "%s: %s does not fit in 64 bits", cname, ms__quote(f[i].p, f[i].n, 24, q));
    if (rc < 0)
      return fail(ps, f[i].p, "%s: not an integer: '%s'", cname, ms__quote(f[i].p, f[i].n, 24, q));
    if (i < 3 && v[i] < 0)
      return fail(ps, f[i].p, "%s: negative %s %lld", cname, i == 0 ? "time" : "total",
                  (long long)v[i]);
  }
  if (t->n > 0 && v[0] < t->pts[t->n - 1].time_ns)
    return fail(ps, f[0].p, "time_ns: decreases from %lld to %lld",
                (long long)t->pts[t->n - 1].time_ns, (long long)v[0]);
  if (ps->threads && t->n == ps->lcap) {
    size_t cap = ps->lcap ? ps->lcap * 2 : 256;
    size_t *l = realloc(ps->rline, cap * sizeof *l);
    if (l) ps->rline = l;
    size_t *o = l ? realloc(ps->roff, cap * sizeof *o) : NULL;
    if (o) ps->roff = o;
    if (!l || !o) return memstub_error_set(ps->err, -ENOMEM, "%s: out of memory", ps->name);
    ps->lcap = cap;
  }
  if (ps->threads) {
    ps->rline[t->n] = ps->line;
    ps->roff[t->n] = (size_t)(ps->linep - ps->buf);
  }
  if (memstub_trace_append(t, v[0], v[1], v[2]) < 0)
    return memstub_error_set(ps->err, -ENOMEM, "%s: out of memory", ps->name);
  if (t->nextra) memcpy(memstub_trace_extra_row(t, t->n - 1), v + 3, t->nextra * sizeof *v);
  return 0;
}

int memstub_trace_parse(const char *name, const char *buf, size_t len, memstub_trace **out,
                        memstub_error *err) {
  *out = NULL;
  parser ps = {.name = name, .buf = buf, .end = buf + len, .line = 0, .err = err};
  memstub_trace *t = memstub_trace_create();
  if (!t) return memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
  // Guess the row count from the size so big traces grow the arrays once.
  if (memstub_trace_reserve(t, len / 16 + 16) < 0) {
    memstub_trace_free(t);
    return memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
  }
  int have_header = 0, rc = 0;
  const char *p = buf;
  while (p < ps.end) {
    ps.line++;
    ps.linep = p;
    const char *nl = memchr(p, '\n', (size_t)(ps.end - p));
    const char *e = nl ? nl : ps.end;
    const char *next = nl ? nl + 1 : ps.end;
    if (e > p && e[-1] == '\r') e--;
    const char *s = p;
    while (s < e && is_space(*s)) s++;
    if (s == e) {  // blank
      p = next;
      continue;
    }
    // Not text, in a comment as anywhere else (a metadata value would end there).
    const char *nul = memchr(s, '\0', (size_t)(e - s));
    if (nul) {
      rc = fail(&ps, nul, "NUL byte in the input");
      break;
    }
    if (*s == '#') {
      if ((rc = parse_comment(&ps, t, s, e)) < 0) break;
      p = next;
      continue;
    }
    if (!nl) {
      rc = fail(&ps, e, "truncated last line: no newline at the end of the file");
      break;
    }
    rc = have_header ? parse_row(&ps, t, p, e) : parse_header(&ps, t, p, e);
    if (rc < 0) break;
    have_header = 1;
    p = next;
  }
  if (rc == 0 && (!have_header || t->n == 0)) {
    // Point just past the last line.
    ps.line++;
    ps.linep = p;
    rc = have_header ? fail(&ps, p, "empty trace: no data rows after the header row")
         : ps.line == 1
             ? fail(&ps, p, "empty file: expected the header row '%s,%s,%s'", fixed_cols[0],
                    fixed_cols[1], fixed_cols[2])
             : fail(&ps, p, "missing header row: expected '%s,%s,%s'", fixed_cols[0],
                    fixed_cols[1], fixed_cols[2]);
  }
  if (rc == 0 && ps.threads) {
    ms__trace_where w = {.name = name, .buf = buf, .line = ps.rline, .off = ps.roff};
    rc = ms__trace_check_threads(t, &w, err);
  }
  free(ps.rline);
  free(ps.roff);
  return MS__HAND_OUT(rc, t, out, memstub_trace_free);
}

int memstub_trace_read(const char *path, memstub_trace **out, memstub_error *err) {
  char *buf;
  size_t len;
  *out = NULL;
  int rc = ms__read_file(path, &buf, &len, err);
  if (rc < 0) return rc;
  rc = memstub_trace_parse(strcmp(path, "-") == 0 ? "<stdin>" : path, buf, len, out, err);
  free(buf);
  return rc;
}
