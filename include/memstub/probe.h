/* memstub/probe.h: mark the component under study inside a real program.
 *
 *   memstub_probe_begin("parse");   // the component starts here
 *   ...   memstub_probe_point();    // optional measuring points
 *   memstub_probe_end();            // and ends here
 *
 * Under `memstub record` (the LD_PRELOAD recorder) these calls limit the
 * trace to the marked regions, and the stack is measured from the frame that
 * called memstub_probe_begin() instead of from the thread's stack top. The
 * recorder also reports the allocator churn of every region by name.
 *
 * Without the recorder the calls do nothing but count the regions (their
 * return values are the same), and nothing is written, unless the program
 * is asked to measure: $MEMSTUB_PROBE_OUTPUT=FILE in its environment, or
 * memstub_probe_measure() in its code. Then they take the measuring points
 * themselves (Trapp et al.'s method): at every begin, point and end the
 * stack pointer relative to the outermost begin's caller, the allocator's
 * bytes in use and a CLOCK_MONOTONIC timestamp go into a buffer reserved
 * with mmap (so it does not disturb the heap), written as a trace at exit to
 * FILE, or earlier with memstub_probe_write(). Its columns: time_ns since the
 * first begin; stack_bytes below the outermost begin's caller; heap_bytes
 * the allocator's bytes in use for the whole process (mallinfo2 uordblks +
 * hblkhd: chunk headers and rounding included, mmapped blocks whole), not
 * the bytes requested that memstub record counts (the trace's heap_measure
 * metadata says so); region the occurrence. docs/recording.md has more.
 *
 * Regions nest: only the outermost begin/end pair delimits the trace and sets
 * the stack base; inner pairs are measuring points (and churn regions under
 * the recorder). A region entered again (a loop) is another occurrence: its
 * rows follow on the same timeline, and the trace's `region` column says which
 * occurrence a row belongs to. Without the recorder, only the thread that
 * opened the first region is measured; calls from other threads return
 * -EPERM. Link with memstub_probe. */
#ifndef MEMSTUB_PROBE_H
#define MEMSTUB_PROBE_H

#include "memstub/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Open a region named name (NULL: "region"; names are compared as strings).
 * Returns the nesting depth after the call (1 for an outermost region), or
 * -EPERM (another thread owns the probe, standalone mode only). */
int memstub_probe_begin(const char *name);

/* A measuring point inside the open region. Returns the current depth, 0
 * when no region is open (then nothing is measured), or -EPERM. */
int memstub_probe_point(void);

/* Close the innermost region. Returns the depth left, -EINVAL when no region
 * is open, or -EPERM. */
int memstub_probe_end(void);

/* 1 when the calls are forwarded to the recorder, 0 when the probe measures
 * by itself. */
int memstub_probe_recording(void);

/* Standalone mode: take the measuring points from the next call on, and
 * write them at exit to path (NULL: only when memstub_probe_write is called),
 * as $MEMSTUB_PROBE_OUTPUT=path does. 0; 1 under the recorder (which records
 * anyway; nothing changes); -ENAMETOOLONG. */
int memstub_probe_measure(const char *path);

/* Standalone mode: write the points taken so far as a trace to path (NULL:
 * the file asked for, $MEMSTUB_PROBE_OUTPUT or memstub_probe_measure's),
 * atomically, and start a new buffer. 0; -ENODATA when there is nothing to
 * write (not asked to measure, no point yet, or under the recorder, which
 * writes its own trace); -EINVAL for a NULL path with no file asked for; or
 * a negative errno with err set. */
int memstub_probe_write(const char *path, memstub_error *err);

#ifdef __cplusplus
}
#endif
#endif
