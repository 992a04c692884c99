// A stub's data file (docs/formats.md, "Data files"): every array of a stub
// descriptor in one binary file, written by memstub gen --data, mapped and
// validated at start by memstub replay --data and by programs built with
// memstub build --data. Never parsed as text: the arrays are used in place.
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "memstub/work.h"
#include "prim.h"

#define DF_MAGIC "MSTUBDAT"
#define DF_VERSION 1
#define DF_ORDER UINT64_C(0x0102030405060708)  // reads differently on the other byte order
#define DF_ALIGN 64                            // every array starts at a multiple of this
#define DF_NSTRINGS 4                          // name, source, transforms, calibration

/* What an array's count is: numdata, ncalltab * MEMSTUB_WORK_CALLS, ncallseq,
 * MEMSTUB_STUB_MODEL_N, or any (callbig's: the blocks of big the calls make). */
enum { COUNT_POINTS, COUNT_CALLTAB, COUNT_CALLSEQ, COUNT_MODEL, COUNT_ANY };
#define NO_FIELD SIZE_MAX  // an array of the file, not of the descriptor
#define ALWAYS INT32_MAX  // required in every layout from its first

/* The arrays a data file can carry: one entry each. The writer stores every
 * entry whose descriptor pointer is set (and the layout has it); the reader
 * points the descriptor's field into the mapping. A new array of the
 * descriptor (a new layout) is one more line here. */
