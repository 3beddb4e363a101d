// Transport timing study, run under mpirun (one rank per process):
//
//   mpirun --allow-run-as-root --oversubscribe -np 4 build/bench/study_transports [BS H RUNS [rs|ar]]
//
// For QuantReduceScatter and QuantAllReduce on int8 x with fp32 scales (BS x H per rank,
// default 4096 x 5120), bfloat16 output: the median over RUNS (default 7) of the slowest
// rank's time for one call (both phases), on the shared-memory transport with the default
// window (200 MB) and a 16 MB window (several chunks), on the MPI transport, and on the
// in-process thread transport with the same number of ranks (run by rank 0 alone while the
// other processes sleep). Timing only; correctness is tested in tests/mpi.
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/collectives.hpp"
#include "comm/registry.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/qcoll_mpi.h"

namespace {

using Clock = std::chrono::steady_clock;
enum class Op { ReduceScatter, AllReduce };

struct RankInputs {
  std::vector<int8_t> x;
  std::vector<float> scales;
  std::vector<uint16_t> out;
  std::vector<uint8_t> workspace;  // kept across calls, as an application would
};

RankInputs make_inputs(int rank, int n, int64_t bs, int64_t h, Op op) {
  RankInputs in;
  in.x.resize(bs * h);
  uint32_t s = 12345u + 7919u * rank;
  for (auto& v : in.x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<int8_t>(static_cast<int>(s >> 24) % 255 - 127);
  }
  in.scales.resize(bs * h / 128);
  for (std::size_t i = 0; i < in.scales.size(); ++i) in.scales[i] = 0.001f * static_cast<float>(1 + (i + rank) % 97);
  in.out.resize((op == Op::ReduceScatter ? bs / n : bs) * h);
  return in;
}

// One call, both phases; returns seconds (negative on failure).
double call(Op op, RankInputs& in, int n, int64_t bs, int64_t h, const char* group) {
  const int64_t xd[2] = {bs, h}, sd[2] = {bs, h / 128};
  const int64_t od[2] = {op == Op::ReduceScatter ? bs / n : bs, h};
  qcollTensor* x = qcollCreateContiguousTensor(xd, 2, QCOLL_DT_INT8, in.x.data());
  qcollTensor* s = qcollCreateContiguousTensor(sd, 2, QCOLL_DT_FLOAT, in.scales.data());
  qcollTensor* o = qcollCreateContiguousTensor(od, 2, QCOLL_DT_BFLOAT16, in.out.data());
  const auto t0 = Clock::now();
  uint64_t ws = 0;
  qcollOpExecutor* e = nullptr;
  qcollStatus st = op == Op::ReduceScatter ? qcollQuantReduceScatterGetWorkspaceSize(x, s, group, "sum", o, &ws, &e)
                                           : qcollQuantAllReduceGetWorkspaceSize(x, s, group, "sum", o, &ws, &e);
  if (st == QCOLL_SUCCESS) {
    if (in.workspace.size() < ws) in.workspace.resize(ws);
    st = op == Op::ReduceScatter ? qcollQuantReduceScatter(in.workspace.data(), ws, e, nullptr)
                                 : qcollQuantAllReduce(in.workspace.data(), ws, e, nullptr);
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (st != QCOLL_SUCCESS) std::fprintf(stderr, "call failed: %d %s\n", st, qcollGetRecentErrMsg());
  qcollDestroyTensor(x);
  qcollDestroyTensor(s);
  qcollDestroyTensor(o);
  return st == QCOLL_SUCCESS ? secs : -1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Waits for the other ranks without spinning (they need the cores).
void idle_barrier() {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  int done = 0;
  while (!done) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (!done) {
      const timespec nap{0, 2'000'000};
      nanosleep(&nap, nullptr);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int64_t bs = argc > 1 ? std::atoll(argv[1]) : 4096, h = argc > 2 ? std::atoll(argv[2]) : 5120;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 7;
  if (rank == 0)
    std::printf("%d ranks, x int8 (%lld, %lld) per rank, fp32 scales, bf16 out; median of %d runs, slowest rank\n", n,
                static_cast<long long>(bs), static_cast<long long>(h), runs);
  struct Setup {
    const char* transport;
    const char* buffsize;
  };
  const std::string only = argc > 4 ? argv[4] : "";  // "rs" or "ar": one operator only
  for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
    if ((only == "rs" && op != Op::ReduceScatter) || (only == "ar" && op != Op::AllReduce)) continue;
    const char* opname = op == Op::ReduceScatter ? "reduce-scatter" : "all-reduce";
    RankInputs in = make_inputs(rank, n, bs, h, op);
    for (const Setup& su : {Setup{"shm", "200"}, Setup{"shm", "16"}, Setup{"mpi", "200"}, Setup{"mpi", "16"}}) {
      setenv("QCOLL_TRANSPORT", su.transport, 1);
      setenv("HCCL_BUFFSIZE", su.buffsize, 1);
      qcollMpiComm* c = nullptr;
      if (qcollMpiCommCreateWorld("study", &c) != QCOLL_SUCCESS) {
        std::fprintf(stderr, "create failed: %s\n", qcollGetRecentErrMsg());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      std::vector<double> times;
      call(op, in, n, bs, h, "study");  // warm-up: touches the window and buffers
      for (int r = 0; r < runs; ++r) {
        idle_barrier();
        double t = call(op, in, n, bs, h, "study"), tmax = 0;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        times.push_back(tmax);
      }
      if (rank == 0)
        std::printf("  %-15s %-4s HCCL_BUFFSIZE=%-4s %8.1f ms\n", opname, su.transport, su.buffsize,
                    1e3 * median(times));
      if (op == Op::ReduceScatter) {
        // The transport alone: the same exchange with a consumer that only touches one byte per row.
        auto comm = qcoll::comm::resolve("study");
        qcoll::comm::ExchangeSpec spec{reinterpret_cast<const uint8_t*>(in.x.data()), static_cast<std::size_t>(h),
                                       reinterpret_cast<const uint8_t*>(in.scales.data()),
                                       static_cast<std::size_t>(h / 128 * 4), static_cast<std::size_t>(bs / n)};
        std::vector<double> xt;
        volatile uint8_t sink = 0;
        for (int r = 0; r < runs; ++r) {
          idle_barrier();
          const auto t0 = Clock::now();
          qcoll::comm::exchange(
              *comm, spec,
              [&](const qcoll::comm::Chunk& ch) {
                for (std::size_t i = 0; i < ch.rows; ++i) sink = sink + ch.x[0][i * h];
                return qcoll::Status::Ok();
              },
              Clock::now() + std::chrono::seconds(60));
          double t = std::chrono::duration<double>(Clock::now() - t0).count(), tmax = 0;
          MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          xt.push_back(tmax);
        }
        if (rank == 0)
          std::printf("  %-15s %-4s HCCL_BUFFSIZE=%-4s %8.1f ms  (exchange only)\n", "", su.transport, su.buffsize,
                      1e3 * median(xt));
      }
      qcollMpiCommDestroy(c);
    }
    // The thread transport: rank 0 runs all n ranks as threads; the others wait.
    if (rank == 0) {
      std::vector<RankInputs> all;
      for (int k = 0; k < n; ++k) all.push_back(make_inputs(k, n, bs, h, op));
      qcollThreadGroup* g = nullptr;
      qcollThreadGroupCreate("study-threads", n, &g);
      std::vector<double> times;
      for (int r = 0; r < runs + 1; ++r) {
        std::vector<double> t(n);
        std::vector<std::thread> th;
        for (int k = 0; k < n; ++k)
          th.emplace_back([&, k] {
            qcollThreadGroupJoin(g, k);
            t[k] = call(op, all[k], n, bs, h, "study-threads");
            qcollThreadGroupLeave(g);
          });
        for (auto& x : th) x.join();
        if (r > 0) times.push_back(*std::max_element(t.begin(), t.end()));
      }
      qcollThreadGroupDestroy(g);
      std::printf("  %-15s %-4s %-18s %8.1f ms\n", opname, "threads", "", 1e3 * median(times));
    }
    idle_barrier();
  }
  MPI_Finalize();
  return 0;
}
