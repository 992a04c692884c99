// memstub sweep's plots (docs/sweep.md, "Plots"): each figure against each
// scale the sweep varied, drawn by gnuplot (plots/sweep.gp) through the
// plots' runner (plots/gnuplot.h: atomic output, a directory of its own).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnuplot.h"
#include "ms_common.h"
#include "ms_spawn.h"
#include "sweep.h"

int ms_sweep_plot_check(memstub_error *err) {
  const char *prog = getenv("MEMSTUB_GNUPLOT");
  char *argv[] = {(char *)(prog && *prog ? prog : "gnuplot"), "--version", NULL};
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  o.in = MS__SPAWN_NULL, o.out = MS__SPAWN_NULL, o.err = MS__SPAWN_NULL;
  o.what = "gnuplot";
  ms__spawn_result r;
  int rc = ms__spawn_limit(&o, 30, 0, 0, err);
  if (rc == 0) rc = ms__spawn_run(argv, &o, &r, err);
  if (rc == 0) rc = ms__spawn_check(&r, argv[0], "gnuplot", err);
  if (rc == 0 || rc == -ECHILD) ms__spawn_result_free(&r);
  if (rc < 0)
    memstub_error_set(err, rc, "%s: the plots need gnuplot (Debian: apt-get install gnuplot-nox, "
                      "or MEMSTUB_GNUPLOT=PATH), or --no-plots", err->msg);
  return rc;
}

// The unit figure f is drawn in: its divisor and name.
static double unit_of(size_t f, const char **unit) {
  if (f <= MS_SWEEP_SYS) return *unit = "ms", 1e6;
  if (f == MS_SWEEP_PEAK_ANON) return *unit = "MiB", 1048576.0;
  *unit = "";
  return 1;
}

// Whether points a and b agree on every varied scale but k.
static int same_others(const ms_sweep *s, size_t a, size_t b, int k) {
  for (int j = 0; j < MS_SWEEP_SCALES; j++)
    if (j != k && s->swept[j] && s->pts[a].scale[j] != s->pts[b].scale[j]) return 0;
  return 1;
}

/* sweep.dat: a block per combination of the other varied scales, its rows
 * by scale k; the number of blocks into *nblocks. 0 or -errno. */
static int write_blocks(const ms_sweep *s, size_t f, int k, const char *path,
                        int *nblocks, memstub_error *err) {
  FILE *out = fopen(path, "w");
  size_t *order = malloc(s->npts * sizeof *order);
  double *v = malloc((s->nruns + 1) * sizeof *v);
  char *done = calloc(s->npts, 1);
  if (!out || !order || !v || !done) {
    int e = out ? ENOMEM : errno;
    if (out) fclose(out);
    free(order), free(v), free(done);
    return memstub_error_set(err, -e, "%s: cannot write: %s", path, strerror(e));
  }
  const char *unit;
  double div = unit_of(f, &unit);
  *nblocks = 0;
  for (size_t p = 0; p < s->npts; p++) {
    if (done[p]) continue;
    // The block's points, by scale k (insertion: a sweep has few points).
    size_t n = 0;
    for (size_t q = p; q < s->npts; q++) {
      if (done[q] || !same_others(s, p, q, k)) continue;
      done[q] = 1;
      size_t at = n++;
      while (at > 0 && s->pts[order[at - 1]].scale[k] > s->pts[q].scale[k]) order[at] = order[at - 1], at--;
      order[at] = q;
    }
    char label[200] = "";
    size_t len = 0;
    for (int j = 0; j < MS_SWEEP_SCALES; j++)
      if (j != k && s->swept[j] && len < sizeof label)
        len += (size_t)snprintf(label + len, sizeof label - len, "%s%s x%g", len ? ", " : "",
                                ms_sweep_scale_names[j], s->pts[p].scale[j]);
    fprintf(out, "%s\"%s\" median min max\n", *nblocks ? "\n\n" : "", len ? label : "median");
    for (size_t i = 0; i < n; i++) {
      size_t m = 0;
      for (size_t r = 0; r < s->nruns; r++)
        if (s->runs[r].point == order[i] && ms_sweep_figure(s, &s->runs[r], f, &v[m])) m++;
      if (!m) continue;
      double med, lo, hi;
      ms_sweep_stats(v, m, &med, &lo, &hi);
      fprintf(out, "%.15g %.15g %.15g %.15g\n", s->pts[order[i]].scale[k], med / div, lo / div,
              hi / div);
    }
    (*nblocks)++;
  }
  free(order), free(v), free(done);
  if (fclose(out) != 0) return memstub_error_set(err, -EIO, "%s: cannot write", path);
  return 0;
}

