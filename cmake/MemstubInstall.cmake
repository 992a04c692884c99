# Installing memstub, and the targets it exports to other projects:
#
#   find_package(memstub 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE memstub::runtime)   # or memstub_add_stub()
#
# memstub::runtime   the replay engine a stub links (memstub/runtime.h), with
#                    the archives it needs (memstub::trace, ::common); never
#                    the generator (memstub::gen links the runtime, not back)
# memstub::probe     the probe API for a program under study (memstub/probe.h)
# memstub::memstub   the memstub command (memstub_add_stub runs its gen)
# memstub::options   what memstub's archives were built with (link side only:
#                    the sanitizers of a -DMEMSTUB_SANITIZE build)
#
# Only include/memstub/ is installed as headers; common/ and each folder's
# internal.h stay in the source tree. The archives go to ${libdir}/memstub,
# where `memstub build` links stub programs (ms__libdir()); the probe, which
# users link themselves, to ${libdir}.
include(CMakePackageConfigHelpers)
set(MEMSTUB_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/memstub)

set_target_properties(memstub_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(memstub_gen PROPERTIES EXPORT_NAME gen)
set_target_properties(memstub_trace PROPERTIES EXPORT_NAME trace)
set_target_properties(memstub_common PROPERTIES EXPORT_NAME common)
set_target_properties(memstub_probe PROPERTIES EXPORT_NAME probe)
set_target_properties(memstub_options PROPERTIES EXPORT_NAME options)

install(TARGETS memstub_runtime memstub_gen memstub_trace memstub_common
        EXPORT memstubTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}/memstub)
install(TARGETS memstub_probe EXPORT memstubTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS memstub EXPORT memstubTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS memstub_options EXPORT memstubTargets)
install(EXPORT memstubTargets NAMESPACE memstub:: FILE memstubTargets.cmake
        DESTINATION ${MEMSTUB_CMAKEDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/memstub DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The sample traces (memstub demo replays synthetic-4.8s.csv).
install(FILES ${PROJECT_SOURCE_DIR}/traces/samples/listing1.csv
              ${PROJECT_SOURCE_DIR}/traces/samples/nonlifo.csv
              ${PROJECT_SOURCE_DIR}/traces/samples/synthetic-4.8s.csv
        DESTINATION ${CMAKE_INSTALL_DATADIR}/memstub/traces/samples)

# memstubConfig.cmake finds everything relative to itself, so an installed
# tree can be moved (cmake --install build --prefix DIR).
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/memstubConfig.cmake.in
  ${PROJECT_BINARY_DIR}/memstubConfig.cmake INSTALL_DESTINATION ${MEMSTUB_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/memstubConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/memstubConfig.cmake
              ${PROJECT_BINARY_DIR}/memstubConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/MemstubStub.cmake
        DESTINATION ${MEMSTUB_CMAKEDIR})
