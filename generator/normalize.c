// Stack normalisation: any sequence of stack totals becomes frame pushes and
// pops that a recursion can perform. Real traces are not LIFO-shaped: from
// open frames [300, 100] a drop to 250 cannot pop "150", so it becomes
// pop 100, pop 300, push 250, on zero-delay points that map to the same row.
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

// The open frames while normalising.
typedef struct frames {
  int64_t *size;
  size_t n, cap;
  int64_t total;
} frames;

static int frames_push(frames *f, int64_t bytes) {
  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 64;
    int64_t *s = realloc(f->size, cap * sizeof *s);
    if (!s) return -ENOMEM;
    f->size = s;
    f->cap = cap;
  }
  f->size[f->n++] = bytes;
  f->total += bytes;
  return 0;
}

/* Emit the points that take the stack from f->total to target, the first
 * carrying delay and the last carrying dheap; all map to row. */
static int step(memstub_gen *g, frames *f, int64_t target, int64_t delay, int64_t dheap,
                int64_t row) {
  if (target == f->total) return ms__gen_append(g, delay, 0, dheap, row);
  // Pop every frame that reaches above the target; the push below restores
  // what the last pop took beyond it.
  while (f->total > target) {
    int64_t top = f->size[--f->n];
    f->total -= top;
    int last = f->total == target;
    int rc = ms__gen_append(g, delay, -top, last ? dheap : 0, row);
    if (rc < 0) return rc;
    delay = 0;
    if (last) return 0;
  }
  int rc = frames_push(f, target - f->total);
  return rc < 0 ? rc : ms__gen_append(g, delay, f->size[f->n - 1], dheap, row);
}

int ms__gen_normalize(memstub_gen *g, const ms__targets *tg) {
  frames f = {0};
  int rc = 0;
  // Row 0 is the state at entry: only if it sits above the bases does the
  // stub need to build it, on zero-delay points before the first real one.
  if (tg->s[0] > 0 || tg->h[0] > 0) rc = step(g, &f, tg->s[0], 0, tg->h[0], 0);
  for (size_t i = 1; rc == 0 && i < tg->n; i++)
    rc = step(g, &f, tg->s[i], tg->t[i] - tg->t[i - 1], tg->h[i] - tg->h[i - 1], (int64_t)i);
  free(f.size);
  return rc;
}
