/* runtime/internal.h: the replay engine's private pieces. */
#ifndef MEMSTUB_RUNTIME_INTERNAL_H
#define MEMSTUB_RUNTIME_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "memstub/runtime.h"
#include "memstub/threads.h"
#include "memstub/work.h"
#include "ms_common.h"
#include "ms_runtime.h"

/* ---- the runtime's own memory (own.c) ---------------------------------- */

// n * size zeroed bytes from mmap, never malloc (a stub makes only its
// component's allocator calls); NULL on overflow or out of memory.
void *ms__rt_own_calloc(size_t n, size_t size);
/* The same for a scratch array of a megabyte or more that lives briefly:
 * huge pages where the kernel gives them (one fault for 2 MiB, not 512;
 * its resident size rounds up to 2 MiB). */
void *ms__rt_own_calloc_huge(size_t n, size_t size);
// Give back a block of ms__rt_own_calloc or ms__rt_own_calloc_huge; NULL: nothing.
void ms__rt_own_free(void *p);

/* ---- the heap block (heap.c) ------------------------------------------- */

// Bytes the block holds beyond the replayed size, so glibc's 32-byte minimum
// chunk never binds and its 16-byte rounding is centred (docs/runtime.md).
#define MS__RT_HEAP_PAD 16
// The replayed metadata MEMSTUB_WORK_BLOCK_FREES_META's text after its count.
#define MS__RT_BLOCK_FREES_WHY                                                              \
  " (of the heap block's resizes, counted as reallocs, those that stand for a recorded free: " \
  "memstub compare counts them as frees)"

typedef struct ms__rt_heap {
  char *block;         // never NULL once prepared: realloc(p, 0) would free it
  int64_t size;        // replayed size; the block holds size + MS__RT_HEAP_PAD bytes
  size_t usable;       // malloc_usable_size(block), kept as the block changes
  int visible;         // mallinfo2 sees this allocator
  int tcache;          // MEMSTUB_TCACHE_*
  int64_t fixups, stuck;  // 16-byte fix-ups, and those that failed
  int64_t regrown;        // shrinks grown first so that no tcache-sized remainder was left
  int64_t unmaps;         // moves of a shrunken mmapped block back to the arena
  int64_t trims;          // mmapped blocks made a page smaller (see heap.c)
  // Resident data: a shrinking mmapped block hands its written pages to the
  // keep mapping first (resident.c); NULL without resident data.
  struct ms__rt_res *res;
} ms__rt_heap;

/* Prepare the calling thread's heap before the baseline: allocate the block,
 * see whether mallinfo2 sees the allocator, and fill every tcache bin so that
 * later frees bypass the tcache. scratch holds nscratch pointers.
 * 0 or -ENOMEM. */
int ms__rt_heap_prepare(ms__rt_heap *h, void **scratch, size_t nscratch);
// Heap in use as mallinfo2 sees it: uordblks + hblkhd.
int64_t ms__rt_heap_inuse(void);
/* Resize the block to size (>= 0) bytes of replayed heap, then correct a
 * chunk glibc left 16 bytes too large. 0 or -ENOMEM (the block stays as it
 * was). Touches nothing: the caller writes the new bytes. */
int ms__rt_heap_resize(ms__rt_heap *h, int64_t size);
// Write every new page of [from, to) and the last byte (bytes of the block).
void ms__rt_heap_touch(ms__rt_heap *h, int64_t from, int64_t to);
// malloc_usable_size of the block.
int64_t ms__rt_heap_usable(const ms__rt_heap *h);
void ms__rt_heap_release(ms__rt_heap *h);

/* ---- resident memory (resident.c) ---------------------------------------- */

// A stub with resident data (layout 2): its mapping and what it has touched.
typedef struct ms__rt_res {
  const int64_t *rss, *mapped;  // [n] memRss and memMapped, or NULL (no resident data)
  char *map;                    // the stub's anonymous mapping, NULL when none
  size_t map_cap;               // its length, whole pages
  int64_t map_len;              // mapped bytes replayed (<= map_cap)
  int64_t map_touched;          // bytes [0, map_touched) of the mapping written
  int64_t heap_touched;         // bytes [0, heap_touched) of the replayed heap written
  int64_t maps, released;       // mmap/mremap/munmap calls, releases (madvise)
  /* Resident memory beyond the heap block and the mapping (what the
   * original's allocator kept after a free, say): held in a mapping of its
   * own that mapped_bytes does not count. */
  char *keep;
  size_t keep_cap;              // its length, whole pages (it never shrinks)
  int64_t keep_touched;         // bytes [0, keep_touched) written
  int keep_split;               // pages were moved into it: several mappings, never grown
  int64_t keep_moved;           // bytes moved into it from a shrinking heap block
  int64_t n;                    // points of rss (the keep mapping is reserved for their peak)
  // MEMSTUB_MEASURE_RESIDENT: /proc/self/statm (or < 0) and the readings at T0.
  int statm_fd;
  int64_t rss0, minflt0, majflt0;
  int64_t rss0_common;  // >= 0: rss0 given (threads: one baseline for every thread)
  // Threads: every thread's mapped bytes (atomic, shared), measured as the process's; or NULL.
  int64_t *mapped_all;
} ms__rt_res;

/* Change the mapped bytes by delta (mmap, mremap or munmap to the new length
 * in whole pages; nothing is touched). 0 or a negative errno (the mapping
 * stays as it was). */
