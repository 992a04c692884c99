// memstub: one command, with a subcommand per part of the pipeline.
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memstub/memstub.h"
#include "ms_buildconfig.h"
#include "ms_common.h"

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *help;
} command;

#define MS_CLI_ENTRY(name, help) {#name, ms_cmd_##name, help},
static const command commands[] = {MS_CLI_COMMANDS(MS_CLI_ENTRY)};
#undef MS_CLI_ENTRY

static void usage(FILE *f) {
  fputs("usage: memstub COMMAND [ARGS...]\n\n"
        "Main-memory performance stubs: record a component's heap and stack use,\n"
        "generate a stub from the trace, calibrate it, replay it and compare.\n\n"
        "commands:\n",
        f);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].help);
  fputs("  help        show this list, or 'memstub help COMMAND' for one command\n"
        "  version     print the version and how this memstub was built\n\n"
        "Exit status: 0 success, 1 a requested check failed, 2 bad usage or input.\n",
        f);
}

static const command *find(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(commands[i].name, name) == 0) return &commands[i];
  return NULL;
}

// "unknown command 'X'", naming the closest command when one is close.
static int unknown(const char *name) {
  enum { N = sizeof commands / sizeof commands[0] };
  const char *names[N + 3];
  for (size_t i = 0; i < N; i++) names[i] = commands[i].name;
  names[N] = "help";
  names[N + 1] = "version";
  names[N + 2] = NULL;
  // "--verison": the closest of the options main takes.
  const char *opts[] = {"--help", "--version", NULL};
  const char *near = ms_cli_closest(name, name[0] == '-' ? opts : names);
  if (near) return ms_cli_error("unknown command '%s' (did you mean '%s'?)", name, near);
  return ms_cli_error("unknown command '%s' (see 'memstub help')", name);
}

// memstub version: the version, how this build was made, and where this
// memstub takes its files from (common/paths.c).
static int version(void) {
  printf("memstub %s\n"
         "compiler:   %s\n"
         "flags:      %s\n"
         "build type: %s\n"
         "sanitizers: %s\n"
         "data:       %s\n"
         "libraries:  %s\n"
         "headers:    %s\n",
         MEMSTUB_VERSION_STRING, MS__BUILD_COMPILER, MS__BUILD_FLAGS, MS__BUILD_TYPE,
         MS__BUILD_SANITIZE, ms__datadir(), ms__libdir(), ms__includedir());
  return MS_EXIT_OK;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return MS_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
    if (argc > 2 && strcmp(argv[2], "--help") != 0 && strcmp(argv[2], "-h") != 0) {
      const command *c = find(argv[2]);
      if (!c) return unknown(argv[2]);
      char *hargv[] = {(char *)c->name, "--help", NULL};
      return c->run(2, hargv);
    }
    usage(stdout);
    return MS_EXIT_OK;
  }
  if (strcmp(name, "version") == 0 || strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
    return version();
  const command *c = find(name);
  if (!c) return unknown(name);
  return c->run(argc - 1, argv + 1);
}
