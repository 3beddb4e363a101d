// AVX2 decoders of the dequant_reduce kernels (target AVX2 only): one Decoder256<X> per x
// dtype, 32 codes per step into four __m256. Included by dequant_reduce_simd.cpp the Highway
// way, after decode-inl.h (constants, Tables); the loop and the store that use these
// decoders are in reduce_avx2-inl.h. A new format adds its Decoder256 here (the packed 4-bit
// dtypes: p is where the step's 16 bytes start, XAt).

#if defined(QCOLL_KERNELS_DECODE_AVX2_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QCOLL_KERNELS_DECODE_AVX2_INL_H_
#undef QCOLL_KERNELS_DECODE_AVX2_INL_H_
#else
#define QCOLL_KERNELS_DECODE_AVX2_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/decode-inl.h"
#include "kernels/output_cast.hpp"

HWY_BEFORE_NAMESPACE();
namespace qcoll::kernels {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX2
// ---- AVX2: 32 elements (one MX group) per step, four __m256 ------------------------------
// Orders as on AVX-512, at half width: Natural v_r[j] = element 8r + j; EvenOdd v_0 / v_1 =
// even / odd elements of 0..15, v_2 / v_3 the same of 16..31.

// fp16 bits of the even (e) and odd (o) codes of a 32-code block -> EvenOdd fp32 vectors.
HWY_INLINE void CvtEvenOdd256(__m256i e, __m256i o, __m256* v) {
  v[0] = _mm256_cvtph_ps(_mm256_castsi256_si128(e));
  v[1] = _mm256_cvtph_ps(_mm256_castsi256_si128(o));
  v[2] = _mm256_cvtph_ps(_mm256_extracti128_si256(e, 1));
  v[3] = _mm256_cvtph_ps(_mm256_extracti128_si256(o, 1));
}

// E4M3FN code -> value / 2^8 through fp16 (s.eeee.mmm -> s.0eeee.mmm0000000, subnormal
// codes included), 32 codes. The NaN codes give +-1.875: Decoder256 excludes them.
HWY_INLINE void DecodeE4M3Div256x32(__m256i w, __m256* v) {
  const __m256i m = _mm256_set1_epi16(static_cast<short>(kE4Fp16Mask));
  const __m256i e = _mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(w, 8), 8 - kE4ToF16Shift), m);
  const __m256i o = _mm256_and_si256(_mm256_srai_epi16(w, 8 - kE4ToF16Shift), m);
  CvtEvenOdd256(e, o, v);
}

// The E4M3FN NaN codes have every magnitude bit set: (code | sign) == 0xFF.
HWY_INLINE bool AnyE4M3NaN256(__m256i w) {
  const __m256i all = _mm256_or_si256(w, _mm256_set1_epi8(static_cast<char>(E4::kSignMask)));
  return _mm256_movemask_epi8(_mm256_cmpeq_epi8(all, _mm256_set1_epi8(-1))) != 0;
}

// Exact values: the value/2^8 decode times 2^8 (exact), NaN lanes set.
HWY_INLINE void DecodeE4M3Exactx32(__m256i w, __m256* v) {
  DecodeE4M3Div256x32(w, v);
  // NaN lanes: fp16 bits of code / 2^8 with every magnitude bit set, i.e. (h & ~sign) == mask.
  const __m256i all = _mm256_or_si256(w, _mm256_set1_epi8(static_cast<char>(E4::kSignMask)));
  const __m256i nan_bytes = _mm256_cmpeq_epi8(all, _mm256_set1_epi8(-1));
  const __m256i ne = _mm256_slli_epi16(nan_bytes, 8);                       // even codes' flags, word-wide
  const __m256i no = _mm256_and_si256(nan_bytes, _mm256_set1_epi16(-256));  // odd codes'
  __m256 flags[4];
  flags[0] = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(ne)));
  flags[1] = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(no)));
  flags[2] = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(ne, 1)));
  flags[3] = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(no, 1)));
  const __m256 k256 = _mm256_set1_ps(kE4Fp16Factor);
  const __m256 nan = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kCanonicalNanF32)));
  for (int r = 0; r < 4; ++r) v[r] = _mm256_blendv_ps(_mm256_mul_ps(v[r], k256), nan, flags[r]);
}

// HiFloat8: fp16 = sign << 8 | F[v] << 7 | L[v] (v = code & 0x7F). F has 128 entries, looked
// up 16 at a time: with idx_h = v + 0x70 - 16h, byte shuffles give table_h[v & 15] where
// v < 16(h + 1) and 0 above (bit 7 set); the tables hold F_h ^ F_{h+1} (F_8 = 0), so the
// XOR over h telescopes to F_{v >> 4}[v & 15].
HWY_INLINE void DecodeHiF8x32(__m256i code, const __m256i* fx, __m256i lt, __m256* v) {
  const __m256i mag = _mm256_and_si256(code, _mm256_set1_epi8(H8::kAbsMask));
  __m256i idx = _mm256_add_epi8(mag, _mm256_set1_epi8(0x70));
  const __m256i l = _mm256_shuffle_epi8(lt, idx);  // L: nonzero only for v < 16
  __m256i f = _mm256_shuffle_epi8(fx[0], idx);
  const __m256i k10 = _mm256_set1_epi8(0x10);
  for (int h = 1; h < 8; ++h) {
    idx = _mm256_sub_epi8(idx, k10);
    f = _mm256_xor_si256(f, _mm256_shuffle_epi8(fx[h], idx));
  }
  // The NaN code: F = 0xFF (with its sign, fp16 0xFF80: a NaN).
  f = _mm256_or_si256(f, _mm256_cmpeq_epi8(code, _mm256_set1_epi8(static_cast<char>(H8::kNaNCode))));
  const __m256i sign = _mm256_set1_epi16(static_cast<short>(0x8000));
  const __m256i e =
      _mm256_or_si256(_mm256_or_si256(_mm256_and_si256(_mm256_slli_epi16(f, 7), _mm256_set1_epi16(0x7F80)),
                                      _mm256_and_si256(l, _mm256_set1_epi16(0x007F))),
                      _mm256_and_si256(_mm256_slli_epi16(code, 8), sign));
  const __m256i o = _mm256_or_si256(
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(f, 1), _mm256_set1_epi16(0x7F80)), _mm256_srli_epi16(l, 8)),
      _mm256_and_si256(code, sign));
  CvtEvenOdd256(e, o, v);
}