int ms__rt_res_mapped(ms__rt_res *r, int64_t delta, long page);
/* Make target bytes resident (-1: all). Written pages stay where they are
 * while the target allows: a target above what is written writes the heap
 * block's next bytes, then the mapping's, lowest address first, then the
 * keep mapping's; a target below drops (madvise MADV_DONTNEED) the keep
 * mapping's last pages first, then the mapping's, then the block's. 0, or
 * the negative errno of a keep mapping that cannot grow to what the target
 * needs of it (*keep_need, bytes): nothing is written then. */
int ms__rt_res_target(ms__rt_res *r, ms__rt_heap *h, int64_t target, long page,
                      int64_t *keep_need);
/* Before the heap block h (mmapped) shrinks to size: move its written pages
 * that the shrink would unmap into the keep mapping (mremap, no fault, no
 * copy), so that a heap fall whose resident memory stays keeps its pages as
 * glibc's arena would. Sets [*hole, *hole + *len) to the range moved out of
 * the block (*len 0: nothing moved, nothing to do). */
void ms__rt_res_keep_heap(ms__rt_res *r, const ms__rt_heap *h, int64_t size, long page,
                          uintptr_t *hole, size_t *len);
// Unmap the mapping and close statm (the end of a replay).
void ms__rt_res_release(ms__rt_res *r);
/* MEMSTUB_MEASURE_RESIDENT: open /proc/self/statm before the replay
 * (statm_fd < 0 when it cannot be: rss_bytes is then -1); take the readings
 * at T0; and measure a record after a point's work (no allocation, one pread
 * and one getrusage). */
void ms__rt_res_meter_open(ms__rt_res *r);
void ms__rt_res_baseline(ms__rt_res *r);
void ms__rt_res_measure(const ms__rt_res *r, memstub_replay_record *rec);

/* The call replay's blocks (call_replay.c) beyond the mapping and the keep
 * mapping: the map_want bytes of the mapping and keep_want of the keep
 * mapping written (from their start; a lower figure drops the pages beyond
 * it). 0, or the negative errno of a keep mapping that cannot grow to
 * keep_want (*keep_need): nothing written then. */
int ms__rt_res_extra(ms__rt_res *r, int64_t map_want, int64_t keep_want, long page,
                     int64_t *keep_need);

/* ---- the call replay's resident memory (call_resident.c) ------------------
 * The recorded rss targets applied to the call replay's live blocks:
 * after a point's calls, RssAnon is read and the difference to the target
 * written into the live blocks' unwritten requested bytes (then the
 * mapping, then the keep mapping) or dropped (the keep mapping, the
 * mapping, then whole pages wholly inside a live block's usable bytes). */
typedef struct ms__rt_cbig {
  char *p;       // the block
  int64_t size;  // its requested bytes
  int64_t wt;    // bytes [0, wt) of it written, at least its header's
  int64_t hold;  // what the component held resident in it when it freed it (its hint)
  int64_t resident;  // bytes [0, resident) resident when it was made (the arena's): never dropped
} ms__rt_cbig;
typedef struct ms__rt_cres {
  int fd;            // /proc/self/statm, -1: not open (the blocks written whole, as without targets)
  int64_t base;      // RssAnon when the replay began
  ms__rt_cbig *big;  // the live blocks of MIN_PAGES pages and more, nbig of them
  int64_t nbig;
  int64_t cursor;    // the place in big to look at first
  int64_t made;      // blocks of big made so far
  int64_t gone;      // blocks of big freed or moved so far
  int64_t dry[2];    // made when a look for pages to write (0) or drop (1) found none, -1 none
  // At the last reading of RssAnon: the target, the live bytes, made and gone; points since.
  int64_t read_target, read_live, read_made, read_gone, unread;
  int settled;  // the last reading needed no correction, or none could be made
  /* [nhint] the hold of each block of big, in the order they are made
   * (call_replay.c, hold_hints), NULL none: what the component held
   * resident in it when it freed it. */
  int64_t *hint;
  int64_t nhint;
} ms__rt_cres;
// Blocks of this many pages and more are the ones looked through for pages (call_resident.c).
#define MS__RT_CALL_BIG_PAGES 4
/* A live block's header (call_replay.c): its requested size in its first 8
 * bytes and, for a block of big, its place there plus 1 in the next 8; the
 * replay writes it after the block's own bytes and never drops its page. */
#define MS__RT_CALL_HDR 16
/* Open r for at most nblocks live blocks (statm read for the base): 0, or
 * -ENOMEM. r->fd < 0 when /proc/self/statm cannot be read. */
int ms__rt_cres_open(ms__rt_cres *r, int64_t nblocks);
void ms__rt_cres_close(ms__rt_cres *r);
// Write one byte a page of p[from, to) and its last byte, as the component wrote its blocks.
void ms__rt_cres_touch(char *p, int64_t from, int64_t to, long page);
// Whether a block of size bytes is one of big (looked through for pages).
int ms__rt_cres_is_big(int64_t size, long page);
/* Block p made (size bytes requested): a small one written whole, a larger
 * one its first bytes, to the first page boundary (the chunk header's
 * page), and put in big; kept: the bytes from its start it holds written
 * already (a realloc's copy or its own pages), 0 for a new block. Then its
 * header (MS__RT_CALL_HDR). pre: usable size of p >= MS__RT_CALL_HDR / 2. */
void ms__rt_cres_made(ms__rt_cres *r, char *p, int64_t size, int64_t kept, long page);
/* The place in big of live block p (size bytes requested), -1 when it is
 * not one of big; read before the block is freed or moved. */
