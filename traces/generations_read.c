/* traces/generations_read.c: the reader of TRACE.generations, versions 1
 * and 2 (memstub/generations.h, docs/formats.md#generations). As strict as
 * the trace reader: a last line without its newline, a field out of range,
 * times out of order or sums that disagree are refused with
 * "path:LINE: field N: what is wrong". */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/generations.h"
#include "ms_common.h"

void memstub_generations_free(memstub_generations *g) {
  if (!g) return;
  for (size_t i = 0; i < g->nocc; i++) free(g->occ[i].name);
  free(g->occ);
  free(g->surv);
  free(g);
}

const memstub_occurrence *memstub_generations_find(const memstub_generations *g, int64_t id) {
  size_t lo = 0, hi = g->nocc;  // ids increase (the reader checks)
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->occ[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->nocc && g->occ[lo].id == id ? &g->occ[lo] : NULL;
}

// Per occurrence, what the reader checks at the end.
typedef struct occ_extra {
  long line;              // its occurrence line
  int64_t blocks, bytes;  // summed over its survivor(s) lines
} occ_extra;

typedef struct reader {
  ms__lines L;
  memstub_generations *g;
  memstub_error *err;
  int have_exit, have_dropped;
  int sites;               // survivor lines have a SITE: -1 not known yet, 0 no, 1 yes
  long first_surv;         // the line of the first survivor(s) line, 0 none yet
  size_t cocc, cex, csurv; // capacities of g->occ, ex and g->surv
  occ_extra *ex;           // [nocc]
  int64_t tot[4];          // the occurrences' blocks, bytes, survivor blocks and bytes summed
} reader;

static int oom(reader *r) {
  return memstub_error_set(r->err, -ENOMEM, "%s: out of memory", r->L.path);
}

// Fields from..from+n-1 (from 1) of f as integers, each in [lo[k], INT64_MAX].
static int nums(reader *r, char **f, int from, int n, const int64_t *lo, const char *const *what,
                int64_t *v) {
  for (int k = 0; k < n; k++) {
    int rc = ms__lines_i64(&r->L, from + k, f[from + k - 1], lo[k], INT64_MAX, what[k], &v[k],
                           r->err);
    if (rc < 0) return rc;
  }
  return 0;
}

static int exit_line(reader *r, char **f, int n) {
  if (n != 2) return ms__lines_fail(&r->L, n < 2 ? 2 : 3, r->err, "expected 'exit_ns EXIT_NS'");
  if (r->have_exit) return ms__lines_fail(&r->L, 1, r->err, "a second exit_ns line");
  if (r->g->nocc)
    return ms__lines_fail(&r->L, 1, r->err, "exit_ns comes before the occurrence lines");
  r->have_exit = 1;
  return ms__lines_i64(&r->L, 2, f[1], 0, INT64_MAX, "a time in ns (0 or more)", &r->g->exit_ns,
                       r->err);
}

// The v1 `dropped BLOCKS OCCURRENCES SURVIVOR_RECORDS` line.
static int dropped_line(reader *r, char **f, int n) {
  if (r->g->version != 1)
    return ms__lines_fail(&r->L, 1, r->err, "a version 2 file has no dropped line (its writer "
                          "never drops)");
  if (n != 4)
    return ms__lines_fail(&r->L, n < 4 ? n + 1 : 5, r->err,
                          "expected 'dropped BLOCKS OCCURRENCES SURVIVOR_RECORDS'");
  if (r->have_dropped) return ms__lines_fail(&r->L, 1, r->err, "a second dropped line");
  r->have_dropped = 1;
  static const int64_t lo[3] = {0, 0, 0};
  static const char *const what[3] = {"a count (0 or more)", "a count (0 or more)",
                                      "a count (0 or more)"};
  int64_t v[3];
  int rc = nums(r, f, 2, 3, lo, what, v);
  if (rc < 0) return rc;
  r->g->dropped_blocks = v[0], r->g->dropped_occurrences = v[1], r->g->dropped_survivors = v[2];
  return 0;
}

static int occurrence_line(reader *r, char **f, int n) {
  memstub_generations *g = r->g;
  if (n != 9)
    return ms__lines_fail(&r->L, n + 1, r->err, "expected 'occurrence ID BEGIN_NS END_NS BLOCKS "
                          "BYTES SURVIVOR_BLOCKS SURVIVOR_BYTES NAME'");
  if (!r->have_exit)
    return ms__lines_fail(&r->L, 1, r->err, "an occurrence before the exit_ns line");
  if (g->version == 2 && r->first_surv)
    return ms__lines_fail(&r->L, 1, r->err, "an occurrence after the survivors lines (line %ld)",
                          r->first_surv);
  static const int64_t lo[7] = {1, INT64_MIN, INT64_MIN, 0, 0, 0, 0};
  static const char *const what[7] = {"an occurrence id (1 or more)", "a time in ns",
                                      "a time in ns", "a block count (0 or more)",
                                      "a byte count (0 or more)", "a block count (0 or more)",
                                      "a byte count (0 or more)"};
  int64_t v[7];
  int rc = nums(r, f, 2, 7, lo, what, v);
  if (rc < 0) return rc;
  if (g->nocc && v[0] <= g->occ[g->nocc - 1].id)
    return ms__lines_fail(&r->L, 2, r->err, "occurrence %" PRId64 " is not above the one before "
                          "(%" PRId64 "): ids increase", v[0], g->occ[g->nocc - 1].id);
  if (v[2] < v[1])
    return ms__lines_fail(&r->L, 4, r->err, "it ends (%" PRId64 ") before it begins (%" PRId64 ")",
                          v[2], v[1]);
  if (v[2] > g->exit_ns)
    return ms__lines_fail(&r->L, 4, r->err, "it ends (%" PRId64 ") after the exit (%" PRId64 ")",
                          v[2], g->exit_ns);
  for (int k = 3; k < 7; k += 2)  // bytes need blocks
    if (v[k] == 0 && v[k + 1] > 0)
      return ms__lines_fail(&r->L, k + 3, r->err, "%" PRId64 " bytes in 0 blocks", v[k + 1]);
  if (v[5] > v[3] || v[6] > v[4])
    return ms__lines_fail(&r->L, v[5] > v[3] ? 7 : 8, r->err, "more survivor %s than allocated",
                          v[5] > v[3] ? "blocks" : "bytes");
  for (int k = 0; k < 4; k++)
    if (__builtin_add_overflow(r->tot[k], v[3 + k], &r->tot[k]))
      return ms__lines_fail(&r->L, 5 + k, r->err, "the occurrences' figures add up beyond 64 bits");
  for (const char *c = f[8]; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f)
      return ms__lines_fail(&r->L, 9, r->err, "a control character in the name");
  if (ms__grow((void **)&g->occ, &r->cocc, g->nocc, sizeof *g->occ) < 0 ||
      ms__grow((void **)&r->ex, &r->cex, g->nocc, sizeof *r->ex) < 0)
    return oom(r);
  memstub_occurrence *o = &g->occ[g->nocc];
  *o = (memstub_occurrence){.id = v[0], .begin_ns = v[1], .end_ns = v[2], .blocks = v[3],
                            .bytes = v[4], .survivor_blocks = v[5], .survivor_bytes = v[6],
                            .name = ms__strdup(f[8])};
  if (!o->name) return oom(r);
  r->ex[g->nocc] = (occ_extra){.line = r->L.line};
  g->nocc++;
  return 0;
}

/* A v1 `survivor ID BYTES ALLOC_NS FREE_NS [SITE]` line (blocks 1) or a v2
 * `survivors ID BLOCKS BYTES ALLOC_NS FREE_NS [SITE]` one: n fields. */
static int survivor_line(reader *r, char **f, int n) {
  memstub_generations *g = r->g;
  int v2 = g->version == 2, base = v2 ? 6 : 5;  // fields without the site
  if (strcmp(f[0], v2 ? "survivors" : "survivor") != 0)
    return ms__lines_fail(&r->L, 1, r->err, "a version %d file has '%s' lines, not '%s'",
                          g->version, v2 ? "survivors" : "survivor", f[0]);
  if (n != base && n != base + 1)
    return ms__lines_fail(&r->L, n < base ? n + 1 : base + 2, r->err, "expected '%s'",
                          v2 ? "survivors ID BLOCKS BYTES ALLOC_NS FREE_NS [SITE]"
                             : "survivor ID BYTES ALLOC_NS FREE_NS [SITE]");
  int has_site = n == base + 1;
  if (r->sites >= 0 && has_site != r->sites)
    return ms__lines_fail(&r->L, base + 1, r->err, "%s: the survivor lines before %s",
                          has_site ? "a site" : "no site", has_site ? "have none" : "have one");
  r->sites = has_site;
  if (!r->first_surv) r->first_surv = r->L.line;
  int64_t v[6];  // id, blocks, bytes, alloc, free, site
  static const int64_t lo[4] = {1, 1, 0, INT64_MIN};
  static const char *const what[6] = {"an occurrence id (1 or more)", "a block count (1 or more)",
                                      "a byte count (0 or more)", "a time in ns",
                                      "a time in ns, or -1 (alive at exit)",
                                      "a site (-1, or a site line's index)"};
  int rc = nums(r, f, 2, 1, lo, what, v);
  if (rc == 0 && v2) rc = nums(r, f, 3, 1, lo + 1, what + 1, v + 1);
  if (rc == 0) rc = nums(r, f, v2 ? 4 : 3, 2, lo + 2, what + 2, v + 2);
  if (rc < 0) return rc;
  if (!v2) v[1] = 1;
  int ffree = v2 ? 6 : 5;  // the field of FREE_NS
  if ((rc = ms__lines_i64(&r->L, ffree, f[ffree - 1], INT64_MIN, INT64_MAX, what[4], &v[4],
                          r->err)) < 0)
    return rc;
  // -1 is alive at exit; any other time (negative before the trace's start) a free.
  if (v[4] != -1 && v[4] < v[3])
    return ms__lines_fail(&r->L, ffree, r->err, "freed (%" PRId64 ") before it was allocated (%"
                          PRId64 ")", v[4], v[3]);
  v[5] = -1;
  if (has_site && (rc = ms__lines_i64(&r->L, base + 1, f[base], -1, INT32_MAX, what[5], &v[5],
                                      r->err)) < 0)
    return rc;
  const memstub_occurrence *o = memstub_generations_find(g, v[0]);
  if (!o)
    return ms__lines_fail(&r->L, 2, r->err, "occurrence %" PRId64 " has no occurrence line%s", v[0],
                          v2 ? "" : " before it");
  occ_extra *x = &r->ex[o - g->occ];
  if (__builtin_add_overflow(x->blocks, v[1], &x->blocks) || x->blocks > o->survivor_blocks)
    return ms__lines_fail(&r->L, v2 ? 3 : 2, r->err, "occurrence %" PRId64 " (line %ld) left %"
                          PRId64 " survivor blocks: its survivor lines hold more", o->id, x->line,
                          o->survivor_blocks);
  if (__builtin_add_overflow(x->bytes, v[2], &x->bytes) || x->bytes > o->survivor_bytes)
    return ms__lines_fail(&r->L, v2 ? 4 : 3, r->err, "occurrence %" PRId64 " (line %ld) left %"
                          PRId64 " survivor bytes: its survivor lines hold more", o->id, x->line,
                          o->survivor_bytes);
  if (ms__grow((void **)&g->surv, &r->csurv, g->nsurv, sizeof *g->surv) < 0) return oom(r);
  g->surv[g->nsurv++] = (memstub_survivor){.occurrence = v[0], .blocks = v[1], .bytes = v[2],
                                           .alloc_ns = v[3], .free_ns = v[4], .site = v[5]};
  return 0;
}

static int read_line(reader *r, char *line) {
  char *f[9];
  int n = ms__lines_split(line, f, 9);
  if (n == 0 || f[0][0] == '#') return 0;  // blank, or a comment
  if (strcmp(f[0], "exit_ns") == 0) return exit_line(r, f, n);
  if (strcmp(f[0], "dropped") == 0) return dropped_line(r, f, n);
  if (strcmp(f[0], "occurrence") == 0) return occurrence_line(r, f, n);
  if (strcmp(f[0], "survivor") == 0 || strcmp(f[0], "survivors") == 0)
    return survivor_line(r, f, n);
  char q[MS__QUOTE_MAX + 4];
  return ms__lines_fail(&r->L, 1, r->err, "'%s' is not exit_ns, %soccurrence or %s",
                        ms__quote(f[0], strlen(f[0]), 32, q),
                        r->g->version == 1 ? "dropped, " : "",
                        r->g->version == 1 ? "survivor" : "survivors");
}

// The first line: "# memstub-generations 1" or "2".
static int magic(reader *r, const char *line) {
  static const char m[] = "# memstub-generations ";
  if (strncmp(line, m, sizeof m - 1) != 0)
    return memstub_error_set(r->err, -EINVAL, "%s:1: not a memstub generations file (expected "
                             "'# memstub-generations 2')", r->L.path);
  int64_t v;
  const char *s = line + sizeof m - 1;
  if (ms__parse_i64(s, strlen(s), &v) < 0 || v < 1 || v > 2) {
    char q[MS__QUOTE_MAX + 4];
    return memstub_error_set(r->err, -EINVAL, "%s:1: version '%s': this memstub reads versions "
                             "1 and 2", r->L.path, ms__quote(s, strlen(s), 32, q));
  }
  r->g->version = (int)v;
  return 0;
}

// What only the whole file shows: an exit_ns line, occurrences, and in
// version 2 every survivor in a survivors line.
static int finish(reader *r) {
  memstub_generations *g = r->g;
  if (!r->have_exit)
    return memstub_error_set(r->err, -EINVAL, "%s:%ld: no exit_ns line", r->L.path, r->L.line);
  if (!g->nocc)
    return memstub_error_set(r->err, -EINVAL, "%s:%ld: no occurrence line", r->L.path, r->L.line);
  for (size_t i = 0; g->version == 2 && i < g->nocc; i++) {
    const memstub_occurrence *o = &g->occ[i];
    const occ_extra *x = &r->ex[i];
    if (x->blocks != o->survivor_blocks || x->bytes != o->survivor_bytes)
      return memstub_error_set(r->err, -EINVAL, "%s:%ld: field %d: occurrence %" PRId64 " left %"
                               PRId64 " blocks, %" PRId64 " bytes, but its survivors lines hold %"
                               PRId64 " blocks, %" PRId64 " bytes (a version 2 file holds every "
                               "survivor)", r->L.path, x->line,
                               x->blocks != o->survivor_blocks ? 7 : 8, o->id,
                               o->survivor_blocks, o->survivor_bytes, x->blocks, x->bytes);
  }
  return 0;
}

int memstub_generations_read(const char *path, memstub_generations **out, memstub_error *err) {
  *out = NULL;
  char *buf;
  size_t len;
  int rc = ms__read_file(path, &buf, &len, err);
  if (rc < 0) return rc;
  reader r = {.err = err, .sites = -1};
  ms__lines_init(&r.L, path, buf, len);
  r.g = calloc(1, sizeof *r.g);
  if (!r.g) rc = oom(&r);
  char *line;
  while (rc == 0 && (rc = ms__lines_next(&r.L, &line, err)) > 0)
    rc = r.L.line == 1 ? magic(&r, line) : read_line(&r, line);
  if (rc == 0 && r.L.line == 0)
    rc = memstub_error_set(err, -EINVAL, "%s:1: empty file: not a memstub generations file", path);
  if (rc == 0) rc = finish(&r);
  free(r.ex);
  free(buf);
  if (rc < 0) {
    memstub_generations_free(r.g);
    return rc;
  }
  *out = r.g;
  return 0;
}
