// The point data of a header, formatted in C (memstub_gen_emit_ex): the rows
// of a listing, or the compact form's packed literal, into files of a private
// temporary directory that generator/memuse.h.m4 copies in unexpanded
// (m4_undivert), so no point passes through macro expansion.
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "memstub/work.h"

int ms__gen_is_safe(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr(" ._/+=:,@%-()~", c));
}

// A buffered writer on a file descriptor: no stdio, no printf per field.
#define WBUF_CAP (1 << 20)
typedef struct wbuf {
  int fd;
  int err;  // first errno, 0 if none
  size_t n;
  int64_t total;
  char *buf;  // [WBUF_CAP]
} wbuf;

static void wb_flush(wbuf *w) {
  size_t off = 0;
  while (off < w->n && !w->err) {
    ssize_t k = write(w->fd, w->buf + off, w->n - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) w->err = k < 0 ? errno : EIO;
    else off += (size_t)k;
  }
  w->total += (int64_t)w->n;
  w->n = 0;
}

// Room for need more bytes at w->buf + w->n (need well below WBUF_CAP).
static char *wb_room(wbuf *w, size_t need) {
  if (w->n + need > WBUF_CAP) wb_flush(w);
  return w->buf + w->n;
}

static char *put_str(char *p, const char *s, size_t n) {
  memcpy(p, s, n);
  return p + n;
}

// Decimal, as printf's %lld writes it.
static char *put_i64(char *p, int64_t v) {
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  char tmp[20];
  int n = 0;
  if (v < 0) *p++ = '-';
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  while (n) *p++ = tmp[--n];
  return p;
}

/* The compact encoding (docs/formats.md, "Compact data"; decoded by
 * runtime/decode.c): per point the zigzag of time, stackAlloc, heapAlloc and
 * the row step point[i] - point[i - 1], each in 5-bit groups, low first, one
 * character a group: the last group from digit_end, the others from
 * digit_more. Neither holds '"', '\\' or '?', so the data sits in a C
 * string literal as it is. */
