/* recorder/generations.c: what each probe region (or --function call)
 * leaves alive, and when the rest of the program frees it (a *generation*,
 * docs/recording.md#generations; the file in docs/formats.md).
 *
 * Blocks the recorded thread allocates inside a region are kept in a table
 * of their own (pointer, occurrence, size, time). A free of one while its
 * region is open just forgets it; a free after the region's end makes it a
 * survivor record (occurrence, size, allocated, freed); what is still in the
 * table at exit is a survivor alive at exit. Per occurrence: the blocks and
 * bytes allocated inside, and those alive at its end. Bounded: 2^20 blocks
 * in the table at once, 65536 occurrences, 2^20 survivor records; beyond,
 * counted as dropped. With --sites, a survivor also names the site its
 * block was sampled at (sites.c), when it was. Off the hot path unless a region is open on the
 * recorded thread or a region-born block is alive (the hooks' inline
 * generation()). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "ms_common.h"

#define SLOT_BITS 21  // table slots: twice the blocks it holds
#define MAX_LIVE (1 << 20)
#define MAX_OCC 65536
#define MAX_SURV (1 << 20)
#define MAX_PROBE 4096

typedef struct gslot {
  uintptr_t p;  // 0 empty, 1 deleted
  int64_t occ;
  uint64_t size;
  int64_t t;     // allocated, raw clock
  int32_t site;  // its allocation site (record --sites), -1 not sampled
} gslot;

typedef struct occ_rec {
  const char *name;
  int64_t begin, end;  // raw clock; end 0 while open
  uint64_t blocks, bytes;        // allocated inside
  uint64_t live_blocks, live_bytes;  // alive now
  uint64_t surv_blocks, surv_bytes;  // alive at its end
} occ_rec;

typedef struct surv {
  int64_t occ;
  uint64_t size;
  int64_t t_alloc, t_free;  // raw clock; t_free -1: alive at exit
  int32_t site;             // as gslot's
} surv;

int ms__rec_gen_live;
static gslot *g_tab;
static int g_tab_ready;  // the three tables are mapped
static occ_rec *g_occ;
static surv *g_surv;
static ms__rec_pages g_tab_pages, g_occ_pages, g_surv_pages;  // their pages written
static int64_t g_nocc, g_nsurv;
static uint64_t g_dropped_blocks, g_dropped_occ, g_dropped_surv;
static char g_lock;

static void lock(void) {
  while (__atomic_test_and_set(&g_lock, __ATOMIC_ACQUIRE)) sched_yield();
}
static void unlock(void) { __atomic_clear(&g_lock, __ATOMIC_RELEASE); }

// Neighbouring blocks in neighbouring slots (as the pointer table, table.h):
// the table's pages are written as the heap is, not one per block.
static uintptr_t slot_of(uintptr_t p) {
  uintptr_t k = p >> 5;
  return (k ^ (((k >> 20) * UINT64_C(0x9E3779B97F4A7C15)) >> 40)) & (((uintptr_t)1 << SLOT_BITS) - 1);
}

// The tables, on the first region (mmap, touched as used); 0 or -ENOMEM.
static int ready(void) {
  if (g_tab_ready) return 0;
  // Counted as the recorder's own resident memory (state.c), not the program's.
  if (!g_tab) g_tab = ms__rec_map_counted(sizeof(gslot) << SLOT_BITS, &g_tab_pages);
  if (!g_occ) g_occ = ms__rec_map_counted(sizeof(occ_rec) * (MAX_OCC + 1), &g_occ_pages);
  if (!g_surv) g_surv = ms__rec_map_counted(sizeof(surv) * MAX_SURV, &g_surv_pages);
  if (!(g_tab && g_occ && g_surv)) return -ENOMEM;
  __atomic_store_n(&g_tab_ready, 1, __ATOMIC_RELEASE);  // for known(), unlocked
  return 0;
}

void ms__rec_gen_region(int64_t occ, const char *name, int64_t t, int begin) {
  lock();
  if (ready() != 0 || occ > MAX_OCC || occ <= 0) {
    if (begin) g_dropped_occ++;
    unlock();
    return;
  }
  occ_rec *o = &g_occ[occ];
  wrote(&g_occ_pages, o, sizeof *o);
  if (begin) {
    o->name = name;
    o->begin = t;
    o->end = 0;
    if (occ > g_nocc) g_nocc = occ;
  } else {
    o->end = t > o->begin ? t : o->begin + 1;
    o->surv_blocks = o->live_blocks;
    o->surv_bytes = o->live_bytes;
  }
  unlock();
}

static void add_surv(int64_t occ, uint64_t size, int64_t ta, int64_t tf, int32_t site) {
  if (g_nsurv == MAX_SURV) {
    g_dropped_surv++;
    return;
  }
  wrote(&g_surv_pages, &g_surv[g_nsurv], sizeof *g_surv);
  g_surv[g_nsurv++] = (surv){occ, size, ta, tf, site};
}

static void forget(uintptr_t p, int64_t now) {
  uintptr_t i = slot_of(p);
  const uintptr_t mask = ((uintptr_t)1 << SLOT_BITS) - 1;
  for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & mask) {
    if (page_unwritten(&g_tab_pages, &g_tab[i].p) || g_tab[i].p == 0) return;
    if (g_tab[i].p != p) continue;
    gslot s = g_tab[i];
    __atomic_store_n(&g_tab[i].p, 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&ms__rec_gen_live, 1, __ATOMIC_RELAXED);
    occ_rec *o = &g_occ[s.occ];
    o->live_blocks--;
    o->live_bytes -= s.size;
    if (o->end) add_surv(s.occ, s.size, s.t, now, s.site);  // freed after its region
    return;
  }
}

static void remember(uintptr_t p, int64_t occ, uint64_t n, int64_t now, int32_t site) {
  if (occ > MAX_OCC || !g_occ[occ].begin || __atomic_load_n(&ms__rec_gen_live, __ATOMIC_RELAXED) >= MAX_LIVE) {
    g_dropped_blocks++;
    return;
  }
  uintptr_t i = slot_of(p);
  const uintptr_t mask = ((uintptr_t)1 << SLOT_BITS) - 1;
  for (int k = 0; k < MAX_PROBE; k++, i = (i + 1) & mask) {
    wrote(&g_tab_pages, &g_tab[i], sizeof *g_tab);  // before it is read (page_unwritten)
    if (g_tab[i].p > 1) continue;
    g_tab[i].occ = occ;
    g_tab[i].size = n;
    g_tab[i].t = now;
    g_tab[i].site = site;
    __atomic_store_n(&g_tab[i].p, p, __ATOMIC_RELAXED);  // known() reads it unlocked
    __atomic_fetch_add(&ms__rec_gen_live, 1, __ATOMIC_RELAXED);
    occ_rec *o = &g_occ[occ];
    o->blocks++;
    o->bytes += n;
    o->live_blocks++;
    o->live_bytes += n;
    return;
  }
  g_dropped_blocks++;
}

/* Whether p is in the table, without the lock: a block is remembered at its
 * allocation, which happened before its free (the program's own order), so
 * a free never races with the insert of its own block. Most frees while a
 * generation is alive are of other blocks: they leave here, without the
 * lock and the clock. */
