// memstub record --thread all: the trace read back field by field for the
// summary (its thread columns, docs/recording.md "All threads", have empty
// fields and words the trace library does not read yet).
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ms_common.h"
#include "record.h"

#define MAX_THR 65535
#define MAX_COLS 64

typedef struct thr_sum {
  int seen, peer, exited, joined_by;
  int64_t t0, t1, peak_heap, peak_stack, last_heap;
  uint64_t rows, xfrees, xbytes;
} thr_sum;

// Field i of the line (fields separated by commas, cut in place): its start.
static int split(char *line, char **f, int max) {
  int n = 0;
  f[n++] = line;
  for (char *p = line; *p; p++)
    if (*p == ',') {
      *p = '\0';
      if (n == max) return -1;
      f[n++] = p + 1;
    }
  return n;
}

static int col_of(char **names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return i;
  return -1;
}

// An integer field (empty: *v untouched, 0 returned when may_be_empty); -1 when not one.
static int field(const char *s, int64_t *v, int may_be_empty) {
  if (!*s) return may_be_empty ? 0 : -1;
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (*end || errno) return -1;
  *v = x;
  return 1;
}

int ms_record_threads_summary(const char *out, const char *abs, int quiet) {
  FILE *f = fopen(abs, "r");
  if (!f) return ms_cli_error("%s: cannot read the trace: %s", out, strerror(errno)), -1;
  static char line[8192], hdr[8192];
  char *names[MAX_COLS], *fl[MAX_COLS];
  int ncol = 0, lineno = 0, rc = -1;
  thr_sum *ts = calloc(MAX_THR, sizeof *ts);
  uint64_t rows = 0, xfrees = 0, joins = 0;
  int nthr = 0, c_t = -1, c_s = -1, c_h = -1, c_th = -1, c_ev = -1, c_peer = -1, c_xf = -1,
      c_xb = -1;
  int64_t prev_t = 0;
  if (!ts) goto done;
  char msg[256];
#define BAD(...)                                        \
  do {                                                  \
    snprintf(msg, sizeof msg, __VA_ARGS__);             \
    ms_cli_error("%s:%d: %s", out, lineno, msg);        \
    goto done;                                          \
  } while (0)
  while (fgets(line, sizeof line, f)) {
    lineno++;
    size_t len = strlen(line);
    if (len && line[len - 1] == '\n') line[--len] = '\0';
    if (line[0] == '#') continue;
    if (!ncol) {
      memcpy(hdr, line, len + 1);
      ncol = split(hdr, names, MAX_COLS);
      c_t = col_of(names, ncol, "time_ns"), c_s = col_of(names, ncol, "stack_bytes");
      c_h = col_of(names, ncol, "heap_bytes"), c_th = col_of(names, ncol, "thread");
      c_ev = col_of(names, ncol, "thread_event"), c_peer = col_of(names, ncol, "thread_peer");
      c_xf = col_of(names, ncol, "xfree_from"), c_xb = col_of(names, ncol, "xfree_bytes");
      if (ncol < 0 || c_t < 0 || c_s < 0 || c_h < 0 || c_th < 0 || c_ev < 0 || c_peer < 0 ||
          c_xf < 0 || c_xb < 0 || col_of(names, ncol, "xfree_alloc_ns") < 0)
        BAD("header row: the columns of --thread all are missing (thread, thread_event, "
            "thread_peer, xfree_from, xfree_bytes, xfree_alloc_ns)");
      continue;
    }
    if (split(line, fl, MAX_COLS) != ncol) BAD("%d fields expected", ncol);
    int64_t t, s, h, th, peer = -1, xf = -1, xb = 0;
    if (field(fl[c_t], &t, 0) < 0 || t < prev_t) BAD("time_ns: not a time after the last one");
    if (field(fl[c_s], &s, 0) < 0 || field(fl[c_h], &h, 0) < 0) BAD("stack_bytes or heap_bytes");
    if (field(fl[c_th], &th, 0) < 0 || th < 0) BAD("thread: not a thread number");
    if (field(fl[c_peer], &peer, 1) < 0 || field(fl[c_xf], &xf, 1) < 0 ||
        field(fl[c_xb], &xb, 1) < 0)
      BAD("thread_peer, xfree_from or xfree_bytes: not an integer");
    prev_t = t;
    rows++;
    if (th >= MAX_THR) continue;  // summarised as rows only
    thr_sum *x = &ts[th];
    const char *ev = fl[c_ev];
    if (!x->seen) {
      if (strcmp(ev, "start") != 0) BAD("thread %" PRId64 ": its first row is not its start", th);
      x->seen = 1, x->peer = (int)peer, x->t0 = t, x->joined_by = -1;
      if (th + 1 > nthr) nthr = (int)th + 1;
    } else if (strcmp(ev, "start") == 0) {
      BAD("thread %" PRId64 " starts twice", th);
    }
    if (strcmp(ev, "exit") == 0) x->exited = 1;
    if (strcmp(ev, "join") == 0) {
      joins++;
      if (peer >= 0 && peer < MAX_THR) ts[peer].joined_by = (int)th;
    }
    if (xf >= 0) {
      xfrees++;
      x->xfrees++;
      x->xbytes += (uint64_t)xb;
    }
    x->rows++;
    x->t1 = t;
    x->last_heap = h;
    if (h > x->peak_heap) x->peak_heap = h;
    if (s > x->peak_stack) x->peak_stack = s;
  }
  if (!rows) BAD("no rows");
  rc = 0;
  if (!quiet) {
    char d[32];
    ms_cli_note("%s: %" PRIu64 " rows over %s, %d threads, %" PRIu64 " cross-thread free row%s, %" PRIu64
                " join%s",
                out, rows, ms__fmt_ns(prev_t, d, sizeof d), nthr, xfrees, xfrees == 1 ? "" : "s",
                joins, joins == 1 ? "" : "s");
    fprintf(stderr, "  %-7s %6s %8s %14s %14s %12s %12s %9s %s\n", "thread", "peer", "rows",
            "start (ns)", "end (ns)", "peak heap", "peak stack", "xfrees", "joined by");
    int shown = 0;
    for (int i = 0; i < nthr; i++) {
      const thr_sum *x = &ts[i];
      if (!x->seen) continue;
      if (++shown > 16) {
        fprintf(stderr, "  ... and %d more threads\n", nthr - i);
        break;
      }
      char jb[16] = "-";
      if (x->joined_by >= 0) snprintf(jb, sizeof jb, "%d", x->joined_by);
      fprintf(stderr,
              "  %-7d %6d %8" PRIu64 " %14" PRId64 " %14" PRId64 " %12" PRId64 " %12" PRId64
              " %9" PRIu64 " %s\n",
              i, x->peer, x->rows, x->t0, x->t1, x->peak_heap, x->peak_stack, x->xfrees, jb);
    }
  }
done:
#undef BAD
  free(ts);
  fclose(f);
  return rc;
}
