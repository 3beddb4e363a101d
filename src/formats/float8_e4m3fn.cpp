// FLOAT8_E4M3FN: 1 sign, 4 exponent (bias 7), 3 mantissa bits; subnormals m * 2^-9;
// no infinities; S.1111.111 (0x7F/0xFF) is NaN; max 448 (contract.md §formats-e4m3).
// Encoder: RNE, overflow decided after rounding (> 464 overflows, 464 -> 448);
// overflow -> NaN with the input's sign (non-saturating) or +-448 (saturating, Inf too).
// NaN input -> 0x7F / 0xFF keeping the input's sign bit, in both modes.
#include <cmath>
#include <cstdint>
#include <limits>

#include "formats/ieee_like_rounding.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {
namespace {
constexpr uint32_t kMaxFiniteCode = 0x7E;  // 448
constexpr uint8_t kNaNCode = 0x7F;
}  // namespace

float decode_float8_e4m3fn(uint8_t b) {
  const uint32_t exp = (b >> 3) & 0xF;
  const uint32_t man = b & 0x7;
  const bool neg = (b & 0x80) != 0;
  float mag;
  if (exp == 0xF && man == 0x7) {
    mag = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    mag = std::ldexp(static_cast<float>(man), -9);
  } else {
    mag = std::ldexp(static_cast<float>(8 + man), static_cast<int>(exp) - 7 - 3);
  }
  return neg ? -mag : mag;
}

uint8_t encode_float8_e4m3fn(float v, Saturation s) {
  const uint32_t bits = detail::f32_bits(v);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  const uint32_t abs_bits = bits & detail::kF32AbsMask;
  if (detail::f32_abs_is_nan(abs_bits)) return sign | kNaNCode;
  const uint32_t code = detail::round_magnitude_rne<7, 3>(abs_bits);
  if (code > kMaxFiniteCode)
    return sign | (s == Saturation::Saturating ? static_cast<uint8_t>(kMaxFiniteCode) : kNaNCode);
  return sign | static_cast<uint8_t>(code);
}

}  // namespace qcoll::formats
