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
  // The contract decides the 4-bit x dtypes only: the others never read it (so a bad
  // QCOLL_CONTRACT changes nothing for them).
  settings::Contract c = settings::Contract::Vendor;
  if (is_4bit_format(x_dtype)) {
    if (contract.has_value()) {
      c = *contract;
    } else if (Status st = settings::contract(c); !st.ok()) {
      return st;
    }
  }
  Status st = contract::check_quant_call(x_dtype, scales_dtype, H, hif8_target, c);
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
