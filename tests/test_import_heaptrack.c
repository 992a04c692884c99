// memstub import heaptrack: real files (fixtures made by heaptrack 1.4 on
// Debian 12, and made live when heaptrack is installed), handmade ones for
// exact rows, and malformed ones; massif --pages-as-heap=yes as mapped_bytes.
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
  snprintf(fixture, sizeof fixture, "%s/%s", tu_src("tests/fixtures/import"), name);
  return fixture;
}

// The sum of a column over every row (0 when the trace has no such column).
static int64_t col_sum(const memstub_trace *t, const char *name) {
  int c = memstub_trace_column(t, name);
  int64_t s = 0;
  for (size_t i = 0; c >= 0 && i < t->n; i++) s += memstub_trace_extra_row(t, i)[c];
  return s;
}

static int64_t col_max(const memstub_trace *t, const char *name) {
  int c = memstub_trace_column(t, name);
  ck_assert_msg(c >= 0, "no column %s", name);
  int64_t m = 0;
  for (size_t i = 0; i < t->n; i++)
    if (memstub_trace_extra_row(t, i)[c] > m) m = memstub_trace_extra_row(t, i)[c];
  return m;
}

static int64_t calls(const memstub_trace *t, const char *kind) {
  static const char *const cls[] = {"tiny", "small", "medium", "large"};
  char name[64];
  int64_t s = 0;
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "calls_%s_%s", kind, cls[i]);
    s += col_sum(t, name);
  }
  return s;
}

/* sort.heaptrack.zst: heaptrack's own summary (heaptrack_print) says 222
 * calls to allocation functions and a heap peak of 17.51M; its interpreter
 * printed 151 leaked allocations, so 71 deallocations. */
static void check_sort(const memstub_trace *t) {
  ck_assert_int_eq(calls(t, "malloc"), 222);
  ck_assert_int_eq(calls(t, "free"), 71);
  int64_t peak = col_max(t, "heap_peak_bytes");
  ck_assert_int_ge(peak, 17505000);
  ck_assert_int_lt(peak, 17515000);
  ck_assert_int_eq(t->pts[0].time_ns, 0);
  ck_assert_int_eq(t->pts[0].heap_bytes, 0);
  ck_assert_int_eq(t->pts[t->n - 1].heap_bytes, 12188);  // "total memory leaked: 12.19K"
  for (size_t i = 0; i < t->n; i++) {
    ck_assert_int_eq(t->pts[i].stack_bytes, 0);
    ck_assert_int_eq(t->pts[i].time_ns % 1000000, 0);
  }
  ck_assert_str_eq(memstub_trace_get_meta(t, "source"), "heaptrack");
  ck_assert_str_eq(memstub_trace_get_meta(t, "heaptrack.cmd"), "sort lines.txt");
  ck_assert_str_eq(memstub_trace_get_meta(t, "heaptrack.version"), "1.4.0, file format 3");
  ck_assert_int_eq(strncmp(memstub_trace_get_meta(t, "stack"), "unknown", 7), 0);
  memstub_error e;
  ck_assert_msg(memstub_trace_validate(t, &e) == 0, "%s", e.msg);
}

START_TEST(test_heaptrack_zst_and_gz) {
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_heaptrack(fx("sort.heaptrack.zst"), NULL, &t, &err) == 0, "%s", err.msg);
  check_sort(t);
  memstub_trace *g;
  ck_assert_msg(memstub_import_heaptrack(fx("sort.heaptrack.gz"), NULL, &g, &err) == 0, "%s", err.msg);
  check_sort(g);
  ck_assert_uint_eq(t->n, g->n);
  for (size_t i = 0; i < t->n; i++) ck_assert_int_eq(t->pts[i].heap_bytes, g->pts[i].heap_bytes);
  memstub_trace_free(t);
  memstub_trace_free(g);
}
END_TEST

/* python3 building 5000 dicts: RSS grows far beyond what malloc holds
 * (pymalloc's arenas are mmap'd directly, unseen by heaptrack).
 * heaptrack_print says: 955 calls to allocation functions, heap peak
 * 873.66K, 399.42K leaked (52 B of it suppressed). */
