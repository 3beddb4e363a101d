// Dequantize-and-reduce kernels. They know sources and element spans, never ranks.
//
//   out[i] = cast_out( ((0 + d_0[i]) + d_1[i]) + ... + d_{n-1}[i] ),
//   d_k[i] = fp32(decode(x_k[i])) * fp32(scale_k[i / G])      (G = 128 for fp32 scales, 32 for E8M0)
//
// Separate fp32 multiply and add (no FMA), sources summed in order 0..n-1, no flush of
// subnormals, fp16/bf16 output rounded to nearest even. Every path is bit-identical to
// dequant_reduce_scalar.
//
// NaN results: an element whose fp32 sum is NaN is written as the canonical quiet NaN,
// whatever NaN produced it: fp32 0x7FC00000, fp16 0x7E00, bf16 0x7FC0. (IEEE leaves the
// payload and sign of a NaN from an operation with NaN operands to the implementation:
// x86 returns the first operand's NaN and makes 0*Inf / Inf-Inf negative, Arm makes them
// positive, and a compiler may swap the operands of a commutative add. Writing one fixed
// NaN is what makes every path, CPU and rank give the same bits.) Infinities and all
// other values are the exact IEEE results.
//
// Any x dtype works with either scale dtype here, the 4-bit ones of the extended contract
// (FLOAT4_E2M1, FLOAT4_E1M2) included (the operators restrict the MX mode and the 4-bit
// dtypes to their contract); `count` must be a multiple of the group size; pointers need no
// alignment. 4-bit x is packed (contract.md §ext-fp4-layout): element i of source k is the
// nibble of byte x[k][i / 2] in bits 0-3 for even i, bits 4-7 for odd i; source k holds
// count / 2 bytes (count is even: a multiple of the group size), and decode(q) is the exact
// fp32 value of the 4-bit code (formats::decode_table4).
// Bad arguments (unknown dtype, nsrc < 1, null pointer, count not a multiple of G) make
// every entry point throw std::invalid_argument naming the field and the value seen,
// before anything is written. Each entry point checks once; the paths it runs (and the
// parallel path's parts) take the checked arguments as they are.
//
// Choosing the path: dequant_reduce() uses the best SIMD target of this CPU (Highway
// runtime dispatch), unless the environment variable QCOLL_KERNEL=scalar was set when it
// was first called (read once per process); then it runs dequant_reduce_scalar and
// dequant_reduce_target() returns "scalar".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include "qcoll/dtype.hpp"

namespace qcoll::kernels {

struct ReduceArgs {
  DType x_dtype = DType::Int8;             // Int8, HiFloat8, Float8E4M3FN, Float8E5M2, Float4E2M1, Float4E1M2
  DType scales_dtype = DType::Float;       // Float (group 128) or Float8E8M0 (group 32)
  DType out_dtype = DType::Float;          // Float, Float16, BFloat16
  int nsrc = 0;                            // number of sources, >= 1
  const uint8_t* const* x = nullptr;       // nsrc pointers; x[k][i] is element i of source k (4-bit:
                                           // the nibble i & 1 of x[k][i / 2], low nibble first)
  const uint8_t* const* scales = nullptr;  // nsrc pointers to the scale of element 0 (fp32 or E8M0 bytes)
  std::size_t count = 0;                   // elements; a multiple of the group size
  void* out = nullptr;                     // count elements of out_dtype
};

// Group size implied by the scales dtype (contract::scale_group: 128 or 32; 0 for any other).
std::size_t group_size(DType scales_dtype);

// Empty if `a` is acceptable to the kernels, else a message naming the field, the value
// seen and the rule (e.g. "count: must be a multiple of the group size 128, got 100").
std::string check_reduce_args(const ReduceArgs& a);
// Throws std::invalid_argument with check_reduce_args's message if `a` is not acceptable.
void require_reduce_args(const ReduceArgs& a);

// The reference path.
void dequant_reduce_scalar(const ReduceArgs& a);
// The fastest path for this CPU (runtime dispatch); same bits as the scalar path.
void dequant_reduce(const ReduceArgs& a);
// Name of the path dequant_reduce uses ("scalar", "AVX2", "AVX3", "NEON", ...).
const char* dequant_reduce_target();

// dequant_reduce split over `nthreads` threads of a persistent worker pool (the calling
// thread takes one share). The split is at group boundaries (and 64-byte boundaries of
// the sources where possible), so every element is computed exactly as by
// dequant_reduce. nthreads <= 1 runs inline. Safe to call from several threads at once.
void dequant_reduce_parallel(const ReduceArgs& a, int nthreads);

// For tests and benchmarks: the SIMD targets compiled into the library that this CPU can
// run (best first, e.g. {"AVX2", "SSE4", "SSSE3", "EMU128"}), and dequant_reduce on one
// of them by name. Returns false (and does nothing) for a target not in that list.
std::vector<std::string> dequant_reduce_simd_targets();
bool dequant_reduce_on_target(std::string_view target, const ReduceArgs& a);

// The paths without the argument check, for arguments that passed check_reduce_args
// already (the entry points above check once, then run these; the parallel path's parts
// run dequant_reduce_valid on their share). Anything else is undefined behaviour.
namespace detail {
void dequant_reduce_valid(const ReduceArgs& a);
void dequant_reduce_scalar_valid(const ReduceArgs& a);
}  // namespace detail

}  // namespace qcoll::kernels
