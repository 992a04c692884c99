// memstub gen end to end: the golden Listing 1 header, compiling generated
// headers, and refusing malformed input without leaving files behind.
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memstub/gen.h"
#include "testutil.h"

START_TEST(test_listing1_golden) {
  tu_run r = tu_memstub(tu_src("traces/samples"), "gen", "listing1.csv", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  char *golden = tu_read_file(tu_src("tests/golden/listing1.h"));
  ck_assert_ptr_nonnull(golden);
  ck_assert_str_eq(r.out, golden);
  // The paper's four points, times in ns.
  ck_assert_ptr_nonnull(strstr(r.out, "#define NUMDATA 4\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "[0].time = 129000, [0].stackAlloc = 300, [0].heapAlloc = 0,"));
  ck_assert_ptr_nonnull(strstr(r.out, "[1].time = 223000, [1].stackAlloc = 100, [1].heapAlloc = 200,"));
  ck_assert_ptr_nonnull(strstr(r.out, "[2].time = 384000, [2].stackAlloc = -100, [2].heapAlloc = -40,"));
  ck_assert_ptr_nonnull(strstr(r.out, "[3].time = 112000, [3].stackAlloc = -300, [3].heapAlloc = -160,"));
  free(golden);
  tu_run_free(&r);
}
END_TEST

static void gen_to(const char *dir, const char *trace, const char *name, const char *out) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, out);
  tu_run r = tu_memstub(NULL, "gen", trace, "-o", path, "--name", name, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
}

/* Compile the synthetic sample's header together with the non-LIFO one
 * (two stubs in one program), print every value, and compare with what the
 * generator computes in memory; also check the header's struct layout
 * against memstub/memalloc.h. */
START_TEST(test_compile_generated_headers) {
  char *dir = tu_mkdtemp();
  char syn[4096], nl[4096];
  snprintf(syn, sizeof syn, "%s", tu_src("traces/samples/synthetic-4.8s.csv"));
  snprintf(nl, sizeof nl, "%s", tu_src("traces/samples/nonlifo.csv"));
  gen_to(dir, syn, "syn", "syn.h");
  gen_to(dir, nl, "nl", "nl.h");
  char prog[4096], exe[4096];
  snprintf(prog, sizeof prog, "%s/main.c", dir);
  snprintf(exe, sizeof exe, "%s/main", dir);
  tu_write_file(prog,
                "#include <stdio.h>\n#include <stddef.h>\n#include \"syn.h\"\n#include \"nl.h\"\n"
                "static void dump(const struct memstub_stub *s) {\n"
                "  printf(\"%lld %lld %lld %lld\\n\", (long long)s->numdata, (long long)s->norig,\n"
                "         (long long)s->peak_stack, (long long)s->duration_ns);\n"
                "  for (long long i = 0; i < s->numdata; i++)\n"
                "    printf(\"%lld %lld %lld %lld\\n\", (long long)s->use[i].time,\n"
                "           (long long)s->use[i].stackAlloc, (long long)s->use[i].heapAlloc,\n"
                "           (long long)s->point[i]);\n}\n"
                "int main(void) {\n"
                "  printf(\"%zu %zu %zu %zu %zu\\n\", sizeof(struct memstub_stub),\n"
                "    offsetof(struct memstub_stub, use), offsetof(struct memstub_stub, point),\n"
                "    offsetof(struct memstub_stub, inserted), offsetof(struct memstub_stub, calibration));\n"
                "  printf(\"%d %d\\n\", syn_NUMDATA, nl_NUMDATA);\n"
                "  dump(&syn_memStub); dump(&nl_memStub);\n"
                "  printf(\"%s|%s\\n\", syn_memStub.source, nl_memStub.name);\n  return 0;\n}\n");
  const char *cc = getenv("MEMSTUB_CC");
  char *ccargv[] = {(char *)(cc ? cc : "cc"), "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", exe,
                    prog, NULL};
  tu_run c = tu_exec(dir, ccargv);
  ck_assert_msg(c.status == 0, "compile failed: %s", c.err);
  char *runargv[] = {exe, NULL};
  tu_run r = tu_exec(dir, runargv);
  ck_assert_int_eq(r.status, 0);

  // What the output must be, from the library and memstub/memalloc.h.
  size_t cap = 1 << 22, off = 0;
  char *want = malloc(cap);
  // A header without resident data has layout 1: memstub/stub.h's struct up to its resident fields.
  off += (size_t)snprintf(want + off, cap - off, "%zu %zu %zu %zu %zu\n",
                          offsetof(struct memstub_stub, mapped),
                          offsetof(struct memstub_stub, use), offsetof(struct memstub_stub, point),
                          offsetof(struct memstub_stub, inserted),
                          offsetof(struct memstub_stub, calibration));
  memstub_gen *g[2];
  const char *paths[2] = {syn, nl};
  for (int k = 0; k < 2; k++) {
    memstub_trace *t;
    memstub_error err = {0};
    ck_assert_int_eq(memstub_trace_read(paths[k], &t, &err), 0);
    memstub_gen_options o;
    memstub_gen_options_init(&o);
    ck_assert_int_eq(memstub_gen_build(t, &o, &g[k], &err), 0);
    memstub_trace_free(t);
  }
  off += (size_t)snprintf(want + off, cap - off, "%lld %lld\n", (long long)g[0]->stub.numdata,
                          (long long)g[1]->stub.numdata);
  for (int k = 0; k < 2; k++) {
    const struct memstub_stub *s = &g[k]->stub;
    off += (size_t)snprintf(want + off, cap - off, "%lld %lld %lld %lld\n", (long long)s->numdata,
                            (long long)s->norig, (long long)s->peak_stack,
                            (long long)s->duration_ns);
    for (int64_t i = 0; i < s->numdata; i++)
      off += (size_t)snprintf(want + off, cap - off, "%lld %lld %lld %lld\n",
                              (long long)s->use[i].time, (long long)s->use[i].stackAlloc,
                              (long long)s->use[i].heapAlloc, (long long)s->point[i]);
    memstub_gen_free(g[k]);
  }
  snprintf(want + off, cap - off, "%s|nl\n", syn);
  ck_assert_str_eq(r.out, want);
  free(want);
  tu_run_free(&c);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_hostile_source_name) {
  // A file name with m4 quotes, macro names, '$1', C escapes and a comment end.
  char *dir = tu_mkdtemp();
  const char *name = "we'ird `m4_define' $1 MS_PREFIX [[x]] \"q\" *\\ #.csv";
  char path[4096], out[4096], prog[4096], exe[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(out, sizeof out, "%s/h.h", dir);
  snprintf(prog, sizeof prog, "%s/main.c", dir);
  snprintf(exe, sizeof exe, "%s/main", dir);
  tu_write_file(path, "time_ns,stack_bytes,heap_bytes\n0,0,0\n5,16,16\n9,0,0\n");
  tu_run r = tu_memstub(NULL, "gen", path, "-o", out, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_write_file(prog, "#include <stdio.h>\n#include \"h.h\"\n"
                      "int main(void) { fputs(memStub.source, stdout); return NUMDATA != 2; }\n");
  char *ccargv[] = {"cc", "-std=c11", "-Wall", "-Werror", "-o", exe, prog, NULL};
  const char *cc = getenv("MEMSTUB_CC");
  if (cc) ccargv[0] = (char *)cc;
  tu_run c = tu_exec(dir, ccargv);
  ck_assert_msg(c.status == 0, "compile failed: %s", c.err);
  char *runargv[] = {exe, NULL};
  tu_run x = tu_exec(dir, runargv);
  ck_assert_int_eq(x.status, 0);
  ck_assert_str_eq(x.out, path);
  tu_run_free(&r);
  tu_run_free(&c);
  tu_run_free(&x);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Malformed traces: exit 2, "memstub: error: file:line:column: ...", no output file.
static const struct {
  const char *text, *msg;
} bad[] = {
    {"0,0,0\n", "bad.csv:1:1: missing header row"},
    {"time_ns,stack_bytes,heap_bytes\n0,x,0\n", "bad.csv:2:3: stack_bytes: not an integer: 'x'"},
    {"time_ns,stack_bytes,heap_bytes\n5,0,0\n4,0,0\n", "bad.csv:3:1: time_ns: decreases from 5 to 4"},
    {"time_ns,stack_bytes,heap_bytes\n0,0,-3\n", "bad.csv:2:5: heap_bytes: negative total -3"},
    {"time_ns,stack_bytes,heap_bytes\n0,0,0,1\n", "bad.csv:2:7: stray field 4"},
    {"time_ns,stack_bytes,heap_bytes\n0,0,0\n1,1,1", "bad.csv:3:6: truncated last line"},
    {"time_ns,stack_bytes,heap_bytes\n", "bad.csv:2:1: empty trace"},
    {"time_ns,stack_bytes,heap_bytes\n0,0,18446744073709551616\n",
     "bad.csv:2:5: heap_bytes: 18446744073709551616 does not fit in 64 bits"},
    {"time_ns,stack_bytes,heap_bytes\n0,0,0\n", "bad.csv: a stub needs at least two rows"},
};

START_TEST(test_malformed_exit_2_no_output) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/bad.csv", dir);
  tu_write_file(path, bad[_i].text);
  tu_run r = tu_memstub(dir, "gen", "bad.csv", "-o", "out.h", NULL);
  ck_assert_int_eq(r.status, 2);
  char want[512];
  snprintf(want, sizeof want, "memstub: error: %s", bad[_i].msg);
  ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0, "got: %s\nwant: %s", r.err, want);
  ck_assert_int_eq(tu_count_entries(dir), 1);  // bad.csv only: no out.h, no temporary
  ck_assert_str_eq(r.out, "");
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_usage_and_environment_errors) {
  char *dir = tu_mkdtemp();
  char l1[4096];
  snprintf(l1, sizeof l1, "%s", tu_src("traces/samples/listing1.csv"));
  tu_run r = tu_memstub(dir, "gen", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "missing TRACE"));
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", l1, "--heap-scale", "half", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "--heap-scale: expected a number, found 'half'"));
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", l1, "--bogus", NULL);
  ck_assert_int_eq(r.status, 2);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", "missing.csv", "-o", "x.h", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_str_eq(r.err, "memstub: error: missing.csv: cannot open: No such file or directory\n");
  tu_run_free(&r);
  // Without GNU m4 the header is refused cleanly.
  setenv("MEMSTUB_M4", "/nonexistent/m4", 1);
  r = tu_memstub(dir, "gen", l1, "-o", "x.h", NULL);
  unsetenv("MEMSTUB_M4");
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "cannot run GNU m4"));
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_run_free(&r);
  r = tu_memstub(dir, "frobnicate", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_str_eq(r.err, "memstub: error: unknown command 'frobnicate' (see 'memstub help')\n");
  tu_run_free(&r);
  r = tu_memstub(dir, "help", "gen", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "usage: memstub gen TRACE"));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_transforms_recorded) {
  char *dir = tu_mkdtemp();
  tu_run r = tu_memstub(dir, "gen", tu_src("traces/samples/listing1.csv"), "--time-scale", "0.5",
                        "--heap-scale", "0.5", NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, " * transforms:    time x0.5, heap x0.5, stack x1, rss x0.5, mapped x0.5, "
                                "cpu x1, churn x1\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "[1].time = 111500, [1].stackAlloc = 100, [1].heapAlloc = 100,"));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// A name's characters: MEMSTUB_GEN_NAME_MAX of them of a kind.
static void long_name(char *name, size_t n) {
  memset(name, 'n', n);
  name[n] = '\0';
}

/* --name at the length limit: every name is NAME_..., never cut short, and
 * memstub build --name finds the stub by it; one character more is refused
 * by gen, build and --check-name alike (issue 28 item 12: 248 characters
 * generated, and build then said "no stub named"). */
START_TEST(test_long_name) {
  char *dir = tu_mkdtemp();
  char name[MEMSTUB_GEN_NAME_MAX + 2], want[400], h[4096], prog[4096];
  long_name(name, MEMSTUB_GEN_NAME_MAX);
  snprintf(h, sizeof h, "%s/long.h", dir);
  snprintf(prog, sizeof prog, "%s/long", dir);
  tu_run r = tu_memstub(dir, "gen", tu_src("traces/samples/listing1.csv"), "--name", name, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  const char *names[] = {"#define %s_NUMDATA 4\n", "memUse[%s_NUMDATA]", "%s_memPoint[",
                         "static const struct memstub_stub %s_memStub = {",
                         "#define MEMSTUB_GEN_%s_MEMUSE_H\n"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(want, sizeof want, names[i], name);
    ck_assert_msg(strstr(r.out, want) != NULL, "no '%s' in the header", want);
  }
  tu_write_file(h, r.out);
  tu_run_free(&r);
  r = tu_memstub(dir, "build", h, "--name", name, "-o", prog, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  ck_assert(tu_exists(prog));

  long_name(name, MEMSTUB_GEN_NAME_MAX + 1);
  snprintf(want, sizeof want, "has %d characters: a stub name has at most %d",
           MEMSTUB_GEN_NAME_MAX + 1, MEMSTUB_GEN_NAME_MAX);
  r = tu_memstub(dir, "gen", tu_src("traces/samples/listing1.csv"), "--name", name, "-o", h, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, want), "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "build", h, "--name", name, "-o", prog, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, want), "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", "--check-name", name, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, want), "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Run `memstub ARGS...` under timeout(1) (the whole process group killed
 * after 30 s: a hang fails the test, leaving nothing running). */
static tu_run memstub_timed(const char *cwd, const char *const *args) {
  char *argv[32] = {"timeout", "-s", "KILL", "30", getenv("MEMSTUB_EXE")};
  size_t n = 5;
  for (size_t i = 0; args[i] && n < 31; i++) argv[n++] = (char *)args[i];
  argv[n] = NULL;
  ck_assert_ptr_nonnull(argv[4]);
  return tu_exec(cwd, argv);
}

/* Names memstub cannot take, refused at once by gen (nothing written, no
 * temporary file left), build and --check-name with the reason (issue 28
 * item 12: -n MS_NAME never returned, m4 expanding it forever; -n m4_dnl and
 * -n MS_BEGIN gave exit 0 and a header that does not compile; item 17:
 * replay and stub_call failed deep in the compiler). */
static const struct {
  const char *name, *why;
} bad_names[] = {
    {"MS_NAME", "'MS_NAME' starts with MS_, the prefix of generator/memuse.h.m4's macros"},
    {"MS_END", "starts with MS_"},
    {"MS_BEGIN", "starts with MS_"},
    {"m4_dnl", "'m4_dnl' starts with m4_, the prefix of GNU m4's builtins"},
    {"m4_define", "starts with m4_"},
    {"int", "'int' is a C keyword"},
    {"bool", "'bool' is a C keyword"},
    {"_x", "'_x' starts with '_': such names are reserved for the C implementation"},
    {"__x", "starts with '_'"},
    {"9lives", "'9lives' is not a C identifier"},
    {"a-b", "'a-b' is not a C identifier"},
    {"replay", "'replay' meets memstub's own memstub_replay (include/memstub/)"},
    {"stub_call", "'stub_call' meets memstub's own memstub_stub_call (include/memstub/)"},
    {"replay_run", "meets memstub's own memstub_replay_run"},
    {"error", "meets memstub's own memstub_error"},
};

START_TEST(test_bad_names_refused) {
  char *dir = tu_mkdtemp(), h[4096];
  snprintf(h, sizeof h, "%s/x.h", dir);
  const char *name = bad_names[_i].name, *why = bad_names[_i].why;
  const char *gen[] = {"gen", tu_src("traces/samples/listing1.csv"), "-n", name, "-o", h, NULL};
  tu_run r = memstub_timed(dir, gen);
  ck_assert_msg(r.status == 2, "-n %s: exit %d: %s", name, r.status, r.err);
  ck_assert_msg(strstr(r.err, "memstub: error: --name: ") && strstr(r.err, why),
                "-n %s: '%s' not in: %s", name, why, r.err);
  ck_assert_int_eq(tu_count_entries(dir), 0);  // no header, no .x.h.tmp.*
  tu_run_free(&r);
  // The same words from build --name and --check-name (memstub_add_stub's).
  tu_write_file(h, "");
  const char *build[] = {"build", h, "--name", name, NULL};
  r = memstub_timed(dir, build);
  ck_assert_msg(r.status == 2 && strstr(r.err, why), "build --name %s: exit %d: %s", name,
                r.status, r.err);
  tu_run_free(&r);
  const char *check[] = {"gen", "--check-name", name, NULL};
  r = memstub_timed(dir, check);
  ck_assert_msg(r.status == 2 && strstr(r.err, why), "--check-name %s: exit %d: %s", name,
                r.status, r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* --check-name NAME OTHER...: two stubs of one program may not claim a name
 * in common (issue 28 item 17: alpha and alpha_err both built, and
 * memstub_alpha_err() ran stub alpha). */
START_TEST(test_check_name_others) {
  const char *ok[][4] = {{"alpha", NULL}, {"alpha", "alphabet", "beta", NULL},
                         {"alpha_x", "alpha_y", NULL}, {"parse_json", "parse", NULL}};
  const char *want[] = {NULL, NULL, NULL,
                        "'parse_json' overlaps the stub 'parse': memstub_parse_json would be "
                        "both stubs'"};
  for (size_t i = 0; i < 4; i++) {
    const char *args[8] = {"gen", "--check-name"};
    size_t n = 2;
    for (size_t k = 0; ok[i][k]; k++) args[n++] = ok[i][k];
    args[n] = NULL;
    tu_run r = memstub_timed(NULL, args);
    if (want[i])
      ck_assert_msg(r.status == 2 && strstr(r.err, want[i]), "exit %d: %s", r.status, r.err);
    else
      ck_assert_msg(r.status == 0 && !*r.err, "%s: exit %d: %s", ok[i][0], r.status, r.err);
    tu_run_free(&r);
  }
  const char *a[] = {"gen", "--check-name", "alpha_err", "beta", "alpha", NULL};
  tu_run r = memstub_timed(NULL, a);
  ck_assert_msg(r.status == 2 && strstr(r.err, "'alpha_err' overlaps the stub 'alpha': "
                                               "memstub_alpha_err would be both stubs'"),
                "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  const char *same[] = {"gen", "--check-name", "alpha", "alpha", NULL};
  r = memstub_timed(NULL, same);
  ck_assert_msg(r.status == 2 && strstr(r.err, "'alpha' names another stub already"), "%s",
                r.err);
  tu_run_free(&r);
  const char *mixed[] = {"gen", "--check-name", "alpha", "-o", "x.h", NULL};
  r = memstub_timed(NULL, mixed);
  ck_assert_msg(r.status == 2 && strstr(r.err, "takes no other options"), "%s", r.err);
  tu_run_free(&r);
}
END_TEST

/* m4 gets every name quoted: a name that is a macro of the template or an
 * m4 builtin is text, never expanded (the checks refuse such names; a
 * thread's NAME_tT is made past them). Before, MS_NAME expanded forever and
 * m4_dnl swallowed the rest of its line. */
START_TEST(test_names_quoted) {
  static const char *const names[] = {"MS_NAME", "MS_BEGIN", "MS_PREFIX", "m4_dnl", "m4_divert"};
  setenv("MEMSTUB_CHILD_TIMEOUT", "20", 1);  // m4 looping: a failure, not a hang
  memstub_trace *t = memstub_trace_create();
  ck_assert_int_eq(memstub_trace_append(t, 0, 0, 0), 0);
  ck_assert_int_eq(memstub_trace_append(t, 10, 16, 8), 0);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.name = "q";
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), 0);
  char *dir = tu_mkdtemp(), path[4096], want[256];
  snprintf(path, sizeof path, "%s/h.h", dir);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    free(g->name);
    g->name = strdup(names[i]);
    ck_assert_msg(memstub_gen_emit(g, path, &err) == 0, "%s: %s", names[i], err.msg);
    char *h = tu_read_file(path);
    const char *lines[] = {"  .name = \"%s\",\n", "static const struct memstub_stub %s_memStub = {\n",
                           "#ifndef MEMSTUB_GEN_%s_MEMUSE_H\n", "#define %s_NUMDATA 1\n",
                           "#endif /* MEMSTUB_GEN_%s_MEMUSE_H */\n"};
    for (size_t k = 0; k < sizeof lines / sizeof lines[0]; k++) {
      snprintf(want, sizeof want, lines[k], names[i]);
      ck_assert_msg(strstr(h, want) != NULL, "%s: no '%s' in the header", names[i], want);
    }
    free(h);
  }
  tu_rmtree(dir);
  free(dir);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

// An executable script at dir/name with the body given; returns its path.
static char *script(const char *dir, const char *name, const char *body) {
  char *path = malloc(4096);
  snprintf(path, 4096, "%s/%s", dir, name);
  char *text = malloc(strlen(body) + 16);
  sprintf(text, "#!/bin/sh\n%s\n", body);
  tu_write_file(path, text);
  free(text);
  ck_assert_int_eq(chmod(path, 0755), 0);
  return path;
}

/* Every macro that m4 sees defined (the template's, and the stub's
 * definitions after it) starts with MS_: the name check's MS_ rule keeps a
 * name off all of them. m4 is replaced by cat, so gen writes m4's input. */
START_TEST(test_m4_macros_start_with_ms) {
  char *bin = tu_mkdtemp();
  char *cat = script(bin, "m4", "exec cat");
  setenv("MEMSTUB_M4", cat, 1);
  tu_run r = tu_memstub(NULL, "gen", tu_src("traces/samples/nonlifo.csv"), "-n", "x", NULL);
  unsetenv("MEMSTUB_M4");
  ck_assert_msg(r.status == 0, "%s", r.err);
  int n = 0;
  for (const char *p = strstr(r.out, "m4_define([["); p; p = strstr(p + 1, "m4_define([[")) {
    n++;
    ck_assert_msg(strncmp(p + 12, "MS_", 3) == 0, "a macro not MS_: %.40s", p);
  }
  ck_assert_int_gt(n, 30);  // the template's and the stub's definitions
  tu_run_free(&r);
  free(cat);
  tu_rmtree(bin);
  free(bin);
}
END_TEST

/* Every child memstub runs has a time limit; one that hangs is killed after
 * it with a clear message, and nothing is left behind: no header, no
 * program, no temporary file (issue 28 item 12). MEMSTUB_CHILD_TIMEOUT
 * makes the limits 1 s. */
START_TEST(test_child_time_limits) {
  char *bin = tu_mkdtemp(), *dir = tu_mkdtemp(), h[4096], out[4096];
  char *slow = script(bin, "slow", "exec sleep 30");
  // A compiler whose program hangs in its --check.
  char *cc = script(bin, "cc-hang-check",
                    "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
                    "printf '#!/bin/sh\\nexec sleep 30\\n' > \"$out\" && chmod +x \"$out\"");
  char *zstd = script(bin, "zstd", "exec sleep 30");
  snprintf(h, sizeof h, "%s/l1.h", dir);
  tu_run r = tu_memstub(NULL, "gen", tu_src("traces/samples/listing1.csv"), "-o", h, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  setenv("MEMSTUB_CHILD_TIMEOUT", "1", 1);
  const char *tail = " did not finish within 1 s: killed (a longer limit: "
                     "MEMSTUB_CHILD_TIMEOUT=SECONDS)";
  char want[4400];

  setenv("MEMSTUB_M4", slow, 1);
  snprintf(out, sizeof out, "%s/x.h", dir);
  const char *gen[] = {"gen", tu_src("traces/samples/listing1.csv"), "-o", out, NULL};
  r = memstub_timed(NULL, gen);
  unsetenv("MEMSTUB_M4");
  snprintf(want, sizeof want, "memstub: error: %s: m4 ('%s')%s\n", out, slow, tail);
  ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
  ck_assert_str_eq(r.err, want);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 1);  // l1.h alone: no x.h, no .x.h.tmp.*

  snprintf(out, sizeof out, "%s/prog", dir);
  const char *build[] = {"build", h, "-o", out, "--cc", slow, NULL};
  r = memstub_timed(NULL, build);
  snprintf(want, sizeof want, "memstub: error: the compiler ('%s')%s\n", slow, tail);
  ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
  ck_assert_str_eq(r.err, want);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 1);

  const char *check[] = {"build", h, "-o", out, "--cc", cc, NULL};
  r = memstub_timed(NULL, check);
  ck_assert_msg(r.status == 2 && strstr(r.err, "l1.h: the stub's check (") && strstr(r.err, tail),
                "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 1);

  setenv("MEMSTUB_GNUPLOT", slow, 1);
  snprintf(out, sizeof out, "%s/p.png", dir);
  const char *plot[] = {"plot", tu_src("traces/samples/listing1.csv"), "-o", out, NULL};
  r = memstub_timed(NULL, plot);
  unsetenv("MEMSTUB_GNUPLOT");
  snprintf(want, sizeof want, "gnuplot ('%s')%s", slow, tail);
  ck_assert_msg(r.status == 2 && strstr(r.err, want), "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 1);

  // A heaptrack file compressed with zstd, and a zstd that hangs.
  char zst[4096], path[8192];
  snprintf(zst, sizeof zst, "%s/h.zst", bin);
  tu_write_file(zst, "\x28\xb5\x2f\xfd rest");
  snprintf(path, sizeof path, "%s:%s", bin, getenv("PATH"));
  setenv("PATH", path, 1);
  snprintf(out, sizeof out, "%s/t.csv", dir);
  const char *imp[] = {"import", "heaptrack", zst, "-o", out, NULL};
  r = memstub_timed(NULL, imp);
  snprintf(want, sizeof want, "the zstd decompressor ('zstd')%s", tail);
  ck_assert_msg(r.status == 2 && strstr(r.err, want), "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 1);

  // The variable itself is checked.
  setenv("MEMSTUB_CHILD_TIMEOUT", "soon", 1);
  r = tu_memstub(NULL, "gen", tu_src("traces/samples/listing1.csv"), "-o", h, NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "MEMSTUB_CHILD_TIMEOUT: expected seconds above 0 "
                                                "and at most 1e6, found 'soon'"),
                "exit %d: %s", r.status, r.err);
  tu_run_free(&r);
  free(slow);
  free(cc);
  free(zstd);
  tu_rmtree(bin);
  tu_rmtree(dir);
  free(bin);
  free(dir);
}
END_TEST

/* A header that cannot be written says where and why (issue 28 item 15:
 * -o /dev/full said "m4 failed on generator/memuse.h.m4"); m4's own
 * message is in its failure. */
START_TEST(test_output_errors_named) {
  tu_run r = tu_memstub(NULL, "gen", tu_src("traces/samples/listing1.csv"), "-o", "/dev/full",
                        NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_str_eq(r.err, "memstub: error: /dev/full: write failed: No space left on device\n");
  tu_run_free(&r);
  char *bin = tu_mkdtemp(), *dir = tu_mkdtemp(), out[4096], want[8400];
  char *m4bad = script(bin, "m4", "echo 'm4:-:3: cannot do that' >&2; echo more >&2; exit 1");
  setenv("MEMSTUB_M4", m4bad, 1);
  snprintf(out, sizeof out, "%s/x.h", dir);
  r = tu_memstub(NULL, "gen", tu_src("traces/samples/listing1.csv"), "-o", out, NULL);
  snprintf(want, sizeof want,
           "memstub: error: %s: m4 ('%s') failed on generator/memuse.h.m4 (exit status 1): "
           "m4:-:3: cannot do that\n", out, m4bad);
  ck_assert_int_eq(r.status, 2);
  ck_assert_str_eq(r.err, want);
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_run_free(&r);
  free(m4bad);
  tu_rmtree(bin);
  tu_rmtree(dir);
  free(bin);
  free(dir);
}
END_TEST

/* A program that ignores SIGCHLD: m4 is reaped unseen, so its exit status is
 * lost; the header is refused with the reason, never judged on garbage. */
START_TEST(test_emit_with_sigchld_ignored) {
  memstub_trace *t = memstub_trace_create();
  ck_assert_int_eq(memstub_trace_append(t, 0, 0, 0), 0);
  ck_assert_int_eq(memstub_trace_append(t, 10, 16, 0), 0);
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_gen_build(t, &o, &g, &err), 0);
  char *dir = tu_mkdtemp(), path[4096];
  snprintf(path, sizeof path, "%s/h.h", dir);
  signal(SIGCHLD, SIG_IGN);  // this test's own process (Check forks one per test)
  ck_assert_int_eq(memstub_gen_emit(g, path, &err), -ECHILD);
  signal(SIGCHLD, SIG_DFL);
  ck_assert_msg(strstr(err.msg, "cannot wait for m4") != NULL, "%s", err.msg);
  ck_assert_int_eq(tu_count_entries(dir), 0);  // no header, no temporary
  ck_assert_int_eq(memstub_gen_emit(g, path, &err), 0);
  tu_rmtree(dir);
  free(dir);
  memstub_gen_free(g);
  memstub_trace_free(t);
}
END_TEST

/* A generated header and memstub's own headers define the same types under
 * the same guards: this memstub's Listing 1 header, and one from before the
 * timing modes were one enum (tests/golden/listing1-comp-enum.h, with
 * MEMSTUB_COMP_*), each compile before or after memstub/runtime.h, and
 * either name of a timing mode means the same. */
START_TEST(test_header_with_runtime_h) {
  char *dir = tu_mkdtemp(), prog[4096], inc[4096];
  snprintf(prog, sizeof prog, "%s/main.c", dir);
  snprintf(inc, sizeof inc, "-I%s", tu_src("include"));
  const char *headers[] = {"tests/golden/listing1.h", "tests/golden/listing1-comp-enum.h"};
  for (int k = 0; k < 4; k++) {
    char hdr[4096], *text = NULL;
    snprintf(hdr, sizeof hdr, "%s", tu_src(headers[k / 2]));
    const char *first = k % 2 ? "memstub/runtime.h" : hdr, *second = k % 2 ? hdr : "memstub/runtime.h";
    ck_assert(asprintf(&text,
                       "#include \"%s\"\n#include \"%s\"\n"
                       "_Static_assert(MEMSTUB_TIMING_NONE == 0 && MEMSTUB_TIMING_DEADLINE == 1 &&\n"
                       "               MEMSTUB_TIMING_USLEEP == 2, \"the header's values\");\n"
                       "_Static_assert(MEMSTUB_COMP_USLEEP == MEMSTUB_TIMING_USLEEP, \"one enum\");\n"
                       "int main(void) {\n"
                       "  memstub_replay_options o;\n"
                       "  memstub_replay_options_for(&o, &memStub);\n"
                       "  return memStub.timing == MEMSTUB_TIMING_NONE && memStub.numdata == 4 ? 0 : 1;\n"
                       "}\n",
                       first, second) > 0);
    tu_write_file(prog, text);
    free(text);
    const char *cc = getenv("MEMSTUB_CC");
    char *ccargv[] = {(char *)(cc ? cc : "cc"), "-std=c11", "-Wall", "-Wextra", "-Werror",
                      "-fsyntax-only", inc, prog, NULL};
    tu_run c = tu_exec(dir, ccargv);
    ck_assert_msg(c.status == 0, "%s then %s: %s", first, second, c.err);
    tu_run_free(&c);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* One meaning per short option across the tool (issue 12 item 8): in every
 * subcommand's --help, a "  -x, --long" line gives letter x the same long
 * name as everywhere else. */
START_TEST(test_short_options_one_meaning) {
  char *cmds[64];
  size_t n = tu_subcommands(cmds, 64);
  ck_assert_uint_ge(n, 9);
  const char *long_of[128] = {0}, *seen_in[128] = {0};
  char names[128][64];
  size_t letters = 0;
  for (size_t i = 0; i < n; i++) {
    tu_run r = tu_memstub(NULL, cmds[i], "--help", NULL);
    ck_assert_msg(r.status == 0, "memstub %s --help: %s", cmds[i], r.err);
    for (const char *line = r.out; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "") {
      char letter, name[64];
      int used = 0;
      if (sscanf(line, "  -%c, --%63[a-z0-9-]%n", &letter, name, &used) != 2 || used == 0) continue;
      unsigned char k = (unsigned char)letter;
      ck_assert_msg(k < 128, "memstub %s: option letter %d", cmds[i], k);
      if (!long_of[k]) {
        snprintf(names[k], sizeof names[k], "%s", name);
        long_of[k] = names[k];
        seen_in[k] = cmds[i];
        letters++;
      } else {
        ck_assert_msg(strcmp(long_of[k], name) == 0,
                      "-%c is --%s in 'memstub %s' but --%s in 'memstub %s'", letter,
                      long_of[k], seen_in[k], name, cmds[i]);
      }
    }
    tu_run_free(&r);
  }
  // -o and -h at least: the walk read the options lists.
  ck_assert_msg(letters >= 2 && long_of['o'] && long_of['h'], "%zu letters", letters);
  ck_assert_str_eq(long_of['h'], "help");
  for (size_t i = 0; i < n; i++) free(cmds[i]);
}
END_TEST

/* Help text is no format string: no help prints a literal "%%" (issue 12
 * item 7; copying an example from it must work). */
START_TEST(test_help_has_no_double_percent) {
  char *cmds[64];
  size_t n = tu_subcommands(cmds, 64);
  tu_run r = tu_memstub(NULL, "help", NULL);
  ck_assert_msg(strstr(r.out, "%%") == NULL, "memstub help prints '%%%%'");
  tu_run_free(&r);
  int percent = 0;
  for (size_t i = 0; i < n; i++) {
    r = tu_memstub(NULL, cmds[i], "--help", NULL);
    ck_assert_int_eq(r.status, 0);
    const char *at = strstr(r.out, "%%");
    ck_assert_msg(at == NULL, "memstub %s --help prints '%%%%': ...%.40s", cmds[i],
                  at && at - r.out > 30 ? at - 30 : r.out);
    percent |= strchr(r.out, '%') != NULL;
    tu_run_free(&r);
    free(cmds[i]);
  }
  ck_assert_msg(percent, "no help mentions '%%' at all (compare's does)");
}
END_TEST

static Suite *cli_gen_suite(void) {
  Suite *s = suite_create("cli_gen");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_listing1_golden);
  tcase_add_test(tc, test_compile_generated_headers);
  tcase_add_test(tc, test_header_with_runtime_h);
  tcase_add_test(tc, test_hostile_source_name);
  tcase_add_loop_test(tc, test_malformed_exit_2_no_output, 0, (int)(sizeof bad / sizeof bad[0]));
  tcase_add_test(tc, test_usage_and_environment_errors);
  tcase_add_test(tc, test_transforms_recorded);
  tcase_add_test(tc, test_long_name);
  tcase_add_loop_test(tc, test_bad_names_refused, 0,
                      (int)(sizeof bad_names / sizeof bad_names[0]));
  tcase_add_test(tc, test_check_name_others);
  tcase_add_test(tc, test_names_quoted);
  tcase_add_test(tc, test_m4_macros_start_with_ms);
  tcase_add_test(tc, test_child_time_limits);
  tcase_add_test(tc, test_output_errors_named);
  tcase_add_test(tc, test_emit_with_sigchld_ignored);
  tcase_add_test(tc, test_short_options_one_meaning);
  tcase_add_test(tc, test_help_has_no_double_percent);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(cli_gen_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