int64_t ms__rt_cres_place(const char *p, int64_t size, long page);
// The block at place k of big (ms__rt_cres_place) is gone: freed, or moved by a realloc.
void ms__rt_cres_gone(ms__rt_cres *r, int64_t k);
// The bytes from its start of the block at place k (-1: not one of big, size bytes all written).
int64_t ms__rt_cres_written(const ms__rt_cres *r, int64_t k, int64_t size);
/* Whether RssAnon is worth reading for target with live requested bytes in
 * the live blocks: the last reading led to a correction (the next one
 * confirms it), the target or the live bytes moved by a quarter of the
 * slack since the last reading, a block of big was made or freed, or
 * 16 points went by; else nothing the replay did can have moved RssAnon
 * out of the slack (a small block is written whole at its call, a freed
 * one stays glibc's), and the reading (a pread of statm, 2-3 us) is
 * spared: a component of 800,000 calls over 3,000 points read it 3,000
 * times. */
int ms__rt_cres_due(ms__rt_cres *r, int64_t target, int64_t live, long page);
/* RssAnon made target bytes above the base (-1: every live block's and the
 * mapping's bytes written). 0, or as ms__rt_res_extra. */
int ms__rt_cres_target(ms__rt_cres *r, ms__rt_res *res, int64_t target, long page,
                       int64_t *keep_need);

/* ---- work (work.c): the CPU spin and the allocator calls of layout 3 ---- */

#define MS__RT_WORK_POOL 64  // blocks of a point's calls alive at once
/* Per point measured (--measure, a stub with work): the replay thread's CPU
 * clock after the point's work (absolute, -1 unknown), the bytes its calls
 * moved, and its calls by kind and class (memstub/work.h). */
#define MS__RT_WORK_REC (2 + 20)

typedef struct ms__rt_work {
  const struct memAlloc *use;
  const int64_t *cpu, *calls, *churn, *calltab;  // NULL: no work (layouts 1 and 2)
  int64_t ncalltab;
  double rate;    // the ALU loop's steps per ns of CPU (calibrated, or measured at the start)
  int rate_own;   // rate measured at the start, no calibration's: no counted ALU work
  int64_t spun;   // CPU ns spun in all
  /* Work as work (docs/runtime.md, "Work as work"): the points' CPU times are
   * amounts of work, ns at the calibration's rates, a share of them memory
   * touches of the heap block's written bytes [mem, mem + mem_len). */
  double touch_ns[MEMSTUB_WORK_TOUCH_SIZES];  // ns per touch by block size
  double mem_share;     // 0 none
  char *mem;            // the written part of the heap block (set before each spin)
  int64_t mem_len;
  uint64_t touch_pos;   // the line the touches reached
  double wtarget;       // the points' work so far (ns at the calibrated rates)
  double wdone;         // the work done by the counted loops
  int64_t wdone_ns;     // their CPU ns
  int64_t floor_ns;     // CPU ns spun to the CPU-time floor
  int started;    // the first point was begun: base is set
  int64_t base;   // the thread's CPU clock then (-1 unknown)
  int64_t target; // the points' CPU times so far
  int64_t short_bytes;  // the row's churn bytes its calls could not move (work.c)
  // the measurement of the heap block's resize in this row and in the last (NULL none),
  // and the bytes each could still stand for
  int64_t *row_block_m, *prev_block_m;
  int64_t row_room, prev_room;
  // Pre-compensation (deadline timing): what one call of each kind and class
  // costs (a profile's, or built-in proportions; costed: 1 when set), and the
  // learnt ratio of the calls' measured cost to that prediction (learnt: samples).
  int costed;
  double call_ns[MEMSTUB_WORK_CALLS];
  double corr;
  int64_t learnt;
  int exact;  // the call replay makes the calls: the work spins and makes none of its own
} ms__rt_work;

/* Set w up for s: 1 when s has work data (then glibc's mmap threshold is
 * fixed at its default if s makes large calls, see work.c), else 0 and w
 * stays empty. */
int ms__rt_work_init(ms__rt_work *w, const struct memstub_stub *s);
// Check s's work data (layout 3 only): 0 or -EINVAL with err naming the point.
int ms__rt_work_check(const struct memstub_stub *s, memstub_error *err);
/* Point x's work with usleep timing: its calls, then its spin (below). m:
 * MS__RT_WORK_REC values to measure into, or NULL. */
void ms__rt_work_point(ms__rt_work *w, int64_t x, int64_t *m);
/* Point x's spin, before its wait: until the thread's CPU time since the
 * first point (or the start given, ms__rt_work_start) reaches the points'
 * CPU times so far, never more than point x's own, less reserve ns (what
 * its calls after the wait are expected to take). */
void ms__rt_work_spin(ms__rt_work *w, int64_t x, int64_t reserve);
// The work counts the thread's CPU from cpu_ns (a stub's call: ms__rt_start), not its first point.
void ms__rt_work_start(ms__rt_work *w, int64_t cpu_ns);
/* Point x's calls, after its wait (predicted: the ns its wait ended early
 * for them, 0 none; the ratio of measured to predicted cost is learnt).
 * Measures into m as ms__rt_work_point. */
void ms__rt_work_calls(ms__rt_work *w, int64_t x, int64_t predicted, int64_t *m);
/* The ns point x's calls are expected to take: per kind and class the
 * measured cost (w->call_ns) times the learnt ratio; 0 without calls or
 * without costs. */
int64_t ms__rt_work_predict(const ms__rt_work *w, int64_t x);
/* The calls' costs to predict with: call_ns (MEMSTUB_WORK_CALLS figures, a
 * profile's call_*_ns), or built-in proportions when NULL or all 0; sets
 * w->costed. Nothing for a stub without calls. */
