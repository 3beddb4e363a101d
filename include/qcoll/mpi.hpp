// qcoll: C++ wrapper of qcoll_mpi.h — an owning handle of a communicator for one rank per
// process (shared memory on one host, MPI across hosts).
//
//   MPI_Init(&argc, &argv);
//   {
//     qcoll::MpiGroup group;
//     qcoll::Status st = qcoll::MpiGroup::create("tp", MPI_COMM_WORLD, group);  // collective
//     ... operators with group name "tp" ...
//   }                                   // destroyed before MPI_Finalize
//   MPI_Finalize();
#pragma once
#include <mpi.h>

#include <string>
#include <utility>

#include "qcoll/qcoll_mpi.h"
#include "qcoll/status.hpp"

namespace qcoll {

class MpiGroup {
 public:
  MpiGroup() = default;
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;
  MpiGroup(MpiGroup&& o) noexcept : comm_(std::exchange(o.comm_, nullptr)), name_(std::move(o.name_)) {}
  MpiGroup& operator=(MpiGroup&& o) noexcept {
    if (this != &o) {
      reset();
      comm_ = std::exchange(o.comm_, nullptr);
      name_ = std::move(o.name_);
    }
    return *this;
  }
  ~MpiGroup() { reset(); }

  // Collective over `comm`; on success `out` owns the communicator named `name`.
  static Status create(const std::string& name, MPI_Comm comm, MpiGroup& out) {
    qcollMpiComm* c = nullptr;
    const qcollStatus st = qcollMpiCommCreate(name.c_str(), comm, &c);
    if (st != QCOLL_SUCCESS) return Status::Error(static_cast<StatusCode>(st), qcollGetRecentErrMsg());
    out.reset();
    out.comm_ = c;
    out.name_ = name;
    return Status::Ok();
  }

  void reset() {
    if (comm_ != nullptr) qcollMpiCommDestroy(comm_);
    comm_ = nullptr;
    name_.clear();
  }

  explicit operator bool() const { return comm_ != nullptr; }
  const std::string& name() const { return name_; }
  int rank() const {
    int32_t r = -1;
    qcollMpiCommRank(comm_, &r);
    return r;
  }
  int size() const {
    int32_t s = 0;
    qcollMpiCommSize(comm_, &s);
    return s;
  }
  // Ranks of this communicator on this rank's host.
  int local_size() const {
    int32_t s = 0;
    qcollMpiCommLocalSize(comm_, &s);
    return s;
  }
  std::string transport() const {
    const char* t = qcollMpiCommTransport(comm_);
    return t ? t : "";
  }
  qcollMpiComm* get() const { return comm_; }

 private:
  qcollMpiComm* comm_ = nullptr;
  std::string name_;
};

}  // namespace qcoll
