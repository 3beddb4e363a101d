// Per-target SIMD quantizers (KG group 128 with fp32 scales, MX block 32 with E8M0 scales)
// from fp32, bf16 or fp16 rows; bit-identical to the reference (quantize_kg.cpp,
// quantize_mx.cpp, quant_groups.hpp). Include it the Highway way (below HWY_TARGET_INCLUDE
// and foreach_target.h); it defines, per target, in qcoll::quant::HWY_NAMESPACE:
//
//   LoadF32<In>(df, x, i)        N input elements from element i, exactly as fp32
//   QuantizeKgGroup<In, X>(...)  one KG group: writes 128 codes, returns its scale
//   QuantizeMxBlock<In, X>(...)  one MX block: writes 32 codes, returns its E8M0 byte
//   QuantizeRows<In, X>(job)     every group of a QuantJob
//
// The same arithmetic as the reference, lane by lane:
//   KG  amax over the finite elements; scale = amax / target, the same scalar fp32
//       division; q = EncodeSat(v / scale), one IEEE division per lane; a zero scale gives
//       EncodeSat(finite ? 0 : v).
//   MX  shared_exp = max(exponent_field(amax) - 127 - emax_elem, -127) (a subnormal or zero
//       amax has field 0: -127, as the reference's floor_log2 and clamp give for E4M3/E5M2);
//       q = EncodeSat(v * 2^-shared_exp), the power of two built from its exponent bits.
// How, for speed: finite magnitudes order like their bits, in fp32, bf16 and fp16 alike, so
// a group's amax is an integer max of the magnitude bits in the input's own width (16-bit
// lanes for bf16/fp16: twice the elements per instruction), converted once. A group whose
// raw max is Inf or NaN takes the exact finite-only max and the general encoder; the
// others, with a normal scale, the encoder without the NaN and saturation steps (see
// EncodeRange in formats/encode-inl.h). MX reduces the maxima of N blocks at once (a
// ConcatEven/ConcatOdd tree). Codes are packed four vectors to one store (4-bit codes:
// eight vectors, pairs of lanes packed into one byte first: PackNibblePairs).
// Needs round-to-nearest and no denormals-are-zero (see formats/encode-inl.h). Vectors must
// divide the MX block (32 lanes at most); the caller checks.

#if defined(QCOLL_QUANT_QUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QCOLL_QUANT_QUANTIZE_INL_H_
#undef QCOLL_QUANT_QUANTIZE_INL_H_
#else
#define QCOLL_QUANT_QUANTIZE_INL_H_
#endif

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "formats/encode-inl.h"
#include "formats/traits.hpp"
#include "hwy/highway.h"
#include "qcoll/contract.hpp"
#include "quant/quantize_job.hpp"

HWY_BEFORE_NAMESPACE();
namespace qcoll::quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

namespace fh = formats::HWY_NAMESPACE;
using fh::CodeVec;
using fh::EncodeRange;

// x86 AVX2 and AVX-512 targets include F16C (exact fp16 -> fp32, NaN stays NaN with its sign).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
inline constexpr bool kHwF16 = true;
#else
inline constexpr bool kHwF16 = false;
#endif

inline constexpr uint32_t kF32InfBits = 0x7F800000u;

// 16-bit codes (bf16 or fp16 bits, zero-extended in u32 lanes) -> fp32, exactly.
template <DType In, class DF>
HWY_INLINE hn::Vec<DF> HalfToF32(DF df, hn::Vec<hn::RebindToUnsigned<DF>> b) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  if constexpr (In == DType::BFloat16) {
    return hn::BitCast(df, hn::ShiftLeft<16>(b));
  } else if constexpr (kHwF16) {
    static_assert(In == DType::Float16);
    const hn::Rebind<uint16_t, DF> d16;
    return hn::PromoteTo(df, hn::BitCast(hn::Rebind<hwy::float16_t, DF>(), hn::DemoteTo(d16, hn::BitCast(di, b))));
  } else {
    // As formats::decode_float16: rebias the exponent (twice for Inf/NaN, field 31 ->
    // 255), subnormals as mantissa * 2^-24 (exact, a normal fp32).
    static_assert(In == DType::Float16);
    using F16 = formats::Traits<DType::Float16>;
    const auto sign = hn::ShiftLeft<16>(hn::And(b, hn::Set(du, 0x8000u)));
    const auto mag = hn::And(b, hn::Set(du, 0x7FFFu));
    const auto rebias = hn::Set(du, static_cast<uint32_t>(F16::kF32Rebias) << 23);
    auto v = hn::Add(hn::ShiftLeft<13>(mag), rebias);
    v = hn::IfThenElse(hn::RebindMask(du, hn::Gt(hn::BitCast(di, mag), hn::Set(di, 0x7BFF))), hn::Add(v, rebias), v);
    const auto sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, mag)), hn::Set(df, F16::kMinSubnormal)));
    v = hn::IfThenElse(hn::RebindMask(du, hn::Lt(hn::BitCast(di, mag), hn::Set(di, 0x400))), sub, v);
    return hn::BitCast(df, hn::Or(v, sign));
  }
}

