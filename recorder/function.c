/* recorder/function.c: `memstub record --function SYMBOL` (docs/recording.md,
 * "A function named on the command line"): every call of SYMBOL becomes a
 * probe region, with no source edits.
 *
 * The recorder finds SYMBOL in the ELF symbol tables (.symtab, else
 * .dynsym) of the executable and every loaded library, at start and after
 * each dlopen, and patches each definition's entry in place: a 5-byte jump
 * to a trampoline within +-2 GiB that saves the argument registers, calls
 * fn_enter (region begin, with the stack measured from the caller's frame;
 * the return address swapped for the exit thunk's and kept on a per-thread
 * shadow stack), restores them, runs the instructions the jump displaced
 * (moved by recorder/x86.c) and jumps back. On return the exit thunk saves
 * the return registers, calls fn_exit (region end) and returns where the
 * function would have. Why patching, not uprobes or ptrace: a uprobe costs a
 * trap into the kernel per call (microseconds) and needs privileges; ptrace
 * costs two context switches per breakpoint; the trampoline costs a few
 * dozen instructions plus the region's own bookkeeping.
 *
 * x86-64 only for now; elsewhere every function is reported as not
 * patchable. Unwinding through a patched function's frame (C++ exceptions,
 * backtrace()) sees the exit thunk as the return address; longjmp out of a
 * patched function is handled (the skipped regions end at the next return). */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bridge.h"
#include "internal.h"
#include "x86.h"

#define MAX_FN 32         // definitions patched
#define MAX_NAMES MS__REC_FN_MAX_NAMES  // --function options
#define SHADOW 256        // nested calls of patched functions per thread
#define JMP_LEN 5         // e9 rel32

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

typedef struct fnrec {
  const char *name;  // its regions' name: the --function name's label (static storage)
  uintptr_t addr;    // the entry
  char object[128];  // the file it is in (its tail)
  uint64_t calls;    // entries on any thread
} fnrec;

typedef struct fnname {
  const char *name;           // as given, in g_pool
  char label[NAME_MAX_LEN];   // its regions' name (churn, generations, metadata keys)
  int found, patched;
  const char *alias;          // its definition is that of another name's (patched there)
  char why[200];              // the last reason a definition could not be patched
} fnname;

static fnname g_names[MAX_NAMES];
static int g_nnames;
static char g_pool[MS__REC_FN_MAX_BYTES];  // the names, NUL-separated
static char g_overflow[160];               // names the recorder could not hold: why
static fnrec g_fn[MAX_FN];
static int g_nfn;
static uint64_t g_too_deep;
static uint8_t *g_exit_thunk;
static void *(*real_dlopen)(const char *, int);

// A thread's calls of patched functions that have not returned.
typedef struct shadow {
  uintptr_t ret;   // the return address the call had
  uintptr_t slot;  // where it was on the stack
  int begun;       // a region began (the thread records)
} shadow;
static TLS shadow g_sh[SHADOW];
static TLS int g_shn;

/* ---- entry and exit (called from the trampolines) ---- */

// pre: slot points at the call's return address, the function not yet run.
__attribute__((used)) static void fn_enter(uintptr_t *slot, fnrec *f) {
  int e = errno;
  __atomic_fetch_add(&f->calls, 1, __ATOMIC_RELAXED);
  // Calls a longjmp left sit where this one's caller is, or deeper: they
  // are over (a live caller's return address is above this one's).
  while (g_shn > 0 && g_sh[g_shn - 1].slot <= (uintptr_t)slot) {
    g_shn--;
    if (g_sh[g_shn].begun) memstub_recorder_probe_v1(MS__PROBE_END, NULL, (uintptr_t)(slot + 1));
  }
  if (g_shn >= SHADOW) {
    __atomic_fetch_add(&g_too_deep, 1, __ATOMIC_RELAXED);
    errno = e;
    return;  // not a region; it returns as it came
  }
  shadow *s = &g_sh[g_shn++];
  s->ret = *slot;
  s->slot = (uintptr_t)slot;
  // The caller's stack pointer before the call, as memstub_probe_begin takes it.
  s->begun = memstub_recorder_probe_v1(MS__PROBE_BEGIN, f->name, (uintptr_t)(slot + 1)) > 0;
  *slot = (uintptr_t)g_exit_thunk;
  errno = e;
}

