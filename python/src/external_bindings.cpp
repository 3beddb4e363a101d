// Communicators over collectives written in Python (qcollCommInitExternal): qcoll.torch
// moves the bytes through a torch.distributed ProcessGroup this way.
//
// The two Python callables are called as fn(send, recv, timeout_ms), with send and recv
// uint8 numpy arrays over the communicator's own buffers, valid only during the call (send
// is writable, so that torch.from_numpy takes it without a copy or a warning, but must not
// be changed). They are called from whichever thread runs the operator (with the GIL taken
// there); an exception becomes the operator's RUNTIME_ERROR, with its type and message.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "bindings.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/settings.hpp"
#include "status_error.hpp"
#include "workspace_pool.hpp"

namespace qcoll::python {
namespace {

struct PyFns {
  nb::object all_gather, all_to_all;
  int32_t nranks = 0;
};

void write_error(char* err, uint64_t err_bytes, const std::string& msg) {
  if (err == nullptr || err_bytes == 0) return;
  const std::size_t n = std::min<std::size_t>(msg.size(), err_bytes - 1);
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

qcollStatus call_py(const nb::object& fn, const void* send, uint64_t send_bytes, void* recv, uint64_t recv_bytes,
                    int64_t timeout_ms, char* err, uint64_t err_bytes) {
  nb::gil_scoped_acquire gil;
  try {
    const std::size_t sshape[1] = {static_cast<std::size_t>(send_bytes)};
    const std::size_t rshape[1] = {static_cast<std::size_t>(recv_bytes)};
    // The communicator's own send buffer (qcollCollectives passes it const).
    nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>> s(const_cast<void*>(send), 1, sshape, nb::handle());
    nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>> r(recv, 1, rshape, nb::handle());
    fn(nb::cast(s, nb::rv_policy::reference), nb::cast(r, nb::rv_policy::reference), timeout_ms);
    return QCOLL_SUCCESS;
  } catch (nb::python_error& e) {
    std::string type = "exception";
    std::string text;
    try {
      type = nb::cast<std::string>(e.type().attr("__name__"));
      text = nb::cast<std::string>(nb::str(e.value()));
    } catch (...) {
      text = e.what();
    }
    write_error(err, err_bytes, type + ": " + text);
  } catch (const std::exception& e) {
    write_error(err, err_bytes, e.what());
  }
  return QCOLL_RUNTIME_ERROR;
}

qcollStatus all_gather(void* ctx, const void* send, void* recv, uint64_t bytes, int64_t timeout_ms, char* err,
                       uint64_t err_bytes) {
  auto* f = static_cast<PyFns*>(ctx);
  return call_py(f->all_gather, send, bytes, recv, bytes * static_cast<uint64_t>(f->nranks), timeout_ms, err,
                 err_bytes);
}

qcollStatus all_to_all(void* ctx, const void* send, void* recv, uint64_t bytes, int64_t timeout_ms, char* err,
                       uint64_t err_bytes) {
  auto* f = static_cast<PyFns*>(ctx);
  const uint64_t total = bytes * static_cast<uint64_t>(f->nranks);
  return call_py(f->all_to_all, send, total, recv, total, timeout_ms, err, err_bytes);
}

void release(void* ctx) {
  auto* f = static_cast<PyFns*>(ctx);
  if (!Py_IsInitialized()) return;  // the interpreter is gone: leave the references
  nb::gil_scoped_acquire gil;
  delete f;
}

class ExternalComm {
 public:
  ExternalComm(const std::string& name, int32_t nranks, int32_t rank, nb::object all_gather_fn,
               nb::object all_to_all_fn)
      : name_(name) {
    auto* fns = new PyFns{std::move(all_gather_fn), std::move(all_to_all_fn), nranks};
    qcollCollectives c{};
    c.ctx = fns;
    c.allGather = fns->all_gather.is_none() ? nullptr : &all_gather;
    c.allToAll = fns->all_to_all.is_none() ? nullptr : &all_to_all;
    c.release = &release;
    const qcollStatus st = qcollCommInitExternal(name.c_str(), nranks, rank, &c, &comm_);
    if (st != QCOLL_SUCCESS) delete fns;  // not released by a failed create
    throw_if_failed(st);
  }
  ~ExternalComm() { destroy(); }
  ExternalComm(const ExternalComm&) = delete;
  ExternalComm& operator=(const ExternalComm&) = delete;

  void destroy() {
    qcollComm* c = comm_;
    comm_ = nullptr;
    if (c == nullptr) return;
    release_workspaces(name_);
    throw_if_failed(qcollCommDestroy(c));
  }
  const std::string& name() const { return name_; }
  bool alive() const { return comm_ != nullptr; }

 private:
  std::string name_;
  qcollComm* comm_ = nullptr;
};

}  // namespace

void bind_external(nb::module_& m) {
  nb::class_<ExternalComm>(m, "ExternalComm")
      .def(nb::init<const std::string&, int32_t, int32_t, nb::object, nb::object>(), nb::arg("name"), nb::arg("nranks"),
           nb::arg("rank"), nb::arg("all_gather").none(), nb::arg("all_to_all").none())
      .def("destroy", &ExternalComm::destroy)
      .def_prop_ro("name", &ExternalComm::name)
      .def_prop_ro("alive", &ExternalComm::alive);
  m.def("timeout_seconds", &qcoll::settings::timeout_seconds,
        "QCOLL_TIMEOUT_S as the operators read it (seconds; 60 when unset; a bad value warns once).");
}

}  // namespace qcoll::python
