// Highway runtime dispatch of the SIMD quantizers (quantize-inl.h): one copy of the
// quantizers per instruction set Highway compiles in, the best one this CPU runs is used.
// HWY_SCALAR (and vectors that do not divide the MX block) run the reference.
#include <string>
#include <vector>

#include "core/float_env.hpp"
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
    case DType::Int8: return QuantizeRows<In, DType::Int8>(job);
    case DType::Float8E4M3FN: return QuantizeRows<In, DType::Float8E4M3FN>(job);
    case DType::Float8E5M2: return QuantizeRows<In, DType::Float8E5M2>(job);
    default: return QuantizeRows<In, DType::HiFloat8>(job);
  }
}

// Arguments already checked by the caller.
void QuantizeSimd(const detail::QuantJob& job) {
#if HWY_TARGET == HWY_SCALAR
  detail::quantize_scalar(job);
#else
  const hn::ScalableTag<float> df;
  if (hn::Lanes(df) > contract::kMxGroup || contract::kMxGroup % hn::Lanes(df) != 0) {
    detail::quantize_scalar(job);  // only possible with very wide or odd SVE/RVV vectors
    return;
  }
  switch (job.in_dtype) {
    case DType::BFloat16: return QuantizeInput<DType::BFloat16>(job);
    case DType::Float16: return QuantizeInput<DType::Float16>(job);
    default: return QuantizeInput<DType::Float>(job);
  }
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace qcoll::quant
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qcoll::quant {

HWY_EXPORT(QuantizeSimd);

namespace {

// The SIMD targets compiled here that this CPU supports, best first.
std::vector<int64_t> usable_targets() {
  std::vector<int64_t> out;
  for (int64_t t = hwy::SupportedTargets() & HWY_TARGETS; t != 0; t &= t - 1) {
    out.push_back(t & ~(t - 1));  // lowest bit first = best target first
  }
  return out;
}

}  // namespace

const char* quantize_target() {
  if (settings::kernel() == settings::Kernel::Scalar) return "scalar";
  const std::vector<int64_t> t = usable_targets();
  return t.empty() ? "scalar" : hwy::TargetName(t.front());
}

namespace detail {

void quantize_simd(const QuantJob& job) {
  const core::KeepSubnormals keep_subnormals;
  HWY_DYNAMIC_DISPATCH(QuantizeSimd)(job);
}

std::vector<std::string> quantize_simd_targets() {
  std::vector<std::string> names;
  for (int64_t t : usable_targets()) names.emplace_back(hwy::TargetName(t));
  return names;
}

bool quantize_on_target(std::string_view target, const QuantJob& job) {
  for (int64_t t : usable_targets()) {
    if (target != hwy::TargetName(t)) continue;
    // The dispatch table holds one entry per target at the index ChosenTarget would
    // compute for a CPU whose best target is t (see hwy/targets.h).
    const int64_t mask = (HWY_CHOSEN_TARGET_SHIFT(t) | HWY_CHOSEN_TARGET_MASK_SCALAR) &
                         HWY_CHOSEN_TARGET_MASK_TARGETS;
    const std::size_t index = hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(mask));
    const core::KeepSubnormals keep_subnormals;
    HWY_DISPATCH_TABLE(QuantizeSimd)[index](job);
    return true;
  }
  return false;
}

}  // namespace detail
}  // namespace qcoll::quant
#endif  // HWY_ONCE
