# The tests' environment: what a caller's environment must not change about them.
#
# Every library setting (the k...Name constants of include/qcoll/settings.hpp: QCOLL_TIMEOUT_S,
# QCOLL_TRANSPORT, HCCL_BUFFSIZE, ...), the example and bench knobs, and the launcher
# variables of torchrun and mpirun are unset for every test, except those a test sets in its
# own ENVIRONMENT; QCOLL_SHM_TAG is set to this build's tag, so that the checks for segments
# left in /dev/shm look at this run's segments only (tests/mpi/no_shm_left.sh). Test knobs
# a caller sets on purpose (QCOLL_SOAK_CALLS, QCOLL_EXHAUSTIVE, QCOLL_TEST_*) are kept.

include(${CMAKE_CURRENT_LIST_DIR}/test_labels.cmake)

file(STRINGS ${PROJECT_SOURCE_DIR}/include/qcoll/settings.hpp _qcoll_setting_lines
     REGEX "inline constexpr const char\\* k[A-Za-z]+Name = \"[A-Z0-9_]+\";")
set(QCOLL_TEST_CLEARED_VARS "")
foreach(line ${_qcoll_setting_lines})
  string(REGEX REPLACE ".*= \"([A-Z0-9_]+)\";.*" "\\1" var "${line}")
  list(APPEND QCOLL_TEST_CLEARED_VARS ${var})
endforeach()
list(LENGTH QCOLL_TEST_CLEARED_VARS _n)
if(_n LESS 8)
  message(FATAL_ERROR "cmake/test_env.cmake: found only ${_n} setting names in include/qcoll/settings.hpp")
endif()
list(APPEND QCOLL_TEST_CLEARED_VARS
  # examples (examples/c_bootstrap_stream.c, the Ascend examples) and bench peers
  QCOLL_UID QCOLL_RANK QCOLL_NRANKS QCOLL_NAME QCOLL_PEERS_DIR QCOLL_CCL_PEER QCOLL_GLOO_PEER
  # torch.distributed's launcher (qcoll.torch reads them)
  RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK ROLE_RANK MASTER_ADDR MASTER_PORT
  TORCHELASTIC_RUN_ID
  # a caller's own mpirun (qcoll.torch.init_process_group reads them)
  OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK PMI_RANK PMI_SIZE MPI_LOCALRANKID)

string(MD5 _qcoll_build_hash "${PROJECT_BINARY_DIR}")
string(SUBSTRING "${_qcoll_build_hash}" 0 10 QCOLL_TEST_SHM_TAG)
set(QCOLL_TEST_SHM_TAG "t${QCOLL_TEST_SHM_TAG}")

# The ENVIRONMENT_MODIFICATION list for a test that sets `set_vars` itself.
function(qcoll_test_env_modification out set_vars)
  set(mods "")
  foreach(var ${QCOLL_TEST_CLEARED_VARS})
    list(FIND set_vars ${var} i)
    if(i EQUAL -1 AND NOT var STREQUAL "QCOLL_SHM_TAG")
      list(APPEND mods "${var}=unset:")
    endif()
  endforeach()
  list(APPEND mods "QCOLL_SHM_TAG=set:${QCOLL_TEST_SHM_TAG}")
  set(${out} "${mods}" PARENT_SCOPE)
endfunction()

qcoll_test_env_modification(QCOLL_TEST_ENV_MODIFICATION "")

# The tests gtest_discover_tests() finds at build time (the lists <target>_TESTS that its
# files define when ctest reads them) get ENVIRONMENT `env`, the cleared environment and
# their program's labels,
# from a file ctest includes after those files (called once, after every
# gtest_discover_tests() of the directory).
function(qcoll_gtest_env targets env)
  set(body "# Made by cmake/test_env.cmake: the environment of the discovered GoogleTest tests.\n")
  foreach(target ${targets})
    qcoll_test_labels(labels ${target})  # cmake/test_labels.cmake, by the program's name
    string(APPEND body "foreach(t IN LISTS ${target}_TESTS)\n"
      "  set(labels \"${labels}\")\n"
      # The tests that start mpirun themselves (the CLI's MPI modes).
      "  if(t MATCHES \"^CliBench\\\\.Mpi\")\n"
      "    list(APPEND labels mpi)\n"
      "  endif()\n"
      "  set_tests_properties(\"\${t}\" PROPERTIES ENVIRONMENT \"${env}\"\n"
      "    ENVIRONMENT_MODIFICATION \"${QCOLL_TEST_ENV_MODIFICATION}\" LABELS \"\${labels}\")\n"
      "endforeach()\n")
  endforeach()
  file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/qcoll_gtest_env.cmake CONTENT "${body}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${CMAKE_CURRENT_BINARY_DIR}/qcoll_gtest_env.cmake)
endfunction()

# Applies the cleared environment and the labels (cmake/test_labels.cmake) to every test
# that add_test() made in the calling directory (call it at the end of each CMakeLists.txt
# that adds tests).
function(qcoll_clean_test_env)
  qcoll_label_directory_tests()
  get_property(tests DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
  foreach(t ${tests})
    get_property(env TEST ${t} PROPERTY ENVIRONMENT)
    set(set_vars "")
    foreach(kv ${env})
      string(REGEX REPLACE "=.*" "" var "${kv}")
      list(APPEND set_vars ${var})
    endforeach()
    qcoll_test_env_modification(mods "${set_vars}")
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT_MODIFICATION ${mods})
  endforeach()
endfunction()
