/* recorder/epochs.c: epochs, the 4 bytes each live block carries in the
 * table (table.h) instead of its owner, birth time and region.
 *
 * An epoch is one (thread, coalescing bucket, region occurrence) in which
 * blocks were allocated: a thread that needs them (--thread all, or the
 * recorded thread inside a region) opens one when it allocates in a bucket
 * of its own for the first time, and its blocks carry its number. So a
 * block's owner and the bucket it was born in (for cross-thread frees), and
 * its occurrence and birth time (for generations) cost 4 bytes a block and
 * 16 bytes a bucket. Epochs live in chunks of 64k, mapped as needed and
 * never moved, so a reader needs no lock: an epoch is written before its
 * number is stored in a table slot, and read after the slot (under the
 * table's shard lock, or on the same thread). */
#include <errno.h>
#include <sched.h>

#include "internal.h"

#define CHUNK_BITS 16
#define MAX_CHUNKS (1 << 15)  // 2^31 epochs: the number's top bit is EP_REGION

static ms__rec_epoch *g_chunk[MAX_CHUNKS];
static ms__rec_pages g_chunk_pages[MAX_CHUNKS];
static uint32_t g_next = 1;  // 0 is no epoch
static char g_lock;
int ms__rec_epoch_failed;

uint32_t ms__rec_epoch_new(int32_t thr, int64_t t, int32_t occ) {
  uint32_t id = __atomic_fetch_add(&g_next, 1, __ATOMIC_RELAXED);
  uint32_t c = id >> CHUNK_BITS;
  if (id & EP_REGION || c >= MAX_CHUNKS) goto fail;
  ms__rec_epoch *blk = __atomic_load_n(&g_chunk[c], __ATOMIC_ACQUIRE);
  if (UNLIKELY(!blk)) {
    while (__atomic_test_and_set(&g_lock, __ATOMIC_ACQUIRE)) sched_yield();
    blk = g_chunk[c];
    if (!blk) {
      // Counted as the recorder's own memory, its pages as they are written.
      blk = ms__rec_map_counted(sizeof(ms__rec_epoch) << CHUNK_BITS, &g_chunk_pages[c]);
      __atomic_store_n(&g_chunk[c], blk, __ATOMIC_RELEASE);
    }
    __atomic_clear(&g_lock, __ATOMIC_RELEASE);
    if (!blk) goto fail;
  }
  ms__rec_epoch *e = &blk[id & ((1u << CHUNK_BITS) - 1)];
  wrote(&g_chunk_pages[c], e, sizeof *e);
  *e = (ms__rec_epoch){t, thr, occ};
  return id;
fail:
  __atomic_store_n(&ms__rec_epoch_failed, 1, __ATOMIC_RELAXED);
  ms__rec_fail_memory();
  return 0;
}

const ms__rec_epoch *ms__rec_epoch_get(uint32_t ep) {
  uint32_t id = ep & ~EP_REGION;
  if (id == 0 || (id >> CHUNK_BITS) >= MAX_CHUNKS) return NULL;
  ms__rec_epoch *blk = __atomic_load_n(&g_chunk[id >> CHUNK_BITS], __ATOMIC_ACQUIRE);
  return blk ? &blk[id & ((1u << CHUNK_BITS) - 1)] : NULL;
}

uint64_t ms__rec_epoch_count(void) { return __atomic_load_n(&g_next, __ATOMIC_RELAXED) - 1; }

void ms__rec_epoch_reset(void) {
  for (uint32_t c = 0; c < MAX_CHUNKS && g_chunk[c]; c++) {
    ms__rec_unmap_counted(&g_chunk_pages[c]);
    g_chunk[c] = NULL;
  }
  g_next = 1;
  g_lock = 0;
  ms__rec_epoch_failed = 0;
}

uint32_t ms__rec_epoch_open(tstate *ts) {
  int born = ts->tag && ts == ms__rec.rec;
  if (!ts->all && !born) return 0;
  ts->ep_t0 = ts->h.b.t0;
  ts->ep_tag = ts->tag;
  if (born && ts->tag > INT32_MAX) {
    __atomic_store_n(&ms__rec_epoch_failed, 1, __ATOMIC_RELAXED);
    ms__rec_fail_memory();
    return ts->ep = 0;
  }
  uint32_t id = ms__rec_epoch_new(ts->all ? ts->thr : 0, ts->h.b.t0, born ? (int32_t)ts->tag : 0);
  return ts->ep = id ? id | (born ? EP_REGION : 0) : 0;
}
