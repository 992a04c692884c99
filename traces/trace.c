// The in-memory trace: rows, extra columns and metadata.
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ms_common.h"
#include "memstub/trace.h"

memstub_trace *memstub_trace_create(void) { return calloc(1, sizeof(memstub_trace)); }

void memstub_trace_free(memstub_trace *t) {
  if (!t) return;
  for (size_t i = 0; i < t->nextra; i++) free(t->extra_names[i]);
  for (size_t i = 0; i < t->nmeta; i++) {
    free(t->meta[i].key);
    free(t->meta[i].value);
  }
  free(t->extra_names);
  free(t->extra);
  free(t->meta);
  free(t->pts);
  free(t);
}

int memstub_trace_column(const memstub_trace *t, const char *name) {
  for (size_t i = 0; i < t->nextra; i++)
    if (strcmp(t->extra_names[i], name) == 0) return (int)i;
  return -1;
}

int memstub_trace_add_column(memstub_trace *t, const char *name) {
  if (t->n > 0 || !ms__is_ident(name, strlen(name)) || memstub_trace_column(t, name) >= 0 ||
      strcmp(name, "time_ns") == 0 || strcmp(name, "stack_bytes") == 0 ||
      strcmp(name, "heap_bytes") == 0)
    return -EINVAL;
  if (t->nextra >= MEMSTUB_TRACE_MAX_EXTRA_COLUMNS) return -E2BIG;
  char **names = realloc(t->extra_names, (t->nextra + 1) * sizeof *names);
  if (!names) return -ENOMEM;
  t->extra_names = names;
  if (!(names[t->nextra] = ms__strdup(name))) return -ENOMEM;
  // Rows are added after columns, so extra[] has nothing to widen yet; make
  // sure its capacity follows the row capacity.
  if (t->cap) {
    int64_t *ex = realloc(t->extra, t->cap * (t->nextra + 1) * sizeof *ex);
    if (!ex) {
      free(names[t->nextra]);
      return -ENOMEM;
    }
    t->extra = ex;
  }
  return (int)t->nextra++;
}

int memstub_trace_reserve(memstub_trace *t, size_t n) {
  if (n <= t->cap) return 0;
  memstub_point *pts = realloc(t->pts, n * sizeof *pts);
  if (!pts) return -ENOMEM;
  t->pts = pts;
  if (t->nextra) {
    int64_t *ex = realloc(t->extra, n * t->nextra * sizeof *ex);
    if (!ex) return -ENOMEM;
    t->extra = ex;
  }
  t->cap = n;
  return 0;
}

int memstub_trace_append(memstub_trace *t, int64_t time_ns, int64_t stack_bytes,
                         int64_t heap_bytes) {
  if (t->n == t->cap && memstub_trace_reserve(t, t->cap ? t->cap * 2 : 256) < 0) return -ENOMEM;
  t->pts[t->n] = (memstub_point){time_ns, stack_bytes, heap_bytes};
  if (t->nextra) memset(memstub_trace_extra_row(t, t->n), 0, t->nextra * sizeof(int64_t));
  t->n++;
  return 0;
}

static int is_meta_key(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.' || *s == '-'))
      return 0;
  return 1;
}

static int is_meta_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int memstub_trace_set_meta(memstub_trace *t, const char *key, const char *value) {
  if (!is_meta_key(key)) return -EINVAL;
  // Stored as a "# key: value" line carries it: one line, and no blanks at
  // either end (the reader drops them), so a written trace reads back equal.
  while (is_meta_blank(*value)) value++;
  char *v = ms__strdup(value);
  if (!v) return -ENOMEM;
  size_t n = strlen(v);
  while (n > 0 && is_meta_blank(v[n - 1])) v[--n] = '\0';
  for (char *p = v; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  for (size_t i = 0; i < t->nmeta; i++)
    if (strcmp(t->meta[i].key, key) == 0) {
      free(t->meta[i].value);
      t->meta[i].value = v;
      return 0;
    }
  memstub_meta *m = realloc(t->meta, (t->nmeta + 1) * sizeof *m);
  char *k = ms__strdup(key);
  if (!m || !k) {
    if (m) t->meta = m;
    free(k);
    free(v);
    return -ENOMEM;
  }
  t->meta = m;
  m[t->nmeta++] = (memstub_meta){k, v};
  return 0;
}

const char *memstub_trace_get_meta(const memstub_trace *t, const char *key) {
  for (size_t i = 0; i < t->nmeta; i++)
    if (strcmp(t->meta[i].key, key) == 0) return t->meta[i].value;
  return NULL;
}

int memstub_trace_validate(const memstub_trace *t, memstub_error *err) {
  if (t->n == 0) return memstub_error_set(err, -EINVAL, "empty trace: no data rows");
  if (t->nextra > MEMSTUB_TRACE_MAX_EXTRA_COLUMNS)
    return memstub_error_set(err, -E2BIG, "%zu extra columns: at most %d", t->nextra,
                             MEMSTUB_TRACE_MAX_EXTRA_COLUMNS);
  for (size_t i = 0; i < t->n; i++) {
    const memstub_point *p = &t->pts[i];
    if (p->time_ns < 0)
      return memstub_error_set(err, -EINVAL, "row %zu: time_ns is negative (%lld)", i + 1,
                               (long long)p->time_ns);
    if (p->stack_bytes < 0)
      return memstub_error_set(err, -EINVAL, "row %zu: stack_bytes is negative (%lld)", i + 1,
                               (long long)p->stack_bytes);
    if (p->heap_bytes < 0)
      return memstub_error_set(err, -EINVAL, "row %zu: heap_bytes is negative (%lld)", i + 1,
                               (long long)p->heap_bytes);
    if (i > 0 && p->time_ns < t->pts[i - 1].time_ns)
      return memstub_error_set(err, -EINVAL, "row %zu: time_ns decreases (%lld after %lld)",
                               i + 1, (long long)p->time_ns, (long long)t->pts[i - 1].time_ns);
  }
  return 0;
}