static const struct df_kind {
  const char *name;  // in the file's table, at most 15 characters
  uint32_t elem;     // bytes per point
  size_t field;      // offsetof the descriptor's pointer to it
  int32_t min_abi;   // the first layout that has it
  int32_t required;  // a file of layout min_abi up to this one must carry it (0: none)
  int count;         // elements: COUNT_POINTS, _CALLTAB, _CALLSEQ or _MODEL
} kinds[] = {
    {"use", sizeof(struct memAlloc), offsetof(struct memstub_stub, use), MEMSTUB_STUB_ABI, ALWAYS, 0},
    {"point", sizeof(int64_t), offsetof(struct memstub_stub, point), MEMSTUB_STUB_ABI, ALWAYS, 0},
    {"mapped", sizeof(int64_t), offsetof(struct memstub_stub, mapped), MEMSTUB_STUB_ABI_RESIDENT, 0, 0},
    {"rss", sizeof(int64_t), offsetof(struct memstub_stub, rss), MEMSTUB_STUB_ABI_RESIDENT, 0, 0},
    {"cpu", sizeof(int64_t), offsetof(struct memstub_stub, cpu), MEMSTUB_STUB_ABI_WORK, 0, 0},
    {"calls", sizeof(int64_t), offsetof(struct memstub_stub, calls), MEMSTUB_STUB_ABI_WORK, 0, 0},
    {"churn", sizeof(int64_t), offsetof(struct memstub_stub, churn), MEMSTUB_STUB_ABI_WORK, 0, 0},
    {"calltab", sizeof(int64_t), offsetof(struct memstub_stub, calltab), MEMSTUB_STUB_ABI_WORK, 0, COUNT_CALLTAB},
    // Layout 5 may come without calls (memstub/stub.h, MEMSTUB_STUB_ABI_MODEL).
    {"callseq", 1, offsetof(struct memstub_stub, callseq), MEMSTUB_STUB_ABI_CALLS, MEMSTUB_STUB_ABI_CALLS, COUNT_CALLSEQ},
    {"callend", sizeof(int64_t), offsetof(struct memstub_stub, callend), MEMSTUB_STUB_ABI_CALLS, MEMSTUB_STUB_ABI_CALLS, 0},
    {"model", sizeof(double), offsetof(struct memstub_stub, work_model), MEMSTUB_STUB_ABI_MODEL, ALWAYS, COUNT_MODEL},
    /* The blocks of MS__RT_CALL_BIG_MIN bytes or more the calls make, in
     * order: (size, the point whose calls free it or -1), int64 each. The
     * walk of the calls made when the file is written (ms__rt_calls_big), so
     * that the replay need not walk them first (ms__rt_calls_known). A file
     * without it (an older memstub's) is walked as before. */
    {"callbig", 2 * sizeof(int64_t), NO_FIELD, MEMSTUB_STUB_ABI_CALLS, 0, COUNT_ANY},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

// The file's first 256 bytes. All integers in the writer's byte order (order says which).
typedef struct df_head {
  char magic[8];         // DF_MAGIC, no NUL
  uint32_t version;      // DF_VERSION
  uint32_t head_size;    // sizeof(df_head)
  uint64_t order;        // DF_ORDER
  uint64_t file_size;    // the whole file, bytes
  uint32_t narrays;      // entries in the table
  uint32_t nstrings;     // DF_NSTRINGS
  int32_t abi, timing;   // the descriptor's
  int64_t numdata, norig, time0_ns, stack_base, heap_base, peak_stack, max_depth, peak_heap,
      duration_ns, inserted, rss_base, mapped_base;
  uint64_t strings_off, strings_len;  // NUL-terminated strings, padded with NULs to 8 bytes
  uint64_t table_off;                 // narrays df_array entries
  uint64_t head_sum;                  // sum of this head (head_sum 0), the strings, the table
  int64_t ncalltab;                   // layout 3: rows of calltab (memstub/work.h); else 0
  int64_t ncallseq, ncallblocks, ncallcount;  // layout 4: the calls (memstub/stub.h); else 0
  int64_t block_frees;  // layout 3: the block's resizes that stand for frees (0 in older files)
  uint8_t reserved[256 - 216];  // zero
} df_head;

typedef struct df_array {
  char name[16];   // NUL-terminated
  uint32_t elem;   // bytes per element
  uint32_t zero;
  uint64_t count;  // elements (numdata)
  uint64_t off;    // from the file's start, a multiple of DF_ALIGN
  uint64_t sum;    // sum of its count * elem bytes
} df_array;

_Static_assert(sizeof(df_head) == 256, "the data file's head is 256 bytes");
_Static_assert(sizeof(df_array) == 48, "a table entry is 48 bytes");

/* A 64-bit sum of n bytes (a multiple of 8, 8-aligned): four lanes of
 * xor-multiply, so that any changed word changes it; not a defence against
 * forgery, a check against damage and truncation. Taken in chunks when the
 * bytes are read a window at a time (call_source.c). */
#define SUM_P UINT64_C(0x9e3779b97f4a7c15)
void ms__rt_sum64_start(ms__rt_sum64_state *st, uint64_t n, uint64_t seed) {
  st->a = seed ^ n, st->b = st->a + 1, st->c = st->a + 2, st->d = st->a + 3;
}

void ms__rt_sum64_more(ms__rt_sum64_state *st, const void *p, uint64_t n) {
  const uint64_t *w = p;
  uint64_t k = n / 8, i = 0, a = st->a, b = st->b, c = st->c, d = st->d;
  for (; i + 4 <= k; i += 4) {
    a = (a ^ w[i]) * SUM_P;
    b = (b ^ w[i + 1]) * SUM_P;
    c = (c ^ w[i + 2]) * SUM_P;
    d = (d ^ w[i + 3]) * SUM_P;
  }
  // The last k % 4 words (i is k - k % 4 here), at most three: the last chunk only.
  for (uint64_t r = k % 4; r > 0; r--) a = (a ^ w[k - r]) * SUM_P;
  st->a = a, st->b = b, st->c = c, st->d = d;
}

uint64_t ms__rt_sum64_end(const ms__rt_sum64_state *st) {
  uint64_t b = st->b, c = st->c, d = st->d;
  uint64_t h = st->a ^ (b << 17 | b >> 47) ^ (c << 31 | c >> 33) ^ (d << 47 | d >> 17);
  h ^= h >> 29;
  h *= UINT64_C(0xbf58476d1ce4e5b9);
  return h ^ (h >> 32);
}

uint64_t ms__rt_sum64(const void *p, uint64_t n, uint64_t seed) {
  ms__rt_sum64_state st;
  ms__rt_sum64_start(&st, n, seed);
  ms__rt_sum64_more(&st, p, n);
  return ms__rt_sum64_end(&st);
}

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

static const void *field_ptr(const struct memstub_stub *s, const struct df_kind *k) {
  if (k->field == NO_FIELD) return NULL;
  const void *p;
  memcpy(&p, (const char *)s + k->field, sizeof p);
  return p;
}

static void set_field(struct memstub_stub *s, const struct df_kind *k, const void *p) {
  memcpy((char *)s + k->field, &p, sizeof p);
}

// The elements of array k for s.
static uint64_t count_of(const struct memstub_stub *s, const struct df_kind *k) {
  return k->count == COUNT_CALLTAB   ? (uint64_t)s->ncalltab * MEMSTUB_WORK_CALLS
         : k->count == COUNT_CALLSEQ ? (uint64_t)s->ncallseq
         : k->count == COUNT_MODEL   ? (uint64_t)MEMSTUB_STUB_MODEL_N
                                     : (uint64_t)s->numdata;
}

// Whether the file of a stub of layout abi carries descriptor array k.
static int carried(const struct memstub_stub *s, const struct df_kind *k) {
  return s->abi >= k->min_abi && field_ptr(s, k) != NULL;
}

/* ---- writing --------------------------------------------------------------- */

/* s's calls in memory into *out: s->callseq itself, or, when s reads them
 * from a data file (memstub_stub_data_open), a copy, also into *copy (the
 * caller's to free). 0, or a negative errno with err set. */
static int calls_in_memory(const struct memstub_stub *s, const uint8_t **out, uint8_t **copy,
                           memstub_error *err) {
  *out = NULL, *copy = NULL;
  ms__rt_callrd r;
  int rc = ms__rt_callrd_open(&r, s);
  if (rc < 0) return memstub_error_set(err, rc, "calls: %s", strerror(-rc));
  uint8_t *b = r.src ? malloc((size_t)s->ncallseq + 1) : NULL;
  if (r.src && !b) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  for (int64_t at = 0, avail; rc == 0 && b && at < s->ncallseq; at += avail) {
    const uint8_t *p = ms__rt_callrd_get(&r, at, &avail);
    if (!p) {
      rc = memstub_error_set(err, r.err, "%s", r.why);
      break;
    }
    if (avail > s->ncallseq - at) avail = s->ncallseq - at;
    memcpy(b + at, p, (size_t)avail);
  }
  ms__rt_callrd_close(&r);
  if (rc < 0) {
    free(b);
    return rc;
  }
  *out = b ? b : s->callseq;
  *copy = b;
  return 0;
}

static int put(ms__afile *af, const void *p, uint64_t n) {
  return n == 0 || fwrite(p, 1, (size_t)n, af->f) == (size_t)n ? 0 : -1;
}

static int put_zeros(ms__afile *af, uint64_t n) {
  static const char z[DF_ALIGN];
  while (n > 0) {
    uint64_t k = n < sizeof z ? n : sizeof z;
    if (put(af, z, k) < 0) return -1;
    n -= k;
  }
  return 0;
}

int memstub_stub_data_write(const struct memstub_stub *s, const char *path, memstub_error *err) {
  if (!s || s->numdata < 1)
    return memstub_error_set(err, -EINVAL, "%s: no points to write", path);
  if (s->abi < MEMSTUB_STUB_ABI || s->abi > MEMSTUB_STUB_ABI_MODEL)
    return memstub_error_set(err, -EINVAL, "%s: a stub of layout %d cannot be written", path,
                             (int)s->abi);
  const char *str[DF_NSTRINGS] = {s->name, s->source, s->transforms, s->calibration};
  df_head h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, DF_MAGIC, 8);
  h.version = DF_VERSION;
  h.head_size = sizeof h;
  h.order = DF_ORDER;
  h.nstrings = DF_NSTRINGS;
  h.abi = s->abi;
  h.timing = s->timing;
  h.numdata = s->numdata, h.norig = s->norig, h.time0_ns = s->time0_ns;
  h.stack_base = s->stack_base, h.heap_base = s->heap_base, h.peak_stack = s->peak_stack;
  h.max_depth = s->max_depth, h.peak_heap = s->peak_heap, h.duration_ns = s->duration_ns;
  h.inserted = s->inserted;
  if (s->abi >= MEMSTUB_STUB_ABI_RESIDENT) h.rss_base = s->rss_base, h.mapped_base = s->mapped_base;
  if (s->abi >= MEMSTUB_STUB_ABI_WORK) h.ncalltab = s->ncalltab, h.block_frees = s->block_frees;
  if (s->abi >= MEMSTUB_STUB_ABI_CALLS)
    h.ncallseq = s->ncallseq, h.ncallblocks = s->ncallblocks, h.ncallcount = s->ncallcount;
  uint64_t slen = 0;
  for (int i = 0; i < DF_NSTRINGS; i++) slen += strlen(str[i] ? str[i] : "") + 1;
  h.strings_off = sizeof h;
  h.strings_len = round_up(slen, 8);
  h.table_off = h.strings_off + h.strings_len;
  df_array tab[NKINDS];
  const void *data[NKINDS];  // each entry's bytes
  memset(tab, 0, sizeof tab);
  uint64_t off = 0;
  // The calls walked (and checked) here, their blocks of big into callbig.
  int64_t *big = NULL, nbig = 0;
  uint8_t *seq = NULL;  // the calls copied from a data file, NULL: in memory
  const uint8_t *calls = NULL;
  int rc = ms__rt_stub_calls(s) ? ms__rt_calls_big(s, &big, &nbig, err) : 0;
  if (rc == 0 && ms__rt_stub_calls(s)) rc = calls_in_memory(s, &calls, &seq, err);
  if (rc < 0) {
    free(big), free(seq);
    return memstub_error_prefix(err, path), rc;
  }
  for (size_t k = 0; k < NKINDS; k++) {
    int bigs = kinds[k].field == NO_FIELD;  // callbig, the only array not of the descriptor
    if (bigs ? !big : !carried(s, &kinds[k])) continue;
    data[h.narrays] = bigs ? (const void *)big
                      : kinds[k].count == COUNT_CALLSEQ ? (const void *)calls
                                                        : field_ptr(s, &kinds[k]);
    df_array *a = &tab[h.narrays++];
    snprintf(a->name, sizeof a->name, "%s", kinds[k].name);
    a->elem = kinds[k].elem;
    a->count = bigs ? (uint64_t)nbig : count_of(s, &kinds[k]);
    if (a->count > UINT64_MAX / 2 / a->elem) {
      free(big), free(seq);
      return memstub_error_set(err, -EINVAL, "%s: %lld points do not fit in a file", path,
                               (long long)s->numdata);
    }
    a->sum = ms__rt_sum64(data[h.narrays - 1], a->count * a->elem, 0);
  }
  off = round_up(h.table_off + h.narrays * sizeof(df_array), DF_ALIGN);
  for (uint32_t i = 0; i < h.narrays; i++) {
    tab[i].off = off;
    off = round_up(off + tab[i].count * tab[i].elem, DF_ALIGN);
  }
  h.file_size = off;
  // The head's sum covers the head, the strings and the table, as written.
  char *meta = calloc(1, (size_t)(h.strings_len + h.narrays * sizeof(df_array)));
  if (!meta) {
    free(big), free(seq);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  char *q = meta;
  for (int i = 0; i < DF_NSTRINGS; i++) {
    size_t n = strlen(str[i] ? str[i] : "") + 1;
    memcpy(q, str[i] ? str[i] : "", n);
    q += n;
  }
  memcpy(meta + h.strings_len, tab, h.narrays * sizeof(df_array));
  uint64_t meta_sum = ms__rt_sum64(meta, h.strings_len + h.narrays * sizeof(df_array), 0);
  h.head_sum = ms__rt_sum64(&h, sizeof h, meta_sum);

  ms__afile af;
  rc = ms__afile_open(&af, path, err);
  if (rc < 0) {
    free(meta);
    free(big), free(seq);
    return rc;
  }
  uint64_t at = 0;
  int bad = put(&af, &h, sizeof h) < 0 ||
            put(&af, meta, h.strings_len + h.narrays * sizeof(df_array)) < 0;
  at = h.table_off + h.narrays * sizeof(df_array);
  free(meta);
  for (uint32_t i = 0; !bad && i < h.narrays; i++) {
    bad = put_zeros(&af, tab[i].off - at) < 0 || put(&af, data[i], tab[i].count * tab[i].elem) < 0;
    at = tab[i].off + tab[i].count * tab[i].elem;
  }
  free(big), free(seq);
  if (!bad) bad = put_zeros(&af, h.file_size - at) < 0;
  if (bad) {
    int e = errno ? errno : EIO;
    ms__afile_abort(&af);
    return memstub_error_set(err, -e, "%s: write failed: %s", path, strerror(e));
  }
  return ms__afile_commit(&af, err);
}

/* ---- reading --------------------------------------------------------------- */

// "PATH: FIELD: what": -EINVAL, the data file refused.
#define REFUSE(...) memstub_error_set(err, -EINVAL, __VA_ARGS__)

/* Check the mapped file's head, strings and table, and fill s from them.
 * 0 or -EINVAL naming the field. */
static int read_head(const char *path, const char *m, uint64_t size, struct memstub_stub *s,
                     const df_array **table, memstub_error *err) {
  df_head h;
  if (size < 8 || memcmp(m, DF_MAGIC, 8) != 0)
    return REFUSE("%s: magic: not a memstub data file (made by memstub gen --data)", path);
  if (size < sizeof h)
    return REFUSE("%s: head: truncated: the file has %llu bytes, its head alone %zu", path,
                  (unsigned long long)size, sizeof h);
  memcpy(&h, m, sizeof h);
  if (h.order != DF_ORDER)
    return REFUSE("%s: order: written on a host of another byte order", path);
  if (h.version != DF_VERSION)
    return REFUSE("%s: version: %u, this memstub reads version %d (regenerate it)", path,
                  h.version, DF_VERSION);
  if (h.head_size != sizeof h)
    return REFUSE("%s: head_size: %u, expected %zu", path, h.head_size, sizeof h);
  if (h.file_size != size)
    return REFUSE("%s: file_size: the file has %llu bytes, its head says %llu (%s)", path,
                  (unsigned long long)size, (unsigned long long)h.file_size,
                  size < h.file_size ? "truncated" : "bytes beyond its end");
  if (h.nstrings != DF_NSTRINGS)
    return REFUSE("%s: nstrings: %u, expected %d", path, h.nstrings, DF_NSTRINGS);
  if (h.narrays > NKINDS + 16)
    return REFUSE("%s: narrays: %u arrays is more than any layout has", path, h.narrays);
  if (h.strings_off != sizeof h || h.strings_len % 8 || h.strings_len > size ||
      h.table_off != h.strings_off + h.strings_len ||
      h.table_off + (uint64_t)h.narrays * sizeof(df_array) > size)
    return REFUSE("%s: strings_off: the strings and the table are not within the file", path);
  uint64_t want = h.head_sum;
  h.head_sum = 0;
  uint64_t meta = h.strings_len + (uint64_t)h.narrays * sizeof(df_array);
  if (ms__rt_sum64(&h, sizeof h, ms__rt_sum64(m + h.strings_off, meta, 0)) != want)
    return REFUSE("%s: head_sum: the head, strings or table are damaged (checksum mismatch)",
                  path);
  const char *str[DF_NSTRINGS];
  const char *p = m + h.strings_off, *e = p + h.strings_len;
  for (int i = 0; i < DF_NSTRINGS; i++) {
    const char *nul = memchr(p, '\0', (size_t)(e - p));
    if (!nul) return REFUSE("%s: strings: string %d has no end", path, i);
    str[i] = p;
    p = nul + 1;
  }
  memset(s, 0, sizeof *s);
  s->abi = h.abi;
  s->timing = h.timing;
  s->name = str[0], s->source = str[1], s->transforms = str[2], s->calibration = str[3];
  s->numdata = h.numdata, s->norig = h.norig, s->time0_ns = h.time0_ns;
  s->stack_base = h.stack_base, s->heap_base = h.heap_base, s->peak_stack = h.peak_stack;
  s->max_depth = h.max_depth, s->peak_heap = h.peak_heap, s->duration_ns = h.duration_ns;
  s->inserted = h.inserted;
  if (h.abi < MEMSTUB_STUB_ABI || h.abi > MEMSTUB_STUB_ABI_MODEL)
    return REFUSE("%s: abi: the stub has data layout %d, this runtime reads %d to %d", path,
                  (int)h.abi, MEMSTUB_STUB_ABI, MEMSTUB_STUB_ABI_MODEL);
  if (h.abi >= MEMSTUB_STUB_ABI_RESIDENT) s->rss_base = h.rss_base, s->mapped_base = h.mapped_base;
  if (h.abi >= MEMSTUB_STUB_ABI_WORK) {
    if (h.ncalltab < 0 || h.ncalltab > (int64_t)(UINT32_MAX / MEMSTUB_WORK_CALLS))
      return REFUSE("%s: ncalltab: %lld rows", path, (long long)h.ncalltab);
    if (h.block_frees < 0)
      return REFUSE("%s: block_frees: %lld resizes", path, (long long)h.block_frees);
    s->ncalltab = h.ncalltab, s->block_frees = h.block_frees;
  }
  if (h.abi >= MEMSTUB_STUB_ABI_CALLS) {
    if (h.ncallseq < 0 || h.ncallseq % 8 || h.ncallblocks < 0 || h.ncallcount < 0 ||
        h.ncallcount > h.ncallseq || h.ncallblocks > h.ncallcount)
      return REFUSE("%s: ncallseq: %lld bytes for %lld calls of %lld blocks", path,
                    (long long)h.ncallseq, (long long)h.ncallcount, (long long)h.ncallblocks);
    s->ncallseq = h.ncallseq, s->ncallblocks = h.ncallblocks, s->ncallcount = h.ncallcount;
  }
  if (h.numdata < 1) return REFUSE("%s: numdata: %lld points", path, (long long)h.numdata);
  *table = (const df_array *)(const void *)(m + h.table_off);
  return (int)h.narrays;
}

static int calls_open(int fd, const char *path, uint64_t off, uint64_t len, ms__rt_callsrc **src,
                      uint64_t *sum, memstub_error *err);

// The file being opened: its calls, left out of the copy, are read from it (call_source.c).
typedef struct df_file {
  const char *path;
  int fd;
  uint64_t hole_off, hole_len;  // the calls' bytes, not copied (0, 0: none)
  ms__rt_callsrc *calls;        // made by read_arrays, NULL for calls copied or none
  const int64_t *big;           // callbig's pairs in the copy, NULL none
  uint64_t nbig;
} df_file;

/* Check the table's entries (n of them) and point s's arrays into the
 * mapping m; verify each array's sum. 0 or -EINVAL naming the array. */
static int read_arrays(df_file *f, const char *m, uint64_t size, const df_array *tab,
                       uint32_t n, struct memstub_stub *s, memstub_error *err) {
  const char *path = f->path;
  for (uint32_t i = 0; i < n; i++) {
    df_array a;
    memcpy(&a, &tab[i], sizeof a);
    if (!memchr(a.name, '\0', sizeof a.name))
      return REFUSE("%s: table entry %u: the name has no end", path, i);
    size_t k = 0;
    while (k < NKINDS && strcmp(kinds[k].name, a.name) != 0) k++;
    if (k == NKINDS)
      return REFUSE("%s: array %s: unknown to this memstub (written by a newer one?)", path,
                    a.name);
    if (s->abi < kinds[k].min_abi)
      return REFUSE("%s: array %s: not part of data layout %d", path, a.name, (int)s->abi);
    int bigs = kinds[k].field == NO_FIELD;
    if (bigs ? f->big != NULL : field_ptr(s, &kinds[k]) != NULL)
      return REFUSE("%s: array %s: given twice", path, a.name);
    if (a.elem != kinds[k].elem)
      return REFUSE("%s: array %s: %u bytes an element, expected %u", path, a.name, a.elem,
                    kinds[k].elem);
    uint64_t want = count_of(s, &kinds[k]);
    static const char *const what[] = {"numdata", "ncalltab * 20", "ncallseq", "the model's"};
    if (kinds[k].count != COUNT_ANY && a.count != want)
      return REFUSE("%s: array %s: %llu elements, %s is %llu", path, a.name,
                    (unsigned long long)a.count, what[kinds[k].count],
                    (unsigned long long)want);
    if (a.count > size / a.elem)  // also keeps count * elem within 64 bits
      return REFUSE("%s: array %s: %llu elements of %u bytes do not fit in the file's %llu", path,
                    a.name, (unsigned long long)a.count, a.elem, (unsigned long long)size);
    uint64_t bytes = a.count * a.elem;
    if (a.off % DF_ALIGN || a.off < sizeof(df_head) || a.off > size || bytes > size - a.off)
      return REFUSE("%s: array %s: %llu bytes at offset %llu lie beyond the file's %llu", path,
                    a.name, (unsigned long long)bytes, (unsigned long long)a.off,
                    (unsigned long long)size);
    const void *at = m + a.off;
    uint64_t sum = 0;
    int rc = 0;
    if (kinds[k].count == COUNT_CALLSEQ && a.off == f->hole_off && bytes == f->hole_len && bytes) {
      if ((rc = calls_open(f->fd, path, a.off, bytes, &f->calls, &sum, err)) < 0) return rc;
      at = ms__rt_callsrc_key(f->calls);  // read from the file: call_source.c
    } else {
      sum = ms__rt_sum64(at, bytes, 0);
    }
    if (sum != a.sum) return REFUSE("%s: array %s: damaged (checksum mismatch)", path, a.name);
    if (bigs)
      f->big = at, f->nbig = a.count;
    else
      set_field(s, &kinds[k], at);
  }
  if (f->big && !ms__rt_stub_calls(s))
    return REFUSE("%s: array callbig: the blocks of calls the file does not carry", path);
  for (uint64_t e = 0; f->big && e < f->nbig; e++)
    if (f->big[2 * e] < MS__RT_CALL_BIG_MIN || f->big[2 * e + 1] < -1 ||
        f->big[2 * e + 1] >= s->numdata)
      return REFUSE("%s: array callbig: entry %llu: a block of %lld bytes freed at point %lld "
                    "(blocks of %lld bytes or more, points -1 to %lld)", path,
                    (unsigned long long)e, (long long)f->big[2 * e], (long long)f->big[2 * e + 1],
                    (long long)MS__RT_CALL_BIG_MIN, (long long)s->numdata - 1);
  for (size_t k = 0; k < NKINDS; k++)
    if (s->abi >= kinds[k].min_abi && s->abi <= kinds[k].required && !field_ptr(s, &kinds[k]))
      return REFUSE("%s: array %s: missing", path, kinds[k].name);
  if (s->abi >= MEMSTUB_STUB_ABI_MODEL && (!s->callseq) != (!s->callend))
    return REFUSE("%s: array %s: missing (layout %d carries callseq and callend together)", path,
                  s->callseq ? "callend" : "callseq", (int)s->abi);
  if (s->abi >= MEMSTUB_STUB_ABI_WORK && !((!s->cpu) == (!s->calls) && (!s->cpu) == (!s->churn) &&
                                            (!s->calls || !s->ncalltab || s->calltab)))
    return REFUSE("%s: arrays cpu, calls, churn, calltab: layout 3 carries them together", path);
  if (s->abi >= MEMSTUB_STUB_ABI_RESIDENT && (!s->mapped) != (!s->rss))
    return REFUSE("%s: array %s: missing (layout %d carries mapped and rss together)", path,
                  s->mapped ? "rss" : "mapped", (int)s->abi);
  return 0;
}

// What a file that is not a regular one is, for the refusal.
static const char *file_kind(mode_t m) {
  return S_ISDIR(m)    ? "a directory"
         : S_ISFIFO(m) ? "a FIFO"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISSOCK(m) ? "a socket"
                       : "not a file";
}

// n bytes at off of fd into p. 0, or a positive errno (EIO: the file ended first).
static int pread_all(int fd, void *p, uint64_t n, uint64_t off, uint64_t *got) {
  uint64_t at = 0;
  int e = 0;
  while (at < n) {
    ssize_t k = pread(fd, (char *)p + at, (size_t)(n - at), (off_t)(off + at));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      e = k < 0 ? errno : EIO;
      break;
    }
    at += (uint64_t)k;
  }
  if (got) *got = at;
  return e;
}

