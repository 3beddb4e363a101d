// The C API's opaque handles and the exception boundary shared by the src/api/*.cpp files.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <thread>

#include "comm/thread_group.hpp"
#include "ops/executor.hpp"
#include "ops/tensor_desc.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/status.hpp"

struct qcollTensor {
  qcoll::ops::TensorDesc desc;
};

struct qcollOpExecutor {
  static constexpr uint64_t kMagic = 0x71636f6c6c457865ull;  // "qcollExe"
  uint64_t magic = kMagic;
  std::unique_ptr<qcoll::ops::Executor> impl;
};

struct qcollThreadGroup {
  std::unique_ptr<qcoll::comm::ThreadGroup> impl;
};

// A communicator of one rank per process (qcollCommInitRank, qcollCommInitExternal), or of
// several ranks that are threads of one process (qcollCommInitRank).
struct qcollComm {
  std::shared_ptr<qcoll::comm::Communicator> impl;
  bool per_thread = false;  // registered for `owner` only (several ranks in this process)
  std::thread::id owner;
  std::weak_ptr<const char> owner_alive;  // expires when the owner thread exits
};

namespace qcoll::api {

// Records the calling thread's message for `st` ("" on success) and returns its code.
qcollStatus finish(const Status& st);
// Records a message without a status (functions that return a pointer).
void set_message(const std::string& msg);
const char* recent_message();

// Runs f() (returning Status); turns any escaping exception into INNER_ERROR.
template <class F>
qcollStatus guarded(F&& f) noexcept {
  try {
    return finish(f());
  } catch (const std::bad_alloc&) {
    return finish(Status::Error(StatusCode::InnerError, "out of memory"));
  } catch (const std::exception& e) {
    return finish(Status::Error(StatusCode::InnerError, std::string("internal error: ") + e.what()));
  } catch (...) {
    return finish(Status::Error(StatusCode::InnerError, "internal error: unknown exception"));
  }
}

}  // namespace qcoll::api
