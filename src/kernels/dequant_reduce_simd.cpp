// Highway SIMD dequant_reduce with runtime dispatch (one copy of this file's target code
// per instruction set that Highway compiles in; the best one the CPU supports is used).
//
// Per output vector: acc = 0; for each source k in order: acc = Add(acc, Mul(decode(x_k),
// scale_k)); then cast and store. Mul and Add stay separate (never MulAdd), so every
// lane computes exactly what dequant_reduce_scalar computes. The sources are streamed
// together (n + 1 streams), so the accumulator never leaves a register.
//
// Decoding (all exact):
//   INT8     sign-extend to i32, convert to f32.
//   E4M3FN   F16C targets: code -> fp16 bits of value/2^8 -> f32, with the 2^8 folded into
//            the group's scale when scale*2^8 is exact and the block has no NaN code
//            (else the general decode below). Other targets: fp32 bits with the exponent
//            rebiased by +120 in the integer domain, subnormal codes as int -> f32 times
//            2^-9 (no fp32 subnormal operands), NaN codes fixed.
//   E5M2     F16C targets: the code is the top byte of an fp16. Others: as E4M3FN with
//            +112 and 2^-16, Inf/NaN codes fixed.
//   HIFLOAT8 every value is exact in fp16: on F16C targets, fp16 bits from a 128-entry
//            byte table looked up with byte shuffles (DecodeHiF8x4); elsewhere a gather
//            from the exact 256-entry fp32 table.
// Output: fp32 as is; bf16 by integer round-to-nearest-even (two vectors per store);
// fp16 by the hardware conversion (x86 F16C, round to nearest even) or an integer
// round-to-nearest-even elsewhere. NaN sums become the canonical NaN first (see
// dequant_reduce.hpp).

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/dequant_reduce.hpp"
#include "core/float_env.hpp"
#include "kernels/hif8_fp16_tables.hpp"
#include "kernels/output_cast.hpp"
#include "qcoll/formats.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/dequant_reduce_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace qcoll::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// x86 AVX2 and AVX-512 targets include F16C (exact fp16 <-> fp32, round to nearest even).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define QCOLL_HW_F16 1
#else
#define QCOLL_HW_F16 0
#endif

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Fixed-pattern decodes of N codes (one fp32 vector). `table` is the exact fp32 table of
// the x dtype (used by the gather).
template <DType X>
HWY_INLINE VF Decode(DF df, const uint8_t* HWY_RESTRICT p, const float* HWY_RESTRICT table) {
  const hn::Rebind<uint8_t, DF> du8;
  const hn::Rebind<uint32_t, DF> du32;
  const hn::Rebind<int32_t, DF> di32;
  const VF nan = hn::BitCast(df, hn::Set(du32, kCanonicalNanF32));
  if constexpr (X == DType::Int8) {
    (void)table;
    const hn::Rebind<int8_t, DF> di8;
    const auto* ps = reinterpret_cast<const int8_t*>(p);
    return hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, ps)));
  } else if constexpr (X == DType::Float8E4M3FN) {
    (void)table;
    // Normal codes: rebias the exponent in the integer domain (+120 << 23). Subnormal
    // codes (exponent 0): m * 2^-9 from an integer conversion (no fp32 subnormal operands).
    const auto b = hn::PromoteTo(du32, hn::LoadU(du8, p));
    const auto mag = hn::And(b, hn::Set(du32, 0x7Fu));
    const auto sign = hn::ShiftLeft<24>(hn::And(b, hn::Set(du32, 0x80u)));
    const auto normal = hn::Add(hn::ShiftLeft<20>(mag), hn::Set(du32, 120u << 23));
    const VF sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di32, mag)), hn::Set(df, 0x1p-9f));
    const auto is_sub = hn::RebindMask(df, hn::Lt(hn::BitCast(di32, mag), hn::Set(di32, 8)));
    const VF v = hn::Or(hn::IfThenElse(is_sub, sub, hn::BitCast(df, normal)),
                        hn::BitCast(df, sign));
    const auto is_nan = hn::RebindMask(df, hn::Eq(mag, hn::Set(du32, 0x7Fu)));
    return hn::IfThenElse(is_nan, nan, v);
  } else if constexpr (X == DType::Float8E5M2) {
    (void)table;
#if QCOLL_HW_F16
    // The code is the top byte of an fp16.
    const hn::Rebind<uint16_t, DF> du16;
    const hn::Rebind<hwy::float16_t, DF> df16;
    const auto h = hn::ShiftLeft<8>(hn::PromoteTo(du16, hn::LoadU(du8, p)));
    return hn::PromoteTo(df, hn::BitCast(df16, h));
#else
    const auto b = hn::PromoteTo(du32, hn::LoadU(du8, p));
    const auto mag = hn::And(b, hn::Set(du32, 0x7Fu));
    const auto sign = hn::ShiftLeft<24>(hn::And(b, hn::Set(du32, 0x80u)));
    const auto normal = hn::Add(hn::ShiftLeft<21>(mag), hn::Set(du32, 112u << 23));
    const VF sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di32, mag)), hn::Set(df, 0x1p-16f));
    const auto is_sub = hn::RebindMask(df, hn::Lt(hn::BitCast(di32, mag), hn::Set(di32, 4)));
    const VF inf = hn::BitCast(df, hn::Set(du32, 0x7F800000u));
    const auto is_special = hn::RebindMask(df, hn::Gt(hn::BitCast(di32, mag), hn::Set(di32, 0x7B)));
    const auto is_inf = hn::RebindMask(df, hn::Eq(mag, hn::Set(du32, 0x7Cu)));
    VF v = hn::IfThenElse(is_sub, sub, hn::BitCast(df, normal));
    v = hn::IfThenElse(is_special, hn::IfThenElse(is_inf, inf, nan), v);
    return hn::Or(v, hn::BitCast(df, sign));  // NaN stays NaN with the sign bit set
