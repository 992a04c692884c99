/* memstub/stub.h: what a compiled stub is, its one contract.
 *
 * The paper's simulation data file (Trapp, Meyer & Facchi 2011, Listing 1) is
 * an array memUse[NUMDATA] of struct memAlloc. memstub keeps that array and
 * adds a descriptor, struct memstub_stub, that points at it together with the
 * map back to the original trace and the figures the runtime needs to size
 * its thread. Generated headers (memstub gen, generator/memuse.h.m4) repeat
 * the type definitions below under the same guards, so a header compiles on
 * its own or next to this file.
 *
 * A stub program links the runtime alone (memstub/runtime.h): the functions
 * declared here are the runtime's, never the generator's. */
#ifndef MEMSTUB_STUB_H
#define MEMSTUB_STUB_H

#include <stdint.h>

#include "memstub/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef MEMSTUB_ENUM_TIMING
#define MEMSTUB_ENUM_TIMING
/* How delays are waited for: a replay's mode (memstub_replay_options.timing),
 * and the mode a stub was made for (memstub_stub.timing, memstub gen
 * --timing; with --calibration, what its delays and sizes were compensated
 * for). The values are the header's: a generated header holds them as
 * numbers. docs/runtime.md, "Timing". */
enum memstub_timing {
  MEMSTUB_TIMING_NONE = 0,      // a stub only: made for no mode in particular (replayed with
                                //   the default, MEMSTUB_TIMING_DEFAULT)
  MEMSTUB_TIMING_DEADLINE = 1,  // absolute deadlines: sleep to a margin before, then spin
  MEMSTUB_TIMING_USLEEP = 2,    // the paper's relative sleeps; errors accumulate by design
  MEMSTUB_TIMING_ONLINE = 3,    // deadlines, each row started early by the work the replay
                                //   learns on the host (memstub/runtime.h, MEMSTUB_COST_*);
                                //   a stub made for it has its sizes compensated, not its delays
};
#endif
/* The default everywhere (memstub replay, a stub program, an embedded stub,
 * memstub gen --calibration, memstub demo): the mode the timing benchmark
 * measured best (bench/results/replay-timing.md). */
#ifndef MEMSTUB_TIMING_DEFAULT
#define MEMSTUB_TIMING_DEFAULT MEMSTUB_TIMING_ONLINE
#endif

/* The names memalloc.h gave the same modes (same values). Kept until no code
 * uses them. */
#define MEMSTUB_COMP_NONE MEMSTUB_TIMING_NONE
#define MEMSTUB_COMP_DEADLINE MEMSTUB_TIMING_DEADLINE
#define MEMSTUB_COMP_USLEEP MEMSTUB_TIMING_USLEEP

#ifndef MEMSTUB_STRUCT_MEMALLOC
#define MEMSTUB_STRUCT_MEMALLOC
/* One replay point. Delay first, then the stack change, then the heap change. */
struct memAlloc {
  int64_t time;        /* ns since the previous point (paper: microseconds) */
  int64_t stackAlloc;  /* > 0 push a frame of this many bytes; < 0 pop exactly
                          one frame (minus its size); 0 stack unchanged */
  int64_t heapAlloc;   /* change of the heap block in bytes */
};
#endif

#ifndef MEMSTUB_STRUCT_STUB
#define MEMSTUB_STRUCT_STUB
#define MEMSTUB_STUB_ABI 1

