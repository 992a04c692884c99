// memstub report: the page (docs/compare-and-plot.md#the-report). One file
// of HTML with its style, data and script inline: no network, nothing
// outside it. Every string from a file (names, metadata, the texts of
// compare, sites and generations) is escaped.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"  // compare/: the before and after table, the verdict
#include "memstub/memstub.h"
#include "ms_common.h"
#include "report.h"

extern const char ms_report_js[], ms_report_css[];  // cli/report.js, cli/report.css (embedded)

enum { CURVE_COLUMNS = 4000 };  // points kept per curve: at most four per column

// s with &, <, >, " and ' escaped; control characters but tab and newline as U+FFFD.
static void esc(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
      case '&': fputs("&amp;", f); break;
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '"': fputs("&quot;", f); break;
      case '\'': fputs("&#39;", f); break;
      case '\t': case '\n': fputc(*p, f); break;
      default:
        if (*p < 0x20 || *p == 0x7f) fputs("\xef\xbf\xbd", f);
        else fputc(*p, f);
    }
  }
}

// "<tag attrs>escaped text</tag>\n"; attrs may be "".
static void element(FILE *f, const char *tag, const char *attrs, const char *text) {
  fprintf(f, "<%s%s%s>", tag, *attrs ? " " : "", attrs);
  esc(f, text);
  fprintf(f, "</%s>\n", tag);
}

static const char *role(const ms_report *r, size_t k, char *buf, size_t cap) {
  if (!k) return "original";
  snprintf(buf, cap, "%s %zu", r->tr[k].cmp->whatif.is ? "what-if" : "replay", k);
  return buf;
}

/* ---- the header: the files, their figures and metadata ------------------- */

// One figure cell: bytes, ns or a count; "-" when the trace lacks it.
static void figure_cell(FILE *f, const ms_report_figures *fig, int p) {
  char b[32];
  if (!fig->known[p]) {
    fputs("<td class=\"unknown\">-</td>", f);
    return;
  }
  int64_t v = fig->peak[p];
  fprintf(f, "<td>%s</td>",
          p == MS_REPORT_CPU     ? ms__fmt_ns(v, b, sizeof b)
          : p == MS_REPORT_CALLS ? ms__fmt_count(v, b, sizeof b)
                                 : ms__fmt_bytes(v, b, sizeof b));
}

// The metadata a reader asks of a recording or a replay, when the trace has it.
static const char *const meta_keys[] = {
    "source", "command", "record.thread", "record.threads", "record.regions", "record.heap_scope",
    "record.exit", "transforms", "calibration", "timing", "replayed", "host.cpu", "host.kernel"};