template <DType In, class DF>
HWY_INLINE hn::Vec<DF> LoadF32(DF df, const void* HWY_RESTRICT x, std::size_t i) {
  if constexpr (In == DType::Float) {
    return hn::LoadU(df, static_cast<const float*>(x) + i);
  } else {
    const hn::Rebind<uint16_t, DF> d16;
    const auto h = hn::LoadU(d16, static_cast<const uint16_t*>(x) + i);
    if constexpr (In == DType::Float16 && kHwF16) {
      return hn::PromoteTo(df, hn::BitCast(hn::Rebind<hwy::float16_t, DF>(), h));
    } else {
      return HalfToF32<In>(df, hn::PromoteTo(hn::RebindToUnsigned<DF>(), h));
    }
  }
}

// Lanes whose max is the largest magnitude over [first, first + n), NaN and Inf included,
// in the input's bits (16-bit codes zero-extended in u32 lanes for bf16/fp16).
template <DType In, class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> RawAbsMaxLanes(DF df, const void* HWY_RESTRICT x, std::size_t first,
                                                            std::size_t n) {
  const hn::RebindToUnsigned<DF> du;
  if constexpr (In == DType::Float) {
    const std::size_t N = hn::Lanes(du);
    const auto* p = static_cast<const uint32_t*>(x) + first;
    const auto abs_mask = hn::Set(du, 0x7FFFFFFFu);
    auto m = hn::And(hn::LoadU(du, p), abs_mask);
    for (std::size_t i = N; i < n; i += N) m = hn::Max(m, hn::And(hn::LoadU(du, p + i), abs_mask));
    return m;
  } else {
    (void)df;
    const hn::Repartition<uint16_t, DF> d16;  // 2N lanes
    const std::size_t N16 = hn::Lanes(d16);
    const auto* p = static_cast<const uint16_t*>(x) + first;
    const auto abs_mask = hn::Set(d16, 0x7FFFu);
    auto m = hn::And(hn::LoadU(d16, p), abs_mask);
    for (std::size_t i = N16; i < n; i += N16) m = hn::Max(m, hn::And(hn::LoadU(d16, p + i), abs_mask));
    const auto m32 = hn::BitCast(du, m);
    return hn::Max(hn::And(m32, hn::Set(du, 0xFFFFu)), hn::ShiftRight<16>(m32));
  }
}

// Raw maxima (RawAbsMaxLanes, reduced) -> fp32 magnitude bits, NaN and Inf included.
template <DType In, class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> RawMaxToF32Bits(DF df, hn::Vec<hn::RebindToUnsigned<DF>> m) {
  if constexpr (In == DType::Float) {
    (void)df;
    return m;
  } else {
    return hn::BitCast(hn::RebindToUnsigned<DF>(), HalfToF32<In>(df, m));
  }
}

// The reference's amax: largest magnitude over the finite elements (0 if none), as fp32
// bits broadcast to every lane. For groups whose raw max is not finite.
template <DType In, class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> FiniteAmaxBits(DF df, const void* HWY_RESTRICT x, std::size_t first,
                                                            std::size_t n) {
  const hn::RebindToSigned<DF> di;
  const std::size_t N = hn::Lanes(df);
  const auto abs_mask = hn::Set(di, 0x7FFFFFFF);
  const auto inf = hn::Set(di, static_cast<int32_t>(kF32InfBits));
  auto amax = hn::Zero(di);
  for (std::size_t i = 0; i < n; i += N) {
    const auto a = hn::And(hn::BitCast(di, LoadF32<In>(df, x, first + i)), abs_mask);
    amax = hn::Max(amax, hn::IfThenElseZero(hn::Lt(a, inf), a));
  }
  return hn::BitCast(hn::RebindToUnsigned<DF>(), hn::MaxOfLanes(di, amax));
}

