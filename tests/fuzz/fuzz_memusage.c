// libFuzzer harness: the glibc memusage importer
// (memstub_import_memusage_parse), with three sets of options: detected
// stack curve and cycles, an inverted curve in microseconds, a normal curve
// with a tiny cycle rate (huge times), and the stack not imported.
//
// Every input is either refused with "fuzz.memusage: byte offset N: reason"
// (N inside the input) or "fuzz.memusage: empty file...", or imported as a
// valid trace that survives the trace writer and reader unchanged. A stack
// marked unknown ("stack: unknown (...)") is 0 in every row; with
// MEMSTUB_STACK_NONE it is always so marked.
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "memstub/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *data, size_t size, int curve, int unit, double cpn) {
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.stack_curve = curve;
  o.time_unit = unit;
  o.cycles_per_ns = cpn;  // given: the host's rate is never measured here
  memstub_trace *t = (memstub_trace *)1;
  memstub_error err = {0};
  int rc = memstub_import_memusage_parse("fuzz.memusage", data, size, &o, &t, &err);
  if (rc < 0) {
    FUZZ_ASSERT(t == NULL, "refused, but *out is set");
    fuzz_check_refusal(rc, &err);
    if (rc == -EINVAL) {
      static const char pre[] = "fuzz.memusage: ";
      FUZZ_ASSERT(strncmp(err.msg, pre, sizeof pre - 1) == 0, "no name: %s", err.msg);
      const char *m = err.msg + sizeof pre - 1;
      if (strncmp(m, "byte offset ", 12) == 0) {
        char *e;
        unsigned long off = strtoul(m + 12, &e, 10);
        FUZZ_ASSERT(e > m + 12 && *e == ':' && off <= size, "bad offset: %s", err.msg);
      } else {
        FUZZ_ASSERT(strncmp(m, "empty file", 10) == 0, "no byte offset: %s", err.msg);
      }
    }
    return;
  }
  FUZZ_ASSERT(rc == 0 && t != NULL, "rc %d", rc);
  fuzz_check_unknown(t);
  if (curve == MEMSTUB_STACK_NONE)
    FUZZ_ASSERT(memstub_trace_get_meta(t, "stack") != NULL, "--stack-curve none, no 'stack' marker");
  fuzz_trace_round_trip(t);
  memstub_trace_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  one(data, size, MEMSTUB_STACK_AUTO, MEMSTUB_TIME_CYCLES, 3.0);
  one(data, size, MEMSTUB_STACK_INVERTED, MEMSTUB_TIME_US, 0);
  one(data, size, MEMSTUB_STACK_NORMAL, MEMSTUB_TIME_CYCLES, 1e-12);
  one(data, size, MEMSTUB_STACK_NONE, MEMSTUB_TIME_US, 0);
  return 0;
}
