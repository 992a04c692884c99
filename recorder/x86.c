/* recorder/x86.c: the length of x86-64 instructions, and moving the first
 * few of a function elsewhere (recorder/function.c patches a jump over them).
 *
 * Covers the general-purpose, SSE and VEX encodings compilers put at the
 * start of functions: legacy prefixes, REX, the one-, two- and three-byte
 * opcode maps, ModRM/SIB/displacements, immediates. What it does not know
 * (EVEX, 3DNow!, far transfers, opcodes invalid in 64-bit mode) is refused,
 * never guessed. Relative operands (RIP-relative memory, call/jmp/jcc
 * rel32) are re-aimed at the new place; a short branch (rel8) or a return
 * among the moved bytes is refused: the function is too short to patch.
 * tests/test_x86_ref.c checks it against Zydis on the entry of every
 * function of libc and of gcc's cc1 (lengths, relative operands, jumps). */
#include "x86.h"

#include <stdio.h>
#include <string.h>

// Immediate size codes for the opcode tables.
enum { I0 = 0, I8 = 1, I16 = 2, IZ = 3 /* 32, or 16 with 0x66 */, IV = 4 /* IZ, or 64 with REX.W */ };

typedef struct op1 {
  unsigned char modrm : 1, imm : 3, bad : 1, stop : 1, rel8 : 1, rel32 : 1;
} op1;

// The one-byte map. Unlisted entries are zero: no ModRM, no immediate.
static op1 one_byte(uint8_t b) {
  op1 o = {0};
  if (b < 0x40) {
    switch (b & 7) {
      case 0: case 1: case 2: case 3: o.modrm = 1; break;
      case 4: o.imm = I8; break;
      case 5: o.imm = IZ; break;
      default: o.bad = 1;  // push/pop segment, daa..., prefixes handled before
    }
    return o;
  }
  if (b >= 0x50 && b <= 0x5f) return o;
  if (b >= 0x70 && b <= 0x7f) return (op1){.rel8 = 1, .imm = I8};
  if (b >= 0x84 && b <= 0x8f) return (op1){.modrm = 1};
  if (b >= 0x90 && b <= 0x99) return o;
  if (b >= 0xb0 && b <= 0xb7) return (op1){.imm = I8};
  if (b >= 0xb8 && b <= 0xbf) return (op1){.imm = IV};
  if (b >= 0xd0 && b <= 0xd3) return (op1){.modrm = 1};
  if (b >= 0xd8 && b <= 0xdf) return (op1){.modrm = 1};  // x87
  if ((b >= 0xa4 && b <= 0xa7) || (b >= 0xaa && b <= 0xaf)) return o;  // string operations
  switch (b) {
    case 0x63: return (op1){.modrm = 1};
    case 0x68: return (op1){.imm = IZ};
    case 0x69: return (op1){.modrm = 1, .imm = IZ};
    case 0x6a: return (op1){.imm = I8};
    case 0x6b: return (op1){.modrm = 1, .imm = I8};
    case 0x80: case 0x82: case 0x83: return (op1){.modrm = 1, .imm = I8};
    case 0x81: return (op1){.modrm = 1, .imm = IZ};
    case 0xa8: return (op1){.imm = I8};
    case 0xa9: return (op1){.imm = IZ};
    case 0xc0: case 0xc1: case 0xc6: return (op1){.modrm = 1, .imm = I8};
    case 0xc7: return (op1){.modrm = 1, .imm = IZ};  // but not xbegin (c7 f8 rel32): below
    case 0xc9: case 0xf5: case 0xf8: case 0xf9: case 0xfc: case 0xfd: return o;
    case 0xc2: case 0xc3: case 0xcc: case 0xf4: return (op1){.stop = 1};
    case 0xe8: case 0xe9: return (op1){.rel32 = 1};
    case 0xeb: case 0xe0: case 0xe1: case 0xe2: case 0xe3: return (op1){.rel8 = 1, .imm = I8};
    case 0xfe: case 0xff: return (op1){.modrm = 1};
    case 0xf6: case 0xf7: return (op1){.modrm = 1};  // + immediate when /0 or /1
    default: return (op1){.bad = 1};
  }
}

// The two-byte map (0F xx).
static op1 two_byte(uint8_t b) {
  if (b >= 0x80 && b <= 0x8f) return (op1){.rel32 = 1};  // jcc rel32
  if (b >= 0xc8 && b <= 0xcf) return (op1){0};          // bswap
  if (b >= 0x70 && b <= 0x73) return (op1){.modrm = 1, .imm = I8};
  switch (b) {
    case 0x05: case 0x31: case 0xa2: return (op1){0};  // syscall, rdtsc, cpuid
    case 0x0b: return (op1){.stop = 1};                  // ud2
    case 0xa4: case 0xac: case 0xba: case 0xc2: case 0xc4: case 0xc5: case 0xc6:
      return (op1){.modrm = 1, .imm = I8};
    case 0x00: case 0x01: case 0x04: case 0x06: case 0x07: case 0x08: case 0x09:
    case 0x0e: case 0x0f: case 0x24: case 0x26: case 0x30: case 0x32: case 0x33:
    case 0x34: case 0x35: case 0x36: case 0x37: case 0x77: case 0xa0: case 0xa1:
    case 0xa8: case 0xa9: case 0xaa: case 0xff:
      return (op1){.bad = 1};
    default: return (op1){.modrm = 1};
  }
}

