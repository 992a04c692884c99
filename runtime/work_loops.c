// Work as work (issue 32 item 2; docs/runtime.md, "Work as work"): the
// loops a stub's CPU time runs in, counted, and their calibrated rates.
//
// A point's recorded CPU time is an amount of work: ns at the rates the
// calibration measured on a quiet host, run as a number of loop steps, not
// as a deadline on the CPU clock. Most of it is register-only arithmetic
// (the ALU loop); a share of it (mem_share) reads and writes the stub's own
// heap block, one cache line per touch, lines 4099 apart, so that a core
// slowed by a neighbour's memory traffic takes longer over it, as the
// component's memory accesses would. The touches stay within the block's
// written bytes: they add no page, no fault and no resident memory.
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "prim.h"

_Static_assert(MEMSTUB_STUB_MODEL_N == MEMSTUB_STUB_MODEL_TOUCH + MEMSTUB_WORK_TOUCH_SIZES,
               "the work model holds the touch costs last");

// Lines between two touches: a prime, more than a page, so no prefetcher follows.
#define TOUCH_STRIDE 4099
#define LINE 64
// A block smaller than this is not touched: its share runs in the ALU loop.
#define TOUCH_MIN 4096
// The counted loops run in chunks of about this much work (ns), interleaved.
#define CHUNK_NS 20000.0

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

static const int64_t touch_bytes[MEMSTUB_WORK_TOUCH_SIZES] = MEMSTUB_WORK_TOUCH_BYTES;
/* The figures a replay counts touches with when it is given none:
 * memstub_work_touch_measure on the development VM (2026-11-27, a quiet
 * moment), ns per touch. */
static const double default_touch_ns[MEMSTUB_WORK_TOUCH_SIZES] = {0.9, 1.3, 3.2, 8.8, 15.5};

// n steps of register-only arithmetic.
static NOINLINE uint64_t spin_steps(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    __asm__ volatile("" : "+r"(x));
  }
  return x;
}

// n touches of lines [0, lines) of b from line pos on: a read and a write each.
static NOINLINE uint64_t touch_lines(char *b, uint64_t lines, uint64_t n, uint64_t pos) {
  uint64_t step = TOUCH_STRIDE % lines ? TOUCH_STRIDE % lines : 1;
  if (pos >= lines) pos %= lines;
  for (uint64_t i = 0; i < n; i++) {
    pos += step;
    if (pos >= lines) pos -= lines;
    volatile char *p = b + pos * LINE;
    *p = (char)(*p + 1);
  }
  return pos;
}

// The median of v[0, n), n > 0 (sorts v).
static double median(double *v, int n) {
  for (int i = 1; i < n; i++)  // insertion sort
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return v[n / 2];
}

double ms__rt_spin_rate_measure(void) {
  /* The median of five runs of 100k steps: steps per ns of CPU. The median,
   * not the fastest, since the work is counted at this rate: the fastest
   * run is above what the loop keeps up (2-4 % on the development VM). */
  double r[5];
  int n = 0;
  for (int k = 0; k < 5; k++) {
    int64_t a = ms__prim_thread_cpu_ns();
    (void)spin_steps(100000, (uint64_t)a);
    int64_t b = ms__prim_thread_cpu_ns();
    if (a >= 0 && b > a) r[n++] = 100000.0 / (double)(b - a);
  }
  return n ? median(r, n) : 0.5;
}

double ms__rt_spin_rate(void) {
  /* Measured once a process (0.75 ms here): a stub called again and again
   * (memstub_stub_call) paid it at every call, out of its work. */
  static double rate;  // 0: not yet; a race measures twice, either result stands
  double known;
  __atomic_load(&rate, &known, __ATOMIC_RELAXED);
  if (known > 0) return known;
  known = ms__rt_spin_rate_measure();
  __atomic_store(&rate, &known, __ATOMIC_RELAXED);
  return known;
}

// Between two reads of the CPU clock the time spin runs at most this long.
#define SPIN_CHUNK_NS 50000
// A spin shorter than this runs by the measured rate alone, without reading the clock.
#define SPIN_BLIND_NS 3000

