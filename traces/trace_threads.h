/* traces/trace_threads.h: the thread rules of the trace format (docs/formats.md
 * "Threads"), shared by the validator (trace.c) and the reader (trace_read.c). */
#ifndef MEMSTUB_TRACE_THREADS_H
#define MEMSTUB_TRACE_THREADS_H

#include <stddef.h>

#include "memstub/trace.h"

// Threads a trace may number (0..MS__TRACE_MAX_THREADS-1).
#define MS__TRACE_MAX_THREADS 65536

/* Where the rows came from, for messages: the file's name and text, and per
 * data row the 1-based line and the offset of the line's first byte. */
typedef struct ms__trace_where {
  const char *name;
  const char *buf;
  const size_t *line;  // [t->n]
  const size_t *off;   // [t->n]
} ms__trace_where;

/* Check the thread rules: 0, or -EINVAL with err naming "name:line:column:
 * field: reason" (w given) or "row N: field: reason" (w NULL), or -ENOMEM. */
int ms__trace_check_threads(const memstub_trace *t, const ms__trace_where *w, memstub_error *err);

#endif
