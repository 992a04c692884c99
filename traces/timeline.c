// The timeline a stub of a recorded trace replays: the recorder's cost out
// of the rows' times and CPU time (timeline.h; docs/recording.md, "The
// stub's timeline").
#include "timeline.h"
#include "whatif.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memstub/work.h"
#include "ms_common.h"

#define NC MEMSTUB_WORK_CALLS

/* Arithmetic on figures from outside (metadata, rows) that cannot
 * overflow: sums and differences saturate at the int64 range, and a
 * double is rounded into [0, 2^53] (a row of 104 days; a scale or a cost
 * so absurd that it goes beyond is cut there, and the trace's timeline
 * refused: ms__timeline_trace). */
#define MS__TL_MAX_NS ((int64_t)1 << 53)
static int64_t sadd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
static int64_t ssub(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}
static int64_t rnd(double v) {
  if (!(v > 0)) return 0;  // negative, or NaN
  return v >= (double)MS__TL_MAX_NS ? MS__TL_MAX_NS : llround(v);
}

// A recorder's metadata value as a number >= 0, or 0 when absent or not a
// number ("not measured"); 2^53 at most.
static double meta_num(const memstub_trace *t, const char *key) {
  const char *v = memstub_trace_get_meta(t, key);
  double d;
  if (!v || ms__parse_double(v, &d) < 0 || !(d >= 0)) return 0;
  return d < (double)MS__TL_MAX_NS ? d : (double)MS__TL_MAX_NS;  // beyond: absurd, and cut
}

/* A count of ns memstub record wrote (reference.*, outside.*) into *out:
 * 1 when present, 0 when absent (*out -1), -EINVAL when not a count. */
static int meta_ns(const memstub_trace *t, const char *key, int64_t *out, memstub_error *err) {
  const char *v = memstub_trace_get_meta(t, key);
  *out = -1;
  if (!v) return 0;
  char q[MS__QUOTE_MAX + 4];
  if (ms__parse_i64(v, strlen(v), out) < 0 || *out < 0)
    return memstub_error_set(err, -EINVAL, "metadata %s: '%s' is not a count of ns (>= 0)", key,
                             ms__quote(v, strlen(v), 24, q));
  return 1;
}

/* The fit of a cost from outside: (recorded - reference - the samples' own
 * cost) over calls allocator calls, 0 when the recording was no slower. */
static double fit(ms__timeline *tl, double rec, double ref, double samples, double calls) {
  double d = rec - ref - samples;
  if (d <= 0 || calls <= 0) {
    tl->unfit = "the recording was no slower than the reference runs beyond its samples' cost: "
                "nothing taken out per call";
    return 0;
  }
  return d / calls;
}

/* A trace of the whole run of a program that had one thread: its rows hold
 * all of the run the recorder saw, so their totals can be set to the
 * reference's. Recorded with --thread main, or with every thread (the
 * default) when there was only the one. */
static int whole_run(const memstub_trace *t) {
  const char *r = memstub_trace_get_meta(t, "record.regions"),
             *th = memstub_trace_get_meta(t, "record.thread");
  return r && strncmp(r, "none", 4) == 0 && th &&
         (strcmp(th, "main") == 0 || strcmp(th, "all") == 0) &&
         meta_num(t, "record.threads") <= 1 && memstub_trace_column(t, "thread") < 0;
}

/* A trace of the whole run of a process with several threads, every one
 * recorded (or one of them, split out by the generator with the process's
 * metadata): the figures from outside are the process's, the sum of its
 * threads'. The number of threads, 0 when not such a trace. */
static int64_t process_threads(const memstub_trace *t) {
  const char *th = memstub_trace_get_meta(t, "record.thread"),
             *r = memstub_trace_get_meta(t, "record.regions");
  double n = meta_num(t, "record.threads");
  int whole = !r || strncmp(r, "none", 4) == 0;  // a region is a part: per call
  return whole && th && strcmp(th, "all") == 0 && n > 1 ? (int64_t)n : 0;
}

/* Fit a process of several threads (tl->threads set; the reference's and
 * the recording's CPU figures known): the recorder's own figures first
 * (samples: the process's samples over its CPU time), then the rest of the
 * difference as a slowing of the whole process, every thread's CPU time by
 * one factor and its waiting by the process's wall-time ratio. The
 * per-call fit of the other models would put the process's difference on
 * whichever thread calls the allocator: xz's workers compute with a few
 * dozen calls, and its stub became 1.6x longer than its recording. */
static void fit_process(ms__timeline *tl, double samples) {
  double rec = (double)tl->rec_cpu_ns, own = (double)tl->events * tl->own_per_call + samples;
  tl->per_cpu_ns = rec > 0 ? samples / rec : 0;
  if (tl->per_cpu_ns > 0.5) tl->per_cpu_ns = 0.5;
  tl->cpu_per_call = tl->wall_per_call = tl->own_per_call;
  double left = rec - own, ref = (double)tl->ref_cpu_ns;
  /* On the rows' figures the reference also holds the process's start and
   * exit, which the rows do not: they take it, within MS__TL_ROWS_SCALE_MAX
   * (as a whole run of one thread's do: node's rows, 347 ms after the
   * recorder's own figures, for a reference of 361 ms). */
  if (left > 0 && (ref < left || (tl->rows_fit && ref <= MS__TL_ROWS_SCALE_MAX * left))) {
    tl->cpu_scale = ref / left;
  } else {
    tl->cpu_scale = 1.0;
    tl->unfit = "the recording used no more CPU time than the reference runs beyond the "
                "recorder's own figures: its threads' CPU time kept";
  }
  double w = (double)tl->ref_wall_ns, rw = (double)tl->rec_wall_ns;
  tl->wait_scale = rw > 0 && (w < rw || (tl->rows_fit && w <= MS__TL_ROWS_SCALE_MAX * rw)) ? w / rw : 1.0;
}

