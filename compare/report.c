// Writing a comparison report: text for people, JSON for programs.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ms_common.h"

// ns for people (ns, µs, ms, s, three significant digits), "+" before a
// positive value when plus is set.
static const char *ns_text(char buf[40], int64_t ns, int plus) {
  char v[32];
  ms__fmt_ns(ns, v, sizeof v);
  snprintf(buf, 40, "%s%s", plus && ns > 0 ? "+" : "", v);
  return buf;
}

// Bytes for people (B, KiB, MiB, ...), "+" before a positive value when plus is set.
static const char *bytes_text(char buf[40], int64_t b, int plus) {
  char v[32];
  ms__fmt_bytes(b, v, sizeof v);
  snprintf(buf, 40, "%s%s", plus && b > 0 ? "+" : "", v);
  return buf;
}

// A count for people: thousands separators ("6,652").
static const char *cnt(char buf[40], size_t n) {
  return ms__fmt_count(n > INT64_MAX ? INT64_MAX : (int64_t)n, buf, 40);
}

// A mean (a double) to the nearest integer for the formatters above.
static int64_t nearest(double v) {
  int64_t r = 0;
  if (ms__round_i64(v, &r) < 0) r = v < 0 ? INT64_MIN : INT64_MAX;
  return r;
}

static double pct(size_t k, size_t n) { return n ? 100.0 * (double)k / (double)n : 0.0; }

static void text_time(FILE *f, const memstub_compare_time *t, size_t n, int64_t late_ns) {
  char a[40], b[40], c[40], d[40], e[40], g[40];
  fprintf(f, "  |error|   p50 %s, p99 %s, max %s\n", ns_text(a, t->p50_abs, 0), ns_text(b, t->p99_abs, 0),
          ns_text(c, t->max_abs, 0));
  fprintf(f, "  error     min %s, max %s, mean %s\n", ns_text(d, t->min, 1), ns_text(e, t->max, 1),
          ns_text(g, nearest(t->mean), 1));
  fprintf(f, "  late      %s of %s points (%.2f%%) by more than %s\n", cnt(a, t->late), cnt(b, n),
          pct(t->late, n), ns_text(g, late_ns, 0));
}

// p of peak as a percentage, or "-" without a peak.
static const char *of_peak(char buf[40], int64_t v, int64_t peak) {
  if (peak > 0) snprintf(buf, 40, "%.2f%%", 100.0 * (double)v / (double)peak);
  else snprintf(buf, 40, "-");
  return buf;
}

/* One memory column: heap adds the mmap rule; curve (rss, mapped) the
 * percentiles and peaks, and an unknown one says why in its own words
 * (stack and heap quote the metadata of who: ORIGINAL, or REPLAYED). */
static void text_mem(FILE *f, const char *name, const memstub_compare_mem *m, size_t n,
                     int64_t slack, const memstub_compare_options *o, int heap, int curve,
                     const char *unknown, const char *who) {
  char a[40], b[40], c[40], d[40];
  if (unknown) {
    if (curve)
      fprintf(f, "%-6s %s: not compared\n", name, unknown);
    else
      fprintf(f, "%-6s unknown: not compared (%s says '%s: %s')\n", name, who, name, unknown);
    return;
  }
  fprintf(f, "%-6s exact %.2f%% (%s of %s within %s", name, 100.0 * m->exact_share,
          cnt(b, m->exact), cnt(c, n), bytes_text(a, slack, 0));
  if (heap)
    fprintf(f, ", or %s where the block is at least %s: %s point%s", bytes_text(a, o->page_size, 0),
            bytes_text(b, o->mmap_threshold, 0), cnt(c, m->paged), m->paged == 1 ? "" : "s");
  fprintf(f, ")\n       |error| max %s, mean %s; error min %s, max %s\n", bytes_text(a, m->max_abs, 0),
          bytes_text(b, nearest(m->mean_abs), 0), bytes_text(c, m->min, 1), bytes_text(d, m->max, 1));
  if (!curve) return;
  char e[40], g[40];
  fprintf(f, "       |error| p50 %s, p90 %s (%s of the original's peak)\n",
          bytes_text(a, m->p50_abs, 0), bytes_text(b, m->p90_abs, 0),
          of_peak(c, m->p90_abs, m->original_peak));
  fprintf(f, "       peak original %s, replayed %s (error %s)\n",
          bytes_text(d, m->original_peak, 0), bytes_text(e, m->replayed_peak, 0),
          bytes_text(g, ms__sat_sub(m->replayed_peak, m->original_peak), 1));
}

