// FLOAT8_E4M3FN: 1 sign, 4 exponent (bias 7), 3 mantissa bits; subnormals m * 2^-9;
// no infinities; S.1111.111 (0x7F/0xFF) is NaN; max 448 (contract.md §formats-e4m3).
// Encoder: RNE, overflow decided after rounding (> 464 overflows, 464 -> 448);
// overflow -> NaN with the input's sign (non-saturating) or +-448 (saturating, Inf too).
// NaN input -> 0x7F / 0xFF keeping the input's sign bit, in both modes.
#include <cmath>
#include <cstdint>
#include <limits>

#include "formats/ieee_like_rounding.hpp"
#include "formats/traits.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {
namespace {
using T = Traits<DType::Float8E4M3FN>;
constexpr uint32_t kMaxFiniteCode = T::kMaxCode;  // 448
constexpr uint8_t kNaNCode = T::kNaNCode;
constexpr int kM = T::kMantissaBits;
}  // namespace

float decode_float8_e4m3fn(uint8_t b) {
  const uint32_t mag_code = b & T::kAbsMask;
  const uint32_t exp = mag_code >> kM;
  const uint32_t man = mag_code & ((1u << kM) - 1);
  const bool neg = (b & T::kSignMask) != 0;
  float mag;
  if (mag_code == kNaNCode) {
    mag = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    mag = std::ldexp(static_cast<float>(man), 1 - T::kExponentBias - kM);
  } else {
    mag = std::ldexp(static_cast<float>((1u << kM) + man), static_cast<int>(exp) - T::kExponentBias - kM);
  }
  return neg ? -mag : mag;
}

uint8_t encode_float8_e4m3fn(float v, Saturation s) {
  const uint32_t bits = detail::f32_bits(v);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  const uint32_t abs_bits = bits & detail::kF32AbsMask;
  if (detail::f32_abs_is_nan(abs_bits)) return sign | kNaNCode;
  const uint32_t code = detail::round_magnitude_rne<T::kExponentBias, kM>(abs_bits);
  if (code > kMaxFiniteCode)
    return sign | (s == Saturation::Saturating ? static_cast<uint8_t>(kMaxFiniteCode) : kNaNCode);
  return sign | static_cast<uint8_t>(code);
}

}  // namespace qcoll::formats
