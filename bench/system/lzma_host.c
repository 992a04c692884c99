/* bench/system/lzma_host.c: a host whose component is liblzma compressing a
 * buffer (issue 18). Not part of memstub.
 *
 *   lzma_host [--mib N] [--preset P] [--beside-mib M] [--beside-passes Q]
 *
 * before  generate N MiB of text from a vocabulary (compressible, as logs
 *         are) in its own memory, checksum it, allocate the output buffer
 * beside  another thread hashes and shuffles M MiB of its own, Q passes
 * component  lzma_easy_buffer_encode(P, CRC64) of the whole buffer; P (the
 *         preset: dictionary size and match finder) is the optimisation
 *         under study (9 -> 6: 64 MiB -> 8 MiB dictionary)
 * after   the host counts its words in a hash table of its own, frees
 * Built with -DHOST_STUB_CALL=memstub_NAME, the call is the stub's instead
 * (-DHOST_STUB_HEADER names its header). Prints its phases on stderr, as
 * one "host:" line and as `metric NAME VALUE` lines (bench/system/host.h). */
#define _GNU_SOURCE
#include <lzma.h>

#include "host.h"

#ifdef HOST_STUB_CALL
#include HOST_STUB_HEADER
#endif

static const char *const words[] = {
    "the", "request", "from", "client", "was", "accepted", "in", "queue", "worker", "thread",
    "finished", "job", "with", "status", "ok", "error", "timeout", "retry", "after", "ms",
    "connection", "closed", "by", "peer", "bytes", "sent", "received", "cache", "miss", "hit",
    "index", "table", "row", "updated", "inserted", "deleted", "user", "session", "login", "logout"};
#define NWORDS (sizeof words / sizeof words[0])

int main(int argc, char **argv) {
  long mib = 6, preset = 9, beside_mib = 32, passes = 6;
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--mib") == 0) mib = atol(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--preset") == 0) preset = atol(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--beside-mib") == 0) beside_mib = atol(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--beside-passes") == 0) passes = atol(argv[++i]);
    else {
      fprintf(stderr, "usage: lzma_host [--mib N] [--preset P] [--beside-mib M] "
                      "[--beside-passes Q]\n");
      return 2;
    }
  }
  if (mib <= 0 || preset < 0 || preset > 9 || beside_mib <= 0 || passes <= 0) {
    fprintf(stderr, "host: --mib, --beside-* must be > 0, --preset 0 to 9\n");
    return 2;
  }
  int64_t t0 = host_now_ns();

  // before: the text, its checksum, the output buffer
  size_t n = (size_t)mib << 20, len = 0;
  char *in = host_xmalloc(n);
  uint64_t seed = 11;
  long line = 0;
  while (len < n) {
    char buf[256];
    int k = snprintf(buf, sizeof buf, "%08ld ", line++);
    int nw = 4 + (int)(host_rand(&seed) % 9);
    for (int w = 0; w < nw && k < 200; w++) {
      uint64_t r = host_rand(&seed);
      // a skewed choice: a few words are common, as in real text
      size_t idx = (size_t)((r % NWORDS) * ((r >> 32) % NWORDS) / NWORDS);
      k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s", words[idx], w + 1 < nw ? " " : "\n");
      if (r % 5 == 0) k += snprintf(buf + k, sizeof buf - (size_t)k, "%u ", (unsigned)(r >> 40));
    }
    size_t c = (size_t)k < n - len ? (size_t)k : n - len;
    memcpy(in + len, buf, c);
    len += c;
  }
  uint32_t crc = lzma_crc32((const uint8_t *)in, n, 0);
  size_t cap = lzma_stream_buffer_bound(n), outpos = 0;
  uint8_t *out = host_xmalloc(cap);
  int64_t t1 = host_now_ns();

  // beside, and the component
  host_beside side;
  host_beside_start(&side, (size_t)beside_mib << 20, (int)passes);
  long a0 = host_anon_kib(), f1 = host_minflt();
  int64_t t2 = host_now_ns();
#ifdef HOST_STUB_CALL
  int rc = HOST_STUB_CALL();
  if (rc != 0) {
    fprintf(stderr, "host: the stub failed: %s\n", strerror(-rc));
    return 2;
  }
#else
  lzma_ret ret = lzma_easy_buffer_encode((uint32_t)preset, LZMA_CHECK_CRC64, NULL,
                                         (const uint8_t *)in, n, out, &outpos, cap);
  if (ret != LZMA_OK) {
    fprintf(stderr, "host: lzma_easy_buffer_encode: error %d\n", (int)ret);
    return 2;
  }
#endif
  int64_t t3 = host_now_ns();
  long a1 = host_anon_kib(), f2 = host_minflt();
  host_beside_join(&side);
  int64_t t4 = host_now_ns();
  long f3 = host_minflt();

  // after: the host's word count, in a hash table of its own (the line
  // numbers and figures make most words distinct)
  size_t slots = 1 << 20, used = 0;
  struct slot {
    uint64_t h;
    long count;
  } *tab = calloc(slots, sizeof *tab);
  if (!tab) return 2;
  uint64_t h = 1469598103934665603ULL;
  long nw = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = in[i];
    if (ch == ' ' || ch == '\n') {
      size_t s = (size_t)(h % slots);
      while (tab[s].h && tab[s].h != h) s = (s + 1) % slots;
      if (tab[s].h || used < slots / 2) {  // at most half full: the probes stay short
        used += !tab[s].h;
        tab[s].h = h;
        tab[s].count++;
      }
      nw++;
      h = 1469598103934665603ULL;
    } else {
      h = (h ^ (uint8_t)ch) * 1099511628211ULL;
    }
  }
  free(tab);
  free(out);
  free(in);
  int64_t t5 = host_now_ns();
  long f4 = host_minflt();

  char extra[96];
  snprintf(extra, sizeof extra, "out_bytes=%zu check=%llx", outpos, (unsigned long long)(crc ^ (uint64_t)nw ^ side.sum));
  host_report((int64_t[]){t0, t1, t2, t3, t4, t5}, (long[]){a0, a1}, (long[]){f1, f2, f3, f4},
              side.work_ns, extra);
  return 0;
}