template <class DF>
HWY_INLINE void StoreCodes(DF df, CodeVec<DF> code, uint8_t* HWY_RESTRICT q) {
  const hn::Rebind<uint8_t, DF> d8;
  const hn::RebindToSigned<DF> di;
  (void)df;
  hn::StoreU(hn::DemoteTo(d8, hn::BitCast(di, code)), d8, q);
}

// Four vectors of codes (0..255 in u32 lanes) -> 4N consecutive bytes. x86: two
// saturating packs (exact for 0..255) work within 128-bit blocks; one dword permute puts
// the blocks' 4-byte groups in order.
template <class DF>
HWY_INLINE void StoreCodes4(DF df, CodeVec<DF> a, CodeVec<DF> b, CodeVec<DF> c, CodeVec<DF> d,
                            uint8_t* HWY_RESTRICT q) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (sizeof(CodeVec<DF>) == 64) {
    (void)df;
    const __m512i abcd = _mm512_packus_epi16(_mm512_packus_epi32(a.raw, b.raw), _mm512_packus_epi32(c.raw, d.raw));
    const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_si512(q, _mm512_permutexvar_epi32(idx, abcd));
    return;
  }
#elif HWY_TARGET == HWY_AVX2
  if constexpr (sizeof(CodeVec<DF>) == 32) {
    (void)df;
    const __m256i abcd = _mm256_packus_epi16(_mm256_packus_epi32(a.raw, b.raw), _mm256_packus_epi32(c.raw, d.raw));
    const __m256i idx = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_permutevar8x32_epi32(abcd, idx));
    return;
  }
#elif HWY_TARGET == HWY_SSE4
  if constexpr (sizeof(CodeVec<DF>) == 16) {
    (void)df;
    const __m128i abcd = _mm_packus_epi16(_mm_packus_epi32(a.raw, b.raw), _mm_packus_epi32(c.raw, d.raw));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), abcd);
    return;
  }
#endif
  const std::size_t N = hn::Lanes(df);
  StoreCodes(df, a, q);
  StoreCodes(df, b, q + N);
  StoreCodes(df, c, q + 2 * N);
  StoreCodes(df, d, q + 3 * N);
}

// The 4-bit x formats (E2M1, E1M2) write packed codes, two a byte (contract.md
// §ext-fp4-layout): element e's code is in byte CodeOffset<X>(e) = e / 2 (e even).
template <DType X>
inline constexpr bool kPacked = formats::Traits<X>::kBits == 4;
template <DType X>
constexpr std::size_t CodeOffset(std::size_t elements) {
  return kPacked<X> ? elements / 2 : elements;
}
// Vectors of codes per store of 4N bytes: 4 (8-bit) or 8 (4-bit).
template <DType X>
inline constexpr std::size_t kVecsPerStore = kPacked<X> ? 8 : 4;

// Four vectors of codes, elements [0, 4N), to their bytes at q; for the 4-bit formats
// the next four, elements [4N, 8N), too, all eight packed into 4N bytes.
template <DType X, class DF>
HWY_INLINE void StoreCodeVecs(DF df, CodeVec<DF> c0, CodeVec<DF> c1, CodeVec<DF> c2, CodeVec<DF> c3,
                              uint8_t* HWY_RESTRICT q) {
  static_assert(!kPacked<X>);
  StoreCodes4(df, c0, c1, c2, c3, q);
}
template <DType X, class DF>
HWY_INLINE void StoreCodeVecs(DF df, CodeVec<DF> c0, CodeVec<DF> c1, CodeVec<DF> c2, CodeVec<DF> c3, CodeVec<DF> c4,
                              CodeVec<DF> c5, CodeVec<DF> c6, CodeVec<DF> c7, uint8_t* HWY_RESTRICT q) {
  static_assert(kPacked<X>);
  const hn::RebindToUnsigned<DF> du;
  StoreCodes4(df, fh::PackNibblePairs(du, c0, c1), fh::PackNibblePairs(du, c2, c3), fh::PackNibblePairs(du, c4, c5),
              fh::PackNibblePairs(du, c6, c7), q);
}

