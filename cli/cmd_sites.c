/* memstub sites: the allocation sites live at the heap's peak, from the
 * TRACE.sites file `memstub record --sites` writes (docs/formats.md), with
 * function and file:line where the objects' debug info has them (addr2line,
 * run here, outside the recorded process). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/trace.h"
#include "ms_common.h"
#include "ms_spawn.h"
#include "sites_read.h"

enum { O_TOP = MS_CLI_LONG, O_JSON, O_FRAMES, O_BACKTRACES, O_SKIP };

static const ms_cli_option options[] = {
    {"top", O_TOP, "N", "the N sites with the most bytes at the peak (default 10)"},
    {"frames", O_FRAMES, "N", "frames shown per site (default 5; JSON: all)"},
    {"backtraces", O_BACKTRACES, NULL,
     "one site per distinct backtrace (default: per place\n"
     "that calls the allocator, its backtraces summed)"},
    {"skip", O_SKIP, "NAME",
     "a function that only passes allocations on, like\n"
     "operator new or xmalloc (built in): sites are placed\n"
     "past it (a prefix of the name; repeatable)"},
    MS_CLI_JSON_OPTION(O_JSON, "docs/formats.md#allocation-sites"),
    {0}};

static const ms_cli_spec spec = {
    "sites",
    "usage: memstub sites TRACE [--top N] [--frames N] [--backtraces] [--skip NAME]\n"
    "                           [--json]\n"
    "\n"
    "List the allocation sites holding the most heap at the peak of a trace\n"
    "recorded with 'memstub record --sites', as heaptrack_print's peak consumers\n"
    "and ms_print's peak snapshot do: bytes live at the peak (estimated from\n"
    "sampled allocations), their share of the peak, the blocks, the bytes the\n"
    "site allocated over the whole run, and the backtrace with function and\n"
    "file:line where the program's debug info has them (addr2line, from binutils;\n"
    "without it, object+offset). A site is a place that calls the allocator, or a\n"
    "wrapper of it such as operator new, xmalloc, g_malloc or PyObject_Malloc\n"
    "(--skip adds more): the backtraces reaching it are summed and the one holding\n"
    "the most is shown (--backtraces: each backtrace on its own). TRACE.sites\n"
    "holds the data; TRACE may also name the .sites file itself.\n"
    "\n",
    options, 24, NULL};

typedef ms_cli_sites_map map;
typedef ms_cli_sites_frame frame;
typedef ms_cli_sites_site site;
typedef ms_cli_sites_file sites_file;

/* Functions that only pass an allocation on (prefixes of addr2line's
 * demangled names): a site is the first frame past them, so that every
 * `new` in a C++ program is not one site. --skip adds more. */
static const char *const wrappers[] = {
    "operator new", "std::allocator", "std::__new_allocator", "__gnu_cxx::new_allocator",
    "std::allocator_traits", "xmalloc", "xcalloc", "xzalloc", "xrealloc", "xnmalloc", "xinmalloc",
    "x2nrealloc", "x2realloc", "xcharalloc", "xmemdup", "ximemdup", "xstrdup", "xpalloc",
    "g_malloc", "g_realloc", "g_try_malloc", "g_try_realloc", "g_slice_alloc", "g_strdup",
    "g_memdup", "PyMem_", "_PyMem_", "PyObject_Malloc", "_PyObject_Malloc", "PyObject_Calloc",
    "_PyObject_Calloc", "PyObject_Realloc", "_PyObject_Realloc", "pymalloc_", "strdup",
    "strndup", "__strdup", "__strndup", "wcsdup", NULL};
enum { WRAPPER_FRAMES = 8, MAX_SKIP = 32 };
static const char *extra_skip[MAX_SKIP + 1];

static int is_wrapper(const frame *f) {
  if (!f->function) return 0;
  for (const char *const *w = wrappers; *w; w++)
    if (strncmp(f->function, *w, strlen(*w)) == 0) return 1;
  for (const char *const *w = extra_skip; *w; w++)
    if (strncmp(f->function, *w, strlen(*w)) == 0) return 1;
  return 0;
}

