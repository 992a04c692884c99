/* bench/system/sqlite_host.c: a host whose component is SQLite building an
 * index through its C API (issue 18). Not part of memstub.
 *
 *   sqlite_host [--rows N] [--cache-kib K] [--db PATH] [--beside-mib M] [--beside-passes P]
 *
 * before  generate N rows (an integer and a 32-character hex key) in its own
 *         memory, insert them into a fresh database file in one transaction
 *         (the connection's page cache is SQLite's default, 2000 KiB), free them
 * beside  another thread hashes and shuffles M MiB of its own, P passes
 * component  build_index(): PRAGMA cache_size=-K, CREATE INDEX on the key,
 *         PRAGMA cache_size back to the default (which gives the cache's
 *         pages back); K bounds the page cache and the sorter's memory, the
 *         optimisation under study
 * after   a full scan (count and sum over the table, not using the index),
 *         then the host sorts N integers of its own
 * Built with -DHOST_STUB_CALL=memstub_NAME, build_index() calls the stub
 * instead (-DHOST_STUB_HEADER names its header); the rest is the same.
 * Prints its phases on stderr, as one "host:" line and as `metric NAME VALUE`
 * lines (bench/system/host.h). */
#define _GNU_SOURCE
#include <sqlite3.h>
#include <unistd.h>

#include "host.h"

#ifdef HOST_STUB_CALL
#include HOST_STUB_HEADER
#endif

#define DEFAULT_CACHE_KIB 2000

static void exec_or_die(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    fprintf(stderr, "host: %s: %s\n", sql, msg ? msg : sqlite3_errmsg(db));
    exit(2);
  }
}

/* The component: its own page-cache budget, the index, the budget given back.
 * Not static, not inlined: `memstub record --function build_index` finds it
 * in the executable's symbol table. Returns 0, or exits on an SQLite error. */
__attribute__((noinline)) int build_index(sqlite3 *db, long cache_kib) {
#ifdef HOST_STUB_CALL
  (void)db;
  (void)cache_kib;
  int rc = HOST_STUB_CALL();
  if (rc != 0) {
    fprintf(stderr, "host: the stub failed: %s\n", strerror(-rc));
    exit(2);
  }
  return 0;
#else
  char sql[64];
  snprintf(sql, sizeof sql, "PRAGMA cache_size=-%ld", cache_kib);
  exec_or_die(db, sql);
  exec_or_die(db, "CREATE INDEX tb ON t(b)");
  snprintf(sql, sizeof sql, "PRAGMA cache_size=-%d", DEFAULT_CACHE_KIB);
  exec_or_die(db, sql);
  return 0;
#endif
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  long rows = 400000, cache_kib = 131072, beside_mib = 32, passes = 6;
  const char *path = "sqlite_host.db";
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--rows") == 0) rows = atol(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--cache-kib") == 0) cache_kib = atol(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--db") == 0) path = argv[++i];
    else if (i + 1 < argc && strcmp(argv[i], "--beside-mib") == 0) beside_mib = atol(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--beside-passes") == 0) passes = atol(argv[++i]);
    else {
      fprintf(stderr, "usage: sqlite_host [--rows N] [--cache-kib K] [--db PATH] "
                      "[--beside-mib M] [--beside-passes P]\n");
      return 2;
    }
  }
  if (rows <= 0 || cache_kib <= 0 || beside_mib <= 0 || passes <= 0) {
    fprintf(stderr, "host: every number must be > 0\n");
    return 2;
  }
  int64_t t0 = host_now_ns();

  // before: the rows, in the host's memory, then in the database
  uint64_t seed = 42;
  char(*keys)[33] = host_xmalloc((size_t)rows * sizeof *keys);
  for (long i = 0; i < rows; i++)
    snprintf(keys[i], sizeof keys[i], "%016llx%016llx", (unsigned long long)host_rand(&seed),
             (unsigned long long)host_rand(&seed));
  unlink(path);
  sqlite3 *db;
  if (sqlite3_open(path, &db) != SQLITE_OK) {
    fprintf(stderr, "host: %s: %s\n", path, sqlite3_errmsg(db));
    return 2;
  }
  char sql[64];
  snprintf(sql, sizeof sql, "PRAGMA cache_size=-%d", DEFAULT_CACHE_KIB);
  exec_or_die(db, sql);
  exec_or_die(db, "PRAGMA journal_mode=OFF");
  exec_or_die(db, "PRAGMA synchronous=OFF");
  exec_or_die(db, "CREATE TABLE t(a INTEGER, b TEXT)");
  exec_or_die(db, "BEGIN");
  sqlite3_stmt *ins;
  if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?, ?)", -1, &ins, NULL) != SQLITE_OK) {
    fprintf(stderr, "host: prepare: %s\n", sqlite3_errmsg(db));
    return 2;
  }
  for (long i = 0; i < rows; i++) {
    sqlite3_bind_int64(ins, 1, i);
    sqlite3_bind_text(ins, 2, keys[i], 32, SQLITE_STATIC);
    if (sqlite3_step(ins) != SQLITE_DONE) {
      fprintf(stderr, "host: insert: %s\n", sqlite3_errmsg(db));
      return 2;
    }
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  exec_or_die(db, "COMMIT");
  free(keys);
  int64_t t1 = host_now_ns();

  // beside, and the component
  host_beside side;
  host_beside_start(&side, (size_t)beside_mib << 20, (int)passes);
  long a0 = host_anon_kib(), f1 = host_minflt();
  int64_t t2 = host_now_ns();
  build_index(db, cache_kib);
  int64_t t3 = host_now_ns();
  long a1 = host_anon_kib(), f2 = host_minflt();
  host_beside_join(&side);
  int64_t t4 = host_now_ns();
  long f3 = host_minflt();

  // after: a scan of the table, then the host's own sort
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(db, "SELECT count(*), sum(length(b)) FROM t WHERE a % 7 = 3", -1, &q,
                         NULL) != SQLITE_OK || sqlite3_step(q) != SQLITE_ROW) {
    fprintf(stderr, "host: scan: %s\n", sqlite3_errmsg(db));
    return 2;
  }
  long long cnt = sqlite3_column_int64(q, 0), len = sqlite3_column_int64(q, 1);
  sqlite3_finalize(q);
  sqlite3_close(db);
  unlink(path);
  uint64_t *v = host_xmalloc((size_t)rows * sizeof *v);
  for (long i = 0; i < rows; i++) v[i] = host_rand(&seed);
  qsort(v, (size_t)rows, sizeof *v, cmp_u64);
  uint64_t mid = v[rows / 2];
  free(v);
  int64_t t5 = host_now_ns();
  long f4 = host_minflt();

  char extra[96];
  snprintf(extra, sizeof extra, "check=%llx", (unsigned long long)(cnt ^ len ^ (long long)(mid >> 20) ^ (long long)side.sum));
  host_report((int64_t[]){t0, t1, t2, t3, t4, t5}, (long[]){a0, a1}, (long[]){f1, f2, f3, f4},
              side.work_ns, extra);
  return 0;
}
