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
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "memstub/work.h"
#include "testutil.h"

// A non-LIFO trace of n rows: stack and heap (unless heap_moves is 0) move
// up and down, 10 us apart.
static memstub_trace *make_trace_heap(int64_t n, uint64_t seed, int heap_moves) {
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
    ck_assert_int_eq(memstub_trace_append(t, i * 10000, stack, heap_moves ? heap : 4096), 0);
  }
  return t;
}

static memstub_trace *make_trace(int64_t n, uint64_t seed) { return make_trace_heap(n, seed, 1); }

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
  // listing, compact, a data file built into a program, the data file replayed by memstub
  const char *forms[] = {"listing", "compact", "data", "replay"};
  char *cols[4];
  for (int named = 0; named < 2; named++) {
    for (int k = 0; k < 4; k++) {
      char h[64], prog[64], m[64];
      snprintf(h, sizeof h, k >= 2 ? "%s%d.msd" : "%s%d.h", forms[k], named);
      snprintf(prog, sizeof prog, "%s%d", forms[k], named);
      snprintf(m, sizeof m, "%s%d.csv", forms[k], named);
      tu_run r;
      if (k >= 2)
        r = named ? tu_memstub(dir, "gen", "t.csv", "-n", "big", "--data", h, NULL)
                  : tu_memstub(dir, "gen", "t.csv", "--data", h, NULL);
      else
        r = named ? tu_memstub(dir, "gen", "t.csv", "--format", forms[k], "-n", "big", "-o", h,
                               NULL)
                  : tu_memstub(dir, "gen", "t.csv", "-f", forms[k], "-o", h, NULL);
      run_ok(&r, "gen");
      tu_run_free(&r);
      char hp[4096];
      snprintf(hp, sizeof hp, "%s/%s", dir, h);
      if (k < 2) {
        char *text = tu_read_file(hp);
        ck_assert_int_eq(strstr(text, "memData[] =") != NULL, k == 1);
        free(text);
      }
      if (k == 3) {  // no program: memstub replays the data file itself
        r = tu_memstub(dir, "replay", "--data", h, "--measure", m, NULL);
        run_ok(&r, "replay --data");
        tu_run_free(&r);
        char mp[4096];
        snprintf(mp, sizeof mp, "%s/%s", dir, m);
        cols[k] = stack_heap(mp);
        continue;
      }
      r = k == 2 ? tu_memstub(dir, "build", "--data", h, "-o", prog, NULL)
                 : tu_memstub(dir, "build", h, "-o", prog, NULL);
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
    for (int k = 1; k < 4; k++) ck_assert_msg(strcmp(cols[0], cols[k]) == 0, "%s differs", forms[k]);
    for (int k = 0; k < 4; k++) free(cols[k]);
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

/* Run EXE ARGS in dir with stderr on a pseudo-terminal (stdout to
 * /dev/null); what it drew there, and its exit status in *status. */
static char *on_tty_exe(const char *dir, const char *exe, char *const args[], int *status) {
  int m = posix_openpt(O_RDWR | O_NOCTTY);
  ck_assert_int_ge(m, 0);
  ck_assert_int_eq(grantpt(m), 0);
  ck_assert_int_eq(unlockpt(m), 0);
  const char *slave = ptsname(m);
  ck_assert_ptr_nonnull(slave);
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

// `memstub ARGS` as on_tty_exe runs it.
static char *on_tty(const char *dir, char *const args[], int *status) {
  return on_tty_exe(dir, getenv("MEMSTUB_EXE"), args, status);
}

/* On a terminal, gen and build of a large trace show their progress. Its heap
 * stays put: the stub is replayed five times, and under ASan each of 120,000
 * reallocs is a fresh mapping, copied and faulted (600 s and more on a VM
 * whose page faults are slow). */
START_TEST(test_progress_on_tty) {
  char *dir = tu_mkdtemp();
  char csv[4096];
  snprintf(csv, sizeof csv, "%s/t.csv", dir);
  memstub_trace *t = make_trace_heap(120000, 9, 0);
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
  // The data file: gen writing it, build, and replay mapping then replaying it.
  char *gend_args[] = {"gen", "t.csv", "--data", "t.msd", NULL};
  out = on_tty(dir, gend_args, &st);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
  ck_assert_msg(strstr(out, "memstub gen: writing t.msd (") != NULL, "%s", out);
  free(out);
  char *buildd_args[] = {"build", "--data", "t.msd", NULL};
  out = on_tty(dir, buildd_args, &st);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
  ck_assert_msg(strstr(out, "memstub build: compiling (data file of ") != NULL, "%s", out);
  free(out);
  // The program built replays with progress on a terminal, and without off it.
  char prog[4096];
  snprintf(prog, sizeof prog, "%s/t", dir);
  char *none[] = {NULL};
  out = on_tty_exe(dir, prog, none, &st);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
  ck_assert_msg(strstr(out, ": replaying ") != NULL && strstr(out, " points (") != NULL, "%s", out);
  free(out);
  char *plain[] = {prog, NULL};
  tu_run pr = tu_exec(dir, plain);
  run_ok(&pr, "stub");
  ck_assert_ptr_null(strstr(pr.err, "replaying"));
  tu_run_free(&pr);
  char *replay_args[] = {"replay", "--data", "t.msd", NULL};
  out = on_tty(dir, replay_args, &st);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
  ck_assert_msg(strstr(out, "memstub replay: reading t.msd") != NULL, "%s", out);
  ck_assert_msg(strstr(out, "replaying") != NULL, "%s", out);
  free(out);
  char *replayt_args[] = {"replay", "t.csv", NULL};
  out = on_tty(dir, replayt_args, &st);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
  ck_assert_msg(strstr(out, "memstub replay: normalising 120000 rows") != NULL, "%s", out);
  free(out);
  // Off a terminal, none of it.
  tu_run r = tu_memstub(dir, "replay", "--data", "t.msd", NULL);
  run_ok(&r, "replay --data");
  ck_assert_ptr_null(strchr(r.err, '\r'));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* ---- data files ------------------------------------------------------------ */

// A stub with resident data (layout 2): rss_bytes and mapped_bytes move too.
static memstub_gen *resident_gen(int64_t n) {
  memstub_trace *t = make_trace(n, 5);
  memstub_trace *r = memstub_trace_create();
  int rc = memstub_trace_add_column(r, "rss_bytes"), mc = memstub_trace_add_column(r, "mapped_bytes");
  ck_assert_int_ge(rc, 0);
  ck_assert_int_ge(mc, 0);
  for (size_t i = 0; i < t->n; i++) {
    ck_assert_int_eq(memstub_trace_append(r, t->pts[i].time_ns, t->pts[i].stack_bytes, t->pts[i].heap_bytes), 0);
    memstub_trace_extra_row(r, i)[rc] = (int64_t)(i % 7) * 4096;
    memstub_trace_extra_row(r, i)[mc] = (int64_t)(i % 3) * 65536;
  }
  memstub_gen *g = build(r);
  memstub_trace_free(t);
  memstub_trace_free(r);
  ck_assert_int_eq(g->stub.abi, MEMSTUB_STUB_ABI_RESIDENT);
  return g;
}

static void same_stub(const struct memstub_stub *a, const struct memstub_stub *b) {
  ck_assert_int_eq(a->abi, b->abi);
  ck_assert_int_eq(a->timing, b->timing);
  ck_assert_str_eq(a->name, b->name);
  ck_assert_str_eq(a->source, b->source);
  ck_assert_str_eq(a->transforms, b->transforms);
  ck_assert_str_eq(a->calibration, b->calibration);
  const int64_t x[] = {a->numdata,    a->norig,      a->time0_ns,  a->stack_base, a->heap_base,
                       a->peak_stack, a->max_depth,  a->peak_heap, a->duration_ns, a->inserted};
  const int64_t y[] = {b->numdata,    b->norig,      b->time0_ns,  b->stack_base, b->heap_base,
                       b->peak_stack, b->max_depth,  b->peak_heap, b->duration_ns, b->inserted};
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) ck_assert_int_eq(x[i], y[i]);
  size_t n = (size_t)a->numdata;
  ck_assert_int_eq(memcmp(a->use, b->use, n * sizeof *a->use), 0);
  ck_assert_int_eq(memcmp(a->point, b->point, n * sizeof *a->point), 0);
  ck_assert_int_eq(!a->mapped, !b->mapped);
  ck_assert_int_eq(!a->rss, !b->rss);
  if (a->abi >= MEMSTUB_STUB_ABI_RESIDENT) {
    ck_assert_int_eq(a->rss_base, b->rss_base);
    ck_assert_int_eq(a->mapped_base, b->mapped_base);
    if (a->mapped) ck_assert_int_eq(memcmp(a->mapped, b->mapped, n * 8), 0);
    if (a->rss) ck_assert_int_eq(memcmp(a->rss, b->rss, n * 8), 0);
  }
  if (a->abi >= MEMSTUB_STUB_ABI_WORK) {
    ck_assert_int_eq(a->ncalltab, b->ncalltab);
    ck_assert_int_eq(a->block_frees, b->block_frees);
    ck_assert_int_eq(!a->cpu, !b->cpu);
    if (a->cpu) {
      ck_assert_int_eq(memcmp(a->cpu, b->cpu, n * 8), 0);
      ck_assert_int_eq(memcmp(a->calls, b->calls, n * 8), 0);
      ck_assert_int_eq(memcmp(a->churn, b->churn, n * 8), 0);
      ck_assert_int_eq(memcmp(a->calltab, b->calltab, (size_t)a->ncalltab * MEMSTUB_WORK_CALLS * 8), 0);
    }
  }
}

// A stub with work (layout 3): CPU time and allocator calls per row.
static memstub_gen *work_gen(int64_t n) {
  memstub_trace *t = make_trace(n, 5);
  memstub_trace *r = memstub_trace_create();
  int cc = memstub_trace_add_column(r, MEMSTUB_WORK_CPU_COLUMN),
      bc = memstub_trace_add_column(r, MEMSTUB_WORK_BYTES_COLUMN),
      mc = memstub_trace_add_column(r, "calls_malloc_tiny"),
      fc = memstub_trace_add_column(r, "calls_free_tiny");
  ck_assert(cc >= 0 && bc >= 0 && mc >= 0 && fc >= 0);
  for (size_t i = 0; i < t->n; i++) {
    ck_assert_int_eq(memstub_trace_append(r, t->pts[i].time_ns, t->pts[i].stack_bytes, t->pts[i].heap_bytes), 0);
    int64_t *x = memstub_trace_extra_row(r, i);
    x[cc] = t->pts[i].time_ns / 2;  // half of the time on the CPU
    x[mc] = x[fc] = (int64_t)(i % 4);
    x[bc] = (int64_t)(i % 4) * 2 * 32;
  }
  memstub_gen *g = build(r);
  memstub_trace_free(t);
  memstub_trace_free(r);
  ck_assert_int_eq(g->stub.abi, MEMSTUB_STUB_ABI_WORK);
  ck_assert_ptr_nonnull(g->stub.cpu);
  return g;
}

// Every field and array of layouts 1, 2 and 3 comes back from a data file as written.
START_TEST(test_data_roundtrip) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/s.msd", dir);
  memstub_trace *t = make_trace(5000, 2);
  memstub_gen *gs[3] = {build(t), resident_gen(3000), work_gen(2000)};
  memstub_trace_free(t);
  for (int k = 0; k < 3; k++) {
    memstub_error err = {0};
    ck_assert_msg(memstub_gen_emit_data(gs[k], path, &err) == 0, "%s", err.msg);
    memstub_stub_data *d = NULL;
    ck_assert_msg(memstub_stub_data_open(path, &d, &err) == 0, "%s", err.msg);
    same_stub(&gs[k]->stub, &d->stub);
    ck_assert_int_eq(memstub_replay_check(&d->stub, NULL, NULL, &err), 0);
    // In place: the arrays lie in the mapping, 64-byte aligned.
    ck_assert_ptr_eq(d->stub.use, (const void *)((const char *)d->map + ((const char *)d->stub.use - (const char *)d->map)));
    ck_assert_int_eq((uintptr_t)d->stub.use % 64, 0);
    ck_assert_int_eq((uintptr_t)d->stub.point % 64, 0);
    memstub_stub_data_free(d);
    memstub_gen_free(gs[k]);
  }
  memstub_stub_data_free(NULL);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static char *read_bytes(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  rewind(f);
  char *b = malloc(*len + 1);
  ck_assert_uint_eq(fread(b, 1, *len, f), *len);
  fclose(f);
  return b;
}

static void write_bytes(const char *path, const char *b, size_t len) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, len, f), len);
  fclose(f);
}