/* Where the file's calls (callseq) lie, from its head and table read before
 * the copy, so that the copy leaves them out: 1 with *off and *len, or 0 for
 * none or a head that does not say (the checks of the copy then refuse the
 * file, or find the calls copied). */
static int calls_place(int fd, uint64_t size, uint64_t *off, uint64_t *len) {
  df_head h;
  df_array tab[NKINDS + 4];
  if (size < sizeof h || pread_all(fd, &h, sizeof h, 0, NULL) != 0) return 0;
  if (memcmp(h.magic, DF_MAGIC, sizeof h.magic) != 0 || h.order != DF_ORDER ||
      h.abi < MEMSTUB_STUB_ABI_CALLS || h.narrays > NKINDS + 4 || h.table_off > size ||
      h.narrays * sizeof(df_array) > size - h.table_off ||
      pread_all(fd, tab, h.narrays * sizeof(df_array), h.table_off, NULL) != 0)
    return 0;
  for (uint32_t i = 0; i < h.narrays; i++)
    if (memchr(tab[i].name, '\0', sizeof tab[i].name) && strcmp(tab[i].name, "callseq") == 0 &&
        tab[i].elem == 1 && tab[i].off % DF_ALIGN == 0 && tab[i].off >= sizeof h &&
        tab[i].off <= size && tab[i].count > 0 && tab[i].count <= size - tab[i].off) {
      *off = tab[i].off, *len = tab[i].count;
      return 1;
    }
  return 0;
}

