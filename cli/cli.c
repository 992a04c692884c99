// Messages, option numbers and progress for the memstub subcommands.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/calib.h"
#include "ms_common.h"

static void vmsg(const char *kind, const char *fmt, va_list ap) {
  fprintf(stderr, "memstub: %s", kind);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

int ms_cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg("error: ", fmt, ap);
  va_end(ap);
  return MS_EXIT_USAGE;
}

int ms_cli_fail(const memstub_error *err) { return ms_cli_error("%s", err->msg); }

void ms_cli_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg("warning: ", fmt, ap);
  va_end(ap);
}

void ms_cli_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg("", fmt, ap);
  va_end(ap);
}

int ms_cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg("error: ", fmt, ap);
  va_end(ap);
  fprintf(stderr, "see 'memstub %s --help'\n", cmd);
  return MS_EXIT_USAGE;
}

int ms_cli_double(const char *cmd, const char *opt, const char *arg, double *out) {
  if (ms__parse_double(arg, out) < 0) {
    ms_cli_usage(cmd, "%s: expected a number, found '%s'", opt, arg);
    return -EINVAL;
  }
  return 0;
}

int ms_cli_i64(const char *cmd, const char *opt, const char *arg, int64_t *out) {
  int rc = ms__parse_i64(arg, strlen(arg), out);
  if (rc < 0) {
    ms_cli_usage(cmd, "%s: expected an integer, found '%s'", opt, arg);
    return -EINVAL;
  }
  return 0;
}

int ms_cli_load_profile(const char *path, memstub_profile *prof) {
  memstub_error err = {0};
  char warn[512];
  int rc = memstub_profile_read(path, prof, &err);
  if (rc == 0) rc = memstub_profile_check(prof, path, warn, sizeof warn, &err);
  if (rc < 0) return ms_cli_fail(&err);
  if (rc > 0) ms_cli_warn("%s", warn);
  return 0;
}

char *ms_cli_sidecar_path(const char *trace, const char *ext) {
  size_t n = strlen(trace), k = strlen(ext);
  if (n > k && strcmp(trace + n - k, ext) == 0) return ms__strdup(trace);
  return ms__asprintf("%s%s", trace, ext);
}

void ms_cli_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

int ms_cli_cat(const char *path) {
  char *buf;
  size_t len;
  memstub_error err = {0};
  if (ms__read_file(path, &buf, &len, &err) < 0) return ms_cli_fail(&err);
  int bad = fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0;
  free(buf);
  return bad ? ms_cli_error("standard output: %s", strerror(errno)) : 0;
}

void ms_cli_columns_from_terminal(void) {
  struct winsize ws;
  if (getenv("COLUMNS") || !isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 ||
      ws.ws_col == 0)
    return;
  char buf[16];
  snprintf(buf, sizeof buf, "%u", (unsigned)ws.ws_col);
  setenv("COLUMNS", buf, 1);
}

int ms_cli_progress_enabled(void) {
  static int enabled = -1;
  if (enabled < 0) enabled = isatty(STDERR_FILENO) && !getenv("MEMSTUB_QUIET");
  return enabled;
}

void ms_cli_progress(const char *label, uint64_t done, uint64_t total) {
  if (!ms_cli_progress_enabled()) return;
  unsigned pct = total ? (unsigned)(done * 100 / total) : 100;
  fprintf(stderr, "\r\033[K%s  %llu/%llu (%u%%)", label, (unsigned long long)done,
          (unsigned long long)total, pct);
  if (done >= total) fputc('\n', stderr);
  fflush(stderr);
}

/* ---- options as data ---------------------------------------------------- */

static const ms_cli_option help_option = {"help", 'h', NULL, "show this help"};

// The table's options, then --help: the i-th, or NULL past the end.
static const ms_cli_option *option_at(const ms_cli_spec *spec, int i) {
  int n = 0;
  while (spec->opts[n].name) n++;
  return i < n ? &spec->opts[i] : i == n ? &help_option : NULL;
}

void ms_cli_help(const ms_cli_spec *spec, FILE *f) {
  fputs(spec->intro, f);
  fputs("options:\n", f);
  const ms_cli_option *o;
  for (int i = 0; (o = option_at(spec, i)); i++) {
    char left[128];
    const char *sp = o->arg ? " " : "", *arg = o->arg ? o->arg : "";
    int n = o->key < MS_CLI_LONG
                ? snprintf(left, sizeof left, "  -%c, --%s%s%s", o->key, o->name, sp, arg)
                : snprintf(left, sizeof left, "      --%s%s%s", o->name, sp, arg);
    fprintf(f, "%-*s", spec->column, left);
    if (n >= spec->column) fprintf(f, " ");
    // Continuation lines of the help start at the column too.
    for (const char *h = o->help; *h;) {
      size_t len = strcspn(h, "\n");
      fprintf(f, "%.*s\n", (int)len, h);
      h += len;
      if (*h == '\n' && *++h) fprintf(f, "%*s", spec->column, "");
    }
  }
  if (spec->outro) fputs(spec->outro, f);
  ms_cli_examples(spec->name, f);
}

