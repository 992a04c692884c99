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
 * counted as dropped. The live table is a multiplicative hash that starts at
 * 4096 slots and is rehashed under the lock into one with at most half its
 * slots live when three quarters are used (live or deleted), so that its
 * pages follow the blocks it holds, not the heap's address range (an index
 * by address, like the pointer table's, wrote 40 bytes of table per 32 bytes
 * of heap: 50 MiB for bench/system's SQLite index build; now 64 to 128 bytes
 * per live block, and as much again for the tables it outgrew).
 * Tables it outgrew stay mapped until exit: a lock-free lookup may still be
 * reading one. With --sites, a survivor also names the site its
 * block was sampled at (sites.c), when it was. Off the hot path unless a region is open on the
 * recorded thread or a region-born block is alive (the hooks' inline
 * generation()). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "ms_common.h"

#define SLOT_BITS 21  // the live table's largest size: twice the blocks it holds
#define FIRST_BITS 12  // its first size
#define MAX_TABLES 48  // tables made (each doubling, then rebuilds at the largest size)
#define MAX_LIVE (1 << 20)
#define MAX_OCC 65536
#define MAX_SURV (1 << 20)
#define MAX_PROBE 4096

typedef struct gslot {
  uintptr_t p;   // 0 empty, 1 deleted
  int32_t occ;   // <= MAX_OCC
  int32_t site;  // its allocation site (record --sites), -1 not sampled
  uint64_t size;
  int64_t t;  // allocated, raw clock
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
/* One live table: 2^bits slots, used of them not empty (live or deleted);
 * pages counts its pages written. */
typedef struct gtab {
  gslot *s;
  int bits;
  uint64_t used;
  ms__rec_pages pages;
} gtab;
static gtab g_tabs[MAX_TABLES];
static int g_ntabs;
static gtab *g_tab;  // the current one (atomic: known() reads it unlocked), NULL before the first region
static int g_tab_ready;  // the tables are mapped
static occ_rec *g_occ;
static surv *g_surv;
static ms__rec_pages g_occ_pages, g_surv_pages;  // their pages written
static int64_t g_nocc, g_nsurv;
static uint64_t g_dropped_blocks, g_dropped_occ, g_dropped_surv;
static char g_lock;

static void lock(void) {
  while (__atomic_test_and_set(&g_lock, __ATOMIC_ACQUIRE)) sched_yield();
}
static void unlock(void) { __atomic_clear(&g_lock, __ATOMIC_RELEASE); }

static uintptr_t slot_of(const gtab *T, uintptr_t p) {
  return (uintptr_t)(((uint64_t)(p >> 4) * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - T->bits));
}
static uintptr_t tab_mask(const gtab *T) { return ((uintptr_t)1 << T->bits) - 1; }

// A new empty live table of 2^bits slots (under the lock); NULL when out of tables or memory.
static gtab *tab_new(int bits) {
  if (g_ntabs == MAX_TABLES) return NULL;
  gtab *T = &g_tabs[g_ntabs];
  T->s = ms__rec_map_counted(sizeof(gslot) << bits, &T->pages);
  if (!T->s) return NULL;
  T->bits = bits;
  T->used = 0;
  g_ntabs++;
  return T;
}

// The tables, on the first region (mmap, touched as used); 0 or -ENOMEM.
static int ready(void) {
  if (g_tab_ready) return 0;
  // Counted as the recorder's own resident memory (state.c), not the program's.
  if (!g_tab) __atomic_store_n(&g_tab, tab_new(FIRST_BITS), __ATOMIC_RELEASE);
  if (!g_occ) g_occ = ms__rec_map_counted(sizeof(occ_rec) * (MAX_OCC + 1), &g_occ_pages);
  if (!g_surv) g_surv = ms__rec_map_counted(sizeof(surv) * MAX_SURV, &g_surv_pages);
  if (!(g_tab && g_occ && g_surv)) return -ENOMEM;
  __atomic_store_n(&g_tab_ready, 1, __ATOMIC_RELEASE);
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

// The slot of p in T, or NULL (no lock needed: see known()).
static gslot *tab_find(gtab *T, uintptr_t p) {
  uintptr_t i = slot_of(T, p), mask = tab_mask(T);
  for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & mask) {
    gslot *g = &T->s[i];
    if (page_unwritten(&T->pages, &g->p)) return NULL;
    uintptr_t q = __atomic_load_n(&g->p, __ATOMIC_RELAXED);
    if (q == 0) return NULL;
    if (q == p) return g;
  }
  return NULL;
}

// Put a block into T (under the lock): 1, or 0 when its probe is too long.
static int tab_put(gtab *T, const gslot *b) {
  uintptr_t i = slot_of(T, b->p), mask = tab_mask(T);
  for (int k = 0; k < MAX_PROBE; k++, i = (i + 1) & mask) {
    gslot *g = &T->s[i];
    wrote(&T->pages, g, sizeof *g);  // before it is read (page_unwritten)
    if (g->p > 1) continue;
    if (g->p == 0) T->used++;
    g->occ = b->occ;
    g->site = b->site;
    g->size = b->size;
    g->t = b->t;
    __atomic_store_n(&g->p, b->p, __ATOMIC_RELEASE);  // known() reads it unlocked
    return 1;
  }
  return 0;
}

/* Before an insert (under the lock): when three quarters of the current
 * table's slots are used, its live blocks go into a new one where they fill
 * at most half (the same size when the deleted slots were the most),
 * published after it is complete. Out of tables or memory, the current one
 * stays. */
static void tab_room(void) {
  gtab *T = g_tab;
  if ((T->used + 1) * 4 <= ((uint64_t)3 << T->bits)) return;
  uint64_t live = (uint64_t)__atomic_load_n(&ms__rec_gen_live, __ATOMIC_RELAXED) + 1;
  int bits = FIRST_BITS;
  while (bits < SLOT_BITS && live * 2 > ((uint64_t)1 << bits)) bits++;
  if (live * 2 > ((uint64_t)1 << bits)) return;  // full at the largest
  gtab *N = tab_new(bits);
  if (!N) return;
  for (uintptr_t i = 0; i <= tab_mask(T); i++)
    if (!page_unwritten(&T->pages, &T->s[i].p) && T->s[i].p > 1) tab_put(N, &T->s[i]);
  __atomic_store_n(&g_tab, N, __ATOMIC_RELEASE);
}

static void forget(uintptr_t p, int64_t now) {
  gslot *g = tab_find(g_tab, p);
  if (!g) return;
  gslot s = *g;
  __atomic_store_n(&g->p, 1, __ATOMIC_RELAXED);
  __atomic_fetch_sub(&ms__rec_gen_live, 1, __ATOMIC_RELAXED);
  occ_rec *o = &g_occ[s.occ];
  o->live_blocks--;
  o->live_bytes -= s.size;
  if (o->end) add_surv(s.occ, s.size, s.t, now, s.site);  // freed after its region
}

static void remember(uintptr_t p, int64_t occ, uint64_t n, int64_t now, int32_t site) {
  if (occ > MAX_OCC || !g_occ[occ].begin || __atomic_load_n(&ms__rec_gen_live, __ATOMIC_RELAXED) >= MAX_LIVE) {
    g_dropped_blocks++;
    return;
  }
  tab_room();
  gslot b = {.p = p, .occ = (int32_t)occ, .size = n, .t = now, .site = site};
  if (!tab_put(g_tab, &b)) {
    g_dropped_blocks++;
    return;
  }
  __atomic_fetch_add(&ms__rec_gen_live, 1, __ATOMIC_RELAXED);
  occ_rec *o = &g_occ[occ];
  o->blocks++;
  o->bytes += n;
  o->live_blocks++;
  o->live_bytes += n;
}

/* Whether p is in the table, without the lock: a block is remembered at its
 * allocation, which happened before its free (the program's own order), so
 * a free never races with the insert of its own block. Most frees while a
 * generation is alive are of other blocks: they leave here, without the
 * lock and the clock. */
static int known(uintptr_t p) {
  // A table the lock has since replaced still holds every block it held
  // (a rehash copies, a later delete marks only the current table): a stale
  // yes costs the lock, never a wrong answer.
  gtab *T = __atomic_load_n(&g_tab, __ATOMIC_ACQUIRE);
  return T && tab_find(T, p) != NULL;
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
  for (uintptr_t i = 0; i <= tab_mask(g_tab); i++) {
    const gslot *g = &g_tab->s[i];
    if (!page_unwritten(&g_tab->pages, &g->p) && g->p > 1) add_surv(g->occ, g->size, g->t, -1, g->site);
  }
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
