// Quantizer throughput against memcpy of the same bytes (the memory roofline), in one run.
//
// Every mode (kg-int8, kg-hif8, kg-e4m3, kg-e5m2, mx-e4m3, mx-e5m2, and the extended
// contract's kg-e2m1, kg-e1m2, mx-e2m1, mx-e1m2: the 4-bit codes packed, two a byte) from
// fp32, bf16 and fp16 rows of 1024 x 5120 and 4096 x 5120 (a rank's tensor). Bytes touched
// per call: the input read, the codes (H/2 bytes a row for 4-bit) and the scales written; every benchmark reports that
// as bytes processed, so bytes/s compare directly:
//   quant/<mode>/<in>/1024/scalar        the reference path, one thread
//   quant/<mode>/<in>/<rows>/threads:<t> the public function (best SIMD target) on t threads
//   memcpy/<mode>/<in>/<rows>/threads:<t> memcpy of half as many bytes (the other half is
//                                        the write) over t threads of the same worker pool
//   dequantize/<mode>                    the inverse, for reference
//   paired/<mode>/<in>/1024/<T>          each iteration a memcpy of the same bytes, then the
//                                        quantizer on SIMD target T (every target this CPU
//                                        runs), one thread, back to back; counters
//                                        quant_vs_memcpy = memcpy time / quantize time (the
//                                        throughput ratio), quant_vs_memcpy_cpu (the same from
//                                        the thread's CPU time), memcpy_GBps, quant_GBps. Both
//                                        see the same load, so the ratio is steadier than
//                                        one of two separately timed benchmarks.
// Run: bench_quant --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//        --benchmark_format=json > q.json, then scripts/bench_quant_ratios.py q.json
// The JSON context names the quantizers' SIMD target and the load average.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/worker_pool.hpp"
#include "paired_timing.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/formats.hpp"
#include "qcoll/quant.hpp"
#include "qcoll/settings.hpp"
#include "quant/quantize_job.hpp"

namespace {

using qcoll::DType;
namespace qq = qcoll::quant;

constexpr std::size_t kH = 5120;
constexpr std::size_t kMaxRows = 4096;

struct Mode {
  const char* name;
  DType x, scales;
};
constexpr Mode kModes[] = {
    {"kg-int8", DType::Int8, DType::Float},
    {"kg-hif8", DType::HiFloat8, DType::Float},
    {"kg-e4m3", DType::Float8E4M3FN, DType::Float},
    {"kg-e5m2", DType::Float8E5M2, DType::Float},
    {"mx-e4m3", DType::Float8E4M3FN, DType::Float8E8M0},
    {"mx-e5m2", DType::Float8E5M2, DType::Float8E8M0},
    {"kg-e2m1", DType::Float4E2M1, DType::Float},
    {"kg-e1m2", DType::Float4E1M2, DType::Float},
    {"mx-e2m1", DType::Float4E2M1, DType::Float8E8M0},
    {"mx-e1m2", DType::Float4E1M2, DType::Float8E8M0},
};

struct Input {
  const char* name;
  DType dtype;
};
constexpr Input kInputs[] = {{"fp32", DType::Float}, {"bf16", DType::BFloat16}, {"fp16", DType::Float16}};

// One activation-like tensor (normal values) in each input dtype, and the output buffers.
struct Data {
  std::vector<float> f32;
  std::vector<uint16_t> bf16, fp16;
  std::vector<uint8_t> q, scales;
  std::vector<uint8_t> copy_src, copy_dst;

  Data() {
    const std::size_t n = kMaxRows * kH;
    std::mt19937 gen(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    f32.resize(n);
    bf16.resize(n);
    fp16.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      f32[i] = nd(gen);
      bf16[i] = qcoll::formats::encode_bfloat16(f32[i]);
      fp16[i] = qcoll::formats::encode_float16(f32[i]);
    }
    q.resize(n);
    scales.resize(n / 32 + n / 128 * 4);
    copy_src.assign((n * 4 + n + n / 32) / 2 + 64, 1);
    copy_dst.assign(copy_src.size(), 2);
  }
  const void* input(DType in) const {
    if (in == DType::BFloat16) return bf16.data();
    if (in == DType::Float16) return fp16.data();
    return f32.data();
  }
};

Data& data() {
  static Data d;
  return d;
}

std::size_t touched_bytes(const Mode& m, DType in, std::size_t rows) {
  const std::size_t n = rows * kH;
  return n * qcoll::dtype_size(in) + qcoll::contract::x_data_bytes(m.x, rows, kH) +
         qcoll::contract::scales_row_bytes(m.scales, kH) * rows;
}

bool quantize(const Mode& m, DType in, std::size_t rows, int threads) {
  Data& d = data();
  qq::QuantOptions opt;
  opt.threads = threads;
  auto* kg = reinterpret_cast<float*>(d.scales.data());
  const auto* h = static_cast<const uint16_t*>(d.input(in));
  if (m.scales == DType::Float) {
    if (in == DType::Float) return qq::quantize_kg(d.f32.data(), rows, kH, m.x, d.q.data(), kg, opt);
    if (in == DType::BFloat16) return qq::quantize_kg_bf16(h, rows, kH, m.x, d.q.data(), kg, opt);
    return qq::quantize_kg_fp16(h, rows, kH, m.x, d.q.data(), kg, opt);
  }
  if (in == DType::Float) return qq::quantize_mx(d.f32.data(), rows, kH, m.x, d.q.data(), d.scales.data(), opt);
  if (in == DType::BFloat16) return qq::quantize_mx_bf16(h, rows, kH, m.x, d.q.data(), d.scales.data(), opt);
  return qq::quantize_mx_fp16(h, rows, kH, m.x, d.q.data(), d.scales.data(), opt);
}

void BM_Quantize(benchmark::State& state, Mode m, DType in, std::size_t rows, int threads) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(quantize(m, in, rows, threads));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * touched_bytes(m, in, rows)));
}

