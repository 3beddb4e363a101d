// The C++ API (qcoll.hpp): views, ThreadGroup/Membership, throwing and try_ operators.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "oracle.hpp"
#include "qcoll/qcoll.hpp"

using qcoll::DType;

namespace {

TEST(CppApi, ViewChecksTheByteSize) {
  std::vector<float> v(16);
  auto t = qcoll::view(v, DType::Float, {4, 4});
  EXPECT_EQ(t.data, v.data());
  EXPECT_EQ(t.nbytes(), 64u);
  const std::vector<uint8_t> c(32);
  EXPECT_EQ(qcoll::view(c, DType::Float16, {16}).numel(), 16u);
  EXPECT_EQ(qcoll::view(std::span<float>(v), DType::BFloat16, {2, 16}).numel(), 32u);
  try {
    (void)qcoll::view(v, DType::Float, {4, 5});
    ADD_FAILURE() << "no throw";
  } catch (const qcoll::Error& e) {
    EXPECT_EQ(e.code(), qcoll::StatusCode::ParamInvalid);
    EXPECT_NE(std::string(e.what()).find("PARAM_INVALID: view:"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)qcoll::view(v, DType::Float, {-4, -4}), qcoll::Error);
}

TEST(CppApi, ReduceScatterOutputShape) {
  EXPECT_EQ(qcoll::reduce_scatter_output_shape({8, 1024}, 4), (std::vector<int64_t>{2, 1024}));
  EXPECT_EQ(qcoll::reduce_scatter_output_shape({2, 4, 2048}, 8), (std::vector<int64_t>{1, 2048}));
  EXPECT_THROW(qcoll::reduce_scatter_output_shape({6, 1024}, 4), qcoll::Error);
  EXPECT_THROW(qcoll::reduce_scatter_output_shape({1024}, 2), qcoll::Error);
}

TEST(CppApi, ThreadGroupErrorsThrow) {
  qcoll::ThreadGroup g("cpp-errors", 2);
  EXPECT_EQ(g.name(), "cpp-errors");
  EXPECT_EQ(g.size(), 2);
  try {
    qcoll::ThreadGroup dup("cpp-errors", 2);
    ADD_FAILURE() << "no throw";
  } catch (const qcoll::Error& e) {
    EXPECT_EQ(e.code(), qcoll::StatusCode::ParamInvalid);
    EXPECT_EQ(e.message().rfind("name:", 0), 0u) << e.message();
  }
  EXPECT_THROW(qcoll::ThreadGroup(std::string(128, 'x'), 2), qcoll::Error);
  EXPECT_THROW((void)g.join(5), qcoll::Error);
  {
    auto m = g.join(0);
    EXPECT_EQ(m.rank(), 0);
    EXPECT_THROW((void)g.join(1), qcoll::Error);  // this thread already joined
  }
  auto again = g.join(1);  // left when m went away
  EXPECT_EQ(again.rank(), 1);
}

// Both operators through the C++ API on 2 ranks, E4M3FN/E8M0 -> bfloat16, checked against
// the reference; a call with a bad reduce_op throws on every rank; try_ returns the status.
TEST(CppApi, OperatorsMatchReference) {
  constexpr int n = 2;
  constexpr int64_t BS = 4, H = 1024;
  std::vector<std::vector<uint8_t>> x(n, std::vector<uint8_t>(BS * H)), s(n, std::vector<uint8_t>(BS * H / 32));
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < x[r].size(); ++i) x[r][i] = static_cast<uint8_t>(i * 13 + r * 101);
    for (std::size_t i = 0; i < s[r].size(); ++i) s[r][i] = static_cast<uint8_t>(0x78 + (i + r) % 12);
  }
  std::vector<std::vector<uint16_t>> rs(n, std::vector<uint16_t>(BS / n * H)), ar(n, std::vector<uint16_t>(BS * H));
  std::vector<qcoll::Status> bad(n), ok(n);
  std::vector<int> threw(n, 0);
  qcoll::ThreadGroup g("cpp-ops", n);
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      auto m = g.join(r);
      auto xv = qcoll::view(x[r], DType::Float8E4M3FN, {BS, H});
      auto sv = qcoll::view(s[r], DType::Float8E8M0, {BS, H / 64, 2});
      qcoll::quant_reduce_scatter(xv, sv, g, qcoll::view(rs[r], DType::BFloat16, {BS / n, H}));
      ok[r] = qcoll::try_quant_all_reduce(xv, sv, g.name(), qcoll::view(ar[r], DType::BFloat16, {BS, H}));
      bad[r] = qcoll::try_quant_all_reduce(xv, sv, g.name(), qcoll::view(ar[r], DType::BFloat16, {BS, H}), "max");
      try {
        qcoll::quant_all_reduce(xv, sv, g, qcoll::view(ar[r], DType::BFloat16, {BS, H}), "prod");
      } catch (const qcoll::Error& e) {
        threw[r] = e.code() == qcoll::StatusCode::ParamInvalid;
      }
    });
  for (auto& t : ts) t.join();
  const auto want = oracle::reduce_rows(DType::Float8E4M3FN, DType::Float8E8M0, DType::BFloat16, x, s, H, 0, BS);
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(ok[r].ok()) << ok[r].message;
    EXPECT_EQ(bad[r].code, qcoll::StatusCode::ParamInvalid);
    EXPECT_EQ(bad[r].message.rfind("reduceOp:", 0), 0u) << bad[r].message;
    EXPECT_TRUE(threw[r]);
    for (std::size_t i = 0; i < rs[r].size(); ++i)
      ASSERT_TRUE(oracle::same_result(DType::BFloat16, reinterpret_cast<const uint8_t*>(&rs[r][i]),
                                      want.data() + (r * rs[r].size() + i) * 2))
          << "rank " << r << " i " << i;
    for (std::size_t i = 0; i < ar[r].size(); ++i)
      ASSERT_TRUE(
          oracle::same_result(DType::BFloat16, reinterpret_cast<const uint8_t*>(&ar[r][i]), want.data() + i * 2))
          << "rank " << r << " i " << i;
  }
}

}  // namespace
