// How memstub build compiles a stub program: values baked in by CMake
// (runtime/CMakeLists.txt).
#include "ms_runtime.h"

const char *ms__rt_build_cc(void) { return MS__RT_BUILD_CC; }
const char *ms__rt_build_cflags(void) { return MS__RT_BUILD_CFLAGS; }
const char *ms__rt_build_libs(void) { return MS__RT_BUILD_LIBS; }
