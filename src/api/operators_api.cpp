// The two-phase C functions of QuantReduceScatter, QuantAllReduce and their fused twins
// QuantizeReduceScatter, QuantizeAllReduce.
#include "api/handles.hpp"
#include "api/stream.hpp"

using qcoll::Status;
using qcoll::StatusCode;
using qcoll::ops::OpKind;

namespace {

// Phase one of any operator: x and scales for the quantized ones, input (as x) and config
// for the fused ones.
qcollStatus get_workspace_size(OpKind op, const qcollTensor* x, const qcollTensor* scales,
                               const qcollQuantConfig* config, const char* group, const char* reduceOp,
                               qcollTensor* output, uint64_t* workspaceSize, qcollOpExecutor** executor) {
  return qcoll::api::guarded([&]() -> Status {
    if (executor != nullptr) *executor = nullptr;
    qcoll::ops::OpRequest req;
    qcoll::ops::QuantConfigDesc cfg;
    if (config != nullptr) {
      cfg.x_dtype = static_cast<int32_t>(config->xDtype);
      cfg.scales_dtype = static_cast<int32_t>(config->scalesDtype);
      cfg.hif8_target = config->hif8Target;
    }
    req.op = op;
    req.x = x ? &x->desc : nullptr;
    req.scales = scales ? &scales->desc : nullptr;
    req.config = config ? &cfg : nullptr;
    req.output = output ? &output->desc : nullptr;
    req.group = group;
    req.reduce_op = reduceOp;
    req.has_workspace_size_out = workspaceSize != nullptr;
    req.has_executor_out = executor != nullptr;
    auto handle = std::make_unique<qcollOpExecutor>();
    uint64_t ws = 0;
    Status st = qcoll::ops::Executor::prepare(req, &ws, &handle->impl);
    if (!st.ok()) return st;
    *workspaceSize = ws;
    *executor = handle.release();
    return Status::Ok();
  });
}

qcollStatus run(OpKind op, void* workspace, uint64_t workspaceSize, qcollOpExecutor* executor, qcollStream stream) {
  return qcoll::api::guarded([&]() -> Status {
    if (executor == nullptr) return Status::Error(StatusCode::ParamNullptr, "executor: must not be null");
    if (executor->magic != qcollOpExecutor::kMagic || !executor->impl)
      return Status::Error(StatusCode::ParamInvalid,
                           "executor: not an executor from phase one (already run or destroyed?)");
    // Single use: released whatever the outcome.
    std::unique_ptr<qcollOpExecutor> owned(executor);
    owned->magic = 0;
    if (owned->impl->op() != op) {
      owned->impl->report_failure(StatusCode::ParamInvalid);
      return Status::Error(StatusCode::ParamInvalid, std::string("executor: built for ") +
                                                         qcoll::ops::op_name(owned->impl->op()) + ", passed to " +
                                                         qcoll::ops::op_name(op) + " (executor released)");
    }
    if (stream == nullptr) return owned->impl->run(workspace, workspaceSize);
    auto target = qcoll::api::find_stream(stream);
    if (!target) {
      owned->impl->report_failure(StatusCode::ParamInvalid);
      return qcoll::api::not_a_stream(stream);
    }
    // Enqueued: the stream's thread runs the executor and frees it right after.
    std::shared_ptr<qcoll::ops::Executor> exec(std::move(owned->impl));
    if (!target->enqueue([exec, workspace, workspaceSize] { return exec->run(workspace, workspaceSize); })) {
      exec->report_failure(StatusCode::ParamInvalid);
      return Status::Error(StatusCode::ParamInvalid, "stream: is being destroyed (executor released)");
    }
    return Status::Ok();
  });
}

}  // namespace

extern "C" {

qcollStatus qcollQuantReduceScatterGetWorkspaceSize(const qcollTensor* x, const qcollTensor* scales, const char* group,
                                                    const char* reduceOp, qcollTensor* output, uint64_t* workspaceSize,
                                                    qcollOpExecutor** executor) {
  return get_workspace_size(OpKind::ReduceScatter, x, scales, nullptr, group, reduceOp, output, workspaceSize,
                            executor);
}

qcollStatus qcollQuantReduceScatter(void* workspace, uint64_t workspaceSize, qcollOpExecutor* executor,
                                    qcollStream stream) {
  return run(OpKind::ReduceScatter, workspace, workspaceSize, executor, stream);
}

qcollStatus qcollQuantAllReduceGetWorkspaceSize(const qcollTensor* x, const qcollTensor* scales, const char* group,
                                                const char* reduceOp, qcollTensor* output, uint64_t* workspaceSize,
                                                qcollOpExecutor** executor) {
  return get_workspace_size(OpKind::AllReduce, x, scales, nullptr, group, reduceOp, output, workspaceSize, executor);
}

qcollStatus qcollQuantAllReduce(void* workspace, uint64_t workspaceSize, qcollOpExecutor* executor,
                                qcollStream stream) {
  return run(OpKind::AllReduce, workspace, workspaceSize, executor, stream);
}

qcollStatus qcollQuantizeReduceScatterGetWorkspaceSize(const qcollTensor* input, const qcollQuantConfig* config,
                                                       const char* group, const char* reduceOp, qcollTensor* output,
                                                       uint64_t* workspaceSize, qcollOpExecutor** executor) {
  return get_workspace_size(OpKind::QuantizeReduceScatter, input, nullptr, config, group, reduceOp, output,
                            workspaceSize, executor);
}

qcollStatus qcollQuantizeReduceScatter(void* workspace, uint64_t workspaceSize, qcollOpExecutor* executor,
                                       qcollStream stream) {
  return run(OpKind::QuantizeReduceScatter, workspace, workspaceSize, executor, stream);
}

qcollStatus qcollQuantizeAllReduceGetWorkspaceSize(const qcollTensor* input, const qcollQuantConfig* config,
                                                   const char* group, const char* reduceOp, qcollTensor* output,
                                                   uint64_t* workspaceSize, qcollOpExecutor** executor) {
  return get_workspace_size(OpKind::QuantizeAllReduce, input, nullptr, config, group, reduceOp, output, workspaceSize,
                            executor);
}

qcollStatus qcollQuantizeAllReduce(void* workspace, uint64_t workspaceSize, qcollOpExecutor* executor,
                                   qcollStream stream) {
  return run(OpKind::QuantizeAllReduce, workspace, workspaceSize, executor, stream);
}

qcollStatus qcollDestroyExecutor(qcollOpExecutor* executor) {
  return qcoll::api::guarded([&]() -> Status {
    if (executor == nullptr) return Status::Ok();
    if (executor->magic != qcollOpExecutor::kMagic)
      return Status::Error(StatusCode::ParamInvalid,
                           "executor: not an executor from phase one (already run or destroyed?)");
    executor->magic = 0;
    std::unique_ptr<qcollOpExecutor> owned(executor);
    // The call it was made for will not run here: take part in its agreement as a failed
    // rank does, so that the peers fail at once instead of waiting for the timeout.
    if (owned->impl) owned->impl->report_not_run();
    return Status::Ok();
  });
}

}  // extern "C"
