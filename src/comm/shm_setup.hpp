// Setting up the shared-memory transport, the part every rendezvous shares (over MPI in
// comm/mpi/process_communicator.cpp, over a unique id in comm/bootstrap_join.cpp and
// comm/bootstrap_root.cpp):
//   1. one process creates and initialises a segment under a fresh random name;
//   2. the rendezvous tells every rank that name; each rank attaches its communicator;
//   3. once every rank has attached (or given up), the creator removes the name, so nothing
//      is left in /dev/shm whatever happens next (unlink_shm of shm_segment.hpp).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/shm_segment.hpp"
#include "qcoll/status.hpp"

namespace qcoll::comm {

struct ShmSegment {
  std::string name;    // "/qcoll-" [+ QCOLL_SHM_TAG + "-"] + 32 hex digits
  ShmMapping mapping;  // the creator's mapping
};

// Step 1: a segment for `nranks` windows of `window_bytes`, initialised for the ranks. On
// failure nothing is left behind; *no_space (if given) tells whether /dev/shm was too small.
Status create_segment(int nranks, std::size_t window_bytes, ShmSegment& out, bool* no_space = nullptr);

// Step 2: rank `rank`'s communicator `comm_name` over the segment: `mapping` when this
// process maps it already (the creator), else the segment is opened by `shm_name`.
Status attach_segment(const std::string& comm_name, int rank, int nranks, std::size_t window_bytes,
                      const std::string& shm_name, ShmMapping mapping, std::shared_ptr<Communicator>& out);

}  // namespace qcoll::comm
