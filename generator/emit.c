// memstub_gen_emit: stub data -> m4 input -> GNU m4 -> header file.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "ms_spawn.h"
#include "memstub/memstub.h"

extern const char ms__memuse_template[];  // generator/memuse.h.m4, embedded
extern const unsigned long ms__memuse_template_len;

// Characters that stand for themselves in C strings, comments and m4 input.
static int is_safe(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr(" ._/+=:,@%-()~", c));
}

/* Define macro `m` as s, quoted twice so its expansion is never rescanned:
 * as C string contents (others as octal escapes), and as comment text in
 * m_TXT (others as '?'). */
static void define_string(FILE *f, const char *m, const char *s) {
  fprintf(f, "m4_define([[%s]], [[[[", m);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (is_safe(*p))
      fputc(*p, f);
    else
      fprintf(f, "\\%03o", *p);
  fprintf(f, "]]]])m4_dnl\nm4_define([[%s_TXT]], [[[[", m);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) fputc(is_safe(*p) ? *p : '?', f);
  fputs("]]]])m4_dnl\n", f);
}

static void define_num(FILE *f, const char *m, long long v) {
  fprintf(f, "m4_define([[%s]], [[%lld]])m4_dnl\n", m, v);
}

static void write_input(FILE *f, const memstub_gen *g) {
  const struct memstub_stub *s = &g->stub;
  fwrite(ms__memuse_template, 1, ms__memuse_template_len, f);
  // The name is any length: NAME_ and the guard are written, never truncated.
  const char *sep = *g->name ? "_" : "";
  fprintf(f, "m4_define([[MS_VERSION]], [[%s]])m4_dnl\n", MEMSTUB_VERSION_STRING);
  fprintf(f, "m4_define([[MS_PREFIX]], [[%s%s]])m4_dnl\n", g->name, sep);
  fprintf(f, "m4_define([[MS_NAME]], [[%s]])m4_dnl\n", g->name);
  fprintf(f, "m4_define([[MS_GUARD]], [[MEMSTUB_GEN_%s%sMEMUSE_H]])m4_dnl\n", g->name, sep);
  define_string(f, "MS_SOURCE", g->source);
  define_string(f, "MS_TRANSFORMS", g->transforms);
  define_string(f, "MS_CALIBRATION", g->calibration);
  char comp[512];
  ms__gen_comp_summary(&g->comp, s->timing, comp, sizeof comp);
  fprintf(f, "m4_define([[MS_COMP]], [[[[%s]]]])m4_dnl\n", comp);
  define_num(f, "MS_NUMDATA", s->numdata);
  define_num(f, "MS_NORIG", s->norig);
  define_num(f, "MS_INSERTED", s->inserted);
  define_num(f, "MS_TIME0", s->time0_ns);
  define_num(f, "MS_DURATION", s->duration_ns);
  define_num(f, "MS_TIMING", s->timing);
  define_num(f, "MS_STACK_BASE", s->stack_base);
  define_num(f, "MS_PEAK_STACK", s->peak_stack);
  define_num(f, "MS_MAX_DEPTH", s->max_depth);
  define_num(f, "MS_PUSHES", g->pushes);
  define_num(f, "MS_POPS", g->pops);
  define_num(f, "MS_CONSTANTS", g->constants);
  define_num(f, "MS_FINAL_STACK", g->final_stack);
  define_num(f, "MS_HEAP_BASE", s->heap_base);
  define_num(f, "MS_PEAK_HEAP", s->peak_heap);
  define_num(f, "MS_HEAP_UP", g->heap_up);
  define_num(f, "MS_HEAP_DOWN", g->heap_down);
  define_num(f, "MS_FINAL_HEAP", g->final_heap);
  fputs("MS_BEGIN[[]]m4_dnl\n", f);
  for (int64_t i = 0; i < s->numdata; i++)
    fprintf(f, "MS_POINT(%lld,%lld,%lld,%lld)m4_dnl\n", (long long)i, (long long)g->use[i].time,
            (long long)g->use[i].stackAlloc, (long long)g->use[i].heapAlloc);
  fputs("MS_MAP_BEGIN[[]]m4_dnl\n", f);
  for (int64_t i = 0; i < s->numdata; i += 16) {
    fputs("MS_MAP(", f);
    for (int64_t k = i; k < s->numdata && k < i + 16; k++)
      fprintf(f, "%s%lld", k > i ? "," : "", (long long)g->point[k]);
    fputs(")m4_dnl\n", f);
  }
  fputs("MS_END[[]]m4_dnl\n", f);
}

