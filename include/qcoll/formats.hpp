// qcoll: exact number formats (docs/contract.md §formats decode, §encoders encode).
// Every decode is exact in fp32. Encoders round to nearest (ties to even, HiF8 ties away
// from zero), keep subnormals, decide overflow after rounding; non-saturating by default.
#pragma once
#include <cstdint>
#include "qcoll/dtype.hpp"

namespace qcoll::formats {

enum class Saturation : uint8_t { NonSaturating = 0, Saturating = 1 };

float decode_int8(uint8_t b);          // two's complement
float decode_hifloat8(uint8_t b);
float decode_float8_e4m3fn(uint8_t b);
float decode_float8_e5m2(uint8_t b);
float decode_float8_e8m0(uint8_t b);   // 2^(b-127); 0xFF NaN
float decode_float16(uint16_t bits);
float decode_bfloat16(uint16_t bits);

uint8_t encode_int8(float v, Saturation s = Saturation::Saturating);  // RNE, clamp to [-128,127]; NaN -> 0
uint8_t encode_hifloat8(float v, Saturation s = Saturation::NonSaturating);
uint8_t encode_float8_e4m3fn(float v, Saturation s = Saturation::NonSaturating);
uint8_t encode_float8_e5m2(float v, Saturation s = Saturation::NonSaturating);
uint8_t encode_float8_e8m0(float v);   // positive v: exponent rounded up when fraction >= 0.5; NaN/neg/0 per docs
uint16_t encode_float16(float v);      // RNE, overflow -> Inf, NaN stays quiet NaN
uint16_t encode_bfloat16(float v);     // RNE, NaN stays quiet NaN

// Generic by dtype, for the 8-bit formats (is_8bit_format(t)); other t: NaN / 0.
float decode8(DType t, uint8_t b);
uint8_t encode8(DType t, float v, Saturation s = Saturation::NonSaturating);

// 256-entry decode table of an 8-bit format (exact fp32 values), or nullptr.
const float* decode_table(DType t);

// Largest finite value of an 8-bit float format (448, 57344, 32768; 127 for INT8).
float max_finite(DType t);

}  // namespace qcoll::formats
