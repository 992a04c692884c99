// memstub import: massif and memusage files, real ones (fixtures made by the
// tools, and made live when the tools are installed) and malformed ones.
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memstub/import.h"
#include "testutil.h"

static char fixture[4096];
static const char *fx(const char *name) {
  snprintf(fixture, sizeof fixture, "%s", tu_src("tests/fixtures/import"));
  size_t l = strlen(fixture);
  snprintf(fixture + l, sizeof fixture - l, "/%s", name);
  return fixture;
}

// The whole file, into a new buffer; 0 or -1.
static int ms_read_fixture(const char *path, char **buf, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  size_t got;
  while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *nb = realloc(b, cap *= 2);
      if (!nb) free(b);
      b = nb;
    }
  }
  fclose(f);
  if (!b) return -1;
  *buf = b;
  *len = n;
  return 0;
}

static int64_t peak(const memstub_trace *t, int heap) {
  int64_t m = 0;
  for (size_t i = 0; i < t->n; i++) {
    int64_t v = heap ? t->pts[i].heap_bytes : t->pts[i].stack_bytes;
    if (v > m) m = v;
  }
  return m;
}

START_TEST(test_massif_ms) {
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_massif(fx("mu_prog.massif"), NULL, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(peak(t, 1), 64100);
  ck_assert_int_ge(peak(t, 0), 100 * 512);
  ck_assert_str_eq(memstub_trace_get_meta(t, "source"), "massif");
  ck_assert_str_eq(memstub_trace_get_meta(t, "massif.time_unit"), "ms");
  ck_assert_int_ge(memstub_trace_column(t, "heap_extra_bytes"), 0);
  for (size_t i = 0; i < t->n; i++) ck_assert_int_eq(t->pts[i].time_ns % 1000000, 0);
  memstub_error verr;
  ck_assert_int_eq(memstub_trace_validate(t, &verr), 0);
  memstub_trace_free(t);
}
END_TEST

START_TEST(test_massif_instructions) {
  memstub_trace *t;
  memstub_error err;
  ck_assert_int_eq(memstub_import_massif(fx("mu_prog.i.massif"), NULL, &t, &err), -EINVAL);
  ck_assert_ptr_null(t);
  ck_assert_ptr_nonnull(strstr(err.msg, "mu_prog.i.massif:3:12: time_unit 'i'"));
  ck_assert_ptr_nonnull(strstr(err.msg, "--ns-per-unit"));
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.ns_per_unit = 0.5;
  ck_assert_msg(memstub_import_massif(fx("mu_prog.i.massif"), &o, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(peak(t, 1), 64100);
  ck_assert_int_eq(peak(t, 0), 0);  // no --stacks=yes
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "massif.stacks"), "not measured"));
  // The zeros are not a flat stack: the stack is marked unknown.
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "stack"));
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "stack"), "unknown (massif ran without --stacks=yes)"));
  memstub_trace_free(t);
  ck_assert_int_eq(memstub_import_massif(fx("mu_prog.massif"), NULL, &t, &err), 0);
  ck_assert_ptr_null(memstub_trace_get_meta(t, "stack"));  // measured: no marker
  ck_assert_ptr_null(memstub_trace_get_meta(t, "heap"));
  memstub_trace_free(t);
  // The command: refused with exit 2, accepted with the conversion.
  char *dir = tu_mkdtemp();
  char out[4096];
  snprintf(out, sizeof out, "%s/m.csv", dir);
  char src[4096];
  snprintf(src, sizeof src, "%s", fx("mu_prog.i.massif"));
  tu_run r = tu_memstub(NULL, "import", "massif", src, "-o", out, NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "memstub: error: "));
  ck_assert_int_eq(tu_count_entries(dir), 0);
  tu_run_free(&r);
  r = tu_memstub(NULL, "import", "massif", src, "-o", out, "--ns-per-unit", "0.5", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "memstub: warning: ") && strstr(r.err, "stack: unknown"), "%s", r.err);
  // Instructions converted by the user's figure: no word on valgrind's time.
  ck_assert_msg(!strstr(r.err, "under valgrind"), "%s", r.err);
  tu_run_free(&r);
  ck_assert_int_eq(tu_count_entries(dir), 1);
  // massif's milliseconds are valgrind's: said, with the scale to undo it.
  r = tu_memstub(NULL, "import", "massif", fx("sort.heap.massif"), "-o", out, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "the times are the run's under valgrind") &&
                    strstr(r.err, "--time-scale NATIVE_SECONDS/"),
                "%s", r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

#define SNAP(n, t, h, s) \
  "#-----------\nsnapshot=" #n "\n#-----------\ntime=" #t "\nmem_heap_B=" #h \
  "\nmem_heap_extra_B=0\nmem_stacks_B=" #s "\nheap_tree=empty\n"
#define HEAD "desc: --stacks=yes\ncmd: ./x\ntime_unit: ms\n"

