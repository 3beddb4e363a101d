// Internal: one quantization call with checked arguments, and the paths that run it.
//
//   quantize_scalar    the reference (quantize_kg.cpp, quantize_mx.cpp: quant_groups.hpp)
//   quantize_simd      Highway, the best target of this CPU (quantize_simd.cpp); the same
//                      bits as the reference on every target, for every input
//   run_quantize       what the public functions call: the job's rows split over
//                      `threads` threads of the worker pool (same bits for every count),
//                      each part on the SIMD path, or on the reference where QCOLL_KERNEL=scalar
//                      or the caller's rounding mode is not round-to-nearest (the SIMD INT8
//                      round and subnormal encodes assume it; the reference's INT8 rounding
//                      follows the current mode)
//
// Every path keeps subnormals (core/float_env.hpp) and runs the caller's rounding mode on
// the pool's threads too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "qcoll/dtype.hpp"

namespace qcoll::quant::detail {

struct QuantJob {
  DType in_dtype = DType::Float;      // Float, BFloat16 or Float16 rows
  const void* x = nullptr;            // rows * H input elements
  std::size_t rows = 0;
  std::size_t H = 0;                  // a multiple of the group (128 KG, 64 MX)
  DType x_dtype = DType::Int8;        // KG: Int8, HiFloat8, Float8E4M3FN, Float8E5M2; MX: the fp8s
  DType scales_dtype = DType::Float;  // Float: KG (group 128), Float8E8M0: MX (group 32)
  float target = 0.0f;                // KG: scale = amax / target (HiF8 default resolved)
  uint8_t* q = nullptr;               // rows * H codes
  void* scales = nullptr;             // rows * H / 128 floats (KG) or rows * H / 32 bytes (MX)
};

// The KG target of a dtype: its largest finite value (127, 448, 57344); HiF8: hif8_target,
// or default_hif8_target() for 0.
float kg_target(DType x_dtype, float hif8_target);

// Rows [first, first + count) of `job` as a job of their own.
QuantJob rows_of(const QuantJob& job, std::size_t first, std::size_t count);

void quantize_scalar(const QuantJob& job);
void quantize_kg_scalar(const QuantJob& job);
void quantize_mx_scalar(const QuantJob& job);

void quantize_simd(const QuantJob& job);  // the name of its target: quant::quantize_target()
// For tests and benchmarks: the SIMD targets compiled in that this CPU runs (best first),
// and the job on one of them by name (false, nothing written, for any other name).
std::vector<std::string> quantize_simd_targets();
bool quantize_on_target(std::string_view target, const QuantJob& job);

// threads: 0 = auto (see quant.hpp), else 1..kMaxQuantThreads.
void run_quantize(const QuantJob& job, int threads);
// The number of parts run_quantize uses for `job` and a `threads` argument.
int quantize_parts(const QuantJob& job, int threads);

}  // namespace qcoll::quant::detail
