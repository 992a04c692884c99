// Every path offers every timing mode, and one default everywhere (issue 32
// item 1): memstub replay (a trace, with a profile, a data file), memstub
// gen and a stub program made by memstub build, memstub_add_stub's TIMING
// and MEMSTUB_TIMING, and memstub demo. What a replay ran with is read back
// from its measured trace (the `timing` and `calibration` metadata), so
// nothing here depends on how well the host keeps time.
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memstub/runtime.h"
#include "memstub/trace.h"
#include "memstub_deadline_stub.h"
#include "memstub_listing1_stub.h"
#include "memstub_usleep_stub.h"
#include "testutil.h"

static const char *const modes[] = {"online", "deadline", "usleep"};
#define NMODES 3

static char *path_in(const char *dir, const char *name) {
  char *p;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

// The metadata key of the measured trace at path (a copy; "" when absent).
static char *meta_of(const char *path, const char *key) {
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  const char *v = memstub_trace_get_meta(t, key);
  char *copy = strdup(v ? v : "");
  memstub_trace_free(t);
  return copy;
}

// The measured trace at path says it was replayed with timing want.
static void expect_timing(const char *path, const char *want, const char *what) {
  char *got = meta_of(path, "timing");
  ck_assert_msg(strcmp(got, want) == 0, "%s: replayed with %s timing, want %s", what, got, want);
  free(got);
  // Online timing learns the work; the others do not (an uncompensated stub).
  char *cost = meta_of(path, "cost_model");
  ck_assert_msg((strncmp(cost, "online", 6) == 0) == (strcmp(want, "online") == 0),
                "%s: %s timing, cost_model '%s'", what, want, cost);
  free(cost);
}

static void run_ok(tu_run *r, const char *what) {
  ck_assert_msg(r->status == 0, "%s: exit %d: %s", what, r->status, r->err);
  tu_run_free(r);
}

// A quick profile of this host, in dir.
static char *profile_in(const char *dir) {
  char *prof = path_in(dir, "host.profile");
  tu_run r = tu_memstub(NULL, "calibrate", "--quick", "--repeat", "1", "-d", "0", "-o", prof, NULL);
  run_ok(&r, "calibrate");
  return prof;
}

START_TEST(test_default_is_online) {
  ck_assert_int_eq(MEMSTUB_TIMING_DEFAULT, MEMSTUB_TIMING_ONLINE);
  ck_assert_str_eq(memstub_timing_name(MEMSTUB_TIMING_DEFAULT), modes[0]);
  for (int k = 0; k < NMODES; k++) {
    int t = -1;
    ck_assert_int_eq(memstub_timing_parse(modes[k], &t), 0);
    ck_assert_str_eq(memstub_timing_name(t), modes[k]);
  }
}
END_TEST

// memstub replay TRACE: every mode, online by default; with --calibration,
// compensated for the mode it replays with.
START_TEST(test_replay_every_mode) {
  char *dir = tu_mkdtemp(), *out = path_in(dir, "out.csv"), *prof = profile_in(dir);
  char *in = strdup(tu_src("traces/samples/listing1.csv"));
  for (int c = 0; c < 2; c++) {
    for (int k = -1; k < NMODES; k++) {
      const char *want = k < 0 ? modes[0] : modes[k];
      char *argv[10] = {"replay", in, "--measure", out};
      int n = 4;
      if (c) argv[n++] = "--calibration", argv[n++] = prof;
      if (k >= 0) argv[n++] = "--timing", argv[n++] = (char *)modes[k];
      tu_run r = tu_memstub(NULL, argv[0], argv[1], argv[2], argv[3], n > 4 ? argv[4] : NULL,
                            n > 5 ? argv[5] : NULL, n > 6 ? argv[6] : NULL,
                            n > 7 ? argv[7] : NULL, NULL);
      char note[64];
      snprintf(note, sizeof note, "(%s timing", want);
      ck_assert_msg(strstr(r.err, note), "no '%s' in: %s", note, r.err);
      run_ok(&r, "replay");
      expect_timing(out, want, c ? "replay --calibration" : "replay");
      char *cal = meta_of(out, "calibration"), w[4200];
      snprintf(w, sizeof w, "%s (%s timing)", prof, want);
      ck_assert_msg(strcmp(cal, c ? w : "none") == 0, "calibration '%s'", cal);
      free(cal);
    }
  }
  tu_run r = tu_memstub(NULL, "replay", in, "-t", "sometimes", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "--timing: expected online, deadline or usleep, found 'sometimes'"),
                "%s", r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir), free(out), free(prof), free(in);
}
END_TEST

