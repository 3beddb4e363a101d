// Generic access to the 8-bit formats by dtype: decode8/encode8, the 256-entry decode
// tables (built once, on first use, from the per-format decoders) and max_finite.
#include <array>
#include <cstdint>
#include <limits>

#include "formats/traits.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {
namespace {

using Table = std::array<float, 256>;

template <float (*Decode)(uint8_t)>
const Table& table_of() {
  static const Table table = [] {
    Table t{};
    for (int b = 0; b < 256; ++b) t[b] = Decode(static_cast<uint8_t>(b));
    return t;
  }();
  return table;
}

}  // namespace

float decode8(DType t, uint8_t b) {
  switch (t) {
    case DType::Int8: return decode_int8(b);
    case DType::HiFloat8: return decode_hifloat8(b);
    case DType::Float8E4M3FN: return decode_float8_e4m3fn(b);
    case DType::Float8E5M2: return decode_float8_e5m2(b);
    case DType::Float8E8M0: return decode_float8_e8m0(b);
    default: return std::numeric_limits<float>::quiet_NaN();
  }
}

uint8_t encode8(DType t, float v, Saturation s) {
  switch (t) {
    case DType::Int8: return encode_int8(v, s);
    case DType::HiFloat8: return encode_hifloat8(v, s);
    case DType::Float8E4M3FN: return encode_float8_e4m3fn(v, s);
    case DType::Float8E5M2: return encode_float8_e5m2(v, s);
    case DType::Float8E8M0: return encode_float8_e8m0(v);
    default: return 0;
  }
}

const float* decode_table(DType t) {
  switch (t) {
    case DType::Int8: return table_of<decode_int8>().data();
    case DType::HiFloat8: return table_of<decode_hifloat8>().data();
    case DType::Float8E4M3FN: return table_of<decode_float8_e4m3fn>().data();
    case DType::Float8E5M2: return table_of<decode_float8_e5m2>().data();
    case DType::Float8E8M0: return table_of<decode_float8_e8m0>().data();
    default: return nullptr;
  }
}

float max_finite(DType t) {
  switch (t) {
    case DType::Int8: return Traits<DType::Int8>::kMaxFinite;
    case DType::HiFloat8: return Traits<DType::HiFloat8>::kMaxFinite;
    case DType::Float8E4M3FN: return Traits<DType::Float8E4M3FN>::kMaxFinite;
    case DType::Float8E5M2: return Traits<DType::Float8E5M2>::kMaxFinite;
    case DType::Float8E8M0: return Traits<DType::Float8E8M0>::kMaxFinite;
    // Not 8-bit formats, given for convenience.
    case DType::Float16: return Traits<DType::Float16>::kMaxFinite;
    case DType::BFloat16: return Traits<DType::BFloat16>::kMaxFinite;
    case DType::Float: return Traits<DType::Float>::kMaxFinite;
    default: return 0.0f;
  }
}

}  // namespace qcoll::formats
