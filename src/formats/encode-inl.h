// Per-target SIMD encoders: fp32 lanes -> 8-bit and 4-bit codes, bit-identical to the
// scalar codecs with Saturation::Saturating (float8_e4m3fn.cpp, float8_e5m2.cpp,
// hifloat8.cpp; the 4-bit ones always saturate: fp4_codec.hpp) and to the quantizers'
// symmetric INT8 code (quant/quant_groups.hpp: NaN -> 0, clamp to [-127, 127], round half
// to even). Include it from SIMD code the Highway way (below HWY_TARGET_INCLUDE
// and foreach_target.h, or once for the static target); it defines, per target, in
// qcoll::formats::HWY_NAMESPACE:
//
//   EncodeSat<X, R>(df, v)  X = Int8, Float8E4M3FN, Float8E5M2, HiFloat8, Float4E2M1,
//                           Float4E1M2: one code per lane in the low byte of a u32 lane
//                           (upper bytes 0; a 4-bit code in bits 0-3).
//   PackNibblePairs(du, a, b)  the 4-bit codes of a then b (2N elements) as N packed bytes
//                           in u32 lanes (contract.md §ext-fp4-layout: the even element in
//                           bits 0-3), ready for the byte stores of the 8-bit codes.
//   R (EncodeRange) is what the caller knows about the lanes, to skip steps that cannot
//   change the result: kAny (any fp32), kNoNaN (no NaN), kNoOverflow (no NaN and no Inf, and
//   every magnitude below the first one that saturates: INT8 127.5, E4M3FN 464, E5M2 61440,
//   HiF8 1.25 * 2^15, E2M1 7, E1M2 1.875; e.g. v / scale with scale = amax / max_finite a normal fp32, since
//   then |v / scale| <= max_finite * (1 + 2^-23)). The codes are the same for every R that
//   holds.
//
// Every lane's code depends only on that lane's fp32 bits. The rounding is done in the
// integer domain, except two fp32 additions that must round to nearest even: the INT8
// round (v + 1.5 * 2^23) and the IEEE-like subnormal codes (v + 2^23 * min_subnormal).
// So the caller runs these with the round-to-nearest mode (the default) and without
// denormals-are-zero (core/float_env.hpp); the scalar codecs need neither.
// Not for HWY_SCALAR (the callers use the scalar codecs there).

#if defined(QCOLL_FORMATS_ENCODE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QCOLL_FORMATS_ENCODE_INL_H_
#undef QCOLL_FORMATS_ENCODE_INL_H_
#else
#define QCOLL_FORMATS_ENCODE_INL_H_
#endif

#include <cstdint>

#include "formats/hifloat8_binades.hpp"
#include "formats/traits.hpp"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace qcoll::formats {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

template <class DF>
using CodeVec = hn::Vec<hn::RebindToUnsigned<DF>>;

enum class EncodeRange { kAny, kNoNaN, kNoOverflow };

// INT8, symmetric: NaN -> 0, clamp to [-127, 127], round half to even. Clamping before
// rounding equals rounding before clamping (127 is an integer). For |r| <= 127, the sum
// r + 1.5 * 2^23 lies in [2^23, 2^24), where the fp32 spacing is 1: the addition rounds r
// to an integer (to nearest even) and the sum's bits minus the constant's are that integer.
// (near: see EncodeSatNearTie; for R == kNoOverflow only.)
template <EncodeRange R, bool kNear = false, class DF>
HWY_INLINE CodeVec<DF> EncodeInt8Sym(DF df, hn::Vec<DF> r, hn::Mask<DF>* near = nullptr) {
  const hn::RebindToUnsigned<DF> du;
  using TI = Traits<DType::Int8>;
  const auto lim = hn::Set(df, TI::kMaxFinite);
  if constexpr (R == EncodeRange::kAny) r = hn::IfThenZeroElse(hn::IsNaN(r), r);
  // Below 127.5 in magnitude, rounding alone lands in [-127, 127].
  if constexpr (R != EncodeRange::kNoOverflow) r = hn::Min(hn::Max(r, hn::Neg(lim)), lim);
  const auto magic = hn::Set(df, 0x1.8p23f);
  const auto s = hn::Add(r, magic);
  if constexpr (kNear) {
    // |r - round(r)| (exact) close to 1/2: within 2^-15 >= 4 ulps of |r| < 128.
    static_assert(R == EncodeRange::kNoOverflow);
    *near = hn::Ge(hn::Abs(hn::Sub(r, hn::Sub(s, magic))), hn::Set(df, 0.5f - 0x1p-15f));
  }
  const auto i = hn::Sub(hn::BitCast(du, s), hn::BitCast(du, magic));
  return hn::And(i, hn::Set(du, 0xFFu));
}

