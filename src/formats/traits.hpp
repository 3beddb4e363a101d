// The facts of every number format, one Traits<T> each (in the manner of ml_dtypes'
// float8.h): widths, bias, the codes that matter (largest finite, NaN, Inf) and the values
// they stand for. Codecs, quantizer targets and SIMD decode constants read them from here;
// adding a format is mostly a traits entry. Header-only, constexpr, no SIMD types.
//
// Common members (all formats):
//   Bits           unsigned type of one code (uint8_t, uint16_t, uint32_t)
//   kBits          bits per code
//   kSigned        a sign bit (the top bit) exists
//   kExponentBits  exponent field width (0 for INT8; HiF8: the widest, 4)
//   kMantissaBits  stored mantissa bits (INT8: 7 value bits; HiF8: the widest, 3)
//   kExponentBias  value = 2^(field - bias) * 1.m for a normal code (0 where there is none)
//   kHasInf, kHasNaN
//   kMaxCode       code of the largest finite value (sign bit clear)
//   kNaNCode       the NaN an encoder writes (sign bit clear; where kNaNKeepsSign the
//                  encoder ORs the input's sign in); 0 when !kHasNaN
//   kInfCode       +Inf (sign bit clear); 0 when !kHasInf
//   kMaxFinite     the value of kMaxCode
// IEEE-like formats (E4M3FN, E5M2, FP16, BF16, FP32) also have:
//   kF32Rebias       127 - bias: added to a normal code's exponent to get fp32's
//   kMinSubnormal    2^(1 - bias - kMantissaBits): the unit of the subnormal codes
// MX element formats (E4M3FN, E5M2, E2M1, E1M2) also have kMxEmax = floor(log2(kMaxFinite))
// (OCP MX v1.0 emax_elem: the shared exponent is floor(log2(amax)) - kMxEmax).
// The 4-bit formats (E2M1, E1M2; contract.md §ext-fp4) keep a code in the low 4 bits of a
// uint8_t (kBits 4, sign bit 3) and have kCodes = 16; two codes share a byte in memory
// (qcoll/formats.hpp, the packed layout).
#pragma once
#include <cstdint>

#include "qcoll/dtype.hpp"

