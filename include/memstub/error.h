/* memstub/error.h: how every memstub library function reports failure.
 *
 * Functions return 0 on success or a negative errno value on failure
 * (-EINVAL for bad input, -ENOMEM, -EIO, ...). When they fail and were given a
 * memstub_error, its msg holds one line saying what went wrong, in the form
 * "file:line:column: what is wrong" wherever an input position is known.
 * Library code never prints and never exits. */
#ifndef MEMSTUB_ERROR_H
#define MEMSTUB_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#define MEMSTUB_ERRMSG_MAX 512

typedef struct memstub_error {
  int code;                      /* the negative errno returned, 0 if none */
  char msg[MEMSTUB_ERRMSG_MAX];  /* one line, no trailing newline */
} memstub_error;

/* Fill err (if non-NULL) with a printf-style message; returns code, which
 * must be a negative errno, so callers can `return memstub_error_set(...)`. */
int memstub_error_set(memstub_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix err->msg with "prefix: ", keeping the code (used to add a file name). */
void memstub_error_prefix(memstub_error *err, const char *prefix);

#ifdef __cplusplus
}
#endif
#endif
