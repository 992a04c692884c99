// memstub sweep's results (docs/sweep.md, "Results"): the table of every
// run as CSV and JSON, and the summary, median and spread per point, as
// text and markdown.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ms_common.h"
#include "sweep.h"

/* ---- figures ----------------------------------------------------------------- */

int ms_sweep_gather_metrics(ms_sweep *s, memstub_error *err) {
  for (size_t i = 0; i < s->nruns; i++) {
    const ms_sweep_run *r = &s->runs[i];
    for (size_t k = 0; k < r->nm; k++) {
      size_t j = 0;
      while (j < s->nmetrics && strcmp(s->metrics[j], r->m[k].name) != 0) j++;
      if (j < s->nmetrics) continue;
      char **m = realloc(s->metrics, (s->nmetrics + 1) * sizeof *m);
      if (!m) return memstub_error_set(err, -ENOMEM, "out of memory");
      s->metrics = m;
      m[s->nmetrics++] = r->m[k].name;  // owned by the run
    }
  }
  return 0;
}

int ms_sweep_figure_drawn(size_t f) {
  return f != MS_SWEEP_USER && f != MS_SWEEP_SYS && f != MS_SWEEP_MAJFLT;
}

int ms_sweep_figure(const ms_sweep *s, const ms_sweep_run *r, size_t f, double *v) {
  if (f < MS_SWEEP_BUILTIN) return *v = (double)r->fig[f], 1;
  const char *name = s->metrics[f - MS_SWEEP_BUILTIN];
  for (size_t k = 0; k < r->nm; k++)
    if (strcmp(r->m[k].name, name) == 0) return *v = r->m[k].value, 1;
  return 0;
}

const char *ms_sweep_figure_name(const ms_sweep *s, size_t f, char *buf, size_t cap) {
  if (f < MS_SWEEP_BUILTIN) return ms_sweep_builtin_names[f];
  snprintf(buf, cap, "metric.%s", s->metrics[f - MS_SWEEP_BUILTIN]);
  return buf;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void ms_sweep_stats(double *v, size_t n, double *median, double *lo, double *hi) {
  qsort(v, n, sizeof *v, cmp_double);
  *median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  *lo = v[0];
  *hi = v[n - 1];
}

// A point's figure over its runs: how many have it, the median and range.
typedef struct stat {
  size_t n;
  double median, lo, hi;
} stat;

static stat point_stat(const ms_sweep *s, size_t point, size_t f, double *scratch) {
  stat st = {0};
  for (size_t i = 0; i < s->nruns; i++)
    if (s->runs[i].point == point && ms_sweep_figure(s, &s->runs[i], f, &scratch[st.n])) st.n++;
  if (st.n) ms_sweep_stats(scratch, st.n, &st.median, &st.lo, &st.hi);
  return st;
}

/* ---- results.csv, results.json -------------------------------------------------- */

// v in the fewest significant digits that read back to it ("895.238", not
// "895.23800000000006"), into f.
static void put_double(FILE *f, const char *pre, double v) {
  char b[40];
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(b, sizeof b, "%.*g", digits, v);
    if (strtod(b, NULL) == v) break;
  }
  fprintf(f, "%s%s", pre, b);
}

