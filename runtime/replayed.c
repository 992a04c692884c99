// The replayed trace: a measured replay as a trace of the original's rows.
#include <errno.h>
#include <gnu/libc-version.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "internal.h"
#include "memstub/work.h"
#include "prim.h"

/* ---- the replayed trace ---------------------------------------------------- */

static int set_meta(memstub_trace *t, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int set_meta(memstub_trace *t, const char *key, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return memstub_trace_set_meta(t, key, buf);
}

static int add_meta(memstub_trace *t, const memstub_replay *r, int64_t clamped) {
  const struct memstub_stub *s = r->stub;
  const memstub_replay_info *in = &r->info;
  struct utsname u;
  if (uname(&u) != 0) snprintf(u.release, sizeof u.release, "unknown");
  char date[64] = "unknown";
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm)) strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  char margin[64];
  if (r->opt.timing == MEMSTUB_TIMING_USLEEP)
    snprintf(margin, sizeof margin, "none");
  else if (r->opt.margin_ns == MEMSTUB_MARGIN_ADAPTIVE)
    snprintf(margin, sizeof margin, "adaptive, %lld ns at the end, re-aim %lld ns",
             (long long)in->margin_ns, (long long)in->reaim_ns);
  else if (r->opt.margin_ns == MEMSTUB_MARGIN_MODEL)
    snprintf(margin, sizeof margin, "model, %lld ns after a re-aim of %lld ns",
             (long long)in->margin_ns, (long long)in->reaim_ns);
  else
    snprintf(margin, sizeof margin, "%lld ns", (long long)in->margin_ns);
  static const char *tc[] = {"unknown (mallinfo2 does not see the allocator)",
                             "active, a bin would not fill", "off", "active, filled"};
  int rc = 0;
  if (!rc) rc = set_meta(t, "source", "memstub replay of %s", s->source ? s->source : "(memory)");
  if (!rc) rc = set_meta(t, "stub", "%s", s->name && *s->name ? s->name : "(unnamed)");
  if (!rc) rc = set_meta(t, "transforms", "%s", s->transforms ? s->transforms : "none");
  if (!rc) rc = set_meta(t, "calibration", "%s", s->calibration ? s->calibration : "none");
  if (!rc) rc = set_meta(t, "timing", "%s", memstub_timing_name(r->opt.timing));
  if (!rc) rc = set_meta(t, "margin", "%s", margin);
  if (!rc && r->opt.sched_slice_ns > 0)  // --slice: what was asked, and whether the kernel took it
    rc = set_meta(t, "sched_slice", "%lld ns asked, %s", (long long)r->opt.sched_slice_ns,
                  in->sched_slice_ns > 0 ? "granted"
                                           : "not granted (a kernel before 6.12, or a replay on "
                                             "a caller's thread)");
  if (!rc && in->cost_model == MEMSTUB_COST_ONLINE)  // docs/runtime.md, "The online cost model"
    rc = set_meta(t, "cost_model", "online, %lld rows learnt, %lld ns of lead in all",
                  (long long)in->cost_rows, (long long)in->cost_lead_ns);
  if (!rc) rc = set_meta(t, "duration_ns", "%lld (target %lld)", (long long)in->duration_ns,
                         (long long)in->target_ns);
  if (!rc && in->cpu_ns >= 0)
    rc = set_meta(t, "cpu_ns", "%lld (%.2f %% of the duration)", (long long)in->cpu_ns,
                  in->duration_ns > 0 ? 100.0 * (double)in->cpu_ns / (double)in->duration_ns : 0.0);
  if (!rc && in->run_delay_ns >= 0)
    rc = set_meta(t, "off_cpu_ns", "%lld (the replay thread waited this long for a CPU)",
                  (long long)in->run_delay_ns);
  if (!rc) rc = set_meta(t, "points", "%lld", (long long)in->points);
  // The work as work (work_loops.c); none counted when the stub's start took its CPU (call.c).
  if (!rc && s->abi >= MEMSTUB_STUB_ABI_WORK && s->cpu)
    rc = set_meta(t, "work", "%.0f ns counted, memory share %g, run in %lld ns of CPU%s",
                  in->work_ns, in->work_mem_share, (long long)in->work_cpu_ns,
                  in->work_ns > 0 ? ""
                                  : " (none counted: a stub without a calibration's loop rate "
                                    "or a memory share spins its recorded CPU time on the "
                                    "thread's clock instead, docs/runtime.md, \"Work as "
                                    "work\")");
  if (!rc) rc = set_meta(t, "stack_size", "%lld", (long long)in->stack_size);
  int calls = ms__rt_stub_calls(s);  // the call replay (call_replay.c)
  if (!rc && !calls && s->abi >= MEMSTUB_STUB_ABI_WORK && s->cpu)
    rc = set_meta(t, MEMSTUB_WORK_BLOCK_FREES_META, "%lld%s", (long long)s->block_frees,
                  MS__RT_BLOCK_FREES_WHY);
  if (!rc && calls)
    rc = set_meta(t, "replay", "call for call: %lld calls of at most %lld blocks live; heap_bytes "
                  "the requested bytes of the live blocks, heap_usable their usable size",
                  (long long)s->ncallcount, (long long)s->ncallblocks);
  if (!rc)
    rc = set_meta(t, "tcache", "%s", calls ? "left as it is (the call replay fills none)"
                                           : tc[in->tcache + 2]);
  // memstub compare reads "unknown" here and leaves the heap out.
  if (!rc && !memstub_replay_heap_measured(r))
    rc = set_meta(t, "heap", "unknown (%s); heap_bytes are the stub's heap_base",
                  MEMSTUB_HEAP_NOT_MEASURED);
  if (!rc && !calls) rc = set_meta(t, "heap_pad", "%lld", (long long)in->heap_pad);
  if (!rc && clamped) rc = set_meta(t, "heap_clamped_rows", "%lld", (long long)clamped);
  // The process's own resident memory under the curve: rss_bytes are above it.
  if (!rc && in->rss_entry_bytes >= 0)
    rc = set_meta(t, "rss_entry_bytes",
                  "%lld (RssAnon at the replay's start: the program, its C library, the "
                  "runtime's allocations and the records; rss_bytes are above it, plus the "
                  "stub's rss_base)",
                  (long long)in->rss_entry_bytes);
  if (!rc) rc = set_meta(t, "host.cpu", "%s", ms__prim_cpu_model());
  if (!rc) rc = set_meta(t, "host.kernel", "%s %s", u.sysname, u.release);
  if (!rc) rc = set_meta(t, "host.libc", "glibc %s", gnu_get_libc_version());
  if (!rc) rc = set_meta(t, "host.compiler", "%s", __VERSION__);
  if (!rc) rc = set_meta(t, "replayed", "%s", date);
  return rc;
}