/* The waiting the rows hold as ms__timeline_rows takes it: each row's wall
 * time less its CPU time, a row with more CPU than wall time (the clocks'
 * rounding, a CPU time extrapolated ahead) counting 0, not less. The hash
 * host's component: 0.13 ms net, 0.6 ms this way; scaled by the net, its
 * waiting came to 12 ms where the reference runs had 2.6 ms (the stub 220
 * ms for a span of 210). */
static int64_t rows_waiting(const memstub_trace *t, int ccol) {
  int64_t w = 0;
  for (size_t i = 1; ccol >= 0 && i < t->n; i++) {
    int64_t d = ssub(t->pts[i].time_ns, t->pts[i - 1].time_ns);
    int64_t c = ssub(memstub_trace_extra_row(t, i)[ccol], memstub_trace_extra_row(t, i - 1)[ccol]);
    if (d > c) w = sadd(w, ssub(d, c));
  }
  return w;
}

int ms__timeline_curve_parse(const char *v, int64_t *calls, int64_t *span, int64_t *stride,
                             int64_t **w, int64_t *nw, memstub_error *err) {
  const char *p = v;
  if (w) *w = NULL;
  *nw = 0;
  int64_t head[3] = {0, 0, 0}, *out = NULL, n = 0, cap = 0, prev = 0;
  for (int k = 0;; k++) {
    while (*p == ' ') p++;
    if (!*p) break;
    size_t len = strcspn(p, " ");
    int64_t x;
    if (ms__parse_i64(p, len, &x) < 0 || x < 0) {
      char q[MS__QUOTE_MAX + 4];
      free(out);
      return memstub_error_set(err, -EINVAL, "metadata %s: field %d: '%s' is not a count (>= 0)",
                               MS__TL_REF_CURVE, k + 1, ms__quote(p, len, 24, q));
    }
    p += len;
    if (k < 3) {
      head[k] = x;
      continue;
    }
    if (k == 3 && (head[0] < 1 || head[1] < 1 || head[2] < 1)) break;  // said below
    const char *why = x < prev ? "is before the time before it" : x > head[1] ? "is beyond the span" : NULL;
    if (!why && n > head[0] / head[2]) why = "is a point beyond the calls counted";
    if (why) {
      free(out);
      return memstub_error_set(err, -EINVAL, "metadata %s: field %d: %lld %s",
                               MS__TL_REF_CURVE, k + 1, (long long)x, why);
    }
    prev = x;
    if (w && n == cap) {
      int64_t *o = realloc(out, (size_t)(cap = cap ? 2 * cap : 256) * sizeof *o);
      if (!o) {
        free(out);
        return memstub_error_set(err, -ENOMEM, "out of memory");
      }
      out = o;
    }
    if (w) out[n] = x;
    n++;
  }
  if (n == 0 || head[0] < 1 || head[1] < 1 || head[2] < 1) {  // (head set when n > 0)
    char q[MS__QUOTE_MAX + 4];
    free(out);
    return memstub_error_set(err, -EINVAL,
                             "metadata %s: '%s' is not CALLS SPAN STRIDE and at least one time, "
                             "each >= 1",
                             MS__TL_REF_CURVE, ms__quote(v, strlen(v), 40, q));
  }
  *calls = head[0], *span = head[1], *stride = head[2], *nw = n;
  if (w) *w = out;
  return 0;
}

/* The trace's clock at the calls (MS__TL_REF_CURVE), as
 * ms__timeline_curve_parse reads it; 1 when given, 0 when absent, or its
 * error. */
static int curve_read(const memstub_trace *t, int64_t *calls, int64_t *span, int64_t *stride,
                      int64_t **w, int64_t *nw, memstub_error *err) {
  const char *v = memstub_trace_get_meta(t, MS__TL_REF_CURVE);
  if (w) *w = NULL;
  *nw = 0;
  if (!v) return 0;
  int rc = ms__timeline_curve_parse(v, calls, span, stride, w, nw, err);
  return rc < 0 ? rc : 1;
}


// The trace's allocator calls over its rows (negative counts, refused later, as 0).
static double trace_calls(const memstub_trace *t) {
  static const char *const cols[NC] = {MEMSTUB_WORK_CALL_COLUMNS};
  double n = 0;
  for (int k = 0; k < NC; k++) {
    int c = memstub_trace_column(t, cols[k]);
    for (size_t i = 1; c >= 0 && i < t->n; i++)
      if (memstub_trace_extra_row(t, i)[c] > 0) n += (double)memstub_trace_extra_row(t, i)[c];
  }
  return n;
}

/* The clock at the calls (MS__TL_REF_CURVE) for a fit whose trace is the
 * span the reference run timed (one: not a region of several occurrences):
 * the rows are placed by it when the reference counted the calls the trace
 * has (within 1 %: a run may differ a little), else tl->curve_unused says
 * why not. 0, or -EINVAL naming the field of a curve that is none. */
static int curve_use(const memstub_trace *t, ms__timeline *tl, int one, memstub_error *err) {
  int64_t kc, ks, kst, kn;
  int rc = curve_read(t, &kc, &ks, &kst, NULL, &kn, err);
  if (rc <= 0) return rc;
  double have = trace_calls(t);
  if (!one)
    tl->curve_unused = "the clock at the calls is of one occurrence, the span of several";
  else if (fabs(have - (double)kc) > 0.01 * (double)kc)
    tl->curve_unused = "the reference run counted another number of calls than the trace has: "
                       "the cost taken out evenly per call";
  else
    tl->curve_points = kn, tl->curve_calls = kc;
  return 0;
}

