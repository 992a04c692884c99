// The what-if options gen and replay share (docs/formats.md, "What-if
// transforms"), and the note on what they did.
#include <math.h>
#include <stdio.h>

#include "cli.h"
#include "memstub/gen.h"

int ms_cli_whatif_take(ms_cli_parser *p, int c, memstub_gen_options *o) {
  double *scale[] = {&o->time_scale, &o->heap_scale,   &o->stack_scale, &o->rss_scale,
                     &o->mapped_scale, &o->cpu_scale, &o->churn_scale};
  if (c < MS_CLI_WHATIF || c >= MS_CLI_WHATIF_END) return 0;
  double v;
  if (ms_cli_arg_double(p, &v) < 0) return -1;
  if (!isfinite(v) || v < 0) {
    ms_cli_usage(p->spec->name, "%s: must be a finite number >= 0, found '%s'", p->opt, p->arg);
    return -1;
  }
  *scale[c - MS_CLI_WHATIF] = v;
  return 1;
}

void ms_cli_whatif_note(const memstub_gen *g, const char *label) {
  char buf[2048];
  memstub_gen_whatif_format(g, buf, sizeof buf);
  if (buf[0]) fprintf(stderr, "memstub: %s%s", label, buf);
}

void ms_cli_timeline_estimated_threads(const char *trace, const memstub_gen_threads *g) {
  for (int64_t k = 0; k < g->nthreads; k++)
    if (g->gen[k]->timeline_estimated) {  // one cause, one warning for the process
      ms_cli_warn("%s: thread %lld: %s", trace, (long long)k, g->gen[k]->timeline_estimated);
      return;
    }
}

void ms_cli_timeline_warn(const char *trace, const memstub_gen *g) {
  if (g->timeline_uneven) ms_cli_timeline_uneven(trace);
  if (g->timeline_estimated) ms_cli_warn("%s: %s", trace, g->timeline_estimated);
}

void ms_cli_timeline_uneven(const char *trace) {
  ms_cli_warn("%s: the stub's timeline has the reference's total but maybe not its shape (the "
              "timeline line says which rows): where the recorder's calls were cheaper than its "
              "average the stub runs short and late, elsewhere long; 'memstub compare' of a "
              "measured replay shows where (docs/recording.md, \"The stub's timeline\")",
              trace);
}