static const struct bad {
  const char *what, *text, *msg;
} bad_massif[] = {
    {"empty", "", "m:1:1: empty file"},
    {"header only", HEAD, "m:4:1: no snapshots"},
    {"not massif", "hello\n", "m:1:1: not a massif output"},
    {"no time unit", "desc: x\n" SNAP(0, 0, 0, 0), "m:2:1: missing 'time_unit:'"},
    {"unknown unit", "time_unit: s\n" SNAP(0, 0, 0, 0), "m:1:12: unknown time_unit 's'"},
    {"truncated line", HEAD SNAP(0, 0, 0, 0) "#-----------\nsnapshot=1\n#-----------\ntime=5",
     "m:15:7: truncated last line"},
    {"truncated snapshot", HEAD SNAP(0, 0, 0, 0) "#-----------\nsnapshot=1\n#-----------\ntime=5\n",
     "m:16:1: truncated: snapshot 1 ends before 'mem_heap_B='"},
    {"out of sequence", HEAD SNAP(0, 0, 0, 0) SNAP(2, 1, 0, 0),
     "m:13:10: snapshot 2 out of sequence (expected 1)"},
    {"bad number", HEAD "#-----------\nsnapshot=0\n#-----------\ntime=0\nmem_heap_B=12x\n",
     "m:8:12: mem_heap_B: expected a non-negative integer, found '12x'"},
    {"negative", HEAD "#-----------\nsnapshot=0\n#-----------\ntime=0\nmem_heap_B=-1\n",
     "m:8:12: mem_heap_B: expected a non-negative integer"},
    {"decreasing time", HEAD SNAP(0, 5, 0, 0) SNAP(1, 4, 0, 0),
     "m:15:6: snapshot 1: time decreases from 5 to 4"},
    {"missing tree", HEAD "#-----------\nsnapshot=0\n#-----------\ntime=0\nmem_heap_B=1\n"
                     "mem_heap_extra_B=0\nmem_stacks_B=0\n",
     "m:11:1: truncated: snapshot 0 has no 'heap_tree=' line"},
    // Found by tests/fuzz/fuzz_massif: messages quote the file's text with
    // control characters as '?', and name a line and a column that exist.
    {"control characters quoted", "\x1b[31mhello\n",
     "m:1:1: not a massif output: expected 'desc:', 'cmd:' or 'time_unit:', found '?[31mhello'"},
    {"control character in a number", HEAD "#-----------\nsnapshot=0\n#-----------\ntime=0\r5\n",
     "m:7:6: time: expected a non-negative integer, found '0?5'"},
    {"time_unit without a space", "time_unit:\n" SNAP(0, 0, 0, 0),
     "m:1:11: unknown time_unit '' (expected i, ms or B)"},
    {"time beyond 64-bit ns", HEAD SNAP(0, 0, 0, 0) SNAP(1, 9300000000000, 0, 0),
     "m:15:6: snapshot 1: time 9300000000000 does not fit in 64-bit ns"},
    // Was accepted as a trace without rows, which no writer takes.
    {"separator, then nothing", HEAD "#-----------\n", "m:5:1: no snapshots"},
};

START_TEST(test_massif_refusals) {
  const struct bad *b = &bad_massif[_i];
  memstub_trace *t = (memstub_trace *)1;
  memstub_error err = {0};
  int rc = memstub_import_massif_parse("m", b->text, strlen(b->text), NULL, &t, &err);
  ck_assert_msg(rc == -EINVAL, "%s: rc %d", b->what, rc);
  ck_assert_ptr_null(t);
  ck_assert_msg(strncmp(err.msg, b->msg, strlen(b->msg)) == 0, "%s: got '%s', want '%s'", b->what,
                err.msg, b->msg);
}
END_TEST

/* What massif measured comes from the options in desc; the last one given
 * counts, as in valgrind. Before: "--stacks=yes --stacks=no" was taken as a
 * measured stack, and --heap=no or --pages-as-heap=yes were not said. */
static const struct massif_opts {
  const char *desc, *stack, *heap, *heap_measure;
} massif_opts[] = {
    {"--stacks=yes", NULL, NULL, "bytes requested"},
    {"--stacks=no", "unknown (massif ran without --stacks=yes)", NULL, "bytes requested"},
    {"--stacks=yes --stacks=no", "unknown (massif ran without --stacks=yes)", NULL, "bytes requested"},
    {"--stacks=no --stacks=yes", NULL, NULL, "bytes requested"},
    {"--xstacks=yes", "unknown (massif ran without --stacks=yes)", NULL, "bytes requested"},
    {"--stacks=yes --heap=no", NULL, "unknown (massif ran with --heap=no)", "not measured"},
    {"--pages-as-heap=yes", "unknown (massif ran without --stacks=yes)",
     "unknown (massif ran with --pages-as-heap=yes", "pages mapped"},
};

START_TEST(test_massif_measured) {
  const struct massif_opts *m = &massif_opts[_i];
  char text[1024];
  snprintf(text, sizeof text, "desc: %s\ncmd: ./x\ntime_unit: ms\n%s", m->desc,
           SNAP(0, 0, 0, 0) SNAP(1, 3, 0, 0));
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_massif_parse("m", text, strlen(text), NULL, &t, &err) == 0, "%s",
                err.msg);
  const char *stack = memstub_trace_get_meta(t, "stack"), *heap = memstub_trace_get_meta(t, "heap");
  if (m->stack)
    ck_assert_msg(stack && strncmp(stack, m->stack, strlen(m->stack)) == 0, "%s: stack '%s'", m->desc,
                  stack ? stack : "(none)");
  else
    ck_assert_msg(stack == NULL, "%s: stack '%s'", m->desc, stack);
  if (m->heap)
    ck_assert_msg(heap && strncmp(heap, m->heap, strlen(m->heap)) == 0, "%s: heap '%s'", m->desc,
                  heap ? heap : "(none)");
  else
    ck_assert_msg(heap == NULL, "%s: heap '%s'", m->desc, heap);
  const char *hm = memstub_trace_get_meta(t, "massif.heap_measure");
  ck_assert_msg(hm && strncmp(hm, m->heap_measure, strlen(m->heap_measure)) == 0, "%s: '%s'",
                m->desc, hm ? hm : "(none)");
  memstub_trace_free(t);
}
END_TEST

// Values in the file win over its options: a column with values is measured.
START_TEST(test_massif_values_win) {
  const char *text = "desc: --heap=no --stacks=no\ncmd: ./x\ntime_unit: ms\n" SNAP(0, 0, 0, 0)
      SNAP(1, 3, 200, 1024);
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_massif_parse("m", text, strlen(text), NULL, &t, &err) == 0, "%s",
                err.msg);
  ck_assert_ptr_null(memstub_trace_get_meta(t, "stack"));
  ck_assert_ptr_null(memstub_trace_get_meta(t, "heap"));
  memstub_trace_free(t);
}
END_TEST

