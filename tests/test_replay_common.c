// The replay exactness criterion (see test_replay_common.h).
#include "test_replay_common.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

memstub_trace *rt_trace(const char *text) {
  memstub_trace *t = NULL;
  memstub_error err = {0};
  int rc = memstub_trace_parse("test", text, strlen(text), &t, &err);
  ck_assert_msg(rc == 0, "bad test trace: %s", err.msg);
  return t;
}

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

void rt_check_exact(const memstub_trace *orig, const struct memstub_stub *s,
                    const memstub_trace *rep, int check_heap, rt_fit *fit) {
  memset(fit, 0, sizeof *fit);
  int cp = memstub_trace_column(rep, "point"), ct = memstub_trace_column(rep, "target_time_ns"),
      cl = memstub_trace_column(rep, "late_ns");
  ck_assert_msg(cp >= 0 && ct >= 0 && cl >= 0, "replayed trace lacks point/target/late columns");
  ck_assert_int_eq((int64_t)rep->n, (int64_t)orig->n);

  // Open frames after each row's last point (rows without points keep the depth).
  int64_t *depth = calloc(orig->n, sizeof *depth);
  int64_t d = 0;
  for (int64_t i = 0; i < s->numdata; i++) {
    d += s->use[i].stackAlloc > 0 ? 1 : s->use[i].stackAlloc < 0 ? -1 : 0;
    for (int64_t r = s->point[i]; r < (int64_t)orig->n; r++) depth[r] = d;
  }

  // Rows in order, one per original row, target = trace time; never early
  // with deadline timing, never before the previous row's deadline with the
  // online cost model (it starts a row at most its delay early).
  int online = memstub_trace_get_meta(rep, "cost_model") != NULL;
  for (size_t r = 0; r < rep->n; r++) {
    const int64_t *x = memstub_trace_extra_row(rep, r);
    ck_assert_msg(x[cp] == (int64_t)r, "row %zu measures point %lld", r, (long long)x[cp]);
    ck_assert_msg(x[ct] == orig->pts[r].time_ns, "row %zu: target %lld, trace time %lld", r,
                  (long long)x[ct], (long long)orig->pts[r].time_ns);
    ck_assert_msg(x[cl] == rep->pts[r].time_ns - x[ct], "row %zu: late_ns inconsistent", r);
    int64_t floor = online && r > 0 ? orig->pts[r - 1].time_ns - x[ct] : 0;
    ck_assert_msg(x[cl] >= floor, "row %zu: %lld ns early (%s timing)", r, (long long)-x[cl],
                  memstub_trace_get_meta(rep, "timing"));
    if (depth[r] > fit->max_depth) fit->max_depth = depth[r];
  }
  fit->rows = (int64_t)rep->n;

#if defined(MEMSTUB_SANITIZED)
  (void)check_heap;
  (void)abs64;
#else
  // Frame overhead: from the mean deviation at the shallowest and deepest rows.
  int64_t dmin = INT64_MAX, dmax = -1;
  for (size_t r = 0; r < rep->n; r++) {
    if (depth[r] < dmin) dmin = depth[r];
    if (depth[r] > dmax) dmax = depth[r];
  }
  double lo = 0, hi = 0;
  int nlo = 0, nhi = 0;
  for (size_t r = 0; r < rep->n; r++) {
    double dev = (double)(rep->pts[r].stack_bytes - orig->pts[r].stack_bytes);
    if (depth[r] == dmin) lo += dev, nlo++;
    if (depth[r] == dmax) hi += dev, nhi++;
  }
  fit->frame = dmax > dmin ? (int64_t)((hi / nhi - lo / nlo) / (double)(dmax - dmin) + 0.5) : 0;
  // Offset: from the first row with the fewest frames.
  size_t first = 0;
  while (depth[first] != dmin) first++;
  fit->stack_offset = rep->pts[first].stack_bytes - orig->pts[first].stack_bytes -
                      dmin * fit->frame;
  fit->heap_offset = rep->pts[0].heap_bytes - orig->pts[0].heap_bytes;
  for (size_t r = 0; r < rep->n; r++) {
    int64_t ds = rep->pts[r].stack_bytes - orig->pts[r].stack_bytes - fit->stack_offset -
                 depth[r] * fit->frame;
    if (abs64(ds) > fit->worst_stack) fit->worst_stack = abs64(ds);
    ck_assert_msg(abs64(ds) <= RT_SLACK,
                  "row %zu: stack %lld measured, trace %lld + offset %lld + %lld frames x %lld "
                  "= off by %lld",
                  r, (long long)rep->pts[r].stack_bytes, (long long)orig->pts[r].stack_bytes,
                  (long long)fit->stack_offset, (long long)depth[r], (long long)fit->frame,
                  (long long)ds);
    if (!check_heap) continue;
    int64_t dh = rep->pts[r].heap_bytes - orig->pts[r].heap_bytes - fit->heap_offset;
    int mmapped = orig->pts[r].heap_bytes - s->heap_base >= RT_MMAP_MIN;
    if (!mmapped && abs64(dh) > fit->worst_heap) fit->worst_heap = abs64(dh);
    ck_assert_msg(abs64(dh) <= (mmapped ? 4096 : RT_SLACK),
                  "row %zu: heap %lld measured, trace %lld + offset %lld = off by %lld", r,
                  (long long)rep->pts[r].heap_bytes, (long long)orig->pts[r].heap_bytes,
                  (long long)fit->heap_offset, (long long)dh);
  }
  if (dmax > dmin) ck_assert_msg(fit->frame > 0, "no stack overhead per frame: %lld",
                                 (long long)fit->frame);
#endif
  free(depth);
}
