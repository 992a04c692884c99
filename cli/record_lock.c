// memstub record: one recording per output file at a time. Two recordings
// to the same trace would both run, and the last to end would replace the
// other's trace (and its side files) in silence; the second is refused.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ms_common.h"
#include "record.h"

// The lock file's path beside the trace's target (a link's target: two
// names of one file share it) into path[PATH_MAX]; 0 or -1.
static int lock_path(const char *abs, char *path) {
  int in_place;
  char *target = ms__afile_target(abs, &in_place);
  if (!target) return -1;
  const char *slash = strrchr(target, '/');
  int dl = slash ? (int)(slash - target + 1) : 0;
  int n = snprintf(path, PATH_MAX, "%.*s.memstub-record-lock.%s", dl, target, target + dl);
  free(target);
  return n > 0 && n < PATH_MAX ? 0 : -1;
}

// The pid the holder wrote in the lock file, or 0 when not (yet) readable.
static long holder_pid(int fd) {
  char b[32];
  ssize_t n = pread(fd, b, sizeof b - 1, 0);
  if (n <= 0) return 0;
  b[n] = '\0';
  return strtol(b, NULL, 10);
}

int ms_record_lock(const char *out, const char *abs, int *fd, char *path) {
  *fd = -1;
  if (lock_path(abs, path) != 0) return ms_cli_error("%s: path too long", out);
  for (int tries = 0; tries < 100; tries++) {
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (f < 0)
      return ms_cli_error("%s: cannot create the lock file '%s': %s", out, path, strerror(errno));
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      long pid = e == EWOULDBLOCK ? holder_pid(f) : 0;
      close(f);
      if (e != EWOULDBLOCK)
        return ms_cli_error("%s: cannot lock '%s': %s", out, path, strerror(e));
      if (pid > 0)
        return ms_cli_error("%s: another memstub record (pid %ld) is recording to this file; "
                            "wait for it to end, or give another -o",
                            out, pid);
      return ms_cli_error("%s: another memstub record is recording to this file (it is just "
                          "starting); wait for it to end, or give another -o",
                          out);
    }
    // The holder before us removes the file as it lets go: locked, it must
    // still be the file at the path, else take the new one.
    struct stat a, b;
    if (fstat(f, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
      char pid[32];
      int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
      if (ftruncate(f, 0) != 0 || pwrite(f, pid, (size_t)n, 0) != n) {
        // Held all the same: only the message of a refused recording lacks the pid.
      }
      *fd = f;
      return 0;
    }
    close(f);
  }
  return ms_cli_error("%s: cannot lock '%s': it keeps being replaced", out, path);
}

void ms_record_unlock(int fd, const char *path) {
  if (fd < 0) return;
  unlink(path);  // while still held: the next recording makes a new one
  close(fd);
}
