/* memstub/compare.h: how closely a replay followed its original trace
 * (docs/compare-and-plot.md).
 *
 * A replayed trace (memstub replay --measure) is a trace v1 with an extra
 * column `point`: the original row each replayed row measures. The comparison
 * aligns the two by that column and reports, over the points measured:
 *   - the time error (replayed time_ns - original time_ns) per point:
 *     percentiles of its absolute value, its signed range, the points late by
 *     more than a threshold, and the same with the constant offset removed;
 *   - the total duration error (between the first and the last point);
 *   - the stack and heap error: largest and mean absolute error, and the share
 *     of points that are exact (within a slack; for heap blocks at or above
 *     glibc's mmap threshold, within a page);
 *   - the same for resident and mapped memory (the rss_bytes and mapped_bytes
 *     columns, when both traces have them), with the p50 and p90 of the
 *     absolute error and both peaks, so an error can be read as a share of
 *     the original's peak.
 * Checks (thresholds such as "p99-us=100,heap-exact=99.5%") are evaluated
 * against a report. */
#ifndef MEMSTUB_COMPARE_H
#define MEMSTUB_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memstub/error.h"
#include "memstub/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct memstub_compare_options {
  int64_t late_ns;         /* a point is late when its error exceeds this; 10000 */
  int64_t stack_slack;     /* stack exact within this many bytes; 16 */
  int64_t heap_slack;      /* heap exact within this many bytes; 16 */
  int64_t page_size;       /* heap slack for mmap'd blocks; 0 = the host's page */
  int64_t mmap_threshold;  /* blocks this large come from mmap; 131072 (glibc) */
  int64_t rss_slack;       /* rss_bytes exact within this many bytes; 65536 (16 pages of 4 KiB:
                              the replay's own stack pages and the allocator's) */
  int64_t mapped_slack;    /* mapped_bytes exact within this many bytes; 0 = the page size */
  /* Accept a replay that measures fewer than half of the original's points
   * (otherwise refused as "not a replay of this original"). */
  int allow_partial;
  /* Judge the replay against ORIGINAL's times as recorded. By default a
   * trace of memstub record with allocator-call columns is judged on the
   * timeline its stub replays: the recorder's cost out of time_ns and cpu_ns,
   * as memstub gen takes it out (by the recorder's own figures, or fitted to
   * reference runs: docs/compare-and-plot.md, "The target timeline"). */
  int recorded_times;
} memstub_compare_options;

/* The defaults above. */
void memstub_compare_options_init(memstub_compare_options *o);

/* The distribution of per-point time errors, in ns. Percentiles are
 * nearest-rank: pN is the smallest value that at least N % of the points do
 * not exceed. */
typedef struct memstub_compare_time {
  int64_t p50_abs, p99_abs, max_abs;  /* of |error| */
  int64_t min, max;                   /* signed error */
  double mean;                        /* signed error */
  size_t late;                        /* points with error > late_ns */
} memstub_compare_time;

/* Stack or heap error (replayed - original bytes) over the compared points. */
typedef struct memstub_compare_mem {
  int64_t max_abs;
  double mean_abs;
  int64_t min, max;   /* signed error */
  size_t exact;       /* points within the slack */
  double exact_share; /* exact / compared, 0..1 */
  size_t paged;       /* heap only: points whose block is at or above the mmap threshold */
  int64_t p50_abs, p90_abs;  /* of |error|, nearest rank */
  int64_t original_peak, replayed_peak;  /* largest value of the column over the compared points */
} memstub_compare_mem;

