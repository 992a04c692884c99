/* recorder/table.h: the live-block table, pointer -> (requested size,
 * counted or not, epoch), on the hooks' hot path (docs/recording.md, "The
 * live-block table").
 *
 * Exact at any size and address layout: it grows, and a block is lost only
 * when memory for the table cannot be had, which fails the recording
 * (ms__rec_table_failed). Laid out for the cache:
 * - 64 shards, each an array of 64-byte buckets (one cache line) of five
 *   slots: an 8-byte key word ((p >> 4) << 20 | NOT_COUNTED bit | size in
 *   19 bits) and a 4-byte epoch (epochs.c: who allocated it, when, in which
 *   region), 12.8 bytes a slot;
 * - a block's home bucket is a hash of its 128-byte heap line, so the blocks
 *   the allocator packs together share a bucket (a run of small mallocs
 *   touches one cache line per four blocks), while distant lines spread
 *   evenly over shards and buckets (no clustering by address);
 * - linear probing over buckets, with a count per bucket of the entries
 *   homed at or before it that sit after it: a lookup stops at the first
 *   bucket whose count is 0, a delete leaves no tombstone;
 * - a shard grows (rehashed into a new array, 0.55 full) when it is 0.85
 *   full: 15 to 23 bytes a live block;
 * - a block of 512 KiB or more has a slot that says so, and its entry in a
 *   small side map of full-width entries (table.c), where pointers that are
 *   not 16-byte aligned or lie above 2^48 live too.
 * Each shard has a lock, taken only once the program has a second thread
 * (ms__rec_multi). The hooks never re-enter it: a signal handler that calls
 * malloc during the bookkeeping passes through (hooks.c). */
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
#define TB_SLOTS 5
#define TB_FULL ((1u << TB_SLOTS) - 1)
#define TB_SZ_BITS 19
#define TB_SZ_MAX ((UINT64_C(1) << TB_SZ_BITS) - 1)  // sizes from here: the side map
#define TB_FLAG (UINT64_C(1) << TB_SZ_BITS)
#define TB_KEY_SHIFT (TB_SZ_BITS + 1)

typedef struct ms__rec_tbucket {
  uint64_t key[TB_SLOTS];  // (p >> 4) << TB_KEY_SHIFT | TB_FLAG (not counted) | size
  uint32_t ep[TB_SLOTS];   // the block's epoch (epochs.c), 0 none
  uint8_t used;            // bit i: slot i holds a block
  uint8_t spare;
  uint16_t ovf;  // entries homed at or before this bucket, stored after it
} ms__rec_tbucket;

typedef struct ms__rec_shard {
  ms__rec_tbucket *b;
  uint64_t nb;     // buckets
  uint64_t n;      // blocks
  uint64_t limit;  // grow when n reaches it
  uint64_t bytes;  // mapped for b
  int lock;
  uint32_t grows;
} __attribute__((aligned(64))) ms__rec_shard;

extern ms__rec_shard ms__rec_shards[TB_SHARDS];
extern uint64_t ms__rec_big_n;  // blocks in the side map
extern int ms__rec_multi;       // a second thread may run: take the locks

// Reserve the first arrays; 0 or -ENOMEM.
int ms__rec_table_init(void);
// A forked child: a new empty table (the parent's blocks are not the
// child's; a lock a vanished thread held is dropped); 0 or -ENOMEM.
int ms__rec_table_reset(void);
// Shard S is full: grow it (lock held). 0, or -ENOMEM (the table stays, full).
int ms__rec_table_grow(ms__rec_shard *S) __attribute__((noinline));
/* The side map (its own lock): put returns as table_put does; take as
 * table_take. It holds the blocks whose pointer has no slot key (tb_inline)
 * and the entries of blocks of TB_SZ_MAX bytes or more, whose slot says
 * only that (ms__rec_table_put_big puts both). */
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

// Whether p's key fits a slot (16-byte aligned, below 2^48).
HOT int tb_inline(uintptr_t p) { return (p & (~(UINT64_C(1) << 48) + 1 + 15)) == 0; }

// The hash of p's 128-byte line: shard in the top bits, bucket below.
HOT uint64_t tb_hash(uintptr_t p) { return (uint64_t)(p >> 7) * UINT64_C(0x9E3779B97F4A7C15); }
HOT ms__rec_shard *tb_shard(uint64_t h) { return &ms__rec_shards[h >> (64 - TB_SHARD_BITS)]; }
HOT uint64_t tb_home(uint64_t h, uint64_t nb) {
  return (uint64_t)(((unsigned __int128)(h << TB_SHARD_BITS) * nb) >> 64);
}
HOT uint64_t tb_next(uint64_t i, uint64_t nb) { return i + 1 == nb ? 0 : i + 1; }

#if defined(__x86_64__) || defined(__i386__)
#define TB_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define TB_RELAX() __asm__ volatile("yield")
#else
#define TB_RELAX() ((void)0)
#endif

// The lock is held by another thread: spin a while, then yield (table.c).
void ms__rec_table_wait(int *lock) __attribute__((noinline));

HOT void tb_lock(ms__rec_shard *S, int mt) {
  if (mt && UNLIKELY(__atomic_exchange_n(&S->lock, 1, __ATOMIC_ACQUIRE)))
    ms__rec_table_wait(&S->lock);
}
HOT void tb_unlock(ms__rec_shard *S, int mt) {
  if (mt) __atomic_store_n(&S->lock, 0, __ATOMIC_RELEASE);
}

