// The Ascend emulation (qcoll::ascend, docs/ascend.md) through the vendor's own headers: the
// status of aclnnQuantReduceScatter / aclnnQuantAllReduce phase one per case of the vendor's
// documented constraints, in the vendor's check order (one table row each, every rank making
// the same call); the allocation-size refusal; the runtime's checks (devices, memory, streams).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quant_all_reduce.h"
#include "aclnnop/aclnn_quant_reduce_scatter.h"
#include "hccl/hccl.h"
#include "qcoll/qcoll.h"  // qcollSetContract (docs/contract.md §ext-settings)

namespace {

enum class Op { ReduceScatter, AllReduce };
enum class Group { Own, Null, Empty, Long128, Unknown };

struct Call {
  Op op = Op::ReduceScatter;
  std::vector<int64_t> xshape{8, 1024}, sshape{8, 8}, oshape{4, 1024};
  aclDataType xdt = ACL_INT8, sdt = ACL_FLOAT, odt = ACL_BF16;
  aclFormat xfmt = ACL_FORMAT_ND, sfmt = ACL_FORMAT_ND, ofmt = ACL_FORMAT_ND;
  bool null_x = false, null_scales = false, null_out = false, null_ws = false, null_exec = false;
  bool null_xdata = false;     // x's data pointer
  int scales_elem_bytes = 0;   // > 0: scales allocated with this element size (the vendor sample's slip)
  int short_scales_rank = -1;  // >= 0: only this rank allocates its scales with 1-byte elements
  Group group = Group::Own;
  const char* reduce_op = "sum";
  int device_offset = 0;    // ranks run on devices rank + offset
  std::size_t x_bytes = 0;  // > 0: x's allocation in bytes (else numel x its element size)
};

struct Row {
  const char* name;
  std::function<void(Call&)> change;
  aclnnStatus status;
  std::vector<std::string> message;  // substrings of aclGetRecentErrMsg()
};

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

size_t elem_bytes(aclDataType t) { return t == ACL_FLOAT ? 4 : (t == ACL_BF16 || t == ACL_FLOAT16) ? 2 : 1; }

class Ascend : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    aclInit(nullptr);
    int32_t devices[2] = {0, 1};
    ASSERT_EQ(HcclCommInitAll(2, devices, comms_), HCCL_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(HcclGetCommName(comms_[0], name_), HCCL_SUCCESS);
  }
  static void TearDownTestSuite() {
    for (HcclComm c : comms_) EXPECT_EQ(HcclCommDestroy(c), HCCL_SUCCESS);
  }
  static HcclComm comms_[2];
  static char name_[128];
};
HcclComm Ascend::comms_[2];
char Ascend::name_[128];