int memstub_replay_heap_measured(const memstub_replay *r) {
  return !(r->opt.measure & MEMSTUB_MEASURE_HEAP) || r->info.heap_visible;
}

/* The replayed totals of a row: the bases plus what p measured, ending at
 * `end` ns (scheduled at `target`). -ERANGE when a total leaves 64 bits: a
 * hand-edited header's bases, or a start time near 2^63. */
static int absolute(const struct memstub_stub *s, const memstub_replay_record *p, int64_t end,
                    int64_t target, int64_t v[4]) {
  return ms__add_i64(s->time0_ns, end, &v[0]) < 0 ||
                 ms__add_i64(s->stack_base, p->stack_bytes, &v[1]) < 0 ||
                 ms__add_i64(s->heap_base, p->heap_bytes, &v[2]) < 0 ||
                 ms__add_i64(s->time0_ns, target, &v[3]) < 0 ||
                 __builtin_sub_overflow(v[0], v[3], &end)
             ? -ERANGE
             : 0;
}

/* The resident columns of a row from record p into x: rss_bytes and
 * mapped_bytes above the stub's bases (what replay zero stands for in the
 * original, 0 for a stub without resident data), so that they compare with
 * the original's columns as heap_bytes does; ir < 0 leaves rss_bytes out.
 * -ERANGE when a base plus a measurement exceeds 64 bits. */
