/* recorder/protocol.h: what `memstub record` (cli/cmd_record.c) and the
 * preloaded recorder (libmemstub_record.so) agree on: the environment that
 * carries the options into the recorded process, and the churn and summary
 * lines the recorder writes into the trace's metadata for the command to read
 * back. Not installed; header only, so both sides compile the same text. */
#ifndef MEMSTUB_RECORDER_PROTOCOL_H
#define MEMSTUB_RECORDER_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

/* ---- environment: command -> recorded process ---- */
#define MS__REC_ENV_OUTPUT "MEMSTUB_RECORD_OUTPUT"        // absolute path of the trace
#define MS__REC_ENV_PARENT "MEMSTUB_RECORD_PARENT"        // only a child of this pid records
// CLOCK_MONOTONIC ns when `memstub record` started the program (its child
// only): what ran before the recorder did (record.start_wall_ns).
#define MS__REC_ENV_SPAWN_NS "MEMSTUB_RECORD_SPAWN_NS"
// The live-block table's bytes at most: beyond, the recording fails (as
// out of memory) rather than lose a block. Unset: no limit.
#define MS__REC_ENV_TABLE_MAX "MEMSTUB_RECORD_TABLE_MAX_BYTES"
#define MS__REC_ENV_THREAD "MEMSTUB_RECORD_THREAD"        // "main" or N (the Nth created thread)
#define MS__REC_ENV_HEAP "MEMSTUB_RECORD_HEAP"            // "process" or "thread"
#define MS__REC_ENV_RESOLUTION "MEMSTUB_RECORD_RESOLUTION_NS"
#define MS__REC_ENV_SAMPLE_HZ "MEMSTUB_RECORD_SAMPLE_HZ"  // per second of the thread's CPU time
#define MS__REC_ENV_OCCURRENCE "MEMSTUB_RECORD_OCCURRENCE"  // 0: every occurrence
// "0": no watcher (recorder/watch.c) for threads that block the sampling signal.
#define MS__REC_ENV_WATCH "MEMSTUB_RECORD_WATCH"
#define MS__REC_ENV_SIGNAL "MEMSTUB_RECORD_SIGNAL"        // unset: the first free RT signal
#define MS__REC_ENV_LIB "MEMSTUB_RECORD_LIB"              // the library, for the command only
#define MS__REC_ENV_STATUS "MEMSTUB_RECORD_STATUS"        // absolute path of the status file
#define MS__REC_ENV_JOURNAL "MEMSTUB_RECORD_JOURNAL"      // absolute path of the row journal
/* --follow-children: the registry, where each process below the root adds
 * "pid<TAB>ppid<TAB>command<TAB>trace path\n" when it starts recording
 * (recorder/follow.c); unset: only the root records. */
#define MS__REC_ENV_FOLLOW "MEMSTUB_RECORD_FOLLOW"
// --function: the names, separated by commas (recorder/function.c), at
// most MS__REC_FN_MAX_NAMES names in MS__REC_FN_MAX_BYTES - 1 bytes in all.
#define MS__REC_ENV_FUNCTIONS "MEMSTUB_RECORD_FUNCTIONS"
#define MS__REC_FN_MAX_NAMES 16
#define MS__REC_FN_MAX_BYTES 16384
#define MS__REC_ENV_SITES "MEMSTUB_RECORD_SITES"  // bytes between sampled allocations (--sites)
#define MS__REC_ENV_CALLS "MEMSTUB_RECORD_CALLS"  // "1": the allocation sequence (--calls)
/* Absolute path: a reference run (--reference with regions), not a recording:
 * the allocator calls pass through and the regions the recording covers are
 * timed into this file (recorder/times.c): "occurrences N", "span_wall_ns N",
 * "span_cpu_ns N", a line each; with one occurrence timed, "calls N" and
 * "curve STRIDE W0 W1 ...", the clock at its calls. */
#define MS__REC_ENV_TIMES "MEMSTUB_RECORD_TIMES"
/* "1" with MS__REC_ENV_TIMES: the whole run is the one occurrence, from the
 * recorder's start to its end on the main thread (a reference run of a
 * whole-run recording, for the clock at its calls). */
#define MS__REC_ENV_TIMES_WHOLE "MEMSTUB_RECORD_TIMES_WHOLE"