// Phase one (and, when it succeeds, phase two on a stream) on both ranks, each on its own
// thread and device. Returns each rank's status and message.
void run(const Call& c, const char* group_name, std::vector<aclnnStatus>& st, std::vector<std::string>& msg) {
  st.assign(2, -1);
  msg.assign(2, "");
  const std::string long_name(128, 'g');
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      ASSERT_EQ(aclrtSetDevice(r + c.device_offset), ACL_SUCCESS);
      aclrtStream stream = nullptr;
      ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
      auto make = [](const std::vector<int64_t>& shape, aclDataType dt, aclFormat fmt, size_t bytes, bool null_data,
                     void** dev) {
        if (!null_data) {
          EXPECT_EQ(aclrtMalloc(dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
          EXPECT_EQ(aclrtMemset(*dev, bytes, 0, bytes), ACL_SUCCESS);
        }
        std::vector<int64_t> strides(shape.size(), 1);
        for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
          strides[i] = strides[i + 1] * shape[i + 1];
        return aclCreateTensor(shape.data(), shape.size(), dt, strides.data(), 0, fmt, shape.data(), shape.size(),
                               null_data ? nullptr : *dev);
      };
      auto bytes = [](const std::vector<int64_t>& s, size_t e) { return std::max<size_t>(numel(s) * e, 1); };
      void *xd = nullptr, *sd = nullptr, *od = nullptr;
      aclTensor* x =
          make(c.xshape, c.xdt, c.xfmt, c.x_bytes ? c.x_bytes : bytes(c.xshape, elem_bytes(c.xdt)), c.null_xdata, &xd);
      aclTensor* s = make(c.sshape, c.sdt, c.sfmt,
                          bytes(c.sshape, c.scales_elem_bytes        ? c.scales_elem_bytes
                                          : c.short_scales_rank == r ? 1
                                                                     : elem_bytes(c.sdt)),
                          false, &sd);
      aclTensor* o = make(c.oshape, c.odt, c.ofmt, bytes(c.oshape, elem_bytes(c.odt)), false, &od);
      const char* group = c.group == Group::Own       ? group_name
                          : c.group == Group::Null    ? nullptr
                          : c.group == Group::Empty   ? ""
                          : c.group == Group::Unknown ? "no-such-comm"
                                                      : long_name.c_str();
      uint64_t ws = 0;
      aclOpExecutor* exec = nullptr;
      auto prepare =
          c.op == Op::ReduceScatter ? aclnnQuantReduceScatterGetWorkspaceSize : aclnnQuantAllReduceGetWorkspaceSize;
      st[r] = prepare(c.null_x ? nullptr : x, c.null_scales ? nullptr : s, group, c.reduce_op, c.null_out ? nullptr : o,
                      c.null_ws ? nullptr : &ws, c.null_exec ? nullptr : &exec);
      msg[r] = aclGetRecentErrMsg();
      if (st[r] == ACLNN_SUCCESS) {
        EXPECT_EQ(ws, 0u);  // the thread transport needs no workspace
        auto launch = c.op == Op::ReduceScatter ? aclnnQuantReduceScatter : aclnnQuantAllReduce;
        EXPECT_EQ(launch(nullptr, 0, exec, stream), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        st[r] = aclrtSynchronizeStreamWithTimeout(stream, 10000);  // the call's outcome
        msg[r] = aclGetRecentErrMsg();
      }
      aclDestroyTensor(x);
      aclDestroyTensor(s);
      aclDestroyTensor(o);
      for (void* p : {xd, sd, od}) {
        if (p) {
          EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
        }
      }
      EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    });
  for (auto& t : ts) t.join();
}

const std::vector<Row>& rows() {
  static const std::vector<Row> k = {
      {"KgInt8Bf16", [](Call&) {}, ACLNN_SUCCESS, {}},
      {"MxE4m3Fp32AllReduce3D",
       [](Call& c) {
         c.op = Op::AllReduce;
         c.xdt = ACL_FLOAT8_E4M3FN, c.sdt = ACL_FLOAT8_E8M0, c.odt = ACL_FLOAT;
         c.xshape = {2, 2, 1024}, c.sshape = {2, 2, 16, 2}, c.oshape = {2, 2, 1024};
       },
       ACLNN_SUCCESS,
       {}},
      {"HiF8Fp16", [](Call& c) { c.xdt = ACL_HIFLOAT8, c.odt = ACL_FLOAT16; }, ACLNN_SUCCESS, {}},
      // null tensors and out-pointers
      {"NullX", [](Call& c) { c.null_x = true; }, ACLNN_ERR_PARAM_NULLPTR, {"x: must not be null"}},
      {"NullScales", [](Call& c) { c.null_scales = true; }, ACLNN_ERR_PARAM_NULLPTR, {"scales"}},
      {"NullOutput", [](Call& c) { c.null_out = true; }, ACLNN_ERR_PARAM_NULLPTR, {"output"}},
      {"NullWorkspaceSize", [](Call& c) { c.null_ws = true; }, ACLNN_ERR_PARAM_NULLPTR, {"workspaceSize"}},
      {"NullExecutor", [](Call& c) { c.null_exec = true; }, ACLNN_ERR_PARAM_NULLPTR, {"executor"}},
      {"NullBeforeDtype", [](Call& c) { c.null_out = true, c.xdt = ACL_FLOAT16; }, ACLNN_ERR_PARAM_NULLPTR, {"output"}},
      // the dtype combination
      {"XFloat16", [](Call& c) { c.xdt = ACL_FLOAT16; }, ACLNN_ERR_PARAM_INVALID, {"x: dtype", "float16"}},
      {"XInt32", [](Call& c) { c.xdt = ACL_INT32; }, ACLNN_ERR_PARAM_INVALID, {"x: dtype", "3"}},
      // the 4-bit formats: the vendor's refusal under the default (vendor) contract
      {"XFloat4E2M1", [](Call& c) { c.xdt = ACL_FLOAT4_E2M1; }, ACLNN_ERR_PARAM_INVALID, {"x: dtype", "float4_e2m1"}},
      {"XFloat4E1M2Mx",
       [](Call& c) {
         c.xdt = ACL_FLOAT4_E1M2, c.sdt = ACL_FLOAT8_E8M0, c.sshape = {8, 16, 2};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"x: dtype", "float4_e1m2"}},
      {"ScalesFloat4", [](Call& c) { c.sdt = ACL_FLOAT4_E2M1; }, ACLNN_ERR_PARAM_INVALID, {"scales: dtype"}},
      {"OutputFloat4", [](Call& c) { c.odt = ACL_FLOAT4_E1M2; }, ACLNN_ERR_PARAM_INVALID, {"output: dtype"}},
      {"ScalesFloat16", [](Call& c) { c.sdt = ACL_FLOAT16; }, ACLNN_ERR_PARAM_INVALID, {"scales: dtype"}},
      {"Int8WithE8M0",
       [](Call& c) {
         c.sdt = ACL_FLOAT8_E8M0, c.sshape = {8, 16, 2};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"scales", "int8"}},
      {"HiF8WithE8M0",
       [](Call& c) {
         c.xdt = ACL_HIFLOAT8, c.sdt = ACL_FLOAT8_E8M0, c.sshape = {8, 16, 2};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"hifloat8"}},
      {"OutputInt8", [](Call& c) { c.odt = ACL_INT8; }, ACLNN_ERR_PARAM_INVALID, {"output: dtype", "int8"}},
      {"DtypeBeforeGroup",
       [](Call& c) { c.odt = ACL_INT32, c.group = Group::Null; },
       ACLNN_ERR_PARAM_INVALID,
       {"output: dtype"}},
      // the group name
      {"GroupNull", [](Call& c) { c.group = Group::Null; }, ACLNN_ERR_PARAM_INVALID, {"group: must not be null"}},
      {"GroupEmpty", [](Call& c) { c.group = Group::Empty; }, ACLNN_ERR_PARAM_INVALID, {"group", "0"}},
      {"Group128Chars", [](Call& c) { c.group = Group::Long128; }, ACLNN_ERR_PARAM_INVALID, {"group", "128"}},
      {"GroupBeforeShape",
       [](Call& c) {
         c.group = Group::Long128, c.xshape = {8, 1000};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"group"}},
      {"GroupUnknown", [](Call& c) { c.group = Group::Unknown; }, ACLNN_ERR_PARAM_INVALID, {"no-such-comm"}},
      {"DeviceNotInComm",
       [](Call& c) { c.device_offset = 4; },
       ACLNN_ERR_PARAM_INVALID,
       {"of the calling thread is not a rank", "[0, 1]"}},
      {"ReduceOpMax", [](Call& c) { c.reduce_op = "max"; }, ACLNN_ERR_PARAM_INVALID, {"reduceOp", "max"}},
      {"ReduceOpNull", [](Call& c) { c.reduce_op = nullptr; }, ACLNN_ERR_PARAM_INVALID, {"reduceOp", "null"}},
      // shapes
      {"X1D", [](Call& c) { c.xshape = {8192}; }, ACLNN_ERR_PARAM_INVALID, {"x: must be 2-D", "[8192]"}},
      {"X4D",
       [](Call& c) {
         c.xshape = {2, 2, 2, 1024};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"x: must be 2-D"}},
      {"EmptyX",
       [](Call& c) {
         c.xshape = {0, 1024}, c.sshape = {0, 8}, c.oshape = {0, 1024};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"x: empty", "[0, 1024]"}},
      {"EmptyXNullData",
       [](Call& c) {
         c.xshape = {0, 1024}, c.sshape = {0, 8}, c.oshape = {0, 1024}, c.null_xdata = true;
       },
       ACLNN_ERR_PARAM_INVALID,
       {"x: empty"}},
      {"EmptyScales",
       [](Call& c) {
         c.sshape = {8, 0};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"scales: empty"}},
      {"EmptyOutput",
       [](Call& c) {
         c.oshape = {0, 1024};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"output: empty"}},
      {"H1000",
       [](Call& c) {
         c.xshape = {8, 1000};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"x: H", "1000"}},
      {"H896",
       [](Call& c) {
         c.xshape = {8, 896}, c.sshape = {8, 7}, c.oshape = {4, 896};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"x: H", "896"}},
      {"H8320",
       [](Call& c) {
         c.xshape = {8, 8320}, c.sshape = {8, 65}, c.oshape = {4, 8320};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"x: H", "8320"}},
      {"BSOdd",
       [](Call& c) {
         c.xshape = {7, 1024}, c.sshape = {7, 8};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"x: BS", "7", "2"}},
      {"HBeforeBS",
       [](Call& c) {
         c.xshape = {7, 1000};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"x: H"}},
      {"BSOddAllReduce",
       [](Call& c) {
         c.op = Op::AllReduce, c.xshape = {3, 1024}, c.sshape = {3, 8}, c.oshape = {3, 1024};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"x: BS", "3"}},
      {"ScalesShape",
       [](Call& c) {
         c.sshape = {8, 4};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"scales: shape", "[8, 8]", "[8, 4]"}},
      {"ScalesShapeMx",
       [](Call& c) {
         c.xdt = ACL_FLOAT8_E5M2, c.sdt = ACL_FLOAT8_E8M0, c.sshape = {8, 32};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"scales: shape", "[8, 16, 2]"}},
      {"OutputShapeRS",
       [](Call& c) {
         c.oshape = {8, 1024};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"output: shape", "[4, 1024]"}},
      {"OutputShapeRS3D",
       [](Call& c) {
         c.xshape = {2, 4, 1024}, c.sshape = {2, 4, 8}, c.oshape = {1, 4, 1024};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"output: shape", "[4, 1024]"}},
      {"OutputShapeAR", [](Call& c) { c.op = Op::AllReduce; }, ACLNN_ERR_PARAM_INVALID, {"output: shape", "[8, 1024]"}},
      {"ScalesBeforeOutput",
       [](Call& c) {
         c.sshape = {8, 4}, c.oshape = {8, 1024};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"scales: shape"}},
      // format
      {"XFractalNz", [](Call& c) { c.xfmt = ACL_FORMAT_FRACTAL_NZ; }, ACLNN_ERR_PARAM_INVALID, {"x: format", "29"}},
      {"ScalesNCHW", [](Call& c) { c.sfmt = ACL_FORMAT_NCHW; }, ACLNN_ERR_PARAM_INVALID, {"scales: format"}},
      {"OutputNHWC", [](Call& c) { c.ofmt = ACL_FORMAT_NHWC; }, ACLNN_ERR_PARAM_INVALID, {"output: format"}},
      {"ShapeBeforeFormat",
       [](Call& c) {
         c.xfmt = ACL_FORMAT_FRACTAL_NZ, c.oshape = {8, 1024};
       },
       ACLNN_ERR_PARAM_INVALID,
       {"output: shape"}},
      // beyond the vendor: the tensor must fit its aclrtMalloc allocation (the vendor's published
      // reduce-scatter sample allocates its float scales with an int8 element size)
      {"ScalesAllocationTooSmall",
       [](Call& c) { c.scales_elem_bytes = 1; },
       ACLNN_ERR_PARAM_INVALID,
       {"scales: the tensor extends past its aclrtMalloc allocation", "256 bytes", "allocation of 64 bytes"}},
  };
  return k;
}

class AscendRows : public Ascend, public ::testing::WithParamInterface<Row> {};

TEST_P(AscendRows, StatusAndMessage) {
  const Row& row = GetParam();
  Call c;
  row.change(c);
  std::vector<aclnnStatus> st;
  std::vector<std::string> msg;
  run(c, name_, st, msg);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r], row.status) << "rank " << r << ": " << msg[r];
    if (row.status == ACLNN_SUCCESS) {
      EXPECT_EQ(msg[r], "");
    }
    for (const std::string& part : row.message) EXPECT_NE(msg[r].find(part), std::string::npos) << msg[r];
  }
}