int64_t ms__rt_spin(int64_t ns, double rate) {
  if (ns <= 0) return 0;
  if (ns < SPIN_BLIND_NS) {
    (void)spin_steps((uint64_t)((double)ns * rate), (uint64_t)ns);
    return ns;
  }
  int64_t start = ms__prim_thread_cpu_ns();
  if (start < 0) {  // no CPU clock: by the rate alone
    (void)spin_steps((uint64_t)((double)ns * rate), (uint64_t)ns);
    return ns;
  }
  int64_t now = start, target = start + ns;
  while (now < target) {
    int64_t rem = target - now;
    (void)spin_steps((uint64_t)((double)(rem < SPIN_CHUNK_NS ? rem : SPIN_CHUNK_NS) * rate) + 1,
                     (uint64_t)now);
    now = ms__prim_thread_cpu_ns();
  }
  return now - start;
}

int memstub_work_share_parse(const char *text, double *share) {
  char *end;
  if (!text || !*text) return -EINVAL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || *end || !(v >= 0 && v <= 1)) return -EINVAL;
  *share = v > 0 ? v : MEMSTUB_WORK_MEM_NONE;
  return 0;
}

int memstub_work_share_meta(const memstub_trace *t, double *share, memstub_error *err) {
  const char *v = memstub_trace_get_meta(t, MEMSTUB_WORK_MEM_SHARE_KEY);
  if (!v) return 0;
  if (memstub_work_share_parse(v, share) == 0) return 1;
  return memstub_error_set(err, -EINVAL, "metadata %s: expected a share from 0 to 1, found '%s'",
                           MEMSTUB_WORK_MEM_SHARE_KEY, v);
}

void ms__rt_work_rates(ms__rt_work *w, const memstub_replay_options *o) {
  w->rate = o->work_rate > 0 ? o->work_rate : ms__rt_spin_rate();
  w->rate_own = !(o->work_rate > 0);
  int given = 0;
  for (int k = 0; o->touch_ns && k < MEMSTUB_WORK_TOUCH_SIZES; k++) given |= o->touch_ns[k] > 0;
  for (int k = 0; k < MEMSTUB_WORK_TOUCH_SIZES; k++)
    w->touch_ns[k] = given && o->touch_ns[k] > 0 ? o->touch_ns[k] : default_touch_ns[k];
  /* The default share needs the host's touch costs: the built-in ones can
   * be far off (a stub of bench/timeline_hash spent 20 % more CPU time with
   * them than without touches, 4-9 % with a quick calibration's). */
  w->mem_share = o->mem_share == 0 ? (given ? MEMSTUB_WORK_MEM_SHARE_DEFAULT : 0)
                 : o->mem_share > 0 && o->mem_share <= 1 ? o->mem_share
                                                         : 0;
}

int ms__rt_work_model_check(const struct memstub_stub *s, memstub_error *err) {
  if (s->abi < MEMSTUB_STUB_ABI_MODEL) return 0;
  if ((!s->callseq) != (!s->callend))
    return memstub_error_set(err, -EINVAL, "the stub has %s without %s (layout 5)",
                             s->callseq ? "callseq" : "callend", s->callseq ? "callend" : "callseq");
  const double *m = s->work_model;
  if (!m) return 0;
  static const char *const what[MEMSTUB_STUB_MODEL_N] = {
      "memory share", "loop rate", "touch cost 256 KiB", "touch cost 1 MiB",
      "touch cost 4 MiB", "touch cost 16 MiB", "touch cost 64 MiB"};
  for (int k = 0; k < MEMSTUB_STUB_MODEL_N; k++) {
    double v = m[k];
    int ok = k == MEMSTUB_STUB_MODEL_SHARE ? v == MEMSTUB_WORK_MEM_NONE || (v >= 0 && v <= 1)
                                           : v >= 0 && v < 1e12;
    if (!ok)
      return memstub_error_set(err, -EINVAL, "work model: %s %g out of range", what[k], v);
  }
  return 0;
}

