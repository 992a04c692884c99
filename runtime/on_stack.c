/* runtime/on_stack.c: a replay on the caller's thread (docs/runtime.md, "On
 * the caller's thread"): the function runs on a stack of its own, of the size
 * the stub needs, mapped with a guard page below it, and the thread switches
 * to it and back with swapcontext. The thread stays the caller's: its malloc
 * arena and tcache, its signal mask and handlers, its CPU clock.
 *
 * Under AddressSanitizer the switch is announced (__sanitizer_*_switch_fiber),
 * and under Valgrind the stack is registered, so neither mistakes the switch
 * for a stack overflow. */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "internal.h"
#include "prim.h"

#if defined(__SANITIZE_ADDRESS__)
#define MS__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MS__ASAN 1
#endif
#endif
#if defined(MS__ASAN)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define MS__VALGRIND 1
#endif
#endif

typedef struct hop {
  ucontext_t caller, fiber;
  void (*fn)(void *);
  void *arg;
  void *fake;                   // ASan: the caller's fake stack while away
  const void *caller_bottom;    // ASan: the caller's stack, to switch back to
  size_t caller_size;
} hop;

// The fiber's entry: the hop's address comes in two halves (makecontext passes ints).
static void trampoline(unsigned hi, unsigned lo) {
  hop *h = (hop *)(((uintptr_t)hi << 16 << 16) | (uintptr_t)lo);
#if defined(MS__ASAN)
  __sanitizer_finish_switch_fiber(h->fake, &h->caller_bottom, &h->caller_size);
#endif
  h->fn(h->arg);
#if defined(MS__ASAN)
  __sanitizer_start_switch_fiber(NULL, h->caller_bottom, h->caller_size);  // never comes back
#endif
  setcontext(&h->caller);
}

int ms__rt_run_on_stack(void (*fn)(void *), void *arg, int64_t stack_size, long page) {
  size_t size = (size_t)stack_size, len = size + (size_t)page;
  char *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                   -1, 0);
  if (map == MAP_FAILED) return -errno;
  // The guard page: running off the stack faults, as on a thread's.
  if (mprotect(map, (size_t)page, PROT_NONE) != 0) {
    int e = -errno;
    munmap(map, len);
    return e;
  }
  // The runtime's own memory: the replay's allocator calls are its component's.
  hop *h = ms__rt_own_calloc(1, sizeof *h);
  if (!h) {
    munmap(map, len);
    return -ENOMEM;
  }
  h->fn = fn;
  h->arg = arg;
  long slack = ms__prim_get_timer_slack();  // the engine sets its own: the caller's comes back
  int rc = getcontext(&h->fiber);
  if (rc == 0) {
    h->fiber.uc_stack.ss_sp = map + page;
    h->fiber.uc_stack.ss_size = size;
    h->fiber.uc_link = NULL;  // the trampoline switches back itself
    uintptr_t p = (uintptr_t)h;
    makecontext(&h->fiber, (void (*)(void))trampoline, 2, (unsigned)(p >> 16 >> 16),
                (unsigned)(p & 0xffffffffu));
#if defined(MS__VALGRIND)
    unsigned vg = VALGRIND_STACK_REGISTER(map + page, map + len);
#endif
#if defined(MS__ASAN)
    __sanitizer_start_switch_fiber(&h->fake, map + page, size);
#endif
    rc = swapcontext(&h->caller, &h->fiber);
#if defined(MS__ASAN)
    __sanitizer_finish_switch_fiber(h->fake, NULL, NULL);
#endif
#if defined(MS__VALGRIND)
    VALGRIND_STACK_DEREGISTER(vg);
#endif
  }
  rc = rc == 0 ? 0 : -errno;
  if (slack > 0) (void)ms__prim_set_timer_slack((unsigned long)slack);
  ms__rt_own_free(h);
  munmap(map, len);
  return rc;
}
