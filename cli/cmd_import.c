// memstub import: valgrind massif or glibc memusage files into traces.
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memstub/import.h"

static const char usage_text[] =
    "usage: memstub import massif FILE [-o TRACE] [--ns-per-unit F]\n"
    "       memstub import memusage FILE [-o TRACE]\n"
    "                               [--stack-curve auto|normal|inverted|none]\n"
    "                               [--time-unit auto|cycles|us] [--cycles-per-ns F]\n"
    "\n"
    "Convert another tool's recording into a trace (docs/recording.md). Without -o\n"
    "the trace goes to standard output.\n"
    "\n"
    "massif: valgrind --tool=massif [--stacks=yes] output. mem_heap_B becomes\n"
    "heap_bytes, mem_stacks_B stack_bytes, mem_heap_extra_B the extra column\n"
    "heap_extra_bytes. time_unit ms converts to ns; i (instructions) and B (bytes)\n"
    "are refused unless --ns-per-unit says how many ns one unit takes.\n"
    "\n"
    "memusage: the binary file of glibc's `memusage -d FILE`. Some glibc versions\n"
    "record the stack curve upside down; it is detected and corrected, and the\n"
    "command says so. A curve too degenerate to read (few distinct values, nested\n"
    "allocations that never move it) is imported as unknown: stack 0 and the\n"
    "metadata line 'stack: unknown (...)', with a warning. Times are cycle counter\n"
    "ticks on x86-64 and aarch64 (converted with this host's rate unless\n"
    "--cycles-per-ns is given) or microseconds.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE        write the trace to FILE (atomically)\n"
    "      --ns-per-unit F      massif: nanoseconds per instruction or byte of time\n"
    "      --stack-curve C      memusage: auto (detect, the default), normal,\n"
    "                           inverted, none (not imported: 0, marked unknown)\n"
    "      --time-unit U        memusage: auto, cycles or us\n"
    "      --cycles-per-ns F    memusage: counter ticks per ns of the recording host\n"
    "  -h, --help               show this help\n";

int ms_cmd_import(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                       {"ns-per-unit", required_argument, NULL, 'N'},
                                       {"stack-curve", required_argument, NULL, 'S'},
                                       {"time-unit", required_argument, NULL, 'T'},
                                       {"cycles-per-ns", required_argument, NULL, 'C'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  memstub_import_options o;
  memstub_import_options_init(&o);
  const char *out = "-";
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (c) {
      case 'o': out = optarg; break;
      case 'N':
        if (ms_cli_double("import", "--ns-per-unit", optarg, &o.ns_per_unit) < 0)
          return MS_EXIT_USAGE;
        if (!(o.ns_per_unit > 0)) return ms_cli_usage("import", "--ns-per-unit must be > 0");
        break;
      case 'C':
        if (ms_cli_double("import", "--cycles-per-ns", optarg, &o.cycles_per_ns) < 0)
          return MS_EXIT_USAGE;
        if (!(o.cycles_per_ns > 0)) return ms_cli_usage("import", "--cycles-per-ns must be > 0");
        break;
      case 'S':
        if (strcmp(optarg, "auto") == 0) o.stack_curve = MEMSTUB_STACK_AUTO;
        else if (strcmp(optarg, "normal") == 0) o.stack_curve = MEMSTUB_STACK_NORMAL;
        else if (strcmp(optarg, "inverted") == 0) o.stack_curve = MEMSTUB_STACK_INVERTED;
        else if (strcmp(optarg, "none") == 0) o.stack_curve = MEMSTUB_STACK_NONE;
        else return ms_cli_usage("import", "--stack-curve: expected auto, normal, inverted or none, found '%s'", optarg);
        break;
      case 'T':
        if (strcmp(optarg, "auto") == 0) o.time_unit = MEMSTUB_TIME_AUTO;
        else if (strcmp(optarg, "cycles") == 0) o.time_unit = MEMSTUB_TIME_CYCLES;
        else if (strcmp(optarg, "us") == 0) o.time_unit = MEMSTUB_TIME_US;
        else return ms_cli_usage("import", "--time-unit: expected auto, cycles or us, found '%s'", optarg);
        break;
      case 'h': fputs(usage_text, stdout); return MS_EXIT_OK;
      case ':': return ms_cli_usage("import", "%s needs a value", argv[optind - 1]);
      default: return ms_cli_usage("import", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind >= argc) return ms_cli_usage("import", "missing the format (massif or memusage)");
  const char *fmt = argv[optind];
  int massif = strcmp(fmt, "massif") == 0;
  if (!massif && strcmp(fmt, "memusage") != 0)
    return ms_cli_usage("import", "unknown format '%s' (expected massif or memusage)", fmt);
  if (optind + 2 != argc)
    return ms_cli_usage("import", optind + 1 == argc ? "missing FILE" : "more than one FILE given");
  const char *in = argv[optind + 1];

  memstub_error err = {0};
  memstub_trace *t = NULL;
  int rc = massif ? memstub_import_massif(in, &o, &t, &err) : memstub_import_memusage(in, &o, &t, &err);
  if (rc == 0) {
    const char *curve = memstub_trace_get_meta(t, "memusage.stack_curve");
    if (curve && strncmp(curve, "inverted", 8) == 0)
      ms_cli_note("%s: the stack curve was recorded upside down (a glibc memusage bug, see "
                  "docs/recording.md); corrected: %s",
                  in, curve);
    // What the importer could not trust: warnings, each from its metadata line.
    static const char *const doubts[] = {"memusage.incomplete", "memusage.inconsistent",
                                         "memusage.stack_degenerate", "massif.inconsistent",
                                         "stack", "heap"};
    for (size_t i = 0; i < sizeof doubts / sizeof *doubts; i++)
      if (memstub_trace_get_meta(t, doubts[i]) &&
          (i < 4 || strncmp(memstub_trace_get_meta(t, doubts[i]), "unknown", 7) == 0))
        ms_cli_warn("%s: %s: %s", in, doubts[i], memstub_trace_get_meta(t, doubts[i]));
    if (!massif && !o.cycles_per_ns && o.time_unit != MEMSTUB_TIME_US)
      ms_cli_note("%s: times converted with this host's cycle counter rate (give "
                  "--cycles-per-ns when the file comes from another machine)",
                  in);
    rc = memstub_trace_write(t, out, &err);
  }
  if (rc == 0 && strcmp(out, "-") != 0)
    ms_cli_note("%s: %zu rows from %s file %s, %lld ns", out, t->n, fmt, in,
                (long long)t->pts[t->n - 1].time_ns);
  memstub_trace_free(t);
  return rc < 0 ? ms_cli_fail(&err) : MS_EXIT_OK;
}