void ms__rt_work_model_options(memstub_replay_options *o, const struct memstub_stub *s) {
  if (s->abi < MEMSTUB_STUB_ABI_MODEL || !s->work_model) return;
  const double *m = s->work_model;
  if (m[MEMSTUB_STUB_MODEL_SHARE] != 0) o->mem_share = m[MEMSTUB_STUB_MODEL_SHARE];
  if (m[MEMSTUB_STUB_MODEL_RATE] > 0) o->work_rate = m[MEMSTUB_STUB_MODEL_RATE];
  for (int k = 0; k < MEMSTUB_WORK_TOUCH_SIZES; k++)
    if (m[MEMSTUB_STUB_MODEL_TOUCH + k] > 0) o->touch_ns = m + MEMSTUB_STUB_MODEL_TOUCH;
}

void ms__rt_work_memory(ms__rt_work *w, char *mem, int64_t len) {
  w->mem = len >= TOUCH_MIN ? mem : NULL;
  w->mem_len = w->mem ? len : 0;
}

// ns per touch of a block of len bytes: the figures log-interpolated, flat beyond them.
static double touch_cost(const ms__rt_work *w, int64_t len) {
  const int n = MEMSTUB_WORK_TOUCH_SIZES;
  if (len <= touch_bytes[0]) return w->touch_ns[0];
  if (len >= touch_bytes[n - 1]) return w->touch_ns[n - 1];
  int k = 1;
  while (touch_bytes[k] < len) k++;
  double f = log((double)len / (double)touch_bytes[k - 1]) /
             log((double)touch_bytes[k] / (double)touch_bytes[k - 1]);
  return w->touch_ns[k - 1] + f * (w->touch_ns[k] - w->touch_ns[k - 1]);
}

int64_t ms__rt_work_do(ms__rt_work *w, double ns) {
  if (!(ns > 0)) return 0;
  int64_t a = ms__prim_thread_cpu_ns();
  double mem = w->mem ? ns * w->mem_share : 0, alu = ns - mem;
  double tns = w->mem ? touch_cost(w, w->mem_len) : 1;
  uint64_t lines = (uint64_t)w->mem_len / LINE, x = (uint64_t)a;
  // Chunks of both loops in turn, so that the touches are spread over the work.
  while (alu > 0 || mem > 0) {
    double share = alu + mem, c = share < CHUNK_NS ? share : CHUNK_NS;
    double ca = mem > 0 ? c * alu / share : c, cm = c - ca;
    x = spin_steps((uint64_t)(ca * w->rate + 0.5), x);
    if (cm > 0 && w->mem) w->touch_pos = touch_lines(w->mem, lines, (uint64_t)(cm / tns + 0.5), w->touch_pos);
    alu -= ca;
    mem -= cm;
    if (alu < 1e-9) alu = 0;
    if (mem < 1e-9) mem = 0;
  }
  int64_t b = a >= 0 ? ms__prim_thread_cpu_ns() : -1;
  return a >= 0 && b >= a ? b - a : 0;
}

int memstub_work_touch_measure(double *ns) {
  size_t cap = (size_t)touch_bytes[MEMSTUB_WORK_TOUCH_SIZES - 1];
  char *b = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED) return -ENOMEM;
  memset(b, 1, cap);
  for (int k = 0; k < MEMSTUB_WORK_TOUCH_SIZES; k++) {
    uint64_t lines = (uint64_t)touch_bytes[k] / LINE, n = lines < 200000 ? 200000 : lines, pos = 0;
    // The median of five passes, as the ALU loop's rate (ms__rt_spin_rate).
    double v[5];
    int m = 0;
    for (int r = 0; r < 5; r++) {
      int64_t t0 = ms__prim_thread_cpu_ns();
      pos = touch_lines(b, lines, n, pos);
      int64_t t1 = ms__prim_thread_cpu_ns();
      if (t0 >= 0 && t1 > t0) v[m++] = (double)(t1 - t0) / (double)n;
    }
    ns[k] = m ? median(v, m) : default_touch_ns[k];
  }
  munmap(b, cap);
  return 0;
}
