/* cli/cli.h: what the memstub subcommands share. Each subcommand lives in
 * cli/cmd_<name>.c as `int ms_cmd_<name>(int argc, char **argv)`, gets argv
 * starting at its own name, and returns the exit status:
 *   0 success; 1 the job ran but a requested check failed; 2 bad usage or
 *   bad input (the message names the file, line and field). */
#ifndef MEMSTUB_CLI_H
#define MEMSTUB_CLI_H

#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "memstub/error.h"

enum { MS_EXIT_OK = 0, MS_EXIT_CHECK = 1, MS_EXIT_USAGE = 2 };

// "memstub: error: ..." on stderr; returns MS_EXIT_USAGE.
int ms_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// "memstub: error: <err->msg>"; returns MS_EXIT_USAGE.
int ms_cli_fail(const memstub_error *err);
// "memstub: warning: ..." on stderr.
void ms_cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// "memstub: ..." on stderr (a note, not an error).
void ms_cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// A usage error: the message, then "see 'memstub CMD --help'"; returns 2.
int ms_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Parse an option's number; on failure print a usage error naming opt.
int ms_cli_double(const char *cmd, const char *opt, const char *arg, double *out);
int ms_cli_i64(const char *cmd, const char *opt, const char *arg, int64_t *out);

struct memstub_profile;
/* Read and check a calibration profile, warning about what the check finds
 * doubtful: 0, or MS_EXIT_USAGE after printing why it cannot be used. */
int ms_cli_load_profile(const char *path, struct memstub_profile *prof);

/* A count for people, with thousands separators ("2,400"), in one of eight
 * static buffers used in turn: at most eight in one message, one thread. */
const char *ms_cli_count(int64_t n);

/* A stub header (memstub gen's output) or a stub data file (gen --data)
 * given where cmd reads a trace: 0 when path is neither (or cannot be told
 * without reading a pipe), else MS_EXIT_USAGE after saying what it is and
 * what to run instead. */
int ms_cli_refuse_stub_file(const char *cmd, const char *path);

/* Copy the file at path to standard output: 0, or MS_EXIT_USAGE after
 * saying why not. */
int ms_cli_cat(const char *path);
/* A text figure for standard output (memstub plot, demo): when $COLUMNS is
 * unset and standard output is a terminal, set it to the terminal's width. */
void ms_cli_columns_from_terminal(void);
// Whether progress may be drawn (stderr is a terminal and MEMSTUB_QUIET unset).
int ms_cli_progress_enabled(void);
/* The file memstub record wrote beside a trace (ext: ".sites",
 * ".generations"): trace itself when it already ends in ext, else trace with
 * ext appended. Malloc'd; NULL when out of memory. */
char *ms_cli_sidecar_path(const char *trace, const char *ext);
/* The file exec would run for name (without a '/') as $PATH's search finds
 * it: the first executable dir/name of $PATH's directories, an empty one
 * the current directory. 1 with its path in out[cap], else 0. */
int ms_cli_path_find(const char *name, char *out, size_t cap);
struct memstub_trace;
typedef struct ms_cli_parser ms_cli_parser;
/* The one TRACE operand of memstub sites and generations (argv[p->optind],
 * after the options) and the side file they read (ext: ".sites",
 * ".generations"): its path into *path (ms_cli_sidecar_path, malloc'd), and
 * has[i] for each of the metadata keys (NULL-terminated): whether the
 * recording wrote that side file (an older one beside the trace would be
 * another run's), as the trace's metadata say; 1 when the operand is the
 * side file itself. vals, when not NULL: vals[i] the value of keys[i]
 * (malloc'd; NULL when absent or the operand is the side file). 0 (free
 * *path and vals[i]), or the exit status after saying why not (*path NULL). */
int ms_cli_sidecar_operand(const char *cmd, ms_cli_parser *p, int argc, char **argv,
                           const char *ext, const char *const *keys, int *has, char **path,
                           char **vals);
/* s as a JSON string (quotes, backslashes and control bytes escaped). */
void ms_cli_json_str(FILE *f, const char *s);
// Redraw a one-line progress indicator "label  done/total" on stderr; a
// no-op when progress is disabled. done == total ends the line.
void ms_cli_progress(const char *label, uint64_t done, uint64_t total);

struct memstub_trace;
/* The record summary's section on allocation sites: the top sites of
 * trace_path's .sites file, symbolised, into out; a warning when it cannot
 * be read (cli/cmd_sites.c). */
