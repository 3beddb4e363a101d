// Inputs of the quantizer tests (test_quant_simd.cpp, test_quant_fp4.cpp): rows in one of the
// three input dtypes (FLOAT, BFLOAT16, FLOAT16), built from fp32 values (bf16 / fp16 rounded
// by the library's encoders) or from every 16-bit pattern, with the values the quantizer sees
// (the decoded bf16 / fp16 values); and the value generators both use.
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "qcoll/dtype.hpp"
#include "qcoll/formats.hpp"

namespace quant_inputs {

using qcoll::DType;

struct Input {
  DType dtype = DType::Float;
  std::vector<float> f;       // FLOAT
  std::vector<uint16_t> h;    // BFLOAT16 / FLOAT16 bits
  std::vector<float> values;  // what the quantizer sees, element by element
  std::size_t size() const { return dtype == DType::Float ? f.size() : h.size(); }
  const void* data() const {
    return dtype == DType::Float ? static_cast<const void*>(f.data()) : static_cast<const void*>(h.data());
  }
};

inline float decode_half(DType in, uint16_t b) {
  return in == DType::BFloat16 ? qcoll::formats::decode_bfloat16(b) : qcoll::formats::decode_float16(b);
}

inline Input make_input(DType in, const std::vector<float>& v) {
  namespace f = qcoll::formats;
  Input x;
  x.dtype = in;
  if (in == DType::Float) {
    x.f = v;
    x.values = v;
    return x;
  }
  for (float e : v) {
    const uint16_t b = in == DType::BFloat16 ? f::encode_bfloat16(e) : f::encode_float16(e);
    x.h.push_back(b);
    x.values.push_back(decode_half(in, b));
  }
  return x;
}

// All 65536 bf16 or fp16 codes (NaNs, Infs, subnormals, both zeros), in their own order or
// shuffled across groups.
inline Input every_half_pattern(DType in, bool shuffle) {
  Input x;
  x.dtype = in;
  for (uint32_t i = 0; i < 65536; ++i) x.h.push_back(static_cast<uint16_t>(i));
  if (shuffle) std::shuffle(x.h.begin(), x.h.end(), std::mt19937(5));
  for (uint16_t b : x.h) x.values.push_back(decode_half(in, b));
  return x;
}

inline std::vector<float> normal_values(std::size_t n, uint32_t seed, float sigma) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& e : v) e = nd(gen);
  return v;
}

// Uniformly random fp32 bit patterns: every exponent, NaNs with payloads, Infs, subnormals.
inline std::vector<float> random_bits(std::size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (auto& e : v) e = std::bit_cast<float>(static_cast<uint32_t>(gen()));
  return v;
}

}  // namespace quant_inputs
