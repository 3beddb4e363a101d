// Portable per-format decodes of the dequant_reduce kernels (Highway, every target). Include
// it the Highway way (below HWY_TARGET_INCLUDE and foreach_target.h); it defines, per target,
// in qcoll::kernels::HWY_NAMESPACE:
//
//   DF, VF                          the fp32 tag and vector every kernel file uses
//   Tables                          the exact decode tables of one call
//   Decode<X>(df, p, table)         N codes of x dtype X -> N exact fp32 values, in order
//                                   (4-bit X: N packed codes, N / 2 bytes at p)
//   kFp4<X>, XAt<X>(p, i)           whether X is a packed 4-bit dtype; the byte of element i
//   DecodeE4M3Div256(df, p)         F16C targets: N E4M3FN codes -> value / 2^8
//   DecodeHiF8x4(df, p, f, l, sink) F16C targets: 4N HiFloat8 codes without a gather
//   QCOLL_HW_F16                    1 where the target has F16C (undefined again by the
//                                   dispatch file, dequant_reduce_simd.cpp, after its last use)
//
// A new 4-bit format needs nothing here beyond kFp4 (DecodeFp4 looks its 16 values up in
// the exact fp32 table). A new 8-bit format adds its Decode branch here, and one decoder per SIMD family in
// decode_avx512-inl.h and decode_avx2-inl.h (docs/architecture.md, "What a new format
// touches"). Every decode is exact, and every decoded value is an fp32 normal or zero, so no
// multiply sees a subnormal operand unless the scale itself is subnormal (x86 multiplies with
// a subnormal input take a microcode assist of ~100 cycles; results stay exact).

#if defined(QCOLL_KERNELS_DECODE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QCOLL_KERNELS_DECODE_INL_H_
#undef QCOLL_KERNELS_DECODE_INL_H_
#else
#define QCOLL_KERNELS_DECODE_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "formats/traits.hpp"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/decode_tables.hpp"
#include "kernels/output_cast.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/formats.hpp"

HWY_BEFORE_NAMESPACE();
namespace qcoll::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// x86 AVX2 and AVX-512 targets include F16C (exact fp16 <-> fp32, round to nearest even).
#undef QCOLL_HW_F16
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
[[maybe_unused]] constexpr uint16_t kE4Fp16Mask =
    static_cast<uint16_t>(F16::kSignMask | (E4::kAbsMask << kE4ToF16Shift));
// The E4M3FN NaN is every magnitude bit set (the "(code + 1) & abs == 0" test below).
static_assert(E4::kNaNCode == E4::kAbsMask && !E4::kHasInf);
static_assert(E4::kSignMask == 0x80 && E5::kSignMask == 0x80 && H8::kSignMask == 0x80);
// HiF8's only NaN is the code with magnitude 0 and the sign bit set.
static_assert(H8::kNaNCode == H8::kSignMask);

struct Tables {
  const float* x = nullptr;           // fp32 decode table of the x dtype (4-bit: 16 entries)
  const float* e8m0 = nullptr;        // fp32 decode table of E8M0, or null for fp32 scales
  const DecodeTables* dec = nullptr;  // byte/word tables (E4M3FN, E5M2, HiFloat8)
};

// ---- Decodes of N codes (one fp32 vector), in element order ------------------------------

// The packed 4-bit x dtypes (contract.md §ext-fp4-layout): element i in byte i / 2, even i
// in bits 0-3. XAt is where the codes of element i start (i even for the 4-bit ones: every
// caller steps by whole vectors of an even number of lanes).
template <DType X>
constexpr bool kFp4 = X == DType::Float4E2M1 || X == DType::Float4E1M2;
template <DType X>
HWY_INLINE const uint8_t* XAt(const uint8_t* p, std::size_t i) {
  return p + (kFp4<X> ? i / 2 : i);
}

// More sources than the hardware prefetchers follow streams: the loops that walk all n
// sources at once prefetch each source's codes kPrefetchAhead elements ahead, once per 64
// elements (a cache line of 8-bit codes), when n >= kPrefetchSources. Measured with
// bench_kernels' many/ rows (5 MB of codes per call, from memory) on AMD EPYC, AVX2: kg_int8
// n = 16 0.92-1.26 -> 0.60-0.63 ms, n = 64 1.23-1.42 -> 0.69-0.90 ms, n = 256 1.76-2.04 ->
// 1.42-1.52 ms, mx_e2m1 n = 64 and 256 1.4x faster; n = 8 does not prefetch (no gain
// there). The AVX-512 loop does the same, not measured (that CPU had no AVX-512). Only a
// hint: no arithmetic changes, and the address is never dereferenced (it may lie past the
// source's end: computed as an integer).
constexpr std::size_t kPrefetchSources = 9;
constexpr std::size_t kPrefetchAhead = 512;
template <DType X>
HWY_INLINE void PrefetchCodes(const uint8_t* p, std::size_t i) {
  const std::uintptr_t at =
      reinterpret_cast<std::uintptr_t>(p) + (kFp4<X> ? (i + kPrefetchAhead) / 2 : i + kPrefetchAhead);
  hwy::Prefetch(reinterpret_cast<const uint8_t*>(at));
}

