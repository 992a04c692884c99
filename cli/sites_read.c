/* cli/sites_read.c: the reader of TRACE.sites (cli/sites_read.h,
 * docs/formats.md#allocation-sites), as strict as the trace reader: a file
 * cut short, a key missing or given twice, a number out of range or an
 * address that is not hex are refused with "path:LINE: field N: ...". */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ms_common.h"
#include "sites_read.h"

void ms_cli_sites_site_free(ms_cli_sites_site *st) {
  for (size_t k = 0; k < st->nframes; k++) {
    free(st->frames[k].function);
    free(st->frames[k].file);
  }
  free(st->frames);
  st->frames = NULL, st->nframes = 0;
}

void ms_cli_sites_file_free(ms_cli_sites_file *s) {
  for (size_t i = 0; i < s->nmaps; i++) free(s->maps[i].path);
  for (size_t i = 0; i < s->nsites; i++) ms_cli_sites_site_free(&s->sites[i]);
  free(s->maps);
  free(s->sites);
  free(s->path);
  memset(s, 0, sizeof *s);
}

// Field n (from 1), s, as 0x and 1 to 16 hex digits into *v.
static int hex(const ms__lines *l, int n, const char *s, const char *what, uint64_t *v,
               memstub_error *err) {
  uint64_t u = 0;
  size_t len = strlen(s), i = 2;
  int ok = len > 2 && len <= 18 && s[0] == '0' && s[1] == 'x';
  for (; ok && i < len; i++) {
    int c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    ok = d >= 0;
    u = u * 16 + (uint64_t)(d < 0 ? 0 : d);
  }
  char q[MS__QUOTE_MAX + 4];
  if (!ok) return ms__lines_fail(l, n, err, "'%s' is not %s in hex (0x...)", ms__quote(s, len, 32, q), what);
  *v = u;
  return 0;
}

typedef struct reader {
  ms__lines L;
  ms_cli_sites_file *s;
  memstub_error *err;
  size_t cap_m, cap_s;
  unsigned seen;    // the keys read, one bit each
  int64_t tot[4];   // the sites' figures summed
} reader;

static const char *const keys[] = {"interval_bytes", "peak_heap_bytes", "peak_time_ns",
                                   "snapshots", "sampled", "dropped"};
enum { NKEYS = 6 };

// A key line (key k): KEY VALUE, once.
static int key_line(reader *r, size_t k, char **f, int n) {
  static const int64_t lo[NKEYS] = {1, 0, -1, 0, 0, 0};
  static const char *const what[NKEYS] = {
      "a byte count (1 or more)", "a byte count (0 or more)", "a time in ns (-1: unknown)",
      "a count (0 or more)", "a count (0 or more)", "a count (0 or more)"};
  if (n != 2) return ms__lines_fail(&r->L, n < 2 ? 2 : 3, r->err, "expected '%s VALUE'", keys[k]);
  if (r->seen & 1u << k) return ms__lines_fail(&r->L, 1, r->err, "a second %s line", keys[k]);
  r->seen |= 1u << k;
  int64_t *vals[NKEYS] = {&r->s->interval, &r->s->peak_heap, &r->s->peak_time,
                          &r->s->snapshots, &r->s->sampled, &r->s->dropped};
  return ms__lines_i64(&r->L, 2, f[1], lo[k], INT64_MAX, what[k], vals[k], r->err);
}

// map LOW HIGH OFFSET PATH
static int map_line(reader *r, char **f, int n) {
  if (n != 5)
    return ms__lines_fail(&r->L, n + 1, r->err, "expected 'map LOW HIGH OFFSET PATH'");
  ms_cli_sites_map m = {0};
  int rc = hex(&r->L, 2, f[1], "an address", &m.lo, r->err);
  if (rc == 0) rc = hex(&r->L, 3, f[2], "an address", &m.hi, r->err);
  if (rc == 0) rc = hex(&r->L, 4, f[3], "a file offset", &m.off, r->err);
  if (rc < 0) return rc;
  if (m.hi <= m.lo)
    return ms__lines_fail(&r->L, 3, r->err, "the mapping ends (0x%" PRIx64 ") before it begins "
                          "(0x%" PRIx64 ")", m.hi, m.lo);
  if (f[4][0] != '/')
    return ms__lines_fail(&r->L, 5, r->err, "expected the mapping's file, an absolute path");
  for (const unsigned char *c = (const unsigned char *)f[4]; *c; c++)
    if (*c < 0x20 || *c == 0x7f)  // the recorder leaves such files out: the line could not hold them
      return ms__lines_fail(&r->L, 5, r->err, "a control character (0x%02x) in the mapping's file",
                            *c);
  ms_cli_sites_file *s = r->s;
  if (ms__grow((void **)&s->maps, &r->cap_m, s->nmaps, sizeof *s->maps) < 0 ||
      !(m.path = ms__strdup(f[4])))
    return memstub_error_set(r->err, -ENOMEM, "out of memory");
  s->maps[s->nmaps++] = m;
  return 0;
}

