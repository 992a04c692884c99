/* traces/calls_write.c: a calls file (docs/formats.md, "The calls file";
 * calls_format.h) written by an importer whose source has the calls
 * (memstub import heaptrack --calls): one thread, blocks of calls in order,
 * the file written whole or not at all (common/afile.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "ms_common.h"

#define BLOCK_DATA ((size_t)1 << 16)  // a block's calls at most, bytes

struct ms__calls_writer {
  ms__afile af;
  char *path;
  ms__calls_head head;
  ms__calls_block blk;
  int64_t t;       // the block's last call's time
  uintptr_t addr;  // ... and its last address
  uint8_t data[BLOCK_DATA];
};

int ms__calls_writer_open(const char *path, ms__calls_writer **out, memstub_error *err) {
  *out = NULL;
  ms__calls_writer *w = calloc(1, sizeof *w);
  if (!w || !(w->path = strdup(path))) {
    free(w);
    return memstub_error_set(err, -ENOMEM, "%s: out of memory", path);
  }
  int rc = ms__afile_open(&w->af, path, err);
  if (rc == 0 && !w->af.tmp) {  // a device or standard output: the head is rewritten at the end
    ms__afile_abort(&w->af);
    rc = memstub_error_set(err, -EINVAL, "%s: a calls file must be a regular file", path);
  }
  memcpy(w->head.magic, MS__CALLS_MAGIC, sizeof w->head.magic);
  w->head.version = MS__CALLS_VERSION;
  w->head.head_bytes = sizeof w->head;
  w->head.ns_per_raw = 1.0;  // times in ns, from the trace's time 0
  w->head.bytes = sizeof w->head;
  w->blk.magic = MS__CALLS_BLOCK_MAGIC;
  if (rc == 0 && fwrite(&w->head, sizeof w->head, 1, w->af.f) != 1) {
    ms__afile_abort(&w->af);
    rc = memstub_error_set(err, -EIO, "%s: cannot write", path);
  }
  if (rc < 0) {
    free(w->path);
    free(w);
    return rc;
  }
  *out = w;
  return 0;
}

// The block's calls written, the block empty after. 0 or -EIO.
static int flush(ms__calls_writer *w) {
  if (!w->blk.calls) return 0;
  if (fwrite(&w->blk, sizeof w->blk, 1, w->af.f) != 1 ||
      fwrite(w->data, w->blk.bytes, 1, w->af.f) != 1)
    return -EIO;
  w->head.bytes += sizeof w->blk + w->blk.bytes;
  w->blk.calls = w->blk.bytes = 0;
  return 0;
}

int ms__calls_writer_add(ms__calls_writer *w, int64_t t_ns, int fn, uint64_t old, uint64_t p,
                         uint64_t size, uint64_t align, int failed, memstub_error *err) {
  if (w->blk.bytes + MS__CALLS_MAX_RECORD > BLOCK_DATA && flush(w) < 0)
    return memstub_error_set(err, -EIO, "%s: cannot write", w->path);
  if (w->blk.calls == 0) w->blk.t0 = w->t = t_ns, w->addr = 0;
  uint8_t *q0 = w->data + w->blk.bytes;
  uint8_t *q = ms__calls_encode(q0, &w->t, &w->addr, t_ns, fn, (uintptr_t)old, (uintptr_t)p,
                                size, align, failed);
  w->blk.bytes += (uint32_t)(q - q0);
  w->blk.calls++;
  w->head.calls++;
  return 0;
}

int ms__calls_writer_commit(ms__calls_writer *w, memstub_error *err) {
  int rc = flush(w);
  if (rc == 0 && (fseek(w->af.f, 0, SEEK_SET) != 0 ||
                  fwrite(&w->head, sizeof w->head, 1, w->af.f) != 1))
    rc = -EIO;
  if (rc < 0) {
    rc = memstub_error_set(err, rc, "%s: cannot write", w->path);
    ms__afile_abort(&w->af);
  } else {
    rc = ms__afile_commit(&w->af, err);
  }
  free(w->path);
  free(w);
  return rc;
}

void ms__calls_writer_abort(ms__calls_writer *w) {
  if (!w) return;
  ms__afile_abort(&w->af);
  free(w->path);
  free(w);
}
