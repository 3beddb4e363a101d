// Streams: phase two on a stream enqueues and returns; the calls of one stream run in order,
// different streams run concurrently; failures come from the synchronize, outputs untouched;
// a synchronize that runs out of time says so and the work goes on; destroying a stream waits
// for its work. Ranks are threads of this process (thread groups), so nothing here depends
// on timing for its verdict: the cases that must not deadlock are bounded by QCOLL_TIMEOUT_S.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ops_harness.hpp"
#include "process_harness.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/qcoll.hpp"

namespace {

using procs::Call;
using procs::make_call;
using procs::RankInputs;

class Streams : public ::testing::Test {
 protected:
  void SetUp() override { setenv("QCOLL_TIMEOUT_S", "20", 1); }
  void TearDown() override { unsetenv("QCOLL_TIMEOUT_S"); }
};

struct StreamHandle {
  qcollStream s = nullptr;
  StreamHandle() { EXPECT_EQ(qcollStreamCreate(&s), QCOLL_SUCCESS) << qcollGetRecentErrMsg(); }
  ~StreamHandle() { qcollStreamDestroy(s); }
  StreamHandle(const StreamHandle&) = delete;
  StreamHandle& operator=(const StreamHandle&) = delete;
};

// The reference's result (NaNs compare equal whatever their payload).
::testing::AssertionResult is_reference(const std::vector<uint8_t>& got, const Call& c, int n, int r, uint32_t seed) {
  const auto want = faults::reference_output(c, n, r, seed);
  const auto odt = static_cast<qcoll::DType>(c.out_dtype);
  const std::size_t osz = qcoll::dtype_size(odt);
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (std::size_t i = 0; i < got.size(); i += osz)
    if (!oracle::same_result(odt, got.data() + i, want.data() + i))
      return ::testing::AssertionFailure() << "element " << i / osz << " differs from the reference";
  return ::testing::AssertionSuccess();
}

bool all_sentinel(const std::vector<uint8_t>& v) {
  for (uint8_t b : v)
    if (b != faults::kSentinel) return false;
  return true;
}

TEST_F(Streams, ArgumentsAndTheNullStream) {
  EXPECT_EQ(qcollStreamCreate(nullptr), QCOLL_PARAM_NULLPTR);
  EXPECT_STREQ(qcollGetRecentErrMsg(), "stream: must not be null");
  EXPECT_EQ(qcollStreamSynchronize(nullptr, -1), QCOLL_SUCCESS);  // nothing pending on it
  EXPECT_EQ(qcollStreamDestroy(nullptr), QCOLL_SUCCESS);
  StreamHandle h;
  EXPECT_EQ(qcollStreamSynchronize(h.s, -2), QCOLL_PARAM_INVALID);
  EXPECT_STREQ(qcollGetRecentErrMsg(), "timeoutMs: must be -1 (no limit) or a number of milliseconds >= 0, got -2");
  EXPECT_EQ(qcollStreamSynchronize(h.s, 0), QCOLL_SUCCESS);  // idle
  int not_a_stream = 0;
  EXPECT_EQ(qcollStreamSynchronize(&not_a_stream, -1), QCOLL_PARAM_INVALID);
  EXPECT_EQ(
      std::string(qcollGetRecentErrMsg()).rfind("stream: must be NULL or a live stream from qcollStreamCreate", 0), 0u)
      << qcollGetRecentErrMsg();
  qcollStream gone = nullptr;
  ASSERT_EQ(qcollStreamCreate(&gone), QCOLL_SUCCESS);
  ASSERT_EQ(qcollStreamDestroy(gone), QCOLL_SUCCESS);
  EXPECT_EQ(qcollStreamDestroy(gone), QCOLL_PARAM_INVALID);
  EXPECT_EQ(qcollStreamSynchronize(gone, 0), QCOLL_PARAM_INVALID);
}

// A destroyed stream passed to phase two: that rank fails at once and its peers are told.
TEST_F(Streams, ADeadStreamInPhaseTwoFailsEveryRankAtOnce) {
  qcollStream gone = nullptr;
  ASSERT_EQ(qcollStreamCreate(&gone), QCOLL_SUCCESS);
  ASSERT_EQ(qcollStreamDestroy(gone), QCOLL_SUCCESS);
  const Call c = make_call(true, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 8, 1024);
  harness::Group g(2);
  std::vector<qcollStatus> st(2);
  std::vector<std::string> msg(2);
  std::vector<double> secs(2);
  g.run([&](int r) {
    RankInputs in(r, c, 1);
    std::vector<uint8_t> out(faults::out_bytes(c, 2), faults::kSentinel);
    const auto t0 = procs::Clock::now();
    st[r] = procs::call(c, in, 2, g.name(), out.data(), r == 1 ? gone : nullptr);
    secs[r] = procs::since(t0);
    msg[r] = qcollGetRecentErrMsg();
    EXPECT_TRUE(all_sentinel(out));
  });
  EXPECT_EQ(st[1], QCOLL_PARAM_INVALID);
  EXPECT_EQ(msg[1].rfind("stream: must be NULL or a live stream", 0), 0u) << msg[1];
  EXPECT_EQ(st[0], QCOLL_RUNTIME_ERROR) << msg[0];
  for (double s : secs) EXPECT_LT(s, 10.0);
}

// Calls of one stream run in the order they were enqueued: two calls writing the same
// output leave the second one's result; and a row of different calls (any reordering would
// pair different calls across the ranks, which the agreement refuses) all succeed.
TEST_F(Streams, OneStreamRunsInOrder) {
  constexpr int n = 4;
  const std::vector<Call> calls = {
      make_call(true, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 16, 1024),
      make_call(false, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_FLOAT, 8, 2048),
      make_call(true, QCOLL_DT_FLOAT8_E5M2, QCOLL_DT_FLOAT8_E8M0, QCOLL_DT_FLOAT16, 32, 1024),
      make_call(false, QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 4, 1024),
      make_call(true, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_FLOAT, 64, 1024),
  };
  // Same output, same shape, different inputs (seeds 1 then 2).
  const Call same = make_call(true, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_FLOAT, 16, 1024);
  harness::Group g(n);
  std::vector<std::vector<std::vector<uint8_t>>> outs(n);
  std::vector<std::vector<uint8_t>> same_out(n);
  std::vector<qcollStatus> sync(n, -1);
  g.run([&](int r) {
    StreamHandle h;
    std::vector<std::unique_ptr<RankInputs>> keep;
    same_out[r].assign(faults::out_bytes(same, n), faults::kSentinel);
    keep.push_back(std::make_unique<RankInputs>(r, same, 1));
    EXPECT_EQ(procs::call(same, *keep.back(), n, g.name(), same_out[r].data(), h.s), QCOLL_SUCCESS);
    keep.push_back(std::make_unique<RankInputs>(r, same, 2));
    EXPECT_EQ(procs::call(same, *keep.back(), n, g.name(), same_out[r].data(), h.s), QCOLL_SUCCESS);
    outs[r].resize(calls.size());
    for (std::size_t k = 0; k < calls.size(); ++k) {
      outs[r][k].assign(faults::out_bytes(calls[k], n), faults::kSentinel);
      keep.push_back(std::make_unique<RankInputs>(r, calls[k], 10 + static_cast<uint32_t>(k)));
      EXPECT_EQ(procs::call(calls[k], *keep.back(), n, g.name(), outs[r][k].data(), h.s), QCOLL_SUCCESS);
    }
    sync[r] = qcollStreamSynchronize(h.s, -1);
    if (sync[r] != QCOLL_SUCCESS) ADD_FAILURE() << "rank " << r << ": " << qcollGetRecentErrMsg();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(sync[r], QCOLL_SUCCESS);
    EXPECT_EQ(same_out[r], faults::reference_output(same, n, r, 2)) << "rank " << r << ": not the later call's result";
    EXPECT_NE(same_out[r], faults::reference_output(same, n, r, 1));
    for (std::size_t k = 0; k < calls.size(); ++k)
      EXPECT_TRUE(is_reference(outs[r][k], calls[k], n, r, 10 + static_cast<uint32_t>(k)))
          << "rank " << r << ", call " << k;
  }
}

// Two groups A and B of the same two threads. Thread 0 enqueues A then B, thread 1 enqueues B
// then A. Serialised (one queue per thread) that deadlocks: thread 0 waits in A for thread 1,
// which waits in B for thread 0. On two streams per thread both complete. The same calls on
// one stream per thread are the control: they time out (so the test can tell the two apart).
void crossed_calls(bool two_streams, std::vector<qcollStatus>& sync, std::vector<std::string>& msg,
                   std::vector<std::vector<uint8_t>>& outs) {
  const Call c = make_call(false, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 8, 1024);
  qcollThreadGroup *ga = nullptr, *gb = nullptr;
  const std::string na = harness::unique_name("cross-a"), nb = harness::unique_name("cross-b");
  ASSERT_EQ(qcollThreadGroupCreate(na.c_str(), 2, &ga), QCOLL_SUCCESS);
  ASSERT_EQ(qcollThreadGroupCreate(nb.c_str(), 2, &gb), QCOLL_SUCCESS);
  sync.assign(4, -1);
  msg.assign(4, "");
  outs.assign(4, std::vector<uint8_t>(faults::out_bytes(c, 2), faults::kSentinel));
  // The inputs outlive every rank's calls: on the thread transport a peer reads them in place,
  // and after a timeout one rank may return while the other still reads (docs/api.md §Tensors).
  std::vector<std::unique_ptr<RankInputs>> in_a, in_b;
  for (int r = 0; r < 2; ++r) {
    in_a.push_back(std::make_unique<RankInputs>(r, c, 21));
    in_b.push_back(std::make_unique<RankInputs>(r, c, 22));
  }
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      qcollThreadGroupJoin(ga, r);
      qcollThreadGroupJoin(gb, r);
      StreamHandle sa, sb;
      qcollStream first = sa.s, second = two_streams ? sb.s : sa.s;
      RankInputs& ia = *in_a[r];
      RankInputs& ib = *in_b[r];
      // out index: group * 2 + rank
      if (r == 0) {
        procs::call(c, ia, 2, na.c_str(), outs[0 * 2 + r].data(), first);
        procs::call(c, ib, 2, nb.c_str(), outs[1 * 2 + r].data(), second);
      } else {
        procs::call(c, ib, 2, nb.c_str(), outs[1 * 2 + r].data(), first);
        procs::call(c, ia, 2, na.c_str(), outs[0 * 2 + r].data(), second);
      }
      sync[2 * r] = qcollStreamSynchronize(sa.s, -1);
      msg[2 * r] = qcollGetRecentErrMsg();
      sync[2 * r + 1] = qcollStreamSynchronize(sb.s, -1);
      msg[2 * r + 1] = qcollGetRecentErrMsg();
      qcollThreadGroupLeave(ga);
      qcollThreadGroupLeave(gb);
    });
  for (auto& t : ts) t.join();
  qcollThreadGroupDestroy(ga);
  qcollThreadGroupDestroy(gb);
}

