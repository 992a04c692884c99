// memstub build: compile a standalone stub program from a generated header.
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/gen.h"
#include "memstub/runtime.h"
#include "ms_common.h"
#include "ms_spawn.h"
#include "ms_runtime.h"
#include "prim.h"

enum { O_CC = MS_CLI_LONG, O_DATA };

static const ms_cli_option options[] = {
    {"output", 'o', "PROGRAM",
     "the program to write (default: HEADER without .h);\n"
     "written atomically"},
    {"name", 'n', "NAME",
     "the --name the header was generated with (its\n"
     "descriptor is NAME_memStub); found in the header\n"
     "when it holds exactly one stub"},
    {"data", O_DATA, "FILE",
     "instead of HEADER: a program that maps the data file\n"
     "FILE (memstub gen --data) at start, so nothing of the\n"
     "points is compiled (default PROGRAM: FILE without\n"
     ".msd); its --data option names another data file"},
    {"verbose", 'v', NULL, "print the compiler command"},
    {"cc", O_CC, "CC",
     "the C compiler (default: $MEMSTUB_CC, else $CC, else\n"
     "cc on $PATH, else the compiler memstub was built with)"},
    {0}};

static const ms_cli_spec spec = {
    "build",
    "usage: memstub build HEADER [-o PROGRAM] [--name NAME] [--cc CC] [-v]\n"
    "       memstub build --data FILE [-o PROGRAM] [--cc CC] [-v]\n"
    "\n"
    "Compile a standalone stub program from HEADER, a header made by memstub gen.\n"
    "The program replays the stub; run it with --help for its options\n"
    "(--measure OUT.csv, --timing online|deadline|usleep, --margin NS, --check).\n"
    "Its timing is the one the header was made for (memstub gen --timing), else\n"
    "online; its --timing overrides it.\n"
    "\n",
    options, 26,
    "\n"
    "The header is compiled with -std=c11 -O2 into the runtime's runtime/stub_main.c\n"
    "and linked against the runtime's static libraries. The program is checked\n"
    "(PROGRAM --check) before it is put in place. A header of several threads\n"
    "(memstub gen of a trace with a thread column) makes a program that replays\n"
    "every thread; --name NAME_tT builds thread T's stub alone.\n"
    "\n"
    "The compiler has two minutes and two seconds per MiB of header, the check a\n"
    "minute and a second per MiB ($MEMSTUB_CHILD_TIMEOUT seconds each when set);\n"
    "one that takes longer is killed.\n"
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

/* ---- interruption: while the temporary program exists: ms_cli_stop_* ------ */

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
 * capture is set, within base_s seconds and per_mib_s more per MiB of bytes
 * (ms__spawn_limit), as the leader of a process group of its own (a
 * compiler driver and what it runs) when group is set. A stop signal ms_cli_stop_caught
 * meanwhile is passed on to it, and it is waited for all the same, so that
 * it writes nothing after. 0 with r filled (free it), or -errno with err set
 * when it cannot be run or waited for, or was killed for its time limit. */
static int run(char *const argv[], const char *what, int capture, int group, double base_s,
               double per_mib_s, int64_t bytes, ms__spawn_result *r, memstub_error *err) {
  ms__spawn_opts so;
  ms__spawn_opts_init(&so);
  so.err = capture ? MS__SPAWN_CAPTURE : MS__SPAWN_INHERIT;
  so.forward = &ms_cli_stop_caught;
  so.what = what;
  so.own_group = group;
  *r = (ms__spawn_result){0};
  int rc = ms__spawn_limit(&so, base_s, per_mib_s, bytes, err);
  if (rc < 0) return rc;
  if (progress_label) so.tick = show_progress;
  rc = ms__spawn_run(argv, &so, r, err);
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

/* One build: what the command line asked, and what the steps below make.
 * Every pointer is owned and freed by job_free. */
typedef struct build_job {
  const char *header, *out, *name, *cc;
  const char *data;                     // --data FILE: no header, the file read at start
  char *datadef;                        // -DMEMSTUB_STUB_DATA="/absolute/FILE"
  int verbose;
  char *defout;                         // the default output (HEADER without .h)
  char *text;                           // the header's contents
  size_t len;
  char var[256];                        // the descriptor's name
  char *stubdef, *usedef, *pointdef;    // -D definitions for stub_main.c
  char *threadsdef;                     //   -DMEMSTUB_THREADS_VAR=NAME_memThreads, a threads header
  char *main_c, *ccbuf, *incl, *target, *tmp;
  char *owned[16];                      // the archives' paths [0..12], the system
                                        // libraries [13], ./PROGRAM [14]
  char *cargv[64];                      // the compiler's command line
} build_job;

static void job_free(build_job *j) {
  if (j->tmp) unlink(j->tmp);
  for (size_t i = 0; i < MS__ARRAY_SIZE(j->owned); i++) free(j->owned[i]);
  char *strings[] = {j->tmp,     j->target,   j->text,  j->main_c, j->stubdef,
                     j->usedef,  j->pointdef, j->ccbuf, j->incl,   j->defout, j->datadef,
                     j->threadsdef};
  for (size_t i = 0; i < MS__ARRAY_SIZE(strings); i++) free(strings[i]);
}

/* -o's default: path (named what in the message) without its ending ext,
 * into j->out. 0, or the exit status of a usage error when path does not
 * end in ext. */
static int default_out(build_job *j, const char *path, const char *ext, const char *what) {
  size_t l = strlen(path), k = strlen(ext);
  if (l <= k || strcmp(path + l - k, ext) != 0)
    return ms_cli_usage("build", "-o is needed: %s does not end in %s", what, ext);
  if (!(j->defout = ms__strdup(path))) return ms_cli_error("out of memory");
  j->defout[l - k] = '\0';
  j->out = j->defout;
  return 0;
}

static int data_args(build_job *j, int nargs, int *done);

// The command line into j: 0, or the exit status (help printed, or a usage error).
static int parse_args(build_job *j, int argc, char **argv, int *done) {
  ms_cli_parser p = {.spec = &spec};
  int c;
  while ((c = ms_cli_next(&p, argc, argv)) > 0) {
    switch (c) {
      case 'o': j->out = p.arg; break;
      case 'n': j->name = p.arg; break;
      case O_CC: j->cc = p.arg; break;
      case 'v': j->verbose = 1; break;
      case O_DATA: j->data = p.arg; break;
    }
  }
  *done = 1;
  if (c < 0) return p.status;
  int first = p.optind;
  if (j->data) return data_args(j, argc - first, done);
  if (first != argc - 1)
    return ms_cli_usage("build", first == argc ? "missing HEADER" : "more than one HEADER given");
  j->header = argv[first];
  memstub_error err = {0};
  if (j->name && memstub_gen_name_check(j->name, NULL, 0, &err) < 0)
    return ms_cli_usage("build", "--name: %s", err.msg);
  if (j->cc && !*j->cc) return ms_cli_usage("build", "--cc needs a compiler");
  int rc;
  if (!j->out && (rc = default_out(j, j->header, ".h", "HEADER")) != 0) return rc;
  *done = 0;
  return MS_EXIT_OK;
}

/* --data FILE: no HEADER (nargs operands left), no --name; the default
 * output is FILE without .msd. 0 or the exit status of a usage error. */
static int data_args(build_job *j, int nargs, int *done) {
  if (nargs > 0) return ms_cli_usage("build", "--data FILE replaces HEADER: give one of them");
  if (j->name) return ms_cli_usage("build", "--name names a stub in a header: not with --data");
  if (!*j->data) return ms_cli_usage("build", "--data needs a file name");
  int rc;
  if (!j->out && (rc = default_out(j, j->data, ".msd", "FILE")) != 0) return rc;
  j->header = j->data;  // what messages name
  *done = 0;
  return MS_EXIT_OK;
}

/* --data: the data file's absolute path, baked into the program; checked
 * (mapped and validated) here already, so a bad file never gets a program.
 * 0 or exit status 2 after printing why. */
static int data_define(build_job *j) {
  memstub_stub_data *d = NULL;
  memstub_error err = {0};
  if (memstub_stub_data_open(j->data, &d, &err) < 0) return ms_cli_fail(&err);
  j->len = d->map_len;  // for progress: the check maps it again
  memstub_stub_data_free(d);
  char *abs = realpath(j->data, NULL);
  if (!abs) return ms_cli_error("%s: %s", j->data, strerror(errno));
  if (strpbrk(abs, "\"\\\n")) {
    free(abs);
    return ms_cli_error("%s: a path with '\"', '\\' or a newline cannot be built in", j->data);
  }
  j->datadef = ms__asprintf("-DMEMSTUB_STUB_DATA=\"%s\"", abs);
  free(abs);
  return j->datadef ? 0 : ms_cli_error("out of memory");
}

/* A threads header's descriptor (memstub gen of a trace with several
 * threads): the identifier after "static const struct memstub_threads_stub",
 * name_memThreads when name is given, into out. 1 found, 0 not. */
static int find_threads(const char *text, const char *name, char *out, size_t outlen) {
  static const char key[] = "static const struct memstub_threads_stub ";
  for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
    const char *id = p + sizeof key - 1;
    size_t n = strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
    if (!ms__is_ident(id, n) || n >= outlen || n < 10 || strncmp(id + n - 10, "memThreads", 10))
      continue;
    if (name && (n != strlen(name) + 11 || strncmp(id, name, strlen(name)) != 0 || id[n - 11] != '_'))
      continue;
    snprintf(out, outlen, "%.*s", (int)n, id);
    return 1;
  }
  return 0;
}

/* Read the header and name what stub_main.c needs from it: the descriptor
 * and, for a generated header, its arrays (NAME_memUse, NAME_memPoint), so the
 * program checks that the descriptor, which may be edited by hand, stays
 * within them. 0 or exit status 2 after printing why. */
static int read_header(build_job *j) {
  memstub_error err = {0};
  if (ms__read_file(j->header, &j->text, &j->len, &err) < 0) return ms_cli_fail(&err);
  if (strlen(j->text) != j->len)
    return ms_cli_error("%s: not a memstub header: it holds NUL bytes", j->header);
  char threads[256];
  if (find_threads(j->text, j->name, threads, sizeof threads)) {
    // Every thread replayed; thread 0's stub names the source in the help.
    int pl = (int)strlen(threads) - 10;  // the prefix, NAME_ or nothing
    snprintf(j->var, sizeof j->var, "%.*st0_memStub", pl, threads);
    j->threadsdef = ms__asprintf("-DMEMSTUB_THREADS_VAR=%s", threads);
    j->stubdef = ms__asprintf("-DMEMSTUB_STUB_VAR=%s", j->var);
    return j->threadsdef && j->stubdef ? 0 : ms_cli_error("out of memory");
  }
  int rc = find_stub(j->header, j->text, j->name, j->var, sizeof j->var);
  if (rc != 0) return rc;
  if (!(j->stubdef = ms__asprintf("-DMEMSTUB_STUB_VAR=%s", j->var)))
    return ms_cli_error("out of memory");
  size_t vl = strlen(j->var);
  if (vl >= 7 && strcmp(j->var + vl - 7, "memStub") == 0) {
    int pl = (int)vl - 7;  // the prefix, NAME_ or nothing
    char *usedecl = ms__asprintf("struct memAlloc %.*smemUse[", pl, j->var);
    char *pointdecl = ms__asprintf("int64_t %.*smemPoint[", pl, j->var);
    if (usedecl && pointdecl && strstr(j->text, usedecl) && strstr(j->text, pointdecl)) {
      j->usedef = ms__asprintf("-DMEMSTUB_STUB_USE=%.*smemUse", pl, j->var);
      j->pointdef = ms__asprintf("-DMEMSTUB_STUB_POINT=%.*smemPoint", pl, j->var);
    }
    free(usedecl);
    free(pointdecl);
  }
  return 0;
}

/* The temporary program's name, beside the file it replaces (through a
 * symbolic link, the file named) so that the rename is atomic, and the
 * stub's main. 0 or exit status 2 after printing why. */
static int plan_output(build_job *j) {
  j->main_c = ms__asprintf("%s/%s", ms__datadir(), MS__RT_STUB_MAIN);
  int in_place;
  j->target = ms__afile_target(j->out, &in_place);
  if (!j->target || in_place)
    return ms_cli_error("%s: cannot write the program there: %s", j->out,
                        j->target ? "not a regular file" : strerror(errno));
  const char *slash = strrchr(j->target, '/');
  int dirlen = slash ? (int)(slash - j->target + 1) : 0;
  j->tmp = ms__asprintf("%.*s.%s.tmp.XXXXXX", dirlen, j->target, slash ? slash + 1 : j->target);
  if (!j->main_c || !j->tmp) return ms_cli_error("out of memory");
  if (access(j->main_c, R_OK) != 0)
    return ms_cli_error("%s: the stub's main is missing (set MEMSTUB_DATADIR?)", j->main_c);
  return 0;
}

/* The compiler, found when memstub runs: --cc, $MEMSTUB_CC, $CC, then cc on
 * $PATH, then the one memstub was configured with. A sanitized memstub's
 * archives need its own compiler's sanitizer runtime, so there the configured
 * compiler comes before cc. Never NULL. */
static const char *find_cc(const char *opt) {
  const char *use = opt ? opt : getenv("MEMSTUB_CC");
  if (!use || !*use) use = getenv("CC");
  if (use && *use) return use;
  int sanitized = *ms__rt_build_cflags() != '\0';
  char cc[PATH_MAX];
  if (!sanitized && ms_cli_path_find("cc", cc, sizeof cc)) return "cc";
  return ms__rt_build_cc();
}

/* The compiler's command line into j->cargv: the compiler (find_cc) and its
 * flags, the header, stub_main.c, the runtime's archives and the system
 * libraries. 0 or exit status 2 after printing why. */
static int compiler_argv(build_job *j) {
  const char *use = find_cc(j->cc);
  j->ccbuf = ms__asprintf("%s %s", use, ms__rt_build_cflags());
  j->incl = ms__asprintf("-I%s", ms__includedir());
  if (!j->ccbuf || !j->incl) return ms_cli_error("out of memory");
  int n = split(j->ccbuf, j->cargv, 32);
  if (n == 0) return ms_cli_usage("build", "the compiler command is empty");
  const char *fixed[] = {"-std=c11", "-O2",     "-Wall",  "-Wextra", j->incl, "-include",
                         j->header,  j->stubdef, j->main_c, "-o",      j->tmp};
  const char *fixed_data[] = {"-std=c11", "-O2",      "-Wall", "-Wextra", j->incl,
                              j->datadef, j->main_c, "-o",    j->tmp};
  if (j->data)
    for (size_t i = 0; i < MS__ARRAY_SIZE(fixed_data); i++) j->cargv[n++] = (char *)fixed_data[i];
  else
    for (size_t i = 0; i < MS__ARRAY_SIZE(fixed); i++) j->cargv[n++] = (char *)fixed[i];
  if (j->usedef && j->pointdef) j->cargv[n++] = j->usedef, j->cargv[n++] = j->pointdef;
  if (j->threadsdef) j->cargv[n++] = j->threadsdef;
  int nowned = 0;
  int rc = lib_paths(ms__libdir(), j->cargv + n, &nowned, 8, j->owned);
  if (rc != 0) return rc;
  n += nowned;
  if (!(j->owned[13] = ms__strdup(MS__RT_SYSTEM_LIBS))) return ms_cli_error("out of memory");
  n += split(j->owned[13], j->cargv + n, 8);
  j->cargv[n] = NULL;
  if (j->verbose) {
    for (int i = 0; i < n; i++) fprintf(stderr, "%s%s", i ? " " : "", j->cargv[i]);
    fputc('\n', stderr);
  }
  return 0;
}

// Compile into j->tmp. 0 or exit status 2 after printing why (or a stop signal ms_cli_stop_caught).
static int compile(build_job *j) {
  if (ms_cli_stop_caught) return MS_EXIT_USAGE;  // stopped before the compiler started
  // Large headers (compact ones of a million points and more) take seconds.
  char label[64];
  if (j->len >= ((size_t)1 << 20) && ms_cli_progress_enabled()) {
    char size[32];
    ms__fmt_bytes((int64_t)j->len, size, sizeof size);
    snprintf(label, sizeof label, j->data ? "compiling (data file of %s)" : "compiling %s", size);
    progress_label = label;
  }
  memstub_error err = {0};
  ms__spawn_result res;
  // A listing of a million points (100 MB) compiles in under a minute:
  // two minutes and two seconds per MiB of header is a hang.
  int rc = run(j->cargv, "the compiler", 0, 1, 120, 2, j->data ? 0 : (int64_t)j->len, &res, &err);
  progress_label = progress_label ? "checking the stub data" : NULL;
  int st = rc < 0 ? 0 : ms__spawn_status(&res);
  ms__spawn_result_free(&res);
  if (ms_cli_stop_caught) return MS_EXIT_USAGE;  // stopped: the compiler, passed the signal, has ended
  if (rc < 0) return ms_cli_fail(&err);
  if (st != 0)
    return ms_cli_error("%s: the compiler failed (exit %d); is it a header made by memstub gen?",
                        j->header, st);
  // The usual permissions of an executable under the umask, whatever the linker chose.
  mode_t um = umask(0);
  umask(um);
  (void)chmod(j->tmp, 0777 & ~um);
  return 0;
}

// Check the stub data (PROGRAM --check) before the program is put in place.
// 0 or exit status 2 after printing why.
static int check_program(build_job *j) {
  memstub_error err = {0};
  char *chargv[] = {j->tmp, "--check", NULL};
  if (!strchr(j->tmp, '/')) chargv[0] = ms__asprintf("./%s", j->tmp), j->owned[14] = chargv[0];
  ms__spawn_result res = {0};
  // It decodes and checks the points: a minute and a second per MiB.
  int rc = chargv[0] ? run(chargv, "the stub's check", 1, 0, 60, 1, (int64_t)j->len, &res, &err)
                     : memstub_error_set(&err, -ENOMEM, "out of memory");
  progress_label = NULL;
  if (ms_cli_stop_caught) {
    ms__spawn_result_free(&res);
    return MS_EXIT_USAGE;
  }
  if (rc != 0 || ms__spawn_status(&res) != 0) {
    // The check's first line says why: "...error: <why>".
    char msg[1024] = "";
    if (res.err) snprintf(msg, sizeof msg, "%.*s", (int)strcspn(res.err, "\n"), res.err);
    ms__spawn_result_free(&res);
    const char *why = strstr(msg, "error: ");
    return ms_cli_error("%s: %s", j->header,
                        rc < 0 ? err.msg : why ? why + 7 : "the stub does not replay");
  }
  ms__spawn_result_free(&res);
  return 0;
}

// Create the temporary program, compile, check and put it in place.
static int build(build_job *j) {
  int fd = mkstemp(j->tmp);
  if (fd < 0) {
    int rc = ms_cli_error("%s: cannot create the program: %s", j->out, strerror(errno));
    free(j->tmp);
    j->tmp = NULL;
    return rc;
  }
  close(fd);
  int rc = compiler_argv(j);
  if (rc == 0) rc = compile(j);
  if (rc == 0) rc = check_program(j);
  if (rc != 0) return rc;
  if (rename(j->tmp, j->target) != 0)
    return ms_cli_error("%s: cannot write: %s", j->out, strerror(errno));
  free(j->tmp);
  j->tmp = NULL;
  ms_cli_note("%s: stub program built from %s", j->out, j->header);
  return 0;
}

int ms_cmd_build(int argc, char **argv) {
  build_job j = {0};
  int done, status = parse_args(&j, argc, argv, &done);
  if (done) {
    job_free(&j);
    return status;
  }
  status = j.data ? data_define(&j) : read_header(&j);
  if (status == 0) status = plan_output(&j);
  if (status != 0) {
    job_free(&j);
    return status;
  }
  struct sigaction old_actions[MS_CLI_STOP_SIGNALS];
  ms_cli_stop_catch(old_actions);  // before the temporary program exists
  status = build(&j);
  job_free(&j);
  // Last: a stop signal ms_cli_stop_caught kills memstub here, nothing left behind.
  return ms_cli_stop_release(old_actions, status);
}
