/* recorder/calls.c: the allocation sequence (record --calls; issue 31): every
 * allocator call in the trace's scope, in order, into TRACE.calls, a few
 * bytes a call (docs/formats.md, "The calls file").
 *
 * Each thread encodes its calls into a buffer of its own (no lock, no
 * allocation); a full buffer is one block of the file, written at an offset
 * reserved with an atomic add, so threads never wait for each other. The
 * file is a temporary one beside the trace until the end, when the header
 * is written and it is renamed with the trace's other side files (write.c).
 * Encoding, per call: a head byte (the function; whether the time moved, the
 * address deltas are not 16-byte multiples, the call failed, realloc's old
 * pointer is NULL), then varints: the time's advance in clock units, the
 * size, the alignment, and each address as a zigzag delta from the last
 * address this thread wrote (glibc's blocks are 16-byte aligned and often
 * near each other: one or two bytes). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "../traces/calls_format.h"

int ms__rec_calls_on;

static int g_fd = -1;
static uint64_t g_off;            // the next block's offset (atomic add)
static uint64_t g_calls, g_bytes;  // written so far (atomic adds)
static int g_err;                 // the first write error (errno)
static char g_tmp[PATH_MAX + 32];

// The calls file's temporary name: "DIR/.BASE.calls.PID" into b[cap]; 0 or -1.
static int tmp_name(char *b, size_t cap) {
  const char *out = ms__rec.out, *slash = strrchr(out, '/');
  size_t dl = slash ? (size_t)(slash - out + 1) : 0;
  int n = snprintf(b, cap, "%.*s.%s.calls.%ld", (int)dl, out, out + dl, (long)ms__rec.pid);
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

void ms__rec_calls_init(void) {
  const char *e = getenv(MS__REC_ENV_CALLS);
  if (!e || strcmp(e, "1") != 0) return;
  if (tmp_name(g_tmp, sizeof g_tmp) != 0) {
    g_err = ENAMETOOLONG;
    return;
  }
  g_fd = open(g_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (g_fd < 0) {
    g_err = errno;
    return;
  }
  g_off = sizeof(ms__calls_head);
  __atomic_store_n(&ms__rec_calls_on, 1, __ATOMIC_RELEASE);
}

// Write n bytes at off, whole; the first error kept in g_err.
static void put_at(const void *b, size_t n, uint64_t off) {
  const char *p = b;
  while (n > 0) {
    ssize_t w = pwrite(g_fd, p, n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int zero = 0;
      __atomic_compare_exchange_n(&g_err, &zero, w < 0 ? errno : EIO, 0, __ATOMIC_RELAXED,
                                  __ATOMIC_RELAXED);
      return;
    }
    p += w, n -= (size_t)w, off += (uint64_t)w;
  }
}

// ts's buffer as one block of the file; the buffer is empty after.
static void flush(tstate *ts) {
  ms__rec_calls_buf *b = ts->calls;
  if (!b || b->head.calls == 0) return;
  size_t n = sizeof b->head + b->head.bytes;
  uint64_t off = __atomic_fetch_add(&g_off, n, __ATOMIC_RELAXED);
  put_at(&b->head, n, off);
  __atomic_fetch_add(&g_calls, b->head.calls, __ATOMIC_RELAXED);
  __atomic_fetch_add(&g_bytes, n, __ATOMIC_RELAXED);
  b->head.calls = 0;
  b->head.bytes = 0;
}

// ts's buffer, made on its first call (NULL: no memory; the call is lost, and said).
static ms__rec_calls_buf *buffer(tstate *ts) {
  if (LIKELY(ts->calls)) return ts->calls;
  ms__rec_calls_buf *b = ms__rec_map(sizeof *b);
  if (!b) {
    int zero = 0;
    __atomic_compare_exchange_n(&g_err, &zero, ENOMEM, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return NULL;
  }
  b->head.magic = MS__CALLS_BLOCK_MAGIC;
  b->head.thread = ts->all ? (uint32_t)ts->thr : (uint32_t)ts->h.thread_no;
  ts->calls = b;
  return b;
}

// The file numbers the functions as the recorder does (calls_format.h).
_Static_assert((int)F_FREE == (int)MS__CALLS_FREE && (int)F_MEMALIGN == (int)MS__CALLS_MEMALIGN &&
                   (int)F_REALLOCARRAY == (int)MS__CALLS_REALLOCARRAY &&
                   (int)NFN == (int)MS__CALLS_NFN,
               "recorder/internal.h's F_* are calls_format.h's MS__CALLS_*");

void ms__rec_calls_note(tstate *ts, int fn, uintptr_t old, uintptr_t p, uint64_t n,
                        uint64_t align, int failed) {
  ms__rec_calls_buf *b = buffer(ts);
  if (!b) return;
  if (b->head.bytes + MS__CALLS_MAX_RECORD > sizeof b->data) flush(ts);
  // A thread that makes no rows (another in the heap's scope) has no fresh time of its own.
  int64_t t = ts->is_rec || ts->all ? ts->now : raw_now();
  if (b->head.calls == 0) {  // a block starts from its own time and address
    b->head.t0 = t;
    b->t = t;
    b->addr = 0;
  }
  uint8_t *q0 = b->data + b->head.bytes;
  uint8_t *q = ms__calls_encode(q0, &b->t, &b->addr, t, fn, old, p, n, align, failed);
  b->head.bytes += (uint32_t)(q - q0);
  b->head.calls++;
}

void ms__rec_calls_write(const assembled *A) {
  if (!ms__rec_calls_on && !g_err) return;
  __atomic_store_n(&ms__rec_calls_on, 0, __ATOMIC_RELEASE);
  for (tstate *ts = ms__rec.list; ts; ts = ts->next) flush(ts);
  if (g_fd >= 0) {
    ms__calls_head h = {0};
    memcpy(h.magic, MS__CALLS_MAGIC, sizeof h.magic);
    h.version = MS__CALLS_VERSION;
    h.head_bytes = sizeof h;
    h.calls = g_calls;
    h.bytes = g_off;
    // The trace's time 0: with regions the first one's begin, not the thread's start.
    h.origin_raw = A && A->origin_raw >= 0 ? A->origin_raw : ms__rec.origin_raw;
    h.ns_per_raw = ms__rec.use_tsc && ms__rec.raw_per_ns > 0 ? 1.0 / ms__rec.raw_per_ns : 1.0;
    put_at(&h, sizeof h, 0);
    if (fsync(g_fd) != 0 && !g_err) g_err = errno;
    if (close(g_fd) != 0 && !g_err) g_err = errno;
    g_fd = -1;
  }
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s.calls", ms__rec.out);  // the staged name (write.c)
  if (!g_err && rename(g_tmp, path) != 0) g_err = errno;
  if (g_err) {
    if (g_tmp[0]) unlink(g_tmp);
    ms__rec_meta("calls.error", "%s.calls: %s", ms__rec.out, strerror(g_err));
    return;
  }
  ms__rec_meta("calls.file", "%s", path);
  ms__rec_meta("calls.count", "%llu", (unsigned long long)g_calls);
  ms__rec_meta("calls.bytes_per_call", "%.2f",
               g_calls ? (double)(g_off - sizeof(ms__calls_head)) / (double)g_calls : 0.0);
}

void ms__rec_calls_abort(void) {
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
  if (g_tmp[0]) unlink(g_tmp);
}

void ms__rec_calls_forked(void) {
  __atomic_store_n(&ms__rec_calls_on, 0, __ATOMIC_RELAXED);
  if (g_fd >= 0) close(g_fd);  // the child's copy: the parent's stays open
  g_fd = -1;
  g_tmp[0] = '\0';
  g_err = 0;
}
