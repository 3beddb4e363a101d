// In-process thread groups and the two operators, through the C API (qcoll.h), so Python
// sees exactly the validation and status codes of the C contract. The GIL is released
// around every call that may wait for other ranks: the ranks of a thread group are Python
// threads of this process, and they must all be inside the collective at once.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <memory>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/qcoll.hpp"
#include "status_error.hpp"
#include "stream_binding.hpp"
#include "workspace_pool.hpp"

namespace qcoll::python {
namespace {

using AnyArray = nb::ndarray<nb::device::cpu>;

class ThreadGroup {
 public:
  ThreadGroup(const std::string& name, int32_t nranks) : name_(name) {
    throw_if_failed(qcollThreadGroupCreate(name.c_str(), nranks, &group_));
  }
  ~ThreadGroup() {
    if (!group_) return;
    release_workspaces(name_);
    if (PyGILState_Check()) {
      nb::gil_scoped_release unlocked;
      qcollThreadGroupDestroy(group_);
    } else {
      qcollThreadGroupDestroy(group_);
    }
  }
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  void join(int32_t rank) { throw_if_failed(qcollThreadGroupJoin(live(), rank)); }
  void leave() { throw_if_failed(qcollThreadGroupLeave(live())); }
  void destroy() {
    if (!group_) return;
    qcollThreadGroup* g = group_;
    group_ = nullptr;
    release_workspaces(name_);
    int32_t status;
    {
      nb::gil_scoped_release unlocked;  // may wait for threads still inside an operator
      status = qcollThreadGroupDestroy(g);
    }
    throw_if_failed(status);
  }
  const std::string& name() const { return name_; }
  bool alive() const { return group_ != nullptr; }

