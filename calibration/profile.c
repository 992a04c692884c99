// The calibration profile: a text file of `key = value` lines.
//
// Written atomically; read strictly (every key known, once, and present;
// numbers in range; *_ns consistent with *_cycles). docs/calibration.md
// lists the keys.
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib_fields.h"
#include "internal.h"
#include "prim.h"

/* ---- the key table ---------------------------------------------------------- */

typedef struct table {
  ms__cal_key *k;
  size_t n, cap;
  const char *comment;  // attached to the next key added
} table;

static int add(table *t, const char *key, int type, void *ptr, size_t cap) {
  if (t->n == t->cap) return -1;
  ms__cal_key *k = &t->k[t->n];
  snprintf(k->key, sizeof k->key, "%s", key);
  k->type = type;
  k->ptr = ptr;
  k->cap = cap;
  k->cycles_of = -1;
  k->optional = 0;
  k->unknown = 0;
  k->value_of = -1;
  k->comment = t->comment;
  t->comment = NULL;
  return (int)t->n++;
}

/* A confidence interval's half-width, of the figure whose key is at index
 * of: optional (profiles before issue 28 lack them), -1 when unknown. */
static void ci_key(table *t, const char *key, double *v, int of) {
  int k = add(t, key, MS__CAL_DOUBLE, v, 0);
  if (k >= 0) t->k[k].optional = t->k[k].unknown = 1, t->k[k].value_of = of;
}

static void add_time(table *t, const char *name, memstub_calib_time *v) {
  char key[64];
  snprintf(key, sizeof key, "%s_cycles", name);
  int c = add(t, key, MS__CAL_DOUBLE, &v->cycles, 0);
  snprintf(key, sizeof key, "%s_ns", name);
  int n = add(t, key, MS__CAL_DOUBLE, &v->ns, 0);
  if (n >= 0) t->k[n].cycles_of = c;
  snprintf(key, sizeof key, "%s_scv", name);
  add(t, key, MS__CAL_DOUBLE, &v->scv, 0);
  snprintf(key, sizeof key, "%s_ci95_ns", name);
  ci_key(t, key, &v->ci_ns, n);
}

// A line's keys: NAME_base_*, NAME_PER_* (per: per_fault, per_page, per_ms), r2, resid.
static void add_line(table *t, const char *name, memstub_calib_line *v, const char *per) {
  char key[64];
  snprintf(key, sizeof key, "%s_base", name);
  add_time(t, key, &v->base);
  snprintf(key, sizeof key, "%s_%s", name, per);
  add_time(t, key, &v->per_fault);
  snprintf(key, sizeof key, "%s_r2", name);
  add(t, key, MS__CAL_DOUBLE, &v->r2, 0);
  snprintf(key, sizeof key, "%s_resid_ns", name);
  add(t, key, MS__CAL_DOUBLE, &v->resid_ns, 0);
}

/* The fields of memstub_calib_costs in the file's order, each under
 * PREFIX_name (time_ for the hot set, time_cold_ for the cold one). */
enum { F_TIME, F_PER_FAULT, F_PER_PAGE };
static const struct {
  const char *name;
  size_t off;
  int kind;  // F_*
} cost_fields[] = {
#define FIELD(name, kind) {#name, offsetof(memstub_calib_costs, name), F_##kind},
    MS__CALIB_COSTS(FIELD)
#undef FIELD
};
// Where the file's sections of hot figures start in cost_fields.
enum { C_BASIC = 0, C_HEAP = 1, C_MMAP = 5, C_STACK = 12, C_STACK_POP = 15, C_END = 16 };
_Static_assert(MS__ARRAY_SIZE(cost_fields) == C_END, "every field of memstub_calib_costs");

// The work figures cost_fields[from..to) of k, under prefix.
static void add_costs(table *t, const char *prefix, memstub_calib_costs *k, size_t from,
                      size_t to) {
  for (size_t i = from; i < to; i++) {
    char key[64];
    snprintf(key, sizeof key, "%s_%s", prefix, cost_fields[i].name);
    void *v = (char *)k + cost_fields[i].off;
    if (cost_fields[i].kind == F_TIME) add_time(t, key, v);
    else add_line(t, key, v, cost_fields[i].kind == F_PER_FAULT ? "per_fault" : "per_page");
  }
}

