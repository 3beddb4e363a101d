// FLOAT8_E5M2: 1 sign, 5 exponent (bias 15), 2 mantissa bits, IEEE-like: subnormals
// m * 2^-16, S.11111.00 = +-Inf (0x7C/0xFC), S.11111.{01,10,11} NaN; max 57344 (contract.md §formats-e5m2).
// Encoder: RNE, overflow decided after rounding (from 61440 up); overflow and +-Inf ->
// +-Inf (non-saturating) or +-57344 (saturating). NaN input -> quiet NaN 0x7E / 0xFE,
// keeping the input's sign bit, in both modes.
#include <cmath>
#include <cstdint>
#include <limits>

#include "formats/ieee_like_rounding.hpp"
#include "formats/traits.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {
namespace {
using T = Traits<DType::Float8E5M2>;
constexpr uint32_t kMaxFiniteCode = T::kMaxCode;  // 57344
constexpr uint8_t kInfCode = T::kInfCode;
constexpr uint8_t kQuietNaNCode = T::kNaNCode;
constexpr int kM = T::kMantissaBits;
constexpr uint32_t kExpAllOnes = (1u << T::kExponentBits) - 1;
}  // namespace

float decode_float8_e5m2(uint8_t b) {
  const uint32_t exp = (b & T::kAbsMask) >> kM;
  const uint32_t man = b & ((1u << kM) - 1);
  const bool neg = (b & T::kSignMask) != 0;
  float mag;
  if (exp == kExpAllOnes) {
    mag = man == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    mag = std::ldexp(static_cast<float>(man), 1 - T::kExponentBias - kM);
  } else {
    mag = std::ldexp(static_cast<float>((1u << kM) + man), static_cast<int>(exp) - T::kExponentBias - kM);
  }
  return neg ? -mag : mag;
}

uint8_t encode_float8_e5m2(float v, Saturation s) {
  const uint32_t bits = detail::f32_bits(v);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  const uint32_t abs_bits = bits & detail::kF32AbsMask;
  if (detail::f32_abs_is_nan(abs_bits)) return sign | kQuietNaNCode;
  const uint32_t code = detail::round_magnitude_rne<T::kExponentBias, kM>(abs_bits);
  if (code > kMaxFiniteCode)
    return sign | (s == Saturation::Saturating ? static_cast<uint8_t>(kMaxFiniteCode) : kInfCode);
  return sign | static_cast<uint8_t>(code);
}

}  // namespace qcoll::formats
