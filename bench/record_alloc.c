/* bench/record_alloc.c: an allocation-heavy program for the recorder's
 * overhead benchmark (bench/record_overhead.sh). Binary trees (the classic
 * allocator benchmark: a node per malloc, built, checked and freed), plus
 * growing strings with realloc, as a parser or a builder would.
 * Usage: record_alloc [DEPTH [WORK]]: WORK rounds of arithmetic per node
 * (0: the allocator alone, about 7 ns per call on a 2020s x86). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct node {
  struct node *l, *r;
  long v;
} node;

static int work;

static node *make(int d) {
  node *n = malloc(sizeof *n);
  unsigned long x = (unsigned long)d;
  for (int k = 0; k < work; k++) x = x * 6364136223846793005ul + 1442695040888963407ul;
  n->v = d + (long)(x >> 60);
  if (d > 0) {
    n->l = make(d - 1);
    n->r = make(d - 1);
  } else {
    n->l = n->r = NULL;
  }
  return n;
}

static long check(const node *n) { return n->l ? n->v + check(n->l) - check(n->r) : n->v; }

static void drop(node *n) {
  if (n->l) {
    drop(n->l);
    drop(n->r);
  }
  free(n);
}

int main(int argc, char **argv) {
  int scale = argc > 1 ? atoi(argv[1]) : 16;
  work = argc > 2 ? atoi(argv[2]) : 0;
  long sum = 0;
  node *keep = make(scale);  // long-lived
  for (int d = 4; d <= scale; d += 2) {
    int iters = 1 << (scale - d + 4);
    for (int i = 0; i < iters; i++) {
      node *t = make(d);
      sum += check(t);
      drop(t);
    }
    // Strings grown piecewise.
    for (int i = 0; i < 2000; i++) {
      size_t cap = 16, len = 0;
      char *s = malloc(cap);
      for (int k = 0; k < 64; k++) {
        if (len + 8 > cap) s = realloc(s, cap *= 2);
        memcpy(s + len, "abcdefgh", 8);
        len += 8;
      }
      sum += s[len - 1];
      free(s);
    }
  }
  sum += check(keep);
  drop(keep);
  printf("%ld\n", sum);
  return 0;
}
