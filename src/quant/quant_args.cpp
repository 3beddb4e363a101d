// Argument checks shared by every quantizer and dequantizer entry point.
#include <string>

#include "formats/traits.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/quant.hpp"

namespace qcoll::quant {

std::size_t scale_group_size(DType scales_dtype) { return contract::scale_group(scales_dtype); }

Status check_quantize_args(const void* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                           const void* q, const void* scales, float hif8_target, int threads) {
  if (x == nullptr) return Status::Error(StatusCode::ParamNullptr, "x: must not be null");
  if (q == nullptr) return Status::Error(StatusCode::ParamNullptr, "q: must not be null");
  if (scales == nullptr) return Status::Error(StatusCode::ParamNullptr, "scales: must not be null");
  (void)rows;  // any row count is fine (0 writes nothing)
  Status st = contract::check_quant_call(x_dtype, scales_dtype, H, hif8_target);
  if (!st.ok()) return st;
  if (threads < 0 || threads > kMaxQuantThreads)
    return Status::Error(StatusCode::ParamInvalid, "threads: must be 0 (auto) or in [1, " +
                                                       std::to_string(kMaxQuantThreads) + "], got " +
                                                       std::to_string(threads));
  return Status::Ok();
}

// The HiF8 target's upper bound is the largest finite HiF8 value.
static_assert(contract::kHif8TargetMax == formats::Traits<DType::HiFloat8>::kMaxFinite);

}  // namespace qcoll::quant
