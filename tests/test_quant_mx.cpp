// MX (OCP MX v1.0, blocks of 32, E8M0 scales) quantizer tests against contract.md §quantizers-mx, with the
// independent references of tests/oracle.hpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "oracle.hpp"
#include "qcoll/quant.hpp"

using qcoll::DType;
using namespace oracle;
namespace qq = qcoll::quant;

namespace {

constexpr DType kMxTypes[] = {DType::Float8E4M3FN, DType::Float8E5M2};
int emax_elem(DType t) { return t == DType::Float8E4M3FN ? 8 : 15; }

struct Mx {
  std::vector<uint8_t> q;
  std::vector<uint8_t> s;
};

Mx run_mx(const std::vector<float>& x, std::size_t rows, std::size_t H, DType t) {
  Mx r{std::vector<uint8_t>(rows * H, 0xAB), std::vector<uint8_t>(rows * H / 32, 0xAB)};
  EXPECT_TRUE(qq::quantize_mx(x.data(), rows, H, t, r.q.data(), r.s.data()));
  return r;
}

// Reference: floor(log2(amax)) from frexp in double (exact, subnormal fp32 included); the
// element quotient v / 2^shared_exp is exact in double and rounded once by the encoder.
void expect_matches_reference(const std::vector<float>& x, DType t, const Mx& got) {
  for (std::size_t b = 0; b < x.size() / 32; ++b) {
    double amax = 0;
    for (std::size_t i = b * 32; i < b * 32 + 32; ++i)
      if (std::isfinite(x[i])) amax = std::max(amax, std::fabs(double(x[i])));
    int se = -127;
    if (amax > 0) {
      int e;
      std::frexp(amax, &e);  // amax = m * 2^e, m in [0.5, 1)
      se = std::max(e - 1 - emax_elem(t), -127);
    }
    ASSERT_EQ(got.s[b], se + 127) << "block " << b << " amax " << amax;
    for (std::size_t i = b * 32; i < b * 32 + 32; ++i)
      ASSERT_PRED3(same_code, t, got.q[i], encode_sat(t, std::ldexp(double(x[i]), -se)))
          << qcoll::dtype_name(t) << " element " << i << " v " << x[i] << " se " << se;
  }
}

}  // namespace

TEST(QuantMx, SpecVectors) {
  // contract.md §vectors: two E4M3 blocks in one row of 64.
  std::vector<float> x(64, 0.0f);
  x[0] = 0, x[1] = 8, x[2] = 64, x[3] = 512;
  x[32] = 500, x[33] = -1, x[34] = 0.3f, x[35] = std::ldexp(1.0f, -9);
  Mx r = run_mx(x, 1, 64, DType::Float8E4M3FN);
  EXPECT_EQ(r.s[0], 0x80);
  EXPECT_EQ(r.s[1], 0x7F);
  const uint8_t want0[] = {0x00, 0x48, 0x60, 0x78};
  const uint8_t want1[] = {0x7E, 0xB8, 0x2A, 0x01};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r.q[i], want0[i]) << i;
    EXPECT_EQ(r.q[32 + i], want1[i]) << i;
  }
  for (int i = 4; i < 32; ++i) {
    EXPECT_EQ(r.q[i], 0x00);
    EXPECT_EQ(r.q[32 + i], 0x00);
  }
}

TEST(QuantMx, MatchesReferenceOnRandomData) {
  const std::size_t rows = 5, H = 1024;
  std::vector<float> x = random_values(rows * H, 99);
  for (std::size_t b = 0; b < x.size() / 32; ++b)
    for (std::size_t i = b * 32; i < b * 32 + 32; ++i)
      x[i] = std::ldexp(x[i], static_cast<int>(b % 53) * 5 - 140);  // 2^-140 .. 2^120
  for (DType t : kMxTypes) {
    SCOPED_TRACE(std::string(qcoll::dtype_name(t)));
    expect_matches_reference(x, t, run_mx(x, rows, H, t));
  }
}

