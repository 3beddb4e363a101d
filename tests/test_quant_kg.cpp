// KG (per-token-per-group, group 128, fp32 scales) quantizer tests against contract.md §quantizers-kg,
// with the independent references of tests/oracle.hpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "oracle.hpp"
#include "qcoll/quant.hpp"
#include "quant/quantize_job.hpp"

using qcoll::DType;
using namespace oracle;
namespace qq = qcoll::quant;

namespace {

constexpr DType kKgTypes[] = {DType::Int8, DType::Float8E4M3FN, DType::Float8E5M2, DType::HiFloat8};

// The target each KG dtype maps amax to (contract.md §quantizers-kg): 127, 448, 57344, HiF8 target.
float kg_target(DType t, float hif8_target = 0.0f) {
  if (t == DType::HiFloat8) return hif8_target != 0.0f ? hif8_target : qq::default_hif8_target();
  return static_cast<float>(max_finite(t));
}

struct Kg {
  std::vector<uint8_t> q;
  std::vector<float> s;
};

Kg run_kg(const std::vector<float>& x, std::size_t rows, std::size_t H, DType t, const qq::KgOptions& opt = {}) {
  Kg r{std::vector<uint8_t>(rows * H, 0xAB), std::vector<float>(rows * H / 128, -1.0f)};
  EXPECT_TRUE(qq::quantize_kg(x.data(), rows, H, t, r.q.data(), r.s.data(), opt));
  return r;
}

// Reference: per group, amax over finite values, scale = fp32(amax / target), q = encode(v / scale).
void expect_matches_reference(const std::vector<float>& x, std::size_t rows, std::size_t H, DType t, const Kg& got,
                              float target) {
  for (std::size_t g = 0; g < rows * H / 128; ++g) {
    float amax = 0.0f;
    for (std::size_t i = g * 128; i < g * 128 + 128; ++i)
      if (std::isfinite(x[i])) amax = std::max(amax, std::fabs(x[i]));
    const float scale = amax / target;
    ASSERT_EQ(f32_bits(got.s[g]), f32_bits(scale)) << "group " << g << " amax " << amax;
    for (std::size_t i = g * 128; i < g * 128 + 128; ++i) {
      const double r =
          scale == 0.0f ? (std::isfinite(x[i]) ? 0.0 : double(x[i])) : double(x[i] / scale);  // one fp32 division
      ASSERT_PRED3(same_code, t, got.q[i], encode_sat(t, r))
          << qcoll::dtype_name(t) << " element " << i << " v " << x[i] << " scale " << scale;
    }
  }
}

}  // namespace

TEST(QuantKg, SpecInt8Vector) {
  // contract.md §vectors: a group with amax 254 has scale 2.0; q = round_half_even(v / 2).
  std::vector<float> x(128, 0.0f);
  const float vals[] = {254, 3, 5, 1, -1, 127, 129};
  const int8_t want[] = {127, 2, 2, 0, 0, 64, 64};
  for (int i = 0; i < 7; ++i) x[i] = vals[i];
  Kg r = run_kg(x, 1, 128, DType::Int8);
  EXPECT_EQ(r.s[0], 2.0f);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(static_cast<int8_t>(r.q[i]), want[i]) << "v " << vals[i];
  for (int i = 7; i < 128; ++i) EXPECT_EQ(r.q[i], 0);
}

TEST(QuantKg, ScaleIsDivisionNotReciprocalMultiply) {
  // amax / 127 and amax * (1/127) differ in fp32 for some amax; the rule is the division.
  int differing = 0;
  for (uint32_t k = 1; k < 2000 && differing < 5; ++k) {
    const float amax = 1.0f + static_cast<float>(k) * 0.0009765625f;
    if (amax / 127.0f == amax * (1.0f / 127.0f)) continue;
    ++differing;
    std::vector<float> x(128, 0.0f);
    x[3] = -amax;
    Kg r = run_kg(x, 1, 128, DType::Int8);
    EXPECT_EQ(f32_bits(r.s[0]), f32_bits(amax / 127.0f)) << amax;
  }
  EXPECT_GT(differing, 0);
}

TEST(QuantKg, MatchesReferenceOnRandomData) {
  const std::size_t rows = 6, H = 1024;
  std::vector<float> x = random_values(rows * H, 1234);
  // Spread magnitudes: each group gets its own power-of-two factor (incl. tiny and huge).
  for (std::size_t g = 0; g < rows * H / 128; ++g)
    for (std::size_t i = g * 128; i < g * 128 + 128; ++i) x[i] = std::ldexp(x[i], static_cast<int>(g % 48) * 5 - 120);
  for (DType t : kKgTypes) {
    SCOPED_TRACE(std::string(qcoll::dtype_name(t)));
    Kg r = run_kg(x, rows, H, t);
    expect_matches_reference(x, rows, H, t, r, kg_target(t));
  }
}

