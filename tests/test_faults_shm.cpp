// Fault matrix of the shared-memory transport without MPI: the ranks are forked processes
// sharing one segment (as tests/test_shm_transport.cpp sets it up), each calling the
// operators through the C API on a communicator registered for its process. One rank
// misbehaves per case; every child reports what it observed through a pipe. Checked as in
// test_faults_threads.cpp (status, message, time bound, output untouched, results right
// after recovery), plus: a rank SIGKILLed in the middle of a call, and no /dev/shm/qcoll*
// segment left behind. Prints one "FAULT-MATRIX | case | shm | ... |" row per case.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/registry.hpp"
#include "comm/shm_communicator.hpp"
#include "comm/shm_segment.hpp"
#include "fault_cases.hpp"
#include "qcoll/qcoll.hpp"
#include "qcoll/settings.hpp"

namespace {

using faults::RankCall;
using faults::RankResult;
using namespace qcoll::comm;

using faults::all_same;
using faults::expect_all_failed;
using faults::kFastBound;
using faults::kLongTimeout;

constexpr int kRanks = faults::kCaseRanks;
constexpr double kShortTimeout = 2.0, kMargin = 3.0;  // missing-peer cases
constexpr int kKillDelayMsDefault = 100;
constexpr std::size_t kWindow = 4u << 20;  // HCCL_BUFFSIZE-like window per rank: 4 MB

// What a child sends back per call.
struct Report {
  int called = 0;
  int status = 0;
  double seconds = 0;
  int untouched = 1, correct = 0;
  char message[400] = {};
};

// A rank's behaviour in a case: its calls in order (one RankCall per call), and
// how long it stays alive after them.
struct RankPlan {
  std::vector<RankCall> calls;
  int linger_ms = 0;  // stays alive this long after its calls (a rank that never arrives)
};

// Forks one process a plan (kRanks but in the rank-count cases); returns results[call][rank]
// (absent/killed ranks: called = false).
std::vector<std::vector<RankResult>> run_processes(const std::vector<RankPlan>& plans, double timeout_s, uint32_t seed,
                                                   std::vector<int>* exit_codes = nullptr) {
  const int n = static_cast<int>(plans.size());
  std::string name;
  EXPECT_TRUE(random_shm_name(name).ok());
  const std::size_t bytes = ShmCommunicator::segment_bytes(n, kWindow);
  ShmMapping m;
  EXPECT_TRUE(create_shm(name, bytes, m).ok());
  ShmCommunicator::init_segment(m.data(), n, kWindow);
  unlink_shm(name);
  struct stat sb {};
  EXPECT_NE(stat(("/dev/shm" + name).c_str(), &sb), 0) << name << " still in /dev/shm";
  const std::size_t ncalls = plans[0].calls.size();
  std::vector<int> fds;
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    int p[2];
    EXPECT_EQ(pipe(p), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      setenv("QCOLL_TIMEOUT_S", std::to_string(timeout_s).c_str(), 1);
      int code = 0;
      {
        auto c = std::make_shared<ShmCommunicator>("faults-shm", r, n, kWindow, ShmMapping(m.data(), m.bytes()));
        if (!c->valid() || !register_for_process(c).ok()) _exit(90);
        for (const RankCall& call : plans[r].calls) {
          const RankResult res = faults::run_rank(r, n, call, "faults-shm", seed);
          Report rep;
          rep.called = res.called;
          rep.status = res.status;
          rep.seconds = res.seconds;
          rep.untouched = res.output_untouched;
          rep.correct = res.output_correct;
          std::snprintf(rep.message, sizeof rep.message, "%s", res.message.c_str());
          if (write(p[1], &rep, sizeof rep) != static_cast<ssize_t>(sizeof rep)) code = 91;
        }
        if (plans[r].linger_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(plans[r].linger_ms));
        unregister_for_process("faults-shm");
      }
      _exit(code);
    }
    close(p[1]);
    fds.push_back(p[0]);
    pids.push_back(pid);
  }
  std::vector<std::vector<RankResult>> out(ncalls, std::vector<RankResult>(n));
  for (int r = 0; r < n; ++r) {
    for (std::size_t k = 0; k < ncalls; ++k) {
      Report rep;
      if (read(fds[r], &rep, sizeof rep) != static_cast<ssize_t>(sizeof rep)) break;  // killed
      RankResult& x = out[k][r];
      x.called = rep.called;
      x.status = rep.status;
      x.seconds = rep.seconds;
      x.output_untouched = rep.untouched;
      x.output_correct = rep.correct;
      x.message = rep.message;
    }
    close(fds[r]);
  }
  for (int r = 0; r < n; ++r) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    if (exit_codes) exit_codes->push_back(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st));
  }
  return out;
}

