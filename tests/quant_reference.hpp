// Independent references for the quantizer tests, from contract.md §formats / §quantizers only: decoders
// from the bit-field formulas, and saturating encoders that pick the nearest finite code by
// brute force over all 256 codes. They share no code with src/.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "qcoll/dtype.hpp"

namespace quant_ref {

using qcoll::DType;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline double decode_e4m3(uint8_t b) {
  const double s = (b & 0x80) ? -1.0 : 1.0;
  const int e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return kNaN;
  if (e == 0) return s * m * std::ldexp(1.0, -9);
  return s * (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
}

inline double decode_e5m2(uint8_t b) {
  const double s = (b & 0x80) ? -1.0 : 1.0;
  const int e = (b >> 2) & 31, m = b & 3;
  if (e == 31) return m == 0 ? s * kInf : kNaN;
  if (e == 0) return s * m * std::ldexp(1.0, -16);
  return s * (1.0 + m / 4.0) * std::ldexp(1.0, e - 15);
}

// contract.md §formats-hifloat8 table: dot field, exponent magnitude, exponent sign bit, mantissa bits.
inline double decode_hif8(uint8_t b) {
  if (b == 0x80) return kNaN;
  if (b == 0x6F) return kInf;
  if (b == 0xEF) return -kInf;
  const double s = (b & 0x80) ? -1.0 : 1.0;
  const int v = b & 0x7F;
  if (v == 0) return 0.0;
  if (v < 0x08) return s * std::ldexp(1.0, v - 23);
  int mag, neg, mbits, m;
  if (v >= 0x60) {
    mag = 8 + ((v >> 1) & 7), neg = v & 0x10, mbits = 1, m = v & 1;
  } else if (v >= 0x40) {
    mag = 4 + ((v >> 2) & 3), neg = v & 0x10, mbits = 2, m = v & 3;
  } else if (v >= 0x20) {
    mag = 2 + ((v >> 3) & 1), neg = v & 0x10, mbits = 3, m = v & 7;
  } else if (v >= 0x10) {
    mag = 1, neg = v & 0x08, mbits = 3, m = v & 7;
  } else {
    mag = 0, neg = 0, mbits = 3, m = v & 7;
  }
  const int E = neg ? -mag : mag;
  return s * std::ldexp(1.0 + m / double(1 << mbits), E);
}

inline double decode_int8(uint8_t b) { return static_cast<int8_t>(b); }

inline double decode_e8m0(uint8_t b) { return b == 0xFF ? kNaN : std::ldexp(1.0, int(b) - 127); }

inline double decode(DType t, uint8_t b) {
  switch (t) {
    case DType::Int8: return decode_int8(b);
    case DType::Float8E4M3FN: return decode_e4m3(b);
    case DType::Float8E5M2: return decode_e5m2(b);
    case DType::HiFloat8: return decode_hif8(b);
    case DType::Float8E8M0: return decode_e8m0(b);
    default: return kNaN;
  }
}

inline double max_finite(DType t) {
  switch (t) {
    case DType::Int8: return 127;
    case DType::Float8E4M3FN: return 448;
    case DType::Float8E5M2: return 57344;
    case DType::HiFloat8: return 32768;
    default: return 0;
  }
}

// Round half to even, written out (no reliance on the FP environment).
inline double round_half_even(double r) {
  const double f = std::floor(r);
  const double d = r - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return std::fmod(f, 2.0) == 0.0 ? f : f + 1;
}

// Saturating encoders (contract.md §encoders). INT8 is the symmetric quantizer code: clamp to [-127, 127].
inline uint8_t encode_int8_sym(double r) {
  if (std::isnan(r)) return 0;
  if (r > 127) r = 127;
  if (r < -127) r = -127;
  return static_cast<uint8_t>(static_cast<int8_t>(round_half_even(r)));
}

// Nearest finite code with r's sign (HiF8: no negative zero, so 0x00 competes on both sides).
// Ties: E4M3/E5M2 to the even code (mantissa LSB 0), HiF8 away from zero.
inline uint8_t encode_float_sat(DType t, double r) {
  if (std::isnan(r)) {
    return t == DType::Float8E4M3FN ? 0x7F : t == DType::Float8E5M2 ? 0x7E : 0x80;
  }
  const double maxf = max_finite(t);
  if (r > maxf) r = maxf;  // saturating: +-Inf and overflow clamp to +-max finite
  if (r < -maxf) r = -maxf;
  const bool neg = std::signbit(r);
  int best = -1;
  double best_err = kInf;
  for (int c = 0; c < 256; ++c) {
    const double d = decode(t, static_cast<uint8_t>(c));
    if (!std::isfinite(d)) continue;
    const bool code_neg = (c & 0x80) != 0;
    const bool sign_ok = t == DType::HiFloat8 ? (c == 0 || code_neg == neg) : code_neg == neg;
    if (!sign_ok) continue;
    const double err = std::fabs(d - r);
    if (err < best_err) {
      best = c, best_err = err;
    } else if (err == best_err) {
      const double bd = std::fabs(decode(t, static_cast<uint8_t>(best)));
      if (t == DType::HiFloat8) {
        if (std::fabs(d) > bd) best = c;
      } else if ((c & 1) == 0) {
        best = c;
      }
    }
  }
  return static_cast<uint8_t>(best);
}

inline uint8_t encode_sat(DType t, double r) {
  return t == DType::Int8 ? encode_int8_sym(r) : encode_float_sat(t, r);
}

// Equal codes, where any two NaN codes count as equal (the sign of a NaN is not specified).
inline bool same_code(DType t, uint8_t a, uint8_t b) {
  if (t != DType::Int8 && std::isnan(decode(t, a)) && std::isnan(decode(t, b))) return true;
  return a == b;
}

// fp32 <-> bits, bf16 from its bits (the upper half of an fp32).
inline float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bf16_value(uint16_t b) { return from_bits(uint32_t(b) << 16); }

// Gaussian-ish test data with a spread of magnitudes per group (fixed seed).
inline std::vector<float> random_values(std::size_t n, uint32_t seed, double sigma = 1.0) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, static_cast<float>(sigma));
  std::vector<float> v(n);
  for (auto& x : v) x = nd(gen);
  return v;
}

}  // namespace quant_ref
