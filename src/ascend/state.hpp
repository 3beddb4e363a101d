// The Ascend emulation's shared state (docs/ascend.md): the calling thread's message and
// current device, the allocations of aclrtMalloc, the tensors of aclCreateTensor, and the
// group resolution of the HCCL communicators. A layer over qcoll's public C API only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "qcoll/qcoll.h"
#include "qcoll/status.hpp"

// What aclCreateTensor made: the qcoll tensor the operators take, and the description the
// vendor-order checks read.
struct aclTensor {
  qcollTensor* q = nullptr;
  std::vector<int64_t> dims;
  int32_t dtype = 0;
  int32_t format = 0;
  int64_t offset = 0;
  void* data = nullptr;
};

namespace qcoll::ascend {

inline constexpr int32_t kDeviceCount = 8;  // devices 0..7, as on one 8-NPU server

// The calling thread's message (aclGetRecentErrMsg).
void set_message(std::string msg);
// An aclError / HcclResult / aclnnStatus with its message; `code` returned.
int fail(int code, std::string msg);
int succeed();  // clears the message, returns 0

// The calling thread's current device, or -1.
int32_t current_device();

// The aclrtMalloc allocation holding address p: its start and size. False when p is in none.
bool find_device_allocation(const void* p, const unsigned char** base, std::size_t* size);

// A qcoll status as the aclnn status it equals (the values are the vendor's), message kept.
int32_t from_qcoll(qcollStatus st);

// Resolves an operator's group for the calling thread (docs/ascend.md §groups): a
// communicator of HcclCommInitAll gives the rank of the thread's current device (the thread
// joins it as that rank); any other name is looked up by qcoll. On success *nranks is the
// communicator's size.
Status resolve_group(const char* group, int* nranks);

}  // namespace qcoll::ascend
