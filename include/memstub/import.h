/* memstub/import.h: traces from other tools' files (docs/recording.md).
 *
 *   valgrind massif (massif.out.PID, text): mem_heap_B becomes heap_bytes,
 *   mem_stacks_B stack_bytes, mem_heap_extra_B an extra column
 *   heap_extra_bytes; times in ms become ns. Instructions (i) or bytes (B)
 *   have no fixed duration and are refused unless ns_per_unit is given.
 *
 *   glibc memusage (the binary file of `memusage -d FILE`): 24-byte records
 *   {uint64 heap, uint64 stack, uint32 time_low, uint32 time_high} in host
 *   byte order; record 0 holds the start time (and the peak total), record 1
 *   the end time and the heap and stack peaks; then one record per allocator
 *   call or timer tick. Some glibc versions record the stack curve upside
 *   down (see docs/recording.md): the importer detects it and corrects it,
 *   and says so in the trace's metadata (memusage.stack_curve). A curve
 *   too degenerate to read either way (few distinct values, nested
 *   allocations that never move it) is imported as unknown: stack_bytes 0
 *   and the metadata line "stack: unknown (...)" (docs/formats.md).
 *
 *   heaptrack (heaptrack.PROG.PID.zst or .gz, or its decompressed text):
 *   one row per tick of heaptrack's 10 ms timer with the heap total
 *   (heap_bytes) and the highest total since the previous row
 *   (heap_peak_bytes), the process's RSS from its statm samples as rss_bytes
 *   (relative to the first sample), and the allocator calls since the
 *   previous row as calls_malloc_CLASS / calls_free_CLASS (docs/formats.md).
 *   The stack is unknown. With calls_path, the allocations and deallocations
 *   in order as a calls file, for the call replay (memstub gen --data):
 *   each a malloc or a free of the last live allocation of its allocation
 *   info (heaptrack names the size and stack a deallocation ends, not the
 *   block), so the heap at every row is the trace's. Compressed files are decompressed by running zstd
 *   or gzip.
 *
 *   Both importers mark a stack they could not measure with "stack:
 *   unknown (...)" (massif without --stacks=yes, memusage with
 *   MEMSTUB_STACK_NONE or a degenerate curve), and say in the metadata when
 *   a file's own totals disagree (memusage.inconsistent).
 *
 * Malformed or truncated files are refused with "file:line:column: reason"
 * (massif) or "file: byte offset N: reason" (memusage). */
#ifndef MEMSTUB_IMPORT_H
#define MEMSTUB_IMPORT_H

#include <stddef.h>

#include "memstub/error.h"
#include "memstub/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

enum memstub_stack_curve {
  MEMSTUB_STACK_AUTO = 0,  /* detect from the data (a heuristic, reported) */
  MEMSTUB_STACK_NORMAL,    /* take the stack values as they are */
  MEMSTUB_STACK_INVERTED,  /* correct the inverted curve */
  MEMSTUB_STACK_NONE,      /* do not import the stack: stack_bytes 0, "stack: unknown" */
};

enum memstub_time_unit {
  MEMSTUB_TIME_AUTO = 0,   /* memusage: cycles on x86-64 and aarch64 hosts, else us */
  MEMSTUB_TIME_CYCLES,     /* the CPU's cycle counter (glibc's HP_TIMING) */
  MEMSTUB_TIME_US,         /* microseconds (glibc without HP_TIMING) */
};

typedef struct memstub_import_options {
  double ns_per_unit;     /* massif: ns per instruction or byte of time; 0 refuses i and B */
  int stack_curve;        /* memusage: enum memstub_stack_curve */
  int time_unit;          /* memusage: enum memstub_time_unit */
  double cycles_per_ns;   /* memusage cycles: counter ticks per ns; 0 = this host's rate */
  const char *calls_path; /* heaptrack: also the allocation sequence into this calls file
                             (docs/formats.md, "The calls file"; the trace names it,
                             calls.file), written whole or not at all; NULL none */
} memstub_import_options;

void memstub_import_options_init(memstub_import_options *o);

/* Parse a massif output held in memory (name is used in messages). On
 * success *out owns a new trace; on failure -EINVAL (bad input) or -ENOMEM,
 * *out is NULL and err says "name:line:column: reason". */
int memstub_import_massif_parse(const char *name, const char *buf, size_t len,
                                const memstub_import_options *o, memstub_trace **out,
                                memstub_error *err);
/* Read and parse a massif file: as above, plus -errno when it cannot be read. */
int memstub_import_massif(const char *path, const memstub_import_options *o,
                          memstub_trace **out, memstub_error *err);

/* Parse a memusage data file held in memory. As memstub_import_massif_parse,
 * with "name: byte offset N: reason" messages. */
int memstub_import_memusage_parse(const char *name, const unsigned char *buf, size_t len,
                                  const memstub_import_options *o, memstub_trace **out,
                                  memstub_error *err);
int memstub_import_memusage(const char *path, const memstub_import_options *o,
                            memstub_trace **out, memstub_error *err);

/* Parse a heaptrack file's text (decompressed) held in memory. As
 * memstub_import_massif_parse ("name:line:column: reason"). */
int memstub_import_heaptrack_parse(const char *name, const char *buf, size_t len,
                                   const memstub_import_options *o, memstub_trace **out,
                                   memstub_error *err);
/* Read a heaptrack file, decompressing it with zstd or gzip (run as child
 * processes) when it starts with their magic, and parse it: as above, plus
 * -errno when it cannot be read or the decompressor cannot be run or fails. */
int memstub_import_heaptrack(const char *path, const memstub_import_options *o,
                             memstub_trace **out, memstub_error *err);

#ifdef __cplusplus
}
#endif
#endif
