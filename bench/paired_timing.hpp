// The paired measurement of bench_kernels and bench_quant: in every iteration a memcpy of the
// bytes one call touches (half read, half written), then the call, back to back, timed by wall
// clock and by the thread's CPU time. Neighbouring runs see the same load, and the CPU time
// leaves out the time other processes ran, so on a shared machine the ratios are far steadier
// than those of two separately timed benchmarks.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <string>

namespace qcoll_bench {

// This thread's CPU time in seconds.
inline double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs the iterations of `st`: memcpy of bytes / 2 from src to dst, then call() (false: stop
// with an error). Counters, for `bytes` touched per call: <name>_vs_memcpy (memcpy time / call
// time: the throughput ratio), <name>_vs_memcpy_cpu (the same from CPU time), memcpy_GBps and
// <name>_GBps (wall clock).
template <class Call>
void run_paired(benchmark::State& st, void* dst, const void* src, std::size_t bytes, const std::string& name,
                Call&& call) {
  using clock = std::chrono::steady_clock;
  double wall_copy = 0, wall_call = 0, cpu_copy = 0, cpu_call = 0;
  for (auto _ : st) {
    const auto t0 = clock::now();
    const double c0 = thread_cpu_s();
    std::memcpy(dst, src, bytes / 2);
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
    const auto t1 = clock::now();
    const double c1 = thread_cpu_s();
    if (!call()) {
      st.SkipWithError((name + ": the call could not run").c_str());
      return;
    }
    benchmark::ClobberMemory();
    const auto t2 = clock::now();
    const double c2 = thread_cpu_s();
    wall_copy += std::chrono::duration<double>(t1 - t0).count();
    wall_call += std::chrono::duration<double>(t2 - t1).count();
    cpu_copy += c1 - c0;
    cpu_call += c2 - c1;
  }
  const double total = static_cast<double>(st.iterations()) * static_cast<double>(bytes);
  st.counters[name + "_vs_memcpy"] = wall_call > 0 ? wall_copy / wall_call : 0;
  st.counters[name + "_vs_memcpy_cpu"] = cpu_call > 0 ? cpu_copy / cpu_call : 0;
  st.counters["memcpy_GBps"] = wall_copy > 0 ? total / wall_copy / 1e9 : 0;
  st.counters[name + "_GBps"] = wall_call > 0 ? total / wall_call / 1e9 : 0;
}

}  // namespace qcoll_bench
