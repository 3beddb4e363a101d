// Operator calls through the two-phase C API; see operator_call.hpp.
#include "operator_call.hpp"

#include "cli_args.hpp"
#include "cli_error.hpp"
#include "qcoll/qcoll.h"

namespace qcoll::cli {
namespace {

struct TensorDeleter {
  void operator()(qcollTensor* t) const {
    if (t) qcollDestroyTensor(t);
  }
};
using TensorPtr = std::unique_ptr<qcollTensor, TensorDeleter>;

TensorPtr make_tensor(const TensorArg& t) {
  return TensorPtr(
      qcollCreateContiguousTensor(t.shape.data(), t.shape.size(), static_cast<qcollDataType>(t.dtype), t.data));
}

CallResult failed(int32_t status) { return {status, qcollGetRecentErrMsg()}; }

}  // namespace

const char* command_name(Op op) { return contract::is_all_reduce(op) ? "all-reduce" : "reduce-scatter"; }

std::vector<Op> parse_op_list(const std::string& option, const std::string& text) {
  static constexpr const char* kNames[] = {"reduce-scatter", "all-reduce"};
  std::vector<Op> out;
  for (const std::string& item : split_list(text))
    out.push_back(parse_choice(option, item, kNames) == kNames[0] ? Op::ReduceScatter : Op::AllReduce);
  if (out.empty()) throw CliError(ErrorKind::Argument, option + ": no operator given");
  return out;
}

struct PreparedCall::Tensors {
  TensorPtr x, scales, out;
};

PreparedCall::PreparedCall(Op op, const TensorArg& x, const TensorArg& scales, const TensorArg& out)
    : op_(op), t_(new Tensors{make_tensor(x), make_tensor(scales), make_tensor(out)}) {
  if (!t_->x || !t_->scales || !t_->out) made_ = failed(QCOLL_PARAM_INVALID);
}
PreparedCall::PreparedCall(Op op, const TensorArg& input, const QuantConfig& config, const TensorArg& out)
    : op_(contract::fused_op(op)), t_(new Tensors{make_tensor(input), nullptr, make_tensor(out)}), config_(config) {
  if (!t_->x || !t_->out) made_ = failed(QCOLL_PARAM_INVALID);
}
PreparedCall::~PreparedCall() = default;
PreparedCall::PreparedCall(PreparedCall&&) noexcept = default;

CallResult PreparedCall::run(const std::string& group) {
  if (!made_.ok()) return made_;
  const qcollQuantConfig cfg{static_cast<qcollDataType>(config_.x_dtype),
                             static_cast<qcollDataType>(config_.scales_dtype), config_.hif8_target};
  const char* g = group.c_str();
  uint64_t ws = 0;
  qcollOpExecutor* exec = nullptr;
  qcollStatus st = QCOLL_SUCCESS;
  switch (op_) {
    case Op::ReduceScatter:
      st = qcollQuantReduceScatterGetWorkspaceSize(t_->x.get(), t_->scales.get(), g, "sum", t_->out.get(), &ws, &exec);
      break;
    case Op::AllReduce:
      st = qcollQuantAllReduceGetWorkspaceSize(t_->x.get(), t_->scales.get(), g, "sum", t_->out.get(), &ws, &exec);
      break;
    case Op::QuantizeReduceScatter:
      st = qcollQuantizeReduceScatterGetWorkspaceSize(t_->x.get(), &cfg, g, "sum", t_->out.get(), &ws, &exec);
      break;
    case Op::QuantizeAllReduce:
      st = qcollQuantizeAllReduceGetWorkspaceSize(t_->x.get(), &cfg, g, "sum", t_->out.get(), &ws, &exec);
      break;
  }
  if (st != QCOLL_SUCCESS) return failed(st);
  if (workspace_.size() < ws) workspace_.resize(ws);
  void* w = workspace_.data();
  switch (op_) {
    case Op::ReduceScatter:
      st = qcollQuantReduceScatter(w, ws, exec, nullptr);
      break;
    case Op::AllReduce:
      st = qcollQuantAllReduce(w, ws, exec, nullptr);
      break;
    case Op::QuantizeReduceScatter:
      st = qcollQuantizeReduceScatter(w, ws, exec, nullptr);
      break;
    case Op::QuantizeAllReduce:
      st = qcollQuantizeAllReduce(w, ws, exec, nullptr);
      break;
  }
  if (st != QCOLL_SUCCESS) return failed(st);
  return {};
}

CallResult call_operator(Op op, const std::string& group, const TensorArg& x, const TensorArg& scales,
                         const TensorArg& out) {
  return PreparedCall(op, x, scales, out).run(group);
}

std::vector<int64_t> expected_output_shape(Op op, const std::vector<int64_t>& x_shape, int nranks) {
  if (auto s = contract::output_shape(op, x_shape, nranks)) return *s;
  return {1, 1};
}

}  // namespace qcoll::cli