// s as a gnuplot string in single quotes (a quote doubled) into f.
static void gp_str(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) *s == '\'' ? fputs("''", f) : fputc(*s, f);
  fputc('\'', f);
}

/* Plot n (from 1) of the run g: figure f against scale k, into out: its
 * pN.dat and vN.gp. 0, or -errno with err. */
static int plot_files(const ms_sweep *s, const ms__gnuplot *g, int n, size_t f, int k,
                      const char *out, memstub_error *err) {
  char name[32];
  snprintf(name, sizeof name, "p%d.dat", n);
  char *dat = ms__gnuplot_path(g, name);
  snprintf(name, sizeof name, "v%d.gp", n);
  char *vars = ms__gnuplot_path(g, name);
  int nblocks = 0, rc = dat && vars ? 0 : memstub_error_set(err, -ENOMEM, "out of memory");
  if (rc == 0) rc = write_blocks(s, f, k, dat, &nblocks, err);
  FILE *vf = rc == 0 ? fopen(vars, "w") : NULL;
  if (rc == 0 && !vf) rc = memstub_error_set(err, -errno, "%s: cannot write", vars);
  if (vf) {
    char nb[96];
    const char *unit, *fig = ms_sweep_figure_name(s, f, nb, sizeof nb);
    unit_of(f, &unit);
    // Names are letters, digits and _ . -: nothing to escape but the path.
    fprintf(vf, "title = '%s against the %s scale (median of %zu runs; bars: least to largest)'\n"
            "xlabel = '%s scale'\nylabel = '%s%s%s%s'\nnblocks = %d\nout = ",
            fig, ms_sweep_scale_names[k], s->repeat, ms_sweep_scale_names[k], fig,
            *unit ? " (" : "", unit, *unit ? ")" : "", nblocks);
    gp_str(vf, out);
    fputc('\n', vf);
    if (fclose(vf) != 0) rc = memstub_error_set(err, -EIO, "%s: cannot write", vars);
  }
  free(dat);
  free(vars);
  return rc;
}

int ms_sweep_write_plots(const ms_sweep *s, const char *dir, memstub_error *err) {
  ms__gnuplot g;
  char *last = NULL;
  int rc = ms__gnuplot_begin(&g, "plot.png", "sweep.gp", NULL, NULL, NULL, 0, err), n = 0;
  if (rc < 0) return rc;
  size_t nf = MS_SWEEP_BUILTIN + s->nmetrics;
  for (size_t f = 0; rc == 0 && f < nf; f++) {
    for (int k = 0; rc == 0 && ms_sweep_figure_drawn(f) && k < MS_SWEEP_SCALES; k++) {
      if (!s->swept[k]) continue;
      char nb[96];
      free(last);
      last = ms__asprintf("%s/plot-%s-%s.png", dir, ms_sweep_figure_name(s, f, nb, sizeof nb),
                          ms_sweep_scale_names[k]);
      rc = last ? plot_files(s, &g, ++n, f, k, last, err)
                : memstub_error_set(err, -ENOMEM, "out of memory");
    }
  }
  char *vars = rc == 0 && n ? ms__gnuplot_path(&g, "vars.gp") : NULL;
  FILE *vf = vars ? fopen(vars, "w") : NULL;
  if (rc == 0 && n && !vf) rc = memstub_error_set(err, -EIO, "%s: cannot write", vars ? vars : "vars.gp");
  if (vf && (fprintf(vf, "nplots = %d\n", n) < 0) + (fclose(vf) != 0))
    rc = memstub_error_set(err, -EIO, "%s: cannot write", vars);
  // The last plot goes to OUTPUT, put in place by the runner; the others to their own.
  if (rc == 0 && n) rc = ms__gnuplot_render(&g, last, NULL, err);
  free(vars);
  free(last);
  ms__gnuplot_end(&g);
  return rc;
}
