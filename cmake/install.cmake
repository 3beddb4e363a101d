# The installed package: `find_package(qcoll)` (qcollConfig.cmake + version file) and
# pkg-config (`pkg-config --cflags --libs qcoll`). The exported target qcoll::qcoll carries
# what its users need: the public headers, Threads, MPI (when built with the MPI
# transports) and, for a static library, Highway.
include(CMakePackageConfigHelpers)
set(QCOLL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/qcoll)
install(EXPORT qcollTargets NAMESPACE qcoll:: DESTINATION ${QCOLL_CMAKE_DIR})
get_target_property(QCOLL_LIBRARY_TYPE qcoll TYPE)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/qcollConfig.cmake.in
  ${PROJECT_BINARY_DIR}/qcollConfig.cmake INSTALL_DESTINATION ${QCOLL_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/qcollConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/qcollConfig.cmake ${PROJECT_BINARY_DIR}/qcollConfigVersion.cmake
  DESTINATION ${QCOLL_CMAKE_DIR})

# pkg-config: MPI's flags come from Open MPI's own ompi-c.pc where it is installed.
set(QCOLL_PC_REQUIRES "")
set(QCOLL_PC_LIBS_PRIVATE "-lpthread")
if(QCOLL_HAVE_MPI)
  set(QCOLL_PC_REQUIRES "ompi-c")
  set(QCOLL_PC_CFLAGS "-DQCOLL_HAVE_MPI=1 -DOMPI_SKIP_MPICXX=1")
endif()
if(QCOLL_LIBRARY_TYPE STREQUAL "STATIC_LIBRARY")
  string(APPEND QCOLL_PC_LIBS_PRIVATE " -lhwy -lstdc++")
  if(QCOLL_RT)
    string(APPEND QCOLL_PC_LIBS_PRIVATE " -lrt")
  endif()
endif()
# The .pc file finds its prefix from where it lies (${pcfiledir}), so a prefix given to
# `cmake --install --prefix` works too.
file(RELATIVE_PATH QCOLL_PC_PREFIX_FROM_PCDIR /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
configure_file(${PROJECT_SOURCE_DIR}/cmake/qcoll.pc.in ${PROJECT_BINARY_DIR}/qcoll.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/qcoll.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
