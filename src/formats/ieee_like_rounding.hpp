// Round-to-nearest-even of an fp32 magnitude into an IEEE-like binary format
// (exponent bias `Bias`, `MantBits` stored mantissa bits, subnormals below exponent field 1).
// Used by E4M3FN, E5M2, FP16 and BF16. The result is the magnitude code as if the
// exponent field were unbounded, so the caller decides overflow *after* rounding by
// comparing against its largest finite code.
#pragma once
#include <cstdint>

#include "formats/float_bits.hpp"

namespace qcoll::formats::detail {

// abs_bits: fp32 bits with the sign cleared, not NaN (Inf gives a code above any max).
template <int Bias, int MantBits>
constexpr uint32_t round_magnitude_rne(uint32_t abs_bits) {
  static_assert(MantBits >= 1 && MantBits < 23 && Bias >= 1 && Bias <= 127);
  constexpr unsigned kDrop = 23 - MantBits;  // fp32 mantissa bits dropped for a normal
  const int exp32 = static_cast<int>(abs_bits >> 23);
  const uint32_t man32 = abs_bits & 0x7FFFFFu;
  const int target_exp = exp32 - 127 + Bias;
  if (target_exp >= 1) {
    // Normal in the target: keep MantBits, a carry out of the mantissa bumps the exponent.
    const uint32_t code = (static_cast<uint32_t>(target_exp) << MantBits) | (man32 >> kDrop);
    const uint32_t rem = man32 & ((uint32_t{1} << kDrop) - 1);
    constexpr uint32_t kHalf = uint32_t{1} << (kDrop - 1);
    return code + ((rem > kHalf || (rem == kHalf && (code & 1))) ? 1 : 0);
  }
  // Subnormal in the target: value = sig * 2^(exp_eff - 150); unit 2^(1 - Bias - MantBits).
  const int exp_eff = exp32 == 0 ? 1 : exp32;
  const uint32_t sig = exp32 == 0 ? man32 : (man32 | 0x800000u);
  const int shift = 151 - Bias - MantBits - exp_eff;  // >= 24 - MantBits >= 1 here
  // A carry into 2^MantBits is the smallest normal code, which is what the bits say.
  return shift_right_round_even(sig, static_cast<unsigned>(shift));
}

}  // namespace qcoll::formats::detail
