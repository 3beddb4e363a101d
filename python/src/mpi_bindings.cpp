// Communicators over MPI (one rank per process; shared memory on one host, MPI across
// hosts), created from an mpi4py communicator. Compiled only when qcoll has MPI.
//
// The MPI_Comm travels as its Fortran handle (mpi4py: comm.py2f()), converted back with
// MPI_Comm_f2c: this needs no knowledge of how mpi4py stores handles, only that mpi4py and
// qcoll use the same MPI library.
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.hpp"
#include "qcoll/qcoll_mpi.h"
#include "status_error.hpp"

namespace qcoll::python {
namespace {

class MpiComm {
 public:
  MpiComm(const std::string& name, int64_t fortran_handle) : name_(name) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
      throw_param_invalid("comm: MPI is not initialised (import mpi4py.MPI first) or already finalised");
    const MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_handle));
    if (comm == MPI_COMM_NULL) throw_param_invalid("comm: the MPI communicator is MPI_COMM_NULL");
    int32_t status;
    {
      nb::gil_scoped_release unlocked;  // collective: every rank must get here
      status = qcollMpiCommCreate(name.c_str(), comm, &comm_);
    }
    throw_if_failed(status);
  }
  ~MpiComm() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) qcollMpiCommDestroy(comm_);  // after MPI_Finalize: leave it to the exit
  }
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  void destroy() {
    qcollMpiComm* c = comm_;
    comm_ = nullptr;
    throw_if_failed(qcollMpiCommDestroy(c));
  }
  int32_t rank() const {
    int32_t r = -1;
    throw_if_failed(qcollMpiCommRank(live(), &r));
    return r;
  }
  int32_t size() const {
    int32_t s = -1;
    throw_if_failed(qcollMpiCommSize(live(), &s));
    return s;
  }
  std::string transport() const { return qcollMpiCommTransport(live()); }
  uint64_t window_bytes() const {
    uint64_t b = 0;
    throw_if_failed(qcollMpiCommWindowBytes(live(), &b));
    return b;
  }
  const std::string& name() const { return name_; }

 private:
  const qcollMpiComm* live() const {
    if (!comm_) throw_param_invalid("group: MPI communicator '" + name_ + "' was destroyed");
    return comm_;
  }
  std::string name_;
  qcollMpiComm* comm_ = nullptr;
};

}  // namespace

void bind_mpi(nb::module_& m) {
  nb::class_<MpiComm>(m, "MpiComm")
      .def(nb::init<const std::string&, int64_t>(), nb::arg("name"), nb::arg("fortran_handle"))
      .def("destroy", &MpiComm::destroy)
      .def_prop_ro("rank", &MpiComm::rank)
      .def_prop_ro("size", &MpiComm::size)
      .def_prop_ro("transport", &MpiComm::transport)
      .def_prop_ro("window_bytes", &MpiComm::window_bytes)
      .def_prop_ro("name", &MpiComm::name);
}

}  // namespace qcoll::python
