// The in-memory trace: rows, extra columns and metadata.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_common.h"
#include "memstub/trace.h"
#include "trace_threads.h"

memstub_trace *memstub_trace_create(void) { return calloc(1, sizeof(memstub_trace)); }

void memstub_trace_free(memstub_trace *t) {
  if (!t) return;
  for (size_t i = 0; i < t->nextra; i++) free(t->extra_names[i]);
  for (size_t i = 0; i < t->nmeta; i++) {
    free(t->meta[i].key);
    free(t->meta[i].value);
  }
  free(t->extra_names);
  free(t->extra);
  free(t->meta);
  free(t->pts);
  free(t);
}

int memstub_trace_column(const memstub_trace *t, const char *name) {
  for (size_t i = 0; i < t->nextra; i++)
    if (strcmp(t->extra_names[i], name) == 0) return (int)i;
  return -1;
}

int memstub_trace_add_column(memstub_trace *t, const char *name) {
  if (t->n > 0 || !ms__is_ident(name, strlen(name)) || memstub_trace_column(t, name) >= 0 ||
      strcmp(name, "time_ns") == 0 || strcmp(name, "stack_bytes") == 0 ||
      strcmp(name, "heap_bytes") == 0)
    return -EINVAL;
  if (t->nextra >= MEMSTUB_TRACE_MAX_EXTRA_COLUMNS) return -E2BIG;
  char **names = realloc(t->extra_names, (t->nextra + 1) * sizeof *names);
  if (!names) return -ENOMEM;
  t->extra_names = names;
  if (!(names[t->nextra] = ms__strdup(name))) return -ENOMEM;
  // Rows are added after columns, so extra[] has nothing to widen yet; make
  // sure its capacity follows the row capacity.
  if (t->cap) {
    int64_t *ex = realloc(t->extra, t->cap * (t->nextra + 1) * sizeof *ex);
    if (!ex) {
      free(names[t->nextra]);
      return -ENOMEM;
    }
    t->extra = ex;
  }
  return (int)t->nextra++;
}

int memstub_trace_reserve(memstub_trace *t, size_t n) {
  if (n <= t->cap) return 0;
  memstub_point *pts = realloc(t->pts, n * sizeof *pts);
  if (!pts) return -ENOMEM;
  t->pts = pts;
  if (t->nextra) {
    int64_t *ex = realloc(t->extra, n * t->nextra * sizeof *ex);
    if (!ex) return -ENOMEM;
    t->extra = ex;
  }
  t->cap = n;
  return 0;
}

int memstub_trace_append(memstub_trace *t, int64_t time_ns, int64_t stack_bytes,
                         int64_t heap_bytes) {
  if (t->n == t->cap && memstub_trace_reserve(t, t->cap ? t->cap * 2 : 256) < 0) return -ENOMEM;
  t->pts[t->n] = (memstub_point){time_ns, stack_bytes, heap_bytes};
  if (t->nextra) memset(memstub_trace_extra_row(t, t->n), 0, t->nextra * sizeof(int64_t));
  t->n++;
  return 0;
}

static int is_meta_key(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.' || *s == '-'))
      return 0;
  return 1;
}