#endif
  } else {  // HiFloat8 (and any other 8-bit code): exact table
    (void)nan;
    const auto idx = hn::BitCast(di32, hn::PromoteTo(du32, hn::LoadU(du8, p)));
    return hn::GatherIndex(df, table, idx);
  }
}

#if QCOLL_HW_F16
// E4M3FN code -> value / 2^8 through fp16 (s.eeee.mmm -> s.0eeee.mmm0000000, subnormal
// codes included), exact. The NaN codes give +-1.875: the caller excludes them.
HWY_INLINE VF DecodeE4M3Div256(DF df, const uint8_t* HWY_RESTRICT p) {
  const hn::Rebind<uint8_t, DF> du8;
  const hn::Rebind<uint16_t, DF> du16;
  const hn::Rebind<int16_t, DF> di16;
  const hn::Rebind<hwy::float16_t, DF> df16;
  const auto hi = hn::BitCast(di16, hn::ShiftLeft<8>(hn::PromoteTo(du16, hn::LoadU(du8, p))));
  // Arithmetic shift copies the sign into bit 14; clear it.
  const auto h = hn::And(hn::ShiftRight<1>(hi), hn::Set(di16, static_cast<int16_t>(0xBF80)));
  return hn::PromoteTo(df, hn::BitCast(df16, h));
}
#endif

