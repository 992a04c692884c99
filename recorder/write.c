/* recorder/write.c: the trace written at exit, through memstub_trace_write,
 * or by a signal-safe writer (write(2), fsync, rename) on a fatal signal or
 * with --thread all's columns; and its side files (TRACE.sites,
 * TRACE.generations), staged and renamed into place only once the trace is
 * committed, so that the three appear together or not at all. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memstub/trace.h"  // before internal.h: its inline functions name a parameter row
#include "internal.h"

static const char *const work_cols[MS__REC_WORK_CALLS] = {MEMSTUB_WORK_CALL_COLUMNS};

/* Which call columns the trace gets: those with a call in some row (used[k]);
 * returns how many. churn_bytes is written when there is one. */
static int work_used(const assembled *A, int *used) {
  int n = 0;
  for (int k = 0; k < MS__REC_WORK_CALLS; k++) {
    used[k] = 0;
    for (size_t i = 0; i < A->n && !used[k]; i++) used[k] = A->rows[i].w.n[k] != 0;
    n += used[k];
  }
  return n;
}

static int write_raw(const assembled *A, const char *out);

/* The trace through memstub_trace_write (normal exit). With --thread all its
 * thread columns have empty fields and words (thread_event), which the
 * trace library does not hold: the writer below writes it (atomically too:
 * a temporary file, fsync, rename). */
static int write_normal(const assembled *A, const char *out) {
  if (A->tr) return write_raw(A, out);
  memstub_trace *t = memstub_trace_create();
  if (!t) return -ENOMEM;
  int rc = 0, col = -1, mcol = -1;
  if (A->regions) col = memstub_trace_add_column(t, "region");
  // The memory columns (docs/formats.md), added in this order.
  for (int i = 0; i < 4 && rc >= 0; i++) {
    rc = memstub_trace_add_column(t, ms__rec_mem_cols[i]);
    if (i == 0) mcol = rc;
  }
  // The work columns (docs/formats.md, "Work columns").
  int used[MS__REC_WORK_CALLS], wcol[MS__REC_WORK_CALLS], ccol = -1, bcol = -1, qcol = -1;
  int nused = work_used(A, used);
  if (rc >= 0) rc = ccol = memstub_trace_add_column(t, MEMSTUB_WORK_CPU_COLUMN);
  if (rc >= 0 && ms__rec.rq_gap_raw > 0)
    rc = qcol = memstub_trace_add_column(t, MEMSTUB_WORK_RUN_DELAY_COLUMN);
  if (rc >= 0 && nused) rc = bcol = memstub_trace_add_column(t, MEMSTUB_WORK_BYTES_COLUMN);
  for (int k = 0; k < MS__REC_WORK_CALLS; k++) {
    wcol[k] = -1;
    if (rc >= 0 && used[k]) rc = wcol[k] = memstub_trace_add_column(t, work_cols[k]);
  }
  if (rc > 0) rc = 0;
  for (int i = 0; i < ms__rec_nmeta && rc == 0; i++)
    rc = memstub_trace_set_meta(t, ms__rec_meta_kv[i].key, ms__rec_meta_kv[i].val);
  if (rc == 0) rc = memstub_trace_reserve(t, A->n);
  for (size_t i = 0; i < A->n && rc == 0; i++) {
    rc = memstub_trace_append(t, A->rows[i].t, A->rows[i].stack, A->rows[i].heap);
    if (rc != 0) break;
    int64_t *e = memstub_trace_extra_row(t, t->n - 1);
    if (col >= 0) e[col] = A->rows[i].tag;
    const memv *m = &A->rows[i].m;
    e[mcol] = m->rss;
    e[mcol + 1] = m->mapped;
    e[mcol + 2] = m->minflt;
    e[mcol + 3] = m->majflt;
    const workv *w = &A->rows[i].w;
    e[ccol] = w->cpu;
    if (qcol >= 0) e[qcol] = w->rq;
    if (bcol >= 0) e[bcol] = (int64_t)w->bytes;
    for (int k = 0; k < MS__REC_WORK_CALLS; k++)
      if (wcol[k] >= 0) e[wcol[k]] = w->n[k];
  }
  memstub_error err;
  if (rc == 0) rc = memstub_trace_write(t, out, &err);
  memstub_trace_free(t);
  return rc;
}

/* The signal-safe writer: write(2) to a temporary file beside the target,
 * fsync, rename. */
static char g_wbuf[1 << 16];
static size_t g_wlen;
static int g_wfd = -1, g_werr;  // g_werr: the first errno

static void wflush(void) {
  size_t off = 0;
  while (off < g_wlen && !g_werr) {
    ssize_t w = write(g_wfd, g_wbuf + off, g_wlen - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      g_werr = w < 0 ? errno : EIO;
    else
      off += (size_t)w;
  }
  g_wlen = 0;
}

static void wput(const char *s, size_t n) {
  while (n) {
    size_t k = sizeof g_wbuf - g_wlen < n ? sizeof g_wbuf - g_wlen : n;
    memcpy(g_wbuf + g_wlen, s, k);
    g_wlen += k;
    s += k;
    n -= k;
    if (g_wlen == sizeof g_wbuf) wflush();
  }
}

static void wstr(const char *s) { wput(s, strlen(s)); }

static void wnum(int64_t v) {
  char b[24], *p = b + sizeof b;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do *--p = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0) *--p = '-';
  wput(p, (size_t)(b + sizeof b - p));
}

