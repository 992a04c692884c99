// What a comparison concludes (docs/compare-and-plot.md): the differences a
// stub has from its component by design, told apart from errors, and the
// one-line verdict with the goals it was held to.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memstub/work.h"
#include "ms_common.h"

int memstub_compare_goals(memstub_compare_checks *cs, const memstub_compare_report *r,
                          memstub_error *err) {
  int rc = memstub_compare_checks_parse(
      cs, "heap-exact=99%,total-pct=1,rss-peak=5%,mapped-peak=5%,cpu-total-pct=5,calls-alloc-pct=1",
      err);
  if (rc == 0 && r->calibrated) rc = memstub_compare_checks_parse(cs, "stack-exact=99%", err);
  return rc;
}

/* ---- differences by design ------------------------------------------------ */

enum { D_BLOCK, D_FREE, D_CHURN, D_STACK, D_N };
static const char *const design_key[D_N] = {"heap_block", "frees", "churn", "stack"};

const char *ms__compare_design_item(const memstub_compare_report *r, int k, char *buf, size_t cap) {
  if (k < 0 || k >= D_N) return NULL;
  const memstub_compare_work *w = &r->work;
  const memstub_compare_series *kd = w->kind;
  buf[0] = '\0';
  int calls = !w->calls_unknown;
  if (k == D_BLOCK && calls && r->heap_rows > 0) {
    int n = snprintf(buf, cap,
                     "the stub holds its heap in one block, resized with realloc at the %zu rows "
                     "that change the heap; each resize stands for one of the row's recorded "
                     "calls (a malloc, calloc or memalign that grew the heap, a free or realloc "
                     "that shrank it), so those kinds count fewer and realloc more:",
                     r->heap_rows);
    static const int kinds[] = {MEMSTUB_CALL_MALLOC, MEMSTUB_CALL_CALLOC, MEMSTUB_CALL_REALLOC,
                                MEMSTUB_CALL_MEMALIGN};
    for (size_t j = 0, sep = 0; n > 0 && (size_t)n < cap && j < 4; j++) {
      const memstub_compare_series *x = &kd[kinds[j]];
      if (!x->original_total && !x->replayed_total) continue;
      int m = snprintf(buf + n, cap - (size_t)n, "%s %s %" PRId64 " -> %" PRId64, sep++ ? "," : "",
                       memstub_compare_call_kind_name(kinds[j]), x->original_total,
                       x->replayed_total);
      if (m > 0) n += m;
    }
  } else if (k == D_FREE && calls &&
             kd[MEMSTUB_CALL_FREE].original_total != kd[MEMSTUB_CALL_FREE].replayed_total) {
    snprintf(buf, cap,
             "free %" PRId64 " -> %" PRId64 ": the stub frees every other block it makes before "
             "its next point, so that its heap stays exact at every row; the component frees "
             "when it is done with a block, and its frees that shrank the heap are the block's "
             "reallocs",
             kd[MEMSTUB_CALL_FREE].original_total, kd[MEMSTUB_CALL_FREE].replayed_total);
  } else if (k == D_CHURN && calls && w->churn.replayed_total != w->churn.original_total) {
    char a[32], b[32];
    ms__fmt_bytes(w->churn.original_total, a, sizeof a);
    ms__fmt_bytes(w->churn.replayed_total, b, sizeof b);
    snprintf(buf, cap,
             "churn %s -> %s: the stub's other blocks are freed before its next point, and "
             "their frees' bytes count too; its block's resizes count by their change%s, and "
             "a call asks for at least a byte",
             a, b, r->whatif.is && r->whatif.scales.heap != 1.0 ? " (scaled by the heap's what-if)" : "");
  } else if (k == D_STACK && !r->calibrated && !r->stack_unknown &&
             r->stack.max_abs > r->options.stack_slack) {
    char m[32];
    ms__fmt_bytes((int64_t)llround(r->stack.mean_abs), m, sizeof m);
    snprintf(buf, cap,
             "stack exact %.2f %% (mean |error| %s): REPLAYED's stub names no calibration "
             "profile, so each of its frames carries the replay's own bytes, and the verdict's "
             "goals leave the stack out; 'memstub calibrate -o host.profile', then 'memstub gen "
             "--calibration host.profile' takes them out (docs/calibration.md)",
             100.0 * r->stack.exact_share, m);
  }
  return design_key[k];
}

