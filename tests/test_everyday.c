// Everyday use (issue 16): allocation sites at the heap's peak (record
// --sites, memstub sites), every --help example run as printed, and the
// compiler memstub build finds at run time.
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ms_common.h"
#include "testutil.h"

static char *path_in(const char *dir, const char *name) {
  char *p;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

static const char *cc(void) {
  const char *c = getenv("MEMSTUB_CC");
  return c && *c ? c : "cc";
}

// tests/record/two_sites.c compiled with debug info into dir/two_sites.
static char *build_two_sites(const char *dir) {
  char *exe = path_in(dir, "two_sites");
  char *argv[] = {(char *)cc(), "-g", "-O1", "-fno-builtin", "-fno-omit-frame-pointer", "-o", exe,
                  (char *)tu_src("tests/record/two_sites.c"), NULL};
  tu_run r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "compiling two_sites.c: %s", r.err);
  tu_run_free(&r);
  return exe;
}

// The value of "key": N after position at in json (the first after at), or -1.
static long long json_num(const char *at, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *p = strstr(at, pat);
  return p ? atoll(p + strlen(pat)) : -1;
}

START_TEST(test_sites_two_known_sites) {
  char *dir = tu_mkdtemp();
  char *exe = build_two_sites(dir);
  tu_run r = tu_memstub(dir, "record", "--sites", "--sites-every", "16384", "-o", "two.csv", "--",
                        exe, NULL);
  ck_assert_msg(r.status == 0, "record: %s", r.err);
  // The summary's section names both sites, the bigger first.
  const char *big = strstr(r.err, "big_site"), *small = strstr(r.err, "small_site");
  ck_assert_msg(big && small && big < small, "summary: %s", r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "allocation sites live at the heap's peak"));
  tu_run_free(&r);
  char *side = path_in(dir, "two.csv.sites");
  ck_assert(tu_exists(side));

  r = tu_memstub(dir, "sites", "two.csv", "--json", "--top", "3", NULL);
  ck_assert_msg(r.status == 0, "sites: %s", r.err);
  // Peak 7 MiB (plus the loader's and libc's few blocks, within 1/64 of it);
  // 4, 2 and 1 MiB at the sites, estimated from about 256, 128 and 64
  // samples: within 35 %.
  long long peak = json_num(r.out, "peak_heap_bytes");
  ck_assert_int_ge(peak, (7 << 20) * 63LL / 64);
  ck_assert_int_lt(peak, (7 << 20) + (256 << 10));
  static const char *const fn[] = {"big_site", "deep", "small_site"};
  static const long long bytes[] = {4 << 20, 2 << 20, 1 << 20};
  const char *at = r.out;
  for (int i = 0; i < 3; i++) {
    const char *si = strstr(at, "\"peak_bytes\"");
    ck_assert_msg(si != NULL, "site %d: %s", i, r.out);
    long long b = json_num(si, "peak_bytes");
    ck_assert_msg(b > bytes[i] * 65 / 100 && b < bytes[i] * 135 / 100, "%s: %lld", fn[i], b);
    // The first frame is its function, with file:line from the debug info.
    char want[64];
    snprintf(want, sizeof want, "\"function\": \"%s\", \"file\": ", fn[i]);
    const char *f = strstr(si, "\"function\": ");
    ck_assert_msg(f && strncmp(f, want, strlen(want)) == 0, "site %d is not %s: %s", i, fn[i], r.out);
    ck_assert_ptr_nonnull(strstr(f, "two_sites.c\", \"line\": "));
    // deep's eight backtraces are one site (its place that calls malloc).
    long long nbt = json_num(si, "backtraces");
    if (i == 1)
      ck_assert_msg(nbt >= 4 && nbt <= 8, "deep: %lld backtraces", nbt);
    else
      ck_assert_int_eq(nbt, 1);
    at = si + 1;
  }
  tu_run_free(&r);

  // --backtraces: deep's levels apart, 256 KiB each, so small_site (1 MiB) is second.
  r = tu_memstub(dir, "sites", "two.csv", "--backtraces", "--json", "--top", "2", NULL);
  ck_assert_int_eq(r.status, 0);
  const char *second = strstr(strstr(r.out, "\"peak_bytes\"") + 1, "\"peak_bytes\"");
  ck_assert_ptr_nonnull(second);
  ck_assert_msg(strstr(second, "\"function\": \"small_site\""), "%s", r.out);
  tu_run_free(&r);

  // Text: units for people, function and file:line.
  r = tu_memstub(dir, "sites", "two.csv", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "MiB"));
  ck_assert_msg(strstr(r.out, "at   big_site  two_sites.c:"), "%s", r.out);
  ck_assert_ptr_nonnull(strstr(r.out, "from main  two_sites.c:"));
  tu_run_free(&r);

  // Without --sites the trace says so, even with an older .sites beside it.
  r = tu_memstub(dir, "record", "-q", "-o", "two.csv", "--", exe, NULL);
  ck_assert_int_eq(r.status, 0);
  tu_run_free(&r);
  r = tu_memstub(dir, "sites", "two.csv", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "two.csv has no allocation sites: it was not recorded with --sites"));
  tu_run_free(&r);
  free(side);
  free(exe);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// A program's own allocation wrapper: one site, or two with --skip.
