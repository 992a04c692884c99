/* recorder/follow.c: `memstub record --follow-children` (docs/recording.md,
 * "Child processes"). Every process below the recorded one records too: a
 * program exec'd or spawned there starts recording at its constructor, a
 * forked child starts afresh in the fork handler. Each writes its own trace
 * beside the root's, named after its pid and command, and announces itself
 * with one line in the registry file the command reads after the run. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bridge.h"
#include "internal.h"
#include "table.h"

extern void *__libc_stack_end __attribute__((weak));

/* ---- fork(): where its caller's stack was ----
 * A forked child's first row is its state at the fork, so its stack is
 * measured at the program's call of fork(), not inside the fork handler,
 * where glibc's fork and the recorder's own frames sit below it (8.8 KiB
 * more than the program's stack). */

static TLS uintptr_t g_fork_sp;  // the caller's stack pointer during fork(); 0 outside
static pid_t (*real_fork)(void);

EXPORT pid_t fork(void) {
  if (!real_fork) {
    int busy = ms__rec_busy;
    ms__rec_busy = 1;  // dlsym's allocations are not the program's
    real_fork = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
    ms__rec_busy = busy;
    if (!real_fork) {
      errno = ENOSYS;
      return -1;
    }
  }
  uintptr_t was = g_fork_sp;
  g_fork_sp = MS__CALLER_SP();
  pid_t pid = real_fork();
  g_fork_sp = was;
  return pid;
}

// The process's command (/proc/self/comm, as exec set it) with every byte
// outside [A-Za-z0-9._-] made '_', into b (cap > 1); "process" when unknown.
static void command_name(char *b, size_t cap) {
  int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, b, cap - 1) : -1;
  if (fd >= 0) close(fd);
  if (n > 0 && b[n - 1] == '\n') n--;
  if (n <= 0) {
    snprintf(b, cap, "process");
    return;
  }
  b[n] = 0;
  for (ssize_t i = 0; i < n; i++) {
    char c = b[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-';
    if (!ok) b[i] = '_';
  }
}

/* The root's trace path with ".PID.COMMAND" before its extension (after its
 * last '.' when the file name has one), into out[cap]; -1 when it does not fit. */
