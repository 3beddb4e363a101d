// Fault matrix of the thread transport: a fault on one rank of a 4-rank thread group, and
// what every rank observes. For every case: each rank that called returns a status and a
// message within its bound (fast failures well before QCOLL_TIMEOUT_S, missing peers within
// QCOLL_TIMEOUT_S plus a margin), no output byte is written, no thread is left behind (the
// thread transport uses no shared-memory segment; leaks are LeakSanitizer's job in build-asan). Each case prints one
// "FAULT-MATRIX | case | threads | per-rank status and time | slowest |" row. ("A process killed mid-call" does not
// apply: ranks are threads of one process.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fault_cases.hpp"
#include "ops_harness.hpp"
#include "qcoll/qcoll.hpp"

namespace {

using faults::RankCall;
using faults::RankResult;

using faults::all_same;
using faults::expect_all_failed;
using faults::expect_every_rank_refused;
using faults::expect_success;
using faults::fp4_call;
using faults::kFastBound;
using faults::kLongTimeout;

constexpr int kRanks = faults::kCaseRanks;
// Missing-peer cases (fault_cases.hpp has the fast-failure bounds).
constexpr double kShortTimeout = 1.5;
constexpr double kMargin = 5.0;  // scheduling slack on a loaded 2-core machine under sanitizers

void set_timeout(double s) { setenv("QCOLL_TIMEOUT_S", std::to_string(s).c_str(), 1); }

class FaultsThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    // Warm up: the kernel worker pool starts its threads on first use and keeps them.
    harness::Group g(kRanks);
    std::vector<RankResult> rs(kRanks);
    g.run([&](int r) { rs[r] = faults::run_rank(r, kRanks, RankCall{}, g.name(), 1); });
    for (auto& r : rs) ASSERT_EQ(r.status, QCOLL_SUCCESS) << r.message;
    threads_before_ = faults::settled_thread_count();
  }
  void TearDown() override {
    unsetenv("QCOLL_TIMEOUT_S");
    EXPECT_TRUE(faults::no_thread_left(threads_before_))
        << "threads left behind: " << faults::thread_count() << ", " << threads_before_ << " before";
  }

  // Runs one call per rank (calls[r]) on group g; prints the row.
  std::vector<RankResult> run_case(harness::Group& g, const std::string& name, const std::vector<RankCall>& calls,
                                   uint32_t seed = 7) {
    std::vector<RankResult> rs(kRanks);
    g.run([&](int r) { rs[r] = faults::run_rank(r, kRanks, calls[r], g.name(), seed); });
    faults::print_row("threads", name, rs);
    return rs;
  }

  int threads_before_ = 0;
};

TEST_F(FaultsThreads, InvalidInputOnOneRank) {
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  auto calls = all_same();
  calls[2].H = 1000;  // rule 7 on rank 2 only
  auto rs = run_case(g, "invalid input on one rank (H=1000 on r2)", calls);
  expect_all_failed(rs, 2, QCOLL_PARAM_INVALID, kFastBound);
  EXPECT_NE(rs[2].message.find("H must be a multiple of 128"), std::string::npos) << rs[2].message;
  EXPECT_NE(rs[0].message.find("rank 2"), std::string::npos) << rs[0].message;
}

TEST_F(FaultsThreads, NullTensorOnOneRank) {
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  auto calls = all_same();
  calls[1].null_x = true;
  auto rs = run_case(g, "null x on one rank (r1)", calls);
  expect_all_failed(rs, 1, QCOLL_PARAM_NULLPTR, kFastBound);
}

TEST_F(FaultsThreads, DifferentShapesAcrossRanks) {
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  auto calls = all_same();
  calls[3].rows = 32;  // valid on its own
  auto rs = run_case(g, "different shapes across ranks (BS 32 on r3)", calls);
  expect_all_failed(rs, -1, 0, kFastBound);
  EXPECT_NE(rs[0].message.find("disagree"), std::string::npos) << rs[0].message;
}

