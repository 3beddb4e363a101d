// Highway SIMD dequant_reduce with runtime dispatch (one copy of this file's target code
// per instruction set that Highway compiles in; the best one the CPU supports is used).
//
// Per output vector: acc = 0; for each source k in order: acc = Add(acc, Mul(decode(x_k),
// scale_k)); then cast and store. Mul and Add stay separate (never MulAdd), so every
// lane computes exactly what dequant_reduce_scalar computes. The sources are streamed
// together (n + 1 streams), so the accumulators never leave registers.
//
// AVX-512 (AVX3_DL, AVX3): steps of 64 elements, four fp32 vectors per step. A decode may
// leave the 64 values in one of three lane orders (the same for every source, so the
// accumulators share it); the store puts them back in element order:
//   Natural  v_r[j] = element 16r + j
//   EvenOdd  v_0 / v_1 = even / odd elements of 0..31, v_2 / v_3 the same of 32..63
//   Mod4     v_r[j] = element 4j + r
// Decodes (all exact; the byte and word tables come from formats::decode_table):
//   INT8       sign-extend, int -> fp32 (Natural).
//   E5M2       one 64-byte load read as 32 words: w << 8 and w & 0xFF00 are the fp16 bits
//              of the even and odd codes; F16C to fp32 (EvenOdd).
//   E4M3FN     AVX3_DL: two 128-entry byte permutes (VPERMI2B) give the two upper bytes of
//              the fp32 bits of |value| (every value has <= 7 fraction bits), the sign is
//              or-ed in, and shifts/bit-selects place them (Mod4); NaN comes from the table.
//              AVX3: fp16 bits of value/2^8 by shifts (s.eeee.mmm -> s.0eeee.mmm0000000,
//              subnormal codes included), with the 2^8 folded into the scale when
//              scale*2^8 is exact and the block has no NaN code; otherwise the same value
//              times 2^8 (exact) with the NaN lanes set, times the scale (EvenOdd).
//   HIFLOAT8   AVX3_DL: as E4M3FN, and the NaN code 0x80 (magnitude 0) set (Mod4).
//              AVX3: fp16 bits from a 128-entry word table by two masked VPERMI2W (the
//              table halves chosen by bit 6), sign or-ed in, -0 (code 0x80) -> NaN; F16C
//              (EvenOdd).
// Output: NaN sums become the canonical NaN by VFIXUPIMMPS (one instruction); bf16 by
// integer round-to-nearest-even (bits + 0x7FFF + odd), packed two vectors per store;
// fp16 by F16C (round to nearest even).
//
// Other targets (AVX2, SSE4, SSSE3, EMU128/SCALAR), in element order, 4 vectors per step
// inside a group (else 1):
//   INT8     sign-extend to i32, convert to f32.
//   E4M3FN   F16C targets: code -> fp16 bits of value/2^8 -> f32, with the 2^8 folded into
//            the group's scale when scale*2^8 is exact and the block has no NaN code
//            (else the general decode below). Other targets: fp32 bits with the exponent
//            rebiased by +120 in the integer domain, subnormal codes as int -> f32 times
//            2^-9 (no fp32 subnormal operands), NaN codes fixed.
//   E5M2     F16C targets: the code is the top byte of an fp16. Others: as E4M3FN with
//            +112 and 2^-16, Inf/NaN codes fixed.
//   HIFLOAT8 F16C targets: fp16 bits from the 128-entry byte table fp16_f looked up with
//            byte shuffles (DecodeHiF8x4); elsewhere a gather from the exact fp32 table.
// Output: bf16 by integer round-to-nearest-even; fp16 by the hardware conversion (x86
// F16C) or an integer round-to-nearest-even elsewhere. NaN sums become the canonical NaN
// first (see dequant_reduce.hpp).
//
// Every decoded value is an fp32 normal or zero, so no multiply sees a subnormal operand
// unless the scale itself is subnormal (x86 multiplies with a subnormal input take a
// microcode assist of ~100 cycles; results stay exact).

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/dequant_reduce.hpp"
#include "core/float_env.hpp"
#include "core/simd_targets.hpp"
#include "kernels/decode_tables.hpp"
#include "formats/traits.hpp"
#include "kernels/output_cast.hpp"
#include "qcoll/formats.hpp"
#include "qcoll/settings.hpp"

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

