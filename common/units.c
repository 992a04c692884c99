// Figures for humans: bytes in KiB/MiB/GiB, times in ns/µs/ms/s, shares in
// %, counts with thousands separators, large estimates in k/M/G.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_common.h"

/* v (>= 0) in the largest of n units, each base times the one before,
 * where it stays below up (what would print as 1 of the next unit): the
 * value in that unit, its index into *u. */
static double in_units(double v, double base, double up, int n, int *u) {
  *u = 0;
  while (*u < n - 1 && v >= up) v /= base, ++*u;
  return v;
}

const char *ms__fmt_bytes(int64_t bytes, char *buf, size_t cap) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u;
  // |INT64_MIN| does not fit an int64_t; as a double it is exact. A unit up
  // when one decimal would print 1024.0 of this one (whole bytes below 1024).
  double v = in_units(fabs((double)bytes), 1024, 1023.95, 7, &u);
  snprintf(buf, cap, u ? "%s%.1f %s" : "%s%.0f %s", bytes < 0 ? "-" : "", v, unit[u]);
  return buf;
}

const char *ms__fmt_ns(int64_t ns, char *buf, size_t cap) {
  static const char *const unit[] = {"ns", "µs", "ms", "s"};
  int u;
  // A unit up when three significant digits would print 1000 of this one.
  double v = in_units(fabs((double)ns), 1000, 999.5, 4, &u);
  int decimals = u == 0 || v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
  snprintf(buf, cap, "%s%.*f %s", ns < 0 ? "-" : "", decimals, v, unit[u]);
  return buf;
}

const char *ms__fmt_pct(double pct, int plus, char *buf, size_t cap) {
  if (!isfinite(pct)) {
    snprintf(buf, cap, "%s %%", isnan(pct) ? "?" : pct > 0 ? "+inf" : "-inf");
    return buf;
  }
  double a = fabs(pct);
  // Three significant digits from 1 % up, two below (0.66 %, 0.0017 %).
  int decimals = a >= 99.95 ? 0 : a >= 9.995 ? 1 : a >= 1 ? 2 : 0;
  if (a > 0 && a < 1) {
    decimals = (int)floor(-log10(a)) + 2;
    if (decimals > 9) decimals = 9;
  }
  // A share that is not zero never prints as 0, nor one short of 100 as 100.
  if (a > 0 && a < 5e-10) {
    snprintf(buf, cap, "%s< 0.000000001 %%", pct < 0 ? "-" : plus ? "+" : "");
    return buf;
  }
  char v[48];
  snprintf(v, sizeof v, "%.*f", decimals, a);
  // 99.97 % is not 100 %: more decimals until it is not.
  while (a < 100 && strtod(v, NULL) >= 100 && decimals < 9) snprintf(v, sizeof v, "%.*f", ++decimals, a);
  snprintf(buf, cap, "%s%s %%", pct < 0 ? "-" : plus && pct > 0 ? "+" : "", v);
  return buf;
}

const char *ms__fmt_count(int64_t n, char *buf, size_t cap) {
  char digits[24];
  // As unsigned, so that INT64_MIN keeps its digits.
  uint64_t u = n < 0 ? (uint64_t)0 - (uint64_t)n : (uint64_t)n;
  snprintf(digits, sizeof digits, "%" PRIu64, u);
  char out[40];
  size_t len = strlen(digits), w = 0;
  if (n < 0) out[w++] = '-';
  for (size_t i = 0; i < len; i++) {
    if (i > 0 && (len - i) % 3 == 0) out[w++] = ',';
    out[w++] = digits[i];
  }
  out[w] = '\0';
  snprintf(buf, cap, "%s", out);
  return buf;
}

const char *ms__fmt_si(double v, char *buf, size_t cap) {
  static const char *const unit[] = {"", " k", " M", " G", " T", " P", " E"};
  if (!isfinite(v)) {
    snprintf(buf, cap, "%s", isnan(v) ? "?" : v > 0 ? "inf" : "-inf");
    return buf;
  }
  int u;
  // A unit up when three significant digits would print 1000 of this one.
  double a = in_units(fabs(v), 1000, 999.5, 7, &u);
  int decimals = u == 0 && a == floor(a) ? 0 : a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2;
  snprintf(buf, cap, "%s%.*f%s", v < 0 ? "-" : "", decimals, a, unit[u]);
  return buf;
}