// pre: slot is where the exit thunk's return address goes, the function's
// return address slot (the stack is as it was at the entry).
__attribute__((used)) static void fn_exit(uintptr_t *slot) {
  int e = errno;
  // Calls a longjmp left without returning sit deeper: they end here.
  while (g_shn > 0 && g_sh[g_shn - 1].slot < (uintptr_t)slot) {
    g_shn--;
    if (g_sh[g_shn].begun) memstub_recorder_probe_v1(MS__PROBE_END, NULL, (uintptr_t)(slot + 1));
  }
  if (g_shn == 0 || g_sh[g_shn - 1].slot != (uintptr_t)slot) {
    static const char msg[] = "memstub record: --function: a return that no call matches\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    abort();
  }
  shadow *s = &g_sh[--g_shn];
  if (s->begun) memstub_recorder_probe_v1(MS__PROBE_END, NULL, (uintptr_t)(slot + 1));
  *slot = s->ret;
  errno = e;
}

/* ---- code ---- */

#if defined(__x86_64__)
typedef struct emit {
  uint8_t *p;
} emit;
static void put(emit *e, const void *b, size_t n) {
  memcpy(e->p, b, n);
  e->p += n;
}
static void put64(emit *e, uint64_t v) { put(e, &v, 8); }

static const uint8_t save_args[] = {
    0x50, 0x57, 0x56, 0x52, 0x51, 0x41, 0x50, 0x41, 0x51, 0x41, 0x52, 0x41, 0x53,  // rax..r11
    0x48, 0x81, 0xec, 0x80, 0x00, 0x00, 0x00,                                      // sub rsp,128
    0xf3, 0x0f, 0x7f, 0x04, 0x24, 0xf3, 0x0f, 0x7f, 0x4c, 0x24, 0x10,              // xmm0, xmm1
    0xf3, 0x0f, 0x7f, 0x54, 0x24, 0x20, 0xf3, 0x0f, 0x7f, 0x5c, 0x24, 0x30,        // xmm2, xmm3
    0xf3, 0x0f, 0x7f, 0x64, 0x24, 0x40, 0xf3, 0x0f, 0x7f, 0x6c, 0x24, 0x50,        // xmm4, xmm5
    0xf3, 0x0f, 0x7f, 0x74, 0x24, 0x60, 0xf3, 0x0f, 0x7f, 0x7c, 0x24, 0x70,        // xmm6, xmm7
    0x48, 0x8d, 0xbc, 0x24, 0xc8, 0x00, 0x00, 0x00,  // lea rdi,[rsp+200]: the return address
};
static const uint8_t restore_args[] = {
    0xf3, 0x0f, 0x6f, 0x04, 0x24, 0xf3, 0x0f, 0x6f, 0x4c, 0x24, 0x10,
    0xf3, 0x0f, 0x6f, 0x54, 0x24, 0x20, 0xf3, 0x0f, 0x6f, 0x5c, 0x24, 0x30,
    0xf3, 0x0f, 0x6f, 0x64, 0x24, 0x40, 0xf3, 0x0f, 0x6f, 0x6c, 0x24, 0x50,
    0xf3, 0x0f, 0x6f, 0x74, 0x24, 0x60, 0xf3, 0x0f, 0x6f, 0x7c, 0x24, 0x70,
    0x48, 0x81, 0xc4, 0x80, 0x00, 0x00, 0x00,                                      // add rsp,128
    0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58, 0x59, 0x5a, 0x5e, 0x5f, 0x58,  // r11..rax
};

