#include "ops/rank_threads.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace qcoll::ops {

int parse_rank_threads(const char* text, bool* valid) {
  *valid = true;
  if (text == nullptr || std::strcmp(text, "auto") == 0 || std::strcmp(text, "0") == 0) return 0;
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 1 || v > kMaxRankThreads) {
    *valid = false;
    return 0;
  }
  return static_cast<int>(v);
}

int rank_threads(int local_ranks) {
  bool valid = true;
  int explicit_count = parse_rank_threads(std::getenv("QCOLL_RANK_THREADS"), &valid);
  if (explicit_count > 0) return explicit_count;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::clamp(cores / std::max(1, local_ranks), 1, kMaxRankThreads);
}

}  // namespace qcoll::ops
