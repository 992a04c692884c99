/* cli/record_children.c: `memstub record --follow-children`: after the run,
 * the traces of the processes below the recorded one, found through the
 * registry each of them wrote a line to (recorder/follow.c), are listed with
 * their peaks; a child that died past the recorder's exit path is salvaged
 * from its journal like the root. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "memstub/trace.h"
#include "ms_common.h"
#include "../recorder/protocol.h"
#include "record.h"

typedef struct child {
  long pid, ppid;
  char cmd[64];
  char path[PATH_MAX];
} child;

// One registry line into *c: 0, or -1 when it is not one (a line cut short).
static int parse_line(char *line, child *c) {
  char *f[4];
  for (int i = 0; i < 4; i++) {
    f[i] = line;
    line = i < 3 ? strchr(line, '\t') : strchr(line, '\n');
    if (!line) return -1;
    *line++ = '\0';
  }
  char *end;
  c->pid = strtol(f[0], &end, 10);
  if (*end || c->pid <= 0) return -1;
  c->ppid = strtol(f[1], &end, 10);
  if (*end) return -1;
  snprintf(c->cmd, sizeof c->cmd, "%s", f[2]);
  return snprintf(c->path, sizeof c->path, "%s", f[3]) < (int)sizeof c->path ? 0 : -1;
}

/* The registry's lines, one per process: the last line of a pid whose trace
 * exists (a fork that exec'd registered twice, and only the new image wrote
 * a trace), else its last line. *n entries; NULL with *n 0 when there are none
 * or memory ran out. */
static child *read_registry(const char *registry, size_t *n) {
  *n = 0;
  FILE *f = fopen(registry, "re");
  if (!f) return NULL;
  child *v = NULL;
  size_t cap = 0;
  char line[PATH_MAX + 256];
  while (fgets(line, sizeof line, f)) {
    child c;
    if (parse_line(line, &c) != 0) continue;
    size_t i = 0;
    while (i < *n && v[i].pid != c.pid) i++;
    if (i < *n) {
      // Keep the earlier line when only its trace exists.
      if (access(v[i].path, F_OK) == 0 && access(c.path, F_OK) != 0) continue;
      v[i] = c;
      continue;
    }
    if (*n == cap) {
      size_t nc = cap ? 2 * cap : 16;
      child *nv = realloc(v, nc * sizeof *nv);
      if (!nv) break;
      v = nv, cap = nc;
    }
    v[(*n)++] = c;
  }
  fclose(f);
  return v;
}

// The trace path as the user named the root's: in the root's directory as
// given on the command line (relative stays relative).
static const char *shown(const rec_opts *o, const char *abs_root, const char *path, char *buf,
                         size_t cap) {
  const char *rs = strrchr(abs_root, '/'), *ps = strrchr(path, '/');
  const char *os = strrchr(o->out, '/');
  if (!rs || !ps || (size_t)(rs - abs_root) != (size_t)(ps - path) ||
      strncmp(abs_root, path, (size_t)(rs - abs_root)) != 0)
    return path;
  snprintf(buf, cap, "%.*s%s", os ? (int)(os - o->out + 1) : 0, o->out, ps + 1);
  return buf;
}

static void row(const child *c, const memstub_trace *t, const char *name) {
  char dur[32], ph[32], ps[32], pr[32] = "-";
  int64_t heap = 0, stack = 0;
  for (size_t i = 0; i < t->n; i++) {
    if (t->pts[i].heap_bytes > heap) heap = t->pts[i].heap_bytes;
    if (t->pts[i].stack_bytes > stack) stack = t->pts[i].stack_bytes;
  }
  int col = memstub_trace_column(t, "rss_bytes");
  if (col >= 0) {
    int64_t rss = 0;
    for (size_t i = 0; i < t->n; i++) {
      int64_t v = t->extra[i * t->nextra + (size_t)col];
      if (v > rss) rss = v;
    }
    ms__fmt_bytes(rss, pr, sizeof pr);
  }
  fprintf(stderr, "  %7ld %7ld %-15s %10s %10s %10s %10s  %s\n", c->pid, c->ppid, c->cmd,
          ms__fmt_ns(t->n ? t->pts[t->n - 1].time_ns : 0, dur, sizeof dur),
          ms__fmt_bytes(heap, ph, sizeof ph), ms__fmt_bytes(stack, ps, sizeof ps), pr, name);
}

int ms_record_children_report(const rec_opts *o, const char *abs, const char *registry,
                              const char *journal) {
  size_t n;
  child *v = read_registry(registry, &n);
  int missing = 0;
  if (!o->quiet && n)
    fprintf(stderr, "children (--follow-children): %zu process%s\n  %7s %7s %-15s %10s %10s %10s "
                    "%10s  %s\n",
            n, n == 1 ? "" : "es", "pid", "parent", "command", "duration", "peak heap",
            "peak stack", "peak rss", "trace");
  for (size_t i = 0; i < n; i++) {
    char cj[PATH_MAX + 32], name[PATH_MAX];
    snprintf(cj, sizeof cj, "%s.%ld", journal, v[i].pid);
    const char *show = shown(o, abs, v[i].path, name, sizeof name);
    long long occ = 0;
    int sv = access(v[i].path, F_OK) == 0
                 ? MS_SALVAGE_NONE
                 : ms_record_salvage(o, cj, v[i].path,
                                     "ended without the recorder's exit path (killed, or an exec "
                                     "into a static or setuid program)",
                                     &occ);
    unlink(cj);
    if (sv == MS_SALVAGE_WRITTEN)
      ms_cli_warn("%s: child %ld (%s) ended without writing its trace: salvaged from its journal",
                  show, v[i].pid, v[i].cmd);
    if (sv == MS_SALVAGE_NO_REGION || sv == MS_SALVAGE_NO_OCCURRENCE) {
      // What the options scope the trace to never happened in it: no trace, as at its exit.
      if (sv == MS_SALVAGE_NO_REGION)
        ms_cli_note("child %ld (%s): no trace: no --function call began a region in it",
                    v[i].pid, v[i].cmd);
      else
        ms_cli_note("child %ld (%s): no trace: --occurrence %lld, but its probe regions ran "
                    "only %lld occurrence%s",
                    v[i].pid, v[i].cmd, o->occ, occ, occ == 1 ? "" : "s");
      continue;
    }
    memstub_trace *t = NULL;
    memstub_error err = {0};
    if (memstub_trace_read(v[i].path, &t, &err) < 0) {
      ms_cli_warn("child %ld (%s): no trace: %s", v[i].pid, v[i].cmd,
                  access(v[i].path, F_OK) == 0 ? err.msg : "it wrote none and left no journal");
      missing++;
      continue;
    }
    if (!o->quiet) row(&v[i], t, show);
    memstub_trace_free(t);
  }
  free(v);
  unlink(registry);
  return missing;
}
