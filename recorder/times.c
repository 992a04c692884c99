/* recorder/times.c: a reference run's region times (memstub record
 * --reference with probe regions or --function; docs/recording.md, "The
 * stub's timeline"). The program runs with the recorder loaded but not
 * recording: the allocator calls pass through, and the regions the
 * recording would cover are timed, from the first one's begin to the last
 * one's end on the thread the recording follows (wall time and that
 * thread's CPU time), so that the generator can set the trace's totals to
 * what they were without the recorder. Written at exit to the file
 * MS__REC_ENV_TIMES names. */
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
  int outer = op == MS__PROBE_BEGIN ? t_depth++ == 0 : --t_depth == 0;
  if (!outer) return t_depth;
  pid_t tid = (pid_t)syscall(SYS_gettid);
  if (op == MS__PROBE_BEGIN) {
    if (!followed(tid)) return t_depth;
    g_tid = tid;
    g_occ++;
    if ((ms__rec.occurrence <= 0 || g_occ == ms__rec.occurrence) && g_wall0 < 0)
      g_wall0 = ms__prim_now_ns(), g_cpu0 = ms__prim_thread_cpu_ns();
    return t_depth;
  }
  if (tid == g_tid && g_wall0 >= 0 && (ms__rec.occurrence <= 0 || g_occ == ms__rec.occurrence)) {
    g_wall1 = ms__prim_now_ns(), g_cpu1 = ms__prim_thread_cpu_ns();
    g_n++;
  }
  return t_depth;
}

// The times into ms__rec.times, replaced whole (a file of the command's to read).
void ms__rec_times_write(void) {
  char tmp[PATH_MAX + 8];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", ms__rec.times) >= sizeof tmp) return;
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  fprintf(f, "occurrences %lld\nspan_wall_ns %lld\nspan_cpu_ns %lld\n", (long long)g_n,
          (long long)(g_n ? g_wall1 - g_wall0 : 0), (long long)(g_n ? g_cpu1 - g_cpu0 : 0));
  if (fclose(f) == 0) rename(tmp, ms__rec.times);
  else unlink(tmp);
}
