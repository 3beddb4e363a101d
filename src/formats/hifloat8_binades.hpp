// HiFloat8 binades: for each exponent E of the format (2^E, E = -22..15), the mantissa width
// of its codes and the code of 2^E itself (the mantissa is OR-ed into the low bits). Shared
// by the scalar codec (hifloat8.cpp) and the SIMD encoder's tables (encode-inl.h). No SIMD
// types.
#pragma once
#include <array>
#include <cstdint>

#include "formats/traits.hpp"

namespace qcoll::formats::hif8 {

using T = Traits<DType::HiFloat8>;
inline constexpr int kMinExp = T::kMinExponent;  // 0x01 = 2^-22
inline constexpr int kMaxExp = T::kMaxExponent;  // 0x6E = 2^15
// Exponents at or below this are the denormal codes 0x01..0x07 (no mantissa bits).
inline constexpr int kMaxDenormalExp = kMinExp + 6;  // -16

struct Binade {
  uint8_t mant_bits;
  uint8_t base_code;  // code of 2^E (sign bit clear)
};

// The dot field (11, 10, 01, 001, 0001) of |E| sets the exponent width (3, 2, 1, 0, 0
// bits besides the exponent's sign) and so the mantissa width (1, 2, 3, 3, 3 bits).
constexpr Binade binade_of(int e) {
  const int m = e < 0 ? -e : e;
  const uint8_t neg = e < 0 ? 1 : 0;
  if (e <= kMaxDenormalExp) return {0, static_cast<uint8_t>(e + T::kDenormalOffset)};  // 0000
  if (m == 0) return {3, 0x08};                                                        // 0001
  if (m == 1) return {3, static_cast<uint8_t>(0x10 | (neg << 3))};                     // 001
  if (m <= 3) return {3, static_cast<uint8_t>(0x20 | (neg << 4) | ((m - 2) << 3))};    // 01
  if (m <= 7) return {2, static_cast<uint8_t>(0x40 | (neg << 4) | ((m - 4) << 2))};    // 10
  return {1, static_cast<uint8_t>(0x60 | (neg << 4) | ((m - 8) << 1))};                // 11
}

inline constexpr std::array<Binade, kMaxExp - kMinExp + 1> kBinades = [] {
  std::array<Binade, kMaxExp - kMinExp + 1> t{};
  for (int e = kMinExp; e <= kMaxExp; ++e) t[e - kMinExp] = binade_of(e);
  return t;
}();

static_assert(binade_of(kMaxExp).base_code == T::kMaxCode);
static_assert(binade_of(kMinExp).base_code == 0x01);
static_assert(binade_of(kMaxDenormalExp).base_code == 0x07);

}  // namespace qcoll::formats::hif8
