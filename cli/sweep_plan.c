// memstub sweep on many machines (docs/sweep.md, "On many machines"): the
// plan a job list's runs read (DIR/sweep.plan) and the result file each run
// writes (DIR/results/rN.run), and their strict readers. Both are lines of
// tab-separated fields: a key, then its values, a tab, newline, CR or
// backslash in a value written \t, \n, \r or \\.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ms_common.h"
#include "sweep.h"

static const char plan_magic[] = "memstub sweep plan 1", run_magic[] = "memstub sweep run 1";

// s as a field: its tabs, newlines, CRs and backslashes escaped.
static void put_field(FILE *f, const char *s) {
  fputc('\t', f);
  for (; *s; s++) {
    const char *e = *s == '\t' ? "\\t" : *s == '\n' ? "\\n" : *s == '\r' ? "\\r" : *s == '\\' ? "\\\\" : NULL;
    e ? fputs(e, f) : fputc(*s, f);
  }
}

typedef void (*writer)(const ms_sweep *s, const ms_sweep_run *r, FILE *f);

static int write_file(const ms_sweep *s, const ms_sweep_run *r, const char *path, writer w,
                      memstub_error *err) {
  ms__afile af;
  int rc = ms__afile_open(&af, path, err);
  if (rc < 0) return rc;
  w(s, r, af.f);
  return ms__afile_commit(&af, err);
}

static void plan_put(const ms_sweep *s, const ms_sweep_run *r, FILE *f) {
  (void)r;
  const char *const keys[] = {"trace", "stub", "variable"}, *const vals[] = {s->trace, s->stub, s->var};
  fputs(plan_magic, f);
  for (size_t i = 0; i < 3; i++) fprintf(f, "\n%s", keys[i]), put_field(f, vals[i]);
  fputs("\nprofile", f);
  if (s->profile_path) put_field(f, s->profile_path), put_field(f, s->profile_id);
  fprintf(f, "\njobs\t%zu\nrepeat\t%zu\npoll_ns\t%lld\nswept", s->jobs, s->repeat, (long long)s->poll_ns);
  for (int k = 0; k < MS_SWEEP_SCALES; k++) fprintf(f, "\t%d", s->swept[k]);
  fputs("\ncommand", f);
  for (size_t i = 0; s->argv[i]; i++) put_field(f, s->argv[i]);
  fputc('\n', f);
  for (size_t p = 0; p < s->npts; p++) {
    fprintf(f, "point\t%zu", p);
    put_field(f, s->pts[p].data_name);
    for (int k = 0; k < MS_SWEEP_SCALES; k++) fprintf(f, "\t%.17g", s->pts[p].scale[k]);
    fputc('\n', f);
  }
  fputs("end\n", f);
}

int ms_sweep_plan_write(const ms_sweep *s, const char *path, memstub_error *err) {
  return write_file(s, NULL, path, plan_put, err);
}

static void run_put(const ms_sweep *s, const ms_sweep_run *r, FILE *f) {
  fprintf(f, "%s\norder\t%zu\npoint\t%zu\nrepeat\t%zu\nhost", run_magic, r->order + 1, r->point,
          r->repeat + 1);
  put_field(f, r->host ? r->host : s->host);
  fputs("\nprofile", f);
  put_field(f, s->profile_id);
  fputc('\n', f);
  for (int j = 0; j < MS_SWEEP_BUILTIN; j++)
    fprintf(f, "%s\t%lld\n", ms_sweep_builtin_names[j], (long long)r->fig[j]);
  fprintf(f, "rss_polls\t%lld\n", (long long)r->polls);
  for (size_t k = 0; k < r->nm; k++) {
    fputs("metric", f);
    put_field(f, r->m[k].name);
    fprintf(f, "\t%.17g\n", r->m[k].value);
  }
  fputs("end\n", f);
}

int ms_sweep_result_write(const ms_sweep *s, const ms_sweep_run *r, const char *path,
                          memstub_error *err) {
  return write_file(s, r, path, run_put, err);
}

/* ---- reading ------------------------------------------------------------------------- */

enum { MAX_FIELDS = 4096 };

// A file's lines, each split into its fields (unescaped in place).
typedef struct reader {
  ms__lines l;
  char *f[MAX_FIELDS];
  int n;  // fields of the current line, the key included
} reader;

/* The next line, split at tabs and unescaped in place: 0, or -EINVAL with
 * err naming the line (none: "expected a line KEY"; a bad escape). */
