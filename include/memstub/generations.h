/* memstub/generations.h: the TRACE.generations file `memstub record` writes
 * beside a trace with probe regions: what each region occurrence left alive
 * at its end, and when the program freed it (docs/formats.md#generations). */
#ifndef MEMSTUB_GENERATIONS_H
#define MEMSTUB_GENERATIONS_H

#include <stddef.h>
#include <stdint.h>

#include "memstub/error.h"
#include "memstub/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct memstub_occurrence {
  int64_t id;                 /* the trace's region number, from 1 */
  int64_t begin_ns, end_ns;   /* on the trace's clock */
  int64_t blocks, bytes;      /* allocated inside it by the recorded thread */
  int64_t survivor_blocks, survivor_bytes;  /* of those, alive at its end */
  char *name;
} memstub_occurrence;

/* Survivors of one occurrence allocated and freed at the same times (within
 * the recording's resolution) and at the same site: one line of the file
 * (version 1: one block each). */
typedef struct memstub_survivor {
  int64_t occurrence;  /* its memstub_occurrence id */
  int64_t blocks;      /* >= 1 */
  int64_t bytes;       /* of all its blocks */
  int64_t alloc_ns, free_ns;  /* free_ns -1: alive at exit; not below alloc_ns otherwise */
  int64_t site;  /* its allocation site: the index of a site line in TRACE.sites
                    (from 0, in file order); -1 when not sampled or not recorded */
} memstub_survivor;

/* The reader checks that the survivors of an occurrence add up to no more
 * than its survivor_blocks and survivor_bytes (to exactly them in version 2),
 * and that the occurrences' figures summed fit in 64 bits: so do every
 * partial sum of them. */
typedef struct memstub_generations {
  int version;  /* of the file: 1 or 2 */
  int64_t exit_ns;
  int64_t dropped_blocks, dropped_occurrences, dropped_survivors;  /* version 1 only */
  size_t nocc, nsurv;
  memstub_occurrence *occ;  /* in file order: ids increase */
  memstub_survivor *surv;   /* in file order */
} memstub_generations;

/* Read a generations file, version 1 or 2, into *out: 0, or a negative errno
 * with err saying "path:line: field N: what is wrong" (then *out is NULL). */
int memstub_generations_read(const char *path, memstub_generations **out, memstub_error *err);
void memstub_generations_free(memstub_generations *g);

/* The occurrence with this id, or NULL (a binary search). */
const memstub_occurrence *memstub_generations_find(const memstub_generations *g, int64_t id);

/* A copy of trace t (regions in its "region" column) in which the survivors
 * of its regions are released when the program freed them: a row at each
 * free time that falls after its region's end and outside every region of
 * t (between regions, or after t's last row), with the heap lowered by the
 * bytes freed since the region before it ended; the other columns as the row
 * before (per-interval columns such as churn_bytes and calls_* 0). Survivors
 * alive at exit stay. *added: the rows added. 0, or -EINVAL (t has no region
 * column) or -ENOMEM with err set. */
int memstub_generations_release(const memstub_trace *t, const memstub_generations *g,
                                memstub_trace **out, size_t *added, memstub_error *err);

/* What a stub of t holds when it returns (memstub gen --hold): the
 * survivors of t's regions still alive after t's last row, as n entries
 * (after_ns[k] ns after that row the program freed bytes[k]; entries of
 * equal time merged; increasing, then one entry of after_ns -1 with the
 * bytes never freed), total their sum. */
typedef struct memstub_held {
  size_t n;
  int64_t *after_ns, *bytes;
  int64_t total;
} memstub_held;

/* memstub_generations_release for a stub that returns at t's last row:
 * *out is t with the releases inside its span added (rows between its
 * regions, none after its last row), and *held what is still alive after
 * it. 0, or fails as memstub_generations_release (and -EINVAL for a trace
 * without rows); then *out is NULL and *held empty. */
int memstub_generations_hold(const memstub_trace *t, const memstub_generations *g,
                             memstub_trace **out, size_t *added, memstub_held *held,
                             memstub_error *err);
void memstub_held_free(memstub_held *h);

#ifdef __cplusplus
}
#endif

#endif
