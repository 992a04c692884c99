// The docs against the help texts (issue 30): every option any --help prints
// is in docs/cli.md and in the man page made at build time, record's in
// docs/recording.md too, and every subcommand in README's table, so that
// docs and help cannot drift apart again.
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

enum { MAX_CMDS = 64, MAX_OPTS = 64 };

// One option of a --help list: its long name, and its letter ('\0' none).
typedef struct opt {
  char name[64];
  char letter;
} opt;

/* The options of a help text's "options:" list ("  -x, --name ARG  ..." and
 * "      --name ARG  ..." lines; continuation lines are skipped), --help
 * aside: into o, their number returned. */
static size_t options_of(const char *help, opt *o, size_t max) {
  const char *at = strstr(help, "options:\n");
  ck_assert_msg(at != NULL, "no options list in: %s", help);
  size_t n = 0;
  for (at += 9; *at && *at != '\n' && n < max; at = strchr(at, '\n') ? strchr(at, '\n') + 1 : "") {
    char letter = '\0', name[64];
    if (sscanf(at, "  -%c, --%63[a-z0-9-]", &letter, name) == 2 ||
        (letter = '\0', sscanf(at, "      --%63[a-z0-9-]", name) == 1) ||
        sscanf(at, "  --%63[a-z0-9-]", name) == 1) {  // a stub program's list
      if (strcmp(name, "help") == 0) continue;
      snprintf(o[n].name, sizeof o[n].name, "%s", name);
      o[n++].letter = letter;
    }
  }
  return n;
}

/* The part of text from the line starting with heading up to the next line
 * starting with stop (or the end), malloc'd; NULL when heading is not there. */
static char *section(const char *text, const char *heading, const char *stop) {
  const char *at = text;
  size_t hl = strlen(heading);
  while (at && strncmp(at, heading, hl) != 0) at = strchr(at, '\n') ? strchr(at, '\n') + 1 : NULL;
  if (!at) return NULL;
  const char *end = strchr(at, '\n');
  while (end && strncmp(end + 1, stop, strlen(stop)) != 0) end = strchr(end + 1, '\n');
  size_t len = end ? (size_t)(end - at) : strlen(at);
  char *s = malloc(len + 1);
  memcpy(s, at, len);
  s[len] = '\0';
  return s;
}

// Each option of o[0..k) in doc, as fmt makes it from its name.
static void each_listed(const opt *o, size_t k, const char *doc, const char *fmt,
                        const char *where) {
  for (size_t j = 0; j < k; j++) {
    char want[160];
    snprintf(want, sizeof want, fmt, o[j].name);
    ck_assert_msg(strstr(doc, want), "%s: --%s is not listed ('%s')", where, o[j].name, want);
  }
}

static char *read_src(const char *rel) {
  char *t = tu_read_file(tu_src(rel));
  ck_assert_msg(t != NULL, "cannot read %s", rel);
  return t;
}

/* Every option of `memstub CMD --help` in docs/cli.md's "### memstub CMD"
 * section (`--name`, with its letter as "`-x`, `--name"), and in the man
 * page's ".SS memstub CMD" section (\-\-name). */
START_TEST(test_every_option_in_cli_md_and_man) {
  char *cli = read_src("docs/cli.md");
  char man_path[4096];
  snprintf(man_path, sizeof man_path, "%s/man/memstub.1", getenv("MEMSTUB_BINARY_DIR"));
  char *man = tu_read_file(man_path);
  if (!man) fprintf(stderr, "test_every_option_in_cli_md_and_man: no %s (a cross build): the man page is not checked\n", man_path);
  char *cmds[MAX_CMDS];
  size_t n = tu_subcommands(cmds, MAX_CMDS), total = 0;
  ck_assert_uint_ge(n, 11);
  for (size_t i = 0; i < n; i++) {
    tu_run r = tu_memstub(NULL, cmds[i], "--help", NULL);
    ck_assert_msg(r.status == 0, "memstub %s --help: %s", cmds[i], r.err);
    opt o[MAX_OPTS];
    size_t k = options_of(r.out, o, MAX_OPTS);
    tu_run_free(&r);
    ck_assert_msg(k >= 1, "memstub %s --help lists no option", cmds[i]);
    char heading[64];
    snprintf(heading, sizeof heading, "### memstub %s ", cmds[i]);
    char *doc = section(cli, heading, "#");
    ck_assert_msg(doc != NULL, "docs/cli.md has no section '%s'", heading);
    snprintf(heading, sizeof heading, ".SS memstub %s\n", cmds[i]);
    char *page = man ? section(man, heading, ".S") : NULL;
    ck_assert_msg(!man || page, "the man page has no section '%s'", heading);
    for (size_t j = 0; j < k; j++, total++) {
      char want[160];
      if (o[j].letter)
        snprintf(want, sizeof want, "`-%c`, `--%.63s", o[j].letter, o[j].name);
      else
        snprintf(want, sizeof want, "`--%.63s", o[j].name);
      const char *at = strstr(doc, want);
      char after = at ? at[strlen(want)] : '\0';
      ck_assert_msg(at && (after == '`' || after == ' '),
                    "docs/cli.md: memstub %s --%s is not in its section ('%s')", cmds[i],
                    o[j].name, want);
      if (!page) continue;
      // roff: every '-' escaped (\-\-no\-figure)
      size_t w = 0;
      for (const char *c = "--"; *c; c++) want[w++] = '\\', want[w++] = '-';
      for (const char *c = o[j].name; *c && w + 3 < sizeof want; c++) {
        if (*c == '-') want[w++] = '\\';
        want[w++] = *c;
      }
      want[w] = '\0';
      ck_assert_msg(strstr(page, want), "the man page: memstub %s --%s is not in its section",
                    cmds[i], o[j].name);
    }
    free(doc);
    free(page);
    free(cmds[i]);
  }
  ck_assert_uint_ge(total, 80);  // the walk read every list
  free(cli);
  free(man);
}
END_TEST