struct memstub_stub {
  int32_t abi;                  /* MEMSTUB_STUB_ABI */
  int32_t timing;               /* MEMSTUB_TIMING_*: what use[].time was compensated for */
  const char *name;             /* gen --name, "" if none */
  int64_t numdata;              /* points in use[] */
  const struct memAlloc *use;   /* [numdata] */
  const int64_t *point;         /* [numdata] original trace row each point belongs to;
                                   non-decreasing; a row's last point completes it */
  int64_t norig;                /* rows in the original trace */
  int64_t time0_ns;             /* original time of row 0 */
  int64_t stack_base;           /* original stack total that replay zero stands for */
  int64_t heap_base;            /* original heap total that replay zero stands for */
  int64_t peak_stack;           /* peak sum of open frames' bytes */
  int64_t max_depth;            /* peak number of open frames */
  int64_t peak_heap;            /* peak heap block size */
  int64_t duration_ns;          /* sum of use[].time */
  int64_t inserted;             /* points added by stack normalisation */
  const char *source;           /* provenance, one line each */
  const char *transforms;
  const char *calibration;
  /* Appended (docs/formats.md, "Resident memory"): read only when abi is
   * MEMSTUB_STUB_ABI_RESIDENT; a layout-1 stub ends before them. */
  const int64_t *mapped;        /* [numdata] change of anonymous mapped bytes, or NULL */
  const int64_t *rss;           /* [numdata] resident bytes above rss_base to reach, or NULL */
  int64_t rss_base;             /* original rss_bytes that replay zero stands for */
  int64_t mapped_base;          /* original mapped_bytes that replay zero stands for */
  /* Appended (docs/formats.md, "Work"): read only when abi is
   * MEMSTUB_STUB_ABI_WORK; layouts 1 and 2 end before them. */
  const int64_t *cpu;           /* [numdata] CPU ns to spin before point i's deadline */
  const int64_t *calls;         /* [numdata] index into calltab of the calls made before it */
  const int64_t *churn;         /* [numdata] bytes those calls move */
  const int64_t *calltab;       /* [ncalltab * 20] calls by kind and size class (memstub/work.h);
                                   entry 0 is no call */
  int64_t ncalltab;
  int64_t block_frees;          /* of the heap block's resizes, those that stand for a
                                   recorded free (a shrink with no realloc to stand for):
                                   the replay's reallocs that were frees (memstub gen) */
  /* Appended (docs/formats.md, "Calls"): read only when abi is
   * MEMSTUB_STUB_ABI_CALLS; layouts 1 to 3 end before them. The component's
   * allocator calls, in order, replayed call for call (runtime/call_replay.c). */
  const uint8_t *callseq;       /* [ncallseq] the calls, encoded */
  const int64_t *callend;       /* [numdata] the end in callseq of the calls made at point i
                                   (non-decreasing; point i's begin at callend[i - 1], 0) */
  int64_t ncallseq;             /* bytes of callseq, a multiple of 8 */
  int64_t ncallblocks;          /* blocks live at once at most: the replay's table of blocks */
  int64_t ncallcount;           /* calls in callseq */
  /* Appended (docs/formats.md, "Metadata of the work model"): read only
   * when abi is MEMSTUB_STUB_ABI_MODEL; layouts 1 to 4 end before it. */
  const double *work_model;     /* [MEMSTUB_STUB_MODEL_N] the work model the stub was made
                                   with (memstub gen, the trace's work_mem_share and the
                                   profile's rates), MEMSTUB_STUB_MODEL_* below; or NULL */
};
#endif
/* A stub whose descriptor has the resident fields above (a header generated
 * from a trace with rss_bytes or mapped_bytes sets .abi to this). */
#define MEMSTUB_STUB_ABI_RESIDENT 2
#define MEMSTUB_STUB_RESIDENT 1
/* A stub whose descriptor has the work fields too (a header generated from a
 * trace with cpu_ns or call columns); its resident fields may be NULL. */
#define MEMSTUB_STUB_ABI_WORK 3
#define MEMSTUB_STUB_WORK 1
/* A stub whose descriptor has the calls too (memstub gen --data of a trace
 * with a calls file): replayed call for call; its resident and work fields
 * may be NULL. */
#define MEMSTUB_STUB_ABI_CALLS 4
/* A stub whose descriptor has the work model too (memstub gen of a trace
 * with work_mem_share metadata, or with --calibration, and work columns):
 * every field of layout 4, its calls replayed call for call only when
 * callseq is not NULL (any of its resident, work and call fields may be
 * NULL), and work_model, whose entries (0: not given, the runtime's
 * default) are the replay options' (memstub_replay_options_for). */
