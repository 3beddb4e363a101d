// Both operators, every dtype combination, output dtype, group size and x rank, bit for bit
// against the plain reference of tests/oracle.hpp (NaN matches any NaN: payloads are not
// part of the contract). QuantAllReduce: every rank's output is bit-identical.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>

#include "ops_harness.hpp"
#include "ops_reference.hpp"
#include "oracle.hpp"
#include "qcoll/contract.hpp"

using harness::Op;
using qcoll::DType;

namespace {

struct Combo {
  DType x, s;
};
const Combo kCombos[] = {
    {DType::Int8, DType::Float},       {DType::HiFloat8, DType::Float},          {DType::Float8E4M3FN, DType::Float},
    {DType::Float8E5M2, DType::Float}, {DType::Float8E4M3FN, DType::Float8E8M0}, {DType::Float8E5M2, DType::Float8E8M0},
};
constexpr std::size_t H = 1024;

// Rank k's inputs: every byte code appears, plus random codes; scales with specials.
void make_inputs(const Combo& c, int k, std::size_t rows, std::vector<uint8_t>& x, std::vector<uint8_t>& scales) {
  std::mt19937 rng(1234u + 977u * static_cast<unsigned>(k) + 31u * static_cast<unsigned>(c.x) +
                   static_cast<unsigned>(c.s));
  x.resize(rows * H);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = i < 256 ? static_cast<uint8_t>((i + 37u * static_cast<unsigned>(k)) & 0xFF) : static_cast<uint8_t>(rng());
  ops_reference::fill_special_scales(rng, c.s, rows * H, k, 110, scales);
}

class OpsNumerics : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(OpsNumerics, BitExactAgainstReference) {
  const Combo c = kCombos[std::get<0>(GetParam())];
  const int n = std::get<1>(GetParam());
  const std::size_t rows = static_cast<std::size_t>(2 * n);  // BS
  harness::ContractScope contract(harness::contract_for_ranks(n));
  std::vector<std::vector<uint8_t>> xs(n), ss(n);
  for (int k = 0; k < n; ++k) make_inputs(c, k, rows, xs[k], ss[k]);
  harness::Group group(n);

  for (DType odt : {DType::Float, DType::Float16, DType::BFloat16}) {
    const std::size_t osz = qcoll::dtype_size(odt);
    const auto full_ref = oracle::reduce_rows(c.x, c.s, odt, xs, ss, H, 0, rows);
    for (int ndim : {2, 3}) {
      for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
        SCOPED_TRACE(std::string(qcoll::dtype_name(c.x)) + "/" + std::string(qcoll::dtype_name(c.s)) + " -> " +
                     std::string(qcoll::dtype_name(odt)) + ", n=" + std::to_string(n) + ", " + std::to_string(ndim) +
                     "-D, " + (op == Op::ReduceScatter ? "QuantReduceScatter" : "QuantAllReduce"));
        const std::vector<int64_t> xshape = ndim == 2 ? std::vector<int64_t>{int64_t(rows), int64_t(H)}
                                                      : std::vector<int64_t>{2, int64_t(rows / 2), int64_t(H)};
        const std::vector<int64_t> sshape = qcoll::contract::scales_shape(c.s, xshape);
        const std::size_t out_rows = op == Op::ReduceScatter ? rows / n : rows;
        const std::vector<int64_t> oshape =
            op == Op::ReduceScatter ? std::vector<int64_t>{int64_t(out_rows), int64_t(H)} : xshape;
        std::vector<std::vector<uint8_t>> outs(n, std::vector<uint8_t>(out_rows * H * osz, 0xA5));
        std::vector<qcollStatus> st(n, -1);
        group.run([&](int r) {
          harness::Tensor tx(xshape, qcollDataType(c.x), xs[r].data());
          harness::Tensor ts(sshape, qcollDataType(c.s), ss[r].data());
          harness::Tensor to(oshape, qcollDataType(odt), outs[r].data());
          st[r] = harness::call_op(op, tx.get(), ts.get(), group.name(), to.get());
        });
        for (int r = 0; r < n; ++r) {
          ASSERT_EQ(st[r], QCOLL_SUCCESS) << "rank " << r;
          ops_reference::expect_rank_output(op, r, outs[r], full_ref, out_rows, H, odt, osz);
          if (op == Op::AllReduce) {
            EXPECT_EQ(outs[r], outs[0]) << "rank " << r << " vs rank 0";
          }
        }
      }
    }
  }
}

