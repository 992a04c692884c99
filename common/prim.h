/* common/prim.h: the platform seam. Everything memstub needs from the CPU and
 * the OS that is not plain C lives behind these calls: the stack pointer, the
 * cycle counter, clocks, sleeping, page size and fault counts. Linux on x86-64
 * and aarch64; other targets get portable fallbacks. */
#ifndef MEMSTUB_COMMON_PRIM_H
#define MEMSTUB_COMMON_PRIM_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

// The current stack pointer. Inline so it reads the caller's frame.
static inline __attribute__((always_inline)) uintptr_t ms__prim_sp(void) {
  uintptr_t sp;
#if defined(__x86_64__)
  __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
#elif defined(__aarch64__)
  __asm__ volatile("mov %0, sp" : "=r"(sp));
#else
  sp = (uintptr_t)__builtin_frame_address(0);
#endif
  return sp;
}

// Cycle counter at the start of a timed region: earlier instructions retire
// before it is read (lfence; rdtsc). Never cpuid: it traps under a hypervisor.
static inline __attribute__((always_inline)) uint64_t ms__prim_cycles_begin(void) {
#if defined(__x86_64__)
  uint32_t lo, hi;
  __asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
  return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
  return v;
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

// Cycle counter at the end of a timed region: waits for the region's
// instructions (rdtscp), and later ones wait for the read (lfence).
static inline __attribute__((always_inline)) uint64_t ms__prim_cycles_end(void) {
#if defined(__x86_64__)
  uint32_t lo, hi, aux;
  __asm__ volatile("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
  return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v)::"memory");
  return v;
#else
  return ms__prim_cycles_begin();
#endif
}

// CLOCK_MONOTONIC in nanoseconds.
static inline int64_t ms__prim_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Whether the cycle counter ticks at a constant rate, in every P- and
 * C-state (x86: invariant TSC; aarch64: the generic timer always does).
 * Without it, cycle figures fall back to CLOCK_MONOTONIC nanoseconds. */
int ms__prim_cycles_invariant(void);

/* Cycles per nanosecond, measured once against CLOCK_MONOTONIC (about 20 ms
 * the first time, cached after). 1.0 when the counter is not invariant. */
double ms__prim_cycles_per_ns(void);

// Sleep until CLOCK_MONOTONIC reaches deadline_ns (absolute); retries EINTR.
void ms__prim_sleep_until(int64_t deadline_ns);

/* Block while *word == expect, at most timeout_ns (a futex wait): returns on
 * a wake, a change, the timeout or a signal alike; the caller checks again. */
void ms__prim_wait_word(uint32_t *word, uint32_t expect, int64_t timeout_ns);
// Wake every thread blocked in ms__prim_wait_word on word.
void ms__prim_wake_word(uint32_t *word);

// Set this thread's timer slack (how late the kernel may wake it). 0 or -errno.
int ms__prim_set_timer_slack(unsigned long ns);
// This thread's timer slack in ns, or -errno.
long ms__prim_get_timer_slack(void);

/* Ask the scheduler for a time slice of ns for this thread (SCHED_OTHER;
 * Linux's EEVDF scheduler, 6.12 and later, honours it between 100 us and
 * 100 ms: a shorter slice gives the thread earlier deadlines, so it preempts
 * a busy CPU sooner when it wakes). No privileges needed. 0 or -errno
 * (older kernels may accept it and ignore it). */
int ms__prim_set_sched_slice(uint64_t ns);

long ms__prim_page_size(void);

// Physical memory in bytes (0 if unknown).
uint64_t ms__prim_phys_mem(void);

/* Memory the host can give a process without swapping, in bytes (Linux:
 * MemAvailable of /proc/meminfo); 0 if unknown. */
uint64_t ms__prim_mem_available(void);

/* Make [p, p + len) resident now, written, so later writes take no page
 * fault (Linux: madvise MADV_POPULATE_WRITE, 5.14 and later, else a write to
 * every page); ask for transparent huge pages first when huge is set. 0, or
 * -ENOMEM when the host cannot back it (only where the kernel can say so:
 * the write fallback may fault later instead). */
int ms__prim_prefault(void *p, size_t len, int huge);

// Minor page faults of the calling thread so far.
long ms__prim_minor_faults(void);

// Minor and major page faults of the calling thread so far (getrusage
// RUSAGE_THREAD, one system call); 0, or -errno. Async-signal-safe.
int ms__prim_thread_faults(int64_t *minflt, int64_t *majflt);
/* Thread tid's (of this process) minor and major page faults so far, from
 * /proc/self/task/TID/stat (open and read only: no stdio, no malloc). 0, or
 * -errno (the thread is gone, no /proc) or -EINVAL (not the format). */
int ms__prim_task_faults(pid_t tid, int64_t *minflt, int64_t *majflt);

/* The process's anonymous resident memory (RssAnon) in bytes, from an open
 * /proc/self/statm (resident minus shared pages, one pread): opened by
 * ms__prim_statm_open (a descriptor or -errno), read by ms__prim_statm_anon
 * (bytes, or -errno; async-signal-safe). */
