// libFuzzer harness: the heaptrack importer (memstub_import_heaptrack_parse)
// on decompressed heaptrack text.
//
// Every input is either refused with "fuzz.heaptrack:LINE:COLUMN: reason" at
// a position inside the input, or imported as a valid trace that survives the
// trace writer and reader unchanged, with the stack marked unknown (0 in
// every row) and heap_peak_bytes never below heap_bytes.
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "memstub/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *buf = (const char *)data;
  memstub_trace *t = (memstub_trace *)1;
  memstub_error err = {0};
  int rc = memstub_import_heaptrack_parse("fuzz.heaptrack", buf, size, NULL, &t, &err);
  if (rc < 0) {
    FUZZ_ASSERT(t == NULL, "refused, but *out is set");
    fuzz_check_refusal(rc, &err);
    if (rc == -EINVAL) fuzz_check_position(err.msg, "fuzz.heaptrack", buf, size, 1);
    return 0;
  }
  FUZZ_ASSERT(rc == 0 && t != NULL, "rc %d", rc);
  FUZZ_ASSERT(memstub_trace_get_meta(t, "stack") != NULL, "the stack is not marked unknown");
  int peak = memstub_trace_column(t, "heap_peak_bytes");
  FUZZ_ASSERT(peak >= 0, "no heap_peak_bytes column");
  for (size_t i = 0; i < t->n; i++)
    FUZZ_ASSERT(memstub_trace_extra_row(t, i)[peak] >= t->pts[i].heap_bytes,
                "row %zu: heap_peak_bytes below heap_bytes", i);
  fuzz_check_unknown(t);
  fuzz_trace_round_trip(t);
  memstub_trace_free(t);
  return 0;
}
