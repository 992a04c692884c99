/* common/malloc_model.h: glibc's malloc as memstub models it, written once.
 *
 * The replay's heap block (runtime/heap.c), the generator's cost model
 * (generator/compensate.c), calibration and compare all reason about the
 * chunks glibc makes of a request. These are glibc's rules on a 64-bit host
 * (x86-64 and aarch64, glibc 2.26 and later: malloc/malloc.c), named:
 *
 *   - an arena chunk is the request plus SIZE_SZ, rounded up to
 *     MALLOC_ALIGNMENT, and at least MINSIZE (request2size);
 *   - malloc_usable_size of an arena chunk is its size minus SIZE_SZ, the
 *     per-block overhead;
 *   - a request is served from the arena's top chunk while the top has room,
 *     whatever its size; beyond that, a chunk of M_MMAP_THRESHOLD bytes or
 *     more (128 KiB by default, the least glibc's dynamic threshold starts
 *     from) comes from mmap: the chunk plus SIZE_SZ rounded up to whole
 *     pages, with a CHUNK_HDR_SZ header, so its usable size is the mapping
 *     minus that header.
 *
 * Pure arithmetic on int64_t byte counts: the page size is an argument (the
 * caller asks ms__prim_page_size() or a profile), and nothing here reads the
 * running allocator. Arguments stay below 2^61, as every caller's sizes do. */
#ifndef MEMSTUB_COMMON_MALLOC_MODEL_H
#define MEMSTUB_COMMON_MALLOC_MODEL_H

#include <stdint.h>

#define MS__MALLOC_SIZE_SZ 8     // SIZE_SZ: the size field in front of every chunk's bytes
#define MS__MALLOC_ALIGN 16      // MALLOC_ALIGNMENT: chunk sizes are multiples of this
#define MS__MALLOC_MIN_CHUNK 32  // MINSIZE: the smallest chunk
// Bytes an in-use arena chunk holds beyond its usable bytes.
#define MS__MALLOC_BLOCK_OVERHEAD MS__MALLOC_SIZE_SZ
// CHUNK_HDR_SZ: an mmapped chunk's header (prev_size and size) before its usable bytes.
#define MS__MALLOC_MMAP_HEADER (2 * MS__MALLOC_SIZE_SZ)
// M_MMAP_THRESHOLD's default (DEFAULT_MMAP_THRESHOLD_MIN), 128 KiB: a chunk this
// large or larger is mmapped. glibc raises the threshold when a mapped chunk is
// freed (unless mallopt set it), never below this.
#define MS__MALLOC_MMAP_THRESHOLD (128 * 1024)
// The largest chunk a tcache bin holds: 64 bins, 16 bytes apart, from MINSIZE.
#define MS__MALLOC_TCACHE_MAX_CHUNK (MS__MALLOC_MIN_CHUNK + 63 * MS__MALLOC_ALIGN)

// pre: req >= 0. request2size: the arena chunk a request of req bytes takes.
static inline int64_t ms__malloc_chunk(int64_t req) {
  int64_t c = (req + MS__MALLOC_SIZE_SZ + MS__MALLOC_ALIGN - 1) & ~(int64_t)(MS__MALLOC_ALIGN - 1);
  return c < MS__MALLOC_MIN_CHUNK ? MS__MALLOC_MIN_CHUNK : c;
}

// malloc_usable_size of an arena chunk of chunk bytes, and the request that
// fills it exactly.
static inline int64_t ms__malloc_chunk_usable(int64_t chunk) {
  return chunk - MS__MALLOC_BLOCK_OVERHEAD;
}

// malloc_usable_size after an arena serves a request of req bytes.
static inline int64_t ms__malloc_arena_usable(int64_t req) {
  return ms__malloc_chunk_usable(ms__malloc_chunk(req));
}

// Whether a request of req bytes is served by mmap under the given threshold
// (MS__MALLOC_MMAP_THRESHOLD unless mallopt or a freed mapping moved it),
// once the arena's top cannot serve it.
static inline int ms__malloc_is_mmapped(int64_t req, int64_t threshold) {
  return ms__malloc_chunk(req) >= threshold;
}

// pre: page > 0. bytes rounded up to whole pages, in pages.
static inline int64_t ms__malloc_pages(int64_t bytes, int64_t page) {
  return (bytes + page - 1) / page;
}

// pre: page > 0. Bytes glibc maps for a request of req bytes served by mmap:
// the chunk plus SIZE_SZ, rounded up to whole pages.
static inline int64_t ms__malloc_mmap_bytes(int64_t req, int64_t page) {
  return ms__malloc_pages(ms__malloc_chunk(req) + MS__MALLOC_SIZE_SZ, page) * page;
}

// malloc_usable_size of an mmapped chunk of mapped bytes.
static inline int64_t ms__malloc_mmap_usable(int64_t mapped) {
  return mapped - MS__MALLOC_MMAP_HEADER;
}

// The largest request an mapping of mapped bytes (whole pages) still serves.
static inline int64_t ms__malloc_mmap_request_max(int64_t mapped) {
  return mapped - MS__MALLOC_MMAP_HEADER - MS__MALLOC_SIZE_SZ;
}

// pre: page > 0. Whether malloc_usable_size usable belongs to an mmapped chunk:
// those are whole pages less their header; an arena chunk's usable size is
// SIZE_SZ below a multiple of 16, never this.
static inline int ms__malloc_usable_is_mmapped(int64_t usable, int64_t page) {
  return usable > 0 && (usable + MS__MALLOC_MMAP_HEADER) % page == 0;
}

#endif
