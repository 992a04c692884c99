/* plots/gnuplot.h: running gnuplot on one of memstub's scripts (internal).
 *
 * A run owns a private temporary directory for its data files; the script
 * is run as `gnuplot -c SCRIPT DIR OUTPUT FORMAT [ARGS...]`, writing to a
 * temporary name that is renamed into place only when gnuplot succeeded and
 * wrote something. Used by memstub plot and by the calibration's fit plot. */
#ifndef MEMSTUB_PLOTS_GNUPLOT_H
#define MEMSTUB_PLOTS_GNUPLOT_H

#include "memstub/error.h"

typedef struct ms__gnuplot {
  char *dir;            // the run's temporary directory
  char *script;         // the script's path
  const char *program;  // the gnuplot to run
  const char *format;   // png, svg, pdf or txt
} ms__gnuplot;

/* Prepare to draw out with script (NULL: plots/<script_name> under
 * memstub's data directory) by program (NULL: $MEMSTUB_GNUPLOT, else
 * "gnuplot"), with data files in a new directory under tmpdir (NULL: $TMPDIR,
 * else /tmp). out's extension picks the format: .png, .svg, .pdf, and .txt
 * when text_ok. 0, or -EINVAL (format), -ENOENT (script) or -ENOMEM / -errno
 * with err set; on failure nothing needs ms__gnuplot_end. */
int ms__gnuplot_begin(ms__gnuplot *g, const char *out, const char *script_name,
                      const char *script, const char *program, const char *tmpdir, int text_ok,
                      memstub_error *err);

/* The path of a data file called name in the run's directory (malloc'd), or
 * NULL when out of memory. */
char *ms__gnuplot_path(const ms__gnuplot *g, const char *name);

/* Run the script on the run's directory, drawing out; extra (NULL-terminated,
 * may be NULL) follows the format on the command line. Nothing appears at out
 * on failure: -ENOENT when gnuplot cannot be run, -EIO when it fails (its
 * last words quoted) or writes nothing. */
int ms__gnuplot_render(ms__gnuplot *g, const char *out, const char *const *extra,
                       memstub_error *err);

/* Remove the run's directory with everything in it, and free g's strings. */
void ms__gnuplot_end(ms__gnuplot *g);

#endif
