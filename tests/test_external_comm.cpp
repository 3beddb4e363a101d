// Communicators over the caller's collectives (qcollCommInitExternal): the operators give
// the same bits as on the thread transport for every mode and output dtype, the fused
// operators (float in) for every mode, input and output dtype too; ranks that
// disagree, a failing or a missing peer's function make every rank fail in bounded time
// with the output untouched; argument checks; `release` is called once.
//
// The ranks are threads of this process, each with its own communicator (distinct names:
// they are registered for the process), and the "caller's library" is an in-process hub
// that implements allGather / allToAll with a rendezvous of the threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fused_check.hpp"
#include "ops/executor.hpp"
#include "ops_harness.hpp"

using harness::Op;

namespace {

// The caller's library: a rendezvous of n threads per call, bounded by timeoutMs.
class Hub {
 public:
  explicit Hub(int n) : n_(n), sends_(n), bytes_(n) {}

  // rank's part of one collective; all_to_all: recv part k = part `rank` of k's send.
  qcollStatus collective(int rank, bool all_to_all, const void* send, void* recv, uint64_t bytes, int64_t timeout_ms,
                         char* err, uint64_t err_bytes) {
    std::unique_lock<std::mutex> lk(mu_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    const uint64_t gen = gen_;
    sends_[rank] = static_cast<const uint8_t*>(send);
    bytes_[rank] = bytes;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
    } else if (!cv_.wait_until(lk, deadline, [&] { return gen_ != gen; })) {
      std::snprintf(err, err_bytes, "hub: rank %d timed out after %lld ms", rank, static_cast<long long>(timeout_ms));
      return QCOLL_RUNTIME_ERROR;
    }
    for (int k = 0; k < n_; ++k) {
      if (bytes_[k] != bytes) {
        std::snprintf(err, err_bytes, "hub: sizes differ");
        return QCOLL_RUNTIME_ERROR;
      }
      const uint8_t* src = sends_[k] + (all_to_all ? static_cast<std::size_t>(rank) * bytes : 0);
      std::memcpy(static_cast<uint8_t*>(recv) + static_cast<std::size_t>(k) * bytes, src, bytes);
    }
    // Nobody leaves (and frees its send buffer) before everybody has copied.
    const uint64_t gen2 = gen_;
    if (++copied_ == n_) {
      copied_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lk, [&] { return gen_ != gen2; });
    }
    return QCOLL_SUCCESS;
  }

 private:
  int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t gen_ = 0;
  int arrived_ = 0, copied_ = 0;
  std::vector<const uint8_t*> sends_;
  std::vector<uint64_t> bytes_;
};

// One rank's context; fail_on: fail the k-th call (1-based) of this rank, 0 never.
struct RankCtx {
  Hub* hub;
  int rank;
  int fail_on = 0;
  int calls = 0;
  std::atomic<int>* released = nullptr;
};

template <bool kAllToAll>
qcollStatus collective_fn(void* ctx, const void* send, void* recv, uint64_t bytes, int64_t timeout_ms, char* err,
                          uint64_t err_bytes) {
  auto* c = static_cast<RankCtx*>(ctx);
  if (++c->calls == c->fail_on) {
    std::snprintf(err, err_bytes, "injected failure on rank %d", c->rank);
    return QCOLL_RUNTIME_ERROR;
  }
  return c->hub->collective(c->rank, kAllToAll, send, recv, bytes, timeout_ms, err, err_bytes);
}
void release_fn(void* ctx) {
  auto* c = static_cast<RankCtx*>(ctx);
  if (c->released) ++*c->released;
}

qcollCollectives collectives(RankCtx* ctx) {
  qcollCollectives c{};
  c.ctx = ctx;
  c.allGather = collective_fn<false>;
  c.allToAll = collective_fn<true>;
  c.release = release_fn;
  return c;
}

std::string comm_name(const std::string& base, int rank) { return base + "-r" + std::to_string(rank); }

struct Combo {
  qcollDataType x, s;
};
const Combo kCombos[] = {
    {QCOLL_DT_INT8, QCOLL_DT_FLOAT},
    {QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT},
    {QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT},
    {QCOLL_DT_FLOAT8_E5M2, QCOLL_DT_FLOAT},
    {QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT8_E8M0},
    {QCOLL_DT_FLOAT8_E5M2, QCOLL_DT_FLOAT8_E8M0},
};
const qcollDataType kOuts[] = {QCOLL_DT_FLOAT, QCOLL_DT_FLOAT16, QCOLL_DT_BFLOAT16};
constexpr int64_t H = 1024;

