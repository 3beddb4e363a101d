#include "kernels/decode_tables.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "qcoll/formats.hpp"

namespace qcoll::kernels {

namespace {

DecodeTables build(DType x) {
  DecodeTables t{};
  const float* dec = formats::decode_table(x);
  const auto fail = [&](int v, const char* what) {
    throw std::logic_error("decode_tables: " + std::string(dtype_name(x)) + " magnitude " + std::to_string(v) + " " +
                           what);
  };
  for (int v = 0; v < 128; ++v) {
    uint32_t bits;
    std::memcpy(&bits, &dec[v], 4);
    if (std::isnan(dec[v])) {
      bits = 0x7FC00000u;
    } else if ((bits >> 31) != 0 || (bits & 0xFFFFu) != 0) {
      fail(v, "is not a non-negative value with 7 fraction bits");
    }
    t.top_hi[v] = static_cast<uint8_t>(bits >> 24);
    t.top_lo[v] = static_cast<uint8_t>(bits >> 16);
    if (x == DType::HiFloat8) {
      if (std::isnan(dec[v])) fail(v, "is NaN (HiFloat8 has only the NaN code 0x80)");
      const uint16_t h = formats::encode_float16(dec[v]);  // exact for HiF8 values (checked)
      if (formats::decode_float16(h) != dec[v] || (h >> 15) != 0 || (v >= 16 && (h & 0x7F) != 0))
        fail(v, "is not exact in fp16 as the tables assume");
      t.fp16[v] = h;
      t.fp16_f[v] = static_cast<uint8_t>(h >> 7);
      if (v < 16) t.fp16_l[v] = static_cast<uint8_t>(h & 0x7F);
    }
  }
  for (int v = 0; v < 128; ++v) {
    t.fp16_fx[v] = static_cast<uint8_t>(t.fp16_f[v] ^ (v + 16 < 128 ? t.fp16_f[v + 16] : 0));
  }
  return t;
}

}  // namespace

const DecodeTables& decode_tables(DType x_dtype) {
  static const DecodeTables e4m3 = build(DType::Float8E4M3FN);
  static const DecodeTables e5m2 = build(DType::Float8E5M2);
  static const DecodeTables hif8 = build(DType::HiFloat8);
  switch (x_dtype) {
    case DType::Float8E4M3FN:
      return e4m3;
    case DType::Float8E5M2:
      return e5m2;
    case DType::HiFloat8:
      return hif8;
    default:
      throw std::logic_error("decode_tables: no tables for " + std::string(dtype_name(x_dtype)));
  }
}

}  // namespace qcoll::kernels
