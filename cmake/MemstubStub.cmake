# memstub_add_stub(NAME name TRACE trace.csv [TIMING online|deadline|usleep]
#                  [TIME_SCALE f] [HEAP_SCALE f] [STACK_SCALE f]
#                  [RSS_SCALE f] [MAPPED_SCALE f] [CPU_SCALE f] [CHURN_SCALE f]
#                  [DATA] [GEN_ARGS args...])
#
# Adds a static library target NAME holding a memory stub made from TRACE:
# at build time `memstub gen TRACE --name NAME GEN_ARGS...` writes the header
# (each SCALE as gen's --time-scale ... --churn-scale, the what-ifs of
# docs/formats.md: resident and mapped memory follow HEAP_SCALE unless
# RSS_SCALE, MAPPED_SCALE set their own; TIMING as gen's --timing: the mode
# the stub replays with, online by default, and with a --calibration what it
# is compensated for)
# into the build tree (a --calibration FILE among GEN_ARGS is, like TRACE,
# relative to the source directory and a dependency), and the library exposes,
# from the generated header memstub_NAME.h (on the target's include path):
#
#   int memstub_NAME(void);                       // replay it: 0 or -errno
#   int memstub_NAME_err(memstub_error *err);     // the same, with the reason
#   const struct memstub_stub *memstub_NAME_stub(void);  // for memstub_replay_run
#   const struct memstub_threads_stub *memstub_NAME_threads(void);  // several threads, else NULL
#   long long memstub_NAME_release(void);         // GEN_ARGS --hold: release survivors now
#   long long memstub_NAME_release_bytes(long long n);  // ... at most n bytes of them
#   long long memstub_NAME_held(void);            // bytes held after the calls
#
# With DATA the stub's points go to a data file (`memstub gen --data`,
# NAME.msd in the build tree) instead of a header, and the stub reads it at
# its first call: the file named by the environment variable
# MEMSTUB_DATA_NAME (NAME as it is spelt) when that is set, else the one it
# was built with (docs/runtime.md, "One host binary for every point"). One
# host binary then replays any what-if of the component (memstub sweep). A
# missing or damaged file is the call's error, naming the variable and the
# file; never the built data instead. One thread, no --hold (a data file
# carries neither). A stub without DATA refuses to run when its variable is set.
#
# so a program links NAME and calls memstub_NAME() in place of the real
# component (of a trace with several threads, memstub_NAME() replays every
# thread: memstub_threads_call). It replays on the calling thread, on a stack
# of its own, so its allocations come from the caller's arena (docs/runtime.md,
# "On the caller's thread"). The replay follows MEMSTUB_TIMING (which
# overrides TIMING), MEMSTUB_MARGIN_NS and
# MEMSTUB_MEASURE from the environment (see docs/runtime.md); MEMSTUB_MEASURE
# names the file as --measure does (%p pid, %n NAME, %c call number; the
# process's first measured call writes the name itself, later ones NAME.2.EXT,
# NAME.3.EXT: docs/runtime.md, "Measurement files").
#
# NAME is checked by memstub itself (`memstub gen --check-name NAME OTHERS`,
# docs/runtime.md, "Stub names"): a C identifier of at most 64 characters,
# not a C keyword, starting with none of _, m4_ and MS_, meeting none of
# memstub's own names (a stub owns memstub_NAME and memstub_NAME_*, so
# `replay` and `stub_call` are refused), and overlapping no stub added before
# it in the same project (`alpha` and `alpha_err` both claim
# memstub_alpha_err). With an installed or build-tree memstub that happens at
# configure time; inside a project that builds memstub itself, when the
# header is generated.
#
# Inside the memstub project the function uses its targets (memstub,
# memstub_runtime). After find_package(memstub) it uses the installed tree's
# exported targets (memstub::memstub, memstub::runtime). After an include of
# this file alone, or when MEMSTUB_EXECUTABLE is set, it uses
# MEMSTUB_EXECUTABLE, MEMSTUB_LIBDIR and MEMSTUB_INCLUDEDIR, which default to
# the installed memstub.
include_guard(GLOBAL)

