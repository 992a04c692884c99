/* recorder/sites.c: allocation sites at the heap's peak (memstub record
 * --sites; docs/recording.md#allocation-sites, the file in docs/formats.md).
 *
 * Allocations are sampled by bytes, as tcmalloc's and jemalloc's heap
 * profilers do: each thread counts down random intervals (uniform in
 * [I/2, 3I/2), I = MEMSTUB_RECORD_SITES bytes) by the bytes of its blocks
 * smaller than I, the overshoot carried, and an allocation that crosses zero
 * (k times) is sampled: its backtrace (backtrace(3), outside the recorder's
 * own frames) names a site, and the block stands for k x I bytes until it is
 * freed. A block of I bytes or more is always sampled, for its size. Every
 * site keeps its sampled bytes live now; when the heap total falls (a free)
 * from a level at least 1/64 (and I) above the last snapshot, the live
 * figures are copied as the peak's, and once more at the end when the heap
 * ends higher. So the peak's figures are estimates, taken within 1/64 of
 * the heap's highest level.
 *
 * Cost: off, one load and branch per allocator call (the hooks' inline
 * site()); on, a call and a subtraction per allocation and one byte load per
 * free (a counting filter of sampled blocks), plus a backtrace per sample.
 * bench/record_overhead.sh measures it.
 *
 * At exit (not after a fatal signal) the sites and the executable mappings of
 * the process go to TRACE.sites, written atomically; `memstub sites`
 * symbolises them outside the process (addr2line). */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "ms_common.h"

#define SITE_FRAMES 16    // return addresses kept per site
#define GRAB_FRAMES 24    // taken, before the recorder's own are dropped
#define MAX_SITES 16384   // distinct backtraces
#define SITE_SLOTS 32768  // their hash index (power of two)
#define LIVE_BITS 20      // sampled blocks live at once: 2^20 slots
#define FILTER_SLOTS 65536

typedef struct site_rec {
  uint64_t hash;
  int32_t id;  // its index when made (samples name it), kept through the sort
  int nframes;
  uintptr_t pc[SITE_FRAMES];
  int64_t live, peak, alloc;        // estimated bytes: live now, at the peak, allocated
  double live_n, peak_n, alloc_n;   // estimated blocks
} site_rec;

typedef struct sample {
  uintptr_t p;  // 0: empty, 1: deleted
  int32_t site;
  uint32_t pad;
  int64_t weight;
  uint64_t size;
} sample;

int ms__rec_sites_on;
static int64_t interval;
static site_rec *sites;
static int nsites;
static int32_t *site_index;  // site + 1, or 0
static int32_t *site_rank;   // after the sort: id -> line in TRACE.sites
static sample *live;
static ms__rec_pages sites_pages, index_pages, live_pages;  // their pages written
static uint8_t filter[FILTER_SLOTS];  // sampled blocks per pointer hash (saturating)
static int lock_word;
static int64_t snap_heap = -1, snap_time = -1;
static uint64_t nsampled, nsnap, dropped, saturated;
static uintptr_t own_lo, own_hi;  // this library's code: frames to drop
static TLS int64_t countdown;
static TLS uint64_t rng;

static void lock(void) {
  while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&lock_word, __ATOMIC_RELAXED)) CBARRIER();
}
static void unlock(void) { __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE); }

static inline uint32_t filter_slot(uintptr_t p) {
  return (uint32_t)(((p >> 4) * UINT64_C(0x9E3779B97F4A7C15)) >> 48) & (FILTER_SLOTS - 1);
}

// The next countdown: uniform in [I/2, 3I/2) from a per-thread xorshift.
static int64_t next_interval(void) {
  if (!rng) rng = (uint64_t)(uintptr_t)&rng ^ (uint64_t)ms__prim_now_ns() ^ UINT64_C(0x2545F4914F6CDD1D);
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return interval / 2 + (int64_t)(rng % (uint64_t)interval);
}

