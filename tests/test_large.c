// Large stubs: the two header forms (listing, compact), the automatic switch
// between them, --format, the compact encoding and its decoder, and that both
// forms of one trace replay the same stack and heap bytes.
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memstub/gen.h"
#include "testutil.h"

// A non-LIFO trace of n rows: stack and heap move up and down, 10 us apart.
static memstub_trace *make_trace(int64_t n, uint64_t seed) {
  memstub_trace *t = memstub_trace_create();
  int64_t stack = 0, heap = 0;
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t r = seed >> 33;
    if (i > 0) {
      stack += (int64_t)(r % 4001) - 2000;
      heap += (int64_t)((r >> 12) % 20001) - 10000;
      if (stack < 0) stack = -stack % 3000;
      if (heap < 0) heap = -heap % 5000;
      if (stack > 60000) stack = 60000 - (int64_t)(r % 1000);
    }
    ck_assert_int_eq(memstub_trace_append(t, i * 10000, stack, heap), 0);
  }
  return t;
}

static memstub_gen *build(const memstub_trace *t) {
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  o.source = "test_large";
  memstub_gen *g = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_build(t, &o, &g, &err) == 0, "%s", err.msg);
  return g;
}

// A trace whose stub has exactly n points: constant stack, a heap step per row.
static memstub_gen *gen_points(int64_t n) {
  memstub_trace *t = memstub_trace_create();
  for (int64_t i = 0; i <= n; i++)
    ck_assert_int_eq(memstub_trace_append(t, i * 1000, 0, (i % 2) * 64), 0);
  memstub_gen *g = build(t);
  memstub_trace_free(t);
  ck_assert_int_eq(g->stub.numdata, n);
  return g;
}

static char *emit(const memstub_gen *g, const char *dir, int format, memstub_gen_emit_report *rep) {
  char path[4096];
  snprintf(path, sizeof path, "%s/h.h", dir);
  memstub_gen_emit_options o = {.format = format};
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_emit_ex(g, path, &o, rep, &err) == 0, "%s", err.msg);
  char *text = tu_read_file(path);
  ck_assert_ptr_nonnull(text);
  return text;
}

START_TEST(test_format_parse) {
  int f = -1;
  ck_assert_int_eq(memstub_gen_format_parse("listing", &f), 0);
  ck_assert_int_eq(f, MEMSTUB_GEN_FORMAT_LISTING);
  ck_assert_int_eq(memstub_gen_format_parse("compact", &f), 0);
  ck_assert_int_eq(f, MEMSTUB_GEN_FORMAT_COMPACT);
  ck_assert_int_eq(memstub_gen_format_parse("auto", &f), 0);
  ck_assert_int_eq(f, MEMSTUB_GEN_FORMAT_AUTO);
  const char *bad[] = {"", "Listing", "compact ", "list", "binary", "1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    f = 7;
    ck_assert_int_eq(memstub_gen_format_parse(bad[i], &f), -EINVAL);
    ck_assert_int_eq(f, 7);
  }
  ck_assert_int_eq(memstub_gen_format_for(MEMSTUB_GEN_FORMAT_AUTO, 1), MEMSTUB_GEN_FORMAT_LISTING);
  ck_assert_int_eq(memstub_gen_format_for(MEMSTUB_GEN_FORMAT_AUTO, MEMSTUB_GEN_LISTING_MAX),
                   MEMSTUB_GEN_FORMAT_LISTING);
  ck_assert_int_eq(memstub_gen_format_for(MEMSTUB_GEN_FORMAT_AUTO, MEMSTUB_GEN_LISTING_MAX + 1),
                   MEMSTUB_GEN_FORMAT_COMPACT);
  ck_assert_int_eq(memstub_gen_format_for(MEMSTUB_GEN_FORMAT_LISTING, 1 << 30),
                   MEMSTUB_GEN_FORMAT_LISTING);
  ck_assert_int_eq(memstub_gen_format_for(MEMSTUB_GEN_FORMAT_COMPACT, 1),
                   MEMSTUB_GEN_FORMAT_COMPACT);
}
END_TEST