static int is_meta_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int memstub_trace_set_meta(memstub_trace *t, const char *key, const char *value) {
  if (!is_meta_key(key)) return -EINVAL;
  // Stored as a "# key: value" line carries it: one line, and no blanks at
  // either end (the reader drops them), so a written trace reads back equal.
  while (is_meta_blank(*value)) value++;
  char *v = ms__strdup(value);
  if (!v) return -ENOMEM;
  size_t n = strlen(v);
  while (n > 0 && is_meta_blank(v[n - 1])) v[--n] = '\0';
  for (char *p = v; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  for (size_t i = 0; i < t->nmeta; i++)
    if (strcmp(t->meta[i].key, key) == 0) {
      free(t->meta[i].value);
      t->meta[i].value = v;
      return 0;
    }
  memstub_meta *m = realloc(t->meta, (t->nmeta + 1) * sizeof *m);
  char *k = ms__strdup(key);
  if (!m || !k) {
    if (m) t->meta = m;
    free(k);
    free(v);
    return -ENOMEM;
  }
  t->meta = m;
  m[t->nmeta++] = (memstub_meta){k, v};
  return 0;
}

const char *memstub_trace_get_meta(const memstub_trace *t, const char *key) {
  for (size_t i = 0; i < t->nmeta; i++)
    if (strcmp(t->meta[i].key, key) == 0) return t->meta[i].value;
  return NULL;
}

int memstub_trace_validate(const memstub_trace *t, memstub_error *err) {
  if (t->n == 0) return memstub_error_set(err, -EINVAL, "empty trace: no data rows");
  if (t->nextra > MEMSTUB_TRACE_MAX_EXTRA_COLUMNS)
    return memstub_error_set(err, -E2BIG, "%zu extra columns: at most %d", t->nextra,
                             MEMSTUB_TRACE_MAX_EXTRA_COLUMNS);
  for (size_t i = 0; i < t->n; i++) {
    const memstub_point *p = &t->pts[i];
    if (p->time_ns < 0)
      return memstub_error_set(err, -EINVAL, "row %zu: time_ns is negative (%lld)", i + 1,
                               (long long)p->time_ns);
    if (p->stack_bytes < 0)
      return memstub_error_set(err, -EINVAL, "row %zu: stack_bytes is negative (%lld)", i + 1,
                               (long long)p->stack_bytes);
    if (p->heap_bytes < 0)
      return memstub_error_set(err, -EINVAL, "row %zu: heap_bytes is negative (%lld)", i + 1,
                               (long long)p->heap_bytes);
    if (i > 0 && p->time_ns < t->pts[i - 1].time_ns)
      return memstub_error_set(err, -EINVAL, "row %zu: time_ns decreases (%lld after %lld)",
                               i + 1, (long long)p->time_ns, (long long)t->pts[i - 1].time_ns);
  }
  return ms__trace_check_threads(t, NULL, err);
}

/* ---- threads (docs/formats.md, "Threads") -------------------------------- */

void memstub_trace_threadcols_find(const memstub_trace *t, memstub_trace_threadcols *c) {
  c->thread = memstub_trace_column(t, "thread");
  c->event = memstub_trace_column(t, "thread_event");
  c->peer = memstub_trace_column(t, "thread_peer");
  c->xfree_from = memstub_trace_column(t, "xfree_from");
  c->xfree_bytes = memstub_trace_column(t, "xfree_bytes");
  c->xfree_alloc_ns = memstub_trace_column(t, "xfree_alloc_ns");
}

int64_t memstub_trace_row_thread(const memstub_trace *t, size_t row) {
  int c = memstub_trace_column(t, "thread");
  if (c < 0) return 0;
  int64_t v = memstub_trace_extra_row(t, row)[c];
  return v < 0 ? 0 : v;
}

int64_t memstub_trace_thread_count(const memstub_trace *t) {
  int c = memstub_trace_column(t, "thread");
  if (c < 0) return 1;
  int64_t max = -1;
  for (size_t i = 0; i < t->n; i++) {
    int64_t v = memstub_trace_extra_row(t, i)[c];
    if (v > max) max = v;
  }
  return max + 1 > 0 ? max + 1 : 1;
}

int memstub_trace_thread_rows(const memstub_trace *t, int64_t th, size_t **rows, size_t *n) {
  *rows = NULL;
  *n = 0;
  int c = memstub_trace_column(t, "thread");
  size_t k = 0;
  for (size_t i = 0; i < t->n; i++)
    if ((c < 0 ? 0 : memstub_trace_extra_row(t, i)[c]) == th) k++;
  if (!k) return 0;
  size_t *r = malloc(k * sizeof *r);
  if (!r) return -ENOMEM;
  k = 0;
  for (size_t i = 0; i < t->n; i++)
    if ((c < 0 ? 0 : memstub_trace_extra_row(t, i)[c]) == th) r[k++] = i;
  *rows = r;
  *n = k;
  return 0;
}

static int is_thread_column(const char *name) {
  static const char *const cols[] = {"thread",     "thread_event", "thread_peer",
                                     "xfree_from", "xfree_bytes",  "xfree_alloc_ns"};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
    if (strcmp(name, cols[i]) == 0) return 1;
  return 0;
}

int memstub_trace_thread_split(const memstub_trace *t, int64_t th, memstub_trace **out) {
  *out = NULL;
  size_t *rows, n;
  if (memstub_trace_thread_rows(t, th, &rows, &n) < 0) return -ENOMEM;
  memstub_trace *s = memstub_trace_create();
  int map[MEMSTUB_TRACE_MAX_EXTRA_COLUMNS];
  size_t nmap = 0;
  int rc = s ? 0 : -ENOMEM;
  for (size_t c = 0; c < t->nextra && rc >= 0; c++)
    if (!is_thread_column(t->extra_names[c])) {
      rc = memstub_trace_add_column(s, t->extra_names[c]);
      map[nmap++] = (int)c;
    }
  for (size_t i = 0; i < t->nmeta && rc >= 0; i++)
    rc = memstub_trace_set_meta(s, t->meta[i].key, t->meta[i].value);
  if (rc >= 0) rc = memstub_trace_reserve(s, n);
  for (size_t k = 0; k < n && rc >= 0; k++) {
    const memstub_point *p = &t->pts[rows[k]];
    if ((rc = memstub_trace_append(s, p->time_ns, p->stack_bytes, p->heap_bytes)) < 0) break;
    const int64_t *a = memstub_trace_extra_row(t, rows[k]);
    int64_t *b = memstub_trace_extra_row(s, s->n - 1);
    for (size_t m = 0; m < nmap; m++) b[m] = a[map[m]];
  }
  free(rows);
  if (rc < 0) {
    memstub_trace_free(s);
    return -ENOMEM;
  }
  *out = s;
  return 0;
}

const char *memstub_thread_event_name(int64_t ev) {
  switch (ev) {
    case MEMSTUB_THREAD_EVENT_NONE: return "";
    case MEMSTUB_THREAD_EVENT_START: return "start";
    case MEMSTUB_THREAD_EVENT_EXIT: return "exit";
    case MEMSTUB_THREAD_EVENT_JOIN: return "join";
    default: return NULL;
  }
}

// Per thread while checking: its rows' times (for xfree_alloc_ns), whether it exited, was joined.
typedef struct thr_state {
  int64_t *times;
  size_t n, cap;
  int exited, joined;
  size_t first;  // its first row
  int64_t heap;  // heap_bytes of its latest row
} thr_state;

typedef struct thr_check {
  const memstub_trace *t;
  const ms__trace_where *w;
  memstub_error *err;
  thr_state *th;
  size_t nth;
} thr_check;

// Report a problem in field col (an extra column's index) of row r.
__attribute__((format(printf, 4, 5))) static int thr_fail(thr_check *k, size_t r, int col,
                                                          const char *fmt, ...) {
  const char *cname = col >= 0 ? k->t->extra_names[col] : "thread";
  char where[MEMSTUB_ERRMSG_MAX];
  if (!k->w) {
    snprintf(where, sizeof where, "row %zu: %s", r + 1, cname);
  } else {
    // The column: 1-based byte position of field 3 + col on the row's line.
    const char *p = k->w->buf + k->w->off[r];
    size_t want = 3 + (size_t)(col >= 0 ? col : 0);
    for (size_t f = 0; f < want && *p && *p != '\n'; p++)
      if (*p == ',') f++;
    while (*p == ' ' || *p == '\t') p++;
    snprintf(where, sizeof where, "%s:%zu:%zu: %s", k->w->name, k->w->line[r],
             (size_t)(p - (k->w->buf + k->w->off[r])) + 1, cname);
  }
  va_list ap;
  va_start(ap, fmt);
  int rc = ms__error_vat(k->err, -EINVAL, where, fmt, ap);
  va_end(ap);
  return rc;
}

static int thr_grow(thr_check *k, int64_t th) {
  if ((size_t)th < k->nth) return 0;
  size_t n = (size_t)th + 1;
  thr_state *s = realloc(k->th, n * sizeof *s);
  if (!s) return -ENOMEM;
  memset(s + k->nth, 0, (n - k->nth) * sizeof *s);
  k->th = s;
  k->nth = n;
  return 0;
}

static int thr_has_time(const thr_state *s, int64_t tm) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->times[mid] < tm) lo = mid + 1;
    else hi = mid;
  }
  return lo < s->n && s->times[lo] == tm;
}

