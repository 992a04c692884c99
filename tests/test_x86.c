// recorder/x86.c: instruction lengths and relocation for --function's
// patcher. Known encodings one by one, the relocation of relative operands,
// refusals, and every instruction of the C library against objdump's lengths.
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "x86.h"

typedef struct known {
  const char *what;
  uint8_t b[16];
  int len, kind;
} known;

static const known cases[] = {
    {"endbr64", {0xf3, 0x0f, 0x1e, 0xfa}, 4, MS__X86_PLAIN},
    {"push rbp", {0x55}, 1, MS__X86_PLAIN},
    {"push r15", {0x41, 0x57}, 2, MS__X86_PLAIN},
    {"mov rbp,rsp", {0x48, 0x89, 0xe5}, 3, MS__X86_PLAIN},
    {"sub rsp,0x18", {0x48, 0x83, 0xec, 0x18}, 4, MS__X86_PLAIN},
    {"sub rsp,0x1000", {0x48, 0x81, 0xec, 0x00, 0x10, 0, 0}, 7, MS__X86_PLAIN},
    {"mov eax,1", {0xb8, 1, 0, 0, 0}, 5, MS__X86_PLAIN},
    {"movabs rax,imm64", {0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 10, MS__X86_PLAIN},
    {"mov ax,imm16", {0x66, 0xb8, 1, 2}, 4, MS__X86_PLAIN},
    {"mov rax,[rsp+8]", {0x48, 0x8b, 0x44, 0x24, 0x08}, 5, MS__X86_PLAIN},
    {"mov rax,[rbx+rcx*8+0x100]", {0x48, 0x8b, 0x84, 0xcb, 0, 1, 0, 0}, 8, MS__X86_PLAIN},
    {"lea rax,[rip+x]", {0x48, 0x8d, 0x05, 0x10, 0, 0, 0}, 7, MS__X86_RIPREL},
    {"cmp dword [rip+x],0", {0x83, 0x3d, 0x10, 0, 0, 0, 0}, 7, MS__X86_RIPREL},
    {"test byte [rdi],1", {0xf6, 0x07, 0x01}, 3, MS__X86_PLAIN},
    {"test dword [rdi],imm32", {0xf7, 0x07, 1, 0, 0, 0}, 6, MS__X86_PLAIN},
    {"not dword [rdi]", {0xf7, 0x17}, 2, MS__X86_PLAIN},
    {"call rel32", {0xe8, 0, 0, 0, 0}, 5, MS__X86_BRANCH},
    {"jmp rax", {0xff, 0xe0}, 2, MS__X86_PLAIN},
    {"jmp [rip+x]", {0xff, 0x25, 0x10, 0, 0, 0}, 6, MS__X86_RIPREL},
    {"call [rax]", {0xff, 0x10}, 2, MS__X86_PLAIN},
    {"jmp rel32", {0xe9, 0, 0, 0, 0}, 5, MS__X86_BRANCH},
    {"je rel32", {0x0f, 0x84, 0, 0, 0, 0}, 6, MS__X86_BRANCH},
    {"je rel8", {0x74, 0x05}, 2, MS__X86_SHORT},
    {"jmp rel8", {0xeb, 0x05}, 2, MS__X86_SHORT},
    {"ret", {0xc3}, 1, MS__X86_STOP},
    {"int3", {0xcc}, 1, MS__X86_STOP},
    {"nopw [rax+rax]", {0x66, 0x0f, 0x1f, 0x44, 0, 0}, 6, MS__X86_PLAIN},
    {"movdqu [rsp],xmm0", {0xf3, 0x0f, 0x7f, 0x04, 0x24}, 5, MS__X86_PLAIN},
    {"pshufd xmm0,xmm1,0", {0x66, 0x0f, 0x70, 0xc1, 0}, 5, MS__X86_PLAIN},
    {"vzeroupper", {0xc5, 0xf8, 0x77}, 3, MS__X86_PLAIN},
    {"vmovdqu ymm0,[rsi]", {0xc5, 0xfe, 0x6f, 0x06}, 4, MS__X86_PLAIN},
    {"vpalignr (VEX 0F3A, imm8)", {0xc4, 0xe3, 0x7d, 0x0f, 0xc1, 0x08}, 6, MS__X86_PLAIN},
    {"rep stosq", {0xf3, 0x48, 0xab}, 3, MS__X86_PLAIN},
    {"fldt [rsp+8]", {0xdb, 0x6c, 0x24, 0x08}, 4, MS__X86_PLAIN},
};

START_TEST(test_known_encodings) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ms__x86_insn in;
    ck_assert_msg(ms__rec_x86_decode(cases[i].b, &in) == 0, "%s refused", cases[i].what);
    ck_assert_msg(in.len == cases[i].len, "%s: length %d, not %d", cases[i].what, in.len,
                  cases[i].len);
    ck_assert_msg(in.kind == cases[i].kind, "%s: kind %d, not %d", cases[i].what, in.kind,
                  cases[i].kind);
  }
}
END_TEST

