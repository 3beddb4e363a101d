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
//   E4M3FN   fp32 bits (b&0x7F)<<20 | sign<<31, times 2^120 (rebias 7 -> 127; the code's
//            subnormals come out as fp32 subnormals times a power of two: exact);
//            |value| = 480 is the NaN code 0x7F/0xFF.
//   E5M2     the byte is the top half of an fp16; targets with a hardware fp16 -> fp32
//            conversion (x86 F16C) use it, others build fp32 bits (b&0x7F)<<21 | sign<<31
//            times 2^112 and fix the Inf/NaN codes (|value| >= 65536).
//   HIFLOAT8 gather from the exact 256-entry fp32 table (its tapered layout makes the
//            arithmetic decode longer than a gather).
// Output: fp32 as is; bf16 by integer round-to-nearest-even; fp16 by the hardware
// conversion (x86 F16C, round to nearest even) or an integer round-to-nearest-even
// elsewhere. NaN sums become the canonical NaN first (see dequant_reduce.hpp).

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/dequant_reduce.hpp"
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

template <DType X>
HWY_INLINE VF Decode(DF df, const uint8_t* HWY_RESTRICT p, const float* HWY_RESTRICT table) {
  const hn::Rebind<uint8_t, DF> du8;
  const hn::Rebind<uint32_t, DF> du32;
  const hn::Rebind<int32_t, DF> di32;
  if constexpr (X == DType::Int8) {
    (void)table;
    const hn::Rebind<int8_t, DF> di8;
    const auto* ps = reinterpret_cast<const int8_t*>(p);
    return hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, ps)));
  } else if constexpr (X == DType::Float8E4M3FN) {
    (void)table;
    const auto b = hn::PromoteTo(du32, hn::LoadU(du8, p));
    const auto bits = hn::Or(hn::ShiftLeft<20>(hn::And(b, hn::Set(du32, 0x7Fu))),
                             hn::ShiftLeft<24>(hn::And(b, hn::Set(du32, 0x80u))));
    const VF v = hn::Mul(hn::BitCast(df, bits), hn::Set(df, 0x1p120f));
    const VF nan = hn::BitCast(df, hn::Set(du32, kCanonicalNanF32));
    return hn::IfThenElse(hn::Eq(hn::Abs(v), hn::Set(df, 480.0f)), nan, v);
  } else if constexpr (X == DType::Float8E5M2) {
    (void)table;
#if QCOLL_HW_F16
    const hn::Rebind<uint16_t, DF> du16;
    const hn::Rebind<hwy::float16_t, DF> df16;
    const auto h = hn::ShiftLeft<8>(hn::PromoteTo(du16, hn::LoadU(du8, p)));
    return hn::PromoteTo(df, hn::BitCast(df16, h));
#else
    const auto b = hn::PromoteTo(du32, hn::LoadU(du8, p));
    const auto bits = hn::Or(hn::ShiftLeft<21>(hn::And(b, hn::Set(du32, 0x7Fu))),
                             hn::ShiftLeft<24>(hn::And(b, hn::Set(du32, 0x80u))));
    const VF v = hn::Mul(hn::BitCast(df, bits), hn::Set(df, 0x1p112f));
    const VF mag = hn::Abs(v);
    const VF k65536 = hn::Set(df, 65536.0f);
    const VF inf = hn::CopySign(hn::Set(df, HUGE_VALF), v);
    const VF nan = hn::BitCast(df, hn::Set(du32, kCanonicalNanF32));
    const VF special = hn::IfThenElse(hn::Eq(mag, k65536), inf, nan);
    return hn::IfThenElse(hn::Ge(mag, k65536), special, v);
#endif
  } else {  // HiFloat8 (and any other 8-bit code): exact table
    const auto idx = hn::BitCast(di32, hn::PromoteTo(du32, hn::LoadU(du8, p)));
    return hn::GatherIndex(df, table, idx);
  }
}

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

template <DType X, DType OUT>
HWY_NOINLINE void ReduceTyped(const ReduceArgs& a, const float* HWY_RESTRICT x_table,
                              const float* HWY_RESTRICT e8m0_table, float* HWY_RESTRICT scale) {
  const DF df;
  const std::size_t N = hn::Lanes(df);
  const std::size_t g = group_size(a.scales_dtype);
  const std::size_t n = static_cast<std::size_t>(a.nsrc);
  const uint8_t* const* HWY_RESTRICT x = a.x;
  for (std::size_t group = 0; group < a.count / g; ++group) {
    for (std::size_t k = 0; k < n; ++k) {
      if (e8m0_table != nullptr) {
        scale[k] = e8m0_table[a.scales[k][group]];
      } else {
        std::memcpy(&scale[k], a.scales[k] + 4 * group, 4);
      }
    }
    const std::size_t end = (group + 1) * g;
    for (std::size_t i = group * g; i < end; i += N) {
      VF acc = hn::Zero(df);
      for (std::size_t k = 0; k < n; ++k) {
        const VF d = hn::Mul(Decode<X>(df, x[k] + i, x_table), hn::Set(df, scale[k]));
        acc = hn::Add(acc, d);
      }
      Store<OUT>(df, acc, a.out, i);
    }
  }
}

template <DType X>
void ReduceOut(const ReduceArgs& a, const float* x_table, const float* e8m0_table,
               float* scale) {
  switch (a.out_dtype) {
    case DType::Float: return ReduceTyped<X, DType::Float>(a, x_table, e8m0_table, scale);
    case DType::Float16: return ReduceTyped<X, DType::Float16>(a, x_table, e8m0_table, scale);
    default: return ReduceTyped<X, DType::BFloat16>(a, x_table, e8m0_table, scale);
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
  const float* x_table = formats::decode_table(a.x_dtype);
  const float* e8m0_table =
      a.scales_dtype == DType::Float8E8M0 ? formats::decode_table(DType::Float8E8M0) : nullptr;
  float small[16];
  std::vector<float> big;
  float* scale = small;
  if (a.nsrc > 16) {
    big.resize(static_cast<std::size_t>(a.nsrc));
    scale = big.data();
  }
  switch (a.x_dtype) {
    case DType::Int8: return ReduceOut<DType::Int8>(a, x_table, e8m0_table, scale);
    case DType::Float8E4M3FN: return ReduceOut<DType::Float8E4M3FN>(a, x_table, e8m0_table, scale);
    case DType::Float8E5M2: return ReduceOut<DType::Float8E5M2>(a, x_table, e8m0_table, scale);
    default: return ReduceOut<DType::HiFloat8>(a, x_table, e8m0_table, scale);
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
    HWY_DISPATCH_TABLE(DequantReduceSimd)[index](a);
    return true;
  }
  return false;
}

}  // namespace qcoll::kernels
#endif  // HWY_ONCE