TEST_F(FaultsThreads, DifferentDtypesAcrossRanks) {
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  auto calls = all_same();
  calls[1].x_dtype = QCOLL_DT_FLOAT8_E5M2;
  auto rs = run_case(g, "different x dtype across ranks (e5m2 on r1)", calls);
  expect_all_failed(rs, -1, 0, kFastBound);
  calls = all_same();
  calls[0].out_dtype = QCOLL_DT_FLOAT16;
  rs = run_case(g, "different output dtype across ranks (fp16 on r0)", calls);
  expect_all_failed(rs, -1, 0, kFastBound);
}

TEST_F(FaultsThreads, OneRankCallsTheOtherOperator) {
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  auto calls = all_same();
  calls[2].reduce_scatter = false;
  auto rs = run_case(g, "one rank calls the other operator (AllReduce on r2)", calls);
  expect_all_failed(rs, -1, 0, kFastBound);
}

TEST_F(FaultsThreads, PhaseTwoMisuseOnOneRank) {
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  auto calls = all_same();
  calls[1].pass_stream = true;
  auto rs = run_case(g, "phase two: non-null stream on one rank (r1)", calls);
  expect_all_failed(rs, 1, QCOLL_PARAM_INVALID, kFastBound);
  calls = all_same();
  calls[3].wrong_phase_two = true;
  rs = run_case(g, "phase two: the other operator's run function on one rank (r3)", calls);
  expect_all_failed(rs, 3, QCOLL_PARAM_INVALID, kFastBound);
}

TEST_F(FaultsThreads, OneRankNeverArrives) {
  set_timeout(kShortTimeout);
  harness::Group g(kRanks);
  auto calls = all_same();
  calls[3].absent = true;
  auto rs = run_case(g, "one rank never arrives (r3)", calls);
  expect_all_failed(rs, -1, 0, kShortTimeout + kMargin, kShortTimeout * 0.9);
  EXPECT_NE(rs[0].message.find("timed out"), std::string::npos) << rs[0].message;
}

TEST_F(FaultsThreads, OneRankNamesAnUnknownGroup) {
  // Its group does not resolve, so it cannot tell its peers: they wait for the timeout.
  set_timeout(kShortTimeout);
  harness::Group g(kRanks);
  auto calls = all_same();
  calls[0].group = "no-such-group";
  auto rs = run_case(g, "unknown group name on one rank (r0)", calls);
  expect_all_failed(rs, 0, QCOLL_PARAM_INVALID, kShortTimeout + kMargin);
  for (int r = 1; r < kRanks; ++r) EXPECT_GE(rs[r].seconds, kShortTimeout * 0.9);
}

TEST_F(FaultsThreads, OneRankDestroysItsExecutor) {
  // qcollDestroyExecutor takes part in the call's agreement as a failed rank does: the
  // peers fail at once, long before the timeout (a long one here, so that "at once" and
  // "waited for the timeout" stay apart on a loaded machine).
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  auto calls = all_same();
  calls[2].destroy_instead = true;
  auto rs = run_case(g, "one rank destroys its executor instead of running it (r2)", calls);
  for (int r = 0; r < kRanks; ++r) {
    if (r == 2) continue;
    EXPECT_EQ(rs[r].status, QCOLL_RUNTIME_ERROR) << rs[r].message;
    EXPECT_LT(rs[r].seconds, kFastBound) << "waited for the timeout";
    EXPECT_NE(rs[r].message.find("rank 2 (destroyed its executor"), std::string::npos) << rs[r].message;
    EXPECT_TRUE(rs[r].output_untouched);
  }
  EXPECT_EQ(rs[2].status, QCOLL_SUCCESS) << rs[2].message;
  EXPECT_TRUE(rs[2].output_untouched);
  // The group is still in step: the next call works.
  rs = run_case(g, "call after a destroyed executor (same communicator)", all_same(), 14);
  expect_success(rs);
}

