// The work's calibration (issue 14 item 4; docs/calibration.md, "Allocator
// calls"): what one allocator call of each kind and size class costs as a
// stub's work makes it, and the work spin's rate, measured by the runtime's
// own routine (memstub_work_measure, runtime/work.c), so the figures are the
// calls a replay makes. memstub gen -c uses them to flag the points whose
// calls cannot fit in their delay (generator/work.c).
#include <errno.h>

#include "internal.h"
#include "memstub/runtime.h"
#include "memstub/work.h"

int ms__cal_calls(memstub_profile *p, int quick, memstub_error *err) {
  double ns[MEMSTUB_WORK_CALLS], rate = 0;
  // With glibc's threshold fixed (memstub_calibrate does), a freed large
  // block does not move it: every round sees the same allocator.
  int rc = memstub_work_measure(NULL, quick ? 5 : 21, ns, &rate);
  if (rc < 0) return memstub_error_set(err, rc, "cannot measure the allocator calls: out of memory");
  for (int k = 0; k < MEMSTUB_WORK_CALLS; k++) p->call_ns[k] = ns[k];
  p->spin_steps_per_ns = rate;
  return 0;
}
