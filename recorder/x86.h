/* recorder/x86.h: x86-64 instruction lengths and relocation, for patching a
 * function's entry (recorder/function.c). Pure functions on bytes: no
 * state, no system calls; tests/test_x86.c tests them on their own. */
#ifndef MEMSTUB_RECORDER_X86_H
#define MEMSTUB_RECORDER_X86_H

#include <stddef.h>
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
  int ends;    // the code does not go on after it: STOP, and every jmp (rel or indirect)
} ms__x86_insn;

/* The instruction at p into *in: 0, or -1 when it is not one this decoder
 * knows (then *in says nothing). Reads at most 15 bytes past p. */
int ms__rec_x86_decode(const uint8_t *p, ms__x86_insn *in);

/* Copy the whole instructions that cover the first `need` bytes at src to
 * dst, as code that will run at dst: relative operands re-aimed at their old
 * targets. The number of bytes copied (>= need), or -1 with why[cap] saying
 * what could not be moved and where ("an instruction the patcher does not
 * know at +4: 62 f1 fe 48 6f 06"; then dst holds garbage). Refused: an
 * instruction it does not know, a short branch, a return (or int3, hlt,
 * ud2), a jump that ends the code before `need` bytes (what follows is not
 * the function's), a relative operand that cannot reach from dst. */
int ms__rec_x86_relocate(const uint8_t *src, uint8_t *dst, int need, char *why, size_t cap);

#endif
