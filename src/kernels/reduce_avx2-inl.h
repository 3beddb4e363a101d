// AVX2 dequant_reduce loop and store (target AVX2 only): 32 elements (one MX group) per
// step, every source decoded by its Decoder256 (decode_avx2-inl.h) into four __m256,
// multiplied by the group's scale and summed in source order; the store maps NaN sums to the
// canonical NaN (one test per step, blends on the rare path), restores element order and
// casts (bf16 by integer round-to-nearest-even, fp16 by F16C). Included by
// dequant_reduce_simd.cpp the Highway way.

#if defined(QCOLL_KERNELS_REDUCE_AVX2_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QCOLL_KERNELS_REDUCE_AVX2_INL_H_
#undef QCOLL_KERNELS_REDUCE_AVX2_INL_H_
#else
#define QCOLL_KERNELS_REDUCE_AVX2_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/decode_avx2-inl.h"
#include "kernels/dequant_reduce.hpp"
#include "kernels/output_cast.hpp"

HWY_BEFORE_NAMESPACE();
namespace qcoll::kernels {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX2
// ---- AVX2: 32 elements (one MX group) per step, four __m256 ------------------------------

// bf16 round to nearest even in the upper 16 bits.
HWY_INLINE __m256i RoundBF16x8(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  return _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7FFF)), odd);
}

template <DType OUT, bool kEO>
HWY_INLINE void Store256(__m256* v, void* HWY_RESTRICT out, std::size_t i) {
  // NaN sums (rare): canonical NaN.
  const __m256 n01 = _mm256_or_ps(_mm256_cmp_ps(v[0], v[0], _CMP_UNORD_Q), _mm256_cmp_ps(v[1], v[1], _CMP_UNORD_Q));
  const __m256 n23 = _mm256_or_ps(_mm256_cmp_ps(v[2], v[2], _CMP_UNORD_Q), _mm256_cmp_ps(v[3], v[3], _CMP_UNORD_Q));
  if (HWY_UNLIKELY(_mm256_movemask_ps(_mm256_or_ps(n01, n23)) != 0)) {
    const __m256 canon = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kCanonicalNanF32)));
    for (int r = 0; r < 4; ++r) v[r] = _mm256_blendv_ps(v[r], canon, _mm256_cmp_ps(v[r], v[r], _CMP_UNORD_Q));
  }
  if constexpr (OUT == DType::BFloat16) {
    __m256i* o = reinterpret_cast<__m256i*>(static_cast<uint16_t*>(out) + i);
    const __m256i r0 = RoundBF16x8(v[0]), r1 = RoundBF16x8(v[1]);
    const __m256i r2 = RoundBF16x8(v[2]), r3 = RoundBF16x8(v[3]);
    if constexpr (kEO) {
      // Word 2j = upper word of r0[j] (even element), 2j+1 = upper word of r1[j].
      _mm256_storeu_si256(o, _mm256_blend_epi16(_mm256_srli_epi32(r0, 16), r1, 0xAA));
      _mm256_storeu_si256(o + 1, _mm256_blend_epi16(_mm256_srli_epi32(r2, 16), r3, 0xAA));
    } else {
      const __m256i p01 = _mm256_packus_epi32(_mm256_srli_epi32(r0, 16), _mm256_srli_epi32(r1, 16));
      const __m256i p23 = _mm256_packus_epi32(_mm256_srli_epi32(r2, 16), _mm256_srli_epi32(r3, 16));
      _mm256_storeu_si256(o, _mm256_permute4x64_epi64(p01, 0xD8));
      _mm256_storeu_si256(o + 1, _mm256_permute4x64_epi64(p23, 0xD8));
    }
  } else {
    if constexpr (kEO) {
      for (int q = 0; q < 4; q += 2) {
        const __m256 lo = _mm256_unpacklo_ps(v[q], v[q + 1]);  // elements 0-3 | 8-11 of the half
        const __m256 hi = _mm256_unpackhi_ps(v[q], v[q + 1]);  // 4-7 | 12-15
        v[q] = _mm256_permute2f128_ps(lo, hi, 0x20);
        v[q + 1] = _mm256_permute2f128_ps(lo, hi, 0x31);
      }
    }
    if constexpr (OUT == DType::Float) {
      float* o = static_cast<float*>(out) + i;
      for (int r = 0; r < 4; ++r) _mm256_storeu_ps(o + 8 * r, v[r]);
    } else {
      uint16_t* o = static_cast<uint16_t*>(out) + i;
      for (int r = 0; r < 4; ++r) {
        const __m128i h = _mm256_cvtps_ph(v[r], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 8 * r), h);
      }
    }
  }
}

// Elements [0, a.count) (a multiple of 32) of sources 0..n-1.
template <DType X, DType OUT, int kN, bool kMX>
HWY_NOINLINE void Reduce256(const ReduceArgs& a, const Tables& t) {
  const Decoder256<X> dec(t);
  const std::size_t n = kN > 0 ? static_cast<std::size_t>(kN) : static_cast<std::size_t>(a.nsrc);
  const uint8_t* const* HWY_RESTRICT x = a.x;
  const uint8_t* const* HWY_RESTRICT sc = a.scales;
  const bool prefetch = n >= kPrefetchSources;
  for (std::size_t i = 0; i < a.count; i += 32) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    const bool fetch = prefetch && i % 64 == 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (fetch) PrefetchCodes<X>(x[k], i);
      float s;
      if constexpr (kMX) {
        s = t.e8m0[sc[k][i / 32]];
      } else {
        std::memcpy(&s, sc[k] + 4 * (i / 128), 4);
      }
      __m256 d[4];
      dec.Decode(XAt<X>(x[k], i), s, d);
      const __m256 sv = _mm256_set1_ps(s);
      for (int r = 0; r < 4; ++r) acc[r] = _mm256_add_ps(acc[r], _mm256_mul_ps(d[r], sv));
    }
    Store256<OUT, Decoder256<X>::kEvenOdd>(acc, a.out, i);
  }
}

template <DType X, DType OUT, bool kMX>
void Reduce256Sources(const ReduceArgs& a, const Tables& t) {
  switch (a.nsrc) {
    case 1:
      return Reduce256<X, OUT, 1, kMX>(a, t);
    case 2:
      return Reduce256<X, OUT, 2, kMX>(a, t);
    case 4:
      return Reduce256<X, OUT, 4, kMX>(a, t);
    case 8:
      return Reduce256<X, OUT, 8, kMX>(a, t);
    default:
      return Reduce256<X, OUT, 0, kMX>(a, t);
  }
}
#endif  // AVX2

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard (per target)