/* ---- rows, chunks and the journal: recorder -> command ----
 * Each thread appends rows to chunks of MS__REC_CHUNK_ROWS. With
 * MS__REC_ENV_JOURNAL set, the chunks and the threads' states are pages of
 * that file (MAP_SHARED, blocks reserved with fallocate so that a full disk
 * never faults), after a head page, so that what was recorded survives a
 * SIGKILL and the command can salvage it; without it, beyond
 * MS__REC_JOURNAL_MAX, or when the file cannot grow, they come from
 * anonymous memory. */
typedef struct ms__rec_row {
  int64_t t;      // raw clock units until the merge, then ns
  int64_t stack;  // bytes, -1 when the row comes from another thread
  int64_t heap;   // bytes
  int64_t tag;    // probe region occurrence (0: outside regions), | MS__REC_ROW_EXACT
} ms__rec_row;

/* A row that is a bucket boundary, never coalesced with its neighbours: the
 * program's first state, a region's begin and end, the recorded thread's
 * end. Or'ed into tag, taken off at the merge (recorder/sink.c). */
#define MS__REC_ROW_EXACT ((int64_t)1 << 62)

/* A row's resident and mapped memory (docs/recording.md): absolute values
 * (the trace makes rss and faults relative to the component's start); faults
 * are -1 in rows of threads other than the recorded one. Kept beside the
 * rows, not in them, so that a salvage that knows only ms__rec_row still reads
 * the chunks. */
typedef struct ms__rec_mem {
  int64_t rss;     // RssAnon of the process, bytes (-1: unknown)
  int64_t mapped;  // anonymous memory mapped outside the malloc family, bytes
  int64_t minflt, majflt;  // the recorded thread's page faults so far
  /* The memory sample rss and mapped are from (ms__rec_mem_ver when read;
   * -1 unknown): --thread all's merge gives a row whose reading is older
   * than one an earlier row of another thread showed the newer one. */
  int64_t ver;
} ms__rec_mem;

/* --thread all's merge, rows in time order: newest is the newest memory
 * sample a row showed so far (ver -1: none yet). A row whose reading is
 * older shows newest's rss and mapped; a newer one becomes newest. A row
 * without a reading (rss or ver -1) is left as it is. */
static inline void ms__rec_mem_newest(ms__rec_mem *m, ms__rec_mem *newest) {
  if (m->rss < 0 || m->ver < 0) return;
  if (m->ver < newest->ver) {
    m->rss = newest->rss;
    m->mapped = newest->mapped;
  } else {
    *newest = *m;
  }
}

/* A row's work (docs/formats.md, "Work columns"): the recorded thread's CPU
 * time at the row (absolute ns, -1 in rows of other threads), and the
 * allocator calls since the thread's previous row by kind and size class
 * (memstub/work.h) with the bytes they moved. Beside the rows too. */
#define MS__REC_WORK_CALLS 20
typedef struct ms__rec_work {
  int64_t cpu;
  int64_t rq;  // the thread's run-queue wait so far (schedstat), ns; -1 unknown
  uint64_t bytes;
  uint32_t n[MS__REC_WORK_CALLS];
} ms__rec_work;

#define MS__REC_CHUNK_ROWS 8192
#define MS__REC_JOURNAL_MAGIC 0x6c6e726a63657273ULL  // "srecjrnl"
#define MS__REC_JOURNAL_HEAD 4096                     // bytes before the first chunk
#define MS__REC_JOURNAL_MAX ((uint64_t)512 << 20)  // at most; anonymous memory beyond
/* Journal entries (chunks and thread states) are whole pages, and start with
 * magic, thread_no and their size in bytes. */
typedef struct ms__rec_chunk {
  uint64_t magic;      // MS__REC_JOURNAL_MAGIC in a journal
  uint64_t thread_no;  // the thread's registration order (1, 2, ...)
  uint64_t bytes;      // the entry's size in the journal
  struct ms__rec_chunk *next;
  size_t n;  // committed rows (release-stored)
  ms__rec_row rows[MS__REC_CHUNK_ROWS];
  ms__rec_mem mem[MS__REC_CHUNK_ROWS];  // each row's memory (the optional columns)
  ms__rec_work work[MS__REC_CHUNK_ROWS];  // each row's CPU time and allocator calls
} ms__rec_chunk;

