// --check thresholds: parsing "KEY=VALUE,..." and evaluating against a report.
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ms_common.h"

typedef enum qty {
  Q_TOTAL,      // |duration error|, time unit
  Q_TOTAL_PCT,  // |duration error| in %
  Q_P50,
  Q_P99,
  Q_MAX,
  Q_LATE,      // count, or % of compared
  Q_EXACT,     // share, %
  Q_MEM_MAX,   // bytes
  Q_MEM_MEAN,  // bytes
  Q_MEM_P90,   // p90 of |error|, % of ORIGINAL's peak
  Q_MEM_PEAK,  // |peak error|, % of ORIGINAL's peak
  Q_MISSING,
  Q_REPEATED,
  Q_WORK_PCT,   // |total error| of a work series, % of ORIGINAL's total (col: work_series)
  Q_CPU_P90,    // p90 of |CPU time error| per interval, time unit
  Q_CALLS_P90,  // p90 of |calls error| per interval, calls
} qty;

// The work series a Q_WORK_PCT key judges (its col): cpu, calls, churn, allocs, faults, the kinds.
enum { W_CPU, W_CALLS, W_CHURN, W_ALLOCS, W_FAULTS, W_KIND };

typedef struct keyinfo {
  qty q;
  int adj;       // the offset-removed view
  int col;       // memory column: 0 stack, 1 heap, 2 rss, 3 mapped
  double scale;  // ns per unit for time keys
  const char *unit;
  const char *what;
  memstub_compare_check_dir dir;
} keyinfo;

static const char key_list[] =
    "total-ns|us|ms|s, total-pct, [adj-]p50|p99|max-ns|us|ms|s, [adj-]late, stack-exact, "
    "heap-exact, stack-max, heap-max, stack-mean, heap-mean, rss-exact, mapped-exact, rss-max, "
    "mapped-max, rss-mean, mapped-mean, rss-p90, mapped-p90, rss-peak, mapped-peak, "
    "cpu-total-pct, calls-total-pct, calls-alloc-pct, "
    "calls-malloc|calloc|realloc|free|memalign-pct, "
    "churn-total-pct, faults-total-pct, cpu-p90-ns|us|ms|s, calls-p90, missing, repeated, "
    "total-heap-max "
    "(tN.KEY: thread N only)";

static int time_unit(const char *u, keyinfo *k) {
  static const struct {
    const char *name;
    double scale;
  } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (size_t i = 0; i < MS__ARRAY_SIZE(units); i++)
    if (strcmp(u, units[i].name) == 0) {
      k->unit = units[i].name;
      k->scale = units[i].scale;
      return 0;
    }
  return -1;
}

