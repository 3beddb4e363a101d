// Decoding of all 256 codes of each 8-bit format against independent references
// (tests/oracle.hpp), the contract.md §vectors decode vectors and the decode tables.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "oracle.hpp"
#include "qcoll/formats.hpp"

namespace f = qcoll::formats;
using oracle::kInf;
using oracle::kNaN;
using oracle::p2;
using qcoll::DType;

namespace {

// Exact comparison: same value bit for bit (so -0 != +0), or both NaN.
::testing::AssertionResult SameValue(float got, double want) {
  if (std::isnan(want)) {
    if (std::isnan(got)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got " << got << ", want NaN";
  }
  const float wantf = static_cast<float>(want);
  if (static_cast<double>(wantf) != want)
    return ::testing::AssertionFailure() << "reference " << want << " is not exact in fp32";
  if (std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(wantf)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << std::hexfloat << got << ", want " << wantf;
}

template <class Ref>
void check_all_codes(DType t, float (*decode)(uint8_t), Ref ref) {
  const float* table = f::decode_table(t);
  ASSERT_NE(table, nullptr);
  for (unsigned b = 0; b < 256; ++b) {
    const double want = ref(b);
    EXPECT_TRUE(SameValue(decode(static_cast<uint8_t>(b)), want)) << "code 0x" << std::hex << b;
    EXPECT_TRUE(SameValue(f::decode8(t, static_cast<uint8_t>(b)), want)) << "decode8 0x" << std::hex << b;
    EXPECT_TRUE(SameValue(table[b], want)) << "table 0x" << std::hex << b;
  }
}

}  // namespace

TEST(FormatsDecode, Int8AllCodes) { check_all_codes(DType::Int8, f::decode_int8, oracle::decode_int8); }
TEST(FormatsDecode, E4M3FNAllCodes) {
  check_all_codes(DType::Float8E4M3FN, f::decode_float8_e4m3fn, oracle::decode_e4m3fn);
}
TEST(FormatsDecode, E5M2AllCodes) { check_all_codes(DType::Float8E5M2, f::decode_float8_e5m2, oracle::decode_e5m2); }
TEST(FormatsDecode, E8M0AllCodes) { check_all_codes(DType::Float8E8M0, f::decode_float8_e8m0, oracle::decode_e8m0); }
TEST(FormatsDecode, HiF8AllCodes) { check_all_codes(DType::HiFloat8, f::decode_hifloat8, oracle::decode_hif8); }

TEST(FormatsDecode, SpecialCodes) {
  // E4M3FN: only S.1111.111 is NaN, signed zeros, no infinity.
  int e4m3_nan = 0;
  for (unsigned b = 0; b < 256; ++b) {
    const float v = f::decode_float8_e4m3fn(static_cast<uint8_t>(b));
    EXPECT_FALSE(std::isinf(v));
    if (std::isnan(v)) ++e4m3_nan;
  }
  EXPECT_EQ(e4m3_nan, 2);
  EXPECT_TRUE(std::isnan(f::decode_float8_e4m3fn(0x7F)));
  EXPECT_TRUE(std::isnan(f::decode_float8_e4m3fn(0xFF)));
  EXPECT_TRUE(std::signbit(f::decode_float8_e4m3fn(0x80)));
  EXPECT_EQ(f::decode_float8_e4m3fn(0x80), 0.0f);
  // E5M2: +-Inf and 6 NaNs.
  EXPECT_EQ(f::decode_float8_e5m2(0x7C), INFINITY);
  EXPECT_EQ(f::decode_float8_e5m2(0xFC), -INFINITY);
  for (unsigned b : {0x7Du, 0x7Eu, 0x7Fu, 0xFDu, 0xFEu, 0xFFu})
    EXPECT_TRUE(std::isnan(f::decode_float8_e5m2(static_cast<uint8_t>(b)))) << b;
  EXPECT_TRUE(std::signbit(f::decode_float8_e5m2(0x80)));
  // E8M0: 0xFF NaN; 0x00 is the fp32 subnormal 2^-127, not flushed.
  EXPECT_TRUE(std::isnan(f::decode_float8_e8m0(0xFF)));
  EXPECT_EQ(std::fpclassify(f::decode_float8_e8m0(0x00)), FP_SUBNORMAL);
  // HiF8: one zero, one NaN, +-Inf.
  int hif8_nan = 0, hif8_zero = 0;
  for (unsigned b = 0; b < 256; ++b) {
    const float v = f::decode_hifloat8(static_cast<uint8_t>(b));
    if (std::isnan(v)) ++hif8_nan;
    if (v == 0.0f) ++hif8_zero;
  }
  EXPECT_EQ(hif8_nan, 1);
  EXPECT_EQ(hif8_zero, 1);
  EXPECT_TRUE(std::isnan(f::decode_hifloat8(0x80)));
  EXPECT_EQ(f::decode_hifloat8(0x6F), INFINITY);
  EXPECT_EQ(f::decode_hifloat8(0xEF), -INFINITY);
  EXPECT_FALSE(std::signbit(f::decode_hifloat8(0x00)));
}

TEST(FormatsDecode, Spec6Vectors) {
  struct V {
    DType t;
    unsigned code;
    double value;
  };
  const V vectors[] = {
      {DType::Float8E4M3FN, 0x01, p2(-9)},
      {DType::Float8E4M3FN, 0x07, 0.013671875},
      {DType::Float8E4M3FN, 0x08, p2(-6)},
      {DType::Float8E4M3FN, 0x38, 1.0},
      {DType::Float8E4M3FN, 0x7E, 448},
      {DType::Float8E4M3FN, 0x7F, kNaN},
      {DType::Float8E4M3FN, 0xB8, -1},
      {DType::Float8E4M3FN, 0xFE, -448},
      {DType::Float8E5M2, 0x01, p2(-16)},
      {DType::Float8E5M2, 0x03, 3 * p2(-16)},
      {DType::Float8E5M2, 0x04, p2(-14)},
      {DType::Float8E5M2, 0x3C, 1.0},
      {DType::Float8E5M2, 0x7B, 57344},
      {DType::Float8E5M2, 0x7C, kInf},
      {DType::Float8E5M2, 0x7D, kNaN},
      {DType::Float8E5M2, 0xFC, -kInf},
      {DType::Float8E8M0, 0x00, p2(-127)},
      {DType::Float8E8M0, 0x7F, 1.0},
      {DType::Float8E8M0, 0x80, 2.0},
      {DType::Float8E8M0, 0xFE, p2(127)},
      {DType::Float8E8M0, 0xFF, kNaN},
      // HiF8 examples of contract.md §vectors
      {DType::HiFloat8, 0x08, 1.0},
      {DType::HiFloat8, 0x09, 1.125},
      {DType::HiFloat8, 0x10, 2.0},
      {DType::HiFloat8, 0x18, 0.5},
      {DType::HiFloat8, 0x20, 4.0},
      {DType::HiFloat8, 0x2F, 15.0},
      {DType::HiFloat8, 0x40, 16.0},
      {DType::HiFloat8, 0x4F, 224},
      {DType::HiFloat8, 0x60, 256},
      {DType::HiFloat8, 0x61, 384},
      {DType::HiFloat8, 0x70, p2(-8)},
      {DType::HiFloat8, 0x7E, p2(-15)},
      {DType::HiFloat8, 0x7F, 1.5 * p2(-15)},
      {DType::HiFloat8, 0x01, p2(-22)},
      {DType::HiFloat8, 0x07, p2(-16)},
      {DType::HiFloat8, 0x88, -1.0},
      {DType::HiFloat8, 0x6E, 32768},
      {DType::HiFloat8, 0x00, 0.0},
      {DType::HiFloat8, 0x80, kNaN},
      {DType::HiFloat8, 0x6F, kInf},
      {DType::HiFloat8, 0xEF, -kInf},
  };
  for (const auto& v : vectors)
    EXPECT_TRUE(SameValue(f::decode8(v.t, static_cast<uint8_t>(v.code)), v.value))
        << qcoll::dtype_name(v.t) << " 0x" << std::hex << v.code;
}

TEST(FormatsDecode, MaxFiniteAndNonFormats) {
  EXPECT_EQ(f::max_finite(DType::Float8E4M3FN), 448.0f);
  EXPECT_EQ(f::max_finite(DType::Float8E5M2), 57344.0f);
  EXPECT_EQ(f::max_finite(DType::HiFloat8), 32768.0f);
  EXPECT_EQ(f::max_finite(DType::Int8), 127.0f);
  EXPECT_EQ(f::max_finite(DType::Float8E8M0), static_cast<float>(p2(127)));
  EXPECT_EQ(f::decode_table(DType::Float16), nullptr);
  EXPECT_EQ(f::decode_table(DType::Float), nullptr);
  EXPECT_TRUE(std::isnan(f::decode8(DType::Float16, 1)));
  EXPECT_EQ(f::encode8(DType::Float, 1.0f), 0);
  // The table is stable: the same pointer each call.
  EXPECT_EQ(f::decode_table(DType::HiFloat8), f::decode_table(DType::HiFloat8));
}