void ms__rt_work_costs(ms__rt_work *w, const double *call_ns);
/* The sizes class by class (sz[MEMSTUB_WORK_CLASSES]) of the calls of vector
 * v that move bytes (memstub_work_bytes) as near bytes as the classes allow. */
void ms__rt_work_sizes(const int64_t *v, int64_t bytes, int64_t *sz);
// Count a call of kind k asking for (free: freeing) bytes into the measurement m (or NULL).
void ms__rt_work_note(int64_t *m, int k, int64_t bytes);
/* Count the heap block's resize from old to size into the measurement m
 * (MS__RT_WORK_REC values, or NULL): a realloc (the recorded call the
 * generator took out of the row's vector for it) in the class of the bytes
 * it adds or releases, moving those bytes plus the row's churn bytes its
 * calls could not move (the call it stands for moved them), at most the
 * block's larger size. */
void ms__rt_work_block(ms__rt_work *w, int64_t *m, int64_t old, int64_t size);
// After the replay: the measured CPU clocks of wrec[0..n) made relative to cpu0 (T0).
void ms__rt_work_rebase(int64_t *wrec, int64_t n, int64_t cpu0);
// The spin loop's steps per ns of CPU, measured now (the calibration's).
double ms__rt_spin_rate_measure(void);
// The same, measured at the process's first ask (a replay's, when no profile gives it).
double ms__rt_spin_rate(void);
/* The work's rates and memory share from o (docs/runtime.md, "Work as
 * work"): o's work_rate or one measured now, its touch_ns or the built-in
 * figures, its mem_share or the default. */
void ms__rt_work_rates(ms__rt_work *w, const memstub_replay_options *o);
/* Check a layout-5 stub's work model (memstub/stub.h, MEMSTUB_STUB_MODEL_*):
 * a share in [0, 1] or -1, a rate and touch costs >= 0 and finite, and its
 * calls' two arrays both there or both absent. 0 (also for other layouts)
 * or -EINVAL with err naming the entry. */
int ms__rt_work_model_check(const struct memstub_stub *s, memstub_error *err);
/* The work model of a layout-5 stub s into o's mem_share, work_rate and
 * touch_ns (pointing into s), each where the model gives it (not 0); o as it
 * was for other layouts. */
void ms__rt_work_model_options(memstub_replay_options *o, const struct memstub_stub *s);
/* The written bytes of the heap block the memory share touches before the
 * next spin: [mem, mem + len), len 0 for none. */
void ms__rt_work_memory(ms__rt_work *w, char *mem, int64_t len);
/* Work of ns at the calibrated rates: (1 - mem_share) of it in the ALU
 * loop, the rest in touches of the heap block (ALU when it has under
 * 4 KiB). Returns the CPU ns it took (0 without a CPU clock). */
int64_t ms__rt_work_do(ms__rt_work *w, double ns);
// Spin ns of the thread's CPU time at rate steps per ns; returns the CPU ns spun.
int64_t ms__rt_spin(int64_t ns, double rate);

/* ---- waiting for a deadline (engine.c) ----------------------------------- */

/* The overshoot model (docs/runtime.md, "Timing"): how late clock_nanosleep
 * with 1 ns of timer slack wakes after a sleep of s ns, at about the 99th
 * percentile, on the development VM: BASE + PER_MS x s / 1 ms (measured:
 * p99 54 us after 50 us, 93 after 100 us, 78 after 200 us, 88 after 500 us,
 * 116 after 1 ms; 2000 sleeps each). A margin stays within [MIN, MAX]. */
#define MS__RT_OVERSHOOT_BASE 80000
#define MS__RT_OVERSHOOT_PER_MS 40000
#define MS__RT_MARGIN_MIN 20000
#define MS__RT_MARGIN_MAX 500000
/* Adaptive: per bucket of sleep length, a streaming 99th percentile of the
 * overshoot (up 99 STEPs for a sample above the estimate, down one for a
 * sample below), plus SLACK. */
#define MS__RT_MARGIN_STEP 500
#define MS__RT_MARGIN_SLACK 10000
#define MS__RT_SLEEP_BUCKETS 7
/* A wait re-aims (sleeps twice) only when its first sleep would be at least
 * this share of reaim long: each wake-up costs CPU (about 25 us here). */
#define MS__RT_REAIM_MIN_DIV 4

typedef struct ms__rt_waiter {
  int64_t fixed;   // >= 0: the old fixed margin (one sleep, no model); < 0: the model
  int64_t reaim;   // model: long sleeps end this far before the deadline; 0 never cut
  int adaptive;    // learn the overshoot per bucket of sleep length
  int64_t q[MS__RT_SLEEP_BUCKETS];  // adaptive: estimated p99 overshoot per bucket, ns
} ms__rt_waiter;

// Set w up for a margin option (ns >= 0, MEMSTUB_MARGIN_MODEL or _ADAPTIVE)
// and a reaim option (0 default, -1 never, or ns).
void ms__rt_waiter_init(ms__rt_waiter *w, int64_t margin_opt, int64_t reaim_opt);
// The bucket of a sleep of s ns: < 100 us, 200 us, 500 us, 1 ms, 2 ms, 5 ms, longer.
int ms__rt_sleep_bucket(int64_t s);
// The margin to leave before a deadline after a sleep of s ns (pure).
int64_t ms__rt_margin_for(const ms__rt_waiter *w, int64_t s);
/* The next sleep of a wait with rem ns left to its deadline: its length,
 * or 0 to spin the rest (pure). With reaim set, a long wait first sleeps to
 * reaim before the deadline (*last = 0: plan again after it); a shorter one
 * sleeps to the margin (*last = 1: spin after it, whatever is left). */
