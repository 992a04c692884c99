// libFuzzer harness: the valgrind massif importer
// (memstub_import_massif_parse), with and without a conversion for the
// instruction and byte time units.
//
// Every input is either refused with "fuzz.massif:LINE:COLUMN: reason" at a
// position inside the input, or imported as a valid trace that survives the
// trace writer and reader unchanged; a stack or heap marked unknown is 0
// in every row.
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "memstub/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const char *buf, size_t size, const memstub_import_options *o) {
  memstub_trace *t = (memstub_trace *)1;
  memstub_error err = {0};
  int rc = memstub_import_massif_parse("fuzz.massif", buf, size, o, &t, &err);
  if (rc < 0) {
    FUZZ_ASSERT(t == NULL, "refused, but *out is set");
    fuzz_check_refusal(rc, &err);
    if (rc == -EINVAL) fuzz_check_position(err.msg, "fuzz.massif", buf, size, 1);
    return;
  }
  FUZZ_ASSERT(rc == 0 && t != NULL, "rc %d", rc);
  fuzz_check_unknown(t);
  fuzz_trace_round_trip(t);
  memstub_trace_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  one((const char *)data, size, NULL);
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.ns_per_unit = 2.5e6;  // large enough to reach the 64-bit limit with modest times
  one((const char *)data, size, &o);
  return 0;
}
