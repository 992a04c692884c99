// memstub_error: one-line messages for callers to print.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memstub/error.h"
#include "ms_common.h"

int memstub_error_set(memstub_error *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}

int ms__error_vat(memstub_error *err, int code, const char *where, const char *fmt, va_list ap) {
  char what[MEMSTUB_ERRMSG_MAX];
  vsnprintf(what, sizeof what, fmt, ap);
  return memstub_error_set(err, code, "%s: %s", where, what);
}

const char *ms__quote(const char *s, size_t n, size_t max, char out[MS__QUOTE_MAX + 4]) {
  if (max > MS__QUOTE_MAX) max = MS__QUOTE_MAX;
  size_t k = 0;
  for (; k < n && k < max; k++) out[k] = (unsigned char)s[k] < 0x20 || s[k] == 0x7f ? '?' : s[k];
  if (n > max) {
    memcpy(out + k, "...", 3);
    k += 3;
  }
  out[k] = '\0';
  return out;
}

void memstub_error_prefix(memstub_error *err, const char *prefix) {
  if (!err || !prefix) return;
  // Shift the message right and put "prefix: " in front; the tail of a
  // message that no longer fits is dropped.
  size_t pl = strlen(prefix) + 2, ml = strlen(err->msg);
  if (pl >= sizeof err->msg) pl = sizeof err->msg - 1;
  if (pl + ml >= sizeof err->msg) ml = sizeof err->msg - 1 - pl;
  memmove(err->msg + pl, err->msg, ml);
  err->msg[pl + ml] = '\0';
  memcpy(err->msg, prefix, pl - 2);
  memcpy(err->msg + pl - 2, ": ", 2);
}
