// Fault matrix over the process-per-rank communicators (qcoll_mpi.h), one rank per MPI
// process. Usage: mpirun -np 4 test_mpi_faults shm|mpi
// Cases: invalid input on one rank; different shapes / dtypes across ranks; one rank calls
// the other operator; the extended contract's (contract.md §ext): different contracts across
// ranks, a 4-bit x that one rank's contract takes, a 4-bit x with an odd offset or one byte
// short on one rank, 3 ranks (refused under vendor, accepted under extended); one rank destroys its executor; an
// exception in one rank's reduce step mid-call; one rank never arrives (alive, QCOLL_TIMEOUT_S short); a call after a
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

// Gathers every rank's result on rank 0 of `comm` and prints the row (collective over comm;
// called outside the qcoll call, so a timed-out case still reports).
void report(const std::string& transport, const std::string& name, const RankResult& mine,
            MPI_Comm comm = MPI_COMM_WORLD) {
  struct Wire {
    int called, status;
    double seconds;
  } w{mine.called, mine.status, mine.seconds};
  int me = 0, size = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  std::vector<Wire> all(size);
  MPI_Gather(&w, sizeof w, MPI_BYTE, all.data(), sizeof w, MPI_BYTE, 0, comm);
  if (me == 0) {
    std::vector<RankResult> rs(size);
    for (int r = 0; r < size; ++r) {
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

// The message of the last fast_case on this rank.
std::string& last_message() {
  static std::string m;
  return m;
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A communicator of 3 ranks (ranks 0-2 of the world; the others wait): under vendor every
// rank refuses the call itself (rule 3: 2, 4 or 8 ranks), under extended it works (quantized
// and fused FP4), bit for bit (contract.md §ext-ranks).
void odd_rank_count(const std::string& transport) {
  if (g_size < faults::kOddRanks) return;
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank < faults::kOddRanks ? 0 : MPI_UNDEFINED, g_rank, &sub);
  if (sub != MPI_COMM_NULL) {
    set_timeout(30);
    qcollMpiComm* c = nullptr;
    const qcollStatus st = qcollMpiCommCreate("faults-3", sub, &c);
    check(st == QCOLL_SUCCESS, std::string("create 3 ranks: ") + qcollGetRecentErrMsg());
    RankCall call;
    call.rows = faults::kOddRanksRows;
    RankCall fused = faults::fp4_call(QCOLL_DT_FLOAT4_E2M1, QCOLL_DT_FLOAT8_E8M0, false, true);
    fused.rows = faults::kOddRanksRows;
    const std::vector<std::pair<std::string, RankCall>> cases = {
        {"3 ranks under vendor (refused on every rank)", call},
        {"3 ranks under extended (accepted)", call},
        {"3 ranks under extended, fused mx-e2m1 all-reduce (accepted)", fused}};
    for (std::size_t i = 0; i < cases.size() && c; ++i) {
      qcollSetContract(i == 0 ? QCOLL_CONTRACT_VENDOR : QCOLL_CONTRACT_EXTENDED);
      MPI_Barrier(sub);
      const RankResult r = faults::run_rank(g_rank, faults::kOddRanks, cases[i].second, "faults-3", 7);
      const std::string& name = cases[i].first;
      report(transport, name, r, sub);
      if (i == 0) {
        check(r.status == QCOLL_PARAM_INVALID && contains(r.message, "must have 2, 4 or 8 ranks, got 3"),
              name + ": status " + qcollStatusName(r.status) + ": " + r.message);
        check(r.output_untouched, name + ": output written by a failed call");
        check(r.seconds <= 10, name + ": took " + std::to_string(r.seconds) + " s");
      } else {
        check(r.status == QCOLL_SUCCESS && r.output_correct, name + ": status " + qcollStatusName(r.status) + ": " +
                                                                 r.message +
                                                                 (r.output_correct ? "" : ", wrong result"));
      }
    }
    qcollSetContract(QCOLL_CONTRACT_FROM_ENV);
    if (c) qcollMpiCommDestroy(c);
    MPI_Comm_free(&sub);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

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
    last_message() = r.message;
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
    // The extended contract (contract.md §ext). Ranks that keep different contracts: every
    // rank fails at once, the message naming both (§ext-agreement).
    const int odd = 1 % n;
    RankCall call;
    call.on_call_start = [&] { qcollSetContract(g_rank == odd ? QCOLL_CONTRACT_EXTENDED : QCOLL_CONTRACT_FROM_ENV); };
    const std::string both = "ranks disagree on the contract: QCOLL_CONTRACT: extended (rank " + std::to_string(odd) +
                             ") vs vendor (rank 0)";
    std::string name = "different contracts across ranks (extended on r" + std::to_string(odd) + ")";
    fast_case(name, call, -1, 0);
    check(contains(last_message(), both), name + ": message: " + last_message());
    // A 4-bit x that only that rank's contract takes: the vendor ranks refuse it themselves;
    // it hears why they failed: the contracts differ.
    RankCall fp4 = faults::fp4_call();
    fp4.on_call_start = call.on_call_start;
    name = "float4_e2m1 x, extended on r" + std::to_string(odd) + " only";
    fast_case(name, fp4, g_rank == odd ? -1 : g_rank, QCOLL_PARAM_INVALID);
    check(contains(last_message(), g_rank == odd ? both
                                                 : "x: dtype must be int8, hifloat8, float8_e4m3fn or float8_e5m2, got "
                                                   "float4_e2m1"),
          name + ": message: " + last_message());
    qcollSetContract(QCOLL_CONTRACT_EXTENDED);  // every rank from here on
    fp4 = faults::fp4_call();
    if (g_rank == 2 % n) fp4.x_offset = 1;
    name = "fp4: odd x offset on one rank (float4_e2m1, offset 1 on r2)";
    fast_case(name, fp4, 2 % n, QCOLL_PARAM_INVALID);
    check(contains(last_message(), g_rank == 2 % n ? "x: offset must be even for float4_e2m1" : "rank 2"),
          name + ": message: " + last_message());
    fp4 = faults::fp4_call(QCOLL_DT_FLOAT4_E1M2, QCOLL_DT_FLOAT8_E8M0, false);
    if (g_rank == odd) fp4.x_short = 2;  // two elements: one packed byte
    name = "fp4: packed x one byte short on one rank (float4_e1m2, r" + std::to_string(odd) + ")";
    fast_case(name, fp4, odd, QCOLL_PARAM_INVALID);
    check(contains(last_message(), g_rank == odd ? "x: storage shape" : "rank " + std::to_string(odd)),
          name + ": message: " + last_message());
    for (const RankCall& ok : {faults::fp4_call(QCOLL_DT_FLOAT4_E1M2, QCOLL_DT_FLOAT8_E8M0, false),
                               faults::fp4_call(QCOLL_DT_FLOAT4_E2M1, QCOLL_DT_FLOAT, true, true)}) {
      name = ok.fused ? "fp4: fused kg-e2m1 reduce-scatter after failed calls (same communicator)"
                      : "fp4: mx-e1m2 all-reduce after failed calls (same communicator)";
      MPI_Barrier(MPI_COMM_WORLD);
      RankResult r = run(ok, 24);
      report(transport, name, r);
      check(r.status == QCOLL_SUCCESS, name + ": " + r.message);
      check(r.output_correct, name + ": wrong result");
    }
    qcollSetContract(QCOLL_CONTRACT_FROM_ENV);
  }
  odd_rank_count(transport);
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