int64_t ms__rt_plan_sleep(const ms__rt_waiter *w, int64_t rem, int *last);
// Adaptive: learn that a sleep of s ns woke over ns late (nothing otherwise).
void ms__rt_waiter_learn(ms__rt_waiter *w, int64_t s, int64_t over);

/* ---- the online cost model (engine.c) ------------------------------------ */

/* What a row's work does, as the runtime sees it before the row's wait
 * (docs/runtime.md, "The online cost model"): a heap part (none; in the
 * arena; an mmapped block within its pages; an mmapped block changing by 1,
 * 2-7 or 8+ pages, which is mremap; a move between the arena and mmap) times a stack
 * part (none, pop, push within pages written before, push beyond them: page
 * faults), or a change of the mapped bytes, or only a resident target that
 * moves (touch). A row of several points takes the largest part of each. */
enum {
  MS__RT_HEAP_NONE, MS__RT_HEAP_ARENA, MS__RT_HEAP_INPAGE, MS__RT_HEAP_PAGES1,
  MS__RT_HEAP_PAGES2, MS__RT_HEAP_PAGES8, MS__RT_HEAP_MOVE, MS__RT_HEAP_PARTS
};
enum { MS__RT_STACK_NONE, MS__RT_STACK_POP, MS__RT_STACK_PUSH, MS__RT_STACK_FAULT,
       MS__RT_STACK_PARTS };
#define MS__RT_COST_MAPPED (MS__RT_HEAP_PARTS * MS__RT_STACK_PARTS)
#define MS__RT_COST_TOUCH (MS__RT_COST_MAPPED + 1)
#define MS__RT_COST_CLASSES (MS__RT_COST_TOUCH + 1)
/* The model learns per slot: a class, the row's points (1, 2-3, 4 or more:
 * each point adds its own call and measuring) and the row's wait (< 1 ms,
 * 1-10 ms, longer: work after a long sleep runs on colder caches). A slot
 * with nothing learnt yet uses its class's nearest one that has: the same
 * points at the nearest wait, else the nearest points. Per slot a
 * streaming median: the median of the first FIRST samples, then a sample
 * above the estimate moves it up by STEP + estimate / STEP_DIV, one below
 * down by as much; a sample above OUTLIER x the estimate + OUTLIER_NS (the
 * thread preempted during the work) moves it by one step only. A row starts
 * at most LEAD_MAX early. */
#define MS__RT_COST_WAITS 3
#define MS__RT_COST_CHAINS 3
#define MS__RT_COST_SLOTS (MS__RT_COST_CLASSES * MS__RT_COST_CHAINS * MS__RT_COST_WAITS)
#define MS__RT_COST_FIRST 5
#define MS__RT_COST_STEP 250
#define MS__RT_COST_STEP_DIV 32
#define MS__RT_COST_LEAD_MAX 2000000
#define MS__RT_COST_OUTLIER 4
#define MS__RT_COST_OUTLIER_NS 20000
// The longest chain of zero-delay points a row's class is read from.
#define MS__RT_COST_SCAN 64

typedef struct ms__rt_cost {
  int on;                            // anticipate: start each row's work its learnt cost early
  int64_t est[MS__RT_COST_SLOTS];  // learnt median work per slot, ns; -1 nothing learnt
  // the heap resize done ahead (mremap, a move): its learnt 99th percentile, ns; -1 none
  int64_t pre[MS__RT_COST_SLOTS];
  int64_t n[MS__RT_COST_SLOTS];    // rows learnt per slot
  int64_t first[MS__RT_COST_SLOTS][MS__RT_COST_FIRST];  // the first samples
  int64_t stack, stack_hw;           // requested bytes of the open frames; the most so far
  // the row in progress: its slot, when its work began (-1: none open), when the last
  // point's work ended
  int cls;
  int64_t start, end;
  int64_t lead_sum;                  // ns of anticipation applied, over all rows
  int64_t pre_x, pre_old;            // the point whose heap was resized ahead (-1 none), and
                                     //   its size before
  int64_t pre_rows;                  // rows resized ahead
} ms__rt_cost;

// The state the class of a row is read from: the replayed heap size, whether
// the block is mmapped, the stack's open bytes and high-water mark.
typedef struct ms__rt_cost_state {
  int64_t heap, stack, stack_hw;
  int mmapped;
  long page;
} ms__rt_cost_state;

void ms__rt_cost_init(ms__rt_cost *m, int on);
/* Whether s's delays carry a static prediction of the work already: a stub
 * compensated by a profile for deadline or usleep timing (memstub gen
 * --calibration P --timing deadline). Online timing then leaves its cost
 * model off (docs/runtime.md, "The online cost model"). */
int ms__rt_delays_predicted(const struct memstub_stub *s);
/* The class of the row whose points are use[x..] up to the next point with
 * a delay (at most MS__RT_COST_SCAN), from state st; mapped and rss are the
 * stub's resident arrays or NULL (pure). */
int ms__rt_cost_class(const struct memAlloc *use, int64_t n, int64_t x, const int64_t *mapped,
                      const int64_t *rss, const ms__rt_cost_state *st);
// The slot of a row of class k and points points (>= 1) that waited delay ns (pure).
int ms__rt_cost_slot(int k, int64_t delay, int64_t points);
/* The anticipation for a row of slot k: its learnt cost (or its class's at
 * the nearest wait) within [0, LEAD_MAX]; 0 when off or nothing learnt. */
