/* The examples at the end of every subcommand's --help. Each is a shell
 * command line printed after "  $ "; they run as printed, in order, in a
 * directory holding a copy of the bundled sample traces (listing1.csv,
 * nonlifo.csv, synthetic-4.8s.csv from share/memstub/traces/samples), and
 * tests/test_everyday.c runs them all that way. A line whose program is not
 * installed (valgrind, memusage) is skipped by that test, not failed. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct examples {
  const char *cmd;
  const char *lines;  // one command per line, each ending with '\n'
} examples;

static const examples table[] = {
    {"demo", "memstub demo -o memstub-demo\n"
             "memstub demo listing1.csv -o demo-listing1 --profile memstub-demo/host.profile\n"},
    {"record", "memstub record -o ls.csv -- ls -l /\n"
               "memstub record --sites -o sort.csv -- sort /etc/passwd\n"
               "memstub sites sort.csv\n"
               "memstub record --function strcoll -o strcoll.csv -- sort /etc/passwd\n"
               "memstub record --follow-children -o sh.csv -- sh -c 'sort /etc/passwd | wc -l'\n"},
    {"import", "memusage -d ls.memusage ls > /dev/null\n"
               "memstub import memusage ls.memusage -o ls-memusage.csv\n"
               "valgrind -q --tool=massif --stacks=yes --time-unit=ms --massif-out-file=ls.massif ls\n"
               "memstub import massif ls.massif -o ls-massif.csv\n"},
    {"gen", "memstub gen listing1.csv -o memuse.h\n"
            "memstub gen synthetic-4.8s.csv --heap-scale 0.5 --time-scale 0.7 -o what-if.h\n"},
    {"build", "memstub gen listing1.csv -o memuse.h\n"
              "memstub build memuse.h -o stub\n"
              "./stub --measure replayed.csv\n"},
    {"replay", "memstub replay listing1.csv --measure replayed.csv\n"
               "memstub replay synthetic-4.8s.csv --time-scale 0.5 --measure faster.csv\n"},
    {"calibrate", "memstub calibrate --quick -o host.profile\n"
                  "memstub gen synthetic-4.8s.csv --calibration host.profile -o memuse.h\n"},
    {"compare", "memstub replay listing1.csv --measure replayed.csv\n"
                "memstub compare listing1.csv replayed.csv\n"
                "memstub compare listing1.csv replayed.csv --json --check missing=0,repeated=0\n"
                "memstub replay listing1.csv --heap-scale 0.5 --measure half-heap.csv\n"
                "memstub compare listing1.csv half-heap.csv\n"},
    {"plot", "memstub replay nonlifo.csv --measure replayed.csv\n"
             "memstub plot nonlifo.csv replayed.csv -o figure3.png\n"
             "memstub plot nonlifo.csv replayed.csv\n"
             "memstub plot synthetic-4.8s.csv -o curves.txt\n"},
    {"report", "memstub replay listing1.csv --measure replayed.csv\n"
               "memstub replay listing1.csv --heap-scale 0.5 --time-scale 0.7 --measure what-if.csv\n"
               "memstub report listing1.csv replayed.csv what-if.csv -o report.html\n"
               "memstub record --sites -o sort.csv -- sort /etc/passwd\n"
               "memstub report sort.csv -o sort.html\n"},
    {"generations", "memstub record --function strcoll -o strcoll.csv -- sort /etc/passwd\n"
                    "memstub generations strcoll.csv\n"
                    "memstub generations strcoll.csv --top 3 --json\n"},
    {"sweep", "memstub sweep listing1.csv --stub listing1 --heap-scale 1,0.5 --time-scale 1,0.5 "
              "--repeat 2 -o sweep -- sh -c 'exec memstub replay --data \"$MEMSTUB_DATA_listing1\"'\n"
              "cat sweep/summary.md\n"},
    {"sites", "memstub record --sites -o sort.csv -- sort /etc/passwd\n"
              "memstub sites sort.csv\n"
              "memstub sites sort.csv --top 5 --json\n"},
};

void ms_cli_examples(const char *cmd, FILE *f) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    if (strcmp(table[i].cmd, cmd) != 0) continue;
    fputs("\nexamples (in a directory holding a copy of share/memstub/traces/samples):\n", f);
    for (const char *l = table[i].lines; *l;) {
      size_t len = strcspn(l, "\n");
      fprintf(f, "  $ %.*s\n", (int)len, l);
      l += len + (l[len] == '\n');
    }
  }
}
