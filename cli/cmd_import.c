// memstub import: valgrind massif, glibc memusage or heaptrack files into traces.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/import.h"
#include "ms_common.h"

/* Progress for a large file on a terminal: its reading, in bytes, then the
 * conversion as a stage line; the importer's own parse then runs on the
 * buffer. As memstub_import_massif / _memusage otherwise. */
static int import_with_progress(const char *fmt, const char *in, const memstub_import_options *o,
                                memstub_trace **t, memstub_error *err) {
  int massif = strcmp(fmt, "massif") == 0;
  if (!ms__progress_enabled())
    return massif ? memstub_import_massif(in, o, t, err) : memstub_import_memusage(in, o, t, err);
  char *label = ms__asprintf("memstub import: reading %s", in), *buf = NULL;
  size_t len = 0;
  *t = NULL;
  int rc = label ? ms__progress_read_file(in, label, &buf, &len, err)
                 : memstub_error_set(err, -ENOMEM, "out of memory");
  ms__progress p;
  ms__progress_begin(&p, label, 0, 1);
  char size[MS__FMT_MAX], *stage = NULL;
  if (rc == 0 && len >= (8u << 20) &&
      (stage = ms__asprintf("memstub import: converting %s of %s output from %s",
                            ms__fmt_bytes((int64_t)len, size, sizeof size), fmt, in)))
    ms__progress_stage(&p, stage);
  if (rc == 0)
    rc = massif ? memstub_import_massif_parse(in, buf, len, o, t, err)
                : memstub_import_memusage_parse(in, (const unsigned char *)buf, len, o, t, err);
  ms__progress_end(&p);
  free(stage);
  free(buf);
  free(label);
  return rc;
}

enum { O_NS_PER_UNIT = MS_CLI_LONG, O_STACK_CURVE, O_TIME_UNIT, O_CYCLES_PER_NS, O_CALLS };

static const ms_cli_option options[] = {
    {"output", 'o', "FILE", "write the trace to FILE (atomically)"},
    {"ns-per-unit", O_NS_PER_UNIT, "F", "massif: nanoseconds per instruction or byte of time"},
    {"stack-curve", O_STACK_CURVE, "C",
     "memusage: auto (detect, the default), normal,\n"
     "inverted, none (not imported: 0, marked unknown)"},
    {"time-unit", O_TIME_UNIT, "U", "memusage: auto, cycles or us"},
    {"cycles-per-ns", O_CYCLES_PER_NS, "F", "memusage: counter ticks per ns of the recording host"},
    {"calls", O_CALLS, NULL,
     "heaptrack: the allocation sequence too, into TRACE.calls\n"
     "(for memstub gen --data: the call replay); needs -o"},
    {0}};

static const ms_cli_spec spec = {
    "import",
    "usage: memstub import massif FILE [-o TRACE] [--ns-per-unit F]\n"
    "       memstub import memusage FILE [-o TRACE]\n"
    "                               [--stack-curve auto|normal|inverted|none]\n"
    "                               [--time-unit auto|cycles|us] [--cycles-per-ns F]\n"
    "       memstub import heaptrack FILE [-o TRACE [--calls]]\n"
    "\n"
    "Convert another tool's recording into a trace (docs/recording.md). Without -o\n"
    "the trace goes to standard output.\n"
    "\n"
    "massif: valgrind --tool=massif [--stacks=yes] output. mem_heap_B becomes\n"
    "heap_bytes, mem_stacks_B stack_bytes, mem_heap_extra_B the extra column\n"
    "heap_extra_bytes. time_unit ms converts to ns; i (instructions) and B (bytes)\n"
    "are refused unless --ns-per-unit says how many ns one unit takes. With\n"
    "--pages-as-heap=yes massif counts every page the process mapped: that becomes\n"
    "mapped_bytes, and the heap is marked unknown.\n"
    "\n"
    "memusage: the binary file of glibc's `memusage -d FILE`. Some glibc versions\n"
    "record the stack curve upside down; it is detected and corrected, and the\n"
    "command says so. A curve too degenerate to read (few distinct values, nested\n"
    "allocations that never move it) is imported as unknown: stack 0 and the\n"
    "metadata line 'stack: unknown (...)', with a warning. Times are cycle counter\n"
    "ticks on x86-64 and aarch64 (converted with this host's rate unless\n"
    "--cycles-per-ns is given) or microseconds.\n"
    "\n"
    "heaptrack: heaptrack.PROG.PID.zst or .gz (decompressed by running zstd or\n"
    "gzip, within a minute and a second per MiB, or $MEMSTUB_CHILD_TIMEOUT\n"
    "seconds) or its text. One row per tick of heaptrack's 10 ms timer: heap_bytes,\n"
    "heap_peak_bytes (the highest since the previous row), rss_bytes (the\n"
    "process's RSS, file pages included, from the first sample on) and the\n"
    "allocator calls since the previous row (calls_malloc_*, calls_free_*).\n"
    "The stack is unknown. With --calls the allocations and deallocations go, in\n"
    "order, into TRACE.calls beside the trace, for the call replay (memstub gen\n"
    "--data): each a malloc, or a free of the last live allocation of its size and\n"
    "stack (heaptrack does not say which block a deallocation ends).\n"
    "\n",
    options, 27, NULL};

