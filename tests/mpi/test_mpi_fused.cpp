// The fused operators (QuantizeReduceScatter / QuantizeAllReduce) over one-rank-per-process
// communicators, under mpirun with 2, 4 or 8 processes, for each transport (shm and mpi,
// forced with QCOLL_TRANSPORT): every mode x input dtype x output dtype x operator, 2-D and
// 3-D, bit for bit equal to the public quantizer followed by the quantized operator
// (tests/fused_check.hpp), in chunks of 2 rows; and tensors whose chunks a 3 MB window
// (HCCL_BUFFSIZE=3) cuts. Exit status 0 only if every rank passed.
// --fp4: the extended contract's 4-bit modes instead (kg-e2m1, kg-e1m2, mx-e2m1, mx-e1m2;
// contract.md §ext-fp4), by default on shm, mpi-p2p, mpi-alltoall and, with 4 ranks or more,
// mpi-hosts-(n/2) (the hosts schedule, the ranks taken as two hosts).
#include <mpi.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/mpi/process_communicator.hpp"
#include "fused_check.hpp"
#include "mpi_test_support.hpp"
#include "ops/executor.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/qcoll_mpi.h"

using mpitest::Tally;

namespace {

int g_rank = 0, g_size = 0;

// A communicator of the world on `transport` (QCOLL_TRANSPORT), a 3 MB window; nullptr on failure.
qcollMpiComm* create_world(const char* transport, const std::string& name, Tally& t) {
  setenv("QCOLL_TRANSPORT", transport, 1);
  setenv("HCCL_BUFFSIZE", "3", 1);
  qcollMpiComm* c = nullptr;
  const qcollStatus st = qcollMpiCommCreateWorld(name.c_str(), &c);
  t.check(st == QCOLL_SUCCESS, "create %s: status %d: %s", name.c_str(), st, qcollGetRecentErrMsg());
  return st == QCOLL_SUCCESS ? c : nullptr;
}

void run_transport(const char* transport, Tally& t) {
  const std::string name = std::string("fused-") + transport;
  qcollMpiComm* c = create_world(transport, name, t);
  if (!c) return;
  t.check(std::string(qcollMpiCommTransport(c)) == transport, "transport %s, expected %s", qcollMpiCommTransport(c),
          transport);
  const int n = g_size;

  // Every combination, small tensors in chunks of 2 rows.
  qcoll::ops::testing::set_fused_chunk_rows_for_test(2);
  for (const fused::Case& k : fused::every_combination(1, [n](uint32_t seed) {
         return seed % 2 ? std::vector<int64_t>{5 * n, 1024} : std::vector<int64_t>{3, 2 * n, 2048};
       })) {
    const std::string e = fused::check_fused_rank(k, name.c_str(), g_rank, n);
    t.check(e.empty(), "%s: %s", transport, e.c_str());
  }
  qcoll::ops::testing::set_fused_chunk_rows_for_test(0);

  // Chunks the window cuts: H = 8192, 40 rows per rank (3 chunks at n = 4).
  for (int i = 0; i < 4; ++i) {
    fused::Case k;
    k.mode = fused::kModes[i == 0 ? 0 : i == 1 ? 5 : i == 2 ? 1 : 4];
    k.in = fused::kInputs[i % 3];
    k.out = fused::kOutputs[(i + 1) % 3];
    k.all_reduce = i % 2 == 1;
    k.shape = i < 2 ? std::vector<int64_t>{40 * n, 8192} : std::vector<int64_t>{5, 8 * n, 8192};
    k.seed = 900 + static_cast<uint32_t>(i);
    const std::string e = fused::check_fused_rank(k, name.c_str(), g_rank, n);
    t.check(e.empty(), "%s, window chunks: %s", transport, e.c_str());
  }
  qcollMpiCommDestroy(c);
}

// The 4-bit modes: both operators, fp32 and bf16 outputs, 2-D and 3-D input (the input
// dtype turning over fp32, fp16, bf16), in chunks of 2 rows; then one case per operator
// whose chunks the 3 MB window cuts (40 rows a rank of 8192).
void run_fp4(const char* transport, const std::string& what, Tally& t) {
  const std::string name = std::string("fused-fp4-") + transport;
  qcollMpiComm* c = create_world(transport, name, t);
  if (!c) return;
  const int n = g_size;
  std::vector<fused::Case> cases;
  uint32_t seed = 700;
  for (const fused::Mode& m : qcoll::contract::quant_modes(qcoll::settings::Contract::Extended)) {
    if (!qcoll::is_4bit_format(m.x)) continue;
    for (bool ar : {false, true})
      for (qcoll::DType out : {qcoll::DType::Float, qcoll::DType::BFloat16}) {
        // (More than 8 ranks, to stay short on 2 cores: one of 2-D and 3-D, in turn.)
        const int only = n > 8 ? 2 + static_cast<int>((cases.size() + ar) % 2) : 0;
        for (int nd : {2, 3}) {
          if (only != 0 && nd != only) continue;
          fused::Case k;
          k.mode = m;
          k.in = fused::kInputs[seed % 3];
          k.out = out;
          k.all_reduce = ar;
          k.shape = nd == 2 ? std::vector<int64_t>{3 * n, 1024} : std::vector<int64_t>{3, n, 2048};
          k.seed = seed++;
          cases.push_back(k);
        }
      }
  }
  t.check(cases.size() == (n > 8 ? 16u : 32u), "%s: %zu FP4 cases, expected 4 modes x %d", what.c_str(), cases.size(),
          n > 8 ? 4 : 8);
  qcoll::ops::testing::set_fused_chunk_rows_for_test(2);
  for (const fused::Case& k : cases) {
    const std::string e = fused::check_fused_rank(k, name.c_str(), g_rank, n);
    t.check(e.empty(), "%s: %s", what.c_str(), e.c_str());
  }
  qcoll::ops::testing::set_fused_chunk_rows_for_test(0);
  for (bool ar : {false, true}) {
    fused::Case k = cases[ar ? cases.size() - 1 : 0];  // the last mode's all-reduce, the first's reduce-scatter
    k.out = ar ? qcoll::DType::Float : qcoll::DType::BFloat16;
    k.shape = ar ? std::vector<int64_t>{40 * n, 8192} : std::vector<int64_t>{5, 8 * n, 8192};
    k.seed = seed++;
    const std::string e = fused::check_fused_rank(k, name.c_str(), g_rank, n);
    t.check(e.empty(), "%s, window chunks: %s", what.c_str(), e.c_str());
  }
  qcollMpiCommDestroy(c);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  Tally t(g_rank);
  setenv("QCOLL_TIMEOUT_S", "60", 1);
  std::vector<std::string> transports;
  bool fp4 = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--fp4")
      fp4 = true;
    else
      transports.push_back(argv[i]);
  }
  if (fp4) qcollSetContract(QCOLL_CONTRACT_EXTENDED);
  if (transports.empty() && fp4) {
    transports = {"shm", "mpi-p2p", "mpi-alltoall"};
    if (g_size >= 4) transports.push_back("mpi-hosts-" + std::to_string(g_size / 2));
  }
  if (transports.empty()) transports = {"shm", "mpi"};
  // QCOLL_TEST_RANKS_PER_HOST=K (this test only): the mpi communicators take hosts of K ranks.
  if (const char* k = std::getenv("QCOLL_TEST_RANKS_PER_HOST"))
    qcoll::comm::mpi::testing::set_ranks_per_host_for_test(std::atoi(k));
  for (const std::string& transport : transports) {
    const double t0 = MPI_Wtime();
    if (fp4) {
      // "mpi-hosts-K": the hosts schedule with hosts of K ranks; "mpi-S": schedule S.
      const bool hosts = transport.rfind("mpi-hosts-", 0) == 0, mpi_variant = transport.rfind("mpi-", 0) == 0;
      if (hosts) qcoll::comm::mpi::testing::set_ranks_per_host_for_test(std::atoi(transport.c_str() + 10));
      if (mpi_variant) setenv("QCOLL_MPI_SCHEDULE", hosts ? "hosts" : transport.c_str() + 4, 1);
      run_fp4(mpi_variant ? "mpi" : transport.c_str(), transport, t);
      if (hosts) qcoll::comm::mpi::testing::set_ranks_per_host_for_test(0);
      unsetenv("QCOLL_MPI_SCHEDULE");
    } else {
      run_transport(transport.c_str(), t);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) std::printf("transport %s: %.1f s\n", transport.c_str(), MPI_Wtime() - t0);
  }
  const int rc = t.finish("test_mpi_fused");
  MPI_Finalize();
  return rc;
}
