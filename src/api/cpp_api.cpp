// The C++ API (qcoll.hpp), written over the C API so that both behave the same.
#include <cstring>
#include <deque>
#include <mutex>
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
  return TensorPtr(
      qcollCreateContiguousTensor(v.shape.data(), v.shape.size(), static_cast<qcollDataType>(v.dtype), v.data));
}

using PrepareFn = qcollStatus (*)(const qcollTensor*, const qcollTensor*, const char*, const char*, qcollTensor*,
                                  uint64_t*, qcollOpExecutor**);
using RunFn = qcollStatus (*)(void*, uint64_t, qcollOpExecutor*, qcollStream);

}  // namespace

struct Stream::Impl {
  qcollStream stream = nullptr;
  std::mutex mu;
  std::deque<std::vector<uint8_t>> workspaces;  // of the calls enqueued, oldest first

  // Keeps the workspace of an enqueued call until a synchronize covered it.
  void* keep(std::vector<uint8_t> ws) {
    std::lock_guard<std::mutex> lk(mu);
    workspaces.push_back(std::move(ws));
    return workspaces.back().empty() ? nullptr : workspaces.back().data();
  }
  std::size_t kept() {
    std::lock_guard<std::mutex> lk(mu);
    return workspaces.size();
  }
  void release_oldest(std::size_t n) {
    std::lock_guard<std::mutex> lk(mu);
    for (std::size_t i = 0; i < n && !workspaces.empty(); ++i) workspaces.pop_front();
  }
};

namespace {

// Phase two with a workspace of ws_size bytes: run here, or enqueued on `stream` (which
// keeps the workspace).
Status run_phase_two(RunFn run, qcollOpExecutor* exec, uint64_t ws_size, Stream::Impl* stream) {
  std::vector<uint8_t> workspace;
  try {
    workspace.resize(ws_size);
  } catch (const std::bad_alloc&) {
    // Still run it (it fails on the workspace check and tells the peers), so nobody hangs.
    run(nullptr, 0, exec, nullptr);
    return Status::Error(StatusCode::InnerError, "workspace: cannot allocate " + std::to_string(ws_size) + " bytes");
  }
  if (stream != nullptr) {
    void* ws = stream->keep(std::move(workspace));
    return recent(run(ws, ws_size, exec, stream->stream));
  }
  return recent(run(workspace.empty() ? nullptr : workspace.data(), ws_size, exec, nullptr));
}

Status run_operator(PrepareFn prepare, RunFn run, const TensorView& x, const TensorView& scales,
                    const std::string& group, const TensorView& out, const std::string& reduce_op,
                    Stream::Impl* stream = nullptr) {
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
  qcollStatus rc = prepare(tx.get(), ts.get(), group.c_str(), reduce_op.c_str(), to.get(), &ws_size, &exec);
  if (rc != QCOLL_SUCCESS) return recent(rc);
  return run_phase_two(run, exec, ws_size, stream);
}

using FusedPrepareFn = qcollStatus (*)(const qcollTensor*, const qcollQuantConfig*, const char*, const char*,
                                       qcollTensor*, uint64_t*, qcollOpExecutor**);

// A fused operator (input + config instead of x + scales), as run_operator.
Status run_fused(FusedPrepareFn prepare, RunFn run, const TensorView& input, const QuantConfig& config,
                 const std::string& group, const TensorView& out, const std::string& reduce_op,
                 Stream::Impl* stream = nullptr) {
  TensorPtr ti = make_tensor(input), to = make_tensor(out);
  qcollQuantConfig c;
  c.xDtype = static_cast<qcollDataType>(config.x_dtype);
  c.scalesDtype = static_cast<qcollDataType>(config.scales_dtype);
  c.hif8Target = config.hif8_target;
  uint64_t ws_size = 0;
  qcollOpExecutor* exec = nullptr;
  if (!ti || !to) {
    // As in run_operator: take part in the call, then report the view's problem.
    const char* param = !ti ? "input" : "output";
    std::string why = qcollGetRecentErrMsg();
    prepare(ti.get(), &c, group.c_str(), reduce_op.c_str(), to.get(), &ws_size, &exec);
    return Status::Error(StatusCode::ParamInvalid, std::string(param) + ": " + why);
  }
  qcollStatus rc = prepare(ti.get(), &c, group.c_str(), reduce_op.c_str(), to.get(), &ws_size, &exec);
  if (rc != QCOLL_SUCCESS) return recent(rc);
  return run_phase_two(run, exec, ws_size, stream);
}

template <class F>
Status no_throw(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return Status::Error(StatusCode::InnerError, "out of memory");
  } catch (...) {
    return Status::Error(StatusCode::InnerError, "internal error");
  }
}