TEST_F(FaultsThreads, ExceptionInTheReduceStep) {
  // Rank 2's reduce step throws (the executor's test-only hook). Every rank returns an error
  // at once: rank 2 INNER_ERROR, the others RUNTIME_ERROR naming it. Rank 2 wrote nothing;
  // this transport has no staging (workspace 0), so a peer's output may hold its own
  // reduced rows, never anything else, and no peer gathers rank 2's block.
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  for (bool rs_op : {true, false}) {
    RankCall call;
    call.reduce_scatter = rs_op;
    call.check_written = true;
    faults::inject_reduce_fault(true);
    auto rs = run_case(
        g, std::string("exception in the reduce step mid-protocol (r2, ") + (rs_op ? "reduce-scatter)" : "all-reduce)"),
        all_same(call));
    faults::inject_reduce_fault(false);
    for (int r = 0; r < kRanks; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r) + ": " + rs[r].message);
      EXPECT_EQ(rs[r].status, r == faults::kReduceFaultRank ? QCOLL_INNER_ERROR : QCOLL_RUNTIME_ERROR);
      EXPECT_LE(rs[r].seconds, kFastBound);
      EXPECT_TRUE(rs[r].written_right) << "output holds something other than this rank's result";
      if (r == faults::kReduceFaultRank) {
        EXPECT_TRUE(rs[r].output_untouched);
        EXPECT_NE(rs[r].message.find("injected fault in the reduce step"), std::string::npos);
      } else {
        EXPECT_NE(rs[r].message.find("rank 2 failed"), std::string::npos);
      }
    }
    rs = run_case(g, "call after an exception in the reduce step (same communicator)", all_same(call), 15);
    expect_success(rs);
  }
}

// ---- The fused operators (QuantizeReduceScatter / QuantizeAllReduce): the same rules ----

RankCall fused_call(bool reduce_scatter = true, qcollDataType in = QCOLL_DT_BFLOAT16) {
  RankCall c;
  c.fused = true;
  c.in_dtype = in;
  c.reduce_scatter = reduce_scatter;
  return c;
}

TEST_F(FaultsThreads, FusedSucceedsWithTheReference) {
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  for (bool rs_op : {true, false})
    for (qcollDataType in : {QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16}) {
      auto rs = run_case(g,
                         std::string("fused ") + (rs_op ? "reduce-scatter" : "all-reduce") + " from " +
                             (in == QCOLL_DT_FLOAT ? "fp32" : "bf16") + " succeeds",
                         all_same(fused_call(rs_op, in)));
      expect_success(rs);
    }
}

TEST_F(FaultsThreads, FusedInvalidInputOnOneRank) {
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  auto calls = all_same(fused_call());
  calls[2].H = 1000;
  auto rs = run_case(g, "fused: invalid input on one rank (H=1000 on r2)", calls);
  expect_all_failed(rs, 2, QCOLL_PARAM_INVALID, kFastBound);
  EXPECT_EQ(rs[2].message.rfind("input: H must be a multiple of 128", 0), 0u) << rs[2].message;
  EXPECT_NE(rs[0].message.find("rank 2"), std::string::npos) << rs[0].message;
  calls = all_same(fused_call());
  calls[1].in_dtype = QCOLL_DT_INT8;
  rs = run_case(g, "fused: an int8 input on one rank (r1)", calls);
  expect_all_failed(rs, 1, QCOLL_PARAM_INVALID, kFastBound);
}

TEST_F(FaultsThreads, FusedMismatchAcrossRanks) {
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  auto calls = all_same(fused_call());
  calls[2].fused = false;  // the quantized operator on r2
  auto rs = run_case(g, "fused on 3 ranks, quantized operator on r2", calls);
  expect_all_failed(rs, -1, 0, kFastBound);
  EXPECT_NE(rs[0].message.find("QuantReduceScatter (rank 2) vs QuantizeReduceScatter"), std::string::npos)
      << rs[0].message;
  calls = all_same(fused_call());
  calls[1].in_dtype = QCOLL_DT_FLOAT;
  rs = run_case(g, "fused: different input dtype across ranks (fp32 on r1)", calls);
  expect_all_failed(rs, -1, 0, kFastBound);
  calls = all_same(fused_call());
  calls[3].scales_dtype = QCOLL_DT_FLOAT8_E8M0;  // MX on r3
  rs = run_case(g, "fused: different mode across ranks (MX on r3)", calls);
  expect_all_failed(rs, -1, 0, kFastBound);
  rs = run_case(g, "fused: call after a failed call (same communicator)", all_same(fused_call()), 11);
  expect_success(rs);
}