#define TEXT(t, key, field) add(t, key, MS__CAL_TEXT, (field), sizeof(field))

// The host and the runtime build the figures belong to.
static void keys_host(table *t, memstub_profile *p) {
  add(t, "format", MS__CAL_INT, &p->format, 0);
  t->comment = "the host and the runtime build the figures belong to";
  TEXT(t, "host.arch", p->arch);
  TEXT(t, "host.cpu", p->cpu);
  TEXT(t, "host.kernel", p->kernel);
  TEXT(t, "host.libc", p->libc);
  TEXT(t, "host.compiler", p->compiler);
  TEXT(t, "host.cflags", p->cflags);
  TEXT(t, "host.date", p->date);
  add(t, "page_size_bytes", MS__CAL_I64, &p->page_size, 0);
  add(t, "cycles_per_ns", MS__CAL_DOUBLE, &p->cycles_per_ns, 0);
  add(t, "cycles_invariant", MS__CAL_INT, &p->cycles_invariant, 0);
  add(t, "timer_overhead_cycles", MS__CAL_DOUBLE, &p->timer_cycles, 0);
  add(t, "repetitions", MS__CAL_I64, &p->repetitions, 0);
  add(t, "mmap_threshold_bytes", MS__CAL_I64, &p->mmap_threshold, 0);
  add(t, "heap_pad_bytes", MS__CAL_I64, &p->heap_pad, 0);
  add(t, "heap_arena_room_bytes", MS__CAL_I64, &p->heap_arena_room, 0);
}

// The hot figures in their sections, with the waiting figures after basic
// and the cached stack's use before the pop.
static void keys_hot(table *t, memstub_profile *p) {
  t->comment = "time per point (eq. 1) and waiting";
  add_costs(t, "time", &p->hot, C_BASIC, C_HEAP);
  add_time(t, "time_wait_late", &p->wait_late);
  add_time(t, "time_measure_trace", &p->measure_trace);
  add_line(t, "time_sleep_overshoot", &p->sleep_overshoot, "per_ms");
  add(t, "time_sleep_overshoot_p90_ns", MS__CAL_DOUBLE, &p->sleep_overshoot_p90_ns, 0);
  t->comment =
      "heap in the arena: alloc by faults (eq. 5), use = base + per_fault x faults (eq. 6)";
  add_costs(t, "time", &p->hot, C_HEAP, C_MMAP);
  t->comment = "heap block served from mmap (extension), and the moves between arena and mmap";
  add_costs(t, "time", &p->hot, C_MMAP, C_STACK);
  t->comment = "stack: alloc by faults (eq. 7), use = base + per_fault x faults (eq. 8)";
  add_costs(t, "time", &p->hot, C_STACK, C_STACK_POP);
  add_line(t, "time_stack_use_retouch", &p->stack_use_retouch, "per_fault");
  add_costs(t, "time", &p->hot, C_STACK_POP, C_END);
}

static void keys_cold(table *t, memstub_profile *p) {
  t->comment = "cold costs: the work above measured with a sleep before every point "
               "(cold_delay_ns), as a replay with delays runs it; medians; used for rows waiting "
               "at least cold_min_delay_ns (cold_delay_ns = 0: none measured)";
  add(t, "cold_delay_ns", MS__CAL_I64, &p->cold_delay, 0);
  add(t, "cold_min_delay_ns", MS__CAL_I64, &p->cold_min_delay, 0);
  add(t, "cold_repetitions", MS__CAL_I64, &p->cold_repetitions, 0);
  add_costs(t, "time_cold", &p->cold, C_BASIC, C_END);
}