std::vector<RankPlan> plans_of(const std::vector<RankCall>& first) {
  std::vector<RankPlan> p(kRanks);
  for (int r = 0; r < kRanks; ++r) p[r].calls = {first[r]};
  return p;
}
// (Other processes may create qcoll segments meanwhile, e.g. MPI tests run in parallel: the
// check is on this test's own segment name, in run_processes.)
class FaultsShm : public ::testing::Test {};

TEST_F(FaultsShm, InvalidInputOnOneRank) {
  auto calls = all_same();
  calls[2].H = 1000;
  auto rs = run_processes(plans_of(calls), kLongTimeout, 7)[0];
  faults::print_row("shm", "invalid input on one rank (H=1000 on r2)", rs);
  expect_all_failed(rs, 2, QCOLL_PARAM_INVALID, kFastBound);
}

TEST_F(FaultsShm, DifferentShapesOrDtypesAcrossRanks) {
  auto calls = all_same();
  calls[3].rows = 32;
  auto rs = run_processes(plans_of(calls), kLongTimeout, 7)[0];
  faults::print_row("shm", "different shapes across ranks (BS 32 on r3)", rs);
  expect_all_failed(rs, -1, 0, kFastBound);
  calls = all_same();
  calls[1].x_dtype = QCOLL_DT_FLOAT8_E5M2;
  rs = run_processes(plans_of(calls), kLongTimeout, 7)[0];
  faults::print_row("shm", "different x dtype across ranks (e5m2 on r1)", rs);
  expect_all_failed(rs, -1, 0, kFastBound);
}

// docs/contract.md §ext-agreement: the contract is part of the call agreement. Each forked
// rank keeps its own setting (qcoll::set_contract before its call), so one rank can differ.
TEST_F(FaultsShm, DifferentContractsAcrossRanks) {
  auto calls = all_same();
  calls[1].on_call_start = [] { qcoll::set_contract(qcoll::settings::Contract::Extended); };
  RankCall good;  // then every rank back on the environment's (vendor): the call works
  good.on_call_start = [] { qcoll::set_contract(std::nullopt); };
  std::vector<RankPlan> plans = plans_of(calls);
  for (auto& p : plans) p.calls.push_back(good);
  auto res = run_processes(plans, kLongTimeout, 7);
  faults::print_row("shm", "different contracts across ranks (extended on r1)", res[0]);
  faults::print_row("shm", "call after a contract mismatch (same communicator)", res[1]);
  expect_all_failed(res[0], -1, 0, kFastBound);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_NE(res[0][r].message.find("ranks disagree on the contract: QCOLL_CONTRACT: extended (rank 1) vs vendor "
                                     "(rank 0)"),
              std::string::npos)
        << res[0][r].message;
    EXPECT_EQ(res[1][r].status, QCOLL_SUCCESS) << res[1][r].message;
    EXPECT_TRUE(res[1][r].output_correct) << "rank " << r;
  }
  // A 4-bit x that only rank 1's contract takes: the vendor ranks refuse it (PARAM_INVALID,
  // their own message); rank 1 hears why its peers failed: the contracts differ.
  RankCall fp4;
  fp4.x_dtype = QCOLL_DT_FLOAT4_E2M1;
  calls = all_same(fp4);
  calls[1].on_call_start = [] { qcoll::set_contract(qcoll::settings::Contract::Extended); };
  auto rs = run_processes(plans_of(calls), kLongTimeout, 7)[0];
  faults::print_row("shm", "float4_e2m1 x, extended on r1 only", rs);
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + rs[r].message);
    EXPECT_EQ(rs[r].status, r == 1 ? QCOLL_RUNTIME_ERROR : QCOLL_PARAM_INVALID);
    EXPECT_TRUE(rs[r].output_untouched);
    EXPECT_LE(rs[r].seconds, kFastBound);
    EXPECT_NE(rs[r].message.find(r == 1 ? "QCOLL_CONTRACT: extended (rank 1) vs vendor (rank 0)"
                                        : "x: dtype must be int8, hifloat8, float8_e4m3fn or float8_e5m2, got "
                                          "float4_e2m1"),
              std::string::npos);
  }
}