void ms_cli_sites_summary(const char *trace_path, const struct memstub_trace *t, int top, FILE *out);
/* The top sites of trace_path's .sites file (ext appended unless it ends
 * in it), grouped and symbolised as `memstub sites` prints them, frames per
 * site, into out: 0, or -errno with err set (the reader's "path:LINE: ..."). */
int ms_cli_sites_write(const char *trace_path, size_t top, size_t frames, FILE *out,
                       memstub_error *err);
/* What each region of trace_path left alive, as `memstub generations`
 * prints it (its .generations file, the top occurrences), into out: 0, or
 * -errno with err set. */
int ms_cli_generations_write(const char *trace_path, size_t top, FILE *out, memstub_error *err);
/* The record summary's line on generations: what the regions of
 * trace_path left alive (its .generations file); a warning when it cannot be
 * read (cli/cmd_generations.c). */
void ms_cli_generations_summary(const char *trace_path, FILE *out);
/* memstub generations --sites (cmd_sites.c): the site lines keep[0..n) (from
 * 0, in file order) of the sites file at path, symbolised; then site i is
 * keep[i]. 0, or -errno with err set (a site the file does not have is
 * -EINVAL). */
typedef struct ms_cli_sites ms_cli_sites;
int ms_cli_sites_load(const char *path, const int64_t *keep, size_t n, ms_cli_sites **out,
                      memstub_error *err);
int64_t ms_cli_sites_interval(const ms_cli_sites *s);
// Where site i allocates (its first frame past allocation wrappers): sites
// with the same place are one site for `memstub sites`. 0 when unknown.
uint64_t ms_cli_sites_place(const ms_cli_sites *s, size_t i);
// Its frames past the wrappers (at most frames) as `memstub sites` prints them.
void ms_cli_sites_frames_text(const ms_cli_sites *s, size_t i, size_t frames, const char *indent,
                              FILE *out);
// "wrapper_frames": N, "frames": [...] as `memstub sites --json` gives them.
void ms_cli_sites_frames_json(const ms_cli_sites *s, size_t i, FILE *out);
void ms_cli_sites_free(ms_cli_sites *s);

/* The examples of `memstub CMD --help` (cli/examples.c): "examples:" and one
 * "  $ COMMAND" line each, runnable as printed; nothing when CMD has none. */
void ms_cli_examples(const char *cmd, FILE *f);

/* ---- options as data ------------------------------------------------------
 * A subcommand declares its options in one table, from which the parser
 * makes getopt_long's option array and short-option string, and the help
 * text makes its options list; --help (-h) is added to every table.
 *
 *   static const ms_cli_option opts[] = {
 *       {"output", 'o', "FILE", "write the header to FILE (atomically)"},
 *       {"time-scale", O_TIME_SCALE, "F", "what-if: multiply every time by F"},
 *       {0}};
 */
typedef struct ms_cli_option {
  const char *name;  // the long name, without "--"
  int key;           // what ms_cli_next returns: the short option when < 256
                     // (a letter), else a long-only option's id (MS_CLI_LONG + n)
  const char *arg;   // the argument's name in the help ("FILE"); NULL for a flag
  const char *help;  // one line of help a '\n' continues, indented to the column
} ms_cli_option;

enum { MS_CLI_LONG = 256, MS_CLI_MAX_OPTIONS = 40 };

/* The what-if options (docs/formats.md, "What-if transforms"): the same in
 * gen and replay, with keys of their own (a command's own long options stay
 * below MS_CLI_WHATIF). */
enum { MS_CLI_WHATIF = MS_CLI_LONG + 200, MS_CLI_TIME_SCALE = MS_CLI_WHATIF, MS_CLI_HEAP_SCALE,
       MS_CLI_STACK_SCALE, MS_CLI_RSS_SCALE, MS_CLI_MAPPED_SCALE, MS_CLI_CPU_SCALE,
       MS_CLI_CHURN_SCALE, MS_CLI_WHATIF_END };
/* One of them, --WHAT-scale with its key MS_CLI_<KEY>_SCALE: gen and replay
 * take a factor (ARG "F"), sweep a LIST of them. */
