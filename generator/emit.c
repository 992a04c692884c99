// memstub_gen_emit: stub data -> m4 input -> GNU m4 -> header file.
//
// m4 shapes the header (generator/memuse.h.m4: the comment, the types, the
// names, the descriptor); the points, the bulk of a large header, are
// formatted in C (emit_data.c) into temporary files that the template copies
// in unexpanded (m4_undivert), so no point passes through macro expansion.
// A header of several threads is emit_threads.c.
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "ms_spawn.h"
#include "memstub/memstub.h"
#include "memstub/runtime.h"
#include "prim.h"

extern const char ms__memuse_template[];  // generator/memuse.h.m4, embedded
extern const unsigned long ms__memuse_template_len;

int memstub_gen_format_parse(const char *s, int *format) {
  static const char *const names[] = {"auto", "listing", "compact"};
  for (int i = 0; i < 3; i++)
    if (strcmp(s, names[i]) == 0) {
      *format = i;
      return 0;
    }
  return -EINVAL;
}

int memstub_gen_format_for(int format, int64_t numdata) {
  if (format == MEMSTUB_GEN_FORMAT_LISTING || format == MEMSTUB_GEN_FORMAT_COMPACT) return format;
  return numdata <= MEMSTUB_GEN_LISTING_MAX ? MEMSTUB_GEN_FORMAT_LISTING
                                            : MEMSTUB_GEN_FORMAT_COMPACT;
}


/* ---- m4's input: the template, then the stub's definitions and calls ----- */


/* Define macro `m` as s, quoted twice so its expansion is never rescanned:
 * as C string contents (others as octal escapes), and as comment text in
 * m_TXT (others as '?'). */
static void define_string(FILE *f, const char *m, const char *s) {
  fprintf(f, "m4_define([[%s]], [[[[", m);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (ms__gen_is_safe(*p))
      fputc(*p, f);
    else
      fprintf(f, "\\%03o", *p);
  fprintf(f, "]]]])m4_dnl\nm4_define([[%s_TXT]], [[[[", m);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) fputc(ms__gen_is_safe(*p) ? *p : '?', f);
  fputs("]]]])m4_dnl\n", f);
}

static void define_num(FILE *f, const char *m, long long v) {
  fprintf(f, "m4_define([[%s]], [[%lld]])m4_dnl\n", m, v);
}

// v as a C double literal that reads back as v: the shortest of %.15g and %.17g.
static void put_double(FILE *f, double v) {
  char b[32];
  snprintf(b, sizeof b, "%.15g", v);
  if (strtod(b, NULL) != v) snprintf(b, sizeof b, "%.17g", v);
  fputs(b, f);
}

/* gen --hold: MS_RELEASE(mode, n, after_ns, bytes), the schedule's arrays
 * as quoted arguments (numbers and commas only). */
static void write_release(FILE *f, const struct memstub_release *r) {
  fprintf(f, "MS_RELEASE([[%d]], [[%lld]], [[", (int)r->mode, (long long)r->n);
  for (int64_t i = 0; i < r->n; i++)
    fprintf(f, "%s%lld", i ? (i % 8 ? ", " : ",\n  ") : "  ", (long long)r->after_ns[i]);
  if (!r->n) fputs("  0", f);  // arrays of one unused entry: C has no empty ones
  fputs("]], [[", f);
  if (!r->n) fputs("  0", f);
  for (int64_t i = 0; i < r->n; i++)
    fprintf(f, "%s%lld", i ? (i % 8 ? ", " : ",\n  ") : "  ", (long long)r->bytes[i]);
  fputs("]])m4_dnl\n", f);
}

/* The m4 input of g's header; name is g->name, or for a thread's stub in a
 * threads header NAME_tT. */
