// Argument rules shared by every dequant_reduce path.
#include <stdexcept>
#include <string>

#include "kernels/dequant_reduce.hpp"
#include "qcoll/contract.hpp"

namespace qcoll::kernels {

std::size_t group_size(DType scales_dtype) { return contract::scale_group(scales_dtype); }

std::string check_reduce_args(const ReduceArgs& a) {
  using contract::dtype_list;
  using contract::dtype_text;
  // The kernels take every x dtype of either contract (the operators restrict them to the
  // caller's contract); the 4-bit ones packed (dequant_reduce.hpp).
  if (!contract::x_dtype_allowed(a.x_dtype, contract::Contract::Extended))
    return "x_dtype: must be " + dtype_list(contract::kExtendedXDtypes) + ", got " + dtype_text(a.x_dtype);
  if (!contract::is_scales_dtype(a.scales_dtype))
    return "scales_dtype: must be " + dtype_list(contract::kScalesDtypes) + ", got " + dtype_text(a.scales_dtype);
  if (!contract::is_out_dtype(a.out_dtype))
    return "out_dtype: must be " + dtype_list(contract::kOutDtypes) + ", got " + dtype_text(a.out_dtype);
  if (a.nsrc < 1) return "nsrc: must be >= 1, got " + std::to_string(a.nsrc);
  const std::size_t g = group_size(a.scales_dtype);
  if (a.count % g != 0)
    return "count: must be a multiple of the group size " + std::to_string(g) + ", got " + std::to_string(a.count);
  if (a.count == 0) return {};
  if (a.x == nullptr) return "x: must not be null";
  if (a.scales == nullptr) return "scales: must not be null";
  if (a.out == nullptr) return "out: must not be null";
  for (int k = 0; k < a.nsrc; ++k) {
    if (a.x[k] == nullptr) return "x[" + std::to_string(k) + "]: must not be null";
    if (a.scales[k] == nullptr) return "scales[" + std::to_string(k) + "]: must not be null";
  }
  return {};
}

void require_reduce_args(const ReduceArgs& a) {
  if (std::string err = check_reduce_args(a); !err.empty()) throw std::invalid_argument(err);
}

}  // namespace qcoll::kernels
