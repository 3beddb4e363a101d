// What every vendor sample defines before its operator code: the CHECK_RET / LOG_PRINT
// macros, the element count of a shape, and a device tensor made from host data
// (aclrtMalloc + aclrtMemcpy + aclCreateTensor, contiguous ND).
#pragma once
#include <cstdio>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "hccl/hccl.h"

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

#define LOG_PRINT(message, ...)     \
  do {                              \
    printf(message, ##__VA_ARGS__); \
  } while (0)

inline int64_t GetShapeSize(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

template <typename T>
inline int CreateAclTensor(const std::vector<T>& hostData, const std::vector<int64_t>& shape, void** deviceAddr,
                           aclDataType dataType, aclTensor** tensor) {
  const size_t size = static_cast<size_t>(GetShapeSize(shape)) * sizeof(T);
  int ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg()); return ret);
  ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg()); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                            shape.size(), *deviceAddr);
  CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return -1);
  return ACL_SUCCESS;
}

// Runs one aclnn operator the way the samples do: GetWorkspaceSize, a workspace from
// aclrtMalloc when one is needed, the launch on the stream, aclrtSynchronizeStreamWithTimeout.
template <class Prepare, class Launch>
inline int RunOp(const char* name, Prepare prepare, Launch launch, aclTensor* x, aclTensor* scales, aclTensor* output,
                 const char* group, aclrtStream stream) {
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  void* workspaceAddr = nullptr;
  int ret = prepare(x, scales, group, "sum", output, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("%sGetWorkspaceSize failed. ERROR: %d %s\n", name, ret, aclGetRecentErrMsg());
            return ret);
  if (workspaceSize > 0) {  // the shared-memory transport stages the result here
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  ret = launch(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("%s failed. ERROR: %d %s\n", name, ret, aclGetRecentErrMsg()); return ret);
  ret = aclrtSynchronizeStreamWithTimeout(stream, 20000);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStreamWithTimeout failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return ret);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  return ACL_SUCCESS;
}

// What each device's thread gets.
struct Args {
  int rankId;
  int ndev;
  HcclComm hcclComm;
  aclrtStream stream;
  aclrtContext context;
};

// The vendor samples' main: aclInit, a context and a stream per device, HcclCommInitAll, a
// thread per device running `launch`, then everything destroyed in order. 0 when every
// device's launch returned 0.
inline int RunThreadPerDevice(int ndev, const char* name, int (*launch)(Args&)) {
  int ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
  std::vector<aclrtStream> stream(ndev);
  std::vector<aclrtContext> context(ndev);
  std::vector<int32_t> devices(ndev);
  for (int i = 0; i < ndev; i++) {
    devices[i] = i;
    ret = aclrtSetDevice(i);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateContext(&context[i], i);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateContext failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateStream(&stream[i]);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
  }
  std::vector<HcclComm> comms(ndev);
  ret = HcclCommInitAll(ndev, devices.data(), comms.data());
  CHECK_RET(ret == HCCL_SUCCESS, LOG_PRINT("HcclCommInitAll failed. ERROR: %d %s\n", ret, aclGetRecentErrMsg());
            return ret);

  std::vector<Args> args(ndev);
  std::vector<int> results(ndev, -1);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; i++) {
    args[i] = Args{i, ndev, comms[i], stream[i], context[i]};
    threads.emplace_back([&, i] { results[i] = launch(args[i]); });
  }
  int failed = 0;
  for (int i = 0; i < ndev; i++) {
    threads[i].join();
    failed += results[i] != 0;
  }
  for (int i = 0; i < ndev; i++) {
    HcclCommDestroy(comms[i]);
    aclrtDestroyStream(stream[i]);
    aclrtDestroyContext(context[i]);
    aclrtResetDevice(i);
  }
  aclFinalize();
  LOG_PRINT("%s: %d devices, %s\n", name, ndev, failed ? "FAILED" : "all outputs bit-exact");
  return failed ? 1 : 0;
}
