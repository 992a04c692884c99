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
# (Written under cmake-install/: the build tree's own memstubConfig.cmake is
# at the top of the build tree, see below.)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/memstubConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake-install/memstubConfig.cmake INSTALL_DESTINATION ${MEMSTUB_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/memstubConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake-install/memstubConfig.cmake
              ${PROJECT_BINARY_DIR}/memstubConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/MemstubStub.cmake
        DESTINATION ${MEMSTUB_CMAKEDIR})

# find_package(memstub) from this build tree, before any install
# (-Dmemstub_DIR=BUILD or -DCMAKE_PREFIX_PATH=BUILD): the same targets,
# exported with their build-tree paths, beside the same version file.
export(EXPORT memstubTargets NAMESPACE memstub:: FILE ${PROJECT_BINARY_DIR}/memstubTargets.cmake)
configure_file(${PROJECT_SOURCE_DIR}/cmake/memstubBuildConfig.cmake.in
               ${PROJECT_BINARY_DIR}/memstubConfig.cmake @ONLY)

# pkg-config: memstub-runtime.pc (what a stub program links) and
# memstub-probe.pc (the probe API), with the whole link line in archive
# order, relative to the .pc file so a moved install still works.
set(MEMSTUB_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH MS_PC_UP /p/${MEMSTUB_PKGCONFIGDIR} /p)
string(REGEX REPLACE "/$" "" MS_PC_UP "${MS_PC_UP}")
set(_ms_pc_san "")
if(MEMSTUB_SANITIZE)
  set(_ms_pc_san " -fsanitize=${MEMSTUB_SANITIZE}")
endif()
set(MS_PC_NAME runtime)
set(MS_PC_WHAT "runtime: the replay engine a stub program links")
set(MS_PC_DESC "memstub replay engine for main-memory performance stubs")
set(MS_PC_LIBS "-L\${libdir}/memstub -lmemstub_runtime -lmemstub_trace -lmemstub_common -lpthread -lm${_ms_pc_san}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/memstub-pc.in ${PROJECT_BINARY_DIR}/pkgconfig/memstub-runtime.pc @ONLY)
set(_ms_pc_dl "")
if(CMAKE_DL_LIBS)
  set(_ms_pc_dl "-l${CMAKE_DL_LIBS} ")
endif()
set(MS_PC_NAME probe)
set(MS_PC_WHAT "probe: measuring points in a program under study (memstub/probe.h)")
set(MS_PC_DESC "memstub probe API: mark a region of a program to record")
set(MS_PC_LIBS "-L\${libdir} -L\${libdir}/memstub -lmemstub_probe -lmemstub_trace -lmemstub_common ${_ms_pc_dl}-lpthread -lm${_ms_pc_san}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/memstub-pc.in ${PROJECT_BINARY_DIR}/pkgconfig/memstub-probe.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/memstub-runtime.pc ${PROJECT_BINARY_DIR}/pkgconfig/memstub-probe.pc
        DESTINATION ${MEMSTUB_PKGCONFIGDIR})

# bash completion, found by bash-completion in share/bash-completion/completions.
install(FILES ${PROJECT_SOURCE_DIR}/completion/memstub.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME memstub)
