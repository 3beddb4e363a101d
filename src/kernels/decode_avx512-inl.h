// AVX-512 decoders of the dequant_reduce kernels (targets AVX3_DL and AVX3; nothing on any
// other target): one Decoder512<X> per x dtype, 64 codes per step into four __m512 in a lane
// order of the decoder's choosing (Order, below). Included by dequant_reduce_simd.cpp the
// Highway way, after decode-inl.h (constants, Tables); the loop and the store that use these
// decoders are in reduce_avx512-inl.h. A new format adds its Decoder512 here (the packed
// 4-bit dtypes: p is where the step's 32 bytes start, XAt).

#if defined(QCOLL_KERNELS_DECODE_AVX512_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QCOLL_KERNELS_DECODE_AVX512_INL_H_
#undef QCOLL_KERNELS_DECODE_AVX512_INL_H_
#else
#define QCOLL_KERNELS_DECODE_AVX512_INL_H_
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

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// ---- AVX-512: 64 elements per step, four __m512 in a decode-chosen lane order ----------
//
// Decoders and the store are structs whose constructors build their constants once, before
// the step loop, and pass them through Opaque(): the compiler then keeps them in registers
// instead of re-materializing each broadcast in the loop (mov + vpbroadcast: 2 uops, one
// on port 5, per constant per use).

template <class V>
HWY_INLINE V Opaque(V v) {
  asm("" : "+v"(v));
  return v;
}
HWY_INLINE __m512i Bytes(int b) { return Opaque(_mm512_set1_epi8(static_cast<char>(b))); }
HWY_INLINE __m512i Words(int w) { return Opaque(_mm512_set1_epi16(static_cast<short>(w))); }
HWY_INLINE __m512i Dwords(uint32_t d) { return Opaque(_mm512_set1_epi32(static_cast<int>(d))); }

// The lane order a decoder leaves a step's 64 values in (the same for every source, so the
// accumulators share it; the store, reduce_avx512-inl.h, puts them back in element order):
//   kNatural  v_r[j] = element 16r + j
//   kEvenOdd  v_0 / v_1 = even / odd elements of 0..31, v_2 / v_3 the same of 32..63 (what
//             reading 64 codes as 32 words gives)
//   kMod4     v_r[j] = element 4j + r (what the byte-table decode gives)
enum class Order { kNatural, kEvenOdd, kMod4 };

// fp16 bits of the even (e) and odd (o) codes of a 64-code block -> EvenOdd fp32 vectors.
HWY_INLINE void CvtEvenOdd(__m512i e, __m512i o, __m512* v) {
  v[0] = _mm512_cvtph_ps(_mm512_castsi512_si256(e));
  v[1] = _mm512_cvtph_ps(_mm512_castsi512_si256(o));
  v[2] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(e, 1));
  v[3] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(o, 1));
}

// A decoder: Decode(p, s0, s1, v) writes the 64 values at p (times any factor it folds into
// the scales s0, s1, which it may change) to v[0..3] in lane order kOrder.
template <DType X, int kTarget = HWY_TARGET>
struct Decoder512;

// INT8: sign-extend, int -> fp32 (Natural).
template <int kTarget>
struct Decoder512<DType::Int8, kTarget> {
  static constexpr Order kOrder = Order::kNatural;
  explicit Decoder512(const Tables&) {}
  HWY_INLINE void Decode(const uint8_t* HWY_RESTRICT p, float&, float&, __m512* v) const {
    for (int r = 0; r < 4; ++r) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * r));
      v[r] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
    }
  }
};

// E5M2: 64 codes read as 32 words; w << 8 and w & 0xFF00 are the fp16 bits of the even and
// odd codes (the code is the upper byte of an fp16); F16C to fp32 (EvenOdd).
template <int kTarget>
struct Decoder512<DType::Float8E5M2, kTarget> {
  static constexpr Order kOrder = Order::kEvenOdd;
  static_assert(kE5ToF16Shift == 8);
  __m512i upper_byte = Words(0xFF00);
  explicit Decoder512(const Tables&) {}
  HWY_INLINE void Decode(const uint8_t* HWY_RESTRICT p, float&, float&, __m512* v) const {
    const __m512i w = _mm512_loadu_si512(p);
    CvtEvenOdd(_mm512_slli_epi16(w, 8), _mm512_and_si512(w, upper_byte), v);
  }
};