Stream::Impl* stream_impl(Stream& s) {
  if (s.handle() == nullptr) throw Error(StatusCode::ParamInvalid, "stream: moved-from Stream");
  return s.impl();
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
std::size_t TensorView::nbytes() const { return dtype_bytes(dtype, numel()); }

TensorView view_bytes(const void* data, std::size_t bytes, DType dtype, std::vector<int64_t> shape) {
  TensorView v;
  v.data = const_cast<void*>(data);
  v.dtype = dtype;
  v.shape = std::move(shape);
  for (int64_t d : v.shape)
    if (d < 0) throw Error(StatusCode::ParamInvalid, "view: negative dimension in shape");
  if (dtype_bits(dtype) == 0)
    throw Error(StatusCode::ParamInvalid, "view: unknown dtype " + std::to_string(static_cast<int32_t>(dtype)));
  if (v.nbytes() != bytes)
    throw Error(StatusCode::ParamInvalid, "view: " + std::to_string(bytes) + " bytes of data, but shape of " +
                                              std::to_string(v.numel()) + " " + std::string(dtype_name(dtype)) +
                                              " elements needs " + std::to_string(v.nbytes()));
  return v;
}

std::vector<int64_t> reduce_scatter_output_shape(const std::vector<int64_t>& x_shape, int nranks) {
  if (x_shape.size() != 2 && x_shape.size() != 3) throw Error(StatusCode::ParamInvalid, "x: must be 2-D or 3-D");
  if (nranks <= 0) throw Error(StatusCode::ParamInvalid, "nranks: must be positive");
  int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < x_shape.size(); ++i) rows *= x_shape[i];
  if (rows % nranks != 0)
    throw Error(StatusCode::ParamInvalid,
                "x: BS = " + std::to_string(rows) + " must be a multiple of the group size " + std::to_string(nranks));
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

ThreadGroup::Membership::Membership(Membership&& o) noexcept : group_(std::move(o.group_)), rank_(o.rank_) {}

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

void quant_all_reduce(const TensorView& x, const TensorView& scales, const std::string& group, const TensorView& out,
                      const std::string& reduce_op) {
  throw_if_error(try_quant_all_reduce(x, scales, group, out, reduce_op));
}

Status try_quant_reduce_scatter(const TensorView& x, const TensorView& scales, const std::string& group,
                                const TensorView& out, const std::string& reduce_op) noexcept {
  return no_throw([&] {
    return run_operator(qcollQuantReduceScatterGetWorkspaceSize, qcollQuantReduceScatter, x, scales, group, out,
                        reduce_op);
  });
}

Status try_quant_all_reduce(const TensorView& x, const TensorView& scales, const std::string& group,
                            const TensorView& out, const std::string& reduce_op) noexcept {
  return no_throw([&] {
    return run_operator(qcollQuantAllReduceGetWorkspaceSize, qcollQuantAllReduce, x, scales, group, out, reduce_op);
  });
}

void quant_reduce_scatter(const TensorView& x, const TensorView& scales, const std::string& group,
                          const TensorView& out, Stream& stream, const std::string& reduce_op) {
  throw_if_error(run_operator(qcollQuantReduceScatterGetWorkspaceSize, qcollQuantReduceScatter, x, scales, group, out,
                              reduce_op, stream_impl(stream)));
}

void quant_all_reduce(const TensorView& x, const TensorView& scales, const std::string& group, const TensorView& out,
                      Stream& stream, const std::string& reduce_op) {
  throw_if_error(run_operator(qcollQuantAllReduceGetWorkspaceSize, qcollQuantAllReduce, x, scales, group, out,
                              reduce_op, stream_impl(stream)));
}

// ---- The fused operators ----

void quantize_reduce_scatter(const TensorView& input, const QuantConfig& config, const std::string& group,
                             const TensorView& out, const std::string& reduce_op) {
  throw_if_error(try_quantize_reduce_scatter(input, config, group, out, reduce_op));
}

void quantize_all_reduce(const TensorView& input, const QuantConfig& config, const std::string& group,
                         const TensorView& out, const std::string& reduce_op) {
  throw_if_error(try_quantize_all_reduce(input, config, group, out, reduce_op));
}

Status try_quantize_reduce_scatter(const TensorView& input, const QuantConfig& config, const std::string& group,
                                   const TensorView& out, const std::string& reduce_op) noexcept {
  return no_throw([&] {
    return run_fused(qcollQuantizeReduceScatterGetWorkspaceSize, qcollQuantizeReduceScatter, input, config, group, out,
                     reduce_op);
  });
}

Status try_quantize_all_reduce(const TensorView& input, const QuantConfig& config, const std::string& group,
                               const TensorView& out, const std::string& reduce_op) noexcept {
  return no_throw([&] {
    return run_fused(qcollQuantizeAllReduceGetWorkspaceSize, qcollQuantizeAllReduce, input, config, group, out,
                     reduce_op);
  });
}

void quantize_reduce_scatter(const TensorView& input, const QuantConfig& config, const std::string& group,
                             const TensorView& out, Stream& stream, const std::string& reduce_op) {
  throw_if_error(run_fused(qcollQuantizeReduceScatterGetWorkspaceSize, qcollQuantizeReduceScatter, input, config, group,
                           out, reduce_op, stream_impl(stream)));
}

void quantize_all_reduce(const TensorView& input, const QuantConfig& config, const std::string& group,
                         const TensorView& out, Stream& stream, const std::string& reduce_op) {
  throw_if_error(run_fused(qcollQuantizeAllReduceGetWorkspaceSize, qcollQuantizeAllReduce, input, config, group, out,
                           reduce_op, stream_impl(stream)));
}

// ---- UniqueId, Comm, Stream ----

UniqueId UniqueId::create() {
  qcollUniqueId raw;
  throw_if_error(recent(qcollGetUniqueId(&raw)));
  UniqueId id;
  std::memcpy(id.bytes_.data(), raw.internal, kBytes);
  return id;
}

UniqueId UniqueId::from_hex(const std::string& hex) {
  qcollUniqueId raw;
  throw_if_error(recent(qcollUniqueIdFromHex(hex.c_str(), &raw)));
  UniqueId id;
  std::memcpy(id.bytes_.data(), raw.internal, kBytes);
  return id;
}

UniqueId UniqueId::from_bytes(std::span<const uint8_t> bytes) {
  if (bytes.size() != kBytes)
    throw Error(StatusCode::ParamInvalid,
                "id: must be " + std::to_string(kBytes) + " bytes, got " + std::to_string(bytes.size()));
  UniqueId id;
  std::memcpy(id.bytes_.data(), bytes.data(), kBytes);
  return id;
}

std::string UniqueId::hex() const {
  qcollUniqueId raw;
  std::memcpy(raw.internal, bytes_.data(), kBytes);
  char text[QCOLL_UNIQUE_ID_HEX_CHARS + 1];
  throw_if_error(recent(qcollUniqueIdToHex(&raw, text, sizeof text)));
  return text;
}

Comm::Comm(const std::string& name, int nranks, const UniqueId& id, int rank) {
  qcollUniqueId raw;
  std::memcpy(raw.internal, id.bytes().data(), UniqueId::kBytes);
  throw_if_error(recent(qcollCommInitRank(name.c_str(), nranks, &raw, rank, &comm_)));
  name_ = qcollCommName(comm_);
  int32_t r = 0, n = 0;
  qcollCommRank(comm_, &r);
  qcollCommSize(comm_, &n);
  rank_ = r;
  size_ = n;
}

Comm::Comm(Comm&& o) noexcept
    : comm_(std::exchange(o.comm_, nullptr)), name_(std::move(o.name_)), rank_(o.rank_), size_(o.size_) {}

Comm& Comm::operator=(Comm&& o) noexcept {
  if (this != &o) {
    qcollCommDestroy(comm_);
    comm_ = std::exchange(o.comm_, nullptr);
    name_ = std::move(o.name_);
    rank_ = o.rank_;
    size_ = o.size_;
  }
  return *this;
}

Comm::~Comm() { qcollCommDestroy(comm_); }

Stream::Stream() : impl_(std::make_unique<Impl>()) { throw_if_error(recent(qcollStreamCreate(&impl_->stream))); }

Stream::Stream(Stream&& o) noexcept = default;

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (impl_) qcollStreamDestroy(impl_->stream);
    impl_ = std::move(o.impl_);
  }
  return *this;
}

Stream::~Stream() {
  if (impl_) qcollStreamDestroy(impl_->stream);  // waits for the calls; then the workspaces go
}

void Stream::synchronize() { synchronize(std::chrono::milliseconds(-1)); }

bool Stream::synchronize(std::chrono::milliseconds timeout) {
  if (!impl_) throw Error(StatusCode::ParamInvalid, "stream: moved-from Stream");
  const std::size_t covered = impl_->kept();
  const auto ms = timeout.count() < 0 ? -1 : std::min<int64_t>(timeout.count(), INT32_MAX);
  int32_t timed_out = 0;
  const qcollStatus rc = qcollStreamSynchronizeEx(impl_->stream, static_cast<int32_t>(ms), &timed_out);
  if (timed_out) return false;
  impl_->release_oldest(covered);
  throw_if_error(recent(rc));
  return true;
}

void* Stream::handle() const { return impl_ ? impl_->stream : nullptr; }

}  // namespace qcoll
