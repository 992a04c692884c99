/* tests/record/kids.c: a program with children, for `memstub record
 * --follow-children` (tests/test_record_follow.c). Run under the recorder,
 * never sanitized. MODE:
 *   leaf   hold 3 MiB for 20 ms and exit
 *   fork   hold 1 MiB; a forked child holds 2 MiB (no exec) and exits
 *   exec   hold 1 MiB; a forked child execs "kids leaf"
 *   spawn  hold 1 MiB; posix_spawn "kids leaf"
 *   tree   hold 1 MiB; a forked child runs "exec" mode itself (a grandchild) */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

// Hold n bytes, every page written, for 20 ms.
static void hold(size_t n) {
  char *volatile p = malloc(n);
  if (!p) exit(3);
  memset(p, 1, n);
  usleep(20000);
  free(p);
}

static int wait_for(pid_t pid) {
  int st;
  if (waitpid(pid, &st, 0) != pid) return 4;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 5;
}

static int run(const char *self, const char *m) {
  if (!strcmp(m, "leaf")) {
    hold(3 << 20);
    return 0;
  }
  char *volatile keep = malloc(1 << 20);
  if (!keep) return 3;
  memset(keep, 1, 1 << 20);
  pid_t pid;
  if (!strcmp(m, "fork") || !strcmp(m, "tree")) {
    pid = fork();
    if (pid == 0) {
      if (!strcmp(m, "tree")) exit(run(self, "exec"));
      hold(2 << 20);
      exit(0);
    }
  } else if (!strcmp(m, "exec")) {
    pid = fork();
    if (pid == 0) {
      execl(self, self, "leaf", (char *)0);
      _exit(127);
    }
  } else if (!strcmp(m, "spawn")) {
    char *a[] = {(char *)self, "leaf", 0};
    if (posix_spawn(&pid, self, 0, 0, a, environ) != 0) return 3;
  } else {
    fprintf(stderr, "kids: unknown mode %s\n", m);
    return 2;
  }
  if (pid < 0) return 3;
  int rc = wait_for(pid);
  free(keep);
  return rc;
}

int main(int argc, char **argv) { return run(argv[0], argc > 1 ? argv[1] : "leaf"); }