// Decode constants, from formats/traits.hpp.
using E4 = formats::Traits<DType::Float8E4M3FN>;
using E5 = formats::Traits<DType::Float8E5M2>;
using H8 = formats::Traits<DType::HiFloat8>;
using F16 = formats::Traits<DType::Float16>;
using F32 = formats::Traits<DType::Float>;
// E5M2 is the upper byte of an fp16 (same exponent field and bias).
static_assert(E5::kExponentBits == F16::kExponentBits && E5::kExponentBias == F16::kExponentBias);
[[maybe_unused]] constexpr int kE5ToF16Shift = F16::kBits - E5::kBits;
// E4M3FN magnitude bits placed under fp16's exponent field: the fp16 then holds value /
// 2^kE4Fp16Fold (subnormal codes included: both subnormal ranges scale alike).
constexpr int kE4ToF16Shift = F16::kMantissaBits - E4::kMantissaBits;
constexpr int kE4Fp16Fold = F16::kExponentBias - E4::kExponentBias;
constexpr float kE4Fp16Factor = formats::exp2i(kE4Fp16Fold);
[[maybe_unused]] constexpr uint16_t kE4Fp16Mask = static_cast<uint16_t>(F16::kSignMask | (E4::kAbsMask << kE4ToF16Shift));
// The E4M3FN NaN is every magnitude bit set (the "(code + 1) & abs == 0" test below).
static_assert(E4::kNaNCode == E4::kAbsMask && !E4::kHasInf);
static_assert(E4::kSignMask == 0x80 && E5::kSignMask == 0x80 && H8::kSignMask == 0x80);
// HiF8's only NaN is the code with magnitude 0 and the sign bit set.
static_assert(H8::kNaNCode == H8::kSignMask);

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
    constexpr int kShift = F32::kMantissaBits - E4::kMantissaBits;
    const auto mag = hn::And(b, hn::Set(du32, E4::kAbsMask));
    const auto sign = hn::ShiftLeft<24>(hn::And(b, hn::Set(du32, E4::kSignMask)));
    const auto normal = hn::Add(hn::ShiftLeft<kShift>(mag),
                                hn::Set(du32, uint32_t{E4::kF32Rebias} << F32::kMantissaBits));
    const VF sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di32, mag)), hn::Set(df, E4::kMinSubnormal));
    const auto is_sub = hn::RebindMask(
        df, hn::Lt(hn::BitCast(di32, mag), hn::Set(di32, 1 << E4::kMantissaBits)));
    const VF v = hn::Or(hn::IfThenElse(is_sub, sub, hn::BitCast(df, normal)),
                        hn::BitCast(df, sign));
    const auto is_nan = hn::RebindMask(df, hn::Eq(mag, hn::Set(du32, E4::kNaNCode)));
    return hn::IfThenElse(is_nan, nan, v);
  } else if constexpr (X == DType::Float8E5M2) {
    (void)table;
#if QCOLL_HW_F16
    // The code is the top byte of an fp16.
    const hn::Rebind<uint16_t, DF> du16;
    const hn::Rebind<hwy::float16_t, DF> df16;
    const auto h = hn::ShiftLeft<kE5ToF16Shift>(hn::PromoteTo(du16, hn::LoadU(du8, p)));
    return hn::PromoteTo(df, hn::BitCast(df16, h));
#else
    const auto b = hn::PromoteTo(du32, hn::LoadU(du8, p));
    constexpr int kShift = F32::kMantissaBits - E5::kMantissaBits;
    const auto mag = hn::And(b, hn::Set(du32, E5::kAbsMask));
    const auto sign = hn::ShiftLeft<24>(hn::And(b, hn::Set(du32, E5::kSignMask)));
    const auto normal = hn::Add(hn::ShiftLeft<kShift>(mag),
                                hn::Set(du32, uint32_t{E5::kF32Rebias} << F32::kMantissaBits));
    const VF sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di32, mag)), hn::Set(df, E5::kMinSubnormal));
    const auto is_sub = hn::RebindMask(
        df, hn::Lt(hn::BitCast(di32, mag), hn::Set(di32, 1 << E5::kMantissaBits)));
    const VF inf = hn::BitCast(df, hn::Set(du32, F32::kInfCode));
    const auto is_special =
        hn::RebindMask(df, hn::Gt(hn::BitCast(di32, mag), hn::Set(di32, E5::kMaxCode)));
    const auto is_inf = hn::RebindMask(df, hn::Eq(mag, hn::Set(du32, E5::kInfCode)));
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
  // Arithmetic shift copies the sign into the bits above the exponent; clear them.
  const auto h = hn::And(hn::ShiftRight<8 - kE4ToF16Shift>(hi),
                         hn::Set(di16, static_cast<int16_t>(kE4Fp16Mask)));
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
  const auto v = hn::And(code, hn::Set(d8, H8::kAbsMask));
  const auto k70 = hn::Set(d8, 0x70);
  auto f = hn::Zero(d8);
  for (int h = 0; h < 8; ++h) {
    const auto idx = hn::SaturatedAdd(hn::Xor(v, hn::Set(d8, static_cast<uint8_t>(h << 4))), k70);
    f = hn::Or(f, hn::TableLookupBytesOr0(hn::LoadDup128(d8, f_table + 16 * h), idx));
  }
  const auto l = hn::TableLookupBytesOr0(hn::LoadDup128(d8, l_table), hn::SaturatedAdd(v, k70));
  const auto sign = hn::And(code, hn::Set(d8, H8::kSignMask));
  const auto is_nan = hn::Eq(code, hn::Set(d8, H8::kNaNCode));
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
  const DecodeTables* dec = nullptr;  // byte/word tables (E4M3FN, E5M2, HiFloat8)
};

