// HIFLOAT8 (HiF8), Huawei's tapered 8-bit float (contract.md §formats-hifloat8):
//   byte = sign(1) | dot | exponent | mantissa, the dot field (11, 10, 01, 001, 0001,
//   0000) giving the exponent width (4, 3, 2, 1, 0 bits, sign-magnitude with an implied
//   leading 1) and hence the mantissa width (1, 2, 3, 3, 3 bits); 0000 is the denormal
//   range 2^(v-23), v = 1..7. 0x00 = 0 (only zero), 0x80 = NaN (only NaN), 0x6F/0xEF = +-Inf.
//
// Encoder (contract.md §encoders): nearest representable value, ties away from zero. Because every
// value of a binade [2^E, 2^(E+1)) lies closer to 2^E than to anything below it, rounding
// the mantissa to the width of the value's own binade (0 bits in the denormal range),
// with a carry into the next binade, is exactly the nearest-value rule even where the
// width changes. [2^-23, 2^-22) -> 2^-22 (the tie at 2^-23 goes away from zero), below
// 2^-23 -> 0. No negative zero: a negative value that rounds to 0 gives 0x00.
// Overflow after rounding, as if the binade 2^15 continued with 1.5*2^15: values from
// 40960 up overflow -> +-Inf (non-saturating) or +-32768 (saturating, +-Inf too).
// NaN -> 0x80 in both modes (HiF8 has a single, unsigned NaN).
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "formats/float_bits.hpp"
#include "formats/hifloat8_binades.hpp"
#include "formats/traits.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {
namespace {

using T = Traits<DType::HiFloat8>;
constexpr uint8_t kNaNCode = T::kNaNCode;
constexpr uint8_t kInfCode = T::kInfCode;
constexpr uint8_t kMaxFiniteCode = T::kMaxCode;  // 32768
constexpr int kMinExp = hif8::kMinExp;           // 0x01 = 2^-22
constexpr int kMaxExp = hif8::kMaxExp;

using hif8::Binade;
using hif8::kBinades;

}  // namespace

float decode_hifloat8(uint8_t b) {
  if (b == 0x00) return 0.0f;
  if (b == kNaNCode) return std::numeric_limits<float>::quiet_NaN();
  const float s = (b & T::kSignMask) ? -1.0f : 1.0f;
  const int v = b & T::kAbsMask;
  if (v == kInfCode) return s * std::numeric_limits<float>::infinity();
  if (v < 0x08) return s * std::ldexp(1.0f, v - T::kDenormalOffset);  // denormal
  int mag, mant_bits, exp_neg;
  if (v >= 0x60) {
    mag = 8 + ((v >> 1) & 7);
    mant_bits = 1;
    exp_neg = v & 0x10;
  } else if (v >= 0x40) {
    mag = 4 + ((v >> 2) & 3);
    mant_bits = 2;
    exp_neg = v & 0x10;
  } else if (v >= 0x20) {
    mag = 2 + ((v >> 3) & 1);
    mant_bits = 3;
    exp_neg = v & 0x10;
  } else if (v >= 0x10) {
    mag = 1;
    mant_bits = 3;
    exp_neg = v & 0x08;
  } else {
    mag = 0;
    mant_bits = 3;
    exp_neg = 0;
  }
  const int mant = v & ((1 << mant_bits) - 1);
  const int e = exp_neg ? -mag : mag;
  return s * std::ldexp(static_cast<float>((1 << mant_bits) + mant), e - mant_bits);
}

uint8_t encode_hifloat8(float v, Saturation s) {
  const uint32_t bits = detail::f32_bits(v);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  const uint32_t abs_bits = bits & detail::kF32AbsMask;
  if (detail::f32_abs_is_nan(abs_bits)) return kNaNCode;
  const uint8_t overflow = sign | (s == Saturation::Saturating ? kMaxFiniteCode : kInfCode);
  int e = static_cast<int>(abs_bits >> 23) - 127;
  if (e > kMaxExp) return overflow;          // >= 2^16, and Inf
  if (e < kMinExp - 1) return 0x00;          // < 2^-23 (fp32 subnormals included)
  if (e == kMinExp - 1) return sign | 0x01;  // [2^-23, 2^-22) -> 2^-22
  const uint32_t man32 = abs_bits & 0x7FFFFFu;
  Binade bin = kBinades[e - kMinExp];
  const unsigned drop = 23u - bin.mant_bits;
  uint32_t q = (man32 >> drop) + ((man32 >> (drop - 1)) & 1u);  // ties away from zero
  if (q == (uint32_t{1} << bin.mant_bits)) {                    // carry into the next binade
    q = 0;
    if (++e > kMaxExp) return overflow;
    bin = kBinades[e - kMinExp];
  }
  const uint8_t code = static_cast<uint8_t>(bin.base_code | q);
  if (code == kInfCode) return overflow;  // 1.5 * 2^15 would be the next value
  return sign | code;
}

}  // namespace qcoll::formats