START_TEST(test_heaptrack_python) {
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_heaptrack(fx("py_dicts.heaptrack.zst"), NULL, &t, &err) == 0, "%s",
                err.msg);
  ck_assert_int_ge(memstub_trace_column(t, "rss_bytes"), 0);
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "heaptrack.rss"));
  int64_t rss = col_max(t, "rss_bytes"), heap = col_max(t, "heap_peak_bytes");
  ck_assert_int_gt(rss, 2 * 1024 * 1024);
  ck_assert_int_gt(rss, 2 * heap);
  ck_assert_int_eq(rss % 4096, 0);
  ck_assert_int_gt(t->n, 10);
  int64_t a = calls(t, "malloc"), f = calls(t, "free");
  ck_assert_int_eq(a, 955);
  ck_assert_int_le(f, a);
  ck_assert_int_ge(heap, 873655);
  ck_assert_int_le(heap, 873665);
  ck_assert_int_ge(t->pts[t->n - 1].heap_bytes, 399415);
  ck_assert_int_lt(t->pts[t->n - 1].heap_bytes, 399525);
  memstub_trace_free(t);
}
END_TEST

// Handmade: exact rows, peaks between ticks, RSS relative to the first sample.
START_TEST(test_heaptrack_exact) {
  const char *text =
      "v 10400 3\n"
      "X ./prog arg\n"
      "I 1000 100\n"
      "s 4 main\n"
      "t 1 0\n"
      "i 401000 1 1\n"
      "a 40 1\n"          // info 0: 64 B (tiny)
      "+ 0\n"
      "a 20000 1\n"       // info 1: 128 KiB (large)
      "+ 1\n"
      "- 1\n"
      "c a\n"             // 10 ms
      "R 100\n"           // 256 pages: the base
      "a 400 1\n"         // info 2: 1 KiB (small)
      "+ 2\n"
      "+ 2\n"
      "c 14\n"            // 20 ms
      "R 110\n"           // 16 pages more
      "- 0\n"
      "\n"
      "# comment\n"
      "c 14\n";           // 20 ms again, at exit, after a free
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_heaptrack_parse("h", text, strlen(text), NULL, &t, &err) == 0, "%s",
                err.msg);
  ck_assert_uint_eq(t->n, 4);
  static const int64_t time[] = {0, 10000000, 20000000, 20000000};
  static const int64_t heap[] = {0, 64, 64 + 2048, 2048};
  static const int64_t peak[] = {0, 64 + 131072, 64 + 2048, 64 + 2048};
  static const int64_t rss[] = {0, 0, 16 * 4096, 16 * 4096};
  int cp = memstub_trace_column(t, "heap_peak_bytes"), cr = memstub_trace_column(t, "rss_bytes");
  int mt = memstub_trace_column(t, "calls_malloc_tiny"), ml = memstub_trace_column(t, "calls_malloc_large");
  int ms = memstub_trace_column(t, "calls_malloc_small"), fl = memstub_trace_column(t, "calls_free_large");
  int ft = memstub_trace_column(t, "calls_free_tiny");
  ck_assert(cp >= 0 && cr >= 0 && mt >= 0 && ml >= 0 && ms >= 0 && fl >= 0 && ft >= 0);
  ck_assert_int_lt(memstub_trace_column(t, "calls_malloc_medium"), 0);  // no calls: no column
  for (size_t i = 0; i < 4; i++) {
    const int64_t *x = memstub_trace_extra_row(t, i);
    ck_assert_int_eq(t->pts[i].time_ns, time[i]);
    ck_assert_int_eq(t->pts[i].heap_bytes, heap[i]);
    ck_assert_int_eq(x[cp], peak[i]);
    ck_assert_int_eq(x[cr], rss[i]);
  }
  ck_assert_int_eq(memstub_trace_extra_row(t, 1)[mt], 1);
  ck_assert_int_eq(memstub_trace_extra_row(t, 1)[ml], 1);
  ck_assert_int_eq(memstub_trace_extra_row(t, 1)[fl], 1);
  ck_assert_int_eq(memstub_trace_extra_row(t, 2)[ms], 2);
  ck_assert_int_eq(memstub_trace_extra_row(t, 3)[ft], 1);
  ck_assert_int_eq(memstub_trace_extra_row(t, 3)[ms], 0);
  ck_assert_str_eq(memstub_trace_get_meta(t, "heaptrack.cmd"), "./prog arg");
  ck_assert_str_eq(memstub_trace_get_meta(t, "heaptrack.calls"), "4 allocations, 2 deallocations");
  memstub_trace_free(t);
}
END_TEST