#if HWY_TARGET == HWY_AVX3_DL
// E4M3FN / HiFloat8 by the fp32 upper-byte tables: VPERMI2B indexes 128 bytes with bits
// 0-6 of the code (the magnitude); the sign is or-ed in; the (hi, lo) byte pairs become the
// upper words of fp32 lanes by shifts and bit-selects (Mod4 order). Exact: every E4M3FN and
// HiFloat8 value has at most 7 fraction bits, so those two bytes are all of its fp32 bits;
// the E4M3FN NaN comes from the table, the HiFloat8 NaN code 0x80 (magnitude 0) is set here.
template <DType X>
struct Top16Decoder {
  static constexpr Order kOrder = Order::kMod4;
  __m512i hi0, hi1, lo0, lo1;
  __m512i sign = Bytes(0x80), low_byte = Words(0x00FF), high_word = Dwords(0xFFFF0000u);
  __m512i nan_hi = Bytes(0x7F), nan_lo = Bytes(0xC0);  // HiF8: the quiet NaN 0x7FC0
  explicit Top16Decoder(const Tables& t)
      : hi0(_mm512_load_si512(t.dec->top_hi)),
        hi1(_mm512_load_si512(t.dec->top_hi + 64)),
        lo0(_mm512_load_si512(t.dec->top_lo)),
        lo1(_mm512_load_si512(t.dec->top_lo + 64)) {}
  HWY_INLINE void Decode(const uint8_t* HWY_RESTRICT p, float&, float&, __m512* v) const {
    const __m512i code = _mm512_loadu_si512(p);
    __m512i hi = _mm512_permutex2var_epi8(hi0, code, hi1);
    __m512i lo = _mm512_permutex2var_epi8(lo0, code, lo1);
    hi = _mm512_ternarylogic_epi32(hi, code, sign, 0xF8);  // hi | (code & 0x80)
    if constexpr (X == DType::HiFloat8) {
      // H8::kNaNCode (magnitude 0) gave -0: the quiet NaN instead.
      const __mmask64 nan = _mm512_cmpeq_epi8_mask(code, sign);
      hi = _mm512_mask_mov_epi8(hi, nan, nan_hi);
      lo = _mm512_mask_mov_epi8(lo, nan, nan_lo);
    }
    // Words (hi << 8 | lo) of the even and odd codes: bit-select (0xD8: c ? b : a) by 0x00FF.
    const __m512i we = _mm512_ternarylogic_epi32(_mm512_slli_epi16(hi, 8), lo, low_byte, 0xD8);
    const __m512i wo = _mm512_ternarylogic_epi32(hi, _mm512_srli_epi16(lo, 8), low_byte, 0xD8);
    // Dword j of we holds the words of codes 4j and 4j+2; of wo, 4j+1 and 4j+3.
    v[0] = _mm512_castsi512_ps(_mm512_slli_epi32(we, 16));
    v[1] = _mm512_castsi512_ps(_mm512_slli_epi32(wo, 16));
    v[2] = _mm512_castsi512_ps(_mm512_and_si512(we, high_word));
    v[3] = _mm512_castsi512_ps(_mm512_and_si512(wo, high_word));
  }
};
template <>
struct Decoder512<DType::Float8E4M3FN, HWY_AVX3_DL> : Top16Decoder<DType::Float8E4M3FN> {
  using Top16Decoder::Top16Decoder;
};
template <>
struct Decoder512<DType::HiFloat8, HWY_AVX3_DL> : Top16Decoder<DType::HiFloat8> {
  using Top16Decoder::Top16Decoder;
};
#else
// E4M3FN (AVX3): fp16 bits of value / 2^8 by shifts (s.eeee.mmm -> s.0eeee.mmm0000000,
// subnormal codes included), F16C; the 2^8 folded into the scales when scale * 2^8 is exact
// and the block has no NaN code, else value / 2^8 times 2^8 (exact) with the NaN lanes set.
template <>
struct Decoder512<DType::Float8E4M3FN, HWY_AVX3> {
  static constexpr Order kOrder = Order::kEvenOdd;
  __m512i mask = Words(kE4Fp16Mask), one = Bytes(1), abs = Bytes(E4::kAbsMask);
  explicit Decoder512(const Tables&) {}
  HWY_INLINE void Div256(__m512i w, __m512* v) const {
    const __m512i e = _mm512_and_si512(_mm512_srai_epi16(_mm512_slli_epi16(w, 8), 8 - kE4ToF16Shift), mask);
    const __m512i o = _mm512_and_si512(_mm512_srai_epi16(w, 8 - kE4ToF16Shift), mask);
    CvtEvenOdd(e, o, v);
  }
  HWY_INLINE void Decode(const uint8_t* HWY_RESTRICT p, float& s0, float& s1, __m512* v) const {
    const __m512i w = _mm512_loadu_si512(p);
    const float f0 = s0 * kE4Fp16Factor, f1 = s1 * kE4Fp16Factor;
    const bool exact = (std::isfinite(f0) || !std::isfinite(s0)) && (std::isfinite(f1) || !std::isfinite(s1));
    // A NaN code has every magnitude bit set: (code + 1) & abs == 0.
    const bool nan = _mm512_testn_epi8_mask(_mm512_add_epi8(w, one), abs) != 0;
    Div256(w, v);
    if (HWY_LIKELY(exact && !nan)) {
      s0 = f0;
      s1 = f1;
      return;
    }
    const __m512 k256 = _mm512_set1_ps(kE4Fp16Factor);
    const __m512 qnan = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(kCanonicalNanF32)));
    const __m512i nan_lo = _mm512_set1_epi16(E4::kNaNCode);
    const __m512i nan_hi = _mm512_set1_epi16(static_cast<short>(E4::kNaNCode << 8));
    const __mmask32 ne = _mm512_cmpeq_epi16_mask(_mm512_and_si512(w, nan_lo), nan_lo);
    const __mmask32 no = _mm512_cmpeq_epi16_mask(_mm512_and_si512(w, nan_hi), nan_hi);
    const __mmask16 lanes[4] = {static_cast<__mmask16>(ne), static_cast<__mmask16>(no),
                                static_cast<__mmask16>(ne >> 16), static_cast<__mmask16>(no >> 16)};
    for (int r = 0; r < 4; ++r) v[r] = _mm512_mask_mov_ps(_mm512_mul_ps(v[r], k256), lanes[r], qnan);
  }
};