TEST(QuantKg, Hif8TargetOption) {
  std::vector<float> x = random_values(2 * 256, 77);
  for (float target : {1.0f, 4.0f, 15.0f, 256.0f, 32768.0f}) {
    qq::KgOptions opt;
    opt.hif8_target = target;
    Kg r = run_kg(x, 2, 256, DType::HiFloat8, opt);
    expect_matches_reference(x, 2, 256, DType::HiFloat8, r, target);
  }
  // 0 means the default.
  qq::KgOptions def;
  def.hif8_target = qq::default_hif8_target();
  Kg a = run_kg(x, 2, 256, DType::HiFloat8);
  Kg b = run_kg(x, 2, 256, DType::HiFloat8, def);
  EXPECT_EQ(a.q, b.q);
  EXPECT_EQ(0, std::memcmp(a.s.data(), b.s.data(), a.s.size() * 4));
  EXPECT_GE(qq::default_hif8_target(), 1.0f);
  EXPECT_LE(qq::default_hif8_target(), 32768.0f);
}

TEST(QuantKg, ScaleLayoutMultiRowMultiGroup) {
  // (rows, H/128) row-major: group (r, g) has amax (r+1)*100 + g, at a varying position.
  const std::size_t rows = 3, H = 512, G = H / 128;
  std::vector<float> x(rows * H, 0.25f);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t g = 0; g < G; ++g)
      x[r * H + g * 128 + (r * 37 + g * 11) % 128] = -static_cast<float>((r + 1) * 100 + g);
  for (DType t : kKgTypes) {
    SCOPED_TRACE(std::string(qcoll::dtype_name(t)));
    Kg k = run_kg(x, rows, H, t);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t g = 0; g < G; ++g) {
        const float amax = static_cast<float>((r + 1) * 100 + g);
        EXPECT_EQ(k.s[r * G + g], amax / kg_target(t)) << "row " << r << " group " << g;
        // The amax element itself lands on -max (exactly representable target codes).
        const std::size_t pos = r * H + g * 128 + (r * 37 + g * 11) % 128;
        EXPECT_EQ(decode(t, k.q[pos]), -double(kg_target(t))) << "row " << r << " group " << g;
      }
  }
}

TEST(QuantKg, AllZeroGroup) {
  std::vector<float> x = random_values(3 * 128, 5);
  for (int i = 128; i < 256; ++i) x[i] = (i % 2) ? 0.0f : -0.0f;
  for (DType t : kKgTypes) {
    Kg k = run_kg(x, 1, 384, t);
    EXPECT_EQ(f32_bits(k.s[1]), 0u) << qcoll::dtype_name(t);
    EXPECT_NE(k.s[0], 0.0f);
    for (int i = 128; i < 256; ++i) ASSERT_EQ(k.q[i], 0x00) << qcoll::dtype_name(t) << " " << i;
  }
}

TEST(QuantKg, NonFiniteElements) {
  // Documented (docs/quantizers.md): amax over finite values; NaN -> NaN code (INT8: 0);
  // +-Inf -> +-max finite code.
  std::vector<float> x = random_values(128, 9);
  for (auto& v : x) v = std::clamp(v, -9.0f, 9.0f);
  x[17] = -10.0f;  // the finite amax
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[6] = -std::numeric_limits<float>::quiet_NaN();
  x[7] = std::numeric_limits<float>::infinity();
  x[9] = -std::numeric_limits<float>::infinity();
  for (DType t : kKgTypes) {
    SCOPED_TRACE(std::string(qcoll::dtype_name(t)));
    Kg k = run_kg(x, 1, 128, t);
    EXPECT_EQ(k.s[0], 10.0f / kg_target(t));
    if (t == DType::Int8) {
      EXPECT_EQ(k.q[5], 0);
      EXPECT_EQ(k.q[6], 0);
    } else {
      EXPECT_TRUE(std::isnan(decode(t, k.q[5])));
      EXPECT_TRUE(std::isnan(decode(t, k.q[6])));
    }
    EXPECT_EQ(decode(t, k.q[7]), max_finite(t));
    EXPECT_EQ(decode(t, k.q[9]), -max_finite(t));
    expect_matches_reference(x, 1, 128, t, k, kg_target(t));
  }
}

