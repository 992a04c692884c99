// memstub report's page in a real browser (issue 30 item 4): headless
// Chromium loads the page of tests/report_fixture.c (a recording, its
// replay and a what-if) from a file with no network, runs its script
// without a console message, draws every panel, zooms to the span the
// address names (#t=FROM,TO), makes no request, and takes a screenshot of
// the whole page (kept as tests/report-browser.png in the build tree, to be
// looked at). Where Chromium is not installed (Debian: chromium) it says so
// and ctest counts it skipped ($MEMSTUB_CHROMIUM names another browser).
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report_fixture.h"
#include "testutil.h"

static const char *browser;

// The browser: $MEMSTUB_CHROMIUM, else chromium on PATH; NULL when neither.
static const char *find_browser(void) {
  const char *b = getenv("MEMSTUB_CHROMIUM");
  if (b && *b) return b;
  const char *path = getenv("PATH");
  static char found[4096];
  for (const char *p = path ? path : ""; *p;) {
    size_t n = strcspn(p, ":");
    snprintf(found, sizeof found, "%.*s/chromium", (int)n, p);
    if (n && access(found, X_OK) == 0) return found;
    p += n + (p[n] == ':');
  }
  return NULL;
}

/* The browser on dir/report.html + hash with what (e.g. "--dump-dom"), with
 * the flags of a browser that makes no request of its own, no sandbox (a
 * container) and a profile in dir; within five minutes (a 2-core machine
 * under load starts it slowly). */
static tu_run run_browser(const char *dir, const char *hash, const char *what, const char *size) {
  char url[4200], profile[4200], netlog[4200];
  snprintf(url, sizeof url, "file://%s/report.html%s", dir, hash);
  snprintf(profile, sizeof profile, "--user-data-dir=%s/profile", dir);
  snprintf(netlog, sizeof netlog, "--log-net-log=%s/net.json", dir);
  char *argv[] = {"timeout", "300", (char *)browser, "--headless", "--no-sandbox",
                  "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND", profile,
                  "--enable-logging=stderr", "--v=0", netlog, (char *)size, (char *)what, url, NULL};
  tu_run r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "%s: status %d: %s", browser, r.status, r.err);
  // The page logs nothing: any console line is an uncaught error or a warning.
  ck_assert_msg(!strstr(r.err, ":CONSOLE"), "console messages: %s", r.err);
  // No request from the page (a file:// page's have the opaque origin "null";
  // the browser's own have none).
  char path[4200];
  snprintf(path, sizeof path, "%s/net.json", dir);
  char *log = tu_read_file(path);
  ck_assert_msg(log != NULL, "no network log at %s", path);
  ck_assert_msg(!strstr(log, "\"initiator\":\"null\"") && !strstr(log, "site=file://"),
                "the page made a request: %s", path);
  free(log);
  return r;
}

// The number in attribute name="N" of the DOM's body, or -1.
static long body_attr(const char *dom, const char *name) {
  const char *body = strstr(dom, "<body");
  char want[64];
  snprintf(want, sizeof want, " %s=\"", name);
  const char *a = body ? strstr(body, want) : NULL;
  const char *end = body ? strchr(body, '>') : NULL;
  return a && a < end ? strtol(a + strlen(want), NULL, 10) : -1;
}

START_TEST(test_page_in_chromium) {
  char *dir = tu_mkdtemp();
  rf_make(dir);
  // Zoomed by its address to the first 50 µs of the run: the view says so.
  tu_run r = run_browser(dir, "#t=0,50000", "--dump-dom", "--window-size=1280,900");
  const char *dom = r.out;
  ck_assert_msg(body_attr(dom, "data-drawn") == 6, "panels drawn: %.400s", strstr(dom, "<body"));
  static const char *const panels[] = {"stack", "heap", "rss", "mapped", "cpu", "calls"};
  for (size_t i = 0; i < 6; i++) {
    char want[64];
    snprintf(want, sizeof want, "id=\"panel-%s\"", panels[i]);
    const char *p = strstr(dom, want);
    ck_assert_msg(p, "no %s in the DOM", want);
    // The script drew a legend entry per trace into it.
    const char *leg = strstr(p, "<div class=\"legend\">");
    ck_assert_msg(leg && strncmp(leg + 20, "<span><canvas", 13) == 0, "%s: no legend", panels[i]);
  }
  ck_assert_msg(strstr(dom, "<span id=\"view\">zoomed to 0 ns to 50.0 \xc2\xb5s of 0 ns to "),
                "%s", strstr(dom, "<span id=\"view\""));
  static const char *const ids[] = {"summary", "files", "compare-1", "compare-2", "curves",
                                    "lateness", "lateness-1", "lateness-2", "sites", "generations"};
  for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
    char want[64];
    snprintf(want, sizeof want, "id=\"%s\"", ids[i]);
    ck_assert_msg(strstr(dom, want), "no %s in the DOM", want);
  }
  long height = body_attr(dom, "data-height");
  ck_assert_msg(height > 900 && height < 20000, "page height %ld", height);
  tu_run_free(&r);

  // The whole page in one screenshot: every panel and section.
  char size[64], shot[4200];
  snprintf(size, sizeof size, "--window-size=1280,%ld", height);
  snprintf(shot, sizeof shot, "--screenshot=%s/report.png", dir);
  r = run_browser(dir, "", shot, size);
  tu_run_free(&r);
  char png[4200];
  snprintf(png, sizeof png, "%s/report.png", dir);
  FILE *f = fopen(png, "rb");
  ck_assert_msg(f != NULL, "no screenshot at %s", png);
  unsigned char head[24];
  ck_assert_int_eq(fread(head, 1, sizeof head, f), sizeof head);
  fseek(f, 0, SEEK_END);
  long bytes = ftell(f);
  fclose(f);
  ck_assert(memcmp(head, "\x89PNG", 4) == 0);
  uint32_t w = (uint32_t)head[16] << 24 | head[17] << 16 | head[18] << 8 | head[19];
  uint32_t h = (uint32_t)head[20] << 24 | head[21] << 16 | head[22] << 8 | head[23];
  ck_assert_msg(w == 1280 && (long)h == height, "screenshot %ux%u, the page %ldx%ld", w, h, 1280L,
                height);
  ck_assert_msg(bytes > 50000, "a screenshot of %ld bytes: blank?", bytes);
  // Kept in the build tree, to be looked at.
  char keep[4200];
  snprintf(keep, sizeof keep, "%s/tests/report-browser.png", getenv("MEMSTUB_BINARY_DIR"));
  char *cp[] = {"cp", png, keep, NULL};
  r = tu_exec(NULL, cp);
  ck_assert_int_eq(r.status, 0);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  if (!(browser = find_browser())) {
    fprintf(stderr, "test_report_browser: SKIPPED: chromium is not installed (Debian: apt-get "
                    "install chromium; or set MEMSTUB_CHROMIUM): memstub report's page was not "
                    "loaded in a browser (test_report checks its HTML)\n");
    return 77;  // ctest's SKIP_RETURN_CODE
  }
  Suite *s = suite_create("report_browser");
  TCase *t = tcase_create("chromium");
  tcase_set_timeout(t, 900);
  tcase_add_test(t, test_page_in_chromium);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