// E4M3FN / E5M2 / E2M1 / E1M2, saturating (round_magnitude_rne of ieee_like_rounding.hpp,
// then the caller's overflow rule): NaN -> NaN code with the input's sign (the 4-bit
// formats have no NaN: code 0, no sign); codes above the largest finite one (Inf included)
// -> +-max finite; the sign bit is the code's top bit (0x80, 4-bit 0x8).
// Rounding by one fp32 addition: for |v| in the binade 2^E of the target's normal range,
// magic = 2^(E + 23 - M) has fp32 spacing 2^(E - M), the target's ulp there, so
// s = |v| + magic rounds |v| to the target's precision (to nearest even) and
// k = bits(s) - bits(magic) is the rounded |v| in ulps, in [2^M, 2^(M+1)] (2^(M+1): the
// carry into the next binade). Below the normal range magic is the constant 2^23 * unit
// (the subnormal unit 2^(1 - bias - M)), k the subnormal code. In both cases
//   code = k + (field(magic) << M) - ((151 - M - bias) << M),
// since field(magic) = E + 150 - M, and for the subnormal constant 151 - bias - M. Large
// magnitudes are first clamped to 2^(emax + 1), which rounds above the largest code.
template <DType X, EncodeRange R, bool kNear = false, class DF>
HWY_INLINE CodeVec<DF> EncodeIeeeLikeSat(DF df, hn::Vec<DF> r, hn::Mask<DF>* near = nullptr) {
  using T = Traits<X>;
  static_assert(T::kHasNaN ? T::kNaNKeepsSign && T::kMaxCode < T::kNaNCode : T::kNaNCode == 0);
  static_assert(T::kBits == 8 || T::kBits == 4);
  constexpr int kM = T::kMantissaBits;
  constexpr int kEmaxField = 127 + (T::kMaxCode >> kM) - T::kExponentBias;  // fp32 field of 2^emax
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto bits = hn::BitCast(du, r);
  auto a = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)));
  if constexpr (R != EncodeRange::kNoOverflow) a = hn::Min(a, hn::Set(di, (kEmaxField + 1) << 23));
  constexpr int32_t kSubMagicField = 151 - T::kExponentBias - kM;  // 2^23 * unit
  static_assert(formats::exp2i(kSubMagicField - 127) == T::kMinSubnormal * 0x1p23f);
  const auto magic = hn::Max(hn::Add(hn::And(a, hn::Set(di, 0x7F800000)), hn::Set(di, (23 - kM) << 23)),
                             hn::Set(di, kSubMagicField << 23));
  const auto s = hn::Add(hn::BitCast(df, a), hn::BitCast(df, magic));
  if constexpr (kNear) {
    // |a - rounded| (exact; at most half the target's ulp, magic * 2^-24) within 2^-16 of
    // that half: 4 fp32 ulps of a are at most half * 2^-17 (the target keeps <= 3 bits).
    static_assert(R == EncodeRange::kNoOverflow && kM <= 3);
    const auto err = hn::Abs(hn::Sub(hn::BitCast(df, a), hn::Sub(s, hn::BitCast(df, magic))));
    // err >= half * (1 - 2^-16), i.e. > that minus one ulp (Highway 1.0.3: no integer Ge).
    const auto below = hn::Sub(magic, hn::Set(di, (24 << 23) + 256 + 1));
    *near = hn::RebindMask(df, hn::Gt(hn::BitCast(di, err), below));
  }
  constexpr int32_t kOffset = kSubMagicField << kM;
  auto code =
      hn::Add(hn::Sub(hn::BitCast(di, s), magic), hn::Sub(hn::ShiftRight<23 - kM>(magic), hn::Set(di, kOffset)));
  if constexpr (R != EncodeRange::kNoOverflow) code = hn::Min(code, hn::Set(di, static_cast<int32_t>(T::kMaxCode)));
  const auto is_nan = [&] {
    return hn::Gt(hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu))), hn::Set(di, 0x7F800000));
  };
  if constexpr (R == EncodeRange::kAny && T::kHasNaN)
    code = hn::IfThenElse(is_nan(), hn::Set(di, static_cast<int32_t>(T::kNaNCode)), code);
  // The fp32 sign bit (31) moved to the code's (kBits - 1).
  const auto with_sign = hn::OrAnd(hn::BitCast(du, code), hn::ShiftRight<32 - T::kBits>(bits),
                                   hn::Set(du, static_cast<uint32_t>(T::kSignMask)));
  if constexpr (R == EncodeRange::kAny && !T::kHasNaN) return hn::IfThenZeroElse(hn::RebindMask(du, is_nan()), with_sign);
  return with_sign;
}

