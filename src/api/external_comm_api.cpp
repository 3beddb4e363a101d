// The C API of communicators over the caller's collectives (qcoll.h, qcollCommInitExternal);
// they are destroyed, like every qcollComm, by qcollCommDestroy.
#include <memory>
#include <string>

#include "api/handles.hpp"
#include "comm/external_communicator.hpp"
#include "comm/registry.hpp"
#include "qcoll/qcoll.h"

namespace {
using qcoll::Status;
using qcoll::StatusCode;

constexpr std::size_t kErrBytes = 1024;

// The caller's context; releases it when the last copy of the functions is gone.
struct Context {
  qcollCollectives c;
  ~Context() {
    if (c.release != nullptr) c.release(c.ctx);
  }
};

using CFn = qcollStatus (*)(void*, const void*, void*, uint64_t, int64_t, char*, uint64_t);

qcoll::comm::ExternalCollectives::Fn wrap(std::shared_ptr<Context> ctx, CFn fn) {
  return [ctx = std::move(ctx), fn](const void* send, void* recv, std::size_t bytes,
                                    std::chrono::milliseconds timeout) -> Status {
    char err[kErrBytes] = {};
    const qcollStatus rc = fn(ctx->c.ctx, send, recv, bytes, timeout.count(), err, kErrBytes);
    if (rc == QCOLL_SUCCESS) return Status::Ok();
    err[kErrBytes - 1] = '\0';
    std::string msg = err[0] != '\0' ? std::string(err) : std::string("no message");
    if (rc != QCOLL_RUNTIME_ERROR) msg += " (status " + std::to_string(rc) + ")";
    return Status::Error(StatusCode::RuntimeError, msg);
  };
}
}  // namespace

extern "C" qcollStatus qcollCommInitExternal(const char* name, int32_t nranks, int32_t rank,
                                             const qcollCollectives* collectives, qcollComm** comm) {
  return qcoll::api::guarded([&]() -> Status {
    if (comm == nullptr) return Status::Error(StatusCode::ParamNullptr, "comm: must not be null");
    *comm = nullptr;
    if (collectives == nullptr) return Status::Error(StatusCode::ParamNullptr, "collectives: must not be null");
    // The context is released only by a communicator that was made (release is set once
    // it exists): a failed create leaves the caller's context alone.
    auto ctx = std::make_shared<Context>();
    ctx->c = *collectives;
    ctx->c.release = nullptr;
    qcoll::comm::ExternalCollectives fns;
    if (collectives->allGather != nullptr) fns.all_gather = wrap(ctx, collectives->allGather);
    if (collectives->allToAll != nullptr) fns.all_to_all = wrap(ctx, collectives->allToAll);
    std::shared_ptr<qcoll::comm::Communicator> c;
    Status s = qcoll::comm::ExternalCommunicator::create(name, nranks, rank, std::move(fns), c);
    if (!s.ok()) return s;
    if (s = qcoll::comm::register_for_process(c); !s.ok()) return s;
    ctx->c.release = collectives->release;
    auto handle = std::make_unique<qcollComm>();
    handle->impl = std::move(c);
    handle->owner = std::this_thread::get_id();
    *comm = handle.release();
    return Status::Ok();
  });
}
