// The C API of qcoll_mpi.h over create_process_communicator and the process registry.
#include <memory>

#include "api/handles.hpp"
#include "comm/mpi/process_communicator.hpp"
#include "comm/registry.hpp"
#include "qcoll/qcoll_mpi.h"

struct qcollMpiComm {
  std::shared_ptr<qcoll::comm::Communicator> impl;
};

namespace {
using qcoll::Status;
using qcoll::StatusCode;

Status null_arg(const char* param) {
  return Status::Error(StatusCode::ParamNullptr, std::string(param) + ": must not be null");
}
}  // namespace

extern "C" qcollStatus qcollMpiCommCreate(const char* name, MPI_Comm comm, qcollMpiComm** out) {
  return qcoll::api::guarded([&]() -> Status {
    if (out == nullptr) return null_arg("out");
    *out = nullptr;
    std::shared_ptr<qcoll::comm::Communicator> c;
    Status s = qcoll::comm::mpi::create_process_communicator(name, comm, c);
    if (!s.ok()) return s;
    if (s = qcoll::comm::register_for_process(c); !s.ok()) return s;
    auto handle = std::make_unique<qcollMpiComm>();
    handle->impl = std::move(c);
    *out = handle.release();
    return Status::Ok();
  });
}

extern "C" qcollStatus qcollMpiCommCreateWorld(const char* name, qcollMpiComm** out) {
  return qcollMpiCommCreate(name, MPI_COMM_WORLD, out);
}

extern "C" qcollStatus qcollMpiCommDestroy(qcollMpiComm* comm) {
  return qcoll::api::guarded([&]() -> Status {
    if (comm == nullptr) return Status::Ok();
    qcoll::comm::unregister_for_process(comm->impl->name());
    delete comm;
    return Status::Ok();
  });
}

extern "C" qcollStatus qcollMpiCommRank(const qcollMpiComm* comm, int32_t* rank) {
  return qcoll::api::guarded([&]() -> Status {
    if (comm == nullptr) return null_arg("comm");
    if (rank == nullptr) return null_arg("rank");
    *rank = comm->impl->rank();
    return Status::Ok();
  });
}

extern "C" qcollStatus qcollMpiCommSize(const qcollMpiComm* comm, int32_t* size) {
  return qcoll::api::guarded([&]() -> Status {
    if (comm == nullptr) return null_arg("comm");
    if (size == nullptr) return null_arg("size");
    *size = comm->impl->size();
    return Status::Ok();
  });
}

extern "C" qcollStatus qcollMpiCommLocalSize(const qcollMpiComm* comm, int32_t* local_size) {
  return qcoll::api::guarded([&]() -> Status {
    if (comm == nullptr) return null_arg("comm");
    if (local_size == nullptr) return null_arg("local_size");
    *local_size = comm->impl->local_size();
    return Status::Ok();
  });
}

extern "C" const char* qcollMpiCommTransport(const qcollMpiComm* comm) {
  return comm == nullptr ? nullptr : comm->impl->transport();
}

extern "C" qcollStatus qcollMpiCommWindowBytes(const qcollMpiComm* comm, uint64_t* bytes) {
  return qcoll::api::guarded([&]() -> Status {
    if (comm == nullptr) return null_arg("comm");
    if (bytes == nullptr) return null_arg("bytes");
    *bytes = comm->impl->window_bytes();
    return Status::Ok();
  });
}
