// The calls of a trace recorded with --calls into a stub being made (memstub
// gen --data, memstub replay TRACE): the call replay (docs/runtime.md, "The
// call replay"), or the class replay with a note saying why.
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memstub/gen.h"
#include "ms_common.h"

int ms_cli_gen_calls(const char *cmd, const char *in, const memstub_trace *t,
                     const memstub_gen_options *o, memstub_gen *g, int header,
                     memstub_error *err) {
  if (!memstub_trace_get_meta(t, "calls.file")) return 0;
  if (strcmp(in, "-") == 0) {
    ms_cli_note("standard input: its calls file (calls.file) is not beside it: the class replay");
    return 0;
  }
  if (header) {
    ms_cli_note("%s.calls: a header carries no calls (a data file does, --data): the class "
                "replay", in);
    return 0;
  }
  if (o->churn_scale > 1.0 || o->heap_scale <= 0) {
    ms_cli_note("%s.calls: left out: %s: the class replay", in,
                o->churn_scale > 1.0 ? "--churn-scale above 1 asks for calls the component "
                                       "never made"
                                     : "--heap-scale 0 leaves no call to make");
    return 0;
  }
  char *path = ms__asprintf("%s.calls", in);
  if (!path) return memstub_error_set(err, -ENOMEM, "out of memory");
  int rc = memstub_gen_calls(g, t, path, o->heap_scale, o->churn_scale, err);
  if (rc > 0)  // never a silent success: a reading that stopped early once ended gen so
    rc = memstub_error_set(err, -EIO, "%s: internal error: the calls stopped at %d", path, rc);
  if (rc < 0) {
    if (!strstr(err->msg, path)) memstub_error_prefix(err, path);
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n, " (%s --no-calls for the class replay)", cmd);
  }
  if (rc == 0)
    ms_cli_note("%s: %s calls of %s blocks in %s bytes: replayed call for call", path,
                ms_cli_count(g->stub.ncallcount), ms_cli_count(g->stub.ncallblocks),
                ms_cli_count(g->stub.ncallseq));
  if (rc == 0) {
    /* What the replay holds of its own beside the component's blocks (its
     * table of blocks, runtime/call_replay.c, and the calls: a data file's
     * read from it two windows at a time, runtime/call_source.c; memstub
     * replay TRACE's in memory): a host's RssAnon counts it, the component
     * had none of it. */
    int from_file = strcmp(cmd, "gen") == 0;
    int64_t calls = from_file ? 2 * ((int64_t)32 << 10) : g->stub.ncallseq;
    if (calls > g->stub.ncallseq) calls = g->stub.ncallseq;
    int64_t own = g->stub.ncallblocks * 4 + calls;
    char tb[32], cb[32], pb[32], what[128];
    ms__fmt_bytes(g->stub.ncallblocks * 4, tb, sizeof tb);
    ms__fmt_bytes(calls, cb, sizeof cb);
    snprintf(what, sizeof what, from_file ? "%s of the calls read from the file at a time"
                                          : "the calls in memory (%s)", cb);
    if (g->peak_rss > 0)
      ms_cli_note("%s: the replay's own memory: its table of blocks (4 bytes a block, %s) and "
                  "%s, %.1f %% of the trace's peak rss (%s): a host's RssAnon holds it beside "
                  "the component's", path, tb, what, 100.0 * (double)own / (double)g->peak_rss,
                  ms__fmt_bytes(g->peak_rss, pb, sizeof pb));
    else
      ms_cli_note("%s: the replay's own memory: its table of blocks (4 bytes a block, %s) and %s",
                  path, tb, what);
  }
  if (rc == 0 && o->churn_scale != 1.0)
    ms_cli_note("%s: --churn-scale %g: %s calls of short-lived blocks (made and freed within a "
                "row) left out; the heap at every row as recorded", path, o->churn_scale,
                ms_cli_count(g->calls_churn_dropped));
  if (rc == 0 && g->calls_threads > 1)  // exact heap, not the threads' arenas
    ms_cli_note("%s: the calls of %s%lld threads merged in time order, made on the stub's one "
                "thread: the heap at every row is the process's, but from one arena, not "
                "theirs", path, g->calls_threads >= 64 ? "at least " : "",
                (long long)g->calls_threads);
  if (rc == 0 && g->calls_unknown)
    ms_cli_warn("%s: %s frees or reallocs of blocks allocated before the trace's scope: "
                "left out (a realloc made from NULL)", path, ms_cli_count(g->calls_unknown));
  if (rc == 0 && g->calls_rows_off)
    ms_cli_warn("%s: %s rows whose heap_bytes the calls do not give (the first: row %lld): "
                "the replay's heap differs from the trace's there", path,
                ms_cli_count(g->calls_rows_off), (long long)g->calls_rows_off_first);
  free(path);
  return rc;
}

void ms_cli_gen_calls_threads(const char *in, const memstub_trace *t) {
  if (!memstub_trace_get_meta(t, "calls.file")) return;
  ms_cli_note("%s.calls: left out: a trace of several threads replays by size class, each "
              "thread's heap one block resized (the call replay carries one thread)",
              strcmp(in, "-") == 0 ? "standard input" : in);
}
