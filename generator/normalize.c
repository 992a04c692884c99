// Stack normalisation: any sequence of stack totals becomes frame pushes and
// pops that a recursion can perform. Real traces are not LIFO-shaped: from
// open frames [300, 100] a drop to 250 cannot pop "150", so it becomes
// pop 100, pop 300, push 250, on zero-delay points that map to the same row.
//
// With a calibration profile the normaliser is overhead-aware: the replay
// measures sum(F + a) over the open frames (F the stack overhead per frame,
// a the bytes pushed) plus the offset O once a frame is open (0 at the
// entry level), so it tracks the frames by their effective size e = F + a
// (O + F + a for the first) and, for a target total T:
//   - pops while the open frames exceed T;
//   - remainder R = T - sum(e): R == 0 done; R >= F pushes a = R - F (at
//     least 1 byte: the runtime's 16-byte rounding with carry makes that an
//     exact zero-size frame within its slack);
//   - 0 < R < F: pops the top frame and pushes it again R bytes larger;
//     with no frame open the row cannot be met (0 < T < O + F): the closer
//     level (empty, or an empty frame) is taken and the row counted.
// The state is the open frames, so an unmet remainder is carried forward and
// later rows are right again. Without a profile F = O = 0 and this is the
// plain normalisation above.
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

// The open frames while normalising: pushed bytes, and the effective total.
typedef struct frames {
  int64_t *size;  // a: bytes pushed
  size_t n, cap;
  int64_t total;  // O + sum(F + a) with a frame open, else 0
  int64_t frame;  // F
  int64_t offset; // O: what the first frame adds beyond F
} frames;

// The overhead of the next frame pushed: the first one carries the offset.
static int64_t overhead(const frames *f) {
  int64_t o = f->frame + (f->n == 0 ? f->offset : 0);
  return o > 0 ? o : 0;
}

static int frames_push(frames *f, int64_t bytes) {
  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 64;
    int64_t *s = realloc(f->size, cap * sizeof *s);
    if (!s) return -ENOMEM;
    f->size = s;
    f->cap = cap;
  }
  f->total += overhead(f) + bytes;
  f->size[f->n++] = bytes;
  return 0;
}

static int64_t frames_pop(frames *f) {
  int64_t top = f->size[--f->n];
  f->total -= overhead(f) + top;
  return top;
}

/* The points of one row: the first carries the delay, the last the heap
 * change. An operation is held back until the next one shows it is not the
 * last. */
typedef struct emitter {
  memstub_gen *g;
  int64_t delay, dheap, row;
  int64_t stack;  // the held-back operation's stackAlloc
  int held;
} emitter;

static int emit(emitter *e, int64_t stack) {
  int rc = 0;
  if (e->held) {
    rc = ms__gen_append(e->g, e->delay, e->stack, 0, e->row);
    e->delay = 0;
  }
  e->stack = stack;
  e->held = 1;
  return rc;
}

static int emit_end(emitter *e) {
  if (!e->held) e->stack = 0;  // nothing to do: a constant-stack point
  return ms__gen_append(e->g, e->delay, e->stack, e->dheap, e->row);
}

/* Emit the points that take the stack from f->total to target. */
static int step(memstub_gen *g, frames *f, int64_t target, int64_t delay, int64_t dheap,
                int64_t row, ms__stack_comp *sc) {
  emitter e = {.g = g, .delay = delay, .dheap = dheap, .row = row};
  int64_t want = target < 0 ? 0 : target;
  int unmet = target < 0, rc = 0;
  // Pop every frame that reaches above the target.
  while (rc == 0 && f->total > want) rc = emit(&e, -frames_pop(f));
  int64_t r = want - f->total, F = overhead(f);
  if (rc == 0 && r > 0 && r >= F) {
    int64_t a = r - F > 0 ? r - F : 1;
    if ((rc = frames_push(f, a)) == 0) rc = emit(&e, a);
    if (sc && F > 0) sc->reduced++;
  } else if (rc == 0 && r > 0 && f->n > 0) {
    // A rise smaller than a frame's overhead: the top frame again, r bytes larger.
    int64_t old = frames_pop(f);
    if ((rc = emit(&e, -old)) == 0 && (rc = frames_push(f, old + r)) == 0) rc = emit(&e, old + r);
    if (sc) sc->replaced++;
  } else if (rc == 0 && r > 0) {
    // want < O + F with no frame open: stay empty, or push an empty frame.
    if (F - r < r && (rc = frames_push(f, 1)) == 0) rc = emit(&e, 1);
    unmet = 1;
  }
  if (rc < 0) return rc;
  if (sc && unmet) {
    int64_t err = f->total - target;
    sc->unmet++;
    if (err < 0) err = -err;
    if (err > sc->unmet_max) sc->unmet_max = err;
  }
  return emit_end(&e);
}

int ms__gen_normalize(memstub_gen *g, const ms__targets *tg, ms__stack_comp *sc) {
  frames f = {.frame = sc ? sc->frame : 0, .offset = sc ? sc->offset : 0};
  int rc = 0;
  // Row 0 is the state at entry: only if it sits above the bases does the
  // stub need to build it, on zero-delay points before the first real one.
  if (tg->s[0] > 0 || tg->h[0] > 0) rc = step(g, &f, tg->s[0], 0, tg->h[0], 0, sc);
  for (size_t i = 1; rc == 0 && i < tg->n; i++)
    rc = step(g, &f, tg->s[i], tg->t[i] - tg->t[i - 1], tg->h[i] - tg->h[i - 1], (int64_t)i, sc);
  free(f.size);
  return rc;
}