#define MEMSTUB_STUB_ABI_MODEL 5
#define MEMSTUB_STUB_MODEL 1
#define MEMSTUB_STUB_MODEL_SHARE 0  /* the memory share: (0, 1], -1 none (mem_share) */
#define MEMSTUB_STUB_MODEL_RATE 1   /* the ALU loop's steps per ns (work_rate) */
#define MEMSTUB_STUB_MODEL_TOUCH 2  /* then ns per touch by block size (touch_ns), 5 of them */
#define MEMSTUB_STUB_MODEL_N 7

/* Check the LIFO invariants of stub data (runtime/check.c): no negative
 * delay, pushes > 0, every pop closes the open frame and equals minus its
 * size, the map is non-decreasing and within the original rows; and a
 * numdata that is neither negative nor beyond what memory can hold. 0 or
 * -EINVAL with err naming the point, or -ENOMEM. */
int memstub_stub_check(const struct memstub_stub *s, memstub_error *err);

/* Unpack the compact form of a generated header (runtime/decode.c, called by
 * the header's constructor): len bytes of data into use[0..numdata) and
 * point[0..numdata). 0, or -EINVAL when data is damaged (not numdata points,
 * or bytes left over): then use[0] is zeroed and point[0] set to -1, which
 * memstub_stub_check refuses ("point 0: maps to row -1"), so the stub is
 * never replayed. */
int memstub_stub_decode(const char *data, int64_t len, int64_t numdata, struct memAlloc *use,
                        int64_t *point);

/* memstub_stub_decode for a header with resident data (layout 2, data
 * tagged "ms2."): per point two more numbers, into mapped[0..numdata) and
 * rss[0..numdata). Fails like memstub_stub_decode. */
int memstub_stub_decode_resident(const char *data, int64_t len, int64_t numdata,
                                 struct memAlloc *use, int64_t *point, int64_t *mapped,
                                 int64_t *rss);

/* memstub_stub_decode for a header with work data (layout 3, data tagged
 * "ms3.", or "ms4." with resident data too): per point, after the four
 * numbers (and mapped and rss when mapped is not NULL), cpu, calls and
 * churn; then the ncalltab * 20 numbers of calltab. Fails like
 * memstub_stub_decode. */
int memstub_stub_decode_work(const char *data, int64_t len, int64_t numdata, struct memAlloc *use,
                             int64_t *point, int64_t *mapped, int64_t *rss, int64_t *cpu,
                             int64_t *calls, int64_t *churn, int64_t ncalltab, int64_t *calltab);

/* The body of a stub's function entry point (memstub_add_stub): replay s with
 * the defaults on the calling thread, on a stack of its own (so its
 * allocations come from the caller's arena and tcache; docs/runtime.md, "On
 * the caller's thread"), and return 0 or a negative errno (err may be NULL). The
 * environment can change the defaults: MEMSTUB_TIMING=deadline|usleep,
 * MEMSTUB_MARGIN_NS=N|adaptive, MEMSTUB_REAIM_NS=N|-1 (memstub replay's
 * --reaim; no --slice: it would stay the caller's), MEMSTUB_WORK_MEM_SHARE=S, and
 * MEMSTUB_MEASURE=template writes the
 * replayed trace to the file the measurement naming rule gives
 * (memstub_measure_open in memstub/runtime.h: the template's name for the
 * first measured replay of the process, NAME.2.EXT, NAME.3.EXT for later
 * ones). A standalone stub program's main is runtime/stub_main.c. */
int memstub_stub_call(const struct memstub_stub *s, memstub_error *err);

/* A measurement file template tmpl expanded: %p is pid, %n the stub's name
 * (name, or "stub" when NULL or empty; characters other than letters,
 * digits, '_', '-' and '.' become '_'), %c the measured replay's number in
 * the process (from 1, over every stub, call and thread), %% a '%'. A
 * template with no field is the name itself. *out is malloc'd. 0, -EINVAL
 * (an unknown field, err naming its column) or -ENOMEM. */
int memstub_measure_path(const char *tmpl, const char *name, long pid, int64_t call, char **out,
                         memstub_error *err);

#ifdef __cplusplus
}
#endif
#endif
