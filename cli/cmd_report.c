// memstub report: the answer on one page (docs/compare-and-plot.md#the-report):
// a recording, each replay compared with it, their curves with zoom, the
// lateness by cause, the allocation sites at the peak and what each region
// left alive, in one self-contained HTML file.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memstub/compare.h"
#include "ms_common.h"
#include "report.h"

enum { O_TITLE = MS_CLI_LONG, O_TOP, O_RECORDED, O_PARTIAL };

static const ms_cli_option options[] = {
    {"output", 'o', "FILE", "write the page to FILE (atomically; required; '-' for\n"
                            "standard output)"},
    {"title", O_TITLE, "T", "the page's title (default: memstub report: ORIGINAL)"},
    {"top", O_TOP, "N", "the N allocation sites and region occurrences shown\n"
                        "(default 10)"},
    {"recorded-times", O_RECORDED, NULL,
     "judge and draw ORIGINAL with its times as recorded; by\n"
     "default a trace of memstub record is on its stub's\n"
     "timeline, the recorder's cost out (as compare and plot)"},
    {"allow-partial", O_PARTIAL, NULL,
     "compare even a REPLAYED that measures fewer than half\n"
     "of ORIGINAL's points (as compare --allow-partial)"},
    {0}};

static const ms_cli_spec spec = {
    "report",
    "usage: memstub report ORIGINAL [REPLAYED...] -o FILE [--title T] [--top N]\n"
    "\n"
    "Write one page of HTML that reads the answer: a header naming the files with\n"
    "their duration, peaks, CPU time and allocator calls and the metadata that\n"
    "matters; for each REPLAYED (memstub replay --measure, or a stub's --measure)\n"
    "what compare says of it: a what-if's before and after table, or a replay's\n"
    "figures beside the original's, the verdict and the differences by design,\n"
    "and compare's whole text; the curves of every column the traces have (stack,\n"
    "heap, resident, mapped, CPU time and allocator calls so far), a panel each,\n"
    "ORIGINAL against every replay, zoomed by dragging across a panel; each\n"
    "replay's late rows by kind of row and cause; the allocation sites at the\n"
    "heap's peak when ORIGINAL was recorded with --sites (TRACE.sites); and what\n"
    "each region left alive when it has probe regions (TRACE.generations).\n"
    "\n"
    "The page is one file with its style, data and script inside: it opens in a\n"
    "browser without a network and can be mailed or archived as it is. Curves keep\n"
    "the lowest and highest point of 4000 columns across the run (peaks never\n"
    "vanish). Bad input gets compare's errors; traces with threads are refused\n"
    "(memstub compare and plot take them thread by thread).\n"
    "\n",
    options, 24, NULL};

// What the page is made of, and the traces read for it.
typedef struct job {
  ms_report r;
  memstub_trace **read;   // [n]: as read (read[0] ORIGINAL)
  memstub_trace *target;  // ORIGINAL on its stub's timeline; NULL: as recorded
  char *timeline, *title, *command;
} job;

static void job_free(job *j) {
  for (size_t k = 0; j->r.tr && k < j->r.n; k++) {
    memstub_compare_free(j->r.tr[k].cmp);
    free(j->r.tr[k].compare_text);
    memstub_trace_free(j->read[k]);
  }
  free(j->r.tr);
  free(j->read);
  memstub_trace_free(j->target);
  free(j->timeline);
  free(j->title);
  free(j->command);
  free(j->r.sites_text);
  free(j->r.generations_text);
}

/* ---- text captured from the printers of compare, sites and generations ---- */

typedef struct source {
  const char *path;
  size_t top;
  const memstub_compare_report *cmp;
} source;

static int compare_text(const source *s, FILE *f, memstub_error *err) {
  return memstub_compare_write_text(s->cmp, NULL, f) < 0
             ? memstub_error_set(err, -ENOMEM, "out of memory")
             : 0;
}
static int sites_text(const source *s, FILE *f, memstub_error *err) {
  return ms_cli_sites_write(s->path, s->top, 3, f, err);
}
static int generations_text(const source *s, FILE *f, memstub_error *err) {
  return ms_cli_generations_write(s->path, s->top, f, err);
}

// What print writes for s, into *out (malloc'd): 0, or -errno with err set.
static int capture(int (*print)(const source *, FILE *, memstub_error *), const source *s,
                   char **out, memstub_error *err) {
  size_t len = 0;
  *out = NULL;
  FILE *f = open_memstream(out, &len);
  if (!f) return memstub_error_set(err, -ENOMEM, "out of memory");
  int rc = print(s, f, err);
  if (fclose(f) != 0 && rc == 0) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  if (rc < 0) {
    free(*out);
    *out = NULL;
  }
  return rc;
}

/* ---- reading ---------------------------------------------------------------- */

// "memstub report ARGS..." as typed, for the page's header.
static char *command_line(int argc, char **argv) {
  char *s = ms__strdup("memstub");
  for (int i = 0; s && i < argc; i++) {
    char *t = ms__asprintf("%s %s", s, argv[i]);
    free(s);
    s = t;
  }
  return s;
}

/* ORIGINAL and the replays read, each replay compared with ORIGINAL as
 * memstub compare does (its errors), ORIGINAL's stub timeline and the side
 * files' texts: 0, or an exit status after printing why not. */
