// The what-if scales of a stub (docs/formats.md, "What-if transforms"):
// resident and mapped memory following the heap, the provenance's line,
// and what the scales did to the stub's peaks, duration and CPU time.
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "whatif.h"
#include "memstub/work.h"

void ms__gen_scales(const memstub_gen_options *o, ms__whatif *w) {
  w->time = o->time_scale;
  w->heap = o->heap_scale;
  w->stack = o->stack_scale;
  w->rss = o->rss_scale == MEMSTUB_GEN_SCALE_HEAP ? o->heap_scale : o->rss_scale;
  w->mapped = o->mapped_scale == MEMSTUB_GEN_SCALE_HEAP ? o->heap_scale : o->mapped_scale;
  w->cpu = o->cpu_scale;
  w->churn = o->churn_scale;
}

// The largest value of extra column name of t, 0 without the column (*has 0).
static int64_t column_peak(const memstub_trace *t, const char *name, int *has) {
  int c = memstub_trace_column(t, name);
  int64_t peak = 0;
  *has = c >= 0;
  for (size_t i = 0; c >= 0 && i < t->n; i++)
    if (memstub_trace_extra_row(t, i)[c] > peak) peak = memstub_trace_extra_row(t, i)[c];
  return peak;
}

void ms__gen_whatif_before(memstub_gen *g, const memstub_trace *t, const memstub_gen_options *o,
                           const ms__work *wk, const ms__targets *tg) {
  memstub_gen_whatif *w = &g->whatif;
  ms__whatif s;
  ms__gen_scales(o, &s);
  w->rss_scale = s.rss;
  w->mapped_scale = s.mapped;
  w->rss_follows = o->rss_scale == MEMSTUB_GEN_SCALE_HEAP;
  w->mapped_follows = o->mapped_scale == MEMSTUB_GEN_SCALE_HEAP;
  w->heap[0] = w->stack[0] = 0;
  w->heap[1] = w->stack[1] = 0;
  for (size_t i = 0; i < t->n; i++) {
    if (t->pts[i].heap_bytes > w->heap[0]) w->heap[0] = t->pts[i].heap_bytes;
    if (t->pts[i].stack_bytes > w->stack[0]) w->stack[0] = t->pts[i].stack_bytes;
    if (tg->h[i] + tg->heap_base > w->heap[1]) w->heap[1] = tg->h[i] + tg->heap_base;
    if (tg->s[i] + tg->stack_base > w->stack[1]) w->stack[1] = tg->s[i] + tg->stack_base;
  }
  w->rss[0] = column_peak(t, "rss_bytes", &w->has_rss);
  w->rss[1] = 0;
  (void)column_peak(t, "mapped_bytes", &w->has_mapped);
  // The stub's timeline before the scales: the recorder's cost out, or as recorded.
  w->duration[0] = wk->present ? wk->timeline.target_ns : t->pts[t->n - 1].time_ns - t->pts[0].time_ns;
  w->duration[1] = tg->t[tg->n - 1] - tg->t[0];
  int has_cpu = memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN) >= 0;
  w->cpu[0] = w->cpu[1] = has_cpu ? wk->timeline.target_cpu_ns : -1;
}

void ms__gen_whatif_after(memstub_gen *g) {
  memstub_gen_whatif *w = &g->whatif;
  if (w->has_rss && g->rss) w->rss[1] = g->stub.rss_base + g->peak_rss;
  if (w->cpu[0] >= 0 && g->cpu) w->cpu[1] = g->work_cpu_ns;
}

// "  LABEL  BEFORE -> AFTER (+x.x %)\n" into buf at *n; bytes or ns.
static void line(char *buf, size_t cap, size_t *n, const char *label, const int64_t v[2],
                 int bytes) {
  char a[32], b[32], pct[32] = "";
  if (bytes) {
    ms__fmt_bytes(v[0], a, sizeof a);
    ms__fmt_bytes(v[1], b, sizeof b);
  } else {
    ms__fmt_ns(v[0], a, sizeof a);
    ms__fmt_ns(v[1], b, sizeof b);
  }
  if (v[0] > 0) snprintf(pct, sizeof pct, " (%+.1f %%)", 100.0 * (double)(v[1] - v[0]) / (double)v[0]);
  if (*n >= cap) return;
  int m = snprintf(buf + *n, cap - *n, "  %-14s %s -> %s%s\n", label, a, b, pct);
  if (m > 0) *n += (size_t)m;
}

void memstub_gen_whatif_format(const memstub_gen *g, char *buf, size_t cap) {
  const memstub_gen_whatif *w = &g->whatif;
  ms__whatif s;
  if (cap) buf[0] = '\0';
  if (cap == 0 || !g->transforms || ms__whatif_parse(g->transforms, &s) < 0 || ms__whatif_none(&s))
    return;
  // The scales asked for, those other than 1, in the options' order.
  const struct {
    const char *name;
    double v;
    int shown;
  } sc[] = {{"time", s.time, 1},    {"heap", s.heap, 1},
            {"stack", s.stack, 1},  {"rss", s.rss, !w->rss_follows},
            {"mapped", s.mapped, !w->mapped_follows}, {"cpu", s.cpu, 1},
            {"churn", s.churn, 1}};
  size_t n = 0;
  int m = snprintf(buf, cap, "what-if:");
  for (size_t k = 0; m >= 0 && k < sizeof sc / sizeof *sc; k++) {
    n += (size_t)m;
    m = sc[k].shown && sc[k].v != 1.0 && n < cap
            ? snprintf(buf + n, cap - n, " --%s-scale %g", sc[k].name, sc[k].v)
            : 0;
  }
  if (m > 0) n += (size_t)m;
  // The rule, where it applied: resident and mapped memory follow the heap.
  int r = w->has_rss && w->rss_follows && s.heap != 1.0,
      p = w->has_mapped && w->mapped_follows && s.heap != 1.0;
  if ((r || p) && n < cap) {
    m = snprintf(buf + n, cap - n, "; %s the heap (x%g; %s)",
                 r && p ? "resident and mapped memory follow"
                 : r    ? "resident memory follows"
                        : "mapped memory follows",
                 s.heap,
                 r && p ? "--rss-scale and --mapped-scale set their own"
                 : r    ? "--rss-scale sets its own"
                        : "--mapped-scale sets its own");
    if (m > 0) n += (size_t)m;
  }
  if (n < cap) {
    m = snprintf(buf + n, cap - n, "\n");
    if (m > 0) n += (size_t)m;
  }
  line(buf, cap, &n, "peak heap", w->heap, 1);
  if (s.stack != 1.0) line(buf, cap, &n, "peak stack", w->stack, 1);
  if (w->has_rss) line(buf, cap, &n, "peak resident", w->rss, 1);
  line(buf, cap, &n, "duration", w->duration, 0);
  if (w->cpu[0] >= 0) line(buf, cap, &n, "CPU", w->cpu, 0);
}
