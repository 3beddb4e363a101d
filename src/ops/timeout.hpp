// How long a collective call may wait for its peers: QCOLL_TIMEOUT_S.
#pragma once
#include <chrono>

namespace qcoll::ops {

constexpr double kDefaultTimeoutSeconds = 60.0;
constexpr double kMaxTimeoutSeconds = 1e6;

// QCOLL_TIMEOUT_S, read at every call: seconds, fractional allowed (e.g. "2", "0.5"),
// in (0, 1e6]. Unset: 60. Any other value (empty, not a number, <= 0, too large, trailing
// characters) falls back to 60 and prints one warning to stderr per distinct value.
std::chrono::nanoseconds call_timeout();

// The parsing rule alone: the value for `text` (nullptr = unset), and whether it was valid.
double parse_timeout_seconds(const char* text, bool* valid);

}  // namespace qcoll::ops