// site PEAK_BYTES PEAK_BLOCKS ALLOC_BYTES ALLOC_BLOCKS PC...
static int site_line(reader *r, char **f, int n) {
  static const char *const what[4] = {"a byte count (0 or more)", "a block count (0 or more)",
                                      "a byte count (0 or more)", "a block count (0 or more)"};
  if (n < 5)
    return ms__lines_fail(&r->L, n + 1, r->err,
                          "expected 'site PEAK_BYTES PEAK_BLOCKS ALLOC_BYTES ALLOC_BLOCKS PC...'");
  if (n > 5 + MS_CLI_SITES_MAX_FRAMES)
    return ms__lines_fail(&r->L, 6 + MS_CLI_SITES_MAX_FRAMES, r->err,
                          "more than %d return addresses", MS_CLI_SITES_MAX_FRAMES);
  int64_t v[4];
  for (int k = 0; k < 4; k++) {
    int rc = ms__lines_i64(&r->L, k + 2, f[k + 1], 0, INT64_MAX, what[k], &v[k], r->err);
    if (rc < 0) return rc;
  }
  if (v[0] > v[2])
    return ms__lines_fail(&r->L, 2, r->err, "more bytes at the peak (%" PRId64 ") than allocated "
                          "(%" PRId64 ")", v[0], v[2]);
  for (int k = 0; k < 4; k++)
    if (__builtin_add_overflow(r->tot[k], v[k], &r->tot[k]))
      return ms__lines_fail(&r->L, k + 2, r->err, "the sites' figures add up beyond 64 bits");
  ms_cli_sites_site st = {.peak = v[0], .peak_n = v[1], .alloc = v[2], .alloc_n = v[3],
                          .rep_peak = v[0], .nbt = 1};
  ms_cli_sites_file *s = r->s;
  if (ms__grow((void **)&s->sites, &r->cap_s, s->nsites, sizeof *s->sites) < 0 ||
      !(st.frames = calloc((size_t)(n - 5) + 1, sizeof *st.frames)))
    return memstub_error_set(r->err, -ENOMEM, "out of memory");
  s->sites[s->nsites++] = st;  // freed with the file from here on
  ms_cli_sites_site *sp = &s->sites[s->nsites - 1];
  for (int k = 5; k < n; k++) {
    uint64_t pc;
    int rc = hex(&r->L, k + 1, f[k], "a return address", &pc, r->err);
    if (rc < 0) return rc;
    sp->frames[sp->nframes++] = (ms_cli_sites_frame){.pc = pc, .map = -1};
  }
  return 0;
}

static int read_line(reader *r, char *line) {
  char *f[6 + MS_CLI_SITES_MAX_FRAMES];
  // A map's PATH is the rest of its line (it may hold blanks).
  const char *w = line + strspn(line, " ");
  int is_map = strncmp(w, "map", 3) == 0 && (w[3] == ' ' || w[3] == '\0');
  int n = ms__lines_split(line, f, is_map ? 5 : 6 + MS_CLI_SITES_MAX_FRAMES);
  if (n == 0 || f[0][0] == '#') return 0;  // blank, or a comment
  if (is_map) return map_line(r, f, n);
  if (strcmp(f[0], "site") == 0) return site_line(r, f, n);
  for (size_t k = 0; k < NKEYS; k++)
    if (strcmp(f[0], keys[k]) == 0) return key_line(r, k, f, n);
  char q[MS__QUOTE_MAX + 4];
  return ms__lines_fail(&r->L, 1, r->err, "'%s' is not interval_bytes, peak_heap_bytes, "
                        "peak_time_ns, snapshots, sampled, dropped, map or site",
                        ms__quote(f[0], strlen(f[0]), 32, q));
}

int ms_cli_sites_read(const char *path, ms_cli_sites_file *s, memstub_error *err) {
  memset(s, 0, sizeof *s);
  s->peak_time = -1;
  char *buf;
  size_t len;
  int rc = ms__read_file(path, &buf, &len, err);
  if (rc < 0) return rc;
  if (!(s->path = ms__strdup(path))) {
    free(buf);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  reader r = {.s = s, .err = err};
  ms__lines_init(&r.L, path, buf, len);
  char *line;
  while (rc == 0 && (rc = ms__lines_next(&r.L, &line, err)) > 0) {
    if (r.L.line > 1)
      rc = read_line(&r, line);
    else if (strcmp(line, "# memstub-sites 1") != 0)
      rc = memstub_error_set(err, -EINVAL, "%s:1: not a memstub sites file (expected "
                             "'# memstub-sites 1')", path);
    else
      rc = 0;
  }
  if (rc == 0 && r.L.line == 0)
    rc = memstub_error_set(err, -EINVAL, "%s:1: empty file (expected '# memstub-sites 1')", path);
  for (size_t k = 0; rc == 0 && k < NKEYS; k++)
    if (!(r.seen & 1u << k))
      rc = memstub_error_set(err, -EINVAL, "%s:%ld: no %s line", path, r.L.line, keys[k]);
  free(buf);
  return rc;
}
