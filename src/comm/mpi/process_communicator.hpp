// Communicators for one rank per process, made collectively from an MPI communicator:
// shared memory when every rank is on one host, MPI otherwise (QCOLL_TRANSPORT overrides:
// "auto" (default), "shm" or "mpi").
#pragma once
#include <mpi.h>

#include <memory>

#include "comm/communicator.hpp"
#include "qcoll/status.hpp"

namespace qcoll::comm::mpi {

// Collective over `comm`; MPI must be initialised. Every rank checks its own arguments and
// environment first (name, HCCL_BUFFSIZE, QCOLL_TRANSPORT) and the ranks agree on them, so a
// problem on one rank makes every rank fail (that rank with PARAM_INVALID and the message,
// the others with RUNTIME_ERROR naming it). Does not register the name.
Status create_process_communicator(const char* name, MPI_Comm comm, std::shared_ptr<Communicator>& out);

namespace testing {
// For tests on one machine: MPI communicators made after this call take ranks
// [0, ranks), [ranks, 2 ranks), ... of each communicator as hosts of their own (0, the
// default: the real hosts, MPI_Comm_split_type SHARED). Not thread-safe; call it before
// creating the communicators.
void set_ranks_per_host_for_test(int ranks);
// For tests with few ranks: MPI communicators made after this call keep `steps` (2 to 4)
// steps in flight instead of MpiCommunicator::steps_in_flight(n) (0: the rule again).
void set_steps_in_flight_for_test(int steps);
// Bundles (hosts schedule, PerDestination steps bundled per host) this process posted so
// far, over all its MPI communicators: tests check that bundling is used.
long long bundles_posted_for_test();
}  // namespace testing

}  // namespace qcoll::comm::mpi
