// memstub plot: original against replayed curves (the paper's Figure 3), by gnuplot.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/compare.h"
#include "memstub/plot.h"
#include "ms_common.h"

enum { O_TITLE = MS_CLI_LONG, O_SIZE, O_RECORDED };

static const ms_cli_option options[] = {
    {"output", 'o', "FILE",
     "write the figure to FILE (atomically); without -o, the\n"
     "text figure goes to standard output"},
    {"size", O_SIZE, "WxH",
     "size in pixels (default 1200x900; PDF: 100 pixels per inch;\n"
     ".txt: 10 x 20 pixels per character)"},
    {"title", O_TITLE, "T",
     "the figure's title (default: what is drawn, each trace by\n"
     "file name)"},
    {"recorded-times", O_RECORDED, NULL,
     "draw ORIGINAL with its times as recorded; by default a\n"
     "trace of memstub record is drawn on its stub's timeline,\n"
     "the recorder's cost out (as memstub gen and compare)"},
    {0}};

static const ms_cli_spec spec = {
    "plot",
    "usage: memstub plot ORIGINAL [REPLAYED...] [-o FILE] [--title T] [--size WxH]\n"
    "\n"
    "Draw stack and heap in use over time, the original trace alone or against\n"
    "each replayed trace (memstub replay --measure), as in the paper's Figure 3.\n"
    "With replays, a last panel shows the per-point time error (replayed -\n"
    "original); a replay that measured only part of ORIGINAL is drawn as far as it\n"
    "goes, with a warning. Panels for resident memory (rss_bytes, mapped_bytes)\n"
    "and for the work (cpu_ns, calls) appear when a trace has those columns, and a\n"
    "trace draws only the curves it has. Each axis reads in a unit chosen by its\n"
    "range (B, KiB, MiB, GiB; µs, ms, s) with plain tic labels. Each trace's peak\n"
    "of stack, heap and resident memory is marked and labelled with its value,\n"
    "above the curves; the legend is below the panels, one column per trace.\n"
    "Curves are reduced to the lowest and highest point per pixel column, so peaks\n"
    "never vanish. Curves are named by file name (by path when two names are\n"
    "equal); the title names the original and each replay, and says 'before' and\n"
    "'after' when a replay is a what-if (its '# transforms:' line).\n"
    "\n"
    "The format follows FILE's extension: .png, .svg, .pdf, or .txt for a text\n"
    "figure to read in a terminal: --size's width / 10 characters, but no wider\n"
    "than $COLUMNS (80 when unset; the terminal's width without -o), with units on\n"
    "the y tics, and taller than --size's height / 20 lines when its panels need\n"
    "it. Runs gnuplot (5.2 or later) on plots/figure3.gp; set MEMSTUB_GNUPLOT to\n"
    "choose the gnuplot program. gnuplot has two minutes ($MEMSTUB_CHILD_TIMEOUT\n"
    "seconds when set).\n"
    "\n",
    options, 22, NULL};

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s && s[1] ? s + 1 : p;
}

