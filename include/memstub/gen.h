/* memstub/gen.h: turn a trace into stub data, and stub data into a header.
 *
 * memstub_gen_build() computes per-point deltas from the trace's totals,
 * applies the what-if transforms, normalises the stack into frame pushes and
 * pops that a recursion can perform (inserting zero-delay points where a real
 * trace is not LIFO-shaped) and keeps, for every point, the original row it
 * belongs to. memstub_gen_emit() writes the paper's memUse[NUMDATA] header
 * through GNU m4 and generator/memuse.h.m4. */
#ifndef MEMSTUB_GEN_H
#define MEMSTUB_GEN_H

#include <stdint.h>

#include "memstub/error.h"
#include "memstub/stub.h"
#include "memstub/threads.h"
#include "memstub/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

struct memstub_profile;  // memstub/calib.h
struct memstub_release;  // memstub/runtime.h

typedef struct memstub_gen_options {
  const char *name;         // prefix for the header's names (memstub_gen_name_check); NULL or
                            //   "" for none
  const char *source;       // what to record as the source trace (default: "(memory)")
  double time_scale;        // what-if transforms on the totals, before normalisation;
  double heap_scale;        //   1.0 leaves the trace as recorded, 0.5 halves it
  double stack_scale;
  double rss_scale;         // --rss-scale, --mapped-scale: the rss_bytes and mapped_bytes
  double mapped_scale;      //   columns when the trace has them; MEMSTUB_GEN_SCALE_HEAP (the
                            //   default): heap_scale's (docs/formats.md, "What-if transforms")
  double cpu_scale;         // --cpu-scale: the CPU time between memory changes (cpu_ns) times
                            //   this, the delays shortened or lengthened by the difference
  double churn_scale;       // --churn-scale: the allocator calls and churn_bytes times this
                            //   (0: no calls)
  const struct memstub_profile *profile;  // calibration to compensate for; NULL for none
                                          //   (memstub/calib.h, docs/calibration.md)
  const char *profile_path;               // recorded in the header when profile is set
  int timing;               // the replay timing the stub is made for (memstub_stub.timing, its
                            //   default): MEMSTUB_TIMING_ONLINE, _DEADLINE or _USLEEP; with a
                            //   profile also what it is compensated for (online: the sizes
                            //   only). MEMSTUB_TIMING_NONE (the default): no mode in particular,
                            //   and with a profile MEMSTUB_TIMING_DEFAULT
  int measured;             // with a profile: the replay will measure a trace
                            //   (MEMSTUB_MEASURE_TRACE), so predict that cost too
  double mem_share;         // the work's memory share to carry in the work model: a share in
                            //   (0, 1] or MEMSTUB_WORK_MEM_NONE; 0 (the default): the trace's
                            //   work_mem_share metadata, if any
} memstub_gen_options;

/* The default of rss_scale and mapped_scale: the heap's scale. Resident and
 * mapped memory follow the heap (a block half the size has half the pages
 * to write) unless a scale of their own is given. */
#define MEMSTUB_GEN_SCALE_HEAP (-1.0)

/* Defaults: no name, scales 1.0 (rss_scale and mapped_scale
 * MEMSTUB_GEN_SCALE_HEAP), no profile, timing MEMSTUB_TIMING_NONE (the
 * default mode). */
void memstub_gen_options_init(memstub_gen_options *o);

/* The longest stub name: every name made from it (NAME_memStub,
 * NAME_t12_memStub, MEMSTUB_GEN_NAME_MEMUSE_H, memstub_NAME_release_bytes)
 * stays short, and every tool takes the same names. */
#define MEMSTUB_GEN_NAME_MAX 64

/* Whether name can name a stub (memstub gen --name, memstub build --name,
 * memstub_add_stub's NAME; docs/runtime.md, "Stub names"): a C identifier of
 * at most MEMSTUB_GEN_NAME_MAX characters; not a C keyword, nor starting with
 * '_' (reserved for the C implementation), m4_ (GNU m4's builtins) or MS_
 * (generator/memuse.h.m4's macros); and, since a stub owns memstub_NAME and
 * memstub_NAME_*, neither one of memstub's own names nor the start of one
 * followed by '_' (memstub_replay_run rules out replay and replay_run), nor
 * overlapping any of the others[0..nothers) the same way (the other stubs of
 * one program: alpha rules out alpha_err). 0, or -EINVAL with err saying
 * why. */
