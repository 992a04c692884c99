/* recorder/table.c: the live-block table's memory: directories, leaves and
 * their arenas, their growth, and the side map of big blocks (table.h has
 * the layout and the hot path).
 *
 * Arrays come straight from the mmap system call (never the interposed
 * mmap: they are not the program's mappings), written in full when mapped
 * (MAP_POPULATE: no zero-page read fault, no later write fault) and counted
 * byte for byte as the recorder's own resident memory (ms__rec_self_bytes),
 * which rss_bytes leaves out. */
#include "table.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

ms__rec_shard ms__rec_shards[TB_SHARDS];
static uint64_t ms__rec_big_n;  // blocks in the side map
int ms__rec_table_failed;
uint64_t ms__rec_table_limit = UINT64_MAX;  // MEMSTUB_RECORD_TABLE_MAX_BYTES
extern int64_t ms__rec_self_bytes;

#define FIRST_DIR 64      // directory slots of a new shard
#define FIRST_ARENA 512   // arena entries of a new shard (4 KiB)

static uint64_t g_bytes, g_bytes_max;  // the arrays' bytes (under any lock: atomics)

static size_t page_up(size_t n) {
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  if (ps == 0 || (ps & (ps - 1))) ps = 4096;
  return (n + ps - 1) & ~(ps - 1);
}

