# The ctest labels (ctest -L LABEL, -LE LABEL; scripts/test.sh --quick runs -L unit -LE 'slow|mpi').
# Every test has at least one of:
#   unit       one process (threads as ranks), no mpirun, no fork of ranks; seconds each
#   transport  ranks as processes on one host: the shm transport, the bootstrap, forked ranks
#   mpi        started through mpirun (or starts mpirun itself: CliBench.Mpi*, chaos.short)
#   fault      a rank fails, stops, dies or disagrees on purpose (fault matrix, peer exit, chaos)
#   slow       more than about 30 s on 2 cores (soaks, two hosts, the install check)
#   smpi       runs the SMPI build's program under SimGrid's smpirun (tests/smpi/, docs/scale.md)
#   sanitizer  every test of a sanitizer build (QCOLL_SANITIZE set: build-asan, build-tsan)
# Labels are given by name: a test of add_test() by its test name, the tests that
# gtest_discover_tests() finds by the name of their program (tests/test_*.cpp), through
# qcoll_test_labels() (a name no rule names is `unit`).

# qcoll_test_labels(OUT NAME): the labels of the test or GoogleTest program NAME.
function(qcoll_test_labels out name)
  set(labels "")
  if(name MATCHES "^mpi\\." OR (name STREQUAL "chaos.short" AND QCOLL_MPIRUN))
    list(APPEND labels mpi)
  endif()
  if(name MATCHES "^(test_faults_|mpi\\.faults\\.|mpi\\.peer_exit\\.|mpi\\.two_hosts\\.(peer_exit|link_down)$|chaos\\.)")
    list(APPEND labels fault)
  endif()
  if(name MATCHES "^(test_shm_transport|test_bootstrap|test_bootstrap_root|test_external_comm|test_ascend_processes|test_comm_thread_group)$"
     OR name MATCHES "^(mpi\\.transport\\.|mpi\\.two_hosts$|mpi\\.small_devshm(\\.np16)?$|example\\.c_bootstrap_stream$|example\\.ascend\\.quant_reduce_scatter_processes\\.)")
    list(APPEND labels transport)
  endif()
  if(name MATCHES "^(test_soak|mpi\\.soak\\.|mpi\\.two_hosts|mpi\\.small_devshm\\.np16$|mpi\\.transport\\.np90\\.many$|mpi\\.(transport|fused)\\.np16\\.fp4$|install\\.|chaos\\.)")
    list(APPEND labels slow)
  endif()
  if(name MATCHES "^smpi\\.")
    list(APPEND labels smpi)
  endif()
  if(NOT labels)
    set(labels unit)
  endif()
  if(QCOLL_SANITIZE)
    list(APPEND labels sanitizer)
  endif()
  set(${out} "${labels}" PARENT_SCOPE)
endfunction()

# Labels every test that add_test() made in the calling directory (qcoll_clean_test_env()).
function(qcoll_label_directory_tests)
  get_property(tests DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
  foreach(t ${tests})
    get_property(given TEST ${t} PROPERTY LABELS)
    qcoll_test_labels(labels ${t})
    list(APPEND labels ${given})
    list(REMOVE_DUPLICATES labels)
    set_property(TEST ${t} PROPERTY LABELS ${labels})
  endforeach()
endfunction()
