// Where the memstub command finds its data: the source tree when it runs
// from a build tree, the installed share/memstub otherwise (found from the
// command's own place, so an installed tree can be moved).
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ms_common.h"

// This executable's path, or "" when it cannot be read.
static const char *self_exe(void) {
  static char exe[PATH_MAX];
  static int known;
  if (!known) {
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    known = 1;
  }
  return exe;
}

// Whether this executable lives inside the build tree it was configured in.
static int in_build_tree(void) {
  const char *exe = self_exe();
  size_t bl = strlen(MEMSTUB_BUILD_BINARY_DIR);
  return strncmp(exe, MEMSTUB_BUILD_BINARY_DIR, bl) == 0 && exe[bl] == '/';
}

/* An installed directory: PREFIX/rel when this executable runs from
 * PREFIX/BINDIR (an install moved elsewhere, or made with cmake --install
 * --prefix), else the configured absolute path. */
static const char *installed(const char *rel, const char *configured, char buf[PATH_MAX]) {
  const char *exe = self_exe(), *slash = strrchr(exe, '/');
  size_t bl = strlen(MEMSTUB_INSTALL_BINDIR_REL);
  if (rel[0] == '/' || !slash || (size_t)(slash - exe) <= bl || exe[slash - exe - bl - 1] != '/' ||
      strncmp(slash - bl, MEMSTUB_INSTALL_BINDIR_REL, bl) != 0)
    return configured;
  int n = snprintf(buf, PATH_MAX, "%.*s%s", (int)(slash - exe - bl), exe, rel);
  return n > 0 && n < PATH_MAX ? buf : configured;
}

/* $env when set, else the build tree's dir when running from it, else the
 * installed dir (PREFIX/rel, see installed()) into buf. */
static const char *pick(const char *env, const char *build, const char *rel,
                        const char *configured, char buf[PATH_MAX]) {
  const char *v = getenv(env);
  if (v && *v) return v;
  return in_build_tree() ? build : installed(rel, configured, buf);
}

const char *ms__datadir(void) {
  static char buf[PATH_MAX];
  return pick("MEMSTUB_DATADIR", MEMSTUB_BUILD_SOURCE_DIR, MEMSTUB_INSTALL_DATADIR_REL,
              MEMSTUB_INSTALL_DATADIR, buf);
}

const char *ms__libdir(void) {
  static char buf[PATH_MAX];
  return pick("MEMSTUB_LIBDIR", MEMSTUB_BUILD_BINARY_DIR, MEMSTUB_INSTALL_LIBDIR_REL,
              MEMSTUB_INSTALL_LIBDIR, buf);
}

const char *ms__includedir(void) {
  static char buf[PATH_MAX];
  return pick("MEMSTUB_INCLUDEDIR", MEMSTUB_BUILD_SOURCE_DIR "/include",
              MEMSTUB_INSTALL_INCLUDEDIR_REL, MEMSTUB_INSTALL_INCLUDEDIR, buf);
}
