// Strict number parsing and checked arithmetic.
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ms_common.h"

int ms__parse_i64(const char *s, size_t len, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  if (len > 0 && s[0] == '-') {
    neg = 1;
    i = 1;
  }
  if (i == len) return -EINVAL;
  // Accumulate negatively so INT64_MIN parses too.
  int64_t v = 0;
  for (; i < len; i++) {
    unsigned d = (unsigned)(unsigned char)s[i] - '0';
    if (d > 9) return -EINVAL;
    if (v < (INT64_MIN + (int64_t)d) / 10) {
      // Keep scanning so "12x" beyond the overflow still reads as non-numeric.
      for (i++; i < len; i++)
        if ((unsigned)(unsigned char)s[i] - '0' > 9) return -EINVAL;
      return -ERANGE;
    }
    v = v * 10 - (int64_t)d;
  }
  if (!neg) {
    if (v == INT64_MIN) return -ERANGE;
    v = -v;
  }
  *out = v;
  return 0;
}

int ms__parse_double(const char *s, double *out) {
  // strtod would skip leading blanks (and \v, \f, \r): no number starts so.
  if (!s || !*s || isspace((unsigned char)*s)) return -EINVAL;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end != '\0' || errno == ERANGE || !isfinite(v)) return -EINVAL;
  *out = v;
  return 0;
}

int ms__add_i64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_add_overflow(a, b, out) ? -ERANGE : 0;
}

int ms__round_i64(double v, int64_t *out) {
  // 2^63 is exactly representable; anything at or beyond it overflows.
  if (!isfinite(v) || v >= 9223372036854775808.0 || v < -9223372036854775808.0) return -ERANGE;
  *out = llround(v);
  return 0;
}

int ms__cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

int64_t ms__rank_i64(const int64_t *sorted, size_t n, unsigned pct) {
  size_t k = (pct * n + 99) / 100;
  return sorted[k ? k - 1 : 0];
}

int ms__is_ident(const char *s, size_t n) {
  if (n == 0 || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
    return 0;
  for (size_t i = 1; i < n; i++)
    if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
          (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
      return 0;
  return 1;
}

char *ms__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

char *ms__asprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) s = NULL;
  va_end(ap);
  return s;
}
