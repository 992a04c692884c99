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

/* The data file's checksum, as docs/formats.md describes it (a copy of
 * runtime/datafile.c's, so the test can forge files that pass it). */
static uint64_t data_sum64(const void *p, uint64_t n, uint64_t seed) {
  const uint64_t P = UINT64_C(0x9e3779b97f4a7c15);
  const unsigned char *c = p;
  uint64_t k = n / 8, i = 0, w[4];
  uint64_t a = seed ^ n, b = a + 1, cc = a + 2, d = a + 3;
  for (; i + 4 <= k; i += 4) {
    memcpy(w, c + i * 8, 32);
    a = (a ^ w[0]) * P;
    b = (b ^ w[1]) * P;
    cc = (cc ^ w[2]) * P;
    d = (d ^ w[3]) * P;
  }
  for (uint64_t r = k % 4; r > 0; r--) {  // the last k % 4 words, at most three
    memcpy(w, c + (k - r) * 8, 8);
    a = (a ^ w[0]) * P;
  }
  uint64_t h = a ^ (b << 17 | b >> 47) ^ (cc << 31 | cc >> 33) ^ (d << 47 | d >> 17);
  h ^= h >> 29;
  h *= UINT64_C(0xbf58476d1ce4e5b9);
  return h ^ (h >> 32);
}

static uint64_t data_get(const char *b, size_t at, size_t n) {
  uint64_t v = 0;
  memcpy(&v, b + at, n);
  return v;
}

void tu_data_reseal(char *b, size_t len) {
  uint32_t narrays = (uint32_t)data_get(b, 32, 4);
  uint64_t strings_len = data_get(b, 152, 8), table = data_get(b, 160, 8);
  for (uint32_t i = 0; i < narrays; i++) {
    size_t e = (size_t)table + i * 48;
    uint64_t bytes = data_get(b, e + 24, 8) * data_get(b, e + 16, 4), off = data_get(b, e + 32, 8);
    uint64_t sum = off <= len && bytes <= len - off ? data_sum64(b + off, bytes, 0) : 0;
    if (off <= len && bytes <= len - off) memcpy(b + e + 40, &sum, 8);
  }
  memset(b + 168, 0, 8);
  uint64_t meta = data_sum64(b + 256, strings_len + (uint64_t)narrays * 48, 0);
  uint64_t head = data_sum64(b, 256, meta);
  memcpy(b + 168, &head, 8);
}

int tu_warned(const char *err) {
  static const char estimated[] = "the stub's timeline takes the recorder's cost out by the "
                                  "recorder's own figures";
  for (const char *w = err ? strstr(err, "warning") : NULL; w; w = strstr(w + 1, "warning")) {
    const char *eol = strchr(w, '\n');
    const char *e = strstr(w, estimated);
    if (!e || (eol && e > eol)) return 1;
  }
  return 0;
}