// 4-bit: N codes from the N / 2 bytes at p. Each byte b becomes the u16 (b & 0x0F) |
// ((b & 0xF0) << 4), whose two bytes (little-endian lanes) are its even and odd code: the
// codes in element order, one a byte. Then the 16-entry exact fp32 table (sign included):
// one lane permute where a vector holds the 16 entries (AVX-512), two and a select where it
// holds 8 (AVX2), a gather elsewhere.
HWY_INLINE VF DecodeFp4(DF df, const uint8_t* HWY_RESTRICT p, const float* HWY_RESTRICT table) {
#if HWY_TARGET == HWY_SCALAR
  (void)p;
  return hn::Set(df, table[0]);  // never called: DequantReduceSimd sends HWY_SCALAR to the reference
#else
  const hn::Half<DF> dh;
  const hn::Rebind<uint8_t, decltype(dh)> du8h;   // N / 2 bytes
  const hn::Rebind<uint16_t, decltype(dh)> du16;  // N / 2 u16 = N bytes
  const hn::Rebind<uint8_t, DF> du8;              // N codes
  const hn::Rebind<int32_t, DF> di32;
  const auto w = hn::PromoteTo(du16, hn::LoadU(du8h, p));
  const auto pair = hn::Or(hn::And(w, hn::Set(du16, 0x000F)), hn::ShiftLeft<4>(hn::And(w, hn::Set(du16, 0x00F0))));
  const auto idx = hn::PromoteTo(di32, hn::BitCast(du8, pair));
  const std::size_t N = hn::Lanes(df);
  if (N == 16) return hn::TableLookupLanes(hn::LoadU(df, table), hn::IndicesFromVec(df, idx));
  if (N == 8) {
    const auto low3 = hn::IndicesFromVec(df, hn::And(idx, hn::Set(di32, 7)));
    const VF lo = hn::TableLookupLanes(hn::LoadU(df, table), low3);
    const VF hi = hn::TableLookupLanes(hn::LoadU(df, table + 8), low3);
    return hn::IfThenElse(hn::RebindMask(df, hn::Gt(idx, hn::Set(di32, 7))), hi, lo);
  }
  return hn::GatherIndex(df, table, idx);
#endif
}

// INT8: sign-extend to i32, convert to f32.
HWY_INLINE VF DecodeInt8(DF df, const uint8_t* HWY_RESTRICT p) {
  const hn::Rebind<int32_t, DF> di32;
  const hn::Rebind<int8_t, DF> di8;
  const auto* ps = reinterpret_cast<const int8_t*>(p);
  return hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, ps)));
}

// A sign-magnitude minifloat T (E4M3FN, E5M2) without F16C, in the integer domain: normal
// codes rebias the exponent (+ T::kF32Rebias << 23: E4M3FN +120, E5M2 +112); subnormal codes
// (exponent 0) are m * T::kMinSubnormal (2^-9, 2^-16) from an integer conversion (no fp32
// subnormal operands); the sign is or-ed in. Special codes: with Inf (E5M2) the codes above
// T::kMaxCode become Inf or NaN, signed (NaN stays NaN with the sign bit set); without
// (E4M3FN) the NaN codes become the canonical NaN.
template <class T>
HWY_INLINE VF DecodeMinifloat(DF df, const uint8_t* HWY_RESTRICT p) {
  const hn::Rebind<uint8_t, DF> du8;
  const hn::Rebind<uint32_t, DF> du32;
  const hn::Rebind<int32_t, DF> di32;
  const VF nan = hn::BitCast(df, hn::Set(du32, kCanonicalNanF32));
  const auto b = hn::PromoteTo(du32, hn::LoadU(du8, p));
  constexpr int kShift = F32::kMantissaBits - T::kMantissaBits;
  const auto mag = hn::And(b, hn::Set(du32, T::kAbsMask));
  const auto sign = hn::ShiftLeft<24>(hn::And(b, hn::Set(du32, T::kSignMask)));
  const auto normal = hn::Add(hn::ShiftLeft<kShift>(mag), hn::Set(du32, uint32_t{T::kF32Rebias} << F32::kMantissaBits));
  const VF sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di32, mag)), hn::Set(df, T::kMinSubnormal));
  const auto is_sub = hn::RebindMask(df, hn::Lt(hn::BitCast(di32, mag), hn::Set(di32, 1 << T::kMantissaBits)));
  VF v = hn::IfThenElse(is_sub, sub, hn::BitCast(df, normal));
  if constexpr (T::kHasInf) {
    const VF inf = hn::BitCast(df, hn::Set(du32, F32::kInfCode));
    const auto is_special = hn::RebindMask(df, hn::Gt(hn::BitCast(di32, mag), hn::Set(di32, T::kMaxCode)));
    const auto is_inf = hn::RebindMask(df, hn::Eq(mag, hn::Set(du32, T::kInfCode)));
    v = hn::IfThenElse(is_special, hn::IfThenElse(is_inf, inf, nan), v);
    return hn::Or(v, hn::BitCast(df, sign));
  } else {
    v = hn::Or(v, hn::BitCast(df, sign));
    const auto is_nan = hn::RebindMask(df, hn::Eq(mag, hn::Set(du32, T::kNaNCode)));
    return hn::IfThenElse(is_nan, nan, v);
  }
}