static void write_input(FILE *f, const memstub_gen *g, const char *name, const ms__gen_data *d) {
  const struct memstub_stub *s = &g->stub;
  fwrite(ms__memuse_template, 1, ms__memuse_template_len, f);
  // The name, quoted twice like the strings: nothing in it is ever taken
  // for a macro (a name is checked, but a thread's NAME_tT is made here).
  const char *sep = *name ? "_" : "";
  fprintf(f, "m4_define([[MS_VERSION]], [[%s]])m4_dnl\n", MEMSTUB_VERSION_STRING);
  fprintf(f, "m4_define([[MS_PREFIX]], [[[[%s%s]]]])m4_dnl\n", name, sep);
  fprintf(f, "m4_define([[MS_NAME]], [[[[%s]]]])m4_dnl\n", name);
  fprintf(f, "m4_define([[MS_GUARD]], [[[[MEMSTUB_GEN_%s%sMEMUSE_H]]]])m4_dnl\n", name, sep);
  define_string(f, "MS_SOURCE", g->source);
  define_string(f, "MS_TRANSFORMS", g->transforms);
  define_string(f, "MS_CALIBRATION", g->calibration);
  char comp[512];
  ms__gen_comp_summary(&g->comp, ms__gen_comp_timing(g), comp, sizeof comp);
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
  define_num(f, "MS_RESIDENT", g->mapped ? 1 : 0);
  if (g->mapped) {
    define_num(f, "MS_RSS_BASE", s->rss_base);
    define_num(f, "MS_PEAK_RSS", g->peak_rss);
    define_num(f, "MS_MAPPED_BASE", s->mapped_base);
    define_num(f, "MS_PEAK_MAPPED", g->peak_mapped);
  }
  define_num(f, "MS_WORK", g->cpu ? 1 : 0);
  if (g->cpu) {
    define_num(f, "MS_NCALLTAB", g->ncalltab);
    define_num(f, "MS_WORK_CPU", g->work_cpu_ns);
    define_num(f, "MS_WORK_CALLS", g->work_calls);
    define_num(f, "MS_WORK_BYTES", g->work_bytes);
    define_num(f, "MS_WORK_OVERHEAD", g->work_overhead_ns);
    define_num(f, "MS_WORK_CLAMPED", g->work_clamped);
    define_num(f, "MS_WORK_LATE", g->work_late);
    define_num(f, "MS_WORK_LATE_NS", g->work_late_ns);
    define_num(f, "MS_WORK_BLOCK_FREES", g->work_block_frees);
  }
  define_num(f, "MS_MODEL", g->has_model);
  if (g->has_model) {  // the work model, as C double literals
    fputs("m4_define([[MS_WORK_MODEL]], [[", f);
    for (int k = 0; k < MEMSTUB_STUB_MODEL_N; k++) {
      if (k) fputs(", ", f);
      put_double(f, g->work_model[k]);
    }
    fputs("]])m4_dnl\nm4_define([[MS_WORK_MEM_SHARE]], [[", f);
    put_double(f, g->work_model[MEMSTUB_STUB_MODEL_SHARE]);
    fputs("]])m4_dnl\n", f);
  }
  fputs("MS_BEGIN[[]]m4_dnl\n", f);
  if (d->format == MEMSTUB_GEN_FORMAT_COMPACT)
    fprintf(f, "MS_COMPACT([[%s]])m4_dnl\n", d->file[0]);
  else
    fprintf(f, "MS_LISTING([[%s]], [[%s]])m4_dnl\n", d->file[0], d->file[1]);
  if (g->mapped && d->format != MEMSTUB_GEN_FORMAT_COMPACT)
    fprintf(f, "MS_RESIDENT_LISTING([[%s]], [[%s]])m4_dnl\n", d->file[2], d->file[3]);
  if (g->cpu && d->format != MEMSTUB_GEN_FORMAT_COMPACT)
    fprintf(f, "MS_WORK_LISTING([[%s]], [[%s]], [[%s]], [[%s]])m4_dnl\n", d->file[4], d->file[5],
            d->file[6], d->file[7]);
  if (d->release) write_release(f, d->release);
  fputs("MS_END[[]]m4_dnl\n", f);
}

