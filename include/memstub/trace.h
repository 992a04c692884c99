/* memstub/trace.h: the CSV trace format, version 1 (docs/formats.md).
 *
 *   # memstub-trace 1
 *   # source: massif
 *   time_ns,stack_bytes,heap_bytes[,extra...]
 *   0,1024,0
 *
 * A trace is a growing table: three fixed columns (time, stack and heap
 * totals) plus any number of extra signed 64-bit integer columns, and ordered
 * "key: value" metadata. The reader is strict and reports the first problem as
 * "file:line:column: reason"; the writer is atomic (temporary file, then
 * rename), so a failure never leaves a half-written file. */
#ifndef MEMSTUB_TRACE_H
#define MEMSTUB_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memstub/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MEMSTUB_TRACE_VERSION 1
#define MEMSTUB_TRACE_MAGIC "memstub-trace"
/* The extra columns a trace may have beyond the fixed three: adding one more
 * is refused (-E2BIG), and so is a file with more. */
#define MEMSTUB_TRACE_MAX_EXTRA_COLUMNS 64

typedef struct memstub_point {
  int64_t time_ns;      /* since the component started; never decreases */
  int64_t stack_bytes;  /* stack in use, from the entry stack pointer; >= 0 */
  int64_t heap_bytes;   /* heap held by the component; >= 0 */
} memstub_point;

typedef struct memstub_meta {
  char *key;
  char *value;
} memstub_meta;

typedef struct memstub_trace {
  size_t n;              /* rows */
  memstub_point *pts;    /* [n] */
  size_t nextra;         /* extra columns after the fixed three */
  char **extra_names;    /* [nextra] */
  int64_t *extra;        /* [n * nextra], row-major */
  size_t nmeta;
  memstub_meta *meta;    /* in file order */
  size_t cap;            /* rows allocated */
} memstub_trace;

/* An empty trace with the three fixed columns; NULL when out of memory. */
memstub_trace *memstub_trace_create(void);
void memstub_trace_free(memstub_trace *t);

/* Add an extra column (before any row is added). name must be an identifier
 * ([A-Za-z_][A-Za-z0-9_]*) not used yet. Returns its index among the extra
 * columns, or -EINVAL (a bad or used name, or rows already added), -E2BIG
 * (MEMSTUB_TRACE_MAX_EXTRA_COLUMNS columns already) or -ENOMEM. */
int memstub_trace_add_column(memstub_trace *t, const char *name);

/* Index of the extra column called name, or -1. */
int memstub_trace_column(const memstub_trace *t, const char *name);

/* Reserve room for at least n rows. 0 or -ENOMEM. */
int memstub_trace_reserve(memstub_trace *t, size_t n);

/* Append a row; its extra values start at 0 (set them with
 * memstub_trace_extra_set). No checks: writers validate. 0 or -ENOMEM. */
int memstub_trace_append(memstub_trace *t, int64_t time_ns, int64_t stack_bytes,
                         int64_t heap_bytes);

static inline int64_t *memstub_trace_extra_row(const memstub_trace *t, size_t row) {
  return t->extra + row * t->nextra;
}

/* Set (replace) a metadata value. key: [A-Za-z0-9_.-]+; a value's newlines are
 * stored as spaces and blanks at either end are dropped, as the format carries
 * it. 0, -EINVAL or -ENOMEM. */
int memstub_trace_set_meta(memstub_trace *t, const char *key, const char *value);

/* The value for key, or NULL. */
const char *memstub_trace_get_meta(const memstub_trace *t, const char *key);

/* Parse a trace held in memory; name is used in messages. On success *out owns
 * a new trace. On failure returns -EINVAL (bad input) or -ENOMEM, *out is NULL
 * and err says "name:line:column: reason". */
int memstub_trace_parse(const char *name, const char *buf, size_t len,
                        memstub_trace **out, memstub_error *err);

/* Read and parse a file ("-" for standard input). As memstub_trace_parse, plus
 * -errno when the file cannot be read. */
int memstub_trace_read(const char *path, memstub_trace **out, memstub_error *err);

/* Check a trace built in memory against the format's rules (non-negative
 * totals, time never decreasing, at least one row, and the thread rules of
 * docs/formats.md "Threads" when it has a `thread` column). 0 or -EINVAL with the
 * offending row in err (as "row N", 1-based data row). */
int memstub_trace_validate(const memstub_trace *t, memstub_error *err);

/* Write the trace in format v1 to an open stream. 0 or -EIO. */
int memstub_trace_fwrite(const memstub_trace *t, FILE *f);

/* Validate, then write atomically to path ("-" for standard output): the
 * file appears complete or not at all. 0 or a negative errno with err set. */
int memstub_trace_write(const memstub_trace *t, const char *path, memstub_error *err);

/* ---- Threads (docs/formats.md, "Threads") ------------------------------
 *
 * A trace recorded with `memstub record --thread all` has the columns
 * `thread` (the row's thread, 0, 1, ... in creation order), `thread_event`
 * (empty, `start`, `exit` or `join`), `thread_peer` (the creator of a
 * `start`, -1 unknown; the joined thread of a `join`; else empty), and the
 * cross-thread free triple `xfree_from`, `xfree_bytes`, `xfree_alloc_ns`
 * (all empty but on a row that frees blocks another thread allocated). In
 * memory they are extra columns like any other: an empty field is
 * MEMSTUB_TRACE_EMPTY, and thread_event holds MEMSTUB_THREAD_EVENT_*; the
 * writer writes them back as text. A trace without `thread` is a
 * single-threaded trace exactly as before. */
#define MEMSTUB_TRACE_EMPTY INT64_MIN
enum {
  MEMSTUB_THREAD_EVENT_NONE = 0,
  MEMSTUB_THREAD_EVENT_START = 1,
  MEMSTUB_THREAD_EVENT_EXIT = 2,
  MEMSTUB_THREAD_EVENT_JOIN = 3,
};

/* The indexes among the extra columns of the thread columns, -1 for absent. */
typedef struct memstub_trace_threadcols {
  int thread, event, peer;
  int xfree_from, xfree_bytes, xfree_alloc_ns;
} memstub_trace_threadcols;

/* Find the thread columns of t (all -1 for a single-threaded trace). */
void memstub_trace_threadcols_find(const memstub_trace *t, memstub_trace_threadcols *c);

/* Threads in t: 1 without a `thread` column, else the highest thread number
 * + 1 (a valid trace numbers its threads 0..N-1 with none missing). */
int64_t memstub_trace_thread_count(const memstub_trace *t);

/* The row's thread: 0 without a `thread` column. */
int64_t memstub_trace_row_thread(const memstub_trace *t, size_t row);

/* The rows of thread th, in order, into a new malloc'd array *rows of *n
 * entries (NULL and 0 when the thread has none). 0 or -ENOMEM. */
int memstub_trace_thread_rows(const memstub_trace *t, int64_t th, size_t **rows, size_t *n);

/* Thread th's rows of t as a trace of their own, with every column but the
 * six thread columns, and t's metadata. 0 or -ENOMEM (*out NULL). */
int memstub_trace_thread_split(const memstub_trace *t, int64_t th, memstub_trace **out);

/* The name of a MEMSTUB_THREAD_EVENT_* value ("" for NONE, NULL if unknown). */
const char *memstub_thread_event_name(int64_t ev);

#ifdef __cplusplus
}
#endif
#endif
