// AVX-512 dequant_reduce loop and store (targets AVX3_DL and AVX3; nothing on any other
// target): 64 elements per step, every source decoded by its Decoder512 (decode_avx512-inl.h)
// into four __m512 in the decoder's lane order, multiplied by the step's scales and summed
// in source order; the store maps NaN to the canonical NaN, restores element order and casts.
// Included by dequant_reduce_simd.cpp the Highway way.

#if defined(QCOLL_KERNELS_REDUCE_AVX512_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QCOLL_KERNELS_REDUCE_AVX512_INL_H_
#undef QCOLL_KERNELS_REDUCE_AVX512_INL_H_
#else
#define QCOLL_KERNELS_REDUCE_AVX512_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/decode_avx512-inl.h"
#include "kernels/dequant_reduce.hpp"
#include "kernels/output_cast.hpp"

HWY_BEFORE_NAMESPACE();
namespace qcoll::kernels {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// ---- AVX-512: 64 elements per step, four __m512 in the decoder's lane order -------------

// Dword indices interleaving lanes 0-7 (Lo) or 8-15 (Hi) of two sources a, b (b = +16).
HWY_INLINE __m512i InterleaveLo32() {
  return _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
}
HWY_INLINE __m512i InterleaveHi32() {
  return _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
}

// v (in order O) -> the four vectors of elements 0-15, 16-31, 32-47, 48-63.
template <Order O>
HWY_INLINE void ToNatural(__m512* v) {
  if constexpr (O == Order::kEvenOdd) {
    const __m512i lo = InterleaveLo32(), hi = InterleaveHi32();
    const __m512 n0 = _mm512_permutex2var_ps(v[0], lo, v[1]);
    const __m512 n1 = _mm512_permutex2var_ps(v[0], hi, v[1]);
    const __m512 n2 = _mm512_permutex2var_ps(v[2], lo, v[3]);
    const __m512 n3 = _mm512_permutex2var_ps(v[2], hi, v[3]);
    v[0] = n0, v[1] = n1, v[2] = n2, v[3] = n3;
  } else if constexpr (O == Order::kMod4) {
    const __m512i lo = InterleaveLo32(), hi = InterleaveHi32();
    const __m512i qlo = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
    const __m512i qhi = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    const __m512d a_lo = _mm512_castps_pd(_mm512_permutex2var_ps(v[0], lo, v[1]));  // 4j, 4j+1
    const __m512d b_lo = _mm512_castps_pd(_mm512_permutex2var_ps(v[2], lo, v[3]));  // 4j+2, 4j+3
    const __m512d a_hi = _mm512_castps_pd(_mm512_permutex2var_ps(v[0], hi, v[1]));
    const __m512d b_hi = _mm512_castps_pd(_mm512_permutex2var_ps(v[2], hi, v[3]));
    v[0] = _mm512_castpd_ps(_mm512_permutex2var_pd(a_lo, qlo, b_lo));
    v[1] = _mm512_castpd_ps(_mm512_permutex2var_pd(a_lo, qhi, b_lo));
    v[2] = _mm512_castpd_ps(_mm512_permutex2var_pd(a_hi, qlo, b_hi));
    v[3] = _mm512_castpd_ps(_mm512_permutex2var_pd(a_hi, qhi, b_hi));
  }
}

// Store of one step: NaN -> canonical NaN and -0 -> +0 in one VFIXUPIMMPS (DAZ off:
// subnormals classify as values): QNaN/SNaN tokens answer "destination" (the canonical
// NaN), ZERO answers +0, every other class the source. The +0 is what lets the sum start at
// source 0 rather than at 0 + source 0: (0 + d_0) + d_1 ... and d_0 + d_1 ... differ only in
// the sign of a zero result, and the former is never -0. Then bf16 by integer
// round-to-nearest-even (bits + 0x7FFF + odd) and packing, fp16 by VCVTPS2PH.
template <DType OUT, Order O>
struct Store512 {
  __m512 canon = _mm512_castsi512_ps(Dwords(kCanonicalNanF32));
  __m512i table = Dwords(0x11111800u), one = Dwords(1), half = Dwords(0x7FFF);
  __m512i high_word = Dwords(0xFFFF0000u);
  Store512() {}  // user-provided: an implicit one would be compiled without the target's ISA

