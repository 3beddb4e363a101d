// Calls of the qcoll operators through the two-phase C API, on the calling rank thread.
// The operators are contract::Op; on the command line they are spelled reduce-scatter and
// all-reduce (the fused ones, from a float input, the same: `--in` instead of `--x`).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "qcoll/contract.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/qcoll.hpp"

struct qcollTensor;

namespace qcoll::cli {

using contract::Op;
// "reduce-scatter", "all-reduce": the subcommands' and bench's spelling (fused or not).
const char* command_name(Op op);
// A comma list of command names; throws CliError(Argument) naming `option`.
std::vector<Op> parse_op_list(const std::string& option, const std::string& text);

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

// One operator's tensors, made once, called as often as wanted with a workspace it keeps
// (as an application reusing its buffers would). Not copyable.
class PreparedCall {
 public:
  PreparedCall(Op op, const TensorArg& x, const TensorArg& scales, const TensorArg& out);
  // A fused operator (op QuantizeReduceScatter / QuantizeAllReduce, or the quantized one it
  // stands for): `input` is the float tensor, `config` the quantization.
  PreparedCall(Op op, const TensorArg& input, const QuantConfig& config, const TensorArg& out);
  ~PreparedCall();
  PreparedCall(const PreparedCall&) = delete;
  PreparedCall& operator=(const PreparedCall&) = delete;
  PreparedCall(PreparedCall&&) noexcept;

  // Both phases on the communicator `group` (registered for the calling thread or
  // process), reduceOp "sum".
  CallResult run(const std::string& group);

 private:
  struct Tensors;
  Op op_;
  std::unique_ptr<Tensors> t_;
  QuantConfig config_;  // fused operators
  CallResult made_;     // the failure of making the tensors, if any
  std::vector<uint8_t> workspace_;
};

// One call: PreparedCall(op, x, scales, out).run(group).
CallResult call_operator(Op op, const std::string& group, const TensorArg& x, const TensorArg& scales,
                         const TensorArg& out);

// The output shape `op` has for x's shape over nranks ranks (contract::output_shape); for
// shapes the operator will reject anyway a small placeholder, so that a buffer can still
// be passed and the operator give its own message.
std::vector<int64_t> expected_output_shape(Op op, const std::vector<int64_t>& x_shape, int nranks);

}  // namespace qcoll::cli