// Codes of elements [first, first + n) (n a multiple of kVecsPerStore<X> * N) scaled by `op`
// (v, offset in the span -> r), stored from q (CodeOffset<X>(offset) for each element).
template <DType In, DType X, EncodeRange R, class DF, class Op>
HWY_INLINE void EncodeSpan(DF df, const void* HWY_RESTRICT x, std::size_t first, std::size_t n, uint8_t* HWY_RESTRICT q,
                           Op op) {
  const std::size_t N = hn::Lanes(df);
  const auto enc = [&](std::size_t i) { return fh::EncodeSat<X, R>(df, op(LoadF32<In>(df, x, first + i), i)); };
  for (std::size_t i = 0; i < n; i += kVecsPerStore<X> * N) {
    if constexpr (kPacked<X>) {
      StoreCodeVecs<X>(df, enc(i), enc(i + N), enc(i + 2 * N), enc(i + 3 * N), enc(i + 4 * N), enc(i + 5 * N),
                       enc(i + 6 * N), enc(i + 7 * N), q + CodeOffset<X>(i));
    } else {
      StoreCodeVecs<X>(df, enc(i), enc(i + N), enc(i + 2 * N), enc(i + 3 * N), q + i);
    }
  }
}

// A finite KG group whose scale and 1/scale are normal fp32 (INT8, E4M3FN, E5M2): the
// codes of v * RN(1/scale), which is within 2 ulps of RN(v / scale) (|v * y - v / s| <=
// |v / s| * 2^-24 for y = RN(1/s)). The rare vectors with a lane near a rounding boundary
// (EncodeSatNearTie) are done again with the division. Division is the slowest operation
// of the quantizer; this leaves it for about 1 vector in 10^3.
// Codes of the 4N elements from e by the reciprocal (see EncodeKgByReciprocal).
template <DType In, DType X, class DF>
HWY_INLINE void EncodeByReciprocal4(DF df, const void* HWY_RESTRICT x, std::size_t e, hn::Vec<DF> s, hn::Vec<DF> y,
                                    CodeVec<DF>& c0, CodeVec<DF>& c1, CodeVec<DF>& c2, CodeVec<DF>& c3) {
  const std::size_t N = hn::Lanes(df);
  const auto v0 = LoadF32<In>(df, x, e), v1 = LoadF32<In>(df, x, e + N);
  const auto v2 = LoadF32<In>(df, x, e + 2 * N), v3 = LoadF32<In>(df, x, e + 3 * N);
  hn::Mask<DF> n0, n1, n2, n3;
  c0 = fh::EncodeSatNearTie<X>(df, hn::Mul(v0, y), n0);
  c1 = fh::EncodeSatNearTie<X>(df, hn::Mul(v1, y), n1);
  c2 = fh::EncodeSatNearTie<X>(df, hn::Mul(v2, y), n2);
  c3 = fh::EncodeSatNearTie<X>(df, hn::Mul(v3, y), n3);
  if (HWY_UNLIKELY(!hn::AllFalse(df, hn::Or(hn::Or(n0, n1), hn::Or(n2, n3))))) {
    c0 = fh::EncodeSat<X, EncodeRange::kNoOverflow>(df, hn::Div(v0, s));
    c1 = fh::EncodeSat<X, EncodeRange::kNoOverflow>(df, hn::Div(v1, s));
    c2 = fh::EncodeSat<X, EncodeRange::kNoOverflow>(df, hn::Div(v2, s));
    c3 = fh::EncodeSat<X, EncodeRange::kNoOverflow>(df, hn::Div(v3, s));
  }
}

