// The bash completion (completion/memstub.bash), sourced in bash and asked
// as bash asks it (COMP_WORDS, COMP_CWORD; COMPREPLY read back) (issue 30):
// it works from any install, offers each option's choices, lists each
// option once, and its choices are what the commands accept. The cases that
// need bash-completion's helpers (_filedir) are skipped, saying so, where
// they are not installed; the rest needs bash alone.
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

// bash-completion's main script: $MEMSTUB_BASH_COMPLETION, else where Debian
// and most systems put it; NULL when there is none.
static const char *bash_completion(void) {
  const char *env = getenv("MEMSTUB_BASH_COMPLETION");
  if (env && *env) return env;
  static const char *const where[] = {"/usr/share/bash-completion/bash_completion",
                                      "/etc/bash_completion"};
  for (size_t i = 0; i < sizeof where / sizeof where[0]; i++)
    if (access(where[i], R_OK) == 0) return where[i];
  return NULL;
}

/* COMPREPLY for the words (the last one is being completed), sorted and
 * joined by blanks, malloc'd: bash sources bc (NULL: none) and script, then
 * calls _memstub. PATH is path (NULL: as it is), HOME home (NULL: as it is). */
static char *complete_in(const char *cwd, const char *bc, const char *script, const char *path,
                         const char *home, const char *first, ...) {
  char cmd[8192];
  int n = snprintf(cmd, sizeof cmd,
                   "%s%s%s source \"$1\" || exit 3\n"
                   "%s%s%s%s%s%s"
                   "COMP_WORDS=(",
                   bc ? "source \"" : "", bc ? bc : "", bc ? "\" >/dev/null 2>&1\n" : "",
                   path ? "PATH='" : "", path ? path : "", path ? "'\n" : "", home ? "HOME='" : "",
                   home ? home : "", home ? "'\n" : "");
  va_list ap;
  va_start(ap, first);
  for (const char *w = first; w; w = va_arg(ap, const char *))
    n += snprintf(cmd + n, sizeof cmd - (size_t)n, " '%s'", w);
  va_end(ap);
  snprintf(cmd + n, sizeof cmd - (size_t)n,
           " )\nCOMP_CWORD=$((${#COMP_WORDS[@]} - 1))\nCOMP_LINE=\"${COMP_WORDS[*]}\"\n"
           "COMP_POINT=${#COMP_LINE}\nCOMPREPLY=()\n_memstub\n"
           "[ ${#COMPREPLY[@]} -gt 0 ] && printf '%%s\\n' \"${COMPREPLY[@]}\" | sort | "
           "tr '\\n' ' '\nexit 0\n");
  char *argv[] = {"bash", "-c", cmd, "bash", (char *)script, NULL};
  tu_run r = tu_exec(cwd, argv);
  ck_assert_msg(r.status == 0, "bash: status %d: %s", r.status, r.err);
  char *out = r.out;
  size_t len = strlen(out);
  if (len && out[len - 1] == ' ') out[len - 1] = '\0';
  free(r.err);
  return out;
}

#define SCRIPT tu_src("completion/memstub.bash")
#define EXE getenv("MEMSTUB_EXE")

// complete_in for the built memstub typed by its path, in no directory in particular.
#define COMPLETE(bc, ...) complete_in(NULL, bc, SCRIPT, NULL, NULL, EXE, __VA_ARGS__, (char *)NULL)

static int have_bash(void) {
  char *argv[] = {"bash", "-c", "exit 0", NULL};
  tu_run r = tu_exec(NULL, argv);
  int ok = r.status == 0;
  tu_run_free(&r);
  if (!ok) fprintf(stderr, "test_completion: bash cannot be run: skipped\n");
  return ok;
}

static void expect(char *got, const char *want, const char *what) {
  ck_assert_msg(strcmp(got, want) == 0, "%s: '%s', not '%s'", what, got, want);
  free(got);
}

