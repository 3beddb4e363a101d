// Dequantize-and-reduce kernel throughput against memcpy (the memory roofline).
//
// For each mode and n sources: count = 5120*512 elements per source (well beyond L2).
// Bytes touched per call: n * (count + scale bytes) + count * out_size; every benchmark
// reports that as bytes processed, so bytes/s compare directly:
//   kernel/<mode>/<out>/n:<n>/scalar     dequant_reduce_scalar
//   kernel/<mode>/<out>/n:<n>/simd       dequant_reduce (best SIMD target)
//   kernel/<mode>/<out>/n:<n>/threads:2  dequant_reduce_parallel with 2 threads
//   memcpy/<mode>/<out>/n:<n>            memcpy of half that many bytes (the other half is
//                                        the write), i.e. the same bytes touched
// Run: bench_kernels --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// and compare medians; scripts/bench_kernels_ratios.py prints the ratios from JSON output.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/dequant_reduce.hpp"

using qcoll::DType;
using qcoll::kernels::ReduceArgs;

namespace {

constexpr std::size_t kCount = 5120 * 512;
constexpr int kMaxSources = 8;

struct Mode {
  const char* name;
  DType x, scales;
};

// Realistic data: x codes that are not NaN/Inf, scales of ordinary magnitude.
struct Data {
  std::vector<std::vector<uint8_t>> x, s;
  std::vector<uint8_t> out;
  std::vector<uint8_t> copy_src, copy_dst;

  Data() {
    std::mt19937 rng(42);
    for (int k = 0; k < kMaxSources; ++k) {
      std::vector<uint8_t> xb(kCount);
      for (auto& b : xb) b = static_cast<uint8_t>(rng() & 0x3F) | static_cast<uint8_t>(rng() & 0x80);
      x.push_back(std::move(xb));
      std::vector<uint8_t> sb(kCount / 128 * 4 + kCount / 32);
      for (std::size_t j = 0; j < kCount / 128; ++j) {
        const float v = 0.001f * static_cast<float>(1 + rng() % 1000);
        std::memcpy(&sb[4 * j], &v, 4);
      }
      // E8M0 scales live in the same buffer when used (bytes near 2^0).
      for (std::size_t j = 0; j < kCount / 32; ++j) sb[j] = static_cast<uint8_t>(120 + rng() % 8);
      s.push_back(std::move(sb));
    }
    out.resize(kCount * 4);
    const std::size_t most = kMaxSources * (kCount + kCount / 32) + kCount * 4;
    copy_src.assign(most / 2 + 64, 1);
    copy_dst.assign(most / 2 + 64, 2);
  }
};

Data& data() {
  static Data d;
  return d;
}

std::size_t touched_bytes(const ReduceArgs& a) {
  const std::size_t scale_bytes = a.scales_dtype == DType::Float ? a.count / 128 * 4 : a.count / 32;
  return static_cast<std::size_t>(a.nsrc) * (a.count + scale_bytes) +
         a.count * qcoll::dtype_size(a.out_dtype);
}

struct Case {
  Mode mode;
  DType out;
  int n;
  std::vector<const uint8_t*> x, s;
  ReduceArgs args() {
    Data& d = data();
    x.clear();
    s.clear();
    for (int k = 0; k < n; ++k) {
      x.push_back(d.x[k].data());
      s.push_back(d.s[k].data());
    }
    return ReduceArgs{mode.x, mode.scales, out, n, x.data(), s.data(), kCount, d.out.data()};
  }
};

void run_kernel(benchmark::State& st, Case c, int path) {
  const ReduceArgs a = c.args();
  for (auto _ : st) {
    if (path == 0) qcoll::kernels::dequant_reduce_scalar(a);
    else if (path == 1) qcoll::kernels::dequant_reduce(a);
    else qcoll::kernels::dequant_reduce_parallel(a, path);
    benchmark::DoNotOptimize(a.out);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * touched_bytes(a)));
}

void run_memcpy(benchmark::State& st, Case c) {
  const ReduceArgs a = c.args();
  Data& d = data();
  const std::size_t half = touched_bytes(a) / 2;
  for (auto _ : st) {
    std::memcpy(d.copy_dst.data(), d.copy_src.data(), half);
    benchmark::DoNotOptimize(d.copy_dst.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * 2 * half));
}

}  // namespace

int main(int argc, char** argv) {
  const Mode modes[] = {
      {"kg_int8", DType::Int8, DType::Float},
      {"kg_hif8", DType::HiFloat8, DType::Float},
      {"kg_e4m3", DType::Float8E4M3FN, DType::Float},
      {"kg_e5m2", DType::Float8E5M2, DType::Float},
      {"mx_e4m3", DType::Float8E4M3FN, DType::Float8E8M0},
      {"mx_e5m2", DType::Float8E5M2, DType::Float8E8M0},
  };
  std::vector<std::pair<Mode, DType>> cases;
  for (const Mode& m : modes) cases.push_back({m, DType::BFloat16});
  cases.push_back({modes[2], DType::Float});
  for (auto [m, out] : cases) {
    for (int n : {2, 4, 8}) {
      const std::string base = std::string(m.name) + "/" + std::string(qcoll::dtype_name(out)) +
                               "/n:" + std::to_string(n);
      const Case c{m, out, n, {}, {}};
      benchmark::RegisterBenchmark(("kernel/" + base + "/scalar").c_str(), run_kernel, c, 0)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
      benchmark::RegisterBenchmark(("kernel/" + base + "/simd").c_str(), run_kernel, c, 1)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
      benchmark::RegisterBenchmark(("kernel/" + base + "/threads:2").c_str(), run_kernel, c, 2)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
      benchmark::RegisterBenchmark(("memcpy/" + base).c_str(), run_memcpy, c)
          ->Unit(benchmark::kMillisecond)->UseRealTime();
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("dequant_reduce_target", qcoll::kernels::dequant_reduce_target());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
