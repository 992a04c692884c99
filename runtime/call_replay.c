// The call replay (docs/runtime.md, "The call replay"): a stub of layout 4
// carries the component's allocator calls (memstub gen --data of a trace
// with a calls file; docs/formats.md, "Calls in a stub"), and at each point
// the replay makes that point's calls in order, with their functions, sizes
// and alignments, on the blocks their ids name, instead of the class
// replay's one resized block and calls by size class. The engine reaches it
// through ms__rt_call_replay, chosen once per stub by ms__rt_replay_ops_for.
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memstub/work.h"
#include "prim.h"

// The functions of a call's head byte (traces/calls_format.h's numbering).
enum { F_MALLOC, F_CALLOC, F_REALLOC, F_FREE, F_POSIX_MEMALIGN, F_ALIGNED_ALLOC, F_MEMALIGN,
       F_VALLOC, F_PVALLOC, F_REALLOCARRAY, F_NFN };
#define H_FAILED 0x40  // no block came back when recorded
#define H_NULL 0x80    // free(NULL), realloc of NULL
#define H_FN 0x0f
#define SIZE_MAX_CALL ((uint64_t)1 << 62)

typedef struct call {
  int fn, failed, null;
  int64_t old;       // the block given (free, realloc), -1 none
  uint64_t size, align;
} call;

/* Calls decoded ahead of the one made: the slot of a block a call frees
 * is prefetched AHEAD calls before, the block itself AHEAD / 2 before, so
 * that the replay takes neither miss where the component freed its blocks
 * in an order of its own (a chained hash table torn down bucket by bucket). */
#define AHEAD 16

typedef struct pending {
  call k;
  int64_t next;  // the byte after it
} pending;

/* The live blocks by id, 4 bytes each (the table is the replay's own
 * resident memory, which the component never had: 1.5 MiB, not 3.1, for
 * the hash host's 400,001 blocks): a free id's link to the id freed before
 * it, (next + 1) << 1 | 1, so that the ids freed come back last first, as
 * the generator numbered them; a live block's place, (off + 1) << 2 for a
 * block at base + 16 * off (within 8 GiB either side of the first block
 * made: the arena's), or i << 2 | 2 for one far from it (mmapped chunks),
 * its pointer far[i]; 0 for none. A live block keeps its requested size in
 * its header (MS__RT_CALL_HDR), or, when it has fewer than 8 usable bytes
 * (an ASan build's block of under 8 bytes: glibc gives 24), in far_size
 * beside its pointer in far. */
#define NEAR_SPAN ((uintptr_t)1 << 33)  // 8 GiB either side of base + NEAR_SPAN
#define SLOT_IDS (((int64_t)1 << 31) - 2)  // ids a table can link: (next + 1) << 1 | 1 in 32 bits
struct ms__rt_calls {
  uint32_t *slot;    // [ncallblocks]
  uintptr_t base;    // 16 GiB below and above which blocks are near (set at the first block)
  int based;
  uintptr_t *far;    // [nfar] pointers of the blocks far from base; a free one: next << 1 | 1
  int64_t *far_size;  // [nfar] a block too small for its header: its size; else -1
  int64_t nfar, far_freed;  // entries, the one freed last (-1 none)
  int64_t freed;     // the id freed last, -1 none
  int64_t next_id;
  pending q[AHEAD];  // decoded, not made: q[qh] the next one
  int qh, qn;
  int64_t dec;       // the byte the decoding is at
  int64_t live;      // requested bytes of the live blocks
  int64_t usable;    // their malloc_usable_size
  int64_t at;        // the next call's byte in callseq
  ms__rt_callrd rd;  // callseq's bytes, from memory or the data file
  ms__rt_cres res;   // rss targets on the blocks (call_resident.c)
  int res_on;        // the stub has rss_bytes and RssAnon can be read
  int usable_on;     // heap_usable is measured: every block's malloc_usable_size counted
  int64_t rss_met;   // the rss target of the last point that met one (a row's last), or -2
  int64_t gone_met;  // res.gone when it was met: blocks of big freed since, the row's
  char why[128];     // why the next call's bytes are no call (next_call)
};

