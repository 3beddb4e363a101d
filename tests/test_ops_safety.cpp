// Collective safety (contract.md §safety): a call that differs on one rank, fails on one rank, or
// never arrives makes every rank return an error in bounded time, outputs untouched; what
// later calls do. Plus the staged path of transports that may fail mid-call (a test
// communicator wrapping the thread transport) and rule 11.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "comm/registry.hpp"
#include "ops/executor.hpp"
#include "ops/timeout.hpp"
#include "ops_harness.hpp"
#include "oracle.hpp"

using harness::Op;
using qcoll::DType;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t H = 1024;
constexpr uint8_t kSentinel = 0x5A;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One rank's buffers for an INT8/fp32-scales call with rows x H, output float.
struct RankData {
  std::vector<uint8_t> x, s, out;
  RankData(std::size_t rows, std::size_t out_rows, int rank)
      : x(rows * H), s(rows * H / 128 * 4), out(out_rows * H * 4, kSentinel) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 7 + rank * 3) % 251);
    for (std::size_t g = 0; g < rows * H / 128; ++g) {
      float v = 0.25f * static_cast<float>(1 + (g + rank) % 5);
      std::memcpy(s.data() + g * 4, &v, 4);
    }
  }
  bool untouched() const {
    for (uint8_t b : out)
      if (b != kSentinel) return false;
    return true;
  }
};

// Runs op on this rank with x of `rows` rows (KG int8), returns the status; message in *msg.
qcollStatus run_rank(Op op, RankData& d, std::size_t rows, std::size_t out_rows, const char* group, std::string* msg,
                     DType xdt = DType::Int8) {
  harness::Tensor tx({int64_t(rows), int64_t(H)}, qcollDataType(xdt), d.x.data());
  harness::Tensor ts({int64_t(rows), int64_t(H / 128)}, QCOLL_DT_FLOAT, d.s.data());
  harness::Tensor to({int64_t(out_rows), int64_t(H)}, QCOLL_DT_FLOAT, d.out.data());
  qcollStatus st = harness::call_op(op, tx.get(), ts.get(), group, to.get());
  *msg = qcollGetRecentErrMsg();
  return st;
}

struct Outcome {
  std::vector<qcollStatus> st;
  std::vector<std::string> msg;
  std::vector<char> untouched;  // not vector<bool>: ranks write their own element concurrently
  double seconds = 0;
};

// Every rank runs its own (op, rows, xdt); returns statuses, messages, whether outputs
// stayed untouched, and the wall time.
Outcome run_mixed(harness::Group& g, const std::vector<Op>& ops, const std::vector<std::size_t>& rows,
                  const std::vector<DType>& xdts) {
  const int n = g.size();
  Outcome o;
  o.st.assign(n, -1);
  o.msg.assign(n, "");
  o.untouched.assign(n, 0);
  const auto t0 = Clock::now();
  g.run([&](int r) {
    const std::size_t out_rows = ops[r] == Op::ReduceScatter ? rows[r] / n : rows[r];
    RankData d(rows[r], out_rows, r);
    o.st[r] = run_rank(ops[r], d, rows[r], out_rows, g.name(), &o.msg[r], xdts[r]);
    o.untouched[r] = d.untouched();
  });
  o.seconds = seconds_since(t0);
  return o;
}

class Safety : public ::testing::Test {
 protected:
  void SetUp() override { setenv("QCOLL_TIMEOUT_S", "20", 1); }
  void TearDown() override { unsetenv("QCOLL_TIMEOUT_S"); }
};

void expect_all_runtime_error(const Outcome& o, const std::string& mention) {
  for (std::size_t r = 0; r < o.st.size(); ++r) {
    EXPECT_EQ(o.st[r], QCOLL_RUNTIME_ERROR) << "rank " << r << ": " << o.msg[r];
    EXPECT_NE(o.msg[r].find(mention), std::string::npos) << "rank " << r << ": " << o.msg[r];
    EXPECT_TRUE(o.untouched[r]) << "rank " << r << " wrote its output";
  }
  EXPECT_LT(o.seconds, 10.0) << "the ranks waited for the timeout instead of failing fast";
}

