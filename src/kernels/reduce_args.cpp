// Argument rules shared by every dequant_reduce path.
#include <string>

#include "kernels/dequant_reduce.hpp"

namespace qcoll::kernels {

std::size_t group_size(DType scales_dtype) {
  switch (scales_dtype) {
    case DType::Float: return 128;
    case DType::Float8E8M0: return 32;
    default: return 0;
  }
}

namespace {

bool is_x_dtype(DType t) {
  return t == DType::Int8 || t == DType::HiFloat8 || t == DType::Float8E4M3FN ||
         t == DType::Float8E5M2;
}

bool is_out_dtype(DType t) {
  return t == DType::Float || t == DType::Float16 || t == DType::BFloat16;
}

std::string dtype_seen(DType t) {
  return std::string(dtype_name(t)) + " (" + std::to_string(static_cast<int32_t>(t)) + ")";
}

}  // namespace

std::string check_reduce_args(const ReduceArgs& a) {
  if (!is_x_dtype(a.x_dtype))
    return "x_dtype: must be int8, hifloat8, float8_e4m3fn or float8_e5m2, got " +
           dtype_seen(a.x_dtype);
  if (group_size(a.scales_dtype) == 0)
    return "scales_dtype: must be float or float8_e8m0, got " + dtype_seen(a.scales_dtype);
  if (!is_out_dtype(a.out_dtype))
    return "out_dtype: must be float, float16 or bfloat16, got " + dtype_seen(a.out_dtype);
  if (a.nsrc < 1) return "nsrc: must be >= 1, got " + std::to_string(a.nsrc);
  const std::size_t g = group_size(a.scales_dtype);
  if (a.count % g != 0)
    return "count: must be a multiple of the group size " + std::to_string(g) + ", got " +
           std::to_string(a.count);
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

}  // namespace qcoll::kernels
