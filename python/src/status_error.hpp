// A non-zero qcoll status on its way to Python, where it becomes a qcoll.Error
// (qcoll/errors.py picks the subclass from the code).
#pragma once
#include <cstdint>
#include <exception>
#include <string>

#include "qcoll/status.hpp"

namespace qcoll::python {

class StatusError : public std::exception {
 public:
  StatusError(int32_t code, std::string message) : code_(code), message_(std::move(message)) {}
  int32_t code() const { return code_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  int32_t code_;
  std::string message_;
};

// Throws StatusError(PARAM_INVALID, message).
[[noreturn]] void throw_param_invalid(const std::string& message);
// Throws StatusError(st.code, st.message) unless st is Ok.
void throw_if_error(const Status& st);
// Throws StatusError(status, qcollGetRecentErrMsg()) when status != 0.
void throw_if_failed(int32_t status);

}  // namespace qcoll::python
