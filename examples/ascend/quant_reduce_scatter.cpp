// aclnnQuantReduceScatter as the vendor's samples call it, on a CPU: one process, a thread
// per device, HcclCommInitAll. INT8 x with fp32 scales (pertoken-pergroup), bf16 output; each
// device checks every bit of its output against the definition (sample_data.h).
// Usage: quant_reduce_scatter [ndev = 8]   (2, 4 or 8)
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quant_reduce_scatter.h"
#include "hccl/hccl.h"
#include "sample_acl.h"
#include "sample_data.h"

static int LaunchOneThread(Args& args) {
  int ret = aclrtSetCurrentContext(args.context);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetCurrentContext failed. ERROR: %d\n", ret); return ret);
  char hcomName[128] = {0};
  ret = HcclGetCommName(args.hcclComm, hcomName);
  CHECK_RET(ret == HCCL_SUCCESS, LOG_PRINT("HcclGetCommName failed. ERROR: %d\n", ret); return -1);

  const int64_t BS = 4 * args.ndev, H = 2048;
  std::vector<int64_t> xShape = {BS, H};
  std::vector<int64_t> scalesShape = {BS, H / 128};
  std::vector<int64_t> outShape = {BS / args.ndev, H};
  std::vector<int8_t> xHost(GetShapeSize(xShape));
  std::vector<float> scalesHost(GetShapeSize(scalesShape));
  for (int64_t r = 0; r < BS; ++r)
    for (int64_t h = 0; h < H; ++h) xHost[r * H + h] = sample::kg_x(args.rankId, r, h);
  for (int64_t r = 0; r < BS; ++r)
    for (int64_t g = 0; g < H / 128; ++g) scalesHost[r * (H / 128) + g] = sample::kg_scale(args.rankId, r, g);
  std::vector<uint16_t> outHost(GetShapeSize(outShape), 0);

  void *xDevice = nullptr, *scalesDevice = nullptr, *outDevice = nullptr;
  aclTensor *x = nullptr, *scales = nullptr, *output = nullptr;
  ret = CreateAclTensor(xHost, xShape, &xDevice, ACL_INT8, &x);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(scalesHost, scalesShape, &scalesDevice, ACL_FLOAT, &scales);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(outHost, outShape, &outDevice, ACL_BF16, &output);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  ret = RunOp("aclnnQuantReduceScatter", aclnnQuantReduceScatterGetWorkspaceSize, aclnnQuantReduceScatter, x, scales,
              output, hcomName, args.stream);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  const size_t outBytes = outHost.size() * sizeof(uint16_t);
  ret = aclrtMemcpy(outHost.data(), outBytes, outDevice, outBytes, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  int64_t wrong = 0;
  const int64_t rows = BS / args.ndev;
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t row = args.rankId * rows + t;
      const float want = sample::reduce(args.ndev, [&](int k) { return sample::kg_term(k, row, h); });
      if (outHost[t * H + h] != sample::bf16_bits(want)) ++wrong;
    }
  LOG_PRINT("device %d: output (%lld, %lld) bf16, %lld of %lld elements differ from the reference\n", args.rankId,
            static_cast<long long>(rows), static_cast<long long>(H), static_cast<long long>(wrong),
            static_cast<long long>(rows * H));

  aclDestroyTensor(x);
  aclDestroyTensor(scales);
  aclDestroyTensor(output);
  aclrtFree(xDevice);
  aclrtFree(scalesDevice);
  aclrtFree(outDevice);
  return wrong == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  return RunThreadPerDevice(argc > 1 ? std::atoi(argv[1]) : 8, "quant_reduce_scatter", LaunchOneThread);
}
