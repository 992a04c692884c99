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
  k->comment = t->comment;
  t->comment = NULL;
  return (int)t->n++;
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
}

static void add_line_x(table *t, const char *name, memstub_calib_line *v, const char *per) {
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

static void add_line(table *t, const char *name, memstub_calib_line *v) {
  add_line_x(t, name, v, "per_fault");
}

// The work figures of a cold (or hot) set, under prefix: PREFIX_basic, ...
static void add_costs(table *t, const char *prefix, memstub_calib_costs *k) {
  static const struct {
    const char *name;
    size_t off;
    int kind;  // 0 time, 1 line per fault, 2 line per page
  } f[] = {
      {"basic", offsetof(memstub_calib_costs, basic), 0},
      {"heap_alloc_nofault", offsetof(memstub_calib_costs, heap_alloc_nofault), 0},
      {"heap_alloc_fault", offsetof(memstub_calib_costs, heap_alloc_fault), 0},
      {"heap_use", offsetof(memstub_calib_costs, heap_use), 1},
      {"heap_shrink", offsetof(memstub_calib_costs, heap_shrink), 0},
      {"heap_mmap_alloc_nofault", offsetof(memstub_calib_costs, heap_mmap_alloc_nofault), 0},
      {"heap_mmap_alloc_fault", offsetof(memstub_calib_costs, heap_mmap_alloc_fault), 0},
      {"heap_mmap_use", offsetof(memstub_calib_costs, heap_mmap_use), 1},
      {"heap_mmap_shrink", offsetof(memstub_calib_costs, heap_mmap_shrink), 2},
      {"heap_mmap_shrink_inpage", offsetof(memstub_calib_costs, heap_mmap_shrink_inpage), 0},
      {"heap_to_mmap", offsetof(memstub_calib_costs, heap_to_mmap), 2},
      {"heap_from_mmap", offsetof(memstub_calib_costs, heap_from_mmap), 0},
      {"stack_alloc_nofault", offsetof(memstub_calib_costs, stack_alloc_nofault), 0},
      {"stack_alloc_fault", offsetof(memstub_calib_costs, stack_alloc_fault), 0},
      {"stack_use", offsetof(memstub_calib_costs, stack_use), 1},
      {"stack_pop", offsetof(memstub_calib_costs, stack_pop), 0},
  };
  for (size_t i = 0; i < MS__ARRAY_SIZE(f); i++) {
    char key[64];
    snprintf(key, sizeof key, "%s_%s", prefix, f[i].name);
    void *v = (char *)k + f[i].off;
    if (f[i].kind == 0) add_time(t, key, v);
    else add_line_x(t, key, v, f[i].kind == 1 ? "per_fault" : "per_page");
  }
}

#define TEXT(t, key, field) add(t, key, MS__CAL_TEXT, (field), sizeof(field))

size_t ms__cal_keys(memstub_profile *p, ms__cal_key *keys, size_t cap) {
  table t = {.k = keys, .cap = cap};
  add(&t, "format", MS__CAL_INT, &p->format, 0);
  t.comment = "the host and the runtime build the figures belong to";
  TEXT(&t, "host.arch", p->arch);
  TEXT(&t, "host.cpu", p->cpu);
  TEXT(&t, "host.kernel", p->kernel);
  TEXT(&t, "host.libc", p->libc);
  TEXT(&t, "host.compiler", p->compiler);
  TEXT(&t, "host.cflags", p->cflags);
  TEXT(&t, "host.date", p->date);
  add(&t, "page_size_bytes", MS__CAL_I64, &p->page_size, 0);
  add(&t, "cycles_per_ns", MS__CAL_DOUBLE, &p->cycles_per_ns, 0);
  add(&t, "cycles_invariant", MS__CAL_INT, &p->cycles_invariant, 0);
  add(&t, "timer_overhead_cycles", MS__CAL_DOUBLE, &p->timer_cycles, 0);
  add(&t, "repetitions", MS__CAL_I64, &p->repetitions, 0);
  add(&t, "mmap_threshold_bytes", MS__CAL_I64, &p->mmap_threshold, 0);
  add(&t, "heap_pad_bytes", MS__CAL_I64, &p->heap_pad, 0);
  add(&t, "heap_arena_room_bytes", MS__CAL_I64, &p->heap_arena_room, 0);
  t.comment = "time per point (eq. 1) and waiting";
  add_time(&t, "time_basic", &p->basic);
  add_time(&t, "time_wait_late", &p->wait_late);
  add_time(&t, "time_measure_trace", &p->measure_trace);
  add_line_x(&t, "time_sleep_overshoot", &p->sleep_overshoot, "per_ms");
  add(&t, "time_sleep_overshoot_p90_ns", MS__CAL_DOUBLE, &p->sleep_overshoot_p90_ns, 0);
  t.comment = "heap in the arena: alloc by faults (eq. 5), use = base + per_fault x faults (eq. 6)";
  add_time(&t, "time_heap_alloc_nofault", &p->heap_alloc_nofault);
  add_time(&t, "time_heap_alloc_fault", &p->heap_alloc_fault);
  add_line(&t, "time_heap_use", &p->heap_use);
  add_time(&t, "time_heap_shrink", &p->heap_shrink);
  t.comment = "heap block served from mmap (extension), and the moves between arena and mmap";
  add_time(&t, "time_heap_mmap_alloc_nofault", &p->heap_mmap_alloc_nofault);
  add_time(&t, "time_heap_mmap_alloc_fault", &p->heap_mmap_alloc_fault);
  add_line(&t, "time_heap_mmap_use", &p->heap_mmap_use);
  add_line_x(&t, "time_heap_mmap_shrink", &p->heap_mmap_shrink, "per_page");
  add_time(&t, "time_heap_mmap_shrink_inpage", &p->heap_mmap_shrink_inpage);
  add_line_x(&t, "time_heap_to_mmap", &p->heap_to_mmap, "per_page");
  add_time(&t, "time_heap_from_mmap", &p->heap_from_mmap);
  t.comment = "stack: alloc by faults (eq. 7), use = base + per_fault x faults (eq. 8)";
  add_time(&t, "time_stack_alloc_nofault", &p->stack_alloc_nofault);
  add_time(&t, "time_stack_alloc_fault", &p->stack_alloc_fault);
  add_line(&t, "time_stack_use", &p->stack_use);
  add_line(&t, "time_stack_use_retouch", &p->stack_use_retouch);
  add_time(&t, "time_stack_pop", &p->stack_pop);
  t.comment = "cold costs: the work above measured with a sleep before every point "
              "(cold_delay_ns), as a replay with delays runs it; medians; used for rows waiting "
              "at least cold_min_delay_ns (cold_delay_ns = 0: none measured)";
  add(&t, "cold_delay_ns", MS__CAL_I64, &p->cold_delay, 0);
  add(&t, "cold_min_delay_ns", MS__CAL_I64, &p->cold_min_delay, 0);
  add(&t, "cold_repetitions", MS__CAL_I64, &p->cold_repetitions, 0);
  add_costs(&t, "time_cold", &p->cold);
  t.comment = "eq. 4 against the faults counted: share of rising points predicted exactly";
  add(&t, "faults_eq4_heap_agreement", MS__CAL_DOUBLE, &p->eq4_heap_agreement, 0);
  add(&t, "faults_eq4_stack_agreement", MS__CAL_DOUBLE, &p->eq4_stack_agreement, 0);
  t.comment = "bytes";
  add(&t, "heap_overhead_empty_bytes", MS__CAL_I64, &p->heap_overhead_empty, 0);
  add(&t, "heap_overhead_inuse_bytes", MS__CAL_I64, &p->heap_overhead_inuse, 0);
  add(&t, "heap_overhead_mmap_bytes", MS__CAL_I64, &p->heap_overhead_mmap, 0);
  add(&t, "stack_offset_bytes", MS__CAL_I64, &p->stack_offset, 0);
  add(&t, "stack_overhead_per_frame_bytes", MS__CAL_I64, &p->stack_per_frame, 0);
  add(&t, "stack_fit_r2", MS__CAL_DOUBLE, &p->stack_fit_r2, 0);
  add(&t, "stack_fit_max_residual_bytes", MS__CAL_I64, &p->stack_fit_max_resid, 0);
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

int memstub_profile_parse(const char *name, const char *text, size_t len, memstub_profile *p,
                          memstub_error *err) {
  memstub_profile tmp;
  memset(&tmp, 0, sizeof tmp);
  ms__cal_key keys[MS__CAL_MAXKEYS];
  size_t nk = ms__cal_keys(&tmp, keys, MS__CAL_MAXKEYS);
  int seen[MS__CAL_MAXKEYS] = {0};
  char *buf = malloc(len + 1);
  if (!buf) return memstub_error_set(err, -ENOMEM, "out of memory");
  memcpy(buf, text, len);
  buf[len] = '\0';
  int rc = 0;
  long line = 0;
  char *s = buf, *bufend = buf + len;
  while (rc == 0 && s < bufend) {
    line++;
    char *nl = memchr(s, '\n', (size_t)(bufend - s));
    char *end = nl ? nl : bufend;
    char *next = nl ? nl + 1 : bufend;
    if (memchr(s, '\0', (size_t)(end - s))) {
      rc = memstub_error_set(err, -EINVAL, "%s:%ld: a NUL byte (not a text file)", name, line);
      break;
    }
    char *l = trim(s, end);
    s = next;
    if (!*l || *l == '#') continue;
    char *eq = strchr(l, '=');
    char q[MS__QUOTE_MAX + 4];
    if (!eq) {
      rc = memstub_error_set(err, -EINVAL, "%s:%ld: expected 'key = value', found '%s'", name,
                             line, ms__quote(l, strlen(l), 60, q));
      break;
    }
    char *key = trim(l, eq), *val = trim(eq + 1, eq + 1 + strlen(eq + 1));
    size_t i = 0;
    while (i < nk && strcmp(keys[i].key, key) != 0) i++;
    if (!*key) {
      rc = memstub_error_set(err, -EINVAL, "%s:%ld: missing key before '='", name, line);
    } else if (i == nk) {
      rc = memstub_error_set(err, -EINVAL, "%s:%ld: unknown key '%s' (profile format %d)", name,
                             line, ms__quote(key, strlen(key), 60, q), MEMSTUB_PROFILE_FORMAT);
    } else if (seen[i]) {
      rc = memstub_error_set(err, -EINVAL, "%s:%ld: %s given twice (first on line %d)", name,
                             line, key, seen[i]);
    } else {
      seen[i] = (int)line;
      ms__cal_key *k = &keys[i];
      int64_t v;
      double d;
      switch (k->type) {
        case MS__CAL_TEXT: {
          // One line of text, kept as the writer writes it back: a tab is a
          // space; other control characters are refused.
          size_t bad = 0;
          for (char *c = val; *c && !bad; c++)
            if (*c == '\t') *c = ' ';
            else if ((unsigned char)*c < 0x20 || *c == 0x7f) bad = (size_t)(c - val) + 1;
          if (bad)
            rc = memstub_error_set(err, -EINVAL,
                                   "%s:%ld: %s: control character 0x%02x in the text (at "
                                   "character %zu)",
                                   name, line, key, (unsigned char)val[bad - 1], bad);
          else if (strlen(val) >= k->cap)
            rc = memstub_error_set(err, -EINVAL, "%s:%ld: %s: longer than %zu characters", name,
                                   line, key, k->cap - 1);
          else
            snprintf(k->ptr, k->cap, "%s", val);
          break;
        }
        case MS__CAL_I64:
        case MS__CAL_INT:
          if (ms__parse_i64(val, strlen(val), &v) < 0 ||
              (k->type == MS__CAL_INT && (v < -2147483647 || v > 2147483647)))
            rc = memstub_error_set(err, -EINVAL, "%s:%ld: %s: expected an integer, found '%s'",
                                   name, line, key, ms__quote(val, strlen(val), 40, q));
          else if (k->type == MS__CAL_INT)
            *(int *)k->ptr = (int)v;
          else
            *(int64_t *)k->ptr = v;
          break;
        default:
          if (ms__parse_double(val, &d) < 0)
            rc = memstub_error_set(err, -EINVAL, "%s:%ld: %s: expected a number, found '%s'",
                                   name, line, key, ms__quote(val, strlen(val), 40, q));
          else if (as_written(&d) < 0)
            rc = memstub_error_set(err, -EINVAL, "%s:%ld: %s: %s is out of range", name, line,
                                   key, ms__quote(val, strlen(val), 40, q));
          else
            *(double *)k->ptr = d;
          break;
      }
      if (rc == 0 && strcmp(key, "format") == 0 && tmp.format != MEMSTUB_PROFILE_FORMAT)
        rc = memstub_error_set(err, -EINVAL,
                               "%s:%ld: profile format %d; this memstub reads format %d "
                               "(calibrate again)",
                               name, line, tmp.format, MEMSTUB_PROFILE_FORMAT);
      if (rc == 0 && k->type != MS__CAL_TEXT) {
        // Ranges: sizes and counts positive, times and spreads >= 0 (offsets may be negative).
        int64_t iv = k->type == MS__CAL_I64 ? *(int64_t *)k->ptr : 0;
        double dv = k->type == MS__CAL_DOUBLE ? *(double *)k->ptr : 0;
        const char *why = NULL;
        if ((strcmp(key, "page_size_bytes") == 0 && (iv < 512 || (iv & (iv - 1)) != 0)))
          why = "a power of two of at least 512";
        else if (strcmp(key, "repetitions") == 0 && iv < 1)
          why = "at least 1";
        else if (strcmp(key, "cycles_per_ns") == 0 && !(dv > 0))
          why = "above 0";
        else if (strcmp(key, "stack_overhead_per_frame_bytes") == 0 && (iv < 0 || iv > 1 << 20))
          why = "between 0 and 1 MiB";
        else if ((strcmp(key, "mmap_threshold_bytes") == 0 || strcmp(key, "heap_pad_bytes") == 0 ||
                  strcmp(key, "heap_arena_room_bytes") == 0 || strncmp(key, "cold_", 5) == 0) &&
                 iv < 0)
          why = "0 or more";
        else if (strcmp(key, "cycles_invariant") == 0 && tmp.cycles_invariant != 0 &&
                 tmp.cycles_invariant != 1)
          why = "0 or 1";
        else if (k->type == MS__CAL_DOUBLE && strstr(key, "_scv") && dv < 0)
          why = "0 or more";
        else if (k->type == MS__CAL_DOUBLE && strstr(key, "agreement") && (dv < 0 || dv > 1))
          why = "between 0 and 1";
        else if (k->type == MS__CAL_DOUBLE && strncmp(key, "time_", 5) == 0 &&
                 (strstr(key, "_cycles") || strstr(key, "_ns")) && !strstr(key, "_base_") &&
                 dv < 0)
          why = "0 or more";
        if (why)
          rc = memstub_error_set(err, -EINVAL, "%s:%ld: %s: must be %s, not %s", name, line, key,
                                 why, ms__quote(val, strlen(val), 40, q));
      }
    }
  }
  for (size_t i = 0; rc == 0 && i < nk; i++)
    if (!seen[i])
      rc = memstub_error_set(err, -EINVAL, "%s:%ld: missing key '%s'", name, line + 1,
                             keys[i].key);
  // Every *_ns figure is its *_cycles figure over cycles_per_ns (1 % slack).
  for (size_t i = 0; rc == 0 && i < nk; i++) {
    if (keys[i].cycles_of < 0) continue;
    double ns = *(double *)keys[i].ptr, cyc = *(double *)keys[keys[i].cycles_of].ptr;
    double want = cyc / tmp.cycles_per_ns;
    if (!isfinite(want) || fabs(ns - want) > 0.01 * fabs(want) + 0.5)
      rc = memstub_error_set(err, -EINVAL,
                             "%s:%d: %s = %g disagrees with %s / cycles_per_ns = %g (edit both, "
                             "or calibrate again)",
                             name, seen[i], keys[i].key, ns, keys[keys[i].cycles_of].key, want);
  }
  free(buf);
  if (rc == 0) *p = tmp;
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
