// The call replay's resident memory (docs/runtime.md, "The call replay"): a
// stub with the component's calls and rss_bytes keeps as much resident as
// the trace says, in its own live blocks. A block under MIN_PAGES pages is
// written whole at its call, as without rss_bytes; a larger one gets its
// first bytes written (to the first page boundary: the chunk header's
// page, resident anyway) and what a realloc kept; after each point's calls the process's
// RssAnon is read and the difference to the target written into the live
// blocks' unwritten requested bytes up to their holds (what the component
// held in each when it freed it: call_replay.c, hold_hints), then the
// mapping's, then the keep mapping's; or dropped (the keep mapping's, the
// mapping's, then
// madvise(MADV_DONTNEED) of whole pages wholly inside a live block's
// requested bytes, never beyond the block). What glibc keeps of freed
// blocks stays: it is the component's allocator state. Read, not counted:
// the blocks share pages with each other and with glibc's headers, which
// no bookkeeping of bytes can follow.
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "prim.h"

/* Within this many pages of the target nothing is done: the kernel counts
 * RssAnon per CPU (or per thread) and a reading can lag by 64 pages. */
#define SLACK_PAGES 64
/* Blocks of fewer pages are written whole at their call: their pages are
 * shared with their neighbours and glibc's headers, and few whole pages
 * lie inside them; the larger ones alone are looked through for pages. */
#define MIN_PAGES MS__RT_CALL_BIG_PAGES