static const char digit_end[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef";
static const char digit_more[] = "ghijklmnopqrstuvwxyz0123456789-_";
#define COMPACT_TAG "ms1."
#define COMPACT_TAG_RESIDENT "ms2."  // same length
#define COMPACT_TAG_WORK "ms3."
#define COMPACT_TAG_WORK_RESIDENT "ms4."
#define COMPACT_LINE 4000  // characters of data per literal line

static char *put_packed(char *p, int64_t v) {
  uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  while (z >= 32) {
    *p++ = digit_more[z & 31];
    z >>= 5;
  }
  *p++ = digit_end[z];
  return p;
}

// The current progress step: every 2^16 points, and the end.
static void progress(const memstub_gen_emit_options *o, int64_t done, int64_t total) {
  if (o->progress && ((done & 0xffff) == 0 || done == total))
    o->progress(o->progress_ctx, done, total);
}

static void write_listing(const memstub_gen *g, const memstub_gen_emit_options *o, wbuf *use,
                          wbuf *map) {
  const int64_t n = g->stub.numdata;
  for (int64_t i = 0; i < n; i++) {
    progress(o, i, n);
    // "  [i].time = T, [i].stackAlloc = S, [i].heapAlloc = H,\n": at most 130 bytes
    char *p = wb_room(use, 160);
    p = put_str(p, "  [", 3);
    p = put_i64(p, i);
    p = put_str(p, "].time = ", 9);
    p = put_i64(p, g->use[i].time);
    p = put_str(p, ", [", 3);
    p = put_i64(p, i);
    p = put_str(p, "].stackAlloc = ", 15);
    p = put_i64(p, g->use[i].stackAlloc);
    p = put_str(p, ", [", 3);
    p = put_i64(p, i);
    p = put_str(p, "].heapAlloc = ", 14);
    p = put_i64(p, g->use[i].heapAlloc);
    p = put_str(p, ",\n", 2);
    use->n = (size_t)(p - use->buf);
  }
  for (int64_t i = 0; i < n; i += 16) {
    char *p = wb_room(map, 16 * 22 + 8);
    p = put_str(p, "  ", 2);
    for (int64_t k = i; k < n && k < i + 16; k++) {
      if (k > i) p = put_str(p, ", ", 2);
      p = put_i64(p, g->point[k]);
    }
    p = put_str(p, ",\n", 2);
    map->n = (size_t)(p - map->buf);
  }
  progress(o, n, n);
}

// memMapped and memRss rows, 16 values a line (a stub with resident data).
static void write_resident(const memstub_gen *g, wbuf *mapped, wbuf *rss) {
  const int64_t n = g->stub.numdata;
  for (int k = 0; k < 2; k++) {
    wbuf *w = k == 0 ? mapped : rss;
    const int64_t *v = k == 0 ? g->mapped : g->rss;
    for (int64_t i = 0; i < n; i += 16) {
      char *p = wb_room(w, 16 * 22 + 8);
      p = put_str(p, "  ", 2);
      for (int64_t j = i; j < n && j < i + 16; j++) {
        if (j > i) p = put_str(p, ", ", 2);
        p = put_i64(p, v[j]);
      }
      p = put_str(p, ",\n", 2);
      w->n = (size_t)(p - w->buf);
    }
  }
}

// Rows of v[0..n), per values a line (the work arrays of a listing).
static void write_rows(wbuf *w, const int64_t *v, int64_t n, int per) {
  for (int64_t i = 0; i < n; i += per) {
    char *p = wb_room(w, (size_t)per * 22 + 8);
    p = put_str(p, "  ", 2);
    for (int64_t j = i; j < n && j < i + per; j++) {
      if (j > i) p = put_str(p, ", ", 2);
      p = put_i64(p, v[j]);
    }
    p = put_str(p, ",\n", 2);
    w->n = (size_t)(p - w->buf);
  }
}

static void write_compact(const memstub_gen *g, const memstub_gen_emit_options *o, wbuf *w) {
  const int64_t n = g->stub.numdata;
  char *p = wb_room(w, 8);
  // Resident data: tag "ms2.", and per point two more numbers (mapped, rss);
  // work: "ms3." (or "ms4." with resident data), three more (cpu, calls,
  // churn), and the call table after the points.
  const char *tag = g->cpu ? (g->mapped ? "  \"" COMPACT_TAG_WORK_RESIDENT : "  \"" COMPACT_TAG_WORK)
                    : g->mapped ? "  \"" COMPACT_TAG_RESIDENT
                                : "  \"" COMPACT_TAG;
  p = put_str(p, tag, 3 + sizeof COMPACT_TAG - 1);
  w->n = (size_t)(p - w->buf);
  size_t line = sizeof COMPACT_TAG - 1;
  int64_t prev = 0;
  for (int64_t i = 0; i < n; i++) {
    progress(o, i, n);
    p = wb_room(w, 6 * 13 + 8);
    if (line >= COMPACT_LINE) {  // a new literal on a new line; C joins them
      p = put_str(p, "\"\n  \"", 5);
      line = 0;
    }
    char *q = p;
    p = put_packed(p, g->use[i].time);
    p = put_packed(p, g->use[i].stackAlloc);
    p = put_packed(p, g->use[i].heapAlloc);
    p = put_packed(p, (int64_t)((uint64_t)g->point[i] - (uint64_t)prev));  // wraps, never UB
    prev = g->point[i];
    if (g->mapped) {
      p = put_packed(p, g->mapped[i]);
      p = put_packed(p, g->rss[i]);
    }
    if (g->cpu) {
      p = put_packed(p, g->cpu[i]);
      p = put_packed(p, g->calls[i]);
      p = put_packed(p, g->churn[i]);
    }
    line += (size_t)(p - q);
    w->n = (size_t)(p - w->buf);
  }
  for (int64_t k = 0; g->cpu && k < g->ncalltab * MEMSTUB_WORK_CALLS; k++) {
    p = wb_room(w, 13 + 8);
    if (line >= COMPACT_LINE) {
      p = put_str(p, "\"\n  \"", 5);
      line = 0;
    }
    char *q = p;
    p = put_packed(p, g->calltab[k]);
    line += (size_t)(p - q);
    w->n = (size_t)(p - w->buf);
  }
  p = wb_room(w, 4);
  p = put_str(p, "\"", 1);
  w->n = (size_t)(p - w->buf);
  progress(o, n, n);
}

/* A directory of its own under $TMPDIR, else /tmp (when $TMPDIR is unset,
 * holds characters that cannot stand in m4 quotes unchanged, or refuses). */
static int make_dir(ms__gen_data *d, memstub_error *err) {
  const char *t = getenv("TMPDIR");
  int ok = t && *t == '/' && strlen(t) < 2048;
  for (const unsigned char *c = (const unsigned char *)t; ok && *c; c++) ok = ms__gen_is_safe(*c);
  for (int k = ok ? 0 : 1; k < 2; k++) {
    snprintf(d->dir, sizeof d->dir, "%s/memstub-gen-XXXXXX", k == 0 ? t : "/tmp");
    if (mkdtemp(d->dir)) return 0;
  }
  int e = errno;
  memstub_error_set(err, -e, "%s: cannot make a temporary directory: %s", d->dir, strerror(e));
  d->dir[0] = '\0';
  return -e;
}

static int open_data(ms__gen_data *d, int k, const char *name, wbuf *w, memstub_error *err) {
  snprintf(d->file[k], sizeof d->file[k], "%s/%s", d->dir, name);
  w->fd = open(d->file[k], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (w->fd >= 0) return 0;
  int e = errno;
  d->file[k][0] = '\0';
  return memstub_error_set(err, -e, "%s/%s: cannot create: %s", d->dir, name, strerror(e));
}

static int close_data(ms__gen_data *d, int k, wbuf *w, memstub_error *err) {
  if (w->fd < 0) return 0;
  wb_flush(w);
  d->bytes += w->total;
  if (close(w->fd) != 0 && !w->err) w->err = errno;
  w->fd = -1;
  if (w->err)
    return memstub_error_set(err, -w->err, "%s: write failed: %s", d->file[k], strerror(w->err));
  return 0;
}

int ms__gen_data_write(const memstub_gen *g, const memstub_gen_emit_options *o, ms__gen_data *d,
                       memstub_error *err) {
  int rc = make_dir(d, err);
  if (rc < 0) return rc;
  wbuf w[8] = {{.fd = -1}, {.fd = -1}, {.fd = -1}, {.fd = -1},
               {.fd = -1}, {.fd = -1}, {.fd = -1}, {.fd = -1}};
  int nf = d->format == MEMSTUB_GEN_FORMAT_COMPACT ? 1 : g->mapped ? 4 : 2;
  int work = d->format != MEMSTUB_GEN_FORMAT_COMPACT && g->cpu;  // files 4..7
  for (int k = 0; k < 8 && rc == 0; k++)
    if ((k < nf || (work && k >= 4)) && !(w[k].buf = malloc(WBUF_CAP)))
      rc = memstub_error_set(err, -ENOMEM, "out of memory");
  if (rc == 0) rc = open_data(d, 0, nf == 1 ? "data" : "use", &w[0], err);
  if (rc == 0 && nf >= 2) rc = open_data(d, 1, "map", &w[1], err);
  if (rc == 0 && nf == 4) rc = open_data(d, 2, "mapped", &w[2], err);
  if (rc == 0 && nf == 4) rc = open_data(d, 3, "rss", &w[3], err);
  static const char *const wnames[4] = {"cpu", "calls", "churn", "calltab"};
  for (int k = 4; work && k < 8 && rc == 0; k++) rc = open_data(d, k, wnames[k - 4], &w[k], err);
  if (rc == 0) {
    if (nf == 1)
      write_compact(g, o, &w[0]);
    else
      write_listing(g, o, &w[0], &w[1]);
    if (nf == 4) write_resident(g, &w[2], &w[3]);
    if (work) {
      write_rows(&w[4], g->cpu, g->stub.numdata, 16);
      write_rows(&w[5], g->calls, g->stub.numdata, 16);
      write_rows(&w[6], g->churn, g->stub.numdata, 16);
      write_rows(&w[7], g->calltab, g->ncalltab * MEMSTUB_WORK_CALLS, MEMSTUB_WORK_CALLS);
    }
  }
  for (int k = 0; k < 8; k++) {
    if (!w[k].buf) continue;
    int r = close_data(d, k, &w[k], err);
    if (rc == 0) rc = r;
    free(w[k].buf);
  }
  return rc;
}

void ms__gen_data_remove(ms__gen_data *d) {
  for (size_t k = 0; k < MS__ARRAY_SIZE(d->file); k++)
    if (d->file[k][0]) unlink(d->file[k]);
  if (d->dir[0]) rmdir(d->dir);
}
