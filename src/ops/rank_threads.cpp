#include "ops/rank_threads.hpp"

#include <algorithm>

#include "core/worker_pool.hpp"

namespace qcoll::ops {

int rank_threads(int local_ranks) {
  if (const int explicit_count = settings::rank_threads(); explicit_count > 0) return explicit_count;
  const int cores = core::WorkerPool::host_cores();
  return std::clamp(cores / std::max(1, local_ranks), 1, kMaxRankThreads);
}

}  // namespace qcoll::ops
