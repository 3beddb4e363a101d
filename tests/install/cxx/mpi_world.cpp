// The smallest user of qcoll::mpi: a communicator over MPI_COMM_WORLD, its rank and size
// (run by tests/install/check_install.sh under mpirun -np 2). Exits 0 when both agree with MPI.
#include <mpi.h>

#include <cstdio>

#include "qcoll/qcoll_mpi.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int mpi_rank = 0, mpi_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  qcollMpiComm* comm = nullptr;
  int32_t rank = -1, size = -1;
  bool ok = qcollMpiCommCreateWorld("user", &comm) == QCOLL_SUCCESS && qcollMpiCommRank(comm, &rank) == QCOLL_SUCCESS &&
            qcollMpiCommSize(comm, &size) == QCOLL_SUCCESS && rank == mpi_rank && size == mpi_size;
  if (!ok) std::fprintf(stderr, "rank %d: %s\n", mpi_rank, qcollGetRecentErrMsg());
  if (comm != nullptr && qcollMpiCommDestroy(comm) != QCOLL_SUCCESS) ok = false;
  MPI_Finalize();
  return ok ? 0 : 1;
}
