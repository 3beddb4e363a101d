// How long a collective call may wait for its peers: QCOLL_TIMEOUT_S, parsed by the core
// settings (qcoll/settings.hpp: seconds in (0, 1e6], default 60, a warning for a bad value).
#pragma once
#include <chrono>

#include "qcoll/settings.hpp"

namespace qcoll::ops {

using settings::kDefaultTimeoutSeconds;
using settings::kMaxTimeoutSeconds;

// QCOLL_TIMEOUT_S, read at every call.
inline std::chrono::nanoseconds call_timeout() { return settings::call_timeout(); }

// The parsing rule alone: the value for `text` (nullptr = unset; the default when invalid),
// and whether it was valid.
inline double parse_timeout_seconds(const char* text, bool* valid) {
  const auto v = settings::parse_timeout_seconds(text);
  *valid = v.has_value();
  return v.value_or(kDefaultTimeoutSeconds);
}

}  // namespace qcoll::ops
