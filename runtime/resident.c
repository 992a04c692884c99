// Resident memory of a stub with resident data (layout 2, docs/runtime.md,
// "Resident memory"): the stub's own anonymous mapping for mapped_bytes, and
// which of the heap block's and the mapping's pages are written, so that the
// replay keeps as much resident as the original's rss_bytes says.
//
// The rule: written pages stay where they are as long as the resident
// target R of a point (memRss, above the base) allows it. A target above
// what is written writes the heap block's next bytes first, then the
// mapping's, lowest address first, then a third mapping of the stub's own,
// the keep mapping, that mapped_bytes does not count (the original kept
// more resident than it requested and mapped: its allocator's freed pages).
// A target below drops the keep mapping's last pages first, then the
// mapping's, then the block's (madvise(MADV_DONTNEED)). A heap fall whose
// target stays keeps its pages: the written pages of a shrinking mmapped
// block move into the keep mapping (mremap, no fault), those of an arena
// block are written again there. A target of -1 (a trace with mapped_bytes
// but no rss_bytes) touches everything, as a stub without resident data does.
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "internal.h"
#include "resident_rule.h"
#include "prim.h"

static int64_t page_up(int64_t v, long page) { return (v + page - 1) / page * page; }

// Ranges of this many pages and more are faulted in with one madvise.
#define POPULATE_PAGES 64

/* Write one byte per page of p[from, to) and its last byte. A long range
 * is faulted in with one madvise(MADV_POPULATE_WRITE) (prim.h): about 25 %
 * less a page than a fault each from 64 pages on (0.95 against 1.25 us a
 * page on the development VM), the page loop where the kernel has none. */
static void touch(char *p, int64_t from, int64_t to, long page) {
  if (to <= from) return;
  if (to - from >= POPULATE_PAGES * (int64_t)page &&
      ms__prim_prefault(p + from, (size_t)(to - from), 0) == 0)
    return;
  volatile char *q = p;
  for (int64_t off = from; off < to; off += page) q[off] = 'a';
  q[to - 1] = 'a';
}

/* Drop the pages of p[from, to), where nothing at or beyond to is to stay
 * resident and p[0, limit) is the region's to drop (to <= limit): the page
 * holding from stays (it holds bytes below from); the one holding to - 1
 * goes too when it ends within the limit (else a drop by drop fall would
 * leave one page behind each time). What lies beyond limit (an arena's next
 * chunk header) is never dropped. */