#if QCOLL_HW_F16
// HiFloat8 -> fp16 without a gather, for 4N codes at once. Every HiF8 value is exact in
// fp16. For v = code & 0x7F, the fp16 bits are (F[v] << 7) | L[v] with two byte tables
// (see HiF8Tables); the sign is bit 7 of the code; code 0x80 is NaN. F (128 entries) is
// looked up 16 entries at a time with byte shuffles: index (v ^ 16h) +sat 0x70 keeps the
// low nibble and has bit 7 set (lookup gives 0) unless v >> 4 == h.
template <class Sink>
HWY_INLINE void DecodeHiF8x4(DF df, const uint8_t* HWY_RESTRICT p, const uint8_t* HWY_RESTRICT f_table,
                             const uint8_t* HWY_RESTRICT l_table, Sink&& sink) {
  const hn::Repartition<uint8_t, DF> d8;    // 4N bytes
  const hn::Half<decltype(d8)> d8h;         // 2N bytes
  const hn::Repartition<uint16_t, DF> d16;  // 2N u16
  const hn::Half<decltype(d16)> d16h;       // N u16
  const hn::Rebind<hwy::float16_t, DF> df16;
  const auto code = hn::LoadU(d8, p);
  const auto v = hn::And(code, hn::Set(d8, 0x7F));
  const auto k70 = hn::Set(d8, 0x70);
  auto f = hn::Zero(d8);
  for (int h = 0; h < 8; ++h) {
    const auto idx = hn::SaturatedAdd(hn::Xor(v, hn::Set(d8, static_cast<uint8_t>(h << 4))), k70);
    f = hn::Or(f, hn::TableLookupBytesOr0(hn::LoadDup128(d8, f_table + 16 * h), idx));
  }
  const auto l = hn::TableLookupBytesOr0(hn::LoadDup128(d8, l_table), hn::SaturatedAdd(v, k70));
  const auto sign = hn::And(code, hn::Set(d8, 0x80));
  const auto is_nan = hn::Eq(code, hn::Set(d8, 0x80));
  auto widen = [&](auto fh, auto lh, auto sh, auto nh) {
    // fp16 bits = sign << 8 | F << 7 | L, or the canonical NaN.
    auto bits = hn::Or(hn::ShiftLeft<7>(hn::PromoteTo(d16, fh)),
                       hn::Or(hn::PromoteTo(d16, lh), hn::ShiftLeft<8>(hn::PromoteTo(d16, sh))));
    const auto nan16 = hn::Set(d16, kCanonicalNanF16);
    bits = hn::IfThenElse(hn::Ne(hn::PromoteTo(d16, nh), hn::Zero(d16)), nan16, bits);
    sink(hn::PromoteTo(df, hn::BitCast(df16, hn::LowerHalf(d16h, bits))));
    sink(hn::PromoteTo(df, hn::BitCast(df16, hn::UpperHalf(d16h, bits))));
  };
  const auto nanv = hn::VecFromMask(d8, is_nan);
  widen(hn::LowerHalf(d8h, f), hn::LowerHalf(d8h, l), hn::LowerHalf(d8h, sign),
        hn::LowerHalf(d8h, nanv));
  widen(hn::UpperHalf(d8h, f), hn::UpperHalf(d8h, l), hn::UpperHalf(d8h, sign),
        hn::UpperHalf(d8h, nanv));
}
#endif

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
    const auto r = hn::IfThenElse(hn::RebindMask(du32, is_nan), hn::Set(du32, kCanonicalNanBF16),
                                  rounded);
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, r)), du16,
               static_cast<uint16_t*>(out) + i);
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
    const auto sub = hn::Sub(
        hn::BitCast(du32, hn::Add(hn::BitCast(df, a), hn::BitCast(df, denorm_magic))),
        denorm_magic);
    const auto odd = hn::And(hn::ShiftRight<13>(a), hn::Set(du32, 1u));
    const auto norm = hn::ShiftRight<13>(
        hn::Add(hn::Add(a, hn::Set(du32, ((15u - 127u) << 23) + 0xFFFu)), odd));
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

struct Tables {
  const float* x = nullptr;     // fp32 decode table of the x dtype
  const float* e8m0 = nullptr;  // fp32 decode table of E8M0, or null for fp32 scales
  const uint8_t* hif8_f = nullptr;
  const uint8_t* hif8_l = nullptr;
};

// Whether the 4-vector HiF8 byte-shuffle decode applies (F16C and a block within a group).
template <DType X>
constexpr bool kHiF8Shuffle = X == DType::HiFloat8 && QCOLL_HW_F16;

// Whether E4M3FN uses the fp16 decode with the 2^8 factor folded into the scale.
template <DType X>
constexpr bool kE4M3Folded = X == DType::Float8E4M3FN && QCOLL_HW_F16;

