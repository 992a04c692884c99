/* recorder/table.h: the live-block table, pointer -> (requested size,
 * counted or not, epoch), on the hooks' hot path (docs/recording.md, "The
 * live-block table").
 *
 * Exact at any size and address layout: it grows, and a block is lost only
 * when memory for the table cannot be had, which fails the recording
 * (ms__rec_table_failed). Laid out like the heap it describes:
 * - a directory per shard maps a heap page (4 KiB of addresses) to a
 *   *leaf*, a small array of 8-byte entries for the blocks that start in
 *   that page: the block's 16-byte unit in the page (8 bits), whether it is
 *   counted, its size (22 bits) and its epoch (32 bits, epochs.c);
 * - a leaf holds 1 to 256 entries (a power of two, at most three quarters
 *   full from 8 on; 256 is indexed by the unit itself); an entry's place is
 *   its unit scaled to the leaf (interpolation), then linear probing, and a
 *   delete shifts the entries behind it back (no tombstones);
 * - so the blocks the allocator packs into a page share one leaf, usually
 *   one or two cache lines, and a run of allocations writes them in order,
 *   while the directory (16 bytes a page) stays small enough for the cache;
 *   the memory follows the live blocks: about 10 to 20 bytes a block;
 * - 64 shards by a hash of the page, each with its lock, taken only once the
 *   program has a second thread (ms__rec_multi); leaves come from the
 *   shard's arena by size class, directories grow at half full;
 * - a block of 4 MiB or more has an entry that says so and its full entry
 *   in a small side map (table.c), where pointers that are not 16-byte
 *   aligned or lie above 2^48 live too.
 * The hooks never re-enter it: a signal handler that calls malloc during the
 * bookkeeping passes through (hooks.c). */
#ifndef MEMSTUB_RECORDER_TABLE_H
#define MEMSTUB_RECORDER_TABLE_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#ifndef HOT
#define HOT static inline __attribute__((always_inline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif

// An entry as the hooks hand it around: the requested size, plus NOT_MINE
// when the block is not counted (another thread's, --heap thread).
#define NOT_MINE (UINT64_C(1) << 63)

#define TB_SHARD_BITS 6
#define TB_SHARDS (1 << TB_SHARD_BITS)
#define TB_PAGE_SHIFT 12
#define TB_LEAF_MAX 8  // a leaf holds at most 2^8 entries: one per unit of a page
// A leaf entry: bits 0-8 the unit + 1 (0: an empty slot), bit 9 not counted,
// bits 10-31 the size (TB_SZ_MAX: in the side map), bits 32-63 the epoch.
#define TB_UNIT_MASK UINT64_C(0x1ff)
#define TB_FLAG (UINT64_C(1) << 9)
#define TB_SZ_SHIFT 10
#define TB_SZ_MAX ((UINT64_C(1) << 22) - 1)

typedef struct ms__rec_dent {
  uint64_t page;   // page number + 1; 0: an empty slot
  uint32_t leaf;   // its leaf: an index into the shard's arena, in entries
  uint16_t n;      // blocks in the page
  uint8_t lcap;    // log2 of the leaf's entries
  uint8_t spare;
} ms__rec_dent;

typedef struct ms__rec_shard {
  ms__rec_dent *dir;
  uint64_t dmask;   // directory slots - 1
  uint64_t pages;   // directory entries in use
  uint64_t *arena;  // the leaves
  uint64_t acap, atop;                  // arena entries, and the first never handed out
  uint32_t freel[TB_LEAF_MAX + 1];      // free leaves by size class (next in their entry 0)
  uint64_t blocks;
  uint64_t dbytes, abytes;  // mapped for dir and arena
  int lock;
} __attribute__((aligned(64))) ms__rec_shard;

extern ms__rec_shard ms__rec_shards[TB_SHARDS];
extern int ms__rec_multi;  // a second thread may run: take the locks

// Reserve the first arrays; 0 or -ENOMEM.
int ms__rec_table_init(void);
// A forked child: a new empty table (the parent's blocks are not the
// child's; a lock a vanished thread held is dropped); 0 or -ENOMEM.
int ms__rec_table_reset(void);
// Directory entry d of shard S needs a leaf with room for one more (lock
// held): 0, or -ENOMEM (nothing changed).
int ms__rec_leaf_room(ms__rec_shard *S, ms__rec_dent *d) __attribute__((noinline));
// Page page of shard S (lock held): its directory entry, made (with no
// leaf) when absent; NULL when out of memory.
ms__rec_dent *ms__rec_dir_add(ms__rec_shard *S, uint64_t page) __attribute__((noinline));
// The page's last block left (lock held): its leaf freed, its entry removed.
void ms__rec_dir_drop(ms__rec_shard *S, ms__rec_dent *d) __attribute__((noinline));
/* The side map (its own lock): put returns as table_put does; take as
 * table_take. It holds the blocks whose pointer has no unit (tb_inline)
 * and the entries of blocks of TB_SZ_MAX bytes or more, whose leaf entry
 * says only that (ms__rec_table_put_big puts both). */
