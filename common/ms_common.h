/* common/ms_common.h: helpers shared by memstub's parts; not installed.
 * Internal names use the ms__ prefix. */
#ifndef MEMSTUB_COMMON_MS_COMMON_H
#define MEMSTUB_COMMON_MS_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memstub/error.h"

#define MS__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The end of a function that builds an object into *out: on success (rc >= 0)
 * *out = obj and 0; on failure obj freed with free_fn (which takes NULL) and
 * rc. rc and obj are evaluated more than once: give variables.
 *   return MS__HAND_OUT(rc, t, out, memstub_trace_free); */
#define MS__HAND_OUT(rc, obj, out, free_fn) ((rc) < 0 ? (free_fn(obj), (rc)) : (*(out) = (obj), 0))

/* The options a public function taking NULL for the defaults works with: o,
 * or def set by init (memstub_*_options_init) when o is NULL.
 *   o = MS__OPTIONS_OR(o, def, memstub_plot_options_init); */
#define MS__OPTIONS_OR(o, def, init) ((o) ? (o) : (init(&(def)), &(def)))

/* ---- atomic output files (afile.c) ------------------------------------- */

/* An output file that appears complete or not at all: data goes to a hidden
 * temporary file beside the target, which commit renames over it. Only a
 * regular file (or a new one) can be replaced so: a path naming a device,
 * FIFO or socket (/dev/null, /dev/stdout) is written in place, and "-" means
 * standard output; neither is atomic. A symbolic link is followed, so the
 * link stays and the file it names is replaced. */
typedef struct ms__afile {
  FILE *f;          // write here
  char *path;       // the file replaced (the link's target for a link); NULL for stdout
  char *tmp;        // the temporary file; NULL when written in place
} ms__afile;

/* Where an atomic write of path goes: a malloc'd path, the file to replace
 * (path itself, or what a symbolic link at path names), with *in_place set
 * when path exists but is not a regular file, so it must be written in place.
 * NULL with errno set when path is a directory (EISDIR) or out of memory. */
char *ms__afile_target(const char *path, int *in_place);

/* Open for writing. 0, or -errno with err naming path. */
int ms__afile_open(ms__afile *af, const char *path, memstub_error *err);
/* Flush, sync and rename into place; on any failure the temporary file is
 * removed and -errno returned with err set. af is closed either way. */
int ms__afile_commit(ms__afile *af, memstub_error *err);
/* Close and remove the temporary file; nothing appears at path. */
void ms__afile_abort(ms__afile *af);
/* As ms__afile_commit, but never replaces a file: the complete file appears
 * at path only if nothing is there, else -EEXIST with err naming path (the
 * temporary file is removed either way). A path written in place (a device,
 * standard output) is committed as ms__afile_commit does. */
int ms__afile_commit_new(ms__afile *af, memstub_error *err);
/* The two halves of a commit, for a caller that chooses the name last:
 * flush, sync and close the temporary file, leaving it for ms__afile_place
 * (0; or -errno with err set and af released). A file written in place or
 * standard output is committed here whole (af released, af->tmp NULL). */
int ms__afile_close_tmp(ms__afile *af, memstub_error *err);
/* Put the closed temporary file at path, replacing a file there when
 * replace is set, else only where there is none: -EEXIST then, without a
 * message and with af as it was, so that another name can be tried. Any
 * other outcome releases af: 0, or -errno with err naming path (the
 * temporary file removed). */
int ms__afile_place(ms__afile *af, const char *path, int replace, memstub_error *err);
/* Remove dir and everything in it (subdirectories too; symbolic links
 * themselves, never what they point to): for a temporary directory of
 * memstub's own. Best effort: what cannot be removed stays. */
void ms__dir_remove(const char *dir);

/* Read a whole file ("-" for stdin) into a NUL-terminated malloc'd buffer.
 * 0 or -errno with err naming path. */
int ms__read_file(const char *path, char **buf, size_t *len, memstub_error *err);
/* ms__read_file at most chunk bytes a read, and after each one step(arg,
 * the bytes read so far) unless step is NULL (the progress reader's). */
typedef void ms__read_step(void *arg, size_t done);
int ms__read_file_steps(const char *path, size_t chunk, ms__read_step *step, void *arg,
                        char **buf, size_t *len, memstub_error *err);

/* ---- numbers (num.c) --------------------------------------------------- */

