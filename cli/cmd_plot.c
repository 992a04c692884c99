// memstub plot: not built yet (see the open issues).
#include "cli.h"

int ms_cmd_plot(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return ms_cli_error("'memstub plot' is not implemented yet");
}
