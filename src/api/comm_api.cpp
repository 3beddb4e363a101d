// qcollGetUniqueId / qcollCommInitRank: communicators of processes on one host without MPI
// (comm/bootstrap.hpp), registered under their name for the operators.
#include <cstring>
#include <thread>

#include "api/handles.hpp"
#include "comm/bootstrap.hpp"
#include "comm/registry.hpp"

static_assert(sizeof(qcollUniqueId) == qcoll::comm::bootstrap::kIdBytes, "qcollUniqueId is the id's bytes");
static_assert(QCOLL_UNIQUE_ID_HEX_CHARS == 2 * qcoll::comm::bootstrap::kIdBytes, "two hex digits per byte");

namespace {

// Lives as long as the calling thread (and its registrations).
std::weak_ptr<const char> this_thread_token() {
  thread_local const std::shared_ptr<const char> token = std::make_shared<const char>('t');
  return token;
}

using qcoll::Status;
using qcoll::StatusCode;
namespace bootstrap = qcoll::comm::bootstrap;

Status null_arg(const char* param) {
  return Status::Error(StatusCode::ParamNullptr, std::string(param) + ": must not be null");
}

bootstrap::Id id_of(const qcollUniqueId& id) {
  bootstrap::Id out;
  std::memcpy(out.bytes, id.internal, sizeof out.bytes);
  return out;
}
}  // namespace

extern "C" {

qcollStatus qcollGetUniqueId(qcollUniqueId* id) {
  return qcoll::api::guarded([&]() -> Status {
    if (id == nullptr) return null_arg("id");
    bootstrap::Id made;
    if (Status s = bootstrap::make_id(made); !s.ok()) return s;
    std::memcpy(id->internal, made.bytes, sizeof made.bytes);
    return Status::Ok();
  });
}

qcollStatus qcollUniqueIdToHex(const qcollUniqueId* id, char* hex, size_t hexSize) {
  return qcoll::api::guarded([&]() -> Status {
    if (id == nullptr) return null_arg("id");
    if (hex == nullptr) return null_arg("hex");
    if (hexSize < QCOLL_UNIQUE_ID_HEX_CHARS + 1)
      return Status::Error(StatusCode::ParamInvalid, "hexSize: must be at least " +
                                                         std::to_string(QCOLL_UNIQUE_ID_HEX_CHARS + 1) +
                                                         " (256 hex digits and a NUL), got " + std::to_string(hexSize));
    const std::string text = bootstrap::to_hex(id_of(*id));
    std::memcpy(hex, text.c_str(), text.size() + 1);
    return Status::Ok();
  });
}

qcollStatus qcollUniqueIdFromHex(const char* hex, qcollUniqueId* id) {
  return qcoll::api::guarded([&]() -> Status {
    if (id == nullptr) return null_arg("id");
    bootstrap::Id got;
    if (Status s = bootstrap::from_hex(hex, got); !s.ok()) return s;
    std::memcpy(id->internal, got.bytes, sizeof got.bytes);
    return Status::Ok();
  });
}

qcollStatus qcollCommInitRank(const char* name, int32_t nranks, const qcollUniqueId* id, int32_t rank,
                              qcollComm** comm) {
  return qcoll::api::guarded([&]() -> Status {
    if (comm == nullptr) return null_arg("comm");
    *comm = nullptr;
    if (id == nullptr) return null_arg("id");
    bootstrap::Joined joined;
    if (Status s = bootstrap::join(name, nranks, id_of(*id), rank, joined); !s.ok()) return s;
    auto handle = std::make_unique<qcollComm>();
    handle->impl = joined.comm;
    handle->per_thread = joined.ranks_in_process > 1;
    handle->owner = std::this_thread::get_id();
    handle->owner_alive = this_thread_token();
    Status s = handle->per_thread ? qcoll::comm::register_for_thread(joined.comm)
                                  : qcoll::comm::register_for_process(joined.comm);
    if (!s.ok()) return s;
    *comm = handle.release();
    return Status::Ok();
  });
}

qcollStatus qcollCommDestroy(qcollComm* comm) {
  return qcoll::api::guarded([&]() -> Status {
    if (comm == nullptr) return Status::Ok();
    const std::string& name = comm->impl->name();
    if (comm->per_thread) {
      // The owner's registration goes with the owner thread; while it lives, only it can undo it.
      if (std::this_thread::get_id() != comm->owner && !comm->owner_alive.expired())
        return Status::Error(StatusCode::ParamInvalid,
                             "comm: must be destroyed on the thread that created it (several ranks of '" + name +
                                 "' are threads of this process, so its name is registered for that thread only)");
      if (std::this_thread::get_id() == comm->owner && qcoll::comm::resolve(name) == comm->impl)
        qcoll::comm::unregister_for_thread(name);
    } else if (qcoll::comm::resolve(name) == comm->impl) {
      qcoll::comm::unregister_for_process(name);
    }
    delete comm;
    return Status::Ok();
  });
}

qcollStatus qcollCommRank(const qcollComm* comm, int32_t* rank) {
  return qcoll::api::guarded([&]() -> Status {
    if (comm == nullptr) return null_arg("comm");
    if (rank == nullptr) return null_arg("rank");
    *rank = comm->impl->rank();
    return Status::Ok();
  });
}

qcollStatus qcollCommSize(const qcollComm* comm, int32_t* size) {
  return qcoll::api::guarded([&]() -> Status {
    if (comm == nullptr) return null_arg("comm");
    if (size == nullptr) return null_arg("size");
    *size = comm->impl->size();
    return Status::Ok();
  });
}

const char* qcollCommName(const qcollComm* comm) { return comm == nullptr ? nullptr : comm->impl->name().c_str(); }

}  // extern "C"