// A decoder: Decode(p, s, v) writes the 32 values at p (times any factor it folds into the
// scale s, which it may change) to v[0..3], in element order (kEvenOdd false: Natural) or in
// EvenOdd order (kEvenOdd true). Built once per call, before the step loop.
template <DType X>
struct Decoder256;

// INT8: sign-extend, int -> fp32 (Natural).
template <>
struct Decoder256<DType::Int8> {
  static constexpr bool kEvenOdd = false;
  explicit Decoder256(const Tables&) {}
  HWY_INLINE void Decode(const uint8_t* HWY_RESTRICT p, float&, __m256* d) const {
    for (int r = 0; r < 4; ++r) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * r));
      d[r] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    }
  }
};

// E5M2: 32 codes read as 16 words; w << 8 and w & 0xFF00 are the fp16 bits of the even and
// odd codes (the code is the upper byte of an fp16); F16C (EvenOdd).
template <>
struct Decoder256<DType::Float8E5M2> {
  static constexpr bool kEvenOdd = true;
  static_assert(kE5ToF16Shift == 8);
  explicit Decoder256(const Tables&) {}
  HWY_INLINE void Decode(const uint8_t* HWY_RESTRICT p, float&, __m256* d) const {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    CvtEvenOdd256(_mm256_slli_epi16(w, 8), _mm256_and_si256(w, _mm256_set1_epi16(-256)), d);
  }
};

// E4M3FN: value / 2^8 through fp16 with the 2^8 folded into the scale when scale * 2^8 is
// exact and the 32 codes hold no NaN; otherwise the exact values (EvenOdd).
template <>
struct Decoder256<DType::Float8E4M3FN> {
  static constexpr bool kEvenOdd = true;
  explicit Decoder256(const Tables&) {}
  HWY_INLINE void Decode(const uint8_t* HWY_RESTRICT p, float& s, __m256* d) const {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const float f = s * kE4Fp16Factor;
    if (HWY_LIKELY((std::isfinite(f) || !std::isfinite(s)) && !AnyE4M3NaN256(w))) {
      DecodeE4M3Div256x32(w, d);
      s = f;
    } else {
      DecodeE4M3Exactx32(w, d);
    }
  }
};

// HiFloat8: DecodeHiF8x32 with its nine 16-entry tables broadcast once (EvenOdd).
template <>
struct Decoder256<DType::HiFloat8> {
  static constexpr bool kEvenOdd = true;
  __m256i fx[8];
  __m256i lt;
  explicit Decoder256(const Tables& t) {
    for (int h = 0; h < 8; ++h) {
      fx[h] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.dec->fp16_fx + 16 * h)));
    }
    lt = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.dec->fp16_l)));
  }
  HWY_INLINE void Decode(const uint8_t* HWY_RESTRICT p, float&, __m256* d) const {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    DecodeHiF8x32(w, fx, lt, d);
  }
};

// The packed 4-bit dtypes: 16 bytes = 32 codes. Byte j holds elements 2j (bits 0-3) and
// 2j+1 (bits 4-7), so the zero-extended bytes index the even elements and the same shifted
// right by 4 the odd ones (EvenOdd). The 16-entry fp32 table is two __m256: VPERMPS reads
// index bits 0-2, and bit 3 (moved to the sign bit) selects the half.
template <DType X>
struct Fp4Decoder256 {
  static constexpr bool kEvenOdd = true;
  __m256 t0, t1;
  explicit Fp4Decoder256(const Tables& t) : t0(_mm256_loadu_ps(t.x)), t1(_mm256_loadu_ps(t.x + 8)) {}
  // The table value of the code in bits 0-3 of each dword of idx; sign_bit3 has the code's
  // bit 3 in each dword's sign bit.
  HWY_INLINE __m256 Look(__m256i idx, __m256i sign_bit3) const {
    const __m256 lo = _mm256_permutevar8x32_ps(t0, idx), hi = _mm256_permutevar8x32_ps(t1, idx);
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(sign_bit3));
  }
  HWY_INLINE void Decode(const uint8_t* HWY_RESTRICT p, float&, __m256* d) const {
    for (int h = 0; h < 2; ++h) {
      const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * h)));
      d[2 * h] = Look(b, _mm256_slli_epi32(b, 28));                            // bits 0-3: even
      d[2 * h + 1] = Look(_mm256_srli_epi32(b, 4), _mm256_slli_epi32(b, 24));  // bits 4-7: odd
    }
  }
};
template <>
struct Decoder256<DType::Float4E2M1> : Fp4Decoder256<DType::Float4E2M1> {
  using Fp4Decoder256::Fp4Decoder256;
};
template <>
struct Decoder256<DType::Float4E1M2> : Fp4Decoder256<DType::Float4E1M2> {
  using Fp4Decoder256::Fp4Decoder256;
};

#endif  // AVX2

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard (per target)