/* A detailed snapshot's heap tree totals its mem_heap_B: a file where they
 * disagree (edited or damaged) is imported with massif.inconsistent and a
 * warning; it was imported without a word. The real files agree. */
START_TEST(test_massif_inconsistent_tree) {
  memstub_trace *t;
  memstub_error err;
  ck_assert_int_eq(memstub_import_massif(fx("mu_prog.massif"), NULL, &t, &err), 0);
  ck_assert_ptr_null(memstub_trace_get_meta(t, "massif.inconsistent"));
  memstub_trace_free(t);
  const char *text = HEAD SNAP(0, 0, 0, 0)
      "#-----------\nsnapshot=1\n#-----------\ntime=3\nmem_heap_B=64100\n"
      "mem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=peak\n"
      "n2: 64000 (heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n"
      " n0: 64000 0x1091D8: main (in /tmp/mu/mu_prog)\n";
  ck_assert_msg(memstub_import_massif_parse("m", text, strlen(text), NULL, &t, &err) == 0, "%s",
                err.msg);
  const char *why = memstub_trace_get_meta(t, "massif.inconsistent");
  ck_assert_ptr_nonnull(why);
  ck_assert_str_eq(why, "line 20: snapshot 1 has mem_heap_B=64100 but its heap tree totals 64000 "
                        "(an edited or damaged file?)");
  ck_assert_int_eq(t->pts[1].heap_bytes, 64100);  // the totals are still imported
  memstub_trace_free(t);
  // The command warns.
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/bad.massif", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
  tu_run r = tu_memstub(NULL, "import", "massif", path, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "memstub: warning: ") && strstr(r.err, "massif.inconsistent: line 20"),
                "%s", r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_massif_minimal) {
  const char *text = HEAD SNAP(0, 0, 0, 0) SNAP(1, 3, 200, 1024);
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_massif_parse("m", text, strlen(text), NULL, &t, &err) == 0, "%s",
                err.msg);
  ck_assert_int_eq(t->n, 2);
  ck_assert_int_eq(t->pts[1].time_ns, 3000000);
  ck_assert_int_eq(t->pts[1].stack_bytes, 1024);
  ck_assert_int_eq(t->pts[1].heap_bytes, 200);
  memstub_trace_free(t);
}
END_TEST

// Every row's stack is 0.
static int stack_all_zero(const memstub_trace *t) {
  for (size_t i = 0; i < t->n; i++)
    if (t->pts[i].stack_bytes != 0) return 0;
  return 1;
}

/* mu_prog.memusage (glibc 2.36, inverted): its 64 blocks at main's level and
 * the one at the bottom of the recursion all read 0, then main's frees read
 * the peak. Corrected, the 64 shallow calls would sit at the deepest point:
 * the curve is degenerate, so auto imports the stack as unknown. Told
 * "inverted", the correction is applied, with a warning. */
