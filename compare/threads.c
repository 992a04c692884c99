// Comparing traces with threads: each thread's rows as a trace of their own,
// and the process total heap (docs/compare-and-plot.md, "Threads").
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memstub/work.h"
#include "ms_common.h"

/* ORIGINAL's heap h as the what-if's target has it (h times REPLAYED's heap
 * scale, rounded as memstub gen rounds), so the total is judged against
 * the target each thread's comparison is judged against (compare/whatif.c):
 * a replay of --heap-scale 0.5 against the unscaled original read as half
 * the heap wrong. A value the scale takes out of 64 bits stays (the
 * thread's comparison has refused it already). */
static int64_t target_heap(int64_t h, const memstub_compare_report *t) {
  int64_t v;
  if (!t || !t->whatif.is || t->whatif.scales.heap == 1.0 || h < 0) return h;
  return ms__round_i64((double)h * t->whatif.scales.heap, &v) == 0 ? v : h;
}

void memstub_compare_threads_free(memstub_compare_threads_report *r) {
  if (!r) return;
  for (int64_t k = 0; r->thread && k < r->nthreads; k++) memstub_compare_free(r->thread[k]);
  free(r->thread);
  free(r);
}

/* The replay's figures of thread k (its `thread.K` line: "..., duration_ns
 * N (target M), cpu_ns N, off_cpu_ns N, ...") as b's metadata, where a
 * replay of one thread has them, so that thread's comparison sees its own
 * CPU time and run-queue wait. 0 or -ENOMEM. */
static int thread_figures(const memstub_trace *repl, int64_t k, memstub_trace *b) {
  static const char *const names[] = {"duration_ns", "cpu_ns", "off_cpu_ns"};
  char key[64];
  snprintf(key, sizeof key, "thread.%lld", (long long)k);
  const char *line = memstub_trace_get_meta(repl, key);
  for (size_t i = 0; line && i < sizeof names / sizeof *names; i++) {
    char pat[32];
    snprintf(pat, sizeof pat, ", %s ", names[i]);
    const char *at = strstr(line, pat);
    char v[32];
    size_t n = 0;
    for (at = at ? at + strlen(pat) : NULL; at && *at >= '0' && *at <= '9' && n + 1 < sizeof v; at++)
      v[n++] = *at;
    v[n] = '\0';
    if (n && memstub_trace_set_meta(b, names[i], v) < 0) return -ENOMEM;
  }
  return 0;
}

