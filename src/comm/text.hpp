// Numbers in comm/'s messages, written one way everywhere: seconds and megabytes (2^20
// bytes) with one decimal ("1.5 s", "21.6 MB", as docs/transports.md writes them).
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

inline std::string mb_text(std::size_t bytes) { return one_decimal(static_cast<double>(bytes) / (1 << 20)); }

}  // namespace qcoll::comm