// The switch at MEMSTUB_GEN_LISTING_MAX points, seen in the headers written.
START_TEST(test_auto_switch) {
  char *dir = tu_mkdtemp();
  int64_t sizes[] = {MEMSTUB_GEN_LISTING_MAX, MEMSTUB_GEN_LISTING_MAX + 1};
  for (int k = 0; k < 2; k++) {
    memstub_gen *g = gen_points(sizes[k]);
    memstub_gen_emit_report rep;
    char *h = emit(g, dir, MEMSTUB_GEN_FORMAT_AUTO, &rep);
    int compact = k == 1;
    ck_assert_int_eq(rep.format, compact ? MEMSTUB_GEN_FORMAT_COMPACT : MEMSTUB_GEN_FORMAT_LISTING);
    ck_assert_int_eq(strstr(h, "static const struct memAlloc memUse[NUMDATA] = {\n") != NULL,
                     !compact);
    ck_assert_int_eq(strstr(h, "static const char memData[] =") != NULL, compact);
    ck_assert_int_gt(rep.data_bytes, 0);
    free(h);
    // Forced either way, whatever the size.
    h = emit(g, dir, compact ? MEMSTUB_GEN_FORMAT_LISTING : MEMSTUB_GEN_FORMAT_COMPACT, &rep);
    ck_assert_int_eq(strstr(h, "static const char memData[] =") != NULL, !compact);
    free(h);
    memstub_gen_free(g);
  }
  memstub_gen_emit_options o = {.format = 3};
  memstub_gen *g = gen_points(4);
  memstub_error err = {0};
  char path[4096];
  snprintf(path, sizeof path, "%s/bad.h", dir);
  ck_assert_int_eq(memstub_gen_emit_ex(g, path, &o, NULL, &err), -EINVAL);
  ck_assert_int_eq(tu_exists(path), 0);
  memstub_gen_free(g);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The string literal of a compact header, joined (the C compiler's view).
static char *literal(const char *h, int64_t *len) {
  const char *p = strstr(h, "memData[] =\n");
  ck_assert_ptr_nonnull(p);
  const char *end = strstr(p, ";\n");
  char *out = malloc((size_t)(end - p));
  size_t n = 0;
  int in = 0;
  for (const char *c = p; c < end; c++) {
    if (*c == '"') in = !in;
    else if (in) out[n++] = *c;
  }
  out[n] = '\0';
  *len = (int64_t)n;
  return out;
}

// Every value an int64 holds survives the compact encoding, edges included.
START_TEST(test_compact_roundtrip_extremes) {
  char *dir = tu_mkdtemp();
  memstub_gen *g = gen_points(40);
  const int64_t v[] = {0, 1, -1, 15, 16, -16, -17, 31, 32, 1023, -1024, INT32_MAX, INT32_MIN,
                       INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, (int64_t)1 << 59,
                       -((int64_t)1 << 60), 123456789012345};
  const int nv = (int)(sizeof v / sizeof v[0]);
  for (int64_t i = 0; i < 40; i++) {
    g->use[i].time = v[i % nv];
    g->use[i].stackAlloc = v[(i + 7) % nv];
    g->use[i].heapAlloc = v[(i + 13) % nv];
    g->point[i] = i == 0 ? INT64_MIN : i == 1 ? INT64_MAX : v[(i * 3) % nv];
  }
  char *h = emit(g, dir, MEMSTUB_GEN_FORMAT_COMPACT, NULL);
  int64_t len;
  char *lit = literal(h, &len);
  struct memAlloc use[40];
  int64_t point[40];
  ck_assert_int_eq(memstub_stub_decode(lit, len, 40, use, point), 0);
  for (int i = 0; i < 40; i++) {
    ck_assert_int_eq(use[i].time, g->use[i].time);
    ck_assert_int_eq(use[i].stackAlloc, g->use[i].stackAlloc);
    ck_assert_int_eq(use[i].heapAlloc, g->use[i].heapAlloc);
    ck_assert_int_eq(point[i], g->point[i]);
  }
  free(lit);
  free(h);
  memstub_gen_free(g);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Long data spans many literal lines, none with a character C would change.
START_TEST(test_compact_lines) {
  char *dir = tu_mkdtemp();
  memstub_trace *t = make_trace(20000, 5);
  memstub_gen *g = build(t);
  char *h = emit(g, dir, MEMSTUB_GEN_FORMAT_COMPACT, NULL);
  int64_t len;
  char *lit = literal(h, &len);
  ck_assert_ptr_null(strpbrk(lit, "\\?'"));
  int lines = 0;
  for (const char *p = strstr(h, "memData[] =\n"); p && (p = strstr(p + 1, "\n  \"")); lines++) {
    const char *e = strchr(p + 1, '\n');
    ck_assert_int_le(e - p, 4100);
  }
  ck_assert_int_gt(lines, 10);
  struct memAlloc *use = malloc((size_t)g->stub.numdata * sizeof *use);
  int64_t *point = malloc((size_t)g->stub.numdata * sizeof *point);
  ck_assert_int_eq(memstub_stub_decode(lit, len, g->stub.numdata, use, point), 0);
  ck_assert_int_eq(memcmp(use, g->use, (size_t)g->stub.numdata * sizeof *use), 0);
  ck_assert_int_eq(memcmp(point, g->point, (size_t)g->stub.numdata * sizeof *point), 0);
  free(use);
  free(point);
  free(lit);
  free(h);
  memstub_gen_free(g);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// Damaged data never decodes: it leaves point[0] = -1 for the check to refuse.
START_TEST(test_decode_refuses_damage) {
  struct memAlloc use[2];
  int64_t point[2];
  // "ms1." then 2 points: time 1 (zigzag 2 = 'C'), stack 0 ('A'), heap 0, step 1 ('C').
  const char *good = "ms1.CAACCAAA";
  ck_assert_int_eq(memstub_stub_decode(good, (int64_t)strlen(good), 2, use, point), 0);
  ck_assert_int_eq(point[0], 1);
  ck_assert_int_eq(point[1], 1);
  ck_assert_int_eq(use[1].time, 1);
  const struct {
    const char *data;
    int64_t n;
  } bad[] = {
      {"ms1.CAACCAA", 2},    // cut short
      {"ms1.CAACCAAAA", 2},  // a byte left over
      {"ms2.CAACCAAA", 2},   // another encoding
      {"ms1.CAA!CAAA", 2},   // not a digit
      {"ms1.CAACgAAA", 2},   // 'g' continues into the next digit: a value short
      {"ms1.________________AAAA", 1},  // beyond 64 bits
      {"ms1.___________", 1},           // 11 groups then the end of the data
      {"ms", 1},
      {"", 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    point[0] = 5;
    ck_assert_msg(memstub_stub_decode(bad[i].data, (int64_t)strlen(bad[i].data), bad[i].n, use,
                                      point) == -EINVAL,
                  "%s decoded", bad[i].data);
    ck_assert_int_eq(point[0], -1);
    ck_assert_int_eq(use[0].time, 0);
  }
}
END_TEST

/* ---- through the command --------------------------------------------------- */

static void run_ok(tu_run *r, const char *what) {
  ck_assert_msg(r->status == 0, "%s: exit %d: %s", what, r->status, r->err);
}

// The data rows' stack and heap columns of a measured trace, one "s,h" a line.
static char *stack_heap(const char *path) {
  char *text = tu_read_file(path);
  ck_assert_ptr_nonnull(text);
  char *out = malloc(strlen(text) + 1);
  size_t n = 0;
  int header = 1;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (line[0] == '#') continue;
    if (header) {  // time_ns,stack_bytes,heap_bytes,...
      ck_assert_int_eq(strncmp(line, "time_ns,stack_bytes,heap_bytes", 30), 0);
      header = 0;
      continue;
    }
    char *s = strchr(line, ',');
    ck_assert_ptr_nonnull(s);
    char *h = strchr(s + 1, ',');
    ck_assert_ptr_nonnull(h);
    char *e = strchr(h + 1, ',');
    size_t k = e ? (size_t)(e - s - 1) : strlen(s + 1);
    memcpy(out + n, s + 1, k);
    n += k;
    out[n++] = '\n';
  }
  out[n] = '\0';
  free(text);
  return out;
}

/* One trace, both forms: the two stub programs replay the same stack and heap
 * bytes at every row (--measure), with and without --name. */
START_TEST(test_both_forms_same_replay) {
  char *dir = tu_mkdtemp();
  char csv[4096];
  snprintf(csv, sizeof csv, "%s/t.csv", dir);
  memstub_trace *t = make_trace(3000, 11);  // 30 ms
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_write(t, csv, &err) == 0, "%s", err.msg);
  memstub_trace_free(t);
  const char *forms[] = {"listing", "compact"};
  char *cols[2];
  for (int named = 0; named < 2; named++) {
    for (int k = 0; k < 2; k++) {
      char h[64], prog[64], m[64];
      snprintf(h, sizeof h, "%s%d.h", forms[k], named);
      snprintf(prog, sizeof prog, "%s%d", forms[k], named);
      snprintf(m, sizeof m, "%s%d.csv", forms[k], named);
      tu_run r = named ? tu_memstub(dir, "gen", "t.csv", "--format", forms[k], "-n", "big", "-o",
                                    h, NULL)
                       : tu_memstub(dir, "gen", "t.csv", "-f", forms[k], "-o", h, NULL);
      run_ok(&r, "gen");
      tu_run_free(&r);
      char hp[4096];
      snprintf(hp, sizeof hp, "%s/%s", dir, h);
      char *text = tu_read_file(hp);
      ck_assert_int_eq(strstr(text, "memData[] =") != NULL, k == 1);
      free(text);
      r = tu_memstub(dir, "build", h, "-o", prog, NULL);
      run_ok(&r, "build");
      tu_run_free(&r);
      char exe[4096];
      snprintf(exe, sizeof exe, "%s/%s", dir, prog);
      char *argv[] = {exe, "--measure", m, NULL};
      r = tu_exec(dir, argv);
      run_ok(&r, "replay");
      tu_run_free(&r);
      char mp[4096];
      snprintf(mp, sizeof mp, "%s/%s", dir, m);
      cols[k] = stack_heap(mp);
    }
    ck_assert_int_gt(strlen(cols[0]), 3000 * 4);
    ck_assert_str_eq(cols[0], cols[1]);
    free(cols[0]);
    free(cols[1]);
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// A compact header whose data was damaged is refused by memstub build.
START_TEST(test_damaged_compact_refused) {
  char *dir = tu_mkdtemp();
  char csv[4096], h[4096];
  snprintf(csv, sizeof csv, "%s/t.csv", dir);
  snprintf(h, sizeof h, "%s/c.h", dir);
  memstub_trace *t = make_trace(200, 3);
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_write(t, csv, &err), 0);
  memstub_trace_free(t);
  tu_run r = tu_memstub(dir, "gen", "t.csv", "--format=compact", "-o", "c.h", NULL);
  run_ok(&r, "gen");
  tu_run_free(&r);
  char *text = tu_read_file(h);
  char *p = strstr(text, "\"ms1.");
  ck_assert_ptr_nonnull(p);
  p[8] = '*';  // not a digit of the encoding
  tu_write_file(h, text);
  free(text);
  r = tu_memstub(dir, "build", "c.h", "-o", "c", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "row -1"));
  tu_run_free(&r);
  ck_assert_int_eq(tu_exists(h), 1);
  char prog[4096];
  snprintf(prog, sizeof prog, "%s/c", dir);
  ck_assert_int_eq(tu_exists(prog), 0);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// --format refuses what it does not know, before reading anything.
START_TEST(test_cli_format_refused) {
  char *dir = tu_mkdtemp();
  const char *l1 = tu_src("traces/samples/listing1.csv");
  char in[4096];
  snprintf(in, sizeof in, "%s", l1);
  const char *bad[] = {"binary", "", "LISTING"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tu_run r = tu_memstub(dir, "gen", in, "--format", bad[i], "-o", "x.h", NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--format: expected listing, compact or auto"));
    tu_run_free(&r);
  }
  tu_run r = tu_memstub(dir, "gen", in, "-o", "x.h", "--format", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "needs a value"));
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 0);
  // The golden listing through an explicit --format listing, byte for byte.
  r = tu_memstub(tu_src("traces/samples"), "gen", "listing1.csv", "--format", "listing", NULL);
  run_ok(&r, "gen");
  char *golden = tu_read_file(tu_src("tests/golden/listing1.h"));
  ck_assert_str_eq(r.out, golden);
  free(golden);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The data files go to $TMPDIR, else /tmp: a $TMPDIR that refuses is no failure.
START_TEST(test_tmpdir_fallback) {
  const char *bad[] = {"/nonexistent-memstub-test", "relative", "/tmp/we[ird"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("TMPDIR", bad[i], 1);
    tu_run r = tu_memstub(tu_src("traces/samples"), "gen", "listing1.csv", NULL);
    run_ok(&r, "gen");
    char *golden = tu_read_file(tu_src("tests/golden/listing1.h"));
    ck_assert_str_eq(r.out, golden);
    free(golden);
    tu_run_free(&r);
  }
}
END_TEST

// Progress is drawn on a terminal only: with stderr captured, gen and build say only their notes.
START_TEST(test_progress_silent_off_tty) {
  char *dir = tu_mkdtemp();
  char csv[4096];
  snprintf(csv, sizeof csv, "%s/t.csv", dir);
  memstub_trace *t = make_trace(120000, 9);
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_write(t, csv, &err), 0);
  memstub_trace_free(t);
  tu_run r = tu_memstub(dir, "gen", "t.csv", "-o", "t.h", NULL);
  run_ok(&r, "gen");
  ck_assert_ptr_null(strchr(r.err, '\r'));
  ck_assert_ptr_null(strstr(r.err, "writing points"));
  ck_assert_ptr_nonnull(strstr(r.err, "t.h: "));
  tu_run_free(&r);
  char h[4096];
  snprintf(h, sizeof h, "%s/t.h", dir);
  char *text = tu_read_file(h);
  ck_assert_int_gt(strlen(text), 1 << 20);  // large enough for build's progress
  free(text);
  r = tu_memstub(dir, "build", "t.h", NULL);
  run_ok(&r, "build");
  ck_assert_ptr_null(strchr(r.err, '\r'));
  ck_assert_ptr_null(strstr(r.err, "compiling"));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Run `memstub ARGS` in dir with stderr on a pseudo-terminal (stdout to
 * /dev/null); what it drew there, and its exit status in *status. */
static char *on_tty(const char *dir, char *const args[], int *status) {
  int m = posix_openpt(O_RDWR | O_NOCTTY);
  ck_assert_int_ge(m, 0);
  ck_assert_int_eq(grantpt(m), 0);
  ck_assert_int_eq(unlockpt(m), 0);
  const char *slave = ptsname(m);
  ck_assert_ptr_nonnull(slave);
  const char *exe = getenv("MEMSTUB_EXE");
  ck_assert_ptr_nonnull(exe);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    setsid();
    int s = open(slave, O_RDWR);
    int null = open("/dev/null", O_RDWR);
    if (s < 0 || null < 0 || chdir(dir) != 0) _exit(126);
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(s, STDERR_FILENO);
    char *argv[16] = {(char *)exe};
    for (int i = 0; args[i] && i < 14; i++) argv[i + 1] = args[i];
    unsetenv("MEMSTUB_QUIET");
    execv(exe, argv);
    _exit(127);
  }
  size_t cap = 1 << 16, n = 0;
  char *out = malloc(cap);
  for (;;) {
    if (n + 4096 > cap) out = realloc(out, cap *= 2);
    ssize_t k = read(m, out + n, 4096);
    if (k <= 0) break;  // EIO once the child and its terminal are gone
    n += (size_t)k;
  }
  out[n] = '\0';
  ck_assert_int_eq(waitpid(pid, status, 0), pid);
  close(m);
  return out;
}

// On a terminal, gen and build of a large trace show their progress.
START_TEST(test_progress_on_tty) {
  char *dir = tu_mkdtemp();
  char csv[4096];
  snprintf(csv, sizeof csv, "%s/t.csv", dir);
  memstub_trace *t = make_trace(120000, 9);
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_write(t, csv, &err), 0);
  memstub_trace_free(t);
  int st;
  char *gen_args[] = {"gen", "t.csv", "-o", "t.h", NULL};
  char *out = on_tty(dir, gen_args, &st);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
  ck_assert_ptr_nonnull(strstr(out, "memstub gen: reading t.csv"));
  ck_assert_ptr_nonnull(strstr(out, "memstub gen: writing points"));
  ck_assert_ptr_nonnull(strstr(out, "(100%)"));
  free(out);
  char *build_args[] = {"build", "t.h", NULL};
  out = on_tty(dir, build_args, &st);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
  ck_assert_msg(strstr(out, "memstub build: compiling ") != NULL, "%s", out);
  ck_assert_msg(strstr(out, "memstub build: checking the stub data") != NULL, "%s", out);
  free(out);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *large_suite(void) {
  Suite *s = suite_create("large");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_format_parse);
  tcase_add_test(tc, test_auto_switch);
  tcase_add_test(tc, test_compact_roundtrip_extremes);
  tcase_add_test(tc, test_compact_lines);
  tcase_add_test(tc, test_decode_refuses_damage);
  tcase_add_test(tc, test_both_forms_same_replay);
  tcase_add_test(tc, test_damaged_compact_refused);
  tcase_add_test(tc, test_cli_format_refused);
  tcase_add_test(tc, test_tmpdir_fallback);
  tcase_add_test(tc, test_progress_silent_off_tty);
  tcase_add_test(tc, test_progress_on_tty);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(large_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
