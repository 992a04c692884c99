// Figures for humans: bytes in KiB/MiB/GiB, times in ns/µs/ms/s.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "ms_common.h"

const char *ms__fmt_bytes(int64_t bytes, char *buf, size_t cap) {
  static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const char *sign = bytes < 0 ? "-" : "";
  // |INT64_MIN| does not fit an int64_t; as a double it is exact.
  double v = fabs((double)bytes);
  if (v < 1024) {
    snprintf(buf, cap, "%s%.0f B", sign, v);
    return buf;
  }
  int u = 0;
  v /= 1024;
  // Move up when one decimal would print 1024.0 of this unit.
  while (u < 5 && v >= 1023.95) v /= 1024, u++;
  snprintf(buf, cap, "%s%.1f %s", sign, v, unit[u]);
  return buf;
}

const char *ms__fmt_ns(int64_t ns, char *buf, size_t cap) {
  static const char *const unit[] = {"ns", "µs", "ms", "s"};
  const char *sign = ns < 0 ? "-" : "";
  double v = fabs((double)ns);
  if (v < 1000) {
    snprintf(buf, cap, "%s%.0f ns", sign, v);
    return buf;
  }
  int u = 0;
  // Move up when three significant digits would print 1000 of this unit.
  while (u < 3 && v >= 999.5) v /= 1000, u++;
  int decimals = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
  snprintf(buf, cap, "%s%.*f %s", sign, decimals, v, unit[u]);
  return buf;
}
