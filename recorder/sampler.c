/* recorder/sampler.c: the timer that samples the recorded thread's stack
 * between allocator calls, and the hooks that keep it out of the program's
 * way (docs/recording.md, "What the recorder can and cannot disturb").
 *
 * The timer runs on the recorded thread's CPU clock (CLOCK_THREAD_CPUTIME_ID,
 * as CPU profilers do): the stack moves only while the thread runs, and a
 * thread that sleeps, polls or waits consumes no CPU time, so no tick lands
 * in its blocked system calls. Linux checks CPU timers at its timer
 * interrupt and, with POSIX_CPU_TIMERS_TASK_WORK (x86-64), sends the signal on
 * the way back to user space, so a system call running on the CPU is not
 * interrupted either.
 *
 * The signal is the first free real-time signal (default action, not
 * blocked) from SIGRTMAX-2 down. The program keeps its own view of it: a
 * query returns SIG_DFL (with the mask and flags the program set with it),
 * and SIG_IGN or a handler makes the recorder give the signal up (timer
 * deleted, disposition handed over: SIG_IGN must survive exec) and fall back
 * to sampling at allocator calls only. While the recorded thread blocks the signal the
 * timer is paused, so no instance of it stays pending for sigwait() to
 * collect. Both show in the trace's metadata. */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "internal.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

typedef void (*handler_fn)(int);

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static int (*real_sigprocmask)(int, const sigset_t *, sigset_t *);
static int (*real_pthread_sigmask)(int, const sigset_t *, sigset_t *);
static handler_fn (*real_signal)(int, handler_fn);
static handler_fn (*real_sysv_signal)(int, handler_fn);
static handler_fn (*real_bsd_signal)(int, handler_fn);

static struct {
  void *owner;               // the thread holding the lock on timer operations (slow paths only)
  int own;                   // our handler is on ms__rec.sig and the program has not taken it
  int blocked;               // the recorded thread blocks the signal: timer paused
  uint32_t pauses;           // how often it was paused for that
  struct sigaction prog;     // the disposition the program believes it set
  char why[160];             // why sampling fell back to allocator calls, if it did
  struct itimerspec period;  // the armed timer's period
} S;

void ms__rec_sampler_resolve(void) {
#define R(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)
  R(sigaction);
  R(sigprocmask);
  R(pthread_sigmask);
  R(signal);
  R(sysv_signal);
  R(bsd_signal);
#undef R
}

/* The lock on timer operations. A signal handler that interrupts its holder
 * and calls sigprocmask() or sigaction() again goes on without it (lock()
 * returns 0: nothing to unlock), rather than waiting for itself. */
static TLS char tls_id;