function(memstub_add_stub)
  set(scales TIME HEAP STACK RSS MAPPED CPU CHURN)
  set(scale_keys "")
  foreach(k IN LISTS scales)
    list(APPEND scale_keys ${k}_SCALE)
  endforeach()
  cmake_parse_arguments(S "DATA" "NAME;TRACE;TIMING;${scale_keys}" "GEN_ARGS" ${ARGN})
  if(NOT S_NAME)
    message(FATAL_ERROR "memstub_add_stub: NAME is missing")
  endif()
  if(NOT S_TRACE)
    message(FATAL_ERROR "memstub_add_stub(${S_NAME}): TRACE is missing")
  endif()
  if(S_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "memstub_add_stub(${S_NAME}): unknown arguments ${S_UNPARSED_ARGUMENTS}")
  endif()
  get_filename_component(trace "${S_TRACE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  # A calibration profile in GEN_ARGS is an input like TRACE: relative to the
  # source directory, and a dependency, so a new profile regenerates the header.
  set(gen_args "")
  set(profiles "")
  set(profile_next FALSE)
  foreach(arg IN LISTS S_GEN_ARGS)
    set(profile "")
    if(profile_next)
      set(profile "${arg}")
    elseif(arg MATCHES "^--calibration=(.+)$")
      set(profile "${CMAKE_MATCH_1}")
    endif()
    if(NOT profile STREQUAL "")
      get_filename_component(profile "${profile}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      list(APPEND profiles "${profile}")
      if(profile_next)
        set(arg "${profile}")
      else()
        set(arg "--calibration=${profile}")
      endif()
    endif()
    set(profile_next FALSE)
    if(arg STREQUAL "--calibration" OR arg STREQUAL "-c")
      set(profile_next TRUE)
    endif()
    list(APPEND gen_args "${arg}")
  endforeach()
  # The timing, as gen's --timing, once: given twice it would be ambiguous.
  if(DEFINED S_TIMING)
    if(NOT S_TIMING MATCHES "^(online|deadline|usleep)$")
      message(FATAL_ERROR "memstub_add_stub(${S_NAME}): TIMING: expected online, deadline or "
              "usleep, found '${S_TIMING}'")
    endif()
    foreach(arg IN LISTS S_GEN_ARGS)
      if(arg MATCHES "^(-t|--timing)(=.*)?$")
        message(FATAL_ERROR "memstub_add_stub(${S_NAME}): TIMING and ${arg} in GEN_ARGS: give "
                "one of them")
      endif()
    endforeach()
    list(APPEND gen_args "--timing" "${S_TIMING}")
  endif()
  # The what-if scales, as memstub gen's options (it checks their values).
  foreach(k IN LISTS scales)
    if(DEFINED S_${k}_SCALE)
      string(TOLOWER "${k}" opt)
      list(APPEND gen_args "--${opt}-scale" "${S_${k}_SCALE}")
    endif()
  endforeach()

  set(check_exe "")  # the command, when it exists at configure time
  if(TARGET memstub AND TARGET memstub_runtime)
    set(exe "$<TARGET_FILE:memstub>")
    set(exe_dep memstub)
    set(runtime memstub_runtime)
  elseif(TARGET memstub::memstub AND TARGET memstub::runtime AND NOT MEMSTUB_EXECUTABLE)
    # find_package(memstub): the command and the runtime of that install.
    set(exe "$<TARGET_FILE:memstub::memstub>")
    set(exe_dep "$<TARGET_FILE:memstub::memstub>")
    set(runtime memstub::runtime)
    get_target_property(check_exe memstub::memstub LOCATION)
  else()
    if(NOT MEMSTUB_EXECUTABLE)
      set(hint "")
      if(MEMSTUB_INSTALLED_EXECUTABLE)
        get_filename_component(hint "${MEMSTUB_INSTALLED_EXECUTABLE}" DIRECTORY)
      endif()
      find_program(MEMSTUB_EXECUTABLE memstub HINTS ${hint} REQUIRED)
    endif()
    set(exe "${MEMSTUB_EXECUTABLE}")
    set(exe_dep "${MEMSTUB_EXECUTABLE}")
    foreach(dir LIBDIR INCLUDEDIR)
      if(NOT MEMSTUB_${dir})
        set(MEMSTUB_${dir} "${MEMSTUB_INSTALLED_${dir}}")
      endif()
    endforeach()
    if(NOT EXISTS "${MEMSTUB_LIBDIR}/libmemstub_runtime.a" OR
       NOT EXISTS "${MEMSTUB_INCLUDEDIR}/memstub/runtime.h")
      message(FATAL_ERROR "memstub_add_stub(${S_NAME}): no memstub runtime in MEMSTUB_LIBDIR="
              "'${MEMSTUB_LIBDIR}' and MEMSTUB_INCLUDEDIR='${MEMSTUB_INCLUDEDIR}'")
    endif()
    if(NOT TARGET memstub::runtime)
      find_package(Threads REQUIRED)
      add_library(memstub::runtime INTERFACE IMPORTED GLOBAL)
      set_target_properties(memstub::runtime PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${MEMSTUB_INCLUDEDIR}"
        INTERFACE_LINK_LIBRARIES
          "${MEMSTUB_LIBDIR}/libmemstub_runtime.a;${MEMSTUB_LIBDIR}/libmemstub_trace.a;${MEMSTUB_LIBDIR}/libmemstub_common.a;Threads::Threads;m")
    endif()
    set(runtime memstub::runtime)
    set(check_exe "${MEMSTUB_EXECUTABLE}")
  endif()

  # The name, by memstub_gen_name_check, against the stubs added before.
  get_property(others GLOBAL PROPERTY MEMSTUB_STUB_NAMES)
  set(check_cmd "")
  if(check_exe)
    execute_process(COMMAND "${check_exe}" gen --check-name "${S_NAME}" ${others}
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE msg TIMEOUT 60)
    if(NOT rc EQUAL 0)
      string(REGEX REPLACE "^memstub: error: " "" msg "${msg}")
      string(STRIP "${msg}" msg)
      if(NOT rc MATCHES "^[0-9]+$")  # not run, or killed: execute_process says why
        set(msg "${check_exe}: ${rc} ${msg}")
      endif()
      message(FATAL_ERROR "memstub_add_stub(${S_NAME}): ${msg}")
    endif()
  else()  # memstub is built in this project: checked before the header is made
    set(check_cmd COMMAND "${exe}" gen --check-name "${S_NAME}" ${others})
  endif()
  set_property(GLOBAL APPEND PROPERTY MEMSTUB_STUB_NAMES "${S_NAME}")

  # Generated files live in the build tree only.
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/memstub_${S_NAME}")
  set(header "${dir}/${S_NAME}_memuse.h")
  # --hold and --release read TRACE.generations beside the trace, and a
  # data file (DATA) TRACE.calls: a new one alone makes a new stub.
  set(sidecars "")
  foreach(side generations calls)
    if(EXISTS "${trace}.${side}")
      list(APPEND sidecars "${trace}.${side}")
    endif()
  endforeach()
  # DATA: the points in a data file the stub reads when first called.
  set(gen_out -o "${header}")
  if(S_DATA)
    set(header "${dir}/${S_NAME}.msd")
    set(gen_out --data "${header}")
  endif()
  add_custom_command(OUTPUT "${header}"
    ${check_cmd}
    COMMAND "${exe}" gen "${trace}" --name ${S_NAME} ${gen_out} ${gen_args}
    DEPENDS "${trace}" ${sidecars} ${profiles} ${exe_dep}
    COMMENT "memstub gen ${S_TRACE} --name ${S_NAME}"
    VERBATIM)
  file(CONFIGURE OUTPUT "${dir}/memstub_${S_NAME}.h" @ONLY CONTENT
"/* memstub_${S_NAME}.h: the stub ${S_NAME} (from ${S_TRACE}), generated by
 * memstub_add_stub. Do not edit. */
#ifndef MEMSTUB_STUB_${S_NAME}_H
#define MEMSTUB_STUB_${S_NAME}_H

#ifdef __cplusplus
extern \"C\" {
#endif

struct memstub_stub;
struct memstub_threads_stub;
struct memstub_error;

/* Replay the stub in place of the real component: its heap, stack and timing.
 * Returns 0, or a negative errno when it cannot run here. */
int memstub_${S_NAME}(void);
/* The same; on failure err (if not NULL) says why. */
int memstub_${S_NAME}_err(struct memstub_error *err);
/* The stub data, for memstub_replay_run() (memstub/runtime.h); of a trace
 * with several threads, thread 0's stub. */
const struct memstub_stub *memstub_${S_NAME}_stub(void);
/* Of a trace with several threads, every thread's stub and the thread table,
 * for memstub_threads_run() (memstub/threads.h); NULL for one thread. */
const struct memstub_threads_stub *memstub_${S_NAME}_threads(void);
/* A stub made with GEN_ARGS --hold (or --hold-api) returns holding what the
 * component left alive (docs/runtime.md, \"Survivors after the return\"):
 * release what the program freed of it now, where the host frees the real
 * results (the bytes released); at most n bytes of it, oldest first; and
 * the bytes held now. Without --hold they hold nothing and return 0. */
long long memstub_${S_NAME}_release(void);
long long memstub_${S_NAME}_release_bytes(long long n);
long long memstub_${S_NAME}_held(void);

#ifdef __cplusplus
}
#endif
#endif
")
  if(S_DATA)
    # The path as a C string literal.
    string(REPLACE "\\" "\\\\" data_c "${header}")
    string(REPLACE "\"" "\\\"" data_c "${data_c}")
    file(CONFIGURE OUTPUT "${dir}/memstub_${S_NAME}.c" @ONLY CONTENT
"/* The stub ${S_NAME}'s entry points, generated by memstub_add_stub(... DATA):
 * its data file, $MEMSTUB_DATA_${S_NAME} or the one it was built with, is read
 * at the first call. */
#include \"memstub/runtime.h\"
#include \"memstub_${S_NAME}.h\"

static memstub_stub_data_env ms_data = MEMSTUB_STUB_DATA_ENV_INIT(\"${S_NAME}\", \"${data_c}\");

int memstub_${S_NAME}(void) { return memstub_stub_data_env_call(&ms_data, 0); }
int memstub_${S_NAME}_err(struct memstub_error *err) { return memstub_stub_data_env_call(&ms_data, err); }
const struct memstub_stub *memstub_${S_NAME}_stub(void) { return memstub_stub_data_env_get(&ms_data, 0); }
const struct memstub_threads_stub *memstub_${S_NAME}_threads(void) { return 0; }
long long memstub_${S_NAME}_release(void) { return 0; }
long long memstub_${S_NAME}_release_bytes(long long n) { return (void)n, 0; }
long long memstub_${S_NAME}_held(void) { return 0; }
")
  else()
  file(CONFIGURE OUTPUT "${dir}/memstub_${S_NAME}.c" @ONLY CONTENT
"/* The stub ${S_NAME}'s entry points, generated by memstub_add_stub. */
#include \"memstub/runtime.h\"
#include \"memstub/threads.h\"
#include \"${S_NAME}_memuse.h\"
#include \"memstub_${S_NAME}.h\"

/* The replay a call makes: of every thread (a trace with several,
 * memstub_threads_call), of the stub holding its survivors after it returns
 * (--hold), or of the stub. */
#if defined(${S_NAME}_THREADS)
#define MS_CALL(err) memstub_threads_call(&${S_NAME}_memThreads, err)
#elif defined(${S_NAME}_HOLD)
#define MS_CALL(err) memstub_stub_call_held(&${S_NAME}_memStub, &${S_NAME}_memRelease, err)
#else
#define MS_CALL(err) memstub_stub_call(&${S_NAME}_memStub, err)
#endif
/* A call, unless MEMSTUB_DATA_${S_NAME} names a data file this stub cannot read. */
static int ms_call(struct memstub_error *err) {
  int rc = memstub_stub_data_env_none(\"${S_NAME}\", err);
  return rc < 0 ? rc : MS_CALL(err);
}
int memstub_${S_NAME}(void) { return ms_call(NULL); }
int memstub_${S_NAME}_err(struct memstub_error *err) { return ms_call(err); }

#if defined(${S_NAME}_HOLD) && !defined(${S_NAME}_THREADS)
long long memstub_${S_NAME}_release(void) { return memstub_release_now(&${S_NAME}_memRelease, -1); }
long long memstub_${S_NAME}_release_bytes(long long n) {
  return n > 0 ? memstub_release_now(&${S_NAME}_memRelease, n) : 0;
}
long long memstub_${S_NAME}_held(void) { return memstub_release_held(&${S_NAME}_memRelease); }
#else
long long memstub_${S_NAME}_release(void) { return 0; }
long long memstub_${S_NAME}_release_bytes(long long n) { return (void)n, 0; }
long long memstub_${S_NAME}_held(void) { return 0; }
#endif

#if defined(${S_NAME}_THREADS)
const struct memstub_stub *memstub_${S_NAME}_stub(void) { return &${S_NAME}_t0_memStub; }
const struct memstub_threads_stub *memstub_${S_NAME}_threads(void) { return &${S_NAME}_memThreads; }
#else
const struct memstub_stub *memstub_${S_NAME}_stub(void) { return &${S_NAME}_memStub; }
const struct memstub_threads_stub *memstub_${S_NAME}_threads(void) { return 0; }
#endif
")
  endif()
  add_library(${S_NAME} STATIC "${dir}/memstub_${S_NAME}.c" "${header}")
  target_include_directories(${S_NAME} PUBLIC "${dir}")
  target_link_libraries(${S_NAME} PUBLIC ${runtime})
endfunction()
