// memstub demo: not built yet (see the open issues).
#include "cli.h"

int ms_cmd_demo(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return ms_cli_error("'memstub demo' is not implemented yet");
}