std::size_t out_size(qcollDataType t) { return t == QCOLL_DT_FLOAT ? 4 : 2; }

// Rank k's inputs: random codes (every byte value appears) and finite random scales.
void make_inputs(const Combo& c, int k, int64_t rows, std::vector<uint8_t>& x, std::vector<uint8_t>& s) {
  std::mt19937 rng(77u + 13u * static_cast<unsigned>(k) + static_cast<unsigned>(c.x) * 5u + static_cast<unsigned>(c.s));
  x.resize(static_cast<std::size_t>(rows * H));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = i < 256 ? static_cast<uint8_t>(i) : static_cast<uint8_t>(rng());
  if (c.s == QCOLL_DT_FLOAT) {
    std::vector<float> f(static_cast<std::size_t>(rows * H / 128));
    for (auto& v : f)
      v = std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 1000.0f, static_cast<int>(rng() % 9) - 4);
    s.resize(f.size() * 4);
    std::memcpy(s.data(), f.data(), s.size());
  } else {
    s.resize(static_cast<std::size_t>(rows * H / 32));
    for (auto& v : s) v = static_cast<uint8_t>(0x78 + rng() % 10);
  }
}

std::vector<int64_t> scales_dims(const Combo& c, int64_t rows) {
  if (c.s == QCOLL_DT_FLOAT) return {rows, H / 128};
  return {rows, H / 64, 2};
}

// Runs `op` on n ranks of the thread transport (ext = false) or of external communicators
// named base-r<k> (ext = true); returns each rank's output bytes and status.
struct Outcome {
  std::vector<std::vector<uint8_t>> out;
  std::vector<qcollStatus> status;
  std::vector<std::string> message;
};

// body(rank, group name) on n ranks of the thread transport (ext = false) or of external
// communicators named base-r<k> (ext = true), one thread per rank.
template <class Body>
void on_ranks(int n, bool ext, const Body& body) {
  if (!ext) {
    harness::Group g(n);
    g.run([&](int r) { body(r, g.name()); });
    return;
  }
  Hub hub(n);
  const std::string base = harness::unique_name("ext");
  std::vector<RankCtx> ctx(n);
  std::vector<qcollComm*> comms(n, nullptr);
  for (int r = 0; r < n; ++r) {
    ctx[r] = RankCtx{&hub, r};
    const qcollCollectives cc = collectives(&ctx[r]);
    EXPECT_EQ(qcollCommInitExternal(comm_name(base, r).c_str(), n, r, &cc, &comms[r]), QCOLL_SUCCESS)
        << qcollGetRecentErrMsg();
  }
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r) ts.emplace_back([&, r] { body(r, comm_name(base, r).c_str()); });
  for (auto& t : ts) t.join();
  for (auto* cm : comms) qcollCommDestroy(cm);
}

Outcome run_ranks(int n, bool ext, Op op, const Combo& c, qcollDataType od, int64_t rows,
                  const std::vector<std::vector<uint8_t>>& xs, const std::vector<std::vector<uint8_t>>& ss) {
  Outcome o;
  o.out.resize(n);
  o.status.assign(n, -1);
  o.message.resize(n);
  const int64_t out_rows = op == Op::ReduceScatter ? rows / n : rows;
  on_ranks(n, ext, [&](int r, const char* group) {
    o.out[r].assign(static_cast<std::size_t>(out_rows * H) * out_size(od), 0xAB);
    harness::Tensor tx({rows, H}, c.x, const_cast<uint8_t*>(xs[r].data()));
    harness::Tensor ts(scales_dims(c, rows), c.s, const_cast<uint8_t*>(ss[r].data()));
    harness::Tensor to({out_rows, H}, od, o.out[r].data());
    o.status[r] = harness::call_op(op, tx.get(), ts.get(), group, to.get());
    o.message[r] = qcollGetRecentErrMsg();
  });
  return o;
}

class ExternalBits : public ::testing::TestWithParam<int> {};

