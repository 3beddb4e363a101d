// INT8 encoder (round half to even, clamp to [-128, 127], NaN -> 0) and E8M0 encoder
// (nearest power of two, ties up; documented edge decisions) against independent
// references.
#include <gtest/gtest.h>

#include <cfenv>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "oracle.hpp"
#include "qcoll/formats.hpp"

namespace f = qcoll::formats;
using f::Saturation;

namespace {

float from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

}  // namespace

TEST(FormatsInt8, Spec6GroupVectors) {
  // contract.md §vectors: group with amax 254, scale 2.0: q = round_half_even(v / 2).
  const struct {
    float v;
    int q;
  } vectors[] = {{254, 127}, {3, 2}, {5, 2}, {1, 0}, {-1, 0}, {127, 64}, {129, 64}};
  for (const auto& t : vectors) EXPECT_EQ(static_cast<int8_t>(f::encode_int8(t.v / 2.0f)), t.q) << t.v;
}

TEST(FormatsInt8, HalvesAndClamp) {
  for (int twice = -300; twice <= 300; ++twice) {
    const float v = static_cast<float>(twice) / 2.0f;
    for (Saturation s : {Saturation::NonSaturating, Saturation::Saturating}) {
      EXPECT_EQ(static_cast<int8_t>(f::encode_int8(v, s)), oracle::encode_int8(v)) << v;
      EXPECT_EQ(static_cast<int8_t>(f::encode_int8(std::nextafter(v, INFINITY), s)),
                oracle::encode_int8(std::nextafter(v, INFINITY)))
          << v;
      EXPECT_EQ(static_cast<int8_t>(f::encode_int8(std::nextafter(v, -INFINITY), s)),
                oracle::encode_int8(std::nextafter(v, -INFINITY)))
          << v;
    }
  }
  EXPECT_EQ(f::encode_int8(std::nanf("")), 0);
  EXPECT_EQ(f::encode_int8(-std::nanf("")), 0);
  EXPECT_EQ(f::encode_int8(INFINITY), 127);
  EXPECT_EQ(f::encode_int8(-INFINITY), 0x80);
  EXPECT_EQ(f::encode_int8(-0.0f), 0);
  EXPECT_EQ(f::encode_int8(-127.5f), 0x80);  // -128 is representable: tie to even
  EXPECT_EQ(f::encode_int8(126.5f), 126);
  EXPECT_EQ(f::encode_int8(FLT_MAX), 127);
  EXPECT_EQ(f::encode_int8(1e-45f), 0);
}

TEST(FormatsInt8, RandomAgainstNearbyint) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-300.0f, 300.0f);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 300000; ++i) {
    const float v = (i & 1) ? wide(rng) : from_bits(any(rng));
    ASSERT_EQ(static_cast<int8_t>(f::encode_int8(v)), oracle::encode_int8(v)) << std::hexfloat << v;
  }
  for (unsigned b = 0; b < 256; ++b)  // round trip
    EXPECT_EQ(f::encode_int8(static_cast<float>(static_cast<int8_t>(b))), b);
}

TEST(FormatsE8M0, EdgeDecisions) {
  EXPECT_EQ(f::encode_float8_e8m0(1.0f), 0x7F);
  EXPECT_EQ(f::encode_float8_e8m0(2.0f), 0x80);
  EXPECT_EQ(f::encode_float8_e8m0(1.5f), 0x80);  // fraction 0.5 rounds up
  EXPECT_EQ(f::encode_float8_e8m0(std::nextafter(1.5f, 0.0f)), 0x7F);
  EXPECT_EQ(f::encode_float8_e8m0(0.75f), 0x7F);
  EXPECT_EQ(f::encode_float8_e8m0(3.0f), 0x81);
  EXPECT_EQ(f::encode_float8_e8m0(-2.0f), 0x80);  // sign ignored
  EXPECT_EQ(f::encode_float8_e8m0(0.0f), 0x00);
  EXPECT_EQ(f::encode_float8_e8m0(-0.0f), 0x00);
  EXPECT_EQ(f::encode_float8_e8m0(0x1p-127f), 0x00);
  EXPECT_EQ(f::encode_float8_e8m0(0x1.8p-127f), 0x01);
  EXPECT_EQ(f::encode_float8_e8m0(0x1p-126f), 0x01);
  EXPECT_EQ(f::encode_float8_e8m0(0x1p-149f), 0x00);
  EXPECT_EQ(f::encode_float8_e8m0(0x1p127f), 0xFE);
  EXPECT_EQ(f::encode_float8_e8m0(0x1.8p127f), 0xFE);  // would be 2^128: clamped
  EXPECT_EQ(f::encode_float8_e8m0(FLT_MAX), 0xFE);
  EXPECT_EQ(f::encode_float8_e8m0(INFINITY), 0xFF);
  EXPECT_EQ(f::encode_float8_e8m0(-INFINITY), 0xFF);
  EXPECT_EQ(f::encode_float8_e8m0(std::nanf("")), 0xFF);
  EXPECT_EQ(f::encode8(qcoll::DType::Float8E8M0, 4.0f), 0x81);
}

TEST(FormatsE8M0, RoundTripAndRandom) {
  for (unsigned b = 0; b < 255; ++b) EXPECT_EQ(f::encode_float8_e8m0(std::ldexp(1.0f, static_cast<int>(b) - 127)), b);
  std::mt19937 rng(99);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 300000; ++i) {
    const float v = from_bits(any(rng));
    ASSERT_EQ(f::encode_float8_e8m0(v), oracle::encode_e8m0(v)) << std::hexfloat << v;
  }
  // every fp32 subnormal exponent, with and without the half bit
  for (int p = 0; p < 23; ++p)
    for (uint32_t extra : {0u, 1u, 2u, 3u}) {
      const uint32_t man = (1u << p) | (p >= 2 ? (extra << (p - 2)) : 0u);
      const float v = from_bits(man);
      EXPECT_EQ(f::encode_float8_e8m0(v), oracle::encode_e8m0(v)) << std::hexfloat << v;
    }
}
