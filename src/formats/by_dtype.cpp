// Generic access to the 8-bit and 4-bit formats by dtype: decode8/encode8, decode4/encode4,
// the 256- and 16-entry decode tables (built once, on first use, from the per-format
// decoders), max_finite and the packed 4-bit layout.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "formats/traits.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::formats {
namespace {

template <float (*Decode)(uint8_t), std::size_t N = 256>
const std::array<float, N>& table_of() {
  static const std::array<float, N> table = [] {
    std::array<float, N> t{};
    for (std::size_t b = 0; b < N; ++b) t[b] = Decode(static_cast<uint8_t>(b));
    return t;
  }();
  return table;
}

}  // namespace

float decode8(DType t, uint8_t b) {
  switch (t) {
    case DType::Int8:
      return decode_int8(b);
    case DType::HiFloat8:
      return decode_hifloat8(b);
    case DType::Float8E4M3FN:
      return decode_float8_e4m3fn(b);
    case DType::Float8E5M2:
      return decode_float8_e5m2(b);
    case DType::Float8E8M0:
      return decode_float8_e8m0(b);
    default:
      return std::numeric_limits<float>::quiet_NaN();
  }
}

uint8_t encode8(DType t, float v, Saturation s) {
  switch (t) {
    case DType::Int8:
      return encode_int8(v, s);
    case DType::HiFloat8:
      return encode_hifloat8(v, s);
    case DType::Float8E4M3FN:
      return encode_float8_e4m3fn(v, s);
    case DType::Float8E5M2:
      return encode_float8_e5m2(v, s);
    case DType::Float8E8M0:
      return encode_float8_e8m0(v);
    default:
      return 0;
  }
}

const float* decode_table(DType t) {
  switch (t) {
    case DType::Int8:
      return table_of<decode_int8>().data();
    case DType::HiFloat8:
      return table_of<decode_hifloat8>().data();
    case DType::Float8E4M3FN:
      return table_of<decode_float8_e4m3fn>().data();
    case DType::Float8E5M2:
      return table_of<decode_float8_e5m2>().data();
    case DType::Float8E8M0:
      return table_of<decode_float8_e8m0>().data();
    default:
      return nullptr;
  }
}

float max_finite(DType t) {
  switch (t) {
    case DType::Int8:
      return Traits<DType::Int8>::kMaxFinite;
    case DType::HiFloat8:
      return Traits<DType::HiFloat8>::kMaxFinite;
    case DType::Float8E4M3FN:
      return Traits<DType::Float8E4M3FN>::kMaxFinite;
    case DType::Float8E5M2:
      return Traits<DType::Float8E5M2>::kMaxFinite;
    case DType::Float8E8M0:
      return Traits<DType::Float8E8M0>::kMaxFinite;
    case DType::Float4E2M1:
      return Traits<DType::Float4E2M1>::kMaxFinite;
    case DType::Float4E1M2:
      return Traits<DType::Float4E1M2>::kMaxFinite;
    // Not 8-bit formats, given for convenience.
    case DType::Float16:
      return Traits<DType::Float16>::kMaxFinite;
    case DType::BFloat16:
      return Traits<DType::BFloat16>::kMaxFinite;
    case DType::Float:
      return Traits<DType::Float>::kMaxFinite;
    default:
      return 0.0f;
  }
}

float decode4(DType t, uint8_t code) {
  switch (t) {
    case DType::Float4E2M1:
      return decode_float4_e2m1(code);
    case DType::Float4E1M2:
      return decode_float4_e1m2(code);
    default:
      return std::numeric_limits<float>::quiet_NaN();
  }
}

uint8_t encode4(DType t, float v) {
  switch (t) {
    case DType::Float4E2M1:
      return encode_float4_e2m1(v);
    case DType::Float4E1M2:
      return encode_float4_e1m2(v);
    default:
      return 0;
  }
}

const float* decode_table4(DType t) {
  constexpr std::size_t kCodes = Traits<DType::Float4E2M1>::kCodes;
  static_assert(Traits<DType::Float4E1M2>::kCodes == kCodes);
  switch (t) {
    case DType::Float4E2M1:
      return table_of<decode_float4_e2m1, kCodes>().data();
    case DType::Float4E1M2:
      return table_of<decode_float4_e1m2, kCodes>().data();
    default:
      return nullptr;
  }
}

void pack_fp4(const uint8_t* codes, std::size_t count, uint8_t* packed) {
  for (std::size_t i = 0; i + 1 < count; i += 2) packed[i / 2] = fp4_pack_pair(codes[i], codes[i + 1]);
  if (count % 2 != 0) packed[count / 2] = fp4_pack_pair(codes[count - 1], 0);
}

void unpack_fp4(const uint8_t* packed, std::size_t count, uint8_t* codes) {
  for (std::size_t i = 0; i < count; ++i) codes[i] = fp4_get(packed, i);
}

}  // namespace qcoll::formats
