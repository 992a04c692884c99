// The bytes of a stub's calls where the call replay reads them (docs/runtime.md,
// "Data files"): in memory (a stub made by memstub replay TRACE, a descriptor
// whose callseq points at them), or in a data file, read a window at a time
// as the calls are decoded. Each window read is checked against the sum taken
// when the file was opened, so what is replayed is what was checked, and a
// file changed since is an error that names it, never another replay. The
// calls are most of an exact stub's data file (3.4 bytes a call): read whole,
// they were anonymous memory the component never had (2.7 MB of bench/system's
// hash host, +4 % of its RssAnon).
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "prim.h"

struct ms__rt_callsrc {
  struct ms__rt_callsrc *next;  // the sources open (g_srcs)
  const void *key;              // the descriptor's callseq: a page of its own, PROT_NONE
  int fd;
  int64_t off, len;             // the calls' bytes in the file
  int64_t nwin;                 // windows of MS__RT_CALLS_WINDOW bytes, the last one shorter
  int64_t filled;               // windows summed so far (ms__rt_callsrc_fill)
  uint64_t digest;              // of the windows' sums: the calls' identity
  uint64_t *sum;                // [nwin]
  char path[];
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ms__rt_callsrc *g_srcs;

int ms__rt_callsrc_create(const char *path, int fd, int64_t off, int64_t len,
                          ms__rt_callsrc **out) {
  *out = NULL;
  size_t plen = strlen(path) + 1;
  ms__rt_callsrc *s = ms__rt_own_calloc(1, sizeof *s + plen);
  if (!s) return -ENOMEM;
  memcpy(s->path, path, plen);
  s->fd = -1;
  s->off = off, s->len = len;
  s->nwin = (len + MS__RT_CALLS_WINDOW - 1) / MS__RT_CALLS_WINDOW;
  s->sum = ms__rt_own_calloc((size_t)s->nwin + 1, sizeof *s->sum);
  // An address of its own that faults when read: callseq is no array here.
  void *key = mmap(NULL, (size_t)ms__prim_page_size(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  s->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (!s->sum || key == MAP_FAILED || s->fd < 0) {
    int e = key == MAP_FAILED || s->fd < 0 ? errno : ENOMEM;
    if (key != MAP_FAILED) munmap(key, (size_t)ms__prim_page_size());
    s->key = NULL;
    ms__rt_callsrc_free(s);
    return -e;
  }
  s->key = key;
  s->digest = UINT64_C(1469598103934665603) ^ (uint64_t)len;
  *out = s;
  return 0;
}

int ms__rt_callsrc_fill(ms__rt_callsrc *s, const void *p, int64_t n) {
  int64_t w = s->filled;
  int64_t want = w + 1 < s->nwin ? MS__RT_CALLS_WINDOW : s->len - w * MS__RT_CALLS_WINDOW;
  if (w >= s->nwin || n != want) return -EINVAL;
  s->sum[w] = ms__rt_sum64(p, (uint64_t)n, (uint64_t)w);
  s->digest = (s->digest ^ s->sum[w]) * UINT64_C(0x9E3779B97F4A7C15);
  s->filled++;
  if (s->filled == s->nwin) {  // complete: the replay can find it
    pthread_mutex_lock(&g_lock);
    s->next = g_srcs;
    g_srcs = s;
    pthread_mutex_unlock(&g_lock);
  }
  return 0;
}

const uint8_t *ms__rt_callsrc_key(const ms__rt_callsrc *s) { return s->key; }

void ms__rt_callsrc_free(ms__rt_callsrc *s) {
  if (!s) return;
  pthread_mutex_lock(&g_lock);
  for (ms__rt_callsrc **p = &g_srcs; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  pthread_mutex_unlock(&g_lock);
  if (s->key) munmap((void *)s->key, (size_t)ms__prim_page_size());
  if (s->fd >= 0) close(s->fd);
  ms__rt_own_free(s->sum);
  ms__rt_own_free(s);
}

// The open source whose key callseq is, else NULL.
static ms__rt_callsrc *src_find(const uint8_t *callseq) {
  pthread_mutex_lock(&g_lock);
  ms__rt_callsrc *s = g_srcs;
  while (s && s->key != callseq) s = s->next;
  pthread_mutex_unlock(&g_lock);
  return s;
}

/* ---- reading ---------------------------------------------------------------- */

int ms__rt_callrd_open(ms__rt_callrd *r, const struct memstub_stub *s) {
  memset(r, 0, sizeof *r);
  r->n = s->ncallseq;
  r->src = src_find(s->callseq);
  if (!r->src) {
    r->mem = s->callseq;
    return 0;
  }
  if (r->src->len != s->ncallseq) return -EINVAL;  // another descriptor's calls
  r->buf = ms__rt_own_calloc(2, MS__RT_CALLS_WINDOW);
  return r->buf ? 0 : -ENOMEM;
}

void ms__rt_callrd_close(ms__rt_callrd *r) {
  ms__rt_own_free(r->buf);
  memset(r, 0, sizeof *r);
}

uint64_t ms__rt_callrd_digest(const ms__rt_callrd *r) { return r->src ? r->src->digest : 0; }

/* Window w of r's file into buf, checked against its sum. 0, or -EIO with
 * r->why set (sticky: r->err). */
static int read_window(ms__rt_callrd *r, int64_t w, uint8_t *buf) {
  const ms__rt_callsrc *s = r->src;
  int64_t from = w * MS__RT_CALLS_WINDOW;
  int64_t n = w + 1 < s->nwin ? MS__RT_CALLS_WINDOW : s->len - from, got = 0;
  while (got < n) {
    ssize_t k = pread(s->fd, buf + got, (size_t)(n - got), (off_t)(s->off + from + got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      int e = k < 0 ? errno : 0;
      snprintf(r->why, sizeof r->why, "%s: calls: bytes %lld to %lld: %s since it was opened",
               s->path, (long long)(from + got), (long long)(from + n),
               e ? strerror(e) : "the file was truncated");
      return r->err = -EIO;
    }
    got += k;
  }
  if (ms__rt_sum64(buf, (uint64_t)n, (uint64_t)w) != s->sum[w]) {
    snprintf(r->why, sizeof r->why,
             "%s: calls: bytes %lld to %lld: changed since the file was opened (written over "
             "while it replayed?)",
             s->path, (long long)from, (long long)(from + n));
    return r->err = -EIO;
  }
  return 0;
}

const uint8_t *ms__rt_callrd_get(ms__rt_callrd *r, int64_t at, int64_t *avail) {
  if (r->mem) {
    *avail = r->n - at;
    return r->mem + at;
  }
  if (r->err) return NULL;
  int64_t have = r->buf_at + r->buf_len;
  if (at < r->buf_at || at >= have || (have - at < MS__RT_CALL_MAX && have < r->n)) {
    // Windows w and w + 1 from at's: a call never spans more than two.
    int64_t w = at / MS__RT_CALLS_WINDOW, second = (r->buf_at / MS__RT_CALLS_WINDOW) + 1;
    int64_t nw = r->src->nwin, len = 0;
    int reuse = r->buf_len > MS__RT_CALLS_WINDOW && second == w;  // already read: moved down
    if (reuse) {
      len = r->buf_len - MS__RT_CALLS_WINDOW;
      memmove(r->buf, r->buf + MS__RT_CALLS_WINDOW, (size_t)len);
    } else {
      if (read_window(r, w, r->buf) < 0) return NULL;
      len = w + 1 < nw ? MS__RT_CALLS_WINDOW : r->n - w * MS__RT_CALLS_WINDOW;
    }
    r->buf_at = w * MS__RT_CALLS_WINDOW, r->buf_len = len;
    if (w + 1 < nw) {
      if (read_window(r, w + 1, r->buf + MS__RT_CALLS_WINDOW) < 0) return NULL;
      int64_t l2 = w + 2 < nw ? MS__RT_CALLS_WINDOW : r->n - (w + 1) * MS__RT_CALLS_WINDOW;
      r->buf_len = MS__RT_CALLS_WINDOW + l2;
    }
    have = r->buf_at + r->buf_len;
  }
  *avail = have - at;
  return r->buf + (at - r->buf_at);
}
