/* traces/calls.c: the calls file's reader (calls.h). */
#include "calls.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ms_common.h"

/* A place in the file's calls: the open block, the next byte, the block's
 * time and address so far. The file's order has one; the calls in time
 * order (ms__calls_open_merged) one a thread, over that thread's blocks. */
typedef struct cursor {
  size_t off;         // the next byte to decode
  size_t block_end;   // the end of the open block (0: none open)
  uint32_t left;      // calls left in the open block
  ms__calls_block blk;
  int64_t t;          // the last call's time, clock units
  uint64_t addr;      // the last address of the block
  size_t *blocks;     // merged: the thread's blocks (their heads' offsets) in order
  size_t nblocks, bi;  // ... how many, the next one to open
  int peeked;         // merged: call holds the cursor's next call (1), its end (0), an error (-1)
  ms__call call;
  size_t at;          // merged: the byte call was at (file order for ties)
} cursor;

struct ms__calls {
  char *path;
  char *buf;
  size_t len;
  cursor cur;         // the file's order
  cursor *th;         // merged: one a thread
  size_t nth;
  ms__addrmap live;   // merged: the blocks live in the order given so far
  uint64_t repaired;  // merged: calls given before an earlier-timed one (merged_next)
  uint64_t seen;      // calls decoded
  ms__calls_head head;
};

static int fail(ms__calls *c, size_t at, memstub_error *err, const char *what) {
  return memstub_error_set(err, -EINVAL, "%s: byte %zu: %s", c->path, at, what);
}

int ms__calls_open(const char *path, ms__calls **out, memstub_error *err) {
  *out = NULL;
  ms__calls *c = calloc(1, sizeof *c);
  if (!c || !(c->path = strdup(path))) {
    free(c);
    return memstub_error_set(err, -ENOMEM, "%s: out of memory", path);
  }
  int rc = ms__read_file(path, &c->buf, &c->len, err);
  if (rc < 0) {
    ms__calls_close(c);
    return rc;
  }
  if (c->len < sizeof c->head) {
    rc = fail(c, c->len, err, "truncated: shorter than the calls file's head");
  } else {
    memcpy(&c->head, c->buf, sizeof c->head);
    if (memcmp(c->head.magic, MS__CALLS_MAGIC, sizeof c->head.magic) != 0)
      rc = fail(c, 0, err, "not a memstub calls file (magic)");
    else if (c->head.version != MS__CALLS_VERSION)
      rc = memstub_error_set(err, -EINVAL, "%s: version %u, this memstub reads version %d",
                             path, c->head.version, MS__CALLS_VERSION);
    else if (c->head.head_bytes != sizeof c->head)
      rc = fail(c, 12, err, "head size is not this version's");
    else if (c->head.bytes != c->len)
      rc = memstub_error_set(err, -EINVAL, "%s: %zu bytes, the head says %llu (truncated or "
                             "extended)", path, c->len, (unsigned long long)c->head.bytes);
    else if (!(c->head.ns_per_raw > 0) || !isfinite(c->head.ns_per_raw))
      rc = fail(c, 40, err, "the clock's nanoseconds per unit is not a positive number");
  }
  if (rc < 0) {
    ms__calls_close(c);
    return rc;
  }
  c->cur.off = sizeof c->head;
  *out = c;
  return 0;
}