START_TEST(test_memusage_inverted_fixture) {
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_memusage(fx("mu_prog.memusage"), NULL, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(t->n, 131);  // the start plus 130 records
  ck_assert_int_eq(peak(t, 1), 64100);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.stack_curve"), "unknown (a degenerate"));
  ck_assert(stack_all_zero(t));
  memstub_trace_free(t);

  memstub_import_options o;
  memstub_import_options_init(&o);
  o.stack_curve = MEMSTUB_STACK_INVERTED;
  ck_assert_msg(memstub_import_memusage(fx("mu_prog.memusage"), &o, &t, &err) == 0, "%s", err.msg);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.stack_curve"), "inverted"));
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.stack_degenerate"),
                               "imported inverted as told"));
  ck_assert_ptr_null(memstub_trace_get_meta(t, "stack"));
  // Corrected: the call at the bottom of the recursion is the deepest.
  for (size_t i = 1; i < t->n; i++)
    if (t->pts[i].heap_bytes == 64100) ck_assert_int_ge(t->pts[i].stack_bytes, 100 * 512);
  ck_assert_int_ge(peak(t, 0), 100 * 512);
  int64_t last = -1;
  for (size_t i = 0; i < t->n; i++) {
    ck_assert_int_ge(t->pts[i].time_ns, last);
    last = t->pts[i].time_ns;
  }
  memstub_trace_free(t);
  // Told otherwise, the values stay as recorded.
  o.stack_curve = MEMSTUB_STACK_NORMAL;
  o.cycles_per_ns = 2.0;
  ck_assert_int_eq(memstub_import_memusage(fx("mu_prog.memusage"), &o, &t, &err), 0);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.stack_curve"), "normal (as told"));
  for (size_t i = 1; i < t->n; i++)
    if (t->pts[i].heap_bytes == 64100) ck_assert_int_eq(t->pts[i].stack_bytes, 0);
  memstub_trace_free(t);
  // The command says so.
  char *dir = tu_mkdtemp();
  char out[4096], src[4096];
  snprintf(out, sizeof out, "%s/u.csv", dir);
  snprintf(src, sizeof src, "%s", fx("mu_prog.memusage"));
  tu_run r = tu_memstub(NULL, "import", "memusage", src, "-o", out, "--stack-curve", "inverted", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "upside down"));
  ck_assert_ptr_nonnull(strstr(r.err, "memstub: warning: "));
  ck_assert_ptr_nonnull(strstr(r.err, "memusage.stack_degenerate: degenerate stack curve"));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* Issue 12 item 6: rec_prog (200 levels of 1 KiB frames, 100 bytes allocated
 * at each, freed from main) under glibc 2.36's memusage stores two stack
 * values: 0 for all 200 calls of the descent, 208016 for main's frees. Read
 * inverted (detected) it was flat at the peak through the descent and 0
 * after; read normal, the reverse; the real curve climbs 1 KiB per level. It
 * is imported as unknown: stack 0, "stack: unknown (...)", and a warning. */
START_TEST(test_memusage_degenerate_fixture) {
  memstub_trace *t;
  memstub_error err = {0}, verr;
  ck_assert_msg(memstub_import_memusage(fx("rec_prog.memusage"), NULL, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(t->n, 401);
  ck_assert_int_eq(peak(t, 1), 20000);
  ck_assert_msg(stack_all_zero(t), "a wrong curve was imported: row 100 has stack %lld",
                (long long)t->pts[100].stack_bytes);
  const char *stack = memstub_trace_get_meta(t, "stack");
  ck_assert_ptr_nonnull(stack);
  ck_assert_str_eq(stack, "unknown (memusage recorded a degenerate stack curve: 400 allocation "
                          "records take 2 distinct stack values, and 200 allocations nest "
                          "without moving it); stack_bytes are 0");
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.stack_curve"), "unknown ("));
  ck_assert_ptr_null(memstub_trace_get_meta(t, "memusage.inconsistent"));
  ck_assert_int_eq(memstub_trace_validate(t, &verr), 0);
  memstub_trace_free(t);

  // --stack-curve none: the same zeros, said to be not imported.
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.stack_curve = MEMSTUB_STACK_NONE;
  ck_assert_int_eq(memstub_import_memusage(fx("rec_prog.memusage"), &o, &t, &err), 0);
  ck_assert(stack_all_zero(t));
  ck_assert_str_eq(memstub_trace_get_meta(t, "stack"),
                   "unknown (not imported: --stack-curve none); stack_bytes are 0");
  ck_assert_str_eq(memstub_trace_get_meta(t, "memusage.stack_curve"),
                   "none (as told: the stack is not imported)");
  memstub_trace_free(t);
  // An explicit direction is obeyed, and doubted.
  o.stack_curve = MEMSTUB_STACK_NORMAL;
  ck_assert_int_eq(memstub_import_memusage(fx("rec_prog.memusage"), &o, &t, &err), 0);
  ck_assert_int_eq(peak(t, 0), 208016);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.stack_degenerate"),
                               "imported normal as told, but it may be an inverted recording"));
  memstub_trace_free(t);

  // The command: a warning on stderr, the marker in the file, exit 0.
  char *dir = tu_mkdtemp();
  char out[4096], src[4096];
  snprintf(out, sizeof out, "%s/r.csv", dir);
  snprintf(src, sizeof src, "%s", fx("rec_prog.memusage"));
  tu_run r = tu_memstub(NULL, "import", "memusage", src, "-o", out, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "memstub: warning: ") && strstr(r.err, "stack: unknown (memusage recorded a degenerate"),
                "%s", r.err);
  ck_assert_ptr_null(strstr(r.err, "upside down"));
  tu_run_free(&r);
  ck_assert_int_eq(memstub_trace_read(out, &t, &err), 0);
  ck_assert(stack_all_zero(t));
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "stack"), "unknown"));
  memstub_trace_free(t);
  r = tu_memstub(NULL, "import", "memusage", src, "-o", out, "--stack-curve", "none", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "stack: unknown (not imported"));
  tu_run_free(&r);
  r = tu_memstub(NULL, "import", "memusage", src, "-o", out, "--stack-curve", "flat", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "expected auto, normal, inverted or none"));
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static void put(unsigned char *p, uint64_t heap, uint64_t stack, uint64_t time) {
  uint32_t lo = (uint32_t)time, hi = (uint32_t)(time >> 32);
  memcpy(p, &heap, 8);
  memcpy(p + 8, &stack, 8);
  memcpy(p + 16, &lo, 4);
  memcpy(p + 20, &hi, 4);
}

START_TEST(test_memusage_synthetic) {
  unsigned char buf[24 * 6];
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.time_unit = MEMSTUB_TIME_US;
  // A normal curve: shallow calls, one deep one.
  put(buf, 0, 5100, 1000);
  put(buf + 24, 300, 5000, 1010);
  put(buf + 48, 100, 100, 1001);
  put(buf + 72, 300, 5000, 1003);
  put(buf + 96, 200, 120, 1002);  // out of order: sorted by time
  put(buf + 120, 0, 100, 1004);
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_memusage_parse("u", buf, sizeof buf, &o, &t, &err) == 0, "%s", err.msg);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.stack_curve"), "normal (detected"));
  ck_assert_int_eq(t->n, 5);
  ck_assert_int_eq(t->pts[2].time_ns, 2000);
  ck_assert_int_eq(t->pts[2].heap_bytes, 200);
  ck_assert_int_eq(t->pts[3].stack_bytes, 5000);
  memstub_trace_free(t);
  // Incomplete (header never rewritten): accepted, said so.
  put(buf + 24, 0, 0, 1000);
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, sizeof buf, &o, &t, &err), 0);
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "memusage.incomplete"));
  memstub_trace_free(t);
  // Refusals.
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, 0, &o, &t, &err), -EINVAL);
  ck_assert_str_eq(err.msg, "u: empty file: not a memusage data file");
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, 24 * 3 + 7, &o, &t, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "u: byte offset 72: truncated"));
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, 24, &o, &t, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "two 24-byte header records"));
  put(buf, 7, 0, 1000);
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, sizeof buf, &o, &t, &err), -EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "u: byte offset 0: not a memusage data file"));
  ck_assert_ptr_null(t);
}
END_TEST

/* The degenerate criterion (docs/recording.md) on synthetic files: the
 * allocation records as (heap, stack) pairs after the two header records;
 * heap grows by 100 per allocation. */
