// qcoll._core.Stream: a qcollStream and the Python objects its enqueued calls use (inputs,
// output, workspace), kept alive until a synchronize covered those calls. Shared by
// comm_bindings.cpp (the class) and ops_bindings.cpp (enqueueing).
#pragma once
#include <cstddef>
#include <deque>

#include "bindings.hpp"
#include "qcoll/qcoll.h"

namespace qcoll::python {

class Stream {
 public:
  Stream();
  ~Stream();  // waits for the calls (GIL released), then drops what they used
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // True when every call enqueued before it finished; false when timeout_ms ran out.
  // Raises the first failure of those calls.
  bool synchronize(int32_t timeout_ms);
  void destroy();
  bool alive() const { return s_ != nullptr; }

  qcollStream live() const;    // raises for a destroyed stream
  void keep(nb::object what);  // after a successful enqueue (GIL held)

 private:
  qcollStream s_ = nullptr;
  std::deque<nb::object> kept_;  // oldest first
};

}  // namespace qcoll::python
