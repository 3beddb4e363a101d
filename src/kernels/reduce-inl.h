// Portable dequant_reduce loops (Highway, every target): the output store and the group loop
// over the decodes of decode-inl.h. Included by dequant_reduce_simd.cpp the Highway way. The
// AVX-512 and AVX2 loops (reduce_avx512-inl.h, reduce_avx2-inl.h) replace these on their
// targets, except for the AVX-512 MX tail (a last odd group of 32, one vector at a time).
//
// Per output vector: acc = 0; for each source k in order: acc = Add(acc, Mul(decode(x_k),
// scale_k)); then cast and store. Mul and Add stay separate (never MulAdd), so every lane
// computes exactly what dequant_reduce_scalar computes. The sources are streamed together
// (n + 1 streams), so the accumulators never leave registers; 4 vectors per step inside a
// group where 4 vectors fit in one (else 1).

#if defined(QCOLL_KERNELS_REDUCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QCOLL_KERNELS_REDUCE_INL_H_
#undef QCOLL_KERNELS_REDUCE_INL_H_
#else
#define QCOLL_KERNELS_REDUCE_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/decode-inl.h"
#include "kernels/dequant_reduce.hpp"
#include "kernels/output_cast.hpp"

HWY_BEFORE_NAMESPACE();
namespace qcoll::kernels {
namespace HWY_NAMESPACE {

// Output of one vector at element i: NaN sums become the canonical NaN first (see
// dequant_reduce.hpp); bf16 by integer round-to-nearest-even; fp16 by the hardware
// conversion (x86 F16C) or an integer round-to-nearest-even elsewhere (Highway's emulated
// f32 -> f16 truncates).
template <DType OUT>
HWY_INLINE void Store(DF df, VF acc, void* HWY_RESTRICT out, std::size_t i) {
  const hn::Rebind<uint32_t, DF> du32;
  const hn::Rebind<int32_t, DF> di32;
  const hn::Rebind<uint16_t, DF> du16;
  const auto is_nan = hn::IsNaN(acc);
  if constexpr (OUT == DType::Float) {
    const VF v = hn::IfThenElse(is_nan, hn::BitCast(df, hn::Set(du32, kCanonicalNanF32)), acc);
    hn::StoreU(v, df, static_cast<float*>(out) + i);
  } else if constexpr (OUT == DType::BFloat16) {
    // Round to nearest even on the top 16 bits: add 0x7FFF + (bit 16).
    const auto bits = hn::BitCast(du32, acc);
    const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du32, 1u));
    const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(odd, hn::Set(du32, 0x7FFFu))));
    const auto r = hn::IfThenElse(hn::RebindMask(du32, is_nan), hn::Set(du32, kCanonicalNanBF16), rounded);
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, r)), du16, static_cast<uint16_t*>(out) + i);
  } else {  // Float16
#if QCOLL_HW_F16
    const hn::Rebind<hwy::float16_t, DF> df16;
    const VF v = hn::IfThenElse(is_nan, hn::BitCast(df, hn::Set(du32, kCanonicalNanF32)), acc);
    hn::StoreU(hn::BitCast(du16, hn::DemoteTo(df16, v)), du16, static_cast<uint16_t*>(out) + i);
#else
    // Integer round to nearest even (no FTZ/DAZ assumed, like everything here):
    //  |v| >= 65536: Inf (NaN handled below); |v| < 2^-14: add 0.5 (magic 2^-1 in the
    //  fp16-subnormal scale) so the fp32 adder rounds, then read the low bits;
    //  else rebias the exponent and round the 13 dropped mantissa bits to even.
    const auto bits = hn::BitCast(du32, acc);
    const auto sign = hn::ShiftRight<16>(hn::And(bits, hn::Set(du32, 0x80000000u)));
    const auto a = hn::And(bits, hn::Set(du32, 0x7FFFFFFFu));
    const auto denorm_magic = hn::Set(du32, ((127u - 15u) + (23u - 10u) + 1u) << 23);
    const auto sub =
        hn::Sub(hn::BitCast(du32, hn::Add(hn::BitCast(df, a), hn::BitCast(df, denorm_magic))), denorm_magic);
    const auto odd = hn::And(hn::ShiftRight<13>(a), hn::Set(du32, 1u));
    const auto norm = hn::ShiftRight<13>(hn::Add(hn::Add(a, hn::Set(du32, ((15u - 127u) << 23) + 0xFFFu)), odd));
    const auto big = hn::Gt(hn::BitCast(di32, a), hn::Set(di32, ((127 + 16) << 23) - 1));
    const auto small = hn::Lt(hn::BitCast(di32, a), hn::Set(di32, 113 << 23));
    auto h = hn::IfThenElse(hn::RebindMask(du32, small), sub, norm);
    h = hn::IfThenElse(hn::RebindMask(du32, big), hn::Set(du32, 0x7C00u), h);
    h = hn::Or(h, sign);
    h = hn::IfThenElse(hn::RebindMask(du32, is_nan), hn::Set(du32, kCanonicalNanF16), h);
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, h)), du16, static_cast<uint16_t*>(out) + i);
#endif
  }
}

