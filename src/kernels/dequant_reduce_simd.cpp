// Highway runtime dispatch of the SIMD dequant_reduce: one copy of the kernels per
// instruction set Highway compiles in (HWY_WANT_AVX3_DL: AVX3_DL, AVX3, AVX2, SSE4, SSSE3,
// EMU128 on x86), the best one this CPU runs is used. The kernels are in the -inl.h files
// it includes, per target:
//
//   decode-inl.h          portable per-format decodes (Highway ops, every target; the
//                         packed 4-bit decode DecodeFp4, used on every target)
//   decode_avx512-inl.h   AVX-512 decoders, one per x dtype (AVX3_DL, AVX3)
//   decode_avx2-inl.h     AVX2 decoders, one per x dtype
//   reduce-inl.h          portable store and group loop (SSE4, SSSE3, EMU128, ...; the
//                         AVX-512 MX tail)
//   reduce_avx512-inl.h   AVX-512 step loop and store
//   reduce_avx2-inl.h     AVX2 step loop and store
//
// This file picks the loop for the target (ReduceSteps; ReduceStepsFp4, the portable loop,
// for the 4-bit x dtypes on every target) and instantiates it per x dtype and
// output dtype; the entry points (dequant_reduce.hpp) check the arguments once and dispatch.
// docs/kernels.md has the design and the measurements.

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/float_env.hpp"
#include "core/simd_targets.hpp"
#include "kernels/decode_tables.hpp"
#include "kernels/dequant_reduce.hpp"
#include "qcoll/formats.hpp"
#include "qcoll/settings.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/dequant_reduce_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/decode-inl.h"
#include "kernels/decode_avx2-inl.h"
#include "kernels/decode_avx512-inl.h"
#include "kernels/reduce-inl.h"
#include "kernels/reduce_avx2-inl.h"
#include "kernels/reduce_avx512-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qcoll::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The loop of this target for x dtype X and output OUT: AVX-512 and AVX2 their own step
// loops, every other target the portable group loop (4 vectors per step where 4 fit in a
// group, else 1).
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

// The packed 4-bit x dtypes, on every target: the portable group loop with DecodeFp4 (4
// vectors per step where 4 fit in a group, else 1).
template <DType X, DType OUT>
void ReduceStepsFp4(const ReduceArgs& a, const Tables& t, float* scale) {
  const DF df;
  const std::size_t g = group_size(a.scales_dtype);
  if (4 * hn::Lanes(df) <= g) {
    ReduceSources<X, OUT, 4>(a, t, scale, 0, a.count / g);
  } else {
    ReduceSources<X, OUT, 1>(a, t, scale, 0, a.count / g);
  }
}

template <DType X, DType OUT>
void ReduceLoop(const ReduceArgs& a, const Tables& t, float* scale) {
  if constexpr (kFp4<X>) {
    ReduceStepsFp4<X, OUT>(a, t, scale);
  } else {
    ReduceSteps<X, OUT>(a, t, scale);
  }
}

template <DType X>
void ReduceOut(const ReduceArgs& a, const Tables& t, float* scale) {
  switch (a.out_dtype) {
    case DType::Float:
      return ReduceLoop<X, DType::Float>(a, t, scale);
    case DType::Float16:
      return ReduceLoop<X, DType::Float16>(a, t, scale);
    default:
      return ReduceLoop<X, DType::BFloat16>(a, t, scale);
  }
}

// Arguments already checked by the caller (require_reduce_args).
void DequantReduceSimd(const ReduceArgs& a) {
  const DF df;
  const std::size_t g = group_size(a.scales_dtype);
  if (a.count == 0) return;
  const bool fp4 = is_4bit_format(a.x_dtype);
  if (hn::Lanes(df) > g || g % hn::Lanes(df) != 0 || (fp4 && hn::Lanes(df) < 2)) {
    // Vectors wider than a group (or not dividing it; only possible with very wide or
    // odd-length SVE/RVV vectors), or one lane for a packed 4-bit x (HWY_SCALAR): the
    // reference path gives the same bits.
    detail::dequant_reduce_scalar_valid(a);
    return;
  }
  Tables t;
  t.x = fp4 ? formats::decode_table4(a.x_dtype) : formats::decode_table(a.x_dtype);
  if (a.scales_dtype == DType::Float8E8M0) t.e8m0 = formats::decode_table(DType::Float8E8M0);
  if (a.x_dtype != DType::Int8 && !fp4) t.dec = &decode_tables(a.x_dtype);
  float small[32];  // generic path: scales of the current group, then (E4M3FN) times 2^8
  std::vector<float> big;
  float* scale = small;
  if (a.nsrc > 16) {
    big.resize(2 * static_cast<std::size_t>(a.nsrc));
    scale = big.data();
  }
  switch (a.x_dtype) {
    case DType::Int8:
      return ReduceOut<DType::Int8>(a, t, scale);
    case DType::Float8E4M3FN:
      return ReduceOut<DType::Float8E4M3FN>(a, t, scale);
    case DType::Float8E5M2:
      return ReduceOut<DType::Float8E5M2>(a, t, scale);
    case DType::Float4E2M1:
      return ReduceOut<DType::Float4E2M1>(a, t, scale);
    case DType::Float4E1M2:
      return ReduceOut<DType::Float4E1M2>(a, t, scale);
    default:
      return ReduceOut<DType::HiFloat8>(a, t, scale);
  }
}

#undef QCOLL_HW_F16

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qcoll::kernels {

HWY_EXPORT(DequantReduceSimd);

namespace detail {

void dequant_reduce_valid(const ReduceArgs& a) {
  if (settings::kernel() == settings::Kernel::Scalar) {
    dequant_reduce_scalar_valid(a);
    return;
  }
  const core::KeepSubnormals keep_subnormals;
  HWY_DYNAMIC_DISPATCH(DequantReduceSimd)(a);
}

}  // namespace detail

void dequant_reduce(const ReduceArgs& a) {
  require_reduce_args(a);
  detail::dequant_reduce_valid(a);
}

const char* dequant_reduce_target() {
  if (settings::kernel() == settings::Kernel::Scalar) return "scalar";
  return core::best_simd_target_name();
}

std::vector<std::string> dequant_reduce_simd_targets() { return core::usable_simd_target_names(); }

bool dequant_reduce_on_target(std::string_view target, const ReduceArgs& a) {
  const int64_t t = core::usable_simd_target(target);
  if (t == 0) return false;
  require_reduce_args(a);
  const core::KeepSubnormals keep_subnormals;
  HWY_DISPATCH_TABLE(DequantReduceSimd)[core::dispatch_table_index(t)](a);
  return true;
}

}  // namespace qcoll::kernels
#endif  // HWY_ONCE
