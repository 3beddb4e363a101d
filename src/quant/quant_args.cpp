// Argument checks shared by every quantizer and dequantizer entry point.
#include <cmath>
#include <string>

#include "qcoll/quant.hpp"

namespace qcoll::quant {

std::size_t scale_group_size(DType scales_dtype) {
  switch (scales_dtype) {
    case DType::Float: return 128;
    case DType::Float8E8M0: return 32;
    default: return 0;
  }
}

namespace {

std::string dtype_text(DType t) {
  return std::string(dtype_name(t)) + " (" + std::to_string(static_cast<int32_t>(t)) + ")";
}

Status invalid(std::string msg) { return Status::Error(StatusCode::ParamInvalid, std::move(msg)); }

}  // namespace

Status check_quantize_args(const void* x, std::size_t rows, std::size_t H, DType x_dtype,
                           DType scales_dtype, const void* q, const void* scales,
                           float hif8_target) {
  if (x == nullptr) return Status::Error(StatusCode::ParamNullptr, "x: must not be null");
  if (q == nullptr) return Status::Error(StatusCode::ParamNullptr, "q: must not be null");
  if (scales == nullptr)
    return Status::Error(StatusCode::ParamNullptr, "scales: must not be null");

  if (scales_dtype == DType::Float) {
    if (x_dtype != DType::Int8 && x_dtype != DType::HiFloat8 && x_dtype != DType::Float8E4M3FN &&
        x_dtype != DType::Float8E5M2)
      return invalid("x_dtype: KG (float scales) takes int8, hifloat8, float8_e4m3fn or "
                     "float8_e5m2, got " + dtype_text(x_dtype));
  } else if (scales_dtype == DType::Float8E8M0) {
    if (x_dtype != DType::Float8E4M3FN && x_dtype != DType::Float8E5M2)
      return invalid("x_dtype: MX (float8_e8m0 scales) takes float8_e4m3fn or float8_e5m2, got " +
                     dtype_text(x_dtype));
  } else {
    return invalid("scales_dtype: must be float (KG) or float8_e8m0 (MX), got " +
                   dtype_text(scales_dtype));
  }

  // MX scales have the (rows, H/64, 2) layout, so H is a multiple of 64 there.
  const std::size_t multiple = scales_dtype == DType::Float ? 128 : 64;
  if (H == 0 || H % multiple != 0)
    return invalid("H: must be a positive multiple of " + std::to_string(multiple) + " for " +
                   (scales_dtype == DType::Float ? "KG" : "MX") + " quantization, got " +
                   std::to_string(H));
  (void)rows;

  if (scales_dtype == DType::Float && x_dtype == DType::HiFloat8 && hif8_target != 0.0f &&
      !(hif8_target >= 1.0f && hif8_target <= 32768.0f))
    return invalid("hif8_target: must be 0 (default) or in [1, 32768], got " +
                   std::to_string(hif8_target));
  return Status::Ok();
}

}  // namespace qcoll::quant
