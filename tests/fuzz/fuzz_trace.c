// libFuzzer harness: the trace CSV reader (memstub_trace_parse).
//
// Every input is either refused with "fuzz.csv:LINE:COLUMN: reason", at a
// line and column inside the input, or accepted as a valid trace that
// memstub_trace_fwrite writes back and memstub_trace_parse reads again to
// the same rows, extra columns and metadata.
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "memstub/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *buf = (const char *)data;
  memstub_trace *t = (memstub_trace *)1;
  memstub_error err = {0};
  int rc = memstub_trace_parse("fuzz.csv", buf, size, &t, &err);
  if (rc < 0) {
    FUZZ_ASSERT(t == NULL, "refused, but *out is set");
    fuzz_check_refusal(rc, &err);
    if (rc == -EINVAL) fuzz_check_position(err.msg, "fuzz.csv", buf, size, 1);
    return 0;
  }
  FUZZ_ASSERT(rc == 0 && t != NULL, "rc %d", rc);
  fuzz_trace_round_trip(t);
  memstub_trace_free(t);
  return 0;
}
