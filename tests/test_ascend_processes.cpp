// qcoll::ascend across forked processes (docs/ascend.md): HcclGetRootInfo in the parent,
// HcclCommInitRootInfo in each child, then the aclnn operators on the shared-memory
// transport (with the workspace it asks for, from aclrtMalloc), and the HCCL_BUFFSIZE window
// rule is checked.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quant_all_reduce.h"
#include "hccl/hccl.h"

namespace {

// Runs body(rank) in n forked children (exit status = its return value); true if all gave 0.
bool run_processes(int n, const std::function<int(int, const HcclRootInfo&)>& body) {
  HcclRootInfo ri;
  if (HcclGetRootInfo(&ri) != HCCL_SUCCESS) return false;
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      const int rc = body(r, ri);
      fflush(stdout);
      _exit(rc);
    }
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

// One QuantAllReduce of an (8, 1024) INT8 x over the processes' communicator; returns 0 when
// its phase one gives `want` (and, on success, it runs with the workspace asked for and every
// output element is n * 1.0).
int all_reduce_rank(int rank, int n, const HcclRootInfo& ri, aclnnStatus want, const char* message) {
  if (aclrtSetDevice(rank) != ACL_SUCCESS) return 10;
  HcclComm comm = nullptr;
  if (HcclCommInitRootInfo(n, &ri, rank, &comm) != HCCL_SUCCESS) {
    std::printf("rank %d: HcclCommInitRootInfo: %s\n", rank, aclGetRecentErrMsg());
    return 11;
  }
  char name[128];
  HcclGetCommName(comm, name);
  const int64_t xs[2] = {8, 1024}, ss[2] = {8, 8};
  std::vector<int8_t> x(8 * 1024, 1);
  std::vector<float> s(64, 1.0f), out(8 * 1024, 0.0f);
  aclTensor* tx = aclCreateTensor(xs, 2, ACL_INT8, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, x.data());
  aclTensor* ts = aclCreateTensor(ss, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, s.data());
  aclTensor* to = aclCreateTensor(xs, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, out.data());
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  const aclnnStatus st = aclnnQuantAllReduceGetWorkspaceSize(tx, ts, name, "sum", to, &ws, &exec);
  int rc = 0;
  if (st != want || std::string(aclGetRecentErrMsg()).find(message) == std::string::npos) {
    std::printf("rank %d: status %d, message '%s'\n", rank, st, aclGetRecentErrMsg());
    rc = 12;
  } else if (st == ACLNN_SUCCESS) {
    void* w = nullptr;
    if (ws > 0 && aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 13;  // as the samples do
    aclrtStream stream = nullptr;
    aclrtCreateStream(&stream);
    if (aclnnQuantAllReduce(w, ws, exec, stream) != ACLNN_SUCCESS ||
        aclrtSynchronizeStreamWithTimeout(stream, 20000) != ACL_SUCCESS) {
      std::printf("rank %d: %s\n", rank, aclGetRecentErrMsg());
      rc = 14;
    }
    for (float v : out)
      if (v != static_cast<float>(n)) rc = 15;
    aclrtDestroyStream(stream);
    if (w != nullptr) aclrtFree(w);
  }
  aclDestroyTensor(tx);
  aclDestroyTensor(ts);
  aclDestroyTensor(to);
  HcclCommDestroy(comm);
  return rc;
}

TEST(AscendProcesses, RootInfoCommunicatorAllReduce) {
  for (int n : {2, 4})
    EXPECT_TRUE(
        run_processes(n, [n](int r, const HcclRootInfo& ri) { return all_reduce_rank(r, n, ri, ACLNN_SUCCESS, ""); }))
        << n << " processes";
}

TEST(AscendProcesses, WindowTooSmallNamesHcclBuffsize) {
  EXPECT_TRUE(run_processes(2, [](int r, const HcclRootInfo& ri) {
    setenv("HCCL_BUFFSIZE", "2", 1);  // read when the communicator is made: 2 MB cannot hold one chunk
    return all_reduce_rank(r, 2, ri, ACLNN_ERR_PARAM_INVALID, "HCCL_BUFFSIZE");
  }));
}

}  // namespace
