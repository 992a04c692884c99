/* recorder/times.c: a reference run's region times (memstub record
 * --reference with probe regions or --function; docs/recording.md, "The
 * stub's timeline"). The program runs with the recorder loaded but not
 * recording: the allocator calls pass through, and the regions the
 * recording would cover are timed, from the first one's begin to the last
 * one's end on the thread the recording follows (wall time and that
 * thread's CPU time), so that the generator can set the trace's totals to
 * what they were without the recorder. With one occurrence timed, also
 * its clock at its allocator calls: the wall time at every so many calls of
 * that thread inside it (a curve of at most CURVE_CAP points, thinned to
 * every other point and twice the stride when full), from which the
 * generator gives each row of the trace the time its calls took without
 * the recorder, not an even share (traces/timeline.c). Written at exit to
 * the file MS__REC_ENV_TIMES names. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bridge.h"
#include "internal.h"
#include "prim.h"

static TLS int t_depth;  // this thread's open regions
static pid_t g_tid;      // the thread timed (0: none yet)
static int64_t g_occ, g_n;  // its outermost occurrences, those timed
static int64_t g_wall0 = -1, g_cpu0, g_wall1, g_cpu1;  // first timed begin, last timed end

/* The curve: calls made by the timed thread inside the timed occurrences,
 * and the wall time (since g_wall0) at call 0, g_stride, 2 g_stride, ...
 * (pre: a power of two). Only the timed thread writes it. */
#define CURVE_CAP 2048
#define CURVE_STRIDE0 64  // a clock read (about 20 ns) per 64 calls at first
TLS int ms__rec_times_on;  // this thread counts its calls (hooks.c: ms__rec_times_tick)
static int64_t g_calls, g_stride = CURVE_STRIDE0, g_ncurve, g_curve[CURVE_CAP];

// pre: ms__rec_times_on. An allocator call of the timed thread inside a timed occurrence.
void ms__rec_times_tick(void) {
  if (g_calls++ & (g_stride - 1)) return;
  if (g_ncurve == CURVE_CAP) {  // every other point kept: the stride doubles
    for (int64_t i = 0; i < CURVE_CAP / 2; i++) g_curve[i] = g_curve[2 * i];
    g_ncurve = CURVE_CAP / 2;
    g_stride *= 2;
    if ((g_calls - 1) & (g_stride - 1)) return;
  }
  g_curve[g_ncurve++] = ms__prim_now_ns() - g_wall0;
}

// Whether thread tid is the one the recording follows: the main one, or the first to open a region.
static int followed(pid_t tid) {
  if (ms__rec.rec_ordinal == 0) return tid == ms__rec.pid;
  if (ms__rec.rec_ordinal != MS__REC_REGION_THREAD) return 0;  // the Nth created: not timed
  pid_t none = 0;
  return __atomic_compare_exchange_n(&g_tid, &none, tid, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
         none == tid;
}

// pre: ms__rec.times_only. The region op of bridge.h at this thread, answered as the recorder does.
int ms__rec_times_probe(int op) {
  if (op == MS__PROBE_HELLO) return 1;
  if (op == MS__PROBE_POINT) return t_depth;
  if (op == MS__PROBE_END && t_depth == 0) return -EINVAL;
  if (ms__rec.times_whole) return op == MS__PROBE_BEGIN ? ++t_depth : --t_depth;  // the run is timed
  int outer = op == MS__PROBE_BEGIN ? t_depth++ == 0 : --t_depth == 0;
  if (!outer) return t_depth;
  pid_t tid = (pid_t)syscall(SYS_gettid);
  if (op == MS__PROBE_BEGIN) {
    if (!followed(tid)) return t_depth;
    g_tid = tid;
    g_occ++;
    if ((ms__rec.occurrence <= 0 || g_occ == ms__rec.occurrence) && g_wall0 < 0)
      g_wall0 = ms__prim_now_ns(), g_cpu0 = ms__prim_thread_cpu_ns();
    if (g_wall0 >= 0 && (ms__rec.occurrence <= 0 || g_occ == ms__rec.occurrence))
      ms__rec_times_on = 1;
    return t_depth;
  }
  if (tid == g_tid && g_wall0 >= 0 && (ms__rec.occurrence <= 0 || g_occ == ms__rec.occurrence)) {
    g_wall1 = ms__prim_now_ns(), g_cpu1 = ms__prim_thread_cpu_ns();
    g_n++;
    ms__rec_times_on = 0;
  }
  return t_depth;
}

void ms__rec_times_whole_begin(void) {
  pid_t tid = (pid_t)syscall(SYS_gettid);
  if (tid != ms__rec.pid) return;  // started on another thread: no occurrence, said by its absence
  g_tid = tid;
  g_occ = 1;
  g_wall0 = ms__prim_now_ns(), g_cpu0 = ms__prim_thread_cpu_ns();
  ms__rec_times_on = 1;
}

// The times into ms__rec.times, replaced whole (a file of the command's to read).
void ms__rec_times_write(void) {
  if (ms__rec.times_whole && g_wall0 >= 0 && g_n == 0) {  // the whole run's end, on any thread
    g_wall1 = ms__prim_now_ns(), g_n = 1;
    // The main thread's CPU time when it ends the run, else not known here (0).
    g_cpu1 = (pid_t)syscall(SYS_gettid) == g_tid ? ms__prim_thread_cpu_ns() : g_cpu0;
    ms__rec_times_on = 0;
  }
  char tmp[PATH_MAX + 8];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", ms__rec.times) >= sizeof tmp) return;
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  fprintf(f, "occurrences %lld\nspan_wall_ns %lld\nspan_cpu_ns %lld\n", (long long)g_n,
          (long long)(g_n ? g_wall1 - g_wall0 : 0), (long long)(g_n ? g_cpu1 - g_cpu0 : 0));
  // The curve, of one occurrence with calls: "calls N", then "curve STRIDE W0 W1 ...".
  if (g_n == 1 && g_ncurve > 0) {
    fprintf(f, "calls %lld\ncurve %lld", (long long)g_calls, (long long)g_stride);
    for (int64_t i = 0; i < g_ncurve; i++) fprintf(f, " %lld", (long long)g_curve[i]);
    fputc('\n', f);
  }
  if (fclose(f) == 0) rename(tmp, ms__rec.times);
  else unlink(tmp);
}
