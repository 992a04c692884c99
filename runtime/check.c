// memstub_stub_check: the LIFO invariants every stub must keep to be replayed
// (memstub/stub.h). The runtime checks them before a replay; the generator
// calls the same check (memstub_gen_check), so a stub program links no
// generator code.
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"
#include "memstub/stub.h"

int memstub_stub_check(const struct memstub_stub *s, memstub_error *err) {
  // A hand-edited numdata must not wrap the size below.
  if (s->numdata < 0 || (uint64_t)s->numdata >= SIZE_MAX / sizeof(int64_t))
    return memstub_error_set(err, -EINVAL, "the stub claims %lld points", (long long)s->numdata);
  int64_t *open = ms__rt_own_calloc((size_t)s->numdata + 1, sizeof *open);  // not the stub's calls
  if (!open) return memstub_error_set(err, -ENOMEM, "out of memory");
  int64_t depth = 0, prev = 0;
  int rc = 0;
  for (int64_t i = 0; i < s->numdata && rc == 0; i++) {
    const struct memAlloc *u = &s->use[i];
    if (u->time < 0)
      rc = memstub_error_set(err, -EINVAL, "point %lld: negative delay %lld", (long long)i,
                             (long long)u->time);
    else if (u->stackAlloc > 0)
      open[depth++] = u->stackAlloc;
    else if (u->stackAlloc < 0 && depth == 0)
      rc = memstub_error_set(err, -EINVAL, "point %lld: pop with no open frame", (long long)i);
    else if (u->stackAlloc < 0 && -u->stackAlloc != open[depth - 1])
      rc = memstub_error_set(err, -EINVAL, "point %lld: pops %lld bytes from a frame of %lld",
                             (long long)i, (long long)-u->stackAlloc, (long long)open[depth - 1]);
    else if (u->stackAlloc < 0)
      depth--;
    if (rc == 0 && (s->point[i] < prev || s->point[i] >= s->norig))
      rc = memstub_error_set(err, -EINVAL, "point %lld: maps to row %lld out of order",
                             (long long)i, (long long)s->point[i]);
    prev = s->point[i];
  }
  ms__rt_own_free(open);
  return rc;
}
