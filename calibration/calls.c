// The work's calibration (issue 14 item 4; docs/calibration.md, "Allocator
// calls"): what one allocator call of each kind and size class costs as a
// stub's work makes it, and the work spin's rate, measured by the runtime's
// own routine (memstub_work_measure, runtime/work.c), so the figures are the
// calls a replay makes. memstub gen -c uses them to flag the points whose
// calls cannot fit in their delay (generator/work.c).
//
// Every repetition measures one round (a batch of each kind and class), so
// that what the host does during the calibration falls on the calls as on
// the other figures; figures.c takes the median of the rounds. Each round
// runs on a thread of its own, as a replay's calls do: the calibrating
// thread's arena holds the calibration's samples, whose layout differed
// between --quick and a full calibration (call_free_medium_ns 230 against
// 48 ns). The first round of a calibration is thrown away: it touches its
// blocks' pages for the first time.
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "memstub/runtime.h"
#include "memstub/work.h"

// One round on a thread: its figures, and with rate the spin's rate.
typedef struct round {
  double ns[MEMSTUB_WORK_CALLS];
  double *rate;
  int rc;
} round;

static void *round_thread(void *arg) {
  round *r = arg;
  // With glibc's threshold fixed (memstub_calibrate does), a freed large
  // block does not move it: every round sees the same allocator.
  r->rc = memstub_work_measure(NULL, 1, r->ns, r->rate);
  return NULL;
}

static int run_round(round *r) {
  pthread_t th;
  int e = pthread_create(&th, NULL, round_thread, r);
  if (e != 0) return -e;
  pthread_join(th, NULL);
  return r->rc;
}

int ms__cal_calls_round(ms__cal_ctx *c, int rep, memstub_error *err) {
  round r = {.rate = &c->spin_rate};
  int rc = rep == 0 ? run_round(&r) : 0;  // thrown away: first touches
  // Once: the work's memory touches (the median of five passes over 64 MiB).
  if (rc == 0 && rep == 0) rc = memstub_work_touch_measure(c->touch_ns);
  r.rate = NULL;
  if (rc == 0) rc = run_round(&r);
  for (int k = 0; rc == 0 && k < MEMSTUB_WORK_CALLS; k++)
    if (r.ns[k] > 0) rc = ms__cal_add(&c->calls[k], 0, r.ns[k], rep);
  return rc < 0 ? memstub_error_set(err, rc, "cannot measure the allocator calls: %s",
                                    strerror(-rc))
                : 0;
}
