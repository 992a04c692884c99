// heaptrack output (heaptrack.PROG.PID.zst or .gz, after heaptrack_interpret)
// into a trace (memstub/import.h, docs/recording.md "memstub import").
//
// The format is heaptrack's own (src/interpret/heaptrack_interpret.cpp writes
// it, src/analyze/accumulatedtracedata.cpp reads it): one event per line, a
// letter, a space and hexadecimal fields. The lines used here:
//   v HEAPTRACK_VERSION FILE_FORMAT_VERSION   (first)
//   X command line                            I PAGE_SIZE PHYSICAL_PAGES
//   a SIZE TRACE      allocation info n (numbered from 0 in order)
//   + INFO            an allocation of info INFO's size
//   - INFO            a deallocation of an allocation of info INFO
//   c MS              timestamp: ms since start (heaptrack's 10 ms timer, and at exit)
//   R PAGES           the process's RSS in pages (/proc/self/statm), after a c
//   A                 heaptrack attached to a running process
// s, t, i, S, # and blank lines hold symbols, traces, suppressions and
// comments; they are checked for form, not used. x and m lines belong to a raw
// file that heaptrack_interpret has not read: refused.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "internal.h"
#include "memstub/import.h"
#include "ms_common.h"
#include "ms_spawn.h"

// The call columns of issue 14 (memstub/work.h, docs/formats.md "Work
// columns"): heaptrack tells allocations from deallocations, not malloc from
// calloc, realloc or memalign, so allocations count as malloc.
#define HT_CLASSES 4
static const char *const ht_call_cols[2][HT_CLASSES] = {
    {"calls_malloc_tiny", "calls_malloc_small", "calls_malloc_medium", "calls_malloc_large"},
    {"calls_free_tiny", "calls_free_small", "calls_free_medium", "calls_free_large"}};

// Size class as memstub/work.h: tiny <= 64 B, small <= 1 KiB, medium below
// 128 KiB (glibc's mmap threshold), large from there on.
static int ht_class(uint64_t bytes) {
  return (bytes > 64) + (bytes > 1024) + (bytes >= 128 * 1024);
}

typedef struct ht_row {
  int64_t time_ns, heap, peak, rss_pages;  // rss_pages -1: no sample yet
  int64_t calls[2][HT_CLASSES];
} ht_row;

typedef struct ht_info {
  uint64_t size;
  uint64_t live;  // allocations of this info not yet deallocated
  int64_t top;    // with calls: the last of them made (an allocation's number), -1 none
} ht_info;

/* With calls (memstub_import_options.calls_path): each allocation and
 * deallocation in order. An allocation's block is numbered in order (its
 * address in the calls file 16 times its number plus one); a deallocation
 * ends the last live allocation of its info (heaptrack names the info, not
 * the block), whose number it gives. */
typedef struct ht_call {
  uint64_t block;  // the allocation's number
  uint64_t size;
  uint32_t row;    // the row it is counted in
  uint8_t plus;    // an allocation
} ht_call;

typedef struct ht {
  const char *name, *buf;
  size_t len, pos;
  long lineno;
  const char *l;  // the current line, without newline (and CR)
  size_t ll;
  memstub_error *err;
  unsigned file_version;
  int seen_v, attached;
  uint64_t heaptrack_version, page_size;
  char *cmd;
  ht_info *infos;
  size_t ninfo, capinfo;
  ht_row *rows;
  size_t nrows, caprows;
  ht_row cur;  // the state since the last row
  int dirty;   // events since the last row
  int64_t rss0;  // the first R sample, pages (-1: none)
  uint64_t allocs, frees;
  int with_calls;
  ht_call *calls;
  size_t ncalls, capcalls;
  int64_t *below;  // [allocs] with calls: the allocation of the same info live before it, -1 none
  size_t capbelow;
} ht;

// -EINVAL, with h->err "NAME:LINE:COL: fmt[ 'what']" (fmt is no format).
static int ht_fail(ht *h, size_t col, const char *fmt, const char *what) {
  char q[MS__QUOTE_MAX + 4];
  if (!what)
    memstub_error_set(h->err, -EINVAL, "%s:%ld:%zu: %s", h->name, h->lineno, col, fmt);
  else
    memstub_error_set(h->err, -EINVAL, "%s:%ld:%zu: %s '%s'", h->name, h->lineno, col, fmt,
                      ms__quote(what, strlen(what), 40, q));
  // Said here, not taken from memstub_error_set: callers rely on a refusal
  // being negative (ht_hex's fields are set when it returns >= 0).
  return -EINVAL;
}

