// Both operators with a 4-bit x (docs/contract.md §ext-fp4) under QCOLL_CONTRACT=extended, on
// the threads transport: E2M1 and E1M2, KG and MX scales, every output dtype, 2-D and 3-D x,
// n = 2, 4, 8, bit for bit against a reference written here from the rules: x packed two
// codes a byte (the even flat index in bits 0-3, §ext-fp4-layout), each code's value from the
// value lists alone (tests/fp4_oracle.hpp), `fp32(value) · fp32(scale)`, the fp32 sum in rank
// order 0..n-1 from +0, the output casts of tests/oracle.hpp (§ext-fp4-dequantize).
// QuantAllReduce: every rank's output is bit-identical. Then the fused operators with the
// 4-bit modes against quantize-then-operate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "fp4_oracle.hpp"
#include "fused_check.hpp"
#include "fused_threads.hpp"
#include "ops/executor.hpp"
#include "ops_harness.hpp"
#include "ops_reference.hpp"
#include "oracle.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/qcoll.hpp"

using harness::Op;
using qcoll::DType;

namespace {

class ExtendedContract {
 public:
  ExtendedContract() { qcoll::set_contract(qcoll::settings::Contract::Extended); }
  ~ExtendedContract() { qcoll::set_contract(std::nullopt); }
};

struct Combo {
  const fp4_oracle::Fp4* x;
  DType s;
};
const Combo kCombos[] = {{&fp4_oracle::kE2M1, DType::Float},
                         {&fp4_oracle::kE1M2, DType::Float},
                         {&fp4_oracle::kE2M1, DType::Float8E8M0},
                         {&fp4_oracle::kE1M2, DType::Float8E8M0}};
constexpr std::size_t H = 1024;

// Code of flat element i of packed data (§ext-fp4-layout).
uint8_t code_at(const uint8_t* packed, std::size_t i) { return (packed[i / 2] >> (4 * (i % 2))) & 0xF; }

// Rank k's inputs: all 256 byte values (every pair of codes, each code in both halves),
// then random bytes; fp32 scales with specials (subnormal, 0, negative, huge), E8M0 scales
// with specials (0x00, 0xFE, NaN 0xFF, ...): tests/ops_reference.hpp, as test_ops_numerics.cpp.
void make_inputs(const Combo& c, int k, std::size_t rows, std::vector<uint8_t>& x, std::vector<uint8_t>& scales) {
  std::mt19937 rng(4321u + 977u * static_cast<unsigned>(k) + 31u * static_cast<unsigned>(c.x->type) +
                   static_cast<unsigned>(c.s));
  x.resize(rows * H / 2);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = i < 256 ? static_cast<uint8_t>((i + 37u * static_cast<unsigned>(k)) & 0xFF) : static_cast<uint8_t>(rng());
  ops_reference::fill_special_scales(rng, c.s, rows * H, k, 126, scales);
}

// Rows [row0, row0 + nrows) of the reduction, in odt.
std::vector<uint8_t> reference(const Combo& c, DType odt, const std::vector<std::vector<uint8_t>>& xs,
                               const std::vector<std::vector<uint8_t>>& ss, std::size_t row0, std::size_t nrows) {
  const std::size_t osz = qcoll::dtype_size(odt);
  std::vector<uint8_t> out(nrows * H * osz);
  for (std::size_t i = row0 * H; i < (row0 + nrows) * H; ++i) {
    volatile float acc = 0.0f;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      volatile float d = fp4_oracle::value(*c.x, code_at(xs[k].data(), i));
      d = d * oracle::scale_at(c.s, ss[k].data(), i);
      acc = acc + d;
    }
    oracle::store(odt, acc, out.data() + (i - row0 * H) * osz);
  }
  return out;
}

std::string combo_name(const Combo& c) { return std::string(c.x->name) + "_" + (c.s == DType::Float ? "kg" : "mx"); }

