/* recorder/bridge.h: the link between the probe API (recorder/probe.c,
 * linked into the program under study) and the LD_PRELOAD recorder
 * (recorder/regions.c). Not installed.
 *
 * The recorder exports one function under MS__RECORDER_PROBE_SYMBOL; the
 * probe finds it with dlsym(RTLD_DEFAULT, ...) on its first call. When it is
 * there and answers MS__PROBE_HELLO with 1, every probe call is forwarded to
 * it with the stack pointer of the probe's caller; otherwise the probe takes
 * its measuring points itself. */
#ifndef MEMSTUB_RECORDER_BRIDGE_H
#define MEMSTUB_RECORDER_BRIDGE_H

#include <stdint.h>

#define MS__RECORDER_PROBE_SYMBOL "memstub_recorder_probe_v1"

enum {
  MS__PROBE_HELLO = 0,  // returns 1 when this process is being recorded, else 0
  MS__PROBE_BEGIN = 1,  // returns the nesting depth after the call (1 = outermost)
  MS__PROBE_POINT = 2,  // returns the current depth
  MS__PROBE_END = 3,    // returns the depth left, or -EINVAL when no region is open
};

typedef int (*ms__recorder_probe_fn)(int op, const char *name, uintptr_t caller_sp);

/* The stack pointer of the calling function's caller, just before the call:
 * the canonical frame address of the function this is used in. Needs a frame
 * pointer there, which __builtin_frame_address(0) makes the compiler keep.
 * Elsewhere than x86-64 it is this function's frame, a few bytes deeper. */
#if defined(__x86_64__)
#define MS__CALLER_SP() ((uintptr_t)__builtin_frame_address(0) + 2 * sizeof(void *))
#else
#define MS__CALLER_SP() ((uintptr_t)__builtin_frame_address(0))
#endif

int memstub_recorder_probe_v1(int op, const char *name, uintptr_t caller_sp);

#endif
