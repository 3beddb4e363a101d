// The 4-bit formats (contract.md §ext-fp4): every code's decode and the encoders against an
// oracle written from the value lists alone (no bit fields), the dispatch by dtype, the
// packed layout, and E2M1's encode against ml_dtypes' float4_e2m1fn (run live in Python).
// All 2^32 inputs: tests/test_formats_exhaustive.cpp (QCOLL_EXHAUSTIVE=1).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "formats/traits.hpp"
#include "fp4_oracle.hpp"
#include "ml_dtypes_child.hpp"
#include "qcoll/formats.hpp"

namespace f = qcoll::formats;
using qcoll::DType;

namespace {

uint32_t bits_of(float x) { return std::bit_cast<uint32_t>(x); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

// A format's oracle and the library's codec of it.
struct Format : fp4_oracle::Fp4 {
  float (*decode)(uint8_t);
  uint8_t (*encode)(float);
};
const Format kFormats[] = {{fp4_oracle::kE2M1, f::decode_float4_e2m1, f::encode_float4_e2m1},
                           {fp4_oracle::kE1M2, f::decode_float4_e1m2, f::encode_float4_e1m2}};

// The inputs of EncodeBoundaries: every value and midpoint with its fp32 neighbours, both
// signs, and the special values.
std::vector<float> boundary_inputs(const fp4_oracle::Fp4& fm) {
  std::vector<float> xs;
  for (unsigned i = 0; i < 8; ++i) {
    const float v = fm.magnitudes[i];
    const float next = i + 1 < 8 ? fm.magnitudes[i + 1] : 2 * fm.magnitudes[7];  // past max: one more step
    for (float p : {v, (v + next) / 2}) {
      xs.push_back(p);
      xs.push_back(std::nextafter(p, 0.0f));
      xs.push_back(std::nextafter(p, std::numeric_limits<float>::infinity()));
    }
  }
  for (float p : {0.0f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(), 1e-30f, 1e30f,
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity()})
    xs.push_back(p);
  const std::size_t n = xs.size();
  for (std::size_t i = 0; i < n; ++i) xs.push_back(-xs[i]);
  return xs;
}

TEST(FormatsFp4, DecodeEveryCodeAgainstTheValueList) {
  for (const Format& fm : kFormats) {
    for (unsigned code = 0; code < 16; ++code) {
      const float want = fp4_oracle::value(fm, code);
      const float got = fm.decode(static_cast<uint8_t>(code));
      EXPECT_EQ(bits_of(got), bits_of(want)) << fm.name << " code " << code << ": " << got;
      EXPECT_EQ(bits_of(f::decode4(fm.type, static_cast<uint8_t>(code))), bits_of(want));
      EXPECT_EQ(bits_of(f::decode_table4(fm.type)[code]), bits_of(want));
      // Bits 4-7 are not part of the code.
      for (unsigned hi = 1; hi < 16; ++hi)
        EXPECT_EQ(bits_of(fm.decode(static_cast<uint8_t>(hi << 4 | code))), bits_of(want));
    }
    EXPECT_EQ(bits_of(fm.decode(0x8)), 0x80000000u) << fm.name << ": code 8 is -0";
  }
  // Spot values of the lists, as contract.md §ext-fp4 states them.
  EXPECT_EQ(f::decode_float4_e2m1(0x1), 0.5f);
  EXPECT_EQ(f::decode_float4_e2m1(0x5), 3.0f);
  EXPECT_EQ(f::decode_float4_e2m1(0x7), 6.0f);
  EXPECT_EQ(f::decode_float4_e2m1(0xF), -6.0f);
  EXPECT_EQ(f::decode_float4_e1m2(0x1), 0.25f);
  EXPECT_EQ(f::decode_float4_e1m2(0x4), 1.0f);
  EXPECT_EQ(f::decode_float4_e1m2(0x7), 1.75f);
  EXPECT_EQ(f::decode_float4_e1m2(0xB), -0.75f);
}

TEST(FormatsFp4, Traits) {
  using E2 = f::Traits<DType::Float4E2M1>;
  using E1 = f::Traits<DType::Float4E1M2>;
  EXPECT_EQ(E2::kBits, 4);
  EXPECT_EQ(E2::kExponentBits, 2);
  EXPECT_EQ(E2::kMantissaBits, 1);
  EXPECT_EQ(E1::kExponentBits, 1);
  EXPECT_EQ(E1::kMantissaBits, 2);
  EXPECT_EQ(E2::kExponentBias, 1);
  EXPECT_EQ(E1::kExponentBias, 1);
  EXPECT_EQ(E2::kSignMask, 0x8);
  EXPECT_FALSE(E2::kHasInf || E2::kHasNaN || E1::kHasInf || E1::kHasNaN);
  EXPECT_EQ(E2::kMaxFinite, 6.0f);
  EXPECT_EQ(E1::kMaxFinite, 1.75f);
  EXPECT_EQ(E2::kMxEmax, 2);  // floor(log2(6))
  EXPECT_EQ(E1::kMxEmax, 0);  // floor(log2(1.75))
  EXPECT_EQ(f::max_finite(DType::Float4E2M1), 6.0f);
  EXPECT_EQ(f::max_finite(DType::Float4E1M2), 1.75f);
  EXPECT_EQ(f::max_finite(DType::Float8E4M3FN), 448.0f);  // unchanged
  for (const Format& fm : kFormats) {
    EXPECT_EQ(fp4_oracle::value(fm, E2::kMaxCode), f::max_finite(fm.type));
    EXPECT_EQ(fp4_oracle::value(fm, 1), fm.type == DType::Float4E2M1 ? E2::kMinSubnormal : E1::kMinSubnormal);
  }
}

TEST(FormatsFp4, NotAnEightBitFormat) {
  // The 8-bit entry points do not take the 4-bit formats, and the reverse.
  for (const Format& fm : kFormats) {
    EXPECT_TRUE(std::isnan(f::decode8(fm.type, 1)));
    EXPECT_EQ(f::encode8(fm.type, 1.0f), 0);
    EXPECT_EQ(f::decode_table(fm.type), nullptr);
  }
  for (DType t : {DType::Int8, DType::Float8E4M3FN, DType::Float8E8M0, DType::Float}) {
    EXPECT_TRUE(std::isnan(f::decode4(t, 1)));
    EXPECT_EQ(f::encode4(t, 1.0f), 0);
    EXPECT_EQ(f::decode_table4(t), nullptr);
  }
}

// Every midpoint between neighbouring values, and the fp32 neighbours of each midpoint and
// of each value, both signs; the saturation boundary; the special values.
TEST(FormatsFp4, EncodeBoundaries) {
  for (const Format& fm : kFormats) {
    const std::vector<float> xs = boundary_inputs(fm);
    std::size_t checked = 0;
    for (float x : xs) {
      const uint8_t want = fp4_oracle::encode(fm, x);
      EXPECT_EQ(fm.encode(x), want) << fm.name << " x=" << std::hexfloat << x;
      EXPECT_EQ(f::encode4(fm.type, x), want);
      ++checked;
    }
    EXPECT_GT(checked, 100u);
    // NaN: code 0 whatever its sign and payload.
    for (uint32_t nan : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x7FBFFFFFu})
      EXPECT_EQ(fm.encode(from_bits(nan)), 0) << fm.name << std::hex << " nan 0x" << nan;
  }
  // The contract's vectors (contract.md §ext-fp4-encode).
  EXPECT_EQ(f::encode_float4_e2m1(0.25f), 0x0);  // tie 0 / 0.5: to even, 0
  EXPECT_EQ(f::encode_float4_e2m1(0.75f), 0x2);  // tie 0.5 / 1: to even, 1
  EXPECT_EQ(f::encode_float4_e2m1(1.25f), 0x2);  // tie 1 / 1.5: 1
  EXPECT_EQ(f::encode_float4_e2m1(1.75f), 0x4);  // tie 1.5 / 2: 2
  EXPECT_EQ(f::encode_float4_e2m1(2.5f), 0x4);   // tie 2 / 3: 2
  EXPECT_EQ(f::encode_float4_e2m1(3.5f), 0x6);   // tie 3 / 4: 4
  EXPECT_EQ(f::encode_float4_e2m1(5.0f), 0x6);   // tie 4 / 6: 4
  EXPECT_EQ(f::encode_float4_e2m1(5.5f), 0x7);
  EXPECT_EQ(f::encode_float4_e2m1(1e9f), 0x7);
  EXPECT_EQ(f::encode_float4_e2m1(-std::numeric_limits<float>::infinity()), 0xF);
  EXPECT_EQ(f::encode_float4_e2m1(-0.0f), 0x8);
  EXPECT_EQ(f::encode_float4_e2m1(-0.1f), 0x8);  // rounds to 0, keeps the sign
  EXPECT_EQ(f::encode_float4_e1m2(0.125f), 0x0);
  EXPECT_EQ(f::encode_float4_e1m2(0.375f), 0x2);
  EXPECT_EQ(f::encode_float4_e1m2(0.875f), 0x4);  // tie 0.75 / 1: 1
  EXPECT_EQ(f::encode_float4_e1m2(1.125f), 0x4);  // tie 1 / 1.25: 1
  EXPECT_EQ(f::encode_float4_e1m2(1.625f), 0x6);  // tie 1.5 / 1.75: 1.5
  EXPECT_EQ(f::encode_float4_e1m2(1.8125f), 0x7);
  EXPECT_EQ(f::encode_float4_e1m2(-100.0f), 0xF);
}

TEST(FormatsFp4, EncodeDenseRandomSample) {
  std::mt19937 rng(20);
  std::uniform_int_distribution<uint32_t> any;
  std::uniform_real_distribution<float> near(-8.0f, 8.0f);
  for (const Format& fm : kFormats) {
    uint64_t bad = 0;
    for (int i = 0; i < 400000; ++i) {
      // Random bit patterns (every class), then values around the format's range.
      const float x = i % 2 == 0 ? from_bits(any(rng)) : near(rng) * (fm.type == DType::Float4E1M2 ? 0.25f : 1.0f);
      if (fm.encode(x) != fp4_oracle::encode(fm, x) && bad++ < 10)
        ADD_FAILURE() << fm.name << " x=" << std::hexfloat << x;
    }
    EXPECT_EQ(bad, 0u) << fm.name;
  }
}

// Every code decodes and encodes back to itself (code 0 / 8: +-0).
TEST(FormatsFp4, RoundTripEveryCode) {
  for (const Format& fm : kFormats)
    for (unsigned code = 0; code < 16; ++code)
      EXPECT_EQ(fm.encode(fm.decode(static_cast<uint8_t>(code))), code) << fm.name << " " << code;
}

TEST(FormatsFp4, PackedLayout) {
  // The element with the even index in bits 0-3 (torch float4_e2m1fn_x2's order).
  EXPECT_EQ(f::fp4_pack_pair(0x1, 0x2), 0x21);
  EXPECT_EQ(f::fp4_pack_pair(0xF, 0x0), 0x0F);
  EXPECT_EQ(f::fp4_pack_pair(0x13, 0x24), 0x43);  // only the low 4 bits of each
  const uint8_t packed[] = {0x21, 0x43, 0xF8};
  const uint8_t want[] = {1, 2, 3, 4, 8, 15};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(f::fp4_get(packed, i), want[i]) << i;
  EXPECT_EQ(f::fp4_packed_bytes(0), 0u);
  EXPECT_EQ(f::fp4_packed_bytes(5), 3u);
  EXPECT_EQ(f::fp4_packed_bytes(6), 3u);
  // pack / unpack over every count up to 33, an odd count leaving the last high nibble 0.
  std::mt19937 rng(4);
  for (std::size_t n = 0; n <= 33; ++n) {
    std::vector<uint8_t> codes(n), back(n, 0xAA), p(f::fp4_packed_bytes(n) + 1, 0xEE);
    for (auto& c : codes) c = static_cast<uint8_t>(rng() & 0xF);
    f::pack_fp4(codes.data(), n, p.data());
    EXPECT_EQ(p.back(), 0xEE) << "wrote past the packed bytes, n=" << n;
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(p[i / 2] >> (4 * (i % 2)) & 0xF, codes[i]);
      EXPECT_EQ(f::fp4_get(p.data(), i), codes[i]);
    }
    if (n % 2 == 1) {
      EXPECT_EQ(p[n / 2] >> 4, 0) << n;
    }
    f::unpack_fp4(p.data(), n, back.data());
    EXPECT_EQ(back, codes) << n;
  }
  uint8_t b[2] = {0x00, 0xFF};
  f::fp4_set(b, 1, 0x9);
  f::fp4_set(b, 2, 0x3);
  EXPECT_EQ(b[0], 0x90);
  EXPECT_EQ(b[1], 0xF3);
  f::fp4_set(b, 0, 0xF7);  // the code's low 4 bits only
  EXPECT_EQ(b[0], 0x97);
}

