// Internal: one quantization call with checked arguments, and the paths that run it.
//
//   quantize_scalar    the reference (quantize_kg.cpp, quantize_mx.cpp: quant_groups.hpp)
//   quantize_simd      Highway, the best target of this CPU (quantize_simd.cpp); the same
//                      bits as the reference on every target, for every input
//   quantize_rows      the quantizer entry point (qcoll::quant, below): the public
//                      functions and the fused operators' RowQuantizer call it with the
//                      input dtype; it checks once, describes the call as a QuantJob
//                      (make_job) and runs it (run_quantize), nothing re-checked after
//   run_quantize       the job's rows split over
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
#include "qcoll/quant.hpp"
#include "qcoll/status.hpp"

namespace qcoll::quant::detail {

struct QuantJob {
  DType in_dtype = DType::Float;  // Float, BFloat16 or Float16 rows
  const void* x = nullptr;        // rows * H input elements
  std::size_t rows = 0;
  std::size_t H = 0;                  // a multiple of the group (128 KG, 64 MX)
  DType x_dtype = DType::Int8;        // KG: Int8, HiFloat8, Float8E4M3FN, Float8E5M2; MX: the fp8s;
                                      // both: Float4E2M1, Float4E1M2 (the call's contract checked)
  DType scales_dtype = DType::Float;  // Float: KG (group 128), Float8E8M0: MX (group 32)
  float target = 0.0f;                // KG: scale = amax / target (HiF8 default resolved)
  uint8_t* q = nullptr;               // rows * H codes: a byte each, 4-bit two a byte (packed)
  void* scales = nullptr;             // rows * H / 128 floats (KG) or rows * H / 32 bytes (MX)
};

// The KG target of a dtype: its largest finite value (127, 448, 57344); HiF8: hif8_target,
// or default_hif8_target() for 0.
float kg_target(DType x_dtype, float hif8_target);

// The job of a call whose arguments passed check_quantize_args (in_dtype Float, BFloat16 or
// Float16): the KG target resolved from opt.hif8_target.
QuantJob make_job(DType in_dtype, const void* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                  uint8_t* q, void* scales, const QuantOptions& opt);

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

namespace qcoll::quant {

// The quantizer entry point: `rows` rows of H elements of in_dtype (Float, BFloat16 or
// Float16: fp32 values or the bits of bf16 / fp16 ones) at x into rows*H codes of x_dtype at q
// and their scales (scales_dtype Float: KG, group 128, fp32; Float8E8M0: MX, group 32, E8M0
// bytes; 4-bit x packed, rows*H/2 bytes). Checks the call once (in_dtype, then
// check_quantize_args with opt's target, used for KG only, threads and contract: a 4-bit x
// dtype needs the extended contract) and returns its Status (PARAM_NULLPTR / PARAM_INVALID naming the
// parameter, the value seen and the rule; nothing written), else runs it. rows == 0 writes
// nothing.
Status quantize_rows(DType in_dtype, const void* x, std::size_t rows, std::size_t H, DType x_dtype, DType scales_dtype,
                     uint8_t* q, void* scales, const QuantOptions& opt);

}  // namespace qcoll::quant
