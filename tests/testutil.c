// Helpers shared by the test suites (see testutil.h).
#include "testutil.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

char *tu_mkdtemp(void) {
  const char *base = getenv("TMPDIR");
  char *path;
  ck_assert(asprintf(&path, "%s/memstub-test-XXXXXX", base && *base ? base : "/tmp") > 0);
  ck_assert_ptr_nonnull(mkdtemp(path));
  return path;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(p);
}

void tu_rmtree(const char *dir) { nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

void tu_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_msg(f != NULL, "cannot create %s", path);
  ck_assert(fputs(text, f) >= 0);
  ck_assert(fclose(f) == 0);
}

char *tu_read_file_len(const char *path, size_t *lenp) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (len + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  buf[len] = '\0';
  if (lenp) *lenp = len;
  return buf;
}

char *tu_read_file(const char *path) { return tu_read_file_len(path, NULL); }

int tu_exists(const char *path) { return access(path, F_OK) == 0; }

int tu_count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

const char *tu_src(const char *rel) {
  static char buf[4096];
  const char *src = getenv("MEMSTUB_SOURCE_DIR");
  ck_assert_msg(src != NULL, "MEMSTUB_SOURCE_DIR is not set (run the tests with ctest)");
  snprintf(buf, sizeof buf, "%s/%s", src, rel);
  return buf;
}

static char *slurp_fd(int fd) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  ssize_t n;
  while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
    len += (size_t)n;
    if (len + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  buf[len] = '\0';
  return buf;
}

tu_run tu_exec(const char *cwd, char *const argv[]) {
  // Output goes to temporary files, so a chatty child never blocks on a pipe.
  FILE *fo = tmpfile(), *fe = tmpfile();
  ck_assert(fo && fe);
  pid_t pid = fork();
  ck_assert(pid >= 0);
  if (pid == 0) {
    int nul = open("/dev/null", O_RDONLY);
    dup2(nul, 0);
    dup2(fileno(fo), 1);
    dup2(fileno(fe), 2);
    if (cwd && chdir(cwd) != 0) _exit(126);
    execvp(argv[0], argv);
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  tu_run r = {.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)};
  rewind(fo);
  rewind(fe);
  r.out = slurp_fd(fileno(fo));
  r.err = slurp_fd(fileno(fe));
  fclose(fo);
  fclose(fe);
  return r;
}

tu_run tu_memstub(const char *cwd, ...) {
  char *argv[64];
  const char *exe = getenv("MEMSTUB_EXE");
  ck_assert_msg(exe != NULL, "MEMSTUB_EXE is not set (run the tests with ctest)");
  argv[0] = (char *)exe;
  int n = 1;
  va_list ap;
  va_start(ap, cwd);
  char *a;
  while ((a = va_arg(ap, char *)) && n < 63) argv[n++] = a;
  va_end(ap);
  argv[n] = NULL;
  return tu_exec(cwd, argv);
}

void tu_run_free(tu_run *r) {
  free(r->out);
  free(r->err);
}

size_t tu_subcommands(char *cmds[], size_t max) {
  tu_run r = tu_memstub(NULL, "help", NULL);
  ck_assert_int_eq(r.status, 0);
  const char *at = strstr(r.out, "\ncommands:\n");
  ck_assert_ptr_nonnull(at);
  size_t n = 0;
  for (at = strchr(at + 1, '\n') + 1; at[0] == ' ' && at[1] == ' ' && n < max;) {
    char name[32];
    ck_assert_int_eq(sscanf(at, " %31s", name), 1);
    if (strcmp(name, "help") != 0 && strcmp(name, "version") != 0) cmds[n++] = strdup(name);
    at = strchr(at, '\n') + 1;
  }
  tu_run_free(&r);
  return n;
}
