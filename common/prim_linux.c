// The platform seam on Linux (x86-64, aarch64, and a portable fallback).
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "prim.h"

int ms__prim_cycles_invariant(void) {
#if defined(__x86_64__)
  // CPUID.80000007H:EDX[8] is the invariant-TSC bit. Asked once, not timed.
  unsigned a, b, c, d;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
  if (a < 0x80000007u) return 0;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
  return (d >> 8) & 1;
#elif defined(__aarch64__)
  return 1;
#else
  return 0;
#endif
}

static double cycles_per_ns;
static pthread_once_t cycles_per_ns_once = PTHREAD_ONCE_INIT;

// cycles_per_ns measured against CLOCK_MONOTONIC (1.0 without an invariant
// counter); run once.
static void measure_cycles_per_ns(void) {
  cycles_per_ns = 1.0;
  if (!ms__prim_cycles_invariant()) return;
  // Two 10 ms windows; keep the rate from the one less disturbed, i.e. with
  // the shortest clock read around each end.
  double best = 0;
  int64_t best_slop = INT64_MAX;
  for (int i = 0; i < 2; i++) {
    int64_t t0a = ms__prim_now_ns();
    uint64_t c0 = ms__prim_cycles_begin();
    int64_t t0b = ms__prim_now_ns();
    int64_t until = t0b + 10 * 1000 * 1000;
    while (ms__prim_now_ns() < until) {
    }
    int64_t t1a = ms__prim_now_ns();
    uint64_t c1 = ms__prim_cycles_end();
    int64_t t1b = ms__prim_now_ns();
    int64_t slop = (t0b - t0a) + (t1b - t1a);
    double rate = (double)(c1 - c0) / (double)((t1a + t1b) / 2 - (t0a + t0b) / 2);
    if (slop < best_slop) {
      best_slop = slop;
      best = rate;
    }
  }
  if (best > 0) cycles_per_ns = best;
}

double ms__prim_cycles_per_ns(void) {
  // Every caller waits for the one measurement; the rate never changes after.
  pthread_once(&cycles_per_ns_once, measure_cycles_per_ns);
  return cycles_per_ns;
}

void ms__prim_sleep_until(int64_t deadline_ns) {
  struct timespec ts = {.tv_sec = deadline_ns / 1000000000, .tv_nsec = deadline_ns % 1000000000};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

void ms__prim_wait_word(uint32_t *word, uint32_t expect, int64_t timeout_ns) {
  struct timespec ts = {.tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000};
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expect, &ts, NULL, 0);
}

void ms__prim_wake_word(uint32_t *word) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

int ms__prim_set_timer_slack(unsigned long ns) {
  return prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0) == 0 ? 0 : -errno;
}

long ms__prim_get_timer_slack(void) {
  int r = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  return r >= 0 ? r : -errno;
}

int ms__prim_set_sched_slice(uint64_t ns) {
#if defined(SYS_sched_setattr)
  // struct sched_attr (include/uapi/linux/sched/types.h), version 1 layout.
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
  } a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.policy = SCHED_OTHER;
  a.nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
  a.runtime = ns;
  return syscall(SYS_sched_setattr, 0, &a, 0) == 0 ? 0 : -errno;
#else
  (void)ns;
  return -ENOSYS;
#endif
}

long ms__prim_page_size(void) {
  // Relaxed atomics: threads may both ask sysconf, and get the same answer.
  static long ps;
  long v = __atomic_load_n(&ps, __ATOMIC_RELAXED);
  if (!v) __atomic_store_n(&ps, v = sysconf(_SC_PAGESIZE), __ATOMIC_RELAXED);
  return v;
}

uint64_t ms__prim_phys_mem(void) {
  long pages = sysconf(_SC_PHYS_PAGES);
  return pages > 0 ? (uint64_t)pages * (uint64_t)ms__prim_page_size() : 0;
}