/* A thread's open coalescing bucket (recorder/sink.c), at the head of its
 * state, which is a journal slot too (magic MS__REC_JOURNAL_TSTATE): the
 * salvage adds it as rows, maxima at t0, then the last state. */
#define MS__REC_JOURNAL_TSTATE 0x7473726a63657273ULL  // "srecjrst"
typedef struct ms__rec_bucket {
  int64_t active;
  int64_t end, t0, maxs, maxh, tag;
  int64_t lt, ls, lh;
  ms__rec_mem maxm;  // peaks of rss and mapped (faults: the last)
  ms__rec_mem lm;    // the last state's memory
  int64_t cpu0;      // the recorded thread's CPU time at t0 (-1: another thread)
  int64_t rq0;       // its run-queue wait read with it (-1: another thread)
} ms__rec_bucket;
typedef struct ms__rec_thead {
  uint64_t magic;  // MS__REC_JOURNAL_TSTATE in a journal
  uint64_t thread_no;
  uint64_t bytes;
  ms__rec_bucket b;
} ms__rec_thead;

typedef struct ms__rec_journal_head {
  uint64_t magic;       // MS__REC_JOURNAL_MAGIC once the head is complete
  int64_t use_tsc;      // times are cycle counts (else CLOCK_MONOTONIC ns)
  double raw_per_ns;    // the start-up estimate of the cycle counter's rate
  int64_t origin_raw;   // the recorded thread's start
  int64_t res_ns;       // --resolution
  int64_t occurrence;   // --occurrence (0: all)
  int64_t origin_ns;    // CLOCK_MONOTONIC at origin_raw
} ms__rec_journal_head;

/* The signals whose default action ends the process and on which the
 * recorder writes the trace from a handler when the program left that
 * default (recorder/state.c); the command tells a death by one of them
 * that left no trace (a handler of the program's own, a stack overflow)
 * from one by a signal not caught (a real-time signal: the sampler's are
 * among them). Used where <signal.h> is included. */
#define MS__REC_FATAL_SIGNALS                                                          \
  SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXCPU, \
      SIGXFSZ, SIGSYS, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGPROF, SIGIO,  \
      SIGPWR, SIGSTKFLT

/* ---- the status file: recorder -> command ----
 * Lines "key=N". The recorder writes MS__REC_ST_STARTED=1 when it starts
 * recording (so a missing file means it never loaded: a static or setuid
 * program), and rewrites the whole file when it writes the trace, or
 * decides not to (write(2) only: it may run in a signal handler). A file
 * with only "started" means the process ended without the recorder's exit
 * path (SIGKILL, a handler of its own, a stack overflow). */
#define MS__REC_ST_STARTED "started"
#define MS__REC_ST_FINISHED "finished"     // how: 1 exit, 2 _exit, 3 fatal signal
#define MS__REC_ST_SIGNAL "signal"         // the fatal signal
#define MS__REC_ST_WRITTEN "written"       // 1: the trace was written
#define MS__REC_ST_ERRNO "errno"           // why writing it failed
#define MS__REC_ST_WHY "nothing"           // MS__REC_NOTHING_*: why there is nothing to write
#define MS__REC_ST_OCCURRENCES "occurrences"  // region occurrences of the recorded thread
#define MS__REC_ST_THREADS "threads_created"  // threads created through pthread_create
/* The CPU time of the children the process waited for (RUSAGE_CHILDREN,
 * user + system, ns) when it ends, its trace written: memstub record says
 * when they did much of the run's work (cli/cmd_record.c). Counted where it
 * happened, not as wait4's CPU time less the process's own at its end,
 * which also held whatever the process ran after the recorder's end. */
#define MS__REC_ST_KIDS_CPU "children_cpu_ns"
// Text to the end of the line: a --function problem (a name not found or not
// patchable), written as soon as the recorder knows it, before the end too
// (so that a salvage after SIGKILL can say it; cli/record_salvage.c).
#define MS__REC_ST_FUNCTION "function"
enum {
  MS__REC_NOTHING_NONE = 0,
  MS__REC_NOTHING_THREAD = 1,      // --thread N: the program created fewer threads
  MS__REC_NOTHING_OCCURRENCE = 2,  // --occurrence N: fewer occurrences (or no region)
  MS__REC_NOTHING_ROWS = 3,        // no rows at all
  MS__REC_NOTHING_FUNCTION = 4,    // --function: a name not found or not patchable
  MS__REC_NOTHING_UNCALLED = 5,    // --function: never called on the recorded thread
  MS__REC_NOTHING_MEMORY = 6       // no memory for the live-block tables: the trace would miss blocks
};

