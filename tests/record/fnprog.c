/* tests/record/fnprog.c: a program whose functions `memstub record
 * --function` scopes (tests/test_record_function.c). Built twice: plain, and
 * with -DMS_USE_PROBE, where work() opens and closes a probe region itself,
 * so the two recordings can be compared row by row. MODE:
 *   exe N        call work(k) for k = 1..N (in the executable)
 *   lib N        call lib_work(k) (libfnlib.so, linked)
 *   dlopen LIB N dlopen LIB and call its lib_work(k)
 *   nested       outer() calls work() twice: one region per outer call
 *   longjmp      jumper() longjmps out of itself; then work(1) as usual
 *   tiny N       call tiny() N times and print ns per call on stderr
 *   generation   produce() leaves three blocks alive (100, 200, 300 kB; a
 *                temporary is freed inside): the first is freed 100 ms after
 *                it returns, the second at the end of main, the third never
 *   many         produce_many() three times: 20,000 blocks of 48 bytes left
 *                alive each time, half freed at once, half never
 *   fib N        fib(N), recursive: 2 fib(N+1) - 1 calls, each mallocs and
 *                frees 64 bytes (fib(15): 1973 calls, 3946 allocator calls)
 *   long         two functions whose names are 314 bytes long, alike but
 *                for their last byte (FNPROG_LONG_NAME "a" and "b"): a(1)
 *                twice, b(2) once
 *   memset N     memset() of a 1 MiB block N times (an IFUNC in libc)
 *   consume      consume() frees a block main allocated before calling it,
 *                with a block of its own allocated and freed around that
 *   spans MS...  sleep 40 ms, then span(ms) for each MS: a block of 1000
 *                bytes held while it sleeps ms (--reference times the
 *                regions: test_reference_regions)
 *   shallower    framed() (16 KiB of locals around a malloc) from 20 frames
 *                of 1 KiB down, then twice from main: regions entered from
 *                shallower frames than the first one's */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef MS_USE_PROBE
#include "memstub/probe.h"
#endif

long lib_work(int n);

__attribute__((noinline)) long work(int n) {
#ifdef MS_USE_PROBE
  memstub_probe_begin("work");
#endif
  char *volatile p = malloc((size_t)n * 100000);
  if (!p) exit(3);
  memset(p, 1, (size_t)n * 100000);
  long s = p[n];
  usleep(2000);
  free(p);
#ifdef MS_USE_PROBE
  memstub_probe_end();
#endif
  return s;
}

// A function of 3 bytes (xor eax,eax; ret): its entry cannot be patched.
#if defined(__x86_64__)
__asm__(".text\n.globl fn_short\n.type fn_short,@function\nfn_short:\n"
        "  xorl %eax,%eax\n  ret\n.size fn_short,.-fn_short\n");
#endif

// work() under a second name: --function work_alias is the same definition.
long work_alias(int n) __attribute__((alias("work")));

__attribute__((noinline)) long outer(int n) { return work(n) + work(n + 1); }

static jmp_buf g_env;
__attribute__((noinline)) void jumper(int n) {
  char *volatile p = malloc(4096);
  if (n > 0) {
    free(p);
    longjmp(g_env, 1);
  }
  free(p);
}

/* consume(): a block of its own (30,000 bytes), and main's p (70,000) freed. */
__attribute__((noinline)) void consume(char *p) {
  char *volatile q = malloc(30000);
  if (!q) exit(3);
  memset(q, 1, 30000);
  free(p);
  free(q);
}

static char *volatile g_kept[3];
// Each kept block from a line of its own: three allocation sites.
__attribute__((noinline)) void produce(void) {
  char *volatile tmp = malloc(50000);
  g_kept[0] = malloc(100000);  // site: freed 100 ms later
  g_kept[1] = malloc(200000);  // site: freed at the end of main
  g_kept[2] = malloc(300000);  // site: never freed
  for (int i = 0; i < 3; i++) {
    if (!g_kept[i]) exit(3);
    memset(g_kept[i], 1, (size_t)(i + 1) * 100000);
  }
  free(tmp);
}

/* produce_many(): 20,000 blocks of 48 bytes left alive (and 10,000
 * temporaries freed inside), so that the recorder's table of generations
 * grows several times while blocks are in it. */
enum { MANY = 20000 };
static void *g_many[3][MANY];
__attribute__((noinline)) void produce_many(int k) {
  for (int i = 0; i < MANY; i++) {
    void *volatile tmp = i % 2 ? malloc(16) : NULL;
    if (!(g_many[k][i] = malloc(48))) exit(3);
    free(tmp);
  }
}

