#include "core/simd_targets.hpp"

#include "hwy/targets.h"

namespace qcoll::core {

const std::vector<int64_t>& usable_simd_targets() {
  static const std::vector<int64_t> targets = [] {
    std::vector<int64_t> out;
    for (int64_t t = hwy::SupportedTargets() & HWY_TARGETS; t != 0; t &= t - 1) {
      out.push_back(t & ~(t - 1));  // lowest bit first = best target first
    }
    return out;
  }();
  return targets;
}

std::vector<std::string> usable_simd_target_names() {
  std::vector<std::string> names;
  for (int64_t t : usable_simd_targets()) names.emplace_back(hwy::TargetName(t));
  return names;
}

const char* best_simd_target_name() {
  const std::vector<int64_t>& t = usable_simd_targets();
  return t.empty() ? "scalar" : hwy::TargetName(t.front());
}

int64_t usable_simd_target(std::string_view name) {
  for (int64_t t : usable_simd_targets())
    if (name == hwy::TargetName(t)) return t;
  return 0;
}

std::size_t dispatch_table_index(int64_t t) {
  const int64_t mask = (HWY_CHOSEN_TARGET_SHIFT(t) | HWY_CHOSEN_TARGET_MASK_SCALAR) & HWY_CHOSEN_TARGET_MASK_TARGETS;
  return hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(mask));
}

}  // namespace qcoll::core