INSTANTIATE_TEST_SUITE_P(VendorCases, AscendRows, ::testing::ValuesIn(rows()),
                         [](const ::testing::TestParamInfo<Row>& i) { return std::string(i.param.name); });

// A rank refused by a check after its group resolved still takes part in the call's agreement:
// its peer fails at once with RUNTIME_ERROR instead of waiting for QCOLL_TIMEOUT_S.
TEST_F(Ascend, OneRankRefusedFailsItsPeerAtOnce) {
  Call c;
  c.short_scales_rank = 0;
  std::vector<aclnnStatus> st;
  std::vector<std::string> msg;
  const auto start = std::chrono::steady_clock::now();
  run(c, name_, st, msg);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(st[0], ACLNN_ERR_PARAM_INVALID) << msg[0];
  EXPECT_NE(msg[0].find("extends past its aclrtMalloc allocation"), std::string::npos) << msg[0];
  EXPECT_EQ(st[1], ACLNN_ERR_RUNTIME_ERROR) << msg[1];
  EXPECT_NE(msg[1].find("rank 0"), std::string::npos) << msg[1];
}

// Under the extended contract (docs/contract.md §ext-fp4) ACL_FLOAT4_E2M1 / ACL_FLOAT4_E1M2
// are x dtypes in both modes; their tensors are packed (numel / 2 bytes), which is what the
// allocation check counts. The vendor's refusal under vendor: the FP4 rows of rows().
class ExtendedContract {
 public:
  ExtendedContract() { EXPECT_EQ(qcollSetContract(QCOLL_CONTRACT_EXTENDED), QCOLL_SUCCESS); }
  ~ExtendedContract() { EXPECT_EQ(qcollSetContract(QCOLL_CONTRACT_FROM_ENV), QCOLL_SUCCESS); }
};