/* The first cap - 1 bytes of a /proc file, NUL-terminated, read without
 * stdio: its FILE and buffer come from malloc, and a stub must make only
 * its component's allocator calls. The length read, or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t n = 0;
  while (n + 1 < cap) {
    ssize_t r = read(fd, buf + n, cap - 1 - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = '\0';
  return (ssize_t)n;
}

// The number after "field" at the start of a line of text, in *v; 1 when found.
static int proc_field(const char *text, const char *field, unsigned long long *v) {
  size_t fl = strlen(field);
  for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    if (strncmp(l, field, fl) != 0) continue;
    char *end;
    errno = 0;
    *v = strtoull(l + fl, &end, 10);
    return end != l + fl && errno == 0;
  }
  return 0;
}

uint64_t ms__prim_mem_available(void) {
  char buf[4096];
  unsigned long long kb = 0;
  if (read_proc("/proc/meminfo", buf, sizeof buf) < 0 || !proc_field(buf, "MemAvailable:", &kb))
    return 0;
  return (uint64_t)kb * 1024;
}

int ms__prim_prefault(void *p, size_t len, int huge) {
  long page = ms__prim_page_size();
  uintptr_t a = ((uintptr_t)p + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
  uintptr_t e = ((uintptr_t)p + len) & ~(uintptr_t)(page - 1);
#ifdef MADV_HUGEPAGE
  if (huge && e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
  (void)huge;
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
  volatile char *c = p;
  if (e > a && madvise((void *)a, e - a, MADV_POPULATE_WRITE) != 0) {
    if (errno == ENOMEM || errno == EFAULT || errno == EHWPOISON) return -ENOMEM;
    // An older kernel (EINVAL): write every page instead.
    for (size_t i = 0; i < len; i += (size_t)page) c[i] = c[i];
  }
  if (len) c[0] = c[0], c[len - 1] = c[len - 1];  // the partial pages at either end
  return 0;
}

long ms__prim_minor_faults(void) {
  struct rusage ru;
  return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt : 0;
}

int ms__prim_thread_faults(int64_t *minflt, int64_t *majflt) {
  struct rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru) != 0) return -errno;
  *minflt = ru.ru_minflt;
  *majflt = ru.ru_majflt;
  return 0;
}

int ms__prim_task_faults(pid_t tid, int64_t *minflt, int64_t *majflt) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/self/task/%lld/stat", (long long)tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  int e = errno;
  close(fd);
  if (n <= 0) return n < 0 ? -e : -EINVAL;
  buf[n] = '\0';
  // After the name's ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt.
  char *p = strrchr(buf, ')');
  long long v[10];
  int k = 0;
  for (p = p ? p + 1 : NULL; p && k < 10; k++) {
    while (*p == ' ') p++;
    if (!*p) break;
    v[k] = k == 0 ? 0 : strtoll(p, NULL, 10);
    p += strcspn(p, " ");
  }
  if (k < 10) return -EINVAL;
  *minflt = v[7];
  *majflt = v[9];
  return 0;
}

int ms__prim_statm_open(void) {
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

int ms__prim_statm_open_pid(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%lld/statm", (long long)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

void ms__prim_statm_close(int fd) {
  if (fd >= 0) close(fd);
}

int64_t ms__prim_statm_anon(int fd) {
  char b[160];
  ssize_t n = pread(fd, b, sizeof b - 1, 0);
  if (n <= 0) return n < 0 ? -errno : -EIO;
  b[n] = 0;
  // size resident shared text lib data dt, in pages
  int64_t f[3] = {0, 0, 0};
  const char *p = b;
  for (int i = 0; i < 3; i++) {
    if (*p < '0' || *p > '9') return -EIO;
    while (*p >= '0' && *p <= '9') f[i] = f[i] * 10 + (*p++ - '0');
    if (*p++ != ' ') return -EIO;
  }
  int64_t anon = f[1] - f[2];
  return (anon < 0 ? 0 : anon) * (int64_t)ms__prim_page_size();
}


static int64_t clock_ns(clockid_t clk) {
  struct timespec ts;
  if (clock_gettime(clk, &ts) != 0) return -1;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t ms__prim_thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }
int64_t ms__prim_process_cpu_ns(void) { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

int64_t ms__prim_children_cpu_ns(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_CHILDREN, &ru) != 0) return -1;
  return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
         ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}
int64_t ms__prim_clock_cpu_ns(clockid_t clk) { return clock_ns(clk); }

int ms__prim_sched_open(void) {
  int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

int64_t ms__prim_sched_run_delay(int fd) {
  // "<on-CPU ns> <run-queue wait ns> <timeslices>\n"
  char buf[96];
  if (fd < 0) return -1;
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  uint64_t run, wait;
  if (sscanf(buf, "%" SCNu64 " %" SCNu64, &run, &wait) != 2 || wait > INT64_MAX) return -1;
  return (int64_t)wait;
}

void ms__prim_sched_close(int fd) {
  if (fd >= 0) close(fd);
}

int64_t ms__prim_thread_run_delay(void) {
  int e = errno;
  int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  char buf[96];
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  errno = e;
  if (n <= 0) return -1;
  // The second of "<on-CPU ns> <run-queue wait ns> <timeslices>", parsed by
  // hand: sscanf is not async-signal-safe.
  const char *p = buf, *end = buf + n;
  while (p < end && *p != ' ') p++;
  if (p++ == end) return -1;
  const char *digits = p;
  int64_t v = 0;
  while (p < end && *p >= '0' && *p <= '9' && v <= (INT64_MAX - 9) / 10) v = v * 10 + (*p++ - '0');
  return p > digits && (p == end || *p == ' ' || *p == '\n') ? v : -1;
}

static char cpu_model[256];
static pthread_once_t cpu_model_once = PTHREAD_ONCE_INIT;

// cpu_model from /proc/cpuinfo ("unknown" if it does not say); run once.
static void read_cpu_model(void) {
  snprintf(cpu_model, sizeof cpu_model, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    // x86 says "model name", aarch64 may only say "CPU part"/"Hardware".
    if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Hardware", 8) == 0) {
      char *colon = strchr(line, ':');
      if (!colon) continue;
      colon++;
      while (*colon == ' ' || *colon == '\t') colon++;
      colon[strcspn(colon, "\n")] = '\0';
      snprintf(cpu_model, sizeof cpu_model, "%s", colon);
      break;
    }
  }
  fclose(f);
}

const char *ms__prim_cpu_model(void) {
  // Every caller waits for the one reading; the buffer never changes after.
  pthread_once(&cpu_model_once, read_cpu_model);
  return cpu_model;
}

/* ---- the host's description and glibc's allocator (calibration) ---------- */
// (Included here, with the block that needs them.)
#include <gnu/libc-version.h>
#include <malloc.h>
#include <sys/utsname.h>
#include <time.h>