TEST(QuantKg, AllNonFiniteGroupGetsZeroScale) {
  std::vector<float> x(128, std::numeric_limits<float>::quiet_NaN());
  x[1] = std::numeric_limits<float>::infinity();
  x[2] = -std::numeric_limits<float>::infinity();
  x[3] = 0.0f;
  for (DType t : kKgTypes) {
    SCOPED_TRACE(std::string(qcoll::dtype_name(t)));
    Kg k = run_kg(x, 1, 128, t);
    EXPECT_EQ(f32_bits(k.s[0]), 0u);
    EXPECT_EQ(decode(t, k.q[1]), max_finite(t));
    EXPECT_EQ(decode(t, k.q[2]), -max_finite(t));
    EXPECT_EQ(k.q[3], 0x00);
    if (t == DType::Int8)
      EXPECT_EQ(k.q[0], 0);
    else
      EXPECT_TRUE(std::isnan(decode(t, k.q[0])));
  }
}

TEST(QuantKg, ScaleUnderflowGivesZeroGroup) {
  // amax = 50 * 2^-149: amax / 127 rounds to +0 in fp32, so the group is a zero group.
  // (HiF8's target may be as small as 1, so its scale need not underflow.)
  std::vector<float> x(128, 0.0f);
  x[0] = std::ldexp(50.0f, -149);
  x[1] = -std::ldexp(20.0f, -149);
  for (DType t : {DType::Int8, DType::Float8E4M3FN, DType::Float8E5M2}) {
    Kg k = run_kg(x, 1, 128, t);
    EXPECT_EQ(k.s[0], 0.0f) << qcoll::dtype_name(t);
    EXPECT_EQ(k.q[0], 0x00);
    EXPECT_EQ(k.q[1], 0x00);
  }
  qq::KgOptions big;
  big.hif8_target = 32768.0f;
  Kg h = run_kg(x, 1, 128, DType::HiFloat8, big);
  EXPECT_EQ(h.s[0], 0.0f);
  EXPECT_EQ(h.q[0], 0x00);
  EXPECT_EQ(h.q[1], 0x00);
  // A subnormal amax whose scale stays nonzero still follows the rule.
  x[0] = std::ldexp(3000.0f, -149);
  Kg k = run_kg(x, 1, 128, DType::Int8);
  EXPECT_EQ(k.s[0], x[0] / 127.0f);
  EXPECT_NE(k.s[0], 0.0f);
  expect_matches_reference(x, 1, 128, DType::Int8, k, 127.0f);
}

TEST(QuantKg, Bf16EqualsFp32OnBf16Values) {
  const std::size_t rows = 4, H = 256;
  std::mt19937 gen(42);
  std::vector<uint16_t> xb(rows * H);
  std::vector<float> xf(rows * H);
  for (std::size_t i = 0; i < xb.size(); ++i) {
    uint16_t b;
    do {
      b = static_cast<uint16_t>(gen());
    } while (((b >> 7) & 0xFF) == 0xFF);  // finite only
    xb[i] = b;
    xf[i] = bf16_value(b);
  }
  xb[3] = 0x7FC0;  // NaN
  xf[3] = bf16_value(0x7FC0);
  xb[300] = 0xFF80;  // -Inf
  xf[300] = bf16_value(0xFF80);
  for (DType t : kKgTypes) {
    SCOPED_TRACE(std::string(qcoll::dtype_name(t)));
    Kg a = run_kg(xf, rows, H, t);
    Kg b{std::vector<uint8_t>(rows * H), std::vector<float>(rows * H / 128)};
    ASSERT_TRUE(qq::quantize_kg_bf16(xb.data(), rows, H, t, b.q.data(), b.s.data()));
    EXPECT_EQ(a.q, b.q);
    EXPECT_EQ(0, std::memcmp(a.s.data(), b.s.data(), a.s.size() * 4));
  }
}

