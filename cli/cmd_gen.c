// memstub gen: a trace becomes a memUse header, through GNU m4.
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memstub/calib.h"
#include "memstub/gen.h"
#include "memstub/generations.h"
#include "memstub/runtime.h"
#include "ms_common.h"

enum { O_DATA = MS_CLI_LONG, O_RELEASE, O_HOLD, O_HOLD_API, O_CHECK_NAME, O_NO_CALLS };

static const ms_cli_option options[] = {
    {"output", 'o', "FILE", "write the header to FILE (atomically)"},
    {"name", 'n', "NAME",
     "prefix the header's names: NAME_NUMDATA, NAME_memUse,\n"
     "NAME_memPoint, NAME_memStub (to link several stubs);\n"
     "a C identifier of at most 64 characters that is not\n"
     "a C keyword, starts with none of _, m4_ and MS_, and\n"
     "meets none of memstub's own names (docs/runtime.md)"},
    MS_CLI_WHATIF_OPTIONS,
    {"release", O_RELEASE, NULL,
     "release what the regions left alive (TRACE.generations,\n"
     "from memstub record) when the program freed it: rows\n"
     "added after each region's end"},
    {"hold", O_HOLD, NULL,
     "for an embedded stub (memstub_add_stub): return at the\n"
     "trace's end holding what its regions left alive\n"
     "(TRACE.generations), freed by a timer when the program\n"
     "freed it (memstub_NAME_release() frees it sooner)"},
    {"hold-api", O_HOLD_API, NULL,
     "as --hold, freed only when the host calls\n"
     "memstub_NAME_release() (docs/runtime.md)"},
    {"calibration", 'c', "FILE",
     "compensate for the overheads measured on the target\n"
     "host (a profile from 'memstub calibrate'): the stack\n"
     "offset and overhead per frame, the heap overhead,\n"
     "and the predicted time of each point's work; the\n"
     "profile's loop rate and touch costs (and the trace's\n"
     "work_mem_share) go into the stub's work model"},
    {"timing", 't', "MODE",
     "the timing the stub replays with by default (its\n"
     "program's --timing and MEMSTUB_TIMING override it):\n"
     "online (default: deadlines, each row started early\n"
     "by the work the replay learns on the host), deadline\n"
     "(no row ends before its deadline) or usleep (the\n"
     "paper's relative sleeps). With --calibration, what\n"
     "it is compensated for: online the sizes only,\n"
     "deadline the delays too (work starts early by its\n"
     "predicted cost), usleep the delays shortened"},
    {"format", 'f', "FORM",
     "the form of the points: listing (the paper's\n"
     "Listing 1, readable), compact (packed, compiles in\n"
     "seconds at millions of points) or auto (default:\n"
     "listing up to 16384 points, compact beyond)"},
    {"data", O_DATA, "FILE",
     "write the stub's points to the binary data file FILE\n"
     "instead of a header (for traces too large to compile;\n"
     "memstub replay --data, memstub build --data). With a\n"
     "trace recorded with --calls (TRACE.calls beside it)\n"
     "the file carries the calls: replayed call for call"},
    {"no-calls", O_NO_CALLS, NULL,
     "leave TRACE.calls out of the data file: the class\n"
     "replay (one block resized, calls by size class)"},
    {"check-name", O_CHECK_NAME, "NAME",
     "only check that NAME can name a stub, and that it\n"
     "overlaps none of the OTHER names given (the other\n"
     "stubs of one program: alpha and alpha_err both claim\n"
     "memstub_alpha_err); no TRACE (memstub_add_stub)"},
    {0}};