/* Strict decimal integer: optional '-', digits only, no spaces, in int64
 * range. 0, -EINVAL (not a number) or -ERANGE (overflow). */
int ms__parse_i64(const char *s, size_t len, int64_t *out);
/* Strict floating point (strtod syntax, finite, whole string, no leading
 * blank). 0 or -EINVAL. */
int ms__parse_double(const char *s, double *out);
/* a + b, a * b with overflow check: 0 or -ERANGE. */
int ms__add_i64(int64_t a, int64_t b, int64_t *out);
/* Round v to the nearest int64: 0 or -ERANGE when out of range or not finite. */
int ms__round_i64(double v, int64_t *out);
/* qsort's order of int64_t values: ascending. */
int ms__cmp_i64(const void *a, const void *b);
/* Nearest rank: the smallest of the n (> 0) sorted values that at least
 * pct % of them do not exceed (pct 0: the smallest). */
int64_t ms__rank_i64(const int64_t *sorted, size_t n, unsigned pct);

/* ---- errors (error.c) ---------------------------------------------------- */

/* memstub_error_set with "WHERE: MESSAGE": where as given (a position,
 * "file:12:3"), the message from fmt and ap; returns code. For the readers'
 * printf-like failure functions. */
int ms__error_vat(memstub_error *err, int code, const char *where, const char *fmt, va_list ap);

/* ---- strings ----------------------------------------------------------- */

/* Whether s[0..n) is a C identifier: [A-Za-z_][A-Za-z0-9_]* (n > 0). */
int ms__is_ident(const char *s, size_t n);

/* Text from an input made safe to quote in a one-line message: control
 * characters become '?', and past max bytes (max <= MS__QUOTE_MAX) it is cut
 * and "..." added. Returns out. */
#define MS__QUOTE_MAX 64
const char *ms__quote(const char *s, size_t n, size_t max, char out[MS__QUOTE_MAX + 4]);

/* strdup that returns NULL on failure (no abort). */
char *ms__strdup(const char *s);
/* printf into a new malloc'd string; NULL when out of memory. */
char *ms__asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- lines of text side files (lines.c) --------------------------------- */

/* A cursor over the lines of a text file held in memory, for the strict
 * readers of memstub's side files; each line returned is NUL-terminated in
 * place. line: the number of the line last returned, from 1. */
typedef struct ms__lines {
  const char *path;
  char *p, *end;
  long line;
} ms__lines;
void ms__lines_init(ms__lines *l, const char *path, char *buf, size_t len);
/* The next line into *line, without its "\n" or "\r\n": 1, 0 at the end of
 * the input, or -EINVAL with err "path:LINE: ..." for a NUL byte in it or a
 * last line without its newline (a file cut short). */
int ms__lines_next(ms__lines *l, char **line, memstub_error *err);
/* The same for a text that stays as it is (the importers'): the line of
 * buf[0..len) at *pos, without its "\n" or "\r\n", into *s and *n, *pos
 * past it and *line (from 1) counting it. 1, 0 at the end of the input, or
 * -EINVAL with err "name:LINE:COL: truncated last line: no newline at the
 * end of the file" (*s and *n that line, COL past its end). */
int ms__text_line(const char *name, const char *buf, size_t len, size_t *pos, long *line,
                  const char **s, size_t *n, memstub_error *err);
/* Split line in place at runs of spaces into at most max fields, the last
 * keeping the rest of the line; the count. */