namespace {

// Worst-case |decode(q) - r| for an encoded r (in units of the encoded value), from the
// format's mantissa width at |r| (contract.md §formats). Saturated values are handled by the caller.
double format_error_bound(DType t, double r) {
  const double a = std::fabs(r);
  switch (t) {
    case DType::Int8:
      return 0.5;
    case DType::Float8E4M3FN:  // 3 mantissa bits, subnormal step 2^-9
      return a >= std::ldexp(1.0, -6) ? a * std::ldexp(1.0, -4) : std::ldexp(1.0, -10);
    case DType::Float8E5M2:  // 2 mantissa bits, subnormal step 2^-16
      return a >= std::ldexp(1.0, -14) ? a * std::ldexp(1.0, -3) : std::ldexp(1.0, -17);
    case DType::HiFloat8: {
      if (a < std::ldexp(1.0, -15)) return std::ldexp(1.0, -16);  // denormal steps <= 2^-16
      const int e = std::ilogb(a);
      const int mag = std::abs(e);
      const int mbits = mag <= 3 ? 3 : mag <= 7 ? 2 : 1;
      // ties away: at most half a step of the binade; a value rounding up into the next binade
      // is still within half a step of this one.
      return std::ldexp(1.0, e - mbits - 1);
    }
    default:
      return 0;
  }
}

}  // namespace

TEST(QuantKg, DequantErrorWithinFormatBound) {
  const std::size_t rows = 16, H = 1024;
  std::vector<float> x = random_values(rows * H, 2024);
  // heavy tail: every 61st value times 30
  for (std::size_t i = 0; i < x.size(); i += 61) x[i] *= 30.0f;
  for (DType t : kKgTypes) {
    SCOPED_TRACE(std::string(qcoll::dtype_name(t)));
    Kg k = run_kg(x, rows, H, t);
    std::vector<float> d(rows * H);
    ASSERT_TRUE(qq::dequantize(k.q.data(), k.s.data(), rows, H, t, DType::Float, d.data()));
    double worst_ratio = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double scale = k.s[i / 128];
      const double r = double(x[i]) / scale;
      // error of the encoding, in value units, plus fp32 rounding of the division and product
      const double bound =
          format_error_bound(t, r) * scale * (1 + 1e-6) + std::fabs(double(x[i])) * std::ldexp(1.0, -22);
      const double err = std::fabs(double(d[i]) - double(x[i]));
      ASSERT_LE(err, bound) << "i " << i << " v " << x[i] << " d " << d[i];
      worst_ratio = std::max(worst_ratio, err / bound);
    }
    EXPECT_GT(worst_ratio, 0.3);  // the bound is not vacuous
  }
}

TEST(QuantKg, Int8ErrorAtMostHalfScale) {
  std::vector<float> x = random_values(8 * 1024, 31);
  Kg k = run_kg(x, 8, 1024, DType::Int8);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float d = static_cast<float>(static_cast<int8_t>(k.q[i])) * k.s[i / 128];
    ASSERT_LE(std::fabs(double(d) - x[i]), 0.5 * k.s[i / 128] * (1 + 1e-4))
        << i;  // + fp32 rounding of v/scale and q*scale
  }
}