#define MS_CLI_SCALE_OPTION(what, KEY, arg, help) {what "-scale", MS_CLI_##KEY##_SCALE, arg, help}
#define MS_CLI_WHATIF_OPTIONS                                                                  \
  MS_CLI_SCALE_OPTION("time", TIME, "F", "what-if: multiply every time by F (0.7 = 30% faster)"), \
      MS_CLI_SCALE_OPTION("heap", HEAP, "F",                                                   \
                          "what-if: multiply the heap totals by F; resident and\n"             \
                          "mapped memory follow it (half the heap has half the\n"              \
                          "pages to write) unless --rss-scale, --mapped-scale\n"               \
                          "set their own"),                                                     \
      MS_CLI_SCALE_OPTION("stack", STACK, "F", "what-if: multiply the stack totals by F"),      \
      MS_CLI_SCALE_OPTION("rss", RSS, "F",                                                     \
                          "what-if: multiply the resident totals (rss_bytes) by F\n"           \
                          "(default: the --heap-scale)"),                                       \
      MS_CLI_SCALE_OPTION("mapped", MAPPED, "F",                                               \
                          "what-if: multiply the mapped totals (mapped_bytes) by\n"            \
                          "F (default: the --heap-scale)"),                                     \
      MS_CLI_SCALE_OPTION("cpu", CPU, "F",                                                     \
                          "what-if: the CPU time between memory changes\n"                     \
                          "(cpu_ns) times F, the delays shorter or longer by\n"                \
                          "the difference (0.5: the computation twice as fast)"),               \
      MS_CLI_SCALE_OPTION("churn", CHURN, "F",                                                 \
                          "what-if: F times the allocator calls and their bytes\n"             \
                          "(calls_*, churn_bytes; 0: every temporary pooled);\n"              \
                          "a stub replayed call for call (TRACE.calls) keeps F of\n"          \
                          "the blocks made and freed within a row (F <= 1)")

/* --json, the same in the commands that print JSON: KEYS names where the
 * JSON's keys are described (a docs page and anchor). */
#define MS_CLI_JSON_OPTION(key, KEYS) {"json", key, NULL, "print JSON (keys: " KEYS ")"}

typedef struct ms_cli_spec {
  const char *name;           // the subcommand, for messages ("see 'memstub gen --help'")
  const char *intro;          // the help above the options ("usage: ...\n\n...\n")
  const ms_cli_option *opts;  // ends with {0}
  int column;                 // where the options' help starts in the list
  const char *outro;          // the help after the options (NULL: none)
} ms_cli_spec;

struct ms_cli_parser {
  const ms_cli_spec *spec;
  int started;
  const char *arg;      // the current option's argument (NULL for a flag)
  const char *opt;      // the current option as "--name", for messages
  int status;           // when ms_cli_next returns -1: the exit status
  int optind;           // after the options: the first operand
  struct option longs[MS_CLI_MAX_OPTIONS + 2];
  char shorts[2 * MS_CLI_MAX_OPTIONS + 4];
  char optname[64];
};

// Print the subcommand's help (intro, "options:", the list, outro) to f.
void ms_cli_help(const ms_cli_spec *spec, FILE *f);
/* The next option of argv (argv[0] is the subcommand's name), parsed as
 * p->spec says (set it and zero the rest before the first call: `ms_cli_parser
 * p = {.spec = &spec};`): the option's key (p->arg its argument); 0 after the last
 * option (p->optind the first operand); -1 when parsing ends here with
 * p->status: 0 after --help was printed, 2 after a usage error was printed
 * (an unknown option, a missing value). */
int ms_cli_next(ms_cli_parser *p, int argc, char **argv);
/* The current option's argument as a number, or one of choices (an index):
 * 0, or -1 after printing "OPT: expected ..., found '...'" (exit status 2). */
int ms_cli_arg_double(ms_cli_parser *p, double *out);
int ms_cli_arg_i64(ms_cli_parser *p, int64_t *out);
int ms_cli_arg_choice(ms_cli_parser *p, const char *const *choices, int *out);
/* The current option's argument as a timing mode (online, deadline or usleep:
 * memstub_timing_parse) into *timing: 0, or -1 after printing "OPT: expected
 * online, deadline or usleep, found '...'". */
int ms_cli_arg_timing(ms_cli_parser *p, int *timing);

struct memstub_gen_options;
struct memstub_gen;
struct memstub_gen_threads;
/* A what-if option (key c, argument p->arg) into o: 1 when taken, 0 when c
 * is not a what-if option, -1 after printing a usage error (not a number,
 * or not finite and >= 0). cli/whatif.c. */
int ms_cli_whatif_take(ms_cli_parser *p, int c, struct memstub_gen_options *o);
/* What the what-if scales did to g (memstub_gen_whatif_format) on stderr,
 * after "memstub: " (label: "" or "thread N: "); nothing without a what-if. */