// Each site's leading wrapper frames (its first WRAPPER_FRAMES symbolised).
static void find_wrappers(sites_file *s) {
  for (size_t i = 0; i < s->nsites; i++) {
    site *st = &s->sites[i];
    st->skip = 0;
    while (st->skip + 1 < st->nframes && st->skip < WRAPPER_FRAMES && is_wrapper(&st->frames[st->skip]))
      st->skip++;
  }
}

static uint64_t first_pc(const site *s) { return s->nframes ? s->frames[s->skip].pc : 0; }

static int by_first_pc(const void *a, const void *b) {
  uint64_t x = first_pc(a), y = first_pc(b);
  return x < y ? -1 : x > y;
}

static int by_peak(const void *a, const void *b) {
  const site *x = a, *y = b;
  if (x->peak != y->peak) return x->peak < y->peak ? 1 : -1;
  return x->alloc < y->alloc ? 1 : x->alloc > y->alloc ? -1 : 0;
}

/* Backtraces that allocate at the same place (the same caller of malloc, or
 * of the wrapper it went through: the same return address) become one site, as heaptrack_print groups its
 * peak consumers by location: figures summed, the backtrace holding the most
 * at the peak kept to show. Recursion and many callers otherwise split one
 * place into many small sites. Then most bytes at the peak first. */
static void group_sites(sites_file *s) {
  if (!s->nsites) return;  // sites is NULL: no site line
  qsort(s->sites, s->nsites, sizeof *s->sites, by_first_pc);
  size_t out = 0;
  for (size_t i = 0; i < s->nsites; i++) {
    site *cur = &s->sites[i];
    site *g = out ? &s->sites[out - 1] : NULL;
    if (g && cur->nframes && g->nframes && first_pc(cur) == first_pc(g)) {
      g->peak += cur->peak, g->alloc += cur->alloc;
      g->peak_n += cur->peak_n, g->alloc_n += cur->alloc_n;
      g->nbt += cur->nbt;
      if (cur->rep_peak > g->rep_peak) {  // show the bigger backtrace
        frame *f = g->frames;
        size_t n = g->nframes;
        size_t k = g->skip;
        g->frames = cur->frames, g->nframes = cur->nframes, g->rep_peak = cur->rep_peak;
        g->skip = cur->skip;
        cur->frames = f, cur->nframes = n, cur->skip = k;
      }
      ms_cli_sites_site_free(cur);
      continue;
    }
    s->sites[out++] = *cur;
  }
  s->nsites = out;
  qsort(s->sites, s->nsites, sizeof *s->sites, by_peak);
}

// 1 when fd's file starts with a 64-bit ELF header, read into *eh.
static int elf64_head(int fd, Elf64_Ehdr *eh) {
  return pread(fd, eh, sizeof *eh, 0) == (ssize_t)sizeof *eh &&
         memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64;
}

/* The address an object's debug info knows for file offset off: through the
 * PT_LOAD segment holding it (p_vaddr - p_offset), off itself when the file
 * cannot be read as a 64-bit ELF. */
static uint64_t elf_vaddr(const char *path, uint64_t off) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return off;
  Elf64_Ehdr eh;
  uint64_t v = off;
  if (elf64_head(fd, &eh) && eh.e_phentsize == sizeof(Elf64_Phdr)) {
    for (int i = 0; i < eh.e_phnum; i++) {
      Elf64_Phdr ph;
      if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph)
        break;
      if (ph.p_type == PT_LOAD && off >= ph.p_offset && off < ph.p_offset + ph.p_filesz) {
        v = off - ph.p_offset + ph.p_vaddr;
        break;
      }
    }
  }
  close(fd);
  return v;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* Function and file:line for n frames of the object at path, by one run of
 * addr2line (fr[i]->vaddr already set). On failure *why says why (once). */
