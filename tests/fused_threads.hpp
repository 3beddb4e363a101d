// The fused check (tests/fused_check.hpp) on a thread group: every rank runs every case, with
// the fused operators' chunks capped at chunk_rows rows (0: the plan's own); each rank's
// failures are reported with the first one.
#pragma once
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "fused_check.hpp"
#include "ops/executor.hpp"
#include "ops_harness.hpp"

namespace fused {

inline void expect_cases_pass_on_threads(int n, std::size_t chunk_rows, const std::vector<Case>& cases) {
  qcoll::ops::testing::set_fused_chunk_rows_for_test(chunk_rows);
  harness::Group g(n);
  std::vector<std::vector<std::string>> errors(n);
  g.run([&](int r) {
    for (const Case& c : cases) {
      std::string e = check_fused_rank(c, g.name(), r, n);
      if (!e.empty()) errors[r].push_back(e);
    }
  });
  qcoll::ops::testing::set_fused_chunk_rows_for_test(0);
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(errors[r].empty()) << errors[r].size() << " failures on rank " << r << ", first: " << errors[r][0];
  }
}

}  // namespace fused
