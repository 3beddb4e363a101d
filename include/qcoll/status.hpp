// qcoll: status codes (contract.md §status) and the status value used throughout the C++ core.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace qcoll {

enum class StatusCode : int32_t {
  Success = 0,
  ParamNullptr = 161001,
  ParamInvalid = 161002,
  RuntimeError = 361001,
  InnerError = 561000,
};

// "SUCCESS", "PARAM_NULLPTR", "PARAM_INVALID", "RUNTIME_ERROR", "INNER_ERROR", "UNKNOWN".
std::string_view status_name(StatusCode c);

struct Status {
  StatusCode code = StatusCode::Success;
  std::string message;

  bool ok() const { return code == StatusCode::Success; }
  static Status Ok() { return {}; }
  static Status Error(StatusCode c, std::string msg) { return {c, std::move(msg)}; }
};

}  // namespace qcoll
