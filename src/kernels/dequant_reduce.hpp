// Dequantize-and-reduce kernels. They know sources and element spans, never ranks.
//
//   out[i] = cast_out( ((0 + d_0[i]) + d_1[i]) + ... + d_{n-1}[i] ),
//   d_k[i] = fp32(decode(x_k[i])) * fp32(scale_k[i / G])      (G = 128 for fp32 scales, 32 for E8M0)
//
// Separate fp32 multiply and add (no FMA), sources summed in order 0..n-1, no flush of
// subnormals, fp16/bf16 output rounded to nearest even. Every path is bit-identical to
// dequant_reduce_scalar.
#pragma once
#include <cstddef>
#include <cstdint>
#include "qcoll/dtype.hpp"

namespace qcoll::kernels {

struct ReduceArgs {
  DType x_dtype = DType::Int8;        // Int8, HiFloat8, Float8E4M3FN, Float8E5M2
  DType scales_dtype = DType::Float;  // Float (group 128) or Float8E8M0 (group 32)
  DType out_dtype = DType::Float;     // Float, Float16, BFloat16
  int nsrc = 0;                       // number of sources, >= 1
  const uint8_t* const* x = nullptr;       // nsrc pointers; x[k][i] is element i of source k
  const uint8_t* const* scales = nullptr;  // nsrc pointers to the scale of element 0 (fp32 or E8M0 bytes)
  std::size_t count = 0;              // elements; a multiple of the group size
  void* out = nullptr;                // count elements of out_dtype
};

// Group size implied by the scales dtype (128 or 32).
std::size_t group_size(DType scales_dtype);

// The reference path.
void dequant_reduce_scalar(const ReduceArgs& a);
// The fastest path for this CPU (runtime dispatch); same bits as the scalar path.
void dequant_reduce(const ReduceArgs& a);
// Name of the path dequant_reduce uses ("scalar", "AVX2", "AVX3", ...).
const char* dequant_reduce_target();

}  // namespace qcoll::kernels