void ms__compare_design_text(FILE *f, const memstub_compare_report *r) {
  char buf[1024];
  int any = 0;
  for (int k = 0; k < D_N; k++) {
    ms__compare_design_item(r, k, buf, sizeof buf);
    if (!buf[0]) continue;
    if (!any++) fputs("\ndifferences by design (the stub is not the component; not errors):\n", f);
    fprintf(f, "  %-11s %s\n", design_key[k], buf);
  }
}

void ms__compare_design_json(FILE *f, const memstub_compare_report *r) {
  char buf[1024];
  int any = 0;
  fputs("  \"by_design\": [", f);
  for (int k = 0; k < D_N; k++) {
    ms__compare_design_item(r, k, buf, sizeof buf);
    if (!buf[0]) continue;
    fprintf(f, "%s\n    {\"key\": \"%s\", \"why\": ", any++ ? "," : "", design_key[k]);
    ms__compare_json_str(f, buf);
    fputc('}', f);
  }
  fprintf(f, "%s],\n", any ? "\n  " : "");
}

/* ---- the verdict -------------------------------------------------------- */

// A goal's name for people: the default goals' keys by what they hold, the others' as given.
static const char *goal_name(const memstub_compare_check *c) {
  static const char *const names[][2] = {
      {"heap-exact", "heap exact"},       {"stack-exact", "stack exact"},
      {"total-pct", "duration error"},    {"rss-peak", "resident peak error"},
      {"mapped-peak", "mapped peak error"}, {"cpu-total-pct", "CPU error"},
      {"calls-alloc-pct", "allocating calls error"}};
  if (c->thread < 0)
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
      if (strcmp(c->key, names[i][0]) == 0) return names[i][1];
  return c->thread < 0 ? c->key : c->spec;
}

// "heap exact 100.00 % (>= 99 %)" for check c on r at buf + *n.
static void goal_text(const memstub_compare_check *c, const memstub_compare_report *r, int pass,
                      char *buf, size_t cap, size_t *n) {
  char v[160], l[40];
  // A relative error of nothing says what it is of (never "inf %").
  if (memstub_compare_check_undefined(c, r, v, sizeof v)) {
    snprintf(l, sizeof l, "%g %s", c->limit, c->unit);
  } else if (strcmp(c->unit, "%") == 0) {
    snprintf(v, sizeof v, "%.2f %%", c->value);
    snprintf(l, sizeof l, "%g %%", c->limit);
  } else {
    snprintf(v, sizeof v, "%.6g %s", c->value, c->unit);
    snprintf(l, sizeof l, "%g %s", c->limit, c->unit);
  }
  const char *op = c->dir == MEMSTUB_COMPARE_AT_MOST ? (pass ? "<=" : ">") : (pass ? ">=" : "<");
  if (*n >= cap) return;
  int m = snprintf(buf + *n, cap - *n, "%s%s %s (%s %s)", *n ? ", " : "", goal_name(c), v, op, l);
  if (m > 0) *n += (size_t)m;
}

/* The verdict into buf: "faithful: ..." or "not faithful: ...", the goals
 * (or checks) held to, those not judged; *faithful set. cs has been run. */