// Write m4's input for g under name into d's directory (d->file[INPUT]).
static int write_input_file(const memstub_gen *g, const char *name, ms__gen_data *d,
                            memstub_error *err) {
  char *path = d->file[MS__GEN_DATA_INPUT];
  snprintf(path, sizeof d->file[0], "%s/input.m4", d->dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
  if (!f) {
    int e = errno;
    if (fd >= 0) close(fd);
    else path[0] = '\0';
    return memstub_error_set(err, -e, "%s/input.m4: cannot create: %s", d->dir, strerror(e));
  }
  setvbuf(f, NULL, _IOFBF, 1 << 16);
  errno = 0;
  write_input(f, g, name, d);
  int e = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
  if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
  if (e) return memstub_error_set(err, -e, "%s: write failed: %s", path, strerror(e));
  return 0;
}

/* ---- running m4 ------------------------------------------------------------- */

// The first line of what m4 said on stderr, fit for a message ("" if nothing).
static const char *m4_said(const ms__spawn_result *r, char *buf, size_t cap) {
  size_t n = 0;
  const char *s = r->err ? r->err : "";
  while (*s == '\n') s++;
  for (; s[n] && s[n] != '\n' && n + 1 < cap; n++)
    buf[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
  buf[n] = '\0';
  return buf;
}

int ms__gen_m4(const memstub_gen *g, const char *name, ms__gen_data *d, ms__gen_out *out,
               memstub_error *err) {
  const char *m4 = getenv("MEMSTUB_M4");
  if (!m4 || !*m4) m4 = "m4";
  const char *oname = strcmp(out->path, "-") == 0 ? "standard output" : out->path;
  int rc = write_input_file(g, name, d, err);
  if (rc < 0) return rc;
  // m4 writes to the descriptor directly: what the stream holds goes first.
  if (fflush(out->f) != 0)
    return memstub_error_set(err, -errno, "%s: write failed: %s", oname, strerror(errno));
  int in = open(d->file[MS__GEN_DATA_INPUT], O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return memstub_error_set(err, -errno, "%s: %s", d->file[MS__GEN_DATA_INPUT], strerror(errno));
  ms__spawn_opts so;
  ms__spawn_opts_init(&so);
  so.in = in;
  so.out = fileno(out->f);
  so.err = MS__SPAWN_CAPTURE;
  so.what = "m4";
  // m4 copies the points unexpanded (0.1 s for 100 MB): a minute, and a
  // second more for every MiB of them, is a hang.
  rc = ms__spawn_limit(&so, 60, 1, d->bytes, err);
  char *argv[] = {(char *)m4, "-P", "--fatal-warnings", "-", NULL};
  ms__child child;
  if (rc == 0 && (rc = ms__spawn_start(&child, argv, &so, err)) < 0) {
    close(in);
    return memstub_error_set(err, rc, "cannot run GNU m4 ('%s'): %s; install it (Debian: "
                             "apt-get install m4) or set MEMSTUB_M4", m4, strerror(-rc));
  }
  if (rc < 0) {
    close(in);
    return rc;
  }
  close(in);
  // -ECHILD when the caller ignores SIGCHLD: m4 was reaped unseen, its
  // status is lost, and a header it may have cut short must not be taken.
  ms__spawn_result r;
  rc = ms__spawn_wait(&child, &r, err);  // "m4 ('m4') did not finish within 60 s: ..."
  char said[200], how[96];
  m4_said(&r, said, sizeof said);
  if (rc == 0 && ms__spawn_status(&r) != 0)
    rc = memstub_error_set(err, -EIO, "m4 ('%s') failed on generator/memuse.h.m4 (%s)%s%s", m4,
                           ms__spawn_describe(&r, how, sizeof how), *said ? ": " : "", said);
  ms__spawn_result_free(&r);
  if (rc < 0) {
    memstub_error_prefix(err, oname);
    return rc;
  }
  fseek(out->f, 0, SEEK_END);  // past what m4 wrote
  return 0;
}

/* ---- the output --------------------------------------------------------------- */

int ms__gen_out_open(ms__gen_out *o, const char *path, memstub_error *err) {
  *o = (ms__gen_out){.path = path};
  if (strcmp(path, "-") != 0) {
    int rc = ms__afile_open(&o->af, path, err);
    if (rc < 0) return rc;
    if (o->af.tmp) {  // a regular file: m4 writes into its temporary file
      o->f = o->af.f;
      return 0;
    }
  }
  if (!(o->tmp = tmpfile())) {
    int e = errno;
    if (o->af.f) ms__afile_abort(&o->af);
    return memstub_error_set(err, -e, "cannot create a temporary file: %s", strerror(e));
  }
  o->f = o->tmp;
  return 0;
}

// Copy the temporary file to, naming it name in an error.
static int copy_out(FILE *tmp, FILE *to, const char *name, memstub_error *err) {
  char buf[1 << 16];
  size_t n;
  rewind(tmp);
  errno = 0;
  while ((n = fread(buf, 1, sizeof buf, tmp)) > 0)
    if (fwrite(buf, 1, n, to) != n) break;
  int e = ferror(to) ? (errno ? errno : EIO) : 0;
  if (!e && fflush(to) != 0) e = errno ? errno : EIO;
  if (e) return memstub_error_set(err, -e, "%s: write failed: %s", name, strerror(e));
  if (ferror(tmp)) return memstub_error_set(err, -EIO, "(temporary file): read failed");
  return 0;
}

int ms__gen_out_close(ms__gen_out *o, int rc, int64_t *sync_ns, memstub_error *err) {
  int64_t t0 = ms__prim_now_ns();
  int is_stdout = strcmp(o->path, "-") == 0;
  if (rc == 0 && (fflush(o->f) != 0 || ferror(o->f))) {
    int e = errno ? errno : EIO;
    rc = memstub_error_set(err, -e, "%s: write failed: %s", o->tmp ? "(temporary file)" : o->path,
                           strerror(e));
  }
  if (o->tmp) {
    if (rc == 0) rc = copy_out(o->tmp, is_stdout ? stdout : o->af.f, is_stdout ? "standard output" : o->path, err);
    fclose(o->tmp);
  }
  if (!is_stdout) {
    if (rc < 0) ms__afile_abort(&o->af);
    else rc = ms__afile_commit(&o->af, err);
  }
  if (sync_ns) *sync_ns = ms__prim_now_ns() - t0;
  return rc;
}

/* ---- one stub's header ---------------------------------------------------------- */

int memstub_gen_emit(const memstub_gen *g, const char *path, memstub_error *err) {
  return memstub_gen_emit_ex(g, path, NULL, NULL, err);
}

int memstub_gen_emit_ex(const memstub_gen *g, const char *path, const memstub_gen_emit_options *o,
                        memstub_gen_emit_report *rep, memstub_error *err) {
  if (g->stub.numdata < 1) return memstub_error_set(err, -EINVAL, "no points to emit");
  memstub_gen_emit_options none = {0};
  if (!o) o = &none;
  if (o->format < MEMSTUB_GEN_FORMAT_AUTO || o->format > MEMSTUB_GEN_FORMAT_COMPACT)
    return memstub_error_set(err, -EINVAL, "unknown header form %d", o->format);
  int rc;
  if (o->release && (rc = memstub_release_check(o->release, err)) < 0) return rc;
  ms__gen_data d = {.format = memstub_gen_format_for(o->format, g->stub.numdata),
                    .release = o->release};
  int64_t t0 = ms__prim_now_ns();
  rc = ms__gen_data_write(g, o, &d, err);
  int64_t t1 = ms__prim_now_ns();
  int64_t sync_ns = 0;
  ms__gen_out out;
  if (rc == 0 && (rc = ms__gen_out_open(&out, path, err)) == 0) {
    rc = ms__gen_m4(g, g->name, &d, &out, err);
    rc = ms__gen_out_close(&out, rc, &sync_ns, err);
  }
  int64_t t2 = ms__prim_now_ns();
  ms__gen_data_remove(&d);
  if (rc == 0 && rep) {
    rep->format = d.format;
    rep->format_ns = t1 - t0;
    rep->m4_ns = t2 - t1 - sync_ns;
    rep->sync_ns = sync_ns;
    rep->data_bytes = d.bytes;
  }
  return rc;
}

/* ---- the data file (memstub gen --data) ------------------------------------ */

int memstub_gen_emit_data(const memstub_gen *g, const char *path, memstub_error *err) {
  if (g->stub.numdata < 1) return memstub_error_set(err, -EINVAL, "no points to emit");
  // The runtime's writer: the same table of arrays as its reader.
  struct memstub_stub s;
  ms__gen_stub_out(g, &s);  // with the work model (layout 5) when g has one
  return memstub_stub_data_write(&s, path, err);
}