/* Run m4 reading a pipe we feed and writing to out_fd. SIGPIPE is blocked
 * while feeding (and any pending one consumed), so an m4 that dies early
 * gives EPIPE here rather than killing the caller. */
static int run_m4(const memstub_gen *g, int out_fd, memstub_error *err) {
  const char *m4 = getenv("MEMSTUB_M4");
  if (!m4 || !*m4) m4 = "m4";
  int in[2];
  if (pipe2(in, O_CLOEXEC) < 0)
    return memstub_error_set(err, -errno, "cannot create a pipe: %s", strerror(errno));
  ms__spawn_opts so;
  ms__spawn_opts_init(&so);
  so.in = in[0];
  so.out = out_fd;
  so.what = "m4";
  char *argv[] = {(char *)m4, "-P", "--fatal-warnings", "-", NULL};
  ms__child child;
  int rc = ms__spawn_start(&child, argv, &so, err);
  close(in[0]);
  if (rc < 0) {
    close(in[1]);
    return memstub_error_set(err, rc, "cannot run GNU m4 ('%s'): %s; install it (Debian: apt-get "
                             "install m4) or set MEMSTUB_M4",
                             m4, strerror(-rc));
  }
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  FILE *f = fdopen(in[1], "w");
  int werr = 0;
  if (f) {
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    write_input(f, g);
    if (fflush(f) != 0 || ferror(f)) werr = errno ? errno : EIO;
    fclose(f);
  } else {
    werr = errno;
    close(in[1]);
  }
  struct timespec zero = {0, 0};
  while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  // -ECHILD when the caller ignores SIGCHLD: m4 was reaped unseen, its
  // status is lost, and a header it may have cut short must not be taken.
  ms__spawn_result r;
  rc = ms__spawn_wait(&child, &r, err);
  ms__spawn_result_free(&r);
  if (rc < 0) return rc;  // "cannot wait for m4 ('m4'): ..."
  if (ms__spawn_status(&r) != 0) {
    char how[96];
    return memstub_error_set(err, -EIO, "m4 ('%s') failed on generator/memuse.h.m4 (%s)", m4,
                             ms__spawn_describe(&r, how, sizeof how));
  }
  if (werr) return memstub_error_set(err, -werr, "feeding m4: %s", strerror(werr));
  return 0;
}

int memstub_gen_emit(const memstub_gen *g, const char *path, memstub_error *err) {
  if (g->stub.numdata < 1) return memstub_error_set(err, -EINVAL, "no points to emit");
  int to_stdout = strcmp(path, "-") == 0;
  ms__afile af;
  FILE *tmp = NULL;
  int rc;
  // Standard output gets the header only once m4 has succeeded, via a
  // temporary file, so a failure prints nothing.
  if (to_stdout) {
    if (!(tmp = tmpfile())) return memstub_error_set(err, -errno, "tmpfile: %s", strerror(errno));
  } else if ((rc = ms__afile_open(&af, path, err)) < 0) {
    return rc;
  }
  FILE *out = to_stdout ? tmp : af.f;
  fflush(out);
  rc = run_m4(g, fileno(out), err);
  if (to_stdout) {
    if (rc == 0) {
      char buf[1 << 16];
      size_t n;
      rewind(tmp);
      while ((n = fread(buf, 1, sizeof buf, tmp)) > 0)
        if (fwrite(buf, 1, n, stdout) != n) break;
      if (fflush(stdout) != 0 || ferror(stdout))
        rc = memstub_error_set(err, -EIO, "standard output: write failed");
    }
    fclose(tmp);
    return rc;
  }
  if (rc < 0) {
    ms__afile_abort(&af);
    return rc;
  }
  // m4 wrote to the file descriptor directly; move the stream to its end.
  fseek(af.f, 0, SEEK_END);
  return ms__afile_commit(&af, err);
}