static const ms_cli_spec spec = {
    "gen",
    "usage: memstub gen TRACE [-o memuse.h] [options]\n"
    "       memstub gen TRACE --data FILE [options]\n"
    "       memstub gen --check-name NAME [OTHER...]\n"
    "\n"
    "Generate the stub's simulation data file (the paper's Listing 1): a C header\n"
    "with memUse[NUMDATA] points made from TRACE (a trace CSV, '-' for stdin).\n"
    "Stack changes are normalised into frame pushes and pops; rows that are not\n"
    "LIFO-shaped get zero-delay points inserted, and memPoint[] maps every point\n"
    "back to its row. Without -o the header goes to standard output.\n"
    "A trace with several threads (a thread column) gives one header holding a\n"
    "stub per thread (NAME_tT_memUse, ...) and the thread table (NAME_memThreads),\n"
    "which memstub build makes into a program replaying every thread; --data\n"
    "and --hold refuse such a trace.\n"
    "\n",
    options, 26,
    "\n"
    "GNU m4 ($MEMSTUB_M4, else m4) writes the header, within a minute and a\n"
    "second per MiB of points ($MEMSTUB_CHILD_TIMEOUT seconds when set).\n"};

/* --check-name NAME [OTHER...]: 0 when NAME can name a stub beside the
 * others, else exit status 2 after printing why. */
static int check_name(const char *name, int nothers, char **others) {
  memstub_error err = {0};
  if (memstub_gen_name_check(name, (const char *const *)others, (size_t)nothers, &err) < 0)
    return ms_cli_fail(&err);
  return MS_EXIT_OK;
}

// Progress on a terminal while a large stub's points are written.
static void gen_progress(void *ctx, int64_t done, int64_t total) {
  (void)ctx;
  if (total >= 100000) ms_cli_progress("memstub gen: writing points", (uint64_t)done, (uint64_t)total);
}

/* --release (held NULL): *t replaced by a copy with its regions' survivors
 * released (memstub_generations_release); --hold: by a copy with the
 * releases inside it added, and *held what is alive after its end
 * (memstub_generations_hold). Both from in.generations. 0, or fails with err. */
static int with_generations(const char *in, memstub_trace **t, memstub_held *held,
                            memstub_error *err) {
  char *path = ms_cli_sidecar_path(in, ".generations");
  if (!path) return memstub_error_set(err, -ENOMEM, "out of memory");
  memstub_generations *gens = NULL;
  memstub_trace *c = NULL;
  size_t added = 0;
  int rc = memstub_generations_read(path, &gens, err);
  if (rc == 0) {
    rc = held ? memstub_generations_hold(*t, gens, &c, &added, held, err)
              : memstub_generations_release(*t, gens, &c, &added, err);
    if (rc < 0) memstub_error_prefix(err, in);
  }
  if (rc == 0 && !held) {
    ms_cli_note("--release: %s row%s added for the survivors' release (%s)", ms_cli_count((int64_t)added),
                added == 1 ? "" : "s", path);
  } else if (rc == 0) {
    char b1[32], b2[32];
    int64_t never = held->n && held->after_ns[held->n - 1] < 0 ? held->bytes[held->n - 1] : 0;
    ms_cli_note("--hold: the stub returns holding %s in %s block%s (%s of it never freed); %s "
                "row%s added for releases between regions (%s)",
                ms__fmt_bytes(held->total, b1, sizeof b1), ms_cli_count((int64_t)held->n),
                held->n == 1 ? "" : "s", ms__fmt_bytes(never, b2, sizeof b2),
                ms_cli_count((int64_t)added), added == 1 ? "" : "s", path);
  }
  if (rc == 0) {
    memstub_trace_free(*t);
    *t = c;
  }
  memstub_generations_free(gens);
  free(path);
  return rc;
}

/* A trace with several threads: one header holding a stub per thread and
 * the thread table (memstub_gen_threads_emit). A data file carries one
 * thread's stub, and --hold a single stub's survivors: both refused. 0, or
 * fails with err. */
