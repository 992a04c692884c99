// The stub's heap: one block resized with realloc(), measured with mallinfo2.
//
// glibc 2.36 pitfalls this file handles (docs/runtime.md has the details):
// - mallinfo2 counts chunks held in the per-thread tcache as in use, and
//   realloc frees split-off remainders and moved-from chunks into the tcache,
//   so the measured heap would drift above the block. Filling every tcache
//   bin before the baseline makes later frees bypass it.
// - realloc keeps a chunk 16 bytes larger than asked when the difference is
//   below glibc's 32-byte minimum chunk; a grow-then-shrink corrects it.
// - the block is never freed during the replay (realloc(p, 0) frees; a new
//   malloc would take from the tcache), so the heap offset stays constant.
#include <errno.h>
#include <malloc.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "malloc_model.h"
#include "prim.h"

// Keeps malloc/free pairs below from being optimised away.
static void *volatile sink;

int64_t ms__rt_heap_inuse(void) { return ms__prim_heap_in_use(); }

int64_t ms__rt_heap_usable(const ms__rt_heap *h) { return (int64_t)h->usable; }

// malloc_usable_size of the block, asked once per change of the block: each
// point's resize and measuring read h->usable.
static void set_block(ms__rt_heap *h, char *p) {
  h->block = p;
#if defined(__GLIBC__)
  h->usable = malloc_usable_size(p);
#endif
}

/* Fill the tcache bin of chunk size `chunk`: allocate b chunks (the first
 * come out of the tcache), free them all, and stop once a free makes the heap
 * in use drop, i.e. went past a full tcache bin into the arena. Returns how
 * many frees the tcache took in the last round, -1 if it never filled within
 * cap chunks, or -ENOMEM. */
static int64_t fill_bin(size_t chunk, void **scratch, size_t cap) {
  size_t req = (size_t)ms__malloc_chunk_usable((int64_t)chunk);
  for (size_t b = 8; b <= cap; b *= 2) {
    size_t got = 0;
    for (; got < b; got++) {
      scratch[got] = malloc(req);
      if (!scratch[got]) break;
      sink = scratch[got];
    }
    int64_t before = ms__rt_heap_inuse();
    for (size_t i = 0; i < got; i++) free(scratch[i]);
    if (got < b) return -ENOMEM;
    int64_t drop = before - ms__rt_heap_inuse();
    if (drop > 0) return (int64_t)b - drop / (int64_t)chunk;
  }
  return -1;
}

int ms__rt_heap_prepare(ms__rt_heap *h, void **scratch, size_t nscratch) {
  *h = (ms__rt_heap){.tcache = MEMSTUB_TCACHE_UNKNOWN};
  // The thread's first malloc creates its arena and tcache: a one-off jump
  // that must come before the baseline.
  char *block = malloc(MS__RT_HEAP_PAD);
  if (!block) return -ENOMEM;
  set_block(h, block);
  ((volatile char *)h->block)[0] = 'a';
  ((volatile char *)h->block)[MS__RT_HEAP_PAD - 1] = 'a';
  // Does mallinfo2 see this allocator? (Not under ASan, nor another malloc.)
  // The probe also shapes the arena the replay starts from, and calibration
  // measures replays: without it test_calib's cold heap_alloc_fault was no
  // longer above heap_alloc_nofault (3 runs of 3). It stays, two calls the
  // component never made (docs/runtime.md, "Work").
  int64_t a = ms__rt_heap_inuse();
  void *probe = malloc(64 * 1024);
  if (!probe) return -ENOMEM;
  sink = probe;
  int64_t b = ms__rt_heap_inuse();
  free(probe);
  h->visible = b - a >= 64 * 1024;
  if (!h->visible) return 0;
  // glibc's tcache bins hold chunks of 32 to 1040 bytes.
  int64_t cached = 0;
  int unfilled = 0;
  for (size_t chunk = MS__MALLOC_MIN_CHUNK; chunk <= MS__MALLOC_TCACHE_MAX_CHUNK;
       chunk += MS__MALLOC_ALIGN) {
    int64_t k = fill_bin(chunk, scratch, nscratch);
    if (k == -ENOMEM) return -ENOMEM;
    if (k < 0) unfilled = 1;
    else cached += k;
  }
  h->tcache = unfilled ? MEMSTUB_TCACHE_UNFILLED : cached > 0 ? MEMSTUB_TCACHE_FILLED
                                                              : MEMSTUB_TCACHE_OFF;
  return 0;
}

// Whether malloc_usable_size u belongs to an mmapped chunk (whole pages).
static int mmapped_usable(size_t u) {
  return ms__malloc_usable_is_mmapped((int64_t)u, ms__prim_page_size());
}

/* After a shrink of the block that moved [hole, hole + len) out (resident.c):
 * a block that still reaches into the hole (glibc's realloc did not shrink
 * it, or failed) gets fresh pages mapped there (written by nobody, so not
 * resident), so that no byte of a live chunk is unmapped. */
