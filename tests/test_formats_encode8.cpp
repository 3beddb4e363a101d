// Encoders of the 8-bit float formats (E4M3FN, E5M2, HiF8) against independent
// references: round trips of every finite code, every midpoint between neighbouring
// values and the fp32 numbers just below and above it (overflow midpoints included),
// the contract.md §vectors encode vectors, specials, and random inputs against a brute-force
// nearest-value search (tests/oracle.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "oracle.hpp"
#include "qcoll/formats.hpp"

namespace f = qcoll::formats;
using f::Saturation;
using namespace oracle;

namespace {

constexpr Saturation kModes[] = {Saturation::NonSaturating, Saturation::Saturating};

// Everything a test needs to know about one format, stated independently of the code.
struct FormatCase {
  const char* name;
  uint8_t (*encode)(float, Saturation);
  double (*ref_decode)(uint8_t);
  double beyond;  // the first value of the virtual next binade (overflow)
  Ties ties;
  unsigned max_code;       // largest finite positive code
  unsigned overflow_code;  // non-saturating overflow (positive)
  bool has_negative_zero;
  // expected code for NaN input with the given sign bit
  unsigned nan_code_pos, nan_code_neg;
};

const FormatCase kE4M3 = {"e4m3fn", f::encode_float8_e4m3fn, decode_e4m3fn, 480.0, Ties::ToEven, 0x7E, 0x7F, true, 0x7F,
                          0xFF};
const FormatCase kE5M2 = {"e5m2", f::encode_float8_e5m2, decode_e5m2, 65536.0, Ties::ToEven, 0x7B, 0x7C, true, 0x7E,
                          0xFE};
const FormatCase kHiF8 = {
    "hifloat8", f::encode_hifloat8, decode_hif8, 49152.0, Ties::AwayFromZero, 0x6E, 0x6F, false, 0x80, 0x80};

// Expected byte for a magnitude result (nullopt = overflow) and sign.
unsigned expected_byte(const FormatCase& fc, std::optional<unsigned> mag, bool negative, Saturation s) {
  unsigned code = mag ? *mag : (s == Saturation::Saturating ? fc.max_code : fc.overflow_code);
  if (!negative) return code;
  if (code == 0 && !fc.has_negative_zero) return 0x00;
  return code | 0x80;
}

std::string hex(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%02X", v);
  return buf;
}

void check_round_trip(const FormatCase& fc) {
  int checked = 0;
  for (unsigned b = 0; b < 256; ++b) {
    const double v = fc.ref_decode(b);
    if (std::isnan(v) || std::isinf(v)) continue;
    for (Saturation s : kModes) {
      EXPECT_EQ(hex(fc.encode(static_cast<float>(v), s)), hex(b)) << fc.name << " value " << v;
      ++checked;
    }
  }
  EXPECT_GT(checked, 2 * 200);
}

void check_midpoints(const FormatCase& fc) {
  const auto pts = nonnegative_points(fc.ref_decode);
  ASSERT_EQ(pts.back().code, fc.max_code);
  std::vector<Point> all = pts;
  all.push_back({fc.beyond, fc.max_code + 1});
  int checked = 0;
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    const Point lo = all[i], hi = all[i + 1];
    const double mid = (lo.value + hi.value) / 2;
    const float midf = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(midf), mid) << "midpoint not exact in fp32";
    const bool hi_overflows = i + 1 == all.size() - 1;
    const std::optional<unsigned> lo_code = lo.code;
    const std::optional<unsigned> hi_code = hi_overflows ? std::nullopt : std::optional<unsigned>(hi.code);
    std::optional<unsigned> tie_code;
    if (fc.ties == Ties::AwayFromZero)
      tie_code = hi_code;
    else
      tie_code = (lo.code & 1) == 0 ? lo_code : hi_code;
    const float below = std::nextafter(midf, 0.0f);
    const float above = std::nextafter(midf, INFINITY);
    for (Saturation s : kModes) {
      for (bool neg : {false, true}) {
        const float sg = neg ? -1.0f : 1.0f;
        EXPECT_EQ(hex(fc.encode(sg * below, s)), hex(expected_byte(fc, lo_code, neg, s)))
            << fc.name << " just below midpoint " << sg * mid << " sat=" << int(s);
        EXPECT_EQ(hex(fc.encode(sg * midf, s)), hex(expected_byte(fc, tie_code, neg, s)))
            << fc.name << " midpoint " << sg * mid << " sat=" << int(s);
        EXPECT_EQ(hex(fc.encode(sg * above, s)), hex(expected_byte(fc, hi_code, neg, s)))
            << fc.name << " just above midpoint " << sg * mid << " sat=" << int(s);
        checked += 3;
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

void check_specials(const FormatCase& fc) {
  for (Saturation s : kModes) {
    const float qnan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(hex(fc.encode(qnan, s)), hex(fc.nan_code_pos)) << fc.name;
    EXPECT_EQ(hex(fc.encode(-qnan, s)), hex(fc.nan_code_neg)) << fc.name;
    float snan;
    const uint32_t snan_bits = 0x7F800001u;
    std::memcpy(&snan, &snan_bits, 4);
    EXPECT_EQ(hex(fc.encode(snan, s)), hex(fc.nan_code_pos)) << fc.name;
    for (bool neg : {false, true}) {
      const float sg = neg ? -1.0f : 1.0f;
      const unsigned want = expected_byte(fc, std::nullopt, neg, s);
      EXPECT_EQ(hex(fc.encode(sg * INFINITY, s)), hex(want)) << fc.name << " inf";
      EXPECT_EQ(hex(fc.encode(sg * 3.0e38f, s)), hex(want)) << fc.name << " huge";
      EXPECT_EQ(hex(fc.encode(sg * static_cast<float>(fc.beyond), s)), hex(want)) << fc.name;
      // zeros and values far below the smallest subnormal
      EXPECT_EQ(hex(fc.encode(sg * 0.0f, s)), hex(expected_byte(fc, 0u, neg, s))) << fc.name;
      EXPECT_EQ(hex(fc.encode(sg * 1e-30f, s)), hex(expected_byte(fc, 0u, neg, s))) << fc.name;
      EXPECT_EQ(hex(fc.encode(sg * 1e-45f, s)), hex(expected_byte(fc, 0u, neg, s))) << fc.name;
    }
  }
}

// Random fp32 inputs: bit patterns with exponents around the format's range, and fully
// random patterns, against the brute-force nearest search.
void check_random(const FormatCase& fc, int min_exp, int max_exp) {
  const auto pts = nonnegative_points(fc.ref_decode);
  std::mt19937 rng(12345);
  std::uniform_int_distribution<uint32_t> any;
  std::uniform_int_distribution<int> exp_dist(min_exp, max_exp);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits;
    if (i % 4 == 3) {
      bits = any(rng);
    } else {
      const uint32_t sign = any(rng) & 0x80000000u;
      bits = sign | (static_cast<uint32_t>(exp_dist(rng) + 127) << 23) | (any(rng) & 0x7FFFFFu);
    }
    float x;
    std::memcpy(&x, &bits, 4);
    if (std::isnan(x)) continue;
    const bool neg = std::signbit(x);
    const auto mag = nearest(pts, fc.beyond, fc.ties, std::fabs(static_cast<double>(x)));
    for (Saturation s : kModes) {
      ASSERT_EQ(hex(fc.encode(x, s)), hex(expected_byte(fc, mag, neg, s)))
          << fc.name << " x=" << std::hexfloat << x << " sat=" << int(s);
    }
  }
}

}  // namespace

TEST(FormatsEncode8, E4M3FNRoundTrip) { check_round_trip(kE4M3); }
TEST(FormatsEncode8, E5M2RoundTrip) { check_round_trip(kE5M2); }
TEST(FormatsEncode8, HiF8RoundTrip) { check_round_trip(kHiF8); }

TEST(FormatsEncode8, E4M3FNMidpoints) { check_midpoints(kE4M3); }
TEST(FormatsEncode8, E5M2Midpoints) { check_midpoints(kE5M2); }
TEST(FormatsEncode8, HiF8Midpoints) { check_midpoints(kHiF8); }

TEST(FormatsEncode8, E4M3FNSpecials) { check_specials(kE4M3); }
TEST(FormatsEncode8, E5M2Specials) { check_specials(kE5M2); }
TEST(FormatsEncode8, HiF8Specials) { check_specials(kHiF8); }

TEST(FormatsEncode8, E4M3FNRandom) { check_random(kE4M3, -14, 10); }
TEST(FormatsEncode8, E5M2Random) { check_random(kE5M2, -20, 17); }
TEST(FormatsEncode8, HiF8Random) { check_random(kHiF8, -26, 17); }

TEST(FormatsEncode8, InfinityRoundTrip) {
  EXPECT_EQ(f::encode_float8_e5m2(INFINITY), 0x7C);
  EXPECT_EQ(f::encode_float8_e5m2(-INFINITY), 0xFC);
  EXPECT_EQ(f::encode_hifloat8(INFINITY), 0x6F);
  EXPECT_EQ(f::encode_hifloat8(-INFINITY), 0xEF);
  EXPECT_EQ(f::encode_hifloat8(INFINITY, Saturation::Saturating), 0x6E);
  EXPECT_EQ(f::encode_hifloat8(-INFINITY, Saturation::Saturating), 0xEE);
}

TEST(FormatsEncode8, Spec6Vectors) {
  const auto NS = Saturation::NonSaturating, S = Saturation::Saturating;
  struct V {
    uint8_t (*enc)(float, Saturation);
    Saturation s;
    float in;
    unsigned out;
  };
  const V vectors[] = {
      {f::encode_float8_e4m3fn, NS, 1.0625f, 0x38},
      {f::encode_float8_e4m3fn, NS, 1.1875f, 0x3A},
      {f::encode_float8_e4m3fn, NS, 17.0f, 0x58},
      {f::encode_float8_e4m3fn, NS, 19.0f, 0x5A},
      {f::encode_float8_e4m3fn, NS, 464.0f, 0x7E},
      {f::encode_float8_e4m3fn, NS, 500.0f, 0x7F},
      {f::encode_float8_e4m3fn, S, 500.0f, 0x7E},
      {f::encode_float8_e5m2, NS, 1.125f, 0x3C},
      {f::encode_float8_e5m2, NS, 1.375f, 0x3E},
      {f::encode_float8_e5m2, NS, 61439.0f, 0x7B},
      {f::encode_float8_e5m2, NS, 61440.0f, 0x7C},
      {f::encode_float8_e5m2, S, 61440.0f, 0x7B},
      {f::encode_hifloat8, NS, 1.0625f, 0x09},
      {f::encode_hifloat8, NS, 1.1875f, 0x0A},
      {f::encode_hifloat8, NS, 240.0f, 0x60},
      {f::encode_hifloat8, NS, 0.1f, 0x52},
      {f::encode_hifloat8, NS, 100.0f, 0x4A},
      {f::encode_hifloat8, NS, 1000.0f, 0x64},
      {f::encode_hifloat8, NS, 40959.0f, 0x6E},
      {f::encode_hifloat8, NS, 40960.0f, 0x6F},
      {f::encode_hifloat8, NS, 0x1p-23f, 0x01},
      {f::encode_hifloat8, NS, 0x1p-24f, 0x00},
      // contract.md §encoders statements
      {f::encode_hifloat8, S, 40960.0f, 0x6E},
      {f::encode_hifloat8, NS, -0x1p-24f, 0x00},
      {f::encode_hifloat8, NS, -0x1.fp-23f, 0x81},
      {f::encode_hifloat8, NS, -0.0f, 0x00},
      {f::encode_float8_e4m3fn, NS, -500.0f, 0xFF},
      {f::encode_float8_e5m2, NS, -61440.0f, 0xFC},
      // MX E4M3 blocks of contract.md §vectors (elements already divided by the shared scale)
      {f::encode_float8_e4m3fn, S, 0.0f, 0x00},
      {f::encode_float8_e4m3fn, S, 4.0f, 0x48},
      {f::encode_float8_e4m3fn, S, 32.0f, 0x60},
      {f::encode_float8_e4m3fn, S, 256.0f, 0x78},
      {f::encode_float8_e4m3fn, S, -1.0f, 0xB8},
      {f::encode_float8_e4m3fn, S, 0.3f, 0x2A},
      {f::encode_float8_e4m3fn, S, 0x1p-9f, 0x01},
  };
  for (const auto& v : vectors)
    EXPECT_EQ(hex(v.enc(v.in, v.s)), hex(v.out)) << std::hexfloat << v.in << " sat=" << int(v.s);
  // encode8 dispatches to the same encoders
  EXPECT_EQ(f::encode8(qcoll::DType::HiFloat8, 0.1f), 0x52);
  EXPECT_EQ(f::encode8(qcoll::DType::Float8E4M3FN, 500.0f, S), 0x7E);
  EXPECT_EQ(f::encode8(qcoll::DType::Float8E5M2, 61440.0f), 0x7C);
}