/* Why a late row was late (docs/compare-and-plot.md, "Late rows by cause"). */
typedef enum memstub_late_cause {
  MEMSTUB_LATE_WAKE = 0,     /* the wait ended after its deadline: the sleep overshot
                                (in a VM this includes the hypervisor waking the vCPU late) */
  MEMSTUB_LATE_WORK = 1,     /* the work took longer than predicted (the cost model; no
                                profile predicts no work) */
  MEMSTUB_LATE_OFF_CPU = 2,  /* the thread was runnable but not running (run-queue wait)
                                for at least half of the lateness: the host was busy */
  MEMSTUB_LATE_UNKNOWN = 3,  /* the replayed trace has no wake_late_ns / work_ns columns */
  MEMSTUB_LATE_BEHIND = 4,   /* it began late: the rows before it ran over their deadlines
                                and the replay had not caught up (no wait to end late) */
  MEMSTUB_LATE_CAUSES = 5,
} memstub_late_cause;

/* The cause of a row late by error_ns (> 0), from the replayed trace's
 * columns: wake_late_ns (its wait ended that long after its deadline),
 * work_excess_ns (its work minus the predicted work: work_ns minus original
 * time_ns minus target_time_ns) and off_cpu_ns (run-queue wait around the
 * row; < 0 when unknown). OFF_CPU when the run-queue wait covers at least
 * half of the error, else WAKE or WORK, whichever is larger (WAKE on a tie).
 * Pure. */
memstub_late_cause memstub_compare_late_cause(int64_t error_ns, int64_t wake_late_ns,
                                              int64_t work_excess_ns, int64_t off_cpu_ns);
/* As memstub_compare_late_cause, with behind_ns: how long after the row's
 * deadline the row before it ended (0 when before: the row could wait). Of
 * its start's lateness (wake_late_ns) that much it inherited and did not
 * oversleep: OFF_CPU as above, else WAKE (wake_late_ns - behind_ns), WORK
 * (work_excess_ns) or BEHIND (behind_ns), whichever is largest (in that
 * order on a tie). A replay that fell behind shows its late rows as
 * BEHIND after the few whose work put it there, not as a sleep that
 * overshot. Pure. */
memstub_late_cause memstub_compare_late_why(int64_t error_ns, int64_t wake_late_ns,
                                            int64_t work_excess_ns, int64_t off_cpu_ns,
                                            int64_t behind_ns);

/* "woke late", "work", "not running", "unknown", "behind": the short names
 * (JSON keys: "wake", "work", "off_cpu", "unknown", "behind" with json set). */
const char *memstub_late_cause_name(memstub_late_cause c, int json);

/* What a row of the original changes (from the row before it; row 0 from
 * zero): its mapped bytes (mapped_bytes), else its heap, else its stack,
 * else only its resident memory (rss_bytes: the original touched pages with
 * no allocator call), else nothing (idle). The kinds a row's work differs
 * by: compare reports lateness per kind (docs/compare-and-plot.md). */
typedef enum memstub_row_kind {
  MEMSTUB_ROW_STACK = 0,
  MEMSTUB_ROW_HEAP = 1,
  MEMSTUB_ROW_MAPPED = 2,
  MEMSTUB_ROW_TOUCH = 3,
  MEMSTUB_ROW_IDLE = 4,
  MEMSTUB_ROW_KINDS = 5,
} memstub_row_kind;

/* The kind of row i of orig (pure; MEMSTUB_ROW_IDLE for a row out of range).
 * A value of -1 (unknown) in mapped_bytes or rss_bytes is no change. */
memstub_row_kind memstub_compare_row_kind(const memstub_trace *orig, size_t i);
/* "stack", "heap", "mapped", "touch", "idle" (also the JSON keys). */
const char *memstub_row_kind_name(memstub_row_kind k);

/* The time error of the compared rows of one kind; late_by_cause as the
 * report's, for these rows. */
typedef struct memstub_compare_kind {
  size_t rows;
  memstub_compare_time time;
  size_t late_by_cause[MEMSTUB_LATE_CAUSES];
} memstub_compare_kind;

/* One series of the work (issue 14; docs/compare-and-plot.md, "Work"):
 * per interval between two compared rows, what the original did and what
 * the replay did. */