// Whether the 4-vector HiF8 byte-shuffle decode applies (F16C and a block within a group).
template <DType X>
constexpr bool kHiF8Shuffle = X == DType::HiFloat8 && QCOLL_HW_F16;

// Whether E4M3FN uses the fp16 decode with the 2^8 factor folded into the scale.
template <DType X>
constexpr bool kE4M3Folded = X == DType::Float8E4M3FN && QCOLL_HW_F16;

// Groups [group_begin, group_end) of sources 0..n-1 (n = kN if kN > 0, else a.nsrc), kV
// vectors per step (1 or 4; with 4 a step stays inside one group). Per lane: acc = 0; acc = acc + (decode * scale), k = 0..n-1.
template <DType X, DType OUT, int kN, int kV>
HWY_NOINLINE void ReduceTyped(const ReduceArgs& a, const Tables& t, float* HWY_RESTRICT scale,
                              std::size_t group_begin, std::size_t group_end) {
  const DF df;
  const std::size_t N = hn::Lanes(df);
  const std::size_t g = group_size(a.scales_dtype);
  const std::size_t n = kN > 0 ? static_cast<std::size_t>(kN) : static_cast<std::size_t>(a.nsrc);
  const uint8_t* const* HWY_RESTRICT x = a.x;
  void* HWY_RESTRICT const out = a.out;
  for (std::size_t group = group_begin; group < group_end; ++group) {
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
            const auto mag = hn::And(hn::LoadU(d8, p), hn::Set(d8, E4::kAbsMask));
            if (folded_ok && hn::AllFalse(d8, hn::Eq(mag, hn::Set(d8, E4::kNaNCode)))) {
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
            DecodeHiF8x4(df, p, t.dec->fp16_f, t.dec->fp16_l, [&](VF d) {
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
// odd codes (the code is the upper byte of an fp16).
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
// upper words of fp32 lanes by shifts and bit-selects (Mod4 order).
template <DType X>
struct Top16Decoder {
  static constexpr Order kOrder = Order::kMod4;
  __m512i hi0, hi1, lo0, lo1;
  __m512i sign = Bytes(0x80), low_byte = Words(0x00FF), high_word = Dwords(0xFFFF0000u);
  __m512i nan_hi = Bytes(0x7F), nan_lo = Bytes(0xC0);  // HiF8: the quiet NaN 0x7FC0
  explicit Top16Decoder(const Tables& t)
      : hi0(_mm512_load_si512(t.dec->top_hi)), hi1(_mm512_load_si512(t.dec->top_hi + 64)),
        lo0(_mm512_load_si512(t.dec->top_lo)), lo1(_mm512_load_si512(t.dec->top_lo + 64)) {}
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
      : t0(_mm512_load_si512(t.dec->fp16)), t1(_mm512_load_si512(t.dec->fp16 + 32)),
        t2(_mm512_load_si512(t.dec->fp16 + 64)), t3(_mm512_load_si512(t.dec->fp16 + 96)) {}
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
        const __m512i odd_words = _mm512_set_epi16(
            63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33,
            31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
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
  for (std::size_t i = 0; i < end; i += 64) {
    __m512 acc[4];  // from source 0 on (see Store512 for the 0 + d_0)
    for (std::size_t k = 0; k < n; ++k) {
      float s0, s1;
      if constexpr (kMX) {
        s0 = t.e8m0[sc[k][i / 32]];
        s1 = t.e8m0[sc[k][i / 32 + 1]];
      } else {
        std::memcpy(&s0, sc[k] + 4 * (i / 128), 4);
        s1 = s0;
      }
      __m512 d[4];
      dec.Decode(x[k] + i, s0, s1, d);
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
#endif  // AVX3 / AVX3_DL

#if HWY_TARGET == HWY_AVX2
// ---- AVX2: 32 elements (one MX group) per step, four __m256 ------------------------------
// Orders as on AVX-512, at half width: Natural v_r[j] = element 8r + j; EvenOdd v_0 / v_1 =
// even / odd elements of 0..15, v_2 / v_3 the same of 16..31.

template <DType X>
constexpr bool kEvenOdd256 = X != DType::Int8;

// fp16 bits of the even (e) and odd (o) codes of a 32-code block -> EvenOdd fp32 vectors.
HWY_INLINE void CvtEvenOdd256(__m256i e, __m256i o, __m256* v) {
  v[0] = _mm256_cvtph_ps(_mm256_castsi256_si128(e));
  v[1] = _mm256_cvtph_ps(_mm256_castsi256_si128(o));
  v[2] = _mm256_cvtph_ps(_mm256_extracti128_si256(e, 1));
  v[3] = _mm256_cvtph_ps(_mm256_extracti128_si256(o, 1));
}

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
  const __m256i ne = _mm256_slli_epi16(nan_bytes, 8);                        // even codes' flags, word-wide
  const __m256i no = _mm256_and_si256(nan_bytes, _mm256_set1_epi16(-256));   // odd codes'
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
  const __m256i e = _mm256_or_si256(
      _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi16(f, 7), _mm256_set1_epi16(0x7F80)),
                      _mm256_and_si256(l, _mm256_set1_epi16(0x007F))),
      _mm256_and_si256(_mm256_slli_epi16(code, 8), sign));
  const __m256i o = _mm256_or_si256(
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(f, 1), _mm256_set1_epi16(0x7F80)),
                      _mm256_srli_epi16(l, 8)),
      _mm256_and_si256(code, sign));
  CvtEvenOdd256(e, o, v);
}

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
  constexpr bool kEO = kEvenOdd256<X>;
  const std::size_t n = kN > 0 ? static_cast<std::size_t>(kN) : static_cast<std::size_t>(a.nsrc);
  __m256i fx[8], lt = _mm256_setzero_si256();
  if constexpr (X == DType::HiFloat8) {
    for (int h = 0; h < 8; ++h) {
      fx[h] = _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.dec->fp16_fx + 16 * h)));
    }
    lt = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.dec->fp16_l)));
  }
  const uint8_t* const* HWY_RESTRICT x = a.x;
  const uint8_t* const* HWY_RESTRICT sc = a.scales;
  for (std::size_t i = 0; i < a.count; i += 32) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    for (std::size_t k = 0; k < n; ++k) {
      float s;
      if constexpr (kMX) {
        s = t.e8m0[sc[k][i / 32]];
      } else {
        std::memcpy(&s, sc[k] + 4 * (i / 128), 4);
      }
      const uint8_t* HWY_RESTRICT p = x[k] + i;
      __m256 d[4];
      if constexpr (X == DType::Int8) {
        for (int r = 0; r < 4; ++r) {
          const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * r));
          d[r] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
        }
      } else {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        if constexpr (X == DType::Float8E5M2) {
          static_assert(kE5ToF16Shift == 8);
          CvtEvenOdd256(_mm256_slli_epi16(w, 8), _mm256_and_si256(w, _mm256_set1_epi16(-256)), d);
        } else if constexpr (X == DType::HiFloat8) {
          DecodeHiF8x32(w, fx, lt, d);
        } else {  // E4M3FN: fold 2^8 into the scale where exact
          const float f = s * kE4Fp16Factor;
          if (HWY_LIKELY((std::isfinite(f) || !std::isfinite(s)) && !AnyE4M3NaN256(w))) {
            DecodeE4M3Div256x32(w, d);
            s = f;
          } else {
            DecodeE4M3Exactx32(w, d);
          }
        }
      }
      const __m256 sv = _mm256_set1_ps(s);
      for (int r = 0; r < 4; ++r) acc[r] = _mm256_add_ps(acc[r], _mm256_mul_ps(d[r], sv));
    }
    Store256<OUT, kEO>(acc, a.out, i);
  }
}