// Sources 0..n-1 (n = kN if kN > 0, else a.nsrc), kV vectors per step (1 or 4; with 4 a
// step stays inside one group). Per lane: acc = 0; acc = acc + (decode * scale), k = 0..n-1.
template <DType X, DType OUT, int kN, int kV>
HWY_NOINLINE void ReduceTyped(const ReduceArgs& a, const Tables& t, float* HWY_RESTRICT scale) {
  const DF df;
  const std::size_t N = hn::Lanes(df);
  const std::size_t g = group_size(a.scales_dtype);
  const std::size_t n = kN > 0 ? static_cast<std::size_t>(kN) : static_cast<std::size_t>(a.nsrc);
  const uint8_t* const* HWY_RESTRICT x = a.x;
  void* HWY_RESTRICT const out = a.out;
  const std::size_t groups = a.count / g;
  for (std::size_t group = 0; group < groups; ++group) {
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
        scale[n + k] = scale[k] * 256.0f;
        folded_ok = folded_ok && (std::isfinite(scale[n + k]) || !std::isfinite(scale[k]));
      }
    }
    const std::size_t end = (group + 1) * g;
    for (std::size_t i = group * g; i < end; i += kV * N) {
      if constexpr (kV == 1) {
        VF acc = hn::Zero(df);
        for (std::size_t k = 0; k < n; ++k) {
          const VF d = hn::Mul(Decode<X>(df, x[k] + i, t.x), hn::Set(df, scale[k]));
          acc = hn::Add(acc, d);
        }
        Store<OUT>(df, acc, out, i);
      } else {
        VF acc0 = hn::Zero(df), acc1 = hn::Zero(df), acc2 = hn::Zero(df), acc3 = hn::Zero(df);
        for (std::size_t k = 0; k < n; ++k) {
          const VF s = hn::Set(df, scale[k]);
          const uint8_t* p = x[k] + i;
          if constexpr (kE4M3Folded<X>) {
#if QCOLL_HW_F16
            // Fast blocks: no NaN code, and scale * 2^8 exact (no overflow): then
            // (code/2^8) * (scale*2^8) rounds the same exact product as code * scale.
            const hn::Repartition<uint8_t, DF> d8;
            const auto mag = hn::And(hn::LoadU(d8, p), hn::Set(d8, 0x7F));
            if (folded_ok && hn::AllFalse(d8, hn::Eq(mag, hn::Set(d8, 0x7F)))) {
              const VF s256 = hn::Set(df, scale[n + k]);
              acc0 = hn::Add(acc0, hn::Mul(DecodeE4M3Div256(df, p), s256));
              acc1 = hn::Add(acc1, hn::Mul(DecodeE4M3Div256(df, p + N), s256));
              acc2 = hn::Add(acc2, hn::Mul(DecodeE4M3Div256(df, p + 2 * N), s256));
              acc3 = hn::Add(acc3, hn::Mul(DecodeE4M3Div256(df, p + 3 * N), s256));
            } else {
              acc0 = hn::Add(acc0, hn::Mul(Decode<X>(df, p, t.x), s));
              acc1 = hn::Add(acc1, hn::Mul(Decode<X>(df, p + N, t.x), s));
              acc2 = hn::Add(acc2, hn::Mul(Decode<X>(df, p + 2 * N, t.x), s));
              acc3 = hn::Add(acc3, hn::Mul(Decode<X>(df, p + 3 * N, t.x), s));
            }
#endif
          } else if constexpr (kHiF8Shuffle<X>) {
#if QCOLL_HW_F16
            int j = 0;
            DecodeHiF8x4(df, p, t.hif8_f, t.hif8_l, [&](VF d) {
              d = hn::Mul(d, s);
              if (j == 0) acc0 = hn::Add(acc0, d);
              else if (j == 1) acc1 = hn::Add(acc1, d);
              else if (j == 2) acc2 = hn::Add(acc2, d);
              else acc3 = hn::Add(acc3, d);
              ++j;
            });
#endif
          } else {
            acc0 = hn::Add(acc0, hn::Mul(Decode<X>(df, p, t.x), s));
            acc1 = hn::Add(acc1, hn::Mul(Decode<X>(df, p + N, t.x), s));
            acc2 = hn::Add(acc2, hn::Mul(Decode<X>(df, p + 2 * N, t.x), s));
            acc3 = hn::Add(acc3, hn::Mul(Decode<X>(df, p + 3 * N, t.x), s));
          }
        }
#if HWY_TARGET != HWY_SCALAR
        if constexpr (OUT == DType::BFloat16) {
          StoreBF16Pair(df, acc0, acc1, out, i);
          StoreBF16Pair(df, acc2, acc3, out, i + 2 * N);
          continue;
        }
#endif
        Store<OUT>(df, acc0, out, i);
        Store<OUT>(df, acc1, out, i + N);
        Store<OUT>(df, acc2, out, i + 2 * N);
        Store<OUT>(df, acc3, out, i + 3 * N);
      }
    }
  }
}

template <DType X, DType OUT, int kV>
void ReduceSources(const ReduceArgs& a, const Tables& t, float* scale) {
  switch (a.nsrc) {
    case 1: return ReduceTyped<X, OUT, 1, kV>(a, t, scale);
    case 2: return ReduceTyped<X, OUT, 2, kV>(a, t, scale);
    case 4: return ReduceTyped<X, OUT, 4, kV>(a, t, scale);
    case 8: return ReduceTyped<X, OUT, 8, kV>(a, t, scale);
    default: return ReduceTyped<X, OUT, 0, kV>(a, t, scale);
  }
}

template <DType X, DType OUT>
void ReduceSteps(const ReduceArgs& a, const Tables& t, float* scale) {
  const DF df;
  if (4 * hn::Lanes(df) <= group_size(a.scales_dtype)) {
    ReduceSources<X, OUT, 4>(a, t, scale);
  } else if constexpr (!kHiF8Shuffle<X>) {
    ReduceSources<X, OUT, 1>(a, t, scale);
  } else {
    // One vector per step: HiF8 by gather from the fp32 table (Decode<UInt8> gathers).
    ReduceSources<DType::UInt8, OUT, 1>(a, t, scale);
  }
}

