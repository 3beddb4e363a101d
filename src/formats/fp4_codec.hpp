// The codec of a 4-bit float format (Traits<X> of traits.hpp: Fp4Traits), shared by
// float4_e2m1.cpp and float4_e1m2.cpp: exact decode, saturating round-to-nearest-even
// encode (contract.md §ext-fp4-encode).
#pragma once
#include <cstdint>

#include "formats/float_bits.hpp"
#include "formats/ieee_like_rounding.hpp"
#include "formats/traits.hpp"

namespace qcoll::formats::detail {

// The value of code (bits 4-7 ignored): exact in fp32 (a few bits at 2^-2 .. 2^2).
template <DType X>
constexpr float fp4_decode(uint8_t code) {
  using T = Traits<X>;
  const float mag = ieee_like_value(code & T::kAbsMask, T::kExponentBias, T::kMantissaBits);
  return (code & T::kSignMask) != 0 ? -mag : mag;
}

// RNE of |v| to the format's grid (round_magnitude_rne: overflow decided after rounding),
// then saturation to the largest code; the sign bit of v kept, NaN -> 0.
template <DType X>
inline uint8_t fp4_encode(float v) {
  using T = Traits<X>;
  const uint32_t bits = f32_bits(v);
  const uint32_t abs_bits = bits & kF32AbsMask;
  if (f32_abs_is_nan(abs_bits)) return T::kNaNCode;
  uint32_t code = round_magnitude_rne<T::kExponentBias, T::kMantissaBits>(abs_bits);
  if (code > T::kMaxCode) code = T::kMaxCode;
  const uint32_t sign = (bits >> 31) != 0 ? T::kSignMask : 0u;
  return static_cast<uint8_t>(sign | code);
}

}  // namespace qcoll::formats::detail