#include "memstub/calib.h"

const char *memstub_host_arch(void) {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__i386__)
  return "i386";
#elif defined(__arm__)
  return "arm";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#elif defined(__powerpc64__)
  return "ppc64";
#else
  return "unknown";
#endif
}

void ms__prim_kernel(char *buf, size_t cap) {
  struct utsname u;
  if (uname(&u) == 0) snprintf(buf, cap, "%.60s %.60s", u.sysname, u.release);
  else snprintf(buf, cap, "unknown");
}

void ms__prim_libc(char *buf, size_t cap) {
  snprintf(buf, cap, "glibc %s", gnu_get_libc_version());
}

void ms__prim_utc_date(char *buf, size_t cap) {
  time_t now = time(NULL);
  struct tm tm;
  snprintf(buf, cap, "unknown");
  if (gmtime_r(&now, &tm)) strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int ms__prim_heap_mmap_threshold(long bytes) {
  return mallopt(M_MMAP_THRESHOLD, (int)bytes) == 1 ? 0 : -EINVAL;
}

void ms__prim_heap_trim(void) { malloc_trim(0); }

int ms__prim_self_exe(char *buf, size_t cap) {
  if (cap == 0) return -ERANGE;
  buf[0] = '\0';
  ssize_t n = readlink("/proc/self/exe", buf, cap);
  if (n < 0) return -errno;
  if ((size_t)n >= cap) {
    buf[0] = '\0';
    return -ENAMETOOLONG;
  }
  buf[n] = '\0';
  return 0;
}

/* ---- the process's resource limits ------------------------------------------ */

uint64_t ms__prim_mem_limit(int which, uint64_t *used) {
  static const int res[] = {RLIMIT_AS, RLIMIT_DATA, RLIMIT_STACK};
  static const char *const field[] = {"VmSize:", "VmData:", "VmStk:"};
  if (used) *used = 0;
  if (which < 0 || which > MS__PRIM_LIMIT_STACK) return UINT64_MAX;
  struct rlimit rl;
  uint64_t limit = getrlimit(res[which], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                       ? (uint64_t)rl.rlim_cur
                       : UINT64_MAX;
  if (!used) return limit;
  char buf[4096];
  unsigned long long kb;
  if (read_proc("/proc/self/status", buf, sizeof buf) >= 0 && proc_field(buf, field[which], &kb))
    *used = (uint64_t)kb * 1024;
  return limit;
}

int ms__prim_realtime_in(int64_t ns, struct timespec *ts) {
  if (clock_gettime(CLOCK_REALTIME, ts) != 0) return -errno;
  int64_t nsec = ts->tv_nsec + ns % 1000000000;
  ts->tv_sec += (time_t)(ns / 1000000000 + nsec / 1000000000);
  ts->tv_nsec = (long)(nsec % 1000000000);
  return 0;
}

int64_t ms__prim_realtime_ns(void) {
  struct timespec ts;
  return clock_gettime(CLOCK_REALTIME, &ts) == 0 ? (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec : 0;
}

int64_t ms__prim_heap_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 m = mallinfo2();
  return (int64_t)(m.uordblks + m.hblkhd);
#elif defined(__GLIBC__)
  struct mallinfo m = mallinfo();
  return (int64_t)(unsigned)m.uordblks + (int64_t)(unsigned)m.hblkhd;
#else
  return 0;
#endif
}

void ms__prim_cmdline(char *buf, size_t cap) {
  buf[0] = '\0';
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t r = read(fd, buf, cap - 1);
  close(fd);
  if (r <= 0) return;
  for (ssize_t i = 0; i < r; i++)
    if (buf[i] == '\0') buf[i] = ' ';
  while (r > 0 && buf[r - 1] == ' ') r--;
  buf[r] = '\0';
}