int ms__lines_split(char *line, char **f, int max);
/* -EINVAL with err "path:LINE: field N: " and the message (N from 1). */
int ms__lines_fail(const ms__lines *l, int n, memstub_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Field n (from 1), s, as an integer in [min, max] into *v: 0, or -EINVAL
 * with err "path:LINE: field N: 'S' is not WHAT". */
int ms__lines_i64(const ms__lines *l, int n, const char *s, int64_t min, int64_t max,
                  const char *what, int64_t *v, memstub_error *err);
/* Room for one more element of elem bytes in the array *v of capacity *cap
 * with n used (doubling it): 0, or -ENOMEM with *v unchanged. */
int ms__grow(void **v, size_t *cap, size_t n, size_t elem);

/* ---- data files (paths.c) ---------------------------------------------- */

/* Directory holding memstub's data (generator/, plots/, traces/samples/,
 * runtime/ sources): $MEMSTUB_DATADIR, else the source tree when run from a
 * build tree, else the installed share/memstub. Never NULL. */
const char *ms__datadir(void);
/* Directory holding the built libraries and generated headers (build tree or
 * installed libdir); $MEMSTUB_LIBDIR overrides. Never NULL. */
const char *ms__libdir(void);
/* Directory holding the public headers (the parent of memstub/). */
const char *ms__includedir(void);

/* ---- figures for humans (units.c) ------------------------------------------
 * For summaries and text figures; CSV and JSON keep raw numbers. Both write
 * into buf (cap bytes, at least MS__FMT_MAX), cut rather than overflow, and
 * return buf. */
#define MS__FMT_MAX 32
/* Bytes in binary units: "512 B", "1.5 KiB", "20.0 MiB", "3.2 GiB", "1.0 TiB"
 * (one decimal from KiB up; negative values keep their sign). */
const char *ms__fmt_bytes(int64_t bytes, char *buf, size_t cap);
/* Nanoseconds with three significant digits: "850 ns", "250 µs", "12.5 ms",
 * "1.20 s" (seconds from 1 s up, whatever the size; sign kept). */
const char *ms__fmt_ns(int64_t ns, char *buf, size_t cap);
/* A percentage with " %": three significant digits from 1 % up ("12.3 %",
 * "1.68 %", "246 %"), two below ("0.66 %", "0.0000016 %"); a value that is
 * not 0 never prints as 0, nor one below 100 as 100. plus: "+" before a
 * positive value. */
const char *ms__fmt_pct(double pct, int plus, char *buf, size_t cap);
/* An exact count with thousands separators: "754", "6,652", "1,359,872". */
const char *ms__fmt_count(int64_t n, char *buf, size_t cap);
/* A large figure that is an estimate or a score, in SI steps with three
 * significant digits: "850", "68.7 k", "1.36 M", "23.0 G"; whole numbers
 * below 1000 without decimals, others "1.52", "0.25". */
const char *ms__fmt_si(double v, char *buf, size_t cap);

/* ---- block addresses to numbers (addrmap.c) --------------------------------- */

// Address (never 0) -> two numbers; zero-initialised is empty.
typedef struct ms__addrmap {
  uint64_t *key;  // 0: an empty slot
  int64_t *a, *b;
  size_t cap, n;  // slots (a power of two), keys held
} ms__addrmap;

// Set key's numbers. 0 (a new key), 1 (it was there: replaced) or -ENOMEM (m as it was).
int ms__addrmap_put(ms__addrmap *m, uint64_t key, int64_t a, int64_t b);
// Take key out, its numbers into *a and *b (either may be NULL). 1, or 0 when it is not there.
int ms__addrmap_take(ms__addrmap *m, uint64_t key, int64_t *a, int64_t *b);
void ms__addrmap_free(ms__addrmap *m);

/* ---- progress on a terminal (progress.c) -----------------------------------
 * One line on stderr for a long step, redrawn at most every 100 ms and first
 * drawn 250 ms after ms__progress_begin (short steps print nothing), erased
 * by ms__progress_end. Everything is a no-op when stderr is not a terminal
 * or MEMSTUB_QUIET is set. For the command's steps, never library code.
 *
 *   ms__progress p;
 *   ms__progress_begin(&p, "memstub gen: writing memuse.h", rows, 0);
 *   for (...) ms__progress_update(&p, done);   // "LABEL  done / total (NN%)"
 *   ms__progress_end(&p);
 */
typedef struct ms__progress {
  const char *label;  // the caller's, kept until the end
  uint64_t total;     // 0: unknown (no percentage)
  int bytes;          // figures as bytes (KiB, MiB) rather than counts
  int on, drawn;
  int64_t next_ns;
} ms__progress;
// Whether progress is drawn (stderr is a terminal, MEMSTUB_QUIET unset).
int ms__progress_enabled(void);
void ms__progress_begin(ms__progress *p, const char *label, uint64_t total, int bytes);
void ms__progress_update(ms__progress *p, uint64_t done);
// A step that cannot count: its label drawn at once (when on), until the end.
void ms__progress_stage(ms__progress *p, const char *label);
void ms__progress_end(ms__progress *p);
/* ms__read_file, with "LABEL  read / size (NN%)" while a regular file of 8 MiB
 * or more is read on a terminal. 0 or -errno with err naming path. */
int ms__progress_read_file(const char *path, const char *label, char **buf, size_t *len,
                           memstub_error *err);

#endif