static int check_row(thr_check *k, const memstub_trace_threadcols *c, size_t r) {
  const int64_t *ex = memstub_trace_extra_row(k->t, r);
  int64_t th = ex[c->thread];
  if (th == MEMSTUB_TRACE_EMPTY) return thr_fail(k, r, c->thread, "empty field");
  if (th < 0 || th >= MS__TRACE_MAX_THREADS)
    return thr_fail(k, r, c->thread, "%lld is not a thread number (0 to %d)", (long long)th,
                    MS__TRACE_MAX_THREADS - 1);
  if (thr_grow(k, th) < 0) return memstub_error_set(k->err, -ENOMEM, "out of memory");
  thr_state *s = &k->th[th];
  int64_t ev = c->event >= 0 ? ex[c->event] : MEMSTUB_THREAD_EVENT_NONE;
  int64_t peer = c->peer >= 0 ? ex[c->peer] : MEMSTUB_TRACE_EMPTY;
  if (ev == MEMSTUB_TRACE_EMPTY) ev = MEMSTUB_THREAD_EVENT_NONE;
  if (!memstub_thread_event_name(ev))
    return thr_fail(k, r, c->event, "unknown event %lld (start, exit, join or empty)",
                    (long long)ev);
  // After its exit a thread's rows can only lower its heap: another thread
  // freed blocks it allocated (the recorder's "owner's lowered row"). Or keep
  // it: at a coarse resolution the exit row may already leave out a block
  // whose free sits at the freeing thread's bucket end, after the exit.
  int64_t xf = c->xfree_from >= 0 ? ex[c->xfree_from] : MEMSTUB_TRACE_EMPTY;
  if (s->exited && (ev != MEMSTUB_THREAD_EVENT_NONE || xf != MEMSTUB_TRACE_EMPTY ||
                    k->t->pts[r].heap_bytes > s->heap))
    return thr_fail(k, r, c->thread,
                    "a row of thread %lld after its exit row (only rows that lower or keep "
                    "its heap_bytes, when another thread frees its blocks, may follow it)",
                    (long long)th);
  if (c->event >= 0 && s->n == 0 && ev != MEMSTUB_THREAD_EVENT_START)
    return thr_fail(k, r, c->event, "thread %lld's first row must be its 'start' row, found '%s'",
                    (long long)th, memstub_thread_event_name(ev));
  if (s->n > 0 && ev == MEMSTUB_THREAD_EVENT_START)
    return thr_fail(k, r, c->event, "'start' must be the thread's first row (thread %lld has %zu "
                    "rows before)", (long long)th, s->n);
  if (ev == MEMSTUB_THREAD_EVENT_START) {
    if (peer == MEMSTUB_TRACE_EMPTY)
      return thr_fail(k, r, c->peer, "empty: a 'start' row names its creator (-1 for none)");
    if (peer != -1 && (peer < 0 || peer == th || (size_t)peer >= k->nth || k->th[peer].n == 0))
      return thr_fail(k, r, c->peer, "creator %lld of thread %lld has no row before (-1 for none)",
                      (long long)peer, (long long)th);
  } else if (ev == MEMSTUB_THREAD_EVENT_JOIN) {
    if (peer == MEMSTUB_TRACE_EMPTY)
      return thr_fail(k, r, c->peer, "empty: a 'join' row names the joined thread");
    if (peer < 0 || peer == th || (size_t)peer >= k->nth || k->th[peer].n == 0)
      return thr_fail(k, r, c->peer, "joined thread %lld has no row before", (long long)peer);
    if (k->th[peer].joined)
      return thr_fail(k, r, c->peer, "thread %lld is joined twice", (long long)peer);
    k->th[peer].joined = 1;
  } else if (peer != MEMSTUB_TRACE_EMPTY) {
    return thr_fail(k, r, c->peer, "%lld on a row that is neither 'start' nor 'join' (must be "
                    "empty)", (long long)peer);
  }
  if (c->xfree_from >= 0) {
    int64_t from = ex[c->xfree_from], bytes = ex[c->xfree_bytes], at = ex[c->xfree_alloc_ns];
    int64_t now = k->t->pts[r].time_ns;
    if (from == MEMSTUB_TRACE_EMPTY) {
      if (bytes != MEMSTUB_TRACE_EMPTY)
        return thr_fail(k, r, c->xfree_bytes, "set without xfree_from");
      if (at != MEMSTUB_TRACE_EMPTY)
        return thr_fail(k, r, c->xfree_alloc_ns, "set without xfree_from");
    } else {
      if (from < 0 || from == th || (size_t)from >= k->nth || k->th[from].n == 0)
        return thr_fail(k, r, c->xfree_from, "thread %lld %s", (long long)from,
                        from == th ? "is the row's own thread (a cross-thread free names another)"
                                   : "has no row before");
      if (bytes == MEMSTUB_TRACE_EMPTY || bytes <= 0)
        return thr_fail(k, r, c->xfree_bytes, "%s: a cross-thread free frees > 0 bytes",
                        bytes == MEMSTUB_TRACE_EMPTY ? "empty" : "not positive");
      if (at == MEMSTUB_TRACE_EMPTY || at < 0 || at > now || !thr_has_time(&k->th[from], at))
        return thr_fail(k, r, c->xfree_alloc_ns,
                        "%lld is not the time of a row of thread %lld at or before this row",
                        (long long)at, (long long)from);
    }
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    int64_t *tm = realloc(s->times, cap * sizeof *tm);
    if (!tm) return memstub_error_set(k->err, -ENOMEM, "out of memory");
    s->times = tm;
    s->cap = cap;
  }
  if (s->n == 0) s->first = r;
  s->times[s->n++] = k->t->pts[r].time_ns;
  s->heap = k->t->pts[r].heap_bytes;
  if (ev == MEMSTUB_THREAD_EVENT_EXIT) s->exited = 1;
  return 0;
}