START_TEST(test_refused_encodings) {
  static const uint8_t evex[] = {0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x06, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  static const uint8_t invalid[] = {0x06, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};  // push es
  // xbegin rel32 (its fallback is relative), far jmp and far call through memory
  static const uint8_t xbegin[] = {0xc7, 0xf8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  static const uint8_t far[] = {0xff, 0x28, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  static const uint8_t farcall[] = {0xff, 0x18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  ms__x86_insn in;
  ck_assert_int_eq(ms__rec_x86_decode(evex, &in), -1);
  ck_assert_int_eq(ms__rec_x86_decode(invalid, &in), -1);
  ck_assert_int_eq(ms__rec_x86_decode(xbegin, &in), -1);
  ck_assert_int_eq(ms__rec_x86_decode(far, &in), -1);
  ck_assert_int_eq(ms__rec_x86_decode(farcall, &in), -1);
  static const uint8_t jmp_rax[] = {0xff, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  ck_assert_int_eq(ms__rec_x86_decode(jmp_rax, &in), 0);
  ck_assert_int_eq(in.ends, 1);  // the code does not go on after it
}
END_TEST

// Relocated relative operands still reach their old targets.
START_TEST(test_relocation) {
  static uint8_t src[64], dst[64];
  // endbr64; lea rax,[rip+0x20]; call rel32 +0x100; (then padding)
  const uint8_t code[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8d, 0x05, 0x20, 0, 0, 0,
                          0xe8, 0x00, 0x01, 0, 0, 0x90, 0x90};
  memcpy(src, code, sizeof code);
  char why[160] = "";
  int n = ms__rec_x86_relocate(src, dst, 5, why, sizeof why);
  ck_assert_msg(n == 11, "moved %d (%s)", n, why);
  int32_t d;
  memcpy(&d, dst + 7, 4);
  ck_assert_uint_eq((uintptr_t)dst + 11 + (uintptr_t)(intptr_t)d, (uintptr_t)src + 11 + 0x20);
  n = ms__rec_x86_relocate(src, dst, 12, why, sizeof why);
  ck_assert_int_eq(n, 16);
  memcpy(&d, dst + 12, 4);
  ck_assert_uint_eq((uintptr_t)dst + 16 + (uintptr_t)(intptr_t)d, (uintptr_t)src + 16 + 0x100);
  // A short branch or a return among the moved bytes: refused with a reason.
  const uint8_t jshort[] = {0x85, 0xff, 0x74, 0x10, 0x90, 0x90, 0x90};
  memcpy(src, jshort, sizeof jshort);
  why[0] = '\0';
  ck_assert_int_eq(ms__rec_x86_relocate(src, dst, 5, why, sizeof why), -1);
  ck_assert_msg(strstr(why, "a short branch at +2"), "%s", why);
  const uint8_t ret[] = {0x31, 0xc0, 0xc3, 0x90, 0x90, 0x90};
  memcpy(src, ret, sizeof ret);
  ck_assert_int_eq(ms__rec_x86_relocate(src, dst, 5, why, sizeof why), -1);
  ck_assert_msg(strstr(why, "ends"), "%s", why);
  // An indirect jump before the fifth byte: what follows is not the function's.
  const uint8_t jmp_rax[] = {0xff, 0xe0, 0x90, 0x90, 0x90, 0x90};
  memcpy(src, jmp_rax, sizeof jmp_rax);
  ck_assert_int_eq(ms__rec_x86_relocate(src, dst, 5, why, sizeof why), -1);
  ck_assert_msg(strstr(why, "ends (a return or a jump) at +0"), "%s", why);
  // endbr64; jmp [rip+x]: the jump ends at byte 10, the five are the function's.
  const uint8_t thunk[] = {0xf3, 0x0f, 0x1e, 0xfa, 0xff, 0x25, 0x10, 0, 0, 0};
  memcpy(src, thunk, sizeof thunk);
  ck_assert_int_eq(ms__rec_x86_relocate(src, dst, 5, why, sizeof why), 10);
  // What it does not know: where, and the bytes.
  const uint8_t evex[] = {0x90, 0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x06, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  memcpy(src, evex, sizeof evex);
  ck_assert_int_eq(ms__rec_x86_relocate(src, dst, 5, why, sizeof why), -1);
  ck_assert_msg(strstr(why, "does not know at +1: 62 f1 fe 48 6f 06 00 00"), "%s", why);
}
END_TEST

// Every instruction of libc: the decoder's length is objdump's, or it refuses.
START_TEST(test_libc_against_objdump) {
  FILE *p = popen("objdump -d -w /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null", "r");
  ck_assert_ptr_nonnull(p);
  char line[1024];
  long ok = 0, refused = 0;
  while (fgets(line, sizeof line, p)) {
    // "  1234:\t48 89 e5       \tmov ..."
    char *t1 = strchr(line, '\t');
    if (!t1 || t1 == line || t1[-1] != ':') continue;
    char *t2 = strchr(t1 + 1, '\t');
    if (!t2) continue;
    *t2 = '\0';
    uint8_t b[32] = {0};
    int n = 0;
    for (char *s = strtok(t1 + 1, " "); s && n < 15; s = strtok(NULL, " "))
      b[n++] = (uint8_t)strtoul(s, NULL, 16);
    if (n == 0) continue;
    ms__x86_insn in;
    if (ms__rec_x86_decode(b, &in) != 0) {
      refused++;
      continue;
    }
    ck_assert_msg(in.len == n, "at %.*s: length %d, objdump says %d", (int)(t1 - line), line,
                  in.len, n);
    ok++;
  }
  pclose(p);
  ck_assert_msg(ok > 100000, "objdump gave %ld instructions", ok);
  ck_assert_msg(refused * 50 < ok, "refused %ld of %ld", refused, ok + refused);  // EVEX, mostly
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("x86");
  TCase *tc = tcase_create("decode");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_known_encodings);
  tcase_add_test(tc, test_refused_encodings);
  tcase_add_test(tc, test_relocation);
  tcase_add_test(tc, test_libc_against_objdump);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
