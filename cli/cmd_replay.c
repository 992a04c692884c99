// memstub replay: not built yet (see the open issues).
#include "cli.h"

int ms_cmd_replay(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return ms_cli_error("'memstub replay' is not implemented yet");
}
