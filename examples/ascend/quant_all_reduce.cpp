// aclnnQuantAllReduce as the vendor's samples call it, on a CPU: one process, a thread per
// device, HcclCommInitAll. FLOAT8_E4M3FN x with FLOAT8_E8M0 scales (MX, one per 32
// elements, shape (BS, H/64, 2)), fp32 output; every device checks that its output has the
// bits of the definition (sample_data.h), so all devices hold the same bits.
// Usage: quant_all_reduce [ndev = 8]   (2, 4 or 8)
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quant_all_reduce.h"
#include "hccl/hccl.h"
#include "sample_acl.h"
#include "sample_data.h"

static int LaunchOneThread(Args& args) {
  int ret = aclrtSetCurrentContext(args.context);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetCurrentContext failed. ERROR: %d\n", ret); return ret);
  char hcomName[128] = {0};
  ret = HcclGetCommName(args.hcclComm, hcomName);
  CHECK_RET(ret == HCCL_SUCCESS, LOG_PRINT("HcclGetCommName failed. ERROR: %d\n", ret); return -1);

  const int64_t B = 2, S = 2 * args.ndev, H = 1024;
  std::vector<int64_t> xShape = {B, S, H};
  std::vector<int64_t> scalesShape = {B, S, H / 64, 2};
  std::vector<int64_t> outShape = {B, S, H};
  std::vector<uint8_t> xHost(GetShapeSize(xShape));
  std::vector<uint8_t> scalesHost(GetShapeSize(scalesShape));
  for (int64_t r = 0; r < B * S; ++r)
    for (int64_t h = 0; h < H; ++h) xHost[r * H + h] = sample::mx_x(args.rankId, r, h);
  for (int64_t r = 0; r < B * S; ++r)
    for (int64_t g = 0; g < H / 32; ++g) scalesHost[r * (H / 32) + g] = sample::mx_scale(args.rankId, r, g);
  std::vector<float> outHost(GetShapeSize(outShape), 0.0f);

  void *xDevice = nullptr, *scalesDevice = nullptr, *outDevice = nullptr;
  aclTensor *x = nullptr, *scales = nullptr, *output = nullptr;
  ret = CreateAclTensor(xHost, xShape, &xDevice, ACL_FLOAT8_E4M3FN, &x);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(scalesHost, scalesShape, &scalesDevice, ACL_FLOAT8_E8M0, &scales);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(outHost, outShape, &outDevice, ACL_FLOAT, &output);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  ret = RunOp("aclnnQuantAllReduce", aclnnQuantAllReduceGetWorkspaceSize, aclnnQuantAllReduce, x, scales, output,
              hcomName, args.stream);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  const size_t outBytes = outHost.size() * sizeof(float);
  ret = aclrtMemcpy(outHost.data(), outBytes, outDevice, outBytes, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  int64_t wrong = 0;
  for (int64_t row = 0; row < B * S; ++row)
    for (int64_t h = 0; h < H; ++h) {
      const float want = sample::reduce(args.ndev, [&](int k) { return sample::mx_term(k, row, h); });
      if (std::memcmp(&outHost[row * H + h], &want, sizeof want) != 0) ++wrong;
    }
  LOG_PRINT("device %d: output (%lld, %lld, %lld) fp32, %lld elements differ from the reference\n", args.rankId,
            static_cast<long long>(B), static_cast<long long>(S), static_cast<long long>(H),
            static_cast<long long>(wrong));

  aclDestroyTensor(x);
  aclDestroyTensor(scales);
  aclDestroyTensor(output);
  aclrtFree(xDevice);
  aclrtFree(scalesDevice);
  aclrtFree(outDevice);
  return wrong == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  return RunThreadPerDevice(argc > 1 ? std::atoi(argv[1]) : 8, "quant_all_reduce", LaunchOneThread);
}