/* A compiled stub program's options in docs/cli.md's "### A stub program"
 * section. */
START_TEST(test_stub_options_in_cli_md) {
  char *dir = tu_mkdtemp(), h[4096], prog[4096];
  snprintf(h, sizeof h, "%s/memuse.h", dir);
  snprintf(prog, sizeof prog, "%s/stub", dir);
  char *in = strdup(tu_src("traces/samples/listing1.csv"));
  tu_run r = tu_memstub(NULL, "gen", in, "-o", h, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "build", h, "-o", prog, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  char *argv[] = {prog, "--help", NULL};
  r = tu_exec(dir, argv);
  ck_assert_int_eq(r.status, 0);
  opt o[MAX_OPTS];
  size_t k = options_of(r.out, o, MAX_OPTS);
  ck_assert_uint_ge(k, 6);
  char *cli = read_src("docs/cli.md");
  char *doc = section(cli, "### A stub program", "#");
  ck_assert_ptr_nonnull(doc);
  each_listed(o, k, doc, "`--%.63s", "docs/cli.md, a stub program");
  // Its usage line names every option too.
  for (size_t j = 0; j < k; j++) {
    char want[160];
    snprintf(want, sizeof want, "--%.63s", o[j].name);
    const char *usage_end = strstr(r.out, "\n\n");
    const char *at = strstr(r.out, want);
    if (o[j].letter) {
      snprintf(want, sizeof want, "-%c]", o[j].letter);
      at = strstr(r.out, want);
    }
    ck_assert_msg(at && at < usage_end, "the stub's usage line lacks %s: %s", o[j].name, r.out);
  }
  tu_run_free(&r);
  free(doc), free(cli), free(in);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Every option of `memstub record --help` in docs/recording.md's list.
START_TEST(test_record_options_in_recording_md) {
  tu_run r = tu_memstub(NULL, "record", "--help", NULL);
  ck_assert_int_eq(r.status, 0);
  opt o[MAX_OPTS];
  size_t k = options_of(r.out, o, MAX_OPTS);
  tu_run_free(&r);
  ck_assert_uint_ge(k, 12);
  char *rec = read_src("docs/recording.md");
  char *doc = section(rec, "## memstub record", "The command runs PROGRAM");
  ck_assert_ptr_nonnull(doc);
  each_listed(o, k, doc, "--%.63s ", "docs/recording.md, memstub record");
  free(doc);
  free(rec);
}
END_TEST

// Every subcommand of `memstub help` in README's table of commands.
START_TEST(test_readme_lists_every_command) {
  char *readme = read_src("README.md");
  char *cmds[MAX_CMDS];
  size_t n = tu_subcommands(cmds, MAX_CMDS);
  for (size_t i = 0; i < n; i++) {
    char want[96];
    snprintf(want, sizeof want, "\n| `memstub %s` | ", cmds[i]);
    ck_assert_msg(strstr(readme, want), "README.md's table lacks memstub %s", cmds[i]);
    free(cmds[i]);
  }
  // The importer's formats: the row names each one import takes.
  tu_run r = tu_memstub(NULL, "import", "--help", NULL);
  const char *row = strstr(readme, "\n| `memstub import` | ");
  const char *end = row ? strchr(row + 1, '\n') : NULL;
  static const char *const fmts[] = {"massif", "memusage", "heaptrack"};
  for (size_t i = 0; i < 3; i++) {
    const char *at = row ? strstr(row, fmts[i]) : NULL;
    ck_assert_msg(strstr(r.out, fmts[i]) && at && at < end, "README's import row lacks %s",
                  fmts[i]);
  }
  tu_run_free(&r);
  free(readme);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_docs");
  TCase *tc = tcase_create("docs");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_every_option_in_cli_md_and_man);
  tcase_add_test(tc, test_stub_options_in_cli_md);
  tcase_add_test(tc, test_record_options_in_recording_md);
  tcase_add_test(tc, test_readme_lists_every_command);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
