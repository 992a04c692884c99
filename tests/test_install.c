// An installed memstub on its own: `cmake --install` into a fresh prefix,
// the prefix moved to a place neither the build tree nor the configure step
// knows, then the whole pipeline (record, gen, build, replay, compare, plot)
// from the moved tree; a probe program compiled with pkg-config's link line,
// the man page, the bash completion and --version. Then the command's typo
// suggestions.
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char *path_in(const char *dir, const char *name) {
  char *p;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

/* Once set, sh() runs its scripts with the source and build trees hidden
 * (empty tmpfs mounted over them in a mount namespace of their own), as if
 * both were deleted. */
static int hide_trees;

// Hide the two trees from a script (see hide_trees).
static const char hide_script[] =
    "for d in \"$1\" \"$2\"; do if [ -d \"$d\" ]; then mount -t tmpfs none \"$d\" || exit 125; fi; done; "
    "[ ! -e \"$1/CMakeCache.txt\" ] || exit 125; exec sh -c \"$3\"";

// Run a shell script (printf-formatted) in cwd; the caller frees the run.
static tu_run sh(const char *cwd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tu_run sh(const char *cwd, const char *fmt, ...) {
  char *script;
  va_list ap;
  va_start(ap, fmt);
  ck_assert(vasprintf(&script, fmt, ap) > 0);
  va_end(ap);
  char *plain[] = {"sh", "-c", script, NULL};
  char *hidden[] = {"unshare", "-m", "sh", "-c", (char *)hide_script, "sh",
                    getenv("MEMSTUB_BINARY_DIR"), getenv("MEMSTUB_SOURCE_DIR"), script, NULL};
  tu_run r = tu_exec(cwd, hide_trees ? hidden : plain);
  free(script);
  return r;
}

/* Whether scripts can run with the trees hidden: unshare and mount work here
 * (root, or a user namespace) and dir is in neither tree. */
static int can_hide(const char *dir) {
  const char *b = getenv("MEMSTUB_BINARY_DIR"), *src = getenv("MEMSTUB_SOURCE_DIR");
  if (strncmp(dir, b, strlen(b)) == 0 || strncmp(dir, src, strlen(src)) == 0) return 0;
  hide_trees = 1;
  tu_run r = sh(dir, "[ ! -e '%s/CMakeLists.txt' ]", src);
  hide_trees = 0;
  int ok = r.status == 0;
  tu_run_free(&r);
  return ok;
}

static int have(const char *program) {
  tu_run r = sh(NULL, "command -v %s >/dev/null 2>&1", program);
  int ok = r.status == 0;
  tu_run_free(&r);
  return ok;
}

#define RUN_OK(r) ck_assert_msg((r).status == 0, "status %d\nstdout: %s\nstderr: %s", (r).status, (r).out, (r).err)

// A program to record: heap blocks of a few sizes held over a few ms.
static const char heapy_c[] =
    "#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n"
    "static void pause_ms(long ms) {\n"
    "  struct timespec t = {0, ms * 1000000L};\n  nanosleep(&t, NULL);\n}\n"
    "int main(void) {\n"
    "  char *b[8];\n"
    "  for (int i = 0; i < 8; i++) {\n"
    "    b[i] = malloc((size_t)(i + 1) * 40000);\n"
    "    memset(b[i], i, (size_t)(i + 1) * 40000);\n"
    "    pause_ms(3);\n"
    "  }\n"
    "  for (int i = 7; i >= 0; i--) {\n    free(b[i]);\n    pause_ms(2);\n  }\n"
    "  return 0;\n}\n";

// A program under study marking a region with the probe API.
static const char probe_c[] =
    "#include <stdio.h>\n#include <stdlib.h>\n#include \"memstub/probe.h\"\n"
    "int main(void) {\n"
    "  memstub_probe_measure(NULL);  /* standalone: measure, written below */\n"
    "  memstub_probe_begin(\"work\");\n"
    "  char *p = malloc(100000);\n  p[0] = 1;\n"
    "  memstub_probe_point();\n"
    "  free(p);\n"
    "  memstub_probe_end();\n"
    "  memstub_error err = {0};\n"
    "  if (memstub_probe_write(\"probe.csv\", &err) != 0) {\n"
    "    fprintf(stderr, \"%s\\n\", err.msg);\n    return 1;\n  }\n"
    "  return 0;\n}\n";

// A program linking the runtime through pkg-config: replays a generated stub.
static const char runtime_c[] =
    "#include <stdio.h>\n#include \"memstub/runtime.h\"\n#include \"s.h\"\n"
    "int main(void) {\n"
    "  memstub_error err = {0};\n"
    "  int rc = memstub_stub_call(&s_memStub, &err);\n"
    "  printf(\"rc=%d %s\\n\", rc, err.msg);\n"
    "  return rc != 0;\n}\n";

START_TEST(test_installed_tree_moved) {
  char *dir = tu_mkdtemp();
  const char *cc = getenv("MEMSTUB_CC") ? getenv("MEMSTUB_CC") : "cc";
  // Install into a prefix nobody configured, then move it.
  tu_run r = sh(dir, "cmake --install '%s' --prefix '%s/prefix' >/dev/null && mv prefix moved",
                getenv("MEMSTUB_BINARY_DIR"), dir);
  RUN_OK(r);
  tu_run_free(&r);
  char *prefix = path_in(dir, "moved"), *ms = path_in(prefix, "bin/memstub");
  ck_assert(tu_exists(ms));
  char *gone = path_in(dir, "prefix");
  ck_assert(!tu_exists(gone));
  free(gone);

  /* The pipeline from the moved tree alone (no MEMSTUB_* directory
   * overrides), with the source and build trees hidden where this machine
   * allows a mount namespace (else they are only not asked for). */
  if (can_hide(dir)) hide_trees = 1;
  else fprintf(stderr, "test_install: cannot hide the build tree here (unshare -m); "
                       "running the installed tree beside it\n");
  const char *clean = "env -u MEMSTUB_DATADIR -u MEMSTUB_LIBDIR -u MEMSTUB_INCLUDEDIR -u MEMSTUB_PREFIX";
  char *heapy = path_in(dir, "heapy.c");
  tu_write_file(heapy, heapy_c);
  r = sh(dir, "%s -O0 -fno-builtin -o heapy heapy.c", cc);
  RUN_OK(r);
  tu_run_free(&r);
  r = sh(dir, "%s '%s' record -q -r 0 -o t.csv -- ./heapy", clean, ms);
  RUN_OK(r);
  tu_run_free(&r);
  r = sh(dir, "%s '%s' gen t.csv --name s -o s.h && %s '%s' build s.h -o stub", clean, ms, clean, ms);
  RUN_OK(r);
  tu_run_free(&r);
  r = sh(dir, "./stub --measure stub.csv && %s '%s' replay t.csv --measure replayed.csv", clean, ms);
  RUN_OK(r);
  tu_run_free(&r);
  r = sh(dir, "%s '%s' compare t.csv replayed.csv --json && %s '%s' compare t.csv stub.csv", clean,
         ms, clean, ms);
  RUN_OK(r);
  ck_assert_msg(strstr(r.out, "heap") != NULL, "%s", r.out);
  tu_run_free(&r);
  if (have("gnuplot")) {
    r = sh(dir, "%s '%s' plot t.csv replayed.csv -o f.png", clean, ms);
    RUN_OK(r);
    tu_run_free(&r);
    char *png = path_in(dir, "f.png");
    ck_assert(tu_exists(png));
    free(png);
  }
  // MEMSTUB_PREFIX: a copy of the command outside any prefix uses that one.
  r = sh(dir, "mkdir -p elsewhere && cp '%s' elsewhere/ && %s MEMSTUB_PREFIX='%s' "
              "elsewhere/memstub build s.h -o stub2 && ./stub2 --check",
         ms, clean, prefix);
  RUN_OK(r);
  tu_run_free(&r);

  // pkg-config: a probe program and a program replaying the stub, each
  // compiled and linked with nothing but the .pc file's flags.
  if (have("pkg-config")) {
    char *pc = path_in(dir, "probe.c"), *rc = path_in(dir, "rt.c");
    tu_write_file(pc, probe_c);
    tu_write_file(rc, runtime_c);
    r = sh(dir, "export PKG_CONFIG_PATH='%s/lib/pkgconfig'; "
                "%s -o probe probe.c $(pkg-config --cflags --libs memstub-probe) && ./probe && "
                "%s -o rt rt.c $(pkg-config --cflags --libs memstub-runtime) && ./rt",
           prefix, cc, cc);
    RUN_OK(r);
    ck_assert_str_eq(r.out, "rc=0 \n");
    tu_run_free(&r);
    char *trace = path_in(dir, "probe.csv");
    ck_assert(tu_exists(trace));
    r = sh(dir, "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --modversion memstub-probe", prefix);
    RUN_OK(r);
    ck_assert_str_eq(r.out, "0.1.0\n");
    tu_run_free(&r);
    free(trace);
    free(pc);
    free(rc);
  }

  // man memstub from the prefix, with a section per subcommand.
  if (have("man")) {
    r = sh(dir, "MANPATH='%s/share/man' MANWIDTH=80 man -P cat memstub 2>&1", prefix);
    RUN_OK(r);
    ck_assert_msg(strstr(r.out, "memstub record") && strstr(r.out, "memstub compare") &&
                      strstr(r.out, "MEMSTUB_PREFIX"),
                  "%s", r.out);
    tu_run_free(&r);
  }
  hide_trees = 0;
  // The completion script loads and completes subcommands and options.
  r = sh(dir, "bash -c '. %s/share/bash-completion/completions/memstub && complete -p memstub && "
              "COMP_WORDS=(%s re) COMP_CWORD=1 && _memstub && echo \"${COMPREPLY[*]}\" && "
              "COMP_WORDS=(%s gen --ou) COMP_CWORD=2 && _memstub && echo \"${COMPREPLY[*]}\" && "
              "COMP_WORDS=(%s compare t.cs) COMP_CWORD=2 && _memstub && echo \"${COMPREPLY[*]}\" && "
              "COMP_WORDS=(%s replay -t \"\") COMP_CWORD=3 && _memstub && echo \"${COMPREPLY[*]}\" && "
              "COMPREPLY=() && COMP_WORDS=(%s gen --time-scale \"\") COMP_CWORD=3 && _memstub && echo \"[${COMPREPLY[*]}]\"'",
         prefix, ms, ms, ms, ms, ms);
  RUN_OK(r);
  ck_assert_str_eq(r.out, "complete -F _memstub memstub\nrecord replay report\n--output\nt.csv\n"
                          "online deadline usleep\n[]\n");
  tu_run_free(&r);
  // --version: the version and the build's configuration.
  r = sh(dir, "'%s' --version && '%s' version", ms, ms);
  RUN_OK(r);
  ck_assert_msg(strncmp(r.out, "memstub 0.1.0\ncompiler:   ", 26) == 0, "%s", r.out);
  ck_assert_ptr_nonnull(strstr(r.out, "build type: "));
  ck_assert_ptr_nonnull(strstr(r.out, "sanitizers: "));
  tu_run_free(&r);
  // Where it takes its files from: the moved prefix, found from the
  // executable; MEMSTUB_PREFIX and then one variable per directory win.
  r = sh(dir, "env -u MEMSTUB_DATADIR -u MEMSTUB_LIBDIR -u MEMSTUB_INCLUDEDIR -u MEMSTUB_PREFIX "
              "'%s' version | tail -3 && MEMSTUB_PREFIX=/p MEMSTUB_LIBDIR=/l '%s' version | tail -3",
         ms, ms);
  RUN_OK(r);
  char *want;
  ck_assert(asprintf(&want,
                     "data:       %s/share/memstub\nlibraries:  %s/lib/memstub\nheaders:    %s/include\n"
                     "data:       /p/share/memstub\nlibraries:  /l\nheaders:    /p/include\n",
                     prefix, prefix, prefix) > 0);
  ck_assert_str_eq(r.out, want);
  free(want);
  tu_run_free(&r);

  tu_rmtree(dir);
  free(dir);
  free(prefix);
  free(ms);
  free(heapy);
}
END_TEST

// An unknown subcommand or option names the closest one, and only a close one.
START_TEST(test_did_you_mean) {
  struct {
    const char *args[4];
    const char *want;
  } cases[] = {
      {{"recrod"}, "unknown command 'recrod' (did you mean 'record'?)"},
      {{"replya"}, "(did you mean 'replay'?)"},
      {{"calibarte"}, "(did you mean 'calibrate'?)"},
      {{"--verison"}, "(did you mean '--version'?)"},
      {{"help", "plto"}, "unknown command 'plto' (did you mean 'plot'?)"},
      {{"xyzzy"}, "unknown command 'xyzzy' (see 'memstub help')"},
      {{"gen", "--outptu", "x"}, "unknown option '--outptu' (did you mean '--output'?)"},
      {{"gen", "--time-scael=2"}, "unknown option '--time-scael=2' (did you mean '--time-scale'?)"},
      {{"build", "--hlep"}, "(did you mean '--help'?)"},
      {{"gen", "--frobnicate"}, "unknown option '--frobnicate'\n"},
      {{"gen", "--tim", "1"}, "ambiguous option '--tim': '--time-scale', '--timing'\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *const *a = cases[i].args;
    tu_run r = tu_memstub(NULL, a[0], a[1], a[2], a[3], NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, cases[i].want) != NULL, "%s: %s", a[0], r.err);
    tu_run_free(&r);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("install");
  TCase *tc = tcase_create("installed");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_installed_tree_moved);
  suite_add_tcase(s, tc);
  TCase *us = tcase_create("usage");
  tcase_add_test(us, test_did_you_mean);
  suite_add_tcase(s, us);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