 private:
  qcollThreadGroup* live() const {
    if (!group_) throw_param_invalid("group: thread group '" + name_ + "' was destroyed");
    return group_;
  }
  std::string name_;
  qcollThreadGroup* group_ = nullptr;
};

// Owns a qcollTensor describing a numpy/DLPack array (shape, element strides, dtype).
struct TensorHandle {
  qcollTensor* t = nullptr;
  ~TensorHandle() {
    if (t) qcollDestroyTensor(t);
  }
};

// A 4-bit tensor (contract.md §ext-fp4-layout) comes as its packed bytes, uint8 of shape
// (..., H/2); the qcollTensor has the logical shape (..., H) and strides in elements: a
// byte's stride counts two elements (the last dimension's unit stride stays 1).
void describe(const std::optional<AnyArray>& a, int32_t dtype, const char* param, TensorHandle& h) {
  if (!a) return;  // a null tensor: the operator reports PARAM_NULLPTR
  if (!is_known_dtype(dtype))
    throw_param_invalid(std::string(param) + ": unknown dtype value " + std::to_string(dtype));
  const bool packed = is_4bit_format(static_cast<DType>(dtype));
  const std::size_t want = packed ? 1 : dtype_size(static_cast<DType>(dtype));
  if (a->itemsize() != want)
    throw_param_invalid(std::string(param) + ": element size must be " + std::to_string(want) + " bytes for " +
                        std::string(dtype_name(static_cast<DType>(dtype))) + (packed ? " (two codes a byte)" : "") +
                        ", got " + std::to_string(a->itemsize()));
  const std::size_t nd = a->ndim();
  std::vector<int64_t> dims(nd), strides(nd);
  for (std::size_t i = 0; i < nd; ++i) {
    const bool last = i + 1 == nd;
    dims[i] = static_cast<int64_t>(a->shape(i)) * (packed && last ? 2 : 1);
    strides[i] = a->stride(i) * (packed && !(last && a->stride(i) == 1) ? 2 : 1);
  }
  h.t = qcollCreateTensor(dims.data(), nd, static_cast<qcollDataType>(dtype), strides.data(), 0, QCOLL_FORMAT_ND,
                          dims.data(), nd, const_cast<void*>(a->data()));
  if (!h.t) throw_param_invalid(std::string(param) + ": " + qcollGetRecentErrMsg());
}

using PhaseOne = qcollStatus (*)(const qcollTensor*, const qcollTensor*, const char*, const char*, qcollTensor*,
                                 uint64_t*, qcollOpExecutor**);
using PhaseTwo = qcollStatus (*)(void*, uint64_t, qcollOpExecutor*, qcollStream);

// Both phases with the GIL released: phase_one(&workspace size, &executor), then phase two
// on `stream` or here, with a workspace from the group's pool (workspace_pool.hpp). On a
// stream, phase two enqueues: the workspace and `keep` (the arrays the call uses) stay with
// the stream until a synchronize covered the call, then the workspace goes back to the pool.
template <class PhaseOneCall>
void run_phases(const PhaseOneCall& phase_one, PhaseTwo two, const char* group, Stream* stream, nb::object keep) {
  const qcollStream s = stream ? stream->live() : nullptr;
  std::unique_ptr<Workspace> workspace;
  qcollStatus status;
  bool out_of_memory = false;
  {
    nb::gil_scoped_release unlocked;
    uint64_t ws_size = 0;
    qcollOpExecutor* exec = nullptr;
    status = phase_one(&ws_size, &exec);
    if (status == QCOLL_SUCCESS) {
      // A successful phase one resolved the group: `group` is its name.
      try {
        if (ws_size > 0) workspace = acquire_workspace(group, ws_size);
      } catch (const std::bad_alloc&) {
        qcollDestroyExecutor(exec);  // takes part in the call as a failed rank: the peers fail at once
        out_of_memory = true;
      }
      if (!out_of_memory) status = two(workspace ? workspace->data.get() : nullptr, ws_size, exec, s);
    }
    if (!stream || status != QCOLL_SUCCESS) give_back_workspace(std::move(workspace));
  }
  if (out_of_memory) throw std::bad_alloc();
  throw_if_failed(status);
  if (stream) {
    nb::capsule owner(workspace.release(), [](void* p) noexcept {
      give_back_workspace(std::unique_ptr<Workspace>(static_cast<Workspace*>(p)));
    });
    stream->keep(nb::make_tuple(keep, owner));
  }
}

void run_operator(PhaseOne one, PhaseTwo two, const std::optional<AnyArray>& x, int32_t x_dtype,
                  const std::optional<AnyArray>& scales, int32_t scales_dtype, const std::optional<std::string>& group,
                  const std::optional<std::string>& reduce_op, const std::optional<AnyArray>& out, int32_t out_dtype,
                  Stream* stream, nb::object keep) {
  TensorHandle tx, ts, to;
  describe(x, x_dtype, "x", tx);
  describe(scales, scales_dtype, "scales", ts);
  describe(out, out_dtype, "output", to);
  const char* g = group ? group->c_str() : nullptr;
  const char* op = reduce_op ? reduce_op->c_str() : nullptr;
  run_phases([&](uint64_t* ws, qcollOpExecutor** e) { return one(tx.t, ts.t, g, op, to.t, ws, e); }, two, g, stream,
             std::move(keep));
}

// The fused operators: the float input and the quantization config instead of x and scales.
using FusedPhaseOne = qcollStatus (*)(const qcollTensor*, const qcollQuantConfig*, const char*, const char*,
                                      qcollTensor*, uint64_t*, qcollOpExecutor**);

void run_fused(FusedPhaseOne one, PhaseTwo two, const std::optional<AnyArray>& input, int32_t in_dtype, int32_t x_dtype,
               int32_t scales_dtype, float hif8_target, const std::optional<std::string>& group,
               const std::optional<std::string>& reduce_op, const std::optional<AnyArray>& out, int32_t out_dtype,
               Stream* stream, nb::object keep) {
  TensorHandle ti, to;
  describe(input, in_dtype, "input", ti);
  describe(out, out_dtype, "output", to);
  const qcollQuantConfig cfg{static_cast<qcollDataType>(x_dtype), static_cast<qcollDataType>(scales_dtype),
                             hif8_target};
  const char* g = group ? group->c_str() : nullptr;
  const char* op = reduce_op ? reduce_op->c_str() : nullptr;
  run_phases([&](uint64_t* ws, qcollOpExecutor** e) { return one(ti.t, &cfg, g, op, to.t, ws, e); }, two, g, stream,
             std::move(keep));
}

// A fused operator's call made the way a C program makes it (tools/operator_call.hpp's
// PreparedCall): the tensors described once, one workspace kept, both phases per run() with
// the GIL released. The benchmark's C path (bench/bench_python.py), in the Python process.
class CPreparedFused {
 public:
  CPreparedFused(const std::string& which, nb::object input_obj, const AnyArray& input, int32_t in_dtype,
                 int32_t x_dtype, int32_t scales_dtype, const std::string& group, nb::object out_obj,
                 const AnyArray& out, int32_t out_dtype)
      : keep_(nb::make_tuple(input_obj, out_obj)),
        group_(group),
        cfg_{static_cast<qcollDataType>(x_dtype), static_cast<qcollDataType>(scales_dtype), 0.0f} {
    if (which == "rs") {
      one_ = &qcollQuantizeReduceScatterGetWorkspaceSize;
      two_ = &qcollQuantizeReduceScatter;
    } else if (which == "ar") {
      one_ = &qcollQuantizeAllReduceGetWorkspaceSize;
      two_ = &qcollQuantizeAllReduce;
    } else {
      throw_param_invalid("which: must be \"rs\" or \"ar\", got \"" + which + "\"");
    }
    describe(input, in_dtype, "input", in_);
    describe(out, out_dtype, "output", out_);
  }

  void run() {
    qcollStatus status;
    {
      nb::gil_scoped_release unlocked;
      uint64_t ws = 0;
      qcollOpExecutor* exec = nullptr;
      status = one_(in_.t, &cfg_, group_.c_str(), "sum", out_.t, &ws, &exec);
      if (status == QCOLL_SUCCESS) {
        if (workspace_.size() < ws) workspace_.resize(ws);
        status = two_(workspace_.data(), ws, exec, nullptr);
      }
    }
    throw_if_failed(status);
  }

