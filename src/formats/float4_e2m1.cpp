// FLOAT4_E2M1: 1 sign (bit 3), 2 exponent (bias 1), 1 mantissa bit; the subnormal 0.5,
// normals 1 .. 6; no Inf, no NaN (contract.md §ext-fp4). Values +-{0, 0.5, 1, 1.5, 2, 3,
// 4, 6}. Encoder: RNE, always saturating (above 5, Inf too: +-6; 5 itself, a tie: 4),
// sign kept, NaN -> 0.
// The same codes as ml_dtypes' float4_e2m1fn for every finite fp32 (tests/test_formats_fp4.cpp).
#include "formats/fp4_codec.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {

float decode_float4_e2m1(uint8_t code) { return detail::fp4_decode<DType::Float4E2M1>(code); }

uint8_t encode_float4_e2m1(float v) { return detail::fp4_encode<DType::Float4E2M1>(v); }

}  // namespace qcoll::formats