static int read_line(reader *rd, const char *key, memstub_error *err) {
  char *line = NULL;
  int rc = ms__lines_next(&rd->l, &line, err);
  if (rc < 0) return rc;
  if (rc == 0)
    return memstub_error_set(err, -EINVAL, "%s:%ld: cut short: expected a line '%s'", rd->l.path,
                             rd->l.line + 1, key);
  rd->n = 0;
  for (char *p = line;; p++) {
    if (rd->n == MAX_FIELDS) return ms__lines_fail(&rd->l, rd->n, err, "more than %d fields", MAX_FIELDS);
    rd->f[rd->n++] = p;
    char *out = p;
    for (; *p && *p != '\t'; p++) {
      if (*p != '\\') {
        *out++ = *p;
        continue;
      }
      char c = *++p;
      if (c != 't' && c != 'n' && c != 'r' && c != '\\')
        return ms__lines_fail(&rd->l, rd->n, err, "a bad escape '\\%c' (\\t \\n \\r \\\\ only)", c ? c : '0');
      *out++ = c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : '\\';
    }
    int last = *p == '\0';
    *out = '\0';
    if (last) break;
  }
  return 0;
}

/* The current line's key is key, with [min, max] fields after it: 0, or
 * -EINVAL with err naming the line. */
static int expect(reader *rd, const char *key, int min, int max, memstub_error *err) {
  char q[MS__QUOTE_MAX + 4];
  if (strcmp(rd->f[0], key) != 0)
    return ms__lines_fail(&rd->l, 1, err, "'%s' where '%s' belongs", ms__quote(rd->f[0], strlen(rd->f[0]), 32, q), key);
  if (rd->n - 1 < min || rd->n - 1 > max)
    return ms__lines_fail(&rd->l, rd->n, err, "%s: %d value%s, expected %d%s", key, rd->n - 1,
                          rd->n == 2 ? "" : "s", min, max > min ? " or more" : "");
  return 0;
}

// read_line, then expect.
static int next_line(reader *rd, const char *key, int min, int max, memstub_error *err) {
  int rc = read_line(rd, key, err);
  return rc < 0 ? rc : expect(rd, key, min, max, err);
}

// At "end": nothing may follow it.
static int at_end(reader *rd, memstub_error *err) {
  if (rd->n != 1) return ms__lines_fail(&rd->l, 2, err, "end: a value after it");
  if (rd->l.p < rd->l.end)
    return memstub_error_set(err, -EINVAL, "%s:%ld: a line after 'end'", rd->l.path, rd->l.line + 1);
  return 0;
}

/* Field i (from 1) of the current line as an integer in [min, max]. */
static int field_i64(reader *rd, int i, int64_t min, int64_t max, int64_t *v, memstub_error *err) {
  char what[96];
  snprintf(what, sizeof what, "%s, a whole number from %lld to %lld", rd->f[0], (long long)min, (long long)max);
  return ms__lines_i64(&rd->l, i + 1, rd->f[i], min, max, what, v, err);
}

/* Field i (from 1) as a finite number (>= 0 when nonneg). */
static int field_double(reader *rd, int i, int nonneg, double *v, memstub_error *err) {
  char q[MS__QUOTE_MAX + 4];
  if (ms__parse_double(rd->f[i], v) < 0 || !isfinite(*v) || (nonneg && *v < 0))
    return ms__lines_fail(&rd->l, i + 1, err, "%s: '%s' is not a %snumber", rd->f[0],
                          ms__quote(rd->f[i], strlen(rd->f[i]), 32, q), nonneg ? "finite, >= 0 " : "finite ");
  return 0;
}

static int magic(reader *rd, const char *want, memstub_error *err) {
  char *line = NULL;
  int rc = ms__lines_next(&rd->l, &line, err);
  if (rc < 0) return rc;
  if (rc == 0 || strcmp(line, want) != 0)
    return memstub_error_set(err, -EINVAL, "%s:1: not a memstub sweep %s file (its first line "
                             "is '%s')", rd->l.path, want == plan_magic ? "plan" : "result", want);
  return 0;
}

