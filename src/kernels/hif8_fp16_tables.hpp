// HiFloat8 -> fp16 byte tables for the SIMD decode (every HiF8 value is exact in fp16).
// For v = code & 0x7F: fp16 bits of |value| == (f[v] << 7) | l[v & 15] (l is zero for
// v >= 16). The sign is bit 7 of the code; code 0x80 (NaN) needs separate handling.
#pragma once
#include <cstdint>

namespace qcoll::kernels {

struct HiF8Fp16Tables {
  alignas(64) uint8_t f[128];
  alignas(16) uint8_t l[16];
};

// Built once from formats::decode_table(HiFloat8); thread-safe.
const HiF8Fp16Tables& hif8_fp16_tables();

}  // namespace qcoll::kernels