static int ht_nomem(ht *h) { return memstub_error_set(h->err, -ENOMEM, "%s: out of memory", h->name); }

// The next line into h->l; 1, 0 at the end, -EINVAL for a last line without
// a newline (truncated).
static int ht_next(ht *h) {
  int rc = ms__text_line(h->name, h->buf, h->len, &h->pos, &h->lineno, &h->l, &h->ll, h->err);
  const char *nul = rc > 0 ? memchr(h->l, '\0', h->ll) : NULL;
  if (nul)
    return memstub_error_set(h->err, -EINVAL, "%s:%ld:%zu: NUL byte: not a heaptrack text file",
                             h->name, h->lineno, (size_t)(nul - h->l) + 1);
  return rc;
}

/* Read the line's hex fields after "L " into v (at most max): the count, or
 * -EINVAL naming the field ("what" names the fields for messages). Fields
 * are lowercase hex, 1-16 digits, separated by one space, as heaptrack
 * writes them. With exact, exactly max fields are required. */
static int ht_hex(ht *h, uint64_t *v, int max, int exact, const char *what) {
  char msg[160];
  if (h->ll < 3 || h->l[1] != ' ') {
    if (exact && max > 0) {
      snprintf(msg, sizeof msg, "'%c' line: expected %s", h->l[0], what);
      return ht_fail(h, 2, msg, NULL);
    }
    return 0;  // no fields (ht_line checked the space after the letter)
  }
  size_t i = 2;
  int n = 0;
  while (i < h->ll) {
    size_t b = i;
    uint64_t x = 0;
    while (i < h->ll && h->l[i] != ' ') {
      char c = h->l[i];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) {
        char q[MS__QUOTE_MAX + 4];
        snprintf(msg, sizeof msg, "'%c' line: field %d (%s): '%s' is not a hexadecimal number",
                 h->l[0], n + 1, what, ms__quote(h->l + b, h->ll - b, 24, q));
        return ht_fail(h, b + 1, msg, NULL);
      }
      if (i - b >= 16) {
        snprintf(msg, sizeof msg, "'%c' line: field %d (%s) does not fit in 64 bits", h->l[0],
                 n + 1, what);
        return ht_fail(h, b + 1, msg, NULL);
      }
      x = x * 16 + (uint64_t)d;
      i++;
    }
    if (i == b) {
      snprintf(msg, sizeof msg, "'%c' line: empty field %d (%s)", h->l[0], n + 1, what);
      return ht_fail(h, b + 1, msg, NULL);
    }
    if (n == max) {
      snprintf(msg, sizeof msg, "'%c' line: stray field %d (expected %s)", h->l[0], n + 1, what);
      return ht_fail(h, b + 1, msg, NULL);
    }
    v[n++] = x;
    if (i < h->ll) i++;  // the space
    if (i == h->ll && h->l[i - 1] == ' ') {
      snprintf(msg, sizeof msg, "'%c' line: trailing space after field %d", h->l[0], n);
      return ht_fail(h, i, msg, NULL);
    }
  }
  if (exact && n != max) {
    snprintf(msg, sizeof msg, "'%c' line: %d field%s, expected %s", h->l[0], n, n == 1 ? "" : "s",
             what);
    return ht_fail(h, h->ll + 1, msg, NULL);
  }
  return n;
}

// Close the interval since the last row at time t_ns: append a row (or, with
// nothing new and the same time, nothing). 0 or -ENOMEM.
static int ht_row_at(ht *h, int64_t t_ns) {
  if (h->nrows && !h->dirty && h->rows[h->nrows - 1].time_ns == t_ns) return 0;
  if (ms__grow((void **)&h->rows, &h->caprows, h->nrows, sizeof *h->rows) < 0) return ht_nomem(h);
  h->cur.time_ns = t_ns;
  h->rows[h->nrows++] = h->cur;
  memset(h->cur.calls, 0, sizeof h->cur.calls);
  h->cur.peak = h->cur.heap;
  h->dirty = 0;
  return 0;
}

