# The installed package: `find_package(qcoll)` (qcollConfig.cmake + version file) and
# pkg-config (`pkg-config --cflags --libs qcoll`). The exported target qcoll::qcoll carries
# what its users need: the public headers, Threads and, for a static library, Highway; it
# needs no MPI. The component mpi (`find_package(qcoll COMPONENTS mpi)`, pkg-config
# qcoll-mpi), present when qcoll was built with MPI, gives qcoll::mpi: qcoll_mpi.h and
# mpi.hpp, over qcoll::qcoll and MPI::MPI_C.
include(CMakePackageConfigHelpers)
set(QCOLL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/qcoll)
install(EXPORT qcollTargets NAMESPACE qcoll:: DESTINATION ${QCOLL_CMAKE_DIR})
if(QCOLL_HAVE_MPI)
  install(EXPORT qcollMpiTargets NAMESPACE qcoll:: DESTINATION ${QCOLL_CMAKE_DIR})
endif()
get_target_property(QCOLL_LIBRARY_TYPE qcoll TYPE)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/qcollConfig.cmake.in
  ${PROJECT_BINARY_DIR}/qcollConfig.cmake INSTALL_DESTINATION ${QCOLL_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/qcollConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/qcollConfig.cmake ${PROJECT_BINARY_DIR}/qcollConfigVersion.cmake
  DESTINATION ${QCOLL_CMAKE_DIR})

# pkg-config: MPI's flags come from Open MPI's own ompi-c.pc where it is installed.
set(QCOLL_PC_LIBS_PRIVATE "-lpthread")
if(QCOLL_LIBRARY_TYPE STREQUAL "STATIC_LIBRARY")
  string(APPEND QCOLL_PC_LIBS_PRIVATE " -lhwy -lstdc++ -lm")
  if(QCOLL_RT)
    string(APPEND QCOLL_PC_LIBS_PRIVATE " -lrt")
  endif()
endif()
# The .pc file finds its prefix from where it lies (${pcfiledir}), so a prefix given to
# `cmake --install --prefix` works too.
file(RELATIVE_PATH QCOLL_PC_PREFIX_FROM_PCDIR /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
configure_file(${PROJECT_SOURCE_DIR}/cmake/qcoll.pc.in ${PROJECT_BINARY_DIR}/qcoll.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/qcoll.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(QCOLL_HAVE_MPI)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/qcoll-mpi.pc.in ${PROJECT_BINARY_DIR}/qcoll-mpi.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/qcoll-mpi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