int memstub_compare_threads_traces(const memstub_trace *orig, const char *orig_name,
                                   const memstub_trace *repl, const char *repl_name,
                                   const memstub_compare_options *o,
                                   memstub_compare_threads_report **out, memstub_error *err) {
  *out = NULL;
  const char *on = orig_name ? orig_name : "ORIGINAL", *rn = repl_name ? repl_name : "REPLAYED";
  if (memstub_trace_column(orig, "thread") < 0)
    return memstub_error_set(err, -EINVAL, "%s has no 'thread' column", on);
  if (memstub_trace_column(repl, "thread") < 0)
    return memstub_error_set(err, -EINVAL,
                             "%s has no 'thread' column: not a replay of a trace with threads",
                             rn);
  int64_t nt = memstub_trace_thread_count(orig);
  if (memstub_trace_thread_count(repl) != nt)
    return memstub_error_set(err, -EINVAL, "%s has %lld threads, %s %lld", on, (long long)nt, rn,
                             (long long)memstub_trace_thread_count(repl));
  memstub_compare_options def;
  memstub_compare_options_init(&def);
  if (!o) o = &def;
  memstub_compare_threads_report *r = calloc(1, sizeof *r);
  size_t **orows = calloc((size_t)nt, sizeof *orows), *no = calloc((size_t)nt, sizeof *no);
  int64_t *lo = calloc((size_t)nt, sizeof *lo), *lr = calloc((size_t)nt, sizeof *lr);
  int64_t *base = calloc((size_t)nt, sizeof *base);
  int rc = r && orows && no && lo && lr && base ? 0 : -ENOMEM;
  if (rc == 0) r->nthreads = nt;
  if (rc == 0 && !(r->thread = calloc((size_t)nt, sizeof *r->thread))) rc = -ENOMEM;
  if (rc < 0) memstub_error_set(err, rc, "out of memory");
  for (int64_t k = 0; rc == 0 && k < nt; k++) {
    memstub_trace *a = NULL, *b = NULL;
    if ((rc = memstub_trace_thread_rows(orig, k, &orows[k], &no[k])) == 0 &&
        (rc = memstub_trace_thread_split(orig, k, &a)) == 0 &&
        (rc = memstub_trace_thread_split(repl, k, &b)) == 0) {
      // The thread's own block reallocs that were frees, not every thread's.
      char key[64];
      snprintf(key, sizeof key, "%s.%lld", MEMSTUB_WORK_BLOCK_FREES_META, (long long)k);
      const char *bf = memstub_trace_get_meta(repl, key);
      if (memstub_trace_get_meta(b, MEMSTUB_WORK_BLOCK_FREES_META))
        rc = memstub_trace_set_meta(b, MEMSTUB_WORK_BLOCK_FREES_META, bf ? bf : "0");
      if (rc == 0) rc = thread_figures(repl, k, b);
    }
    if (rc < 0) {
      memstub_error_set(err, rc, "out of memory");
    } else {
      char an[512], bn[512];
      snprintf(an, sizeof an, "%s (thread %lld)", on, (long long)k);
      snprintf(bn, sizeof bn, "%s (thread %lld)", rn, (long long)k);
      rc = memstub_compare_traces(a, an, b, bn, o, &r->thread[k], err);
    }
    memstub_trace_free(a);
    memstub_trace_free(b);
    base[k] = INT64_MAX;
    for (size_t i = 0; rc == 0 && i < no[k]; i++) {
      int64_t h = target_heap(orig->pts[orows[k][i]].heap_bytes, r->thread[k]);
      if (h < base[k]) base[k] = h;
    }
  }
  // The total, at every row of REPLAYED that measures a row of its thread,
  // with the options as each thread's comparison resolved them (page_size 0:
  // the host's page), not as given.
  if (rc == 0 && nt > 0) o = &r->thread[0]->options;
  int cth = memstub_trace_column(repl, "thread"), cp = memstub_trace_column(repl, "point");
  uint8_t *seen = rc == 0 ? calloc((size_t)nt, 1) : NULL;
  if (rc == 0 && !seen) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && cp >= 0 && i < repl->n; i++) {
    const int64_t *x = memstub_trace_extra_row(repl, i);
    int64_t k = x[cth], row = x[cp];
    if (k < 0 || k >= nt || row < 0 || (uint64_t)row >= no[k]) continue;
    seen[k] = 1;
    lo[k] = target_heap(orig->pts[orows[k][row]].heap_bytes, r->thread[k]);
    lr[k] = repl->pts[i].heap_bytes;
    int64_t d = 0, paged = 0;
    for (int64_t j = 0; j < nt; j++)
      if (seen[j]) {
        d += lr[j] - lo[j];
        paged |= lo[j] - base[j] >= o->mmap_threshold;
      }
    int64_t ad = d < 0 ? -d : d;
    r->total_rows++;
    if (ad > r->total_heap_max) r->total_heap_max = ad;
    // Each thread's heap is exact within the slack (a page when mmapped): so is the sum.
    if (ad <= o->heap_slack * nt || (paged && ad <= o->page_size * nt)) r->total_heap_exact++;
  }
  free(seen);
  for (int64_t k = 0; orows && k < nt; k++) free(orows[k]);
  free(orows);
  free(no);
  free(lo);
  free(lr);
  free(base);
  return MS__HAND_OUT(rc, r, out, memstub_compare_threads_free);
}

size_t memstub_compare_threads_checks_run(memstub_compare_checks *cs,
                                          const memstub_compare_threads_report *r) {
  size_t failed = 0;
  for (size_t i = 0; i < cs->n; i++) {
    memstub_compare_check *c = &cs->c[i];
    memstub_compare_checks one = {1, c};
    if (strcmp(c->key, "total-heap-max") == 0) {
      c->skipped = 0;
      c->value = (double)r->total_heap_max;
      c->pass = c->value <= c->limit;
    } else if (c->thread >= 0) {
      if (c->thread >= r->nthreads) {
        c->skipped = 1;
        c->value = NAN;
        c->pass = 0;
        continue;
      }
      int64_t th = c->thread;
      c->thread = -1;  // as a single-thread check of that thread's report
      memstub_compare_checks_run(&one, r->thread[th]);
      c->thread = th;
    } else {
      double worst = NAN;
      int pass = 1, skipped = 1;
      for (int64_t k = 0; k < r->nthreads; k++) {
        memstub_compare_checks_run(&one, r->thread[k]);
        if (c->skipped) continue;
        skipped = 0;
        int worse = isnan(worst) || (c->dir == MEMSTUB_COMPARE_AT_MOST ? c->value > worst
                                                                       : c->value < worst);
        if (worse) worst = c->value;
        pass &= c->pass;
      }
      c->value = worst;
      c->pass = !skipped && pass;
      c->skipped = skipped;
    }
    if (!c->skipped && !c->pass) failed++;
  }
  return failed;
}