 private:
  nb::object keep_;
  std::string group_;
  qcollQuantConfig cfg_;
  FusedPhaseOne one_ = nullptr;
  PhaseTwo two_ = nullptr;
  TensorHandle in_, out_;
  std::vector<uint8_t> workspace_;
};

}  // namespace

void bind_ops(nb::module_& m) {
  nb::class_<ThreadGroup>(m, "ThreadGroup")
      .def(nb::init<const std::string&, int32_t>(), nb::arg("name"), nb::arg("nranks"))
      .def("join", &ThreadGroup::join, nb::arg("rank"))
      .def("leave", &ThreadGroup::leave)
      .def("destroy", &ThreadGroup::destroy)
      .def_prop_ro("name", &ThreadGroup::name)
      .def_prop_ro("alive", &ThreadGroup::alive);

  m.def(
      "resolve_group",
      [](const std::string& name) -> std::optional<std::tuple<int, int, std::string>> {
        auto info = qcoll::group_info(name);
        if (!info) return std::nullopt;
        return std::make_tuple(info->rank, info->size, info->transport);
      },
      nb::arg("name"), "(rank, size, transport) of the communicator `name` as seen by the calling thread, or None.");
  nb::class_<CPreparedFused>(m, "CPreparedFused")
      .def(nb::init<const std::string&, nb::object, const AnyArray&, int32_t, int32_t, int32_t, const std::string&,
                    nb::object, const AnyArray&, int32_t>(),
           nb::arg("which"), nb::arg("input_obj"), nb::arg("input").noconvert(), nb::arg("in_dtype"),
           nb::arg("x_dtype"), nb::arg("scales_dtype"), nb::arg("group"), nb::arg("out_obj"),
           nb::arg("out").noconvert(), nb::arg("out_dtype"))
      .def("run", &CPreparedFused::run);
  m.def("idle_workspaces", &idle_workspaces, nb::arg("group"),
        "(buffers, bytes) idle in the workspace pool of group `group` (kept for its next calls).");
  m.def("release_workspaces", &release_workspaces, nb::arg("group"),
        "Frees the workspaces pooled for group `group` (qcoll.mpi.MpiGroup.destroy: the module _mpi "
        "holds no pool of its own).");

  auto def_op = [&](const char* name, PhaseOne one, PhaseTwo two) {
    m.def(
        name,
        [one, two](const std::optional<AnyArray>& x, int32_t x_dtype, const std::optional<AnyArray>& scales,
                   int32_t scales_dtype, const std::optional<std::string>& group,
                   const std::optional<std::string>& reduce_op, const std::optional<AnyArray>& out, int32_t out_dtype,
                   Stream* stream, nb::object keep) {
          run_operator(one, two, x, x_dtype, scales, scales_dtype, group, reduce_op, out, out_dtype, stream,
                       std::move(keep));
        },
        nb::arg("x").noconvert().none(), nb::arg("x_dtype"), nb::arg("scales").noconvert().none(),
        nb::arg("scales_dtype"), nb::arg("group").none(), nb::arg("reduce_op").none(),
        nb::arg("out").noconvert().none(), nb::arg("out_dtype"), nb::arg("stream").none() = nb::none(),
        nb::arg("keep").none() = nb::none());
  };
  def_op("quant_reduce_scatter", &qcollQuantReduceScatterGetWorkspaceSize, &qcollQuantReduceScatter);
  def_op("quant_all_reduce", &qcollQuantAllReduceGetWorkspaceSize, &qcollQuantAllReduce);

  auto def_fused = [&](const char* name, FusedPhaseOne one, PhaseTwo two) {
    m.def(
        name,
        [one, two](const std::optional<AnyArray>& input, int32_t in_dtype, int32_t x_dtype, int32_t scales_dtype,
                   float hif8_target, const std::optional<std::string>& group,
                   const std::optional<std::string>& reduce_op, const std::optional<AnyArray>& out, int32_t out_dtype,
                   Stream* stream, nb::object keep) {
          run_fused(one, two, input, in_dtype, x_dtype, scales_dtype, hif8_target, group, reduce_op, out, out_dtype,
                    stream, std::move(keep));
        },
        nb::arg("input").noconvert().none(), nb::arg("in_dtype"), nb::arg("x_dtype"), nb::arg("scales_dtype"),
        nb::arg("hif8_target"), nb::arg("group").none(), nb::arg("reduce_op").none(), nb::arg("out").noconvert().none(),
        nb::arg("out_dtype"), nb::arg("stream").none() = nb::none(), nb::arg("keep").none() = nb::none());
  };
  def_fused("quantize_reduce_scatter", &qcollQuantizeReduceScatterGetWorkspaceSize, &qcollQuantizeReduceScatter);
  def_fused("quantize_all_reduce", &qcollQuantizeAllReduceGetWorkspaceSize, &qcollQuantizeAllReduce);
}

}  // namespace qcoll::python