int ms__timeline_model(const memstub_trace *t, ms__timeline *tl, memstub_error *err) {
  static const char *const cols[NC] = {MEMSTUB_WORK_CALL_COLUMNS};
  memset(tl, 0, sizeof *tl);
  tl->ref_wall_ns = tl->ref_cpu_ns = tl->rec_wall_ns = tl->rec_cpu_ns = -1;
  tl->wait_scale = -1;
  int rs;
  if ((rs = meta_ns(t, MS__TL_START_WALL, &tl->start_wall_ns, err)) < 0 ||
      (rs = meta_ns(t, MS__TL_START_CPU, &tl->start_cpu_ns, err)) < 0)
    return rs;
  int any = 0;
  for (int k = 0; k < NC; k++) any |= memstub_trace_column(t, cols[k]) >= 0;
  // Only a trace of memstub record has the figures; without call columns
  // there is nothing to spread a per-call cost over, but a run of no call
  // in its rows (gzip -9: one, before its first row) still slowed: with
  // reference runs it is fitted as a whole (it was left as recorded: gzip's
  // stub 108 ms for its 89 ms).
  if (!memstub_trace_get_meta(t, "record.cost_ns_per_event") ||
      (!any && !memstub_trace_get_meta(t, MS__TL_REF_WALL)))
    return 0;
  tl->kind = MS__TL_OWN;
  tl->own_per_call = tl->wall_per_call = tl->cpu_per_call = meta_num(t, "record.cost_ns_per_event");
  tl->events = (int64_t)meta_num(t, "record.events");
  int ccol = memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN);
  /* The samples: the timer's (record.cost_ns_per_sample times
   * record.samples) and the memory samples at allocator calls and region
   * boundaries (record.memory_samples less the timer's, times
   * record.cost_ns_per_memory_sample), spread over the CPU time in
   * proportion to a row's: the trace does not say which rows took them. */
  double ticks = meta_num(t, "record.samples"), samples = ticks * meta_num(t, "record.cost_ns_per_sample");
  double mem = meta_num(t, "record.memory_samples") - ticks;
  if (mem > 0) samples += mem * meta_num(t, "record.cost_ns_per_memory_sample");
  int64_t total = 0;  // the trace's CPU time
  if (ccol >= 0 && t->n > 1) {
    total = ssub(memstub_trace_extra_row(t, t->n - 1)[ccol], memstub_trace_extra_row(t, 0)[ccol]);
    if (total > 0) tl->per_cpu_ns = samples / (double)total;
    if (tl->per_cpu_ns > 0.5) tl->per_cpu_ns = 0.5;  // a figure that absurd is not believed
  }
  int rc, has_ref, has_rec;
  if ((rc = has_ref = meta_ns(t, MS__TL_REF_WALL, &tl->ref_wall_ns, err)) < 0 ||
      (rc = meta_ns(t, MS__TL_REF_CPU, &tl->ref_cpu_ns, err)) < 0 ||
      (rc = has_rec = meta_ns(t, MS__TL_OUT_WALL, &tl->rec_wall_ns, err)) < 0 ||
      (rc = meta_ns(t, MS__TL_OUT_CPU, &tl->rec_cpu_ns, err)) < 0 ||
      (rc = meta_ns(t, MS__TL_REF_RUNS, &tl->ref_runs, err)) < 0)
    return rc;
  if (!has_ref) {
    tl->ref_runs = 0;
    return 0;
  }
  if (!has_rec)
    return memstub_error_set(err, -EINVAL,
                             "metadata %s without %s: the reference runs need the recording's own "
                             "wall time, measured the same way (memstub record --reference)",
                             MS__TL_REF_WALL, MS__TL_OUT_WALL);
  if (tl->ref_runs < 1) tl->ref_runs = 1;
  /* Regions whose span was timed in the reference runs: the trace is that
   * span, so its totals are set to theirs, as a whole run's are. The per-call
   * fit spread the whole run's difference over every call alike: the hash
   * host's component (800k calls at 400k live blocks, each costing the
   * recorder more than its host's calls, and its own work slowed by the
   * recorder's cache misses) came to 256-317 ms for 206-225 ms unrecorded. */
  int64_t rwall, rcpu;
  if ((rc = meta_ns(t, MS__TL_REF_REGION_WALL, &rwall, err)) < 0 ||
      (rc = meta_ns(t, MS__TL_REF_REGION_CPU, &rcpu, err)) < 0)
    return rc;
  const char *reg = memstub_trace_get_meta(t, "record.regions");
  /* Every occurrence recorded: the reference runs' span is of as many, or
   * of something else (a program whose runs differ). */
  int64_t rocc, tocc;
  if ((rc = meta_ns(t, MS__TL_REF_REGION_OCC, &rocc, err)) < 0 ||
      (rc = meta_ns(t, "record.region_occurrences", &tocc, err)) < 0)
    return rc;
  if (rwall > 0 && rocc >= 0 && tocc >= 0 && rocc != tocc &&
      !memstub_trace_get_meta(t, "record.occurrence")) {
    tl->region_unused = "the reference runs timed another number of region occurrences than "
                        "the recording had: their span is not the trace's, fitted per call";
    rwall = -1;
  }
  if (rwall > 0 && rcpu >= 0 && ccol >= 0 && reg && strncmp(reg, "none", 4) != 0 &&
      memstub_trace_column(t, "thread") < 0 && t->n > 1) {
    int64_t span = ssub(t->pts[t->n - 1].time_ns, t->pts[0].time_ns), waits = rows_waiting(t, ccol);
    tl->kind = MS__TL_FITTED;
    tl->whole = tl->region = 1;
    tl->ref_wall_ns = rwall, tl->ref_cpu_ns = rcpu < rwall ? rcpu : rwall;
    tl->rec_wall_ns = span, tl->rec_cpu_ns = total;
    tl->cpu_per_call = tl->wall_per_call =
        fit(tl, (double)total, (double)tl->ref_cpu_ns, samples, trace_calls(t));
    tl->wait_scale = waits > 0 ? (double)(rwall - tl->ref_cpu_ns) / (double)waits : 1.0;
    return curve_use(t, tl, rocc == 1, err);
  }
  if ((tl->threads = process_threads(t)) > 0 && tl->ref_cpu_ns >= 0 && tl->rec_cpu_ns >= 0 &&
      ccol >= 0) {
    tl->kind = MS__TL_FITTED;
    /* The rows' own figures when given: the recording from outside also
     * holds the recorder's setup and its writing of the trace, which are
     * not in the rows (node: 59 ms of its 495 ms of CPU time), and fitting
     * to it took that out of the rows too (its stubs 0.94-0.96 of the
     * reference's wall time). */
    int64_t rw, rc2;
    if ((rc = meta_ns(t, MS__TL_ROWS_WALL, &rw, err)) < 0 ||
        (rc = meta_ns(t, MS__TL_ROWS_CPU, &rc2, err)) < 0)
      return rc;
    if (rw > 0 && rc2 >= 0) tl->rec_wall_ns = rw, tl->rec_cpu_ns = rc2, tl->rows_fit = 1;
    fit_process(tl, samples);
    return 0;
  }
  tl->threads = 0;
  if (tl->events <= 0) {
    tl->unfit = "the run made no allocator call to take a cost out at: the recorder's own "
                "figures";
    return 0;
  }
  tl->kind = MS__TL_FITTED;
  double e = (double)tl->events;
  int cpu = tl->ref_cpu_ns >= 0 && tl->rec_cpu_ns >= 0 && ccol >= 0;
  int64_t rec_wait = tl->rec_wall_ns - tl->rec_cpu_ns, ref_wait = tl->ref_wall_ns - tl->ref_cpu_ns;
  /* A part of a run (or a whole run without its waiting) of few calls, and
   * no figure of the recorder's own to weigh them: the difference from the
   * reference (its samples' disturbance, the machine) is the run's slowing,
   * not a cost of those few calls, which left the rows between them as slow
   * as recorded (liblzma's encoder: 39 calls, 5 ms each, 20 ms of 5.9 s taken
   * out). Fitted as a process of several threads is. */
  if (cpu && tl->own_per_call <= 0 && tl->events < MS__TL_FEW_CALLS &&
      !(whole_run(t) && ref_wait >= 0)) {
    tl->few = 1;
    fit_process(tl, samples);
    return 0;
  }
  /* The recorder's work is CPU time: per call, out of a row's CPU time and
   * so out of its interval; the waiting (wall less CPU) the recording did
   * beyond the reference's is the host's, and each row's waiting is scaled
   * to the reference's. A whole run: the trace's own CPU time and waiting
   * become the reference's; a part: the whole run's difference per call
   * and the process's waiting ratio. */
  if (cpu && whole_run(t) && ref_wait >= 0) {
    tl->whole = 1;
    double calls = trace_calls(t);
    tl->no_calls = calls <= 0;
    tl->cpu_per_call = tl->wall_per_call =
        tl->no_calls ? 0 : fit(tl, (double)total, (double)tl->ref_cpu_ns, samples, calls);
    int64_t waits = rows_waiting(t, ccol);
    tl->wait_scale = waits > 0 ? (double)ref_wait / (double)waits : 1.0;
    if (!tl->no_calls && (rc = curve_use(t, tl, 1, err)) < 0) return rc;
  } else if (cpu && rec_wait > 0 && ref_wait >= 0) {
    tl->cpu_per_call = tl->wall_per_call =
        fit(tl, (double)tl->rec_cpu_ns, (double)tl->ref_cpu_ns, samples, e);
    tl->wait_scale = (double)ref_wait / (double)rec_wait;
  } else {
    // No CPU figures, or threads that ran at once (CPU beyond the wall time): per call.
    tl->wall_per_call = fit(tl, (double)tl->rec_wall_ns, (double)tl->ref_wall_ns, samples, e);
    if (cpu) tl->cpu_per_call = fit(tl, (double)tl->rec_cpu_ns, (double)tl->ref_cpu_ns, samples, e);
  }
  // The recorder's fixed costs (loading it, its tables, writing the trace)
  // count as calls' too: in a run of few calls they are most of the difference.
  // (A whole run's fit is of its rows alone.)
  if (!tl->whole &&
      (tl->own_per_call > 0 ? tl->wall_per_call > 10 * tl->own_per_call : tl->events < 1024))
    tl->caveat = "may be mostly the recorder's fixed costs (loading it, writing the trace), "
                 "which it counts as the calls' too: few allocator calls, or a figure far above "
                 "the recorder's own";
  return 0;
}

