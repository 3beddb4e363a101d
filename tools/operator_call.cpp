// Operator calls through the two-phase C API; see operator_call.hpp.
#include "operator_call.hpp"

#include <memory>

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
  return TensorPtr(qcollCreateContiguousTensor(t.shape.data(), t.shape.size(),
                                               static_cast<qcollDataType>(t.dtype), t.data));
}

CallResult failed(int32_t status) { return {status, qcollGetRecentErrMsg()}; }

}  // namespace

const char* operator_name(Operator op) {
  return op == Operator::ReduceScatter ? "reduce-scatter" : "all-reduce";
}

CallResult call_operator(Operator op, const std::string& group, const TensorArg& x, const TensorArg& scales,
                         const TensorArg& out) {
  TensorPtr tx = make_tensor(x), ts = make_tensor(scales), to = make_tensor(out);
  if (!tx || !ts || !to) return failed(QCOLL_PARAM_INVALID);
  uint64_t ws_size = 0;
  qcollOpExecutor* exec = nullptr;
  qcollStatus st = op == Operator::ReduceScatter
                       ? qcollQuantReduceScatterGetWorkspaceSize(tx.get(), ts.get(), group.c_str(), "sum", to.get(),
                                                                 &ws_size, &exec)
                       : qcollQuantAllReduceGetWorkspaceSize(tx.get(), ts.get(), group.c_str(), "sum", to.get(),
                                                             &ws_size, &exec);
  if (st != QCOLL_SUCCESS) return failed(st);
  std::vector<uint8_t> workspace(ws_size);
  st = op == Operator::ReduceScatter ? qcollQuantReduceScatter(workspace.data(), ws_size, exec, nullptr)
                                     : qcollQuantAllReduce(workspace.data(), ws_size, exec, nullptr);
  if (st != QCOLL_SUCCESS) return failed(st);
  return {};
}

std::vector<int64_t> expected_output_shape(Operator op, const std::vector<int64_t>& x_shape, int nranks) {
  if (x_shape.empty() || nranks < 1) return {1, 1};
  int64_t count = 1;
  for (int64_t d : x_shape) {
    if (d <= 0 || __builtin_mul_overflow(count, d, &count)) return {1, 1};
  }
  if (op == Operator::AllReduce) return x_shape;
  const int64_t h = x_shape.back();
  const int64_t bs = count / h;
  return {bs / nranks > 0 ? bs / nranks : 1, h};
}

}  // namespace qcoll::cli