namespace qcoll::formats {

// 2^e as a float, exact for -149 <= e <= 127 (constexpr; std::ldexp is not in C++20).
constexpr float exp2i(int e) {
  float v = 1.0f;
  for (; e > 0; --e) v *= 2.0f;
  for (; e < 0; ++e) v *= 0.5f;  // exact down to 2^-149: halving a power of two
  return v;
}

// The value of a finite, positive code of an IEEE-like format (normal or subnormal).
constexpr float ieee_like_value(uint32_t code, int bias, int mant_bits) {
  const uint32_t exp = code >> mant_bits;
  const uint32_t man = code & ((uint32_t{1} << mant_bits) - 1);
  if (exp == 0) return static_cast<float>(man) * exp2i(1 - bias - mant_bits);
  return static_cast<float>((uint32_t{1} << mant_bits) + man) * exp2i(static_cast<int>(exp) - bias - mant_bits);
}

// The members an IEEE-like layout derives from its widths, its bias and its largest code.
template <class BitsT, int CodeBits, int ExpBits, int MantBits, int Bias, BitsT MaxCode>
struct IeeeLikeFields {
  using Bits = BitsT;
  static constexpr int kBits = CodeBits;
  static constexpr bool kSigned = true;
  static constexpr int kExponentBits = ExpBits;
  static constexpr int kMantissaBits = MantBits;
  static constexpr int kExponentBias = Bias;
  static constexpr Bits kSignMask = static_cast<Bits>(Bits{1} << (kBits - 1));
  static constexpr Bits kAbsMask = static_cast<Bits>(kSignMask - 1);
  static constexpr Bits kMaxCode = MaxCode;
  static constexpr float kMaxFinite = ieee_like_value(MaxCode, kExponentBias, MantBits);
  static constexpr int kF32Rebias = 127 - kExponentBias;
  static constexpr float kMinSubnormal = exp2i(1 - kExponentBias - MantBits);
};

// The IEEE-like formats of whole Bits codes, bias 2^(ExpBits-1) - 1.
template <class BitsT, int ExpBits, int MantBits, BitsT MaxCode>
struct IeeeLikeTraits : IeeeLikeFields<BitsT, 8 * sizeof(BitsT), ExpBits, MantBits, (1 << (ExpBits - 1)) - 1, MaxCode> {
};

// The members of a byte format whose codes are all finite: no Inf, no NaN (an encoder
// writes code 0 for a NaN input).
struct FiniteOnlyCodes {
  static constexpr bool kHasInf = false;
  static constexpr bool kHasNaN = false;
  static constexpr uint8_t kNaNCode = 0;
  static constexpr bool kNaNKeepsSign = false;
  static constexpr uint8_t kInfCode = 0;
};

// The 4-bit formats: 1 sign (bit 3), ExpBits + MantBits = 3, bias 1 (not the IEEE
// 2^(ExpBits-1) - 1, which would be 0 for E1M2), subnormals below field 1, every code
// finite: 0x7 is the largest, no Inf, no NaN (an encoder writes code 0 for a NaN input).
template <int ExpBits, int MantBits>
struct Fp4Traits : IeeeLikeFields<uint8_t, 4, ExpBits, MantBits, 1, 0x7>, FiniteOnlyCodes {
  static_assert(ExpBits + MantBits == 3);
  static constexpr int kCodes = 16;
  static constexpr int kMxEmax = (0x7 >> MantBits) - 1;
};

template <DType T>
struct Traits;  // defined for the number formats below

// FLOAT4_E2M1: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6} (OCP MX E2M1, torch float4_e2m1fn_x2's element).
template <>
struct Traits<DType::Float4E2M1> : Fp4Traits<2, 1> {};

// FLOAT4_E1M2: +-{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75}.
template <>
struct Traits<DType::Float4E1M2> : Fp4Traits<1, 2> {};

// FLOAT8_E4M3FN: no infinities; S.1111.111 is the only NaN, so 0x7E (448) is the largest finite.
template <>
struct Traits<DType::Float8E4M3FN> : IeeeLikeTraits<uint8_t, 4, 3, 0x7E> {
  static constexpr bool kHasInf = false;
  static constexpr bool kHasNaN = true;
  static constexpr Bits kNaNCode = 0x7F;
  static constexpr bool kNaNKeepsSign = true;
  static constexpr Bits kInfCode = 0;
  static constexpr int kMxEmax = (kMaxCode >> kMantissaBits) - kExponentBias;
};

// FLOAT8_E5M2: IEEE-like; S.11111.00 Inf, S.11111.{01,10,11} NaN (0x7E the quiet one).
template <>
struct Traits<DType::Float8E5M2> : IeeeLikeTraits<uint8_t, 5, 2, 0x7B> {
  static constexpr bool kHasInf = true;
  static constexpr bool kHasNaN = true;
  static constexpr Bits kNaNCode = 0x7E;
  static constexpr bool kNaNKeepsSign = true;
  static constexpr Bits kInfCode = 0x7C;
  static constexpr int kMxEmax = (kMaxCode >> kMantissaBits) - kExponentBias;
};

// FLOAT16 (IEEE binary16).
template <>
struct Traits<DType::Float16> : IeeeLikeTraits<uint16_t, 5, 10, 0x7BFF> {
  static constexpr bool kHasInf = true;
  static constexpr bool kHasNaN = true;
  static constexpr Bits kNaNCode = 0x7E00;  // quiet NaN
  static constexpr bool kNaNKeepsSign = true;
  static constexpr Bits kInfCode = 0x7C00;
};

// BFLOAT16: the top half of an fp32.
template <>
struct Traits<DType::BFloat16> : IeeeLikeTraits<uint16_t, 8, 7, 0x7F7F> {
  static constexpr bool kHasInf = true;
  static constexpr bool kHasNaN = true;
  static constexpr Bits kNaNCode = 0x7FC0;  // quiet NaN
  static constexpr bool kNaNKeepsSign = true;
  static constexpr Bits kInfCode = 0x7F80;
};

// FLOAT (IEEE binary32).
template <>
struct Traits<DType::Float> : IeeeLikeTraits<uint32_t, 8, 23, 0x7F7FFFFFu> {
  static constexpr bool kHasInf = true;
  static constexpr bool kHasNaN = true;
  static constexpr Bits kNaNCode = 0x7FC00000u;  // quiet NaN
  static constexpr bool kNaNKeepsSign = true;
  static constexpr Bits kInfCode = 0x7F800000u;
};

// HIFLOAT8: tapered. byte = sign | dot | exponent | mantissa; the dot field gives the
// exponent width (4, 3, 2, 1, 0 bits; sign-magnitude, no bias) and the mantissa width
// (1, 2, 3, 3, 3 bits). Codes 0x01..0x07 are the denormals 2^(v - kDenormalOffset).
// 0x00 is the only zero, 0x80 the only NaN (unsigned), 0x6F / 0xEF +-Inf.
template <>
struct Traits<DType::HiFloat8> {
  using Bits = uint8_t;
  static constexpr int kBits = 8;
  static constexpr bool kSigned = true;
  static constexpr int kExponentBits = 4;  // the widest (dot 11)
  static constexpr int kMantissaBits = 3;  // the widest (dot 01, 001, 0001)
  static constexpr int kExponentBias = 0;  // sign-magnitude exponent
  static constexpr Bits kSignMask = 0x80;
  static constexpr Bits kAbsMask = 0x7F;
  static constexpr bool kHasInf = true;
  static constexpr bool kHasNaN = true;
  static constexpr Bits kNaNCode = 0x80;
  static constexpr bool kNaNKeepsSign = false;
  static constexpr Bits kInfCode = 0x6F;
  static constexpr Bits kMaxCode = 0x6E;    // 1.0 * 2^15
  static constexpr int kMinExponent = -22;  // code 0x01 = 2^-22
  static constexpr int kMaxExponent = 15;
  static constexpr int kDenormalOffset = 23;
  static constexpr float kMaxFinite = exp2i(kMaxExponent);
};

// INT8: two's complement, -128..127; no NaN, no Inf.
template <>
struct Traits<DType::Int8> : FiniteOnlyCodes {
  using Bits = uint8_t;
  static constexpr int kBits = 8;
  static constexpr bool kSigned = true;
  static constexpr int kExponentBits = 0;
  static constexpr int kMantissaBits = 7;
  static constexpr int kExponentBias = 0;
  static constexpr Bits kMaxCode = 0x7F;
  static constexpr Bits kMinCode = 0x80;  // -128
  static constexpr float kMaxFinite = 127.0f;
  static constexpr float kMinValue = -128.0f;
};

// FLOAT8_E8M0 (MX scale): unsigned exponent, 2^(code - 127) for 0x00..0xFE, 0xFF NaN.
template <>
struct Traits<DType::Float8E8M0> {
  using Bits = uint8_t;
  static constexpr int kBits = 8;
  static constexpr bool kSigned = false;
  static constexpr int kExponentBits = 8;
  static constexpr int kMantissaBits = 0;
  static constexpr int kExponentBias = 127;
  static constexpr bool kHasInf = false;
  static constexpr bool kHasNaN = true;
  static constexpr Bits kNaNCode = 0xFF;
  static constexpr bool kNaNKeepsSign = false;
  static constexpr Bits kInfCode = 0;
  static constexpr Bits kMaxCode = 0xFE;
  static constexpr float kMaxFinite = exp2i(0xFE - kExponentBias);
  static constexpr float kMinValue = exp2i(-kExponentBias);  // code 0x00, an fp32 subnormal
};

// The facts above, checked against the numbers of the format definitions.
static_assert(Traits<DType::Float8E4M3FN>::kMaxFinite == 448.0f);
static_assert(Traits<DType::Float8E4M3FN>::kExponentBias == 7 && Traits<DType::Float8E4M3FN>::kMxEmax == 8);
static_assert(Traits<DType::Float8E4M3FN>::kMinSubnormal == 0x1p-9f);
static_assert(Traits<DType::Float8E5M2>::kMaxFinite == 57344.0f);
static_assert(Traits<DType::Float8E5M2>::kExponentBias == 15 && Traits<DType::Float8E5M2>::kMxEmax == 15);
static_assert(Traits<DType::Float8E5M2>::kMinSubnormal == 0x1p-16f);
static_assert(Traits<DType::Float16>::kMaxFinite == 65504.0f && Traits<DType::Float16>::kF32Rebias == 112);
static_assert(Traits<DType::BFloat16>::kMaxFinite == 0x1.FEp127f);
static_assert(Traits<DType::Float>::kMaxFinite == 0x1.FFFFFEp127f);
static_assert(Traits<DType::HiFloat8>::kMaxFinite == 32768.0f);
static_assert(Traits<DType::Float8E8M0>::kMaxFinite == 0x1p127f && Traits<DType::Float8E8M0>::kMinValue == 0x1p-127f);
static_assert(Traits<DType::Float4E2M1>::kMaxFinite == 6.0f && Traits<DType::Float4E2M1>::kMxEmax == 2);
static_assert(Traits<DType::Float4E2M1>::kMinSubnormal == 0.5f && Traits<DType::Float4E2M1>::kF32Rebias == 126);
static_assert(Traits<DType::Float4E1M2>::kMaxFinite == 1.75f && Traits<DType::Float4E1M2>::kMxEmax == 0);
static_assert(Traits<DType::Float4E1M2>::kMinSubnormal == 0.25f && Traits<DType::Float4E1M2>::kF32Rebias == 126);
static_assert(Traits<DType::Float4E2M1>::kSignMask == 0x8 && Traits<DType::Float4E2M1>::kAbsMask == 0x7);
static_assert(Traits<DType::Float4E2M1>::kMxEmax == (Traits<DType::Float4E2M1>::kMaxCode >> 1) - 1);

}  // namespace qcoll::formats