// HiFloat8 (AVX3): fp16 bits from the 128-entry word table; index bits 0-5 pick within a
// 64-entry half, bit 6 the half (masked VPERMI2W: lanes outside the mask keep the index, so
// the second permute reads the untouched indices of the first's unselected lanes); sign
// or-ed in; -0 (only from the NaN code) becomes NaN; F16C (EvenOdd).
template <>
struct Decoder512<DType::HiFloat8, HWY_AVX3> {
  static constexpr Order kOrder = Order::kEvenOdd;
  __m512i t0, t1, t2, t3;
  __m512i bit6_lo = Words(0x0040), bit6_hi = Words(0x4000), sign = Words(0x8000);
  __m512i nan16 = Words(kCanonicalNanF16);
  explicit Decoder512(const Tables& t)
      : t0(_mm512_load_si512(t.dec->fp16)),
        t1(_mm512_load_si512(t.dec->fp16 + 32)),
        t2(_mm512_load_si512(t.dec->fp16 + 64)),
        t3(_mm512_load_si512(t.dec->fp16 + 96)) {}
  HWY_INLINE __m512i Words16(__m512i idx, __mmask32 upper) const {
    const __m512i h = _mm512_mask2_permutex2var_epi16(t2, idx, upper, t3);
    return _mm512_mask2_permutex2var_epi16(t0, h, static_cast<__mmask32>(~upper), t1);
  }
  HWY_INLINE void Decode(const uint8_t* HWY_RESTRICT p, float&, float&, __m512* v) const {
    const __m512i w = _mm512_loadu_si512(p);
    __m512i e = Words16(w, _mm512_test_epi16_mask(w, bit6_lo));
    __m512i o = Words16(_mm512_srli_epi16(w, 8), _mm512_test_epi16_mask(w, bit6_hi));
    e = _mm512_ternarylogic_epi32(e, _mm512_slli_epi16(w, 8), sign, 0xF8);  // e | (code << 8 & sign)
    o = _mm512_ternarylogic_epi32(o, w, sign, 0xF8);
    e = _mm512_mask_mov_epi16(e, _mm512_cmpeq_epi16_mask(e, sign), nan16);
    o = _mm512_mask_mov_epi16(o, _mm512_cmpeq_epi16_mask(o, sign), nan16);
    CvtEvenOdd(e, o, v);
  }
};
#endif

// The packed 4-bit dtypes: 32 bytes = 64 codes. Byte j holds elements 2j (bits 0-3) and
// 2j+1 (bits 4-7): the zero-extended bytes index the even elements, the same shifted right
// by 4 the odd ones (EvenOdd); VPERMPS reads index bits 0-3 only, so the 16-entry exact
// fp32 table (sign included) is one register and no mask is needed.
template <DType X>
struct Fp4Decoder512 {
  static constexpr Order kOrder = Order::kEvenOdd;
  __m512 table;
  explicit Fp4Decoder512(const Tables& t) : table(_mm512_loadu_ps(t.x)) {}
  HWY_INLINE void Decode(const uint8_t* HWY_RESTRICT p, float&, float&, __m512* v) const {
    for (int h = 0; h < 2; ++h) {
      const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * h)));
      v[2 * h] = _mm512_permutexvar_ps(b, table);
      v[2 * h + 1] = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), table);
    }
  }
};
template <int kTarget>
struct Decoder512<DType::Float4E2M1, kTarget> : Fp4Decoder512<DType::Float4E2M1> {
  using Fp4Decoder512::Fp4Decoder512;
};
template <int kTarget>
struct Decoder512<DType::Float4E1M2, kTarget> : Fp4Decoder512<DType::Float4E1M2> {
  using Fp4Decoder512::Fp4Decoder512;
};

#endif  // AVX3 / AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard (per target)