// The extended contract's faults (contract.md §ext), every rank extended (set in each child
// before its call): a 4-bit x with an odd offset on one rank, then the same communicator works
// (quantized and fused FP4); a packed x one byte short on one rank.
TEST_F(FaultsShm, Fp4Faults) {
  const auto extended = [] { qcoll::set_contract(qcoll::settings::Contract::Extended); };
  std::vector<RankPlan> plans(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    RankCall odd = faults::fp4_call(), good = faults::fp4_call(QCOLL_DT_FLOAT4_E1M2, QCOLL_DT_FLOAT8_E8M0, false);
    RankCall short_x = faults::fp4_call(QCOLL_DT_FLOAT4_E1M2),
             fused = faults::fp4_call(QCOLL_DT_FLOAT4_E2M1, QCOLL_DT_FLOAT8_E8M0, false, true);
    odd.on_call_start = extended;
    if (r == 2) odd.x_offset = 1;
    if (r == 1) short_x.x_short = 2;  // two elements: one packed byte
    plans[r].calls = {odd, good, short_x, fused};
  }
  auto res = run_processes(plans, kLongTimeout, 7);
  faults::print_row("shm", "fp4: odd x offset on one rank (float4_e2m1, offset 1 on r2)", res[0]);
  faults::print_row("shm", "fp4: call after a failed call, mx-e1m2 all-reduce (same communicator)", res[1]);
  faults::print_row("shm", "fp4: packed x one byte short on one rank (float4_e1m2, r1)", res[2]);
  faults::print_row("shm", "fp4: fused mx-e2m1 all-reduce after a failed call (same communicator)", res[3]);
  expect_all_failed(res[0], 2, QCOLL_PARAM_INVALID, kFastBound);
  EXPECT_EQ(res[0][2].message.rfind("x: offset must be even for float4_e2m1", 0), 0u) << res[0][2].message;
  EXPECT_NE(res[0][0].message.find("rank 2"), std::string::npos) << res[0][0].message;
  faults::expect_success(res[1]);
  expect_all_failed(res[2], 1, QCOLL_PARAM_INVALID, kFastBound);
  EXPECT_EQ(res[2][1].message.rfind("x: storage shape", 0), 0u) << res[2][1].message;
  faults::expect_success(res[3]);
}

// 3 forked ranks: refused on every rank under vendor (rule 3), accepted under extended.
TEST_F(FaultsShm, ThreeRanksRefusedUnderVendorAcceptedUnderExtended) {
  RankCall vendor, extended;
  vendor.rows = extended.rows = faults::kOddRanksRows;
  vendor.on_call_start = [] { qcoll::set_contract(qcoll::settings::Contract::Vendor); };
  extended.on_call_start = [] { qcoll::set_contract(qcoll::settings::Contract::Extended); };
  RankCall fused = faults::fp4_call(QCOLL_DT_FLOAT4_E2M1, QCOLL_DT_FLOAT8_E8M0, false, true);
  fused.rows = faults::kOddRanksRows;
  std::vector<RankPlan> plans(faults::kOddRanks);
  for (auto& p : plans) p.calls = {vendor, extended, fused};
  auto res = run_processes(plans, kLongTimeout, 7);
  faults::print_row("shm", "3 ranks under vendor (refused on every rank)", res[0]);
  faults::print_row("shm", "3 ranks under extended (accepted)", res[1]);
  faults::print_row("shm", "3 ranks under extended, fused mx-e2m1 all-reduce (accepted)", res[2]);
  faults::expect_every_rank_refused(res[0], QCOLL_PARAM_INVALID, "must have 2, 4 or 8 ranks, got 3", kFastBound);
  faults::expect_success(res[1]);
  faults::expect_success(res[2]);
}

TEST_F(FaultsShm, OneRankCallsTheOtherOperator) {
  auto calls = all_same();
  calls[2].reduce_scatter = false;
  auto rs = run_processes(plans_of(calls), kLongTimeout, 7)[0];
  faults::print_row("shm", "one rank calls the other operator (AllReduce on r2)", rs);
  expect_all_failed(rs, -1, 0, kFastBound);
}

