// What both peer plugins (ccl_peer.cpp, gloo_peer.cpp) need to implement tools/peer_plugin.h:
// the last error's text, and turning an exception of the peer library into it.
#pragma once
#include <exception>
#include <string>

#include "peer_plugin.h"

namespace qcoll_peer {

inline std::string& last_error_text() {
  static std::string text;
  return text;
}

inline int fail(const std::string& what) {
  last_error_text() = what;
  return 1;
}

// f() (0 or fail(...)), with any exception turned into a failure naming `what`.
template <class F>
int guarded(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return fail(std::string(what) + ": " + e.what());
  } catch (...) {
    return fail(std::string(what) + ": unknown exception");
  }
}

inline const char* last_error() { return last_error_text().c_str(); }

}  // namespace qcoll_peer