static int lock(void) {
  void *self = &tls_id, *none = NULL;
  if (__atomic_load_n(&S.owner, __ATOMIC_RELAXED) == self) return 0;
  while (
      !__atomic_compare_exchange_n(&S.owner, &none, self, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    none = NULL;
    sched_yield();
  }
  return 1;
}

// 1 when taken, 0 when this thread holds it already, -1 when another does.
static int trylock(void) {
  void *self = &tls_id, *none = NULL;
  if (__atomic_load_n(&S.owner, __ATOMIC_RELAXED) == self) return 0;
  return __atomic_compare_exchange_n(&S.owner, &none, self, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
             ? 1
             : -1;
}

static void unlock(int got) {
  if (got > 0) __atomic_store_n(&S.owner, NULL, __ATOMIC_RELEASE);
}

static void set_why(const char *fmt, int sig) {
  if (!S.why[0]) snprintf(S.why, sizeof S.why, fmt, sig);
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
  int64_t s = stack_at(ts, context_sp(ucv));
  ts->now = t0;
  ms__rec_mem_sample(ts);
  coalesce(ts, t0, s,
           row_heap(ts), ts->tag);
  ts->samples++;
  ts->sample_raw += (uint64_t)(raw_now() - t0);
  CBARRIER();
  ts->in_hook = 0;
  errno = e;
}

// s has the default action and the calling thread does not block it.
static int sig_free(int s) {
  struct sigaction o;
  sigset_t m;
  if (real_sigaction(s, NULL, &o) != 0) return 0;
  if ((o.sa_flags & SA_SIGINFO) || o.sa_handler != SIG_DFL) return 0;
  if (real_pthread_sigmask(SIG_BLOCK, NULL, &m) != 0 || sigismember(&m, s)) return 0;
  return 1;
}

// The signal: the one asked for (ms__rec.sig > 0) when it is free, else the
// first free one from SIGRTMAX-2 down to SIGRTMIN, then SIGRTMAX-1, SIGRTMAX.
static int choose_signal(void) {
  if (ms__rec.sig > 0) {
    if (sig_free(ms__rec.sig)) return ms__rec.sig;
    set_why("signal %d (--signal) has a handler, is ignored or is blocked", ms__rec.sig);
    return -1;
  }
  for (int s = SIGRTMAX - 2; s >= SIGRTMIN; s--)
    if (sig_free(s)) return s;
  for (int s = SIGRTMAX - 1; s <= SIGRTMAX; s++)
    if (sig_free(s)) return s;
  set_why("no free real-time signal (all %d have a handler, are ignored or blocked)",
          SIGRTMAX - SIGRTMIN + 1);
  return -1;
}

int ms__rec_sampler_install(void) {
  if (!real_sigaction || !real_pthread_sigmask) {
    set_why("the signal functions were not found", 0);
    return -1;
  }
  int sig = choose_signal();
  if (sig < 0) return -1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_sigaction = on_sample;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  if (real_sigaction(sig, &sa, NULL) != 0) {
    set_why("cannot install a handler on signal %d", sig);
    return -1;
  }
  ms__rec.sig = sig;
  memset(&S.prog, 0, sizeof S.prog);
  S.prog.sa_handler = SIG_DFL;
  S.own = 1;
  return 0;
}

// The calling thread blocks the signal.
static int thread_blocks_sig(void) {
  sigset_t m;
  return real_pthread_sigmask(SIG_BLOCK, NULL, &m) == 0 && sigismember(&m, ms__rec.sig);
}

/* A timer on the calling thread's CPU clock sending the signal to thread
 * tid into *timer, with S.period set; pre: locked. 1 and *blocked set when
 * made (armed unless the thread blocks the signal: then paused), else 0 with
 * the reason kept (set_why). */
static int make_timer(pid_t tid, timer_t *timer, int *blocked) {
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = ms__rec.sig;
  sev.sigev_notify_thread_id = tid;
  clockid_t clk;
  if (pthread_getcpuclockid(pthread_self(), &clk) != 0) clk = CLOCK_THREAD_CPUTIME_ID;
  if (timer_create(clk, &sev, timer) != 0) {
    set_why("timer_create on the thread's CPU clock failed (errno %d)", errno);
    return 0;
  }
  long ns = 1000000000L / ms__rec.sample_hz;
  if (ns < 1000) ns = 1000;
  S.period = (struct itimerspec){{ns / 1000000000L, ns % 1000000000L},
                                 {ns / 1000000000L, ns % 1000000000L}};
  *blocked = thread_blocks_sig();
  if (*blocked) S.pauses++;
  if (*blocked || timer_settime(*timer, 0, &S.period, NULL) == 0) return 1;
  timer_delete(*timer);
  return 0;
}

// Start sampling the calling thread (the recorded one, thread id tid) on its
// CPU clock; paused at once when it blocks the signal.
void ms__rec_sampler_arm(pid_t tid) {
  if (ms__rec.sample_hz <= 0 || !__atomic_load_n(&S.own, __ATOMIC_ACQUIRE)) return;
  int got = lock();
  if (ms__rec.timer_ok) {
    timer_delete(ms__rec.timer);
    ms__rec.timer_ok = 0;
  }
  if (make_timer(tid, &ms__rec.timer, &S.blocked)) ms__rec.timer_ok = 1;
  unlock(got);
}

/* ts's wall time with the sampling signal blocked (its rows then come only at
 * its allocator calls: record.sample_blocked_ns). Written by ts itself;
 * read at the end (ms__rec_sampler_meta). */
static void blocked_begin(tstate *ts) {
  __atomic_store_n(&ts->blk_since, ms__prim_now_ns(), __ATOMIC_RELEASE);
}
static void blocked_end(tstate *ts) {
  int64_t since = __atomic_exchange_n(&ts->blk_since, 0, __ATOMIC_ACQ_REL);
  if (since) __atomic_add_fetch(&ts->blk_ns, ms__prim_now_ns() - since, __ATOMIC_RELEASE);
}

/* --thread all: ts's own timer on its own CPU clock, its signal sent to it
 * (ts is the calling thread). A thread that starts with the signal blocked
 * has no timer (sampled at its allocator calls). */
void ms__rec_sampler_arm_thread(tstate *ts) {
  if (ms__rec.sample_hz <= 0 || !__atomic_load_n(&S.own, __ATOMIC_ACQUIRE)) return;
  int got = lock();
  if (make_timer(ts->tid, &ts->timer, &ts->tblocked))
    __atomic_store_n(&ts->timer_ok, 1, __ATOMIC_RELEASE);
  if (ts->tblocked) blocked_begin(ts);
  unlock(got);
}

void ms__rec_sampler_disarm_thread(tstate *ts) {
  blocked_end(ts);
  int got = trylock();
  if (got < 0) return;  // the timer goes with the thread's end
  if (__atomic_exchange_n(&ts->timer_ok, 0, __ATOMIC_ACQ_REL)) timer_delete(ts->timer);
  unlock(got);
}

// Every thread's timer deleted (--thread all); under the lock.
static void delete_thread_timers(void) {
  for (tstate *ts = __atomic_load_n(&ms__rec.list, __ATOMIC_ACQUIRE); ts; ts = ts->next)
    if (ts->all && __atomic_exchange_n(&ts->timer_ok, 0, __ATOMIC_ACQ_REL)) timer_delete(ts->timer);
}

void ms__rec_sampler_pause(void) {
  int got = lock();
  if (ms__rec.timer_ok) {
    struct itimerspec off = {{0, 0}, {0, 0}};
    timer_settime(ms__rec.timer, 0, &off, NULL);
  }
  unlock(got);
}

void ms__rec_sampler_stop(void) {
  // trylock: this may run in a fatal-signal handler while another thread
  // holds the lock (the process is ending: the timer goes with it).
  int got = trylock();
  if (got < 0) return;
  if (ms__rec.timer_ok) {
    timer_delete(ms__rec.timer);
    ms__rec.timer_ok = 0;
  }
  if (ms__rec.all) delete_thread_timers();
  unlock(got);
}

void ms__rec_sampler_forget(void) {
  // A forked child: no timer was inherited; give the signal back its default.
  ms__rec.timer_ok = 0;
  if (S.own && real_sigaction) {
    S.own = 0;
    real_sigaction(ms__rec.sig, &S.prog, NULL);
  }
  S.owner = NULL;
}

// The program takes the signal: no more timer, sampling at allocator calls only.
static void give_up(const char *fmt) {
  int got = lock();
  if (S.own) {
    S.own = 0;
    set_why(fmt, ms__rec.sig);
    if (ms__rec.timer_ok) {
      timer_delete(ms__rec.timer);  // also drops an instance still pending
      ms__rec.timer_ok = 0;
    }
    if (ms__rec.all) delete_thread_timers();
  }
  unlock(got);
}

static int watching(int sig) {
  return sig == ms__rec.sig && __atomic_load_n(&S.own, __ATOMIC_ACQUIRE) &&
         ms__rec.state == ST_READY;
}

static void need(void *fn) {
  if (!fn) ms__rec_ensure_ready();
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  need((void *)real_sigaction);
  if (!real_sigaction) {
    errno = ENOSYS;
    return -1;
  }
  if (!watching(sig)) return real_sigaction(sig, act, old);
  struct sigaction before = S.prog;
  if (!act || (!(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL)) {
    if (act) S.prog = *act;
    if (old) *old = before;
    return 0;
  }
  give_up(act->sa_handler == SIG_IGN && !(act->sa_flags & SA_SIGINFO)
              ? "the program set signal %d to be ignored"
              : "the program installed its own handler on signal %d");
  int rc = real_sigaction(sig, act, NULL);
  if (rc == 0 && old) *old = before;
  return rc;
}

static handler_fn signal_common(handler_fn (*real)(int, handler_fn), int sig, handler_fn h) {
  if (!real) return SIG_ERR;
  if (!watching(sig)) return real(sig, h);
  handler_fn before =
      (S.prog.sa_flags & SA_SIGINFO) ? (handler_fn)(void *)S.prog.sa_sigaction : S.prog.sa_handler;
  if (h == SIG_DFL) {
    memset(&S.prog, 0, sizeof S.prog);
    S.prog.sa_handler = h;
    return before;
  }
  give_up(h == SIG_IGN ? "the program set signal %d to be ignored"
                       : "the program installed its own handler on signal %d");
  return real(sig, h) == SIG_ERR ? SIG_ERR : before;
}

EXPORT handler_fn signal(int sig, handler_fn h) {
  need((void *)real_signal);
  return signal_common(real_signal, sig, h);
}

EXPORT handler_fn sysv_signal(int sig, handler_fn h) {
  need((void *)real_sysv_signal);
  return signal_common(real_sysv_signal, sig, h);
}

handler_fn bsd_signal(int sig, handler_fn h);  // glibc declares it only for older standards
EXPORT handler_fn bsd_signal(int sig, handler_fn h) {
  need((void *)real_bsd_signal);
  return signal_common(real_bsd_signal, sig, h);
}

/* A change of the recorded thread's mask: pause the timer before the signal
 * gets blocked (an instance already pending is delivered to our handler when
 * timer_settime returns, while it is still unblocked), resume it once the
 * signal is unblocked again. */
// --thread all: the same for the calling thread's own timer.
static int mask_thread(tstate *ts, int (*real)(int, const sigset_t *, sigset_t *), int how,
                       const sigset_t *set, sigset_t *old) {
  static const struct itimerspec off = {{0, 0}, {0, 0}};
  int got = lock();
  if ((how == SIG_BLOCK || how == SIG_SETMASK) && sigismember(set, ms__rec.sig) && !ts->tblocked &&
      ts->timer_ok) {
    timer_settime(ts->timer, 0, &off, NULL);
    ts->tblocked = 1;
    blocked_begin(ts);
    S.pauses++;
  }
  unlock(got);
  int rc = real(how, set, old);
  int e = errno;
  if (ts->tblocked) {
    got = lock();
    if (ts->tblocked && ts->timer_ok && !thread_blocks_sig()) {
      timer_settime(ts->timer, 0, &S.period, NULL);
      ts->tblocked = 0;
      blocked_end(ts);
    }
    unlock(got);
  }
  errno = e;
  return rc;
}

static int mask_common(int (*real)(int, const sigset_t *, sigset_t *), int how, const sigset_t *set,
                       sigset_t *old) {
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  tstate *ts = ms__rec_ts;
  if (!set || !ts || !ts->is_rec || !watching(ms__rec.sig)) return real(how, set, old);
  if (ts->all) return mask_thread(ts, real, how, set, old);
  int got = lock();
  if ((how == SIG_BLOCK || how == SIG_SETMASK) && sigismember(set, ms__rec.sig) && !S.blocked &&
      ms__rec.timer_ok) {
    struct itimerspec off = {{0, 0}, {0, 0}};
    timer_settime(ms__rec.timer, 0, &off, NULL);
    S.blocked = 1;
    S.pauses++;
  }
  unlock(got);
  int rc = real(how, set, old);
  int e = errno;
  if (S.blocked) {
    got = lock();
    if (S.blocked && ms__rec.timer_ok && !thread_blocks_sig()) {
      timer_settime(ms__rec.timer, 0, &S.period, NULL);
      S.blocked = 0;
    }
    unlock(got);
  }
  errno = e;
  return rc;
}

int ms__rec_real_sigmask(int how, const sigset_t *set, sigset_t *old) {
  return real_pthread_sigmask ? real_pthread_sigmask(how, set, old) : ENOSYS;
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  need((void *)real_sigprocmask);
  return mask_common(real_sigprocmask, how, set, old);
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  need((void *)real_pthread_sigmask);
  return mask_common(real_pthread_sigmask, how, set, old);
}

/* --thread all: each thread that blocked the sampling signal, as THR:NS
 * (its trace number, its wall time blocked), for the summary's warning
 * (cli/record_threads.c). */
static void blocked_meta(void) {
  char buf[1024];
  size_t n = 0;
  int64_t now = ms__prim_now_ns();
  for (tstate *ts = __atomic_load_n(&ms__rec.list, __ATOMIC_ACQUIRE); ts; ts = ts->next) {
    int64_t since = __atomic_load_n(&ts->blk_since, __ATOMIC_ACQUIRE);
    int64_t ns = __atomic_load_n(&ts->blk_ns, __ATOMIC_ACQUIRE) + (since ? now - since : 0);
    if (!ts->all || ns <= 0 || n >= sizeof buf - 48) continue;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%d:%lld", n ? " " : "", ts->thr, (long long)ns);
  }
  if (n) ms__rec_meta(MS__REC_META_SAMPLE_BLOCKED, "%s", buf);
}

void ms__rec_sampler_meta(void) {
  if (ms__rec.sample_hz <= 0) return;  // no timer asked for
  ms__rec_meta("record.sample_clock", "%s",
               ms__rec.all ? "each thread's own CPU time, one timer per thread (checked by the "
                             "kernel at its timer interrupt)"
                           : "the recorded thread's CPU time (checked by the kernel at its timer "
                             "interrupt)");
  if (ms__rec.sig > 0) ms__rec_meta("record.sample_signal", "%d", ms__rec.sig);
  if (S.pauses)
    ms__rec_meta("record.sample_pauses", "%u (the recorded thread blocked the signal)", S.pauses);
  if (ms__rec.all) blocked_meta();
  if (S.blocked && S.own)
    set_why("the recorded thread blocked signal %d (sampling paused until the end)", ms__rec.sig);
  if (S.why[0])
    ms__rec_meta(MS__REC_META_SAMPLING_OFF, "%s; stack sampled at allocator calls only", S.why);
}