TEST(QuantMx, SharedExponentFromExponentField) {
  // amax just below / at powers of two, tiny normal, subnormal, and the fp32 maximum.
  const float amaxes[] = {std::nextafter(512.0f, 0.0f),
                          512.0f,
                          1.0f,
                          1.5f * std::ldexp(1.0f, -100),
                          std::ldexp(1.0f, -119),
                          std::ldexp(1.0f, -120),
                          std::ldexp(3.0f, -149),
                          std::ldexp(1.0f, -149),
                          std::ldexp(8388607.0f, -149),
                          std::numeric_limits<float>::max()};
  for (DType t : kMxTypes) {
    for (float amax : amaxes) {
      std::vector<float> x(64, 0.0f);
      x[5] = -amax;
      x[6] = amax * 0.375f;
      x[40] = amax;
      Mx r = run_mx(x, 1, 64, t);
      int e;
      std::frexp(double(amax), &e);
      const int se = std::max(e - 1 - emax_elem(t), -127);
      EXPECT_EQ(r.s[0], se + 127) << qcoll::dtype_name(t) << " amax " << amax;
      EXPECT_EQ(r.s[1], se + 127) << qcoll::dtype_name(t) << " amax " << amax;
      expect_matches_reference(x, t, r);
    }
  }
}

TEST(QuantMx, HandDerivedScaleBytes) {
  struct Case {
    float amax;
    DType t;
    uint8_t byte;
  } cases[] = {
      // floor(log2(1.5 * 2^-100)) = -100 -> shared_exp -108 -> byte 19
      {1.5f * std::ldexp(1.0f, -100), DType::Float8E4M3FN, 19},
      // floor(log2(FLT_MAX)) = 127 -> 119 (E4M3) / 112 (E5M2)
      {std::numeric_limits<float>::max(), DType::Float8E4M3FN, 246},
      {std::numeric_limits<float>::max(), DType::Float8E5M2, 239},
      // below the clamp (incl. a subnormal amax) -> -127 -> 0x00
      {std::ldexp(1.0f, -140), DType::Float8E4M3FN, 0x00},
      {std::ldexp(1.0f, -149), DType::Float8E5M2, 0x00},
      {1.0f, DType::Float8E4M3FN, 119},
      {1.0f, DType::Float8E5M2, 112},
      {57344.0f, DType::Float8E5M2, 127},
  };
  for (const Case& c : cases) {
    std::vector<float> x(64, 0.0f);
    x[31] = c.amax;
    Mx r = run_mx(x, 1, 64, c.t);
    EXPECT_EQ(r.s[0], c.byte) << c.amax;
    EXPECT_EQ(r.s[1], 0x00);  // all-zero block
  }
}

TEST(QuantMx, ElementsOfClampedTinyBlock) {
  // amax 2^-140: shared_exp clamps to -127; elements are v * 2^127 (2^-13 here), which is
  // below E4M3's smallest subnormal half-step (-> 0) but a normal E5M2 value (2^-13 -> 0x08).
  std::vector<float> y(64, 0.0f);
  y[0] = std::ldexp(1.0f, -140);
  y[1] = -std::ldexp(1.0f, -140);
  Mx e4 = run_mx(y, 1, 64, DType::Float8E4M3FN);
  Mx e5 = run_mx(y, 1, 64, DType::Float8E5M2);
  EXPECT_EQ(e4.s[0], 0x00);
  EXPECT_EQ(e4.q[0], 0x00);
  EXPECT_EQ(e4.q[1], 0x80);  // -0
  EXPECT_EQ(e5.s[0], 0x00);
  EXPECT_EQ(e5.q[0], 0x08);  // 2^-13: exponent field 2, mantissa 0
  EXPECT_EQ(e5.q[1], 0x88);
}

TEST(QuantMx, AllZeroBlock) {
  std::vector<float> x = random_values(128, 3);
  for (int i = 32; i < 64; ++i) x[i] = (i % 3) ? 0.0f : -0.0f;
  for (DType t : kMxTypes) {
    Mx r = run_mx(x, 1, 128, t);
    EXPECT_EQ(r.s[1], 0x00) << qcoll::dtype_name(t);
    for (int i = 32; i < 64; ++i) EXPECT_EQ(decode(t, r.q[i]), 0.0) << qcoll::dtype_name(t) << " " << i;
    expect_matches_reference(x, t, r);
  }
}