qcoll::quant::detail::QuantJob job_of(const Mode& m, DType in, std::size_t rows) {
  Data& d = data();
  qcoll::quant::detail::QuantJob job;
  job.in_dtype = in;
  job.x = d.input(in);
  job.rows = rows;
  job.H = kH;
  job.x_dtype = m.x;
  job.scales_dtype = m.scales;
  job.target = m.scales == DType::Float ? qcoll::quant::detail::kg_target(m.x, 0.0f) : 0.0f;
  job.q = d.q.data();
  job.scales = d.scales.data();
  return job;
}

void BM_QuantizeScalar(benchmark::State& state, Mode m, DType in, std::size_t rows) {
  const qcoll::quant::detail::QuantJob job = job_of(m, in, rows);
  for (auto _ : state) {
    qcoll::quant::detail::quantize_scalar(job);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * touched_bytes(m, in, rows)));
}

void BM_Memcpy(benchmark::State& state, std::size_t bytes_touched, int threads) {
  Data& d = data();
  const std::size_t len = bytes_touched / 2;
  for (auto _ : state) {
    qcoll::core::WorkerPool::shared().run(threads, [&](int p) {
      const std::size_t begin = len * p / threads, end = len * (p + 1) / threads;
      std::memcpy(d.copy_dst.data() + begin, d.copy_src.data() + begin, end - begin);
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * len));
}

// memcpy of the bytes the quantizer touches, then the quantizer on `target`, in every iteration.
void BM_Paired(benchmark::State& state, Mode m, DType in, std::size_t rows, std::string target) {
  Data& d = data();
  const qcoll::quant::detail::QuantJob job = job_of(m, in, rows);
  qcoll_bench::run_paired(state, d.copy_dst.data(), d.copy_src.data(), touched_bytes(m, in, rows), "quant",
                          [&] { return qcoll::quant::detail::quantize_on_target(target, job); });
}

void BM_Dequantize(benchmark::State& state, Mode m) {
  constexpr std::size_t rows = 1024;
  qq::QuantizedTensor qt;
  if (!qq::quantize(data().f32.data(), rows, kH, m.x, m.scales, qt).ok()) state.SkipWithError("quantize");
  std::vector<float> out(rows * kH);
  for (auto _ : state) {
    benchmark::DoNotOptimize(qq::dequantize(qt.q.data(), qt.scales_data(), rows, kH, m.x, m.scales, out.data()));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * (rows * kH * 4 + qt.q.size() + qt.scales_bytes())));
}

void register_all() {
  for (const Mode& m : kModes) {
    for (const Input& in : kInputs) {
      for (std::size_t rows : {std::size_t{1024}, kMaxRows}) {
        const std::string tail = std::string(m.name) + "/" + in.name + "/" + std::to_string(rows);
        if (rows == 1024)  // the reference is 10-30x slower: one size is enough
          benchmark::RegisterBenchmark(("quant/" + tail + "/scalar").c_str(), BM_QuantizeScalar, m, in.dtype, rows)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        for (int threads : {1, 2}) {
          const std::string t = "/threads:" + std::to_string(threads);
          benchmark::RegisterBenchmark(("quant/" + tail + t).c_str(), BM_Quantize, m, in.dtype, rows, threads)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
          benchmark::RegisterBenchmark(("memcpy/" + tail + t).c_str(), BM_Memcpy, touched_bytes(m, in.dtype, rows),
                                       threads)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
      }
    }
  }
  const std::vector<std::string> targets = qcoll::quant::detail::quantize_simd_targets();
  for (const Mode& m : kModes) {
    for (const Input& in : kInputs) {
      for (const std::string& t : targets) {
        const std::string name = "paired/" + std::string(m.name) + "/" + in.name + "/1024/" + t;
        benchmark::RegisterBenchmark(name.c_str(), BM_Paired, m, in.dtype, std::size_t{1024}, t)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
  }
  for (const Mode& m : {kModes[0], kModes[4], kModes[8]})
    benchmark::RegisterBenchmark((std::string("dequantize/") + m.name).c_str(), BM_Dequantize, m)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // The 4-bit modes are the extended contract's (contract.md §ext); the others run the same.
  qcoll::settings::set_contract_override(qcoll::settings::Contract::Extended);
  benchmark::AddCustomContext("quantize_target", qq::quantize_target());
  std::fprintf(stderr, "quantize target: %s\n", qq::quantize_target());
  data();  // build the inputs before the first measurement
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
