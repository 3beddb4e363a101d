// Dequantize-and-reduce kernel throughput against memcpy (the memory roofline).
//
// For each mode and n sources: count = 5120*512 elements per source (well beyond L2).
// Bytes touched per call: n * (x bytes + scale bytes) + count * out_size (x bytes: count,
// count / 2 for the packed 4-bit modes); every benchmark
// reports that as bytes processed, so bytes/s compare directly:
//   kernel/<mode>/<out>/n:<n>/scalar     dequant_reduce_scalar
//   kernel/<mode>/<out>/n:<n>/simd       dequant_reduce (best SIMD target)
//   kernel/<mode>/<out>/n:<n>/threads:2  dequant_reduce_parallel with 2 threads
//   kernel/<mode>/<out>/n:<n>/target:<T> dequant_reduce_on_target(T), for T in AVX3_DL,
//                                        AVX3, AVX2 where the CPU runs T
//   memcpy/<mode>/<out>/n:<n>            memcpy of half that many bytes (the other half is
//                                        the write), i.e. the same bytes touched
//   many/<mode>/float/n:<n>/<path>       n = 8 to 256 sources of 5 MB in all, from memory
//                                        (run_many: the consumer of a call with many ranks)
//   paired/<mode>/<out>/n:<n>/<T>        each iteration a memcpy then the kernel on target T
//                                        ("simd" = dequant_reduce), back to back; counter
//                                        kernel_vs_memcpy = memcpy time / kernel time (the
//                                        throughput ratio: same bytes), kernel_vs_memcpy_cpu
//                                        (the same from the thread's CPU time), memcpy_GBps,
//                                        kernel_GBps. Neighbouring runs see the same load, so
//                                        on a shared machine this ratio is far steadier than
//                                        one of two separately timed benchmarks.
// Modes: kg_int8, kg_hif8, kg_e4m3, kg_e5m2, mx_e4m3, mx_e5m2, and the 4-bit modes of the
// extended contract kg_e2m1, kg_e1m2, mx_e2m1, mx_e1m2 (packed x: every byte is two valid
// codes); outputs bfloat16, float16, float. Run: bench_kernels --benchmark_repetitions=5
// --benchmark_report_aggregates_only=true and compare medians; scripts/bench_kernels_ratios.py prints the ratios from
// JSON output (e.g. --benchmark_filter='target|memcpy' for the per-target table alone). Besides mean, median and stddev
// every benchmark reports "min" (the fastest repetition; with
// --benchmark_enable_random_interleaving=true the least disturbed estimate on a shared
// machine; scripts/bench_kernels_ratios.py --stat min uses it).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/dequant_reduce.hpp"
#include "paired_timing.hpp"

using qcoll::DType;
using qcoll::kernels::ReduceArgs;

namespace {

constexpr std::size_t kCount = 5120 * 512;
constexpr int kMaxSources = 8;
constexpr std::size_t kE8M0Offset = kCount / 128 * 4;

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
      // fp32 scales (KG, ordinary magnitudes), then the E8M0 scales (MX, bytes near 2^0)
      // after them: kE8M0Offset bytes in.
      std::vector<uint8_t> sb(kE8M0Offset + kCount / 32);
      for (std::size_t j = 0; j < kCount / 128; ++j) {
        const float v = 0.001f * static_cast<float>(1 + rng() % 1000);
        std::memcpy(&sb[4 * j], &v, 4);
      }
      for (std::size_t j = 0; j < kCount / 32; ++j) {
        sb[kE8M0Offset + j] = static_cast<uint8_t>(120 + rng() % 8);
      }
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
  const std::size_t x_bytes = qcoll::is_4bit_format(a.x_dtype) ? a.count / 2 : a.count;
  return static_cast<std::size_t>(a.nsrc) * (x_bytes + scale_bytes) + a.count * qcoll::dtype_size(a.out_dtype);
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
      s.push_back(d.s[k].data() + (mode.scales == DType::Float8E8M0 ? kE8M0Offset : 0));
    }
    return ReduceArgs{mode.x, mode.scales, out, n, x.data(), s.data(), kCount, d.out.data()};
  }
};

