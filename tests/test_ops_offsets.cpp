// Phase one on tensors whose offset puts them past the end of the address space: refused
// with PARAM_INVALID naming the tensor (contract.md §validation rule 10), never a wrapped
// pointer (undefined; found by fuzz/fuzz_ascend_tensors.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "qcoll/qcoll.h"

namespace {

struct Offsets {
  int64_t x = 0, scales = 0, out = 0;
};

// Both ranks of a 2-rank thread group call reduce-scatter phase one on 8 x 1024 int8 x,
// fp32 scales and a float output with the given offsets; returns the statuses and messages.
void phase_one(const Offsets& off, qcollStatus st[2], std::string msg[2]) {
  qcollThreadGroup* g = nullptr;
  ASSERT_EQ(qcollThreadGroupCreate("offsets", 2, &g), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      ASSERT_EQ(qcollThreadGroupJoin(g, r), QCOLL_SUCCESS);
      std::vector<uint8_t> xb(8 * 1024), sb(8 * 8 * 4), ob(4 * 1024 * 4);
      const int64_t xs[] = {8, 1024}, ss[] = {8, 8}, os[] = {4, 1024};
      qcollTensor* x = qcollCreateTensor(xs, 2, QCOLL_DT_INT8, nullptr, off.x, QCOLL_FORMAT_ND, nullptr, 0, xb.data());
      qcollTensor* s =
          qcollCreateTensor(ss, 2, QCOLL_DT_FLOAT, nullptr, off.scales, QCOLL_FORMAT_ND, nullptr, 0, sb.data());
      qcollTensor* o =
          qcollCreateTensor(os, 2, QCOLL_DT_FLOAT, nullptr, off.out, QCOLL_FORMAT_ND, nullptr, 0, ob.data());
      ASSERT_TRUE(x && s && o) << qcollGetRecentErrMsg();
      uint64_t ws = 0;
      qcollOpExecutor* exec = nullptr;
      st[r] = qcollQuantReduceScatterGetWorkspaceSize(x, s, "offsets", "sum", o, &ws, &exec);
      msg[r] = qcollGetRecentErrMsg();
      if (st[r] == QCOLL_SUCCESS) qcollDestroyExecutor(exec);
      qcollDestroyTensor(x);
      qcollDestroyTensor(s);
      qcollDestroyTensor(o);
      qcollThreadGroupLeave(g);
    });
  for (auto& t : ts) t.join();
  qcollThreadGroupDestroy(g);
}

TEST(OpsOffsets, AnOffsetPastTheAddressSpaceIsRefusedNamingTheTensor) {
  const int64_t huge = std::numeric_limits<int64_t>::max();
  for (const char* which : {"x", "scales", "output"}) {
    Offsets off;
    (which[0] == 'x' ? off.x : which[0] == 's' ? off.scales : off.out) = huge;
    qcollStatus st[2];
    std::string msg[2];
    phase_one(off, st, msg);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(st[r], QCOLL_PARAM_INVALID) << which << ": " << msg[r];
      EXPECT_EQ(msg[r].rfind(std::string(which) + ": offset " + std::to_string(huge), 0), 0u) << msg[r];
      EXPECT_NE(msg[r].find("puts the tensor beyond any memory"), std::string::npos) << msg[r];
    }
  }
}

TEST(OpsOffsets, ASmallOffsetIsStillAccepted) {
  Offsets off;
  off.out = 3;  // the caller's buffer is larger: phase one cannot know, and accepts
  qcollStatus st[2];
  std::string msg[2];
  phase_one(off, st, msg);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(st[r], QCOLL_SUCCESS) << msg[r];
}

}  // namespace
