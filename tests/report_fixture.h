/* tests/report_fixture.h: the pages of tests/test_report.c and
 * tests/test_report_browser.c, made from one recording (one definition, so
 * that the browser loads the page the other test reads). */
#ifndef MEMSTUB_TESTS_REPORT_FIXTURE_H
#define MEMSTUB_TESTS_REPORT_FIXTURE_H

/* In dir: t.csv recorded from tests/record/fnprog.c's "generation" mode
 * ($MEMSTUB_REC_FNPROG) with --sites and --function produce (so with
 * t.csv.sites and t.csv.generations beside it), r.csv its replay, w.csv a
 * what-if of it (heap x0.5, time x0.7), and report.html of the three, in
 * that order (memstub report t.csv r.csv w.csv -o report.html). Fails the
 * test when a step fails. */
void rf_make(const char *dir);

/* The page's text from dir/name (malloc'd); fails the test when unreadable. */
char *rf_read(const char *dir, const char *name);

#endif
