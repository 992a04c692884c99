// Fitting: means, spreads and least-squares lines, with outliers trimmed once.
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
  // Goodness of fit of the line found: as for least squares.
  double my = 0, sse = 0, syy = 0;
  for (size_t i = 0; i < n; i++) my += y[i];
  my /= (double)n;
  for (size_t i = 0; i < n; i++) {
    double r = y[i] - *a - *b * (x && fit_slope ? x[i] : 0);
    sse += r * r;
    syy += (y[i] - my) * (y[i] - my);
  }
  *r2 = !fit_slope ? 0 : syy > 0 ? 1 - sse / syy : 1;
  double dof = (double)n - (fit_slope ? 2 : 1);
  *resid = dof > 0 ? sqrt(sse / dof) : 0;
  return 0;
}