/* memstub gen --timing (with or without a profile) says which mode the stub
 * replays with: a stub program and memstub replay --data take it as their
 * default, their --timing overrides it; without --timing, online. */
START_TEST(test_gen_build_and_data_every_mode) {
  char *dir = tu_mkdtemp(), *out = path_in(dir, "out.csv"), *h = path_in(dir, "s.h");
  char *prog = path_in(dir, "s"), *data = path_in(dir, "s.msd");
  char *in = strdup(tu_src("traces/samples/listing1.csv"));
  for (int k = -1; k < NMODES; k++) {
    const char *want = k < 0 ? modes[0] : modes[k];
    const char *t = k < 0 ? "--name" : "--timing", *v = k < 0 ? "s" : modes[k];
    tu_run r = tu_memstub(NULL, "gen", in, t, v, "-o", h, NULL);
    run_ok(&r, "gen");
    char *text = tu_read_file(h), line[64];
    snprintf(line, sizeof line, ".timing = %d,", k < 0 ? 0 : k == 0 ? 3 : k);
    ck_assert_msg(strstr(text, line) && strstr(text, " * calibration:   none\n"), "%s", text);
    free(text);
    r = tu_memstub(NULL, "build", h, "-o", prog, NULL);
    run_ok(&r, "build");
    char *argv[] = {prog, "--measure", out, NULL};
    r = tu_exec(dir, argv);
    char note[64];
    snprintf(note, sizeof note, "(%s timing)", want);
    ck_assert_msg(strstr(r.err, note), "no '%s' in: %s", note, r.err);
    run_ok(&r, "stub");
    expect_timing(out, want, "stub program");
    // The program's --timing overrides the header's mode.
    for (int m = 0; m < NMODES; m++) {
      char *over[] = {prog, "--timing", (char *)modes[m], "--measure", out, NULL};
      r = tu_exec(dir, over);
      run_ok(&r, "stub --timing");
      expect_timing(out, modes[m], "stub program --timing");
    }
    // The same through a data file.
    r = tu_memstub(NULL, "gen", in, t, v, "--data", data, NULL);
    run_ok(&r, "gen --data");
    r = tu_memstub(NULL, "replay", "--data", data, "--measure", out, NULL);
    run_ok(&r, "replay --data");
    expect_timing(out, want, "replay --data");
    r = tu_memstub(NULL, "replay", "--data", data, "-t", modes[(k + 2) % NMODES], "-m", out, NULL);
    run_ok(&r, "replay --data -t");
    expect_timing(out, modes[(k + 2) % NMODES], "replay --data -t");
  }
  char *help[] = {prog, "--help", NULL};
  tu_run r = tu_exec(dir, help);
  ck_assert_msg(r.status == 0 && strstr(r.out, "[--timing online|deadline|usleep]"), "%s", r.out);
  tu_run_free(&r);
  char *bad[] = {prog, "--timing", "sometimes", NULL};
  r = tu_exec(dir, bad);
  ck_assert_msg(r.status == 2 && strstr(r.err, "--timing: expected online, deadline or usleep"),
                "%d %s", r.status, r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir), free(out), free(h), free(prog), free(data), free(in);
}
END_TEST

/* With a profile: gen compensates for the mode asked for (online by
 * default: the sizes only, the delays kept), and a stub compensated for
 * deadline timing replayed with online timing says it learns nothing (its
 * delays carry the profile's prediction already). */