TEST(QuantMx, NonFiniteElements) {
  // amax over finite values (3.0 here); NaN -> NaN code; +-Inf -> +-max finite code.
  std::vector<float> x(64, 0.5f);
  x[2] = 3.0f;
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[4] = std::numeric_limits<float>::infinity();
  x[5] = -std::numeric_limits<float>::infinity();
  for (int i = 32; i < 64; ++i) x[i] = std::numeric_limits<float>::quiet_NaN();  // all-NaN block
  x[40] = std::numeric_limits<float>::infinity();
  for (DType t : kMxTypes) {
    SCOPED_TRACE(std::string(qcoll::dtype_name(t)));
    Mx r = run_mx(x, 1, 64, t);
    EXPECT_EQ(r.s[0], 127 + 1 - emax_elem(t));  // floor(log2 3) = 1
    EXPECT_TRUE(std::isnan(decode(t, r.q[3])));
    EXPECT_EQ(decode(t, r.q[4]), max_finite(t));
    EXPECT_EQ(decode(t, r.q[5]), -max_finite(t));
    EXPECT_EQ(r.s[1], 0x00);
    EXPECT_TRUE(std::isnan(decode(t, r.q[33])));
    EXPECT_EQ(decode(t, r.q[40]), max_finite(t));
    expect_matches_reference(x, t, r);
  }
}

TEST(QuantMx, ScaleLayoutFlatIndex) {
  // Scales (rows, H/64, 2): element (row, h) uses byte (row*H + h) / 32. Block (row, j) gets
  // amax 2^(row*8 + j), so its E4M3 byte is 127 + row*8 + j - 8.
  const std::size_t rows = 3, H = 256, B = H / 32;
  std::vector<float> x(rows * H, 0.0f);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < B; ++j)
      x[r * H + j * 32 + (r + 5 * j) % 32] = std::ldexp(1.0f, static_cast<int>(r * 8 + j));
  Mx m = run_mx(x, rows, H, DType::Float8E4M3FN);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t j = h / 32;
      EXPECT_EQ(m.s[(r * H + h) / 32], 127 + r * 8 + j - 8) << r << "," << h;
      // the (rows, H/64, 2) reading of the same byte
      EXPECT_EQ(m.s[r * (H / 64) * 2 + (h / 64) * 2 + (h / 32) % 2], m.s[(r * H + h) / 32]);
    }
  expect_matches_reference(x, DType::Float8E4M3FN, m);
}

TEST(QuantMx, Bf16EqualsFp32OnBf16Values) {
  const std::size_t rows = 3, H = 192;
  std::mt19937 gen(7);
  std::vector<uint16_t> xb(rows * H);
  std::vector<float> xf(rows * H);
  for (std::size_t i = 0; i < xb.size(); ++i) {
    uint16_t b;
    do {
      b = static_cast<uint16_t>(gen());
    } while (((b >> 7) & 0xFF) == 0xFF);
    xb[i] = b;
    xf[i] = bf16_value(b);
  }
  xb[10] = 0xFFC1;  // NaN
  xf[10] = bf16_value(0xFFC1);
  xb[100] = 0x7F80;  // +Inf
  xf[100] = bf16_value(0x7F80);
  for (DType t : kMxTypes) {
    Mx a = run_mx(xf, rows, H, t);
    Mx b{std::vector<uint8_t>(rows * H), std::vector<uint8_t>(rows * H / 32)};
    ASSERT_TRUE(qq::quantize_mx_bf16(xb.data(), rows, H, t, b.q.data(), b.s.data()));
    EXPECT_EQ(a.q, b.q) << qcoll::dtype_name(t);
    EXPECT_EQ(a.s, b.s) << qcoll::dtype_name(t);
  }
}

