// Soak: QCOLL_SOAK_CALLS (default 10,000) operator calls in a loop over several thread groups
// (a long soak: QCOLL_SOAK_CALLS=1000000, and QCOLL_SOAK_SECONDS to stop earlier once that
// long has passed; RSS, open file descriptors and /dev/shm printed at the start and the end;
// the process transports' soak is tests/mpi/test_mpi_soak.cpp)
// used concurrently from different threads of one process; every result is checked against
// the independent reference of tests/oracle.hpp; resident memory must not grow
// between the first tenth of the calls and the end (leaks and unbounded caches), and no
// thread may be left behind. Under AddressSanitizer, LeakSanitizer checks leaks at exit
// instead of the RSS bound (ASan's quarantine makes RSS meaningless); under ThreadSanitizer
// the bound is not checked either (its shadow memory and per-thread histories grow with what
// the threads touch, not with leaks): the Release build checks it.
//
// Groups: A (4 ranks, threads T0-T3), B (2 ranks, threads T0-T1: the same threads as A's
// ranks 0 and 1, alternating A and B calls), C (2 ranks, threads T4-T5). One loop iteration
// is one call on each group. Each group cycles through four calls (both operators, every
// x dtype, both scale modes, every output dtype) with inputs of its own, so a result that
// mixed data of two groups would not match.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fault_matrix.hpp"
#include "ops_harness.hpp"
#include "soak_stats.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define QCOLL_SOAK_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define QCOLL_SOAK_UNDER_SANITIZER 1
#endif
#endif

