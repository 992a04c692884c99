// The what-if scales of a stub: their line in the provenance, and a trace
// transformed by them (whatif.h).
#include "whatif.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/work.h"
#include "ms_common.h"

// The scales in the line's order, with their names.
static double *scale_at(ms__whatif *w, int k) {
  double *s[] = {&w->time, &w->heap, &w->stack, &w->rss, &w->mapped, &w->cpu, &w->churn};
  return s[k];
}
static const char *const names[] = {"time", "heap", "stack", "rss", "mapped", "cpu", "churn"};
#define NSCALES 7

void ms__whatif_init(ms__whatif *w) {
  for (int k = 0; k < NSCALES; k++) *scale_at(w, k) = 1.0;
}

int ms__whatif_none(const ms__whatif *w) {
  ms__whatif c = *w;
  for (int k = 0; k < NSCALES; k++)
    if (*scale_at(&c, k) != 1.0) return 0;
  return 1;
}

void ms__whatif_format(const ms__whatif *w, char *buf, size_t cap) {
  if (ms__whatif_none(w)) {
    snprintf(buf, cap, "none");
    return;
  }
  ms__whatif c = *w;
  size_t n = 0;
  buf[0] = '\0';
  for (int k = 0; k < NSCALES && n < cap; k++) {
    double v = *scale_at(&c, k);
    char num[40];
    for (int prec = 15; prec <= 17; prec++) {  // the shortest that reads back as v
      snprintf(num, sizeof num, "%.*g", prec, v);
      if (strtod(num, NULL) == v) break;
    }
    int m = snprintf(buf + n, cap - n, "%s%s x%s", k ? ", " : "", names[k], num);
    if (m < 0) return;
    n += (size_t)m;
  }
}

// Whether s[0..n) is a decimal number as %g writes one: 12, 0.5, 1e-05 (no sign, no hex, no "inf").
static int is_decimal(const char *s, size_t n) {
  size_t i = 0, d = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++, d++;
  if (i < n && s[i] == '.')
    for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) d++;
  if (!d) return 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    if (++i < n && (s[i] == '+' || s[i] == '-')) i++;
    if (i == n || s[i] < '0' || s[i] > '9') return 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
  }
  return i == n;
}

int ms__whatif_parse_at(const char *line, ms__whatif *w, size_t *at, const char **field) {
  ms__whatif_init(w);
  *at = 0;
  *field = NULL;
  if (strcmp(line, "none") == 0) return 0;
  const char *p = line;
  if (!*p) goto bad;
  for (int k = 0; k < NSCALES && *p; k++) {
    size_t l = strlen(names[k]), m;
    char num[40];
    if (strncmp(p, names[k], l) != 0 || p[l] != ' ' || p[l + 1] != 'x') goto bad;
    p += l + 2;
    // From here on what is wrong is scale k's value.
    *field = names[k];
    if ((m = strcspn(p, ",")) == 0 || m >= sizeof num || !is_decimal(p, m)) goto bad;
    memcpy(num, p, m);
    num[m] = '\0';
    if (ms__parse_double(num, scale_at(w, k)) < 0) goto bad;
    p += m;
    *field = NULL;
    if (*p == ',' && p[1] == ' ' && p[2]) p += 2;
    else if (*p) goto bad;
    else if (k < 2) goto bad;  // time, heap and stack are always named
  }
  if (!*p) return 0;
bad:
  *at = (size_t)(p - line);
  ms__whatif_init(w);
  return -EINVAL;
}

int ms__whatif_parse(const char *line, ms__whatif *w) {
  size_t at;
  const char *field;
  return ms__whatif_parse_at(line, w, &at, &field);
}

int ms__trace_dup(const memstub_trace *t, memstub_trace **out) {
  *out = NULL;
  memstub_trace *c = memstub_trace_create();
  int rc = c ? 0 : -ENOMEM;
  for (size_t k = 0; rc == 0 && k < t->nextra; k++)
    if (memstub_trace_add_column(c, t->extra_names[k]) < 0) rc = -ENOMEM;
  for (size_t k = 0; rc == 0 && k < t->nmeta; k++)
    if (memstub_trace_set_meta(c, t->meta[k].key, t->meta[k].value) < 0) rc = -ENOMEM;
  if (rc == 0) rc = memstub_trace_reserve(c, t->n);
  for (size_t i = 0; rc == 0 && i < t->n; i++) {
    const memstub_point *p = &t->pts[i];
    if ((rc = memstub_trace_append(c, p->time_ns, p->stack_bytes, p->heap_bytes)) == 0 &&
        t->nextra)
      memcpy(memstub_trace_extra_row(c, i), memstub_trace_extra_row(t, i),
             t->nextra * sizeof(int64_t));
  }
  if (rc < 0) {
    memstub_trace_free(c);
    return -ENOMEM;
  }
  *out = c;
  return 0;
}