static int read_varint(const uint8_t *p, int64_t end, int64_t *at, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64 && *at < end; shift += 7) {
    uint8_t b = p[(*at)++];
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

static int aligned_fn(int fn) {
  return fn == F_POSIX_MEMALIGN || fn == F_ALIGNED_ALLOC || fn == F_MEMALIGN;
}
static int realloc_fn(int fn) { return fn == F_REALLOC || fn == F_REALLOCARRAY; }

/* A size or alignment no call can have: beyond 2^62, but for a call that
 * failed when recorded (calloc's or reallocarray's n x size beyond 64 bits,
 * recorded as SIZE_MAX: it fails again, and a trace holding one was refused). */
static inline int too_big(const call *k) {
  return (k->size > SIZE_MAX_CALL && !k->failed) || k->align > SIZE_MAX_CALL;
}

/* The call at *at (before end) into *k, *at moved past it. 0, or -1 with
 * *why set when the bytes are no call. */
static int decode(const uint8_t *p, int64_t end, int64_t *at, call *k, const char **why) {
  uint8_t h = p[(*at)++];
  k->fn = h & H_FN, k->failed = (h & H_FAILED) != 0, k->null = (h & H_NULL) != 0;
  k->old = -1, k->size = k->align = 0;
  uint64_t v;
  *why = "a function beyond the malloc family";
  if (k->fn >= F_NFN || (h & 0x30)) return -1;
  *why = "a varint runs past the calls' end";
  if ((k->fn == F_FREE || realloc_fn(k->fn)) && !k->null) {
    if (read_varint(p, end, at, &v) < 0) return -1;
    k->old = v > INT64_MAX ? INT64_MAX : (int64_t)v;
  }
  if (k->fn != F_FREE && read_varint(p, end, at, &k->size) < 0) return -1;
  if (aligned_fn(k->fn) && read_varint(p, end, at, &k->align) < 0) return -1;
  *why = "a size beyond 2^62 bytes";
  return too_big(k) ? -1 : 0;
}

/* The varint at p + n (pre: 10 bytes readable there) into *v: the byte
 * after it, or 0 when it runs on beyond 10 bytes (read_varint's bound). */
static inline __attribute__((always_inline)) int varint_fast(const uint8_t *p, int n,
                                                             uint64_t *v) {
  uint64_t b = p[n], x = b & 0x7f;
  if (b < 0x80) return *v = b, n + 1;
  for (int i = 1, shift = 7; i < 10; i++, shift += 7) {
    b = p[n + i];
    x |= (b & 0x7f) << shift;
    if (b < 0x80) return *v = x, n + i + 1;
  }
  return 0;
}

/* decode() where MS__RT_CALL_MAX bytes are readable at p (1 + 3 varints of
 * 10 bytes at most: 31): no bound per byte, no reason set. The call's
 * length, or 0 for bytes decode() refuses (it then says why). */
static inline __attribute__((always_inline)) int decode_fast(const uint8_t *p, call *k) {
  uint8_t h = p[0];
  int fn = h & H_FN, n = 1;
  if (fn >= F_NFN || (h & 0x30)) return 0;
  k->fn = fn, k->failed = (h & H_FAILED) != 0, k->null = (h & H_NULL) != 0;
  k->old = -1, k->size = k->align = 0;
  uint64_t v;
  if ((fn == F_FREE || realloc_fn(fn)) && !k->null) {
    if (!(n = varint_fast(p, n, &v))) return 0;
    k->old = v > INT64_MAX ? INT64_MAX : (int64_t)v;
  }
  if (fn != F_FREE && !(n = varint_fast(p, n, &k->size))) return 0;
  if (aligned_fn(fn) && !(n = varint_fast(p, n, &k->align))) return 0;
  return too_big(k) ? 0 : n;
}

/* The call at *at (before end) of r's bytes into *k, *at moved past it. 0;
 * -1 with *why for bytes that are no call; -2 with *why r->why when the
 * data file could not be read or has changed since it was opened. */
static inline __attribute__((always_inline)) int decode_at(ms__rt_callrd *r, int64_t end,
                                                        int64_t *at, call *k, const char **why) {
  int64_t avail, i = 0;
  const uint8_t *p = ms__rt_callrd_at(r, *at, &avail);
  if (!p) {
    *why = r->why;
    return -2;
  }
  int rc = decode(p, end - *at < avail ? end - *at : avail, &i, k, why);
  *at += i;
  return rc;
}

// Whether call k frees the block it was given.
static int frees_old(const call *k) {
  return k->old >= 0 && (k->fn == F_FREE || !k->failed || k->size == 0);
}

/* The calls checked already (the last few): a stub called again and again
 * (and a data file checked when it is read, then at its replay) is not
 * decoded again at every call. Known by their arrays, their sizes and a hash
 * of their bytes, so memory freed and filled again at the same address is
 * checked again. */
#define CHECKED 4
typedef struct checked {
  const uint8_t *seq;
  const int64_t *end;
  int64_t nseq, ncalls, nblocks, numdata;
  uint64_t hash;
} checked;
/* The blocks of big (MS__RT_CALL_BIG_PAGES) the calls make, in the order they
 * are made, found by the check's walk: each one's size and the point whose
 * calls free it (-1: never freed, or moved by a realloc). The replay's holds
 * come from them (hold_hints) without decoding the calls again. */
typedef struct big_blocks {
  int64_t n, cap;
  int64_t *size, *freed_at;
} big_blocks;
static checked g_checked[CHECKED];
static big_blocks g_big[CHECKED];  // g_checked[i]'s
static unsigned g_checked_next;
static pthread_mutex_t g_checked_lock = PTHREAD_MUTEX_INITIALIZER;

// A hash of n bytes at p, eight at a time (about 0.1 ms a MB).
static uint64_t bytes_hash(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = p;
  for (; n >= 8; n -= 8, b += 8) {
    uint64_t w;
    memcpy(&w, b, 8);
    h = (h ^ w) * UINT64_C(0x9E3779B97F4A7C15);
    h ^= h >> 29;
  }
  for (; n; n--, b++) h = (h ^ *b) * UINT64_C(0x100000001B3);
  return h;
}

// pre: the arrays' sizes checked (ms__rt_calls_check); r reads s's calls.
static checked checked_of(const struct memstub_stub *s, const ms__rt_callrd *r) {
  uint64_t h = r->mem ? bytes_hash(s->callseq, (size_t)s->ncallseq, UINT64_C(1469598103934665603))
                      : ms__rt_callrd_digest(r);
  h = bytes_hash(s->callend, (size_t)s->numdata * sizeof *s->callend, h);
  return (checked){s->callseq, s->callend, s->ncallseq, s->ncallcount, s->ncallblocks, s->numdata, h};
}

static void big_free(big_blocks *b) {
  ms__rt_own_free(b->size);
  ms__rt_own_free(b->freed_at);
  memset(b, 0, sizeof *b);
}

/* Whether k was checked; with copy set, its blocks of big copied into
 * *copy (the caller's to free: an entry may go while a replay runs).
 * 1 found, 0 not, -ENOMEM. */
static int checked_find(const checked *k, big_blocks *copy) {
  pthread_mutex_lock(&g_checked_lock);
  int i = 0, rc = 0;
  while (i < CHECKED && memcmp(&g_checked[i], k, sizeof *k) != 0) i++;
  if (i < CHECKED && copy) {
    const big_blocks *b = &g_big[i];
    *copy = (big_blocks){b->n, b->n, NULL, NULL};
    copy->size = ms__rt_own_calloc((size_t)b->n + 1, sizeof *copy->size);
    copy->freed_at = ms__rt_own_calloc((size_t)b->n + 1, sizeof *copy->freed_at);
    if (copy->size && copy->freed_at) {
      if (b->n) memcpy(copy->size, b->size, (size_t)b->n * sizeof *b->size);
      if (b->n) memcpy(copy->freed_at, b->freed_at, (size_t)b->n * sizeof *b->freed_at);
    } else {
      big_free(copy);
      rc = -ENOMEM;
    }
  }
  pthread_mutex_unlock(&g_checked_lock);
  return rc < 0 ? rc : i < CHECKED;
}

// Remember k, checked, with its blocks of big (taken over: *big is emptied).
static void checked_add(const checked *k, big_blocks *big) {
  pthread_mutex_lock(&g_checked_lock);
  unsigned i = g_checked_next++ % CHECKED;
  g_checked[i] = *k;
  big_free(&g_big[i]);
  g_big[i] = *big;
  memset(big, 0, sizeof *big);
  pthread_mutex_unlock(&g_checked_lock);
}

// One more block of big, made by the calls of a point not yet known. 0 or -ENOMEM.
static int big_add(big_blocks *b, int64_t size) {
  if (b->n == b->cap) {
    int64_t cap = b->cap ? 2 * b->cap : 64;
    int64_t *ns = ms__rt_own_calloc((size_t)cap, sizeof *ns);
    int64_t *nf = ms__rt_own_calloc((size_t)cap, sizeof *nf);
    if (!ns || !nf) {
      ms__rt_own_free(ns);
      ms__rt_own_free(nf);
      return -ENOMEM;
    }
    if (b->n) {
      memcpy(ns, b->size, (size_t)b->n * sizeof *ns);
      memcpy(nf, b->freed_at, (size_t)b->n * sizeof *nf);
    }
    ms__rt_own_free(b->size);
    ms__rt_own_free(b->freed_at);
    b->size = ns, b->freed_at = nf, b->cap = cap;
  }
  b->size[b->n] = size;
  b->freed_at[b->n++] = -1;
  return 0;
}

// The size from which a block is one of big on this machine (MS__RT_CALL_BIG_PAGES pages).
static int64_t big_bytes(void) { return MS__RT_CALL_BIG_PAGES * (int64_t)ms__prim_page_size(); }

/* The walk's state: a word an id (a free id's link, the id freed before it
 * plus 1, 0: none; a live one's -1, or -2 - e when it is block e of big),
 * the id freed last, the next never used, the calls seen. */
typedef struct walk {
  int32_t *link;
  int64_t freed, next, count, bigb;
  big_blocks *big;
} walk;

/* Call k, at byte here of point x's calls, followed as the replay takes it.
 * 0, or -EINVAL / -ENOMEM with err set. */
static inline __attribute__((always_inline)) int walk_one(walk *w, const struct memstub_stub *s,
                                                          const call *k, int64_t here, int64_t x,
                                                          memstub_error *err) {
  int32_t *link = w->link;
  w->count++;
  if (k->old >= 0 && (k->old >= w->next || link[k->old] >= 0))
    return memstub_error_set(err, -EINVAL, "calls: byte %lld: block %lld is not live",
                             (long long)here, (long long)k->old);
  // A block of big freed here: its hold comes from this point's row. Moved or resized, none.
  if (frees_old(k) && link[k->old] < -1 && k->fn == F_FREE) w->big->freed_at[-2 - link[k->old]] = x;
  // A realloc that moved its block keeps the block's id.
  if (frees_old(k) && (k->fn == F_FREE || k->failed))
    link[k->old] = (int32_t)(w->freed + 1), w->freed = k->old;
  if (k->failed || k->fn == F_FREE) return 0;
  int64_t id = k->old;
  if (id < 0 && (id = w->freed) >= 0) w->freed = link[id] - 1;
  else if (id < 0) id = w->next++;
  if (id >= s->ncallblocks)
    return memstub_error_set(err, -EINVAL, "calls: byte %lld: block %lld, the stub holds %lld",
                             (long long)here, (long long)id, (long long)s->ncallblocks);
  link[id] = -1;
  if ((int64_t)k->size >= w->bigb && w->big->n < INT32_MAX - 2) {  // later ones hold their size
    if (big_add(w->big, (int64_t)k->size) < 0) return memstub_error_set(err, -ENOMEM, "out of memory");
    link[id] = (int32_t)(-1 - w->big->n);  // -2 - e for block e
  }
  return 0;
}

/* Every call decoded and its ids followed as the replay takes them (walk),
 * and the blocks of bigb bytes or more into *big. Calls whose longest encoding lies
 * before the window's and the point's end are decoded without a bound per
 * byte (decode_fast); the others, and any the fast decoder refuses, the
 * bounded way, which says why. 0, or -EINVAL / -EIO / -ENOMEM with err
 * set. pre: s's callend in order (ms__rt_calls_check). */
static int calls_walk(const struct memstub_stub *s, ms__rt_callrd *r, int64_t bigb,
                      big_blocks *big, memstub_error *err) {
  // Huge pages: 1 fault, not 391, for the hash host's 400,001 blocks (gone before the replay).
  walk w = {ms__rt_own_calloc_huge((size_t)s->ncallblocks + 1, sizeof *w.link), -1, 0, 0, bigb,
            big};
  if (!w.link) return memstub_error_set(err, -ENOMEM, "out of memory");
  int rc = 0;
  int64_t at = 0;
  for (int64_t x = 0; rc == 0 && x < s->numdata; x++) {
    int64_t end = s->callend[x];
    while (rc == 0 && at < end) {
      int64_t avail, i = 0;
      const uint8_t *p = ms__rt_callrd_at(r, at, &avail);
      if (p) {
        int64_t lim = end - at < avail ? end - at : avail;
        call k;
        for (int n; rc == 0 && lim - i >= MS__RT_CALL_MAX && (n = decode_fast(p + i, &k)) > 0;
             i += n)
          rc = walk_one(&w, s, &k, at + i, x, err);
        at += i;
      }
      if (rc < 0 || at >= end || i > 0) continue;
      int64_t here = at;
      call k;
      const char *why;
      int bad = decode_at(r, end, &at, &k, &why);
      if (bad == -2) rc = memstub_error_set(err, -EIO, "%s", why);
      else if (bad < 0) rc = memstub_error_set(err, -EINVAL, "calls: byte %lld: %s", (long long)here, why);
      else rc = walk_one(&w, s, &k, here, x, err);
    }
  }
  if (rc == 0 && w.count != s->ncallcount)
    rc = memstub_error_set(err, -EINVAL, "calls: %lld calls, the stub says %lld",
                           (long long)w.count, (long long)s->ncallcount);
  ms__rt_own_free(w.link);
  return rc;
}

/* The calls' arrays: there, sized, their points' ends in order and within
 * callseq. 0 or -EINVAL / -ENOTSUP with err set. */
static int arrays_check(const struct memstub_stub *s, memstub_error *err) {
  if (!s->callseq || !s->callend || s->ncallseq < 0 || s->ncallblocks < 0 ||
      s->ncallblocks > s->ncallseq)
    return memstub_error_set(err, -EINVAL, "the stub has calls (layout 4) without their arrays");
  if (s->ncallblocks > SLOT_IDS)  // 32 GiB of heap at least: no component known
    return memstub_error_set(err, -ENOTSUP, "calls: %lld blocks live at once, the call replay's "
                             "table holds %lld", (long long)s->ncallblocks, (long long)SLOT_IDS);
  int64_t prev = 0;
  for (int64_t i = 0; i < s->numdata; i++) {
    if (s->callend[i] < prev || s->callend[i] > s->ncallseq)
      return memstub_error_set(err, -EINVAL, "point %lld: its calls end at byte %lld, out of "
                               "order or beyond the calls' %lld bytes", (long long)i,
                               (long long)s->callend[i], (long long)s->ncallseq);
    prev = s->callend[i];
  }
  return 0;
}

/* The arrays checked (arrays_check), then r opened on s's calls. 0, or a
 * negative errno with err set. */
static int checked_open(const struct memstub_stub *s, ms__rt_callrd *r, memstub_error *err) {
  int rc = arrays_check(s, err);
  if (rc < 0) return rc;
  if ((rc = ms__rt_callrd_open(r, s)) < 0)
    return memstub_error_set(err, rc, "calls: %s", rc == -ENOMEM ? "out of memory" :
                             "a data file's calls of another length than ncallseq");
  return 0;
}

int ms__rt_calls_check(const struct memstub_stub *s, memstub_error *err) {
  if (s->abi < MEMSTUB_STUB_ABI_CALLS) return 0;
  ms__rt_callrd r;
  int rc = checked_open(s, &r, err);
  if (rc < 0) return rc;
  checked k = checked_of(s, &r);
  big_blocks big = {0};
  if ((rc = checked_find(&k, NULL)) == 0 && (rc = calls_walk(s, &r, big_bytes(), &big, err)) == 0)
    checked_add(&k, &big);
  big_free(&big);
  ms__rt_callrd_close(&r);
  return rc < 0 ? rc : 0;
}

int ms__rt_calls_big(const struct memstub_stub *s, int64_t **out, int64_t *n, memstub_error *err) {
  *out = NULL, *n = 0;
  ms__rt_callrd r;
  int rc = checked_open(s, &r, err);
  if (rc < 0) return rc;
  big_blocks big = {0};
  if ((rc = calls_walk(s, &r, MS__RT_CALL_BIG_MIN, &big, err)) == 0) {
    *out = malloc(((size_t)big.n + 1) * 2 * sizeof **out);
    if (!*out) rc = memstub_error_set(err, -ENOMEM, "out of memory");
    for (int64_t e = 0; rc == 0 && e < big.n; e++)
      (*out)[2 * e] = big.size[e], (*out)[2 * e + 1] = big.freed_at[e];
    if (rc == 0) *n = big.n;
  }
  big_free(&big);
  ms__rt_callrd_close(&r);
  return rc;
}

int ms__rt_calls_known(const struct memstub_stub *s, const int64_t *pairs, int64_t n) {
  ms__rt_callrd r;
  int rc = ms__rt_callrd_open(&r, s);
  if (rc < 0) return rc;
  checked k = checked_of(s, &r);
  ms__rt_callrd_close(&r);
  big_blocks big = {0};
  int64_t bigb = big_bytes();
  for (int64_t e = 0; e < n; e++)  // this machine's blocks of big: pages may be larger
    if (pairs[2 * e] >= bigb && big_add(&big, pairs[2 * e]) == 0)
      big.freed_at[big.n - 1] = pairs[2 * e + 1];
    else if (pairs[2 * e] >= bigb)
      return big_free(&big), -ENOMEM;
  checked_add(&k, &big);
  big_free(&big);
  return 0;
}

/* ---- the replay ------------------------------------------------------------ */


// Id freed: its slot links to the one freed before it.
static void id_push(ms__rt_calls *st, int64_t id) {
  st->slot[id] = (uint32_t)(st->freed + 1) << 1 | 1;
  st->freed = id;
}

// The block slot word w names (NULL none; any word of a free id gives an address never read).
static inline void *slot_ptr(const ms__rt_calls *st, uint32_t w) {
  if ((w & 3) == 0) return w ? (void *)(st->base + ((uintptr_t)(w >> 2) - 1) * 16) : NULL;
  return (w & 3) == 2 ? (void *)st->far[w >> 2] : NULL;
}

/* The slot word for live block p (16-byte aligned): near base, or a place
 * in far (always for a block too small for its header, tiny its size; else
 * tiny -1). 0 when far cannot grow (out of memory). */
static uint32_t slot_of(ms__rt_calls *st, void *p, int64_t tiny) {
  uintptr_t a = (uintptr_t)p;
  if (!st->based) st->base = a > NEAR_SPAN ? a - NEAR_SPAN : 0, st->based = 1;
  if (tiny < 0 && a >= st->base && a - st->base < 2 * NEAR_SPAN && !(a & 15))
    return (uint32_t)(((a - st->base) / 16 + 1) << 2);
  int64_t i = st->far_freed;
  if (i >= 0) {
    st->far_freed = (int64_t)(st->far[i] >> 1) - 1;
  } else {
    if ((st->nfar & (st->nfar - 1)) == 0 && st->nfar >= 16) {  // full at 16, 32, 64...: double
      if (st->nfar >= ((int64_t)1 << 29)) return 0;
      uintptr_t *f = ms__rt_own_calloc((size_t)st->nfar * 2, sizeof *f);
      int64_t *z = ms__rt_own_calloc((size_t)st->nfar * 2, sizeof *z);
      if (!f || !z) {
        ms__rt_own_free(f);
        ms__rt_own_free(z);
        return 0;
      }
      memcpy(f, st->far, (size_t)st->nfar * sizeof *f);
      memcpy(z, st->far_size, (size_t)st->nfar * sizeof *z);
      ms__rt_own_free(st->far);
      ms__rt_own_free(st->far_size);
      st->far = f, st->far_size = z;
    }
    i = st->nfar++;
  }
  st->far[i] = a;
  st->far_size[i] = tiny;
  return (uint32_t)(i << 2 | 2);
}

// The block of slot word w is gone: its far place, if any, taken again later.
static void slot_gone(ms__rt_calls *st, uint32_t w) {
  if ((w & 3) != 2) return;
  st->far[w >> 2] = (uintptr_t)(st->far_freed + 1) << 1 | 1;
  st->far_freed = w >> 2;
}

// The id a new block takes: the one freed last, else the next never used.
static int64_t id_pop(ms__rt_calls *st) {
  int64_t id = st->freed;
  if (id < 0) return st->next_id++;
  st->freed = (int64_t)(st->slot[id] >> 1) - 1;
  return id;
}

/* The hold of each block of big the calls make (runtime/call_resident.c),
 * in the order they are made: what the component held resident in it when
 * it freed it, the fall of the rss target at that point, shared by size
 * between the blocks of big freed there and never above a block's size; a
 * block never freed, or moved by a realloc (its pages go along), holds its
 * size. Written and dropped pages go to the blocks below their hold first,
 * so that a free takes about the pages the component lost there: liblzma's
 * stub wrote 8,143 pages back into other blocks after two frees of blocks
 * the component had left unwritten. The blocks and the points that free
 * them come from the check's walk (calls_walk), remembered with it: the
 * calls are not decoded again. 0, -ENOMEM, or -EIO / -EINVAL with
 * c->failed_why set. */
static int hold_hints(ms__rt_ctx *c, ms__rt_calls *st) {
  const struct memstub_stub *s = c->stub;
  checked key = checked_of(s, &st->rd);
  big_blocks b = {0};
  int rc = checked_find(&key, &b);  // the check's walk found them
  if (rc == 0) {  // checked, then forgotten (four other stubs checked since): again
    memstub_error err = {0};
    if ((rc = ms__rt_calls_check(s, &err)) < 0) {
      snprintf(c->failed_why, sizeof c->failed_why, "%s", err.msg);
      return rc;
    }
    rc = checked_find(&key, &b);
  }
  if (rc <= 0) return rc < 0 ? rc : -ENOMEM;
  if (b.n == 0) {
    big_free(&b);
    return 0;
  }
  // The blocks by the point that frees them (a counting sort), the others last.
  int64_t *by = ms__rt_own_calloc((size_t)b.n, sizeof *by);
  int64_t *from = ms__rt_own_calloc((size_t)s->numdata + 2, sizeof *from);
  if (!by || !from) {
    ms__rt_own_free(by);
    ms__rt_own_free(from);
    big_free(&b);
    return -ENOMEM;
  }
  for (int64_t e = 0; e < b.n; e++) from[b.freed_at[e] + 2]++;  // -1 (never) counts at 1
  for (int64_t x = 1; x <= s->numdata + 1; x++) from[x] += from[x - 1];
  for (int64_t e = 0; e < b.n; e++) by[from[b.freed_at[e] + 1]++] = e;
  // Now from[x + 1] is the end of point x's frees in by, from[0] of the never freed.
  int64_t *hold = b.size;  // a block never freed, or moved by a realloc, holds its size
  int64_t next = from[0], bytes = 0, before = 0, first = 0;  // rss before the row, its first point
  for (int64_t x = 0; x < s->numdata; x++) {
    if (x + 1 < s->numdata && s->point[x + 1] == s->point[x]) continue;  // the row goes on
    /* The row's end: the fall of the target from before the row to the
     * lowest of this row's points and the next row's (the recorder reads
     * rss_bytes at its samples, and gen places a row's reading and its calls
     * on different points of it: liblzma's fall came five points before its
     * free), shared by size between the blocks of big the row freed. */
    int64_t end = from[x + 1];
    bytes = 0;
    for (int64_t i = next; i < end; i++) bytes += b.size[by[i]];
    int64_t low = before, y = first;
    for (; y < s->numdata && s->point[y] <= s->point[x] + 1; y++)
      if (c->res.rss[y] >= 0 && c->res.rss[y] < low) low = c->res.rss[y];
    int64_t fall = before > low ? before - low : 0;
    for (int64_t i = next; i < end; i++) {
      int64_t j = by[i];
      double share = (double)fall * (double)b.size[j] / (double)bytes;
      hold[j] = share < (double)b.size[j] ? (int64_t)share : b.size[j];
    }
    next = end;
    if (c->res.rss[x] >= 0) before = c->res.rss[x];
    first = x + 1;
  }
  ms__rt_own_free(by);
  ms__rt_own_free(from);
  ms__rt_own_free(b.freed_at);
  st->res.hint = hold;
  st->res.nhint = b.n;
  return 0;
}

static int call_prepare(ms__rt_ctx *c, void **scratch, size_t nscratch) {
  (void)scratch, (void)nscratch;  // no tcache fill: the calls are the component's alone
  const struct memstub_stub *s = c->stub;
  size_t n = (size_t)s->ncallblocks + 1;
  ms__rt_calls *k = ms__rt_own_calloc(1, sizeof *k);
  if (!k) return -ENOMEM;
  k->res.fd = -1;  // nothing to close until opened
  c->calls = k;
  if (s->ncallblocks > SLOT_IDS) {  // 32 GiB of heap at least: no component known
    snprintf(c->failed_why, sizeof c->failed_why, "the call replay's table holds %lld blocks "
             "live at once, the stub has %lld", (long long)SLOT_IDS, (long long)s->ncallblocks);
    return -ENOTSUP;
  }
  k->slot = ms__rt_own_calloc(n, sizeof *k->slot);
  k->far = ms__rt_own_calloc(16, sizeof *k->far);
  k->far_size = ms__rt_own_calloc(16, sizeof *k->far_size);
  k->freed = -1, k->far_freed = -1, k->rss_met = -2;
  if (!k->slot || !k->far || !k->far_size) return -ENOMEM;
  int rc = ms__rt_callrd_open(&k->rd, s);  // checked: ms__rt_calls_check
  if (rc < 0) return rc;
  if (c->res.rss && ms__rt_cres_open(&k->res, (int64_t)n) < 0) return -ENOMEM;
  k->res_on = c->res.rss && k->res.fd >= 0;
  k->usable_on = (c->measure & MEMSTUB_MEASURE_HEAP) != 0;
  if (k->res_on && (rc = hold_hints(c, k)) < 0) return rc;
  c->work.exact = 1;  // the work's spin stays, its calls by size class are these calls
  c->heap.visible = 1;  // heap_bytes is the replay's own count (call_measure), whatever the allocator
  c->heap.tcache = MEMSTUB_TCACHE_UNKNOWN;  // left as it is: no fill
  return 0;
}

/* Whether p (usable bytes) is a chunk of its own mapping: glibc's are a
 * page-aligned chunk with its 16-byte header, whole pages; an arena chunk's
 * usable bytes are 8 more than a multiple of 16, never so. */
static int mmapped(const void *p, int64_t usable, long page) {
  return ((uintptr_t)p & ((uintptr_t)page - 1)) == 16 && (usable + 16) % page == 0;
}

// The kind (memstub/work.h) of function fn, -1 for one not counted.
static int kind_of(const call *k) {
  return k->fn == F_MALLOC ? MEMSTUB_CALL_MALLOC
         : k->fn == F_CALLOC ? MEMSTUB_CALL_CALLOC
         : realloc_fn(k->fn) ? MEMSTUB_CALL_REALLOC
         : k->fn == F_FREE   ? (k->null ? -1 : MEMSTUB_CALL_FREE)
                             : MEMSTUB_CALL_MEMALIGN;
}

// Make call k: the block it returns (NULL none); *old the block it was given.
static void *make(const call *k, void *old) {
  size_t n = (size_t)k->size, a = (size_t)k->align;
  void *p = NULL;
  switch (k->fn) {
    case F_MALLOC: return malloc(n);
    case F_CALLOC: return calloc(1, n);
    case F_REALLOC: return realloc(old, n);
    case F_REALLOCARRAY: return reallocarray(old, 1, n);
    case F_FREE: free(old); return NULL;
    case F_POSIX_MEMALIGN: return posix_memalign(&p, a, n) == 0 ? p : NULL;
    case F_ALIGNED_ALLOC: return aligned_alloc(a, n);
    case F_MEMALIGN: return memalign(a, n);
    case F_VALLOC: return valloc(n);
    default: return pvalloc(n);
  }
}

// Live block p's requested size (w its slot word): from its header, or far_size.
static int64_t block_size(const ms__rt_calls *st, uint32_t w, const void *p) {
  if ((w & 3) == 2 && st->far_size[w >> 2] >= 0) return st->far_size[w >> 2];
  int64_t n;
  memcpy(&n, p, sizeof n);
  return n;
}


/* The next call (pre: st->at before the calls' end) into *k, st->at moved
 * past it; the queue kept AHEAD calls deep, its prefetches issued. 0; -EIO
 * when the data file could not be read (st->rd.why); -EINVAL for bytes that
 * are no call, why into st->why (a data file's calls are checked as they
 * are made: ms__rt_calls_known). */
static int next_call(const struct memstub_stub *s, ms__rt_calls *st, call *k) {
  int64_t total = s->numdata > 0 ? s->callend[s->numdata - 1] : 0;
  while (st->qn < AHEAD && st->dec < total) {
    pending *e = &st->q[(st->qh + st->qn) % AHEAD];
    const char *why;
    int64_t here = st->dec;
    int bad = decode_at(&st->rd, total, &st->dec, &e->k, &why);
    if (bad < 0) {
      st->dec = here;
      if (st->qn) break;  // the calls decoded already are made first
      if (bad == -2) return -EIO;
      snprintf(st->why, sizeof st->why, "calls: byte %lld: %s", (long long)here, why);
      return -EINVAL;
    }
    st->qn++;
    e->next = st->dec;
    // Within the table: a bad id is refused when its call comes (call_heap).
    if (e->k.old >= 0 && e->k.old < s->ncallblocks) __builtin_prefetch(&st->slot[e->k.old]);
  }
  const pending *e = &st->q[st->qh];
  *k = e->k;
  st->at = e->next;
  st->qh = (st->qh + 1) % AHEAD;
  st->qn--;
  // Halfway: the slot has come in; its block (or a stale word: prefetches never fault).
  if (st->qn > AHEAD / 2) {
    const call *h = &st->q[(st->qh + AHEAD / 2) % AHEAD].k;
    if (h->old >= 0 && h->old < s->ncallblocks) __builtin_prefetch(slot_ptr(st, st->slot[h->old]));
  }
  /* A quarter: the block has come in; the header of the chunk after it,
   * which glibc's free reads (its "invalid next size" check): 71 % of
   * _int_free's time in the hash host's stubbed teardown was that miss,
   * where the component had walked its node's line and the next. Its
   * place from the block's requested size (its header, a near block's) as
   * glibc's chunks are laid out; with another allocator it is some
   * address, and a prefetch never faults. */
  if (st->qn > AHEAD / 4) {
    const call *h = &st->q[(st->qh + AHEAD / 4) % AHEAD].k;
    uint32_t w = h->old >= 0 && h->old < s->ncallblocks ? st->slot[h->old] : 0;
    if ((w & 3) == 0 && w) {
      const char *p = slot_ptr(st, w);
      uint64_t n;
      memcpy(&n, p, sizeof n);
      uint64_t chunk = n + 8 + 15 < 32 ? 32 : (n + 8 + 15) & ~(uint64_t)15;
      if (n < ((uint64_t)1 << 20)) __builtin_prefetch(p + chunk - 8);  // chunk at p - 16, size at + 8
    }
  }
  return 0;
}

// Point x's memory part: its calls in order, then the mapped change.
static void call_heap(ms__rt_ctx *c, int64_t x) {
  const struct memstub_stub *s = c->stub;
  ms__rt_calls *st = c->calls;
  int64_t end = s->callend[x], begin = st->at;
  int64_t *m = c->wrec ? c->wrec + x * MS__RT_WORK_REC : NULL;
  while (st->at < end) {
    call k;
    int64_t here = st->at;
    int rc = next_call(s, st, &k);
    if (rc < 0) {
      snprintf(c->failed_why, sizeof c->failed_why, "%s", rc == -EIO ? st->rd.why : st->why);
      ms__rt_replay_stop(c, x, rc, MS__RT_FAIL_DATA, st->at);
      return;
    }
    /* A block given that is not live, or a new one beyond the table: bytes
     * the check's walk would have refused (a data file's calls are not
     * walked first: ms__rt_calls_known). Nothing of this call is made. */
    int64_t id_new = k.old >= 0 || k.failed || k.fn == F_FREE ? -1
                     : st->freed >= 0                             ? st->freed
                                                                  : st->next_id;
    if ((k.old >= 0 && (k.old >= st->next_id || !st->slot[k.old] || (st->slot[k.old] & 1))) ||
        id_new >= s->ncallblocks) {
      snprintf(c->failed_why, sizeof c->failed_why,
               k.old >= 0 ? "calls: byte %lld: block %lld is not live"
                          : "calls: byte %lld: block %lld, the stub holds %lld",
               (long long)here, (long long)(k.old >= 0 ? k.old : id_new),
               (long long)s->ncallblocks);
      ms__rt_replay_stop(c, x, -EINVAL, MS__RT_FAIL_DATA, here);
      return;
    }
    // What the old block was, read before the call frees or moves it.
    uint32_t old_w = k.old >= 0 ? st->slot[k.old] : 0;
    void *old = slot_ptr(st, old_w);
    int64_t old_size = old ? block_size(st, old_w, old) : 0;
    // malloc_usable_size only where it is used: 6 % of the hash host's stubbed call.
    int mm = st->res_on && old && realloc_fn(k.fn);  // a realloc that may mremap the old block
    int64_t old_usable = old && (st->usable_on || mm) ? (int64_t)malloc_usable_size(old) : 0;
    int64_t old_place = st->res_on && old ? ms__rt_cres_place(old, old_size, c->page) : -1;
    int64_t old_wt = st->res_on && old ? ms__rt_cres_written(&st->res, old_place, old_size) : 0;
    void *p = make(&k, old);
    int kind = kind_of(&k);
    if (kind >= 0)  // a failed call moved no bytes (as the recorder counts it)
      ms__rt_work_note(m, kind, kind == MEMSTUB_CALL_FREE ? old_size : k.failed && !p ? 0 : (int64_t)k.size);
    if (k.failed) {  // failed when recorded: a block it gets now goes at once
      if (p && p != old) free(p);
      if (!frees_old(&k)) continue;
      if (p == old) {  // realloc(p, 0) kept it this time
        free(p);
        p = NULL;
      }
    } else if (!p && k.fn != F_FREE) {  // the old block, if any, stays in the table
      ms__rt_replay_stop(c, x, -ENOMEM, MS__RT_FAIL_CALL, (int64_t)k.size);
      return;
    }
    if (frees_old(&k)) {
      st->live -= old_size;
      if (st->usable_on) st->usable -= old_usable;
      st->slot[k.old] = 0;
      slot_gone(st, old_w);
      if (old_place >= 0) ms__rt_cres_gone(&st->res, old_place);
      if (!p) id_push(st, k.old);
    }
    if (!p) continue;
    // A block of 8 bytes or more asked for has them: its header fits.
    int64_t usable = st->usable_on || mm || (int64_t)k.size < MS__RT_CALL_HDR / 2
                         ? (int64_t)malloc_usable_size(p) : MS__RT_CALL_HDR / 2;
    int tiny = usable < MS__RT_CALL_HDR / 2;  // its size beside its pointer: ASan's, not glibc's
    uint32_t w = slot_of(st, p, tiny ? (int64_t)k.size : -1);
    if (!w) {  // far from the arena, and no memory to note it: the block cannot be followed
      free(p);
      snprintf(c->failed_why, sizeof c->failed_why, "the call replay's table of blocks far "
               "from the arena cannot grow to note a block of %lld bytes", (long long)k.size);
      ms__rt_replay_stop(c, x, -ENOMEM, MS__RT_FAIL_CALL, (int64_t)k.size);
      return;
    }
    int64_t id = k.old >= 0 ? k.old : id_pop(st);
    st->slot[id] = w;
    st->live += (int64_t)k.size;
    if (st->usable_on) st->usable += usable;
    if (st->res_on) {  // written: its head, what a realloc kept; the target decides the rest
      int64_t kept = 0;
      int remapped = mm && mmapped(old, old_usable, c->page) && mmapped(p, usable, c->page);
      if (old && (p == old || remapped))
        kept = old_wt;    // in place, or mremap: its written pages came along
      else if (old)
        kept = old_size;  // copied: every byte written
      ms__rt_cres_made(&st->res, p, (int64_t)k.size, kept, c->page);
    } else if (k.fn != F_CALLOC) {
      ms__rt_cres_touch(p, realloc_fn(k.fn) ? old_size : 0, (int64_t)k.size, c->page);
    }
    if (!tiny) memcpy(p, &(int64_t){(int64_t)k.size}, sizeof(int64_t));  // the header, last
  }
  if (c->rec && c->measure & MEMSTUB_MEASURE_CYCLES) c->rec[x].cyc_heap_alloc = ms__prim_cycles_begin();
  if (!c->res.mapped) return;
  // Resident data: the mapped change, then the blocks' pages written or dropped to the target.
  int rc = ms__rt_res_mapped(&c->res, c->res.mapped[x], c->page);
  if (rc < 0) {
    ms__rt_replay_stop(c, x, rc, MS__RT_FAIL_MAPPED, c->res.map_len + c->res.mapped[x]);
    return;
  }
  /* No call, no mapped change and the target last met, settled: RssAnon is
   * where the last point left it. (The target of the point before is not
   * that one when it was a row's earlier point, below: a fall from 40 to
   * 8 MiB came on a row of two points, and the 8 MiB were never met.) */
  if (!st->res_on || (begin == end && c->res.mapped[x] == 0 && c->res.rss[x] == st->rss_met &&
                      st->res.settled))
    return;
  /* A row's target is met at its last point, after all its calls: its
   * points before are zero-delay ones (the stack's), and a fall met there
   * dropped pages from the blocks the row's free then took too, to be
   * written again (liblzma: 4,067 faults at one free). */
  if (x + 1 < s->numdata && s->point[x + 1] == s->point[x]) return;
  int64_t target = c->res.rss[x];
  /* A row whose calls freed blocks of big, the next row's target lower: the
   * recorder read the row's rss before the free's munmap ended (32 MiB took
   * 4 ms on the development VM, past a timer tick, whose sample put the fall
   * in the next row). The lower target is met now: written back here to be
   * dropped at the next row, the freed pages cost rec_helper holds 8,192
   * faults where it took 4,096 (test_call_replay_holds). */
  if (target >= 0 && st->res.gone != st->gone_met) {
    int64_t y = x + 1;
    while (y + 1 < s->numdata && s->point[y + 1] == s->point[x + 1]) y++;
    if (y < s->numdata && c->res.rss[y] >= 0 && c->res.rss[y] < target) target = c->res.rss[y];
  }
  st->gone_met = st->res.gone;
  st->rss_met = target;
  if (target >= 0 && !ms__rt_cres_due(&st->res, target, st->live, c->page)) return;
  int64_t keep = 0;
  if ((rc = ms__rt_cres_target(&st->res, &c->res, target, c->page, &keep)) < 0)
    ms__rt_replay_stop(c, x, rc, MS__RT_FAIL_RESIDENT, keep);
}

/* heap_bytes: the requested bytes of the live blocks; heap_usable: their
 * malloc_usable_size. Both counted as the calls are made: mallinfo2 walks
 * every free chunk, and with the component's blocks that is thousands. */
static void call_measure(const ms__rt_ctx *c, memstub_replay_record *r) {
  r->heap_bytes = c->calls ? c->calls->live : 0;
  r->heap_usable = c->calls ? c->calls->usable : 0;
}

// After the replay: the blocks still live go, with the table and the mapping.
static void call_release(ms__rt_ctx *c) {
  ms__rt_res_release(&c->res);
  ms__rt_calls *st = c->calls;
  if (!st) return;
  for (int64_t i = 0; st->slot && i < st->next_id; i++)
    if (st->slot[i] && !(st->slot[i] & 1)) free(slot_ptr(st, st->slot[i]));  // never free(NULL)
  ms__rt_own_free(st->slot);
  ms__rt_own_free(st->far);
  ms__rt_own_free(st->far_size);
  ms__rt_callrd_close(&st->rd);
  ms__rt_cres_close(&st->res);
  ms__rt_own_free(st);
  c->calls = NULL;
}

const ms__rt_replay_ops ms__rt_call_replay = {"calls", call_prepare, NULL, call_heap,
                                              call_release, call_measure};
