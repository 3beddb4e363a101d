// qcoll: quantizers that produce the operators' inputs (contract.md §quantizers), and their inverse.
//
// Behaviour on special values (docs/quantizers.md): a group's amax is taken over its finite
// elements only; NaN elements become the format's NaN (INT8 has none: 0); +-Inf elements
// saturate to +-max finite (INT8 +-127). A group whose fp32 scale is 0 (all elements zero or
// non-finite, or amax so small that amax/target underflows) gets scale 0 and q = 0 for its
// finite elements.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>
#include "qcoll/dtype.hpp"
#include "qcoll/settings.hpp"
#include "qcoll/status.hpp"

namespace qcoll::quant {

// Default HiF8 KG target (scale = amax / target). Chosen by measurement; see docs/hifloat8-target.md.
float default_hif8_target();

// Options of the quantizers.
//   hif8_target: the KG HiFloat8 target (scale = amax / target); 0: default_hif8_target(),
//                else in [1, 32768]; ignored by the other dtypes and by MX.
//   threads:     threads that quantize one call, its rows split among them (results do not
//                depend on the count); 0 = auto: this host's cores for a call of at least
//                kQuantAutoThreadElements elements (else 1), at most one per row; else
//                1..kMaxQuantThreads. In processes that share the cores with other ranks,
//                pass the share (e.g. cores / ranks).
//   contract:    the contract the call keeps (contract.md §ext); nullopt: the calling one,
//                settings::contract() (QCOLL_CONTRACT or the program's choice), read only
//                for a 4-bit x dtype, the only ones it decides. A caller that has checked
//                its call under some contract (the fused operators) passes that one.
// The quantizers run the best SIMD target of this CPU (quantize_target() in the
// benchmarks; QCOLL_KERNEL=scalar picks the reference path), bit-identical to the
// reference on every target.
inline constexpr int kMaxQuantThreads = 64;
inline constexpr std::size_t kQuantAutoThreadElements = std::size_t{1} << 18;
struct QuantOptions {
  float hif8_target = 0.0f;
  int threads = 0;
  std::optional<settings::Contract> contract;
};
using KgOptions = QuantOptions;
using MxOptions = QuantOptions;

// Inputs: `x` rows of fp32 values, or the bits of bf16 (`_bf16`) or fp16 (`_fp16`) values.

// Per-token-per-group (group 128) quantization of `rows` rows of H values (H % 128 == 0, H > 0).
// x_dtype: Int8, HiFloat8, Float8E4M3FN, Float8E5M2; under the extended contract also
// Float4E2M1, Float4E1M2 (contract.md §ext-fp4-quantizers). Writes the codes to q,
// rows*H bytes (8-bit) or rows*H/2 (4-bit, packed: the even element of a pair in bits
// 0-3; contract::x_data_bytes), and rows*H/128 fp32 scales. Returns false (and writes nothing) on a bad dtype, H, target or
// null pointer (check_quantize_args says why). rows == 0 writes nothing and returns true.
bool quantize_kg(const float* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, float* scales,
                 const KgOptions& opt = {});
bool quantize_kg_bf16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, float* scales,
                      const KgOptions& opt = {});
bool quantize_kg_fp16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, float* scales,
                      const KgOptions& opt = {});

// OCP MX (group 32) quantization: x_dtype Float8E4M3FN or Float8E5M2 (extended contract:
// also Float4E2M1, Float4E1M2; codes as for KG), E8M0 scales,
// rows*H/32 scale bytes in the (rows, H/64, 2) layout (H % 64 == 0, H > 0).
bool quantize_mx(const float* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, uint8_t* scales,
                 const MxOptions& opt = {});
bool quantize_mx_bf16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, uint8_t* scales,
                      const MxOptions& opt = {});
bool quantize_mx_fp16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, uint8_t* q, uint8_t* scales,
                      const MxOptions& opt = {});

// The path the quantizers take: "scalar" (QCOLL_KERNEL=scalar) or the SIMD target's name.
const char* quantize_target();

// Dequantize (decode * scale, one fp32 multiply) rows*H values; scales fp32 (group 128)
// or E8M0 bytes (group 32) by scales_dtype; q packed for the 4-bit x dtypes (their
// contract rule as for the quantizers).
bool dequantize(const uint8_t* q, const void* scales, std::size_t rows, std::size_t H, DType x_dtype,
                DType scales_dtype, float* out);

// ---- checked C++ convenience layer ----

// Scale group size of a scales dtype: 128 (Float), 32 (Float8E8M0), 0 for any other.
std::size_t scale_group_size(DType scales_dtype);

// Why the arguments of a quantize/dequantize call are bad (PARAM_NULLPTR / PARAM_INVALID with
// a message naming the parameter, the value seen and the rule), or Ok. `x`, `q`, `scales`
// are only checked for null. hif8_target is only checked for the KG HiFloat8 combination;
// threads must be 0 (auto) or in [1, kMaxQuantThreads]. The x dtypes are those of
// `contract` (nullopt: settings::contract(), read only for a 4-bit x dtype; a bad
// QCOLL_CONTRACT is then its PARAM_INVALID): under vendor a 4-bit one is refused with the
// vendor's message and "; float4_e2m1 needs QCOLL_CONTRACT=extended"
// (contract::check_quant_call with a Contract, the one place of that rule).
Status check_quantize_args(const void* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                           const void* q, const void* scales, float hif8_target = 0.0f, int threads = 0,
                           std::optional<settings::Contract> contract = std::nullopt);

// A quantized (rows, H) tensor: the operator's x and scales inputs.
struct QuantizedTensor {
  DType x_dtype = DType::Int8;
  DType scales_dtype = DType::Float;  // Float: KG, Float8E8M0: MX
  std::size_t rows = 0;
  std::size_t H = 0;
  std::vector<uint8_t> q;          // contract::x_data_bytes(x_dtype, rows, H): rows*H, 4-bit rows*H/2
  std::vector<float> kg_scales;    // rows*H/128 fp32 (KG), else empty
  std::vector<uint8_t> mx_scales;  // rows*H/32 E8M0 bytes (MX), else empty

  const void* scales_data() const;
  std::size_t scales_bytes() const;
};

// Quantizes a (rows, H) fp32 / bf16 / fp16 tensor in the mode given by scales_dtype (Float:
// KG, Float8E8M0: MX). On error `out` is left unchanged.
Status quantize(const float* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                QuantizedTensor& out, const KgOptions& opt = {});
Status quantize_bf16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                     QuantizedTensor& out, const KgOptions& opt = {});
Status quantize_fp16(const uint16_t* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                     QuantizedTensor& out, const KgOptions& opt = {});
// rows*H fp32 values decode(q) * scale.
std::vector<float> dequantize(const QuantizedTensor& t);

}  // namespace qcoll::quant