TEST_F(Safety, ShapeDiffersOnOneRank) {
  harness::Group g(4);
  auto o = run_mixed(g, {Op::ReduceScatter, Op::ReduceScatter, Op::ReduceScatter, Op::ReduceScatter}, {8, 16, 8, 8},
                     {DType::Int8, DType::Int8, DType::Int8, DType::Int8});
  expect_all_runtime_error(o, "x shape: [16, 1024] (rank 1) vs [8, 1024] (rank 0)");
}

TEST_F(Safety, DtypeDiffersOnOneRank) {
  harness::Group g(4);
  auto o = run_mixed(g, {Op::AllReduce, Op::AllReduce, Op::AllReduce, Op::AllReduce}, {8, 8, 8, 8},
                     {DType::Int8, DType::Int8, DType::Int8, DType::Float8E5M2});
  expect_all_runtime_error(o, "x dtype: float8_e5m2 (rank 3) vs int8 (rank 0)");
}

TEST_F(Safety, OtherOperatorOnOneRank) {
  harness::Group g(2);
  auto o = run_mixed(g, {Op::ReduceScatter, Op::AllReduce}, {8, 8}, {DType::Int8, DType::Int8});
  expect_all_runtime_error(o, "operator: QuantAllReduce (rank 1) vs QuantReduceScatter (rank 0)");
}

TEST_F(Safety, ValidationFailsOnOneRankOnly) {
  harness::Group g(4);
  std::vector<qcollStatus> st(4, -1);
  std::vector<std::string> msg(4);
  std::vector<char> untouched(4, 0);
  const auto t0 = Clock::now();
  g.run([&](int r) {
    RankData d(8, 2, r);
    harness::Tensor tx({8, int64_t(H)}, QCOLL_DT_INT8, d.x.data());
    harness::Tensor ts({8, int64_t(r == 2 ? 4 : 8)}, QCOLL_DT_FLOAT, d.s.data());  // rank 2: bad scales shape
    harness::Tensor to({2, int64_t(H)}, QCOLL_DT_FLOAT, d.out.data());
    st[r] = harness::call_op(Op::ReduceScatter, tx.get(), ts.get(), g.name(), to.get());
    msg[r] = qcollGetRecentErrMsg();
    untouched[r] = d.untouched();
  });
  EXPECT_LT(seconds_since(t0), 10.0);
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(untouched[r]) << "rank " << r;
    if (r == 2) {
      EXPECT_EQ(st[r], QCOLL_PARAM_INVALID) << msg[r];
      EXPECT_EQ(msg[r].rfind("scales: shape", 0), 0u) << msg[r];
    } else {
      EXPECT_EQ(st[r], QCOLL_RUNTIME_ERROR) << msg[r];
      EXPECT_NE(msg[r].find("rank 2 (PARAM_INVALID)"), std::string::npos) << msg[r];
    }
  }
}

TEST_F(Safety, CallAfterDisagreementSucceeds) {
  harness::Group g(2);
  auto bad = run_mixed(g, {Op::AllReduce, Op::AllReduce}, {8, 4}, {DType::Int8, DType::Int8});
  expect_all_runtime_error(bad, "x shape");
  auto good = run_mixed(g, {Op::AllReduce, Op::AllReduce}, {8, 8}, {DType::Int8, DType::Int8});
  for (int r = 0; r < 2; ++r) EXPECT_EQ(good.st[r], QCOLL_SUCCESS) << good.msg[r];
}