// path: "scalar", "simd" (dequant_reduce), "threads:2", or a SIMD target name.
void run_kernel(benchmark::State& st, Case c, std::string path) {
  const ReduceArgs a = c.args();
  for (auto _ : st) {
    if (path == "scalar") {
      qcoll::kernels::dequant_reduce_scalar(a);
    } else if (path == "simd") {
      qcoll::kernels::dequant_reduce(a);
    } else if (path == "threads:2") {
      qcoll::kernels::dequant_reduce_parallel(a, 2);
    } else if (!qcoll::kernels::dequant_reduce_on_target(path, a)) {
      st.SkipWithError(("target not available: " + path).c_str());
      break;
    }
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

// One kernel call on `path` ("simd" or a target name).
void call_kernel(const ReduceArgs& a, const std::string& path) {
  if (path == "simd") {
    qcoll::kernels::dequant_reduce(a);
  } else {
    qcoll::kernels::dequant_reduce_on_target(path, a);
  }
}

void run_paired(benchmark::State& st, Case c, std::string path) {
  const ReduceArgs a = c.args();
  Data& d = data();
  qcoll_bench::run_paired(st, d.copy_dst.data(), d.copy_src.data(), touched_bytes(a), "kernel", [&] {
    call_kernel(a, path);
    benchmark::DoNotOptimize(a.out);
    return true;
  });
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// many/<mode>/float/n:<n>/<path>: the consumer of one extended-contract reduce-scatter call
// with many ranks: n sources of 5120 x 1024 / n elements each (5 MB of 8-bit codes in all,
// as one rank of n sums 1024 x 5120 per rank), read from memory, not from cache: each
// iteration takes the next part of a 256 MB pool (the received parts of a real call were
// just written by the network). Where the SIMD loops prefetch (n >= 9: decode-inl.h,
// kPrefetchSources), compare n:8 with n:16 and n:64 (the same bytes).
constexpr std::size_t kManyElements = 5120 * 1024;
constexpr std::size_t kPoolBytes = std::size_t{256} << 20;

void run_many(benchmark::State& st, Mode m, int n, std::string path) {
  static std::vector<uint8_t> pool = [] {
    std::vector<uint8_t> p(kPoolBytes);
    std::mt19937 rng(7);
    for (auto& b : p) b = static_cast<uint8_t>(rng() & 0x3F);  // x codes and scales alike: finite
    return p;
  }();
  const std::size_t count = kManyElements / static_cast<std::size_t>(n);
  const bool fp4 = qcoll::is_4bit_format(m.x);
  const std::size_t x_bytes = fp4 ? count / 2 : count;
  const std::size_t s_bytes = m.scales == DType::Float ? count / 128 * 4 : count / 32;
  const std::size_t part = (x_bytes + s_bytes + 511) / 512 * 512, call = part * static_cast<std::size_t>(n);
  std::vector<float> out(count);
  std::vector<const uint8_t*> x(n), s(n);
  std::size_t at = 0;
  for (auto _ : st) {
    if (at + call > pool.size()) at = 0;
    for (int k = 0; k < n; ++k) {
      x[k] = pool.data() + at + static_cast<std::size_t>(k) * part;
      s[k] = x[k] + x_bytes;
    }
    at += call;
    const ReduceArgs a{m.x, m.scales, DType::Float, n, x.data(), s.data(), count, out.data()};
    call_kernel(a, path);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * (call + count * 4)));
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
      {"kg_e2m1", DType::Float4E2M1, DType::Float},
      {"kg_e1m2", DType::Float4E1M2, DType::Float},
      {"mx_e2m1", DType::Float4E2M1, DType::Float8E8M0},
      {"mx_e1m2", DType::Float4E1M2, DType::Float8E8M0},
  };
  std::vector<std::string> targets;
  for (const std::string& t : qcoll::kernels::dequant_reduce_simd_targets()) {
    if (t == "AVX3_DL" || t == "AVX3" || t == "AVX2") targets.push_back(t);
  }
  for (DType out : {DType::BFloat16, DType::Float16, DType::Float}) {
    for (const Mode& m : modes) {
      for (int n : {2, 4, 8}) {
        const std::string base =
            std::string(m.name) + "/" + std::string(qcoll::dtype_name(out)) + "/n:" + std::to_string(n);
        const Case c{m, out, n, {}, {}};
        std::vector<std::string> paths = {"scalar", "simd", "threads:2"};
        for (const std::string& t : targets) paths.push_back(t);
        for (const std::string& path : paths) {
          const bool target = path != "scalar" && path != "simd" && path != "threads:2";
          const std::string name = "kernel/" + base + "/" + (target ? "target:" : "") + path;
          benchmark::RegisterBenchmark(name.c_str(), run_kernel, c, path)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime()
              ->ComputeStatistics("min", min_of);
        }
        benchmark::RegisterBenchmark(("memcpy/" + base).c_str(), run_memcpy, c)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->ComputeStatistics("min", min_of);
        std::vector<std::string> paired = {"simd"};
        for (const std::string& t : targets) paired.push_back(t);
        for (const std::string& path : paired) {
          benchmark::RegisterBenchmark(("paired/" + base + "/" + path).c_str(), run_paired, c, path)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
      }
    }
  }
  for (const Mode& m : {modes[0], modes[8]}) {  // kg_int8, mx_e2m1
    for (int n : {8, 16, 64, 256}) {
      std::vector<std::string> paths = {"simd"};
      for (const std::string& t : targets) paths.push_back(t);
      for (const std::string& path : paths) {
        const bool target = path != "simd";
        const std::string name =
            std::string("many/") + m.name + "/float/n:" + std::to_string(n) + "/" + (target ? "target:" : "") + path;
        benchmark::RegisterBenchmark(name.c_str(), run_many, m, n, path)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->ComputeStatistics("min", min_of);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("dequant_reduce_target", qcoll::kernels::dequant_reduce_target());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
