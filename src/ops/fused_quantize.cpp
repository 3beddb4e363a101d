#include "ops/fused_quantize.hpp"

#include <string>

#include "qcoll/quant.hpp"

namespace qcoll::ops {

Status RowQuantizer::operator()(const uint8_t* in, std::size_t rows, uint8_t* q, uint8_t* scales) const {
  if (rows == 0) return Status::Ok();
  const bool kg = scales_dtype == DType::Float;
  quant::QuantOptions opt;
  opt.hif8_target = hif8_target;
  opt.threads = threads;
  auto* kg_scales = reinterpret_cast<float*>(scales);
  const auto* x16 = reinterpret_cast<const uint16_t*>(in);
  bool ok = false;
  switch (in_dtype) {
    case DType::Float: {
      const auto* x = reinterpret_cast<const float*>(in);
      ok = kg ? quant::quantize_kg(x, rows, H, x_dtype, q, kg_scales, opt)
              : quant::quantize_mx(x, rows, H, x_dtype, q, scales, opt);
      break;
    }
    case DType::BFloat16:
      ok = kg ? quant::quantize_kg_bf16(x16, rows, H, x_dtype, q, kg_scales, opt)
              : quant::quantize_mx_bf16(x16, rows, H, x_dtype, q, scales, opt);
      break;
    case DType::Float16:
      ok = kg ? quant::quantize_kg_fp16(x16, rows, H, x_dtype, q, kg_scales, opt)
              : quant::quantize_mx_fp16(x16, rows, H, x_dtype, q, scales, opt);
      break;
    default:
      break;
  }
  if (!ok)
    return Status::Error(StatusCode::InnerError, "the quantizer refused a validated call (input " +
                                                     std::string(dtype_name(in_dtype)) + ", x " +
                                                     std::string(dtype_name(x_dtype)) + ")");
  return Status::Ok();
}

}  // namespace qcoll::ops
