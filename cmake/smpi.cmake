# QCOLL_SMPI=ON: a build of qcoll's MPI path for SimGrid's SMPI (docs/scale.md), kept apart
# from the normal build (its own build folder, e.g. build-smpi; scripts/build-smpi.sh). The
# qcoll program runs under `smpirun` on a simulated platform (bench/platforms/): every rank is
# an actor of one simulator process, the communication is simulated by SimGrid's flow model
# and the computation is timed by running it (--cfg=smpi/host-speed).
#
# Included twice from the top CMakeLists.txt: before project() (QCOLL_SMPI_STAGE "compiler":
# smpicc / smpicxx as the compilers unless the caller chose some) and after it ("settings").
#
# What the build holds, and what it switches off (each with its reason; docs/scale.md):
#  - only libqcoll, libqcoll_mpi and the qcoll program (tools/): no tests, benchmarks,
#    examples, Python, fuzzers. The libraries are static, linked into the program:
#    smpirun privatizes the globals (and thread-locals) of the program it loads, one copy per
#    rank (smpi/privatization, dlopen), but not those of shared libraries it links, and qcoll
#    keeps per-process state (the communicator registry, settings caches, the worker pool).
#  - QCOLL_SMPI=1 in every compile: the worker pool runs every part on the calling rank
#    (src/core/worker_pool.cpp): the ranks are actors of one OS thread, a simulated host has
#    one core per rank, and a real thread would run outside the simulation (its time
#    unaccounted, or accounted to the wrong rank);
#  - the shared-memory transport is refused (QCOLL_TRANSPORT=shm) and auto means mpi
#    (src/comm/mpi/process_communicator.cpp): the ranks of a simulated host share no real
#    memory segment a peer could poll without the simulator; they talk through SMPI, which
#    models intra-host transfers on the host's loopback link (the platform's loopback_bw);
#  - the program counts as started by an MPI launcher (tools/rank_runner_mpi.cpp: smpirun
#    sets none of mpirun's variables);
#  - std::chrono::steady_clock::now() is the simulated clock (src/core/smpi_clock.cpp, a
#    linker --wrap of the program): `qcoll bench` times calls, and the library measures its
#    deadlines (QCOLL_TIMEOUT_S), in simulated seconds, not in the wall time of the
#    simulator (which runs every rank in turn);
#  - smpicc's malloc/free macros are off (SMPI_NO_OVERRIDE_MALLOC: they rename std::free;
#    SMPI's shared-malloc is not used by qcoll's buffers), and so is its exit(x) macro
#    (src/core/smpi/smpi_compat.h: it renames CLI11's App::exit).
if(QCOLL_SMPI_STAGE STREQUAL "compiler")
  if(NOT CMAKE_CXX_COMPILER AND NOT DEFINED ENV{CXX})
    find_program(QCOLL_SMPICXX smpicxx)
    if(NOT QCOLL_SMPICXX)
      message(FATAL_ERROR "QCOLL_SMPI=ON needs SimGrid's smpicxx (apt-get install libsimgrid-dev, or scripts/build-smpi.sh)")
    endif()
    set(CMAKE_CXX_COMPILER ${QCOLL_SMPICXX})
  endif()
  if(NOT CMAKE_C_COMPILER AND NOT DEFINED ENV{CC})
    find_program(QCOLL_SMPICC smpicc)
    if(QCOLL_SMPICC)
      set(CMAKE_C_COMPILER ${QCOLL_SMPICC})
    endif()
  endif()
  return()
endif()

if(NOT CMAKE_CXX_COMPILER MATCHES "smpicxx")
  message(FATAL_ERROR "QCOLL_SMPI=ON: the C++ compiler must be SimGrid's smpicxx, got ${CMAKE_CXX_COMPILER}")
endif()
foreach(opt QCOLL_BUILD_TESTS QCOLL_BUILD_BENCH QCOLL_BUILD_EXAMPLES QCOLL_BUILD_PYTHON QCOLL_BUILD_FUZZ)
  set(${opt} OFF CACHE BOOL "off in an SMPI build (cmake/smpi.cmake)" FORCE)
endforeach()
set(QCOLL_BUILD_TOOLS ON CACHE BOOL "the qcoll program" FORCE)
set(BUILD_SHARED_LIBS OFF CACHE BOOL "static libraries in an SMPI build: privatized per rank" FORCE)
set(QCOLL_MPI_LINK ON CACHE BOOL "" FORCE)
add_compile_definitions(QCOLL_SMPI=1 SMPI_NO_OVERRIDE_MALLOC=1)
add_compile_options(-include ${PROJECT_SOURCE_DIR}/src/core/smpi/smpi_compat.h)
# SMPI's mpi.h comes with the compiler wrapper, which also links libsimgrid: an empty target
# stands for MPI::MPI_C.
add_library(MPI::MPI_C INTERFACE IMPORTED)
set(MPI_C_FOUND ON)

# The qcoll program of an SMPI build: the simulated steady clock (src/core/smpi/smpi_clock.cpp).
function(qcoll_smpi_program target)
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src/core/smpi/smpi_clock.cpp)
  target_link_options(${target} PRIVATE "LINKER:--wrap=_ZNSt6chrono3_V212steady_clock3nowEv")
endfunction()