std::string combo_name(const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
  const Combo c = kCombos[std::get<0>(info.param)];
  return std::string(qcoll::dtype_name(c.x)) + "_" + std::string(qcoll::dtype_name(c.s)) + "_n" +
         std::to_string(std::get<1>(info.param));
}
INSTANTIATE_TEST_SUITE_P(AllCombos, OpsNumerics, ::testing::Combine(::testing::Range(0, 6), ::testing::Values(2, 4, 8)),
                         combo_name);
// The extended contract's rank counts (contract.md §ext-ranks): non-powers of two and 16 for
// every combination; 64 and 128 threads (BS = 2n rows) for one KG and one MX combination.
INSTANTIATE_TEST_SUITE_P(ExtendedRanks, OpsNumerics,
                         ::testing::Combine(::testing::Range(0, 6), ::testing::Values(3, 5, 6, 16)), combo_name);
INSTANTIATE_TEST_SUITE_P(LargeRanks, OpsNumerics,
                         ::testing::Combine(::testing::Values(0, 4), ::testing::Values(64, 128)), combo_name);

// The reference itself against contract.md §vectors, so that a wrong reference cannot hide a
// wrong library.
TEST(OpsReference, DecodersMatchSpecVectors) {
  EXPECT_EQ(oracle::decode_e4m3fn(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(oracle::decode_e4m3fn(0x07), 0.013671875f);
  EXPECT_EQ(oracle::decode_e4m3fn(0x7E), 448.0f);
  EXPECT_TRUE(std::isnan(oracle::decode_e4m3fn(0x7F)));
  EXPECT_EQ(oracle::decode_e4m3fn(0xB8), -1.0f);
  EXPECT_EQ(oracle::decode_e5m2(0x03), 3 * std::ldexp(1.0f, -16));
  EXPECT_EQ(oracle::decode_e5m2(0x7B), 57344.0f);
  EXPECT_EQ(oracle::decode_e5m2(0xFC), -INFINITY);
  EXPECT_TRUE(std::isnan(oracle::decode_e5m2(0x7D)));
  EXPECT_EQ(oracle::decode_e8m0(0x00), std::ldexp(1.0f, -127));
  EXPECT_EQ(oracle::decode_e8m0(0xFE), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(oracle::decode_e8m0(0xFF)));
  const std::pair<uint8_t, float> hif8[] = {{0x08, 1.0f},
                                            {0x09, 1.125f},
                                            {0x10, 2.0f},
                                            {0x18, 0.5f},
                                            {0x20, 4.0f},
                                            {0x2F, 15.0f},
                                            {0x40, 16.0f},
                                            {0x4F, 224.0f},
                                            {0x60, 256.0f},
                                            {0x61, 384.0f},
                                            {0x70, std::ldexp(1.0f, -8)},
                                            {0x7E, std::ldexp(1.0f, -15)},
                                            {0x7F, 1.5f * std::ldexp(1.0f, -15)},
                                            {0x01, std::ldexp(1.0f, -22)},
                                            {0x07, std::ldexp(1.0f, -16)},
                                            {0x88, -1.0f},
                                            {0x6E, 32768.0f},
                                            {0x00, 0.0f}};
  for (auto [b, v] : hif8) EXPECT_EQ(oracle::decode_hif8(b), v) << int(b);
  EXPECT_TRUE(std::isnan(oracle::decode_hif8(0x80)));
  EXPECT_EQ(oracle::decode_hif8(0xEF), -INFINITY);
}

TEST(OpsReference, CastsRoundToNearestEven) {
  EXPECT_EQ(oracle::to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(oracle::to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie -> even
  EXPECT_EQ(oracle::to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(oracle::to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(oracle::to_fp16(65520.0f), 0x7C00);  // overflow after rounding
  EXPECT_EQ(oracle::to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(oracle::to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (0)
  EXPECT_EQ(oracle::to_fp16(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(oracle::to_fp16(-std::ldexp(1.0f, -14)), 0x8400);
  EXPECT_EQ(oracle::to_fp16(std::ldexp(1023.5f, -24)), 0x0400);  // rounds up to min normal
  EXPECT_EQ(oracle::to_fp16(-INFINITY), 0xFC00);
  EXPECT_EQ(oracle::to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(oracle::to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie -> even
  EXPECT_EQ(oracle::to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);
  EXPECT_EQ(oracle::to_bf16(std::bit_cast<float>(0x7F7FFFFFu)), 0x7F80);  // rounds to Inf
  EXPECT_EQ(oracle::to_bf16(NAN) & 0x7FC0, 0x7FC0);
}

}  // namespace