/* Each row placed at the reference's time of its calls (tl->curve_points
 * set; pre: the rows checked by ms__timeline_rows). The call the curve's
 * point j was read at (j STRIDE + 1, scaled from the reference's calls to
 * the trace's) is found in the rows, at a time within its row in
 * proportion to the row's calls before it: an anchor. Between two anchors
 * the recorded time maps linearly onto the reference's, a row counting its
 * time less the fitted cost of its calls (tl->cpu_per_call; at least a
 * twentieth of it): between the last call read before a stretch without
 * calls and the first after it, the calls' rows keep what they took
 * without the recorder, not the stretch's average. The times are scaled
 * from the run's span to the reference's median; a row's CPU time keeps its
 * share of the row, then all of it is scaled to the reference's (at most
 * the row's time). */
static int curve_rows(const memstub_trace *t, ms__timeline *tl, const int64_t *ncalls, int64_t *dt,
                      int64_t *cpu, memstub_error *err) {
  int64_t kc, ks, kst, kn, *w;
  int rc = curve_read(t, &kc, &ks, &kst, &w, &kn, err);
  if (rc <= 0) return rc;
  size_t n = t->n;
  double *cum = malloc(n * sizeof *cum), *ax = malloc(((size_t)kn + 2) * sizeof *ax),
         *ay = malloc(((size_t)kn + 2) * sizeof *ay);
  if (!cum || !ax || !ay) {
    free(w), free(cum), free(ax), free(ay);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  double *at = malloc(n * sizeof *at);  // each row's end on the recorded axis, its calls' cost out
  if (!at) {
    free(w), free(cum), free(ax), free(ay);
    return memstub_error_set(err, -ENOMEM, "out of memory");
  }
  /* The fitted cost per call is the recorder's only with many calls: over
   * liblzma's 39 it is the run's slowing (5 ms a call), not theirs. */
  cum[0] = (double)ncalls[0], at[0] = 0;
  double per = kc >= MS__TL_FEW_CALLS ? tl->cpu_per_call : 0;
  for (size_t i = 1; i < n; i++) {
    double d = (double)ssub(t->pts[i].time_ns, t->pts[i - 1].time_ns),
           a = d - (double)ncalls[i] * per;
    cum[i] = cum[i - 1] + (double)ncalls[i];
    at[i] = at[i - 1] + (a > d / 20 ? a : d / 20);
  }
  double total = cum[n - 1], r_end = at[n - 1];
  double f = (double)tl->ref_wall_ns / (double)ks, scale = total / (double)kc;
  // Anchors (recorded time, reference time): the start, each point's call, the end.
  int64_t na = 0;
  ax[na] = 0, ay[na++] = 0;
  size_t i = 0;
  for (int64_t j = 0; j < kn; j++) {
    double x = ((double)(j * kst) + 1) * scale;  // the call, 1-based, in the trace's count
    if (x > total) break;
    while (i < n && cum[i] < x) i++;
    if (i >= n) break;
    double r0 = i ? at[i - 1] : 0, r1 = at[i], c0 = i ? cum[i - 1] : 0;
    double r = cum[i] > c0 ? r0 + (r1 - r0) * (x - c0) / (cum[i] - c0) : r1;
    double y = (double)w[j] * f;
    if (r < ax[na - 1]) r = ax[na - 1];
    if (y < ay[na - 1]) y = ay[na - 1];
    ax[na] = r, ay[na++] = y;
  }
  ax[na] = r_end, ay[na++] = (double)tl->ref_wall_ns;
  if (ay[na - 1] < ay[na - 2]) ay[na - 1] = ay[na - 2];
  // Row ends through the anchors, then the CPU time by each row's share.
  int64_t prev = 0;
  size_t a = 0;
  tl->target_ns = tl->target_cpu_ns = 0;
  for (size_t k = 1; k < n; k++) {
    double r = at[k];
    while (a + 2 < (size_t)na && ax[a + 1] <= r) a++;
    double y = ax[a + 1] > ax[a] ? ay[a] + (ay[a + 1] - ay[a]) * (r - ax[a]) / (ax[a + 1] - ax[a])
                                 : ay[a + 1];
    if (y > ay[a + 1]) y = ay[a + 1];
    int64_t end = rnd(y);
    if (end < prev) end = prev;
    double d = (double)ssub(t->pts[k].time_ns, t->pts[k - 1].time_ns);
    int64_t nd = end - prev;
      cpu[k] = d > 0 ? rnd((double)cpu[k] * (double)nd / d) : 0;
    if (cpu[k] > nd) cpu[k] = nd;
    dt[k] = nd;
    prev = end;
    tl->target_ns = sadd(tl->target_ns, nd);
    tl->target_cpu_ns = sadd(tl->target_cpu_ns, cpu[k]);
  }
  if (tl->ref_cpu_ns >= 0 && tl->target_cpu_ns > 0) {
    double g = (double)tl->ref_cpu_ns / (double)tl->target_cpu_ns;
    tl->target_cpu_ns = 0;
    for (size_t k = 1; k < n; k++) {
      int64_t c = rnd((double)cpu[k] * g);
      cpu[k] = c > dt[k] ? dt[k] : c;
      tl->target_cpu_ns = sadd(tl->target_cpu_ns, cpu[k]);
    }
  }
  tl->removed_ns = tl->recorded_ns - tl->target_ns;
  free(w), free(cum), free(at), free(ax), free(ay);
  return 0;
}

/* The run-queue waits out of the rows' waiting (dt less cpu): the share of
 * each row's recorded waiting that its thread spent runnable without a CPU
 * (MEMSTUB_WORK_RUN_DELAY_COLUMN; at most its waiting), scaled as the row's
 * waiting was. A thread alone in its process waited for other processes or
 * the recorder's own threads: the stub's thread waits for what it waited
 * on, and the machine it replays on adds its own run-queue waits. A thread
 * of a process of several waited mostly for its own process's threads:
 * their turns stay as recorded (counted in runq_kept_ns), the slack in which
 * a replay thread delayed otherwise catches up (docs/recording.md, "Waiting
 * for a CPU"). 0, or -EINVAL naming the row. */
static int runq_out(const memstub_trace *t, ms__timeline *tl, int64_t *dt, const int64_t *cpu,
                    memstub_error *err) {
  int qcol = memstub_trace_column(t, MEMSTUB_WORK_RUN_DELAY_COLUMN),
      ccol = memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN), keep = process_threads(t) > 0;
  tl->runq_ns = tl->runq_kept_ns = 0;
  if (qcol < 0 || t->n == 0) return 0;
  if (memstub_trace_extra_row(t, 0)[qcol] < 0)
    return memstub_error_set(err, -EINVAL, "row 1: %s: negative (%lld)",
                             MEMSTUB_WORK_RUN_DELAY_COLUMN,
                             (long long)memstub_trace_extra_row(t, 0)[qcol]);
  for (size_t i = 1; i < t->n; i++) {
    const int64_t *e = memstub_trace_extra_row(t, i), *e0 = memstub_trace_extra_row(t, i - 1);
    int64_t q = ssub(e[qcol], e0[qcol]);
    if (q < 0)
      return memstub_error_set(err, -EINVAL, "row %zu: %s decreases from %lld to %lld", i + 1,
                               MEMSTUB_WORK_RUN_DELAY_COLUMN, (long long)e0[qcol],
                               (long long)e[qcol]);
    int64_t d = ssub(t->pts[i].time_ns, t->pts[i - 1].time_ns);
    int64_t w = ssub(d, ccol >= 0 ? ssub(e[ccol], e0[ccol]) : 0), w2 = ssub(dt[i], cpu[i]);
    if (q == 0 || w <= 0 || w2 <= 0) continue;
    int64_t out = rnd((double)(q < w ? q : w) * (double)w2 / (double)w);
    if (out > w2) out = w2;
    if (keep) {
      tl->runq_kept_ns = sadd(tl->runq_kept_ns, out);
      continue;
    }
    dt[i] -= out;
    tl->runq_ns = sadd(tl->runq_ns, out);
    tl->target_ns = ssub(tl->target_ns, out);
  }
  return 0;
}