static int gen_threads(const char *in, const memstub_trace *t, const memstub_gen_options *o,
                       const memstub_gen_emit_options *eo, const char *data, const char *out,
                       memstub_error *err) {
  int64_t n = memstub_trace_thread_count(t);
  if (data)
    return memstub_error_set(err, -EINVAL,
                             "%s: the trace has %lld threads: a data file (--data) carries one "
                             "thread's stub; write a header (-o FILE.h, built with memstub build) "
                             "or replay the trace with memstub replay",
                             in, (long long)n);
  if (eo->release)
    return memstub_error_set(err, -EINVAL,
                             "%s: the trace has %lld threads: --hold holds one stub's survivors "
                             "after its return, not those of several threads",
                             in, (long long)n);
  memstub_gen_threads *g = NULL;
  int rc = memstub_gen_threads_build(t, o, &g, err);
  if (rc == 0) rc = memstub_gen_threads_emit(g, out, eo, err);
  if (rc < 0) memstub_error_prefix(err, in);
  for (int64_t k = 0; rc == 0 && k < g->nthreads; k++) {
    char label[40];
    if (g->gen[k]->timeline) ms_cli_note("thread %lld: timeline: %s", (long long)k, g->gen[k]->timeline);
    snprintf(label, sizeof label, "thread %lld: ", (long long)k);
    ms_cli_whatif_note(g->gen[k], label);
  }
  if (rc == 0) ms_cli_timeline_estimated_threads(in, g);
  if (rc == 0 && o->profile) {
    for (int64_t k = 0; k < g->nthreads; k++) {
      char comp[512], unsure[768];
      memstub_gen_comp_format(g->gen[k], comp, sizeof comp);
      ms_cli_note("thread %lld: compensation for %s: %s", (long long)k, o->profile_path, comp);
      if (memstub_gen_comp_unsure(g->gen[k], o->profile_path, unsure, sizeof unsure))
        ms_cli_warn("thread %lld: %s", (long long)k, unsure);
    }
  }
  if (rc == 0 && strcmp(out, "-") != 0) {
    int64_t pts = 0, ins = 0;
    for (int64_t k = 0; k < g->nthreads; k++)
      pts += g->gen[k]->stub.numdata, ins += g->gen[k]->stub.inserted;
    ms_cli_note("%s: %lld threads, %s points (%s inserted) for %s rows of %s, %s "
                "cross-thread frees",
                out, (long long)g->nthreads, ms_cli_count(pts), ms_cli_count(ins),
                ms_cli_count((int64_t)t->n), in, ms_cli_count(g->nhandoffs));
  }
  memstub_gen_threads_free(g);
  return rc;
}

