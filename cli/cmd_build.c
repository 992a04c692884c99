// memstub build: compile a standalone stub program from a generated header.
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ms_common.h"
#include "ms_spawn.h"
#include "ms_runtime.h"
#include "prim.h"

enum { O_CC = MS_CLI_LONG };

static const ms_cli_option options[] = {
    {"output", 'o', "PROGRAM",
     "the program to write (default: HEADER without .h);\n"
     "written atomically"},
    {"name", 'n', "NAME",
     "the --name the header was generated with (its\n"
     "descriptor is NAME_memStub); found in the header\n"
     "when it holds exactly one stub"},
    {"cc", O_CC, "CC",
     "the C compiler (default: $MEMSTUB_CC, else $CC, else\n"
     "the compiler memstub was built with)"},
    {"verbose", 'v', NULL, "print the compiler command"},
    {0}};

static const ms_cli_spec spec = {
    "build",
    "usage: memstub build HEADER [-o PROGRAM] [--name NAME] [--cc CC] [-v]\n"
    "\n"
    "Compile a standalone stub program from HEADER, a header made by memstub gen.\n"
    "The program replays the stub; run it with --help for its options\n"
    "(--measure OUT.csv, --timing deadline|usleep, --margin NS, --check).\n"
    "\n",
    options, 26,
    "\n"
    "The header is compiled with -std=c11 -O2 into the runtime's runtime/stub_main.c\n"
    "and linked against the runtime's static libraries. The program is checked\n"
    "(PROGRAM --check) before it is put in place.\n"
    "\n"
    "Exit status: 0 built; 2 bad usage, a header that is missing, not a memstub\n"
    "header, does not compile or holds stub data that cannot be replayed.\n"};

/* The descriptor's name: the identifier after "static const struct
 * memstub_stub" (name_memStub when name is given). 0, or exit status 2 after
 * printing why. */
static int find_stub(const char *header, const char *text, const char *name, char *out,
                     size_t outlen) {
  static const char key[] = "static const struct memstub_stub ";
  char want[256] = "";
  if (name) snprintf(want, sizeof want, "%s_memStub", name);
  int found = 0;
  char list[512] = "";
  for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
    const char *id = p + sizeof key - 1;
    size_t n = strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
    if (!ms__is_ident(id, n) || n >= outlen) continue;
    if (name && (n != strlen(want) || strncmp(id, want, n) != 0)) continue;
    if (found++ == 0) snprintf(out, outlen, "%.*s", (int)n, id);
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%.*s", l ? ", " : "", (int)n, id);
  }
  if (found == 1) return 0;
  if (found > 1)
    return ms_cli_error("%s: holds several stubs (%s): choose one with --name", header, list);
  if (name)
    return ms_cli_error("%s: no stub named %s (the header's --name differs?)", header, want);
  return ms_cli_error("%s: not a memstub header: no 'struct memstub_stub' descriptor "
                      "(generate one with memstub gen)", header);
}

// Split a command ("ccache gcc") on blanks into argv; returns the count.
static int split(char *s, char **argv, int max) {
  int n = 0;
  for (char *tok = strtok(s, " \t"); tok && n < max; tok = strtok(NULL, " \t")) argv[n++] = tok;
  return n;
}

/* ---- interruption: while the temporary program exists -------------------- */

// The signals that stop a build, and the first of them caught (0: none).
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
static volatile sig_atomic_t caught;

static void on_stop_signal(int sig) {
  if (!caught) caught = sig;
}

/* Catch the stop signals that are not ignored, so that a build stopped midway
 * can remove its temporary program; the actions replaced go to old. */
static void catch_stop_signals(struct sigaction old[]) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;  // no SA_RESTART: a wait for a child returns EINTR
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < MS__ARRAY_SIZE(stop_signals); i++) {
    sigaction(stop_signals[i], NULL, &old[i]);
    if (old[i].sa_handler != SIG_IGN) sigaction(stop_signals[i], &sa, NULL);
  }
}

