// The C++ API (qcoll.hpp), written over the C API so that both behave the same.
#include <new>
#include <utility>

#include "qcoll/qcoll.h"
#include "qcoll/qcoll.hpp"

namespace qcoll {
namespace {

Status recent(qcollStatus code) {
  if (code == QCOLL_SUCCESS) return Status::Ok();
  return Status::Error(static_cast<StatusCode>(code), qcollGetRecentErrMsg());
}

struct TensorDeleter {
  void operator()(qcollTensor* t) const { qcollDestroyTensor(t); }
};
using TensorPtr = std::unique_ptr<qcollTensor, TensorDeleter>;

TensorPtr make_tensor(const TensorView& v) {
  return TensorPtr(qcollCreateContiguousTensor(v.shape.data(), v.shape.size(),
                                               static_cast<qcollDataType>(v.dtype), v.data));
}

using PrepareFn = qcollStatus (*)(const qcollTensor*, const qcollTensor*, const char*, const char*,
                                  qcollTensor*, uint64_t*, qcollOpExecutor**);
using RunFn = qcollStatus (*)(void*, uint64_t, qcollOpExecutor*, qcollStream);

Status run_operator(PrepareFn prepare, RunFn run, const TensorView& x, const TensorView& scales,
                    const std::string& group, const TensorView& out, const std::string& reduce_op) {
  TensorPtr tx = make_tensor(x), ts = make_tensor(scales), to = make_tensor(out);
  uint64_t ws_size = 0;
  qcollOpExecutor* exec = nullptr;
  if (!tx || !ts || !to) {
    // A view the C API refuses: still take part in the call (phase one sees a null tensor
    // and tells the peers), then report the real reason.
    const char* param = !tx ? "x" : !ts ? "scales" : "output";
    std::string why = qcollGetRecentErrMsg();
    prepare(tx.get(), ts.get(), group.c_str(), reduce_op.c_str(), to.get(), &ws_size, &exec);
    return Status::Error(StatusCode::ParamInvalid, std::string(param) + ": " + why);
  }
  qcollStatus rc =
      prepare(tx.get(), ts.get(), group.c_str(), reduce_op.c_str(), to.get(), &ws_size, &exec);
  if (rc != QCOLL_SUCCESS) return recent(rc);
  std::vector<uint8_t> workspace;
  try {
    workspace.resize(ws_size);
  } catch (const std::bad_alloc&) {
    // Still run it (it fails on the workspace check and tells the peers), so nobody hangs.
    rc = run(nullptr, 0, exec, nullptr);
    return Status::Error(StatusCode::InnerError,
                         "workspace: cannot allocate " + std::to_string(ws_size) + " bytes");
  }
  rc = run(workspace.empty() ? nullptr : workspace.data(), ws_size, exec, nullptr);
  return recent(rc);
}

std::string with_status_name(StatusCode code, const std::string& message) {
  return std::string(status_name(code)) + ": " + message;
}

}  // namespace

Error::Error(StatusCode code, const std::string& message)
    : std::runtime_error(with_status_name(code, message)), code_(code), message_(message) {}

void throw_if_error(const Status& st) {
  if (!st.ok()) throw Error(st);
}

std::size_t TensorView::numel() const {
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d < 0 ? 0 : d);
  return n;
}
std::size_t TensorView::nbytes() const { return numel() * dtype_size(dtype); }

TensorView view_bytes(const void* data, std::size_t bytes, DType dtype, std::vector<int64_t> shape) {
  TensorView v;
  v.data = const_cast<void*>(data);
  v.dtype = dtype;
  v.shape = std::move(shape);
  for (int64_t d : v.shape)
    if (d < 0) throw Error(StatusCode::ParamInvalid, "view: negative dimension in shape");
  if (dtype_size(dtype) == 0)
    throw Error(StatusCode::ParamInvalid,
                "view: unknown dtype " + std::to_string(static_cast<int32_t>(dtype)));
  if (v.nbytes() != bytes)
    throw Error(StatusCode::ParamInvalid,
                "view: " + std::to_string(bytes) + " bytes of data, but shape of " +
                    std::to_string(v.numel()) + " " + std::string(dtype_name(dtype)) +
                    " elements needs " + std::to_string(v.nbytes()));
  return v;
}

