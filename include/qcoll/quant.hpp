// qcoll: quantizers that produce the operators' inputs (SPEC 5).
#pragma once
#include <cstddef>
#include <cstdint>
#include "qcoll/dtype.hpp"

namespace qcoll::quant {

// Default HiF8 KG target (scale = amax / target). Chosen by measurement; see docs/hifloat8-target.md.
float default_hif8_target();

struct KgOptions {
  float hif8_target = 0.0f;  // 0: default_hif8_target(); only used for HIFLOAT8
};

// Per-token-per-group (group 128) quantization of `rows` rows of H values (H % 128 == 0).
// x_dtype: Int8, HiFloat8, Float8E4M3FN, Float8E5M2. Writes rows*H bytes to q and
// rows*H/128 fp32 scales. Returns false (and writes nothing) on a bad dtype or H.
bool quantize_kg(const float* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q,
                 float* scales, const KgOptions& opt = {});
bool quantize_kg_bf16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype,
                      uint8_t* q, float* scales, const KgOptions& opt = {});

// OCP MX (group 32) quantization: x_dtype Float8E4M3FN or Float8E5M2, E8M0 scales,
// rows*H/32 scale bytes in the (rows, H/64, 2) layout (H % 64 == 0).
bool quantize_mx(const float* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q,
                 uint8_t* scales);
bool quantize_mx_bf16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype,
                      uint8_t* q, uint8_t* scales);

// Dequantize (decode * scale, one fp32 multiply) rows*H values; scales fp32 (group 128)
// or E8M0 bytes (group 32) by scales_dtype.
bool dequantize(const uint8_t* q, const void* scales, std::size_t rows, std::size_t H,
                DType x_dtype, DType scales_dtype, float* out);

}  // namespace qcoll::quant