static void csv_write(const ms_sweep *s, FILE *f) {
  char nb[96];
  fputs("point", f);
  for (int k = 0; k < MS_SWEEP_SCALES; k++) fprintf(f, ",%s_scale", ms_sweep_scale_names[k]);
  fputs(",repeat,order,host,profile,jobs", f);
  size_t nf = MS_SWEEP_BUILTIN + s->nmetrics;
  for (size_t j = 0; j < nf; j++) fprintf(f, ",%s", ms_sweep_figure_name(s, j, nb, sizeof nb));
  fputs(",rss_polls\n", f);
  for (size_t i = 0; i < s->nruns; i++) {
    const ms_sweep_run *r = &s->runs[i];
    fprintf(f, "%zu", r->point);
    for (int k = 0; k < MS_SWEEP_SCALES; k++) fprintf(f, ",%.15g", s->pts[r->point].scale[k]);
    fprintf(f, ",%zu,%zu,%s,%s,%zu", r->repeat + 1, r->order + 1, r->host ? r->host : s->host,
            s->profile_id, s->jobs);
    for (size_t j = 0; j < nf; j++) {
      double v;
      if (!ms_sweep_figure(s, r, j, &v))
        fputc(',', f);  // the host did not print it in this run
      else if (j < MS_SWEEP_BUILTIN)
        fprintf(f, ",%lld", (long long)r->fig[j]);
      else
        put_double(f, ",", v);
    }
    fprintf(f, ",%lld\n", (long long)r->polls);
  }
}

static void json_scales(const ms_sweep *s, const ms_sweep_point *p, FILE *f) {
  fputs("{", f);
  for (int k = 0; k < MS_SWEEP_SCALES; k++)
    fprintf(f, "%s\"%s\": %.15g", k ? ", " : "", ms_sweep_scale_names[k], p->scale[k]);
  fputs("}", f);
  (void)s;
}

static void json_write(const ms_sweep *s, FILE *f) {
  char nb[96];
  size_t nf = MS_SWEEP_BUILTIN + s->nmetrics;
  fputs("{\n  \"memstub_sweep\": 1", f);
  const char *const keys[] = {"trace", "stub", "variable", "host"};
  const char *const vals[] = {s->trace, s->stub, s->var, s->host};
  for (size_t i = 0; i < 4; i++) {
    fprintf(f, ",\n  \"%s\": ", keys[i]);
    ms_cli_json_str(f, vals[i]);
  }
  fputs(",\n  \"command\": [", f);
  for (size_t i = 0; s->argv[i]; i++) fputs(i ? ", " : "", f), ms_cli_json_str(f, s->argv[i]);
  fputs("],\n  \"profile\": ", f);
  if (s->profile_path) {
    fputs("{\"path\": ", f);
    ms_cli_json_str(f, s->profile_path);
    fprintf(f, ", \"id\": \"%s\"}", s->profile_id);
  } else {
    fputs("null", f);
  }
  fprintf(f, ",\n  \"jobs\": %zu,\n  \"times_comparable\": %s,\n  \"repeat\": %zu,\n"
          "  \"poll_ns\": %lld,\n  \"points\": [\n",
          s->jobs, s->jobs == 1 ? "true" : "false", s->repeat, (long long)s->poll_ns);
  for (size_t p = 0; p < s->npts; p++) {
    fprintf(f, "    {\"point\": %zu, \"scales\": ", p);
    json_scales(s, &s->pts[p], f);
    fputs(", \"data\": ", f);
    ms_cli_json_str(f, s->pts[p].data_name);
    fputs(p + 1 < s->npts ? "},\n" : "}\n", f);
  }
  fputs("  ],\n  \"figures\": [", f);
  for (size_t j = 0; j < nf; j++)
    fputs(j ? ", " : "", f), ms_cli_json_str(f, ms_sweep_figure_name(s, j, nb, sizeof nb));
  fputs("],\n  \"runs\": [\n", f);
  for (size_t i = 0; i < s->nruns; i++) {
    const ms_sweep_run *r = &s->runs[i];
    fprintf(f, "    {\"point\": %zu, \"repeat\": %zu, \"order\": %zu, \"host\": ", r->point,
            r->repeat + 1, r->order + 1);
    ms_cli_json_str(f, r->host ? r->host : s->host);
    fprintf(f, ", \"profile\": \"%s\", \"jobs\": %zu, \"scales\": ", s->profile_id, s->jobs);
    json_scales(s, &s->pts[r->point], f);
    fputs(", \"figures\": {", f);
    for (size_t j = 0, first = 1; j < nf; j++) {
      double v;
      if (!ms_sweep_figure(s, r, j, &v)) continue;
      fputs(first ? "" : ", ", f), first = 0;
      ms_cli_json_str(f, ms_sweep_figure_name(s, j, nb, sizeof nb));
      if (j < MS_SWEEP_BUILTIN)
        fprintf(f, ": %lld", (long long)r->fig[j]);
      else
        put_double(f, ": ", v);
    }
    fprintf(f, "}, \"rss_polls\": %lld}%s\n", (long long)r->polls, i + 1 < s->nruns ? "," : "");
  }
  fputs("  ],\n  \"summary\": [\n", f);
  double *scratch = malloc((s->nruns + 1) * sizeof *scratch);
  for (size_t p = 0, first = 1; scratch && p < s->npts; p++) {
    for (size_t j = 0; j < nf; j++) {
      stat st = point_stat(s, p, j, scratch);
      if (!st.n) continue;
      fputs(first ? "" : ",\n", f), first = 0;
      fprintf(f, "    {\"point\": %zu, \"figure\": ", p);
      ms_cli_json_str(f, ms_sweep_figure_name(s, j, nb, sizeof nb));
      fprintf(f, ", \"n\": %zu", st.n);
      put_double(f, ", \"median\": ", st.median);
      put_double(f, ", \"min\": ", st.lo);
      put_double(f, ", \"max\": ", st.hi);
      fputs("}", f);
    }
  }
  free(scratch);
  fputs("\n  ]\n}\n", f);
}

