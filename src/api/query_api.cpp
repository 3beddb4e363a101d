// Queries for programs that see only the public headers (the tools, the Python package):
// which communicator a group name resolves to, and which kernel path runs.
#include <string>

#include "api/handles.hpp"
#include "comm/registry.hpp"
#include "kernels/dequant_reduce.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/qcoll.hpp"

extern "C" const char* qcollGetVersion(void) { return QCOLL_VERSION_STRING; }

extern "C" qcollStatus qcollGroupInfo(const char* group, int32_t* rank, int32_t* size, const char** transport) {
  return qcoll::api::guarded([&]() -> qcoll::Status {
    using qcoll::Status;
    using qcoll::StatusCode;
    if (group == nullptr) return Status::Error(StatusCode::ParamNullptr, "group: must not be null");
    auto c = qcoll::comm::resolve(group);
    if (!c) {
      return Status::Error(StatusCode::ParamInvalid,
                           std::string("group: no communicator of this name is registered for the calling "
                                       "thread or process, got \"") +
                               group + "\"");
    }
    if (rank != nullptr) *rank = c->rank();
    if (size != nullptr) *size = c->size();
    if (transport != nullptr) *transport = c->transport();
    return Status::Ok();
  });
}

extern "C" const char* qcollKernelTarget(void) { return qcoll::kernels::dequant_reduce_target(); }

namespace qcoll {

std::optional<GroupInfo> group_info(const std::string& group) {
  int32_t rank = 0, size = 0;
  const char* transport = nullptr;
  if (qcollGroupInfo(group.c_str(), &rank, &size, &transport) != QCOLL_SUCCESS) return std::nullopt;
  return GroupInfo{rank, size, transport};
}

std::string kernel_target() { return qcollKernelTarget(); }

}  // namespace qcoll