/* The lines of fields, one function a letter (ht_line's table): the fields
 * v[0..n) as ht_hex read them, checked and taken. 0 or -EINVAL/-ENOMEM. */
static int ht_line_v(ht *h, const uint64_t *v, int n) {
  if (h->seen_v) return ht_fail(h, 1, "a second 'v' line (two files concatenated?)", NULL);
  if (n == 0) return ht_fail(h, 2, "'v' line: expected the heaptrack version", NULL);
  h->heaptrack_version = v[0];
  // heaptrack before 1.0 wrote 0x010200 alone, which its reader takes as format 1.
  h->file_version = n == 2 ? (unsigned)(v[1] > 99 ? 99 : v[1]) : v[0] == 0x010200 ? 1 : 0;
  if (h->file_version < 1 || h->file_version > 3) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "file format version %u is not supported (1 to 3: heaptrack 1.0 and later, "
             "after heaptrack_interpret)",
             h->file_version);
    return ht_fail(h, 2, msg, NULL);
  }
  h->seen_v = 1;
  return 0;
}

static int ht_line_a(ht *h, const uint64_t *v, int n) {
  if (v[0] > (uint64_t)INT64_MAX) return ht_fail(h, 3, "'a' line: SIZE above 2^63", NULL);
  if (ms__grow((void **)&h->infos, &h->capinfo, h->ninfo, sizeof *h->infos) < 0) return ht_nomem(h);
  h->infos[h->ninfo++] = (ht_info){v[0], 0, -1};
  return 0;
}

// The allocation or deallocation just counted (of info in), with calls. 0 or -ENOMEM.
static int ht_call_note(ht *h, ht_info *in, int plus) {
  if (ms__grow((void **)&h->calls, &h->capcalls, h->ncalls, sizeof *h->calls) < 0)
    return ht_nomem(h);
  uint64_t block;
  if (plus) {  // allocation number allocs - 1, on top of its info's
    block = h->allocs - 1;
    if (ms__grow((void **)&h->below, &h->capbelow, (size_t)block, sizeof *h->below) < 0)
      return ht_nomem(h);
    h->below[block] = in->top;
    in->top = (int64_t)block;
  } else {  // live > 0 was checked: top is one
    block = (uint64_t)in->top;
    in->top = h->below[block];
  }
  h->calls[h->ncalls++] = (ht_call){block, in->size, (uint32_t)h->nrows, (uint8_t)plus};
  return 0;
}

static int ht_line_alloc(ht *h, const uint64_t *v, int plus) {
  char msg[160];
  if (v[0] >= h->ninfo) {
    snprintf(msg, sizeof msg, "'%c' line: allocation info %llu not defined (%zu 'a' lines so far)",
             plus ? '+' : '-', (unsigned long long)v[0], h->ninfo);
    return ht_fail(h, 3, msg, NULL);
  }
  ht_info *in = &h->infos[v[0]];
  int64_t size = (int64_t)in->size;
  if (plus) {
    if (h->cur.heap > INT64_MAX - size) return ht_fail(h, 3, "'+' line: the heap total overflows 64 bits", NULL);
    in->live++;
    h->cur.heap += size;
    if (h->cur.heap > h->cur.peak) h->cur.peak = h->cur.heap;
    h->allocs++;
  } else {
    if (in->live == 0) {
      snprintf(msg, sizeof msg,
               "'-' line: no live allocation of info %llu to deallocate (a damaged file?)",
               (unsigned long long)v[0]);
      return ht_fail(h, 3, msg, NULL);
    }
    in->live--;
    h->cur.heap -= size;
    h->frees++;
  }
  h->cur.calls[!plus][ht_class(in->size)]++;
  h->dirty = 1;
  return h->with_calls ? ht_call_note(h, in, plus) : 0;
}

static int ht_line_plus(ht *h, const uint64_t *v, int n) { return ht_line_alloc(h, v, 1); }
static int ht_line_minus(ht *h, const uint64_t *v, int n) { return ht_line_alloc(h, v, 0); }

// IP MODULE [FUNCTION [FILE LINE] (FUNCTION FILE LINE)*]: at most 64 fields here.
static int ht_line_i(ht *h, const uint64_t *v, int n) {
  return n < 2 ? ht_fail(h, h->ll + 1, "'i' line: expected IP and MODULE", NULL) : 0;
}

