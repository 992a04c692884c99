/* runtime/ms_runtime.h: what other parts of memstub (the CLI's build and
 * replay commands) need from the runtime beyond its public API. Not installed. */
#ifndef MEMSTUB_RUNTIME_MS_RUNTIME_H
#define MEMSTUB_RUNTIME_MS_RUNTIME_H

/* How memstub build compiles a stub program (buildinfo.c, values baked in by
 * CMake): the C compiler CMake used, extra flags the libraries need (the
 * sanitizer flags in a sanitized build), and the static libraries to link,
 * in order, by name: NAME is the archive libNAME.a in ms__libdir(). After
 * them come the system libraries, MS__RT_SYSTEM_LIBS. */
const char *ms__rt_build_cc(void);
const char *ms__rt_build_cflags(void);   // space-separated, may be ""
const char *ms__rt_build_libs(void);     // space-separated names
#define MS__RT_SYSTEM_LIBS "-lpthread -lm"
// The stub program's main, relative to ms__datadir().
#define MS__RT_STUB_MAIN "runtime/stub_main.c"

#endif