// The cases that need bash alone, with bc sourced first (NULL: without it).
static void core_cases(const char *bc) {
  expect(COMPLETE(bc, "rec"), "record", "subcommand");
  // Each option once (--occurrence was offered twice: a help line began with it).
  expect(COMPLETE(bc, "record", "--o"), "--occurrence --output", "record --o");
  // The choices of options that have some.
  expect(COMPLETE(bc, "record", "--thread", ""), "all main", "--thread");
  expect(COMPLETE(bc, "record", "--heap", ""), "process thread", "--heap");
  expect(COMPLETE(bc, "import", ""), "heaptrack massif memusage", "import's format");
  expect(COMPLETE(bc, "import", "-o", "t.csv", "m"), "massif memusage", "import -o t.csv m");
  expect(COMPLETE(bc, "gen", "--timing", ""), "deadline online usleep", "gen --timing");
  expect(COMPLETE(bc, "gen", "-t", "u"), "usleep", "gen -t (the letter)");
  expect(COMPLETE(bc, "replay", "-t", ""), "deadline online usleep", "replay -t");
  expect(COMPLETE(bc, "demo", "--timing", ""), "deadline online usleep", "demo --timing");
  expect(COMPLETE(bc, "gen", "-f", ""), "auto compact listing", "gen -f");
  expect(COMPLETE(bc, "import", "memusage", "m.out", "--time-unit", ""), "auto cycles us",
         "--time-unit");
  // A number or a name: nothing to guess.
  expect(COMPLETE(bc, "record", "--sample-hz", ""), "", "--sample-hz");
}