static int ht_line_c(ht *h, const uint64_t *v, int n) {
  if (v[0] > (uint64_t)(INT64_MAX / 1000000))
    return ht_fail(h, 3, "'c' line: the time does not fit in 64-bit ns", NULL);
  int64_t t = (int64_t)v[0] * 1000000;
  if (h->nrows && t < h->rows[h->nrows - 1].time_ns) {
    char msg[160];
    snprintf(msg, sizeof msg, "'c' line: time decreases from %lld ms to %lld ms",
             (long long)(h->rows[h->nrows - 1].time_ns / 1000000), (long long)v[0]);
    return ht_fail(h, 3, msg, NULL);
  }
  return ht_row_at(h, t);
}

static int ht_line_R(ht *h, const uint64_t *v, int n) {
  if (!h->page_size) return ht_fail(h, 1, "'R' line before the 'I' line: the page size is unknown", NULL);
  if (v[0] > (uint64_t)(INT64_MAX / h->page_size))
    return ht_fail(h, 3, "'R' line: the RSS does not fit in 64-bit bytes", NULL);
  // The sample belongs to the row its 'c' line just made (heaptrack writes
  // them together); before any 'c' there is no row yet: it starts row 0.
  if (h->rss0 < 0) h->rss0 = (int64_t)v[0];
  if (h->nrows && !h->dirty)
    h->rows[h->nrows - 1].rss_pages = (int64_t)v[0];
  h->cur.rss_pages = (int64_t)v[0];
  return 0;
}

static int ht_line_I(ht *h, const uint64_t *v, int n) {
  if (v[0] == 0 || (v[0] & (v[0] - 1)) || v[0] > (1u << 30))
    return ht_fail(h, 3, "'I' line: the page size is not a power of two up to 1 GiB", NULL);
  h->page_size = v[0];
  return 0;
}

// Is s[0..n) an 'I' line, "I HEX HEX"?
static int is_I_line(const char *s, size_t n) {
  size_t i = 2, fields = 0;
  if (n < 5 || s[0] != 'I' || s[1] != ' ') return 0;
  while (i < n) {
    size_t b = i;
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) i++;
    if (i == b || (i < n && s[i] != ' ')) return 0;
    fields++;
    if (i < n) i++;
  }
  return fields == 2 && s[n - 1] != ' ';
}

/* The command line. heaptrack writes it as "X" and " ARG" per argument of
 * /proc/self/cmdline (at most 4096 bytes), unescaped, then the 'I' line: an
 * argument holding a newline continues it on the next lines. So when an 'I'
 * line follows within those 4096 bytes, the lines before it are the command
 * line's; otherwise the X line is the whole of it. 0 or -ENOMEM. */
static int ht_line_X(ht *h) {
  size_t start = (size_t)(h->l - h->buf), end = start + h->ll, p = h->pos, cont_end = 0;
  long lines = 0;
  while (p < h->len && p - start <= 4096 + 64) {
    const char *nl = memchr(h->buf + p, '\n', h->len - p);
    if (!nl) break;
    size_t n = (size_t)(nl - (h->buf + p));
    if (n && h->buf[p + n - 1] == '\r') n--;
    if (is_I_line(h->buf + p, n)) {
      cont_end = p;  // the 'I' line starts here
      break;
    }
    lines++;
    p = (size_t)(nl - h->buf) + 1;
  }
  if (cont_end > h->pos) {  // continuation lines, up to the newline before 'I'
    end = cont_end - 1;
    if (end > start && h->buf[end - 1] == '\r') end--;
    h->lineno += lines;
    h->pos = cont_end;
  }
  size_t n = end > start + 2 ? end - start - 2 : 0;
  free(h->cmd);
  if (!(h->cmd = malloc(n + 1))) return ht_nomem(h);
  memcpy(h->cmd, h->buf + start + 2, n);
  h->cmd[n] = '\0';
  if (memchr(h->cmd, '\0', n)) return ht_fail(h, 1, "'X' line: NUL byte in the command line", NULL);
  return 0;
}

