// cli/sites_read.c: reading TRACE.sites (memstub record --sites), strictly;
// and `memstub sites` on files the reader accepts at their edges.
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sites_read.h"
#include "testutil.h"

#define KEYS                                                                            \
  "# memstub-sites 1\ninterval_bytes 65536\npeak_heap_bytes 5246976\npeak_time_ns 6430000\n" \
  "snapshots 7\nsampled 96\ndropped 0\n"

// Read text as a sites file: its return code, *s filled (to free).
static int load(const char *text, size_t len, ms_cli_sites_file *s, memstub_error *err) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/t.sites", dir);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(text, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
  int rc = ms_cli_sites_read(path, s, err);
  tu_rmtree(dir);
  free(dir);
  return rc;
}

START_TEST(test_read) {
  static const char text[] = KEYS
      "map 0x55d0c0001000 0x55d0c0002000 0x1000 /tmp/two sites\n"
      "# a comment\n\n"
      "site 4259840 4160 4259840 4160 0x55d0c00011A9 0x55d0c0001211\n"
      "site 0 -0 65536 1\n";
  ms_cli_sites_file s;
  memstub_error err = {0};
  ck_assert_msg(load(text, strlen(text), &s, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(s.interval, 65536);
  ck_assert_int_eq(s.peak_time, 6430000);
  ck_assert_uint_eq(s.nmaps, 1);
  ck_assert_str_eq(s.maps[0].path, "/tmp/two sites");
  ck_assert_uint_eq(s.maps[0].off, 0x1000);
  ck_assert_uint_eq(s.nsites, 2);
  ck_assert_uint_eq(s.sites[0].nframes, 2);
  ck_assert_uint_eq(s.sites[0].frames[0].pc, 0x55d0c00011a9);
  ck_assert_int_eq(s.sites[0].frames[0].map, -1);
  ck_assert_uint_eq(s.sites[1].nframes, 0);
  ck_assert_int_eq(s.sites[1].peak_n, 0);
  ms_cli_sites_file_free(&s);
  // No site line (nothing sampled): read, with no sites.
  ck_assert_msg(load(KEYS, strlen(KEYS), &s, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(s.nsites, 0);
  ms_cli_sites_file_free(&s);
}
END_TEST

// Issue 28 item 6: a file cut short, values out of range, keys missing or
// twice: each refused with its line and field.
START_TEST(test_refuse) {
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"", ":1: empty file"},
      {"memstub-sites 1\n", ":1: not a memstub sites file"},
      {"# memstub-sites 2\n", ":1: not a memstub sites file"},
      // Cut short: an address, a path.
      {KEYS "site 10 1 10 1 0x7f648ae", ":8: truncated: the last line has no newline"},
      {KEYS "map 0x10 0x20 0x0 /usr/lib/x86_64-linux-gnu/li", ":8: truncated"},
      {"# memstub-sites 1\ninterval_bytes 65536\nsite 10 1 10 1 0x12 zz\n",
       ":3: field 7: 'zz' is not a return address in hex (0x...)"},
      {"# memstub-sites 1\ninterval_bytes 6\0" "5536\n", ":2: a NUL byte"},
      {"# memstub-sites 1\ninterval_bytes 0\n", ":2: field 2: '0' is not a byte count (1 or more)"},
      {"# memstub-sites 1\ninterval_bytes -1\n", ":2: field 2: '-1' is not a byte count (1 or more)"},
      {"# memstub-sites 1\npeak_heap_bytes -1\n", ":2: field 2: '-1' is not a byte count (0 or more)"},
      {"# memstub-sites 1\npeak_time_ns -2\n", ":2: field 2: '-2' is not a time in ns (-1: unknown)"},
      {"# memstub-sites 1\nsnapshots x\n", ":2: field 2: 'x' is not a count (0 or more)"},
      {"# memstub-sites 1\nsampled 1 2\n", ":2: field 3: expected 'sampled VALUE'"},
      {"# memstub-sites 1\ndropped\n", ":2: field 2: expected 'dropped VALUE'"},
      {KEYS "dropped 1\n", ":8: field 1: a second dropped line"},
      {"# memstub-sites 1\ninterval_bytes 65536\n", ":2: no peak_heap_bytes line"},
      {KEYS "sites 1 1 1 1\n", ":8: field 1: 'sites' is not interval_bytes, peak_heap_bytes"},
      {KEYS "map 0x10 0x5 0x0 /bin/x\n", ":8: field 3: the mapping ends (0x5) before it begins (0x10)"},
      {KEYS "map 0x10 0x20 0x0 bin/x\n", ":8: field 5: expected the mapping's file, an absolute path"},
      // A fuzzer's find (CI, stop 35): trailing '\r's, one of them taken as CRLF's.
      {KEYS "map 0x10 0x20 0x0 /usr/lib/l05\r\r\n", ":8: field 5: a control character (0x0d)"},
      {KEYS "map 0x10 0x20 0x0\n", ":8: field 5: expected 'map LOW HIGH OFFSET PATH'"},
      {KEYS "map 16 0x20 0x0 /x\n", ":8: field 2: '16' is not an address in hex"},
      {KEYS "map 0x 0x20 0x0 /x\n", ":8: field 2: '0x' is not an address in hex"},
      {KEYS "map 0x10000000000000000 0x20 0x0 /x\n", ":8: field 2: '0x10000000000000000' is not an address"},
      {KEYS "map 0x10 0x20 -0x1 /x\n", ":8: field 4: '-0x1' is not a file offset in hex"},
      {KEYS "site 10 1 10\n", ":8: field 5: expected 'site PEAK_BYTES PEAK_BLOCKS ALLOC_BYTES ALLOC_BLOCKS PC...'"},
      {KEYS "site -1 1 10 1\n", ":8: field 2: '-1' is not a byte count (0 or more)"},
      {KEYS "site 1 -1 10 1\n", ":8: field 3: '-1' is not a block count (0 or more)"},
      {KEYS "site 1 1 0x10 1\n", ":8: field 4: '0x10' is not a byte count (0 or more)"},
      {KEYS "site 11 1 10 1\n", ":8: field 2: more bytes at the peak (11) than allocated (10)"},
      {KEYS "site 1 1 9223372036854775807 1\nsite 1 1 1 1\n", ":9: field 4: the sites' figures add up beyond 64 bits"},
      {KEYS "site 1 1 1 1 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 0x9 0xa 0xb 0xc 0xd 0xe 0xf 0x10 0x11\n",
       ":8: field 22: more than 16 return addresses"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ms_cli_sites_file s;
    memstub_error err = {0};
    // The NUL case's text goes on after its NUL.
    size_t len = strstr(bad[i].want, "NUL") ? strlen(bad[i].text) + 6 : strlen(bad[i].text);
    int rc = load(bad[i].text, len, &s, &err);
    ck_assert_msg(rc == -EINVAL, "case %zu: rc %d", i, rc);
    ck_assert_msg(strstr(err.msg, "t.sites") && strstr(err.msg, bad[i].want), "case %zu: %s", i,
                  err.msg);
    ms_cli_sites_file_free(&s);
  }
}
END_TEST

/* Issue 28 item 11: `memstub sites` on a file without a site line passed
 * NULL to qsort (UBSan under build-asan); now it says no sampled allocation
 * was live. And a refusal from the command names file, line and field. */
START_TEST(test_cli) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/x.sites", dir);
  tu_write_file(path, KEYS);
  tu_run r = tu_memstub(dir, "sites", "x.sites", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.out, "(no sampled allocation was live at the peak)"), "%s", r.out);
  tu_run_free(&r);
  r = tu_memstub(dir, "sites", "x.sites", "--json", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.out, "\"sites\": []}"), "%s", r.out);
  tu_run_free(&r);
  tu_write_file(path, KEYS "site 10 1 10 1 0x7f64\n" "site 10 1 10 1 0x7f648ae");
  r = tu_memstub(dir, "sites", "x.sites", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "memstub: error: x.sites:9: truncated: the last line has no newline"),
                "%s", r.err);
  ck_assert_str_eq(r.out, "");
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* addr2line names an address by the nearest symbol below it when the
 * object has no line for it: in a stripped library a static function's
 * address got the exported function's name before it (libsqlite3's
 * allocator, 193 bytes past sqlite3ApiExit, showed as sqlite3ApiExit).
 * Through an addr2line that names every address "guessed": an address no
 * function symbol holds (the memstub executable's ELF header) shows as
 * object+offset, one inside _start (the entry point) keeps the name. */
START_TEST(test_names_outside_functions_dropped) {
  const char *exe = getenv("MEMSTUB_EXE");
  ck_assert_msg(exe != NULL, "MEMSTUB_EXE is not set (run the tests with ctest)");
  FILE *f = fopen(exe, "rb");
  ck_assert_ptr_nonnull(f);
  Elf64_Ehdr eh;
  ck_assert_uint_eq(fread(&eh, sizeof eh, 1, f), 1);
  fclose(f);
  char *dir = tu_mkdtemp();
  char path[4096], a2l[4096], text[8192];
  snprintf(a2l, sizeof a2l, "%s/addr2line", dir);
  tu_write_file(a2l, "#!/bin/sh\nshift 4\nfor a; do echo guessed; echo '??:0'; done\n");
  ck_assert_int_eq(chmod(a2l, 0755), 0);
  snprintf(path, sizeof path, "%s/x.sites", dir);
  snprintf(text, sizeof text,
           KEYS "map 0x100000 0x10000000 0x0 %s\nsite 20 1 20 1 0x100001\nsite 10 1 10 1 0x%llx\n", exe,
           (unsigned long long)(0x100000 + eh.e_entry + 2));
  tu_write_file(path, text);
  setenv("MEMSTUB_ADDR2LINE", a2l, 1);
  tu_run r = tu_memstub(dir, "sites", "x.sites", NULL);
  unsetenv("MEMSTUB_ADDR2LINE");
  ck_assert_msg(r.status == 0, "%s", r.err);
  const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
  char want[512];
  snprintf(want, sizeof want, "at   ??  (%s+0x0)", base);
  ck_assert_msg(strstr(r.out, want), "%s", r.out);
  snprintf(want, sizeof want, "at   guessed  (%s+0x%llx)", base, (unsigned long long)eh.e_entry + 1);
  ck_assert_msg(strstr(r.out, want), "%s", r.out);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sites");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_read);
  tcase_add_test(tc, test_refuse);
  tcase_add_test(tc, test_cli);
  tcase_add_test(tc, test_names_outside_functions_dropped);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
