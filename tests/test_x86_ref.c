// recorder/x86.c against a reference disassembler (Zydis, libzydis-dev), on
// what `record --function` relocates: the instructions covering the first 5
// bytes of every function of libc and of gcc's cc1 (their ELF symbol
// tables). Where the decoder accepts an instruction, Zydis must decode it
// with the same length, the same RIP-relative operand or relative branch at
// the same offset, and agree on whether the code goes on after it; a
// refusal is always safe (the patcher then refuses the function). Built only
// where Zydis was found at configure time; elsewhere it says so and ctest
// counts it skipped.
#include <check.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "x86.h"

#ifndef MS_HAVE_ZYDIS
int main(void) {
  fprintf(stderr,
          "test_x86_ref: SKIPPED: Zydis (Debian: libzydis-dev) was not found when the build was "
          "configured; recorder/x86.c is checked against objdump's lengths only (test_x86)\n");
  return 77;  // ctest's SKIP_RETURN_CODE
}
#else
#include <Zydis/Zydis.h>

#define NEED 5  // function.c's JMP_LEN

typedef struct tally {
  long functions, insns, refused, ends, disagree;
} tally;

static ZydisDecoder g_dec;

// Zydis's view of one instruction in the decoder's terms: its kind and
// where its relative operand starts, and whether the code goes on after it.
static int reference(const ZydisDecodedInstruction *z, const ZydisDecodedOperand *ops, int *rel_at,
                     int *ends) {
  switch (z->mnemonic) {
    case ZYDIS_MNEMONIC_JMP: case ZYDIS_MNEMONIC_RET: case ZYDIS_MNEMONIC_INT3:
    case ZYDIS_MNEMONIC_HLT: case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1:
    case ZYDIS_MNEMONIC_UD2: case ZYDIS_MNEMONIC_IRET: case ZYDIS_MNEMONIC_IRETD:
    case ZYDIS_MNEMONIC_IRETQ:
      *ends = 1;
      break;
    default:
      *ends = 0;
  }
  *rel_at = 0;
  for (int i = 0; i < z->operand_count; i++)
    if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
        (ops[i].mem.base == ZYDIS_REGISTER_RIP || ops[i].mem.base == ZYDIS_REGISTER_EIP)) {
      *rel_at = z->raw.disp.offset;
      return MS__X86_RIPREL;
    }
  for (int i = 0; i < 2; i++)
    if (z->raw.imm[i].is_relative) {
      *rel_at = z->raw.imm[i].offset;
      return z->raw.imm[i].size == 8 ? MS__X86_SHORT : MS__X86_BRANCH;
    }
  if (*ends && z->mnemonic != ZYDIS_MNEMONIC_JMP) return MS__X86_STOP;
  return MS__X86_PLAIN;
}

// The instructions at a function's entry p (avail bytes readable) that
// `--function` would relocate, compared; what disagrees is printed.
static void entry(const uint8_t *p, size_t avail, const char *file, const char *name, tally *t) {
  t->functions++;
  for (int at = 0; at < NEED;) {
    ms__x86_insn in;
    if (ms__rec_x86_decode(p + at, &in) != 0) {
      t->refused++;
      return;
    }
    t->insns++;
    ZydisDecodedInstruction z;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    int rel_at = 0, ends = 0, kind = -1;
    if (ZYAN_SUCCESS(ZydisDecoderDecodeFull(&g_dec, p + at, avail - (size_t)at, &z, ops)))
      kind = reference(&z, ops, &rel_at, &ends);
    int same = kind >= 0 && z.length == in.len && kind == in.kind && ends == in.ends &&
               (kind != MS__X86_RIPREL && kind != MS__X86_BRANCH ? 1 : rel_at == in.rel_at);
    if (!same) {
      if (t->disagree++ < 20) {
        fprintf(stderr, "%s: %s+%d:", file, name, at);
        for (int i = 0; i < in.len; i++) fprintf(stderr, " %02x", p[at + i]);
        fprintf(stderr, ": decoder length %d kind %d at %d ends %d; Zydis %s length %d kind %d "
                        "at %d ends %d\n",
                in.len, in.kind, in.rel_at, in.ends, kind < 0 ? "refuses," : "",
                kind < 0 ? 0 : z.length, kind, rel_at, ends);
      }
      return;
    }
    if (in.kind == MS__X86_STOP || in.kind == MS__X86_SHORT || in.ends) {
      t->ends++;  // the relocation stops (refused, or the jump covers the bytes)
      return;
    }
    at += in.len;
  }
}

