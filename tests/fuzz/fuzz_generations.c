// libFuzzer harness: the generations file reader (memstub_generations_read,
// versions 1 and 2) and the release of survivors in a trace of regions.
//
// Every input is either refused with "PATH:LINE: ..." at a line of the input
// (or just past its end), one printable line, or accepted: then every
// survivor names an occurrence of the file, its figures are in range and an
// occurrence's survivors add up to no more than its survivor figures
// (exactly them in version 2); the file written back from what was read
// reads back the same; and releasing the survivors in a two-region trace
// gives a valid trace whose heap never goes below zero.
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "memstub/generations.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// g as a writer of its version writes it, into f.
static void write_generations(const memstub_generations *g, FILE *f) {
  int v2 = g->version == 2, sites = g->nsurv && g->surv[0].site != -1;
  for (size_t i = 0; i < g->nsurv; i++) sites |= g->surv[i].site != -1;
  fprintf(f, "# memstub-generations %d\nexit_ns %lld\n", g->version, (long long)g->exit_ns);
  if (!v2)
    fprintf(f, "dropped %lld %lld %lld\n", (long long)g->dropped_blocks,
            (long long)g->dropped_occurrences, (long long)g->dropped_survivors);
  for (size_t i = 0; i < g->nocc; i++) {
    const memstub_occurrence *o = &g->occ[i];
    fprintf(f, "occurrence %lld %lld %lld %lld %lld %lld %lld %s\n", (long long)o->id,
            (long long)o->begin_ns, (long long)o->end_ns, (long long)o->blocks,
            (long long)o->bytes, (long long)o->survivor_blocks, (long long)o->survivor_bytes,
            o->name);
  }
  for (size_t i = 0; i < g->nsurv; i++) {
    const memstub_survivor *x = &g->surv[i];
    fprintf(f, "%s %lld", v2 ? "survivors" : "survivor", (long long)x->occurrence);
    if (v2) fprintf(f, " %lld", (long long)x->blocks);
    fprintf(f, " %lld %lld %lld", (long long)x->bytes, (long long)x->alloc_ns,
            (long long)x->free_ns);
    if (sites) fprintf(f, " %lld", (long long)x->site);
    fputc('\n', f);
  }
}

static void check_equal(const memstub_generations *a, const memstub_generations *b) {
  FUZZ_ASSERT(a->version == b->version && a->exit_ns == b->exit_ns &&
                  a->dropped_blocks == b->dropped_blocks &&
                  a->dropped_occurrences == b->dropped_occurrences &&
                  a->dropped_survivors == b->dropped_survivors,
              "header differs");
  FUZZ_ASSERT(a->nocc == b->nocc && a->nsurv == b->nsurv, "counts differ");
  for (size_t i = 0; i < a->nocc; i++) {
    const memstub_occurrence *x = &a->occ[i], *y = &b->occ[i];
    FUZZ_ASSERT(x->id == y->id && x->begin_ns == y->begin_ns && x->end_ns == y->end_ns &&
                    x->blocks == y->blocks && x->bytes == y->bytes &&
                    x->survivor_blocks == y->survivor_blocks &&
                    x->survivor_bytes == y->survivor_bytes && strcmp(x->name, y->name) == 0,
                "occurrence %zu", i);
  }
  FUZZ_ASSERT(a->nsurv == 0 || memcmp(a->surv, b->surv, a->nsurv * sizeof *a->surv) == 0,
              "survivors differ");
}