TEST_P(ExternalBits, SameBitsAsThreadTransport) {
  const int n = GetParam();
  const int64_t rows = 2 * n;
  harness::ContractScope contract(harness::contract_for_ranks(n));  // 3, 16: the extended contract
  for (const Combo& c : kCombos) {
    std::vector<std::vector<uint8_t>> xs(n), ss(n);
    for (int k = 0; k < n; ++k) make_inputs(c, k, rows, xs[k], ss[k]);
    for (qcollDataType od : kOuts) {
      for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
        Outcome want = run_ranks(n, false, op, c, od, rows, xs, ss);
        Outcome got = run_ranks(n, true, op, c, od, rows, xs, ss);
        for (int r = 0; r < n; ++r) {
          ASSERT_EQ(want.status[r], QCOLL_SUCCESS) << want.message[r];
          ASSERT_EQ(got.status[r], QCOLL_SUCCESS) << got.message[r];
          EXPECT_EQ(got.out[r], want.out[r]) << "x " << c.x << " scales " << c.s << " out " << od << " rank " << r
                                             << (op == Op::ReduceScatter ? " reduce-scatter" : " all-reduce");
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ExternalBits, ::testing::Values(2, 4, 8, 3, 16));

// The fused operators on external communicators: for every mode x input x output dtype x
// operator (2-D and 3-D), the bits of the fused call on the thread transport, and of
// quantize-then-operate on the same external group (fused::check_fused_rank); in one chunk
// and in chunks of one row (several data steps in flight).
class ExternalFusedBits : public ::testing::TestWithParam<int> {};

TEST_P(ExternalFusedBits, SameBitsAsThreadTransport) {
  const int n = GetParam();
  const std::vector<fused::Case> cases = fused::every_combination(300, [n](uint32_t seed) {
    return seed % 2 ? std::vector<int64_t>{3 * n, 1024} : std::vector<int64_t>{3, n, 2048};
  });
  for (std::size_t chunk_rows : {std::size_t{0}, std::size_t{1}}) {
    qcoll::ops::testing::set_fused_chunk_rows_for_test(chunk_rows);
    // outs[ext][case][rank]; errors[rank]
    std::vector<std::vector<std::vector<uint8_t>>> outs[2];
    std::vector<std::vector<std::string>> errors(n);
    for (int ext = 0; ext < 2; ++ext) {
      outs[ext].assign(cases.size(), std::vector<std::vector<uint8_t>>(n));
      on_ranks(n, ext == 1, [&](int r, const char* group) {
        for (std::size_t i = 0; i < cases.size(); ++i) {
          const fused::Case& c = cases[i];
          std::size_t count = 1;
          for (int64_t d : fused::output_shape(c, n)) count *= static_cast<std::size_t>(d);
          std::vector<uint8_t>& out = outs[ext][i][r];
          out.assign(count * qcoll::dtype_size(c.out), 0xAB);
          const std::vector<uint8_t> input = fused::make_input(c, r);
          const fused::Outcome o = fused::run_fused(c, group, n, input.data(), out.data());
          if (o.status != QCOLL_SUCCESS) errors[r].push_back(c.text() + ": " + o.message);
          if (ext == 1) {
            const std::string e = fused::check_fused_rank(c, group, r, n);
            if (!e.empty()) errors[r].push_back("external: " + e);
          }
        }
      });
    }
    qcoll::ops::testing::set_fused_chunk_rows_for_test(0);
    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(errors[r].empty()) << errors[r].size() << " failures on rank " << r << ", first: " << errors[r][0];
      for (std::size_t i = 0; i < cases.size(); ++i)
        EXPECT_EQ(outs[1][i][r], outs[0][i][r]) << cases[i].text() << " rank " << r << " chunk rows " << chunk_rows;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ExternalFusedBits, ::testing::Values(2, 4));

// A fault case on 4 external ranks: each rank's inputs (rank 2 may use other rows), its
// function failing on its k-th call, or never calling.
struct Fault {
  int64_t rows_rank2 = 8;
  int fail_rank = -1, fail_on = 0;
  int absent_rank = -1;
};

Outcome run_fault(const Fault& f, Op op) {
  constexpr int n = 4;
  const Combo c = kCombos[0];
  Hub hub(n);
  const std::string base = harness::unique_name("extf");
  std::vector<RankCtx> ctx(n);
  std::vector<qcollComm*> comms(n, nullptr);
  std::atomic<int> released{0};
  for (int r = 0; r < n; ++r) {
    ctx[r] = RankCtx{&hub, r, r == f.fail_rank ? f.fail_on : 0, 0, &released};
    const qcollCollectives cc = collectives(&ctx[r]);
    EXPECT_EQ(qcollCommInitExternal(comm_name(base, r).c_str(), n, r, &cc, &comms[r]), QCOLL_SUCCESS)
        << qcollGetRecentErrMsg();
  }
  Outcome o;
  o.out.resize(n);
  o.status.assign(n, QCOLL_SUCCESS);
  o.message.resize(n);
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r) {
    if (r == f.absent_rank) continue;
    ts.emplace_back([&, r] {
      const int64_t rows = r == 2 ? f.rows_rank2 : 8;
      std::vector<uint8_t> x, s;
      make_inputs(c, r, rows, x, s);
      const int64_t out_rows = op == Op::ReduceScatter ? rows / n : rows;
      o.out[r].assign(static_cast<std::size_t>(out_rows * H) * 4, 0xAB);
      harness::Tensor tx({rows, H}, c.x, x.data());
      harness::Tensor tsc(scales_dims(c, rows), c.s, s.data());
      harness::Tensor to({out_rows, H}, QCOLL_DT_FLOAT, o.out[r].data());
      o.status[r] = harness::call_op(op, tx.get(), tsc.get(), comm_name(base, r).c_str(), to.get());
      o.message[r] = qcollGetRecentErrMsg();
    });
  }
  for (auto& t : ts) t.join();
  for (auto* cm : comms) EXPECT_EQ(qcollCommDestroy(cm), QCOLL_SUCCESS);
  EXPECT_EQ(released.load(), n) << "release must be called once per communicator";
  return o;
}

bool untouched(const std::vector<uint8_t>& v) {
  for (uint8_t b : v)
    if (b != 0xAB) return false;
  return true;
}

TEST(ExternalFaults, RanksThatDisagreeFailEverywhere) {
  Fault f;
  f.rows_rank2 = 16;  // rank 2 calls with another shape
  for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
    Outcome o = run_fault(f, op);
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(o.status[r], QCOLL_RUNTIME_ERROR) << r << ": " << o.message[r];
      EXPECT_NE(o.message[r].find("rank 2"), std::string::npos) << o.message[r];
      EXPECT_TRUE(untouched(o.out[r])) << r;
    }
  }
}

TEST(ExternalFaults, FailingFunctionFailsEveryRankWithItsMessage) {
  for (int fail_on : {1, 2, 3}) {  // agreement, exchange, outcome (reduce-scatter)
    Fault f;
    f.fail_rank = 1;
    f.fail_on = fail_on;
    setenv("QCOLL_TIMEOUT_S", "2", 1);
    const auto t0 = std::chrono::steady_clock::now();
    Outcome o = run_fault(f, Op::ReduceScatter);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    unsetenv("QCOLL_TIMEOUT_S");
    EXPECT_LT(secs, 10.0);
    EXPECT_NE(o.message[1].find("injected failure on rank 1"), std::string::npos) << o.message[1];
    EXPECT_NE(o.message[1].find("external transport of group"), std::string::npos) << o.message[1];
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(o.status[r], QCOLL_RUNTIME_ERROR) << "call " << fail_on << " rank " << r << ": " << o.message[r];
      EXPECT_TRUE(untouched(o.out[r])) << "call " << fail_on << " rank " << r;
    }
  }
}

