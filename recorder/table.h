/* recorder/table.h: the pointer -> requested size table (hooks.c, hot path).
 *
 * Open addressing with linear probing over 8-byte slots: (ptr >> 4) in the
 * top 43 bits, a "not counted" flag, and the requested size in 20 bits
 * (blocks of 1 MiB and more, and pointers above 2^47, go to a small side
 * table of full-width slots, table.c). The slot index keeps the low address
 * bits (ptr >> 5: neighbouring blocks share cache lines, like the heap
 * itself) and mixes in a hash of each 32 MiB window. Inserts claim an empty or
 * deleted slot with a CAS; deletes store a tombstone. The tables are
 * reserved once (MAP_NORESERVE) and only the pages in use are touched; the
 * main table costs about a quarter of the heap's address range in use. */
#ifndef MEMSTUB_RECORDER_TABLE_H
#define MEMSTUB_RECORDER_TABLE_H

#include "internal.h"

#pragma GCC visibility push(hidden)

#define TOMB ((uint64_t)1)
#define NOT_MINE (UINT64_C(1) << 63)  // in entries handed around (not in slots)
#define MAX_PROBE 4096
#define SZ_BITS 20
#define SZ_BIG ((UINT64_C(1) << SZ_BITS) - 1)
#define FLAG_BIT (UINT64_C(1) << SZ_BITS)

extern uint64_t *ms__rec_tab;
extern uintptr_t ms__rec_tab_mask;
/* --thread all: each slot's owner beside it (same index): the allocating
 * thread's number + 1 in the top 16 bits, the raw time of its bucket (from
 * ms__rec.raw0) in the low 48; 0 unknown. NULL otherwise. */
extern uint64_t *ms__rec_own;
// Their pages written so far (the recorder's own resident memory, state.c).
extern ms__rec_pages ms__rec_tab_pages, ms__rec_own_pages;
#define OWN_T_BITS 48
#define OWN_T_MASK ((UINT64_C(1) << OWN_T_BITS) - 1)

// Reserve the tables (2^bits main slots, fewer when that fails); 0 or -ENOMEM.
int ms__rec_table_init(int bits);
// A forked child: a new empty table of the same size (the parent's blocks are
// not the child's); 0 or -ENOMEM.
int ms__rec_table_reset(void);
// The side table (with the block's owner, table.h): 1 when stored, 0 when full.
int ms__rec_big_put(uintptr_t p, uint64_t entry, uint64_t own);
// The side table's entry for p and its owner (and its slot freed), or -1.
int ms__rec_big_take(uintptr_t p, uint64_t *entry, uint64_t *own);
// --thread all: the owner array beside the table; 0 or -ENOMEM.
int ms__rec_table_own_init(void);

HOT uintptr_t slot_of(uintptr_t p, uintptr_t mask) {
  uintptr_t k = p >> 5;
  return (k ^ (((k >> 20) * UINT64_C(0x9E3779B97F4A7C15)) >> 40)) & mask;
}

// The main table's slots per page, less one (its pages are 4 KiB or more).
HOT uintptr_t slot_page_mask(void) { return ((uintptr_t)1 << (ms__rec_tab_pages.shift - 3)) - 1; }
// Slot i's page was never written (page_unwritten; the table is page-aligned).
HOT int slot_unwritten(uintptr_t i) {
  uintptr_t pi = i >> (ms__rec_tab_pages.shift - 3);
  return !(__atomic_load_n(&ms__rec_tab_pages.bits[pi >> 6], __ATOMIC_RELAXED) &
           (UINT64_C(1) << (pi & 63)));
}

/* entry: requested size, plus NOT_MINE when the block is not counted; own:
 * its owner, stored when with_own (a constant: the plain call keeps today's
 * code). */
HOT int table_put_o(uintptr_t p, uint64_t entry, uint64_t own, int with_own) {
  uint64_t size = entry & ~NOT_MINE;
  if (UNLIKELY(size >= SZ_BIG || (p >> 47) != 0)) {
    // The main table marks the block big, the side table keeps its size.
    if (!ms__rec_big_put(p, entry, own)) return 0;
    size = SZ_BIG;
  }
  uint64_t v = ((uint64_t)(p >> 4) << (SZ_BITS + 1)) | (entry & NOT_MINE ? FLAG_BIT : 0) | size;
  if ((p >> 47) != 0) return 1;  // only in the side table
  uintptr_t i = slot_of(p, ms__rec_tab_mask);
  int mt = multi();
  for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & ms__rec_tab_mask) {
    // Written before read (page_unwritten): at the probe's first slot and at
    // each page it enters. A take then reads only pages a put wrote (or, for
    // a block never put, maybe a zero page, which nothing writes through).
    if (UNLIKELY((n == 0 || (i & slot_page_mask()) == 0) && slot_unwritten(i))) {
      wrote(&ms__rec_tab_pages, &ms__rec_tab[i], sizeof *ms__rec_tab);
      if (with_own) wrote(&ms__rec_own_pages, &ms__rec_own[i], sizeof *ms__rec_own);
    }
    uint64_t k = __atomic_load_n(&ms__rec_tab[i], __ATOMIC_RELAXED);
    if (LIKELY(!mt) && k <= TOMB) {
      if (with_own) ms__rec_own[i] = own;
      __atomic_store_n(&ms__rec_tab[i], v, __ATOMIC_RELAXED);
      return 1;
    }
    while (k <= TOMB) {
      if (__atomic_compare_exchange_n(&ms__rec_tab[i], &k, v, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED)) {
        // The block is not the program's yet: nobody takes the slot before this store.
        if (with_own) __atomic_store_n(&ms__rec_own[i], own, __ATOMIC_RELEASE);
        return 1;
      }
    }
  }
  if (size == SZ_BIG) {
    uint64_t e, o;
    ms__rec_big_take(p, &e, &o);
  }
  return 0;
}

HOT int table_put(uintptr_t p, uint64_t entry) { return table_put_o(p, entry, 0, 0); }

/* The entry stored for p and, when own is not NULL (a constant), its owner
 * (and its slot freed), or -1 when p is not there. */
HOT int table_take_o(uintptr_t p, uint64_t *entry, uint64_t *own) {
  uint64_t o_;
  if (UNLIKELY((p >> 47) != 0)) return ms__rec_big_take(p, entry, own ? own : &o_);
  uint64_t key = (uint64_t)(p >> 4);
  uintptr_t i = slot_of(p, ms__rec_tab_mask);
  for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & ms__rec_tab_mask) {
    uint64_t k = __atomic_load_n(&ms__rec_tab[i], __ATOMIC_ACQUIRE);
    if ((k >> (SZ_BITS + 1)) == key && k > TOMB) {
      // The owner before the tombstone: after it, an insert may reuse the slot.
      if (own) *own = __atomic_load_n(&ms__rec_own[i], __ATOMIC_ACQUIRE);
      __atomic_store_n(&ms__rec_tab[i], TOMB, __ATOMIC_RELEASE);
      uint64_t size = k & SZ_BIG;
      if (UNLIKELY(size == SZ_BIG)) return ms__rec_big_take(p, entry, own ? own : &o_);
      *entry = size | (k & FLAG_BIT ? NOT_MINE : 0);
      return 0;
    }
    if (k == 0) return -1;
  }
  return -1;
}

HOT int table_take(uintptr_t p, uint64_t *entry) { return table_take_o(p, entry, NULL); }

#pragma GCC visibility pop

#endif