// Every function symbol of the ELF file at path (.symtab and .dynsym, each
// address once); 0, or -1 when it cannot be read.
static int each_function(const char *path, tally *t) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  const uint8_t *b = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (b == MAP_FAILED) return -1;
  size_t size = (size_t)st.st_size;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
  ck_assert_msg(size > sizeof *eh && !memcmp(eh->e_ident, ELFMAG, SELFMAG), "%s: not ELF", path);
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(b + eh->e_phoff);
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff);
  size_t cap = 1 << 16, nseen = 0;
  uint64_t *seen = calloc(cap, sizeof *seen);  // addresses, open addressing
  ck_assert_ptr_nonnull(seen);
  for (int s = 0; s < eh->e_shnum; s++) {
    if (sh[s].sh_type != SHT_SYMTAB && sh[s].sh_type != SHT_DYNSYM) continue;
    const Elf64_Sym *sym = (const Elf64_Sym *)(b + sh[s].sh_offset);
    const char *names = (const char *)(b + sh[sh[s].sh_link].sh_offset);
    for (size_t k = 0; k < sh[s].sh_size / sizeof *sym; k++) {
      uint64_t v = sym[k].st_value;
      if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || sym[k].st_shndx == SHN_UNDEF || !v)
        continue;
      size_t h = (size_t)(v * 0x9e3779b97f4a7c15ULL >> 40) & (cap - 1);
      while (seen[h] && seen[h] != v) h = (h + 1) & (cap - 1);
      if (seen[h]) continue;
      seen[h] = v;
      ck_assert_msg(++nseen < cap / 2, "%s: more functions than the test holds", path);
      for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && v >= ph[i].p_vaddr && v < ph[i].p_vaddr + ph[i].p_filesz) {
          size_t off = (size_t)(v - ph[i].p_vaddr + ph[i].p_offset);
          entry(b + off, size - off < 64 ? size - off : 64, path, names + sym[k].st_name, t);
          break;
        }
    }
  }
  free(seen);
  munmap((void *)b, size);
  return 0;
}

// The file a command prints (its first line), or NULL.
static char *command_path(const char *cmd) {
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  char line[4096];
  char *r = fgets(line, sizeof line, p) ? strdup(line) : NULL;
  pclose(p);
  if (r) r[strcspn(r, "\n")] = '\0';
  if (r && (r[0] != '/' || access(r, R_OK) != 0)) {
    free(r);
    r = NULL;
  }
  return r;
}

static void check_file(const char *path) {
  tally t = {0};
  ck_assert_msg(each_function(path, &t) == 0, "%s: cannot read", path);
  fprintf(stderr,
          "test_x86_ref: %s: %ld functions, %ld instructions compared, %ld prologues refused by "
          "the decoder, %ld ending in a jump or return, %ld disagreements\n",
          path, t.functions, t.insns, t.refused, t.ends, t.disagree);
  ck_assert_msg(t.functions > 1000, "%s: only %ld functions", path, t.functions);
  ck_assert_msg(t.disagree == 0, "%s: %ld entries where the decoder and Zydis disagree", path,
                t.disagree);
}

START_TEST(test_libc) {
  char *libc = command_path("ldd /bin/sh | sed -n 's/.*libc.so.6 => \\([^ ]*\\).*/\\1/p'");
  check_file(libc ? libc : "/lib/x86_64-linux-gnu/libc.so.6");
  free(libc);
}
END_TEST

START_TEST(test_cc1) {
  char *cc1 = command_path("gcc -print-prog-name=cc1 2>/dev/null");
  if (!cc1) {
    fprintf(stderr, "test_x86_ref: gcc's cc1 not found: only libc was checked\n");
    return;
  }
  check_file(cc1);
  free(cc1);
}
END_TEST

int main(void) {
  ZydisDecoderInit(&g_dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  Suite *s = suite_create("x86_ref");
  TCase *tc = tcase_create("zydis");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_libc);
  tcase_add_test(tc, test_cc1);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
#endif
