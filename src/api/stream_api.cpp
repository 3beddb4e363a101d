// qcollStream*: streams of enqueued operator calls (api/stream.hpp).
#include "api/handles.hpp"
#include "api/stream.hpp"

using qcoll::Status;
using qcoll::StatusCode;

namespace {

Status synchronize(qcollStream stream, int32_t timeoutMs, int32_t* timedOut) {
  if (timedOut != nullptr) *timedOut = 0;
  if (timeoutMs < -1)
    return Status::Error(
        StatusCode::ParamInvalid,
        "timeoutMs: must be -1 (no limit) or a number of milliseconds >= 0, got " + std::to_string(timeoutMs));
  if (stream == nullptr) return Status::Ok();  // nothing is ever pending on the null stream
  auto s = qcoll::api::find_stream(stream);
  if (!s) return qcoll::api::not_a_stream(stream);
  bool expired = false;
  Status st = s->synchronize(timeoutMs, &expired);
  if (timedOut != nullptr) *timedOut = expired ? 1 : 0;
  return st;
}

}  // namespace

extern "C" {

qcollStatus qcollStreamCreate(qcollStream* stream) {
  return qcoll::api::guarded([&]() -> Status {
    if (stream == nullptr) return Status::Error(StatusCode::ParamNullptr, "stream: must not be null");
    *stream = qcoll::api::register_stream(std::make_shared<qcoll::api::Stream>());
    return Status::Ok();
  });
}

qcollStatus qcollStreamSynchronize(qcollStream stream, int32_t timeoutMs) {
  return qcoll::api::guarded([&] { return synchronize(stream, timeoutMs, nullptr); });
}

qcollStatus qcollStreamSynchronizeEx(qcollStream stream, int32_t timeoutMs, int32_t* timedOut) {
  return qcoll::api::guarded([&] { return synchronize(stream, timeoutMs, timedOut); });
}

qcollStatus qcollStreamDestroy(qcollStream stream) {
  return qcoll::api::guarded([&]() -> Status {
    if (stream == nullptr) return Status::Ok();
    auto s = qcoll::api::remove_stream(stream);
    if (!s) return qcoll::api::not_a_stream(stream);
    return s->close();
  });
}

}  // extern "C"