template <DType X>
void ReduceOut(const ReduceArgs& a, const Tables& t, float* scale) {
  switch (a.out_dtype) {
    case DType::Float: return ReduceSteps<X, DType::Float>(a, t, scale);
    case DType::Float16: return ReduceSteps<X, DType::Float16>(a, t, scale);
    default: return ReduceSteps<X, DType::BFloat16>(a, t, scale);
  }
}

// Arguments already checked by the caller.
void DequantReduceSimd(const ReduceArgs& a) {
  const DF df;
  const std::size_t g = group_size(a.scales_dtype);
  if (a.count == 0) return;
  if (hn::Lanes(df) > g || g % hn::Lanes(df) != 0) {
    // Vectors wider than a group (or not dividing it; only possible with very wide or
    // odd-length SVE/RVV vectors): the reference path gives the same bits.
    dequant_reduce_scalar(a);
    return;
  }
  Tables t;
  t.x = formats::decode_table(a.x_dtype);
  if (a.scales_dtype == DType::Float8E8M0) t.e8m0 = formats::decode_table(DType::Float8E8M0);
  if (a.x_dtype == DType::HiFloat8) {
    t.hif8_f = hif8_fp16_tables().f;
    t.hif8_l = hif8_fp16_tables().l;
  }
  float small[32];  // scales of the current group, then (E4M3FN) the same times 2^8
  std::vector<float> big;
  float* scale = small;
  if (a.nsrc > 16) {
    big.resize(2 * static_cast<std::size_t>(a.nsrc));
    scale = big.data();
  }
  switch (a.x_dtype) {
    case DType::Int8: return ReduceOut<DType::Int8>(a, t, scale);
    case DType::Float8E4M3FN: return ReduceOut<DType::Float8E4M3FN>(a, t, scale);
    case DType::Float8E5M2: return ReduceOut<DType::Float8E5M2>(a, t, scale);
    default: return ReduceOut<DType::HiFloat8>(a, t, scale);
  }
}

#undef QCOLL_HW_F16

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qcoll::kernels {

HWY_EXPORT(DequantReduceSimd);

namespace {

bool force_scalar() {
  static const bool forced = [] {
    const char* e = std::getenv("QCOLL_KERNEL");
    return e != nullptr && std::string(e) == "scalar";
  }();
  return forced;
}

void throw_if_bad(const ReduceArgs& a) {
  if (std::string err = check_reduce_args(a); !err.empty()) throw std::invalid_argument(err);
}

// The SIMD targets compiled here that this CPU supports, best first.
std::vector<int64_t> usable_targets() {
  std::vector<int64_t> out;
  for (int64_t t = hwy::SupportedTargets() & HWY_TARGETS; t != 0; t &= t - 1) {
    out.push_back(t & ~(t - 1));  // lowest bit first = best target first
  }
  return out;
}

}  // namespace

void dequant_reduce(const ReduceArgs& a) {
  throw_if_bad(a);
  if (force_scalar()) {
    dequant_reduce_scalar(a);
    return;
  }
  const core::KeepSubnormals keep_subnormals;
  HWY_DYNAMIC_DISPATCH(DequantReduceSimd)(a);
}

const char* dequant_reduce_target() {
  if (force_scalar()) return "scalar";
  const std::vector<int64_t> t = usable_targets();
  return t.empty() ? "scalar" : hwy::TargetName(t.front());
}

std::vector<std::string> dequant_reduce_simd_targets() {
  std::vector<std::string> names;
  for (int64_t t : usable_targets()) names.emplace_back(hwy::TargetName(t));
  return names;
}

bool dequant_reduce_on_target(std::string_view target, const ReduceArgs& a) {
  for (int64_t t : usable_targets()) {
    if (target != hwy::TargetName(t)) continue;
    throw_if_bad(a);
    // The dispatch table holds one entry per target at the index ChosenTarget would
    // compute for a CPU whose best target is t (see hwy/targets.h).
    const int64_t mask = (HWY_CHOSEN_TARGET_SHIFT(t) | HWY_CHOSEN_TARGET_MASK_SCALAR) &
                         HWY_CHOSEN_TARGET_MASK_TARGETS;
    const std::size_t index = hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(mask));
    const core::KeepSubnormals keep_subnormals;
    HWY_DISPATCH_TABLE(DequantReduceSimd)[index](a);
    return true;
  }
  return false;
}

}  // namespace qcoll::kernels
#endif  // HWY_ONCE