// The column a check judges, for "not judged" messages: its key's first word.
static const char *check_column(const char *key) {
  static const char *const cols[] = {"stack", "heap", "rss", "mapped", "cpu", "calls", "churn"};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
    if (strncmp(key, cols[i], strlen(cols[i])) == 0 && key[strlen(cols[i])] == '-') return cols[i];
  return "column";
}

int memstub_compare_write_text(const memstub_compare_report *r, const memstub_compare_checks *cs,
                               FILE *f) {
  char a[40], b[40], c[40];
  const memstub_compare_options *o = &r->options;
  fprintf(f, "original  %s (%s rows)\nreplayed  %s (%s rows)\n", r->original_name,
          cnt(a, r->original_rows), r->replayed_name, cnt(b, r->replayed_rows));
  fprintf(f, "points    %s compared, %s missing", cnt(a, r->compared), cnt(b, r->missing));
  if (r->first_missing >= 0) fprintf(f, " (first: %" PRId64 ")", r->first_missing);
  fprintf(f, ", %s repeated, %s out of order\n\n", cnt(a, r->repeated), cnt(b, r->out_of_order));
  ms__compare_whatif_text(f, r);  // whatif.c
  if (r->whatif.is)
    fputs("against its target, ORIGINAL with REPLAYED's scales (as memstub gen applies them):\n",
          f);

  if (r->timeline.changed)
    fprintf(f, "timeline  the stub's, not the recorded times (--recorded-times for those): %s\n",
            r->timeline.summary);
  fprintf(f, "duration  original %s, replayed %s (points %" PRId64 "-%" PRId64 ")\n",
          ns_text(a, r->duration.original_ns, 0), ns_text(b, r->duration.replayed_ns, 0),
          r->duration.first_point, r->duration.last_point);
  if (r->timeline.changed) {
    fprintf(f, "          original as recorded %s", ns_text(a, r->timeline.recorded_ns, 0));
    if (r->timeline.reference_runs > 0)
      fprintf(f, "; the program unrecorded %s wall (median of %" PRId64 " run%s, whole run)",
              ns_text(b, r->timeline.reference_wall_ns, 0), r->timeline.reference_runs,
              r->timeline.reference_runs == 1 ? "" : "s");
    fputc('\n', f);
  }
  fprintf(f, "          error %s (%s)", ns_text(c, r->duration.error_ns, 1),
          ms__fmt_pct(r->duration.error_pct, 1, b, sizeof b));
  if (r->duration.off_cpu_ns > 0)
    fprintf(f, ", the replay's %s of waiting for a CPU left out as the original's was",
            ns_text(a, r->duration.off_cpu_ns, 0));
  fputs("\n\n", f);

  fputs("time error per point (replayed - original):\n", f);
  text_time(f, &r->time, r->compared, o->late_ns);
  fprintf(f, "with the constant offset (median error, %s) removed:\n", ns_text(a, r->offset_ns, 1));
  text_time(f, &r->adjusted, r->compared, o->late_ns);
  const char *why[MEMSTUB_LATE_CAUSES] = {
      "woke late (the sleep overshot)", "work longer than predicted (cost model)",
      "thread not running (waited for a CPU)", "unknown (no wake_late_ns, work_ns columns)",
      "behind (the rows before it ran over)"};
  if (r->time.late) {
    fprintf(f, "late points by cause:\n");
    for (int k = 0; k < MEMSTUB_LATE_CAUSES; k++)
      if (r->late_by_cause.rows[k])
        fprintf(f, "  %-42s %s, largest %s\n", why[k], cnt(b, r->late_by_cause.rows[k]),
                ns_text(a, r->late_by_cause.max_ns[k], 0));
    if (r->late_by_cause.causes_known && !r->late_by_cause.off_cpu_known)
      fputs("  (no off_cpu_ns column: a busy host shows as woke late or work)\n", f);
  }
  if (r->host_rows && r->compared > r->host_rows) {
    fprintf(f, "without the %s point%s the host delayed:\n", cnt(a, r->host_rows),
            r->host_rows == 1 ? "" : "s");
    text_time(f, &r->stub_time, r->compared - r->host_rows, o->late_ns);
  }
  ms__compare_kinds_text(f, r);
  if (r->replay_cpu_ns >= 0 && r->replay_duration_ns > 0)
    fprintf(f, "replay CPU  %s, %.2f%% of the replay's duration%s%s\n",
            ns_text(a, r->replay_cpu_ns, 0),
            100.0 * (double)r->replay_cpu_ns / (double)r->replay_duration_ns,
            r->replay_off_cpu_ns >= 0 ? "; waited for a CPU " : "",
            r->replay_off_cpu_ns >= 0 ? ns_text(b, r->replay_off_cpu_ns, 0) : "");
  fputc('\n', f);
  text_mem(f, "stack", &r->stack, r->compared, o->stack_slack, o, 0, 0, r->stack_unknown,
           "ORIGINAL");
  text_mem(f, "heap", &r->heap, r->compared, o->heap_slack, o, 1, 0, r->heap_unknown,
           r->heap_unknown_replayed ? "REPLAYED" : "ORIGINAL");
  text_mem(f, "rss", &r->rss, r->compared, o->rss_slack, o, 0, 1, r->rss_unknown, NULL);
  text_mem(f, "mapped", &r->mapped, r->compared, o->mapped_slack ? o->mapped_slack : o->page_size,
           o, 0, 1, r->mapped_unknown, NULL);
  ms__compare_work_text(f, r);  // work.c
  ms__compare_design_text(f, r);  // verdict.c

  if (cs && cs->n) {
    char undef[160];
    fputs("\nchecks:\n", f);
    for (size_t i = 0; i < cs->n; i++) {
      const memstub_compare_check *k = &cs->c[i];
      if (k->skipped)
        fprintf(f, "  %-4s %-24s %s: not judged, the %s is unknown\n", "skip", k->spec, k->what,
                check_column(k->key));
      else if (memstub_compare_check_undefined(k, r, undef, sizeof undef))
        fprintf(f, "  %-4s %-24s %s: %s\n", k->pass ? "ok" : "FAIL", k->spec, k->what, undef);
      else
        fprintf(f, "  %-4s %-24s %s = %.6g %s\n", k->pass ? "ok" : "FAIL", k->spec, k->what,
                k->value, k->unit);
    }
  }
  if (ms__compare_verdict_text(f, r, cs) < 0) return -ENOMEM;  // verdict.c
  return fflush(f) != 0 || ferror(f) ? -EIO : 0;
}