// n zeroed bytes (page-rounded), resident and counted; NULL when out of memory or the limit.
static void *map_array(size_t n) {
  n = page_up(n);
  if (__atomic_load_n(&g_bytes, __ATOMIC_RELAXED) + n > ms__rec_table_limit) return NULL;
  void *p = (void *)syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) return NULL;
  __atomic_add_fetch(&ms__rec_self_bytes, (int64_t)n, __ATOMIC_RELAXED);
  uint64_t now = __atomic_add_fetch(&g_bytes, n, __ATOMIC_RELAXED);
  uint64_t max = __atomic_load_n(&g_bytes_max, __ATOMIC_RELAXED);
  while (now > max &&
         !__atomic_compare_exchange_n(&g_bytes_max, &max, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return p;
}

static void unmap_array(void *p, size_t n) {
  if (!p) return;
  n = page_up(n);
  syscall(SYS_munmap, p, n);
  __atomic_sub_fetch(&ms__rec_self_bytes, (int64_t)n, __ATOMIC_RELAXED);
  __atomic_sub_fetch(&g_bytes, n, __ATOMIC_RELAXED);
}

// Out of memory: said once, for the recording's end (ms__rec_lost).
static int no_memory(void) {
  __atomic_store_n(&ms__rec_table_failed, 1, __ATOMIC_RELAXED);
  return -ENOMEM;
}

void ms__rec_table_wait(int *lock) {
  for (unsigned spins = 0;; spins++) {
    if (!__atomic_load_n(lock, __ATOMIC_RELAXED) && !__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
      return;
    if (spins < 128)
      TB_RELAX();
    else
      sched_yield();  // its holder may be off the CPU (more threads than cores)
  }
}

/* ---- leaves: power-of-two arrays of entries from the shard's arena ---- */

// A leaf of 2^c entries, zeroed (lock held); 0 when out of memory.
static uint32_t leaf_alloc(ms__rec_shard *S, unsigned c) {
  uint64_t n = (uint64_t)1 << c;
  uint32_t at = S->freel[c];
  if (at) {
    S->freel[c] = (uint32_t)S->arena[at];
    memset(S->arena + at, 0, n * sizeof *S->arena);
    return at;
  }
  // Leaves of a cache line or less never straddle two.
  uint64_t align = n < 8 ? n : 8, top = (S->atop + align - 1) & ~(align - 1);
  if (top + n > S->acap) {
    uint64_t cap = S->acap * 2;
    while (cap < top + n) cap *= 2;
    if (cap > UINT32_MAX) return 0;  // leaf numbers are 32 bits
    uint64_t *a = map_array(cap * sizeof *a);
    if (!a) return 0;
    memcpy(a, S->arena, S->atop * sizeof *a);
    unmap_array(S->arena, S->abytes);
    S->arena = a;
    S->acap = cap;
    S->abytes = cap * sizeof *a;
  }
  S->atop = top + n;
  return (uint32_t)top;
}

static void leaf_free(ms__rec_shard *S, uint32_t at, unsigned c) {
  S->arena[at] = S->freel[c];
  S->freel[c] = at;
}

int ms__rec_leaf_room(ms__rec_shard *S, ms__rec_dent *d) {
  unsigned c = d->leaf ? d->lcap + 1u : 0;
  while (c < TB_LEAF_MAX && tb_fill((uint32_t)1 << c) < d->n + 1u) c++;
  uint32_t at = leaf_alloc(S, c);
  if (!at) return no_memory();
  uint64_t *to = S->arena + at;
  uint32_t mask = ((uint32_t)1 << c) - 1;
  if (d->leaf) {
    const uint64_t *from = S->arena + d->leaf;
    for (uint32_t k = 0; k < (uint32_t)1 << d->lcap; k++) {
      uint64_t e = from[k];
      if (!e) continue;
      uint32_t i = tb_lhome((e & TB_UNIT_MASK) - 1, c);
      while (to[i]) i = (i + 1) & mask;
      to[i] = e;
    }
    leaf_free(S, d->leaf, d->lcap);
  }
  d->leaf = at;
  d->lcap = (uint8_t)c;
  return 0;
}

/* ---- directories: page -> leaf, linear probing, at most half full ---- */

// Put directory entry x into dir (mask) known not to hold its page.
static void dir_put(ms__rec_dent *dir, uint64_t mask, const ms__rec_dent *x) {
  uint64_t i = tb_dslot(tb_hash(x->page - 1), mask);
  while (dir[i].page) i = (i + 1) & mask;
  dir[i] = *x;
}

ms__rec_dent *ms__rec_dir_add(ms__rec_shard *S, uint64_t page) {
  if ((S->pages + 1) * 2 > S->dmask + 1) {
    uint64_t slots = (S->dmask + 1) * 2;
    ms__rec_dent *dir = map_array(slots * sizeof *dir);
    if (!dir) {
      no_memory();
      return NULL;
    }
    for (uint64_t i = 0; i <= S->dmask; i++)
      if (S->dir[i].page) dir_put(dir, slots - 1, &S->dir[i]);
    unmap_array(S->dir, S->dbytes);
    S->dir = dir;
    S->dmask = slots - 1;
    S->dbytes = slots * sizeof *dir;
  }
  ms__rec_dent x = {.page = page};
  uint64_t i = tb_dslot(tb_hash(page - 1), S->dmask);
  while (S->dir[i].page) i = (i + 1) & S->dmask;
  S->dir[i] = x;
  S->pages++;
  return &S->dir[i];
}

void ms__rec_dir_drop(ms__rec_shard *S, ms__rec_dent *d) {
  if (d->leaf) leaf_free(S, d->leaf, d->lcap);
  // Out, and the entries behind it that are away from home shift back.
  uint64_t i = (uint64_t)(d - S->dir), mask = S->dmask;
  for (uint64_t j = i;;) {
    j = (j + 1) & mask;
    if (!S->dir[j].page) break;
    uint64_t h = tb_dslot(tb_hash(S->dir[j].page - 1), mask);
    if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
      S->dir[i] = S->dir[j];
      i = j;
    }
  }
  S->dir[i] = (ms__rec_dent){0};
  S->pages--;
}

static int shards_init(void) {
  for (int k = 0; k < TB_SHARDS; k++) {
    ms__rec_shard *S = &ms__rec_shards[k];
    memset(S, 0, sizeof *S);
    S->dir = map_array(FIRST_DIR * sizeof *S->dir);
    S->arena = map_array(FIRST_ARENA * sizeof *S->arena);
    if (!S->dir || !S->arena) return -ENOMEM;
    S->dmask = FIRST_DIR - 1;
    S->dbytes = FIRST_DIR * sizeof *S->dir;
    S->acap = FIRST_ARENA;
    S->abytes = FIRST_ARENA * sizeof *S->arena;
    S->atop = 8;  // leaf 0 is none
  }
  return 0;
}

/* ---- the side map: full-width entries, open addressing, one lock ---- */

typedef struct bslot {
  uintptr_t p;  // 0 empty, 1 deleted
  uint64_t entry;
  uint32_t ep;
} bslot;
static bslot *g_big;
static uint64_t g_big_cap, g_big_used;  // slots; slots not empty (live or deleted)
static uint64_t g_big_alone;  // blocks there without a slot (!tb_inline)
static int g_big_lock;

static uint64_t big_slot(uintptr_t p, uint64_t cap) {
  return (uint64_t)((p >> 4) * UINT64_C(0x9E3779B97F4A7C15)) >> 32 & (cap - 1);
}

static void big_lock(void) {
  if (__atomic_exchange_n(&g_big_lock, 1, __ATOMIC_ACQUIRE)) ms__rec_table_wait(&g_big_lock);
}
static void big_unlock(void) { __atomic_store_n(&g_big_lock, 0, __ATOMIC_RELEASE); }

// Room for one more (lock held): rebuilt at most a quarter full when half used.
static int big_room(void) {
  if (g_big && (g_big_used + 1) * 2 <= g_big_cap) return 0;
  uint64_t live = __atomic_load_n(&ms__rec_big_n, __ATOMIC_RELAXED) + 1, cap = 64;
  while (cap < live * 4) cap *= 2;
  bslot *b = map_array(cap * sizeof *b);
  if (!b) {
    __atomic_store_n(&ms__rec_table_failed, 1, __ATOMIC_RELAXED);
    return -ENOMEM;
  }
  for (uint64_t i = 0; i < g_big_cap; i++) {
    if (g_big[i].p <= 1) continue;
    uint64_t j = big_slot(g_big[i].p, cap);
    while (b[j].p) j = (j + 1) & (cap - 1);
    b[j] = g_big[i];
  }
  unmap_array(g_big, g_big_cap * sizeof *g_big);
  g_big = b;
  g_big_cap = cap;
  g_big_used = live - 1;
  return 0;
}

// The slot of p (lock held), or NULL.
static bslot *big_find(uintptr_t p) {
  if (!g_big) return NULL;
  for (uint64_t j = big_slot(p, g_big_cap);; j = (j + 1) & (g_big_cap - 1)) {
    if (g_big[j].p == p) return &g_big[j];
    if (g_big[j].p == 0) return NULL;
  }
}

int ms__rec_big_put(uintptr_t p, uint64_t entry, uint32_t ep, uint64_t *old, uint32_t *old_ep) {
  big_lock();
  bslot *s = big_find(p);
  if (s) {
    *old = s->entry;
    *old_ep = s->ep;
    s->entry = entry;
    s->ep = ep;
    big_unlock();
    return 1;
  }
  if (big_room() != 0) {
    big_unlock();
    return -ENOMEM;
  }
  uint64_t j = big_slot(p, g_big_cap);
  while (g_big[j].p > 1) j = (j + 1) & (g_big_cap - 1);
  if (g_big[j].p == 0) g_big_used++;
  g_big[j] = (bslot){p, entry, ep};
  __atomic_add_fetch(&ms__rec_big_n, 1, __ATOMIC_RELAXED);
  if (!tb_inline(p)) __atomic_add_fetch(&g_big_alone, 1, __ATOMIC_RELAXED);
  big_unlock();
  return 0;
}

int ms__rec_big_take(uintptr_t p, uint64_t *entry, uint32_t *ep) {
  big_lock();
  bslot *s = big_find(p);
  if (!s) {
    big_unlock();
    return -1;
  }
  *entry = s->entry;
  *ep = s->ep;
  s->p = 1;
  __atomic_sub_fetch(&ms__rec_big_n, 1, __ATOMIC_RELAXED);
  if (!tb_inline(p)) __atomic_sub_fetch(&g_big_alone, 1, __ATOMIC_RELAXED);
  big_unlock();
  return 0;
}

/* A big block at an inline pointer: its leaf entry (size TB_SZ_MAX) for
 * the lookups and the stale check, its full entry in the side map. */
int ms__rec_table_put_big(uintptr_t p, uint64_t entry, uint32_t ep, uint64_t *old, uint32_t *old_ep) {
  uint64_t o1, o2;
  uint32_t e1, e2;
  uint64_t e = ((uint64_t)ep << 32) | (TB_SZ_MAX << TB_SZ_SHIFT) | (entry & NOT_MINE ? TB_FLAG : 0) |
               ((((uint64_t)p >> 4) & 255) + 1);
  int rc = tb_put_unit(p, e, &o1, &e1);
  if (rc < 0) return rc;
  // A stale big block's side entry was taken out with it (tb_put_unit).
  int rb = ms__rec_big_put(p, entry, ep, &o2, &e2);
  if (rb < 0) {
    table_take(p, &o2, &e2);
    return rb;
  }
  if (rc == 1) {
    *old = o1;
    *old_ep = e1;
  }
  return rc;
}

/* ---- the whole table ---- */

int ms__rec_table_init(void) { return shards_init() != 0 ? no_memory() : 0; }

int ms__rec_table_reset(void) {
  for (int k = 0; k < TB_SHARDS; k++) {
    unmap_array(ms__rec_shards[k].dir, ms__rec_shards[k].dbytes);
    unmap_array(ms__rec_shards[k].arena, ms__rec_shards[k].abytes);
  }
  unmap_array(g_big, g_big_cap * sizeof *g_big);
  memset(ms__rec_shards, 0, sizeof ms__rec_shards);
  g_big = NULL;
  g_big_cap = g_big_used = 0;
  g_big_lock = 0;
  ms__rec_big_n = g_big_alone = 0;
  g_bytes_max = g_bytes;
  ms__rec_table_failed = 0;
  return ms__rec_table_init();
}

void ms__rec_table_each(void (*f)(uintptr_t p, uint64_t entry, uint32_t ep, void *arg), void *arg) {
  for (int k = 0; k < TB_SHARDS; k++) {
    const ms__rec_shard *S = &ms__rec_shards[k];
    for (uint64_t i = 0; i <= S->dmask; i++) {
      const ms__rec_dent *d = &S->dir[i];
      if (!d->page || !d->leaf) continue;
      for (uint32_t s = 0; s < (uint32_t)1 << d->lcap; s++) {
        uint64_t e = S->arena[d->leaf + s];
        if (!e || ((e >> TB_SZ_SHIFT) & TB_SZ_MAX) == TB_SZ_MAX) continue;  // big: the side map has it
        uintptr_t p = (uintptr_t)(((d->page - 1) << TB_PAGE_SHIFT) | (((e & TB_UNIT_MASK) - 1) << 4));
        f(p, tb_entry_of(e), (uint32_t)(e >> 32), arg);
      }
    }
  }
  for (uint64_t j = 0; j < g_big_cap; j++)
    if (g_big[j].p > 1) f(g_big[j].p, g_big[j].entry, g_big[j].ep, arg);
}

uint64_t ms__rec_table_blocks(void) {
  uint64_t n = __atomic_load_n(&g_big_alone, __ATOMIC_RELAXED);
  for (int k = 0; k < TB_SHARDS; k++) n += __atomic_load_n(&ms__rec_shards[k].blocks, __ATOMIC_RELAXED);
  return n;
}

uint64_t ms__rec_table_bytes(void) { return __atomic_load_n(&g_bytes, __ATOMIC_RELAXED); }
uint64_t ms__rec_table_bytes_max(void) { return __atomic_load_n(&g_bytes_max, __ATOMIC_RELAXED); }