int ms__rec_table_put_big(uintptr_t p, uint64_t entry, uint32_t ep, uint64_t *old, uint32_t *old_ep)
    __attribute__((noinline));
int ms__rec_big_put(uintptr_t p, uint64_t entry, uint32_t ep, uint64_t *old, uint32_t *old_ep)
    __attribute__((noinline));
int ms__rec_big_take(uintptr_t p, uint64_t *entry, uint32_t *ep) __attribute__((noinline));
// Call f on every block (at exit, the program stopped; no locks).
void ms__rec_table_each(void (*f)(uintptr_t p, uint64_t entry, uint32_t ep, void *arg), void *arg);
// Blocks in the table, and the bytes of the table's arrays now and at most.
uint64_t ms__rec_table_blocks(void);
uint64_t ms__rec_table_bytes(void);
uint64_t ms__rec_table_bytes_max(void);
// The table could not grow once (out of memory): the recording is not exact.
extern int ms__rec_table_failed;
// The arrays' bytes at most (growth beyond fails as out of memory); no limit by default.
extern uint64_t ms__rec_table_limit;
// The lock is held by another thread: spin a while, then yield (table.c).
void ms__rec_table_wait(int *lock) __attribute__((noinline));

#if defined(__x86_64__) || defined(__i386__)
#define TB_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define TB_RELAX() __asm__ volatile("yield")
#else
#define TB_RELAX() ((void)0)
#endif

// Whether p has a unit in a page (16-byte aligned, below 2^48).
HOT int tb_inline(uintptr_t p) { return (p & (~(UINT64_C(1) << 48) + 1 + 15)) == 0; }

// The hash of a page: shard in the top bits, directory slot below.
HOT uint64_t tb_hash(uint64_t page) { return page * UINT64_C(0x9E3779B97F4A7C15); }
HOT ms__rec_shard *tb_shard(uint64_t h) { return &ms__rec_shards[h >> (64 - TB_SHARD_BITS)]; }
HOT uint64_t tb_dslot(uint64_t h, uint64_t dmask) { return (h >> 20) & dmask; }
/* The entries a leaf of cap entries holds at most: all of them up to 4 and
 * from 128 on (glibc's 32-byte chunks, 128 a page, fall on distinct places
 * of a 128-entry leaf; 256 is one place per unit), else three quarters. */
HOT uint32_t tb_fill(uint32_t cap) { return cap <= 4 || cap >= 128 ? cap : cap - cap / 4; }
// A unit's first place in a leaf of 2^lcap entries.
HOT uint32_t tb_lhome(uint64_t unit, unsigned lcap) { return (uint32_t)((unit << lcap) >> 8); }

HOT void tb_lock(ms__rec_shard *S, int mt) {
  if (mt && UNLIKELY(__atomic_exchange_n(&S->lock, 1, __ATOMIC_ACQUIRE)))
    ms__rec_table_wait(&S->lock);
}
HOT void tb_unlock(ms__rec_shard *S, int mt) {
  if (mt) __atomic_store_n(&S->lock, 0, __ATOMIC_RELEASE);
}

// Page pg's directory entry in S (lock held), or NULL.
HOT ms__rec_dent *tb_dir_find(const ms__rec_shard *S, uint64_t h, uint64_t pg) {
  for (uint64_t i = tb_dslot(h, S->dmask);; i = (i + 1) & S->dmask) {
    ms__rec_dent *d = &S->dir[i];
    if (d->page == pg) return d;
    if (!d->page) return NULL;
  }
}

HOT uint64_t tb_entry_of(uint64_t e) {
  return ((e >> TB_SZ_SHIFT) & TB_SZ_MAX) | (e & TB_FLAG ? NOT_MINE : 0);
}

/* Start loading p's directory slot (any thread, no lock: a directory a
 * growth replaces may be the one prefetched, which is harmless). */
HOT void table_prefetch(uintptr_t p) {
  uint64_t h = tb_hash((uint64_t)p >> TB_PAGE_SHIFT);
  ms__rec_shard *S = tb_shard(h);
  ms__rec_dent *dir = __atomic_load_n(&S->dir, __ATOMIC_RELAXED);
  __builtin_prefetch(&dir[tb_dslot(h, __atomic_load_n(&S->dmask, __ATOMIC_RELAXED))], 0, 3);
}

/* Put block p (pre: tb_inline(p)) with leaf entry value e (its unit + 1 in
 * the low bits) into its page's leaf; returns as table_put. */
