// Reporting of the tools' errors; see cli_error.hpp.
#include "cli_error.hpp"

#include <cstdio>

#include "qcoll/qcoll.h"

namespace qcoll::cli {

std::string status_line(int32_t status, const std::string& message) {
  return std::string("qcoll: ") + qcollStatusName(status) + " (" + std::to_string(status) + "): " + message;
}

int report(const CliError& e) {
  if (e.kind() == ErrorKind::Status) {
    std::fprintf(stderr, "%s\n", status_line(e.status(), e.what()).c_str());
  } else {
    std::fprintf(stderr, "qcoll: %s\n", e.what());
  }
  return e.exit_code();
}

}  // namespace qcoll::cli
