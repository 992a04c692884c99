/* cli/cli.h: what the memstub subcommands share. Each subcommand lives in
 * cli/cmd_<name>.c as `int ms_cmd_<name>(int argc, char **argv)`, gets argv
 * starting at its own name, and returns the exit status:
 *   0 success; 1 the job ran but a requested check failed; 2 bad usage or
 *   bad input (the message names the file, line and field). */
#ifndef MEMSTUB_CLI_H
#define MEMSTUB_CLI_H

#include <stdint.h>

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

// Whether progress may be drawn (stderr is a terminal and MEMSTUB_QUIET unset).
int ms_cli_progress_enabled(void);
// Redraw a one-line progress indicator "label  done/total" on stderr; a
// no-op when progress is disabled. done == total ends the line.
void ms_cli_progress(const char *label, uint64_t done, uint64_t total);

#define MS_CLI_COMMANDS(X)                                                              \
  X(demo, "run the whole pipeline on a bundled trace (or yours) and show the result")  \
  X(record, "record a program's heap and stack usage into a trace (LD_PRELOAD)")       \
  X(import, "convert a valgrind massif or glibc memusage file into a trace")           \
  X(gen, "generate a memUse header from a trace (through GNU m4)")                     \
  X(build, "compile a standalone stub program from a generated header")                \
  X(replay, "replay a trace directly, optionally measuring what the stub did")         \
  X(calibrate, "measure the stub's own time and byte overheads on this host")          \
  X(compare, "compare a replayed trace with the original")                             \
  X(plot, "plot original against replayed curves with gnuplot")

#define MS_CLI_DECLARE(name, help) int ms_cmd_##name(int argc, char **argv);
MS_CLI_COMMANDS(MS_CLI_DECLARE)
#undef MS_CLI_DECLARE

#endif