TEST_F(Streams, TwoStreamsRunConcurrently) {
  std::vector<qcollStatus> sync;
  std::vector<std::string> msg;
  std::vector<std::vector<uint8_t>> outs;
  crossed_calls(true, sync, msg, outs);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(sync[i], QCOLL_SUCCESS) << msg[i];
  const Call c = make_call(false, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 8, 1024);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(outs[0 * 2 + r], faults::reference_output(c, 2, r, 21)) << "group A, rank " << r;
    EXPECT_EQ(outs[1 * 2 + r], faults::reference_output(c, 2, r, 22)) << "group B, rank " << r;
  }
}

TEST_F(Streams, TheSameCallsOnOneStreamPerThreadDeadlockUntilTheTimeout) {
  setenv("QCOLL_TIMEOUT_S", "0.5", 1);
  std::vector<qcollStatus> sync;
  std::vector<std::string> msg;
  std::vector<std::vector<uint8_t>> outs;
  crossed_calls(false, sync, msg, outs);
  // Each thread's only stream (sa) reports a failure: a timeout, or the group that the
  // other thread's timeout broke. Once one thread gave up, the other's second call may meet
  // it, so one of the groups may have run; never both.
  EXPECT_EQ(sync[0], QCOLL_RUNTIME_ERROR) << msg[0];
  EXPECT_EQ(sync[2], QCOLL_RUNTIME_ERROR) << msg[2];
  EXPECT_TRUE(msg[0].find("timed out") != std::string::npos || msg[2].find("timed out") != std::string::npos)
      << msg[0] << " | " << msg[2];
  const bool a_untouched = all_sentinel(outs[0]) && all_sentinel(outs[1]);
  const bool b_untouched = all_sentinel(outs[2]) && all_sentinel(outs[3]);
  EXPECT_TRUE(a_untouched || b_untouched);
}

