// FLOAT4_E1M2: 1 sign (bit 3), 1 exponent (bias 1), 2 mantissa bits; subnormals m * 0.25,
// normals 1 .. 1.75; no Inf, no NaN (contract.md §ext-fp4). Values +-{0, 0.25, 0.5, 0.75,
// 1, 1.25, 1.5, 1.75}. Encoder: RNE, always saturating (above 1.625, Inf too: +-1.75),
// sign kept, NaN -> 0.
#include "formats/fp4_codec.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {

float decode_float4_e1m2(uint8_t code) { return detail::fp4_decode<DType::Float4E1M2>(code); }

uint8_t encode_float4_e1m2(float v) { return detail::fp4_encode<DType::Float4E1M2>(v); }

}  // namespace qcoll::formats
