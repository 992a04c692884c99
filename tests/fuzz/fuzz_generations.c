// libFuzzer harness: the generations file reader (memstub_generations_read)
// and the release of survivors in a trace of regions.
//
// Every input is either refused with "PATH:LINE: ..." (one printable line),
// or accepted: then every survivor names an occurrence of the file, and
// releasing the survivors in a two-region trace gives a valid trace whose
// heap never goes below zero.
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "memstub/generations.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz.generations", MFD_CLOEXEC);
  FUZZ_ASSERT(fd >= 0, "memfd_create");
  FUZZ_ASSERT(write(fd, data, size) == (ssize_t)size, "write");
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  memstub_generations *g = NULL;
  memstub_error err = {0};
  int rc = memstub_generations_read(path, &g, &err);
  close(fd);
  if (rc < 0) {
    fuzz_check_refusal(rc, &err);
    FUZZ_ASSERT(strncmp(err.msg, path, strlen(path)) == 0, "no file name: %s", err.msg);
    FUZZ_ASSERT(g == NULL, "a refusal left a result");
    return 0;
  }
  for (size_t i = 0; i < g->nsurv; i++)
    FUZZ_ASSERT(memstub_generations_find(g, g->surv[i].occurrence) != NULL, "survivor %zu", i);
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