int ms__timeline_rows(const memstub_trace *t, ms__timeline *tl, int64_t *dt, int64_t *cpu,
                      memstub_error *err) {
  static const char *const cols[NC] = {MEMSTUB_WORK_CALL_COLUMNS};
  int ccol = memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN), kcol[NC];
  for (int k = 0; k < NC; k++) kcol[k] = memstub_trace_column(t, cols[k]);
  tl->removed_ns = tl->recorded_cpu_ns = tl->target_cpu_ns = 0;
  tl->recorded_ns = tl->target_ns = tl->thin_rows = tl->thin_cpu_ns = 0;
  if (t->n == 0) return 0;
  dt[0] = cpu[0] = 0;
  int64_t *ncalls = NULL;  // with the clock at the calls: each row's calls
  if (tl->curve_points > 0 && !(ncalls = calloc(t->n, sizeof *ncalls)))
    return memstub_error_set(err, -ENOMEM, "out of memory");
  for (int k = 0; ncalls && k < NC; k++)
    if (kcol[k] >= 0 && memstub_trace_extra_row(t, 0)[kcol[k]] > 0)
      ncalls[0] = sadd(ncalls[0], memstub_trace_extra_row(t, 0)[kcol[k]]);
  for (size_t i = 1; i < t->n; i++) {
    const int64_t *e = memstub_trace_extra_row(t, i), *e0 = memstub_trace_extra_row(t, i - 1);
    int64_t d = ssub(t->pts[i].time_ns, t->pts[i - 1].time_ns);
    int64_t c = ccol >= 0 ? ssub(e[ccol], e0[ccol]) : 0;
    if (c < 0) {
      free(ncalls);
      return memstub_error_set(err, -EINVAL, "row %zu: cpu_ns decreases from %lld to %lld", i + 1,
                               (long long)e0[ccol], (long long)e[ccol]);
    }
    int64_t calls = 0;
    for (int k = 0; k < NC; k++) {
      int64_t v = kcol[k] >= 0 ? e[kcol[k]] : 0;
      if (v < 0) {
        free(ncalls);
        return memstub_error_set(err, -EINVAL, "row %zu: %s: negative count %lld", i + 1,
                                 cols[k], (long long)v);
      }
      calls = sadd(calls, v);
    }
    tl->recorded_ns = sadd(tl->recorded_ns, d);
    tl->recorded_cpu_ns = sadd(tl->recorded_cpu_ns, c);
    if (ncalls) {  // placed below, by the clock at the calls
      ncalls[i] = calls;
      cpu[i] = c > d ? d : c;
      continue;
    }
    // The recorder's cost out of the interval and out of its CPU time.
    double s = (double)c * tl->per_cpu_ns;
    int64_t oc = rnd((double)calls * tl->cpu_per_call + s);
    if (tl->wait_scale >= 0) {
      // The CPU time less the recorder's, and the waiting scaled to the reference's.
      if (c > d) c = d;  // CPU beyond the wall time: a rounding of the clocks
      int64_t c2 = c > oc ? c - oc : 0, d2;
      if (calls > 0 && 10 * c2 < c) tl->thin_rows++, tl->thin_cpu_ns = sadd(tl->thin_cpu_ns, c);
      if (tl->cpu_scale > 0) c2 = rnd((double)c2 * tl->cpu_scale);
      d2 = sadd(c2, rnd((double)(d - c) * tl->wait_scale));
      tl->removed_ns = sadd(tl->removed_ns, ssub(d, d2));
      d = d2;
      c = c2;
    } else {
      int64_t ow = rnd((double)calls * tl->wall_per_call + s);
      if (ow > d) ow = d;
      d -= ow;
      tl->removed_ns = sadd(tl->removed_ns, ow);
      c = c > oc ? c - oc : 0;
      if (c > d) c = d;  // CPU beyond the wall time: a rounding of the clocks
    }
    dt[i] = d;
    cpu[i] = c;
    tl->target_ns = sadd(tl->target_ns, d);
    tl->target_cpu_ns = sadd(tl->target_cpu_ns, c);
  }
  if (ncalls) {
    int rc = curve_rows(t, tl, ncalls, dt, cpu, err);
    free(ncalls);
    return rc < 0 ? rc : runq_out(t, tl, dt, cpu, err);
  }
  /* A whole run's CPU time is the reference's: the rows that had less CPU
   * time than their calls' share kept 0, not less, so the others give up the
   * rest in proportion (bench/timeline.sh's hash table: 239 ms after, for a
   * reference of 204 ms); the rows whose CPU time was cut to their wall time
   * (the clocks' rounding) left it short, so the others take that up. */
  if (tl->whole && tl->ref_cpu_ns >= 0 && tl->target_cpu_ns > 0 &&
      tl->target_cpu_ns != tl->ref_cpu_ns) {
    double f = (double)tl->ref_cpu_ns / (double)tl->target_cpu_ns;
    tl->target_ns = tl->target_cpu_ns = 0;
    for (size_t i = 1; i < t->n; i++) {
      int64_t c = rnd((double)cpu[i] * f);
      dt[i] = ssub(dt[i], ssub(cpu[i], c));
      tl->removed_ns = sadd(tl->removed_ns, ssub(cpu[i], c));
      cpu[i] = c;
      tl->target_ns = sadd(tl->target_ns, dt[i]);
      tl->target_cpu_ns = sadd(tl->target_cpu_ns, c);
    }
  }
  return runq_out(t, tl, dt, cpu, err);
}