/* ---- the summary ------------------------------------------------------------------- */

// A figure's value for people: times and bytes in units, counts with separators.
static const char *human(size_t f, double v, char *buf, size_t cap) {
  if (f == MS_SWEEP_WALL || f == MS_SWEEP_CPU || f == MS_SWEEP_USER || f == MS_SWEEP_SYS)
    return ms__fmt_ns((int64_t)llround(v), buf, cap);
  if (f == MS_SWEEP_PEAK_ANON) return ms__fmt_bytes((int64_t)llround(v), buf, cap);
  if (f < MS_SWEEP_BUILTIN || (v == floor(v) && fabs(v) < 1e15))
    return ms__fmt_count((int64_t)llround(v), buf, cap);
  snprintf(buf, cap, "%.6g", v);
  return buf;
}

// "+12.5 %" (signed) or "12.5 %" of part against whole, or "-" when whole is 0.
static const char *pct(double part, double whole, int sign, char *buf, size_t cap) {
  if (whole == 0) return "-";
  snprintf(buf, cap, sign ? "%+.1f %%" : "%.1f %%", 100 * part / fabs(whole));
  return buf;
}

void ms_sweep_summary(const ms_sweep *s, int markdown, FILE *f) {
  char nb[96];
  size_t nf = MS_SWEEP_BUILTIN + s->nmetrics;
  size_t planned = s->npts * s->repeat;
  fprintf(f, "%smemstub sweep of %s: stub %s (%s), %zu point%s x %zu repeat%s = %zu runs, ",
          markdown ? "# " : "", s->trace, s->stub, s->var, s->npts, s->npts == 1 ? "" : "s",
          s->repeat, s->repeat == 1 ? "" : "s", planned);
  // Collected from a job list: some runs may be missing.
  if (s->nruns < planned) fprintf(f, "%zu collected (%zu missing), ", s->nruns, planned - s->nruns);
  if (s->jobs == 1)
    fputs("one at a time (times comparable)\n", f);
  else
    fprintf(f, "%zu at a time (-j %zu: a memory-only study, times not comparable)\n", s->jobs,
            s->jobs);
  fprintf(f, "%s%s %s, profile %s; median and spread = (max - min) / median per point; change "
          "= the median against the baseline's (point 0)\n",
          markdown ? "\n" : "", strchr(s->host, ',') ? "hosts" : "host", s->host,
          s->profile_path ? s->profile_id : "none");
  double *v = malloc((s->nruns + 1) * sizeof *v);
  if (!v) return;
  for (size_t j = 0; j < nf; j++) {
    fprintf(f, markdown ? "\n## %s\n\n| point |" : "\n%s\npoint", ms_sweep_figure_name(s, j, nb, sizeof nb));
    for (int k = 0; k < MS_SWEEP_SCALES; k++)
      if (s->swept[k]) fprintf(f, markdown ? " %s |" : "  %6s", ms_sweep_scale_names[k]);
    fputs(markdown ? " n | median | min | max | spread | change |\n|---:|" : "   n       median          min          max    spread    change\n", f);
    for (int k = 0; markdown && k < MS_SWEEP_SCALES; k++)
      if (s->swept[k]) fputs("---:|", f);
    if (markdown) fputs("---:|---:|---:|---:|---:|---:|\n", f);
    stat base = point_stat(s, 0, j, v);
    for (size_t p = 0; p < s->npts; p++) {
      stat st = point_stat(s, p, j, v);
      fprintf(f, markdown ? "| %zu |" : "%5zu", p);
      for (int k = 0; k < MS_SWEEP_SCALES; k++)
        if (s->swept[k]) fprintf(f, markdown ? " %g |" : "  %6g", s->pts[p].scale[k]);
      char m[40], lo[40], hi[40], sp[24], ch[24];
      if (!st.n) {
        fputs(markdown ? " 0 | | | | | |\n" : "    0\n", f);
        continue;
      }
      human(j, st.median, m, sizeof m), human(j, st.lo, lo, sizeof lo), human(j, st.hi, hi, sizeof hi);
      const char *spread = pct(st.hi - st.lo, st.median, 0, sp, sizeof sp);
      const char *change = base.n ? pct(st.median - base.median, base.median, 1, ch, sizeof ch) : "-";
      fprintf(f, markdown ? " %zu | %s | %s | %s | %s | %s |\n" : "  %2zu %12s %12s %12s %9s %9s\n",
              st.n, m, lo, hi, spread, change);
    }
  }
  free(v);
}

