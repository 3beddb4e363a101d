// Throughput of the format encoders and decoders on 1 Mi values (ns per value =
// 1e9 / items_per_second). Inputs: Gaussian values scaled into each format's range.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "qcoll/formats.hpp"

namespace f = qcoll::formats;

namespace {

constexpr size_t kN = size_t{1} << 20;

const std::vector<float>& inputs(float scale) {
  static std::vector<float> base = [] {
    std::mt19937 rng(1);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> v(kN);
    for (auto& x : v) x = g(rng);
    return v;
  }();
  static thread_local std::vector<float> scaled;
  scaled.resize(kN);
  for (size_t i = 0; i < kN; ++i) scaled[i] = base[i] * scale;
  return scaled;
}

template <class Enc>
void run_encode(benchmark::State& state, float scale, Enc enc) {
  const std::vector<float> in = inputs(scale);
  std::vector<uint16_t> out(kN);
  for (auto _ : state) {
    for (size_t i = 0; i < kN; ++i) out[i] = enc(in[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kN));
}

void BM_EncodeE4M3FN_Saturating(benchmark::State& s) {
  run_encode(s, 100.0f, [](float v) { return f::encode_float8_e4m3fn(v, f::Saturation::Saturating); });
}
void BM_EncodeE5M2_Saturating(benchmark::State& s) {
  run_encode(s, 10000.0f, [](float v) { return f::encode_float8_e5m2(v, f::Saturation::Saturating); });
}
void BM_EncodeHiF8_Saturating(benchmark::State& s) {
  run_encode(s, 1000.0f, [](float v) { return f::encode_hifloat8(v, f::Saturation::Saturating); });
}
void BM_EncodeInt8(benchmark::State& s) {
  run_encode(s, 40.0f, [](float v) { return f::encode_int8(v); });
}
void BM_EncodeE8M0(benchmark::State& s) {
  run_encode(s, 1.0f, [](float v) { return f::encode_float8_e8m0(v); });
}
void BM_EncodeFloat16(benchmark::State& s) {
  run_encode(s, 1000.0f, [](float v) { return f::encode_float16(v); });
}
#ifdef __FLT16_MAX__
// The compiler's conversion (libgcc or F16C, whichever the build targets), for comparison.
void BM_EncodeFloat16_Compiler(benchmark::State& s) {
  run_encode(s, 1000.0f, [](float v) {
    const _Float16 h = static_cast<_Float16>(v);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
  });
}
BENCHMARK(BM_EncodeFloat16_Compiler);
#endif
void BM_EncodeBFloat16(benchmark::State& s) {
  run_encode(s, 1000.0f, [](float v) { return f::encode_bfloat16(v); });
}

void BM_DecodeHiF8_Table(benchmark::State& state) {
  std::vector<uint8_t> in(kN);
  std::mt19937 rng(2);
  for (auto& b : in) b = static_cast<uint8_t>(rng());
  std::vector<float> out(kN);
  const float* table = f::decode_table(qcoll::DType::HiFloat8);
  for (auto _ : state) {
    for (size_t i = 0; i < kN; ++i) out[i] = table[in[i]];
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kN));
}
void BM_DecodeHiF8_Function(benchmark::State& state) {
  std::vector<uint8_t> in(kN);
  std::mt19937 rng(2);
  for (auto& b : in) b = static_cast<uint8_t>(rng());
  std::vector<float> out(kN);
  for (auto _ : state) {
    for (size_t i = 0; i < kN; ++i) out[i] = f::decode_hifloat8(in[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kN));
}

}  // namespace

BENCHMARK(BM_EncodeE4M3FN_Saturating);
BENCHMARK(BM_EncodeE5M2_Saturating);
BENCHMARK(BM_EncodeHiF8_Saturating);
BENCHMARK(BM_EncodeInt8);
BENCHMARK(BM_EncodeE8M0);
BENCHMARK(BM_EncodeFloat16);
BENCHMARK(BM_EncodeBFloat16);
BENCHMARK(BM_DecodeHiF8_Table);
BENCHMARK(BM_DecodeHiF8_Function);
BENCHMARK_MAIN();