// An unsigned LEB128 varint at u->off (before the block's end) into *v; 0 or -1.
static int varint(const ms__calls *c, cursor *u, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64 && u->off < u->block_end; shift += 7) {
    uint8_t b = (uint8_t)c->buf[u->off++];
    if (shift == 63 && b > 1) return -1;  // beyond 64 bits
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

// An address: a zigzag difference from the last one (times 16 unless odd).
static int address(const ms__calls *c, cursor *u, int odd, uint64_t *a) {
  uint64_t z;
  if (varint(c, u, &z) < 0) return -1;
  int64_t d = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
  *a = u->addr + (uint64_t)d * (odd ? 1 : 16);
  u->addr = *a;
  return 0;
}

// The block whose head is at u->off, checked and opened; 0 or a negative errno.
static int open_block(ms__calls *c, cursor *u, memstub_error *err) {
  size_t at = u->off;
  if (c->len - u->off < sizeof u->blk) return fail(c, at, err, "truncated block head");
  memcpy(&u->blk, c->buf + u->off, sizeof u->blk);
  if (u->blk.magic != MS__CALLS_BLOCK_MAGIC) return fail(c, at, err, "not a block (magic)");
  if (u->blk.calls == 0) return fail(c, at + 8, err, "a block of no calls");
  u->off += sizeof u->blk;
  if (u->blk.bytes > c->len - u->off) return fail(c, at + 12, err, "the block runs past the file");
  if (u->blk.bytes < u->blk.calls) return fail(c, at + 12, err, "fewer bytes than calls");
  u->block_end = u->off + u->blk.bytes;
  u->left = u->blk.calls;
  u->t = u->blk.t0;
  u->addr = 0;
  return 0;
}

// The call at u->off of its open block (calls left) into *call. 0 or -EINVAL.
static int decode(ms__calls *c, cursor *u, ms__call *call, memstub_error *err) {
  size_t at = u->off;
  if (u->off >= u->block_end) return fail(c, at, err, "the block ends before its calls");
  uint8_t h = (uint8_t)c->buf[u->off++];
  memset(call, 0, sizeof *call);
  call->fn = h & MS__CALLS_FN_MASK;
  call->thread = u->blk.thread;
  call->failed = (h & MS__CALLS_FAILED) != 0;
  int odd = (h & MS__CALLS_ODD) != 0, null = (h & MS__CALLS_NULL) != 0;
  if (call->fn >= MS__CALLS_NFN) return fail(c, at, err, "unknown function");
  int is_free = call->fn == MS__CALLS_FREE;
  int is_realloc = call->fn == MS__CALLS_REALLOC || call->fn == MS__CALLS_REALLOCARRAY;
  if (null && !is_free && !is_realloc) return fail(c, at, err, "a NULL flag on an allocation");
  if (is_free && call->failed) return fail(c, at, err, "a failed free");
  uint64_t v;
  if (h & MS__CALLS_TIME) {
    if (varint(c, u, &v) < 0 || v > INT64_MAX / 2 ||
        __builtin_add_overflow(u->t, (int64_t)v, &u->t))
      return fail(c, at, err, "bad time advance");
  }
  if ((is_free || is_realloc) && !null && address(c, u, odd, &call->old) < 0)
    return fail(c, at, err, "bad address");
  if (!is_free && varint(c, u, &call->size) < 0) return fail(c, at, err, "bad size");
  if ((call->fn == MS__CALLS_POSIX_MEMALIGN || call->fn == MS__CALLS_ALIGNED_ALLOC ||
       call->fn == MS__CALLS_MEMALIGN) && varint(c, u, &call->align) < 0)
    return fail(c, at, err, "bad alignment");
  if (!is_free && !call->failed && address(c, u, odd, &call->addr) < 0)
    return fail(c, at, err, "bad address");
  if (!is_free && !call->failed && call->addr == 0)
    return fail(c, at, err, "a block returned at address 0");
  // In double: the clock units and the origin may be anything a damaged file holds.
  double ns = ((double)u->t - (double)c->head.origin_raw) * c->head.ns_per_raw;
  if (!(ns > -4.6e18 && ns < 4.6e18))
    return fail(c, at, err, "a time beyond 2^62 ns of the origin");
  call->t_ns = llround(ns);
  u->left--;
  c->seen++;
  return 0;
}

// The count checked at the end of the file's calls: 0, or -EINVAL.
static int at_end(ms__calls *c, memstub_error *err) {
  if (c->seen != c->head.calls)
    return memstub_error_set(err, -EINVAL, "%s: %llu calls, the head says %llu", c->path,
                             (unsigned long long)c->seen, (unsigned long long)c->head.calls);
  return 0;
}

/* Thread u's next call into u->call (peeked 1), or its end (peeked 0): its
 * open block's next call, else its next block's first. 0 or -EINVAL. */
static int peek(ms__calls *c, cursor *u, memstub_error *err) {
  if (u->left == 0) {
    if (u->block_end && u->off != u->block_end)
      return fail(c, u->off, err, "bytes left over after the block's calls");
    if (u->bi == u->nblocks) return u->peeked = 0;
    u->off = u->blocks[u->bi++];
    int rc = open_block(c, u, err);
    if (rc < 0) return rc;
  }
  u->at = u->off;
  int rc = decode(c, u, &u->call, err);
  if (rc < 0) return rc;
  u->peeked = 1;
  return 0;
}

int ms__calls_open_merged(const char *path, ms__calls **out, memstub_error *err) {
  int rc = ms__calls_open(path, out, err);
  if (rc < 0) return rc;
  ms__calls *c = *out;
  // Each block's head in turn: its thread's list.
  for (size_t off = sizeof c->head; rc == 0 && off < c->len;) {
    cursor b = {.off = off};
    if ((rc = open_block(c, &b, err)) < 0) break;
    size_t k = 0;
    while (k < c->nth && c->th[k].blk.thread != b.blk.thread) k++;
    if (k == c->nth) {
      cursor *t = realloc(c->th, (c->nth + 1) * sizeof *t);
      if (!t) {
        rc = memstub_error_set(err, -ENOMEM, "%s: out of memory", path);
        break;
      }
      c->th = t;
      memset(&c->th[c->nth++], 0, sizeof *t);
      c->th[k].blk.thread = b.blk.thread;
    }
    cursor *u = &c->th[k];
    size_t *bl = u->nblocks % 64 ? u->blocks : realloc(u->blocks, (u->nblocks + 64) * sizeof *bl);
    if (!bl) {
      rc = memstub_error_set(err, -ENOMEM, "%s: out of memory", path);
      break;
    }
    u->blocks = bl;
    u->blocks[u->nblocks++] = off;
    off = b.block_end;
  }
  for (size_t k = 0; rc == 0 && k < c->nth; k++) {
    uint32_t thread = c->th[k].blk.thread;
    rc = peek(c, &c->th[k], err);
    c->th[k].blk.thread = thread;
  }
  if (rc < 0) {
    ms__calls_close(c);
    *out = NULL;
  }
  return rc;
}

// Whether call k gives back the block at a (a free, a realloc that moved or freed it).
static int frees(const ms__call *k, uint64_t a) {
  return k->old == a && (k->fn == MS__CALLS_FREE || !k->failed || k->size == 0);
}

// Whether a is live in m (m as it was). -ENOMEM when it cannot be put back.
static int live_has(ms__addrmap *m, uint64_t a) {
  int64_t x, y;
  if (!a || !ms__addrmap_take(m, a, &x, &y)) return 0;
  return ms__addrmap_put(m, a, x, y) < 0 ? -ENOMEM : 1;
}

/* The merged order's next call among the threads' next ones: the earliest
 * (the file's order on a tie), unless another thread's next call must come
 * before it. A call's time is its thread's last clock reading, up to 15
 * calls old, so two threads' calls a microsecond apart can be out of order:
 * a malloc of an address another thread's free gave back, timed before
 * that free (test_calls_threads_in_order failed under ASan in CI: "a block
 * is already live"), or a free of a block another thread's malloc had just
 * returned, timed before it. Then that other call is taken first. */
static cursor *merged_next(ms__calls *c, int *rc) {
  cursor *best = NULL;
  for (size_t k = 0; k < c->nth; k++) {
    cursor *u = &c->th[k];
    if (u->peeked == 1 && (!best || u->call.t_ns < best->call.t_ns ||
                           (u->call.t_ns == best->call.t_ns && u->at < best->at)))
      best = u;
  }
  *rc = 0;
  if (!best) return NULL;
  const ms__call *b = &best->call;
  int has_new = 0, has_old = 0;
  if (b->addr && b->addr != b->old && (has_new = live_has(&c->live, b->addr)) < 0)
    return *rc = has_new, NULL;
  if (b->old && (has_old = live_has(&c->live, b->old)) < 0) return *rc = has_old, NULL;
  int frees_old = b->old && frees(b, b->old);
  for (size_t k = 0; k < c->nth && (has_new || (frees_old && !has_old)); k++) {
    cursor *u = &c->th[k];
    if (u == best || u->peeked != 1) continue;
    if ((has_new && frees(&u->call, b->addr)) ||
        (frees_old && !has_old && u->call.addr == b->old))
      return c->repaired++, u;
  }
  return best;
}

int ms__calls_next(ms__calls *c, ms__call *call, memstub_error *err) {
  if (c->th) {  // merged: in time order, as the heap saw them (merged_next)
    int rc;
    cursor *best = merged_next(c, &rc);
    if (rc < 0) return memstub_error_set(err, rc, "%s: out of memory", c->path);
    if (!best) return at_end(c, err);
    *call = best->call;
    int64_t x;
    if (call->old && frees(call, call->old)) ms__addrmap_take(&c->live, call->old, &x, NULL);
    if (call->addr && ms__addrmap_put(&c->live, call->addr, 0, 0) < 0)
      return memstub_error_set(err, -ENOMEM, "%s: out of memory", c->path);
    rc = peek(c, best, err);
    return rc < 0 ? rc : 1;
  }
  cursor *u = &c->cur;
  if (u->left == 0) {
    if (u->block_end && u->off != u->block_end)
      return fail(c, u->off, err, "bytes left over after the block's calls");
    if (u->off == c->len) return at_end(c, err);
    int rc = open_block(c, u, err);
    if (rc < 0) return rc;
  }
  int rc = decode(c, u, call, err);
  return rc < 0 ? rc : 1;
}

const ms__calls_head *ms__calls_head_of(const ms__calls *c) { return &c->head; }

uint64_t ms__calls_repaired(const ms__calls *c) { return c->repaired; }

void ms__calls_close(ms__calls *c) {
  if (!c) return;
  for (size_t k = 0; k < c->nth; k++) free(c->th[k].blocks);
  free(c->th);
  ms__addrmap_free(&c->live);
  free(c->buf);
  free(c->path);
  free(c);
}
