/* traces/generations.c: the TRACE.generations file (memstub/generations.h,
 * docs/formats.md#generations): its reader, and the release of survivors in
 * a trace. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/generations.h"
#include "ms_common.h"

void memstub_generations_free(memstub_generations *g) {
  if (!g) return;
  for (size_t i = 0; i < g->nocc; i++) free(g->occ[i].name);
  free(g->occ);
  free(g->surv);
  free(g);
}

const memstub_occurrence *memstub_generations_find(const memstub_generations *g, int64_t id) {
  size_t lo = 0, hi = g->nocc;  // ids increase (the reader checks)
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->occ[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->nocc && g->occ[lo].id == id ? &g->occ[lo] : NULL;
}

// Split line into at most max blank-separated fields (the last keeps the
// rest of the line); the count.
static int fields(char *line, char **f, int max) {
  int n = 0;
  char *p = line;
  while (*p && n < max) {
    while (*p == ' ') p++;
    if (!*p) break;
    f[n++] = p;
    if (n == max) break;
    while (*p && *p != ' ') p++;
    if (*p) *p++ = '\0';
  }
  return n;
}

// s as it may appear in a message: at most 32 bytes, control bytes as '?'.
static const char *shown(const char *s, char *buf) {
  size_t i = 0;
  for (; s[i] && i < 32; i++) buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
  buf[i] = '\0';
  return buf;
}

static int nums(const char *path, long ln, char **f, int from, int n, int64_t *v,
                memstub_error *err) {
  char b[40];
  for (int k = 0; k < n; k++)
    if (ms__parse_i64(f[from + k], strlen(f[from + k]), &v[k]) < 0)
      return memstub_error_set(err, -EINVAL, "%s:%ld: field %d: expected an integer, found '%s'",
                               path, ln, from + k + 1, shown(f[from + k], b));
  return 0;
}

// Room for one more element in *v (cap *cap, n used); 0 or -ENOMEM.
static int grow(void **v, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return 0;
  size_t nc = *cap ? 2 * *cap : 64;
  void *nv = realloc(*v, nc * elem);
  if (!nv) return -ENOMEM;
  *v = nv, *cap = nc;
  return 0;
}

static int read_line(const char *path, long ln, char *buf, memstub_generations *g, size_t *cocc,
                     size_t *csurv, int *have_exit, memstub_error *err) {
  char *f[9];
  int n = fields(buf, f, 9);
  if (n == 0) return 0;  // blanks only
  int64_t v[8];
  int rc;
  if (strcmp(f[0], "exit_ns") == 0 && n == 2) {
    *have_exit = 1;
    return nums(path, ln, f, 1, 1, &g->exit_ns, err);
  }
  if (strcmp(f[0], "dropped") == 0 && n == 4) {
    if ((rc = nums(path, ln, f, 1, 3, v, err)) < 0) return rc;
    g->dropped_blocks = v[0], g->dropped_occurrences = v[1], g->dropped_survivors = v[2];
    return 0;
  }
  if (strcmp(f[0], "occurrence") == 0 && n == 9) {
    if ((rc = nums(path, ln, f, 1, 7, v, err)) < 0) return rc;
    if (v[0] <= 0 || (g->nocc && v[0] <= g->occ[g->nocc - 1].id))
      return memstub_error_set(err, -EINVAL, "%s:%ld: field 2: occurrence %" PRId64
                               " is not above the one before (they increase from 1)",
                               path, ln, v[0]);
    if (v[2] < v[1])
      return memstub_error_set(err, -EINVAL, "%s:%ld: field 4: it ends before it begins", path, ln);
    for (int k = 3; k < 7; k++)
      if (v[k] < 0)
        return memstub_error_set(err, -EINVAL, "%s:%ld: field %d: negative", path, ln, k + 2);
    if (grow((void **)&g->occ, cocc, g->nocc, sizeof *g->occ) < 0)
      return memstub_error_set(err, -ENOMEM, "%s: out of memory", path);
    memstub_occurrence *o = &g->occ[g->nocc];
    *o = (memstub_occurrence){v[0], v[1], v[2], v[3], v[4], v[5], v[6], ms__strdup(f[8])};
    if (!o->name) return memstub_error_set(err, -ENOMEM, "%s: out of memory", path);
    g->nocc++;
    return 0;
  }
  // A survivor's sixth field, its site, came later: five fields are read as site -1.
  if (strcmp(f[0], "survivor") == 0 && (n == 5 || n == 6)) {
    if ((rc = nums(path, ln, f, 1, n - 1, v, err)) < 0) return rc;
    if (n == 5) v[4] = -1;
    if (!memstub_generations_find(g, v[0]))
      return memstub_error_set(err, -EINVAL, "%s:%ld: field 2: occurrence %" PRId64
                               " has no occurrence line before it", path, ln, v[0]);
    if (v[1] < 0) return memstub_error_set(err, -EINVAL, "%s:%ld: field 3: negative size", path, ln);
    if (v[3] < -1) return memstub_error_set(err, -EINVAL, "%s:%ld: field 5: below -1", path, ln);
    if (v[4] < -1 || v[4] > INT32_MAX)
      return memstub_error_set(err, -EINVAL, "%s:%ld: field 6: a site is -1 or a site line's "
                               "index", path, ln);
    if (grow((void **)&g->surv, csurv, g->nsurv, sizeof *g->surv) < 0)
      return memstub_error_set(err, -ENOMEM, "%s: out of memory", path);
    g->surv[g->nsurv++] = (memstub_survivor){v[0], v[1], v[2], v[3], v[4]};
    return 0;
  }
  char b[40];
  return memstub_error_set(err, -EINVAL, "%s:%ld: field 1: unknown or incomplete line starting '%s'",
                           path, ln, shown(f[0], b));
}

int memstub_generations_read(const char *path, memstub_generations **out, memstub_error *err) {
  *out = NULL;
  FILE *f = fopen(path, "re");
  if (!f) return memstub_error_set(err, -errno, "%s: %s", path, strerror(errno));
  memstub_generations *g = calloc(1, sizeof *g);
  if (!g) {
    fclose(f);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  char buf[4096];
  long ln = 0;
  int rc = 0, have_exit = 0;
  size_t cocc = 0, csurv = 0;
  while (rc == 0 && fgets(buf, sizeof buf, f)) {
    ln++;
    buf[strcspn(buf, "\r\n")] = '\0';
    if (ln == 1) {
      if (strcmp(buf, "# memstub-generations 1") != 0)
        rc = memstub_error_set(err, -EINVAL, "%s:1: not a memstub generations file (expected "
                               "'# memstub-generations 1')", path);
      continue;
    }
    if (!buf[0] || buf[0] == '#') continue;
    rc = read_line(path, ln, buf, g, &cocc, &csurv, &have_exit, err);
  }
  if (rc == 0 && ferror(f)) rc = memstub_error_set(err, -EIO, "%s: read error", path);
  if (rc == 0 && !have_exit)
    rc = memstub_error_set(err, -EINVAL, "%s:%ld: no exit_ns line", path, ln);
  fclose(f);
  if (rc < 0) {
    memstub_generations_free(g);
    return rc;
  }
  *out = g;
  return 0;
}

typedef struct rel {
  int64_t t, bytes;
} rel;

static int by_time(const void *a, const void *b) {
  const rel *x = a, *y = b;
  return x->t < y->t ? -1 : x->t > y->t;
}

static int by_id(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
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
  qsort(ids, t->n, sizeof *ids, by_id);
  for (size_t i = 0; i < g->nsurv; i++) {
    const memstub_survivor *s = &g->surv[i];
    const memstub_occurrence *o = memstub_generations_find(g, s->occurrence);
    if (!o || !bsearch(&s->occurrence, ids, t->n, sizeof *ids, by_id)) continue;
    if (s->free_ns >= 0 && s->free_ns >= o->end_ns)
      r[nr++] = (rel){s->free_ns, s->bytes};
    else if (s->free_ns < 0 && never && *never >= 0 &&
             __builtin_add_overflow(*never, s->bytes, never))
      *never = -1;  // beyond 64 bits: the caller refuses it
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