// A number > 0 for the current option: 0, or -1 after a usage error.
static int positive(ms_cli_parser *p, double *out) {
  if (ms_cli_arg_double(p, out) < 0) return -1;
  if (*out > 0) return 0;
  ms_cli_usage("import", "%s must be > 0", p->opt);
  return -1;
}

int ms_cmd_import(int argc, char **argv) {
  static const char *const curves[] = {"auto", "normal", "inverted", "none", NULL};
  static const int curve_of[] = {MEMSTUB_STACK_AUTO, MEMSTUB_STACK_NORMAL, MEMSTUB_STACK_INVERTED,
                                 MEMSTUB_STACK_NONE};
  static const char *const units[] = {"auto", "cycles", "us", NULL};
  static const int unit_of[] = {MEMSTUB_TIME_AUTO, MEMSTUB_TIME_CYCLES, MEMSTUB_TIME_US};
  memstub_import_options o;
  memstub_import_options_init(&o);
  const char *out = "-";
  int calls = 0;
  ms_cli_parser p = {.spec = &spec};
  int c, k, bad = 0;
  while (!bad && (c = ms_cli_next(&p, argc, argv)) > 0) {
    switch (c) {
      case 'o': out = p.arg; break;
      case O_CALLS: calls = 1; break;
      case O_NS_PER_UNIT: bad = positive(&p, &o.ns_per_unit); break;
      case O_CYCLES_PER_NS: bad = positive(&p, &o.cycles_per_ns); break;
      case O_STACK_CURVE:
        if (!(bad = ms_cli_arg_choice(&p, curves, &k))) o.stack_curve = curve_of[k];
        break;
      case O_TIME_UNIT:
        if (!(bad = ms_cli_arg_choice(&p, units, &k))) o.time_unit = unit_of[k];
        break;
    }
  }
  if (bad) return MS_EXIT_USAGE;
  if (c < 0) return p.status;
  int first = p.optind;
  if (first >= argc)
    return ms_cli_usage("import", "missing the format (massif, memusage or heaptrack)");
  const char *fmt = argv[first];
  static const char *const formats[] = {"massif", "memusage", "heaptrack"};
  static int (*const importer[])(const char *, const memstub_import_options *, memstub_trace **,
                                 memstub_error *) = {memstub_import_massif, memstub_import_memusage,
                                                     memstub_import_heaptrack};
  size_t f = 0;
  while (f < 3 && strcmp(fmt, formats[f]) != 0) f++;
  if (f == 3)
    return ms_cli_usage("import", "unknown format '%s' (expected massif, memusage or heaptrack)", fmt);
  int memusage = f == 1;
  if (first + 2 != argc)
    return ms_cli_usage("import", first + 1 == argc ? "missing FILE" : "more than one FILE given");
  const char *in = argv[first + 1];
  if (calls && f != 2)
    return ms_cli_usage("import", "--calls: only heaptrack's files have the calls in order");
  if (calls && strcmp(out, "-") == 0)
    return ms_cli_usage("import", "--calls: needs -o TRACE (the calls go into TRACE.calls)");
  char *calls_path = calls ? ms__asprintf("%s.calls", out) : NULL;
  if (calls && !calls_path) return ms_cli_error("out of memory");
  o.calls_path = calls_path;

  memstub_error err = {0};
  memstub_trace *t = NULL;
  // heaptrack's files are compressed: read by zstd or gzip, then parsed whole.
  int rc = strcmp(fmt, "heaptrack") == 0 ? importer[f](in, &o, &t, &err)
                                         : import_with_progress(fmt, in, &o, &t, &err);
  if (rc == 0) {
    const char *curve = memstub_trace_get_meta(t, "memusage.stack_curve");
    if (curve && strncmp(curve, "inverted", 8) == 0)
      ms_cli_note("%s: the stack curve was recorded upside down (a glibc memusage bug, see "
                  "docs/recording.md); corrected: %s",
                  in, curve);
    // What the importer could not trust: warnings, each from its metadata line.
    static const char *const doubts[] = {"memusage.incomplete", "memusage.inconsistent",
                                         "memusage.stack_degenerate", "massif.inconsistent",
                                         "heaptrack.attached", "stack", "heap"};
    for (size_t i = 0; i < sizeof doubts / sizeof *doubts; i++)
      if (memstub_trace_get_meta(t, doubts[i]) &&
          (i < 5 || strncmp(memstub_trace_get_meta(t, doubts[i]), "unknown", 7) == 0))
        ms_cli_warn("%s: %s: %s", in, doubts[i], memstub_trace_get_meta(t, doubts[i]));
    // memusage's blind spot, the memalign family: said in the metadata, and here.
    const char *hm = memstub_trace_get_meta(t, "memusage.heap_measure");
    if (hm)
      ms_cli_warn("%s: memusage.heap_measure: %s: the blocks a program allocates with those are "
                  "not in heap_bytes (memstub record sees them)",
                  in, hm);
    // Times measured under a slow observer are its run's, not the program's.
    const char *unit = memstub_trace_get_meta(t, "massif.time_unit");
    if ((f == 0 && unit && strcmp(unit, "ms") == 0) || f == 2) {
      char d[32];
      ms_cli_warn("%s: the times are the run's under %s, which runs a program %s slower than "
                  "natively (jq: 0.16-0.20 s natively, %s under it), and a stub of this trace "
                  "replays its %s: time the program without it and give 'memstub gen "
                  "--time-scale NATIVE_SECONDS/%.3f'",
                  in, f == 0 ? "valgrind" : "heaptrack", f == 0 ? "10 to 50 times" : "2 to 25 times",
                  f == 0 ? "2.06 s" : "0.88 s", ms__fmt_ns(t->pts[t->n - 1].time_ns, d, sizeof d),
                  (double)t->pts[t->n - 1].time_ns / 1e9);
    }
    if (memusage && !o.cycles_per_ns && o.time_unit != MEMSTUB_TIME_US)
      ms_cli_note("%s: times converted with this host's cycle counter rate (give "
                  "--cycles-per-ns when the file comes from another machine)",
                  in);
    rc = memstub_trace_write(t, out, &err);
    if (rc < 0 && calls_path) unlink(calls_path);  // no calls file without its trace
  }
  if (rc == 0 && calls_path)
    ms_cli_note("%s: the allocation sequence (%s), for the call replay (memstub gen --data); a "
                "free ends the last live block of its size and stack, which heaptrack does not "
                "tell apart: lifetimes within one site may differ",
                calls_path,
                memstub_trace_get_meta(t, "heaptrack.calls"));
  if (rc == 0 && strcmp(out, "-") != 0) {
    char d[32];
    ms_cli_note("%s: %s rows from %s file %s, %s", out, ms_cli_count((int64_t)t->n), fmt, in,
                ms__fmt_ns(t->pts[t->n - 1].time_ns, d, sizeof d));
  }
  memstub_trace_free(t);
  free(calls_path);
  return rc < 0 ? ms_cli_fail(&err) : MS_EXIT_OK;
}
