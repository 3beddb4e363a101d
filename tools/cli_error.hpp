// Errors of the qcoll tools and how they are reported.
//   argument errors: "qcoll: <message>"                          exit 2
//   file errors:     "qcoll: <file>: <problem>"                  exit 3
//   library status:  "qcoll: <STATUS_NAME> (<code>): <message>"  exit 1
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace qcoll::cli {

enum class ErrorKind { Argument = 2, File = 3, Status = 1 };

class CliError : public std::runtime_error {
 public:
  CliError(ErrorKind kind, const std::string& message, int32_t status = 0)
      : std::runtime_error(message), kind_(kind), status_(status) {}
  ErrorKind kind() const { return kind_; }
  int32_t status() const { return status_; }  // the library status for ErrorKind::Status
  int exit_code() const { return static_cast<int>(kind_); }

 private:
  ErrorKind kind_;
  int32_t status_;
};

// "qcoll: <STATUS_NAME> (<code>): <message>"
std::string status_line(int32_t status, const std::string& message);
// Prints e on stderr in the format above and returns its exit code.
int report(const CliError& e);

}  // namespace qcoll::cli
