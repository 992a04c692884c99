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

enum { O_TOP = MS_CLI_LONG, O_JSON };

static const ms_cli_option options[] = {
    {"top", O_TOP, "N", "the N occurrences that left the most bytes (default 10)"},
    {"json", O_JSON, NULL, "print JSON (keys: docs/formats.md#generations)"},
    {0}};

static const ms_cli_spec spec = {
    "generations",
    "usage: memstub generations TRACE [--top N] [--json]\n"
    "\n"
    "What each probe region of TRACE (memstub_probe_begin/end, or a --function\n"
    "call) left alive when it ended: the blocks it allocated that were still live\n"
    "at its end (its survivors), and when the rest of the program freed them. Per\n"
    "region name: occurrences, bytes allocated inside, survivors; per occurrence:\n"
    "its survivors and the bytes of them still alive 1 ms, 10 ms, 100 ms and 1 s\n"
    "after it ended, and at exit (never freed). TRACE.generations holds the data;\n"
    "TRACE may also name that file itself.\n"
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
  for (size_t k = 0; k < f->nsurv; k++) {
    const memstub_survivor *s = &f->surv[k];
    occ *o = &g->o[memstub_generations_find(f, s->occurrence) - f->occ];  // the reader checked it
    for (int a = 0; a < NAFTER; a++)
      if (s->free_ns < 0 || s->free_ns - o->x->end_ns > after_ns[a]) o->alive[a] += s->bytes;
    if (s->free_ns < 0) o->alive[NAFTER] += s->bytes;
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

static void print_text(gens *g, size_t top, FILE *out) {
  char b1[32], b2[32], b3[32];
  fprintf(out, "generations: what each region left alive at its end (survivors)\n\n");
  fprintf(out, "  %-24s %7s %11s %11s %9s %11s\n", "region", "occur.", "allocated", "survivors",
          "blocks", "at exit");
  // Per name, in order of first appearance: runs of one name, summed into
  // their first entry (sums[].x the first occurrence, alive[] the sums).
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
    fprintf(out, "  %-24s %7" PRId64 " %11s %11s %9" PRId64 " %11s\n", sums[i].x->name, sums[i].n,
            B(sums[i].alloc, b1), B(sums[i].surv, b2), sums[i].blocks, B(sums[i].at_exit, b3));
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
  if (g->n > n) fprintf(out, "  ... %zu more (--top)\n", g->n - n);
  const memstub_generations *f = g->file;
  if (f->dropped_blocks || f->dropped_occurrences || f->dropped_survivors)
    fprintf(out, "  not tracked: %" PRId64 " blocks, %" PRId64 " occurrences, %" PRId64
                 " survivor records (the recorder's bounds: docs/recording.md#generations)\n",
            f->dropped_blocks, f->dropped_occurrences, f->dropped_survivors);
}

static void print_json(gens *g, const char *trace, size_t top, FILE *out) {
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
                 ", \"alive_after_1s\": %" PRId64 ", \"alive_at_exit\": %" PRId64 "}",
            x->begin_ns, x->end_ns, x->blocks, x->bytes, x->survivor_blocks, x->survivor_bytes,
            o->alive[0], o->alive[1], o->alive[2], o->alive[3], o->alive[4]);
  }
  fprintf(out, "\n]}\n");
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
  char b1[32], b2[32];
  fprintf(out, "generations: %zu region occurrence%s left %s alive at their ends, %s of it never "
               "freed (memstub generations %s)\n",
          g.n, g.n == 1 ? "" : "s", B(sv, b1), B(ex, b2), trace_path);
  gens_free(&g);
  free(path);
}

int ms_cmd_generations(int argc, char **argv) {
  int64_t top = 10;
  int json = 0;
  ms_cli_parser p = {.spec = &spec};
  int c;
  while ((c = ms_cli_next(&p, argc, argv)) > 0) {
    if (c == O_JSON) {
      json = 1;
    } else if (c == O_TOP) {
      if (ms_cli_arg_i64(&p, &top) < 0) return MS_EXIT_USAGE;
      if (top < 1) return ms_cli_usage("generations", "--top must be >= 1");
    }
  }
  if (c < 0) return p.status;
  if (p.optind >= argc) return ms_cli_usage("generations", "missing TRACE");
  if (p.optind + 1 < argc)
    return ms_cli_usage("generations", "one TRACE at a time (found '%s')", argv[p.optind + 1]);
  const char *trace = argv[p.optind];
  char *path = ms_cli_sidecar_path(trace, ".generations");
  if (!path) return ms_cli_error("out of memory");
  memstub_error err = {0};
  if (strcmp(path, trace) != 0) {
    // A trace without regions has no generations: say so (an older file
    // beside it would be another run's).
    memstub_trace *t = NULL;
    if (memstub_trace_read(trace, &t, &err) < 0) {
      free(path);
      return ms_cli_fail(&err);
    }
    int has = memstub_trace_get_meta(t, "generations.file") != NULL;
    memstub_trace_free(t);
    if (!has) {
      ms_cli_error("%s has no generations: it has no probe regions (memstub_probe_begin/end, or "
                   "memstub record --function NAME), or the program died of a signal",
                   trace);
      free(path);
      return MS_EXIT_USAGE;
    }
  }
  gens g;
  if (gens_read(path, &g, &err) < 0) {
    free(path);
    return ms_cli_fail(&err);
  }
  if (json)
    print_json(&g, trace, (size_t)top, stdout);
  else
    print_text(&g, (size_t)top, stdout);
  gens_free(&g);
  free(path);
  return MS_EXIT_OK;
}