typedef struct memstub_compare_series {
  int64_t original_total, replayed_total;  /* over the compared intervals */
  double total_pct;   /* 100 * (replayed - original) / original; 0 when both are 0, +inf when
                         only the original's is */
  int64_t p50_abs, p90_abs;  /* of |replayed - original| per interval, nearest rank */
  size_t intervals;          /* intervals compared */
} memstub_compare_series;

/* The work: CPU time (cpu_ns), allocator calls (calls_*: all, and per kind
 * of memstub/work.h: malloc, calloc, realloc, free, memalign) and the bytes
 * they moved (churn_bytes); and the minor page faults (minor_faults, each
 * side's thread's). cpu_unknown, calls_unknown, faults_unknown: why not
 * compared (owned), NULL when compared; their checks are skipped. */
#define MEMSTUB_COMPARE_CALL_KINDS 5
typedef struct memstub_compare_work {
  char *cpu_unknown, *calls_unknown;
  memstub_compare_series cpu, calls, churn, kind[MEMSTUB_COMPARE_CALL_KINDS];
  /* The allocating calls (malloc, calloc, realloc, memalign: every kind but
   * free), which a stub keeps: its block's realloc stands for one recorded
   * call, and its frees are its own (docs/compare-and-plot.md, "Differences
   * by design"). */
  memstub_compare_series allocs;
  /* Of the replayed allocating calls, the stub's heap block resizes that
   * stand for a recorded free (REPLAYED's metadata block_frees, memstub/
   * work.h): allocs.replayed_total leaves them out, as the frees they stand
   * for (a stub shrinks its one block with realloc where the component
   * freed a block); 0 when REPLAYED does not say. */
  int64_t block_frees;
  /* Minor faults per interval (the cumulative minor_faults column of
   * memstub record and of a measured replay): what the kernel did for the
   * pages, which the resident curve alone does not say (xz -T2's threads
   * fault 7.5k pages twice, read before written; a stub that only writes
   * them faults once). */
  char *faults_unknown;
  memstub_compare_series faults;
} memstub_compare_work;

/* The what-if scales a replay was made with (memstub gen and replay
 * --time-scale ... --churn-scale; docs/formats.md, "What-if transforms"), as
 * REPLAYED's `transforms` metadata names them: all 1.0 for a stub as
 * recorded. */
typedef struct memstub_compare_scales {
  double time, heap, stack, rss, mapped, cpu, churn;
} memstub_compare_scales;

/* The figures of the before and after view (docs/compare-and-plot.md, "A
 * what-if: before and after"), over the compared points: before is
 * ORIGINAL's on its stub's timeline (without the scales), after REPLAYED's.
 * CALLS counts the allocating calls (every kind but free). */
typedef enum memstub_compare_figure {
  MEMSTUB_FIGURE_HEAP_PEAK = 0,
  MEMSTUB_FIGURE_RSS_PEAK = 1,
  MEMSTUB_FIGURE_STACK_PEAK = 2,
  MEMSTUB_FIGURE_DURATION = 3,
  MEMSTUB_FIGURE_CPU = 4,
  MEMSTUB_FIGURE_CALLS = 5,
  MEMSTUB_FIGURE_CHURN = 6,
  MEMSTUB_FIGURES = 7,
} memstub_compare_figure;

typedef struct memstub_compare_change {
  int known;              /* both traces have it (and ORIGINAL does not say it is unknown) */
  int64_t before, after;  /* bytes, ns or calls */
} memstub_compare_change;

/* "peak heap", "peak resident", "peak stack", "duration", "CPU", "allocator
 * calls", "churn"; with json the keys: "peak_heap_bytes", "peak_rss_bytes",
 * "peak_stack_bytes", "duration_ns", "cpu_ns", "calls", "churn_bytes". */
const char *memstub_compare_figure_name(memstub_compare_figure f, int json);

/* "malloc", "calloc", "realloc", "free", "memalign" (k < MEMSTUB_COMPARE_CALL_KINDS). */
const char *memstub_compare_call_kind_name(int k);