// A failure is reported by the synchronize, once, with the outputs untouched; the stream
// and the group go on working.
TEST_F(Streams, FailureAtSynchronizeOutputsUntouched) {
  harness::Group g(2);
  std::vector<qcollStatus> enq(2, -1), sync(2, -1), again(2, -1), next(2, -1);
  std::vector<std::string> msg(2);
  std::vector<std::vector<uint8_t>> outs(2);
  const Call good = make_call(true, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 16, 1024);
  std::vector<std::vector<uint8_t>> good_out(2);
  g.run([&](int r) {
    StreamHandle h;
    // The ranks disagree on the shape: a collective failure.
    const Call c = make_call(true, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, r == 0 ? 16 : 8, 1024);
    RankInputs in(r, c, 1);
    outs[r].assign(faults::out_bytes(c, 2), faults::kSentinel);
    enq[r] = procs::call(c, in, 2, g.name(), outs[r].data(), h.s);
    sync[r] = qcollStreamSynchronize(h.s, -1);
    msg[r] = qcollGetRecentErrMsg();
    again[r] = qcollStreamSynchronize(h.s, -1);  // reported once
    RankInputs in2(r, good, 2);
    good_out[r].assign(faults::out_bytes(good, 2), faults::kSentinel);
    procs::call(good, in2, 2, g.name(), good_out[r].data(), h.s);
    next[r] = qcollStreamSynchronize(h.s, -1);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(enq[r], QCOLL_SUCCESS) << "enqueueing does not run the call";
    EXPECT_EQ(sync[r], QCOLL_RUNTIME_ERROR);
    EXPECT_NE(msg[r].find("QuantReduceScatter: group '"), std::string::npos) << msg[r];
    EXPECT_NE(msg[r].find("ranks disagree on the call: x shape"), std::string::npos) << msg[r];
    EXPECT_TRUE(all_sentinel(outs[r])) << "rank " << r;
    EXPECT_EQ(again[r], QCOLL_SUCCESS);
    EXPECT_EQ(next[r], QCOLL_SUCCESS);
    EXPECT_EQ(good_out[r], faults::reference_output(good, 2, r, 2));
  }
}

// Several failures: the first is reported, the others counted in its message.
TEST_F(Streams, LaterFailuresAreCounted) {
  harness::Group g(2);
  std::vector<std::string> msg(2);
  g.run([&](int r) {
    StreamHandle h;
    const Call c = make_call(true, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, r == 0 ? 16 : 8, 1024);
    std::vector<std::unique_ptr<RankInputs>> keep;
    std::vector<std::vector<uint8_t>> outs(3, std::vector<uint8_t>(faults::out_bytes(c, 2)));
    for (int k = 0; k < 3; ++k) {
      keep.push_back(std::make_unique<RankInputs>(r, c, 1));
      procs::call(c, *keep.back(), 2, g.name(), outs[k].data(), h.s);
    }
    EXPECT_EQ(qcollStreamSynchronize(h.s, -1), QCOLL_RUNTIME_ERROR);
    msg[r] = qcollGetRecentErrMsg();
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(msg[r].find("(and 2 later calls on this stream failed too)"), std::string::npos) << msg[r];
}

// A synchronize whose time runs out says so; the call goes on and a later synchronize sees
// it through. (Rank 1 calls only after rank 0's first synchronize returned.)
TEST_F(Streams, SynchronizeTimeout) {
  harness::Group g(2);
  const Call c = make_call(false, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT, QCOLL_DT_FLOAT16, 8, 1024);
  std::atomic<bool> go{false};
  std::vector<std::vector<uint8_t>> outs(2, std::vector<uint8_t>(faults::out_bytes(c, 2), faults::kSentinel));
  qcollStatus first = -1, second = -1;
  int32_t timed_out = -1, timed_out_after = -1;
  std::string msg;
  bool untouched_while_pending = false;
  g.run([&](int r) {
    RankInputs in(r, c, 4);
    if (r == 0) {
      StreamHandle h;
      ASSERT_EQ(procs::call(c, in, 2, g.name(), outs[0].data(), h.s), QCOLL_SUCCESS);
      first = qcollStreamSynchronizeEx(h.s, 50, &timed_out);
      msg = qcollGetRecentErrMsg();
      untouched_while_pending = all_sentinel(outs[0]);
      go = true;
      second = qcollStreamSynchronizeEx(h.s, -1, &timed_out_after);
    } else {
      while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      EXPECT_EQ(procs::call(c, in, 2, g.name(), outs[1].data()), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
    }
  });
  EXPECT_EQ(first, QCOLL_RUNTIME_ERROR);
  EXPECT_EQ(timed_out, 1);
  EXPECT_EQ(msg.rfind("stream: synchronize timed out after 50 ms with 1 of its calls still to finish", 0), 0u) << msg;
  EXPECT_TRUE(untouched_while_pending);
  EXPECT_EQ(second, QCOLL_SUCCESS);
  EXPECT_EQ(timed_out_after, 0);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(outs[r], faults::reference_output(c, 2, r, 4)) << "rank " << r;
}

// Destroying a stream with work pending waits for it (rank 1 calls only after rank 0 has
// entered the destroy), then reports what a synchronize would have.
TEST_F(Streams, DestroyWaitsForPendingWork) {
  harness::Group g(2);
  const Call c = make_call(true, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 16, 2048);
  std::atomic<bool> destroying{false};
  std::vector<std::vector<uint8_t>> outs(2, std::vector<uint8_t>(faults::out_bytes(c, 2), faults::kSentinel));
  qcollStatus destroyed = -1;
  bool complete_after_destroy = false;
  g.run([&](int r) {
    RankInputs in(r, c, 6);
    if (r == 0) {
      qcollStream s = nullptr;
      ASSERT_EQ(qcollStreamCreate(&s), QCOLL_SUCCESS);
      ASSERT_EQ(procs::call(c, in, 2, g.name(), outs[0].data(), s), QCOLL_SUCCESS);
      destroying = true;
      destroyed = qcollStreamDestroy(s);
      complete_after_destroy = outs[0] == faults::reference_output(c, 2, 0, 6);
    } else {
      while (!destroying) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      EXPECT_EQ(procs::call(c, in, 2, g.name(), outs[1].data()), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
    }
  });
  EXPECT_EQ(destroyed, QCOLL_SUCCESS);
  EXPECT_TRUE(complete_after_destroy) << "the destroy returned before its call had finished";

  // A failure still pending at the destroy is its status.
  std::vector<qcollStatus> st(2, -1);
  g.run([&](int r) {
    const Call bad = make_call(true, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, r == 0 ? 16 : 8, 1024);
    RankInputs in(r, bad, 1);
    std::vector<uint8_t> out(faults::out_bytes(bad, 2), faults::kSentinel);
    qcollStream s = nullptr;
    qcollStreamCreate(&s);
    procs::call(bad, in, 2, g.name(), out.data(), s);
    st[r] = qcollStreamDestroy(s);
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(st[r], QCOLL_RUNTIME_ERROR);
}

// C++: qcoll::Stream and the overloads that take one.
TEST_F(Streams, CppStream) {
  qcoll::ThreadGroup group(harness::unique_name("cpp-stream"), 2);
  const Call c = make_call(true, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 8, 1024);
  std::vector<std::vector<uint8_t>> outs(2, std::vector<uint8_t>(faults::out_bytes(c, 2)));
  std::vector<std::string> errors(2);
  std::vector<int> timed_out(2, 0);  // not vector<bool>: two threads write it
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      try {
        auto member = group.join(r);
        qcoll::Stream stream;
        RankInputs in(r, c, 8);
        auto x = qcoll::view(in.x, qcoll::DType::Float8E4M3FN, {8, 1024});
        auto s = qcoll::view(in.scales, qcoll::DType::Float, {8, 8});
        qcoll::quant_reduce_scatter(x, s, group, qcoll::view(outs[r], qcoll::DType::BFloat16, {4, 1024}), stream);
        stream.synchronize();
        // Failure at synchronize as an exception (shape disagreement between the ranks).
        std::vector<uint8_t> o2(r == 0 ? outs[r].size() : outs[r].size() / 2);
        RankInputs in2(
            r, r == 0 ? c : make_call(true, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 4, 1024), 8);
        const int64_t rows = r == 0 ? 8 : 4;
        qcoll::quant_reduce_scatter(qcoll::view(in2.x, qcoll::DType::Float8E4M3FN, {rows, 1024}),
                                    qcoll::view(in2.scales, qcoll::DType::Float, {rows, 8}), group,
                                    qcoll::view(o2, qcoll::DType::BFloat16, {rows / 2, 1024}), stream);
        try {
          stream.synchronize();
          errors[r] = "no exception for a failed call";
        } catch (const qcoll::Error& e) {
          if (e.code() != qcoll::StatusCode::RuntimeError) errors[r] = e.what();
        }
        // A bounded synchronize on an idle stream.
        timed_out[r] = !stream.synchronize(std::chrono::milliseconds(0));
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : ts) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_FALSE(timed_out[r]);
    EXPECT_EQ(outs[r], faults::reference_output(c, 2, r, 8)) << "rank " << r;
  }
}

}  // namespace
