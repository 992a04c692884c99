// memstub compare: not built yet (see the open issues).
#include "cli.h"

int ms_cmd_compare(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return ms_cli_error("'memstub compare' is not implemented yet");
}
