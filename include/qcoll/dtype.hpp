// qcoll: data type enumeration shared by the C++ API and the library.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace qcoll {

// Numeric values match qcollDataType in qcoll.h (those of ACL where ACL has them).
enum class DType : int32_t {
  Float = 0,    // fp32
  Float16 = 1,  // IEEE binary16
  Int8 = 2,
  UInt8 = 4,  // raw bytes (not an operator dtype; used by tools)
  BFloat16 = 27,
  HiFloat8 = 34,
  Float8E5M2 = 35,
  Float8E4M3FN = 36,
  Float8E8M0 = 37,
  Float4E2M1 = 40,  // 4-bit codes, two per byte (contract.md §ext-fp4-layout)
  Float4E1M2 = 41,
};

// Canonical lower-case name (contract.md §modes): "int8", "hifloat8", "float8_e4m3fn", "float8_e5m2",
// "float8_e8m0", "float", "float16", "bfloat16", "uint8", "float4_e2m1", "float4_e1m2". "?" for
// an unknown value.
std::string_view dtype_name(DType t);
// Parses a canonical name or an alias ("fp32", "fp16", "bf16", "float32", "hif8",
// "e4m3", "e5m2", "e8m0", "float4_e2m1fn", "e2m1", "e1m2"); case-insensitive. nullopt if unknown.
std::optional<DType> parse_dtype(std::string_view s);
// Bytes per element (1, 2 or 4); 0 for an unknown value and for the 4-bit formats, whose
// element is not a whole number of bytes (dtype_bits, dtype_bytes).
std::size_t dtype_size(DType t);
// Bits per element (4, 8, 16 or 32); 0 for an unknown value.
std::size_t dtype_bits(DType t);
// Bytes that `count` elements occupy packed: count * bits / 8, rounded up (a 4-bit format's
// odd count ends in a half-used byte); 0 for an unknown value.
std::size_t dtype_bytes(DType t, std::size_t count);
// True for the 1-byte types that decode to fp32 (INT8, HIFLOAT8, E4M3FN, E5M2, E8M0).
bool is_8bit_format(DType t);
// True for the 4-bit float formats (FLOAT4_E2M1, FLOAT4_E1M2; contract.md §ext-fp4).
bool is_4bit_format(DType t);
// True if t is a valid enumerator.
bool is_known_dtype(int32_t t);

}  // namespace qcoll