// A page of code near addr (within +-2 GiB less a page), or NULL.
static uint8_t *page_near(uintptr_t addr) {
  const uintptr_t step = (uintptr_t)1 << 20, reach = ((uintptr_t)1 << 31) - (2 << 20);
  uintptr_t base = addr & ~(step - 1);
  for (uintptr_t d = step; d < reach; d += step) {
    for (int side = 0; side < 2; side++) {
      if (side == 0 && base < d) continue;
      uintptr_t at = side ? base + d : base - d;
      void *p = mmap((void *)at, 4096, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (p == MAP_FAILED) continue;
      if ((uintptr_t)p == at) return p;
      munmap(p, 4096);  // an old kernel took the hint as a hint only
    }
  }
  return NULL;
}

// Make [a, a+n) writable, or back to read+execute.
static int code_writable(uintptr_t a, size_t n, int on) {
  uintptr_t lo = a & ~(uintptr_t)4095, hi = (a + n + 4095) & ~(uintptr_t)4095;
  return mprotect((void *)lo, hi - lo, on ? PROT_READ | PROT_WRITE | PROT_EXEC : PROT_READ | PROT_EXEC);
}

// The exit thunk, once.
static int make_exit_thunk(void) {
  if (g_exit_thunk) return 0;
  uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return -1;
  emit e = {p};
  static const uint8_t head[] = {
      0x48, 0x83, 0xec, 0x08,                          // sub rsp,8: the return address' slot
      0x50, 0x52,                                      // push rax, rdx
      0x48, 0x83, 0xec, 0x28,                          // sub rsp,40 (aligned)
      0xf3, 0x0f, 0x7f, 0x04, 0x24,                    // movdqu [rsp],xmm0
      0xf3, 0x0f, 0x7f, 0x4c, 0x24, 0x10,              // movdqu [rsp+16],xmm1
      0x48, 0x8d, 0x7c, 0x24, 0x38,                    // lea rdi,[rsp+56]: the slot
      0x48, 0xb8};                                     // mov rax, imm64
  static const uint8_t tail[] = {
      0xff, 0xd0,                                      // call rax
      0xf3, 0x0f, 0x6f, 0x04, 0x24,                    // movdqu xmm0,[rsp]
      0xf3, 0x0f, 0x6f, 0x4c, 0x24, 0x10,              // movdqu xmm1,[rsp+16]
      0x48, 0x83, 0xc4, 0x28,                          // add rsp,40
      0x5a, 0x58,                                      // pop rdx, rax
      0xc3};                                           // ret: to the original return address
  put(&e, head, sizeof head);
  put64(&e, (uint64_t)(uintptr_t)fn_exit);
  put(&e, tail, sizeof tail);
  if (mprotect(p, 4096, PROT_READ | PROT_EXEC) != 0) return -1;
  g_exit_thunk = p;
  return 0;
}

// Patch the definition f->addr: 0, or -1 with *why.
static int patch(fnrec *f, const char **why) {
  if (make_exit_thunk() != 0) {
    *why = "no memory for the exit thunk";
    return -1;
  }
  uint8_t *page = page_near(f->addr);
  if (!page) {
    *why = "no free page within 2 GiB of the function for its trampoline";
    return -1;
  }
  emit e = {page};
  put(&e, save_args, sizeof save_args);
  static const uint8_t mov_rsi[] = {0x48, 0xbe}, mov_rax[] = {0x48, 0xb8}, call_rax[] = {0xff, 0xd0};
  put(&e, mov_rsi, 2);
  put64(&e, (uint64_t)(uintptr_t)f);
  put(&e, mov_rax, 2);
  put64(&e, (uint64_t)(uintptr_t)fn_enter);
  put(&e, call_rax, 2);
  put(&e, restore_args, sizeof restore_args);
  static char reloc_why[160];  // scans are one at a time (g_scan_lock)
  int moved = ms__rec_x86_relocate((const uint8_t *)f->addr, e.p, JMP_LEN, reloc_why,
                                   sizeof reloc_why);
  if (moved < 0) {
    *why = reloc_why;
    munmap(page, 4096);
    return -1;
  }
  e.p += moved;
  static const uint8_t jmp_abs[] = {0xff, 0x25, 0, 0, 0, 0};  // jmp [rip+0]
  put(&e, jmp_abs, sizeof jmp_abs);
  put64(&e, (uint64_t)(f->addr + (uintptr_t)moved));
  if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0 ||
      code_writable(f->addr, (size_t)moved, 1) != 0) {
    *why = "the code cannot be made writable (mprotect)";
    munmap(page, 4096);
    return -1;
  }
  uint8_t jmp[16];
  int32_t rel = (int32_t)((intptr_t)page - (intptr_t)(f->addr + JMP_LEN));
  jmp[0] = 0xe9;
  memcpy(jmp + 1, &rel, 4);
  memset(jmp + JMP_LEN, 0xcc, sizeof jmp - JMP_LEN);  // what the jump covers: never run
  memcpy((void *)f->addr, jmp, (size_t)moved);
  code_writable(f->addr, (size_t)moved, 0);
  __builtin___clear_cache((char *)f->addr, (char *)f->addr + moved);
  return 0;
}
#else
static int patch(fnrec *f, const char **why) {
  (void)f;
  *why = "--function patches x86-64 code only for now";
  return -1;
}
#endif

/* ---- symbols ---- */

typedef struct scan {
  fnname *n;
  uintptr_t bias;
  const char *object;
} scan;

// The last 127 bytes of path at most (fnrec.object).
static const char *tail(const char *path) {
  size_t pl = strlen(path), cap = sizeof g_fn[0].object;
  return pl < cap ? path : path + pl - (cap - 1);
}