// One line by its letter; 0 or -EINVAL/-ENOMEM.
static int ht_line(ht *h) {
  if (h->ll == 0 || h->l[0] == '#') return 0;
  char c = h->l[0];
  if (!h->seen_v && c != 'v')
    return ht_fail(h, 1, "not a heaptrack file: expected the 'v' line first (heaptrack -o FILE output, decompressed)", NULL);
  if (h->ll >= 2 && h->l[1] != ' ') return ht_fail(h, 2, "expected a space after the line's letter", NULL);
  // The lines of hexadecimal fields: read by one reader, then each kind's own checks.
  static const struct {
    char letter;
    int max, exact;  // the fields: at most max, exactly max when exact
    const char *what;
    int (*fn)(ht *h, const uint64_t *v, int n);  // NULL: the fields are all
  } kinds[] = {{'v', 2, 0, "heaptrack version, file format version", ht_line_v},
               {'a', 2, 1, "SIZE TRACE", ht_line_a},
               {'+', 1, 1, "INFO", ht_line_plus},
               {'-', 1, 1, "INFO", ht_line_minus},
               {'c', 1, 1, "MS", ht_line_c},
               {'R', 1, 1, "PAGES", ht_line_R},
               {'I', 2, 1, "PAGE_SIZE PAGES", ht_line_I},
               {'t', 2, 1, "IP PARENT", NULL},
               {'i', 64, 0, "IP MODULE [FRAMES]", ht_line_i}};
  for (size_t k = 0; k < MS__ARRAY_SIZE(kinds); k++)
    if (kinds[k].letter == c) {
      uint64_t v[64];
      int n = ht_hex(h, v, kinds[k].max, kinds[k].exact, kinds[k].what);
      if (n < 0) return n;
      return kinds[k].fn ? kinds[k].fn(h, v, n) : 0;
    }
  switch (c) {
    case 'X': return ht_line_X(h);
    case 's':
    case 'S': return 0;  // a string or a suppression: any text
    case 'A':
      if (h->ll != 1) return ht_fail(h, 2, "'A' line: stray text after 'A'", NULL);
      h->attached = 1;
      return 0;
    case 'x':
    case 'm':
      return ht_fail(h, 1,
                     "raw heaptrack data (an 'x' or 'm' line): give the file heaptrack wrote "
                     "after its interpreter (heaptrack.PROG.PID.zst), not the raw pipe",
                     NULL);
    default: {
      char msg[80];
      char q[MS__QUOTE_MAX + 4];
      snprintf(msg, sizeof msg, "unknown line type '%s'", ms__quote(h->l, 1, 4, q));
      return ht_fail(h, 1, msg, NULL);
    }
  }
}

