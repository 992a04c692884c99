/* tests/testutil.h: helpers shared by the test suites: temporary
 * directories, files, and running the memstub command. */
#ifndef MEMSTUB_TESTUTIL_H
#define MEMSTUB_TESTUTIL_H

#include <stddef.h>

// A fresh directory under $TMPDIR (removed by tu_rmtree). Never NULL.
char *tu_mkdtemp(void);
// Remove a directory tree (best effort).
void tu_rmtree(const char *dir);
// Write a file with the given contents; aborts the test on failure.
void tu_write_file(const char *path, const char *text);
// A file's contents (malloc'd, NUL-terminated), or NULL if it cannot be read.
char *tu_read_file(const char *path);
// The same, its length (binary files too) into *len when len is not NULL.
char *tu_read_file_len(const char *path, size_t *len);
int tu_exists(const char *path);
// Number of entries in dir (excluding . and ..).
int tu_count_entries(const char *dir);
// $MEMSTUB_SOURCE_DIR/rel (static buffer, valid until the next call).
const char *tu_src(const char *rel);

typedef struct tu_run {
  int status;   // exit status, or 128 + signal
  char *out;    // captured stdout (malloc'd)
  char *err;    // captured stderr (malloc'd)
} tu_run;

/* Run argv (argv[0] looked up on PATH unless it contains '/') in cwd (NULL
 * for the current directory), with stdin from /dev/null, capturing output. */
tu_run tu_exec(const char *cwd, char *const argv[]);
// Run `memstub ARGS...` ($MEMSTUB_EXE); the list ends with NULL.
tu_run tu_memstub(const char *cwd, ...);
void tu_run_free(tu_run *r);
/* Whether err (a command's standard error) holds a warning other than the
 * one that a stub's timeline rests on the recorder's own figures, which
 * any recording without --reference may give (traces/timeline.h,
 * MS__TL_ESTIMATED_SHARE): for tests whose subject is something else. */
int tu_warned(const char *err);
/* The subcommands `memstub help` lists (help and version aside): names into
 * cmds (each malloc'd, at most max), their number returned. */
size_t tu_subcommands(char *cmds[], size_t max);
/* Recompute every checksum of the data file b (len bytes, docs/formats.md,
 * "Data files") after an edit: each array's within the file, then the
 * head's (head, strings, table). Forges files that pass them. */
void tu_data_reseal(char *b, size_t len);

#endif