// E4M3FN (the targets without F16C, and the blocks the folded decode of the F16C targets
// cannot take: see DecodeE4M3Div256).
HWY_INLINE VF DecodeE4M3(DF df, const uint8_t* HWY_RESTRICT p) { return DecodeMinifloat<E4>(df, p); }

// E5M2: on F16C targets the code is the top byte of an fp16; elsewhere DecodeMinifloat.
HWY_INLINE VF DecodeE5M2(DF df, const uint8_t* HWY_RESTRICT p) {
#if QCOLL_HW_F16
  const hn::Rebind<uint8_t, DF> du8;
  const hn::Rebind<uint16_t, DF> du16;
  const hn::Rebind<hwy::float16_t, DF> df16;
  const auto h = hn::ShiftLeft<kE5ToF16Shift>(hn::PromoteTo(du16, hn::LoadU(du8, p)));
  return hn::PromoteTo(df, hn::BitCast(df16, h));
#else
  return DecodeMinifloat<E5>(df, p);
#endif
}

// Any other 8-bit code (HiFloat8 where DecodeHiF8x4 does not apply): a gather from the
// exact fp32 table.
HWY_INLINE VF DecodeByTable(DF df, const uint8_t* HWY_RESTRICT p, const float* HWY_RESTRICT table) {
  const hn::Rebind<uint8_t, DF> du8;
  const hn::Rebind<uint32_t, DF> du32;
  const hn::Rebind<int32_t, DF> di32;
  const auto idx = hn::BitCast(di32, hn::PromoteTo(du32, hn::LoadU(du8, p)));
  return hn::GatherIndex(df, table, idx);
}

// The decode of x dtype X; `table` is the exact fp32 table of X (used by the gather).
template <DType X>
HWY_INLINE VF Decode(DF df, const uint8_t* HWY_RESTRICT p, const float* HWY_RESTRICT table) {
  if constexpr (X == DType::Int8) {
    return DecodeInt8(df, p);
  } else if constexpr (X == DType::Float8E4M3FN) {
    return DecodeE4M3(df, p);
  } else if constexpr (X == DType::Float8E5M2) {
    return DecodeE5M2(df, p);
  } else if constexpr (kFp4<X>) {
    return DecodeFp4(df, p, table);
  } else {  // HiFloat8 (and any other 8-bit code): exact table
    return DecodeByTable(df, p, table);
  }
}

// ---- F16C targets (x86 AVX2, AVX-512): decodes through fp16 -----------------------------

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
  const auto h = hn::And(hn::ShiftRight<8 - kE4ToF16Shift>(hi), hn::Set(di16, static_cast<int16_t>(kE4Fp16Mask)));
  return hn::PromoteTo(df, hn::BitCast(df16, h));
}
#endif

#if QCOLL_HW_F16
// HiFloat8 -> fp16 without a gather, for 4N codes at once. Every HiF8 value is exact in
// fp16. For v = code & 0x7F, the fp16 bits are (F[v] << 7) | L[v] with two byte tables
// (DecodeTables::fp16_f, fp16_l); the sign is bit 7 of the code; code 0x80 is NaN. F (128 entries) is
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
  widen(hn::LowerHalf(d8h, f), hn::LowerHalf(d8h, l), hn::LowerHalf(d8h, sign), hn::LowerHalf(d8h, nanv));
  widen(hn::UpperHalf(d8h, f), hn::UpperHalf(d8h, l), hn::UpperHalf(d8h, sign), hn::UpperHalf(d8h, nanv));
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::kernels
HWY_AFTER_NAMESPACE();

#endif  // include guard (per target)
