// Unique ids, communicators made from them (qcollCommInitRank) and streams, through the C
// API (qcoll.h). The GIL is released around everything that waits: the rendezvous (the
// ranks may be threads of this process) and synchronize/destroy (the stream's thread may
// be waiting for a peer that is a Python thread).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <optional>
#include <string>

#include "bindings.hpp"
#include "status_error.hpp"
#include "stream_binding.hpp"
#include "workspace_pool.hpp"

namespace qcoll::python {
namespace {

nb::bytes id_bytes(const qcollUniqueId& id) { return nb::bytes(id.internal, sizeof id.internal); }

qcollUniqueId id_from(const nb::bytes& b) {
  qcollUniqueId id;
  if (b.size() != sizeof id.internal)
    throw_param_invalid("uid: must be " + std::to_string(sizeof id.internal) + " bytes, got " +
                        std::to_string(b.size()));
  std::memcpy(id.internal, b.c_str(), sizeof id.internal);
  return id;
}

class Comm {
 public:
  Comm(const std::optional<std::string>& name, int32_t nranks, const nb::bytes& uid, int32_t rank) {
    const qcollUniqueId id = id_from(uid);
    qcollStatus st;
    {
      nb::gil_scoped_release unlocked;
      st = qcollCommInitRank(name ? name->c_str() : nullptr, nranks, &id, rank, &c_);
    }
    throw_if_failed(st);
    name_ = qcollCommName(c_);
    qcollCommRank(c_, &rank_);
    qcollCommSize(c_, &size_);
  }
  ~Comm() {
    if (!c_) return;
    release_workspaces(name_);
    qcollCommDestroy(c_);
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  void destroy() {
    if (!c_) return;
    release_workspaces(name_);
    throw_if_failed(qcollCommDestroy(c_));
    c_ = nullptr;
  }
  const std::string& name() const { return name_; }
  int32_t rank() const { return rank_; }
  int32_t size() const { return size_; }
  bool alive() const { return c_ != nullptr; }

 private:
  qcollComm* c_ = nullptr;
  std::string name_;
  int32_t rank_ = -1, size_ = 0;
};

}  // namespace

Stream::Stream() { throw_if_failed(qcollStreamCreate(&s_)); }

Stream::~Stream() {
  if (!s_) return;
  if (PyGILState_Check()) {
    nb::gil_scoped_release unlocked;
    qcollStreamDestroy(s_);
  } else {
    qcollStreamDestroy(s_);
  }
  // kept_ goes with the object (the GIL is held again here).
}

qcollStream Stream::live() const {
  if (!s_) throw_param_invalid("stream: was destroyed");
  return s_;
}

void Stream::keep(nb::object what) { kept_.push_back(std::move(what)); }

bool Stream::synchronize(int32_t timeout_ms) {
  qcollStream s = live();
  const std::size_t covered = kept_.size();
  qcollStatus st;
  int32_t timed_out = 0;
  {
    nb::gil_scoped_release unlocked;
    st = qcollStreamSynchronizeEx(s, timeout_ms, &timed_out);
  }
  if (timed_out) return false;
  for (std::size_t i = 0; i < covered && !kept_.empty(); ++i) kept_.pop_front();
  throw_if_failed(st);
  return true;
}

void Stream::destroy() {
  if (!s_) return;
  qcollStream s = s_;
  s_ = nullptr;
  qcollStatus st;
  {
    nb::gil_scoped_release unlocked;
    st = qcollStreamDestroy(s);
  }
  kept_.clear();
  throw_if_failed(st);
}

void bind_comm(nb::module_& m) {
  m.def(
      "unique_id",
      [] {
        qcollUniqueId id;
        throw_if_failed(qcollGetUniqueId(&id));
        return id_bytes(id);
      },
      "The bytes of a fresh unique id (qcollGetUniqueId); this process serves its rendezvous.");
  m.def(
      "unique_id_from_hex",
      [](const std::string& hex) {
        qcollUniqueId id;
        throw_if_failed(qcollUniqueIdFromHex(hex.c_str(), &id));
        return id_bytes(id);
      },
      nb::arg("hex"), "The bytes of the id written as 256 hex digits (checked).");
  m.attr("unique_id_bytes") = static_cast<int>(QCOLL_UNIQUE_ID_BYTES);

  nb::class_<Comm>(m, "Comm")
      .def(nb::init<const std::optional<std::string>&, int32_t, const nb::bytes&, int32_t>(), nb::arg("name").none(),
           nb::arg("nranks"), nb::arg("uid"), nb::arg("rank"))
      .def("destroy", &Comm::destroy)
      .def_prop_ro("name", &Comm::name)
      .def_prop_ro("rank", &Comm::rank)
      .def_prop_ro("size", &Comm::size)
      .def_prop_ro("alive", &Comm::alive);

  nb::class_<Stream>(m, "Stream")
      .def(nb::init<>())
      .def("synchronize", &Stream::synchronize, nb::arg("timeout_ms") = -1)
      .def("destroy", &Stream::destroy)
      .def_prop_ro("alive", &Stream::alive);
}

}  // namespace qcoll::python
