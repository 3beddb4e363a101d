// Numbers in comm/'s messages, written one way everywhere: seconds and megabytes (2^20
// bytes) with one decimal ("1.5 s", "21.6 MB", as docs/transports.md writes them; "0.031 MB"
// below 0.1 MB).
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace qcoll::comm {

inline std::string one_decimal(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

inline std::string seconds_text(double s) { return one_decimal(s); }

inline std::string seconds_text(std::chrono::steady_clock::duration d) {
  return one_decimal(std::chrono::duration<double>(d).count());
}

// Below 0.1 MB (a small part per rank, as with many ranks) three decimals, so that a
// message never says "0.0 MB" of something it could not reserve.
inline std::string mb_text(std::size_t bytes) {
  const double mb = static_cast<double>(bytes) / (1 << 20);
  if (bytes == 0 || mb >= 0.1) return one_decimal(mb);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", mb);
  return buf;
}

}  // namespace qcoll::comm