// What opening b (len bytes) says: -EINVAL and a message naming the file and the field.
static void refused(const char *path, const char *b, size_t len, const char *field) {
  write_bytes(path, b, len);
  memstub_stub_data *d = (memstub_stub_data *)1;
  memstub_error err = {0};
  int rc = memstub_stub_data_open(path, &d, &err);
  ck_assert_msg(rc == -EINVAL, "%zu bytes, want %s: rc %d", len, field, rc);
  ck_assert_ptr_null(d);
  ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);
  ck_assert_msg(strstr(err.msg, field) != NULL, "want '%s': %s", field, err.msg);
}

/* A damaged or truncated data file is refused at open, naming the file and the
 * field: every truncation, a flipped byte in each part, bytes appended, a
 * newer version, another byte order. */
START_TEST(test_data_damage_refused) {
  char *dir = tu_mkdtemp();
  char path[4096], bad[4096];
  snprintf(path, sizeof path, "%s/s.msd", dir);
  snprintf(bad, sizeof bad, "%s/bad.msd", dir);
  memstub_gen *g = resident_gen(400);
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_emit_data(g, path, &err) == 0, "%s", err.msg);
  size_t len;
  char *b = read_bytes(path, &len);
  ck_assert_uint_eq(len % 64, 0);
  memstub_stub_data *d = NULL;
  ck_assert_int_eq(memstub_stub_data_open(path, &d, &err), 0);
  size_t arr[4] = {(size_t)((const char *)d->stub.use - (const char *)d->map),
                   (size_t)((const char *)d->stub.point - (const char *)d->map),
                   (size_t)((const char *)d->stub.mapped - (const char *)d->map),
                   (size_t)((const char *)d->stub.rss - (const char *)d->map)};
  memstub_stub_data_free(d);
  // Truncated anywhere (the empty file, within the head, within the arrays).
  const size_t cut[] = {0, 5, 8, 100, 255, 256, 300, arr[0] + 8, arr[3] + 1, len - 1};
  for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++)
    refused(bad, b, cut[i], cut[i] < 8 ? "magic" : cut[i] < 256 ? "head" : "file_size");
  // Bytes appended.
  char *longer = malloc(len + 8);
  memcpy(longer, b, len);
  memset(longer + len, 0, 8);
  refused(bad, longer, len + 8, "file_size");
  free(longer);
  // One flipped byte in each part.
  const struct {
    size_t at;
    const char *field;
  } flip[] = {{0, "magic"},   {26, "file_size"},     {60, "head_sum"}, {260, "head_sum"},
              {arr[0] + 3, "array use"}, {arr[1] + 17, "array point"},
              {arr[2] + 8, "array mapped"}, {arr[3] + 400 * 8 - 1, "array rss"}};
  for (size_t i = 0; i < sizeof flip / sizeof flip[0]; i++) {
    b[flip[i].at] ^= 0x10;
    refused(bad, b, len, flip[i].field);
    b[flip[i].at] ^= 0x10;
  }
  b[8] = 2;  // version 2
  refused(bad, b, len, "version");
  b[8] = 1;
  char order[8];
  memcpy(order, b + 16, 8);
  for (int i = 0; i < 8; i++) b[16 + i] = order[7 - i];
  refused(bad, b, len, "order");
  memcpy(b + 16, order, 8);
  // Unchanged, it opens.
  write_bytes(bad, b, len);
  ck_assert_int_eq(memstub_stub_data_open(bad, &d, &err), 0);
  memstub_stub_data_free(d);
  ck_assert_int_lt(memstub_stub_data_open(dir, &d, &err), 0);  // a directory
  ck_assert_ptr_null(d);
  free(b);
  memstub_gen_free(g);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static uint64_t get64(const char *b, size_t at) {
  uint64_t v;
  memcpy(&v, b + at, 8);
  return v;
}
static void put64(char *b, size_t at, uint64_t v) { memcpy(b + at, &v, 8); }
static uint32_t get32(const char *b, size_t at) {
  uint32_t v;
  memcpy(&v, b + at, 4);
  return v;
}
static void put32(char *b, size_t at, uint32_t v) { memcpy(b + at, &v, 4); }

