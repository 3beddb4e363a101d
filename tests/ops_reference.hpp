// Plain reference of contract.md §operation / §numerics for the operator tests, from its formulas and
// independent of the library: decoders, fp32 mul/add in rank order, RNE casts.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "qcoll/dtype.hpp"

namespace ref {

inline float pow2(int e) { return std::ldexp(1.0f, e); }

inline float decode_int8(uint8_t b) { return static_cast<float>(static_cast<int8_t>(b)); }

inline float decode_e4m3fn(uint8_t b) {
  const float s = (b & 0x80) ? -1.0f : 1.0f;
  const int e = (b >> 3) & 0xF, m = b & 7;
  if (e == 15 && m == 7) return NAN;
  if (e == 0) return s * static_cast<float>(m) * pow2(-9);
  return s * (1.0f + static_cast<float>(m) / 8.0f) * pow2(e - 7);
}

inline float decode_e5m2(uint8_t b) {
  const float s = (b & 0x80) ? -1.0f : 1.0f;
  const int e = (b >> 2) & 0x1F, m = b & 3;
  if (e == 31) return m == 0 ? s * INFINITY : NAN;
  if (e == 0) return s * static_cast<float>(m) * pow2(-16);
  return s * (1.0f + static_cast<float>(m) / 4.0f) * pow2(e - 15);
}

inline float decode_e8m0(uint8_t b) { return b == 0xFF ? NAN : pow2(static_cast<int>(b) - 127); }

// contract.md §formats-hifloat8 table.
inline float decode_hif8(uint8_t b) {
  if (b == 0x00) return 0.0f;
  if (b == 0x80) return NAN;
  if (b == 0x6F) return INFINITY;
  if (b == 0xEF) return -INFINITY;
  const float s = (b & 0x80) ? -1.0f : 1.0f;
  const int v = b & 0x7F;
  int mag, mbits, m;
  bool neg;
  if (v >= 0x60) { mag = 8 + ((v >> 1) & 7); neg = v & 0x10; mbits = 1; m = v & 1; }
  else if (v >= 0x40) { mag = 4 + ((v >> 2) & 3); neg = v & 0x10; mbits = 2; m = v & 3; }
  else if (v >= 0x20) { mag = 2 + ((v >> 3) & 1); neg = v & 0x10; mbits = 3; m = v & 7; }
  else if (v >= 0x10) { mag = 1; neg = v & 0x08; mbits = 3; m = v & 7; }
  else if (v >= 0x08) { mag = 0; neg = false; mbits = 3; m = v & 7; }
  else return s * pow2(v - 23);
  const int E = neg ? -mag : mag;
  return s * pow2(E) * (1.0f + static_cast<float>(m) / static_cast<float>(1 << mbits));
}

inline float decode(qcoll::DType t, uint8_t b) {
  switch (t) {
    case qcoll::DType::Int8: return decode_int8(b);
    case qcoll::DType::HiFloat8: return decode_hif8(b);
    case qcoll::DType::Float8E4M3FN: return decode_e4m3fn(b);
    case qcoll::DType::Float8E5M2: return decode_e5m2(b);
    case qcoll::DType::Float8E8M0: return decode_e8m0(b);
    default: return NAN;
  }
}

// fp32 -> fp16 bits, round to nearest even, overflow to Inf, NaN quiet.
inline uint16_t to_fp16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t exp = (u >> 23) & 0xFF, man = u & 0x7FFFFF;
  if (exp == 0xFF) return sign | (man ? 0x7E00 : 0x7C00);
  // Work on the exact value as an integer multiple of 2^-24 (fp16's smallest subnormal)
  // or, for normals, by rounding the 24-bit significand.
  const int e = static_cast<int>(exp) - 127;  // unbiased (denormal fp32 inputs are tiny)
  if (exp == 0 || e < -25) return sign;        // |f| < 2^-25: rounds to 0
  const uint32_t sig = man | 0x800000;         // value = sig * 2^(e-23)
  if (e < -14) {                                // fp16 subnormal: units of 2^-24
    const int shift = -e - 1;                   // sig * 2^(e-23) / 2^-24 = sig >> -(e+1)
    const uint32_t q = sig >> shift, rem = sig & ((1u << shift) - 1), half = 1u << (shift - 1);
    uint32_t r = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
    return sign | static_cast<uint16_t>(r);     // r == 0x400 becomes the smallest normal
  }
  const uint32_t q = sig >> 13, rem = sig & 0x1FFF;
  uint32_t r = q + ((rem > 0x1000 || (rem == 0x1000 && (q & 1))) ? 1 : 0);  // 11 bits (+carry)
  int he = e + 15;
  if (r == 0x800) { r = 0x400; ++he; }
  if (he >= 31) return sign | 0x7C00;
  return sign | static_cast<uint16_t>((he << 10) | (r & 0x3FF));
}