static void keys_bytes(table *t, memstub_profile *p) {
  t->comment = "eq. 4 against the faults counted: share of rising points predicted exactly";
  add(t, "faults_eq4_heap_agreement", MS__CAL_DOUBLE, &p->eq4_heap_agreement, 0);
  add(t, "faults_eq4_stack_agreement", MS__CAL_DOUBLE, &p->eq4_stack_agreement, 0);
  t->comment = "bytes";
  add(t, "heap_overhead_empty_bytes", MS__CAL_I64, &p->heap_overhead_empty, 0);
  add(t, "heap_overhead_inuse_bytes", MS__CAL_I64, &p->heap_overhead_inuse, 0);
  add(t, "heap_overhead_mmap_bytes", MS__CAL_I64, &p->heap_overhead_mmap, 0);
  add(t, "stack_offset_bytes", MS__CAL_I64, &p->stack_offset, 0);
  add(t, "stack_overhead_per_frame_bytes", MS__CAL_I64, &p->stack_per_frame, 0);
  add(t, "stack_fit_r2", MS__CAL_DOUBLE, &p->stack_fit_r2, 0);
  add(t, "stack_fit_max_residual_bytes", MS__CAL_I64, &p->stack_fit_max_resid, 0);
  // Optional: profiles written before issue 13 lack them.
  t->comment = "resident memory (docs/memory-model.md): the replay's own pages";
  int k = add(t, "resident_overhead_bytes", MS__CAL_I64, &p->resident_overhead, 0);
  if (k >= 0) t->k[k].optional = 1;
  k = add(t, "resident_entry_bytes", MS__CAL_I64, &p->resident_entry, 0);
  if (k >= 0) t->k[k].optional = 1;
  k = add(t, "resident_per_point_bytes", MS__CAL_DOUBLE, &p->resident_per_point, 0);
  if (k >= 0) t->k[k].optional = 1;
  // Optional: profiles written before issue 14's calibration lack them.
  t->comment = "allocator calls as a stub's work makes them (calibration/calls.c): ns per call "
               "by kind and size class (the median of the rounds, its 95 % interval's "
               "half-width), and the work spin's rate";
  static const char *const names[MEMSTUB_WORK_CALLS] = {MEMSTUB_WORK_CALL_COLUMNS};
  for (int c = 0; c < MEMSTUB_WORK_CALLS; c++) {
    char key[64];
    snprintf(key, sizeof key, "call_%s_ns", names[c] + 6);  // calls_malloc_tiny -> call_malloc_tiny_ns
    k = add(t, key, MS__CAL_DOUBLE, &p->call_ns[c], 0);
    if (k >= 0) t->k[k].optional = 1;
    snprintf(key, sizeof key, "call_%s_ci95_ns", names[c] + 6);
    ci_key(t, key, &p->call_ci_ns[c], k);
  }
  k = add(t, "spin_steps_per_ns", MS__CAL_DOUBLE, &p->spin_steps_per_ns, 0);
  if (k >= 0) t->k[k].optional = 1;
  // Optional: profiles written before issue 32 item 2 lack them.
  t->comment = "the work's memory touches (runtime/work_loops.c): ns per touch by block size";
  static const char *const touch[MEMSTUB_WORK_TOUCH_SIZES] = {MEMSTUB_WORK_TOUCH_KEYS};
  for (int c = 0; c < MEMSTUB_WORK_TOUCH_SIZES; c++) {
    k = add(t, touch[c], MS__CAL_DOUBLE, &p->touch_ns[c], 0);
    if (k >= 0) t->k[k].optional = 1;
  }
}

size_t ms__cal_keys(memstub_profile *p, ms__cal_key *keys, size_t cap) {
  table t = {.k = keys, .cap = cap};
  keys_host(&t, p);
  keys_hot(&t, p);
  keys_cold(&t, p);
  keys_bytes(&t, p);
  return t.n;
}

/* ---- writing ---------------------------------------------------------------- */

// Numbers are written with ten significant digits.
#define NUM_FMT "%.10g"

// d as a profile file holds it, so that what the reader checks is exactly what
// a written copy reads back. -EINVAL when those digits no longer read as a
// finite number (at the ends of the double range).
static int as_written(double *d) {
  char buf[32];
  snprintf(buf, sizeof buf, NUM_FMT, *d);
  return ms__parse_double(buf, d);
}