TEST_F(FaultsThreads, FusedExceptionInTheReduceStep) {
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  RankCall call = fused_call(false);
  call.check_written = true;
  faults::inject_reduce_fault(true);
  auto rs = run_case(g, "fused: exception in the reduce step mid-protocol (r2, all-reduce)", all_same(call));
  faults::inject_reduce_fault(false);
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + rs[r].message);
    EXPECT_EQ(rs[r].status, r == faults::kReduceFaultRank ? QCOLL_INNER_ERROR : QCOLL_RUNTIME_ERROR);
    EXPECT_LE(rs[r].seconds, kFastBound);
    EXPECT_TRUE(rs[r].written_right);
  }
}

TEST_F(FaultsThreads, FusedOneRankNeverArrives) {
  set_timeout(kShortTimeout);
  harness::Group g(kRanks);
  auto calls = all_same(fused_call());
  calls[3].absent = true;
  auto rs = run_case(g, "fused: one rank never arrives (r3)", calls);
  expect_all_failed(rs, -1, 0, kShortTimeout + kMargin, kShortTimeout * 0.9);
  EXPECT_NE(rs[0].message.find("timed out"), std::string::npos) << rs[0].message;
}

// ---- The extended contract (contract.md §ext): 4-bit x, any rank count ----
// The contract is the process's (its ranks are threads of it): one rank cannot keep another
// (that case: test_faults_shm, test_mpi_faults).

class ExtendedContract {
 public:
  ExtendedContract() { qcoll::set_contract(qcoll::settings::Contract::Extended); }
  ~ExtendedContract() { qcoll::set_contract(std::nullopt); }
};

TEST_F(FaultsThreads, Fp4SucceedsWithTheReference) {
  set_timeout(kLongTimeout);
  ExtendedContract extended;
  harness::Group g(kRanks);
  for (bool fused : {false, true}) {
    auto rs =
        run_case(g, fused ? "fp4: fused mx-e1m2 all-reduce succeeds" : "fp4: kg-e2m1 reduce-scatter succeeds",
                 all_same(fused ? fp4_call(QCOLL_DT_FLOAT4_E1M2, QCOLL_DT_FLOAT8_E8M0, false, true) : fp4_call()));
    expect_success(rs);
  }
}

TEST_F(FaultsThreads, Fp4OddOffsetOnOneRank) {
  set_timeout(kLongTimeout);
  ExtendedContract extended;
  harness::Group g(kRanks);
  auto calls = all_same(fp4_call());
  calls[2].x_offset = 1;
  auto rs = run_case(g, "fp4: odd x offset on one rank (float4_e2m1, offset 1 on r2)", calls);
  expect_all_failed(rs, 2, QCOLL_PARAM_INVALID, kFastBound);
  EXPECT_EQ(rs[2].message.rfind("x: offset must be even for float4_e2m1", 0), 0u) << rs[2].message;
  EXPECT_NE(rs[0].message.find("rank 2"), std::string::npos) << rs[0].message;
  rs = run_case(g, "fp4: call after a failed call (same communicator)", all_same(fp4_call()), 16);
  expect_success(rs);
}

TEST_F(FaultsThreads, Fp4XOneByteShortOnOneRank) {
  set_timeout(kLongTimeout);
  ExtendedContract extended;
  harness::Group g(kRanks);
  auto calls = all_same(fp4_call(QCOLL_DT_FLOAT4_E1M2, QCOLL_DT_FLOAT8_E8M0, false));
  calls[1].x_short = 2;  // two elements: one packed byte
  auto rs = run_case(g, "fp4: packed x one byte short on one rank (float4_e1m2, r1)", calls);
  expect_all_failed(rs, 1, QCOLL_PARAM_INVALID, kFastBound);
  EXPECT_EQ(rs[1].message.rfind("x: storage shape", 0), 0u) << rs[1].message;
  EXPECT_NE(rs[0].message.find("rank 1"), std::string::npos) << rs[0].message;
}

