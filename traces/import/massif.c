// valgrind massif output (massif.out.PID) into a trace (memstub/import.h).
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
  if (p->pos >= p->len) return 0;
  const char *s = p->buf + p->pos;
  const char *nl = memchr(s, '\n', p->len - p->pos);
  l->no = ++p->lineno;
  l->s = s;
  if (!nl) {
    l->len = p->len - p->pos;
    p->pos = p->len;
    return memstub_error_set(p->err, -EINVAL,
                             "%s:%ld:%zu: truncated last line: no newline at the end of the file",
                             p->name, l->no, l->len + 1);
  }
  l->len = (size_t)(nl - s);
  if (l->len && s[l->len - 1] == '\r') l->len--;
  p->pos = (size_t)(nl - p->buf) + 1;
  return 1;
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

int memstub_import_massif_parse(const char *name, const char *buf, size_t len,
                                const memstub_import_options *o, memstub_trace **out,
                                memstub_error *err) {
  *out = NULL;
  mparser P = {name, buf, len, 0, 0, err};
  mline l;
  int rc;
  char *desc = NULL, *cmd = NULL, *unit = NULL;
  char q[MS__QUOTE_MAX + 4];
  long unit_line = 0;
  size_t unit_col = 0;  // where the time unit starts on its line
  memstub_trace *t = memstub_trace_create();
  if (!t) return memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
  int col = memstub_trace_add_column(t, "heap_extra_bytes");
  if (col < 0) {
    rc = memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
    goto fail;
  }
  // Header lines up to the first separator.
  for (;;) {
    rc = next_line(&P, &l);
    if (rc < 0) goto fail;
    if (rc == 0) {
      rc = memstub_error_set(err, -EINVAL, "%s:%ld:1: %s", name, P.lineno + 1,
                             P.lineno == 0 ? "empty file: not a massif output"
                                           : "no snapshots: the file ends after its header");
      goto fail;
    }
    if (is_sep(&l)) break;
    char **dst = starts(&l, "desc:") ? &desc : starts(&l, "cmd:") ? &cmd
                 : starts(&l, "time_unit:") ? &unit : NULL;
    if (!dst) {
      rc = memstub_error_set(err, -EINVAL,
                             "%s:%ld:1: not a massif output: expected 'desc:', 'cmd:' or "
                             "'time_unit:', found '%s'",
                             name, l.no, ms__quote(l.s, l.len, 40, q));
      goto fail;
    }
    const char *v = memchr(l.s, ':', l.len) + 1;
    while (v < l.s + l.len && *v == ' ') v++;
    free(*dst);
    if (!(*dst = dup_range(v, (size_t)(l.s + l.len - v)))) {
      rc = memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
      goto fail;
    }
    if (dst == &unit) {
      unit_line = l.no;
      unit_col = (size_t)(v - l.s) + 1;
    }
  }
  if (!unit) {
    rc = memstub_error_set(err, -EINVAL, "%s:%ld:1: missing 'time_unit:' line before the first snapshot",
                           name, l.no);
    goto fail;
  }
  double ns_per = 0;
  if (strcmp(unit, "ms") == 0) {
    ns_per = 1e6;
  } else if (strcmp(unit, "i") == 0 || strcmp(unit, "B") == 0) {
    if (!(o && o->ns_per_unit > 0)) {
      rc = memstub_error_set(
          err, -EINVAL,
          "%s:%ld:%zu: time_unit '%s' (%s) has no fixed duration: give a conversion "
          "(memstub import --ns-per-unit F) or run massif with --time-unit=ms",
          name, unit_line, unit_col, unit,
          unit[0] == 'i' ? "instructions executed" : "bytes allocated");
      goto fail;
    }
    ns_per = o->ns_per_unit;
  } else {
    rc = memstub_error_set(err, -EINVAL, "%s:%ld:%zu: unknown time_unit '%s' (expected i, ms or B)",
                           name, unit_line, unit_col, ms__quote(unit, strlen(unit), 40, q));
    goto fail;
  }
  // Snapshots: snapshot=N, then separator, time, mem_heap_B, mem_heap_extra_B,
  // mem_stacks_B, heap_tree and any tree lines, up to the next separator.
  int64_t expect = 0, prev_time = -1, t0 = 0;
  long time_line = 0;  // the snapshot's time= line
  int64_t peak_extra = 0;
  int stacks_seen = 0, heap_seen = 0;
  long mismatch_line = 0;  // the first heap tree whose root disagrees with mem_heap_B
  int64_t mismatch_snap = 0, mismatch_heap = 0, mismatch_root = 0;
  rc = next_line(&P, &l);
  while (rc > 0) {
    int64_t v[5];
    static const char *const keys[] = {"snapshot", "time", "mem_heap_B", "mem_heap_extra_B",
                                       "mem_stacks_B"};
    for (int k = 0; k < 5; k++) {
      if (rc == 0) {
        rc = memstub_error_set(err, -EINVAL,
                               "%s:%ld:1: truncated: snapshot %lld ends before '%s='", name,
                               P.lineno + 1, (long long)expect, keys[k]);
        goto fail;
      }
      if ((rc = field(&P, &l, keys[k], &v[k])) < 0) goto fail;
      if (k == 1) time_line = l.no;
      if (k == 0) {
        if (v[0] != expect) {
          rc = memstub_error_set(err, -EINVAL, "%s:%ld:10: snapshot %lld out of sequence (expected %lld)",
                                 name, l.no, (long long)v[0], (long long)expect);
          goto fail;
        }
        if ((rc = next_line(&P, &l)) < 0) goto fail;
        if (rc == 0 || !is_sep(&l)) {
          rc = memstub_error_set(err, -EINVAL, "%s:%ld:1: expected a '#-----------' line after snapshot=%lld",
                                 name, P.lineno + (rc == 0), (long long)v[0]);
          goto fail;
        }
      }
      if ((rc = next_line(&P, &l)) < 0) goto fail;
    }
    if (rc == 0 || !starts(&l, "heap_tree=")) {
      rc = memstub_error_set(err, -EINVAL, "%s:%ld:1: truncated: snapshot %lld has no 'heap_tree=' line",
                             name, P.lineno + (rc == 0), (long long)expect);
      goto fail;
    }
    // Skip the tree. Its root ("nN: BYTES (heap allocation functions) ...")
    // totals the snapshot's heap: the first disagreement is kept.
    int root_next = !starts(&l, "heap_tree=empty");
    while ((rc = next_line(&P, &l)) > 0 && !is_sep(&l)) {
      int64_t root;
      if (root_next && tree_root(&l, &root) && root != v[2] && !mismatch_line) {
        mismatch_line = l.no;
        mismatch_snap = expect;
        mismatch_heap = v[2];
        mismatch_root = root;
      }
      root_next = 0;
    }
    if (rc < 0) goto fail;
    if (rc > 0) {  // the separator before the next snapshot=
      if ((rc = next_line(&P, &l)) < 0) goto fail;
      if (rc == 0) {
        rc = memstub_error_set(err, -EINVAL, "%s:%ld:1: truncated: the file ends after a separator",
                               name, P.lineno + 1);
        goto fail;
      }
    }
    if (v[1] < prev_time) {
      rc = memstub_error_set(err, -EINVAL,
                             "%s:%ld:6: snapshot %lld: time decreases from %lld to %lld", name,
                             time_line, (long long)expect, (long long)prev_time,
                             (long long)v[1]);
      goto fail;
    }
    if (expect == 0) t0 = v[1];
    prev_time = v[1];
    double ns = (double)(v[1] - t0) * ns_per;
    if (ns > 9.2e18) {
      rc = memstub_error_set(err, -EINVAL,
                             "%s:%ld:6: snapshot %lld: time %lld does not fit in 64-bit ns", name,
                             time_line, (long long)expect, (long long)v[1]);
      goto fail;
    }
    if (memstub_trace_append(t, (int64_t)(ns + 0.5), v[4], v[2]) < 0) {
      rc = memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
      goto fail;
    }
    memstub_trace_extra_row(t, t->n - 1)[col] = v[3];
    if (v[3] > peak_extra) peak_extra = v[3];
    if (v[4] > 0) stacks_seen = 1;
    if (v[2] > 0) heap_seen = 1;
    expect++;
    if (rc == 0) break;
  }
  if (expect == 0) {  // the header's separator ends the file
    rc = memstub_error_set(err, -EINVAL, "%s:%ld:1: no snapshots: the file ends after its header",
                           name, P.lineno + 1);
    goto fail;
  }
  char num[64];
  rc = memstub_trace_set_meta(t, "source", "massif");
  if (rc == 0 && cmd) rc = memstub_trace_set_meta(t, "massif.cmd", cmd);
  if (rc == 0 && desc) rc = memstub_trace_set_meta(t, "massif.desc", desc);
  if (rc == 0) rc = memstub_trace_set_meta(t, "massif.time_unit", unit);
  snprintf(num, sizeof num, "%lld", (long long)expect);
  if (rc == 0) rc = memstub_trace_set_meta(t, "massif.snapshots", num);
  if (rc == 0 && ns_per != 1e6) {
    snprintf(num, sizeof num, "%.17g", ns_per);
    rc = memstub_trace_set_meta(t, "import.ns_per_unit", num);
  }
  // What massif measured, from the options in desc (the last one given
  // counts, as in valgrind): without --stacks=yes mem_stacks_B is 0 and the
  // stack is unknown, not flat; --heap=no leaves the heap unknown;
  // --pages-as-heap=yes makes mem_heap_B the whole process's mapped pages.
  // Values in the file win over its options: a column marked unknown is 0.
  int stacks = option_yes(desc, "--stacks=");
  int heap = option_yes(desc, "--heap=");
  int pages = option_yes(desc, "--pages-as-heap=");
  int stack_measured = stacks_seen || stacks == 1;
  if (rc == 0)
    rc = memstub_trace_set_meta(t, "massif.stacks",
                                stack_measured
                                    ? "mem_stacks_B: every thread's stack, from massif's start"
                                    : "not measured (run massif with --stacks=yes)");
  if (rc == 0 && !stack_measured)
    rc = memstub_trace_set_meta(t, "stack",
                                "unknown (massif ran without --stacks=yes); stack_bytes are 0");
  if (rc == 0)
    rc = memstub_trace_set_meta(
        t, "massif.heap_measure",
        pages == 1 ? "pages mapped by the whole process (--pages-as-heap=yes), not bytes requested"
        : heap == 0 ? "not measured (--heap=no)"
                    : "bytes requested from the malloc family (mem_heap_B)");
  if (mismatch_line) {
    char why[256];
    snprintf(why, sizeof why,
             "line %ld: snapshot %lld has mem_heap_B=%lld but its heap tree totals %lld (an "
             "edited or damaged file?)",
             mismatch_line, (long long)mismatch_snap, (long long)mismatch_heap,
             (long long)mismatch_root);
    if (rc == 0) rc = memstub_trace_set_meta(t, "massif.inconsistent", why);
  }
  if (rc == 0 && heap == 0 && pages != 1 && !heap_seen)
    rc = memstub_trace_set_meta(t, "heap", "unknown (massif ran with --heap=no); heap_bytes are 0");
  if (rc < 0) {
    rc = memstub_error_set(err, -ENOMEM, "%s: out of memory", name);
    goto fail;
  }
  free(desc);
  free(cmd);
  free(unit);
  *out = t;
  return 0;
fail:
  free(desc);
  free(cmd);
  free(unit);
  memstub_trace_free(t);
  return rc < 0 ? rc : -EINVAL;
}

int memstub_import_massif(const char *path, const memstub_import_options *o,
                          memstub_trace **out, memstub_error *err) {
  char *buf;
  size_t len;
  *out = NULL;
  int rc = ms__read_file(path, &buf, &len, err);
  if (rc < 0) return rc;
  rc = memstub_import_massif_parse(path, buf, len, o, out, err);
  free(buf);
  return rc;
}