static int resident_cols(const struct memstub_stub *s, const memstub_replay_record *p,
                         int64_t *x, int ir, int im, int imi, int ima) {
  int resident = s->abi >= MEMSTUB_STUB_ABI_RESIDENT;  // layouts 2 and 3
  int64_t rb = resident && s->rss_base > 0 ? s->rss_base : 0;
  int64_t mb = resident && s->mapped_base > 0 ? s->mapped_base : 0;
  if (ir >= 0 && ms__add_i64(rb, p->rss_bytes, &x[ir]) < 0) return -ERANGE;
  if (ms__add_i64(mb, p->mapped_bytes, &x[im]) < 0) return -ERANGE;
  x[imi] = p->minor_faults;
  x[ima] = p->major_faults;
  return 0;
}

int memstub_replay_trace(const memstub_replay *r, memstub_trace **out, memstub_error *err) {
  *out = NULL;
  const unsigned need = MEMSTUB_MEASURE_TIME | MEMSTUB_MEASURE_STACK | MEMSTUB_MEASURE_HEAP;
  if ((r->opt.measure & need) != need)
    return memstub_error_set(err, -EINVAL,
                             "the replay was not measured: a replayed trace needs time, stack "
                             "and heap measurements");
  const struct memstub_stub *s = r->stub;
  int sched = (r->opt.measure & MEMSTUB_MEASURE_SCHED) != 0;
  memstub_trace *t = memstub_trace_create();
  int64_t *next = NULL;  // SCHED: next[i], the first run-queue reading at a point >= i
  int rc = t ? 0 : -ENOMEM;
  int ip = -1, it = -1, il = -1, iw = -1, ik = -1, io = -1;
  // RESIDENT: rss_bytes (when statm could be read), mapped_bytes, the faults.
  int res = (r->opt.measure & MEMSTUB_MEASURE_RESIDENT) != 0;
  int rss_known = res && r->info.entry.rss_bytes >= 0;
  int ir = -1, im = -1, imi = -1, ima = -1;
  if (!rc && (ip = memstub_trace_add_column(t, "point")) < 0) rc = ip;
  if (!rc && (it = memstub_trace_add_column(t, "target_time_ns")) < 0) rc = it;
  if (!rc && (il = memstub_trace_add_column(t, "late_ns")) < 0) rc = il;
  if (!rc && (iw = memstub_trace_add_column(t, "wake_late_ns")) < 0) rc = iw;
  if (!rc && (ik = memstub_trace_add_column(t, "work_ns")) < 0) rc = ik;
  if (!rc && sched && (io = memstub_trace_add_column(t, "off_cpu_ns")) < 0) rc = io;
  // Layout 3: the replay's work under the original's column names (work.c).
  static const char *const wcols[20] = {MEMSTUB_WORK_CALL_COLUMNS};
  int iwc = -1, iwb = -1, iwk[20];
  for (int k = 0; k < 20; k++) iwk[k] = -1;
  if (!rc && r->work) {
    if ((iwc = memstub_trace_add_column(t, MEMSTUB_WORK_CPU_COLUMN)) < 0) rc = iwc;
    if (!rc && (iwb = memstub_trace_add_column(t, MEMSTUB_WORK_BYTES_COLUMN)) < 0) rc = iwb;
    for (int k = 0; k < 20 && !rc; k++) {
      int used = 0;
      for (int64_t i = 0; i < s->numdata && !used; i++) used = r->work[i * 22 + 2 + k] != 0;
      if (used && (iwk[k] = memstub_trace_add_column(t, wcols[k])) < 0) rc = iwk[k];
    }
  }
  if (!rc && rss_known && (ir = memstub_trace_add_column(t, "rss_bytes")) < 0) rc = ir;
  if (!rc && res && (im = memstub_trace_add_column(t, "mapped_bytes")) < 0) rc = im;
  if (!rc && res && (imi = memstub_trace_add_column(t, "minor_faults")) < 0) rc = imi;
  if (!rc && res && (ima = memstub_trace_add_column(t, "major_faults")) < 0) rc = ima;
  if (!rc && sched) {
    next = malloc((size_t)(s->numdata + 1) * sizeof *next);
    if (!next) rc = -ENOMEM;
    else {
      next[s->numdata] = r->info.run_delay_end;
      for (int64_t i = s->numdata - 1; i >= 0; i--)
        next[i] = r->rec[i].run_delay_ns >= 0 ? r->rec[i].run_delay_ns : next[i + 1];
    }
  }
  // A row per point at most, and the entry: a hand-edited norig is not trusted.
  int64_t rows = s->norig <= s->numdata ? s->norig : s->numdata + 1;
  if (!rc) rc = memstub_trace_reserve(t, (size_t)rows);
  int64_t clamped = 0, row = 0, v[4];  // time, stack, heap, target time
  // Row 0 from the entry measurement unless points build it.
  if (!rc && !(s->numdata > 0 && s->point[0] == 0)) {
    const memstub_replay_record *e = &r->info.entry;
    rc = absolute(s, e, 0, 0, v);
    if (!rc && v[2] < 0) clamped++, v[2] = 0;
    if (!rc) rc = memstub_trace_append(t, v[0], v[1], v[2]);
    if (!rc) {
      int64_t *x = memstub_trace_extra_row(t, t->n - 1);
      x[ip] = 0;
      x[it] = s->time0_ns;
      x[il] = 0;
      x[iw] = 0;
      x[ik] = 0;
      if (sched) x[io] = 0;
      if (res) rc = resident_cols(s, e, x, ir, im, imi, ima);
    }
  }
  // The run-queue reading before the current row's wait (the latest at or
  // before its first point), cumulative.
  int64_t latest = r->info.entry.run_delay_ns, before = latest, first = 0;
  for (int64_t i = 0; !rc && i < s->numdata; i++) {
    if (i > 0 && s->point[i] != s->point[i - 1]) first = i;  // the row's first point
    if (r->rec[i].run_delay_ns >= 0) latest = r->rec[i].run_delay_ns;
    if (i == first) before = latest;
    if (i + 1 < s->numdata && s->point[i + 1] == s->point[i]) continue;  // not the row's last
    const memstub_replay_record *p = &r->rec[i], *f = &r->rec[first];
    row = s->point[i];
    rc = absolute(s, p, p->end_ns, p->target_ns, v);
    if (!rc && v[2] < 0) clamped++, v[2] = 0;
    if (!rc) rc = memstub_trace_append(t, v[0], v[1], v[2]);
    if (!rc) {
      int64_t *x = memstub_trace_extra_row(t, t->n - 1);
      x[ip] = row;
      x[it] = v[3];
      x[il] = v[0] - v[3];
      x[iw] = f->start_ns - f->target_ns;
      x[ik] = p->end_ns - f->start_ns;
      // From the row's wait to the next sleep after it (or the end).
      if (sched) x[io] = before >= 0 && next[i + 1] >= before ? next[i + 1] - before : -1;
      if (r->work) {  // the row's points' work; the CPU clock after the last
        x[iwc] = r->work[i * 22];
        x[iwb] = 0;
        for (int64_t j = first; j <= i; j++) {
          x[iwb] += r->work[j * 22 + 1];
          for (int k = 0; k < 20; k++)
            if (iwk[k] >= 0) x[iwk[k]] += r->work[j * 22 + 2 + k];
        }
      }
      if (res) rc = resident_cols(s, p, x, ir, im, imi, ima);
    }
  }
  free(next);
  if (!rc) rc = add_meta(t, r, clamped);
  if (rc < 0) {
    memstub_trace_free(t);
    if (rc == -ERANGE)
      return memstub_error_set(err, -EINVAL,
                               "cannot build the replayed trace: row %lld: the stub's time0_ns, "
                               "stack_base, heap_base, rss_base or mapped_base plus what was "
                               "measured exceeds 64 bits",
                               (long long)row);
    return memstub_error_set(err, rc, "cannot build the replayed trace: %s", strerror(-rc));
  }
  *out = t;
  return 0;
}