// The getopt_long tables for p->spec, and getopt reset for a new argv.
static void begin(ms_cli_parser *p) {
  size_t s = 0;
  p->shorts[s++] = ':';  // report a missing value as ':', not '?'
  const ms_cli_option *o;
  for (int i = 0; (o = option_at(p->spec, i)) && i < MS_CLI_MAX_OPTIONS + 1; i++) {
    p->longs[i] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->key};
    if (o->key < MS_CLI_LONG) {
      p->shorts[s++] = (char)o->key;
      if (o->arg) p->shorts[s++] = ':';
    }
  }
  p->started = 1;
  optind = 1;
  opterr = 0;
}

int ms_cli_next(ms_cli_parser *p, int argc, char **argv) {
  if (!p->started) begin(p);
  int c = getopt_long(argc, argv, p->shorts, p->longs, NULL);
  p->optind = optind;
  p->arg = optarg;
  p->opt = NULL;
  if (c == -1) return 0;
  const char *cmd = p->spec->name;
  if (c == ':') {
    p->status = ms_cli_usage(cmd, "%s needs a value", argv[optind - 1]);
    return -1;
  }
  const ms_cli_option *o = NULL;
  for (int i = 0; (o = option_at(p->spec, i)); i++)
    if (o->key == c) break;
  if (!o) {
    const char *bad = argv[optind - 1], *near = NULL;
    char name[64];
    // A long option: the closest long name ("--outptu=x" -> "output").
    if (c == '?' && optopt == 0 && strncmp(bad, "--", 2) == 0) {
      snprintf(name, sizeof name, "%.*s", (int)strcspn(bad + 2, "="), bad + 2);
      const char *names[MS_CLI_MAX_OPTIONS + 2];
      int n = 0;
      for (int i = 0; (o = option_at(p->spec, i)) && n < MS_CLI_MAX_OPTIONS + 1; i++)
        names[n++] = o->name;
      names[n] = NULL;
      near = ms_cli_closest(name, names);
      // A prefix of several long names ("--time"): getopt_long cannot choose.
      char list[256] = "";
      size_t len = 0, matches = 0;
      for (int i = 0; i < n && len < sizeof list; i++)
        if (*name && strncmp(names[i], name, strlen(name)) == 0)
          len += (size_t)snprintf(list + len, sizeof list - len, "%s'--%s'",
                                  matches++ ? ", " : "", names[i]);
      if (matches > 1) {
        p->status = ms_cli_usage(cmd, "ambiguous option '%s': %s", bad, list);
        return -1;
      }
    }
    if (near)
      p->status = ms_cli_usage(cmd, "unknown option '%s' (did you mean '--%s'?)", bad, near);
    else
      p->status = ms_cli_usage(cmd, "unknown option '%s'", bad);
    return -1;
  }
  if (o == &help_option) {
    ms_cli_help(p->spec, stdout);
    p->status = MS_EXIT_OK;
    return -1;
  }
  snprintf(p->optname, sizeof p->optname, "--%s", o->name);
  p->opt = p->optname;
  return c;
}

int ms_cli_arg_double(ms_cli_parser *p, double *out) {
  return ms_cli_double(p->spec->name, p->opt, p->arg, out) < 0 ? -1 : 0;
}

int ms_cli_arg_i64(ms_cli_parser *p, int64_t *out) {
  return ms_cli_i64(p->spec->name, p->opt, p->arg, out) < 0 ? -1 : 0;
}

int ms_cli_arg_choice(ms_cli_parser *p, const char *const *choices, int *out) {
  int n = 0;
  for (; choices[n]; n++)
    if (strcmp(p->arg, choices[n]) == 0) {
      *out = n;
      return 0;
    }
  // "expected a, b or c"
  char list[256] = "";
  size_t len = 0;
  for (int i = 0; i < n && len < sizeof list; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
                            i == 0 ? "" : i == n - 1 ? " or " : ", ", choices[i]);
  ms_cli_usage(p->spec->name, "%s: expected %s, found '%s'", p->opt, list, p->arg);
  return -1;
}

/* ---- typo suggestions --------------------------------------------------- */

size_t ms_cli_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return la > lb ? la : lb;  // no name is this long
  // Three rows of the optimal-string-alignment table.
  size_t rows[3][64], *pp = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= lb; j++) prev[j] = j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t cost = a[i - 1] != b[j - 1];
      size_t d = prev[j] + 1;
      if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1;
      if (prev[j - 1] + cost < d) d = prev[j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < d)
        d = pp[j - 2] + 1;
      cur[j] = d;
    }
    size_t *t = pp;
    pp = prev;
    prev = cur;
    cur = t;
  }
  return prev[lb];
}

const char *ms_cli_closest(const char *word, const char *const *candidates) {
  size_t len = strlen(word), limit = len <= 4 ? 1 : len <= 8 ? 2 : 3, best = limit + 1;
  const char *pick = NULL;
  for (size_t i = 0; candidates[i]; i++) {
    size_t d = ms_cli_distance(word, candidates[i]);
    if (d < best) best = d, pick = candidates[i];
  }
  return pick;
}
