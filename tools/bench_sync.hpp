// Synchronisation of the ranks of `qcoll bench` around each timed call: a barrier before it
// and the maximum over ranks of the measured times after it. Either N thread ranks of this
// process, or one rank per process over MPI_COMM_WORLD.
#pragma once
#include <memory>

namespace qcoll::cli {

class RankSync {
 public:
  virtual ~RankSync() = default;
  // Collective over all ranks (every rank calls with its own rank number).
  virtual void barrier(int rank) = 0;
  // Replaces v[0..count) by the element-wise maximum over all ranks (count <= 8).
  virtual void max(int rank, double* v, int count) = 0;
  // Replaces v[0..count) by the element-wise sum over all ranks (count <= 8).
  virtual void sum(int rank, double* v, int count) = 0;
};

// For `nranks` threads of this process that all call with distinct ranks.
std::unique_ptr<RankSync> make_thread_sync(int nranks);
// For one rank per process over MPI_COMM_WORLD (MPI built and initialised).
std::unique_ptr<RankSync> make_mpi_sync();

}  // namespace qcoll::cli