static void addr2line(const char *a2l, char **env, const char *path, frame **fr, size_t n,
                      char **why) {
  char **argv = calloc(n + 6, sizeof *argv);
  char *addrs = malloc(n * 20);
  if (!argv || !addrs) {
    free(argv), free(addrs);
    return;
  }
  size_t a = 0;
  argv[a++] = (char *)a2l, argv[a++] = "-f", argv[a++] = "-C", argv[a++] = "-e";
  argv[a++] = (char *)path;
  for (size_t j = 0; j < n; j++) {
    snprintf(addrs + 20 * j, 20, "0x%" PRIx64, fr[j]->vaddr);
    argv[a++] = addrs + 20 * j;
  }
  ms__spawn_opts o;
  ms__spawn_opts_init(&o);
  o.in = MS__SPAWN_NULL, o.out = MS__SPAWN_CAPTURE, o.err = MS__SPAWN_CAPTURE;
  o.timeout_ns = 60 * (int64_t)1000000000;
  o.env = env;
  ms__spawn_result r = {0};
  memstub_error err = {0};
  if (ms__spawn_run(argv, &o, &r, &err) == 0 && ms__spawn_check(&r, a2l, NULL, &err) == 0 && r.out) {
    // Two lines per address: the function, then FILE:LINE (?? and ??:0 when unknown).
    char *line = r.out;
    for (size_t i = 0; i < n && *line; i++) {
      char *fn = line, *nl = strchr(fn, '\n');
      if (!nl) break;
      *nl = '\0';
      char *loc = nl + 1;
      nl = strchr(loc, '\n');
      if (nl) *nl = '\0';
      line = nl ? nl + 1 : loc + strlen(loc);
      if (strcmp(fn, "??") != 0) fr[i]->function = ms__strdup(fn);
      char *colon = strrchr(loc, ':');
      if (colon && strncmp(loc, "??", 2) != 0) {
        long ln = strtol(colon + 1, NULL, 10);
        if (ln > 0) {
          *colon = '\0';
          fr[i]->file = ms__strdup(loc);
          fr[i]->line = ln;
        }
      }
    }
  } else if (why && !*why) {
    *why = ms__strdup(err.msg[0] ? err.msg : "addr2line failed");
  }
  ms__spawn_result_free(&r);
  free(argv), free(addrs);
}

/* The function symbols (.symtab and .dynsym) of the ELF at path as [lo, hi)
 * ranges sorted by lo, hi[i] made the highest end of ranges 0..i; *n of
 * them (NULL, 0: none read). */
typedef struct {
  uint64_t lo, hi;
} fn_range;

static int by_lo(const void *a, const void *b) {
  const fn_range *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static fn_range *fn_ranges(const char *path, size_t *n) {
  *n = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  fn_range *r = NULL;
  size_t cap = 0;
  Elf64_Ehdr eh;
  if (elf64_head(fd, &eh) && eh.e_shentsize == sizeof(Elf64_Shdr)) {
    for (int i = 0; i < eh.e_shnum; i++) {
      Elf64_Shdr sh;
      if (pread(fd, &sh, sizeof sh, (off_t)(eh.e_shoff + (uint64_t)i * sizeof sh)) != (ssize_t)sizeof sh)
        break;
      if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || sh.sh_entsize != sizeof(Elf64_Sym) ||
          sh.sh_size > ((uint64_t)1 << 30))
        continue;
      Elf64_Sym *sy = malloc(sh.sh_size ? sh.sh_size : 1);
      if (!sy || pread(fd, sy, sh.sh_size, (off_t)sh.sh_offset) != (ssize_t)sh.sh_size) {
        free(sy);
        continue;
      }
      for (size_t k = 0; k < sh.sh_size / sizeof *sy; k++) {
        int t = ELF64_ST_TYPE(sy[k].st_info);
        if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sy[k].st_shndx == SHN_UNDEF || !sy[k].st_size) continue;
        if (*n == cap) {
          fn_range *g = realloc(r, (cap = cap ? 2 * cap : 256) * sizeof *r);
          if (!g) break;
          r = g;
        }
        r[(*n)++] = (fn_range){sy[k].st_value, sy[k].st_value + sy[k].st_size};
      }
      free(sy);
    }
  }
  close(fd);
  if (!*n) {
    free(r);
    return NULL;
  }
  qsort(r, *n, sizeof *r, by_lo);
  for (size_t i = 1; i < *n; i++)
    if (r[i].hi < r[i - 1].hi) r[i].hi = r[i - 1].hi;
  return r;
}

