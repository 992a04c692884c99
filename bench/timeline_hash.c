/* bench/timeline_hash.c: an allocation-heavy program for bench/timeline.sh
 * (issue 27): ROUNDS times, a chained hash table of NODES nodes, each a
 * malloc'd node and a malloc'd string key, is built, every key looked up,
 * and everything freed. About 2 calls per node and round, and a little work
 * of its own between them (hashing, formatting the key, the lookups).
 *
 *   timeline_hash [NODES [ROUNDS]]      (default 200000 3)
 *
 * Prints the sum of the values found, so that nothing is optimised away. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct node {
  struct node *next;
  char *key;
  long value;
} node;

// "k" then r and i in decimal into key; its length.
static int make_key(char *key, long r, long i) {
  char *p = key;
  *p++ = 'k';
  for (long v = r, first = 1; first || v; first = 0, v /= 10) *p++ = (char)('0' + v % 10);
  *p++ = '-';
  for (long v = i, first = 1; first || v; first = 0, v /= 10) *p++ = (char)('0' + v % 10);
  *p = '\0';
  return (int)(p - key);
}

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 200000, rounds = argc > 2 ? atol(argv[2]) : 3;
  if (n < 1 || rounds < 1) return 2;
  size_t nb = 1;
  while (nb < (size_t)n) nb <<= 1;
  long long sum = 0;
  for (long r = 0; r < rounds; r++) {
    node **b = calloc(nb, sizeof *b);
    if (!b) return 1;
    char key[48];
    for (long i = 0; i < n; i++) {
      int len = make_key(key, r, i * 7919 % n);
      node *e = malloc(sizeof *e);
      if (!e || !(e->key = malloc((size_t)len + 1))) return 1;
      memcpy(e->key, key, (size_t)len + 1);
      e->value = i;
      size_t h = hash(key) & (nb - 1);
      e->next = b[h];
      b[h] = e;
    }
    for (long i = 0; i < n; i++) {
      make_key(key, r, i * 7919 % n);
      for (node *e = b[hash(key) & (nb - 1)]; e; e = e->next)
        if (strcmp(e->key, key) == 0) {
          sum += e->value;
          break;
        }
    }
    for (size_t h = 0; h < nb; h++)
      for (node *e = b[h], *next; e; e = next) {
        next = e->next;
        free(e->key);
        free(e);
      }
    free(b);
  }
  printf("%lld\n", sum);
  return 0;
}