static const struct bad {
  const char *what, *text, *msg;
} bad_heaptrack[] = {
    {"empty", "", "h:1:1: empty file"},
    {"no v line", "# only a comment\n", "h:2:1: not a heaptrack output"},
    {"not heaptrack", "time_ns,stack_bytes,heap_bytes\n", "h:1:1: not a heaptrack file"},
    {"truncated", "v 10400 3\nc 1", "h:2:4: truncated last line"},
    {"old format", "v 10000 0\n", "h:1:2: file format version 0 is not supported"},
    {"newer format", "v 20000 4\n", "h:1:2: file format version 4 is not supported"},
    {"two v lines", "v 10400 3\nv 10400 3\n", "h:2:1: a second 'v' line"},
    {"uppercase hex", "v 10400 3\nc A\n", "h:2:3: 'c' line: field 1 (MS): 'A' is not a hexadecimal"},
    {"decreasing time", "v 10400 3\nc 5\nc 4\n", "h:3:3: 'c' line: time decreases from 5 ms to 4 ms"},
    {"stray field", "v 10400 3\nc 5 6\n", "h:2:5: 'c' line: stray field 2"},
    {"trailing space", "v 10400 3\nc 5 \n", "h:2:4: 'c' line: trailing space after field 1"},
    {"missing field", "v 10400 3\na 10\n", "h:2:5: 'a' line: 1 field, expected SIZE TRACE"},
    {"no fields", "v 10400 3\n+\n", "h:2:2: '+' line: expected INFO"},
    {"undefined info", "v 10400 3\na 10 0\n+ 1\n", "h:3:3: '+' line: allocation info 1 not defined"},
    {"free without alloc", "v 10400 3\na 10 0\n+ 0\n- 0\n- 0\n",
     "h:5:3: '-' line: no live allocation of info 0"},
    {"R before I", "v 10400 3\nc 1\nR 10\n", "h:3:1: 'R' line before the 'I' line"},
    {"bad page size", "v 10400 3\nI 1001 10\n", "h:2:3: 'I' line: the page size is not a power of two"},
    {"raw file", "v 10400 3\nx 3 abc\n", "h:2:1: raw heaptrack data"},
    {"unknown letter", "v 10400 3\nq 1\n", "h:2:1: unknown line type 'q'"},
    {"no space", "v 10400 3\nc1\n", "h:2:2: expected a space after the line's letter"},
    {"too long", "v 10400 3\nc 11111111111111111\n", "h:2:3: 'c' line: field 1 (MS) does not fit in 64 bits"},
    {"time overflow", "v 10400 3\nc 100000000000000\n", "h:2:3: 'c' line: the time does not fit"},
    {"attach text", "v 10400 3\nA x\n", "h:2:2: 'A' line: stray text"},
    {"i without module", "v 10400 3\ni 401000\n", "h:2:9: 'i' line: expected IP and MODULE"},
    {"i with a space only", "v 10400 3\ni \n", "h:2:3: 'i' line: expected IP and MODULE"},
    {"t with one field", "v 10400 3\nt 1\n", "h:2:4: 't' line: 1 field, expected IP PARENT"},
    {"NUL byte", "v 10400 3\nX a\0b\n", "h:2:4: NUL byte"},
};

