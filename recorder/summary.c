/* recorder/summary.c: the trace's metadata: what was recorded, how, at what
 * cost, and the churn (recorder/protocol.h names what the command reads). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "table.h"

kv ms__rec_meta_kv[MAX_META];
int ms__rec_nmeta;

void ms__rec_meta(const char *key, const char *fmt, ...) {
  if (ms__rec_nmeta == MAX_META) return;
  kv *m = &ms__rec_meta_kv[ms__rec_nmeta++];
  size_t i = 0;
  for (; key[i] && i < sizeof m->key - 1; i++) {
    char c = key[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '.' || c == '-';
    m->key[i] = ok ? c : '_';
  }
  m->key[i] = '\0';
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->val, sizeof m->val, fmt, ap);
  va_end(ap);
  for (char *c = m->val; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
}

// Tenths, without floating point formatting.
void ms__rec_fmt_x10(char *buf, size_t n, double v) {
  long long x = (long long)(v * 10.0 + (v >= 0 ? 0.5 : -0.5));
  snprintf(buf, n, "%s%lld.%lld", x < 0 ? "-" : "", (x < 0 ? -x : x) / 10, (x < 0 ? -x : x) % 10);
}


/* What the threads the recording left out did (the narrowed scope of the
 * default or --thread N): their CPU time (the process's less the recorded
 * thread's), allocator calls and bytes allocated, each with its share, so
 * that the command can warn when they did much of the work. */
static void left_out_meta(void) {
  const tstate *rec = ms__rec.rec;
  uint64_t calls = 0, bytes = 0, all_calls = 0, all_bytes = 0;
  int others = 0;
  for (const tstate *ts = ms__rec.list; ts; ts = ts->next) {
    uint64_t c = 0, b = 0;
    for (int f = 0; f < NFN; f++) {
      c += ts->c.calls[f];
      if (f != F_FREE) b += ts->c.bytes[f];
    }
    all_calls += c;
    all_bytes += b;
    if (ts == rec) continue;
    calls += c;
    bytes += b;
    others++;
  }
  int64_t proc = ms__prim_process_cpu_ns(), mine = -1;
  if (rec && ms__rec.rec_gone)
    mine = rec->cpu_v;  // read at its end
  else if (rec && ms__rec.rec_clock_ok)
    mine = ms__prim_clock_cpu_ns(ms__rec.rec_clock);
  int64_t cpu = proc >= 0 && mine >= 0 && proc > mine ? proc - mine : 0;
  ms__rec_meta("record.process_cpu_ns", "%lld", (long long)proc);
  ms__rec_meta(MS__REC_META_OTHER_THREADS, "%d", others);
  ms__rec_meta("record.other_threads_cpu_ns", "%lld", (long long)cpu);
  ms__rec_meta("record.other_threads_calls", "%llu of %llu", (unsigned long long)calls,
               (unsigned long long)all_calls);
  ms__rec_meta("record.other_threads_bytes", "%llu of %llu", (unsigned long long)bytes,
               (unsigned long long)all_bytes);
}