/* The file's size bytes but the hole's (hole_len bytes at hole_off, which
 * stay unwritten zeros, never faulted in), read from fd into memory of the
 * process's own (anonymous, read-only once filled): what is checked is what
 * is replayed, and a file truncated or overwritten in place later changes
 * nothing (a mapping of the file lost its pages to SIGBUS, or replayed the
 * new bytes; docs/runtime.md, "Data files"). 0 with *out, or a negative errno. */
static int copy_in(int fd, const char *path, uint64_t size, uint64_t hole_off, uint64_t hole_len,
                   void **out, memstub_error *err) {
  *out = NULL;
  uint64_t avail = ms__prim_mem_available();
  if (avail && size - hole_len > avail)
    return memstub_error_set(err, -ENOMEM,
                             "%s: %llu bytes, more than this host has available (MemAvailable "
                             "%llu) to read it into",
                             path, (unsigned long long)(size - hole_len),
                             (unsigned long long)avail);
  char *m = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int e = m == MAP_FAILED ? errno : 0;
  uint64_t part[2][2] = {{0, hole_off}, {hole_off + hole_len, size - hole_off - hole_len}};
  uint64_t at = 0, got = 0;
  for (int i = 0; i < 2 && !e; i++) {
    if (!part[i][1]) continue;
    // Huge pages for a large file: half the time of 4 KiB pages (0.16 s for 387 MB here).
    int huge = part[i][1] >= ((uint64_t)2 << 20);
    if (ms__prim_prefault(m + part[i][0], (size_t)part[i][1], huge) < 0)
      e = ENOMEM;
    else
      e = pread_all(fd, m + part[i][0], part[i][1], part[i][0], &got);
    at = part[i][0] + got;
  }
  if (!e && mprotect(m, (size_t)size, PROT_READ) != 0) e = errno;
  if (!e) {
    *out = m;
    return 0;
  }
  if (m != MAP_FAILED) munmap(m, (size_t)size);
  if (e == EIO && at < size)
    return memstub_error_set(err, -EIO, "%s: truncated while it was read (%llu of %llu bytes)",
                             path, (unsigned long long)at, (unsigned long long)size);
  return memstub_error_set(err, -e, "%s: cannot read %llu bytes into memory: %s", path,
                           (unsigned long long)size, strerror(e));
}

