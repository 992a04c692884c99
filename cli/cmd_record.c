// memstub record: not built yet (see the open issues).
#include "cli.h"

int ms_cmd_record(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return ms_cli_error("'memstub record' is not implemented yet");
}
