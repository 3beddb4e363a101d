// Internal: the per-group quantization kernels shared by quantize_kg.cpp and quantize_mx.cpp.
// Each kernel is a template over the element encoder, so the dtype switch happens once per
// call, outside the element loops.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "formats/traits.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::quant::detail {

using contract::kKgGroup;
using contract::kMxGroup;
using formats::Traits;

// Largest |v| over the finite elements (NaN and +-Inf are ignored); 0 if there is none.
inline float finite_amax(const float* v, std::size_t n) {
  float amax = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float a = std::fabs(v[i]);
    // NaN fails both comparisons, +-Inf fails the first.
    if (a <= std::numeric_limits<float>::max() && a > amax) amax = a;
  }
  return amax;
}

// Element encoders, all saturating. INT8: round half to even, clamp to [-127, 127] (symmetric:
// -128 is never produced), NaN -> 0.
inline uint8_t encode_int8_sym(float r) {
  constexpr float kMax = Traits<DType::Int8>::kMaxFinite;
  if (std::isnan(r)) return 0;
  r = std::clamp(r, -kMax, kMax);
  // nearbyint rounds in the current mode: round to nearest even unless the caller changed it.
  return static_cast<uint8_t>(static_cast<int8_t>(std::nearbyint(r)));
}
inline uint8_t encode_e4m3_sat(float r) { return formats::encode_float8_e4m3fn(r, formats::Saturation::Saturating); }
inline uint8_t encode_e5m2_sat(float r) { return formats::encode_float8_e5m2(r, formats::Saturation::Saturating); }
inline uint8_t encode_hif8_sat(float r) { return formats::encode_hifloat8(r, formats::Saturation::Saturating); }
// The 4-bit encoders are saturating by definition (contract.md §ext-fp4-encode): one code
// in the low 4 bits, NaN -> 0.
inline uint8_t encode_e2m1_sat(float r) { return formats::encode_float4_e2m1(r); }
inline uint8_t encode_e1m2_sat(float r) { return formats::encode_float4_e1m2(r); }

using ElementEncoder = uint8_t (*)(float);

// One KG group: scale = amax / target (one fp32 division), q = encode(v / scale).
// A zero scale (amax 0, or amax / target underflowing) gives q = 0 for finite elements;
// NaN / +-Inf elements still go through the encoder (NaN code / saturated +-max).
template <ElementEncoder Encode>
inline float quantize_kg_group(const float* v, uint8_t* q, float target) {
  const float amax = finite_amax(v, kKgGroup);
  const float scale = amax / target;
  if (scale == 0.0f) {
    for (std::size_t i = 0; i < kKgGroup; ++i) q[i] = Encode(std::isfinite(v[i]) ? 0.0f : v[i]);
  } else {
    for (std::size_t i = 0; i < kKgGroup; ++i) q[i] = Encode(v[i] / scale);
  }
  return scale;
}

// floor(log2(a)) of a finite a > 0, from the fp32 bit pattern (exact for subnormals too).
inline int floor_log2(float a) {
  const uint32_t bits = std::bit_cast<uint32_t>(a) & 0x7FFFFFFFu;
  const int exp_field = static_cast<int>(bits >> 23);
  if (exp_field != 0) return exp_field - 127;
  const uint32_t mant = bits & 0x7FFFFFu;  // subnormal: value = mant * 2^-149
  return (31 - std::countl_zero(mant)) - 149;
}

// One MX block of 32 (OCP MX v1.0): shared_exp = floor(log2(amax)) - emax_elem, clamped to
// [-127, 127] (all-zero block: -127); q = encode(v / 2^shared_exp); returns the E8M0 byte.
// For a finite amax, shared_exp <= 127 - emax_elem (119 E4M3, 125 E2M1, 127 E1M2), so
// 2^-shared_exp lies in [2^-127, 2^127]: an fp32 power of two (normal, but for E1M2's
// shared_exp 127: the subnormal 2^-127, still exact). Multiplying by it equals dividing by
// 2^shared_exp exactly (both are one correctly rounded operation on the same real
// quotient); a result that underflows into the fp32 subnormal range is below 2^-126, far
// under half the smallest element subnormal (2^-10 E4M3, 2^-17 E5M2, 2^-2 E2M1, 2^-3
// E1M2), so it encodes to (signed) zero either way.
template <ElementEncoder Encode, int EmaxElem>
inline uint8_t quantize_mx_block(const float* v, uint8_t* q) {
  using E8M0 = Traits<DType::Float8E8M0>;
  constexpr int kMinExp = -E8M0::kExponentBias;                  // code 0x00
  constexpr int kMaxExp = E8M0::kMaxCode - E8M0::kExponentBias;  // code 0xFE, never 0xFF (NaN)
  const float amax = finite_amax(v, kMxGroup);
  int shared_exp = amax == 0.0f ? kMinExp : floor_log2(amax) - EmaxElem;
  shared_exp = std::clamp(shared_exp, kMinExp, kMaxExp);
  const float inv_scale = std::ldexp(1.0f, -shared_exp);
  for (std::size_t i = 0; i < kMxGroup; ++i) q[i] = Encode(v[i] * inv_scale);
  return static_cast<uint8_t>(shared_exp + E8M0::kExponentBias);
}

// Where a kernel's codes go: 8-bit codes straight into the output (one a byte); 4-bit ones
// into a group-sized buffer first, then packed into the output (two a byte, the even
// element in bits 0-3: contract.md §ext-fp4-layout). codes(first) is where the group of
// elements [first, first + n) writes its n codes; done(first, n) stores them.
template <bool Packed>
struct CodeSink {
  explicit CodeSink(uint8_t* q) : q(q) {}
  uint8_t* q;
  uint8_t* codes(std::size_t first) { return q + first; }
  void done(std::size_t /*first*/, std::size_t /*n*/) {}
};

template <>
struct CodeSink<true> {
  explicit CodeSink(uint8_t* q) : q(q) {}
  uint8_t* q;
  uint8_t buf[kKgGroup] = {};
  uint8_t* codes(std::size_t /*first*/) { return buf; }
  void done(std::size_t first, std::size_t n) { formats::pack_fp4(buf, n, q + first / 2); }  // first even
};

// Source adapters by input dtype: fp32 rows are used in place; bf16 and fp16 rows (their
// bits) are decoded exactly, one group at a time, into a small buffer.
template <DType In>
struct GroupSource;

template <>
struct GroupSource<DType::Float> {
  explicit GroupSource(const void* rows) : x(static_cast<const float*>(rows)) {}
  const float* x;
  const float* group(std::size_t first, std::size_t /*n*/) { return x + first; }
};

template <float (*Decode)(uint16_t)>
struct HalfGroupSource {
  explicit HalfGroupSource(const void* rows) : x(static_cast<const uint16_t*>(rows)) {}
  const uint16_t* x;
  float buf[kKgGroup] = {};
  const float* group(std::size_t first, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) buf[i] = Decode(x[first + i]);
    return buf;
  }
};

template <>
struct GroupSource<DType::BFloat16> : HalfGroupSource<formats::decode_bfloat16> {
  using HalfGroupSource::HalfGroupSource;
};

template <>
struct GroupSource<DType::Float16> : HalfGroupSource<formats::decode_float16> {
  using HalfGroupSource::HalfGroupSource;
};

}  // namespace qcoll::quant::detail