std::vector<int64_t> reduce_scatter_output_shape(const std::vector<int64_t>& x_shape, int nranks) {
  if (x_shape.size() != 2 && x_shape.size() != 3)
    throw Error(StatusCode::ParamInvalid, "x: must be 2-D or 3-D");
  if (nranks <= 0) throw Error(StatusCode::ParamInvalid, "nranks: must be positive");
  int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < x_shape.size(); ++i) rows *= x_shape[i];
  if (rows % nranks != 0)
    throw Error(StatusCode::ParamInvalid, "x: BS = " + std::to_string(rows) +
                                              " must be a multiple of the group size " +
                                              std::to_string(nranks));
  return {rows / nranks, x_shape.back()};
}

ThreadGroup::ThreadGroup(const std::string& name, int nranks) : name_(name), size_(nranks) {
  qcollThreadGroup* g = nullptr;
  qcollStatus rc = qcollThreadGroupCreate(name.c_str(), nranks, &g);
  throw_if_error(recent(rc));
  handle_ = std::shared_ptr<qcollThreadGroup>(g, [](qcollThreadGroup* p) { qcollThreadGroupDestroy(p); });
}

ThreadGroup::Membership ThreadGroup::join(int rank) {
  if (!handle_) throw Error(StatusCode::ParamInvalid, "group: moved-from ThreadGroup");
  throw_if_error(recent(qcollThreadGroupJoin(handle_.get(), rank)));
  return Membership(handle_, rank);
}

ThreadGroup::Membership::Membership(Membership&& o) noexcept
    : group_(std::move(o.group_)), rank_(o.rank_) {}

ThreadGroup::Membership& ThreadGroup::Membership::operator=(Membership&& o) noexcept {
  if (this != &o) {
    leave();
    group_ = std::move(o.group_);
    rank_ = o.rank_;
  }
  return *this;
}

ThreadGroup::Membership::~Membership() { leave(); }

void ThreadGroup::Membership::leave() {
  if (!group_) return;
  qcollThreadGroupLeave(group_.get());
  group_.reset();
}

void quant_reduce_scatter(const TensorView& x, const TensorView& scales, const std::string& group,
                          const TensorView& out, const std::string& reduce_op) {
  throw_if_error(try_quant_reduce_scatter(x, scales, group, out, reduce_op));
}

void quant_all_reduce(const TensorView& x, const TensorView& scales, const std::string& group,
                      const TensorView& out, const std::string& reduce_op) {
  throw_if_error(try_quant_all_reduce(x, scales, group, out, reduce_op));
}

Status try_quant_reduce_scatter(const TensorView& x, const TensorView& scales,
                                const std::string& group, const TensorView& out,
                                const std::string& reduce_op) noexcept {
  try {
    return run_operator(qcollQuantReduceScatterGetWorkspaceSize, qcollQuantReduceScatter, x, scales,
                        group, out, reduce_op);
  } catch (const std::bad_alloc&) {
    return Status::Error(StatusCode::InnerError, "out of memory");
  } catch (...) {
    return Status::Error(StatusCode::InnerError, "internal error");
  }
}

Status try_quant_all_reduce(const TensorView& x, const TensorView& scales, const std::string& group,
                            const TensorView& out, const std::string& reduce_op) noexcept {
  try {
    return run_operator(qcollQuantAllReduceGetWorkspaceSize, qcollQuantAllReduce, x, scales, group,
                        out, reduce_op);
  } catch (const std::bad_alloc&) {
    return Status::Error(StatusCode::InnerError, "out of memory");
  } catch (...) {
    return Status::Error(StatusCode::InnerError, "internal error");
  }
}

}  // namespace qcoll
