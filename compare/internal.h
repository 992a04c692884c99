/* compare/internal.h: what the files of memstub_compare share; not installed. */
#ifndef MEMSTUB_COMPARE_INTERNAL_H
#define MEMSTUB_COMPARE_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "memstub/compare.h"

// a - b, saturated to the int64 range (traces hold non-negative totals, so
// this only matters for hostile extra columns and huge values).
static inline int64_t ms__sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN;
}

static inline int64_t ms__sat_abs(int64_t v) { return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v; }

/* lateness.c: r->by_kind from the aligned report r (match, compared and
 * options set). 0, or -1 when out of memory. */
int ms__compare_kinds(const memstub_trace *orig, const memstub_trace *repl,
                      memstub_compare_report *r);
// The by-kind lines of the text report (nothing when no row was compared).
void ms__compare_kinds_text(FILE *f, const memstub_compare_report *r);
// The "time_by_kind" member of the JSON report, with its trailing comma and newline.
void ms__compare_kinds_json(FILE *f, const memstub_compare_report *r);

/* work.c: r->work from the aligned report r (match and compared set). 0, or
 * -1 when out of memory. */
int ms__compare_work(const memstub_trace *orig, const memstub_trace *repl,
                     memstub_compare_report *r);
// The work lines of the text report (cpu, calls by kind, churn; or why not compared).
void ms__compare_work_text(FILE *f, const memstub_compare_report *r);
// The "work" member of the JSON report, with its trailing comma and newline.
void ms__compare_work_json(FILE *f, const memstub_compare_report *r);

#endif
