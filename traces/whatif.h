/* traces/whatif.h: the what-if scales of a stub (docs/formats.md, "What-if
 * transforms"): the one line that names them in a stub's provenance and in
 * the trace its replay measures (`transforms`), read back by compare, and a
 * trace transformed by them as memstub gen transforms it, the target a
 * what-if's replay is judged against. The generator writes the line, compare
 * reads it: compare does not depend on the generator. */
#ifndef MEMSTUB_TRACES_WHATIF_H
#define MEMSTUB_TRACES_WHATIF_H

#include <stddef.h>

#include "memstub/error.h"
#include "memstub/trace.h"

// The scales as applied (resident and mapped already resolved: never "follow").
typedef struct ms__whatif {
  double time, heap, stack, rss, mapped, cpu, churn;
} ms__whatif;

// Every scale 1.0.
void ms__whatif_init(ms__whatif *w);
// 1 when every scale is 1.0: the trace as recorded.
int ms__whatif_none(const ms__whatif *w);

/* The line: "none" when every scale is 1, else "time x0.7, heap x0.5,
 * stack x1, rss x0.5, mapped x0.5, cpu x1, churn x1", each scale in the
 * shortest form that reads back as the same double. */
void ms__whatif_format(const ms__whatif *w, char *buf, size_t cap);

/* A line as memstub has written it ("none"; "time xT, heap xH, stack xS",
 * then optionally rss, mapped, cpu and churn: a scale the line does not name
 * is 1.0) into *w. 0, or -EINVAL (*w all 1.0) for anything else. */
int ms__whatif_parse(const char *line, ms__whatif *w);
/* As ms__whatif_parse; on -EINVAL, *at is the offset in line of what is
 * wrong and *field the scale whose value it is ("heap": not a decimal number
 * as memstub writes one, such as 0x1p3 or +0.5), or NULL when the line's
 * shape is. */
int ms__whatif_parse_at(const char *line, ms__whatif *w, size_t *at, const char **field);

/* A copy of t (columns, metadata, rows) into *out. 0 or -ENOMEM. */
int ms__trace_dup(const memstub_trace *t, memstub_trace **out);

/* A copy of t, on its stub's timeline already (ms__timeline_trace), with the
 * scales applied as memstub gen applies them: each row's CPU time times cpu
 * (the interval longer or shorter by the difference), then every time times
 * time, and the CPU time too; stack_bytes, heap_bytes, rss_bytes and
 * mapped_bytes times their scales, minor_faults (cumulative) times rss's,
 * as the pages they make resident (a negative value, unknown, stays);
 * the call counts and churn_bytes times churn, the rounding carried from row
 * to row so the totals stay right. Rounded to the nearest integer, as the
 * generator rounds. 0, -EINVAL (a value leaves 64 bits: err names its row
 * and column) or -ENOMEM. */
int ms__whatif_apply(const memstub_trace *t, const ms__whatif *w, memstub_trace **out,
                     memstub_error *err);

#endif