static const char wrapped_c[] =
    "#include <stdlib.h>\n#include <string.h>\n"
    "static void *keep[3072];\n"
    "__attribute__((noinline)) static void *my_alloc(size_t n) {\n"
    "  void *p = malloc(n);\n  memset(p, 1, n);\n  return p;\n}\n"
    "__attribute__((noinline)) static void two_mib(void) {\n"
    "  for (int i = 0; i < 2048; i++) keep[i] = my_alloc(1024);\n}\n"
    "__attribute__((noinline)) static void one_mib(void) {\n"
    "  for (int i = 0; i < 1024; i++) keep[2048 + i] = my_alloc(1024);\n}\n"
    "int main(void) {\n  two_mib();\n  one_mib();\n"
    "  for (int i = 0; i < 3072; i++) free(keep[i]);\n  return 0;\n}\n";

START_TEST(test_sites_skip_wrapper) {
  char *dir = tu_mkdtemp();
  char *src = path_in(dir, "wrapped.c"), *exe = path_in(dir, "wrapped");
  tu_write_file(src, wrapped_c);
  char *argv[] = {(char *)cc(), "-g", "-O1", "-fno-builtin", "-o", exe, src, NULL};
  tu_run r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "record", "-q", "--sites", "--sites-every", "8192", "-o", "w.csv", "--", exe,
                 NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  // my_alloc is the place that calls malloc: one site, both callers summed.
  r = tu_memstub(dir, "sites", "w.csv", "--json", NULL);
  ck_assert_int_eq(r.status, 0);
  const char *s1 = strstr(r.out, "\"peak_bytes\"");
  ck_assert_ptr_nonnull(s1);
  ck_assert_msg(strstr(s1, "\"function\": \"my_alloc\""), "%s", r.out);
  long long b = json_num(s1, "peak_bytes");
  ck_assert_msg(b > (3 << 20) * 65LL / 100 && b < (3 << 20) * 135LL / 100, "my_alloc: %lld", b);
  ck_assert_int_eq(json_num(s1, "backtraces"), 2);
  long long blocks = json_num(s1, "peak_blocks");
  tu_run_free(&r);
  // Text: the estimated blocks (about 3072) in k for people, JSON exact.
  r = tu_memstub(dir, "sites", "w.csv", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_msg(blocks >= 1000 && strstr(r.out, " k blocks; allocated "), "%lld: %s", blocks, r.out);
  tu_run_free(&r);
  // --skip my_alloc: its callers are the sites.
  r = tu_memstub(dir, "sites", "w.csv", "--skip", "my_alloc", "--top", "2", NULL);
  ck_assert_int_eq(r.status, 0);
  const char *a = strstr(r.out, "at   two_mib"), *c = strstr(r.out, "at   one_mib");
  ck_assert_msg(a && c && a < c, "%s", r.out);
  ck_assert_ptr_nonnull(strstr(r.out, "through my_alloc"));
  tu_run_free(&r);
  free(src), free(exe);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// ---- every --help example, as printed ----------------------------------------------------

// Whether sh finds program (a word without '/') on PATH.
static int have(const char *dir, const char *program) {
  char *script;
  ck_assert(asprintf(&script, "command -v '%s' >/dev/null", program) > 0);
  char *argv[] = {"sh", "-c", script, NULL};
  tu_run r = tu_exec(dir, argv);
  free(script);
  int ok = r.status == 0;
  tu_run_free(&r);
  return ok;
}

// The subcommands, from `memstub help`'s list.
static int commands(char names[][32], int max) {
  tu_run r = tu_memstub(NULL, "help", NULL);
  ck_assert_int_eq(r.status, 0);
  int n = 0;
  const char *p = strstr(r.out, "commands:\n");
  ck_assert_ptr_nonnull(p);
  for (p = strchr(p, '\n') + 1; p && strncmp(p, "  ", 2) == 0 && n < max; p = strchr(p, '\n'), p = p ? p + 1 : p) {
    char w[32];
    if (sscanf(p, "%31s", w) == 1 && strcmp(w, "help") != 0 && strcmp(w, "version") != 0)
      strcpy(names[n++], w);
  }
  tu_run_free(&r);
  return n;
}

START_TEST(test_help_examples_run) {
  char names[32][32];
  int n = commands(names, 32);
  ck_assert_int_ge(n, 10);
  // memstub itself on PATH first, as a user who installed it has it.
  char *exe_dir = strdup(getenv("MEMSTUB_EXE"));
  *strrchr(exe_dir, '/') = '\0';
  char *path;
  ck_assert(asprintf(&path, "%s:%s", exe_dir, getenv("PATH")) > 0);
  setenv("PATH", path, 1);
  unsetenv("COLUMNS");
  int ran = 0, skipped = 0;
  for (int c = 0; c < n; c++) {
    tu_run h = tu_memstub(NULL, names[c], "--help", NULL);
    ck_assert_int_eq(h.status, 0);
    const char *ex = strstr(h.out, "\nexamples");
    ck_assert_msg(ex != NULL, "memstub %s --help has no examples", names[c]);
    // Every example in a fresh directory holding the samples, in order.
    char *dir = tu_mkdtemp();
    static const char *const samples[] = {"listing1.csv", "nonlifo.csv", "synthetic-4.8s.csv"};
    for (size_t i = 0; i < 3; i++) {
      char rel[64];
      snprintf(rel, sizeof rel, "traces/samples/%s", samples[i]);
      char *text = tu_read_file(tu_src(rel));
      ck_assert_ptr_nonnull(text);
      char *dst = path_in(dir, samples[i]);
      tu_write_file(dst, text);
      free(dst);
      free(text);
    }
    int count = 0;
    for (const char *l = strstr(ex, "\n  $ "); l; l = strstr(l + 1, "\n  $ ")) {
      const char *cmd = l + 5;
      char *line = strndup(cmd, strcspn(cmd, "\n"));
      char first[64] = "";
      sscanf(line, "%63s", first);
      count++;
      int plot_without_gnuplot =
          (strstr(line, "memstub plot") || strstr(line, "memstub sweep")) && !have(dir, "gnuplot");
      if ((!strchr(first, '/') && !have(dir, first)) || plot_without_gnuplot) {
        fprintf(stderr, "skipped (%s not installed): %s\n", plot_without_gnuplot ? "gnuplot" : first,
                line);
        skipped++;
        free(line);
        continue;
      }
      char *argv[] = {"sh", "-c", line, NULL};
      tu_run r = tu_exec(dir, argv);
      ck_assert_msg(r.status == 0, "memstub %s --help example failed (status %d): %s\n%s", names[c],
                    r.status, line, r.err);
      tu_run_free(&r);
      ran++;
      free(line);
    }
    ck_assert_msg(count > 0, "memstub %s --help: no '  $ ' lines", names[c]);
    tu_rmtree(dir);
    free(dir);
    tu_run_free(&h);
  }
  fprintf(stderr, "help examples: %d ran, %d skipped\n", ran, skipped);
  ck_assert_int_gt(ran, 20);
  free(path);
  free(exe_dir);
}
END_TEST

// ---- the compiler, found at run time -----------------------------------------------------

START_TEST(test_build_finds_cc_on_path) {
#ifdef MEMSTUB_SANITIZED
  // A sanitized memstub takes its own compiler first (its archives need it).
  return;
#endif
  char *real = strdup(cc());
  char *dir = tu_mkdtemp();
  char *bin = path_in(dir, "bin");
  ck_assert_int_eq(mkdir(bin, 0755), 0);
  char *fake = path_in(bin, "cc"), *mark = path_in(dir, "cc-was-run");
  char *script;
  // A cc on PATH that leaves a mark and hands over to the real compiler.
  ck_assert(asprintf(&script, "#!/bin/sh\n: > '%s'\nexec %s \"$@\"\n", mark, real) > 0);
  tu_write_file(fake, script);
  ck_assert_int_eq(chmod(fake, 0755), 0);
  char *path;
  ck_assert(asprintf(&path, "%s:%s", bin, getenv("PATH")) > 0);
  setenv("PATH", path, 1);
  unsetenv("CC");
  unsetenv("MEMSTUB_CC");
  char *h = path_in(dir, "m.h");
  tu_run r = tu_memstub(dir, "gen", tu_src("traces/samples/listing1.csv"), "-o", h, NULL);
  ck_assert_int_eq(r.status, 0);
  tu_run_free(&r);
  r = tu_memstub(dir, "build", h, "-o", "stub", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  ck_assert_msg(tu_exists(mark), "memstub build did not run cc from PATH");
  // $CC comes before cc on PATH.
  unlink(mark);
  setenv("CC", real, 1);
  r = tu_memstub(dir, "build", h, "-o", "stub2", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  ck_assert(!tu_exists(mark));
  free(script), free(path), free(h), free(fake), free(mark), free(bin), free(real);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// ---- progress on a terminal (common/progress.c) --------------------------------------------

// What the progress helper draws on a terminal: stderr on a pseudo-terminal.
START_TEST(test_progress_on_a_terminal) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  ck_assert_int_ge(master, 0);
  ck_assert_int_eq(grantpt(master), 0);
  ck_assert_int_eq(unlockpt(master), 0);
  int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  ck_assert_int_ge(slave, 0);
  unsetenv("MEMSTUB_QUIET");
  int saved = dup(STDERR_FILENO);
  dup2(slave, STDERR_FILENO);
  ck_assert(ms__progress_enabled());
  ms__progress p;
  ms__progress_begin(&p, "reading x", 2 << 20, 1);
  ms__progress_update(&p, 1 << 20);  // before 250 ms: nothing yet
  usleep(300 * 1000);
  ms__progress_update(&p, 1 << 20);
  ms__progress_update(&p, 2 << 20);  // within 100 ms of the last: not drawn
  ms__progress_end(&p);
  dup2(saved, STDERR_FILENO);
  close(saved);
  // A pseudo-terminal may hand the output over in pieces: read until it has
  // been quiet for 200 ms.
  char buf[512];
  size_t n = 0;
  struct pollfd pf = {.fd = master, .events = POLLIN};
  while (n < sizeof buf - 1 && poll(&pf, 1, 200) == 1) {
    ssize_t k = read(master, buf + n, sizeof buf - 1 - n);
    if (k <= 0) break;
    n += (size_t)k;
  }
  ck_assert_uint_gt(n, 0);
  buf[n] = '\0';
  ck_assert_msg(strcmp(buf, "\r\033[Kreading x  1.0 MiB / 2.0 MiB (50%)\r\033[K") == 0, "drew '%s'", buf);
  close(slave);
  close(master);
}
END_TEST

// Not a terminal: nothing, and the file read whole.
START_TEST(test_progress_read_file_not_a_terminal) {
  char *dir = tu_mkdtemp();
  char *f = path_in(dir, "f");
  tu_write_file(f, "abc\n");
  char *buf = NULL;
  size_t len = 0;
  memstub_error err = {0};
  ck_assert_int_eq(ms__progress_read_file(f, "reading", &buf, &len, &err), 0);
  ck_assert_uint_eq(len, 4);
  ck_assert_str_eq(buf, "abc\n");
  free(buf);
  char *missing = path_in(dir, "missing");
  ck_assert_int_lt(ms__progress_read_file(missing, "reading", &buf, &len, &err), 0);
  ck_assert_ptr_nonnull(strstr(err.msg, "missing: cannot open"));
  free(missing);
  free(f);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("everyday");
  TCase *t = tcase_create("sites");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, test_sites_two_known_sites);
  tcase_add_test(t, test_sites_skip_wrapper);
  suite_add_tcase(s, t);
  t = tcase_create("help");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, test_help_examples_run);
  suite_add_tcase(s, t);
  t = tcase_create("progress");
  tcase_add_test(t, test_progress_on_a_terminal);
  tcase_add_test(t, test_progress_read_file_not_a_terminal);
  suite_add_tcase(s, t);
  t = tcase_create("cc");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, test_build_finds_cc_on_path);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