// v * f rounded into *v; -EINVAL with err naming the row and column when it leaves 64 bits.
static int scale_value(int64_t *v, double f, size_t row, const char *col, memstub_error *err) {
  if (f == 1.0) return 0;
  int64_t x;
  if (ms__round_i64((double)*v * f, &x) < 0)
    return memstub_error_set(err, -EINVAL, "row %zu: %s %lld overflows 64 bits scaled by %g",
                             row + 1, col, (long long)*v, f);
  *v = x;
  return 0;
}

/* The times and CPU time of c (a copy of t) with cpu and time applied:
 * row i's interval less its CPU time plus that CPU time scaled, and the
 * totals scaled by time. */
static int scale_times(const memstub_trace *t, memstub_trace *c, const ms__whatif *w,
                       memstub_error *err) {
  int cc = memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN);
  int64_t time = t->pts[0].time_ns, cpu = cc >= 0 ? memstub_trace_extra_row(t, 0)[cc] : 0;
  for (size_t i = 0; i < t->n; i++) {
    int64_t dt = i ? t->pts[i].time_ns - t->pts[i - 1].time_ns : 0, used = 0;
    if (cc >= 0 && i) {
      used = memstub_trace_extra_row(t, i)[cc] - memstub_trace_extra_row(t, i - 1)[cc];
      if (used < 0) used = 0;
      if (used > dt) used = dt;  // as ms__timeline_rows takes it
    }
    int64_t used2 = used;
    int rc = scale_value(&used2, w->cpu, i, MEMSTUB_WORK_CPU_COLUMN, err);
    if (rc == 0 && (ms__add_i64(time, dt - used, &time) < 0 || ms__add_i64(time, used2, &time) < 0))
      rc = memstub_error_set(err, -EINVAL, "row %zu: time_ns overflows 64 bits", i + 1);
    int64_t scaled = time;
    if (rc == 0) rc = scale_value(&scaled, w->time, i, "time_ns", err);
    if (rc == 0) rc = scale_value(&used2, w->time, i, MEMSTUB_WORK_CPU_COLUMN, err);
    if (rc == 0 && i && cc >= 0 && ms__add_i64(cpu, used2, &cpu) < 0)
      rc = memstub_error_set(err, -EINVAL, "row %zu: cpu_ns overflows 64 bits", i + 1);
    if (rc < 0) return rc;
    c->pts[i].time_ns = scaled;
    if (cc >= 0) memstub_trace_extra_row(c, i)[cc] = cpu;
  }
  return 0;
}

int ms__whatif_apply(const memstub_trace *t, const ms__whatif *w, memstub_trace **out,
                     memstub_error *err) {
  memstub_trace *c = NULL;
  if (ms__trace_dup(t, &c) < 0) return memstub_error_set(err, -ENOMEM, "out of memory");
  int rc = t->n ? scale_times(t, c, w, err) : 0;
  for (size_t i = 0; rc == 0 && i < t->n; i++)
    if ((rc = scale_value(&c->pts[i].stack_bytes, w->stack, i, "stack_bytes", err)) == 0)
      rc = scale_value(&c->pts[i].heap_bytes, w->heap, i, "heap_bytes", err);
  static const char *const calls[MEMSTUB_WORK_CALLS] = {MEMSTUB_WORK_CALL_COLUMNS};
  for (size_t k = 0; rc == 0 && k < t->nextra; k++) {
    const char *name = t->extra_names[k];
    int churn = strcmp(name, MEMSTUB_WORK_BYTES_COLUMN) == 0;
    for (int j = 0; j < MEMSTUB_WORK_CALLS && !churn; j++) churn = strcmp(name, calls[j]) == 0;
    // The minor faults make pages resident: they follow the resident memory's scale.
    double f = strcmp(name, "rss_bytes") == 0 || strcmp(name, "minor_faults") == 0 ? w->rss
               : strcmp(name, "mapped_bytes") == 0                                 ? w->mapped
               : churn                             ? w->churn
                                                   : 1.0;
    double cum = 0;
    int64_t done = 0;
    for (size_t i = 0; rc == 0 && f != 1.0 && i < t->n; i++) {
      int64_t *v = &memstub_trace_extra_row(c, i)[k];
      if (!churn || i == 0) {  // row 0's calls come before the stub starts
        if (*v >= 0) rc = scale_value(v, f, i, name, err);
        continue;
      }
      // Per row, as memstub gen takes them: the rounding carried on.
      cum += (double)*v * f;
      int64_t want;
      if (ms__round_i64(cum, &want) < 0) {
        rc = memstub_error_set(err, -EINVAL, "row %zu: %s overflows 64 bits scaled by %g", i + 1,
                               name, f);
        break;
      }
      *v = want - done;
      done = want;
    }
  }
  return MS__HAND_OUT(rc, c, out, memstub_trace_free);
}
