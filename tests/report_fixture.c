// The recording and the page of tests/report_fixture.h.
#include "report_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"

void rf_make(const char *dir) {
  const char *fnprog = getenv("MEMSTUB_REC_FNPROG");
  ck_assert_msg(fnprog != NULL, "MEMSTUB_REC_FNPROG is not set (run the tests with ctest)");
  tu_run r = tu_memstub(dir, "record", "-q", "--sites", "--function", "produce", "-o", "t.csv",
                        "--", fnprog, "generation", NULL);
  ck_assert_msg(r.status == 0, "record: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", "t.csv", "--measure", "r.csv", NULL);
  ck_assert_msg(r.status == 0, "replay: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", "t.csv", "--heap-scale", "0.5", "--time-scale", "0.7", "--measure",
                 "w.csv", NULL);
  ck_assert_msg(r.status == 0, "what-if: %s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "report", "t.csv", "r.csv", "w.csv", "-o", "report.html", NULL);
  ck_assert_msg(r.status == 0, "report: %s", r.err);
  tu_run_free(&r);
}

char *rf_read(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *text = tu_read_file(path);
  ck_assert_msg(text != NULL, "cannot read %s", path);
  return text;
}
