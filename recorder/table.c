/* recorder/table.c: the live-block table's memory, its growth and its side
 * map of big blocks (table.h has the layout and the hot path).
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
uint64_t ms__rec_big_n;
int ms__rec_table_failed;
extern int64_t ms__rec_self_bytes;

#define FIRST_BUCKETS 64  // a 4 KiB page per shard
#define LOAD_MAX 0.85     // a shard grows when this full ...
#define LOAD_NEW 0.55     // ... into an array this full

static uint64_t g_bytes, g_bytes_max;  // the arrays' bytes (under any lock: atomics)
uint64_t ms__rec_table_limit = UINT64_MAX;  // their bytes at most (MEMSTUB_RECORD_TABLE_MAX_BYTES)

static size_t page_up(size_t n) {
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  if (ps == 0 || (ps & (ps - 1))) ps = 4096;
  return (n + ps - 1) & ~(ps - 1);
}

// n zeroed bytes (page-rounded), resident and counted; NULL when out of memory.
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

/* ---- shards ---- */

// Buckets for n blocks at LOAD_NEW, filling the array's last page.
static uint64_t buckets_for(uint64_t n) {
  uint64_t nb = (uint64_t)((double)n / (LOAD_NEW * TB_SLOTS)) + 1;
  if (nb < FIRST_BUCKETS) nb = FIRST_BUCKETS;
  return page_up(nb * sizeof(ms__rec_tbucket)) / sizeof(ms__rec_tbucket);
}

static void shard_set(ms__rec_shard *S, ms__rec_tbucket *b, uint64_t nb) {
  S->b = b;
  S->nb = nb;
  S->bytes = nb * sizeof(ms__rec_tbucket);
  S->limit = (uint64_t)(LOAD_MAX * (double)(nb * TB_SLOTS));
}

// Put a key word known to be absent into array b of nb buckets.
static void put_new(ms__rec_tbucket *b, uint64_t nb, uint64_t kw, uint32_t ep) {
  uint64_t i = tb_home(tb_hash((uintptr_t)((kw >> TB_KEY_SHIFT) << 4)), nb);
  while (b[i].used == TB_FULL) {
    b[i].ovf++;
    i = tb_next(i, nb);
  }
  unsigned s = (unsigned)__builtin_ctz(~(unsigned)b[i].used);
  b[i].key[s] = kw;
  b[i].ep[s] = ep;
  b[i].used |= (uint8_t)(1u << s);
}

int ms__rec_table_grow(ms__rec_shard *S) {
  uint64_t nb = buckets_for(S->n + 1);
  ms__rec_tbucket *b = map_array(nb * sizeof *b);
  if (!b) {
    __atomic_store_n(&ms__rec_table_failed, 1, __ATOMIC_RELAXED);
    return -ENOMEM;
  }
  for (uint64_t i = 0; i < S->nb; i++) {
    const ms__rec_tbucket *B = &S->b[i];
    for (unsigned m = B->used; m; m &= m - 1) {
      unsigned s = (unsigned)__builtin_ctz(m);
      put_new(b, nb, B->key[s], B->ep[s]);
    }
  }
  unmap_array(S->b, S->bytes);
  shard_set(S, b, nb);
  S->grows++;
  return 0;
}

static int shards_init(void) {
  for (int k = 0; k < TB_SHARDS; k++) {
    ms__rec_shard *S = &ms__rec_shards[k];
    uint64_t nb = buckets_for(0);
    ms__rec_tbucket *b = map_array(nb * sizeof *b);
    if (!b) return -ENOMEM;
    memset(S, 0, sizeof *S);
    shard_set(S, b, nb);
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

/* A big block at an inline pointer: its slot (size TB_SZ_MAX) for the
 * lookups and the stale check, its entry in the side map. */
int ms__rec_table_put_big(uintptr_t p, uint64_t entry, uint32_t ep, uint64_t *old, uint32_t *old_ep) {
  uint64_t o1, o2;
  uint32_t e1, e2;
  uint64_t kw = ((uint64_t)(p >> 4) << TB_KEY_SHIFT) | (entry & NOT_MINE ? TB_FLAG : 0) | TB_SZ_MAX;
  int rc = tb_put_slot(p, kw, ep, &o1, &e1);
  if (rc < 0) return rc;
  // A stale big block's side entry was taken out with it (table_put).
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

int ms__rec_table_init(void) {
  if (shards_init() != 0) {
    __atomic_store_n(&ms__rec_table_failed, 1, __ATOMIC_RELAXED);
    return -ENOMEM;
  }
  return 0;
}

int ms__rec_table_reset(void) {
  for (int k = 0; k < TB_SHARDS; k++) unmap_array(ms__rec_shards[k].b, ms__rec_shards[k].bytes);
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
    for (uint64_t i = 0; i < S->nb; i++) {
      const ms__rec_tbucket *B = &S->b[i];
      for (unsigned m = B->used; m; m &= m - 1) {
        unsigned s = (unsigned)__builtin_ctz(m);
        uint64_t kw = B->key[s];
        if ((kw & TB_SZ_MAX) == TB_SZ_MAX) continue;  // the side map has it
        f((uintptr_t)((kw >> TB_KEY_SHIFT) << 4),
          (kw & TB_SZ_MAX) | (kw & TB_FLAG ? NOT_MINE : 0), B->ep[s], arg);
      }
    }
  }
  for (uint64_t j = 0; j < g_big_cap; j++)
    if (g_big[j].p > 1) f(g_big[j].p, g_big[j].entry, g_big[j].ep, arg);
}

uint64_t ms__rec_table_blocks(void) {
  uint64_t n = __atomic_load_n(&g_big_alone, __ATOMIC_RELAXED);
  for (int k = 0; k < TB_SHARDS; k++) n += __atomic_load_n(&ms__rec_shards[k].n, __ATOMIC_RELAXED);
  return n;
}

uint64_t ms__rec_table_bytes(void) { return __atomic_load_n(&g_bytes, __ATOMIC_RELAXED); }
uint64_t ms__rec_table_bytes_max(void) { return __atomic_load_n(&g_bytes_max, __ATOMIC_RELAXED); }