static int gather(job *j, int n, char **paths, const memstub_compare_options *co, size_t top) {
  memstub_error err = {0};
  j->r.n = (size_t)n;
  j->r.tr = calloc((size_t)n, sizeof *j->r.tr);
  j->read = calloc((size_t)n, sizeof *j->read);
  if (!j->r.tr || !j->read) return ms_cli_error("out of memory");
  for (int k = 0; k < n; k++) {
    if (strcmp(paths[k], "-") == 0)
      return ms_cli_usage("report", "report reads its traces from files, not standard input");
    int st = ms_cli_refuse_stub_file("report", paths[k]);
    if (st) return st;
    j->r.tr[k].path = paths[k];
  }
  if (memstub_trace_read(paths[0], &j->read[0], &err) < 0) return ms_cli_fail(&err);
  if (memstub_trace_column(j->read[0], "thread") >= 0)
    return ms_cli_error("%s has threads (a thread column): memstub report draws a trace of one "
                        "thread; memstub compare and memstub plot take it thread by thread",
                        paths[0]);
  for (int k = 1; k < n; k++) {
    source s = {0};
    if (memstub_compare_files(paths[0], paths[k], co, &j->r.tr[k].cmp, &err) < 0 ||
        memstub_trace_read(paths[k], &j->read[k], &err) < 0)
      return ms_cli_fail(&err);
    s.cmp = j->r.tr[k].cmp;
    if (s.cmp->missing)  // compared anyway (--allow-partial): the page's figures are the part's
      ms_cli_warn("%s measures %s of %s's %s points", paths[k], ms_cli_count((int64_t)s.cmp->compared),
                  paths[0], ms_cli_count((int64_t)s.cmp->original_rows));
    if (capture(compare_text, &s, &j->r.tr[k].compare_text, &err) < 0) return ms_cli_fail(&err);
  }
  if (!co->recorded_times &&
      memstub_compare_target(j->read[0], &j->target, &j->timeline, &err) < 0) {
    memstub_error_prefix(&err, paths[0]);
    return ms_cli_fail(&err);
  }
  j->r.timeline = j->timeline;
  for (int k = 0; k < n; k++) {
    j->r.tr[k].t = k == 0 && j->target ? j->target : j->read[k];
    if (ms_report_figures_of(j->r.tr[k].t, &j->r.tr[k].fig) < 0) return ms_cli_error("out of memory");
  }
  // The side files ORIGINAL's metadata names (an older file beside it would be another run's).
  source s = {paths[0], top, NULL};
  if (memstub_trace_get_meta(j->read[0], "sites.file") &&
      capture(sites_text, &s, &j->r.sites_text, &err) < 0)
    return ms_cli_fail(&err);
  if (memstub_trace_get_meta(j->read[0], "generations.file") &&
      capture(generations_text, &s, &j->r.generations_text, &err) < 0)
    return ms_cli_fail(&err);
  return 0;
}

// The page into out, atomically: 0, or an exit status after printing why not.
static int write_page(const char *out, const ms_report *r) {
  ms__afile af;
  memstub_error err = {0};
  if (ms__afile_open(&af, out, &err) < 0) return ms_cli_fail(&err);
  int rc = ms_report_write_html(af.f, r);
  if (rc < 0) {
    ms__afile_abort(&af);
    return rc == -ENOMEM ? ms_cli_error("out of memory") : ms_cli_error("%s: write failed", out);
  }
  return ms__afile_commit(&af, &err) < 0 ? ms_cli_fail(&err) : 0;
}

int ms_cmd_report(int argc, char **argv) {
  memstub_compare_options co;
  memstub_compare_options_init(&co);
  const char *out = NULL, *title = NULL;
  int64_t top = 10;
  char *command = command_line(argc, argv);  // before the parser reorders argv
  if (!command) return ms_cli_error("out of memory");
  ms_cli_parser p = {.spec = &spec};
  int c;
  while ((c = ms_cli_next(&p, argc, argv)) > 0) {
    switch (c) {
      case 'o': out = p.arg; break;
      case O_TITLE: title = p.arg; break;
      case O_RECORDED: co.recorded_times = 1; break;
      case O_PARTIAL: co.allow_partial = 1; break;
      case O_TOP:
        if (ms_cli_arg_i64(&p, &top) < 0) c = -1, p.status = MS_EXIT_USAGE;
        else if (top < 1) c = -1, p.status = ms_cli_usage("report", "--top must be >= 1");
        break;
    }
    if (c < 0) break;
  }
  job j = {.command = command};
  if (c < 0) {
    job_free(&j);
    return p.status;
  }
  if (p.optind >= argc || !out) {
    job_free(&j);
    return ms_cli_usage("report", p.optind >= argc ? "missing ORIGINAL" : "missing -o FILE (the page)");
  }
  int st = gather(&j, argc - p.optind, argv + p.optind, &co, (size_t)top);
  if (!st) {
    j.title = title ? ms__strdup(title) : ms__asprintf("memstub report: %s", argv[p.optind]);
    j.r.title = j.title;
    j.r.command = j.command;
    st = j.title ? write_page(out, &j.r) : ms_cli_error("out of memory");
  }
  if (!st && strcmp(out, "-") != 0 && j.r.n == 1)
    ms_cli_note("%s: %s on one page", out, argv[p.optind]);
  else if (!st && strcmp(out, "-") != 0)
    ms_cli_note("%s: %s and %zu replay%s on one page", out, argv[p.optind], j.r.n - 1,
                j.r.n == 2 ? "" : "s");
  job_free(&j);
  return st;
}