// Two vectors of 4-bit codes (u32 lanes, 0..15), elements [0, N) in a and [N, 2N) in b ->
// N bytes (u32 lanes, 0..255): byte j = code 2j | code (2j + 1) << 4. In u64 lanes a pair
// is even | odd << 32; x | x >> 28 puts odd << 4 next to even in the low u32 lane (the high
// one keeps odd: dropped), and ConcatEven keeps the low lanes, a's then b's.
template <class DU>
HWY_INLINE hn::Vec<DU> PackNibblePairs(DU du, hn::Vec<DU> a, hn::Vec<DU> b) {
  const hn::Repartition<uint64_t, DU> d64;
  const auto pa = hn::BitCast(du, hn::Or(hn::BitCast(d64, a), hn::ShiftRight<28>(hn::BitCast(d64, a))));
  const auto pb = hn::BitCast(du, hn::Or(hn::BitCast(d64, b), hn::ShiftRight<28>(hn::BitCast(d64, b))));
  return hn::And(hn::ConcatEven(du, pb, pa), hn::Set(du, 0xFFu));
}

// HiFloat8 binade tables. By the fp32 exponent field mod 64 (fields 104..142, E = -23..15,
// land on distinct entries; one AVX3_DL byte permute reads the low 6 bits of the field):
// half_shift = 22 - mantissa bits (log2 of half an ulp in the fp32 mantissa; denormal
// binades have no mantissa bits), base = the code of 2^E, except E = -23 (no such code):
// 0x01, what all of [2^-23, 2^-22) rounds to. By m = |E| (0..15, for the 16-entry byte
// shuffles of the other targets): the same for the non-denormal binades.
struct HiF8Tables {
  alignas(64) uint8_t half_shift64[64];
  alignas(64) uint8_t base64[64];
  alignas(16) uint8_t half_shift[16];
  alignas(16) uint8_t base_pos[16];  // code of 2^m
  alignas(16) uint8_t base_neg[16];  // code of 2^-m
};

inline constexpr int kHiF8LowestField = 127 + hif8::kMinExp - 1;  // 104: 2^-23
inline constexpr int kHiF8HighestField = 127 + hif8::kMaxExp;     // 142: 2^15
static_assert(kHiF8HighestField - kHiF8LowestField < 64, "one entry per field mod 64");

inline constexpr HiF8Tables kHiF8Tables = [] {
  HiF8Tables t{};
  for (int field = kHiF8LowestField; field <= kHiF8HighestField; ++field) {
    const int e = field - 127;
    const hif8::Binade b = hif8::binade_of(e < hif8::kMinExp ? hif8::kMinExp : e);
    t.half_shift64[field % 64] = static_cast<uint8_t>(22 - b.mant_bits);
    t.base64[field % 64] = b.base_code;
  }
  for (int m = 0; m < 16; ++m) {
    t.half_shift[m] = static_cast<uint8_t>(22 - hif8::binade_of(m).mant_bits);
    t.base_pos[m] = hif8::binade_of(m).base_code;
    t.base_neg[m] = hif8::binade_of(-m).base_code;
  }
  return t;
}();
static_assert(hif8::kMaxExp == 15 && -hif8::kMaxDenormalExp == 16,
              "the 16-entry tables cover |E| <= 15, the rest is denormal");

