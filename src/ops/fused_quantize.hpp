// The quantization step of the fused operators (contract.md §fused): rows of the float input
// into the bytes the quantized operators exchange, x rows then scales rows, with the public
// quantizers (qcoll/quant.hpp), so that a fused call has the bits of quantize-then-operate.
// Rows are independent (groups never straddle rows), so quantizing a tensor chunk by chunk
// gives the bytes of quantizing it whole.
#pragma once
#include <cstddef>
#include <cstdint>

#include "qcoll/dtype.hpp"
#include "qcoll/settings.hpp"
#include "qcoll/status.hpp"

namespace qcoll::ops {

struct RowQuantizer {
  DType in_dtype = DType::Float;  // Float, Float16, BFloat16
  DType x_dtype = DType::Int8;
  DType scales_dtype = DType::Float;  // Float (KG) or Float8E8M0 (MX)
  float hif8_target = 0.0f;           // KG HiFloat8: the target (0: the default)
  std::size_t H = 0;
  int threads = 1;                                           // threads of one call, >= 1 (results do not depend on it)
  settings::Contract contract = settings::Contract::Vendor;  // the call's, read once in phase one

  std::size_t in_row_bytes() const { return H * dtype_size(in_dtype); }
  // Quantizes `rows` rows at `in` into q (rows * contract::x_row_bytes: H, or H/2 for a 4-bit
  // x) and scales (rows * scales row bytes).
  // INNER_ERROR if the quantizer refuses (the call was validated: a bug).
  Status operator()(const uint8_t* in, std::size_t rows, uint8_t* q, uint8_t* scales) const;
};

}  // namespace qcoll::ops