__attribute__((noinline)) long fib(int n) {
  char *volatile p = malloc(64);
  if (!p) exit(3);
  long r = n < 2 ? n : fib(n - 1) + fib(n - 2);
  free(p);
  return r;
}
// The head of two C++-like mangled names: 313 bytes (tests/test_record_function.c builds the same).
#define FNPROG_X10 "xxxxxxxxxx"
#define FNPROG_X100 FNPROG_X10 FNPROG_X10 FNPROG_X10 FNPROG_X10 FNPROG_X10 FNPROG_X10 \
  FNPROG_X10 FNPROG_X10 FNPROG_X10 FNPROG_X10
#define FNPROG_LONG_NAME "_ZN7memstub" FNPROG_X100 FNPROG_X100 FNPROG_X100 "Ev"
long long_a(int n) __asm__(FNPROG_LONG_NAME "a");
long long_b(int n) __asm__(FNPROG_LONG_NAME "b");
__attribute__((noinline)) long long_a(int n) { return work(n) + 1; }
__attribute__((noinline)) long long_b(int n) { return work(n) + 2; }

__attribute__((noinline)) void span(int ms) {
  char *volatile p = malloc(1000);
  if (!p) exit(3);
  usleep((useconds_t)ms * 1000);
  free(p);
}

static volatile long g_sink;
__attribute__((noinline)) void tiny(void) { g_sink++; }

// framed(): a malloc below 16 KiB of its own locals.
__attribute__((noinline)) void framed(int n) {
  volatile char big[16384];
  memset((char *)big, n, sizeof big);
  char *volatile p = malloc(1000);
  if (!p) exit(3);
  p[0] = big[n];
  free(p);
}

// d frames of 1 KiB, then framed().
__attribute__((noinline)) long deep_framed(int d) {
  volatile char pad[1000];
  pad[0] = (char)d;
  if (d) return deep_framed(d - 1) + pad[0];
  framed(1);
  return 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  const char *m = argc > 1 ? argv[1] : "exe";
  int n = argc > 2 ? atoi(argv[argc - 1]) : 3;
  long s = 0;
  if (!strcmp(m, "exe")) {
    for (int k = 1; k <= n; k++) s += work(k);
  } else if (!strcmp(m, "lib")) {
    for (int k = 1; k <= n; k++) s += lib_work(k * 100);
  } else if (!strcmp(m, "dlopen") && argc > 3) {
    void *h = dlopen(argv[2], RTLD_NOW);
    long (*f)(int) = h ? (long (*)(int))dlsym(h, "lib_work") : NULL;
    if (!f) {
      fprintf(stderr, "fnprog: %s\n", dlerror());
      return 3;
    }
    for (int k = 1; k <= n; k++) s += f(k * 100);
  } else if (!strcmp(m, "nested")) {
    s = outer(1) + outer(2);
  } else if (!strcmp(m, "longjmp")) {
    if (setjmp(g_env) == 0) jumper(1);
    s = work(1);
  } else if (!strcmp(m, "generation")) {
    produce();
    usleep(100000);
    free(g_kept[0]);
    usleep(50000);
    free(g_kept[1]);
  } else if (!strcmp(m, "many")) {
    // Three calls; after each the even blocks are freed, the odd ones never.
    for (int k = 0; k < 3; k++) {
      produce_many(k);
      for (int i = 0; i < MANY; i += 2) free(g_many[k][i]);
    }
  } else if (!strcmp(m, "consume")) {
    char *p = malloc(70000);
    if (!p) return 3;
    memset(p, 2, 70000);
    consume(p);
  } else if (!strcmp(m, "fib")) {
    s = fib(n);
  } else if (!strcmp(m, "long")) {
    s = long_a(1) + long_a(1) + long_b(2);
  } else if (!strcmp(m, "memset")) {
    char *p = malloc(1 << 20);
    for (int k = 0; p && k < n; k++) memset(p, k, 1 << 20);
    free(p);
  } else if (!strcmp(m, "spans")) {
    usleep(40000);
    for (int k = 2; k < argc; k++) span(atoi(argv[k]));
  } else if (!strcmp(m, "shallower")) {
    s = deep_framed(20);
    framed(2);
    framed(3);
  } else if (!strcmp(m, "tiny")) {
    double t0 = now();
    for (int k = 0; k < n; k++) tiny();
    fprintf(stderr, "fnprog: ns_per_call %.1f\n", (now() - t0) / n);
  } else {
    fprintf(stderr, "fnprog: unknown mode %s\n", m);
    return 2;
  }
  printf("%ld\n", s);
  return 0;
}
