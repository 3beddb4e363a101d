// How many threads one rank uses for its dequantize-and-reduce: QCOLL_RANK_THREADS, parsed
// by the core settings (qcoll/settings.hpp).
#pragma once
#include "qcoll/settings.hpp"

namespace qcoll::ops {

using settings::kMaxRankThreads;

// QCOLL_RANK_THREADS, read at every call: a whole number in [1, 64] is used as is; unset,
// "0" or "auto" mean the host's cores shared among the communicator's ranks on this host,
// max(1, cores / local_ranks). Any other value falls back to auto (with a warning). Results
// do not depend on the thread count (each element is computed the same way; see kernels).
int rank_threads(int local_ranks);

// The parsing rule alone: the explicit count for `text`, or 0 for auto (also for invalid
// values; *valid says which).
inline int parse_rank_threads(const char* text, bool* valid) {
  const auto v = settings::parse_rank_threads(text);
  *valid = v.has_value();
  return v.value_or(0);
}

}  // namespace qcoll::ops
