// qcollThreadGroup*: in-process groups of thread ranks.
#include "api/handles.hpp"

using qcoll::Status;
using qcoll::StatusCode;

extern "C" {

qcollStatus qcollThreadGroupCreate(const char* name, int32_t nranks, qcollThreadGroup** group) {
  return qcoll::api::guarded([&]() -> Status {
    if (group == nullptr) return Status::Error(StatusCode::ParamNullptr, "group: must not be null");
    *group = nullptr;
    std::unique_ptr<qcoll::comm::ThreadGroup> g;
    Status st = qcoll::comm::ThreadGroup::create(name, nranks, &g);
    if (!st.ok()) return st;
    auto handle = std::make_unique<qcollThreadGroup>();
    handle->impl = std::move(g);
    *group = handle.release();
    return Status::Ok();
  });
}

qcollStatus qcollThreadGroupJoin(qcollThreadGroup* group, int32_t rank) {
  return qcoll::api::guarded([&]() -> Status {
    if (group == nullptr) return Status::Error(StatusCode::ParamNullptr, "group: must not be null");
    return group->impl->join(rank);
  });
}

qcollStatus qcollThreadGroupLeave(qcollThreadGroup* group) {
  return qcoll::api::guarded([&]() -> Status {
    if (group == nullptr) return Status::Error(StatusCode::ParamNullptr, "group: must not be null");
    return group->impl->leave();
  });
}

qcollStatus qcollThreadGroupDestroy(qcollThreadGroup* group) {
  return qcoll::api::guarded([&]() -> Status {
    delete group;  // threads that joined keep their rank until they leave
    return Status::Ok();
  });
}

}  // extern "C"
