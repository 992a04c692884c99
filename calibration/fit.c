// Fitting: means, spreads, least-squares lines with outliers trimmed once,
// least-absolute-deviations lines (medians), and a figure's robust fit with
// its confidence interval (ms__cal_estimate).
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void ms__cal_mean_scv(const double *v, size_t n, double *mean, double *scv) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  double m = n ? s / (double)n : 0;
  double q = 0;
  for (size_t i = 0; i < n; i++) q += (v[i] - m) * (v[i] - m);
  *mean = m;
  *scv = n >= 2 && m != 0 ? q / (double)n / (m * m) : 0;
}

// Whether the x with keep set (every x when keep is NULL) are all equal: then
// there is no slope to fit, and rounding in their mean must not make one up.
static int x_constant(const double *x, size_t n, const unsigned char *keep) {
  const double *first = NULL;
  for (size_t i = 0; i < n; i++) {
    if (keep && !keep[i]) continue;
    if (!first) first = &x[i];
    else if (x[i] != *first) return 0;
  }
  return 1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double ms__cal_median(double *v, size_t n) {
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Least squares over the points with keep[i] set.
static void lsq(const double *x, const double *y, size_t n, const unsigned char *keep,
                int fit_slope, double *a, double *b, double *r2, double *resid) {
  double sx = 0, sy = 0, m = 0;
  for (size_t i = 0; i < n; i++)
    if (keep[i]) sx += x[i], sy += y[i], m++;
  double mx = sx / m, my = sy / m, sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < n; i++) {
    if (!keep[i]) continue;
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  *b = fit_slope && sxx > 0 && !x_constant(x, n, keep) ? sxy / sxx : 0;
  *a = my - *b * mx;
  double sse = 0;
  for (size_t i = 0; i < n; i++)
    if (keep[i]) sse += (y[i] - *a - *b * x[i]) * (y[i] - *a - *b * x[i]);
  *r2 = !fit_slope ? 0 : syy > 0 ? 1 - sse / syy : 1;
  double dof = m - (fit_slope ? 2 : 1);
  *resid = dof > 0 ? sqrt(sse / dof) : 0;
}

int64_t ms__cal_fit(const double *x, const double *y, size_t n, int fit_slope, double floor,
                    double *a, double *b, double *r2, double *resid, unsigned char *keep) {
  unsigned char *k = keep ? keep : malloc(n ? n : 1);
  double *r = malloc((n ? n : 1) * sizeof *r);
  if (!k || !r) {
    if (!keep) free(k);
    free(r);
    return -ENOMEM;
  }
  memset(k, 1, n);
  int no_x = x == NULL;
  const double *xs = no_x ? NULL : x;
  double *xz = NULL;
  if (no_x) {
    xz = calloc(n ? n : 1, sizeof *xz);
    if (!xz) {
      if (!keep) free(k);
      free(r);
      return -ENOMEM;
    }
    xs = xz;
  }
  lsq(xs, y, n, k, fit_slope, a, b, r2, resid);
  // Trim: residuals beyond 10 x their median absolute value plus floor.
  for (size_t i = 0; i < n; i++) r[i] = fabs(y[i] - *a - *b * xs[i]);
  double *tmp = malloc((n ? n : 1) * sizeof *tmp);
  int64_t kept = (int64_t)n;
  if (tmp) {
    memcpy(tmp, r, n * sizeof *tmp);
    double lim = 10 * ms__cal_median(tmp, n) + floor;
    free(tmp);
    for (size_t i = 0; i < n; i++)
      if (r[i] > lim) k[i] = 0, kept--;
    if (kept > 0 && kept < (int64_t)n) lsq(xs, y, n, k, fit_slope, a, b, r2, resid);
    if (kept == 0) {
      memset(k, 1, n);
      kept = (int64_t)n;
    }
  }
  free(xz);
  free(r);
  if (!keep) free(k);
  return kept;
}

/* The line through the conditional median by iteratively reweighted least
 * squares: weights 1 / |residual| (w: room for n), with residuals below
 * delta (a millionth of the data's spread) taken as delta, starting from
 * the least-squares line. pre: n >= 1. */
static void l1_line(const double *x, const double *y, size_t n, double *w, double *a, double *b) {
  double lo = y[0], hi = y[0], mx = 0, my = 0;
  for (size_t i = 0; i < n; i++) {
    lo = y[i] < lo ? y[i] : lo;
    hi = y[i] > hi ? y[i] : hi;
    mx += x[i];
    my += y[i];
  }
  mx /= (double)n;
  my /= (double)n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; i++) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  double B = sxx > 0 ? sxy / sxx : 0, A = my - B * mx;
  double delta = (hi - lo) * 1e-6 + 1e-12;
  for (int it = 0; it < 200; it++) {
    double sw = 0, swx = 0, swy = 0;
    for (size_t i = 0; i < n; i++) {
      double r = fabs(y[i] - A - B * x[i]);
      w[i] = 1 / (r > delta ? r : delta);
      sw += w[i], swx += w[i] * x[i], swy += w[i] * y[i];
    }
    double wx = swx / sw, wy = swy / sw, wxx = 0, wxy = 0;
    for (size_t i = 0; i < n; i++)
      wxx += w[i] * (x[i] - wx) * (x[i] - wx), wxy += w[i] * (x[i] - wx) * (y[i] - wy);
    double nb = wxx > 0 ? wxy / wxx : 0, na = wy - nb * wx;
    int done = fabs(na - A) <= 1e-6 * (fabs(A) + delta) && fabs(nb - B) <= 1e-6 * (fabs(B) + delta);
    A = na, B = nb;
    if (done) break;
  }
  *a = A, *b = B;
}

/* Goodness of the line a + b x (b unused without fit_slope or x) over n >= 1
 * points, as for least squares: R^2 (0 for a constant) and the residual
 * standard deviation. */
static void fit_quality(const double *x, const double *y, size_t n, int fit_slope, double a,
                        double b, double *r2, double *resid) {
  double my = 0, sse = 0, syy = 0;
  for (size_t i = 0; i < n; i++) my += y[i];
  my /= (double)n;
  for (size_t i = 0; i < n; i++) {
    double r = y[i] - a - b * (x && fit_slope ? x[i] : 0);
    sse += r * r;
    syy += (y[i] - my) * (y[i] - my);
  }
  *r2 = !fit_slope ? 0 : syy > 0 ? 1 - sse / syy : 1;
  double dof = (double)n - (fit_slope ? 2 : 1);
  *resid = dof > 0 ? sqrt(sse / dof) : 0;
}

int ms__cal_fit_l1(const double *x, const double *y, size_t n, int fit_slope, double *a,
                   double *b, double *r2, double *resid) {
  *a = *b = *r2 = *resid = 0;
  if (n == 0) return 0;
  double *v = malloc(n * sizeof *v);
  if (!v) return -ENOMEM;
  if (!fit_slope || !x || x_constant(x, n, NULL)) {
    memcpy(v, y, n * sizeof *v);
    *a = ms__cal_median(v, n);
  } else {
    l1_line(x, y, n, v, a, b);
  }
  free(v);
  fit_quality(x, y, n, fit_slope, *a, *b, r2, resid);
  return 0;
}

/* ---- a figure and how sure it is ------------------------------------------------- */

// Student's t, two-sided 95 %, for 1 to MS__CAL_GROUPS - 1 degrees of freedom.
static const double t975[MS__CAL_GROUPS] = {0,     12.706, 4.303, 3.182, 2.776,
                                            2.571, 2.447,  2.365, 2.306, 2.262};

// Whether x[0..n) holds two distinct values (a line can be fitted).
static int x_varies(const double *x, size_t n) { return x && !x_constant(x, n, NULL); }

/* How one figure is fitted: its samples, the kind of fit. */
typedef struct fitter {
  const double *x, *y;
  int fit_slope;
  double floor;  // mean: least squares trimmed at floor (ms__cal_fit), else L1
  int mean;
} fitter;

/* Fit samples [from, to) as f says. *ok 0: nothing to fit (a line needs 3
 * samples and two distinct x). 0 or -ENOMEM. */
static int fit_range(const fitter *f, size_t from, size_t to, double *a, double *b, int *ok) {
  size_t m = to - from;
  const double *x = f->x ? f->x + from : NULL, *y = f->y + from;
  double r2, resid;
  *ok = m > 0 && (!f->fit_slope || (m >= 3 && x_varies(x, m)));
  if (!*ok) return 0;
  if (f->mean)
    return ms__cal_fit(x, y, m, f->fit_slope, f->floor, a, b, &r2, &resid, NULL) < 0 ? -ENOMEM
                                                                                     : 0;
  return ms__cal_fit_l1(x, y, m, f->fit_slope, a, b, &r2, &resid);
}

// Sample mean and standard deviation of v[0..n) (n >= 2).
static void mean_sd(const double *v, size_t n, double *mean, double *sd) {
  double m = 0, q = 0;
  for (size_t i = 0; i < n; i++) m += v[i];
  m /= (double)n;
  for (size_t i = 0; i < n; i++) q += (v[i] - m) * (v[i] - m);
  *mean = m;
  *sd = sqrt(q / (double)(n - 1));
}

int ms__cal_estimate(const double *x, const double *y, const int32_t *rep, size_t n,
                     int fit_slope, double floor, int mean, ms__cal_est *e) {
  memset(e, 0, sizeof *e);
  e->ci_a = e->ci_b = -1;
  if (n == 0) return 0;
  fit_slope = fit_slope && x_varies(x, n);
  // at[k]: where repetition index k's samples start (samples come in
  // repetition order); fa, fb: the fits of the repetitions or batches.
  double *buf = malloc(n * 4 * sizeof *buf);
  size_t *at = malloc((n + 1) * sizeof *at);
  if (!buf || !at) {
    free(buf);
    free(at);
    return -ENOMEM;
  }
  int rc = 0;
  if (mean) {
    int64_t kept = ms__cal_fit(x, y, n, fit_slope, floor, &e->a, &e->b, &e->r2, &e->resid, NULL);
    rc = kept < 0 ? -ENOMEM : 0;
    e->outliers = kept < 0 ? 0 : (int64_t)n - kept;
  } else {
    // The median fit; outliers counted as ms__cal_fit's trimming finds them,
    // and left out of its R^2 and residual, as there.
    rc = ms__cal_fit_l1(x, y, n, fit_slope, &e->a, &e->b, &e->r2, &e->resid);
    double *r = buf + 2 * n;
    for (size_t i = 0; i < n; i++) r[i] = fabs(y[i] - e->a - e->b * (fit_slope ? x[i] : 0));
    memcpy(buf + 3 * n, r, n * sizeof *r);
    double lim = 10 * ms__cal_median(buf + 3 * n, n) + floor;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (r[i] <= lim) buf[m] = x ? x[i] : 0, buf[n + m++] = y[i];
    e->outliers = (int64_t)(n - m);
    if (rc == 0 && m > 0) fit_quality(buf, buf + n, m, fit_slope, e->a, e->b, &e->r2, &e->resid);
  }
  size_t nrep = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || rep[i] != rep[i - 1]) at[nrep++] = i;
  at[nrep] = n;
  fitter f = {x, y, fit_slope, floor, mean};
  double *fa = buf, *fb = buf + n, m;  // n >= nrep
  // Per repetition, for the SCVs.
  size_t nf = 0;
  for (size_t k = 0; rc == 0 && k < nrep; k++) {
    int ok;
    rc = fit_range(&f, at[k], at[k + 1], &fa[nf], &fb[nf], &ok);
    nf += ok && rc == 0;
  }
  ms__cal_mean_scv(fa, nf, &m, &e->scv_a);
  ms__cal_mean_scv(fb, nf, &m, &e->scv_b);
  // Batches of consecutive repetitions, for the interval: their spread
  // holds the host's slow changes (batch means), which interleaved groups
  // would share and hide.
  size_t G = nrep < MS__CAL_GROUPS ? nrep : MS__CAL_GROUPS;
  nf = 0;
  for (size_t g = 0; rc == 0 && g < G; g++) {
    int ok;
    rc = fit_range(&f, at[g * nrep / G], at[(g + 1) * nrep / G], &fa[nf], &fb[nf], &ok);
    nf += ok && rc == 0;
  }
  e->groups = (int)nf;
  if (rc == 0 && nf >= 2) {
    double sd, t = t975[nf - 1] / sqrt((double)nf);
    mean_sd(fa, nf, &m, &sd);
    e->ci_a = t * sd;
    mean_sd(fb, nf, &m, &sd);
    e->ci_b = fit_slope ? t * sd : 0;
  }
  free(buf);
  free(at);
  return rc < 0 ? -ENOMEM : 0;
}
