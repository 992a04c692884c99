// A map from block addresses to two numbers (ms_common.h): open addressing
// with linear probing, for the replays of a calls file (generator/calls.c,
// tests/test_record_calls.c).
#include <errno.h>
#include <stdlib.h>

#include "ms_common.h"

// Where a is, or the empty slot it would go to (pre: cap > 0, a power of two).
static size_t slot(const ms__addrmap *m, uint64_t a) {
  size_t i = (size_t)((a >> 4) * UINT64_C(0x9E3779B97F4A7C15)) & (m->cap - 1);
  while (m->key[i] && m->key[i] != a) i = (i + 1) & (m->cap - 1);
  return i;
}

// Double the table (1024 slots at first). 0 or -ENOMEM (m as it was).
static int grow(ms__addrmap *m) {
  ms__addrmap o = *m;
  ms__addrmap g = {0};
  g.cap = o.cap ? 2 * o.cap : 1024;
  g.key = calloc(g.cap, sizeof *g.key);
  g.a = calloc(g.cap, sizeof *g.a);
  g.b = calloc(g.cap, sizeof *g.b);
  if (!g.key || !g.a || !g.b) {
    ms__addrmap_free(&g);
    return -ENOMEM;
  }
  for (size_t i = 0; i < o.cap; i++)
    if (o.key[i]) (void)ms__addrmap_put(&g, o.key[i], o.a[i], o.b[i]);
  ms__addrmap_free(&o);
  *m = g;
  return 0;
}

int ms__addrmap_put(ms__addrmap *m, uint64_t key, int64_t a, int64_t b) {
  if (2 * (m->n + 1) > m->cap && grow(m) < 0) return -ENOMEM;
  size_t i = slot(m, key);
  int had = m->key[i] != 0;
  if (!had) m->n++;
  m->key[i] = key, m->a[i] = a, m->b[i] = b;
  return had;
}

int ms__addrmap_take(ms__addrmap *m, uint64_t key, int64_t *a, int64_t *b) {
  if (!m->cap || !key) return 0;
  size_t i = slot(m, key);
  if (!m->key[i]) return 0;
  if (a) *a = m->a[i];
  if (b) *b = m->b[i];
  m->key[i] = 0, m->n--;
  // Re-place the cluster after it (linear probing's deletion).
  for (size_t j = (i + 1) & (m->cap - 1); m->key[j]; j = (j + 1) & (m->cap - 1)) {
    uint64_t k = m->key[j];
    m->key[j] = 0;
    size_t s = slot(m, k);
    m->key[s] = k, m->a[s] = m->a[j], m->b[s] = m->b[j];
  }
  return 1;
}

void ms__addrmap_free(ms__addrmap *m) {
  free(m->key), free(m->a), free(m->b);
  *m = (ms__addrmap){0};
}
