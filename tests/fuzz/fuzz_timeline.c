// libFuzzer harness: the stub's timeline (traces/timeline.c) of a trace
// whose metadata memstub record wrote: the recorder's figures, the
// reference runs' (reference.*, outside.*) and the clock at the calls
// (reference.curve), as memstub gen and memstub compare read them.
//
// The input is a trace (memstub_trace_parse). A trace the reader refuses is
// fuzz_trace's. For one it accepts: the timeline is refused (-EINVAL, one
// printable line naming the metadata key, or the row) or it is a trace of
// as many rows whose times and CPU times never decrease, each row's CPU
// time at most its interval, whose durations are those the model reports;
// and its one line of description prints.
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "memstub/work.h"
#include "timeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  memstub_trace *t = NULL, *c = NULL;
  memstub_error err = {0};
  if (memstub_trace_parse("fuzz.csv", (const char *)data, size, &t, &err) < 0) return 0;
  ms__timeline tl;
  memstub_error e2 = {0};
  int rc = ms__timeline_trace(t, &c, &tl, &e2);
  if (rc < 0) {
    FUZZ_ASSERT(c == NULL, "refused, but *out is set");
    fuzz_check_refusal(rc, &e2);
    FUZZ_ASSERT(rc == -EINVAL || rc == -ENOMEM, "rc %d: %s", rc, e2.msg);
    FUZZ_ASSERT(strstr(e2.msg, "metadata ") || strstr(e2.msg, "row "), "%s", e2.msg);
    memstub_trace_free(t);
    return 0;
  }
  char line[4096];
  ms__timeline_describe(&tl, line, sizeof line);
  FUZZ_ASSERT(line[0] != '\0', "no description");
  if (c) {
    FUZZ_ASSERT(c->n == t->n, "%zu rows for %zu", c->n, t->n);
    int ccol = memstub_trace_column(c, MEMSTUB_WORK_CPU_COLUMN);
    for (size_t i = 1; i < c->n; i++) {
      int64_t d = c->pts[i].time_ns - c->pts[i - 1].time_ns;
      FUZZ_ASSERT(d >= 0, "row %zu: time goes back by %lld ns", i + 1, (long long)-d);
      if (ccol < 0) continue;
      int64_t u = memstub_trace_extra_row(c, i)[ccol] - memstub_trace_extra_row(c, i - 1)[ccol];
      FUZZ_ASSERT(u >= 0 && u <= d, "row %zu: %lld ns of CPU time in %lld ns", i + 1,
                  (long long)u, (long long)d);
    }
    if (c->n > 0)
      FUZZ_ASSERT(c->pts[c->n - 1].time_ns - c->pts[0].time_ns == tl.target_ns,
                  "the trace lasts %lld ns, the model says %lld",
                  (long long)(c->pts[c->n - 1].time_ns - c->pts[0].time_ns),
                  (long long)tl.target_ns);
    memstub_trace_free(c);
  }
  memstub_trace_free(t);
  return 0;
}
