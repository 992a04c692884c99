/* bench/system/hash_host.c: a host whose component is allocation-heavy: a
 * chained hash table of many small nodes built, looked up and torn down
 * (issue 31 item 5). Not part of memstub.
 *
 *   hash_host [--nodes N] [--value-bytes V] [--beside-mib M] [--beside-passes P]
 *
 * before  the host allocates N/2 small records of its own (16-56 bytes),
 *         links and sums them, frees them
 * beside  another thread hashes and shuffles M MiB of its own, P passes
 * component  hash_component(): a table of N/2 buckets (one calloc), N
 *         nodes (one malloc each: a link, the key, its hash and V bytes of
 *         value, written), 3N lookups (a third of them misses), then every
 *         node freed bucket by bucket (not in allocation order) and the
 *         buckets; V is the optimisation under study (40 -> 8: a node of 64
 *         bytes -> 32, the value kept as an index instead of inline)
 * after   the host allocates N records of 48 bytes of its own, sums and
 *         frees them: it reuses what the component left in glibc's arena
 * Built with -DHOST_STUB_CALL=memstub_NAME, hash_component() calls the stub
 * instead (-DHOST_STUB_HEADER names its header); the rest is the same.
 * Prints its phases on stderr, as one "host:" line and as `metric NAME VALUE`
 * lines (bench/system/host.h). */
#define _GNU_SOURCE
#include "host.h"

#ifdef HOST_STUB_CALL
#include HOST_STUB_HEADER
#endif

struct node {
  struct node *next;
  uint64_t key, hash;
  unsigned char val[];  // V bytes
};

static uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

/* The clock at the component's phase borders (its build's end, its lookups'
 * end), for bench/timeline_shape.py: two clock reads a run. */
static int64_t g_marks[2];

/* The component: the table built, looked up and torn down. Not static, not
 * inlined: `memstub record --function hash_component` finds it in the
 * executable's symbol table. Returns a checksum of the lookups. */
__attribute__((noinline)) uint64_t hash_component(long nodes, long value_bytes) {
#ifdef HOST_STUB_CALL
  (void)nodes;
  (void)value_bytes;
  int rc = HOST_STUB_CALL();
  if (rc != 0) {
    fprintf(stderr, "host: the stub failed: %s\n", strerror(-rc));
    exit(2);
  }
  return 0;
#else
  size_t nb = (size_t)nodes / 2 + 1;
  struct node **b = calloc(nb, sizeof *b);
  if (!b) exit(2);
  uint64_t seed = 99;
  for (long i = 0; i < nodes; i++) {
    struct node *n = host_xmalloc(sizeof *n + (size_t)value_bytes);
    n->key = host_rand(&seed);
    n->hash = mix(n->key);
    memset(n->val, (int)(n->key & 0xff), (size_t)value_bytes);
    size_t s = (size_t)(n->hash % nb);
    n->next = b[s];
    b[s] = n;
  }
  g_marks[0] = host_now_ns();
  // 3N lookups: the keys again from the same generator, every third a miss
  uint64_t sum = 0, again = 99;
  long used = 0;
  for (long i = 0; i < 3 * nodes; i++) {
    uint64_t k;
    if (i % 3 == 2) {
      k = host_rand(&seed);
    } else {
      if (used == nodes) again = 99, used = 0;
      k = host_rand(&again);
      used++;
    }
    uint64_t h = mix(k);
    for (struct node *n = b[h % nb]; n; n = n->next)
      if (n->hash == h && n->key == k) {
        sum += n->val[value_bytes - 1];
        break;
      }
  }
  g_marks[1] = host_now_ns();
  for (size_t s = 0; s < nb; s++)
    for (struct node *n = b[s], *next; n; n = next) {
      next = n->next;
      free(n);
    }
  free(b);
  return sum;
#endif
}

int main(int argc, char **argv) {
  long nodes = 400000, value_bytes = 40, beside_mib = 32, passes = 3;
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--nodes") == 0) nodes = atol(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--value-bytes") == 0) value_bytes = atol(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--beside-mib") == 0) beside_mib = atol(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--beside-passes") == 0) passes = atol(argv[++i]);
    else {
      fprintf(stderr, "usage: hash_host [--nodes N] [--value-bytes V] [--beside-mib M] "
                      "[--beside-passes P]\n");
      return 2;
    }
  }
  if (nodes <= 0 || value_bytes <= 0 || beside_mib < 0 || passes <= 0) {
    fprintf(stderr, "host: every number must be > 0 (--beside-mib 0: no beside thread)\n");
    return 2;
  }
  int64_t t0 = host_now_ns();

  // before: small records of the host's own, linked, summed, freed
  struct rec {
    struct rec *next;
    uint64_t v;
  } *head = NULL;
  uint64_t seed = 5, sum0 = 0;
  for (long i = 0; i < nodes / 2; i++) {
    struct rec *r = host_xmalloc(sizeof *r + (size_t)(host_rand(&seed) % 5) * 8);
    r->v = host_rand(&seed);
    r->next = head;
    head = r;
  }
  while (head) {
    struct rec *next = head->next;
    sum0 += head->v;
    free(head);
    head = next;
  }
  int64_t t1 = host_now_ns();

  // beside, and the component
  host_beside side;
  host_beside_start(&side, (size_t)beside_mib << 20, (int)passes);
  long a0 = host_anon_kib(), f1 = host_minflt();
  int64_t t2 = host_now_ns();
  uint64_t sum1 = hash_component(nodes, value_bytes);
  int64_t t3 = host_now_ns();
  long a1 = host_anon_kib(), f2 = host_minflt();
  host_beside_join(&side);
  int64_t t4 = host_now_ns();
  long f3 = host_minflt();

  // after: N records of 48 bytes, in the arena the component left
  uint64_t **recs = host_xmalloc((size_t)nodes * sizeof *recs), sum2 = 0;
  for (long i = 0; i < nodes; i++) {
    recs[i] = host_xmalloc(48);
    for (int w = 0; w < 6; w++) recs[i][w] = host_rand(&seed);
  }
  for (long i = 0; i < nodes; i++) {
    sum2 += recs[i][i % 6];
    free(recs[i]);
  }
  free(recs);
  int64_t t5 = host_now_ns();
  long f4 = host_minflt();

  char extra[96];
  snprintf(extra, sizeof extra, "check=%llx", (unsigned long long)(sum0 ^ sum1 ^ sum2 ^ side.sum));
  host_report((int64_t[]){t0, t1, t2, t3, t4, t5}, (long[]){a0, a1}, (long[]){f1, f2, f3, f4},
              side.work_ns, extra);
  if (g_marks[0] && g_marks[1])  // the real component's phases (a stub has none to mark)
    fprintf(stderr, "metric component_build_ms %.3f\nmetric component_lookup_ms %.3f\n"
                    "metric component_teardown_ms %.3f\n",
            (double)(g_marks[0] - t2) / 1e6, (double)(g_marks[1] - g_marks[0]) / 1e6,
            (double)(t3 - g_marks[1]) / 1e6);
  return 0;
}
