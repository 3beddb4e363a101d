// dequantize(): d = fp32(decode(q)) * fp32(scale), one fp32 multiply, for every code and a
// spread of scales, against the test's own decoders.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "oracle.hpp"
#include "qcoll/quant.hpp"

using qcoll::DType;
using namespace oracle;
namespace qq = qcoll::quant;

namespace {

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || f32_bits(a) == f32_bits(b); }

}  // namespace

TEST(Dequantize, KgEveryCodeMatchesDecodeTimesScale) {
  const std::size_t rows = 4, H = 256;  // 8 groups
  std::vector<uint8_t> q(rows * H);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<uint8_t>(i * 7 + i / 256);
  const float scales[8] = {
      2.0f, 0.0f, 1.0f / 3.0f, std::ldexp(1.0f, -140), 3.0e38f / 448.0f, -1.5f, std::numeric_limits<float>::infinity(),
      1e-3f};
  for (DType t : {DType::Int8, DType::Float8E4M3FN, DType::Float8E5M2, DType::HiFloat8}) {
    std::vector<float> out(q.size(), 12345.0f);
    ASSERT_TRUE(qq::dequantize(q.data(), scales, rows, H, t, DType::Float, out.data()));
    for (std::size_t i = 0; i < q.size(); ++i) {
      const float want = static_cast<float>(decode(t, q[i])) * scales[i / 128];
      ASSERT_TRUE(same_float(out[i], want)) << qcoll::dtype_name(t) << " code " << int(q[i]) << " scale "
                                            << scales[i / 128] << " got " << out[i] << " want " << want;
    }
  }
}

TEST(Dequantize, MxEveryCodeAndScaleByte) {
  const std::size_t rows = 2, H = 4096;  // 256 blocks: every E8M0 byte once
  std::vector<uint8_t> q(rows * H), s(rows * H / 32);
  std::mt19937 gen(1);
  for (auto& b : q) b = static_cast<uint8_t>(gen());
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(i);
  for (DType t : {DType::Float8E4M3FN, DType::Float8E5M2}) {
    std::vector<float> out(q.size());
    ASSERT_TRUE(qq::dequantize(q.data(), s.data(), rows, H, t, DType::Float8E8M0, out.data()));
    for (std::size_t i = 0; i < q.size(); ++i) {
      // 2^(e-127) is exact in fp32 for e = 0..254 (0x00 is the subnormal 2^-127).
      const float scale = static_cast<float>(decode_e8m0(s[i / 32]));
      const float want = static_cast<float>(decode(t, q[i])) * scale;
      ASSERT_TRUE(same_float(out[i], want))
          << qcoll::dtype_name(t) << " code " << int(q[i]) << " scale byte " << int(s[i / 32]);
    }
    // the subnormal scale 2^-127 is honoured, not flushed: 1.0 * 2^-127
    EXPECT_EQ(out[0] == 0.0f, decode(t, q[0]) == 0.0);
  }
}

TEST(Dequantize, BadArguments) {
  std::vector<uint8_t> q(256, 0x38);
  std::vector<float> s(2, 1.0f);
  std::vector<float> out(256, 7.0f);
  EXPECT_FALSE(qq::dequantize(q.data(), s.data(), 1, 200, DType::Int8, DType::Float, out.data()));
  EXPECT_FALSE(qq::dequantize(q.data(), s.data(), 1, 256, DType::Int8, DType::Float8E8M0, out.data()));
  EXPECT_FALSE(qq::dequantize(q.data(), s.data(), 1, 256, DType::Int8, DType::Float16, out.data()));
  EXPECT_FALSE(qq::dequantize(q.data(), s.data(), 1, 256, DType::Float, DType::Float, out.data()));
  EXPECT_FALSE(qq::dequantize(nullptr, s.data(), 1, 256, DType::Int8, DType::Float, out.data()));
  EXPECT_FALSE(qq::dequantize(q.data(), nullptr, 1, 256, DType::Int8, DType::Float, out.data()));
  EXPECT_FALSE(qq::dequantize(q.data(), s.data(), 1, 256, DType::Int8, DType::Float, nullptr));
  for (float v : out) ASSERT_EQ(v, 7.0f);
}