// Parse a key ("adj-p99-us"); 0 or -1 when unknown.
static int parse_key(const char *key, keyinfo *k) {
  memset(k, 0, sizeof *k);
  k->dir = MEMSTUB_COMPARE_AT_MOST;
  if (strcmp(key, "total-heap-max") == 0) {  // the process total (threads), else heap-max
    *k = (keyinfo){Q_MEM_MAX, 0, 1, 1, "bytes", "largest |total heap error|",
                   MEMSTUB_COMPARE_AT_MOST};
    return 0;
  }
  if (strcmp(key, "total-pct") == 0) {
    *k = (keyinfo){Q_TOTAL_PCT, 0, 0, 1, "%", "|total duration error|", MEMSTUB_COMPARE_AT_MOST};
    return 0;
  }
  // The work (issue 14): totals and per-interval errors.
  if (strcmp(key, "cpu-total-pct") == 0 || strcmp(key, "calls-total-pct") == 0 ||
      strcmp(key, "churn-total-pct") == 0) {
    int col = key[1] == 'p' ? W_CPU : key[1] == 'a' ? W_CALLS : W_CHURN;
    static const char *const what[] = {"|CPU time error| / original", "|calls error| / original",
                                       "|churn bytes error| / original"};
    *k = (keyinfo){Q_WORK_PCT, 0, col, 1, "%", what[col], MEMSTUB_COMPARE_AT_MOST};
    return 0;
  }
  if (strcmp(key, "faults-total-pct") == 0) {
    *k = (keyinfo){Q_WORK_PCT, 0, W_FAULTS, 1, "%", "|minor faults error| / original",
                   MEMSTUB_COMPARE_AT_MOST};
    return 0;
  }
  if (strcmp(key, "calls-alloc-pct") == 0) {
    *k = (keyinfo){Q_WORK_PCT, 0, W_ALLOCS, 1, "%",
                   "|allocating calls error| / original", MEMSTUB_COMPARE_AT_MOST};
    return 0;
  }
  if (strncmp(key, "calls-", 6) == 0) {
    for (int j = 0; j < MEMSTUB_COMPARE_CALL_KINDS; j++) {
      const char *kn = memstub_compare_call_kind_name(j);
      size_t l = strlen(kn);
      if (strncmp(key + 6, kn, l) == 0 && strcmp(key + 6 + l, "-pct") == 0) {
        static const char *const what[] = {
            "|malloc calls error| / original", "|calloc calls error| / original",
            "|realloc calls error| / original", "|free calls error| / original",
            "|memalign calls error| / original"};
        *k = (keyinfo){Q_WORK_PCT, 0, W_KIND + j, 1, "%", what[j], MEMSTUB_COMPARE_AT_MOST};
        return 0;
      }
    }
    if (strcmp(key + 6, "p90") == 0) {
      *k = (keyinfo){Q_CALLS_P90, 0, W_CALLS, 1, "calls", "p90 of |calls error| per interval",
                     MEMSTUB_COMPARE_AT_MOST};
      return 0;
    }
    return -1;
  }
  if (strncmp(key, "cpu-p90-", 8) == 0) {
    k->q = Q_CPU_P90;
    k->col = W_CPU;
    k->what = "p90 of |CPU time error| per interval";
    return time_unit(key + 8, k);
  }
  if (strncmp(key, "total-", 6) == 0) {
    k->q = Q_TOTAL;
    k->what = "|total duration error|";
    return time_unit(key + 6, k);
  }
  // The checks of every memory curve (col: stack, heap, rss, mapped), and
  // of the resident ones, whose errors are shares of the original's peak.
#define MEM_KEYS(name, col)                                                                  \
  {name "-exact", Q_EXACT, col, "%", "share of exact " name " points", MEMSTUB_COMPARE_AT_LEAST}, \
      {name "-max", Q_MEM_MAX, col, "bytes", "largest |" name " error|", MEMSTUB_COMPARE_AT_MOST}, \
      {name "-mean", Q_MEM_MEAN, col, "bytes", "mean |" name " error|", MEMSTUB_COMPARE_AT_MOST}
#define PAGE_KEYS(name, col)                                                                   \
  {name "-p90", Q_MEM_P90, col, "%", "p90 of |" name " error| / original peak",                 \
   MEMSTUB_COMPARE_AT_MOST},                                                                   \
      {name "-peak", Q_MEM_PEAK, col, "%", "|" name " peak error| / original peak",             \
       MEMSTUB_COMPARE_AT_MOST}
  static const struct {
    const char *name;
    qty q;
    int col;
    const char *unit, *what;
    memstub_compare_check_dir dir;
  } plain[] = {
      MEM_KEYS("stack", 0), MEM_KEYS("heap", 1), MEM_KEYS("rss", 2), MEM_KEYS("mapped", 3),
      PAGE_KEYS("rss", 2), PAGE_KEYS("mapped", 3),
      {"missing", Q_MISSING, 0, "points", "points not measured", MEMSTUB_COMPARE_AT_MOST},
      {"repeated", Q_REPEATED, 0, "points", "repeated rows", MEMSTUB_COMPARE_AT_MOST},
  };
#undef MEM_KEYS
#undef PAGE_KEYS
  for (size_t i = 0; i < MS__ARRAY_SIZE(plain); i++)
    if (strcmp(key, plain[i].name) == 0) {
      *k = (keyinfo){plain[i].q, 0, plain[i].col, 1, plain[i].unit, plain[i].what, plain[i].dir};
      return 0;
    }
  if (strncmp(key, "adj-", 4) == 0) {
    k->adj = 1;
    key += 4;
  }
  if (strcmp(key, "late") == 0) {
    k->q = Q_LATE;
    k->unit = "points";
    k->scale = 1;
    k->what = k->adj ? "late points (offset removed)" : "late points";
    return 0;
  }
  static const struct {
    const char *name, *what, *adj_what;
    qty q;
  } pct[] = {
      {"p50-", "p50 of |time error|", "p50 of |time error - offset|", Q_P50},
      {"p99-", "p99 of |time error|", "p99 of |time error - offset|", Q_P99},
      {"max-", "largest |time error|", "largest |time error - offset|", Q_MAX},
  };
  for (size_t i = 0; i < MS__ARRAY_SIZE(pct); i++)
    if (strncmp(key, pct[i].name, 4) == 0) {
      k->q = pct[i].q;
      k->what = k->adj ? pct[i].adj_what : pct[i].what;
      return time_unit(key + 4, k);
    }
  return -1;
}

