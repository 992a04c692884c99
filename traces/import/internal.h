/* traces/import/internal.h: what the importers share (not installed). */
#ifndef MEMSTUB_IMPORT_INTERNAL_H
#define MEMSTUB_IMPORT_INTERNAL_H

#include <stddef.h>

#include "memstub/import.h"

/* Reads a file's bytes into a NUL-terminated malloc'd *buf (ms__read_file's
 * contract): 0, or -errno with err naming path. */
typedef int ms__import_load(const char *path, char **buf, size_t *len, memstub_error *err);
/* Parses an importer's bytes held in memory (memstub_import_*_parse's
 * contract). */
typedef int ms__import_parse(const char *name, const char *buf, size_t len,
                             const memstub_import_options *o, memstub_trace **out,
                             memstub_error *err);

/* memstub_import_<format>(path, ...): the file's bytes by load, then parse
 * of them (the path in its messages). 0 with *out a new trace, or -errno
 * with *out NULL and err set by load or parse. */
int ms__import_file(const char *path, ms__import_load *load, ms__import_parse *parse,
                    const memstub_import_options *o, memstub_trace **out, memstub_error *err);

#endif
