// memstub record's summary: the trace's peaks, the recorder's cost, the
// allocator churn, the sites and generations sections, and the next step.
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/trace.h"
#include "ms_common.h"
#include "prim.h"
#include "../recorder/protocol.h"
#include "../traces/timeline.h"
#include "record.h"

// One row of the churn table: label, then v's figures for people.
static void print_churn_line(const char *label, const char *v) {
  // v: "[occurrences=K ]calls=C bytes=B churn=W"
  unsigned long long occ = 0, calls = 0, bytes = 0;
  char w[32] = "?", c[32], o[32], b[32];
  const char *p;
  if ((p = strstr(v, "occurrences="))) occ = strtoull(p + 12, NULL, 10);
  if ((p = strstr(v, "calls="))) calls = strtoull(p + 6, NULL, 10);
  if ((p = strstr(v, "bytes="))) bytes = strtoull(p + 6, NULL, 10);
  double score;
  if ((p = strstr(v, "churn=")) && sscanf(p + 6, "%lf", &score) == 1) ms__fmt_si(score, w, sizeof w);
  ms__fmt_bytes(bytes > INT64_MAX ? INT64_MAX : (int64_t)bytes, b, sizeof b);
  ms__fmt_count(calls > INT64_MAX ? INT64_MAX : (int64_t)calls, c, sizeof c);
  if (occ) ms__fmt_count(occ > INT64_MAX ? INT64_MAX : (int64_t)occ, o, sizeof o);
  fprintf(stderr, "  %-28s %6s %12s %12s %12s\n", label, occ ? o : "-", c, b, w);
}

static const char *meta_or(const memstub_trace *t, const char *key) {
  const char *v = memstub_trace_get_meta(t, key);
  return v ? v : "?";
}

// A cost from the metadata: a time for people, or its words when it was not measured.
static const char *cost(char *buf, size_t n, const char *v) {
  char *end;
  double ns = strtod(v, &end);
  if (end != v && *end == '\0' && fabs(ns) < 9e18)
    ms__fmt_ns(llround(ns), buf, n);
  else
    snprintf(buf, n, "%s", v);
  return buf;
}

// A count from the metadata with thousands separators, or as it is.
static const char *meta_count(const memstub_trace *t, const char *key, char *buf, size_t n) {
  const char *v = memstub_trace_get_meta(t, key);
  int64_t c;
  if (!v || ms__parse_i64(v, strlen(v), &c) < 0) return v ? v : "?";
  return ms__fmt_count(c, buf, n);
}

// A byte count from the metadata for people (KiB, MiB, ...), or "?" when absent.
static const char *meta_bytes(const memstub_trace *t, const char *key, char *buf, size_t n) {
  const char *v = memstub_trace_get_meta(t, key);
  int64_t b;
  if (!v || ms__parse_i64(v, strlen(v), &b) < 0) return v ? v : "?";
  return ms__fmt_bytes(b, buf, n);
}

// S as one shell word: as it is when it holds only safe characters, else in
// single quotes (a ' inside as '\'').
static void shell_word(FILE *f, const char *s) {
  if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+=:,@%") ==
                strlen(s)) {
    fputs(s, f);
    return;
  }
  fputc('\'', f);
  for (; *s; s++)
    if (*s == '\'')
      fputs("'\\''", f);
    else
      fputc(*s, f);
  fputc('\'', f);
}

// How to run this memstub from a shell: "memstub" when that name on PATH is
// this executable, else this executable's absolute path.
static void memstub_word(FILE *f) {
  char self[PATH_MAX], cand[PATH_MAX], real[PATH_MAX];
  if (ms__prim_self_exe(self, sizeof self) < 0 ||
      (ms_cli_path_find("memstub", cand, sizeof cand) && realpath(cand, real) &&
       strcmp(real, self) == 0)) {
    fputs("memstub", f);
    return;
  }
  shell_word(f, self);  // none on PATH, or the shell would run another memstub
}

/* The next step, printed after the summary: the commands that generate and
 * build a stub from the trace at OUT (as given on the command line), replay
 * it measuring, and compare the replay with the trace. */