typedef struct memstub_compare_report {
  char *original_name, *replayed_name;  /* as given (file names, or labels) */
  size_t original_rows, replayed_rows;
  /* match[i]: the replayed row that measures original row i (the last one
   * when several do), or -1 when none does. [original_rows] */
  int64_t *match;
  size_t compared;      /* original rows with a match */
  size_t missing;       /* original rows without one */
  size_t repeated;      /* replayed rows beyond the first for the same point */
  size_t out_of_order;  /* replayed rows whose point is below the previous row's */
  int64_t first_missing;   /* lowest missing point, -1 if none */
  memstub_compare_time time;      /* raw error */
  int64_t offset_ns;              /* the median signed error */
  memstub_compare_time adjusted;  /* error - offset_ns */
  struct {
    int64_t first_point, last_point;  /* lowest and highest compared point */
    int64_t original_ns, replayed_ns; /* last - first, in each trace */
    int64_t error_ns;                 /* replayed_ns - off_cpu_ns - original_ns */
    double error_pct;                 /* 100 * error_ns / original_ns (+-inf if original_ns is 0) */
    /* The replay's run-queue wait (its off_cpu_ns) left out of the error, as
     * the target left ORIGINAL's out (timeline.runq_ns); 0 when not. */
    int64_t off_cpu_ns;
  } duration;
  memstub_compare_mem stack, heap;
  /* ORIGINAL's metadata says the column was not measured (`# stack: unknown
   * (why)...`, docs/formats.md): that value, owned by the report; NULL when
   * the column is known. An unknown column is not compared (its
   * memstub_compare_mem stays 0) and its checks are skipped. */
  char *stack_unknown, *heap_unknown;
  /* heap_unknown is REPLAYED's (`# heap: unknown (heap not measured...)`):
   * its replay could not measure the heap (an allocator mallinfo2 does not
   * see, as AddressSanitizer's), and ORIGINAL's heap is known. */
  int heap_unknown_replayed;
  /* Resident (rss_bytes) and mapped (mapped_bytes) memory. Unknown (not
   * compared, their checks skipped) when either trace lacks the column or
   * ORIGINAL's metadata says `rss: unknown...` / `mapped: unknown...`: *_unknown
   * says why (owned), NULL when known. */
  memstub_compare_mem rss, mapped;
  char *rss_unknown, *mapped_unknown;
  memstub_compare_options options;  /* as used (page_size resolved) */
  /* Late points (error > late_ns) by cause. causes_known: REPLAYED has
   * wake_late_ns and work_ns (memstub replay --measure); off_cpu_known: and
   * off_cpu_ns. Without them every late point is MEMSTUB_LATE_UNKNOWN. */
  struct {
    int causes_known, off_cpu_known;
    size_t rows[MEMSTUB_LATE_CAUSES];    /* late points of each cause */
    int64_t max_ns[MEMSTUB_LATE_CAUSES]; /* their largest error */
  } late_by_cause;
  /* The time error without the points the host delayed (cause OFF_CPU): the
   * stub's own error on a quiet host, as far as the replay can tell. */
  size_t host_rows;                /* points left out (late, cause OFF_CPU) */
  memstub_compare_time stub_time;  /* over the compared points minus those */
  /* From REPLAYED's metadata (memstub replay --measure): the replay thread's
   * CPU time, its run-queue wait and the replay's duration, ns; -1 when not
   * given. */
  int64_t replay_cpu_ns, replay_off_cpu_ns, replay_duration_ns;
  /* The time error by kind of row (memstub_row_kind). */
  memstub_compare_kind by_kind[MEMSTUB_ROW_KINDS];
  /* The work per interval (compare/work.c). */
  memstub_compare_work work;
  /* The timeline ORIGINAL's times and cpu_ns were judged on (options'
   * recorded_times): the stub's target, with the recorder's cost out, or as
   * recorded. duration.original_ns is on it. */
  struct {
    int changed;         /* 1: the recorder's cost out (as memstub gen does) */
    int fitted;          /* 1: fitted to reference runs (memstub record --reference) */
    char *summary;       /* what was done, one line (owned); NULL when not changed */
    int64_t recorded_ns; /* ORIGINAL's duration over the compared points as recorded */
    int64_t reference_runs;                      /* 0: none in ORIGINAL's metadata */
    int64_t reference_wall_ns, reference_cpu_ns; /* their medians; -1 when not given */
    /* ORIGINAL's waiting for a CPU (its run_delay_ns) the target left out:
     * the replay's machine makes its own (docs/recording.md); 0 none. */
    int64_t runq_ns;
  } timeline;
  /* REPLAYED is a what-if (its `transforms` name a scale other than 1): it is
   * judged against ORIGINAL with the same scales applied as memstub gen
   * applies them (the errors above, the checks), and fig holds the figures
   * before and after. fig is filled for every comparison. */
  struct {
    int is;
    memstub_compare_scales scales;
    memstub_compare_change fig[MEMSTUB_FIGURES];
  } whatif;
  /* REPLAYED's stub was made with a calibration profile (its `calibration`
   * metadata names one); without one, its stack carries the replay's own
   * bytes by design and the verdict does not hold it to a goal. */
  int calibrated;
  /* Compared rows of ORIGINAL whose heap changed from the row before (with
   * a what-if's scales: none under heap x0): each is a resize (a realloc) of
   * the stub's one heap block. */
  size_t heap_rows;
} memstub_compare_report;

