/* traces/calls.h: reading TRACE.calls, the allocation sequence that
 * `memstub record --calls` writes (docs/formats.md, "The calls file"; its
 * layout in calls_format.h). The file is read whole and checked as it is
 * decoded: every error names the file, the byte offset and what is wrong. */
#ifndef MEMSTUB_TRACES_CALLS_H
#define MEMSTUB_TRACES_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "memstub/error.h"
#include "calls_format.h"

// One call, decoded.
typedef struct ms__call {
  int64_t t_ns;      // since the trace's time 0 (rounded from the clock units)
  uint32_t thread;   // the block's thread
  uint8_t fn;        // MS__CALLS_*
  uint8_t failed;    // no block came back (realloc of size 0: the old one freed)
  uint64_t size;     // bytes asked for (0 for free)
  uint64_t align;    // posix_memalign, aligned_alloc, memalign (else 0)
  uint64_t old;      // free, realloc: the block given (0: NULL)
  uint64_t addr;     // the block returned (0: none)
} ms__call;

typedef struct ms__calls ms__calls;

// The calls file at path, read and its head checked, into *out. 0, or a
// negative errno with err set ("PATH: what is wrong").
int ms__calls_open(const char *path, ms__calls **out, memstub_error *err);
/* The next call in the file's order (blocks as written: one thread's calls
 * in order, threads' blocks interleaved) into *call. 1, 0 at the end (the
 * count checked against the head's), or a negative errno with err set
 * ("PATH: byte N: what is wrong"). */
int ms__calls_next(ms__calls *c, ms__call *call, memstub_error *err);
/* The same file, its calls read in time order across threads (the file's
 * order on a tie) by ms__calls_next: one stream of the process's calls, as
 * a recording of one thread with the process's heap counts them. */
int ms__calls_open_merged(const char *path, ms__calls **out, memstub_error *err);
/* Merged: the calls given so far out of time order, each another thread's
 * free (or malloc) taken before the call that needs it (a call's time is its
 * thread's last clock reading, up to 15 calls old). 0 for a file's order. */
uint64_t ms__calls_repaired(const ms__calls *c);
// The file's head (its calls, clock, origin).
const ms__calls_head *ms__calls_head_of(const ms__calls *c);
void ms__calls_close(ms__calls *c);

/* A calls file written by an importer (calls_write.c): one thread, times in
 * ns from the trace's time 0, written to a temporary file and put in place
 * by ms__calls_writer_commit, or left out by ms__calls_writer_abort. */
typedef struct ms__calls_writer ms__calls_writer;
// 0 or a negative errno with err naming path (a device or "-" is refused).
int ms__calls_writer_open(const char *path, ms__calls_writer **out, memstub_error *err);
/* One call at t_ns (not before the one before it): fn MS__CALLS_*, old the
 * block given (free, realloc; 0 NULL), p the block returned (0 none), as in
 * calls_format.h. 0 or -EIO with err set. */
int ms__calls_writer_add(ms__calls_writer *w, int64_t t_ns, int fn, uint64_t old, uint64_t p,
                         uint64_t size, uint64_t align, int failed, memstub_error *err);
// Write the head and put the file in place; w is gone either way. 0 or -errno.
int ms__calls_writer_commit(ms__calls_writer *w, memstub_error *err);
void ms__calls_writer_abort(ms__calls_writer *w);

#endif