int ms__timeline_uneven(const ms__timeline *tl) {
  return tl->cpu_per_call > 0 && tl->recorded_cpu_ns > 0 &&
         10 * tl->thin_cpu_ns > tl->recorded_cpu_ns;
}

void ms__timeline_estimated_say(int64_t own_ns, int64_t recorded_ns, char *buf, size_t cap) {
  char own[32], rec[32];
  if (cap == 0) return;
  snprintf(buf, cap,
           "the stub's timeline takes the recorder's cost out by the recorder's own figures, "
           "%s of the %s recorded (%.0f %%); they time its hooks, not what the hooks do to the "
           "program's caches, locks and waits, so the stub may run longer than the program "
           "(python3 with three threads: +28 %%; bench/results/timeline.md: +17 to +34 %%): "
           "'memstub record --reference 3' times the program without the recorder and gen fits "
           "the timeline to those runs (docs/recording.md, \"The stub's timeline\")",
           ms__fmt_ns(own_ns, own, sizeof own), ms__fmt_ns(recorded_ns, rec, sizeof rec),
           recorded_ns > 0 ? 100.0 * (double)own_ns / (double)recorded_ns : 0.0);
}

int ms__timeline_estimated(const ms__timeline *tl, char *buf, size_t cap) {
  if (cap) buf[0] = '\0';
  if (tl->kind != MS__TL_OWN || tl->recorded_ns <= 0 ||
      (double)tl->removed_ns < MS__TL_ESTIMATED_SHARE * (double)tl->recorded_ns)
    return 0;
  ms__timeline_estimated_say(tl->removed_ns, tl->recorded_ns, buf, cap);
  return 1;
}