int64_t ms__rt_cost_lead(const ms__rt_cost *m, int k);
// Learn that a row of slot k worked w ns.
void ms__rt_cost_learn(ms__rt_cost *m, int k, int64_t w);
/* Whether rows of class k resize the heap ahead: their heap part is, or may
 * be, a system call whose time varies by tens of us (an mmapped block's
 * realloc: mremap, and the runtime's trim; a move between arena and mmap). Such a row resizes the block when its
 * learnt 95th percentile plus the rest of the row's cost is left to the
 * deadline, then waits again for the rest: the call's variation ends in the
 * wait, not in the row's lateness (pure). */
int ms__rt_cost_resize_ahead(int k);
// The time to leave for the resize ahead of slot k: its learnt 99th percentile (or its
// class's at the nearest wait), 0 unknown.
int64_t ms__rt_cost_pre(const ms__rt_cost *m, int k);
// Learn that the resize ahead of slot k took a ns.
void ms__rt_cost_learn_pre(ms__rt_cost *m, int k, int64_t a);

/* ---- the engine (engine.c) --------------------------------------------- */

typedef struct ms__rt_ctx ms__rt_ctx;
// A driver's per-point hook (ms__rt_ctx.hook): the next point it wants, -1 none.
typedef int64_t (*ms__rt_point_hook)(void *arg, int64_t x);

struct ms__rt_ctx {
  // input
  const struct memAlloc *use;
  int64_t n;
  int timing;
  unsigned measure;
  ms__rt_waiter waiter;     // deadline timing: margins and re-aiming
  ms__rt_cost cost;         // deadline timing: the online cost model
  memstub_replay_record *rec;  // [n] or NULL
  long page;
  int64_t alloca_bias;
  // state
  ms__rt_heap heap;
  ms__rt_res res;           // resident data, res.rss NULL when the stub has none
  ms__rt_work work;         // work data, work.cpu NULL when the stub has none
  int64_t *wrec;            // [n * MS__RT_WORK_REC] measured work, or NULL
  uintptr_t entry_sp;
  int64_t t0, deadline;     // absolute T0; scheduled time of the current point, relative
  int64_t end;              // absolute end of the replay
  int64_t sleeps, late_wakeups;
  int sched_fd;             // /proc/thread-self/schedstat (MEASURE_SCHED, adaptive), or < 0
  int sched_rec;            // MEASURE_SCHED: record run_delay_ns per point
  int64_t slice;            // the scheduler slice to ask for, 0 for none; 0 after if refused
  int64_t cpu0, cpu_end;    // the thread's CPU time at T0 and at the end (-1 unknown)
  int64_t cpu_last;         // ... as the last point's end_ns was read (-1: not measured)
  int64_t run_delay0, run_delay_end;  // its run-queue wait at T0 and at the end (-1 unknown)
  int64_t begun;            // points begun, for progress (written with __atomic_store_n)
  int64_t heap_base, faults_base;
  int failed;               // a negative errno once a point's memory could not be had
  int64_t failed_at;        // ... at this point
  int failed_what;          // ... for this (MS__RT_FAIL_*)
  int64_t failed_bytes;     // ... of this size (the heap block, the mapping, the keep mapping)
  char failed_why[MEMSTUB_ERRMSG_MAX];  // MS__RT_FAIL_DATA: why the data could not be read
  memstub_replay_record entry;
  // Set by the driver: T0 given (threads.c: the common clock), else 0.
  int64_t t0_at;
  int64_t cpu0_at;  // the calling thread's CPU clock at t0_at (on the caller's thread), else -1
  /* The driver's per-point hook (threads.c: a thread's creations, joins and
   * handoff blocks; none for a single stub): after the memory part of point
   * hook_next the engine calls hook(hook_arg, hook_next), which returns the
   * next point it wants (-1 none). The engine knows nothing else of it. */
  ms__rt_point_hook hook;
  void *hook_arg;
  int64_t hook_next;
  int crowd;  // other replays run beside this one: the process's readings move between points
  const struct ms__rt_replay_ops *ops;  // the replay's memory operations (ms__rt_replay_ops_for)
  const struct memstub_stub *stub;      // the stub replayed
  struct ms__rt_calls *calls;           // the call replay's blocks (call_replay.c), else NULL
};

/* ---- the replays: the seam between the engine and a stub's memory -------- */

/* What the engine asks of a replay, chosen once per stub
 * (ms__rt_replay_ops_for; docs/runtime.md, "Layers"). The engine owns the
 * recursion (stack), the waits, the cost model, the work's spin and the
 * measuring; the replay owns how a point's heap, mapped and resident changes
 * are made. Today: the class replay (class_replay.c), one block resized by
 * realloc. The call-for-call replay (issue 31 item 2) goes beside it as a
 * second table and file, not as branches through engine.c. */
typedef struct ms__rt_replay_ops {
  const char *name;
  // In the replaying thread, before the baseline (scratch: the tcache fill's
  // pointers, NULL for none). 0 or -ENOMEM.
  int (*prepare)(ms__rt_ctx *c, void **scratch, size_t nscratch);
  /* NULL, or: the row starting at point x, of cost slot k, starts lead ns
   * early and its heap change is a system call of varying time: make it
   * ahead of the deadline (docs/runtime.md, "The online cost model"). */
  void (*ahead)(ms__rt_ctx *c, int64_t x, int k, int64_t lead);
  // Point x's memory part after its stack part; a failure sets c->failed.
  void (*heap)(ms__rt_ctx *c, int64_t x);
  // In the replaying thread after the replay: what prepare and heap made goes.
  void (*release)(ms__rt_ctx *c);
  // NULL (mallinfo2 and the heap block), or: heap_bytes and heap_usable measured into r.
  void (*measure)(const ms__rt_ctx *c, memstub_replay_record *r);
} ms__rt_replay_ops;