static const struct degen_case {
  const char *what;
  int degenerate;
  size_t n;
  uint64_t rec[20][2];
} degen_cases[] = {
    {"a descent stored as 0s, freed from the top", 1, 16,
     {{100, 0}, {200, 0}, {300, 0}, {400, 0}, {500, 0}, {600, 0}, {700, 0}, {800, 0},
      {700, 9000}, {600, 9000}, {500, 9000}, {400, 9000}, {300, 9000}, {200, 9000}, {100, 9000}, {0, 9000}}},
    {"the same with a third value", 1, 16,
     {{100, 0}, {200, 0}, {300, 0}, {400, 0}, {500, 0}, {600, 0}, {700, 0}, {800, 0},
      {700, 16}, {600, 9000}, {500, 9000}, {400, 9000}, {300, 9000}, {200, 9000}, {100, 9000}, {0, 9000}}},
    {"one value throughout", 1, 8,
     {{100, 0}, {200, 0}, {300, 0}, {400, 0}, {300, 0}, {200, 0}, {100, 0}, {0, 0}}},
    {"too few records to tell", 0, 7,
     {{100, 0}, {200, 0}, {300, 0}, {400, 0}, {300, 900}, {200, 900}, {100, 900}}},
    {"nested allocations move the stack", 0, 16,
     {{100, 0}, {200, 0}, {300, 0}, {400, 0}, {500, 9000}, {600, 0}, {700, 0}, {800, 0},
      {700, 9000}, {600, 9000}, {500, 9000}, {400, 9000}, {300, 9000}, {200, 9000}, {100, 9000}, {0, 9000}}},
    {"four distinct values", 0, 16,
     {{100, 0}, {200, 0}, {300, 0}, {400, 0}, {500, 0}, {600, 0}, {700, 0}, {800, 0},
      {700, 100}, {600, 200}, {500, 9000}, {400, 9000}, {300, 9000}, {200, 9000}, {100, 9000}, {0, 9000}}},
    {"no nesting: allocate, free, allocate", 0, 10,
     {{100, 0}, {0, 500}, {100, 0}, {0, 500}, {100, 0}, {0, 500}, {100, 0}, {0, 500}, {100, 0}, {0, 500}}},
    {"a climbing curve (correct glibc)", 0, 10,
     {{100, 1000}, {200, 2000}, {300, 3000}, {400, 4000}, {500, 5000}, {400, 100}, {300, 100},
      {200, 100}, {100, 100}, {0, 100}}},
};

START_TEST(test_memusage_degenerate_criterion) {
  const struct degen_case *c = &degen_cases[_i];
  unsigned char buf[24 * 22];
  uint64_t maxh = 0, maxs = 0;
  for (size_t i = 0; i < c->n; i++) {
    put(buf + 24 * (i + 2), c->rec[i][0], c->rec[i][1], 1001 + i);
    if (c->rec[i][0] > maxh) maxh = c->rec[i][0];
    if (c->rec[i][1] > maxs) maxs = c->rec[i][1];
  }
  put(buf, 0, maxh + maxs, 1000);
  put(buf + 24, maxh, maxs, 1000 + c->n + 1);
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.time_unit = MEMSTUB_TIME_US;
  for (int curve = MEMSTUB_STACK_AUTO; curve <= MEMSTUB_STACK_NONE; curve++) {
    o.stack_curve = curve;
    memstub_trace *t;
    memstub_error err;
    ck_assert_msg(memstub_import_memusage_parse("u", buf, 24 * (c->n + 2), &o, &t, &err) == 0, "%s",
                  err.msg);
    const char *stack = memstub_trace_get_meta(t, "stack");
    const char *doubt = memstub_trace_get_meta(t, "memusage.stack_degenerate");
    if (curve == MEMSTUB_STACK_NONE) {
      ck_assert_msg(stack && stack_all_zero(t), "%s: none", c->what);
    } else if (curve == MEMSTUB_STACK_AUTO) {
      ck_assert_msg(!!stack == c->degenerate, "%s: auto: stack '%s'", c->what, stack ? stack : "(none)");
      ck_assert_msg(!c->degenerate || stack_all_zero(t), "%s: auto: stack not 0", c->what);
      ck_assert_ptr_null(doubt);
    } else {  // told: obeyed, doubted when degenerate
      ck_assert_msg(stack == NULL, "%s: told: stack '%s'", c->what, stack);
      ck_assert_msg(!!doubt == c->degenerate, "%s: told: doubt '%s'", c->what, doubt ? doubt : "(none)");
    }
    memstub_trace_free(t);
  }
}
END_TEST

/* An inverted curve that reaches its deepest point first keeps its shape:
 * detected (3 of 8 allocation records read 0) and corrected as peak -
 * value, exactly. */
START_TEST(test_memusage_inverted_corrected) {
  static const uint64_t rec[][2] = {{100, 0},    {200, 3000}, {300, 2000}, {400, 1000},
                                    {300, 2500}, {400, 0},    {200, 1500}, {100, 3000}, {0, 0}};
  const size_t n = sizeof rec / sizeof rec[0];
  unsigned char buf[24 * 11];
  put(buf, 0, 3400, 1000);
  put(buf + 24, 400, 3000, 2000);
  for (size_t i = 0; i < n; i++) put(buf + 24 * (i + 2), rec[i][0], rec[i][1], 1001 + i);
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.time_unit = MEMSTUB_TIME_US;
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_memusage_parse("u", buf, 24 * (n + 2), &o, &t, &err) == 0, "%s", err.msg);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.stack_curve"), "inverted (corrected"));
  ck_assert_ptr_null(memstub_trace_get_meta(t, "stack"));
  ck_assert_uint_eq(t->n, n + 1);
  for (size_t i = 0; i < n; i++) ck_assert_int_eq(t->pts[i + 1].stack_bytes, 3000 - (int64_t)rec[i][1]);
  memstub_trace_free(t);
}
END_TEST