static void files(FILE *f, const ms_report *r) {
  char b[32], rb[32];
  fputs("<table id=\"files\">\n<thead><tr><th>trace</th><th class=\"l\">file</th><th>rows</th>"
        "<th>duration</th><th>peak stack</th><th>peak heap</th><th>peak resident</th>"
        "<th>peak mapped</th><th>CPU</th><th>allocator calls</th></tr></thead>\n<tbody>\n",
        f);
  for (size_t k = 0; k < r->n; k++) {
    const ms_report_trace *t = &r->tr[k];
    fprintf(f, "<tr data-trace=\"%zu\"><td class=\"role\">%s</td><td class=\"path\">", k,
            role(r, k, rb, sizeof rb));
    esc(f, t->path);
    fprintf(f, "</td><td>%s</td><td>%s</td>", ms__fmt_count((int64_t)t->t->n, b, sizeof b),
            ms__fmt_ns(t->fig.duration_ns, rb, sizeof rb));
    for (int p = 0; p < MS_REPORT_PANELS; p++) figure_cell(f, &t->fig, p);
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n<table id=\"meta\">\n<tbody>\n", f);
  for (size_t k = 0; k < r->n; k++) {
    fprintf(f, "<tr><td>%s</td><td class=\"l\">", role(r, k, rb, sizeof rb));
    int any = 0;
    for (size_t i = 0; i < MS__ARRAY_SIZE(meta_keys); i++) {
      const char *v = memstub_trace_get_meta(r->tr[k].t, meta_keys[i]);
      if (!v) continue;
      fprintf(f, "%s<b>%s</b> ", any++ ? "; " : "", meta_keys[i]);
      esc(f, v);
    }
    fputs(any ? "</td></tr>\n" : "no metadata</td></tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
}

static void header(FILE *f, const ms_report *r) {
  char when[32] = "", rb[32];
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
  fputs("<header id=\"summary\">\n", f);
  element(f, "h1", "", r->title);
  fprintf(f, "<p class=\"made\">made by memstub %s on %s: <code>", MEMSTUB_VERSION_STRING, when);
  esc(f, r->command);
  fputs("</code></p>\n", f);
  files(f, r);
  if (r->timeline) {
    fputs("<p class=\"note\">The original is drawn and judged on its stub's timeline: ", f);
    esc(f, r->timeline);
    fputs(" (memstub report --recorded-times: as recorded).</p>\n", f);
  }
  if (!r->sites_text)
    fputs("<p class=\"note\">Allocation sites: not recorded (memstub record --sites).</p>\n", f);
  if (!r->generations_text)
    fputs("<p class=\"note\">Generations: none (the recording has no probe regions).</p>\n", f);
  if (r->n == 1)
    fputs("<p class=\"note\">No replay given: the recording alone (memstub report ORIGINAL "
          "REPLAYED... compares replays with it).</p>\n",
          f);
  fputs("<nav>", f);
  for (size_t k = 1; k < r->n; k++)
    fprintf(f, "<a href=\"#compare-%zu\">%s</a>", k, role(r, k, rb, sizeof rb));
  fputs("<a href=\"#curves\">curves</a>", f);
  if (r->n > 1) fputs("<a href=\"#lateness\">lateness</a>", f);
  if (r->sites_text) fputs("<a href=\"#sites\">sites</a>", f);
  if (r->generations_text) fputs("<a href=\"#generations\">generations</a>", f);
  fputs("</nav>\n</header>\n", f);
}

/* ---- a replay against the original --------------------------------------- */

// The before and after figures (a what-if), or ORIGINAL's and REPLAYED's (a replay as recorded).
static void figures(FILE *f, const memstub_compare_report *c) {
  char a[40], b[40], d[96];
  fprintf(f, "<table class=\"figures\">\n<thead><tr><th></th><th>%s</th><th>%s</th>"
             "<th class=\"l\">change</th></tr></thead>\n<tbody>\n",
          c->whatif.is ? "before" : "original", c->whatif.is ? "after" : "replayed");
  for (int k = 0; k < MEMSTUB_FIGURES; k++) {
    const memstub_compare_change *x = &c->whatif.fig[k];
    fprintf(f, "<tr><td>%s</td><td>%s</td><td>%s</td><td class=\"l\">",
            memstub_compare_figure_name((memstub_compare_figure)k, 0),
            x->known ? ms__compare_fig_text(a, k, x->before, 0) : "-",
            x->known ? ms__compare_fig_text(b, k, x->after, 0) : "-");
    esc(f, ms__compare_change_text(c, k, d, sizeof d));
    fputs("</td></tr>\n", f);
  }
  fputs("</tbody></table>\n<p class=\"note\">allocator calls: malloc, calloc, realloc and "
        "memalign; the stub's frees are its own (below).</p>\n",
        f);
}

// A replay's section: what it changes or how faithful it is, the verdict, the differences by design.
static int comparison(FILE *f, const ms_report *r, size_t k) {
  const ms_report_trace *t = &r->tr[k];
  const memstub_compare_report *c = t->cmp;
  char buf[4096], rb[32];
  fprintf(f, "<section id=\"compare-%zu\" class=\"compare\">\n<h2>%s: ", k, role(r, k, rb, sizeof rb));
  esc(f, t->path);
  fputs(c->whatif.is ? ", a what-if of " : " against ", f);
  esc(f, r->tr[0].path);
  fputs("</h2>\n", f);
  if (c->whatif.is) {
    ms__compare_scales_text(&c->whatif.scales, buf, sizeof buf);
    fputs("<p>What it changes (", f);
    esc(f, buf);
    fputs("): before is the original on its stub's timeline, after the replay.</p>\n", f);
  } else {
    fputs("<p>How faithful the replay is to the original: their figures, then the verdict and "
          "the goals it was held to.</p>\n",
          f);
  }
  figures(f, c);
  int faithful = 0;
  if (ms__compare_verdict_line(c, NULL, buf, sizeof buf, &faithful) < 0) return -ENOMEM;
  fprintf(f, "<p class=\"verdict %s\"><b>verdict</b> ", faithful ? "faithful" : "unfaithful");
  esc(f, buf);
  fputs("</p>\n", f);
  const char *key;
  int any = 0;
  for (int i = 0; (key = ms__compare_design_item(c, i, buf, sizeof buf)); i++) {
    if (!buf[0]) continue;
    if (!any++)
      fputs("<h3>Differences by design (the stub is not the component; not errors)</h3>\n"
            "<dl class=\"design\">\n",
            f);
    element(f, "dt", "", key);
    element(f, "dd", "", buf);
  }
  fputs(any ? "</dl>\n" : "", f);
  fputs("<details><summary>memstub compare's whole report</summary>\n", f);
  element(f, "pre", "", t->compare_text);
  fputs("</details>\n</section>\n", f);
  return 0;
}

/* ---- lateness by cause --------------------------------------------------- */

static void lateness(FILE *f, const ms_report *r) {
  char rb[32], a[32], b[32], m[32];
  fputs("<section id=\"lateness\">\n<h2>Lateness by cause</h2>\n<p>How late each replay measured "
        "the original's rows, by what the row changed, and why the late ones were late: the wait "
        "woke after its deadline, the work took longer than predicted, or the thread was not "
        "running (the host was busy).</p>\n",
        f);
  for (size_t k = 1; k < r->n; k++) {
    const memstub_compare_report *c = r->tr[k].cmp;
    fprintf(f, "<h3>%s: ", role(r, k, rb, sizeof rb));
    esc(f, r->tr[k].path);
    fprintf(f, " (late: more than %s after its time)</h3>\n<table class=\"lateness\" "
               "id=\"lateness-%zu\">\n<thead><tr><th>row changes</th><th>rows</th><th>p50</th>"
               "<th>p99</th><th>max</th><th>late</th>",
            ms__fmt_ns(c->options.late_ns, a, sizeof a), k);
    for (int q = 0; q < MEMSTUB_LATE_CAUSES; q++)
      fprintf(f, "<th>%s</th>", memstub_late_cause_name((memstub_late_cause)q, 0));
    fputs("</tr></thead>\n<tbody>\n", f);
    for (int j = 0; j < MEMSTUB_ROW_KINDS; j++) {
      const memstub_compare_kind *s = &c->by_kind[j];
      if (!s->rows) continue;
      fprintf(f, "<tr><td>%s</td><td>%zu</td><td>%s</td><td>%s</td><td>%s</td><td>%zu</td>",
              memstub_row_kind_name((memstub_row_kind)j), s->rows,
              ms__fmt_ns(s->time.p50_abs, a, sizeof a), ms__fmt_ns(s->time.p99_abs, b, sizeof b),
              ms__fmt_ns(s->time.max_abs, m, sizeof m), s->time.late);
      for (int q = 0; q < MEMSTUB_LATE_CAUSES; q++) fprintf(f, "<td>%zu</td>", s->late_by_cause[q]);
      fputs("</tr>\n", f);
    }
    fprintf(f, "<tr><th>all</th><td>%zu</td><td></td><td></td><td></td><td>%zu</td>", c->compared,
            c->time.late);
    for (int q = 0; q < MEMSTUB_LATE_CAUSES; q++)
      fprintf(f, "<td>%zu%s%s</td>", c->late_by_cause.rows[q],
              c->late_by_cause.rows[q] ? ", largest " : "",
              c->late_by_cause.rows[q] ? ms__fmt_ns(c->late_by_cause.max_ns[q], a, sizeof a) : "");
    fputs("</tr>\n</tbody></table>\n", f);
    if (!c->late_by_cause.causes_known)
      fputs("<p class=\"note\">The replayed trace has no wake_late_ns and work_ns columns (not "
            "measured by memstub replay --measure): its late rows' causes are unknown.</p>\n",
            f);
  }
  fputs("</section>\n", f);
}

/* ---- the curves ----------------------------------------------------------- */

// The traces without panel p's curve, and why (a stack or heap its metadata says is unknown).
static void missing(FILE *f, const ms_report *r, int p) {
  char rb[32];
  for (size_t k = 0; k < r->n; k++) {
    if (r->tr[k].fig.known[p]) continue;
    const char *why = p <= MS_REPORT_HEAP
                          ? memstub_trace_get_meta(r->tr[k].t, p == MS_REPORT_STACK ? "stack" : "heap")
                          : NULL;
    fprintf(f, "<p class=\"note\">Not drawn for %s ", role(r, k, rb, sizeof rb));
    esc(f, r->tr[k].path);
    if (why) {
      fputs(": its metadata says ", f);
      esc(f, why);
    } else {
      fprintf(f, ": it has no %s column", ms_report_panel_column(p));
    }
    fputs(".</p>", f);
  }
}

static void curves(FILE *f, const ms_report *r) {
  fputs("<section id=\"curves\">\n<h2>Curves</h2>\n<p class=\"hint\"><button id=\"show-all\" "
        "type=\"button\">show all</button>Drag across a panel to zoom every panel into that "
        "span; the wheel zooms around the pointer; a double click shows the whole run. "
        "<span id=\"view\"></span></p>\n<noscript><p>The curves are drawn by the page's script: "
        "allow JavaScript to see them.</p></noscript>\n",
        f);
  for (int p = 0; p < MS_REPORT_PANELS; p++) {
    int any = 0;
    for (size_t k = 0; k < r->n; k++) any |= r->tr[k].fig.known[p];
    if (!any) continue;
    fprintf(f, "<div class=\"panel\" id=\"panel-%s\"><h3>%s</h3><canvas class=\"plot\"></canvas>"
               "<div class=\"legend\"></div><div class=\"readout\">&nbsp;</div>",
            ms_report_panel_id(p), ms_report_panel_title(p));
    missing(f, r, p);
    fputs("</div>\n", f);
  }
  fputs("</section>\n", f);
}

// A side file's text in a section of its own (nothing when text is NULL).
static void side(FILE *f, const char *id, const char *title, const char *text) {
  if (!text) return;
  fprintf(f, "<section id=\"%s\">\n<h2>%s</h2>\n", id, title);
  element(f, "pre", "", text);
  fputs("</section>\n", f);
}

int ms_report_write_html(FILE *f, const ms_report *r) {
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", f);
  fprintf(f, "<meta name=\"generator\" content=\"memstub %s\">\n", MEMSTUB_VERSION_STRING);
  fputs("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n", f);
  element(f, "title", "", r->title);
  fprintf(f, "<style>\n%s</style>\n</head>\n<body>\n", ms_report_css);
  header(f, r);
  for (size_t k = 1; k < r->n; k++)
    if (comparison(f, r, k) < 0) return -ENOMEM;
  curves(f, r);
  if (r->n > 1) lateness(f, r);
  side(f, "sites", "Allocation sites at the heap's peak", r->sites_text);
  side(f, "generations", "What each region left alive", r->generations_text);
  fputs("<script>\n", f);
  if (ms_report_write_curves(f, r, CURVE_COLUMNS) < 0) return -ENOMEM;
  fprintf(f, "</script>\n<script>\n%s</script>\n</body>\n</html>\n", ms_report_js);
  return ferror(f) ? -EIO : 0;
}