static void verdict(const memstub_compare_report *r, const memstub_compare_checks *cs, int goals,
                    char *buf, size_t cap, int *faithful) {
  char failed[1024] = "", passed[1024] = "", skipped[512] = "";
  size_t nf = 0, np = 0, ns = 0, judged = 0;
  for (size_t i = 0; i < cs->n; i++) {
    const memstub_compare_check *c = &cs->c[i];
    if (c->skipped) {
      if (ns < sizeof skipped) {
        int m = snprintf(skipped + ns, sizeof skipped - ns, "%s%s", ns ? ", " : "", goal_name(c));
        if (m > 0) ns += (size_t)m;
      }
      continue;
    }
    judged++;
    if (c->pass) goal_text(c, r, 1, passed, sizeof passed, &np);
    else goal_text(c, r, 0, failed, sizeof failed, &nf);
  }
  *faithful = judged > 0 && nf == 0;
  const char *what = r->whatif.is ? " to the what-if (ORIGINAL with REPLAYED's scales)" : "";
  const char *by = goals ? "" : " by the checks";
  size_t n = 0;
  int m;
  if (!judged)
    m = snprintf(buf, cap, "not judged: every %s is unknown (%s)", goals ? "goal" : "check",
                 skipped);
  else if (*faithful)
    m = snprintf(buf, cap, "faithful%s%s: %s", what, by, passed);
  else
    m = snprintf(buf, cap, "not faithful%s%s: %s%s%s", what, by, failed, np ? "; held to " : "",
                 passed);
  if (m < 0) return;
  n = (size_t)m;
  // A duration the busy host explains says so.
  if (judged && !*faithful && r->host_rows && n < cap) {
    m = snprintf(buf + n, cap - n,
                 "; the host delayed %zu of %zu points (thread not running): replay on a "
                 "quieter host",
                 r->host_rows, r->compared);
    if (m > 0) n += (size_t)m;
  }
  if (judged && ns && n < cap) {
    m = snprintf(buf + n, cap - n, "; not judged, unknown: %s", skipped);
    if (m > 0) n += (size_t)m;
  }
  if (goals && !r->calibrated && !r->stack_unknown && n < cap)
    snprintf(buf + n, cap - n, "; stack: no calibration profile (memstub calibrate%s)",
             r->stack.max_abs > r->options.stack_slack ? ", above" : ", docs/calibration.md");
}

/* cs when it has checks (run already), else the default goals run on r, in
 * *own (to free): NULL when out of memory. *goals says which. */
static const memstub_compare_checks *held_to(const memstub_compare_report *r,
                                             const memstub_compare_checks *cs,
                                             memstub_compare_checks **own, int *goals) {
  *own = NULL;
  *goals = !cs || !cs->n;
  if (!*goals) return cs;
  memstub_error err = {0};
  if (!(*own = memstub_compare_checks_create()) || memstub_compare_goals(*own, r, &err) < 0)
    return NULL;
  memstub_compare_checks_run(*own, r);
  return *own;
}

/* The verdict line, as text (json 0) or as the JSON report's "verdict"
 * member (json 1). 0, or -ENOMEM. */
static int verdict_write(FILE *f, const memstub_compare_report *r,
                         const memstub_compare_checks *cs, int json) {
  memstub_compare_checks *own;
  int goals, faithful;
  const memstub_compare_checks *h = held_to(r, cs, &own, &goals);
  if (!h) {
    memstub_compare_checks_free(own);
    return -ENOMEM;
  }
  char buf[4096];
  verdict(r, h, goals, buf, sizeof buf, &faithful);
  if (!json) {
    fprintf(f, "\nverdict   %s\n", buf);
    memstub_compare_checks_free(own);
    return 0;
  }
  fprintf(f, "  \"verdict\": {\"faithful\": %s, \"held_to\": \"%s\", \"calibrated\": %s, \"goals\": [",
          faithful ? "true" : "false", goals ? "goals" : "checks", r->calibrated ? "true" : "false");
  for (size_t i = 0; i < h->n; i++) {
    const memstub_compare_check *c = &h->c[i];
    fprintf(f, "%s{\"spec\": ", i ? ", " : "");
    ms__compare_json_str(f, c->spec);
    fputs(", \"value\": ", f);
    ms__compare_json_num(f, c->value);
    fprintf(f, ", \"pass\": %s, \"skipped\": %s}", c->skipped ? "null" : c->pass ? "true" : "false",
            c->skipped ? "true" : "false");
  }
  fputs("], \"text\": ", f);
  ms__compare_json_str(f, buf);
  fputs("},\n", f);
  memstub_compare_checks_free(own);
  return 0;
}

int ms__compare_verdict_line(const memstub_compare_report *r, const memstub_compare_checks *cs,
                              char *buf, size_t cap, int *faithful) {
  memstub_compare_checks *own;
  int goals;
  const memstub_compare_checks *h = held_to(r, cs, &own, &goals);
  if (h) verdict(r, h, goals, buf, cap, faithful);
  memstub_compare_checks_free(own);
  return h ? 0 : -ENOMEM;
}

int ms__compare_verdict_text(FILE *f, const memstub_compare_report *r,
                             const memstub_compare_checks *cs) {
  return verdict_write(f, r, cs, 0);
}

int ms__compare_verdict_json(FILE *f, const memstub_compare_report *r,
                             const memstub_compare_checks *cs) {
  return verdict_write(f, r, cs, 1);
}
