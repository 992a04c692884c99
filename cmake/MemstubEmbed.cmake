# memstub_embed(TARGET target FILE path NAME symbol): compile the bytes of
# path into target as `const char symbol[]` and `symbol_len`, regenerated in
# the build tree whenever the file changes.
function(memstub_embed)
  cmake_parse_arguments(E "" "TARGET;FILE;NAME" "" ${ARGN})
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${E_NAME}.c")
  add_custom_command(OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -DIN=${E_FILE} -DOUT=${out} -DNAME=${E_NAME}
            -P ${PROJECT_SOURCE_DIR}/cmake/Embed.cmake
    DEPENDS "${E_FILE}" ${PROJECT_SOURCE_DIR}/cmake/Embed.cmake
    COMMENT "Embedding ${E_FILE}" VERBATIM)
  target_sources(${E_TARGET} PRIVATE "${out}")
endfunction()
