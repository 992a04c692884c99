/* traces/calls_format.h: the layout of TRACE.calls, the allocation sequence
 * (docs/formats.md, "The calls file"), shared by its writer (the recorder,
 * recorder/calls.c) and its reader (traces/calls.c). Header only.
 *
 * The file: a head (ms__calls_head), then blocks, each a block head and its
 * calls encoded one after another. A block holds one thread's calls in order;
 * blocks of one thread appear in order, those of different threads
 * interleaved. Each call: a head byte (the function in the low 4 bits, the
 * flags above), then unsigned LEB128 varints:
 *   time advance in clock units since the call before it in the block, when
 *     MS__CALLS_TIME is set (the first call's time is the block's t0);
 *   free: the address (unless MS__CALLS_NULL: free(NULL));
 *   realloc, reallocarray: the old address (unless MS__CALLS_NULL), the
 *     size, the new address (unless MS__CALLS_FAILED: none returned; with
 *     size 0 the old block was freed, else it is kept);
 *   the others: the size, the alignment (posix_memalign, aligned_alloc,
 *     memalign), the address (unless MS__CALLS_FAILED).
 * An address is a zigzag varint of its difference from the block's previous
 * address (0 before the first), divided by 16 unless MS__CALLS_ODD (then
 * the call's differences are whole). */
#ifndef MEMSTUB_TRACES_CALLS_FORMAT_H
#define MEMSTUB_TRACES_CALLS_FORMAT_H

#include <stdint.h>

#define MS__CALLS_MAGIC "MSCALLS1"  // 8 bytes, no terminator
#define MS__CALLS_VERSION 1
#define MS__CALLS_BLOCK_MAGIC 0x4b4c4243u  // "CBLK"

// The functions, in the recorder's order (recorder/internal.h, F_*).
#define MS__CALLS_FN_NAMES                                                                 \
  "malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc", "memalign",    \
      "valloc", "pvalloc", "reallocarray"
enum {
  MS__CALLS_MALLOC,
  MS__CALLS_CALLOC,
  MS__CALLS_REALLOC,
  MS__CALLS_FREE,
  MS__CALLS_POSIX_MEMALIGN,
  MS__CALLS_ALIGNED_ALLOC,
  MS__CALLS_MEMALIGN,
  MS__CALLS_VALLOC,
  MS__CALLS_PVALLOC,
  MS__CALLS_REALLOCARRAY,
  MS__CALLS_NFN
};

// The head byte's flags.
#define MS__CALLS_FN_MASK 0x0f
#define MS__CALLS_TIME 0x10    // a time advance follows
#define MS__CALLS_ODD 0x20     // address differences not divided by 16
#define MS__CALLS_FAILED 0x40  // no block returned
#define MS__CALLS_NULL 0x80    // free(NULL), or realloc of NULL

// The most bytes one call takes: a head byte and four varints of 10 bytes.
#define MS__CALLS_MAX_RECORD 41

typedef struct ms__calls_head {
  char magic[8];        // MS__CALLS_MAGIC
  uint32_t version;     // MS__CALLS_VERSION
  uint32_t head_bytes;  // sizeof(ms__calls_head)
  uint64_t calls;       // calls in all the blocks
  uint64_t bytes;       // the file's size
  int64_t origin_raw;   // the trace's time 0, in clock units
  double ns_per_raw;    // nanoseconds per clock unit
  uint64_t reserved[2];
} ms__calls_head;

typedef struct ms__calls_block {
  uint32_t magic;   // MS__CALLS_BLOCK_MAGIC
  uint32_t thread;  // the trace's thread number (--thread all), else the recorder's thread order
  uint32_t calls;   // calls encoded in the block
  uint32_t bytes;   // their bytes, after this head
  int64_t t0;       // the first call's time, in clock units
} ms__calls_block;

/* One call encoded at q (room for MS__CALLS_MAX_RECORD bytes) after the
 * block's call before it, whose time and last address are *bt and *baddr
 * (a block's first call: *bt its t0, *baddr 0); both moved on. fn: MS__CALLS_*;
 * old: the block given (free, realloc; 0 NULL); p: the block returned (0
 * failed); n, align as called. Returns the end. Shared by the recorder and
 * the importers' writer (calls_write.c). */
static inline uint8_t *ms__calls_varint(uint8_t *q, uint64_t v) {
  while (v >= 0x80) {
    *q++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *q++ = (uint8_t)v;
  return q;
}

static inline uint64_t ms__calls_zigzag(int64_t v) {
  return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline uint8_t *ms__calls_encode(uint8_t *q, int64_t *bt, uintptr_t *baddr, int64_t t,
                                        int fn, uintptr_t old, uintptr_t p, uint64_t n,
                                        uint64_t align, int failed) {
  // The addresses written, each as a delta from the one before it.
  int is_realloc = fn == MS__CALLS_REALLOC || fn == MS__CALLS_REALLOCARRAY;
  int gives = fn == MS__CALLS_FREE || is_realloc;
  int64_t d[2];
  int nd = 0;
  uintptr_t last = *baddr;
  if (gives && old) d[nd++] = (int64_t)(old - last), last = old;
  if (fn != MS__CALLS_FREE && !failed) d[nd++] = (int64_t)(p - last), last = p;
  int odd = ((nd > 0 ? d[0] : 0) | (nd > 1 ? d[1] : 0)) & 15;
  uint8_t h = (uint8_t)fn;
  if (t != *bt) h |= MS__CALLS_TIME;
  if (odd) h |= MS__CALLS_ODD;
  if (failed) h |= MS__CALLS_FAILED;
  if (gives && !old) h |= MS__CALLS_NULL;
  *q++ = h;
  if (t != *bt) q = ms__calls_varint(q, (uint64_t)(t - *bt));
  *bt = t;
  int sh = odd ? 0 : 4, k = 0;
  if (gives && old) q = ms__calls_varint(q, ms__calls_zigzag(d[k++] >> sh));
  if (fn != MS__CALLS_FREE) q = ms__calls_varint(q, n);
  if (fn == MS__CALLS_POSIX_MEMALIGN || fn == MS__CALLS_ALIGNED_ALLOC || fn == MS__CALLS_MEMALIGN)
    q = ms__calls_varint(q, align);
  if (k < nd) q = ms__calls_varint(q, ms__calls_zigzag(d[k] >> sh));
  *baddr = last;
  return q;
}

#endif