// 1 when a function symbol of r (fn_ranges) holds the address a.
static int in_a_function(const fn_range *r, size_t n, uint64_t a) {
  size_t lo = 0, hi = n;  // the first range starting above a
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r[mid].lo <= a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > 0 && r[lo - 1].hi > a;
}

/* A name addr2line took from a symbol table (no file:line) for an address
 * no function symbol holds is the nearest symbol below it, another
 * function's: in a stripped library, a static function's address was named
 * after the exported one before it (libsqlite3's allocator, 193 bytes past
 * the end of sqlite3ApiExit, showed as sqlite3ApiExit). Such names are
 * dropped: the frame shows as object+offset. */
static void drop_guessed_names(const char *path, frame **fr, size_t n) {
  size_t guessed = 0;
  for (size_t j = 0; j < n; j++) guessed += fr[j]->function && !fr[j]->file;
  if (!guessed) return;
  size_t nr;
  fn_range *r = fn_ranges(path, &nr);
  if (!r) return;  // no symbols read: addr2line's answer stands
  for (size_t j = 0; j < n; j++)
    if (fr[j]->function && !fr[j]->file && !in_a_function(r, nr, fr[j]->vaddr)) {
      free(fr[j]->function);
      fr[j]->function = NULL;
    }
  free(r);
}

/* Function and file:line for the first maxf frames of the first top sites
 * not looked up yet: addr2line per object, 1000 addresses a run. Frames stay
 * unknown when addr2line is missing or fails (*why says why, once). */
