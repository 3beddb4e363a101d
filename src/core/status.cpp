// Names of the status codes (qcoll/status.hpp).
#include "qcoll/status.hpp"

namespace qcoll {

std::string_view status_name(StatusCode c) {
  switch (c) {
    case StatusCode::Success:
      return "SUCCESS";
    case StatusCode::ParamNullptr:
      return "PARAM_NULLPTR";
    case StatusCode::ParamInvalid:
      return "PARAM_INVALID";
    case StatusCode::RuntimeError:
      return "RUNTIME_ERROR";
    case StatusCode::InnerError:
      return "INNER_ERROR";
  }
  return "UNKNOWN";
}

}  // namespace qcoll