/* The plan's lines into s; the text stays in rd's buffer (s->plan_text). */
static int plan_parse(reader *rd, const char *dir, ms_sweep *s, memstub_error *err) {
  int64_t v;
  int rc = magic(rd, plan_magic, err);
  if (rc == 0 && (rc = next_line(rd, "trace", 1, 1, err)) == 0) s->trace = rd->f[1];
  if (rc == 0 && (rc = next_line(rd, "stub", 1, 1, err)) == 0) s->stub = rd->f[1];
  if (rc == 0 && (rc = next_line(rd, "variable", 1, 1, err)) == 0)
    snprintf(s->var, sizeof s->var, "%s", rd->f[1]);
  if (rc == 0 && (rc = next_line(rd, "profile", 0, 2, err)) == 0 && rd->n == 2)
    rc = ms__lines_fail(&rd->l, 3, err, "profile: a path without its identity");
  if (rc == 0 && rd->n == 3) {
    s->profile_path = rd->f[1];
    if (strlen(rd->f[2]) != 16 || strspn(rd->f[2], "0123456789abcdef") != 16)
      return ms__lines_fail(&rd->l, 3, err, "profile: the identity is 16 hex digits");
    snprintf(s->profile_id, sizeof s->profile_id, "%s", rd->f[2]);
  }
  if (rc == 0 && (rc = next_line(rd, "jobs", 1, 1, err)) == 0 && (rc = field_i64(rd, 1, 1, 100000, &v, err)) == 0)
    s->jobs = (size_t)v;
  if (rc == 0 && (rc = next_line(rd, "repeat", 1, 1, err)) == 0 && (rc = field_i64(rd, 1, 1, 100000, &v, err)) == 0)
    s->repeat = (size_t)v;
  if (rc == 0 && (rc = next_line(rd, "poll_ns", 1, 1, err)) == 0)
    rc = field_i64(rd, 1, 1000000, INT64_C(100000000000000), &s->poll_ns, err);
  if (rc == 0) rc = next_line(rd, "swept", MS_SWEEP_SCALES, MS_SWEEP_SCALES, err);
  for (int k = 0; rc == 0 && k < MS_SWEEP_SCALES; k++)
    if ((rc = field_i64(rd, k + 1, 0, 1, &v, err)) == 0) s->swept[k] = (int)v;
  if (rc == 0) rc = next_line(rd, "command", 1, MAX_FIELDS, err);
  if (rc == 0 && !(s->plan_argv = calloc((size_t)rd->n, sizeof *s->plan_argv)))
    rc = memstub_error_set(err, -ENOMEM, "out of memory");
  for (int i = 1; rc == 0 && i < rd->n; i++) s->plan_argv[i - 1] = rd->f[i];
  s->argv = s->plan_argv;
  // The points, then "end".
  size_t cap = 0;
  while (rc == 0) {
    if ((rc = read_line(rd, "end", err)) < 0) break;
    if (strcmp(rd->f[0], "end") == 0) {
      if (s->npts == 0) return memstub_error_set(err, -EINVAL, "%s:%ld: no points", rd->l.path, rd->l.line);
      return at_end(rd, err);
    }
    if ((rc = expect(rd, "point", 2 + MS_SWEEP_SCALES, 2 + MS_SWEEP_SCALES, err)) < 0) break;
    if ((rc = field_i64(rd, 1, (int64_t)s->npts, (int64_t)s->npts, &v, err)) < 0) break;
    if (ms__grow((void **)&s->pts, &cap, s->npts, sizeof *s->pts) < 0)
      return memstub_error_set(err, -ENOMEM, "out of memory");
    ms_sweep_point *p = &s->pts[s->npts];
    memset(p, 0, sizeof *p);
    p->data_name = rd->f[2];
    char want[40];
    snprintf(want, sizeof want, "data/p%zu.msd", s->npts);
    if (strcmp(p->data_name, want) != 0)
      return ms__lines_fail(&rd->l, 3, err, "point %zu's data file is %s", s->npts, want);
    s->npts++;  // counted before the allocation below, so that it is freed
    if (!(p->data = ms__asprintf("%s/%s", dir, p->data_name))) return memstub_error_set(err, -ENOMEM, "out of memory");
    for (int k = 0; rc == 0 && k < MS_SWEEP_SCALES; k++) rc = field_double(rd, 3 + k, 1, &p->scale[k], err);
  }
  return rc;
}

int ms_sweep_plan_read(const char *dir, ms_sweep *s, memstub_error *err) {
  char *path = ms__asprintf("%s/sweep.plan", dir), *buf = NULL;
  size_t len = 0;
  if (!path) return memstub_error_set(err, -ENOMEM, "out of memory");
  int rc = ms__read_file(path, &buf, &len, err);
  if (rc == -ENOENT)
    memstub_error_set(err, rc, "%s: no such file: %s is not the -o DIR of memstub sweep --job-list",
                      path, dir);
  reader *rd = rc == 0 ? calloc(1, sizeof *rd) : NULL;
  if (rc == 0 && !rd) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  if (rc == 0) {
    s->plan_text = buf;
    ms__lines_init(&rd->l, path, buf, len);
    rc = plan_parse(rd, dir, s, err);
  } else {
    free(buf);
  }
  free(rd);
  free(path);
  return rc;
}