static void symbolise(sites_file *s, size_t top, size_t maxf, char **why) {
  size_t n = 0;
  for (size_t i = 0; i < top; i++)
    for (size_t k = 0; k < s->sites[i].nframes && k < maxf; k++) {
      frame *f = &s->sites[i].frames[k];
      if (f->looked) continue;
      uint64_t at = f->pc ? f->pc - 1 : 0;  // the call, not the return address
      for (size_t m = 0; m < s->nmaps; m++)
        if (at >= s->maps[m].lo && at < s->maps[m].hi) f->map = (int)m;
      if (f->map >= 0) {
        map *mp = &s->maps[f->map];
        if (!mp->delta_known) {  // the object's p_vaddr - p_offset, read once
          mp->delta = (int64_t)(elf_vaddr(mp->path, mp->off) - mp->off);
          mp->delta_known = 1;
        }
        f->vaddr = at - mp->lo + mp->off + (uint64_t)mp->delta;
        n++;
      }
    }
  if (!n) return;
  // addr2line must not be recorded: `memstub record` calls this with the
  // recorder's variables still set.
  extern char **environ;
  size_t ne = 0;
  while (environ[ne]) ne++;
  char **env = calloc(ne + 1, sizeof *env);
  frame **fr = calloc(n, sizeof *fr);
  if (!env || !fr) {
    free(env), free(fr);
    return;
  }
  for (size_t i = 0, k = 0; i < ne; i++)
    if (strncmp(environ[i], "MEMSTUB_RECORD_", 15) != 0 && strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
      env[k++] = environ[i];
  const char *a2l = getenv("MEMSTUB_ADDR2LINE");
  if (!a2l || !*a2l) a2l = "addr2line";
  for (size_t m = 0; m < s->nmaps; m++) {
    size_t j = 0;
    for (size_t i = 0; i < top; i++)
      for (size_t k = 0; k < s->sites[i].nframes && k < maxf; k++) {
        frame *f = &s->sites[i].frames[k];
        if (f->looked || f->map != (int)m) continue;
        f->looked = 1;
        fr[j++] = f;
      }
    for (size_t a = 0; a < j; a += 1000)
      addr2line(a2l, env, s->maps[m].path, fr + a, j - a < 1000 ? j - a : 1000, why);
    drop_guessed_names(s->maps[m].path, fr, j);
  }
  free(env);
  free(fr);
}

// One frame for people: "function  file:line", or what is known of it.
static void frame_text(const sites_file *s, const frame *f, FILE *out) {
  const char *obj = f->map >= 0 ? base_name(s->maps[f->map].path) : NULL;
  fputs(f->function ? f->function : "??", out);
  if (f->file)
    fprintf(out, "  %s:%ld", base_name(f->file), f->line);
  else if (obj)
    fprintf(out, "  (%s+0x%" PRIx64 ")", obj, f->vaddr);
  else
    fprintf(out, "  (0x%" PRIx64 ")", f->pc);
  fputc('\n', out);
}

static void print_text(const sites_file *s, size_t top, size_t frames, const char *indent, FILE *out) {
  char ph[32], pt[32], iv[32];
  fprintf(out, "%sallocation sites live at the heap's peak: %s at %s (one allocation sampled per %s allocated, on average: estimates)\n",
          indent, ms__fmt_bytes(s->peak_heap, ph, sizeof ph),
          s->peak_time >= 0 ? ms__fmt_ns(s->peak_time, pt, sizeof pt) : "the end",
          ms__fmt_bytes(s->interval, iv, sizeof iv));
  size_t shown = 0;
  for (size_t i = 0; i < top; i++) {
    const site *st = &s->sites[i];
    if (st->peak <= 0) break;
    char b[32], a[32];
    double share = s->peak_heap > 0 ? 100.0 * (double)st->peak / (double)s->peak_heap : 0;
    char bt[64] = "";
    if (st->nbt > 1) snprintf(bt, sizeof bt, " (%zu backtraces; the biggest below)", st->nbt);
    if (st->skip) {
      char via[160];
      snprintf(via, sizeof via, " through %s", st->frames[0].function);
      strncat(bt, via, sizeof bt - strlen(bt) - 1);
    }
    char pc[32], nb[32];
    fprintf(out, "%s%3zu. %s (%s) in ~%s block%s; allocated %s over the run%s\n", indent, i + 1,
            ms__fmt_bytes(st->peak, b, sizeof b), ms__fmt_pct(share, 0, pc, sizeof pc),
            ms__fmt_si((double)st->peak_n, nb, sizeof nb), st->peak_n == 1 ? "" : "s",
            ms__fmt_bytes(st->alloc, a, sizeof a), bt);
    for (size_t k = st->skip; k < st->nframes && k < st->skip + frames; k++) {
      fprintf(out, "%s       %s ", indent, k > st->skip ? "from" : "at  ");
      frame_text(s, &st->frames[k], out);
    }
    shown++;
  }
  if (!shown) fprintf(out, "%s  (no sampled allocation was live at the peak)\n", indent);
  if (s->dropped)
    fprintf(out, "%s  (%s samples dropped: more distinct backtraces or sampled blocks than the recorder keeps)\n",
            indent, ms__fmt_count(s->dropped, ph, sizeof ph));
}

static void print_json(const sites_file *s, const char *trace, size_t top, FILE *out) {
  fputs("{\"trace\": ", out);
  ms_cli_json_str(out, trace);
  fprintf(out,
          ", \"interval_bytes\": %" PRId64 ", \"peak_heap_bytes\": %" PRId64
          ", \"peak_time_ns\": %" PRId64 ", \"sampled\": %" PRId64 ", \"dropped\": %" PRId64
          ",\n \"sites\": [",
          s->interval, s->peak_heap, s->peak_time, s->sampled, s->dropped);
  for (size_t i = 0; i < top; i++) {
    const site *st = &s->sites[i];
    fprintf(out,
            "%s\n  {\"peak_bytes\": %" PRId64 ", \"peak_blocks\": %" PRId64
            ", \"allocated_bytes\": %" PRId64 ", \"allocated_blocks\": %" PRId64
            ", \"backtraces\": %zu, \"wrapper_frames\": %zu, \"frames\": [",
            i ? "," : "", st->peak, st->peak_n, st->alloc, st->alloc_n, st->nbt, st->skip);
    for (size_t k = 0; k < st->nframes; k++) {
      const frame *f = &st->frames[k];
      fprintf(out, "%s\n    {\"pc\": \"0x%" PRIx64 "\"", k ? "," : "", f->pc);
      if (f->map >= 0) {
        fputs(", \"object\": ", out);
        ms_cli_json_str(out, s->maps[f->map].path);
        fprintf(out, ", \"address\": \"0x%" PRIx64 "\"", f->vaddr);
      }
      if (f->function) fputs(", \"function\": ", out), ms_cli_json_str(out, f->function);
      if (f->file) fputs(", \"file\": ", out), ms_cli_json_str(out, f->file), fprintf(out, ", \"line\": %ld", f->line);
      fputc('}', out);
    }
    fputs("]}", out);
  }
  fputs("]}\n", out);
}

/* ---- for memstub generations --sites (cli.h) ---------------------------- */

struct ms_cli_sites {
  sites_file f;  // only the kept sites, in the order asked
};

int ms_cli_sites_load(const char *path, const int64_t *keep, size_t n, ms_cli_sites **out,
                      memstub_error *err) {
  *out = NULL;
  ms_cli_sites *s = calloc(1, sizeof *s);
  if (!s) return memstub_error_set(err, -ENOMEM, "out of memory");
  int rc = ms_cli_sites_read(path, &s->f, err);
  site *kept = rc == 0 ? calloc(n ? n : 1, sizeof *kept) : NULL;
  unsigned char *used = rc == 0 ? calloc(s->f.nsites + 1, 1) : NULL;
  if (rc == 0 && (!kept || !used)) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (keep[i] < 0 || (size_t)keep[i] >= s->f.nsites || used[keep[i]])
      rc = memstub_error_set(err, -EINVAL, "%s: has %zu sites, no site %" PRId64
                             " (the generations file names it: another run's files?)",
                             path, s->f.nsites, keep[i]);
    else
      used[keep[i]] = 1;
  }
  if (rc < 0) {
    free(kept);
    free(used);
    ms_cli_sites_file_free(&s->f);
    free(s);
    return rc;
  }
  // The kept sites move into their own array; the others are freed.
  for (size_t i = 0; i < n; i++) kept[i] = s->f.sites[keep[i]];
  for (size_t i = 0; i < s->f.nsites; i++) {
    if (!used[i]) ms_cli_sites_site_free(&s->f.sites[i]);
  }
  free(used);
  free(s->f.sites);
  s->f.sites = kept;
  s->f.nsites = n;
  char *why = NULL;
  symbolise(&s->f, n, SIZE_MAX, &why);
  find_wrappers(&s->f);
  if (why) ms_cli_warn("no function names or lines: %s", why);
  free(why);
  *out = s;
  return 0;
}