/* The clause of the describe line for what ran before the recorder started
 * (MS__TL_START_WALL), when it is MS__TL_ESTIMATED_SHARE of the run or more
 * and the model leaves it out (the rows are replayed alone; a whole run of
 * one thread, and a process fitted on its rows to the reference's CPU
 * time, have it in the reference's totals); "" otherwise. */
static void prestart_clause(const ms__timeline *tl, char *buf, size_t cap) {
  if (cap) buf[0] = '\0';
  int64_t wall = tl->start_wall_ns, cpu = tl->start_cpu_ns;
  if (wall <= 0 || tl->recorded_ns <= 0) return;
  if (tl->kind == MS__TL_FITTED && ((tl->whole && !tl->region) || (tl->rows_fit && !tl->unfit)))
    return;
  double share = (double)wall / (double)sadd(tl->recorded_ns, wall);
  if (share < MS__TL_ESTIMATED_SHARE) return;
  char w[32], c[32];
  snprintf(buf, cap,
           "; the program's start before the trace's (exec, the dynamic loader with its "
           "libraries and the recorder's) not replayed: %s, %s of CPU time (%.0f %% of the run)",
           ms__fmt_ns(wall, w, sizeof w), ms__fmt_ns(cpu < 0 ? 0 : cpu, c, sizeof c),
           100.0 * share);
}

