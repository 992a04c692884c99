// Figures of traces with threads: one per thread, and the process total.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/plot.h"
#include "ms_common.h"

/* The process total of t: at each row, stack and heap summed over each
 * thread's latest row. With map (t a replay of an original with threads),
 * a `point` column: the original's row that the row's (thread, point) stands
 * for, map[thread][point] (-1 unknown rows are left out). */
static int total(const memstub_trace *t, size_t *const *map, const size_t *nmap, int64_t nt,
                 memstub_trace **out) {
  *out = NULL;
  int cth = memstub_trace_column(t, "thread"), cp = memstub_trace_column(t, "point");
  if (cth < 0 || (map && cp < 0)) return -EINVAL;
  memstub_trace *s = memstub_trace_create();
  int64_t *st = calloc((size_t)nt, sizeof *st), *hp = calloc((size_t)nt, sizeof *hp);
  int rc = s && st && hp ? 0 : -ENOMEM;
  int ip = -1;
  if (rc == 0 && map && (ip = memstub_trace_add_column(s, "point")) < 0) rc = ip;
  for (size_t i = 0; rc >= 0 && i < t->n; i++) {
    const int64_t *x = memstub_trace_extra_row(t, i);
    int64_t k = x[cth];
    if (k < 0 || k >= nt) continue;
    st[k] = t->pts[i].stack_bytes;
    hp[k] = t->pts[i].heap_bytes;
    if (map && (x[cp] < 0 || (uint64_t)x[cp] >= nmap[k])) continue;
    int64_t a = 0, b = 0;
    for (int64_t j = 0; j < nt; j++) a += st[j], b += hp[j];
    if ((rc = memstub_trace_append(s, t->pts[i].time_ns, a, b)) < 0) break;
    if (map) memstub_trace_extra_row(s, s->n - 1)[ip] = (int64_t)map[k][x[cp]];
  }
  free(st);
  free(hp);
  if (rc < 0 || s->n == 0) {
    memstub_trace_free(s);
    return rc < 0 ? rc : -EINVAL;
  }
  *out = s;
  return 0;
}

// out with ".threadN" before its extension.
static char *thread_path(const char *out, int64_t k) {
  const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
  if (!dot || (slash && dot < slash)) dot = out + strlen(out);
  return ms__asprintf("%.*s.thread%lld%s", (int)(dot - out), out, (long long)k, dot);
}

int memstub_plot_threads(const char *out, const memstub_trace *orig, const char *orig_label,
                         size_t nrepl, const memstub_trace *const *repl,
                         const char *const *repl_labels, const memstub_plot_options *o,
                         memstub_error *err) {
  if (memstub_trace_column(orig, "thread") < 0)
    return memstub_error_set(err, -EINVAL, "%s has no 'thread' column",
                             orig_label ? orig_label : "original");
  memstub_plot_options def;
  o = MS__OPTIONS_OR(o, def, memstub_plot_options_init);
  int64_t nt = memstub_trace_thread_count(orig);
  size_t **map = calloc((size_t)nt, sizeof *map), *nmap = calloc((size_t)nt, sizeof *nmap);
  memstub_trace **sub = calloc(nrepl + 1, sizeof *sub), *so = NULL;
  int rc = map && nmap && sub ? 0 : memstub_error_set(err, -ENOMEM, "out of memory");
  for (int64_t k = 0; k < nt && rc == 0; k++)
    if (memstub_trace_thread_rows(orig, k, &map[k], &nmap[k]) < 0)
      rc = memstub_error_set(err, -ENOMEM, "out of memory");
  // One figure per thread.
  for (int64_t k = 0; k < nt && rc == 0; k++) {
    char *path = thread_path(out, k), *title = NULL;
    if (!path || memstub_trace_thread_split(orig, k, &so) < 0)
      rc = memstub_error_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < nrepl && rc == 0; i++)
      if (memstub_trace_thread_split(repl[i], k, &sub[i]) < 0)
        rc = memstub_error_set(err, -ENOMEM, "out of memory");
    memstub_plot_options po = *o;
    if (rc == 0 && (title = ms__asprintf("%s, thread %lld", o->title ? o->title : "",
                                         (long long)k)) != NULL)
      po.title = o->title ? title : NULL;
    if (rc == 0)
      rc = memstub_plot_figure(path, so, orig_label, nrepl, (const memstub_trace *const *)sub,
                               repl_labels, &po, err);
    for (size_t i = 0; i < nrepl; i++) {
      memstub_trace_free(sub[i]);
      sub[i] = NULL;
    }
    memstub_trace_free(so);
    so = NULL;
    free(path);
    free(title);
  }
  // The process total.
  if (rc == 0 && total(orig, NULL, NULL, nt, &so) < 0)
    rc = memstub_error_set(err, -ENOMEM, "out of memory");
  for (size_t i = 0; i < nrepl && rc == 0; i++)
    if ((rc = total(repl[i], map, nmap, nt, &sub[i])) < 0)
      rc = memstub_error_set(err, rc, "%s: not a replay of a trace with threads (a thread and a "
                             "point column)", repl_labels && repl_labels[i] ? repl_labels[i]
                                                                            : "replay");
  if (rc == 0) {
    memstub_plot_options po = *o;
    char *title = ms__asprintf("%s, process total (sum over threads)", o->title ? o->title : "");
    if (title && o->title) po.title = title;
    rc = memstub_plot_figure(out, so, orig_label, nrepl, (const memstub_trace *const *)sub,
                             repl_labels, &po, err);
    free(title);
  }
  for (size_t i = 0; sub && i < nrepl; i++) memstub_trace_free(sub[i]);
  memstub_trace_free(so);
  for (int64_t k = 0; map && k < nt; k++) free(map[k]);
  free(map);
  free(nmap);
  free(sub);
  return rc;
}
