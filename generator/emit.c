// memstub_gen_emit: stub data -> m4 input -> GNU m4 -> header file.
//
// m4 shapes the header (generator/memuse.h.m4: the comment, the types, the
// names, the descriptor); the points, the bulk of a large header, are
// formatted here into temporary files that the template copies in unexpanded
// (m4_undivert), so no point passes through macro expansion.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "ms_spawn.h"
#include "memstub/work.h"
#include "memstub/memstub.h"
#include "memstub/runtime.h"
#include "prim.h"

extern const char ms__memuse_template[];  // generator/memuse.h.m4, embedded
extern const unsigned long ms__memuse_template_len;

// Characters that stand for themselves in C strings, comments and m4 input.
static int is_safe(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr(" ._/+=:,@%-()~", c));
}

/* ---- the point data, formatted in C --------------------------------------- */

/* The files the template copies in unexpanded: use and map rows for a
 * listing, the packed string literal for the compact form. */
typedef struct data_files {
  int format;          // LISTING or COMPACT
  char dir[4096];      // private temporary directory, "" until made
  char file[8][4200];  // [0] use or data, [1] map, [2] mapped, [3] rss, [4..7] work; "" until made
  int64_t bytes;       // written in all
  const struct memstub_release *release;  // gen --hold: the release schedule, or NULL
} data_files;

int memstub_gen_format_parse(const char *s, int *format) {
  static const char *const names[] = {"auto", "listing", "compact"};
  for (int i = 0; i < 3; i++)
    if (strcmp(s, names[i]) == 0) {
      *format = i;
      return 0;
    }
  return -EINVAL;
}

