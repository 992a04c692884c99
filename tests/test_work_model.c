// The work model carried by memstub gen (issue 32): a trace's
// work_mem_share metadata, and with --calibration the profile's loop rate
// and touch costs, go into the header and the data file (layout 5,
// docs/formats.md, "Metadata of the work model"), and every stub made from
// them replays with them; MEMSTUB_WORK_MEM_SHARE still overrides the share.
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/calib.h"
#include "memstub/runtime.h"
#include "memstub/trace.h"
#include "testutil.h"

// Rows with CPU time to work through, and heap to touch.
static const char body[] =
    "time_ns,stack_bytes,heap_bytes,cpu_ns\n"
    "0,0,0,0\n"
    "2000000,0,1048576,500000\n"
    "4000000,0,2097152,1000000\n"
    "6000000,0,2097152,1500000\n";

static char *path_in(const char *dir, const char *name) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

// The trace t.csv in dir, with the share's metadata line (NULL: none).
static char *write_trace(const char *dir, const char *share) {
  char text[1024];
  snprintf(text, sizeof text, "# memstub-trace 1\n%s%s%s%s", share ? "# work_mem_share: " : "",
           share ? share : "", share ? "\n" : "", body);
  char *p = path_in(dir, "t.csv");
  tu_write_file(p, text);
  return p;
}

// Run memstub gen IN FLAG OUT in dir (FLAG -o or --data), which must succeed and, unless
// says is NULL, say it.
static void gen_ok(const char *dir, const char *in, const char *flag, const char *out,
                   const char *says) {
  tu_run r = tu_memstub(dir, "gen", in, flag, out, NULL);
  ck_assert_msg(r.status == 0, "gen: exit %d: %s", r.status, r.err);
  ck_assert_msg(!says || strstr(r.err, says), "%s", r.err);
  tu_run_free(&r);
}

// The data file path, opened and checked.
static memstub_stub_data *open_data(const char *path) {
  memstub_stub_data *d = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_stub_data_open(path, &d, &err) == 0, "%s", err.msg);
  return d;
}

/* The memory share a measured trace says its work ran with (its "work"
 * metadata: "N ns counted, memory share S, ..."); -2 when it has none. */
static double measured_share(const char *path) {
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s: %s", path, err.msg);
  const char *w = memstub_trace_get_meta(t, "work"), *s = w ? strstr(w, "memory share ") : NULL;
  double v = s ? strtod(s + strlen("memory share "), NULL) : -2;
  memstub_trace_free(t);
  return v;
}

// Run the stub program exe measuring into out (share: MEMSTUB_WORK_MEM_SHARE, or NULL).
static double run_stub(const char *dir, const char *exe, const char *out, const char *share) {
  char *argv[] = {(char *)exe, "--measure", (char *)out, NULL};
  if (share) setenv("MEMSTUB_WORK_MEM_SHARE", share, 1);
  tu_run r = tu_exec(dir, argv);
  unsetenv("MEMSTUB_WORK_MEM_SHARE");
  ck_assert_msg(r.status == 0, "%s: exit %d: %s", exe, r.status, r.err);
  tu_run_free(&r);
  return measured_share(out);
}

/* A header from a trace with work_mem_share 0.3: its stub program replays
 * with share 0.3 (before: none, the header did not carry it), and
 * MEMSTUB_WORK_MEM_SHARE wins over it. */
