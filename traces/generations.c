/* traces/generations.c: the release of the survivors of TRACE.generations
 * (memstub/generations.h, docs/formats.md#generations) in a trace: for
 * memstub gen --release and --hold. The reader is generations_read.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/generations.h"
#include "ms_common.h"

typedef struct rel {
  int64_t t, bytes;
} rel;

static int by_time(const void *a, const void *b) {
  const rel *x = a, *y = b;
  return x->t < y->t ? -1 : x->t > y->t;
}

// Whether column name is one of the per-interval ones (reset in added rows).
static int per_interval(const char *name) {
  return strcmp(name, "churn_bytes") == 0 || strncmp(name, "calls_", 6) == 0;
}

/* memstub_generations_release, with the releases after t's last row kept
 * only when until is INT64_MAX; rels and nrels, when not NULL, get the
 * releases of t's regions' survivors sorted by time (the caller frees
 * *rels), and *never the bytes of those never freed. */
static int release_rows(const memstub_trace *t, const memstub_generations *g, int64_t until,
                        memstub_trace **out, size_t *added, rel **rels, size_t *nrels,
                        int64_t *never, memstub_error *err) {
  *out = NULL;
  *added = 0;
  int rc = memstub_trace_column(t, "region");
  if (rc < 0)
    return memstub_error_set(err, -EINVAL, "the trace has no region column: generations belong "
                             "to probe regions or --function calls");
  size_t rcol = (size_t)rc;
  // The releases of the trace's own regions' survivors, after their ends.
  rel *r = malloc((g->nsurv + 1) * sizeof *r);
  if (!r) return memstub_error_set(err, -ENOMEM, "out of memory");
  size_t nr = 0;
  // The regions the trace holds, sorted, for a binary search per survivor.
  int64_t *ids = malloc((t->n + 1) * sizeof *ids);
  if (!ids) {
    free(r);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  for (size_t k = 0; k < t->n; k++) ids[k] = memstub_trace_extra_row(t, k)[rcol];
  qsort(ids, t->n, sizeof *ids, ms__cmp_i64);
  for (size_t i = 0; i < g->nsurv; i++) {
    const memstub_survivor *s = &g->surv[i];
    const memstub_occurrence *o = memstub_generations_find(g, s->occurrence);
    if (!o || !bsearch(&s->occurrence, ids, t->n, sizeof *ids, ms__cmp_i64)) continue;
    // A free within the recording's resolution of the region's end is at its end.
    if (s->free_ns != -1)
      r[nr++] = (rel){s->free_ns > o->end_ns ? s->free_ns : o->end_ns, s->bytes};
    else if (never)
      *never += s->bytes;  // within the file's survivor bytes: the reader checked the sum
  }
  free(ids);
  qsort(r, nr, sizeof *r, by_time);
  memstub_trace *c = memstub_trace_create();
  rc = c ? 0 : -ENOMEM;
  for (size_t k = 0; rc == 0 && k < t->nextra; k++)
    rc = memstub_trace_add_column(c, t->extra_names[k]) < 0 ? -ENOMEM : 0;
  for (size_t k = 0; rc == 0 && k < t->nmeta; k++)
    rc = memstub_trace_set_meta(c, t->meta[k].key, t->meta[k].value);
  size_t j = 0;  // the next release
  for (size_t i = 0; rc == 0 && i < t->n; i++) {
    rc = memstub_trace_append(c, t->pts[i].time_ns, t->pts[i].stack_bytes, t->pts[i].heap_bytes);
    if (rc < 0) break;
    memcpy(memstub_trace_extra_row(c, c->n - 1), memstub_trace_extra_row(t, i),
           t->nextra * sizeof(int64_t));
    // Releases in the gap after row i: after its time, before the next row,
    // when the next row is another region (or there is none).
    int64_t next = i + 1 < t->n ? t->pts[i + 1].time_ns : until;
    int gap = i + 1 == t->n || memstub_trace_extra_row(t, i + 1)[rcol] !=
                                   memstub_trace_extra_row(t, i)[rcol];
    while (j < nr && r[j].t <= t->pts[i].time_ns) j++;  // inside a region: its rows have it
    int64_t freed = 0;
    while (rc == 0 && j < nr && r[j].t < next) {
      if (!gap) {
        j++;
        continue;
      }
      freed += r[j].bytes;
      int64_t h = t->pts[i].heap_bytes - freed;
      rc = memstub_trace_append(c, r[j].t, t->pts[i].stack_bytes, h < 0 ? 0 : h);
      if (rc < 0) break;
      int64_t *x = memstub_trace_extra_row(c, c->n - 1);
      memcpy(x, memstub_trace_extra_row(t, i), t->nextra * sizeof(int64_t));
      for (size_t k = 0; k < t->nextra; k++)
        if (per_interval(t->extra_names[k])) x[k] = 0;
      (*added)++;
      j++;
    }
  }
  if (rels && rc == 0) {
    *rels = r, *nrels = nr;
  } else {
    free(r);
  }
  if (rc < 0) {
    memstub_trace_free(c);
    return memstub_error_set(err, rc, "out of memory");
  }
  *out = c;
  return 0;
}

int memstub_generations_release(const memstub_trace *t, const memstub_generations *g,
                                memstub_trace **out, size_t *added, memstub_error *err) {
  return release_rows(t, g, INT64_MAX, out, added, NULL, NULL, NULL, err);
}

int memstub_generations_hold(const memstub_trace *t, const memstub_generations *g,
                             memstub_trace **out, size_t *added, memstub_held *held,
                             memstub_error *err) {
  memset(held, 0, sizeof *held);
  if (t->n == 0) return memstub_error_set(err, -EINVAL, "the trace has no rows");
  int64_t end = t->pts[t->n - 1].time_ns;
  rel *r = NULL;
  size_t nr = 0;
  int64_t never = 0;
  int rc = release_rows(t, g, end, out, added, &r, &nr, &never, err);
  if (rc < 0) return rc;
  // The survivors of t's regions still alive after its last row: by the
  // time the program freed them (merged when equal), then those never freed.
  size_t k = 0;
  for (size_t i = 0; i < nr; i++)
    if (r[i].t > end) r[k++] = (rel){r[i].t - end, r[i].bytes};
  size_t m = 0;
  held->after_ns = malloc((k + 1) * sizeof *held->after_ns);
  held->bytes = malloc((k + 1) * sizeof *held->bytes);
  if (rc == 0 && (!held->after_ns || !held->bytes))
    rc = memstub_error_set(err, -ENOMEM, "out of memory");
  int64_t total = never;
  int over = never < 0;
  for (size_t i = 0; rc == 0 && !over && i < k; i++) {
    if (r[i].bytes <= 0) continue;
    if ((over = __builtin_add_overflow(total, r[i].bytes, &total))) break;
    if (m && held->after_ns[m - 1] == r[i].t) {
      held->bytes[m - 1] += r[i].bytes;
      continue;
    }
    held->after_ns[m] = r[i].t, held->bytes[m] = r[i].bytes;
    m++;
  }
  if (rc == 0 && over)
    rc = memstub_error_set(err, -EINVAL, "the survivors' bytes add up beyond 64 bits");
  if (rc == 0 && never > 0) held->after_ns[m] = -1, held->bytes[m++] = never;
  free(r);
  if (rc < 0) {
    memstub_held_free(held);
    memstub_trace_free(*out);
    *out = NULL;
    return rc;
  }
  held->n = m;
  held->total = total;
  return 0;
}

void memstub_held_free(memstub_held *h) {
  free(h->after_ns);
  free(h->bytes);
  memset(h, 0, sizeof *h);
}