static int child_path(const char *root, pid_t pid, const char *cmd, char *out, size_t cap) {
  const char *slash = strrchr(root, '/');
  const char *dot = strrchr(slash ? slash + 1 : root, '.');
  size_t stem = dot && dot != (slash ? slash + 1 : root) ? (size_t)(dot - root) : strlen(root);
  int n = snprintf(out, cap, "%.*s.%ld.%s%s", (int)stem, root, (long)pid, cmd,
                   stem < strlen(root) ? root + stem : "");
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

// One line "pid<TAB>ppid<TAB>command<TAB>trace" appended to the registry in
// one write (O_APPEND: lines from processes running at once never mix).
static void announce(const char *registry, const char *cmd) {
  char line[PATH_MAX + 128];
  int n = snprintf(line, sizeof line, "%ld\t%ld\t%s\t%s\n", (long)ms__rec.pid, (long)ms__rec.ppid,
                   cmd, ms__rec.out);
  if (n <= 0 || (size_t)n >= sizeof line) return;
  int fd = open(registry, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t w = write(fd, line, (size_t)n);
  (void)w;  // a failed line: the command finds no trace for this pid and says so
  close(fd);
}

int ms__rec_follow_names(const char *root_out, const char *root_journal, const char *registry) {
  char cmd[64];
  command_name(cmd, sizeof cmd);
  if (child_path(root_out, ms__rec.pid, cmd, ms__rec.out, sizeof ms__rec.out) != 0) return -1;
  ms__rec.journal[0] = 0;
  if (root_journal && *root_journal &&
      snprintf(ms__rec.journal, sizeof ms__rec.journal, "%s.%ld", root_journal,
               (long)ms__rec.pid) >= (int)sizeof ms__rec.journal)
    ms__rec.journal[0] = 0;
  ms__rec.status[0] = 0;  // the status file is the root's
  ms__rec.is_child = 1;
  ms__rec.ppid = getppid();
  announce(registry, cmd);
  return 0;
}

/* A forked child: the parent's recording is not its own. Everything it
 * shared is dropped (its threads' states and chunks, which may be pages of
 * the parent's journal; the live-block table, epochs and region records; the mapped ranges) and it starts
 * over as a process of its own, from this moment, on the thread that forked.
 * pre: single-threaded (the fork handler), recording was on. */
__attribute__((noinline)) void ms__rec_follow_fork(const char *registry) {
  tstate *old = ms__rec_ts;
  // The program's stack at its fork() call; a fork made past the hook (a
  // library's internal one): the fork handler's caller, glibc's fork.
  uintptr_t sp = g_fork_sp ? g_fork_sp : MS__CALLER_SP();
  // The forking thread's stack top: its own when it was registered, else the
  // main thread's when the stack is that one, else here.
  uintptr_t top = old && old->top ? old->top : 0;
  if (!top && &__libc_stack_end && __libc_stack_end && (uintptr_t)__libc_stack_end > sp &&
      (uintptr_t)__libc_stack_end - sp < ((uintptr_t)1 << 30))
    top = (uintptr_t)__libc_stack_end;
  if (!top) top = sp;
  ms__rec_ts = NULL;
  ms__rec_sampler_forget();
  ms__rec_watch_forget();
  char root_out[PATH_MAX], root_journal[PATH_MAX];
  memcpy(root_out, ms__rec.out, sizeof root_out);
  memcpy(root_journal, ms__rec.journal, sizeof root_journal);
  if (ms__rec.is_child) {
    // Already a child's names: derive from the root's again.
    const char *out = getenv(MS__REC_ENV_OUTPUT), *jn = getenv(MS__REC_ENV_JOURNAL);
    if (!out || strlen(out) >= sizeof root_out) return;
    memcpy(root_out, out, strlen(out) + 1);
    root_journal[0] = 0;
    if (jn && strlen(jn) < sizeof root_journal) memcpy(root_journal, jn, strlen(jn) + 1);
  }
  // What the parent recorded stays the parent's.
  ms__rec.pid = getpid();
  ms__rec.jhead = NULL;
  ms__rec.journal_bytes = 0;
  ms__rec.journal_off = 0;
  ms__rec.threads_no = 0;
  ms__rec.timer_ok = 0;
  ms__rec.rec = NULL;
  ms__rec.rec_gone = 0;
  ms__rec.list = NULL;
  ms__rec.finished = 0;
  ms__rec.finish_how = ms__rec.finish_sig = 0;
  ms__rec.unknown_frees = ms__rec.chunk_fail = 0;
  ms__rec.stale_blocks = ms__rec.stale_bytes = ms__rec.reentered = 0;
  ms__rec.threads_created = ms__rec.threads_seen = 0;
  ms__rec_heap = 0;
  ms__rec_tag = 0;
  ms__rec_multi = 0;
  ms__rec.spawn_ns = -1;  // a forked child starts mid-run: nothing before it is its own
  ms__rec_epoch_reset();
  ms__rec_gen_reset();
  if (ms__rec_follow_names(root_out, root_journal, registry) != 0 || ms__rec_table_reset() != 0) {
    ms__rec.state = ST_PASSIVE;
    return;
  }
  ms__rec_mem_reset();
  ms__rec.raw0 = raw_now();
  ms__rec.ns0 = ms__prim_now_ns();
  ms__rec.origin_raw = ms__rec.raw0;
  ms__rec_journal_init();
  if (ms__rec.sample_hz > 0) ms__rec_sampler_install();
  __atomic_store_n(&ms__rec_on, 1, __ATOMIC_RELEASE);
  if (ms__rec.rec_ordinal != 0) return;  // the Nth thread this process creates
  tstate *ts = ms__rec_ts_register();
  if (ts) ms__rec_become_recorded(ts, top, (int64_t)(top - sp));
}
