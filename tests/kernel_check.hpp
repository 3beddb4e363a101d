// Helpers shared by the dequant_reduce kernel tests (test_kernels.cpp, test_kernels_fp4.cpp):
// the fp32 scale generator with its special values, the unaligned random inputs (Inputs), the (x, scales, out)
// combination and its label, and the first differing output element of two runs.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/dequant_reduce.hpp"
#include "oracle.hpp"
#include "qcoll/dtype.hpp"

namespace kernel_check {

// fp32 scales: mostly "ordinary" magnitudes that push sums through the fp16/bf16 normal,
// subnormal and overflow ranges, plus (every fourth group) 0, -0, subnormals, huge, Inf, NaN.
inline float random_scale(std::mt19937& rng, std::size_t j) {
  static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00400000u, 0x7F7FFFFFu,
                                     0x7E800000u, 0xFE000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7FA00001u,
                                     0xFFC00000u, 0x3F800000u, 0x33800000u, 0x38800000u};
  if (j % 4 == 0) return oracle::bits_f32(special[(j / 4 + rng()) % 16]);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-40, 20);
  const float v = std::ldexp(mant(rng), ex(rng));
  return (rng() & 1) ? -v : v;
}

// "element 5: got 0x... want 0x..." for the first element (esize bytes) that differs.
inline std::string first_diff(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, std::size_t esize) {
  if (got.size() != want.size()) return "sizes differ";
  for (std::size_t i = 0; i < got.size(); i += esize) {
    if (std::memcmp(&got[i], &want[i], esize) != 0) {
      uint32_t g = 0, w = 0;
      std::memcpy(&g, &got[i], esize);
      std::memcpy(&w, &want[i], esize);
      char buf[128];
      std::snprintf(buf, sizeof buf, "element %zu: got 0x%08X want 0x%08X", i / esize, g, w);
      return buf;
    }
  }
  return "identical";
}

struct Combo {
  qcoll::DType x, s, o;
};

inline std::string label(const Combo& c, int n, std::size_t count) {
  return std::string(qcoll::dtype_name(c.x)) + "/" + std::string(qcoll::dtype_name(c.s)) + "->" +
         std::string(qcoll::dtype_name(c.o)) + " n=" + std::to_string(n) + " count=" + std::to_string(count);
}

// Owns n sources of `count` elements of x (count bytes; count / 2 packed bytes for the 4-bit
// dtypes) and their scales (E8M0 extremes 2^-127, 2^127, NaN, 1, 2^-126, 2 among random
// bytes; fp32 from random_scale), each placed at an odd offset (1) inside its buffer so
// that no pointer is aligned.
struct Inputs {
  std::vector<std::vector<uint8_t>> xbuf, sbuf;
  std::vector<const uint8_t*> x, s;
  qcoll::kernels::ReduceArgs args;

  Inputs(qcoll::DType xt, qcoll::DType st, qcoll::DType ot, int n, std::size_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    const std::size_t g = oracle::group_size(st);
    const std::size_t sbytes = st == qcoll::DType::Float ? 4 : 1;
    const bool fp4 = qcoll::is_4bit_format(xt);
    const std::size_t xbytes = fp4 ? count / 2 : count;
    for (int k = 0; k < n; ++k) {
      std::vector<uint8_t> xb(xbytes + 1), sb(count / g * sbytes + 1);
      for (std::size_t i = 0; i < xbytes; ++i) xb[1 + i] = static_cast<uint8_t>(rng());
      // 8-bit: every code appears, a rotated 0..255 run at the start when there is room.
      if (!fp4) {
        for (std::size_t i = 0; i < std::min<std::size_t>(count, 256); ++i)
          xb[1 + i] = static_cast<uint8_t>(i + 37 * k);
      }
      for (std::size_t j = 0; j < count / g; ++j) {
        if (st == qcoll::DType::Float) {
          const float v = random_scale(rng, j + k);
          std::memcpy(&sb[1 + 4 * j], &v, 4);
        } else {
          static const uint8_t special[] = {0x00, 0xFE, 0xFF, 0x7F, 0x01, 0x80};
          sb[1 + j] = (j + k) % 3 == 0 ? special[(j / 3 + k) % 6] : static_cast<uint8_t>(rng());
        }
      }
      xbuf.push_back(std::move(xb));
      sbuf.push_back(std::move(sb));
    }
    for (int k = 0; k < n; ++k) {
      x.push_back(xbuf[k].data() + 1);
      s.push_back(sbuf[k].data() + 1);
    }
    args.x_dtype = xt;
    args.scales_dtype = st;
    args.out_dtype = ot;
    args.nsrc = n;
    args.x = x.data();
    args.scales = s.data();
    args.count = count;
  }
};

}  // namespace kernel_check
