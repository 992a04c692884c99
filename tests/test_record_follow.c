// memstub record --follow-children (issue 15): a child made by fork (no
// exec), by fork and exec, by posix_spawn, and a grandchild each write a
// trace of their own beside the root's, named TRACE.PID.COMMAND.csv, holding
// only their own heap, a forked child's first row its stack at fork();
// without the option none does. tests/record/kids.c.
#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/trace.h"
#include "testutil.h"

#define MIB (INT64_C(1) << 20)
// What else a process allocates (stdio, the loader): well under this.
#define SLACK (INT64_C(64) << 10)

static const char *kids(void) {
  const char *k = getenv("MEMSTUB_REC_KIDS");
  ck_assert_msg(k != NULL, "MEMSTUB_REC_KIDS is not set (run the tests with ctest)");
  return k;
}

static tu_run record(const char *dir, const char *mode, int follow) {
  char *argv[] = {getenv("MEMSTUB_EXE"), "record", "-o", "t.csv",
                  follow ? "--follow-children" : "-q", "--", (char *)kids(), (char *)mode, NULL};
  ck_assert_ptr_nonnull(argv[0]);
  return tu_exec(dir, argv);
}

static memstub_trace *load(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  memstub_trace *t = NULL;
  memstub_error err = {0};
  ck_assert_msg(memstub_trace_read(path, &t, &err) == 0, "%s", err.msg);
  return t;
}

static int64_t peak_heap(const memstub_trace *t) {
  int64_t m = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->pts[i].heap_bytes > m) m = t->pts[i].heap_bytes;
  return m;
}

static long meta_long(const memstub_trace *t, const char *key) {
  const char *v = memstub_trace_get_meta(t, key);
  ck_assert_msg(v != NULL, "no %s", key);
  return strtol(v, NULL, 10);
}

// The children's trace names in dir (t.PID.kids.csv), sorted; their number.
static int children(const char *dir, char names[][256], int cap) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' && strncmp(e->d_name, ".memstub-record-", 16) == 0)
      ck_abort_msg("left behind: %s", e->d_name);
    size_t l = strlen(e->d_name);
    if (strncmp(e->d_name, "t.", 2) || strcmp(e->d_name, "t.csv") == 0 || l < 9 ||
        strcmp(e->d_name + l - 9, ".kids.csv"))
      continue;
    ck_assert_int_lt(n, cap);
    snprintf(names[n++], 256, "%s", e->d_name);
  }
  closedir(d);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      char tmp[256];
      memcpy(tmp, names[j], 256), memcpy(names[j], names[j - 1], 256), memcpy(names[j - 1], tmp, 256);
    }
  return n;
}

// Run MODE with --follow-children: the root holds 1 MiB, its one child
// `want` bytes and is the root's child; the child's trace name into name.
static void one_child(const char *mode, int64_t want) {
  char *dir = tu_mkdtemp();
  tu_run r = record(dir, mode, 1);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "children (--follow-children): 1 process"), "%s", r.err);
  char names[8][256];
  ck_assert_int_eq(children(dir, names, 8), 1);
  ck_assert_msg(strstr(r.err, names[0]) != NULL, "the summary lists %s: %s", names[0], r.err);
  memstub_trace *root = load(dir, "t.csv"), *kid = load(dir, names[0]);
  ck_assert_int_ge(peak_heap(root), MIB);
  ck_assert_int_lt(peak_heap(root), MIB + SLACK);  // never the child's blocks
  ck_assert_int_ge(peak_heap(kid), want);
  ck_assert_int_lt(peak_heap(kid), want + SLACK);  // never the parent's block
  if (!strcmp(mode, "fork")) {
    // Its first row is the stack at the program's fork() call, never the
    // fork handler's frames (8.8 KiB): no deeper than hold()'s calls later.
    int64_t later = 0;
    for (size_t i = 1; i < kid->n; i++)
      if (kid->pts[i].stack_bytes > later) later = kid->pts[i].stack_bytes;
    ck_assert_msg(kid->pts[0].stack_bytes > 0 && kid->pts[0].stack_bytes <= later,
                  "first row %lld B, later rows at most %lld B",
                  (long long)kid->pts[0].stack_bytes, (long long)later);
  }
  long pid = meta_long(kid, "record.pid");
  char expect[256];
  snprintf(expect, sizeof expect, "t.%ld.kids.csv", pid);
  ck_assert_str_eq(names[0], expect);
  ck_assert_int_eq(meta_long(kid, "record.parent_pid"), meta_long(root, "record.pid"));
  ck_assert_ptr_null(memstub_trace_get_meta(root, "record.parent_pid"));
  memstub_trace_free(root);
  memstub_trace_free(kid);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}

START_TEST(test_fork) { one_child("fork", 2 * MIB); }
END_TEST

START_TEST(test_fork_exec) { one_child("exec", 3 * MIB); }
END_TEST

START_TEST(test_posix_spawn) { one_child("spawn", 3 * MIB); }
END_TEST

// A forked child that forks and execs: two traces below the root, the
// grandchild's parent the child.
START_TEST(test_grandchild) {
  char *dir = tu_mkdtemp();
  tu_run r = record(dir, "tree", 1);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  char names[8][256];
  ck_assert_int_eq(children(dir, names, 8), 2);
  memstub_trace *a = load(dir, names[0]), *b = load(dir, names[1]);
  memstub_trace *child = meta_long(a, "record.parent_pid") == meta_long(b, "record.pid") ? b : a;
  memstub_trace *grand = child == a ? b : a;
  ck_assert_int_eq(meta_long(grand, "record.parent_pid"), meta_long(child, "record.pid"));
  ck_assert_int_ge(peak_heap(child), MIB);  // its own 1 MiB, made after the fork
  ck_assert_int_lt(peak_heap(child), MIB + SLACK);
  ck_assert_int_ge(peak_heap(grand), 3 * MIB);
  ck_assert_int_lt(peak_heap(grand), 3 * MIB + SLACK);
  memstub_trace_free(a);
  memstub_trace_free(b);
  tu_run_free(&r);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(test_not_followed) {
  static const char *const modes[] = {"fork", "exec", "spawn"};
  for (size_t i = 0; i < 3; i++) {
    char *dir = tu_mkdtemp();
    tu_run r = record(dir, modes[i], 0);
    ck_assert_msg(r.status == 0, "%s: status %d: %s", modes[i], r.status, r.err);
    char names[8][256];
    ck_assert_int_eq(children(dir, names, 8), 0);
    ck_assert_int_eq(tu_count_entries(dir), 1);  // t.csv alone
    tu_run_free(&r);
    tu_rmtree(dir);
    free(dir);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("record_follow");
  TCase *tc = tcase_create("follow");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_fork);
  tcase_add_test(tc, test_fork_exec);
  tcase_add_test(tc, test_posix_spawn);
  tcase_add_test(tc, test_grandchild);
  tcase_add_test(tc, test_not_followed);
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
