// Threads inside a rank (QCOLL_RANK_THREADS): the result must not depend on the count.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "ops/rank_threads.hpp"
#include "qcoll/qcoll.hpp"

namespace {

using qcoll::DType;

TEST(RankThreads, Parsing) {
  bool valid = false;
  EXPECT_EQ(qcoll::ops::parse_rank_threads(nullptr, &valid), 0);
  EXPECT_TRUE(valid);
  EXPECT_EQ(qcoll::ops::parse_rank_threads("auto", &valid), 0);
  EXPECT_TRUE(valid);
  EXPECT_EQ(qcoll::ops::parse_rank_threads("3", &valid), 3);
  EXPECT_TRUE(valid);
  EXPECT_EQ(qcoll::ops::parse_rank_threads("64", &valid), 64);
  for (const char* bad : {"-1", "65", "2x", "", "many"}) {
    EXPECT_EQ(qcoll::ops::parse_rank_threads(bad, &valid), 0) << bad;
    EXPECT_FALSE(valid) << bad;
  }
}

TEST(RankThreads, AutoSharesTheCoresAmongLocalRanks) {
  unsetenv("QCOLL_RANK_THREADS");
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(qcoll::ops::rank_threads(1), cores);
  EXPECT_EQ(qcoll::ops::rank_threads(cores * 4), 1);
  setenv("QCOLL_RANK_THREADS", "5", 1);
  EXPECT_EQ(qcoll::ops::rank_threads(8), 5);
  unsetenv("QCOLL_RANK_THREADS");
}

// Runs a 2-rank reduce-scatter and an all-reduce (MX E4M3 -> bf16 and KG HiF8 -> fp32) on
// random bytes (every code, NaN and subnormal codes included) and returns all outputs.
std::vector<uint8_t> run_ops(DType xdt, DType sdt, DType odt) {
  constexpr int n = 2;
  constexpr std::size_t BS = 64, H = 1024;
  const std::size_t group = sdt == DType::Float ? 128 : 32;
  const std::size_t osz = qcoll::dtype_size(odt);
  std::mt19937 rng(7);
  std::vector<std::vector<uint8_t>> x(n, std::vector<uint8_t>(BS * H));
  std::vector<std::vector<uint8_t>> s(n, std::vector<uint8_t>(BS * H / group * qcoll::dtype_size(sdt)));
  for (int r = 0; r < n; ++r) {
    for (auto& b : x[r]) b = static_cast<uint8_t>(rng());
    if (sdt == DType::Float) {
      auto* f = reinterpret_cast<float*>(s[r].data());
      for (std::size_t i = 0; i < BS * H / group; ++i)
        f[i] = std::ldexp(float(rng() % 1000) / 1000.0f, int(rng() % 40) - 20);
    } else {
      for (auto& b : s[r]) b = static_cast<uint8_t>(110 + rng() % 30);
    }
  }
  std::vector<std::vector<uint8_t>> rs(n, std::vector<uint8_t>(BS / n * H * osz));
  std::vector<std::vector<uint8_t>> ar(n, std::vector<uint8_t>(BS * H * osz));
  qcoll::ThreadGroup g(std::string("rank-threads-") + std::to_string(rng()), n);
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      auto member = g.join(r);
      const std::vector<int64_t> sshape = sdt == DType::Float ? std::vector<int64_t>{int64_t(BS), int64_t(H / 128)}
                                                              : std::vector<int64_t>{int64_t(BS), int64_t(H / 64), 2};
      qcoll::TensorView xv{x[r].data(), xdt, {int64_t(BS), int64_t(H)}};
      qcoll::TensorView sv{s[r].data(), sdt, sshape};
      qcoll::quant_reduce_scatter(xv, sv, g, qcoll::TensorView{rs[r].data(), odt, {int64_t(BS / n), int64_t(H)}});
      qcoll::quant_all_reduce(xv, sv, g, qcoll::TensorView{ar[r].data(), odt, {int64_t(BS), int64_t(H)}});
    });
  for (auto& t : ts) t.join();
  std::vector<uint8_t> all;
  for (int r = 0; r < n; ++r) {
    all.insert(all.end(), rs[r].begin(), rs[r].end());
    all.insert(all.end(), ar[r].begin(), ar[r].end());
  }
  return all;
}

TEST(RankThreads, SameBitsForEveryThreadCount) {
  for (auto [xdt, sdt, odt] : {std::tuple{DType::Float8E4M3FN, DType::Float8E8M0, DType::BFloat16},
                               std::tuple{DType::HiFloat8, DType::Float, DType::Float},
                               std::tuple{DType::Int8, DType::Float, DType::Float16}}) {
    setenv("QCOLL_RANK_THREADS", "1", 1);
    const std::vector<uint8_t> one = run_ops(xdt, sdt, odt);
    for (const char* t : {"2", "3", "4"}) {
      setenv("QCOLL_RANK_THREADS", t, 1);
      EXPECT_EQ(run_ops(xdt, sdt, odt), one) << "QCOLL_RANK_THREADS=" << t << " x " << qcoll::dtype_name(xdt);
    }
  }
  unsetenv("QCOLL_RANK_THREADS");
}

}  // namespace