template <DType X, DType OUT, bool kMX>
void Reduce256Sources(const ReduceArgs& a, const Tables& t) {
  switch (a.nsrc) {
    case 1: return Reduce256<X, OUT, 1, kMX>(a, t);
    case 2: return Reduce256<X, OUT, 2, kMX>(a, t);
    case 4: return Reduce256<X, OUT, 4, kMX>(a, t);
    case 8: return Reduce256<X, OUT, 8, kMX>(a, t);
    default: return Reduce256<X, OUT, 0, kMX>(a, t);
  }
}
#endif  // AVX2

template <DType X, DType OUT, int kV>
void ReduceSources(const ReduceArgs& a, const Tables& t, float* scale, std::size_t g0,
                   std::size_t g1) {
  switch (a.nsrc) {
    case 1: return ReduceTyped<X, OUT, 1, kV>(a, t, scale, g0, g1);
    case 2: return ReduceTyped<X, OUT, 2, kV>(a, t, scale, g0, g1);
    case 4: return ReduceTyped<X, OUT, 4, kV>(a, t, scale, g0, g1);
    case 8: return ReduceTyped<X, OUT, 8, kV>(a, t, scale, g0, g1);
    default: return ReduceTyped<X, OUT, 0, kV>(a, t, scale, g0, g1);
  }
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
template <DType X, DType OUT, bool kMX>
void Reduce512Sources(const ReduceArgs& a, const Tables& t, std::size_t end) {
  switch (a.nsrc) {
    case 1: return Reduce512<X, OUT, 1, kMX>(a, t, end);
    case 2: return Reduce512<X, OUT, 2, kMX>(a, t, end);
    case 4: return Reduce512<X, OUT, 4, kMX>(a, t, end);
    case 8: return Reduce512<X, OUT, 8, kMX>(a, t, end);
    default: return Reduce512<X, OUT, 0, kMX>(a, t, end);
  }
}
#endif

template <DType X, DType OUT>
void ReduceSteps(const ReduceArgs& a, const Tables& t, float* scale) {
  const DF df;
  const std::size_t g = group_size(a.scales_dtype);
  const std::size_t groups = a.count / g;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // Whole 64-element steps, then (MX only) a last group of 32 one vector at a time.
  const std::size_t end = a.count / 64 * 64;
  if (t.e8m0 != nullptr) {
    Reduce512Sources<X, OUT, true>(a, t, end);
  } else {
    Reduce512Sources<X, OUT, false>(a, t, end);
  }
  if (end < a.count) {
    ReduceSources<X == DType::HiFloat8 ? DType::UInt8 : X, OUT, 1>(a, t, scale, end / g, groups);
  }
  (void)df;
#elif HWY_TARGET == HWY_AVX2
  (void)df, (void)groups, (void)scale;
  if (t.e8m0 != nullptr) {
    Reduce256Sources<X, OUT, true>(a, t);
  } else {
    Reduce256Sources<X, OUT, false>(a, t);
  }
#else
  if (4 * hn::Lanes(df) <= g) {
    ReduceSources<X, OUT, 4>(a, t, scale, 0, groups);
  } else if constexpr (!kHiF8Shuffle<X>) {
    ReduceSources<X, OUT, 1>(a, t, scale, 0, groups);
  } else {
    // One vector per step: HiF8 by gather from the fp32 table (Decode<UInt8> gathers).
    ReduceSources<DType::UInt8, OUT, 1>(a, t, scale, 0, groups);
  }
#endif
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
  if (a.x_dtype != DType::Int8) t.dec = &decode_tables(a.x_dtype);
  float small[32];  // generic path: scales of the current group, then (E4M3FN) times 2^8
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

void throw_if_bad(const ReduceArgs& a) {
  if (std::string err = check_reduce_args(a); !err.empty()) throw std::invalid_argument(err);
}

}  // namespace

void dequant_reduce(const ReduceArgs& a) {
  throw_if_bad(a);
  if (settings::kernel() == settings::Kernel::Scalar) {
    dequant_reduce_scalar(a);
    return;
  }
  const core::KeepSubnormals keep_subnormals;
  HWY_DYNAMIC_DISPATCH(DequantReduceSimd)(a);
}

const char* dequant_reduce_target() {
  if (settings::kernel() == settings::Kernel::Scalar) return "scalar";
  return core::best_simd_target_name();
}

std::vector<std::string> dequant_reduce_simd_targets() {
  return core::usable_simd_target_names();
}

bool dequant_reduce_on_target(std::string_view target, const ReduceArgs& a) {
  const int64_t t = core::usable_simd_target(target);
  if (t == 0) return false;
  throw_if_bad(a);
  const core::KeepSubnormals keep_subnormals;
  HWY_DISPATCH_TABLE(DequantReduceSimd)[core::dispatch_table_index(t)](a);
  return true;
}

}  // namespace qcoll::kernels
#endif  // HWY_ONCE