// ---- JSON -------------------------------------------------------------------

// Length of the valid UTF-8 sequence at p, or 0.
static size_t utf8_len(const unsigned char *p) {
  size_t n = *p >= 0xf0 && *p <= 0xf4 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc2 && *p < 0xe0 ? 2 : 0;
  if (n == 0 || *p >= 0xf5) return 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  // Overlong forms, surrogates and code points beyond U+10FFFF.
  if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
      (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
    return 0;
  return n;
}

// A JSON string; bytes that are not UTF-8 become U+FFFD.
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    if (*p >= 0x80) {
      size_t n = utf8_len(p);
      if (n) {
        fwrite(p, 1, n, f);
        p += n;
      } else {
        fputs("\\ufffd", f);
        p++;
      }
      continue;
    }
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", f);
    else if (*p == '\t')
      fputs("\\t", f);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
    p++;
  }
  fputc('"', f);
}

// A number, or null when not finite (JSON has no infinity).
static void json_num(FILE *f, double v) {
  if (isfinite(v)) {
    // The shortest of %.15g..%.17g that reads back as v.
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
      snprintf(buf, sizeof buf, "%.*g", prec, v);
      if (strtod(buf, NULL) == v) break;
    }
    fputs(buf, f);
  } else
    fputs("null", f);
}

void ms__compare_json_str(FILE *f, const char *s) { json_str(f, s); }
void ms__compare_json_num(FILE *f, double v) { json_num(f, v); }

static void json_time(FILE *f, const memstub_compare_time *t, size_t n) {
  fprintf(f,
          "\"p50_abs_ns\": %" PRId64 ", \"p99_abs_ns\": %" PRId64 ", \"max_abs_ns\": %" PRId64
          ", \"min_ns\": %" PRId64 ", \"max_ns\": %" PRId64 ", \"mean_ns\": ",
          t->p50_abs, t->p99_abs, t->max_abs, t->min, t->max);
  json_num(f, t->mean);
  fprintf(f, ", \"late\": %zu, \"late_share\": ", t->late);
  json_num(f, n ? (double)t->late / (double)n : 0.0);
}