namespace {

using faults::RankCall;

long resident_kib() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// One group's precomputed calls: per variant and rank, inputs and the expected output.
struct GroupPlan {
  int n = 0;
  std::vector<RankCall> calls;
  std::vector<std::vector<std::vector<uint8_t>>> x, s, want;  // [variant][rank]
};

GroupPlan plan_for(int n, uint32_t seed) {
  GroupPlan p;
  p.n = n;
  RankCall a;  // e4m3 x, fp32 scales, bf16 out, reduce-scatter
  RankCall b;
  b.reduce_scatter = false;
  b.x_dtype = QCOLL_DT_INT8;
  b.out_dtype = QCOLL_DT_FLOAT;
  RankCall c;
  c.x_dtype = QCOLL_DT_FLOAT8_E5M2;
  c.scales_dtype = QCOLL_DT_FLOAT8_E8M0;
  c.out_dtype = QCOLL_DT_FLOAT16;
  RankCall d;
  d.reduce_scatter = false;
  d.x_dtype = QCOLL_DT_HIFLOAT8;
  p.calls = {a, b, c, d};
  for (auto& call : p.calls) call.rows = 2 * n;
  for (std::size_t v = 0; v < p.calls.size(); ++v) {
    p.x.emplace_back();
    p.s.emplace_back();
    p.want.emplace_back();
    for (int r = 0; r < n; ++r) {
      p.x[v].push_back(faults::make_x(r, p.calls[v], seed + v));
      p.s[v].push_back(faults::make_scales(r, p.calls[v], seed + v));
      p.want[v].push_back(faults::reference_output(p.calls[v], n, r, seed + v));
    }
  }
  return p;
}

// One call of variant v on `group` as rank r; true if it succeeded with the right result.
bool soak_call(const GroupPlan& p, std::size_t v, int r, const char* group, std::string* err) {
  const RankCall& c = p.calls[v];
  std::vector<uint8_t> out(faults::out_bytes(c, p.n), faults::kSentinel);
  const std::vector<int64_t> xsh = {c.rows, c.H}, ssh = faults::scales_shape(c), osh = faults::out_shape(c, p.n);
  harness::Tensor tx(xsh, c.x_dtype, const_cast<uint8_t*>(p.x[v][r].data()));
  harness::Tensor ts(ssh, c.scales_dtype, const_cast<uint8_t*>(p.s[v][r].data()));
  harness::Tensor to(osh, c.out_dtype, out.data());
  const qcollStatus st = harness::call_op(c.reduce_scatter ? harness::Op::ReduceScatter : harness::Op::AllReduce,
                                          tx.get(), ts.get(), group, to.get());
  if (st != QCOLL_SUCCESS) {
    *err =
        std::string(group) + " rank " + std::to_string(r) + ": " + qcollStatusName(st) + ": " + qcollGetRecentErrMsg();
    return false;
  }
  const auto odt = static_cast<qcoll::DType>(c.out_dtype);
  const std::size_t osz = qcoll::dtype_size(odt);
  const auto& want = p.want[v][r];
  for (std::size_t i = 0; i < out.size(); i += osz)
    if (!oracle::same_result(odt, out.data() + i, want.data() + i)) {
      *err = std::string(group) + " rank " + std::to_string(r) + " variant " + std::to_string(v) +
             ": wrong result at byte " + std::to_string(i);
      return false;
    }
  return true;
}

TEST(Soak, ManyCallsOverSeveralGroupsFromSeveralThreads) {
  const char* env = std::getenv("QCOLL_SOAK_CALLS");
  const long total = env ? std::atol(env) : 10000;
  ASSERT_GE(total, 30);
  const long iterations = (total + 2) / 3;  // one call on each of the three groups per iteration
  const long warm = iterations / 10;
  const double seconds = static_cast<double>(soak::env_long("QCOLL_SOAK_SECONDS", 0));
  // With a time bound, each group's first rank (T0 for A and B, T4 for C) ends the loop for
  // its group: the group's ranks are within one iteration of it, so two more keep them in step.
  std::atomic<long> stop_ab{iterations}, stop_c{iterations};

  harness::Group A(4), B(2), C(2);
  const GroupPlan pa = plan_for(4, 100), pb = plan_for(2, 200), pc = plan_for(2, 300);
  // Warm-up (worker pool threads, first-use tables) before counting threads.
  {
    std::string err;
    A.run([&](int r) { EXPECT_TRUE(soak_call(pa, 0, r, A.name(), &err)) << err; });
  }
  const int threads_before = faults::settled_thread_count();
  const soak::Stats at_start = soak::sample();
  soak::Stats after_warm;

  std::atomic<long> failures{0}, calls_done{0};
  std::atomic<long> rss_after_warm{0};
  std::string first_error;
  std::mutex err_mu;
  auto record = [&](bool ok, const std::string& err) {
    if (ok) return;
    if (failures++ == 0) {
      std::lock_guard<std::mutex> lk(err_mu);
      first_error = err;
    }
  };

  auto worker = [&](int tid) {
    // T0-T3: ranks of A; T0-T1 also ranks of B; T4-T5: ranks of C.
    qcollThreadGroup* joined[2] = {nullptr, nullptr};
    if (tid < 4) {
      EXPECT_EQ(qcollThreadGroupJoin(A.handle(), tid), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
      joined[0] = A.handle();
      if (tid < 2) {
        EXPECT_EQ(qcollThreadGroupJoin(B.handle(), tid), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
        joined[1] = B.handle();
      }
    } else {
      EXPECT_EQ(qcollThreadGroupJoin(C.handle(), tid - 4), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
      joined[0] = C.handle();
    }
    std::string err;
    std::atomic<long>& stop_at = tid < 4 ? stop_ab : stop_c;
    const auto t_begin = std::chrono::steady_clock::now();
    for (long it = 0; it < iterations && it < stop_at.load() && failures.load() == 0; ++it) {
      if (seconds > 0 && (tid == 0 || tid == 4) &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t_begin).count() >= seconds)
        stop_at = std::min(stop_at.load(), it + 2);
      const std::size_t v = static_cast<std::size_t>(it % 4);
      if (tid < 4) {
        record(soak_call(pa, v, tid, A.name(), &err), err);
        if (tid == 0) ++calls_done;
        if (tid < 2) {
          record(soak_call(pb, (v + 1) % 4, tid, B.name(), &err), err);
          if (tid == 0) ++calls_done;
        }
      } else {
        record(soak_call(pc, (v + 2) % 4, tid - 4, C.name(), &err), err);
        if (tid == 4) ++calls_done;
      }
      // The warm-up ends after the first tenth of the calls, or of the time bound.
      const bool warm_now =
          seconds > 0
              ? rss_after_warm.load() == 0 &&
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t_begin).count() >= seconds / 10
              : it == warm;
      if (tid == 0 && warm_now) {
        rss_after_warm = resident_kib();
        after_warm = soak::sample();
      }
    }
    for (qcollThreadGroup* g : joined)
      if (g != nullptr) {
        // Leave is per group name: join order does not matter.
        qcollThreadGroup* h = g;
        EXPECT_EQ(qcollThreadGroupLeave(h), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
      }
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < 6; ++t) ts.emplace_back(worker, t);
  for (auto& t : ts) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long rss_end = resident_kib();

  EXPECT_EQ(failures.load(), 0) << first_error;
  const soak::Stats at_end = soak::sample();
  EXPECT_EQ(calls_done.load(), 2 * std::min(iterations, stop_ab.load()) + std::min(iterations, stop_c.load()));
  EXPECT_EQ(at_end.fds, after_warm.fds) << "file descriptors left open";
  std::printf("soak start: %s\nsoak after the warm-up: %s\nsoak end: %s\n", at_start.text().c_str(),
              after_warm.text().c_str(), at_end.text().c_str());
  EXPECT_TRUE(faults::no_thread_left(threads_before))
      << "threads left behind: " << faults::thread_count() << ", " << threads_before << " before";
  std::printf("soak: %ld calls (3 groups, 6 threads) in %.2f s; RSS %ld KiB after %ld iterations, %ld KiB at the end\n",
              calls_done.load(), secs, rss_after_warm.load(), warm, rss_end);
#ifndef QCOLL_SOAK_UNDER_SANITIZER
  // No growth beyond allocator noise between the first tenth and the end.
  EXPECT_LE(rss_end - rss_after_warm.load(), 2048) << "resident memory grew";
#endif
}

}  // namespace
