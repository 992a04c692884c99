// libFuzzer harness: the --check list (memstub_compare_checks_parse).
//
// The input, up to its first NUL, is one list. A refused list gives a
// one-line message; an accepted one gives checks whose spec has no blanks
// and reads back to the same check alone, and that run against a report.
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "memstub/compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *spec = malloc(size + 1);
  memcpy(spec, data, size);
  spec[size] = '\0';
  memstub_compare_checks *cs = memstub_compare_checks_create();
  FUZZ_ASSERT(cs != NULL, "create");
  memstub_error err = {0};
  int rc = memstub_compare_checks_parse(cs, spec, &err);
  if (rc < 0) {
    fuzz_check_refusal(rc, &err);
  } else {
    FUZZ_ASSERT(rc == 0 && cs->n > 0, "rc %d, %zu checks", rc, cs->n);
    for (size_t i = 0; i < cs->n; i++) {
      const memstub_compare_check *c = &cs->c[i];
      FUZZ_ASSERT(c->key[0] && c->unit && c->what, "check %zu incomplete", i);
      FUZZ_ASSERT(isfinite(c->limit) && c->limit >= 0, "%s: limit %g", c->spec, c->limit);
      for (const char *s = c->spec; *s; s++)
        FUZZ_ASSERT((unsigned char)*s > 0x20 && *s != 0x7f, "spec '%s' not normalised", c->spec);
      memstub_compare_checks *again = memstub_compare_checks_create();
      rc = memstub_compare_checks_parse(again, c->spec, &err);
      FUZZ_ASSERT(rc == 0 && again->n == 1, "spec '%s' refused: %s", c->spec, err.msg);
      FUZZ_ASSERT(strcmp(again->c[0].key, c->key) == 0 && again->c[0].limit == c->limit &&
                      again->c[0].dir == c->dir && strcmp(again->c[0].unit, c->unit) == 0,
                  "spec '%s' reads back differently", c->spec);
      memstub_compare_checks_free(again);
    }
    memstub_compare_report r;
    memset(&r, 0, sizeof r);
    memstub_compare_checks_run(cs, &r);
    r.compared = 3;
    r.time.p99_abs = 12345;
    r.duration.error_pct = INFINITY;
    memstub_compare_checks_run(cs, &r);
  }
  memstub_compare_checks_free(cs);
  free(spec);
  return 0;
}