#if HWY_TARGET != HWY_SCALAR
// Two fp32 vectors -> 2N bf16 (round to nearest even, canonical NaN) in one store: the
// rounded u32 keeps the bf16 bits in its upper half, and ConcatOdd gathers those halves.
HWY_INLINE void StoreBF16Pair(DF df, VF lo, VF hi, void* HWY_RESTRICT out, std::size_t i) {
  const hn::Rebind<uint32_t, DF> du32;
  const hn::Repartition<uint16_t, DF> d16;  // 2N lanes
  auto round = [&](VF v) {
    const auto bits = hn::BitCast(du32, v);
    const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du32, 1u));
    const auto r = hn::Add(bits, hn::Add(odd, hn::Set(du32, 0x7FFFu)));
    return hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), hn::Set(du32, kCanonicalNanF32), r);
  };
  (void)df;
  const auto packed = hn::ConcatOdd(d16, hn::BitCast(d16, round(hi)), hn::BitCast(d16, round(lo)));
  hn::StoreU(packed, d16, static_cast<uint16_t*>(out) + i);
}
#endif

// Whether the 4-vector HiF8 byte-shuffle decode applies (F16C and a block within a group).
template <DType X>
constexpr bool kHiF8Shuffle = X == DType::HiFloat8&& QCOLL_HW_F16;

// Whether E4M3FN uses the fp16 decode with the 2^8 factor folded into the scale.
template <DType X>
constexpr bool kE4M3Folded = X == DType::Float8E4M3FN&& QCOLL_HW_F16;

// The scales of `group` for sources 0..n-1 into scale[0..n); for the folded E4M3FN decode
// also scale[n + k] = scale[k] * 2^8. Returns whether every scale[n + k] is exact.
template <DType X>
HWY_INLINE bool LoadGroupScales(const ReduceArgs& a, const Tables& t, float* HWY_RESTRICT scale, std::size_t n,
                                std::size_t group) {
  for (std::size_t k = 0; k < n; ++k) {
    if (t.e8m0 != nullptr) {
      scale[k] = t.e8m0[a.scales[k][group]];
    } else {
      std::memcpy(&scale[k], a.scales[k] + 4 * group, 4);
    }
  }
  bool folded_ok = true;  // scale[n + k] = scale[k] * 2^8 exactly, for every k
  if constexpr (kE4M3Folded<X>) {
    for (std::size_t k = 0; k < n; ++k) {
      scale[n + k] = scale[k] * kE4Fp16Factor;
      folded_ok = folded_ok && (std::isfinite(scale[n + k]) || !std::isfinite(scale[k]));
    }
  }
  return folded_ok;
}

// One vector at element i: acc = 0; acc = acc + (decode(x_k) * scale_k), k = 0..n-1; store.
template <DType X, DType OUT>
HWY_INLINE void ReduceVector(DF df, const uint8_t* const* HWY_RESTRICT x, const Tables& t,
                             const float* HWY_RESTRICT scale, std::size_t n, void* HWY_RESTRICT out, std::size_t i) {
  VF acc = hn::Zero(df);
  for (std::size_t k = 0; k < n; ++k) {
    const VF d = hn::Mul(Decode<X>(df, XAt<X>(x[k], i), t.x), hn::Set(df, scale[k]));
    acc = hn::Add(acc, d);
  }
  Store<OUT>(df, acc, out, i);
}

// Four accumulators: one step of 4N elements.
struct Acc4 {
  VF v0, v1, v2, v3;
};

// acc += decode(4N codes at p) * s, vector by vector (4-bit X: 2N bytes at p). s256 = s * 2^8 (used by the folded
// E4M3FN decode where `folded_ok`, the group's scales * 2^8 being exact).
template <DType X>
HWY_INLINE void Accumulate4(DF df, const uint8_t* HWY_RESTRICT p, const Tables& t, VF s, float s256, bool folded_ok,
                            Acc4& acc) {
  const std::size_t N = hn::Lanes(df);
  if constexpr (kE4M3Folded<X>) {
#if QCOLL_HW_F16
    // Fast blocks: no NaN code, and scale * 2^8 exact (no overflow): then
    // (code/2^8) * (scale*2^8) rounds the same exact product as code * scale.
    const hn::Repartition<uint8_t, DF> d8;
    const auto mag = hn::And(hn::LoadU(d8, p), hn::Set(d8, E4::kAbsMask));
    if (folded_ok && hn::AllFalse(d8, hn::Eq(mag, hn::Set(d8, E4::kNaNCode)))) {
      const VF sf = hn::Set(df, s256);
      acc.v0 = hn::Add(acc.v0, hn::Mul(DecodeE4M3Div256(df, p), sf));
      acc.v1 = hn::Add(acc.v1, hn::Mul(DecodeE4M3Div256(df, p + N), sf));
      acc.v2 = hn::Add(acc.v2, hn::Mul(DecodeE4M3Div256(df, p + 2 * N), sf));
      acc.v3 = hn::Add(acc.v3, hn::Mul(DecodeE4M3Div256(df, p + 3 * N), sf));
      return;
    }
#endif
  } else if constexpr (kHiF8Shuffle<X>) {
#if QCOLL_HW_F16
    (void)s256, (void)folded_ok;
    int j = 0;
    DecodeHiF8x4(df, p, t.dec->fp16_f, t.dec->fp16_l, [&](VF d) {
      d = hn::Mul(d, s);
      if (j == 0)
        acc.v0 = hn::Add(acc.v0, d);
      else if (j == 1)
        acc.v1 = hn::Add(acc.v1, d);
      else if (j == 2)
        acc.v2 = hn::Add(acc.v2, d);
      else
        acc.v3 = hn::Add(acc.v3, d);
      ++j;
    });
    return;
#endif
  } else {
    (void)s256, (void)folded_ok;
  }
  acc.v0 = hn::Add(acc.v0, hn::Mul(Decode<X>(df, p, t.x), s));
  acc.v1 = hn::Add(acc.v1, hn::Mul(Decode<X>(df, XAt<X>(p, N), t.x), s));
  acc.v2 = hn::Add(acc.v2, hn::Mul(Decode<X>(df, XAt<X>(p, 2 * N), t.x), s));
  acc.v3 = hn::Add(acc.v3, hn::Mul(Decode<X>(df, XAt<X>(p, 3 * N), t.x), s));
}

