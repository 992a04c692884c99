// memstub build: not built yet (see the open issues).
#include "cli.h"

int ms_cmd_build(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return ms_cli_error("'memstub build' is not implemented yet");
}