int memstub_gen_name_check(const char *name, const char *const *others, size_t nothers,
                           memstub_error *err);

/* How calibration changed the data (all zero without a profile). The stack
 * is normalised with the per-frame overhead F and the offset O in mind: the
 * replay measures O + the sum of (F + pushed bytes) over the open frames, so
 * every push is F smaller, a rise smaller than F re-pushes the top frame
 * larger, and a total below O + F with no frame open cannot be met (the
 * closer of the two levels is taken). docs/calibration.md. */
typedef struct memstub_gen_comp {
  int64_t stack_points;     // pushes made smaller by the per-frame overhead
  int64_t stack_replaced;   // frames popped and pushed again larger (a rise below F)
  int64_t stack_unmet;      // rows whose stack total cannot be met
  int64_t stack_unmet_max;  // largest stack error left at an original row, bytes
  int64_t heap_points;      // rows whose heap target was changed by the heap overhead
  int64_t heap_unmet;       // rows whose heap target was below the overhead
  int64_t heap_unmet_max;   // largest heap error left at an original row, bytes
  int64_t time_points;      // rows whose delay could not absorb the predicted cost
  int64_t time_unmet_max;   // largest predicted lateness left at a row, ns
  int64_t time_shift_ns;    // predicted cost taken out of the delays in all, ns
  int64_t time_cost_ns;     // predicted cost of all points' work, ns
  int64_t stack_frame_bytes;   // the profile's figures used: F,
  int64_t stack_offset_bytes;  //   O,
  int64_t heap_overhead_bytes; //   and the heap overhead in use
  int64_t rss_points;          // points whose rss target the resident overhead lowered
  int64_t rss_overhead_bytes;  // the profile's resident_overhead_bytes used
  /* How sure the time compensation is, from the profile's 95 % intervals
   * (NAME_ci95_ns; docs/calibration.md, "How sure"): */
  double time_cost_ci_ns;      // half-width of time_cost_ns's interval, the figures taken as
                               //   independent (-1: the profile gives no intervals)
  int64_t unsure_figures;      // figures it used whose interval is wider than +-25 % and 100 ns
  char unsure[256];            // the largest of them by their share of the interval, e.g.
                               //   "time_cold_heap_to_mmap_per_page_ns 3331 +- 1203 ns (x 96)"
} memstub_gen_comp;

/* What the what-if scales did to the stub (memstub_gen_build fills it; memstub
 * gen and replay print it with memstub_gen_whatif_format): each figure
 * before the scales ([0]: the trace on its stub's timeline) and after ([1]).
 * The stub's own overheads and calibration are not in them. */
typedef struct memstub_gen_whatif {
  double rss_scale, mapped_scale;  // as applied: heap_scale's when they followed it
  int rss_follows, mapped_follows; // 1: not given, they followed heap_scale
  int has_rss, has_mapped;         // the trace has rss_bytes, mapped_bytes
  int64_t heap[2], stack[2];       // peak heap_bytes and stack_bytes
  int64_t rss[2];                  // peak rss_bytes (0 without the column)
  int64_t duration[2];             // first row to last, ns
  int64_t cpu[2];                  // CPU time (cpu_ns) over the rows, ns; -1: no cpu_ns column
} memstub_gen_whatif;