START_TEST(test_gen_calibrated_modes) {
  char *dir = tu_mkdtemp(), *h = path_in(dir, "s.h"), *prof = profile_in(dir);
  char *prog = path_in(dir, "s"), *out = path_in(dir, "out.csv");
  char *in = strdup(tu_src("traces/samples/listing1.csv"));
  for (int k = -1; k < NMODES; k++) {
    const char *want = k < 0 ? modes[0] : modes[k];
    tu_run r = k < 0 ? tu_memstub(NULL, "gen", in, "-c", prof, "-o", h, NULL)
                     : tu_memstub(NULL, "gen", in, "-c", prof, "-t", modes[k], "-o", h, NULL);
    char note[64];
    snprintf(note, sizeof note, "time (%s", want);
    ck_assert_msg(strstr(r.err, note), "no '%s' in: %s", note, r.err);
    run_ok(&r, "gen -c");
    char *text = tu_read_file(h), w[4200];
    snprintf(w, sizeof w, " * calibration:   %s (%s timing)\n", prof, want);
    ck_assert_msg(strstr(text, w), "no '%s' in:\n%.1500s", w, text);
    free(text);
  }
  // A header compensated for deadline timing, replayed with online timing.
  tu_run r = tu_memstub(NULL, "gen", in, "-c", prof, "-t", "deadline", "-o", h, NULL);
  run_ok(&r, "gen -t deadline");
  r = tu_memstub(NULL, "build", h, "-o", prog, NULL);
  run_ok(&r, "build");
  char *argv[] = {prog, "--timing", "online", "--measure", out, NULL};
  r = tu_exec(dir, argv);
  ck_assert_msg(strstr(r.err, "(online timing without its cost model: the delays were "
                              "compensated for deadline timing)"),
                "%s", r.err);
  run_ok(&r, "stub --timing online");
  char *cost = meta_of(out, "cost_model");
  ck_assert_str_eq(cost, "");
  free(cost);
  tu_rmtree(dir);
  free(dir), free(h), free(prof), free(prog), free(out), free(in);
}
END_TEST

/* memstub_add_stub(... TIMING MODE): the library's entry point replays with
 * it; MEMSTUB_TIMING overrides it; without TIMING, online. */
START_TEST(test_add_stub_every_mode) {
  // %c: the process's measured calls counted from 1 (docs/runtime.md, "Measurement files").
  char *dir = tu_mkdtemp(), *tmpl = path_in(dir, "m%c.csv");
  int calls = 0;
  static const struct {
    int (*call)(memstub_error *);
    const char *want;
  } stubs[] = {{memstub_listing1_stub_err, "online"},
               {memstub_deadline_stub_err, "deadline"},
               {memstub_usleep_stub_err, "usleep"}};
  for (size_t s = 0; s < 3; s++) {
    for (int m = -1; m < NMODES; m++) {
      if (m >= 0) setenv("MEMSTUB_TIMING", modes[m], 1);
      setenv("MEMSTUB_MEASURE", tmpl, 1);
      memstub_error err = {0};
      ck_assert_msg(stubs[s].call(&err) == 0, "%s", err.msg);
      unsetenv("MEMSTUB_MEASURE");
      unsetenv("MEMSTUB_TIMING");
      char name[32], *out;
      snprintf(name, sizeof name, "m%d.csv", ++calls);
      out = path_in(dir, name);
      expect_timing(out, m < 0 ? stubs[s].want : modes[m], "memstub_add_stub");
      free(out);
    }
  }
  setenv("MEMSTUB_TIMING", "sometimes", 1);
  memstub_error err = {0};
  ck_assert_int_lt(memstub_usleep_stub_err(&err), 0);
  unsetenv("MEMSTUB_TIMING");
  ck_assert_msg(strstr(err.msg, "MEMSTUB_TIMING: 'sometimes' is none of online, deadline or usleep"),
                "%s", err.msg);
  tu_rmtree(dir);
  free(dir), free(tmpl);
}
END_TEST

// The measured trace at path was replayed with re-aim reaim and slice slice asked ("" none).
static void expect_reaim_slice(const char *path, const char *reaim, const char *slice,
                               const char *what) {
  char *m = meta_of(path, "margin"), *sl = meta_of(path, "sched_slice"), want[64];
  snprintf(want, sizeof want, "re-aim of %s ns", reaim);
  ck_assert_msg(strstr(m, want), "%s: margin '%s', want %s", what, m, want);
  ck_assert_msg(*slice ? strncmp(sl, slice, strlen(slice)) == 0 : !*sl, "%s: sched_slice '%s'", what,
                sl);
  free(m), free(sl);
}