// 3 ranks: under vendor every rank refuses the call itself (rule 3); under extended it works.
TEST_F(FaultsThreads, ThreeRanksRefusedUnderVendorAcceptedUnderExtended) {
  set_timeout(kLongTimeout);
  harness::Group g(faults::kOddRanks);
  RankCall call;
  call.rows = faults::kOddRanksRows;
  std::vector<RankResult> rs(faults::kOddRanks);
  g.run([&](int r) { rs[r] = faults::run_rank(r, faults::kOddRanks, call, g.name(), 7); });
  faults::print_row("threads", "3 ranks under vendor (refused on every rank)", rs);
  expect_every_rank_refused(rs, QCOLL_PARAM_INVALID, "must have 2, 4 or 8 ranks, got 3", kFastBound);
  ExtendedContract extended;
  RankCall fused = fp4_call(QCOLL_DT_FLOAT4_E2M1, QCOLL_DT_FLOAT8_E8M0, false, true);
  fused.rows = faults::kOddRanksRows;
  for (const RankCall& c : {call, fused}) {
    g.run([&](int r) { rs[r] = faults::run_rank(r, faults::kOddRanks, c, g.name(), 8); });
    faults::print_row(
        "threads",
        c.fused ? "3 ranks under extended, fused mx-e2m1 all-reduce (accepted)" : "3 ranks under extended (accepted)",
        rs);
    expect_success(rs);
  }
}

TEST_F(FaultsThreads, CallAfterAFastFailureWorks) {
  set_timeout(kLongTimeout);
  harness::Group g(kRanks);
  auto calls = all_same();
  calls[1].x_dtype = QCOLL_DT_FLOAT8_E5M2;
  auto rs = run_case(g, "different x dtype across ranks (e5m2 on r1)", calls);
  expect_all_failed(rs, -1, 0, kFastBound);
  rs = run_case(g, "call after a failed call (same communicator)", all_same(), 11);
  expect_success(rs);
  // An invalid input on one rank, then an all-reduce on the same group.
  calls = all_same();
  calls[0].H = 1000;
  rs = run_case(g, "invalid input on one rank (H=1000 on r0)", calls);
  expect_all_failed(rs, 0, QCOLL_PARAM_INVALID, kFastBound);
  RankCall ar;
  ar.reduce_scatter = false;
  ar.scales_dtype = QCOLL_DT_FLOAT8_E8M0;
  rs = run_case(g, "call after a failed call, all-reduce MX (same communicator)", all_same(ar), 12);
  expect_success(rs);
}

TEST_F(FaultsThreads, CallAfterATimeoutSaysTheGroupIsBroken) {
  set_timeout(kShortTimeout);
  std::string name;
  {
    harness::Group g(kRanks);
    name = g.name();
    auto calls = all_same();
    calls[2].absent = true;
    auto rs = run_case(g, "one rank never arrives (r2)", calls);
    expect_all_failed(rs, -1, 0, kShortTimeout + kMargin, kShortTimeout * 0.9);
    set_timeout(kLongTimeout);  // another timeout would now take 30 s, far past kFastBound
    rs = run_case(g, "call after a timeout (same communicator)", all_same());
    expect_all_failed(rs, -1, 0, kFastBound);  // at once, not after another timeout
    for (int r = 0; r < kRanks; ++r) {
      // Says why it cannot work: the group is unusable/broken since the timeout.
      EXPECT_TRUE(rs[r].message.find("broken") != std::string::npos ||
                  rs[r].message.find("unusable") != std::string::npos)
          << rs[r].message;
      EXPECT_NE(rs[r].message.find("timed out"), std::string::npos) << rs[r].message;
    }
  }
  // The name is free again once the group is destroyed; a new group works.
  harness::Group g2(kRanks, name);
  auto rs = run_case(g2, "call after a timeout (communicator destroyed and created again)", all_same(), 13);
  expect_success(rs);
}

}  // namespace