static void next_step(const char *out) {
  size_t n = strlen(out);
  if (n > 4 && strcmp(out + n - 4, ".csv") == 0) n -= 4;
  char *base = ms__asprintf("%.*s", (int)n, out);
  char *h = ms__asprintf("%s.h", base), *stub = ms__asprintf("%s_stub", base),
       *run = ms__asprintf("%s%s_stub", strchr(base, '/') ? "" : "./", base),
       *rep = ms__asprintf("%s.replayed.csv", base);
  if (!base || !h || !stub || !run || !rep) {
    free(base), free(h), free(stub), free(run), free(rep);
    return;
  }
  fputs("next: build a stub from this trace, replay it and compare (docs/cli.md):\n  ", stderr);
  memstub_word(stderr), fputs(" gen ", stderr), shell_word(stderr, out);
  fputs(" -o ", stderr), shell_word(stderr, h), fputs(" && ", stderr);
  memstub_word(stderr), fputs(" build ", stderr), shell_word(stderr, h);
  fputs(" -o ", stderr), shell_word(stderr, stub), fputs("\n  ", stderr);
  shell_word(stderr, run), fputs(" --measure ", stderr), shell_word(stderr, rep);
  fputs("\n  ", stderr);
  memstub_word(stderr), fputs(" compare ", stderr), shell_word(stderr, out);
  fputc(' ', stderr), shell_word(stderr, rep), fputc('\n', stderr);
  free(base), free(h), free(stub), free(run), free(rep);
}

/* "X of Y" from the metadata at key into *x and *y: 1, or 0 when absent or
 * not that form. */
static int meta_share(const memstub_trace *t, const char *key, double *x, double *y) {
  const char *v = memstub_trace_get_meta(t, key);
  unsigned long long a, b;
  if (!v || sscanf(v, "%llu of %llu", &a, &b) != 2) return 0;
  *x = (double)a, *y = (double)b;
  return 1;
}

/* A narrowed scope (--thread main or N, or the default narrowed by why):
 * what the threads it left out did, from the recorder's metadata, as shares
 * of the process's CPU time, allocator calls and bytes; a warning when one
 * is more than a tenth (the stub will not do that work). */
static void left_out(const char *path, const memstub_trace *t, const char *why) {
  const char *n = memstub_trace_get_meta(t, MS__REC_META_OTHER_THREADS);
  const char *pc = memstub_trace_get_meta(t, "record.process_cpu_ns");
  const char *oc = memstub_trace_get_meta(t, "record.other_threads_cpu_ns");
  int64_t others, proc, cpu;
  if (!n || ms__parse_i64(n, strlen(n), &others) < 0 || others <= 0) return;
  double share[3] = {0, 0, 0}, x, y;
  if (pc && oc && ms__parse_i64(pc, strlen(pc), &proc) == 0 &&
      ms__parse_i64(oc, strlen(oc), &cpu) == 0 && proc > 0)
    share[0] = (double)cpu / (double)proc;
  if (meta_share(t, "record.other_threads_calls", &x, &y) && y > 0) share[1] = x / y;
  if (meta_share(t, "record.other_threads_bytes", &x, &y) && y > 0) share[2] = x / y;
  const char *th = meta_or(t, MS__REC_META_THREAD);
  int regions = memstub_trace_column(t, "region") >= 0;
  ms_cli_note("left out of the recording (recorded: %s%s%s%s): %lld other thread%s, with %.0f%% "
              "of the process's CPU time, %.0f%% of its allocator calls and %.0f%% of the bytes "
              "allocated%s",
              isdigit((unsigned char)th[0]) || strcmp(th, "main") == 0 ? "thread " : "", th,
              why ? ", the default with " : "", why ? why : "", (long long)others,
              others == 1 ? "" : "s", 100 * share[0], 100 * share[1], 100 * share[2],
              regions ? " (the regions are the component: the rest is left out by design)" : "");
  // A component's regions leave the rest out by design; a thread choice may not mean to.
  if (!regions && (share[0] > 0.1 || share[1] > 0.1 || share[2] > 0.1))
    ms_cli_warn("%s: the threads left out did more than a tenth of the process's work: a stub "
                "of this trace will not do it; record every thread (drop --thread%s) to "
                "replay the whole process",
                path, why ? ", or give --thread all" : "");
}

