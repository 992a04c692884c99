// memstub record: the recorder's status file, and a trace salvaged from the
// journal of a process that died past the recorder's exit path.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/trace.h"
#include "ms_common.h"
#include "../recorder/protocol.h"
#include "record.h"

/* ---- the recorder's status file (recorder/protocol.h) ---- */

// An empty file beside the trace (the status file, the journal), its path
// into path[PATH_MAX]. 0, or the exit status.
int ms_record_status_create(const char *abs, char *path) {
  snprintf(path, PATH_MAX, "%s", abs);
  char *slash = strrchr(path, '/');
  size_t dl = (size_t)(slash - path) + 1;
  if (dl + 32 >= PATH_MAX) return ms_cli_error("%s: path too long", abs);
  snprintf(path + dl, PATH_MAX - dl, ".memstub-record-XXXXXX");
  int fd = mkostemp(path, O_CLOEXEC);
  if (fd < 0) return ms_cli_error("%s: cannot create a file beside the trace: %s", path, strerror(errno));
  close(fd);
  return 0;
}

static long long status_value(const char *text, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\n%s=", key);
  const char *p = strstr(text, pat);
  return p ? strtoll(p + strlen(pat), NULL, 10) : 0;
}

// Read and remove the status file.
rec_status ms_record_status_take(const char *path) {
  rec_status st = {0};
  char text[2048] = "\n";
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, text + 1, sizeof text - 2);
    if (n > 0) text[n + 1] = '\0';
    close(fd);
  }
  unlink(path);
  st.present = status_value(text, MS__REC_ST_STARTED) == 1;
  st.finished = status_value(text, MS__REC_ST_FINISHED);
  st.signal = status_value(text, MS__REC_ST_SIGNAL);
  st.written = status_value(text, MS__REC_ST_WRITTEN);
  st.err = status_value(text, MS__REC_ST_ERRNO);
  st.nothing = status_value(text, MS__REC_ST_WHY);
  st.occurrences = status_value(text, MS__REC_ST_OCCURRENCES);
  st.threads = status_value(text, MS__REC_ST_THREADS);
  st.kids_cpu_ns = status_value(text, MS__REC_ST_KIDS_CPU);
  const char *f = strstr(text, "\n" MS__REC_ST_FUNCTION "=");
  if (f) {
    f += strlen(MS__REC_ST_FUNCTION) + 2;
    snprintf(st.function, sizeof st.function, "%.*s", (int)strcspn(f, "\n"), f);
  }
  return st;
}

/* ---- salvage: the journal of a process killed by SIGKILL (protocol.h) ---- */

typedef struct salvage_row {
  ms__rec_row r;
  uint64_t thread_no, seq;
} salvage_row;

static int by_time(const void *a, const void *b) {
  const salvage_row *x = a, *y = b;
  if (x->r.t != y->r.t) return x->r.t < y->r.t ? -1 : 1;
  if (x->thread_no != y->thread_no) return x->thread_no < y->thread_no ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

// Room for k more rows in *rows (capacity *cap): 0, or -1.
static int rows_room(salvage_row **rows, size_t n, size_t *cap, size_t k) {
  if (n + k <= *cap) return 0;
  size_t nc = 2 * (n + k);
  salvage_row *nr = realloc(*rows, nc * sizeof *nr);
  if (!nr) return -1;
  *rows = nr;
  *cap = nc;
  return 0;
}

// Every committed row of the journal at path, time-ordered, into *out: the
// chunks' rows, and each thread's open bucket as the recorder would have
// closed it. The number of rows, or -1 when the journal is unusable.
static long long journal_rows(const char *path, ms__rec_journal_head *head, salvage_row **out) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat sb;
  ms__rec_chunk *c = malloc(sizeof *c);
  if (fstat(fd, &sb) != 0 || !c || pread(fd, head, sizeof *head, 0) != (ssize_t)sizeof *head ||
      head->magic != MS__REC_JOURNAL_MAGIC) {
    free(c);
    close(fd);
    return -1;
  }
  salvage_row *rows = NULL;
  size_t n = 0, cap = 0;
  // Entries are whole pages; one whose head was never written (the process
  // died in between) is stepped over a page at a time.
  for (off_t off = MS__REC_JOURNAL_HEAD; off < sb.st_size;) {
    ms__rec_thead th;
    if (pread(fd, &th, sizeof th, off) != (ssize_t)sizeof th) break;
    int is_ts = th.magic == MS__REC_JOURNAL_TSTATE, is_chunk = th.magic == MS__REC_JOURNAL_MAGIC;
    if ((!is_ts && !is_chunk) || th.bytes % 4096 != 0 || th.bytes < 4096) {
      off += 4096;
      continue;
    }
    off += (off_t)th.bytes;
    if (is_ts) {
      if (!th.b.active) continue;
      if (rows_room(&rows, n, &cap, 2) < 0) break;
      rows[n] = (salvage_row){{th.b.t0, th.b.maxs, th.b.maxh, th.b.tag}, th.thread_no, n};
      n++;
      if (th.b.ls != th.b.maxs || th.b.lh != th.b.maxh) {
        rows[n] = (salvage_row){{th.b.lt, th.b.ls, th.b.lh, th.b.tag}, th.thread_no, n};
        n++;
      }
      continue;
    }
    if (th.bytes < sizeof *c ||
        pread(fd, c, sizeof *c, off - (off_t)th.bytes) != (ssize_t)sizeof *c ||
        c->n > MS__REC_CHUNK_ROWS || rows_room(&rows, n, &cap, c->n) < 0)
      continue;
    for (size_t i = 0; i < c->n; i++, n++)
      rows[n] = (salvage_row){c->rows[i], c->thread_no, n};
  }
  free(c);
  close(fd);
  if (n) qsort(rows, n, sizeof *rows, by_time);
  *out = rows;
  return (long long)n;
}