/* sort_null.memusage (`sort /dev/null`, glibc 2.36: inverted) reads 0 on
 * only 3 of 282 allocation records and its median is below half the peak,
 * so it was taken as a normal curve, upside down. A program ends where it
 * began, and its last records (exit's frees) read near the peak: inverted. */
START_TEST(test_memusage_inverted_by_the_end) {
  memstub_trace *t;
  memstub_error err;
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.cycles_per_ns = 2.0;
  ck_assert_msg(memstub_import_memusage(fx("sort_null.memusage"), &o, &t, &err) == 0, "%s", err.msg);
  const char *curve = memstub_trace_get_meta(t, "memusage.stack_curve");
  ck_assert_msg(strncmp(curve, "inverted (corrected as peak - value; detected: 3 of 282 allocation "
                               "records read 0, median 816, last 14 median 1632, of peak 1664)",
                        200) == 0, "%s", curve);
  ck_assert_ptr_null(memstub_trace_get_meta(t, "stack"));
  // Corrected, the program ends near the top of its stack: at most 64 bytes
  // below it, where it read 1600 and more before.
  ck_assert_int_le(t->pts[t->n - 1].stack_bytes, 64);
  ck_assert_int_eq(peak(t, 0), 1664);
  memstub_trace_free(t);
}
END_TEST

/* The header's peaks against the records: rec_prog.memusage cut after 150
 * records (a copy cut at a record boundary) lost its heap peak; a header
 * whose peak the records exceed belongs to another run. Both were imported
 * without a word. */
START_TEST(test_memusage_inconsistent) {
  char *buf;
  size_t len;
  memstub_error err = {0};
  ck_assert_int_eq(ms_read_fixture(fx("rec_prog.memusage"), &buf, &len), 0);
  ck_assert_uint_eq(len, 24 * 402);
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.cycles_per_ns = 2.0;
  memstub_trace *t;
  ck_assert_int_eq(memstub_import_memusage_parse("u", (unsigned char *)buf, 24 * 152, &o, &t, &err), 0);
  const char *why = memstub_trace_get_meta(t, "memusage.inconsistent");
  ck_assert_ptr_nonnull(why);
  ck_assert_msg(strncmp(why, "the header's heap peak is 20000 but the records' largest value is 15000: "
                             "records are missing",
                        70) == 0, "%s", why);
  memstub_trace_free(t);
  // The header's heap peak below the records'.
  uint64_t small = 19000;
  memcpy(buf + 24, &small, 8);
  ck_assert_int_eq(memstub_import_memusage_parse("u", (unsigned char *)buf, len, &o, &t, &err), 0);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.inconsistent"),
                               "the header does not belong to these records"));
  memstub_trace_free(t);
  // The stack peak too.
  small = 20000;
  memcpy(buf + 24, &small, 8);
  uint64_t stack = 300000;
  memcpy(buf + 32, &stack, 8);
  ck_assert_int_eq(memstub_import_memusage_parse("u", (unsigned char *)buf, len, &o, &t, &err), 0);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "memusage.inconsistent"),
                               "the header's stack peak is 300000 but the records' largest value is 208016"));
  memstub_trace_free(t);
  // The command warns.
  char *dir = tu_mkdtemp();
  char cut[4096];
  snprintf(cut, sizeof cut, "%s/cut.memusage", dir);
  FILE *f = fopen(cut, "wb");
  ck_assert_ptr_nonnull(f);
  small = 20000, stack = 208016;
  memcpy(buf + 32, &stack, 8);
  ck_assert_uint_eq(fwrite(buf, 1, 24 * 152, f), 24 * 152);
  ck_assert_int_eq(fclose(f), 0);
  tu_run r = tu_memstub(NULL, "import", "memusage", cut, "--cycles-per-ns", "2", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "memstub: warning: ") && strstr(r.err, "memusage.inconsistent: "), "%s", r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
  free(buf);
}
END_TEST

/* Found by tests/fuzz/fuzz_memusage: a file with only the two header records
 * (a program that never allocated) passed NULL to qsort (now refused: no
 * data records); and a stack peak in record 1 beyond int64, as the base of
 * the inverted curve's correction, gave negative stack totals, a trace no
 * writer takes. */
START_TEST(test_memusage_fuzz_regressions) {
  unsigned char buf[24 * 3];
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.time_unit = MEMSTUB_TIME_US;
  put(buf, 0, 0, 5);
  put(buf + 24, 0, 0, 9);
  memstub_trace *t = (memstub_trace *)1;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, 48, &o, &t, &err), -EINVAL);
  ck_assert_ptr_null(t);
  ck_assert_str_eq(err.msg, "u: byte offset 48: no data records after the two header records: "
                            "memusage recorded no allocator call (or this is not its file)");

  put(buf, 0, 0x8700000000ULL, 0);
  put(buf + 24, 0, 0xff00000000000000ULL, UINT64_MAX);
  put(buf + 48, 0x5000138800ULL, 0, 0);
  o.stack_curve = MEMSTUB_STACK_INVERTED;
  t = (memstub_trace *)1;
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, sizeof buf, &o, &t, &err), -EINVAL);
  ck_assert_ptr_null(t);
  ck_assert_str_eq(err.msg, "u: byte offset 24: record 1: heap peak 0 or stack peak "
                            "18374686479671623680 is out of range: not a memusage data file?");
}
END_TEST

/* Issue 28 item 5: a file without data records (the two header records
 * only, or records of zero bytes) made a trace of one row that gen refuses,
 * and a cycle rate so small that the times leave 64-bit ns clamped them to
 * INT64_MAX: both refused at import, naming the file (and the record). */
