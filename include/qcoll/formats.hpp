// qcoll: exact number formats (docs/contract.md §formats decode, §encoders encode).
// Every decode is exact in fp32. Encoders round to nearest (ties to even, HiF8 ties away
// from zero), keep subnormals, decide overflow after rounding; non-saturating by default.
#pragma once
#include <cstddef>
#include <cstdint>
#include "qcoll/dtype.hpp"

namespace qcoll::formats {

enum class Saturation : uint8_t { NonSaturating = 0, Saturating = 1 };

float decode_int8(uint8_t b);  // two's complement
float decode_hifloat8(uint8_t b);
float decode_float8_e4m3fn(uint8_t b);
float decode_float8_e5m2(uint8_t b);
float decode_float8_e8m0(uint8_t b);  // 2^(b-127); 0xFF NaN
float decode_float16(uint16_t bits);
float decode_bfloat16(uint16_t bits);

uint8_t encode_int8(float v, Saturation s = Saturation::Saturating);  // RNE, clamp to [-128,127]; NaN -> 0
uint8_t encode_hifloat8(float v, Saturation s = Saturation::NonSaturating);
uint8_t encode_float8_e4m3fn(float v, Saturation s = Saturation::NonSaturating);
uint8_t encode_float8_e5m2(float v, Saturation s = Saturation::NonSaturating);
uint8_t encode_float8_e8m0(float v);  // positive v: exponent rounded up when fraction >= 0.5; NaN/neg/0 per docs
uint16_t encode_float16(float v);     // RNE, overflow -> Inf, NaN stays quiet NaN
uint16_t encode_bfloat16(float v);    // RNE, NaN stays quiet NaN

// Generic by dtype, for the 8-bit formats (is_8bit_format(t)); other t: NaN / 0.
float decode8(DType t, uint8_t b);
uint8_t encode8(DType t, float v, Saturation s = Saturation::NonSaturating);

// 256-entry decode table of an 8-bit format (exact fp32 values), or nullptr.
const float* decode_table(DType t);

// Largest finite value of an 8-bit float format (448, 57344, 32768; 127 for INT8), of a
// 4-bit one (6, 1.75), or of FLOAT16 / BFLOAT16 / FLOAT; 0 for another dtype.
float max_finite(DType t);

// ---- The 4-bit formats (contract.md §ext-fp4): E2M1 and E1M2, bias 1, bit 3 the sign,
// no Inf, no NaN. A code is the low 4 bits of a uint8_t; decoders ignore bits 4-7. ----

float decode_float4_e2m1(uint8_t code);  // +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}
float decode_float4_e1m2(uint8_t code);  // +-{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75}
// Round to nearest, ties to even, saturating: |v| beyond the largest finite value (Inf
// too) gives +-max; the sign is kept (-0 and negative values that round to 0 give 0x8);
// NaN gives 0. A code in [0, 15].
uint8_t encode_float4_e2m1(float v);
uint8_t encode_float4_e1m2(float v);

// Generic by dtype, for the 4-bit formats (is_4bit_format(t)); other t: NaN / 0 / nullptr.
float decode4(DType t, uint8_t code);
uint8_t encode4(DType t, float v);
const float* decode_table4(DType t);  // 16 entries, the exact values of codes 0..15

// The packed layout (contract.md §ext-fp4-layout): two codes a byte, the element with the
// even flat index in bits 0-3, the odd one in bits 4-7 (torch's float4_e2m1fn_x2 order).
// `count` elements take (count + 1) / 2 bytes; an odd count leaves bits 4-7 of the last
// byte 0.
constexpr std::size_t fp4_packed_bytes(std::size_t count) { return count / 2 + count % 2; }
constexpr uint8_t fp4_pack_pair(uint8_t even, uint8_t odd) {
  return static_cast<uint8_t>((even & 0xF) | ((odd & 0xF) << 4));
}
// The code of element i of a packed array.
constexpr uint8_t fp4_get(const uint8_t* packed, std::size_t i) {
  return static_cast<uint8_t>((packed[i / 2] >> (4 * (i % 2))) & 0xF);
}
// Sets element i of a packed array to code (its low 4 bits), leaving the other nibble.
constexpr void fp4_set(uint8_t* packed, std::size_t i, uint8_t code) {
  const unsigned shift = 4 * (i % 2);
  packed[i / 2] = static_cast<uint8_t>((packed[i / 2] & ~(0xFu << shift)) | ((code & 0xFu) << shift));
}
// count codes (one a byte, low 4 bits) -> fp4_packed_bytes(count) packed bytes, and back
// (unpack writes one code a byte, bits 4-7 clear).
void pack_fp4(const uint8_t* codes, std::size_t count, uint8_t* packed);
void unpack_fp4(const uint8_t* packed, std::size_t count, uint8_t* codes);

}  // namespace qcoll::formats