static void drop(char *p, int64_t from, int64_t to, int64_t limit, long page) {
  uintptr_t mask = ~((uintptr_t)page - 1);
  uintptr_t a = ((uintptr_t)(p + from) + (uintptr_t)page - 1) & mask;
  uintptr_t b = ((uintptr_t)(p + to) + (uintptr_t)page - 1) & mask;
  if (b > (uintptr_t)(p + limit)) b = (uintptr_t)(p + to) & mask;
  if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

int ms__rt_res_mapped(ms__rt_res *r, int64_t delta, long page) {
  if (delta == 0) return 0;
  int64_t len = r->map_len + delta;
  if (len < 0) len = 0;
  size_t cap = (size_t)page_up(len, page);
  if (cap != r->map_cap) {
    void *p;
    if (cap == 0) {
      munmap(r->map, r->map_cap);
      p = NULL;
    } else if (!r->map) {
      p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return -errno;
    } else {
      p = mremap(r->map, r->map_cap, cap, MREMAP_MAYMOVE);
      if (p == MAP_FAILED) return -errno;
    }
    r->map = p;
    r->map_cap = cap;
    r->maps++;
  }
  if (r->mapped_all) __atomic_add_fetch(r->mapped_all, len - r->map_len, __ATOMIC_RELAXED);
  r->map_len = len;
  if (r->map_touched > len) r->map_touched = len;
  return 0;
}

// The highest target of the replay (0 when there is none).
static int64_t peak_target(const ms__rt_res *r) {
  int64_t p = 0;
  for (int64_t i = 0; r->rss && i < r->n; i++)
    if (r->rss[i] > p) p = r->rss[i];
  return p;
}

/* The keep mapping at least len bytes long (whole pages; it never shrinks,
 * and a move keeps its written pages). It is reserved once for the replay's
 * highest target (MAP_NORESERVE: untouched pages cost nothing), since pages
 * moved into it make it several mappings that mremap cannot grow. 0 or
 * -errno (it stays as it was). */
static int keep_room(ms__rt_res *r, int64_t len, long page) {
  size_t cap = (size_t)page_up(len, page);
  if (cap <= r->keep_cap) return 0;
  if (r->keep_split) return -ENOMEM;
  void *p;
  if (r->keep) {
    p = mremap(r->keep, r->keep_cap, cap, MREMAP_MAYMOVE);
  } else {
    size_t want = (size_t)page_up(peak_target(r), page) + 64 * (size_t)page;
    if (want < cap) want = cap;
    p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED && want > cap)
      p = mmap(NULL, want = cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cap = want;
  }
  if (p == MAP_FAILED) return -errno;
  r->keep = p;
  r->keep_cap = cap;
  r->maps++;
  return 0;
}

void ms__rt_res_keep_heap(ms__rt_res *r, const ms__rt_heap *h, int64_t size, long page,
                          uintptr_t *hole, size_t *len) {
  *hole = 0;
  *len = 0;
  int64_t ht = r->heap_touched < h->size ? r->heap_touched : h->size;
  uintptr_t data = (uintptr_t)h->block + MS__RT_HEAP_PAD, pg = (uintptr_t)page;
  // glibc's shrunken chunk (its 16-byte header before the block, size +
  // pad bytes, whole pages) ends at or below a: nothing it keeps is moved.
  uintptr_t a = ((uintptr_t)h->block + (uintptr_t)size + MS__RT_HEAP_PAD + 16 + pg - 1) & ~(pg - 1);
  uintptr_t b = (data + (uintptr_t)ht + pg - 1) & ~(pg - 1);
  if (b <= a) return;
  size_t n = b - a;
  int64_t off = page_up(r->keep_touched, page);
  if (keep_room(r, off + (int64_t)n, page) < 0) return;
  void *q = mremap((void *)a, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, r->keep + off);
  if (q == MAP_FAILED) return;
  r->keep_split = 1;
  r->keep_touched = off + (int64_t)n;
  r->keep_moved += (int64_t)n;
  r->heap_touched = (int64_t)(a - data) < ht ? (int64_t)(a - data) : ht;
  r->maps++;
  *hole = a;
  *len = n;
}

/* The written bytes [0, *touched) of the region at p (limit bytes long)
 * made [0, want): the difference written, or dropped (counted in
 * r->released). */
static void settle(ms__rt_res *r, char *p, int64_t *touched, int64_t want, int64_t limit,
                   long page) {
  if (want > *touched) {
    touch(p, *touched, want, page);
  } else if (want < *touched) {
    drop(p, want, *touched, limit, page);
    r->released++;
  }
  *touched = want;
}

int ms__rt_res_target(ms__rt_res *r, ms__rt_heap *h, int64_t target, long page,
                      int64_t *keep_need) {
  h->res = r;  // the heap's shrinks hand their written pages over from now on
  int64_t heap = h->size;
  if (r->heap_touched > heap) r->heap_touched = heap;  // a shrink took the rest
  int64_t want_h = heap, want_m = r->map_len, want_k = 0;
  if (target >= 0) {
    // What is written stays; the difference is written or dropped.
    want_h = r->heap_touched;
    want_m = r->map_touched;
    want_k = r->keep_touched;
    ms__res_settle(target, heap, r->map_len, &want_h, &want_m, &want_k);
  }
  int rc;
  if (want_k > r->keep_touched && (rc = keep_room(r, want_k, page)) < 0) {
    *keep_need = want_k;
    return rc;  // a target it cannot reach: the replay stops (never short without a word)
  }
  settle(r, r->keep, &r->keep_touched, want_k, (int64_t)r->keep_cap, page);
  // Heap block offsets: the replayed bytes start after the pad, and the
  // chunk ends with the block's usable bytes.
  settle(r, h->block + MS__RT_HEAP_PAD, &r->heap_touched, want_h,
         (int64_t)h->usable - MS__RT_HEAP_PAD, page);
  settle(r, r->map, &r->map_touched, want_m, (int64_t)r->map_cap, page);
  return 0;
}

int ms__rt_res_extra(ms__rt_res *r, int64_t map_want, int64_t keep_want, long page,
                     int64_t *keep_need) {
  int rc;
  if (keep_want > r->keep_touched && (rc = keep_room(r, keep_want, page)) < 0) {
    *keep_need = keep_want;
    return rc;
  }
  settle(r, r->keep, &r->keep_touched, keep_want, (int64_t)r->keep_cap, page);
  settle(r, r->map, &r->map_touched, map_want, (int64_t)r->map_cap, page);
  return 0;
}

void ms__rt_res_release(ms__rt_res *r) {
  if (r->mapped_all) __atomic_sub_fetch(r->mapped_all, r->map_len, __ATOMIC_RELAXED);
  if (r->map) munmap(r->map, r->map_cap);
  if (r->keep) munmap(r->keep, r->keep_cap);
  r->keep = NULL;
  r->keep_cap = 0;
  r->keep_touched = 0;
  r->keep_split = 0;
  ms__prim_statm_close(r->statm_fd);
  r->statm_fd = -1;
  r->map = NULL;
  r->map_cap = 0;
  r->map_len = r->map_touched = r->heap_touched = 0;
}

/* ---- measuring (MEMSTUB_MEASURE_RESIDENT) ----------------------------------
 * The recorder's readings (recorder/memory.c): RssAnon from an open
 * /proc/self/statm, faults from getrusage(RUSAGE_THREAD). mapped_bytes is the
 * stub's own mapping: the only anonymous memory it maps outside malloc. */

void ms__rt_res_meter_open(ms__rt_res *r) {
  int fd = ms__prim_statm_open();
  r->statm_fd = fd >= 0 ? fd : -1;
}

void ms__rt_res_baseline(ms__rt_res *r) {
  r->rss0 = r->rss0_common >= 0 ? r->rss0_common
           : r->statm_fd >= 0    ? ms__prim_statm_anon(r->statm_fd)
                                 : -1;
  if (ms__prim_thread_faults(&r->minflt0, &r->majflt0) < 0) r->minflt0 = r->majflt0 = -1;
}

void ms__rt_res_measure_point(const ms__rt_ctx *c, int64_t x, memstub_replay_record *rec) {
  const struct memAlloc *u = &c->use[x];
  const ms__rt_res *r = &c->res;
  // Threads: the process's figures move with the other threads' points too.
  /* The point before a row's last one meets no target of its own (the call
   * replay meets a row's target at its last point): a point after it is read
   * again, as is one that makes calls. */
  const struct memstub_stub *s = c->stub;
  int met_before = !s || !s->point || x == 0 || s->point[x - 1] != s->point[x];
  int calls = c->calls && s && s->callend && x > 0 && s->callend[x] != s->callend[x - 1];
  int same = !c->crowd && x > 0 && u->stackAlloc <= 0 && u->heapAlloc == 0 && met_before &&
             !calls && (!r->rss || (r->mapped[x] == 0 && r->rss[x] == r->rss[x - 1]));
  if (!same) {
    ms__rt_res_measure(r, rec);
    return;
  }
  const memstub_replay_record *p = &c->rec[x - 1];
  rec->rss_bytes = p->rss_bytes;
  rec->mapped_bytes = p->mapped_bytes;
  rec->minor_faults = p->minor_faults;
  rec->major_faults = p->major_faults;
}

void ms__rt_res_measure(const ms__rt_res *r, memstub_replay_record *rec) {
  int64_t rss = r->statm_fd >= 0 && r->rss0 >= 0 ? ms__prim_statm_anon(r->statm_fd) : -1;
  rec->rss_bytes = rss < 0 ? -1 : rss > r->rss0 ? rss - r->rss0 : 0;
  rec->mapped_bytes = r->mapped_all ? __atomic_load_n(r->mapped_all, __ATOMIC_RELAXED) : r->map_len;
  int64_t mi, ma;
  if (r->minflt0 >= 0 && ms__prim_thread_faults(&mi, &ma) == 0) {
    rec->minor_faults = mi - r->minflt0;
    rec->major_faults = ma - r->majflt0;
  } else {
    rec->minor_faults = rec->major_faults = -1;
  }
}
