// Atomic output files: write a temporary file beside the target, then rename.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ms_common.h"

char *ms__afile_target(const char *path, int *in_place) {
  *in_place = 0;
  struct stat st, lst;
  if (stat(path, &st) != 0) return ms__strdup(path);  // new (or a dangling link): create it
  if (S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {  // a device, FIFO or socket: never rename over it
    *in_place = 1;
    return ms__strdup(path);
  }
  if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
    // Replace the file the link names, beside it, and keep the link.
    char real[PATH_MAX];
    if (realpath(path, real)) return ms__strdup(real);
  }
  return ms__strdup(path);
}

int ms__afile_open(ms__afile *af, const char *path, memstub_error *err) {
  memset(af, 0, sizeof *af);
  if (strcmp(path, "-") == 0) {
    af->f = stdout;
    return 0;
  }
  int in_place;
  char *target = ms__afile_target(path, &in_place);
  if (!target)
    return memstub_error_set(err, -errno, "%s: cannot write: %s", path, strerror(errno));
  if (in_place) {
    af->f = fopen(target, "w");
    if (!af->f) {
      int e = errno;
      free(target);
      return memstub_error_set(err, -e, "%s: cannot open for writing: %s", path, strerror(e));
    }
    af->path = target;
    return 0;
  }
  // The temporary file lives in the target's directory so rename is atomic.
  const char *slash = strrchr(target, '/');
  int dirlen = slash ? (int)(slash - target + 1) : 0;
  char *tmp = ms__asprintf("%.*s.%s.tmp.XXXXXX", dirlen, target, slash ? slash + 1 : target);
  if (!tmp) {
    free(target);
    return memstub_error_set(err, -ENOMEM, "%s: out of memory", path);
  }
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    free(target);
    return memstub_error_set(err, -e, "%s: cannot create output file: %s", path, strerror(e));
  }
  // mkstemp makes 0600; give the file the usual permissions under umask.
  mode_t um = umask(0);
  umask(um);
  (void)fchmod(fd, 0666 & ~um);
  af->f = fdopen(fd, "w");
  if (!af->f) {
    int e = errno;
    close(fd);
    unlink(tmp);
    free(tmp);
    free(target);
    return memstub_error_set(err, -e, "%s: %s", path, strerror(e));
  }
  setvbuf(af->f, NULL, _IOFBF, 1 << 16);
  af->tmp = tmp;
  af->path = target;
  return 0;
}

static void afile_release(ms__afile *af) {
  free(af->tmp);
  free(af->path);
  memset(af, 0, sizeof *af);
}

// Standard output, or a file written in place: flushed (and closed), released.
static int commit_in_place(ms__afile *af, memstub_error *err) {
  const char *name = af->path ? af->path : "standard output";
  int bad = fflush(af->f) != 0 || ferror(af->f);
  int e = errno ? errno : EIO;
  if (af->path && fclose(af->f) != 0) bad = 1;
  if (bad) memstub_error_set(err, -e, "%s: write failed: %s", name, strerror(e));
  afile_release(af);
  return bad ? -e : 0;
}

int ms__afile_close_tmp(ms__afile *af, memstub_error *err) {
  if (!af->tmp) return commit_in_place(af, err);
  int e = 0;
  if (fflush(af->f) != 0 || ferror(af->f)) e = errno ? errno : EIO;
  if (!e && fdatasync(fileno(af->f)) != 0 && errno != EINVAL) e = errno;
  if (fclose(af->f) != 0 && !e) e = errno ? errno : EIO;
  af->f = NULL;
  if (e) {
    memstub_error_set(err, -e, "%s: cannot write: %s", af->path, strerror(e));
    unlink(af->tmp);
    afile_release(af);
  }
  return e ? -e : 0;
}

int ms__afile_place(ms__afile *af, const char *path, int replace, memstub_error *err) {
  if (!af->tmp) return 0;  // committed in place by ms__afile_close_tmp
  int e = 0, renamed = 0;
  if (replace) {
    e = rename(af->tmp, path) != 0 ? errno : 0;
    renamed = !e;
  } else if (renameat2(AT_FDCWD, af->tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) {
    renamed = 1;
  } else {
    // A file system without renameat2 takes a hard link, which fails just
    // the same when the name is taken.
    e = errno;
    if (e == EINVAL || e == ENOSYS || e == ENOTSUP) e = link(af->tmp, path) != 0 ? errno : 0;
  }
  if (e == EEXIST && !replace) return -EEXIST;  // the caller may try another name
  if (!renamed) unlink(af->tmp);  // linked, or failed: drop the temporary name
  if (e) memstub_error_set(err, -e, "%s: cannot write: %s", path, strerror(e));
  afile_release(af);
  return e ? -e : 0;
}

int ms__afile_commit(ms__afile *af, memstub_error *err) {
  int rc = ms__afile_close_tmp(af, err);
  if (rc < 0 || !af->tmp) return rc;
  return ms__afile_place(af, af->path, 1, err);
}

void ms__afile_abort(ms__afile *af) {
  if (af->tmp) {
    if (af->f) fclose(af->f);  // (closed already after ms__afile_close_tmp)
    unlink(af->tmp);
  } else if (af->path) {
    fclose(af->f);  // written in place: what was written stays
  } else if (af->f) {
    fflush(af->f);
  }
  afile_release(af);
}

int ms__read_file_steps(const char *path, size_t chunk, ms__read_step *step, void *arg,
                        char **bufp, size_t *lenp, memstub_error *err) {
  int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return memstub_error_set(err, -e, "%s: cannot open: %s", path, strerror(e));
  }
  struct stat st;
  size_t cap = 1 << 16;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    if (fd != STDIN_FILENO) close(fd);
    return memstub_error_set(err, -EISDIR, "%s: is a directory", path);
  }
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) cap = (size_t)st.st_size + 1;
  char *buf = malloc(cap);
  size_t len = 0;
  int e = buf ? 0 : ENOMEM;
  while (!e) {
    if (len + 1 >= cap) {  // full (a pipe, or a file that grew while being read)
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        e = ENOMEM;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + len, cap - 1 - len < chunk ? cap - 1 - len : chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) e = errno;
    if (r <= 0) break;
    len += (size_t)r;
    if (step) step(arg, len);
  }
  if (fd != STDIN_FILENO) close(fd);
  if (e) {
    free(buf);
    return memstub_error_set(err, -e, "%s: cannot read: %s", path, strerror(e));
  }
  buf[len] = '\0';
  *bufp = buf;
  *lenp = len;
  return 0;
}

int ms__read_file(const char *path, char **bufp, size_t *lenp, memstub_error *err) {
  return ms__read_file_steps(path, SIZE_MAX, NULL, NULL, bufp, lenp, err);
}

int ms__afile_commit_new(ms__afile *af, memstub_error *err) {
  int rc = ms__afile_close_tmp(af, err);
  if (rc < 0 || !af->tmp) return rc;
  rc = ms__afile_place(af, af->path, 0, err);
  if (rc == -EEXIST) {
    memstub_error_set(err, rc, "%s: exists already; not replaced", af->path);
    unlink(af->tmp);
    afile_release(af);
  }
  return rc;
}

void ms__dir_remove(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char *p = ms__asprintf("%s/%s", dir, e->d_name);
    struct stat st;
    if (p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
      ms__dir_remove(p);
    else if (p)
      unlink(p);
    free(p);
  }
  if (d) closedir(d);
  rmdir(dir);
}
