/* memstub generations: what each probe region (or --function call) left
 * alive when it ended, and when the rest of the program freed it, from the
 * TRACE.generations file `memstub record` writes beside a trace with regions
 * (docs/formats.md#generations, docs/recording.md#generations). */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memstub/generations.h"
#include "memstub/trace.h"
#include "ms_common.h"

enum { O_TOP = MS_CLI_LONG, O_JSON, O_SITES };

static const ms_cli_option options[] = {
    {"top", O_TOP, "N", "the N occurrences that left the most bytes (default 10;\n"
                        "with --sites also the N sites per region)"},
    {"sites", O_SITES, NULL,
     "the allocation sites of the survivors, per region\n"
     "(a trace recorded with --sites too: TRACE.sites)"},
    MS_CLI_JSON_OPTION(O_JSON, "docs/formats.md#generations"),
    {0}};

static const ms_cli_spec spec = {
    "generations",
    "usage: memstub generations TRACE [--top N] [--sites] [--json]\n"
    "\n"
    "What each probe region of TRACE (memstub_probe_begin/end, or a --function\n"
    "call) left alive when it ended: the blocks it allocated that were still live\n"
    "at its end (its survivors), and when the rest of the program freed them. Per\n"
    "region name: occurrences, bytes allocated inside, survivors; per occurrence:\n"
    "its survivors and the bytes of them still alive 1 ms, 10 ms, 100 ms and 1 s\n"
    "after it ended, and at exit (never freed). With --sites (a trace recorded with\n"
    "--sites too), where the survivors were allocated: per region, the sites that\n"
    "left the most, as 'memstub sites' names them. TRACE.generations holds the\n"
    "data; TRACE may also name that file itself.\n"
    "\n",
    options, 22, NULL};

// The survival curve's points after a region's end, ns; then "at exit".
static const int64_t after_ns[] = {1000000, 10000000, 100000000, 1000000000};
#define NAFTER 4

typedef struct occ {
  const memstub_occurrence *x;  // in the file
  int64_t alive[NAFTER + 1];    // survivor bytes alive at +after_ns[k], and at exit
} occ;

typedef struct gens {
  memstub_generations *file;
  occ *o;  // one per occurrence, in file (id) order until sorted for the top
  size_t n;
} gens;

static void gens_free(gens *g) {
  memstub_generations_free(g->file);
  free(g->o);
  memset(g, 0, sizeof *g);
}

/* The file at path read (memstub_generations_read) and each occurrence's
 * survival curve: 0, or a negative errno with err set (then *g is empty). */
static int gens_read(const char *path, gens *g, memstub_error *err) {
  memset(g, 0, sizeof *g);
  int rc = memstub_generations_read(path, &g->file, err);
  if (rc < 0) return rc;
  const memstub_generations *f = g->file;
  g->o = calloc(f->nocc ? f->nocc : 1, sizeof *g->o);
  if (!g->o) {
    gens_free(g);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < f->nocc; i++) g->o[i].x = &f->occ[i];
  g->n = f->nocc;
  // Sums of an occurrence's survivor bytes: within 64 bits (the reader checked).
  for (size_t k = 0; k < f->nsurv; k++) {
    const memstub_survivor *s = &f->surv[k];
    occ *o = &g->o[memstub_generations_find(f, s->occurrence) - f->occ];  // the reader checked it
    for (int a = 0; a < NAFTER; a++)
      if (s->free_ns == -1 ||
          (o->x->end_ns <= INT64_MAX - after_ns[a] && s->free_ns > o->x->end_ns + after_ns[a]))
        o->alive[a] += s->bytes;
    if (s->free_ns == -1) o->alive[NAFTER] += s->bytes;
  }
  return 0;
}