/* Put the old actions back; then, when a stop signal was caught, raise it
 * again, to die of it as if never caught. Returns status (or 128 + the
 * signal, should its old action return). */
static int release_stop_signals(const struct sigaction old[], int status) {
  for (size_t i = 0; i < MS__ARRAY_SIZE(stop_signals); i++)
    sigaction(stop_signals[i], &old[i], NULL);
  if (!caught) return status;
  raise(caught);
  return 128 + caught;
}

/* While a large header builds, a terminal shows what runs and for how long;
 * NULL: nothing shown. */
static const char *progress_label;

// The spawn helper's tick: redraw "memstub build: LABEL  N.N s".
static void show_progress(void *arg, int64_t elapsed_ns) {
  (void)arg;
  fprintf(stderr, "\r\033[Kmemstub build: %s  %.1f s", progress_label, (double)elapsed_ns / 1e9);
  fflush(stderr);
}

/* Run argv (what names it in messages), its stderr captured into r when
 * capture is set. A stop signal caught meanwhile is passed on to it, and it
 * is waited for all the same, so that it writes nothing after. 0 with r
 * filled (free it), or -errno with err set when it cannot be run or waited for. */
static int run(char *const argv[], const char *what, int capture, ms__spawn_result *r,
               memstub_error *err) {
  ms__spawn_opts so;
  ms__spawn_opts_init(&so);
  so.err = capture ? MS__SPAWN_CAPTURE : MS__SPAWN_INHERIT;
  so.forward = &caught;
  so.what = what;
  if (progress_label) so.tick = show_progress;
  int rc = ms__spawn_run(argv, &so, r, err);
  if (progress_label) fputs("\r\033[K", stderr), fflush(stderr);
  return rc;
}

