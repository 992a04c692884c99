/* recorder/generations.c: what each probe region (or --function call)
 * leaves alive, and when the rest of the program frees it (a *generation*,
 * docs/recording.md#generations; the file in docs/formats.md).
 *
 * Nothing here is per block: a block born in a region carries an epoch
 * with the EP_REGION bit in the live-block table (epochs.c), which names its
 * occurrence and the bucket it was born in. Per occurrence: the blocks and
 * bytes the recorded thread allocated inside it (counted by that thread
 * alone), those freed since (by any thread, under the lock), and at its end
 * the difference, its survivors. A survivor freed after its region ended,
 * and at exit every block still alive, is added to an aggregate keyed by
 * (birth epoch, free bucket, site): one `survivors` line per key, so the
 * file grows with the buckets that freed survivors, not with the blocks.
 * Every block is counted; when memory for the aggregate cannot be had the
 * recording fails (ms__rec_gen_failed), as the table's does. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "ms_common.h"
#include "table.h"

/* ---- occurrences: chunks of 4096 records, mapped as needed ---- */

#define OCC_BITS 12
#define OCC_CHUNKS 65536  // 2^28 occurrences

static gen_occ *g_occ[OCC_CHUNKS];
static ms__rec_pages g_occ_pages[OCC_CHUNKS];
static int64_t g_nocc;  // the highest occurrence seen
int ms__rec_gen_failed;
static char g_lock;

static void lock(void) {
  if (__atomic_load_n(&ms__rec_multi, __ATOMIC_RELAXED))
    while (__atomic_test_and_set(&g_lock, __ATOMIC_ACQUIRE)) sched_yield();
}
static void unlock(void) {
  if (__atomic_load_n(&ms__rec_multi, __ATOMIC_RELAXED)) __atomic_clear(&g_lock, __ATOMIC_RELEASE);
}

// Occurrence k's record (written before it is read), or NULL when out of memory.
static gen_occ *occ_at(int64_t k) {
  if (k <= 0 || (k >> OCC_BITS) >= OCC_CHUNKS) return NULL;
  int64_t c = k >> OCC_BITS;
  if (!g_occ[c]) {
    g_occ[c] = ms__rec_map_counted(sizeof(gen_occ) << OCC_BITS, &g_occ_pages[c]);
    if (!g_occ[c]) return NULL;
  }
  gen_occ *o = &g_occ[c][k & ((1 << OCC_BITS) - 1)];
  wrote(&g_occ_pages[c], o, sizeof *o);
  return o;
}

/* ---- survivors: (epoch, free bucket, site) -> blocks, bytes ---- */

typedef struct agg {
  uint32_t ep;  // 0: empty slot
  int32_t site;
  int64_t q;       // the free's bucket (raw time / resolution), -1 alive at exit
  int64_t t_free;  // the first free of the group, raw clock
  uint64_t blocks, bytes;
} agg;
static agg *g_agg;
static ms__rec_pages g_agg_pages;
static uint64_t g_agg_cap, g_agg_n;

static uint64_t agg_slot(uint32_t ep, int32_t site, int64_t q, uint64_t cap) {
  uint64_t h = ((uint64_t)ep << 32 ^ (uint64_t)(uint32_t)site) * UINT64_C(0x9E3779B97F4A7C15);
  h ^= (uint64_t)q * UINT64_C(0xC2B2AE3D27D4EB4F);
  return (h ^ (h >> 29)) & (cap - 1);
}

// Room for one more group (lock held): rebuilt twice as large when half full.
static int agg_room(void) {
  if (g_agg && (g_agg_n + 1) * 2 <= g_agg_cap) return 0;
  uint64_t cap = g_agg_cap ? g_agg_cap * 2 : 4096;
  ms__rec_pages pg;
  agg *a = ms__rec_map_counted(cap * sizeof *a, &pg);
  if (!a) return -ENOMEM;
  for (uint64_t i = 0; i < cap; i++) wrote(&pg, &a[i], sizeof *a);
  for (uint64_t i = 0; i < g_agg_cap; i++) {
    if (!g_agg[i].ep) continue;
    uint64_t j = agg_slot(g_agg[i].ep, g_agg[i].site, g_agg[i].q, cap);
    while (a[j].ep) j = (j + 1) & (cap - 1);
    a[j] = g_agg[i];
  }
  ms__rec_unmap_counted(&g_agg_pages);
  g_agg = a;
  g_agg_pages = pg;
  g_agg_cap = cap;
  return 0;
}

// Survivors: a block of epoch ep, n bytes, freed at raw time t (-1: alive at exit).
static void agg_add(uint32_t ep, int32_t site, int64_t t, uint64_t n) {
  int64_t q = t < 0 ? -1 : ms__rec.res_raw > 0 ? (t - ms__rec.raw0) / ms__rec.res_raw : t - ms__rec.raw0;
  if (agg_room() != 0) {
    __atomic_store_n(&ms__rec_gen_failed, 1, __ATOMIC_RELAXED);
    ms__rec_fail_memory();
    return;
  }
  uint64_t j = agg_slot(ep, site, q, g_agg_cap);
  for (;; j = (j + 1) & (g_agg_cap - 1)) {
    agg *a = &g_agg[j];
    if (!a->ep) {
      *a = (agg){ep, site, q, t, 0, 0};
      g_agg_n++;
    }
    if (a->ep == ep && a->site == site && a->q == q) {
      a->blocks++;
      a->bytes += n;
      return;
    }
  }
}

