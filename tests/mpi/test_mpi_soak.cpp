// Soak over processes (issue 18): mpirun -np N test_mpi_soak shm|mpi. Every rank makes
// QCOLL_SOAK_CALLS operator calls (default 400) on one communicator, cycling through four
// calls (both operators, int8 / e4m3 / e5m2 / hif8 inputs, fp32 and MX scales, fp32 / bf16 /
// fp16 outputs, a large one moved in several chunks through a 4 MB window); stops earlier
// once QCOLL_SOAK_SECONDS have passed (the ranks agree every 100 calls). Every result is
// checked bit for bit against tests/oracle.hpp. Between the end of the warm-up (the first
// tenth of the calls, or of the time) and the end: no open file descriptor more, the qcoll segment holds no
// more /dev/shm, resident memory grows by at most 4 MiB on any rank. Rank 0 prints the
// figures of every rank at the start (after the first call), after the warm-up and at the end.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_test_support.hpp"
#include "qcoll/qcoll_mpi.h"
#include "soak_stats.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define QCOLL_MPI_SOAK_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define QCOLL_MPI_SOAK_UNDER_SANITIZER 1
#endif
#endif

using namespace mpitest;

namespace {

struct Variant {
  Op op;
  Mode m;
  std::size_t BS_per_rank, H;
};

struct Prepared {
  Variant v;
  std::size_t BS;
  Inputs in;
  std::vector<uint8_t> want;
};

void gather_stats(const soak::Stats& s, int rank, int size, const char* when) {
  long long mine[5] = {s.rss_kib, s.fds, s.qcoll_shm_segments, s.qcoll_shm_bytes, s.devshm_used_bytes};
  std::vector<long long> all(5 * static_cast<std::size_t>(size));
  MPI_Gather(mine, 5, MPI_LONG_LONG, all.data(), 5, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  for (int r = 0; r < size; ++r) {
    const long long* a = &all[5 * static_cast<std::size_t>(r)];
    std::printf(
        "soak %s rank %d: RSS %lld KiB, %lld open fds, %lld qcoll segment(s) holding %lld KiB, /dev/shm used %lld "
        "KiB\n",
        when, r, a[0], a[1], a[2], a[3] / 1024, a[4] / 1024);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* transport = argc > 1 ? argv[1] : "shm";
  setenv("QCOLL_TRANSPORT", transport, 1);
  setenv("HCCL_BUFFSIZE", "4", 1);
  Tally t(rank);
  const long total = soak::env_long("QCOLL_SOAK_CALLS", 400);
  const double seconds = static_cast<double>(soak::env_long("QCOLL_SOAK_SECONDS", 0));
  t.check(total >= 20, "QCOLL_SOAK_CALLS must be at least 20, got %ld", total);

  using qcoll::DType;
  const std::vector<Variant> variants = {
      {Op::ReduceScatter, {DType::Float8E4M3FN, DType::Float, DType::BFloat16}, 4, 1024},
      {Op::AllReduce, {DType::Int8, DType::Float, DType::Float}, 2, 2048},
      {Op::AllReduce, {DType::Float8E5M2, DType::Float8E8M0, DType::Float16}, 128, 4096},  // several chunks
      {Op::ReduceScatter, {DType::HiFloat8, DType::Float, DType::Float}, 8, 1024},
  };
  std::vector<Prepared> prep;
  for (std::size_t k = 0; k < variants.size(); ++k) {
    Prepared p{variants[k], variants[k].BS_per_rank * static_cast<std::size_t>(size), {}, {}};
    std::vector<Inputs> all;
    for (int r = 0; r < size; ++r) all.push_back(make_inputs(p.v.m, p.BS, p.v.H, 500 + k, r));
    p.in = all[rank];
    p.want = expected(p.v.op, p.v.m, all, p.BS, p.v.H, rank);
    prep.push_back(std::move(p));
  }

  qcollMpiComm* c = nullptr;
  const qcollStatus created = qcollMpiCommCreateWorld("soak", &c);
  t.check(created == QCOLL_SUCCESS, "create: %s", qcollGetRecentErrMsg());
  if (rank == 0 && c != nullptr) std::printf("soak: %s transport, %d ranks\n", qcollMpiCommTransport(c), size);

  const long warm = total / 10;
  long failures = 0, done = 0;
  soak::Stats first, after_warm, end;
  const auto t0 = std::chrono::steady_clock::now();
  bool stop = false, warm_taken = false;
  for (long i = 0; i < total && !stop && created == QCOLL_SUCCESS; ++i) {
    Prepared& p = prep[static_cast<std::size_t>(i) % prep.size()];
    std::vector<uint8_t> out;
    const qcollStatus st = call_op(p.v.op, p.v.m, p.in, p.BS, p.v.H, size, "soak", out);
    ++done;
    if (st != QCOLL_SUCCESS || first_difference(p.v.m, out, p.want) >= 0) {
      if (failures++ < 5)
        t.check(false, "call %ld (%s %s): %s", i, op_name(p.v.op), p.v.m.name().c_str(),
                st != QCOLL_SUCCESS ? last_error().c_str() : "wrong result");
      if (failures > 20) break;  // the ranks are out of step: stop here
    }
    if (i == 0) first = soak::sample();
    // The warm-up ends after the first tenth of the calls, or of QCOLL_SOAK_SECONDS.
    if (seconds > 0 ? !warm_taken &&
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= seconds / 10
                    : i == warm) {
      after_warm = soak::sample();
      warm_taken = true;
    }
    if ((i + 1) % 100 == 0 && seconds > 0) {
      int mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= seconds, any = 0;
      MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      stop = any != 0;
    }
  }
  end = soak::sample();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  gather_stats(first, rank, size, "start");
  gather_stats(after_warm, rank, size, "after warm-up");
  gather_stats(end, rank, size, "end");
  if (rank == 0)
    std::printf("soak: %ld calls per rank in %.1f s (%.0f calls/s)\n", done, secs, static_cast<double>(done) / secs);
  t.check(warm_taken && done >= 20, "only %ld calls made", done);
  t.check(end.fds == after_warm.fds, "open file descriptors: %d after the warm-up, %d at the end", after_warm.fds,
          end.fds);
  t.check(end.qcoll_shm_bytes == after_warm.qcoll_shm_bytes && end.qcoll_shm_segments == after_warm.qcoll_shm_segments,
          "qcoll /dev/shm: %d segment(s) of %lld bytes after the warm-up, %d of %lld at the end",
          after_warm.qcoll_shm_segments, after_warm.qcoll_shm_bytes, end.qcoll_shm_segments, end.qcoll_shm_bytes);
#ifndef QCOLL_MPI_SOAK_UNDER_SANITIZER
  // (Not under ASan, whose quarantine keeps freed memory resident, nor TSan: LeakSanitizer
  // and the Release build check what this bound checks.)
  t.check(end.rss_kib - after_warm.rss_kib <= 4096, "resident memory grew from %ld KiB to %ld KiB", after_warm.rss_kib,
          end.rss_kib);
#endif
  if (c != nullptr) qcollMpiCommDestroy(c);
  const int rc = t.finish((std::string("test_mpi_soak ") + transport).c_str());
  MPI_Finalize();
  return rc;
}