int ms_cmd_gen(int argc, char **argv) {
  memstub_gen_options o;
  memstub_gen_options_init(&o);
  const char *out = "-", *data = NULL, *check = NULL;
  int out_given = 0, format_given = 0, release = 0, hold = 0, options_given = 0, no_calls = 0;
  ms_cli_parser p = {.spec = &spec};
  memstub_gen_emit_options eo = {.format = MEMSTUB_GEN_FORMAT_AUTO};
  if (ms_cli_progress_enabled()) eo.progress = gen_progress;
  int c, k, bad = 0;
  while (!bad && (c = ms_cli_next(&p, argc, argv)) > 0) {
    options_given += c != O_CHECK_NAME;
    if ((k = ms_cli_whatif_take(&p, c, &o)) != 0) {
      bad = k < 0;
      continue;
    }
    switch (c) {
      case O_CHECK_NAME: check = p.arg; break;
      case 'o': out = p.arg, out_given = 1; break;
      case O_DATA: data = p.arg; break;
      case O_NO_CALLS: no_calls = 1; break;
      case O_RELEASE: release = 1; break;
      case O_HOLD: if (!hold) hold = MEMSTUB_RELEASE_TIMER; break;
      case O_HOLD_API: hold = MEMSTUB_RELEASE_API; break;
      case 'n': o.name = p.arg; break;
      case 'c': o.profile_path = p.arg; break;
      case 't': bad = ms_cli_arg_timing(&p, &o.timing) < 0; break;
      case 'f':
        format_given = 1;
        if (memstub_gen_format_parse(p.arg, &eo.format) < 0) {
          ms_cli_usage("gen", "--format: expected listing, compact or auto, found '%s'", p.arg);
          bad = 1;
        }
        break;
    }
  }
  if (bad) return MS_EXIT_USAGE;
  if (c < 0) return p.status;
  int first = p.optind;
  if (check && options_given)
    return ms_cli_usage("gen", "--check-name NAME [OTHER...] takes no other options");
  if (check) return check_name(check, argc - first, argv + first);
  memstub_error err = {0};
  if (o.name && *o.name && memstub_gen_name_check(o.name, NULL, 0, &err) < 0)
    return ms_cli_usage("gen", "--name: %s", err.msg);
  if (first != argc - 1)
    return ms_cli_usage("gen", first == argc ? "missing TRACE" : "more than one TRACE given");
  const char *in = argv[first];
  if (ms_cli_refuse_stub_file("gen", in)) return MS_EXIT_USAGE;
  o.source = in;
  if (data && (out_given || format_given))
    return ms_cli_usage("gen", "--data FILE writes a data file, not a header: drop %s",
                        out_given ? "-o" : "--format");
  if (data && !*data) return ms_cli_usage("gen", "--data needs a file name");
  if (hold && release)
    return ms_cli_usage("gen", "--release adds the releases as rows (a standalone stub), --hold "
                        "holds them after the return (an embedded one): choose one");
  if (hold && data)
    return ms_cli_usage("gen", "--hold is for a header of an embedded stub, not a data file");

  memstub_trace *t = NULL;
  memstub_gen *g = NULL;
  memstub_profile prof;
  if (o.profile_path) {
    if (ms_cli_load_profile(o.profile_path, &prof) != 0) return MS_EXIT_USAGE;
    o.profile = &prof;
  }
  // On a terminal, the stage under way (a 10M-row trace reads for a second).
  if (ms_cli_progress_enabled()) fprintf(stderr, "\r\033[Kmemstub gen: reading %s", in);
  int rc = memstub_trace_read(in, &t, &err);
  if (rc == 0 && release) rc = with_generations(in, &t, NULL, &err);
  memstub_held held = {0};
  int64_t *held_bytes = NULL;
  struct memstub_release rel = {MEMSTUB_RELEASE_ABI, hold, 0, NULL, NULL};
  if (rc == 0 && hold && (rc = with_generations(in, &t, &held, &err)) == 0) {
    // The what-ifs on the heap and on time scale what is held and when.
    held_bytes = malloc((held.n + 1) * sizeof *held_bytes);
    if (!held_bytes) rc = memstub_error_set(&err, -ENOMEM, "out of memory");
    size_t kept = 0;
    for (size_t i = 0; rc == 0 && held_bytes && i < held.n; i++) {
      double b = (double)held.bytes[i] * o.heap_scale, a = (double)held.after_ns[i] * o.time_scale;
      // Beyond what a stub holds: refused, never left out.
      if (b >= 1e15 || a >= 9e18)
        rc = memstub_error_set(&err, -EINVAL, "--hold: %lld bytes released %lld ns after the "
                               "return become %.3g bytes after %.3g ns with --heap-scale %g and "
                               "--time-scale %g: a stub holds less than 1e15 bytes, for less "
                               "than 9e18 ns", (long long)held.bytes[i],
                               (long long)held.after_ns[i], b, a < 0 ? -1 : a, o.heap_scale,
                               o.time_scale);
      if (rc < 0 || b < 1) continue;  // below a byte: nothing held
      held_bytes[kept] = (int64_t)(b + 0.5);
      held.after_ns[kept++] = held.after_ns[i] < 0 ? -1 : (int64_t)(a + 0.5);
    }
    rel.n = (int64_t)kept, rel.after_ns = held.after_ns, rel.bytes = held_bytes;
    eo.release = &rel;
  }
  if (rc == 0 && ms_cli_progress_enabled())
    fprintf(stderr, "\r\033[Kmemstub gen: normalising %zu rows", t->n);
  int64_t nthreads = rc == 0 ? memstub_trace_thread_count(t) : 1;
  if (rc == 0 && nthreads > 1) {
    rc = gen_threads(in, t, &o, &eo, data, out, &err);
    if (rc == 0 && !no_calls) ms_cli_gen_calls_threads(in, t);
    if (ms_cli_progress_enabled()) fputs("\r\033[K", stderr);
    memstub_trace_free(t);
    memstub_held_free(&held);
    free(held_bytes);
    return rc < 0 ? ms_cli_fail(&err) : MS_EXIT_OK;
  }
  // The work's memory share (docs/runtime.md, "Work as work"): checked, and said where it goes.
  double share = 0;
  int shared = rc == 0 ? memstub_work_share_meta(t, &share, &err) : 0;
  if (shared < 0) rc = shared, memstub_error_prefix(&err, in);
  if (rc == 0 && (rc = memstub_gen_build(t, &o, &g, &err)) < 0) memstub_error_prefix(&err, in);
  if (rc == 0 && !no_calls) rc = ms_cli_gen_calls("gen", in, t, &o, g, !data, &err);
  if (ms_cli_progress_enabled()) fputs("\r\033[K", stderr);
  if (rc == 0 && data) out = data;
  if (rc == 0 && data && ms_cli_progress_enabled())
    fprintf(stderr, "\r\033[Kmemstub gen: writing %s (%lld points)", data,
            (long long)g->stub.numdata);
  if (rc == 0) rc = data ? memstub_gen_emit_data(g, data, &err) : memstub_gen_emit_ex(g, out, &eo, NULL, &err);
  if (data && ms_cli_progress_enabled()) fputs("\r\033[K", stderr);
  if (rc == 0 && g->timeline) ms_cli_note("timeline: %s", g->timeline);
  if (rc == 0) ms_cli_timeline_warn(in, g);
  if (rc == 0) ms_cli_whatif_note(g, "");
  if (rc == 0 && o.profile) {
    char comp[512], unsure[768];
    memstub_gen_comp_format(g, comp, sizeof comp);
    ms_cli_note("compensation for %s: %s", o.profile_path, comp);
    if (memstub_gen_comp_unsure(g, o.profile_path, unsure, sizeof unsure)) ms_cli_warn("%s", unsure);
    if (g->work_late) {
      char late[32];
      ms_cli_note("%s point%s whose allocator calls %s expects to take longer than their delay "
                  "(%s in all): the replay will be late there",
                  ms_cli_count(g->work_late), g->work_late == 1 ? "" : "s", o.profile_path,
                  ms__fmt_ns(g->work_late_ns, late, sizeof late));
    }
  }
  if (rc == 0 && shared > 0 && g->has_model)  // carried (layout 5): say how to change it
    ms_cli_note("%s: work_mem_share %g carried into %s (MEMSTUB_WORK_MEM_SHARE overrides it)", in,
                share < 0 ? 0 : share, data ? "the data file" : "the header");
  if (rc == 0 && strcmp(out, "-") != 0) {
    char dur[32];
    ms_cli_note("%s: %s points (%s inserted) for %s rows of %s, %s", out,
                ms_cli_count(g->stub.numdata), ms_cli_count(g->stub.inserted),
                ms_cli_count(g->stub.norig), in, ms__fmt_ns(g->stub.duration_ns, dur, sizeof dur));
  }
  memstub_gen_free(g);
  memstub_trace_free(t);
  memstub_held_free(&held);
  free(held_bytes);
  return rc < 0 ? ms_cli_fail(&err) : MS_EXIT_OK;
}