TEST_F(Ascend, Float4XUnderTheExtendedContract) {
  ExtendedContract extended;
  for (aclDataType t : {ACL_FLOAT4_E2M1, ACL_FLOAT4_E1M2})
    for (bool mx : {false, true})
      for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
        SCOPED_TRACE(std::to_string(t) + (mx ? " MX" : " KG") + (op == Op::AllReduce ? " all-reduce" : ""));
        Call c;
        c.op = op;
        c.xdt = t;
        if (mx) c.sdt = ACL_FLOAT8_E8M0, c.sshape = {8, 16, 2};
        if (op == Op::AllReduce) c.oshape = c.xshape;
        c.x_bytes = 8 * 1024 / 2;
        std::vector<aclnnStatus> st;
        std::vector<std::string> msg;
        run(c, name_, st, msg);
        for (int r = 0; r < 2; ++r) EXPECT_EQ(st[r], ACLNN_SUCCESS) << "rank " << r << ": " << msg[r];
        c.x_bytes -= 1;  // one byte short of the packed data
        run(c, name_, st, msg);
        for (int r = 0; r < 2; ++r) {
          EXPECT_EQ(st[r], ACLNN_ERR_PARAM_INVALID) << msg[r];
          EXPECT_NE(msg[r].find("x: the tensor extends past its aclrtMalloc allocation"), std::string::npos) << msg[r];
          EXPECT_NE(msg[r].find("is 4096 bytes from 0 bytes into an allocation of 4095 bytes (1 bytes short)"),
                    std::string::npos)
              << msg[r];
        }
      }
  Call c;
  c.xdt = ACL_FLOAT16;
  std::vector<aclnnStatus> st;
  std::vector<std::string> msg;
  run(c, name_, st, msg);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r], ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(msg[r].rfind("x: dtype must be int8, hifloat8, float8_e4m3fn, float8_e5m2, float4_e2m1 or float4_e1m2, "
                           "got float16",
                           0),
              0u)
        << msg[r];
  }
}

