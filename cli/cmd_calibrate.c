// memstub calibrate: not built yet (see the open issues).
#include "cli.h"

int ms_cmd_calibrate(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return ms_cli_error("'memstub calibrate' is not implemented yet");
}
