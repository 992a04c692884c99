/* cli/record.h: what memstub record's files share (private to cli/):
 * the options, the recorder's status file and the salvage of a journal
 * (recorder/protocol.h). */
#ifndef MEMSTUB_CLI_RECORD_H
#define MEMSTUB_CLI_RECORD_H

#include "../recorder/protocol.h"
#include "memstub/trace.h"

typedef struct rec_opts {
  const char *out, *thread, *heap;  // thread: main, all, N or auto (the default: every thread)
  const char *thread_why;  // the option that made the default main (NULL: none)
  char functions[MS__REC_FN_MAX_BYTES];  // --function names, comma-separated, each once ("" when none)
  long long res, hz, occ, sig;
  int quiet;
  int follow;  // --follow-children
  char **prog;
  long long sites;  // --sites: bytes between sampled allocations; 0: off
  int heap_given;   // --heap was given
  long long repeat, reference;  // --repeat N (0: once), --reference N (0: none)
  int calls;                    // --calls: TRACE.calls, the allocation sequence
} rec_opts;

typedef struct rec_status {
  int present;  // the recorder started in the process
  long long finished, signal, written, err, nothing, occurrences, threads;
  long long kids_cpu_ns;  // its waited-for children's CPU time at its end (0: not said)
  char function[512];  // a --function problem, "" when none
} rec_status;

// An empty file beside the trace (the status file, the journal), its path
// into path[PATH_MAX]. 0, or the exit status after printing why.
int ms_record_status_create(const char *abs, char *path);
// The recorder's status file read and removed (st.present 0 when it never wrote it).
rec_status ms_record_status_take(const char *path);
/* What a salvage did (ms_record_salvage). */
enum {
  MS_SALVAGE_WRITTEN = 0,        // the trace is at abs
  MS_SALVAGE_NONE = -1,          // no row in the journal, or the trace cannot be written
  MS_SALVAGE_NO_OCCURRENCE = 1,  // --occurrence N: fewer occurrences before the end (nothing written)
  MS_SALVAGE_NO_REGION = 2,      // --function: no call began a region before the end (nothing written)
  MS_SALVAGE_THREADS = 3         // rows of several threads (every thread recorded): not salvaged
};
/* The trace rebuilt from the journal of a process that died past the
 * recorder's exit path, written to abs; why says how it died. *occurrences
 * gets the region occurrences the journal saw. MS_SALVAGE_*. */
int ms_record_salvage(const rec_opts *o, const char *journal, const char *abs, const char *why,
                      long long *occurrences);
/* The recorded process ended past the recorder's exit path (why says how):
 * its trace salvaged from the journal and a warning, or why there is none
 * (nothing is salvaged when what the options ask for never came: a
 * --function the recorder could not patch or never saw called, an
 * --occurrence beyond the last). -1 when a trace was written (read it back
 * as usual), else the exit status. */
int ms_record_salvage_said(const rec_opts *o, const rec_status *st, const char *journal,
                           const char *abs, const char *why);

/* One recording per output file: an exclusive flock on a file beside the
 * trace's target (".memstub-record-lock.BASE", holding the pid), taken
 * before anything is written and released by ms_record_unlock, which
 * removes it (a killed command's lock is released by the kernel; the file
 * left is reused). 0 with *fd and path[PATH_MAX] set, or the exit status
 * after saying which recording holds it. */
int ms_record_lock(const char *out, const char *abs, int *fd, char *path);
void ms_record_unlock(int fd, const char *path);

/* --follow-children, after the run: each child's trace listed with its
 * peaks (unless o->quiet), salvaged from its journal when it died past the
 * recorder's exit path; the registry and the children's journals
 * (JOURNAL.PID) removed. The number of children that left no trace. */
int ms_record_children_report(const rec_opts *o, const char *abs, const char *registry,
                              const char *journal);

/* --thread all: the trace at abs (named out) checked field by field and
 * summarised on stderr (unless quiet): its rows, and each thread's start,
 * end, peaks, cross-thread frees and joins. 0, or -1 after printing what is
 * wrong with it. */
int ms_record_threads_summary(const char *out, const char *abs, int quiet);

/* --repeat and --reference (record_repeat.c): the recordings (each one run
 * of ms_cmd_record with ms_record_inner set) and the runs without the
 * recorder, alternating; the recording of median duration kept, the others'
 * files deleted, the outside figures written to its metadata
 * (traces/timeline.h), its summary. The exit status. */
int ms_record_repeat(int argc, char **argv, const rec_opts *o);
// Set while ms_record_repeat runs a recording: no summary, no repeat.
extern int ms_record_inner;
// The last run of PROGRAM, from outside: wall time and CPU time (user + sys), ns.
typedef struct rec_run {
  long long wall_ns, cpu_ns;
  // A reference run of a recording of regions: their occurrences, and the
  // span from the first one's begin to the last one's end (wall, and the
  // followed thread's CPU time); -1 when not timed (recorder/times.c).
  long long region_occ, region_wall_ns, region_cpu_ns;
  // Its clock at the calls of one occurrence (MS__TL_REF_CURVE's
  // value, owned), NULL when not timed so.
  char *curve;
  // A recording: the CPU time of the children the recorded process waited
  // for, at its end (the recorder's status file, MS__REC_ST_KIDS_CPU); -1
  // when not known.
  long long kids_cpu_ns;
  // A recording: its trace's rows' CPU time, every thread's summed
  // (MS__TL_ROWS_CPU); -1 when the trace has no cpu_ns column.
  long long rows_cpu_ns;
} rec_run;
extern rec_run ms_record_last;
/* A warning when the children PROGRAM started and waited for, not recorded,
 * had a tenth of run's CPU time (wait4's, which counts them, less the
 * process's own) and 20 ms at least. */
void ms_record_children_warn(const rec_opts *o, const rec_run *run);
// Whether o's recording may cover regions only (--function, --occurrence, the probe API in PROGRAM).
int ms_record_regions(const rec_opts *o);
// The recorder library into lib[PATH_MAX]. 0, or the exit status after saying why not.
int ms_record_lib(char *lib);
/* The recorded trace at abs (named o->out) read back and checked: a warning
 * for what its metadata says may be off (sampling given up, regions that did
 * not scope), and unless o->quiet the summary on stderr: its peaks, the
 * recorder's cost, what the threads left out did (a warning when they did
 * more than a tenth of the process's work), the allocator churn, sites,
 * generations and the next step's commands; a trace of several threads
 * thread by thread (record_threads.c). 0, or the exit status
 * (record_summary.c). */
int ms_record_summarise(const rec_opts *o, const char *abs);
/* ", peak resident R (mapped outside the heap M)" of trace t into buf of n
 * bytes (its metadata's peaks; what `time` and top show of a program that
 * maps memory itself, as python's allocator does), or "" without them. */
const char *ms_record_resident_part(const memstub_trace *t, char *buf, size_t n);

#endif
