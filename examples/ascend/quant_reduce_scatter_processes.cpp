// aclnnQuantReduceScatter and aclnnQuantAllReduce across processes of one host, as the
// vendor's HcclCommInitRootInfo samples do: the parent makes the root info (HcclGetRootInfo)
// and forks one process per device; each sets its device, joins with HcclCommInitRootInfo,
// runs both operators on a stream and checks every output bit (sample_data.h).
// Usage: quant_reduce_scatter_processes [ndev = 8]   (2, 4 or 8)
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quant_all_reduce.h"
#include "aclnnop/aclnn_quant_reduce_scatter.h"
#include "hccl/hccl.h"
#include "sample_acl.h"
#include "sample_data.h"

static int RunRank(int rank, int ndev, const HcclRootInfo& rootInfo) {
  int ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSetDevice(rank);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
  aclrtStream stream = nullptr;
  ret = aclrtCreateStream(&stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
  HcclComm comm = nullptr;
  ret = HcclCommInitRootInfo(ndev, &rootInfo, rank, &comm);
  CHECK_RET(ret == HCCL_SUCCESS, LOG_PRINT("HcclCommInitRootInfo failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return ret);
  char hcomName[128] = {0};
  ret = HcclGetCommName(comm, hcomName);
  CHECK_RET(ret == HCCL_SUCCESS, LOG_PRINT("HcclGetCommName failed. ERROR: %d\n", ret); return ret);

  const int64_t BS = 2 * ndev, H = 1024, rows = BS / ndev;
  std::vector<int64_t> xShape = {BS, H}, scalesShape = {BS, H / 128}, rsShape = {rows, H};
  std::vector<int8_t> xHost(BS * H);
  std::vector<float> scalesHost(BS * (H / 128));
  for (int64_t r = 0; r < BS; ++r)
    for (int64_t h = 0; h < H; ++h) xHost[r * H + h] = sample::kg_x(rank, r, h);
  for (int64_t r = 0; r < BS; ++r)
    for (int64_t g = 0; g < H / 128; ++g) scalesHost[r * (H / 128) + g] = sample::kg_scale(rank, r, g);
  std::vector<uint16_t> rsHost(rows * H, 0);
  std::vector<float> arHost(BS * H, 0.0f);
  void *xDevice = nullptr, *scalesDevice = nullptr, *rsDevice = nullptr, *arDevice = nullptr;
  aclTensor *x = nullptr, *scales = nullptr, *rsOut = nullptr, *arOut = nullptr;
  CHECK_RET(CreateAclTensor(xHost, xShape, &xDevice, ACL_INT8, &x) == ACL_SUCCESS, return 1);
  CHECK_RET(CreateAclTensor(scalesHost, scalesShape, &scalesDevice, ACL_FLOAT, &scales) == ACL_SUCCESS, return 1);
  CHECK_RET(CreateAclTensor(rsHost, rsShape, &rsDevice, ACL_BF16, &rsOut) == ACL_SUCCESS, return 1);
  CHECK_RET(CreateAclTensor(arHost, xShape, &arDevice, ACL_FLOAT, &arOut) == ACL_SUCCESS, return 1);

  ret = RunOp("aclnnQuantReduceScatter", aclnnQuantReduceScatterGetWorkspaceSize, aclnnQuantReduceScatter, x, scales,
              rsOut, hcomName, stream);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = RunOp("aclnnQuantAllReduce", aclnnQuantAllReduceGetWorkspaceSize, aclnnQuantAllReduce, x, scales, arOut,
              hcomName, stream);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  aclrtMemcpy(rsHost.data(), rsHost.size() * 2, rsDevice, rsHost.size() * 2, ACL_MEMCPY_DEVICE_TO_HOST);
  aclrtMemcpy(arHost.data(), arHost.size() * 4, arDevice, arHost.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
  int64_t wrong = 0;
  for (int64_t row = 0; row < BS; ++row)
    for (int64_t h = 0; h < H; ++h) {
      const float want = sample::reduce(ndev, [&](int k) { return sample::kg_term(k, row, h); });
      if (std::memcmp(&arHost[row * H + h], &want, 4) != 0) ++wrong;
      if (row / rows == rank && rsHost[(row - rank * rows) * H + h] != sample::bf16_bits(want)) ++wrong;
    }
  LOG_PRINT("process of device %d (%s): %lld elements differ from the reference\n", rank, hcomName,
            static_cast<long long>(wrong));
  for (aclTensor* t : {x, scales, rsOut, arOut}) aclDestroyTensor(t);
  for (void* p : {xDevice, scalesDevice, rsDevice, arDevice}) aclrtFree(p);
  HcclCommDestroy(comm);
  aclrtDestroyStream(stream);
  aclrtResetDevice(rank);
  aclFinalize();
  return wrong == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const int ndev = argc > 1 ? std::atoi(argv[1]) : 8;
  HcclRootInfo rootInfo;
  int ret = HcclGetRootInfo(&rootInfo);  // this process serves the rendezvous: it waits below
  CHECK_RET(ret == HCCL_SUCCESS, LOG_PRINT("HcclGetRootInfo failed. ERROR: %d\n", ret); return 1);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < ndev; ++rank) {
    fflush(stdout);
    const pid_t pid = fork();
    CHECK_RET(pid >= 0, LOG_PRINT("fork failed\n"); return 1);
    if (pid == 0) {
      const int rc = RunRank(rank, ndev, rootInfo);
      fflush(stdout);
      _exit(rc);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  LOG_PRINT("quant_reduce_scatter_processes: %d processes, %s\n", ndev, failed ? "FAILED" : "all outputs bit-exact");
  return failed ? 1 : 0;
}
