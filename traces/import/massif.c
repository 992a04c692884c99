// valgrind massif output (massif.out.PID) into a trace (memstub/import.h).
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memstub/import.h"
#include "ms_common.h"

void memstub_import_options_init(memstub_import_options *o) {
  memset(o, 0, sizeof *o);
  o->stack_curve = MEMSTUB_STACK_AUTO;
  o->time_unit = MEMSTUB_TIME_AUTO;
}

typedef struct mline {
  const char *s;  // the line, without its newline (and CR)
  size_t len;
  long no;        // 1-based
} mline;

typedef struct mparser {
  const char *name, *buf;
  size_t len, pos;
  long lineno;
  memstub_error *err;
} mparser;

// The next line; 0 at the end of the input, -EINVAL for a line without a
// newline at the end of the file (truncated).
static int next_line(mparser *p, mline *l) {
  int rc = ms__text_line(p->name, p->buf, p->len, &p->pos, &p->lineno, &l->s, &l->len, p->err);
  l->no = p->lineno;
  return rc;
}

static int starts(const mline *l, const char *prefix) {
  size_t n = strlen(prefix);
  return l->len >= n && memcmp(l->s, prefix, n) == 0;
}

// "key=NUMBER": the number, non-negative.
static int field(mparser *p, const mline *l, const char *key, int64_t *v) {
  size_t kl = strlen(key);
  char q[MS__QUOTE_MAX + 4];
  if (!starts(l, key) || l->len <= kl || l->s[kl] != '=') {
    return memstub_error_set(p->err, -EINVAL, "%s:%ld:1: expected '%s=', found '%s'", p->name,
                             l->no, key, ms__quote(l->s, l->len, 40, q));
  }
  int rc = ms__parse_i64(l->s + kl + 1, l->len - kl - 1, v);
  if (rc < 0 || *v < 0)
    return memstub_error_set(p->err, -EINVAL,
                             "%s:%ld:%zu: %s: expected a non-negative integer, found '%s'",
                             p->name, l->no, kl + 2, key, ms__quote(l->s + kl + 1, l->len - kl - 1, 40, q));
  return 0;
}

static int is_sep(const mline *l) { return l->len >= 2 && l->s[0] == '#' && l->s[1] == '-'; }

