/* recorder/protocol.h: what `memstub record` (cli/cmd_record.c) and the
 * preloaded recorder (libmemstub_record.so) agree on: the environment that
 * carries the options into the recorded process, and the churn and summary
 * lines the recorder writes into the trace's metadata for the command to read
 * back. Not installed; header only, so both sides compile the same text. */
#ifndef MEMSTUB_RECORDER_PROTOCOL_H
#define MEMSTUB_RECORDER_PROTOCOL_H

/* ---- environment: command -> recorded process ---- */
#define MS__REC_ENV_OUTPUT "MEMSTUB_RECORD_OUTPUT"        // absolute path of the trace
#define MS__REC_ENV_PID "MEMSTUB_RECORD_PID"              // only this pid records
#define MS__REC_ENV_THREAD "MEMSTUB_RECORD_THREAD"        // "main" or N (the Nth created thread)
#define MS__REC_ENV_HEAP "MEMSTUB_RECORD_HEAP"            // "process" or "thread"
#define MS__REC_ENV_RESOLUTION "MEMSTUB_RECORD_RESOLUTION_NS"
#define MS__REC_ENV_SAMPLE_HZ "MEMSTUB_RECORD_SAMPLE_HZ"  // per second of the thread's CPU time
#define MS__REC_ENV_OCCURRENCE "MEMSTUB_RECORD_OCCURRENCE"  // 0: every occurrence
#define MS__REC_ENV_SIGNAL "MEMSTUB_RECORD_SIGNAL"        // unset: the first free RT signal
#define MS__REC_ENV_TABLE_BITS "MEMSTUB_RECORD_TABLE_BITS"  // log2 of the pointer table's slots
#define MS__REC_ENV_LIB "MEMSTUB_RECORD_LIB"              // the library, for the command only
#define MS__REC_ENV_STATUS "MEMSTUB_RECORD_STATUS"        // absolute path of the status file

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
enum {
  MS__REC_NOTHING_NONE = 0,
  MS__REC_NOTHING_THREAD = 1,      // --thread N: the program created fewer threads
  MS__REC_NOTHING_OCCURRENCE = 2,  // --occurrence N: fewer occurrences (or no region)
  MS__REC_NOTHING_ROWS = 3         // no rows at all
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
#define MS__REC_META_PEAK_STACK "record.peak_stack_bytes"
#define MS__REC_META_STACK_FROM "record.stack_from"
#define MS__REC_META_COST_EVENT "record.cost_ns_per_event"
#define MS__REC_META_EVENTS "record.events"
#define MS__REC_META_COST_SAMPLE "record.cost_ns_per_sample"
// The value of a cost that was not measured (fewer calls than one measured
// call in 1024, or no timer sample).
#define MS__REC_NOT_MEASURED "not measured"
#define MS__REC_META_SAMPLES "record.samples"
#define MS__REC_META_HEAP_SCOPE "record.heap_scope"
#define MS__REC_META_THREAD "record.thread"
// Set when stack sampling by timer was given up or never started: why, in words.
#define MS__REC_META_SAMPLING_OFF "record.sampling_fallback"

#endif