/* The calls (len bytes at off of fd), read once a window at a time: their
 * sum into *sum and each window's into the source made for the replay. 0,
 * or a negative errno with err set. */
static int calls_open(int fd, const char *path, uint64_t off, uint64_t len, ms__rt_callsrc **src,
                      uint64_t *sum, memstub_error *err) {
  int rc = ms__rt_callsrc_create(path, fd, (int64_t)off, (int64_t)len, src);
  char *buf = rc == 0 ? ms__rt_own_calloc(1, MS__RT_CALLS_WINDOW) : NULL;
  if (rc == 0 && !buf) rc = -ENOMEM;
  if (rc < 0) {
    ms__rt_callsrc_free(*src);
    *src = NULL;
    return memstub_error_set(err, rc, "%s: calls: %s", path, strerror(-rc));
  }
  ms__rt_sum64_state st;
  ms__rt_sum64_start(&st, len, 0);
  for (uint64_t at = 0; rc == 0 && at < len; at += MS__RT_CALLS_WINDOW) {
    uint64_t w = (uint64_t)MS__RT_CALLS_WINDOW, n = len - at < w ? len - at : w;
    uint64_t got = 0;
    int e = pread_all(fd, buf, n, off + at, &got);
    if (e == EIO)
      rc = memstub_error_set(err, -EIO, "%s: truncated while it was read (%llu of %llu bytes)",
                             path, (unsigned long long)(off + at + got),
                             (unsigned long long)(off + len));
    else if (e)
      rc = memstub_error_set(err, -e, "%s: calls: cannot read: %s", path, strerror(e));
    else {
      ms__rt_sum64_more(&st, buf, n);
      (void)ms__rt_callsrc_fill(*src, buf, (int64_t)n);  // in order, whole windows
    }
  }
  ms__rt_own_free(buf);
  *sum = ms__rt_sum64_end(&st);
  if (rc < 0) {
    ms__rt_callsrc_free(*src);
    *src = NULL;
  }
  return rc;
}

