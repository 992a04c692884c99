// The curves a trace has, their values and their peaks, for the figure.
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "memstub/work.h"

int ms__plot_curve_column(const memstub_trace *t, int c) {
  return c == MS__C_RSS ? memstub_trace_column(t, "rss_bytes")
         : c == MS__C_MAPPED ? memstub_trace_column(t, "mapped_bytes")
                             : -1;
}

int ms__plot_has_curve(const memstub_trace *t, int c) {
  if (c >= MS__C_RSS) return ms__plot_curve_column(t, c) >= 0;
  const char *m = memstub_trace_get_meta(t, c == MS__C_STACK ? "stack" : "heap");
  return !(m && strncmp(m, "unknown", 7) == 0);
}

int64_t ms__plot_curve_value(const memstub_trace *t, size_t i, int c, int col) {
  return c == MS__C_STACK  ? t->pts[i].stack_bytes
         : c == MS__C_HEAP ? t->pts[i].heap_bytes
                           : memstub_trace_extra_row(t, i)[col];
}

ms__plot_peak ms__plot_find_peak(const memstub_trace *t, int c) {
  ms__plot_peak p = {(double)t->pts[0].time_ns / 1000.0, INT64_MIN};
  if (!ms__plot_has_curve(t, c)) return (ms__plot_peak){p.x, 0};
  int col = ms__plot_curve_column(t, c);
  for (size_t i = 0; i < t->n; i++) {
    int64_t v = ms__plot_curve_value(t, i, c, col);
    if (v > p.y) p = (ms__plot_peak){(double)t->pts[i].time_ns / 1000.0, v};
  }
  return p;
}

const char *const ms__plot_work_calls[MEMSTUB_WORK_CALLS] = {MEMSTUB_WORK_CALL_COLUMNS};

int ms__plot_has_cpu(const memstub_trace *t) {
  return memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN) >= 0;
}

int ms__plot_has_calls(const memstub_trace *t) {
  if (memstub_trace_column(t, MEMSTUB_WORK_BYTES_COLUMN) >= 0) return 1;
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++)
    if (memstub_trace_column(t, ms__plot_work_calls[k]) >= 0) return 1;
  return 0;
}
