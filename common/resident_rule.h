/* common/resident_rule.h: where a stub's resident pages go (docs/memory-model.md,
 * "Replaying resident memory"). One rule for the runtime, which writes and
 * drops the pages (runtime/resident.c), and the generator's cost model, which
 * predicts what that costs (generator/compensate.c). */
#ifndef MEMSTUB_RESIDENT_RULE_H
#define MEMSTUB_RESIDENT_RULE_H

#include <stdint.h>

/* Written pages stay where they are while the target allows: *h, *m, *k are
 * the bytes written now in the heap block (of heap bytes), the mapping (of
 * map_len) and the keep mapping; a higher target writes the difference in
 * the block first, then the mapping, then the keep mapping, a lower one drops
 * it from the keep mapping first, then the mapping, then the block.
 * pre: 0 <= *h <= heap, 0 <= *m <= map_len, *k >= 0, target >= 0. */
static inline void ms__res_settle(int64_t target, int64_t heap, int64_t map_len, int64_t *h,
                                  int64_t *m, int64_t *k) {
  int64_t have = *h + *m + *k, d;
  if (target > have) {
    int64_t need = target - have;
    d = heap - *h < need ? heap - *h : need;
    *h += d;
    need -= d;
    d = map_len - *m < need ? map_len - *m : need;
    *m += d;
    *k += need - d;
  } else if (target < have) {
    int64_t cut = have - target;
    d = *k < cut ? *k : cut;
    *k -= d;
    cut -= d;
    d = *m < cut ? *m : cut;
    *m -= d;
    *h -= cut - d;
  }
}

#endif
