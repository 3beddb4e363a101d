// One rank per process under mpirun: the RankRunner (rank_runner.hpp) of the process's own
// rank on a qcoll MPI communicator (shared memory on one host, MPI across hosts), and the
// MPI session that a command opens before using it. Only with an MPI build (QCOLL_HAVE_MPI).
#pragma once
#include <memory>
#include <string>

#include "rank_runner.hpp"

namespace qcoll::cli {

// True when this process looks like it was started by mpirun / an MPI launcher
// (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK set).
bool launched_by_mpi();

// True when this build of the tools can run ranks over MPI.
bool mpi_available();

// Why a program without MPI cannot do what was asked, and what to do instead: the program
// of the Python wheel never has MPI (it must start where no MPI library is; docs/python.md).
inline constexpr const char* kNoMpi =
    "this qcoll program has no MPI (built without it, or the Python wheel's, which never needs an "
    "MPI library): run the ranks as threads (--ranks N), or build qcoll from source with Open "
    "MPI's development files (apt-get install libopenmpi-dev) for mpirun";

// MPI_Init on construction, MPI_Finalize on destruction (only if this object initialised
// MPI). Throws CliError if MPI is unavailable in this build.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  bool owner_ = false;
};

// The calling process's rank of MPI_COMM_WORLD on a new qcoll communicator named
// `group_name` (collective; needs a live MpiSession). run(fn) calls fn once, on the calling
// thread, for this process's rank; all_ok() is a logical AND over every process.
// Throws CliError carrying the library status if the communicator cannot be created.
std::unique_ptr<RankRunner> make_mpi_runner(const std::string& group_name);

}  // namespace qcoll::cli