int memstub_profile_write(const memstub_profile *p, const char *path, memstub_error *err) {
  ms__cal_key keys[MS__CAL_MAXKEYS];
  size_t n = ms__cal_keys((memstub_profile *)p, keys, MS__CAL_MAXKEYS);
  ms__afile af;
  int rc = ms__afile_open(&af, path, err);
  if (rc < 0) return rc;
  FILE *f = af.f;
  fprintf(f, "# memstub calibration profile (docs/calibration.md): key = value, units in the "
             "key names\n");
  for (size_t i = 0; i < n; i++) {
    const ms__cal_key *k = &keys[i];
    if (k->comment) fprintf(f, "\n# %s\n", k->comment);
    switch (k->type) {
      case MS__CAL_TEXT: {
        // One line: control characters become spaces.
        char buf[300];
        snprintf(buf, sizeof buf, "%s", (const char *)k->ptr);
        for (char *c = buf; *c; c++)
          if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
        fprintf(f, "%s = %s\n", k->key, buf);
        break;
      }
      case MS__CAL_I64: fprintf(f, "%s = %lld\n", k->key, (long long)*(int64_t *)k->ptr); break;
      case MS__CAL_INT: fprintf(f, "%s = %d\n", k->key, *(int *)k->ptr); break;
      default: fprintf(f, "%s = " NUM_FMT "\n", k->key, *(double *)k->ptr); break;
    }
  }
  return ms__afile_commit(&af, err);
}

/* ---- reading ---------------------------------------------------------------- */

static char *trim(char *s, char *end) {
  while (s < end && (*s == ' ' || *s == '\t')) s++;
  while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) end--;
  *end = '\0';
  return s;
}

// The reader's state over one text: the profile so far, its keys, and on
// which line each key was seen (0: not yet).
typedef struct reader {
  const char *name;
  memstub_profile p;
  ms__cal_key keys[MS__CAL_MAXKEYS];
  size_t nk;
  int seen[MS__CAL_MAXKEYS];
  long line;
  memstub_error *err;
} reader;

// A text value, kept as the writer writes it back: one line; a tab is a
// space; other control characters are refused.
static int set_text(reader *r, const char *key, const ms__cal_key *k, char *val) {
  size_t bad = 0;
  for (char *c = val; *c && !bad; c++)
    if (*c == '\t') *c = ' ';
    else if ((unsigned char)*c < 0x20 || *c == 0x7f) bad = (size_t)(c - val) + 1;
  if (bad)
    return memstub_error_set(r->err, -EINVAL,
                             "%s:%ld: %s: control character 0x%02x in the text (at "
                             "character %zu)",
                             r->name, r->line, key, (unsigned char)val[bad - 1], bad);
  if (strlen(val) >= k->cap)
    return memstub_error_set(r->err, -EINVAL, "%s:%ld: %s: longer than %zu characters", r->name,
                             r->line, key, k->cap - 1);
  snprintf(k->ptr, k->cap, "%s", val);
  return 0;
}

// A number: an integer (int or int64_t) or a double that reads back as written.
static int set_number(reader *r, const char *key, const ms__cal_key *k, const char *val) {
  char q[MS__QUOTE_MAX + 4];
  int64_t v;
  double d;
  if (k->type != MS__CAL_DOUBLE) {
    if (ms__parse_i64(val, strlen(val), &v) < 0 ||
        (k->type == MS__CAL_INT && (v < -2147483647 || v > 2147483647)))
      return memstub_error_set(r->err, -EINVAL, "%s:%ld: %s: expected an integer, found '%s'",
                               r->name, r->line, key, ms__quote(val, strlen(val), 40, q));
    if (k->type == MS__CAL_INT) *(int *)k->ptr = (int)v;
    else *(int64_t *)k->ptr = v;
    return 0;
  }
  if (ms__parse_double(val, &d) < 0)
    return memstub_error_set(r->err, -EINVAL, "%s:%ld: %s: expected a number, found '%s'",
                             r->name, r->line, key, ms__quote(val, strlen(val), 40, q));
  if (as_written(&d) < 0)
    return memstub_error_set(r->err, -EINVAL, "%s:%ld: %s: %s is out of range", r->name,
                             r->line, key, ms__quote(val, strlen(val), 40, q));
  *(double *)k->ptr = d;
  return 0;
}

/* Why the number just read for key is out of its range, or NULL: sizes and
 * counts positive, times and spreads >= 0 (offsets may be negative). */
