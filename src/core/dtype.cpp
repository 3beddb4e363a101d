// Names of the dtypes and their aliases (qcoll/dtype.hpp).
#include "qcoll/dtype.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace qcoll {
namespace {

struct NameEntry {
  std::string_view name;
  DType type;
};

// Canonical names first (dtype_name returns the first match), then aliases.
constexpr NameEntry kNames[] = {
    {"float", DType::Float},
    {"float16", DType::Float16},
    {"int8", DType::Int8},
    {"uint8", DType::UInt8},
    {"bfloat16", DType::BFloat16},
    {"hifloat8", DType::HiFloat8},
    {"float8_e5m2", DType::Float8E5M2},
    {"float8_e4m3fn", DType::Float8E4M3FN},
    {"float8_e8m0", DType::Float8E8M0},
    {"float4_e2m1", DType::Float4E2M1},
    {"float4_e1m2", DType::Float4E1M2},
    // aliases
    {"fp32", DType::Float},
    {"float32", DType::Float},
    {"fp16", DType::Float16},
    {"half", DType::Float16},
    {"bf16", DType::BFloat16},
    {"hif8", DType::HiFloat8},
    {"e5m2", DType::Float8E5M2},
    {"fp8_e5m2", DType::Float8E5M2},
    {"e4m3", DType::Float8E4M3FN},
    {"e4m3fn", DType::Float8E4M3FN},
    {"fp8_e4m3fn", DType::Float8E4M3FN},
    {"float8_e4m3", DType::Float8E4M3FN},
    {"e8m0", DType::Float8E8M0},
    {"float8_e8m0fnu", DType::Float8E8M0},
    {"float4_e2m1fn", DType::Float4E2M1},
    {"e2m1", DType::Float4E2M1},
    {"e1m2", DType::Float4E1M2},
};

}  // namespace

std::string_view dtype_name(DType t) {
  for (const auto& e : kNames)
    if (e.type == t) return e.name;
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& e : kNames)
    if (e.name == lower) return e.type;
  return std::nullopt;
}

std::size_t dtype_bits(DType t) {
  switch (t) {
    case DType::Float:
      return 32;
    case DType::Float16:
    case DType::BFloat16:
      return 16;
    case DType::Int8:
    case DType::UInt8:
    case DType::HiFloat8:
    case DType::Float8E5M2:
    case DType::Float8E4M3FN:
    case DType::Float8E8M0:
      return 8;
    case DType::Float4E2M1:
    case DType::Float4E1M2:
      return 4;
  }
  return 0;
}

std::size_t dtype_size(DType t) {
  const std::size_t bits = dtype_bits(t);
  return bits % 8 == 0 ? bits / 8 : 0;
}

std::size_t dtype_bytes(DType t, std::size_t count) {
  const std::size_t bits = dtype_bits(t);
  if (bits % 8 == 0) return count * (bits / 8);
  return count / 2 + count % 2;  // 4 bits: two elements a byte (no overflow for any count)
}

bool is_8bit_format(DType t) {
  return t == DType::Int8 || t == DType::HiFloat8 || t == DType::Float8E5M2 || t == DType::Float8E4M3FN ||
         t == DType::Float8E8M0;
}

bool is_4bit_format(DType t) { return t == DType::Float4E2M1 || t == DType::Float4E1M2; }

bool is_known_dtype(int32_t t) {
  for (const auto& e : kNames)
    if (static_cast<int32_t>(e.type) == t) return true;
  return false;
}

}  // namespace qcoll