// --calls: where the allocation sequence is (its absence is ms_record_summarise's).
static void calls_line(const char *path, const memstub_trace *t) {
  if (!memstub_trace_get_meta(t, "calls.file")) return;
  char n[32];
  ms_cli_note("allocation sequence: %s calls in %s.calls, %s bytes a call",
              meta_count(t, "calls.count", n, sizeof n), path, meta_or(t, "calls.bytes_per_call"));
}

// The summary on stderr.
const char *ms_record_resident_part(const memstub_trace *t, char *buf, size_t n) {
  char r[32], m[32];
  int64_t rv = -1, mv = -1;
  const char *rs = memstub_trace_get_meta(t, MS__REC_META_PEAK_RSS);
  const char *ms = memstub_trace_get_meta(t, MS__REC_META_PEAK_MAPPED);
  if (rs) (void)ms__parse_i64(rs, strlen(rs), &rv);
  if (ms) (void)ms__parse_i64(ms, strlen(ms), &mv);
  buf[0] = '\0';
  if (rv > 0 && mv > 0)
    snprintf(buf, n, ", peak resident %s (mapped outside the heap %s)",
             ms__fmt_bytes(rv, r, sizeof r), ms__fmt_bytes(mv, m, sizeof m));
  else if (rv > 0)
    snprintf(buf, n, ", peak resident %s", ms__fmt_bytes(rv, r, sizeof r));
  return buf;
}

static void summary(const char *path, const memstub_trace *t, const char *why) {
#define M(k) meta_or(t, k)
  char rows[32], dur[32], ph[32], ps[32], res[128];
  ms_cli_note("%s: %s rows over %s; peak heap %s%s, peak stack %s (%s)", path,
              ms__fmt_count((int64_t)t->n, rows, sizeof rows),
              ms__fmt_ns(t->pts[t->n - 1].time_ns, dur, sizeof dur),
              meta_bytes(t, MS__REC_META_PEAK_HEAP, ph, sizeof ph),
              ms_record_resident_part(t, res, sizeof res),
              meta_bytes(t, MS__REC_META_PEAK_STACK, ps, sizeof ps), M(MS__REC_META_STACK_FROM));
  char ce[64], cs[64], ne[32], ns[32];
  if (memstub_trace_get_meta(t, "record.salvaged"))  // the recorder's own figures died with it
    ms_cli_note("recorder cost: not known (salvaged from the journal); heap scope %s, thread %s",
                M(MS__REC_META_HEAP_SCOPE), M(MS__REC_META_THREAD));
  else
    ms_cli_note(
        "recorder cost per allocator call: %s (%s calls); per timer sample: %s (%s "
        "samples); heap scope %s, thread %s",
        cost(ce, sizeof ce, M(MS__REC_META_COST_EVENT)),
        meta_count(t, MS__REC_META_EVENTS, ne, sizeof ne),
        cost(cs, sizeof cs, M(MS__REC_META_COST_SAMPLE)),
        meta_count(t, MS__REC_META_SAMPLES, ns, sizeof ns), M(MS__REC_META_HEAP_SCOPE),
        M(MS__REC_META_THREAD));
  left_out(path, t, why);
  fprintf(stderr,
          "allocator churn: the calls, the bytes they asked for, and their score, the sum of\n"
          "w(call) x log2(bytes) (Kudrjavets et al. 2022; w: malloc 1, free 1, calloc 2,\n"
          "realloc 3; more is more allocator work):\n"
          "  %-28s %6s %12s %12s %12s\n",
          "region / function", "occur.", "calls", "bytes", "churn score");
  for (size_t i = 0; i < t->nmeta; i++) {
    const char *k = t->meta[i].key;
    if (strncmp(k, MS__REC_CHURN_PREFIX, 6) != 0 || strcmp(k, MS__REC_CHURN_WEIGHTS_KEY) == 0)
      continue;
    const char *label = k + 6;
    char buf[128];
    if (strncmp(label, "program.", 8) == 0) {
      snprintf(buf, sizeof buf, "  %s", label + 8);
      label = buf;
    } else if (strncmp(label, "region.", 7) == 0) {
      const char *rest = label + 7;
      // churn.region.NAME[.function]: indent the per-function lines.
      const char *dot = strrchr(rest, '.');
      static const char *const fns[] = {MS__REC_FN_NAMES};
      int is_fn = 0;
      for (size_t f = 0; dot && f < MS__ARRAY_SIZE(fns); f++)
        if (strcmp(dot + 1, fns[f]) == 0) is_fn = 1;
      if (is_fn)
        snprintf(buf, sizeof buf, "  %s", dot + 1);
      else
        snprintf(buf, sizeof buf, "region %s", rest);
      label = buf;
    }
    print_churn_line(label, t->meta[i].value);
  }
  if (memstub_trace_get_meta(t, "sites.file")) ms_cli_sites_summary(path, t, 5, stderr);
  if (memstub_trace_get_meta(t, "generations.file")) ms_cli_generations_summary(path, stderr);
  calls_line(path, t);
  next_step(path);
#undef M
}