// The definitions of n->name in the ELF file at path (loaded at bias):
// functions in .symtab, else in .dynsym. Each is patched once.
static void scan_file(const char *path, uintptr_t bias, fnname *n) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  void *map = MAP_FAILED;
  if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(Elf64_Ehdr))
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return;
  const uint8_t *b = map;
  size_t size = (size_t)st.st_size;
  const Elf64_Ehdr *eh = map;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_shoff == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
      eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size)
    goto out;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff);
  for (int pass = 0; pass < 2; pass++) {
    uint32_t want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
    int hits = 0;
    for (int i = 0; i < eh->e_shnum; i++) {
      if (sh[i].sh_type != want || sh[i].sh_link >= eh->e_shnum) continue;
      const Elf64_Shdr *str = &sh[sh[i].sh_link];
      if (sh[i].sh_offset + sh[i].sh_size > size || str->sh_offset + str->sh_size > size) continue;
      const Elf64_Sym *sym = (const Elf64_Sym *)(b + sh[i].sh_offset);
      size_t nsym = sh[i].sh_size / sizeof(Elf64_Sym);
      const char *names = (const char *)(b + str->sh_offset);
      for (size_t k = 0; k < nsym; k++) {
        int type = ELF64_ST_TYPE(sym[k].st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym[k].st_shndx == SHN_UNDEF ||
            sym[k].st_value == 0 || sym[k].st_name >= str->sh_size ||
            strcmp(names + sym[k].st_name, n->name) != 0)
          continue;
        hits++;
        if (type == STT_GNU_IFUNC) {
          // Its address is a resolver's, which the dynamic linker runs once
          // to pick an implementation for this CPU: the calls never come here.
          n->found++;
          snprintf(n->why, sizeof n->why,
                   "an IFUNC symbol in %s (the dynamic linker picks one of several "
                   "implementations at load time): it cannot be patched",
                   tail(path));
          continue;
        }
        uintptr_t addr = bias + (uintptr_t)sym[k].st_value;
        const fnrec *seen = NULL;
        for (int j = 0; j < g_nfn; j++)
          if (g_fn[j].addr == addr) seen = &g_fn[j];
        if (seen) {
          // Another name of a definition already patched: its regions are that name's.
          if (seen->name != n->label && !n->alias) {
            n->found++;
            n->patched++;
            n->alias = seen->name;
          }
          continue;
        }
        n->found++;
        if (g_nfn == MAX_FN) {
          snprintf(n->why, sizeof n->why, "more than %d definitions", MAX_FN);
          continue;
        }
        fnrec *f = &g_fn[g_nfn];
        memset(f, 0, sizeof *f);
        f->name = n->label;
        f->addr = addr;
        snprintf(f->object, sizeof f->object, "%s", tail(path));
        const char *why = NULL;
        if (patch(f, &why) == 0) {
          g_nfn++;
          n->patched++;
        } else {
          snprintf(n->why, sizeof n->why, "%s", why);
        }
      }
    }
    if (hits) break;  // .symtab had it: .dynsym says the same
  }
out:
  munmap(map, size);
}

// Objects already read (a dlopen reads only the ones it added): their load
// address and program headers; beyond MAX_SEEN, read again (harmless: a
// definition is patched once).
#define MAX_SEEN 1024
static struct seen {
  uintptr_t addr;
  const void *phdr;
} g_seen[MAX_SEEN];
static int g_nseen;

static int each_object(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  (void)arg;
  for (int i = 0; i < g_nseen; i++)
    if (g_seen[i].addr == info->dlpi_addr && g_seen[i].phdr == info->dlpi_phdr) return 0;
  if (g_nseen < MAX_SEEN) g_seen[g_nseen++] = (struct seen){info->dlpi_addr, info->dlpi_phdr};
  const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : NULL;
  if (!path) {
    // The executable (its name is empty), or the vDSO: only the first has a PT_PHDR
    // that /proc/self/exe backs; scanning the wrong file finds nothing.
    int exe = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) exe |= info->dlpi_phdr[i].p_type == PT_INTERP;
    if (!exe) return 0;
    path = "/proc/self/exe";
  }
  if (strstr(path, "libmemstub_record")) return 0;  // never the recorder itself
  for (int i = 0; i < g_nnames; i++) scan_file(path, info->dlpi_addr, &g_names[i]);
  return 0;
}

static char g_scan_lock;

// Patch what is loaded now and not patched yet.
static void scan_all(void) {
  if (!g_nnames) return;
  while (__atomic_test_and_set(&g_scan_lock, __ATOMIC_ACQUIRE)) sched_yield();
  dl_iterate_phdr(each_object, NULL);
  __atomic_clear(&g_scan_lock, __ATOMIC_RELEASE);
}

/* The name's label: the name when it fits a region's name, else its head, a
 * hash of the whole (FNV-1a) and its length, so that long names alike at
 * their start (C++'s mangled ones) stay apart in the churn and the metadata. */
