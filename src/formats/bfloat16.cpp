// BFLOAT16: the top 16 bits of an fp32. Decode exact; encode round to nearest even,
// subnormals kept, overflow -> +-Inf, NaN -> quiet NaN keeping the sign and the top
// payload bits (contract.md §encoders).
#include <cstdint>

#include "formats/ieee_like_rounding.hpp"
#include "formats/traits.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {
namespace {
using T = Traits<DType::BFloat16>;
}  // namespace

float decode_bfloat16(uint16_t bits) { return detail::f32_from_bits(static_cast<uint32_t>(bits) << 16); }

uint16_t encode_bfloat16(float v) {
  const uint32_t bits = detail::f32_bits(v);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs_bits = bits & detail::kF32AbsMask;
  if (detail::f32_abs_is_nan(abs_bits)) return sign | T::kNaNCode | static_cast<uint16_t>((abs_bits >> 16) & 0x7Fu);
  const uint32_t code = detail::round_magnitude_rne<T::kExponentBias, T::kMantissaBits>(abs_bits);
  if (code > T::kMaxCode) return sign | T::kInfCode;  // overflow and Inf
  return sign | static_cast<uint16_t>(code);
}

}  // namespace qcoll::formats