// The rows into a new trace with its columns and metadata; 0 or -ENOMEM.
static int ht_build(ht *h, memstub_trace **out) {
  memstub_trace *t = memstub_trace_create();
  if (!t) return ht_nomem(h);
  int rc = 0, col_rss = -1, col_peak, col_calls[2][HT_CLASSES];
  int64_t any[2][HT_CLASSES] = {{0}};
  for (size_t i = 0; i < h->nrows; i++)
    for (int k = 0; k < 2; k++)
      for (int c = 0; c < HT_CLASSES; c++) any[k][c] += h->rows[i].calls[k][c];
  if ((col_peak = memstub_trace_add_column(t, "heap_peak_bytes")) < 0) rc = -ENOMEM;
  if (rc == 0 && h->rss0 >= 0 && (col_rss = memstub_trace_add_column(t, "rss_bytes")) < 0) rc = -ENOMEM;
  for (int k = 0; k < 2; k++)
    for (int c = 0; c < HT_CLASSES; c++) {
      col_calls[k][c] = -1;
      if (rc == 0 && any[k][c] && (col_calls[k][c] = memstub_trace_add_column(t, ht_call_cols[k][c])) < 0)
        rc = -ENOMEM;
    }
  for (size_t i = 0; rc == 0 && i < h->nrows; i++) {
    const ht_row *r = &h->rows[i];
    if (memstub_trace_append(t, r->time_ns, 0, r->heap) < 0) {
      rc = -ENOMEM;
      break;
    }
    int64_t *x = memstub_trace_extra_row(t, t->n - 1);
    x[col_peak] = r->peak;
    if (col_rss >= 0) {
      int64_t d = r->rss_pages < 0 ? 0 : r->rss_pages - h->rss0;
      x[col_rss] = d > 0 ? d * (int64_t)h->page_size : 0;
    }
    for (int k = 0; k < 2; k++)
      for (int c = 0; c < HT_CLASSES; c++)
        if (col_calls[k][c] >= 0) x[col_calls[k][c]] = r->calls[k][c];
  }
  char num[96];
  if (rc == 0) rc = memstub_trace_set_meta(t, "source", "heaptrack");
  if (rc == 0 && h->cmd) rc = memstub_trace_set_meta(t, "heaptrack.cmd", h->cmd);
  snprintf(num, sizeof num, "%llx.%llx.%llx, file format %u",
           (unsigned long long)(h->heaptrack_version >> 16),
           (unsigned long long)((h->heaptrack_version >> 8) & 0xff),
           (unsigned long long)(h->heaptrack_version & 0xff), h->file_version);
  if (rc == 0) rc = memstub_trace_set_meta(t, "heaptrack.version", num);
  snprintf(num, sizeof num, "%llu allocations, %llu deallocations", (unsigned long long)h->allocs,
           (unsigned long long)h->frees);
  if (rc == 0) rc = memstub_trace_set_meta(t, "heaptrack.calls", num);
  if (rc == 0)
    rc = memstub_trace_set_meta(
        t, "heaptrack.time",
        "ticks of heaptrack's timer (every 10 ms, and at exit): a row is the state at a tick, "
        "heap_peak_bytes the highest heap total since the previous row");
  if (rc == 0 && any[0][0] + any[0][1] + any[0][2] + any[0][3] + any[1][0] + any[1][1] + any[1][2] + any[1][3])
    rc = memstub_trace_set_meta(
        t, "heaptrack.call_kinds",
        "every allocation is counted as malloc (heaptrack does not tell malloc, calloc, "
        "realloc and memalign apart; a realloc is a free and a malloc)");
  if (rc == 0 && col_rss >= 0)
    rc = memstub_trace_set_meta(
        t, "heaptrack.rss",
        "rss_bytes: the process's resident pages (/proc/self/statm: anonymous and file "
        "pages, heaptrack's own buffers included) minus the first sample, not RssAnon");
  if (rc == 0)
    rc = memstub_trace_set_meta(t, "stack", "unknown (heaptrack does not measure the stack); stack_bytes are 0");
  if (rc == 0 && h->attached)
    rc = memstub_trace_set_meta(t, "heaptrack.attached",
                                "heaptrack attached to a running process: allocations made "
                                "before it are not in the heap totals");
  if (rc < 0) {
    memstub_trace_free(t);
    return ht_nomem(h);
  }
  *out = t;
  return 0;
}

/* The calls into path, each of row r at the time just after row r - 1's
 * (memstub gen counts a call in the first row at or after its time), and
 * the metadata of t that names the file. 0 or a negative errno with h->err. */
static int ht_write_calls(ht *h, const char *path, memstub_trace *t) {
  ms__calls_writer *w = NULL;
  int rc = ms__calls_writer_open(path, &w, h->err);
  for (size_t i = 0; rc == 0 && i < h->ncalls; i++) {
    const ht_call *c = &h->calls[i];
    size_t r = c->row < h->nrows ? c->row : h->nrows - 1;
    int64_t at = r == 0 ? 0 : h->rows[r - 1].time_ns + 1;
    if (at > h->rows[r].time_ns) at = h->rows[r].time_ns;
    uint64_t addr = 16 * (c->block + 1);
    rc = c->plus ? ms__calls_writer_add(w, at, MS__CALLS_MALLOC, 0, addr, c->size, 0, 0, h->err)
                 : ms__calls_writer_add(w, at, MS__CALLS_FREE, addr, 0, 0, 0, 0, h->err);
  }
  if (rc == 0 && (memstub_trace_set_meta(t, "calls.file", path) < 0 ||
                  memstub_trace_set_meta(
                      t, "heaptrack.calls_file",
                      "each allocation a malloc and each deallocation a free of the last live "
                      "allocation of its info (heaptrack names the size and stack a "
                      "deallocation ends, not the block): the sizes, and the heap at every "
                      "row, as recorded; lifetimes within one allocation info may differ") < 0))
    rc = ht_nomem(h);
  if (rc < 0) {
    ms__calls_writer_abort(w);
    return rc;
  }
  return ms__calls_writer_commit(w, h->err);
}