int ms__trace_check_threads(const memstub_trace *t, const ms__trace_where *w,
                            memstub_error *err) {
  memstub_trace_threadcols c;
  memstub_trace_threadcols_find(t, &c);
  thr_check k = {.t = t, .w = w, .err = err};
  if (c.thread < 0) {
    int any = c.event >= 0 ? c.event : c.peer >= 0 ? c.peer : c.xfree_from >= 0 ? c.xfree_from
              : c.xfree_bytes >= 0 ? c.xfree_bytes : c.xfree_alloc_ns;
    if (any >= 0 && t->n > 0) return thr_fail(&k, 0, any, "a thread column without 'thread'");
    return 0;
  }
  int nx = (c.xfree_from >= 0) + (c.xfree_bytes >= 0) + (c.xfree_alloc_ns >= 0);
  if (nx != 0 && nx != 3 && t->n > 0)
    return thr_fail(&k, 0, c.xfree_from >= 0 ? c.xfree_from : c.xfree_bytes >= 0 ? c.xfree_bytes
                                                                                : c.xfree_alloc_ns,
                    "xfree_from, xfree_bytes and xfree_alloc_ns come together");
  if ((c.event >= 0) != (c.peer >= 0) && t->n > 0)
    return thr_fail(&k, 0, c.event >= 0 ? c.event : c.peer,
                    "thread_event and thread_peer come together");
  int rc = 0;
  for (size_t r = 0; r < t->n && rc == 0; r++) rc = check_row(&k, &c, r);
  for (size_t i = 0; rc == 0 && i < k.nth; i++)
    if (k.th[i].n == 0) {
      rc = thr_fail(&k, k.th[k.nth - 1].first, c.thread,
                    "thread %zu appears but thread %zu has no row (threads are numbered 0 to "
                    "N-1)", k.nth - 1, i);
    }
  for (size_t i = 0; i < k.nth; i++) free(k.th[i].times);
  free(k.th);
  return rc;
}