static void json_mem(FILE *f, const memstub_compare_mem *m, int heap, const char *unknown) {
  // (the unknown stack or heap quotes ORIGINAL; rss and mapped say why)
  if (unknown) {
    fputs("{\"known\": false, \"original\": ", f);
    json_str(f, unknown);
    fputc('}', f);
    return;
  }
  fprintf(f, "{\"known\": true, \"max_abs_bytes\": %" PRId64 ", \"mean_abs_bytes\": ", m->max_abs);
  json_num(f, m->mean_abs);
  fprintf(f,
          ", \"min_bytes\": %" PRId64 ", \"max_bytes\": %" PRId64
          ", \"exact\": %zu, "
          "\"exact_share\": ",
          m->min, m->max, m->exact);
  json_num(f, m->exact_share);
  if (heap) fprintf(f, ", \"mmap_points\": %zu", m->paged);
  fprintf(f,
          ", \"p50_abs_bytes\": %" PRId64 ", \"p90_abs_bytes\": %" PRId64
          ", \"original_peak_bytes\": %" PRId64 ", \"replayed_peak_bytes\": %" PRId64
          ", \"p90_share_of_peak\": ",
          m->p50_abs, m->p90_abs, m->original_peak, m->replayed_peak);
  if (m->original_peak > 0) json_num(f, (double)m->p90_abs / (double)m->original_peak);
  else fputs("null", f);
  fputc('}', f);
}