template <DType In, DType X, class DF>
HWY_INLINE void EncodeKgByReciprocal(DF df, const void* HWY_RESTRICT x, std::size_t first, uint8_t* HWY_RESTRICT q,
                                     float scale, float recip) {
  constexpr std::size_t G = contract::kKgGroup;
  const std::size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, scale);
  const auto y = hn::Set(df, recip);
  for (std::size_t i = 0; i < G; i += kVecsPerStore<X> * N) {
    CodeVec<DF> c0, c1, c2, c3;
    EncodeByReciprocal4<In, X>(df, x, first + i, s, y, c0, c1, c2, c3);
    if constexpr (kPacked<X>) {
      CodeVec<DF> c4, c5, c6, c7;
      EncodeByReciprocal4<In, X>(df, x, first + i + 4 * N, s, y, c4, c5, c6, c7);
      StoreCodeVecs<X>(df, c0, c1, c2, c3, c4, c5, c6, c7, q + CodeOffset<X>(i));
    } else {
      StoreCodeVecs<X>(df, c0, c1, c2, c3, q + i);
    }
  }
}

// The codes of one KG group whose scale is known. finite: the group has no NaN or Inf;
// recip: RN(1 / scale), used when scale and recip are normal (INT8, E4M3FN, E5M2, E2M1, E1M2).
template <DType In, DType X, class DF>
HWY_INLINE void EncodeKgGroup(DF df, const void* HWY_RESTRICT x, std::size_t first, uint8_t* HWY_RESTRICT q,
                              float scale, float recip, bool finite) {
  constexpr std::size_t G = contract::kKgGroup;
  const hn::RebindToSigned<DF> di;
  if (scale == 0.0f) {
    const auto inf = hn::Set(di, static_cast<int32_t>(kF32InfBits));
    EncodeSpan<In, X, EncodeRange::kAny>(df, x, first, G, q, [&](hn::Vec<DF> v, std::size_t) {
      const auto finite_lane = hn::Lt(hn::And(hn::BitCast(di, v), hn::Set(di, 0x7FFFFFFF)), inf);
      return hn::IfThenZeroElse(hn::RebindMask(df, finite_lane), v);
    });
    return;
  }
  const auto s = hn::Set(df, scale);
  const auto divide = [&](hn::Vec<DF> v, std::size_t) { return hn::Div(v, s); };
  if (!finite || !(scale >= FLT_MIN)) {
    EncodeSpan<In, X, EncodeRange::kAny>(df, x, first, G, q, divide);
  } else if (X == DType::HiFloat8 || !(scale <= 0x1p126f)) {
    // |v / scale| <= target * (1 + 2^-23): below every saturation point.
    EncodeSpan<In, X, EncodeRange::kNoOverflow>(df, x, first, G, q, divide);
  } else if constexpr (X != DType::HiFloat8) {
    EncodeKgByReciprocal<In, X>(df, x, first, q, scale, recip);
  }
}

// One KG group on its own (tails): returns its scale.
template <DType In, DType X, class DF>
HWY_INLINE float QuantizeKgGroup(DF df, const void* HWY_RESTRICT x, std::size_t first, uint8_t* HWY_RESTRICT q,
                                 float target) {
  constexpr std::size_t G = contract::kKgGroup;
  const hn::RebindToUnsigned<DF> du;
  auto bits = RawMaxToF32Bits<In>(df, hn::MaxOfLanes(du, RawAbsMaxLanes<In>(df, x, first, G)));
  const bool finite = hn::GetLane(bits) < kF32InfBits;
  if (!finite) bits = FiniteAmaxBits<In>(df, x, first, G);
  const float amax = hn::GetLane(hn::BitCast(df, bits));
  const float scale = amax / target;
  EncodeKgGroup<In, X>(df, x, first, q, scale, 1.0f / scale, finite);
  return scale;
}

#if !HWY_HAVE_SCALABLE
// Raw maxima (NaN and Inf included) of N consecutive groups of G elements, as fp32
// magnitude bits: lane b is group b's. The groups' lanes are reduced together by a
// ConcatEven/ConcatOdd tree: each level takes the maxima of adjacent lanes of two vectors
// into one (the first's in the lower half), so after log2(N) levels lane b holds group b's.
template <DType In, class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> BatchRawMaxF32Bits(DF df, const void* HWY_RESTRICT x, std::size_t first,
                                                                std::size_t G) {
  constexpr std::size_t N = hn::MaxLanes(DF());
  const hn::RebindToUnsigned<DF> du;
  hn::Vec<decltype(du)> m[N];
  for (std::size_t b = 0; b < N; ++b) m[b] = RawAbsMaxLanes<In>(df, x, first + b * G, G);
  for (std::size_t count = N; count > 1; count /= 2)
    for (std::size_t j = 0; j < count / 2; ++j)
      m[j] = hn::Max(hn::ConcatEven(du, m[2 * j + 1], m[2 * j]), hn::ConcatOdd(du, m[2 * j + 1], m[2 * j]));
  return RawMaxToF32Bits<In>(df, m[0]);
}

