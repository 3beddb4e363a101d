// Rank synchronisation for `qcoll bench`; see bench_sync.hpp.
#include "bench_sync.hpp"

#include <algorithm>
#include <array>
#include <barrier>
#include <vector>

#include "cli_error.hpp"
#include "rank_runner_mpi.hpp"

#ifdef QCOLL_HAVE_MPI
#include <mpi.h>
#endif

namespace qcoll::cli {
namespace {

constexpr int kMaxValues = 8;

class ThreadSync final : public RankSync {
 public:
  explicit ThreadSync(int n) : barrier_(n), values_(static_cast<std::size_t>(n)) {}
  void barrier(int) override { barrier_.arrive_and_wait(); }
  void max(int rank, double* v, int count) override {
    combine(rank, v, count, [](double a, double b) { return std::max(a, b); });
  }
  void sum(int rank, double* v, int count) override {
    combine(rank, v, count, [](double a, double b) { return a + b; });
  }

 private:
  template <class Op>
  void combine(int rank, double* v, int count, Op op) {
    count = std::min(count, kMaxValues);
    auto& mine = values_[static_cast<std::size_t>(rank)];
    std::copy(v, v + count, mine.begin());
    barrier_.arrive_and_wait();  // every rank's values are in
    for (int i = 0; i < count; ++i) {
      double acc = values_[0][static_cast<std::size_t>(i)];  // rank order: the same on every rank
      for (std::size_t k = 1; k < values_.size(); ++k) acc = op(acc, values_[k][static_cast<std::size_t>(i)]);
      v[i] = acc;
    }
    barrier_.arrive_and_wait();  // every rank has read them before any rank writes again
  }

  std::barrier<> barrier_;
  std::vector<std::array<double, kMaxValues>> values_;
};

#ifdef QCOLL_HAVE_MPI
class MpiSync final : public RankSync {
 public:
  void barrier(int) override { MPI_Barrier(MPI_COMM_WORLD); }
  void max(int, double* v, int count) override {
    MPI_Allreduce(MPI_IN_PLACE, v, count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  }
  void sum(int, double* v, int count) override {
    MPI_Allreduce(MPI_IN_PLACE, v, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
};
#endif

}  // namespace

std::unique_ptr<RankSync> make_thread_sync(int nranks) { return std::make_unique<ThreadSync>(nranks); }

std::unique_ptr<RankSync> make_mpi_sync() {
#ifdef QCOLL_HAVE_MPI
  return std::make_unique<MpiSync>();
#else
  throw CliError(ErrorKind::Argument, kNoMpi);
#endif
}

}  // namespace qcoll::cli