START_TEST(test_memusage_no_records_and_overflow) {
  char *dir = tu_mkdtemp();
  char f48[4096], fz[4096], out[4096];
  snprintf(f48, sizeof f48, "%s/h48.memusage", dir);
  snprintf(fz, sizeof fz, "%s/zeros.memusage", dir);
  snprintf(out, sizeof out, "%s/o.csv", dir);
  static const unsigned char zero[24 * 10];
  FILE *f = fopen(f48, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(zero, 1, 48, f), 48);
  ck_assert_int_eq(fclose(f), 0);
  ck_assert_ptr_nonnull(f = fopen(fz, "wb"));
  ck_assert_uint_eq(fwrite(zero, 1, sizeof zero, f), sizeof zero);
  ck_assert_int_eq(fclose(f), 0);
  tu_run r = tu_memstub(NULL, "import", "memusage", f48, "-o", out, "--cycles-per-ns", "2", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "h48.memusage: byte offset 48: no data records after the two "
                              "header records: "), "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "import", "memusage", fz, "-o", out, "--cycles-per-ns", "2", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "zeros.memusage: byte offset 48: no data records after the two "
                              "header records (only zero bytes)"), "%s", r.err);
  tu_run_free(&r);
  ck_assert_int_ne(access(out, F_OK), 0);
  // 1e-300 ticks per ns: every record after the start is beyond 64-bit ns.
  r = tu_memstub(NULL, "import", "memusage", fx("mu_prog.memusage"), "-o", out, "--cycles-per-ns",
                 "1e-300", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "mu_prog.memusage: byte offset ") &&
                    strstr(r.err, "ticks after the start is beyond 64-bit ns at 1e-300 ticks per ns "
                                  "(--cycles-per-ns)"), "%s", r.err);
  tu_run_free(&r);
  ck_assert_int_ne(access(out, F_OK), 0);
  // A rate below the smallest normal double (1 / rate is infinite) and the
  // record at the start time: refused too, never NaN.
  unsigned char buf[24 * 4];
  put(buf, 0, 0, 5);
  put(buf + 24, 100, 10, 9);
  put(buf + 48, 100, 10, 5);
  put(buf + 72, 0, 10, 9);
  memstub_import_options o;
  memstub_import_options_init(&o);
  o.time_unit = MEMSTUB_TIME_CYCLES;
  o.cycles_per_ns = 1e-320;
  memstub_trace *t = (memstub_trace *)1;
  memstub_error err = {0};
  ck_assert_int_eq(memstub_import_memusage_parse("u", buf, sizeof buf, &o, &t, &err), -EINVAL);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(err.msg, "u: byte offset 72: record 3: time 4 ticks after the start is beyond"),
                "%s", err.msg);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static int have(const char *tool) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) == 0;
}

/* The real tools on rec_helper (a plain, unsanitized program), when
 * installed; skipped with a message otherwise. */
/* memusage does not see the memalign family: the import said so only in
 * the metadata (memusage.heap_measure); it warns on stderr too, as for
 * the other blind spots. massif sees them: no such warning. */