// The signal-path writer's temporary name beside out: "DIR/.BASE.tmp.sig".
static int raw_tmp_name(const char *out, char *tmp, size_t cap) {
  const char *slash = strrchr(out, '/');
  size_t dl = slash ? (size_t)(slash - out + 1) : 0;
  const char *base = slash ? slash + 1 : out;
  if (dl + strlen(base) + 40 > cap) return -ENAMETOOLONG;
  memcpy(tmp, out, dl);
  char *p = tmp + dl;
  *p++ = '.';
  memcpy(p, base, strlen(base));
  p += strlen(base);
  memcpy(p, ".tmp.sig", 9);
  return 0;
}

static int write_raw(const assembled *A, const char *out) {
  static char tmp[PATH_MAX + 64];
  // A device, FIFO or symbolic link is written in place (through the link),
  // never renamed over: only stat and lstat here, both async-signal-safe.
  struct stat st, lst;
  int in_place = stat(out, &st) == 0 &&
                 (!S_ISREG(st.st_mode) || (lstat(out, &lst) == 0 && S_ISLNK(lst.st_mode)));
  if (in_place)
    memcpy(tmp, out, strlen(out) + 1);
  else if (raw_tmp_name(out, tmp, sizeof tmp) < 0)
    return -ENAMETOOLONG;
  g_wfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (g_wfd < 0) return -errno;
  g_wlen = 0;
  g_werr = 0;
  wstr("# memstub-trace 1\n");
  for (int i = 0; i < ms__rec_nmeta; i++) {
    wstr("# ");
    wstr(ms__rec_meta_kv[i].key);
    wstr(": ");
    wstr(ms__rec_meta_kv[i].val);
    wstr("\n");
  }
  wstr(A->regions ? "time_ns,stack_bytes,heap_bytes,region" : "time_ns,stack_bytes,heap_bytes");
  if (A->tr) wstr(",thread,thread_event,thread_peer,xfree_from,xfree_bytes,xfree_alloc_ns");
  for (int i = 0; i < 4; i++) {
    wput(",", 1);
    wstr(ms__rec_mem_cols[i]);
  }
  int used[MS__REC_WORK_CALLS];
  int nused = work_used(A, used);
  wstr("," MEMSTUB_WORK_CPU_COLUMN);
  if (ms__rec.rq_gap_raw > 0) wstr("," MEMSTUB_WORK_RUN_DELAY_COLUMN);
  if (nused) wstr("," MEMSTUB_WORK_BYTES_COLUMN);
  for (int k = 0; k < MS__REC_WORK_CALLS; k++)
    if (used[k]) {
      wput(",", 1);
      wstr(work_cols[k]);
    }
  wput("\n", 1);
  for (size_t i = 0; i < A->n; i++) {
    wnum(A->rows[i].t);
    wput(",", 1);
    wnum(A->rows[i].stack);
    wput(",", 1);
    wnum(A->rows[i].heap);
    if (A->regions) {
      wput(",", 1);
      wnum(A->rows[i].tag);
    }
    if (A->tr) {
      static const char *const ev[] = {"", "start", "exit", "join"};
      const trow *r = &A->tr[i];
      wput(",", 1);
      wnum(r->thr);
      wput(",", 1);
      wstr(ev[r->ev & 3]);
      wput(",", 1);
      if (r->ev == TEV_START || r->ev == TEV_JOIN) wnum(r->peer);
      wput(",", 1);
      if (r->xfrom >= 0) {
        wnum(r->xfrom);
        wput(",", 1);
        wnum(r->xbytes);
        wput(",", 1);
        wnum(r->xalloc_ns);
      } else {
        wput(",,", 2);
      }
    }
    const memv *m = &A->rows[i].m;
    int64_t v[4] = {m->rss, m->mapped, m->minflt, m->majflt};
    for (int k = 0; k < 4; k++) {
      wput(",", 1);
      wnum(v[k]);
    }
    const workv *w = &A->rows[i].w;
    wput(",", 1);
    wnum(w->cpu);
    if (ms__rec.rq_gap_raw > 0) {
      wput(",", 1);
      wnum(w->rq);
    }
    if (nused) {
      wput(",", 1);
      wnum((int64_t)w->bytes);
    }
    for (int k = 0; k < MS__REC_WORK_CALLS; k++)
      if (used[k]) {
        wput(",", 1);
        wnum(w->n[k]);
      }
    wput("\n", 1);
  }
  wflush();
  if (!g_werr && fsync(g_wfd) != 0 && errno != EINVAL) g_werr = errno;
  if (close(g_wfd) != 0 && !g_werr) g_werr = errno;
  if (in_place) return -g_werr;
  if (!g_werr && rename(tmp, out) != 0) g_werr = errno;
  if (g_werr) unlink(tmp);
  return -g_werr;
}