/* The replay's other options are on every path too (issue 32 item 1): the
 * re-aim distance and the scheduler's slice, memstub replay's --reaim and
 * --slice, in a stub program (--reaim, --slice) and the re-aim in a stub
 * function (MEMSTUB_REAIM_NS); a stub program had neither. */
START_TEST(test_reaim_slice_every_path) {
  char *dir = tu_mkdtemp(), *out = path_in(dir, "out.csv"), *h = path_in(dir, "s.h");
  char *prog = path_in(dir, "s"), *in = strdup(tu_src("traces/samples/listing1.csv"));
  tu_run r = tu_memstub(NULL, "replay", in, "--reaim", "400000", "--slice", "200000", "-m", out,
                        NULL);
  run_ok(&r, "replay --reaim --slice");
  expect_reaim_slice(out, "400000", "200000 ns asked", "replay");
  r = tu_memstub(NULL, "gen", in, "-o", h, NULL);
  run_ok(&r, "gen");
  r = tu_memstub(NULL, "build", h, "-o", prog, NULL);
  run_ok(&r, "build");
  char *argv[] = {prog, "--reaim", "400000", "--slice", "200000", "--measure", out, NULL};
  r = tu_exec(dir, argv);
  run_ok(&r, "stub --reaim --slice");
  expect_reaim_slice(out, "400000", "200000 ns asked", "stub program");
  char *plain[] = {prog, "--measure", out, NULL};
  r = tu_exec(dir, plain);
  run_ok(&r, "stub");
  expect_reaim_slice(out, "1000000", "", "stub program, defaults");
  char *bad[] = {prog, "--slice", "99999", NULL};
  r = tu_exec(dir, bad);
  ck_assert_msg(r.status == 2 && strstr(r.err, "--slice: expected 100000 to 100000000 ns"), "%d %s",
                r.status, r.err);
  tu_run_free(&r);
  // A stub function, from the environment (no slice: it would stay the caller's thread's).
  char *tmpl = path_in(dir, "f%c.csv");
  setenv("MEMSTUB_MEASURE", tmpl, 1);
  setenv("MEMSTUB_REAIM_NS", "400000", 1);
  memstub_error err = {0};
  ck_assert_msg(memstub_listing1_stub_err(&err) == 0, "%s", err.msg);
  setenv("MEMSTUB_REAIM_NS", "0", 1);
  int rc = memstub_listing1_stub_err(&err);
  unsetenv("MEMSTUB_MEASURE"), unsetenv("MEMSTUB_REAIM_NS");
  ck_assert_int_lt(rc, 0);
  ck_assert_msg(strstr(err.msg, "MEMSTUB_REAIM_NS: '0' is not a number of ns"), "%s", err.msg);
  char *f1 = path_in(dir, "f1.csv");
  expect_reaim_slice(f1, "400000", "", "memstub_add_stub");
  tu_rmtree(dir);
  free(dir), free(out), free(h), free(prog), free(in), free(tmpl), free(f1);
}
END_TEST

/* memstub_add_stub's TIMING is checked at configure time: a word that is no
 * mode, or TIMING beside a --timing in GEN_ARGS (which would win?), fails. */