void ms__timeline_describe(const ms__timeline *tl, char *buf, size_t cap) {
  char rec[32], tgt[32], rw[32], rc[32], ow[32], oc[32], own[32] = "not measured";
  if (tl->own_per_call > 0) snprintf(own, sizeof own, "%.1f ns", tl->own_per_call);
  ms__fmt_ns(tl->recorded_ns, rec, sizeof rec);
  ms__fmt_ns(tl->target_ns, tgt, sizeof tgt);
  if (tl->kind == MS__TL_RECORDED) {
    snprintf(buf, cap, "as recorded (%s)", rec);
    return;
  }
  int n = 0;
  if (tl->kind == MS__TL_OWN) {
    n = snprintf(buf, cap,
                 "recorder's cost out by its own figures (%s per allocator call%s): %s "
                 "recorded, %s after",
                 own, tl->per_cpu_ns > 0 ? ", and its samples" : "", rec, tgt);
  } else {
    ms__fmt_ns(tl->ref_wall_ns, rw, sizeof rw);
    ms__fmt_ns(tl->rec_wall_ns, ow, sizeof ow);
    if (tl->ref_cpu_ns >= 0) ms__fmt_ns(tl->ref_cpu_ns, rc, sizeof rc);
    else snprintf(rc, sizeof rc, "unknown");
    if (tl->rec_cpu_ns >= 0) ms__fmt_ns(tl->rec_cpu_ns, oc, sizeof oc);
    else snprintf(oc, sizeof oc, "unknown");
    char proc[128] = "";
    if (tl->threads > 0)
      snprintf(proc, sizeof proc, " (a process of %lld threads: each thread slowed as the process was)",
               (long long)tl->threads);
    else if (tl->few)
      snprintf(proc, sizeof proc, " (%lld allocator calls and no figure of the recorder's own per "
               "call: the run slowed as a whole)", (long long)tl->events);
    n = snprintf(buf, cap, "recorder's cost out, fitted to %lld reference run%s%s%s: %s wall, %s CPU (the "
                 "recording%s: %s, %s); ",
                 (long long)tl->ref_runs, tl->ref_runs == 1 ? "" : "s",
                 tl->region  ? " (the regions' span timed in them: the trace's CPU time and "
                               "waiting set to theirs)"
                 : tl->whole ? " (the whole run: the trace's CPU time and waiting set to theirs)"
                             : "",
                 proc, rw, rc, tl->rows_fit ? "'s rows" : "", ow, oc);
    if (n >= 0 && (size_t)n < cap && (tl->threads > 0 || tl->few))
      n += snprintf(buf + n, cap - (size_t)n,
                    "the recorder's own figures out (%s%s), then each row's CPU time times %.3f "
                    "and its waiting (wall less CPU) times %.3f; %s recorded, %s after",
                    tl->own_per_call > 0 ? own : "its samples",
                    tl->own_per_call > 0 ? " per allocator call, and its samples" : "",
                    tl->cpu_scale, tl->wait_scale, rec, tgt);
    else if (n >= 0 && (size_t)n < cap && tl->curve_points > 0)
      n += snprintf(buf + n, cap - (size_t)n,
                    "each row placed at the reference's time of its calls (a reference run's "
                    "clock at %lld points of its %lld calls); %s recorded, %s after",
                    (long long)tl->curve_points, (long long)tl->curve_calls, rec, tgt);
    else if (n >= 0 && (size_t)n < cap && tl->no_calls)
      n += snprintf(buf + n, cap - (size_t)n,
                    "no allocator call in its rows: its CPU time scaled to theirs, its waiting "
                    "(wall less CPU) times %.3f; %s recorded, %s after",
                    tl->wait_scale, rec, tgt);
    else if (n >= 0 && (size_t)n < cap && tl->wait_scale >= 0)
      n += snprintf(buf + n, cap - (size_t)n,
                    "%.1f ns of CPU time per allocator call out (the recorder's own figure: %s), "
                    "the waiting (wall less CPU) times %.3f; %s recorded, %s after",
                    tl->cpu_per_call, own, tl->wait_scale, rec, tgt);
    else if (n >= 0 && (size_t)n < cap)
      n += snprintf(buf + n, cap - (size_t)n,
                    "%.1f ns per allocator call out of the wall time, %.1f ns out of the CPU time "
                    "(the recorder's own figure: %s); %s recorded, %s after",
                    tl->wall_per_call, tl->cpu_per_call, own, rec, tgt);
  }
  if (n >= 0 && (size_t)n < cap && tl->unfit)
    n += snprintf(buf + n, cap - (size_t)n, "; %s", tl->unfit);
  if (n >= 0 && (size_t)n < cap && tl->region_unused)
    n += snprintf(buf + n, cap - (size_t)n, "; %s", tl->region_unused);
  if (n >= 0 && (size_t)n < cap && tl->curve_unused)
    n += snprintf(buf + n, cap - (size_t)n, "; the clock at the calls not used: %s",
                  tl->curve_unused);
  if (n >= 0 && (size_t)n < cap && tl->caveat && tl->wall_per_call > 0)
    n += snprintf(buf + n, cap - (size_t)n, "; the fit %s", tl->caveat);
  if (n >= 0 && (size_t)n < cap && tl->runq_ns > 0) {
    char q[32];
    n += snprintf(buf + n, cap - (size_t)n,
                  "; %s of waiting for a CPU out (runnable, not running: the replay's machine "
                  "makes its own)",
                  ms__fmt_ns(tl->runq_ns, q, sizeof q));
  } else if (n >= 0 && (size_t)n < cap && tl->runq_kept_ns > 0) {
    char q[32];
    n += snprintf(buf + n, cap - (size_t)n,
                  "; %s of waiting for a CPU kept (the turns of its process's threads, as "
                  "recorded)",
                  ms__fmt_ns(tl->runq_kept_ns, q, sizeof q));
  }
  char pre[256];
  prestart_clause(tl, pre, sizeof pre);
  if (n >= 0 && (size_t)n < cap && pre[0]) n += snprintf(buf + n, cap - (size_t)n, "%s", pre);
  /* Loud when rows that held a tenth of the recording's CPU time kept less
   * than a tenth of theirs: the cost per call is even, the recorder's was
   * not. bench/system's hash component: its 400k mallocs' rows, 66 of its
   * 313 ms recorded, came to 9.4 ms for the 22-26 ms its build takes
   * unrecorded (its frees cost the recorder more): the stub ran 24-50 ms
   * late at the build's end and caught up in the lookups. */
  if (n >= 0 && (size_t)n < cap && ms__timeline_uneven(tl)) {
    char th[32];
    ms__fmt_ns(tl->thin_cpu_ns, th, sizeof th);
    snprintf(buf + n, cap - (size_t)n,
             "; %lld rows with calls (%s of the recording's CPU time) kept less than a tenth "
             "of theirs: the cost is taken out evenly per call, the recorder's may not have "
             "been, and the stub may be short there and long elsewhere (docs/recording.md)",
             (long long)tl->thin_rows, th);
  }
}

int ms__timeline_trace(const memstub_trace *t, memstub_trace **out, ms__timeline *tl,
                       memstub_error *err) {
  *out = NULL;
  int rc = ms__timeline_model(t, tl, err);
  if (rc < 0 || tl->kind == MS__TL_RECORDED) {
    if (rc == 0) {  // the durations, for the caller's line
      tl->recorded_ns = tl->target_ns = t->n ? ssub(t->pts[t->n - 1].time_ns, t->pts[0].time_ns) : 0;
    }
    return rc;
  }
  size_t n = t->n ? t->n : 1;
  int64_t *dt = malloc(n * sizeof *dt), *cpu = malloc(n * sizeof *cpu);
  memstub_trace *c = NULL;
  if (!dt || !cpu || ms__trace_dup(t, &c) < 0) rc = memstub_error_set(err, -ENOMEM, "out of memory");
  if (rc == 0) rc = ms__timeline_rows(t, tl, dt, cpu, err);
  int ccol = memstub_trace_column(t, MEMSTUB_WORK_CPU_COLUMN);
  int64_t time = t->n ? t->pts[0].time_ns : 0, used = ccol >= 0 && t->n ? t->extra[ccol] : 0;
  for (size_t i = 0; rc == 0 && i < t->n; i++) {
    if (__builtin_add_overflow(time, dt[i], &time) || __builtin_add_overflow(used, cpu[i], &used) ||
        (i > 0 && dt[i] >= MS__TL_MAX_NS))
      rc = memstub_error_set(err, -EINVAL,
                             "row %zu: the stub's timeline goes beyond 2^53 ns a row or 2^63 in "
                             "all: the metadata's figures (record.cost_ns_per_event, "
                             "reference.*) are not a recording's",
                             i + 1);
    c->pts[i].time_ns = time;
    if (ccol >= 0) memstub_trace_extra_row(c, i)[ccol] = used;
  }
  free(dt);
  free(cpu);
  return MS__HAND_OUT(rc, c, out, memstub_trace_free);
}