// E2M1 against ml_dtypes' float4_e2m1fn, computed live by Python: the boundary inputs, every
// 4099th fp32 bit pattern, and every 31st in the format's range [0.25, 8) of both signs
// (about 3.6 million inputs). All finite fp32: FormatsExhaustive.E2M1AgainstMlDtypes.
TEST(FormatsFp4, E2M1AgainstMlDtypesSample) {
  if (!ml_dtypes_child::ml_dtypes_available())
    GTEST_SKIP() << "python3 with ml_dtypes >= 0.5 (float4_e2m1fn) not found (" << ml_dtypes_child::python() << ")";
  std::vector<uint32_t> patterns;
  for (float x : boundary_inputs(fp4_oracle::kE2M1)) patterns.push_back(bits_of(x));
  const uint32_t lo = bits_of(0.25f), hi = bits_of(8.0f);
  const std::vector<ml_dtypes_child::Range> ranges = {
      {0, 4099, (uint64_t{1} << 32) / 4099}, {lo, 31, (hi - lo) / 31}, {lo | 0x80000000u, 31, (hi - lo) / 31}};
  const auto res = ml_dtypes_child::compare(f::encode_float4_e2m1, patterns, ranges);
  EXPECT_TRUE(res.ran) << res.error;
  uint64_t total = patterns.size();
  for (const auto& g : ranges) total += g.count;
  EXPECT_EQ(res.compared + res.nans, total);
  EXPECT_GT(res.compared, 3000000u);
  EXPECT_EQ(res.mismatches, 0u) << res.first_mismatch;
}

}  // namespace
