#include "ops/timeout.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace qcoll::ops {

double parse_timeout_seconds(const char* text, bool* valid) {
  *valid = true;
  if (text == nullptr) return kDefaultTimeoutSeconds;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(v) || v <= 0.0 || v > kMaxTimeoutSeconds) {
    *valid = false;
    return kDefaultTimeoutSeconds;
  }
  return v;
}

std::chrono::nanoseconds call_timeout() {
  const char* text = std::getenv("QCOLL_TIMEOUT_S");
  bool valid = true;
  const double s = parse_timeout_seconds(text, &valid);
  if (!valid) {
    static std::mutex mu;
    static std::set<std::string> warned;
    std::lock_guard<std::mutex> lk(mu);
    if (warned.insert(text).second)
      std::fprintf(stderr,
                   "qcoll: warning: QCOLL_TIMEOUT_S='%s' is not a number of seconds in (0, 1e6]; "
                   "using %g s\n",
                   text, kDefaultTimeoutSeconds);
  }
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(s * 1e9)));
}

}  // namespace qcoll::ops