int64_t ms_cli_sites_interval(const ms_cli_sites *s) { return s->f.interval; }

uint64_t ms_cli_sites_place(const ms_cli_sites *s, size_t i) { return first_pc(&s->f.sites[i]); }

void ms_cli_sites_frames_text(const ms_cli_sites *s, size_t i, size_t frames, const char *indent,
                              FILE *out) {
  const site *st = &s->f.sites[i];
  if (!st->nframes) fprintf(out, "%s       (no frames)\n", indent);
  for (size_t k = st->skip; k < st->nframes && k < st->skip + frames; k++) {
    fprintf(out, "%s       %s ", indent, k > st->skip ? "from" : "at  ");
    frame_text(&s->f, &st->frames[k], out);
  }
}

void ms_cli_sites_frames_json(const ms_cli_sites *s, size_t i, FILE *out) {
  const site *st = &s->f.sites[i];
  fprintf(out, "\"wrapper_frames\": %zu, \"frames\": [", st->skip);
  for (size_t k = 0; k < st->nframes; k++) {
    const frame *f = &st->frames[k];
    fprintf(out, "%s{\"pc\": \"0x%" PRIx64 "\"", k ? ", " : "", f->pc);
    if (f->map >= 0) {
      fputs(", \"object\": ", out);
      ms_cli_json_str(out, s->f.maps[f->map].path);
      fprintf(out, ", \"address\": \"0x%" PRIx64 "\"", f->vaddr);
    }
    if (f->function) fputs(", \"function\": ", out), ms_cli_json_str(out, f->function);
    if (f->file)
      fputs(", \"file\": ", out), ms_cli_json_str(out, f->file), fprintf(out, ", \"line\": %ld", f->line);
    fputc('}', out);
  }
  fputc(']', out);
}

void ms_cli_sites_free(ms_cli_sites *s) {
  if (!s) return;
  ms_cli_sites_file_free(&s->f);
  free(s);
}

