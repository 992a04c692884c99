/* bench/record_table.c: an allocation-heavy component for the recorder's
 * cost per allocator call at a large live set (issue 27): component()
 * builds a chained hash table of N nodes (each one malloc, its key inside),
 * looks every key up and frees the table, ROUNDS times: 2 N + 2 allocator
 * calls a round, N blocks live at the peak.
 *
 *   record_table [N [ROUNDS [parse]]]   (default 400000 4: 3.2 M calls)
 *
 * parse: like a parser that reads entries into a hash table and sorts them
 * (the program a user found the old recorder losing blocks on): each
 * node's key a block of its own (a string copy), then an array of every
 * node, sorted by key through a buffer as qsort does, freed in that order:
 * 4 N + 6 calls a round, 2 N blocks of 32 bytes or so packed in the heap, big blocks beside.
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

typedef struct pnode {
  struct pnode *next;
  char *key;
  uint64_t val;
} pnode;

// Sort a[0, n) by key, as glibc's qsort does: a merge sort through a
// buffer of n pointers from malloc (counted here, where qsort's is not).
static int sort_by_key(pnode **a, long n) {
  pnode **t = malloc((size_t)n * sizeof *t);
  if (!t) return -1;
  TAKE((size_t)n * sizeof *t);
  for (long w = 1; w < n; w *= 2) {
    for (long lo = 0; lo < n; lo += 2 * w) {
      long mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid,
           k = lo;
      while (i < mid && j < hi) t[k++] = strcmp(a[i]->key, a[j]->key) <= 0 ? a[i++] : a[j++];
      while (i < mid) t[k++] = a[i++];
      while (j < hi) t[k++] = a[j++];
    }
    memcpy(a, t, (size_t)n * sizeof *a);
  }
  free(t);
  TAKE(-(int64_t)((size_t)n * sizeof *t));
  return 0;
}

// One round of parse mode: nodes and their keys, then sorted and freed.
__attribute__((noinline)) uint64_t parse(long n, uint64_t seed) {
  size_t nb = 1;
  while (nb < (size_t)n) nb <<= 1;
  pnode **b = calloc(nb, sizeof *b);
  if (!b) return 0;
  TAKE(nb * sizeof *b);
  char buf[32];
  uint64_t x = seed, sum = 0;
  for (long i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t len = 6 + (size_t)(x >> 60) % 10;
    for (size_t k = 0; k < len; k++) buf[k] = (char)('a' + (x >> (5 * k % 55)) % 26);
    buf[len] = '\0';
    pnode *e = malloc(sizeof *e);
    if (!e || !(e->key = malloc(len + 1))) return 0;
    TAKE(sizeof *e + len + 1);
    memcpy(e->key, buf, len + 1);
    e->val = (uint64_t)i;
    uint64_t h = hash(buf) & (nb - 1);
    e->next = b[h];
    b[h] = e;
  }
  pnode **all = malloc((size_t)n * sizeof *all);
  if (!all) return 0;
  TAKE((size_t)n * sizeof *all);
  long m = 0;
  for (size_t i = 0; i < nb; i++)
    for (pnode *e = b[i]; e; e = e->next) all[m++] = e;
  if (sort_by_key(all, m) != 0) return 0;
  for (long i = 0; i < m; i++) {
    sum += all[i]->val * (uint64_t)(i + 1);
    TAKE(-(int64_t)(sizeof *all[i] + strlen(all[i]->key) + 1));
    free(all[i]->key);
    free(all[i]);
  }
  free(all);
  TAKE(-(int64_t)((size_t)n * sizeof *all));
  free(b);
  TAKE(-(int64_t)(nb * sizeof *b));
  return sum;
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
  int par = argc > 3 && strcmp(argv[3], "parse") == 0;
  if (n <= 0 || rounds <= 0 || (argc > 3 && !par)) {
    fprintf(stderr, "usage: record_table [N [ROUNDS [parse]]]\n");
    return 2;
  }
  uint64_t sum = 0;
  for (long r = 0; r < rounds; r++)
    sum += (par ? parse : component)(n, 88172645463325252ull + (uint64_t)r);
  printf("calls %ld peak %lld checksum %llu\n", rounds * (par ? 4 * n + 6 : 2 * n + 2),
         (long long)g_peak, (unsigned long long)sum);
  return 0;
}
