// What every importer does with a path: load its bytes, parse them, free them.
#include <stdlib.h>

#include "internal.h"

int ms__import_file(const char *path, ms__import_load *load, ms__import_parse *parse,
                    const memstub_import_options *o, memstub_trace **out, memstub_error *err) {
  char *buf = NULL;
  size_t len = 0;
  *out = NULL;
  int rc = load(path, &buf, &len, err);
  if (rc < 0) return rc;
  rc = parse(path, buf, len, o, out, err);
  free(buf);
  return rc;
}