// path/libNAME.a for each name in the runtime's list; 0 or exit status 2.
static int lib_paths(const char *libdir, char **argv, int *n, int max, char **owned) {
  char names[512];
  snprintf(names, sizeof names, "%s", ms__rt_build_libs());
  char *save = NULL;
  for (char *tok = strtok_r(names, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
    char *p = ms__asprintf("%s/lib%s.a", libdir, tok);
    if (!p) return ms_cli_error("out of memory");
    owned[(*n)] = p;
    if (access(p, R_OK) != 0) {
      int rc = ms_cli_error("%s: the runtime library is missing (set MEMSTUB_LIBDIR?)", p);
      return rc;
    }
    if (*n < max) argv[(*n)++] = p;
  }
  return 0;
}

int ms_cmd_build(int argc, char **argv) {
  const char *out = NULL, *name = NULL, *cc = NULL;
  int verbose = 0;
  ms_cli_parser p = {.spec = &spec};
  int c;
  while ((c = ms_cli_next(&p, argc, argv)) > 0) {
    switch (c) {
      case 'o': out = p.arg; break;
      case 'n': name = p.arg; break;
      case O_CC: cc = p.arg; break;
      case 'v': verbose = 1; break;
    }
  }
  if (c < 0) return p.status;
  int first = p.optind;
  if (first != argc - 1)
    return ms_cli_usage("build", first == argc ? "missing HEADER" : "more than one HEADER given");
  const char *header = argv[first];
  if (name && !ms__is_ident(name, strlen(name)))
    return ms_cli_usage("build", "--name: '%s' is not a C identifier", name);
  if (cc && !*cc) return ms_cli_usage("build", "--cc needs a compiler");

  // Default output: the header's name without .h.
  char *defout = NULL;
  if (!out) {
    size_t l = strlen(header);
    defout = ms__strdup(header);
    if (!defout) return ms_cli_error("out of memory");
    if (l <= 2 || strcmp(header + l - 2, ".h") != 0) {
      free(defout);
      return ms_cli_usage("build", "-o is needed: HEADER does not end in .h");
    }
    defout[l - 2] = '\0';
    out = defout;
  }

  memstub_error err = {0};
  char *text = NULL;
  size_t len;
  int status = MS_EXIT_OK;
  char *tmp = NULL, *target = NULL, *stubdef = NULL, *main_c = NULL, *ccbuf = NULL;
  char *usedef = NULL, *pointdef = NULL;
  char *owned[16] = {0};
  struct sigaction old_actions[MS__ARRAY_SIZE(stop_signals)];
  int catching = 0;
  if (ms__read_file(header, &text, &len, &err) < 0) {
    status = ms_cli_fail(&err);
    goto done;
  }
  if (strlen(text) != len) {
    status = ms_cli_error("%s: not a memstub header: it holds NUL bytes", header);
    goto done;
  }
  char var[256];
  if ((status = find_stub(header, text, name, var, sizeof var)) != 0) goto done;

  main_c = ms__asprintf("%s/%s", ms__datadir(), MS__RT_STUB_MAIN);
  stubdef = ms__asprintf("-DMEMSTUB_STUB_VAR=%s", var);
  // A generated header's arrays (NAME_memUse, NAME_memPoint): the program
  // checks that the descriptor, which may be edited by hand, stays within them.
  size_t vl = strlen(var);
  if (vl >= 7 && strcmp(var + vl - 7, "memStub") == 0) {
    int pl = (int)vl - 7;  // the prefix, NAME_ or nothing
    char *usedecl = ms__asprintf("struct memAlloc %.*smemUse[", pl, var);
    char *pointdecl = ms__asprintf("int64_t %.*smemPoint[", pl, var);
    if (usedecl && pointdecl && strstr(text, usedecl) && strstr(text, pointdecl)) {
      usedef = ms__asprintf("-DMEMSTUB_STUB_USE=%.*smemUse", pl, var);
      pointdef = ms__asprintf("-DMEMSTUB_STUB_POINT=%.*smemPoint", pl, var);
    }
    free(usedecl);
    free(pointdecl);
  }
  const char *use = cc ? cc : getenv("MEMSTUB_CC");
  if (!use || !*use) use = getenv("CC");
  if (!use || !*use) use = ms__rt_build_cc();
  ccbuf = ms__asprintf("%s %s", use, ms__rt_build_cflags());
  // The temporary program sits beside the file it replaces (through a
  // symbolic link, the file named), so the rename is atomic.
  int in_place;
  target = ms__afile_target(out, &in_place);
  if (!target || in_place) {
    status = ms_cli_error("%s: cannot write the program there: %s", out,
                          target ? "not a regular file" : strerror(errno));
    goto done;
  }
  const char *slash = strrchr(target, '/');
  int dirlen = slash ? (int)(slash - target + 1) : 0;
  tmp = ms__asprintf("%.*s.%s.tmp.XXXXXX", dirlen, target, slash ? slash + 1 : target);
  if (!main_c || !stubdef || !ccbuf || !tmp) {
    status = ms_cli_error("out of memory");
    goto done;
  }
  if (access(main_c, R_OK) != 0) {
    status = ms_cli_error("%s: the stub's main is missing (set MEMSTUB_DATADIR?)", main_c);
    goto done;
  }
  catch_stop_signals(old_actions);  // before the temporary program exists
  catching = 1;
  int fd = mkstemp(tmp);
  if (fd < 0) {
    status = ms_cli_error("%s: cannot create the program: %s", out, strerror(errno));
    free(tmp);
    tmp = NULL;
    goto done;
  }
  close(fd);

  char *cargv[64];
  int n = split(ccbuf, cargv, 32);
  if (n == 0) {
    status = ms_cli_usage("build", "the compiler command is empty");
    goto done;
  }
  char *incl = ms__asprintf("-I%s", ms__includedir());
  owned[15] = incl;
  if (!incl) {
    status = ms_cli_error("out of memory");
    goto done;
  }
  const char *fixed[] = {"-std=c11", "-O2", "-Wall", "-Wextra", incl, "-include", header,
                         stubdef, main_c, "-o", tmp};
  for (size_t i = 0; i < MS__ARRAY_SIZE(fixed); i++) cargv[n++] = (char *)fixed[i];
  if (usedef && pointdef) cargv[n++] = usedef, cargv[n++] = pointdef;
  int nowned = 0;
  if ((status = lib_paths(ms__libdir(), cargv + n, &nowned, 8, owned)) != 0) goto done;
  n += nowned;
  char sys[] = MS__RT_SYSTEM_LIBS;
  n += split(sys, cargv + n, 8);
  cargv[n] = NULL;
  if (verbose) {
    for (int i = 0; i < n; i++) fprintf(stderr, "%s%s", i ? " " : "", cargv[i]);
    fputc('\n', stderr);
  }
  if (caught) goto done;  // stopped before the compiler started
  // Large headers (compact ones of a million points and more) take seconds.
  char label[64];
  if (len >= ((size_t)1 << 20) && ms_cli_progress_enabled()) {
    snprintf(label, sizeof label, "compiling %.0f MB", (double)len / 1e6);
    progress_label = label;
  }
  ms__spawn_result res;
  int rc = run(cargv, "the compiler", 0, &res, &err);
  ms__spawn_result_free(&res);
  if (caught) goto done;  // stopped: the compiler, passed the signal, has ended
  if (rc < 0) {
    status = ms_cli_fail(&err);
    goto done;
  }
  if ((rc = ms__spawn_status(&res)) != 0) {
    status = ms_cli_error("%s: the compiler failed (exit %d); is it a header made by memstub gen?",
                          header, rc);
    goto done;
  }

  // The usual permissions of an executable under the umask, whatever the linker chose.
  mode_t um = umask(0);
  umask(um);
  (void)chmod(tmp, 0777 & ~um);

  // Check the stub data before the program is put in place.
  char *chargv[] = {tmp, "--check", NULL};
  if (!strchr(tmp, '/')) chargv[0] = ms__asprintf("./%s", tmp), owned[14] = chargv[0];
  res = (ms__spawn_result){0};
  if (progress_label) progress_label = "checking the stub data";
  rc = chargv[0] ? run(chargv, "the stub's check", 1, &res, &err)
                 : memstub_error_set(&err, -ENOMEM, "out of memory");
  progress_label = NULL;
  if (caught) {
    ms__spawn_result_free(&res);
    goto done;
  }
  if (rc != 0 || ms__spawn_status(&res) != 0) {
    // The check's first line says why: "...error: <why>".
    char msg[1024] = "";
    if (res.err) snprintf(msg, sizeof msg, "%.*s", (int)strcspn(res.err, "\n"), res.err);
    ms__spawn_result_free(&res);
    const char *why = strstr(msg, "error: ");
    status = ms_cli_error("%s: %s", header,
                          why ? why + 7 : rc < 0 ? err.msg : "the stub does not replay");
    goto done;
  }
  ms__spawn_result_free(&res);
  if (rename(tmp, target) != 0) {
    status = ms_cli_error("%s: cannot write: %s", out, strerror(errno));
    goto done;
  }
  free(tmp);
  tmp = NULL;
  ms_cli_note("%s: stub program built from %s", out, header);

done:
  if (tmp) unlink(tmp);
  for (size_t i = 0; i < MS__ARRAY_SIZE(owned); i++) free(owned[i]);
  free(tmp);
  free(target);
  free(text);
  free(main_c);
  free(stubdef);
  free(usedef);
  free(pointdef);
  free(ccbuf);
  free(defout);
  // Last: a stop signal caught kills memstub here, nothing left behind.
  return catching ? release_stop_signals(old_actions, status) : status;
}