TEST(ExternalFaults, MissingRankTimesOutInBoundedTime) {
  Fault f;
  f.absent_rank = 3;
  setenv("QCOLL_TIMEOUT_S", "1", 1);
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = run_fault(f, Op::AllReduce);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unsetenv("QCOLL_TIMEOUT_S");
  EXPECT_LT(secs, 6.0);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(o.status[r], QCOLL_RUNTIME_ERROR) << o.message[r];
    EXPECT_NE(o.message[r].find("timed out"), std::string::npos) << o.message[r];
    EXPECT_TRUE(untouched(o.out[r]));
  }
}

TEST(ExternalComm, BrokenAfterFailureThenEveryCallFails) {
  Hub hub(2);
  RankCtx ctx0{&hub, 0, 1}, ctx1{&hub, 1};
  const qcollCollectives c0 = collectives(&ctx0), c1 = collectives(&ctx1);
  const std::string base = harness::unique_name("extb");
  qcollComm *a = nullptr, *b = nullptr;
  ASSERT_EQ(qcollCommInitExternal(comm_name(base, 0).c_str(), 2, 0, &c0, &a), QCOLL_SUCCESS);
  ASSERT_EQ(qcollCommInitExternal(comm_name(base, 1).c_str(), 2, 1, &c1, &b), QCOLL_SUCCESS);
  int32_t rank = -1, size = -1;
  const char* transport = nullptr;
  ASSERT_EQ(qcollGroupInfo(comm_name(base, 1).c_str(), &rank, &size, &transport), QCOLL_SUCCESS);
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(size, 2);
  EXPECT_STREQ(transport, "external");
  std::vector<uint8_t> x(4 * H, 1), out(2 * H * 4, 0xAB);
  std::vector<float> s(4 * H / 128, 1.0f);
  harness::Tensor tx({4, H}, QCOLL_DT_INT8, x.data()), ts({4, H / 128}, QCOLL_DT_FLOAT, s.data()),
      to({2, H}, QCOLL_DT_FLOAT, out.data());
  setenv("QCOLL_TIMEOUT_S", "1", 1);
  // Rank 0's first call fails at once; rank 1 is not there: rank 0 alone.
  EXPECT_EQ(harness::call_op(Op::ReduceScatter, tx.get(), ts.get(), comm_name(base, 0).c_str(), to.get()),
            QCOLL_RUNTIME_ERROR);
  EXPECT_EQ(harness::call_op(Op::ReduceScatter, tx.get(), ts.get(), comm_name(base, 0).c_str(), to.get()),
            QCOLL_RUNTIME_ERROR);
  EXPECT_NE(std::string(qcollGetRecentErrMsg()).find("unusable"), std::string::npos) << qcollGetRecentErrMsg();
  unsetenv("QCOLL_TIMEOUT_S");
  EXPECT_TRUE(untouched(out));
  qcollCommDestroy(a);
  qcollCommDestroy(b);
}

