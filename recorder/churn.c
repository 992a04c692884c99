/* recorder/churn.c: allocator churn (Kudrjavets et al. 2022), per thread and
 * per probe region, and its metadata lines (docs/recording.md). */
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *const ms__rec_fn_name[NFN] = {MS__REC_FN_NAMES};
const int ms__rec_fn_weight[NFN] = {MS__REC_FN_WEIGHTS};
uint32_t ms__rec_log2tab[4096];

void ms__rec_churn_init(void) {
  for (int i = 2; i < 4096; i++)
    ms__rec_log2tab[i] = (uint32_t)(__builtin_log2((double)i) * (1 << MS__REC_LOG2_FRAC) + 0.5);
}

void ms__rec_churn_diff(churn *d, const churn *now, const churn *before) {
  for (int f = 0; f < NFN; f++) {
    d->calls[f] = now->calls[f] - before->calls[f];
    d->bytes[f] = now->bytes[f] - before->bytes[f];
    d->wlog[f] = now->wlog[f] - before->wlog[f];
  }
}

void ms__rec_churn_add(churn *sum, const churn *c) {
  for (int f = 0; f < NFN; f++) {
    sum->calls[f] += c->calls[f];
    sum->bytes[f] += c->bytes[f];
    sum->wlog[f] += c->wlog[f];
  }
}

// The thread's statistics of region name, new when not there; NULL when full.
static rstat *stat_of(tstate *ts, const char *name) {
  const char *n = name ? name : "region";
  rstat *st = NULL;
  for (int i = 0; i < ts->nstats; i++)
    if (strncmp(ts->stats[i].name, n, NAME_MAX_LEN - 1) == 0) {
      st = &ts->stats[i];
      break;
    }
  if (!st) {
    if (ts->nstats == MAX_STATS) return NULL;
    st = &ts->stats[ts->nstats++];
    size_t l = strlen(n);
    if (l > NAME_MAX_LEN - 1) l = NAME_MAX_LEN - 1;
    memcpy(st->name, n, l);
    st->name[l] = '\0';
  }
  return st;
}

void ms__rec_stat_add(tstate *ts, const char *name, const churn *c) {
  rstat *st = stat_of(ts, name);
  if (!st) return;
  st->occurrences++;
  ms__rec_churn_add(&st->c, c);
}

void ms__rec_stat_nested(tstate *ts, const char *name) {
  rstat *st = stat_of(ts, name);
  if (st) st->nested++;
}

// The sum of log2(bytes) of c's calls of f.
static double wlog_of(const churn *c, int f) {
  return (double)c->wlog[f] / (double)(1 << MS__REC_LOG2_FRAC);
}

void ms__rec_churn_meta(const char *prefix, const churn *c, uint64_t occurrences) {
  uint64_t calls = 0, bytes = 0;
  double w = 0;
  for (int f = 0; f < NFN; f++) {
    calls += c->calls[f];
    bytes += c->bytes[f];
    w += ms__rec_fn_weight[f] * wlog_of(c, f);
  }
  char key[96], wb[40];
  ms__rec_fmt_x10(wb, sizeof wb, w);
  if (occurrences)
    ms__rec_meta(prefix, MS__REC_CHURN_OCC_FMT, (unsigned long long)occurrences,
                 (unsigned long long)calls, (unsigned long long)bytes, wb);
  else
    ms__rec_meta(prefix, MS__REC_CHURN_FMT, (unsigned long long)calls, (unsigned long long)bytes,
                 wb);
  for (int f = 0; f < NFN; f++) {
    if (!c->calls[f]) continue;
    snprintf(key, sizeof key, "%s.%s", prefix, ms__rec_fn_name[f]);
    ms__rec_fmt_x10(wb, sizeof wb, ms__rec_fn_weight[f] * wlog_of(c, f));
    ms__rec_meta(key, MS__REC_CHURN_FMT, (unsigned long long)c->calls[f],
                 (unsigned long long)c->bytes[f], wb);
  }
}
