// The Ascend layer's checks on tensor descriptors whose sizes do not fit in 64 bits
// (src/ascend/aclnn_ops.cpp): a clear PARAM_INVALID naming x, never undefined arithmetic.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quant_reduce_scatter.h"
#include "qcoll/qcoll.h"

namespace {

// Both ranks of a 2-rank thread group make the same call (a refused call still takes part
// in the agreement, so both must come); returns each rank's status and message.
void both_ranks(const std::vector<int64_t>& xs, const std::vector<int64_t>& ss, const std::vector<int64_t>& os,
                aclnnStatus st[2], std::string msg[2]) {
  qcollThreadGroup* g = nullptr;
  ASSERT_EQ(qcollThreadGroupCreate("asc-desc", 2, &g), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      ASSERT_EQ(qcollThreadGroupJoin(g, r), QCOLL_SUCCESS);
      void* mem = nullptr;
      ASSERT_EQ(aclrtMalloc(&mem, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
      aclTensor* x = aclCreateTensor(xs.data(), xs.size(), ACL_INT8, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, mem);
      aclTensor* s = aclCreateTensor(ss.data(), ss.size(), ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, mem);
      aclTensor* o = aclCreateTensor(os.data(), os.size(), ACL_BF16, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, mem);
      ASSERT_TRUE(x && s && o) << aclGetRecentErrMsg();
      uint64_t ws = 0;
      aclOpExecutor* exec = nullptr;
      st[r] = aclnnQuantReduceScatterGetWorkspaceSize(x, s, "asc-desc", "sum", o, &ws, &exec);
      msg[r] = aclGetRecentErrMsg();
      EXPECT_EQ(exec, nullptr);
      aclDestroyTensor(x);
      aclDestroyTensor(s);
      aclDestroyTensor(o);
      EXPECT_EQ(aclrtFree(mem), ACL_SUCCESS);
      qcollThreadGroupLeave(g);
    });
  for (auto& t : ts) t.join();
  qcollThreadGroupDestroy(g);
}

TEST(AscendDescriptors, BatchTimesSequenceBeyondInt64IsRefusedNamingX) {
  const int64_t big = int64_t(1) << 32;  // B x S = 2^64
  aclnnStatus st[2];
  std::string msg[2];
  both_ranks({big, big, 1024}, {big, big, 8}, {big, 1024}, st, msg);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r], ACLNN_ERR_PARAM_INVALID) << msg[r];
    EXPECT_NE(msg[r].find("x: BS (the product of the dimensions before H) must fit in int64"), std::string::npos)
        << msg[r];
  }
}

TEST(AscendDescriptors, ElementsBeyondSizeTAreRefused) {
  // B x S fits in int64 but B x S x H does not fit in 64 bits: refused (today by the
  // output-shape rule, which has no shape to offer), never accepted over a 4 KiB allocation.
  const int64_t b = int64_t(1) << 31, s = int64_t(1) << 31;  // B x S = 2^62, x 1024 = 2^72
  aclnnStatus st[2];
  std::string msg[2];
  both_ranks({b, s, 1024}, {b, s, 8}, {(b * s) / 2, 1024}, st, msg);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r], ACLNN_ERR_PARAM_INVALID) << msg[r];
    EXPECT_FALSE(msg[r].empty());
  }
}

}  // namespace