// The code range of this library (dl_iterate_phdr's callback).
static int find_own(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t me = (uintptr_t)arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (me >= lo && me < hi) {
      own_lo = lo;
      own_hi = hi;
      return 1;
    }
  }
  return 0;
}

/* Read MEMSTUB_RECORD_SITES and reserve the tables; sites stay off when it
 * is unset, not a number of bytes from 16 to 1 GiB, or memory is short. */
__attribute__((constructor)) static void sites_init(void) {
  const char *s = getenv(MS__REC_ENV_SITES);
  if (!s || !*s) return;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (*end || v < 16 || v > (1LL << 30)) return;
  interval = v;
  // Counted as the recorder's own resident memory (state.c), not the program's.
  sites = ms__rec_map_counted(sizeof(site_rec) * MAX_SITES, &sites_pages);
  site_index = ms__rec_map_counted(sizeof(int32_t) * SITE_SLOTS, &index_pages);
  live = ms__rec_map_counted(sizeof(sample) << LIVE_BITS, &live_pages);
  if (!sites || !site_index || !live) return;
  dl_iterate_phdr(find_own, (void *)(uintptr_t)&sites_init);
  __atomic_store_n(&ms__rec_sites_on, 1, __ATOMIC_RELEASE);
}

// The site of this backtrace, made when new; -1 when the table is full. pre: locked.
static int32_t site_of(const uintptr_t *pc, int n) {
  uint64_t h = 1469598103934665603ULL;
  for (int i = 0; i < n; i++) h = (h ^ pc[i]) * 1099511628211ULL;
  for (uint32_t i = (uint32_t)h & (SITE_SLOTS - 1);; i = (i + 1) & (SITE_SLOTS - 1)) {
    int32_t k = site_index[i];
    if (k == 0) {
      if (nsites >= MAX_SITES) return -1;
      site_rec *st = &sites[nsites];
      wrote(&sites_pages, st, sizeof *st);
      wrote(&index_pages, &site_index[i], sizeof *site_index);
      st->hash = h;
      st->id = nsites;
      st->nframes = n;
      memcpy(st->pc, pc, sizeof *pc * (size_t)n);
      site_index[i] = ++nsites;
      return nsites - 1;
    }
    site_rec *st = &sites[k - 1];
    if (st->hash == h && st->nframes == n && memcmp(st->pc, pc, sizeof *pc * (size_t)n) == 0)
      return k - 1;
  }
}

// The peak's figures become the live ones. pre: locked.
static void snapshot(int64_t heap) {
  for (int i = 0; i < nsites; i++) {
    sites[i].peak = sites[i].live;
    sites[i].peak_n = sites[i].live_n;
  }
  __atomic_store_n(&snap_heap, heap, __ATOMIC_RELAXED);
  snap_time = ms__rec.origin_ns ? ms__prim_now_ns() - ms__rec.origin_ns : -1;
  nsnap++;
}

static void take(tstate *ts, uintptr_t p, uint64_t n, int64_t points) {
  uintptr_t raw[GRAB_FRAMES];
  int guard = ts->guard;
  ts->guard = 1;  // backtrace() may load libgcc_s and allocate: pass through
  int got = backtrace((void **)raw, GRAB_FRAMES);
  ts->guard = guard;
  uintptr_t pc[SITE_FRAMES];
  int k = 0;
  for (int i = 0; i < got && k < SITE_FRAMES; i++)
    if (raw[i] < own_lo || raw[i] >= own_hi) pc[k++] = raw[i];
  int64_t w = (int64_t)n >= interval ? (int64_t)n : points * interval;
  double blocks = n ? (double)w / (double)n : 0;
  lock();
  int32_t s = site_of(pc, k);
  if (s < 0) {
    dropped++;
    unlock();
    return;
  }
  uintptr_t mask = ((uintptr_t)1 << LIVE_BITS) - 1;
  uintptr_t i = ((p >> 4) * UINT64_C(0x9E3779B97F4A7C15) >> 32) & mask;
  for (int probe = 0;; probe++, i = (i + 1) & mask) {
    if (probe > 4096) {
      dropped++;
      unlock();
      return;
    }
    if (live[i].p <= 1) break;
  }
  if (live[i].p == 0) wrote(&live_pages, &live[i], sizeof *live);
  live[i] = (sample){.p = p, .site = s, .weight = w, .size = n};
  sites[s].live += w;
  sites[s].live_n += blocks;
  sites[s].alloc += w;
  sites[s].alloc_n += blocks;
  nsampled++;
  uint8_t *f = &filter[filter_slot(p)];
  if (*f < 255) __atomic_store_n(f, (uint8_t)(*f + 1), __ATOMIC_RELAXED);
  else saturated++;
  unlock();
}

