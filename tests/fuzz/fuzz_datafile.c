// libFuzzer harness: the stub data file reader (memstub_stub_data_open).
//
// The input is the file, given through a memfd (/proc/self/fd/N). Every
// input is either refused with -EINVAL and one printable line "PATH: FIELD:
// reason", or accepted: then the descriptor's arrays lie inside the mapping,
// memstub_stub_check runs on the stub, and memstub_stub_data_write of it
// opens again to the same descriptor and arrays (or, for a stub with calls,
// is refused as a bad input is: the writer walks the calls, which the open
// leaves to the replay when the file carries callbig).
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "memstub/runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(const memstub_stub_data *d, const void *p, size_t bytes) {
  const char *m = d->map, *c = p;
  return c >= m && bytes <= d->map_len && (size_t)(c - m) <= d->map_len - bytes;
}

static void same(const struct memstub_stub *a, const struct memstub_stub *b) {
  FUZZ_ASSERT(a->abi == b->abi && a->timing == b->timing && a->numdata == b->numdata &&
                  a->norig == b->norig && a->time0_ns == b->time0_ns &&
                  a->stack_base == b->stack_base && a->heap_base == b->heap_base &&
                  a->peak_stack == b->peak_stack && a->max_depth == b->max_depth &&
                  a->peak_heap == b->peak_heap && a->duration_ns == b->duration_ns &&
                  a->inserted == b->inserted,
              "descriptor differs");
  FUZZ_ASSERT(strcmp(a->name, b->name) == 0 && strcmp(a->source, b->source) == 0 &&
                  strcmp(a->transforms, b->transforms) == 0 &&
                  strcmp(a->calibration, b->calibration) == 0,
              "strings differ");
  size_t n = (size_t)a->numdata;
  FUZZ_ASSERT(memcmp(a->use, b->use, n * sizeof *a->use) == 0, "use differs");
  FUZZ_ASSERT(memcmp(a->point, b->point, n * sizeof *a->point) == 0, "point differs");
  FUZZ_ASSERT(!a->mapped == !b->mapped && !a->rss == !b->rss, "resident arrays differ");
  if (a->mapped) FUZZ_ASSERT(memcmp(a->mapped, b->mapped, n * 8) == 0, "mapped differs");
  if (a->rss) FUZZ_ASSERT(memcmp(a->rss, b->rss, n * 8) == 0, "rss differs");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz.msd", MFD_CLOEXEC);
  FUZZ_ASSERT(fd >= 0, "memfd_create");
  FUZZ_ASSERT(size == 0 || write(fd, data, size) == (ssize_t)size, "write");
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  memstub_stub_data *d = NULL;
  memstub_error err = {0};
  int rc = memstub_stub_data_open(path, &d, &err);
  if (rc < 0) {
    FUZZ_ASSERT(d == NULL, "refused but returned data");
    fuzz_check_refusal(rc, &err);
    FUZZ_ASSERT(strncmp(err.msg, path, strlen(path)) == 0 && err.msg[strlen(path)] == ':',
                "no '%s:' prefix: %s", path, err.msg);
  } else {
    const struct memstub_stub *s = &d->stub;
    size_t n = (size_t)s->numdata;
    FUZZ_ASSERT(s->numdata > 0 && inside(d, s->use, n * sizeof *s->use) &&
                    inside(d, s->point, n * 8) && (!s->mapped || inside(d, s->mapped, n * 8)) &&
                    (!s->rss || inside(d, s->rss, n * 8)),
                "arrays outside the mapping");
    memstub_error e2 = {0};
    (void)memstub_stub_check(s, &e2);
    char out[] = "/tmp/fuzz-datafile-XXXXXX";
    int ofd = mkstemp(out);
    FUZZ_ASSERT(ofd >= 0, "mkstemp");
    close(ofd);
    rc = memstub_stub_data_write(s, out, &err);
    if (rc < 0 && s->abi >= MEMSTUB_STUB_ABI_CALLS && s->callseq) {
      fuzz_check_refusal(rc, &err);
      unlink(out);
      memstub_stub_data_free(d);
      close(fd);
      return 0;
    }
    FUZZ_ASSERT(rc == 0, "write back: %s", err.msg);
    memstub_stub_data *back = NULL;
    rc = memstub_stub_data_open(out, &back, &err);
    FUZZ_ASSERT(rc == 0, "reopen: %s", err.msg);
    same(s, &back->stub);
    memstub_stub_data_free(back);
    unlink(out);
    memstub_stub_data_free(d);
  }
  close(fd);
  return 0;
}
