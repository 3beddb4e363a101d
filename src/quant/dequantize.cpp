// Dequantization: d = fp32(decode(q)) * fp32(scale), one fp32 multiply (contract.md §numerics-dequantize;
// 4-bit x packed, two codes a byte: §ext-fp4-dequantize).
#include "qcoll/contract.hpp"
#include "qcoll/formats.hpp"
#include "qcoll/quant.hpp"

namespace qcoll::quant {

namespace {

// The scale of group g: fp32 (KG) or an E8M0 byte (MX).
float group_scale(const void* scales, DType scales_dtype, std::size_t g) {
  if (scales_dtype == DType::Float) return static_cast<const float*>(scales)[g];
  return formats::decode_float8_e8m0(static_cast<const uint8_t*>(scales)[g]);
}

}  // namespace

bool dequantize(const uint8_t* q, const void* scales, std::size_t rows, std::size_t H, DType x_dtype,
                DType scales_dtype, float* out) {
  if (out == nullptr) return false;
  if (!check_quantize_args(q, rows, H, x_dtype, scales_dtype, out, scales).ok()) return false;
  const bool packed = is_4bit_format(x_dtype);
  const float* table = packed ? formats::decode_table4(x_dtype) : formats::decode_table(x_dtype);
  if (table == nullptr) return false;
  const std::size_t count = rows * H;
  const std::size_t G = contract::scale_group(scales_dtype);
  for (std::size_t g = 0; g * G < count; ++g) {
    const float scale = group_scale(scales, scales_dtype, g);
    for (std::size_t i = g * G; i < g * G + G; ++i) out[i] = table[packed ? formats::fp4_get(q, i) : q[i]] * scale;
  }
  return true;
}

}  // namespace qcoll::quant