int memstub_stub_data_open(const char *path, memstub_stub_data **out, memstub_error *err) {
  *out = NULL;
  // Non-blocking: opening a FIFO waits for a writer otherwise (it is refused below).
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    return memstub_error_set(err, -e, "%s: cannot open: %s", path, strerror(e));
  }
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    rc = memstub_error_set(err, -e, "%s: cannot read: %s", path, strerror(e));
  } else if (!S_ISREG(st.st_mode)) {
    rc = REFUSE("%s: not a regular file (%s): a data file made by memstub gen --data is read "
                "whole before the replay",
                path, file_kind(st.st_mode));
  }
  // The runtime's own memory (own.c): a stub embedded with DATA reads its file
  // at its first call, on the caller's heap, which has only the component's calls.
  memstub_stub_data *d = rc == 0 ? ms__rt_own_calloc(1, sizeof *d) : NULL;
  if (rc == 0 && !d) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  uint64_t size = (uint64_t)st.st_size;
  if (rc == 0 && size == 0) rc = REFUSE("%s: magic: the file is empty", path);
  if (rc == 0 && size > SIZE_MAX / 2) rc = REFUSE("%s: the file is too large to read", path);
  // An exact stub's calls are left in the file: the replay reads them as it goes.
  uint64_t hole_off = 0, hole_len = 0;
  if (rc == 0 && !calls_place(fd, size, &hole_off, &hole_len)) hole_off = hole_len = 0;
  if (rc == 0 && (rc = copy_in(fd, path, size, hole_off, hole_len, &d->map, err)) == 0)
    d->map_len = (size_t)size;
  const df_array *tab = NULL;
  if (rc == 0) rc = read_head(path, d->map, size, &d->stub, &tab, err);
  df_file f = {path, fd, hole_off, hole_len, NULL, NULL, 0};
  if (rc >= 0) rc = read_arrays(&f, d->map, size, tab, (uint32_t)rc, &d->stub, err);
  // Its calls' blocks of big known: the replay checks each call as it makes it, no walk first.
  if (rc >= 0 && f.big && ms__rt_calls_known(&d->stub, f.big, (int64_t)f.nbig) < 0)
    rc = memstub_error_set(err, -ENOMEM, "out of memory");
  if (d) d->calls = f.calls;
  close(fd);
  return MS__HAND_OUT(rc, d, out, memstub_stub_data_free);
}