int memstub_import_heaptrack_parse(const char *name, const char *buf, size_t len,
                                   const memstub_import_options *o, memstub_trace **out,
                                   memstub_error *err) {
  *out = NULL;
  const char *calls_path = o ? o->calls_path : NULL;
  ht h = {.name = name, .buf = buf, .len = len, .err = err, .rss0 = -1, .with_calls = !!calls_path};
  h.cur.rss_pages = -1;
  int rc = ht_row_at(&h, 0);  // row 0: the state at heaptrack's start
  if (rc == 0) h.rows[0].rss_pages = -1;
  while (rc == 0 && (rc = ht_next(&h)) > 0) rc = ht_line(&h);
  if (rc == 0 && !h.seen_v)
    rc = memstub_error_set(err, -EINVAL, "%s:%ld:1: %s", name, h.lineno + 1,
                           h.lineno == 0 ? "empty file: not a heaptrack output"
                                         : "not a heaptrack output: no 'v' line");
  // Events after the last tick: a row at the last tick's time.
  if (rc == 0 && h.dirty) rc = ht_row_at(&h, h.rows[h.nrows - 1].time_ns);
  if (rc == 0) rc = ht_build(&h, out);
  if (rc == 0 && calls_path && (rc = ht_write_calls(&h, calls_path, *out)) < 0) {
    memstub_trace_free(*out);
    *out = NULL;
  }
  free(h.cmd);
  free(h.infos);
  free(h.rows);
  free(h.calls);
  free(h.below);
  return rc;
}

/* The file's bytes, decompressed by running zstd or gzip (common/ms_spawn.h)
 * when it starts with their magic; 0 or -errno with err set. */
static int ht_load(const char *path, char **buf, size_t *len, memstub_error *err) {
  int rc = ms__read_file(path, buf, len, err);
  if (rc < 0) return rc;
  const unsigned char *b = (const unsigned char *)*buf;
  const char *tool = *len >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd ? "zstd"
                     : *len >= 2 && b[0] == 0x1f && b[1] == 0x8b                               ? "gzip"
                                                                                                : NULL;
  if (!tool) return 0;
  free(*buf);
  *buf = NULL;
  char *argv[] = {(char *)tool, "-dc", "--", (char *)path, NULL};
  ms__spawn_opts so;
  ms__spawn_opts_init(&so);
  so.in = MS__SPAWN_NULL;
  so.out = MS__SPAWN_CAPTURE;
  so.err = MS__SPAWN_CAPTURE;
  so.what = strcmp(tool, "zstd") == 0 ? "the zstd decompressor" : "the gzip decompressor";
  ms__spawn_result r = {0};
  memstub_error se = {0};
  // Hundreds of MB a second: a minute and a second per MiB compressed.
  rc = ms__spawn_limit(&so, 60, 1, (int64_t)*len, &se);
  if (rc == 0) rc = ms__spawn_run(argv, &so, &r, &se);
  if (rc < 0) {
    rc = memstub_error_set(err, rc, "%s: %s", path, se.msg);
  } else if (ms__spawn_check(&r, tool, so.what, &se) < 0) {
    char q[MS__QUOTE_MAX + 4];
    size_t el = r.err_len;
    while (el && (r.err[el - 1] == '\n' || r.err[el - 1] == '\r')) el--;
    rc = memstub_error_set(err, -EINVAL, "%s: %s could not decompress it (%s%s%s)", path, tool,
                           se.msg, el ? ": " : "", el ? ms__quote(r.err, el, 60, q) : "");
  }
  if (rc == 0) {
    *buf = r.out ? r.out : calloc(1, 1);
    *len = r.out_len;
    r.out = NULL;
    if (!*buf) rc = memstub_error_set(err, -ENOMEM, "%s: out of memory", path);
  }
  ms__spawn_result_free(&r);
  return rc;
}

int memstub_import_heaptrack(const char *path, const memstub_import_options *o,
                             memstub_trace **out, memstub_error *err) {
  return ms__import_file(path, ht_load, memstub_import_heaptrack_parse, o, out, err);
}