typedef struct memstub_gen {
  struct memstub_stub stub;  // ready to replay; its arrays point into this object
  struct memAlloc *use;      // [stub.numdata]
  int64_t *point;            // [stub.numdata]
  int64_t pushes, pops, constants;  // stack operations by kind
  int64_t heap_up, heap_down;       // bytes added and removed over the whole stub
  int64_t final_stack, final_heap;  // totals above the bases at the end
  memstub_gen_comp comp;
  char *name, *source, *transforms, *calibration;
  size_t cap;
  /* With a trace's rss_bytes or mapped_bytes column (else NULL, and the stub
   * is the paper's layout 1): per point the change of mapped bytes and the
   * resident target above the base; stub.mapped and stub.rss point here. */
  int64_t *mapped, *rss;
  int64_t peak_rss, peak_mapped;
  /* With a trace's work columns (cpu_ns, calls_*; else NULL, and the stub is
   * layout 1 or 2): per point the CPU ns to spin, the index of its calls in
   * calltab and the bytes they move; calltab holds ncalltab vectors of
   * MEMSTUB_WORK_CALLS counts (memstub/work.h), entry 0 none. stub.cpu, ...
   * point here. */
  int64_t *cpu, *calls, *churn, *calltab;
  int64_t ncalltab;
  int64_t work_cpu_ns, work_calls, work_bytes;  // their totals, after the transforms
  int64_t work_overhead_ns;  // the recorder's measured cost taken out of the times
  int64_t work_clamped;      // points whose CPU time was cut to their delay
  /* The heap block's resizes that stand for a recorded free: a shrink whose
   * rows had no realloc left to stand for. The replay makes them as
   * reallocs; memstub compare counts them as the frees they stand for. */
  int64_t work_block_frees;
  /* With a profile that has the calls' costs (call_*_ns): the points whose
   * calls are expected to take longer than their delay, and by how much in
   * all (ns). The replay starts their calls at most a delay early, so they
   * end late by about that (docs/runtime.md, "Work"). */
  int64_t work_late, work_late_ns;
  /* What was done to the recorded times before the transforms, one line
   * ("recorder's cost out, fitted to 3 reference runs: ..."; docs/formats.md,
   * "Work"), NULL when the times are as recorded. memstub compare judges a
   * replay against the same timeline. */
  char *timeline;
  /* 1 when that timeline may be right in total and wrong in shape: rows with
   * calls that held a tenth of the recording's CPU time kept less than a
   * tenth of theirs (the recorder's cost is taken out evenly per call; the
   * line says so too). memstub gen and replay warn. */
  int timeline_uneven;
  /* NULL, or why that timeline is an estimate: it takes the recorder's cost
   * out by the recorder's own figures (no reference runs) and they were 2 %
   * of the recording or more, which leaves out the hooks' effect on the
   * program's caches and locks (the stub may run longer than the program).
   * One sentence; memstub gen and replay warn with it. */
  char *timeline_estimated;
  memstub_gen_whatif whatif;  // what the scales did
  /* With the calls attached (memstub_gen_calls; else NULL): the encoded
   * calls and per point their end; stub.callseq and stub.callend point here. */
  uint8_t *callseq;
  int64_t *callend;
  int64_t calls_unknown;     // frees and reallocs of a block the calls never allocated: dropped
                             //   (a realloc made from NULL)
  int64_t calls_rows_off;    // rows whose heap_bytes the calls do not give (exact: 0)
  int64_t calls_rows_off_first;  // the first of them, -1 none
  int64_t calls_churn_dropped;   // calls of short-lived blocks --churn-scale left out
  int64_t calls_threads;         // threads whose calls the stub makes (merged: above 1; at most 64)
  /* The work model the stub is made with (memstub/stub.h,
   * MEMSTUB_STUB_MODEL_*; has_model 0 and all 0 without one): with work
   * columns, the trace's work_mem_share metadata and the profile's
   * spin_steps_per_ns and touch_*_ns. The header and the data file carry it
   * (layout 5); stub.work_model stays NULL, as memstub replay of the trace
   * takes them from the trace and its -c. */
  double work_model[MEMSTUB_STUB_MODEL_N];
  int has_model;
} memstub_gen;

/* Build stub data from a valid trace. On success *out owns the result.
 * Fails with -EINVAL (err says why: a bad option, a trace of one row, a
 * transform that overflows, a profile that does not fit) or -ENOMEM. */
int memstub_gen_build(const memstub_trace *t, const memstub_gen_options *o, memstub_gen **out,
                      memstub_error *err);
void memstub_gen_free(memstub_gen *g);

/* Write g as a C header to path ("-" for standard output) by running GNU m4
 * ($MEMSTUB_M4, else "m4" on PATH) on the embedded generator/memuse.h.m4,
 * in the form MEMSTUB_GEN_FORMAT_AUTO picks (memstub_gen_emit_ex below).
 * Atomic: nothing appears at path unless m4 succeeded. 0 or a negative errno
 * with err set (-ENOENT when m4 cannot be run). */
int memstub_gen_emit(const memstub_gen *g, const char *path, memstub_error *err);

/* The two forms of a header's point data (docs/formats.md, "Data forms").
 * LISTING is the paper's Listing 1, designated initialisers people read;
 * COMPACT packs the points into a string literal the compiler takes in one
 * token, and the runtime (memstub_stub_decode) unpacks it before main. AUTO
 * takes LISTING up to MEMSTUB_GEN_LISTING_MAX points, COMPACT beyond. */
