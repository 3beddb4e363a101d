// One call of a qcoll operator through the C API (both phases), on the calling rank thread.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "qcoll/dtype.hpp"

namespace qcoll::cli {

enum class Operator { ReduceScatter, AllReduce };
const char* operator_name(Operator op);  // "reduce-scatter", "all-reduce"

struct TensorArg {
  DType dtype = DType::Float;
  std::vector<int64_t> shape;
  void* data = nullptr;  // contiguous, row-major
};

struct CallResult {
  int32_t status = 0;   // qcollStatus
  std::string message;  // qcollGetRecentErrMsg() when status != 0
  bool ok() const { return status == 0; }
};

// Runs `op` with x, scales and output on the communicator `group` (which the calling thread
// or process must have registered) and reduceOp "sum".
CallResult call_operator(Operator op, const std::string& group, const TensorArg& x, const TensorArg& scales,
                         const TensorArg& out);

// The output shape the operator expects for x's shape (contract.md §rule-9): (BS/n, H) for
// reduce-scatter, x's shape for all-reduce. For shapes the operator will reject anyway it
// returns a small placeholder shape so that a buffer can still be passed.
std::vector<int64_t> expected_output_shape(Operator op, const std::vector<int64_t>& x_shape, int nranks);

}  // namespace qcoll::cli
