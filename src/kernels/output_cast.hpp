// Scalar output cast of the dequant_reduce kernels (contract.md §numerics-output-cast, canonical NaN of
// dequant_reduce.hpp). Shared by the scalar path and the SIMD paths' tails.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "formats/traits.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::kernels {

// The canonical quiet NaNs: the formats' own quiet NaN codes, positive.
inline constexpr uint32_t kCanonicalNanF32 = formats::Traits<DType::Float>::kNaNCode;
inline constexpr uint16_t kCanonicalNanF16 = formats::Traits<DType::Float16>::kNaNCode;
inline constexpr uint16_t kCanonicalNanBF16 = formats::Traits<DType::BFloat16>::kNaNCode;

// Writes element i of `out` (out_dtype Float, Float16 or BFloat16) from the fp32 sum.
inline void store_sum(DType out_dtype, void* out, std::size_t i, float acc) {
  auto* bytes = static_cast<unsigned char*>(out);
  const bool nan = std::isnan(acc);
  if (out_dtype == DType::Float) {
    uint32_t bits;
    std::memcpy(&bits, &acc, 4);
    if (nan) bits = kCanonicalNanF32;
    std::memcpy(bytes + 4 * i, &bits, 4);
  } else {
    const uint16_t h = out_dtype == DType::Float16 ? (nan ? kCanonicalNanF16 : formats::encode_float16(acc))
                                                   : (nan ? kCanonicalNanBF16 : formats::encode_bfloat16(acc));
    std::memcpy(bytes + 2 * i, &h, 2);
  }
}

}  // namespace qcoll::kernels