TEST(QuantMx, DequantErrorWithinBound) {
  // With v' = v / 2^se: |v'| < 2^(emax+1). Below max finite the error is half a step of the
  // element format (E4M3: 2^-4 relative / 2^-10 absolute in the subnormals; E5M2: 2^-3 /
  // 2^-17); above max finite the element saturates, error |v'| - max.
  const std::size_t rows = 8, H = 1024;
  std::vector<float> x = random_values(rows * H, 555);
  for (std::size_t i = 0; i < x.size(); i += 17) x[i] *= 20.0f;
  for (DType t : kMxTypes) {
    SCOPED_TRACE(std::string(qcoll::dtype_name(t)));
    Mx m = run_mx(x, rows, H, t);
    std::vector<float> d(x.size());
    ASSERT_TRUE(qq::dequantize(m.q.data(), m.s.data(), rows, H, t, DType::Float8E8M0, d.data()));
    const double rel = t == DType::Float8E4M3FN ? std::ldexp(1.0, -4) : std::ldexp(1.0, -3);
    const double min_normal = t == DType::Float8E4M3FN ? std::ldexp(1.0, -6) : std::ldexp(1.0, -14);
    const double sub_half = t == DType::Float8E4M3FN ? std::ldexp(1.0, -10) : std::ldexp(1.0, -17);
    int saturated = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double scale = decode_e8m0(m.s[i / 32]);
      const double r = std::fabs(double(x[i])) / scale;
      double bound;
      if (r > max_finite(t)) {
        bound = r - max_finite(t), ++saturated;
        ASSERT_LT(r, std::ldexp(1.0, emax_elem(t) + 1));
      } else {
        bound = r >= min_normal ? r * rel : sub_half;
      }
      ASSERT_LE(std::fabs(double(d[i]) - x[i]), bound * scale * (1 + 1e-9)) << i << " v " << x[i];
    }
    EXPECT_GT(saturated, 0);  // OCP MX does saturate the top of the binade; the test sees it
  }
}

TEST(QuantMx, BadArgumentsWriteNothing) {
  std::vector<float> x = random_values(2 * 128, 3);
  std::vector<uint16_t> xb(2 * 128, 0x3F80);
  std::vector<uint8_t> q(256, 0xAB), s(8, 0xAB);
  auto untouched = [&] {
    for (auto b : q)
      if (b != 0xAB) return false;
    for (auto b : s)
      if (b != 0xAB) return false;
    return true;
  };
  EXPECT_FALSE(qq::quantize_mx(x.data(), 2, 96, DType::Float8E4M3FN, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_mx(x.data(), 2, 32, DType::Float8E4M3FN, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_mx(x.data(), 2, 0, DType::Float8E4M3FN, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_mx(x.data(), 2, 128, DType::Int8, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_mx(x.data(), 2, 128, DType::HiFloat8, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_mx(x.data(), 2, 128, static_cast<DType>(-5), q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_mx(nullptr, 2, 128, DType::Float8E5M2, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_mx(x.data(), 2, 128, DType::Float8E5M2, nullptr, s.data()));
  EXPECT_FALSE(qq::quantize_mx(x.data(), 2, 128, DType::Float8E5M2, q.data(), nullptr));
  EXPECT_FALSE(qq::quantize_mx_bf16(xb.data(), 2, 100, DType::Float8E5M2, q.data(), s.data()));
  EXPECT_FALSE(qq::quantize_mx_bf16(xb.data(), 2, 128, DType::Int8, q.data(), s.data()));
  EXPECT_TRUE(untouched());
}

TEST(QuantMx, ConvenienceTensor) {
  std::vector<float> x = random_values(2 * 128, 12);
  qq::QuantizedTensor qt;
  ASSERT_TRUE(qq::quantize(x.data(), 2, 128, DType::Float8E5M2, DType::Float8E8M0, qt).ok());
  Mx m = run_mx(x, 2, 128, DType::Float8E5M2);
  EXPECT_EQ(qt.q, m.q);
  EXPECT_EQ(qt.mx_scales, m.s);
  EXPECT_TRUE(qt.kg_scales.empty());
  EXPECT_EQ(qt.scales_bytes(), 8u);
  std::vector<float> d = qq::dequantize(qt);
  ASSERT_EQ(d.size(), x.size());
  for (std::size_t i = 0; i < d.size(); ++i)
    ASSERT_EQ(f32_bits(d[i]),
              f32_bits(static_cast<float>(decode_e5m2(m.q[i])) * static_cast<float>(decode_e8m0(m.s[i / 32]))));
}
