/* tests/sweep/host.c: a tiny host program for the DATA stub's tests and
 * memstub sweep's (issue 33): it calls the stub data_stub (memstub_add_stub
 * ... DATA: its data file from MEMSTUB_DATA_data_stub, else the built one)
 * and prints the host's own figures as `metric NAME VALUE` lines on stderr.
 *
 *   sweep_host [CALLS] [--fail] [--no-metrics] [--bad-metric] [--frac]
 *
 * Exit 0; 2 when the stub call fails (its message on stderr); 3 with --fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/error.h"
#include "memstub/stub.h"
#include "memstub_data_stub.h"

int main(int argc, char **argv) {
  int calls = 1, metrics = 1, bad = 0, frac = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--fail") == 0) return fputs("sweep_host: failing as asked\n", stderr), 3;
    if (strcmp(argv[i], "--no-metrics") == 0)
      metrics = 0;
    else if (strcmp(argv[i], "--bad-metric") == 0)
      bad = 1;
    else if (strcmp(argv[i], "--frac") == 0)
      frac = 1;
    else
      calls = atoi(argv[i]);
  }
  for (int i = 0; i < calls; i++) {
    memstub_error err = {0};
    if (memstub_data_stub_err(&err) < 0) return fprintf(stderr, "sweep_host: %s\n", err.msg), 2;
  }
  const struct memstub_stub *s = memstub_data_stub_stub();
  printf("peak_heap=%lld name=%s\n", (long long)s->peak_heap, s->name);
  if (metrics)
    fprintf(stderr, "sweep_host: done\nmetric stub_peak_heap %lld\nmetric calls %d\n",
            (long long)s->peak_heap, calls);
  if (bad) fputs("metric broken\n", stderr);
  if (frac) fputs("metric frac 895.238\n", stderr);  // not a double's exact decimal  // no value: memstub sweep refuses it
  return 0;
}