START_TEST(test_heaptrack_refusals) {
  const struct bad *b = &bad_heaptrack[_i];
  memstub_trace *t = (memstub_trace *)1;
  memstub_error err = {0};
  size_t len = strlen(b->text);
  if (strcmp(b->what, "NUL byte") == 0) len = 16;
  int rc = memstub_import_heaptrack_parse("h", b->text, len, NULL, &t, &err);
  ck_assert_msg(rc == -EINVAL, "%s: rc %d", b->what, rc);
  ck_assert_ptr_null(t);
  ck_assert_msg(strncmp(err.msg, b->msg, strlen(b->msg)) == 0, "%s: got '%s', want '%s'", b->what,
                err.msg, b->msg);
  ck_assert_ptr_null(strchr(err.msg, '\n'));
}
END_TEST

/* heaptrack writes the command line unescaped: an argument with newlines
 * (python3 -c "...") continues the X line up to the 'I' line. Found on the
 * benchmark's python3 run, which was refused at line 3. */
START_TEST(test_heaptrack_multiline_cmd) {
  const char *text =
      "v 10400 3\nX /usr/bin/python3 -c import json\nd=[1]\nI 1000 10\na 10 0\n+ 0\nc 1\n";
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_heaptrack_parse("h", text, strlen(text), NULL, &t, &err) == 0, "%s",
                err.msg);
  ck_assert_str_eq(memstub_trace_get_meta(t, "heaptrack.cmd"), "/usr/bin/python3 -c import json d=[1]");
  ck_assert_int_eq(t->pts[t->n - 1].heap_bytes, 16);
  memstub_trace_free(t);
  // Line numbers count the continuation lines.
  const char *bad = "v 10400 3\nX a\nb c\nI 1000 10\nc 5 6\n";
  ck_assert_int_eq(memstub_import_heaptrack_parse("h", bad, strlen(bad), NULL, &t, &err), -EINVAL);
  ck_assert_msg(strncmp(err.msg, "h:5:5: 'c' line: stray field 2", 30) == 0, "%s", err.msg);
  // Without an 'I' line after it, the X line stands alone.
  const char *alone = "v 10400 3\nX a\nq\n";
  ck_assert_int_eq(memstub_import_heaptrack_parse("h", alone, strlen(alone), NULL, &t, &err), -EINVAL);
  ck_assert_msg(strncmp(err.msg, "h:3:1: unknown line type 'q'", 28) == 0, "%s", err.msg);
}
END_TEST

// An attached heaptrack is said in the metadata and warned about.
START_TEST(test_heaptrack_attached) {
  const char *text = "v 10400 3\nA\na 10 0\n+ 0\nc 1\n";
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_heaptrack_parse("h", text, strlen(text), NULL, &t, &err) == 0, "%s",
                err.msg);
  ck_assert_ptr_nonnull(memstub_trace_get_meta(t, "heaptrack.attached"));
  ck_assert_int_eq(t->pts[t->n - 1].heap_bytes, 16);
  memstub_trace_free(t);
}
END_TEST

// A compressed file the decompressor refuses: an error naming the file.
START_TEST(test_heaptrack_bad_compressed) {
  char *dir = tu_mkdtemp();
  char path[4096];
  snprintf(path, sizeof path, "%s/broken.zst", dir);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  fwrite("\x28\xb5\x2f\xfd garbage", 1, 12, f);
  ck_assert_int_eq(fclose(f), 0);
  memstub_trace *t;
  memstub_error err;
  int rc = memstub_import_heaptrack(path, NULL, &t, &err);
  ck_assert_int_lt(rc, 0);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "zstd"), "%s", err.msg);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

