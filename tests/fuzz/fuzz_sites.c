// libFuzzer harness: the TRACE.sites reader (cli/sites_read.c,
// ms_cli_sites_read), which `memstub sites` and `memstub generations
// --sites` use.
//
// Every input is either refused with "PATH:LINE: ..." at a line of the input
// (or just past its end), one printable line, or accepted: then every figure
// is in its range, and the file written back from what was read reads back
// to the same figures, maps and frames.
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "sites_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// s as the recorder writes it, into f.
static void write_sites(const ms_cli_sites_file *s, FILE *f) {
  fprintf(f, "# memstub-sites 1\ninterval_bytes %lld\npeak_heap_bytes %lld\npeak_time_ns %lld\n"
             "snapshots %lld\nsampled %lld\ndropped %lld\n",
          (long long)s->interval, (long long)s->peak_heap, (long long)s->peak_time,
          (long long)s->snapshots, (long long)s->sampled, (long long)s->dropped);
  for (size_t i = 0; i < s->nmaps; i++)
    fprintf(f, "map 0x%llx 0x%llx 0x%llx %s\n", (unsigned long long)s->maps[i].lo,
            (unsigned long long)s->maps[i].hi, (unsigned long long)s->maps[i].off,
            s->maps[i].path);
  for (size_t i = 0; i < s->nsites; i++) {
    const ms_cli_sites_site *st = &s->sites[i];
    fprintf(f, "site %lld %lld %lld %lld", (long long)st->peak, (long long)st->peak_n,
            (long long)st->alloc, (long long)st->alloc_n);
    for (size_t k = 0; k < st->nframes; k++)
      fprintf(f, " 0x%llx", (unsigned long long)st->frames[k].pc);
    fputc('\n', f);
  }
}

static void check_equal(const ms_cli_sites_file *a, const ms_cli_sites_file *b) {
  FUZZ_ASSERT(a->interval == b->interval && a->peak_heap == b->peak_heap &&
                  a->peak_time == b->peak_time && a->snapshots == b->snapshots &&
                  a->sampled == b->sampled && a->dropped == b->dropped,
              "keys differ");
  FUZZ_ASSERT(a->nmaps == b->nmaps && a->nsites == b->nsites, "maps %zu/%zu, sites %zu/%zu",
              a->nmaps, b->nmaps, a->nsites, b->nsites);
  for (size_t i = 0; i < a->nmaps; i++)
    FUZZ_ASSERT(a->maps[i].lo == b->maps[i].lo && a->maps[i].hi == b->maps[i].hi &&
                    a->maps[i].off == b->maps[i].off && strcmp(a->maps[i].path, b->maps[i].path) == 0,
                "map %zu", i);
  for (size_t i = 0; i < a->nsites; i++) {
    const ms_cli_sites_site *x = &a->sites[i], *y = &b->sites[i];
    FUZZ_ASSERT(x->peak == y->peak && x->peak_n == y->peak_n && x->alloc == y->alloc &&
                    x->alloc_n == y->alloc_n && x->nframes == y->nframes,
                "site %zu", i);
    for (size_t k = 0; k < x->nframes; k++)
      FUZZ_ASSERT(x->frames[k].pc == y->frames[k].pc, "site %zu frame %zu", i, k);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = fuzz_memfd("fuzz.sites", data, size, path, sizeof path);
  ms_cli_sites_file s;
  memstub_error err = {0};
  int rc = ms_cli_sites_read(path, &s, &err);
  close(fd);
  if (rc < 0) {
    fuzz_check_refusal(rc, &err);
    if (rc == -EINVAL) fuzz_check_position(err.msg, path, (const char *)data, size, 0);
    ms_cli_sites_file_free(&s);
    return 0;
  }
  FUZZ_ASSERT(s.interval >= 1 && s.peak_heap >= 0 && s.peak_time >= -1 && s.snapshots >= 0 &&
                  s.sampled >= 0 && s.dropped >= 0,
              "a key out of range");
  for (size_t i = 0; i < s.nmaps; i++)
    FUZZ_ASSERT(s.maps[i].lo < s.maps[i].hi && s.maps[i].path[0] == '/', "map %zu", i);
  int64_t sum = 0;
  for (size_t i = 0; i < s.nsites; i++) {
    const ms_cli_sites_site *st = &s.sites[i];
    FUZZ_ASSERT(st->peak >= 0 && st->peak_n >= 0 && st->alloc >= st->peak && st->alloc_n >= 0,
                "site %zu figures", i);
    FUZZ_ASSERT(st->nframes <= MS_CLI_SITES_MAX_FRAMES, "site %zu frames", i);
    FUZZ_ASSERT(!__builtin_add_overflow(sum, st->alloc, &sum), "the sites' bytes overflow");
  }
  // Written back and read again: the same.
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  FUZZ_ASSERT(f, "open_memstream");
  write_sites(&s, f);
  FUZZ_ASSERT(fclose(f) == 0, "fclose");
  fd = fuzz_memfd("fuzz.sites", text, len, path, sizeof path);
  ms_cli_sites_file b;
  rc = ms_cli_sites_read(path, &b, &err);
  close(fd);
  FUZZ_ASSERT(rc == 0 || rc == -ENOMEM, "written back, refused: %s\n%s", err.msg, text);
  if (rc == 0) check_equal(&s, &b);
  ms_cli_sites_file_free(&b);
  ms_cli_sites_file_free(&s);
  free(text);
  return 0;
}