/* Compare a replayed trace with its original (both in memory). names are
 * used in the report and in messages ("row N" positions). On success *out
 * owns a new report (free with memstub_compare_free). Fails with -EINVAL when
 * repl has no `point` column, a point is outside the original, or the replay
 * measures fewer than half of the original's points (unless allow_partial);
 * -ENOMEM. *out is NULL on failure. o may be NULL for the defaults. */
int memstub_compare_traces(const memstub_trace *orig, const char *orig_name,
                           const memstub_trace *repl, const char *repl_name,
                           const memstub_compare_options *o, memstub_compare_report **out,
                           memstub_error *err);

/* Read both files ("-" for standard input, at most one of them) and compare
 * them. Errors name "file:line:column" for bad input, including a point out of
 * range and a missing `point` column; -EINVAL for a trace with threads (a
 * `thread` column: memstub_compare_threads_traces compares those); -errno
 * when a file cannot be read. */
int memstub_compare_files(const char *orig_path, const char *repl_path,
                          const memstub_compare_options *o, memstub_compare_report **out,
                          memstub_error *err);

void memstub_compare_free(memstub_compare_report *r);

/* ORIGINAL on the timeline its stub replays (docs/compare-and-plot.md, "The
 * target timeline"): a copy of orig whose time_ns and cpu_ns have the
 * recorder's cost out, as memstub gen takes it out, into *target, and what
 * was done, one line, into *summary (malloc'd; summary may be NULL); both
 * NULL when orig's own times are its stub's (not a trace of memstub record
 * with allocator-call columns). 0, -EINVAL (a bad metadata value or work
 * column: err says which) or -ENOMEM. */
int memstub_compare_target(const memstub_trace *orig, memstub_trace **target, char **summary,
                           memstub_error *err);

/* ---- checks ------------------------------------------------------------ */

typedef enum memstub_compare_check_dir {
  MEMSTUB_COMPARE_AT_MOST,  /* passes when value <= limit */
  MEMSTUB_COMPARE_AT_LEAST, /* passes when value >= limit */
} memstub_compare_check_dir;