int ms__rec_x86_decode(const uint8_t *p, ms__x86_insn *in) {
  memset(in, 0, sizeof *in);
  const uint8_t *s = p;
  int opsize16 = 0, rexw = 0;
  for (int n = 0; n < 14; n++, p++) {
    uint8_t b = *p;
    if (b == 0x66)
      opsize16 = 1;
    else if (!(b == 0x67 || b == 0xf2 || b == 0xf3 || b == 0xf0 || b == 0x2e || b == 0x36 ||
               b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65))
      break;
  }
  if ((*p & 0xf0) == 0x40) rexw = (*p++ & 8) != 0;
  op1 o;
  int imm_f6 = 0, opc = -1;  // opc: the opcode when it is of the one-byte map
  if (*p == 0xc5 || *p == 0xc4) {  // VEX: the map is in its bytes
    int map = 1;
    if (*p == 0xc4) {
      map = p[1] & 0x1f;
      rexw = (p[2] & 0x80) != 0;
      p += 3;
    } else {
      p += 2;
    }
    if (map < 1 || map > 3) return -1;
    o = map == 1 ? two_byte(*p) : (op1){.modrm = 1, .imm = map == 3 ? I8 : I0};
    if (map == 1 && *p == 0x77) o = (op1){0};  // vzeroupper, vzeroall
    if (map == 1 && (o.rel32 || o.stop)) return -1;
    p++;
  } else if (*p == 0x0f) {
    p++;
    if (*p == 0x38 || *p == 0x3a) {
      o = (op1){.modrm = 1, .imm = *p == 0x3a ? I8 : I0};
      p += 2;
    } else {
      o = two_byte(*p++);
    }
  } else if (*p == 0x62 || *p == 0x8f) {
    // EVEX, XOP (0x8f is also pop r/m: told apart by ModRM.reg)
    if (*p == 0x62 || (p[1] & 0x38) != 0) return -1;
    o = (op1){.modrm = 1};
    p++;
  } else {
    imm_f6 = *p == 0xf6 ? 1 : *p == 0xf7 ? 2 : 0;
    opc = *p;
    o = one_byte(*p++);
  }
  if (o.bad) return -1;
  if (o.modrm) {
    uint8_t m = *p++;
    int mod = m >> 6, rm = m & 7, reg = (m >> 3) & 7;
    if (imm_f6 && reg <= 1) o.imm = imm_f6 == 1 ? I8 : IZ;
    // ff /3 and /5 are far call and jmp, /7 invalid; c7 f8 is xbegin, whose
    // operand is a relative fallback address: refused.
    if ((opc == 0xff && (reg == 3 || reg == 5 || reg == 7)) || (opc == 0xc7 && m == 0xf8))
      return -1;
    if (opc == 0xff && reg == 4) in->ends = 1;  // jmp r/m: the code goes elsewhere
    if (mod != 3 && rm == 4) {  // SIB
      uint8_t sib = *p++;
      if (mod == 0 && (sib & 7) == 5) p += 4;
    } else if (mod == 0 && rm == 5) {
      in->rel_at = (int)(p - s);  // RIP-relative disp32
      in->kind = MS__X86_RIPREL;
      p += 4;
    }
    if (mod == 1) p += 1;
    if (mod == 2) p += 4;
  }
  switch (o.imm) {
    case I8: p += 1; break;
    case I16: p += 2; break;
    case IZ: p += opsize16 ? 2 : 4; break;
    case IV: p += rexw ? 8 : opsize16 ? 2 : 4; break;
  }
  if (o.rel32) {
    in->rel_at = (int)(p - s);
    in->kind = MS__X86_BRANCH;
    p += 4;
  }
  if (o.rel8) in->kind = MS__X86_SHORT;
  if (o.stop) in->kind = MS__X86_STOP;
  if (o.stop || opc == 0xe9 || opc == 0xeb) in->ends = 1;
  in->len = (int)(p - s);
  return in->len <= 15 ? 0 : -1;
}

int ms__rec_x86_relocate(const uint8_t *src, uint8_t *dst, int need, char *why, size_t cap) {
  int at = 0;
  while (at < need) {
    ms__x86_insn in;
    if (ms__rec_x86_decode(src + at, &in) != 0) {
      // Where, and its first bytes (at most 8: the decoder read no further).
      int k = snprintf(why, cap, "an instruction the patcher does not know at +%d:", at);
      for (int i = 0; i < 8 && k > 0 && (size_t)k + 4 < cap; i++)
        k += snprintf(why + k, cap - (size_t)k, " %02x", src[at + i]);
      return -1;
    }
    if (in.kind == MS__X86_STOP || in.kind == MS__X86_SHORT || (in.ends && at + in.len < need)) {
      snprintf(why, cap,
               in.kind == MS__X86_SHORT ? "a short branch at +%d, within its first %d bytes"
                                        : "the function ends (a return or a jump) at +%d, "
                                          "within its first %d bytes",
               at, need);
      return -1;
    }
    memcpy(dst + at, src + at, (size_t)in.len);
    if (in.kind == MS__X86_RIPREL || in.kind == MS__X86_BRANCH) {
      // The target stays where it was: re-aim the displacement from the new place.
      int32_t d;
      memcpy(&d, src + at + in.rel_at, 4);
      int64_t target = (int64_t)(uintptr_t)(src + at + in.len) + d;
      int64_t nd = target - (int64_t)(uintptr_t)(dst + at + in.len);
      if (nd != (int32_t)nd) {
        snprintf(why, cap, "a relative operand at +%d that cannot reach from the trampoline", at);
        return -1;
      }
      int32_t n32 = (int32_t)nd;
      memcpy(dst + at + in.rel_at, &n32, 4);
    }
    at += in.len;
  }
  return at;
}