enum memstub_gen_format {
  MEMSTUB_GEN_FORMAT_AUTO = 0,
  MEMSTUB_GEN_FORMAT_LISTING = 1,
  MEMSTUB_GEN_FORMAT_COMPACT = 2,
};
/* Up to this many points a listing builds in about half a second and 50 MiB;
 * beyond, each point adds some 40 us and 1.7 KiB to the compile (1M points:
 * 46 s, 1.8 GiB; bench/results/gen.md), and nobody reads it line by line. */
#define MEMSTUB_GEN_LISTING_MAX 16384

/* "auto", "listing" or "compact" into *format: 0, or -EINVAL for anything
 * else (*format unchanged). */
int memstub_gen_format_parse(const char *s, int *format);
// The form a header of numdata points gets for format (AUTO resolved).
int memstub_gen_format_for(int format, int64_t numdata);

typedef struct memstub_gen_emit_options {
  int format;  // enum memstub_gen_format
  /* Called now and then while the points are written (done of total), and
   * once at the end; NULL for none. */
  void (*progress)(void *ctx, int64_t done, int64_t total);
  void *progress_ctx;
  /* memstub gen --hold: the survivors the stub holds after it returns, and
   * their release (memstub/runtime.h; docs/runtime.md), emitted as
   * NAME_memRelease with NAME_HOLD defined; NULL for none. */
  const struct memstub_release *release;
} memstub_gen_emit_options;

// Where memstub_gen_emit_ex spent its time, for benchmarks and progress.
typedef struct memstub_gen_emit_report {
  int format;          // the form written (LISTING or COMPACT)
  int64_t format_ns;   // formatting the points in C into the data files
  int64_t m4_ns;       // running m4 on the template with the data included
  int64_t sync_ns;     // putting the file in place: flush, fsync, rename
  int64_t data_bytes;  // bytes of point data passed through m4 unexpanded
} memstub_gen_emit_report;

/* memstub_gen_emit with options (o NULL: AUTO, no progress); rep, when not
 * NULL, is filled on success. The point data is formatted in C into
 * temporary files (in $TMPDIR, else /tmp) that the m4 template includes
 * unexpanded (m4_undivert); they are removed in every case. Fails like
 * memstub_gen_emit, and with -EINVAL for an unknown o->format. */
int memstub_gen_emit_ex(const memstub_gen *g, const char *path, const memstub_gen_emit_options *o,
                        memstub_gen_emit_report *rep, memstub_error *err);

/* Write g's stub to path as a data file (docs/formats.md, "Data files";
 * memstub_stub_data_write of the runtime) instead of a header: for traces
 * too large to compile. 0, or fails as memstub_stub_data_write. */
int memstub_gen_emit_data(const memstub_gen *g, const char *path, memstub_error *err);

/* For people, what the what-if scales did (g->whatif), "" when every scale is
 * 1: a line naming the scales (and the rule that resident and mapped memory
 * follow the heap), then one indented line each for peak heap, peak stack
 * (when scaled), peak resident (when the trace has rss_bytes), duration and
 * CPU (when it has cpu_ns): "  peak heap      20.0 MiB -> 10.0 MiB (-50.0 %)",
 * each line ending in a newline. */
void memstub_gen_whatif_format(const memstub_gen *g, char *buf, size_t cap);

/* A warning for people when g's time compensation rests on figures of its
 * profile (named profile) that are unsure (g->comp.unsure_figures): which,
 * and what calibrating longer would do. 1 with buf filled (cap bytes), 0
 * when there is nothing to say. */
int memstub_gen_comp_unsure(const memstub_gen *g, const char *profile, char *buf, size_t cap);

/* One line for people saying what calibration changed in g (g->comp): the
 * header's provenance comment with bytes and times in units (KiB, µs, ms);
 * "none" without a profile. */
void memstub_gen_comp_format(const memstub_gen *g, char *buf, size_t cap);

/* The predicted cost of every point of s on the host that profile p was
 * measured on, in ns, into cost_ns[0..s->numdata): time_basic plus the stack
 * and heap parts of the profile's models (docs/calibration.md, "The cost
 * model"), plus time_measure_trace when measured is set. A row whose first
 * point waits at least p's cold_min_delay_ns is costed with the cold figures
 * (measured after a sleep, "Cold costs"), the others with the hot ones.
 * Waiting is not included. The model's sums are 64-bit, so it refuses what
 * no host holds: a stub whose stack or heap total passes 2^60 bytes at some
 * point (hand-edited or hostile data), or a profile whose page size,
 * stack_per_frame, stack_offset or heap_pad is beyond +-2^60 bytes. 0,
 * -EINVAL (s fails memstub_stub_check or those limits; err names the point or
 * the figure, and cost_ns may be partly written) or -ENOMEM. */
