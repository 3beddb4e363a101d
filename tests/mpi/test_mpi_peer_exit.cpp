// A peer process that is gone: the last rank leaves right after the communicator is made,
// without destroying anything (as a crash after setup would); the other ranks call both
// operators and must get RUNTIME_ERROR within QCOLL_TIMEOUT_S (+ margin), with their output
// buffers untouched.
//   test_mpi_peer_exit shm|mpi          the rank calls MPI_Finalize, then _exit(0). Open MPI
//                                       keeps it waiting inside MPI_Finalize until the others
//                                       finalize, so to them it is a peer that never calls.
//   test_mpi_peer_exit shm|mpi exit     the rank _exit(0)s without MPI_Finalize: really dead.
//                                       Needs mpirun --enable-recovery (else mpirun kills the
//                                       whole job). On shm the others notice at once.
//   test_mpi_peer_exit shm|mpi midcall  the rank takes part in an all-reduce and _exit(0)s in
//                                       the middle of it, at its first reduce step (the
//                                       exchange of a several-chunk tensor under way, its
//                                       later chunks still to send). Needs --enable-recovery;
//                                       tests/mpi/two_hosts.sh runs it with the ranks on two
//                                       hosts (MPI over TCP). Then the survivors call a
//                                       reduce-scatter, which must fail at once (broken).
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_test_support.hpp"
#include "ops/executor.hpp"
#include "qcoll/qcoll_mpi.h"

using namespace mpitest;

namespace {
int g_victim = -1;
// The reduce-fault hook (test only): the victim leaves at its first reduce step.
qcoll::Status leave_mid_call(const std::string&, int rank, std::size_t) {
  if (rank == g_victim) {
    std::fflush(stdout);
    _exit(0);
  }
  return qcoll::Status::Ok();
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* transport = argc > 1 ? argv[1] : "shm";
  const bool mid_call = argc > 2 && std::strcmp(argv[2], "midcall") == 0;
  const bool exit_without_finalize = mid_call || (argc > 2 && std::strcmp(argv[2], "exit") == 0);
  const double timeout_s = 5;
  setenv("QCOLL_TRANSPORT", transport, 1);
  setenv("HCCL_BUFFSIZE", "8", 1);
  setenv("QCOLL_TIMEOUT_S", "5", 1);
  Tally t(rank);

  qcollMpiComm* c = nullptr;
  const qcollStatus created = qcollMpiCommCreateWorld("peer-exit", &c);
  t.check(created == QCOLL_SUCCESS, "create: %d %s", created, qcollGetRecentErrMsg());
  // The survivors' own communicator for the summary (MPI_COMM_WORLD loses a member).
  MPI_Comm survivors = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank == size - 1 ? MPI_UNDEFINED : 0, rank, &survivors);
  MPI_Barrier(MPI_COMM_WORLD);

  const Mode m{qcoll::DType::Float8E4M3FN, qcoll::DType::Float8E8M0, qcoll::DType::BFloat16};
  // Mid-call: 512 rows per rank of 2048 + 64 bytes, an exchange of many chunks.
  const std::size_t BS = (mid_call ? 512 : 4) * size, H = 2048;
  Inputs in = make_inputs(m, BS, H, 7, rank);
  if (mid_call) {
    g_victim = size - 1;
    qcoll::ops::testing::set_reduce_fault_for_test(leave_mid_call);
  } else if (rank == size - 1) {
    if (!exit_without_finalize) MPI_Finalize();  // Open MPI: waits here until the others finalize
    _exit(0);  // no destructor, no qcollMpiCommDestroy: the peers only see that it is gone
  } else {
    usleep(200 * 1000);
  }

  const std::vector<Op> ops = mid_call ? std::vector<Op>{Op::AllReduce, Op::ReduceScatter}
                                       : std::vector<Op>{Op::ReduceScatter, Op::AllReduce};
  for (Op op : ops) {
    std::vector<uint8_t> out;
    const double t0 = MPI_Wtime();
    int phase = 0;
    const qcollStatus st = call_op(op, m, in, BS, H, size, "peer-exit", out, &phase);
    const double secs = MPI_Wtime() - t0;
    t.check(st == QCOLL_RUNTIME_ERROR, "%s %s: expected RUNTIME_ERROR, got %d (phase %d): %s", transport,
            op_name(op), st, phase, last_error().c_str());
    t.check(secs <= timeout_s + 3, "%s %s: returned after %.1f s, expected <= %.0f s", transport, op_name(op), secs,
            timeout_s + 3);
    if (exit_without_finalize && !mid_call && std::strcmp(transport, "shm") == 0) {
      // A dead process is seen at once (its pid is gone), long before the deadline.
      t.check(secs < timeout_s / 2, "%s %s: a dead peer took %.1f s to notice, expected < %.1f s", transport,
              op_name(op), secs, timeout_s / 2);
    }
    bool untouched = true;
    for (uint8_t b : out) untouched = untouched && b == 0xA5;
    t.check(untouched, "%s %s: output buffer was written", transport, op_name(op));
    if (rank == 0) std::printf("%s %s: RUNTIME_ERROR after %.2f s: %s\n", transport, op_name(op), secs, last_error().c_str());
  }
  qcollMpiCommDestroy(c);
  const int rc = t.finish((std::string("test_mpi_peer_exit ") + transport).c_str(), survivors);
  MPI_Comm_free(&survivors);
  if (exit_without_finalize) {
    // With a dead member, Open MPI's MPI_Finalize may wait for it forever (its closing fence
    // includes every process); the test is over, so leave the way the dead one did.
    std::fflush(stdout);
    _exit(rc);
  }
  MPI_Finalize();
  return rc;
}
