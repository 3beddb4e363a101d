// Fault matrix over the process-per-rank communicators (qcoll_mpi.h), one rank per MPI
// process. Usage: mpirun -np 4 test_mpi_faults shm|mpi
// Cases: invalid input on one rank; different shapes / dtypes across ranks; one rank calls
// the other operator; one rank destroys its executor; an exception in one rank's reduce
// step mid-call; one rank never arrives (alive, QCOLL_TIMEOUT_S short); a call after a
// failed call (works again after a mismatch; says "broken" at once after a timeout, also
// on the rank that was absent, and a new communicator works). Every rank checks: status and message, its time bound,
// output untouched after a failure, bit-exact result after recovery. Rank 0 prints one "FAULT-MATRIX | case | transport
// | per-rank status and time | slowest |" row per case. (A process killed mid-call is covered by test_faults_shm, with
// forked ranks: under mpirun a killed rank makes mpirun end the whole job, and by test_mpi_peer_exit.)
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fault_matrix.hpp"
#include "qcoll/qcoll_mpi.h"

using faults::RankCall;
using faults::RankResult;

namespace {

int g_rank = 0, g_size = 0;
long g_checks = 0, g_failures = 0;

void check(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok) {
    ++g_failures;
    std::printf("[rank %d] FAIL: %s\n", g_rank, what.c_str());
    std::fflush(stdout);
  }
}