HOT int tb_put_unit(uintptr_t p, uint64_t e, uint64_t *old, uint32_t *old_ep) {
  uint64_t pg = ((uint64_t)p >> TB_PAGE_SHIFT) + 1, unit = ((uint64_t)p >> 4) & 255;
  uint64_t h = tb_hash(pg - 1);
  ms__rec_shard *S = tb_shard(h);
  int mt = __atomic_load_n(&ms__rec_multi, __ATOMIC_RELAXED);
  tb_lock(S, mt);
  ms__rec_dent *d = tb_dir_find(S, h, pg);
  if (UNLIKELY(!d) && !(d = ms__rec_dir_add(S, pg))) goto nomem;
  uint64_t *leaf = S->arena + d->leaf;
  uint32_t cap = (uint32_t)1 << d->lcap, mask = cap - 1;
  if (d->n) {  // the block may be there already (a free no hook saw)
    for (uint32_t i = tb_lhome(unit, d->lcap), k = 0; k < cap && leaf[i]; k++, i = (i + 1) & mask)
      if ((leaf[i] & TB_UNIT_MASK) == unit + 1) {
        uint64_t o = leaf[i];
        leaf[i] = e;
        tb_unlock(S, mt);
        *old = tb_entry_of(o);
        *old_ep = (uint32_t)(o >> 32);
        if (UNLIKELY(((o >> TB_SZ_SHIFT) & TB_SZ_MAX) == TB_SZ_MAX)) ms__rec_big_take(p, old, old_ep);
        return 1;
      }
  }
  if (UNLIKELY(!d->leaf || d->n + 1u > tb_fill(cap))) {
    if (ms__rec_leaf_room(S, d) != 0) goto nomem;
    leaf = S->arena + d->leaf;
    cap = (uint32_t)1 << d->lcap;
    mask = cap - 1;
  }
  uint32_t i = tb_lhome(unit, d->lcap);
  while (leaf[i]) i = (i + 1) & mask;
  leaf[i] = e;
  d->n++;
  S->blocks++;
  tb_unlock(S, mt);
  return 0;
nomem:
  tb_unlock(S, mt);
  return -12;  // -ENOMEM
}

/* Put block p (entry: size | NOT_MINE; ep its epoch). 0 when put; 1 when p
 * was in the table already (a block freed where no hook saw it: the
 * allocator handed its address out again), *old and *old_ep then hold the
 * stale block, now replaced; -ENOMEM when the table could not grow. */
HOT int table_put(uintptr_t p, uint64_t entry, uint32_t ep, uint64_t *old, uint32_t *old_ep) {
  if (UNLIKELY(!tb_inline(p))) return ms__rec_big_put(p, entry, ep, old, old_ep);
  uint64_t size = entry & ~NOT_MINE;
  if (UNLIKELY(size >= TB_SZ_MAX)) return ms__rec_table_put_big(p, entry, ep, old, old_ep);
  uint64_t e = ((uint64_t)ep << 32) | (size << TB_SZ_SHIFT) | (entry & NOT_MINE ? TB_FLAG : 0) |
               ((((uint64_t)p >> 4) & 255) + 1);
  return tb_put_unit(p, e, old, old_ep);
}

/* Take block p out: 0 with its entry (size | NOT_MINE) and epoch, or -1
 * when p is not in the table. */
HOT int table_take(uintptr_t p, uint64_t *entry, uint32_t *ep) {
  if (UNLIKELY(!tb_inline(p))) return ms__rec_big_take(p, entry, ep);
  uint64_t pg = ((uint64_t)p >> TB_PAGE_SHIFT) + 1, unit = ((uint64_t)p >> 4) & 255;
  uint64_t h = tb_hash(pg - 1);
  ms__rec_shard *S = tb_shard(h);
  int mt = __atomic_load_n(&ms__rec_multi, __ATOMIC_RELAXED);
  tb_lock(S, mt);
  ms__rec_dent *d = tb_dir_find(S, h, pg);
  if (d) {
    uint64_t *leaf = S->arena + d->leaf;
    uint32_t cap = (uint32_t)1 << d->lcap, mask = cap - 1;
    for (uint32_t i = tb_lhome(unit, d->lcap), k = 0; k < cap && leaf[i]; k++, i = (i + 1) & mask) {
      uint64_t e = leaf[i];
      if ((e & TB_UNIT_MASK) != unit + 1) continue;
      // Out, and the entries behind it that are away from home shift back.
      for (uint32_t j = i;;) {
        j = (j + 1) & mask;
        uint64_t x = leaf[j];
        if (!x || j == i) break;
        uint32_t hj = tb_lhome((x & TB_UNIT_MASK) - 1, d->lcap);
        // x may move to i when its home is not cyclically in (i, j].
        if (i <= j ? (hj <= i || hj > j) : (hj <= i && hj > j)) {
          leaf[i] = x;
          i = j;
        }
      }
      leaf[i] = 0;
      S->blocks--;
      if (--d->n == 0) ms__rec_dir_drop(S, d);
      tb_unlock(S, mt);
      *entry = tb_entry_of(e);
      *ep = (uint32_t)(e >> 32);
      if (UNLIKELY(((e >> TB_SZ_SHIFT) & TB_SZ_MAX) == TB_SZ_MAX)) ms__rec_big_take(p, entry, ep);
      return 0;
    }
  }
  tb_unlock(S, mt);
  return -1;
}

#pragma GCC visibility pop

#endif