TEST(AscendRuntime, DevicesContextsAndMessages) {
  std::thread([] {
    int32_t dev = -1;
    EXPECT_EQ(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("no current device"), std::string::npos);
    EXPECT_EQ(aclrtSetDevice(8), ACL_ERROR_RT_INVALID_DEVICEID);
    EXPECT_EQ(aclrtSetDevice(3), ACL_SUCCESS);
    EXPECT_EQ(std::string(aclGetRecentErrMsg()), "");
    EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    EXPECT_EQ(dev, 3);
    aclrtContext ctx = nullptr;
    EXPECT_EQ(aclrtCreateContext(&ctx, 5), ACL_SUCCESS);
    EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    EXPECT_EQ(dev, 5);  // a new context is the thread's current one
    EXPECT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
    EXPECT_EQ(aclrtSetCurrentContext(ctx), ACL_SUCCESS);
    EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    EXPECT_EQ(dev, 5);
    EXPECT_EQ(aclrtDestroyContext(ctx), ACL_SUCCESS);
    EXPECT_EQ(aclrtSetCurrentContext(ctx), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtResetDevice(5), ACL_SUCCESS);
    EXPECT_EQ(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL);
  }).join();
}

TEST(AscendRuntime, MemoryRemembersSizes) {
  void* p = nullptr;
  EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  ASSERT_EQ(aclrtMalloc(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<uint8_t> host(200, 7);
  EXPECT_EQ(aclrtMemcpy(p, 100, host.data(), 100, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(p, 100, host.data(), 101, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);  // > destMax
  EXPECT_EQ(aclrtMemcpy(p, 200, host.data(), 200, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("allocation of 100 bytes"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(aclrtMemcpy(host.data(), 200, static_cast<uint8_t*>(p) + 50, 60, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(host.data(), 200, host.data() + 100, 10, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemset(p, 100, 0x1FF, 100), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(host.data(), 200, p, 100, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(host[0], 0xFF);
  EXPECT_EQ(host[99], 0xFF);
  EXPECT_EQ(host[100], 7);
  EXPECT_EQ(aclrtFree(static_cast<uint8_t*>(p) + 1), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFreeHost(p), ACL_ERROR_INVALID_PARAM);  // not an aclrtMallocHost allocation
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_ERROR_INVALID_PARAM);  // freed twice
  void* h = nullptr;
  ASSERT_EQ(aclrtMallocHost(&h, 16), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(h, 16, host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);  // host memory
  EXPECT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
}

TEST(AscendRuntime, StreamsAndTensors) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s, 100), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s, -2), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);  // the default stream has nothing pending
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_ERROR_INVALID_PARAM);
  const int64_t dims[2] = {2, -1};
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, nullptr), nullptr);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("dimension 1"), std::string::npos) << aclGetRecentErrMsg();
  const int64_t ok[2] = {2, 3};
  aclTensor* t = aclCreateTensor(ok, 2, ACL_INT32, nullptr, 0, ACL_FORMAT_NC1HWC0, nullptr, 0, nullptr);
  EXPECT_NE(t, nullptr);  // any dtype and format: the operators decide
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(AscendHccl, CommunicatorQueriesAndErrors) {
  int32_t devices[4] = {4, 5, 6, 7};
  HcclComm comms[4];
  ASSERT_EQ(HcclCommInitAll(4, devices, comms), HCCL_SUCCESS) << aclGetRecentErrMsg();
  char n0[128], n3[128];
  ASSERT_EQ(HcclGetCommName(comms[0], n0), HCCL_SUCCESS);
  ASSERT_EQ(HcclGetCommName(comms[3], n3), HCCL_SUCCESS);
  EXPECT_STREQ(n0, n3);
  uint32_t size = 0, rank = 9;
  EXPECT_EQ(HcclGetRankSize(comms[2], &size), HCCL_SUCCESS);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(HcclGetRankId(comms[2], &rank), HCCL_SUCCESS);
  EXPECT_EQ(rank, 2u);
  EXPECT_EQ(HcclGetRankId(comms[2], nullptr), HCCL_E_PTR);
  for (HcclComm c : comms) EXPECT_EQ(HcclCommDestroy(c), HCCL_SUCCESS);
  EXPECT_EQ(HcclGetRankSize(comms[0], &size), HCCL_E_PARA);  // destroyed
  EXPECT_EQ(HcclCommDestroy(comms[0]), HCCL_E_PARA);
  int32_t dup[2] = {1, 1};
  EXPECT_EQ(HcclCommInitAll(2, dup, comms), HCCL_E_PARA);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("distinct"), std::string::npos) << aclGetRecentErrMsg();
  int32_t bad[2] = {0, 8};
  EXPECT_EQ(HcclCommInitAll(2, bad, comms), HCCL_E_PARA);
  EXPECT_EQ(HcclCommInitAll(2, nullptr, comms), HCCL_E_PTR);
  HcclRootInfo junk;
  std::memset(&junk, 0, sizeof junk);
  HcclComm c = nullptr;
  EXPECT_EQ(HcclCommInitRootInfo(2, &junk, 0, &c), HCCL_E_PARA);
  EXPECT_EQ(sizeof(HcclRootInfo), 4108u);
}

}  // namespace