// What the reader promises of an accepted file (memstub/generations.h).
static void check_accepted(const memstub_generations *g) {
  FUZZ_ASSERT(g->version == 1 || g->version == 2, "version %d", g->version);
  FUZZ_ASSERT(g->exit_ns >= 0 && g->nocc > 0, "exit_ns, occurrences");
  int64_t *blocks = calloc(g->nocc, sizeof *blocks), *bytes = calloc(g->nocc, sizeof *bytes);
  FUZZ_ASSERT(blocks && bytes, "calloc");
  for (size_t i = 0; i < g->nocc; i++) {
    const memstub_occurrence *o = &g->occ[i];
    FUZZ_ASSERT(o->id >= 1 && (i == 0 || o->id > g->occ[i - 1].id), "occurrence %zu id", i);
    FUZZ_ASSERT(o->begin_ns <= o->end_ns && o->end_ns <= g->exit_ns, "occurrence %zu times", i);
    FUZZ_ASSERT(o->survivor_blocks <= o->blocks && o->survivor_bytes <= o->bytes &&
                    o->survivor_blocks >= 0 && o->survivor_bytes >= 0,
                "occurrence %zu figures", i);
  }
  for (size_t i = 0; i < g->nsurv; i++) {
    const memstub_survivor *x = &g->surv[i];
    const memstub_occurrence *o = memstub_generations_find(g, x->occurrence);
    FUZZ_ASSERT(o != NULL, "survivor %zu", i);
    FUZZ_ASSERT(x->blocks >= 1 && x->bytes >= 0 && x->site >= -1, "survivor %zu figures", i);
    FUZZ_ASSERT(x->free_ns == -1 || x->free_ns >= x->alloc_ns, "survivor %zu times", i);
    size_t k = (size_t)(o - g->occ);
    blocks[k] += x->blocks, bytes[k] += x->bytes;  // bounded: checked below, in order
    FUZZ_ASSERT(blocks[k] <= o->survivor_blocks && bytes[k] <= o->survivor_bytes,
                "survivor %zu: more than its occurrence's", i);
  }
  for (size_t k = 0; g->version == 2 && k < g->nocc; k++)
    FUZZ_ASSERT(blocks[k] == g->occ[k].survivor_blocks && bytes[k] == g->occ[k].survivor_bytes,
                "version 2, occurrence %zu: survivors missing", k);
  free(blocks);
  free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = fuzz_memfd("fuzz.generations", data, size, path, sizeof path);
  memstub_generations *g = NULL;
  memstub_error err = {0};
  int rc = memstub_generations_read(path, &g, &err);
  close(fd);
  if (rc < 0) {
    fuzz_check_refusal(rc, &err);
    if (rc == -EINVAL) fuzz_check_position(err.msg, path, (const char *)data, size, 0);
    FUZZ_ASSERT(strncmp(err.msg, path, strlen(path)) == 0, "no file name: %s", err.msg);
    FUZZ_ASSERT(g == NULL, "a refusal left a result");
    return 0;
  }
  check_accepted(g);
  // Written back and read again: the same.
  char *text = NULL;
  size_t len = 0;
  FILE *mf = open_memstream(&text, &len);
  FUZZ_ASSERT(mf, "open_memstream");
  write_generations(g, mf);
  FUZZ_ASSERT(fclose(mf) == 0, "fclose");
  fd = fuzz_memfd("fuzz.generations", text, len, path, sizeof path);
  memstub_generations *b = NULL;
  rc = memstub_generations_read(path, &b, &err);
  close(fd);
  FUZZ_ASSERT(rc == 0 || rc == -ENOMEM, "written back, refused: %s\n%s", err.msg, text);
  if (rc == 0) check_equal(g, b);
  memstub_generations_free(b);
  free(text);
  memstub_trace *t = memstub_trace_create();
  FUZZ_ASSERT(t && memstub_trace_add_column(t, "region") == 0, "trace");
  static const int64_t rows[][3] = {{0, 0, 1}, {10, 1000, 1}, {100, 500, 2}, {200, 800, 2}};
  for (size_t i = 0; i < 4; i++) {
    FUZZ_ASSERT(memstub_trace_append(t, rows[i][0], 0, rows[i][1]) == 0, "append");
    memstub_trace_extra_row(t, i)[0] = rows[i][2];
  }
  memstub_trace *c = NULL;
  size_t added = 0;
  rc = memstub_generations_release(t, g, &c, &added, &err);
  FUZZ_ASSERT(rc == 0 || rc == -ENOMEM, "release: %s", err.msg);
  if (rc == 0) {
    FUZZ_ASSERT(c->n == t->n + added, "rows");
    for (size_t i = 0; i < c->n; i++) FUZZ_ASSERT(c->pts[i].heap_bytes >= 0, "heap");
    FUZZ_ASSERT(memstub_trace_validate(c, &err) == 0, "invalid: %s", err.msg);
  }
  memstub_trace_free(c);
  // --hold: the same rows up to the trace's end; what is held after it has
  // increasing times, then at most one never-freed entry, all bytes > 0.
  memstub_held held;
  rc = memstub_generations_hold(t, g, &c, &added, &held, &err);
  FUZZ_ASSERT(rc == 0 || rc == -ENOMEM || rc == -EINVAL, "hold: %s", err.msg);
  if (rc == 0) {
    FUZZ_ASSERT(c->n == t->n + added && c->pts[c->n - 1].time_ns == 200, "hold rows");
    int64_t sum = 0;
    for (size_t i = 0; i < held.n; i++) {
      FUZZ_ASSERT(held.bytes[i] > 0, "held bytes");
      FUZZ_ASSERT(held.after_ns[i] > 0 || (held.after_ns[i] == -1 && i + 1 == held.n), "after");
      FUZZ_ASSERT(i == 0 || held.after_ns[i] == -1 || held.after_ns[i] > held.after_ns[i - 1],
                  "order");
      sum += held.bytes[i];
    }
    FUZZ_ASSERT(sum == held.total, "total");
    memstub_held_free(&held);
    memstub_trace_free(c);
  }
  memstub_trace_free(t);
  memstub_generations_free(g);
  return 0;
}
