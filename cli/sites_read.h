/* cli/sites_read.h: the TRACE.sites file `memstub record --sites` writes
 * (docs/formats.md#allocation-sites), read for `memstub sites` and
 * `memstub generations --sites` (cli/sites_read.c; fuzzed by
 * tests/fuzz/fuzz_sites.c). Depends on common/ only. */
#ifndef MEMSTUB_CLI_SITES_READ_H
#define MEMSTUB_CLI_SITES_READ_H

#include <stddef.h>
#include <stdint.h>

#include "memstub/error.h"

// A `map` line: an executable file mapping of the recorded process.
typedef struct ms_cli_sites_map {
  uint64_t lo, hi, off;
  char *path;
  int64_t delta;  // the ELF's p_vaddr - p_offset for this mapping (symbolising)
  int delta_known;
} ms_cli_sites_map;

// A return address of a backtrace, and what symbolising learns of it.
typedef struct ms_cli_sites_frame {
  uint64_t pc;
  int map;          // index into maps, or -1
  uint64_t vaddr;   // the address in the object's ELF terms (pc - 1 mapped)
  char *function;   // NULL: unknown
  char *file;       // NULL: unknown
  long line;
  int looked;       // addr2line has been asked already
} ms_cli_sites_frame;

// A `site` line: one backtrace (or, grouped, the backtraces of one place).
typedef struct ms_cli_sites_site {
  int64_t peak, alloc;
  int64_t peak_n, alloc_n;
  size_t nframes;
  ms_cli_sites_frame *frames;  // of the backtrace with the most bytes at the peak, when grouped
  int64_t rep_peak;  // that backtrace's own bytes at the peak
  size_t nbt;        // backtraces grouped here (1 when not grouped)
  size_t skip;       // leading frames inside allocation wrappers (operator new, ...)
} ms_cli_sites_site;

typedef struct ms_cli_sites_file {
  char *path;
  int64_t interval, peak_heap, peak_time, snapshots, sampled, dropped;
  ms_cli_sites_map *maps;
  size_t nmaps;
  ms_cli_sites_site *sites;  // in file order
  size_t nsites;
} ms_cli_sites_file;

enum { MS_CLI_SITES_MAX_FRAMES = 16 };  // return addresses per site line

/* Read the sites file at path into *s (whose previous contents are not
 * freed): 0, or a negative errno with err "path:LINE: field N: what is
 * wrong" (a last line without its newline, a key missing or twice, a field
 * out of range, sums beyond 64 bits). *s is to be freed with
 * ms_cli_sites_file_free either way. */
int ms_cli_sites_read(const char *path, ms_cli_sites_file *s, memstub_error *err);
/* Free what *s holds (its frames' names too); *s is then empty. */
void ms_cli_sites_file_free(ms_cli_sites_file *s);
/* Free the frames of one site. */
void ms_cli_sites_site_free(ms_cli_sites_site *st);

#endif