int ms__prim_statm_open(void);
// The same for another process (memstub sweep's host): its /proc/PID/statm.
int ms__prim_statm_open_pid(pid_t pid);
int64_t ms__prim_statm_anon(int fd);
// Close what ms__prim_statm_open opened (accepts a negative descriptor).
void ms__prim_statm_close(int fd);

// CPU time the calling thread has used so far (CLOCK_THREAD_CPUTIME_ID), ns; -1 if unknown.
int64_t ms__prim_thread_cpu_ns(void);
// CPU time of every thread of the process so far, ended ones too
// (CLOCK_PROCESS_CPUTIME_ID), ns; -1 if unknown.
int64_t ms__prim_process_cpu_ns(void);
// CPU time (user + system) of the children the process has waited for, and
// theirs (getrusage RUSAGE_CHILDREN), ns; -1 if unknown.
int64_t ms__prim_children_cpu_ns(void);
// CPU time of the thread whose CPU clock is clk (pthread_getcpuclockid), ns; -1 if unknown.
int64_t ms__prim_clock_cpu_ns(clockid_t clk);

/* The calling thread's scheduler statistics (/proc/thread-self/schedstat),
 * kept open so that each reading is one pread (about 1 us here).
 * ms__prim_sched_open: a descriptor, or -errno when the kernel does not
 * keep them (CONFIG_SCHED_INFO off, no /proc). ms__prim_sched_run_delay: the
 * ns the thread has spent runnable but waiting for a CPU so far (the
 * run-queue wait), or -1 when it cannot be read. Close with
 * ms__prim_sched_close (accepts a negative descriptor). */
int ms__prim_sched_open(void);
int64_t ms__prim_sched_run_delay(int fd);
void ms__prim_sched_close(int fd);
/* The same run-queue wait of the calling thread, read without a descriptor
 * kept (open, read, close: a few us), for a library inside another program,
 * whose descriptors it must not hold; errno is left as it was; -1 when it
 * cannot be read. Async-signal-safe. */
int64_t ms__prim_thread_run_delay(void);

/* One line naming the CPU model ("unknown" if the OS does not say). Safe from
 * any thread: read once (the first caller reads, any other waits for it), and
 * the string returned never changes after. */
const char *ms__prim_cpu_model(void);

/* ---- the host's description and glibc's allocator (calibration) ----------
 * memstub_host_arch() (memstub/calib.h), the architecture this code was
 * compiled for, is defined with these in prim_linux.c. */

// The kernel's name and release ("Linux 6.1.0-18-amd64") into buf (cap
// bytes); "unknown" when the OS does not say.
void ms__prim_kernel(char *buf, size_t cap);

// The C library and its version ("glibc 2.36") into buf (cap bytes).
void ms__prim_libc(char *buf, size_t cap);

// The current UTC time, ISO 8601 ("2026-11-24T13:53:02Z"), into buf (cap
// bytes); "unknown" when the clock cannot be read.
void ms__prim_utc_date(char *buf, size_t cap);

// Fix the allocator's mmap threshold at bytes for the whole process (glibc
// raises it when a mapped chunk is freed, unless it was set). 0 or -EINVAL.
int ms__prim_heap_mmap_threshold(long bytes);

// Give the free pages of every arena back to the OS (glibc: malloc_trim).
void ms__prim_heap_trim(void);

/* ---- where this program is (paths.c) ------------------------------------ */

// The running executable's absolute path into buf (cap bytes; Linux:
// /proc/self/exe). 0, or -errno (buf "") when the OS does not say or the
// path does not fit.
int ms__prim_self_exe(char *buf, size_t cap);

/* ---- the process's resource limits (replay's up-front check) ------------- */

enum { MS__PRIM_LIMIT_AS, MS__PRIM_LIMIT_DATA, MS__PRIM_LIMIT_STACK };

/* The soft limit of one resource of the calling process, bytes (getrlimit:
 * RLIMIT_AS, RLIMIT_DATA, RLIMIT_STACK), UINT64_MAX when unlimited or
 * unknown; and in *used (if not NULL) what the process uses of it now
 * (Linux: VmSize, VmData of /proc/self/status; the main thread's stack,
 * VmStk), 0 when unknown. */
uint64_t ms__prim_mem_limit(int which, uint64_t *used);

/* The wall-clock time ns from now into *ts, for the timed waits that take
 * CLOCK_REALTIME (pthread_timedjoin_np). 0, or -errno. */
int ms__prim_realtime_in(int64_t ns, struct timespec *ts);

/* The wall clock (CLOCK_REALTIME), the clock of file times, in ns since the
 * epoch; 0 when unknown. A file written before a reading has an mtime before
 * it (the kernel's stamps lag the clock, never lead it, by up to a tick). */
int64_t ms__prim_realtime_ns(void);

/* Bytes the C library's allocator holds for the program (glibc: mallinfo2's
 * uordblks + hblkhd, mallinfo before 2.33; it takes every arena's lock), 0
 * when the allocator does not say. */
int64_t ms__prim_heap_in_use(void);

/* The process's command line, its arguments joined by blanks, into buf (cap
 * bytes, cut to fit; Linux: /proc/self/cmdline); "" when unknown. */
void ms__prim_cmdline(char *buf, size_t cap);

#endif