int memstub_gen_format_for(int format, int64_t numdata) {
  if (format == MEMSTUB_GEN_FORMAT_LISTING || format == MEMSTUB_GEN_FORMAT_COMPACT) return format;
  return numdata <= MEMSTUB_GEN_LISTING_MAX ? MEMSTUB_GEN_FORMAT_LISTING
                                            : MEMSTUB_GEN_FORMAT_COMPACT;
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
static int make_dir(data_files *d, memstub_error *err) {
  const char *t = getenv("TMPDIR");
  int ok = t && *t == '/' && strlen(t) < 2048;
  for (const unsigned char *c = (const unsigned char *)t; ok && *c; c++) ok = is_safe(*c);
  for (int k = ok ? 0 : 1; k < 2; k++) {
    snprintf(d->dir, sizeof d->dir, "%s/memstub-gen-XXXXXX", k == 0 ? t : "/tmp");
    if (mkdtemp(d->dir)) return 0;
  }
  int e = errno;
  memstub_error_set(err, -e, "%s: cannot make a temporary directory: %s", d->dir, strerror(e));
  d->dir[0] = '\0';
  return -e;
}

static int open_data(data_files *d, int k, const char *name, wbuf *w, memstub_error *err) {
  snprintf(d->file[k], sizeof d->file[k], "%s/%s", d->dir, name);
  w->fd = open(d->file[k], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (w->fd >= 0) return 0;
  int e = errno;
  d->file[k][0] = '\0';
  return memstub_error_set(err, -e, "%s/%s: cannot create: %s", d->dir, name, strerror(e));
}

static int close_data(data_files *d, int k, wbuf *w, memstub_error *err) {
  if (w->fd < 0) return 0;
  wb_flush(w);
  d->bytes += w->total;
  if (close(w->fd) != 0 && !w->err) w->err = errno;
  w->fd = -1;
  if (w->err)
    return memstub_error_set(err, -w->err, "%s: write failed: %s", d->file[k], strerror(w->err));
  return 0;
}

// Format the points into d's files. 0 or a negative errno with err set.
static int write_data(const memstub_gen *g, const memstub_gen_emit_options *o, data_files *d,
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

static void remove_data(data_files *d) {
  for (int k = 0; k < 8; k++)
    if (d->file[k][0]) unlink(d->file[k]);
  if (d->dir[0]) rmdir(d->dir);
}

/* Define macro `m` as s, quoted twice so its expansion is never rescanned:
 * as C string contents (others as octal escapes), and as comment text in
 * m_TXT (others as '?'). */
static void define_string(FILE *f, const char *m, const char *s) {
  fprintf(f, "m4_define([[%s]], [[[[", m);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (is_safe(*p))
      fputc(*p, f);
    else
      fprintf(f, "\\%03o", *p);
  fprintf(f, "]]]])m4_dnl\nm4_define([[%s_TXT]], [[[[", m);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) fputc(is_safe(*p) ? *p : '?', f);
  fputs("]]]])m4_dnl\n", f);
}

static void define_num(FILE *f, const char *m, long long v) {
  fprintf(f, "m4_define([[%s]], [[%lld]])m4_dnl\n", m, v);
}

/* gen --hold: MS_RELEASE(mode, n, after_ns, bytes), the schedule's arrays
 * as quoted arguments (numbers and commas only). */
static void write_release(FILE *f, const struct memstub_release *r) {
  fprintf(f, "MS_RELEASE([[%d]], [[%lld]], [[", (int)r->mode, (long long)r->n);
  for (int64_t i = 0; i < r->n; i++)
    fprintf(f, "%s%lld", i ? (i % 8 ? ", " : ",\n  ") : "  ", (long long)r->after_ns[i]);
  if (!r->n) fputs("  0", f);  // arrays of one unused entry: C has no empty ones
  fputs("]], [[", f);
  if (!r->n) fputs("  0", f);
  for (int64_t i = 0; i < r->n; i++)
    fprintf(f, "%s%lld", i ? (i % 8 ? ", " : ",\n  ") : "  ", (long long)r->bytes[i]);
  fputs("]])m4_dnl\n", f);
}

/* The m4 input of g's header; name is g->name, or for a thread's stub in a
 * threads header NAME_tT. */
static void write_input(FILE *f, const memstub_gen *g, const char *name, const data_files *d) {
  const struct memstub_stub *s = &g->stub;
  fwrite(ms__memuse_template, 1, ms__memuse_template_len, f);
  // The name is any length: NAME_ and the guard are written, never truncated.
  const char *sep = *name ? "_" : "";
  fprintf(f, "m4_define([[MS_VERSION]], [[%s]])m4_dnl\n", MEMSTUB_VERSION_STRING);
  fprintf(f, "m4_define([[MS_PREFIX]], [[%s%s]])m4_dnl\n", name, sep);
  fprintf(f, "m4_define([[MS_NAME]], [[%s]])m4_dnl\n", name);
  fprintf(f, "m4_define([[MS_GUARD]], [[MEMSTUB_GEN_%s%sMEMUSE_H]])m4_dnl\n", name, sep);
  define_string(f, "MS_SOURCE", g->source);
  define_string(f, "MS_TRANSFORMS", g->transforms);
  define_string(f, "MS_CALIBRATION", g->calibration);
  char comp[512];
  ms__gen_comp_summary(&g->comp, s->timing, comp, sizeof comp);
  fprintf(f, "m4_define([[MS_COMP]], [[[[%s]]]])m4_dnl\n", comp);
  define_num(f, "MS_NUMDATA", s->numdata);
  define_num(f, "MS_NORIG", s->norig);
  define_num(f, "MS_INSERTED", s->inserted);
  define_num(f, "MS_TIME0", s->time0_ns);
  define_num(f, "MS_DURATION", s->duration_ns);
  define_num(f, "MS_TIMING", s->timing);
  define_num(f, "MS_STACK_BASE", s->stack_base);
  define_num(f, "MS_PEAK_STACK", s->peak_stack);
  define_num(f, "MS_MAX_DEPTH", s->max_depth);
  define_num(f, "MS_PUSHES", g->pushes);
  define_num(f, "MS_POPS", g->pops);
  define_num(f, "MS_CONSTANTS", g->constants);
  define_num(f, "MS_FINAL_STACK", g->final_stack);
  define_num(f, "MS_HEAP_BASE", s->heap_base);
  define_num(f, "MS_PEAK_HEAP", s->peak_heap);
  define_num(f, "MS_HEAP_UP", g->heap_up);
  define_num(f, "MS_HEAP_DOWN", g->heap_down);
  define_num(f, "MS_FINAL_HEAP", g->final_heap);
  define_num(f, "MS_RESIDENT", g->mapped ? 1 : 0);
  if (g->mapped) {
    define_num(f, "MS_RSS_BASE", s->rss_base);
    define_num(f, "MS_PEAK_RSS", g->peak_rss);
    define_num(f, "MS_MAPPED_BASE", s->mapped_base);
    define_num(f, "MS_PEAK_MAPPED", g->peak_mapped);
  }
  define_num(f, "MS_WORK", g->cpu ? 1 : 0);
  if (g->cpu) {
    define_num(f, "MS_NCALLTAB", g->ncalltab);
    define_num(f, "MS_WORK_CPU", g->work_cpu_ns);
    define_num(f, "MS_WORK_CALLS", g->work_calls);
    define_num(f, "MS_WORK_BYTES", g->work_bytes);
    define_num(f, "MS_WORK_OVERHEAD", g->work_overhead_ns);
    define_num(f, "MS_WORK_CLAMPED", g->work_clamped);
    define_num(f, "MS_WORK_LATE", g->work_late);
    define_num(f, "MS_WORK_LATE_NS", g->work_late_ns);
  }
  fputs("MS_BEGIN[[]]m4_dnl\n", f);
  if (d->format == MEMSTUB_GEN_FORMAT_COMPACT)
    fprintf(f, "MS_COMPACT([[%s]])m4_dnl\n", d->file[0]);
  else
    fprintf(f, "MS_LISTING([[%s]], [[%s]])m4_dnl\n", d->file[0], d->file[1]);
  if (g->mapped && d->format != MEMSTUB_GEN_FORMAT_COMPACT)
    fprintf(f, "MS_RESIDENT_LISTING([[%s]], [[%s]])m4_dnl\n", d->file[2], d->file[3]);
  if (g->cpu && d->format != MEMSTUB_GEN_FORMAT_COMPACT)
    fprintf(f, "MS_WORK_LISTING([[%s]], [[%s]], [[%s]], [[%s]])m4_dnl\n", d->file[4], d->file[5],
            d->file[6], d->file[7]);
  if (d->release) write_release(f, d->release);
  fputs("MS_END[[]]m4_dnl\n", f);
}

/* Run m4 reading a pipe we feed and writing to out_fd. SIGPIPE is blocked
 * while feeding (and any pending one consumed), so an m4 that dies early
 * gives EPIPE here rather than killing the caller. */
static int run_m4(const memstub_gen *g, const char *name, const data_files *d, int out_fd,
                  memstub_error *err) {
  const char *m4 = getenv("MEMSTUB_M4");
  if (!m4 || !*m4) m4 = "m4";
  int in[2];
  if (pipe2(in, O_CLOEXEC) < 0)
    return memstub_error_set(err, -errno, "cannot create a pipe: %s", strerror(errno));
  ms__spawn_opts so;
  ms__spawn_opts_init(&so);
  so.in = in[0];
  so.out = out_fd;
  so.what = "m4";
  // m4 copies the points unexpanded (0.1 s for 100 MB): a minute, and a
  // second more for every MiB of them, is a hang.
  int rc = ms__spawn_limit(&so, 60, 1, d->bytes, err);
  if (rc < 0) {
    close(in[0]);
    close(in[1]);
    return rc;
  }
  char *argv[] = {(char *)m4, "-P", "--fatal-warnings", "-", NULL};
  ms__child child;
  rc = ms__spawn_start(&child, argv, &so, err);
  close(in[0]);
  if (rc < 0) {
    close(in[1]);
    return memstub_error_set(err, rc, "cannot run GNU m4 ('%s'): %s; install it (Debian: apt-get "
                             "install m4) or set MEMSTUB_M4",
                             m4, strerror(-rc));
  }
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  FILE *f = fdopen(in[1], "w");
  int werr = 0;
  if (f) {
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    write_input(f, g, name, d);
    if (fflush(f) != 0 || ferror(f)) werr = errno ? errno : EIO;
    fclose(f);
  } else {
    werr = errno;
    close(in[1]);
  }
  struct timespec zero = {0, 0};
  while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  // -ECHILD when the caller ignores SIGCHLD: m4 was reaped unseen, its
  // status is lost, and a header it may have cut short must not be taken.
  ms__spawn_result r;
  rc = ms__spawn_wait(&child, &r, err);
  ms__spawn_result_free(&r);
  if (rc < 0) return rc;  // "cannot wait for m4 ('m4'): ..."
  if (ms__spawn_status(&r) != 0) {
    char how[96];
    return memstub_error_set(err, -EIO, "m4 ('%s') failed on generator/memuse.h.m4 (%s)", m4,
                             ms__spawn_describe(&r, how, sizeof how));
  }
  if (werr) return memstub_error_set(err, -werr, "feeding m4: %s", strerror(werr));
  return 0;
}

/* Run m4 on the template, the definitions and d, into path ("-": standard
 * output, only once m4 succeeded). */
static int emit_m4(const memstub_gen *g, const data_files *d, const char *path, int64_t *sync_ns,
                   memstub_error *err) {
  int to_stdout = strcmp(path, "-") == 0;
  ms__afile af;
  FILE *tmp = NULL;
  int rc;
  // Standard output gets the header only once m4 has succeeded, via a
  // temporary file, so a failure prints nothing.
  if (to_stdout) {
    if (!(tmp = tmpfile())) return memstub_error_set(err, -errno, "tmpfile: %s", strerror(errno));
  } else if ((rc = ms__afile_open(&af, path, err)) < 0) {
    return rc;
  }
  FILE *out = to_stdout ? tmp : af.f;
  fflush(out);
  rc = run_m4(g, g->name, d, fileno(out), err);
  if (to_stdout) {
    if (rc == 0) {
      char buf[1 << 16];
      size_t n;
      rewind(tmp);
      while ((n = fread(buf, 1, sizeof buf, tmp)) > 0)
        if (fwrite(buf, 1, n, stdout) != n) break;
      if (fflush(stdout) != 0 || ferror(stdout))
        rc = memstub_error_set(err, -EIO, "standard output: write failed");
    }
    fclose(tmp);
    return rc;
  }
  if (rc < 0) {
    ms__afile_abort(&af);
    return rc;
  }
  // m4 wrote to the file descriptor directly; move the stream to its end.
  fseek(af.f, 0, SEEK_END);
  int64_t t0 = ms__prim_now_ns();
  rc = ms__afile_commit(&af, err);
  *sync_ns = ms__prim_now_ns() - t0;
  return rc;
}

int memstub_gen_emit(const memstub_gen *g, const char *path, memstub_error *err) {
  return memstub_gen_emit_ex(g, path, NULL, NULL, err);
}

int memstub_gen_emit_ex(const memstub_gen *g, const char *path, const memstub_gen_emit_options *o,
                        memstub_gen_emit_report *rep, memstub_error *err) {
  if (g->stub.numdata < 1) return memstub_error_set(err, -EINVAL, "no points to emit");
  memstub_gen_emit_options none = {0};
  if (!o) o = &none;
  if (o->format < MEMSTUB_GEN_FORMAT_AUTO || o->format > MEMSTUB_GEN_FORMAT_COMPACT)
    return memstub_error_set(err, -EINVAL, "unknown header form %d", o->format);
  int rc0;
  data_files d = {.format = memstub_gen_format_for(o->format, g->stub.numdata),
                  .release = o->release};
  if (o->release && (rc0 = memstub_release_check(o->release, err)) < 0) return rc0;
  int64_t t0 = ms__prim_now_ns();
  int rc = write_data(g, o, &d, err);
  int64_t t1 = ms__prim_now_ns();
  int64_t sync_ns = 0;
  if (rc == 0) rc = emit_m4(g, &d, path, &sync_ns, err);
  int64_t t2 = ms__prim_now_ns();
  remove_data(&d);
  if (rc == 0 && rep) {
    rep->format = d.format;
    rep->format_ns = t1 - t0;
    rep->m4_ns = t2 - t1 - sync_ns;
    rep->sync_ns = sync_ns;
    rep->data_bytes = d.bytes;
  }
  return rc;
}

/* ---- the data file (memstub gen --data) ------------------------------------ */

int memstub_gen_emit_data(const memstub_gen *g, const char *path, memstub_error *err) {
  if (g->stub.numdata < 1) return memstub_error_set(err, -EINVAL, "no points to emit");
  // The runtime's writer: the same table of arrays as its reader.
  return memstub_stub_data_write(&g->stub, path, err);
}

/* ---- a header of several threads ------------------------------------------- */

// s for a C comment: characters that are not safe as '?'.
static void put_txt(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) fputc(is_safe(*p) ? *p : '?', f);
}

// "after its point P" / "before its first point" (P -1).
static const char *point_words(int64_t p, char *buf, size_t cap) {
  if (p < 0) snprintf(buf, cap, "before its first point");
  else snprintf(buf, cap, "after its point %lld", (long long)p);
  return buf;
}

// The header's first lines: what it holds, its guard and NAME_THREADS.
static void write_threads_head(FILE *f, const memstub_gen_threads *g, const char *name) {
  const char *sep = *name ? "_" : "";
  const memstub_gen *g0 = g->gen[0];
  fprintf(f, "/* %s%smemuse.h: a memory stub of %lld threads generated by memstub %s with GNU m4\n",
          name, sep, (long long)g->nthreads, MEMSTUB_VERSION_STRING);
  fputs(" * from generator/memuse.h.m4. Do not edit; regenerate with memstub gen.\n *\n", f);
  fputs(" * source trace:  ", f);
  put_txt(f, g0->source);
  fprintf(f, "\n * threads:       %lld, each a stub of its own below (%s%st0_memStub, ...), as a\n",
          (long long)g->nthreads, name, sep);
  fputs(" *                trace of that thread alone would give; the thread table and the\n", f);
  fprintf(f, " *                handoffs at the end (%s%smemThreads), replayed together by\n", name,
          sep);
  fputs(" *                memstub_threads_run (docs/formats.md and docs/runtime.md, \"Threads\")\n",
        f);
  fprintf(f, " * handoffs:      %lld block%s malloc'd by one thread and freed by another\n */\n",
          (long long)g->nhandoffs, g->nhandoffs == 1 ? "" : "s");
  fprintf(f, "#ifndef MEMSTUB_GEN_%s%sTHREADS_H\n#define MEMSTUB_GEN_%s%sTHREADS_H\n\n", name, sep,
          name, sep);
  fprintf(f, "#define %s%sTHREADS %lld\n#define %s%sNHANDOFFS %lld\n\n", name, sep,
          (long long)g->nthreads, name, sep, (long long)g->nhandoffs);
}

// The thread table, the handoffs and the descriptor NAME_memThreads.
static void write_threads_tail(FILE *f, const memstub_gen_threads *g, const char *name) {
  const char *sep = *name ? "_" : "";
  fputs("#ifndef MEMSTUB_STRUCT_THREADS\n#define MEMSTUB_STRUCT_THREADS\n"
        "struct memstub_thread_spec {\n"
        "  int64_t start_ns;      /* ns after thread 0's start */\n"
        "  int64_t creator;       /* thread that creates it, -1 the replay */\n"
        "  int64_t create_point;  /* after this point of the creator (-1: before its first) */\n"
        "  int64_t joiner;        /* thread that joins it, -1 the replay at the end */\n"
        "  int64_t join_point;    /* after this point of the joiner */\n"
        "};\n"
        "struct memstub_handoff {\n"
        "  int64_t bytes;        /* requested size of the block */\n"
        "  int64_t from;         /* thread that mallocs it */\n"
        "  int64_t alloc_point;  /*   after this point of its own (-1 before its first) */\n"
        "  int64_t alloc_row;    /*   the row of from's stub whose change includes it */\n"
        "  int64_t to;           /* thread that frees it */\n"
        "  int64_t free_point;   /*   after this point of its own */\n"
        "  int64_t drop_row;     /* the first of from's rows that no longer counts it */\n"
        "};\n"
        "struct memstub_threads_stub {\n"
        "  int64_t nthreads;\n"
        "  const struct memstub_stub *const *stubs;\n"
        "  const struct memstub_thread_spec *threads;\n"
        "  int64_t nhandoffs;\n"
        "  const struct memstub_handoff *handoffs;\n"
        "};\n#endif\n\n",
        f);
  fprintf(f, "static const struct memstub_stub *const %s%smemThreadStubs[%s%sTHREADS] = {\n", name,
          sep, name, sep);
  for (int64_t t = 0; t < g->nthreads; t++)
    fprintf(f, "  &%s%st%lld_memStub,\n", name, sep, (long long)t);
  fputs("};\n\n", f);
  fprintf(f, "static const struct memstub_thread_spec %s%smemThreadSpec[%s%sTHREADS] = {\n", name, sep,
          name, sep);
  for (int64_t t = 0; t < g->nthreads; t++) {
    const memstub_thread_spec *s = &g->threads[t];
    char at[32], p1[48], p2[48];
    ms__fmt_ns(s->start_ns, at, sizeof at);
    fprintf(f, "  /* thread %lld starts at %s, ", (long long)t, at);
    if (s->creator < 0) fputs("created by the replay", f);
    else
      fprintf(f, "created by %lld %s", (long long)s->creator,
              point_words(s->create_point, p1, sizeof p1));
    if (s->joiner < 0) fputs(", joined at the end */\n", f);
    else
      fprintf(f, ", joined by %lld %s */\n", (long long)s->joiner,
              point_words(s->join_point, p2, sizeof p2));
    fprintf(f,
            "  [%lld] = {.start_ns = %lld, .creator = %lld, .create_point = %lld, .joiner = %lld, "
            ".join_point = %lld},\n",
            (long long)t, (long long)s->start_ns, (long long)s->creator,
            (long long)s->create_point, (long long)s->joiner, (long long)s->join_point);
  }
  fputs("};\n\n", f);
  // C has no empty arrays: without handoffs, one unused entry.
  fprintf(f, "static const struct memstub_handoff %s%smemHandoff[%lld] = {\n", name, sep,
          (long long)(g->nhandoffs ? g->nhandoffs : 1));
  if (!g->nhandoffs) fputs("  {0},\n", f);
  for (int64_t k = 0; k < g->nhandoffs; k++) {
    const memstub_handoff *h = &g->handoffs[k];
    char b[32], p1[48], p2[48];
    ms__fmt_bytes(h->bytes, b, sizeof b);
    fprintf(f, "  /* %s malloc'd by thread %lld %s, freed by thread %lld %s */\n", b,
            (long long)h->from, point_words(h->alloc_point, p1, sizeof p1), (long long)h->to,
            point_words(h->free_point, p2, sizeof p2));
    char drop[24];
    if (h->drop_row == INT64_MAX) snprintf(drop, sizeof drop, "INT64_MAX");
    else snprintf(drop, sizeof drop, "%lld", (long long)h->drop_row);
    fprintf(f,
            "  {.bytes = %lld, .from = %lld, .alloc_point = %lld, .alloc_row = %lld, .to = %lld, "
            ".free_point = %lld, .drop_row = %s},\n",
            (long long)h->bytes, (long long)h->from, (long long)h->alloc_point,
            (long long)h->alloc_row, (long long)h->to, (long long)h->free_point, drop);
  }
  fputs("};\n\n", f);
  fprintf(f, "static const struct memstub_threads_stub %s%smemThreads = {\n", name, sep);
  fprintf(f, "  .nthreads = %s%sTHREADS,\n  .stubs = %s%smemThreadStubs,\n", name, sep, name, sep);
  fprintf(f, "  .threads = %s%smemThreadSpec,\n  .nhandoffs = %s%sNHANDOFFS,\n", name, sep, name,
          sep);
  fprintf(f, "  .handoffs = %s%smemHandoff,\n};\n\n#endif /* MEMSTUB_GEN_%s%sTHREADS_H */\n", name,
          sep, name, sep);
}

// Every thread's stub, through m4, then the table, into out (a file at its end).
static int write_threads(const memstub_gen_threads *g, const memstub_gen_emit_options *o,
                         FILE *out, memstub_error *err) {
  const char *name = g->gen[0]->name;
  const char *sep = *name ? "_" : "";
  write_threads_head(out, g, name);
  int rc = 0;
  for (int64_t t = 0; t < g->nthreads && rc == 0; t++) {
    const memstub_gen *gt = g->gen[t];
    char *tname = malloc(strlen(name) + 32);
    if (!tname) return memstub_error_set(err, -ENOMEM, "out of memory");
    sprintf(tname, "%s%st%lld", name, sep, (long long)t);
    data_files d = {.format = memstub_gen_format_for(o->format, gt->stub.numdata)};
    rc = write_data(gt, o, &d, err);
    // m4 writes to the descriptor directly: what the stream holds goes first.
    if (rc == 0 && fflush(out) != 0)
      rc = memstub_error_set(err, -errno, "write failed: %s", strerror(errno));
    if (rc == 0) rc = run_m4(gt, tname, &d, fileno(out), err);
    if (rc == 0) fseek(out, 0, SEEK_END);
    if (rc == 0) fputc('\n', out);
    remove_data(&d);
    free(tname);
    if (rc < 0) {
      char what[48];
      snprintf(what, sizeof what, "thread %lld", (long long)t);
      memstub_error_prefix(err, what);
    }
  }
  if (rc == 0) write_threads_tail(out, g, name);
  return rc;
}

int memstub_gen_threads_emit(const memstub_gen_threads *g, const char *path,
                             const memstub_gen_emit_options *o, memstub_error *err) {
  memstub_gen_emit_options none = {0};
  if (!o) o = &none;
  if (o->format < MEMSTUB_GEN_FORMAT_AUTO || o->format > MEMSTUB_GEN_FORMAT_COMPACT)
    return memstub_error_set(err, -EINVAL, "unknown header form %d", o->format);
  if (o->release)
    return memstub_error_set(err, -EINVAL,
                             "--hold: a stub of several threads cannot hold survivors after "
                             "its return (one thread's stub can: memstub gen --name)");
  if (g->nthreads < 1) return memstub_error_set(err, -EINVAL, "no threads to emit");
  for (int64_t t = 0; t < g->nthreads; t++)
    if (g->gen[t]->stub.numdata < 1)
      return memstub_error_set(err, -EINVAL, "thread %lld: no points to emit", (long long)t);
  int to_stdout = strcmp(path, "-") == 0;
  ms__afile af;
  FILE *out;
  int rc;
  if (to_stdout) {
    if (!(out = tmpfile())) return memstub_error_set(err, -errno, "tmpfile: %s", strerror(errno));
  } else if ((rc = ms__afile_open(&af, path, err)) < 0) {
    return rc;
  } else {
    out = af.f;
  }
  rc = write_threads(g, o, out, err);
  if (rc == 0 && (fflush(out) != 0 || ferror(out)))
    rc = memstub_error_set(err, -EIO, "%s: write failed", to_stdout ? "(temporary file)" : path);
  if (to_stdout) {
    if (rc == 0) {
      char buf[1 << 16];
      size_t n;
      rewind(out);
      while ((n = fread(buf, 1, sizeof buf, out)) > 0)
        if (fwrite(buf, 1, n, stdout) != n) break;
      if (fflush(stdout) != 0 || ferror(stdout))
        rc = memstub_error_set(err, -EIO, "standard output: write failed");
    }
    fclose(out);
    return rc;
  }
  if (rc < 0) {
    ms__afile_abort(&af);
    return rc;
  }
  return ms__afile_commit(&af, err);
}
