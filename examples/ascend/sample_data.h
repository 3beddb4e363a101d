// Data and expected results for the Ascend sample programs in this folder: each rank's x and
// scales, made from the rank and the position, and the result computed element by element
// the way the operators define it (contract.md §numerics: decode(x) * scale in fp32, summed
// over the ranks 0..n-1 in order, then cast). Plain C++, no qcoll header.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace sample {

// KG: INT8 x with one fp32 scale per 128 elements of a row.
inline int8_t kg_x(int rank, int64_t row, int64_t h) {
  return static_cast<int8_t>((row * 7 + h * 3 + rank * 11) % 255 - 127);
}
inline float kg_scale(int rank, int64_t row, int64_t g) {
  return std::ldexp(1.0f + ((row + g + rank) % 13) / 16.0f, -8);
}

// MX: FLOAT8_E4M3FN x (never the NaN codes 0x7F / 0xFF) with one E8M0 scale per 32 elements.
inline uint8_t mx_x(int rank, int64_t row, int64_t h) {
  const uint8_t b = static_cast<uint8_t>((row * 5 + h * 9 + rank * 17) % 256);
  return (b & 0x7F) == 0x7F ? 0x7E : b;
}
inline uint8_t mx_scale(int rank, int64_t row, int64_t g) {
  return static_cast<uint8_t>(120 + (row + 3 * g + rank) % 15);
}

inline float decode_e4m3(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const float v = e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(1.0f + m / 8.0f, e - 7);
  return (b & 0x80) ? -v : v;
}
inline float decode_e8m0(uint8_t b) { return std::ldexp(1.0f, b - 127); }

// fp32 -> bf16 bits, round to nearest even (the data here has no NaN).
inline uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// One element of the sum over n ranks, in rank order. `volatile` keeps the product and the
// sum two roundings whatever the compiler's contraction setting.
template <class Term>
float reduce(int n, Term term) {
  float acc = 0.0f;
  for (int k = 0; k < n; ++k) {
    volatile float d = term(k);
    acc = acc + d;
  }
  return acc;
}

inline float kg_term(int k, int64_t row, int64_t h) {
  return static_cast<float>(kg_x(k, row, h)) * kg_scale(k, row, h / 128);
}
inline float mx_term(int k, int64_t row, int64_t h) {
  return decode_e4m3(mx_x(k, row, h)) * decode_e8m0(mx_scale(k, row, h / 32));
}

}  // namespace sample
