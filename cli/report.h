/* cli/report.h: what the files of `memstub report` share (one page of HTML,
 * docs/compare-and-plot.md#the-report): cmd_report.c reads the traces,
 * compares each replay with the original and gathers the side files'
 * texts; report_html.c writes the page; report_curves.c the curves' data
 * and the figures of the header; report.js and report.css (embedded at
 * build time) draw the curves and style the page. */
#ifndef MEMSTUB_CLI_REPORT_H
#define MEMSTUB_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memstub/compare.h"
#include "memstub/trace.h"

// The panels of curves, one per column the traces have.
enum { MS_REPORT_STACK, MS_REPORT_HEAP, MS_REPORT_RSS, MS_REPORT_MAPPED, MS_REPORT_CPU,
       MS_REPORT_CALLS, MS_REPORT_PANELS };

/* A trace's figures for the header: its duration and each panel's largest
 * value (CPU and calls: the totals over the trace); known[p] 0 when it has
 * no such column. */
typedef struct ms_report_figures {
  int64_t duration_ns;
  int64_t peak[MS_REPORT_PANELS];
  int known[MS_REPORT_PANELS];
} ms_report_figures;

typedef struct ms_report_trace {
  const char *path;             // as given
  const memstub_trace *t;       // as drawn (ORIGINAL on its stub's timeline unless --recorded-times)
  memstub_compare_report *cmp;  // a replay against ORIGINAL; NULL for ORIGINAL
  char *compare_text;           // compare's text report of it (malloc'd); NULL for ORIGINAL
  ms_report_figures fig;
} ms_report_trace;

typedef struct ms_report {
  const char *title;      // the page's title
  const char *command;    // the command line that made the page, for the header
  size_t n;               // traces: tr[0] ORIGINAL, tr[1..n) the replays in the order given
  ms_report_trace *tr;
  const char *timeline;   // how ORIGINAL's times were turned into its stub's; NULL: as recorded
  char *sites_text;       // `memstub sites` of ORIGINAL (malloc'd); NULL without TRACE.sites
  char *generations_text; // `memstub generations` of ORIGINAL; NULL without TRACE.generations
} ms_report;

/* The page for r into f (the caller commits or aborts the file). 0, or
 * -EIO when a write failed. */
int ms_report_write_html(FILE *f, const ms_report *r);

/* t's figures for the header (report_curves.c): 0, or -ENOMEM. */
int ms_report_figures_of(const memstub_trace *t, ms_report_figures *fig);

/* The panels' titles ("stack in use", ...), their ids in the page
 * ("stack", ...: panel-ID is the panel's element id) and the columns they
 * draw ("stack_bytes", ..., "calls_*"). */
const char *ms_report_panel_title(int p);
const char *ms_report_panel_id(int p);
const char *ms_report_panel_column(int p);

/* The curves' data as a script, `var MS_DATA = {...};`: each panel the
 * traces have, each trace's series in it reduced to at most four points per
 * pixel column of `columns` across the time axis (memstub_plot_reduce), so
 * that peaks never vanish. Numbers only: labels come from the page. 0, or
 * -ENOMEM. */
int ms_report_write_curves(FILE *f, const ms_report *r, size_t columns);

#endif