// p was freed: its sample, if it was one, leaves its site's live figures.
static void drop(uintptr_t p) {
  lock();
  uintptr_t mask = ((uintptr_t)1 << LIVE_BITS) - 1;
  uintptr_t i = ((p >> 4) * UINT64_C(0x9E3779B97F4A7C15) >> 32) & mask;
  for (int probe = 0; probe <= 4096 && live[i].p; probe++, i = (i + 1) & mask) {
    if (live[i].p != p) continue;
    site_rec *st = &sites[live[i].site];
    st->live -= live[i].weight;
    st->live_n -= live[i].size ? (double)live[i].weight / (double)live[i].size : 0;
    live[i].p = 1;
    uint8_t *f = &filter[filter_slot(p)];
    if (*f > 0 && *f < 255) __atomic_store_n(f, (uint8_t)(*f - 1), __ATOMIC_RELAXED);
    break;
  }
  unlock();
}

// pre: allocated is a block counted in the heap (the hooks pass no other).
void ms__rec_site_event(tstate *ts, void *freed, void *allocated, uint64_t n) {
  if (freed) {
    // The heap before this free: a local maximum when it is about to fall.
    int64_t h = __atomic_load_n(&ms__rec_heap, __ATOMIC_RELAXED);
    int64_t last = __atomic_load_n(&snap_heap, __ATOMIC_RELAXED);
    int64_t step = last / 64 > interval ? last / 64 : interval;
    if (UNLIKELY(h >= last + step)) {
      lock();
      last = snap_heap;
      step = last / 64 > interval ? last / 64 : interval;
      if (h >= last + step) snapshot(h);
      unlock();
    }
    if (UNLIKELY(__atomic_load_n(&filter[filter_slot((uintptr_t)freed)], __ATOMIC_RELAXED)))
      drop((uintptr_t)freed);
  }
  if (allocated) {
    // A block of I bytes or more stands for itself. The smaller ones share
    // one stream of sampling points, I bytes apart on average: the overshoot
    // of the point a block crosses is carried into the next countdown (drawn
    // afresh, a 1500-byte temporary after each sample took the next one and
    // the 200-byte blocks between them were never sampled), so a block holds
    // n/I points on average and stands for I bytes a point.
    if ((int64_t)n >= interval) {
      take(ts, (uintptr_t)allocated, n, 1);
      return;
    }
    if (UNLIKELY(countdown == 0)) countdown = next_interval();
    countdown -= (int64_t)n;
    if (UNLIKELY(countdown <= 0)) {
      int64_t points = 0;
      while (countdown <= 0) countdown += next_interval(), points++;
      take(ts, (uintptr_t)allocated, n, points);
    }
  }
}

int32_t ms__rec_site_lookup(uintptr_t p) {
  if (!__atomic_load_n(&ms__rec_sites_on, __ATOMIC_ACQUIRE)) return -1;
  if (!__atomic_load_n(&filter[filter_slot(p)], __ATOMIC_RELAXED)) return -1;  // not sampled
  int32_t s = -1;
  lock();
  uintptr_t mask = ((uintptr_t)1 << LIVE_BITS) - 1;
  uintptr_t i = ((p >> 4) * UINT64_C(0x9E3779B97F4A7C15) >> 32) & mask;
  for (int probe = 0; probe <= 4096 && live[i].p; probe++, i = (i + 1) & mask)
    if (live[i].p == p) {
      s = live[i].site;
      break;
    }
  unlock();
  return s;
}