memstub_compare_checks *memstub_compare_checks_create(void) {
  return calloc(1, sizeof(memstub_compare_checks));
}

void memstub_compare_checks_free(memstub_compare_checks *cs) {
  if (!cs) return;
  free(cs->c);
  free(cs);
}

static int blank(char c) { return c == ' ' || c == '\t'; }

// One "KEY=VALUE" item, [p, e).
static int parse_item(memstub_compare_checks *cs, const char *p, const char *e,
                      memstub_error *err) {
  while (p < e && blank(*p)) p++;
  while (e > p && blank(e[-1])) e--;
  if (p == e)
    return memstub_error_set(err, -EINVAL, "empty item: expected KEY=VALUE (keys: %s)", key_list);
  // "tN." limits the check to thread N (traces with threads).
  int64_t thread = -1;
  const char *d = p + 1;
  while (*p == 't' && d < e && *d >= '0' && *d <= '9') d++;
  if (*p == 't' && d > p + 1 && d < e && *d == '.' && d - p <= 7) {
    thread = 0;
    for (const char *x = p + 1; x < d; x++) thread = thread * 10 + (*x - '0');
    p = d + 1;
  }
  const char *eq = memchr(p, '=', (size_t)(e - p));
  char key[24], val[40], q[MS__QUOTE_MAX + 4];
  const char *ke = eq ? eq : e;
  while (ke > p && blank(ke[-1])) ke--;
  if ((size_t)(ke - p) >= sizeof key)
    return memstub_error_set(err, -EINVAL, "'%s': unknown check (keys: %s)",
                             ms__quote(p, (size_t)(ke - p), 40, q), key_list);
  memcpy(key, p, (size_t)(ke - p));
  key[ke - p] = '\0';
  keyinfo k;
  if (parse_key(key, &k) < 0)
    return memstub_error_set(err, -EINVAL, "'%s': unknown check (keys: %s)",
                             ms__quote(key, strlen(key), 40, q), key_list);
  if (!eq) return memstub_error_set(err, -EINVAL, "'%s' needs a limit: %s=VALUE", key, key);
  const char *v = eq + 1;
  while (v < e && blank(*v)) v++;
  if ((size_t)(e - v) >= sizeof val)
    return memstub_error_set(err, -EINVAL, "%s: limit too long: '%s'", key,
                             ms__quote(v, (size_t)(e - v), 40, q));
  memcpy(val, v, (size_t)(e - v));
  val[e - v] = '\0';
  size_t vl = strlen(val);
  int percent = vl > 0 && val[vl - 1] == '%';
  if (percent) {
    val[--vl] = '\0';
    while (vl > 0 && blank(val[vl - 1])) val[--vl] = '\0';
  }
  double limit;
  if (ms__parse_double(val, &limit) < 0 || limit < 0)
    return memstub_error_set(err, -EINVAL, "%s: expected a non-negative number, found '%s'", key,
                             ms__quote(v, (size_t)(e - v), 40, q));
  if (percent && k.q != Q_EXACT && k.q != Q_LATE && k.q != Q_TOTAL_PCT && k.q != Q_MEM_P90 &&
      k.q != Q_MEM_PEAK && k.q != Q_WORK_PCT)
    return memstub_error_set(err, -EINVAL, "%s: takes no percentage ('%s'): give a number of %s",
                             key, ms__quote(v, (size_t)(e - v), 40, q), k.unit);
  if (k.q == Q_EXACT) {
    if (!percent) {
      if (limit > 1)
        return memstub_error_set(err, -EINVAL,
                                 "%s: a share is a percentage (99.5%%) or a fraction from 0 to "
                                 "1, found '%s'",
                                 key, ms__quote(v, (size_t)(e - v), 40, q));
      limit *= 100;
    }
    if (limit > 100)
      return memstub_error_set(err, -EINVAL, "%s: a share above 100%%: '%s'", key,
                               ms__quote(v, (size_t)(e - v), 40, q));
  }
  if (k.q == Q_LATE && percent) {
    if (limit > 100)
      return memstub_error_set(err, -EINVAL, "%s: a share above 100%%: '%s'", key,
                               ms__quote(v, (size_t)(e - v), 40, q));
    k.unit = "%";
  }
  memstub_compare_check c;
  memset(&c, 0, sizeof c);
  // The item as the user would write it again, without blanks ("10 %" -> "10%").
  char pre[24] = "";  // "t" + 19 digits + "." + NUL
  if (thread >= 0) snprintf(pre, sizeof pre, "t%lld.", (long long)thread);
  int sl = snprintf(c.spec, sizeof c.spec, "%s%s=%s%s", pre, key, val, percent ? "%" : "");
  if (sl < 0 || (size_t)sl >= sizeof c.spec)
    return memstub_error_set(err, -EINVAL, "%s: item too long", key);
  snprintf(c.key, sizeof c.key, "%s", key);
  c.limit = limit;
  c.dir = k.dir;
  c.unit = k.unit;
  c.what = k.what;
  c.thread = thread;
  memstub_compare_check *nc = realloc(cs->c, (cs->n + 1) * sizeof *nc);
  if (!nc) return memstub_error_set(err, -ENOMEM, "out of memory");
  cs->c = nc;
  cs->c[cs->n++] = c;
  return 0;
}