int memstub_compare_write_json(const memstub_compare_report *r, const memstub_compare_checks *cs,
                               FILE *f) {
  const memstub_compare_options *o = &r->options;
  fputs("{\n  \"format\": \"memstub-compare 1\",\n  \"original\": {\"path\": ", f);
  json_str(f, r->original_name);
  fprintf(f, ", \"rows\": %zu},\n  \"replayed\": {\"path\": ", r->original_rows);
  json_str(f, r->replayed_name);
  fprintf(f, ", \"rows\": %zu},\n", r->replayed_rows);
  ms__compare_whatif_json(f, r);  // whatif.c
  fprintf(f, "  \"points\": {\"compared\": %zu, \"missing\": %zu, \"first_missing\": ", r->compared,
          r->missing);
  if (r->first_missing >= 0)
    fprintf(f, "%" PRId64, r->first_missing);
  else
    fputs("null", f);
  fprintf(f, ", \"repeated\": %zu, \"out_of_order\": %zu},\n", r->repeated, r->out_of_order);
  fprintf(f,
          "  \"settings\": {\"late_ns\": %" PRId64 ", \"stack_slack_bytes\": %" PRId64
          ", \"heap_slack_bytes\": %" PRId64 ", \"page_bytes\": %" PRId64
          ", \"mmap_threshold_bytes\": %" PRId64 ", \"rss_slack_bytes\": %" PRId64
          ", \"mapped_slack_bytes\": %" PRId64 "},\n",
          o->late_ns, o->stack_slack, o->heap_slack, o->page_size, o->mmap_threshold, o->rss_slack,
          o->mapped_slack ? o->mapped_slack : o->page_size);
  fprintf(f,
          "  \"duration\": {\"first_point\": %" PRId64 ", \"last_point\": %" PRId64
          ", \"original_ns\": %" PRId64 ", \"replayed_ns\": %" PRId64 ", \"error_ns\": %" PRId64
          ", \"off_cpu_ns\": %" PRId64 ", \"error_pct\": ",
          r->duration.first_point, r->duration.last_point, r->duration.original_ns,
          r->duration.replayed_ns, r->duration.error_ns, r->duration.off_cpu_ns);
  json_num(f, r->duration.error_pct);
  fprintf(f, "},\n  \"timeline\": {\"changed\": %s, \"fitted\": %s, \"summary\": ",
          r->timeline.changed ? "true" : "false", r->timeline.fitted ? "true" : "false");
  if (r->timeline.summary) json_str(f, r->timeline.summary);
  else fputs("null", f);
  fprintf(f, ", \"recorded_ns\": %" PRId64 ", \"reference_runs\": %" PRId64
             ", \"reference_wall_ns\": ",
          r->timeline.recorded_ns, r->timeline.reference_runs);
  if (r->timeline.reference_wall_ns >= 0) fprintf(f, "%" PRId64, r->timeline.reference_wall_ns);
  else fputs("null", f);
  fputs(", \"reference_cpu_ns\": ", f);
  if (r->timeline.reference_cpu_ns >= 0) fprintf(f, "%" PRId64, r->timeline.reference_cpu_ns);
  else fputs("null", f);
  fprintf(f, ", \"runq_ns\": %" PRId64, r->timeline.runq_ns);
  fputs("},\n  \"time\": {", f);
  json_time(f, &r->time, r->compared);
  fprintf(f, "},\n  \"time_offset_removed\": {\"offset_ns\": %" PRId64 ", ", r->offset_ns);
  json_time(f, &r->adjusted, r->compared);
  fprintf(f, "},\n  \"late_by_cause\": {\"known\": %s, \"off_cpu_known\": %s",
          r->late_by_cause.causes_known ? "true" : "false",
          r->late_by_cause.off_cpu_known ? "true" : "false");
  for (int k = 0; k < MEMSTUB_LATE_CAUSES; k++)
    fprintf(f, ", \"%s\": {\"points\": %zu, \"max_ns\": %" PRId64 "}",
            memstub_late_cause_name((memstub_late_cause)k, 1), r->late_by_cause.rows[k],
            r->late_by_cause.max_ns[k]);
  fprintf(f, "},\n  \"time_without_host\": {\"host_points\": %zu, ", r->host_rows);
  json_time(f, &r->stub_time, r->compared - r->host_rows);
  fputs("},\n", f);
  ms__compare_kinds_json(f, r);
  ms__compare_work_json(f, r);  // work.c
  fputs("  \"replay\": {\"cpu_ns\": ", f);
  if (r->replay_cpu_ns >= 0) fprintf(f, "%" PRId64, r->replay_cpu_ns);
  else fputs("null", f);
  fputs(", \"off_cpu_ns\": ", f);
  if (r->replay_off_cpu_ns >= 0) fprintf(f, "%" PRId64, r->replay_off_cpu_ns);
  else fputs("null", f);
  fputs(", \"duration_ns\": ", f);
  if (r->replay_duration_ns >= 0) fprintf(f, "%" PRId64, r->replay_duration_ns);
  else fputs("null", f);
  fputs(", \"cpu_share\": ", f);
  if (r->replay_cpu_ns >= 0 && r->replay_duration_ns > 0)
    json_num(f, (double)r->replay_cpu_ns / (double)r->replay_duration_ns);
  else fputs("null", f);
  fputs("},\n  \"stack\": ", f);
  json_mem(f, &r->stack, 0, r->stack_unknown);
  fputs(",\n  \"heap\": ", f);
  json_mem(f, &r->heap, 1, r->heap_unknown);
  fputs(",\n  \"rss\": ", f);
  json_mem(f, &r->rss, 0, r->rss_unknown);
  fputs(",\n  \"mapped\": ", f);
  json_mem(f, &r->mapped, 0, r->mapped_unknown);
  fputs(",\n  \"checks\": [", f);
  int pass = 1;
  for (size_t i = 0; cs && i < cs->n; i++) {
    const memstub_compare_check *k = &cs->c[i];
    pass &= k->pass || k->skipped;
    fputs(i ? ",\n    {\"spec\": " : "\n    {\"spec\": ", f);
    json_str(f, k->spec);
    fputs(", \"key\": ", f);
    json_str(f, k->key);
    fputs(", \"limit\": ", f);
    json_num(f, k->limit);
    fputs(", \"value\": ", f);
    json_num(f, k->value);
    fputs(", \"unit\": ", f);
    json_str(f, k->unit);
    // A skipped check (its column unknown in ORIGINAL) neither passed nor failed.
    fprintf(f, ", \"bound\": \"%s\", \"pass\": %s, \"skipped\": %s}",
            k->dir == MEMSTUB_COMPARE_AT_MOST ? "at_most" : "at_least",
            k->skipped ? "null" : k->pass ? "true" : "false", k->skipped ? "true" : "false");
  }
  fprintf(f, "%s],\n", cs && cs->n ? "\n  " : "");
  ms__compare_design_json(f, r);  // verdict.c
  if (ms__compare_verdict_json(f, r, cs) < 0) return -ENOMEM;
  fprintf(f, "  \"pass\": %s\n}\n", pass ? "true" : "false");
  return fflush(f) != 0 || ferror(f) ? -EIO : 0;
}
