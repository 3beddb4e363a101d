// An oracle for the 4-bit formats written from the value lists of contract.md §ext-fp4
// alone (no exponent or mantissa fields): code c in 0..7 stands for magnitudes[c], code
// c + 8 for its negation; an fp32 encodes to the nearest magnitude (a tie to the even
// code), anything beyond the largest to the largest, with the sign bit of the input; NaN
// to 0. Like tests/oracle.hpp it is independent of the library: only the public dtype
// enumeration, no call into it.
#pragma once
#include <cmath>
#include <cstdint>

#include "qcoll/dtype.hpp"

namespace fp4_oracle {

struct Fp4 {
  const char* name;
  qcoll::DType type;
  float magnitudes[8];  // of codes 0..7, ascending
};

inline constexpr Fp4 kE2M1 = {"float4_e2m1", qcoll::DType::Float4E2M1, {0, 0.5, 1, 1.5, 2, 3, 4, 6}};
inline constexpr Fp4 kE1M2 = {"float4_e1m2", qcoll::DType::Float4E1M2, {0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75}};

inline float value(const Fp4& f, unsigned code) {
  const float m = f.magnitudes[code & 7];
  return (code & 8) != 0 ? -m : m;
}

inline uint8_t encode(const Fp4& f, float x) {
  if (std::isnan(x)) return 0;
  const double a = std::fabs(static_cast<double>(x));
  unsigned best = 7;  // beyond the largest (Inf too): the largest
  for (unsigned c = 0; c < 7; ++c) {
    const double lo = f.magnitudes[c], hi = f.magnitudes[c + 1];
    if (a >= hi) continue;
    const double mid = (lo + hi) / 2;
    best = a < mid ? c : a > mid ? c + 1 : (c % 2 == 0 ? c : c + 1);
    break;
  }
  return static_cast<uint8_t>(best | (std::signbit(x) ? 8u : 0u));
}

}  // namespace fp4_oracle