TEST_F(FaultsShm, OneRankDestroysItsExecutor) {
  // qcollDestroyExecutor takes part in the call's agreement as a failed rank does.
  auto calls = all_same();
  calls[2].destroy_instead = true;
  auto plans = plans_of(calls);
  for (auto& p : plans) p.calls.push_back(RankCall{});  // then the same call everywhere: works
  auto res = run_processes(plans, kLongTimeout, 7);
  faults::print_row("shm", "one rank destroys its executor instead of running it (r2)", res[0]);
  faults::print_row("shm", "call after a destroyed executor (same communicator)", res[1]);
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + res[0][r].message);
    EXPECT_EQ(res[0][r].status, r == 2 ? QCOLL_SUCCESS : QCOLL_RUNTIME_ERROR);
    EXPECT_LE(res[0][r].seconds, kFastBound);
    EXPECT_TRUE(res[0][r].output_untouched);
    if (r != 2) {
      EXPECT_NE(res[0][r].message.find("rank 2 (destroyed its executor"), std::string::npos);
    }
    EXPECT_EQ(res[1][r].status, QCOLL_SUCCESS) << res[1][r].message;
    EXPECT_TRUE(res[1][r].output_correct);
  }
}

// Rank 2 throws from its reduce step in the middle of a many-chunk call (4 MB window). Every
// rank returns an error far below the timeout (rank 2 INNER_ERROR, the others
// RUNTIME_ERROR naming it), every output untouched (staged), and the communicator stays in
// step: the next call works.
TEST_F(FaultsShm, ExceptionInTheReduceStep) {
  for (bool rs_op : {true, false}) {
    RankCall big;
    big.reduce_scatter = rs_op;
    big.rows = 2048;
    big.H = 4096;
    big.on_call_start = [] { faults::inject_reduce_fault(true, 2048 / kRanks / 2); };
    RankCall after;
    after.on_call_start = [] { faults::inject_reduce_fault(false); };
    std::vector<RankPlan> plans(kRanks);
    for (auto& p : plans) p.calls = {big, after};
    auto res = run_processes(plans, kLongTimeout, 7);
    const std::string what = rs_op ? "reduce-scatter" : "all-reduce";
    faults::print_row("shm", "exception in the reduce step mid-protocol (r2, " + what + ")", res[0]);
    faults::print_row("shm", "call after an exception in the reduce step (same communicator)", res[1]);
    expect_all_failed(res[0], faults::kReduceFaultRank, QCOLL_INNER_ERROR, kFastBound);
    EXPECT_NE(res[0][2].message.find("injected fault in the reduce step"), std::string::npos) << res[0][2].message;
    for (int r = 0; r < kRanks; ++r) {
      if (r != faults::kReduceFaultRank) {
        EXPECT_NE(res[0][r].message.find("rank 2 failed"), std::string::npos) << res[0][r].message;
      }
      EXPECT_EQ(res[1][r].status, QCOLL_SUCCESS) << res[1][r].message;
      EXPECT_TRUE(res[1][r].output_correct);
    }
  }
}

TEST_F(FaultsShm, OneRankNeverArrives) {
  auto calls = all_same();
  calls[3].absent = true;
  auto plans = plans_of(calls);
  plans[3].linger_ms = static_cast<int>((kShortTimeout + 2) * 1000);
  auto rs = run_processes(plans, kShortTimeout, 7)[0];
  faults::print_row("shm", "one rank never arrives (r3)", rs);
  expect_all_failed(rs, -1, 0, kShortTimeout + kMargin, kShortTimeout * 0.9);
}

// The fused operators: bad input on one rank, a mismatch, a mid-call fault (outputs
// untouched: staged), a missing rank; then the communicator works.
RankCall fused_call(bool reduce_scatter = true) {
  RankCall c;
  c.fused = true;
  c.reduce_scatter = reduce_scatter;
  return c;
}

TEST_F(FaultsShm, FusedFaults) {
  auto calls = all_same(fused_call());
  calls[2].H = 1000;
  auto rs = run_processes(plans_of(calls), kLongTimeout, 7)[0];
  faults::print_row("shm", "fused: invalid input on one rank (H=1000 on r2)", rs);
  expect_all_failed(rs, 2, QCOLL_PARAM_INVALID, kFastBound);
  EXPECT_EQ(rs[2].message.rfind("input: H must be", 0), 0u) << rs[2].message;

  calls = all_same(fused_call());
  calls[1].fused = false;
  std::vector<RankPlan> plans = plans_of(calls);
  for (auto& p : plans) p.calls.push_back(fused_call(false));  // then a good call: works
  auto res = run_processes(plans, kLongTimeout, 7);
  faults::print_row("shm", "fused on 3 ranks, quantized operator on r1", res[0]);
  faults::print_row("shm", "fused: call after a failed call (same communicator)", res[1]);
  expect_all_failed(res[0], -1, 0, kFastBound);
  EXPECT_NE(res[0][0].message.find("disagree"), std::string::npos) << res[0][0].message;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(res[1][r].status, QCOLL_SUCCESS) << res[1][r].message;
    EXPECT_TRUE(res[1][r].output_correct) << "rank " << r;
  }
}