// N consecutive KG groups: scales and reciprocals computed as vectors (the same IEEE
// divisions), the scales stored as one vector.
template <DType In, DType X, class DF>
HWY_INLINE void QuantizeKgBatch(DF df, const void* HWY_RESTRICT x, std::size_t first, uint8_t* HWY_RESTRICT q,
                                float* HWY_RESTRICT scales, float target) {
  constexpr std::size_t G = contract::kKgGroup;
  constexpr std::size_t N = hn::MaxLanes(DF());
  const hn::RebindToSigned<DF> di;
  const auto amax_bits = hn::BitCast(di, BatchRawMaxF32Bits<In>(df, x, first, G));
  if (!hn::AllTrue(di, hn::Lt(amax_bits, hn::Set(di, static_cast<int32_t>(kF32InfBits))))) {
    for (std::size_t b = 0; b < N; ++b)
      scales[b] = QuantizeKgGroup<In, X>(df, x, first + b * G, q + CodeOffset<X>(b * G), target);
    return;
  }
  const auto scale = hn::Div(hn::BitCast(df, amax_bits), hn::Set(df, target));
  hn::StoreU(scale, df, scales);
  alignas(64) float sc[N];
  alignas(64) float rc[N];
  hn::Store(scale, df, sc);
  hn::Store(hn::Div(hn::Set(df, 1.0f), scale), df, rc);
  for (std::size_t b = 0; b < N; ++b)
    EncodeKgGroup<In, X>(df, x, first + b * G, q + CodeOffset<X>(b * G), sc[b], rc[b], true);
}
#endif

template <DType X>
inline constexpr int kMxEmax = formats::Traits<X>::kMxEmax;

// shared_exp of fp32 amax bits (lane-wise): max(field - 127 - emax, -127).
template <DType X, class DI>
HWY_INLINE hn::Vec<DI> MxSharedExp(DI di, hn::Vec<DI> amax_bits) {
  static_assert(kMxEmax<X> >= 0, "shared_exp <= 127 - emax needs no upper clamp");
  return hn::Max(hn::Sub(hn::ShiftRight<23>(amax_bits), hn::Set(di, 127 + kMxEmax<X>)), hn::Set(di, -127));
}

// 2^-shared_exp, shared_exp in [-127, 127 - emax]: an fp32 power of two, normal but for
// E1M2's (emax 0) shared_exp 127: the subnormal 2^-127 (bits 0x00400000; the field formula
// would give 0).
template <DType X, class DI>
HWY_INLINE hn::Vec<DI> MxInvScaleBits(DI di, hn::Vec<DI> shared_exp) {
  const auto normal = hn::ShiftLeft<23>(hn::Sub(hn::Set(di, 127), shared_exp));
  if constexpr (kMxEmax<X> > 0) return normal;
  return hn::IfThenElse(hn::Eq(shared_exp, hn::Set(di, 127)), hn::Set(di, 0x00400000), normal);
}

// One MX block, on its own (tails and blocks with non-finite elements).
template <DType In, DType X, class DF>
HWY_INLINE uint8_t QuantizeMxBlock(DF df, const void* HWY_RESTRICT x, std::size_t first, uint8_t* HWY_RESTRICT q) {
  constexpr std::size_t G = contract::kMxGroup;
  const hn::RebindToSigned<DF> di;
  const std::size_t N = hn::Lanes(df);
  const auto shared_exp = MxSharedExp<X>(di, hn::BitCast(di, FiniteAmaxBits<In>(df, x, first, G)));
  const auto inv_scale = hn::BitCast(df, MxInvScaleBits<X>(di, shared_exp));
  const auto enc = [&](std::size_t i) { return fh::EncodeSat<X>(df, hn::Mul(LoadF32<In>(df, x, first + i), inv_scale)); };
  if constexpr (kPacked<X>) {  // 2N <= 32: the caller's check
    const hn::RebindToUnsigned<DF> du;
    for (std::size_t i = 0; i < G; i += 2 * N) StoreCodes(df, fh::PackNibblePairs(du, enc(i), enc(i + N)), q + i / 2);
  } else {
    for (std::size_t i = 0; i < G; i += N) StoreCodes(df, enc(i), q + i);
  }
  return static_cast<uint8_t>(hn::GetLane(shared_exp) + 127);
}