/* ---- the trace and its side files, committed together ---- */

#define NSIDE 3
static const char *const side_ext[NSIDE] = {".sites", ".generations", ".calls"};
static const char *const side_key[NSIDE] = {"sites", "generations", "calls"};

// The metadata line key, or NULL.
static kv *meta_kv(const char *key) {
  for (int i = 0; i < ms__rec_nmeta; i++)
    if (strcmp(ms__rec_meta_kv[i].key, key) == 0) return &ms__rec_meta_kv[i];
  return NULL;
}

// The errno whose text ends msg (the side-file writers' "PATH: ...: TEXT"), else EIO.
static int msg_errno(const char *msg) {
  size_t n = strlen(msg);
  for (int e = 1; e < 134; e++) {
    const char *s = strerror(e);
    size_t k = strlen(s);
    if (k < n && strcmp(msg + n - k, s) == 0 && msg[n - k - 1] == ' ') return e;
  }
  return EIO;
}

// base + ext into b[cap]; 0, or -1 when it does not fit. Async-signal-safe.
static int with_ext(char *b, size_t cap, const char *base, const char *ext) {
  size_t n = strlen(base), k = strlen(ext);
  if (n + k >= cap) return -1;
  memcpy(b, base, n);
  memcpy(b + n, ext, k + 1);
  return 0;
}

/* The side files (TRACE.sites, TRACE.generations) written under a staged name
 * beside the trace, "DIR/.BASE.staged.PID", whose files appear only after
 * the trace (ms__rec_commit). Their metadata lines name the final files.
 * 0, or -errno when one could not be written (none is kept then). */
static int stage_sides(const assembled *A, const char *out, char *stage, size_t cap) {
  const char *slash = strrchr(out, '/');
  size_t dl = slash ? (size_t)(slash - out + 1) : 0;
  int n = snprintf(stage, cap, "%.*s.%s.staged.%ld", (int)dl, out, out + dl, (long)ms__rec.pid);
  if (n <= 0 || (size_t)n + 16 >= cap || (size_t)n + 16 >= sizeof ms__rec.out) return -ENAMETOOLONG;
  // The writers name their files after ms__rec.out.
  memcpy(ms__rec.out, stage, (size_t)n + 1);
  ms__rec_sites_write();
  ms__rec_gen_write(A);
  ms__rec_calls_write(A);
  memcpy(ms__rec.out, out, strlen(out) + 1);
  int rc = 0;
  char key[64], path[PATH_MAX + 32];
  for (int k = 0; k < NSIDE; k++) {
    snprintf(key, sizeof key, "%s.error", side_key[k]);
    kv *e = meta_kv(key);
    if (e && !rc) rc = -msg_errno(e->val);
    snprintf(key, sizeof key, "%s.file", side_key[k]);
    kv *f = meta_kv(key);
    if (f && with_ext(path, sizeof path, out, side_ext[k]) == 0) {
      size_t len = strlen(path) < sizeof f->val ? strlen(path) : sizeof f->val - 1;
      memcpy(f->val, path, len);  // as ms__rec_meta keeps it: cut to the field
      f->val[len] = '\0';
    }
  }
  for (int k = 0; rc && k < NSIDE; k++)
    if (with_ext(path, sizeof path, stage, side_ext[k]) == 0) unlink(path);
  return rc;
}

/* After the trace at out was committed: each staged side file renamed to
 * its final name, and the side files of an earlier recording that this one
 * did not write removed (they no longer describe the trace beside them).
 * stage NULL: none was staged (the signal path: only unlink, async-signal-safe). */
static void commit_sides(const char *out, const char *stage) {
  static char from[PATH_MAX + 64], to[PATH_MAX + 64];
  for (int k = 0; k < NSIDE; k++) {
    if (with_ext(to, sizeof to, out, side_ext[k]) != 0) continue;
    if (!stage || with_ext(from, sizeof from, stage, side_ext[k]) != 0 ||
        rename(from, to) != 0)
      unlink(to);
  }
}

int ms__rec_commit(const assembled *A, int how) {
  static char out[PATH_MAX], stage[PATH_MAX];  // static: it may run in a signal handler
  memcpy(out, ms__rec.out, strlen(ms__rec.out) + 1);
  if (how == 2) {  // a fatal signal: no side files (not signal-safe)
    ms__rec_calls_abort();
    int rc = write_raw(A, out);
    if (rc == 0) commit_sides(out, NULL);
    return rc;
  }
  int rc = stage_sides(A, out, stage, sizeof stage);
  if (rc != 0) return rc;
  if (write_normal(A, out) != 0) rc = write_raw(A, out);
  if (rc == 0) {
    commit_sides(out, stage);
  } else {
    char path[PATH_MAX + 32];
    for (int k = 0; k < NSIDE; k++)
      if (with_ext(path, sizeof path, stage, side_ext[k]) == 0) unlink(path);
  }
  return rc;
}
