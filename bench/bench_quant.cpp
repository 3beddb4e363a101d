// Quantizer throughput: one 1024 x 5120 tensor (the demo's per-rank size) in every mode.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "qcoll/formats.hpp"
#include "qcoll/quant.hpp"

namespace {

using qcoll::DType;
namespace qq = qcoll::quant;

constexpr std::size_t kRows = 1024, kH = 5120;

const std::vector<float>& input() {
  static const std::vector<float> x = [] {
    std::mt19937 gen(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> v(kRows * kH);
    for (auto& e : v) e = nd(gen);
    return v;
  }();
  return x;
}

const std::vector<uint16_t>& input_bf16() {
  static const std::vector<uint16_t> x = [] {
    std::vector<uint16_t> v(kRows * kH);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = qcoll::formats::encode_bfloat16(input()[i]);
    return v;
  }();
  return x;
}

void BM_QuantizeKg(benchmark::State& state, DType t, bool bf16) {
  std::vector<uint8_t> q(kRows * kH);
  std::vector<float> s(kRows * kH / 128);
  for (auto _ : state) {
    const bool ok = bf16 ? qq::quantize_kg_bf16(input_bf16().data(), kRows, kH, t, q.data(), s.data())
                         : qq::quantize_kg(input().data(), kRows, kH, t, q.data(), s.data());
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(q.data());
  }
  state.SetItemsProcessed(state.iterations() * kRows * kH);
}

void BM_QuantizeMx(benchmark::State& state, DType t, bool bf16) {
  std::vector<uint8_t> q(kRows * kH), s(kRows * kH / 32);
  for (auto _ : state) {
    const bool ok = bf16 ? qq::quantize_mx_bf16(input_bf16().data(), kRows, kH, t, q.data(), s.data())
                         : qq::quantize_mx(input().data(), kRows, kH, t, q.data(), s.data());
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(q.data());
  }
  state.SetItemsProcessed(state.iterations() * kRows * kH);
}

void BM_Dequantize(benchmark::State& state, DType t, DType st) {
  qq::QuantizedTensor qt;
  if (!qq::quantize(input().data(), kRows, kH, t, st, qt).ok()) state.SkipWithError("quantize");
  std::vector<float> out(kRows * kH);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        qq::dequantize(qt.q.data(), qt.scales_data(), kRows, kH, t, st, out.data()));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kRows * kH);
}

BENCHMARK_CAPTURE(BM_QuantizeKg, int8, DType::Int8, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_QuantizeKg, e4m3, DType::Float8E4M3FN, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_QuantizeKg, e5m2, DType::Float8E5M2, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_QuantizeKg, hif8, DType::HiFloat8, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_QuantizeKg, int8_bf16, DType::Int8, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_QuantizeMx, e4m3, DType::Float8E4M3FN, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_QuantizeMx, e5m2, DType::Float8E5M2, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_QuantizeMx, e4m3_bf16, DType::Float8E4M3FN, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Dequantize, kg_int8, DType::Int8, DType::Float)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Dequantize, mx_e4m3, DType::Float8E4M3FN, DType::Float8E8M0)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