/* Files that pass every checksum but not the structure: refused naming the
 * field (forged with the documented layout and checksum). */
START_TEST(test_data_structure_refused) {
  char *dir = tu_mkdtemp();
  char path[4096], bad[4096];
  snprintf(path, sizeof path, "%s/s.msd", dir);
  snprintf(bad, sizeof bad, "%s/bad.msd", dir);
  memstub_gen *g = resident_gen(300);
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_emit_data(g, path, &err) == 0, "%s", err.msg);
  memstub_gen_free(g);
  size_t len;
  char *orig = read_bytes(path, &len);
  char *b = malloc(len);
  const size_t table = (size_t)get64(orig, 160);
  ck_assert_uint_eq(get32(orig, 32), 4);  // use, point, mapped, rss
  // Resealed unchanged, it opens: the forging is right.
  memcpy(b, orig, len);
  tu_data_reseal(b, len);
  write_bytes(bad, b, len);
  memstub_stub_data *d = NULL;
  ck_assert_msg(memstub_stub_data_open(bad, &d, &err) == 0, "%s", err.msg);
  memstub_stub_data_free(d);
  for (int k = 0; k < 9; k++) {
    memcpy(b, orig, len);
    const char *want = NULL;
    switch (k) {
      case 0:  // a count so large that count x elem wraps around 64 bits
        put64(b, 48, UINT64_C(1) << 61);
        for (int i = 0; i < 4; i++) put64(b, table + (size_t)i * 48 + 24, UINT64_C(1) << 61);
        want = "array use: 2305843009213693952 elements of 24 bytes do not fit";
        break;
      case 1: memcpy(b + table + 48 * 2, "heat\0\0", 6); want = "array heat: unknown"; break;
      case 2: put32(b, table + 16, 16); want = "array use: 16 bytes an element, expected 24"; break;
      case 3: put64(b, table + 48 + 24, 299); want = "array point: 299 elements, numdata is"; break;
      case 4: put64(b, table + 32, get64(b, table + 32) + 8); want = "array use: "; break;
      case 5: memcpy(b + table + 48, b + table, 48); want = "array use: given twice"; break;
      case 6: put32(b, 40, 1); want = "array mapped: not part of data layout 1"; break;
      case 7: put32(b, 32, 3); want = "array rss: missing"; break;
      case 8: put32(b, 40, 7); want = "abi: the stub has data layout 7"; break;
    }
    tu_data_reseal(b, len);
    refused(bad, b, len, want);
  }
  free(b);
  free(orig);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Through the commands: a truncated data file makes replay and build exit 2,
 * naming the file and the field, with nothing replayed (no measured trace)
 * and no program; the options that cannot go with --data are refused. */