typedef struct memstub_compare_check {
  char spec[64];    /* "p99-us=100" as written (normalised: no blanks) */
  char key[24];     /* "p99-us" */
  double limit;     /* in the key's unit (us, %, bytes, points) */
  memstub_compare_check_dir dir;
  const char *unit; /* "ns", "us", "ms", "s", "%", "bytes", "points" */
  const char *what; /* what is measured, for messages */
  /* Filled by memstub_compare_checks_run: */
  double value;     /* in the key's unit (NAN when skipped) */
  int pass;
  /* Not judged: a stack, heap, rss or mapped check whose column is unknown
   * (report's stack_unknown, heap_unknown, rss_unknown, mapped_unknown), a
   * CPU, faults or calls check whose series is (work.cpu_unknown, ...), or a
   * check of a thread the comparison has not (memstub_compare_check_skip_why
   * says which). Neither passed nor failed: pass is 0, and it is not counted
   * as failed. */
  int skipped;
  /* "tN.KEY=VALUE": the check is about thread N of a comparison of traces
   * with threads (memstub_compare_threads_*); -1: every thread (or the one
   * thread of a single-thread comparison, where N > 0 is skipped). */
  int64_t thread;
} memstub_compare_check;

typedef struct memstub_compare_checks {
  size_t n;
  memstub_compare_check *c;
} memstub_compare_checks;

/* An empty list; NULL when out of memory. */
memstub_compare_checks *memstub_compare_checks_create(void);
void memstub_compare_checks_free(memstub_compare_checks *cs);

/* Parse "KEY=VALUE[,KEY=VALUE...]" and append the checks. Keys:
 *   total-ns|us|ms|s, total-pct      |duration error| at most
 *   [adj-]p50|p99|max-ns|us|ms|s     |time error| percentile at most
 *   [adj-]late                       late points at most (N, or P% of compared)
 *   stack-exact, heap-exact          exact share at least (P%, or a fraction 0..1)
 *   stack-max, heap-max, stack-mean, heap-mean   |error| in bytes at most
 *   rss-exact, mapped-exact          exact share at least (as stack-exact)
 *   rss-max, mapped-max, rss-mean, mapped-mean   |error| in bytes at most
 *   rss-p90, mapped-p90              p90 of |error| at most, % of ORIGINAL's peak
 *   rss-peak, mapped-peak            |replayed peak - original peak| at most, % of
 *                                    ORIGINAL's peak
 *   cpu-total-pct, churn-total-pct   |total error| of the replay's CPU time, churn bytes,
 *   calls-total-pct, calls-KIND-pct  calls (all, or of KIND: malloc, calloc, realloc,
 *                                    free, memalign) at most, % of ORIGINAL's total
 *   calls-alloc-pct                  the same for the allocating calls (all but free)
 *   cpu-p90-us|ms|ns|s               p90 of |CPU time error| per interval at most
 *   calls-p90                        p90 of |calls error| per interval at most (calls)
 *   missing, repeated                points at most
 *   total-heap-max                   |error| of the process's total heap in bytes at most
 *                                    (traces with threads: the sum of each thread's
 *                                    latest; else heap-max)
 * ("adj-" checks the view with the constant offset removed; a "tN." prefix, as
 * in t2.p50-us=2, limits a check to thread N). 0, or -EINVAL
 * with err saying which item is wrong, or -ENOMEM. */
int memstub_compare_checks_parse(memstub_compare_checks *cs, const char *spec, memstub_error *err);

/* Evaluate every check against r (filling value, pass and skipped); returns
 * how many failed (skipped checks are not). */
size_t memstub_compare_checks_run(memstub_compare_checks *cs, const memstub_compare_report *r);

/* Why memstub_compare_checks_run skipped c on r: the why of the column it
 * judges ("unknown (ORIGINAL has no cpu_ns column)", the report's
 * stack_unknown, ..., work.cpu_unknown, ...), or that it names a thread N > 0
 * of this single-thread comparison; NULL when c was not skipped. */
const char *memstub_compare_check_skip_why(const memstub_compare_check *c,
                                           const memstub_compare_report *r);