START_TEST(test_completion_cases) {
  if (!have_bash()) return;
  core_cases(NULL);
  const char *bc = bash_completion();
  if (!bc) {
    fprintf(stderr, "test_completion_cases: bash-completion's helpers (bash_completion: "
                    "_filedir) not found: the cases with them skipped (install bash-completion, "
                    "or set MEMSTUB_BASH_COMPLETION)\n");
    return;
  }
  core_cases(bc);
  // Files, through _filedir: a trace where TRACE goes.
  char *dir = tu_mkdtemp(), *f = NULL;
  ck_assert(asprintf(&f, "%s/trace.csv", dir) > 0);
  tu_write_file(f, "x\n");
  expect(complete_in(dir, bc, SCRIPT, NULL, NULL, EXE, "replay", "tr", (char *)NULL), "trace.csv",
         "a file");
  free(f);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* From any install: memstub not on PATH, typed with ~, or as plain
 * "memstub" with the script installed beside it (it did nothing unless
 * memstub was on PATH). */
START_TEST(test_completion_any_install) {
  if (!have_bash()) return;
  char *dir = tu_mkdtemp(), *bin = NULL, *comp = NULL, *link = NULL, *copy = NULL;
  ck_assert(asprintf(&bin, "%s/prefix/bin", dir) > 0);
  ck_assert(asprintf(&comp, "%s/prefix/share/bash-completion/completions", dir) > 0);
  ck_assert(asprintf(&link, "%s/memstub", bin) > 0);
  ck_assert(asprintf(&copy, "%s/memstub", comp) > 0);
  char *mk = NULL;
  ck_assert(asprintf(&mk, "mkdir -p '%s' '%s' && ln -s '%s' '%s' && cp '%s' '%s'", bin, comp, EXE,
                     link, SCRIPT, copy) > 0);
  char *sh[] = {"sh", "-c", mk, NULL};
  tu_run r = tu_exec(NULL, sh);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  const char *path = "/usr/bin:/bin";  // no memstub on it
  // Typed as ~/prefix/bin/memstub, HOME being dir.
  expect(complete_in(NULL, NULL, SCRIPT, path, dir, "~/prefix/bin/memstub", "rec", (char *)NULL),
         "record", "typed with ~");
  // Typed as memstub (an alias, a function): the one beside the installed script.
  expect(complete_in(NULL, NULL, copy, path, NULL, "memstub", "rec", (char *)NULL), "record",
         "memstub beside the installed script");
  expect(complete_in(NULL, NULL, copy, path, NULL, "memstub", "record", "--thread", "m",
                     (char *)NULL),
         "main", "memstub beside the installed script, --thread");
  // None anywhere: nothing, and no error.
  expect(complete_in(NULL, NULL, SCRIPT, path, NULL, "memstub", "rec", (char *)NULL), "",
         "no memstub anywhere");
  free(mk), free(bin), free(comp), free(link), free(copy);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* The script's choices are what the commands accept: every option of every
 * subcommand that takes a value is given a word no command accepts; where
 * the refusal lists words ("expected a, b or c"), the script offers exactly
 * those (it may add a word the refusal leaves out). */
START_TEST(test_completion_choices_accepted) {
  if (!have_bash()) return;
  char *cmds[64], *dir = tu_mkdtemp();
  size_t ncmds = tu_subcommands(cmds, 64), checked = 0;
  for (size_t c = 0; c < ncmds; c++) {
    const char *cmd = cmds[c];
    tu_run r = tu_memstub(NULL, cmd, "--help", NULL);
    const char *o = strstr(r.out, "options:\n");
    ck_assert_ptr_nonnull(o);
    for (o += 9; *o && *o != '\n'; o = strchr(o, '\n') + 1) {
      char name[64], arg[64];
      if (sscanf(o, "  -%*c, --%63[a-z0-9-] %63[^ \n]", name, arg) != 2 &&
          sscanf(o, "      --%63[a-z0-9-] %63[^ \n]", name, arg) != 2)
        continue;
      // A value's name is in capitals ("  -h, --help  show this help" has none).
      if (arg[0] < 'A' || arg[0] > 'Z') continue;
      // Files and programs: giving them a bogus word could make something.
      if (strcmp(arg, "FILE") == 0 || strcmp(arg, "DIR") == 0 || strcmp(arg, "PROGRAM") == 0 ||
          strcmp(arg, "FIG") == 0 || strcmp(arg, "CC") == 0)
        continue;
      char opt[80];
      snprintf(opt, sizeof opt, "--%s", name);
      tu_run b = tu_memstub(dir, cmd, opt, "qqbogus", "/nonexistent/x", NULL);
      char want[512] = "";
      const char *e = strstr(b.err, ": expected ");
      const char *f = e ? strstr(e, ", found 'qqbogus'") : NULL;
      if (e && f) {
        // "a, b or c" into the sorted words without blanks: "a b c".
        char list[512];
        snprintf(list, sizeof list, "%.*s", (int)(f - e - 11), e + 11);
        char *words[16];
        size_t nw = 0;
        for (char *tok = strtok(list, ","); tok && nw < 16; tok = strtok(NULL, ",")) {
          char *or = strstr(tok, " or ");
          char *parts[2] = {tok, or ? or + 4 : NULL};
          if (or) *or = '\0';
          for (int p = 0; p < 2 && parts[p]; p++) {
            while (*parts[p] == ' ') parts[p]++;
            if (*parts[p] && !strchr(parts[p], ' ')) words[nw++] = parts[p];
          }
        }
        for (size_t i = 1; i < nw; i++)  // insertion sort
          for (size_t j = i; j > 0 && strcmp(words[j - 1], words[j]) > 0; j--) {
            char *t = words[j];
            words[j] = words[j - 1];
            words[j - 1] = t;
          }
        for (size_t i = 0; i < nw; i++)
          snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? " " : "", words[i]);
      }
      char *got = complete_in(NULL, NULL, SCRIPT, NULL, NULL, EXE, cmd, opt, "", (char *)NULL);
      if (*want)
        ck_assert_msg(strcmp(got, want) == 0, "memstub %s %s: the script offers '%s', the command "
                      "accepts '%s'", cmd, opt, got, want);
      else if (*got)  // words the refusal does not list: each one accepted
        for (char *w = strtok(got, " "); w; w = strtok(NULL, " ")) {
          tu_run a = tu_memstub(dir, cmd, opt, w, "/nonexistent/x", NULL);
          ck_assert_msg(!strstr(a.err, w) || !strstr(a.err, opt),
                        "memstub %s %s %s: refused: %s", cmd, opt, w, a.err);
          tu_run_free(&a);
        }
      checked++;
      free(got);
      tu_run_free(&b);
    }
    tu_run_free(&r);
    free(cmds[c]);
  }
  // import's format, its first operand.
  tu_run b = tu_memstub(dir, "import", "qqbogus", "/nonexistent/x", NULL);
  ck_assert_msg(strstr(b.err, "(expected massif, memusage or heaptrack)"), "%s", b.err);
  tu_run_free(&b);
  expect(COMPLETE(NULL, "import", ""), "heaptrack massif memusage", "import's format");
  ck_assert_uint_ge(checked, 20);
  ck_assert_int_eq(tu_count_entries(dir), 0);  // nothing was made
  tu_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("completion");
  TCase *tc = tcase_create("bash");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_completion_cases);
  tcase_add_test(tc, test_completion_any_install);
  tcase_add_test(tc, test_completion_choices_accepted);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