int memstub_compare_checks_parse(memstub_compare_checks *cs, const char *spec, memstub_error *err) {
  const char *p = spec;
  for (;;) {
    const char *comma = strchr(p, ',');
    const char *e = comma ? comma : p + strlen(p);
    int rc = parse_item(cs, p, e, err);
    if (rc < 0) return rc;
    if (!comma) return 0;
    p = comma + 1;
  }
}

// v as a percentage of an original peak: 0 when both are 0, +inf when only the peak is.
static double share_of_peak(double v, int64_t peak) {
  if (peak > 0) return 100.0 * v / (double)peak;
  return v == 0 ? 0.0 : INFINITY;
}

// The work series k.col of a Q_WORK_PCT key judges.
static const memstub_compare_series *work_series(const keyinfo *k, const memstub_compare_report *r) {
  return k->col == W_CPU      ? &r->work.cpu
         : k->col == W_CALLS  ? &r->work.calls
         : k->col == W_CHURN  ? &r->work.churn
         : k->col == W_ALLOCS ? &r->work.allocs
         : k->col == W_FAULTS ? &r->work.faults
                              : &r->work.kind[k->col - W_KIND];
}

static double check_value(const memstub_compare_check *c, const memstub_compare_report *r) {
  keyinfo k;
  if (parse_key(c->key, &k) < 0) return NAN;
  const memstub_compare_time *t = k.adj ? &r->adjusted : &r->time;
  const memstub_compare_mem *mems[4] = {&r->stack, &r->heap, &r->rss, &r->mapped};
  // k.col is a memory column for the memory keys only (a work series for the work keys).
  const memstub_compare_mem *m = mems[k.col >= 0 && k.col < 4 ? k.col : 0];
  double n = (double)(r->compared ? r->compared : 1);
  switch (k.q) {
    case Q_TOTAL: return fabs((double)r->duration.error_ns) / k.scale;
    case Q_TOTAL_PCT: return fabs(r->duration.error_pct);
    case Q_P50: return (double)t->p50_abs / k.scale;
    case Q_P99: return (double)t->p99_abs / k.scale;
    case Q_MAX: return (double)t->max_abs / k.scale;
    case Q_LATE: return strcmp(c->unit, "%") == 0 ? 100.0 * (double)t->late / n : (double)t->late;
    case Q_EXACT: return 100.0 * (double)m->exact / n;
    case Q_MEM_MAX: return (double)m->max_abs;
    case Q_MEM_MEAN: return m->mean_abs;
    case Q_MEM_P90: return share_of_peak((double)m->p90_abs, m->original_peak);
    case Q_MEM_PEAK:
      return share_of_peak(fabs((double)m->replayed_peak - (double)m->original_peak),
                           m->original_peak);
    case Q_WORK_PCT: return fabs(work_series(&k, r)->total_pct);
    case Q_CPU_P90: return (double)r->work.cpu.p90_abs / k.scale;
    case Q_CALLS_P90: return (double)r->work.calls.p90_abs;
    case Q_MISSING: return (double)r->missing;
    case Q_REPEATED: return (double)r->repeated;
  }
  return NAN;
}

