// memstub plot: original against replayed curves (the paper's Figure 3), by gnuplot.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memstub/compare.h"
#include "memstub/plot.h"
#include "ms_common.h"

enum { O_TITLE = MS_CLI_LONG, O_SIZE, O_RECORDED };

static const ms_cli_option options[] = {
    {"output", 'o', "FILE", "write the figure to FILE (atomically); required"},
    {"size", O_SIZE, "WxH",
     "size in pixels (default 1200x900; PDF: 100 pixels per inch;\n"
     ".txt: 10 x 20 pixels per character)"},
    {"title", O_TITLE, "T", "the figure's title (default: ORIGINAL's file name)"},
    {"recorded-times", O_RECORDED, NULL,
     "draw ORIGINAL with its times as recorded; by default a\n"
     "trace of memstub record is drawn on its stub's timeline,\n"
     "the recorder's cost out (as memstub gen and compare)"},
    {0}};

static const ms_cli_spec spec = {
    "plot",
    "usage: memstub plot ORIGINAL [REPLAYED...] -o FILE [--title T] [--size WxH]\n"
    "\n"
    "Draw stack and heap in use over time, the original trace alone or against\n"
    "each replayed trace (memstub replay --measure), as in the paper's Figure 3.\n"
    "With replays, a third panel shows the per-point time error (replayed -\n"
    "original); a replay that measured only part of ORIGINAL is drawn as far as it\n"
    "goes, with a warning. The axes are in units for people (B, KiB, MiB, GiB and\n"
    "µs, ms, s, chosen from the largest value; the time error in µs), and the\n"
    "original's stack and heap peaks are marked with their values. Curves are reduced to the lowest and highest\n"
    "point per pixel column, so peaks never vanish. Curves are named by file name\n"
    "(by path when two names are equal).\n"
    "\n"
    "The format follows FILE's extension: .png, .svg, .pdf, or .txt for a text\n"
    "figure to read in a terminal: --size's width / 10 characters, but no wider\n"
    "than $COLUMNS (80 when unset), with units on the y tics. Runs gnuplot (5.2 or\n"
    "later) on plots/figure3.gp; set MEMSTUB_GNUPLOT to choose the gnuplot program.\n"
    "gnuplot has two minutes ($MEMSTUB_CHILD_TIMEOUT seconds when set).\n"
    "\n",
    options, 22, NULL};

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s && s[1] ? s + 1 : p;
}

// Says that ORIGINAL was drawn on its stub's timeline, and what that is.
static void timeline_note(const char *path, const memstub_trace *orig, int recorded) {
  memstub_trace *target = NULL;
  char *line = NULL;
  memstub_error err = {0};
  if (!recorded && memstub_compare_target(orig, &target, &line, &err) == 0 && line)
    ms_cli_note("timeline: %s drawn on its stub's timeline (--recorded-times: as recorded): %s",
                path, line);
  memstub_trace_free(target);
  free(line);
}

