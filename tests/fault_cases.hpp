// The GoogleTest side of the fault matrix, shared by the thread transport's cases
// (test_faults_threads.cpp) and the forked shm ranks' (test_faults_shm.cpp): the rank count,
// the bounds of a fast failure, a call per rank, and the checks of a failed or a good case.
// (tests/mpi/test_mpi_faults.cpp runs without GoogleTest and checks on each rank itself.)
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fault_matrix.hpp"

namespace faults {

constexpr int kCaseRanks = 4;
// Fast-failure cases run with a long timeout and must end far below it: they cannot have
// relied on the timeout. (Missing-peer cases run with a short one, each file its own.)
constexpr double kLongTimeout = 30.0;
constexpr double kFastBound = 10.0;

// The same call on every rank (a case then changes one rank's).
inline std::vector<RankCall> all_same(const RankCall& c = RankCall{}) { return std::vector<RankCall>(kCaseRanks, c); }

// Every rank that called failed: `faulty` with faulty_status, the others RUNTIME_ERROR,
// all with a message, no output written, each within `bound` seconds (and, when
// min_seconds > 0, not before it: they waited for the timeout).
inline void expect_all_failed(const std::vector<RankResult>& rs, int faulty, qcollStatus faulty_status, double bound,
                              double min_seconds = 0) {
  for (int r = 0; r < static_cast<int>(rs.size()); ++r) {
    const RankResult& x = rs[r];
    if (!x.called) continue;
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + x.message);
    EXPECT_EQ(x.status, r == faulty ? faulty_status : QCOLL_RUNTIME_ERROR);
    EXPECT_FALSE(x.message.empty());
    EXPECT_TRUE(x.output_untouched) << "output written by a failed call";
    EXPECT_LE(x.seconds, bound);
    if (r != faulty) {
      EXPECT_GE(x.seconds, min_seconds);
    }
  }
}

// Every rank refused the call itself: `status`, a message containing `text`, no output
// written, within `bound` seconds (a rule every rank checks, e.g. the rank count).
inline void expect_every_rank_refused(const std::vector<RankResult>& rs, qcollStatus status, const std::string& text,
                                      double bound) {
  for (int r = 0; r < static_cast<int>(rs.size()); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + rs[r].message);
    EXPECT_TRUE(rs[r].called);
    EXPECT_EQ(rs[r].status, status);
    EXPECT_NE(rs[r].message.find(text), std::string::npos);
    EXPECT_TRUE(rs[r].output_untouched) << "output written by a failed call";
    EXPECT_LE(rs[r].seconds, bound);
  }
}

// Every rank succeeded with the reference's result.
inline void expect_success(const std::vector<RankResult>& rs) {
  for (int r = 0; r < static_cast<int>(rs.size()); ++r) {
    EXPECT_EQ(rs[r].status, QCOLL_SUCCESS) << "rank " << r << ": " << rs[r].message;
    EXPECT_TRUE(rs[r].output_correct) << "rank " << r;
  }
}

}  // namespace faults