static int by_survivors(const void *a, const void *b) {
  const memstub_occurrence *x = ((const occ *)a)->x, *y = ((const occ *)b)->x;
  if (x->survivor_bytes != y->survivor_bytes) return x->survivor_bytes > y->survivor_bytes ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

// By region name, then by id (so a name's first occurrence leads its run).
static int by_name(const void *a, const void *b) {
  const memstub_occurrence *x = ((const occ *)a)->x, *y = ((const occ *)b)->x;
  int c = strcmp(x->name, y->name);
  return c ? c : x->id < y->id ? -1 : x->id > y->id;
}

static int by_first(const void *a, const void *b) {
  int64_t x = ((const occ *)a)->x->id, y = ((const occ *)b)->x->id;
  return x < y ? -1 : x > y;
}

static const char *B(int64_t v, char *b) { return ms__fmt_bytes(v, b, 32); }
// A count for people ("1,500").
static const char *N(int64_t v, char *b) { return ms__fmt_count(v, b, 32); }

static void print_text(gens *g, size_t top, FILE *out) {
  char b1[32], b2[32], b3[32], n1[32], n2[32], n3[32];
  fprintf(out, "generations: what each region left alive at its end (survivors)\n\n");
  fprintf(out, "  %-24s %7s %11s %11s %9s %11s\n", "region", "occur.", "allocated", "survivors",
          "blocks", "at exit");
  // Per name, in order of first appearance: runs of one name, summed into
  // their first entry (sums[].x the first occurrence, alive[] the sums;
  // within 64 bits: the reader checked the file's sums).
  qsort(g->o, g->n, sizeof *g->o, by_name);
  typedef struct sum {
    const memstub_occurrence *x;
    int64_t n, alloc, surv, blocks, at_exit;
  } sum;
  sum *sums = malloc((g->n ? g->n : 1) * sizeof *sums);
  size_t ns = 0;
  for (size_t i = 0; sums && i < g->n; i++) {
    const memstub_occurrence *x = g->o[i].x;
    if (!ns || strcmp(sums[ns - 1].x->name, x->name) != 0) sums[ns++] = (sum){x, 0, 0, 0, 0, 0};
    sum *u = &sums[ns - 1];
    u->n++, u->alloc += x->bytes, u->surv += x->survivor_bytes, u->blocks += x->survivor_blocks;
    u->at_exit += g->o[i].alive[NAFTER];
  }
  if (sums) qsort(sums, ns, sizeof *sums, by_first);
  for (size_t i = 0; i < ns; i++)
    fprintf(out, "  %-24s %7s %11s %11s %9s %11s\n", sums[i].x->name, N(sums[i].n, n1),
            B(sums[i].alloc, b1), B(sums[i].surv, b2), N(sums[i].blocks, n2),
            B(sums[i].at_exit, b3));
  free(sums);
  qsort(g->o, g->n, sizeof *g->o, by_survivors);
  size_t n = g->n < top ? g->n : top;
  fprintf(out, "\n  occurrences with the most survivors: bytes still alive after the region ended\n");
  fprintf(out, "  %-6s %-16s %10s %10s %10s %10s %10s %10s %10s\n", "occ.", "region", "ended at",
          "survivors", "+1 ms", "+10 ms", "+100 ms", "+1 s", "at exit");
  for (size_t i = 0; i < n; i++) {
    const occ *o = &g->o[i];
    char e[32], a[NAFTER + 1][32];
    for (int k = 0; k <= NAFTER; k++) ms__fmt_bytes(o->alive[k], a[k], sizeof a[k]);
    fprintf(out, "  %-6" PRId64 " %-16.16s %10s %10s %10s %10s %10s %10s %10s\n", o->x->id,
            o->x->name, ms__fmt_ns(o->x->end_ns, e, sizeof e), B(o->x->survivor_bytes, b1), a[0],
            a[1], a[2], a[3], a[4]);
  }
  if (g->n > n) fprintf(out, "  ... %s more (--top)\n", N((int64_t)(g->n - n), n1));
  const memstub_generations *f = g->file;
  if (f->version == 1 && (f->dropped_blocks || f->dropped_occurrences || f->dropped_survivors))
    fprintf(out, "  not tracked: %s blocks, %s occurrences, %s survivor records (the recorder's "
                 "bounds: docs/recording.md#generations)\n",
            N(f->dropped_blocks, n1), N(f->dropped_occurrences, n2), N(f->dropped_survivors, n3));
}

/* ---- --sites: the survivors' allocation sites -------------------------------- */

// One survivor's part in a site table: its region name or occurrence, its
// place (a site of TRACE.sites grouped as memstub sites does; -1 not sampled).
typedef struct part {
  const char *name;
  int64_t occ, place;
  int64_t blocks, bytes, at_exit;
} part;

typedef struct site_view {
  ms_cli_sites *sites;  // the survivors' site lines, symbolised
  int64_t nplaces;
  int64_t *rep;         // [nplaces] the kept site shown for each place
  part *by_region;      // summed per (region name, place), most bytes first per name
  size_t nregion;
  part *by_occ;         // summed per (occurrence, place), by occurrence then most bytes
  size_t nocc;
} site_view;

static void view_free(site_view *v) {
  ms_cli_sites_free(v->sites);
  free(v->rep), free(v->by_region), free(v->by_occ);
  memset(v, 0, sizeof *v);
}

static int part_by_name(const void *a, const void *b) {
  const part *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : x->place < y->place ? -1 : x->place > y->place;
}
static int part_by_occ(const void *a, const void *b) {
  const part *x = a, *y = b;
  if (x->occ != y->occ) return x->occ < y->occ ? -1 : 1;
  return x->place < y->place ? -1 : x->place > y->place;
}
// Within a name (or occurrence): most bytes first, the not sampled last.
static int part_rank(const void *a, const void *b, int by_occ) {
  const part *x = a, *y = b;
  int c = by_occ ? (x->occ > y->occ) - (x->occ < y->occ) : strcmp(x->name, y->name);
  if (c) return c;
  if ((x->place < 0) != (y->place < 0)) return x->place < 0 ? 1 : -1;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return (x->place > y->place) - (x->place < y->place);
}
static int rank_name(const void *a, const void *b) { return part_rank(a, b, 0); }
static int rank_occ(const void *a, const void *b) { return part_rank(a, b, 1); }

// Sort parts by key, sum equal keys, then rank; the count left.
static size_t collapse(part *p, size_t n, int (*key)(const void *, const void *),
                       int (*rank)(const void *, const void *)) {
  qsort(p, n, sizeof *p, key);
  size_t out = 0;
  for (size_t i = 0; i < n; i++) {
    if (out && key(&p[out - 1], &p[i]) == 0) {
      p[out - 1].blocks += p[i].blocks, p[out - 1].bytes += p[i].bytes;
      p[out - 1].at_exit += p[i].at_exit;
      continue;
    }
    p[out++] = p[i];
  }
  qsort(p, out, sizeof *p, rank);
  return out;
}

/* The survivors of g by allocation site, from the sites file at path:
 * 0, or a negative errno with err set. */
static int view_read(const gens *g, const char *path, site_view *v, memstub_error *err) {
  memset(v, 0, sizeof *v);
  const memstub_generations *f = g->file;
  int64_t *keep = malloc((f->nsurv + 1) * sizeof *keep);
  if (!keep) return memstub_error_set(err, -ENOMEM, "out of memory");
  size_t nk = 0;
  for (size_t i = 0; i < f->nsurv; i++)
    if (f->surv[i].site >= 0) keep[nk++] = f->surv[i].site;
  qsort(keep, nk, sizeof *keep, ms__cmp_i64);
  size_t u = 0;
  for (size_t i = 0; i < nk; i++)
    if (!u || keep[u - 1] != keep[i]) keep[u++] = keep[i];
  int rc = ms_cli_sites_load(path, keep, u, &v->sites, err);
  // Sites that allocate at the same place are one (as memstub sites groups them).
  int64_t *place = rc == 0 ? malloc((u + 1) * sizeof *place) : NULL;
  v->rep = rc == 0 ? malloc((u + 1) * sizeof *v->rep) : NULL;
  v->by_region = rc == 0 ? malloc((f->nsurv + 1) * sizeof *v->by_region) : NULL;
  v->by_occ = rc == 0 ? malloc((f->nsurv + 1) * sizeof *v->by_occ) : NULL;
  if (rc == 0 && (!place || !v->rep || !v->by_region || !v->by_occ))
    rc = memstub_error_set(err, -ENOMEM, "out of memory");
  for (size_t i = 0; rc == 0 && i < u; i++) {
    uint64_t pc = ms_cli_sites_place(v->sites, i);
    int64_t k = 0;
    while (k < v->nplaces && !(pc && ms_cli_sites_place(v->sites, (size_t)v->rep[k]) == pc)) k++;
    if (k == v->nplaces) v->rep[v->nplaces++] = (int64_t)i;
    place[i] = k;
  }
  for (size_t i = 0; rc == 0 && i < f->nsurv; i++) {
    const memstub_survivor *x = &f->surv[i];
    const memstub_occurrence *o = memstub_generations_find(f, x->occurrence);
    int64_t pl = -1;
    if (x->site >= 0) {
      const int64_t *at = bsearch(&x->site, keep, u, sizeof *keep, ms__cmp_i64);
      pl = place[at - keep];
    }
    part p = {o->name, o->id, pl, x->blocks, x->bytes, x->free_ns == -1 ? x->bytes : 0};
    v->by_region[i] = v->by_occ[i] = p;
  }
  if (rc == 0) {
    v->nregion = collapse(v->by_region, f->nsurv, part_by_name, rank_name);
    v->nocc = collapse(v->by_occ, f->nsurv, part_by_occ, rank_occ);
  }
  free(keep);
  free(place);
  if (rc < 0) view_free(v);
  return rc;
}

static void print_sites_text(const site_view *v, size_t top, FILE *out) {
  char b1[32], b2[32], iv[32], n1[32];
  fprintf(out, "\n  survivors by allocation site (one allocation sampled per %s allocated on "
               "average, larger ones always)\n",
          ms__fmt_bytes(ms_cli_sites_interval(v->sites), iv, sizeof iv));
  for (size_t i = 0; i < v->nregion;) {
    size_t j = i;
    int64_t sum = 0;
    while (j < v->nregion && strcmp(v->by_region[j].name, v->by_region[i].name) == 0)
      sum += v->by_region[j++].bytes;
    fprintf(out, "  %s: %s of survivors\n", v->by_region[i].name, B(sum, b1));
    for (size_t k = i, shown = 0; k < j; k++) {
      const part *p = &v->by_region[k];
      if (p->place < 0) {
        fprintf(out, "    not sampled: %s in %s block%s, %s of it never freed\n", B(p->bytes, b1),
                N(p->blocks, n1), p->blocks == 1 ? "" : "s", B(p->at_exit, b2));
        continue;
      }
      if (shown++ == top) {
        fprintf(out, "    ... more sites (--top)\n");
        continue;
      }
      if (shown > top) continue;
      fprintf(out, "  %3zu. %s in %s block%s, %s of it never freed\n", shown, B(p->bytes, b1),
              N(p->blocks, n1), p->blocks == 1 ? "" : "s", B(p->at_exit, b2));
      ms_cli_sites_frames_text(v->sites, (size_t)v->rep[p->place], 3, "", out);
    }
    i = j;
  }
}

// The "sites" of one occurrence in JSON: its parts in v->by_occ.
static void print_occ_sites_json(const site_view *v, int64_t id, FILE *out) {
  size_t lo = 0, hi = v->nocc;
  while (lo < hi) {  // the first part of occ
    size_t mid = lo + (hi - lo) / 2;
    if (v->by_occ[mid].occ < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  int64_t ub = 0, un = 0;
  fputs(", \"sites\": [", out);
  for (size_t k = lo, n = 0; k < v->nocc && v->by_occ[k].occ == id; k++) {
    const part *p = &v->by_occ[k];
    if (p->place < 0) {
      ub += p->bytes, un += p->blocks;
      continue;
    }
    fprintf(out, "%s{\"site\": %" PRId64 ", \"survivor_blocks\": %" PRId64
                 ", \"survivor_bytes\": %" PRId64 ", \"alive_at_exit\": %" PRId64 "}",
            n++ ? ", " : "", p->place, p->blocks, p->bytes, p->at_exit);
  }
  fprintf(out, "], \"unsampled_blocks\": %" PRId64 ", \"unsampled_bytes\": %" PRId64, un, ub);
}

static void print_sites_json(const site_view *v, size_t top, FILE *out) {
  fprintf(out, ",\n \"interval_bytes\": %" PRId64 ", \"sites\": [",
          ms_cli_sites_interval(v->sites));
  for (int64_t k = 0; k < v->nplaces; k++) {
    fprintf(out, "%s\n  {\"site\": %" PRId64 ", ", k ? "," : "", k);
    ms_cli_sites_frames_json(v->sites, (size_t)v->rep[k], out);
    fputc('}', out);
  }
  fputs("],\n \"regions\": [", out);
  for (size_t i = 0, r = 0; i < v->nregion; r++) {
    size_t j = i;
    int64_t sum = 0, ub = 0, un = 0;
    while (j < v->nregion && strcmp(v->by_region[j].name, v->by_region[i].name) == 0) {
      sum += v->by_region[j].bytes;
      if (v->by_region[j].place < 0) ub += v->by_region[j].bytes, un += v->by_region[j].blocks;
      j++;
    }
    fprintf(out, "%s\n  {\"region\": ", r ? "," : "");
    ms_cli_json_str(out, v->by_region[i].name);
    fprintf(out, ", \"survivor_bytes\": %" PRId64 ", \"unsampled_blocks\": %" PRId64
                 ", \"unsampled_bytes\": %" PRId64 ", \"sites\": [",
            sum, un, ub);
    for (size_t k = i, n = 0; k < j; k++) {
      const part *p = &v->by_region[k];
      if (p->place < 0 || n == top) continue;
      fprintf(out, "%s{\"site\": %" PRId64 ", \"survivor_blocks\": %" PRId64
                   ", \"survivor_bytes\": %" PRId64 ", \"alive_at_exit\": %" PRId64 "}",
              n++ ? ", " : "", p->place, p->blocks, p->bytes, p->at_exit);
    }
    fputs("]}", out);
    i = j;
  }
  fputs("]", out);
}

static void print_json(gens *g, const char *trace, size_t top, const site_view *v, FILE *out) {
  qsort(g->o, g->n, sizeof *g->o, by_survivors);
  size_t n = g->n < top ? g->n : top;
  fputs("{\"trace\": ", out);
  ms_cli_json_str(out, trace);
  fprintf(out, ", \"exit_ns\": %" PRId64 ", \"occurrences\": %zu, \"dropped_blocks\": %" PRId64
               ", \"top\": [",
          g->file->exit_ns, g->n, g->file->dropped_blocks);
  for (size_t i = 0; i < n; i++) {
    const occ *o = &g->o[i];
    const memstub_occurrence *x = o->x;
    fprintf(out, "%s\n  {\"occurrence\": %" PRId64 ", \"region\": ", i ? "," : "", x->id);
    ms_cli_json_str(out, x->name);
    fprintf(out, ", \"begin_ns\": %" PRId64 ", \"end_ns\": %" PRId64 ", \"allocated_blocks\": %" PRId64
                 ", \"allocated_bytes\": %" PRId64 ", \"survivor_blocks\": %" PRId64
                 ", \"survivor_bytes\": %" PRId64 ", \"alive_after_1ms\": %" PRId64
                 ", \"alive_after_10ms\": %" PRId64 ", \"alive_after_100ms\": %" PRId64
                 ", \"alive_after_1s\": %" PRId64 ", \"alive_at_exit\": %" PRId64,
            x->begin_ns, x->end_ns, x->blocks, x->bytes, x->survivor_blocks, x->survivor_bytes,
            o->alive[0], o->alive[1], o->alive[2], o->alive[3], o->alive[4]);
    if (v) print_occ_sites_json(v, x->id, out);
    fputc('}', out);
  }
  fprintf(out, "\n]");
  if (v) print_sites_json(v, top, out);
  fprintf(out, "}\n");
}

int ms_cli_generations_write(const char *trace_path, size_t top, FILE *out, memstub_error *err) {
  char *path = ms_cli_sidecar_path(trace_path, ".generations");
  gens g;
  int rc = path ? gens_read(path, &g, err) : memstub_error_set(err, -ENOMEM, "out of memory");
  if (rc == 0) {
    print_text(&g, top, out);
    gens_free(&g);
  }
  free(path);
  return rc;
}

void ms_cli_generations_summary(const char *trace_path, FILE *out) {
  char *path = ms_cli_sidecar_path(trace_path, ".generations");
  gens g;
  memstub_error err = {0};
  if (!path || gens_read(path, &g, &err) < 0) {
    ms_cli_warn("%s", path ? err.msg : "out of memory");
    free(path);
    return;
  }
  int64_t sv = 0, ex = 0;
  for (size_t i = 0; i < g.n; i++) sv += g.o[i].x->survivor_bytes, ex += g.o[i].alive[NAFTER];
  char b1[32], b2[32], n1[32];
  fprintf(out, "generations: %s region occurrence%s left %s alive at their ends, %s of it never "
               "freed (memstub generations %s)\n",
          N((int64_t)g.n, n1), g.n == 1 ? "" : "s", B(sv, b1), B(ex, b2), trace_path);
  gens_free(&g);
  free(path);
}

int ms_cmd_generations(int argc, char **argv) {
  int64_t top = 10;
  int json = 0, sites = 0;
  ms_cli_parser p = {.spec = &spec};
  int c;
  while ((c = ms_cli_next(&p, argc, argv)) > 0) {
    if (c == O_JSON) {
      json = 1;
    } else if (c == O_SITES) {
      sites = 1;
    } else if (c == O_TOP) {
      if (ms_cli_arg_i64(&p, &top) < 0) return MS_EXIT_USAGE;
      if (top < 1) return ms_cli_usage("generations", "--top must be >= 1");
    }
  }
  if (c < 0) return p.status;
  // A trace without regions has no generations; one without --sites no sites.
  static const char *const keys[] = {"generations.file", "sites.file",
                                      "record.regions_other_threads", NULL};
  int has[3];
  char *path, *others[3];
  int rc = ms_cli_sidecar_operand("generations", &p, argc, argv, ".generations", keys, has, &path,
                                  others);
  if (rc != 0) return rc;
  const char *trace = argv[p.optind];
  free(others[0]), free(others[1]);
  if (!has[0] || (sites && !has[1])) free(path);
  // With every thread recorded, generations are thread 0's regions': the others' are said.
  if (!has[0] && others[2]) {
    rc = ms_cli_error("%s has no generations: its regions ran on threads other than thread 0 "
                      "(%s)",
                      trace, others[2]);
    free(others[2]);
    return rc;
  }
  if (!has[0])
    return ms_cli_error("%s has no generations: it has no probe regions (memstub_probe_begin/end, "
                        "or memstub record --function NAME), or the program died of a signal",
                        trace);
  if (sites && !has[1]) {
    free(others[2]);
    return ms_cli_error("%s has no allocation sites: record it with --sites too (memstub record "
                        "--sites --function NAME -o %s -- PROGRAM)",
                        trace, trace);
  }
  memstub_error err = {0};
  gens g;
  if (gens_read(path, &g, &err) < 0) {
    free(path), free(others[2]);
    return ms_cli_fail(&err);
  }
  // TRACE.sites beside TRACE.generations.
  site_view v = {0};
  if (sites) {
    size_t n = strlen(path) - strlen(".generations");
    char *sp = ms__asprintf("%.*s.sites", (int)n, path);
    rc = sp ? view_read(&g, sp, &v, &err) : memstub_error_set(&err, -ENOMEM, "out of memory");
    free(sp);
  }
  if (rc == 0 && json)
    print_json(&g, trace, (size_t)top, sites ? &v : NULL, stdout);
  else if (rc == 0)
    print_text(&g, (size_t)top, stdout);
  if (rc == 0 && sites && !json) print_sites_text(&v, (size_t)top, stdout);
  view_free(&v);
  gens_free(&g);
  free(path);
  if (rc < 0) {
    free(others[2]);
    return ms_cli_fail(&err);
  }
  // The figures are thread 0's regions' alone: said, and the exit status 1.
  if (others[2]) {
    ms_cli_warn("%s: the generations are thread 0's regions' alone: %s", trace, others[2]);
    free(others[2]);
    return MS_EXIT_CHECK;
  }
  return MS_EXIT_OK;
}
