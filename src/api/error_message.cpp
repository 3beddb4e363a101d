// Per-thread message of the most recent qcoll C call (qcollGetRecentErrMsg).
#include <string>

#include "api/handles.hpp"

namespace qcoll::api {
namespace {
thread_local std::string t_message;
}

void set_message(const std::string& msg) {
  try {
    t_message = msg;
  } catch (...) {
    t_message.clear();
  }
}

qcollStatus finish(const Status& st) {
  set_message(st.ok() ? std::string() : st.message);
  return static_cast<qcollStatus>(st.code);
}

const char* recent_message() { return t_message.c_str(); }

}  // namespace qcoll::api

extern "C" const char* qcollGetRecentErrMsg(void) { return qcoll::api::recent_message(); }

extern "C" const char* qcollStatusName(qcollStatus status) {
  return qcoll::status_name(static_cast<qcoll::StatusCode>(status)).data();
}
