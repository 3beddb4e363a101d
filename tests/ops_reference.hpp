// What the operator tests against a reference share (test_ops_numerics.cpp, test_ops_fp4.cpp).
//
// fill_special_scales: the scales of their inputs: fp32
// scales per 128 elements, random in [2^-10, 2^11) with specials by group (an fp32 subnormal,
// 0, a negative, and 2^huge_exponent, large enough to overflow the sum), or E8M0 scales per
// 32 elements around 2^-15 .. 2^16 with the specials 0x00, 0xFE, NaN 0xFF, 0x01 and 0x7F at
// places that move with the rank k. Drawn from the caller's generator, after its x.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "ops_harness.hpp"
#include "oracle.hpp"
#include "qcoll/dtype.hpp"

namespace ops_reference {

inline void fill_special_scales(std::mt19937& rng, qcoll::DType scales_dtype, std::size_t elements, int k,
                                int huge_exponent, std::vector<uint8_t>& scales) {
  if (scales_dtype == qcoll::DType::Float) {
    const std::size_t ng = elements / 128;
    scales.resize(ng * 4);
    for (std::size_t g = 0; g < ng; ++g) {
      float s = std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 1000.0f, static_cast<int>(rng() % 21) - 10);
      switch ((g + static_cast<std::size_t>(k)) % 11) {
        case 3:
          s = 1e-40f;  // an fp32 subnormal scale
          break;
        case 5:
          s = 0.0f;
          break;
        case 7:
          s = -s;
          break;
        case 9:
          s = std::ldexp(1.0f, huge_exponent);
          break;
        default:
          break;
      }
      std::memcpy(scales.data() + g * 4, &s, 4);
    }
    return;
  }
  const std::size_t ng = elements / 32;
  scales.resize(ng);
  for (std::size_t g = 0; g < ng; ++g) scales[g] = static_cast<uint8_t>(0x70 + rng() % 32);
  const uint8_t specials[] = {0x00, 0xFE, 0xFF, 0x01, 0x7F};
  for (std::size_t i = 0; i < 5; ++i) scales[(7 * i + static_cast<std::size_t>(k)) % ng] = specials[i];
}

// Rank r's output of op (out_rows x H elements of odt, osz bytes each) against the whole
// reduction `full` (every row, in odt): reduce-scatter rank r holds row block r, all-reduce
// every row; NaN matches any NaN (oracle::same_result). The first three differences are named.
inline void expect_rank_output(harness::Op op, int r, const std::vector<uint8_t>& out, const std::vector<uint8_t>& full,
                               std::size_t out_rows, std::size_t H, qcoll::DType odt, std::size_t osz) {
  const std::size_t row0 = op == harness::Op::ReduceScatter ? static_cast<std::size_t>(r) * out_rows : 0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < out_rows * H; ++i) {
    const uint8_t* want = full.data() + (row0 * H + i) * osz;
    if (!oracle::same_result(odt, out.data() + i * osz, want) && bad++ < 3) {
      ADD_FAILURE() << "rank " << r << " element " << i << " differs from the reference";
    }
  }
  EXPECT_EQ(bad, 0u) << "rank " << r;
}

}  // namespace ops_reference