// The English ordinal suffix of n: "st" (1st, 21st), "nd", "rd", "th" (11th-13th).
static inline const char *ms__rec_ordinal(long n) {
  long t = n % 100, u = n % 10;
  if (t >= 11 && t <= 13) return "th";
  return u == 1 ? "st" : u == 2 ? "nd" : u == 3 ? "rd" : "th";
}

#define MS__REC_DEFAULT_RESOLUTION_NS 100000
#define MS__REC_DEFAULT_SAMPLE_HZ 1000
#define MS__REC_MAX_SAMPLE_HZ 100000

/* ---- the allocator functions, in the recorder's order, and their churn
 * weights (Kudrjavets et al. 2022: malloc 1, free 1, calloc 2, realloc 3;
 * the aligned allocators weigh as malloc, reallocarray as realloc) ---- */
#define MS__REC_FN_NAMES                                                                  \
  "malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc", "memalign", \
      "valloc", "pvalloc", "reallocarray"
#define MS__REC_FN_WEIGHTS 1, 2, 3, 1, 1, 1, 1, 1, 1, 3

/* ---- metadata: recorder -> command ----
 * churn.program and churn.region.NAME hold MS__REC_CHURN_FMT (with
 * "occurrences=K " in front for a region); churn.program.FN and
 * churn.region.NAME.FN one function's share, MS__REC_CHURN_FMT too. */
#define MS__REC_CHURN_PREFIX "churn."
#define MS__REC_CHURN_PROGRAM "churn.program"
#define MS__REC_CHURN_REGION "churn.region."
#define MS__REC_CHURN_WEIGHTS_KEY "churn.weights"
#define MS__REC_CHURN_FMT "calls=%llu bytes=%llu churn=%s"
#define MS__REC_CHURN_OCC_FMT "occurrences=%llu " MS__REC_CHURN_FMT

#define MS__REC_META_PEAK_HEAP "record.peak_heap_bytes"
#define MS__REC_META_PEAK_RSS "record.peak_rss_bytes"        // RssAnon less the recorder's tables
#define MS__REC_META_PEAK_MAPPED "record.peak_mapped_bytes"
#define MS__REC_META_PEAK_STACK "record.peak_stack_bytes"
#define MS__REC_META_STACK_FROM "record.stack_from"
#define MS__REC_META_COST_EVENT "record.cost_ns_per_event"
#define MS__REC_META_COST_EVENT_REGIONS "record.cost_ns_per_event_in_regions"  // its events in probe regions
#define MS__REC_META_EVENTS "record.events"
#define MS__REC_META_COST_SAMPLE "record.cost_ns_per_sample"
// The value of a cost that was not measured (fewer calls than one measured
// call in 1024, or no timer sample).
#define MS__REC_NOT_MEASURED "not measured"
#define MS__REC_META_SAMPLES "record.samples"
#define MS__REC_META_HEAP_SCOPE "record.heap_scope"
#define MS__REC_META_THREAD "record.thread"
#define MS__REC_META_ROWS_PEAK_HEAP "record.peak_heap_of_rows"  // several threads: the rows' sum
// Several threads: each that blocked the sampling signal, "THR:NS ..." (its wall time blocked).
#define MS__REC_META_SAMPLE_BLOCKED "record.sample_blocked_ns"
#define MS__REC_META_REGIONS_NOT_SCOPING "record.regions_not_scoping"  // every thread recorded: regions only mark
#define MS__REC_META_REGIONS_OTHER_THREADS "record.regions_other_threads"  // every thread recorded: regions outside TRACE.generations
#define MS__REC_META_OTHER_THREADS "record.other_threads"  // a narrowed scope: what the others did
// Readings of the stack pointer off the recorded thread's own stack (a
// stack of the code's own: coroutines, sigaltstack, a stub's): how many, in words.
#define MS__REC_META_STACK_OFF "record.stack_off_thread"
// Set when stack sampling by timer was given up or never started: why, in words.
#define MS__REC_META_SAMPLING_OFF "record.sampling_fallback"

#endif