// fp32 -> bf16 bits, round to nearest even, NaN quiet.
inline uint16_t to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((u >> 16) | 0x0040);
  const uint32_t lower = u & 0xFFFF, upper = u >> 16;
  const uint32_t r = upper + ((lower > 0x8000 || (lower == 0x8000 && (upper & 1))) ? 1 : 0);
  return static_cast<uint16_t>(r);
}

inline bool is_nan_bits(qcoll::DType out, const uint8_t* p) {
  if (out == qcoll::DType::Float) {
    uint32_t u;
    std::memcpy(&u, p, 4);
    return (u & 0x7FFFFFFF) > 0x7F800000;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (out == qcoll::DType::Float16) return (h & 0x7FFF) > 0x7C00;
  return (h & 0x7FFF) > 0x7F80;
}

// Equal as results: same bits, or both NaN (NaN payloads are not part of the contract).
inline bool same_result(qcoll::DType out, const uint8_t* a, const uint8_t* b) {
  const std::size_t sz = qcoll::dtype_size(out);
  if (std::memcmp(a, b, sz) == 0) return true;
  return is_nan_bits(out, a) && is_nan_bits(out, b);
}

// Writes element value `acc` cast to `out` at p.
inline void store(qcoll::DType out, float acc, uint8_t* p) {
  if (out == qcoll::DType::Float) {
    std::memcpy(p, &acc, 4);
  } else {
    const uint16_t h = out == qcoll::DType::Float16 ? to_fp16(acc) : to_bf16(acc);
    std::memcpy(p, &h, 2);
  }
}

// The scale of element (row, h) of one rank: fp32 scales[row*H/128 + h/128] or E8M0
// scales[(row*H + h)/32].
inline float scale_of(qcoll::DType sdt, const std::vector<uint8_t>& scales, std::size_t row,
                      std::size_t H, std::size_t h) {
  if (sdt == qcoll::DType::Float) {
    float s;
    std::memcpy(&s, scales.data() + ((row * H + h) / 128) * 4, 4);
    return s;
  }
  return decode_e8m0(scales[(row * H + h) / 32]);
}

// Reduce rows [row0, row0 + nrows) over all ranks' inputs into out (nrows*H elements).
inline std::vector<uint8_t> reduce_rows(qcoll::DType xdt, qcoll::DType sdt, qcoll::DType odt,
                                        const std::vector<std::vector<uint8_t>>& x,
                                        const std::vector<std::vector<uint8_t>>& scales,
                                        std::size_t H, std::size_t row0, std::size_t nrows) {
  const std::size_t osz = qcoll::dtype_size(odt);
  std::vector<uint8_t> out(nrows * H * osz);
  for (std::size_t t = 0; t < nrows; ++t)
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t row = row0 + t;
      volatile float acc = 0.0f;  // volatile: one rounded fp32 operation at a time
      for (std::size_t k = 0; k < x.size(); ++k) {
        volatile float d = decode(xdt, x[k][row * H + h]);
        d = d * scale_of(sdt, scales[k], row, H, h);
        acc = acc + d;
      }
      store(odt, acc, out.data() + (t * H + h) * osz);
    }
  return out;
}

}  // namespace ref
