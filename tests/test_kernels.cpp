// Tests of the dequantize-and-reduce kernels.
//  - The scalar path against the oracle (tests/oracle.hpp, from contract.md §formats, §numerics: decode by
//    formula, fp16/bf16 rounding in double arithmetic), bits compared exactly. NaN
//    results must be the canonical NaN of dequant_reduce.hpp (fp32 0x7FC00000, fp16
//    0x7E00, bf16 0x7FC0): exact bits, no "both NaN" leniency.
//  - Every SIMD target this CPU runs (and dequant_reduce itself) against the scalar path.
//  - dequant_reduce_parallel against dequant_reduce.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernel_check.hpp"
#include "kernels/dequant_reduce.hpp"
#include "oracle.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

using qcoll::DType;
using qcoll::kernels::ReduceArgs;

namespace {

using kernel_check::Combo;
using kernel_check::first_diff;
using kernel_check::Inputs;
using kernel_check::label;

// ---- Independent reference: tests/oracle.hpp -------------------------------------------

using oracle::bits_f32;
using oracle::f32_bits;

// Reference output bytes for the inputs (canonical NaN bits, like the kernels).
std::vector<uint8_t> reference(const ReduceArgs& a) {
  std::vector<uint8_t> out(a.count * qcoll::dtype_size(a.out_dtype));
  oracle::reduce(a.x_dtype, a.scales_dtype, a.out_dtype, a.x, a.scales, static_cast<std::size_t>(a.nsrc), 0, a.count,
                 out.data());
  return out;
}

// ---- Inputs -----------------------------------------------------------------------

std::vector<uint8_t> run(void (*fn)(const ReduceArgs&), ReduceArgs a) {
  std::vector<uint8_t> out(a.count * qcoll::dtype_size(a.out_dtype) + 1, 0xA5);
  a.out = out.data() + 1;  // unaligned output too
  fn(a);
  EXPECT_EQ(out[0], 0xA5) << "wrote before the output";
  return {out.begin() + 1, out.end()};
}

std::vector<Combo> all_combos() {
  std::vector<Combo> c;
  for (DType x : {DType::Int8, DType::HiFloat8, DType::Float8E4M3FN, DType::Float8E5M2})
    for (DType s : {DType::Float, DType::Float8E8M0})
      for (DType o : {DType::Float, DType::Float16, DType::BFloat16}) c.push_back({x, s, o});
  return c;
}

const int kSources[] = {1, 2, 3, 4, 8};

// ---- Reference self-checks (the reference against contract.md §vectors)----------------

TEST(KernelReference, MatchesSpecVectors) {
  EXPECT_EQ(oracle::decode_f(DType::Float8E4M3FN, 0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(oracle::decode_f(DType::Float8E4M3FN, 0x07), 0.013671875f);
  EXPECT_EQ(oracle::decode_f(DType::Float8E4M3FN, 0x7E), 448.0f);
  EXPECT_EQ(oracle::decode_f(DType::Float8E4M3FN, 0xB8), -1.0f);
  EXPECT_TRUE(std::isnan(oracle::decode_f(DType::Float8E4M3FN, 0xFF)));
  EXPECT_EQ(oracle::decode_f(DType::Float8E5M2, 0x03), 3 * std::ldexp(1.0f, -16));
  EXPECT_EQ(oracle::decode_f(DType::Float8E5M2, 0x7B), 57344.0f);
  EXPECT_EQ(oracle::decode_f(DType::Float8E5M2, 0xFC), -HUGE_VALF);
  EXPECT_TRUE(std::isnan(oracle::decode_f(DType::Float8E5M2, 0x7D)));
  EXPECT_EQ(oracle::decode_f(DType::Float8E8M0, 0x00), std::ldexp(1.0f, -127));
  EXPECT_EQ(oracle::decode_f(DType::Float8E8M0, 0xFE), std::ldexp(1.0f, 127));
  const std::pair<uint8_t, float> hif8[] = {{0x08, 1.0f},
                                            {0x09, 1.125f},
                                            {0x10, 2.0f},
                                            {0x18, 0.5f},
                                            {0x20, 4.0f},
                                            {0x2F, 15.0f},
                                            {0x40, 16.0f},
                                            {0x4F, 224.f},
                                            {0x60, 256.f},
                                            {0x61, 384.f},
                                            {0x70, 0x1p-8f},
                                            {0x7E, 0x1p-15f},
                                            {0x7F, 1.5f * 0x1p-15f},
                                            {0x01, 0x1p-22f},
                                            {0x07, 0x1p-16f},
                                            {0x88, -1.0f},
                                            {0x6E, 32768.f}};
  for (auto [b, v] : hif8) EXPECT_EQ(oracle::decode_f(DType::HiFloat8, b), v) << int(b);
  EXPECT_EQ(oracle::decode_f(DType::HiFloat8, 0x6F), HUGE_VALF);
  // Rounding helpers, on textbook values.
  EXPECT_EQ(oracle::to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(oracle::to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(oracle::to_fp16(65519.99f), 0x7BFF);
  EXPECT_EQ(oracle::to_fp16(65520.0f), 0x7C00);
  EXPECT_EQ(oracle::to_fp16(0x1p-24f), 0x0001);
  EXPECT_EQ(oracle::to_fp16(0x1p-25f), 0x0000);      // tie to even (0)
  EXPECT_EQ(oracle::to_fp16(3 * 0x1p-25f), 0x0002);  // tie to even (2)
  EXPECT_EQ(oracle::to_fp16(-0x1p-14f), 0x8400);
  EXPECT_EQ(oracle::to_fp16(1.0f + 0x1p-11f), 0x3C00);  // tie to even
  EXPECT_EQ(oracle::to_fp16(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(oracle::to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(oracle::to_bf16(bits_f32(0x3F808000u)), 0x3F80);  // tie to even
  EXPECT_EQ(oracle::to_bf16(bits_f32(0x3F818000u)), 0x3F82);
  EXPECT_EQ(oracle::to_bf16(bits_f32(0x7F7FFFFFu)), 0x7F80);  // rounds up to Inf
  EXPECT_EQ(oracle::to_bf16(bits_f32(0x00000001u)), 0x0000);
  EXPECT_EQ(oracle::to_bf16(bits_f32(0x80008000u)), 0x8000);  // tie to even (0)
  EXPECT_EQ(oracle::to_bf16(bits_f32(0x80018000u)), 0x8002);
}

// ---- Scalar path -------------------------------------------------------------------

TEST(ScalarKernel, MatchesIndependentReference) {
  uint32_t seed = 1;
  for (const Combo& c : all_combos()) {
    for (int n : kSources) {
      for (std::size_t count : {std::size_t{128}, std::size_t{384}, std::size_t{4096 + 128}}) {
        Inputs in(c.x, c.s, c.o, n, count, seed++);
        const auto want = reference(in.args);
        const auto got = run(qcoll::kernels::dequant_reduce_scalar, in.args);
        ASSERT_EQ(got, want) << label(c, n, count) << ": " << first_diff(got, want, qcoll::dtype_size(c.o));
      }
    }
  }
}

// One source, scale 1.0, fp32 out: the output is exactly the decoded code.
TEST(ScalarKernel, DecodesEveryCode) {
  for (DType x : {DType::Int8, DType::HiFloat8, DType::Float8E4M3FN, DType::Float8E5M2}) {
    std::vector<uint8_t> codes(256);
    for (int i = 0; i < 256; ++i) codes[i] = static_cast<uint8_t>(i);
    const float one = 1.0f;
    std::vector<uint8_t> sc(2 * 4);
    std::memcpy(&sc[0], &one, 4);
    std::memcpy(&sc[4], &one, 4);
    const uint8_t* xp = codes.data();
    const uint8_t* sp = sc.data();
    std::vector<float> out(256);
    ReduceArgs a{x, DType::Float, DType::Float, 1, &xp, &sp, 256, out.data()};
    qcoll::kernels::dequant_reduce_scalar(a);
    for (int i = 0; i < 256; ++i) {
      const float want = oracle::decode_f(x, static_cast<uint8_t>(i));
      // 0 + (-0) is +0, and NaN is canonical.
      const uint32_t wb = std::isnan(want) ? 0x7FC00000u : f32_bits(want + 0.0f);
      EXPECT_EQ(f32_bits(out[i]), wb) << qcoll::dtype_name(x) << " code " << i;
    }
  }
}

// INT8 code 1 with scale s gives cast(0 + s): the output casts (NaN canonicalization,
// bf16/fp16 rounding ties, overflow, subnormals) on chosen values, one group each.
struct CastEdgeInputs {
  static constexpr uint32_t kValues[] = {0x80000000u /* -0 -> +0 */,
                                         0x477FF000u /* 65520 */,
                                         0x477FEFFFu,
                                         0x33000000u /* 2^-25 */,
                                         0x33400000u,
                                         0x387FE000u,
                                         0x7F7FFFFFu,
                                         0x3F808000u,
                                         0x3F818000u,
                                         0x00000001u,
                                         0x7F800000u,
                                         0xFF800000u,
                                         0xFFC00001u,
                                         0x7F800001u,
                                         0xC77FF000u,
                                         0x38000000u,
                                         0x00008000u,
                                         0x00018000u,
                                         0x807F8000u,
                                         0x7F7F8000u,
                                         0xFF7F8000u,
                                         0x3F7FFFFFu,
                                         0x33800000u,
                                         0xB3C00000u};
  static constexpr std::size_t count = 128 * (sizeof kValues / sizeof kValues[0]);
  std::vector<uint8_t> x = std::vector<uint8_t>(count, 1), sc = std::vector<uint8_t>(4 * count / 128);
  const uint8_t* xp = x.data();
  const uint8_t* sp = nullptr;
  CastEdgeInputs() {
    for (std::size_t j = 0; j < count / 128; ++j) std::memcpy(&sc[4 * j], &kValues[j], 4);
    sp = sc.data();
  }
  ReduceArgs args(DType o) const { return {DType::Int8, DType::Float, o, 1, &xp, &sp, count, nullptr}; }
};

TEST(ScalarKernel, OutputCastEdgeValues) {
  const CastEdgeInputs in;
  for (DType o : {DType::Float, DType::Float16, DType::BFloat16}) {
    const ReduceArgs a = in.args(o);
    const auto want = reference(a);
    const auto got = run(qcoll::kernels::dequant_reduce_scalar, a);
    EXPECT_EQ(got, want) << qcoll::dtype_name(o) << ": " << first_diff(got, want, qcoll::dtype_size(o));
  }
  // Spot values written out: 0 + (-0) = +0; 65520 -> fp16 Inf; NaN canonical.
  const ReduceArgs a = in.args(DType::Float16);
  const auto got = run(qcoll::kernels::dequant_reduce_scalar, a);
  auto at = [&](std::size_t j) {
    uint16_t h;
    std::memcpy(&h, &got[2 * 128 * j], 2);
    return h;
  };
  EXPECT_EQ(at(0), 0x0000);
  EXPECT_EQ(at(1), 0x7C00);
  EXPECT_EQ(at(2), 0x7BFF);
  EXPECT_EQ(at(3), 0x0000);
  EXPECT_EQ(at(4), 0x0001);
  EXPECT_EQ(at(12), 0x7E00);
  EXPECT_EQ(at(13), 0x7E00);
}

TEST(ScalarKernel, BadArgumentsThrowBeforeWriting) {
  std::vector<uint8_t> x(256, 0), sc(8, 0);
  const uint8_t* xp = x.data();
  const uint8_t* sp = sc.data();
  std::vector<uint8_t> out(1024, 0xEE);
  auto expect_throw = [&](ReduceArgs a, const std::string& needle) {
    for (auto fn : {qcoll::kernels::dequant_reduce_scalar, qcoll::kernels::dequant_reduce}) {
      try {
        fn(a);
        ADD_FAILURE() << "no throw for " << needle;
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(out, std::vector<uint8_t>(1024, 0xEE));
  };
  const ReduceArgs ok{DType::Int8, DType::Float, DType::Float, 1, &xp, &sp, 256, out.data()};
  EXPECT_EQ(qcoll::kernels::check_reduce_args(ok), "");
  ReduceArgs a = ok;
  a.count = 100;
  expect_throw(a, "count: must be a multiple of the group size 128, got 100");
  a = ok;
  a.nsrc = 0;
  expect_throw(a, "nsrc");
  a = ok;
  a.x_dtype = DType::Float16;
  expect_throw(a, "x_dtype");
  a = ok;
  a.scales_dtype = DType::Int8;
  expect_throw(a, "scales_dtype");
  a = ok;
  a.out_dtype = DType::Int8;
  expect_throw(a, "out_dtype");
  a = ok;
  a.x = nullptr;
  expect_throw(a, "x: must not be null");
  a = ok;
  a.out = nullptr;
  expect_throw(a, "out: must not be null");
  a = ok;
  EXPECT_FALSE(qcoll::kernels::dequant_reduce_on_target("NO_SUCH_TARGET", a));
}

// ---- SIMD paths == scalar ----------------------------------------------------------

void expect_same_as_scalar(const std::string& target) {
  uint32_t seed = 1000;
  for (const Combo& c : all_combos()) {
    for (int n : {1, 2, 3, 4, 8, 17}) {  // 17: more sources than the kernels' fixed buffers
      // MX counts that are not a multiple of 64 end in a half step (AVX-512: 64 per step).
      for (std::size_t count : {std::size_t{32}, std::size_t{96}, std::size_t{128}, std::size_t{384},
                                std::size_t{4096 + 128}, std::size_t{32 * 37}, std::size_t{128 * 37}}) {
        if (count % oracle::group_size(c.s) != 0) continue;
        Inputs in(c.x, c.s, c.o, n, count, seed++);
        const auto want = run(qcoll::kernels::dequant_reduce_scalar, in.args);
        std::vector<uint8_t> out(count * qcoll::dtype_size(c.o) + 1, 0xA5);
        ReduceArgs a = in.args;
        a.out = out.data() + 1;
        if (target.empty()) {
          qcoll::kernels::dequant_reduce(a);
        } else {
          ASSERT_TRUE(qcoll::kernels::dequant_reduce_on_target(target, a)) << target;
        }
        EXPECT_EQ(out[0], 0xA5);
        const std::vector<uint8_t> got(out.begin() + 1, out.end());
        ASSERT_EQ(got, want) << (target.empty() ? "dispatch" : target) << " " << label(c, n, count) << ": "
                             << first_diff(got, want, qcoll::dtype_size(c.o));
      }
    }
  }
}

TEST(SimdKernel, DispatchMatchesScalar) {
  std::printf("dequant_reduce target: %s\n", qcoll::kernels::dequant_reduce_target());
  expect_same_as_scalar("");
}

TEST(SimdKernel, EveryTargetMatchesScalar) {
  const auto targets = qcoll::kernels::dequant_reduce_simd_targets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.front(), qcoll::kernels::dequant_reduce_target());
  for (const std::string& t : targets) {
    SCOPED_TRACE(t);
    std::printf("target %s\n", t.c_str());
    expect_same_as_scalar(t);
  }
}

// Every x code in every lane position class, against every edge scale (fp32) or every
// E8M0 scale code, for every output and several n, on every target: SIMD == scalar ==
// the independent reference. Sources sit at different misalignments.
struct Exhaustive {
  std::vector<std::vector<uint8_t>> xbuf, sbuf;
  std::vector<const uint8_t*> x, s;
  ReduceArgs args;

  // fp32 scales: zeros, subnormals, normal limits, the E4M3 fold boundary (s * 2^8
  // overflows from 2^120 up), infinities, quiet/signalling/negative NaN, ordinary values.
  static constexpr uint32_t kEdgeScales[16] = {
      0x3F800000u, 0xBF800000u, 0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00800000u, 0x7F7FFFFFu,
      0x7B800000u, 0x7B7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7FA00001u, 0xFFC00000u, 0x3DCCCCCDu};

  Exhaustive(DType xt, DType st, DType ot, int n) {
    const bool mx = st == DType::Float8E8M0;
    const std::size_t g = oracle::group_size(st);
    // Blocks of 256 elements hold every code once; KG: 16 edge scales x 2 groups of 128;
    // MX: 256 scale codes x 8 groups of 32.
    const std::size_t count = mx ? 256 * 256 : 16 * 256;
    for (int k = 0; k < n; ++k) {
      const std::size_t off = 1 + 7 * static_cast<std::size_t>(k);  // 1, 8, 15, ...
      std::vector<uint8_t> xb(count + off), sb(count / g * (mx ? 1 : 4) + off);
      const std::size_t mul = 1 + 2 * static_cast<std::size_t>(k * 29 % 128);  // odd: a bijection
      for (std::size_t i = 0; i < count; ++i) {
        const std::size_t blk = i / 256;
        xb[off + i] = static_cast<uint8_t>((i + blk * 13) * mul + 41 * k);
      }
      for (std::size_t j = 0; j < count / g; ++j) {
        if (mx) {
          sb[off + j] = static_cast<uint8_t>(j / 8 + 31 * k);
        } else {
          const uint32_t b = kEdgeScales[(j / 2 + 5 * k) % 16];
          std::memcpy(&sb[off + 4 * j], &b, 4);
        }
      }
      xbuf.push_back(std::move(xb));
      sbuf.push_back(std::move(sb));
      x.push_back(xbuf.back().data() + off);
      s.push_back(sbuf.back().data() + off);
    }
    args = ReduceArgs{xt, st, ot, n, x.data(), s.data(), count, nullptr};
  }
};

TEST(SimdKernel, EveryCodeEveryScaleEveryTarget) {
  std::vector<std::string> targets = qcoll::kernels::dequant_reduce_simd_targets();
  targets.push_back("");  // dequant_reduce itself
  for (const Combo& c : all_combos()) {
    for (int n : {1, 2, 3, 8}) {
      Exhaustive in(c.x, c.s, c.o, n);
      const auto want = run(qcoll::kernels::dequant_reduce_scalar, in.args);
      if (n <= 2) {
        const auto ref = reference(in.args);
        ASSERT_EQ(want, ref) << "scalar " << label(c, n, in.args.count) << ": "
                             << first_diff(want, ref, qcoll::dtype_size(c.o));
      }
      for (const std::string& t : targets) {
        std::vector<uint8_t> out(want.size() + 3, 0xA5);
        ReduceArgs a = in.args;
        a.out = out.data() + 3;
        if (t.empty()) {
          qcoll::kernels::dequant_reduce(a);
        } else {
          ASSERT_TRUE(qcoll::kernels::dequant_reduce_on_target(t, a)) << t;
        }
        const std::vector<uint8_t> got(out.begin() + 3, out.end());
        ASSERT_EQ(got, want) << (t.empty() ? "dispatch" : t) << " " << label(c, n, in.args.count) << ": "
                             << first_diff(got, want, qcoll::dtype_size(c.o));
      }
    }
  }
}

// One source, scale 1.0, fp32 out, on every target: the output is exactly the decoded
// code (0 + value; NaN canonical), every code in every one of 64 lane positions.
TEST(SimdKernel, DecodesEveryCodeInEveryLane) {
  const std::size_t count = 256 * 64;
  std::vector<uint8_t> codes(count);
  // codes[i] = (i / 64 + i % 64) & 255: every code sits at every lane position i % 64.
  for (std::size_t i = 0; i < count; ++i) codes[i] = static_cast<uint8_t>(i / 64 + i % 64);
  const float one = 1.0f;
  std::vector<uint8_t> sc(4 * count / 128);
  for (std::size_t j = 0; j < count / 128; ++j) std::memcpy(&sc[4 * j], &one, 4);
  std::vector<uint8_t> e8(count / 32, 127);  // E8M0 127 = 1.0
  const uint8_t* xp = codes.data();
  for (const std::string& t : qcoll::kernels::dequant_reduce_simd_targets()) {
    for (DType x : {DType::Int8, DType::HiFloat8, DType::Float8E4M3FN, DType::Float8E5M2}) {
      for (DType st : {DType::Float, DType::Float8E8M0}) {
        const uint8_t* sp = st == DType::Float ? sc.data() : e8.data();
        std::vector<float> out(count);
        ReduceArgs a{x, st, DType::Float, 1, &xp, &sp, count, out.data()};
        ASSERT_TRUE(qcoll::kernels::dequant_reduce_on_target(t, a));
        for (std::size_t i = 0; i < count; ++i) {
          const float want = oracle::decode_f(x, codes[i]);
          const uint32_t wb = std::isnan(want) ? 0x7FC00000u : f32_bits(want + 0.0f);
          ASSERT_EQ(f32_bits(out[i]), wb)
              << t << " " << qcoll::dtype_name(x) << " code " << int(codes[i]) << " at lane " << i % 64;
        }
      }
    }
  }
}

// Sums of signed zeros: codes +-0 (INT8: 0) times scales +-1, +-0, for n up to 8, every
// lane pattern of signs; the sum starts at +0, so it is -0 never (SIMD == scalar == oracle).
TEST(SimdKernel, SignedZeroSumsEveryTarget) {
  std::mt19937 rng(7);
  for (DType x : {DType::Int8, DType::Float8E4M3FN, DType::Float8E5M2}) {
    for (int n : {1, 2, 3, 8}) {
      const std::size_t count = 128 * 8;
      std::vector<std::vector<uint8_t>> xb(n, std::vector<uint8_t>(count)), sb(n);
      std::vector<const uint8_t*> xp, sp;
      const uint32_t scales[4] = {0x3F800000u, 0xBF800000u, 0x00000000u, 0x80000000u};
      for (int k = 0; k < n; ++k) {
        for (auto& b : xb[k]) b = (rng() & 1) && x != DType::Int8 ? 0x80 : 0x00;
        sb[k].resize(4 * count / 128);
        for (std::size_t j = 0; j < count / 128; ++j) std::memcpy(&sb[k][4 * j], &scales[(j + k) % 4], 4);
        xp.push_back(xb[k].data());
        sp.push_back(sb[k].data());
      }
      for (DType o : {DType::Float, DType::Float16, DType::BFloat16}) {
        ReduceArgs a{x, DType::Float, o, n, xp.data(), sp.data(), count, nullptr};
        const auto want = reference(a);
        ASSERT_EQ(run(qcoll::kernels::dequant_reduce_scalar, a), want);
        for (const std::string& t : qcoll::kernels::dequant_reduce_simd_targets()) {
          std::vector<uint8_t> got(want.size());
          a.out = got.data();
          ASSERT_TRUE(qcoll::kernels::dequant_reduce_on_target(t, a));
          ASSERT_EQ(got, want) << t << " " << qcoll::dtype_name(x) << " n=" << n << " -> " << qcoll::dtype_name(o)
                               << ": " << first_diff(got, want, qcoll::dtype_size(o));
        }
      }
    }
  }
}

// The output-cast edge values on every target.
TEST(SimdKernel, OutputCastEdgeValuesEveryTarget) {
  const CastEdgeInputs in;
  for (const std::string& t : qcoll::kernels::dequant_reduce_simd_targets()) {
    for (DType o : {DType::Float, DType::Float16, DType::BFloat16}) {
      ReduceArgs a = in.args(o);
      const auto want = reference(a);
      std::vector<uint8_t> got(want.size());
      a.out = got.data();
      ASSERT_TRUE(qcoll::kernels::dequant_reduce_on_target(t, a));
      EXPECT_EQ(got, want) << t << " " << qcoll::dtype_name(o) << ": " << first_diff(got, want, qcoll::dtype_size(o));
    }
  }
}

// ---- Subnormals are kept even if the caller's thread flushes them ----------------------

#if defined(__x86_64__) || defined(__i386__)
TEST(KernelFloatEnv, CallerWithFlushToZeroStillGetsSubnormals) {
  EXPECT_EQ(_mm_getcsr() & 0x8040u, 0u) << "FTZ/DAZ already set in the test process";
  Inputs in(DType::Float8E4M3FN, DType::Float8E8M0, DType::Float, 2, 32 * 64, 99);
  // Scales 0x00 (2^-127, an fp32 subnormal) everywhere: products are subnormal or zero.
  for (auto& sb : in.sbuf) std::fill(sb.begin(), sb.end(), uint8_t{0x00});
  const auto want = reference(in.args);
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u);  // FTZ | DAZ on in this thread (and the pool's new threads)
  const auto scalar = run(qcoll::kernels::dequant_reduce_scalar, in.args);
  const auto simd = run(qcoll::kernels::dequant_reduce, in.args);
  std::vector<uint8_t> par(want.size());
  ReduceArgs a = in.args;
  a.out = par.data();
  qcoll::kernels::dequant_reduce_parallel(a, 3);
  const unsigned after = _mm_getcsr();
  _mm_setcsr(saved);
  // Control bits restored (the low 6 bits are sticky exception flags).
  EXPECT_EQ(after & ~0x3Fu, (saved | 0x8040u) & ~0x3Fu) << "the caller's setting must be restored";
  bool any_subnormal = false;
  for (std::size_t i = 0; i < want.size(); i += 4) {
    uint32_t b;
    std::memcpy(&b, &want[i], 4);
    any_subnormal |= (b & 0x7F800000u) == 0 && (b & 0x007FFFFFu) != 0;
  }
  EXPECT_TRUE(any_subnormal);
  EXPECT_EQ(scalar, want) << first_diff(scalar, want, 4);
  EXPECT_EQ(simd, want) << first_diff(simd, want, 4);
  EXPECT_EQ(par, want) << first_diff(par, want, 4);
}
#endif

// ---- Parallel == single thread ------------------------------------------------------

TEST(ParallelKernel, MatchesSingleThread) {
  uint32_t seed = 5000;
  for (const Combo& c : all_combos()) {
    for (int n : {1, 3, 8}) {
      for (std::size_t count : {std::size_t{128}, std::size_t{384}, std::size_t{128 * 37}, std::size_t{128 * 1000}}) {
        Inputs in(c.x, c.s, c.o, n, count, seed++);
        const auto want = run(qcoll::kernels::dequant_reduce, in.args);
        for (int threads : {0, 1, 2, 3, 4}) {
          std::vector<uint8_t> out(count * qcoll::dtype_size(c.o) + 1, 0xA5);
          ReduceArgs a = in.args;
          a.out = out.data() + 1;
          qcoll::kernels::dequant_reduce_parallel(a, threads);
          const std::vector<uint8_t> got(out.begin() + 1, out.end());
          ASSERT_EQ(got, want) << "threads=" << threads << " " << label(c, n, count) << ": "
                               << first_diff(got, want, qcoll::dtype_size(c.o));
        }
      }
    }
  }
}

TEST(ParallelKernel, ConcurrentCallersShareThePool) {
  Inputs in(DType::Float8E4M3FN, DType::Float8E8M0, DType::BFloat16, 4, 32 * 2000, 77);
  const auto want = run(qcoll::kernels::dequant_reduce, in.args);
  std::vector<std::thread> callers;
  std::vector<std::vector<uint8_t>> outs(4, std::vector<uint8_t>(want.size()));
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        ReduceArgs a = in.args;
        a.out = outs[t].data();
        qcoll::kernels::dequant_reduce_parallel(a, 3);
      }
    });
  }
  for (auto& th : callers) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(outs[t], want) << "caller " << t;
}

}  // namespace