static const char *out_of_range(const char *key, const ms__cal_key *k, const memstub_profile *p) {
  int64_t iv = k->type == MS__CAL_I64 ? *(int64_t *)k->ptr : 0;
  double dv = k->type == MS__CAL_DOUBLE ? *(double *)k->ptr : 0;
  if ((strcmp(key, "page_size_bytes") == 0 && (iv < 512 || (iv & (iv - 1)) != 0)))
    return "a power of two of at least 512";
  if (strcmp(key, "repetitions") == 0 && iv < 1) return "at least 1";
  if (strcmp(key, "cycles_per_ns") == 0 && !(dv > 0)) return "above 0";
  if (strcmp(key, "stack_overhead_per_frame_bytes") == 0 && (iv < 0 || iv > 1 << 20))
    return "between 0 and 1 MiB";
  if ((strcmp(key, "mmap_threshold_bytes") == 0 || strcmp(key, "heap_pad_bytes") == 0 ||
       strcmp(key, "heap_arena_room_bytes") == 0 || strncmp(key, "cold_", 5) == 0) &&
      iv < 0)
    return "0 or more";
  if (strcmp(key, "cycles_invariant") == 0 && p->cycles_invariant != 0 &&
      p->cycles_invariant != 1)
    return "0 or 1";
  if (k->type != MS__CAL_DOUBLE) return NULL;
  if (k->unknown) return dv < 0 && dv != -1 ? "0 or more, or -1 (unknown)" : NULL;
  if (strstr(key, "_scv") && dv < 0) return "0 or more";
  if (strstr(key, "agreement") && (dv < 0 || dv > 1)) return "between 0 and 1";
  if ((strncmp(key, "call_", 5) == 0 || strncmp(key, "touch_", 6) == 0 ||
       strcmp(key, "spin_steps_per_ns") == 0) && dv < 0)
    return "0 or more";
  if (strncmp(key, "time_", 5) == 0 && (strstr(key, "_cycles") || strstr(key, "_ns")) &&
      !strstr(key, "_base_") && dv < 0)
    return "0 or more";
  return NULL;
}

// The value of key k (index i), checked: format first, then its range.
static int set_value(reader *r, size_t i, const char *key, char *val) {
  ms__cal_key *k = &r->keys[i];
  char q[MS__QUOTE_MAX + 4];
  r->seen[i] = (int)r->line;
  int rc = k->type == MS__CAL_TEXT ? set_text(r, key, k, val) : set_number(r, key, k, val);
  if (rc < 0) return rc;
  if (strcmp(key, "format") == 0 && r->p.format != MEMSTUB_PROFILE_FORMAT)
    return memstub_error_set(r->err, -EINVAL,
                             "%s:%ld: profile format %d; this memstub reads format %d "
                             "(calibrate again)",
                             r->name, r->line, r->p.format, MEMSTUB_PROFILE_FORMAT);
  const char *why = k->type != MS__CAL_TEXT ? out_of_range(key, k, &r->p) : NULL;
  if (why)
    return memstub_error_set(r->err, -EINVAL, "%s:%ld: %s: must be %s, not %s", r->name, r->line,
                             key, why, ms__quote(val, strlen(val), 40, q));
  return 0;
}

// One line that is neither blank nor a comment: `key = value`.
static int read_line(reader *r, char *l) {
  char q[MS__QUOTE_MAX + 4];
  char *eq = strchr(l, '=');
  if (!eq)
    return memstub_error_set(r->err, -EINVAL, "%s:%ld: expected 'key = value', found '%s'",
                             r->name, r->line, ms__quote(l, strlen(l), 60, q));
  char *key = trim(l, eq), *val = trim(eq + 1, eq + 1 + strlen(eq + 1));
  size_t i = 0;
  while (i < r->nk && strcmp(r->keys[i].key, key) != 0) i++;
  if (!*key)
    return memstub_error_set(r->err, -EINVAL, "%s:%ld: missing key before '='", r->name, r->line);
  if (i == r->nk)
    return memstub_error_set(r->err, -EINVAL, "%s:%ld: unknown key '%s' (profile format %d)",
                             r->name, r->line, ms__quote(key, strlen(key), 60, q),
                             MEMSTUB_PROFILE_FORMAT);
  if (r->seen[i])
    return memstub_error_set(r->err, -EINVAL, "%s:%ld: %s given twice (first on line %d)",
                             r->name, r->line, key, r->seen[i]);
  return set_value(r, i, key, val);
}

