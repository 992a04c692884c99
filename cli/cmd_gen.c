// memstub gen: a trace becomes a memUse header, through GNU m4.
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memstub/calib.h"
#include "memstub/gen.h"

static const char usage_text[] =
    "usage: memstub gen TRACE [-o memuse.h] [options]\n"
    "\n"
    "Generate the stub's simulation data file (the paper's Listing 1): a C header\n"
    "with memUse[NUMDATA] points made from TRACE (a trace CSV, '-' for stdin).\n"
    "Stack changes are normalised into frame pushes and pops; rows that are not\n"
    "LIFO-shaped get zero-delay points inserted, and memPoint[] maps every point\n"
    "back to its row. Without -o the header goes to standard output.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE       write the header to FILE (atomically)\n"
    "  -n, --name NAME         prefix the header's names: NAME_NUMDATA, NAME_memUse,\n"
    "                          NAME_memPoint, NAME_memStub (to link several stubs)\n"
    "      --time-scale F      what-if: multiply every time by F (0.7 = 30%% faster)\n"
    "      --heap-scale F      what-if: multiply the heap totals by F\n"
    "      --stack-scale F     what-if: multiply the stack totals by F\n"
    "  -c, --calibration FILE  compensate for the overheads measured on the target\n"
    "                          host (a profile from 'memstub calibrate'): the stack\n"
    "                          offset and overhead per frame, the heap overhead,\n"
    "                          and the predicted time of each point's work\n"
    "  -t, --timing MODE       with --calibration: the timing the stub will be\n"
    "                          replayed with, deadline (default; work starts early\n"
    "                          by its predicted cost) or usleep (delays shortened)\n"
    "  -f, --format FORM       the form of the points: listing (the paper's\n"
    "                          Listing 1, readable), compact (packed, compiles in\n"
    "                          seconds at millions of points) or auto (default:\n"
    "                          listing up to 16384 points, compact beyond)\n"
    "  -h, --help              show this help\n";

// Progress on a terminal while a large stub's points are written.
static void gen_progress(void *ctx, int64_t done, int64_t total) {
  (void)ctx;
  if (total >= 100000) ms_cli_progress("memstub gen: writing points", (uint64_t)done, (uint64_t)total);
}

int ms_cmd_gen(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                       {"name", required_argument, NULL, 'n'},
                                       {"time-scale", required_argument, NULL, 'T'},
                                       {"heap-scale", required_argument, NULL, 'H'},
                                       {"stack-scale", required_argument, NULL, 'S'},
                                       {"calibration", required_argument, NULL, 'c'},
                                       {"timing", required_argument, NULL, 't'},
                                       {"format", required_argument, NULL, 'f'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  const char *out = "-", *timing = NULL;
  memstub_gen_emit_options eo = {.format = MEMSTUB_GEN_FORMAT_AUTO};
  if (ms_cli_progress_enabled()) eo.progress = gen_progress;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":o:n:c:t:f:h", opts, NULL)) != -1) {
    switch (c) {
      case 'o': out = optarg; break;
      case 'n': o.name = optarg; break;
      case 'T':
        if (ms_cli_double("gen", "--time-scale", optarg, &o.time_scale) < 0) return MS_EXIT_USAGE;
        break;
      case 'H':
        if (ms_cli_double("gen", "--heap-scale", optarg, &o.heap_scale) < 0) return MS_EXIT_USAGE;
        break;
      case 'S':
        if (ms_cli_double("gen", "--stack-scale", optarg, &o.stack_scale) < 0)
          return MS_EXIT_USAGE;
        break;
      case 'c': o.profile_path = optarg; break;
      case 't':
        timing = optarg;
        if (strcmp(optarg, "deadline") == 0) o.timing = MEMSTUB_TIMING_DEADLINE;
        else if (strcmp(optarg, "usleep") == 0) o.timing = MEMSTUB_TIMING_USLEEP;
        else
          return ms_cli_usage("gen", "--timing: expected deadline or usleep, found '%s'", optarg);
        break;
      case 'f':
        if (memstub_gen_format_parse(optarg, &eo.format) < 0)
          return ms_cli_usage("gen", "--format: expected listing, compact or auto, found '%s'",
                              optarg);
        break;
      case 'h': fputs(usage_text, stdout); return MS_EXIT_OK;
      case ':': return ms_cli_usage("gen", "%s needs a value", argv[optind - 1]);
      default: return ms_cli_usage("gen", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return ms_cli_usage("gen", optind == argc ? "missing TRACE" : "more than one TRACE given");
  const char *in = argv[optind];
  o.source = in;
  if (timing && !o.profile_path)
    return ms_cli_usage("gen", "--timing says what to compensate for: it needs --calibration");

  memstub_error err = {0};
  memstub_trace *t = NULL;
  memstub_gen *g = NULL;
  memstub_profile prof;
  int rc = 0;
  if (o.profile_path) {
    char warn[512];
    if ((rc = memstub_profile_read(o.profile_path, &prof, &err)) < 0 ||
        (rc = memstub_profile_check(&prof, o.profile_path, warn, sizeof warn, &err)) < 0)
      return ms_cli_fail(&err);
    if (rc > 0) ms_cli_warn("%s", warn);
    o.profile = &prof;
  }
  // On a terminal, the stage under way (a 10M-row trace reads for a second).
  if (ms_cli_progress_enabled()) fprintf(stderr, "\r\033[Kmemstub gen: reading %s", in);
  rc = memstub_trace_read(in, &t, &err);
  if (rc == 0 && ms_cli_progress_enabled())
    fprintf(stderr, "\r\033[Kmemstub gen: normalising %zu rows", t->n);
  if (rc == 0 && (rc = memstub_gen_build(t, &o, &g, &err)) < 0) memstub_error_prefix(&err, in);
  if (ms_cli_progress_enabled()) fputs("\r\033[K", stderr);
  if (rc == 0) rc = memstub_gen_emit_ex(g, out, &eo, NULL, &err);
  if (rc == 0 && o.profile) {
    char comp[512];
    memstub_gen_comp_format(g, comp, sizeof comp);
    ms_cli_note("compensation for %s: %s", o.profile_path, comp);
  }
  if (rc == 0 && strcmp(out, "-") != 0)
    ms_cli_note("%s: %lld points (%lld inserted) for %lld rows of %s, %lld ns", out,
                (long long)g->stub.numdata, (long long)g->stub.inserted,
                (long long)g->stub.norig, in, (long long)g->stub.duration_ns);
  memstub_gen_free(g);
  memstub_trace_free(t);
  return rc < 0 ? ms_cli_fail(&err) : MS_EXIT_OK;
}
