// Where the memstub command finds its data, archives and headers. Nothing is
// taken from where the build was configured to install: an installed memstub
// finds them relative to its own executable (PREFIX/bin/memstub ->
// PREFIX/share/memstub, PREFIX/lib/memstub, PREFIX/include), so an installed
// tree can be moved or installed with `cmake --install --prefix DIR`; a
// memstub run from its build tree uses the source and build trees.
// Overrides, in order: MEMSTUB_DATADIR / MEMSTUB_LIBDIR / MEMSTUB_INCLUDEDIR
// (one directory each), then MEMSTUB_PREFIX (an install prefix).
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ms_common.h"
#include "prim.h"

// This executable's path, or "" when it cannot be read.
static const char *self_exe(void) {
  static char exe[PATH_MAX];
  static int known;
  if (!known) {
    if (ms__prim_self_exe(exe, sizeof exe) < 0) exe[0] = '\0';
    known = 1;
  }
  return exe;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The prefix this executable is installed in, or NULL: PREFIX when it runs
 * as PREFIX/BINDIR/name and PREFIX/DATADIR/memstub exists. */
static const char *exe_prefix(void) {
  static char prefix[PATH_MAX];
  static int known, found;
  if (known) return found ? prefix : NULL;
  known = 1;
  const char *exe = self_exe(), *slash = strrchr(exe, '/');
  size_t bl = strlen(MEMSTUB_INSTALL_BINDIR_REL);
  // pre: BINDIR is relative (an absolute CMAKE_INSTALL_BINDIR is not relocatable)
  if (MEMSTUB_INSTALL_BINDIR_REL[0] == '/' || !slash || (size_t)(slash - exe) <= bl ||
      exe[slash - exe - bl - 1] != '/' || strncmp(slash - bl, MEMSTUB_INSTALL_BINDIR_REL, bl) != 0)
    return NULL;
  size_t pl = (size_t)(slash - exe) - bl - 1;  // PREFIX without the '/' before BINDIR
  char data[PATH_MAX];
  int n = snprintf(data, sizeof data, "%.*s/%s", (int)pl, exe, MEMSTUB_INSTALL_DATADIR_REL);
  if (n <= 0 || (size_t)n >= sizeof data || !is_dir(data)) return NULL;
  snprintf(prefix, sizeof prefix, "%.*s", (int)pl, exe);  // "" for /bin: "/share/..."
  found = 1;
  return prefix;
}

// Whether this executable lives inside the build tree it was configured in.
static int in_build_tree(void) {
  const char *exe = self_exe();
  size_t bl = strlen(MEMSTUB_BUILD_BINARY_DIR);
  return strncmp(exe, MEMSTUB_BUILD_BINARY_DIR, bl) == 0 && exe[bl] == '/';
}

// prefix/rel into buf, or NULL when it does not fit (or rel is absolute).
static const char *below(const char *prefix, const char *rel, char buf[PATH_MAX]) {
  if (rel[0] == '/') return rel;
  int n = snprintf(buf, PATH_MAX, "%s/%s", prefix, rel);
  return n > 0 && n < PATH_MAX ? buf : NULL;
}

/* $env when set; else $MEMSTUB_PREFIX/rel; else the prefix this executable
 * is installed in, /rel; else the build tree's dir when running from it;
 * else the configured install dir (a memstub copied out of its tree). */
static const char *pick(const char *env, const char *build, const char *rel,
                        const char *configured, char buf[PATH_MAX]) {
  const char *v = getenv(env), *p, *r;
  if (v && *v) return v;
  if ((p = getenv("MEMSTUB_PREFIX")) && *p && (r = below(p, rel, buf))) return r;
  if ((p = exe_prefix()) && (r = below(p, rel, buf))) return r;
  return in_build_tree() ? build : configured;
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
