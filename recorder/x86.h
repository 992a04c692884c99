/* recorder/x86.h: x86-64 instruction lengths and relocation, for patching a
 * function's entry (recorder/function.c). Pure functions on bytes: no
 * state, no system calls; tests/test_x86.c tests them on their own. */
#ifndef MEMSTUB_RECORDER_X86_H
#define MEMSTUB_RECORDER_X86_H

#include <stdint.h>

enum {
  MS__X86_PLAIN = 0,   // moves as it is
  MS__X86_RIPREL = 1,  // a RIP-relative memory operand: disp32 at rel_at
  MS__X86_BRANCH = 2,  // call/jmp/jcc rel32 at rel_at
  MS__X86_SHORT = 3,   // a rel8 branch (jcc, jmp, loop, jrcxz)
  MS__X86_STOP = 4,    // ret, int3, hlt, ud2: the code does not go on
};

typedef struct ms__x86_insn {
  int len;     // bytes, 1..15
  int kind;    // MS__X86_*
  int rel_at;  // where the relative disp32 starts (RIPREL, BRANCH)
} ms__x86_insn;

/* The instruction at p into *in: 0, or -1 when it is not one this decoder
 * knows (then *in says nothing). Reads at most 15 bytes past p. */
int ms__rec_x86_decode(const uint8_t *p, ms__x86_insn *in);

/* Copy the whole instructions that cover the first `need` bytes at src to
 * dst, as code that will run at dst: relative operands re-aimed at their old
 * targets. The number of bytes copied (>= need), or -1 with *why saying what
 * could not be moved (then dst holds garbage). */
int ms__rec_x86_relocate(const uint8_t *src, uint8_t *dst, int need, const char **why);

#endif
