/* recorder/table.c: the pointer table's memory and its side table of big
 * blocks (table.h has the hot path). */
#include "table.h"

#include <errno.h>
#include <sys/mman.h>

uint64_t *ms__rec_tab;
uintptr_t ms__rec_tab_mask;
uint64_t *ms__rec_own;
ms__rec_pages ms__rec_tab_pages, ms__rec_own_pages;
static ms__rec_pages g_big_pages;

typedef struct bslot {
  uintptr_t key;  // 0 empty, 1 tombstone
  uint64_t entry;
  uint64_t own;  // the owner (--thread all, table.h)
} bslot;
static bslot *g_big;
static uintptr_t g_big_mask;

int ms__rec_table_init(int bits) {
  ms__rec_tab = ms__rec_map_counted(sizeof(uint64_t) << bits, &ms__rec_tab_pages);
  while (!ms__rec_tab && bits > 16)
    ms__rec_tab = ms__rec_map_counted(sizeof(uint64_t) << --bits, &ms__rec_tab_pages);
  g_big = ms__rec_map_counted(sizeof(bslot) << 16, &g_big_pages);
  if (!ms__rec_tab || !g_big) return -ENOMEM;
  ms__rec_tab_mask = ((uintptr_t)1 << bits) - 1;
  g_big_mask = ((uintptr_t)1 << 16) - 1;
  return 0;
}

int ms__rec_table_own_init(void) {
  ms__rec_own = ms__rec_map_counted(sizeof(uint64_t) * (ms__rec_tab_mask + 1), &ms__rec_own_pages);
  return ms__rec_own ? 0 : -ENOMEM;
}

int ms__rec_table_reset(void) {
  int bits = 0;
  while (((uintptr_t)1 << bits) - 1 < ms__rec_tab_mask) bits++;
  int had_own = ms__rec_own != NULL;
  ms__rec_unmap_counted(&ms__rec_tab_pages);
  ms__rec_unmap_counted(&g_big_pages);
  ms__rec_unmap_counted(&ms__rec_own_pages);
  ms__rec_tab = NULL;
  ms__rec_own = NULL;
  g_big = NULL;
  int rc = ms__rec_table_init(bits);
  return rc == 0 && had_own ? ms__rec_table_own_init() : rc;
}

int ms__rec_big_put(uintptr_t p, uint64_t entry, uint64_t own) {
  uintptr_t i = slot_of(p, g_big_mask);
  for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & g_big_mask) {
    wrote(&g_big_pages, &g_big[i], sizeof g_big[i]);  // before it is read (page_unwritten)
    uintptr_t k = __atomic_load_n(&g_big[i].key, __ATOMIC_RELAXED);
    while (k <= TOMB) {
      if (__atomic_compare_exchange_n(&g_big[i].key, &k, p, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED)) {
        g_big[i].entry = entry;
        g_big[i].own = own;
        return 1;
      }
    }
  }
  return 0;
}

int ms__rec_big_take(uintptr_t p, uint64_t *entry, uint64_t *own) {
  uintptr_t i = slot_of(p, g_big_mask);
  for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & g_big_mask) {
    if (page_unwritten(&g_big_pages, &g_big[i].key)) return -1;
    uintptr_t k = __atomic_load_n(&g_big[i].key, __ATOMIC_ACQUIRE);
    if (k == p) {
      *entry = g_big[i].entry;
      *own = g_big[i].own;
      __atomic_store_n(&g_big[i].key, TOMB, __ATOMIC_RELEASE);
      return 0;
    }
    if (k == 0) return -1;
  }
  return -1;
}