int32_t ms__rec_site_rank(int32_t id) {
  return site_rank && id >= 0 && id < nsites ? site_rank[id] : -1;
}

// ---- TRACE.sites -----------------------------------------------------------------------

static int by_peak(const void *a, const void *b) {
  const site_rec *x = a, *y = b;
  if (x->peak != y->peak) return x->peak < y->peak ? 1 : -1;
  return x->alloc < y->alloc ? 1 : x->alloc > y->alloc ? -1 : 0;
}

// Whether s holds a control character (a '\r' would not survive the line).
static int has_control(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return 1;
  return 0;
}

// The executable file mappings of this process ("map" lines) into f.
static void write_maps(FILE *f) {
  FILE *m = fopen("/proc/self/maps", "r");
  if (!m) return;
  char line[4096 + 256];
  while (fgets(line, sizeof line, m)) {
    unsigned long lo, hi, off;
    char perm[8];
    int path = 0;
    if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perm, &off, &path) < 4 || !path)
      continue;
    if (perm[2] != 'x' || line[path] != '/') continue;
    line[strcspn(line, "\n")] = '\0';
    if (has_control(line + path)) continue;  // a line could not hold it; its frames stay unnamed
    fprintf(f, "map 0x%lx 0x%lx 0x%lx %s\n", lo, hi, off, line + path);
  }
  fclose(m);
}

void ms__rec_sites_write(void) {
  if (!__atomic_load_n(&ms__rec_sites_on, __ATOMIC_ACQUIRE) || !ms__rec.out[0]) return;
  lock();
  int64_t h = __atomic_load_n(&ms__rec_heap, __ATOMIC_RELAXED);
  if (h > snap_heap) snapshot(h);  // the program ended at its highest level
  qsort(sites, (size_t)nsites, sizeof *sites, by_peak);
  // Generations name survivors' sites by their line (ms__rec_site_rank).
  if ((site_rank = ms__rec_map(sizeof(int32_t) * MAX_SITES)))
    for (int i = 0; i < nsites; i++) site_rank[sites[i].id] = i;
  char path[PATH_MAX + 8];
  snprintf(path, sizeof path, "%s.sites", ms__rec.out);
  memstub_error err = {0};
  ms__afile af;
  if (ms__afile_open(&af, path, &err) == 0) {
    FILE *f = af.f;
    fprintf(f, "# memstub-sites 1\n");
    fprintf(f, "interval_bytes %lld\n", (long long)interval);
    fprintf(f, "peak_heap_bytes %lld\n", (long long)(snap_heap < 0 ? 0 : snap_heap));
    fprintf(f, "peak_time_ns %lld\n", (long long)snap_time);
    fprintf(f, "snapshots %llu\n", (unsigned long long)nsnap);
    fprintf(f, "sampled %llu\n", (unsigned long long)nsampled);
    fprintf(f, "dropped %llu\n", (unsigned long long)dropped);
    write_maps(f);
    for (int i = 0; i < nsites; i++) {
      const site_rec *s = &sites[i];
      fprintf(f, "site %lld %.0f %lld %.0f", (long long)s->peak, s->peak_n, (long long)s->alloc,
              s->alloc_n);
      for (int k = 0; k < s->nframes; k++) fprintf(f, " 0x%lx", (unsigned long)s->pc[k]);
      fputc('\n', f);
    }
    if (ms__afile_commit(&af, &err) == 0) err.msg[0] = '\0';
  }
  // The trace's metadata is being built: these lines go in it.
  if (err.msg[0]) {
    ms__rec_meta("sites.error", "%s", err.msg);
  } else {
    ms__rec_meta("sites.file", "%s", path);
    ms__rec_meta("sites.interval_bytes", "%lld", (long long)interval);
    ms__rec_meta("sites.sampled", "%llu", (unsigned long long)nsampled);
  }
  unlock();
}