int memstub_gen_predict(const struct memstub_stub *s, const struct memstub_profile *p,
                        int measured, double *cost_ns, memstub_error *err);

/* Attach the calls file at path (memstub record --calls, docs/formats.md
 * "The calls file") to g, built from trace t: the stub becomes layout
 * MEMSTUB_STUB_ABI_CALLS and is replayed call for call (docs/runtime.md,
 * "The call replay"). Each call goes to the row it falls in by time; a call
 * of a bucket's rows that the row's heap_bytes already counts (the peak row
 * of a coalesced bucket carries the bucket's first time) goes to the
 * earliest row whose heap it completes. Block addresses become block ids.
 * heap_scale (memstub_gen_options.heap_scale, > 0; 1: none) scales each
 * call's size, rounded, at least 1 byte where it was: the rows are matched
 * on the calls as recorded, t being the trace before the what-ifs.
 * churn_scale (memstub_gen_options.churn_scale, 0 to 1; 1: none) keeps
 * that share of the short-lived blocks (made and freed within one row:
 * their allocation, reallocs and free), per kind and size class of the
 * allocation, deterministically; the others' calls are left out
 * (g->calls_churn_dropped), so the heap at every row is unchanged.
 * 0, or -EINVAL (a damaged file, named with its byte; calls of several
 * threads; a stub already with calls; a heap scale of 0 or less, a churn
 * scale outside 0 to 1) or -ENOMEM, with err set. */
int memstub_gen_calls(memstub_gen *g, const memstub_trace *t, const char *path, double heap_scale,
                      double churn_scale, memstub_error *err);

/* memstub_stub_check (memstub/stub.h), the runtime's check of the LIFO
 * invariants, under the generator's name. */
int memstub_gen_check(const struct memstub_stub *s, memstub_error *err);

/* ---- Traces with several threads (memstub/threads.h) ---------------------
 *
 * memstub_gen_build refuses a trace with more than one thread (a `thread`
 * column naming threads other than 0): the header forms and data files carry
 * one thread. memstub_gen_threads_build makes one stub per thread, with every
 * transform and the calibration applied to each thread as to a trace of its
 * own, plus the thread table and the cross-thread handoffs. */
typedef struct memstub_gen_threads {
  memstub_threads_stub stub;        // ready to replay; points into this object
  int64_t nthreads;
  memstub_gen **gen;                // [nthreads]: thread T's stub is gen[T]->stub
  const struct memstub_stub **stubs;  // [nthreads]
  memstub_thread_spec *threads;     // [nthreads]
  memstub_handoff *handoffs;        // [nhandoffs]
  int64_t nhandoffs;
  size_t **rows;                    // [nthreads][nrows[T]]: the trace rows of thread T; its
  size_t *nrows;                    //   stub's rows are the first nstub[T] of them (up to its
  size_t *nstub;                    //   exit row), the rest lower its heap after its exit
} memstub_gen_threads;

/* Build a multi-thread stub from a valid trace (a single-thread one gives one
 * thread). 0, or -EINVAL (a thread with fewer than two rows, a heap below the
 * blocks it handed off, or anything memstub_gen_build refuses, with the thread
 * named) or -ENOMEM, with err set. */
int memstub_gen_threads_build(const memstub_trace *t, const memstub_gen_options *o,
                              memstub_gen_threads **out, memstub_error *err);
void memstub_gen_threads_free(memstub_gen_threads *g);

/* Write g as one C header to path ("-" for standard output): every thread's
 * stub as memstub_gen_emit_ex writes a stub of that thread alone, named
 * NAME_tT (T the thread; tT without a name), in the form o->format gives for
 * its points, then the thread table, the handoffs and the descriptor
 * `struct memstub_threads_stub NAME_memThreads`, with NAME_THREADS defined as
 * the number of threads (docs/formats.md, "Threads"). Atomic like
 * memstub_gen_emit. 0, or a negative errno with err set (fails as
 * memstub_gen_emit_ex, with the thread named; -EINVAL for o->release: a stub
 * of several threads holds nothing after its return). */
int memstub_gen_threads_emit(const memstub_gen_threads *g, const char *path,
                             const memstub_gen_emit_options *o, memstub_error *err);

#ifdef __cplusplus
}
#endif
#endif
