/* memstub/memalloc.h: the data a stub replays, as generated headers hold it.
 *
 * The paper's simulation data file (Trapp, Meyer & Facchi 2011, Listing 1) is
 * an array memUse[NUMDATA] of struct memAlloc. memstub keeps that array and
 * adds a descriptor, struct memstub_stub, that points at it together with the
 * map back to the original trace and the figures the runtime needs to size
 * its thread. Generated headers repeat these definitions under the same
 * guards, so a header compiles on its own or next to this file. */
#ifndef MEMSTUB_MEMALLOC_H
#define MEMSTUB_MEMALLOC_H

#include <stdint.h>

#ifndef MEMSTUB_STRUCT_MEMALLOC
#define MEMSTUB_STRUCT_MEMALLOC
/* One replay point. Delay first, then the stack change, then the heap change. */
struct memAlloc {
  int64_t time;        /* ns since the previous point (paper: microseconds) */
  int64_t stackAlloc;  /* > 0 push a frame of this many bytes; < 0 pop exactly
                          one frame (minus its size); 0 stack unchanged */
  int64_t heapAlloc;   /* change of the heap block in bytes */
};
#endif

#ifndef MEMSTUB_STRUCT_STUB
#define MEMSTUB_STRUCT_STUB
#define MEMSTUB_STUB_ABI 1

/* What the timing of use[].time was compensated for (memstub gen --calibration). */
enum { MEMSTUB_COMP_NONE = 0, MEMSTUB_COMP_DEADLINE = 1, MEMSTUB_COMP_USLEEP = 2 };

struct memstub_stub {
  int32_t abi;                  /* MEMSTUB_STUB_ABI */
  int32_t timing;               /* MEMSTUB_COMP_* */
  const char *name;             /* gen --name, "" if none */
  int64_t numdata;              /* points in use[] */
  const struct memAlloc *use;   /* [numdata] */
  const int64_t *point;         /* [numdata] original trace row each point belongs to;
                                   non-decreasing; a row's last point completes it */
  int64_t norig;                /* rows in the original trace */
  int64_t time0_ns;             /* original time of row 0 */
  int64_t stack_base;           /* original stack total that replay zero stands for */
  int64_t heap_base;            /* original heap total that replay zero stands for */
  int64_t peak_stack;           /* peak sum of open frames' bytes */
  int64_t max_depth;            /* peak number of open frames */
  int64_t peak_heap;            /* peak heap block size */
  int64_t duration_ns;          /* sum of use[].time */
  int64_t inserted;             /* points added by stack normalisation */
  const char *source;           /* provenance, one line each */
  const char *transforms;
  const char *calibration;
};
#endif

#endif