/* ---- the files ------------------------------------------------------------------------ */

typedef void (*writer)(const ms_sweep *s, FILE *f);
static void summary_txt(const ms_sweep *s, FILE *f) { ms_sweep_summary(s, 0, f); }
static void summary_md(const ms_sweep *s, FILE *f) { ms_sweep_summary(s, 1, f); }

int ms_sweep_write_results(const ms_sweep *s, const char *dir, memstub_error *err) {
  static const struct {
    const char *name;
    writer write;
  } files[] = {{"results.csv", csv_write}, {"results.json", json_write},
               {"summary.txt", summary_txt}, {"summary.md", summary_md}};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir, files[i].name) < 0)
      return memstub_error_set(err, -ENOMEM, "out of memory");
    ms__afile af;
    int rc = ms__afile_open(&af, path, err);
    if (rc == 0) {
      files[i].write(s, af.f);
      rc = ms__afile_commit(&af, err);
    }
    free(path);
    if (rc < 0) return rc;
  }
  return 0;
}

int ms_sweep_write_all(ms_sweep *s, const char *stage, int plots, memstub_error *err) {
  int rc = ms_sweep_gather_metrics(s, err);
  for (size_t j = 0; rc == 0 && j < s->nmetrics; j++) {
    size_t lacking = 0;
    double v;
    for (size_t i = 0; i < s->nruns; i++) lacking += !ms_sweep_figure(s, &s->runs[i], MS_SWEEP_BUILTIN + j, &v);
    if (lacking)
      ms_cli_warn("sweep: metric %s: missing from %zu of %zu runs (its medians are of the runs "
                  "that printed it; the table's cells are empty)", s->metrics[j], lacking, s->nruns);
  }
  if (rc == 0) rc = ms_sweep_write_results(s, stage, err);
  if (rc == 0 && plots) rc = ms_sweep_write_plots(s, stage, err);
  return rc;
}
