// Axes for people: the unit an axis reads in, chosen by its range, and tics
// at 1, 2 or 5 times a power of ten with plain labels of one form.
#include <math.h>
#include <stdio.h>

#include "internal.h"

/* The step of about `ticks` intervals over span: 1, 2 or 5 times a power of
 * ten, the nearest on a log scale. */
static double nice_step(double span, int ticks) {
  if (!(span > 0) || !isfinite(span)) return 1;
  double raw = span / (ticks > 0 ? ticks : 1), e = pow(10, floor(log10(raw))), f = raw / e;
  return (f < 1.4142 ? 1 : f < 3.1623 ? 2 : f < 7.0711 ? 5 : 10) * e;
}

// The decimals that show every multiple of step exactly.
static int decimals_of(double step) {
  if (step >= 1) return 0;
  int d = (int)ceil(-log10(step) - 1e-9);
  return d < 0 ? 0 : d > 9 ? 9 : d;
}

static ms__plot_axis with_tics(double div, const char *unit, double span, int ticks) {
  ms__plot_axis a = {div, unit, nice_step(span / div, ticks), 0};
  a.decimals = decimals_of(a.step);
  return a;
}

ms__plot_axis ms__plot_axis_bytes(double max, int ticks) {
  static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (!(max > 0)) return (ms__plot_axis){1, u[0], 1, 0};
  int k = 0;
  double div = 1;
  while (k < 4 && max / div >= 1024) div *= 1024, k++;
  ms__plot_axis a = with_tics(div, u[k], max, ticks);
  if (k == 0 && a.step < 1) a.step = 1, a.decimals = 0;  // no fractions of a byte
  return a;
}

ms__plot_axis ms__plot_axis_time(double lo, double hi, int ticks) {
  double m = fmax(fabs(lo), fabs(hi));
  double div = m >= 2e6 ? 1e6 : m >= 2e3 ? 1e3 : 1;
  const char *unit = div == 1e6 ? "s" : div == 1e3 ? "ms" : "\xc2\xb5s";
  return with_tics(div, unit, hi > lo ? hi - lo : div, ticks);
}

ms__plot_axis ms__plot_axis_plain(double max, int ticks) {
  return with_tics(1, "", max > 0 ? max : 1, ticks);
}

const char *ms__plot_axis_format(const ms__plot_axis *a, int with_unit, char *buf, size_t cap) {
  int n = snprintf(buf, cap, "%%.%df", a->decimals);
  if (with_unit && a->unit[0] && n > 0 && (size_t)n + 1 < cap) {
    buf[n++] = ' ';
    for (const char *u = a->unit; *u && (size_t)n + 2 < cap; u++) {
      if (*u == '%') buf[n++] = '%';
      buf[n++] = *u;
    }
    buf[n] = '\0';
  }
  return buf;
}
