/* compare/internal.h: what the files of memstub_compare share; not installed. */
#ifndef MEMSTUB_COMPARE_INTERNAL_H
#define MEMSTUB_COMPARE_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "memstub/compare.h"
#include "memstub/trace.h"

// a - b, saturated to the int64 range (traces hold non-negative totals, so
// this only matters for hostile extra columns and huge values).
static inline int64_t ms__sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN;
}

static inline int64_t ms__sat_abs(int64_t v) { return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v; }

/* How long after replayed row j's deadline (its target_time_ns, column ct)
 * the row before it ended: the lateness row j began with and did not
 * oversleep (0 when it could wait). pre: ct is a column of repl. */
static inline int64_t ms__late_behind(const memstub_trace *repl, int64_t j, int ct) {
  if (j <= 0 || (size_t)j >= repl->n) return 0;
  int64_t d = ms__sat_sub(repl->pts[j - 1].time_ns, memstub_trace_extra_row(repl, (size_t)j)[ct]);
  return d > 0 ? d : 0;
}

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

/* report.c: a JSON string (bytes that are not UTF-8 become U+FFFD), a JSON
 * number (null when not finite). */
void ms__compare_json_str(FILE *f, const char *s);
void ms__compare_json_num(FILE *f, double v);

/* whatif.c: REPLAYED's scales (its `transforms`) and whether its stub was
 * calibrated into r. 0, or -EINVAL for a transforms line memstub does not
 * write (err says so, naming the scale whose value is wrong; *at: where in
 * the line's value). */
int ms__compare_whatif_read(const memstub_trace *repl, memstub_compare_report *r, size_t *at,
                            memstub_error *err);
/* t (ORIGINAL on its timeline) with r's scales applied, into *out: the
 * target a what-if is judged against. 0, -EINVAL or -ENOMEM. */
int ms__compare_whatif_target(const memstub_trace *t, const memstub_compare_report *r,
                              memstub_trace **out, memstub_error *err);
/* r->whatif.fig from before (ORIGINAL on its timeline, without the scales)
 * and repl, and r->heap_rows from target (before with the scales: the rows
 * whose heap the stub resizes), over the compared rows. pre: r aligned. */
void ms__compare_whatif_figures(const memstub_trace *before, const memstub_trace *target,
                                const memstub_trace *repl, memstub_compare_report *r);
/* A figure of kind f for people into buf: bytes, ns or calls; plus: "+"
 * before a positive one. Returns buf. */
const char *ms__compare_fig_text(char buf[40], memstub_compare_figure f, int64_t v, int plus);
// The scales other than 1, "time x0.7, heap x0.5", into buf ("" for none).
void ms__compare_scales_text(const memstub_compare_scales *s, char *buf, size_t cap);
/* The change column of figure k of r's before and after table into buf:
 * "-6.4 MiB (-50.0 %)", ", uncalibrated" after an uncalibrated stack, or
 * "not compared (why)". Returns buf. */
const char *ms__compare_change_text(const memstub_compare_report *r, memstub_compare_figure k,
                                    char *buf, size_t cap);
// The before and after table of a what-if (nothing for a stub as recorded).
void ms__compare_whatif_text(FILE *f, const memstub_compare_report *r);
// "kind", "scales" and "before_after" members of the JSON report, with a trailing comma.
void ms__compare_whatif_json(FILE *f, const memstub_compare_report *r);

/* verdict.c: the differences by design (text: a section, nothing when none
 * applies; JSON: the "by_design" member with its trailing comma), and the
 * verdict held to cs's checks when it has any (run already), else to the
 * goals (memstub_compare_goals). 0, or -ENOMEM. */
void ms__compare_design_text(FILE *f, const memstub_compare_report *r);
/* Difference by design k (from 0) of r into buf, "" when it does not apply
 * to this comparison; returns its key ("heap_block", "frees", "churn",
 * "stack"), or NULL when there is no item k. */
const char *ms__compare_design_item(const memstub_compare_report *r, int k, char *buf, size_t cap);
/* The verdict line without "verdict" ("faithful: heap exact ...") into buf,
 * held to cs's checks when it has any (run already), else to the goals;
 * *faithful set. 0, or -ENOMEM. */
int ms__compare_verdict_line(const memstub_compare_report *r, const memstub_compare_checks *cs,
                             char *buf, size_t cap, int *faithful);
void ms__compare_design_json(FILE *f, const memstub_compare_report *r);
int ms__compare_verdict_text(FILE *f, const memstub_compare_report *r,
                             const memstub_compare_checks *cs);
int ms__compare_verdict_json(FILE *f, const memstub_compare_report *r,
                             const memstub_compare_checks *cs);

#endif
