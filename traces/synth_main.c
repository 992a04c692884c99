// memstub-synth: write a synthetic trace (samples, tests, benchmarks).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_common.h"
#include "synth.h"

static int usage(void) {
  fputs("usage: memstub-synth paper|random ROWS DURATION_NS MAX_STACK MAX_HEAP SEED OUT.csv\n",
        stderr);
  return 2;
}

int main(int argc, char **argv) {
  if (argc != 8) return usage();
  ms__synth_params p = {.kind = strcmp(argv[1], "paper") == 0 ? MS__SYNTH_PAPER : MS__SYNTH_RANDOM};
  int64_t v[5];
  for (int i = 0; i < 5; i++)
    if (ms__parse_i64(argv[2 + i], strlen(argv[2 + i]), &v[i]) < 0) return usage();
  p.rows = v[0];
  p.duration_ns = v[1];
  p.max_stack = v[2];
  p.max_heap = v[3];
  p.seed = (uint64_t)v[4];
  memstub_trace *t;
  memstub_error err = {0};
  if (ms__synth(&p, &t) < 0) return usage();
  int rc = memstub_trace_write(t, argv[7], &err);
  memstub_trace_free(t);
  if (rc < 0) fprintf(stderr, "memstub-synth: error: %s\n", err.msg);
  return rc < 0 ? 2 : 0;
}
