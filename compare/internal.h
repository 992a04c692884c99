/* compare/internal.h: what the files of memstub_compare share; not installed. */
#ifndef MEMSTUB_COMPARE_INTERNAL_H
#define MEMSTUB_COMPARE_INTERNAL_H

#include <stdint.h>

#include "memstub/compare.h"

// a - b, saturated to the int64 range (traces hold non-negative totals, so
// this only matters for hostile extra columns and huge values).
static inline int64_t ms__sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN;
}

static inline int64_t ms__sat_abs(int64_t v) { return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v; }

#endif