// Gathers every rank's result on rank 0 and prints the row (collective over MPI_COMM_WORLD;
// called outside the qcoll call, so a timed-out case still reports).
void report(const std::string& transport, const std::string& name, const RankResult& mine) {
  struct Wire {
    int called, status;
    double seconds;
  } w{mine.called, mine.status, mine.seconds};
  std::vector<Wire> all(g_size);
  MPI_Gather(&w, sizeof w, MPI_BYTE, all.data(), sizeof w, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (g_rank == 0) {
    std::vector<RankResult> rs(g_size);
    for (int r = 0; r < g_size; ++r) {
      rs[r].called = all[r].called;
      rs[r].status = all[r].status;
      rs[r].seconds = all[r].seconds;
    }
    faults::print_row(transport, name, rs);
  }
}

void expect_failed(const RankResult& x, bool faulty, qcollStatus faulty_status, double bound, double min_seconds,
                   const std::string& name) {
  if (!x.called) return;
  const std::string at = name + ": ";
  check(x.status == (faulty ? faulty_status : QCOLL_RUNTIME_ERROR),
        at + "status " + qcollStatusName(x.status) + ": " + x.message);
  check(!x.message.empty(), at + "no message");
  check(x.output_untouched, at + "output written by a failed call");
  check(x.seconds <= bound, at + "took " + std::to_string(x.seconds) + " s > " + std::to_string(bound));
  if (!faulty) check(x.seconds >= min_seconds, at + "returned before the timeout: " + std::to_string(x.seconds));
}

void set_timeout(double s) { setenv("QCOLL_TIMEOUT_S", std::to_string(s).c_str(), 1); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const std::string transport_arg = argc > 1 ? argv[1] : "shm";
  setenv("QCOLL_TRANSPORT", transport_arg.c_str(), 1);
  // The table's column: "shm/mpirun" (set up over MPI) apart from test_faults_shm's "shm".
  const std::string transport = transport_arg == "shm" ? "shm/mpirun" : transport_arg;
  setenv("HCCL_BUFFSIZE", "8", 1);
  const double kLong = 30, kFast = 10, kShort = 2, kMargin = 3;
  const int n = g_size;
  const int last = n - 1;

  qcollMpiComm* c = nullptr;
  qcollStatus st = qcollMpiCommCreateWorld("faults", &c);
  check(st == QCOLL_SUCCESS, std::string("create: ") + qcollGetRecentErrMsg());
  auto run = [&](const RankCall& call, uint32_t seed = 7) { return faults::run_rank(g_rank, n, call, "faults", seed); };
  auto fast_case = [&](const std::string& name, RankCall call, int faulty, qcollStatus fst) {
    set_timeout(kLong);
    MPI_Barrier(MPI_COMM_WORLD);
    RankResult r = run(call);
    report(transport, name, r);
    expect_failed(r, g_rank == faulty, fst, kFast, 0, name);
  };

  {
    RankCall call;
    if (g_rank == 2 % n) call.H = 1000;
    fast_case("invalid input on one rank (H=1000 on r2)", call, 2 % n, QCOLL_PARAM_INVALID);
  }
  {
    RankCall call;
    if (g_rank == last) call.rows = 32;
    fast_case("different shapes across ranks (BS 32 on r" + std::to_string(last) + ")", call, -1, 0);
  }
  {
    RankCall call;
    if (g_rank == 1) call.x_dtype = QCOLL_DT_FLOAT8_E5M2;
    fast_case("different x dtype across ranks (e5m2 on r1)", call, -1, 0);
  }
  {
    RankCall call;
    if (g_rank == 2 % n) call.reduce_scatter = false;
    fast_case("one rank calls the other operator (AllReduce on r2)", call, -1, 0);
  }
  {
    RankCall call;
    if (g_rank == 1) call.pass_stream = true;
    fast_case("phase two: non-null stream on one rank (r1)", call, 1, QCOLL_PARAM_INVALID);
  }
  {
    // Destroying the executor instead of running it takes part in the agreement: fast.
    RankCall call;
    call.destroy_instead = g_rank == 2 % n;
    set_timeout(kLong);
    MPI_Barrier(MPI_COMM_WORLD);
    RankResult r = run(call);
    const std::string name = "one rank destroys its executor instead of running it (r2)";
    report(transport, name, r);
    if (g_rank == 2 % n) {
      check(r.status == QCOLL_SUCCESS, name + ": destroy: " + r.message);
    } else {
      expect_failed(r, false, 0, kFast, 0, name);
      check(r.message.find("destroyed its executor") != std::string::npos, name + ": message: " + r.message);
    }
  }
  for (int variant : {0, 1, 2}) {
    // Rank 2 throws from its reduce step halfway through a call of several chunks (8 MB
    // window): every rank fails at once, outputs untouched; the communicator stays in step.
    // Reduce-scatter, all-reduce, and the fused all-reduce.
    const bool rs_op = variant == 0;
    RankCall big;
    big.reduce_scatter = rs_op;
    big.fused = variant == 2;
    big.rows = 2048;
    big.H = 4096;
    set_timeout(kLong);
    faults::inject_reduce_fault(true, big.rows / n / 2);
    MPI_Barrier(MPI_COMM_WORLD);
    RankResult r = run(big);
    faults::inject_reduce_fault(false);
    const std::string name = std::string(big.fused ? "fused: " : "") +
                             "exception in the reduce step mid-protocol (r2, " +
                             (rs_op ? "reduce-scatter" : "all-reduce") + ")";
    report(transport, name, r);
    const bool faulty = g_rank == faults::kReduceFaultRank % n;
    expect_failed(r, faulty, QCOLL_INNER_ERROR, kFast, 0, name);
    check(r.message.find(faulty ? "injected fault in the reduce step" : "rank 2 failed") != std::string::npos,
          name + ": message: " + r.message);
  }
  {
    // The fused operators: bad input on one rank, a mismatch, a mid-call fault.
    RankCall call;
    call.fused = true;
    if (g_rank == 2 % n) call.H = 1000;
    fast_case("fused: invalid input on one rank (H=1000 on r2)", call, 2 % n, QCOLL_PARAM_INVALID);
    call = RankCall{};
    call.fused = g_rank != 1;
    fast_case("fused on all ranks but r1 (the quantized operator)", call, -1, 0);
    RankCall ok;
    ok.fused = true;
    set_timeout(kLong);
    MPI_Barrier(MPI_COMM_WORLD);
    RankResult r = run(ok, 23);
    report(transport, "fused: call after a failed call (same communicator)", r);
    check(r.status == QCOLL_SUCCESS, "fused after failures: " + r.message);
    check(r.output_correct, "fused after failures: wrong result");
  }
  {
    // After those failures the communicator still works.
    set_timeout(kLong);
    MPI_Barrier(MPI_COMM_WORLD);
    RankCall call;
    call.reduce_scatter = false;
    call.scales_dtype = QCOLL_DT_FLOAT8_E8M0;
    RankResult r = run(call, 21);
    report(transport, "call after a failed call (same communicator)", r);
    check(r.status == QCOLL_SUCCESS, "after failures: " + r.message);
    check(r.output_correct, "after failures: wrong result");
  }
  {
    // One rank never arrives (it stays alive and calls nothing); then the communicator is broken.
    set_timeout(kShort);
    MPI_Barrier(MPI_COMM_WORLD);
    RankCall call;
    call.absent = g_rank == last;
    RankResult r = run(call);
    report(transport, "one rank never arrives (r" + std::to_string(last) + ")", r);
    expect_failed(r, false, 0, kShort + kMargin, kShort * 0.9, "never arrives");
    MPI_Barrier(MPI_COMM_WORLD);
    RankResult again = run(RankCall{});
    report(transport, "call after a timeout (same communicator)", again);
    if (g_rank != last) {
      // The ranks that timed out know their communicator is broken: they fail at once.
      expect_failed(again, false, 0, kShort * 0.5, 0, "after a timeout");
      check(again.message.find("broken") != std::string::npos || again.message.find("unusable") != std::string::npos,
            "after a timeout, the message should say the communicator is broken: " + again.message);
    } else {
      // The rank that was absent is told by its peers (shm: their failed state in the
      // segment; mpi: their notice): at once, saying the group broke on a timeout.
      expect_failed(again, false, 0, kShort + kMargin, 0, "after a timeout (the absent rank)");
      expect_failed(again, false, 0, kShort * 0.5, 0, "after a timeout (the absent rank, at once)");
      check(again.message.find("the group broke") != std::string::npos &&
                again.message.find("timed out") != std::string::npos &&
                again.message.find("create it again") != std::string::npos,
            "after a timeout, the absent rank should be told the group broke on a timeout: " + again.message);
      std::printf("[rank %d] the absent rank says: %s\n", g_rank, again.message.c_str());
    }
  }
  qcollMpiCommDestroy(c);
  {
    // A new communicator works.
    set_timeout(kLong);
    MPI_Barrier(MPI_COMM_WORLD);
    qcollMpiComm* c2 = nullptr;
    st = qcollMpiCommCreateWorld("faults", &c2);
    check(st == QCOLL_SUCCESS, std::string("create again: ") + qcollGetRecentErrMsg());
    RankResult r = run(RankCall{}, 22);
    report(transport, "call after a timeout (communicator destroyed and created again)", r);
    check(r.status == QCOLL_SUCCESS, "new communicator: " + r.message);
    check(r.output_correct, "new communicator: wrong result");
    qcollMpiCommDestroy(c2);
  }

  long mine[2] = {g_checks, g_failures}, sum[2] = {0, 0};
  MPI_Allreduce(mine, sum, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("test_mpi_faults %s, %d processes: %ld checks, %ld failed -> %s\n", transport.c_str(), n, sum[0],
                sum[1], sum[1] == 0 ? "PASS" : "FAIL");
  MPI_Finalize();
  return sum[1] == 0 ? 0 : 1;
}