// Per u32 lane, table[idx] for idx in [0, 15] (the lane's upper bytes are 0 and look up
// entry 0: masked off).
template <class DU>
HWY_INLINE hn::Vec<DU> Lookup16(DU du, const uint8_t* HWY_RESTRICT table, hn::Vec<DU> idx) {
  const hn::Repartition<uint8_t, DU> d8;
  const auto t = hn::LoadDup128(d8, table);
  return hn::And(hn::BitCast(du, hn::TableLookupBytes(t, hn::BitCast(d8, idx))), hn::Set(du, 0xFFu));
}

#if HWY_TARGET == HWY_AVX3_DL
// Per u32 lane, table[idx mod 64]: one VBMI byte permute, zero-masked to byte 0 of each lane.
template <class DU>
HWY_INLINE hn::Vec<DU> Lookup64(DU du, const uint8_t* HWY_RESTRICT table, hn::Vec<DU> idx) {
  static_assert(sizeof(hn::Vec<DU>) == 64, "full 512-bit vectors only");
  const hn::Repartition<uint8_t, DU> d8;
  const auto t = hn::Load(d8, table);
  constexpr __mmask64 kByte0 = 0x1111111111111111ull;
  return hn::BitCast(du, hn::Vec512<uint8_t>{_mm512_maskz_permutexvar_epi8(kByte0, hn::BitCast(d8, idx).raw, t.raw)});
}
#endif

// Half-ulp shift (22 - mantissa bits) of the binade with fp32 exponent field `field`
// (104..142, i.e. E = -23..15; other fields give some value in [0, 22]).
template <class DU>
HWY_INLINE hn::Vec<DU> HiF8HalfShift(DU du, hn::Vec<DU> field) {
#if HWY_TARGET == HWY_AVX3_DL
  return Lookup64(du, kHiF8Tables.half_shift64, field);
#else
  const hn::RebindToSigned<DU> di;
  const auto e = hn::Sub(hn::BitCast(di, field), hn::Set(di, 127));
  const auto m = hn::BitCast(du, hn::Min(hn::Abs(e), hn::Set(di, 15)));
  const auto normal = Lookup16(du, kHiF8Tables.half_shift, m);
  const auto denormal = hn::RebindMask(du, hn::Lt(e, hn::Set(di, hif8::kMaxDenormalExp + 1)));
  return hn::IfThenElse(denormal, hn::Set(du, 22u), normal);
#endif
}

// Code of 2^E for the fp32 exponent field 127 + E (E = -23..15; -23 gives 0x01, see
// HiF8Tables; other fields give junk).
template <class DU>
HWY_INLINE hn::Vec<DU> HiF8Base(DU du, hn::Vec<DU> field) {
#if HWY_TARGET == HWY_AVX3_DL
  return Lookup64(du, kHiF8Tables.base64, field);
#else
  using T = Traits<DType::HiFloat8>;
  const hn::RebindToSigned<DU> di;
  const auto e = hn::Sub(hn::BitCast(di, field), hn::Set(di, 127));
  const auto m = hn::BitCast(du, hn::Min(hn::Abs(e), hn::Set(di, 15)));
  const auto normal = hn::IfThenElse(hn::RebindMask(du, hn::Lt(e, hn::Zero(di))), Lookup16(du, kHiF8Tables.base_neg, m),
                                     Lookup16(du, kHiF8Tables.base_pos, m));
  const auto denormal_code = hn::Max(hn::Add(e, hn::Set(di, T::kDenormalOffset)), hn::Set(di, 1));
  const auto denormal = hn::RebindMask(du, hn::Lt(e, hn::Set(di, hif8::kMaxDenormalExp + 1)));
  return hn::IfThenElse(denormal, hn::BitCast(du, denormal_code), normal);
#endif
}

