/* calibration/internal.h: the calibration's private pieces. */
#ifndef MEMSTUB_CALIBRATION_INTERNAL_H
#define MEMSTUB_CALIBRATION_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "memstub/calib.h"
#include "ms_common.h"

/* ---- the profile's keys (profile.c) ------------------------------------- */

enum { MS__CAL_TEXT, MS__CAL_I64, MS__CAL_INT, MS__CAL_DOUBLE };

typedef struct ms__cal_key {
  char key[64];
  int type;        // MS__CAL_*
  void *ptr;       // into the profile
  size_t cap;      // MS__CAL_TEXT: the array's size
  int cycles_of;   // for an *_ns key: index of its *_cycles key, else -1
  const char *comment;  // written before the key, NULL for none
} ms__cal_key;

/* The keys of p, in file order, into keys (room for cap). Returns how many. */
size_t ms__cal_keys(memstub_profile *p, ms__cal_key *keys, size_t cap);
#define MS__CAL_MAXKEYS 256

/* The runtime build's compiler and flags (host.compiler, host.cflags), baked
 * in by calibration/CMakeLists.txt. */
void ms__cal_build_info(memstub_profile *p);

/* ---- fitting (fit.c) --------------------------------------------------- */

/* Mean and squared coefficient of variation (variance / mean^2, population
 * variance) of v[0..n). scv is 0 when n < 2 or the mean is 0. */
void ms__cal_mean_scv(const double *v, size_t n, double *mean, double *scv);

/* Least squares y = a + b x over n points, with outliers trimmed once: points
 * whose residual exceeds 10 x the median absolute residual plus floor are
 * dropped and the line refitted. fit_slope = 0 fits a constant (the mean).
 * Returns the points kept; fills a, b, r2 (of the kept points; 1 when y is
 * constant and fitted exactly, 0 for a constant fit), resid (residual
 * standard deviation). keep (room for n, may be NULL) marks kept points.
 * pre: n >= 1. -ENOMEM. */
int64_t ms__cal_fit(const double *x, const double *y, size_t n, int fit_slope, double floor,
                    double *a, double *b, double *r2, double *resid, unsigned char *keep);

/* Fault injection for tests, 0 in normal use: when > 0, every fit
 * memstub_calibrate makes counts it down, and the fit that brings it to 0
 * fails as if out of memory. Not thread-safe: set it only in a test. */
extern int64_t ms__cal_fit_fail_after;

/* Least absolute deviations y = a + b x over n points: the line through the
 * conditional median, which no outlier moves far (iteratively reweighted
 * least squares from the least-squares line). fit_slope = 0 (or x NULL)
 * fits a constant: the median. r2 and resid as ms__cal_fit's, of this line
 * and every point. 0 or -ENOMEM; all zero for n == 0. */
int ms__cal_fit_l1(const double *x, const double *y, size_t n, int fit_slope, double *a,
                   double *b, double *r2, double *resid);

/* Median of v[0..n) (v is reordered). 0 for n == 0. */
double ms__cal_median(double *v, size_t n);

/* Eq. 4: page faults of an allocation of x new bytes on top of y bytes. */
static inline int64_t ms__cal_eq4(int64_t x, int64_t y, int64_t page) {
  if (x <= 0) return 0;
  return ((y % page) + x) / page;
}

/* Pages of the mapping glibc makes for a block of size + pad bytes: the
 * chunk (request rounded as malloc does, 16-byte aligned) plus its header,
 * rounded up to pages. The generator's cost model uses the same rule. */
static inline int64_t ms__cal_map_pages(int64_t size, int64_t pad, int64_t page) {
  int64_t nb = (size + pad + 8 + 15) / 16 * 16;
  return (nb + 8 + page - 1) / page;
}

/* The generator's rule for where glibc keeps the block after a change from
 * old to block bytes (size + pad), given it was mapped (1) or in the arena
 * (0): a growing block moves to mmap once its chunk reaches the threshold
 * and it no longer fits where the arena can grow it in place (the pages
 * written before, or the room calibration found); a mapped block moves back
 * below the threshold (the runtime's rule). Returns 1 for mapped. */
static inline int ms__cal_mapped_next(int mapped, int64_t block, int64_t old, int64_t hw,
                                      int64_t room, int64_t thr) {
  int64_t chunk = (block + 8 + 15) / 16 * 16;
  if (mapped) return block >= thr;
  return block > old && chunk >= thr && block > hw && block > room;
}

#endif