/* The trace from the journal of a killed process: the rows it had committed
 * and each thread's open bucket, kept as the trace at exit
 * would keep them (regions, --occurrence, time from the origin), without
 * the final coalescing; its peaks from those rows. Nothing is written when
 * what the options ask for never came before the end (as the recorder
 * itself would write nothing at exit). */
int ms_record_salvage(const rec_opts *o, const char *journal, const char *abs, const char *why,
                      long long *occurrences) {
  ms__rec_journal_head head;
  salvage_row *rows;
  *occurrences = 0;
  long long n = journal_rows(journal, &head, &rows);
  if (n <= 0) {
    free(rows);
    return MS_SALVAGE_NONE;
  }
  // Rows of several threads: every thread was recorded (the default), whose
  // thread columns the journal does not hold yet.
  for (long long i = 1; i < n; i++)
    if (rows[i].thread_no != rows[0].thread_no) {
      free(rows);
      return MS_SALVAGE_THREADS;
    }
  // Occurrences begun by the recorded thread: the largest region tag (every
  // row carries the recorded thread's current one, and a begin is a row).
  for (long long i = 0; i < n; i++)
    if ((rows[i].r.tag & ~MS__REC_ROW_EXACT) > *occurrences)
      *occurrences = rows[i].r.tag & ~MS__REC_ROW_EXACT;
  int regions = *occurrences > 0;
  if (o->occ > 0 && *occurrences < o->occ) {
    free(rows);
    return MS_SALVAGE_NO_OCCURRENCE;
  }
  if (o->functions[0] && !regions) {  // --function scopes the trace to its calls
    free(rows);
    return MS_SALVAGE_NO_REGION;
  }
  double ns_per_raw = head.use_tsc && head.raw_per_ns > 0 ? 1.0 / head.raw_per_ns : 1.0;
  memstub_trace *t = memstub_trace_create();
  int col = regions && t ? memstub_trace_add_column(t, "region") : -1;
  int rc = t ? 0 : -ENOMEM;
  int64_t origin = regions ? -1 : head.origin_raw, last_stack = 0, prev = 0;
  int64_t peak_stack = 0, peak_heap = 0;
  for (long long i = 0; i < n && rc == 0; i++) {
    ms__rec_row x = rows[i].r;
    x.tag &= ~MS__REC_ROW_EXACT;
    if (regions ? x.tag == 0 || (o->occ > 0 && x.tag != o->occ) : x.t < origin) continue;
    if (origin < 0) origin = x.t;
    if (x.stack >= 0) last_stack = x.stack;
    int64_t ts = (int64_t)((double)(x.t - origin) * ns_per_raw);
    if (ts < prev) ts = prev;
    prev = ts;
    int64_t heap = x.heap < 0 ? 0 : x.heap;
    if (last_stack > peak_stack) peak_stack = last_stack;
    if (heap > peak_heap) peak_heap = heap;
    rc = memstub_trace_append(t, ts, last_stack, heap);
    if (rc == 0 && col >= 0) memstub_trace_extra_row(t, t->n - 1)[col] = x.tag;
  }
  free(rows);
  char num[256];
  snprintf(num, sizeof num, "the process %s; rows salvaged from the recorder's journal", why);
  if (rc == 0 && t->n == 0) rc = -ENODATA;
  if (rc == 0) rc = memstub_trace_set_meta(t, "source", "memstub-record");
  if (rc == 0) rc = memstub_trace_set_meta(t, "record.exit", num);
  if (rc == 0) rc = memstub_trace_set_meta(t, "record.salvaged", "1");
  snprintf(num, sizeof num, "%lld", (long long)head.res_ns);
  if (rc == 0) rc = memstub_trace_set_meta(t, "record.resolution_ns", num);
  const char *thread = strcmp(o->thread, "auto") == 0     ? "all"  // one thread
                       : strcmp(o->thread, "region") == 0 ? "the first thread that opened a region"
                                                          : o->thread;
  if (rc == 0) rc = memstub_trace_set_meta(t, MS__REC_META_THREAD, thread);
  if (rc == 0) rc = memstub_trace_set_meta(t, MS__REC_META_HEAP_SCOPE, o->heap);
  // The peaks of the rows salvaged (the recorder's own figures died with it).
  snprintf(num, sizeof num, "%lld", (long long)peak_heap);
  if (rc == 0) rc = memstub_trace_set_meta(t, MS__REC_META_PEAK_HEAP, num);
  snprintf(num, sizeof num, "%lld", (long long)peak_stack);
  if (rc == 0) rc = memstub_trace_set_meta(t, MS__REC_META_PEAK_STACK, num);
  const char *from = !regions             ? "the recorded thread's stack top"
                     : o->functions[0]    ? "the frame that called the --function (or memstub_probe_begin)"
                                          : "the frame that called memstub_probe_begin";
  if (rc == 0) rc = memstub_trace_set_meta(t, MS__REC_META_STACK_FROM, from);
  memstub_error err;
  if (rc == 0) rc = memstub_trace_write(t, abs, &err);
  memstub_trace_free(t);
  return rc == 0 ? MS_SALVAGE_WRITTEN : MS_SALVAGE_NONE;
}