/* The process's minor faults, every thread's summed into *o and *p: 1, or 0
 * when a thread's are unknown. */
static int process_faults(const memstub_compare_threads_report *r, int64_t *o, int64_t *p) {
  *o = *p = 0;
  for (int64_t k = 0; k < r->nthreads; k++) {
    const memstub_compare_work *w = &r->thread[k]->work;
    if (w->faults_unknown) return 0;
    *o += w->faults.original_total, *p += w->faults.replayed_total;
  }
  return 1;
}

static double exact_pct(const memstub_compare_threads_report *r) {
  return r->total_rows ? 100.0 * (double)r->total_heap_exact / (double)r->total_rows : 100.0;
}

int memstub_compare_threads_write_text(const memstub_compare_threads_report *r,
                                       const memstub_compare_checks *cs, FILE *f) {
  for (int64_t k = 0; k < r->nthreads; k++) {
    fprintf(f, "== thread %lld ==\n", (long long)k);
    if (memstub_compare_write_text(r->thread[k], NULL, f) < 0) return -EIO;
    fputc('\n', f);
  }
  fprintf(f, "== process total ==\nheap (sum of each thread's latest) at %zu rows: largest "
             "|error| %lld bytes, %.2f %% exact\n",
          r->total_rows, (long long)r->total_heap_max, exact_pct(r));
  int64_t fo, fp;
  if (process_faults(r, &fo, &fp))  // which thread faulted is in the threads' lines above
    fprintf(f, "faults minor (every thread's): original %lld, replayed %lld (%+.2f%%)\n",
            (long long)fo, (long long)fp, fo ? 100.0 * (double)(fp - fo) / (double)fo : 0.0);
  for (size_t i = 0; cs && i < cs->n; i++) {
    const memstub_compare_check *c = &cs->c[i];
    // A value that is no number (a thread's relative error of nothing) says why, never "inf".
    if (c->skipped) fprintf(f, "check %s: skipped\n", c->spec);
    else if (!isfinite(c->value))
      fprintf(f, "check %s: %s (undefined: a thread's ORIGINAL has none of it)\n", c->spec,
              c->pass ? "pass" : "FAIL");
    else
      fprintf(f, "check %s: %s (%.6g %s)\n", c->spec, c->pass ? "pass" : "FAIL", c->value,
              c->unit);
  }
  return ferror(f) ? -EIO : 0;
}

int memstub_compare_threads_write_json(const memstub_compare_threads_report *r,
                                       const memstub_compare_checks *cs, FILE *f) {
  fputs("{\"threads\": [", f);
  for (int64_t k = 0; k < r->nthreads; k++) {
    if (k) fputs(", ", f);
    if (memstub_compare_write_json(r->thread[k], NULL, f) < 0) return -EIO;
  }
  fprintf(f, "], \"total\": {\"rows\": %zu, \"heap_max_bytes\": %lld, \"heap_exact_pct\": %.4f",
          r->total_rows, (long long)r->total_heap_max, exact_pct(r));
  int64_t fo, fp;
  if (process_faults(r, &fo, &fp))
    fprintf(f, ", \"original_faults\": %lld, \"replayed_faults\": %lld", (long long)fo,
            (long long)fp);
  fputc('}', f);
  if (cs) {
    fputs(", \"checks\": [", f);
    for (size_t i = 0; i < cs->n; i++) {
      const memstub_compare_check *c = &cs->c[i];
      fprintf(f, "%s{\"spec\": \"%s\", \"thread\": %lld, \"value\": ", i ? ", " : "", c->spec,
              (long long)c->thread);
      if (isfinite(c->value)) fprintf(f, "%.6g", c->value);
      else fputs("null", f);
      fprintf(f, ", \"pass\": %s, \"skipped\": %s}", c->pass ? "true" : "false",
              c->skipped ? "true" : "false");
    }
    fputc(']', f);
  }
  fputs("}\n", f);
  return ferror(f) ? -EIO : 0;
}