void ms_cli_whatif_note(const struct memstub_gen *g, const char *label);
/* "memstub: warning: TRACE: the stub's timeline ..." when g->timeline_uneven:
 * its total is the reference's, its shape may not be (cli/whatif.c). */
void ms_cli_timeline_uneven(const char *trace);
/* g's timeline warnings: ms_cli_timeline_uneven when g->timeline_uneven,
 * g->timeline_estimated when set (memstub gen and replay). */
void ms_cli_timeline_warn(const char *trace, const struct memstub_gen *g);
/* "memstub: warning: TRACE: thread K: the stub's timeline takes the
 * recorder's cost out by ..." for the first thread of g whose timeline is
 * an estimate (memstub_gen.timeline_estimated), once for the process. */
void ms_cli_timeline_estimated_threads(const char *trace, const struct memstub_gen_threads *g);

struct memstub_trace;
/* The calls of trace t (read from in) into g when its metadata name a calls
 * file (calls.file; IN.calls beside it): the call replay (memstub_gen_calls),
 * with notes on what was made and warnings on what the calls do not give.
 * The class replay, with a note saying why, for a trace from standard input
 * (in "-"), a header (header 1) or what-ifs the calls do not take. 0, or a
 * negative errno with err naming the calls file and "CMD --no-calls".
 * cli/gen_calls.c. */
int ms_cli_gen_calls(const char *cmd, const char *in, const struct memstub_trace *t,
                     const struct memstub_gen_options *o, struct memstub_gen *g, int header,
                     memstub_error *err);
/* A trace of several threads read from in: when it names a calls file, a
 * note that its stub replays by size class (the call replay carries one
 * thread), so that the calls are not passed over silently. cli/gen_calls.c. */
void ms_cli_gen_calls_threads(const char *in, const struct memstub_trace *t);

/* ---- stop signals ----------------------------------------------------------
 * SIGINT, SIGTERM and SIGHUP caught while a command has something to clean up
 * (build's temporary program, sweep's staging directory): the first one
 * caught is in ms_cli_stop_caught (pass it on to a child: ms__spawn_opts's
 * forward). */
enum { MS_CLI_STOP_SIGNALS = 3 };
extern volatile sig_atomic_t ms_cli_stop_caught;
/* Catch the stop signals that are not ignored; the actions replaced go to old. */
void ms_cli_stop_catch(struct sigaction old[MS_CLI_STOP_SIGNALS]);
/* Put the old actions back; then, when a stop signal was caught, raise it
 * again, to die of it as if never caught. Returns status (or 128 + the
 * signal, should its old action return). */
int ms_cli_stop_release(const struct sigaction old[MS_CLI_STOP_SIGNALS], int status);

/* ---- typo suggestions ----------------------------------------------------- */

/* The candidate closest to word (edit distance, a swap of two neighbours
 * counting one), or NULL when none is close: at most 1 edit for words of up
 * to 4 letters, 2 up to 8, 3 beyond. candidates ends with NULL. */
const char *ms_cli_closest(const char *word, const char *const *candidates);
/* Optimal-string-alignment distance between a and b (for tests). */
size_t ms_cli_distance(const char *a, const char *b);

#define MS_CLI_COMMANDS(X)                                                              \
  X(demo, "run the whole pipeline on a bundled trace (or yours) and show the result")  \
  X(record, "record a program's heap and stack usage into a trace (LD_PRELOAD)")       \
  X(import, "convert a valgrind massif, glibc memusage or heaptrack file into a trace") \
  X(gen, "generate a memUse header from a trace (through GNU m4)")                     \
  X(build, "compile a standalone stub program from a generated header")                \
  X(replay, "replay a trace directly, optionally measuring what the stub did")         \
  X(calibrate, "measure the stub's own time and byte overheads on this host")          \
  X(compare, "compare a replayed trace with the original")                             \
  X(plot, "plot original against replayed curves with gnuplot")                        \
  X(report, "the answer on one HTML page: compare, curves with zoom, sites")             \
  X(sites, "list the allocation sites holding the heap's peak (record --sites)")       \
  X(generations, "what each probe region left alive, and when it was freed")             \
  X(sweep, "run a host at every point of a what-if sweep and measure it from outside")

#define MS_CLI_DECLARE(name, help) int ms_cmd_##name(int argc, char **argv);
MS_CLI_COMMANDS(MS_CLI_DECLARE)
#undef MS_CLI_DECLARE

#endif
