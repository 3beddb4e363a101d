// Bit access to fp32 values, shared by the format codecs.
#pragma once
#include <bit>
#include <cstdint>

namespace qcoll::formats::detail {

inline uint32_t f32_bits(float v) { return std::bit_cast<uint32_t>(v); }
inline float f32_from_bits(uint32_t b) { return std::bit_cast<float>(b); }

constexpr uint32_t kF32SignMask = 0x80000000u;
constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32InfBits = 0x7F800000u;

// True when the magnitude bits (sign cleared) of an fp32 are a NaN.
constexpr bool f32_abs_is_nan(uint32_t abs_bits) { return abs_bits > kF32InfBits; }

// x / 2^shift rounded to nearest, ties to even (shift >= 1).
constexpr uint32_t shift_right_round_even(uint32_t x, unsigned shift) {
  if (shift > 31) return 0;
  const uint32_t q = x >> shift;
  const uint32_t rem = x & ((uint32_t{1} << shift) - 1);
  const uint32_t half = uint32_t{1} << (shift - 1);
  return q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
}

}  // namespace qcoll::formats::detail