TEST_F(Safety, RankThatNeverArrivesBreaksTheGroup) {
  setenv("QCOLL_TIMEOUT_S", "1", 1);
  const std::string name = harness::unique_name("never");
  {
    harness::Group g(4, name);
    std::vector<double> waited(4, 0);
    std::vector<qcollStatus> st(4, -1);
    std::vector<std::string> msg(4);
    std::vector<char> untouched(4, 0);
    g.run([&](int r) {
      if (r == 3) return;  // joins, never calls
      RankData d(8, 8, r);
      const auto t0 = Clock::now();
      st[r] = run_rank(Op::AllReduce, d, 8, 8, g.name(), &msg[r]);
      waited[r] = seconds_since(t0);
      untouched[r] = d.untouched();
    });
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(st[r], QCOLL_RUNTIME_ERROR) << msg[r];
      EXPECT_TRUE(untouched[r]) << "rank " << r;
      EXPECT_GE(waited[r], 0.9) << "rank " << r;
      EXPECT_LT(waited[r], 10.0) << "rank " << r;
      EXPECT_NE(msg[r].find("3"), std::string::npos) << msg[r];  // names the missing rank
    }
    // Documented: a timeout breaks the group for good; later calls fail at once.
    setenv("QCOLL_TIMEOUT_S", "20", 1);
    auto later = run_mixed(g, {Op::AllReduce, Op::AllReduce, Op::AllReduce, Op::AllReduce}, {8, 8, 8, 8},
                           {DType::Int8, DType::Int8, DType::Int8, DType::Int8});
    expect_all_runtime_error(later, "create it again");
  }
  // Recreating the group under the same name works.
  harness::Group again(4, name);
  auto ok = run_mixed(again, {Op::AllReduce, Op::AllReduce, Op::AllReduce, Op::AllReduce}, {8, 8, 8, 8},
                      {DType::Int8, DType::Int8, DType::Int8, DType::Int8});
  for (int r = 0; r < 4; ++r) EXPECT_EQ(ok.st[r], QCOLL_SUCCESS) << ok.msg[r];
}

TEST(Timeout, ParsingAndFallback) {
  bool valid = false;
  EXPECT_EQ(qcoll::ops::parse_timeout_seconds(nullptr, &valid), 60.0);
  EXPECT_TRUE(valid);
  EXPECT_EQ(qcoll::ops::parse_timeout_seconds("2", &valid), 2.0);
  EXPECT_TRUE(valid);
  EXPECT_EQ(qcoll::ops::parse_timeout_seconds("0.25", &valid), 0.25);
  EXPECT_TRUE(valid);
  for (const char* bad : {"", "abc", "0", "-1", "2s", "nan", "inf", "1e7"}) {
    EXPECT_EQ(qcoll::ops::parse_timeout_seconds(bad, &valid), 60.0) << bad;
    EXPECT_FALSE(valid) << bad;
  }
  setenv("QCOLL_TIMEOUT_S", "0.5", 1);
  EXPECT_EQ(qcoll::ops::call_timeout(), std::chrono::milliseconds(500));
  setenv("QCOLL_TIMEOUT_S", "bogus", 1);
  EXPECT_EQ(qcoll::ops::call_timeout(), std::chrono::seconds(60));
  unsetenv("QCOLL_TIMEOUT_S");
  EXPECT_EQ(qcoll::ops::call_timeout(), std::chrono::seconds(60));
}

// ---- The staged path: a communicator that may fail mid-call ----------------------------

// Wraps a thread-group rank; claims a window and mid-call failures. A failure on one rank is
// injected into its reduce step (the executor's test-only fault hook), as a transport error.
class StagingComm final : public qcoll::comm::Communicator {
 public:
  StagingComm(std::shared_ptr<qcoll::comm::Communicator> inner, std::string name, std::size_t window)
      : inner_(std::move(inner)), name_(std::move(name)), window_(window) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const std::string& name() const override { return name_; }
  const char* transport() const override { return "test-staging"; }
  qcoll::comm::Traits traits() const override {
    return {.window_bytes = window_, .can_expose = inner_->can_expose(), .may_fail_mid_call = true};
  }
  std::size_t max_part_bytes(qcoll::comm::StepShape::Kind) const override {
    return window_ / static_cast<std::size_t>(size());
  }
  bool usable() const override { return inner_->usable(); }
  std::string broken_reason() const override { return inner_->broken_reason(); }
  qcoll::Status allgather_records(const void* mine, std::size_t bytes, void* all,
                                  qcoll::comm::Clock::time_point deadline) override {
    return inner_->allgather_records(mine, bytes, all, deadline);
  }
  qcoll::Status begin_step(const qcoll::comm::StepShape& shape, const char* what,
                           qcoll::comm::Clock::time_point deadline, Step* step) override {
    return inner_->begin_step(shape, what, deadline, step);
  }
  qcoll::comm::PartRegion region(Step s, int dest) override { return inner_->region(s, dest); }
  void expose(Step s, int dest, const qcoll::comm::PartView& part) override { inner_->expose(s, dest, part); }
  qcoll::Status publish(Step s) override { return inner_->publish(s); }
  qcoll::Status wait_step(Step s, qcoll::comm::Clock::time_point deadline) override {
    return inner_->wait_step(s, deadline);
  }
  qcoll::comm::PartView view(Step s, int src) const override { return inner_->view(s, src); }
  qcoll::Status release(Step s) override { return inner_->release(s); }
  qcoll::Status drain(qcoll::comm::Clock::time_point deadline) override { return inner_->drain(deadline); }