/* The sites file at path read into *s, grouped by place unless ungrouped,
 * and its first top sites symbolised (*n of them; *why says why names are
 * missing, malloc'd): 0, or -errno with err set (*s to be freed either way). */
static int load_top(const char *path, sites_file *s, int ungrouped, size_t top, size_t *n,
                    char **why, memstub_error *err) {
  int rc = ms_cli_sites_read(path, s, err);
  if (rc < 0) return rc;
  symbolise(s, s->nsites, WRAPPER_FRAMES, why);
  find_wrappers(s);
  if (!ungrouped) group_sites(s);
  *n = s->nsites < top ? s->nsites : top;
  symbolise(s, *n, SIZE_MAX, why);
  return 0;
}

int ms_cli_sites_write(const char *trace_path, size_t top, size_t frames, FILE *out,
                       memstub_error *err) {
  char *path = ms_cli_sidecar_path(trace_path, ".sites");
  if (!path) return memstub_error_set(err, -ENOMEM, "out of memory");
  sites_file s;
  char *why = NULL;
  size_t n;
  int rc = load_top(path, &s, 0, top, &n, &why, err);
  if (rc == 0) print_text(&s, n, frames, "", out);
  if (why) ms_cli_warn("no function names or lines: %s", why);
  free(why);
  ms_cli_sites_file_free(&s);
  free(path);
  return rc;
}

void ms_cli_sites_summary(const char *trace_path, const memstub_trace *t, int top, FILE *out) {
  (void)t;
  memstub_error err = {0};
  if (ms_cli_sites_write(trace_path, (size_t)top, 3, out, &err) < 0)
    ms_cli_warn("%s", err.msg);
  else
    fprintf(out, "  (all of them: memstub sites %s)\n", trace_path);
}

int ms_cmd_sites(int argc, char **argv) {
  int64_t top = 10, frames = 5;
  int json = 0, ungrouped = 0;
  ms_cli_parser p = {.spec = &spec};
  int c;
  while ((c = ms_cli_next(&p, argc, argv)) > 0) {
    switch (c) {
      case O_TOP:
        if (ms_cli_i64("sites", "--top", p.arg, &top) != 0) return MS_EXIT_USAGE;
        if (top < 1) return ms_cli_usage("sites", "--top must be >= 1");
        break;
      case O_FRAMES:
        if (ms_cli_i64("sites", "--frames", p.arg, &frames) != 0) return MS_EXIT_USAGE;
        if (frames < 1) return ms_cli_usage("sites", "--frames must be >= 1");
        break;
      case O_JSON: json = 1; break;
      case O_BACKTRACES: ungrouped = 1; break;
      case O_SKIP: {
        size_t k = 0;
        while (extra_skip[k]) k++;
        if (k == MAX_SKIP) return ms_cli_usage("sites", "--skip: at most %d names", MAX_SKIP);
        if (!*p.arg) return ms_cli_usage("sites", "--skip needs a function name");
        extra_skip[k] = p.arg;
        break;
      }
    }
  }
  if (c < 0) return p.status;
  // A trace recorded without --sites says so in its metadata.
  static const char *const keys[] = {"sites.file", NULL};
  int has;
  char *path;
  int rc = ms_cli_sidecar_operand("sites", &p, argc, argv, ".sites", keys, &has, &path, NULL);
  if (rc != 0) return rc;
  const char *trace = argv[p.optind];
  if (!has) {
    free(path);
    return ms_cli_error("%s has no allocation sites: it was not recorded with --sites (memstub "
                        "record --sites -o %s -- PROGRAM), or the program died of a signal",
                        trace, trace);
  }
  memstub_error err = {0};
  sites_file s;
  char *why = NULL;
  size_t n;
  if (load_top(path, &s, ungrouped, (size_t)top, &n, &why, &err) < 0) {
    free(path);
    ms_cli_sites_file_free(&s);
    return ms_cli_fail(&err);
  }
  if (json)
    print_json(&s, trace, n, stdout);
  else
    print_text(&s, n, (size_t)frames, "", stdout);
  if (why) ms_cli_warn("no function names or lines: %s", why);
  free(why);
  ms_cli_sites_file_free(&s);
  free(path);
  return MS_EXIT_OK;
}
