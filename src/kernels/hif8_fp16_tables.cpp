#include "kernels/hif8_fp16_tables.hpp"

#include <stdexcept>

#include "qcoll/formats.hpp"

namespace qcoll::kernels {

namespace {

HiF8Fp16Tables build() {
  HiF8Fp16Tables t{};
  const float* dec = formats::decode_table(DType::HiFloat8);
  for (int v = 0; v < 128; ++v) {
    const uint16_t h = formats::encode_float16(dec[v]);  // exact: HiF8 values fit fp16
    t.f[v] = static_cast<uint8_t>(h >> 7);
    if (v < 16) t.l[v] = static_cast<uint8_t>(h & 0x7F);
    // Only the HiF8 denormals 0x01..0x05 have bits below bit 7.
    if ((h >> 15) != 0 || (v >= 16 && (h & 0x7F) != 0) || formats::decode_float16(h) != dec[v])
      throw std::logic_error("hif8_fp16_tables: HiFloat8 code not representable as built");
  }
  return t;
}

}  // namespace

const HiF8Fp16Tables& hif8_fp16_tables() {
  static const HiF8Fp16Tables tables = build();
  return tables;
}

}  // namespace qcoll::kernels
