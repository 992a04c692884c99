// Embedding memstub in another CMake project from an installed tree:
// `cmake --install` into a fresh prefix, then a project that does
// find_package(memstub), memstub_add_stub() and links memstub::runtime and
// memstub::probe (and a stub with DATA, its data file from MEMSTUB_DATA_d:
// issue 33); and the same project against this build tree, before any
// install (find_package through the build tree's memstubConfig.cmake). (An
// include() of cmake/MemstubStub.cmake is test_add_stub_profile_dependency in
// test_replay_cli.c.)
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

static char *path_in(const char *dir, const char *name) {
  char *p;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

static const char app_c[] =
    "#include <stdio.h>\n"
    "#include \"memstub/probe.h\"\n"
    "#include \"memstub/runtime.h\"\n"
    "#include \"memstub_s.h\"\n"
    "int main(void) {\n"
    "  memstub_error err = {0};\n"
    "  int rc = memstub_s_err(&err);\n"
    "  const struct memstub_stub *st = memstub_s_stub();\n"
    "  printf(\"rc=%d numdata=%lld name=%s probe=%d %s\\n\", rc, (long long)st->numdata,\n"
    "         st->name, memstub_probe_recording(), err.msg);\n"
    "  return rc != 0;\n"
    "}\n";

// A host of a DATA stub (memstub_add_stub(NAME d ... DATA), issue 33): its
// data file from MEMSTUB_DATA_d or the built one.
static const char appd_c[] =
    "#include <stdio.h>\n"
    "#include \"memstub/runtime.h\"\n"
    "#include \"memstub_d.h\"\n"
    "int main(void) {\n"
    "  memstub_error err = {0};\n"
    "  int rc = memstub_d_err(&err);\n"
    "  const struct memstub_stub *st = memstub_d_stub();\n"
    "  printf(\"rc=%d peak_heap=%lld %s\\n\", rc, st ? (long long)st->peak_heap : -1LL, err.msg);\n"
    "  return rc != 0;\n"
    "}\n";

// Install this build tree into dir/prefix; returns the prefix.
static char *install_into(const char *dir) {
  char *prefix = path_in(dir, "prefix");
  char *argv[] = {"cmake", "--install", getenv("MEMSTUB_BINARY_DIR"), "--prefix", prefix, NULL};
  tu_run r = tu_exec(NULL, argv);
  ck_assert_msg(r.status == 0, "install: %s%s", r.out, r.err);
  tu_run_free(&r);
  return prefix;
}

// Configure and build the project in src into bld; returns the run (caller frees).
static tu_run configure(const char *src, const char *bld, const char *prefix) {
  char *cc = getenv("MEMSTUB_CC"), ccdef[4200], pp[4200];
  snprintf(ccdef, sizeof ccdef, "-DCMAKE_C_COMPILER=%s", cc ? cc : "cc");
  snprintf(pp, sizeof pp, "-DCMAKE_PREFIX_PATH=%s", prefix);
  char *argv[] = {"cmake", "-S", (char *)src, "-B", (char *)bld, ccdef, pp, NULL};
  return tu_exec(NULL, argv);
}

/* Configure a project under dir/sub (against prefix) that adds a stub of
 * listing1 under each of names; want NULL: it configures, else configuring
 * fails with want in CMake's message (its lines joined). */
static void configure_names(const char *dir, const char *sub, const char *prefix,
                            const char *const *names, const char *want) {
  char *src = path_in(dir, sub), *bld = NULL, *cml = NULL;
  ck_assert(asprintf(&bld, "%s/%s.b", dir, sub) > 0);
  ck_assert_int_eq(mkdir(src, 0777), 0);
  cml = path_in(src, "CMakeLists.txt");
  size_t cap = 4096, len = 0;
  char *text = malloc(cap);
  len += (size_t)snprintf(text, cap, "cmake_minimum_required(VERSION 3.20)\nproject(t C)\n"
                                     "find_package(memstub REQUIRED)\n");
  for (size_t i = 0; names[i]; i++)
    len += (size_t)snprintf(text + len, cap - len, "memstub_add_stub(NAME %s TRACE \"%s\")\n",
                            names[i], tu_src("traces/samples/listing1.csv"));
  ck_assert_uint_lt(len, cap);
  tu_write_file(cml, text);
  free(text);
  tu_run r = configure(src, bld, prefix);
  if (!want) {
    ck_assert_msg(r.status == 0, "configure %s: %s%s", names[0], r.out, r.err);
  } else {
    // CMake wraps its messages: compare with the blanks squeezed.
    char *e = r.err, *o = r.err;
    for (; *e; e++)
      if (!(*e == ' ' || *e == '\n') || (o > r.err && o[-1] != ' ')) *o++ = *e == '\n' ? ' ' : *e;
    *o = '\0';
    ck_assert_msg(r.status != 0 && strstr(r.err, want), "configure: no '%s' in: %s", want, r.err);
  }
  tu_run_free(&r);
  free(src);
  free(bld);
  free(cml);
}

START_TEST(test_find_package_installed) {
  char *dir = tu_mkdtemp();
  char *prefix = install_into(dir);
  // Only include/memstub/ is installed as headers: no common/ or internal.h.
  char *inc = path_in(prefix, "include");
  ck_assert_int_eq(tu_count_entries(inc), 1);
  char *rt_h = path_in(inc, "memstub/runtime.h"), *ms_h = path_in(inc, "memstub/ms_common.h");
  ck_assert(tu_exists(rt_h));
  ck_assert(!tu_exists(ms_h));
  // The exported targets name nothing of the source or build tree.
  char *targets_path = path_in(prefix, "lib/cmake/memstub/memstubTargets.cmake");
  char *targets = tu_read_file(targets_path);
  ck_assert_ptr_nonnull(targets);
  ck_assert_ptr_null(strstr(targets, getenv("MEMSTUB_SOURCE_DIR")));
  ck_assert_ptr_null(strstr(targets, getenv("MEMSTUB_BINARY_DIR")));
  ck_assert_ptr_nonnull(strstr(targets, "add_library(memstub::runtime STATIC IMPORTED)"));
  ck_assert_ptr_nonnull(strstr(targets, "add_library(memstub::probe STATIC IMPORTED)"));
  ck_assert_ptr_nonnull(strstr(targets, "add_executable(memstub::memstub IMPORTED)"));
  free(targets);

  char *src = path_in(dir, "src"), *bld = path_in(dir, "b");
  ck_assert_int_eq(mkdir(src, 0777), 0);
  char *cml = path_in(src, "CMakeLists.txt"), *app = path_in(src, "app.c"), *text = NULL;
  char *trace = strdup(tu_src("traces/samples/listing1.csv"));
  ck_assert(asprintf(&text,
                     "cmake_minimum_required(VERSION 3.20)\nproject(t C)\n"
                     "find_package(memstub 0.1 REQUIRED)\n"
                     "memstub_add_stub(NAME s TRACE \"%s\")\n"
                     "add_executable(app app.c)\n"
                     "target_link_libraries(app PRIVATE s memstub::probe)\n"
                     "memstub_add_stub(NAME d TRACE \"%s\" DATA)\n"
                     "add_executable(appd appd.c)\n"
                     "target_link_libraries(appd PRIVATE d)\n"
                     "file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/memstub_exe.txt\n"
                     "     CONTENT \"$<TARGET_FILE:memstub::memstub>\")\n",
                     trace, trace) > 0);
  tu_write_file(cml, text);
  tu_write_file(app, app_c);
  char *appd = path_in(src, "appd.c");
  tu_write_file(appd, appd_c);
  free(appd);
  free(text);
  tu_run r = configure(src, bld, prefix);
  ck_assert_msg(r.status == 0, "configure: %s%s", r.out, r.err);
  tu_run_free(&r);
  char *build[] = {"cmake", "--build", bld, NULL};
  r = tu_exec(NULL, build);
  ck_assert_msg(r.status == 0, "build: %s%s", r.out, r.err);
  tu_run_free(&r);
  // The header was made by the installed command.
  char *exe_txt = path_in(bld, "memstub_exe.txt"), *want = path_in(prefix, "bin/memstub");
  char *exe = tu_read_file(exe_txt);
  ck_assert_ptr_nonnull(exe);
  ck_assert_str_eq(exe, want);
  free(exe);
  char *hdr = path_in(bld, "memstub_s/s_memuse.h");
  ck_assert(tu_exists(hdr));
  // The program replays the stub through its entry point.
  char *prog = path_in(bld, "app");
  char *run[] = {prog, NULL};
  r = tu_exec(NULL, run);
  ck_assert_msg(r.status == 0, "app: %s%s", r.out, r.err);
  ck_assert_str_eq(r.out, "rc=0 numdata=4 name=s probe=0 \n");
  tu_run_free(&r);
  // The DATA stub through the installed runtime: the built file, another
  // point's (made by the installed command), a missing one named.
  char *progd = path_in(bld, "appd"), *half = path_in(dir, "half.msd");
  char *rund[] = {progd, NULL};
  r = tu_exec(NULL, rund);
  ck_assert_msg(r.status == 0, "appd: %s%s", r.out, r.err);
  ck_assert_str_eq(r.out, "rc=0 peak_heap=200 \n");
  tu_run_free(&r);
  char *mexe0 = path_in(prefix, "bin/memstub");
  char *gend[] = {mexe0, "gen", trace, "--name", "d", "--heap-scale", "0.5", "--data", half, NULL};
  r = tu_exec(NULL, gend);
  ck_assert_msg(r.status == 0, "gen --data: %s", r.err);
  tu_run_free(&r);
  setenv("MEMSTUB_DATA_d", half, 1);
  r = tu_exec(NULL, rund);
  ck_assert_msg(r.status == 0, "appd: %s%s", r.out, r.err);
  ck_assert_str_eq(r.out, "rc=0 peak_heap=100 \n");
  tu_run_free(&r);
  setenv("MEMSTUB_DATA_d", "/nonexistent/d.msd", 1);
  r = tu_exec(NULL, rund);
  unsetenv("MEMSTUB_DATA_d");
  ck_assert_int_eq(r.status, 1);
  ck_assert_str_eq(r.out, "rc=-2 peak_heap=-1 MEMSTUB_DATA_d=/nonexistent/d.msd: "
                          "/nonexistent/d.msd: cannot open: No such file or directory\n");
  tu_run_free(&r);
  free(progd), free(half), free(mexe0);

  // The installed command finds its data, archives and headers in the
  // prefix, not where the build was configured to install: it builds and
  // checks a stub program, and the demo finds its sample trace.
  char *mexe = path_in(prefix, "bin/memstub"), *h = path_in(dir, "l1.h"), *sp = path_in(dir, "l1");
  char *genv[] = {mexe, "gen", trace, "-o", h, NULL};
  r = tu_exec(NULL, genv);
  ck_assert_msg(r.status == 0, "gen: %s", r.err);
  tu_run_free(&r);
  char *bargv[] = {mexe, "build", h, "-o", sp, NULL};
  r = tu_exec(NULL, bargv);
  ck_assert_msg(r.status == 0, "build: %s", r.err);
  tu_run_free(&r);
  char *sargv[] = {sp, "--check", NULL};
  r = tu_exec(NULL, sargv);
  ck_assert_msg(r.status == 0, "check: %s", r.err);
  tu_run_free(&r);
  char *sample = path_in(prefix, "share/memstub/traces/samples/synthetic-4.8s.csv");
  ck_assert(tu_exists(sample));
  free(sample);

  // A stub name memstub cannot take: refused at configure time, by the
  // installed command (issue 28 item 17).
  const char *taken[] = {"stub_call", NULL};
  configure_names(dir, "names", prefix, taken,
                  "memstub_add_stub(stub_call): 'stub_call' meets memstub's own "
                  "memstub_stub_call (include/memstub/)");

  // A version this install is not: refused at configure time.
  char *src2 = path_in(dir, "src2"), *bld2 = path_in(dir, "b2");
  char *cml2 = path_in(src2, "CMakeLists.txt");
  ck_assert_int_eq(mkdir(src2, 0777), 0);
  tu_write_file(cml2, "cmake_minimum_required(VERSION 3.20)\nproject(t C)\n"
                      "find_package(memstub 9.0 REQUIRED)\n");
  r = configure(src2, bld2, prefix);
  ck_assert_int_ne(r.status, 0);
  ck_assert_msg(strstr(r.err, "memstub") != NULL, "%s", r.err);
  tu_run_free(&r);

  tu_rmtree(dir);
  free(dir);
  free(prefix);
  free(inc);
  free(rt_h);
  free(ms_h);
  free(targets_path);
  free(src);
  free(bld);
  free(cml);
  free(app);
  free(exe_txt);
  free(want);
  free(hdr);
  free(prog);
  free(src2);
  free(bld2);
  free(cml2);
  free(trace);
  free(mexe);
  free(h);
  free(sp);
}
END_TEST

// find_package(memstub 0.1) from the build tree itself: the exported
// build-tree targets, the version file and memstub_add_stub().
START_TEST(test_find_package_build_tree) {
  char *dir = tu_mkdtemp();
  char *src = path_in(dir, "src"), *bld = path_in(dir, "b");
  ck_assert_int_eq(mkdir(src, 0777), 0);
  char *cml = path_in(src, "CMakeLists.txt"), *app = path_in(src, "app.c"), *text = NULL;
  char *trace = strdup(tu_src("traces/samples/listing1.csv"));
  ck_assert(asprintf(&text,
                     "cmake_minimum_required(VERSION 3.20)\nproject(t C)\n"
                     "find_package(memstub 0.1 REQUIRED)\n"
                     "memstub_add_stub(NAME s TRACE \"%s\")\n"
                     "add_executable(app app.c)\n"
                     "target_link_libraries(app PRIVATE s memstub::probe)\n"
                     "file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/memstub_exe.txt\n"
                     "     CONTENT \"$<TARGET_FILE:memstub::memstub>\")\n",
                     trace) > 0);
  tu_write_file(cml, text);
  tu_write_file(app, app_c);
  free(text);
  // CMAKE_PREFIX_PATH names the build tree (-Dmemstub_DIR=BUILD works too).
  tu_run r = configure(src, bld, getenv("MEMSTUB_BINARY_DIR"));
  ck_assert_msg(r.status == 0, "configure: %s%s", r.out, r.err);
  tu_run_free(&r);
  char *build[] = {"cmake", "--build", bld, NULL};
  r = tu_exec(NULL, build);
  ck_assert_msg(r.status == 0, "build: %s%s", r.out, r.err);
  tu_run_free(&r);
  // The build tree's own command made the header.
  char *exe_txt = path_in(bld, "memstub_exe.txt"), *exe = tu_read_file(exe_txt);
  ck_assert_ptr_nonnull(exe);
  ck_assert_str_eq(exe, getenv("MEMSTUB_EXE"));
  char *prog = path_in(bld, "app");
  char *run[] = {prog, NULL};
  r = tu_exec(NULL, run);
  ck_assert_msg(r.status == 0, "app: %s%s", r.out, r.err);
  ck_assert_str_eq(r.out, "rc=0 numdata=4 name=s probe=0 \n");
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
  free(src);
  free(bld);
  free(cml);
  free(app);
  free(trace);
  free(exe_txt);
  free(exe);
  free(prog);
}
END_TEST

/* Stub names in a project against the build tree, checked at configure
 * time (issue 28 item 17): two stubs may not claim a function in common
 * (alpha and alpha_err: memstub_alpha_err() called stub alpha's with a
 * garbage pointer, and the measurement files said alpha twice), and no stub
 * may take memstub's own names (replay: "redeclared as different kind of
 * symbol" deep in the compiler). */
START_TEST(test_add_stub_names) {
  char *dir = tu_mkdtemp();
  const char *bin = getenv("MEMSTUB_BINARY_DIR");
  const char *overlap[] = {"alpha", "beta", "alpha_err", NULL};
  configure_names(dir, "overlap", bin, overlap,
                  "memstub_add_stub(alpha_err): 'alpha_err' overlaps the stub 'alpha': "
                  "memstub_alpha_err would be both stubs' (a stub owns memstub_NAME and "
                  "memstub_NAME_*)");
  const char *reserved[] = {"replay", NULL};
  configure_names(dir, "reserved", bin, reserved,
                  "memstub_add_stub(replay): 'replay' meets memstub's own memstub_replay "
                  "(include/memstub/): a stub owns memstub_replay and memstub_replay_*; "
                  "memstub's names begin memstub_ and one of: calib, calibrate, compare,");
  const char *macro[] = {"MS_NAME", NULL};
  configure_names(dir, "macro", bin, macro, "memstub_add_stub(MS_NAME): 'MS_NAME' starts with MS_");
  const char *fine[] = {"alpha", "alphabet", "beta_x", "beta_y", NULL};
  configure_names(dir, "fine", bin, fine, NULL);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("embed");
  TCase *tc = tcase_create("installed");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_find_package_installed);
  tcase_add_test(tc, test_find_package_build_tree);
  tcase_add_test(tc, test_add_stub_names);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
