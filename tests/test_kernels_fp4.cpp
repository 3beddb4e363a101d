// Tests of the dequantize-and-reduce kernels for the packed 4-bit x dtypes of the extended
// contract (FLOAT4_E2M1, FLOAT4_E1M2; contract.md §ext-fp4, §ext-fp4-layout).
//  - An independent oracle: the codes taken from the packed bytes here (element i in the
//    low nibble of byte i / 2 for even i, the high nibble for odd i), decoded by the value
//    lists of tests/fp4_oracle.hpp, scaled and summed as tests/oracle.hpp does (volatile
//    fp32 operations, canonical NaN, fp16/bf16 rounding in double arithmetic).
//  - The scalar path against the oracle; every SIMD target this CPU runs (and
//    dequant_reduce itself) against the scalar path and the oracle; every code in every
//    lane and both nibble positions on every target; dequant_reduce_parallel with several
//    thread counts against the scalar path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fp4_oracle.hpp"
#include "kernel_check.hpp"
#include "kernels/dequant_reduce.hpp"
#include "oracle.hpp"

using qcoll::DType;
using qcoll::kernels::ReduceArgs;

namespace {

using kernel_check::Combo;
using kernel_check::first_diff;
using kernel_check::Inputs;
using kernel_check::label;

const fp4_oracle::Fp4& format_of(DType x) { return x == DType::Float4E2M1 ? fp4_oracle::kE2M1 : fp4_oracle::kE1M2; }

// Element i of a packed source, read by the layout rule (not by the library's fp4_get).
unsigned code_at(const uint8_t* packed, std::size_t i) {
  const uint8_t b = packed[i / 2];
  return i % 2 == 0 ? (b & 0x0Fu) : (b >> 4);
}

// The oracle: out = cast(((0 + d_0) + d_1) + ... + d_{n-1}), d_k = fp32(value) * fp32(scale).
std::vector<uint8_t> reference(const ReduceArgs& a) {
  const fp4_oracle::Fp4& f = format_of(a.x_dtype);
  const std::size_t osz = qcoll::dtype_size(a.out_dtype);
  std::vector<uint8_t> out(a.count * osz);
  for (std::size_t i = 0; i < a.count; ++i) {
    volatile float acc = 0.0f;
    for (int k = 0; k < a.nsrc; ++k) {
      volatile float d = fp4_oracle::value(f, code_at(a.x[k], i));
      d = d * oracle::scale_at(a.scales_dtype, a.scales[k], i);
      acc = acc + d;
    }
    oracle::store(a.out_dtype, acc, out.data() + i * osz);
  }
  return out;
}

std::vector<uint8_t> run(void (*fn)(const ReduceArgs&), ReduceArgs a) {
  std::vector<uint8_t> out(a.count * qcoll::dtype_size(a.out_dtype) + 2, 0xA5);
  a.out = out.data() + 1;  // unaligned output too
  fn(a);
  EXPECT_EQ(out.front(), 0xA5) << "wrote before the output";
  EXPECT_EQ(out.back(), 0xA5) << "wrote past the output";
  return {out.begin() + 1, out.end() - 1};
}

std::vector<uint8_t> run_on(const std::string& target, ReduceArgs a) {
  std::vector<uint8_t> out(a.count * qcoll::dtype_size(a.out_dtype) + 2, 0xA5);
  a.out = out.data() + 1;
  EXPECT_TRUE(qcoll::kernels::dequant_reduce_on_target(target, a)) << target;
  EXPECT_EQ(out.front(), 0xA5) << target << ": wrote before the output";
  EXPECT_EQ(out.back(), 0xA5) << target << ": wrote past the output";
  return {out.begin() + 1, out.end() - 1};
}

std::vector<Combo> all_combos() {
  std::vector<Combo> c;
  for (DType x : {DType::Float4E2M1, DType::Float4E1M2})
    for (DType s : {DType::Float, DType::Float8E8M0})
      for (DType o : {DType::Float, DType::Float16, DType::BFloat16}) c.push_back({x, s, o});
  return c;
}

const int kSources[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 33};

// Counts: one group, odd numbers of groups (the AVX-512 MX tail of one 32-group, the
// 4-vector steps of KG), and a longer run.
std::vector<std::size_t> counts_for(DType s) {
  if (s == DType::Float) return {128, 384, 1152};
  return {32, 96, 160, 1056};
}

// ---- The oracle itself, on the value lists ------------------------------------------

TEST(Fp4KernelOracle, ReadsTheLayout) {
  const uint8_t packed[] = {0x21, 0xF0};
  EXPECT_EQ(code_at(packed, 0), 0x1u);
  EXPECT_EQ(code_at(packed, 1), 0x2u);
  EXPECT_EQ(code_at(packed, 2), 0x0u);
  EXPECT_EQ(code_at(packed, 3), 0xFu);
  EXPECT_EQ(fp4_oracle::value(fp4_oracle::kE2M1, 0x7), 6.0f);
  EXPECT_EQ(fp4_oracle::value(fp4_oracle::kE2M1, 0xF), -6.0f);
  EXPECT_EQ(fp4_oracle::value(fp4_oracle::kE1M2, 0x1), 0.25f);
  EXPECT_EQ(fp4_oracle::value(fp4_oracle::kE1M2, 0xE), -1.5f);
}

// ---- Arguments ----------------------------------------------------------------------

TEST(Fp4Kernel, ArgumentsAccepted) {
  std::vector<uint8_t> x(64, 0), sc(16, 0);
  const uint8_t* xp = x.data();
  const uint8_t* sp = sc.data();
  std::vector<float> out(128);
  for (DType xt : {DType::Float4E2M1, DType::Float4E1M2}) {
    for (DType st : {DType::Float, DType::Float8E8M0}) {
      const ReduceArgs a{xt, st, DType::Float, 1, &xp, &sp, 128, out.data()};
      EXPECT_EQ(qcoll::kernels::check_reduce_args(a), "") << qcoll::dtype_name(xt) << "/" << qcoll::dtype_name(st);
    }
    ReduceArgs bad{xt, DType::Float8E8M0, DType::Float, 1, &xp, &sp, 48, out.data()};
    EXPECT_EQ(qcoll::kernels::check_reduce_args(bad), "count: must be a multiple of the group size 32, got 48");
  }
  ReduceArgs bad{DType::Float16, DType::Float, DType::Float, 1, &xp, &sp, 128, out.data()};
  const std::string err = qcoll::kernels::check_reduce_args(bad);
  EXPECT_NE(err.find("x_dtype: must be"), std::string::npos) << err;
  EXPECT_NE(err.find("float4_e2m1"), std::string::npos) << err;
  EXPECT_NE(err.find("float4_e1m2"), std::string::npos) << err;
}

// ---- Every code, every lane, both nibbles ------------------------------------------

// Source k, element i holds code (i + shift + 5k) % 16: over the 16 shifts every code
// visits every element (so every lane of every vector width, and both nibble positions).
// Scale 1 (fp32 and E8M0 0x7F): the output is the exact sum of the decoded values.
TEST(Fp4Kernel, EveryCodeInEveryLaneOnEveryTarget) {
  std::vector<std::string> paths = qcoll::kernels::dequant_reduce_simd_targets();
  ASSERT_FALSE(paths.empty());
  std::string names;
  for (const std::string& t : paths) names += " " + t;
  std::printf("SIMD targets:%s\n", names.c_str());
  for (DType xt : {DType::Float4E2M1, DType::Float4E1M2}) {
    for (DType st : {DType::Float, DType::Float8E8M0}) {
      for (int n : {1, 2, 3}) {
        constexpr std::size_t kCount = 256;
        const std::size_t g = oracle::group_size(st);
        for (unsigned shift = 0; shift < 16; ++shift) {
          std::vector<std::vector<uint8_t>> xb(n, std::vector<uint8_t>(kCount / 2));
          std::vector<std::vector<uint8_t>> sb(n);
          std::vector<const uint8_t*> xp, sp;
          for (int k = 0; k < n; ++k) {
            for (std::size_t i = 0; i < kCount; ++i) {
              const auto c = static_cast<uint8_t>((i + shift + 5 * k) % 16);
              xb[k][i / 2] |= static_cast<uint8_t>(i % 2 == 0 ? c : c << 4);
            }
            if (st == DType::Float) {
              const float one = 1.0f;
              sb[k].resize(4 * kCount / g);
              for (std::size_t j = 0; j < kCount / g; ++j) std::memcpy(&sb[k][4 * j], &one, 4);
            } else {
              sb[k].assign(kCount / g, 0x7F);
            }
            xp.push_back(xb[k].data());
            sp.push_back(sb[k].data());
          }
          const ReduceArgs a{xt, st, DType::Float, n, xp.data(), sp.data(), kCount, nullptr};
          const auto want = reference(a);
          // The decode written out: one source, 0 + value (so -0 is +0).
          if (n == 1) {
            for (std::size_t i = 0; i < kCount; ++i) {
              const float v = fp4_oracle::value(format_of(xt), (i + shift) % 16) + 0.0f;
              uint32_t w;
              std::memcpy(&w, &want[4 * i], 4);
              ASSERT_EQ(w, oracle::f32_bits(v)) << "oracle, element " << i;
            }
          }
          const std::string what = std::string(qcoll::dtype_name(xt)) + "/" + std::string(qcoll::dtype_name(st)) +
                                   " n=" + std::to_string(n) + " shift=" + std::to_string(shift);
          const auto scalar = run(qcoll::kernels::dequant_reduce_scalar, a);
          ASSERT_EQ(scalar, want) << "scalar " << what << ": " << first_diff(scalar, want, 4);
          for (const std::string& t : paths) {
            const auto got = run_on(t, a);
            ASSERT_EQ(got, want) << t << " " << what << ": " << first_diff(got, want, 4);
          }
        }
      }
    }
  }
}

// ---- Random data --------------------------------------------------------------------

TEST(Fp4Kernel, ScalarMatchesOracle) {
  uint32_t seed = 1;
  for (const Combo& c : all_combos()) {
    for (int n : kSources) {
      for (std::size_t count : counts_for(c.s)) {
        Inputs in(c.x, c.s, c.o, n, count, seed++);
        const auto want = reference(in.args);
        const auto got = run(qcoll::kernels::dequant_reduce_scalar, in.args);
        ASSERT_EQ(got, want) << label(c, n, count) << ": " << first_diff(got, want, qcoll::dtype_size(c.o));
      }
    }
  }
}

TEST(Fp4Kernel, EveryTargetMatchesScalarAndOracle) {
  const std::vector<std::string> paths = qcoll::kernels::dequant_reduce_simd_targets();
  ASSERT_FALSE(paths.empty());
  uint32_t seed = 1000;
  for (const Combo& c : all_combos()) {
    for (int n : kSources) {
      for (std::size_t count : counts_for(c.s)) {
        Inputs in(c.x, c.s, c.o, n, count, seed++);
        const auto want = run(qcoll::kernels::dequant_reduce_scalar, in.args);
        const auto oracle_out = reference(in.args);
        ASSERT_EQ(want, oracle_out) << "scalar " << label(c, n, count);
        for (const std::string& t : paths) {
          const auto got = run_on(t, in.args);
          ASSERT_EQ(got, want) << t << " " << label(c, n, count) << ": "
                               << first_diff(got, want, qcoll::dtype_size(c.o));
        }
        const auto best = run(qcoll::kernels::dequant_reduce, in.args);
        ASSERT_EQ(best, want) << "dequant_reduce (" << qcoll::kernels::dequant_reduce_target() << ") "
                              << label(c, n, count);
      }
    }
  }
}

// ---- Parallel path -------------------------------------------------------------------

void run_parallel(int nthreads, ReduceArgs a) { qcoll::kernels::dequant_reduce_parallel(a, nthreads); }

TEST(Fp4Kernel, ParallelMatchesScalar) {
  uint32_t seed = 5000;
  for (const Combo& c : all_combos()) {
    for (int n : {1, 3, 8}) {
      // Odd numbers of groups and of 64-byte x steps, so parts end mid-way.
      for (std::size_t count : {oracle::group_size(c.s) * 37, oracle::group_size(c.s) * 3, std::size_t{0}}) {
        Inputs in(c.x, c.s, c.o, n, count, seed++);
        const auto want = run(qcoll::kernels::dequant_reduce_scalar, in.args);
        for (int threads : {1, 2, 3, 4, 7}) {
          std::vector<uint8_t> out(count * qcoll::dtype_size(c.o) + 2, 0xA5);
          ReduceArgs a = in.args;
          a.out = out.data() + 1;
          run_parallel(threads, a);
          EXPECT_EQ(out.front(), 0xA5);
          EXPECT_EQ(out.back(), 0xA5);
          const std::vector<uint8_t> got(out.begin() + 1, out.end() - 1);
          ASSERT_EQ(got, want) << "threads=" << threads << " " << label(c, n, count) << ": "
                               << first_diff(got, want, qcoll::dtype_size(c.o));
        }
      }
    }
  }
}

}  // namespace