static char *dup_range(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

/* A heap tree's root line, "nN: BYTES (...": 1 and *bytes, else 0. */
static int tree_root(const mline *l, int64_t *bytes) {
  size_t i = 1;
  if (l->len < 5 || l->s[0] != 'n') return 0;
  while (i < l->len && l->s[i] >= '0' && l->s[i] <= '9') i++;
  if (i == 1 || i + 2 >= l->len || l->s[i] != ':' || l->s[i + 1] != ' ') return 0;
  size_t b = i + 2, e = b;
  while (e < l->len && l->s[e] >= '0' && l->s[e] <= '9') e++;
  if (e == b || (e < l->len && l->s[e] != ' ')) return 0;
  return ms__parse_i64(l->s + b, e - b, bytes) == 0;
}

/* The value of the last "OPTION" (ending in '=') in desc: 1 for yes, 0 for
 * no, -1 when absent or neither. */
static int option_yes(const char *desc, const char *option) {
  int v = -1;
  size_t n = strlen(option);
  for (const char *p = desc ? strstr(desc, option) : NULL; p; p = strstr(p + n, option)) {
    if (p != desc && p[-1] != ' ') continue;  // a word of its own
    const char *a = p + n;
    v = strncmp(a, "yes", 3) == 0 && (a[3] == ' ' || a[3] == '\0')  ? 1
        : strncmp(a, "no", 2) == 0 && (a[2] == ' ' || a[2] == '\0') ? 0
                                                                     : -1;
  }
  return v;
}

// One import's state: the line reader, the header's values, the snapshots so far.
typedef struct massif {
  mparser P;
  mline l;  // the current line
  const memstub_import_options *o;
  char *desc, *cmd, *unit;
  long unit_line;
  size_t unit_col;  // where the time unit starts on its line
  double ns_per;    // ns per unit of time
  memstub_trace *t;
  int col;          // the heap_extra_bytes column
  int pages;        // --pages-as-heap=yes: mem_heap_B is pages mapped, into col_mapped
  int col_mapped;   // the mapped_bytes column (pages mode only)
  int64_t expect;   // the next snapshot's number: the count so far
  int64_t prev_time, t0;
  long time_line;   // the snapshot's time= line
  int stacks_seen, heap_seen;
  long mismatch_line;  // the first heap tree whose root disagrees with mem_heap_B
  int64_t mismatch_snap, mismatch_heap, mismatch_root;
} massif;

// Keep one header line's value (desc:, cmd: or time_unit:); -EINVAL for any
// other line, -ENOMEM.
static int ma_header_line(massif *s) {
  const mline *l = &s->l;
  char q[MS__QUOTE_MAX + 4];
  char **dst = starts(l, "desc:") ? &s->desc : starts(l, "cmd:") ? &s->cmd
               : starts(l, "time_unit:") ? &s->unit : NULL;
  if (!dst)
    return memstub_error_set(s->P.err, -EINVAL,
                             "%s:%ld:1: not a massif output: expected 'desc:', 'cmd:' or "
                             "'time_unit:', found '%s'",
                             s->P.name, l->no, ms__quote(l->s, l->len, 40, q));
  const char *v = memchr(l->s, ':', l->len) + 1;
  while (v < l->s + l->len && *v == ' ') v++;
  free(*dst);
  if (!(*dst = dup_range(v, (size_t)(l->s + l->len - v))))
    return memstub_error_set(s->P.err, -ENOMEM, "%s: out of memory", s->P.name);
  if (dst == &s->unit) {
    s->unit_line = l->no;
    s->unit_col = (size_t)(v - l->s) + 1;
  }
  return 0;
}

// Read the header lines up to the first separator (left in s->l); -EINVAL
// for an empty file, a file without snapshots or without time_unit:.
static int ma_header(massif *s) {
  for (;;) {
    int rc = next_line(&s->P, &s->l);
    if (rc < 0) return rc;
    if (rc == 0)
      return memstub_error_set(s->P.err, -EINVAL, "%s:%ld:1: %s", s->P.name, s->P.lineno + 1,
                               s->P.lineno == 0 ? "empty file: not a massif output"
                                                : "no snapshots: the file ends after its header");
    if (is_sep(&s->l)) break;
    if ((rc = ma_header_line(s)) < 0) return rc;
  }
  if (!s->unit)
    return memstub_error_set(s->P.err, -EINVAL,
                             "%s:%ld:1: missing 'time_unit:' line before the first snapshot",
                             s->P.name, s->l.no);
  return 0;
}

// ns per unit of time: ms, or i and B with o->ns_per_unit; -EINVAL otherwise.
static int ma_time_unit(massif *s) {
  const char *unit = s->unit;
  char q[MS__QUOTE_MAX + 4];
  if (strcmp(unit, "ms") == 0) {
    s->ns_per = 1e6;
    return 0;
  }
  if (strcmp(unit, "i") == 0 || strcmp(unit, "B") == 0) {
    if (!(s->o && s->o->ns_per_unit > 0))
      return memstub_error_set(
          s->P.err, -EINVAL,
          "%s:%ld:%zu: time_unit '%s' (%s) has no fixed duration: give a conversion "
          "(memstub import --ns-per-unit F) or run massif with --time-unit=ms",
          s->P.name, s->unit_line, s->unit_col, unit,
          unit[0] == 'i' ? "instructions executed" : "bytes allocated");
    s->ns_per = s->o->ns_per_unit;
    return 0;
  }
  return memstub_error_set(s->P.err, -EINVAL, "%s:%ld:%zu: unknown time_unit '%s' (expected i, ms or B)",
                           s->P.name, s->unit_line, s->unit_col,
                           ms__quote(unit, strlen(unit), 40, q));
}

// Check that snapshot=N is the one expected and a separator follows it;
// -EINVAL otherwise.
static int ma_snapshot_sep(massif *s, int64_t n) {
  if (n != s->expect)
    return memstub_error_set(s->P.err, -EINVAL, "%s:%ld:10: snapshot %lld out of sequence (expected %lld)",
                             s->P.name, s->l.no, (long long)n, (long long)s->expect);
  int rc = next_line(&s->P, &s->l);
  if (rc < 0) return rc;
  if (rc == 0 || !is_sep(&s->l))
    return memstub_error_set(s->P.err, -EINVAL, "%s:%ld:1: expected a '#-----------' line after snapshot=%lld",
                             s->P.name, s->P.lineno + (rc == 0), (long long)n);
  return 0;
}

// Read a snapshot's snapshot=, separator, time=, mem_heap_B=,
// mem_heap_extra_B= and mem_stacks_B= into v (s->l holds snapshot=); >0 with
// the next line read, 0 at the end of the input, <0 (-EINVAL) on failure.
static int ma_fields(massif *s, int64_t v[5]) {
  static const char *const keys[] = {"snapshot", "time", "mem_heap_B", "mem_heap_extra_B",
                                     "mem_stacks_B"};
  int rc = 1;
  for (int k = 0; k < 5; k++) {
    if (rc == 0)
      return memstub_error_set(s->P.err, -EINVAL,
                               "%s:%ld:1: truncated: snapshot %lld ends before '%s='", s->P.name,
                               s->P.lineno + 1, (long long)s->expect, keys[k]);
    if ((rc = field(&s->P, &s->l, keys[k], &v[k])) < 0) return rc;
    if (k == 1) s->time_line = s->l.no;
    if (k == 0 && (rc = ma_snapshot_sep(s, v[0])) < 0) return rc;
    if ((rc = next_line(&s->P, &s->l)) < 0) return rc;
  }
  return rc;
}

// Check the heap_tree= line (rc: ma_fields' result), skip the tree, keeping
// the first root that disagrees with heap, and the separator after it; >0
// with the next snapshot= line read, 0 at the end, <0 (-EINVAL) on failure.
static int ma_tree(massif *s, int rc, int64_t heap) {
  if (rc == 0 || !starts(&s->l, "heap_tree="))
    return memstub_error_set(s->P.err, -EINVAL, "%s:%ld:1: truncated: snapshot %lld has no 'heap_tree=' line",
                             s->P.name, s->P.lineno + (rc == 0), (long long)s->expect);
  // Its root ("nN: BYTES (heap allocation functions) ...") totals the
  // snapshot's heap: the first disagreement is kept.
  int root_next = !starts(&s->l, "heap_tree=empty");
  while ((rc = next_line(&s->P, &s->l)) > 0 && !is_sep(&s->l)) {
    int64_t root;
    if (root_next && tree_root(&s->l, &root) && root != heap && !s->mismatch_line) {
      s->mismatch_line = s->l.no;
      s->mismatch_snap = s->expect;
      s->mismatch_heap = heap;
      s->mismatch_root = root;
    }
    root_next = 0;
  }
  if (rc <= 0) return rc;
  // The separator before the next snapshot=.
  if ((rc = next_line(&s->P, &s->l)) < 0) return rc;
  if (rc == 0)
    return memstub_error_set(s->P.err, -EINVAL, "%s:%ld:1: truncated: the file ends after a separator",
                             s->P.name, s->P.lineno + 1);
  return rc;
}

// Append the snapshot v as a row (time in ns from the first snapshot's);
// -EINVAL for a time that decreases or overflows, -ENOMEM.
static int ma_row(massif *s, const int64_t v[5]) {
  if (v[1] < s->prev_time)
    return memstub_error_set(s->P.err, -EINVAL,
                             "%s:%ld:6: snapshot %lld: time decreases from %lld to %lld", s->P.name,
                             s->time_line, (long long)s->expect, (long long)s->prev_time,
                             (long long)v[1]);
  if (s->expect == 0) s->t0 = v[1];
  s->prev_time = v[1];
  double ns = (double)(v[1] - s->t0) * s->ns_per;
  if (ns > 9.2e18)
    return memstub_error_set(s->P.err, -EINVAL,
                             "%s:%ld:6: snapshot %lld: time %lld does not fit in 64-bit ns", s->P.name,
                             s->time_line, (long long)s->expect, (long long)v[1]);
  // Pages mode: mem_heap_B is every page mapped, mapped_bytes; the heap is unknown.
  if (memstub_trace_append(s->t, (int64_t)(ns + 0.5), v[4], s->pages ? 0 : v[2]) < 0)
    return memstub_error_set(s->P.err, -ENOMEM, "%s: out of memory", s->P.name);
  int64_t *x = memstub_trace_extra_row(s->t, s->t->n - 1);
  x[s->col] = v[3];
  if (s->pages) x[s->col_mapped] = v[2];
  if (v[4] > 0) s->stacks_seen = 1;
  if (v[2] > 0 && !s->pages) s->heap_seen = 1;
  return 0;
}

// Read every snapshot after the header into rows; -EINVAL (no snapshots, or
// a malformed or truncated one) or -ENOMEM on failure.
static int ma_snapshots(massif *s) {
  // Snapshots: snapshot=N, then separator, time, mem_heap_B, mem_heap_extra_B,
  // mem_stacks_B, heap_tree and any tree lines, up to the next separator.
  int rc = next_line(&s->P, &s->l);
  while (rc > 0) {
    int64_t v[5];
    if ((rc = ma_fields(s, v)) < 0) return rc;
    if ((rc = ma_tree(s, rc, v[2])) < 0) return rc;
    int more = rc;
    if ((rc = ma_row(s, v)) < 0) return rc;
    s->expect++;
    rc = more;
  }
  if (s->expect == 0)  // the header's separator ends the file
    return memstub_error_set(s->P.err, -EINVAL, "%s:%ld:1: no snapshots: the file ends after its header",
                             s->P.name, s->P.lineno + 1);
  return 0;
}

// The header's metadata: source, cmd, desc, time unit, snapshots and the
// conversion; <0 on out of memory.
static int ma_meta_header(massif *s) {
  memstub_trace *t = s->t;
  char num[64];
  int rc = memstub_trace_set_meta(t, "source", "massif");
  if (rc == 0 && s->cmd) rc = memstub_trace_set_meta(t, "massif.cmd", s->cmd);
  if (rc == 0 && s->desc) rc = memstub_trace_set_meta(t, "massif.desc", s->desc);
  if (rc == 0) rc = memstub_trace_set_meta(t, "massif.time_unit", s->unit);
  snprintf(num, sizeof num, "%lld", (long long)s->expect);
  if (rc == 0) rc = memstub_trace_set_meta(t, "massif.snapshots", num);
  if (rc == 0 && s->ns_per != 1e6) {
    snprintf(num, sizeof num, "%.17g", s->ns_per);
    rc = memstub_trace_set_meta(t, "import.ns_per_unit", num);
  }
  return rc;
}

// What massif measured, "stack:"/"heap: unknown" and the heap trees'
// disagreement; <0 on out of memory.
static int ma_meta_measures(massif *s) {
  // What massif measured, from the options in desc (the last one given
  // counts, as in valgrind): without --stacks=yes mem_stacks_B is 0 and the
  // stack is unknown, not flat; --heap=no leaves the heap unknown;
  // --pages-as-heap=yes makes mem_heap_B the whole process's mapped pages.
  // Values in the file win over its options: a column marked unknown is 0.
  memstub_trace *t = s->t;
  int stacks = option_yes(s->desc, "--stacks=");
  int heap = option_yes(s->desc, "--heap=");
  int pages = option_yes(s->desc, "--pages-as-heap=");
  int stack_measured = s->stacks_seen || stacks == 1;
  int rc = memstub_trace_set_meta(t, "massif.stacks",
                                  stack_measured
                                      ? "mem_stacks_B: every thread's stack, from massif's start"
                                      : "not measured (run massif with --stacks=yes)");
  if (rc == 0 && !stack_measured)
    rc = memstub_trace_set_meta(t, "stack",
                                "unknown (massif ran without --stacks=yes); stack_bytes are 0");
  if (rc == 0)
    rc = memstub_trace_set_meta(
        t, "massif.heap_measure",
        pages == 1 ? "pages mapped by the whole process (--pages-as-heap=yes), not bytes requested "
                     "and not pages resident: imported as mapped_bytes (docs/recording.md)"
        : heap == 0 ? "not measured (--heap=no)"
                    : "bytes requested from the malloc family (mem_heap_B)");
  if (s->mismatch_line) {
    char why[256];
    snprintf(why, sizeof why,
             "line %ld: snapshot %lld has mem_heap_B=%lld but its heap tree totals %lld (an "
             "edited or damaged file?)",
             s->mismatch_line, (long long)s->mismatch_snap, (long long)s->mismatch_heap,
             (long long)s->mismatch_root);
    if (rc == 0) rc = memstub_trace_set_meta(t, "massif.inconsistent", why);
  }
  if (rc == 0 && pages == 1)
    rc = memstub_trace_set_meta(t, "heap",
                                "unknown (massif ran with --pages-as-heap=yes: it counted pages "
                                "mapped, imported as mapped_bytes); heap_bytes are 0");
  if (rc == 0 && heap == 0 && pages != 1 && !s->heap_seen)
    rc = memstub_trace_set_meta(t, "heap", "unknown (massif ran with --heap=no); heap_bytes are 0");
  return rc;
}

// All the metadata; -ENOMEM ("out of memory") on failure.
static int ma_meta(massif *s) {
  int rc = ma_meta_header(s);
  if (rc == 0) rc = ma_meta_measures(s);
  if (rc < 0) return memstub_error_set(s->P.err, -ENOMEM, "%s: out of memory", s->P.name);
  return 0;
}

// The stages in order; on failure everything is freed and *out is NULL (import.h).
int memstub_import_massif_parse(const char *name, const char *buf, size_t len,
                                const memstub_import_options *o, memstub_trace **out,
                                memstub_error *err) {
  *out = NULL;
  massif s = {.P = {name, buf, len, 0, 0, err}, .o = o, .prev_time = -1};
  s.t = memstub_trace_create();
  if (!s.t) return memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
  int rc = 0;
  if ((s.col = memstub_trace_add_column(s.t, "heap_extra_bytes")) < 0)
    rc = memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
  if (rc == 0) rc = ma_header(&s);
  if (rc == 0) rc = ma_time_unit(&s);
  if (rc == 0 && (s.pages = option_yes(s.desc, "--pages-as-heap=") == 1) &&
      (s.col_mapped = memstub_trace_add_column(s.t, "mapped_bytes")) < 0)
    rc = memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
  if (rc == 0) rc = ma_snapshots(&s);
  if (rc == 0) rc = ma_meta(&s);
  free(s.desc);
  free(s.cmd);
  free(s.unit);
  return MS__HAND_OUT(rc, s.t, out, memstub_trace_free);
}

int memstub_import_massif(const char *path, const memstub_import_options *o,
                          memstub_trace **out, memstub_error *err) {
  return ms__import_file(path, ms__read_file, memstub_import_massif_parse, o, out, err);
}