// The four vectors of a step at element i (bf16: two vectors per store).
template <DType OUT>
HWY_INLINE void Store4(DF df, const Acc4& acc, void* HWY_RESTRICT out, std::size_t i) {
  const std::size_t N = hn::Lanes(df);
#if HWY_TARGET != HWY_SCALAR
  if constexpr (OUT == DType::BFloat16) {
    StoreBF16Pair(df, acc.v0, acc.v1, out, i);
    StoreBF16Pair(df, acc.v2, acc.v3, out, i + 2 * N);
    return;
  }
#endif
  Store<OUT>(df, acc.v0, out, i);
  Store<OUT>(df, acc.v1, out, i + N);
  Store<OUT>(df, acc.v2, out, i + 2 * N);
  Store<OUT>(df, acc.v3, out, i + 3 * N);
}

// Groups [group_begin, group_end) of sources 0..n-1 (n = kN if kN > 0, else a.nsrc), kV
// vectors per step (1 or 4; with 4 a step stays inside one group); x advances by XAt (half
// the elements for the packed 4-bit dtypes). Per lane: acc = 0;
// acc = acc + (decode * scale), k = 0..n-1.
template <DType X, DType OUT, int kN, int kV>
HWY_NOINLINE void ReduceTyped(const ReduceArgs& a, const Tables& t, float* HWY_RESTRICT scale, std::size_t group_begin,
                              std::size_t group_end) {
  const DF df;
  const std::size_t N = hn::Lanes(df);
  const std::size_t g = group_size(a.scales_dtype);
  const std::size_t n = kN > 0 ? static_cast<std::size_t>(kN) : static_cast<std::size_t>(a.nsrc);
  const uint8_t* const* HWY_RESTRICT x = a.x;
  void* HWY_RESTRICT const out = a.out;
  for (std::size_t group = group_begin; group < group_end; ++group) {
    const bool folded_ok = LoadGroupScales<X>(a, t, scale, n, group);
    const std::size_t end = (group + 1) * g;
    for (std::size_t i = group * g; i < end; i += kV * N) {
      if (n >= kPrefetchSources && i % 64 == 0)
        for (std::size_t k = 0; k < n; ++k) PrefetchCodes<X>(x[k], i);
      if constexpr (kV == 1) {
        ReduceVector<X, OUT>(df, x, t, scale, n, out, i);
      } else {
        Acc4 acc{hn::Zero(df), hn::Zero(df), hn::Zero(df), hn::Zero(df)};
        for (std::size_t k = 0; k < n; ++k) {
          const float s256 = kE4M3Folded<X> ? scale[n + k] : 0.0f;
          Accumulate4<X>(df, XAt<X>(x[k], i), t, hn::Set(df, scale[k]), s256, folded_ok, acc);
        }
        Store4<OUT>(df, acc, out, i);
      }
    }
  }
}

template <DType X, DType OUT, int kV>
void ReduceSources(const ReduceArgs& a, const Tables& t, float* scale, std::size_t g0, std::size_t g1) {
  switch (a.nsrc) {
    case 1:
      return ReduceTyped<X, OUT, 1, kV>(a, t, scale, g0, g1);
    case 2:
      return ReduceTyped<X, OUT, 2, kV>(a, t, scale, g0, g1);
    case 4:
      return ReduceTyped<X, OUT, 4, kV>(a, t, scale, g0, g1);
    case 8:
      return ReduceTyped<X, OUT, 8, kV>(a, t, scale, g0, g1);
    default:
      return ReduceTyped<X, OUT, 0, kV>(a, t, scale, g0, g1);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard (per target)
