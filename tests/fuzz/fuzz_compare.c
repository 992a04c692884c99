// libFuzzer harness: aligning two traces (memstub_compare_traces) and the
// file front end that locates its errors (memstub_compare_files).
//
// The input is ORIGINAL, a line "%%", then REPLAYED (without the line, both
// are the whole input). When both parse, the comparison either refuses them
// with a one-line message, or gives a report whose figures hold together and
// which the text and JSON writers print. memstub_compare_files, on the same
// texts through memfds, must agree and locate its refusals inside the files.
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "memstub/compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink;
static memstub_compare_checks *checks;

static void check_time(const memstub_compare_time *t, size_t n) {
  FUZZ_ASSERT(t->p50_abs >= 0 && t->p50_abs <= t->p99_abs && t->p99_abs <= t->max_abs,
              "percentiles out of order");
  FUZZ_ASSERT(t->min <= t->max && t->late <= n, "time error range");
}

static void check_report(const memstub_compare_report *r, const memstub_trace *a,
                         const memstub_trace *b) {
  FUZZ_ASSERT(r->original_rows == a->n && r->replayed_rows == b->n, "row counts");
  FUZZ_ASSERT(r->compared >= 1 && r->compared + r->missing == a->n, "compared %zu missing %zu",
              r->compared, r->missing);
  FUZZ_ASSERT(r->compared + r->repeated == b->n, "compared %zu repeated %zu of %zu rows",
              r->compared, r->repeated, b->n);
  for (size_t i = 0; i < a->n; i++)
    FUZZ_ASSERT(r->match[i] >= -1 && r->match[i] < (int64_t)b->n, "match[%zu] %lld", i,
                (long long)r->match[i]);
  check_time(&r->time, r->compared);
  check_time(&r->adjusted, r->compared);
  FUZZ_ASSERT(r->duration.first_point >= 0 && r->duration.first_point <= r->duration.last_point &&
                  r->duration.last_point < (int64_t)a->n,
              "duration points");
  FUZZ_ASSERT(r->stack.exact <= r->compared && r->heap.exact <= r->compared &&
                  r->heap.paged <= r->compared,
              "exact counts");
  FUZZ_ASSERT(r->stack.exact_share >= 0 && r->stack.exact_share <= 1 &&
                  r->heap.exact_share >= 0 && r->heap.exact_share <= 1,
              "exact shares");
  FUZZ_ASSERT(r->stack.max_abs >= 0 && r->heap.max_abs >= 0 && !isnan(r->stack.mean_abs) &&
                  !isnan(r->heap.mean_abs),
              "memory error figures");
  memstub_compare_checks_run(checks, r);
  FUZZ_ASSERT(memstub_compare_write_text(r, checks, sink) == 0, "write_text");
  FUZZ_ASSERT(memstub_compare_write_json(r, checks, sink) == 0, "write_json");
}

// The text in a memfd, named by its /proc path.
static int memfd(const char *name, const char *buf, size_t len, char path[64]) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  FUZZ_ASSERT(fd >= 0, "memfd_create");
  FUZZ_ASSERT(len == 0 || write(fd, buf, len) == (ssize_t)len, "write");
  snprintf(path, 64, "/proc/self/fd/%d", fd);
  return fd;
}

static void files(const char *a, size_t la, const char *b, size_t lb,
                  const memstub_compare_options *o, int want_rc) {
  char pa[64], pb[64];
  int fa = memfd("orig.csv", a, la, pa), fb = memfd("repl.csv", b, lb, pb);
  memstub_compare_report *r = (memstub_compare_report *)1;
  memstub_error err = {0};
  int rc = memstub_compare_files(pa, pb, o, &r, &err);
  FUZZ_ASSERT(rc == want_rc, "memstub_compare_files: rc %d, memstub_compare_traces: %d (%s)", rc,
              want_rc, err.msg);
  if (rc < 0) {
    FUZZ_ASSERT(r == NULL, "refused, but *out is set");
    fuzz_check_refusal(rc, &err);
    // A refusal inside one of the files names a line and a column of it.
    if (strncmp(err.msg, pa, strlen(pa)) == 0 && err.msg[strlen(pa)] == ':')
      fuzz_check_position(err.msg, pa, a, la, 1);
    else if (strncmp(err.msg, pb, strlen(pb)) == 0 && err.msg[strlen(pb)] == ':')
      fuzz_check_position(err.msg, pb, b, lb, 1);
  }
  memstub_compare_free(r == (memstub_compare_report *)1 ? NULL : r);
  close(fa);
  close(fb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!sink) {
    sink = fopen("/dev/null", "w");
    checks = memstub_compare_checks_create();
    memstub_error err;
    FUZZ_ASSERT(sink && checks &&
                    memstub_compare_checks_parse(
                        checks,
                        "total-us=1,total-pct=1,p50-ns=1,adj-p99-us=1,max-s=1,late=1%,adj-late=2,"
                        "stack-exact=99%,heap-exact=0.5,stack-max=1,heap-mean=1,missing=0,"
                        "repeated=0",
                        &err) == 0,
                "setup");
  }
  const char *buf = (const char *)data, *a = buf, *b = buf;
  size_t la = size, lb = size;
  for (size_t i = 0; i + 4 <= size; i++)
    if (memcmp(buf + i, "\n%%\n", 4) == 0) {
      la = i + 1;
      b = buf + i + 4;
      lb = size - i - 4;
      break;
    }
  memstub_trace *ta = NULL, *tb = NULL;
  memstub_error err = {0};
  if (memstub_trace_parse("orig.csv", a, la, &ta, &err) < 0 ||
      memstub_trace_parse("repl.csv", b, lb, &tb, &err) < 0) {
    memstub_trace_free(ta);
    return 0;
  }
  memstub_compare_options opts[2];
  memstub_compare_options_init(&opts[0]);
  memstub_compare_options_init(&opts[1]);
  opts[1].allow_partial = 1;
  opts[1].page_size = 4096;
  opts[1].late_ns = 0;
  opts[1].heap_slack = 0;
  opts[1].mmap_threshold = 0;
  for (int k = 0; k < 2; k++) {
    memstub_compare_report *r = (memstub_compare_report *)1;
    int rc = memstub_compare_traces(ta, "orig", tb, "repl", &opts[k], &r, &err);
    if (rc < 0) {
      FUZZ_ASSERT(r == NULL, "refused, but *out is set");
      fuzz_check_refusal(rc, &err);
    } else {
      FUZZ_ASSERT(r != NULL, "no report");
      check_report(r, ta, tb);
      memstub_compare_free(r);
    }
    files(a, la, b, lb, &opts[k], rc);
  }
  memstub_trace_free(ta);
  memstub_trace_free(tb);
  return 0;
}
