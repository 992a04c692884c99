/* recorder/sampler.c: the timer that samples the recorded thread's stack
 * between allocator calls. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "internal.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

void ms__rec_sampler_arm(pid_t tid) {
  if (ms__rec.sample_hz <= 0) return;
  if (ms__rec.timer_ok) {
    timer_delete(ms__rec.timer);
    ms__rec.timer_ok = 0;
  }
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = ms__rec.sig;
  sev.sigev_notify_thread_id = tid;
  if (timer_create(CLOCK_MONOTONIC, &sev, &ms__rec.timer) != 0) return;
  long ns = 1000000000L / ms__rec.sample_hz;
  if (ns < 1000) ns = 1000;
  struct itimerspec its = {{ns / 1000000000L, ns % 1000000000L},
                           {ns / 1000000000L, ns % 1000000000L}};
  if (timer_settime(ms__rec.timer, 0, &its, NULL) == 0)
    ms__rec.timer_ok = 1;
  else
    timer_delete(ms__rec.timer);
}

static uintptr_t context_sp(void *ucv) {
#if defined(__x86_64__)
  return (uintptr_t)((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  return (uintptr_t)((ucontext_t *)ucv)->uc_mcontext.sp;
#else
  (void)ucv;
  return ms__prim_sp();
#endif
}

static void on_sample(int sig, siginfo_t *si, void *ucv) {
  (void)sig;
  (void)si;
  __atomic_store_n(&ms__rec_tick, __atomic_load_n(&ms__rec_tick, __ATOMIC_RELAXED) + 1,
                   __ATOMIC_RELAXED);
  tstate *ts = ms__rec_ts;
  if (!ts || !ts->is_rec || ts->in_hook || ts->guard ||
      !__atomic_load_n(&ms__rec_on, __ATOMIC_RELAXED))
    return;
  int e = errno;
  ts->in_hook = 1;
  CBARRIER();
  int64_t t0 = raw_now();
  int64_t s = (int64_t)(ts->base - context_sp(ucv));
  if (s < 0) s = 0;
  ts->now = t0;
  coalesce(ts, t0, s, __atomic_load_n(&ms__rec_heap, __ATOMIC_RELAXED), ts->tag);
  ts->samples++;
  ts->sample_raw += (uint64_t)(raw_now() - t0);
  CBARRIER();
  ts->in_hook = 0;
  errno = e;
}

int ms__rec_sampler_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_sigaction = on_sample;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  return sigaction(ms__rec.sig, &sa, NULL) == 0 ? 0 : -1;
}

void ms__rec_sampler_pause(void) {
  if (!ms__rec.timer_ok) return;
  struct itimerspec off = {{0, 0}, {0, 0}};
  timer_settime(ms__rec.timer, 0, &off, NULL);
}

void ms__rec_sampler_stop(void) {
  if (!ms__rec.timer_ok) return;
  timer_delete(ms__rec.timer);
  ms__rec.timer_ok = 0;
}

void ms__rec_sampler_forget(void) { ms__rec.timer_ok = 0; }