 private:
  std::shared_ptr<qcoll::comm::Communicator> inner_;
  std::string name_;
  std::size_t window_;
};

// The rank whose reduce step fails (in groups named "...-staged"); -1: none.
std::atomic<int> g_failing_rank{-1};
qcoll::Status injected_failure(const std::string& group, int rank, std::size_t) {
  const bool staged = group.size() > 7 && group.compare(group.size() - 7, 7, "-staged") == 0;
  if (staged && rank == g_failing_rank.load())
    return qcoll::Status::Error(qcoll::StatusCode::RuntimeError, "injected transport failure");
  return qcoll::Status::Ok();
}

struct StagedRun {
  std::vector<qcollStatus> st;
  std::vector<std::string> msg;
  std::vector<uint64_t> ws;
  std::vector<std::vector<uint8_t>> out;
  std::vector<RankData> data;
};

// n ranks over StagingComm; `workspace_of(rank, reported)` picks the workspace size passed.
template <class WsFn>
StagedRun run_staged(Op op, int n, std::size_t window, int failing_rank, WsFn workspace_of,
                     bool null_workspace = false) {
  harness::Group g(n);
  const std::string staged = std::string(g.name()) + "-staged";
  const std::size_t rows = 8, out_rows = op == Op::ReduceScatter ? rows / n : rows;
  StagedRun res;
  g_failing_rank = failing_rank;
  qcoll::ops::testing::set_reduce_fault_for_test(failing_rank >= 0 ? injected_failure : nullptr);
  res.st.assign(n, -1);
  res.msg.assign(n, "");
  res.ws.assign(n, 0);
  for (int r = 0; r < n; ++r) res.data.emplace_back(rows, out_rows, r);
  g.run([&](int r) {
    auto comm = std::make_shared<StagingComm>(qcoll::comm::resolve(g.name()), staged, window);
    ASSERT_TRUE(qcoll::comm::register_for_thread(comm).ok());
    RankData& d = res.data[r];
    harness::Tensor tx({int64_t(rows), int64_t(H)}, QCOLL_DT_INT8, d.x.data());
    harness::Tensor ts({int64_t(rows), int64_t(H / 128)}, QCOLL_DT_FLOAT, d.s.data());
    harness::Tensor to({int64_t(out_rows), int64_t(H)}, QCOLL_DT_FLOAT, d.out.data());
    uint64_t ws = 0;
    qcollOpExecutor* e = nullptr;
    auto prepare =
        op == Op::ReduceScatter ? qcollQuantReduceScatterGetWorkspaceSize : qcollQuantAllReduceGetWorkspaceSize;
    auto run = op == Op::ReduceScatter ? qcollQuantReduceScatter : qcollQuantAllReduce;
    res.st[r] = prepare(tx.get(), ts.get(), staged.c_str(), "sum", to.get(), &ws, &e);
    if (res.st[r] == QCOLL_SUCCESS) {
      res.ws[r] = ws;
      const uint64_t pass = workspace_of(r, ws);
      std::vector<uint8_t> w(ws + 64);
      res.st[r] = run(null_workspace && r == 1 ? nullptr : w.data(), pass, e, nullptr);
    }
    res.msg[r] = qcollGetRecentErrMsg();
    qcoll::comm::unregister_for_thread(staged);
  });
  qcoll::ops::testing::set_reduce_fault_for_test(nullptr);
  return res;
}

