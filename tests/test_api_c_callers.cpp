// The C API as a C program calls it: enum parameters may hold any int (in C an enum is an
// int). This file deliberately does not include qcoll.h: it declares the functions with
// int32_t where the header has qcollDataType / qcollFormat, as the C ABI passes them, so it
// can pass values no C++ enum object may hold. Under UBSan (build-asan) loading such a value
// as the enum type inside the library is reported; the library must read it as an integer
// and phase one must refuse it with PARAM_INVALID naming the dtype / format and the value.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

extern "C" {
struct qcollTensor;
struct qcollOpExecutor;
struct qcollThreadGroup;
qcollTensor* qcollCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, int32_t dataType, const int64_t* stride,
                               int64_t offset, int32_t format, const int64_t* storageDims, uint64_t storageDimsNum,
                               void* tensorData);
qcollTensor* qcollCreateContiguousTensor(const int64_t* dims, uint64_t dimsNum, int32_t dataType, void* data);
int32_t qcollDestroyTensor(const qcollTensor* tensor);
int32_t qcollThreadGroupCreate(const char* name, int32_t nranks, qcollThreadGroup** group);
int32_t qcollThreadGroupJoin(qcollThreadGroup* group, int32_t rank);
int32_t qcollThreadGroupLeave(qcollThreadGroup* group);
int32_t qcollThreadGroupDestroy(qcollThreadGroup* group);
int32_t qcollQuantReduceScatterGetWorkspaceSize(const qcollTensor* x, const qcollTensor* scales, const char* group,
                                                const char* reduceOp, qcollTensor* output, uint64_t* workspaceSize,
                                                qcollOpExecutor** executor);
const char* qcollGetRecentErrMsg(void);
}

namespace {

constexpr int32_t kParamInvalid = 161002;
constexpr int32_t kInt8 = 2, kFloat = 0, kBFloat16 = 27, kFormatND = 2;
constexpr int32_t kFloat4E2M1 = 40, kFloat4E1M2 = 41;  // QCOLL_DT_FLOAT4_E2M1 / _E1M2

// Both ranks of a 2-rank group make the same call (phase one fails on both, so both take
// part in the agreement and nobody waits); returns rank 0's status and message.
int32_t phase_one_on_both(int32_t x_dtype, int32_t x_format, std::string* msg) {
  qcollThreadGroup* g = nullptr;
  EXPECT_EQ(qcollThreadGroupCreate("c-callers", 2, &g), 0);
  int32_t status[2] = {0, 0};
  std::string messages[2];
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      EXPECT_EQ(qcollThreadGroupJoin(g, r), 0);
      std::vector<uint8_t> x(4 * 1024), s(4 * 8 * 4), out(2 * 1024 * 2);
      const int64_t xd[2] = {4, 1024}, sd[2] = {4, 8}, od[2] = {2, 1024};
      qcollTensor* tx = qcollCreateTensor(xd, 2, x_dtype, nullptr, 0, x_format, xd, 2, x.data());
      qcollTensor* ts_ = qcollCreateContiguousTensor(sd, 2, kFloat, s.data());
      qcollTensor* to = qcollCreateContiguousTensor(od, 2, kBFloat16, out.data());
      uint64_t ws = 0;
      qcollOpExecutor* e = nullptr;
      status[r] = qcollQuantReduceScatterGetWorkspaceSize(tx, ts_, "c-callers", "sum", to, &ws, &e);
      messages[r] = qcollGetRecentErrMsg();
      qcollDestroyTensor(tx);
      qcollDestroyTensor(ts_);
      qcollDestroyTensor(to);
      EXPECT_EQ(qcollThreadGroupLeave(g), 0);
    });
  for (auto& t : ts) t.join();
  qcollThreadGroupDestroy(g);
  EXPECT_EQ(status[0], status[1]);
  *msg = messages[0];
  return status[0];
}

TEST(ApiCCallers, DtypeOutsideTheEnumIsRefusedByPhaseOne) {
  for (int32_t dt : {1000, -1, 0x7FFFFFFF, 64}) {
    std::string msg;
    EXPECT_EQ(phase_one_on_both(dt, kFormatND, &msg), kParamInvalid) << dt;
    EXPECT_NE(msg.find("x: dtype"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(dt)), std::string::npos) << msg;
  }
}

// The 4-bit dtypes are in the enum, but the default (vendor) contract refuses them as x,
// by name (docs/contract.md §ext-fp4-vendor).
TEST(ApiCCallers, Float4XIsRefusedUnderTheVendorContract) {
  for (int32_t dt : {kFloat4E2M1, kFloat4E1M2}) {
    std::string msg;
    EXPECT_EQ(phase_one_on_both(dt, kFormatND, &msg), kParamInvalid) << dt;
    EXPECT_NE(msg.find("x: dtype"), std::string::npos) << msg;
    EXPECT_NE(msg.find(dt == kFloat4E2M1 ? "float4_e2m1" : "float4_e1m2"), std::string::npos) << msg;
  }
}

TEST(ApiCCallers, FormatOutsideTheEnumIsRefusedByPhaseOne) {
  for (int32_t fmt : {-7, 1 << 20}) {
    std::string msg;
    EXPECT_EQ(phase_one_on_both(kInt8, fmt, &msg), kParamInvalid) << fmt;
    EXPECT_NE(msg.find("x: format"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(fmt)), std::string::npos) << msg;
  }
}

TEST(ApiCCallers, HugeShapeWithoutStridesIsDescribedAndRefusedByPhaseOne) {
  // The implied contiguous strides overflow 64 bits (found by fuzz_validation: signed
  // overflow in contiguous_strides, UBSan); the description must still be made, and phase
  // one must refuse the shape.
  uint8_t data[16] = {};
  const int64_t d[3] = {int64_t(1) << 60, 15, 1024};
  qcollTensor* t = qcollCreateTensor(d, 3, kInt8, nullptr, 0, kFormatND, nullptr, 0, data);
  ASSERT_NE(t, nullptr) << qcollGetRecentErrMsg();
  qcollDestroyTensor(t);
}

TEST(ApiCCallers, ContiguousTensorWithAnUnknownDtypeIsCreated) {
  // Creating the description is not where dtypes are judged (phase one is).
  uint8_t data[16] = {};
  const int64_t d[1] = {16};
  qcollTensor* t = qcollCreateContiguousTensor(d, 1, -12345, data);
  EXPECT_NE(t, nullptr) << qcollGetRecentErrMsg();
  qcollDestroyTensor(t);
}

}  // namespace