int ms_cmd_plot(int argc, char **argv) {
  memstub_plot_options po;
  memstub_plot_options_init(&po);
  const char *out = NULL;
  ms_cli_parser p = {.spec = &spec};
  int c;
  while ((c = ms_cli_next(&p, argc, argv)) > 0) {
    switch (c) {
      case 'o': out = p.arg; break;
      case O_TITLE: po.title = p.arg; break;
      case O_RECORDED: po.recorded_times = 1; break;
      case O_SIZE: {
        int w, h, n = 0;
        if (sscanf(p.arg, "%dx%d%n", &w, &h, &n) != 2 || p.arg[n] != '\0' || w < 100 ||
            h < 100 || w > 20000 || h > 20000)
          return ms_cli_usage("plot",
                              "--size: expected WIDTHxHEIGHT in pixels (100-20000), "
                              "found '%s'",
                              p.arg);
        po.width = w;
        po.height = h;
        break;
      }
    }
  }
  if (c < 0) return p.status;
  int first = p.optind;
  if (first >= argc) return ms_cli_usage("plot", "missing ORIGINAL");
  if (!out) return ms_cli_usage("plot", "missing -o FILE (.png, .svg, .pdf or .txt)");
  for (int i = first; i < argc; i++)
    if (strcmp(argv[i], "-") == 0)
      return ms_cli_usage("plot", "plot reads its traces from files, not standard input");

  const char *orig_path = argv[first];
  size_t nrepl = (size_t)(argc - first - 1);
  char **repl_paths = argv + first + 1;
  memstub_error err = {0};
  memstub_trace *orig = NULL;
  memstub_trace **repl = calloc(nrepl + 1, sizeof *repl);
  char **labels = calloc(nrepl + 1, sizeof *labels);
  char *orig_label = NULL, *title = NULL;
  int status = MS_EXIT_USAGE;
  if (!repl || !labels) {
    ms_cli_error("out of memory");
    goto done;
  }
  if (memstub_trace_read(orig_path, &orig, &err) < 0) {
    ms_cli_fail(&err);
    goto done;
  }
  // Replays are checked against the original first, so a problem is reported
  // as file:line:column; then they are read for drawing.
  memstub_compare_options co;
  memstub_compare_options_init(&co);
  co.allow_partial = 1;
  co.recorded_times = po.recorded_times;
  int threads = memstub_trace_column(orig, "thread") >= 0;  // compared by the figure, per thread
  for (size_t i = 0; i < nrepl; i++) {
    if (threads) {
      if (memstub_trace_read(repl_paths[i], &repl[i], &err) < 0) {
        ms_cli_fail(&err);
        goto done;
      }
      continue;
    }
    memstub_compare_report *r = NULL;
    if (memstub_compare_files(orig_path, repl_paths[i], &co, &r, &err) < 0 ||
        memstub_trace_read(repl_paths[i], &repl[i], &err) < 0) {
      memstub_compare_free(r);
      ms_cli_fail(&err);
      goto done;
    }
    if (r->missing)
      ms_cli_warn("%s measures %s of %s's %s points", repl_paths[i],
                  ms_cli_count((int64_t)r->compared), orig_path,
                  ms_cli_count((int64_t)r->original_rows));
    memstub_compare_free(r);
  }
  // Curves are named by file name; by path when two file names are equal.
  int use_path = 0;
  for (size_t i = 0; i < nrepl; i++)
    for (size_t j = 0; j <= nrepl; j++) {
      const char *other = j == nrepl ? orig_path : repl_paths[j];
      if (j != i && strcmp(base_name(repl_paths[i]), base_name(other)) == 0) use_path = 1;
    }
  int oom =
      !(orig_label = ms__asprintf("original (%s)", use_path ? orig_path : base_name(orig_path)));
  for (size_t i = 0; i < nrepl; i++)
    oom |= !(labels[i] = ms__asprintf("measured (%s)",
                                      use_path ? repl_paths[i] : base_name(repl_paths[i])));
  if (oom) {
    ms_cli_error("out of memory");
    goto done;
  }
  if (!po.title) {
    title = ms__asprintf("%s: %s", base_name(orig_path),
                         nrepl ? "original against replayed" : "stack and heap over time");
    if (!title) {
      ms_cli_error("out of memory");
      goto done;
    }
    po.title = title;
  }

  if ((threads ? memstub_plot_threads : memstub_plot_figure)(
          out, orig, orig_label, nrepl, (const memstub_trace *const *)repl,
          (const char *const *)labels, &po, &err) < 0) {
    ms_cli_fail(&err);
    goto done;
  }
  ms_cli_note("%s: %s against %zu replay%s%s", out, orig_path, nrepl, nrepl == 1 ? "" : "s",
              threads ? " (the process total; each thread's beside it, as NAME.threadN.EXT)" : "");
  timeline_note(orig_path, orig, po.recorded_times);
  status = MS_EXIT_OK;
done:
  free(title);
  for (size_t i = 0; repl && i < nrepl; i++) memstub_trace_free(repl[i]);
  for (size_t i = 0; labels && i < nrepl; i++) free(labels[i]);
  free(repl);
  free(labels);
  free(orig_label);
  memstub_trace_free(orig);
  return status;
}
