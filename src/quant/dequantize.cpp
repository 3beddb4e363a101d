// Dequantization: d = fp32(decode(q)) * fp32(scale), one fp32 multiply (contract.md §numerics-dequantize).
#include "qcoll/contract.hpp"
#include "qcoll/formats.hpp"
#include "qcoll/quant.hpp"

namespace qcoll::quant {

bool dequantize(const uint8_t* q, const void* scales, std::size_t rows, std::size_t H, DType x_dtype,
                DType scales_dtype, float* out) {
  if (out == nullptr) return false;
  if (!check_quantize_args(q, rows, H, x_dtype, scales_dtype, out, scales).ok()) return false;
  const float* table = formats::decode_table(x_dtype);
  if (table == nullptr) return false;
  const std::size_t count = rows * H;
  const std::size_t G = contract::scale_group(scales_dtype);
  if (scales_dtype == DType::Float) {
    const float* s = static_cast<const float*>(scales);
    for (std::size_t g = 0; g * G < count; ++g) {
      const float scale = s[g];
      for (std::size_t i = g * G; i < g * G + G; ++i) out[i] = table[q[i]] * scale;
    }
  } else {
    const uint8_t* s = static_cast<const uint8_t*>(scales);
    for (std::size_t b = 0; b * G < count; ++b) {
      const float scale = formats::decode_float8_e8m0(s[b]);
      for (std::size_t i = b * G; i < b * G + G; ++i) out[i] = table[q[i]] * scale;
    }
  }
  return true;
}

}  // namespace qcoll::quant
