// Where the memstub command finds its data: the source tree when it runs
// from a build tree, the installed share/memstub otherwise.
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ms_common.h"

// Whether this executable lives inside the build tree it was configured in.
static int in_build_tree(void) {
  static int known = -1;
  if (known >= 0) return known;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  known = 0;
  if (n > 0) {
    exe[n] = '\0';
    size_t bl = strlen(MEMSTUB_BUILD_BINARY_DIR);
    known = strncmp(exe, MEMSTUB_BUILD_BINARY_DIR, bl) == 0 && exe[bl] == '/';
  }
  return known;
}

const char *ms__datadir(void) {
  const char *env = getenv("MEMSTUB_DATADIR");
  if (env && *env) return env;
  return in_build_tree() ? MEMSTUB_BUILD_SOURCE_DIR : MEMSTUB_INSTALL_DATADIR;
}

const char *ms__libdir(void) {
  const char *env = getenv("MEMSTUB_LIBDIR");
  if (env && *env) return env;
  return in_build_tree() ? MEMSTUB_BUILD_BINARY_DIR : MEMSTUB_INSTALL_LIBDIR;
}

const char *ms__includedir(void) {
  const char *env = getenv("MEMSTUB_INCLUDEDIR");
  if (env && *env) return env;
  return in_build_tree() ? MEMSTUB_BUILD_SOURCE_DIR "/include" : MEMSTUB_INSTALL_INCLUDEDIR;
}
