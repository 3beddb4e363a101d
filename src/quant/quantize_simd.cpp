// Highway runtime dispatch of the SIMD quantizers (quantize-inl.h): one copy of the
// quantizers per instruction set Highway compiles in, the best one this CPU runs is used.
// HWY_SCALAR (and vectors that do not divide the MX block, or too wide for the 4-bit stores)
// run the reference.
#include <string>
#include <vector>

#include "core/float_env.hpp"
#include "core/simd_targets.hpp"
#include "qcoll/quant.hpp"
#include "qcoll/settings.hpp"
#include "quant/quantize_job.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/quantize_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "quant/quantize-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qcoll::quant {
namespace HWY_NAMESPACE {

template <DType In>
void QuantizeInput(const detail::QuantJob& job) {
  switch (job.x_dtype) {
    case DType::Int8:
      return QuantizeRows<In, DType::Int8>(job);
    case DType::Float8E4M3FN:
      return QuantizeRows<In, DType::Float8E4M3FN>(job);
    case DType::Float8E5M2:
      return QuantizeRows<In, DType::Float8E5M2>(job);
    case DType::Float4E2M1:
      return QuantizeRows<In, DType::Float4E2M1>(job);
    case DType::Float4E1M2:
      return QuantizeRows<In, DType::Float4E1M2>(job);
    default:
      return QuantizeRows<In, DType::HiFloat8>(job);
  }
}

// Arguments already checked by the caller.
void QuantizeSimd(const detail::QuantJob& job) {
#if HWY_TARGET == HWY_SCALAR
  detail::quantize_scalar(job);
#else
  const hn::ScalableTag<float> df;
  // The 4-bit formats store eight vectors' codes at once (a KG group of 128 holds them) and
  // pack pairs of vectors (an MX block of 32 holds two).
  const std::size_t vecs = is_4bit_format(job.x_dtype) ? 8 : 1;
  if (hn::Lanes(df) > contract::kMxGroup || contract::kMxGroup % hn::Lanes(df) != 0 ||
      vecs * hn::Lanes(df) > contract::kKgGroup) {
    detail::quantize_scalar(job);  // only possible with very wide or odd SVE/RVV vectors
    return;
  }
  switch (job.in_dtype) {
    case DType::BFloat16:
      return QuantizeInput<DType::BFloat16>(job);
    case DType::Float16:
      return QuantizeInput<DType::Float16>(job);
    default:
      return QuantizeInput<DType::Float>(job);
  }
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::quant
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qcoll::quant {

HWY_EXPORT(QuantizeSimd);

const char* quantize_target() {
  if (settings::kernel() == settings::Kernel::Scalar) return "scalar";
  return core::best_simd_target_name();
}

namespace detail {

void quantize_simd(const QuantJob& job) {
  const core::KeepSubnormals keep_subnormals;
  HWY_DYNAMIC_DISPATCH(QuantizeSimd)(job);
}

std::vector<std::string> quantize_simd_targets() { return core::usable_simd_target_names(); }

bool quantize_on_target(std::string_view target, const QuantJob& job) {
  const int64_t t = core::usable_simd_target(target);
  if (t == 0) return false;
  const core::KeepSubnormals keep_subnormals;
  HWY_DISPATCH_TABLE(QuantizeSimd)[core::dispatch_table_index(t)](job);
  return true;
}

}  // namespace detail
}  // namespace qcoll::quant
#endif  // HWY_ONCE
