// Argument checks shared by every quantizer and dequantizer entry point.
#include <string>

#include "formats/traits.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/quant.hpp"
#include "qcoll/settings.hpp"

namespace qcoll::quant {

std::size_t scale_group_size(DType scales_dtype) { return contract::scale_group(scales_dtype); }

Status check_quantize_args(const void* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                           const void* q, const void* scales, float hif8_target, int threads,
                           std::optional<settings::Contract> contract) {
  if (x == nullptr) return Status::Error(StatusCode::ParamNullptr, "x: must not be null");
  if (q == nullptr) return Status::Error(StatusCode::ParamNullptr, "q: must not be null");
  if (scales == nullptr) return Status::Error(StatusCode::ParamNullptr, "scales: must not be null");
  (void)rows;  // any row count is fine (0 writes nothing)
  // What the vendor contract takes every contract takes (extended only adds x dtypes), so
  // the contract is read only for a call that vendor refuses: to take a 4-bit x dtype, and
  // to word the refusal with the call's dtypes (a bad QCOLL_CONTRACT matters only for a
  // 4-bit x dtype, the only ones it decides).
  Status st = contract::check_quant_call(x_dtype, scales_dtype, H, hif8_target, settings::Contract::Vendor);
  if (!st.ok()) {
    settings::Contract c = contract.value_or(settings::Contract::Vendor);
    if (!contract.has_value()) {
      const Status read = settings::contract(c);
      if (!read.ok() && is_4bit_format(x_dtype)) return read;
    }
    if (c != settings::Contract::Vendor) st = contract::check_quant_call(x_dtype, scales_dtype, H, hif8_target, c);
    if (!st.ok()) return st;
  }
  if (threads < 0 || threads > kMaxQuantThreads)
    return Status::Error(StatusCode::ParamInvalid, "threads: must be 0 (auto) or in [1, " +
                                                       std::to_string(kMaxQuantThreads) + "], got " +
                                                       std::to_string(threads));
  return Status::Ok();
}

// The HiF8 target's upper bound is the largest finite HiF8 value.
static_assert(contract::kHif8TargetMax == formats::Traits<DType::HiFloat8>::kMaxFinite);

}  // namespace qcoll::quant