static void make_label(fnname *n) {
  size_t len = strlen(n->name);
  if (len < sizeof n->label) {
    memcpy(n->label, n->name, len + 1);
    return;
  }
  uint32_t h = 2166136261u;
  for (const char *c = n->name; *c; c++) h = (h ^ (uint8_t)*c) * 16777619u;
  snprintf(n->label, sizeof n->label, "%.40s..%08x.%u", n->name, (unsigned)h,
           (unsigned)(len % 100000));  // len < MS__REC_FN_MAX_BYTES
}

// The names from the environment into g_names (each once); what does not
// fit is said in g_overflow, never dropped in silence.
static void read_names(const char *list) {
  size_t len = strlen(list);
  if (len >= sizeof g_pool) {
    snprintf(g_overflow, sizeof g_overflow,
             "--function: the names take %zu bytes, more than the recorder's %d", len,
             MS__REC_FN_MAX_BYTES - 1);
    return;
  }
  memcpy(g_pool, list, len + 1);
  for (char *p = g_pool; *p;) {
    size_t k = strcspn(p, ",");
    int last = p[k] == '\0';
    p[k] = '\0';
    int dup = k == 0;
    for (int i = 0; i < g_nnames && !dup; i++) dup = strcmp(g_names[i].name, p) == 0;
    if (!dup && g_nnames == MAX_NAMES) {
      snprintf(g_overflow, sizeof g_overflow, "--function: more than %d names", MAX_NAMES);
      return;
    }
    if (!dup) {
      g_names[g_nnames].name = p;
      make_label(&g_names[g_nnames++]);
    }
    p += k + !last;
  }
}

void ms__rec_fn_init(void) {
  const char *list = getenv(MS__REC_ENV_FUNCTIONS);
  real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
  if (!list || !*list) return;
  read_names(list);
  if (!g_overflow[0]) scan_all();
}

int ms__rec_fn_requested(void) { return g_nnames + (g_overflow[0] != 0); }

int ms__rec_fn_patched(void) { return g_nfn; }

EXPORT void *dlopen(const char *file, int mode) {
  if (!real_dlopen) real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
  void *h = real_dlopen ? real_dlopen(file, mode) : NULL;
  if (h && g_nnames) {
    int had = ms__rec_fn_problem() != NULL;
    scan_all();  // functions in the library just loaded
    if (had) ms__rec_status(-1, 0, 0, 0, 0);  // the status file says what is left
  }
  return h;
}

void ms__rec_fn_meta(void) {
  char key[128];
  for (int i = 0; i < g_nnames; i++) {
    const fnname *n = &g_names[i];
    uint64_t calls = 0;
    for (int j = 0; j < g_nfn; j++)
      if (g_fn[j].name == n->label) calls += __atomic_load_n(&g_fn[j].calls, __ATOMIC_RELAXED);
    snprintf(key, sizeof key, "record.function.%s", n->label);
    const char *longer = strcmp(n->label, n->name) ? " (the label of a longer name)" : "";
    if (n->alias)
      ms__rec_meta(key, "the same definition as --function %s, whose regions its calls are%s",
                   n->alias, longer);
    else if (n->patched)
      ms__rec_meta(key, "%d definition%s patched, %llu calls on every thread%s", n->patched,
                   n->patched == 1 ? "" : "s", (unsigned long long)calls, longer);
    else
      ms__rec_meta(key, "%s", n->found ? n->why : "not found in the program or the libraries it loaded");
  }
  for (int j = 0; j < g_nfn; j++) {
    snprintf(key, sizeof key, "record.function_at.%d", j + 1);
    ms__rec_meta(key, "%s at %#lx in %s", g_fn[j].name, (unsigned long)g_fn[j].addr,
                 g_fn[j].object);
  }
  if (g_too_deep)
    ms__rec_meta("record.function_too_deep", "%llu calls nested deeper than %d: not regions",
                 (unsigned long long)g_too_deep, SHADOW);
  if (g_overflow[0]) ms__rec_meta("record.function_refused", "%s", g_overflow);
}

const char *ms__rec_fn_problem(void) {
  static char b[448];  // "--function " + 203 bytes of the name + ": " + why
  if (g_overflow[0]) return g_overflow;
  for (int i = 0; i < g_nnames; i++)
    if (!g_names[i].patched) {
      const char *nm = g_names[i].name;
      snprintf(b, sizeof b, "--function %.200s%s: %s", nm, strlen(nm) > 200 ? "..." : "",
               g_names[i].found ? g_names[i].why
                                : "not found in the program or the libraries it loaded");
      return b;
    }
  return NULL;
}