void ms__rec_build_meta(const assembled *A) {
  ms__rec_nmeta = 0;
  int threads = A->tr != NULL;  // several threads recorded (one: a plain trace)
  char cmd[1024], b1[40], b2[40];
  ms__prim_cmdline(cmd, sizeof cmd);
  ms__rec_meta("source", "memstub-record");
  ms__rec_meta("command", "%s", cmd);
  ms__rec_meta("record.pid", "%ld", (long)ms__rec.pid);
  if (ms__rec.is_child)  // --follow-children (follow.c)
    ms__rec_meta("record.parent_pid", "%ld", (long)ms__rec.ppid);
  if (ms__rec.all)
    ms__rec_meta(MS__REC_META_THREAD, "all");
  else if (ms__rec.rec_ordinal == 0 ||
           (ms__rec.rec_ordinal == MS__REC_REGION_THREAD && ms__rec.rec &&
            ms__rec.rec->tid == ms__rec.pid))
    ms__rec_meta(MS__REC_META_THREAD, "main");
  else if (ms__rec.rec_ordinal == MS__REC_REGION_THREAD)
    ms__rec_meta(MS__REC_META_THREAD, "the first thread that opened a region (thread id %ld)",
                 ms__rec.rec ? (long)ms__rec.rec->tid : -1L);
  else
    ms__rec_meta(MS__REC_META_THREAD, "%ld (the %ld%s thread the program created)",
                 ms__rec.rec_ordinal, ms__rec.rec_ordinal, ms__rec_ordinal(ms__rec.rec_ordinal));
  ms__rec_meta(MS__REC_META_HEAP_SCOPE, "%s",
               threads ? "each thread's (the blocks it allocated, whoever frees them)"
               : ms__rec.scope_thread ? "thread"
                                      : "process");
  if (ms__rec.all) ms__rec_thr_meta();
  if (ms__rec.all && ms__rec.thread_default)
    ms__rec_meta("record.thread_default", "every thread: memstub record's default (--thread main "
                                          "or N narrows it)");
  uint64_t off = 0, reads = 0;
  for (const tstate *ts = ms__rec.list; ts; ts = ts->next)
    if (ts->is_rec) off += ts->stack_off, reads += ts->nevents + ts->samples;
  if (off)
    ms__rec_meta(MS__REC_META_STACK_OFF,
                 "%llu of about %llu readings of the stack pointer were off the recorded "
                 "thread's own stack (the code ran on a stack of its own: coroutines, "
                 "sigaltstack, a stub's stack): the stack column keeps the last depth read on "
                 "the thread's stack there, so the peak stack leaves those stretches out",
                 (unsigned long long)off, (unsigned long long)(reads > off ? reads : off));
  if (ms__rec.all && ms__rec.regions_seen)
    ms__rec_meta(MS__REC_META_REGIONS_NOT_SCOPING,
                 "probe regions were opened: with every thread recorded they mark their rows "
                 "(the region column) and do not scope the trace; record with --thread main "
                 "(or N) to keep only the regions");
  // Generations are made for thread 0's regions: the others' are said, with their count.
  if (ms__rec.all && ms__rec.regions_seen) {
    long long occ = 0, nthr = 0;
    for (const tstate *ts = ms__rec.list; ts; ts = ts->next)
      if (ts != ms__rec.rec && ts->occ > 0) occ += ts->occ, nthr++;
    if (occ)
      ms__rec_meta(MS__REC_META_REGIONS_OTHER_THREADS,
                   "%lld region occurrence%s on %lld thread%s other than thread 0: marked in the "
                   "region column, not in TRACE.generations (made for thread 0's regions only; "
                   "record with --thread N for another thread's)",
                   occ, occ == 1 ? "" : "s", nthr, nthr == 1 ? "" : "s");
  }
  ms__rec_fn_meta();
  ms__rec_meta("record.heap_measure",
               "bytes requested from the malloc family (like massif mem_heap_B)");
  ms__rec_meta(
      MS__REC_META_STACK_FROM, "%s",
      threads                    ? "each thread's own stack top (a region's frame inside regions)"
      : !A->regions              ? "the recorded thread's stack top"
      : ms__rec_fn_patched() > 0 ? "the frame that called the --function (or memstub_probe_begin)"
                                 : "the frame that called memstub_probe_begin");
  ms__rec_meta("record.regions", "%s",
               A->regions ? (ms__rec.occurrence > 0 ? "one occurrence" : "all occurrences")
                          : "none (whole run)");
  if (A->regions && ms__rec.occurrence > 0)
    ms__rec_meta("record.occurrence", "%ld", ms__rec.occurrence);
  // The recorded thread's outermost occurrences: what --reference's region times must match.
  if (A->regions && ms__rec.rec)
    ms__rec_meta("record.region_occurrences", "%lld", (long long)ms__rec.rec->occ);
  if (!A->regions && ms__rec.origin_ns)
    ms__rec_meta("record.origin_monotonic_ns", "%lld", (long long)ms__rec.origin_ns);
  // A whole run from the main thread's start: what the process did before
  // (exec, the dynamic loader, the constructors that ran before the recorder's).
  if (!A->regions && ms__rec.origin_ns && ms__rec.spawn_ns > 0 && ms__rec.start_cpu_ns >= 0 &&
      ms__rec.start_ns >= ms__rec.spawn_ns) {
    ms__rec_meta("record.start_wall_ns", "%lld", (long long)(ms__rec.start_ns - ms__rec.spawn_ns));
    ms__rec_meta("record.start_cpu_ns", "%lld", (long long)ms__rec.start_cpu_ns);
  }
  ms__rec_meta("record.resolution_ns", "%lld", (long long)ms__rec.res_ns);
  ms__rec_meta("record.sample_hz", "%ld",
               ms__rec.timer_ok || ms__rec.sample_hz > 0 ? ms__rec.sample_hz : 0L);
  ms__rec_sampler_meta();
  ms__rec_mem_meta();
  ms__rec_meta("record.cpu_clock", "%s",
               threads ? "CLOCK_THREAD_CPUTIME_ID of each row's thread, from its start, read "
                             "when a coalescing bucket opens (at most every 10 us; extrapolated "
                             "in between)"
                           : "CLOCK_THREAD_CPUTIME_ID of the recorded thread, read when a "
                             "coalescing bucket opens (at most every 10 us; extrapolated in "
                             "between)");
  ms__rec_meta("record.run_delay", "%s",
               ms__rec.rq_gap_raw > 0
                   ? "/proc/thread-self/schedstat's run-queue wait, read with the CPU clock when "
                     "it finds 250 us or more off the CPU since its last read (run_delay_ns)"
                   : "not kept by this kernel (no /proc/thread-self/schedstat): no run_delay_ns");
  ms__rec_meta("record.call_classes", "tiny <= %d B, small <= %d B, medium <= %d B, large > %d B",
               MEMSTUB_WORK_TINY_MAX, MEMSTUB_WORK_SMALL_MAX, MEMSTUB_WORK_MEDIUM_MAX,
               MEMSTUB_WORK_MEDIUM_MAX);
  ms__rec_meta(
      "record.clock", "%s",
      ms__rec.use_tsc ? "invariant cycle counter, rate measured over the run" : "CLOCK_MONOTONIC");
  uint64_t events = 0, cost_raw = 0, cost_n = 0, samples = 0, sample_raw = 0, dropped = 0;
  uint64_t rcost_raw = 0, rcost_n = 0;
  churn all;
  memset(&all, 0, sizeof all);
  for (tstate *ts = ms__rec.list; ts; ts = ts->next) {
    events += ts->nevents;
    cost_raw += ts->cost_raw;
    cost_n += ts->cost_n;
    rcost_raw += ts->rcost_raw;
    rcost_n += ts->rcost_n;
    samples += ts->samples;
    sample_raw += ts->sample_raw;
    dropped += ts->rows_dropped;
    ms__rec_churn_add(&all, &ts->c);
  }
  double rpn = ms__rec.raw_per_ns > 0 ? ms__rec.raw_per_ns : 1.0;
  // Not measured (cost_n 0): no estimate, and none in record.overhead_ns.
  double cost = cost_n ? ((double)cost_raw / (double)cost_n - ms__rec.now_cost_raw) / rpn : 0;
  double scost = samples ? ((double)sample_raw / (double)samples) / rpn : 0;
  if (cost < 0) cost = 0;
  ms__rec_fmt_x10(b1, sizeof b1, cost);
  ms__rec_fmt_x10(b2, sizeof b2, scost);
  ms__rec_meta(MS__REC_META_EVENTS, "%llu", (unsigned long long)events);
  ms__rec_meta(MS__REC_META_COST_EVENT, "%s", cost_n ? b1 : MS__REC_NOT_MEASURED);
  ms__rec_meta("record.cost_measured_events", "%llu", (unsigned long long)cost_n);
  /* The same of the events inside probe regions (--function, the probe
   * API), for the reader: a hash table's calls at 400k live blocks cost the
   * recorder more than its host's. The timeline is fitted to the regions'
   * span in the reference runs instead (traces/timeline.c). */
  if (rcost_n) {
    double rc = ((double)rcost_raw / (double)rcost_n - ms__rec.now_cost_raw) / rpn;
    ms__rec_fmt_x10(b1, sizeof b1, rc < 0 ? 0 : rc);
    ms__rec_meta(MS__REC_META_COST_EVENT_REGIONS, "%s", b1);
    ms__rec_meta("record.cost_measured_events_in_regions", "%llu", (unsigned long long)rcost_n);
  }
  ms__rec_meta(MS__REC_META_SAMPLES, "%llu", (unsigned long long)samples);
  ms__rec_meta(MS__REC_META_COST_SAMPLE, "%s", samples ? b2 : MS__REC_NOT_MEASURED);
  ms__rec_meta("record.overhead_ns", "%lld",
               (long long)(cost * (double)events + scost * (double)samples));
  ms__rec_meta("record.threads", "%ld", ms__rec.threads_seen);
  if (!ms__rec.all) left_out_meta();
  ms__rec_meta("record.rows_merged", "%llu", (unsigned long long)A->raw_rows);
  ms__rec_meta(MS__REC_META_PEAK_HEAP, "%lld", (long long)A->peak_heap);
  if (A->tr && A->rows_peak_heap > A->peak_heap)
    ms__rec_meta(MS__REC_META_ROWS_PEAK_HEAP,
                 "%lld (each thread's rows keep its own peak of a bucket; their sum is above the "
                 "process's exact peak, record.peak_heap_bytes, when threads peak at different "
                 "moments of a bucket: a finer --resolution brings it down)",
                 (long long)A->rows_peak_heap);
  ms__rec_meta(MS__REC_META_PEAK_RSS, "%lld", (long long)A->peak_rss);
  ms__rec_meta(MS__REC_META_PEAK_MAPPED, "%lld", (long long)A->peak_mapped);
  ms__rec_meta(MS__REC_META_PEAK_STACK, "%lld", (long long)A->peak_stack);
  ms__rec_meta("record.table_bytes_max", "%llu", (unsigned long long)ms__rec_table_bytes_max());
  ms__rec_meta("record.live_blocks_at_exit", "%llu", (unsigned long long)ms__rec_table_blocks());
  if (ms__rec_epoch_count()) ms__rec_meta("record.epochs", "%llu", (unsigned long long)ms__rec_epoch_count());
  if (ms__rec.stale_blocks)
    ms__rec_meta("record.stale_blocks", "%llu blocks, %llu bytes freed where no hook saw it "
                 "(counted as freed when the allocator gave their address out again)",
                 (unsigned long long)ms__rec.stale_blocks, (unsigned long long)ms__rec.stale_bytes);
  if (ms__rec.reentered)
    ms__rec_meta("record.reentered", "%llu", (unsigned long long)ms__rec.reentered);
  if (ms__rec.unknown_frees)
    ms__rec_meta("record.unknown_frees", "%llu", (unsigned long long)ms__rec.unknown_frees);
  if (dropped) ms__rec_meta("record.rows_dropped", "%llu", (unsigned long long)dropped);
  if (ms__rec.finish_how == 2)
    ms__rec_meta("record.exit", "killed by signal %d (trace written from the signal handler)",
                 ms__rec.finish_sig);
  else
    ms__rec_meta("record.exit", "%s", ms__rec.finish_how == 1 ? "_exit" : "exit");
  ms__rec_meta(MS__REC_CHURN_WEIGHTS_KEY,
               "malloc=1 calloc=2 realloc=3 free=1 (aligned allocators as malloc, "
               "reallocarray as realloc); churn = sum of weight*log2(bytes)");
  ms__rec_churn_meta(MS__REC_CHURN_PROGRAM, &all, 0);
  // Regions: merged by name across threads.
  for (tstate *ts = ms__rec.list; ts; ts = ts->next) {
    for (int i = 0; i < ts->nstats; i++) {
      const rstat *st = &ts->stats[i];
      int seen = 0;
      for (tstate *u = ms__rec.list; u != ts && !seen; u = u->next)
        for (int j = 0; j < u->nstats; j++)
          if (strcmp(u->stats[j].name, st->name) == 0) seen = 1;
      if (seen) continue;
      rstat sum = *st;
      for (tstate *u = ts->next; u; u = u->next)
        for (int j = 0; j < u->nstats; j++)
          if (strcmp(u->stats[j].name, st->name) == 0) {
            sum.occurrences += u->stats[j].occurrences;
            sum.nested += u->stats[j].nested;
            ms__rec_churn_add(&sum.c, &u->stats[j].c);
          }
      char key[96];
      snprintf(key, sizeof key, MS__REC_CHURN_REGION "%s", sum.name);
      ms__rec_churn_meta(key, &sum.c, sum.occurrences);
      if (sum.nested) {
        snprintf(key, sizeof key, "record.region.%s.nested", sum.name);
        ms__rec_meta(key, "%llu entries while an occurrence was open (recursion), counted in it",
                     (unsigned long long)sum.nested);
      }
    }
  }
}