extern const ms__rt_replay_ops ms__rt_class_replay;
// The call replay (call_replay.c): a stub of layout 4, its calls made one by one.
extern const ms__rt_replay_ops ms__rt_call_replay;
typedef struct ms__rt_calls ms__rt_calls;
/* Check a layout-4 stub's calls (call_replay.c): the points' ends in order
 * and within the calls, every call decodable, every block it frees or
 * reallocates live, within ncallblocks, ncallcount calls. 0 (also for
 * other layouts) or -EINVAL with err naming the point or byte, or -ENOMEM. */
int ms__rt_calls_check(const struct memstub_stub *s, memstub_error *err);
/* The blocks of MS__RT_CALL_BIG_MIN bytes or more that s's calls make, in
 * the order they are made: pairs (size, the point whose calls free it, -1
 * none: never freed, or moved by a realloc) into *out (n pairs, the
 * caller's to free()), for a data file (datafile.c). The calls are checked
 * as ms__rt_calls_check does: 0, or -EINVAL / -EIO / -ENOMEM with err set.
 * pre: ms__rt_stub_calls(s). */
#define MS__RT_CALL_BIG_MIN ((int64_t)MS__RT_CALL_BIG_PAGES * 4096)  // the smallest page's
int ms__rt_calls_big(const struct memstub_stub *s, int64_t **out, int64_t *n, memstub_error *err);
/* Remember s's calls as checked, their blocks of big those of the n pairs
 * (ms__rt_calls_big's) of MS__RT_CALL_BIG_PAGES pages of this machine or
 * more: a data file carries them, so that its replay does not walk the
 * calls first; the replay checks each call as it makes it. 0 or -ENOMEM.
 * pre: every pair's point within -1 and s->numdata - 1. */
int ms__rt_calls_known(const struct memstub_stub *s, const int64_t *pairs, int64_t n);
/* The bytes of a stub's calls (call_source.c): in memory, or a data file's
 * read a window at a time and checked against the sums taken at its open. */
#define MS__RT_CALLS_WINDOW ((int64_t)32 << 10)  // bytes read at once, a multiple of 32
#define MS__RT_CALL_MAX 32                        // an encoded call's bytes at most
typedef struct ms__rt_callsrc ms__rt_callsrc;
/* A data file's calls, len bytes at off of fd (duplicated, path named in
 * errors): complete once ms__rt_callsrc_fill has summed each window in turn;
 * then a descriptor whose callseq is ms__rt_callsrc_key(s) reads them from
 * the file. 0 or a negative errno. */
int ms__rt_callsrc_create(const char *path, int fd, int64_t off, int64_t len,
                          ms__rt_callsrc **out);
// The next window's n bytes (MS__RT_CALLS_WINDOW, the last one shorter): 0 or -EINVAL.
int ms__rt_callsrc_fill(ms__rt_callsrc *s, const void *p, int64_t n);
// What callseq is for s: a page of its own that faults when read.
const uint8_t *ms__rt_callsrc_key(const ms__rt_callsrc *s);
void ms__rt_callsrc_free(ms__rt_callsrc *s);
typedef struct ms__rt_callrd {
  const uint8_t *mem;        // the calls in memory, else NULL: read from src
  ms__rt_callsrc *src;
  uint8_t *buf;              // two windows: the calls' bytes [buf_at, buf_at + buf_len)
  int64_t buf_at, buf_len;
  int64_t n;                 // the calls' bytes
  int err;                   // -EIO once a window could not be read or had changed
  char why[MEMSTUB_ERRMSG_MAX / 2];  // ... and why, naming the file
} ms__rt_callrd;
// A reader of s's calls. 0, -ENOMEM, or -EINVAL for a source of another length.
int ms__rt_callrd_open(ms__rt_callrd *r, const struct memstub_stub *s);
void ms__rt_callrd_close(ms__rt_callrd *r);
/* The calls' bytes from at (pre: at < r->n): p[0] is byte at, *avail bytes
 * follow it (at least MS__RT_CALL_MAX, or up to the end); NULL with r->err
 * and r->why set when the file could not be read or has changed. */
const uint8_t *ms__rt_callrd_get(ms__rt_callrd *r, int64_t at, int64_t *avail);
// The same, inline where the bytes are in memory or in the window already.
static inline const uint8_t *ms__rt_callrd_at(ms__rt_callrd *r, int64_t at, int64_t *avail) {
  if (r->mem) return *avail = r->n - at, r->mem + at;
  int64_t have = r->buf_at + r->buf_len;
  if (at >= r->buf_at && have - at >= MS__RT_CALL_MAX)
    return *avail = have - at, r->buf + (at - r->buf_at);
  return ms__rt_callrd_get(r, at, avail);
}
// The file's calls' identity (a digest of the windows' sums), 0 for calls in memory.
uint64_t ms__rt_callrd_digest(const ms__rt_callrd *r);
/* A 64-bit sum of n bytes (a multiple of 8, 8-aligned), the data file's
 * checksum (datafile.c); ms__rt_sum64_more carries it over chunks. */
typedef struct ms__rt_sum64_state {
  uint64_t a, b, c, d;
} ms__rt_sum64_state;
uint64_t ms__rt_sum64(const void *p, uint64_t n, uint64_t seed);
void ms__rt_sum64_start(ms__rt_sum64_state *st, uint64_t n, uint64_t seed);
// pre: n a multiple of 32 except in the last chunk (a multiple of 8)
void ms__rt_sum64_more(ms__rt_sum64_state *st, const void *p, uint64_t n);
uint64_t ms__rt_sum64_end(const ms__rt_sum64_state *st);
/* Whether s is replayed call for call: layout 4, or layout 5 with its calls
 * (callseq set; memstub/stub.h, MEMSTUB_STUB_ABI_MODEL). */
