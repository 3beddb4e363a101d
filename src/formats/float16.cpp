// FLOAT16 (IEEE binary16): decode exact; encode round to nearest even, subnormals kept,
// overflow -> +-Inf, NaN -> quiet NaN keeping the sign and the top payload bits (contract.md §encoders).
// Portable bit arithmetic; no F16C or _Float16.
#include <cstdint>

#include "formats/ieee_like_rounding.hpp"
#include "formats/traits.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {
namespace {
using T = Traits<DType::Float16>;
}  // namespace

float decode_float16(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1F;
  const uint32_t man = bits & 0x3FFu;
  if (exp == 0x1F) return detail::f32_from_bits(sign | 0x7F800000u | (man << 13));
  if (exp != 0) return detail::f32_from_bits(sign | ((exp + T::kF32Rebias) << 23) | (man << 13));
  if (man == 0) return detail::f32_from_bits(sign);
  // Subnormal: man * 2^-24; normalise so the leading bit becomes the hidden bit.
  uint32_t e = T::kF32Rebias + 1;  // biased fp32 exponent of 2^-14
  uint32_t m = man;
  while ((m & 0x400u) == 0) {
    m <<= 1;
    --e;
  }
  return detail::f32_from_bits(sign | (e << 23) | ((m & 0x3FFu) << 13));
}

uint16_t encode_float16(float v) {
  const uint32_t bits = detail::f32_bits(v);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs_bits = bits & detail::kF32AbsMask;
  if (detail::f32_abs_is_nan(abs_bits)) return sign | T::kNaNCode | static_cast<uint16_t>((abs_bits >> 13) & 0x3FFu);
  const uint32_t code = detail::round_magnitude_rne<T::kExponentBias, T::kMantissaBits>(abs_bits);
  if (code > T::kMaxCode) return sign | T::kInfCode;  // overflow and Inf
  return sign | static_cast<uint16_t>(code);
}

}  // namespace qcoll::formats
