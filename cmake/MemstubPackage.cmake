# Packages of the installed tree: `cpack -G DEB` (or TGZ) in the build tree.
# The Debian package installs under /usr and depends on what `memstub build`
# and `memstub gen` run (a C compiler, the C library's headers, GNU m4);
# gnuplot is recommended for `memstub plot`. The installed command finds its
# files from its own place (common/paths.c), so the prefix is free.
set(CPACK_PACKAGE_NAME memstub)
set(CPACK_PACKAGE_VENDOR "memstub")
set(CPACK_PACKAGE_CONTACT "memstub maintainers <memstub@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}: record, generate, replay, compare")
set(CPACK_PACKAGE_DESCRIPTION "memstub replaces a component with a stub that reproduces its heap use, stack use and timing over time (recorded with an LD_PRELOAD recorder or imported from massif/memusage), replays it and compares the replay with the original.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "gcc | c-compiler, libc6-dev, m4")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnuplot-nox | gnuplot, pkg-config")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "valgrind, libc-devtools, cmake")
# The command's and the recorder's own library needs (libc, libm).
find_program(MS_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(MS_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
include(CPack)