static void refill(const ms__rt_heap *h, const char *old, uintptr_t hole, size_t len) {
  if (len && h->block == old && (uintptr_t)h->block + h->usable > hole)
    mmap((void *)hole, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

/* Before an arena block shrinks to a request of t bytes: a shrink that
 * splits off a remainder of a tcache chunk's size (32 to 1040 bytes) frees
 * it into the tcache (its bin is short of full whenever the thread took a
 * chunk of that size since prepare filled it) or a fastbin (up to 128
 * bytes), where it counts as in use, right behind the block: the block's
 * next growth cannot extend in place and moves to the arena's top, leaving
 * its old chunk free. The replay thread's arena of the bundled synthetic
 * trace (1 MiB peak) held 2.8 MB, 7.1 MB at --heap-scale 0.5 (204 free
 * chunks): a stub's peak RssAnon of 4.0 MB, 7.6 MB for the halved heap.
 * Growing the block first by a tcache chunk makes the shrink's remainder too
 * large for either, so it merges with what follows (the top, or a free
 * chunk): 270 KB and 680 KB, peak RssAnon 1.6 and 1.5 MB. */
static void avoid_small_remainder(ms__rt_heap *h, size_t t) {
  int64_t cur = (int64_t)h->usable + MS__MALLOC_BLOCK_OVERHEAD, want = ms__malloc_chunk((int64_t)t);
  int64_t rem = cur - want;
  if (rem < MS__MALLOC_MIN_CHUNK || rem > MS__MALLOC_TCACHE_MAX_CHUNK) return;
  char *q = realloc(h->block, h->usable + MS__MALLOC_TCACHE_MAX_CHUNK);
  if (q) set_block(h, q);
  h->regrown++;
}

int ms__rt_heap_resize(ms__rt_heap *h, int64_t size) {
  size_t t = (size_t)size + MS__RT_HEAP_PAD;
#if defined(__GLIBC__)
  // Resident data: a heap fall keeps the written pages the shrink would
  // unmap (the target decides later whether they go).
  uintptr_t hole = 0;
  size_t hole_len = 0;
  const char *old = h->block;
  if (h->res && h->visible && size < h->size && mmapped_usable(h->usable))
    ms__rt_res_keep_heap(h->res, h, size, ms__prim_page_size(), &hole, &hole_len);
  // realloc keeps an mmapped block mmapped however small it gets (mremap),
  // a page at least. Below glibc's smallest mmap threshold the block moves
  // back into the arena as a freed buffer's successor would: calloc, which
  // unlike malloc never takes from the tcache, then copy and free.
  size_t u = h->usable;
  if (h->visible && t < MS__MALLOC_MMAP_THRESHOLD && mmapped_usable(u)) {
    char *q = calloc(1, t);
    if (!q) {
      refill(h, old, hole, hole_len);
      return -ENOMEM;
    }
    memcpy(q, h->block, t < u ? t : u);
    free(h->block);
    set_block(h, q);
    h->size = size;
    h->unmaps++;
    // A fragmented arena (a stub's allocator calls, issue 14) may hand calloc
    // a free chunk 16 bytes too large: the fix-up below corrects it too.
    u = h->usable;
    goto fixup;
  }
  if (h->visible && !mmapped_usable(u)) avoid_small_remainder(h, t);
#endif
  char *p = realloc(h->block, t);
#if defined(__GLIBC__)
  if (!p) refill(h, old, hole, hole_len);
#endif
  if (!p) return -ENOMEM;
  set_block(h, p);
#if defined(__GLIBC__)
  refill(h, old, hole, hole_len);
#endif
  h->size = size;
  if (!h->visible) return 0;
#if defined(__GLIBC__)
  u = h->usable;
  if (mmapped_usable(u)) {
    // An mmapped chunk is whole pages: it exceeds the replayed size by up to
    // a page plus the pad and its header beyond the baseline chunk. When that
    // is more than a page, a page less still holds size + 8 bytes.
    long page = ms__prim_page_size();
    int64_t chunk = (int64_t)u + MS__MALLOC_MMAP_HEADER, base = ms__malloc_chunk(MS__RT_HEAP_PAD);
    if (chunk - base - size > page) {
      char *q = realloc(p, (size_t)ms__malloc_mmap_request_max(chunk - page));
      if (q) set_block(h, q);
      h->trims++;
    }
    return 0;
  }
fixup:;
  char *p_ = h->block;
  size_t want = (size_t)ms__malloc_arena_usable((int64_t)t);
  if (u != want + MS__MALLOC_ALIGN) return 0;
  // glibc kept a remainder below its minimum chunk. Grow by 32 (in place or
  // moved), then shrink: that split always has room and leaves the exact chunk.
  h->fixups++;
  p = p_;
  char *q = realloc(p, t + MS__MALLOC_MIN_CHUNK);
  if (q) {
    p = q;
    q = realloc(p, t);
    if (q) p = q;
  }
  set_block(h, p);
  if (h->usable != want) h->stuck++;
#endif
  return 0;
}

void ms__rt_heap_touch(ms__rt_heap *h, int64_t from, int64_t to) {
  // Block offsets: the block holds the replayed bytes plus the pad at its end.
  from += MS__RT_HEAP_PAD;
  to += MS__RT_HEAP_PAD;
  if (to <= from) return;
  volatile char *q = h->block;
  long page = ms__prim_page_size();
  for (int64_t off = from; off < to; off += page) q[off] = 'a';
  q[to - 1] = 'a';
}

void ms__rt_heap_release(ms__rt_heap *h) {
  free(h->block);
  h->block = NULL;
}