/* Start loading p's home bucket (any thread, no lock: a bucket array a
 * growth replaces may be the one prefetched, which is harmless), so that
 * the put or take that follows finds it in the cache. */
HOT void table_prefetch(uintptr_t p) {
  uint64_t h = tb_hash(p);
  ms__rec_shard *S = tb_shard(h);
  ms__rec_tbucket *b = __atomic_load_n(&S->b, __ATOMIC_RELAXED);
  __builtin_prefetch(&b[tb_home(h, __atomic_load_n(&S->nb, __ATOMIC_RELAXED))], 1, 3);
}

/* Put block p's key word kw (pre: tb_inline(p)) and epoch ep into its
 * shard; returns as table_put. */
HOT int tb_put_slot(uintptr_t p, uint64_t kw, uint32_t ep, uint64_t *old, uint32_t *old_ep) {
  uint64_t kp = (uint64_t)(p >> 4);
  uint64_t h = tb_hash(p);
  ms__rec_shard *S = tb_shard(h);
  int mt = __atomic_load_n(&ms__rec_multi, __ATOMIC_RELAXED);
  tb_lock(S, mt);
  if (UNLIKELY(S->n >= S->limit) && ms__rec_table_grow(S) != 0) {
    tb_unlock(S, mt);
    return -12;  // -ENOMEM
  }
  uint64_t nb = S->nb, home = tb_home(h, nb), i = home;
  for (;;) {
    ms__rec_tbucket *B = &S->b[i];
    for (unsigned m = B->used; m; m &= m - 1) {
      unsigned s = (unsigned)__builtin_ctz(m);
      if ((B->key[s] >> TB_KEY_SHIFT) == kp) {  // stale: replace it in place
        uint64_t k = B->key[s];
        *old = (k & TB_SZ_MAX) | (k & TB_FLAG ? NOT_MINE : 0);
        *old_ep = B->ep[s];
        B->key[s] = kw;
        B->ep[s] = ep;
        tb_unlock(S, mt);
        if (UNLIKELY((k & TB_SZ_MAX) == TB_SZ_MAX)) ms__rec_big_take(p, old, old_ep);
        return 1;
      }
    }
    if (!B->ovf) break;
    i = tb_next(i, nb);
  }
  // Into the first bucket with room from home on; the full ones passed over count it.
  i = home;
  while (S->b[i].used == TB_FULL) {
    S->b[i].ovf++;
    i = tb_next(i, nb);
  }
  ms__rec_tbucket *B = &S->b[i];
  unsigned s = (unsigned)__builtin_ctz(~(unsigned)B->used);
  B->key[s] = kw;
  B->ep[s] = ep;
  B->used |= (uint8_t)(1u << s);
  S->n++;
  tb_unlock(S, mt);
  return 0;
}

/* Put block p (entry: size | NOT_MINE; ep its epoch). 0 when put; 1 when p
 * was in the table already (a block freed where no hook saw it: the
 * allocator handed its address out again), *old and *old_ep then hold the
 * stale block, now replaced; -ENOMEM when the table could not grow. */
HOT int table_put(uintptr_t p, uint64_t entry, uint32_t ep, uint64_t *old, uint32_t *old_ep) {
  if (UNLIKELY(!tb_inline(p))) return ms__rec_big_put(p, entry, ep, old, old_ep);
  uint64_t size = entry & ~NOT_MINE;
  if (UNLIKELY(size >= TB_SZ_MAX)) return ms__rec_table_put_big(p, entry, ep, old, old_ep);
  uint64_t kw = ((uint64_t)(p >> 4) << TB_KEY_SHIFT) | (entry & NOT_MINE ? TB_FLAG : 0) | size;
  return tb_put_slot(p, kw, ep, old, old_ep);
}

/* Take block p out: 0 with its entry (size | NOT_MINE) and epoch, or -1
 * when p is not in the table. */
HOT int table_take(uintptr_t p, uint64_t *entry, uint32_t *ep) {
  if (UNLIKELY(!tb_inline(p))) return ms__rec_big_take(p, entry, ep);
  uint64_t kp = (uint64_t)(p >> 4);
  uint64_t h = tb_hash(p);
  ms__rec_shard *S = tb_shard(h);
  int mt = __atomic_load_n(&ms__rec_multi, __ATOMIC_RELAXED);
  tb_lock(S, mt);
  uint64_t nb = S->nb, home = tb_home(h, nb), i = home;
  for (;;) {
    ms__rec_tbucket *B = &S->b[i];
    for (unsigned m = B->used; m; m &= m - 1) {
      unsigned s = (unsigned)__builtin_ctz(m);
      uint64_t k = B->key[s];
      if ((k >> TB_KEY_SHIFT) == kp) {
        *entry = (k & TB_SZ_MAX) | (k & TB_FLAG ? NOT_MINE : 0);
        *ep = B->ep[s];
        B->used &= (uint8_t)~(1u << s);
        for (uint64_t j = home; j != i; j = tb_next(j, nb)) S->b[j].ovf--;
        S->n--;
        tb_unlock(S, mt);
        if (UNLIKELY((k & TB_SZ_MAX) == TB_SZ_MAX)) ms__rec_big_take(p, entry, ep);
        return 0;
      }
    }
    if (!B->ovf) break;
    i = tb_next(i, nb);
  }
  tb_unlock(S, mt);
  return -1;
}

#pragma GCC visibility pop

#endif