/* The recorded process ended past the recorder's exit path (why says how):
 * its trace salvaged from the journal, or why there is none. -1 when a trace
 * was written (read it back as usual), else the exit status. Nothing is
 * salvaged when what the options ask for never came before the end: a
 * --function the recorder could not patch, or never called, or an
 * --occurrence beyond the last (the recorder would write nothing at exit). */
int ms_record_salvage_said(const rec_opts *o, const rec_status *st, const char *journal,
                           const char *abs, const char *why) {
  if (st->function[0]) {
    ms_cli_error("%s: no trace written: %s (and then the recorded process %s)", o->out,
                 st->function, why);
    return MS_EXIT_CHECK;
  }
  long long occ = 0;
  int sv = ms_record_salvage(o, journal, abs, why, &occ);
  if (sv == MS_SALVAGE_WRITTEN) {
    ms_cli_warn("%s: the recorded process %s: the trace holds what the recorder had recorded "
                "until then, salvaged from its journal (record.salvaged)",
                o->out, why);
    return -1;
  }
  if (sv == MS_SALVAGE_NO_OCCURRENCE && occ == 0)
    ms_cli_error("%s: no trace written: --occurrence %lld, but the recorded thread opened no "
                 "probe region before the recorded process %s",
                 o->out, o->occ, why);
  else if (sv == MS_SALVAGE_NO_OCCURRENCE)
    ms_cli_error("%s: no trace written: --occurrence %lld never came: the probe regions ran only "
                 "%lld occurrence%s before the recorded process %s",
                 o->out, o->occ, occ, occ == 1 ? "" : "s", why);
  else if (sv == MS_SALVAGE_THREADS)
    ms_cli_error("%s: no trace: the recorded process %s, and the journal of several recorded "
                 "threads is not salvaged yet (docs/recording.md, \"All threads\"); record with "
                 "--thread main to keep the main thread's rows when the process may be killed",
                 o->out, why);
  else if (sv == MS_SALVAGE_NO_REGION)
    ms_cli_error("%s: no trace written: --function %s: never called on the recorded thread "
                 "before the recorded process %s",
                 o->out, o->functions, why);
  else
    ms_cli_error("%s: no trace: the recorded process %s, so the recorder could not write what it "
                 "had recorded",
                 o->out, why);
  return MS_EXIT_CHECK;
}