START_TEST(test_add_stub_timing_refused) {
  static const struct {
    const char *args, *want;
  } cases[] = {
      {"TIMING sometimes", "TIMING: expected online, deadline or usleep, found 'sometimes'"},
      {"TIMING usleep GEN_ARGS --timing deadline", "TIMING and --timing in GEN_ARGS"},
  };
  char *dir = tu_mkdtemp(), *inc = strdup(tu_src("include"));
  char *fn = strdup(tu_src("cmake/MemstubStub.cmake"));
  char *trace = strdup(tu_src("traces/samples/listing1.csv"));
  for (size_t k = 0; k < 2; k++) {
    char sub[16], bsub[16];
    snprintf(sub, sizeof sub, "p%zu", k);
    snprintf(bsub, sizeof bsub, "p%zu.b", k);
    char *src = path_in(dir, sub), *bld = path_in(dir, bsub), *cml = NULL, *text = NULL;
    ck_assert_int_eq(mkdir(src, 0777), 0);
    cml = path_in(src, "CMakeLists.txt");
    ck_assert(asprintf(&text,
                       "cmake_minimum_required(VERSION 3.20)\nproject(t C)\n"
                       "set(MEMSTUB_EXECUTABLE \"%s\")\nset(MEMSTUB_LIBDIR \"%s\")\n"
                       "set(MEMSTUB_INCLUDEDIR \"%s\")\ninclude(\"%s\")\n"
                       "memstub_add_stub(NAME s TRACE \"%s\" %s)\n",
                       getenv("MEMSTUB_EXE"), getenv("MEMSTUB_BINARY_DIR"), inc, fn, trace,
                       cases[k].args) > 0);
    tu_write_file(cml, text);
    char *cc = getenv("MEMSTUB_CC"), ccdef[4200];
    snprintf(ccdef, sizeof ccdef, "-DCMAKE_C_COMPILER=%s", cc ? cc : "cc");
    char *configure[] = {"cmake", "-S", src, "-B", bld, ccdef, NULL};
    tu_run r = tu_exec(NULL, configure);
    // CMake wraps its messages: compare with the blanks squeezed.
    char *e = r.err, *o = r.err;
    for (; *e; e++)
      if (!(*e == ' ' || *e == '\n') || (o > r.err && o[-1] != ' ')) *o++ = *e == '\n' ? ' ' : *e;
    *o = '\0';
    ck_assert_msg(r.status != 0 && strstr(r.err, cases[k].want), "%zu: no '%s' in: %s", k,
                  cases[k].want, r.err);
    tu_run_free(&r);
    free(src), free(bld), free(cml), free(text);
  }
  tu_rmtree(dir);
  free(dir), free(inc), free(fn), free(trace);
}
END_TEST

/* memstub demo --timing MODE makes, builds and replays the stub with it,
 * each command as a user would type it; online by default. */
START_TEST(test_demo_every_mode) {
  char *dir = tu_mkdtemp(), *prof = profile_in(dir);
  char l1[4096];
  snprintf(l1, sizeof l1, "%s", tu_src("traces/samples/listing1.csv"));
  for (int k = -1; k < NMODES; k++) {
    const char *want = k < 0 ? modes[0] : modes[k];
    tu_run r = k < 0 ? tu_memstub(dir, "demo", l1, "-o", "d", "--profile", prof, "--no-figure",
                                  NULL)
                     : tu_memstub(dir, "demo", l1, "-o", "d", "--profile", prof, "--no-figure",
                                  "--timing", modes[k], NULL);
    char gen[128], replay[128];
    snprintf(gen, sizeof gen, "--calibration %s --timing %s -o d/memuse.h", prof, want);
    snprintf(replay, sizeof replay, "d/stub --timing %s --measure d/replayed.csv", want);
    ck_assert_msg(r.status == 0 && strstr(r.out, gen) && strstr(r.out, replay), "exit %d\n%s\n%s",
                  r.status, r.out, r.err);
    tu_run_free(&r);
    char *rep = path_in(dir, "d/replayed.csv");
    expect_timing(rep, want, "demo");
    free(rep);
  }
  tu_rmtree(dir);
  free(dir), free(prof);
}
END_TEST

int main(void) {
  Suite *s = suite_create("timing_modes");
  TCase *tc = tcase_create("paths");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_default_is_online);
  tcase_add_test(tc, test_replay_every_mode);
  tcase_add_test(tc, test_gen_build_and_data_every_mode);
  tcase_add_test(tc, test_gen_calibrated_modes);
  tcase_add_test(tc, test_add_stub_every_mode);
  tcase_add_test(tc, test_reaim_slice_every_path);
  tcase_add_test(tc, test_add_stub_timing_refused);
  tcase_add_test(tc, test_demo_every_mode);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