/* Without reference runs a stub's timeline rests on the recorder's own
 * figures: a warning when they come to MS__TL_ESTIMATED_SHARE of the
 * recording or more, as memstub gen's (one thread: gen's test on the same
 * trace; several: the whole run's figure, record.overhead_ns, against the
 * trace's span). */
static void timeline_estimated(const char *path, const memstub_trace *t, const rec_opts *o) {
  char buf[1024] = "";
  if (o->reference || t->n < 2) return;
  if (memstub_trace_column(t, "thread") >= 0) {
    const char *v = memstub_trace_get_meta(t, "record.overhead_ns");
    int64_t own, span = t->pts[t->n - 1].time_ns - t->pts[0].time_ns;
    if (v && ms__parse_i64(v, strlen(v), &own) == 0 && span > 0 &&
        (double)own >= MS__TL_ESTIMATED_SHARE * (double)span)
      ms__timeline_estimated_say(own, span, buf, sizeof buf);
  } else {
    ms__timeline tl;
    memstub_error err = {0};
    int64_t *dt = malloc(t->n * sizeof *dt), *cpu = malloc(t->n * sizeof *cpu);
    if (dt && cpu && ms__timeline_model(t, &tl, &err) == 0 &&
        ms__timeline_rows(t, &tl, dt, cpu, &err) == 0)
      (void)ms__timeline_estimated(&tl, buf, sizeof buf);
    free(dt);
    free(cpu);
  }
  if (buf[0]) ms_cli_warn("%s: %s", path, buf);
}

int ms_record_summarise(const rec_opts *o, const char *abs) {
  memstub_error err = {0};
  memstub_trace *t = NULL;
  if (memstub_trace_read(abs, &t, &err) < 0)
    return ms_cli_error("%s: the recorder's trace does not read back: %s", o->out, err.msg);
  int threads = memstub_trace_column(t, "thread") >= 0;
  const char *fallback = memstub_trace_get_meta(t, MS__REC_META_SAMPLING_OFF);
  if (fallback) ms_cli_warn("%s: %s", o->out, fallback);
  const char *loose = memstub_trace_get_meta(t, MS__REC_META_REGIONS_NOT_SCOPING);
  if (loose) ms_cli_warn("%s: %s", o->out, loose);
  const char *others = memstub_trace_get_meta(t, MS__REC_META_REGIONS_OTHER_THREADS);
  if (others) ms_cli_warn("%s: %s", o->out, others);
  const char *off = memstub_trace_get_meta(t, MS__REC_META_STACK_OFF);
  if (off) ms_cli_warn("%s: %s", o->out, off);
  int rc = 0;
  if (!o->quiet) timeline_estimated(o->out, t, o);  // advice, as the scope's: -q silences it
  if (!threads && !o->quiet) summary(o->out, t, o->thread_why);
  // Several threads: checked and summarised thread by thread.
  if (threads && ms_record_threads_summary(o->out, abs, o->quiet) != 0) rc = MS_EXIT_CHECK;
  if (threads && !o->quiet) calls_line(o->out, t);
  // --calls asked for and not written: the trace is, but not what was asked.
  const char *cerr = memstub_trace_get_meta(t, "calls.error");
  if (cerr) {
    ms_cli_error("%s: no allocation sequence (--calls): %s", o->out, cerr);
    rc = MS_EXIT_CHECK;
  }
  memstub_trace_free(t);
  return rc;
}
