// libFuzzer harness: the calls file reader (traces/calls.c: ms__calls_open,
// ms__calls_open_merged, ms__calls_next), TRACE.calls of memstub record
// --calls and memstub import heaptrack --calls.
//
// The input is the file, given through a memfd. Read in the file's order and
// merged in time order across threads, every input is either refused with
// one printable line "PATH: ..." (both ways alike: the same blocks and calls
// are checked) or read whole: the same number of calls both ways, the head's
// count, and in time order merged across threads when each thread's own
// calls were.
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "calls.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every call of c into *n and whether they came in time order within each
 * thread (per) and overall (all). 0 or the reader's refusal. */
static int read_all(ms__calls *c, uint64_t *n, int *per, int *all, memstub_error *err) {
  enum { THREADS = 64 };
  uint32_t th[THREADS];
  int64_t last[THREADS], prev = INT64_MIN;
  int nth = 0, rc;
  ms__call k;
  *n = 0, *per = *all = 1;
  while ((rc = ms__calls_next(c, &k, err)) == 1) {
    (*n)++;
    if (k.t_ns < prev) *all = 0;
    prev = k.t_ns;
    int i = 0;
    while (i < nth && th[i] != k.thread) i++;
    if (i == nth && nth < THREADS) th[nth] = k.thread, last[nth++] = INT64_MIN;
    if (i < nth) {
      if (k.t_ns < last[i]) *per = 0;
      last[i] = k.t_ns;
    }
  }
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = fuzz_memfd("fuzz.calls", data, size, path, sizeof path);
  ms__calls *c = NULL, *m = NULL;
  memstub_error err = {0}, merr = {0};
  int rc = ms__calls_open(path, &c, &err), mrc = ms__calls_open_merged(path, &m, &merr);
  uint64_t n = 0, mn = 0;
  int per = 1, all = 1, mper = 1, mall = 1;
  if (rc == 0) rc = read_all(c, &n, &per, &all, &err);
  if (mrc == 0) mrc = read_all(m, &mn, &mper, &mall, &merr);
  if (rc < 0) {
    fuzz_check_refusal(rc, &err);
    FUZZ_ASSERT(strncmp(err.msg, path, strlen(path)) == 0, "no '%s' prefix: %s", path, err.msg);
  }
  if (mrc < 0) {
    fuzz_check_refusal(mrc, &merr);
    FUZZ_ASSERT(strncmp(merr.msg, path, strlen(path)) == 0, "no '%s' prefix: %s", path, merr.msg);
  }
  FUZZ_ASSERT((rc < 0) == (mrc < 0), "read in order: %s; merged: %s", rc < 0 ? err.msg : "whole",
              mrc < 0 ? merr.msg : "whole");
  if (rc == 0) {
    FUZZ_ASSERT(n == mn && n == ms__calls_head_of(c)->calls, "%llu calls, merged %llu",
                (unsigned long long)n, (unsigned long long)mn);
    // Out of time order only where a call was taken before the one that needed it.
    if (per && !ms__calls_repaired(m))
      FUZZ_ASSERT(mall, "each thread in time order, merged out of order");
  }
  ms__calls_close(c);
  ms__calls_close(m);
  close(fd);
  return 0;
}
