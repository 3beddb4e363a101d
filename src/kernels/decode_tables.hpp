// Byte and word tables for the SIMD decodes of the 8-bit formats, built once from the exact
// fp32 decode tables of qcoll/formats.hpp (formats::decode_table), so no format constant is
// typed twice. Indexed by the magnitude v = code & 0x7F (the sign is bit 7 of every format
// these tables serve; INT8 is two's complement and needs none).
//
//   top_hi[v], top_lo[v]   the two upper bytes of the fp32 bits of |value(v)|: every
//                          E4M3FN, E5M2 and HiFloat8 value has at most 7 fraction bits, so
//                          fp32 bits == (top_hi << 24) | (top_lo << 16) exactly. NaN
//                          magnitudes hold the quiet NaN 0x7FC0.
//   fp16[v]                the fp16 bits of |value(v)| (HiFloat8 only: every HiF8 value is
//                          exact in fp16; used where no byte permute of 128 entries exists).
//   fp16_f[v], fp16_l[v]   the same split as (f << 7) | l, l nonzero only for v < 16.
//   fp16_fx[16h + j]       fp16_f[16h + j] ^ fp16_f[16(h+1) + j] (0 past the end): the
//                          telescoping form of fp16_f for 16-entry byte shuffles.
// The HiFloat8 NaN is the code 0x80, which has magnitude 0 (the +0 entry): callers fix it.
#pragma once
#include <cstdint>

#include "qcoll/dtype.hpp"

namespace qcoll::kernels {

struct DecodeTables {
  alignas(64) uint8_t top_hi[128];
  alignas(64) uint8_t top_lo[128];
  alignas(64) uint16_t fp16[128];  // HiFloat8 only
  alignas(64) uint8_t fp16_f[128];
  alignas(64) uint8_t fp16_fx[128];
  alignas(16) uint8_t fp16_l[16];
};

// For Float8E4M3FN, Float8E5M2 and HiFloat8 (fp16 fields filled for HiFloat8 only); built
// once, thread-safe. Throws std::logic_error if a value does not fit as described (it
// cannot for these formats; the check guards the tables against a changed decode).
const DecodeTables& decode_tables(DType x_dtype);

}  // namespace qcoll::kernels