void memstub_stub_data_free(memstub_stub_data *d) {
  if (!d) return;
  if (d->map) munmap(d->map, d->map_len);
  ms__rt_callsrc_free(d->calls);
  ms__rt_own_free(d);
}

int memstub_stub_data_calls(const memstub_stub_data *d, int64_t at, int64_t n, void *buf,
                            memstub_error *err) {
  const struct memstub_stub *s = &d->stub;
  if (s->abi < MEMSTUB_STUB_ABI_CALLS || !s->callseq || at < 0 || n < 0 || at > s->ncallseq ||
      n > s->ncallseq - at)
    return memstub_error_set(err, -EINVAL, "calls: bytes %lld to %lld: beyond the stub's %lld",
                             (long long)at, (long long)(at + n), (long long)s->ncallseq);
  ms__rt_callrd r;
  int rc = ms__rt_callrd_open(&r, s);
  if (rc < 0) return memstub_error_set(err, rc, "calls: %s", strerror(-rc));
  for (int64_t done = 0; done < n;) {
    int64_t avail;
    const uint8_t *p = ms__rt_callrd_get(&r, at + done, &avail);
    if (!p) {
      rc = memstub_error_set(err, r.err, "%s", r.why);
      break;
    }
    int64_t k = avail < n - done ? avail : n - done;
    memcpy((char *)buf + done, p, (size_t)k);
    done += k;
  }
  ms__rt_callrd_close(&r);
  return rc;
}
