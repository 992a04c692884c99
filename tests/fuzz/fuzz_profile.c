// libFuzzer harness: the calibration profile reader (memstub_profile_parse).
//
// Every input is either refused with "fuzz.profile:LINE: reason" (a line of
// the input, or the one after its end for a missing key), or accepted; then
// memstub_profile_write writes it, memstub_profile_parse must accept what was
// written with the same values, and writing that again gives the same text.
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "internal.h"
#include "memstub/calib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// profile.c's memstub_profile_check needs the runtime build's compiler and
// flags, which calibrate.c holds with the whole runtime; the harness never
// calls it.
void ms__cal_build_info(memstub_profile *p) {
  p->compiler[0] = '\0';
  p->cflags[0] = '\0';
}

// The profile written through a pipe (written in place, as for a device):
// no temporary file and no sync per input. Returns a malloc'd text.
static char *write_text(const memstub_profile *p, size_t *len) {
  int fd[2];
  FUZZ_ASSERT(pipe2(fd, O_NONBLOCK | O_CLOEXEC) == 0, "pipe");
  (void)fcntl(fd[1], F_SETPIPE_SZ, 1 << 20);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd[1]);
  memstub_error err = {0};
  int rc = memstub_profile_write(p, path, &err);
  FUZZ_ASSERT(rc == 0, "memstub_profile_write: %s", err.msg);
  close(fd[1]);
  size_t cap = 1 << 16, n = 0;
  char *text = malloc(cap);
  for (;;) {
    if (n == cap) text = realloc(text, cap *= 2);
    ssize_t r = read(fd[0], text + n, cap - n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd[0]);
  *len = n;
  return text;
}

static void same_values(memstub_profile *a, memstub_profile *b) {
  ms__cal_key ka[MS__CAL_MAXKEYS], kb[MS__CAL_MAXKEYS];
  size_t n = ms__cal_keys(a, ka, MS__CAL_MAXKEYS);
  FUZZ_ASSERT(ms__cal_keys(b, kb, MS__CAL_MAXKEYS) == n, "key count");
  for (size_t i = 0; i < n; i++) {
    switch (ka[i].type) {
      case MS__CAL_TEXT:
        FUZZ_ASSERT(strcmp(ka[i].ptr, kb[i].ptr) == 0, "%s: '%s' != '%s'", ka[i].key,
                    (char *)ka[i].ptr, (char *)kb[i].ptr);
        break;
      case MS__CAL_I64:
        FUZZ_ASSERT(*(int64_t *)ka[i].ptr == *(int64_t *)kb[i].ptr, "%s", ka[i].key);
        break;
      case MS__CAL_INT: FUZZ_ASSERT(*(int *)ka[i].ptr == *(int *)kb[i].ptr, "%s", ka[i].key); break;
      default: {
        double x = *(double *)ka[i].ptr, y = *(double *)kb[i].ptr;
        FUZZ_ASSERT(x == y, "%s: %.17g != %.17g", ka[i].key, x, y);
      }
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *buf = (const char *)data;
  memstub_profile p;
  memstub_error err = {0};
  int rc = memstub_profile_parse("fuzz.profile", buf, size, &p, &err);
  if (rc < 0) {
    fuzz_check_refusal(rc, &err);
    if (rc == -EINVAL) fuzz_check_position(err.msg, "fuzz.profile", buf, size, 0);
    return 0;
  }
  size_t len1, len2;
  char *text1 = write_text(&p, &len1);
  memstub_profile q;
  rc = memstub_profile_parse("written.profile", text1, len1, &q, &err);
  FUZZ_ASSERT(rc == 0, "what the writer wrote is refused: %s", err.msg);
  same_values(&p, &q);
  char *text2 = write_text(&q, &len2);
  FUZZ_ASSERT(len1 == len2 && memcmp(text1, text2, len1) == 0, "written twice, not the same");
  free(text1);
  free(text2);
  return 0;
}