TEST_F(FaultsShm, FusedExceptionInTheReduceStepAndMissingRank) {
  RankCall big = fused_call(false);
  big.rows = 1024;
  big.H = 4096;
  big.on_call_start = [] { faults::inject_reduce_fault(true, 1024 / kRanks / 2); };
  RankCall after = fused_call();
  after.on_call_start = [] { faults::inject_reduce_fault(false); };
  std::vector<RankPlan> plans(kRanks);
  for (auto& p : plans) p.calls = {big, after};
  auto res = run_processes(plans, kLongTimeout, 7);
  faults::print_row("shm", "fused: exception in the reduce step mid-protocol (r2, all-reduce)", res[0]);
  expect_all_failed(res[0], faults::kReduceFaultRank, QCOLL_INNER_ERROR, kFastBound);  // outputs untouched
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(res[1][r].status, QCOLL_SUCCESS) << res[1][r].message;
    EXPECT_TRUE(res[1][r].output_correct);
  }

  auto calls = all_same(fused_call());
  calls[3].absent = true;
  plans = plans_of(calls);
  plans[3].linger_ms = static_cast<int>((kShortTimeout + 2) * 1000);
  auto rs = run_processes(plans, kShortTimeout, 7)[0];
  faults::print_row("shm", "fused: one rank never arrives (r3)", rs);
  expect_all_failed(rs, -1, 0, kShortTimeout + kMargin, kShortTimeout * 0.9);
}

// Rank 1 SIGKILLs itself `delay_ms` after every rank entered a large all-reduce through a
// small window (many chunk steps; ranks count their arrival in a shared page): with a few
// milliseconds it dies during the data movement. Every survivor must end cleanly:
// RUNTIME_ERROR with the output untouched (or, had it already finished, the right result),
// within the bound.
// The executor's test-only reduce hook (ops/executor.hpp), used to kill rank 1 from inside
// its reduce step once it reaches the middle of its block: it has reduced some chunks, its
// peers are in the middle of the exchange, and its block is never finished, so no survivor
// can complete the all-reduce.
constexpr int kKilledRank = 1;
qcoll::Status kill_in_reduce(const std::string&, int rank, std::size_t row_begin) {
  if (rank == kKilledRank && row_begin >= faults::reduce_fault_row().load()) raise(SIGKILL);
  return qcoll::Status::Ok();
}

// Rank 1 is killed (SIGKILL) in an 8 MiB all-reduce through a 4 MB window: delay_ms < 0 from
// inside its reduce step (above: the kill surely lands mid-call), otherwise delay_ms after
// every rank entered the call (a call may then finish first: survivors may succeed).
void killed_mid_call(int delay_ms, const std::string& label) {
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  auto* entered = new (page) std::atomic<int>(0);
  RankCall big;
  big.reduce_scatter = false;
  big.rows = 2048;
  big.H = 4096;
  big.on_call_start = [entered] { entered->fetch_add(1); };
  auto plans = plans_of(all_same(big));
  if (delay_ms < 0) {
    plans[kKilledRank].calls[0].on_call_start = [entered] {
      entered->fetch_add(1);
      faults::reduce_fault_row() = 2048 / kRanks / 2;
      qcoll::ops::testing::set_reduce_fault_for_test(kill_in_reduce);
    };
  } else {
    plans[kKilledRank].calls[0].on_call_start = [entered, delay_ms] {
      entered->fetch_add(1);
      std::thread([entered, delay_ms] {
        while (entered->load() < kRanks) std::this_thread::sleep_for(std::chrono::microseconds(100));
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        raise(SIGKILL);
      }).detach();
    };
  }
  std::vector<int> codes;
  auto rs = run_processes(plans, kShortTimeout + 8, 7, &codes)[0];
  munmap(page, 4096);
  faults::print_row("shm", label, rs);
  std::printf("%s: rank 0 says: %s\n", label.c_str(), rs[0].message.c_str());
  EXPECT_EQ(codes[kKilledRank], 100 + SIGKILL);
  for (int r = 0; r < kRanks; ++r) {
    if (r == kKilledRank) continue;
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + rs[r].message);
    ASSERT_TRUE(rs[r].called);
    if (rs[r].status == QCOLL_SUCCESS && delay_ms >= 0) {
      EXPECT_TRUE(rs[r].output_correct);
    } else {
      EXPECT_EQ(rs[r].status, QCOLL_RUNTIME_ERROR);
      EXPECT_FALSE(rs[r].message.empty());
      EXPECT_TRUE(rs[r].output_untouched);
      EXPECT_LE(rs[r].seconds, kShortTimeout + 8 + kMargin);
    }
  }
}