std::vector<std::vector<uint8_t>> all_inputs(const StagedRun& s, bool scales) {
  std::vector<std::vector<uint8_t>> v;
  for (const auto& d : s.data) v.push_back(scales ? d.s : d.x);
  return v;
}

TEST_F(Safety, StagedPathMatchesReference) {
  for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
    auto res = run_staged(op, 4, 1 << 20, -1, [](int, uint64_t w) { return w; });
    const std::size_t out_rows = op == Op::ReduceScatter ? 2 : 8;
    const auto want = oracle::reduce_rows(DType::Int8, DType::Float, DType::Float, all_inputs(res, false),
                                          all_inputs(res, true), H, 0, 8);
    for (int r = 0; r < 4; ++r) {
      ASSERT_EQ(res.st[r], QCOLL_SUCCESS) << res.msg[r];
      EXPECT_EQ(res.ws[r], out_rows * H * 4) << "workspace = the output's bytes";
      const std::size_t row0 = op == Op::ReduceScatter ? r * out_rows : 0;
      EXPECT_EQ(0, std::memcmp(res.data[r].out.data(), want.data() + row0 * H * 4, out_rows * H * 4)) << "rank " << r;
    }
  }
}

TEST_F(Safety, StagedWorkspaceTooSmallOnOneRank) {
  auto res = run_staged(Op::AllReduce, 4, 1 << 20, -1, [](int r, uint64_t w) { return r == 1 ? w - 1 : w; });
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(res.data[r].untouched()) << "rank " << r;
    if (r == 1) {
      EXPECT_EQ(res.st[r], QCOLL_PARAM_INVALID);
      EXPECT_EQ(res.msg[r].rfind("workspaceSize:", 0), 0u) << res.msg[r];
    } else {
      EXPECT_EQ(res.st[r], QCOLL_RUNTIME_ERROR) << res.msg[r];
    }
  }
}

TEST_F(Safety, StagedNullWorkspaceOnOneRank) {
  auto res = run_staged(
      Op::ReduceScatter, 2, 1 << 20, -1, [](int, uint64_t w) { return w; }, true);
  EXPECT_EQ(res.st[1], QCOLL_PARAM_NULLPTR) << res.msg[1];
  EXPECT_EQ(res.msg[1].rfind("workspace:", 0), 0u) << res.msg[1];
  EXPECT_EQ(res.st[0], QCOLL_RUNTIME_ERROR) << res.msg[0];
  EXPECT_TRUE(res.data[0].untouched());
  EXPECT_TRUE(res.data[1].untouched());
}

TEST_F(Safety, StagedFailureMidCallLeavesEveryOutputUntouched) {
  for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
    const auto t0 = Clock::now();
    auto res = run_staged(op, 4, 1 << 20, 2, [](int, uint64_t w) { return w; });
    EXPECT_LT(seconds_since(t0), 10.0) << "a rank waited for the timeout";
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(res.st[r], QCOLL_RUNTIME_ERROR) << res.msg[r];
      EXPECT_TRUE(res.data[r].untouched()) << "rank " << r;
      if (r != 2) {
        EXPECT_NE(res.msg[r].find("rank 2"), std::string::npos) << res.msg[r];
      }
    }
  }
}

TEST_F(Safety, WindowTooSmallForOneChunkIsRule11) {
  auto res = run_staged(Op::ReduceScatter, 2, 1000, -1, [](int, uint64_t w) { return w; });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(res.st[r], QCOLL_PARAM_INVALID) << res.msg[r];
    EXPECT_EQ(res.msg[r].rfind("HCCL_BUFFSIZE:", 0), 0u) << res.msg[r];
    EXPECT_TRUE(res.data[r].untouched());
  }
}

}  // namespace