TEST(ExternalComm, ArgumentChecks) {
  Hub hub(2);
  RankCtx ctx{&hub, 0};
  std::atomic<int> released{0};
  ctx.released = &released;
  qcollCollectives c = collectives(&ctx);
  qcollComm* comm = nullptr;
  EXPECT_EQ(qcollCommInitExternal("e", 2, 0, &c, nullptr), QCOLL_PARAM_NULLPTR);
  EXPECT_EQ(qcollCommInitExternal("e", 2, 0, nullptr, &comm), QCOLL_PARAM_NULLPTR);
  EXPECT_EQ(qcollCommInitExternal(nullptr, 2, 0, &c, &comm), QCOLL_PARAM_INVALID);
  EXPECT_STREQ(qcollGetRecentErrMsg(), "name: must not be null");
  EXPECT_EQ(qcollCommInitExternal("e", 0, 0, &c, &comm), QCOLL_PARAM_INVALID);
  EXPECT_STREQ(qcollGetRecentErrMsg(), "nranks: must be in [1, 1024], got 0");
  EXPECT_EQ(qcollCommInitExternal("e", 2, 2, &c, &comm), QCOLL_PARAM_INVALID);
  EXPECT_STREQ(qcollGetRecentErrMsg(), "rank: must be in [0, nranks) = [0, 2), got 2");
  qcollCollectives no_a2a = c;
  no_a2a.allToAll = nullptr;
  EXPECT_EQ(qcollCommInitExternal("e", 2, 0, &no_a2a, &comm), QCOLL_PARAM_NULLPTR);
  EXPECT_STREQ(qcollGetRecentErrMsg(), "allToAll: must not be null");
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(released.load(), 0) << "a failed create must not release the caller's context";
  const std::string name = harness::unique_name("extdup");
  ASSERT_EQ(qcollCommInitExternal(name.c_str(), 2, 0, &c, &comm), QCOLL_SUCCESS);
  qcollComm* dup = nullptr;
  EXPECT_EQ(qcollCommInitExternal(name.c_str(), 2, 1, &c, &dup), QCOLL_PARAM_INVALID);
  EXPECT_EQ(dup, nullptr);
  EXPECT_EQ(released.load(), 0);
  EXPECT_EQ(qcollCommDestroy(comm), QCOLL_SUCCESS);
  EXPECT_EQ(released.load(), 1);
  EXPECT_EQ(qcollCommDestroy(nullptr), QCOLL_SUCCESS);
}

}  // namespace