// Whether check c judges an unknown memory column (stack, heap, rss, mapped).
static int on_unknown_column(const memstub_compare_check *c, const memstub_compare_report *r) {
  keyinfo k;
  if (parse_key(c->key, &k) < 0) return 0;
  if (k.q == Q_WORK_PCT || k.q == Q_CPU_P90 || k.q == Q_CALLS_P90)
    return (k.col == W_CPU      ? r->work.cpu_unknown
            : k.col == W_FAULTS ? r->work.faults_unknown
                                : r->work.calls_unknown) != NULL;
  if (k.q != Q_EXACT && k.q != Q_MEM_MAX && k.q != Q_MEM_MEAN && k.q != Q_MEM_P90 &&
      k.q != Q_MEM_PEAK)
    return 0;
  const char *unknown[4] = {r->stack_unknown, r->heap_unknown, r->rss_unknown, r->mapped_unknown};
  return unknown[k.col] != NULL;
}

const char *memstub_compare_check_skip_why(const memstub_compare_check *c,
                                           const memstub_compare_report *r) {
  if (!c->skipped) return NULL;
  if (c->thread > 0) return "a thread this comparison does not have (a trace without threads is thread 0)";
  keyinfo k;
  if (parse_key(c->key, &k) < 0) return "unknown";
  if (k.q == Q_WORK_PCT || k.q == Q_CPU_P90 || k.q == Q_CALLS_P90) {
    const char *w = k.col == W_CPU      ? r->work.cpu_unknown
                    : k.col == W_FAULTS ? r->work.faults_unknown
                                        : r->work.calls_unknown;
    return w ? w : "unknown";
  }
  const char *unknown[4] = {r->stack_unknown, r->heap_unknown, r->rss_unknown, r->mapped_unknown};
  return unknown[k.col] ? unknown[k.col] : "unknown";
}

const char *memstub_compare_check_undefined(const memstub_compare_check *c,
                                            const memstub_compare_report *r, char *buf,
                                            size_t cap) {
  keyinfo k;
  if (c->skipped || isfinite(c->value) || !cap || parse_key(c->key, &k) < 0) return NULL;
  // What the relative error is of: the target in a what-if, else ORIGINAL.
  const char *of = r->whatif.is ? "the target" : "ORIGINAL";
  char a[32], b[32];
  if (k.q == Q_WORK_PCT) {
    const memstub_compare_series *s = work_series(&k, r);
    if (k.col == W_CPU) ms__fmt_ns(s->replayed_total, a, sizeof a);
    else if (k.col == W_CHURN) ms__fmt_bytes(s->replayed_total, a, sizeof a);
    else snprintf(a, sizeof a, "%lld %s", (long long)s->replayed_total,
                  k.col == W_FAULTS ? "faults" : "calls");
    snprintf(buf, cap, "undefined, %s has none: REPLAYED %s", of, a);
  } else if (k.q == Q_MEM_P90 || k.q == Q_MEM_PEAK) {
    const memstub_compare_mem *m = k.col == 2 ? &r->rss : &r->mapped;
    ms__fmt_bytes(k.q == Q_MEM_PEAK ? m->replayed_peak : m->p90_abs, a, sizeof a);
    snprintf(buf, cap, "undefined, %s's peak is 0: REPLAYED's %s %s", of,
             k.q == Q_MEM_PEAK ? "peak" : "p90 of |error|", a);
  } else if (k.q == Q_TOTAL_PCT) {
    ms__fmt_ns(r->duration.original_ns, a, sizeof a);
    ms__fmt_ns(r->duration.replayed_ns, b, sizeof b);
    snprintf(buf, cap, "undefined, %s lasts %s: REPLAYED %s", of, a, b);
  } else {
    snprintf(buf, cap, "undefined");
  }
  return buf;
}

size_t memstub_compare_checks_run(memstub_compare_checks *cs, const memstub_compare_report *r) {
  size_t failed = 0;
  for (size_t i = 0; i < cs->n; i++) {
    memstub_compare_check *c = &cs->c[i];
    c->skipped = on_unknown_column(c, r) || c->thread > 0;
    if (c->skipped) {
      c->value = NAN;
      c->pass = 0;
      continue;
    }
    c->value = check_value(c, r);
    c->pass = c->dir == MEMSTUB_COMPARE_AT_MOST ? c->value <= c->limit : c->value >= c->limit;
    if (!c->pass) failed++;
  }
  return failed;
}
