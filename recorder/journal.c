/* recorder/journal.c: the files `memstub record` reads when the process
 * cannot write the trace itself (recorder/protocol.h): the journal, whose
 * pages hold every thread's chunks of rows and open bucket so that a SIGKILL
 * leaves them to salvage, and the status file, which says how the recording
 * ended (written with write(2) only: it may run in a signal handler). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
/* ---- the journal: chunks as pages of a file, so that a SIGKILL leaves them
 * for `memstub record` to salvage (protocol.h) ---- */

void ms__rec_journal_init(void) {
  if (!ms__rec.journal[0]) return;
  // A new file, not the old one truncated: after an exec, a child the old
  // image forked may still map the old one's pages.
  unlink(ms__rec.journal);
  int fd = open(ms__rec.journal, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  void *p = MAP_FAILED;
  if (fd >= 0) {
    if (fallocate(fd, 0, 0, MS__REC_JOURNAL_HEAD) == 0)
      p = mmap(NULL, MS__REC_JOURNAL_HEAD, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
  }
  if (p == MAP_FAILED) {
    ms__rec.journal_off = 1;
    return;
  }
  ms__rec_journal_head *h = p;
  h->use_tsc = ms__rec.use_tsc;
  h->raw_per_ns = ms__rec.raw_per_ns;
  h->origin_raw = ms__rec.origin_raw;
  h->res_ns = ms__rec.res_ns;
  h->occurrence = ms__rec.occurrence;
  __atomic_store_n(&h->magic, MS__REC_JOURNAL_MAGIC, __ATOMIC_RELEASE);
  ms__rec.jhead = h;
}

// A journal entry of n bytes, page-rounded (internal.h); NULL: anonymous memory then.
void *ms__rec_journal_slot(size_t n) {
  if (!ms__rec.jhead || __atomic_load_n(&ms__rec.journal_off, __ATOMIC_RELAXED)) return NULL;
  uint64_t bytes = (n + 4095) & ~(uint64_t)4095;
  uint64_t at = __atomic_fetch_add(&ms__rec.journal_bytes, bytes, __ATOMIC_RELAXED);
  if (at + bytes > MS__REC_JOURNAL_MAX) {
    __atomic_store_n(&ms__rec.journal_off, 1, __ATOMIC_RELAXED);
    return NULL;
  }
  off_t off = (off_t)(MS__REC_JOURNAL_HEAD + at);
  // Opened by path each time: a daemon may have closed every descriptor.
  int fd = open(ms__rec.journal, O_RDWR | O_CLOEXEC);
  void *p = MAP_FAILED;
  if (fd >= 0) {
    // Blocks reserved (a store to a page the disk has no room for would be
    // SIGBUS); fallocate never shrinks the file under a thread that is ahead.
    if (fallocate(fd, 0, off, (off_t)bytes) == 0)
      p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
    close(fd);
  }
  if (p == MAP_FAILED) {
    __atomic_store_n(&ms__rec.journal_off, 1, __ATOMIC_RELAXED);
    return NULL;
  }
  ((uint64_t *)p)[2] = bytes;  // the entry's size (protocol.h)
  return p;
}

// "key=v\n" at b + *n (b holds 1024 bytes).
static void status_line(char *b, size_t *n, const char *key, int64_t v) {
  size_t k = strlen(key);
  if (*n + k + 24 > 1024) return;
  memcpy(b + *n, key, k);
  *n += k;
  b[(*n)++] = '=';
  char d[24], *p = d + sizeof d;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do *--p = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0) *--p = '-';
  memcpy(b + *n, p, (size_t)(d + sizeof d - p));
  *n += (size_t)(d + sizeof d - p);
  b[(*n)++] = '\n';
}

void ms__rec_status(int how, int sig, int written, int err, int why) {
  if (!ms__rec.status[0]) return;
  // While running: only the recording process, never over its outcome.
  if (how < 0 && (getpid() != ms__rec.pid || __atomic_load_n(&ms__rec.finished, __ATOMIC_ACQUIRE)))
    return;
  char b[1024];
  size_t n = 0;
  status_line(b, &n, MS__REC_ST_STARTED, 1);
  // Decided before the end; a lost block (out of memory) stays said.
  if (how < 0 && ms__rec_lost()) why = MS__REC_NOTHING_MEMORY;
  if (how < 0 && why) status_line(b, &n, MS__REC_ST_WHY, why);
  if (how >= 0) {
    status_line(b, &n, MS__REC_ST_FINISHED, how + 1);
    status_line(b, &n, MS__REC_ST_SIGNAL, sig);
    status_line(b, &n, MS__REC_ST_WRITTEN, written);
    status_line(b, &n, MS__REC_ST_ERRNO, err);
    status_line(b, &n, MS__REC_ST_WHY, why);
    status_line(b, &n, MS__REC_ST_OCCURRENCES, ms__rec.rec ? ms__rec.rec->occ : 0);
    status_line(b, &n, MS__REC_ST_THREADS,
                __atomic_load_n(&ms__rec.threads_created, __ATOMIC_RELAXED));
    status_line(b, &n, MS__REC_ST_KIDS_CPU, ms__prim_children_cpu_ns());
  }
  // A --function problem as soon as it is known (a SIGKILL may come before
  // the end): "function=TEXT\n", one line (no newline in it).
  const char *fp = ms__rec_fn_problem();
  size_t k = fp ? strlen(fp) : 0, kk = strlen(MS__REC_ST_FUNCTION);
  if (fp && n + kk + k + 2 < sizeof b) {
    memcpy(b + n, MS__REC_ST_FUNCTION, kk);
    b[n + kk] = '=';
    memcpy(b + n + kk + 1, fp, k);
    n += kk + k + 1;
    b[n++] = '\n';
  }
  int e = errno;
  int fd = open(ms__rec.status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    size_t off = 0;
    while (off < n) {
      ssize_t w = write(fd, b + off, n - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += (size_t)w;
    }
    close(fd);
  }
  errno = e;
}