/* ---- the recorder's calls ---- */

gen_occ *ms__rec_gen_region(int64_t occ, const char *name, int64_t t, int begin) {
  lock();
  gen_occ *o = occ_at(occ);
  if (!o) {
    __atomic_store_n(&ms__rec_gen_failed, 1, __ATOMIC_RELAXED);
    ms__rec_fail_memory();
    unlock();
    return NULL;
  }
  if (begin) {
    o->name = name;
    o->begin = t;
    o->end = 0;
    if (occ > g_nocc) g_nocc = occ;
  } else {
    o->end = t > o->begin ? t : o->begin + 1;
    o->surv_blocks = o->blocks - o->freed_blocks;
    o->surv_bytes = o->bytes - o->freed_bytes;
  }
  unlock();
  return o;
}

void ms__rec_gen_freed(uintptr_t p, uint32_t ep, uint64_t n) {
  const ms__rec_epoch *e = ms__rec_epoch_get(ep);
  if (!e) return;
  // With --sites, the site it was sampled at (before sites.c forgets it).
  int32_t site = ms__rec_site_lookup(p);
  int64_t now = raw_now();
  lock();
  gen_occ *o = occ_at(e->occ);
  if (o) {
    o->freed_blocks++;
    o->freed_bytes += n;
    if (o->end) agg_add(ep, site, now, n);  // a survivor: freed after its region
  }
  unlock();
}

// At exit: a block still alive, born in a region, is a survivor alive at exit.
static void alive_at_exit(uintptr_t p, uint64_t entry, uint32_t ep, void *arg) {
  (void)arg;
  if (ep & EP_REGION) agg_add(ep, ms__rec_site_lookup(p), -1, entry & ~NOT_MINE);
}

void ms__rec_gen_write(const assembled *A) {
  if (g_nocc == 0 || !ms__rec.out[0]) return;
  lock();
  int64_t end = raw_now();
  ms__rec_table_each(alive_at_exit, NULL);
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s.generations", ms__rec.out);
#define NS(raw) ((long long)((double)((raw) - A->origin_raw) * A->scale))
  memstub_error err = {0};
  ms__afile af;
  uint64_t survivors = 0, surv_bytes = 0;
  int sites = __atomic_load_n(&ms__rec_sites_on, __ATOMIC_ACQUIRE);
  if (ms__rec_gen_failed) {
    snprintf(err.msg, sizeof err.msg, "out of memory for the survivors' table: not written");
  } else if (ms__afile_open(&af, path, &err) == 0) {
    FILE *f = af.f;
    fprintf(f, "# memstub-generations 2\n");
    fprintf(f, "exit_ns %lld\n", NS(end));
    for (int64_t k = 1; k <= g_nocc; k++) {
      const gen_occ *o = g_occ[k >> OCC_BITS] ? &g_occ[k >> OCC_BITS][k & ((1 << OCC_BITS) - 1)] : NULL;
      if (!o || page_unwritten(&g_occ_pages[k >> OCC_BITS], o) || !o->begin) continue;
      // An occurrence still open at exit ends there, with what is alive now.
      int64_t e = o->end ? o->end : end;
      uint64_t sb = o->end ? o->surv_blocks : o->blocks - o->freed_blocks,
               sy = o->end ? o->surv_bytes : o->bytes - o->freed_bytes;
      survivors += sb;
      surv_bytes += sy;
      fprintf(f, "occurrence %lld %lld %lld %llu %llu %llu %llu %s\n", (long long)k,
              NS(o->begin), NS(e), (unsigned long long)o->blocks, (unsigned long long)o->bytes,
              (unsigned long long)sb, (unsigned long long)sy, o->name ? o->name : "region");
    }
    for (uint64_t i = 0; i < g_agg_cap; i++) {
      const agg *a = &g_agg[i];
      const ms__rec_epoch *e = a->ep ? ms__rec_epoch_get(a->ep) : NULL;
      if (!e) continue;
      fprintf(f, "survivors %lld %llu %llu %lld %lld", (long long)e->occ,
              (unsigned long long)a->blocks, (unsigned long long)a->bytes, NS(e->t),
              a->q < 0 ? -1LL : NS(a->t_free));
      // With --sites: the site's line in TRACE.sites (written just before), -1 not sampled.
      if (sites) fprintf(f, " %d", (int)ms__rec_site_rank(a->site));
      fputc('\n', f);
    }
    if (ms__afile_commit(&af, &err) == 0) err.msg[0] = '\0';
  }
#undef NS
  if (err.msg[0]) {
    ms__rec_meta("generations.error", "%s", err.msg);
  } else {
    ms__rec_meta("generations.file", "%s", path);
    ms__rec_meta("generations.survivors", "%llu blocks, %llu bytes at their regions' ends",
                 (unsigned long long)survivors, (unsigned long long)surv_bytes);
  }
  unlock();
}

void ms__rec_gen_reset(void) {
  for (int64_t c = 0; c < OCC_CHUNKS; c++)
    if (g_occ[c]) {
      ms__rec_unmap_counted(&g_occ_pages[c]);
      g_occ[c] = NULL;
    }
  ms__rec_unmap_counted(&g_agg_pages);
  g_agg = NULL;
  g_agg_cap = g_agg_n = 0;
  g_nocc = 0;
  g_lock = 0;
  ms__rec_gen_failed = 0;
}