// Points repl does not measure, on stderr, as memstub compare says them.
static void warn_missing(const memstub_compare_report *r, const char *orig, const char *repl) {
  if (r->missing)
    ms_cli_warn("%s measures %s of %s's %s points: %s missing (the first is point %lld)", repl,
                ms_cli_count((int64_t)r->compared), orig, ms_cli_count((int64_t)r->original_rows),
                ms_cli_count((int64_t)r->missing), (long long)r->first_missing);
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

/* What a replay changes, when it is a what-if: its "# transforms:" line
 * (memstub gen, replay) without the factors of 1, as "time x0.7, heap x0.5";
 * NULL for a faithful replay (no line, "none", or only factors of 1). *oom
 * set when out of memory. */
static char *what_if(const memstub_trace *t, int *oom) {
  const char *m = memstub_trace_get_meta(t, "transforms");
  if (!m || strcmp(m, "none") == 0) return NULL;
  char *out = calloc(1, strlen(m) + 1);
  if (!out) {
    *oom = 1;
    return NULL;
  }
  for (const char *p = m; *p;) {
    const char *end = strstr(p, ", ");
    size_t n = end ? (size_t)(end - p) : strlen(p);
    // "name xF": kept unless F is 1.
    const char *x = memchr(p, 'x', n);
    int identity = n >= 3 && p[n - 3] == ' ' && p[n - 2] == 'x' && p[n - 1] == '1';
    if (x && !identity) {
      if (*out) strcat(out, ", ");
      strncat(out, p, n);
    }
    p += n + (end ? 2 : 0);
  }
  if (!*out) {
    free(out);
    return NULL;
  }
  return out;
}

/* The title: what is drawn, each trace by name. "O over time" alone;
 * "O (original) against R1 and R2 (replays)"; with what-ifs "before: O
 * (original); after: W (what-if: time x0.7); replay: R1". NULL when out of
 * memory. */
static char *title_of(const char *orig, size_t nrepl, char *const *names, char *const *whatif) {
  if (nrepl == 0) return ms__asprintf("%s over time", orig);
  size_t nw = 0;
  for (size_t i = 0; i < nrepl; i++) nw += whatif[i] != NULL;
  char *t = nw ? ms__asprintf("before: %s (original)", orig) : ms__asprintf("%s (original) against", orig);
  // After the what-ifs (their changes), then the faithful replays.
  for (int pass = 0; t && pass < 2; pass++) {
    size_t n = pass ? nrepl - nw : nw, k = 0;
    for (size_t i = 0; t && i < nrepl; i++) {
      if ((whatif[i] != NULL) == pass) continue;
      const char *sep = k == 0 ? (nw ? "; " : " ") : k + 1 == n ? " and " : ", ";
      const char *head = k > 0 ? "" : pass == 0 ? "after: " : nw ? (n > 1 ? "replays: " : "replay: ") : "";
      char *u = pass == 0 ? ms__asprintf("%s%s%s%s (what-if: %s)", t, sep, head, names[i], whatif[i])
                          : ms__asprintf("%s%s%s%s", t, sep, head, names[i]);
      free(t);
      t = u;
      k++;
    }
    if (t && pass == 1 && n > 0 && !nw) {
      char *u = ms__asprintf("%s (%s)", t, n > 1 ? "replays" : "replay");
      free(t);
      t = u;
    }
  }
  return t;
}

/* The text figure of out (and of each thread, NAME.threadN.txt, after it)
 * to standard output when print, each file removed after; 0 or
 * MS_EXIT_USAGE. */
static int print_figures(const char *out, int64_t threads, int print) {
  int rc = print ? ms_cli_cat(out) : 0;
  unlink(out);
  for (int64_t k = 0; k < threads; k++) {
    size_t n = strlen(out);
    char *p = ms__asprintf("%.*s.thread%lld.txt", (int)(n - 4), out, (long long)k);
    if (!p) return ms_cli_error("out of memory");
    if (rc == 0 && print) {
      printf("\n");
      rc = ms_cli_cat(p);
    }
    unlink(p);
    free(p);
  }
  return rc;
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
  for (int i = first; i < argc; i++)
    if (strcmp(argv[i], "-") == 0)
      return ms_cli_usage("plot", "plot reads its traces from files, not standard input");

  const char *orig_path = argv[first];
  size_t nrepl = (size_t)(argc - first - 1);
  char **repl_paths = argv + first + 1;
  memstub_error err = {0};
  memstub_trace *orig = NULL;
  memstub_trace **repl = calloc(nrepl + 1, sizeof *repl);
  char **labels = calloc(nrepl + 1, sizeof *labels), **names = calloc(nrepl + 1, sizeof *names);
  char **whatif = calloc(nrepl + 1, sizeof *whatif);
  char *orig_label = NULL, *title = NULL, *tmpdir = NULL, *tmpout = NULL;
  int status = MS_EXIT_USAGE;
  if (!repl || !labels || !names || !whatif) {
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
      memstub_compare_threads_report *tr = NULL;
      if (memstub_trace_read(repl_paths[i], &repl[i], &err) < 0 ||
          memstub_compare_threads_traces(orig, orig_path, repl[i], repl_paths[i], &co, &tr,
                                         &err) < 0) {
        ms_cli_fail(&err);
        goto done;
      }
      for (int64_t k = 0; k < tr->nthreads; k++) {  // each thread's, as compare warns
        char on[600], rn[600];
        snprintf(on, sizeof on, "%s (thread %lld)", orig_path, (long long)k);
        snprintf(rn, sizeof rn, "%s (thread %lld)", repl_paths[i], (long long)k);
        warn_missing(tr->thread[k], on, rn);
      }
      memstub_compare_threads_free(tr);
      continue;
    }
    memstub_compare_report *r = NULL;
    if (memstub_compare_files(orig_path, repl_paths[i], &co, &r, &err) < 0 ||
        memstub_trace_read(repl_paths[i], &repl[i], &err) < 0) {
      memstub_compare_free(r);
      ms_cli_fail(&err);
      goto done;
    }
    warn_missing(r, orig_path, repl_paths[i]);
    memstub_compare_free(r);
  }
  // Curves are named by file name; by path when two file names are equal.
  int use_path = 0;
  for (size_t i = 0; i < nrepl; i++)
    for (size_t j = 0; j <= nrepl; j++) {
      const char *other = j == nrepl ? orig_path : repl_paths[j];
      if (j != i && strcmp(base_name(repl_paths[i]), base_name(other)) == 0) use_path = 1;
    }
  int oom = 0;
  const char *oname = use_path ? orig_path : base_name(orig_path);
  for (size_t i = 0; i < nrepl; i++) {
    names[i] = (char *)(use_path ? repl_paths[i] : base_name(repl_paths[i]));
    whatif[i] = what_if(repl[i], &oom);
    oom |= !(labels[i] = ms__asprintf("%s (%s)", whatif[i] ? "what-if" : "measured", names[i]));
  }
  oom |= !(orig_label = ms__asprintf("original (%s)", oname));
  if (!oom && !po.title) oom = !(po.title = title = title_of(oname, nrepl, names, whatif));
  // Without -o, the text figure is drawn in a directory of our own, then printed.
  if (!oom && !out) {
    const char *t = getenv("TMPDIR");
    t = t && *t ? t : "/tmp";
    if (!(tmpdir = ms__asprintf("%s/memstub-plot-XXXXXX", t))) {
      oom = 1;
    } else if (!mkdtemp(tmpdir)) {
      ms_cli_error("%s: cannot create a temporary directory: %s", t, strerror(errno));
      free(tmpdir);
      tmpdir = NULL;
      goto done;
    } else if (!(out = tmpout = ms__asprintf("%s/figure.txt", tmpdir))) {
      oom = 1;
    }
    ms_cli_columns_from_terminal();
  }
  if (oom) {
    ms_cli_error("out of memory");
    goto done;
  }

  int64_t nt = threads ? memstub_trace_thread_count(orig) : 0;
  if ((threads ? memstub_plot_threads : memstub_plot_figure)(
          out, orig, orig_label, nrepl, (const memstub_trace *const *)repl,
          (const char *const *)labels, &po, &err) < 0) {
    ms_cli_fail(&err);
    if (tmpout) print_figures(tmpout, nt, 0);  // the threads' figures already drawn
    goto done;
  }
  if (tmpout) {
    if (print_figures(tmpout, nt, 1) != 0) goto done;
  } else {
    ms_cli_note("%s: %s against %zu replay%s%s", out, orig_path, nrepl, nrepl == 1 ? "" : "s",
                threads ? " (the process total; each thread's beside it, as NAME.threadN.EXT)"
                        : "");
  }
  timeline_note(orig_path, orig, po.recorded_times);
  status = MS_EXIT_OK;
done:
  if (tmpdir) rmdir(tmpdir);
  free(tmpdir);
  free(tmpout);
  free(title);
  for (size_t i = 0; whatif && i < nrepl; i++) free(whatif[i]);
  free(whatif);
  free(names);
  for (size_t i = 0; repl && i < nrepl; i++) memstub_trace_free(repl[i]);
  for (size_t i = 0; labels && i < nrepl; i++) free(labels[i]);
  free(repl);
  free(labels);
  free(orig_label);
  memstub_trace_free(orig);
  return status;
}