static uintptr_t up(uintptr_t a, long page) {
  return (a + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
}

void ms__rt_cres_touch(char *p, int64_t from, int64_t to, long page) {
  if (!p || to <= from) return;
  volatile char *q = p;
  for (int64_t i = from; i < to; i += page) q[i] = 1;
  q[to - 1] = 1;
}

int ms__rt_cres_open(ms__rt_cres *r, int64_t nblocks) {
  r->fd = -1;
  // Room for every block at once, mapped and not touched: pages come in as the list grows.
  r->big = ms__rt_own_calloc((size_t)nblocks + 1, sizeof *r->big);
  if (!r->big) return -ENOMEM;
  r->nbig = r->cursor = r->made = 0;
  r->dry[0] = r->dry[1] = -1;
  int fd = ms__prim_statm_open();
  r->base = fd >= 0 ? ms__prim_statm_anon(fd) : -1;
  if (r->base >= 0) r->fd = fd;
  else ms__prim_statm_close(fd);
  return 0;
}

void ms__rt_cres_close(ms__rt_cres *r) {
  ms__prim_statm_close(r->fd);
  r->fd = -1;
  ms__rt_own_free(r->big);
  ms__rt_own_free(r->hint);
  r->big = NULL;
  r->hint = NULL;
}

int ms__rt_cres_is_big(int64_t size, long page) { return size >= MIN_PAGES * (int64_t)page; }

// The place header of a block of big (its second 8 bytes): k + 1.
static void set_place(char *p, int64_t k) { memcpy(p + MS__RT_CALL_HDR / 2, &(int64_t){k + 1}, 8); }

int64_t ms__rt_cres_place(const char *p, int64_t size, long page) {
  if (!ms__rt_cres_is_big(size, page)) return -1;
  int64_t k;
  memcpy(&k, p + MS__RT_CALL_HDR / 2, 8);
  return k - 1;
}

void ms__rt_cres_gone(ms__rt_cres *r, int64_t k) {
  if (k < 0 || k >= r->nbig) return;
  r->gone++;
  ms__rt_cbig last = r->big[--r->nbig];  // the last one takes its place
  if (k == r->nbig) return;
  r->big[k] = last;
  set_place(last.p, k);
}

int64_t ms__rt_cres_written(const ms__rt_cres *r, int64_t k, int64_t size) {
  return k >= 0 && k < r->nbig ? r->big[k].wt : size;
}

/* The bytes of block p (size bytes) up to the end of its last resident
 * whole page (0: none), by mincore, from its end down, 16 MiB a call. */
static int64_t resident_end(const char *p, int64_t size, long page) {
  uintptr_t lo = up((uintptr_t)p, page), hi = ((uintptr_t)p + (uintptr_t)size) & ~((uintptr_t)page - 1);
  unsigned char v[4096];
  while (hi > lo) {
    uintptr_t from = hi - lo > sizeof v * (uintptr_t)page ? hi - sizeof v * (uintptr_t)page : lo;
    if (mincore((void *)from, hi - from, v) != 0) return 0;
    for (size_t i = (hi - from) / (uintptr_t)page; i-- > 0;)
      if (v[i] & 1) return (int64_t)(from + (i + 1) * (uintptr_t)page - (uintptr_t)p);
    hi = from;
  }
  return 0;
}

void ms__rt_cres_made(ms__rt_cres *r, char *p, int64_t size, int64_t kept, long page) {
  if (kept > size) kept = size;
  if (!ms__rt_cres_is_big(size, page)) {  // written whole; not in the list
    ms__rt_cres_touch(p, kept, size, page);
    return;
  }
  int64_t head = (int64_t)(up((uintptr_t)p, page) - (uintptr_t)p);
  if (head < MS__RT_CALL_HDR) head = MS__RT_CALL_HDR;  // the header, written below
  ms__rt_cres_touch(p, 0, head, page);
  int64_t hold = r->hint && r->made < r->nhint ? r->hint[r->made] : size;
  /* Resident already: a block of the arena's memory may be from its
   * earlier use, or from calloc clearing it. Those pages are not written
   * again (they count), nor dropped: the component had them too, and the
   * host reuses them after the component's free. Dropping the hash host's
   * bucket array (calloc, 1.6 MB, cleared by glibc) to make room for the
   * stub's own table took the stubbed host's peak RssAnon from +3.1 % to
   * +1.5 % of the real one's, but the host faulted the 390 pages again
   * after the component, where the real host had them resident (faults
   * +5.1 %, goal 5). */
  int64_t wt = kept > head ? kept : head, res = resident_end(p, size, page);
  if (res > wt) wt = res;
  r->big[r->nbig] = (ms__rt_cbig){p, size, wt, hold, res};
  set_place(p, r->nbig++);
  r->made++;
}

/* Write up to need bytes' worth of new pages into the live blocks' unwritten
 * requested bytes, up to each one's hold, from the cursor on; the bytes of
 * new pages returned. What the holds leave goes to the mappings
 * (ms__rt_cres_target), which no free takes. */
static int64_t write_blocks(ms__rt_cres *r, int64_t need, long page) {
  int64_t n = r->nbig, got = 0;
  if (r->dry[0] == r->made || n == 0) return 0;  // nothing to write since the last look
  for (int64_t k = 0; k < n && got < need; k++) {
    int64_t i = (r->cursor + k) % n;
    ms__rt_cbig *b = &r->big[i];
    int64_t lim = b->hold < b->size ? b->hold : b->size;
    if (b->wt >= lim) continue;
    uintptr_t from = up((uintptr_t)b->p + (uintptr_t)b->wt, page);  // the first page not written
    int64_t to = (int64_t)(from - (uintptr_t)b->p) + (int64_t)up((uintptr_t)(need - got), page);
    if (to > lim) to = lim;
    if (to <= b->wt) continue;
    ms__rt_cres_touch(b->p, b->wt, to, page);  // wt >= the header: it stays
    uintptr_t end = up((uintptr_t)b->p + (uintptr_t)to, page);
    if (end > from) got += (int64_t)(end - from);
    b->wt = to;
    r->cursor = i;
  }
  if (got == 0) r->dry[0] = r->made;
  else r->dry[1] = -1;  // pages to drop again
  return got;
}

/* Drop up to cut bytes of the live blocks' written pages: whole pages wholly
 * inside a block's requested bytes, past its header and what was resident
 * when it was made (ms__rt_cres_made), its last written ones
 * first; first from the blocks above their hold, down to it, then from any.
 * The bytes dropped. */
static int64_t drop_blocks(ms__rt_cres *r, int64_t cut, long page) {
  int64_t n = r->nbig, done = 0;
  if (r->dry[1] == r->made || n == 0) return 0;  // nothing to drop since the last look
  uintptr_t mask = ~((uintptr_t)page - 1);
  for (int pass = 0; pass < 2; pass++)
    for (int64_t k = 0; k < n && done < cut; k++) {
      int64_t i = (r->cursor + k) % n;
      ms__rt_cbig *b = &r->big[i];
      uintptr_t p = (uintptr_t)b->p;
      uintptr_t a = up(p + (uintptr_t)(b->resident > MS__RT_CALL_HDR ? b->resident : MS__RT_CALL_HDR), page),
                h = up(p + (uintptr_t)b->wt, page);
      if (pass == 0 && b->hold > 0) {
        uintptr_t keep = up(p + (uintptr_t)b->hold, page);
        if (keep > a) a = keep;
      }
      uintptr_t lim = (p + (uintptr_t)b->size) & mask;  // never beyond the block
      if (h > lim) h = lim;
      if (h <= a) continue;
      uintptr_t want = up((uintptr_t)(cut - done), page), lo = h - a > want ? h - want : a;
      if (madvise((void *)lo, h - lo, MADV_DONTNEED) < 0) continue;
      done += (int64_t)(h - lo);
      b->wt = (int64_t)(lo - p);
      r->cursor = i;
    }
  if (done == 0) r->dry[1] = r->made;
  else r->dry[0] = -1;  // pages to write again
  return done;
}

int ms__rt_cres_due(ms__rt_cres *r, int64_t target, int64_t live, long page) {
  int64_t near = SLACK_PAGES * (int64_t)page / 4;
  if (r->settled && r->unread++ < 16 && r->made == r->read_made && r->gone == r->read_gone &&
      llabs(target - r->read_target) < near && llabs(live - r->read_live) < near)
    return 0;
  r->read_target = target, r->read_live = live, r->read_made = r->made, r->read_gone = r->gone;
  r->unread = 0;
  return 1;
}

int ms__rt_cres_target(ms__rt_cres *r, ms__rt_res *res, int64_t target, long page,
                       int64_t *keep_need) {
  if (target < 0) {  // mapped_bytes without rss_bytes: everything written
    for (int64_t k = 0; k < r->nbig; k++) {
      ms__rt_cbig *b = &r->big[k];
      ms__rt_cres_touch(b->p, b->wt, b->size, page);
      b->wt = b->size;
    }
    return ms__rt_res_extra(res, res->map_len, 0, page, keep_need);
  }
  int64_t now = ms__prim_statm_anon(r->fd);
  if (now < 0) return 0;
  int64_t err = target - (now - r->base), slack = SLACK_PAGES * (int64_t)page;
  // Settled unless a correction changes something: the next reading confirms it.
  int64_t k0 = res->keep_touched, m0 = res->map_touched;
  r->settled = 1;
  if (err > slack) {  // the blocks first, then the mapping, then the keep mapping
    int64_t got = write_blocks(r, err, page), need = err - got;
    int64_t m = res->map_touched;
    if (need > 0) m += res->map_len - m < need ? res->map_len - m : need;
    need -= m - res->map_touched;
    int rc = ms__rt_res_extra(res, m, res->keep_touched + (need > 0 ? need : 0), page, keep_need);
    r->settled = got == 0 && res->keep_touched == k0 && res->map_touched == m0;
    return rc;
  }
  if (err >= -slack) return 0;
  int64_t cut = -err;  // the keep mapping first, then the mapping, then the blocks
  int64_t k = res->keep_touched > cut ? res->keep_touched - cut : 0;
  cut -= res->keep_touched - k;
  int64_t m = res->map_touched > cut ? res->map_touched - cut : 0;
  cut -= res->map_touched - m;
  int rc = ms__rt_res_extra(res, m, k, page, keep_need);
  int64_t done = cut > 0 ? drop_blocks(r, cut, page) : 0;
  r->settled = done == 0 && res->keep_touched == k0 && res->map_touched == m0;
  return rc;
}