START_TEST(test_data_cli_refused) {
  char *dir = tu_mkdtemp();
  char csv[4096], p[4096];
  snprintf(csv, sizeof csv, "%s/t.csv", dir);
  memstub_trace *t = make_trace(500, 4);
  memstub_error err = {0};
  ck_assert_int_eq(memstub_trace_write(t, csv, &err), 0);
  memstub_trace_free(t);
  tu_run r = tu_memstub(dir, "gen", "t.csv", "--data", "s.msd", NULL);
  run_ok(&r, "gen --data");
  ck_assert_ptr_nonnull(strstr(r.err, "s.msd"));
  tu_run_free(&r);
  snprintf(p, sizeof p, "%s/s.msd", dir);
  size_t len;
  char *b = read_bytes(p, &len);
  snprintf(p, sizeof p, "%s/cut.msd", dir);
  write_bytes(p, b, len / 2);
  free(b);
  r = tu_memstub(dir, "replay", "--data", "cut.msd", "--measure", "m.csv", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "cut.msd: file_size:") && strstr(r.err, "truncated"), "%s", r.err);
  tu_run_free(&r);
  snprintf(p, sizeof p, "%s/m.csv", dir);
  ck_assert_int_eq(tu_exists(p), 0);
  r = tu_memstub(dir, "build", "--data", "cut.msd", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "cut.msd: file_size:"));
  tu_run_free(&r);
  snprintf(p, sizeof p, "%s/cut", dir);
  ck_assert_int_eq(tu_exists(p), 0);
  // A program built from a good file refuses a bad one given with --data.
  r = tu_memstub(dir, "build", "--data", "s.msd", NULL);
  run_ok(&r, "build --data");
  tu_run_free(&r);
  snprintf(p, sizeof p, "%s/s", dir);
  char *argv[] = {p, "--data", "cut.msd", "--measure", "m.csv", NULL};
  r = tu_exec(dir, argv);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "cut.msd: file_size:") != NULL, "%s", r.err);
  tu_run_free(&r);
  snprintf(p, sizeof p, "%s/m.csv", dir);
  ck_assert_int_eq(tu_exists(p), 0);
  char *chk[] = {(char *)"", "--check", NULL};
  snprintf(p, sizeof p, "%s/s", dir);
  chk[0] = p;
  r = tu_exec(dir, chk);
  run_ok(&r, "stub --check");
  tu_run_free(&r);
  // Usage errors.
  const struct {
    const char *argv[8];
    const char *why;
  } bad[] = {
      {{"replay", "t.csv", "--data", "s.msd"}, "replaces TRACE"},
      {{"replay", "--data", "s.msd", "--time-scale", "2"}, "what-ifs apply"},
      {{"replay", "--data", "s.msd", "-c", "x.profile"}, "--calibration applies"},
      {{"gen", "t.csv", "--data", "x.msd", "-o", "x.h"}, "drop -o"},
      {{"gen", "t.csv", "--data", "x.msd", "--format", "compact"}, "drop --format"},
      {{"build", "x.h", "--data", "s.msd"}, "replaces HEADER"},
      {{"build", "--data", "s.data"}, "-o is needed"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *const *a = bad[i].argv;
    r = tu_memstub(dir, a[0], a[1], a[2], a[3], a[4], a[5], a[6], NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, bad[i].why) != NULL, "%s: %s", a[0], r.err);
    tu_run_free(&r);
  }
  snprintf(p, sizeof p, "%s/x.msd", dir);
  ck_assert_int_eq(tu_exists(p), 0);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* ---- the measurement records ------------------------------------------------- */

