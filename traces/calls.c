/* traces/calls.c: the calls file's reader (calls.h). */
#include "calls.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ms_common.h"

struct ms__calls {
  char *path;
  char *buf;
  size_t len;
  size_t off;         // the next byte to decode
  size_t block_end;   // the end of the open block (0: none open)
  uint32_t left;      // calls left in the open block
  ms__calls_block blk;
  int64_t t;          // the last call's time, clock units
  uint64_t addr;      // the last address of the block
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
  c->off = sizeof c->head;
  *out = c;
  return 0;
}

// An unsigned LEB128 varint at c->off (before the block's end) into *v; 0 or -1.
static int varint(ms__calls *c, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64 && c->off < c->block_end; shift += 7) {
    uint8_t b = (uint8_t)c->buf[c->off++];
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
static int address(ms__calls *c, int odd, uint64_t *a) {
  uint64_t z;
  if (varint(c, &z) < 0) return -1;
  int64_t d = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
  *a = c->addr + (uint64_t)d * (odd ? 1 : 16);
  c->addr = *a;
  return 0;
}

// The next block's head, checked; 0 or a negative errno.
static int open_block(ms__calls *c, memstub_error *err) {
  size_t at = c->off;
  if (c->len - c->off < sizeof c->blk) return fail(c, at, err, "truncated block head");
  memcpy(&c->blk, c->buf + c->off, sizeof c->blk);
  if (c->blk.magic != MS__CALLS_BLOCK_MAGIC) return fail(c, at, err, "not a block (magic)");
  if (c->blk.calls == 0) return fail(c, at + 8, err, "a block of no calls");
  c->off += sizeof c->blk;
  if (c->blk.bytes > c->len - c->off) return fail(c, at + 12, err, "the block runs past the file");
  if (c->blk.bytes < c->blk.calls) return fail(c, at + 12, err, "fewer bytes than calls");
  c->block_end = c->off + c->blk.bytes;
  c->left = c->blk.calls;
  c->t = c->blk.t0;
  c->addr = 0;
  return 0;
}

int ms__calls_next(ms__calls *c, ms__call *call, memstub_error *err) {
  if (c->left == 0) {
    if (c->block_end && c->off != c->block_end)
      return fail(c, c->off, err, "bytes left over after the block's calls");
    if (c->off == c->len) {
      if (c->seen != c->head.calls)
        return memstub_error_set(err, -EINVAL, "%s: %llu calls, the head says %llu", c->path,
                                 (unsigned long long)c->seen, (unsigned long long)c->head.calls);
      return 0;
    }
    int rc = open_block(c, err);
    if (rc < 0) return rc;
  }
  size_t at = c->off;
  if (c->off >= c->block_end) return fail(c, at, err, "the block ends before its calls");
  uint8_t h = (uint8_t)c->buf[c->off++];
  memset(call, 0, sizeof *call);
  call->fn = h & MS__CALLS_FN_MASK;
  call->thread = c->blk.thread;
  call->failed = (h & MS__CALLS_FAILED) != 0;
  int odd = (h & MS__CALLS_ODD) != 0, null = (h & MS__CALLS_NULL) != 0;
  if (call->fn >= MS__CALLS_NFN) return fail(c, at, err, "unknown function");
  int is_free = call->fn == MS__CALLS_FREE;
  int is_realloc = call->fn == MS__CALLS_REALLOC || call->fn == MS__CALLS_REALLOCARRAY;
  if (null && !is_free && !is_realloc) return fail(c, at, err, "a NULL flag on an allocation");
  if (is_free && call->failed) return fail(c, at, err, "a failed free");
  uint64_t v;
  if (h & MS__CALLS_TIME) {
    if (varint(c, &v) < 0 || v > INT64_MAX / 2) return fail(c, at, err, "bad time advance");
    c->t += (int64_t)v;
  }
  if ((is_free || is_realloc) && !null && address(c, odd, &call->old) < 0)
    return fail(c, at, err, "bad address");
  if (!is_free && varint(c, &call->size) < 0) return fail(c, at, err, "bad size");
  if ((call->fn == MS__CALLS_POSIX_MEMALIGN || call->fn == MS__CALLS_ALIGNED_ALLOC ||
       call->fn == MS__CALLS_MEMALIGN) && varint(c, &call->align) < 0)
    return fail(c, at, err, "bad alignment");
  if (!is_free && !call->failed && address(c, odd, &call->addr) < 0)
    return fail(c, at, err, "bad address");
  if (!is_free && !call->failed && call->addr == 0)
    return fail(c, at, err, "a block returned at address 0");
  call->t_ns = llround((double)(c->t - c->head.origin_raw) * c->head.ns_per_raw);
  c->left--;
  c->seen++;
  return 1;
}

const ms__calls_head *ms__calls_head_of(const ms__calls *c) { return &c->head; }

void ms__calls_close(ms__calls *c) {
  if (!c) return;
  free(c->buf);
  free(c->path);
  free(c);
}
