// memstub import: not built yet (see the open issues).
#include "cli.h"

int ms_cmd_import(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return ms_cli_error("'memstub import' is not implemented yet");
}
