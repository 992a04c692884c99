/* bench/record_table.c: an allocation-heavy component for the recorder's
 * cost per allocator call at a large live set (issue 27): component()
 * builds a chained hash table of N nodes (each one malloc, its key inside),
 * looks every key up and frees the table, ROUNDS times: 2 N + 2 allocator
 * calls a round, N blocks live at the peak.
 *
 *   record_table [N [ROUNDS]]      (default 400000 4: 3.2 M calls)
 *
 * Prints the calls it made, the exact peak of the bytes it requested (what
 * a recorder's peak heap must equal) and a checksum (so nothing is
 * optimised away). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t g_live, g_peak;  // bytes requested, now and at most
#define TAKE(n) (g_live += (int64_t)(n), g_peak = g_live > g_peak ? g_live : g_peak)

typedef struct node {
  struct node *next;
  uint64_t val;
  char key[];
} node;

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
  return h;
}

// One round: build, look up, free. The --function target of the benchmark.
__attribute__((noinline)) uint64_t component(long n, uint64_t seed) {
  size_t nb = 1;
  while (nb < (size_t)n) nb <<= 1;
  node **b = calloc(nb, sizeof *b);
  if (!b) return 0;
  TAKE(nb * sizeof *b);
  char buf[32];
  uint64_t x = seed, sum = 0;
  for (long i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    // a key of 4 to 19 hex digits: nodes of 24 to 40 bytes
    size_t len = 4 + (size_t)(x >> 60);
    for (size_t k = 0; k < len; k++) buf[k] = "0123456789abcdef"[(x >> (4 * k)) & 15];
    buf[len] = '\0';
    node *e = malloc(sizeof *e + len + 1);
    if (!e) return 0;
    TAKE(sizeof *e + len + 1);
    memcpy(e->key, buf, len + 1);
    e->val = (uint64_t)i;
    uint64_t h = hash(buf) & (nb - 1);
    e->next = b[h];
    b[h] = e;
  }
  for (size_t i = 0; i < nb; i++)
    for (node *e = b[i]; e; e = e->next) sum += e->val + (uint64_t)(unsigned char)e->key[1];
  for (size_t i = 0; i < nb; i++)
    for (node *e = b[i], *nx; e; e = nx) {
      nx = e->next;
      TAKE(-(int64_t)(sizeof *e + strlen(e->key) + 1));
      free(e);
    }
  free(b);
  TAKE(-(int64_t)(nb * sizeof *b));
  return sum;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 400000;
  long rounds = argc > 2 ? atol(argv[2]) : 4;
  if (n <= 0 || rounds <= 0) {
    fprintf(stderr, "usage: record_table [N [ROUNDS]]\n");
    return 2;
  }
  uint64_t sum = 0;
  for (long r = 0; r < rounds; r++) sum += component(n, 88172645463325252ull + (uint64_t)r);
  printf("calls %ld peak %lld checksum %llu\n", rounds * (2 * n + 2), (long long)g_peak,
         (unsigned long long)sum);
  return 0;
}
