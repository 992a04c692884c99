# cmake -DOUT=file.c -DDIR=include/memstub -P ApiNames.cmake
# Writes OUT defining `const char *const ms__gen_api_names[]` and
# `const unsigned long ms__gen_api_count`: every identifier memstub_... that
# the public headers DIR/*.h declare or use outside comments, sorted, once
# each. A stub's names must not meet them (generator/names.c).
cmake_minimum_required(VERSION 3.20)
file(GLOB headers "${DIR}/*.h")
list(SORT headers)
set(names "")
foreach(h IN LISTS headers)
  file(READ "${h}" text)
  # Comments out: /* ... */ (CMake's regular expressions are greedy, so by
  # hand), then // to the end of the line.
  set(code "")
  while(TRUE)
    string(FIND "${text}" "/*" open)
    if(open EQUAL -1)
      string(APPEND code "${text}")
      break()
    endif()
    string(SUBSTRING "${text}" 0 ${open} before)
    string(APPEND code "${before} ")
    math(EXPR after "${open} + 2")
    string(SUBSTRING "${text}" ${after} -1 text)
    string(FIND "${text}" "*/" close)
    if(close EQUAL -1)
      message(FATAL_ERROR "${h}: a comment without its end")
    endif()
    math(EXPR after "${close} + 2")
    string(SUBSTRING "${text}" ${after} -1 text)
  endwhile()
  string(REGEX REPLACE "//[^\n]*" "" code "${code}")
  string(REGEX MATCHALL "(^|[^A-Za-z0-9_])memstub_[A-Za-z0-9_]+" found "${code}")
  foreach(n IN LISTS found)
    string(REGEX REPLACE "^[^m]" "" n "${n}")
    list(APPEND names "${n}")
  endforeach()
endforeach()
list(REMOVE_DUPLICATES names)
list(SORT names)
list(LENGTH names count)
if(count EQUAL 0)
  message(FATAL_ERROR "no memstub_ names in ${DIR}/*.h")
endif()
set(body "")
foreach(n IN LISTS names)
  string(APPEND body "  \"${n}\",\n")
endforeach()
file(WRITE "${OUT}" "/* Generated from the headers in ${DIR} by cmake/ApiNames.cmake; do not edit. */\n"
  "extern const char *const ms__gen_api_names[];\n"
  "extern const unsigned long ms__gen_api_count;\n"
  "const char *const ms__gen_api_names[] = {\n${body}};\n"
  "const unsigned long ms__gen_api_count = ${count};\n")