class OpsFp4 : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(OpsFp4, BitExactAgainstReference) {
  ExtendedContract extended;
  const Combo c = kCombos[std::get<0>(GetParam())];
  const int n = std::get<1>(GetParam());
  const std::size_t rows = static_cast<std::size_t>(2 * n);
  std::vector<std::vector<uint8_t>> xs(n), ss(n);
  for (int k = 0; k < n; ++k) make_inputs(c, k, rows, xs[k], ss[k]);
  harness::Group group(n);
  for (DType odt : {DType::Float, DType::Float16, DType::BFloat16}) {
    const std::size_t osz = qcoll::dtype_size(odt);
    const auto full = reference(c, odt, xs, ss, 0, rows);
    for (int ndim : {2, 3})
      for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
        SCOPED_TRACE(combo_name(c) + " -> " + std::string(qcoll::dtype_name(odt)) + ", n=" + std::to_string(n) + ", " +
                     std::to_string(ndim) + "-D, " +
                     (op == Op::ReduceScatter ? "QuantReduceScatter" : "QuantAllReduce"));
        const std::vector<int64_t> xshape = ndim == 2 ? std::vector<int64_t>{int64_t(rows), int64_t(H)}
                                                      : std::vector<int64_t>{2, int64_t(rows / 2), int64_t(H)};
        const std::vector<int64_t> sshape = qcoll::contract::scales_shape(c.s, xshape);
        const std::size_t out_rows = op == Op::ReduceScatter ? rows / n : rows;
        const std::vector<int64_t> oshape =
            op == Op::ReduceScatter ? std::vector<int64_t>{int64_t(out_rows), int64_t(H)} : xshape;
        std::vector<std::vector<uint8_t>> outs(n, std::vector<uint8_t>(out_rows * H * osz, 0xA5));
        std::vector<qcollStatus> st(n, -1);
        std::vector<std::string> msg(n);
        group.run([&](int r) {
          harness::Tensor tx(xshape, qcollDataType(c.x->type), xs[r].data());
          harness::Tensor ts(sshape, qcollDataType(c.s), ss[r].data());
          harness::Tensor to(oshape, qcollDataType(odt), outs[r].data());
          st[r] = harness::call_op(op, tx.get(), ts.get(), group.name(), to.get());
          msg[r] = qcollGetRecentErrMsg();
        });
        for (int r = 0; r < n; ++r) {
          ASSERT_EQ(st[r], QCOLL_SUCCESS) << "rank " << r << ": " << msg[r];
          ops_reference::expect_rank_output(op, r, outs[r], full, out_rows, H, odt, osz);
          if (op == Op::AllReduce) {
            EXPECT_EQ(outs[r], outs[0]) << "rank " << r << " vs rank 0";
          }
        }
      }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCombos, OpsFp4, ::testing::Combine(::testing::Range(0, 4), ::testing::Values(2, 4, 8)),
                         [](const auto& info) {
                           return combo_name(kCombos[std::get<0>(info.param)]) + "_n" +
                                  std::to_string(std::get<1>(info.param));
                         });

// The fused operators with the 4-bit modes (kg-e2m1, kg-e1m2, mx-e2m1, mx-e1m2): the bits of
// the public quantizer followed by the quantized operator (tests/fused_check.hpp), whose
// bits the test above pins; every input and output dtype, both operators, 2-D and 3-D, whole
// chunks and one-row chunks.
void check_fused_fp4(int n, std::size_t chunk_rows) {
  ExtendedContract extended;
  std::vector<fused::Mode> modes;
  for (const fused::Mode& m : qcoll::contract::quant_modes(qcoll::settings::Contract::Extended))
    if (qcoll::is_4bit_format(m.x)) modes.push_back(m);
  const std::vector<fused::Case> cases = fused::every_combination_2d_3d(modes, n);
  ASSERT_EQ(cases.size(), 4u * 3 * 3 * 2 * 2);
  fused::expect_cases_pass_on_threads(n, chunk_rows, cases);
}

TEST(OpsFp4Fused, Threads2) { check_fused_fp4(2, 0); }
TEST(OpsFp4Fused, Threads4) { check_fused_fp4(4, 0); }
TEST(OpsFp4Fused, Threads8) { check_fused_fp4(8, 0); }
TEST(OpsFp4Fused, Threads4OneRowChunks) { check_fused_fp4(4, 1); }

// The reference's reading of the layout: code i of the bytes {0x21, 0x43} is i + 1.
TEST(OpsFp4Reference, EvenElementsInTheLowNibble) {
  const uint8_t packed[2] = {0x21, 0x43};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(code_at(packed, i), i + 1);
  EXPECT_EQ(fp4_oracle::value(fp4_oracle::kE2M1, 0xF), -6.0f);
  EXPECT_EQ(fp4_oracle::value(fp4_oracle::kE1M2, 0x7), 1.75f);
}

}  // namespace