// The command: heaptrack as a format, a trace written, the unknown stack warned about.
START_TEST(test_heaptrack_cli) {
  char *dir = tu_mkdtemp();
  char out[4096];
  snprintf(out, sizeof out, "%s/sort.csv", dir);
  tu_run r = tu_memstub(NULL, "import", "heaptrack", fx("sort.heaptrack.zst"), "-o", out, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "stack: unknown"), "%s", r.err);
  // Its times are the run's under heaptrack: said, with the scale to undo it.
  ck_assert_msg(strstr(r.err, "the times are the run's under heaptrack") &&
                    strstr(r.err, "--time-scale NATIVE_SECONDS/"),
                "%s", r.err);
  tu_run_free(&r);
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_trace_read(out, &t, &err) == 0, "%s", err.msg);
  check_sort(t);
  memstub_trace_free(t);
  // The generator takes the imported trace, its extra columns carried along.
  char hdr[4096];
  snprintf(hdr, sizeof hdr, "%s/sort.h", dir);
  r = tu_memstub(NULL, "gen", out, "-o", hdr, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  char *h = tu_read_file(hdr);
  ck_assert_ptr_nonnull(h);
  ck_assert_ptr_nonnull(strstr(h, "memUse"));
  free(h);
  // And a pages-as-heap import: mapped_bytes drive the stub's mappings.
  snprintf(out, sizeof out, "%s/pages.csv", dir);
  r = tu_memstub(NULL, "import", "massif", fx("sort.pages.massif"), "-o", out, NULL);
  ck_assert_msg(r.status == 0 && strstr(r.err, "heap: unknown"), "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "gen", out, "-o", hdr, NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(NULL, "import", "heaptrak", fx("sort.heaptrack.zst"), NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "expected massif, memusage or heaptrack"), "%s", r.err);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* --calls (issue 31 item 1): heaptrack's allocations and deallocations in
 * order as a calls file beside the trace, for the call replay. The data
 * file of py_dicts.heaptrack.zst (a Python run) replays them one by one: the heap at every row as imported, and as
 * many allocations and frees. No calls file without -o, for another format,
 * or when the import fails. */
START_TEST(test_heaptrack_calls) {
  char *dir = tu_mkdtemp();
  tu_run r = tu_memstub(dir, "import", "heaptrack", fx("py_dicts.heaptrack.zst"), "-o", "t.csv",
                        "--calls", NULL);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_msg(strstr(r.err, "t.csv.calls: the allocation sequence") &&
                    strstr(r.err, "lifetimes within one site may differ"),
                "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "gen", "t.csv", "--data", "t.dat", NULL);
  ck_assert_msg(r.status == 0, "gen: %s", r.err);
  ck_assert_msg(strstr(r.err, "replayed call for call"), "gen said: %s", r.err);
  ck_assert_msg(!tu_warned(r.err), "gen said: %s", r.err);
  tu_run_free(&r);
  char path[4096];
  // Under ASan too: a 2-byte block's usable size is 2 there, its size kept beside its pointer.
  memstub_trace *t, *o;
  memstub_error err;
  r = tu_memstub(dir, "replay", "--data", "t.dat", "--measure", "o.csv", NULL);
  ck_assert_msg(r.status == 0, "replay: %s", r.err);
  tu_run_free(&r);
  snprintf(path, sizeof path, "%s/t.csv", dir);
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  snprintf(path, sizeof path, "%s/o.csv", dir);
  ck_assert_msg(memstub_trace_read(path, &o, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(o->n, t->n);
  for (size_t i = 0; i < t->n; i++)
    ck_assert_msg(o->pts[i].heap_bytes == t->pts[i].heap_bytes, "row %zu: replayed %lld, imported %lld",
                  i, (long long)o->pts[i].heap_bytes, (long long)t->pts[i].heap_bytes);
  ck_assert_int_gt(calls(t, "malloc"), 500);
  ck_assert_int_eq(calls(o, "malloc"), calls(t, "malloc"));
  ck_assert_int_eq(calls(o, "free"), calls(t, "free"));
  memstub_trace_free(t);
  memstub_trace_free(o);
  r = tu_memstub(dir, "import", "heaptrack", fx("py_dicts.heaptrack.zst"), "--calls", NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "needs -o"), "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "import", "massif", fx("sort.pages.massif"), "-o", "m.csv", "--calls", NULL);
  ck_assert_msg(r.status == 2 && strstr(r.err, "only heaptrack"), "%s", r.err);
  tu_run_free(&r);
  r = tu_memstub(dir, "import", "heaptrack", fx("sort.pages.massif"), "-o", "bad.csv", "--calls",
                 NULL);
  ck_assert_int_eq(r.status, 2);
  tu_run_free(&r);
  snprintf(path, sizeof path, "%s/bad.csv.calls", dir);
  ck_assert_msg(access(path, F_OK) != 0, "a calls file of a failed import");
  tu_rmtree(dir);
  free(dir);
}
END_TEST

/* massif --pages-as-heap=yes (sort.pages.massif): every page the process
 * mapped becomes mapped_bytes; the heap is unknown. The run's last detailed
 * snapshot and its peak come from the file (mem_heap_B=22192128). */
START_TEST(test_massif_pages) {
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_massif(fx("sort.pages.massif"), NULL, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(col_max(t, "mapped_bytes"), 22192128);
  for (size_t i = 0; i < t->n; i++) ck_assert_int_eq(t->pts[i].heap_bytes, 0);
  ck_assert_int_eq(strncmp(memstub_trace_get_meta(t, "heap"), "unknown", 7), 0);
  ck_assert_ptr_nonnull(strstr(memstub_trace_get_meta(t, "massif.heap_measure"), "mapped_bytes"));
  memstub_trace_free(t);
  // The same program's default run: requested bytes, no mapped_bytes.
  ck_assert_msg(memstub_import_massif(fx("sort.heap.massif"), NULL, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_lt(memstub_trace_column(t, "mapped_bytes"), 0);
  ck_assert_ptr_null(memstub_trace_get_meta(t, "heap"));
  int64_t hp = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->pts[i].heap_bytes > hp) hp = t->pts[i].heap_bytes;
  ck_assert_int_eq(hp, 17437020);
  memstub_trace_free(t);
}
END_TEST

// Live: heaptrack records sort of a small file, and the import agrees with
// what the program did (a sort of N lines holds at least N lines' bytes).
START_TEST(test_heaptrack_live) {
  if (access("/usr/bin/heaptrack", X_OK) != 0) {
    fprintf(stderr, "test_heaptrack_live: heaptrack not installed: skipped\n");
    return;
  }
  char *dir = tu_mkdtemp();
  char in[4096], base[4096], cmd[16384];
  snprintf(in, sizeof in, "%s/lines", dir);
  FILE *f = fopen(in, "w");
  ck_assert_ptr_nonnull(f);
  for (int i = 0; i < 20000; i++) fprintf(f, "%08x\n", (unsigned)(i * 2654435761u));
  ck_assert_int_eq(fclose(f), 0);
  snprintf(base, sizeof base, "%s/ht", dir);
  char *argv[] = {"heaptrack", "-o", base, "sort", in, NULL};
  tu_run r = tu_exec(dir, argv);
  ck_assert_msg(r.status == 0, "%s", r.err);
  tu_run_free(&r);
  snprintf(cmd, sizeof cmd, "%s.zst", base);
  if (!tu_exists(cmd)) snprintf(cmd, sizeof cmd, "%s.gz", base);
  memstub_trace *t;
  memstub_error err;
  ck_assert_msg(memstub_import_heaptrack(cmd, NULL, &t, &err) == 0, "%s", err.msg);
  ck_assert_int_ge(col_max(t, "heap_peak_bytes"), 20000 * 9);
  ck_assert_int_gt(calls(t, "malloc"), 10);
  memstub_trace_free(t);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("import_heaptrack");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_heaptrack_zst_and_gz);
  tcase_add_test(tc, test_heaptrack_python);
  tcase_add_test(tc, test_heaptrack_exact);
  tcase_add_loop_test(tc, test_heaptrack_refusals, 0, (int)(sizeof bad_heaptrack / sizeof bad_heaptrack[0]));
  tcase_add_test(tc, test_heaptrack_attached);
  tcase_add_test(tc, test_heaptrack_multiline_cmd);
  tcase_add_test(tc, test_heaptrack_bad_compressed);
  tcase_add_test(tc, test_heaptrack_cli);
  tcase_add_test(tc, test_heaptrack_calls);
  tcase_add_test(tc, test_massif_pages);
  tcase_add_test(tc, test_heaptrack_live);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
