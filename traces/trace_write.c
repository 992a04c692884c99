// The writer for trace format v1: validated, then written atomically.
#include <errno.h>
#include <string.h>

#include "ms_common.h"
#include "memstub/trace.h"

// Decimal digits of v at the end of buf[20..]; returns the first digit.
static char *fmt_i64(int64_t v, char *end) {
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  char *p = end;
  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) *--p = '-';
  return p;
}

int memstub_trace_fwrite(const memstub_trace *t, FILE *f) {
  fprintf(f, "# %s %d\n", MEMSTUB_TRACE_MAGIC, MEMSTUB_TRACE_VERSION);
  for (size_t i = 0; i < t->nmeta; i++) fprintf(f, "# %s: %s\n", t->meta[i].key, t->meta[i].value);
  fputs("time_ns,stack_bytes,heap_bytes", f);
  for (size_t c = 0; c < t->nextra; c++) fprintf(f, ",%s", t->extra_names[c]);
  fputc('\n', f);
  // Rows are formatted by hand into one buffer: several times faster than
  // fprintf for the million-row traces the generator benchmarks use. The
  // buffer is flushed whenever the next field might not fit, so no number of
  // columns can overflow it.
  enum { FIELD_MAX = 21 };  // 20 characters and a separator
  char line[4096];
  char *w = line;
  // The thread columns' text (docs/formats.md, "Threads"): events by name, empty fields.
  memstub_trace_threadcols tc;
  memstub_trace_threadcols_find(t, &tc);
  const int textual[] = {tc.event, tc.peer, tc.xfree_from, tc.xfree_bytes, tc.xfree_alloc_ns};
  unsigned char kind[3 + MEMSTUB_TRACE_MAX_EXTRA_COLUMNS] = {0};
  for (size_t k = 0; k < sizeof textual / sizeof *textual; k++)
    if (textual[k] >= 0 && (size_t)textual[k] < MEMSTUB_TRACE_MAX_EXTRA_COLUMNS)
      kind[3 + textual[k]] = k == 0 ? 2 : 1;
  for (size_t r = 0; r < t->n; r++) {
    const int64_t fixed[3] = {t->pts[r].time_ns, t->pts[r].stack_bytes, t->pts[r].heap_bytes};
    const int64_t *ex = t->nextra ? memstub_trace_extra_row(t, r) : NULL;
    for (size_t c = 0; c < 3 + t->nextra; c++) {
      if ((size_t)(line + sizeof line - w) < FIELD_MAX + 1) {
        fwrite(line, 1, (size_t)(w - line), f);
        w = line;
      }
      char num[24];
      int64_t v = c < 3 ? fixed[c] : ex[c - 3];
      char *s = fmt_i64(v, num + sizeof num);
      size_t n = (size_t)(num + sizeof num - s);
      if (c < 3 + MEMSTUB_TRACE_MAX_EXTRA_COLUMNS && kind[c] && v == MEMSTUB_TRACE_EMPTY) {
        n = 0;
      } else if (c < 3 + MEMSTUB_TRACE_MAX_EXTRA_COLUMNS && kind[c] == 2) {
        const char *name = memstub_thread_event_name(v);
        if (name) s = (char *)name, n = strlen(name);  // unknown: the number (validate refuses)
      }
      if (c) *w++ = ',';
      memcpy(w, s, n);
      w += n;
    }
    *w++ = '\n';
  }
  fwrite(line, 1, (size_t)(w - line), f);
  return ferror(f) ? -EIO : 0;
}

int memstub_trace_write(const memstub_trace *t, const char *path, memstub_error *err) {
  int rc = memstub_trace_validate(t, err);
  if (rc < 0) {
    memstub_error_prefix(err, path);
    return rc;
  }
  ms__afile af;
  if ((rc = ms__afile_open(&af, path, err)) < 0) return rc;
  if (memstub_trace_fwrite(t, af.f) < 0) {
    int e = errno ? errno : EIO;
    ms__afile_abort(&af);
    return memstub_error_set(err, -e, "%s: cannot write: %s", path, strerror(e));
  }
  return ms__afile_commit(&af, err);
}
