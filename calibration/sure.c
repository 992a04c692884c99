// How sure a profile's figures are (memstub_profile_unsure; docs/calibration.md,
// "How sure"): their 95 % intervals (NAME_ci95_ns) over the figures, from the
// profile's key table (profile.c), for memstub calibrate's table.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

// Whether key names a figure of kind which (memstub_profile_unsure).
static int of_kind(const char *key, int which) {
  int cold = strncmp(key, "time_cold_", 10) == 0;
  if (which == MEMSTUB_FIGURES_CALLS) return strncmp(key, "call_", 5) == 0;
  if (which == MEMSTUB_FIGURES_COLD) return cold;
  return !cold && strncmp(key, "time_", 5) == 0 && strncmp(key, "time_stack_use_retouch", 22) != 0;
}

int64_t memstub_profile_unsure(const memstub_profile *p, int which, double *share, char *buf,
                               size_t cap) {
  ms__cal_key keys[MS__CAL_MAXKEYS];
  double v[MS__CAL_MAXKEYS];
  size_t n = ms__cal_keys((memstub_profile *)p, keys, MS__CAL_MAXKEYS), nv = 0, len = 0;
  int64_t count = 0;
  int known = 0;
  if (buf && cap) buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    const ms__cal_key *k = &keys[i];
    if (k->value_of < 0 || !of_kind(k->key, which)) continue;
    double ci = *(const double *)k->ptr, ns = *(const double *)keys[k->value_of].ptr;
    known |= ci >= 0;
    if (ci >= 0 && fabs(ns) > MEMSTUB_CALIB_UNSURE_NS) v[nv++] = ci / fabs(ns);
    if (!memstub_calib_unsure(ns, ci)) continue;
    count++;
    if (buf && len + 1 < cap) {
      int w = ci < 0 ? snprintf(buf + len, cap - len, "%s%s %.0f, no interval", len ? ", " : "",
                                keys[k->value_of].key, ns)
                     : snprintf(buf + len, cap - len, "%s%s %.0f +- %.0f", len ? ", " : "",
                                keys[k->value_of].key, ns, ci);
      len = w > 0 && len + (size_t)w < cap ? len + (size_t)w : cap - 1;
    }
  }
  *share = nv ? ms__cal_median(v, nv) : -1;
  if (!known && buf && cap) buf[0] = '\0';
  return known ? count : 0;
}