  HWY_INLINE __m512i RoundBF16(__m512 v) const {
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), one);
    return _mm512_add_epi32(_mm512_add_epi32(bits, half), odd);
  }
  // (hi & 0xFFFF0000) | (lo >> 16): upper words of lo in the lower halves, of hi in the upper.
  HWY_INLINE __m512i UpperWords(__m512i lo, __m512i hi) const {
    return _mm512_ternarylogic_epi32(hi, _mm512_srli_epi32(lo, 16), high_word, 0xEC);
  }
  HWY_INLINE void operator()(__m512* v, void* HWY_RESTRICT out, std::size_t i) const {
    for (int r = 0; r < 4; ++r) v[r] = _mm512_fixupimm_ps(canon, v[r], table, 0);
    if constexpr (OUT == DType::BFloat16) {
      uint16_t* o = static_cast<uint16_t*>(out) + i;
      const __m512i r0 = RoundBF16(v[0]), r1 = RoundBF16(v[1]);
      const __m512i r2 = RoundBF16(v[2]), r3 = RoundBF16(v[3]);
      __m512i lo, hi;
      if constexpr (O == Order::kNatural) {
        // Upper words of r0 then of r1 (word 2j+1 of each dword j).
        const __m512i odd_words = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31,
                                                   29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
        lo = _mm512_permutex2var_epi16(r0, odd_words, r1);
        hi = _mm512_permutex2var_epi16(r2, odd_words, r3);
      } else if constexpr (O == Order::kEvenOdd) {
        lo = UpperWords(r0, r1);
        hi = UpperWords(r2, r3);
      } else {
        const __m512i d01 = UpperWords(r0, r1), d23 = UpperWords(r2, r3);  // (4j, 4j+1), (4j+2, 4j+3)
        lo = _mm512_permutex2var_epi32(d01, InterleaveLo32(), d23);
        hi = _mm512_permutex2var_epi32(d01, InterleaveHi32(), d23);
      }
      _mm512_storeu_si512(o, lo);
      _mm512_storeu_si512(o + 32, hi);
    } else {
      ToNatural<O>(v);
      if constexpr (OUT == DType::Float) {
        float* o = static_cast<float*>(out) + i;
        for (int r = 0; r < 4; ++r) _mm512_storeu_ps(o + 16 * r, v[r]);
      } else {
        uint16_t* o = static_cast<uint16_t*>(out) + i;
        for (int r = 0; r < 4; ++r) {
          const __m256i h = _mm512_cvtps_ph(v[r], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 16 * r), h);
        }
      }
    }
  }
};

// The scale of each vector of a 64-element step (MX: elements 0-31 use group 2q, 32-63
// group 2q+1; in Mod4 order each vector holds both halves).
template <Order O, bool kMX>
HWY_INLINE void StepScales(float s0, float s1, __m512* sv) {
  if constexpr (!kMX) {
    (void)s1;
    sv[0] = sv[1] = sv[2] = sv[3] = _mm512_set1_ps(s0);
  } else if constexpr (O == Order::kMod4) {
    sv[0] = _mm512_mask_broadcastss_ps(_mm512_set1_ps(s0), 0xFF00, _mm_set_ss(s1));
    sv[1] = sv[2] = sv[3] = sv[0];
  } else {
    sv[0] = sv[1] = _mm512_set1_ps(s0);
    sv[2] = sv[3] = _mm512_set1_ps(s1);
  }
}

// Elements [0, end) (end a multiple of 64) of sources 0..n-1.
template <DType X, DType OUT, int kN, bool kMX>
HWY_NOINLINE void Reduce512(const ReduceArgs& a, const Tables& t, std::size_t end) {
  const Decoder512<X> dec(t);
  constexpr Order O = Decoder512<X>::kOrder;
  const Store512<OUT, O> store;
  const std::size_t n = kN > 0 ? static_cast<std::size_t>(kN) : static_cast<std::size_t>(a.nsrc);
  const uint8_t* const* HWY_RESTRICT x = a.x;
  const uint8_t* const* HWY_RESTRICT sc = a.scales;
  const bool prefetch = n >= kPrefetchSources;
  for (std::size_t i = 0; i < end; i += 64) {
    __m512 acc[4];  // from source 0 on (see Store512 for the 0 + d_0)
    for (std::size_t k = 0; k < n; ++k) {
      if (prefetch) PrefetchCodes<X>(x[k], i);
      float s0, s1;
      if constexpr (kMX) {
        s0 = t.e8m0[sc[k][i / 32]];
        s1 = t.e8m0[sc[k][i / 32 + 1]];
      } else {
        std::memcpy(&s0, sc[k] + 4 * (i / 128), 4);
        s1 = s0;
      }
      __m512 d[4];
      dec.Decode(XAt<X>(x[k], i), s0, s1, d);
      __m512 sv[4];
      StepScales<O, kMX>(s0, s1, sv);
      for (int r = 0; r < 4; ++r) {
        const __m512 term = _mm512_mul_ps(d[r], sv[r]);
        acc[r] = k == 0 ? term : _mm512_add_ps(acc[r], term);
      }
    }
    store(acc, a.out, i);
  }
}

template <DType X, DType OUT, bool kMX>
void Reduce512Sources(const ReduceArgs& a, const Tables& t, std::size_t end) {
  switch (a.nsrc) {
    case 1:
      return Reduce512<X, OUT, 1, kMX>(a, t, end);
    case 2:
      return Reduce512<X, OUT, 2, kMX>(a, t, end);
    case 4:
      return Reduce512<X, OUT, 4, kMX>(a, t, end);
    case 8:
      return Reduce512<X, OUT, 8, kMX>(a, t, end);
    default:
      return Reduce512<X, OUT, 0, kMX>(a, t, end);
  }
}
#endif  // AVX3 / AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard (per target)