START_TEST(test_header_carries_share) {
  char *dir = tu_mkdtemp();
  char *in = write_trace(dir, "0.3");
  gen_ok(dir, in, "-o", "t.h", "work_mem_share 0.3 carried into the header");
  char *h = path_in(dir, "t.h"), *text = tu_read_file(h);
  ck_assert_msg(strstr(text, "#define WORK_MEM_SHARE 0.3\n"), "%s", text);
  ck_assert_msg(strstr(text, ".abi = MEMSTUB_STUB_ABI_MODEL,"), "%s", text);
  free(text);
  tu_run r = tu_memstub(dir, "build", "t.h", "-o", "t_stub", NULL);
  ck_assert_msg(r.status == 0, "build: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  char *exe = path_in(dir, "t_stub"), *out = path_in(dir, "m.csv");
  ck_assert_double_eq_tol(run_stub(dir, exe, out, NULL), 0.3, 1e-12);
  ck_assert_double_eq_tol(run_stub(dir, exe, out, "0.5"), 0.5, 1e-12);
  // A trace without the metadata: no model, the layout and default as before.
  free(in);
  in = write_trace(dir, NULL);
  gen_ok(dir, in, "-o", "t.h", NULL);
  text = tu_read_file(h);
  ck_assert_msg(!strstr(text, "memWorkModel") && strstr(text, ".abi = MEMSTUB_STUB_ABI_WORK,"),
                "%s", text);
  free(text);
  free(h);
  free(exe);
  free(out);
  free(in);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A data file from the same trace: layout 5 with the model; memstub
 * replay --data, a stub program built from it and a stub called as a
 * function (memstub_stub_call, memstub_add_stub's entry point) replay with
 * share 0.3; --work-mem-share and MEMSTUB_WORK_MEM_SHARE win. */
START_TEST(test_data_file_carries_share) {
  char *dir = tu_mkdtemp();
  char *in = write_trace(dir, "0.3"), *msd = path_in(dir, "t.msd");
  gen_ok(dir, in, "--data", msd, "work_mem_share 0.3 carried into the data file");
  memstub_stub_data *d = open_data(msd);
  memstub_error err = {0};
  ck_assert_int_eq(d->stub.abi, MEMSTUB_STUB_ABI_MODEL);
  ck_assert_ptr_nonnull(d->stub.work_model);
  ck_assert_ptr_null(d->stub.callseq);  // a model without calls: replayed by size class
  memstub_replay_options o;
  memstub_replay_options_for(&o, &d->stub);
  ck_assert(o.mem_share == 0.3);
  memstub_replay *rp = NULL;
  ck_assert_msg(memstub_replay_run(&d->stub, &o, &rp, &err) == 0, "%s", err.msg);
  ck_assert(rp->info.work_mem_share == 0.3);
  memstub_replay_free(rp);
  // The function entry point, measured through MEMSTUB_MEASURE.
  char *out = path_in(dir, "call.csv");
  setenv("MEMSTUB_MEASURE", out, 1);
  ck_assert_msg(memstub_stub_call(&d->stub, &err) == 0, "%s", err.msg);
  ck_assert_double_eq_tol(measured_share(out), 0.3, 1e-12);
  setenv("MEMSTUB_WORK_MEM_SHARE", "0.5", 1);
  ck_assert_msg(memstub_stub_call(&d->stub, &err) == 0, "%s", err.msg);
  unsetenv("MEMSTUB_WORK_MEM_SHARE");
  unsetenv("MEMSTUB_MEASURE");
  char *out2 = path_in(dir, "call.2.csv");  // the second measured call of the process
  ck_assert_double_eq_tol(measured_share(out2), 0.5, 1e-12);
  memstub_stub_data_free(d);
  // memstub replay --data says so; --work-mem-share wins.
  tu_run r = tu_memstub(dir, "replay", "--data", msd, NULL);
  ck_assert_msg(r.status == 0, "replay: exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "(memory share 0.3)"), "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "replay", "--data", msd, "--work-mem-share", "0.6", NULL);
  ck_assert_msg(r.status == 0, "replay: exit %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "(memory share 0.6)"), "%s", r.err);
  tu_run_free(&r);
  // A program built from the data file.
  r = tu_memstub(dir, "build", "--data", msd, "-o", "d_stub", NULL);
  ck_assert_msg(r.status == 0, "build: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  char *exe = path_in(dir, "d_stub"), *m = path_in(dir, "m.csv");
  ck_assert_double_eq_tol(run_stub(dir, exe, m, NULL), 0.3, 1e-12);
  ck_assert_double_eq_tol(run_stub(dir, exe, m, "0.5"), 0.5, 1e-12);
  // Without the metadata the file is layout 3, as before: no model.
  free(in);
  in = write_trace(dir, NULL);
  gen_ok(dir, in, "--data", msd, NULL);
  d = open_data(msd);
  ck_assert_int_eq(d->stub.abi, MEMSTUB_STUB_ABI_WORK);
  memstub_replay_options_for(&o, &d->stub);
  ck_assert(o.mem_share == 0 && o.work_rate == 0 && !o.touch_ns);
  memstub_stub_data_free(d);
  free(exe);
  free(m);
  free(out);
  free(out2);
  free(in);
  free(msd);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* With --calibration the model carries the profile's loop rate and touch
 * costs: a stub replays counting its work at them. */
START_TEST(test_profile_rates_carried) {
  char *dir = tu_mkdtemp();
  char *in = write_trace(dir, NULL), *msd = path_in(dir, "t.msd");
  char *prof = path_in(dir, "host.profile");
  tu_run r = tu_memstub(dir, "calibrate", "--quick", "-o", prof, NULL);
  ck_assert_msg(r.status == 0, "calibrate: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", in, "-c", prof, "--data", msd, NULL);
  ck_assert_msg(r.status == 0, "gen: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  memstub_profile p;
  memstub_error err = {0};
  ck_assert_msg(memstub_profile_read(prof, &p, &err) == 0, "%s", err.msg);
  memstub_stub_data *d = open_data(msd);
  ck_assert_int_eq(d->stub.abi, MEMSTUB_STUB_ABI_MODEL);
  const double *m = d->stub.work_model;
  ck_assert(m[MEMSTUB_STUB_MODEL_SHARE] == 0);  // not given: the default
  ck_assert(m[MEMSTUB_STUB_MODEL_RATE] == p.spin_steps_per_ns);
  for (int k = 0; k < MEMSTUB_WORK_TOUCH_SIZES; k++)
    ck_assert(m[MEMSTUB_STUB_MODEL_TOUCH + k] == p.touch_ns[k]);
  memstub_replay_options o;
  memstub_replay_options_for(&o, &d->stub);
  ck_assert(o.work_rate == p.spin_steps_per_ns && o.touch_ns && o.touch_ns[4] == p.touch_ns[4]);
  // The host's touch costs given: the default share, as memstub replay -c has it.
  memstub_replay *rp = NULL;
  ck_assert_msg(memstub_replay_run(&d->stub, &o, &rp, &err) == 0, "%s", err.msg);
  ck_assert(rp->info.work_mem_share == MEMSTUB_WORK_MEM_SHARE_DEFAULT);
  memstub_replay_free(rp);
  memstub_stub_data_free(d);
  // The header says the same numbers.
  r = tu_memstub(dir, "gen", in, "-c", prof, "-o", "t.h", NULL);
  ck_assert_msg(r.status == 0, "gen: exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  char *h = path_in(dir, "t.h"), *text = tu_read_file(h);
  ck_assert_msg(strstr(text, "memWorkModel[7] = {0, "), "%s", text);
  free(text);
  free(h);
  free(prof);
  free(in);
  free(msd);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* A damaged model is refused before anything is replayed, naming the entry. */
START_TEST(test_model_checked) {
  char *dir = tu_mkdtemp();
  char *in = write_trace(dir, "0.3"), *msd = path_in(dir, "t.msd");
  gen_ok(dir, in, "--data", msd, NULL);
  memstub_stub_data *d = open_data(msd);
  memstub_error err = {0};
  struct memstub_stub s = d->stub;
  double bad[MEMSTUB_STUB_MODEL_N] = {1.5, 0, 0, 0, 0, 0, 0};
  s.work_model = bad;
  ck_assert_int_eq(memstub_replay_check(&s, NULL, NULL, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "work model: memory share 1.5 out of range"), "%s", err.msg);
  bad[0] = 0.3, bad[MEMSTUB_STUB_MODEL_TOUCH + 1] = NAN;
  ck_assert_int_eq(memstub_replay_check(&s, NULL, NULL, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "work model: touch cost 1 MiB nan out of range"), "%s", err.msg);
  memstub_stub_data_free(d);
  free(in);
  free(msd);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("work_model");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_header_carries_share);
  tcase_add_test(tc, test_data_file_carries_share);
  tcase_add_test(tc, test_profile_rates_carried);
  tcase_add_test(tc, test_model_checked);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
