// FLOAT16 and BFLOAT16 codecs. FP16 against the compiler's _Float16 conversion (an
// independent implementation: libgcc / hardware); BF16 against the oracle's rounding
// and decoder (tests/oracle.hpp, double arithmetic), since GCC 12 has no arithmetic __bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "oracle.hpp"
#include "qcoll/formats.hpp"

namespace f = qcoll::formats;

namespace {

float from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}
uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04X", v);
  return buf;
}

// Inputs that stress rounding: every fp32 exponent, with the low (dropped) mantissa bits
// at and around the halfway points of both formats, plus random bit patterns.
std::vector<uint32_t> test_inputs(int random_count) {
  std::vector<uint32_t> in;
  const uint32_t lows[] = {0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0xFFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000, 0x5000};
  const uint32_t highs[] = {0, 0x10000, 0x20000, 0x7F0000, 0x7E0000, 0x3FE000, 0x7FE000, 0x002000, 0x004000, 0x400000};
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t hi : highs)
      for (uint32_t lo : lows)
        for (uint32_t sign : {0u, 0x80000000u}) in.push_back(sign | (e << 23) | ((hi | lo) & 0x7FFFFFu));
  std::mt19937 rng(2024);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < random_count; ++i) in.push_back(any(rng));
  // fp16-range focused random values (exponents -30..17)
  std::uniform_int_distribution<uint32_t> exp_dist(127 - 30, 127 + 17);
  for (int i = 0; i < random_count / 4; ++i) in.push_back((any(rng) & 0x807FFFFFu) | (exp_dist(rng) << 23));
  return in;
}

#ifdef __FLT16_MAX__
uint16_t compiler_fp16(float x) {
  const _Float16 h = static_cast<_Float16>(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
#endif

}  // namespace

#ifdef __FLT16_MAX__
TEST(FormatsFloat16, EncodeAgainstCompiler) {
  const auto inputs = test_inputs(1000000);
  ASSERT_GE(inputs.size(), 1000000u);
  size_t nan_count = 0;
  for (uint32_t b : inputs) {
    const float x = from_bits(b);
    const uint16_t got = f::encode_float16(x);
    if (std::isnan(x)) {
      ++nan_count;
      // documented rule: quiet NaN, sign kept
      ASSERT_EQ(got & 0x7E00u, 0x7E00u) << hex(b);
      ASSERT_EQ(got & 0x8000u, (b >> 16) & 0x8000u) << hex(b);
      continue;
    }
    ASSERT_EQ(hex(got), hex(compiler_fp16(x))) << std::hexfloat << x << " bits " << hex(b);
  }
  EXPECT_GT(nan_count, 0u);
}

TEST(FormatsFloat16, Boundaries) {
  const float cases[] = {65504.0f, 65519.99f,       65520.0f,   65536.0f, INFINITY,       -INFINITY,     0x1p-24f,
                         0x1p-25f, 0x1.000002p-25f, 0x1.8p-24f, 0x1p-14f, 0x1.ffcp-15f,   0x1.ffep-15f,  0.0f,
                         -0.0f,    1e-45f,          3.0e38f,    1.0f,     1.00048828125f, 1.00146484375f};
  for (float x : cases) {
    EXPECT_EQ(hex(f::encode_float16(x)), hex(compiler_fp16(x))) << std::hexfloat << x;
    EXPECT_EQ(hex(f::encode_float16(-x)), hex(compiler_fp16(-x))) << std::hexfloat << -x;
  }
  EXPECT_EQ(f::encode_float16(65520.0f), 0x7C00);
  EXPECT_EQ(f::encode_float16(-65520.0f), 0xFC00);
  EXPECT_EQ(f::encode_float16(65519.0f), 0x7BFF);
  EXPECT_EQ(f::encode_float16(0x1p-25f), 0x0000);    // tie with 0 -> even (0)
  EXPECT_EQ(f::encode_float16(0x1.8p-24f), 0x0002);  // tie 1 vs 2 -> even
}

TEST(FormatsFloat16, DecodeAllCodes) {
  for (uint32_t c = 0; c < 65536; ++c) {
    _Float16 h;
    const uint16_t c16 = static_cast<uint16_t>(c);
    std::memcpy(&h, &c16, 2);
    const float want = static_cast<float>(h);
    const float got = f::decode_float16(c16);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << hex(c);
      ASSERT_EQ(bits_of(got) >> 31, c >> 15) << hex(c);
      continue;
    }
    ASSERT_EQ(bits_of(got), bits_of(want)) << hex(c);
    // and back: every non-NaN code round-trips
    ASSERT_EQ(f::encode_float16(got), c16) << hex(c);
  }
}
#else
TEST(FormatsFloat16, EncodeAgainstCompiler) { GTEST_SKIP() << "compiler has no _Float16"; }
#endif

TEST(FormatsFloat16, NaNStaysQuietNaN) {
  EXPECT_EQ(f::encode_float16(from_bits(0x7F800001u)), 0x7E00);  // signalling -> quiet
  EXPECT_EQ(f::encode_float16(from_bits(0xFFC00000u)), 0xFE00);
  EXPECT_EQ(f::encode_float16(from_bits(0x7FFFFFFFu)), 0x7FFF);
}

TEST(FormatsBFloat16, EncodeAgainstDoubleReference) {
  const auto inputs = test_inputs(1000000);
  for (uint32_t b : inputs) {
    const float x = from_bits(b);
    const uint16_t got = f::encode_bfloat16(x);
    if (std::isnan(x)) {
      ASSERT_EQ(got & 0x7FC0u, 0x7FC0u) << hex(b);
      ASSERT_EQ(got & 0x8000u, (b >> 16) & 0x8000u) << hex(b);
      continue;
    }
    ASSERT_EQ(hex(got), hex(oracle::to_bf16(x))) << std::hexfloat << x << " bits " << hex(b);
  }
  EXPECT_EQ(f::encode_bfloat16(from_bits(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX overflows
  EXPECT_EQ(f::encode_bfloat16(from_bits(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(f::encode_bfloat16(from_bits(0x7F7F8000u)), 0x7F80);  // tie, odd -> up -> Inf
  EXPECT_EQ(f::encode_bfloat16(from_bits(0x00008000u)), 0x0000);  // tie with 0 -> 0
  EXPECT_EQ(f::encode_bfloat16(from_bits(0x00018000u)), 0x0002);  // tie 1 vs 2 -> 2
  EXPECT_EQ(f::encode_bfloat16(from_bits(0x7F800001u)), 0x7FC0);
  EXPECT_EQ(f::encode_bfloat16(-INFINITY), 0xFF80);
}

TEST(FormatsBFloat16, DecodeAllCodes) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const int sign = c >> 15;
    const float got = f::decode_bfloat16(static_cast<uint16_t>(c));
    const double want = oracle::decode_bf16(static_cast<uint16_t>(c));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << hex(c);
      continue;
    }
    ASSERT_EQ(static_cast<double>(got), want) << hex(c);
    ASSERT_EQ(std::signbit(got), sign == 1) << hex(c);
    ASSERT_EQ(f::encode_bfloat16(got), c) << hex(c);
  }
}
