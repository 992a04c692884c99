// memstub_stub_decode: the compact form of a generated header (docs/formats.md,
// "Compact data"). The header's constructor calls it before main to fill its
// memUse and memPoint arrays from the packed string literal that
// generator/emit.c wrote.
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "memstub/stub.h"

#define TAG "ms1."
#define TAG_RESIDENT "ms2."  // with memMapped and memRss
#define TAG_WORK "ms3."      // with memCpu, memCalls, memChurn and memCallTab
#define TAG_WORK_RESIDENT "ms4."  // both

/* A character's 5-bit group: bit 5 set when more groups follow; 0xff for a
 * character that is not a digit (generator/emit.c: digit_end, digit_more). */
static void make_table(unsigned char t[256]) {
  static const char end[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef";
  static const char more[] = "ghijklmnopqrstuvwxyz0123456789-_";
  memset(t, 0xff, 256);
  for (unsigned i = 0; i < 32; i++) {
    t[(unsigned char)end[i]] = (unsigned char)i;
    t[(unsigned char)more[i]] = (unsigned char)(32 | i);
  }
}

// One zigzag number from *p (below e): 0, or -1 when cut short, not a digit or beyond 64 bits.
static int get(const unsigned char *t, const char **p, const char *e, int64_t *v) {
  uint64_t z = 0;
  for (unsigned shift = 0;; shift += 5) {
    if (*p == e || shift > 60) return -1;
    unsigned c = t[(unsigned char)*(*p)++];
    if (c == 0xff) return -1;
    uint64_t bits = c & 31;
    if (shift == 60 && bits > 15) return -1;  // 64 bits end in a group of 4
    z |= bits << shift;
    if (!(c & 32)) break;
  }
  *v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
  return 0;
}

/* The points of data after tag: with mapped and rss (tag "ms2.") two more
 * numbers a point, the mapped change and the resident target. */
typedef struct work_out {
  int64_t *cpu, *calls, *churn, *calltab;
  int64_t ncalltab;
} work_out;

static int decode(const char *tag, const char *data, int64_t len, int64_t numdata,
                  struct memAlloc *use, int64_t *point, int64_t *mapped, int64_t *rss,
                  const work_out *w) {
  unsigned char t[256];
  make_table(t);
  size_t tl = strlen(tag);
  const char *p = data, *e = data + (len > 0 ? len : 0);
  int64_t prev = 0, i = 0;
  int ok = len >= (int64_t)tl && memcmp(data, tag, tl) == 0;
  if (ok) p += tl;
  for (; ok && i < numdata; i++) {
    int64_t step = 0;
    ok = get(t, &p, e, &use[i].time) == 0 && get(t, &p, e, &use[i].stackAlloc) == 0 &&
         get(t, &p, e, &use[i].heapAlloc) == 0 && get(t, &p, e, &step) == 0;
    if (ok && mapped) ok = get(t, &p, e, &mapped[i]) == 0 && get(t, &p, e, &rss[i]) == 0;
    if (ok && w)
      ok = get(t, &p, e, &w->cpu[i]) == 0 && get(t, &p, e, &w->calls[i]) == 0 &&
           get(t, &p, e, &w->churn[i]) == 0;
    point[i] = (int64_t)((uint64_t)prev + (uint64_t)step);  // wraps, never UB
    prev = point[i];
  }
  for (int64_t k = 0; ok && w && k < w->ncalltab * 20; k++) ok = get(t, &p, e, &w->calltab[k]) == 0;
  if (ok && p == e) return 0;
  // Damaged data: point 0 maps to row -1, which the check refuses, so nothing replays it.
  if (numdata > 0) {
    use[0] = (struct memAlloc){0, 0, 0};
    point[0] = -1;
  }
  return -EINVAL;
}

int memstub_stub_decode(const char *data, int64_t len, int64_t numdata, struct memAlloc *use,
                        int64_t *point) {
  return decode(TAG, data, len, numdata, use, point, NULL, NULL, NULL);
}

int memstub_stub_decode_resident(const char *data, int64_t len, int64_t numdata,
                                 struct memAlloc *use, int64_t *point, int64_t *mapped,
                                 int64_t *rss) {
  return decode(TAG_RESIDENT, data, len, numdata, use, point, mapped, rss, NULL);
}

int memstub_stub_decode_work(const char *data, int64_t len, int64_t numdata, struct memAlloc *use,
                             int64_t *point, int64_t *mapped, int64_t *rss, int64_t *cpu,
                             int64_t *calls, int64_t *churn, int64_t ncalltab, int64_t *calltab) {
  work_out w = {cpu, calls, churn, calltab, ncalltab < 0 ? 0 : ncalltab};
  return decode(mapped ? TAG_WORK_RESIDENT : TAG_WORK, data, len, numdata, use, point, mapped,
                rss, &w);
}
