// FLOAT8_E8M0 (MX scale): unsigned exponent, value 2^(e-127) for e = 0..254, 0xFF NaN;
// no sign, no zero (contract.md §formats-e8m0). 0x00 is 2^-127, a subnormal fp32.
//
// Encoder (contract.md §encoders: the exponent is rounded up when the fraction is >= 0.5, i.e. the
// value is rounded to the nearest power of two, a tie going up). Decisions for the
// inputs the contract leaves open:
//   - the sign is ignored (the magnitude is encoded), as E8M0 has no sign;
//   - NaN and +-Inf -> 0xFF (NaN): E8M0 has no infinity;
//   - +-0 and magnitudes below 2^-127 (after rounding) -> 0x00 (the smallest scale);
//   - finite magnitudes that round to 2^128 or above -> 0xFE (2^127).
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "formats/float_bits.hpp"
#include "formats/traits.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {
namespace {
using T = Traits<DType::Float8E8M0>;
}  // namespace

float decode_float8_e8m0(uint8_t b) {
  if (b == T::kNaNCode) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(b) - T::kExponentBias);
}

uint8_t encode_float8_e8m0(float v) {
  const uint32_t abs_bits = detail::f32_bits(v) & detail::kF32AbsMask;
  if (abs_bits >= detail::kF32InfBits) return T::kNaNCode;  // NaN, Inf
  if (abs_bits == 0) return 0x00;
  const uint32_t exp32 = abs_bits >> 23;
  const uint32_t man32 = abs_bits & 0x7FFFFFu;
  int e;  // unbiased exponent of the nearest power of two (ties up)
  if (exp32 != 0) {
    e = static_cast<int>(exp32) - 127 + ((man32 & 0x400000u) ? 1 : 0);
  } else {
    // fp32 subnormal: value = man32 * 2^-149, leading bit at position p.
    const int p = 31 - std::countl_zero(man32);
    const bool round_up = p > 0 && ((man32 >> (p - 1)) & 1u);
    e = p - 149 + (round_up ? 1 : 0);
  }
  if (e < -T::kExponentBias) return 0x00;
  if (e > T::kMaxCode - T::kExponentBias) return T::kMaxCode;
  return static_cast<uint8_t>(e + T::kExponentBias);
}

}  // namespace qcoll::formats