TEST(QuantKg, BadArgumentsWriteNothing) {
  std::vector<float> x = random_values(2 * 256, 3);
  std::vector<uint16_t> xb(2 * 256, 0x3F80);
  std::vector<uint8_t> q(512, 0xAB);
  std::vector<float> s(4, -7.0f);
  auto untouched = [&] {
    for (auto b : q)
      if (b != 0xAB) return false;
    for (auto v : s)
      if (v != -7.0f) return false;
    return true;
  };
  EXPECT_FALSE(qq::quantize_kg(x.data(), 2, 200, DType::Int8, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_kg(x.data(), 2, 0, DType::Int8, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_kg(x.data(), 1, 64, DType::Int8, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_kg(x.data(), 2, 256, DType::Float, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_kg(x.data(), 2, 256, DType::Float8E8M0, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_kg(x.data(), 2, 256, static_cast<DType>(99), q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_kg(nullptr, 2, 256, DType::Int8, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_kg(x.data(), 2, 256, DType::Int8, nullptr, s.data()));
  EXPECT_FALSE(qq::quantize_kg(x.data(), 2, 256, DType::Int8, q.data(), nullptr));
  EXPECT_FALSE(qq::quantize_kg_bf16(xb.data(), 2, 100, DType::Int8, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_kg_bf16(nullptr, 2, 256, DType::Int8, q.data(), s.data()));
  for (float bad :
       {-1.0f, 0.5f, 40000.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    qq::KgOptions opt;
    opt.hif8_target = bad;
    EXPECT_FALSE(qq::quantize_kg(x.data(), 2, 256, DType::HiFloat8, q.data(), s.data(), opt)) << bad;
  }
  EXPECT_TRUE(untouched());
  // rows == 0 is a valid no-op
  EXPECT_TRUE(qq::quantize_kg(x.data(), 0, 256, DType::Int8, q.data(), s.data()));
  EXPECT_TRUE(untouched());
}

TEST(QuantKg, CheckArgsMessages) {
  float x = 0;
  uint8_t q = 0;
  float s = 0;
  auto st = qq::check_quantize_args(&x, 1, 1000, DType::Int8, DType::Float, &q, &s);
  EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
  EXPECT_NE(st.message.find("H"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("128"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("1000"), std::string::npos) << st.message;
  st = qq::check_quantize_args(nullptr, 1, 128, DType::Int8, DType::Float, &q, &s);
  EXPECT_EQ(st.code, qcoll::StatusCode::ParamNullptr);
  EXPECT_NE(st.message.find("x"), std::string::npos) << st.message;
  st = qq::check_quantize_args(&x, 1, 128, DType::Float16, DType::Float, &q, &s);
  EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
  EXPECT_NE(st.message.find("float16"), std::string::npos) << st.message;
  st = qq::check_quantize_args(&x, 1, 128, DType::HiFloat8, DType::Float, &q, &s, -3.0f);
  EXPECT_NE(st.message.find("hif8_target"), std::string::npos) << st.message;
  EXPECT_TRUE(qq::check_quantize_args(&x, 1, 128, DType::HiFloat8, DType::Float, &q, &s).ok());
}

// The quantizer entry point takes the input dtype and returns the Status of its one check.
TEST(QuantKg, EntryPointStatus) {
  std::vector<float> x = random_values(2 * 128, 21);
  std::vector<uint8_t> q(x.size()), q_ref(x.size());
  std::vector<float> s(2), s_ref(2);
  auto st = qq::quantize_rows(DType::Int8, x.data(), 2, 128, DType::Int8, DType::Float, q.data(), s.data(), {});
  EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
  EXPECT_EQ(st.message, "in_dtype: must be float, bfloat16 or float16, got int8");
  qq::QuantOptions bad;
  bad.threads = -1;
  st = qq::quantize_rows(DType::Float, x.data(), 2, 128, DType::Int8, DType::Float, q.data(), s.data(), bad);
  EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
  EXPECT_NE(st.message.find("threads"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("-1"), std::string::npos) << st.message;
  st = qq::quantize_rows(DType::Float, x.data(), 2, 128, DType::Int8, DType::Float, nullptr, s.data(), {});
  EXPECT_EQ(st.code, qcoll::StatusCode::ParamNullptr);
  EXPECT_NE(st.message.find("q"), std::string::npos) << st.message;
  // A good call: the bits of the typed public function.
  for (DType t : kKgTypes) {
    ASSERT_TRUE(qq::quantize_rows(DType::Float, x.data(), 2, 128, t, DType::Float, q.data(), s.data(), {}).ok());
    ASSERT_TRUE(qq::quantize_kg(x.data(), 2, 128, t, q_ref.data(), s_ref.data()));
    EXPECT_EQ(q, q_ref);
    EXPECT_EQ(std::memcmp(s.data(), s_ref.data(), sizeof(float) * s.size()), 0);
  }
}

TEST(QuantKg, ConvenienceTensor) {
  std::vector<float> x = random_values(4 * 256, 8);
  for (DType t : kKgTypes) {
    qq::QuantizedTensor qt;
    ASSERT_TRUE(qq::quantize(x.data(), 4, 256, t, DType::Float, qt).ok());
    Kg k = run_kg(x, 4, 256, t);
    EXPECT_EQ(qt.q, k.q);
    ASSERT_EQ(qt.kg_scales.size(), 8u);
    EXPECT_TRUE(qt.mx_scales.empty());
    EXPECT_EQ(qt.scales_bytes(), 32u);
    EXPECT_EQ(0, std::memcmp(qt.scales_data(), k.s.data(), 32));
    std::vector<float> d = qq::dequantize(qt);
    ASSERT_EQ(d.size(), x.size());
    for (std::size_t i = 0; i < d.size(); ++i)
      ASSERT_EQ(f32_bits(d[i]), f32_bits(static_cast<float>(decode(t, k.q[i])) * k.s[i / 128]));
  }
  qq::QuantizedTensor keep;
  keep.rows = 99;
  auto st = qq::quantize(x.data(), 4, 100, DType::Int8, DType::Float, keep);
  EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
  EXPECT_EQ(keep.rows, 99u);
  st = qq::quantize(x.data(), 4, 256, DType::Int8, DType::Float8E8M0, keep);
  EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
  EXPECT_NE(st.message.find("int8"), std::string::npos) << st.message;
}