TEST_F(FaultsShm, ProcessKilledAsTheCallStarts) {
  killed_mid_call(0, "process killed as the call starts (SIGKILL r1, 8 MiB all-reduce)");
}

TEST_F(FaultsShm, ProcessKilledMidCall) {
  killed_mid_call(-1,
                  "process killed mid-call (SIGKILL r1 in its reduce step at the middle of its block, "
                  "8 MiB all-reduce, 4 MB window)");
}

TEST_F(FaultsShm, ProcessKilledAfterADelay) {
  // QCOLL_TEST_KILL_MS sets the delay (to explore where a timed kill lands; it may land
  // after the call, and then the survivors succeed).
  const char* env = std::getenv("QCOLL_TEST_KILL_MS");
  const int kKillDelayMs = env ? std::atoi(env) : kKillDelayMsDefault;
  killed_mid_call(kKillDelayMs, "process killed " + std::to_string(kKillDelayMs) +
                                    " ms into the call (SIGKILL r1, 8 MiB all-reduce, 4 MB window)");
}

TEST_F(FaultsShm, CallAfterAFailedCall) {
  // Mismatch, then the same call on every rank: the communicator works again.
  std::vector<RankPlan> plans(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    RankCall bad;
    if (r == 1) bad.x_dtype = QCOLL_DT_FLOAT8_E5M2;
    plans[r].calls = {bad, RankCall{}};
  }
  auto res = run_processes(plans, kLongTimeout, 11);
  faults::print_row("shm", "different x dtype across ranks (e5m2 on r1)", res[0]);
  faults::print_row("shm", "call after a failed call (same communicator)", res[1]);
  expect_all_failed(res[0], -1, 0, kFastBound);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(res[1][r].status, QCOLL_SUCCESS) << res[1][r].message;
    EXPECT_TRUE(res[1][r].output_correct);
  }
  // A timeout breaks the communicator: the next call says so at once.
  for (int r = 0; r < kRanks; ++r) {
    RankCall first;
    first.absent = r == 3;
    plans[r].calls = {first, RankCall{}};
    plans[r].calls[1].absent = r == 3;
    plans[r].linger_ms = r == 3 ? static_cast<int>((2 * kShortTimeout + 2) * 1000) : 0;
  }
  res = run_processes(plans, kShortTimeout, 12);
  faults::print_row("shm", "one rank never arrives (r3)", res[0]);
  faults::print_row("shm", "call after a timeout (same communicator)", res[1]);
  expect_all_failed(res[0], -1, 0, kShortTimeout + kMargin, kShortTimeout * 0.9);
  expect_all_failed(res[1], -1, 0, kShortTimeout * 0.5);  // at once: the communicator is broken
}

TEST_F(FaultsShm, AbsentRankIsToldTheGroupBrokeOnATimeout) {
  // Rank 3 misses a call (its peers time out), then makes the next call: it fails at once,
  // told that the group broke because a rank timed out and must be created again.
  std::vector<RankPlan> plans(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    RankCall first;
    first.absent = r == 3;
    RankCall second;
    if (r == 3) {
      second.on_call_start = [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>((kShortTimeout + 1) * 1000)));
      };
    }
    plans[r].calls = {first, second};
  }
  auto res = run_processes(plans, kShortTimeout, 13);
  faults::print_row("shm", "one rank never arrives (r3)", res[0]);
  faults::print_row("shm", "call after a timeout, the absent rank calls too (same communicator)", res[1]);
  expect_all_failed(res[0], -1, 0, kShortTimeout + kMargin, kShortTimeout * 0.9);
  expect_all_failed(res[1], -1, 0, kShortTimeout * 0.5);
  const std::string& m = res[1][3].message;
  std::printf("the absent rank says: %s\n", m.c_str());
  EXPECT_NE(m.find("the group broke"), std::string::npos) << m;
  EXPECT_NE(m.find("timed out"), std::string::npos) << m;
  EXPECT_NE(m.find("create it again"), std::string::npos) << m;
  EXPECT_EQ(m.find("failed in this call"), std::string::npos) << m;
}

}  // namespace