static inline int ms__rt_stub_calls(const struct memstub_stub *s) {
  return s->abi == MEMSTUB_STUB_ABI_CALLS || (s->abi >= MEMSTUB_STUB_ABI_MODEL && s->callseq);
}
// The replay for s (class_replay.c): the call replay for a stub with calls, else the class replay.
const ms__rt_replay_ops *ms__rt_replay_ops_for(const struct memstub_stub *s);
/* Wait until T0 + c->deadline - lead for point x (deadline and online
 * timing: sleep as the waiter plans, then spin); returns the clock then
 * (engine.c). */
int64_t ms__rt_wait_deadline(ms__rt_ctx *c, int64_t x, int64_t lead);

// What a replay that stopped could not have (ms__rt_ctx.failed_what).
enum {
  MS__RT_FAIL_HEAP,
  MS__RT_FAIL_MAPPED,
  MS__RT_FAIL_RESIDENT,
  MS__RT_FAIL_CALL,
  MS__RT_FAIL_DATA  // an exact stub's calls could not be read from its data file
};
// A replay's point x could not have what (MS__RT_FAIL_*) of bytes: error rc, the replay stops
// (class_replay.c).
void ms__rt_replay_stop(ms__rt_ctx *c, int64_t x, int rc, int what, int64_t bytes);
/* Why c's replay of s stopped, into buf: "point X (row R of the trace, T ns
 * after its start): stopped: cannot ..." naming the heap block, the mapping
 * (mapped_bytes), the resident target (rss_bytes) or the call replay's call
 * and its size (run.c). */
void ms__rt_stop_reason(const ms__rt_ctx *c, const struct memstub_stub *s, char *buf, size_t cap);

/* The engine's context for a replay of s with opt, measuring into rec
 * (run.c): its replay's operations chosen, no hook (hook_next -1). */
void ms__rt_ctx_init(ms__rt_ctx *c, const struct memstub_stub *s,
                     const memstub_replay_options *opt, memstub_replay_record *rec);
// What the replay r did, from the engine's context c, into r->info (run.c).
void ms__rt_fill_info(memstub_replay *r, const ms__rt_ctx *c, int64_t stack_size);
// Heap preparation's scratch pointers: at most this many chunks per bin.
#define MS__RT_SCRATCH_POINTERS 4096

/* Run fn(arg) on the calling thread but on a stack of its own of
 * stack_size bytes (mmapped, a guard page below; on_stack.c), switched to and
 * back with swapcontext; the thread's timer slack is as it was after. 0 once
 * fn returned; a negative errno when the stack cannot be had (fn did not
 * run). */
int ms__rt_run_on_stack(void (*fn)(void *), void *arg, int64_t stack_size, long page);
/* A stub's call as its caller made it: CLOCK_MONOTONIC ns and the calling
 * thread's CPU clock (-1 unknown). What the stub does of its own before its
 * first point (reading its data, its checks, measuring its spin's rate) is
 * the component's time and CPU: its points' deadlines count from wall_ns,
 * and its work (runtime/work.c) from cpu_ns, so that the CPU spent before
 * comes out of the work, as the replay's other costs do. */
typedef struct ms__rt_start {
  int64_t wall_ns, cpu_ns;
} ms__rt_start;
ms__rt_start ms__rt_start_now(void);
/* memstub_replay_run and memstub_threads_run, with here = 1: the replay
 * (threads: thread 0's) runs on the calling thread, on a stack of its own
 * (ms__rt_run_on_stack), so its allocations come from the caller's arena and
 * tcache; opt->progress is never called and the caller's timer slack is
 * restored after (run.c, threads.c; for call.c). here = 0: as the public
 * functions, on a replay thread. t0_at: the replay's T0 (CLOCK_MONOTONIC
 * ns), a moment before it starts (a stub called as a function counts from
 * its call, so that reading its data and preparing its calls take the
 * component's time, not more; its first points are late until the online
 * timing has caught up), or 0: when its first point begins. */
int ms__rt_replay_run(const struct memstub_stub *s, const memstub_replay_options *o,
                      memstub_replay **out, int here, const ms__rt_start *at, memstub_error *err);
/* memstub_stub_call of s from at (call.c): a stub embedded with DATA counts
 * from its call, before its data is read. */
int ms__rt_stub_call_from(const struct memstub_stub *s, const ms__rt_start *at,
                          memstub_error *err);
int ms__rt_threads_run(const memstub_threads_stub *s, const memstub_replay_options *o,
                       memstub_threads_replay **out, int here, memstub_error *err);

/* Run the replay in the calling thread (which must have the stack): sets the
 * timer slack, takes the baseline, replays every point. c->failed says
 * whether it stopped early. */
void ms__rt_engine_run(ms__rt_ctx *c);
/* MEMSTUB_MEASURE_RESIDENT after point x (resident.c): a point that pushes
 * nothing, resizes nothing and keeps the resident target and the mapping as
 * they were changes no page of the replay, so it repeats point x - 1's
 * readings instead of reading again (about 1.4 us saved: pops and constant
 * points); any other point is read. */
void ms__rt_res_measure_point(const ms__rt_ctx *c, int64_t x, memstub_replay_record *rec);
/* Bytes an alloca(k) moves the stack pointer beyond round16(k), found once
 * with a probe compiled like the engine; 0 when the probe is inconclusive. */
int64_t ms__rt_alloca_bias(void);

#endif
