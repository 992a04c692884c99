// Calibration compensation (memstub gen --calibration): see calibration/.
#include <errno.h>

#include "internal.h"

int ms__gen_compensate(memstub_gen *g, ms__targets *tg, const memstub_gen_options *o, int stage,
                       memstub_error *err) {
  (void)g;
  (void)tg;
  (void)o;
  (void)stage;
  return memstub_error_set(err, -ENOTSUP, "calibration profiles are not supported yet");
}