#if !HWY_HAVE_SCALABLE
// N consecutive MX blocks: shared exponents as one vector, the scale bytes stored as one.
template <DType In, DType X, class DF>
HWY_INLINE void QuantizeMxBatch(DF df, const void* HWY_RESTRICT x, std::size_t first, uint8_t* HWY_RESTRICT q,
                                uint8_t* HWY_RESTRICT scales) {
  constexpr std::size_t G = contract::kMxGroup;
  constexpr std::size_t N = hn::MaxLanes(DF());
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto amax_bits = hn::BitCast(di, BatchRawMaxF32Bits<In>(df, x, first, G));
  if (!hn::AllTrue(di, hn::Lt(amax_bits, hn::Set(di, static_cast<int32_t>(kF32InfBits))))) {
    for (std::size_t b = 0; b < N; ++b) scales[b] = QuantizeMxBlock<In, X>(df, x, first + b * G, q + CodeOffset<X>(b * G));
    return;
  }
  const auto shared_exp = MxSharedExp<X>(di, amax_bits);
  StoreCodes(df, hn::BitCast(du, hn::Add(shared_exp, hn::Set(di, 127))), scales);
  alignas(64) float inv[N];
  hn::Store(hn::BitCast(df, MxInvScaleBits<X>(di, shared_exp)), df, inv);
  EncodeSpan<In, X, EncodeRange::kNoNaN>(
      df, x, first, G * N, q, [&](hn::Vec<DF> v, std::size_t i) { return hn::Mul(v, hn::Set(df, inv[i / G])); });
}
#endif

template <DType In, DType X>
HWY_NOINLINE void QuantizeKgRows(const detail::QuantJob& job) {
  const hn::ScalableTag<float> df;
  constexpr std::size_t G = contract::kKgGroup;
  const std::size_t count = job.rows * job.H;
  float* HWY_RESTRICT scales = static_cast<float*>(job.scales);
  std::size_t g = 0;
#if !HWY_HAVE_SCALABLE
  const std::size_t N = hn::Lanes(df);
  for (; (g + N) * G <= count; g += N)
    QuantizeKgBatch<In, X>(df, job.x, g * G, job.q + CodeOffset<X>(g * G), scales + g, job.target);
#endif
  for (; g * G < count; ++g)
    scales[g] = QuantizeKgGroup<In, X>(df, job.x, g * G, job.q + CodeOffset<X>(g * G), job.target);
}

template <DType In, DType X>
HWY_NOINLINE void QuantizeMxRows(const detail::QuantJob& job) {
  const hn::ScalableTag<float> df;
  constexpr std::size_t G = contract::kMxGroup;
  const std::size_t count = job.rows * job.H;
  uint8_t* HWY_RESTRICT scales = static_cast<uint8_t*>(job.scales);
  std::size_t b = 0;
#if !HWY_HAVE_SCALABLE
  const std::size_t N = hn::Lanes(df);
  for (; (b + N) * G <= count; b += N)
    QuantizeMxBatch<In, X>(df, job.x, b * G, job.q + CodeOffset<X>(b * G), scales + b);
#endif
  for (; b * G < count; ++b) scales[b] = QuantizeMxBlock<In, X>(df, job.x, b * G, job.q + CodeOffset<X>(b * G));
}

// Every group of `job` (checked arguments; vectors of at most 32 lanes dividing 32, at most
// 16 for the 4-bit formats).
template <DType In, DType X>
HWY_INLINE void QuantizeRows(const detail::QuantJob& job) {
  if (job.scales_dtype == DType::Float) {
    QuantizeKgRows<In, X>(job);
  } else if constexpr (X == DType::Float8E4M3FN || X == DType::Float8E5M2 || kPacked<X>) {
    QuantizeMxRows<In, X>(job);
  }
}

#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::quant
HWY_AFTER_NAMESPACE();

#endif  // include guard (per target)