// HiFloat8, saturating (hifloat8.cpp): round the mantissa to the width of the value's
// own binade, ties away from zero (add half an ulp, truncate; a carry moves into the next
// binade with mantissa 0), then the code of the resulting binade. Magnitudes are first
// clamped to 2^15: everything from there up (Inf too) encodes to +-2^15, the saturated
// overflow (from 1.25 * 2^15 up the rounding would give the would-be 1.5 * 2^15).
// [2^-23, 2^-22) -> 2^-22, below 2^-23 -> 0 (no negative zero); NaN -> 0x80.
template <EncodeRange R, class DF>
HWY_INLINE CodeVec<DF> EncodeHiF8Sat(DF df, hn::Vec<DF> r) {
  using T = Traits<DType::HiFloat8>;
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto bits = hn::BitCast(du, r);
  const auto abs = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)));
  // (Below 1.25 * 2^15 the rounding itself stops at 2^15.)
  const auto a = R == EncodeRange::kNoOverflow ? hn::BitCast(du, abs)
                                               : hn::BitCast(du, hn::Min(abs, hn::Set(di, kHiF8HighestField << 23)));
  const auto shift = HiF8HalfShift(du, hn::ShiftRight<23>(a));
  const auto t = hn::Add(a, hn::Shl(hn::Set(du, 1u), shift));
  const auto q = hn::Shr(hn::And(t, hn::Set(du, 0x7FFFFFu)), hn::Add(shift, hn::Set(du, 1u)));
  auto code = hn::OrAnd(hn::Or(HiF8Base(du, hn::ShiftRight<23>(t)), q), hn::ShiftRight<24>(bits), hn::Set(du, 0x80u));
  // Below 2^-23: 0 without a sign (where the lookups above read junk).
  const auto tiny = hn::Lt(abs, hn::Set(di, kHiF8LowestField << 23));
  code = hn::IfThenZeroElse(hn::RebindMask(du, tiny), code);
  if constexpr (R != EncodeRange::kAny) return code;
  const auto is_nan = hn::RebindMask(du, hn::Gt(abs, hn::Set(di, 0x7F800000)));
  return hn::IfThenElse(is_nan, hn::Set(du, T::kNaNCode), code);
}

// EncodeSat<X, kNoOverflow> for X = Int8, Float8E4M3FN, Float8E5M2 (and the 4-bit ones), and the lanes that are
// near a rounding boundary: where some value within 4 fp32 ulps of r could get another
// code (a conservative test, within 2^-16 of the target's half ulp). Elsewhere every such
// value gets r's code, so r may be an approximation of the value to encode that is within
// 2 ulps of it (e.g. v * RN(1/s) for RN(v / s)).
template <DType X, class DF>
HWY_INLINE CodeVec<DF> EncodeSatNearTie(DF df, hn::Vec<DF> r, hn::Mask<DF>& near) {
  if constexpr (X == DType::Int8) {
    return EncodeInt8Sym<EncodeRange::kNoOverflow, true>(df, r, &near);
  } else {
    static_assert(X == DType::Float8E4M3FN || X == DType::Float8E5M2 || X == DType::Float4E2M1 ||
                  X == DType::Float4E1M2);
    return EncodeIeeeLikeSat<X, EncodeRange::kNoOverflow, true>(df, r, &near);
  }
}

template <DType X, EncodeRange R = EncodeRange::kAny, class DF>
HWY_INLINE CodeVec<DF> EncodeSat(DF df, hn::Vec<DF> r) {
  if constexpr (X == DType::Int8) {
    return EncodeInt8Sym<R>(df, r);
  } else if constexpr (X == DType::HiFloat8) {
    return EncodeHiF8Sat<R>(df, r);
  } else {
    static_assert(X == DType::Float8E4M3FN || X == DType::Float8E5M2 || X == DType::Float4E2M1 ||
                  X == DType::Float4E1M2);
    return EncodeIeeeLikeSat<X, R>(df, r);
  }
}

#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::formats
HWY_AFTER_NAMESPACE();

#endif  // include guard (per target)