/* A metric's name: letters, digits, _ . - (as the host's lines have it). */
static int metric_name_ok(const char *name) {
  if (!*name || strlen(name) > 63) return 0;
  for (const char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '_' || *c == '.' || *c == '-'))
      return 0;
  return 1;
}

static int run_parse(reader *rd, const ms_sweep *s, ms_sweep_run *r, memstub_error *err) {
  int64_t v, runs = (int64_t)(s->npts * s->repeat);
  char q[MS__QUOTE_MAX + 4];
  int rc = magic(rd, run_magic, err);
  if (rc == 0 && (rc = next_line(rd, "order", 1, 1, err)) == 0 && (rc = field_i64(rd, 1, 1, runs, &v, err)) == 0)
    r->order = (size_t)v - 1;
  // The order's point and repeat, as the sweep's sequence has them.
  size_t rep = r->order / s->npts, point = (r->order % s->npts + rep) % s->npts;
  if (rc == 0 && (rc = next_line(rd, "point", 1, 1, err)) == 0 &&
      (rc = field_i64(rd, 1, (int64_t)point, (int64_t)point, &v, err)) == 0)
    r->point = point;
  if (rc == 0 && (rc = next_line(rd, "repeat", 1, 1, err)) == 0 &&
      (rc = field_i64(rd, 1, (int64_t)rep + 1, (int64_t)rep + 1, &v, err)) == 0)
    r->repeat = rep;
  if (rc == 0 && (rc = next_line(rd, "host", 1, 1, err)) == 0) {
    // A machine's name: printable, no blank, no ',' (the summary lists them with it).
    const char *h = rd->f[1];
    int ok = *h && strlen(h) < 256;
    for (const char *c = h; ok && *c; c++) ok = *c > ' ' && *c < 127 && *c != ',' && *c != '"' && *c != '\\';
    if (!ok)
      return ms__lines_fail(&rd->l, 2, err, "host: '%s' is not a machine's name", ms__quote(h, strlen(h), 64, q));
    if (!(r->host = ms__strdup(h))) return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  if (rc == 0 && (rc = next_line(rd, "profile", 1, 1, err)) == 0 && strcmp(rd->f[1], s->profile_id) != 0)
    return ms__lines_fail(&rd->l, 2, err, "profile: '%s', but the plan's is '%s'",
                          ms__quote(rd->f[1], strlen(rd->f[1]), 32, q), s->profile_id);
  for (int j = 0; rc == 0 && j < MS_SWEEP_BUILTIN; j++)
    if ((rc = next_line(rd, ms_sweep_builtin_names[j], 1, 1, err)) == 0)
      rc = field_i64(rd, 1, 0, INT64_MAX, &r->fig[j], err);
  if (rc == 0 && (rc = next_line(rd, "rss_polls", 1, 1, err)) == 0)
    rc = field_i64(rd, 1, 0, INT64_MAX, &r->polls, err);
  size_t cap = 0;
  while (rc == 0) {
    if ((rc = read_line(rd, "end", err)) < 0) break;
    if (strcmp(rd->f[0], "end") == 0) return at_end(rd, err);
    if ((rc = expect(rd, "metric", 2, 2, err)) < 0) break;
    if (!metric_name_ok(rd->f[1]))
      return ms__lines_fail(&rd->l, 2, err, "metric: '%s' is not a name (letters, digits, _ . -)",
                            ms__quote(rd->f[1], strlen(rd->f[1]), 32, q));
    for (size_t k = 0; k < r->nm; k++)
      if (strcmp(r->m[k].name, rd->f[1]) == 0)
        return ms__lines_fail(&rd->l, 2, err, "metric %s given twice", rd->f[1]);
    double d;
    if ((rc = field_double(rd, 2, 0, &d, err)) < 0) break;
    if (ms__grow((void **)&r->m, &cap, r->nm, sizeof *r->m) < 0 || !(r->m[r->nm].name = ms__strdup(rd->f[1])))
      return memstub_error_set(err, -ENOMEM, "out of memory");
    r->m[r->nm++].value = d;
  }
  return rc;
}

int ms_sweep_result_read(const ms_sweep *s, const char *path, ms_sweep_run *r, memstub_error *err) {
  char *buf = NULL;
  size_t len = 0;
  int rc = ms__read_file(path, &buf, &len, err);
  reader *rd = rc == 0 ? calloc(1, sizeof *rd) : NULL;
  if (rc == 0 && !rd) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  if (rc == 0) {
    ms__lines_init(&rd->l, path, buf, len);
    rc = run_parse(rd, s, r, err);
  }
  free(rd);
  free(buf);
  return rc;
}