/* Why c's value, judged on r, is no number: a relative error of a total
 * ORIGINAL (a what-if's target) has none of, as "undefined, the target has
 * none: REPLAYED 3 calls" (the check fails: any difference from nothing is
 * beyond a limit in %), into buf; NULL when the value is a number or c was
 * skipped. */
const char *memstub_compare_check_undefined(const memstub_compare_check *c,
                                            const memstub_compare_report *r, char *buf,
                                            size_t cap);

/* The goals a comparison is held to when no check is given (the verdict;
 * docs/compare-and-plot.md, "The verdict"), appended to cs: heap-exact=99%,
 * total-pct=1, rss-peak=5%, mapped-peak=5%, cpu-total-pct=5,
 * calls-alloc-pct=1, and stack-exact=99% when r->calibrated (without a
 * profile the stack carries the replay's own bytes by design). 0, or
 * -ENOMEM. */
int memstub_compare_goals(memstub_compare_checks *cs, const memstub_compare_report *r,
                          memstub_error *err);

/* ---- output ------------------------------------------------------------ */

/* A human-readable report: for a what-if first its before and after table;
 * the errors; the differences by design; the checks' outcome (cs may be
 * NULL); and a one-line verdict held to cs's checks when given, else to the
 * goals of memstub_compare_goals. 0, -EIO or -ENOMEM. */
int memstub_compare_write_text(const memstub_compare_report *r, const memstub_compare_checks *cs,
                               FILE *f);

/* The report as one JSON object (keys in docs/compare-and-plot.md), with the
 * checks' outcome when cs is given (run first), the before and after
 * figures, the differences by design and the verdict. 0, -EIO or -ENOMEM. */
int memstub_compare_write_json(const memstub_compare_report *r, const memstub_compare_checks *cs,
                               FILE *f);

/* ---- traces with threads (docs/formats.md, "Threads") --------------------
 *
 * ORIGINAL with a `thread` column, REPLAYED from memstub replay --measure of
 * it (a `thread` column too): each thread's rows are compared as a trace of
 * their own, and the process total heap (the sum of each thread's latest
 * heap_bytes) at every row of REPLAYED with the original's at the rows
 * measured. */
typedef struct memstub_compare_threads_report {
  int64_t nthreads;
  memstub_compare_report **thread;  // [nthreads]
  size_t total_rows;                // rows of REPLAYED the total was compared at
  int64_t total_heap_max;           // largest |replayed total - original total|, bytes
  size_t total_heap_exact;          // rows within heap_slack x threads (pages x threads when
                                    //   a thread's block is mmapped)
} memstub_compare_threads_report;

/* Compare traces with threads (in memory). -EINVAL when ORIGINAL has no
 * `thread` column, REPLAYED's threads differ from ORIGINAL's, or a thread's
 * comparison fails (the thread named); -ENOMEM. */
int memstub_compare_threads_traces(const memstub_trace *orig, const char *orig_name,
                                   const memstub_trace *repl, const char *repl_name,
                                   const memstub_compare_options *o,
                                   memstub_compare_threads_report **out, memstub_error *err);
void memstub_compare_threads_free(memstub_compare_threads_report *r);
/* Evaluate the checks: a "tN." check against thread N, total-heap-max against
 * the total, any other against every thread (value: the worst thread's; it
 * fails when any thread fails). Returns how many failed. */
size_t memstub_compare_threads_checks_run(memstub_compare_checks *cs,
                                          const memstub_compare_threads_report *r);
// Per thread, the text report, then the total. 0 or -EIO.
int memstub_compare_threads_write_text(const memstub_compare_threads_report *r,
                                       const memstub_compare_checks *cs, FILE *f);
/* {"threads": [thread 0's report, ...], "total": {"rows", "heap_max_bytes",
 * "heap_exact_pct"}, "checks": [...]}. 0 or -EIO. */
int memstub_compare_threads_write_json(const memstub_compare_threads_report *r,
                                       const memstub_compare_checks *cs, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