START_TEST(test_memusage_memalign_warned) {
  char *dir = tu_mkdtemp();
  char out[4096], src[4096];
  snprintf(out, sizeof out, "%s/m.csv", dir);
  snprintf(src, sizeof src, "%s", fx("mu_prog.memusage"));
  tu_run r = tu_memstub(NULL, "import", "memusage", src, "-o", out, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "memstub: warning: ") &&
                    strstr(r.err, "mu_prog.memusage: memusage.heap_measure: bytes requested from "
                                  "malloc, calloc and realloc (memusage does not see "
                                  "posix_memalign, aligned_alloc, memalign, valloc): the blocks a "
                                  "program allocates with those are not in heap_bytes"),
                "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "import", "massif", fx("sort.heap.massif"), "-o", out, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(!strstr(r.err, "memalign"), "%s", r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_live_tools) {
  const char *helper = getenv("MEMSTUB_REC_HELPER");
  ck_assert_ptr_nonnull(helper);
  char *dir = tu_mkdtemp();
  char data[4096], out[4096];
  if (have("memusage")) {
    snprintf(data, sizeof data, "%s/live.memusage", dir);
    snprintf(out, sizeof out, "%s/live-u.csv", dir);
    char *argv[] = {"memusage", "-d", data, (char *)helper, "deep", "50", NULL};
    tu_run r = tu_exec(dir, argv);
    ck_assert_msg(r.status == 0, "memusage failed: %s", r.err);
    tu_run_free(&r);
    r = tu_memstub(NULL, "import", "memusage", data, "-o", out, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
    memstub_trace *t;
    memstub_error err;
    ck_assert_int_eq(memstub_trace_read(out, &t, &err), 0);
    ck_assert_int_ge(peak(t, 1), 64);
    // An inverted recording has lost how deep the first descent went (see
    // docs/recording.md); a normal one shows it.
    if (strncmp(memstub_trace_get_meta(t, "memusage.stack_curve"), "normal", 6) == 0)
      ck_assert_int_ge(peak(t, 0), 50 * 1024);
    memstub_trace_free(t);
  } else {
    fprintf(stderr, "test_live_tools: memusage not installed (libc-devtools): skipped\n");
  }
  if (have("valgrind")) {
    snprintf(data, sizeof data, "%s/live.massif", dir);
    snprintf(out, sizeof out, "%s/live-m.csv", dir);
    char of[4200];
    snprintf(of, sizeof of, "--massif-out-file=%s", data);
    char *argv[] = {"valgrind", "-q", "--tool=massif", "--stacks=yes", "--time-unit=ms", of,
                    (char *)helper, "deep", "50", NULL};
    tu_run r = tu_exec(dir, argv);
    ck_assert_msg(r.status == 0, "valgrind failed: %s", r.err);
    tu_run_free(&r);
    r = tu_memstub(NULL, "import", "massif", data, "-o", out, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
    memstub_trace *t;
    memstub_error err;
    ck_assert_int_eq(memstub_trace_read(out, &t, &err), 0);
    ck_assert_int_ge(peak(t, 0), 50 * 1024);
    memstub_trace_free(t);
  } else {
    fprintf(stderr, "test_live_tools: valgrind not installed: skipped\n");
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* rec_prog.c, compiled here, under the real tools when installed: whatever
 * the glibc, memusage's import is either a curve that climbs with the
 * descent (a correct glibc) or unknown (glibc 2.35-2.38), never flat at the
 * peak; massif --stacks=yes sees the climb. */
START_TEST(test_live_recursion) {
  char *dir = tu_mkdtemp();
  char exe[4096], src[4096], data[4096];
  snprintf(exe, sizeof exe, "%s/rec_prog", dir);
  snprintf(src, sizeof src, "%s", fx("rec_prog.c"));
  const char *cc = getenv("MEMSTUB_CC");
  char *ccargv[] = {(char *)(cc ? cc : "cc"), "-O1", "-fno-builtin", "-o", exe, src, NULL};
  tu_run r = tu_exec(dir, ccargv);
  ck_assert_msg(r.status == 0, "compile failed: %s", r.err);
  tu_run_free(&r);
  memstub_trace *t;
  memstub_error err;
  if (have("memusage")) {
    snprintf(data, sizeof data, "%s/rec.memusage", dir);
    char *argv[] = {"memusage", "--no-timer", "-d", data, exe, NULL};
    r = tu_exec(dir, argv);
    ck_assert_msg(r.status == 0, "memusage failed: %s", r.err);
    tu_run_free(&r);
    ck_assert_msg(memstub_import_memusage(data, NULL, &t, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(peak(t, 1), 20000);
    const char *stack = memstub_trace_get_meta(t, "stack");
    if (stack) {
      ck_assert_ptr_nonnull(strstr(stack, "unknown (memusage recorded a degenerate"));
      ck_assert(stack_all_zero(t));
    } else {  // the descent's allocations climb: shallow at 100 bytes, deep at 20000
      for (size_t i = 1; i < t->n; i++) {
        if (t->pts[i].heap_bytes == 100 && i < 10) ck_assert_int_lt(t->pts[i].stack_bytes, 50 * 1024);
        if (t->pts[i].heap_bytes == 20000) ck_assert_int_ge(t->pts[i].stack_bytes, 150 * 1024);
      }
    }
    memstub_trace_free(t);
  } else {
    fprintf(stderr, "test_live_recursion: memusage not installed (libc-devtools): skipped\n");
  }
  if (have("valgrind")) {
    snprintf(data, sizeof data, "%s/rec.massif", dir);
    char of[4200];
    snprintf(of, sizeof of, "--massif-out-file=%s", data);
    // Time in bytes allocated: the snapshots massif keeps do not depend on
    // the machine's load, as they would in ms.
    char *argv[] = {"valgrind", "-q", "--tool=massif", "--stacks=yes", "--time-unit=B",
                    "--max-snapshots=1000", of, exe, NULL};
    r = tu_exec(dir, argv);
    ck_assert_msg(r.status == 0, "valgrind failed: %s", r.err);
    tu_run_free(&r);
    memstub_import_options o;
    memstub_import_options_init(&o);
    o.ns_per_unit = 1;
    ck_assert_msg(memstub_import_massif(data, &o, &t, &err) == 0, "%s", err.msg);
    ck_assert_ptr_null(memstub_trace_get_meta(t, "stack"));
    int shallow = 0, deep = 0;
    for (size_t i = 0; i < t->n; i++) {
      int64_t h = t->pts[i].heap_bytes, st = t->pts[i].stack_bytes;
      if (h > 0 && h <= 5000 && st <= 100 * 1024) shallow = 1;
      if (h >= 15000 && st >= 150 * 1024) deep = 1;
    }
    ck_assert_msg(shallow && deep, "massif: no climb (shallow %d, deep %d)", shallow, deep);
    memstub_trace_free(t);
  } else {
    fprintf(stderr, "test_live_recursion: valgrind not installed: skipped\n");
  }
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *import_suite(void) {
  Suite *s = suite_create("import");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_massif_ms);
  tcase_add_test(tc, test_massif_instructions);
  tcase_add_loop_test(tc, test_massif_refusals, 0, (int)(sizeof bad_massif / sizeof bad_massif[0]));
  tcase_add_test(tc, test_massif_minimal);
  tcase_add_loop_test(tc, test_massif_measured, 0, (int)(sizeof massif_opts / sizeof massif_opts[0]));
  tcase_add_test(tc, test_massif_values_win);
  tcase_add_test(tc, test_massif_inconsistent_tree);
  tcase_add_test(tc, test_memusage_inverted_fixture);
  tcase_add_test(tc, test_memusage_degenerate_fixture);
  tcase_add_loop_test(tc, test_memusage_degenerate_criterion, 0,
                      (int)(sizeof degen_cases / sizeof degen_cases[0]));
  tcase_add_test(tc, test_memusage_inverted_corrected);
  tcase_add_test(tc, test_memusage_inverted_by_the_end);
  tcase_add_test(tc, test_memusage_inconsistent);
  tcase_add_test(tc, test_memusage_synthetic);
  tcase_add_test(tc, test_memusage_fuzz_regressions);
  tcase_add_test(tc, test_memusage_no_records_and_overflow);
  tcase_add_test(tc, test_memusage_memalign_warned);
  tcase_add_test(tc, test_live_tools);
  tcase_add_test(tc, test_live_recursion);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(import_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