// Every line of buf[0..len) (NUL-terminated at len).
static int read_lines(reader *r, char *buf, size_t len) {
  char *s = buf, *bufend = buf + len;
  while (s < bufend) {
    r->line++;
    char *nl = memchr(s, '\n', (size_t)(bufend - s));
    char *end = nl ? nl : bufend;
    char *next = nl ? nl + 1 : bufend;
    if (memchr(s, '\0', (size_t)(end - s)))
      return memstub_error_set(r->err, -EINVAL, "%s:%ld: a NUL byte (not a text file)", r->name,
                               r->line);
    char *l = trim(s, end);
    s = next;
    if (!*l || *l == '#') continue;
    int rc = read_line(r, l);
    if (rc < 0) return rc;
  }
  return 0;
}

/* Every key present (but the optional ones: an interval left out is
 * unknown, -1), and every *_ns figure its *_cycles figure over
 * cycles_per_ns (1 % slack). */
static int check_complete(reader *r) {
  for (size_t i = 0; i < r->nk; i++) {
    if (!r->seen[i] && !r->keys[i].optional)
      return memstub_error_set(r->err, -EINVAL, "%s:%ld: missing key '%s'", r->name, r->line + 1,
                               r->keys[i].key);
    if (!r->seen[i] && r->keys[i].unknown) *(double *)r->keys[i].ptr = -1;
  }
  for (size_t i = 0; i < r->nk; i++) {
    const ms__cal_key *k = &r->keys[i];
    if (k->cycles_of < 0) continue;
    double ns = *(double *)k->ptr, cyc = *(double *)r->keys[k->cycles_of].ptr;
    double want = cyc / r->p.cycles_per_ns;
    if (!isfinite(want) || fabs(ns - want) > 0.01 * fabs(want) + 0.5)
      return memstub_error_set(r->err, -EINVAL,
                               "%s:%d: %s = %g disagrees with %s / cycles_per_ns = %g (edit "
                               "both, or calibrate again)",
                               r->name, r->seen[i], k->key, ns, r->keys[k->cycles_of].key, want);
  }
  return 0;
}

/* Beyond what any host measures: a figure past these bounds is a
 * hand-edited or damaged profile, and every prediction made from it would be
 * meaningless (a basic cost of 1e17 ns predicts years of work for a stub).
 * Each bound is some thousand times what the slowest host measures (an
 * emulated one), so a real calibration never meets it. */
#define SECOND_NS 1e9
#define GIB 1073741824.0
static const struct {
  const char *prefix, *suffix;  // the keys it covers
  double max;                   // |value| at most this (cycles: over cycles_per_ns; the
                                // *_cycles of a *_ns figure agree with it, 1 %)
  const char *what;             // the bound, for the message
} plausible[] = {
    {"time_", "_ns", SECOND_NS, "at most 1 s"},
    {"call_", "_ns", SECOND_NS, "at most 1 s a call"},
    {"touch_", "_ns", 1e6, "at most 1 ms a touch"},
    {"timer_overhead_cycles", "", SECOND_NS, "at most 1 s of cycles"},
    {"cold_", "delay_ns", 60 * SECOND_NS, "at most a minute"},
    {"cycles_per_ns", "", 1e3, "at most 1000 (a 1 THz counter)"},
    {"spin_steps_per_ns", "", 1e4, "at most 10000"},
    {"heap_", "_bytes", GIB, "at most 1 GiB"},
    {"stack_", "_bytes", GIB, "at most 1 GiB"},
    {"resident_", "_bytes", GIB, "at most 1 GiB"},
    {"mmap_threshold_bytes", "", GIB, "at most 1 GiB"},
    {"page_size_bytes", "", GIB, "at most 1 GiB"},
    {"repetitions", "", 1e9, "at most 1e9"},
    {"cold_repetitions", "", 1e9, "at most 1e9"},
};

/* Every figure within its plausible bound (the table above), and
 * cycles_per_ns at least 0.001 (a 1 MHz counter). 0, or -EINVAL with err
 * naming the figure and its line. */