// VmSize of this process, bytes.
static uint64_t vm_size(void) {
  FILE *f = fopen("/proc/self/status", "r");
  ck_assert_ptr_nonnull(f);
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %llu kB", &kb) == 1) break;
  fclose(f);
  ck_assert_uint_gt(kb, 0);
  return (uint64_t)kb * 1024;
}

/* --measure's records are sized before the replay: numdata x the record,
 * and a process whose address space cannot hold them is refused up front,
 * with a message that says so, while the same replay without measuring
 * passes the check. In a child with a lowered RLIMIT_AS. */
START_TEST(test_measure_refused_up_front) {
#if defined(MEMSTUB_SANITIZED)
  return;  // the sanitizers reserve terabytes of address space: RLIMIT_AS cannot be lowered
#endif
  memstub_gen *g = gen_points(1000000);
  memstub_replay_options o;
  memstub_replay_options_init(&o);
  ck_assert_int_eq(memstub_replay_measure_bytes(&g->stub, &o), 0);
  o.measure = MEMSTUB_MEASURE_TRACE;
  int64_t bytes = memstub_replay_measure_bytes(&g->stub, &o);
  ck_assert_int_eq(bytes, 1000000 * (int64_t)sizeof(memstub_replay_record));
  ck_assert_int_le(sizeof(memstub_replay_record), 160);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    // Room for the heap, the replay stack and the malloc arena (64 MiB), not the 128 MB of records.
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = vm_size() + ((uint64_t)96 << 20);
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(10);
    memstub_error err = {0};
    memstub_replay_options plain;
    memstub_replay_options_init(&plain);
    if (memstub_replay_check(&g->stub, &plain, NULL, &err) != 0) {
      dprintf(fds[1], "without measuring: %s", err.msg);
      _exit(11);
    }
    memstub_replay *r = NULL;
    int64_t t0 = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t0 = ts.tv_sec * 1000000000LL + ts.tv_nsec;
    int rc = memstub_replay_run(&g->stub, &o, &r, &err);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t took = ts.tv_sec * 1000000000LL + ts.tv_nsec - t0;
    dprintf(fds[1], "%s", err.msg);
    // Refused at once: the replay (1 s of points) never started.
    _exit(rc == -ENOMEM && !r ? (took < 500000000 ? 0 : 13) : 12);
  }
  close(fds[1]);
  char msg[2048] = "";
  ssize_t k, n = 0;
  while ((k = read(fds[0], msg + n, sizeof msg - 1 - (size_t)n)) > 0) n += k;
  close(fds[0]);
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d: %s", st, msg);
  char want[128];
  snprintf(want, sizeof want, "measuring needs %lld bytes for the records (%zu bytes a point)",
           (long long)bytes, sizeof(memstub_replay_record));
  ck_assert_msg(strstr(msg, want) != NULL, "want '%s': %s", want, msg);
  ck_assert_msg(strstr(msg, "RLIMIT_AS") != NULL, "%s", msg);
  memstub_gen_free(g);
}
END_TEST