static int known(uintptr_t p) {
  if (!__atomic_load_n(&g_tab_ready, __ATOMIC_ACQUIRE)) return 0;
  uintptr_t i = slot_of(p);
  const uintptr_t mask = ((uintptr_t)1 << SLOT_BITS) - 1;
  for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & mask) {
    if (page_unwritten(&g_tab_pages, &g_tab[i].p)) return 0;
    uintptr_t q = __atomic_load_n(&g_tab[i].p, __ATOMIC_RELAXED);
    if (q == 0) return 0;
    if (q == p) return 1;
  }
  return 0;
}

void ms__rec_gen_event(tstate *ts, void *freed, void *allocated, uint64_t n) {
  // Thread 0's regions only: under --thread all other threads' occurrence
  // numbers would collide with its own.
  int born = allocated && ts == ms__rec.rec && ts->tag;
  if (freed && !known((uintptr_t)freed)) {
    if (!born) return;
    freed = NULL;
  }
  int64_t now = raw_now();
  // With --sites, the site sites.c sampled it at just before (the hooks call it first).
  int32_t site = born ? ms__rec_site_lookup((uintptr_t)allocated) : -1;
  lock();
  if (g_tab) {
    if (freed) forget((uintptr_t)freed, now);
    if (born) remember((uintptr_t)allocated, ts->tag, n, now, site);
  }
  unlock();
}

void ms__rec_gen_write(const assembled *A) {
  if (!g_tab || g_nocc == 0 || !ms__rec.out[0]) return;
  lock();
  int64_t end = raw_now();
  // What is still in the table is alive at exit.
  for (uintptr_t i = 0; i < ((uintptr_t)1 << SLOT_BITS); i++)
    if (g_tab[i].p > 1) add_surv(g_tab[i].occ, g_tab[i].size, g_tab[i].t, -1, g_tab[i].site);
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s.generations", ms__rec.out);
#define NS(raw) ((long long)((double)((raw) - A->origin_raw) * A->scale))
  memstub_error err = {0};
  ms__afile af;
  uint64_t survivors = 0, surv_bytes = 0;
  int sites = __atomic_load_n(&ms__rec_sites_on, __ATOMIC_ACQUIRE);
  if (ms__afile_open(&af, path, &err) == 0) {
    FILE *f = af.f;
    fprintf(f, "# memstub-generations 1\n");
    fprintf(f, "exit_ns %lld\n", NS(end));
    fprintf(f, "dropped %llu %llu %llu\n", (unsigned long long)g_dropped_blocks,
            (unsigned long long)g_dropped_occ, (unsigned long long)g_dropped_surv);
    for (int64_t k = 1; k <= g_nocc; k++) {
      const occ_rec *o = &g_occ[k];
      if (!o->begin) continue;
      // An occurrence still open at exit ends there.
      int64_t e = o->end ? o->end : end;
      uint64_t sb = o->end ? o->surv_blocks : o->live_blocks,
               sy = o->end ? o->surv_bytes : o->live_bytes;
      survivors += sb;
      surv_bytes += sy;
      fprintf(f, "occurrence %lld %lld %lld %llu %llu %llu %llu %s\n", (long long)k,
              NS(o->begin), NS(e), (unsigned long long)o->blocks, (unsigned long long)o->bytes,
              (unsigned long long)sb, (unsigned long long)sy, o->name ? o->name : "region");
    }
    for (int64_t k = 0; k < g_nsurv; k++) {
      const surv *s = &g_surv[k];
      fprintf(f, "survivor %lld %llu %lld %lld", (long long)s->occ, (unsigned long long)s->size,
              NS(s->t_alloc), s->t_free < 0 ? -1LL : NS(s->t_free));
      // With --sites: the site's line in TRACE.sites (written just before), -1 not sampled.
      if (sites) fprintf(f, " %d", (int)ms__rec_site_rank(s->site));
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
    if (g_dropped_blocks || g_dropped_occ || g_dropped_surv)
      ms__rec_meta("generations.dropped", "%llu blocks, %llu occurrences, %llu survivor records",
                   (unsigned long long)g_dropped_blocks, (unsigned long long)g_dropped_occ,
                   (unsigned long long)g_dropped_surv);
  }
  unlock();
}