static int check_plausible(reader *r) {
  for (size_t i = 0; i < r->nk; i++) {
    const ms__cal_key *k = &r->keys[i];
    if (!r->seen[i] || k->type == MS__CAL_TEXT || k->type == MS__CAL_INT) continue;
    double v = k->type == MS__CAL_DOUBLE ? *(double *)k->ptr : (double)*(int64_t *)k->ptr;
    size_t kl = strlen(k->key);
    for (size_t b = 0; b < MS__ARRAY_SIZE(plausible); b++) {
      size_t pl = strlen(plausible[b].prefix), sl = strlen(plausible[b].suffix);
      if (kl < pl + sl || strncmp(k->key, plausible[b].prefix, pl) != 0 ||
          strcmp(k->key + kl - sl, plausible[b].suffix) != 0 || (sl == 0 && kl != pl))
        continue;
      double m = fabs(v);
      if (strcmp(k->key, "timer_overhead_cycles") == 0) m /= r->p.cycles_per_ns;
      if (m <= plausible[b].max) break;
      return memstub_error_set(r->err, -EINVAL,
                               "%s:%d: %s = %g is beyond what a host measures (%s): a hand-edited "
                               "or damaged profile? calibrate again (memstub calibrate -o FILE)",
                               r->name, r->seen[i], k->key, v, plausible[b].what);
    }
    if (strcmp(k->key, "cycles_per_ns") == 0 && v < 1e-3)
      return memstub_error_set(r->err, -EINVAL,
                               "%s:%d: cycles_per_ns = %g is beyond what a host measures (at "
                               "least 0.001, a 1 MHz counter): a hand-edited or damaged profile? "
                               "calibrate again (memstub calibrate -o FILE)",
                               r->name, r->seen[i], v);
  }
  return 0;
}

int memstub_profile_parse(const char *name, const char *text, size_t len, memstub_profile *p,
                          memstub_error *err) {
  reader *r = calloc(1, sizeof *r);
  char *buf = malloc(len + 1);
  if (!r || !buf) {
    free(r);
    free(buf);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  r->name = name;
  r->err = err;
  r->nk = ms__cal_keys(&r->p, r->keys, MS__CAL_MAXKEYS);
  memcpy(buf, text, len);
  buf[len] = '\0';
  int rc = read_lines(r, buf, len);
  if (rc == 0) rc = check_complete(r);
  if (rc == 0) rc = check_plausible(r);
  if (rc == 0) *p = r->p;
  free(buf);
  free(r);
  return rc;
}

int memstub_profile_read(const char *path, memstub_profile *p, memstub_error *err) {
  char *buf;
  size_t len;
  int rc = ms__read_file(path, &buf, &len, err);
  if (rc < 0) return rc;
  rc = memstub_profile_parse(path, buf, len, p, err);
  free(buf);
  return rc;
}

/* ---- fitness for this host ------------------------------------------------------ */

int memstub_profile_check(const memstub_profile *p, const char *name, char *warn, size_t cap,
                          memstub_error *err) {
  if (!name) name = "(profile)";
  if (warn && cap) warn[0] = '\0';
  const char *arch = memstub_host_arch();
  if (strcmp(p->arch, arch) != 0)
    return memstub_error_set(err, -EINVAL,
                             "%s: measured on %s, this host is %s: calibrate on the host the "
                             "stub runs on (memstub calibrate -o FILE)",
                             name, p->arch, arch);
  long page = ms__prim_page_size();
  if (p->page_size != page)
    return memstub_error_set(err, -EINVAL,
                             "%s: measured with %lld-byte pages, this host has %ld-byte pages: "
                             "calibrate on the host the stub runs on (memstub calibrate -o FILE)",
                             name, (long long)p->page_size, page);
  memstub_profile here;
  memset(&here, 0, sizeof here);
  ms__cal_build_info(&here);
  const char *what = strcmp(p->compiler, here.compiler) != 0 ? "compiler"
                     : strcmp(p->cflags, here.cflags) != 0   ? "compiler flags"
                                                             : NULL;
  if (!what) return 0;
  if (warn && cap)
    snprintf(warn, cap,
             "%s: measured with a runtime built by another %s ('%s' '%s', this one '%s' '%s'); "
             "the stack overhead per frame depends on it: calibrate again",
             name, what, p->compiler, p->cflags, here.compiler, here.cflags);
  return 1;
}