/* The same through the command: memstub replay --data --measure under
 * ulimit -v exits 2 before replaying, naming the records; nothing written. */
START_TEST(test_measure_refused_cli) {
#if defined(MEMSTUB_SANITIZED)
  return;
#endif
  char *dir = tu_mkdtemp();
  memstub_gen *g = gen_points(2000000);  // 256 MB of records, a 64 MB data file
  char p[4096];
  snprintf(p, sizeof p, "%s/s.msd", dir);
  memstub_error err = {0};
  ck_assert_msg(memstub_gen_emit_data(g, p, &err) == 0, "%s", err.msg);
  memstub_gen_free(g);
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "ulimit -v 220000; exec '%s' replay --data s.msd --measure m.csv",
           getenv("MEMSTUB_EXE"));
  char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  tu_run r = tu_exec(dir, argv);
  ck_assert_int_eq(r.status, 2);
  char want[128];
  snprintf(want, sizeof want, "s.msd: measuring needs %lld bytes for the records",
           2000000LL * (long long)sizeof(memstub_replay_record));
  ck_assert_msg(strstr(r.err, want) != NULL, "want '%s': %s", want, r.err);
  tu_run_free(&r);
  snprintf(p, sizeof p, "%s/m.csv", dir);
  ck_assert_int_eq(tu_exists(p), 0);
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
  tcase_add_test(tc, test_data_roundtrip);
  tcase_add_test(tc, test_data_damage_refused);
  tcase_add_test(tc, test_data_cli_refused);
  tcase_add_test(tc, test_data_structure_refused);
  tcase_add_test(tc, test_measure_refused_up_front);
  tcase_add_test(tc, test_measure_refused_cli);
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
